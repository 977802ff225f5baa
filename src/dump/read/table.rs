//! The per-table driver: open the table and its file, read it the way its key allows, then judge what was read
//! (lost ranges, the secondary-index cross-check, the table's status) into its manifest entry and lost.jsonl
//! lines. A unit because it is the only place that sees one table from first statement to last line written.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use anyhow::Context;
use mysql::prelude::Queryable;
use mysql::{Conn, Value};

use super::lost::{merge_lost, secondary_rows};
use super::pages;
use super::ranges::{plain_scan, read_ranges, split_points, walk_groups};
use super::writer::{spawn_writer, Out};
use super::{
    json_of, range_conds, status_of, xcheck, Connector, DumpOptions, Kind, Reader, Shared,
    TableInfo, Unopenable, B,
};
use crate::dump::manifest::{
    DoubtKind, LostRange, PagePass, PagesRead, TableEntry, TableStatus, Unproven,
};
use crate::dump::{create_private, file_name, prepare_session, xsums, KeySource, TableName};
use crate::sql::quote_ident;

/// Dump one table; the entry for the manifest and the lines for lost.jsonl.
pub(crate) fn dump_table(
    connector: &dyn Connector,
    name: &TableName,
    opts: &DumpOptions,
    abort: &AtomicBool,
) -> anyhow::Result<(TableEntry, Vec<String>)> {
    if let Some(done) = attempt(connector, name, opts, abort, true)? {
        return Ok(done);
    }
    // The reads met a crash or a corruption line while innops's own pass over the secondary indexes ran
    // beside them: read the table again with nothing beside the reads, so that each is tied to the rows that
    // caused it and not to innops's pass.
    crate::progress::say(&format!(
        "dump {name}: the server crashed or logged corruption while innops's own pass over the secondary indexes ran beside the reads; reading the table again without it"
    ));
    attempt(connector, name, opts, abort, false)?.ok_or_else(|| {
        anyhow::anyhow!("{name}: a read without the index pass beside it asked to be redone")
    })
}

/// The reads of a table met trouble while the index pass ran beside them: the attempt is dropped and redone.
#[derive(Debug)]
struct Redo;

impl std::fmt::Display for Redo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the table is read again without the index pass beside the reads")
    }
}

impl std::error::Error for Redo {}

/// One reading of the table, with the whole-index sums asked beside the reads when `beside` (and the table is
/// read by ranges of its key and has secondary indexes to check); `None`: the attempt met trouble with the
/// pass beside it and was dropped (its file removed): read again without it.
fn attempt(
    connector: &dyn Connector,
    name: &TableName,
    opts: &DumpOptions,
    abort: &AtomicBool,
    beside: bool,
) -> anyhow::Result<Option<(TableEntry, Vec<String>)>> {
    let tag = &opts.tag;
    let mut conn = connector.connect()?;
    prepare_session(&mut conn, tag)?;
    let mut info = TableInfo::read(&mut conn, tag, name)?;
    info.choose_secondary_key(&mut conn, tag);
    let mut entry = new_entry(name, &info, opts);
    let create: String = match conn
        .query_first::<(String, String), _>(format!("SHOW {tag} CREATE TABLE {}", name.qualified()))
    {
        Ok(Some((_, c))) => c,
        Ok(None) => anyhow::bail!("SHOW CREATE TABLE {name} returned nothing"),
        Err(e) => {
            if status_of(&e).is_some() {
                let why = crate::error::describe_mysql(&e);
                return unopenable(connector, &mut conn, (&mut info, entry), opts, abort, &why)
                    .map(Some);
            }
            return Err(e.into());
        }
    };
    let file = file_name(name);
    let path = opts.out_dir.join(&file);
    let (out, writer) = open_file(&path, name, &create)?;
    // The rows written so far, with their rate, against the server's estimate of the table's rows.
    let estimate = estimated_rows(&mut conn, tag, name);
    let shared = Shared::new(estimate, &info, opts, connector, abort, out);
    let splits = if info.pk.is_empty() || info.key_source == KeySource::Groups {
        Vec::new()
    } else {
        split_points(&mut conn, &info, opts)
    };
    let beside = beside && sums_beside(&shared);
    shared.early_done.store(!beside, Ordering::SeqCst);
    let (result, early) = read_with_early(&mut conn, &shared, beside, || {
        crate::progress::counted(
            &format!("dump {name}"),
            estimate,
            || shared.out.lock().map(|o| o.rows).unwrap_or(0),
            || read_table(&shared, &splits, &mut entry, beside),
        )
    });
    read_notes(&shared, &mut entry);
    match result {
        Ok(()) => {}
        Err(e) if e.downcast_ref::<Redo>().is_some() => {
            abandon(shared, writer, &path);
            return Ok(None);
        }
        Err(e) if e.downcast_ref::<Unopenable>().is_some() => {
            abandon(shared, writer, &path);
            let why = crate::error::display_of(&e);
            // Opened for SHOW CREATE TABLE, unopenable at its first read: the same as unopenable.
            let mut conn = fresh_session(connector, tag)?;
            return unopenable(connector, &mut conn, (&mut info, entry), opts, abort, &why)
                .map(Some);
        }
        Err(e)
            if e.chain()
                .any(|c| c.downcast_ref::<crate::error::Failure>().is_some()) =>
        {
            return Err(e)
        }
        Err(e) => {
            entry.note = Some(crate::error::display_of(&e));
        }
    }
    let lost = merge_lost(std::mem::take(&mut *shared.lost.lock().unwrap()), &splits);
    if early.as_ref().is_some_and(|e| e.failed) && !lost.is_empty() {
        // The index pass failed while ranges were lost: whether it disturbed the reads is not known.
        abandon(shared, writer, &path);
        return Ok(None);
    }
    let group_lost = std::mem::take(&mut *shared.group_lost.lock().unwrap());
    entry
        .doubts
        .extend(std::mem::take(&mut *shared.doubts.lock().unwrap()));
    if entry.reconnects > 0 || conn.ping().is_err() {
        conn = fresh_session(connector, tag)?;
    }
    let (lost, records, pass) = read_pages(
        &shared,
        &mut pages::Def::Server(&mut conn),
        lost,
        &mut entry,
    );
    if entry.note.is_none() {
        crate::progress::elapsed(
            &format!("dump {name}: reading each secondary index against the rows"),
            || cross_check(&mut conn, &shared, &lost, early.as_ref(), &mut entry),
        );
    }
    if let Some(pass) = &pass {
        let confirmed = confirmed_by_indexes(&shared, &entry);
        entry.doubts.extend(pages::doubts(pass, confirmed));
    }
    let (rows, hash, sha) = super::writer::finish(shared.out.into_inner().unwrap(), writer, &path)?;
    (entry.file, entry.rows) = (Some(file), rows);
    (entry.content_hash, entry.sha256) = (Some(hash), Some(sha));
    let lines = lost_lines(
        Some(&mut conn),
        &info,
        tag,
        (&lost, &records),
        &group_lost,
        &mut entry,
    )?;
    entry.status = status(&entry, info.pk.is_empty());
    Ok(Some((entry, lines)))
}

/// A table SQL cannot open (`why`): read whole from its data file when the page pass may run, else
/// unrecoverable.
fn unopenable(
    connector: &dyn Connector,
    conn: &mut Conn,
    (info, mut entry): (&mut TableInfo, TableEntry),
    opts: &DumpOptions,
    abort: &AtomicBool,
    why: &str,
) -> anyhow::Result<(TableEntry, Vec<String>)> {
    if opts.pages.is_some() {
        return pages_only(connector, conn, (info, entry), opts, abort, why);
    }
    unrecoverable(&mut entry, &info.name, why);
    entry.page_pass = not_run(opts, 1, false);
    Ok((entry, Vec::new()))
}

/// The table is read by ranges of its key and has secondary indexes to check: the index pass can run beside.
fn sums_beside(sh: &Shared) -> bool {
    !sh.xs.is_empty() && !sh.info.pk.is_empty() && sh.info.key_source != KeySource::Groups
}

/// A new session for the table's last statements: its first one is from before a crash (the readers
/// reconnected, it did not), or the server is down and is brought back.
fn fresh_session(connector: &dyn Connector, tag: &str) -> anyhow::Result<Conn> {
    let mut conn = match connector.connect() {
        Ok(c) => c,
        Err(e) => connector.reconnect(&crate::error::describe(&*e))?,
    };
    prepare_session(&mut conn, tag)?;
    Ok(conn)
}

/// The table's verdict from its entry: doubtful, without a key, complete or partial.
fn status(entry: &TableEntry, no_key: bool) -> TableStatus {
    if !entry.doubts.is_empty() {
        TableStatus::Doubtful
    } else if no_key {
        TableStatus::NoPrimaryKey
    } else if entry.lost.is_empty() && entry.note.is_none() {
        TableStatus::Complete
    } else {
        TableStatus::Partial
    }
}

/// Run `read` (the table's reads) with, when `beside`, the whole-index sums ([`xsums::early`]) asked in a
/// session of their own at the same time; the statement in flight is killed when the reads end in an error.
fn read_with_early(
    conn: &mut Conn,
    sh: &Shared,
    beside: bool,
    read: impl FnOnce() -> anyhow::Result<()>,
) -> (anyhow::Result<()>, Option<xsums::Early>) {
    let stop = AtomicBool::new(false);
    let id: Mutex<Option<u32>> = Mutex::new(None);
    std::thread::scope(|s| {
        let early = beside.then(|| {
            s.spawn(|| {
                let early = (|| {
                    let mut c = sh.connector.connect().ok()?;
                    prepare_session(&mut c, &sh.opts.tag).ok()?;
                    *id.lock().unwrap() = Some(c.connection_id());
                    crate::testhooks::early_after_read(&sh.read_noted);
                    Some(xsums::early(&mut c, &sh.opts.tag, sh.info, &sh.xs, &stop))
                })();
                sh.early_done.store(true, Ordering::SeqCst);
                early
            })
        });
        let result = read();
        if result.is_err() {
            stop.store(true, Ordering::SeqCst);
            if let Some(id) = *id.lock().unwrap() {
                let _ = conn.query_drop(format!("KILL QUERY {id}"));
            }
        }
        let early = early.and_then(|h| h.join().ok().flatten());
        (result, early)
    })
}

/// What the reads leave to say in `entry`: the reconnects, an error log innops could not read, a crash budget
/// spent.
fn read_notes(shared: &Shared, entry: &mut TableEntry) {
    entry.reconnects = shared.reconnects.load(Ordering::SeqCst);
    if !shared.log.as_ref().is_some_and(|l| l.is_file()) {
        entry.unchecked.push(
            "the server's error log was not readable here, so a column that came back truncated without an SQL error (a damaged BLOB page) would not be seen"
                .into(),
        );
    }
    if entry.reconnects > shared.opts.max_reconnects {
        entry.note = Some(format!(
            "the server went away {} times while {} was read, more than the {} innops allows a table: the key ranges not read by then are reported lost",
            entry.reconnects,
            shared.info.name,
            shared.opts.max_reconnects
        ));
    }
}

/// Drop an attempt: its writer ended and its file removed.
fn abandon(
    shared: Shared,
    writer: std::thread::JoinHandle<std::io::Result<String>>,
    path: &std::path::Path,
) {
    drop(shared);
    let _ = writer.join();
    let _ = std::fs::remove_file(path);
}

/// The server's estimate of the table's rows (0 when it has none, as for a table it cannot open: the bar then
/// grows with the count).
fn estimated_rows(conn: &mut Conn, tag: &str, name: &TableName) -> u64 {
    conn.exec_first::<Option<u64>, _, _>(
        format!("SELECT {tag} TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"),
        (&name.db, &name.table),
    )
    .ok()
    .flatten()
    .flatten()
    .unwrap_or(0)
}

/// The table's manifest entry before any row is read: its columns, key and the doubts given for it.
pub(super) fn new_entry(name: &TableName, info: &TableInfo, opts: &DumpOptions) -> TableEntry {
    TableEntry {
        db: name.db.clone(),
        table: name.table.clone(),
        status: TableStatus::Complete,
        file: None,
        sha256: None,
        rows: 0,
        content_hash: None,
        columns: info.columns.iter().map(|c| c.name.clone()).collect(),
        primary_key: info
            .pk
            .iter()
            .map(|&p| info.columns[p].name.clone())
            .collect(),
        lost: Vec::new(),
        key_index: info.key_index.clone(),
        doubts: opts
            .table_doubts
            .iter()
            .filter(|(t, _)| t.as_ref().is_none_or(|t| t == name))
            .map(|(_, d)| d.clone())
            .collect(),
        unchecked: Vec::new(),
        reconnects: 0,
        note: None,
        pages: None,
        page_pass: None,
        indexes: Vec::new(),
    }
}

/// The table cannot be opened through SQL (`detail` says how): nothing of it is in the dump.
fn unrecoverable(entry: &mut TableEntry, name: &TableName, detail: &str) {
    entry.status = TableStatus::Unrecoverable;
    entry.note = Some(unrecoverable_note(name, detail));
}

fn unrecoverable_note(name: &TableName, detail: &str) -> String {
    format!(
        "{name} cannot be opened ({detail}): nothing of it is recoverable through SQL; restore it from a backup"
    )
}

/// The table's file, created private with its header (the session settings, the database, `create`), and its
/// writer thread.
fn open_file(
    path: &std::path::Path,
    name: &TableName,
    create: &str,
) -> anyhow::Result<(Out, std::thread::JoinHandle<std::io::Result<String>>)> {
    let f = create_private(path).with_context(|| format!("creating {}", path.display()))?;
    let header = format!(
        "-- innops recover: {name}\n\
         SET NAMES utf8mb4;\n\
         SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO', time_zone = '+00:00', foreign_key_checks = 0, unique_checks = 0;\n\
         CREATE DATABASE IF NOT EXISTS {db};\n\
         USE {db};\n\
         {create};\n",
        db = quote_ident(&name.db)
    );
    let (tx, spare, writer) = spawn_writer(f, header.into_bytes());
    let out = Out {
        tx,
        spare,
        rows: 0,
        hash: 0,
    };
    Ok((out, writer))
}

impl<'a> Shared<'a> {
    /// The state every reader of the table shares; `estimate` is the server's count of its rows (the
    /// cross-check's shape; 0 when it has none).
    fn new(
        estimate: u64,
        info: &'a TableInfo,
        opts: &'a DumpOptions,
        connector: &'a dyn Connector,
        abort: &'a AtomicBool,
        out: Out,
    ) -> Shared<'a> {
        let cols = info.select_list();
        let xs = xcheck::indexes(info);
        Shared {
            info,
            opts,
            connector,
            abort,
            out: Mutex::new(out),
            reconnects: AtomicU32::new(0),
            lost: Mutex::new(Vec::new()),
            from: info.read_from(),
            key_list: info
                .pk
                .iter()
                .map(|&p| quote_ident(&info.columns[p].name))
                .collect::<Vec<_>>()
                .join(", "),
            insert_prefix: format!(
                "INSERT INTO {} ({cols}) VALUES ",
                quote_ident(&info.name.table)
            )
            .into_bytes(),
            select_list: cols,
            log: connector.error_log(),
            doubts: Mutex::new(Vec::new()),
            group_lost: Mutex::new(Default::default()),
            suspects: Mutex::new(Vec::new()),
            explained: Mutex::new(Default::default()),
            int_key: !info.pk.is_empty() && info.pk.iter().all(|&p| info.is_integer(p)),
            repeats: info.key_source == KeySource::Groups,
            temporal: (0..info.columns.len())
                .filter(|&p| {
                    matches!(
                        info.columns[p].data_type.as_str(),
                        "date" | "datetime" | "timestamp"
                    )
                })
                .collect(),
            shape: xcheck::Shape::of(info, estimate),
            written: Mutex::new(xcheck::Recorded::new(xs.len())),
            early_done: AtomicBool::new(false),
            read_noted: AtomicBool::new(false),
            xs,
        }
    }
}

/// Read the table the way its key allows (ranges cut at `splits`, groups, or a plain scan), then, every reader
/// done, the suspect reads one at a time.
fn read_table(
    sh: &Shared,
    splits: &[Value],
    entry: &mut TableEntry,
    beside: bool,
) -> anyhow::Result<()> {
    let info = sh.info;
    if info.pk.is_empty() {
        plain_scan(sh, entry)
    } else if info.key_source == KeySource::Groups {
        walk_groups(sh)
    } else {
        read_ranges(sh, splits)
    }
    .and_then(|()| {
        if beside && troubled(sh) {
            return Err(Redo.into());
        }
        // Every reader is done: the suspect reads, one at a time.
        let mut r = Reader::new(sh, 0)?;
        r.confirm()
    })
}

/// The reads met what the index pass beside them could have caused: a crash (a reconnect), or a corruption line
/// in the error log.
fn troubled(sh: &Shared) -> bool {
    sh.reconnects.load(Ordering::SeqCst) > 0
        || !sh.suspects.lock().unwrap().is_empty()
        || sh
            .doubts
            .lock()
            .unwrap()
            .iter()
            .any(|d| matches!(d.kind, DoubtKind::Crash | DoubtKind::ErrorLog))
}

/// Each secondary index read alone against the rows written, outside the lost ranges: the doubts and the
/// evidence into `entry`, or why an index was not checked.
fn cross_check(
    conn: &mut Conn,
    shared: &Shared,
    lost: &[(Option<B>, Option<B>)],
    early: Option<&xsums::Early>,
    entry: &mut TableEntry,
) {
    let (info, tag) = (shared.info, &shared.opts.tag);
    let outside: Vec<String> = lost
        .iter()
        .map(|(lo, hi)| {
            let c = range_conds(info, lo, hi);
            if c.is_empty() {
                "FALSE".to_string()
            } else {
                format!("NOT ({})", c.join(" AND "))
            }
        })
        .collect();
    let outside = (!outside.is_empty()).then(|| outside.join(" AND "));
    let written = std::mem::take(&mut *shared.written.lock().unwrap());
    for (i, ((x, w), sums)) in shared
        .xs
        .iter()
        .zip(written.entries)
        .zip(&written.sums)
        .enumerate()
    {
        // The server's sums first: one row back when the index agrees; the index row by row otherwise.
        let connect = || -> anyhow::Result<Conn> {
            let mut c = shared.connector.connect()?;
            prepare_session(&mut c, tag)?;
            Ok(c)
        };
        let threads = shared.opts.threads;
        if xsums::agree(
            conn,
            &connect,
            threads,
            tag,
            info,
            x,
            sums,
            outside.as_deref(),
            early.and_then(|e| e.figures.get(i)?.as_ref()),
        ) {
            entry.indexes.push(xcheck::agreed(&shared.shape, x, &w));
            continue;
        }
        match xcheck::compare(conn, tag, info, &shared.shape, x, w, outside.as_deref()) {
            Some((d, evidence)) => {
                entry.doubts.extend(d);
                entry.indexes.push(evidence);
            }
            None => entry.unchecked.push(format!(
                "index {} could not be read to its end, so the rows were not checked against it",
                quote_ident(&x.name)
            )),
        }
    }
}

/// The lost ranges into `entry`, each with what the secondary indexes still list inside it (nothing without a
/// server to ask); one lost.jsonl line per range.
fn lost_lines(
    conn: Option<&mut Conn>,
    info: &TableInfo,
    tag: &str,
    (lost, records): (&[Lost], &[Vec<Unproven>]),
    group_lost: &HashMap<String, u64>,
    entry: &mut TableEntry,
) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    let pk_kinds: Vec<Kind> = info.pk.iter().map(|&p| info.columns[p].kind).collect();
    let to_json = |b: &B| -> Vec<serde_json::Value> {
        b.key
            .iter()
            .zip(&pk_kinds)
            .map(|(v, k)| json_of(*k, v))
            .collect()
    };
    let secondaries = match conn {
        Some(conn) => secondary_rows(conn, info, tag, lost),
        None => vec![serde_json::json!([]); lost.len()],
    };
    for ((i, (lo, hi)), secondary) in lost.iter().enumerate().zip(secondaries) {
        let range = LostRange {
            records: records.get(i).cloned().unwrap_or_default(),
            after: lo.as_ref().filter(|b| !b.incl).map(to_json),
            from: lo.as_ref().filter(|b| b.incl).map(to_json),
            before: hi.as_ref().filter(|b| !b.incl).map(to_json),
            to: hi.as_ref().filter(|b| b.incl).map(to_json),
            rows: lo
                .as_ref()
                .and_then(|b| group_lost.get(&format!("{:?}", b.key)))
                .copied(),
            ..Default::default()
        };
        let range = LostRange {
            listed: xcheck::listed(&secondary),
            ..range
        };
        let mut line = serde_json::json!({
            "db": entry.db, "table": entry.table, "primary_key": entry.primary_key,
        });
        let obj = line.as_object_mut().unwrap();
        if let serde_json::Value::Object(m) = serde_json::to_value(&range)? {
            obj.extend(m);
        }
        obj.insert("secondary".into(), secondary);
        lines.push(serde_json::to_string(&line)?);
        entry.lost.push(range);
    }
    Ok(lines)
}

/// A lost range's bounds.
type Lost = (Option<B>, Option<B>);

/// The lost ranges after `--pages` (the ranges as the SQL reads left them without it, or when the table's
/// pages cannot be read), the unproven records found inside each, and what the page pass did.
type AfterPages = (Vec<Lost>, Vec<Vec<Unproven>>, Option<pages::Pass>);

/// With `--pages` and something lost: the rows inside the lost ranges read from the copy's data file, the
/// table's `pages` entry, and the lost ranges narrowed by what was read.
fn read_pages(
    shared: &Shared,
    def: &mut pages::Def,
    lost: Vec<(Option<B>, Option<B>)>,
    entry: &mut TableEntry,
) -> AfterPages {
    let Some(po) = shared.opts.pages.as_ref().filter(|_| !lost.is_empty()) else {
        entry.page_pass = not_run(shared.opts, lost.len(), entry.note.is_some());
        return (lost, Vec::new(), None);
    };
    let sql_rows = shared.out.lock().unwrap().rows;
    let name = &shared.info.name;
    match crate::progress::elapsed(
        &format!("dump {name}: reading the lost ranges from the data file"),
        || pages::read_pages(shared, def, &lost, po),
    ) {
        Ok(mut pass) => {
            pass.read.sql_rows = sql_rows;
            entry.pages = Some(pass.read.clone());
            entry.page_pass = Some(PagePass {
                ran: true,
                why: format!(
                    "the SQL reads left {} lost range(s): the rows inside them were sought in the data file",
                    lost.len()
                ),
            });
            let (lost, records) = std::mem::take(&mut pass.lost)
                .into_iter()
                .map(|p| ((p.lo, p.hi), p.records))
                .unzip();
            (lost, records, Some(pass))
        }
        Err(why) => {
            let refused = format!("{name}'s pages were not read ({why}): it keeps the SQL result");
            entry.page_pass = Some(PagePass {
                ran: false,
                why: refused.clone(),
            });
            entry.pages = Some(PagesRead {
                sql_rows,
                refused: Some(refused),
                ..Default::default()
            });
            (lost, Vec::new(), None)
        }
    }
}

/// Why the page pass does not run on a table after its SQL reads (`lost` ranges left, `short`: a read
/// stopped short without naming a range); `None` when the caller said nothing about pages.
fn not_run(opts: &DumpOptions, lost: usize, short: bool) -> Option<PagePass> {
    if opts.pages.is_none() && opts.pages_off.is_none() {
        return None;
    }
    let why = if lost == 0 && !short {
        "the SQL reads lost nothing: there is nothing for it to add".into()
    } else if lost == 0 {
        "the SQL reads stopped short without naming a lost key range for it to read".into()
    } else {
        format!(
            "{}: the {lost} lost range(s) stay as the SQL reads left them",
            opts.pages_off.as_deref().unwrap_or("the page pass is off")
        )
    };
    Some(PagePass { ran: false, why })
}

/// Whether the secondary indexes confirm the rows read from pages column by column: every column of the
/// table is in the key or in an index the cross-check compared without a disagreement.
fn confirmed_by_indexes(shared: &Shared, entry: &TableEntry) -> bool {
    if entry
        .doubts
        .iter()
        .any(|d| d.kind == crate::dump::DoubtKind::SecondaryIndex)
    {
        return false;
    }
    let info = shared.info;
    let mut covered: std::collections::BTreeSet<usize> = info.pk.iter().copied().collect();
    for x in &shared.xs {
        if entry
            .indexes
            .iter()
            .any(|e| e.index == x.name && !e.doubted)
        {
            covered.extend(x.pos.iter().copied());
        }
    }
    covered.len() == info.columns.len()
}

/// `--pages` for a table SQL cannot open at all (`why`: ERROR 1877 on a damaged root page, say), while the
/// server's dictionary still describes it: the whole key space is a lost range read from the data file, into a
/// file whose `CREATE TABLE` is rebuilt from the dictionary. When the pages cannot be read either, the table is
/// unrecoverable as before, with both reasons.
fn pages_only(
    connector: &dyn Connector,
    conn: &mut Conn,
    (info, mut entry): (&mut TableInfo, TableEntry),
    opts: &DumpOptions,
    abort: &AtomicBool,
    why: &str,
) -> anyhow::Result<(TableEntry, Vec<String>)> {
    let name = info.name.clone();
    let tag = &opts.tag;
    let rebuilt = crate::dump::page_def::page_def(conn, tag, &name).and_then(|pt| {
        let create = crate::dump::page_def::rebuilt_create(conn, tag, &name, &pt)?;
        Ok((pt, create))
    });
    let (pt, create) = match rebuilt {
        Ok(r) => r,
        Err(e) => {
            unrecoverable(&mut entry, &name, why);
            let refused = format!(
                "{name}'s pages were not read ({}): nothing of it is in the dump",
                crate::error::display_of(&e)
            );
            entry.page_pass = Some(PagePass {
                ran: false,
                why: refused.clone(),
            });
            entry.pages = Some(PagesRead {
                refused: Some(refused),
                ..Default::default()
            });
            return Ok((entry, Vec::new()));
        }
    };
    // The key SQL would have walked by: the clustered index's columns, as the dictionary names them.
    info.pk = pt
        .def
        .key
        .iter()
        .filter_map(|&k| {
            info.columns
                .iter()
                .position(|c| c.name == pt.def.columns[k].name)
        })
        .collect();
    if info.pk.len() == pt.def.key.len() && !info.pk.is_empty() {
        info.key_source = KeySource::Primary;
        info.key_index = Some("PRIMARY".into());
        entry.primary_key = info
            .pk
            .iter()
            .map(|&p| info.columns[p].name.clone())
            .collect();
        entry.key_index = info.key_index.clone();
    }
    let header = format!(
        "-- {name} cannot be opened through SQL ({}): every row below was read from its data file, and this\n\
         -- CREATE TABLE is rebuilt from the server's dictionary: columns and the clustered key only (no secondary\n\
         -- index, comment, AUTO_INCREMENT or foreign key): add them from your schema.\n{create}",
        why.replace('\n', " ")
    );
    let alone = Alone {
        def: pages::Def::Server(conn),
        header,
        why: "SQL cannot open the table: every row was sought in its data file".into(),
        unchecked: format!(
            "{name} cannot be opened through SQL ({why}): its rows come from its data file alone, no secondary index could be read against them, and its CREATE TABLE is rebuilt from the dictionary (columns and the clustered key only)"
        ),
        unread: unrecoverable_note(&name, why),
    };
    read_alone(connector, info, entry, opts, abort, alone)
}

/// A table read from its data file alone: where its definition comes from, and what its file and manifest
/// entry say.
pub(super) struct Alone<'c> {
    pub def: pages::Def<'c>,
    /// The table's file's header: a comment saying where the rows and the definition come from, and the
    /// rebuilt `CREATE TABLE`.
    pub header: String,
    /// Why the page pass ran on the table (its entry's `page_pass`).
    pub why: String,
    /// What could not be checked (into the entry's `unchecked`).
    pub unchecked: String,
    /// The table's note when its pages cannot be read either (it is then unrecoverable).
    pub unread: String,
}

/// Read a table's whole key space from its data file into its file (`alone` says where its definition comes
/// from); when the pages cannot be read either, the table is unrecoverable with `alone.unread`.
pub(super) fn read_alone(
    connector: &dyn Connector,
    info: &TableInfo,
    mut entry: TableEntry,
    opts: &DumpOptions,
    abort: &AtomicBool,
    mut alone: Alone,
) -> anyhow::Result<(TableEntry, Vec<String>)> {
    let name = &info.name;
    let file = file_name(name);
    let path = opts.out_dir.join(&file);
    let (out, writer) = open_file(&path, name, &alone.header)?;
    let shared = Shared::new(0, info, opts, connector, abort, out);
    let (lost, records, pass) = read_pages(&shared, &mut alone.def, vec![(None, None)], &mut entry);
    if let Some(pass) = &pass {
        entry.doubts.extend(pages::doubts(pass, false));
        entry.page_pass = Some(PagePass {
            ran: true,
            why: alone.why,
        });
    }
    let (rows, hash, sha) = super::writer::finish(shared.out.into_inner().unwrap(), writer, &path)?;
    if pass.is_none() {
        let _ = std::fs::remove_file(&path);
        entry.status = TableStatus::Unrecoverable;
        entry.note = Some(alone.unread);
        return Ok((entry, Vec::new()));
    }
    (entry.file, entry.rows) = (Some(file), rows);
    (entry.content_hash, entry.sha256) = (Some(hash), Some(sha));
    entry.unchecked.push(alone.unchecked);
    let lines = lost_lines(
        alone.def.conn(),
        info,
        &opts.tag,
        (&lost, &records),
        &HashMap::new(),
        &mut entry,
    )?;
    entry.status = status(&entry, info.pk.is_empty());
    Ok((entry, lines))
}
