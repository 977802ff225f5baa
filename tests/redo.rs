//! The redo-log resize, end to end on sandboxes.

use mysql::prelude::Queryable;

use crate::common::{dropin, resume, sandbox_cmd, step, MIB};
use crate::common::{events, read_json, run_innops, Sandboxed};

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
    assert_eq!(ids, ["preflight", "resize", "persist", "verify"]);
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
    assert_eq!(ev.iter().filter(|e| e["event"] == "step_done").count(), 4);
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
    // The downtime is reported as readonly reports it (issue 27: `downtime: null` once).
    let downtime = report["downtime"].as_array().expect("downtime");
    assert_eq!(downtime.len(), 1, "{report}");
    assert!(downtime[0]["seconds"].as_f64().unwrap() > 0.0, "{report}");
    assert!(
        out.stdout.contains("downtime: ") && out.stdout.contains("with the new redo size"),
        "{}",
        out.stdout
    );
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
    assert_eq!(
        small.code, 2,
        "a size the server cannot take is bad input: {small:?}"
    );
    assert!(
        small.stderr.contains("innodb_log_buffer_size"),
        "{}",
        small.stderr
    );
    let odd = sb.innops(&["redo", "--size", "268435457", "--no-bench"]);
    assert_eq!(odd.code, 2, "{odd:?}");
    assert!(
        odd.stderr.contains("not a multiple of 4096"),
        "{}",
        odd.stderr
    );
    let huge = sb.innops(&["redo", "--size", "1T", "--offline", "--execute", "--yes"]);
    assert_eq!(huge.code, 2, "{huge:?}");
    assert!(huge.stderr.contains("largest"), "{}", huge.stderr);
    assert!(
        !huge.stdout.contains("preflight"),
        "no plan is run for bad input: {huge:?}"
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

    // The server answers again (at the old size): resume must not take that for a finished resize.
    let resumed = run_innops(
        &[
            "resume".to_string(),
            run_dir.display().to_string(),
            "--yes".into(),
            "--no-bench".into(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 1, "{resumed:?}");
    assert!(
        resumed
            .stderr
            .contains("run `innops redo --size 48M --offline --start-cmd "),
        "{}",
        resumed.stderr
    );
    assert_eq!(log_file_size(&sb), 96 * MIB);
    assert!(!sb.sandbox.conf_dir.join("99-innops.cnf").exists());
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "refused", "{report}");
    let start = step(&report, "start");
    assert_eq!(start["status"], "refused", "{report}");
    assert_eq!(start["pre"][0]["passed"], false, "{report}");
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
    // The writer writes until innops has measured, however slowly this machine runs it: the sample window
    // always holds writes.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = done.clone();
    let writer = std::thread::spawn(move || {
        let mut c = target.connect().unwrap();
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            c.query_drop("INSERT INTO w.t (pad) VALUES (REPEAT('x', 200))")
                .unwrap();
        }
    });
    let out = sb.innops(&["redo", "--advise", "--interval", "1", "--format", "json"]);
    done.store(true, std::sync::atomic::Ordering::SeqCst);
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

/// The post-check of a step whose name starts with `name`.
fn check_of<'a>(step: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    step["post"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"].as_str().unwrap().starts_with(name))
        .unwrap_or_else(|| panic!("no check {name} in {step}"))
}

/// The members of a drill's plan, in order, from its step ids (`redo.2/stop` → `redo.2`).
fn members_of(report: &serde_json::Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in report["steps"].as_array().unwrap() {
        let m = s["id"]
            .as_str()
            .unwrap()
            .split('/')
            .next()
            .unwrap()
            .to_string();
        if out.last() != Some(&m) {
            out.push(m);
        }
    }
    out
}

fn drill_args(root: &std::path::Path, out: &std::path::Path) -> Vec<String> {
    [
        "drill",
        "--bench-time",
        "1",
        "--format",
        "json",
        "--sandbox-root",
        root.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// `--out` naming a file: refused as bad input before any sandbox is made, so none is left running.
#[test]
fn a_drill_with_a_file_for_out_is_refused_before_it_makes_a_sandbox() {
    let dir = tempfile::Builder::new()
        .prefix("ino-")
        .tempdir_in("/tmp")
        .unwrap();
    let file = dir.path().join("report.txt");
    std::fs::write(&file, "mine").unwrap();
    let out = run_innops(&drill_args(dir.path(), &file), &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("is a file, not a directory"), "{out:?}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        left,
        vec![std::ffi::OsString::from("report.txt")],
        "no sandbox made"
    );
}

#[test]
fn the_drill_runs_every_procedure_on_its_own_sandbox() {
    let dir = tempfile::Builder::new()
        .prefix("ino-")
        .tempdir_in("/tmp")
        .unwrap();
    let out_dir = dir.path().join("out");
    let out = run_innops(&drill_args(dir.path(), &out_dir), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["procedure"], "drill", "{j}");
    assert_eq!(j["status"], "done", "{j}");
    // One plan: the playbook's members in its order, the drill's own around them, one run directory.
    assert_eq!(
        members_of(&j),
        [
            "drill-setup",
            "redo",
            "redo.2",
            "convert",
            "convert.2",
            "deadlock",
            "deadlock.2",
            "deadlock.3",
            "deadlock.4",
            "readonly",
            "readonly.2",
            "drill-damage",
            "recover",
            "drill-figures"
        ]
    );
    assert_eq!(read_json(&out_dir.join("plan.json"))["procedure"], "drill");
    let report = read_json(&out_dir.join("report.json"));
    assert_eq!(
        report["steps"], j["steps"],
        "report.json is the report printed"
    );
    for s in j["steps"].as_array().unwrap() {
        assert!(s["status"] == "done" || s["status"] == "skipped", "{s}");
        for c in s["pre"]
            .as_array()
            .unwrap()
            .iter()
            .chain(s["post"].as_array().unwrap())
        {
            assert_eq!(c["passed"], true, "{}: {c}", s["id"]);
        }
    }
    // The report opens with its verdict, the run's line and one line per member, before the ~40 notes: on
    // the page as innops wrote it, and in the text the terminal shows.
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    let verdict = html
        .find("<section class=\"verdict\">")
        .expect("the page opens with a verdict");
    assert!(verdict < html.find("note: ").unwrap());
    assert!(
        html.contains("<p class=\"overall ok\"><strong>✓ drill done: 14 procedures, every check passed</strong></p>"),
        "{}",
        &html[verdict..verdict + 400]
    );
    assert_eq!(
        html.matches("<tr><td class=\"ok\">✓</td><td><code>")
            .count(),
        14
    );
    let r: innops::plan::report::Report = serde_json::from_value(report.clone()).unwrap();
    let text = r.render_text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[3], "verdict: ✓ drill done: 14 procedures, every check passed",
        "{text}"
    );
    assert!(lines[4..18].iter().all(|l| l.starts_with("  ✓ ")), "{text}");
    assert!(lines[19].starts_with("  note: "), "{text}");
    // One benchmark before the first changing step and one after the last.
    let ev = events(&out_dir);
    assert_eq!(ev.iter().filter(|e| e["event"] == "bench").count(), 2);
    assert!(j["bench"]["before"]["tps"].as_f64().unwrap() > 0.0, "{j}");
    assert!(j["bench"]["after"]["tps"].as_f64().unwrap() > 0.0, "{j}");

    // Redo online, then offline; the size survives the restarts after it.
    assert_eq!(step(&j, "redo/resize")["status"], "done");
    assert_eq!(step(&j, "redo.2/stop")["status"], "done");
    let survives = check_of(step(&j, "drill-damage/redo-size"), "innodb_log_file_size");
    assert_eq!(survives["observed"], "128M", "{survives}");
    // Both conversion paths.
    let notes: Vec<&str> = j["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.contains(&"convert: path: bulk — --strategy bulk was asked for"),
        "{notes:?}"
    );
    assert!(
        notes.contains(&"convert.2: path: deferred — --strategy deferred was asked for"),
        "{notes:?}"
    );
    assert_eq!(
        step(&j, "convert.2/indexes:drill.orders2")["status"],
        "done"
    );

    // The deadlocks: each built-in ends as its file expects, with its victim, Innodb_deadlocks around each
    // run and InnoDB's report parsed; with detection off, ERROR 1205 and the waiter's transaction rolled back.
    for (id, runs) in [
        ("deadlock/run:share-then-delete", 3),
        ("deadlock.2/run:opposite-order", 1),
        ("deadlock.3/run:gap-insert", 1),
    ] {
        let r = &step(&j, id)["result"];
        assert_eq!(r["deadlock_detect"], true, "{id}");
        assert_eq!(r["as_expected"], true, "{id}");
        let reps = r["runs"].as_array().unwrap();
        assert_eq!(reps.len(), runs, "{id}");
        for rep in reps {
            assert_eq!(rep["victim"], "t2", "{id}: {rep}");
            assert_eq!(rep["report_victim"], "t2", "{id}: {rep}");
            assert_eq!(
                rep["deadlocks_after"].as_u64().unwrap(),
                rep["deadlocks_before"].as_u64().unwrap() + 1,
                "{id}: {rep}"
            );
            assert_eq!(rep["open_after"], 0, "{id}");
        }
        assert_eq!(
            r["report"]["transactions"].as_array().unwrap().len(),
            2,
            "{id}"
        );
        assert!(r["report"]["victim"].is_u64(), "{id}");
    }
    let off = &step(&j, "deadlock.4/run:share-then-delete")["result"];
    assert_eq!(off["deadlock_detect"], false, "{off}");
    let rep = &off["runs"][0];
    assert_eq!(rep["deadlocks_after"], rep["deadlocks_before"], "{off}");
    assert_eq!(rep["victim"], serde_json::Value::Null, "{off}");
    assert_eq!(rep["rolled_back_open"], serde_json::json!(["t2"]), "{off}");
    assert!(
        rep["statements"].as_array().unwrap().iter().any(|s| s
            .as_str()
            .unwrap()
            .starts_with("4. t2 → timeout (ERROR 1205) after waiting")),
        "{off}"
    );
    let outcome: Vec<&str> = j["outcome"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_str().unwrap())
        .collect();
    assert!(
        outcome.iter().any(|o| o.starts_with(
            "deadlock share-then-delete ×3 (innodb_deadlock_detect=ON): 3 deadlock(s)"
        )),
        "{outcome:?}"
    );

    // Read-only reached with the write probe refused and the downtime measured; then back to read-write.
    let start = step(&j, "readonly/start");
    assert!(
        start["result"]["downtime_s"].as_f64().unwrap() > 0.0,
        "{start}"
    );
    let probe = check_of(step(&j, "readonly/verify"), "write probe");
    assert!(
        probe["observed"]
            .as_str()
            .unwrap()
            .starts_with("ERROR 1036"),
        "{probe}"
    );
    assert!(
        step(&j, "readonly.2/start")["result"]["downtime_s"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    let probe = check_of(step(&j, "readonly.2/verify"), "write probe");
    assert!(
        probe["observed"].as_str().unwrap().starts_with("accepted"),
        "{probe}"
    );

    // Recovery: the SQL reads get back every row not on a damaged page; the page pass (auto, the default) then
    // reads records of the damaged pages, and only of them, and every lost range left lies inside a damaged
    // page's keys (the figures step's post-checks, all passed above); mariadb-dump, on the same damaged files,
    // stops at the first damaged page.
    let rec = &step(&j, "drill-figures/recovery")["result"];
    let n = |k: &str| rec[k].as_u64().unwrap_or_else(|| panic!("{k} in {rec}"));
    assert_eq!(rec["damaged_pages"].as_array().unwrap().len(), 4, "{rec}");
    assert!(n("rows_on_damaged_pages") > 4, "{rec}");
    assert_eq!(
        n("limit"),
        n("rows_before") - n("rows_on_damaged_pages"),
        "{rec}"
    );
    assert_eq!(n("innops_sql"), n("limit"), "{rec}");
    assert_eq!(rec["page_pass"]["ran"], true, "{rec}");
    assert!(n("innops_pages") > 0, "{rec}");
    assert!(n("innops_pages") <= n("rows_on_damaged_pages"), "{rec}");
    assert_eq!(n("innops"), n("innops_sql") + n("innops_pages"), "{rec}");
    let figures = step(&j, "drill-figures/recovery");
    for name in [
        "the page pass read rows from the damaged pages, and only from them",
        "every lost range lies inside a damaged page's keys",
    ] {
        assert_eq!(check_of(figures, name)["passed"], true, "{figures}");
    }
    assert!(n("mariadb_dump") < n("limit"), "{rec}");
    assert!(
        n("mariadb_dump") > 0,
        "mariadb-dump gets the rows before the first damaged page: {rec}"
    );
    assert!(
        rec["mariadb_dump_exit"]
            .as_str()
            .unwrap()
            .starts_with("exit 3"),
        "mariadb-dump stops at the damage: {rec}"
    );
    assert_eq!(rec["exact_lost"].as_array().unwrap().len(), 3, "{rec}");
    assert_eq!(step(&j, "recover/verify-load")["status"], "done");
    assert!(
        !out_dir.join("recover-copy").exists(),
        "--drop-copy removed the copy"
    );
    assert!(out_dir.join("recover-dump").join("manifest.json").exists());

    // One report.html, well-formed, with the steps, the charts and the drill's figures.
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    roxmltree::Document::parse_with_options(
        &html,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("report.html is not well-formed: {e}\n{html}"));
    // The staging drill runs with `[bench] during = true`: the workload covers every step, the impact chart
    // names each one, and the drill's restarts show as refused connections.
    let during = &report["during"];
    assert!(
        during.is_object(),
        "report.json has the workload's impact: {report}"
    );
    // Every step, and the benchmark before and after (phases of their own), is on the impact chart.
    let steps = j["steps"].as_array().unwrap().len();
    assert_eq!(
        during["steps"].as_array().unwrap().len(),
        steps + 2,
        "every step is on the impact chart"
    );
    let errors: u64 = during["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["errors"].as_u64())
        .sum();
    assert!(
        errors > 0,
        "the restarts refused the workload's connections: {during}"
    );
    assert!(out_dir.join("bench/during.jsonl").exists());
    for want in [
        "Impact over time",
        "drill-damage/damage",
        "deadlock.3/run:gap-insert",
        "<svg",
        "downtime: ",
        "write probe is refused with the read-only error: ERROR 1036",
        &format!(
            "recovery: innops recover {}",
            innops::units::format_count(n("innops"))
        ),
    ] {
        assert!(html.contains(want), "{want} in report.html");
    }
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
fn a_drill_killed_after_its_damage_step_is_finished_by_resume_as_one_run() {
    let dir = tempfile::Builder::new()
        .prefix("ino-")
        .tempdir_in("/tmp")
        .unwrap();
    let out_dir = dir.path().join("out");
    let out = run_innops(
        &drill_args(dir.path(), &out_dir),
        &[("INNOPS_FAULT", "after-action:drill-damage/damage")],
    );
    assert_eq!(out.code, 137, "{out:?}");
    let plan = read_json(&out_dir.join("plan.json"));
    let name = plan["control"]["name"]
        .as_str()
        .unwrap_or_else(|| panic!("the sandbox in {plan}"))
        .to_string();
    let resumed = run_innops(
        &[
            "resume".into(),
            out_dir.display().to_string(),
            "--format".into(),
            "json".into(),
        ],
        &[],
    );
    // The sandbox outlives both processes: stop it whatever the outcome.
    let down = run_innops(
        &[
            "sandbox".into(),
            "down".into(),
            name.clone(),
            "--sandbox-root".into(),
            dir.path().display().to_string(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(down.code, 0, "{down:?}");
    let j = resumed.json();
    assert_eq!(j["procedure"], "drill");
    assert_eq!(j["status"], "done", "{j}");
    // The damage step, cut off before its post-checks, is proven done by them and not run again.
    let ev = events(&out_dir);
    let started = |id: &str| {
        ev.iter()
            .filter(|e| e["event"] == "step_started" && e["step"] == id)
            .count()
    };
    assert_eq!(started("drill-damage/damage"), 1);
    assert_eq!(started("recover/dump"), 1);
    assert_eq!(ev.iter().filter(|e| e["event"] == "resumed").count(), 1);
    assert_eq!(ev.iter().filter(|e| e["event"] == "bench").count(), 2);
    let rec = &step(&j, "drill-figures/recovery")["result"];
    assert_eq!(rec["innops_sql"], rec["limit"], "{rec}");
    assert_eq!(rec["page_pass"]["ran"], true, "{rec}");
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

// ---- Every guard of a verdict fires through the normal path ----

/// The verdict of `check` among a step's post-checks.
fn post<'a>(report: &'a serde_json::Value, id: &str, check: &str) -> &'a serde_json::Value {
    step(report, id)["post"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["check"] == check)
        .unwrap_or_else(|| panic!("no post-check '{check}' in step {id}: {report}"))
}

fn file_size(sb: &Sandboxed) -> u64 {
    std::fs::metadata(sb.sandbox.datadir.join("ib_logfile0"))
        .unwrap()
        .len()
}

fn offline_args(size: &str, run_dir: &std::path::Path) -> Vec<String> {
    [
        "redo",
        "--size",
        size,
        "--offline",
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run_offline(sb: &Sandboxed, size: &str, run_dir: &std::path::Path) -> crate::common::Output {
    let args = offline_args(size, run_dir);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sb.innops(&args)
}

#[test]
fn a_server_killed_at_the_shutdown_is_not_taken_for_a_clean_stop() {
    let mut sb = Sandboxed::new("redokill");
    // An older clean shutdown in the error log, which must not vouch for the next stop.
    sandbox_cmd(&sb, "stop");
    sandbox_cmd(&sb, "start");
    sb.reopen();
    let run_dir = sb.root.join("run");
    let args = offline_args("64M", &run_dir);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sb.innops_env(&args, &[("INNOPS_TEST_KILL_AT_STOP", "1")]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stderr.contains("without a clean shutdown")
            && out.stderr.contains("crash recovery could finish"),
        "{}",
        out.stderr
    );
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(step(&report, "stop")["status"], "failed", "{report}");
    let clean = post(&report, "stop", "clean shutdown");
    assert_eq!(clean["passed"], false, "{report}");
    assert_eq!(
        clean["observed"],
        "down, no Shutdown complete line since innops's shutdown"
    );
    assert_eq!(step(&report, "start")["status"], "pending", "{report}");
    // The safe path: the server was started again (InnoDB recovers what it must); it is not left down.
    sb.reopen();
    assert!(sb.sandbox.is_running());
    let stop = events(&run_dir)
        .into_iter()
        .find(|e| e["event"] == "action_done" && e["step"] == "stop")
        .unwrap();
    assert_eq!(stop["result"]["clean"], false, "{stop}");

    // Resume judges the live state and finishes with the truth.
    let resumed = resume(&run_dir, &["--no-bench"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    sb.reopen();
    assert_eq!(log_file_size(&sb), 64 * MIB);
    assert_eq!(file_size(&sb), 64 * MIB);
    assert!(dropin(&sb).contains("innodb_log_file_size = 67108864"));
    assert_eq!(read_json(&run_dir.join("report.json"))["status"], "done");
}

#[test]
fn ctrl_c_during_the_shutdown_says_the_server_is_down_and_how_to_start_it() {
    let mut sb = Sandboxed::new("redoint");
    let run_dir = sb.root.join("run");
    let args = offline_args("64M", &run_dir);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = sb.innops_env(&args, &[("INNOPS_FAULT", "sigint-in-action:stop")]);
    assert_eq!(out.code, 130, "{out:?}");
    assert!(
        out.stderr
            .contains("the server is DOWN (it shut down cleanly)")
            && out
                .stderr
                .contains(&format!("`innops resume {}`", run_dir.display())),
        "{}",
        out.stderr
    );
    assert!(!sb.sandbox.is_running());
    assert_eq!(
        read_json(&run_dir.join("report.json"))["status"],
        "interrupted"
    );

    let resumed = resume(&run_dir, &["--no-bench"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    sb.reopen();
    assert_eq!(log_file_size(&sb), 64 * MIB);
    assert_eq!(file_size(&sb), 64 * MIB);
}

#[test]
fn a_read_only_start_keeps_the_old_log_file_and_the_file_check_says_so() {
    let sb = Sandboxed::new("redoro");
    // The running server is writable; its option files make the next start read-only, which keeps the old
    // ib_logfile0 while @@innodb_log_file_size shows the configured size.
    std::fs::write(
        sb.sandbox.conf_dir.join("50-ro.cnf"),
        "[mysqld]\ninnodb_read_only = 1\n",
    )
    .unwrap();
    let run_dir = sb.root.join("run");
    let out = run_offline(&sb, "64M", &run_dir);
    assert_eq!(out.code, 3, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(step(&report, "start")["status"], "failed", "{report}");
    assert_eq!(
        post(&report, "start", "variable shows the new size")["passed"],
        true,
        "{report}"
    );
    let file = post(&report, "start", "redo log file on disk has the new size");
    assert_eq!(file["passed"], false, "{report}");
    assert!(
        file["observed"].as_str().unwrap().ends_with("is 96M"),
        "{report}"
    );
    // Left as found after the start: running (read-only) with the old file, the drop-in untouched.
    assert_eq!(file_size(&sb), 96 * MIB);
    assert!(out.stderr.contains("left"), "{}", out.stderr);
    assert!(dropin(&sb).contains("innodb_log_file_size = 67108864"));
}

#[test]
fn a_start_that_overrides_the_size_fails_the_size_check() {
    let sb = Sandboxed::new("redoovr");
    // A start command that forces the old size on the command line, as a unit file could.
    let start = format!(
        "{} --defaults-file={} --innodb-log-file-size=100663296 </dev/null >/dev/null 2>&1 &",
        sb.sandbox.binary.display(),
        sb.sandbox.option_file.display()
    );
    let run_dir = sb.root.join("run");
    let mut args = offline_args("48M", &run_dir);
    args.extend(generic_args(&sb, &start));
    let out = run_innops(&args, &[]);
    assert_eq!(out.code, 3, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(step(&report, "start")["status"], "failed", "{report}");
    let size = post(&report, "start", "variable shows the new size");
    assert_eq!(size["passed"], false, "{report}");
    assert_eq!(size["observed"], "96M");
    assert_eq!(log_file_size(&sb), 96 * MIB);
    assert!(dropin(&sb).contains("innodb_log_file_size = 50331648"));
}

#[test]
fn an_option_file_read_after_the_drop_in_fails_the_option_file_check() {
    let sb = Sandboxed::new("redoopt");
    std::fs::write(
        sb.sandbox.conf_dir.join("zz-other.cnf"),
        "[mysqld]\ninnodb_log_file_size = 100663296\n",
    )
    .unwrap();
    let pid = sb.sandbox.running_pid();
    let run_dir = sb.root.join("run");
    let out = run_offline(&sb, "64M", &run_dir);
    assert_eq!(out.code, 3, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(step(&report, "persist")["status"], "failed", "{report}");
    let opt = post(
        &report,
        "persist",
        "the server will read the new size at startup",
    );
    assert_eq!(opt["passed"], false, "{report}");
    assert!(
        opt["observed"]
            .as_str()
            .unwrap()
            .ends_with("innodb_log_file_size = 100663296"),
        "{report}"
    );
    // Nothing was stopped.
    assert_eq!(sb.sandbox.running_pid(), pid);
    assert_eq!(log_file_size(&sb), 96 * MIB);
}

#[test]
fn errors_logged_by_the_start_fail_the_error_log_check() {
    let sb = Sandboxed::new("redoerr");
    // The next start logs [ERROR] lines and still comes up, with the new size.
    std::fs::write(
        sb.sandbox.conf_dir.join("50-glog.cnf"),
        "[mysqld]\ngeneral_log = 1\ngeneral_log_file = /nonexistent/innops-test/g.log\n",
    )
    .unwrap();
    let run_dir = sb.root.join("run");
    let out = run_offline(&sb, "64M", &run_dir);
    assert_eq!(out.code, 3, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(step(&report, "start")["status"], "failed", "{report}");
    for ok in [
        "variable shows the new size",
        "redo log file on disk has the new size",
    ] {
        assert_eq!(post(&report, "start", ok)["passed"], true, "{report}");
    }
    let log = post(&report, "start", "error log: resized at startup, no errors");
    assert_eq!(log["passed"], false, "{report}");
    assert!(
        log["observed"].as_str().unwrap().contains("g.log"),
        "{report}"
    );
    // Running with the new size; the failure is reported, not hidden.
    assert_eq!(log_file_size(&sb), 64 * MIB);
}

// ---- Catalogue: innops killed right after each step's action, then resumed ----

fn check_end_state(sb: &mut Sandboxed, run_dir: &std::path::Path, mib: u64, killed_at: &str) {
    sb.reopen();
    assert!(sb.sandbox.is_running(), "after {killed_at}");
    assert_eq!(log_file_size(sb), mib * MIB, "after {killed_at}");
    assert_eq!(file_size(sb), mib * MIB, "after {killed_at}");
    assert!(
        dropin(sb).contains(&format!("innodb_log_file_size = {}", mib * MIB)),
        "after {killed_at}: {}",
        dropin(sb)
    );
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "after {killed_at}: {report}");
    assert!(
        report["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] == "done" || s["status"] == "skipped"),
        "after {killed_at}: {report}"
    );
    // The interrupted action ran once: resume finished it by its checks, not by acting again.
    let ev = events(run_dir);
    assert_eq!(
        ev.iter()
            .filter(|e| e["event"] == "action_done" && e["step"] == killed_at)
            .count(),
        1,
        "after {killed_at}"
    );
}

#[test]
fn offline_catalogue_innops_killed_after_each_action_then_resumed() {
    let mut sb = Sandboxed::new("redocato");
    // Each kill gets its own target size, so every round starts from the previous round's end state.
    for (i, (killed_at, mib)) in [("persist", 48u64), ("stop", 64), ("start", 80)]
        .into_iter()
        .enumerate()
    {
        let run_dir = sb.root.join(format!("run{i}"));
        let args = offline_args(&format!("{mib}M"), &run_dir);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let fault = format!("after-action:{killed_at}");
        let killed = sb.innops_env(&args, &[("INNOPS_FAULT", &fault)]);
        assert_eq!(killed.code, 137, "{killed:?}");
        let resumed = resume(&run_dir, &["--no-bench"]);
        assert_eq!(resumed.code, 0, "after {killed_at}: {resumed:?}");
        check_end_state(&mut sb, &run_dir, mib, killed_at);
    }
}

#[test]
fn online_catalogue_innops_killed_after_each_action_then_resumed() {
    let mut sb = Sandboxed::new("redocatn");
    for (i, (killed_at, mib)) in [("resize", 112u64), ("persist", 144)]
        .into_iter()
        .enumerate()
    {
        let run_dir = sb.root.join(format!("run{i}"));
        let args = [
            "redo",
            "--size",
            &format!("{mib}M"),
            "--execute",
            "--no-bench",
            "--run-dir",
            run_dir.to_str().unwrap(),
        ]
        .map(String::from);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let fault = format!("after-action:{killed_at}");
        let killed = sb.innops_env(&args, &[("INNOPS_FAULT", &fault)]);
        assert_eq!(killed.code, 137, "{killed:?}");
        let resumed = resume(&run_dir, &["--no-bench"]);
        assert_eq!(resumed.code, 0, "after {killed_at}: {resumed:?}");
        check_end_state(&mut sb, &run_dir, mib, killed_at);
    }
}

#[test]
fn preflight_refuses_what_it_cannot_do_and_names_the_flag_or_the_setting() {
    let sb = Sandboxed::with(
        "redopre",
        innops::server::sandbox::SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra: vec!["innodb_read_only = 1".into()],
            ..Default::default()
        },
    );
    let ro = sb.innops(&["redo", "--size", "128M"]);
    assert_eq!(ro.code, 1, "{ro:?}");
    assert!(ro.stderr.contains("innodb_read_only"), "{}", ro.stderr);
    // The dry run shows every preflight verdict: find the ones about the flags.
    let pre_verdict = |out: &crate::common::Output, check: &str| -> serde_json::Value {
        out.json()["steps"][0]["pre"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["check"] == check)
            .unwrap_or_else(|| panic!("no {check}: {out:?}"))
            .clone()
    };
    let socket = sb.sandbox.socket.display().to_string();
    // No option file: the new size could not survive a restart.
    let no_config = run_innops(
        &[
            "redo", "--size", "128M", "--format", "json", "--socket", &socket, "--user", "root",
        ]
        .map(String::from),
        &[],
    );
    assert_eq!(no_config.code, 1, "{no_config:?}");
    let v = pre_verdict(&no_config, "drop-in can be written");
    assert_eq!(v["passed"], false, "{v}");
    assert!(v["fix"].as_str().unwrap().contains("--config-file"), "{v}");
    // The restart path without a way to restart.
    let config = sb.sandbox.option_file.display().to_string();
    let no_control = run_innops(
        &[
            "redo",
            "--size",
            "128M",
            "--offline",
            "--format",
            "json",
            "--socket",
            &socket,
            "--user",
            "root",
            "--config-file",
            &config,
        ]
        .map(String::from),
        &[],
    );
    assert_eq!(no_control.code, 1, "{no_control:?}");
    let v = pre_verdict(&no_control, "server control");
    assert_eq!(v["passed"], false, "{v}");
    assert!(v["fix"].as_str().unwrap().contains("--start-cmd"), "{v}");
}

#[test]
fn a_server_killed_at_the_shutdown_while_innops_dies_too_is_refused_on_resume_until_started() {
    let mut sb = Sandboxed::new("redokk");
    let run_dir = sb.root.join("run");
    let args = offline_args("64M", &run_dir);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let killed = sb.innops_env(
        &args,
        &[
            ("INNOPS_TEST_KILL_AT_STOP", "1"),
            ("INNOPS_FAULT", "after-action:stop"),
        ],
    );
    assert_eq!(killed.code, 137, "{killed:?}");
    assert!(!sb.sandbox.is_running());
    // Down without a clean shutdown: resume must not start it with a new redo size.
    let refused = resume(&run_dir, &["--no-bench"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("down without a clean shutdown"),
        "{}",
        refused.stderr
    );
    assert!(!sb.sandbox.is_running(), "resume started nothing");
    assert!(events(&run_dir).iter().any(|e| e["phase"] == "resume-post"
        && e["verdict"]["check"] == "clean shutdown"
        && e["verdict"]["passed"] == false));
    // Started by the DBA (crash recovery runs), the run can be finished.
    sandbox_cmd(&sb, "start");
    let resumed = resume(&run_dir, &["--no-bench"]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    sb.reopen();
    assert_eq!(log_file_size(&sb), 64 * MIB);
    assert_eq!(file_size(&sb), 64 * MIB);
}
