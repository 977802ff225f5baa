//! `--verify-load` against evidence innops did not write (issue 21, "The verdict a script can read"): the
//! loaded rows against what the damaged server's readable secondary index held, and each lost range against
//! the index's count of rows there. A file forged with its manifest fixed up passes the manifest's own checks
//! and must fail this one.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use innops::dump::manifest::sha256_file;
use innops::dump::{self, DumpOptions, Manifest, TableName, TableStatus, TargetConnector};
use innops::procedures::drill::damage as pages;
use mysql::prelude::Queryable;

use crate::common::recover::{damage, int_table, keys_per_leaf, leaves, rows, start_at, stop_slow};
use crate::common::Sandboxed;

fn dump_one(sb: &Sandboxed, out: &Path, table: &str) -> Manifest {
    let target = sb.target();
    let connector = TargetConnector {
        target: &target,
        wait: Duration::from_secs(60),
        error_log: Some(sb.sandbox.error_log.clone()),
    };
    let o = DumpOptions::new(out, 0);
    dump::dump(
        &connector,
        &[TableName::new("db", table)],
        &o,
        &AtomicBool::new(false),
    )
    .expect("dump")
}

/// The row `(id,k,'…')` of `int_table` as the dump writes it.
fn tuple(id: i64, k: i64) -> String {
    format!("({id},{k},'{}{id}')", "x".repeat(180))
}

#[test]
fn verify_load_checks_the_rows_against_the_damaged_servers_index_and_catches_a_forged_file() {
    let mut sb = Sandboxed::new("vfy1");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    let keys = rows(&mut c, "SELECT id FROM db.t ORDER BY id");
    drop(c);
    stop_slow(&sb);
    let leaves = leaves(&sb, "t", 3);
    let per_leaf = keys_per_leaf(&leaves, &keys);
    let bad = leaves.len() / 2;
    damage(&sb, "t", leaves[bad].page);
    start_at(&mut sb, 0);
    let on_bad: BTreeSet<i64> = per_leaf[bad]
        .iter()
        .map(|r| r[0].as_ref().unwrap().parse().unwrap())
        .collect();

    let out = tempfile::tempdir().unwrap();
    let m = dump_one(&sb, out.path(), "t");
    let t = m.table("db", "t").unwrap();
    assert_eq!(t.status, TableStatus::Partial, "{t:?}");
    assert_eq!(t.lost.len(), 1, "{t:?}");
    // What the damaged server's index held, recorded at dump time: inside the lost range, the rows lost.
    assert_eq!(t.lost[0].listed.get("k"), Some(&(on_bad.len() as u64)));
    assert_eq!(t.indexes.len(), 1, "{t:?}");
    assert_eq!(t.indexes[0].index, "k");
    assert_eq!(t.indexes[0].entries, 3000 - on_bad.len() as u64);
    assert!(!t.indexes[0].doubted);

    // (a) The loaded rows agree with the index; the lost range's count is the rows missing.
    let fresh = Sandboxed::new("vfy1a");
    let v = dump::verify_load(out.path(), &fresh.target(), "/* innops:test */").expect("load");
    assert!(v.ok(), "{v:#?}");
    let lc = &v.tables[0];
    assert_eq!(lc.unchecked, None);
    let loaded = lc.rows_loaded;
    let missing = 3000 - loaded;
    assert_eq!(missing, on_bad.len() as u64);
    assert!(lc.indexes[0].agrees, "{lc:#?}");
    assert_eq!(lc.indexes[0].listed_inside, Some(missing));
    assert!(
        lc.indexes[0]
            .verdict
            .contains(&format!("{loaded} loaded + {missing} lost = 3000 rows")),
        "{}",
        lc.indexes[0].verdict
    );
    assert_eq!(lc.lost.len(), 1);
    assert_eq!(lc.lost[0].loaded, 0);
    assert_eq!(lc.lost[0].range.listed.get("k"), Some(&missing));
    assert!(
        lc.lost[0]
            .verdict
            .ends_with(&format!("none is in the dump: {missing} row(s) lost")),
        "{}",
        lc.lost[0].verdict
    );
    drop(fresh);

    // (b) A forged file: one row's indexed value changed, and the manifest's sha256, content hash and rows
    // fixed up so that innops's own checks pass. The damaged server's index says otherwise.
    let id = *keys
        .iter()
        .map(|r| r[0].as_ref().unwrap().parse::<i64>().unwrap())
        .filter(|id| !on_bad.contains(id))
        .collect::<Vec<_>>()
        .get(17)
        .unwrap();
    let k = id * 7 % 1000;
    let (old, new) = (tuple(id, k), tuple(id, (k + 1) % 1000));
    let file = out.path().join(t.file.as_ref().unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text.matches(&old).count(),
        1,
        "the row {old:.20}… is in the file once"
    );
    std::fs::write(&file, text.replace(&old, &new)).unwrap();
    let mut forged = m.clone();
    let ft = forged.tables.iter_mut().find(|t| t.table == "t").unwrap();
    let h = u128::from_str_radix(ft.content_hash.as_ref().unwrap(), 16).unwrap();
    let h = h
        .wrapping_sub(xxhash_rust::xxh3::xxh3_128(old.as_bytes()))
        .wrapping_add(xxhash_rust::xxh3::xxh3_128(new.as_bytes()));
    ft.content_hash = Some(format!("{h:032x}"));
    let sha = sha256_file(&file).unwrap();
    ft.sha256 = Some(sha.clone());
    forged.files.insert(ft.file.clone().unwrap(), sha);
    std::fs::write(
        out.path().join("manifest.json"),
        serde_json::to_string_pretty(&forged).unwrap(),
    )
    .unwrap();
    let fresh = Sandboxed::new("vfy1b");
    let v = dump::verify_load(out.path(), &fresh.target(), "/* innops:test */").expect("load");
    let lc = &v.tables[0];
    // innops's own checks pass: the forgery is consistent with the manifest.
    assert_eq!(lc.rows_loaded, lc.rows_expected);
    assert!(lc.hash_matches, "{lc:#?}");
    // The independent one does not.
    assert!(!lc.indexes[0].agrees && !lc.indexes[0].ok(), "{lc:#?}");
    assert!(
        lc.indexes[0]
            .verdict
            .ends_with("the loaded rows are not what the damaged server held, and no doubt in the manifest says so"),
        "{}",
        lc.indexes[0].verdict
    );
    assert!(lc.lost.iter().all(|l| l.ok()), "{lc:#?}");
    assert!(!lc.ok(), "{lc:#?}");
    assert!(!v.ok(), "{v:#?}");
}

/// Two neighbouring rows carrying each other's `k` and `c` on a page whose checksum is valid: the dump's own
/// cross-check finds index k disagreeing and says so in a doubt. The loaded rows differ from the index as that
/// doubt says: verify-load reports it and does not fail on it.
#[test]
fn verify_load_passes_where_the_rows_differ_from_the_index_as_the_manifests_doubts_say() {
    let mut sb = Sandboxed::new("vfy2");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    drop(c);
    stop_slow(&sb);
    let leaves = leaves(&sb, "t", 3);
    let leaf = &leaves[leaves.len() / 2];
    // After the 4-byte id, the 6-byte transaction id and the 7-byte roll pointer: k, then c (184 bytes for
    // these four-digit ids).
    let how = pages::Scramble::Exchange {
        nth: leaf.n_recs / 2,
        from: 4 + 6 + 7,
        len: 4 + 184,
    };
    pages::Stopped::already(&sb.sandbox)
        .unwrap()
        .table("db", "t")
        .unwrap()
        .scramble(leaf.page, &how)
        .unwrap();
    start_at(&mut sb, 0);

    let out = tempfile::tempdir().unwrap();
    let m = dump_one(&sb, out.path(), "t");
    let t = m.table("db", "t").unwrap();
    assert_eq!(t.status, TableStatus::Doubtful, "{t:#?}");
    assert!(t.lost.is_empty(), "{t:#?}");
    assert!(t.indexes[0].doubted, "{t:#?}");
    assert!(
        t.doubts
            .iter()
            .any(|d| d.kind == dump::DoubtKind::SecondaryIndex),
        "{t:#?}"
    );
    let fresh = Sandboxed::new("vfy2a");
    let v = dump::verify_load(out.path(), &fresh.target(), "/* innops:test */").expect("load");
    let lc = &v.tables[0];
    assert_eq!(lc.rows_loaded, 3000);
    assert!(!lc.indexes[0].agrees, "{lc:#?}");
    assert!(
        lc.indexes[0]
            .verdict
            .contains("the same number of entries with other values"),
        "{}",
        lc.indexes[0].verdict
    );
    assert!(
        lc.indexes[0]
            .verdict
            .ends_with("it differs as the manifest's doubts say"),
        "{}",
        lc.indexes[0].verdict
    );
    assert!(v.ok(), "{v:#?}");
}
