//! Driving a workload: one worker thread and connection per `--threads`, all connected and prepared before
//! the clock starts; the calling thread takes the `--report-interval` lines and, at the end, adds everything up
//! into sysbench's figures plus the server's counter deltas.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::sql::Queryable;
use hdrhistogram::Histogram;
use mysql::{Conn, OptsBuilder};

use super::distribution::{Dist, RandParams, RandType};
use super::stats::{self, latency_of, mean_stddev, new_histogram};
use super::table::TablePlan;
use super::tap::{Mark, Tap};
use super::worker::{Counts, Frame, Moments, Pace, Window, Worker};
use super::workloads::{OltpOptions, Workload};
use super::{BenchResult, Fairness, Interval, Latency, COUNTERS};
use crate::server::connect::Target;

/// `--ignore-errors`: which server error codes restart a transaction instead of ending the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IgnoreErrors {
    All,
    Codes(Vec<u16>),
}

impl Default for IgnoreErrors {
    /// sysbench's `--mysql-ignore-errors` default: deadlock, record changed since last read, lock wait timeout.
    fn default() -> Self {
        IgnoreErrors::Codes(vec![1213, 1020, 1205])
    }
}

impl IgnoreErrors {
    /// `all`, `none`, or a comma-separated list of codes.
    pub fn parse(s: &str) -> anyhow::Result<IgnoreErrors> {
        match s.trim() {
            "all" => Ok(IgnoreErrors::All),
            "none" | "" => Ok(IgnoreErrors::Codes(Vec::new())),
            list => list
                .split(',')
                .map(|c| {
                    c.trim().parse::<u16>().map_err(|_| {
                        crate::error::bad_input(format!(
                            "--ignore-errors '{s}': '{c}' is not an error code; give codes like 1213,1205, or all, or none"
                        ))
                    })
                })
                .collect::<anyhow::Result<Vec<u16>>>()
                .map(IgnoreErrors::Codes),
        }
    }

    pub fn ignores(&self, code: u16) -> bool {
        match self {
            IgnoreErrors::All => true,
            IgnoreErrors::Codes(c) => c.contains(&code),
        }
    }
}

/// Everything a run needs, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    pub workload: Workload,
    /// Schema of the sbtest tables (for `table:` the table's own schema is used).
    pub db: String,
    pub threads: u32,
    pub time: Duration,
    pub warmup: Duration,
    pub tables: u32,
    pub table_size: u32,
    pub rand_type: RandType,
    /// The distributions' parameters (`--rand-spec-*`, `--rand-pareto-h`, `--rand-zipfian-exp`).
    pub rand: RandParams,
    pub seed: u64,
    /// Zero: no interval lines.
    pub report_interval: Duration,
    pub ignore_errors: IgnoreErrors,
    /// The ignore list came from a flag the person gave (`innops bench --ignore-errors`): an error that ends
    /// the run then names that flag as the way to retry; other callers (an experiment, a plan's benchmark)
    /// have no such flag and their errors do not mention one.
    pub ignore_flag: bool,
    /// The comment every statement carries.
    pub tag: String,
    /// `--events`: stop after this many transactions in all (0: no limit, the time ends the run).
    pub events: u64,
    /// `--rate`: transactions per second to start, in all threads together (0: as fast as they go).
    pub rate: u32,
    /// `--percentile`: the latency percentile reported (0 leaves it out).
    pub percentile: u8,
    /// `--histogram`: keep the latency histogram for the final report.
    pub histogram: bool,
    /// oltp_common.lua's options: statements per transaction, range size, table definition.
    pub oltp: OltpOptions,
    /// The workload runs beside a plan (`--bench-during`): it counts every error by code instead of stopping,
    /// reconnects for as long as it runs, bounds its lock waits and replies (see the worker), and reports
    /// the last, partial interval when stopped.
    pub during: bool,
}

impl RunSpec {
    /// The distribution of row ids, ready to draw from.
    pub fn dist(&self) -> Dist {
        Dist::new(self.rand_type, &self.rand)
    }

    /// A spec with sysbench's defaults for everything but the workload, schema, tag and seed.
    pub fn new(workload: Workload, db: &str, tag: &str, seed: u64) -> RunSpec {
        RunSpec {
            workload,
            db: db.to_string(),
            threads: 1,
            time: Duration::from_secs(10),
            warmup: Duration::ZERO,
            tables: 1,
            table_size: 10_000,
            rand_type: RandType::Special,
            rand: RandParams::default(),
            seed,
            report_interval: Duration::ZERO,
            ignore_errors: IgnoreErrors::default(),
            ignore_flag: false,
            tag: tag.to_string(),
            events: 0,
            rate: 0,
            percentile: 95,
            histogram: false,
            oltp: OltpOptions::default(),
            during: false,
        }
    }
}

/// `SHOW GLOBAL STATUS` values of [`COUNTERS`].
/// Tagged `bench:counters` whatever the run's own tag, so these reads are told apart from the workload.
pub fn status_counters(conn: &mut Conn) -> anyhow::Result<BTreeMap<String, u64>> {
    let tag = "/* innops:bench:counters */";
    let rows: Vec<(String, String)> =
        conn.query(format!("SHOW {tag} GLOBAL STATUS LIKE 'Innodb\\_%'"))?;
    Ok(rows
        .into_iter()
        .filter(|(k, _)| COUNTERS.contains(&k.as_str()))
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect())
}

/// Connection options for the run's threads: the target's, in the workload's schema, with room in the
/// statement cache for every statement (an evicted statement would be closed on the server).
pub fn worker_opts(target: &Target, db: &str, tables: u32) -> mysql::Opts {
    OptsBuilder::from_opts(target.opts.clone())
        .db_name(Some(db.to_string()))
        .stmt_cache_size(Some(tables as usize * 10 + 64))
        .into()
}

fn sleep_until(t: Instant, stop: &AtomicBool, abort: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) && !abort.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= t {
            return;
        }
        std::thread::sleep((t - now).min(Duration::from_millis(50)));
    }
}

/// The reported percentile as a quantile (95 when `--percentile 0` leaves it out of the text).
fn pctl_q(spec: &RunSpec) -> f64 {
    if spec.percentile == 0 {
        0.95
    } else {
        f64::from(spec.percentile.min(100)) / 100.0
    }
}

/// Run the workload and return its figures; `on_interval` sees each `--report-interval` line as it happens.
pub fn run(
    target: &Target,
    spec: &RunSpec,
    abort: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
) -> anyhow::Result<BenchResult> {
    run_tapped(target, spec, abort, on_interval, None)
}

/// sysbench's figures from a latency histogram, each thread's counts, the counter deltas and the time.
pub(crate) fn assemble(
    spec: &RunSpec,
    hist: &Histogram<u64>,
    per_thread: &[Counts],
    counters: BTreeMap<String, u64>,
    elapsed: f64,
    intervals: Vec<Interval>,
    table_rows: Option<u32>,
) -> BenchResult {
    let elapsed = elapsed.max(1e-9);
    let threads = spec.threads.max(1);
    let total = per_thread.iter().fold(Counts::default(), |mut a, c| {
        a.add(c);
        a
    });
    let per_transaction = counters
        .iter()
        .map(|(k, d)| {
            (
                k.clone(),
                if total.txns == 0 {
                    0.0
                } else {
                    *d as f64 / total.txns as f64
                },
            )
        })
        .collect();
    let (events_avg, events_stddev) =
        mean_stddev(&per_thread.iter().map(|c| c.txns as f64).collect::<Vec<_>>());
    let (exec_time_avg, exec_time_stddev) = mean_stddev(
        &per_thread
            .iter()
            .map(|c| c.busy_ns as f64 / 1e9)
            .collect::<Vec<_>>(),
    );
    BenchResult {
        workload: spec.workload.name(),
        threads,
        time_s: elapsed,
        transactions: total.txns,
        queries: total.queries(),
        reads: total.reads,
        writes: total.writes,
        other: total.other,
        errors: total.errors,
        reconnects: total.reconnects,
        tps: total.txns as f64 / elapsed,
        qps: total.queries() as f64 / elapsed,
        latency_ms: Latency {
            pctl: stats::percentile_ms(hist, pctl_q(spec)),
            ..latency_of(hist, total.busy_ns)
        },
        percentile: spec.percentile,
        histogram: if spec.histogram {
            stats::histogram_rows(hist)
        } else {
            Vec::new()
        },
        per_transaction,
        counters,
        intervals,
        fairness: Fairness {
            events_avg,
            events_stddev,
            exec_time_avg,
            exec_time_stddev,
        },
        seed: spec.seed,
        rand_type: spec.rand_type.as_str().into(),
        // For the table workload: no sbtest tables; the rows its keys are drawn from.
        tables: if table_rows.is_some() { 0 } else { spec.tables },
        table_size: table_rows.unwrap_or(spec.table_size),
        warmup_s: spec.warmup.as_secs_f64(),
    }
}

/// Where `moments` fall in the interval that started at `from` and lasted `secs`: each error's offset in
/// seconds with its code, and the transactions completed in each tenth (empty when nothing was recorded, as
/// outside a plan).
fn placed(moments: &Moments, from: Instant, secs: f64) -> (Vec<(f64, u16)>, Vec<u32>) {
    let offset = |at: Instant| at.saturating_duration_since(from).as_secs_f64().min(secs);
    let errors = moments
        .errors
        .iter()
        .map(|(at, code)| ((offset(*at) * 1e6).round() / 1e6, *code))
        .collect();
    if moments.done.is_empty() && moments.errors.is_empty() {
        return (errors, Vec::new());
    }
    let mut tenths = vec![0u32; 10];
    for at in &moments.done {
        let k = ((offset(*at) / secs) * 10.0).floor() as usize;
        tenths[k.min(9)] += 1;
    }
    (errors, tenths)
}

/// One interval line from what was counted in it, the moments placed from `from`.
fn interval_line(
    spec: &RunSpec,
    k_t: f64,
    secs: f64,
    c: &Counts,
    h: &Histogram<u64>,
    (moments, from): (&Moments, Instant),
) -> Interval {
    let secs = secs.max(1e-9);
    let (error_at, tenths) = placed(moments, from, secs);
    Interval {
        t: k_t,
        threads: spec.threads.max(1),
        tps: c.txns as f64 / secs,
        qps: c.queries() as f64 / secs,
        reads_ps: c.reads as f64 / secs,
        writes_ps: c.writes as f64 / secs,
        other_ps: c.other as f64 / secs,
        p95_ms: stats::percentile_ms(h, pctl_q(spec)),
        p99_ms: stats::percentile_ms(h, 0.99),
        err_ps: c.errors as f64 / secs,
        reconn_ps: c.reconnects as f64 / secs,
        seconds: secs,
        transactions: c.txns,
        error_codes: c.codes.clone(),
        error_at,
        tenths,
    }
}

/// [`run`], with a [`Tap`] another thread can take marks from. A run [`RunSpec::during`] also reports its last,
/// partial interval when it is stopped, and a lost counter connection does not fail it.
pub fn run_tapped(
    target: &Target,
    spec: &RunSpec,
    abort: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
    tap: Option<&Tap>,
) -> anyhow::Result<BenchResult> {
    if let Some(t) = tap {
        t.reset();
    }
    let r = run_inner(target, spec, abort, on_interval, tap);
    if let Some(t) = tap {
        t.end();
    }
    r
}

fn run_inner(
    target: &Target,
    spec: &RunSpec,
    abort: &AtomicBool,
    on_interval: &mut dyn FnMut(&Interval),
    tap: Option<&Tap>,
) -> anyhow::Result<BenchResult> {
    let Setup {
        opts,
        worker_target,
        mut main,
        plan,
    } = Setup::open(target, spec)?;
    let table_rows = plan.as_ref().map(|p| p.samples.len() as u32);
    let threads = spec.threads.max(1);
    let workers = open_workers(target, spec, plan.as_ref(), &opts)?;
    let windows: Vec<Mutex<Window>> = (0..threads)
        .map(|_| {
            Mutex::new(Window {
                hist: new_histogram(),
                counts: Counts::default(),
                moments: Moments::default(),
            })
        })
        .collect();
    let stop = AtomicBool::new(false);
    let mut before = status_counters(&mut main)?;
    let t0 = Instant::now();
    let measure_from = t0 + spec.warmup;
    // --time 0 (with --events): no time limit; a year stands for none.
    let deadline = measure_from
        + if spec.time.is_zero() {
            Duration::from_secs(365 * 24 * 3600)
        } else {
            spec.time
        };
    let pace = Pace::new(spec, t0);

    let mut tally = Tally {
        spec,
        windows: &windows,
        measure_from,
        deadline,
        total_hist: new_histogram(),
        per_thread: vec![Counts::default(); threads as usize],
        intervals: Vec::new(),
    };
    let (results, end, last) = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .zip(windows.iter())
            .map(|(w, win)| {
                let (stop, pace) = (&stop, &pace);
                s.spawn(move || {
                    w.run(Frame {
                        window: win,
                        measure_from,
                        deadline,
                        stop,
                        abort,
                        pace,
                    })
                })
            })
            .collect();
        if !spec.warmup.is_zero() {
            sleep_until(measure_from, &stop, abort);
            if let Ok(b) = status_counters(&mut main) {
                before = b;
            }
        }
        if let Some(tap) = tap {
            tap.set_started(measure_from);
        }
        let last = tally.report_intervals(&handles, abort, on_interval, tap, table_rows);
        let results: Vec<anyhow::Result<()>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a benchmark thread panicked")))
            })
            .collect();
        (results, Instant::now(), last)
    });
    for r in results {
        r?;
    }
    tally.last_line(end, last, on_interval);
    let after = counters_after(&mut main, &worker_target, spec)?;
    let elapsed = end.saturating_duration_since(measure_from).as_secs_f64();
    Ok(assemble(
        spec,
        &tally.total_hist,
        &tally.per_thread,
        counter_deltas(&before, &after),
        elapsed,
        tally.intervals,
        table_rows,
    ))
}

/// What a run holds before its threads connect: the options every thread connects with (with bounded replies
/// beside a plan), the target with those options (for a new connection to read the counters if `main` is lost),
/// the calling thread's own connection, and the table workload's plan.
struct Setup {
    opts: mysql::Opts,
    worker_target: Target,
    main: Conn,
    plan: Option<TablePlan>,
}

impl Setup {
    fn open(target: &Target, spec: &RunSpec) -> anyhow::Result<Setup> {
        let db = match spec.workload.real_table() {
            Some((db, _)) => db.to_string(),
            None => spec.db.clone(),
        };
        let mut opts = worker_opts(target, &db, spec.tables);
        if spec.during {
            // Connecting and the statements sent through the crate (the session settings, PREPARE) are bounded too.
            opts = OptsBuilder::from_opts(opts)
                .read_timeout(Some(super::worker::DURING_READ_TIMEOUT))
                .write_timeout(Some(super::worker::DURING_READ_TIMEOUT))
                .into();
        }
        let worker_target = Target {
            opts: opts.clone(),
            label: target.label.clone(),
            local: target.local,
            ssl_mode: target.ssl_mode,
        };
        let mut main = worker_target.connect()?;
        let plan = match spec.workload.real_table() {
            Some((db, table)) => Some(super::table::plan(&mut main, db, table, spec)?),
            None => None,
        };
        Ok(Setup {
            opts,
            worker_target,
            main,
            plan,
        })
    }
}

/// One worker per thread, each connected with its statements prepared before the clock starts; the first thread
/// that cannot is the run's error.
fn open_workers<'a>(
    target: &Target,
    spec: &'a RunSpec,
    plan: Option<&'a TablePlan>,
    opts: &mysql::Opts,
) -> anyhow::Result<Vec<Worker<'a>>> {
    let mut workers = Vec::new();
    for t in 0..spec.threads.max(1) {
        workers.push(Worker::new(spec, plan, opts.clone(), t).map_err(|e| {
            anyhow::anyhow!(
                "thread {} could not connect and prepare its statements on {}: {}",
                t + 1,
                target.label,
                crate::error::display_of(&e)
            )
        })?);
    }
    Ok(workers)
}

/// The counters at the end of the run. The connection may have been lost during the run (a killed session, a
/// restart): read with a new one then; beside a plan, a run that cannot read them has none rather than failing.
fn counters_after(
    main: &mut Conn,
    worker_target: &Target,
    spec: &RunSpec,
) -> anyhow::Result<BTreeMap<String, u64>> {
    Ok(match status_counters(main) {
        Ok(a) => a,
        Err(_) if spec.during => worker_target
            .connect()
            .and_then(|mut c| status_counters(&mut c))
            .unwrap_or_default(),
        Err(_) => status_counters(&mut worker_target.connect()?)?,
    })
}

/// How much each of [`COUNTERS`] grew between two reads (a counter missing from either is left out).
fn counter_deltas(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    COUNTERS
        .iter()
        .filter_map(|k| {
            Some((
                k.to_string(),
                after.get(*k)?.saturating_sub(*before.get(*k)?),
            ))
        })
        .collect()
}

/// What the calling thread adds up while the workers run: it empties the threads' windows into one histogram
/// and each thread's totals, and keeps the interval lines it made from them.
struct Tally<'a> {
    spec: &'a RunSpec,
    windows: &'a [Mutex<Window>],
    measure_from: Instant,
    deadline: Instant,
    total_hist: Histogram<u64>,
    per_thread: Vec<Counts>,
    intervals: Vec<Interval>,
}

impl Tally<'_> {
    /// Take what every thread measured since the last look: its latencies into `hist`, its counts into its own
    /// totals; returns the counts of all threads together.
    fn drain(&mut self, hist: &mut Histogram<u64>) -> (Counts, Moments) {
        let mut sum = Counts::default();
        let mut moments = Moments::default();
        for (i, w) in self.windows.iter().enumerate() {
            let mut w = w.lock().expect("bench window lock");
            hist.add(&w.hist).expect("histograms share their bounds");
            w.hist.reset();
            sum.add(&w.counts);
            self.per_thread[i].add(&w.counts);
            w.counts = Counts::default();
            moments.append(&mut w.moments);
        }
        (sum, moments)
    }

    /// The `--report-interval` lines, each at its boundary, until the deadline, an abort, or every thread is
    /// done; a tap that wants a mark gets one after each line. Returns when the last line ended.
    fn report_intervals(
        &mut self,
        handles: &[std::thread::ScopedJoinHandle<'_, anyhow::Result<()>>],
        abort: &AtomicBool,
        on_interval: &mut dyn FnMut(&Interval),
        tap: Option<&Tap>,
        table_rows: Option<u32>,
    ) -> Instant {
        let spec = self.spec;
        let mut interval_hist = new_histogram();
        let mut last = self.measure_from;
        let mut k = 1u32;
        while !spec.report_interval.is_zero() {
            let next = self.measure_from + spec.report_interval * k;
            if next > self.deadline {
                break;
            }
            loop {
                let now = Instant::now();
                if now >= next
                    || handles.iter().all(|h| h.is_finished())
                    || abort.load(Ordering::Relaxed)
                {
                    break;
                }
                std::thread::sleep((next - now).min(Duration::from_millis(20)));
            }
            if Instant::now() < next {
                break;
            }
            let now = Instant::now();
            let (c, moments) = self.drain(&mut interval_hist);
            self.total_hist
                .add(&interval_hist)
                .expect("histograms share their bounds");
            let secs = (now - last).as_secs_f64();
            let line = interval_line(
                spec,
                (spec.report_interval * k).as_secs_f64(),
                secs,
                &c,
                &interval_hist,
                (&moments, last),
            );
            interval_hist.reset();
            on_interval(&line);
            self.intervals.push(line);
            last = now;
            k += 1;
            if spec.during {
                // Beside a plan a late line (the machine was busy) is a longer line, not a burst of short
                // ones catching up: the next boundary is the first one still ahead.
                let behind = (now
                    .saturating_duration_since(self.measure_from)
                    .as_secs_f64()
                    / spec.report_interval.as_secs_f64()) as u32;
                k = k.max(behind + 1);
            }
            // Nothing here waits on the server: a mark is the measurement so far, and whoever asked for it reads
            // the server's counters ([`Mark::with_counters`]), so a slow SHOW STATUS never holds up the lines.
            if let Some(tap) = tap.filter(|t| t.wanted()) {
                tap.deliver(Mark {
                    at: now,
                    hist: self.total_hist.clone(),
                    per_thread: self.per_thread.clone(),
                    counters: BTreeMap::new(),
                    table_rows,
                });
            }
        }
        last
    }

    /// After the threads ended at `end`: what they measured since the last line. A run beside a plan stopped
    /// between two boundaries makes the time since the last line (`last`) a line of its own.
    fn last_line(&mut self, end: Instant, last: Instant, on_interval: &mut dyn FnMut(&Interval)) {
        let mut last_hist = new_histogram();
        let (c, moments) = self.drain(&mut last_hist);
        self.total_hist
            .add(&last_hist)
            .expect("histograms share their bounds");
        if self.spec.during && end > last {
            // Stopped between two boundaries: the time since the last line is a line of its own.
            let line = interval_line(
                self.spec,
                end.saturating_duration_since(self.measure_from)
                    .as_secs_f64(),
                (end - last).as_secs_f64(),
                &c,
                &last_hist,
                (&moments, last),
            );
            on_interval(&line);
            self.intervals.push(line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_their_offset_in_the_interval_and_transactions_fall_in_its_tenths() {
        let from = Instant::now();
        let ms = |n: u64| from + Duration::from_millis(n);
        let moments = Moments {
            errors: vec![(ms(250), 2002), (ms(999), 2013), (ms(1500), 1205)],
            done: vec![ms(0), ms(99), ms(100), ms(950), ms(1200)],
        };
        let (errors, tenths) = placed(&moments, from, 1.0);
        // Something counted after the line's end (drained late) is placed at its end, not in a later line.
        assert_eq!(errors, vec![(0.25, 2002), (0.999, 2013), (1.0, 1205)]);
        assert_eq!(tenths, vec![2, 1, 0, 0, 0, 0, 0, 0, 0, 2]);
        // Outside a plan nothing is recorded, and nothing is written.
        assert_eq!(placed(&Moments::default(), from, 1.0), (vec![], vec![]));
    }

    #[test]
    fn ignore_errors_parse_like_sysbench_s_option() {
        assert_eq!(
            IgnoreErrors::default(),
            IgnoreErrors::Codes(vec![1213, 1020, 1205])
        );
        assert_eq!(IgnoreErrors::parse("all").unwrap(), IgnoreErrors::All);
        assert_eq!(
            IgnoreErrors::parse("none").unwrap(),
            IgnoreErrors::Codes(vec![])
        );
        assert_eq!(
            IgnoreErrors::parse("1213, 2013").unwrap(),
            IgnoreErrors::Codes(vec![1213, 2013])
        );
        let e = IgnoreErrors::parse("1213,x").unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2);
        assert!(IgnoreErrors::All.ignores(1062));
        assert!(!IgnoreErrors::default().ignores(1062));
    }
}
