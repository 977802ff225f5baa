//! The redo-log resize, end to end on sandboxes.

use mysql::prelude::Queryable;

use crate::common::{events, read_json, run_innops, Sandboxed};

const MIB: u64 = 1 << 20;

fn log_file_size(sb: &Sandboxed) -> u64 {
    sb.conn()
        .query_first("SELECT @@GLOBAL.innodb_log_file_size")
        .unwrap()
        .unwrap()
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
    let args = [
        "redo",
        "--size",
        "160M",
        "--execute",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ];
    let killed = sb.innops_env(&args, &[("INNOPS_FAULT", "after-action:resize")]);
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

/// Connection flags plus user-given start/stop commands instead of `--sandbox`: the generic backend.
fn generic_args(sb: &Sandboxed, start_cmd: &str) -> Vec<String> {
    vec![
        "--socket".into(),
        sb.sandbox.socket.display().to_string(),
        "--user".into(),
        "root".into(),
        "--start-cmd".into(),
        start_cmd.into(),
        "--config-file".into(),
        sb.sandbox.option_file.display().to_string(),
    ]
}

#[test]
fn offline_resize_through_user_start_command_and_config_file() {
    let sb = Sandboxed::new("redocmd");
    let start = format!(
        "{} sandbox start {} --sandbox-root {}",
        env!("CARGO_BIN_EXE_innops"),
        sb.sandbox.name,
        sb.root.display()
    );
    let run_dir = sb.root.join("run");
    let mut args: Vec<String> = [
        "redo",
        "--size",
        "48M",
        "--offline",
        "--execute",
        "--yes",
        "--no-bench",
        "--format",
        "json",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(generic_args(&sb, &start));
    let out = run_innops(&args, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    let ids: Vec<&str> = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["preflight", "persist", "stop", "start", "verify"],
        "{j}"
    );
    assert!(
        j["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] == "done"),
        "{j}"
    );
    // The error log was found through @@log_error and read: the start shows the resize.
    let start_post = j["steps"][3]["post"].as_array().unwrap();
    assert!(
        start_post.iter().any(|v| v["observed"] == "resized to 48M"),
        "{j}"
    );
    assert_eq!(log_file_size(&sb), 48 * MIB);
}

#[test]
fn a_failed_restart_restores_the_previous_config_and_starts_the_server_again() {
    let sb = Sandboxed::new("redofail");
    // A start command that fails once, as a typo in a unit file would, then works.
    let marker = sb.root.join("failed-once");
    let start = format!(
        "if [ -e {m} ]; then {bin} sandbox start {n} --sandbox-root {r}; else touch {m}; exit 1; fi",
        m = marker.display(),
        bin = env!("CARGO_BIN_EXE_innops"),
        n = sb.sandbox.name,
        r = sb.root.display()
    );
    let run_dir = sb.root.join("run");
    let mut args: Vec<String> = [
        "redo",
        "--size",
        "48M",
        "--offline",
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(generic_args(&sb, &start));
    let out = run_innops(&args, &[]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stderr.contains("restored and the server started again"),
        "{}",
        out.stderr
    );
    // Back as before: running, old size, no drop-in.
    assert_eq!(log_file_size(&sb), 96 * MIB);
    assert!(!sb.sandbox.conf_dir.join("99-innops.cnf").exists());
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "failed");
    assert_eq!(report["steps"][3]["status"], "failed", "{report}");
    assert!(events(&run_dir).iter().any(|e| e["event"] == "step_failed"
        && e["recovery"]
            .as_str()
            .is_some_and(|r| r.contains("restored"))));
}

#[test]
fn advise_measures_redo_writes_and_recommends_an_hour() {
    let sb = Sandboxed::new("redoadv");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE w").unwrap();
    c.query_drop(
        "CREATE TABLE w.t (id INT AUTO_INCREMENT PRIMARY KEY, pad CHAR(200)) ENGINE=InnoDB",
    )
    .unwrap();
    let target = sb.target();
    let writer = std::thread::spawn(move || {
        let mut c = target.connect().unwrap();
        for _ in 0..400 {
            c.query_drop("INSERT INTO w.t (pad) VALUES (REPEAT('x', 200))")
                .unwrap();
        }
    });
    let out = sb.innops(&["redo", "--advise", "--interval", "1", "--format", "json"]);
    writer.join().unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["counter"], "Innodb_lsn_current");
    assert_eq!(j["current_size"], 96 * MIB);
    let rate = j["bytes_per_sec"].as_f64().unwrap();
    let rec = j["recommended_size"].as_u64().unwrap();
    assert!(rec >= 96 * MIB && rec.is_multiple_of(64 * MIB), "{j}");
    assert!(
        rec as f64 >= rate * 3600.0,
        "the recommendation holds an hour of the measured rate: {j}"
    );
    assert!(j["command"]
        .as_str()
        .unwrap()
        .starts_with("innops redo --size "));
}

#[test]
fn the_drill_runs_every_procedure_on_its_own_sandbox() {
    let dir = tempfile::Builder::new()
        .prefix("ino-")
        .tempdir_in("/tmp")
        .unwrap();
    let out_dir = dir.path().join("out");
    let args: Vec<String> = [
        "drill",
        "--bench-time",
        "1",
        "--format",
        "json",
        "--sandbox-root",
        dir.path().to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run_innops(&args, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["passed"], true, "{j}");
    let names: Vec<&str> = j["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "redo-online",
            "redo-offline",
            "redo-survives-restart",
            "convert-bulk",
            "convert-deferred"
        ]
    );
    let deferred = read_json(&out_dir.join("convert-deferred/report.json"));
    assert!(
        deferred["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("path: deferred"),
        "{deferred}"
    );
    assert!(
        deferred["bench"]["after"]["tps"].as_f64().unwrap() > 0.0,
        "the conversion is measured on the table itself: {deferred}"
    );
    let online = read_json(&out_dir.join("redo-online/report.json"));
    assert!(
        online["bench"]["before"]["tps"].as_f64().unwrap() > 0.0,
        "{online}"
    );
    assert!(
        online["bench"]["after"]["tps"].as_f64().unwrap() > 0.0,
        "{online}"
    );
    // The drill cleans up its sandbox.
    assert_eq!(
        std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().join("sandbox.json").exists())
            .count(),
        0
    );
}

#[test]
fn a_run_killed_while_the_server_is_down_is_finished_by_resume_and_a_rerun_does_nothing() {
    let mut sb = Sandboxed::new("redodown");
    let run_dir = sb.root.join("run");
    let args = [
        "redo",
        "--size",
        "80M",
        "--offline",
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ];
    let killed = sb.innops_env(&args, &[("INNOPS_FAULT", "after-action:stop")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    assert!(
        !sb.sandbox.is_running(),
        "the run stopped with the server down"
    );

    let resumed = run_innops(
        &[
            "resume".to_string(),
            run_dir.display().to_string(),
            "--yes".into(),
            "--no-bench".into(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(
        resumed.stderr.contains("resuming with the facts recorded"),
        "{}",
        resumed.stderr
    );
    sb.reopen();
    assert_eq!(log_file_size(&sb), 80 * MIB);
    assert_eq!(read_json(&run_dir.join("report.json"))["status"], "done");

    // The same size again: nothing to stop or start.
    let again_dir = sb.root.join("again");
    let again = [
        "redo",
        "--size",
        "80M",
        "--offline",
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
        again_dir.to_str().unwrap(),
    ];
    let pid = sb.sandbox.running_pid();
    let out = sb.innops_env(&again, &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        sb.sandbox.running_pid(),
        pid,
        "the server was not restarted"
    );
    let report = read_json(&again_dir.join("report.json"));
    let stop = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "stop")
        .unwrap();
    assert_eq!(stop["status"], "skipped", "{report}");
}
