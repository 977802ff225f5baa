//! Reading one table: the ascending scan, and after an error the crawl, the descending scan, the probes and the
//! lost ranges (see the module documentation of `dump`).

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

use anyhow::Context;
use mysql::prelude::Queryable;
use mysql::{Conn, Row, Value};
use sha2::{Digest, Sha256};

use super::literal::{self, Kind};
use super::manifest::{LostRange, TableEntry, TableStatus};
use super::{file_name, prepare_session, Connector, DumpOptions, TableInfo, TableName};
use crate::sql::{qualified, quote_ident};

/// The table cannot be opened through SQL (ERROR 1877 and the like).
#[derive(Debug)]
struct Unopenable(String);

impl std::fmt::Display for Unopenable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Unopenable {}

/// Environment variable: when set, every read and its outcome is printed on stderr (for working on this module).
pub const TRACE: &str = "INNOPS_DUMP_TRACE";

/// Error codes that mean the table as a whole cannot be opened.
const UNOPENABLE: [u16; 2] = [1877, 1932];
/// Error codes (and client-side failures) that mean the session is gone.
const GONE: [u16; 5] = [1053, 1927, 2006, 2013, 4031];

/// A bound of a key range: a full key or a key prefix, inclusive or not.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct B {
    key: Vec<Value>,
    incl: bool,
}

impl B {
    fn after(key: Vec<Value>) -> B {
        B { key, incl: false }
    }
    fn before(key: Vec<Value>) -> B {
        B { key, incl: false }
    }
}

/// A stretch of one range's key space no read reached: (range index, lower, upper).
type Stretch = (usize, Option<B>, Option<B>);

/// The table file as the reading threads see it: full INSERT statements go to a writer thread (which also
/// hashes the file), the row count and content hash add up here.
struct Out {
    tx: std::sync::mpsc::SyncSender<Vec<u8>>,
    rows: u64,
    hash: u128,
}

/// The writer thread of a table file: writes and hashes what the readers send; the file's sha256.
fn spawn_writer(
    f: std::fs::File,
    header: Vec<u8>,
) -> (
    std::sync::mpsc::SyncSender<Vec<u8>>,
    std::thread::JoinHandle<std::io::Result<String>>,
) {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
    let handle = std::thread::spawn(move || {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let mut sha = Sha256::new();
        sha.update(&header);
        w.write_all(&header)?;
        for buf in rx {
            sha.update(&buf);
            w.write_all(&buf)?;
        }
        w.flush()?;
        Ok(format!("{:x}", sha.finalize()))
    });
    (tx, handle)
}

struct Shared<'a> {
    info: &'a TableInfo,
    opts: &'a DumpOptions,
    connector: &'a dyn Connector,
    abort: &'a AtomicBool,
    out: Mutex<Out>,
    reconnects: AtomicU32,
    /// (range index, lower, upper) of each stretch no read reached.
    lost: Mutex<Vec<Stretch>>,
    from: String,
    select_list: String,
    key_list: String,
    insert_prefix: Vec<u8>,
}

/// One row as the dump writes it, `(v1,v2,…)`, appended to `buf`.
pub(crate) fn push_tuple(buf: &mut Vec<u8>, kinds: &[Kind], row: &Row) {
    buf.push(b'(');
    for (i, k) in kinds.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        literal::push(buf, *k, row.as_ref(i).unwrap_or(&Value::NULL));
    }
    buf.push(b')');
}

/// What one statement returned.
struct Outcome {
    ok: bool,
    n: u64,
    first: Option<Vec<Value>>,
    last: Option<Row>,
}

/// One reading session of one key range.
struct Reader<'s, 'a> {
    sh: &'s Shared<'a>,
    range: usize,
    conn: Conn,
    kinds: Vec<Kind>,
    buf: Vec<u8>,
    rows: u64,
    hash: u128,
}

impl<'s, 'a> Reader<'s, 'a> {
    fn new(sh: &'s Shared<'a>, range: usize) -> anyhow::Result<Self> {
        let mut conn = sh.connector.connect()?;
        prepare_session(&mut conn, &sh.opts.tag)?;
        Ok(Reader {
            sh,
            range,
            conn,
            kinds: sh.info.columns.iter().map(|c| c.kind).collect(),
            buf: Vec::with_capacity(sh.opts.chunk_bytes + 64 * 1024),
            rows: 0,
            hash: 0,
        })
    }

    fn write_row(&mut self, row: &Row) -> anyhow::Result<()> {
        let Reader {
            sh,
            kinds,
            buf,
            rows,
            hash,
            ..
        } = self;
        write_row_parts(buf, rows, hash, kinds, &sh.insert_prefix, row);
        if buf.len() >= sh.opts.chunk_bytes {
            flush_parts(sh, buf, rows, hash)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        let Reader {
            sh,
            buf,
            rows,
            hash,
            ..
        } = self;
        flush_parts(sh, buf, rows, hash)
    }

    fn key_of(&self, row: &Row) -> Vec<Value> {
        self.sh
            .info
            .pk
            .iter()
            .map(|&p| row.as_ref(p).cloned().unwrap_or(Value::NULL))
            .collect()
    }

    fn select(
        &self,
        lo: &Option<B>,
        hi: &Option<B>,
        desc: bool,
        limit: Option<u32>,
        keys_only: bool,
    ) -> String {
        let mut conds = Vec::new();
        if let Some(b) = lo {
            conds.push(bound_sql(self.sh.info, b, true));
        }
        if let Some(b) = hi {
            conds.push(bound_sql(self.sh.info, b, false));
        }
        let wh = if conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conds.join(" AND "))
        };
        let order: Vec<String> = self
            .sh
            .info
            .pk
            .iter()
            .map(|&p| {
                let c = quote_ident(&self.sh.info.columns[p].name);
                if desc {
                    format!("{c} DESC")
                } else {
                    c
                }
            })
            .collect();
        format!(
            "SELECT {} {} FROM {}{wh} ORDER BY {}{}",
            self.sh.opts.tag,
            if keys_only {
                &self.sh.key_list
            } else {
                &self.sh.select_list
            },
            self.sh.from,
            order.join(", "),
            limit.map(|l| format!(" LIMIT {l}")).unwrap_or_default()
        )
    }

    /// Run one read, streaming; rows are written as they arrive when `write`. A lost session is replaced
    /// through the connector and reported as a failed read.
    fn run(&mut self, sql: &str, write: bool, keys_only: bool) -> anyhow::Result<Outcome> {
        if self.sh.abort.load(Ordering::Relaxed) {
            return Err(crate::error::Failure::Interrupted(
                "the dump was interrupted: the files written so far are incomplete, run it again"
                    .into(),
            )
            .into());
        }
        let mut o = Outcome {
            ok: true,
            n: 0,
            first: None,
            last: None,
        };
        let key_pos: Vec<usize> = if keys_only {
            (0..self.sh.info.pk.len()).collect()
        } else {
            self.sh.info.pk.clone()
        };
        let mut failure: Option<mysql::Error> = None;
        {
            let Reader {
                sh,
                conn,
                kinds,
                buf,
                rows,
                hash,
                ..
            } = self;
            match conn.query_iter(sql) {
                Err(e) => failure = Some(e),
                Ok(result) => {
                    for row in result {
                        match row {
                            Ok(r) => {
                                if o.first.is_none() {
                                    o.first = Some(key_of(&key_pos, &r));
                                }
                                if write {
                                    write_row_parts(buf, rows, hash, kinds, &sh.insert_prefix, &r);
                                    if buf.len() >= sh.opts.chunk_bytes {
                                        flush_parts(sh, buf, rows, hash)?;
                                    }
                                }
                                o.n += 1;
                                o.last = Some(r);
                            }
                            Err(e) => {
                                failure = Some(e);
                                break;
                            }
                        }
                    }
                }
            }
        }
        if std::env::var_os(TRACE).is_some() {
            let end = failure
                .as_ref()
                .map_or("end".to_string(), crate::error::describe_mysql);
            eprintln!("{sql} -> {} rows, {end}", o.n);
        }
        if let Some(e) = failure {
            o.ok = false;
            self.failed(&e)?;
        }
        Ok(o)
    }

    /// Classify a read failure: the table cannot be opened (stop), the session is gone (reconnect), or a read
    /// error the caller works around.
    fn failed(&mut self, e: &mysql::Error) -> anyhow::Result<()> {
        let (code, gone) = match e {
            mysql::Error::MySqlError(me) => (Some(me.code), GONE.contains(&me.code)),
            mysql::Error::IoError(_)
            | mysql::Error::DriverError(_)
            | mysql::Error::CodecError(_) => (None, true),
            _ => (None, false),
        };
        if let Some(c) = code.filter(|c| UNOPENABLE.contains(c)) {
            let _ = c;
            return Err(Unopenable(crate::error::describe_mysql(e)).into());
        }
        if gone {
            let n = self.sh.reconnects.fetch_add(1, Ordering::SeqCst) + 1;
            if n > self.sh.opts.max_reconnects {
                anyhow::bail!(
                    "the connection was lost {n} times while reading {} (last: {}): the server crashes on this table's data",
                    self.sh.info.name,
                    crate::error::describe_mysql(e)
                );
            }
            let mut conn = self
                .sh
                .connector
                .reconnect(&crate::error::describe_mysql(e))?;
            prepare_session(&mut conn, &self.sh.opts.tag)?;
            self.conn = conn;
        }
        Ok(())
    }

    /// Every readable row of (lo, hi).
    fn fill(&mut self, lo: Option<B>, hi: Option<B>) -> anyhow::Result<()> {
        let sql = self.select(&lo, &hi, false, None, false);
        let o = self.run(&sql, true, false)?;
        if o.ok {
            return Ok(());
        }
        let lo = match &o.last {
            Some(r) => Some(B::after(self.key_of(r))),
            None => lo,
        };
        self.after_asc_error(lo, hi)
    }

    /// An ascending read of (lo, hi) failed after lo: one row at a time from lo (the rows prefetch dropped),
    /// then look for readable rows below hi.
    fn after_asc_error(&mut self, mut lo: Option<B>, hi: Option<B>) -> anyhow::Result<()> {
        loop {
            let sql = self.select(&lo, &hi, false, Some(1), false);
            let o = self.run(&sql, true, false)?;
            match (o.ok, o.last) {
                // An ascending read that ends without error and without a row: nothing more up to hi.
                (true, None) => return Ok(()),
                (true, Some(r)) => lo = Some(B::after(self.key_of(&r))),
                (false, _) => break,
            }
        }
        self.resume_below(lo, hi)
    }

    /// Rows of (lo, hi) where the row after lo is unreadable: descend from hi to the lowest readable row m,
    /// read (m, hi) again ascending, and search (lo, m).
    fn resume_below(&mut self, lo: Option<B>, hi: Option<B>) -> anyhow::Result<()> {
        let sql = self.select(&lo, &hi, true, None, true);
        let o = self.run(&sql, false, true)?;
        let mut low: Option<Row> = None;
        if let Some(k) = o.last.map(|r| r.unwrap()) {
            // The lowest key the descending scan reached, as a full row, then one row at a time below it.
            let mut upper = Some(B { key: k, incl: true });
            loop {
                let sql = self.select(&lo, &upper, true, Some(1), false);
                let o = self.run(&sql, false, false)?;
                match o.last {
                    Some(r) if o.ok => {
                        upper = Some(B::before(self.key_of(&r)));
                        low = Some(r);
                    }
                    _ => break,
                }
            }
        }
        match low {
            Some(m) => {
                self.write_row(&m)?;
                let mk = self.key_of(&m);
                self.fill(Some(B::after(mk.clone())), hi)?;
                self.gap(lo, Some(B::before(mk)))
            }
            None => self.gap(lo, hi),
        }
    }

    /// (lo, hi) where the rows next to both ends are unreadable: probe inside; what no probe reaches is lost.
    fn gap(&mut self, lo: Option<B>, hi: Option<B>) -> anyhow::Result<()> {
        // Probe points: the primary keys a readable secondary index lists in (lo, hi), else integers of the
        // leading key column. Windows are open intervals of positions, probed at their middles, widest first.
        let candidates = self.candidates(&lo, &hi);
        let (first_window, probe_at): (_, Box<dyn Fn(i128) -> B>) = match candidates {
            Some(keys) => {
                let n = keys.len() as i128;
                (
                    Some((-1, n)),
                    Box::new(move |c| B {
                        key: keys[c as usize].clone(),
                        incl: true,
                    }),
                )
            }
            None => (
                self.int_window(&lo, &hi),
                Box::new(|c| B {
                    key: vec![match i64::try_from(c) {
                        Ok(i) => Value::Int(i),
                        Err(_) => Value::UInt(u64::try_from(c).unwrap_or(u64::MAX)),
                    }],
                    incl: true,
                }),
            ),
        };
        let mut windows: VecDeque<(i128, i128)> = first_window.into_iter().collect();
        let mut budget = self.sh.opts.probe_budget;
        while let Some((a, b)) = windows.pop_front() {
            if b - a < 2 {
                continue;
            }
            if budget == 0
                || self.sh.reconnects.load(Ordering::SeqCst) >= self.sh.opts.max_reconnects
            {
                break;
            }
            budget -= 1;
            let c = a + (b - a) / 2;
            let probe = Some(probe_at(c));
            let sql = self.select(&probe, &hi, false, None, false);
            let o = self.run(&sql, true, false)?;
            if let Some(first) = o.first {
                // A readable stretch from the probe: finish it, then search below its first row.
                if !o.ok {
                    let last = o.last.as_ref().map(|r| self.key_of(r)).unwrap_or_default();
                    self.after_asc_error(Some(B::after(last)), hi)?;
                }
                return self.resume_below(lo, Some(B::before(first)));
            }
            if o.ok {
                // Nothing from the probe up to hi: only below it is left.
                windows.retain(|w| w.0 < c);
                windows.iter_mut().for_each(|w| w.1 = w.1.min(c));
                windows.push_back((a, c));
            } else {
                windows.push_back((a, c));
                windows.push_back((c, b));
            }
        }
        self.sh.lost.lock().unwrap().push((self.range, lo, hi));
        Ok(())
    }

    /// The primary keys in (lo, hi) listed by the first secondary index that can be read, in key order (at
    /// most a million); None when no secondary index can be read.
    fn candidates(&mut self, lo: &Option<B>, hi: &Option<B>) -> Option<Vec<Vec<Value>>> {
        let info = self.sh.info;
        let mut conds = Vec::new();
        if let Some(b) = lo {
            conds.push(bound_sql(info, b, true));
        }
        if let Some(b) = hi {
            conds.push(bound_sql(info, b, false));
        }
        let wh = if conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conds.join(" AND "))
        };
        for (index, _) in &info.secondary {
            let sql = format!(
                // Sorted outside the index read: ORDER BY on the table itself would make the optimizer
                // read the clustered index instead; a derived table with LIMIT is materialized first.
                "SELECT {} {keys} FROM (SELECT {keys} FROM {} FORCE INDEX ({}){wh} LIMIT 1000000) AS c ORDER BY {keys}",
                self.sh.opts.tag,
                info.name.qualified(),
                quote_ident(index),
                keys = self.sh.key_list,
            );
            let res = self.conn.query::<Row, _>(&sql);
            if std::env::var_os(TRACE).is_some() {
                match &res {
                    Ok(r) => eprintln!("{sql} -> {} keys", r.len()),
                    Err(e) => eprintln!("{sql} -> {}", crate::error::describe_mysql(e)),
                }
            }
            match res {
                Ok(rows) => return Some(rows.into_iter().map(|r| r.unwrap()).collect()),
                Err(e) => {
                    if self.failed(&e).is_err() {
                        return None;
                    }
                }
            }
        }
        None
    }

    /// The open interval of leading-key integers to probe in (lo, hi), when the leading key is an integer.
    fn int_window(&self, lo: &Option<B>, hi: &Option<B>) -> Option<(i128, i128)> {
        let info = self.sh.info;
        if !info.first_key_is_integer() {
            return None;
        }
        let col = &info.columns[info.pk[0]];
        let bits = match col.data_type.as_str() {
            "tinyint" => 8,
            "smallint" => 16,
            "mediumint" => 24,
            "int" | "integer" => 32,
            _ => 64,
        };
        let (min, max) = if col.unsigned {
            (0i128, (1i128 << bits) - 1)
        } else {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        };
        let a = match lo {
            None => min - 1,
            Some(b) => {
                let v = as_int(&b.key[0])?;
                if b.incl {
                    v - 1
                } else {
                    v
                }
            }
        };
        let b = match hi {
            None => max + 1,
            Some(b) => as_int(&b.key[0])?,
        };
        Some((a, b))
    }
}

fn key_of(pos: &[usize], row: &Row) -> Vec<Value> {
    pos.iter()
        .map(|&p| row.as_ref(p).cloned().unwrap_or(Value::NULL))
        .collect()
}

fn write_row_parts(
    buf: &mut Vec<u8>,
    rows: &mut u64,
    hash: &mut u128,
    kinds: &[Kind],
    prefix: &[u8],
    row: &Row,
) {
    if buf.is_empty() {
        buf.extend_from_slice(prefix);
    } else {
        buf.push(b',');
    }
    let start = buf.len();
    push_tuple(buf, kinds, row);
    *hash = hash.wrapping_add(xxhash_rust::xxh3::xxh3_128(&buf[start..]));
    *rows += 1;
}

fn flush_parts(
    sh: &Shared,
    buf: &mut Vec<u8>,
    rows: &mut u64,
    hash: &mut u128,
) -> anyhow::Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    buf.extend_from_slice(b";\n");
    let full = std::mem::replace(buf, Vec::with_capacity(sh.opts.chunk_bytes + (64 << 10)));
    let mut out = sh.out.lock().unwrap();
    out.rows += *rows;
    out.hash = out.hash.wrapping_add(*hash);
    let tx = out.tx.clone();
    drop(out);
    // The writer only stops early on a write error, which the caller reports when it joins it.
    tx.send(full)
        .map_err(|_| anyhow::anyhow!("the dump file's writer stopped"))?;
    *rows = 0;
    *hash = 0;
    Ok(())
}

/// The condition for one bound on the primary key, a full key or a prefix: `(a > 1 OR (a = 1 AND b >= 2))`,
/// expanded so the range optimizer reads only that part of the index.
fn bound_sql(info: &TableInfo, b: &B, lower: bool) -> String {
    let n = b.key.len();
    let mut sql = String::new();
    for i in (0..n).rev() {
        let col = &info.columns[info.pk[i]];
        let c = quote_ident(&col.name);
        let v = literal::to_sql(col.kind, &b.key[i]);
        sql = if i == n - 1 {
            let op = match (lower, b.incl) {
                (true, true) => ">=",
                (true, false) => ">",
                (false, true) => "<=",
                (false, false) => "<",
            };
            format!("{c} {op} {v}")
        } else {
            let strict = if lower { ">" } else { "<" };
            format!("({c} {strict} {v} OR ({c} = {v} AND {sql}))")
        };
    }
    sql
}

fn as_int(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(i128::from(*i)),
        Value::UInt(u) => Some(i128::from(*u)),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

/// A key value as JSON (lost.jsonl, manifest): numbers as numbers, binary as `0x…`, text as text.
pub(crate) fn json_of(kind: Kind, v: &Value) -> serde_json::Value {
    match (kind, v) {
        (_, Value::NULL) => serde_json::Value::Null,
        (Kind::Number, Value::Bytes(b)) => {
            let s = String::from_utf8_lossy(b);
            if let Ok(i) = s.parse::<i64>() {
                i.into()
            } else if let Ok(u) = s.parse::<u64>() {
                u.into()
            } else {
                s.into_owned().into()
            }
        }
        (Kind::Text, Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned().into(),
        (Kind::Number, Value::Int(i)) => (*i).into(),
        (Kind::Number, Value::UInt(u)) => (*u).into(),
        (k, v) => literal::to_sql(k, v).into(),
    }
}

fn status_of(e: &mysql::Error) -> Option<u16> {
    match e {
        mysql::Error::MySqlError(me) => Some(me.code),
        _ => None,
    }
}

/// Dump one table; the entry for the manifest and the lines for lost.jsonl.
pub(crate) fn dump_table(
    connector: &dyn Connector,
    name: &TableName,
    opts: &DumpOptions,
    abort: &AtomicBool,
) -> anyhow::Result<(TableEntry, Vec<String>)> {
    let tag = &opts.tag;
    let mut conn = connector.connect()?;
    prepare_session(&mut conn, tag)?;
    let info = TableInfo::read(&mut conn, tag, name)?;
    let mut entry = TableEntry {
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
        doubts: opts
            .table_doubts
            .iter()
            .filter(|(t, _)| t.as_ref().is_none_or(|t| t == name))
            .map(|(_, d)| d.clone())
            .collect(),
        reconnects: 0,
        note: None,
    };
    let create: String = match conn
        .query_first::<(String, String), _>(format!("SHOW {tag} CREATE TABLE {}", name.qualified()))
    {
        Ok(Some((_, c))) => c,
        Ok(None) => anyhow::bail!("SHOW CREATE TABLE {name} returned nothing"),
        Err(e) => {
            if status_of(&e).is_some() {
                entry.status = TableStatus::Unrecoverable;
                entry.note = Some(format!(
                    "{name} cannot be opened ({}): nothing of it is recoverable through SQL; restore it from a backup",
                    crate::error::describe_mysql(&e)
                ));
                return Ok((entry, Vec::new()));
            }
            return Err(e.into());
        }
    };
    let file = file_name(name);
    let path = opts.out_dir.join(&file);
    let f = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
    let header = format!(
        "-- innops recover: {name}\n\
         SET NAMES utf8mb4;\n\
         SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO', time_zone = '+00:00', foreign_key_checks = 0, unique_checks = 0;\n\
         CREATE DATABASE IF NOT EXISTS {db};\n\
         USE {db};\n\
         {create};\n",
        db = quote_ident(&name.db)
    );
    let (tx, writer) = spawn_writer(f, header.into_bytes());
    let out = Out {
        tx,
        rows: 0,
        hash: 0,
    };
    let cols = info.select_list();
    let shared = Shared {
        info: &info,
        opts,
        connector,
        abort,
        out: Mutex::new(out),
        reconnects: AtomicU32::new(0),
        lost: Mutex::new(Vec::new()),
        from: if info.pk.is_empty() {
            qualified(&name.db, &name.table)
        } else {
            format!("{} FORCE INDEX (PRIMARY)", qualified(&name.db, &name.table))
        },
        key_list: info
            .pk
            .iter()
            .map(|&p| quote_ident(&info.columns[p].name))
            .collect::<Vec<_>>()
            .join(", "),
        insert_prefix: format!("INSERT INTO {} ({cols}) VALUES ", quote_ident(&name.table))
            .into_bytes(),
        select_list: cols,
    };
    let lines = Vec::new();
    let splits = if info.pk.is_empty() {
        Vec::new()
    } else {
        split_points(&mut conn, &info, opts)
    };
    let result = if info.pk.is_empty() {
        plain_scan(&shared, &mut entry)
    } else {
        read_ranges(&shared, &splits)
    };
    entry.reconnects = shared.reconnects.load(Ordering::SeqCst);
    match result {
        Ok(()) => {}
        Err(e) if e.downcast_ref::<Unopenable>().is_some() => {
            drop(shared);
            let _ = writer.join();
            let _ = std::fs::remove_file(&path);
            entry.status = TableStatus::Unrecoverable;
            entry.note = Some(format!(
                "{name} cannot be opened ({}): nothing of it is recoverable through SQL; restore it from a backup",
                crate::error::display_of(&e)
            ));
            return Ok((entry, lines));
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
    let out = shared.out.into_inner().unwrap();
    drop(out.tx);
    let sha = writer
        .join()
        .map_err(|_| anyhow::anyhow!("the writer thread of {} panicked", path.display()))?
        .with_context(|| format!("writing {}", path.display()))?;
    entry.file = Some(file);
    entry.rows = out.rows;
    entry.content_hash = Some(format!("{:032x}", out.hash));
    entry.sha256 = Some(sha);
    let mut lines = lines;
    let pk_kinds: Vec<Kind> = info.pk.iter().map(|&p| info.columns[p].kind).collect();
    let to_json = |b: &B| -> Vec<serde_json::Value> {
        b.key
            .iter()
            .zip(&pk_kinds)
            .map(|(v, k)| json_of(*k, v))
            .collect()
    };
    for (lo, hi) in &lost {
        let range = LostRange {
            after: lo.as_ref().filter(|b| !b.incl).map(to_json),
            from: lo.as_ref().filter(|b| b.incl).map(to_json),
            before: hi.as_ref().map(to_json),
        };
        let secondary = secondary_rows(&mut conn, &info, tag, lo, hi);
        let mut line = serde_json::json!({
            "db": name.db, "table": name.table, "primary_key": entry.primary_key,
        });
        let obj = line.as_object_mut().unwrap();
        if let serde_json::Value::Object(m) = serde_json::to_value(&range)? {
            obj.extend(m);
        }
        obj.insert("secondary".into(), secondary);
        lines.push(serde_json::to_string(&line)?);
        entry.lost.push(range);
    }
    entry.status = if !entry.doubts.is_empty() {
        TableStatus::Doubtful
    } else if info.pk.is_empty() {
        TableStatus::NoPrimaryKey
    } else if entry.lost.is_empty() && entry.note.is_none() {
        TableStatus::Complete
    } else {
        TableStatus::Partial
    };
    Ok((entry, lines))
}

/// Where to cut an integer-led primary key into `threads` ranges read at once: evenly between MIN and MAX of
/// the leading column. None on a small table, a non-integer key, one thread, or when MIN/MAX cannot be read.
fn split_points(conn: &mut Conn, info: &TableInfo, opts: &DumpOptions) -> Vec<Value> {
    if opts.threads < 2 || !info.first_key_is_integer() {
        return Vec::new();
    }
    let estimate: Option<u64> = conn
        .exec_first(
            format!(
                "SELECT {} TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
                opts.tag
            ),
            (&info.name.db, &info.name.table),
        )
        .ok()
        .flatten();
    if estimate.unwrap_or(0) < opts.split_min_rows {
        return Vec::new();
    }
    let col = quote_ident(&info.columns[info.pk[0]].name);
    let Ok(Some((Some(lo), Some(hi)))) =
        conn.query_first::<(Option<String>, Option<String>), _>(format!(
            "SELECT {} MIN({col}), MAX({col}) FROM {} FORCE INDEX (PRIMARY)",
            opts.tag,
            info.name.qualified()
        ))
    else {
        return Vec::new();
    };
    let (Ok(lo), Ok(hi)) = (lo.parse::<i128>(), hi.parse::<i128>()) else {
        return Vec::new();
    };
    let n = opts.threads as i128;
    let mut out: Vec<i128> = (1..n)
        .map(|i| lo + (hi - lo) * i / n)
        .filter(|c| *c > lo)
        .collect();
    out.dedup();
    out.into_iter()
        .map(|c| Value::Bytes(c.to_string().into_bytes()))
        .collect()
}

/// Read every range (cut at `splits`) in a session of its own, at once.
fn read_ranges(sh: &Shared, splits: &[Value]) -> anyhow::Result<()> {
    let bound = |i: usize, lower: bool| -> Option<B> {
        let idx = if lower { i.checked_sub(1)? } else { i };
        splits.get(idx).map(|v| B {
            key: vec![v.clone()],
            incl: lower,
        })
    };
    let ranges: Vec<Stretch> = (0..=splits.len())
        .map(|i| (i, bound(i, true), bound(i, false)))
        .collect();
    let read = |(i, lo, hi): Stretch| -> anyhow::Result<()> {
        let mut r = Reader::new(sh, i)?;
        r.fill(lo, hi)?;
        r.flush()
    };
    if ranges.len() == 1 {
        return read(ranges.into_iter().next().unwrap());
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = ranges
            .into_iter()
            .map(|r| s.spawn(move || read(r)))
            .collect();
        let mut first_err = None;
        for h in handles {
            let res = h
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("a reading thread panicked")));
            if let Err(e) = res {
                // The table cannot be opened: that decides; otherwise the first error.
                if e.downcast_ref::<Unopenable>().is_some() || first_err.is_none() {
                    first_err = Some(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    })
}

/// Lost stretches in key order of their ranges, those that meet at a range cut joined into one.
fn merge_lost(mut lost: Vec<Stretch>, splits: &[Value]) -> Vec<(Option<B>, Option<B>)> {
    let at_cut = |b: &Option<B>, cut: Option<&Value>| match (b, cut) {
        (Some(b), Some(c)) => b.key.len() == 1 && b.key[0] == *c,
        _ => false,
    };
    // Within a range: the one starting at the range's start first, the one ending at its end last.
    lost.sort_by_key(|(i, lo, hi)| {
        let starts = i.checked_sub(1).is_some_and(|j| at_cut(lo, splits.get(j)));
        let ends = at_cut(hi, splits.get(*i));
        (
            *i,
            if starts {
                0
            } else if ends {
                2
            } else {
                1
            },
        )
    });
    let mut out: Vec<Stretch> = Vec::new();
    for (i, lo, hi) in lost {
        if let Some(prev) = out.last_mut() {
            let cut = i.checked_sub(1).and_then(|j| splits.get(j));
            if prev.0 + 1 == i && at_cut(&prev.2, cut) && at_cut(&lo, cut) {
                prev.0 = i;
                prev.2 = hi;
                continue;
            }
        }
        out.push((i, lo, hi));
    }
    out.into_iter().map(|(_, lo, hi)| (lo, hi)).collect()
}

/// The rows each secondary index still lists inside a lost stretch: its columns and the primary key, read
/// through that index only. An index that cannot be read is said so.
fn secondary_rows(
    conn: &mut Conn,
    info: &TableInfo,
    tag: &str,
    lo: &Option<B>,
    hi: &Option<B>,
) -> serde_json::Value {
    let mut out = Vec::new();
    for (index, cols) in &info.secondary {
        let mut pos: Vec<usize> = cols.clone();
        for p in &info.pk {
            if !pos.contains(p) {
                pos.push(*p);
            }
        }
        let names: Vec<String> = pos.iter().map(|&p| info.columns[p].name.clone()).collect();
        let list = names
            .iter()
            .map(|n| quote_ident(n))
            .collect::<Vec<_>>()
            .join(", ");
        let mut conds = Vec::new();
        if let Some(b) = lo {
            conds.push(bound_sql(info, b, true));
        }
        if let Some(b) = hi {
            conds.push(bound_sql(info, b, false));
        }
        let wh = if conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conds.join(" AND "))
        };
        let sql = format!(
            "SELECT {tag} {list} FROM {} FORCE INDEX ({}){wh}",
            info.name.qualified(),
            quote_ident(index)
        );
        let rows: Result<Vec<Row>, _> = conn.query(sql);
        match rows {
            Ok(rows) => {
                let rows: Vec<Vec<serde_json::Value>> = rows
                    .iter()
                    .map(|r| {
                        pos.iter()
                            .enumerate()
                            .map(|(i, &p)| {
                                json_of(info.columns[p].kind, r.as_ref(i).unwrap_or(&Value::NULL))
                            })
                            .collect()
                    })
                    .collect();
                out.push(serde_json::json!({"index": index, "columns": names, "rows": rows}));
            }
            Err(e) => out.push(serde_json::json!({
                "index": index, "columns": names,
                "error": crate::error::describe_mysql(&e),
            })),
        }
    }
    serde_json::Value::Array(out)
}

/// A table without a primary key: one plain scan, as far as it goes.
fn plain_scan(sh: &Shared, entry: &mut TableEntry) -> anyhow::Result<()> {
    let mut r = Reader::new(sh, 0)?;
    let sql = format!("SELECT {} {} FROM {}", sh.opts.tag, sh.select_list, sh.from);
    let o = r.run(&sql, true, false)?;
    r.flush()?;
    entry.note = Some(if o.ok {
        format!(
            "{} has no usable primary key (none, or one on a column prefix or a generated column): it was dumped by a plain scan, which ended without error",
            sh.info.name
        )
    } else {
        format!(
            "{} has no usable primary key (none, or one on a column prefix or a generated column): a plain scan stopped at a read error after {} rows and the rows after the damage cannot be reached through SQL",
            sh.info.name, o.n
        )
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(v: i64) -> Vec<Value> {
        vec![Value::Bytes(v.to_string().into_bytes())]
    }

    #[test]
    fn lost_stretches_meeting_at_a_cut_become_one_range() {
        let cuts = [Value::Bytes(b"100".to_vec()), Value::Bytes(b"200".to_vec())];
        let below = |v: &Value| B {
            key: vec![v.clone()],
            incl: false,
        };
        let from = |v: &Value| B {
            key: vec![v.clone()],
            incl: true,
        };
        let lost = vec![
            // Range 2 entirely unreadable, range 1 unreadable at both ends, range 0 at its end and inside.
            (2, Some(from(&cuts[1])), Some(B::before(key(260)))),
            (1, Some(B::after(key(150))), Some(below(&cuts[1]))),
            (0, Some(B::after(key(10))), Some(B::before(key(20)))),
            (1, Some(from(&cuts[0])), Some(B::before(key(120)))),
            (0, Some(B::after(key(90))), Some(below(&cuts[0]))),
        ];
        let merged = merge_lost(lost, &cuts);
        assert_eq!(
            merged,
            vec![
                (Some(B::after(key(10))), Some(B::before(key(20)))),
                (Some(B::after(key(90))), Some(B::before(key(120)))),
                (Some(B::after(key(150))), Some(B::before(key(260)))),
            ]
        );
        // A stretch that ends at a cut the next range read from is kept as it is, bounded by the cut.
        let lone = vec![(0, Some(B::after(key(90))), Some(below(&cuts[0])))];
        assert_eq!(
            merge_lost(lone, &cuts),
            vec![(Some(B::after(key(90))), Some(below(&cuts[0])))]
        );
    }
}
