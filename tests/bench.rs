//! `innops bench` on sandboxes: prepare/run/cleanup of every sysbench workload with statement counts checked
//! exactly (and against sysbench itself, which `make test` installs), the `table:` workload on a table with secondary
//! indexes, and a plan whose report holds before/after figures and a well-formed report.html.
//! Nothing here asserts on speed: runs are 1-2 seconds and only counts and shapes are checked.

use std::process::Command;

use mysql::prelude::Queryable;

use crate::common::{read_json, Output, Sandboxed};

mod sysbench_lines;

/// Statements per transaction as sysbench 1.0.20 counts them (read, write, other).
const MIX: [(&str, u64, u64, u64); 7] = [
    ("oltp_point_select", 1, 0, 0),
    ("oltp_read_only", 14, 0, 2),
    ("oltp_read_write", 14, 4, 2),
    ("oltp_insert", 0, 1, 0),
    ("oltp_write_only", 0, 4, 2),
    ("oltp_update_index", 0, 1, 0),
    ("oltp_update_non_index", 0, 1, 0),
];

fn ok(out: &Output) -> &Output {
    assert_eq!(out.code, 0, "{out:?}");
    out
}

fn table_count(sb: &Sandboxed, db: &str) -> u64 {
    sb.conn()
        .exec_first(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'sbtest%'",
            (db,),
        )
        .unwrap()
        .unwrap()
}

#[test]
fn each_oltp_workload_prepares_runs_and_cleans_up_with_sysbench_s_statement_mix() {
    let sb = Sandboxed::new("bencholtp");
    for (workload, r, w, o) in MIX {
        let common = [
            "--workload",
            workload,
            "--db",
            "sbt",
            "--tables",
            "2",
            "--table-size",
            "500",
        ];
        let prep = sb.innops(&[&["bench", "prepare"][..], &common].concat());
        ok(&prep);
        assert_eq!(table_count(&sb, "sbt"), 2, "{prep:?}");
        let rows: u64 = sb
            .conn()
            .query_first("SELECT COUNT(*) FROM sbt.sbtest2")
            .unwrap()
            .unwrap();
        assert_eq!(rows, 500);
        let idx: Option<String> = sb
            .conn()
            .query_first("SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA='sbt' AND TABLE_NAME='sbtest2' AND INDEX_NAME='k_2'")
            .unwrap();
        assert_eq!(
            idx.as_deref(),
            Some("k_2"),
            "prepare adds sysbench's secondary index"
        );

        // One thread: no deadlocks, so every transaction runs its statements exactly once.
        let run = sb.innops(
            &[
                &[
                    "bench",
                    "run",
                    "--threads",
                    "1",
                    "--time",
                    "1",
                    "--seed",
                    "7",
                    "--format",
                    "json",
                ][..],
                &common,
            ]
            .concat(),
        );
        let j = ok(&run).json();
        let txns = j["transactions"].as_u64().unwrap();
        assert!(txns > 0, "{j}");
        assert_eq!(j["errors"], 0, "{j}");
        assert_eq!(j["reads"].as_u64().unwrap(), r * txns, "{workload}: {j}");
        assert_eq!(j["writes"].as_u64().unwrap(), w * txns, "{workload}: {j}");
        assert_eq!(j["other"].as_u64().unwrap(), o * txns, "{workload}: {j}");
        assert_eq!(
            j["queries"].as_u64().unwrap(),
            (r + w + o) * txns,
            "{workload}: {j}"
        );
        for k in [
            "tps",
            "qps",
            "latency_avg_ms",
            "latency_p95_ms",
            "latency_p99_ms",
            "latency_min_ms",
            "latency_max_ms",
        ] {
            assert!(
                j[k].as_f64().is_some_and(|v| v > 0.0),
                "{k} missing at the top level: {j}"
            );
        }
        assert!(
            j["latency_ms"]["p95"].as_f64().unwrap() >= j["latency_ms"]["min"].as_f64().unwrap()
        );
        let per = &j["per_transaction"];
        for c in [
            "Innodb_data_written",
            "Innodb_os_log_written",
            "Innodb_dblwr_pages_written",
            "Innodb_pages_written",
            "Innodb_buffer_pool_reads",
        ] {
            assert!(per[c].is_number(), "{c} missing: {j}");
        }
        if w > 0 {
            assert!(
                per["Innodb_os_log_written"].as_f64().unwrap() > 0.0,
                "writes must write redo: {j}"
            );
        }

        let clean = sb.innops(&[&["bench", "cleanup"][..], &common].concat());
        assert!(
            ok(&clean).stdout.contains("dropped sbt.sbtest1, sbtest2"),
            "{clean:?}"
        );
        assert_eq!(table_count(&sb, "sbt"), 0);
    }
}

#[test]
fn text_output_uses_sysbench_s_sections_and_interval_lines() {
    let sb = Sandboxed::new("benchtext");
    ok(&sb.innops(&["bench", "prepare", "--table-size", "300"]));
    let out = sb.innops(&[
        "bench",
        "run",
        "--table-size",
        "300",
        "--threads",
        "2",
        "--time",
        "2",
        "--report-interval",
        "1",
    ]);
    let text = &ok(&out).stdout;
    for section in [
        "SQL statistics:",
        "queries performed:",
        "transactions:",
        "ignored errors:",
        "reconnects:",
        "General statistics:",
        "total number of events:",
        "Latency (ms):",
        "95th percentile:",
        "Threads fairness:",
        "Innodb_os_log_written:",
        "[ 1s ] thds: 2 tps: ",
    ] {
        assert!(text.contains(section), "no {section:?} in:\n{text}");
    }
}

#[test]
fn running_before_prepare_or_preparing_twice_says_what_to_do() {
    let sb = Sandboxed::new("benchmisuse");
    let out = sb.innops(&["bench", "run", "--time", "1"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains("innops bench oltp_read_write prepare --db sbtest --tables 1"),
        "{out:?}"
    );
    ok(&sb.innops(&["bench", "prepare", "--table-size", "100"]));
    let again = sb.innops(&["bench", "prepare", "--table-size", "100"]);
    assert_eq!(again.code, 1, "{again:?}");
    assert!(again.stderr.contains("innops bench cleanup"), "{again:?}");
}

/// What to do when sysbench is missing: the comparison is a test, not an option.
const NO_SYSBENCH: &str =
    "sysbench is not installed: `make test` installs it, or run `apt-get install -y sysbench`";

/// sysbench's own counts on the same tables: reads, writes, other per transaction.
fn sysbench_mix(sb: &Sandboxed, workload: &str) -> (f64, f64, f64) {
    let out = Command::new("sysbench")
        .args([
            "--db-driver=mysql",
            &format!("--mysql-socket={}", sb.sandbox.socket.display()),
            "--mysql-user=root",
            "--mysql-db=sbtest",
            "--tables=1",
            "--table-size=500",
            "--threads=1",
            "--time=1",
            workload,
            "run",
        ])
        .output()
        .unwrap_or_else(|e| panic!("{NO_SYSBENCH} ({e})"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "sysbench {workload} run failed ({}):\n{text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |name: &str| -> f64 {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .and_then(|l| l.split_whitespace().nth(name.split_whitespace().count()))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in sysbench output:\n{text}"))
    };
    let txns = field("transactions:");
    (
        field("read:") / txns,
        field("write:") / txns,
        field("other:") / txns,
    )
}

#[test]
fn statement_counts_per_transaction_equal_sysbench_s_own() {
    if let Err(e) = Command::new("sysbench").arg("--version").output() {
        panic!("{NO_SYSBENCH} ({e})");
    }
    let sb = Sandboxed::new("benchvs");
    ok(&sb.innops(&["bench", "prepare", "--table-size", "500"]));
    for (workload, ..) in MIX {
        let theirs = sysbench_mix(&sb, workload);
        let j = ok(&sb.innops(&[
            "bench",
            "run",
            "--workload",
            workload,
            "--table-size",
            "500",
            "--time",
            "1",
            "--format",
            "json",
        ]))
        .json();
        let t = j["transactions"].as_f64().unwrap();
        let ours = (
            j["reads"].as_f64().unwrap() / t,
            j["writes"].as_f64().unwrap() / t,
            j["other"].as_f64().unwrap() / t,
        );
        assert_eq!(
            ours, theirs,
            "{workload}: innops (r, w, o) per transaction vs sysbench's"
        );
    }
}

#[test]
fn the_table_workload_reads_by_key_and_through_each_secondary_index() {
    let sb = Sandboxed::new("benchtable");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE shop").unwrap();
    c.query_drop(
        "CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, customer INT, sku VARCHAR(20), created DATETIME, \
         note TEXT, KEY by_customer (customer, created), KEY by_sku (sku)) ENGINE=MyISAM",
    )
    .unwrap();
    c.query_drop(
        "INSERT INTO shop.orders (customer, sku, created, note) SELECT seq % 97, CONCAT('sku', seq % 13), \
         '2024-01-01' + INTERVAL seq MINUTE, IF(seq % 5 = 0, NULL, 'n') FROM mysql.seq_1_to_3000",
    )
    .unwrap();
    // A table keyed by a string: sampled by a scan instead of integer probes.
    c.query_drop("CREATE TABLE shop.kv (k VARCHAR(40) PRIMARY KEY, v INT, KEY by_v (v))")
        .unwrap();
    c.query_drop(
        "INSERT INTO shop.kv SELECT CONCAT('key', seq), seq % 100 FROM mysql.seq_1_to_2000",
    )
    .unwrap();

    let show = sb.innops(&[
        "bench",
        "prepare",
        "--workload",
        "table:shop.orders",
        "--format",
        "json",
    ]);
    let j = ok(&show).json();
    assert_eq!(j["key"], serde_json::json!(["id"]));
    assert_eq!(j["indexes"].as_array().unwrap().len(), 2, "{j}");
    assert_eq!(j["statements"].as_array().unwrap().len(), 4, "{j}");

    for (workload, indexes) in [("table:shop.orders", 2u64), ("table:shop.kv", 1)] {
        let out = sb.innops(&[
            "bench",
            "run",
            "--workload",
            workload,
            "--threads",
            "2",
            "--time",
            "1",
            "--format",
            "json",
        ]);
        let j = ok(&out).json();
        let t = j["transactions"].as_u64().unwrap();
        assert!(t > 0, "{j}");
        // BEGIN, 10 point reads, 1 key range, one lookup per secondary index, COMMIT; every one a result set.
        assert_eq!(
            j["reads"].as_u64().unwrap(),
            (11 + indexes) * t,
            "{workload}: {j}"
        );
        assert_eq!(j["other"].as_u64().unwrap(), 2 * t, "{workload}: {j}");
        assert_eq!(j["writes"], 0, "the table workload never writes: {j}");
    }
    let n: u64 = sb
        .conn()
        .query_first("SELECT COUNT(*) FROM shop.orders")
        .unwrap()
        .unwrap();
    assert_eq!(n, 3000);

    let missing = sb.innops(&[
        "bench",
        "run",
        "--workload",
        "table:shop.nope",
        "--time",
        "1",
    ]);
    assert_eq!(missing.code, 2, "{missing:?}");
    assert!(
        missing.stderr.contains("shop.nope does not exist"),
        "{missing:?}"
    );
}

#[test]
fn a_redo_plan_reports_before_and_after_and_writes_a_well_formed_html_report() {
    let sb = Sandboxed::new("benchplan");
    let run_dir = sb.root.join("run");
    let out = sb.innops(&[
        "redo",
        "--size",
        "128M",
        "--execute",
        "--yes",
        "--bench-time",
        "1",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("benchmark before → after"), "{out:?}");

    let report = read_json(&run_dir.join("report.json"));
    for side in ["before", "after"] {
        let b = &report["bench"][side];
        assert_eq!(b["workload"], "oltp_read_write", "{report}");
        assert!(b["tps"].as_f64().unwrap() > 0.0, "{report}");
        assert!(b["latency_ms"]["p95"].as_f64().unwrap() > 0.0, "{report}");
        assert!(run_dir.join(format!("bench/{side}.json")).is_file());
    }
    assert!(report["bench"]["change"]["tps_pct"].is_number(), "{report}");
    // The plan's tables live in innops_bench, apart from the DBA's own sbtest.
    let rows: u64 = sb
        .conn()
        .query_first("SELECT COUNT(*) FROM innops_bench.sbtest1")
        .unwrap()
        .unwrap();
    assert_eq!(rows, 10_000);

    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    let doc = roxmltree::Document::parse_with_options(
        &html,
        roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        },
    )
    .unwrap_or_else(|e| panic!("report.html is not well-formed: {e}\n{html}"));
    let svgs: Vec<_> = doc
        .descendants()
        .filter(|n| n.tag_name().name() == "svg")
        .collect();
    assert_eq!(svgs.len(), 2, "a tps chart and a p95 chart");
    for svg in svgs {
        let bars = svg
            .descendants()
            .filter(|n| n.tag_name().name() == "rect")
            .count();
        assert_eq!(bars, 2, "before and after bars");
    }
    // Readable without a network: nothing to fetch, nothing to run.
    assert!(
        !doc.descendants()
            .any(|n| matches!(n.tag_name().name(), "script" | "link" | "img")),
        "{html}"
    );
    assert!(
        !doc.descendants()
            .any(|n| n.has_attribute("src") || n.has_attribute("href")),
        "{html}"
    );
}

#[test]
fn ignored_errors_restart_the_transaction_and_other_errors_stop_the_run() {
    let sb = Sandboxed::new("bencherr");
    ok(&sb.innops(&["bench", "prepare", "--table-size", "100"]));
    let mut holder = sb.conn();
    holder
        .query_drop("SET GLOBAL innodb_lock_wait_timeout = 1")
        .unwrap();
    holder.query_drop("BEGIN").unwrap();
    // Every row locked: each UPDATE of oltp_read_write waits a second and gets ERROR 1205.
    let _: Option<u64> = holder
        .query_first("SELECT COUNT(*) FROM sbtest.sbtest1 FOR UPDATE")
        .unwrap();
    let args = [
        "bench",
        "run",
        "--table-size",
        "100",
        "--threads",
        "1",
        "--time",
        "2",
        "--format",
        "json",
    ];
    let j = ok(&sb.innops(&args)).json();
    assert!(
        j["errors"].as_u64().unwrap() >= 1,
        "lock wait timeouts are ignored and counted: {j}"
    );

    let out = sb.innops(&[&args[..], &["--ignore-errors", "none"]].concat());
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("(code 1205; add it to --ignore-errors to retry such transactions)"),
        "the error names its code and the flag that retries it: {out:?}"
    );
    holder.query_drop("ROLLBACK").unwrap();
}

#[test]
fn a_killed_connection_is_reestablished_when_its_error_is_ignored() {
    let sb = Sandboxed::new("benchkill");
    ok(&sb.innops(&["bench", "prepare", "--table-size", "100"]));
    let child = Command::new(env!("CARGO_BIN_EXE_innops"))
        .args([
            "bench",
            "run",
            "--workload",
            "oltp_point_select",
            "--table-size",
            "100",
            "--threads",
            "2",
            "--time",
            "4",
        ])
        .args([
            "--ignore-errors",
            "1927,2013",
            "--format",
            "json",
            "--sandbox",
            &sb.sandbox.name,
        ])
        .args(["--sandbox-root", sb.root.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let mut c = sb.conn();
    let ids: Vec<u64> = c
        .query("SELECT ID FROM information_schema.PROCESSLIST WHERE DB = 'sbtest' AND ID <> CONNECTION_ID()")
        .unwrap();
    assert!(!ids.is_empty(), "the benchmark's sessions are visible");
    for id in ids {
        let _ = c.query_drop(format!("KILL CONNECTION {id}"));
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert!(j["reconnects"].as_u64().unwrap() >= 1, "{j}");
    assert!(j["transactions"].as_u64().unwrap() > 0, "{j}");
}

/// innops run with sysbench's own connection flags (no --sandbox): the line a DBA already has.
fn sysbench_line(sb: &Sandboxed, words: &[&str]) -> Output {
    let mut all: Vec<String> = vec!["bench".into()];
    all.extend(words.iter().map(|s| s.to_string()));
    all.push(format!("--mysql-socket={}", sb.sandbox.socket.display()));
    all.extend(["--mysql-user=root".into(), "--db-driver=mysql".into()]);
    crate::common::run_innops(&all, &[])
}

fn scalar(sb: &Sandboxed, sql: &str) -> i64 {
    let v: Option<Option<i64>> = sb.conn().query_first(sql).unwrap();
    v.flatten().unwrap_or(0)
}

fn checksum(sb: &Sandboxed, table: &str) -> i64 {
    let row: Option<(String, Option<i64>)> = sb
        .conn()
        .query_first(format!("CHECKSUM TABLE {table}"))
        .unwrap();
    row.unwrap().1.unwrap()
}

#[test]
fn a_sysbench_command_line_runs_with_sysbench_replaced_by_innops_bench() {
    let sb = Sandboxed::new("benchline");
    let tables = ["--mysql-db=sbtest", "--tables=2", "--table-size=1000"];
    ok(&sysbench_line(
        &sb,
        &[&["oltp_read_write"][..], &tables, &["prepare"]].concat(),
    ));
    assert_eq!(table_count(&sb, "sbtest"), 2);
    assert_eq!(scalar(&sb, "SELECT COUNT(*) FROM sbtest.sbtest2"), 1000);
    let run = sysbench_line(
        &sb,
        &[
            &["oltp_read_write"][..],
            &tables,
            &[
                "run",
                "--time=2",
                "--threads=2",
                "--rand-type=zipfian",
                "--percentile=99",
                "--histogram",
                "--rand-seed=5",
            ],
        ]
        .concat(),
    );
    let text = &ok(&run).stdout;
    for part in [
        "Random numbers distribution: zipfian",
        "seed (5)",
        "Latency histogram (values are in milliseconds)",
        "99th percentile:",
        "transactions:",
    ] {
        assert!(text.contains(part), "no {part:?} in:\n{text}");
    }
    assert!(!text.contains("95th percentile:"), "{text}");
    let clean = sysbench_line(
        &sb,
        &[&["oltp_read_write"][..], &tables, &["cleanup"]].concat(),
    );
    assert!(
        ok(&clean)
            .stdout
            .contains("dropped sbtest.sbtest1, sbtest2"),
        "{clean:?}"
    );
    assert_eq!(table_count(&sb, "sbtest"), 0);
    // A driver other than mysql is refused in one sentence.
    let pg = crate::common::run_innops(
        &[
            "bench".into(),
            "oltp_read_write".into(),
            "run".into(),
            "--db-driver=pgsql".into(),
        ],
        &[],
    );
    assert_eq!(pg.code, 2, "{pg:?}");
    assert!(pg.error_line().contains("--db-driver=mysql"), "{pg:?}");
}

/// Run one workload on a prepared sbtest1 of 1000 rows with one thread and return its JSON. Each call gives
/// its own seed: a seed repeated would draw the same (c, id) pairs again, and an UPDATE that writes a row's
/// own value back changes nothing, which sysbench counts as "other".
fn run_json(sb: &Sandboxed, workload: &str, extra: &[&str]) -> serde_json::Value {
    ok(&sb.innops(
        &[
            &[
                workload,
                "run",
                "--table-size=1000",
                "--threads=1",
                "--format=json",
            ][..],
            extra,
        ]
        .concat(),
    ))
    .json()
}

#[test]
fn each_new_workload_changes_the_rows_it_should_and_no_others() {
    let sb = Sandboxed::new("benchnew");
    ok(&sb.innops(&["bench", "prepare", "--table-size=1000"]));
    let (count, sum_k) = (
        "SELECT COUNT(*) FROM sbtest.sbtest1",
        "SELECT SUM(k) FROM sbtest.sbtest1",
    );
    let sum_c = "SELECT SUM(CRC32(c)) FROM sbtest.sbtest1";

    // update_index: k + 1 per write, c untouched, no row added or lost.
    let (k0, c0) = (scalar(&sb, sum_k), scalar(&sb, sum_c));
    let j = run_json(
        &sb,
        "bench",
        &[
            "--workload=oltp_update_index",
            "--rand-seed=28",
            "--events=300",
            "--time=0",
        ],
    );
    assert_eq!(j["transactions"], 300, "{j}");
    assert_eq!(j["writes"], 300, "{j}");
    assert_eq!(scalar(&sb, sum_k), k0 + 300);
    assert_eq!((scalar(&sb, sum_c), scalar(&sb, count)), (c0, 1000));

    // update_non_index: c changes, k does not.
    let (k1, c1) = (scalar(&sb, sum_k), scalar(&sb, sum_c));
    let j = run_json(
        &sb,
        "bench",
        &[
            "--workload=oltp_update_non_index",
            "--rand-seed=11",
            "--events=200",
            "--time=0",
        ],
    );
    assert_eq!(j["writes"], 200, "{j}");
    assert_eq!(scalar(&sb, sum_k), k1);
    assert_ne!(scalar(&sb, sum_c), c1);
    assert_eq!(scalar(&sb, count), 1000);

    // select_random_points / ranges: reads only, the table as it was.
    let before = checksum(&sb, "sbtest.sbtest1");
    for w in ["select_random_points", "select_random_ranges"] {
        let j = run_json(
            &sb,
            "bench",
            &[&format!("--workload={w}"), "--events=100", "--time=0"],
        );
        assert_eq!(
            (
                j["transactions"].as_u64(),
                j["reads"].as_u64(),
                j["writes"].as_u64()
            ),
            (Some(100), Some(100), Some(0)),
            "{w}: {j}"
        );
    }
    assert_eq!(checksum(&sb, "sbtest.sbtest1"), before);

    // write_only: rows change, each deleted id comes back, so the count stays.
    let j = run_json(
        &sb,
        "bench",
        &[
            "--workload=oltp_write_only",
            "--rand-seed=29",
            "--events=100",
            "--time=0",
        ],
    );
    assert_eq!(
        (j["writes"].as_u64(), j["other"].as_u64()),
        (Some(400), Some(200)),
        "{j}"
    );
    assert_ne!(checksum(&sb, "sbtest.sbtest1"), before);
    assert_eq!(scalar(&sb, count), 1000);

    // delete: the rows gone are the writes it counted.
    let j = run_json(
        &sb,
        "bench",
        &[
            "--workload=oltp_delete",
            "--rand-seed=12",
            "--events=400",
            "--time=0",
            "--rand-type=uniform",
        ],
    );
    let deleted = j["writes"].as_i64().unwrap();
    assert!(deleted > 0 && j["transactions"] == 400, "{j}");
    assert_eq!(
        j["writes"].as_i64().unwrap() + j["other"].as_i64().unwrap(),
        400,
        "a delete that finds nothing is other: {j}"
    );
    assert_eq!(scalar(&sb, count), 1000 - deleted);
}

#[test]
fn bulk_insert_fills_one_table_per_thread_with_one_row_per_event() {
    let sb = Sandboxed::new("benchbulk");
    ok(&sb.innops(&["bench", "bulk_insert", "prepare", "--threads=2"]));
    assert_eq!(table_count(&sb, "sbtest"), 2);
    assert_eq!(scalar(&sb, "SELECT COUNT(*) FROM sbtest.sbtest2"), 0);
    let j = ok(&sb.innops(&[
        "bench",
        "bulk_insert",
        "run",
        "--threads=2",
        "--time=0",
        "--events=50000",
        "--format=json",
    ]))
    .json();
    assert_eq!(j["transactions"], 50000, "{j}");
    let rows = scalar(&sb, "SELECT COUNT(*) FROM sbtest.sbtest1")
        + scalar(&sb, "SELECT COUNT(*) FROM sbtest.sbtest2");
    assert_eq!(rows, 50000);
    assert_eq!(
        scalar(&sb, "SELECT SUM(id <> k) FROM sbtest.sbtest1"),
        0,
        "rows are (n, n)"
    );
    // Rows are sent in multi-row INSERTs: far fewer statements than rows.
    let writes = j["writes"].as_i64().unwrap();
    assert!((2..100).contains(&writes), "{j}");
    ok(&sb.innops(&["bench", "bulk_insert", "cleanup", "--threads=2"]));
    assert_eq!(table_count(&sb, "sbtest"), 0);
}

/// The statements a run sent, from the server's general log: (command type, text) of every statement
/// tagged `innops:bench:run` while `f` ran.
fn logged_statements(sb: &Sandboxed, f: impl FnOnce()) -> Vec<(String, String)> {
    let mut c = sb.conn();
    c.query_drop("SET GLOBAL log_output = 'TABLE'").unwrap();
    c.query_drop("TRUNCATE TABLE mysql.general_log").unwrap();
    c.query_drop("SET GLOBAL general_log = ON").unwrap();
    f();
    c.query_drop("SET GLOBAL general_log = OFF").unwrap();
    c.query(
        "SELECT command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log \
         WHERE argument LIKE '%innops:bench:run%' AND command_type IN ('Query', 'Execute')",
    )
    .unwrap()
}

/// sysbench's (reads, writes, other) per transaction with extra options, on the sandbox's sbtest tables.
fn sysbench_mix_with(sb: &Sandboxed, workload: &str, extra: &[&str]) -> (f64, f64, f64) {
    let out = Command::new("sysbench")
        .args([
            "--db-driver=mysql",
            &format!("--mysql-socket={}", sb.sandbox.socket.display()),
            "--mysql-user=root",
            "--mysql-db=sbtest",
            "--table-size=500",
            "--threads=1",
            "--events=40",
            "--time=0",
        ])
        .args(extra)
        .args([workload, "run"])
        .output()
        .unwrap_or_else(|e| panic!("{NO_SYSBENCH} ({e})"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "sysbench {workload} {extra:?} failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let field = |name: &str| -> f64 {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in sysbench output:\n{text}"))
    };
    let txns = field("transactions:");
    (
        field("read:") / txns,
        field("write:") / txns,
        field("other:") / txns,
    )
}

#[test]
fn oltp_options_set_the_statements_of_each_transaction_as_sysbench_s_do() {
    let sb = Sandboxed::new("benchopts");
    ok(&sb.innops(&["bench", "prepare", "--table-size=500"]));
    let opts = [
        "--point_selects=3",
        "--simple_ranges=0",
        "--sum_ranges=2",
        "--skip_trx=on",
        "--range-size=7",
    ];
    let mut j = serde_json::Value::Null;
    let log = logged_statements(&sb, || {
        j = ok(&sb.innops(
            &[
                &[
                    "bench",
                    "oltp_read_write",
                    "run",
                    "--table-size=500",
                    "--events=50",
                    "--time=0",
                    "--rand-seed=3",
                    "--format=json",
                ][..],
                &opts,
            ]
            .concat(),
        ))
        .json();
    });
    assert_eq!(j["transactions"], 50, "{j}");
    // 3 point selects + 2 SUM ranges + 1 ORDER BY + 1 DISTINCT; 4 writes; no BEGIN/COMMIT.
    assert_eq!(
        (
            j["reads"].as_u64(),
            j["writes"].as_u64(),
            j["other"].as_u64()
        ),
        (Some(350), Some(200), Some(0)),
        "{j}"
    );
    let count = |starts: &str| {
        log.iter()
            .filter(|(_, sql)| sql.starts_with(starts))
            .count()
    };
    let tag = "/* innops:bench:run */";
    assert_eq!(
        count(&format!("SELECT {tag} c FROM sbtest1 WHERE id=")),
        150
    );
    assert_eq!(count(&format!("SELECT {tag} SUM(k)")), 100);
    let plain_ranges = log
        .iter()
        .filter(|(_, s)| s.starts_with(&format!("SELECT {tag} c FROM")) && s.contains("BETWEEN"))
        .filter(|(_, s)| !s.contains("ORDER BY"))
        .count();
    assert_eq!(plain_ranges, 0, "--simple_ranges=0");
    assert_eq!(count(&format!("SELECT {tag} DISTINCT")), 50);
    assert_eq!(count(&format!("UPDATE {tag} sbtest1 SET k=k+1")), 50);
    assert_eq!(count(&format!("DELETE {tag}")), 50);
    assert_eq!(count(&format!("INSERT {tag}")), 50);
    assert_eq!(count("BEGIN") + count("COMMIT"), 0, "--skip_trx");
    assert!(
        log.iter().all(|(t, _)| t == "Execute"),
        "all prepared, as sysbench's"
    );
    // Every range spans --range_size ids: BETWEEN id AND id + 6.
    for (_, s) in log.iter().filter(|(_, s)| s.contains("BETWEEN")) {
        let nums: Vec<i64> = s
            .split("BETWEEN ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        assert_eq!(nums[1] - nums[0], 6, "{s}");
    }

    // The same options give sysbench's own mix, here and with the ranges off.
    if let Err(e) = Command::new("sysbench").arg("--version").output() {
        panic!("{NO_SYSBENCH} ({e})");
    }
    for (workload, extra) in [
        ("oltp_read_write", &opts[..]),
        (
            "oltp_read_only",
            &["--range_selects=off", "--point_selects=4"][..],
        ),
        (
            "oltp_write_only",
            &[
                "--index_updates=2",
                "--non_index_updates=0",
                "--delete_inserts=3",
            ][..],
        ),
        ("oltp_update_index", &["--index_updates=3"][..]),
    ] {
        let theirs = sysbench_mix_with(&sb, workload, extra);
        let j = ok(&sb.innops(
            &[
                &[
                    "bench",
                    workload,
                    "run",
                    "--table-size=500",
                    "--events=40",
                    "--time=0",
                    "--format=json",
                ][..],
                extra,
            ]
            .concat(),
        ))
        .json();
        let t = j["transactions"].as_f64().unwrap();
        let ours = (
            j["reads"].as_f64().unwrap() / t,
            j["writes"].as_f64().unwrap() / t,
            j["other"].as_f64().unwrap() / t,
        );
        assert_eq!(ours, theirs, "{workload} {extra:?}: innops vs sysbench");
    }
}

#[test]
fn write_options_change_the_rows_they_name_and_no_others() {
    let sb = Sandboxed::new("benchwopts");
    ok(&sb.innops(&["bench", "prepare", "--table-size=1000"]));
    let (count, sum_k) = (
        "SELECT COUNT(*) FROM sbtest.sbtest1",
        "SELECT SUM(k) FROM sbtest.sbtest1",
    );
    let sum_c = "SELECT SUM(CRC32(c)) + SUM(CRC32(pad)) FROM sbtest.sbtest1";
    let (k0, c0) = (scalar(&sb, sum_k), scalar(&sb, sum_c));
    // Two k updates per transaction, no c update, no delete/insert: k grows by 2 per transaction, nothing else moves.
    let j = run_json(
        &sb,
        "bench",
        &[
            "--workload=oltp_write_only",
            "--index_updates=2",
            "--non_index_updates=0",
            "--delete_inserts=0",
            "--rand-seed=41",
            "--events=100",
            "--time=0",
        ],
    );
    assert_eq!(
        (j["writes"].as_u64(), j["other"].as_u64()),
        (Some(200), Some(200)),
        "{j}"
    );
    assert_eq!(scalar(&sb, sum_k), k0 + 200);
    assert_eq!((scalar(&sb, sum_c), scalar(&sb, count)), (c0, 1000));
    // oltp_update_index takes --index_updates too.
    let j = run_json(
        &sb,
        "bench",
        &[
            "--workload=oltp_update_index",
            "--index-updates=3",
            "--rand-seed=42",
            "--events=50",
            "--time=0",
        ],
    );
    assert_eq!(j["writes"], 150, "{j}");
    assert_eq!(scalar(&sb, sum_k), k0 + 350);
    // --reconnect=10: a new connection after every 10th transaction, each counted.
    let before = scalar(
        &sb,
        "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'CONNECTIONS'",
    );
    let j = run_json(
        &sb,
        "bench",
        &[
            "--workload=oltp_point_select",
            "--reconnect=10",
            "--events=100",
            "--time=0",
        ],
    );
    assert_eq!(
        (j["transactions"].as_u64(), j["reconnects"].as_u64()),
        (Some(100), Some(10)),
        "{j}"
    );
    let after = scalar(
        &sb,
        "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'CONNECTIONS'",
    );
    assert!(after - before >= 11, "{before} → {after}");
}

fn show_create(sb: &Sandboxed, table: &str) -> String {
    let row: Option<(String, String)> = sb
        .conn()
        .query_first(format!("SHOW CREATE TABLE {table}"))
        .unwrap();
    let ddl = row.unwrap().1;
    // The next AUTO_INCREMENT value depends on how the rows were batched, not on the definition.
    ddl.split(' ')
        .filter(|w| !w.starts_with("AUTO_INCREMENT="))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn prepare_makes_the_table_sysbench_makes_with_the_same_options() {
    if let Err(e) = Command::new("sysbench").arg("--version").output() {
        panic!("{NO_SYSBENCH} ({e})");
    }
    let sb = Sandboxed::new("benchddl");
    sb.conn().query_drop("CREATE DATABASE theirs").unwrap();
    for opts in [
        &[][..],
        &[
            "--secondary=on",
            "--auto_inc=off",
            "--create_secondary=off",
            "--mysql_storage_engine=myisam",
        ],
        &["--auto_inc=off", "--mysql-storage-engine=aria"],
        &["--secondary", "--create_secondary=on"],
    ] {
        ok(&sb.innops(
            &[
                &[
                    "bench",
                    "oltp_read_write",
                    "prepare",
                    "--db=ours",
                    "--table-size=100",
                ][..],
                opts,
            ]
            .concat(),
        ));
        let out = Command::new("sysbench")
            .args([
                "--db-driver=mysql",
                &format!("--mysql-socket={}", sb.sandbox.socket.display()),
                "--mysql-user=root",
                "--mysql-db=theirs",
                "--table-size=100",
            ])
            .args(opts)
            .args(["oltp_read_write", "prepare"])
            .output()
            .unwrap();
        assert!(out.status.success(), "sysbench prepare {opts:?}: {out:?}");
        assert_eq!(
            show_create(&sb, "ours.sbtest1"),
            show_create(&sb, "theirs.sbtest1"),
            "{opts:?}"
        );
        // The ids are 1..100 whether the server or the client numbers them.
        assert_eq!(
            scalar(
                &sb,
                "SELECT COUNT(DISTINCT id) * 1000000 + MIN(id) * 1000 + MAX(id) FROM ours.sbtest1"
            ),
            100_001_100,
            "{opts:?}"
        );
        ok(&sb.innops(&["bench", "oltp_read_write", "cleanup", "--db=ours"]));
        sb.conn().query_drop("DROP TABLE theirs.sbtest1").unwrap();
    }
    // sysbench 1.1's --create_table_options goes at the end of CREATE TABLE.
    ok(&sb.innops(&[
        "bench",
        "oltp_insert",
        "prepare",
        "--db=ours",
        "--table-size=10",
        "--auto_inc=off",
        "--create_table_options=COMMENT='from innops'",
    ]));
    assert!(show_create(&sb, "ours.sbtest1").contains("COMMENT='from innops'"));
    // oltp_insert with --auto_inc=off sends its own unique ids.
    let j = run_json(
        &sb,
        "bench",
        &[
            "--workload=oltp_insert",
            "--db=ours",
            "--auto_inc=off",
            "--events=200",
            "--time=0",
        ],
    );
    assert_eq!(j["writes"], 200, "{j}");
    assert_eq!(scalar(&sb, "SELECT COUNT(*) FROM ours.sbtest1"), 210);
}

#[test]
fn an_option_sysbench_does_not_have_is_refused_by_name() {
    let out = crate::common::run_innops(
        &[
            "bench".into(),
            "oltp_read_write".into(),
            "run".into(),
            "--point_selects=2".into(),
            "--bogus_opt=1".into(),
        ],
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("'--bogus_opt'"), "{out:?}");
    // An oltp option given to a script that has none is refused in one sentence, before connecting.
    let out = crate::common::run_innops(
        &[
            "bench".into(),
            "bulk_insert".into(),
            "run".into(),
            "--skip_trx".into(),
        ],
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.error_line()
            .contains("--skip_trx is an option of the oltp_* scripts"),
        "{out:?}"
    );
}
