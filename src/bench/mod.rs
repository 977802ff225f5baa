//! Benchmarks around plans: a workload run for a fixed time on a few threads, with throughput, latency
//! percentiles from an HDR histogram, and server-side I/O counters per transaction.
//!
//! For now the one workload is a simple write mix (an insert and an update by primary key per transaction) in
//! the `innops_bench` schema; the sysbench-compatible workloads replace it (issue: benchmarks).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mysql::prelude::Queryable;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::target::connect::Target;

/// Status counters measured as deltas per transaction.
pub const COUNTERS: [&str; 5] = [
    "Innodb_data_written",
    "Innodb_os_log_written",
    "Innodb_dblwr_pages_written",
    "Innodb_pages_written",
    "Innodb_buffer_pool_reads",
];

/// The benchmark a plan runs before and after it changes the server.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlanBench {
    pub workload: String,
    pub threads: u32,
    pub time: Duration,
    pub seed: u64,
    pub db: String,
    pub table_size: u64,
}

impl PlanBench {
    pub fn writes(time: Duration) -> PlanBench {
        PlanBench {
            workload: "write".into(),
            threads: 2,
            time,
            seed: 1,
            db: "innops_bench".into(),
            table_size: 10_000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Latency {
    pub min: f64,
    pub avg: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BenchResult {
    pub workload: String,
    pub threads: u32,
    pub time_s: f64,
    pub transactions: u64,
    pub queries: u64,
    pub errors: u64,
    pub tps: f64,
    pub qps: f64,
    /// Milliseconds.
    pub latency_ms: Latency,
    /// Server-side counter deltas divided by transactions.
    pub per_transaction: BTreeMap<String, f64>,
}

/// After relative to before, in percent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    pub tps_pct: f64,
    pub p95_pct: f64,
    pub avg_pct: f64,
}

pub fn compare(before: &BenchResult, after: &BenchResult) -> Comparison {
    fn pct(b: f64, a: f64) -> f64 {
        if b == 0.0 {
            0.0
        } else {
            (a - b) / b * 100.0
        }
    }
    Comparison {
        tps_pct: pct(before.tps, after.tps),
        p95_pct: pct(before.latency_ms.p95, after.latency_ms.p95),
        avg_pct: pct(before.latency_ms.avg, after.latency_ms.avg),
    }
}

pub fn render_comparison(b: &BenchResult, a: &BenchResult) -> String {
    let c = compare(b, a);
    format!(
        "  {:<14}{:>12}{:>12}{:>10}\n  {:<14}{:>12.1}{:>12.1}{:>+9.1}%\n  {:<14}{:>12.2}{:>12.2}{:>+9.1}%\n",
        "", "before", "after", "change", "tps", b.tps, a.tps, c.tps_pct, "p95 ms", b.latency_ms.p95, a.latency_ms.p95, c.p95_pct
    )
}

fn status_counters(conn: &mut mysql::Conn) -> anyhow::Result<BTreeMap<String, u64>> {
    let rows: Vec<(String, String)> =
        conn.query("SHOW /* innops:bench:counters */ GLOBAL STATUS LIKE 'Innodb_%'")?;
    Ok(rows
        .into_iter()
        .filter(|(k, _)| COUNTERS.contains(&k.as_str()))
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect())
}

/// Run the plan's workload once and return its figures. Creates its schema and table when missing.
pub fn plan_bench(
    target: &Target,
    spec: &PlanBench,
    procedure: &str,
    abort: &AtomicBool,
) -> anyhow::Result<BenchResult> {
    let tag = format!("/* innops:{procedure}:bench */");
    let db = crate::sql::quote_ident(&spec.db);
    let mut conn = target.connect()?;
    conn.query_drop(format!("CREATE DATABASE {tag} IF NOT EXISTS {db}"))?;
    conn.query_drop(format!(
        "CREATE TABLE {tag} IF NOT EXISTS {db}.`writes` (id INT UNSIGNED NOT NULL PRIMARY KEY, k INT UNSIGNED NOT NULL, \
         c CHAR(120) NOT NULL, KEY k_1 (k)) ENGINE=InnoDB"
    ))?;
    let before = status_counters(&mut conn)?;
    let deadline = Instant::now() + spec.time;
    let started = Instant::now();
    let results: Vec<anyhow::Result<(Histogram<u64>, u64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..spec.threads.max(1))
            .map(|t| {
                let (tag, db) = (&tag, &db);
                s.spawn(move || -> anyhow::Result<(Histogram<u64>, u64, u64)> {
                    let mut conn = target.connect()?;
                    let mut rng =
                        rand::rngs::SmallRng::seed_from_u64(spec.seed.wrapping_add(t as u64));
                    let ins = conn.prep(format!(
                        "REPLACE {tag} INTO {db}.`writes` (id, k, c) VALUES (?, ?, ?)"
                    ))?;
                    let upd = conn.prep(format!(
                        "UPDATE {tag} {db}.`writes` SET k = k + 1 WHERE id = ?"
                    ))?;
                    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
                    let (mut txns, mut errors) = (0u64, 0u64);
                    while Instant::now() < deadline && !abort.load(Ordering::SeqCst) {
                        let id = rng.gen_range(1..=spec.table_size.max(1));
                        let t0 = Instant::now();
                        let r = conn
                            .exec_drop(
                                &ins,
                                (id, rng.gen::<u32>(), format!("{:0>120}", rng.gen::<u64>())),
                            )
                            .and_then(|_| conn.exec_drop(&upd, (id,)));
                        match r {
                            Ok(()) => {
                                hist.record((t0.elapsed().as_micros() as u64).max(1))?;
                                txns += 1;
                            }
                            Err(_) => errors += 1,
                        }
                    }
                    Ok((hist, txns, errors))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread panicked"))
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let after = status_counters(&mut conn)?;
    let mut hist = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let (mut txns, mut errors) = (0, 0);
    for r in results {
        let (h, t, e) = r?;
        hist.add(h)?;
        txns += t;
        errors += e;
    }
    let ms = |us: u64| us as f64 / 1000.0;
    let per_txn = COUNTERS
        .iter()
        .filter_map(|k| {
            let d = after.get(*k)?.saturating_sub(*before.get(*k)?);
            Some((
                k.to_string(),
                if txns == 0 {
                    0.0
                } else {
                    d as f64 / txns as f64
                },
            ))
        })
        .collect();
    Ok(BenchResult {
        workload: spec.workload.clone(),
        threads: spec.threads,
        time_s: elapsed,
        transactions: txns,
        queries: txns * 2,
        errors,
        tps: txns as f64 / elapsed,
        qps: (txns * 2) as f64 / elapsed,
        latency_ms: Latency {
            min: if txns == 0 { 0.0 } else { ms(hist.min()) },
            avg: hist.mean() / 1000.0,
            p95: ms(hist.value_at_quantile(0.95)),
            p99: ms(hist.value_at_quantile(0.99)),
            max: ms(hist.max()),
        },
        per_transaction: per_txn,
    })
}
