//! sysbench's command lines on a real server: the `[sandbox]` lines of tests/cases/bench/sysbench-lines.txt run
//! in order, `prewarm` judged by the buffer pool's own page list, `--tx-rate` latency with its queueing, a test's
//! `help`, `--mysql-ssl` over TCP, select_random_*'s own options in the general log, and bulk_insert's refusals
//! naming the commands that fix them.

use mysql::prelude::Queryable;

use super::{ok, scalar, sysbench_line, table_count};
use crate::common::{run_innops, sandbox_cmd, Sandboxed};
use innops::server::sandbox::SandboxOptions;

const CORPUS: &str = include_str!("../cases/bench/sysbench-lines.txt");

#[test]
fn the_sandbox_lines_of_the_sysbench_corpus_run_in_order() {
    let sb = Sandboxed::new("benchcorpus");
    let lines: Vec<&str> = CORPUS
        .lines()
        .filter_map(|l| l.strip_prefix("[sandbox]"))
        .collect();
    assert!(lines.len() >= 15, "{}", lines.len());
    for line in lines {
        assert!(!line.contains(['"', '\'']), "split by blanks only: {line}");
        let words: Vec<&str> = line.split_whitespace().collect();
        let out = sysbench_line(&sb, &words);
        assert_eq!(out.code, 0, "{line}\n{out:?}");
        // What a few lines must show beyond their exit.
        let has = |s: &str| out.stdout.contains(s) || out.stderr.contains(s);
        if line.contains("select_random_ranges.lua") && line.ends_with(" prepare") {
            assert_eq!(
                table_count(&sb, "sbtest"),
                4,
                "prepare makes --tables tables"
            );
        }
        if line.contains("select_random_ranges.lua") && line.ends_with(" run") {
            assert!(has("reads sbtest1 only"), "{out:?}");
            assert!(has("transactions:                        100"), "{out:?}");
        }
        if line.contains("--verbosity=2 run") {
            assert_eq!(out.stdout, "", "no report below --verbosity=3: {out:?}");
        }
        if line.contains("bulk_insert.lua") && line.ends_with(" run") {
            assert_eq!(
                scalar(&sb, "SELECT COUNT(*) FROM sbtest.sbtest1")
                    + scalar(&sb, "SELECT COUNT(*) FROM sbtest.sbtest2"),
                100
            );
        }
        if line.contains("--max-requests=50") {
            assert!(has("transactions:                        50 "), "{out:?}");
            assert!(
                has("Number of threads: 2\nTarget transaction rate: 1000/sec\n"),
                "{out:?}"
            );
            for old in ["--max-time", "--max-requests", "--tx-rate", "--num-threads"] {
                assert!(
                    has(&format!("note: {old} is sysbench's old name")),
                    "{old}: {out:?}"
                );
            }
        }
        if line.contains("--forced-shutdown=1") {
            assert!(
                has("note: --forced-shutdown: innops does not cut"),
                "{out:?}"
            );
        }
        if line.contains("--mysql-compression run") {
            assert!(has("stay uncompressed"), "{out:?}");
        }
        if line.ends_with(" cleanup") {
            assert_eq!(table_count(&sb, "sbtest"), 0, "{line}");
        }
    }
}

#[test]
fn a_test_s_help_lists_its_own_options_as_sysbench_s_help_does() {
    let out = run_innops(
        &crate::common::args(&["bench", "oltp_read_write", "help"]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let mut lines = out.stdout.lines();
    assert_eq!(lines.next(), Some("oltp_read_write options:"));
    let rest: Vec<&str> = lines.collect();
    for opt in [
        "--point_selects=N",
        "--skip_trx[=on|off]",
        "--tables=N",
        "--mysql_storage_engine=STRING",
    ] {
        assert!(
            rest.iter().any(|l| l.trim_start().starts_with(opt)),
            "{opt}: {out:?}"
        );
    }
    assert!(
        !out.stdout.contains("--mysql-socket"),
        "the general flags are --help's: {out:?}"
    );
}

/// Pages of each index of sbtest.sbtest1 in the buffer pool now, and the leaf pages each has (InnoDB's own
/// statistics): (index, in the pool, leaf pages).
fn pool_pages(sb: &Sandboxed, table: &str) -> Vec<(String, i64, i64)> {
    sb.conn()
        .query(format!(
            "SELECT s.index_name, \
               (SELECT COUNT(*) FROM information_schema.INNODB_BUFFER_PAGE p \
                 WHERE p.TABLE_NAME = '`sbtest`.`{table}`' AND p.INDEX_NAME = s.index_name AND p.PAGE_TYPE = 'INDEX'), \
               s.stat_value \
             FROM mysql.innodb_index_stats s \
             WHERE s.database_name = 'sbtest' AND s.table_name = '{table}' AND s.stat_name = 'n_leaf_pages' \
             ORDER BY s.index_name"
        ))
        .unwrap()
}

#[test]
fn prewarm_reads_every_index_of_every_table_into_the_buffer_pool_and_logs_nothing() {
    let mut sb = Sandboxed::with(
        "benchwarm",
        SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra: vec![
                "innodb_buffer_pool_load_at_startup=OFF".into(),
                "innodb_buffer_pool_dump_at_shutdown=OFF".into(),
            ],
            binlog: true,
            ..Default::default()
        },
    );
    let tables = ["--tables=2", "--table-size=6000"];
    ok(&sb.innops(&[&["bench", "oltp_read_only", "prepare"][..], &tables].concat()));
    // A restart empties the buffer pool of them.
    sandbox_cmd(&sb, "stop");
    sandbox_cmd(&sb, "start");
    sb.reopen();
    let before = pool_pages(&sb, "sbtest2");
    assert_eq!(before.len(), 2, "PRIMARY and k_2: {before:?}");
    assert!(
        before.iter().all(|(_, pooled, leaves)| pooled < leaves),
        "the restart left them out of the pool: {before:?}"
    );
    let binlog = |sb: &Sandboxed| -> (String, u64) {
        let row: mysql::Row = sb
            .conn()
            .query_first("SHOW MASTER STATUS")
            .unwrap()
            .unwrap();
        (row.get(0).unwrap(), row.get(1).unwrap())
    };
    let logged = binlog(&sb);
    let out = sb.innops(&[&["bench", "oltp_read_only", "prewarm"][..], &tables].concat());
    ok(&out);
    assert!(
        out.stdout
            .contains("prewarmed sbtest.sbtest1, sbtest2 (4 indexes read whole)"),
        "{out:?}"
    );
    assert!(
        out.stderr.contains("Prewarming table sbtest.sbtest2"),
        "{out:?}"
    );
    for t in ["sbtest1", "sbtest2"] {
        let after = pool_pages(&sb, t);
        assert_eq!(after.len(), 2, "{after:?}");
        for (index, pooled, leaves) in &after {
            assert!(
                pooled >= leaves,
                "{t}.{index}: {pooled} pages in the pool, {leaves} leaves"
            );
        }
    }
    assert_eq!(
        binlog(&sb),
        logged,
        "ANALYZE NO_WRITE_TO_BINLOG and reads: nothing for a replica"
    );
    // Missing tables are named with the prepare that makes them.
    let out = sb.innops(&["bench", "oltp_read_only", "prewarm", "--tables=3"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.error_line().contains("sbtest3 does not exist")
            && out
                .error_line()
                .contains("innops bench oltp_read_only prepare"),
        "{out:?}"
    );
}

#[test]
fn under_tx_rate_latency_includes_the_time_an_event_waits_for_a_thread() {
    let sb = Sandboxed::new("benchrate");
    ok(&sb.innops(&["bench", "oltp_point_select", "prepare", "--table-size=100"]));
    // A million arrivals a second for 300 events: all arrive within 0.3 ms, and the one thread takes them one
    // after another, so event n waits for the n - 1 before it and the mean latency is about half the run; a
    // latency timed from when the thread took the event would be one statement's.
    let events = 300.0;
    let j = ok(&sb.innops(&[
        "bench",
        "oltp_point_select",
        "run",
        "--table-size=100",
        "--threads=1",
        "--time=0",
        "--max-requests=300",
        "--tx-rate=1000000",
        "--format=json",
    ]))
    .json();
    assert_eq!(j["transactions"], 300, "{j}");
    let per_event_ms = j["time_s"].as_f64().unwrap() * 1000.0 / events;
    let avg = j["latency_avg_ms"].as_f64().unwrap();
    assert!(
        avg > 20.0 * per_event_ms,
        "mean latency {avg} ms, {per_event_ms} ms per event: {j}"
    );
    // Without a rate the same events are timed each on its own.
    let j = ok(&sb.innops(&[
        "bench",
        "oltp_point_select",
        "run",
        "--table-size=100",
        "--threads=1",
        "--time=0",
        "--events=300",
        "--format=json",
    ]))
    .json();
    let per_event_ms = j["time_s"].as_f64().unwrap() * 1000.0 / events;
    assert!(
        j["latency_avg_ms"].as_f64().unwrap() <= per_event_ms * 1.01,
        "{j}"
    );
}

#[test]
fn a_bulk_insert_run_that_cannot_work_names_cleanup_and_prepare_not_ignore_errors() {
    let sb = Sandboxed::new("benchbulkfix");
    let run = |extra: &[&str]| {
        sb.innops(
            &[
                &["bench", "bulk_insert", "run", "--time=0", "--events=20"][..],
                extra,
            ]
            .concat(),
        )
    };
    // No tables: bulk_insert's own prepare, not the oltp tables `innops bench prepare` would make.
    let out = run(&["--threads=2"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.error_line()
            .contains("run `innops bench bulk_insert prepare --db sbtest --threads 2` first"),
        "{out:?}"
    );
    ok(&sb.innops(&["bench", "bulk_insert", "prepare", "--threads=2"]));
    ok(&run(&["--threads=2"]));
    // Run again: ids 1.. are there already, which a duplicate key would stop at the first INSERT.
    let out = run(&["--threads=2"]);
    assert_eq!(out.code, 1, "{out:?}");
    let line = out.error_line();
    // Which table holds rows depends on which thread took the 20 events: either is named.
    assert!(
        (line.contains("sbtest.sbtest1") || line.contains("sbtest.sbtest2"))
            && line.contains("holds rows already"),
        "{out:?}"
    );
    assert!(line.contains("`innops bench bulk_insert cleanup --db sbtest --threads 2` and `innops bench bulk_insert prepare --db sbtest --threads 2`"), "{out:?}");
    assert!(!out.stderr.contains("--ignore-errors"), "{out:?}");
    assert_eq!(
        scalar(&sb, "SELECT COUNT(*) FROM sbtest.sbtest1")
            + scalar(&sb, "SELECT COUNT(*) FROM sbtest.sbtest2"),
        20,
        "the refused run wrote nothing"
    );
    ok(&sb.innops(&["bench", "bulk_insert", "cleanup", "--threads=2"]));
    // An oltp table of the same name.
    ok(&sb.innops(&["bench", "oltp_read_write", "prepare", "--table-size=10"]));
    let out = run(&["--threads=1"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.error_line()
            .contains("has the columns (id, k, c, pad), not bulk_insert's (id, k)"),
        "{out:?}"
    );
    assert!(!out.stderr.contains("--ignore-errors"), "{out:?}");
}

#[test]
fn mysql_ssl_on_requires_tls_and_off_connects_plain_over_tcp() {
    let sb = Sandboxed::new("benchssl");
    // The sandbox's TCP login (its server offers no TLS).
    let cnf = format!(
        "--defaults-file={}",
        sb.sandbox.dir.join("client.cnf").display()
    );
    let line = |extra: &[&str]| {
        let mut all =
            crate::common::args(&["bench", "oltp_point_select", "--table-size=100", &cnf]);
        all.extend(crate::common::args(extra));
        run_innops(&all, &[])
    };
    ok(&line(&["prepare", "--mysql-ssl=off"]));
    for on in ["--mysql-ssl", "--mysql-ssl=on", "--mysql-ssl=REQUIRED"] {
        let out = line(&["run", "--events=5", "--time=0", on]);
        assert_eq!(out.code, 2, "{on}: {out:?}");
        assert!(
            out.error_line().contains("does not offer TLS"),
            "{on}: {out:?}"
        );
    }
    let out = line(&[
        "run",
        "--events=5",
        "--time=0",
        "--mysql-ssl=off",
        "--format=json",
    ]);
    assert_eq!(ok(&out).json()["transactions"], 5, "{out:?}");
}

#[test]
fn select_random_scripts_send_the_ranges_and_points_their_options_ask_for() {
    let sb = Sandboxed::new("benchrandopts");
    ok(&sb.innops(&[
        "bench",
        "select_random_ranges",
        "prepare",
        "--table-size=500",
    ]));
    // The statements of a 20-event run, without its check that the tables exist.
    let sent = |test: &str, extra: &[&str]| -> Vec<String> {
        let args = [
            &[
                "bench",
                test,
                "run",
                "--table-size=500",
                "--time=0",
                "--events=20",
            ][..],
            extra,
        ]
        .concat();
        super::logged_statements(&sb, || {
            ok(&sb.innops(&args));
        })
        .into_iter()
        .map(|(_, sql)| sql)
        .filter(|sql| sql.contains("FROM sbtest1"))
        .collect()
    };
    let ranges = sent(
        "select_random_ranges",
        &["--number_of_ranges=3", "--delta=2"],
    );
    assert_eq!(ranges.len(), 20, "{ranges:?}");
    for sql in &ranges {
        let widths: Vec<i64> = sql
            .split("BETWEEN ")
            .skip(1)
            .map(|r| {
                let (lo, rest) = r.split_once(" AND ").unwrap();
                let hi = rest.split_whitespace().next().unwrap();
                hi.parse::<i64>().unwrap() - lo.parse::<i64>().unwrap()
            })
            .collect();
        assert_eq!(widths, [2, 2, 2], "{sql}");
    }
    let points = sent("select_random_points", &["--random_points=4"]);
    assert_eq!(points.len(), 20, "{points:?}");
    for sql in &points {
        let list = sql.split("IN (").nth(1).unwrap().split(')').next().unwrap();
        assert_eq!(list.split(',').count(), 4, "{sql}");
    }
}
