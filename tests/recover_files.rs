//! `recover` when no server starts on the copy at any level (issue 30): with `--pages auto` (the default) every
//! table is read from its files alone — its definition from its `.frm`, its rows from its `.ibd` — and the
//! manifest and verdict say so. The sandbox is shut down slowly (its data files then hold every row), started
//! and killed, one leaf of one table gets 512 bad bytes, and the redo log crash recovery needs is overwritten,
//! so that no level up to 3 starts. The rows are compared with a ground truth taken before the damage, through a load into a fresh
//! sandbox.

use std::collections::BTreeMap;
use std::path::Path;

use innops::dump::{self, DoubtKind, Manifest, TableStatus};
use mysql::prelude::Queryable;

use crate::common::recover::{
    damage, damage_redo, int_table, keys_per_leaf, leaves, rows, start_at, stop_slow, table_rows,
    TextRow,
};
use crate::common::{run_innops, Output, Sandboxed};

fn recover(sb: &Sandboxed, work: &Path, run: &str, extra: &[&str]) -> Output {
    run_innops(&recover_args(sb, work, run, extra), &[])
}

fn recover_args(sb: &Sandboxed, work: &Path, run: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "recover",
        "--datadir",
        sb.sandbox.datadir.to_str().unwrap(),
        "--out",
        work.join(format!("out-{run}")).to_str().unwrap(),
        "--copy-to",
        work.join(format!("copy-{run}")).to_str().unwrap(),
        "--execute",
        "--yes",
        "--run-dir",
        work.join(format!("run-{run}")).to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn by_id(rows: Vec<TextRow>) -> BTreeMap<i64, TextRow> {
    rows.into_iter()
        .map(|r| (r[0].as_ref().unwrap().parse().unwrap(), r))
        .collect()
}

#[test]
fn when_no_level_starts_every_table_is_read_from_its_frm_and_ibd() {
    let mut sb = Sandboxed::new("rfiles");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    int_table(&mut c, "u", 3000);
    // Generated columns (the .frm keeps their expressions), a NULL, a promoted UNIQUE key, another engine, a view.
    c.query_drop(
        "CREATE TABLE db.g (id BIGINT UNSIGNED NOT NULL, a INT, s VARCHAR(20) AS (CONCAT('x', a)) STORED, \
         v INT AS (a * 2) VIRTUAL, d DATETIME(3), UNIQUE KEY uid (id)) ENGINE=InnoDB \
         DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci",
    )
    .unwrap();
    c.query_drop(
        "INSERT INTO db.g (id, a, d) SELECT seq, IF(seq % 10 = 0, NULL, seq), '2026-12-04 10:00:00.125' + INTERVAL seq SECOND FROM seq_1_to_500",
    )
    .unwrap();
    c.query_drop("CREATE TABLE db.m (id INT PRIMARY KEY) ENGINE=MyISAM")
        .unwrap();
    c.query_drop("INSERT INTO db.m VALUES (1)").unwrap();
    c.query_drop("CREATE VIEW db.w AS SELECT id FROM db.t")
        .unwrap();
    let truth_t = by_id(table_rows(&mut c, "db.t", "id"));
    let truth_u = by_id(table_rows(&mut c, "db.u", "id"));
    let truth_g = by_id(table_rows(&mut c, "db.g", "id"));
    let keys_u = rows(&mut c, "SELECT id FROM db.u ORDER BY id");
    drop(c);
    stop_slow(&sb);
    let leaves_u = leaves(&sb, "u", 3);
    let per_leaf = keys_per_leaf(&leaves_u, &keys_u);
    // Started again and killed: a crash whose recovery needs the redo log (no row changed since the slow
    // shutdown, so the data files still hold every row).
    start_at(&mut sb, 0);
    sb.sandbox.kill9().unwrap();
    let bad = leaves_u.len() / 2;
    damage(&sb, "u", leaves_u[bad].page);
    damage_redo(&sb);
    let work = sb.root.join("work");
    std::fs::create_dir_all(&work).unwrap();

    // --pages never: the refusal as before, and it names the way out.
    let never = recover(&sb, &work, "never", &["--pages", "never"]);
    assert_eq!(never.code, 1, "{never:?}");
    assert!(
        never
            .error_line()
            .contains("--pages auto would read the tables from their files"),
        "{}",
        never.error_line()
    );

    // A table no .frm names: refused in one sentence after the copy.
    let missing = recover(&sb, &work, "missing", &["--tables", "db.t,db.nosuch"]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(
        missing
            .error_line()
            .contains("the copy's files hold no .frm for `db`.`nosuch`"),
        "{}",
        missing.error_line()
    );

    // Killed once the escalation has recorded that no level starts: the resume goes on from that record (no
    // level is tried again) and reads the files.
    let run = work.join("run-auto");
    let killed = run_innops(
        &recover_args(&sb, &work, "auto", &[]),
        &[("INNOPS_FAULT", "after-action:escalate")],
    );
    assert_ne!(killed.code, 0, "{killed:?}");
    assert!(!work.join("out-auto").join("manifest.json").exists());
    let out = run_innops(
        &[
            "resume".to_string(),
            run.display().to_string(),
            "--yes".to_string(),
        ],
        &[],
    );
    assert_eq!(out.code, 4, "{out:?}");
    assert!(
        out.stdout
            .contains("every table is read from its .frm and .ibd files, with no server"),
        "{}",
        out.stdout
    );
    let dir = work.join("out-auto");
    let m = Manifest::read(&dir).unwrap();
    assert_eq!(m.level, 0);
    assert!(
        m.files_only
            .as_deref()
            .is_some_and(|w| w.contains("at any level up to 3")),
        "{:?}",
        m.files_only
    );
    let names: Vec<&str> = m.tables.iter().map(|t| t.table.as_str()).collect();
    assert_eq!(names, ["g", "m", "t", "u"], "the view is not a table");
    for t in &m.tables {
        if t.table == "m" {
            continue;
        }
        // Every row read with no server is in doubt as possibly uncommitted, and the file says why.
        assert_eq!(t.status, TableStatus::Doubtful, "{t:?}");
        assert!(
            t.doubts
                .iter()
                .any(|d| d.kind == DoubtKind::Uncommitted && d.range.is_none()),
            "{:?}",
            t.doubts
        );
        let p = t.pages.as_ref().expect("pages");
        assert_eq!(p.sql_rows, 0, "{p:?}");
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("crash recovery never ran on this file")),
            "{:?}",
            p.notes
        );
        assert!(t.page_pass.as_ref().is_some_and(|pp| pp.ran), "{t:?}");
    }
    // The MyISAM table has no .ibd to read: not recoverable from its files, in one sentence.
    let mt = m.table("db", "m").unwrap();
    assert_eq!(mt.status, TableStatus::Unrecoverable, "{mt:?}");
    assert!(
        mt.note.as_deref().is_some_and(|n| n.contains("not InnoDB")),
        "{mt:?}"
    );
    assert!(
        out.stdout.contains("db.m: not recoverable from its files"),
        "{}",
        out.stdout
    );
    // The damaged leaf's table: a lost range where the bad bytes were, never a wrong row.
    let ut = m.table("db", "u").unwrap();
    assert!(!ut.lost.is_empty(), "{ut:?}");
    assert!(
        (ut.rows as usize) > truth_u.len() - per_leaf[bad].len()
            && (ut.rows as usize) < truth_u.len(),
        "{} rows",
        ut.rows
    );

    // Loaded into a fresh sandbox: the healthy tables whole, the damaged one a subset of the truth, the
    // generated columns computed again by the server.
    let fresh = Sandboxed::new("rfilesl");
    let checked = dump::verify_load(&dir, &fresh.target(), "/* innops:test */").expect("load");
    assert!(checked.ok(), "{checked:?}");
    let mut f = fresh.conn();
    assert_eq!(by_id(table_rows(&mut f, "db.t", "id")), truth_t);
    assert_eq!(by_id(table_rows(&mut f, "db.g", "id")), truth_g);
    let got_u = by_id(table_rows(&mut f, "db.u", "id"));
    assert_eq!(got_u.len() as u64, ut.rows);
    for (id, row) in &got_u {
        assert_eq!(Some(row), truth_u.get(id), "row {id}");
    }
    let (_, create): (String, String) = f.query_first("SHOW CREATE TABLE db.g").unwrap().unwrap();
    assert!(
        create.contains("GENERATED ALWAYS AS (concat('x',`a`)) STORED")
            && create.contains("GENERATED ALWAYS AS (`a` * 2) VIRTUAL")
            && create.contains("UNIQUE KEY `uid` (`id`)")
            // The table's default character set, from its .frm (the server's own default is latin1).
            && create.contains("DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci"),
        "{create}"
    );
}

/// A copy that starts but whose dictionary does not list a table `--tables` names is refused as before (SQL with
/// its cross-checks reads what it lists better than the files alone): no table is read from its files, and the
/// refusal does not offer `--pages auto`, which would refuse the same way.
#[test]
fn a_copy_that_starts_without_a_named_table_is_refused_not_read_from_files() {
    let sb = Sandboxed::new("rfiles2");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("CREATE TABLE db.t (id INT PRIMARY KEY) ENGINE=InnoDB")
        .unwrap();
    drop(c);
    stop_slow(&sb);
    let work = sb.root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    for pages in ["auto", "never"] {
        let out = recover(
            &sb,
            &work,
            pages,
            &["--tables", "db.nosuch", "--pages", pages],
        );
        assert_eq!(out.code, 1, "{out:?}");
        let line = out.error_line();
        assert!(
            line.contains(
                "(its error log at level 3: innops: the data dictionary does not list `db`.`nosuch`)"
            ),
            "{line}"
        );
        assert!(!line.contains("--pages auto would"), "{line}");
        assert!(!work
            .join(format!("out-{pages}"))
            .join("manifest.json")
            .exists());
    }
}
