//! `--pages` (issue 30): after the SQL reads, the rows inside the lost ranges are read from the data file itself.
//! A table's every row is taken as ground truth before one of its leaf pages gets 512 bad bytes; the dump with
//! `--pages` must hold strictly more rows than without, every one equal to the truth, the rows from the page
//! whose checksum fails named as doubts, the remaining lost ranges covering exactly the rows not recovered, the
//! manifest counting rows by source, and the files loading back as the manifest says.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use innops::dump::manifest::DoubtKind;
use innops::dump::{
    self, DumpOptions, Manifest, PageOptions, TableName, TableStatus, TargetConnector,
};
use mysql::prelude::Queryable;

use crate::common::recover::{
    damage, int_table, keys_per_leaf, leaves, rows, start_at, stop_slow, table_rows, TextRow,
};
use crate::common::{run_innops, Sandboxed};

fn run_dump(sb: &Sandboxed, dir: &Path, pages: bool) -> Manifest {
    let mut o = DumpOptions::new(dir, 0);
    o.threads = 1;
    o.split_min_rows = 0;
    if pages {
        o.pages = Some(PageOptions {
            datadir: sb.sandbox.datadir.clone(),
            uncommitted: Vec::new(),
            lowest_active: None,
        });
    }
    let target = sb.target();
    let connector = TargetConnector {
        target: &target,
        wait: Duration::from_secs(60),
        error_log: Some(sb.sandbox.error_log.clone()),
    };
    dump::dump(
        &connector,
        &[TableName::new("db", "t")],
        &o,
        &AtomicBool::new(false),
    )
    .expect("dump")
}

/// `run_dump` into a fresh temporary directory (kept as long as the returned handle).
fn dumped(sb: &Sandboxed, pages: bool) -> (tempfile::TempDir, Manifest) {
    let dir = tempfile::tempdir().unwrap();
    let m = run_dump(sb, dir.path(), pages);
    (dir, m)
}

/// Load the dump into a fresh sandbox (rows and content as the manifest says) and return the table's rows by id.
fn loaded(dir: &Path, name: &str) -> BTreeMap<i64, TextRow> {
    let fresh = Sandboxed::new(name);
    let checked = dump::verify_load(dir, &fresh.target(), "/* innops:test */").expect("load");
    assert!(checked.ok(), "{checked:?}");
    let mut c = fresh.conn();
    by_id(table_rows(&mut c, "db.t", "id"))
}

fn by_id(rows: Vec<TextRow>) -> BTreeMap<i64, TextRow> {
    rows.into_iter()
        .map(|r| (r[0].as_ref().unwrap().parse().unwrap(), r))
        .collect()
}

/// A lost range's (after, before) on integer ids.
type Bounds = (Option<i64>, Option<i64>);

/// Lost ranges as (after, before) on integer ids, and the records named by key.
fn lost_of(m: &Manifest) -> (Vec<Bounds>, Vec<i64>) {
    let t = m.table("db", "t").unwrap();
    let k = |v: &Option<Vec<serde_json::Value>>| v.as_ref().map(|k| k[0].as_i64().unwrap());
    let mut ranges = Vec::new();
    let mut points = Vec::new();
    for l in &t.lost {
        if l.from.is_some() {
            assert_eq!(
                l.from, l.to,
                "a range from a key is one unproven record: {l:?}"
            );
            assert_eq!(l.records.len(), 1, "{l:?}");
            points.push(k(&l.from).unwrap());
        } else {
            ranges.push((k(&l.after), k(&l.before)));
        }
    }
    (ranges, points)
}

/// A damaged leaf page: without `--pages` the SQL result; with it strictly more rows, each equal to the truth,
/// the page's rows in doubt (its checksum fails and index k does not hold column c), the lost ranges holding
/// exactly the rows not recovered, the rows counted by source, and the files loading back.
#[test]
fn pages_recover_the_intact_records_of_a_damaged_leaf_and_keep_the_rest_lost() {
    let mut sb = Sandboxed::new("rpg1");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    let truth = by_id(table_rows(&mut c, "db.t", "id"));
    let keys = rows(&mut c, "SELECT id FROM db.t ORDER BY id");
    drop(c);
    stop_slow(&sb);
    let leaves = leaves(&sb, "t", 3);
    let per_leaf = keys_per_leaf(&leaves, &keys);
    let bad = leaves.len() / 2;
    damage(&sb, "t", leaves[bad].page);
    let on_bad: BTreeSet<i64> = per_leaf[bad]
        .iter()
        .map(|r| r[0].as_ref().unwrap().parse().unwrap())
        .collect();
    start_at(&mut sb, 0);

    let (_sql_dir, m0) = dumped(&sb, false);
    let t0 = m0.table("db", "t").unwrap();
    assert_eq!(t0.status, TableStatus::Partial, "{t0:?}");
    assert!(t0.pages.is_none());
    assert_eq!(t0.rows as usize, truth.len() - on_bad.len());

    let (dir, m) = dumped(&sb, true);
    let t = m.table("db", "t").unwrap();
    let p = t.pages.as_ref().expect("the pages entry");
    assert!(p.refused.is_none(), "{p:?}");
    assert_eq!(p.sql_rows, t0.rows, "{p:?}");
    assert!(p.page_rows > 0, "{p:?}");
    assert_eq!(t.rows, p.sql_rows + p.page_rows);
    // Only the damaged page gave rows, and it is named with its failed checksum.
    assert_eq!(p.pages.len(), 1, "{p:?}");
    assert_eq!(p.pages[0].page, leaves[bad].page);
    assert!(!p.pages[0].checksum_ok);
    assert_eq!(p.pages[0].rows, p.page_rows);

    // Every row in the files equals the truth; the rows added are the damaged page's.
    let got = loaded(dir.path(), "rpg1l");
    assert_eq!(got.len() as u64, t.rows);
    for (id, row) in &got {
        assert_eq!(Some(row), truth.get(id), "row {id} differs from the truth");
    }
    let from_pages: BTreeSet<i64> = got
        .keys()
        .copied()
        .filter(|id| on_bad.contains(id))
        .collect();
    assert_eq!(from_pages.len() as u64, p.page_rows);

    // Rows from a page whose checksum fails are named as doubts: index k holds (k, id), not c.
    assert_eq!(t.status, TableStatus::Doubtful, "{t:?}");
    let named: BTreeSet<i64> = t
        .doubts
        .iter()
        .filter(|d| d.kind == DoubtKind::PageChecksum)
        .flat_map(|d| d.keys.iter().map(|k| k[0].as_i64().unwrap()))
        .collect();
    assert_eq!(named, from_pages);
    assert!(
        t.doubts.iter().all(|d| d.kind == DoubtKind::PageChecksum),
        "{:?}",
        t.doubts
    );

    // What stays lost is exactly the damaged page's rows not recovered: every such id inside a lost range or
    // named as an unproven record, no recovered or SQL-read id inside one, each range bounded by ids in the file.
    let missing: BTreeSet<i64> = on_bad.difference(&from_pages).copied().collect();
    // The list broken inside the 512 bytes costs the records under them and the rest of that directory
    // owner's stretch (at most 8 records), not the rest of the page (measured: 65 of 72 recovered).
    assert!(missing.len() <= 12, "{missing:?}");
    assert!(!missing.is_empty(), "the 512 bad bytes garble some records");
    let (ranges, points) = lost_of(&m);
    let inside = |id: i64| {
        ranges
            .iter()
            .any(|(a, b)| a.is_none_or(|a| id > a) && b.is_none_or(|b| id < b))
            || points.contains(&id)
    };
    for id in truth.keys() {
        assert_eq!(
            inside(*id),
            missing.contains(id),
            "id {id}: lost {ranges:?} {points:?}"
        );
    }
    for (a, b) in &ranges {
        for k in [a, b].into_iter().flatten() {
            assert!(
                got.contains_key(k) || points.contains(k),
                "a bound {k} is a row in the file or an unproven record: {:?}",
                t.lost
            );
        }
    }
    // lost.jsonl says the same as the manifest, one line per remaining range.
    let lines = std::fs::read_to_string(dir.path().join("lost.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), t.lost.len());
}

/// `innops recover --pages` end to end on a copy: the summary line counts rows by source, the manifest's
/// files load back (`--verify-load`), and the rows from the damaged page are named as doubts (exit 4).
#[test]
fn recover_pages_reads_the_copys_data_file_and_verifies_the_load() {
    let mut sb = Sandboxed::new("rpg2");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    let truth = by_id(table_rows(&mut c, "db.t", "id"));
    let keys = rows(&mut c, "SELECT id FROM db.t ORDER BY id");
    drop(c);
    stop_slow(&sb);
    let leaves = leaves(&sb, "t", 3);
    let per_leaf = keys_per_leaf(&leaves, &keys);
    let bad = leaves.len() / 2;
    damage(&sb, "t", leaves[bad].page);
    start_at(&mut sb, 0);
    let work = sb.root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out_dir = work.join("out");
    let args: Vec<String> = [
        "recover",
        "--sandbox",
        &sb.sandbox.name,
        "--sandbox-root",
        sb.root.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--copy-to",
        work.join("copy").to_str().unwrap(),
        "--tables",
        "db.t",
        "--pages",
        "--verify-load",
        "--execute",
        "--yes",
        "--run-dir",
        work.join("run").to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run_innops(&args, &[]);
    assert_eq!(out.code, 4, "{out:?}");
    let m = Manifest::read(&out_dir).unwrap();
    let t = m.table("db", "t").unwrap();
    let p = t.pages.as_ref().expect("pages");
    assert!(p.page_rows > 0 && p.refused.is_none(), "{p:?}");
    assert_eq!(
        p.sql_rows as usize,
        truth.len() - per_leaf[bad].len(),
        "{p:?}"
    );
    assert!(
        out.stdout.contains(&format!(
            " from SQL, {} read from the data file from page {} (checksum fails))",
            p.page_rows, leaves[bad].page
        )),
        "{}",
        out.stdout
    );
    // The load into a fresh sandbox passed, page rows included.
    assert!(out.stdout.contains("loaded as recorded"), "{}", out.stdout);
    // The original's files were never read or written by the page pass: the copy's were.
    assert!(sb.sandbox.running_pid().is_some());
}

/// A leaf scrambled with a valid checksum (garbage records InnoDB crashes on): the page pass proves no garbage
/// a row, the range stays lost with what it met there, and every row in the files equals the truth or is named.
#[test]
fn rows_from_a_scrambled_page_with_a_valid_checksum_are_never_written_unmarked() {
    use crate::common::recover::{doubted, garble};
    let mut sb = Sandboxed::new("rpg3");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    let truth = by_id(table_rows(&mut c, "db.t", "id"));
    drop(c);
    stop_slow(&sb);
    let leaves = leaves(&sb, "t", 3);
    let bad = leaves[leaves.len() / 2].page;
    garble(&sb, "t", bad);
    start_at(&mut sb, 1);
    let dir = tempfile::tempdir().unwrap();
    let mut o = DumpOptions::new(dir.path(), 1);
    o.threads = 1;
    o.split_min_rows = 0;
    o.pages = Some(PageOptions {
        datadir: sb.sandbox.datadir.clone(),
        uncommitted: Vec::new(),
        lowest_active: None,
    });
    let connector = crate::recover::Restarting {
        sandbox: std::sync::Mutex::new(sb.sandbox.clone()),
        level: 1,
        restarts: Default::default(),
    };
    let m = dump::dump(
        &connector,
        &[TableName::new("db", "t")],
        &o,
        &AtomicBool::new(false),
    )
    .expect("dump");
    let t = m.table("db", "t").unwrap();
    assert_eq!(t.status, TableStatus::Doubtful, "{t:?}");
    let got = loaded(dir.path(), "rpg3l");
    for (id, row) in &got {
        if truth.get(id) != Some(row) {
            assert!(
                doubted(t, *id),
                "row {id} differs from the truth and no doubt names it"
            );
        }
    }
    // What SQL could not read of the scrambled page (measured: the records under the bytes and the rest of
    // their directory stretch) the page pass cannot prove either: no row is written from it, the range stays
    // lost, and the garbage it met there is listed as unproven records of that page.
    let p = t.pages.as_ref().expect("pages");
    assert!(p.refused.is_none(), "{p:?}");
    assert_eq!(p.page_rows, 0, "{p:?}");
    assert_eq!(t.rows, p.sql_rows);
    assert!(!t.lost.is_empty());
    assert!(
        t.lost
            .iter()
            .any(|l| l.records.iter().any(|u| u.page == bad)),
        "{:?}",
        t.lost
    );
}

/// A sandbox whose `db.t` (3,000 rows) has 512 bytes of page `page` overwritten, restarted with
/// `innodb_force_recovery = 1`, and the table's rows by id taken before the damage.
fn with_page_damaged(name: &str, page: u32) -> (Sandboxed, BTreeMap<i64, TextRow>) {
    let mut sb = Sandboxed::new(name);
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    let truth = by_id(table_rows(&mut c, "db.t", "id"));
    drop(c);
    stop_slow(&sb);
    damage(&sb, "t", page);
    start_at(&mut sb, 1);
    (sb, truth)
}

/// The damaged root page (issue 30's headline): SQL cannot open the table (ERROR 1877) and returns nothing;
/// with `--pages` every leaf is read from the data file, every row comes back equal to the truth, nothing is
/// lost, the file's CREATE TABLE is rebuilt from the dictionary and loads, and the table says what was not
/// checked.
#[test]
fn a_damaged_root_page_gives_every_row_from_the_leaves() {
    let (sb, truth) = with_page_damaged("rpg4", 3);

    let (_sql_dir, m0) = dumped(&sb, false);
    let t0 = m0.table("db", "t").unwrap();
    assert_eq!(t0.status, TableStatus::Unrecoverable, "{t0:?}");
    assert_eq!(t0.rows, 0);

    let (dir, m) = dumped(&sb, true);
    let t = m.table("db", "t").unwrap();
    let p = t.pages.as_ref().expect("pages");
    assert!(p.refused.is_none(), "{p:?}");
    assert_eq!((p.sql_rows, p.page_rows), (0, 3000), "{p:?}");
    assert!(p.pages.iter().all(|p| p.checksum_ok), "{p:?}");
    assert!(t.lost.is_empty(), "{:?}", t.lost);
    assert!(t.doubts.is_empty(), "{:?}", t.doubts);
    assert_eq!(t.status, TableStatus::Complete, "{t:?}");
    assert!(
        t.unchecked
            .iter()
            .any(|u| u.contains("cannot be opened through SQL")),
        "{:?}",
        t.unchecked
    );
    assert_eq!(loaded(dir.path(), "rpg4l"), truth);
}

/// A damaged page 0 (the tablespace header: the server answers ERROR 1877 for the table, as for a damaged root):
/// the file's format is read from its other pages, and every row comes back from the leaves, equal to the truth,
/// with a note saying how the format was found.
#[test]
fn a_damaged_page_0_is_read_in_the_format_its_other_pages_pass_in() {
    let (sb, truth) = with_page_damaged("rpg0", 0);

    let (_sql_dir, t0) = dumped(&sb, false);
    let t0 = t0.table("db", "t").unwrap();
    assert_eq!(
        (t0.status, t0.rows),
        (TableStatus::Unrecoverable, 0),
        "{t0:?}"
    );

    let (dir, m) = dumped(&sb, true);
    let t = m.table("db", "t").unwrap();
    let p = t.pages.as_ref().expect("pages");
    assert!(p.refused.is_none(), "{p:?}");
    assert_eq!((p.sql_rows, p.page_rows), (0, 3000), "{p:?}");
    assert!(
        p.notes
            .iter()
            .any(|n| n
                .starts_with("page 0 is damaged: the file's format (full_crc32, 16384-byte pages")),
        "{:?}",
        p.notes
    );
    assert!(t.lost.is_empty(), "{:?}", t.lost);
    assert_eq!(t.status, TableStatus::Complete, "{t:?}");
    assert_eq!(loaded(dir.path(), "rpg0l"), truth);
}

/// `--pages` reads the copy's files: with `--in-place` there is no copy, and the flags are refused together.
#[test]
fn pages_is_refused_with_in_place() {
    let out = run_innops(
        &[
            "recover",
            "--in-place",
            "--pages",
            "--out",
            "/nonexistent/out",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>(),
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--pages"), "{}", out.stderr);
}

/// `innops recover` on `db.t`'s copy, `--tables`, `--verify-load`, and `extra` flags; its exit and output.
fn recover_run(sb: &Sandboxed, work: &Path, tables: &str, extra: &[&str]) -> crate::common::Output {
    let out_dir = work.join("out");
    let mut args: Vec<String> = [
        "recover",
        "--sandbox",
        &sb.sandbox.name,
        "--sandbox-root",
        sb.root.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--copy-to",
        work.join("copy").to_str().unwrap(),
        "--tables",
        tables,
        "--verify-load",
        "--drop-copy",
        "--execute",
        "--yes",
        "--run-dir",
        work.join("run").to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    run_innops(&args, &[])
}

/// `--pages` left out is `auto`: on a damaged table the SQL reads leave a lost range and the page pass runs on
/// it (the manifest says it ran and why; it fails here if auto did not run the pass); on a healthy table of
/// the same run it does not run, and says why. `--pages never` keeps the SQL result and says so per table.
#[test]
fn pages_auto_is_the_default_and_runs_only_where_the_sql_reads_lost_rows() {
    let mut sb = Sandboxed::new("rpg5");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    int_table(&mut c, "h", 500);
    let keys = rows(&mut c, "SELECT id FROM db.t ORDER BY id");
    drop(c);
    stop_slow(&sb);
    let leaves = leaves(&sb, "t", 3);
    let per_leaf = keys_per_leaf(&leaves, &keys);
    let bad = leaves.len() / 2;
    damage(&sb, "t", leaves[bad].page);
    start_at(&mut sb, 0);

    let work = sb.root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let out = recover_run(&sb, &work, "db.t,db.h", &[]);
    assert_eq!(out.code, 4, "{out:?}");
    let m = Manifest::read(&work.join("out")).unwrap();
    let t = m.table("db", "t").unwrap();
    let pass = t.page_pass.as_ref().expect("the page pass's word on db.t");
    assert!(
        pass.ran,
        "auto did not run the page pass on a damaged table: {pass:?}"
    );
    assert!(pass.why.contains("lost range"), "{pass:?}");
    let p = t.pages.as_ref().expect("pages");
    assert!(p.refused.is_none() && p.page_rows > 0, "{p:?}");
    assert_eq!(
        p.sql_rows as usize,
        keys.len() - per_leaf[bad].len(),
        "{p:?}"
    );
    assert_eq!(t.rows, p.sql_rows + p.page_rows);
    assert!(
        out.stdout.contains("read from the data file from page"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("loaded as recorded"), "{}", out.stdout);

    let h = m.table("db", "h").unwrap();
    assert_eq!(h.status, TableStatus::Complete, "{h:?}");
    assert_eq!(h.rows, 500);
    assert!(h.pages.is_none(), "{h:?}");
    let pass = h.page_pass.as_ref().expect("the page pass's word on db.h");
    assert!(!pass.ran, "{pass:?}");
    assert!(pass.why.contains("lost nothing"), "{pass:?}");

    // --pages never: the SQL result alone, and the table says why its lost range stays.
    let never = sb.root.join("never");
    std::fs::create_dir_all(&never).unwrap();
    let out = recover_run(&sb, &never, "db.t", &["--pages", "never"]);
    assert_eq!(out.code, 4, "{out:?}");
    let m = Manifest::read(&never.join("out")).unwrap();
    let t = m.table("db", "t").unwrap();
    assert!(t.pages.is_none(), "{t:?}");
    assert_eq!(t.rows as usize, keys.len() - per_leaf[bad].len());
    let pass = t.page_pass.as_ref().expect("the page pass's word");
    assert!(
        !pass.ran && pass.why.starts_with("--pages never"),
        "{pass:?}"
    );
    assert!(
        out.stdout
            .contains("(page pass not run: --pages never: the 1 lost range(s) stay"),
        "{}",
        out.stdout
    );
}

/// A damaged non-leaf page (issue 30): the first page of the level above the leaves of a three-level index, so
/// every read that starts at the table's start descends through it and fails, while every leaf is whole. SQL
/// alone loses the keys under it; with the page pass every row comes back, equal to the truth taken before the
/// damage, from leaves whose checksums pass: nothing lost, nothing in doubt.
#[test]
fn a_damaged_non_leaf_page_gives_every_row_back_from_the_whole_leaves() {
    use innops::procedures::drill::damage as pages;
    let mut sb = Sandboxed::new("rpg6");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    // ~72 rows a leaf: ~2,800 leaves, more than one level-1 page can point to (the root at level 2).
    int_table(&mut c, "t", 200_000);
    let truth = by_id(table_rows(&mut c, "db.t", "id"));
    drop(c);
    stop_slow(&sb);
    let levels = pages::Stopped::already(&sb.sandbox)
        .unwrap()
        .table("db", "t")
        .unwrap()
        .levels(3)
        .unwrap();
    assert_eq!(
        levels.len(),
        3,
        "a root at level 2: {:?}",
        levels.iter().map(Vec::len).collect::<Vec<_>>()
    );
    assert!(levels[1].len() >= 2, "{:?}", levels[1]);
    damage(&sb, "t", levels[1][0].page);
    start_at(&mut sb, 0);

    let (_sql_dir, m0) = dumped(&sb, false);
    let t0 = m0.table("db", "t").unwrap();
    assert!(
        (t0.rows as usize) < truth.len() && !t0.lost.is_empty(),
        "SQL alone loses the keys under the damaged page: {} rows, lost {:?}",
        t0.rows,
        t0.lost
    );

    let (dir, m) = dumped(&sb, true);
    let t = m.table("db", "t").unwrap();
    let p = t.pages.as_ref().expect("pages");
    assert!(p.refused.is_none(), "{p:?}");
    assert_eq!(p.sql_rows, t0.rows, "{p:?}");
    assert_eq!((p.sql_rows + p.page_rows) as usize, truth.len(), "{p:?}");
    assert!(
        p.pages.iter().all(|r| r.checksum_ok && r.unproven == 0),
        "{p:?}"
    );
    assert!(t.lost.is_empty(), "{:?}", t.lost);
    assert!(t.doubts.is_empty(), "{:?}", t.doubts);
    assert_eq!(t.status, TableStatus::Complete, "{t:?}");
    assert!(t.page_pass.as_ref().is_some_and(|p| p.ran), "{t:?}");
    assert_eq!(loaded(dir.path(), "rpg6l"), truth);
}

/// A damaged BLOB page (issue 30): the record whose externally stored value runs through it is never written as
/// a row (its chain fails its checksum) and is listed in lost.jsonl with its key; every other row equals the
/// truth. The root page is damaged too, so SQL cannot open the table and every record goes through the page
/// pass: with the BLOB page alone, SQL reads the row with the value cut short and names it in an `error_log`
/// doubt (tests/recover_layouts.rs, case g), and nothing is lost for the page pass to read.
#[test]
fn a_damaged_blob_page_keeps_its_record_out_of_the_rows_and_lists_its_key() {
    use innops::procedures::drill::damage as pages;
    let mut sb = Sandboxed::new("rpg7");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    c.query_drop(
        "CREATE TABLE db.t (id INT PRIMARY KEY, k INT NOT NULL, b MEDIUMBLOB, KEY k (k)) ENGINE=InnoDB",
    )
    .unwrap();
    // Every 50th row a value of ~21 KB (a chain of two BLOB pages) that starts with its own id.
    c.query_drop(
        "INSERT INTO db.t SELECT seq, seq * 7 % 1000, \
         IF(seq % 50 = 0, REPEAT(CONCAT('id', seq, '-'), 3000), CONCAT('s', seq)) FROM seq_1_to_2000",
    )
    .unwrap();
    let truth = by_id(table_rows(&mut c, "db.t", "id"));
    drop(c);
    stop_slow(&sb);
    let stopped = pages::Stopped::already(&sb.sandbox).unwrap();
    let file = stopped.table("db", "t").unwrap();
    let chains = file.blob_chains().unwrap();
    assert_eq!(chains.len(), 40, "{chains:?}");
    let chain = &chains[chains.len() / 2];
    assert!(chain.pages.len() >= 2, "{chain:?}");
    let head = String::from_utf8_lossy(&chain.head).into_owned();
    let victim: i64 = head
        .strip_prefix("id")
        .and_then(|h| h.split('-').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("whose value: {head}"));
    assert!(truth.contains_key(&victim));
    file.damage(chain.pages[1]).unwrap();
    file.damage(3).unwrap();
    start_at(&mut sb, 1);

    let (dir, m) = dumped(&sb, true);
    let t = m.table("db", "t").unwrap();
    let p = t.pages.as_ref().expect("pages");
    assert!(p.refused.is_none(), "{p:?}");
    assert_eq!(
        (p.sql_rows, p.page_rows as usize),
        (0, truth.len() - 1),
        "{p:?} victim {victim} lost {:?}",
        t.lost
    );
    // The one record not proven: its own lost range, with its key and why.
    assert_eq!(t.lost.len(), 1, "{:?}", t.lost);
    let l = &t.lost[0];
    let key = Some(vec![serde_json::json!(victim)]);
    assert_eq!((&l.from, &l.to), (&key, &key), "{l:?}");
    assert_eq!(l.records.len(), 1, "{l:?}");
    assert_eq!(l.records[0].key, key, "{l:?}");
    assert!(
        l.records[0]
            .reason
            .contains("externally stored column `b` is incomplete")
            && l.records[0]
                .reason
                .contains(&format!("page {}", chain.pages[1])),
        "{l:?}"
    );
    assert_eq!(t.status, TableStatus::Partial, "{t:?}");
    let lines = std::fs::read_to_string(dir.path().join("lost.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
    let line: serde_json::Value = serde_json::from_str(lines.trim()).unwrap();
    assert_eq!(line["from"], serde_json::json!([victim]), "{line}");
    // Every row written equals the truth; the victim is not among them.
    let got = loaded(dir.path(), "rpg7l");
    let mut want = truth.clone();
    want.remove(&victim);
    assert_eq!(got, want);
}

/// FLOAT and DOUBLE columns (plain, fixed decimals, REAL): the rows read from a damaged leaf are written with
/// the server's text, so the dump loads back with the manifest's content hash and every row equals the truth.
#[test]
fn pages_recover_float_and_double_rows_that_load_back_as_the_server_printed_them() {
    let sb = Sandboxed::new("rpgf");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    c.query_drop(
        "CREATE TABLE db.t (id INT PRIMARY KEY, f FLOAT, d DOUBLE, f73 FLOAT(7,3), d206 DOUBLE(20,6), \
         r REAL, c VARCHAR(200) NOT NULL) ENGINE=InnoDB",
    )
    .unwrap();
    c.query_drop(
        "INSERT INTO db.t SELECT seq, SIN(seq) * POW(10, seq % 70 - 40), \
         IF(seq % 17 = 0, NULL, COS(seq) * POW(10, seq % 600 - 300)), seq * 1.2345 - 2000, \
         seq * 12345.678901 - 1e7, IF(seq % 5 = 0, -1e-50, 1 / (seq + 0.5e0)), REPEAT('x', 150) \
         FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_3000) s",
    )
    .unwrap();
    let (truth, got) = one_leaf_damaged(sb, c, "rpgfl");
    assert!(
        got.len() > truth.len() - 60,
        "{} of {}",
        got.len(),
        truth.len()
    );
}

/// A REDUNDANT table (which MariaDB 10.11 still creates) through the same path: a damaged leaf's intact
/// records are read from its pages, not refused, and every row in the files equals the truth.
#[test]
fn a_redundant_tables_damaged_leaf_gives_its_intact_rows_back() {
    let sb = Sandboxed::new("rpg8");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    c.query_drop("ALTER TABLE db.t ROW_FORMAT=REDUNDANT")
        .unwrap();
    let (truth, got) = one_leaf_damaged(sb, c, "rpg8l");
    assert!(
        got.len() < truth.len(),
        "the 512 bad bytes garble some records"
    );
}

/// `db.t` of `sb` (`c` its session) as the truth, then its middle leaf given 512 bad bytes after a slow
/// shutdown; dumped with the page pass (which must read rows, not refuse), loaded into a fresh sandbox named
/// `load`: the truth, and the rows loaded, each equal to the truth's row of its key.
fn one_leaf_damaged(
    mut sb: Sandboxed,
    mut c: mysql::Conn,
    load: &str,
) -> (BTreeMap<i64, TextRow>, BTreeMap<i64, TextRow>) {
    let truth = by_id(table_rows(&mut c, "db.t", "id"));
    drop(c);
    stop_slow(&sb);
    let leaves = leaves(&sb, "t", 3);
    damage(&sb, "t", leaves[leaves.len() / 2].page);
    start_at(&mut sb, 0);
    let (dir, m) = dumped(&sb, true);
    let t = m.table("db", "t").unwrap();
    let p = t.pages.as_ref().expect("the pages entry");
    assert!(p.refused.is_none(), "{p:?}");
    assert!(p.page_rows > 0, "{p:?}");
    assert_eq!(t.rows, p.sql_rows + p.page_rows);
    let got = loaded(dir.path(), load);
    assert_eq!(got.len() as u64, t.rows);
    for (id, row) in &got {
        assert_eq!(Some(row), truth.get(id), "row {id} differs from the truth");
    }
    (truth, got)
}

/// An instant ALTER TABLE (a column dropped and another added) leaves the leaves' records in two layouts, and a
/// record of the old layout can decode as a wrong row of the new one: the page pass refuses the whole table in
/// one sentence and it keeps the SQL result — whether the root's page type says so or, that word overwritten,
/// the first leaf's metadata record does (the table SQL then cannot open is unrecoverable, with that reason).
#[test]
fn an_instantly_altered_table_is_refused_by_the_page_pass_never_read_into_wrong_rows() {
    let mut sb = Sandboxed::new("rpginst");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    c.query_drop(
        "CREATE TABLE db.t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(200) NOT NULL) ENGINE=InnoDB",
    )
    .unwrap();
    c.query_drop("INSERT INTO db.t SELECT seq, seq, REPEAT('b', 180) FROM seq_1_to_3000")
        .unwrap();
    c.query_drop(
        "ALTER TABLE db.t DROP COLUMN a, ADD COLUMN c INT NOT NULL DEFAULT 7, ALGORITHM=INSTANT",
    )
    .unwrap();
    let truth = by_id(table_rows(&mut c, "db.t", "id"));
    drop(c);
    stop_slow(&sb);
    // A leaf in the middle of the file (page 3 is the root; about 40 leaves follow it).
    damage(&sb, "t", 20);
    start_at(&mut sb, 1);
    let (dir, m) = dumped(&sb, true);
    let t = m.table("db", "t").unwrap();
    let p = t.pages.as_ref().expect("pages");
    assert!(
        p.refused.as_deref().is_some_and(|r| r.contains(
            "an instant ALTER TABLE (ADD, DROP or reorder of columns) changed the table, as its root page 3 says"
        )),
        "{p:?}"
    );
    assert_eq!(p.page_rows, 0, "{p:?}");
    assert!(!t.lost.is_empty(), "{t:?}");
    let got = loaded(dir.path(), "rpginstl");
    assert!(got.len() < truth.len());
    for (id, row) in &got {
        assert_eq!(Some(row), truth.get(id), "row {id}");
    }

    // The root's page type overwritten with an ordinary index page's: the first leaf's metadata record says it.
    sb.sandbox.kill9().unwrap();
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(crate::common::recover::ibd(&sb, "db", "t"))
            .unwrap();
        f.seek(SeekFrom::Start(3 * 16384 + 24)).unwrap();
        f.write_all(&17855u16.to_be_bytes()).unwrap();
    }
    start_at(&mut sb, 1);
    let (_dir, m) = dumped(&sb, true);
    let t = m.table("db", "t").unwrap();
    let refused = t
        .pages
        .as_ref()
        .and_then(|p| p.refused.clone())
        .unwrap_or_default();
    assert!(
        refused.contains("begins with the metadata record an instant ALTER TABLE"),
        "{t:?}"
    );
    assert_eq!(t.pages.as_ref().unwrap().page_rows, 0);
}

/// A table clustered by (name VARCHAR, n INT) in a case- and accent-insensitive collation, whose order is not
/// the bytes' ('a' < 'B' < 'Z'; 'a…' and 'ä…' equal, told apart by n): about 60 rows to a leaf. Returns the
/// rows in the server's key order, taken before any damage.
fn text_key_table(sb: &Sandboxed) -> Vec<TextRow> {
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    c.query_drop(
        "CREATE TABLE db.t (name VARCHAR(40) NOT NULL, n INT NOT NULL, c VARCHAR(200) NOT NULL, \
         PRIMARY KEY (name, n)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
    )
    .unwrap();
    c.query_drop(
        "INSERT INTO db.t SELECT CONCAT(ELT(seq % 4 + 1, 'a', 'B', 'ä', 'Z'), LPAD(seq DIV 4, 5, '0')), \
         seq % 3, CONCAT(REPEAT('y', 180), seq) FROM seq_1_to_3000",
    )
    .unwrap();
    table_rows(&mut c, "db.t", "name, n")
}

/// The dump's rows of `db.t` loaded into a fresh sandbox (as the manifest says), in the server's key order; the
/// loaded table's default collation is the original's (`text_key_table`'s, not the server's latin1).
fn loaded_text(dir: &Path, name: &str) -> Vec<TextRow> {
    let fresh = Sandboxed::new(name);
    let checked = dump::verify_load(dir, &fresh.target(), "/* innops:test */").expect("load");
    assert!(checked.ok(), "{checked:?}");
    let mut c = fresh.conn();
    let collation: Option<String> = c
        .query_first(
            "SELECT TABLE_COLLATION FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'db' AND TABLE_NAME = 't'",
        )
        .unwrap();
    assert_eq!(collation.as_deref(), Some("utf8mb4_general_ci"));
    table_rows(&mut c, "db.t", "name, n")
}

/// A clustered key that is not all integers, SQL able to read none of the table (root page damaged): every
/// leaf is read from the data file, each key ranked by its place on the chain, and every row comes back equal
/// to the truth, nothing lost, nothing counted twice — the collation-equal names ('a00001', 'ä00001') included.
#[test]
fn a_text_keyed_table_whose_root_is_damaged_gives_every_row_from_the_leaves() {
    let mut sb = Sandboxed::new("rpt1");
    let truth = text_key_table(&sb);
    stop_slow(&sb);
    damage(&sb, "t", 3);
    start_at(&mut sb, 1);

    let (dir, m) = dumped(&sb, true);
    let t = m.table("db", "t").unwrap();
    let p = t.pages.as_ref().expect("pages");
    assert!(p.refused.is_none(), "{p:?}");
    assert_eq!((p.sql_rows, p.page_rows), (0, truth.len() as u64), "{p:?}");
    assert!(t.lost.is_empty(), "{:?}", t.lost);
    assert!(t.doubts.is_empty(), "{:?}", t.doubts);
    assert_eq!(t.status, TableStatus::Complete, "{t:?}");
    assert_eq!(loaded_text(dir.path(), "rpt1l"), truth);
}

/// A text-keyed table with one damaged leaf while SQL reads the rest: the lost range SQL leaves is placed on the
/// leaf chain by the ranks of its bounds' own records (no key is compared in the collation), the damaged leaf's
/// intact records come back as rows equal to the truth, and exactly the rows not written lie inside the lost
/// ranges that remain, each bounded by keys of the truth around it in the server's order.
#[test]
fn a_text_keyed_tables_damaged_leaf_gives_its_intact_records_back() {
    let mut sb = Sandboxed::new("rpt2");
    let truth = text_key_table(&sb);
    stop_slow(&sb);
    let leaves = leaves(&sb, "t", 3);
    let keys: Vec<TextRow> = truth.iter().map(|r| r[..2].to_vec()).collect();
    let per_leaf = keys_per_leaf(&leaves, &keys);
    let bad = leaves.len() / 2;
    damage(&sb, "t", leaves[bad].page);
    start_at(&mut sb, 0);

    let (_sql_dir, m0) = dumped(&sb, false);
    let t0 = m0.table("db", "t").unwrap();
    assert_eq!(
        t0.rows as usize,
        truth.len() - per_leaf[bad].len(),
        "{t0:?}"
    );
    let (dir, m) = dumped(&sb, true);
    let t = m.table("db", "t").unwrap();
    let p = t.pages.as_ref().expect("pages");
    assert!(p.refused.is_none(), "{p:?}");
    assert_eq!(p.sql_rows, t0.rows, "{p:?}");
    assert!(p.page_rows > 0, "{p:?}");
    assert_eq!(p.pages.len(), 1, "only the damaged leaf gave rows: {p:?}");
    assert_eq!(p.pages[0].page, leaves[bad].page);

    let got = loaded_text(dir.path(), "rpt2l");
    assert_eq!(got.len() as u64, t.rows);
    let place: BTreeMap<&[Option<String>], usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_slice(), i))
        .collect();
    let got_at: BTreeSet<usize> = got
        .iter()
        .map(|r| {
            let i = place[&r[..2]];
            assert_eq!(r, &truth[i], "a row written differs from the truth");
            i
        })
        .collect();
    let on_bad: BTreeSet<usize> = per_leaf[bad].iter().map(|k| place[k.as_slice()]).collect();
    let missing: BTreeSet<usize> = (0..truth.len()).filter(|i| !got_at.contains(i)).collect();
    assert!(!missing.is_empty(), "the 512 bad bytes garble some records");
    assert!(missing.is_subset(&on_bad), "{missing:?}");
    // The lost ranges as places in the server's order: (after, before) exclusive, or one unproven record.
    let at = |k: &Option<Vec<serde_json::Value>>| {
        k.as_ref().map(|k| {
            let key = vec![
                k[0].as_str().map(String::from),
                Some(k[1].as_i64().unwrap().to_string()),
            ];
            place[key.as_slice()]
        })
    };
    let inside = |i: usize| {
        t.lost.iter().any(|l| match (at(&l.from), at(&l.to)) {
            (Some(f), Some(to)) => f <= i && i <= to,
            _ => at(&l.after).is_none_or(|a| a < i) && at(&l.before).is_none_or(|b| i < b),
        })
    };
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(
            inside(i),
            missing.contains(&i),
            "row {key:?}: lost {:?}",
            t.lost
        );
    }
    assert_ne!(t.status, TableStatus::Complete, "{t:?}");
}
