//! Issue 7: verdicts a DBA can trust. Each test drives a check into the state it names — a counter moved after
//! planning, a write queued behind the guard, a shadow one value off, a source changed while the run was
//! down, a second run of the same table, an edited plan, another server, a crashed table — and asserts the
//! exit code, the sentence, and the state left behind.

use std::path::Path;

use mysql::prelude::Queryable;

use crate::common::args;
use crate::common::convert::{convert, engine, rows, setup, SHAPE};
use crate::common::sandbox_args;
use crate::common::sandbox_cmd;
use crate::common::{
    read_json, run_innops, spawn_innops, wait_holding, wait_innops, write_that_waits, Sandboxed,
};

/// `innops convert ARGS --sandbox …` started in the background, held at `point`.
fn convert_held(sb: &Sandboxed, a: &[&str], point: &str, hold: &Path) -> std::process::Child {
    std::fs::create_dir_all(hold).unwrap();
    let mut all = vec!["convert".to_string()];
    all.extend(args(a));
    all.extend(sandbox_args(sb));
    spawn_innops(
        &all,
        &[("INNOPS_TEST_HOLD", &format!("{point}={}", hold.display()))],
    )
}

/// A `--strategy S` conversion of d.t with its own hold and run directories (named after the strategy), held at
/// `point`: the child, and the run directory.
fn strategy_held(
    sb: &Sandboxed,
    strategy: &str,
    point: &str,
) -> (std::process::Child, std::path::PathBuf, std::path::PathBuf) {
    let hold = sb.root.join(format!("hold-{strategy}"));
    let run = sb.root.join(format!("run-{strategy}"));
    let mut child = convert_held(
        sb,
        &[
            "--tables",
            "d.t",
            "--strategy",
            strategy,
            "--execute",
            "--no-bench",
            "--run-dir",
            run.to_str().unwrap(),
        ],
        point,
        &hold,
    );
    wait_holding(&hold, &mut child);
    (child, hold, run)
}

/// `innops convert ARGS --run-dir RUN` ended by `INNOPS_FAULT=FAULT` (exit 137, as kill -9 would): the run
/// directory.
fn killed_at(sb: &Sandboxed, a: &[&str], fault: &str) -> std::path::PathBuf {
    let run = sb.root.join("run");
    let mut all = args(a);
    all.extend(["--run-dir".to_string(), run.display().to_string()]);
    let killed = convert(sb, &all, &[("INNOPS_FAULT", fault)]);
    assert_eq!(killed.code, 137, "{killed:?}");
    run
}

fn go(hold: &Path) {
    std::fs::write(hold.join("go"), b"").unwrap();
}

fn tables(c: &mut mysql::Conn) -> Vec<String> {
    let mut t: Vec<String> = c
        .query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd'")
        .unwrap();
    t.sort();
    t
}

fn auto_increment(c: &mut mysql::Conn, table: &str) -> u64 {
    c.exec_first::<Option<u64>, _, _>(
        "SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = ?",
        (table,),
    )
    .unwrap()
    .flatten()
    .unwrap()
}

#[test]
fn a_counter_moved_after_planning_is_carried_over_on_both_copy_paths() {
    let sb = Sandboxed::new("vd-autoinc");
    for strategy in ["bulk", "deferred"] {
        let mut c = setup(&sb, SHAPE);
        let (child, hold, _run) = strategy_held(&sb, strategy, "before-guard");
        // Between the plan and the guard: the newest id is handed out and its row deleted again.
        c.query_drop("INSERT INTO d.t (k, c) VALUES (5, 'gone again')")
            .unwrap();
        let handed_out = c.last_insert_id();
        c.exec_drop("DELETE FROM d.t WHERE id = ?", (handed_out,))
            .unwrap();
        go(&hold);
        let out = wait_innops(child);
        assert_eq!(out.code, 0, "{strategy}: {out:?}");
        assert!(
            auto_increment(&mut c, "t") > handed_out,
            "{strategy}: the InnoDB table's counter must be past the id {handed_out} already handed out"
        );
        c.query_drop("INSERT INTO d.t (k, c) VALUES (6, 'next')")
            .unwrap();
        assert!(
            c.last_insert_id() > handed_out,
            "{strategy}: an id was issued twice"
        );
        c.query_drop("DROP DATABASE d").unwrap();
    }
}

#[test]
fn a_delete_queued_behind_the_guard_lands_in_the_new_table_and_the_swap_is_done() {
    let sb = Sandboxed::new("vd-delete");
    let mut c = setup(&sb, SHAPE);
    let hold = sb.root.join("hold");
    let run = sb.root.join("run");
    let mut child = convert_held(
        &sb,
        &[
            "--tables",
            "d.t",
            "--execute",
            "--no-bench",
            "--run-dir",
            run.to_str().unwrap(),
        ],
        "before-swap",
        &hold,
    );
    wait_holding(&hold, &mut child);
    let deleter = write_that_waits(&sb, "DELETE FROM d.t WHERE id <= 10");
    go(&hold);
    let out = wait_innops(child);
    deleter.join().unwrap();
    assert_eq!(out.code, 0, "a good swap is reported as done: {out:?}");
    let live: u64 = c.query_first("SELECT COUNT(*) FROM d.t").unwrap().unwrap();
    let kept: u64 = c
        .query_first("SELECT COUNT(*) FROM d._t_myisam_old")
        .unwrap()
        .unwrap();
    assert_eq!((live, kept), (29990, 30000));
    let report = read_json(&run.join("report.json"));
    assert_eq!(report["status"], "done");
    // An uninterrupted run has no statement of a killed run to stop, and must never take its own for one.
    let copy = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "copy:d.t")
        .unwrap();
    assert_eq!(
        copy["result"]["stopped_orphans"],
        serde_json::json!([]),
        "{copy}"
    );
}

#[test]
fn a_shadow_one_value_off_is_refused_and_the_printed_restart_command_converts() {
    let sb = Sandboxed::new("vd-oneoff");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    for strategy in ["bulk", "deferred"] {
        let (child, hold, run) = strategy_held(&sb, strategy, "after-copy");
        c.query_drop("UPDATE d._t_innops_new SET c = 'c-tampered' WHERE id = 12345")
            .unwrap();
        go(&hold);
        let out = wait_innops(child);
        assert_eq!(out.code, 3, "{strategy}: {out:?}");
        // CHECKSUM TABLE first (the table's types checksum alike on both engines), then the row hash of both
        // tables, which decides: the difference is real.
        assert!(
            out.stderr.contains("checksum")
                && out.stderr.contains("CHECKSUM TABLE")
                && out.stderr.contains("row hash (xxh3-128)"),
            "{strategy}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("--restart"),
            "{strategy}: the refusal names the way out: {}",
            out.stderr
        );
        assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
        assert_eq!(rows(&mut c, "t"), before, "{strategy}: source untouched");
        assert!(engine(&mut c, "_t_myisam_old").is_none(), "nothing swapped");
        let report = read_json(&run.join("report.json"));
        assert_eq!(report["status"], "failed", "{report}");
        if strategy == "bulk" {
            c.query_drop("DROP TABLE d._t_innops_new").unwrap();
        }
    }
    // The command innops printed, as printed, finishes the job.
    let out = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--restart",
            "--execute",
            "--no-bench",
            "--run-dir",
            sb.root.join("run-restart").to_str().unwrap(),
        ]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
    assert_eq!(rows(&mut c, "t"), before);
    assert_eq!(rows(&mut c, "_t_myisam_old"), before);
}

#[test]
fn a_source_changed_while_the_run_was_down_is_refused_with_advice_that_works() {
    let sb = Sandboxed::new("vd-changed");
    let mut c = setup(&sb, SHAPE);
    let run = killed_at(
        &sb,
        &["--tables", "d.t", "--execute", "--no-bench"],
        "after-action:copy:d.t",
    );
    // The guard died with the run: a write lands in the source, keeping the row count.
    c.query_drop("UPDATE d.t SET c = 'changed meanwhile' WHERE id = 777")
        .unwrap();
    let after_change = rows(&mut c, "t");
    let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(resumed.code, 3, "{resumed:?}");
    assert!(
        resumed.stderr.contains("--restart") && !resumed.stderr.contains("resume the run"),
        "{}",
        resumed.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    let restart = convert(
        &sb,
        &args(&["--tables", "d.t", "--restart", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(restart.code, 0, "{restart:?}");
    assert_eq!(rows(&mut c, "t"), after_change);
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
}

#[test]
fn a_run_killed_before_the_shadow_exists_resumes() {
    let sb = Sandboxed::new("vd-early");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    for strategy in ["bulk", "deferred"] {
        let hold = sb.root.join(format!("hold-{strategy}"));
        let run = sb.root.join(format!("run-{strategy}"));
        let mut child = convert_held(
            &sb,
            &[
                "--tables",
                "d.t",
                "--strategy",
                strategy,
                "--execute",
                "--run-dir",
                run.to_str().unwrap(),
                "--no-bench",
            ],
            "before-guard",
            &hold,
        );
        wait_holding(&hold, &mut child);
        child.kill().unwrap();
        wait_innops(child);
        assert!(engine(&mut c, "_t_innops_new").is_none());
        let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
        assert_eq!(resumed.code, 0, "{strategy}: {resumed:?}");
        assert_eq!(rows(&mut c, "t"), before);
        c.query_drop("DROP TABLE d.t").unwrap();
        c.query_drop("RENAME TABLE d._t_myisam_old TO d.t").unwrap();
    }
}

#[test]
fn one_run_per_table_the_second_is_refused_with_its_holder_and_kill_frees_the_lock() {
    let sb = Sandboxed::new("vd-lock");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    let hold = sb.root.join("hold");
    let run = sb.root.join("run");
    let mut first = convert_held(
        &sb,
        &[
            "--tables",
            "d.t",
            "--execute",
            "--no-bench",
            "--run-dir",
            run.to_str().unwrap(),
        ],
        "after-copy",
        &hold,
    );
    wait_holding(&hold, &mut first);
    let second = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--execute",
            "--no-bench",
            "--run-dir",
            sb.root.join("run2").to_str().unwrap(),
        ]),
        &[],
    );
    assert_eq!(second.code, 1, "{second:?}");
    assert!(
        second.stderr.contains("another innops run") && second.stderr.contains("connection "),
        "{}",
        second.stderr
    );
    assert!(
        !sb.root.join("run2").join("journal.jsonl").exists(),
        "a refused second run leaves no run behind"
    );
    let dry = convert(&sb, &args(&["--tables", "d.t"]), &[]);
    assert_eq!(dry.code, 1, "a dry run says the table is busy: {dry:?}");
    // Busy because of the lock, named as such (not only through a pre-check the first run's shadow trips).
    assert!(
        dry.stdout.contains("another innops run is working on")
            || dry.stderr.contains("another innops run is working on"),
        "{dry:?}"
    );
    // kill -9 of the first run frees its lock: resuming it works.
    first.kill().unwrap();
    wait_innops(first);
    let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(rows(&mut c, "t"), before);
    assert_eq!(
        tables(&mut c),
        vec!["_t_myisam_old".to_string(), "t".to_string()],
        "no stray shadow"
    );
}

#[test]
fn resume_refuses_an_edited_plan_and_another_server_and_keeps_the_run_options() {
    let sb = Sandboxed::new("vd-plan");
    let mut c = setup(&sb, SHAPE);
    let run = killed_at(
        &sb,
        &["--tables", "d.t", "--execute", "--no-bench"],
        "after-action:copy:d.t",
    );

    // Another server: the same run directory, pointed elsewhere.
    let other = Sandboxed::new("vd-plan-other");
    let mut to_other = args(&["resume", run.to_str().unwrap()]);
    to_other.extend(sandbox_args(&other));
    let refused = run_innops(&to_other, &[]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("another") || refused.stderr.contains("datadir"),
        "{}",
        refused.stderr
    );

    // An edited plan: drop_old switched on.
    let plan_path = run.join("plan.json");
    let original = std::fs::read_to_string(&plan_path).unwrap();
    let edited = original.replace("\"drop_old\": false", "\"drop_old\": true");
    assert_ne!(edited, original);
    std::fs::write(&plan_path, &edited).unwrap();
    let refused = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("changed after the run started"),
        "{}",
        refused.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));

    // Edited to point at another server: refused for the edit, not for what the edit broke next.
    let moved = original.replace(
        &sb.root.display().to_string(),
        &other.root.display().to_string(),
    );
    assert_ne!(moved, original);
    std::fs::write(&plan_path, &moved).unwrap();
    let refused = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("changed after the run started"),
        "{}",
        refused.stderr
    );

    // Forged in full: the edited plan with the journal's sha256 rewritten to match it.
    use sha2::Digest;
    let sha = |t: &str| -> String {
        sha2::Sha256::digest(t.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let journal_path = run.join("journal.jsonl");
    let journal = std::fs::read_to_string(&journal_path).unwrap();
    assert!(journal.contains(&sha(&original)), "{journal}");
    std::fs::write(&plan_path, &edited).unwrap();
    std::fs::write(
        &journal_path,
        journal.replace(&sha(&original), &sha(&edited)),
    )
    .unwrap();
    let refused = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("were not written by innops"),
        "{}",
        refused.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    std::fs::write(&journal_path, &journal).unwrap();

    // The original plan resumes, and honours --no-bench given at the start.
    std::fs::write(&plan_path, &original).unwrap();
    let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let report = read_json(&run.join("report.json"));
    assert!(
        report["bench"]["before"].is_null() && report["bench"]["after"].is_null(),
        "{report}"
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
}

#[test]
fn a_crashed_myisam_table_is_refused_with_the_repair_to_run() {
    let mut sb = Sandboxed::new("vd-crashed");
    let mut c = setup(&sb, SHAPE);
    drop(c);
    sandbox_cmd(&sb, "stop");
    // Set the "crashed" bit in the MyISAM index header's state (byte 26).
    let myi = sb.sandbox.datadir.join("d").join("t.MYI");
    let mut bytes = std::fs::read(&myi).unwrap();
    bytes[26] |= 2;
    std::fs::write(&myi, &bytes).unwrap();
    let conf = sb
        .sandbox
        .option_file
        .parent()
        .unwrap()
        .join("conf.d")
        .join("recover.cnf");
    std::fs::write(&conf, "[mysqld]\nmyisam_recover_options = OFF\n").unwrap();
    sandbox_cmd(&sb, "start");
    sb.reopen();
    c = sb.conn();
    let out = convert(&sb, &args(&["--tables", "d.t"]), &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("marked as crashed") && out.stderr.contains("REPAIR TABLE `d`.`t`"),
        "{}",
        out.stderr
    );
    // One refusal, not a second empty one ("d.t is , not MyISAM").
    assert!(!out.stderr.contains("not MyISAM"), "{}", out.stderr);
    c.query_drop("REPAIR TABLE d.t").unwrap();
    let out = convert(
        &sb,
        &args(&["--tables", "d.t", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn an_automatic_repair_when_innops_opens_the_table_is_reported() {
    let mut sb = Sandboxed::new("vd-repaired");
    setup(&sb, SHAPE);
    sandbox_cmd(&sb, "stop");
    let myi = sb.sandbox.datadir.join("d").join("t.MYI");
    let mut bytes = std::fs::read(&myi).unwrap();
    bytes[26] |= 2;
    std::fs::write(&myi, &bytes).unwrap();
    sandbox_cmd(&sb, "start");
    sb.reopen();
    let out = convert(&sb, &args(&["--tables", "d.t", "--format", "json"]), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    let pre = &j["steps"][0]["pre"];
    let crashed = pre
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["check"] == "not marked as crashed")
        .unwrap();
    assert!(
        crashed["observed"]
            .as_str()
            .unwrap()
            .contains("repaired it automatically"),
        "{crashed}"
    );
}

#[test]
fn a_check_on_a_locked_table_gives_up_within_its_bound_and_names_the_candidates() {
    let sb = Sandboxed::new("vd-locked");
    let mut c = setup(
        &sb,
        "CREATE TABLE t (id INT PRIMARY KEY, d DATE) ENGINE=MyISAM; INSERT INTO t VALUES (1, '2020-01-01');",
    );
    c.query_drop("LOCK TABLES d.t WRITE").unwrap();
    let out = convert(&sb, &args(&["--tables", "d.t"]), &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("not granted within 10 s") && out.stderr.contains("connection "),
        "{}",
        out.stderr
    );
    c.query_drop("UNLOCK TABLES").unwrap();
}

/// The catalogue: innops killed right after each step's action — once after the action's result reached the
/// journal, once before — on every path, then resumed. The data ends equal (every row, compared outside innops),
/// the kept table intact, no stray table, and the report says "done" only because it is.
#[test]
fn kill_9_after_every_convert_step_then_resume_ends_true() {
    let sb = Sandboxed::new("vd-catalogue");
    let cases: &[(&str, &[&str])] = &[
        ("bulk", &["copy", "verify", "swap", "analyze"]),
        (
            "deferred",
            &["copy", "indexes", "verify", "swap", "analyze"],
        ),
        ("alter", &["alter", "analyze"]),
    ];
    for (strategy, steps) in cases {
        for step in *steps {
            for point in ["after-action", "before-journal"] {
                let mut c = setup(&sb, SHAPE);
                let before = rows(&mut c, "t");
                let run = sb.root.join(format!("run-{strategy}-{step}-{point}"));
                let a = args(&[
                    "--tables",
                    "d.t",
                    "--strategy",
                    strategy,
                    "--execute",
                    "--no-bench",
                    "--run-dir",
                    run.to_str().unwrap(),
                ]);
                let fault = format!("{point}:{step}:d.t");
                let case = format!("{strategy}/{step}/{point}");
                let killed = convert(&sb, &a, &[("INNOPS_FAULT", &fault)]);
                assert_eq!(killed.code, 137, "{case}: {killed:?}");
                let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
                assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"), "{case}");
                assert!(rows(&mut c, "t") == before, "{case}: data");
                let report = read_json(&run.join("report.json"));
                if *strategy == "alter" && *step == "alter" && point == "before-journal" {
                    // The checksums taken around the ALTER died with the process: innops cannot prove the
                    // conversion, and says so instead of "done".
                    assert_eq!(resumed.code, 1, "{case}: {resumed:?}");
                    assert!(
                        resumed
                            .stderr
                            .contains("compare the table with your backup"),
                        "{case}: {}",
                        resumed.stderr
                    );
                    assert_eq!(report["status"], "refused", "{case}");
                    c.query_drop("DROP DATABASE d").unwrap();
                    continue;
                }
                assert_eq!(resumed.code, 0, "{case}: {resumed:?}");
                let expected: Vec<String> = if *strategy == "alter" {
                    vec!["t".into()]
                } else {
                    assert!(
                        rows(&mut c, "_t_myisam_old") == before,
                        "{case}: kept table"
                    );
                    vec!["_t_myisam_old".into(), "t".into()]
                };
                assert_eq!(tables(&mut c), expected, "{case}: no stray table");
                assert_eq!(report["status"], "done", "{case}: {report}");
                let failed: Vec<&serde_json::Value> = report["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|s| s["status"] != "done" && s["status"] != "skipped")
                    .collect();
                assert!(failed.is_empty(), "{case}: {failed:?}");
                c.query_drop("DROP DATABASE d").unwrap();
            }
        }
    }
}

/// A journal that lost its tail (the disk lied about an fsync) is behind the server: the steps it does not
/// record as done find their work done on the server and are skipped, instead of converting again.
#[test]
fn a_journal_behind_the_server_resumes_from_the_servers_real_state() {
    let sb = Sandboxed::new("vd-lagging");
    for strategy in ["bulk", "deferred"] {
        let mut c = setup(&sb, SHAPE);
        let before = rows(&mut c, "t");
        let run = sb.root.join(format!("run-{strategy}"));
        let out = convert(
            &sb,
            &args(&[
                "--tables",
                "d.t",
                "--strategy",
                strategy,
                "--execute",
                "--no-bench",
                "--run-dir",
                run.to_str().unwrap(),
            ]),
            &[],
        );
        assert_eq!(out.code, 0, "{strategy}: {out:?}");
        // Keep the journal up to the start of the copy step only.
        let journal = std::fs::read_to_string(run.join("journal.jsonl")).unwrap();
        let mut kept = String::new();
        for line in journal.lines() {
            kept.push_str(line);
            kept.push('\n');
            if line.contains("\"step_started\"") && line.contains("copy:d.t") {
                break;
            }
        }
        std::fs::write(run.join("journal.jsonl"), kept).unwrap();
        let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
        assert_eq!(resumed.code, 0, "{strategy}: {resumed:?}");
        assert!(
            rows(&mut c, "t") == before && rows(&mut c, "_t_myisam_old") == before,
            "{strategy}"
        );
        assert_eq!(
            tables(&mut c),
            vec!["_t_myisam_old".to_string(), "t".to_string()],
            "{strategy}"
        );
        let report = read_json(&run.join("report.json"));
        let mut ids = vec!["copy:d.t", "verify:d.t", "swap:d.t"];
        if strategy == "deferred" {
            ids.push("indexes:d.t");
        }
        for id in ids {
            let step = report["steps"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["id"] == id)
                .unwrap();
            assert_eq!(
                step["status"], "skipped",
                "{strategy}: {id} found done on the server: {step}"
            );
        }
        c.query_drop("DROP DATABASE d").unwrap();
    }
}

#[test]
fn a_table_emptied_after_the_plan_is_refused_rather_than_copied_as_nothing() {
    let sb = Sandboxed::new("vd-emptied");
    let mut c = setup(&sb, SHAPE);
    let hold = sb.root.join("hold");
    let mut child = convert_held(
        &sb,
        &["--tables", "d.t", "--execute", "--no-bench"],
        "before-guard",
        &hold,
    );
    wait_holding(&hold, &mut child);
    c.query_drop("DELETE FROM d.t").unwrap();
    go(&hold);
    let out = wait_innops(child);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("holds none now"), "{}", out.stderr);
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    assert!(engine(&mut c, "_t_innops_new").is_none());
}

/// The bulk copy fills its shadow in one statement: a shadow that a killed run left full, behind a source that
/// took writes meanwhile, is dropped and filled again, and the path taken is the one the server's capability
/// chose.
#[test]
fn a_bulk_copy_behind_a_source_that_moved_on_is_made_again() {
    let sb = Sandboxed::new("vd-bulkagain");
    let mut c = setup(&sb, SHAPE);
    let run = killed_at(
        &sb,
        &[
            "--tables",
            "d.t",
            "--strategy",
            "bulk",
            "--execute",
            "--no-bench",
        ],
        "after-action:copy:d.t",
    );
    c.query_drop("INSERT INTO d.t (k, c) VALUES (1, 'arrived while the run was down')")
        .unwrap();
    let after_write = rows(&mut c, "t");
    let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(rows(&mut c, "t") == after_write);
    let report = read_json(&run.join("report.json"));
    let copy = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "copy:d.t")
        .unwrap();
    assert_eq!(copy["result"]["copy"]["path"], "bulk", "{copy}");
    assert!(
        copy["result"]["created"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s.as_str().unwrap().starts_with("DROP")),
        "the stale shadow was dropped and made again: {copy}"
    );
}

#[test]
fn a_copy_waits_for_the_load_to_drop_before_locking_or_creating_anything() {
    let sb = Sandboxed::new("vd-pause");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    // The test controls the load: each idle connection adds one to Threads_connected.
    let crowd: Vec<mysql::Conn> = (0..30).map(|_| sb.conn()).collect();
    let hold = sb.root.join("hold");
    let mut child = convert_held(
        &sb,
        &[
            "--tables",
            "d.t",
            "--max-load",
            "Threads_connected=20",
            "--critical-load",
            "Threads_connected=1000",
            "--execute",
            "--no-bench",
        ],
        "load-paused",
        &hold,
    );
    wait_holding(&hold, &mut child);
    assert!(
        engine(&mut c, "_t_innops_new").is_none(),
        "nothing created while paused"
    );
    // No guard yet: a write goes straight through.
    c.query_drop("UPDATE d.t SET c = 'while paused' WHERE id = 3")
        .unwrap();
    drop(crowd);
    go(&hold);
    let out = wait_innops(child);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("paused for"),
        "the pause is said: {}",
        out.stderr
    );
    let after = rows(&mut c, "t");
    assert!(
        after == rows(&mut c, "_t_myisam_old"),
        "the copy holds the write made while paused"
    );
    assert!(
        after != before,
        "the write made while paused is in the table"
    );
    let c3: String = c
        .query_first("SELECT c FROM d.t WHERE id = 3")
        .unwrap()
        .unwrap();
    assert_eq!(c3, "while paused");
}

/// kill -9 in the middle of a chunk leaves its INSERT running on the server. The resumed run stops it before
/// it reads what the shadow holds, instead of failing on a duplicate key (or waiting on its lock at the swap).
#[test]
fn a_statement_left_running_by_a_killed_run_is_stopped_before_the_copy_goes_on() {
    let sb = Sandboxed::new("vd-orphan");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    let run = killed_at(
        &sb,
        &[
            "--tables",
            "d.t",
            "--strategy",
            "deferred",
            "--chunk-time",
            "10",
            "--execute",
            "--no-bench",
        ],
        "after-chunk:2",
    );
    // What the server would still be running after a kill mid-chunk: the run's INSERT, tagged as it tags it.
    let target = sb.target();
    let (tx, rx) = std::sync::mpsc::channel();
    let orphan = std::thread::spawn(move || {
        let mut o = target.connect().unwrap();
        tx.send(o.connection_id()).unwrap();
        o.query_drop(
            "INSERT /* innops:convert:copy:d.t */ INTO d._t_innops_new (id, k, c) \
             SELECT id, k, c FROM d.t WHERE id > 29990 AND SLEEP(600) = 0",
        )
    });
    let orphan_id = rx.recv().unwrap();
    loop {
        let info: Option<Option<String>> = c
            .exec_first(
                "SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = ?",
                (orphan_id,),
            )
            .unwrap();
        if info.flatten().is_some_and(|q| q.contains("SLEEP")) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(orphan.join().unwrap().is_err(), "the orphan was stopped");
    assert!(rows(&mut c, "t") == before, "data equal after the resume");
    let report = read_json(&run.join("report.json"));
    let copy = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "copy:d.t")
        .unwrap();
    assert_eq!(
        copy["result"]["stopped_orphans"],
        serde_json::json!([orphan_id]),
        "{copy}"
    );
}

#[test]
fn a_second_redo_or_rollback_is_refused_while_another_run_holds_the_object() {
    let sb = Sandboxed::new("vd-objlock");
    let mut c = setup(&sb, SHAPE);
    // Another run's lock session, as innops holds it.
    let mut other = sb.conn();
    let got: Option<i64> = other
        .query_first("SELECT GET_LOCK('innops:redo-log', 0)")
        .unwrap();
    assert_eq!(got, Some(1));
    let other_id = other.connection_id();
    let redo = sb.innops(&["redo", "--size", "128M", "--execute", "--yes", "--no-bench"]);
    assert_eq!(redo.code, 1, "{redo:?}");
    assert!(
        redo.stderr.contains(&format!("connection {other_id}")),
        "the refusal names the holder: {}",
        redo.stderr
    );
    let size: u64 = c
        .query_first("SELECT @@innodb_log_file_size")
        .unwrap()
        .unwrap();
    assert_ne!(size, 128 << 20, "nothing was resized");
    // The lock goes with the session that held it.
    drop(other);
    let mut tries = 0;
    let redo = loop {
        let out = sb.innops(&["redo", "--size", "128M", "--execute", "--yes", "--no-bench"]);
        // The server frees the lock when it notices the session is gone; that is immediate for an idle session,
        // but give it a few attempts rather than depend on timing.
        if out.code != 1 || tries == 20 {
            break out;
        }
        tries += 1;
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(redo.code, 0, "{redo:?}");

    let converted = convert(
        &sb,
        &args(&["--tables", "d.t", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(converted.code, 0, "{converted:?}");
    let mut holder = sb.conn();
    // The finished convert's lock session may not be gone on the server yet: wait for it (bounded), and make
    // sure this session holds the lock before judging the rollback.
    let got: Option<i64> = holder
        .query_first("SELECT GET_LOCK('innops:table:d.t', 60)")
        .unwrap();
    assert_eq!(got, Some(1), "the test holds the table's lock");
    let rollback = convert(
        &sb,
        &args(&["--rollback", "d.t", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(rollback.code, 1, "{rollback:?}");
    assert!(
        rollback.stderr.contains("another innops run"),
        "{}",
        rollback.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
}

/// A resumed run lost its guard with the process: it takes a new one before it verifies and swaps, so a write
/// made then waits and lands in the new table.
#[test]
fn a_resumed_run_verifies_and_swaps_under_a_new_guard() {
    let sb = Sandboxed::new("vd-reguard");
    let mut c = setup(&sb, SHAPE);
    let run = killed_at(
        &sb,
        &["--tables", "d.t", "--execute", "--no-bench"],
        "after-action:verify:d.t",
    );
    let hold = sb.root.join("hold");
    std::fs::create_dir_all(&hold).unwrap();
    let mut child = spawn_innops(
        &args(&["resume", run.to_str().unwrap()]),
        &[(
            "INNOPS_TEST_HOLD",
            &format!("before-swap={}", hold.display()),
        )],
    );
    wait_holding(&hold, &mut child);
    let writer = write_that_waits(
        &sb,
        "INSERT INTO d.t (k, c) VALUES (3, 'during the resumed swap')",
    );
    go(&hold);
    let out = wait_innops(child);
    writer.join().unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    let in_new: u64 = c
        .query_first("SELECT COUNT(*) FROM d.t WHERE c = 'during the resumed swap'")
        .unwrap()
        .unwrap();
    assert_eq!(in_new, 1);
}

/// Killed after the verification: the verdict died with the process. The resumed swap verifies again and
/// refuses a source that changed meanwhile, instead of swapping in a stale copy.
#[test]
fn a_resumed_swap_verifies_again_and_refuses_a_source_that_changed() {
    let sb = Sandboxed::new("vd-reverify");
    let mut c = setup(&sb, SHAPE);
    let run = sb.root.join("run");
    let hold = sb.root.join("hold");
    // Verified, and killed inside the swap step before the RENAME.
    let mut child = convert_held(
        &sb,
        &[
            "--tables",
            "d.t",
            "--execute",
            "--no-bench",
            "--run-dir",
            run.to_str().unwrap(),
        ],
        "before-swap",
        &hold,
    );
    wait_holding(&hold, &mut child);
    child.kill().unwrap();
    wait_innops(child);
    c.query_drop("UPDATE d.t SET c = 'after the verify' WHERE id = 42")
        .unwrap();
    let changed = rows(&mut c, "t");
    let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(resumed.code, 1, "{resumed:?}");
    assert!(
        resumed.stderr.contains("the source changed since the copy")
            && resumed.stderr.contains("--restart"),
        "{}",
        resumed.stderr
    );
    assert_eq!(
        engine(&mut c, "t").as_deref(),
        Some("MyISAM"),
        "nothing swapped"
    );
    assert!(rows(&mut c, "t") == changed);
}

/// The swap's post-check judges the kept table against what was verified: a kept table that does not hold the
/// verified rows right after the swap is reported (exit 3), not "done".
#[test]
fn a_kept_table_that_differs_from_the_verified_source_after_the_swap_is_reported() {
    let sb = Sandboxed::new("vd-keptdiff");
    let mut c = setup(&sb, SHAPE);
    let hold = sb.root.join("hold");
    let mut child = convert_held(
        &sb,
        &["--tables", "d.t", "--execute", "--no-bench"],
        "after-action:swap:d.t",
        &hold,
    );
    wait_holding(&hold, &mut child);
    c.query_drop("INSERT INTO d._t_myisam_old (k, c) VALUES (9, 'not what was verified')")
        .unwrap();
    go(&hold);
    let out = wait_innops(child);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stderr.contains("the swap did not complete"),
        "{}",
        out.stderr
    );
}

/// A shadow that is not InnoDB (an older run's ALTER failed after its CREATE … LIKE, or someone altered it) is
/// never swapped in: the resume refuses, naming it, and the MyISAM source stays as it was.
#[test]
fn a_shadow_that_is_not_innodb_is_never_copied_into_or_swapped_in() {
    let sb = Sandboxed::new("vd-shadow");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    let run = killed_at(
        &sb,
        &["--tables", "d.t", "--execute", "--no-bench"],
        "after-action:copy:d.t",
    );
    c.query_drop("ALTER TABLE d._t_innops_new ENGINE=MyISAM")
        .unwrap();
    let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_ne!(resumed.code, 0, "{resumed:?}");
    assert!(
        resumed
            .stderr
            .contains("d._t_innops_new is a MyISAM table, not InnoDB"),
        "{}",
        resumed.stderr
    );
    assert!(resumed.stderr.contains("--restart"), "{}", resumed.stderr);
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    assert_eq!(rows(&mut c, "t"), before);
    // The command it names starts over and converts.
    let restarted = convert(
        &sb,
        &args(&["--tables", "d.t", "--restart", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(restarted.code, 0, "{restarted:?}");
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
    assert_eq!(rows(&mut c, "t"), before);
}

/// `--all-myisam` as a fleet reruns it: the second run finds nothing left and succeeds (exit 0, "nothing to
/// convert"), and innops's own copy left by an interrupted run is never planned as a table to convert.
#[test]
fn all_myisam_reruns_succeed_and_never_plan_innops_own_copies() {
    let sb = Sandboxed::new("vd-allmy");
    let mut c = setup(&sb, SHAPE);
    let first = convert(
        &sb,
        &args(&["--all-myisam", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(first.code, 0, "{first:?}");
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
    for extra in [&[][..], &["--execute", "--no-bench"][..]] {
        let mut a = args(&["--all-myisam"]);
        a.extend(args(extra));
        let again = convert(&sb, &a, &[]);
        assert_eq!(again.code, 0, "{again:?}");
        assert!(again.stdout.contains("nothing to convert"), "{again:?}");
        assert!(
            again
                .stdout
                .contains("d._t_myisam_old is innops's kept MyISAM table of d.t, skipped"),
            "{again:?}"
        );
    }

    // An interrupted run's copy (left MyISAM, as a failed ALTER of an older innops did) is skipped, not planned.
    c.query_drop("CREATE TABLE d.u (id INT PRIMARY KEY, v INT) ENGINE=MyISAM")
        .unwrap();
    c.query_drop("INSERT INTO d.u VALUES (1, 1), (2, 2)")
        .unwrap();
    let run = sb.root.join("run-u");
    let killed = convert(
        &sb,
        &args(&[
            "--tables",
            "d.u",
            "--execute",
            "--no-bench",
            "--run-dir",
            run.to_str().unwrap(),
        ]),
        &[("INNOPS_FAULT", "after-action:copy:d.u")],
    );
    assert_eq!(killed.code, 137, "{killed:?}");
    c.query_drop("ALTER TABLE d._u_innops_new ENGINE=MyISAM")
        .unwrap();
    let dry = convert(&sb, &args(&["--all-myisam", "--format", "json"]), &[]);
    let j = dry.json();
    let steps: Vec<String> = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    assert!(steps.iter().any(|s| s.ends_with("d.u")), "{steps:?}");
    assert!(!steps.iter().any(|s| s.contains("innops_new")), "{steps:?}");
    assert!(
        j["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("d._u_innops_new is innops's copy of d.u")),
        "{j}"
    );
}

/// Rows deleted from the source after a killed copy: the shadow holds more rows than the source. Resume refuses
/// with `--restart` (resuming would only add rows), and the restart converts with exactly the source's rows.
#[test]
fn a_shadow_with_more_rows_than_the_source_is_restarted_not_resumed() {
    let sb = Sandboxed::new("vd-morerows");
    let mut c = setup(&sb, SHAPE);
    // The chunked copy continues from its last key on resume (the bulk one starts over by itself).
    let run = killed_at(
        &sb,
        &[
            "--tables",
            "d.t",
            "--strategy",
            "deferred",
            "--execute",
            "--no-bench",
        ],
        "after-action:copy:d.t",
    );
    c.query_drop("DELETE FROM d.t WHERE id <= 10").unwrap();
    let before = rows(&mut c, "t");
    let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_ne!(resumed.code, 0, "{resumed:?}");
    assert!(
        resumed.stderr.contains("holds more rows than the source")
            && resumed.stderr.contains("--restart"),
        "{}",
        resumed.stderr
    );
    assert!(
        !resumed.stderr.contains("continues it"),
        "{}",
        resumed.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    let restarted = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--strategy",
            "deferred",
            "--restart",
            "--execute",
            "--no-bench",
        ]),
        &[],
    );
    assert_eq!(restarted.code, 0, "{restarted:?}");
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
    assert_eq!(rows(&mut c, "t"), before);
}

/// A MyISAM index file with a garbage header: information_schema still lists the table as MyISAM, opening it
/// says ERROR 130. The plan refuses it with the repair that works (REPAIR TABLE … USE_FRM), instead of a raw
/// error and no plan; after that repair it converts with every row.
#[test]
fn a_garbage_index_header_is_refused_with_repair_use_frm_and_converts_after_it() {
    let sb = Sandboxed::new("vd-badmyi");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    c.query_drop("FLUSH TABLES").unwrap();
    let myi = sb.sandbox.datadir.join("d").join("t.MYI");
    let mut bytes = std::fs::read(&myi).unwrap();
    bytes[..16].copy_from_slice(b"not a MyISAM key");
    std::fs::write(&myi, &bytes).unwrap();
    c.query_drop("FLUSH TABLES").unwrap();
    let out = convert(&sb, &args(&["--tables", "d.t"]), &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("REPAIR TABLE `d`.`t` USE_FRM")
            && !out.stderr.contains("innops: ERROR"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("preflight:d.t"),
        "a plan is shown: {out:?}"
    );
    c.query_drop("REPAIR TABLE d.t USE_FRM").unwrap();
    let out = convert(
        &sb,
        &args(&["--tables", "d.t", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(rows(&mut c, "t"), before);
}

/// A myisampack'ed (compressed, read-only) table: the alter path converted nothing and exited 3 with a raw
/// ERROR 1036 (LOCK TABLES … WRITE on a read-only table). Every path converts it with its rows.
#[test]
fn a_myisampacked_table_converts_on_every_path() {
    let sb = Sandboxed::new("vd-packed");
    for strategy in ["alter", "deferred", "bulk"] {
        let mut c = sb.conn();
        c.query_drop("DROP DATABASE IF EXISTS d").unwrap();
        drop(c);
        let mut c = setup(&sb, SHAPE);
        let before = rows(&mut c, "t");
        c.query_drop("FLUSH TABLES").unwrap();
        let base = sb.sandbox.datadir.join("d").join("t");
        for (tool, extra) in [("myisampack", &[][..]), ("myisamchk", &["-rq"][..])] {
            let out = std::process::Command::new(tool)
                .args(extra)
                .arg(&base)
                .output()
                .unwrap();
            assert!(out.status.success(), "{tool}: {out:?}");
        }
        c.query_drop("FLUSH TABLES").unwrap();
        let format: String = c
            .query_first("SELECT ROW_FORMAT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 't'")
            .unwrap()
            .unwrap();
        assert_eq!(format, "Compressed");
        let out = convert(
            &sb,
            &args(&[
                "--tables",
                "d.t",
                "--strategy",
                strategy,
                "--execute",
                "--no-bench",
            ]),
            &[],
        );
        assert_eq!(out.code, 0, "{strategy}: {out:?}");
        assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"), "{strategy}");
        assert_eq!(rows(&mut c, "t"), before, "{strategy}");
    }
}

/// Another session holds `LOCK TABLES t WRITE` past innops's lock wait: every path refuses (exit 1, nothing
/// changed) naming the sessions that may hold it; the alter path exited 3 with a raw ERROR 1205.
#[test]
fn a_table_locked_by_another_session_is_refused_naming_the_holder_on_every_path() {
    let sb = Sandboxed::new("vd-locked");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    let mut holder = sb.conn();
    holder.query_drop("LOCK TABLES d.t WRITE").unwrap();
    let holder_id = holder.connection_id();
    for strategy in ["alter", "bulk"] {
        let out = convert(
            &sb,
            &args(&[
                "--tables",
                "d.t",
                "--strategy",
                strategy,
                "--execute",
                "--no-bench",
            ]),
            &[("INNOPS_TEST_LOCK_WAIT", "2")],
        );
        assert_eq!(out.code, 1, "{strategy}: {out:?}");
        assert!(
            out.stderr.contains("within 2 s")
                && out.stderr.contains(&format!("connection {holder_id} (")),
            "{strategy}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("ERROR 1205"), "{}", out.stderr);
    }
    holder.query_drop("UNLOCK TABLES").unwrap();
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    assert_eq!(rows(&mut c, "t"), before);
}

/// The name the swap needs holds innops's kept copy of an earlier conversion (the table was converted, then
/// made MyISAM again): the refusal keeps that copy, advising a rename, never a drop.
#[test]
fn a_kept_rollback_copy_in_the_way_is_never_advised_to_be_dropped() {
    let sb = Sandboxed::new("vd-keptway");
    let mut c = setup(&sb, SHAPE);
    let first = convert(
        &sb,
        &args(&["--tables", "d.t", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(first.code, 0, "{first:?}");
    c.query_drop("DROP TABLE d.t").unwrap();
    c.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY) ENGINE=MyISAM")
        .unwrap();
    let again = convert(&sb, &args(&["--tables", "d.t"]), &[]);
    assert_eq!(again.code, 1, "{again:?}");
    assert!(
        again
            .stderr
            .contains("is the MyISAM table innops kept when it converted d.t before")
            && again
                .stderr
                .contains("RENAME TABLE `d`.`_t_myisam_old` TO `d`.`_t_myisam_old_1`"),
        "{}",
        again.stderr
    );
    assert!(
        !again.stderr.to_lowercase().contains("drop"),
        "{}",
        again.stderr
    );
}

/// `--all-myisam` over two schemas with one table it must refuse (a column name InnoDB reserves): the dry run
/// names it and says the others would go on; `--execute` converts every other table, the second schema too,
/// leaves the refused one as it was, and exits 1 naming it.
#[test]
fn all_myisam_converts_every_table_it_can_and_refuses_the_others_by_name() {
    let sb = Sandboxed::new("vd-allgo");
    let mut c = setup(
        &sb,
        "CREATE TABLE a (id INT PRIMARY KEY, v INT) ENGINE=MyISAM; INSERT INTO a VALUES (1, 1), (2, 2); \
         CREATE TABLE b (id INT PRIMARY KEY, DB_ROW_ID INT) ENGINE=MyISAM; INSERT INTO b VALUES (1, 1); \
         CREATE DATABASE e; CREATE TABLE e.z (id INT PRIMARY KEY) ENGINE=MyISAM; INSERT INTO e.z VALUES (7);",
    );
    let dry = convert(&sb, &args(&["--all-myisam"]), &[]);
    assert_eq!(dry.code, 1, "{dry:?}");
    assert!(
        dry.stderr
            .contains("1 of 3 would be refused, every other one would go on: d.b: "),
        "{}",
        dry.stderr
    );
    let run = convert(
        &sb,
        &args(&["--all-myisam", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("1 of 3 refused, every other one done: d.b: ")
            && run.stderr.contains("DB_ROW_ID"),
        "{}",
        run.stderr
    );
    assert_eq!(engine(&mut c, "a").as_deref(), Some("InnoDB"));
    assert_eq!(engine(&mut c, "b").as_deref(), Some("MyISAM"));
    let z: Option<String> = c
        .query_first("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'e' AND TABLE_NAME = 'z'")
        .unwrap();
    assert_eq!(z.as_deref(), Some("InnoDB"));
}

/// A pre-check that passes with something to weigh shows ⚠, not ✓: a table larger than the buffer pool.
#[test]
fn a_table_larger_than_the_buffer_pool_is_a_warning_not_a_tick() {
    let sb = Sandboxed::with(
        "vd-pool",
        innops::server::sandbox::SandboxOptions {
            buffer_pool: Some("8M".into()),
            ..Default::default()
        },
    );
    let mut c = setup(
        &sb,
        "CREATE TABLE t (id INT UNSIGNED NOT NULL PRIMARY KEY, c CHAR(200) NOT NULL DEFAULT '') ENGINE=MyISAM; \
         INSERT INTO t SELECT seq, REPEAT('x', 200) FROM seq_1_to_60000;",
    );
    let out = convert(&sb, &args(&["--tables", "d.t", "--no-bench"]), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let line = out
        .stdout
        .lines()
        .find(|l| l.contains("buffer pool:"))
        .unwrap_or_else(|| panic!("no buffer pool check: {}", out.stdout));
    assert!(line.contains("pre  ⚠ buffer pool"), "{line}");
    assert!(line.contains("runs out of memory"), "{line}");
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"), "a dry run");
    // The same table within the pool is a tick.
    c.query_drop("TRUNCATE TABLE d.t").unwrap();
    let out = convert(&sb, &args(&["--tables", "d.t", "--no-bench"]), &[]);
    assert!(out.stdout.contains("pre  ✓ buffer pool"), "{}", out.stdout);
}

/// Issue 27: the benchmark before is a phase of its own, before the first changing step's header; the step's
/// statements keep the step's tag (they carried `bench-before` once), and the comparison is judged against
/// noise measured from the runs' seconds.
#[test]
fn the_benchmark_before_is_its_own_phase_and_the_copy_keeps_its_own_tag() {
    let sb = Sandboxed::new("benchphase");
    let mut c = setup(&sb, SHAPE);
    c.query_drop("SET GLOBAL log_output = 'TABLE', general_log = 1")
        .unwrap();
    let run = sb.root.join("run");
    let out = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--execute",
            "--bench-time",
            "4",
            "--run-dir",
            run.to_str().unwrap(),
        ]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    c.query_drop("SET GLOBAL general_log = 0").unwrap();

    // Journal: the benchmark's start and end, then the first measured step's start.
    let ev = crate::common::events(&run);
    let at = |pred: &dyn Fn(&serde_json::Value) -> bool| {
        ev.iter()
            .position(pred)
            .unwrap_or_else(|| panic!("{ev:#?}"))
    };
    let bench_started = at(&|e| e["event"] == "bench_started" && e["label"] == "before");
    let bench_done = at(&|e| e["event"] == "bench" && e["label"] == "before");
    let next_step = bench_done
        + ev[bench_done..]
            .iter()
            .position(|e| e["event"] == "step_started")
            .expect("a step after the benchmark");
    assert!(bench_started < bench_done, "{ev:#?}");
    let step_id = ev[next_step]["step"].as_str().unwrap().to_string();
    // No step was open while it measured: every step started before it was done before it.
    for e in &ev[..bench_started] {
        if e["event"] == "step_started" {
            assert!(
                ev[..bench_started]
                    .iter()
                    .any(|d| d["event"] == "step_done" && d["step"] == e["step"]),
                "{ev:#?}"
            );
        }
    }
    // The screen: the benchmark's lines come before that step's header.
    let bench_line = out.stderr.find("[bench] before").expect("bench line");
    let header = out
        .stderr
        .find(&format!("({step_id}, risk"))
        .expect("step header");
    assert!(bench_line < header, "{}", out.stderr);

    // The copy's statements carry the copy step's tag, never the benchmark's.
    let copies: Vec<String> = c
        .query(
            "SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log \
             WHERE argument LIKE '%INSERT%' AND argument LIKE '%innops_new%'",
        )
        .unwrap();
    assert!(
        !copies.is_empty(),
        "the copy's INSERTs are in the general log"
    );
    for q in &copies {
        assert!(q.contains("/* innops:convert:"), "{q}");
        assert!(!q.contains("bench-before"), "{q}");
    }
    let benched: u64 = c
        .query_first(
            "SELECT COUNT(*) FROM mysql.general_log WHERE argument LIKE '%innops:convert:bench%'",
        )
        .unwrap()
        .unwrap();
    assert!(benched > 0, "the benchmark's own statements carry its tag");

    // The change is judged against noise measured from one-second parts.
    let report = read_json(&run.join("report.json"));
    let judged = &report["bench"]["change"]["tps_noise"];
    assert!(
        judged["ci_low_pct"].is_number() && judged["aa_pct"].is_number(),
        "{report}"
    );
    assert!(
        out.stdout
            .contains("noise: tps: 95% interval of the change"),
        "{}",
        out.stdout
    );
}

/// Issue 27: after a resume the report's blocked writes cover the whole run, the attempt before the crash too
/// (the total once left out the first attempt's tables).
#[test]
fn a_resumed_run_reports_the_writes_it_blocked_before_the_crash_too() {
    let sb = Sandboxed::new("blockresume");
    let mut c = setup(&sb, SHAPE);
    c.query_drop("CREATE TABLE u LIKE t").unwrap();
    c.query_drop("INSERT INTO u SELECT * FROM t").unwrap();
    let run = killed_at(
        &sb,
        &["--tables", "d.t,d.u", "--execute", "--no-bench"],
        "after-action:copy:d.u",
    );
    let first = read_json(&run.join("report.json"));
    let objects = |r: &serde_json::Value| -> Vec<String> {
        r["write_blocks"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|w| w["object"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(objects(&first), ["d.t"], "{first}");

    let resumed = run_innops(&args(&["resume", run.to_str().unwrap()]), &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let report = read_json(&run.join("report.json"));
    assert_eq!(objects(&report), ["d.t", "d.u"], "{report}");
    assert!(
        resumed.stdout.contains("writes to d.t were blocked"),
        "{}",
        resumed.stdout
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
    assert_eq!(engine(&mut c, "u").as_deref(), Some("InnoDB"));
}
