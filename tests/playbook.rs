//! `innops run PLAYBOOK.toml`: playbooks as one plan, end to end on sandboxes.

use std::path::{Path, PathBuf};

use mysql::prelude::Queryable;

use crate::common::{engine_of, schema_exists, MIB};
use crate::common::{events, read_json, run_innops, Sandboxed};

fn myisam_tables(sb: &Sandboxed) {
    let mut c = sb.conn();
    for sql in [
        "CREATE DATABASE legacy",
        "CREATE TABLE legacy.orders (id INT PRIMARY KEY, customer VARCHAR(20), KEY (customer)) ENGINE=MyISAM",
        "INSERT INTO legacy.orders VALUES (1, 'ann'), (2, 'bob'), (3, 'cy')",
        "CREATE TABLE legacy.notes (id INT PRIMARY KEY, body TEXT) ENGINE=MyISAM",
        "INSERT INTO legacy.notes VALUES (1, 'first'), (2, 'second')",
    ] {
        c.query_drop(sql).unwrap();
    }
}

fn redo_size(sb: &Sandboxed) -> u64 {
    sb.conn()
        .query_first("SELECT @@GLOBAL.innodb_log_file_size")
        .unwrap()
        .unwrap()
}

/// A playbook converting both legacy tables, then resizing the redo log, aimed at `sb` by its `[target]`.
fn convert_and_redo(sb: &Sandboxed, bench: &str) -> PathBuf {
    let path = sb.root.join("pb.toml");
    let text = format!(
        "description = \"convert and resize\"\n\n[target]\nsandbox = \"{}\"\nsandbox-root = \"{}\"\n\n{bench}\n\n\
         [[step]]\nprocedure = \"convert\"\ntables = [\"legacy.orders\", \"legacy.notes\"]\nchunk-time = 200\n\n\
         [[step]]\nprocedure = \"redo\"\nsize = \"160M\"\n",
        sb.sandbox.name,
        sb.root.display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn steps_of(run_dir: &Path) -> Vec<String> {
    read_json(&run_dir.join("plan.json"))["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

fn count(ev: &[serde_json::Value], kind: &str) -> usize {
    ev.iter().filter(|e| e["event"] == kind).count()
}

#[test]
fn every_ready_playbook_passes_its_dry_run() {
    let sb = Sandboxed::new("pbdry");
    myisam_tables(&sb);
    // The staging drill's playbook names the tables `innops drill` creates before it plans it.
    innops::drill::setup(&mut sb.conn()).unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("playbooks");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    names.sort();
    let names_of: Vec<String> = names
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    for expected in [
        "convert",
        "redo",
        "readonly",
        "recover",
        "migrate-legacy-schema",
        "freeze-reporting-replica",
        "staging-drill",
    ] {
        assert!(names_of.iter().any(|n| n == expected), "{names_of:?}");
    }
    for p in &names {
        let out = sb.innops(&["run", p.to_str().unwrap(), "--no-bench"]);
        assert_eq!(out.code, 0, "{}: {out:?}", p.display());
        assert!(out.stdout.contains("innops playbook plan"), "{out:?}");
    }
    // A dry run changes nothing.
    assert_eq!(engine_of(&sb, "legacy", "orders").unwrap(), "MyISAM");
}

#[test]
fn convert_and_redo_run_as_one_run_with_one_benchmark_before_and_after() {
    let sb = Sandboxed::new("pbone");
    myisam_tables(&sb);
    let pb = convert_and_redo(&sb, "[bench]\ntime = 1");
    let run_dir = sb.root.join("run");
    // No connection flags: the playbook's [target] names the sandbox.
    let out = run_innops(
        &[
            "run".into(),
            pb.display().to_string(),
            "--execute".into(),
            "--yes".into(),
            "--run-dir".into(),
            run_dir.display().to_string(),
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(engine_of(&sb, "legacy", "orders").unwrap(), "InnoDB");
    assert_eq!(engine_of(&sb, "legacy", "notes").unwrap(), "InnoDB");
    assert_eq!(redo_size(&sb), 160 * MIB);
    let plan = read_json(&run_dir.join("plan.json"));
    assert_eq!(plan["procedure"], "playbook");
    let steps = steps_of(&run_dir);
    assert!(
        steps.contains(&"convert/copy:legacy.orders".to_string()),
        "{steps:?}"
    );
    assert!(
        steps.contains(&"convert/swap:legacy.notes".to_string()),
        "{steps:?}"
    );
    assert!(steps.contains(&"redo/resize".to_string()), "{steps:?}");
    let ev = events(&run_dir);
    assert_eq!(count(&ev, "run_started"), 1);
    // Every step of both procedures is done in this one journal.
    for s in &steps {
        assert!(
            ev.iter()
                .any(|e| e["event"] == "step_done" && e["step"] == *s),
            "{s} not done"
        );
    }
    let benches: Vec<&serde_json::Value> = ev.iter().filter(|e| e["event"] == "bench").collect();
    assert_eq!(benches.len(), 2, "{benches:?}");
    assert_eq!(benches[0]["label"], "before");
    assert_eq!(benches[1]["label"], "after");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
}

#[test]
fn an_interrupted_playbook_is_finished_by_one_resume() {
    let sb = Sandboxed::new("pbres");
    myisam_tables(&sb);
    let pb = convert_and_redo(&sb, "");
    let run_dir = sb.root.join("run");
    let args = [
        "run",
        pb.to_str().unwrap(),
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ];
    let killed = sb.innops_env(
        &args,
        // After the verify: the swap, resumed, must find the verified fingerprint in the journal under the
        // member's prefixed step id.
        &[("INNOPS_FAULT", "after-action:convert/verify:legacy.notes")],
    );
    assert_eq!(killed.code, 137, "{killed:?}");
    assert_eq!(engine_of(&sb, "legacy", "orders").unwrap(), "InnoDB");
    assert_eq!(engine_of(&sb, "legacy", "notes").unwrap(), "MyISAM");
    assert_ne!(redo_size(&sb), 160 * MIB);

    let resumed = run_innops(&["resume".to_string(), run_dir.display().to_string()], &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(engine_of(&sb, "legacy", "notes").unwrap(), "InnoDB");
    assert_eq!(redo_size(&sb), 160 * MIB);
    let ev = events(&run_dir);
    assert_eq!(count(&ev, "run_started"), 1);
    assert_eq!(count(&ev, "resumed"), 1);
    for s in steps_of(&run_dir) {
        assert!(
            ev.iter()
                .any(|e| e["event"] == "step_done" && e["step"] == *s),
            "{s} not done"
        );
    }
    // The interrupted copy was not copied twice.
    assert_eq!(
        ev.iter()
            .filter(|e| e["event"] == "action_done" && e["step"] == "convert/copy:legacy.notes")
            .count(),
        1
    );
    assert_eq!(read_json(&run_dir.join("report.json"))["status"], "done");
}

#[test]
fn a_typo_in_a_playbook_names_the_file_line_and_field() {
    let sb = Sandboxed::new("pbtypo");
    let path = sb.root.join("typo.toml");
    std::fs::write(
        &path,
        "[[step]]\nprocedure = \"convert\"\ntabels = [\"legacy.orders\"]\n",
    )
    .unwrap();
    let out = sb.innops(&["run", path.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    let line = out.error_line();
    assert!(line.contains(&format!("{}:3:1:", path.display())), "{line}");
    assert!(line.contains("tabels"), "{line}");
    assert!(!line.contains("Error {"), "no debug text: {line}");
}

#[test]
fn a_playbook_killed_while_the_server_is_down_resumes_to_the_end() {
    let sb = Sandboxed::new("pbdown");
    myisam_tables(&sb);
    let pb = sb.root.join("pb.toml");
    std::fs::write(
        &pb,
        format!(
            "[target]\nsandbox = \"{}\"\nsandbox-root = \"{}\"\n\n\
             [[step]]\nprocedure = \"redo\"\nsize = \"128M\"\noffline = true\n\n\
             [[step]]\nprocedure = \"convert\"\nall-myisam = true\n",
            sb.sandbox.name,
            sb.root.display()
        ),
    )
    .unwrap();
    let run_dir = sb.root.join("run");
    let args = [
        "run",
        pb.to_str().unwrap(),
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ];
    // Killed right after the clean shutdown: the server is down, and the convert member's plan is built from
    // the tables it describes on the server.
    let killed = sb.innops_env(&args, &[("INNOPS_FAULT", "after-action:redo/stop")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    assert!(
        !sb.sandbox.is_running(),
        "the server is down after the kill"
    );

    let resumed = run_innops(&["resume".to_string(), run_dir.display().to_string()], &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(redo_size(&sb), 128 * MIB);
    assert_eq!(engine_of(&sb, "legacy", "orders").unwrap(), "InnoDB");
    assert_eq!(engine_of(&sb, "legacy", "notes").unwrap(), "InnoDB");
    let ev = events(&run_dir);
    assert_eq!(count(&ev, "run_started"), 1);
    assert_eq!(
        ev.iter()
            .filter(|e| e["event"] == "action_done" && e["step"] == "redo/stop")
            .count(),
        1,
        "the server was shut down once"
    );
    assert_eq!(read_json(&run_dir.join("report.json"))["status"], "done");
}

/// A playbook of deadlock steps aimed at `sb`.
fn deadlocks(sb: &Sandboxed) -> PathBuf {
    let path = sb.root.join("dl.toml");
    std::fs::write(
        &path,
        "[[step]]\nprocedure = \"deadlock\"\nscenario = \"share-then-delete\"\nrepeat = 2\n\n\
         [[step]]\nprocedure = \"deadlock\"\nscenario = \"gap-insert\"\n",
    )
    .unwrap();
    path
}

#[test]
fn deadlock_steps_in_a_playbook_are_judged_by_what_the_server_did_and_resume() {
    let sb = Sandboxed::new("pbdl");
    let pb = deadlocks(&sb);
    let run = |dir: &str, env: &[(&str, &str)]| {
        let run_dir = sb.root.join(dir);
        let out = sb.innops_env(
            &[
                "run",
                pb.to_str().unwrap(),
                "--execute",
                "--yes",
                "--no-bench",
                "--format",
                "json",
                "--run-dir",
                run_dir.to_str().unwrap(),
            ],
            env,
        );
        (out, run_dir)
    };
    // A schema of that name that is not this run's own: refused, nothing run.
    sb.conn()
        .query_drop("CREATE SCHEMA innops_deadlock")
        .unwrap();
    let (out, _) = run("refused", &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.error_line().contains("drop schema innops_deadlock"),
        "{out:?}"
    );
    sb.conn().query_drop("DROP SCHEMA innops_deadlock").unwrap();

    // Killed after the first scenario ran but before its result was journaled: the resumed step finds no
    // result, its post-checks fail, and it runs again; the schema the cut-off attempt may leave is its own.
    let (out, run_dir) = run(
        "run",
        &[(
            "INNOPS_FAULT",
            "before-journal:deadlock/run:share-then-delete",
        )],
    );
    assert_eq!(out.code, 137, "{out:?}");
    sb.conn()
        .query_drop("CREATE SCHEMA innops_deadlock")
        .unwrap();
    let resumed = run_innops(
        &[
            "resume".into(),
            run_dir.display().to_string(),
            "--format".into(),
            "json".into(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let j = resumed.json();
    assert_eq!(j["status"], "done", "{j}");
    assert!(
        !schema_exists(&sb, "innops_deadlock"),
        "the schema is dropped"
    );
    let ev = events(&run_dir);
    let of = |kind: &str, step: &str| {
        ev.iter()
            .filter(|e| e["event"] == kind && e["step"] == step)
            .count()
    };
    assert_eq!(of("step_started", "deadlock/run:share-then-delete"), 2);
    assert_eq!(of("action_done", "deadlock/run:share-then-delete"), 1);
    let step = |id: &str| {
        j["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap()
            .clone()
    };
    let first = step("deadlock/run:share-then-delete");
    let pre = &first["pre"][0];
    assert!(
        pre["observed"]
            .as_str()
            .unwrap()
            .starts_with("left by this run's interrupted attempt"),
        "{pre}"
    );
    let runs = first["result"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        assert_eq!(r["victim"], "t2", "{r}");
        assert_eq!(
            r["deadlocks_after"].as_u64().unwrap(),
            r["deadlocks_before"].as_u64().unwrap() + 1
        );
    }
    let gap = step("deadlock.2/run:gap-insert");
    for c in gap["post"].as_array().unwrap() {
        assert_eq!(c["passed"], true, "{c}");
    }
    assert_eq!(gap["result"]["runs"][0]["victim"], "t2");
}

/// A run killed while its scenario ran with detection off leaves innodb_deadlock_detect OFF (the runner puts it
/// back only when the scenario ends); resume must put back the server's own value, recorded when the plan was
/// made, not the OFF it finds.
#[test]
fn a_deadlock_step_killed_with_detection_off_puts_detection_back_on_resume() {
    let sb = Sandboxed::new("pbdloff");
    let pb = sb.root.join("off.toml");
    std::fs::write(
        &pb,
        "[[step]]\nprocedure = \"deadlock\"\nscenario = \"share-then-delete\"\ndetect = \"off\"\n",
    )
    .unwrap();
    let detect = || -> String {
        sb.conn()
            .query_first::<String, _>("SELECT @@GLOBAL.innodb_deadlock_detect")
            .unwrap()
            .unwrap()
    };
    assert_eq!(detect(), "1", "the server's own value");
    let run_dir = sb.root.join("run");
    let out = sb.innops_env(
        &[
            "run",
            pb.to_str().unwrap(),
            "--execute",
            "--yes",
            "--no-bench",
            "--run-dir",
            run_dir.to_str().unwrap(),
        ],
        &[(
            "INNOPS_FAULT",
            "before-journal:deadlock/run:share-then-delete",
        )],
    );
    assert_eq!(out.code, 137, "{out:?}");
    // What a kill in the middle of the scenario leaves: the variable as the scenario set it.
    sb.conn()
        .query_drop("SET GLOBAL innodb_deadlock_detect = OFF")
        .unwrap();
    let resumed = run_innops(
        &[
            "resume".into(),
            run_dir.display().to_string(),
            "--format".into(),
            "json".into(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(detect(), "1", "detection is back as the server had it");
    let j = resumed.json();
    let step = &j["steps"][0];
    assert!(
        step["post"].as_array().unwrap().iter().any(|c| c["check"]
            == "innodb_deadlock_detect is what it was before the run"
            && c["passed"] == true
            && c["observed"].as_str().unwrap().contains("ON")),
        "{step}"
    );
}

#[test]
fn a_deadlock_step_without_a_scenario_or_with_an_unknown_one_names_the_field() {
    let sb = Sandboxed::new("pbdlbad");
    let path = sb.root.join("bad.toml");
    std::fs::write(
        &path,
        "[[step]]\nprocedure = \"deadlock\"\nscenario = \"nope\"\n",
    )
    .unwrap();
    let out = sb.innops(&["run", path.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    let line = out.error_line();
    assert!(
        line.contains(&format!(
            "{}:3:12: field `scenario`: nope is neither",
            path.display()
        )),
        "{line}"
    );
    std::fs::write(&path, "[[step]]\nprocedure = \"deadlock\"\nrepeat = 2\n").unwrap();
    let out = sb.innops(&["run", path.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.error_line()
            .contains("field `scenario`: a deadlock step needs `scenario`"),
        "{out:?}"
    );
}

/// A playbook of `steps` (TOML `[[step]]` tables) aimed at `sb`.
fn playbook_of(sb: &Sandboxed, name: &str, steps: &str) -> PathBuf {
    let path = sb.root.join(name);
    let text = format!(
        "[target]\nsandbox = \"{}\"\nsandbox-root = \"{}\"\n\n[bench]\nenabled = false\n\n{steps}",
        sb.sandbox.name,
        sb.root.display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn run_playbook(pb: &Path, execute: bool) -> crate::common::Output {
    let mut a = vec!["run".to_string(), pb.display().to_string()];
    if execute {
        let run_dir = pb.with_extension("run");
        a.extend([
            "--execute".into(),
            "--yes".into(),
            "--run-dir".into(),
            run_dir.display().to_string(),
        ]);
    } else {
        a.extend(["--format".into(), "json".into()]);
    }
    run_innops(&a, &[])
}

/// Issue 22: a playbook's dry run judges each step against the state the steps before it leave. The same
/// table converted twice, and a conversion after readonly, pass a check of the live server but would stop
/// midway (the second convert at the kept rollback copy, the convert at a raw ERROR 1036): both are refused in
/// the dry run with the reason, and `--execute` refuses before anything acts.
#[test]
fn a_dry_run_follows_the_state_earlier_steps_leave() {
    let sb = Sandboxed::new("pborder");
    myisam_tables(&sb);
    let convert = "[[step]]\nprocedure = \"convert\"\ntables = [\"legacy.orders\"]\n\n";
    let twice = playbook_of(&sb, "twice.toml", &format!("{convert}{convert}"));
    let dry = run_playbook(&twice, false);
    assert_eq!(dry.code, 1, "{dry:?}");
    let message = dry.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.contains(
            "step convert.2 converts legacy.orders, which step convert before it converts already"
        ) && !message.contains("drop"),
        "{message}"
    );
    let out = run_playbook(&twice, true);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        engine_of(&sb, "legacy", "orders").unwrap(),
        "MyISAM",
        "nothing acted"
    );

    let readonly = "[[step]]\nprocedure = \"readonly\"\n\n";
    let after_ro = playbook_of(&sb, "after.toml", &format!("{readonly}{convert}"));
    let dry = run_playbook(&after_ro, false);
    assert_eq!(dry.code, 1, "{dry:?}");
    let message = dry.json()["message"].as_str().unwrap().to_string();
    assert!(
        message.contains("step convert (convert) must write to InnoDB and readonly before it leaves the server read-only"),
        "{message}"
    );
    let pid = sb.sandbox.running_pid();
    let out = run_playbook(&after_ro, true);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        sb.sandbox.running_pid(),
        pid,
        "the server was not restarted"
    );
    // The same steps in the order that works, and with an undo between them, pass.
    let before_ro = playbook_of(&sb, "before.toml", &format!("{convert}{readonly}"));
    assert_eq!(run_playbook(&before_ro, false).code, 0);
    let undone = playbook_of(
        &sb,
        "undone.toml",
        &format!("{readonly}[[step]]\nprocedure = \"readonly\"\nundo = true\n\n{convert}"),
    );
    let dry = run_playbook(&undone, false);
    assert!(
        !dry.stdout.contains("must write to InnoDB"),
        "an undo between them lifts it: {dry:?}"
    );
}
