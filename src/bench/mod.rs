//! Benchmarks: sysbench 1.0's OLTP workloads reimplemented (same statements, prepared where sysbench
//! prepares, same transaction mix, same `special` key distribution) plus a read workload generated from a real
//! table, with sysbench's figures — transactions, queries by class, tps, qps, ignored errors, reconnects,
//! latency percentiles from an HDR histogram, per-interval lines — and the server's I/O counters per
//! transaction. Plans use it to measure a server before and after they change it.
//!
//! Layout: [`workloads`] says what is sent, [`distribution`] how keys are drawn, [`run`] drives the threads
//! (each a `worker`),
//! [`prepare`] builds and drops the `sbtestN` tables, [`prewarm`] reads them into the buffer pool, [`table`] reads a real table's shape, [`stats`] turns
//! latencies into sysbench's text, [`action`] runs `innops bench`'s prepare, run and cleanup, and [`wire`]
//! carries the statements of a run over the connection's socket the way libmariadb does; [`during`] runs a plan's
//! workload for the whole plan (`--bench-during`) and [`tap`] takes the figures of a slice of a running workload;
//! [`sqlfile`] reads a workload given as SQL; [`noise`] judges a difference against the noise, and [`experiment`] pools an experiment's arms and judges them.
//! The run report that shows these figures (HTML, impact chart) is the plan's: `plan::report`. Nothing here
//! imports the plan: a plan measures with bench, never the reverse.

pub mod action;
pub mod distribution;
pub mod during;
pub mod experiment;
pub mod noise;
pub mod prepare;
pub mod prewarm;
pub mod run;
pub mod sqlfile;
pub mod stats;
pub mod table;
pub mod tap;
pub mod wire;
mod worker;
pub mod workloads;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::sql::Queryable;
use serde::{Deserialize, Serialize};

use crate::error::refused;
use crate::server::connect::Target;

pub use distribution::{RandParams, RandType};
pub use run::{IgnoreErrors, RunSpec};
pub use worker::DURING_LOCK_WAIT_S;
pub use workloads::Workload;

/// Status counters measured as deltas per transaction.
pub const COUNTERS: [&str; 5] = [
    "Innodb_data_written",
    "Innodb_os_log_written",
    "Innodb_dblwr_pages_written",
    "Innodb_pages_written",
    "Innodb_buffer_pool_reads",
];

/// The schema plans benchmark in, apart from the DBA's own `sbtest`.
pub const PLAN_DB: &str = "innops_bench";

/// The benchmark a plan runs before and after it changes the server: a sysbench workload on a small table set
/// of its own (1 table × 10,000 rows in `innops_bench`, prepared on first use), so it costs seconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PlanBench {
    pub workload: String,
    pub threads: u32,
    pub time: Duration,
    pub seed: u64,
    pub db: String,
    pub table_size: u64,
    #[serde(default = "one")]
    pub tables: u32,
    #[serde(default)]
    pub rand_type: RandType,
    /// `--bench-during`: the workload also runs for the whole plan, with this many threads, and gives the
    /// figures before and after ([`during`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<u32>,
}

fn one() -> u32 {
    1
}

impl PlanBench {
    /// sysbench's oltp_read_write: the default for plans on a writable server.
    pub fn read_write(time: Duration) -> PlanBench {
        PlanBench {
            workload: Workload::ReadWrite.name(),
            threads: 4,
            time,
            seed: 1,
            db: PLAN_DB.into(),
            table_size: 10_000,
            tables: 1,
            rand_type: RandType::Special,
            during: None,
        }
    }

    /// sysbench's oltp_read_only, for plans whose server ends read-only (it needs the tables prepared while the
    /// server was still writable, which the "before" run does).
    pub fn read_only(time: Duration) -> PlanBench {
        PlanBench {
            workload: Workload::ReadOnly.name(),
            ..PlanBench::read_write(time)
        }
    }

    /// The workload that can run on this server: read-only when the server is (`innodb_read_only` or
    /// `read_only`), else read/write.
    pub fn for_server(time: Duration, facts: &crate::server::facts::ServerFacts) -> PlanBench {
        if facts.var_on("innodb_read_only") || facts.var_on("read_only") {
            PlanBench::read_only(time)
        } else {
            PlanBench::read_write(time)
        }
    }

    /// The default plan workload; kept under its first name for the procedures that call it.
    pub fn writes(time: Duration) -> PlanBench {
        PlanBench::read_write(time)
    }

    /// What to run, validated.
    pub fn run_spec(&self, procedure: &str) -> anyhow::Result<RunSpec> {
        Ok(RunSpec {
            threads: self.threads.max(1),
            time: self.time,
            tables: self.tables.max(1),
            table_size: u32::try_from(self.table_size.max(1)).unwrap_or(u32::MAX),
            rand_type: self.rand_type,
            // One-second parts: the noise a change is judged against is measured from them (`noise`).
            report_interval: Duration::from_secs(1),
            ..RunSpec::new(
                Workload::parse(&self.workload)?,
                &self.db,
                &format!("/* innops:{procedure}:bench */"),
                self.seed,
            )
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Latency {
    pub min: f64,
    pub avg: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    /// Sum of all transaction latencies, as sysbench prints it.
    #[serde(default)]
    pub sum: f64,
    /// The `--percentile` the run asked for (95 by default).
    #[serde(default)]
    pub pctl: f64,
}

/// One `--report-interval` line.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Interval {
    /// Seconds since the measured run started, at the end of the interval.
    pub t: f64,
    pub threads: u32,
    pub tps: f64,
    pub qps: f64,
    pub reads_ps: f64,
    pub writes_ps: f64,
    pub other_ps: f64,
    pub p95_ms: f64,
    pub err_ps: f64,
    pub reconn_ps: f64,
    /// The interval's 99th percentile latency in ms (an experiment's per-arm p99 pools these).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub p99_ms: f64,
    /// How long the interval really was, in seconds (the last one of a stopped run is shorter).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seconds: f64,
    /// Transactions completed in the interval.
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub transactions: u64,
    /// Errors in the interval by server or client error code (counts, not rates; beside a plan only).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_codes: BTreeMap<u16, u64>,
    /// Beside a plan: each error at its own time (seconds after the interval's start) with its code, so a
    /// report can tell which step it happened in when a step ends inside the interval.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_at: Vec<(f64, u16)>,
    /// Beside a plan: the transactions completed in each tenth of the interval (ten counts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenths: Vec<u32>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_u64(x: &u64) -> bool {
    *x == 0
}

/// sysbench's "Threads fairness": how evenly the threads shared the work.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Fairness {
    pub events_avg: f64,
    pub events_stddev: f64,
    /// Seconds each thread spent inside transactions.
    pub exec_time_avg: f64,
    pub exec_time_stddev: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BenchResult {
    pub workload: String,
    pub threads: u32,
    /// sysbench's "total time": from the start of measurement until the last thread finished.
    pub time_s: f64,
    pub transactions: u64,
    /// All statements: reads + writes + other.
    pub queries: u64,
    /// Statements that returned a result set.
    #[serde(default)]
    pub reads: u64,
    /// Statements that changed rows.
    #[serde(default)]
    pub writes: u64,
    /// Everything else (BEGIN, COMMIT, a write that matched no row).
    #[serde(default)]
    pub other: u64,
    /// Ignored errors (deadlocks, lock wait timeouts by default); the transaction was restarted.
    pub errors: u64,
    #[serde(default)]
    pub reconnects: u64,
    pub tps: f64,
    pub qps: f64,
    /// Transaction latency in milliseconds.
    pub latency_ms: Latency,
    /// Server-side counter deltas divided by transactions.
    pub per_transaction: BTreeMap<String, f64>,
    /// Server-side counter deltas over the run.
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    #[serde(default)]
    pub intervals: Vec<Interval>,
    #[serde(default)]
    pub fairness: Fairness,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub rand_type: String,
    #[serde(default)]
    pub tables: u32,
    #[serde(default)]
    pub table_size: u32,
    #[serde(default)]
    pub warmup_s: f64,
    /// `--percentile`: which percentile `latency_ms.pctl` is (0: left out of the report).
    #[serde(default = "ninety_five")]
    pub percentile: u8,
    /// `--histogram`: transaction latencies as (upper bound in ms, count) rows, non-empty buckets only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histogram: Vec<(f64, u64)>,
}

fn ninety_five() -> u8 {
    95
}

/// After relative to before, in percent.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Comparison {
    pub tps_pct: f64,
    pub p95_pct: f64,
    pub avg_pct: f64,
    #[serde(default)]
    pub qps_pct: f64,
    #[serde(default)]
    pub p99_pct: f64,
    /// Whether the noise resolves the change of tps, qps and p95 ([`noise::resolve`] over the runs'
    /// one-second intervals); None when a run was too short to tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tps_noise: Option<noise::Resolution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qps_noise: Option<noise::Resolution>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_noise: Option<noise::Resolution>,
}

impl Comparison {
    /// What got worse beyond the noise (fewer transactions, a slower p95), in a phrase each; empty when
    /// nothing did or the noise could not be measured.
    pub fn regressions(&self) -> Vec<String> {
        let mut out = Vec::new();
        let resolved = |r: &Option<noise::Resolution>| r.as_ref().is_some_and(|r| r.resolved);
        if resolved(&self.tps_noise) && self.tps_pct < 0.0 {
            out.push(format!("tps {:+.1}%", self.tps_pct));
        }
        if resolved(&self.p95_noise) && self.p95_pct > 0.0 {
            out.push(format!("p95 latency {:+.1}%", self.p95_pct));
        }
        out
    }

    /// The warning a run ends with when the server got slower beyond the noise.
    pub fn regression_warning(&self) -> Option<String> {
        let r = self.regressions();
        (!r.is_empty()).then(|| {
            format!(
                "the benchmark after is slower than before beyond the noise ({}): see the comparison in the report",
                r.join(", ")
            )
        })
    }
}

fn per_second(r: &BenchResult, f: impl Fn(&Interval) -> f64) -> Vec<f64> {
    r.intervals.iter().map(f).collect()
}

fn pct(b: f64, a: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        (a - b) / b * 100.0
    }
}

pub fn compare(before: &BenchResult, after: &BenchResult) -> Comparison {
    let judged = |f: fn(&Interval) -> f64, change: f64| {
        noise::resolve(&per_second(before, f), &per_second(after, f), change)
    };
    let tps_pct = pct(before.tps, after.tps);
    let qps_pct = pct(before.qps, after.qps);
    let p95_pct = pct(before.latency_ms.p95, after.latency_ms.p95);
    Comparison {
        tps_pct,
        p95_pct,
        avg_pct: pct(before.latency_ms.avg, after.latency_ms.avg),
        qps_pct,
        p99_pct: pct(before.latency_ms.p99, after.latency_ms.p99),
        tps_noise: judged(|i| i.tps, tps_pct),
        qps_noise: judged(|i| i.qps, qps_pct),
        p95_noise: judged(|i| i.p95_ms, p95_pct),
    }
}

/// Before and after side by side, with the change in percent, judged against the noise.
pub fn render_comparison(b: &BenchResult, a: &BenchResult) -> String {
    let c = compare(b, a);
    let mut s = format!(
        "  {} ({} threads, {:.0} s each)\n",
        b.workload, b.threads, b.time_s
    );
    s.push_str(&format!(
        "  {:<14}{:>12}{:>12}  {}\n",
        "", "before", "after", "change"
    ));
    for (label, bv, av, ch, judged, prec) in [
        ("tps", b.tps, a.tps, c.tps_pct, Some(&c.tps_noise), 1),
        ("qps", b.qps, a.qps, c.qps_pct, Some(&c.qps_noise), 1),
        (
            "avg ms",
            b.latency_ms.avg,
            a.latency_ms.avg,
            c.avg_pct,
            None,
            2,
        ),
        (
            "p95 ms",
            b.latency_ms.p95,
            a.latency_ms.p95,
            c.p95_pct,
            Some(&c.p95_noise),
            2,
        ),
        (
            "p99 ms",
            b.latency_ms.p99,
            a.latency_ms.p99,
            c.p99_pct,
            None,
            2,
        ),
    ] {
        let change = match judged {
            Some(r) => noise::describe(ch, r.as_ref()),
            None => format!("{ch:+.1}% (not judged)"),
        };
        s.push_str(&format!(
            "  {label:<14}{bv:>12.prec$}{av:>12.prec$}  {change}\n"
        ));
    }
    match (&c.tps_noise, &c.p95_noise) {
        (None, None) => s.push_str(&format!(
            "  noise: not measured (runs of fewer than {} s); the changes above may be noise\n",
            noise::MIN_INTERVALS
        )),
        (t, p) => {
            for (figure, r) in [("tps", t), ("p95", p)] {
                if let Some(r) = r {
                    s.push_str(&format!("  noise: {}\n", noise::explain(figure, r)));
                }
            }
        }
    }
    s.push_str("  avg and p99 are not judged against the noise: the runs keep no per-second figure of them\n");
    s
}

/// Run the plan's workload once and return its figures. Prepares its table set on first use.
pub fn plan_bench(
    target: &Target,
    spec: &PlanBench,
    procedure: &str,
    abort: &AtomicBool,
) -> anyhow::Result<BenchResult> {
    let run = spec.run_spec(procedure)?;
    ready(target, &run)?;
    run::run(target, &run, abort, &mut |_| {})
}

/// Make sure `run` can run on this server: refused when the server is read-only and the workload writes, or
/// its sbtest tables are missing and cannot be made; the tables are prepared on first use.
pub fn ready(target: &Target, run: &RunSpec) -> anyhow::Result<()> {
    let mut conn = target.connect()?;
    let read_only: Option<(i64, i64)> = conn.query_first(format!(
        "SELECT {} @@innodb_read_only, @@read_only",
        run.tag
    ))?;
    let server_read_only = read_only.is_some_and(|(a, b)| a != 0 || b != 0);
    if server_read_only && !run.workload.is_read_only() {
        return Err(refused(format!(
            "{} is read-only and the plan's benchmark ({}) writes: use a read-only workload for this plan, or --no-bench",
            target.label, run.workload
        )));
    }
    if run.workload.real_table().is_none()
        && !prepare::is_prepared(&mut conn, &run.db, run.tables, run.table_size, &run.tag)?
    {
        if server_read_only {
            return Err(refused(format!(
                "{} is read-only and the benchmark tables {}.sbtest1..{} are missing: benchmark while it is writable first, or pass --no-bench",
                target.label, run.db, run.tables
            )));
        }
        prepare::prepare(target, run, true, false)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(tps: f64, p95: f64) -> BenchResult {
        BenchResult {
            workload: "oltp_read_write".into(),
            threads: 4,
            time_s: 10.0,
            transactions: (tps * 10.0) as u64,
            queries: (tps * 200.0) as u64,
            reads: 0,
            writes: 0,
            other: 0,
            errors: 0,
            reconnects: 0,
            tps,
            qps: tps * 20.0,
            latency_ms: Latency {
                p95,
                avg: p95 / 2.0,
                p99: p95 * 2.0,
                ..Default::default()
            },
            per_transaction: BTreeMap::new(),
            counters: BTreeMap::new(),
            intervals: Vec::new(),
            fairness: Fairness::default(),
            seed: 1,
            rand_type: "special".into(),
            tables: 1,
            table_size: 10_000,
            warmup_s: 0.0,
            percentile: 95,
            histogram: Vec::new(),
        }
    }

    #[test]
    fn changes_are_percent_of_before() {
        let c = compare(&result(1000.0, 4.0), &result(1100.0, 3.0));
        assert!((c.tps_pct - 10.0).abs() < 1e-9);
        assert!((c.p95_pct + 25.0).abs() < 1e-9);
        assert_eq!(compare(&result(0.0, 0.0), &result(5.0, 1.0)).tps_pct, 0.0);
        let text = render_comparison(&result(1000.0, 4.0), &result(1100.0, 3.0));
        assert!(text.contains("+10.0%") && text.contains("-25.0%"), "{text}");
    }

    /// `result` with one-second intervals of the given tps (p95 falling as tps rises, as under load).
    fn seconds(tps: &[f64]) -> BenchResult {
        let mean = tps.iter().sum::<f64>() / tps.len() as f64;
        let mut r = result(mean, 4000.0 / mean);
        r.intervals = tps
            .iter()
            .enumerate()
            .map(|(i, &t)| Interval {
                t: i as f64 + 1.0,
                tps: t,
                qps: t * 20.0,
                p95_ms: 4000.0 / t,
                ..Default::default()
            })
            .collect();
        r
    }

    #[test]
    fn a_regression_beyond_the_noise_is_a_warning_and_noise_alone_is_not_a_change() {
        let steady = [1000.0, 980.0, 1020.0, 990.0, 1010.0, 1000.0, 995.0, 1005.0];
        let slower: Vec<f64> = steady.iter().map(|t| t * 0.39).collect();
        let c = compare(&seconds(&steady), &seconds(&slower));
        assert_eq!(c.regressions(), vec!["tps -61.0%", "p95 latency +156.4%"]);
        let w = c.regression_warning().unwrap();
        assert!(
            w.starts_with("the benchmark after is slower than before beyond the noise (tps -61.0%"),
            "{w}"
        );
        let text = render_comparison(&seconds(&steady), &seconds(&slower));
        assert!(
            text.contains("noise: tps: 95% interval of the change"),
            "{text}"
        );

        // ±80% swings: a 40% higher mean tps (and "+115%" p95 swings) are what the noise does on its own.
        let wild = [100.0, 180.0, 20.0, 170.0, 30.0, 160.0, 40.0, 100.0];
        let shifted: Vec<f64> = wild.iter().rev().map(|t| t * 1.4).collect();
        let c = compare(&seconds(&wild), &seconds(&shifted));
        assert!(c.regressions().is_empty(), "{c:?}");
        let text = render_comparison(&seconds(&wild), &seconds(&shifted));
        assert!(
            text.contains("tps") && text.contains("no difference the noise can resolve"),
            "{text}"
        );
        assert!(c.regression_warning().is_none());
    }

    #[test]
    fn runs_too_short_to_measure_the_noise_say_so() {
        let text = render_comparison(&result(1000.0, 4.0), &result(500.0, 8.0));
        assert!(text.contains("noise: not measured"), "{text}");
        assert!(compare(&result(1000.0, 4.0), &result(500.0, 8.0))
            .regressions()
            .is_empty());
    }

    #[test]
    fn older_results_without_the_new_fields_still_load() {
        let old = r#"{"workload":"write","threads":2,"time_s":1.0,"transactions":10,"queries":20,"errors":0,
            "tps":10.0,"qps":20.0,"latency_ms":{"min":1.0,"avg":2.0,"p95":3.0,"p99":4.0,"max":5.0},
            "per_transaction":{}}"#;
        let r: BenchResult = serde_json::from_str(old).unwrap();
        assert_eq!(r.latency_ms.p95, 3.0);
        let spec = r#"{"workload":"oltp_read_write","threads":4,"time":{"secs":1,"nanos":0},"seed":1,
            "db":"innops_bench","table_size":10000}"#;
        let p: PlanBench = serde_json::from_str(spec).unwrap();
        assert_eq!((p.tables, p.rand_type), (1, RandType::Special));
    }

    #[test]
    fn plan_workloads_are_sysbench_s_on_a_small_table_set() {
        let rw = PlanBench::read_write(Duration::from_secs(3))
            .run_spec("redo")
            .unwrap();
        assert_eq!(rw.workload, Workload::ReadWrite);
        assert_eq!(
            (rw.db.as_str(), rw.tables, rw.table_size),
            (PLAN_DB, 1, 10_000)
        );
        assert_eq!(rw.tag, "/* innops:redo:bench */");
        let ro = PlanBench::read_only(Duration::from_secs(3))
            .run_spec("readonly")
            .unwrap();
        assert!(ro.workload.is_read_only());
        assert_eq!(
            PlanBench::writes(Duration::from_secs(3)),
            PlanBench::read_write(Duration::from_secs(3))
        );
        use crate::server::facts::{Flavor, ServerFacts, Version};
        let mut facts = ServerFacts::synthetic(Flavor::MariaDB, Version::parse("10.11.6").unwrap());
        let t = Duration::from_secs(1);
        assert_eq!(PlanBench::for_server(t, &facts).workload, "oltp_read_write");
        facts
            .variables
            .insert("innodb_read_only".into(), "ON".into());
        assert_eq!(PlanBench::for_server(t, &facts).workload, "oltp_read_only");
    }
}
