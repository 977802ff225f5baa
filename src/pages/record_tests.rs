//! Unit tests of [`super`]: pages laid out here as InnoDB lays COMPACT records out.

use super::*;
use crate::pages::def::{Charset, ColumnDef};
use crate::pages::page::crc32c;

/// id INT key, a VARCHAR(300) utf8mb4 NULL (lengths above 127 take two bytes), b INT NULL.
pub(crate) fn def() -> TableDef {
    let col = |name: &str, ty, nullable| ColumnDef {
        name: name.into(),
        ty,
        nullable,
        byte_order: true,
    };
    TableDef {
        columns: vec![
            col(
                "id",
                ColType::Int {
                    bytes: 4,
                    unsigned: false,
                },
                false,
            ),
            col(
                "a",
                ColType::Varchar {
                    chars: 300,
                    charset: Charset::Utf8mb4,
                },
                true,
            ),
            col(
                "b",
                ColType::Int {
                    bytes: 4,
                    unsigned: false,
                },
                true,
            ),
        ],
        key: vec![0],
        format: RowFormat::Dynamic,
    }
}

/// A 16 KiB full_crc32 tablespace, as MariaDB 10.5+ creates one.
pub(crate) const FCRC32: Space = Space {
    id: 0,
    flags: 0x15,
    full_crc32: true,
    page_size: PAGE,
    page_compressed: false,
    zip_size: None,
    crypt: None,
};

/// The test pages hold no externally stored column.
const NO_PAGES: crate::pages::blob::InMemory = crate::pages::blob::InMemory {
    data: &[],
    page_size: PAGE,
};

pub(crate) type Input = (i32, Option<String>, Option<i32>);

fn int(v: i32) -> [u8; 4] {
    (v as u32 ^ 0x8000_0000).to_be_bytes()
}

/// A leaf page holding `rows` in key order, laid out as InnoDB lays COMPACT records out; `info` ORed into
/// every record's info bits.
pub(crate) fn page(rows: &[Input], info: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; PAGE];
    p[8..12].copy_from_slice(&NO_PAGE.to_be_bytes());
    p[24..26].copy_from_slice(&INDEX_PAGE.to_be_bytes());
    p[N_HEAP..N_HEAP + 2].copy_from_slice(&(0x8000 | (rows.len() as u16 + 2)).to_be_bytes());
    p[N_RECS..N_RECS + 2].copy_from_slice(&(rows.len() as u16).to_be_bytes());
    p[INFIMUM..INFIMUM + 8].copy_from_slice(b"infimum\0");
    p[SUPREMUM..SUPREMUM + 8].copy_from_slice(b"supremum");
    let (mut at, mut prev) = (RECORDS_START, INFIMUM);
    let mut owners = vec![INFIMUM];
    for (i, (id, a, b)) in rows.iter().enumerate() {
        let mut extra = Vec::new();
        if let Some(a) = a {
            let n = a.len();
            if n > 127 {
                extra.extend([(n & 0xFF) as u8, 0x80 | (n >> 8) as u8]);
            } else {
                extra.push(n as u8);
            }
        }
        extra.push(u8::from(a.is_none()) | u8::from(b.is_none()) << 1);
        let heap = (i + 2) as u16;
        // Every fourth record owns itself and the three before it in the page directory.
        let owned = if i % 4 == 3 { 4 } else { 0 };
        extra.extend([
            info.get(i).copied().unwrap_or(0) | owned,
            (heap >> 5) as u8,
            (heap << 3) as u8,
            0,
            0,
        ]);
        let origin = at + extra.len();
        p[at..origin].copy_from_slice(&extra);
        let mut data = int(*id).to_vec();
        data.extend([0, 0, 0, 0, 0, 9, 0x80, 0, 0, 0, 0, 0, 0]);
        data.extend(a.as_deref().unwrap_or("").as_bytes());
        if let Some(b) = b {
            data.extend(int(*b));
        }
        p[origin..origin + data.len()].copy_from_slice(&data);
        let off = (origin as i64 - prev as i64) as i16;
        p[prev - 2..prev].copy_from_slice(&off.to_be_bytes());
        prev = origin;
        at = origin + data.len();
        if owned > 0 {
            owners.push(origin);
        }
    }
    owners.push(SUPREMUM);
    page_directory(&mut p, &owners);
    let off = (SUPREMUM as i64 - prev as i64) as i16;
    p[prev - 2..prev].copy_from_slice(&off.to_be_bytes());
    p[HEAP_TOP..HEAP_TOP + 2].copy_from_slice(&(at as u16).to_be_bytes());
    let sum = crc32c(&p[..PAGE - 4]);
    p[PAGE - 4..].copy_from_slice(&sum.to_be_bytes());
    p
}

/// The same table in ROW_FORMAT=REDUNDANT.
pub(crate) fn redundant_def() -> TableDef {
    TableDef {
        format: RowFormat::Redundant,
        ..def()
    }
}

/// A leaf page holding `rows` as InnoDB lays REDUNDANT records out: every field in the record (a NULL INT as 4
/// zero bytes, a NULL VARCHAR as none), its end offset before the 6-byte header, 1 byte each when the data
/// fits in 127 bytes, else 2; next-record offsets absolute.
pub(crate) fn redundant_page(rows: &[Input], info: &[u8]) -> Vec<u8> {
    use super::redundant::{INFIMUM, RECORDS_START, SUPREMUM};
    let mut p = vec![0u8; PAGE];
    p[8..12].copy_from_slice(&NO_PAGE.to_be_bytes());
    p[24..26].copy_from_slice(&INDEX_PAGE.to_be_bytes());
    p[N_HEAP..N_HEAP + 2].copy_from_slice(&(rows.len() as u16 + 2).to_be_bytes());
    p[N_RECS..N_RECS + 2].copy_from_slice(&(rows.len() as u16).to_be_bytes());
    p[INFIMUM..INFIMUM + 8].copy_from_slice(b"infimum\0");
    p[SUPREMUM..SUPREMUM + 9].copy_from_slice(b"supremum\0");
    let (mut at, mut prev) = (RECORDS_START, INFIMUM);
    let mut owners = vec![INFIMUM];
    for (i, (id, a, b)) in rows.iter().enumerate() {
        let mut data = int(*id).to_vec();
        data.extend([0, 0, 0, 0, 0, 9, 0x80, 0, 0, 0, 0, 0, 0]);
        data.extend(a.as_deref().unwrap_or("").as_bytes());
        let a_end = data.len();
        data.extend(b.map_or([0; 4], int));
        // (end, NULL) per field: id, trx id, roll pointer, a, b.
        let ends = [
            (4, false),
            (10, false),
            (17, false),
            (a_end, a.is_none()),
            (data.len(), b.is_none()),
        ];
        let short = data.len() <= 127;
        let mut offs = Vec::new();
        for &(end, null) in ends.iter().rev() {
            if short {
                offs.push(end as u8 | u8::from(null) << 7);
            } else {
                offs.extend((end as u16 | u16::from(null) << 15).to_be_bytes());
            }
        }
        let heap = ((i + 2) as u16) << 3;
        let owned = if i % 4 == 3 { 4 } else { 0 };
        offs.extend([
            info.get(i).copied().unwrap_or(0) | owned,
            (heap >> 8) as u8,
            heap as u8 | (ends.len() >> 7) as u8,
            (ends.len() << 1) as u8 | u8::from(short),
            0,
            0,
        ]);
        let origin = at + offs.len();
        p[at..origin].copy_from_slice(&offs);
        p[origin..origin + data.len()].copy_from_slice(&data);
        p[prev - 2..prev].copy_from_slice(&(origin as u16).to_be_bytes());
        prev = origin;
        at = origin + data.len();
        if owned > 0 {
            owners.push(origin);
        }
    }
    owners.push(SUPREMUM);
    page_directory(&mut p, &owners);
    p[prev - 2..prev].copy_from_slice(&(SUPREMUM as u16).to_be_bytes());
    p[HEAP_TOP..HEAP_TOP + 2].copy_from_slice(&(at as u16).to_be_bytes());
    let sum = crc32c(&p[..PAGE - 4]);
    p[PAGE - 4..].copy_from_slice(&sum.to_be_bytes());
    p
}

fn inputs() -> Vec<Input> {
    (0..40)
        .map(|i| {
            let a = match i % 4 {
                0 => None,
                1 => Some(String::new()),
                2 => Some("ü".repeat(20 + i as usize * 3)),
                _ => Some(format!("row {i} é")),
            };
            (i * 10 - 100, a, (i % 3 != 0).then_some(i * 1000 - 7))
        })
        .collect()
}

fn want(r: &Input) -> Vec<Value> {
    vec![
        Value::Int(i64::from(r.0)),
        r.1.clone().map_or(Value::Null, Value::Text),
        r.2.map_or(Value::Null, |b| Value::Int(i64::from(b))),
    ]
}

fn rows_of(leaf: &Leaf) -> Vec<&Row> {
    leaf.records
        .iter()
        .filter_map(|r| match &r.outcome {
            Outcome::Row(row) => Some(row),
            Outcome::Rejected { .. } => None,
        })
        .collect()
}

#[test]
fn nulls_lengths_and_values_come_back_as_written() {
    let rows = inputs();
    let leaf = parse_leaf(&def(), &FCRC32, &NO_PAGES, &page(&rows, &[])).unwrap();
    assert!(
        leaf.checksum_ok && leaf.problems.is_empty() && leaf.order_complete,
        "{leaf:?}"
    );
    let got: Vec<Vec<Value>> = rows_of(&leaf).iter().map(|r| r.values.clone()).collect();
    let expected: Vec<Vec<Value>> = rows.iter().map(want).collect();
    assert_eq!(got, expected);
    assert!(rows_of(&leaf).iter().all(|r| r.trx_id == 9));
}

#[test]
fn delete_marks_instant_records_and_the_metadata_record_are_not_rows() {
    let rows = inputs();
    let leaf = parse_leaf(&def(), &FCRC32, &NO_PAGES, &page(&rows, &[0, DELETED])).unwrap();
    match &leaf.records[1].outcome {
        Outcome::Rejected { reason, key } => {
            assert!(reason.contains("delete-marked"), "{reason}");
            assert_eq!(key.as_deref(), Some(&[Value::Int(-90)][..]));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(rows_of(&leaf).len(), rows.len() - 1);
    assert!(
        parse_leaf(&def(), &FCRC32, &NO_PAGES, &page(&rows, &[MIN_REC]))
            .unwrap_err()
            .contains("metadata record")
    );
    let mut p = page(&rows, &[]);
    let first = usize::from(be16(&p, INFIMUM - 2)) + INFIMUM;
    p[first - 3] |= STATUS_INSTANT;
    let leaf = parse_leaf(&def(), &FCRC32, &NO_PAGES, &p).unwrap();
    assert!(
        matches!(&leaf.records[0].outcome, Outcome::Rejected { reason, .. } if reason.contains("instant"))
    );
    let mut redundant = page(&rows, &[]);
    redundant[N_HEAP] &= 0x7F;
    assert!(parse_leaf(&def(), &FCRC32, &NO_PAGES, &redundant)
        .unwrap_err()
        .contains("REDUNDANT"));
}

/// Random bytes over a stretch of the record area, many times: never a panic, never a row that was not
/// written, and the damage seen.
#[test]
fn garbage_in_the_record_area_gives_rejected_records_never_a_wrong_row() {
    let rows = inputs();
    garbage_never_gives_a_wrong_row(&def(), &page(&rows, &[]), RECORDS_START);
    garbage_never_gives_a_wrong_row(
        &redundant_def(),
        &redundant_page(&rows, &[]),
        super::redundant::RECORDS_START,
    );
}

/// Random bytes over stretches of `good`'s records (from `start`, where the format's records start).
fn garbage_never_gives_a_wrong_row(def: &TableDef, good: &[u8], start: usize) {
    let rows = inputs();
    let heap_top = usize::from(be16(good, HEAP_TOP));
    let written: std::collections::HashMap<i64, Vec<Value>> =
        rows.iter().map(|r| (i64::from(r.0), want(r))).collect();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..400 {
        let mut p = good.to_vec();
        let len = 64 + (rand() % 448) as usize;
        let from = start + (rand() as usize % (heap_top - start - 64));
        for b in &mut p[from..(from + len).min(heap_top)] {
            *b = rand() as u8;
        }
        let Ok(leaf) = parse_leaf(def, &FCRC32, &NO_PAGES, &p) else {
            continue;
        };
        let seen = leaf.problems.len()
            + leaf
                .records
                .iter()
                .filter(|r| matches!(r.outcome, Outcome::Rejected { .. }))
                .count();
        assert!(
            seen > 0,
            "bytes {from}..{} overwritten and nothing rejected",
            from + len
        );
        for row in rows_of(&leaf) {
            let Value::Int(id) = row.values[0] else {
                panic!("{row:?}")
            };
            assert_eq!(
                written.get(&id),
                Some(&row.values),
                "a wrong row after {from}..{}",
                from + len
            );
        }
    }
}

/// A next-record offset overwritten in the middle of the page: the walk from the infimum breaks there, and the
/// page directory's owners lead past it, so only the records of the broken stretch are lost, each rejected,
/// and every row returned is one written.
#[test]
fn a_broken_record_list_is_walked_on_from_the_page_directory() {
    let rows = inputs();
    walked_past_breaks(&def(), &page(&rows, &[]));
    walked_past_breaks(&redundant_def(), &redundant_page(&rows, &[]));
}

/// [`a_broken_record_list_is_walked_on_from_the_page_directory`] for one format's whole page `good`.
fn walked_past_breaks(def: &TableDef, good: &[u8]) {
    let rows = inputs();
    let origins: Vec<usize> = parse_leaf(def, &FCRC32, &NO_PAGES, good)
        .unwrap()
        .records
        .iter()
        .map(|r| r.origin)
        .collect();
    for broken in [0, 9, 10, 21, 38] {
        let mut p = good.to_vec();
        let at = origins[broken];
        // 16 bytes back, inside the record itself: relative in COMPACT, absolute in REDUNDANT.
        let off = if def.format == RowFormat::Redundant {
            at as u16 - 16
        } else {
            0x7FF0
        };
        p[at - 2..at].copy_from_slice(&off.to_be_bytes());
        let leaf = parse_leaf(def, &FCRC32, &NO_PAGES, &p).unwrap();
        assert!(!leaf.problems.is_empty());
        let got: Vec<i64> = rows_of(&leaf)
            .iter()
            .map(|r| match r.values[0] {
                Value::Int(id) => id,
                _ => panic!("{r:?}"),
            })
            .collect();
        for row in rows_of(&leaf) {
            let i = rows
                .iter()
                .position(|r| Value::Int(i64::from(r.0)) == row.values[0])
                .unwrap();
            assert_eq!(row.values, want(&rows[i]));
        }
        // Lost: the record with the broken offset and the rest of its owner's stretch (records up to the next
        // owner, every fourth), nothing more.
        let next_owner = (broken / 4) * 4 + 3;
        let lost: Vec<i64> = rows
            .iter()
            .enumerate()
            .filter(|(i, _)| *i >= broken && *i < next_owner)
            .map(|(_, r)| i64::from(r.0))
            .collect();
        let want_ids: Vec<i64> = rows
            .iter()
            .map(|r| i64::from(r.0))
            .filter(|id| !lost.contains(id))
            .collect();
        assert_eq!(got, want_ids, "offset of record {broken} broken");
    }
}

/// The key-only read (`leaf_keys`, what the page pass reads of the pages outside the lost ranges) gives each
/// record the key the whole parse gives it, and no key where it gives none, on whole, delete-marked,
/// overwritten and broken pages alike: the page pass decides from those keys which pages to parse whole.
#[test]
fn the_key_only_read_gives_the_whole_parses_keys() {
    let rows = inputs();
    let deleted = [0, DELETED, 0, DELETED];
    keys_agree(
        &def(),
        vec![page(&rows, &[]), page(&rows, &deleted)],
        RECORDS_START,
    );
    keys_agree(
        &redundant_def(),
        vec![redundant_page(&rows, &[]), redundant_page(&rows, &deleted)],
        super::redundant::RECORDS_START,
    );
}

/// [`the_key_only_read_gives_the_whole_parses_keys`] for one format: `pages` a whole page and a delete-marked
/// one, to which broken and overwritten copies of the whole one are added.
fn keys_agree(def: &TableDef, mut pages: Vec<Vec<u8>>, start: usize) {
    let good = pages[0].clone();
    let heap_top = usize::from(be16(&good, HEAP_TOP));
    let origins: Vec<usize> = parse_leaf(def, &FCRC32, &NO_PAGES, &good)
        .unwrap()
        .records
        .iter()
        .map(|r| r.origin)
        .collect();
    for broken in [0, 10, 38] {
        let mut p = good.clone();
        p[origins[broken] - 2..origins[broken]].copy_from_slice(&0x3FF0u16.to_be_bytes());
        pages.push(p);
    }
    let mut seed = 0x2545_F491_4F6C_DD1Du64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..300 {
        let mut p = good.clone();
        let len = 16 + (rand() % 512) as usize;
        let from = start + (rand() as usize % (heap_top - start - 16));
        for b in &mut p[from..(from + len).min(heap_top)] {
            *b = rand() as u8;
        }
        pages.push(p);
    }
    let (mut keyless, mut rejected_with_key) = (0, 0);
    for p in &pages {
        let (whole, keys) = (
            parse_leaf(def, &FCRC32, &NO_PAGES, p),
            crate::pages::leaf_keys(def, &FCRC32, p),
        );
        let (whole, keys) = match (whole, keys) {
            (Ok(w), Ok(k)) => (w, k),
            (Err(a), Err(b)) => {
                assert_eq!(a, b);
                continue;
            }
            other => panic!("one refused, the other not: {other:?}"),
        };
        assert_eq!(
            (whole.checksum_ok, &whole.problems),
            (keys.checksum_ok, &keys.problems)
        );
        let want: Vec<Option<Vec<Value>>> = whole
            .records
            .iter()
            .map(|r| match &r.outcome {
                Outcome::Row(row) => Some(vec![row.values[0].clone()]),
                Outcome::Rejected { key, .. } => key.clone(),
            })
            .collect();
        let got: Vec<Option<Vec<Value>>> = keys.keys.iter().map(|k| k.clone().ok()).collect();
        assert_eq!(got, want);
        keyless += want.iter().filter(|k| k.is_none()).count();
        rejected_with_key += whole
            .records
            .iter()
            .filter(|r| matches!(&r.outcome, Outcome::Rejected { key: Some(_), .. }))
            .count();
    }
    // The damage gave both kinds of rejected records: the comparison covered them.
    assert!(keyless > 0 && rejected_with_key > 0);
}

/// REDUNDANT records come back as written: NULLs (a NULL INT's zeros), 1- and 2-byte end offsets, the
/// delete mark with its key; a NULL INT whose bytes are not zeros, a field count the index does not have, and
/// a COMPACT page under a REDUNDANT definition are not read as rows.
#[test]
fn redundant_records_come_back_as_written() {
    let rows = inputs();
    let good = redundant_page(&rows, &[0, DELETED]);
    let leaf = parse_leaf(&redundant_def(), &FCRC32, &NO_PAGES, &good).unwrap();
    assert!(
        leaf.checksum_ok && leaf.problems.is_empty() && leaf.order_complete,
        "{leaf:?}"
    );
    let got: Vec<Vec<Value>> = rows_of(&leaf).iter().map(|r| r.values.clone()).collect();
    let expected: Vec<Vec<Value>> = rows
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 1)
        .map(|(_, r)| want(r))
        .collect();
    assert_eq!(got, expected);
    assert!(rows_of(&leaf).iter().all(|r| r.trx_id == 9));
    match &leaf.records[1].outcome {
        Outcome::Rejected { reason, key } => {
            assert!(reason.contains("delete-marked"), "{reason}");
            assert_eq!(key.as_deref(), Some(&[Value::Int(-90)][..]));
        }
        other => panic!("{other:?}"),
    }
    // Record 0 has a NULL b (0 % 3 == 0): its last 4 bytes are the zeros; the 5th field's end offset is the
    // 5th byte before the header.
    let first = leaf.records[0].origin;
    let end = first + usize::from(good[first - 6 - 5] & 0x7F);
    let mut p = good.clone();
    p[end - 1] = 1;
    let leaf = parse_leaf(&redundant_def(), &FCRC32, &NO_PAGES, &p).unwrap();
    assert!(
        matches!(&leaf.records[0].outcome, Outcome::Rejected { reason, .. } if reason.contains("zeros")),
        "{:?}",
        leaf.records[0]
    );
    let mut p = good.clone();
    p[first - 3] += 2;
    let leaf = parse_leaf(&redundant_def(), &FCRC32, &NO_PAGES, &p).unwrap();
    assert!(
        matches!(&leaf.records[0].outcome, Outcome::Rejected { reason, .. } if reason.contains("6 fields")),
        "{:?}",
        leaf.records[0]
    );
    assert!(
        parse_leaf(&redundant_def(), &FCRC32, &NO_PAGES, &page(&rows, &[]))
            .unwrap_err()
            .contains("COMPACT records")
    );
}

/// The page directory of a test page: a slot for each owner record (`owners`, from the infimum to the
/// supremum of the page's format), written from the page's end backwards, and their count in the page header.
fn page_directory(p: &mut [u8], owners: &[usize]) {
    p[PAGE_HEADER..PAGE_HEADER + 2].copy_from_slice(&(owners.len() as u16).to_be_bytes());
    for (k, o) in owners.iter().enumerate() {
        let at = PAGE - 8 - 2 * (k + 1);
        p[at..at + 2].copy_from_slice(&(*o as u16).to_be_bytes());
    }
}

/// Numbers met on a page, one bit each: a second insert says so, and a number past the page (where no origin
/// or heap number can be) counts as met, so a walk that reaches one stops.
#[test]
fn marks_say_which_numbers_were_met_and_refuse_those_past_the_page() {
    let mut m = Marks::new();
    assert!(m.insert(0) && m.insert(63) && m.insert(64) && m.insert(PAGE - 1));
    assert!(!m.insert(63) && !m.insert(PAGE - 1));
    assert!(!m.insert(PAGE) && !m.insert(usize::MAX));
}
