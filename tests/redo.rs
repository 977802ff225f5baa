//! The redo-log resize, end to end on sandboxes.

use mysql::prelude::Queryable;

use crate::common::{read_json, run_innops, Sandboxed};

const MIB: u64 = 1 << 20;

fn log_file_size(sb: &Sandboxed) -> u64 {
    sb.conn()
        .query_first("SELECT @@GLOBAL.innodb_log_file_size")
        .unwrap()
        .unwrap()
}

fn events(run_dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn dry_run_checks_everything_and_changes_nothing() {
    let sb = Sandboxed::new("redodry");
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "redo",
        "--size",
        "256M",
        "--format",
        "json",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["status"], "dry_run");
    assert_eq!(j["executed"], false);
    let pre = j["steps"][0]["pre"].as_array().unwrap();
    assert!(
        pre.len() >= 6 && pre.iter().all(|v| v["passed"] == true),
        "{j}"
    );
    assert_eq!(log_file_size(&sb), 96 * MIB);
    assert!(!sb.sandbox.conf_dir.join("99-innops.cnf").exists());
    assert!(!run_dir.exists(), "a dry run writes no run directory");
}

#[test]
fn online_resize_persists_and_the_run_directory_tells_the_story() {
    let sb = Sandboxed::new("redoon");
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "redo",
        "--size",
        "128M",
        "--execute",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(log_file_size(&sb), 128 * MIB);
    assert_eq!(
        std::fs::metadata(sb.sandbox.datadir.join("ib_logfile0"))
            .unwrap()
            .len(),
        128 * MIB
    );
    let dropin = std::fs::read_to_string(sb.sandbox.conf_dir.join("99-innops.cnf")).unwrap();
    assert!(
        dropin.contains("innodb_log_file_size = 134217728"),
        "{dropin}"
    );
    assert!(run_dir.join("backup/99-innops.cnf.absent").exists());

    let plan = read_json(&run_dir.join("plan.json"));
    assert_eq!(plan["procedure"], "redo");
    let ids: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["preflight", "resize", "persist"]);
    assert!(plan["steps"][1]["commands"][0]
        .as_str()
        .unwrap()
        .starts_with("/* innops:redo:resize */ SET GLOBAL"));
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done");
    assert!(
        report["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] == "done"),
        "{report}"
    );
    let ev = events(&run_dir);
    assert_eq!(ev.first().unwrap()["event"], "run_started");
    assert_eq!(ev.last().unwrap()["event"], "run_done");
    assert_eq!(ev.iter().filter(|e| e["event"] == "step_done").count(), 3);
    assert!(ev.iter().any(|e| e["event"] == "check"
        && e["verdict"]["check"] == "redo log file on disk has the new size"
        && e["verdict"]["passed"] == true));

    // The statement was tagged, as a DBA would see it in the processlist or the general log.
    let again = sb.innops(&[
        "redo",
        "--size",
        "128M",
        "--execute",
        "--no-bench",
        "--run-dir",
        sb.root.join("run2").to_str().unwrap(),
    ]);
    assert_eq!(again.code, 0, "{again:?}");
    let report = read_json(&sb.root.join("run2/report.json"));
    assert_eq!(
        report["steps"][1]["status"], "skipped",
        "an unchanged size must not resize again: {report}"
    );
}

#[test]
fn offline_resize_survives_a_restart() {
    let mut sb = Sandboxed::new("redooff");
    let refused = sb.innops(&[
        "redo",
        "--size",
        "64M",
        "--offline",
        "--execute",
        "--no-bench",
    ]);
    assert_eq!(
        refused.code, 1,
        "a restart without --yes and without a terminal must be refused: {refused:?}"
    );
    assert!(refused.stderr.contains("--yes"), "{}", refused.stderr);
    assert_eq!(log_file_size(&sb), 96 * MIB);

    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "redo",
        "--size",
        "64M",
        "--offline",
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    sb.reopen();
    assert_eq!(log_file_size(&sb), 64 * MIB);
    let report = read_json(&run_dir.join("report.json"));
    let ids: Vec<&str> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["preflight", "persist", "stop", "start", "verify"]);
    let log = std::fs::read_to_string(&sb.sandbox.error_log).unwrap();
    assert!(
        log.contains("Resizing redo log from 96.000MiB to 64.000MiB"),
        "{log}"
    );

    let root = sb.root.to_str().unwrap().to_string();
    let name = sb.sandbox.name.clone();
    for action in ["stop", "start"] {
        let o = run_innops(
            &[
                String::from("sandbox"),
                action.into(),
                name.clone(),
                "--sandbox-root".into(),
                root.clone(),
            ],
            &[],
        );
        assert_eq!(o.code, 0, "{o:?}");
    }
    sb.reopen();
    assert_eq!(log_file_size(&sb), 64 * MIB);
}

#[test]
fn bad_sizes_are_refused_with_a_reason() {
    let sb = Sandboxed::new("redobad");
    let small = sb.innops(&["redo", "--size", "8M", "--execute", "--no-bench"]);
    assert_eq!(small.code, 1, "{small:?}");
    assert!(
        small.stderr.contains("innodb_log_buffer_size"),
        "{}",
        small.stderr
    );
    let odd = sb.innops(&["redo", "--size", "268435457", "--no-bench"]);
    assert_eq!(odd.code, 1, "{odd:?}");
    assert!(
        odd.stderr.contains("not a multiple of 4096"),
        "{}",
        odd.stderr
    );
    let junk = sb.innops(&["redo", "--size", "lots"]);
    assert_eq!(junk.code, 2, "{junk:?}");
    assert!(
        junk.stderr.contains("'lots' is not a size"),
        "{}",
        junk.stderr
    );
    assert_eq!(log_file_size(&sb), 96 * MIB);
    assert!(!sb.sandbox.conf_dir.join("99-innops.cnf").exists());
}

#[test]
fn a_run_killed_mid_plan_is_finished_by_resume() {
    let sb = Sandboxed::new("redores");
    let run_dir = sb.root.join("run");
    let mut args: Vec<String> = [
        "redo",
        "--size",
        "160M",
        "--execute",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend([
        "--sandbox".into(),
        sb.sandbox.name.clone(),
        "--sandbox-root".into(),
        sb.root.display().to_string(),
    ]);
    let killed = run_innops(&args, &[("INNOPS_FAULT", "after-action:resize")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    // The server took the size, but the run stopped before persisting it.
    assert_eq!(log_file_size(&sb), 160 * MIB);
    assert!(!sb.sandbox.conf_dir.join("99-innops.cnf").exists());
    let ev = events(&run_dir);
    assert_eq!(ev.last().unwrap()["event"], "action_done");

    let resumed = run_innops(
        &[
            "resume".to_string(),
            run_dir.display().to_string(),
            "--no-bench".into(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let dropin = std::fs::read_to_string(sb.sandbox.conf_dir.join("99-innops.cnf")).unwrap();
    assert!(
        dropin.contains("innodb_log_file_size = 167772160"),
        "{dropin}"
    );
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    let ev = events(&run_dir);
    assert!(ev.iter().any(|e| e["event"] == "resumed"));
    // The interrupted step was finished by its post-checks, not by acting twice.
    assert_eq!(
        ev.iter()
            .filter(|e| e["event"] == "action_done" && e["step"] == "resize")
            .count(),
        1
    );
}
