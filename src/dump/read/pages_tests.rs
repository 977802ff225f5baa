//! Unit tests of the page pass's pure parts (`pages.rs`).
use super::*;

fn b(k: i128, incl: bool) -> Option<B> {
    Some(B {
        key: key_values(&vec![k]),
        incl,
    })
}

fn rec(k: i128, row: bool, joined: bool) -> Rec {
    Rec {
        seq: 0,
        back: None,
        page: 7,
        checksum_ok: false,
        problems: Vec::new(),
        joined,
        edge: (false, false),
        key: Some(vec![k]),
        row: row.then(|| crate::pages::Row {
            values: vec![Value::Int(k as i64)],
            trx_id: 1,
        }),
        reason: (!row).then(|| "garbled".to_string()),
        written: false,
    }
}

/// The records as one chain, in the order given (each the next one's neighbour by place).
fn chained(mut recs: Vec<Rec>) -> Vec<Rec> {
    for (i, r) in recs.iter_mut().enumerate() {
        r.seq = i;
        r.back = i.checked_sub(1);
    }
    recs
}

/// The pieces as (after, before, from/to) integers.
fn shape(pieces: &[Piece]) -> Vec<(Option<i128>, Option<i128>, bool)> {
    pieces
        .iter()
        .map(|p| {
            let k = |b: &Option<B>| b.as_ref().map(|b| ints(b)[0]);
            (k(&p.lo), k(&p.hi), p.lo.as_ref().is_some_and(|b| b.incl))
        })
        .collect()
}

fn points_of(recs: &[Rec], lost: &[(Option<B>, Option<B>)]) -> Vec<BTreeSet<(Key, bool)>> {
    let mut pts = vec![BTreeSet::new(); lost.len()];
    for r in recs {
        let k = r.key.clone().unwrap();
        let ranges: Vec<(Option<Key>, Option<Key>)> = lost
            .iter()
            .map(|(lo, hi)| (lo.as_ref().map(ints), hi.as_ref().map(ints)))
            .collect();
        if let Some(i) = lost.iter().zip(&ranges).position(|((lo, hi), (l, h))| {
            in_range(&k, lo.as_ref().zip(l.as_ref()), hi.as_ref().zip(h.as_ref()))
        }) {
            pts[i].insert((k, r.row.is_some()));
        }
    }
    pts
}

#[test]
fn a_lost_range_narrows_only_where_nothing_can_lie_between_the_keys_read() {
    // 11..=19 lost; 11-14 and 16-19 read, 15 unproven with its key: only 15 stays lost.
    let lost = vec![(b(10, false), b(20, false))];
    let recs: Vec<Rec> = chained((11..=19).map(|k| rec(k, k != 15, false)).collect());
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of(&recs, &lost),
        &recs,
        (true, &Names::default()),
    );
    assert_eq!(shape(&pieces), vec![(Some(15), Some(15), true)]);
    assert_eq!(pieces[0].records.len(), 1);

    // 11, 12 and 18 read, not neighbours on a clean page: what lies between 12 and 18 is still lost.
    let recs = chained(vec![
        rec(11, true, false),
        rec(12, true, false),
        rec(18, true, false),
    ]);
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of(&recs, &lost),
        &recs,
        (true, &Names::default()),
    );
    assert_eq!(
        shape(&pieces),
        vec![(Some(12), Some(18), false), (Some(18), Some(20), false)]
    );

    // The same keys as neighbours in a whole record list of checksum-valid pages: nothing between them.
    let recs = chained(vec![
        rec(11, true, false),
        rec(12, true, true),
        rec(18, true, true),
        rec(20, true, true),
    ]);
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of(&recs, &lost),
        &recs,
        (true, &Names::default()),
    );
    assert!(pieces.is_empty(), "{:?}", shape(&pieces));

    // Open ends stay open: keys below the first read or above the last may exist.
    let lost = vec![(None, b(5, false)), (b(90, false), None)];
    let recs = chained(vec![
        rec(1, true, false),
        rec(4, true, false),
        rec(91, true, false),
    ]);
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of(&recs, &lost),
        &recs,
        (true, &Names::default()),
    );
    assert_eq!(
        shape(&pieces),
        vec![
            (None, Some(1), false),
            (Some(1), Some(4), false),
            (Some(91), None, false)
        ]
    );

    // The first record of the level's first clean page has nothing below it; the last of the last, nothing
    // above: the whole key space read from whole pages leaves nothing lost.
    let lost = vec![(None, None)];
    let mut recs: Vec<Rec> = chained((1..=4).map(|k| rec(k, true, false)).collect());
    recs[0].edge = (true, false);
    recs[3].edge = (false, true);
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of(&recs, &lost),
        &recs,
        (true, &Names::default()),
    );
    assert!(pieces.is_empty(), "{:?}", shape(&pieces));
    recs[3].edge = (false, false);
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of(&recs, &lost),
        &recs,
        (true, &Names::default()),
    );
    assert_eq!(shape(&pieces), vec![(Some(4), None, false)]);

    // Nothing read inside a range: it stays as it was.
    let lost = vec![(b(10, false), b(20, false))];
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of(&[], &lost),
        &[],
        (true, &Names::default()),
    );
    assert_eq!(shape(&pieces), vec![(Some(10), Some(20), false)]);
}

#[test]
fn rows_of_transactions_active_at_the_crash_are_doubts_and_a_failed_checksum_unless_confirmed() {
    let po = PageOptions {
        datadir: "/nonexistent".into(),
        uncommitted: vec![37],
        lowest_active: Some(37),
    };
    assert!(!possibly_uncommitted(&po, 36));
    assert!(possibly_uncommitted(&po, 37) && possibly_uncommitted(&po, 40));
    let none = PageOptions {
        uncommitted: vec![],
        lowest_active: None,
        ..po
    };
    assert!(!possibly_uncommitted(&none, 40));
    let pass = Pass {
        read: PagesRead {
            pages: vec![
                PageRows {
                    page: 28,
                    rows: 2,
                    unproven: 0,
                    checksum_ok: false,
                    problems: Vec::new(),
                },
                // A valid checksum over a broken record list (a scrambled page) is no proof either.
                PageRows {
                    page: 30,
                    rows: 1,
                    unproven: 0,
                    checksum_ok: true,
                    problems: vec!["the record list is broken".into()],
                },
                PageRows {
                    page: 31,
                    rows: 5,
                    unproven: 0,
                    checksum_ok: true,
                    problems: Vec::new(),
                },
            ],
            ..Default::default()
        },
        lost: Vec::new(),
        unverified: named(&[(3, None), (4, None)]),
        uncommitted: named(&[(4, Some(37))]),
        names: Names::default(),
    };
    let d = doubts(&pass, false);
    assert_eq!(d.len(), 2);
    assert_eq!(d[0].kind, DoubtKind::PageChecksum);
    assert_eq!(d[0].keys.len(), 2);
    assert!(d[0].why.contains("page(s) 28"), "{}", d[0].why);
    assert_eq!(d[1].kind, DoubtKind::Uncommitted);
    assert_eq!(d[1].keys, vec![vec![serde_json::json!(4)]]);
    // Confirmed column by column by the indexes: the failed checksum is no doubt; the transaction still is.
    let d = doubts(&pass, true);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].kind, DoubtKind::Uncommitted);
}

fn named(keys: &[(i128, Option<u64>)]) -> Named {
    let mut n = Named::default();
    for &(k, t) in keys {
        n.add(&vec![k], t);
    }
    n
}

/// A doubt over millions of rows (a crash in the middle of a large transaction) is kept in bounded memory: the
/// count, the lowest and highest key, the first thousand keys and transaction ids.
#[test]
fn the_keys_a_doubt_names_are_counted_bounded_and_ranged() {
    let keys: Vec<(i128, Option<u64>)> = (0..5000)
        .map(|i| ((i * 7919) % 5000 - 100, Some(100 + i as u64)))
        .collect();
    let n = named(&keys);
    assert_eq!((n.count, n.first.len(), n.trx.len()), (5000, 1000, 1000));
    assert_eq!(
        (n.low.clone(), n.high.clone()),
        (Some(vec![-100]), Some(vec![4899]))
    );
    assert!(n.more_trx);
    assert_eq!(n.first[..2], [vec![-100], vec![7919 % 5000 - 100]]);
    let pass = Pass {
        read: PagesRead::default(),
        lost: Vec::new(),
        unverified: Named::default(),
        uncommitted: n,
        names: Names::default(),
    };
    let d = doubts(&pass, false);
    assert_eq!(d.len(), 1);
    assert!(d[0].why.starts_with("5000 row(s)"), "{}", d[0].why);
    assert!(
        d[0].why.contains("118, 119 and more than 980 others"),
        "{}",
        d[0].why
    );
    assert_eq!(d[0].keys.len(), 1000);
    let r = d[0].range.as_ref().unwrap();
    assert_eq!(r.from, Some(vec![serde_json::json!(-100)]));
    assert_eq!(r.to, Some(vec![serde_json::json!(4899)]));
}

#[test]
fn records_of_one_key_twice_are_neither_proven() {
    let mut recs = chained(vec![
        rec(3, true, false),
        rec(4, true, false),
        rec(4, true, false),
    ]);
    let everything = vec![(None, None)];
    dedupe(&mut recs, &Ranges::new(&everything));
    assert!(recs[0].row.is_some());
    assert!(recs[1].row.is_none() && recs[2].row.is_none());
    // Only keys inside a lost range are counted (only those rows are written): 4 lies outside (2, 4).
    let mut recs = chained(vec![
        rec(3, true, false),
        rec(4, true, false),
        rec(4, true, false),
    ]);
    let lost = vec![(b(2, false), b(4, false))];
    dedupe(&mut recs, &Ranges::new(&lost));
    assert!(recs.iter().all(|r| r.row.is_some()));
}

#[test]
fn keys_are_compared_with_prefix_bounds_inclusive_or_not() {
    let k = vec![5, 1];
    let lo = B {
        key: key_values(&vec![5]),
        incl: true,
    };
    assert!(in_range(&k, Some((&lo, &vec![5])), None));
    let lo = B {
        key: key_values(&vec![5]),
        incl: false,
    };
    assert!(!in_range(&k, Some((&lo, &vec![5])), None));
}

#[test]
fn the_server_text_of_page_values() {
    assert_eq!(
        sent(&Value::Bit(5), &ColType::Bit { bits: 10 }),
        Sent::Bytes(vec![0, 5])
    );
    assert_eq!(
        sent(
            &Value::Int(-3),
            &ColType::Int {
                bytes: 4,
                unsigned: false
            }
        ),
        Sent::Bytes(b"-3".to_vec())
    );
    assert_eq!(sent(&Value::Null, &ColType::Year), Sent::NULL);
}

#[test]
fn the_data_file_is_mapped_as_it_is_and_a_file_shorter_than_a_page_is_refused() {
    let dir = std::env::temp_dir().join(format!("innops-map-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let whole = dir.join("t.ibd");
    let bytes: Vec<u8> = (0..3 * PAGE).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&whole, &bytes).unwrap();
    assert_eq!(&map_file(&whole).unwrap()[..], &bytes[..]);
    let short = dir.join("short.ibd");
    std::fs::write(&short, &bytes[..PAGE - 1]).unwrap();
    let why = map_file(&short).unwrap_err();
    assert!(why.contains("shorter than one page"), "{why}");
    let why = map_file(&dir.join("absent.ibd")).unwrap_err();
    assert!(why.contains("absent.ibd cannot be read"), "{why}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file of leaf pages 1, 2, 3 (page 0 left empty), each holding `rows[i]`, linked in that order, with their
/// checksums; `bad` pages get one byte changed after the checksum.
fn chain_file(
    rows: &[Vec<crate::pages::record::tests::Input>],
    bad: &[u32],
) -> (Vec<u8>, Vec<(u32, bool)>) {
    use crate::pages::page::{crc32c, NO_PAGE};
    let mut data = vec![0u8; PAGE];
    let n = rows.len() as u32;
    for (i, r) in rows.iter().enumerate() {
        let no = i as u32 + 1;
        let mut p = crate::pages::record::tests::page(r, &[]);
        let prev = if no == 1 { NO_PAGE } else { no - 1 };
        let next = if no == n { NO_PAGE } else { no + 1 };
        p[8..12].copy_from_slice(&prev.to_be_bytes());
        p[12..16].copy_from_slice(&next.to_be_bytes());
        let sum = crc32c(&p[..PAGE - 4]);
        p[PAGE - 4..].copy_from_slice(&sum.to_be_bytes());
        if bad.contains(&no) {
            p[PAGE / 2] ^= 1;
        }
        data.extend(p);
    }
    let chain = (1..=n).map(|no| (no, no > 1)).collect();
    (data, chain)
}

fn chain_recs(
    rows: &[Vec<crate::pages::record::tests::Input>],
    bad: &[u32],
    lost: &[(Option<B>, Option<B>)],
) -> (Vec<Rec>, u64) {
    let (data, chain) = chain_file(rows, bad);
    let (recs, whole, _) = recs_of(&data, &chain, lost);
    (recs, whole)
}

/// The pass's records over the chain, the pages parsed whole, and how many rows were written.
fn recs_of(
    data: &[u8],
    chain: &[(u32, bool)],
    lost: &[(Option<B>, Option<B>)],
) -> (Vec<Rec>, u64, usize) {
    let pt = PagedTable {
        def: crate::pages::record::tests::def(),
        index_id: 9,
        root: Some(3),
    };
    let ranges = Ranges::new(lost);
    let mut read = PagesRead::default();
    let mut written = Vec::new();
    let recs = chain_records(
        (&pt, &crate::pages::record::tests::FCRC32, data),
        chain,
        (&ranges, &mut Names::default()),
        &mut read,
        &mut |rec, row| {
            let Value::Int(id) = row.values[0] else {
                panic!("{:?}", row.values[0])
            };
            assert_eq!(rec.key, Some(vec![i128::from(id)]));
            written.push(rec.seq);
            Ok(())
        },
    )
    .unwrap();
    assert!(read.notes.is_empty(), "{:?}", read.notes);
    assert_eq!(read.leaves, chain.len() as u64);
    // Each row written once, and each record marked written was.
    let marked: Vec<usize> = recs.iter().filter(|r| r.written).map(|r| r.seq).collect();
    assert!(
        marked.iter().all(|s| written.contains(s)),
        "{marked:?} {written:?}"
    );
    assert!(written.windows(2).all(|w| w[0] != w[1]), "{written:?}");
    (recs, read.parsed_whole, written.len())
}

fn ids(r: std::ops::RangeInclusive<i32>) -> Vec<crate::pages::record::tests::Input> {
    r.map(|id| (id, Some(format!("row {id}")), Some(id)))
        .collect()
}

/// The page pass parses whole only the pages that can give a row it writes or a record it names: a page with
/// a key inside a lost range (anywhere on the page, not only at its ends) and a page whose checksum fails.
/// The others give keys without rows, and those keys still count: a duplicate of a lost key on a page whose
/// ends lie outside every lost range unproves the row, and a bound's record on such a page still joins the
/// range to its neighbour. Each assertion fails when the shortcut skips a page it must parse.
#[test]
fn only_the_pages_that_meet_a_lost_range_are_parsed_whole_and_their_keys_still_count() {
    let pages = vec![ids(1..=30), ids(31..=60), ids(61..=90)];
    // Key 46, in the middle of page 2.
    let lost = vec![(b(45, false), b(47, false))];
    let (recs, whole) = chain_recs(&pages, &[], &lost);
    assert_eq!(whole, 1);
    // Kept: the key inside (46), written, and the bounds' records (45, 47), outside the range and not
    // written, each with its place on the chain; none of the other 87.
    assert_eq!(kept(&recs), AROUND_46);
    assert!(recs.iter().all(|r| r.reason.is_none()));
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of_inside(&recs, &lost),
        &recs,
        (true, &Names::default()),
    );
    assert!(pieces.is_empty(), "{:?}", shape(&pieces));

    // A page whose checksum fails is parsed whole even outside the ranges.
    let (recs, whole) = chain_recs(&pages, &[3], &lost);
    assert_eq!((whole, recs.len()), (2, 3));

    // A stale copy of key 46 among page 3's records (out of order there, its ends 61 and 90): page 3 is parsed
    // whole, and neither copy of 46 is a row.
    let mut third = ids(61..=90);
    third.insert(10, (46, Some("stale".into()), Some(0)));
    let (recs, whole) = chain_recs(&[ids(1..=30), ids(31..=60), third], &[], &lost);
    assert_eq!(whole, 2);
    let copies: Vec<&Rec> = recs
        .iter()
        .filter(|r| r.key.as_deref() == Some(&[46][..]))
        .collect();
    assert_eq!(copies.len(), 2);
    assert!(copies.iter().all(|r| r.row.is_none() && !r.written));
    assert_eq!(copies[0].page, 2);
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of_inside(&recs, &lost),
        &recs,
        (true, &Names::default()),
    );
    assert_eq!(shape(&pieces), vec![(Some(46), Some(46), true)]);

    // 46..=60 lost up to key 61, the first of page 3 (read for its keys alone): with no integer rule to lean on,
    // the range closes only because 45 and 61 are found on the chain, each joined to its neighbour.
    let lost = vec![(b(45, false), b(61, false))];
    let (recs, whole) = chain_recs(&pages, &[], &lost);
    assert_eq!(whole, 1);
    let r61 = recs.iter().find(|r| r.key == Some(vec![61])).unwrap();
    assert!(r61.row.is_none() && r61.joined && r61.seq == 60);
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of_inside(&recs, &lost),
        &recs,
        (false, &Names::default()),
    );
    assert!(pieces.is_empty(), "{:?}", shape(&pieces));
    // The same with page 3's checksum failing: 61 is not joined, what lies between 60 and 61 stays lost.
    let (recs, _) = chain_recs(&pages, &[3], &lost);
    let pieces = cut(
        &Ranges::new(&lost),
        &points_of_inside(&recs, &lost),
        &recs,
        (false, &Names::default()),
    );
    assert_eq!(shape(&pieces), vec![(Some(60), Some(61), false)]);
}

/// The records kept when 46 alone is lost, (45, 47) exclusive: the key inside, written, and the bounds' records.
const AROUND_46: [(Option<i128>, usize, bool); 3] = [
    (Some(45), 44, false),
    (Some(46), 45, true),
    (Some(47), 46, false),
];

/// The kept records as (key, place on the chain, row written).
fn kept(recs: &[Rec]) -> Vec<(Option<i128>, usize, bool)> {
    recs.iter()
        .map(|r| (r.key.as_ref().map(|k| k[0]), r.seq, r.written))
        .collect()
}

/// A record without a key keeps the nearest records with a key on either side of it, which place it among the
/// lost ranges; the other records outside the ranges are not kept. Inside a lost range, it goes with the
/// stretch between those two neighbours.
#[test]
fn a_record_without_a_key_keeps_its_two_neighbours() {
    let pages = vec![ids(1..=30), ids(31..=60), ids(61..=90)];
    let (mut data, chain) = chain_file(&pages, &[]);
    // Record 50's info bits made ones no record has: its header fails before its key is read.
    let key = (50u32 ^ 0x8000_0000).to_be_bytes();
    let page2 = &data[2 * PAGE..3 * PAGE];
    let at = 2 * PAGE + page2.windows(4).position(|w| w == key).unwrap();
    data[at - 5] |= 0xC0;
    let lost = vec![(b(45, false), b(47, false))];
    let (recs, whole, _) = recs_of(&data, &chain, &lost);
    assert_eq!(whole, 1);
    // Outside the range, neither neighbour is written.
    let mut want = AROUND_46.to_vec();
    want.extend([
        (Some(49), 48, false),
        (None, 49, false),
        (Some(51), 50, false),
    ]);
    assert_eq!(kept(&recs), want);
    // Outside every range it is no lost row; inside one, it is the stretch between 49 and 51 (and 49, unproven,
    // is its own).
    let pieces = |lost: &[(Option<B>, Option<B>)], recs: &[Rec]| {
        let mut pieces = cut(
            &Ranges::new(lost),
            &points_of_inside(recs, lost),
            recs,
            (true, &Names::default()),
        );
        let bounds = ranges_of(&pieces, &Names::default());
        attach_keyless(&mut pieces, recs, &bounds);
        pieces
    };
    assert!(pieces(&lost, &recs).is_empty());
    let lost = vec![(b(45, false), b(61, false))];
    let (recs, _, _) = recs_of(&data, &chain, &lost);
    let got = pieces(&lost, &recs);
    assert_eq!(
        shape(&got),
        vec![(Some(49), Some(49), true), (Some(49), Some(51), false)]
    );
    assert_eq!(got[1].records.len(), 1);
    assert!(got[1].records[0].key.is_none());
}

/// A table read whole from its pages (the damaged root page: one lost range over everything) is read in
/// bounded memory: a stretch of rows written one after the other, each joined to the one before, keeps only
/// its ends, and the cut still finds nothing lost between them. A page whose checksum fails breaks the
/// stretch (its records are joined to nothing), and keys out of order keep every record.
#[test]
fn a_stretch_of_rows_written_keeps_only_its_ends() {
    let pages = vec![ids(1..=30), ids(31..=60), ids(61..=90)];
    let everything = vec![(None, None)];
    let cut_of = |recs: &[Rec], single: bool| {
        cut(
            &Ranges::new(&everything),
            &points_of_inside(recs, &everything),
            recs,
            (single, &Names::default()),
        )
    };
    let (data, chain) = chain_file(&pages, &[]);
    let (recs, whole, written) = recs_of(&data, &chain, &everything);
    assert_eq!((whole, written), (3, 90));
    assert_eq!(kept(&recs), vec![(Some(1), 0, true), (Some(90), 89, true)]);
    assert_eq!(recs[1].back, Some(0));
    assert!(recs[0].edge.0 && recs[1].edge.1);
    // Without the integer rule: the two ends are joined through every row between them.
    assert!(cut_of(&recs, false).is_empty());

    // Page 2's checksum fails: its records are kept one by one, and only the integer rule closes the gaps.
    let (data, chain) = chain_file(&pages, &[2]);
    let (recs, _, written) = recs_of(&data, &chain, &everything);
    assert_eq!((recs.len(), written), (34, 90));
    assert_eq!(cut_of(&recs, false).len(), 31);
    assert!(cut_of(&recs, true).is_empty());

    // A stale copy of 46 on page 3: keys out of order, every record kept, neither 46 written.
    let mut third = ids(61..=90);
    third.insert(10, (46, Some("stale".into()), Some(0)));
    let (data, chain) = chain_file(&[ids(1..=30), ids(31..=60), third], &[]);
    let (recs, _, written) = recs_of(&data, &chain, &everything);
    assert_eq!((recs.len(), written), (91, 89));
    assert_eq!(
        shape(&cut_of(&recs, true)),
        vec![(Some(46), Some(46), true)]
    );
}

/// A page that holds another number of records when parsed whole than when read for its keys (the file
/// changed between the two reads) is not read: a note names it, and none of its records is kept or written.
#[test]
fn a_page_whose_record_count_changed_between_the_walks_is_not_read() {
    let (data, chain) = chain_file(&[ids(1..=30), ids(31..=60)], &[]);
    let pt = PagedTable {
        def: crate::pages::record::tests::def(),
        index_id: 9,
        root: Some(3),
    };
    let everything = vec![(None, None)];
    let ranges = Ranges::new(&everything);
    let view = (&pt, &crate::pages::record::tests::FCRC32, &data[..]);
    let mut names = Names::default();
    let mut read = PagesRead::default();
    let mut walk = key_walk(view, &chain, (&ranges, &mut names), &mut read);
    assert_eq!(walk.whole.len(), 2);
    walk.whole[1].count = 29;
    let mut written = 0;
    let recs = whole_pages(
        view,
        &walk,
        (&ranges, &mut names),
        &mut read,
        &mut |_, _| {
            written += 1;
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(written, 30);
    assert!(recs.iter().all(|r| r.page == 1), "{:?}", kept(&recs));
    assert_eq!(read.notes.len(), 1, "{:?}", read.notes);
    assert!(
        read.notes[0]
            .contains("page 2 was not read: it held 29 records when read for its keys and 30"),
        "{}",
        read.notes[0]
    );
}

/// `points_of` for records that may lie outside the ranges (those have no point).
fn points_of_inside(recs: &[Rec], lost: &[(Option<B>, Option<B>)]) -> Vec<BTreeSet<(Key, bool)>> {
    let ranges = Ranges::new(lost);
    let mut pts = vec![BTreeSet::new(); lost.len()];
    for r in recs {
        if let Some(i) = r.key.as_ref().and_then(|k| ranges.find(k)) {
            pts[i].insert((r.key.clone().unwrap(), r.written));
        }
    }
    pts
}

/// A key that is not all integers: each distinct text gets the rank of its first place on the chain (the
/// server's order, whatever the collation), the same text the same rank (so duplicates are still found), and
/// the key is written back as its text: to JSON as the SQL reads write it, to a bound as the server's text,
/// which ranks back to the same number.
#[test]
fn a_key_that_is_not_all_integers_is_ranked_by_its_place_on_the_chain() {
    use crate::dump::literal::Kind;
    use crate::pages::def::Charset;
    let ty = ColType::Varchar {
        chars: 20,
        charset: Charset::Utf8mb4,
    };
    let int = ColType::Int {
        bytes: 4,
        unsigned: false,
    };
    let mut names = Names::ranked(vec![ty, int], vec![Kind::Text, Kind::Number]);
    let k = |s: &str, i: i64| vec![Value::Bytes(s.as_bytes().to_vec()), Value::Int(i)];
    // A case-insensitive collation's order: "a" < "B" < "c", unlike the bytes' ("B" < "a").
    assert_eq!(names.key(&k("a", 1)), Some(vec![0]));
    assert_eq!(names.key(&k("B", 1)), Some(vec![1]));
    assert_eq!(names.key(&k("c", 1)), Some(vec![2]));
    assert_eq!(
        names.key(&k("B", 1)),
        Some(vec![1]),
        "the same key, the same rank"
    );
    assert_eq!(
        names.key(&k("B", 2)),
        Some(vec![3]),
        "a key differs in any column"
    );
    assert_eq!(names.key(&[Value::Null, Value::Int(1)]), None);
    assert_eq!(
        names.json(&vec![1]),
        vec![serde_json::json!("B"), serde_json::json!(1)]
    );
    let b = B {
        key: names.values(&vec![2]),
        incl: true,
    };
    assert_eq!(
        b.key,
        vec![Sent::Bytes(b"c".to_vec()), Sent::Bytes(b"1".to_vec())]
    );
    assert_eq!(names.bound(&b), Some(vec![2]));
    assert!(!names.is_int());
    // An all-integer key is its own numbers.
    let mut ints = Names::default();
    assert_eq!(
        ints.key(&[Value::Int(-5), Value::Uint(7)]),
        Some(vec![-5, 7])
    );
    assert_eq!(
        ints.json(&vec![-5, 7]),
        vec![serde_json::json!(-5), serde_json::json!(7)]
    );
    assert!(ints.is_int());
}

/// A lost range of a ranked key is placed by its bounds' own records on the chain: a bound that no record of
/// the chain holds (a prefix of the key, or a key whose page was not read) refuses the table in one sentence.
#[test]
fn a_ranked_keys_bound_is_placed_by_its_record_on_the_chain_or_refused() {
    use crate::dump::literal::Kind;
    use crate::pages::def::Charset;
    let ty = ColType::Varchar {
        chars: 20,
        charset: Charset::Utf8mb4,
    };
    let mut names = Names::ranked(vec![ty], vec![Kind::Text]);
    for s in ["a", "B", "c", "D"] {
        names.key(&[Value::Bytes(s.as_bytes().to_vec())]);
    }
    let b = |s: &str| B {
        key: vec![Sent::Bytes(s.as_bytes().to_vec())],
        incl: false,
    };
    let lost = vec![(Some(b("a")), Some(b("D")))];
    let ranges = Ranges::with(&lost, &names).unwrap();
    // Inside: "B" and "c" (ranks 1 and 2), not the bounds themselves.
    let found: Vec<Option<usize>> = (0..4).map(|r| ranges.find(&vec![r])).collect();
    assert_eq!(found, vec![None, Some(0), Some(0), None]);
    let lost = vec![(Some(b("a")), Some(b("e")))];
    let why = Ranges::with(&lost, &names).err().unwrap();
    assert!(
        why.contains("the key (e) SQL read next to a lost range is on no leaf page read"),
        "{why}"
    );
    // An all-integer key's bounds are its numbers, always placed.
    let int = |i: i64| B {
        key: vec![Sent::Int(i)],
        incl: false,
    };
    let lost = vec![(Some(int(3)), None)];
    let ranges = Ranges::with(&lost, &Names::default()).unwrap();
    assert_eq!(
        (ranges.find(&vec![3]), ranges.find(&vec![4])),
        (None, Some(0))
    );
}
