//! `innops deadlock`: the built-in scenarios end as their files expect on a real server, the documented one
//! 50 times over with the same victim, and the detection-off path ends in ERROR 1205 with nothing left open.

use crate::common::Sandboxed;
use crate::common::{args, sandbox_args, schema_exists};
use innops::procedures::deadlock::runner::live_transactions;
use mysql::prelude::Queryable;

/// Transactions InnoDB has open now (the live list: INNODB_TRX is a cache refreshed at most every 100 ms).
fn open_transactions(sb: &Sandboxed) -> Vec<u64> {
    let mut c = sb.conn();
    let (_, _, status): (String, String, String) =
        c.query_first("SHOW ENGINE INNODB STATUS").unwrap().unwrap();
    live_transactions(&status)
}

#[test]
fn deadlock_every_built_in_scenario_ends_as_its_file_expects() {
    let sb = Sandboxed::new("dl-builtin");
    for name in ["share-then-delete", "opposite-order", "gap-insert"] {
        let out = sb.innops(&["deadlock", "run", name, "--execute", "--format", "json"]);
        assert_eq!(out.code, 0, "{name}: {out:?}");
        let j = out.json();
        assert_eq!(j["as_expected"], true, "{name}");
        let rep = &j["repetitions"][0];
        assert_eq!(rep["victim"], "t2", "{name}");
        assert_eq!(
            rep["report_victim"], "t2",
            "{name}: the report names the same victim"
        );
        assert_eq!(
            rep["deadlocks_after"].as_u64().unwrap(),
            rep["deadlocks_before"].as_u64().unwrap() + 1,
            "{name}"
        );
        assert!(
            rep["report"]["transactions"].as_array().unwrap().len() == 2,
            "{name}"
        );
        assert!(
            !schema_exists(&sb, "innops_deadlock"),
            "{name}: the schema is dropped"
        );
    }
    assert!(open_transactions(&sb).is_empty());
}

#[test]
fn deadlock_share_then_delete_50_times_has_the_same_victim_and_leaves_nothing_open() {
    let sb = Sandboxed::new("dl-repeat");
    let out = sb.innops(&[
        "deadlock",
        "run",
        "share-then-delete",
        "--execute",
        "--repeat",
        "50",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    let reps = j["repetitions"].as_array().unwrap();
    assert_eq!(reps.len(), 50);
    let deadlocks: u64 = reps
        .iter()
        .map(|r| r["deadlocks_after"].as_u64().unwrap() - r["deadlocks_before"].as_u64().unwrap())
        .sum();
    assert_eq!(deadlocks, 50);
    assert!(reps
        .iter()
        .all(|r| r["victim"] == "t2" && r["open_after"] == 0));
    assert_eq!(j["same_every_time"], true);
    assert!(open_transactions(&sb).is_empty());
}

#[test]
fn deadlock_with_detection_off_ends_in_1205_rolls_back_and_restores_the_setting() {
    let sb = Sandboxed::new("dl-off");
    let run_dir = sb.root.join("run-off");
    let out = sb.innops(&[
        "deadlock",
        "run",
        "share-then-delete",
        "--execute",
        "--detect",
        "off",
        "--run-dir",
        run_dir.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    // A run that sets a global is a plan with a run directory.
    assert!(run_dir.join("plan.json").exists());
    let j = out.json();
    let result = &j["steps"][0]["result"];
    assert_eq!(result["deadlock_detect"], false);
    let rep = &result["runs"][0];
    let t2 = &rep["steps"][3];
    assert_eq!(t2["error_code"], 1205);
    assert_eq!(t2["blocked"], true);
    assert_eq!(rep["victim"], serde_json::Value::Null);
    assert_eq!(rep["deadlocks"], 0);
    assert_eq!(rep["rolled_back_open"], serde_json::json!(["t2"]));
    assert!(open_transactions(&sb).is_empty());
    let mut c = sb.conn();
    let on: Option<u64> = c
        .query_first("SELECT @@GLOBAL.innodb_deadlock_detect")
        .unwrap();
    assert_eq!(on, Some(1), "the setting is restored");
}

#[test]
fn deadlock_dry_run_creates_nothing_and_a_bad_file_names_file_line_and_field() {
    let sb = Sandboxed::new("dl-dry");
    let out = sb.innops(&["deadlock", "run", "share-then-delete"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("innodb_deadlock_detect=ON"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("LOCK IN SHARE MODE"), "{}", out.stdout);
    assert!(!schema_exists(&sb, "innops_deadlock"));

    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(
        &f,
        "sessions = [\"a\"]\n\n[[step]]\nsession = \"a\"\nsql = \"SELECT 1\"\nexpect = \"hang\"\n",
    )
    .unwrap();
    let out = sb.innops(&["deadlock", "run", f.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    let line = out.error_line();
    assert!(
        line.contains(&format!("{}:6: field expect:", f.display())),
        "{line}"
    );
}

/// The lines of a JSON-lines file written so far.
fn jsonl(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn deadlock_watch_appends_each_new_deadlock_parsed_with_its_victim() {
    use std::io::BufRead;
    let sb = Sandboxed::new("dl-watch");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("deadlocks.jsonl");
    let mut child = crate::common::spawn_innops(
        &[
            "deadlock",
            "watch",
            "--out",
            out.to_str().unwrap(),
            "--count",
            "2",
            "--duration",
            "600",
            "--interval",
            "0.2",
            "--sandbox",
            &sb.sandbox.name,
            "--sandbox-root",
            &sb.root.display().to_string(),
        ]
        .map(String::from),
        &[],
    );
    // The watch has read its starting point once it says it is watching.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("watching"), "{line}");
    for n in 1..=2 {
        let r = sb.innops(&["deadlock", "run", "share-then-delete", "--execute"]);
        assert_eq!(r.code, 0, "{r:?}");
        // Wait (bounded) for the watch to write it before the next one overwrites the report.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while jsonl(&out).len() < n && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    let rest = crate::common::wait_innops(child);
    assert_eq!(rest.code, 0, "{rest:?}");
    assert!(rest.stdout.contains("ended by count"), "{}", rest.stdout);
    let entries = jsonl(&out);
    assert_eq!(entries.len(), 2);
    for e in &entries {
        assert_eq!(e["missed_before"], 0);
        assert_eq!(e["deadlock"]["victim"], 2);
        assert_eq!(e["deadlock"]["transactions"].as_array().unwrap().len(), 2);
        let rows = e["rows"].as_array().unwrap();
        assert_eq!(rows.iter().filter(|r| r["victim"] == true).count(), 1);
    }
    assert_ne!(
        entries[0]["deadlock"]["transactions"][0]["trx_id"],
        entries[1]["deadlock"]["transactions"][0]["trx_id"]
    );
}

#[test]
fn deadlock_watch_without_a_bound_is_refused_as_bad_input() {
    let sb = Sandboxed::new("dl-watch-bound");
    let r = sb.innops(&["deadlock", "watch", "--out", "/tmp/never.jsonl"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.error_line().contains("--duration"), "{r:?}");
}

#[test]
fn deadlock_replay_of_a_captured_report_deadlocks_again() {
    let sb = Sandboxed::new("dl-replay");
    let dir = tempfile::tempdir().unwrap();
    for name in ["share-then-delete", "opposite-order", "gap-insert"] {
        let r = sb.innops(&["deadlock", "run", name, "--execute"]);
        assert_eq!(r.code, 0, "{r:?}");
        let mut c = sb.conn();
        let (_, _, status): (String, String, String) =
            c.query_first("SHOW ENGINE INNODB STATUS").unwrap().unwrap();
        let captured = dir.path().join(format!("{name}.txt"));
        std::fs::write(&captured, status).unwrap();
        let scenario = dir.path().join(format!("{name}-replayed.toml"));
        let r = crate::common::run_innops(
            &[
                "deadlock",
                "replay",
                "--from",
                captured.to_str().unwrap(),
                "--out",
                scenario.to_str().unwrap(),
            ]
            .map(String::from),
            &[],
        );
        assert_eq!(r.code, 0, "{r:?}");
        let text = std::fs::read_to_string(&scenario).unwrap();
        assert!(text.contains("# TODO: create the tables here"), "{text}");
        // Every lock a transaction held is taken again (gap-insert's by locking reads of the inserted keys):
        // the tables are the only thing left to the DBA.
        assert!(!text.contains("# TODO: t"), "{name}: {text}");
        // The DBA's part: the tables, here the built-in scenario's setup.
        let built_in = std::fs::read_to_string(format!(
            "{}/playbooks/deadlocks/{name}.toml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let setup_at = built_in.find("setup = [").unwrap();
        let setup_end = setup_at + built_in[setup_at..].find("\n]").unwrap() + 2;
        let filled = text.replace("setup = []", &built_in[setup_at..setup_end]);
        std::fs::write(&scenario, filled).unwrap();
        let r = sb.innops(&[
            "deadlock",
            "run",
            scenario.to_str().unwrap(),
            "--execute",
            "--format",
            "json",
        ]);
        assert_eq!(r.code, 0, "{name}: {r:?}\n{text}");
        let rep = &r.json()["repetitions"][0];
        assert_eq!(
            rep["deadlocks_after"].as_u64().unwrap(),
            rep["deadlocks_before"].as_u64().unwrap() + 1,
            "{name}"
        );
        assert!(rep["victim"].is_string(), "{name}");
    }
}

#[test]
fn deadlock_parse_of_a_file_without_a_report_says_so_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("status.txt");
    std::fs::write(
        &f,
        "=====================================\nBACKGROUND THREAD\n-----------------\nsrv_master_thread loops: 5\n",
    )
    .unwrap();
    let r = crate::common::run_innops(
        &["deadlock".into(), "parse".into(), f.display().to_string()],
        &[],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stdout.is_empty(),
        "nothing is printed as if parsed: {r:?}"
    );
    let line = r.error_line();
    assert!(
        line.contains(&format!("{} holds no deadlock report", f.display())),
        "{line}"
    );
    let r = crate::common::run_innops(
        &["deadlock", "parse", f.to_str().unwrap(), "--format", "json"].map(String::from),
        &[],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(r.json()["exit"], 2, "{r:?}");
}

/// A scenario of tests/cases/deadlock.
fn case(name: &str) -> String {
    format!(
        "{}/tests/cases/deadlock/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    )
}

const GATE: &str = "innops-test-gate";

/// Hold the user lock the gated scenarios wait for (released when the returned connection is dropped or
/// [`open_gate`] runs).
fn hold_gate(sb: &Sandboxed) -> mysql::Conn {
    let mut c = sb.conn();
    let got: Option<i64> = c
        .exec_first("SELECT GET_LOCK(?, 0)", (GATE,))
        .unwrap()
        .flatten();
    assert_eq!(got, Some(1));
    c
}

fn open_gate(c: &mut mysql::Conn) {
    let _: Option<Option<i64>> = c.exec_first("SELECT RELEASE_LOCK(?)", (GATE,)).unwrap();
}

/// Wait (bounded) until a session of the spawned run waits at the gate, from the server's processlist.
fn wait_at_gate(sb: &Sandboxed, child: &mut std::process::Child) {
    let mut c = sb.conn();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let n: Option<u64> = c
            .query_first(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE STATE = 'User lock' AND INFO LIKE '%innops-test-gate%'",
            )
            .unwrap();
        if n == Some(1) {
            return;
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("innops ended ({status}) before it reached the gate");
        }
        assert!(
            std::time::Instant::now() < until,
            "the run never reached the gate"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Issue 22, lost errors: a scanning locking read chosen as the victim gets ERROR 1213 after its result set's
/// header; the runner used to drop it and record `ok`.
#[test]
fn deadlock_issue22_a_scanning_locking_read_victim_gets_its_1213() {
    let sb = Sandboxed::new("dl-scan");
    for name in ["scan-for-update-victim", "scan-share-victim"] {
        let out = sb.innops(&[
            "deadlock",
            "run",
            &case(name),
            "--execute",
            "--repeat",
            "3",
            "--format",
            "json",
        ]);
        assert_eq!(out.code, 0, "{name}: {out:?}");
        let j = out.json();
        for rep in j["repetitions"].as_array().unwrap() {
            let scan = &rep["steps"][3];
            assert_eq!(scan["result"], "deadlock", "{name}: {scan}");
            assert_eq!(scan["error_code"], 1213, "{name}: {scan}");
            assert_eq!(rep["victim"], "t2", "{name}");
            assert_eq!(rep["report_victim"], "t2", "{name}");
            assert_eq!(rep["deadlocks"], 1, "{name}");
        }
    }
}

/// Issue 22: a deadlock InnoDB reports with one of the run's sessions as the victim, while that session's
/// client got no error (a handler swallowed it), fails the run: it never passes on a deadlock it did not see.
#[test]
fn deadlock_issue22_a_victim_the_client_never_heard_of_fails_the_run() {
    let sb = Sandboxed::new("dl-unseen");
    let out = sb.innops(&[
        "deadlock",
        "run",
        &case("must-fail/handler-hides-the-victim"),
        "--execute",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 3, "{out:?}");
    let j = out.json();
    let rep = &j["repetitions"][0];
    // Every statement did what the file says: only InnoDB's report shows the deadlock.
    assert!(rep["steps"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["as_expected"] == true));
    assert_eq!(rep["report_victim"], "t1");
    // Counted as this run's deadlock (the scenario expects none), from the report, not from an error.
    assert_eq!(rep["deadlocks"], 1);
    assert!(
        rep["count_problem"].as_str().unwrap().contains("expects 0"),
        "{rep}"
    );
    let problem = rep["report_problem"].as_str().unwrap();
    assert!(
        problem.contains("names t1") && problem.contains("got no ERROR 1213"),
        "{problem}"
    );
    assert!(
        out.error_line()
            .contains("the run did not see this deadlock"),
        "{out:?}"
    );
}

/// Issue 22: `expect = "timeout"` can pass (it used to print `(expected timeout) ✗`), here with NOWAIT's
/// immediate 1205 too.
#[test]
fn deadlock_issue22_expect_timeout_passes() {
    let sb = Sandboxed::new("dl-timeout");
    let out = sb.innops(&[
        "deadlock",
        "run",
        &case("lock-wait-timeout"),
        "--execute",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let step = &out.json()["repetitions"][0]["steps"][2];
    assert_eq!(step["result"], "timeout");
    assert_eq!(step["as_expected"], true);
}

/// Issue 22: a metadata-lock wait is a `block` (it used to abort after 20 s, "check the server"), and a
/// deadlock of the metadata locks is counted from the session's ERROR 1213 (InnoDB neither reports nor counts
/// it).
#[test]
fn deadlock_issue22_metadata_lock_waits_block_and_deadlock() {
    let sb = Sandboxed::new("dl-mdl");
    let out = sb.innops(&[
        "deadlock",
        "run",
        &case("mdl-wait"),
        "--execute",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let rep = &out.json()["repetitions"][0];
    for i in [2, 3] {
        assert_eq!(rep["steps"][i]["blocked"], true, "{}", rep["steps"][i]);
        assert_eq!(
            rep["steps"][i]["waited_for"], "Waiting for table metadata lock",
            "{}",
            rep["steps"][i]
        );
    }
    assert_eq!(rep["steps"][5]["rows"], serde_json::json!([["2", "0"]]));
    let out = sb.innops(&[
        "deadlock",
        "run",
        &case("mdl-deadlock"),
        "--execute",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let rep = &out.json()["repetitions"][0];
    assert_eq!(rep["deadlocks"], 1);
    assert_eq!(rep["victim"], "t1");
    assert_eq!(
        rep["deadlocks_after"], rep["deadlocks_before"],
        "not InnoDB's"
    );
}

/// Issue 22: other error codes (MariaDB's 1467 for an AUTO-INC lock's victim, counted as the deadlock InnoDB
/// reports), rows (SKIP LOCKED), and a three-way wake-up whose victim InnoDB picks: each true every run.
#[test]
fn deadlock_issue22_error_codes_rows_and_one_of_hold_every_run() {
    let sb = Sandboxed::new("dl-ext");
    let out = sb.innops(&[
        "deadlock",
        "run",
        &case("autoinc-lock"),
        "--execute",
        "--repeat",
        "5",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    for rep in out.json()["repetitions"].as_array().unwrap() {
        assert_eq!(rep["steps"][5]["error_code"], 1467, "{rep}");
        assert_eq!(rep["report_victim"], "t2", "{rep}");
        assert_eq!(rep["deadlocks"], 1, "{rep}");
    }
    let out = sb.innops(&[
        "deadlock",
        "run",
        &case("skip-locked"),
        "--execute",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let rep = &out.json()["repetitions"][0];
    assert_eq!(rep["steps"][3]["rows"], serde_json::json!([["1"], ["3"]]));
    assert_eq!(rep["steps"][4]["error_code"], 1205, "NOWAIT");
    let out = sb.innops(&[
        "deadlock",
        "run",
        &case("duplicate-key-three-way"),
        "--execute",
        "--repeat",
        "10",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["same_every_time"], true);
    for rep in j["repetitions"].as_array().unwrap() {
        let ends: Vec<&str> = [3, 5]
            .iter()
            .map(|&i| rep["steps"][i]["result"].as_str().unwrap())
            .collect();
        assert!(ends.contains(&"ok") && ends.contains(&"deadlock"), "{rep}");
        assert_eq!(rep["report_victim"], rep["victim"], "{rep}");
    }

    // The rows check fires: a scenario that expects other rows fails.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("wrong-rows.toml");
    let text = std::fs::read_to_string(case("skip-locked"))
        .unwrap()
        .replace("rows = [[1], [3]]", "rows = [[1], [2], [3]]");
    std::fs::write(&f, text).unwrap();
    let out = sb.innops(&["deadlock", "run", f.to_str().unwrap(), "--execute"]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stdout
            .contains("✗ it returned [[1], [3]] (2 row(s)), expected rows [[1], [2], [3]]"),
        "{}",
        out.stdout
    );
}

/// Every scenario written from the MariaDB/MySQL suites' deadlock, lock-wait, SKIP LOCKED and MDL tests passes,
/// the same way, five times over, with detection on; and off where the file says what happens then.
#[test]
fn deadlock_every_suite_scenario_passes_five_times() {
    let sb = Sandboxed::new("dl-suite");
    let dir = format!("{}/tests/cases/deadlock", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{files:?}");
    for f in &files {
        let out = sb.innops(&[
            "deadlock",
            "run",
            f.to_str().unwrap(),
            "--execute",
            "--repeat",
            "5",
            "--format",
            "json",
        ]);
        assert_eq!(out.code, 0, "{}: {out:?}", f.display());
        let j = out.json();
        assert_eq!(j["as_expected"], true, "{}", f.display());
        assert_eq!(j["same_every_time"], true, "{}", f.display());
    }
    assert!(open_transactions(&sb).is_empty());
}

/// The same scenarios with innodb_deadlock_detect=OFF (a plan with a run directory): each ends as its
/// `without_detection` says, twice, and detection is back on afterwards.
#[test]
fn deadlock_every_suite_scenario_passes_without_detection_too() {
    let sb = Sandboxed::new("dl-suite-off");
    let dir = format!("{}/tests/cases/deadlock", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    for (i, f) in files.iter().enumerate() {
        let run_dir = sb.root.join(format!("off-{i}"));
        let out = sb.innops(&[
            "deadlock",
            "run",
            f.to_str().unwrap(),
            "--execute",
            "--repeat",
            "2",
            "--detect",
            "off",
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--format",
            "json",
        ]);
        assert_eq!(out.code, 0, "{}: {out:?}", f.display());
        assert_eq!(out.json()["status"], "done", "{}", f.display());
    }
    let on: Option<u64> = sb
        .conn()
        .query_first("SELECT @@GLOBAL.innodb_deadlock_detect")
        .unwrap();
    assert_eq!(on, Some(1));
    assert!(open_transactions(&sb).is_empty());
}

/// Issue 22: two runs in different schemas on one server count only their own deadlocks (the server-wide
/// Innodb_deadlocks counted the other's). Run A waits at a gate while run B deadlocks twice.
#[test]
fn deadlock_issue22_two_runs_count_only_their_own_deadlocks() {
    let sb = Sandboxed::new("dl-two");
    let mut gate = hold_gate(&sb);
    let mut a = crate::common::spawn_innops(
        &on_sandbox(
            &sb,
            &[
                "deadlock",
                "run",
                &case("gated/gate-then-opposite-order"),
                "--execute",
                "--schema",
                "dl_a",
                "--format",
                "json",
            ],
        ),
        &[],
    );
    wait_at_gate(&sb, &mut a);
    let b = sb.innops(&[
        "deadlock",
        "run",
        "share-then-delete",
        "--execute",
        "--repeat",
        "2",
        "--schema",
        "dl_b",
        "--format",
        "json",
    ]);
    assert_eq!(b.code, 0, "{b:?}");
    let jb = b.json();
    for rep in jb["repetitions"].as_array().unwrap() {
        assert_eq!(rep["deadlocks"], 1);
    }
    open_gate(&mut gate);
    let a = crate::common::wait_innops(a);
    assert_eq!(a.code, 0, "{a:?}");
    let ja = a.json();
    let rep = &ja["repetitions"][0];
    // B's two deadlocks happened inside A's repetition: the server's counter saw three.
    assert_eq!(
        rep["deadlocks_after"].as_u64().unwrap() - rep["deadlocks_before"].as_u64().unwrap(),
        3
    );
    assert_eq!(rep["deadlocks"], 1, "A counts its own: {rep}");
    assert_eq!(rep["victim"], "t2");
}

/// Issue 22: `deadlock run --detect off` changes a global, so it runs as a plan with a run directory: killed
/// (-9) in the middle of the scenario, it leaves detection OFF, and `innops resume RUN_DIR` puts it back.
#[test]
fn deadlock_issue22_kill_9_with_detect_off_then_resume_restores_detection() {
    let sb = Sandboxed::new("dl-kill");
    let detect = || -> String {
        sb.conn()
            .query_first::<String, _>("SELECT @@GLOBAL.innodb_deadlock_detect")
            .unwrap()
            .unwrap()
    };
    assert_eq!(detect(), "1");
    let run_dir = sb.root.join("run-kill");
    let mut gate = hold_gate(&sb);
    let mut child = crate::common::spawn_innops(
        &on_sandbox(
            &sb,
            &[
                "deadlock",
                "run",
                &case("gated/gate-then-opposite-order"),
                "--execute",
                "--detect",
                "off",
                "--run-dir",
                run_dir.to_str().unwrap(),
            ],
        ),
        &[],
    );
    wait_at_gate(&sb, &mut child);
    assert_eq!(detect(), "0", "the run set it for its scenario");
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(detect(), "0", "a killed run leaves it set");
    open_gate(&mut gate);
    let resumed = crate::common::run_innops(
        &[
            "resume".into(),
            run_dir.display().to_string(),
            "--format".into(),
            "json".into(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(detect(), "1", "resume put the server's own value back");
    let j = resumed.json();
    assert_eq!(j["status"], "done", "{j}");
    assert!(!schema_exists(&sb, "innops_deadlock"));
}

/// Issue 22, minor: a schema name the server refuses, or a system schema, is bad input (exit 2) before anything
/// runs; a schema another run holds is that run's, never "drop it".
#[test]
fn deadlock_issue22_bad_system_or_busy_schemas_are_refused_with_the_fix() {
    let sb = Sandboxed::new("dl-schema");
    for bad in ["trailing ", "", &"x".repeat(65)] {
        let out = sb.innops(&[
            "deadlock",
            "run",
            "opposite-order",
            "--execute",
            "--schema",
            bad,
        ]);
        assert_eq!(out.code, 2, "{bad:?}: {out:?}");
        assert!(out.error_line().contains("1 to 64 characters"), "{out:?}");
    }
    for sys in ["mysql", "information_schema", "PERFORMANCE_SCHEMA", "sys"] {
        for extra in [&[][..], &["--detect", "off"][..]] {
            let mut args = vec![
                "deadlock",
                "run",
                "opposite-order",
                "--execute",
                "--schema",
                sys,
            ];
            args.extend_from_slice(extra);
            let out = sb.innops(&args);
            assert_eq!(out.code, 2, "{sys}: {out:?}");
            let line = out.error_line();
            assert!(
                line.contains("is a system schema") && !line.contains("drop it"),
                "{line}"
            );
        }
    }
    // Another run works in the schema (it waits at the gate): refused naming it, no "drop it".
    let mut gate = hold_gate(&sb);
    let mut a = crate::common::spawn_innops(
        &on_sandbox(
            &sb,
            &[
                "deadlock",
                "run",
                &case("gated/gate-then-opposite-order"),
                "--execute",
            ],
        ),
        &[],
    );
    wait_at_gate(&sb, &mut a);
    assert!(schema_exists(&sb, "innops_deadlock"));
    for dry in [true, false] {
        let mut args = vec!["deadlock", "run", "opposite-order"];
        if !dry {
            args.push("--execute");
        }
        let out = sb.innops(&args);
        assert_eq!(out.code, 1, "{out:?}");
        let line = out.error_line();
        assert!(
            line.contains("another innops run is working on deadlock:innops_deadlock")
                && !line.contains("drop"),
            "{line}"
        );
    }
    open_gate(&mut gate);
    let a = crate::common::wait_innops(a);
    assert_eq!(a.code, 0, "{a:?}");
}

/// Issue 22, minor: `deadlock replay --out FILE` does not overwrite a file unless --force.
#[test]
fn deadlock_issue22_replay_out_refuses_an_existing_file_without_force() {
    let sb = Sandboxed::new("dl-replay-out");
    let r = sb.innops(&["deadlock", "run", "opposite-order", "--execute"]);
    assert_eq!(r.code, 0, "{r:?}");
    let (_, _, status): (String, String, String) = sb
        .conn()
        .query_first("SHOW ENGINE INNODB STATUS")
        .unwrap()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let captured = dir.path().join("status.txt");
    std::fs::write(&captured, status).unwrap();
    let out = dir.path().join("scenario.toml");
    std::fs::write(&out, "keep me\n").unwrap();
    let args = |force: bool| {
        let mut a = vec![
            "deadlock".to_string(),
            "replay".into(),
            "--from".into(),
            captured.display().to_string(),
            "--out".into(),
            out.display().to_string(),
        ];
        if force {
            a.push("--force".into());
        }
        a
    };
    let r = crate::common::run_innops(&args(false), &[]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.error_line().contains("already exists") && r.error_line().contains("--force"),
        "{r:?}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me\n");
    let r = crate::common::run_innops(&args(true), &[]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(std::fs::read_to_string(&out).unwrap().contains("[[step]]"));
}

/// `ARGS --sandbox NAME --sandbox-root ROOT`.
fn on_sandbox(sb: &Sandboxed, a: &[&str]) -> Vec<String> {
    [args(a), sandbox_args(sb)].concat()
}
