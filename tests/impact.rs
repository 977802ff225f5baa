//! `--bench-during` and `[bench] during`: the plan's workload through the whole plan, on real runs. The tests
//! judge structure and causality — every step covered, boundaries equal to the journal's, errors only where
//! innops blocked writes or the server was down — never timings or throughput values.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use mysql::prelude::Queryable;

use crate::common::{
    events, read_json, run_innops, spawn_innops, wait_holding, wait_innops, Sandboxed,
};

/// Codes a client sees while the server goes down and comes back: shutdown in progress, connection killed,
/// cannot connect (socket, TCP), server gone, connection lost.
const CONNECTION_CODES: [u16; 6] = [1053, 1927, 2002, 2003, 2006, 2013];

fn legacy_table(sb: &Sandboxed, rows: u32) {
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE legacy").unwrap();
    c.query_drop(
        "CREATE TABLE legacy.orders (id INT PRIMARY KEY, customer VARCHAR(20), KEY (customer)) ENGINE=MyISAM",
    )
    .unwrap();
    c.query_drop(format!(
        "INSERT INTO legacy.orders SELECT seq, CONCAT('c', seq % 97) FROM legacy.seq_1_to_{rows}"
    ))
    .unwrap();
}

fn ts(v: &serde_json::Value) -> DateTime<Utc> {
    v.as_str()
        .unwrap_or_else(|| panic!("not a timestamp: {v}"))
        .parse()
        .unwrap_or_else(|e| panic!("{v}: {e}"))
}

/// One interval line of `bench/during.jsonl` (or of report.json's `during.intervals`).
#[derive(Debug, Clone)]
struct Iv {
    series: String,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    transactions: u64,
    codes: Vec<(u16, u64)>,
    /// Each error at its own time.
    at: Vec<(DateTime<Utc>, u16)>,
}

impl Iv {
    fn of(v: &serde_json::Value) -> Iv {
        Iv {
            series: v["series"].as_str().unwrap().to_string(),
            from: ts(&v["from"]),
            to: ts(&v["to"]),
            transactions: v["transactions"].as_u64().unwrap(),
            codes: v["error_codes"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, n)| (k.parse().unwrap(), n.as_u64().unwrap()))
                        .collect()
                })
                .unwrap_or_default(),
            at: v["errors_at"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|e| (ts(&e[0]), e[1].as_u64().unwrap() as u16))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    fn overlaps(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> bool {
        self.from < to && self.to > from
    }

    fn has_code(&self, codes: &[u16]) -> bool {
        self.codes.iter().any(|(c, n)| *n > 0 && codes.contains(c))
    }
}

/// The lines of the run's `bench/during.jsonl` as written so far (a torn last line is skipped).
fn during_lines(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("bench/during.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn intervals_in_file(run_dir: &Path) -> Vec<Iv> {
    during_lines(run_dir)
        .iter()
        .filter_map(|l| l.get("interval").map(Iv::of))
        .collect()
}

/// Each step's span from the journal: its start, and the end of that start (done, refused, failed, or the run
/// stopping).
fn journal_spans(run_dir: &Path) -> Vec<(String, DateTime<Utc>, DateTime<Utc>)> {
    let mut out: Vec<(String, DateTime<Utc>, Option<DateTime<Utc>>)> = Vec::new();
    for e in events(run_dir) {
        let t = ts(&e["ts"]);
        match e["event"].as_str().unwrap() {
            "step_started" => {
                for s in out.iter_mut().filter(|s| s.2.is_none()) {
                    s.2 = Some(t);
                }
                out.push((e["step"].as_str().unwrap().to_string(), t, None))
            }
            "step_done" | "step_refused" | "step_failed" => {
                for s in out
                    .iter_mut()
                    .filter(|s| s.2.is_none() && s.0 == e["step"].as_str().unwrap())
                {
                    s.2 = Some(t);
                }
            }
            // The benchmark before and after: phases of their own, between the steps.
            "bench_started" => {
                for s in out.iter_mut().filter(|s| s.2.is_none()) {
                    s.2 = Some(t);
                }
                out.push((format!("bench-{}", e["label"].as_str().unwrap()), t, None))
            }
            "bench" => {
                let name = format!("bench-{}", e["label"].as_str().unwrap());
                for s in out.iter_mut().filter(|s| s.2.is_none() && s.0 == name) {
                    s.2 = Some(t);
                }
            }
            "interrupted" | "run_done" | "resumed" => {
                for s in out.iter_mut().filter(|s| s.2.is_none()) {
                    s.2 = Some(t);
                }
            }
            _ => {}
        }
    }
    out.into_iter()
        .map(|(s, a, b)| (s, a, b.expect("every step span ends in a finished run")))
        .collect()
}

/// The starts of the steps whose process died in them (the span was ended by the resume).
fn died_in(run_dir: &Path) -> Vec<DateTime<Utc>> {
    let ev = events(run_dir);
    let mut open: Option<DateTime<Utc>> = None;
    let mut out = Vec::new();
    for e in &ev {
        match e["event"].as_str().unwrap() {
            "step_started" => open = Some(ts(&e["ts"])),
            "step_done" | "step_refused" | "step_failed" | "interrupted" | "run_done" => {
                open = None
            }
            "resumed" => out.extend(open.take()),
            _ => {}
        }
    }
    out
}

/// The report's impact data, checked against the journal: the same step spans, and intervals of the
/// workload that cover the run without holes, from before the first step to after the last.
fn check_coverage(run_dir: &Path) -> (serde_json::Value, Vec<Iv>) {
    let report = read_json(&run_dir.join("report.json"));
    let during = report["during"].clone();
    assert!(during.is_object(), "report.json has no during: {report}");
    let spans = journal_spans(run_dir);
    assert!(!spans.is_empty());
    let reported: Vec<(String, DateTime<Utc>, DateTime<Utc>)> = during["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step"].as_str().unwrap().to_string(),
                ts(&s["from"]),
                ts(&s["to"]),
            )
        })
        .collect();
    assert_eq!(
        reported, spans,
        "the chart's step boundaries are the journal's"
    );
    let intervals: Vec<Iv> = during["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(Iv::of)
        .collect();
    assert_eq!(
        intervals.len(),
        intervals_in_file(run_dir).len(),
        "report.json holds every interval of bench/during.jsonl"
    );
    let mut work: Vec<&Iv> = intervals
        .iter()
        .filter(|i| i.series == "workload")
        .collect();
    work.sort_by_key(|i| i.from);
    // A step the process died in has no end of its own, and what was measured in the moment before the
    // kill never reached a line: a step that ended in that last, unwritten second (no line of the workload
    // ends between it and the resume) has none either. Every other step has its intervals.
    let died = died_in(run_dir);
    let resumes: Vec<DateTime<Utc>> = events(run_dir)
        .iter()
        .filter(|e| e["event"] == "resumed")
        .map(|e| ts(&e["ts"]))
        .collect();
    let in_unwritten_tail = |to: DateTime<Utc>| {
        resumes
            .iter()
            .any(|r| to < *r && !work.iter().any(|i| i.to >= to && i.to <= *r))
    };
    for (step, from, to) in spans.iter().filter(|s| !died.contains(&s.1)) {
        assert!(
            work.iter().any(|i| i.overlaps(*from, *to)) || in_unwritten_tail(*to),
            "no interval of the workload during {step} ({from} → {to})"
        );
    }
    // Within each process the lines follow one another: no hole in the measurement.
    let processes = during_lines(run_dir)
        .iter()
        .filter(|l| l.get("start").is_some_and(|s| s["series"] == "workload"))
        .count();
    let holes = work
        .windows(2)
        .filter(|w| (w[1].from - w[0].to).num_milliseconds().abs() > 500)
        .count();
    assert!(
        holes < processes,
        "{holes} hole(s) between the lines of {processes} process(es): {work:?}"
    );
    assert!(
        work[0].from <= spans[0].1,
        "measuring before the first step"
    );
    assert!(
        work.last().unwrap().to >= spans.last().unwrap().2,
        "measuring until the last step ended"
    );
    (report, intervals)
}

#[test]
fn a_playbook_with_bench_during_covers_every_step_and_its_write_errors_are_where_writes_were_held()
{
    let sb = Sandboxed::new("imppb");
    legacy_table(&sb, 20_000);
    let pb = sb.root.join("pb.toml");
    // A --max-load that innops's own workload (3 threads and the write probe) alone would be above.
    std::fs::write(
        &pb,
        format!(
            "[target]\nsandbox = \"{}\"\nsandbox-root = \"{}\"\n\n\
             [bench]\ntime = 1\nduring = true\nduring-threads = 3\n\n\
             [load]\nmax-load = \"Threads_running=2\"\n\n\
             [[step]]\nprocedure = \"convert\"\ntables = [\"legacy.orders\"]\n\n\
             [[step]]\nprocedure = \"redo\"\nsize = \"160M\"\n",
            sb.sandbox.name,
            sb.root.display()
        ),
    )
    .unwrap();
    let run_dir = sb.root.join("run");
    let hold = sb.root.join("hold");
    std::fs::create_dir(&hold).unwrap();
    let hold_spec = format!("after-copy={}", hold.display());
    let mut child = spawn_innops(
        &[
            "run".into(),
            pb.display().to_string(),
            "--execute".into(),
            "--yes".into(),
            "--run-dir".into(),
            run_dir.display().to_string(),
        ],
        &[("INNOPS_TEST_HOLD", hold_spec.as_str())],
    );
    // The copy is done and the guard holds writes: the write probe must run into it and say so.
    wait_holding(&hold, &mut child);
    let deadline = Instant::now() + Duration::from_secs(120);
    while !intervals_in_file(&run_dir)
        .iter()
        .any(|i| i.series == "writes" && i.has_code(&[1205]))
    {
        assert!(
            Instant::now() < deadline,
            "the write probe never failed on the held table: {:?}",
            intervals_in_file(&run_dir)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(hold.join("go"), b"").unwrap();
    let out = wait_innops(child);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        !out.stderr.contains("paused for"),
        "innops's own workload paused the copy: {}",
        out.stderr
    );
    assert!(
        out.stdout.contains("impact during the plan"),
        "{}",
        out.stdout
    );

    let (report, intervals) = check_coverage(&run_dir);
    let during = &report["during"];
    assert_eq!(during["threads"], 3);
    assert_eq!(during["workload"], "table:legacy.orders");
    assert_eq!(during["probe"], "write_probe:legacy.orders");
    // Every lock wait that ran out was the write probe's, on the table while innops held its writes.
    let blocks: Vec<(DateTime<Utc>, DateTime<Utc>)> = report["write_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["object"] == "legacy.orders")
        .map(|b| (ts(&b["from"]), ts(&b["to"])))
        .collect();
    assert_eq!(blocks.len(), 1, "{report}");
    let timeouts: Vec<&Iv> = intervals.iter().filter(|i| i.has_code(&[1205])).collect();
    assert!(!timeouts.is_empty());
    for i in &timeouts {
        assert_eq!(i.series, "writes", "{i:?}");
        assert!(
            blocks.iter().any(|(a, b)| i.overlaps(*a, *b)),
            "a lock wait ran out outside the blocked span: {i:?} {blocks:?}"
        );
    }
    // The figures before and after are slices of that workload, each in a phase of its own: before between the
    // step ahead of the first the benchmark brackets and that step, after once the last one is done.
    let slices = during["slices"].as_array().unwrap();
    let labels: Vec<&str> = slices.iter().map(|s| s[0].as_str().unwrap()).collect();
    assert_eq!(labels, ["before", "after"]);
    let plan = read_json(&run_dir.join("plan.json"));
    let marked: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["bench"] == true)
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    let spans = journal_spans(&run_dir);
    let span_of = |id: &str| spans.iter().find(|s| s.0 == id).unwrap().clone();
    let first = span_of(marked[0]);
    let last = span_of(marked[marked.len() - 1]);
    let (before, after) = (span_of("bench-before"), span_of("bench-after"));
    assert!(ts(&slices[0][1]) >= before.1 && ts(&slices[0][2]) <= before.2);
    assert!(
        before.2 <= first.1,
        "the benchmark before ends before the step starts"
    );
    assert!(ts(&slices[1][1]) >= last.2 && ts(&slices[1][1]) >= after.1);
    for label in ["before", "after"] {
        let b = &report["bench"][label];
        assert_eq!(b["workload"], "table:legacy.orders");
        assert_eq!(b["threads"], 3);
        assert!(b["transactions"].as_u64().unwrap() > 0, "{b}");
    }
    assert_eq!(
        events(&run_dir)
            .iter()
            .filter(|e| e["event"] == "bench")
            .count(),
        2
    );
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Impact over time</h2>"));
}

#[test]
fn bench_during_outlives_a_restart_and_counts_it_where_the_server_was_down() {
    let sb = Sandboxed::new("impdown");
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "redo",
        "--size",
        "64M",
        "--offline",
        "--execute",
        "--yes",
        "--bench-time",
        "1",
        "--bench-during",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let (report, intervals) = check_coverage(&run_dir);
    let spans = journal_spans(&run_dir);
    let stop = spans.iter().find(|s| s.0 == "stop").unwrap();
    let start = spans.iter().find(|s| s.0 == "start").unwrap();
    let down = (stop.1, start.2);
    let refused: Vec<&Iv> = intervals
        .iter()
        .filter(|i| i.has_code(&CONNECTION_CODES))
        .collect();
    assert!(
        !refused.is_empty(),
        "the restart left no trace: {intervals:?}"
    );
    for i in &refused {
        assert!(
            i.overlaps(down.0, down.1),
            "a connection failed while the server was up: {i:?}, down {down:?}"
        );
    }
    // It came back: transactions completed after the start, and the figures after are of the new server.
    assert!(
        intervals
            .iter()
            .any(|i| i.series == "workload" && i.from >= start.2 && i.transactions > 0),
        "{intervals:?}"
    );
    assert!(report["bench"]["after"]["transactions"].as_u64().unwrap() > 0);
    let impact = report["during"]["impact"].as_array().unwrap();
    assert!(
        impact
            .iter()
            .filter(|i| i["step"] == "stop" || i["step"] == "start")
            .any(|i| i["errors"].as_u64().unwrap() > 0),
        "{}",
        report["during"]["impact"]
    );
    // Each error carries its own time, and each refused connection's is inside the outage: the steps before
    // the shutdown get none of them, however short they were and whatever interval they shared with it.
    for i in &refused {
        assert_eq!(
            i.at.len() as u64,
            i.codes.iter().map(|c| c.1).sum::<u64>(),
            "{i:?}"
        );
        for (at, code) in i.at.iter().filter(|a| CONNECTION_CODES.contains(&a.1)) {
            assert!(
                *at >= down.0 && *at <= down.1,
                "{code} at {at}, outside the outage {down:?}"
            );
        }
    }
    let before_stop: Vec<&str> = spans
        .iter()
        .filter(|s| s.2 <= stop.1)
        .map(|s| s.0.as_str())
        .collect();
    assert!(!before_stop.is_empty(), "{spans:?}");
    for i in impact
        .iter()
        .filter(|i| before_stop.contains(&i["step"].as_str().unwrap()))
    {
        assert_eq!(i["errors"], 0, "a step before the shutdown got errors: {i}");
    }
}

#[test]
fn a_resumed_run_keeps_bench_during_and_its_chart_holds_both_processes() {
    let sb = Sandboxed::new("impres");
    legacy_table(&sb, 2_000);
    let run_dir: PathBuf = sb.root.join("run");
    let args = [
        "convert",
        "--tables",
        "legacy.orders",
        "--execute",
        "--bench-time",
        "1",
        "--bench-during",
        "--bench-during-threads",
        "1",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ];
    let killed = sb.innops_env(
        &args,
        &[("INNOPS_FAULT", "after-action:verify:legacy.orders")],
    );
    assert_eq!(killed.code, 137, "{killed:?}");
    // What was measured before the kill is on disk.
    let before_kill = intervals_in_file(&run_dir);
    assert!(!before_kill.is_empty());
    let plan = read_json(&run_dir.join("plan.json"));
    assert_eq!(plan["options"]["bench_during"], 1, "{}", plan["options"]);

    let resumed = run_innops(&["resume".to_string(), run_dir.display().to_string()], &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let starts: Vec<serde_json::Value> = during_lines(&run_dir)
        .into_iter()
        .filter_map(|l| l.get("start").cloned())
        .filter(|s| s["series"] == "workload")
        .collect();
    assert_eq!(starts.len(), 2, "one workload per process: {starts:?}");
    assert!(starts.iter().all(|s| s["threads"] == 1));
    let (report, intervals) = check_coverage(&run_dir);
    // Nothing measured before the kill is lost from the report.
    for i in &before_kill {
        assert!(
            intervals
                .iter()
                .any(|j| j.series == i.series && j.from == i.from),
            "{i:?}"
        );
    }
    let labels: Vec<&str> = report["during"]["slices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[0].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        ["before", "after"],
        "before once, by the first process"
    );
    assert_eq!(report["status"], "done");
}

#[test]
fn bench_during_is_refused_where_there_is_no_benchmark_to_run() {
    let sb = Sandboxed::new("impno");
    let out = sb.innops(&["redo", "--size", "64M", "--no-bench", "--bench-during"]);
    assert_eq!(out.code, 2, "{out:?}");
    let copy = sb.root.join("copy");
    let dump = sb.root.join("dump");
    let out = sb.innops(&[
        "recover",
        "--out",
        dump.to_str().unwrap(),
        "--copy-to",
        copy.to_str().unwrap(),
        "--bench-during",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    let line = out.error_line();
    assert!(
        line.contains("recover does not use --bench-during"),
        "the flag is not recover's: {line}"
    );
    assert!(!copy.exists(), "nothing was copied");
    let pb = sb.root.join("pb.toml");
    std::fs::write(
        &pb,
        "[bench]\nenabled = false\nduring = true\n\n[[step]]\nprocedure = \"redo\"\nsize = \"64M\"\n",
    )
    .unwrap();
    let out = sb.innops(&["run", pb.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{out:?}");
    let line = out.error_line();
    assert!(
        line.contains(&format!("{}:3:10: field `during`:", pb.display())),
        "{line}"
    );
}

#[test]
fn a_server_that_turns_read_only_under_the_workload_refuses_its_writes_and_that_is_counted() {
    use innops::bench::during::{During, DuringSpec};
    let mut sb = Sandboxed::new("impro");
    let target = sb.target();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("bench")).unwrap();
    let spec = DuringSpec::of(
        &innops::bench::PlanBench::read_write(Duration::from_secs(1)),
        1,
        "test",
    )
    .unwrap();
    let during = During::start(&target, spec, dir.path()).unwrap();
    let wait_for = |what: &str, f: &dyn Fn(&[Iv]) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(120);
        while !f(&intervals_in_file(dir.path())) {
            assert!(
                Instant::now() < deadline,
                "{what}: {:?}",
                intervals_in_file(dir.path())
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for("transactions while writable", &|ivs| {
        ivs.iter().any(|i| i.transactions > 0)
    });
    let pid = sb.sandbox.running_pid().unwrap();
    sb.conn().query_drop("SHUTDOWN").unwrap();
    assert!(innops::server::process::wait_exit(
        pid,
        Duration::from_secs(120)
    ));
    let down = Utc::now();
    sb.sandbox
        .start(&["--innodb-read-only=1".into()], Duration::from_secs(300))
        .unwrap();
    wait_for("writes refused by the read-only server", &|ivs| {
        ivs.iter().filter(|i| i.has_code(&[1036])).count() >= 2
    });
    during.stop();
    let ivs = intervals_in_file(dir.path());
    let refused: Vec<&Iv> = ivs.iter().filter(|i| i.has_code(&[1036])).collect();
    assert!(refused.iter().all(|i| i.to > down), "{refused:?}");
    // From then on every transaction has a write, and none completes: the refusals are all there is.
    let first = refused[0].to;
    let after: Vec<&Iv> = ivs.iter().filter(|i| i.from >= first).collect();
    assert!(!after.is_empty());
    assert!(after.iter().all(|i| i.transactions == 0), "{after:?}");
    assert!(
        after
            .iter()
            .all(|i| i.codes.iter().all(|(c, _)| *c == 1036)),
        "{after:?}"
    );
    // It reconnected across the restart, and said so.
    let reconnects: u64 = during_lines(dir.path())
        .iter()
        .filter_map(|l| l.get("interval"))
        .map(|i| i["reconnects"].as_u64().unwrap())
        .sum();
    assert!(reconnects > 0);
}

#[test]
fn a_run_resumed_while_its_server_is_down_measures_the_outage_until_the_plan_starts_the_server() {
    let sb = Sandboxed::new("impresdown");
    let run_dir = sb.root.join("run");
    let args = [
        "redo",
        "--size",
        "64M",
        "--offline",
        "--execute",
        "--yes",
        "--bench-time",
        "1",
        "--bench-during",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ];
    let killed = sb.innops_env(&args, &[("INNOPS_FAULT", "after-action:stop")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    assert!(!sb.sandbox.is_running());
    let resumed = run_innops(&["resume".to_string(), run_dir.display().to_string()], &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let (report, intervals) = check_coverage(&run_dir);
    let resumed_at = events(&run_dir)
        .iter()
        .find(|e| e["event"] == "resumed")
        .map(|e| ts(&e["ts"]))
        .unwrap();
    let start = journal_spans(&run_dir)
        .into_iter()
        .find(|s| s.0 == "start")
        .unwrap();
    assert!(
        start.1 > resumed_at,
        "the start step ran in the resumed process"
    );
    // The resumed workload found the server down: refused connections from its start until the plan started
    // the server, and none after.
    let refused: Vec<&Iv> = intervals
        .iter()
        .filter(|i| i.from >= resumed_at && i.has_code(&CONNECTION_CODES))
        .collect();
    assert!(!refused.is_empty(), "{intervals:?}");
    for i in &refused {
        assert!(
            i.from < start.2,
            "refused after the server was started: {i:?}"
        );
    }
    assert!(
        intervals
            .iter()
            .any(|i| i.series == "workload" && i.from >= start.2 && i.transactions > 0),
        "{intervals:?}"
    );
    assert!(report["bench"]["after"]["transactions"].as_u64().unwrap() > 0);
}
