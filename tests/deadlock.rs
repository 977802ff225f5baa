//! `innops deadlock`: the built-in scenarios end as their files expect on a real server, the documented one
//! 50 times over with the same victim, and the detection-off path ends in ERROR 1205 with nothing left open.

use crate::common::Sandboxed;
use innops::procedures::deadlock::runner::live_transactions;
use mysql::prelude::Queryable;

/// Transactions InnoDB has open now (the live list: INNODB_TRX is a cache refreshed at most every 100 ms).
fn open_transactions(sb: &Sandboxed) -> Vec<u64> {
    let mut c = sb.conn();
    let (_, _, status): (String, String, String) =
        c.query_first("SHOW ENGINE INNODB STATUS").unwrap().unwrap();
    live_transactions(&status)
}

fn schema_exists(sb: &Sandboxed) -> bool {
    let mut c = sb.conn();
    let n: Option<String> = c
        .query_first("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'innops_deadlock'")
        .unwrap();
    n.is_some()
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
        assert!(!schema_exists(&sb), "{name}: the schema is dropped");
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
    let out = sb.innops(&[
        "deadlock",
        "run",
        "share-then-delete",
        "--execute",
        "--detect",
        "off",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["settings"]["deadlock_detect"], false);
    let rep = &j["repetitions"][0];
    let t2 = &rep["steps"][3];
    assert_eq!(t2["error_code"], 1205);
    assert_eq!(t2["blocked"], true);
    assert_eq!(rep["victim"], serde_json::Value::Null);
    assert_eq!(rep["deadlocks_after"], rep["deadlocks_before"]);
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
    assert!(!schema_exists(&sb));

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
