//! The user records of one clustered-index leaf page in the COMPACT and DYNAMIC row formats (MariaDB's
//! `rem0rec.h`, `rem0rec.cc`), each either a row proven by its own bytes or rejected with the reason.
//!
//! A COMPACT record, read backwards from its origin: 5 header bytes (info bits and n_owned; heap number and
//! record status; the signed offset of the next record), the NULL bitmap (one bit per nullable column, the first
//! column in the lowest bit of the byte nearest the header), then one length per non-NULL variable-length column
//! (one byte, or two when the column can exceed 255 bytes and the first byte's top bit is set; then bit 0x40 says
//! the column is stored externally). Forwards from the origin: the clustered key's columns, the 6-byte
//! DB_TRX_ID, the 7-byte DB_ROLL_PTR, then the other columns in table order.
//!
//! A REDUNDANT record differs only in its header and how its fields are found ([`super::redundant`]).
//!
//! A page is untrusted input: every read is bounds-checked, and a record becomes a row only when its header is
//! consistent (ordinary status, a heap number of this page's heap and of no other record, no unknown info bit),
//! its fields lie inside the page's heap, every value is one its column can hold, it is not delete-marked, and
//! its key is in ascending order with the page's other records, and each externally stored column is whole: its
//! BLOB chain followed through the same tablespace's pages ([`super::blob`]) adds up to the reference's length
//! over pages that prove themselves. What this slice does not read (compressed pages, instant ADD COLUMN
//! records and the metadata record, page-compressed or encrypted pages) is refused in one sentence, never
//! guessed at.

use std::cmp::Ordering;

use super::blob::{self, PageReader};
use super::def::{ColType, RowFormat, TableDef};
use super::page::{
    be16, HEAP_TOP, INDEX_PAGE, INFIMUM, LEVEL, NO_PAGE, N_HEAP, N_RECS, PAGE, PAGE_HEADER,
    RECORDS_START, SPACE_ID, SUPREMUM,
};
use super::redundant;
use super::space::Space;
use super::value::{self, Extern, Value};

/// `REC_INFO_DELETED_FLAG` and `REC_INFO_MIN_REC_FLAG`, in the info bits (the header's top nibble).
pub(super) const DELETED: u8 = 0x20;
pub(super) const MIN_REC: u8 = 0x10;
/// `REC_STATUS_INSTANT`: a record written after an instant ADD COLUMN.
const STATUS_INSTANT: u8 = 4;
/// How much of an externally stored column a COMPACT or REDUNDANT record keeps
/// (`DICT_ANTELOPE_MAX_INDEX_COL_LEN`).
const COMPACT_PREFIX: usize = 768;

/// A row read from a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// One value per column of the definition, in table order.
    pub values: Vec<Value>,
    /// DB_TRX_ID: the transaction that last wrote it (0 once purge has reset it).
    pub trx_id: u64,
}

/// What became of one record.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Row(Row),
    /// Not proven a row: `reason` says why; `key` is the key when its bytes validate.
    Rejected {
        reason: String,
        key: Option<Vec<Value>>,
    },
}

/// One user record of the page, in page (list) order.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Its origin: the byte offset in the page where its data starts.
    pub origin: usize,
    pub outcome: Outcome,
}

/// A leaf page's records and what was found wrong with the page as a whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Leaf {
    pub records: Vec<Record>,
    /// Whether the page's checksum matches in its tablespace's format (a page that fails it may still hold good records).
    pub checksum_ok: bool,
    /// Page-level findings, one sentence each: a broken record list, a record count that differs.
    pub problems: Vec<String>,
    /// Key order is checked on the key's leading columns up to the first one whose collation does not compare
    /// bytes; `false` when that leaves the order of some equal-prefix records unchecked.
    pub order_complete: bool,
}

/// Where a page format keeps its fixed records and how its records are found: the infimum's and the
/// supremum's origins, where user records may start, the header's length, and whether a next-record offset
/// is relative to its record (COMPACT) or the absolute offset in the page (REDUNDANT).
#[derive(Debug, Clone, Copy)]
pub(super) struct Geometry {
    infimum: usize,
    supremum: usize,
    start: usize,
    extra: usize,
    compact: bool,
}

impl Geometry {
    pub(super) fn of(def: &TableDef) -> Geometry {
        if def.format == RowFormat::Redundant {
            Geometry {
                infimum: redundant::INFIMUM,
                supremum: redundant::SUPREMUM,
                start: redundant::RECORDS_START,
                extra: redundant::EXTRA,
                compact: false,
            }
        } else {
            Geometry {
                infimum: INFIMUM,
                supremum: SUPREMUM,
                start: RECORDS_START,
                extra: 5,
                compact: true,
            }
        }
    }

    /// The record the one at `at` points to (the 2 bytes before its origin).
    fn next(&self, p: &[u8], at: usize) -> usize {
        let off = be16(p, at - 2);
        if self.compact {
            (at as i64 + i64::from(off as i16)).rem_euclid(PAGE as i64) as usize
        } else {
            usize::from(off)
        }
    }

    /// Where a user record's origin can be: past its header, inside the heap.
    fn in_heap(&self, p: &[u8], at: usize) -> bool {
        (self.start + self.extra..usize::from(be16(p, HEAP_TOP)).min(PAGE)).contains(&at)
    }

    /// The record's info bits (the header's first byte's top nibble).
    fn info(&self, p: &[u8], origin: usize) -> Result<u8, String> {
        Ok(byte(p, origin - self.extra)? & 0xF0)
    }
}

/// Whether leaf page `p` begins with the metadata record an instant ALTER TABLE (ADD, DROP or reorder of
/// columns) leaves on the clustered index's leftmost leaf. The table's records then have more than one layout —
/// those written before the change keep the old one — which this parser does not read, and a record of the old
/// layout can decode as a wrong row of the new one: the caller refuses the whole table, not only this page.
pub fn starts_with_metadata(def: &TableDef, p: &[u8]) -> bool {
    let g = Geometry::of(def);
    if p.len() < PAGE {
        return false;
    }
    let first = g.next(p, g.infimum);
    first != g.supremum && g.in_heap(p, first) && g.info(p, first).is_ok_and(|i| i & MIN_REC != 0)
}

/// Numbers met once already on one page (record origins, heap numbers: both below the page size), one bit
/// each: a page's hundreds of records are checked without hashing.
pub(super) struct Marks([u64; PAGE / 64]);

impl Marks {
    pub(super) fn new() -> Marks {
        Marks([0; PAGE / 64])
    }

    /// Marks `n`: `false` when it was marked already, or lies past the page (where no origin or heap number can).
    pub(super) fn insert(&mut self, n: usize) -> bool {
        let Some(word) = self.0.get_mut(n / 64) else {
            return false;
        };
        let bit = 1u64 << (n % 64);
        let new = *word & bit == 0;
        *word |= bit;
        new
    }
}

/// What the records of one page share while they are parsed: the heap numbers met (each belongs to one record)
/// and a buffer for a record's fields, reused from record to record.
pub(super) struct Scratch {
    heaps: Marks,
    fields: Vec<Field>,
}

impl Scratch {
    pub(super) fn new() -> Scratch {
        Scratch {
            heaps: Marks::new(),
            fields: Vec::new(),
        }
    }
}

/// Reads that stay inside the page or say where they would leave it.
pub(super) fn get(p: &[u8], from: usize, len: usize) -> Result<&[u8], String> {
    from.checked_add(len)
        .and_then(|end| p.get(from..end))
        .ok_or_else(|| format!("a read of {len} bytes at {from} leaves the page"))
}

pub(super) fn byte(p: &[u8], at: usize) -> Result<u8, String> {
    p.get(at)
        .copied()
        .ok_or_else(|| format!("byte {at} is outside the page"))
}

/// The one-sentence refusal when the table or the page is one this parser does not read yet.
fn refusal(def: &TableDef, space: &Space, p: &[u8]) -> Option<String> {
    if def.format == RowFormat::Compressed {
        return Some("ROW_FORMAT=COMPRESSED pages are not read yet".into());
    }
    if let Some(why) = space.refusal(PAGE) {
        return Some(why);
    }
    if p.len() != PAGE {
        return Some(format!(
            "a page of {} bytes: only 16 KiB pages are read",
            p.len()
        ));
    }
    let ty = be16(p, 24);
    if ty != INDEX_PAGE {
        // 34354, 37401 and a type with the top bit set (full_crc32) are page-compressed pages.
        return Some(if ty == 34354 || ty == 37401 || ty & 0x8000 != 0 {
            format!("page type {ty} is a page-compressed page, which is not read yet")
        } else {
            format!("page type {ty} is not an index page")
        });
    }
    if space.key_version(p) != 0 {
        return Some(format!(
            "the page carries encryption key version {}: encrypted pages are not read yet",
            space.key_version(p)
        ));
    }
    if be16(p, LEVEL) != 0 {
        return Some("not a leaf page".into());
    }
    let g = Geometry::of(def);
    let page_compact = be16(p, N_HEAP) & 0x8000 != 0;
    if page_compact != g.compact {
        return Some(format!(
            "the page holds {} records where the table's row format is {}: the definition does not fit the file",
            if page_compact { "COMPACT" } else { "REDUNDANT" },
            format!("{:?}", def.format).to_uppercase()
        ));
    }
    if &p[g.infimum..g.infimum + 8] != b"infimum\0" || &p[g.supremum..g.supremum + 8] != b"supremum"
    {
        return Some(format!(
            "the page's infimum and supremum records are not where a {} page has them",
            if g.compact { "COMPACT" } else { "REDUNDANT" }
        ));
    }
    None
}

/// The origins of the records on the list from the infimum, in list order, and the sentence saying where the
/// list broke (the records before the break are returned; the last one's next-record offset is the broken one).
fn walk(g: Geometry, p: &[u8]) -> (Vec<usize>, Option<String>) {
    let mut seen = Marks::new();
    let (mut out, mut at) = (Vec::new(), g.infimum);
    loop {
        let next = g.next(p, at);
        if next == g.supremum {
            return (out, None);
        }
        if !g.in_heap(p, next) {
            return (
                out,
                Some(format!(
                    "the record at {at} points to {next}, outside the page's heap"
                )),
            );
        }
        if !seen.insert(next) {
            return (out, Some(format!("the record list loops back to {next}")));
        }
        out.push(next);
        at = next;
    }
}

/// The record list walked again through the page directory, when the walk from the infimum broke: the
/// directory's slots (at the page's end, in key order) point to owner records, each owning the up to 8
/// records after the previous owner. Each stretch from one owner to the next is walked on its own, so a
/// broken next-record offset costs the records of its stretch, not the rest of the page; the owner that ends
/// a stretch is taken from the directory even when the walk does not reach it. Returns the origins in list
/// order and those whose next-record offset is in doubt (every record of a stretch whose walk failed, and
/// the owner it started from); `None` when the directory itself is not one InnoDB writes.
fn directory_walk(g: Geometry, p: &[u8]) -> Option<(Vec<usize>, std::collections::HashSet<usize>)> {
    let heap_top = usize::from(be16(p, HEAP_TOP)).min(PAGE);
    let n = usize::from(be16(p, PAGE_HEADER));
    if n < 2 || (PAGE - 8).checked_sub(2 * n)? < heap_top {
        return None;
    }
    let owners: Vec<usize> = (0..n)
        .map(|k| usize::from(be16(p, PAGE - 8 - 2 * (k + 1))))
        .collect();
    let in_heap = |o: usize| g.in_heap(p, o);
    if owners[0] != g.infimum
        || owners[n - 1] != g.supremum
        || !owners[1..n - 1].iter().all(|&o| in_heap(o))
    {
        return None;
    }
    let owner_set: std::collections::HashSet<usize> = owners.iter().copied().collect();
    if owner_set.len() != n {
        return None;
    }
    let (mut out, mut seen, mut check) = (
        Vec::new(),
        std::collections::HashSet::new(),
        std::collections::HashSet::new(),
    );
    for w in owners.windows(2) {
        let (from, to) = (w[0], w[1]);
        let (mut at, mut walked) = (from, Vec::new());
        let reached = loop {
            let next = g.next(p, at);
            if next == to {
                break true;
            }
            if walked.len() >= 8
                || !in_heap(next)
                || owner_set.contains(&next)
                || !seen.insert(next)
            {
                break false;
            }
            walked.push(next);
            at = next;
        };
        if !reached {
            check.extend(walked.iter().copied());
            if from != g.infimum {
                check.insert(from);
            }
        }
        out.extend(walked);
        if to != g.supremum {
            out.push(to);
        }
    }
    Some((out, check))
}

/// The user records of clustered-index leaf page `p` of the table `def` in the tablespace `space` (read from
/// its page 0), in page order; externally stored columns are read from the same tablespace's `pages`. `Err`
/// is the one sentence saying why the page is not read at all.
pub fn parse_leaf(
    def: &TableDef,
    space: &Space,
    pages: &dyn PageReader,
    p: &[u8],
) -> Result<Leaf, String> {
    let (origins, problems, check_next) = list_of(def, space, p)?;
    let mut scratch = Scratch::new();
    let lay = layout(def);
    let mut parsed: Vec<Parsed> = origins
        .iter()
        .map(|&at| parse_record((def, &lay), Some((space, pages)), p, at, &mut scratch))
        .collect();
    // A record whose next-record offset may be what was overwritten: kept only when the record after it in
    // the list is one (its own offset's bytes are the 2 just before its data).
    for i in 0..parsed.len() {
        if check_next.contains(&parsed[i].origin)
            && parsed.get(i + 1).is_none_or(|n| n.reason.is_some())
        {
            parsed[i].reject("its next-record offset is broken");
        }
    }
    let order_complete = check_order(def, p, &mut parsed);
    check_neighbours(def, p, &mut parsed);
    Ok(Leaf {
        records: parsed.into_iter().map(Parsed::into_record).collect(),
        checksum_ok: space.checksum_ok(p),
        problems,
        order_complete,
    })
}

/// The page's records in list order, the page-level findings, and the records whose next-record offset is in
/// doubt; `Err` when the page is not read at all.
pub(super) type List = (Vec<usize>, Vec<String>, std::collections::HashSet<usize>);

pub(super) fn list_of(def: &TableDef, space: &Space, p: &[u8]) -> Result<List, String> {
    if let Some(why) = refusal(def, space, p) {
        return Err(why);
    }
    let g = Geometry::of(def);
    let (mut origins, broken) = walk(g, p);
    let mut problems: Vec<String> = broken.iter().cloned().collect();
    let counted = usize::from(be16(p, N_RECS));
    // Records whose next-record offset is in doubt: rejected unless the record after them proves itself.
    let mut check_next: std::collections::HashSet<usize> = origins
        .last()
        .filter(|_| broken.is_some())
        .into_iter()
        .copied()
        .collect();
    if broken.is_some() || origins.len() != counted {
        if broken.is_none() {
            problems.push(format!(
                "the page header counts {counted} records, the record list holds {}",
                origins.len()
            ));
        }
        if let Some((o, check)) = directory_walk(g, p) {
            problems.push(format!(
                "the record list was walked again from each of the page directory's {} owner records, past the break",
                be16(p, PAGE_HEADER)
            ));
            origins = o;
            check_next = check;
        }
    }
    let leftmost = p[8..12] == NO_PAGE.to_be_bytes();
    for (i, &at) in origins.iter().enumerate() {
        let info = g.info(p, at)?;
        if info & MIN_REC != 0 && i == 0 && leftmost {
            return Err("the first record is the metadata record of an instant ALTER TABLE, which is not read yet".into());
        }
    }
    Ok((origins, problems, check_next))
}

/// A record on its way: its key's bytes (for the order check) and values, and the outcome so far.
pub(super) struct Parsed {
    origin: usize,
    /// Where its key's fields lie in the page (start, length), for the order check.
    key_bytes: Option<Vec<(usize, usize)>>,
    pub(super) key: Option<Vec<Value>>,
    row: Option<Row>,
    pub(super) reason: Option<String>,
    /// From its first header byte to its last data byte, once its fields are found.
    extent: Option<(usize, usize)>,
    /// Its bytes all decoded (it may still be delete-marked or out of order): its start is a record's start.
    whole: bool,
}

impl Parsed {
    fn reject(&mut self, why: &str) {
        self.reason.get_or_insert_with(|| why.to_string());
    }

    fn into_record(self) -> Record {
        let outcome = match (self.reason, self.row) {
            (None, Some(row)) => Outcome::Row(row),
            (reason, _) => Outcome::Rejected {
                reason: reason.unwrap_or_else(|| "no row was read".into()),
                key: self.key,
            },
        };
        Record {
            origin: self.origin,
            outcome,
        }
    }
}

/// One field of the record: where its bytes are, or that it is NULL, or stored externally.
#[derive(Debug, Clone, Copy)]
pub(super) struct Field {
    pub(super) start: usize,
    pub(super) len: usize,
    pub(super) null: bool,
    pub(super) external: bool,
}

/// The index's fields in record order: `Some(column)` for a column, `None` for the hidden ones (row id, trx id,
/// roll pointer), with their fixed lengths.
pub(super) fn layout(def: &TableDef) -> Vec<(Option<usize>, usize)> {
    let mut out = Vec::new();
    if def.key.is_empty() {
        out.push((None, 6));
    }
    out.extend(def.key.iter().map(|&k| (Some(k), 0)));
    out.push((None, 6));
    out.push((None, 7));
    out.extend(
        (0..def.columns.len())
            .filter(|c| !def.key.contains(c))
            .map(|c| (Some(c), 0)),
    );
    out
}

/// Where each field of the record lies, and the record's extent in the page (from its first length byte to
/// the end of its last field), in the table's row format.
/// `lay` is [`layout`]`(def)`, computed once per page by the caller rather than once per record.
/// The fields go into `out` (cleared first): one buffer serves every record of a page.
fn fields(
    (def, lay): (&TableDef, &[(Option<usize>, usize)]),
    p: &[u8],
    origin: usize,
    out: &mut Vec<Field>,
) -> Result<(usize, usize), String> {
    out.clear();
    if def.format == RowFormat::Redundant {
        redundant::fields((def, lay), p, origin, out)
    } else {
        compact_fields((def, lay), p, origin, out)
    }
}

/// A COMPACT record's header, NULL bitmap and lengths read: where each field lies, and its extent.
fn compact_fields(
    (def, lay): (&TableDef, &[(Option<usize>, usize)]),
    p: &[u8],
    origin: usize,
    out: &mut Vec<Field>,
) -> Result<(usize, usize), String> {
    let heap_top = usize::from(be16(p, HEAP_TOP));
    let n_nullable = lay
        .iter()
        .filter(|(c, _)| c.is_some_and(|c| def.columns[c].nullable))
        .count();
    let null_bytes = n_nullable.div_ceil(8);
    let nulls_end = origin - 5;
    let mut lens_at = nulls_end
        .checked_sub(null_bytes + 1)
        .ok_or("the record's NULL bitmap starts before the page's records")?;
    let bitmap = get(p, nulls_end - null_bytes, null_bytes)?;
    let is_null = |i: usize| bitmap[null_bytes - 1 - i / 8] >> (i % 8) & 1 == 1;
    if n_nullable % 8 != 0 && bitmap[0] >> (n_nullable % 8) != 0 {
        return Err("the NULL bitmap has bits set past the nullable columns".into());
    }
    let (mut at, mut nullable_i) = (origin, 0);
    let next_len = |lens_at: &mut usize| -> Result<u8, String> {
        if *lens_at < RECORDS_START {
            return Err("the record's lengths run before the page's records".into());
        }
        let b = byte(p, *lens_at)?;
        *lens_at -= 1;
        Ok(b)
    };
    for &(col, hidden_len) in lay {
        let Some(c) = col else {
            out.push(Field {
                start: at,
                len: hidden_len,
                null: false,
                external: false,
            });
            at += hidden_len;
            continue;
        };
        let column = &def.columns[c];
        if column.nullable {
            nullable_i += 1;
            if is_null(nullable_i - 1) {
                out.push(Field {
                    start: at,
                    len: 0,
                    null: true,
                    external: false,
                });
                continue;
            }
        }
        let (len, external) = match value::fixed_len(&column.ty) {
            Some(n) => (n, false),
            None => {
                let first = next_len(&mut lens_at)?;
                if value::long_len(&column.ty) && first & 0x80 != 0 {
                    let second = next_len(&mut lens_at)?;
                    (
                        usize::from(first & 0x3F) << 8 | usize::from(second),
                        first & 0x40 != 0,
                    )
                } else {
                    (usize::from(first), false)
                }
            }
        };
        out.push(Field {
            start: at,
            len,
            null: false,
            external,
        });
        at += len;
    }
    if at > heap_top || at > PAGE - 8 {
        return Err(format!(
            "the record's fields end at {at}, past the page's heap"
        ));
    }
    Ok((lens_at + 1, at))
}

/// The record's header checked and its fields found (into `scratch.fields`): its extent, or why not.
fn located(
    (def, lay): (&TableDef, &[(Option<usize>, usize)]),
    p: &[u8],
    origin: usize,
    scratch: &mut Scratch,
) -> Result<(usize, usize), String> {
    if def.format == RowFormat::Redundant {
        redundant::header(p, origin, &mut scratch.heaps)?;
    } else {
        header(p, origin, &mut scratch.heaps)?;
    }
    fields((def, lay), p, origin, &mut scratch.fields)
}

/// One record: header checks, then each field decoded, externally stored ones followed through `pages`; with
/// `None` for them, only up to its key (no row: [`super::keys::leaf_keys`]).
pub(super) fn parse_record(
    (def, lay): (&TableDef, &[(Option<usize>, usize)]),
    read: Option<(&Space, &dyn PageReader)>,
    p: &[u8],
    origin: usize,
    scratch: &mut Scratch,
) -> Parsed {
    let mut r = Parsed {
        extent: None,
        whole: false,
        origin,
        key_bytes: None,
        key: None,
        row: None,
        reason: None,
    };
    match located((def, lay), p, origin, scratch) {
        Ok(extent) => r.extent = Some(extent),
        Err(why) => {
            r.reject(&why);
            return r;
        }
    }
    let fs = &scratch.fields;
    // Read for its key alone, a record fills no row: its key's values are all it keeps.
    let mut values = match read {
        Some(_) => vec![Value::Null; def.columns.len()],
        None => Vec::new(),
    };
    let mut key = Vec::with_capacity(def.key.len());
    let mut trx_id = 0;
    let space = u32::from_be_bytes([
        p[SPACE_ID],
        p[SPACE_ID + 1],
        p[SPACE_ID + 2],
        p[SPACE_ID + 3],
    ]);
    let n_key = if def.key.is_empty() { 1 } else { def.key.len() };
    for (i, (f, (col, _))) in fs.iter().zip(lay).enumerate() {
        if read.is_none() && i == n_key {
            break;
        }
        let bytes = match get(p, f.start, f.len) {
            Ok(b) => b,
            Err(why) => {
                r.reject(&why);
                return r;
            }
        };
        if i == n_key {
            trx_id = bytes.iter().fold(0u64, |v, &x| v << 8 | u64::from(x));
        }
        if i == n_key - 1 && (read.is_some() || def.key.is_empty()) {
            r.key_bytes = Some(key_bytes(p, &fs[..n_key]));
        }
        let Some(c) = *col else { continue };
        let ty = &def.columns[c].ty;
        let v = if f.null {
            Ok(Value::Null)
        } else if f.external {
            let Some((file, pages)) = read else {
                // Never a key column in InnoDB; `leaf_keys`'s callers parse a page with a keyless record whole.
                r.reject("an externally stored key column, read only by the whole parse");
                return r;
            };
            match external(def, ty, bytes, space).map(|e| (blob::follow(file, pages, &e), e)) {
                Ok((Ok(rest), e)) => decode(def, ty, &[e.prefix, rest].concat()),
                Ok((Err(why), _)) => {
                    let name = &def.columns[c].name;
                    r.reject(&format!(
                        "its externally stored column `{name}` is incomplete: {why}"
                    ));
                    // Its own bytes on this page go on being checked: when they all decode, it is a record's
                    // start and end for its neighbours (a broken BLOB chain is not an overwritten page).
                    continue;
                }
                Err(why) => Err(why),
            }
        } else {
            decode(def, ty, bytes)
        };
        // The key's columns come first in the record, in the key's order.
        match v {
            Ok(v) if i < n_key => {
                if read.is_some() {
                    values[c] = v.clone();
                }
                key.push(v);
            }
            Ok(v) => values[c] = v,
            Err(why) => {
                r.reject(&format!("column {}: {why}", def.columns[c].name));
                return r;
            }
        }
        if i == n_key - 1 {
            r.key = Some(std::mem::take(&mut key));
        }
    }
    if let (true, Some(kb)) = (def.key.is_empty(), &r.key_bytes) {
        // The hidden row id (DB_ROW_ID) is the key.
        let id = get(p, kb[0].0, kb[0].1).unwrap_or_default();
        r.key = Some(vec![Value::Uint(
            id.iter().fold(0, |v, &x| v << 8 | u64::from(x)),
        )]);
    }
    if read.is_none() {
        return r;
    }
    if Geometry::of(def).info(p, origin).unwrap_or(0) & DELETED != 0 {
        r.reject("the record is delete-marked (deleted, waiting for purge)");
    }
    r.whole = true;
    r.row = Some(Row { values, trx_id });
    r
}

/// Reject every record whose last byte is not followed by the first byte of another whole record (on the list
/// or the free list) or by the heap's end — unless the heap's bytes are all accounted for: the whole records,
/// the free list and the holes InnoDB counts in `PAGE_GARBAGE` (a record inserted into a larger freed slot
/// leaves one) add up to the heap exactly. When they do not, some bytes are not what InnoDB wrote, and a record
/// followed by them may have had its own tail overwritten with bytes that still decode (a latin1 string, an
/// integer); it is rejected, conservatively.
fn check_neighbours(def: &TableDef, p: &[u8], recs: &mut [Parsed]) {
    let g = Geometry::of(def);
    let heap_top = usize::from(be16(p, HEAP_TOP));
    let mut spans: Vec<(usize, usize)> = recs
        .iter()
        .filter(|r| r.whole)
        .filter_map(|r| r.extent)
        .collect();
    // The free list (PAGE_FREE): records deleted and purged, still in the heap.
    let mut free_bytes = 0;
    let mut at = usize::from(be16(p, PAGE_HEADER + 6));
    let mut seen = 0;
    let lay = layout(def);
    while (g.start + g.extra..PAGE - 8).contains(&at) && seen < PAGE / 5 {
        seen += 1;
        let Ok(extent) = fields((def, &lay), p, at, &mut Vec::new()) else {
            break;
        };
        spans.push(extent);
        free_bytes += extent.1 - extent.0;
        // The list's end: a zero offset (COMPACT: relative to the record; REDUNDANT: the absolute 0).
        let next = g.next(p, at);
        if next == at || next == 0 {
            break;
        }
        at = next;
    }
    spans.sort_unstable();
    let apart = spans.windows(2).all(|w| w[0].1 <= w[1].0);
    let covered: usize = spans.iter().map(|s| s.1 - s.0).sum();
    let inside = spans.iter().all(|s| s.0 >= g.start && s.1 <= heap_top);
    let garbage = usize::from(be16(p, PAGE_HEADER + 8));
    let holes = heap_top.saturating_sub(g.start + covered);
    if apart && inside && holes + free_bytes == garbage {
        return;
    }
    let mut starts: std::collections::HashSet<usize> = spans.iter().map(|s| s.0).collect();
    starts.insert(heap_top);
    for r in recs.iter_mut() {
        if let Some((_, end)) = r.extent {
            if !starts.contains(&end) {
                r.reject("the bytes after it do not start another record: the page may be overwritten there");
            }
        }
    }
}

/// The header's checks: info bits, status, heap number.
fn header(p: &[u8], origin: usize, heaps: &mut Marks) -> Result<(), String> {
    let h = get(p, origin - 5, 5)?;
    let info = h[0] & 0xF0;
    if info & !(DELETED | MIN_REC) != 0 {
        return Err(format!("info bits {info:#x} that no record has"));
    }
    if info & MIN_REC != 0 {
        return Err("the minimum-record flag on a leaf record that is not the page's first".into());
    }
    let status = h[2] & 7;
    if status == STATUS_INSTANT {
        return Err("an instant ADD COLUMN record, which is not read yet".into());
    }
    if status != 0 {
        return Err(format!(
            "record status {status}, not an ordinary leaf record"
        ));
    }
    heap_number(p, u16::from_be_bytes([h[1], h[2]]) >> 3, heaps)
}

/// The heap number's checks: one of the page's heap (past the infimum and supremum), and no other record's.
pub(super) fn heap_number(p: &[u8], heap: u16, heaps: &mut Marks) -> Result<(), String> {
    let n_heap = be16(p, N_HEAP) & 0x7FFF;
    if heap < 2 || heap >= n_heap {
        return Err(format!(
            "heap number {heap} outside the page's heap of {n_heap}"
        ));
    }
    if !heaps.insert(usize::from(heap)) {
        return Err(format!("heap number {heap} belongs to another record too"));
    }
    Ok(())
}

/// An externally stored column's reference, checked against the row format and the page's tablespace.
fn external(def: &TableDef, ty: &ColType, local: &[u8], space: u32) -> Result<Extern, String> {
    if !value::long_len(ty) {
        return Err("stored externally, which a column of at most 255 bytes never is".into());
    }
    let prefix = if matches!(def.format, RowFormat::Compact | RowFormat::Redundant) {
        COMPACT_PREFIX
    } else {
        0
    };
    let e = value::external(local, prefix)?;
    if e.space != space {
        return Err(format!(
            "its BLOB reference names tablespace {}, the page is in {space}",
            e.space
        ));
    }
    if e.page < 3 || e.page == NO_PAGE || e.len == 0 {
        return Err(format!(
            "its BLOB reference (page {}, {} bytes) cannot be one",
            e.page, e.len
        ));
    }
    if e.len + e.prefix.len() as u64 > value::max_len(ty) {
        return Err("its stored length is longer than the column".into());
    }
    Ok(e)
}

/// A value stored in the record, in the table's row format (a REDUNDANT CHAR keeps its full byte length).
fn decode(def: &TableDef, ty: &ColType, b: &[u8]) -> Result<Value, String> {
    if def.format == RowFormat::Redundant {
        redundant::decode(ty, b)
    } else {
        value::decode(ty, b)
    }
}

/// The key's bytes, one entry per key field (empty when a field is outside the page).
/// Where the key's fields lie: each field's start and length when its bytes are inside the page, else an
/// empty field (as the bytes were read before).
fn key_bytes(p: &[u8], fs: &[Field]) -> Vec<(usize, usize)> {
    fs.iter()
        .map(|f| match get(p, f.start, f.len) {
            Ok(_) => (f.start, f.len),
            Err(_) => (0, 0),
        })
        .collect()
}

/// Compare two keys on their leading columns that order by bytes; `complete` is false when a column that does
/// not (a collated string) was reached.
fn cmp_keys(
    def: &TableDef,
    p: &[u8],
    a: &[(usize, usize)],
    b: &[(usize, usize)],
) -> (Ordering, bool) {
    let bytes = |(at, len): (usize, usize)| &p[at..at + len];
    for i in 0..def.key.len().max(1) {
        let ty = def.key.get(i).map(|&k| &def.columns[k].ty);
        let (x, y) = (bytes(a[i]), bytes(b[i]));
        let o = match ty {
            Some(ColType::Float { .. }) | Some(ColType::Double { .. }) => {
                let f = |v: &[u8]| match v.len() {
                    4 => v
                        .try_into()
                        .map(|b| f64::from(f32::from_le_bytes(b)))
                        .unwrap_or(f64::NAN),
                    _ => v.try_into().map(f64::from_le_bytes).unwrap_or(f64::NAN),
                };
                f(x).partial_cmp(&f(y)).unwrap_or(Ordering::Equal)
            }
            Some(ColType::Char { .. } | ColType::Varchar { .. } | ColType::Blob { .. }) => {
                if !def.columns[def.key[i]].byte_order {
                    return (Ordering::Equal, false);
                }
                let trim = |v: &[u8]| v.len() - v.iter().rev().take_while(|&&c| c == b' ').count();
                x[..trim(x)].cmp(&y[..trim(y)])
            }
            _ => x.cmp(y),
        };
        if o != Ordering::Equal {
            return (o, true);
        }
    }
    (Ordering::Equal, true)
}

/// Reject every record whose key is not in every longest ascending run of the page's keys: a record out of
/// order, and, where two records could each be the one out of order, both. Returns whether the order was
/// checked on the whole key.
fn check_order(def: &TableDef, p: &[u8], recs: &mut [Parsed]) -> bool {
    let idx: Vec<usize> = (0..recs.len())
        .filter(|&i| recs[i].key_bytes.is_some() && recs[i].reason.is_none())
        .collect();
    let key = |i: usize| recs[idx[i]].key_bytes.as_deref().unwrap_or_default();
    let n = idx.len();
    // Each key below the next, compared on whole byte-ordered columns: then every key is below every later
    // one (the order is transitive, and each comparison was decided on columns all ordered by bytes), so the
    // one longest run is all of them and nothing is rejected. A page as InnoDB wrote it is checked in
    // n - 1 comparisons instead of n².
    if (1..n).all(|i| cmp_keys(def, p, key(i - 1), key(i)) == (Ordering::Less, true)) {
        return true;
    }
    let mut complete = true;
    let mut before = |i: usize, j: usize| {
        let (o, whole) = cmp_keys(def, p, key(i), key(j));
        complete &= whole;
        o == Ordering::Less || (!whole && o == Ordering::Equal)
    };
    // Longest ascending run ending at i (f) and starting at i (g).
    let (mut f, mut g) = (vec![1usize; n], vec![1usize; n]);
    for i in 0..n {
        for j in 0..i {
            if before(j, i) {
                f[i] = f[i].max(f[j] + 1);
            }
        }
    }
    for i in (0..n).rev() {
        for j in i + 1..n {
            if before(i, j) {
                g[i] = g[i].max(g[j] + 1);
            }
        }
    }
    let best = (0..n).map(|i| f[i] + g[i] - 1).max().unwrap_or(0);
    let on_some: Vec<bool> = (0..n).map(|i| f[i] + g[i] - 1 == best).collect();
    for i in 0..n {
        let shared = (0..n).any(|j| j != i && on_some[j] && f[j] == f[i]);
        if !on_some[i] || shared {
            recs[idx[i]].reject("its key is out of order with the page's other records");
        }
    }
    complete
}

#[cfg(test)]
#[path = "record_tests.rs"]
pub(crate) mod tests;
