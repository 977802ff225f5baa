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
use super::manifest::{Doubt, DoubtKind, KeyRange, LostRange, TableEntry, TableStatus};
use super::xcheck;
use super::{file_name, prepare_session, Connector, DumpOptions, TableInfo, TableName};
use crate::sql::quote_ident;

/// The table cannot be opened through SQL (ERROR 1877 and the like).
#[derive(Debug)]
struct Unopenable(String);

impl std::fmt::Display for Unopenable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Unopenable {}

/// Error codes that mean the table as a whole cannot be opened: corrupted (1877), not in the engine (1932), its
/// tablespace missing (1812) or discarded (1814; the server still describes such a table, so only the read says).
const UNOPENABLE: [u16; 4] = [1812, 1814, 1877, 1932];
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

/// A written read during which the error log got corruption lines: (first key, last key, the lines).
type Suspect = (Vec<Value>, Vec<Value>, Vec<String>);

/// A stretch of one range's key space no read reached: (range index, lower, upper).
type Stretch = (usize, Option<B>, Option<B>);

/// The table file as the reading threads see it: full INSERT statements go to a writer thread (which also
/// hashes the file), the row count and content hash add up here.
struct Out {
    tx: std::sync::mpsc::SyncSender<Vec<u8>>,
    /// Buffers the writer is done with, emptied, for the readers' next statements (no fresh megabyte to
    /// allocate and fault in per statement).
    spare: std::sync::mpsc::Receiver<Vec<u8>>,
    rows: u64,
    hash: u128,
}

/// A table file's writer: where statements go, where emptied buffers come back, and the thread (the sha256).
type Writer = (
    std::sync::mpsc::SyncSender<Vec<u8>>,
    std::sync::mpsc::Receiver<Vec<u8>>,
    std::thread::JoinHandle<std::io::Result<String>>,
);

/// The writer thread of a table file: writes and hashes what the readers send, and hands the emptied buffers
/// back through `spare`; the file's sha256.
fn spawn_writer(f: std::fs::File, header: Vec<u8>) -> Writer {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
    let (back, spare) = std::sync::mpsc::sync_channel::<Vec<u8>>(8);
    let handle = std::thread::spawn(move || {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let mut sha = Sha256::new();
        sha.update(&header);
        w.write_all(&header)?;
        for mut buf in rx {
            sha.update(&buf);
            w.write_all(&buf)?;
            buf.clear();
            // Full (the readers have enough) or gone: the buffer is simply freed.
            let _ = back.try_send(buf);
        }
        w.flush()?;
        Ok(format!("{:x}", sha.finalize()))
    });
    (tx, spare, handle)
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
    /// The server's error log, when readable here.
    log: Option<std::path::PathBuf>,
    /// Rows innops wrote and cannot vouch for.
    doubts: Mutex<Vec<Doubt>>,
    /// Per group read only in part (a key walked group by group), the rows the index lists and no read
    /// returned; keyed by the group's key as debug text.
    group_lost: Mutex<std::collections::HashMap<String, u64>>,
    /// Written reads during which the error log got a corruption line: (first key, last key, the line). Checked
    /// again one read at a time once every thread is done ([`Reader::confirm`]).
    suspects: Mutex<Vec<Suspect>>,
    /// Pages the error log named while a read failed with an SQL error: damage SQL reports, not a suspect's.
    explained: Mutex<std::collections::BTreeSet<u64>>,
    /// Every key column is an integer: rows out of key order are seen as they stream.
    int_key: bool,
    /// The key walked by repeats (an index walked group by group): equal keys in a row are in order.
    repeats: bool,
    /// Positions of DATE, DATETIME and TIMESTAMP columns: their values are checked as they stream.
    temporal: Vec<usize>,
    /// The secondary indexes checked against the rows written ([`super::xcheck`]), and what every reader
    /// recorded for them.
    xs: Vec<xcheck::XIndex>,
    shape: xcheck::Shape,
    written: Mutex<Vec<Vec<(u64, u64)>>>,
}

/// Rows received just before a crash, and written just after it, that are doubtful: more than any page holds
/// (a 16 KiB page holds at most ~860 records, a 64 KiB page four times that), so the page the server crashed
/// on is inside the window whatever its rows.
const CRASH_WINDOW: usize = 4096;

/// A crash being turned into a doubt: the window before it, extended by the rows written after it.
struct CrashDoubt {
    why: String,
    /// (first, last) key of the rows in the window, one pair per read (each read ascends).
    spans: Vec<(Vec<Value>, Vec<Value>)>,
    /// The stretch being read when the server went away: the doubt's range when no row is in the window.
    at: (Option<B>, Option<B>),
    /// Rows after the crash still inside the window.
    tail: usize,
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
    crash: Option<CrashDoubt>,
    /// This reader's entries for the secondary-index cross-check, merged into the table's at flush.
    xbuf: Vec<Vec<(u64, u64)>>,
    /// Rows whose leading key column is below this are read but not written (a read from the range before a
    /// cut, crossing it).
    skip_below: Option<i128>,
    /// The first this many rows of the next read are not written (the rows of a group written already).
    skip_first: u64,
    /// The key of the last row the last written read returned, and how many rows in a row ended with it.
    last_group: Option<(Vec<Value>, u64)>,
    /// The stretch this reader is working on (for a crash that returned no row).
    span: (Option<B>, Option<B>),
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
            crash: None,
            xbuf: vec![Vec::new(); sh.xs.len()],
            skip_below: None,
            skip_first: 0,
            last_group: None,
            span: (None, None),
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
        write_row_parts(
            buf,
            rows,
            hash,
            kinds,
            &sh.insert_prefix,
            row,
            &mut Vec::new(),
        );
        xcheck::record(&sh.xs, &sh.shape, row, &mut self.xbuf);
        if buf.len() >= sh.opts.chunk_bytes {
            flush_parts(sh, buf, rows, hash)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        self.end_crash_doubt();
        if !self.xbuf.is_empty() {
            let mut w = self.sh.written.lock().unwrap();
            xcheck::merge(&self.sh.shape, &mut w, &mut self.xbuf);
        }
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
    /// through the connector and reported as a failed read. A written read is watched: the server's error log
    /// (a corruption line makes the read a suspect), the key order of its rows, and a crash (the rows around it
    /// become doubtful).
    fn run(&mut self, sql: &str, write: bool, keys_only: bool) -> anyhow::Result<Outcome> {
        if self.sh.reconnects.load(Ordering::SeqCst) > self.sh.opts.max_reconnects {
            // The server crashed too often on this table: no more reads of it; what is left is lost.
            return Ok(Outcome {
                ok: false,
                n: 0,
                first: None,
                last: None,
            });
        }
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
        let log_from = self
            .sh
            .log
            .as_ref()
            .map(|p| crate::server::errorlog::end_offset(p));
        // The keys of the rows received, the last CRASH_WINDOW of them, for a crash.
        let mut recent: VecDeque<Vec<Value>> = VecDeque::new();
        let check_order = write && self.sh.int_key;
        // The previous row's integer key, when it had one, and the current row's (kept across rows: no
        // allocation per row).
        let (mut prev, mut prev_ok, mut ints): (Vec<i128>, bool, Vec<i128>) =
            (Vec::new(), false, Vec::new());
        let mut out_of_order: Vec<Vec<Value>> = Vec::new();
        let mut impossible: Vec<Vec<Value>> = Vec::new();
        // The first and last rows of this read inside a crash's window.
        let mut tail: Option<Vec<Value>> = None;
        let mut tail_last: Option<Vec<Value>> = None;
        // Per row scratch space kept across rows: the key (a window entry dropped from `recent` is reused),
        // where each column's literal is in `buf`, and the cross-check's buffers.
        let mut spare: Option<Vec<Value>> = None;
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut scratch = xcheck::Scratch::default();
        let skip_below = self.skip_below;
        let mut failure: Option<mysql::Error> = None;
        {
            let Reader {
                sh,
                conn,
                kinds,
                buf,
                rows,
                hash,
                crash,
                xbuf,
                skip_first,
                last_group,
                ..
            } = self;
            match conn.query_iter(sql) {
                Err(e) => failure = Some(e),
                Ok(result) => {
                    for row in result {
                        match row {
                            Ok(r) => {
                                let mut key = spare.take().unwrap_or_default();
                                key_into(&mut key, &key_pos, &r);
                                if skip_below
                                    .is_some_and(|s| as_int(&key[0]).is_some_and(|k| k < s))
                                {
                                    spare = Some(key);
                                    continue;
                                }
                                if *skip_first > 0 {
                                    *skip_first -= 1;
                                    o.n += 1;
                                    continue;
                                }
                                if o.first.is_none() {
                                    o.first = Some(key.clone());
                                }
                                if write && sh.repeats {
                                    match last_group {
                                        Some((k, n)) if *k == key => *n += 1,
                                        _ => *last_group = Some((key.clone(), 1)),
                                    }
                                }
                                if write {
                                    write_row_parts(
                                        buf,
                                        rows,
                                        hash,
                                        kinds,
                                        &sh.insert_prefix,
                                        &r,
                                        &mut spans,
                                    );
                                    // Before the flush: `spans` point into `buf`.
                                    xcheck::record_lits(
                                        &sh.xs,
                                        &sh.shape,
                                        &r,
                                        buf,
                                        &spans,
                                        xbuf,
                                        &mut scratch,
                                    );
                                    if buf.len() >= sh.opts.chunk_bytes {
                                        flush_parts(sh, buf, rows, hash)?;
                                    }
                                    if sh.temporal.iter().any(|&p| {
                                        r.as_ref(p).is_some_and(|v| !possible_datetime(v))
                                    }) {
                                        impossible.push(key.clone());
                                    }
                                    if check_order {
                                        ints.clear();
                                        let ok = key
                                            .iter()
                                            .all(|v| as_int(v).map(|i| ints.push(i)).is_some());
                                        // Equal keys follow each other in a walk by groups.
                                        if ok
                                            && prev_ok
                                            && (ints < prev || (ints == prev && !sh.repeats))
                                        {
                                            out_of_order.push(key.clone());
                                        }
                                        std::mem::swap(&mut prev, &mut ints);
                                        prev_ok = ok;
                                    }
                                    if let Some(c) = crash.as_mut().filter(|c| c.tail > 0) {
                                        tail.get_or_insert_with(|| key.clone());
                                        tail_last = Some(key.clone());
                                        c.tail -= 1;
                                    }
                                    if recent.len() == CRASH_WINDOW {
                                        spare = recent.pop_front();
                                    }
                                    recent.push_back(key);
                                } else {
                                    spare = Some(key);
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
        if crate::testhooks::dump_trace() {
            let end = failure
                .as_ref()
                .map_or("end".to_string(), crate::error::describe_mysql);
            eprintln!("{sql} -> {} rows, {end}", o.n);
        }
        if let (Some(c), Some(f), Some(l)) = (self.crash.as_mut(), tail, tail_last) {
            c.spans.push((f, l));
        }
        if self.crash.as_ref().is_some_and(|c| c.tail == 0) {
            self.end_crash_doubt();
        }
        if !out_of_order.is_empty() {
            self.doubt_out_of_order(&out_of_order);
        }
        if !impossible.is_empty() {
            let info = self.sh.info;
            self.sh.doubts.lock().unwrap().push(Doubt {
                kind: DoubtKind::ImpossibleValue,
                why: format!(
                    "{} row(s) hold a date or time their column cannot hold (a time past 23:59:59, a month past 12): their record is not what InnoDB wrote",
                    impossible.len()
                ),
                range: None,
                keys: impossible
                    .iter()
                    .filter(|k| !k.is_empty())
                    .map(|k| key_json(info, k))
                    .collect(),
            });
        }
        // Pages named while a read failed with an SQL error are that error's: the damage SQL reports. A written
        // read that ended without an error while the server logged corruption may have returned a damaged row
        // (a BLOB page that failed): a suspect, judged once every page SQL reported is known.
        if let (Some(from), Some(path)) = (log_from, self.sh.log.as_ref()) {
            let lines = if crate::server::errorlog::end_offset(path) > from {
                corruption_since(path, from)
            } else {
                Vec::new()
            };
            match (&failure, &o.first, &o.last) {
                _ if lines.is_empty() => {}
                (Some(e), _, _) if !is_gone(e) => {
                    self.sh
                        .explained
                        .lock()
                        .unwrap()
                        .extend(lines.iter().filter_map(|l| page_of(l)));
                }
                (None, Some(first), Some(last)) if write => {
                    if crate::testhooks::dump_trace() {
                        eprintln!("suspect: {lines:?}");
                    }
                    let last = key_of(&key_pos, last);
                    self.sh
                        .suspects
                        .lock()
                        .unwrap()
                        .push((first.clone(), last, lines));
                }
                _ => {}
            }
        }
        if let Some(e) = failure {
            o.ok = false;
            if is_gone(&e) {
                self.begin_crash_doubt(&e, recent);
            }
            self.failed(&e)?;
        }
        Ok(o)
    }

    /// The server went away while this reader read: the rows received just before (`recent`) and the next
    /// rows written after it are in doubt; the window is closed by [`Reader::end_crash_doubt`].
    fn begin_crash_doubt(&mut self, e: &mysql::Error, recent: VecDeque<Vec<Value>>) {
        self.end_crash_doubt();
        self.crash = Some(CrashDoubt {
            why: format!(
                "the server went away while these rows were read ({}); innops started it again and read on: a record on the page it crashed on may be garbage that came back as a row",
                crate::error::went_away_detail(&crate::error::describe_mysql(e))
            ),
            spans: match (recent.front(), recent.back()) {
                (Some(f), Some(l)) => vec![(f.clone(), l.clone())],
                _ => Vec::new(),
            },
            at: self.span.clone(),
            tail: CRASH_WINDOW,
        });
    }

    fn end_crash_doubt(&mut self) {
        let Some(c) = self.crash.take() else { return };
        let info = self.sh.info;
        let keyed = !info.pk.is_empty();
        let mut ranges: Vec<Option<KeyRange>> = c
            .spans
            .iter()
            .filter(|_| keyed)
            .map(|(f, t)| {
                Some(KeyRange {
                    from: Some(key_json(info, f)),
                    to: Some(key_json(info, t)),
                    ..Default::default()
                })
            })
            .collect();
        if ranges.is_empty() {
            // No row before or after it: the stretch it was reading (the whole table without a key).
            let (lo, hi) = &c.at;
            let bound = |b: &Option<B>, incl: bool| {
                b.as_ref()
                    .filter(|b| b.incl == incl && keyed)
                    .map(|b| key_json(info, &b.key))
            };
            let r = KeyRange {
                after: bound(lo, false),
                from: bound(lo, true),
                before: bound(hi, false),
                to: bound(hi, true),
            };
            ranges.push((r != KeyRange::default()).then_some(r));
        }
        let mut doubts = self.sh.doubts.lock().unwrap();
        for range in ranges {
            doubts.push(Doubt {
                kind: DoubtKind::Crash,
                why: c.why.clone(),
                range,
                keys: Vec::new(),
            });
        }
    }

    fn doubt_out_of_order(&self, keys: &[Vec<Value>]) {
        let info = self.sh.info;
        self.sh.doubts.lock().unwrap().push(Doubt {
            kind: DoubtKind::KeyOrder,
            why: format!(
                "{} row(s) came back with a key not above the row before it: the page holding them is not in the order InnoDB keeps, so they or their neighbours may be garbage",
                keys.len()
            ),
            range: None,
            keys: keys.iter().map(|k| key_json(info, k)).collect(),
        });
    }

    /// Classify a read failure: the table cannot be opened (stop), the session is gone (reconnect), or a read
    /// error the caller works around.
    fn failed(&mut self, e: &mysql::Error) -> anyhow::Result<()> {
        let (code, gone) = (status_of(e), is_gone(e));
        if let Some(c) = code.filter(|c| UNOPENABLE.contains(c)) {
            let _ = c;
            return Err(Unopenable(crate::error::describe_mysql(e)).into());
        }
        if gone {
            // Past the budget the server is still brought back (the next table needs it), but no read of
            // this table is made again (see `run`).
            self.sh.reconnects.fetch_add(1, Ordering::SeqCst);
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
        self.span = (lo.clone(), hi.clone());
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
        self.span = (lo.clone(), hi.clone());
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
        self.span = (lo.clone(), hi.clone());
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
    /// Probe points come from a readable secondary index (the keys it lists), else from the key's type at the
    /// first column where the bounds differ (and one column deeper on either side): integers by bisection,
    /// galloping away from a known key where the other side is open (the end of the table is unknown when the
    /// last leaf is bad); strings by candidates the server itself ranks in the column's collation.
    fn gap(&mut self, lo: Option<B>, hi: Option<B>) -> anyhow::Result<()> {
        self.span = (lo.clone(), hi.clone());
        // The budget grows with the damage: each distinct page the server reported bad can hide a readable
        // stretch behind it (bounded, so a table of garbage ends).
        let damaged = self.sh.explained.lock().unwrap().len();
        let mut budget = self.sh.opts.probe_budget * (1 + damaged.min(63));
        for space in self.probe_spaces(&lo, &hi) {
            if self.probe(space, &lo, &hi, &mut budget)? {
                return Ok(());
            }
        }
        self.sh.lost.lock().unwrap().push((self.range, lo, hi));
        Ok(())
    }

    /// Probe one space; true when a probe found rows (the stretch was then handled by the recursion).
    fn probe(
        &mut self,
        space: Space,
        lo: &Option<B>,
        hi: &Option<B>,
        budget: &mut usize,
    ) -> anyhow::Result<bool> {
        let (prefix, points, a, mut b, gallop) = match space {
            Space::List(keys) => {
                let n = keys.len() as i128;
                (Vec::new(), Some(keys), -1, n, Vec::new())
            }
            Space::Ints {
                prefix,
                a,
                b,
                gallop,
            } => (prefix, None, a, b, gallop),
        };
        let at = |c: i128| -> B {
            let key = match &points {
                Some(keys) => keys[c as usize].clone(),
                None => {
                    let mut k = prefix.clone();
                    k.push(match i64::try_from(c) {
                        Ok(i) => Value::Int(i),
                        Err(_) => Value::UInt(u64::try_from(c).unwrap_or(u64::MAX)),
                    });
                    k
                }
            };
            B { key, incl: true }
        };
        let probe_at = |r: &mut Self, c: i128| -> anyhow::Result<Said> {
            let probe = Some(at(c));
            let sql = r.select(&probe, hi, false, None, false);
            let o = r.run(&sql, true, false)?;
            if let Some(first) = o.first {
                // A readable stretch from the probe: finish it, then search below its first row.
                if !o.ok {
                    let last = o.last.as_ref().map(|x| r.key_of(x)).unwrap_or_default();
                    r.after_asc_error(Some(B::after(last)), hi.clone())?;
                }
                r.resume_below(lo.clone(), Some(B::before(first)))?;
                return Ok(Said::Found);
            }
            Ok(if o.ok { Said::Empty } else { Said::Failed })
        };
        let spent = |r: &Self, budget: &usize| {
            *budget == 0 || r.sh.reconnects.load(Ordering::SeqCst) >= r.sh.opts.max_reconnects
        };
        // Galloping from an origin: o+1, o+2, o+4, … (or o-1, o-2, …) until past the window.
        for (origin, up) in gallop {
            let mut step: i128 = 1;
            loop {
                let c = if up { origin + step } else { origin - step };
                if c <= a || c >= b {
                    if (up && c >= b) || (!up && c <= a) {
                        break;
                    }
                    step = step.saturating_mul(2);
                    continue;
                }
                if spent(self, budget) {
                    break;
                }
                *budget -= 1;
                match probe_at(self, c)? {
                    Said::Found => return Ok(true),
                    Said::Empty => b = c,
                    Said::Failed => {}
                }
                step = step.saturating_mul(2);
            }
        }
        bisect(a, b, |c| {
            if spent(self, budget) {
                return Ok(None);
            }
            *budget -= 1;
            probe_at(self, c).map(Some)
        })
    }

    /// Where to probe inside (lo, hi), in the order to try.
    fn probe_spaces(&mut self, lo: &Option<B>, hi: &Option<B>) -> Vec<Space> {
        if let Some(keys) = self.candidates(lo, hi) {
            return vec![Space::List(keys)];
        }
        let n = self.sh.info.pk.len();
        let lk = lo.as_ref().map(|b| b.key.as_slice());
        let hk = hi.as_ref().map(|b| b.key.as_slice());
        // The first column where the bounds differ (a bound may be a prefix: a cut between parallel reads).
        let mut i = 0;
        while let (Some(l), Some(h)) = (lk, hk) {
            if i + 1 < n && i + 1 < l.len() && i + 1 < h.len() && l[i] == h[i] {
                i += 1;
            } else {
                break;
            }
        }
        let mut out = Vec::new();
        let prefix = lk.or(hk).map(|k| k[..i].to_vec()).unwrap_or_default();
        let lower = lo.as_ref().and_then(|b| {
            let v = b.key.get(i)?;
            // Only an inclusive bound ending at this column lets its value in: the rest of a bound's group
            // (more columns after this one) is the deeper space's below.
            Some((v.clone(), b.incl && b.key.len() == i + 1))
        });
        let upper = hi.as_ref().and_then(|b| b.key.get(i).cloned());
        out.extend(self.column_space(i, prefix, lower, upper));
        // One column deeper on either side: the rest of the lower bound's group, the start of the upper's.
        if i + 1 < n {
            if let Some(l) = lk.filter(|l| l.len() > i + 1) {
                let v = l[i + 1].clone();
                let incl = lo.as_ref().is_some_and(|b| b.incl) && l.len() == i + 2;
                out.extend(self.column_space(i + 1, l[..=i].to_vec(), Some((v, incl)), None));
            }
            if let Some(h) = hk.filter(|h| h.len() > i + 1) {
                out.extend(self.column_space(
                    i + 1,
                    h[..=i].to_vec(),
                    None,
                    Some(h[i + 1].clone()),
                ));
            }
        }
        out
    }

    /// Probe points for key column `i` after `prefix`, strictly between `lower` (value, and whether the value
    /// itself is in) and `upper` (exclusive).
    fn column_space(
        &mut self,
        i: usize,
        prefix: Vec<Value>,
        lower: Option<(Value, bool)>,
        upper: Option<Value>,
    ) -> Option<Space> {
        let info = self.sh.info;
        let p = info.pk[i];
        if info.is_integer(p) {
            let col = &info.columns[p];
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
            let a = match &lower {
                None => min - 1,
                Some((v, incl)) => as_int(v)? - i128::from(*incl),
            };
            let b = match &upper {
                None => max + 1,
                Some(v) => as_int(v)?,
            };
            // Away from the known side; with neither known, out from zero both ways (keys cluster near it).
            let gallop = match (&lower, &upper) {
                (Some(_), None) => vec![(a, true)],
                (None, Some(_)) => vec![(b, false)],
                (None, None) => vec![(0, true), (0, false)],
                (Some(_), Some(_)) => Vec::new(),
            };
            return Some(Space::Ints {
                prefix,
                a,
                b,
                gallop,
            });
        }
        let points = self.string_points(p, lower.as_ref().map(|l| &l.0), upper.as_ref())?;
        Some(Space::List(
            points
                .into_iter()
                .map(|v| {
                    let mut k = prefix.clone();
                    k.push(v);
                    k
                })
                .collect(),
        ))
    }

    /// Strings strictly between `lo` and `hi` in column `p`'s collation, in its order: made from the bounds'
    /// prefixes and a set of characters, then filtered and sorted by the server (which alone knows the
    /// collation's order). None when the column is not a character or binary string, or the server cannot say.
    fn string_points(
        &mut self,
        p: usize,
        lo: Option<&Value>,
        hi: Option<&Value>,
    ) -> Option<Vec<Value>> {
        let col = &self.sh.info.columns[p];
        let binary = matches!(col.data_type.as_str(), "binary" | "varbinary");
        if !binary && !matches!(col.data_type.as_str(), "char" | "varchar") {
            return None;
        }
        let bytes = |v: Option<&Value>| match v {
            Some(Value::Bytes(b)) => Some(b.clone()),
            _ => None,
        };
        let (l, h) = (bytes(lo), bytes(hi));
        let cands = candidate_strings(l.as_deref(), h.as_deref(), binary);
        if cands.is_empty() {
            return None;
        }
        let expr = |lit: &str| -> String {
            match (&col.charset, &col.collation) {
                (Some(cs), Some(co)) if !binary => format!(
                    "CONVERT({lit} USING {}) COLLATE {}",
                    quote_ident(cs),
                    quote_ident(co)
                ),
                _ => format!("CAST({lit} AS BINARY)"),
            }
        };
        let kind = col.kind;
        let union = cands
            .iter()
            .map(|c| {
                format!(
                    "SELECT {} AS x",
                    literal::to_sql(kind, &Value::Bytes(c.clone()))
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        let mut conds = Vec::new();
        if let Some(v) = lo {
            conds.push(format!(
                "{} > {}",
                expr("x"),
                expr(&literal::to_sql(kind, v))
            ));
        }
        if let Some(v) = hi {
            conds.push(format!(
                "{} < {}",
                expr("x"),
                expr(&literal::to_sql(kind, v))
            ));
        }
        let sql = format!(
            "SELECT {} x FROM ({union}) AS c{} ORDER BY {}",
            self.sh.opts.tag,
            if conds.is_empty() {
                String::new()
            } else {
                format!(" WHERE {}", conds.join(" AND "))
            },
            expr("x")
        );
        let rows: Vec<Row> = self.conn.query(sql).ok()?;
        Some(
            rows.into_iter()
                .filter_map(|r| r.as_ref(0).cloned())
                .collect(),
        )
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
        for index in &info.secondary {
            let sql = format!(
                // Sorted outside the index read: ORDER BY on the table itself would make the optimizer
                // read the clustered index instead; a derived table with LIMIT is materialized first.
                "SELECT {} {keys} FROM (SELECT {keys} FROM {} FORCE INDEX ({}){wh} LIMIT 1000000) AS c ORDER BY {keys}",
                self.sh.opts.tag,
                info.name.qualified(),
                quote_ident(&index.name),
                keys = self.sh.key_list,
            );
            let res = self.conn.query::<Row, _>(&sql);
            if crate::testhooks::dump_trace() {
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

    /// Suspect reads (a corruption line in the error log while they ran) read again one at a time, halving
    /// the keys until each row whose read makes the server log corruption is named; those rows are doubtful.
    /// A read that the server logs nothing for again was another reader's line.
    fn confirm(&mut self) -> anyhow::Result<()> {
        let Some(log) = self.sh.log.clone() else {
            return Ok(());
        };
        let suspects = std::mem::take(&mut *self.sh.suspects.lock().unwrap());
        let info = self.sh.info;
        let explained = self.sh.explained.lock().unwrap().clone();
        // Past the crash budget no row can be read again: every suspect stays a doubt as a whole; a table
        // without a key cannot be halved: its suspects are doubts on the whole table.
        let can_read = self.sh.reconnects.load(Ordering::SeqCst) <= self.sh.opts.max_reconnects
            && !info.pk.is_empty();
        for (first, last, lines) in suspects {
            let Some(line) = unexplained(&lines, &explained).into_iter().next() else {
                continue;
            };
            if !can_read {
                let why = format!(
                    "the server's error log said \"{line}\" while these rows were read, and they could not be read again one by one: a column may have come back truncated or empty without any SQL error"
                );
                let range = (!info.pk.is_empty()).then(|| KeyRange {
                    from: Some(key_json(info, &first)),
                    to: Some(key_json(info, &last)),
                    ..Default::default()
                });
                self.sh.doubts.lock().unwrap().push(Doubt {
                    kind: DoubtKind::ErrorLog,
                    why,
                    range,
                    keys: Vec::new(),
                });
                continue;
            }
            let lo = Some(B {
                key: first.clone(),
                incl: true,
            });
            // Up to the last key, not through it: a read that goes on past its last row touches the page
            // after it, which may be the damaged one.
            let below = Some(B::before(last.clone()));
            let sql = self.select(&lo, &below, false, Some(CONFIRM_MAX as u32 + 1), true);
            let o = self.run_keys(&sql)?.map(|mut keys| {
                keys.push(last.clone());
                keys
            });
            let why = format!(
                "the server's error log said \"{line}\" while these rows were read: a column may have come back truncated or empty without any SQL error"
            );
            let mut doubtful = Vec::new();
            match o {
                Some(keys) if keys.len() <= CONFIRM_MAX => {
                    self.bisect(&log, &explained, &keys, &mut doubtful)?;
                    if doubtful.is_empty() {
                        continue;
                    }
                    let range = KeyRange {
                        from: doubtful.first().map(|k: &Vec<Value>| key_json(info, k)),
                        to: doubtful.last().map(|k| key_json(info, k)),
                        ..Default::default()
                    };
                    self.sh.doubts.lock().unwrap().push(Doubt {
                        kind: DoubtKind::ErrorLog,
                        why,
                        range: Some(range),
                        keys: doubtful.iter().map(|k| key_json(info, k)).collect(),
                    });
                }
                // Too many keys to halve, or the keys cannot be read again: the whole read is doubtful.
                _ => self.sh.doubts.lock().unwrap().push(Doubt {
                    kind: DoubtKind::ErrorLog,
                    why,
                    range: Some(KeyRange {
                        from: Some(key_json(info, &first)),
                        to: Some(key_json(info, &last)),
                        ..Default::default()
                    }),
                    keys: Vec::new(),
                }),
            }
        }
        Ok(())
    }

    /// How many rows of group `g` the last written read returned at its end.
    fn rows_in_group_written(&self, g: &[Value]) -> u64 {
        match &self.last_group {
            Some((k, n)) if k.as_slice() == g => *n,
            _ => 0,
        }
    }

    /// How many entries of group `g` the index walked by lists (read from the index alone).
    fn group_size(&mut self, g: &[Value]) -> anyhow::Result<Option<u64>> {
        let sql = format!(
            "SELECT {} COUNT(*) FROM {} WHERE {}",
            self.sh.opts.tag,
            self.sh.from,
            self.key_equals(g)
        );
        match self.conn.query_first::<u64, _>(sql) {
            Ok(n) => Ok(n),
            Err(e) => {
                self.failed(&e)?;
                Ok(None)
            }
        }
    }

    /// `a = 1 AND b = 'x'`: every key column equal to `key`'s value.
    fn key_equals(&self, key: &[Value]) -> String {
        let info = self.sh.info;
        key.iter()
            .zip(&info.pk)
            .map(|(v, &p)| {
                let c = &info.columns[p];
                format!("{} = {}", quote_ident(&c.name), literal::to_sql(c.kind, v))
            })
            .collect::<Vec<_>>()
            .join(" AND ")
    }

    /// The row with key `key`, by equality on every key column.
    fn point(&self, key: &[Value]) -> String {
        format!(
            "SELECT {} {} FROM {} WHERE {}",
            self.sh.opts.tag,
            self.sh.select_list,
            self.sh.from,
            self.key_equals(key)
        )
    }

    /// The keys a keys-only read returns, or None when it fails.
    fn run_keys(&mut self, sql: &str) -> anyhow::Result<Option<Vec<Vec<Value>>>> {
        let res: Result<Vec<Row>, _> = self.conn.query(sql);
        match res {
            Ok(rows) => Ok(Some(rows.into_iter().map(|r| r.unwrap()).collect())),
            Err(e) => {
                self.failed(&e)?;
                Ok(None)
            }
        }
    }

    /// The keys of `keys` whose rows, read alone, make the server log corruption (see [`Reader::confirm`]).
    fn bisect(
        &mut self,
        log: &std::path::Path,
        explained: &std::collections::BTreeSet<u64>,
        keys: &[Vec<Value>],
        out: &mut Vec<Vec<Value>>,
    ) -> anyhow::Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let from = crate::server::errorlog::end_offset(log);
        let sql = if keys.len() == 1 {
            // One row by equality on the whole key: InnoDB reads no record after it.
            self.point(&keys[0])
        } else {
            let lo = Some(B {
                key: keys[0].clone(),
                incl: true,
            });
            let hi = Some(B {
                key: keys[keys.len() - 1].clone(),
                incl: true,
            });
            self.select(&lo, &hi, false, None, false)
        };
        let o = self.run(&sql, false, false)?;
        let _ = o;
        let logged = crate::server::errorlog::end_offset(log) > from
            && !unexplained(&corruption_since(log, from), explained).is_empty();
        if crate::testhooks::dump_trace() {
            eprintln!("confirm {} key(s): logged {logged}", keys.len());
        }
        if !logged {
            return Ok(());
        }
        if keys.len() == 1 {
            out.push(keys[0].clone());
            return Ok(());
        }
        let mid = keys.len() / 2;
        self.bisect(log, explained, &keys[..mid], out)?;
        self.bisect(log, explained, &keys[mid..], out)
    }
}

/// Keys at most in one suspect read that [`Reader::confirm`] halves; a larger read is doubtful as a whole.
const CONFIRM_MAX: usize = 1_000_000;

/// Where [`Reader::gap`] probes.
enum Space {
    /// Keys (full, or a prefix of the key) in key order, probed by bisection of their positions.
    List(Vec<Vec<Value>>),
    /// Integers of one key column after a shared prefix: the open interval (a, b); `gallop`: origins probed
    /// at doubling distances first (true: upwards) where a side was open.
    Ints {
        prefix: Vec<Value>,
        a: i128,
        b: i128,
        gallop: Vec<(i128, bool)>,
    },
}

/// Candidate strings between two bounds: each bound's prefixes around where they part, each followed by one
/// character of a set (the bounds' own characters, digits, letters, common punctuation; for binary strings
/// also the high bytes). The caller has the server keep those strictly between and sort them.
fn candidate_strings(lo: Option<&[u8]>, hi: Option<&[u8]>, binary: bool) -> Vec<Vec<u8>> {
    let mut alphabet: Vec<u8> =
        b" -.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~".to_vec();
    if binary {
        alphabet.extend([0x00, 0x20, 0x40, 0x60, 0x80, 0xA0, 0xC0, 0xE0, 0xFF]);
    }
    for s in [lo, hi].into_iter().flatten() {
        // Characters of the bounds (whole UTF-8 sequences are kept by using only ASCII here, and the bounds'
        // own prefixes below carry their other characters).
        alphabet.extend(s.iter().filter(|c| c.is_ascii_graphic()));
    }
    alphabet.sort_unstable();
    alphabet.dedup();
    let common = match (lo, hi) {
        (Some(l), Some(h)) => l.iter().zip(h).take_while(|(a, b)| a == b).count(),
        _ => 0,
    };
    let mut out: Vec<Vec<u8>> = Vec::new();
    let char_start = |s: &[u8], k: usize| binary || k == s.len() || (s[k] & 0xC0) != 0x80;
    for s in [lo, hi].into_iter().flatten() {
        // Every prefix up to 32 bytes (short ones reach far from the bound, in either direction of an open
        // side), and those around where the bounds part.
        let near = common.saturating_sub(1)..=s.len().min(common + 6);
        for k in 0..=s.len() {
            if !(k <= 32 || near.contains(&k)) || !char_start(s, k) {
                continue;
            }
            for &c in &alphabet {
                let mut v = s[..k].to_vec();
                v.push(c);
                out.push(v);
            }
        }
    }
    if lo.is_none() && hi.is_none() {
        out.extend(alphabet.iter().map(|&c| vec![c]));
    }
    out.sort();
    out.dedup();
    out
}

/// Key order for sorting what was found: numbers as numbers, anything else by its bytes (the collation's order
/// may differ for strings; only the listing's order depends on it).
fn cmp_keys(a: &[Value], b: &[Value]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (as_int(x), as_int(y)) {
            (Some(p), Some(q)) => p.cmp(&q),
            _ => match (x, y) {
                (Value::Bytes(p), Value::Bytes(q)) => p.cmp(q),
                _ => std::cmp::Ordering::Equal,
            },
        };
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// Whether a DATE, DATETIME or TIMESTAMP value as the server prints it (`YYYY-MM-DD[ HH:MM:SS[.ffffff]]`) is
/// one the type can hold: month up to 12, day up to 31, hour up to 23, minute and second up to 59 (zero parts
/// are allowed, as the zero date is). NULL and anything not in that shape are left alone.
fn possible_datetime(v: &Value) -> bool {
    let Value::Bytes(b) = v else { return true };
    let Ok(t) = std::str::from_utf8(b) else {
        return true;
    };
    let num = |s: Option<&str>| s.and_then(|x| x.parse::<u32>().ok());
    let (date, time) = t.split_once(' ').unwrap_or((t, ""));
    let mut d = date.split('-');
    let (_, month, day) = (d.next(), num(d.next()), num(d.next()));
    if month.is_some_and(|m| m > 12) || day.is_some_and(|x| x > 31) {
        return false;
    }
    if time.is_empty() {
        return true;
    }
    let mut h = time.split(':');
    let (hour, minute) = (num(h.next()), num(h.next()));
    let second = num(h.next().map(|s| s.split('.').next().unwrap_or(s)));
    !(hour.is_some_and(|x| x > 23)
        || minute.is_some_and(|x| x > 59)
        || second.is_some_and(|x| x > 59))
}

/// The session is gone (the server crashed or went away), as opposed to a read error on a page.
fn is_gone(e: &mysql::Error) -> bool {
    match e {
        mysql::Error::MySqlError(me) => GONE.contains(&me.code),
        mysql::Error::IoError(_) | mysql::Error::DriverError(_) | mysql::Error::CodecError(_) => {
            true
        }
        _ => false,
    }
}

/// The corruption lines the error log got after byte `from`, without their timestamps.
fn corruption_since(path: &std::path::Path, from: u64) -> Vec<String> {
    let Ok(tail) = crate::server::errorlog::read_since(path, from) else {
        return Vec::new();
    };
    tail.lines
        .iter()
        .filter(|l| crate::server::errorlog::is_corruption(l))
        .map(|l| crate::server::errorlog::message_of(l).to_string())
        .collect()
}

/// The page a corruption line names: `Failed to read page 28 from file …` or `[page id: space=6, page
/// number=3]`.
fn page_of(line: &str) -> Option<u64> {
    let after = |pat: &str| -> Option<u64> {
        let at = line.find(pat)? + pat.len();
        let digits: String = line[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    after("read page ").or_else(|| after("page number="))
}

/// The lines of `lines` that no SQL error accounts for: a line naming a page that never failed a read with an
/// error, or, where no read failed with an error at all, any line.
fn unexplained(lines: &[String], explained: &std::collections::BTreeSet<u64>) -> Vec<String> {
    lines
        .iter()
        .filter(|l| match page_of(l) {
            Some(p) => !explained.contains(&p),
            None => explained.is_empty(),
        })
        .cloned()
        .collect()
}

/// A key as JSON values, column by column.
fn key_json(info: &TableInfo, key: &[Value]) -> Vec<serde_json::Value> {
    key.iter()
        .zip(&info.pk)
        .map(|(v, &p)| json_of(info.columns[p].kind, v))
        .collect()
}

fn key_of(pos: &[usize], row: &Row) -> Vec<Value> {
    pos.iter()
        .map(|&p| row.as_ref(p).cloned().unwrap_or(Value::NULL))
        .collect()
}

/// The key columns `pos` of `row` into `key`, reusing its allocations (a row's key is copied for the crash
/// window and the order check; the copy made for a row that left the window is the next row's).
fn key_into(key: &mut Vec<Value>, pos: &[usize], row: &Row) {
    key.truncate(pos.len());
    for (i, &p) in pos.iter().enumerate() {
        let v = row.as_ref(p).unwrap_or(&Value::NULL);
        match (key.get_mut(i), v) {
            (Some(Value::Bytes(d)), Value::Bytes(s)) => {
                d.clear();
                d.extend_from_slice(s);
            }
            (Some(d), _) => *d = v.clone(),
            (None, _) => key.push(v.clone()),
        }
    }
}

/// One row appended to the INSERT in `buf`; `spans` gets where each column's literal is in `buf` (for the
/// cross-check, which hashes the same literals).
fn write_row_parts(
    buf: &mut Vec<u8>,
    rows: &mut u64,
    hash: &mut u128,
    kinds: &[Kind],
    prefix: &[u8],
    row: &Row,
    spans: &mut Vec<(usize, usize)>,
) {
    if buf.is_empty() {
        buf.extend_from_slice(prefix);
    } else {
        buf.push(b',');
    }
    let start = buf.len();
    spans.clear();
    buf.push(b'(');
    for (i, k) in kinds.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        let at = buf.len();
        literal::push(buf, *k, row.as_ref(i).unwrap_or(&Value::NULL));
        spans.push((at, buf.len()));
    }
    buf.push(b')');
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
    let mut out = sh.out.lock().unwrap();
    let next = out
        .spare
        .try_recv()
        .unwrap_or_else(|_| Vec::with_capacity(sh.opts.chunk_bytes + (64 << 10)));
    let full = std::mem::replace(buf, next);
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
        Value::Bytes(b) => literal::parse_int(b),
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
    let mut info = TableInfo::read(&mut conn, tag, name)?;
    info.choose_secondary_key(&mut conn, tag);
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
        indexes: Vec::new(),
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
    let f = super::create_private(&path).with_context(|| format!("creating {}", path.display()))?;
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
    let cols = info.select_list();
    let estimate: u64 = conn
        .exec_first(
            format!(
                "SELECT {tag} TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"
            ),
            (&name.db, &name.table),
        )
        .ok()
        .flatten()
        .unwrap_or(0);
    let xs = xcheck::indexes(&info);
    let shared = Shared {
        info: &info,
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
        insert_prefix: format!("INSERT INTO {} ({cols}) VALUES ", quote_ident(&name.table))
            .into_bytes(),
        select_list: cols,
        log: connector.error_log(),
        doubts: Mutex::new(Vec::new()),
        group_lost: Mutex::new(Default::default()),
        suspects: Mutex::new(Vec::new()),
        explained: Mutex::new(Default::default()),
        int_key: !info.pk.is_empty() && info.pk.iter().all(|&p| info.is_integer(p)),
        repeats: info.key_source == super::KeySource::Groups,
        temporal: (0..info.columns.len())
            .filter(|&p| {
                matches!(
                    info.columns[p].data_type.as_str(),
                    "date" | "datetime" | "timestamp"
                )
            })
            .collect(),
        shape: xcheck::Shape::of(&info, estimate),
        written: Mutex::new(vec![Vec::new(); xs.len()]),
        xs,
    };
    let lines = Vec::new();
    let splits = if info.pk.is_empty() || info.key_source == super::KeySource::Groups {
        Vec::new()
    } else {
        split_points(&mut conn, &info, opts)
    };
    let result = if info.pk.is_empty() {
        plain_scan(&shared, &mut entry)
    } else if info.key_source == super::KeySource::Groups {
        walk_groups(&shared)
    } else {
        read_ranges(&shared, &splits)
    }
    .and_then(|()| {
        // Every reader is done: the suspect reads, one at a time.
        let mut r = Reader::new(&shared, 0)?;
        r.confirm()
    });
    entry.reconnects = shared.reconnects.load(Ordering::SeqCst);
    if !shared.log.as_ref().is_some_and(|l| l.is_file()) {
        entry.unchecked.push(
            "the server's error log was not readable here, so a column that came back truncated without an SQL error (a damaged BLOB page) would not be seen"
                .into(),
        );
    }
    if entry.reconnects > opts.max_reconnects {
        entry.note = Some(format!(
            "the server went away {} times while {name} was read, more than the {} innops allows a table: the key ranges not read by then are reported lost",
            entry.reconnects, opts.max_reconnects
        ));
    }
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
    let group_lost = std::mem::take(&mut *shared.group_lost.lock().unwrap());
    entry
        .doubts
        .extend(std::mem::take(&mut *shared.doubts.lock().unwrap()));
    if entry.reconnects > 0 || conn.ping().is_err() {
        // The table's first session is from before any crash: the readers reconnected, this one did not.
        conn = match connector.connect() {
            Ok(c) => c,
            Err(e) => connector.reconnect(&crate::error::describe(&*e))?,
        };
        prepare_session(&mut conn, tag)?;
    }
    if entry.note.is_none() {
        // Each secondary index read alone against the rows written, outside the lost ranges.
        let outside: Vec<String> = lost
            .iter()
            .map(|(lo, hi)| {
                let mut c = Vec::new();
                if let Some(b) = lo {
                    c.push(bound_sql(&info, b, true));
                }
                if let Some(b) = hi {
                    c.push(bound_sql(&info, b, false));
                }
                if c.is_empty() {
                    "FALSE".to_string()
                } else {
                    format!("NOT ({})", c.join(" AND "))
                }
            })
            .collect();
        let outside = (!outside.is_empty()).then(|| outside.join(" AND "));
        let written = std::mem::take(&mut *shared.written.lock().unwrap());
        for (x, w) in shared.xs.iter().zip(written) {
            match xcheck::compare(&mut conn, tag, &info, &shared.shape, x, w, outside.as_deref()) {
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
            before: hi.as_ref().filter(|b| !b.incl).map(to_json),
            to: hi.as_ref().filter(|b| b.incl).map(to_json),
            rows: lo
                .as_ref()
                .and_then(|b| group_lost.get(&format!("{:?}", b.key)))
                .copied(),
            ..Default::default()
        };
        let secondary = secondary_rows(&mut conn, &info, tag, lo, hi);
        let range = LostRange {
            listed: xcheck::listed(&secondary),
            ..range
        };
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
    read_parallel(ranges, &read)?;
    // A range whose start could not be reached: the B-tree descent to its cut goes through a damaged
    // non-leaf page, while the leaf chain from the range before still leads there. Read on from that range's
    // start, past the cut, writing only from the cut.
    let at_cut: Vec<Stretch> = {
        let mut lost = sh.lost.lock().unwrap();
        let (cut, rest): (Vec<Stretch>, Vec<Stretch>) = std::mem::take(&mut *lost)
            .into_iter()
            .partition(|(i, lo, _)| {
                *i > 0
                    && lo
                        .as_ref()
                        .is_some_and(|b| b.incl && bound(*i, true).as_ref() == Some(b))
            });
        *lost = rest;
        cut
    };
    for (i, lo, hi) in at_cut {
        let mut r = Reader::new(sh, i)?;
        let cut = lo.as_ref().and_then(|b| as_int(&b.key[0]));
        r.skip_below = cut;
        let sql = r.select(&bound(i - 1, true), &hi, false, None, false);
        let o = r.run(&sql, true, false)?;
        r.skip_below = None;
        match (&o.last, o.ok) {
            (Some(_), true) => {}
            (Some(last), false) => {
                let after = Some(B::after(r.key_of(last)));
                r.after_asc_error(after, hi)?;
            }
            // Nothing read from the cut on: the stretch stays as it was.
            (None, _) => sh.lost.lock().unwrap().push((i, lo, hi)),
        }
        r.flush()?;
    }
    Ok(())
}

/// Read the ranges in a session each, at once.
fn read_parallel(
    ranges: Vec<Stretch>,
    read: &(dyn Fn(Stretch) -> anyhow::Result<()> + Sync),
) -> anyhow::Result<()> {
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

/// What one probe at c said: rows found (and handled), nothing from c up to the stretch's end, or an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Said {
    Found,
    Empty,
    Failed,
}

/// Bisection over the candidates strictly between `a` and `b`: `probe(c)` probes candidate c (None once the
/// budget is spent). True as soon as a probe found rows. A failed probe leaves both halves to search; an empty
/// one (nothing from c up) leaves only what is below c. Every candidate is probed while the budget lasts, the
/// last one of a window too.
fn bisect(
    a: i128,
    b: i128,
    mut probe: impl FnMut(i128) -> anyhow::Result<Option<Said>>,
) -> anyhow::Result<bool> {
    let mut windows: VecDeque<(i128, i128)> = [(a, b)].into();
    while let Some((wa, wb)) = windows.pop_front() {
        if wb - wa < 2 {
            continue;
        }
        let c = wa + (wb - wa) / 2;
        match probe(c)? {
            None => break,
            Some(Said::Found) => return Ok(true),
            Some(Said::Empty) => {
                // Nothing from the probe up to hi: only below it is left.
                windows.retain(|w| w.0 < c);
                windows.iter_mut().for_each(|w| w.1 = w.1.min(c));
                windows.push_back((wa, c));
            }
            Some(Said::Failed) => {
                windows.push_back((wa, c));
                windows.push_back((c, wb));
            }
        }
    }
    Ok(false)
}

/// Lost stretches in key order of their ranges, those that meet at a range cut joined into one.
fn merge_lost(mut lost: Vec<Stretch>, splits: &[Value]) -> Vec<(Option<B>, Option<B>)> {
    let at_cut = |b: &Option<B>, cut: Option<&Value>| match (b, cut) {
        (Some(b), Some(c)) => b.key.len() == 1 && b.key[0] == *c,
        _ => false,
    };
    // Within a range: the one starting at the range's start first, the one ending at its end last.
    // Within a range the middle ones by their lower bound: they are found in probe order, not key order.
    let class = |(i, lo, hi): &Stretch| {
        let starts = i.checked_sub(1).is_some_and(|j| at_cut(lo, splits.get(j)));
        let ends = at_cut(hi, splits.get(*i));
        (
            *i,
            if lo.is_none() || starts {
                0
            } else if ends || hi.is_none() {
                2
            } else {
                1
            },
        )
    };
    lost.sort_by(|x, y| {
        class(x).cmp(&class(y)).then_with(|| match (&x.1, &y.1) {
            (Some(a), Some(b)) => cmp_keys(&a.key, &b.key),
            _ => std::cmp::Ordering::Equal,
        })
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
    for idx in &info.secondary {
        let (index, cols) = (&idx.name, &idx.cols);
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

/// A table walked by an index whose values repeat (no clustered key SQL can name, no unique index): rows in
/// index order, each group of one value together. A read that fails inside a group is followed by the group
/// alone, read again as far as it goes (its rows already written are read and not written again: the order
/// inside a group, the hidden row id's, is the same every time); what is left of the group is lost, counted by
/// the index itself, and the walk goes on after the group. Rows of such a group after its unreadable row
/// cannot be reached through SQL: nothing orders them but the hidden row id.
fn walk_groups(sh: &Shared) -> anyhow::Result<()> {
    let mut r = Reader::new(sh, 0)?;
    let mut lo: Option<B> = None;
    loop {
        r.last_group = None;
        let sql = r.select(&lo, &None, false, None, false);
        let o = r.run(&sql, true, false)?;
        if o.ok {
            break;
        }
        // The group the read failed in: the last one it returned rows of (how many of them is counted again
        // below), else the first group after lo, as the index alone lists it.
        let group = match &o.last {
            Some(row) => Some(r.key_of(row)),
            None => {
                let sql = r.select(&lo, &None, false, Some(1), true);
                r.run_keys(&sql)?.and_then(|k| k.into_iter().next())
            }
        };
        let Some(g) = group else {
            // No group after lo, yet the read failed: what is left cannot be listed.
            sh.lost.lock().unwrap().push((0, lo, None));
            break;
        };
        r.skip_first = r.rows_in_group_written(&g);
        let sql = format!("{} ORDER BY {}", r.point(&g), sh.key_list);
        let again = r.run(&sql, true, false)?;
        r.skip_first = 0;
        if !again.ok {
            let listed = r.group_size(&g)?;
            let read = again.n;
            if listed.is_none_or(|n| n > read) {
                if let Some(n) = listed {
                    sh.group_lost
                        .lock()
                        .unwrap()
                        .insert(format!("{:?}", g), n - read);
                }
                let at = Some(B {
                    key: g.clone(),
                    incl: true,
                });
                sh.lost.lock().unwrap().push((0, at.clone(), at));
            }
        }
        lo = Some(B::after(g));
    }
    r.flush()
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

    #[test]
    fn bisection_probes_every_candidate_while_the_budget_lasts() {
        // Every probe fails (damage everywhere): each candidate strictly between a and b is probed once.
        for (a, b) in [(-1, 1), (0, 2), (0, 3), (10, 20), (-1, 7)] {
            let mut seen = Vec::new();
            let found = bisect(a, b, |c| {
                seen.push(c);
                Ok(Some(Said::Failed))
            })
            .unwrap();
            assert!(!found);
            seen.sort();
            assert_eq!(seen, ((a + 1)..b).collect::<Vec<_>>(), "({a}, {b})");
        }
        // One candidate (a list of one key): probed, and found.
        assert!(bisect(-1, 1, |c| Ok(Some(if c == 0 {
            Said::Found
        } else {
            Said::Failed
        })))
        .unwrap());
        // A readable row only at the last candidate of a window.
        assert!(bisect(0, 9, |c| Ok(Some(if c == 8 {
            Said::Found
        } else {
            Said::Failed
        })))
        .unwrap());
        // Empty at c: nothing at or above c is probed again.
        let mut seen = Vec::new();
        bisect(0, 100, |c| {
            seen.push(c);
            Ok(Some(if c >= 50 { Said::Empty } else { Said::Failed }))
        })
        .unwrap();
        assert_eq!(seen.iter().filter(|&&c| c >= 50).count(), 1, "{seen:?}");
        assert_eq!(seen.iter().filter(|&&c| c < 50).count(), 49, "{seen:?}");
        // The budget ends the search.
        let mut n = 0;
        let found = bisect(0, 1000, |_| {
            n += 1;
            Ok(if n > 5 { None } else { Some(Said::Failed) })
        })
        .unwrap();
        assert!(!found);
        assert_eq!(n, 6);
    }

    fn key(v: i64) -> Vec<Value> {
        vec![Value::Bytes(v.to_string().into_bytes())]
    }

    #[test]
    fn candidate_strings_reach_far_from_an_open_side_and_near_where_the_bounds_part() {
        let c = candidate_strings(Some(b"Key-013329"), None, false);
        // Short prefixes reach past the bound's own neighbourhood: 'Key_' sorts after every 'Key-…'.
        assert!(c.contains(&b"Key_".to_vec()), "{}", c.len());
        assert!(c.contains(&b"L".to_vec()));
        // Every candidate extends a prefix of the bound by one character.
        assert!(c
            .iter()
            .all(|x| b"Key-013329".starts_with(&x[..x.len() - 1])));
        let both = candidate_strings(Some(b"key_000100"), Some(b"key_000300"), false);
        assert!(both.contains(&b"key_0002".to_vec()));
        // A multi-byte character is never cut in two.
        let utf8 = candidate_strings(Some("aé".as_bytes()), None, false);
        assert!(utf8.iter().all(|x| std::str::from_utf8(x).is_ok()));
        // Binary strings get high bytes too.
        assert!(candidate_strings(Some(b"a"), None, true).contains(&vec![0xFF]));
    }

    #[test]
    fn a_corruption_line_is_explained_only_by_a_page_an_sql_error_named() {
        let leaf = "InnoDB: Failed to read page 28 from file './db/t.ibd': Page read from tablespace is corrupted.";
        let blob = "InnoDB: Failed to read page 15 from file './db/t.ibd': Page read from tablespace is corrupted.";
        let skip = "InnoDB: Index corruption: rec offs 320 next offs 333[page id: space=6, page number=3], index `PRIMARY` of table `t`.`c`. We try to skip the record.";
        assert_eq!(page_of(leaf), Some(28));
        assert_eq!(page_of(skip), Some(3));
        assert_eq!(page_of("InnoDB: File './db/t.ibd' is corrupted"), None);
        let explained: std::collections::BTreeSet<u64> = [28].into();
        let lines = vec![leaf.to_string(), blob.to_string()];
        assert_eq!(unexplained(&lines, &explained), vec![blob.to_string()]);
        // A line naming no page is explained while some read failed with an error, never otherwise.
        let generic = vec!["InnoDB: File './db/t.ibd' is corrupted".to_string()];
        assert!(unexplained(&generic, &explained).is_empty());
        assert_eq!(unexplained(&generic, &Default::default()), generic);
    }

    #[test]
    fn a_time_past_midnight_or_a_thirteenth_month_is_impossible() {
        let v = |t: &str| Value::Bytes(t.as_bytes().to_vec());
        for ok in [
            "2024-02-29",
            "0000-00-00 00:00:00",
            "2024-12-31 23:59:59.999999",
            "2024-01-01 00:00:00",
        ] {
            assert!(possible_datetime(&v(ok)), "{ok}");
        }
        assert!(possible_datetime(&Value::NULL));
        for bad in [
            "2024-13-01",
            "2024-01-32",
            "2024-01-01 31:00:00",
            "2024-01-01 23:60:00",
            "2024-01-01 23:59:61.5",
        ] {
            assert!(!possible_datetime(&v(bad)), "{bad}");
        }
    }

    #[test]
    fn keys_sort_as_numbers_where_they_are_numbers() {
        use std::cmp::Ordering::*;
        assert_eq!(cmp_keys(&key(9), &key(10)), Less);
        assert_eq!(cmp_keys(&key(-5), &key(3)), Less);
        let s = |t: &str| vec![Value::Bytes(t.as_bytes().to_vec())];
        assert_eq!(cmp_keys(&s("b"), &s("a")), Greater);
        assert_eq!(cmp_keys(&key(4), &key(4)), Equal);
        // A prefix sorts before the key it starts.
        let long = vec![Value::Int(4), Value::Int(1)];
        assert_eq!(cmp_keys(&key(4), &long), Less);
    }

    #[test]
    fn lost_stretches_inside_a_range_are_listed_in_key_order() {
        let lost = vec![
            (0, Some(B::after(key(500))), Some(B::before(key(600)))),
            (0, Some(B::after(key(20))), Some(B::before(key(90)))),
            (0, Some(B::after(key(900))), None),
            (0, None, Some(B::before(key(5)))),
        ];
        let merged = merge_lost(lost, &[]);
        let lows: Vec<Option<Vec<Value>>> = merged
            .iter()
            .map(|(lo, _)| lo.as_ref().map(|b| b.key.clone()))
            .collect();
        assert_eq!(
            lows,
            vec![None, Some(key(20)), Some(key(500)), Some(key(900))]
        );
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
        // Stretches of neighbouring ranges with readable rows between them stay apart: one that does not reach
        // the cut, or one after the cut that does not start at it (rows from the cut on were read).
        let apart = vec![
            (0, Some(B::after(key(40))), Some(B::before(key(50)))),
            (1, Some(B::after(key(150))), Some(below(&cuts[1]))),
            (2, Some(B::after(key(230))), Some(B::before(key(240)))),
        ];
        assert_eq!(merge_lost(apart.clone(), &cuts).len(), 3);
        let one_side = vec![
            (0, Some(B::after(key(90))), Some(below(&cuts[0]))),
            (1, Some(B::after(key(130))), Some(B::before(key(140)))),
        ];
        assert_eq!(merge_lost(one_side, &cuts).len(), 2);
        let other_side = vec![
            (0, Some(B::after(key(40))), Some(B::before(key(50)))),
            (1, Some(from(&cuts[0])), Some(B::before(key(140)))),
        ];
        assert_eq!(merge_lost(other_side, &cuts).len(), 2);
        // A stretch that ends at a cut the next range read from is kept as it is, bounded by the cut.
        let lone = vec![(0, Some(B::after(key(90))), Some(below(&cuts[0])))];
        assert_eq!(
            merge_lost(lone, &cuts),
            vec![(Some(B::after(key(90))), Some(below(&cuts[0])))]
        );
    }
}
