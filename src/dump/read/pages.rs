//! `--pages`: after the SQL reads, the rows inside the lost ranges read from the copy's data file itself
//! (issue 30). The clustered index's leaf pages are found by page type, level and index id, not through the
//! tree (`pages::page::leaf_chain`); each is read for its records' keys (`pages::leaf_keys`), and parsed whole
//! (`pages::parse_leaf`) when a key lies inside a lost range or the page is not clean; a record becomes a row
//! of the dump only when the parser proves it and its key lies inside a lost range (the rows SQL returned are
//! never written twice). The lost ranges are then narrowed by what was read, and only by that: a stretch
//! between two rows read is dropped only when no key can lie in it (consecutive integers) or the two records are
//! neighbours on the chain of pages whose checksums pass and whose record lists are whole. A record inside a
//! lost range that is not proven stays lost, with its key when the key's bytes validate and the reason.
//!
//! Keys are compared as integers when the clustered key is all integers. Any other clustered key (text, a
//! date, a composite) is never compared by innops: each distinct key stands for its rank on the leaf chain,
//! which InnoDB keeps in the index's own order, collation included ([`Names`]), and a lost range's bounds (keys
//! SQL read) are placed by the ranks of their own records on the chain. Anything else is refused in one
//! sentence and the table keeps the SQL result.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use mysql::prelude::Queryable;
use mysql::{Conn, Value as Sent};

use super::writer::{flush_parts, write_row_parts};
use super::{as_int, xcheck, Shared, B};
use crate::dump::manifest::{Doubt, DoubtKind, KeyRange, PageRows, PagesRead, Unproven};
use crate::dump::page_def::{page_def, PagedTable};
use crate::dump::{KeySource, PageOptions};
use crate::pages::def::ColType;
use crate::pages::frm::Frm;
use crate::pages::page::{clustered_index_id, index_pages_compact, instant_root, leaf_chain, PAGE};
use crate::pages::space::Space;
use crate::pages::value::float_text;
use crate::pages::{leaf_keys, parse_leaf, starts_with_metadata, InMemory, Outcome, Value};

/// A key as the pass compares it: the integers, column by column, or (a key that is not all integers) the
/// rank of the key's text on the leaf chain, one number ([`Names`]).
type Key = Vec<i128>;

/// What the pass's keys stand for. An all-integer key is its own numbers. Any other key becomes one number, the
/// order in which its distinct text first appears on the leaf chain: InnoDB keeps the chain in the index's
/// order, so the ranks order the keys as the server does (collation included) without innops comparing two
/// strings; two records with the same text get the same rank, so duplicates are still found. A lost range's
/// bound is a key SQL read, so its record is on the chain and has a rank ([`Names::bound`]; one that has none
/// refuses the table). Ranks are consecutive without proving that no key lies between them, so the pass never
/// narrows a range by them (`cut`'s `single` is false).
#[derive(Default)]
pub(super) struct Names {
    ranked: Option<Ranked>,
}

struct Ranked {
    types: Vec<ColType>,
    kinds: Vec<crate::dump::literal::Kind>,
    rank: HashMap<Vec<Vec<u8>>, i128>,
    texts: Vec<Vec<Vec<u8>>>,
}

impl Names {
    /// Ranked keys of columns of these types (to print each value as the server does) and kinds (to write
    /// it to JSON as the SQL reads do).
    fn ranked(types: Vec<ColType>, kinds: Vec<crate::dump::literal::Kind>) -> Names {
        Names {
            ranked: Some(Ranked {
                types,
                kinds,
                rank: HashMap::new(),
                texts: Vec::new(),
            }),
        }
    }

    /// A record's key from its key columns' values; `None` when a value cannot be a key.
    fn key(&mut self, vals: &[Value]) -> Option<Key> {
        let Some(r) = &mut self.ranked else {
            return key_of(vals);
        };
        let text: Vec<Vec<u8>> = vals
            .iter()
            .zip(&r.types)
            .map(|(v, ty)| match sent(v, ty) {
                Sent::Bytes(b) if !matches!(v, Value::Null) => Some(b),
                _ => None,
            })
            .collect::<Option<_>>()?;
        // Most keys are met more than once (the ranking walk, the key walk, the whole parse): look up before
        // storing a copy.
        if let Some(&rank) = r.rank.get(&text) {
            return Some(vec![rank]);
        }
        let rank = r.texts.len() as i128;
        r.rank.insert(text.clone(), rank);
        r.texts.push(text);
        Some(vec![rank])
    }

    /// The key as the server's text, column by column (a lost range's bound).
    fn values(&self, k: &Key) -> Vec<Sent> {
        match self.text(k) {
            Some(t) => t.iter().map(|b| Sent::Bytes(b.clone())).collect(),
            None => key_values(k),
        }
    }

    /// The key as JSON (lost.jsonl, doubts), as the SQL reads write it.
    pub(super) fn json(&self, k: &Key) -> Vec<serde_json::Value> {
        match (&self.ranked, self.text(k)) {
            (Some(r), Some(t)) => t
                .iter()
                .zip(&r.kinds)
                .map(|(b, &kind)| super::json_of(kind, &Sent::Bytes(b.clone())))
                .collect(),
            _ => k.iter().map(|&v| json_int(v)).collect(),
        }
    }

    /// A bound's key as the pass compares it; `None` for a ranked key whose text no record of the chain holds
    /// (a prefix of a key, or a key whose record is not on the chain).
    fn bound(&self, b: &B) -> Option<Key> {
        let Some(r) = &self.ranked else {
            return Some(ints(b));
        };
        let text: Option<Vec<Vec<u8>>> = b
            .key
            .iter()
            .map(|v| match v {
                Sent::Bytes(t) => Some(t.clone()),
                _ => None,
            })
            .collect();
        text.and_then(|t| r.rank.get(&t).copied()).map(|n| vec![n])
    }

    fn is_int(&self) -> bool {
        self.ranked.is_none()
    }

    fn text(&self, k: &Key) -> Option<&Vec<Vec<u8>>> {
        let r = self.ranked.as_ref()?;
        r.texts.get(usize::try_from(*k.first()?).ok()?)
    }
}

/// A lost range after the page pass: its bounds, and the unproven records found inside it.
pub(super) struct Piece {
    pub lo: Option<B>,
    pub hi: Option<B>,
    pub records: Vec<Unproven>,
}

/// What the page pass did to one table.
pub(super) struct Pass {
    pub read: PagesRead,
    /// The lost ranges that remain.
    pub lost: Vec<Piece>,
    /// Keys of the rows written from pages whose checksum fails.
    pub unverified: Named,
    /// Keys of rows written by a transaction that may not have committed, and those transactions' ids.
    pub uncommitted: Named,
    /// What the keys above stand for.
    pub names: Names,
}

/// The keys of the rows a doubt names, in bounded memory (a crash in the middle of a large transaction can
/// leave millions): how many, the lowest and the highest, the first [`Named::KEPT`] in the order written, and
/// the distinct transaction ids that wrote them (the first [`Named::KEPT`]).
#[derive(Default)]
pub(super) struct Named {
    count: u64,
    low: Option<Key>,
    high: Option<Key>,
    first: Vec<Key>,
    trx: BTreeSet<u64>,
    /// More transaction ids than `trx` holds were met.
    more_trx: bool,
}

impl Named {
    const KEPT: usize = 1000;

    fn add(&mut self, k: &Key, trx: Option<u64>) {
        self.count += 1;
        if self.low.as_ref().is_none_or(|l| k < l) {
            self.low = Some(k.clone());
        }
        if self.high.as_ref().is_none_or(|h| k > h) {
            self.high = Some(k.clone());
        }
        if self.first.len() < Self::KEPT {
            self.first.push(k.clone());
        }
        if let Some(t) = trx {
            if self.trx.len() < Self::KEPT || self.trx.contains(&t) {
                self.trx.insert(t);
            } else {
                self.more_trx = true;
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// One record of the leaf chain, in key order. Only the records the pass needs are kept ([`chain_records`]).
struct Rec {
    /// Its place among all the chain's records, kept or not.
    seq: usize,
    /// The place of the record it follows: the one before it on the chain, or the first of a stretch of rows
    /// written whose inner records were not kept ([`whole_pages`]). Nothing lies between the two that was
    /// not read.
    back: Option<usize>,
    page: u32,
    /// Its page's checksum passes.
    checksum_ok: bool,
    /// What the parser found wrong with its page as a whole (a broken record list, a count that differs).
    problems: Vec<String>,
    /// Nothing can lie between it and the record before it in the chain: the same page or the next linked one,
    /// both with passing checksums and whole record lists.
    joined: bool,
    /// It is the first record of the level's first page (no key lies below it), or the last of its last page
    /// (none above), on a page with a passing checksum and a whole record list.
    edge: (bool, bool),
    key: Option<Key>,
    /// Its row, proven and not yet written (written rows are not kept).
    row: Option<crate::pages::Row>,
    reason: Option<String>,
    /// Its row was written.
    written: bool,
}

/// A bound while the pieces are cut: the original range's, or a record's key.
#[derive(Clone)]
enum At {
    Open,
    Bound(B),
    Point(Key),
}

/// Where the table's definition comes from: the server running on the copy (its dictionary; its dirty pages
/// are written to the files first), or the table's `.frm` when no server starts on the copy.
pub(super) enum Def<'c> {
    Server(&'c mut Conn),
    Frm(&'c Frm),
}

impl Def<'_> {
    /// The session to the server, when there is one.
    pub(super) fn conn(&mut self) -> Option<&mut Conn> {
        match self {
            Def::Server(c) => Some(c),
            Def::Frm(_) => None,
        }
    }
}

/// What is said of a file read with no server on the copy: InnoDB never applied its redo log to it.
const NO_RECOVERY: &str = "no server started on the copy, so InnoDB's crash recovery never ran on this file: its pages are as they were last written before the crash, without the changes only the redo log held";

/// Read the rows inside `lost` from the copy's data file and write them; `Err` is the one sentence saying
/// why the table's pages are not read (the table keeps the SQL result).
pub(super) fn read_pages(
    sh: &Shared,
    def: &mut Def,
    lost: &[(Option<B>, Option<B>)],
    po: &PageOptions,
) -> Result<Pass, String> {
    let start = std::time::Instant::now();
    let ranked = ranked_keys(sh)?;
    // Ok: the server's definition; Err: the .frm it is read from once the data file is read.
    let (asked, first_note) = match def {
        Def::Server(conn) => {
            let pt = page_def(conn, &sh.opts.tag, &sh.info.name)
                .map_err(|e| crate::error::display_of(&e))?;
            (Ok(pt), flushed(conn, &sh.opts.tag)?)
        }
        Def::Frm(frm) => (Err(*frm), Some(NO_RECOVERY.to_string())),
    };
    let path = ibd_path(po, &sh.info.name)?;
    let mapped = map_file(&path)?;
    let data: &[u8] = &mapped;
    let (space, inferred) = match Space::read(
        data.get(..PAGE)
            .ok_or("the file is shorter than one page")?,
    ) {
        Ok(space) => (space, None),
        // A damaged page 0 (the server answers ERROR 1877 for the table): the other pages tell the format.
        Err(why) => Space::infer(data, PAGE)
            .map(|(space, note)| (space, Some(note)))
            .map_err(|also| format!("page 0 of {}: {why}; {also}", path.display()))?,
    };
    if let Some(why) = space.refusal(PAGE) {
        return Err(why);
    }
    let mut notes: Vec<String> = first_note.into_iter().chain(inferred).collect();
    let pt = match asked {
        Ok(pt) => pt,
        Err(frm) => frm_def(frm, &space, data, &mut notes)?,
    };
    let map = checked_def(sh, &pt)?;
    let mut names = if ranked {
        let info = sh.info;
        Names::ranked(
            pt.def
                .key
                .iter()
                .map(|&k| pt.def.columns[k].ty.clone())
                .collect(),
            info.pk.iter().map(|&p| info.columns[p].kind).collect(),
        )
    } else {
        Names::default()
    };
    let (chain, off) = instant_checked(&pt, data)?;
    let mut pass = Pass {
        read: PagesRead::default(),
        lost: Vec::new(),
        unverified: Named::default(),
        uncommitted: Named::default(),
        names: Names::default(),
    };
    pass.read.notes = notes;
    if !off.is_empty() {
        pass.read.notes.push(format!(
            "{} page(s) carry the index's id but are not on its leaf chain (stale, or behind a broken link), and were not read: {}",
            off.len(),
            list(&off)
        ));
    }
    if ranked && lost.iter().any(|(lo, hi)| lo.is_some() || hi.is_some()) {
        rank_chain((&pt, &space, data), &chain, &mut names);
    }
    let ranges = Ranges::with(lost, &names)?;
    let mut sink = Sink::new(sh, po, (&pt, &map));
    let recs = chain_records(
        (&pt, &space, data),
        &chain,
        (&ranges, &mut names),
        &mut pass.read,
        &mut |rec, row| sink.write(rec, row),
    )?;
    let points = sink.finish(&recs, &ranges, &mut pass)?;
    let single = sh.info.pk.len() == 1 && names.is_int();
    pass.lost = cut(&ranges, &points, &recs, (single, &names));
    let bounds = ranges_of(&pass.lost, &names);
    attach_keyless(&mut pass.lost, &recs, &bounds);
    pass.names = names;
    pass.read.seconds = start.elapsed().as_secs_f64();
    Ok(pass)
}

/// The clustered index's leaf chain ([`leaf_chain`]), unless an instant ALTER TABLE changed the table: its
/// root's page type says so, or (that word overwritten) the first leaf begins with the metadata record the
/// change leaves. Records written before such a change keep the old layout and can decode as wrong rows of the
/// new one, so the whole table is refused, not a page.
fn instant_checked(pt: &PagedTable, data: &[u8]) -> Result<crate::pages::page::Chain, String> {
    const WHY: &str =
        "its records may be in more than one layout, which the page parser does not read yet";
    if let Some(n) = instant_root(data, pt.index_id) {
        return Err(format!(
            "an instant ALTER TABLE (ADD, DROP or reorder of columns) changed the table, as its root page {n} says: {WHY}"
        ));
    }
    let (chain, off) = leaf_chain(data, pt.index_id)?;
    if let Some(&(n, _)) = chain.first() {
        let p = &data[n as usize * PAGE..(n as usize + 1) * PAGE];
        if starts_with_metadata(&pt.def, p) {
            return Err(format!(
                "its first leaf page {n} begins with the metadata record an instant ALTER TABLE (ADD, DROP or reorder of columns) leaves: {WHY}"
            ));
        }
    }
    Ok((chain, off))
}

/// Whether the table's keys are ranked on the leaf chain ([`Names`]) rather than compared as integers; `Err`
/// for a table without a clustered key of its own, which this slice does not read.
fn ranked_keys(sh: &Shared) -> Result<bool, String> {
    if !matches!(
        sh.info.key_source,
        KeySource::Primary | KeySource::UniqueClustered
    ) {
        return Err(
            "only tables clustered by a primary key or a unique key of their own are read from pages yet"
                .into(),
        );
    }
    Ok(!sh.int_key)
}

/// Every key of the chain ranked in chain order ([`Names::key`]), read as the pass reads keys
/// ([`leaf_keys`]), so that the lost ranges' bounds can be placed before the pass decides which pages it parses
/// whole. Pages it cannot read give no key here, as in the pass.
fn rank_chain(
    (pt, space, data): (&PagedTable, &Space, &[u8]),
    chain: &[(u32, bool)],
    names: &mut Names,
) {
    for &(n, _) in chain {
        let p = &data[n as usize * PAGE..(n as usize + 1) * PAGE];
        if let Ok(keys) = leaf_keys(&pt.def, space, p) {
            for k in keys.keys.iter().filter_map(|k| k.as_deref().ok()) {
                names.key(k);
            }
        }
    }
}

/// The definition read from the `.frm`, with what only the data file knows: the clustered index's id (the
/// smallest among its index pages whose checksums pass) and, when the `.frm` leaves it to the server's
/// default, the row format (said in `notes` when assumed).
fn frm_def(
    frm: &Frm,
    space: &Space,
    data: &[u8],
    notes: &mut Vec<String>,
) -> Result<PagedTable, String> {
    let ok = |p: &[u8]| space.checksum_ok(p);
    let (index_id, _) = clustered_index_id(data, ok)?;
    let compact = index_pages_compact(data, index_id, ok)
        .ok_or("no page of the clustered index passes its checksum")?;
    let (format, assumed) = space.row_format(compact);
    if assumed && frm.row_format.is_none() {
        notes.push(
            "neither the .frm nor the data file records the row format (the table took the server's default): DYNAMIC is assumed, the default since MariaDB 10.2.2; records whose externally stored columns do not fit it are not proven"
                .into(),
        );
    }
    let def = frm
        .table_def(format)
        .map_err(|why| format!("its .frm: {why}"))?;
    Ok(PagedTable {
        def,
        index_id,
        root: None,
    })
}

/// The table's definition checked against what the dump writes: where each column of the dump is in the
/// record; `Err` for a table this slice does not read.
fn checked_def(sh: &Shared, pt: &PagedTable) -> Result<Vec<usize>, String> {
    let info = sh.info;
    let key_names: Vec<&str> = pt
        .def
        .key
        .iter()
        .map(|&k| pt.def.columns[k].name.as_str())
        .collect();
    let pk_names: Vec<&str> = info
        .pk
        .iter()
        .map(|&p| info.columns[p].name.as_str())
        .collect();
    if key_names != pk_names {
        return Err(format!(
            "InnoDB clusters the table by ({}), not by the key it was read by",
            key_names.join(", ")
        ));
    }
    let map: Vec<usize> = info
        .columns
        .iter()
        .map(|c| pt.def.columns.iter().position(|d| d.name == c.name))
        .collect::<Option<_>>()
        .ok_or("a column of the dump is not in the record as the dictionary describes it")?;
    Ok(map)
}

/// The lost ranges with their bounds as integers: which one a key lies in.
struct Ranges<'a> {
    lost: &'a [(Option<B>, Option<B>)],
    ints: Vec<(Option<Key>, Option<Key>)>,
    /// The exclusive bounds' keys (the last key another read returned), sorted: their records are kept too.
    edges: Vec<Key>,
}

impl<'a> Ranges<'a> {
    /// Bounds of an all-integer key.
    #[cfg(test)]
    fn new(lost: &'a [(Option<B>, Option<B>)]) -> Self {
        let ints = lost
            .iter()
            .map(|(lo, hi)| (lo.as_ref().map(ints), hi.as_ref().map(ints)))
            .collect();
        Self::of(lost, ints)
    }

    fn of(lost: &'a [(Option<B>, Option<B>)], ints: Vec<(Option<Key>, Option<Key>)>) -> Self {
        let mut edges: Vec<Key> = lost
            .iter()
            .zip(&ints)
            .flat_map(|((lo, hi), (l, h))| [(lo, l), (hi, h)])
            .filter(|(b, _)| b.as_ref().is_some_and(|b| !b.incl))
            .filter_map(|(_, k)| k.clone())
            .collect();
        edges.sort();
        Ranges { lost, ints, edges }
    }

    /// Whether `k` is an exclusive bound's key.
    fn is_edge(&self, k: &Key) -> bool {
        self.edges.binary_search(k).is_ok()
    }

    /// The bounds as the pass compares keys ([`Names::bound`]); `Err` when a ranked key's bound has no record
    /// on the chain to be placed by.
    fn with(lost: &'a [(Option<B>, Option<B>)], names: &Names) -> Result<Self, String> {
        let bound = |b: &B| {
            names.bound(b).ok_or_else(|| {
                let key: Vec<String> = b
                    .key
                    .iter()
                    .map(|v| match v {
                        Sent::Bytes(t) => String::from_utf8_lossy(t).into_owned(),
                        v => format!("{v:?}"),
                    })
                    .collect();
                format!(
                    "the key ({}) SQL read next to a lost range is on no leaf page read, so the range cannot be placed among the records without comparing keys in their collation, which is not done",
                    key.join(", ")
                )
            })
        };
        let ints = lost
            .iter()
            .map(|(lo, hi)| {
                Ok((
                    lo.as_ref().map(bound).transpose()?,
                    hi.as_ref().map(bound).transpose()?,
                ))
            })
            .collect::<Result<_, String>>()?;
        Ok(Self::of(lost, ints))
    }

    fn find(&self, k: &Key) -> Option<usize> {
        self.lost
            .iter()
            .zip(&self.ints)
            .position(|((lo, hi), (l, h))| {
                in_range(k, lo.as_ref().zip(l.as_ref()), hi.as_ref().zip(h.as_ref()))
            })
    }
}

fn key_of(vals: &[Value]) -> Option<Key> {
    vals.iter()
        .map(|v| match v {
            Value::Int(i) => Some(i128::from(*i)),
            Value::Uint(u) => Some(i128::from(*u)),
            _ => None,
        })
        .collect()
}

/// A leaf page's place on the chain, with what its records' places need; the pages the key walk found must
/// be parsed whole are kept for [`whole_pages`].
struct Place {
    n: u32,
    /// The place of its first record on the chain.
    seq: usize,
    /// How many records the key walk found on it.
    count: usize,
    checksum_ok: bool,
    problems: Vec<String>,
    clean: bool,
    /// Its first record is joined to the record before it: the page before is linked to it, and clean.
    joined_in: bool,
    /// It is the chain's first page; its last.
    ends: (bool, bool),
}

impl Place {
    /// Its `i`th record, as the pass keeps it.
    fn rec(
        &self,
        i: usize,
        key: Option<Key>,
        row: Option<crate::pages::Row>,
        reason: Option<String>,
    ) -> Rec {
        let seq = self.seq + i;
        Rec {
            seq,
            back: seq.checked_sub(1),
            page: self.n,
            checksum_ok: self.checksum_ok,
            problems: self.problems.clone(),
            joined: self.clean && (i > 0 || self.joined_in),
            edge: (
                self.clean && self.ends.0 && i == 0,
                self.clean && self.ends.1 && i + 1 == self.count,
            ),
            key,
            row,
            reason,
            written: false,
        }
    }
}

/// What the key walk ([`key_walk`]) leaves for the rest of the pass.
#[derive(Default)]
struct KeyWalk {
    /// The records outside every lost range the pass keeps: a bound's record, a keyless record's neighbours.
    outside: Vec<Rec>,
    whole: Vec<Place>,
    /// Keys inside a lost range met at or below a key inside one earlier on the chain. Only these can be held
    /// by two records (the later of two records with one key is always one), and only when there are none are
    /// the keys inside the ranges in ascending order along the chain.
    disorder: std::collections::HashSet<Key>,
}

/// The chain's records in key order, as far as the pass needs them, with the proven rows inside the lost
/// ranges handed to `write` as they are found (so that a table of any size is read in bounded memory).
///
/// First every page is read for its keys alone ([`key_walk`], `pages::leaf_keys`: the parser's own code up to
/// the key). Only a page that may give a row the pass writes or a record it names is then parsed whole
/// ([`whole_pages`]): one with a key inside a lost range, a record without a key, a failed checksum or a
/// finding about the page. Of the other pages' records, outside every lost range, none is written, none
/// counts as a duplicate and none is kept unless it holds an exclusive bound's key or is the nearest record
/// with a key before or after a record without one ([`attach_keyless`] places that record between them).
///
/// Each record kept carries its place on the chain (`seq`). The rows of a key two records may hold (a key
/// out of order: [`KeyWalk::disorder`]) are held until every record was seen ([`dedupe`]), then written if
/// proven. A page the parser refuses is a note (and a break: nothing next to it is joined).
fn chain_records(
    (pt, space, data): (&PagedTable, &Space, &[u8]),
    chain: &[(u32, bool)],
    (ranges, names): (&Ranges, &mut Names),
    read: &mut PagesRead,
    write: &mut dyn FnMut(&Rec, crate::pages::Row) -> Result<(), String>,
) -> Result<Vec<Rec>, String> {
    let walk = key_walk((pt, space, data), chain, (ranges, names), read);
    let inside = whole_pages((pt, space, data), &walk, (ranges, names), read, write)?;
    // Both lists are in chain order, and no record is in both: merged by place.
    let mut recs = Vec::with_capacity(walk.outside.len() + inside.len());
    let (mut a, mut b) = (
        walk.outside.into_iter().peekable(),
        inside.into_iter().peekable(),
    );
    while let Some(next) = match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if x.seq < y.seq => a.next(),
        (_, Some(_)) => b.next(),
        (Some(_), None) => a.next(),
        (None, None) => None,
    } {
        recs.push(next);
    }
    dedupe(&mut recs, ranges);
    for rec in recs.iter_mut().filter(|r| !r.written) {
        if let Some(row) = rec.row.take() {
            write(rec, row)?;
            rec.written = true;
        }
    }
    Ok(recs)
}

/// Every page's keys in chain order: which pages are parsed whole, the records outside the lost ranges the
/// pass keeps, and the keys out of order ([`chain_records`]).
fn key_walk(
    (pt, space, data): (&PagedTable, &Space, &[u8]),
    chain: &[(u32, bool)],
    (ranges, names): (&Ranges, &mut Names),
    read: &mut PagesRead,
) -> KeyWalk {
    read.leaves = chain.len() as u64;
    let mut walk = KeyWalk::default();
    // The last record with a key not kept (kept once a record without a key follows it), and whether the
    // next record with a key is kept for a record without one before it.
    let (mut pending, mut want_next): (Option<Rec>, bool) = (None, false);
    let (mut seq, mut prev_clean) = (0, false);
    // The highest key inside a lost range so far.
    let mut top: Option<Key> = None;
    for (ci, &(n, linked)) in chain.iter().enumerate() {
        let p = &data[n as usize * PAGE..(n as usize + 1) * PAGE];
        let keys = match leaf_keys(&pt.def, space, p) {
            Ok(k) => k,
            Err(why) => {
                read.notes.push(format!("page {n} was not read: {why}"));
                prev_clean = false;
                continue;
            }
        };
        let clean = keys.checksum_ok && keys.problems.is_empty();
        let place = Place {
            n,
            seq,
            count: keys.keys.len(),
            checksum_ok: keys.checksum_ok,
            problems: keys.problems,
            clean,
            joined_in: linked && prev_clean,
            ends: (ci == 0, ci + 1 == chain.len()),
        };
        let mut whole = !clean;
        for (i, k) in keys.keys.iter().enumerate() {
            let key = k.as_deref().ok().and_then(|k| names.key(k));
            let Some(key) = key else {
                whole = true;
                walk.outside.extend(pending.take());
                want_next = true;
                continue;
            };
            if ranges.find(&key).is_some() {
                whole = true;
                (pending, want_next) = (None, false);
                if top.as_ref().is_some_and(|t| key <= *t) {
                    walk.disorder.insert(key);
                } else {
                    top = Some(key);
                }
                continue;
            }
            let edge = ranges.is_edge(&key);
            let rec = place.rec(i, Some(key), None, None);
            if edge || want_next {
                (pending, want_next) = (None, false);
                walk.outside.push(rec);
            } else {
                pending = Some(rec);
            }
        }
        seq += place.count;
        if whole {
            walk.whole.push(place);
        }
        prev_clean = clean;
    }
    walk
}

/// The pages the key walk marked parsed whole: their records inside a lost range or without a key, each
/// proven row whose key is in no doubt handed to `write` at once. When the keys inside the ranges ascend
/// along the chain (no [`KeyWalk::disorder`]), a stretch of rows written one after the other, each joined to
/// the one before it, keeps only its first and last record: the last's `back` is the first's place, and
/// nothing lies between them that was not written.
fn whole_pages(
    (pt, space, data): (&PagedTable, &Space, &[u8]),
    walk: &KeyWalk,
    (ranges, names): (&Ranges, &mut Names),
    read: &mut PagesRead,
    write: &mut dyn FnMut(&Rec, crate::pages::Row) -> Result<(), String>,
) -> Result<Vec<Rec>, String> {
    let reader = InMemory {
        data,
        page_size: PAGE,
    };
    let compress = walk.disorder.is_empty();
    let mut out: Vec<Rec> = Vec::new();
    // The stretch being written: the index of its first record in `out`, and its range.
    let mut run: Option<(usize, usize)> = None;
    for w in &walk.whole {
        read.parsed_whole += 1;
        let p = &data[w.n as usize * PAGE..(w.n as usize + 1) * PAGE];
        let leaf = match parse_leaf(&pt.def, space, &reader, p) {
            Ok(l) if l.records.len() == w.count => l,
            Ok(l) => {
                read.notes.push(format!(
                    "page {} was not read: it held {} records when read for its keys and {} when parsed whole",
                    w.n,
                    w.count,
                    l.records.len()
                ));
                run = None;
                continue;
            }
            Err(why) => {
                read.notes.push(format!("page {} was not read: {why}", w.n));
                run = None;
                continue;
            }
        };
        for (i, r) in leaf.records.into_iter().enumerate() {
            let (key, row, reason) = match r.outcome {
                Outcome::Row(row) => {
                    let key: Vec<Value> =
                        pt.def.key.iter().map(|&k| row.values[k].clone()).collect();
                    (names.key(&key), Some(row), None)
                }
                Outcome::Rejected { reason, key } => (
                    key.as_deref().and_then(|k| names.key(k)),
                    None,
                    Some(reason),
                ),
            };
            let at = key.as_ref().and_then(|k| ranges.find(k));
            if key.is_some() && at.is_none() {
                // Outside every range: the key walk kept it if the pass needs it.
                continue;
            }
            let mut rec = w.rec(i, key, row, reason);
            let seq = rec.seq;
            let settled = rec.key.as_ref().is_some_and(|k| !walk.disorder.contains(k));
            if settled {
                if let Some(row) = rec.row.take() {
                    write(&rec, row)?;
                    rec.written = true;
                }
            }
            // A row written whose record no bound names can be inside a stretch.
            let runs = rec.written && !rec.key.as_ref().is_some_and(|k| ranges.is_edge(k));
            let continues = compress
                && runs
                && rec.joined
                && run.is_some_and(|(_, range)| {
                    Some(range) == at && out.last().is_some_and(|l| l.seq + 1 == seq)
                });
            match run {
                Some((first, _)) if continues => {
                    if out.len() - 1 > first {
                        out.pop();
                    }
                    rec.back = Some(out[first].seq);
                    out.push(rec);
                }
                _ => {
                    run = runs.then_some((out.len(), at.unwrap_or(usize::MAX)));
                    out.push(rec);
                }
            }
        }
    }
    Ok(out)
}

/// The proven rows the pass writes: into the dump's file (its count and hash) and the cross-check's records,
/// counted per page into `pass`.
struct Sink<'a> {
    sh: &'a Shared<'a>,
    po: &'a PageOptions,
    pt: &'a PagedTable,
    map: &'a [usize],
    kinds: Vec<crate::dump::literal::Kind>,
    columns: Arc<[mysql::Column]>,
    buf: Vec<u8>,
    rows: u64,
    hash: u128,
    xb: xcheck::Recorded,
    per_page: std::collections::BTreeMap<u32, PageRows>,
    /// [`Pass`]'s keys, moved into it at the end.
    unverified: Named,
    uncommitted: Named,
}

impl<'a> Sink<'a> {
    fn new(
        sh: &'a Shared<'a>,
        po: &'a PageOptions,
        (pt, map): (&'a PagedTable, &'a [usize]),
    ) -> Self {
        let info = sh.info;
        Sink {
            sh,
            po,
            pt,
            map,
            kinds: info.columns.iter().map(|c| c.kind).collect(),
            columns: info
                .columns
                .iter()
                .map(|_| mysql::Column::new(mysql::consts::ColumnType::MYSQL_TYPE_STRING))
                .collect(),
            buf: Vec::new(),
            rows: 0,
            hash: 0,
            xb: xcheck::Recorded::new(sh.xs.len()),
            per_page: Default::default(),
            unverified: Named::default(),
            uncommitted: Named::default(),
        }
    }

    fn page(&mut self, rec: &Rec) -> &mut PageRows {
        self.per_page.entry(rec.page).or_insert_with(|| PageRows {
            page: rec.page,
            rows: 0,
            unproven: 0,
            checksum_ok: rec.checksum_ok,
            problems: rec.problems.clone(),
        })
    }

    /// One proven row inside a lost range.
    fn write(&mut self, rec: &Rec, mut row: crate::pages::Row) -> Result<(), String> {
        let key = rec.key.as_ref().ok_or("a row without a key")?;
        // Each value moved out of the row: a column's text becomes the row's bytes without a copy.
        let values: Vec<Sent> = self
            .map
            .iter()
            .map(|&c| {
                sent_owned(
                    std::mem::replace(&mut row.values[c], Value::Null),
                    &self.pt.def.columns[c].ty,
                )
            })
            .collect();
        let row_sent = mysql::mysql_common::row::new_row(values, self.columns.clone());
        write_row_parts(
            &mut self.buf,
            &mut self.rows,
            &mut self.hash,
            &self.kinds,
            &self.sh.insert_prefix,
            &row_sent,
            &mut Vec::new(),
        );
        self.xb.add(&self.sh.xs, &self.sh.shape, &row_sent);
        if self.buf.len() >= self.sh.opts.chunk_bytes {
            flush_parts(self.sh, &mut self.buf, &mut self.rows, &mut self.hash)
                .map_err(|e| e.to_string())?;
        }
        self.page(rec).rows += 1;
        // A page whose checksum fails, or whose own structure says bytes of it are not what InnoDB wrote
        // (a scrambled page can carry a valid checksum): its rows cannot be told from rewritten ones.
        if !rec.checksum_ok || !rec.problems.is_empty() {
            self.unverified.add(key, None);
        }
        if possibly_uncommitted(self.po, row.trx_id) {
            self.uncommitted.add(key, Some(row.trx_id));
        }
        Ok(())
    }

    /// The rest written; per lost range, the keys read inside it and whether each became a row, and each
    /// page's counts into `pass`.
    fn finish(
        mut self,
        recs: &[Rec],
        ranges: &Ranges,
        pass: &mut Pass,
    ) -> Result<Vec<BTreeSet<(Key, bool)>>, String> {
        let mut points: Vec<BTreeSet<(Key, bool)>> = vec![BTreeSet::new(); ranges.lost.len()];
        for rec in recs {
            let Some(key) = &rec.key else { continue };
            let Some(at) = ranges.find(key) else { continue };
            if !rec.written {
                self.page(rec).unproven += 1;
            }
            points[at].insert((key.clone(), rec.written));
        }
        flush_parts(self.sh, &mut self.buf, &mut self.rows, &mut self.hash)
            .map_err(|e| e.to_string())?;
        xcheck::merge(
            &self.sh.shape,
            &mut self.sh.written.lock().unwrap(),
            &mut self.xb,
        );
        pass.read.page_rows = self.per_page.values().map(|p| p.rows).sum();
        pass.read.pages = self.per_page.into_values().collect();
        pass.unverified = self.unverified;
        pass.uncommitted = self.uncommitted;
        Ok(points)
    }
}

/// The copy's data file, mapped read-only: the pass reads it as one slice without reading it into memory (the
/// kernel pages it in from the page cache as the pass walks it, and drops what was read under memory pressure),
/// so a table larger than the memory is read as well as a small one, and a 1M-row table's 224 MB are not zeroed
/// and copied first (that was most of the pass's time: docs/recover.md, "Reading pages").
fn map_file(path: &std::path::Path) -> Result<memmap2::Mmap, String> {
    let cannot = |e: std::io::Error| format!("{} cannot be read: {e}", path.display());
    let file = std::fs::File::open(path).map_err(cannot)?;
    if file.metadata().map_err(cannot)?.len() < PAGE as u64 {
        return Err(format!(
            "{} is shorter than one page ({PAGE} bytes)",
            path.display()
        ));
    }
    // SAFETY: the mapping is of the copy innops made (never the original's files) and is only read. A writer
    // changing its bytes meanwhile (the private server on the copy, whose dirty pages were written before this)
    // gives the parser different bytes, which it judges like any page (checksum, headers, order); InnoDB does
    // not shrink a table's .ibd in place (TRUNCATE and rebuilds write a new file, and the mapping keeps the old
    // one), so no page the mapping covers disappears under it.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(cannot)?;
    // The leaf pages are walked mostly in file order; a hint only, so its failure is no error.
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(map)
}

/// A row last written by transaction `trx` may hold uncommitted values: a transaction active at the crash
/// that InnoDB did not prove rolled back, or one with a higher id (ids are handed out at a transaction's start,
/// so a higher one may have started after it; conservative).
fn possibly_uncommitted(po: &PageOptions, trx: u64) -> bool {
    po.uncommitted.contains(&trx) || po.lowest_active.is_some_and(|l| trx >= l)
}

/// A key bound's values as integers (every key column is one here).
fn ints(b: &B) -> Key {
    b.key.iter().map(|v| as_int(v).unwrap_or(0)).collect()
}

fn list(pages: &[u32]) -> String {
    let mut s: Vec<String> = pages.iter().take(20).map(|p| p.to_string()).collect();
    if pages.len() > 20 {
        s.push(format!("… ({} in all)", pages.len()));
    }
    s.join(", ")
}

/// `k`'s order against bound `b`, on the bound's columns (a bound may be a leading-column value).
fn cmp_prefix(k: &[i128], b: &[i128]) -> std::cmp::Ordering {
    k[..b.len().min(k.len())].cmp(b)
}

fn in_range(k: &Key, lo: Option<(&B, &Key)>, hi: Option<(&B, &Key)>) -> bool {
    use std::cmp::Ordering::*;
    let above = lo.is_none_or(|(b, l)| match cmp_prefix(k, l) {
        Greater => true,
        Equal => b.incl,
        Less => false,
    });
    let below = hi.is_none_or(|(b, h)| match cmp_prefix(k, h) {
        Less => true,
        Equal => b.incl,
        Greater => false,
    });
    above && below
}

/// Two records of the chain that hold one key: neither is proven (a stale copy cannot be told from the live one).
/// Only keys inside a lost range are counted: a row is written only there, and a record holding the same key as
/// one there is there too (the records outside keep their keys, and are never rows written).
fn dedupe(recs: &mut [Rec], ranges: &Ranges) {
    let mut count: HashMap<&Key, usize> = HashMap::new();
    fn inside<'r>(r: &'r Rec, ranges: &Ranges) -> Option<&'r Key> {
        r.key.as_ref().filter(|k| ranges.find(k).is_some())
    }
    for k in recs.iter().filter_map(|r| inside(r, ranges)) {
        *count.entry(k).or_default() += 1;
    }
    let dup: Vec<bool> = recs
        .iter()
        .map(|r| inside(r, ranges).is_some_and(|k| count[k] > 1))
        .collect();
    for (r, _) in recs.iter_mut().zip(dup).filter(|(_, d)| *d) {
        r.row = None;
        r.reason = Some("another record of the leaf pages holds the same key".into());
    }
}

/// Each lost range cut at the keys read inside it (`points`: the key, and whether it became a row): the
/// stretches where a row may still be missing, and one range per unproven record with a key.
fn cut(
    ranges: &Ranges,
    points: &[BTreeSet<(Key, bool)>],
    recs: &[Rec],
    (single, names): (bool, &Names),
) -> Vec<Piece> {
    // Where the keys `empty` asks about are in the chain: those inside a lost range and the ranges' exclusive
    // bounds (the last key another read returned), not every key of the table.
    let lost = ranges.lost;
    let pos: HashMap<&Key, usize> = recs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.key.as_ref().map(|k| (k, i)))
        .filter(|(k, _)| ranges.is_edge(k) || ranges.find(k).is_some())
        .collect();
    let key_of = |a: &At| -> Option<Key> {
        match a {
            At::Point(k) => Some(k.clone()),
            At::Bound(b) if !b.incl => names.bound(b),
            _ => None,
        }
    };
    // Nothing can lie strictly between `a` and `z`.
    let empty = |a: &At, z: &At| -> bool {
        let at = |k: Option<Key>| k.and_then(|k| pos.get(&k).copied());
        match (a, z) {
            (At::Open, _) if at(key_of(z)).is_some_and(|j| recs[j].edge.0) => return true,
            (_, At::Open) if at(key_of(a)).is_some_and(|i| recs[i].edge.1) => return true,
            _ => {}
        }
        if let (Some(x), Some(y)) = (key_of(a), key_of(z)) {
            if let (Some(&i), Some(&j)) = (pos.get(&x), pos.get(&y)) {
                if recs[j].back == Some(recs[i].seq) && recs[j].joined {
                    return true;
                }
            }
        }
        if !single {
            return false;
        }
        let first = match a {
            At::Open => return false,
            At::Bound(b) if b.key.len() != 1 => return false,
            At::Bound(b) => ints(b)[0] + i128::from(!b.incl),
            At::Point(k) => k[0] + 1,
        };
        let last = match z {
            At::Open => return false,
            At::Bound(b) if b.key.len() != 1 => return false,
            At::Bound(b) => ints(b)[0] - i128::from(!b.incl),
            At::Point(k) => k[0] - 1,
        };
        first > last
    };
    let as_b = |a: &At| -> Option<B> {
        match a {
            At::Open => None,
            At::Bound(b) => Some(b.clone()),
            At::Point(k) => Some(B {
                key: names.values(k),
                incl: false,
            }),
        }
    };
    let mut out = Vec::new();
    for ((lo, hi), pts) in lost.iter().zip(points) {
        let mut prev = lo.clone().map_or(At::Open, At::Bound);
        for (k, is_row) in pts {
            let here = At::Point(k.clone());
            if !empty(&prev, &here) {
                out.push(Piece {
                    lo: as_b(&prev),
                    hi: as_b(&here),
                    records: Vec::new(),
                });
            }
            if !is_row {
                let r = &recs[pos[k]];
                let b = B {
                    key: names.values(k),
                    incl: true,
                };
                out.push(Piece {
                    lo: Some(b.clone()),
                    hi: Some(b),
                    records: vec![Unproven {
                        page: r.page,
                        key: Some(names.json(k)),
                        reason: r.reason.clone().unwrap_or_default(),
                    }],
                });
            }
            prev = here;
        }
        let end = hi.clone().map_or(At::Open, At::Bound);
        if !empty(&prev, &end) {
            out.push(Piece {
                lo: as_b(&prev),
                hi: as_b(&end),
                records: Vec::new(),
            });
        }
    }
    out
}

fn key_values(k: &Key) -> Vec<Sent> {
    k.iter()
        .map(|v| Sent::Bytes(v.to_string().into_bytes()))
        .collect()
}

fn json_int(v: i128) -> serde_json::Value {
    i64::try_from(v)
        .map(serde_json::Value::from)
        .or_else(|_| u64::try_from(v).map(serde_json::Value::from))
        .unwrap_or_else(|_| v.to_string().into())
}

fn ranges_of(pieces: &[Piece], names: &Names) -> Vec<(Option<Key>, Option<Key>)> {
    let key = |b: &B| names.bound(b);
    pieces
        .iter()
        .map(|p| (p.lo.as_ref().and_then(key), p.hi.as_ref().and_then(key)))
        .collect()
}

/// Records without a key that validates go with the remaining stretch they lie in: between the keys of the
/// nearest records before and after them on the chain. One that lies in no stretch (among rows SQL returned:
/// a delete-marked record, say) is not a lost row.
fn attach_keyless(pieces: &mut [Piece], recs: &[Rec], bounds: &[(Option<Key>, Option<Key>)]) {
    let mut keyless: std::collections::BTreeMap<(usize, u32), Vec<String>> = Default::default();
    for (j, r) in recs.iter().enumerate() {
        if r.key.is_some() || r.row.is_some() {
            continue;
        }
        let before = recs[..j].iter().rev().find_map(|r| r.key.clone());
        let after = recs[j + 1..].iter().find_map(|r| r.key.clone());
        let hit = pieces.iter().zip(bounds).position(|(p, (l, h))| {
            // The piece's stretch meets (before, after): its lower bound is below `after`, its upper above `before`.
            p.records.iter().all(|u| u.key.is_none())
                && match (l, &after) {
                    (Some(l), Some(a)) => cmp_prefix(a, l).is_gt(),
                    _ => true,
                }
                && match (h, &before) {
                    (Some(h), Some(b)) => cmp_prefix(b, h).is_lt(),
                    _ => true,
                }
        });
        if let Some(i) = hit {
            keyless
                .entry((i, r.page))
                .or_default()
                .push(r.reason.clone().unwrap_or_default());
        }
    }
    // A list broken by overwritten bytes leads on into them: one entry per page and stretch, not one per place.
    for ((i, page), reasons) in keyless {
        let reason = match reasons.as_slice() {
            [one] => one.clone(),
            [first, ..] => format!(
                "{} places the page's record list leads to hold no record that can be proven (the first: {first})",
                reasons.len()
            ),
            [] => continue,
        };
        pieces[i].records.push(Unproven {
            page,
            key: None,
            reason,
        });
    }
}

/// [`sent`] of a value the caller gives up: its text, when it has one, becomes the bytes as they are.
fn sent_owned(v: Value, ty: &ColType) -> Sent {
    match v {
        Value::Text(s) | Value::Decimal(s) | Value::Temporal(s) => Sent::Bytes(s.into_bytes()),
        Value::Bytes(b) => Sent::Bytes(b),
        v => sent(&v, ty),
    }
}

/// The text the server sends for a column value (the dump writes and hashes the server's text).
fn sent(v: &Value, ty: &ColType) -> Sent {
    match (v, ty) {
        (Value::Null, _) => Sent::NULL,
        (Value::Bytes(b), _) => Sent::Bytes(b.clone()),
        (Value::Bit(v), ColType::Bit { bits }) => {
            let n = bits.div_ceil(8).clamp(1, 8);
            Sent::Bytes(v.to_be_bytes()[8 - n..].to_vec())
        }
        (Value::Float(_) | Value::Double(_), ty) => {
            Sent::Bytes(float_text(v, ty).unwrap_or_default().into_bytes())
        }
        (v, _) => Sent::Bytes(v.text().unwrap_or_default().into_bytes()),
    }
}

/// The server's dirty pages written to its files, so the file holds what the server serves (crash recovery
/// and rollback change pages in memory first): waits up to a minute with `innodb_max_dirty_pages_pct = 0`.
/// `Some` says how many there were and how long they took.
fn flushed(conn: &mut Conn, tag: &str) -> Result<Option<String>, String> {
    let dirty = |c: &mut Conn| -> Result<u64, String> {
        c.query_first::<(String, u64), _>(format!(
            "SHOW {tag} GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'"
        ))
        .map_err(|e| crate::error::describe_mysql(&e))
        .map(|r| r.map_or(0, |(_, n)| n))
    };
    let first = dirty(conn)?;
    if first == 0 {
        return Ok(None);
    }
    let old: Option<String> = conn
        .query_first(format!("SELECT {tag} @@GLOBAL.innodb_max_dirty_pages_pct"))
        .map_err(|e| crate::error::describe_mysql(&e))?;
    conn.query_drop(format!("SET {tag} GLOBAL innodb_max_dirty_pages_pct = 0"))
        .map_err(|e| crate::error::describe_mysql(&e))?;
    let start = std::time::Instant::now();
    let mut left = dirty(conn)?;
    while left > 0 && start.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(200));
        left = dirty(conn)?;
    }
    if let Some(old) = old.and_then(|o| o.parse::<f64>().ok()) {
        let _ = conn.query_drop(format!(
            "SET {tag} GLOBAL innodb_max_dirty_pages_pct = {old}"
        ));
    }
    if left > 0 {
        return Err(format!(
            "the server still had {left} dirty pages after a minute, so its files may not hold what it serves"
        ));
    }
    Ok(Some(format!(
        "the server's {first} dirty page(s) were written to its files first ({:.2} s)",
        start.elapsed().as_secs_f64()
    )))
}

/// The table's `.ibd` in the copy's data directory (names InnoDB writes as they are: letters, digits, `_`).
fn ibd_path(po: &PageOptions, name: &crate::dump::TableName) -> Result<std::path::PathBuf, String> {
    let plain =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !plain(&name.db) || !plain(&name.table) {
        return Err(
            "its name holds characters InnoDB encodes in file names, which are not read yet".into(),
        );
    }
    Ok(po
        .datadir
        .join(&name.db)
        .join(format!("{}.ibd", name.table)))
}

/// The doubts for the rows read from pages: rows from a page whose checksum fails that the secondary indexes
/// did not confirm column by column, and rows a transaction active at the crash may have written.
pub(super) fn doubts(pass: &Pass, confirmed: bool) -> Vec<Doubt> {
    let mut out = Vec::new();
    let json = |k: &Key| pass.names.json(k);
    let keys = |n: &Named| n.first.iter().map(json).collect();
    // From the lowest to the highest key named.
    let range = |n: &Named| {
        Some(KeyRange {
            from: Some(json(n.low.as_ref()?)),
            to: Some(json(n.high.as_ref()?)),
            ..Default::default()
        })
    };
    let unverified = &pass.unverified;
    if !unverified.is_empty() && !confirmed {
        let pages: Vec<u32> = pass
            .read
            .pages
            .iter()
            .filter(|p| (!p.checksum_ok || !p.problems.is_empty()) && p.rows > 0)
            .map(|p| p.page)
            .collect();
        out.push(Doubt {
            kind: DoubtKind::PageChecksum,
            why: format!(
                "{} row(s) were read from page(s) {} whose checksum fails or whose record list is broken: each record parsed whole, but a value rewritten in place with another valid one cannot be told, and no readable secondary index holds every column to confirm them",
                unverified.count,
                list(&pages)
            ),
            range: range(unverified),
            keys: keys(unverified),
        });
    }
    let uncommitted = &pass.uncommitted;
    if !uncommitted.is_empty() {
        let ids: Vec<String> = uncommitted.trx.iter().map(|t| t.to_string()).collect();
        let ids = match (ids.len() > 20, uncommitted.more_trx) {
            (_, true) => format!(
                "{} and more than {} others",
                ids[..20].join(", "),
                ids.len() - 20
            ),
            (true, false) => format!("{} and {} others", ids[..20].join(", "), ids.len() - 20),
            (false, false) => ids.join(", "),
        };
        out.push(Doubt {
            kind: DoubtKind::Uncommitted,
            why: format!(
                "{} row(s) read from pages were last written by transaction(s) {ids} active at the crash, not proven rolled back: possibly uncommitted",
                uncommitted.count,
            ),
            range: range(uncommitted),
            keys: keys(uncommitted),
        });
    }
    out
}

#[cfg(test)]
#[path = "pages_tests.rs"]
mod tests;
