//! The secondary-index cross-check: evidence about the recovered rows that innops did not write itself.
//!
//! A readable secondary index is a second copy of some of each row's columns, written by InnoDB into other
//! pages than the clustered index. For every row the dump writes, the (index columns, key) pair it would have
//! in each secondary index is hashed as it streams (two 64-bit numbers per row and index, kept in memory);
//! after the table is read, each index is read on its own (`FORCE INDEX`, the index's columns and the key only,
//! so InnoDB answers from the index pages alone) outside the lost ranges, and the two are compared. A row whose
//! values disagree with its index entry, a row the index does not list (a garbage record that came back as a
//! row, or a key scrambled on its page), and an index entry no read returned outside every lost range (a row
//! lost without an error) each become a doubt naming the keys. A table of more than [`MAX_ROWS`] rows keeps
//! only counts and sums, and says the index disagrees without naming rows.
//!
//! What it cannot see: a damaged column no secondary index holds (a BLOB is not in an index; the error log
//! catches that case), and damage that changed a row and its index entries alike.

use std::collections::BTreeMap;

use mysql::prelude::Queryable;
use mysql::{Conn, Row, Value};

use super::literal::{self, Kind};
use super::manifest::{Compared, Doubt, DoubtKind, IndexEvidence};
use super::xsums;
use super::{KeySource, TableInfo};
use crate::sql::quote_ident;

/// Rows per table up to which every row's hashes are kept (16 bytes per row and index).
pub const MAX_ROWS: usize = 20_000_000;

/// Keys named in one doubt at most; the sentence gives the count.
const MAX_NAMED: usize = 1000;

/// Index rows sorted and looked up in `written` together (see [`compare`]).
const CHECK_BATCH: usize = 1 << 16;

/// One index to check: its columns, then the key's columns it does not hold itself (InnoDB appends them).
#[derive(Debug, Clone)]
pub(crate) struct XIndex {
    pub name: String,
    /// Positions in `TableInfo::columns`.
    pub pos: Vec<usize>,
    /// Where each key column is in `pos`.
    key_at: Vec<usize>,
    /// Whether each column of `pos` may hold NULL.
    pub nullable: Vec<bool>,
}

#[cfg(test)]
impl XIndex {
    /// An index on the columns at `pos` whose last column is the key.
    pub fn for_test(name: &str, pos: Vec<usize>) -> XIndex {
        XIndex {
            name: name.into(),
            key_at: vec![pos.len() - 1],
            nullable: vec![true; pos.len()],
            pos,
        }
    }
}

/// The indexes of `info` that hold whole column values and can be read alone (the key is the primary key or
/// the clustered UNIQUE key, which every secondary index entry holds).
pub(crate) fn indexes(info: &TableInfo) -> Vec<XIndex> {
    if !matches!(
        info.key_source,
        KeySource::Primary | KeySource::UniqueClustered
    ) {
        return Vec::new();
    }
    info.secondary
        .iter()
        .filter(|i| !i.prefix)
        .map(|i| {
            let mut pos = i.cols.clone();
            for p in &info.pk {
                if !pos.contains(p) {
                    pos.push(*p);
                }
            }
            let key_at = info
                .pk
                .iter()
                .map(|p| pos.iter().position(|x| x == p).expect("added above"))
                .collect();
            XIndex {
                name: i.name.clone(),
                nullable: pos.iter().map(|&p| info.columns[p].nullable).collect(),
                pos,
                key_at,
            }
        })
        .collect()
}

/// A key's identity: a single integer column is its own value (so it can be named again), any other key the
/// hash of its literals.
#[cfg(test)]
fn key_id(kinds: &[Kind], key: &[&Value], single_int: bool) -> u64 {
    let mut buf = Vec::new();
    key_id_of(kinds, key.len(), |i| key[i], single_int, &mut buf)
}

/// [`key_id`] of the `n` key values `val(0..n)`, with `buf` as scratch space.
fn key_id_of<'v>(
    kinds: &[Kind],
    n: usize,
    val: impl Fn(usize) -> &'v Value,
    single_int: bool,
    buf: &mut Vec<u8>,
) -> u64 {
    if single_int {
        if let Some(v) = int_of(val(0)) {
            return v as u64;
        }
    }
    buf.clear();
    for (i, k) in kinds.iter().enumerate().take(n) {
        literal::push(buf, *k, val(i));
        buf.push(0);
    }
    xxhash_rust::xxh3::xxh3_64(buf)
}

/// [`key_id`] from the key columns' literals as the dump wrote them (`lit(i)`: the literal of key column `i`):
/// the same number, without writing the literals again.
fn key_id_lits<'l>(
    n: usize,
    val: impl Fn(usize) -> &'l Value,
    lit: impl Fn(usize) -> &'l [u8],
    single_int: bool,
    buf: &mut Vec<u8>,
) -> u64 {
    if single_int {
        if let Some(v) = int_of(val(0)) {
            return v as u64;
        }
    }
    buf.clear();
    for i in 0..n {
        buf.extend_from_slice(lit(i));
        buf.push(0);
    }
    xxhash_rust::xxh3::xxh3_64(buf)
}

fn int_of(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::UInt(u) => i64::try_from(*u).ok(),
        Value::Bytes(b) => i64::try_from(literal::parse_int(b)?).ok(),
        _ => None,
    }
}

/// What [`record`] needs to know of the table, computed once.
pub(crate) struct Shape {
    kinds: Vec<Kind>,
    key_kinds: Vec<Kind>,
    single_int: bool,
    /// Only a count and a sum per index (a table estimated above [`MAX_ROWS`] rows): one entry, (rows, sum).
    pub counted: bool,
}

impl Shape {
    pub fn of(info: &TableInfo, estimated_rows: u64) -> Shape {
        Shape {
            kinds: info.columns.iter().map(|c| c.kind).collect(),
            key_kinds: info.pk.iter().map(|&p| info.columns[p].kind).collect(),
            single_int: info.pk.len() == 1 && info.is_integer(info.pk[0]),
            counted: estimated_rows > MAX_ROWS as u64,
        }
    }
}

/// Each index's count of entries and wrapping sum of entry hashes over every row added: what `--verify-load`
/// computes from the loaded rows, to compare with [`IndexEvidence`] (what the damaged server's index held).
pub(crate) struct Tally {
    xs: Vec<XIndex>,
    shape: Shape,
    acc: Vec<Vec<(u64, u64)>>,
}

impl Tally {
    /// The indexes of `info` named in `names` (others cost nothing).
    pub fn new(info: &TableInfo, names: &[&str]) -> Tally {
        let xs: Vec<XIndex> = indexes(info)
            .into_iter()
            .filter(|x| names.contains(&x.name.as_str()))
            .collect();
        let mut shape = Shape::of(info, 0);
        shape.counted = true;
        Tally {
            acc: vec![Vec::new(); xs.len()],
            xs,
            shape,
        }
    }

    /// One row, all columns in table order.
    pub fn add(&mut self, row: &Row) {
        record(&self.xs, &self.shape, row, &mut self.acc);
    }

    /// (entries, sum) of index `name`; None when the table has no such index it can check.
    pub fn get(&self, name: &str) -> Option<(u64, u64)> {
        let at = self.xs.iter().position(|x| x.name == name)?;
        Some(self.acc[at].first().copied().unwrap_or((0, 0)))
    }
}

/// How many entries each index listed in one lost range, from `secondary_rows`' answer (lost.jsonl's
/// `secondary`): an index that could not be read there is left out.
pub(crate) fn listed(secondary: &serde_json::Value) -> BTreeMap<String, u64> {
    secondary
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| {
            let name = i.get("index")?.as_str()?;
            let rows = i.get("rows")?.as_array()?;
            Some((name.to_string(), rows.len() as u64))
        })
        .collect()
}

/// The (key id, entry hash) of `row` (all columns, in table order) for each index, appended to `out`.
pub(crate) fn record(xs: &[XIndex], shape: &Shape, row: &Row, out: &mut [Vec<(u64, u64)>]) {
    let mut buf = Vec::new();
    let mut kbuf = Vec::new();
    for (x, acc) in xs.iter().zip(out.iter_mut()) {
        let val = |i: usize| row.as_ref(x.pos[i]).unwrap_or(&Value::NULL);
        let e = entry(x, shape, val, &mut buf, &mut kbuf);
        push_entry(shape, acc, e);
    }
}

/// [`record`] for a row whose literals the dump just wrote: `lits[spans[c].0..spans[c].1]` is the literal of
/// column `c` (table order), exactly what [`literal::push`] makes of it, so the hashes are [`record`]'s without
/// writing a literal twice.
pub(crate) fn record_lits(
    xs: &[XIndex],
    shape: &Shape,
    row: &Row,
    lits: &[u8],
    spans: &[(usize, usize)],
    out: &mut Recorded,
    scratch: &mut Scratch,
) {
    let Scratch { buf, kbuf } = scratch;
    xsums::add(xs, row, &mut out.sums, buf);
    let lit = |c: usize| &lits[spans[c].0..spans[c].1];
    for (x, acc) in xs.iter().zip(out.entries.iter_mut()) {
        buf.clear();
        for &p in &x.pos {
            buf.extend_from_slice(lit(p));
            buf.push(0);
        }
        let col = |i: usize| x.pos[x.key_at[i]];
        let k = key_id_lits(
            x.key_at.len(),
            |i| row.as_ref(col(i)).unwrap_or(&Value::NULL),
            |i| lit(col(i)),
            shape.single_int,
            kbuf,
        );
        push_entry(shape, acc, (k, xxhash_rust::xxh3::xxh3_64(buf)));
    }
}

/// Buffers [`record_lits`] reuses from row to row.
#[derive(Default)]
pub(crate) struct Scratch {
    buf: Vec<u8>,
    kbuf: Vec<u8>,
}

fn push_entry(shape: &Shape, acc: &mut Vec<(u64, u64)>, e: (u64, u64)) {
    if shape.counted {
        match acc.first_mut() {
            Some(t) => *t = (t.0 + 1, t.1.wrapping_add(e.1)),
            None => acc.push((1, e.1)),
        }
    } else {
        acc.push(e);
    }
}

/// What a reader records of the rows it writes for the cross-check: per index, each row's (key id, entry hash)
/// (or one count and sum, [`Shape::counted`]) and the fast path's [`xsums::Sums`].
#[derive(Default)]
pub(crate) struct Recorded {
    pub entries: Vec<Vec<(u64, u64)>>,
    pub sums: Vec<xsums::Sums>,
}

impl Recorded {
    pub fn new(indexes: usize) -> Recorded {
        Recorded {
            entries: vec![Vec::new(); indexes],
            sums: vec![xsums::Sums::default(); indexes],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.iter().all(|e| e.is_empty())
            && self.sums.iter().all(|s| *s == xsums::Sums::default())
    }

    /// [`record`] and the sums of `row`, written by a reader that has no literals at hand.
    pub fn add(&mut self, xs: &[XIndex], shape: &Shape, row: &Row) {
        record(xs, shape, row, &mut self.entries);
        xsums::add(xs, row, &mut self.sums, &mut Vec::new());
    }
}

/// Merge one reader's records into the table's.
pub(crate) fn merge(shape: &Shape, into: &mut Recorded, from: &mut Recorded) {
    xsums::merge(&mut into.sums, &mut from.sums);
    for (a, b) in into.entries.iter_mut().zip(from.entries.iter_mut()) {
        if shape.counted {
            for (n, h) in b.drain(..) {
                match a.first_mut() {
                    Some(t) => *t = (t.0 + n, t.1.wrapping_add(h)),
                    None => a.push((n, h)),
                }
            }
        } else {
            a.append(b);
        }
    }
}

/// The (key id, entry hash) of one index entry: `val(i)` is the value of `x.pos[i]`.
fn entry<'v>(
    x: &XIndex,
    shape: &Shape,
    val: impl Fn(usize) -> &'v Value,
    buf: &mut Vec<u8>,
    kbuf: &mut Vec<u8>,
) -> (u64, u64) {
    buf.clear();
    for (i, &p) in x.pos.iter().enumerate() {
        literal::push(buf, shape.kinds[p], val(i));
        buf.push(0);
    }
    (
        key_id_of(
            &shape.key_kinds,
            x.key_at.len(),
            |i| val(x.key_at[i]),
            shape.single_int,
            kbuf,
        ),
        xxhash_rust::xxh3::xxh3_64(buf),
    )
}

/// Compare what the dump wrote (`written`, per row) with index `x` read alone outside the lost ranges
/// (`outside_lost`: a condition on the key, or none). None when the index cannot be read whole (it is then no
/// evidence either way); else the doubts (none when they agree), and what the index held outside the lost
/// ranges for `--verify-load` to compare the loaded rows with.
pub(crate) fn compare(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    shape: &Shape,
    x: &XIndex,
    mut written: Vec<(u64, u64)>,
    outside_lost: Option<&str>,
) -> Option<(Vec<Doubt>, IndexEvidence)> {
    let list = x
        .pos
        .iter()
        .map(|&p| quote_ident(&info.columns[p].name))
        .collect::<Vec<_>>()
        .join(", ");
    let sql = format!(
        "SELECT {tag} {list} FROM {} FORCE INDEX ({}){}",
        info.name.qualified(),
        quote_ident(&x.name),
        outside_lost
            .map(|w| format!(" WHERE {w}"))
            .unwrap_or_default()
    );
    if shape.single_int {
        // Each reader's entries are in key order already (a single integer key is its own id): a stable sort
        // finds those runs and merges them instead of sorting from scratch.
        written.sort();
    } else {
        written.sort_unstable();
    }
    let mut m = Matching {
        x,
        shape,
        seen: vec![false; written.len()],
        written: &written,
        differ: Vec::new(),
        missing: Vec::new(),
        differ_n: 0,
        missing_n: 0,
        odd: Vec::new(),
        index_rows: 0,
        index_sum: 0,
    };
    m.read(conn, sql)?;
    let doubts = if shape.counted {
        m.counted_doubts()
    } else {
        m.doubts()
    };
    let evidence = IndexEvidence {
        index: x.name.clone(),
        entries: m.index_rows,
        sum: format!("{:016x}", m.index_sum),
        doubted: !doubts.is_empty(),
        compared: Compared::RowByRow,
    };
    Some((doubts, evidence))
}

/// The evidence of index `x` once the server's sums proved it agrees with the rows written (`written`): its
/// entries are theirs.
pub(crate) fn agreed(shape: &Shape, x: &XIndex, written: &[(u64, u64)]) -> IndexEvidence {
    let (entries, sum) = if shape.counted {
        written.first().copied().unwrap_or((0, 0))
    } else {
        (
            written.len() as u64,
            written.iter().fold(0u64, |a, e| a.wrapping_add(e.1)),
        )
    };
    IndexEvidence {
        index: x.name.clone(),
        entries,
        sum: format!("{sum:016x}"),
        doubted: false,
        compared: Compared::ServerSums,
    }
}

/// One index read against the rows written: which written rows it listed (`seen`), the keys it holds other
/// values for (`differ`) or that no read returned (`missing`), named up to [`MAX_NAMED`], and its count and sum.
struct Matching<'w> {
    x: &'w XIndex,
    shape: &'w Shape,
    /// The rows written, sorted by key id.
    written: &'w [(u64, u64)],
    seen: Vec<bool>,
    differ: Vec<Vec<Value>>,
    missing: Vec<Vec<Value>>,
    differ_n: usize,
    missing_n: usize,
    /// A batch's rows that differ (true) or are missing, by their place in the batch (kept across batches).
    odd: Vec<(u32, bool)>,
    /// Counts and sums only (a table too large to keep per-row hashes).
    index_rows: u64,
    index_sum: u64,
}

impl Matching<'_> {
    /// Read the index (`sql`), every entry counted and summed, and, unless the table is counted only, matched
    /// against the rows written; None when it cannot be read to its end.
    fn read(&mut self, conn: &mut Conn, sql: String) -> Option<()> {
        let (mut buf, mut kbuf) = (Vec::new(), Vec::new());
        // The index arrives in its own order, the keys scattered: looking each up in `written` alone would be a
        // cache miss per step of a binary search. A batch of index rows is sorted by key id and walked along
        // `written` instead, and what differs is named in the order the index returned it, as one lookup per row.
        let mut rows: Vec<Row> = Vec::new();
        let mut ids: Vec<(u64, u64, u32)> = Vec::new();
        for r in conn.query_iter(sql).ok()? {
            let r: Row = r.ok()?;
            let (k, h) = entry(
                self.x,
                self.shape,
                |i| r.as_ref(i).unwrap_or(&Value::NULL),
                &mut buf,
                &mut kbuf,
            );
            self.index_rows += 1;
            self.index_sum = self.index_sum.wrapping_add(h);
            if self.shape.counted {
                continue;
            }
            ids.push((k, h, rows.len() as u32));
            rows.push(r);
            if rows.len() == CHECK_BATCH {
                self.check(&mut rows, &mut ids);
            }
        }
        self.check(&mut rows, &mut ids);
        Some(())
    }

    /// One batch of index rows (`ids`: key id, entry hash, place in `rows`) walked along `written`.
    fn check(&mut self, rows: &mut Vec<Row>, ids: &mut Vec<(u64, u64, u32)>) {
        ids.sort_unstable_by_key(|e| e.0);
        self.odd.clear();
        let mut from = 0;
        for &(k, h, i) in ids.iter() {
            // Keys are unique: the first entry with this id is the row's (a hash collision of two keys only
            // makes a doubt, never hides one).
            let at = first_at_least(self.written, from, k);
            from = at;
            match self.written.get(at) {
                Some(&(wk, wh)) if wk == k => {
                    self.seen[at] = true;
                    if wh != h {
                        self.odd.push((i, true));
                    }
                }
                _ => self.odd.push((i, false)),
            }
        }
        self.odd.sort_unstable();
        for &(i, differs) in &self.odd {
            let r = &rows[i as usize];
            let key = || {
                self.x
                    .key_at
                    .iter()
                    .map(|&j| r.as_ref(j).unwrap_or(&Value::NULL).clone())
                    .collect()
            };
            let (n, named) = if differs {
                (&mut self.differ_n, &mut self.differ)
            } else {
                (&mut self.missing_n, &mut self.missing)
            };
            *n += 1;
            if named.len() < MAX_NAMED {
                named.push(key());
            }
        }
        rows.clear();
        ids.clear();
    }

    /// A table too large to name rows: the index's count and sum against the file's.
    fn counted_doubts(&self) -> Vec<Doubt> {
        let name = quote_ident(&self.x.name);
        let (index_rows, index_sum) = (self.index_rows, self.index_sum);
        let (rows, sum) = self.written.first().copied().unwrap_or((0, 0));
        let mut doubts = Vec::new();
        if index_rows != rows || index_sum != sum {
            doubts.push(Doubt {
                kind: DoubtKind::SecondaryIndex,
                why: format!(
                    "index {name} lists {index_rows} entries outside the lost ranges and the file holds {rows} rows, or their values differ: the table is too large to name the rows"
                ),
                range: None,
                keys: Vec::new(),
            });
        }
        doubts
    }

    /// Rows the index holds other values for, keys it lists that no read returned, and rows written that it
    /// does not list.
    fn doubts(&self) -> Vec<Doubt> {
        let name = quote_ident(&self.x.name);
        let (differ_n, missing_n) = (self.differ_n, self.missing_n);
        let shape = self.shape;
        let mut doubts = Vec::new();
        let key_json = |k: &Vec<Value>| -> Vec<serde_json::Value> {
            k.iter()
                .zip(&shape.key_kinds)
                .map(|(v, kind)| super::read::json_of(*kind, v))
                .collect()
        };
        if differ_n > 0 {
            doubts.push(Doubt {
                kind: DoubtKind::SecondaryIndex,
                why: format!(
                    "index {name} holds other values than the recovered row for {differ_n} row(s): the row or its index entry is damaged"
                ),
                range: None,
                keys: self.differ.iter().map(key_json).collect(),
            });
        }
        if missing_n > 0 {
            doubts.push(Doubt {
                kind: DoubtKind::SecondaryIndex,
                why: format!(
                    "index {name} lists {missing_n} key(s) outside every lost range that no read returned: those rows are missing from the file without an error, or the index entries naming them are damaged"
                ),
                range: None,
                keys: self.missing.iter().map(key_json).collect(),
            });
        }
        let extra: Vec<u64> = self
            .written
            .iter()
            .zip(&self.seen)
            .filter(|(_, s)| !**s)
            .map(|(e, _)| e.0)
            .collect();
        if !extra.is_empty() {
            doubts.push(Doubt {
                kind: DoubtKind::SecondaryIndex,
                why: format!(
                    "{} recovered row(s) have a key index {name} does not list: a damaged page may have returned them{}",
                    extra.len(),
                    if shape.single_int { "" } else { " (the key is not a single integer, so the rows are not named)" }
                ),
                range: None,
                keys: if shape.single_int {
                    extra
                        .iter()
                        .take(MAX_NAMED)
                        .map(|&k| vec![serde_json::json!(k as i64)])
                        .collect()
                } else {
                    Vec::new()
                },
            });
        }
        doubts
    }
}

/// The first position at or after `from` whose key id is at least `k`, in `written` sorted by key id, where
/// every entry before `from` is below `k`: a gallop from `from`, then a binary search.
fn first_at_least(written: &[(u64, u64)], from: usize, k: u64) -> usize {
    let mut step = 1;
    let mut lo = from;
    while lo + step <= written.len() && written[lo + step - 1].0 < k {
        lo += step;
        step *= 2;
    }
    let hi = (lo + step).min(written.len());
    lo + written[lo..hi].partition_point(|e| e.0 < k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_integer_key_is_its_own_identity_and_other_keys_hash() {
        let one = Value::Bytes(b"2000000000".to_vec());
        assert_eq!(key_id(&[Kind::Number], &[&one], true), 2_000_000_000);
        let s = Value::Bytes(b"abc".to_vec());
        let a = key_id(&[Kind::Text], &[&s], false);
        let b = key_id(&[Kind::Text], &[&Value::Bytes(b"abd".to_vec())], false);
        assert_ne!(a, b);
        // Two columns are not one column with their bytes run together.
        let ab = key_id(
            &[Kind::Text, Kind::Text],
            &[&Value::Bytes(b"a".to_vec()), &Value::Bytes(b"bc".to_vec())],
            false,
        );
        let abc = key_id(
            &[Kind::Text, Kind::Text],
            &[&Value::Bytes(b"ab".to_vec()), &Value::Bytes(b"c".to_vec())],
            false,
        );
        assert_ne!(ab, abc);
    }

    #[test]
    fn the_gallop_finds_what_a_binary_search_finds() {
        let written: Vec<(u64, u64)> = [1u64, 3, 3, 3, 7, 8, 20, 21, 22, 40]
            .iter()
            .map(|&k| (k, 0))
            .collect();
        for k in 0..45 {
            let want = written.partition_point(|e| e.0 < k);
            let mut from = 0;
            while from <= want {
                assert_eq!(first_at_least(&written, from, k), want, "k {k} from {from}");
                from += 1;
            }
        }
        assert_eq!(first_at_least(&[], 0, 5), 0);
    }
}
