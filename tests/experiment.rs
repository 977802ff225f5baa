//! `innops experiment`, end to end on sandboxes: dynamic variables set per arm and round, proven back as they
//! were; a kill mid-way resumed without measuring the done rounds again; bad `--set` flags refused; `--keep
//! best` keeping nothing without a winner beyond the noise; restart variables applied through the drop-in and a
//! restart and the server proven back as it was, a variant the server cannot start with reverted and reported,
//! a kill between a restart's shutdown and its start resumed. No test asserts a speed: the verdicts' arithmetic
//! is unit-tested (src/bench/experiment.rs) on constructed series.

use mysql::prelude::Queryable;

use crate::common::{dropin, events, read_json, resume, run_innops, step, Sandboxed};

fn global(sb: &Sandboxed, name: &str) -> String {
    sb.conn()
        .query_first::<String, _>(format!("SELECT CAST(@@GLOBAL.{name} AS CHAR)"))
        .unwrap()
        .unwrap()
}

fn arm<'a>(report: &'a serde_json::Value, key: &str) -> &'a serde_json::Value {
    report["experiment"]["arms"]
        .as_array()
        .unwrap_or_else(|| panic!("no experiment in {report}"))
        .iter()
        .find(|a| a["key"] == key)
        .unwrap_or_else(|| panic!("no arm {key} in {report}"))
}

/// The step ids the journal says were started, in order, and the index of the `resumed` event if any.
fn started(run_dir: &std::path::Path) -> (Vec<String>, Option<usize>) {
    let ev = events(run_dir);
    let resumed_at = ev.iter().position(|e| e["event"] == "resumed");
    let ids = ev
        .iter()
        .filter(|e| e["event"] == "step_started")
        .map(|e| e["step"].as_str().unwrap().to_string())
        .collect();
    (ids, resumed_at)
}

/// Three rounds or more: every arm is compared with A round by round (its mean in a round against A's mean in
/// the same round), and the report says so; the change shown is the one the interval is built around.
#[test]
fn from_three_rounds_each_arm_is_judged_against_a_in_the_same_round() {
    let sb = Sandboxed::new("exppair");
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300",
        "--workload",
        "oltp_point_select",
        "--threads",
        "2",
        "--time",
        "2",
        "--rounds",
        "3",
        "--warmup",
        "0",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    let e = &report["experiment"];
    assert_eq!(e["paired_rounds"], 3, "{e}");
    let line = e["aa_line"].as_str().unwrap();
    assert!(
        line.contains(
            "; each arm against A in the same round, 3 rounds): a variant counts only when"
        ),
        "{line}"
    );
    // The plan said so before it ran.
    assert!(
        out.stdout
            .contains("note: noise: each arm is compared with A in the same round, 3 rounds"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("in the same round, 3 rounds"),
        "{}",
        out.stdout
    );
    for key in ["A2", "B"] {
        let a = arm(&report, key);
        let change = a["tps_change_pct"].as_f64().unwrap();
        let (lo, hi) = (
            a["tps_noise"]["ci_low_pct"].as_f64().unwrap(),
            a["tps_noise"]["ci_high_pct"].as_f64().unwrap(),
        );
        assert!(lo < change && change < hi, "{a}");
        assert!(a["p99_noise"]["ci_low_pct"].is_number(), "{a}");
    }
}

#[test]
fn an_experiment_judges_every_variant_and_leaves_the_variable_as_it_was() {
    let sb = Sandboxed::new("expab");
    let before = global(&sb, "innodb_flush_log_at_trx_commit");
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_flush_log_at_trx_commit=1,2",
        "--workload",
        "oltp_write_only",
        "--threads",
        "2",
        // 3 s, not 2: each arm then has at least 4 one-second figures even if a run's last second is cut.
        "--time",
        "3",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(global(&sb, "innodb_flush_log_at_trx_commit"), before);
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    assert_eq!(arm(&report, "A")["verdict"], "baseline");
    assert!(arm(&report, "A2")["verdict"]
        .as_str()
        .unwrap()
        .starts_with("the baseline again (A/A)"));
    for key in ["B", "C"] {
        let v = arm(&report, key)["verdict"].as_str().unwrap();
        assert!(
            v == "no difference the noise can resolve"
                || v.starts_with("faster by ")
                || v.starts_with("slower by "),
            "{v}"
        );
        assert_eq!(arm(&report, key)["rounds"], 2);
        // p99 beside p95, its change judged against the A/A pair's spread as p95's is.
        let b = arm(&report, key);
        assert!(
            b["p99_ms"].as_f64().unwrap() >= b["p95_ms"].as_f64().unwrap(),
            "{b}"
        );
        assert!(b["p99_noise"]["ci_low_pct"].is_number(), "{b}");
        assert!(b["p99_change_pct"].is_number(), "{b}");
        // The server's explaining counters, sampled during the measured runs; the queue this server does not
        // have is named as such, never a zero.
        let c = |name: &str| {
            b["server_counters"]
                .as_array()
                .unwrap_or_else(|| panic!("no counters in {b}"))
                .iter()
                .find(|c| c["name"] == name)
                .unwrap_or_else(|| panic!("no {name} in {b}"))
                .clone()
        };
        for name in [
            "history_list_length",
            "dirty_pages",
            "dirty_pct",
            "checkpoint_age",
        ] {
            assert!(c(name)["samples"].as_u64().unwrap() >= 2, "{name}: {b}");
            // (A mean of equal readings may differ from them in its last bit.)
            let (max, mean) = (
                c(name)["max"].as_f64().unwrap(),
                c(name)["mean"].as_f64().unwrap(),
            );
            assert!(max >= mean * (1.0 - 1e-9), "{b}");
        }
        let q = c("thread_concurrency_queue");
        assert!(q["mean"].is_null() && q["samples"] == 0, "{q}");
        assert!(
            q["note"]
                .as_str()
                .unwrap()
                .starts_with("not available on this server: "),
            "{q}"
        );
    }
    // Every measured run on the time axis, in the order they ran.
    let timeline = report["experiment"]["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 8, "{report}");
    assert!(report["experiment"]["aa_line"]
        .as_str()
        .unwrap()
        .starts_with("A/A: "));
    // Every arm ran once in each round, and the restore proved the value by reading it back.
    for r in 1..=2 {
        for key in ["A", "A2", "B", "C"] {
            assert!(run_dir
                .join(format!("experiment/round-{r}-{key}.json"))
                .is_file());
        }
    }
    let restore = step(&report, "restore");
    assert_eq!(restore["post"][0]["passed"], true, "{restore}");
    // The summary prints the verdict table; the page has the section and a chart per measure.
    assert!(out.stdout.contains("tps change (95% CI)"), "{}", out.stdout);
    assert!(out.stdout.contains("p99 ms"), "{}", out.stdout);
    assert!(out.stdout.contains("A/A: "), "{}", out.stdout);
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Experiment: verdicts</h2>"));
    let doc = roxmltree::Document::parse_with_options(
        &html,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .expect("report.html is well-formed");
    let svgs = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "svg")
        .count();
    assert!(svgs >= 4, "a chart per measure: {svgs}");
    // tps over time: a span per measured run, no restart in an experiment of dynamic variables.
    assert_eq!(html.matches("<g class=\"arm-span\"").count(), 8);
    assert_eq!(html.matches("<g class=\"restart\"").count(), 0);
    assert!(html.contains("<table class=\"experiment-counters\">"));
}

#[test]
fn a_killed_experiment_resumes_keeps_its_rounds_and_restores_the_variable() {
    let sb = Sandboxed::new("expkill");
    let before = global(&sb, "innodb_io_capacity");
    let run_dir = sb.root.join("run");
    let args = [
        "experiment",
        "--set",
        "innodb_io_capacity=300,2000",
        "--workload",
        "oltp_read_write",
        "--threads",
        "2",
        "--time",
        "2",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ];
    // Killed inside arm B's run, its value in force: the server is not as it was until the run is resumed.
    let killed = sb.innops_env(&args, &[("INNOPS_FAULT", "arm-measured:round-1-B")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    assert_eq!(global(&sb, "innodb_io_capacity"), "300");
    // The resumed run is killed too, right after an arm-run's action: each arm-run ends at the baseline.
    let mut again = vec!["resume".to_string(), run_dir.display().to_string()];
    again.push("--yes".into());
    let killed = run_innops(&again, &[("INNOPS_FAULT", "after-action:round-2-A2")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
    let (ids, resumed_at) = started(&run_dir);
    assert!(resumed_at.is_some());
    let count = |id: &str| ids.iter().filter(|s| *s == id).count();
    // The arm-runs measured before the first kill were kept, not measured again; the one killed inside its
    // run was measured again; every other ran once.
    assert_eq!(count("round-1-A"), 1, "{ids:?}");
    assert_eq!(count("round-1-A2"), 1, "{ids:?}");
    assert_eq!(count("round-1-B"), 2, "{ids:?}");
    assert_eq!(count("round-2-C"), 1, "{ids:?}");
    // The one killed after its action was finished by its post-checks (figures stored, baseline read back).
    let done = events(&run_dir)
        .iter()
        .filter(|e| e["event"] == "action_done" && e["step"] == "round-2-A2")
        .count();
    assert_eq!(done, 1);
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    for key in ["A", "A2", "B", "C"] {
        assert_eq!(arm(&report, key)["rounds"], 2, "{report}");
    }
}

#[test]
fn ctrl_c_inside_an_arm_s_run_sets_the_baseline_back_at_once() {
    let sb = Sandboxed::new("expint");
    let before = global(&sb, "innodb_io_capacity");
    let run_dir = sb.root.join("run");
    let out = sb.innops_env(
        &[
            "experiment",
            "--set",
            "innodb_io_capacity=300",
            "--threads",
            "1",
            "--time",
            "2",
            "--rounds",
            "2",
            "--warmup",
            "0",
            "--execute",
            "--run-dir",
            run_dir.to_str().unwrap(),
        ],
        &[("INNOPS_FAULT", "sigint-in-action:round-1-B")],
    );
    assert_eq!(out.code, 130, "{out:?}");
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
    assert!(!run_dir.join("experiment/round-1-B.json").exists());
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(run_dir.join("experiment/round-1-B.json").is_file());
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
}

#[test]
fn bad_or_static_variables_are_refused_and_nothing_changes() {
    let sb = Sandboxed::new("expbad");
    let before = global(&sb, "innodb_io_capacity");
    let run_dir = sb.root.join("run");
    for (set, says) in [
        ("innodb_io_capacity", "has no '='"),
        ("innodb_io_capacity=", "has an empty value"),
        ("innodb_io_capacity=200,,300", "has an empty value"),
        ("no_such_variable=1,2", "has no variable no_such_variable"),
        ("innodb_io_capacity=1;DROP", "is not a number, a size"),
    ] {
        let out = sb.innops(&[
            "experiment",
            "--set",
            set,
            "--execute",
            "--run-dir",
            run_dir.to_str().unwrap(),
        ]);
        assert_eq!(out.code, 2, "{set}: {out:?}");
        let line = out.error_line();
        assert!(line.contains(says), "{set}: {line}");
        assert!(!run_dir.exists(), "{set}: nothing was started");
    }
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
}

#[test]
fn keep_best_without_a_winner_beyond_the_noise_keeps_nothing() {
    let sb = Sandboxed::new("expkeep");
    let before = global(&sb, "max_connect_errors");
    let run_dir = sb.root.join("run");
    // The workload never touches max_connect_errors, and at a fixed rate every arm starts the same
    // transactions at the same moments (the arrivals are seeded): the arms cannot differ but by noise. A low
    // rate makes each second's count vary widely (random arrivals), so the A/A spread is wide against what a
    // stall of this shared machine during one arm's run can take away (it would need to lose seconds).
    let out = sb.innops(&[
        "experiment",
        "--set",
        "max_connect_errors=100,101",
        "--workload",
        "oltp_read_only",
        "--threads",
        "2",
        "--rate",
        "10",
        "--time",
        "3",
        "--rounds",
        "2",
        "--warmup",
        "1",
        "--keep",
        "best",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(global(&sb, "max_connect_errors"), before);
    let report = read_json(&run_dir.join("report.json"));
    for key in ["B", "C"] {
        assert_eq!(
            arm(&report, key)["verdict"],
            "no difference the noise can resolve",
            "{}",
            out.stdout
        );
    }
    assert!(report["experiment"]["winner"].is_null(), "{report}");
    let keep = step(&report, "keep-best");
    assert_eq!(keep["status"], "skipped", "{keep}");
    assert!(
        out.stdout.contains("best beyond noise: none"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_dry_run_shows_the_arms_and_the_load_and_changes_nothing() {
    let sb = Sandboxed::new("expdry");
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300,2000",
        "--time",
        "2",
        "--rounds",
        "3",
        "--warmup",
        "1",
        "--format",
        "json",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["status"], "dry_run");
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("3 round(s) × 4 arm(s) × (1 s warm-up + 2 s measured) = 36 s"),
        "{notes}"
    );
    assert_eq!(j["steps"].as_array().unwrap().len(), 2 + 3 * 4 + 2);
    assert!(!run_dir.exists());
    // A restart variable: the dry run names the arms that need a restart and counts the restarts.
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_log_buffer_size=32M",
        "--time",
        "2",
        "--rounds",
        "3",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    let notes = j["notes"].to_string();
    assert!(notes.contains("arm(s) B run with other values"), "{notes}");
    // A A′ [1] B | B [2] A′ A | A A′ [3] B, and one back at the end.
    assert!(notes.contains("4 restart(s) in all"), "{notes}");
    assert!(notes.contains("4 downtime(s)"), "{notes}");
    let ids: Vec<&str> = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids.iter().filter(|i| i.starts_with("restart-")).count(),
        3,
        "{ids:?}"
    );
    assert!(ids.contains(&"restore-config"));
    // Without a way to restart the server (no --sandbox, --service or --start-cmd), the preflight refuses, in
    // one sentence naming the flags.
    let socket = sb.sandbox.socket.display().to_string();
    let out = run_innops(
        &crate::common::args(&[
            "experiment",
            "--socket",
            &socket,
            "--user",
            "root",
            "--set",
            "innodb_log_buffer_size=32M",
            "--execute",
            "--yes",
            "--run-dir",
            run_dir.to_str().unwrap(),
        ]),
        &[],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let line = out.error_line();
    assert!(
        line.contains("pass --sandbox NAME, --service systemd:UNIT or --start-cmd/--stop-cmd"),
        "{line}"
    );
    assert_eq!(dropin(&sb), "");
}

/// The flags of a short restart-variable experiment: 2 rounds of `time` seconds, no warm-up.
fn short(set: &[&str], time: &str, run_dir: &std::path::Path) -> Vec<String> {
    let mut a = vec!["experiment".to_string()];
    for s in set {
        a.extend(["--set".to_string(), s.to_string()]);
    }
    for x in [
        "--workload",
        "oltp_read_write",
        "--threads",
        "2",
        "--time",
        time,
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--execute",
        "--yes",
        "--run-dir",
    ] {
        a.push(x.to_string());
    }
    a.push(run_dir.display().to_string());
    a
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn a_restart_variable_is_applied_by_restarts_and_the_server_ends_as_it_was() {
    let sb = Sandboxed::new("exprst");
    let (log_buf, io) = (
        global(&sb, "innodb_log_buffer_size"),
        global(&sb, "innodb_io_capacity"),
    );
    // innops's drop-in holds a DBA's text before the experiment: it must be exactly that again after.
    let before = "# the DBA's own line\n[mysqld]\n";
    std::fs::write(sb.sandbox.conf_dir.join("99-innops.cnf"), before).unwrap();
    let run_dir = sb.root.join("run");
    // A restart variable crossed with a dynamic one: arms A, A′ and B (32M, 300).
    let args = short(
        &["innodb_log_buffer_size=32M", "innodb_io_capacity=300"],
        "2",
        &run_dir,
    );
    let out = sb.innops(&strs(&args));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(global(&sb, "innodb_log_buffer_size"), log_buf);
    assert_eq!(global(&sb, "innodb_io_capacity"), io);
    assert_eq!(dropin(&sb), before);
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    // Round 1: A A′ [restart-1] B; round 2 begins with B's values, then [restart-2] A′ A; nothing left for
    // restore-config to do. Each restart proved the values by reading them back from the server.
    for id in ["restart-1", "restart-2"] {
        let s = step(&report, id);
        assert_eq!(s["status"], "done", "{s}");
        assert!(
            s["post"]
                .as_array()
                .unwrap()
                .iter()
                .all(|v| v["passed"] == true),
            "{s}"
        );
    }
    let b = step(&report, "restart-1");
    assert!(
        b["post"][1]["observed"]
            .as_str()
            .unwrap()
            .contains("innodb_log_buffer_size=32M"),
        "{b}"
    );
    assert!(
        b["result"]["diff"]
            .as_str()
            .unwrap()
            .contains("+innodb_log_buffer_size = 32M"),
        "{b}"
    );
    assert_eq!(step(&report, "restore-config")["status"], "skipped");
    assert_eq!(report["downtime"].as_array().unwrap().len(), 2, "{report}");
    // The tps-over-time chart marks both restarts beside the arms' spans.
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert_eq!(
        html.matches("<g class=\"restart\"").count(),
        2,
        "restarts marked"
    );
    assert!(
        html.contains("<title>restart-1: down "),
        "restart-1 named on the chart"
    );
    assert_eq!(html.matches("<g class=\"arm-span\"").count(), 6);
    let bs = step(&report, "round-1-B");
    assert!(
        bs["pre"][0]["observed"]
            .as_str()
            .unwrap()
            .contains("innodb_log_buffer_size=32M"),
        "{bs}"
    );
    assert_eq!(arm(&report, "B")["rounds"], 2);
    assert!(!arm(&report, "B")["verdict"]
        .as_str()
        .unwrap()
        .starts_with("failed"));
}

#[test]
fn a_variant_the_server_cannot_start_with_is_reverted_reported_and_the_rest_judged() {
    let sb = Sandboxed::new("expfail");
    let before = global(&sb, "innodb_flush_method");
    let run_dir = sb.root.join("run");
    // 'nonsense' passes innops's value check (a word) and mariadbd refuses it at startup. 3 s a run, so C has
    // at least 4 one-second figures to be judged on.
    let args = short(&["innodb_flush_method=nonsense,fsync"], "3", &run_dir);
    let out = sb.innops(&strs(&args));
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(global(&sb, "innodb_flush_method"), before);
    assert_eq!(dropin(&sb), "");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    let b = arm(&report, "B")["verdict"].as_str().unwrap().to_string();
    assert!(
        b.starts_with("failed: the server did not start with innodb_flush_method=nonsense (")
            && b.contains("nonsense")
            && b.ends_with("reverted, left out"),
        "{b}"
    );
    assert_eq!(arm(&report, "B")["rounds"], 0);
    assert!(
        out.stdout.contains("failed: the server did not start"),
        "{}",
        out.stdout
    );
    // The other variant ran in both rounds and was judged.
    let c = arm(&report, "C")["verdict"].as_str().unwrap();
    assert!(
        c == "no difference the noise can resolve"
            || c.starts_with("faster by ")
            || c.starts_with("slower by "),
        "{c}"
    );
    assert_eq!(arm(&report, "C")["rounds"], 2);
    assert!(arm(&report, "A2")["verdict"]
        .as_str()
        .unwrap()
        .starts_with("the baseline again (A/A)"));
    // The failed restart was reverted in its own step (the server back with its original value, read back);
    // round 2's restart into the same values and B's round-2 run were skipped, not tried again.
    let r1 = step(&report, "restart-1");
    assert_eq!(r1["status"], "done", "{r1}");
    assert!(
        r1["result"]["failed"]
            .as_str()
            .unwrap()
            .contains("nonsense"),
        "{r1}"
    );
    assert!(
        r1["post"][1]["observed"]
            .as_str()
            .unwrap()
            .contains(&format!("innodb_flush_method={before}")),
        "{r1}"
    );
    assert_eq!(step(&report, "round-2-B")["status"], "skipped");
    assert!(run_dir.join("experiment/failed-config-1.json").is_file());
    assert!(!run_dir.join("experiment/round-1-B.json").exists());
}

#[test]
fn a_kill_between_a_restart_s_shutdown_and_start_resumes_to_the_server_as_it_was() {
    let sb = Sandboxed::new("exprkill");
    let before = global(&sb, "innodb_log_buffer_size");
    let run_dir = sb.root.join("run");
    let args = short(&["innodb_log_buffer_size=32M"], "2", &run_dir);
    // Killed with the server down and the drop-in holding the variant's value.
    let killed = sb.innops_env(
        &strs(&args),
        &[("INNOPS_FAULT", "restart-stopped:restart-1")],
    );
    assert_eq!(killed.code, 137, "{killed:?}");
    assert!(sb.target().connect().is_err(), "the server is down");
    assert!(dropin(&sb).contains("innodb_log_buffer_size = 32M"));
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(global(&sb, "innodb_log_buffer_size"), before);
    assert_eq!(dropin(&sb), "");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    let (ids, _) = started(&run_dir);
    assert_eq!(
        ids.iter().filter(|s| *s == "restart-1").count(),
        2,
        "{ids:?}"
    );
    for key in ["A", "A2", "B"] {
        assert_eq!(arm(&report, key)["rounds"], 2, "{report}");
    }
    // The downtime of the restart cut short runs from its shutdown (kept in the run directory) to the start.
    assert_eq!(report["downtime"].as_array().unwrap().len(), 2, "{report}");
}

#[test]
fn keep_best_keeps_a_restart_variable_s_winner_in_the_drop_in() {
    let sb = Sandboxed::new("expkeeprst");
    let run_dir = sb.root.join("run");
    let mut args = short(&["innodb_log_buffer_size=32M"], "2", &run_dir);
    args.extend(["--keep".to_string(), "best".to_string()]);
    // Stopped after the last arm-run; its figures are then replaced by constructed ones in which B is twice as
    // fast, so the verdict has a winner beyond the noise without this test depending on a speed (the
    // verdict's arithmetic is unit-tested; this test is about what --keep best does with a winner).
    let killed = sb.innops_env(&strs(&args), &[("INNOPS_FAULT", "after-action:round-2-A")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    for (key, tps) in [("A", 100.0), ("A2", 100.0), ("B", 200.0)] {
        for round in 1..=2 {
            let series: Vec<f64> = [0.0, 1.0, -1.0, 0.5].iter().map(|d| tps + d).collect();
            let run = serde_json::json!({
                "arm": key, "round": round, "tps": series, "p95_ms": [5.0, 5.0, 5.0, 5.0],
                "transactions": (tps * 4.0) as u64, "seconds": 4.0, "data_written": 0, "log_written": 0,
                "cpu_s": null
            });
            std::fs::write(
                run_dir.join(format!("experiment/round-{round}-{key}.json")),
                run.to_string(),
            )
            .unwrap();
        }
    }
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["experiment"]["winner"], "B", "{report}");
    let keep = step(&report, "keep-best");
    assert_eq!(keep["status"], "done", "{keep}");
    // Kept through the drop-in, and the server restarted with it: the value reads back from the server.
    assert_eq!(
        global(&sb, "innodb_log_buffer_size"),
        (32u64 << 20).to_string()
    );
    assert!(
        dropin(&sb).contains("innodb_log_buffer_size = 32M"),
        "{}",
        dropin(&sb)
    );
    assert!(
        resumed.stdout.contains("+innodb_log_buffer_size = 32M"),
        "the diff is shown: {}",
        resumed.stdout
    );
    assert!(
        resumed
            .stdout
            .contains("kept: B (innodb_log_buffer_size=32M) innodb_log_buffer_size=32M in "),
        "{}",
        resumed.stdout
    );
    assert_eq!(report["downtime"].as_array().unwrap().len(), 3, "{report}");
}

/// innops's copies left on the server (`innops_exp_*`).
fn copies(sb: &Sandboxed) -> Vec<String> {
    sb.conn()
        .query("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'innops\\_exp\\_%'")
        .unwrap()
}

fn bench_table_def(sb: &Sandboxed) -> String {
    let row: Option<(String, String)> = sb
        .conn()
        .query_first("SHOW CREATE TABLE innops_bench.sbtest1")
        .unwrap();
    row.unwrap().1
}

fn tables_args(options: &str, run_dir: &std::path::Path) -> Vec<String> {
    let mut a = short(&[], "2", run_dir);
    a.splice(1..1, ["--table-option".to_string(), options.to_string()]);
    a
}

#[test]
fn table_and_engine_variants_run_on_proven_copies_that_are_dropped_at_the_end() {
    let sb = Sandboxed::new("exptbl");
    let run_dir = sb.root.join("run");
    let args = tables_args(
        "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8,PAGE_COMPRESSED=1 PAGE_COMPRESSION_LEVEL=6,ENGINE=Aria,ENGINE=MyISAM",
        &run_dir,
    );
    // The benchmark table exists before, so its definition can be compared after.
    let first = sb.innops(&[
        "bench",
        "oltp_read_write",
        "prepare",
        "--db",
        "innops_bench",
        "--tables",
        "1",
        "--table-size",
        "10000",
    ]);
    assert_eq!(first.code, 0, "{first:?}");
    let def_before = bench_table_def(&sb);
    let out = sb.innops(&strs(&args));
    assert_eq!(out.code, 0, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    // Each copy's definition was read back from the server's dictionary as the variant.
    for (n, shows) in [
        (0, "ENGINE=InnoDB"),
        (1, "ROW_FORMAT=Compressed (compressed pages of 8 KB)"),
        (2, "(page-compressed, level 6)"),
        (3, "ENGINE=Aria"),
        (4, "ENGINE=MyISAM"),
    ] {
        let s = step(&report, &format!("table-{n}"));
        assert_eq!(s["post"][0]["passed"], true, "{s}");
        let seen = s["post"][0]["observed"].as_str().unwrap();
        assert!(seen.contains(shows), "table-{n}: {seen}");
    }
    // Every arm was measured on its copy in both rounds, with its size on disk and the bytes written.
    for key in ["A", "A2", "B", "C", "D", "E"] {
        let a = arm(&report, key);
        assert_eq!(a["rounds"], 2, "{a}");
        assert!(a["table_size"]["data_length"].as_u64().unwrap() > 0, "{a}");
        assert!(a["table_size"]["allocated_bytes"].as_u64().is_some(), "{a}");
        assert!(a["disk_bytes_per_trx"].as_f64().is_some(), "{a}");
    }
    assert_eq!(
        arm(&report, "B")["settings"][0]["value"],
        "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8"
    );
    assert!(
        out.stdout.contains("table KB (data+index / allocated)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("disk B/trx"), "{}", out.stdout);
    // The copies are gone, proven by the step; the user's (here innops_bench's) table is as it was.
    let drop = step(&report, "drop-tables");
    assert_eq!(drop["post"][0]["passed"], true, "{drop}");
    assert!(copies(&sb).is_empty(), "{:?}", copies(&sb));
    assert_eq!(bench_table_def(&sb), def_before);
}

#[test]
fn a_bad_table_option_is_refused_in_one_sentence_naming_the_fix() {
    let sb = Sandboxed::new("exptbad");
    let run_dir = sb.root.join("run");
    for (opt, says) in [
        ("ENGINE=Memory", "ENGINE=Memory: innops experiments with InnoDB, RocksDB, Aria, MyISAM only: name one of them"),
        ("KEY_BLOCK_SIZE=3", "give 1, 2, 4, 8 or 16"),
        ("COMMENT=x", "is not an option innops experiments with: use ENGINE"),
        ("ENGINE=Aria KEY_BLOCK_SIZE=8", "KEY_BLOCK_SIZE and PAGE_COMPRESSED are InnoDB's"),
    ] {
        let out = sb.innops(&strs(&tables_args(opt, &run_dir)));
        assert_eq!(out.code, 2, "{opt}: {out:?}");
        let line = out.error_line();
        assert!(line.contains(says), "{opt}: {line}");
        assert!(!run_dir.exists(), "{opt}: nothing was started");
    }
    assert!(copies(&sb).is_empty());
}

#[test]
fn a_variant_the_server_refuses_is_left_out_and_a_killed_run_resumes_to_no_copies() {
    let sb = Sandboxed::new("exptkill");
    // Without file-per-table InnoDB cannot compress rows: under innodb_strict_mode=ON the ALTER fails, and the
    // variant must be a failed arm, never a figure labelled COMPRESSED.
    sb.conn()
        .query_drop("SET GLOBAL innodb_file_per_table = OFF")
        .unwrap();
    let run_dir = sb.root.join("run");
    let args = tables_args(
        "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8,ENGINE=Aria",
        &run_dir,
    );
    // Killed (as kill -9 would) inside arm C's run on its copy.
    let killed = sb.innops_env(&strs(&args), &[("INNOPS_FAULT", "arm-measured:round-1-C")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    assert!(
        !copies(&sb).is_empty(),
        "the copies are there until the run is resumed"
    );
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(copies(&sb).is_empty(), "{:?}", copies(&sb));
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    let b = arm(&report, "B");
    let why = b["verdict"].as_str().unwrap();
    assert!(
        why.starts_with("failed: the server refused ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8"),
        "{why}"
    );
    assert!(b["tps_change_pct"].is_null(), "{b}");
    assert_eq!(arm(&report, "C")["rounds"], 2, "{report}");
    assert_eq!(arm(&report, "A2")["rounds"], 2, "{report}");
    sb.conn()
        .query_drop("SET GLOBAL innodb_file_per_table = ON")
        .unwrap();
}

/// A ready study in playbooks/experiments/.
fn study(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("playbooks/experiments")
        .join(name)
        .display()
        .to_string()
}

/// What each ready study does on a plain sandbox (no binary log, no RocksDB, MariaDB 10.6+): plans, or is
/// refused in the one sentence its header documents (exit code, words of the sentence).
const READY: &[(&str, i32, &str)] = &[
    ("acid.toml", 1, "sync_binlog acts only on the binary log and this server writes none: start it with log_bin"),
    ("compression.toml", 0, ""),
    ("engines-read-write.toml", 0, ""),
    ("engines-read-only.toml", 0, ""),
    ("engines-rocksdb.toml", 1, "RocksDB is not"),
    ("thread-concurrency.toml", 2, "MariaDB removed InnoDB's thread throttling in 10.6"),
    ("virtual-column.toml", 0, ""),
];

#[test]
fn every_ready_study_plans_or_is_refused_in_its_documented_sentence() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("playbooks/experiments");
    let files = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "toml")
        })
        .count();
    assert_eq!(
        files,
        READY.len(),
        "every ready study has its expectation here"
    );
    let sb = Sandboxed::new("expstudy");
    for (name, code, says) in READY {
        let file = study(name);
        let out = sb.innops(&[
            "experiment",
            &file,
            "--time",
            "2",
            "--rounds",
            "2",
            "--warmup",
            "0",
            "--format",
            "json",
        ]);
        assert_eq!(out.code, *code, "{name}: {out:?}");
        if *code == 0 {
            let j = out.json();
            assert_eq!(j["status"], "dry_run", "{name}");
            assert!(
                j["notes"][0].as_str().unwrap().starts_with("study: "),
                "{name}: {j}"
            );
        } else {
            assert!(out.stdout.contains(says), "{name}: {}", out.stdout);
        }
    }
    assert!(copies(&sb).is_empty());
}

#[test]
fn the_acid_study_plans_with_the_binary_log_on_and_a_flag_overrides_its_field() {
    let sb = Sandboxed::with(
        "expacid",
        innops::server::sandbox::SandboxOptions {
            buffer_pool: Some("64M".into()),
            binlog: true,
            ..Default::default()
        },
    );
    let file = study("acid.toml");
    // The file says threads = 4, rounds = 3: the command line's --threads and --rounds win.
    let out = sb.innops(&[
        "experiment",
        &file,
        "--threads",
        "3",
        "--time",
        "2",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let notes = out.json()["notes"].to_string();
    assert!(notes.contains("study: ACID vs non-ACID"), "{notes}");
    assert!(
        notes.contains("oltp_write_only with 3 thread(s)"),
        "{notes}"
    );
    // A, A′ and the six combinations of the file's two variables.
    assert!(notes.contains("2 round(s) × 8 arm(s)"), "{notes}");
    // A --set on the command line replaces the file's whole `set`.
    let out = sb.innops(&[
        "experiment",
        &file,
        "--set",
        "innodb_flush_log_at_trx_commit=2",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let notes = out.json()["notes"].to_string();
    assert!(notes.contains("3 round(s) × 3 arm(s)"), "{notes}");
}

#[test]
fn a_study_file_with_errors_names_the_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    for (text, at, says) in [
        (
            "title = \"t\"\nset = [\"innodb_io_capacity=200\"]\nthreds = 4\n",
            ":3:1:",
            "threds",
        ),
        (
            "set = [\"innodb_io_capacity=200\"]\ntime = \"long\"\n",
            ":2:",
            "field `time`",
        ),
        (
            "set = [\"innodb_io_capacity=200\"]\ntable-option = [\"ENGINE=Memory\"]\n",
            ":2:17: field `table-option`:",
            "InnoDB, RocksDB, Aria, MyISAM only",
        ),
    ] {
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, text).unwrap();
        let out = run_innops(
            &crate::common::args(&["experiment", file.to_str().unwrap(), "--sandbox", "none"]),
            &[],
        );
        assert_eq!(out.code, 2, "{text}: {out:?}");
        let line = out.error_line();
        assert!(
            line.starts_with(&format!("innops: {}{at}", file.display())),
            "{line}"
        );
        assert!(
            line.contains(says) && line.ends_with("fix the study and run it again"),
            "{line}"
        );
    }
}

#[test]
fn a_ready_study_runs_end_to_end_and_plan_json_keeps_it() {
    let sb = Sandboxed::new("expstrun");
    let run_dir = sb.root.join("run");
    let file = study("engines-read-write.toml");
    let out = sb.innops(&[
        "experiment",
        &file,
        "--threads",
        "2",
        "--time",
        "2",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--execute",
        "--yes",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    for key in ["A", "A2", "B", "C"] {
        assert_eq!(arm(&report, key)["rounds"], 2, "{report}");
    }
    assert_eq!(
        arm(&report, "B")["settings"][0]["value"],
        "ENGINE=Aria TRANSACTIONAL=1"
    );
    assert!(copies(&sb).is_empty(), "{:?}", copies(&sb));
    // plan.json holds the study's settings (with the flags laid over them) and its title, so resume rebuilds
    // the same plan without the file.
    let plan = read_json(&run_dir.join("plan.json"));
    let params = &plan["params"];
    assert_eq!(
        params["study"]["title"], "InnoDB vs Aria on oltp_read_write",
        "{params}"
    );
    assert_eq!(params["threads"], 2, "{params}");
    assert_eq!(params["workload"], "oltp_read_write", "{params}");
    assert_eq!(params["tables"].as_array().unwrap().len(), 2, "{params}");
}

/// A schema with a copy's name that innops did not make (no innops comment) stops the experiment at its
/// pre-flight, and stays as it was: innops drops only the schemas it made.
#[test]
fn a_schema_with_a_copy_s_name_that_innops_did_not_make_is_refused_and_kept() {
    let sb = Sandboxed::new("exptforeign");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE innops_exp_t1").unwrap();
    c.query_drop("CREATE TABLE innops_exp_t1.mine (id INT PRIMARY KEY)")
        .unwrap();
    c.query_drop("INSERT INTO innops_exp_t1.mine VALUES (1), (2)")
        .unwrap();
    let run_dir = sb.root.join("run");
    let out = sb.innops(&strs(&tables_args("ENGINE=Aria", &run_dir)));
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains("not innops's: innops_exp_t1")
            || out.stderr.contains("not innops's: innops_exp_t1"),
        "{out:?}"
    );
    let n: Option<i64> = c
        .query_first("SELECT COUNT(*) FROM innops_exp_t1.mine")
        .unwrap();
    assert_eq!(n, Some(2));
}

/// Wait until a run held at `point` (of several, `INNOPS_TEST_HOLD=P1,P2=DIR`) writes `DIR/holding-POINT`.
fn wait_at(dir: &std::path::Path, point: &str, child: &mut std::process::Child) {
    while !dir.join(format!("holding-{point}")).exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("innops ended ({status}) before it reached {point}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn the_load_guard_stops_above_critical_and_a_run_it_interrupts_is_measured_again() {
    use crate::common::{sandbox_args, spawn_innops, wait_innops};
    let sb = Sandboxed::new("expload");
    let before = global(&sb, "innodb_io_capacity");
    let flags = |run_dir: &std::path::Path, max: &str, critical: &str| {
        let mut a: Vec<String> = [
            "experiment",
            "--set",
            "innodb_io_capacity=300",
            "--threads",
            "2",
            "--time",
            "2",
            "--rounds",
            "1",
            "--warmup",
            "0",
            "--max-load",
            max,
            "--critical-load",
            critical,
            "--execute",
            "--run-dir",
            run_dir.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(sandbox_args(&sb));
        a
    };
    // The test makes the load: each idle session adds one to Threads_connected.
    let crowd: Vec<mysql::Conn> = (0..30).map(|_| sb.conn()).collect();
    // Above --critical-load before the first arm: the experiment stops in one sentence, nothing measured, the
    // variable as it was.
    let stopped = sb.root.join("stopped");
    let out = crate::common::run_innops(
        &flags(&stopped, "Threads_connected=20", "Threads_connected=25"),
        &[],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr.contains("is above --critical-load Threads_connected=25: the server is overloaded, so innops stopped the experiment"),
        "{}",
        out.stderr
    );
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
    assert!(
        !stopped.join("experiment").exists()
            || std::fs::read_dir(stopped.join("experiment"))
                .unwrap()
                .next()
                .is_none()
    );
    drop(crowd);
    // The load arrives while an arm is measured: the run is stopped and thrown away, the arm waits for the load
    // to drop (the variable at its baseline meanwhile), and runs again.
    let run_dir = sb.root.join("run");
    let hold = sb.root.join("hold");
    std::fs::create_dir_all(&hold).unwrap();
    let spec = format!("arm-measuring,load-paused={}", hold.display());
    let mut child = spawn_innops(
        &flags(&run_dir, "Threads_connected=20", "Threads_connected=1000"),
        &[("INNOPS_TEST_HOLD", spec.as_str())],
    );
    wait_at(&hold, "arm-measuring", &mut child);
    let crowd: Vec<mysql::Conn> = (0..30).map(|_| sb.conn()).collect();
    std::fs::write(hold.join("go-arm-measuring"), b"").unwrap();
    wait_at(&hold, "load-paused", &mut child);
    assert_eq!(
        global(&sb, "innodb_io_capacity"),
        before,
        "the baseline while the arm waits"
    );
    assert!(
        !run_dir.join("experiment").is_dir()
            || std::fs::read_dir(run_dir.join("experiment"))
                .unwrap()
                .next()
                .is_none(),
        "the interrupted run's figures are not stored"
    );
    drop(crowd);
    std::fs::write(hold.join("go-load-paused"), b"").unwrap();
    let out = wait_innops(child);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("was stopped: Threads_connected="),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("paused for"), "{}", out.stderr);
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    let pauses = report["experiment"]["load_pauses"].as_array().unwrap();
    assert_eq!(pauses.len(), 1, "{report}");
    assert!(
        pauses[0]
            .as_str()
            .unwrap()
            .contains("is above --max-load 20"),
        "{report}"
    );
    for key in ["A", "A2", "B"] {
        assert_eq!(arm(&report, key)["rounds"], 1, "{report}");
    }
    assert!(
        out.stdout.contains("load guard: round 1, arm "),
        "{}",
        out.stdout
    );
}
#[test]
fn zipped_variables_make_one_arm_per_position_and_unequal_lists_are_refused() {
    let sb = Sandboxed::new("expzip");
    let before = (
        global(&sb, "innodb_io_capacity"),
        global(&sb, "innodb_io_capacity_max"),
    );
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300,400,500",
        "--set",
        "innodb_io_capacity_max=3000,4000,5000",
        "--zip",
        "--workload",
        "oltp_point_select",
        "--threads",
        "1",
        "--time",
        "1",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    // A, A′ and three zipped variants, not the nine a crossing makes.
    let rounds: Vec<&str> = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str().filter(|i| i.starts_with("round-")))
        .collect();
    assert_eq!(rounds.len(), 5, "{rounds:?}");
    for (key, cap, max) in [
        ("B", "300", "3000"),
        ("C", "400", "4000"),
        ("D", "500", "5000"),
    ] {
        let ran = &step(&report, &format!("round-1-{key}"))["result"]["ran_with"];
        assert_eq!(ran[0]["value"], cap, "{key}: {ran}");
        assert_eq!(ran[1]["value"], max, "{key}: {ran}");
    }
    assert_eq!(
        (
            global(&sb, "innodb_io_capacity"),
            global(&sb, "innodb_io_capacity_max")
        ),
        before
    );
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300,400,500",
        "--set",
        "innodb_io_capacity_max=3000,4000",
        "--zip",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    let line = out.error_line();
    assert!(
        line.contains("innodb_io_capacity has 3 value(s) where innodb_io_capacity_max has 2"),
        "{line}"
    );
}

/// An experiment of one round of one second per arm with `sql` as its workload (written to `NAME.sql`, the run
/// directory `NAME`).
fn one_second_sql_run(sb: &Sandboxed, name: &str, sql: &str) -> crate::common::Output {
    let file = sb.root.join(format!("{name}.sql"));
    std::fs::write(&file, sql).unwrap();
    let run_dir = sb.root.join(name);
    sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300",
        "--workload-sql",
        file.to_str().unwrap(),
        "--time",
        "1",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ])
}

#[test]
fn an_sql_workload_runs_its_statements_per_arm_and_bad_files_are_refused() {
    let sb = Sandboxed::new("expsql");
    let before = global(&sb, "innodb_io_capacity");
    let sql = sb.root.join("w.sql");
    std::fs::write(
        &sql,
        "-- a read and a write per transaction\nSELECT c FROM sbtest1 WHERE id = :id;\nUPDATE sbtest1 SET pad = 'innops-sql-workload' WHERE id = :id;\n",
    )
    .unwrap();
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300",
        "--workload-sql",
        sql.to_str().unwrap(),
        "--threads",
        "2",
        "--time",
        "2",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    for key in ["A", "A2", "B"] {
        assert!(arm(&report, key)["tps"].as_f64().unwrap() > 0.0, "{key}");
        let pre = &step(&report, &format!("round-1-{key}"))["pre"];
        assert!(
            pre.to_string()
                .contains("the SQL workload's statements prepare in innops_bench"),
            "{pre}"
        );
    }
    // The file's UPDATE ran, with drawn ids, on innops's own table.
    let changed: i64 = sb
        .conn()
        .query_first("SELECT COUNT(*) FROM innops_bench.sbtest1 WHERE pad = 'innops-sql-workload'")
        .unwrap()
        .unwrap();
    assert!(changed > 0, "{changed}");
    // The dry run shows the statements as the baseline runs them.
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300",
        "--workload-sql",
        sql.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let notes = out.json()["notes"].to_string();
    assert!(
        notes.contains("sql: 2 statement(s) from")
            && notes.contains("1. SELECT c FROM sbtest1 WHERE id = ?"),
        "{notes}"
    );
    // DDL is refused before anything connects, saying why, in one sentence.
    let bad = sb.root.join("bad.sql");
    std::fs::write(&bad, "SELECT 1;\nDROP TABLE sbtest1;\n").unwrap();
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300",
        "--workload-sql",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    let line = out.error_line();
    assert!(
        line.contains("statement 2 is DROP, DDL: it commits the transaction on its own"),
        "{line}"
    );
    // A statement the server cannot prepare on the arm's table stops the run at that arm, before it measures.
    let out = one_second_sql_run(
        &sb,
        "missing",
        "SELECT c FROM no_such_table WHERE id = :id;\n",
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout
            .contains("Table 'innops_bench.no_such_table' doesn't exist"),
        "{}",
        out.stdout
    );
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
    // An error at run time stops the run with its code, and names no flag the experiment does not have
    // (`innops bench`'s --ignore-errors).
    let out = one_second_sql_run(
        &sb,
        "dup",
        "INSERT INTO sbtest1 (id, k, c, pad) VALUES (:id, 0, '', '');\n",
    );
    // 3: a step failed and the plan stopped, the variables set back (read back).
    assert_eq!(out.code, 3, "{out:?}");
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("(code 1062)"), "{said}");
    assert!(!said.contains("--ignore-errors"), "{said}");
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
}

#[test]
fn column_variants_are_proven_on_the_copies_read_by_an_sql_workload_and_dropped() {
    let sb = Sandboxed::new("expcol");
    let sql = sb.root.join("vc.sql");
    std::fs::write(
        &sql,
        "SELECT id FROM sbtest1 WHERE {c_crc} = (SELECT CRC32(RTRIM(c)) FROM sbtest1 WHERE id = :id);\n",
    )
    .unwrap();
    let run_dir = sb.root.join("run");
    let mut args = short(&[], "2", &run_dir);
    args.splice(
        1..1,
        [
            "--column-variant",
            "c_crc INT UNSIGNED AS (CRC32(RTRIM(c))) VIRTUAL INDEXED",
            "--column-variant",
            "c_crc INT UNSIGNED AS (CRC32(RTRIM(c))) STORED",
            // MariaDB refuses a stored column over a CHAR column without RTRIM (its value would depend on
            // PAD_CHAR_TO_FULL_LENGTH): this variant is left out, the rest judged.
            "--column-variant",
            "c_bad INT UNSIGNED AS (CRC32(c)) STORED",
            "--workload-sql",
            sql.to_str().unwrap(),
        ]
        .map(String::from),
    );
    // `short` gives --workload oltp_read_write, which --workload-sql replaces: drop it.
    let w = args.iter().position(|a| a == "--workload").unwrap();
    args.drain(w..w + 2);
    let out = sb.innops(&strs(&args));
    assert_eq!(out.code, 0, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    for (n, shows) in [
        (
            1,
            "c_crc int(10) unsigned AS (crc32(rtrim(`c`))) VIRTUAL GENERATED INDEXED",
        ),
        (
            2,
            "c_crc int(10) unsigned AS (crc32(rtrim(`c`))) STORED GENERATED",
        ),
        (3, "left out: the server refused COLUMN c_bad"),
    ] {
        let s = step(&report, &format!("table-{n}"));
        assert_eq!(s["post"][0]["passed"], true, "{s}");
        let seen = s["post"][0]["observed"].as_str().unwrap();
        assert!(seen.contains(shows), "table-{n}: {seen}");
    }
    assert!(!step(&report, "table-2")["post"][0]["observed"]
        .as_str()
        .unwrap()
        .contains("INDEXED"));
    // The baseline computed the expression in the query; the variants read the column.
    let a = step(&report, "round-1-A")["pre"].to_string();
    assert!(
        a.contains("prepare in innops_exp_t0") && a.contains("1 prepared"),
        "{a}"
    );
    for key in ["A", "A2", "B", "C"] {
        assert_eq!(arm(&report, key)["rounds"], 2, "{key}");
        assert!(arm(&report, key)["tps"].as_f64().unwrap() > 0.0, "{key}");
    }
    let d = arm(&report, "D");
    assert!(d["verdict"].as_str().unwrap().contains("1901"), "{d}");
    assert!(copies(&sb).is_empty(), "{:?}", copies(&sb));
    // A {name} no column variant defines is refused before anything connects.
    let out = sb.innops(&[
        "experiment",
        "--column-variant",
        "c_crc INT UNSIGNED AS (CRC32(RTRIM(c))) VIRTUAL",
        "--workload-sql",
        sb.root.join("other.sql").to_str().unwrap(),
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    std::fs::write(sb.root.join("other.sql"), "SELECT {nope} FROM sbtest1;\n").unwrap();
    let out = sb.innops(&[
        "experiment",
        "--column-variant",
        "c_crc INT UNSIGNED AS (CRC32(RTRIM(c))) VIRTUAL",
        "--workload-sql",
        sb.root.join("other.sql").to_str().unwrap(),
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.error_line()
            .contains("names {nope}, which no --column-variant defines"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_killed_column_and_sql_experiment_resumes_from_plan_json_to_no_copies() {
    let sb = Sandboxed::new("expcolkill");
    let sql = sb.root.join("vc.sql");
    std::fs::write(
        &sql,
        "SELECT id FROM sbtest1 WHERE {c_crc} = (SELECT CRC32(RTRIM(c)) FROM sbtest1 WHERE id = :id);\n",
    )
    .unwrap();
    let run_dir = sb.root.join("run");
    let args = [
        "experiment",
        "--column-variant",
        "c_crc INT UNSIGNED AS (CRC32(RTRIM(c))) VIRTUAL INDEXED",
        "--workload-sql",
        sql.to_str().unwrap(),
        "--threads",
        "2",
        "--time",
        "1",
        "--rounds",
        "1",
        "--warmup",
        "0",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ];
    let killed = sb.innops_env(&args, &[("INNOPS_FAULT", "arm-measured:round-1-B")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    assert_eq!(copies(&sb).len(), 2, "the copies stay until the run ends");
    // The statements are in plan.json: the file is not read again.
    std::fs::remove_file(&sql).unwrap();
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    let b = step(&report, "round-1-B")["pre"].to_string();
    assert!(b.contains("prepare in innops_exp_t1"), "{b}");
    assert!(arm(&report, "B")["tps"].as_f64().unwrap() > 0.0);
    assert!(copies(&sb).is_empty(), "{:?}", copies(&sb));
}
