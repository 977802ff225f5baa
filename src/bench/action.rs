//! `innops bench prepare|run|cleanup` below the command line: validated [`Settings`] (built from the flags by
//! the command layer) run here, and print sysbench's text or JSON.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::run::RunSpec;
use super::workloads::Workload;
use super::{prepare, prewarm, run, stats, table, BenchResult};
use crate::error::{bad_input, Failure};
use crate::server::connect::Target;

/// Which of sysbench's commands to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Create the sbtest tables and load them.
    Prepare,
    /// Run the workload and report sysbench's figures.
    Run,
    /// Drop the sbtest tables.
    Cleanup,
    /// Read the tables through every index into the buffer pool.
    Prewarm,
}

impl Action {
    /// The name in statement tags and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Action::Prepare => "prepare",
            Action::Run => "run",
            Action::Cleanup => "cleanup",
            Action::Prewarm => "prewarm",
        }
    }
}

/// What `innops bench` will do, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub action: Action,
    pub spec: RunSpec,
    pub json: bool,
    /// The run's text report (header, interval lines, figures); off under sysbench's `--verbosity` 0 to 2.
    pub report: bool,
}

fn abort_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    // Only one handler per process; if one is installed already, Ctrl-C keeps its behaviour.
    let _ = ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            std::process::exit(crate::error::EXIT_INTERRUPTED);
        }
        let _ = writeln!(
            std::io::stderr(),
            "\ninnops: stopping the benchmark (Ctrl-C again to quit at once)"
        );
    });
    flag
}

fn print_json(v: &serde_json::Value) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", serde_json::to_string_pretty(v)?)?;
    crate::error::note_json_printed();
    Ok(())
}

/// The JSON of a run: the result, plus tps, qps and the latency figures as top-level numbers for scripts.
pub fn result_json(r: &BenchResult) -> serde_json::Value {
    let mut v = serde_json::to_value(r).unwrap_or_default();
    if let Some(m) = v.as_object_mut() {
        let l = &r.latency_ms;
        for (k, x) in [
            ("latency_min_ms", l.min),
            ("latency_avg_ms", l.avg),
            ("latency_p95_ms", l.p95),
            ("latency_p99_ms", l.p99),
            ("latency_max_ms", l.max),
        ] {
            m.insert(k.into(), serde_json::json!(x));
        }
    }
    v
}

pub fn execute(target: &Target, s: &Settings) -> anyhow::Result<()> {
    let spec = &s.spec;
    match (&spec.workload, s.action) {
        (Workload::Table { db, table }, Action::Prepare | Action::Cleanup) => {
            // Nothing to create or drop: show what a run would send, which also checks the table is usable.
            let mut conn = target.connect()?;
            let plan = table::plan(&mut conn, db, table, spec)?;
            let statements: Vec<String> = [plan.point_sql.clone(), plan.range_sql.clone()]
                .into_iter()
                .chain(plan.index_sql.iter().cloned())
                .collect();
            if s.json {
                print_json(&serde_json::json!({
                    "workload": spec.workload.name(),
                    "key": plan.shape.key,
                    "indexes": plan.shape.indexes.iter().map(|(n, c)| serde_json::json!({"name": n, "columns": c})).collect::<Vec<_>>(),
                    "sampled_rows": plan.samples.len(),
                    "statements": statements,
                }))?;
            } else {
                let what = if s.action == Action::Prepare {
                    "nothing to prepare"
                } else {
                    "nothing to clean up"
                };
                println!("{what}: the table workload only reads {db}.{table}");
                println!(
                    "key {} ({}), {} secondary index(es), {} rows sampled; a transaction sends:",
                    plan.shape.key_name,
                    plan.shape.key.join(", "),
                    plan.shape.indexes.len(),
                    plan.samples.len()
                );
                println!("  BEGIN\n  10 × {}\n  {}", plan.point_sql, plan.range_sql);
                for sql in &plan.index_sql {
                    println!("  {sql}");
                }
                println!("  COMMIT");
            }
            Ok(())
        }
        (_, Action::Prepare) => {
            let sum = prepare::prepare(target, spec, false, s.json)?;
            if s.json {
                print_json(&serde_json::to_value(&sum)?)?;
            } else {
                println!(
                    "prepared {}.{} ({} rows) in {:.1} s on {}",
                    sum.db,
                    sum.tables.join(", "),
                    sum.rows,
                    sum.seconds,
                    target.label
                );
            }
            Ok(())
        }
        (_, Action::Cleanup) => {
            let sum = prepare::cleanup(target, spec)?;
            if s.json {
                print_json(&serde_json::to_value(&sum)?)?;
            } else if sum.tables.is_empty() {
                println!(
                    "no sbtest tables in {} on {}: nothing dropped",
                    sum.db, target.label
                );
            } else {
                println!(
                    "dropped {}.{} on {}",
                    sum.db,
                    sum.tables.join(", "),
                    target.label
                );
            }
            Ok(())
        }
        (_, Action::Run) => run_cmd(target, s),
        (_, Action::Prewarm) => prewarm_cmd(target, s),
    }
}

fn prewarm_cmd(target: &Target, s: &Settings) -> anyhow::Result<()> {
    let spec = &s.spec;
    let mut conn = target.connect()?;
    let (db, tables) = match spec.workload.real_table() {
        Some((db, table)) => (db.to_string(), vec![table.to_string()]),
        None => (
            spec.db.clone(),
            prewarm::sbtest_tables(&mut conn, target, spec)?,
        ),
    };
    let sum = prewarm::prewarm(&mut conn, &db, tables, &spec.tag, s.json)?;
    if s.json {
        print_json(&serde_json::to_value(&sum)?)?;
    } else {
        println!(
            "prewarmed {}.{} ({} indexes read whole) in {:.1} s on {}",
            sum.db,
            sum.tables.join(", "),
            sum.indexes,
            sum.seconds,
            target.label
        );
    }
    Ok(())
}

fn run_cmd(target: &Target, s: &Settings) -> anyhow::Result<()> {
    let spec = &s.spec;
    if !matches!(spec.workload, Workload::Table { .. }) {
        let mut conn = target.connect()?;
        let missing = prepare::missing_tables(&mut conn, &spec.db, spec.tables, &spec.tag)?;
        if let Some(t) = missing.first() {
            return Err(bad_input(format!(
                "table {}.sbtest{t} does not exist on {}: run `{}` first",
                spec.db,
                target.label,
                prepare_line(spec)
            )));
        }
        if spec.workload == Workload::BulkInsert {
            prepare::check_bulk_tables(&mut conn, spec, &target.label, &prepare_line(spec))?;
        }
    }
    let abort = abort_flag();
    let text = !s.json && s.report;
    if text {
        let header = BenchResult {
            workload: spec.workload.name(),
            threads: spec.threads,
            seed: spec.seed,
            rand_type: spec.rand_type.as_str().into(),
            warmup_s: spec.warmup.as_secs_f64(),
            ..empty_result()
        };
        print!(
            "{}",
            stats::render_header(&header, spec.report_interval.as_secs(), spec.rate)
        );
        println!("Initializing worker threads...\n\nThreads started!\n");
        std::io::stdout().flush().ok();
    }
    let pct = spec.percentile;
    let result = run::run(target, spec, &abort, &mut |line| {
        if text {
            println!("{}", stats::render_interval(line, pct));
            std::io::stdout().flush().ok();
        }
    })?;
    if s.json {
        print_json(&result_json(&result))?;
    } else if text {
        if !result.intervals.is_empty() {
            println!();
        }
        print!("{}", stats::render_result(&result));
    }
    if abort.load(Ordering::SeqCst) {
        return Err(Failure::Interrupted(
            "benchmark interrupted: the figures cover the time it ran".into(),
        )
        .into());
    }
    Ok(())
}

/// The command that makes the tables this run needs: the workload named (bulk_insert's tables are not the
/// oltp scripts'), with the flags that shape them.
fn prepare_line(spec: &RunSpec) -> String {
    if spec.workload == Workload::BulkInsert {
        // bulk_insert.lua makes one table per thread, empty.
        format!(
            "innops bench bulk_insert prepare --db {} --threads {}",
            spec.db, spec.tables
        )
    } else {
        format!(
            "innops bench {} prepare --db {} --tables {} --table-size {}",
            spec.workload, spec.db, spec.tables, spec.table_size
        )
    }
}

fn empty_result() -> BenchResult {
    BenchResult {
        workload: String::new(),
        threads: 0,
        time_s: 0.0,
        transactions: 0,
        queries: 0,
        reads: 0,
        writes: 0,
        other: 0,
        errors: 0,
        reconnects: 0,
        tps: 0.0,
        qps: 0.0,
        latency_ms: Default::default(),
        per_transaction: Default::default(),
        counters: Default::default(),
        intervals: Vec::new(),
        fairness: Default::default(),
        seed: 0,
        rand_type: String::new(),
        tables: 0,
        table_size: 0,
        warmup_s: 0.0,
        percentile: 95,
        histogram: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_tps_qps_and_latency_at_the_top() {
        let r = BenchResult {
            tps: 10.0,
            qps: 200.0,
            latency_ms: crate::bench::Latency {
                p95: 4.0,
                ..Default::default()
            },
            ..empty_result()
        };
        let v = result_json(&r);
        assert_eq!(v["tps"], 10.0);
        assert_eq!(v["qps"], 200.0);
        assert_eq!(v["latency_p95_ms"], 4.0);
        assert_eq!(v["latency_ms"]["p95"], 4.0);
    }
}
