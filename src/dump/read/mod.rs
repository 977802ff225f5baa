//! Reading one table: the ascending scan, and after an error the crawl, the descending scan, the probes and the
//! lost ranges (see the module documentation of `dump`). This file holds what every way of reading shares, so
//! that each sub-module is one way the read can go and speaks the same language: the table's shared state
//! ([`Shared`]), one reading session ([`Reader`], whose methods live with the read they serve), key bounds and
//! the key helpers, and the error classes that decide between reading on, reconnecting and giving up.

mod confirm;
mod files;
mod lost;
mod pages;
mod probe;
mod ranges;
mod scan;
mod table;
mod writer;

use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::Mutex;

use mysql::{Conn, Row, Value};

use super::literal::{self, Kind};
use super::manifest::Doubt;
use super::xcheck;
use super::{Connector, DumpOptions, TableInfo};
use crate::sql::quote_ident;

pub(crate) use files::{dump_table_from_files, list_from_files};
pub(crate) use table::dump_table;
pub(crate) use writer::push_tuple;
use writer::Out;

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
    written: Mutex<xcheck::Recorded>,
    /// The pass over the secondary indexes beside the reads has ended (or none runs).
    early_done: std::sync::atomic::AtomicBool,
    /// A read has noted where the server's error log ends (the test hook `EARLY_INSIDE` starts the pass then).
    read_noted: std::sync::atomic::AtomicBool,
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
    xbuf: xcheck::Recorded,
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
// Called per row from the scan (another module, maybe another codegen unit): inlined there as before the split.
#[inline]
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

/// The condition for one bound on the primary key, a full key or a prefix: `(a > 1 OR (a = 1 AND b >= 2))`,
/// expanded so the range optimizer reads only that part of the index.
/// The conditions that keep the key between `lo` and `hi` (none for an open side).
fn range_conds(info: &TableInfo, lo: &Option<B>, hi: &Option<B>) -> Vec<String> {
    let mut conds = Vec::new();
    if let Some(b) = lo {
        conds.push(bound_sql(info, b, true));
    }
    if let Some(b) = hi {
        conds.push(bound_sql(info, b, false));
    }
    conds
}

/// ` WHERE …` keeping the key between `lo` and `hi`, or nothing when both sides are open.
fn range_where(info: &TableInfo, lo: &Option<B>, hi: &Option<B>) -> String {
    let conds = range_conds(info, lo, hi);
    if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
    }
}

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

// Called per row from the scan (another module, maybe another codegen unit): inlined there as before the split.
#[inline]
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
