//! `innops experiment`'s dimensions beyond one variable's values, end to end on sandboxes: values relative to
//! the server's cores (`2xcores`) resolved when the plan is made, kept in plan.json and shown in the plan and
//! the report.

use mysql::prelude::Queryable;

use crate::common::{read_json, resume, sandbox_cmd, step, Sandboxed};

fn global(sb: &Sandboxed, name: &str) -> String {
    sb.conn()
        .query_first::<String, _>(format!("SELECT CAST(@@GLOBAL.{name} AS CHAR)"))
        .unwrap()
        .unwrap()
}

/// The CPUs this process may run on: the sandbox's mariadbd, started by it, inherits the same list.
fn cores() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    list.split(',')
        .map(|p| match p.split_once('-') {
            Some((a, b)) => b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

/// A short run; its first 8 items leave out `--rounds`.
const SHORT: &[&str] = &[
    "--workload",
    "oltp_point_select",
    "--threads",
    "1",
    "--time",
    "1",
    "--warmup",
    "0",
    "--rounds",
    "1",
];

#[test]
fn values_relative_to_the_cores_resolve_against_the_server_s_cores() {
    let sb = Sandboxed::new("expcores");
    let n = cores();
    let before = global(&sb, "innodb_io_capacity");
    let file = sb.root.join("cores.toml");
    std::fs::write(
        &file,
        "title = \"cores\"\nset = [\"innodb_io_capacity=100xcores,300xCores\"]\n",
    )
    .unwrap();
    let run_dir = sb.root.join("run");
    let mut args = vec!["experiment", file.to_str().unwrap()];
    args.extend(SHORT);
    args.extend(["--execute", "--run-dir", run_dir.to_str().unwrap()]);
    let out = sb.innops(&args);
    assert_eq!(out.code, 0, "{out:?}");
    let (b, c) = ((100 * n).to_string(), (300 * n).to_string());
    let line = format!("cores: {n} (the CPUs mariadbd pid");
    assert!(out.stdout.contains(&line), "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!(
            "innodb_io_capacity: 100xcores = {b}, 300xCores = {c}"
        )),
        "{}",
        out.stdout
    );
    // plan.json keeps the resolved numbers (resume runs these) and the count.
    let plan = read_json(&run_dir.join("plan.json"));
    assert_eq!(
        plan["params"]["sets"][0]["values"],
        serde_json::json!([b, c])
    );
    assert_eq!(plan["params"]["cores"]["count"], n);
    let report = read_json(&run_dir.join("report.json"));
    for (key, value) in [("B", &b), ("C", &c)] {
        let ran = &step(&report, &format!("round-1-{key}"))["result"]["ran_with"];
        assert_eq!(&ran[0]["value"], value, "{key}: {ran}");
    }
    let shown = report["experiment"]["cores"].as_str().unwrap();
    assert!(shown.contains(&format!("100xcores = {b}")), "{shown}");
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains(&format!("100xcores = {b}")));
    assert_eq!(global(&sb, "innodb_io_capacity"), before);

    // The same on the command line; a value that means the same number as another here is refused, and so
    // is a relative value not in the one syntax.
    let set = format!("innodb_io_capacity={b},100xcores");
    let out = sb.innops(&["experiment", "--set", &set]);
    assert_eq!(out.code, 2, "{out:?}");
    let msg = out.error_line();
    assert!(
        msg.contains(&format!("gives {b} twice on this server's {n} core(s)")),
        "{msg}"
    );
    let out = sb.innops(&["experiment", "--set", "innodb_io_capacity=2cores"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.error_line().contains("write Nxcores"), "{out:?}");
    let out = sb.innops(&["experiment", "--set", "innodb_io_capacity=300,2xcores"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains(&format!("2xcores = {}", 2 * n)),
        "{}",
        out.stdout
    );
}

#[test]
fn client_thread_counts_are_groups_each_judged_against_its_own_baseline() {
    let sb = Sandboxed::new("expthr");
    let before = global(&sb, "innodb_io_capacity");
    let file = sb.root.join("threads.toml");
    std::fs::write(
        &file,
        "title = \"threads\"\nset = [\"innodb_io_capacity=300\"]\nthreads = [1, 2]\nworkload = \"oltp_point_select\"\ntime = 2\nrounds = 1\nwarmup = 0\n",
    )
    .unwrap();
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "experiment",
        file.to_str().unwrap(),
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("experiment by client threads (1, 2): each count has its own A, A′"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("oltp_point_select with 2 thread(s)"),
        "{}",
        out.stdout
    );
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    // One step per count, arm and round, each run with its count's threads.
    for t in [1, 2] {
        for key in ["A", "A2", "B"] {
            let r = &step(&report, &format!("t{t}-round-1-{key}"))["result"];
            assert_eq!(r["threads"], t, "{r}");
        }
    }
    let groups = report["experiment"]["by_threads"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{report}");
    for (g, t) in groups.iter().zip([1, 2]) {
        assert_eq!(g["shape"]["threads"], t);
        let arm = |k: &str| {
            g["arms"]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["key"] == k)
                .unwrap()
                .clone()
        };
        let (a, b) = (arm("A"), arm("B"));
        assert_eq!(arm("A2")["rounds"], 1);
        // B's change is against A at the same count, not another count's.
        let (ta, tb) = (a["tps"].as_f64().unwrap(), b["tps"].as_f64().unwrap());
        let change = b["tps_change_pct"].as_f64().unwrap();
        assert!((change - (tb - ta) / ta * 100.0).abs() < 1e-6, "{g}");
        assert!(g["aa_line"].as_str().unwrap().starts_with("A/A"), "{g}");
    }
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("Experiment at 1 client threads: verdicts"));
    assert!(html.contains("Experiment at 2 client threads: verdicts"));
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
    // plan.json keeps the counts, so resume rebuilds the same groups.
    let plan = read_json(&run_dir.join("plan.json"));
    assert_eq!(plan["params"]["thread_counts"], serde_json::json!([1, 2]));

    // The flag gives the same; --keep best (one winner) and a count given twice are refused.
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300",
        "--threads",
        "4,16,64",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("4, 16, 64 (one group of every arm per count"),
        "{}",
        out.stdout
    );
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300",
        "--threads",
        "4,16",
        "--keep",
        "best",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.error_line().contains("--keep best keeps one winner"),
        "{out:?}"
    );
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_io_capacity=300",
        "--threads",
        "4,4",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.error_line().contains("gives 4 twice"), "{out:?}");
}

#[test]
fn a_killed_experiment_over_thread_counts_resumes_its_groups_from_plan_json() {
    let sb = Sandboxed::new("expthrkill");
    let before = global(&sb, "innodb_io_capacity");
    let run_dir = sb.root.join("run");
    let mut args = vec!["experiment", "--set", "innodb_io_capacity=300"];
    // SHORT's --threads 1, then 2: a repeated --threads adds its counts.
    args.extend(SHORT);
    args.extend([
        "--threads",
        "2",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    // Killed inside the second group's arm B, its value in force.
    let killed = sb.innops_env(&args, &[("INNOPS_FAULT", "arm-measured:t2-round-1-B")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    assert_eq!(global(&sb, "innodb_io_capacity"), "300");
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    let groups = report["experiment"]["by_threads"].as_array().unwrap();
    assert_eq!(groups.len(), 2, "{report}");
    for (g, t) in groups.iter().zip([1, 2]) {
        assert_eq!(g["shape"]["threads"], t);
        for a in g["arms"].as_array().unwrap() {
            assert_eq!(a["rounds"], 1, "{g}");
        }
    }
    // Restart variables are not scheduled across several counts: refused before anything changes.
    let out = sb.innops(&[
        "experiment",
        "--set",
        "innodb_log_buffer_size=32M",
        "--threads",
        "1,2",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.error_line().contains("take(s) a restart"), "{out:?}");
}

/// Keep-best of a dynamic variable: set with SET GLOBAL and written into innops's drop-in, the diff shown, only
/// when it wins beyond the noise. The figures are replaced by constructed ones in which B is twice as fast (as
/// the restart variable's keep test does), so the test does not depend on a speed.
#[test]
fn keep_best_keeps_a_dynamic_winner_in_the_drop_in_with_the_diff_shown() {
    let sb = Sandboxed::new("expkeepdyn");
    let dropin = sb.sandbox.conf_dir.join("99-innops.cnf");
    std::fs::write(&dropin, "[mysqld]\nmax_connect_errors = 100\n").unwrap();
    let run_dir = sb.root.join("run");
    let mut args = vec!["experiment", "--set", "innodb_io_capacity=300"];
    args.extend(&SHORT[..8]);
    args.extend([
        "--rounds",
        "2",
        "--keep",
        "best",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    let killed = sb.innops_env(&args, &[("INNOPS_FAULT", "after-action:round-2-A")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    let write = |tps_b: f64| {
        for (key, tps) in [("A", 100.0), ("A2", 100.0), ("B", tps_b)] {
            for round in 1..=2 {
                let series: Vec<f64> = [0.0, 1.0, -1.0, 0.5].iter().map(|d| tps + d).collect();
                let run = serde_json::json!({
                    "arm": key, "round": round, "tps": series, "p95_ms": [5.0, 5.0, 5.0, 5.0],
                    "transactions": (tps * 4.0) as u64, "seconds": 4.0, "data_written": 0,
                    "log_written": 0, "cpu_s": null
                });
                std::fs::write(
                    run_dir.join(format!("experiment/round-{round}-{key}.json")),
                    run.to_string(),
                )
                .unwrap();
            }
        }
    };
    write(200.0);
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["experiment"]["winner"], "B", "{report}");
    let keep = step(&report, "keep-best");
    assert_eq!(keep["status"], "done", "{keep}");
    assert_eq!(global(&sb, "innodb_io_capacity"), "300");
    let text = std::fs::read_to_string(&dropin).unwrap();
    assert!(text.contains("innodb_io_capacity = 300"), "{text}");
    assert!(
        text.contains("max_connect_errors = 100"),
        "the rest is kept: {text}"
    );
    assert!(
        resumed.stdout.contains("+innodb_io_capacity = 300"),
        "the diff is shown: {}",
        resumed.stdout
    );
    assert!(
        resumed
            .stdout
            .contains("innodb_io_capacity=300 with SET GLOBAL now and in "),
        "{}",
        resumed.stdout
    );
    // A later start keeps it: stop and start the sandbox, and read it back.
    sandbox_cmd(&sb, "stop");
    sandbox_cmd(&sb, "start");
    assert_eq!(global(&sb, "innodb_io_capacity"), "300");

    // No winner beyond the noise (B as fast as A): nothing is set, and the drop-in is not touched.
    let run_dir = sb.root.join("run2");
    std::fs::write(&dropin, "[mysqld]\n").unwrap();
    let before = global(&sb, "innodb_io_capacity");
    let mut args = vec!["experiment", "--set", "innodb_io_capacity=400"];
    args.extend(&SHORT[..8]);
    args.extend([
        "--rounds",
        "2",
        "--keep",
        "best",
        "--execute",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    let killed = sb.innops_env(&args, &[("INNOPS_FAULT", "after-action:round-2-A")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    let run_dir_ref = &run_dir;
    for (key, tps) in [("A", 100.0), ("A2", 100.0), ("B", 100.0)] {
        for round in 1..=2 {
            let series: Vec<f64> = [0.0, 1.0, -1.0, 0.5].iter().map(|d| tps + d).collect();
            let run = serde_json::json!({
                "arm": key, "round": round, "tps": series, "p95_ms": [5.0, 5.0, 5.0, 5.0],
                "transactions": (tps * 4.0) as u64, "seconds": 4.0, "data_written": 0,
                "log_written": 0, "cpu_s": null
            });
            std::fs::write(
                run_dir_ref.join(format!("experiment/round-{round}-{key}.json")),
                run.to_string(),
            )
            .unwrap();
        }
    }
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert!(report["experiment"]["winner"].is_null(), "{report}");
    assert_eq!(step(&report, "keep-best")["status"], "skipped");
    assert_eq!(global(&sb, "innodb_io_capacity"), before);
    assert_eq!(std::fs::read_to_string(&dropin).unwrap(), "[mysqld]\n");
}
