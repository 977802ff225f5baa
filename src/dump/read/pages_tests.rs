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
    }
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
    let recs: Vec<Rec> = (11..=19).map(|k| rec(k, k != 15, false)).collect();
    let pieces = cut(&lost, &points_of(&recs, &lost), &recs, true);
    assert_eq!(shape(&pieces), vec![(Some(15), Some(15), true)]);
    assert_eq!(pieces[0].records.len(), 1);

    // 11, 12 and 18 read, not neighbours on a clean page: what lies between 12 and 18 is still lost.
    let recs = vec![
        rec(11, true, false),
        rec(12, true, false),
        rec(18, true, false),
    ];
    let pieces = cut(&lost, &points_of(&recs, &lost), &recs, true);
    assert_eq!(
        shape(&pieces),
        vec![(Some(12), Some(18), false), (Some(18), Some(20), false)]
    );

    // The same keys as neighbours in a whole record list of checksum-valid pages: nothing between them.
    let recs = vec![
        rec(11, true, false),
        rec(12, true, true),
        rec(18, true, true),
        rec(20, true, true),
    ];
    let pieces = cut(&lost, &points_of(&recs, &lost), &recs, true);
    assert!(pieces.is_empty(), "{:?}", shape(&pieces));

    // Open ends stay open: keys below the first read or above the last may exist.
    let lost = vec![(None, b(5, false)), (b(90, false), None)];
    let recs = vec![
        rec(1, true, false),
        rec(4, true, false),
        rec(91, true, false),
    ];
    let pieces = cut(&lost, &points_of(&recs, &lost), &recs, true);
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
    let mut recs: Vec<Rec> = (1..=4).map(|k| rec(k, true, false)).collect();
    recs[0].edge = (true, false);
    recs[3].edge = (false, true);
    let pieces = cut(&lost, &points_of(&recs, &lost), &recs, true);
    assert!(pieces.is_empty(), "{:?}", shape(&pieces));
    recs[3].edge = (false, false);
    let pieces = cut(&lost, &points_of(&recs, &lost), &recs, true);
    assert_eq!(shape(&pieces), vec![(Some(4), None, false)]);

    // Nothing read inside a range: it stays as it was.
    let lost = vec![(b(10, false), b(20, false))];
    let pieces = cut(&lost, &points_of(&[], &lost), &[], true);
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
        unverified: vec![vec![3], vec![4]],
        uncommitted: vec![(vec![4], 37)],
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

#[test]
fn records_of_one_key_twice_are_neither_proven() {
    let mut recs = vec![
        rec(3, true, false),
        rec(4, true, false),
        rec(4, true, false),
    ];
    dedupe(&mut recs);
    assert!(recs[0].row.is_some());
    assert!(recs[1].row.is_none() && recs[2].row.is_none());
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
fn a_data_file_larger_than_half_the_available_memory_is_refused() {
    assert!(too_large(100 << 20, Some(1 << 30)).is_none());
    let why = too_large(600 << 20, Some(1 << 30)).unwrap();
    assert!(why.contains("larger than half the memory"), "{why}");
    // Without /proc/meminfo nothing is known, and nothing refused.
    assert!(too_large(u64::MAX, None).is_none());
    assert!(available_memory().is_some_and(|m| m > 0));
}
