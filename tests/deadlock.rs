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
