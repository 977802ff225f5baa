//! Issue 22, "procedures under each other": a plan that restarts the server or changes a global holds the
//! server-wide lock, runs alone, and every other plan stops before its next step while one holds it. Each run
//! is paused at a test hold point (`INNOPS_TEST_HOLD`), so nothing here depends on timing.

use std::path::Path;

use mysql::prelude::Queryable;

use crate::common::convert::{engine, setup};
use crate::common::{run_innops, spawn_innops, wait_holding, wait_innops, Output, Sandboxed};

/// Two MyISAM tables, d.a and d.b, of a few thousand rows each.
const TABLES: &str = "CREATE TABLE a (id INT UNSIGNED NOT NULL PRIMARY KEY, c CHAR(60) NOT NULL DEFAULT '') ENGINE=MyISAM; \
    INSERT INTO a SELECT seq, CONCAT('a-', seq) FROM seq_1_to_5000; \
    CREATE TABLE b (id INT UNSIGNED NOT NULL PRIMARY KEY, c CHAR(60) NOT NULL DEFAULT '') ENGINE=MyISAM; \
    INSERT INTO b SELECT seq, CONCAT('b-', seq) FROM seq_1_to_5000;";

fn with_sandbox(sb: &Sandboxed, a: &[&str]) -> Vec<String> {
    let mut all: Vec<String> = a.iter().map(|s| s.to_string()).collect();
    all.extend([
        "--sandbox".into(),
        sb.sandbox.name.clone(),
        "--sandbox-root".into(),
        sb.root.display().to_string(),
    ]);
    all
}

/// `innops ARGS` in the background, held at `point` until the test writes `hold/go`.
fn held(sb: &Sandboxed, a: &[&str], point: &str, hold: &Path) -> std::process::Child {
    std::fs::create_dir_all(hold).unwrap();
    let mut child = spawn_innops(
        &with_sandbox(sb, a),
        &[("INNOPS_TEST_HOLD", &format!("{point}={}", hold.display()))],
    );
    wait_holding(hold, &mut child);
    child
}

fn go(hold: &Path, child: std::process::Child) -> Output {
    std::fs::write(hold.join("go"), b"").unwrap();
    wait_innops(child)
}

fn convert_args<'a>(table: &'a str, run: &'a Path) -> Vec<&'a str> {
    vec![
        "convert",
        "--tables",
        table,
        "--execute",
        "--no-bench",
        "--run-dir",
        run.to_str().unwrap(),
    ]
}

#[test]
fn a_readonly_is_refused_while_a_convert_runs_and_names_it() {
    let sb = Sandboxed::new("lk-cvro");
    let mut c = setup(&sb, TABLES);
    let hold = sb.root.join("hold");
    let run = sb.root.join("run");
    let first = held(&sb, &convert_args("d.a", &run), "after-copy", &hold);
    let pid = sb.sandbox.running_pid();
    let ro_run = sb.root.join("ro");
    let ro = sb.innops(&[
        "readonly",
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
        ro_run.to_str().unwrap(),
    ]);
    assert_eq!(ro.code, 1, "{ro:?}");
    let line = ro.error_line();
    assert!(
        line.contains("an innops convert run") && line.contains("connection "),
        "the refusal names the convert and its connection: {line}"
    );
    assert!(!ro_run.join("journal.jsonl").exists(), "{ro:?}");
    assert_eq!(
        sb.sandbox.running_pid(),
        pid,
        "the server was not restarted"
    );
    // The dry run says the same.
    let dry = sb.innops(&["readonly", "--no-bench"]);
    assert_eq!(dry.code, 1, "{dry:?}");
    assert!(
        dry.stdout.contains("an innops convert run")
            || dry.stderr.contains("an innops convert run"),
        "{dry:?}"
    );
    // The convert goes on to the end, and a readonly after it runs.
    let done = go(&hold, first);
    assert_eq!(done.code, 0, "{done:?}");
    assert_eq!(engine(&mut c, "a").as_deref(), Some("InnoDB"));
    drop(c);
    let ro = sb.innops(&[
        "readonly",
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
        sb.root.join("ro2").to_str().unwrap(),
    ]);
    assert_eq!(ro.code, 0, "{ro:?}");
}

#[test]
fn a_redo_is_refused_while_a_readonly_runs_and_a_convert_waits_for_it() {
    let sb = Sandboxed::new("lk-rored");
    drop(setup(&sb, TABLES));
    let hold = sb.root.join("hold");
    let run = sb.root.join("run");
    let readonly = held(
        &sb,
        &[
            "readonly",
            "--execute",
            "--yes",
            "--no-bench",
            "--run-dir",
            run.to_str().unwrap(),
        ],
        "after-action:preflush",
        &hold,
    );
    let redo = sb.innops(&[
        "redo",
        "--size",
        "128M",
        "--offline",
        "--execute",
        "--yes",
        "--no-bench",
    ]);
    assert_eq!(redo.code, 1, "{redo:?}");
    let line = redo.error_line();
    assert!(
        line.contains("server-wide lock") && line.contains("an innops readonly run"),
        "{line}"
    );
    // A plan that changes no global runs beside nothing server-wide either.
    let cv = run_innops(
        &with_sandbox(
            &sb,
            &["convert", "--tables", "d.a", "--execute", "--no-bench"],
        ),
        &[],
    );
    assert_eq!(cv.code, 1, "{cv:?}");
    assert!(cv.error_line().contains("an innops readonly run"), "{cv:?}");
    let done = go(&hold, readonly);
    assert_eq!(done.code, 0, "{done:?}");
    let mut sb = sb;
    sb.reopen();
    let ro: u64 = sb
        .conn()
        .query_first("SELECT @@GLOBAL.innodb_read_only")
        .unwrap()
        .unwrap();
    assert_eq!(ro, 1, "the readonly finished under its lock");
}

#[test]
fn two_converts_of_different_tables_run_side_by_side() {
    let sb = Sandboxed::new("lk-cv2");
    let mut c = setup(&sb, TABLES);
    let hold = sb.root.join("hold");
    let first = held(
        &sb,
        &convert_args("d.a", &sb.root.join("run-a")),
        "after-copy",
        &hold,
    );
    let second = run_innops(
        &with_sandbox(&sb, &convert_args("d.b", &sb.root.join("run-b"))),
        &[],
    );
    assert_eq!(second.code, 0, "{second:?}");
    assert_eq!(engine(&mut c, "b").as_deref(), Some("InnoDB"));
    let done = go(&hold, first);
    assert_eq!(done.code, 0, "{done:?}");
    assert_eq!(engine(&mut c, "a").as_deref(), Some("InnoDB"));
}

/// A convert whose lock session was lost (killed here, as a restart or a DBA's KILL would end it) while a
/// server-wide run took the server: it stops before its next step, says why and how to go on, and resumes once
/// the other run is over.
#[test]
fn a_plan_stops_before_its_next_step_while_another_run_holds_the_server() {
    let sb = Sandboxed::new("lk-step");
    let mut c = setup(&sb, TABLES);
    let hold = sb.root.join("hold");
    let run = sb.root.join("run");
    let first = held(&sb, &convert_args("d.a", &run), "after-copy", &hold);
    let session: Option<Option<u64>> = c
        .query_first("SELECT IS_USED_LOCK('innops:plan:convert:0')")
        .unwrap();
    let session = session.flatten().expect("the convert holds slot 0");
    c.query_drop(format!("KILL {session}")).unwrap();
    // Another server-wide run, as innops holds its lock.
    let mut other = sb.conn();
    let got: Option<i64> = other
        .query_first("SELECT GET_LOCK('innops:server', 0)")
        .unwrap();
    assert_eq!(got, Some(1));
    let stopped = go(&hold, first);
    assert_eq!(stopped.code, 3, "{stopped:?}");
    let line = stopped.error_line();
    assert!(
        line.contains("stopped before step")
            && line.contains("server-wide lock")
            && line.contains(&format!("innops resume {}", run.display())),
        "{line}"
    );
    assert_eq!(
        engine(&mut c, "a").as_deref(),
        Some("MyISAM"),
        "nothing was swapped"
    );
    drop(other);
    let resumed = run_innops(&with_sandbox(&sb, &["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(engine(&mut c, "a").as_deref(), Some("InnoDB"));
}
