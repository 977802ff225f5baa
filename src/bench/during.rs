//! The workload beside a plan (`--bench-during`): what users felt during each step.
//!
//! The plan's own benchmark workload (the same statements, table set and seed as its "before" and "after"
//! figures: a read workload on the converted table for `convert`, `oltp_read_only` when the server ends
//! read-only, else `oltp_read_write`) runs from before the first step to after the last, with one line per
//! second written to `bench/during.jsonl` as it is measured. Beside a workload that only reads a real table,
//! a write probe (one thread, [`PROBE_RATE`] locking reads a second on that table: see
//! [`Workload::WriteProbe`]) stands for the table's writers, which a conversion blocks while its readers go on.
//!
//! It does not run beside the benchmarks, it replaces them: the "before" and "after" figures are slices of
//! this one workload ([`During::slice`]: `--bench-time` seconds at the same two points of the plan, the same
//! statistics), so the run measures one load, not two that would compete, and each step can be set against
//! "before" with the same threads. Its errors never stop it (the worker counts each by its code in the
//! interval it happens in, bounds every wait, and reconnects across a restart); a read-only server's refusals
//! and a restart's refused connections are counted as what they are.
//!
//! The report ([`report_of`]) reads the lines back together with the journal's step starts and ends, so a
//! resumed run shows the whole story.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::run::{self, Mark, RunSpec, Tap};
use super::{BenchResult, Interval, PlanBench, Workload};
use crate::server::connect::Target;

/// One line of the chart a second.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// Threads of the workload when `--bench-during-threads` is not given: a modest load beside the plan.
pub const DEFAULT_THREADS: u32 = 2;
/// The most threads `--bench-during-threads` takes.
pub const MAX_THREADS: u32 = 64;
/// Locking reads a second of the write probe.
pub const PROBE_RATE: u32 = 10;
/// The file the lines go to, in the run directory.
pub const FILE: &str = "bench/during.jsonl";
/// The series names: the workload's transactions, and the write probe's.
pub const WORKLOAD: &str = "workload";
pub const WRITES: &str = "writes";

/// One line of `bench/during.jsonl`: `{"interval": {...}}`, `{"start": {...}}`. (Externally tagged: an
/// internally tagged enum cannot read the error codes back, serde buffers their keys as strings.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    /// A series started (again, after a resume).
    Start {
        ts: DateTime<Utc>,
        series: String,
        workload: String,
        threads: u32,
    },
    /// What a series measured in one interval.
    Interval(DuringInterval),
    /// The "before" or "after" figures were taken from this span.
    Slice {
        label: String,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    },
    /// A series could not run for a while (the server did not answer when it started, say).
    Failure {
        ts: DateTime<Utc>,
        series: String,
        message: String,
    },
    /// A series stopped with the plan.
    Stop { ts: DateTime<Utc>, series: String },
}

/// One interval of one series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuringInterval {
    pub series: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub transactions: u64,
    pub tps: f64,
    /// None when no transaction completed in the interval (there is no latency to tell).
    pub p95_ms: Option<f64>,
    pub errors: u64,
    /// The errors by server or client error code.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_codes: BTreeMap<u16, u64>,
    #[serde(default)]
    pub reconnects: u64,
}

impl DuringInterval {
    fn of(series: &str, from: DateTime<Utc>, to: DateTime<Utc>, i: &Interval) -> DuringInterval {
        DuringInterval {
            series: series.to_string(),
            from,
            to,
            transactions: i.transactions,
            tps: i.tps,
            p95_ms: (i.transactions > 0).then_some(i.p95_ms),
            errors: i.error_codes.values().sum(),
            error_codes: i.error_codes.clone(),
            reconnects: (i.reconn_ps * i.seconds).round() as u64,
        }
    }
}

/// What an error code means, in a few words, for the report.
pub fn error_name(code: u16) -> &'static str {
    match code {
        1036 => "table is read only",
        1040 => "too many connections",
        1045 => "access denied",
        1053 => "server shutting down",
        1205 => "lock wait timeout",
        1213 => "deadlock",
        1290 | 1836 => "server is read-only",
        1927 => "connection killed",
        2002 | 2003 => "cannot connect",
        2006 | 2013 => "connection lost",
        _ => "error",
    }
}

/// `1205 lock wait timeout ×3, 2002 cannot connect ×1`.
pub fn describe_codes(codes: &BTreeMap<u16, u64>) -> String {
    codes
        .iter()
        .map(|(c, n)| format!("{c} {} ×{n}", error_name(*c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lines written so far, shared by the series threads.
struct Sink {
    path: PathBuf,
    file: std::fs::File,
}

impl Sink {
    /// One line, written through to the file at once (a killed innops loses nothing written), not fsynced: the
    /// interval lines are written from the thread that measures, and an fsync can take a second while the
    /// server writes hard (a redo log being resized), which would hold the measurement up. The file is
    /// fsynced when a series stops; the journal is the record fsynced event by event.
    fn write(&mut self, line: &Line) {
        // The chart is evidence, not the plan: a line that cannot be written is said and the run goes on.
        let mut text = serde_json::to_string(line).unwrap_or_default();
        text.push('\n');
        let sync = matches!(line, Line::Stop { .. });
        if self
            .file
            .write_all(text.as_bytes())
            .and_then(|_| if sync { self.file.sync_data() } else { Ok(()) })
            .is_err()
        {
            crate::progress::say(&format!(
                "innops: could not write {}: the impact chart will miss lines",
                self.path.display()
            ));
        }
    }
}

fn write(sink: &Mutex<Sink>, line: &Line) {
    sink.lock().unwrap_or_else(|p| p.into_inner()).write(line);
}

/// The wall-clock time of a run's instant, from one reading of both clocks taken when the workload started:
/// every line and every slice is placed by the same reading, so they agree to the microsecond.
#[derive(Debug, Clone, Copy)]
struct Clock {
    at: Instant,
    utc: DateTime<Utc>,
}

impl Clock {
    fn now() -> Clock {
        Clock {
            at: Instant::now(),
            utc: Utc::now(),
        }
    }

    fn wall(&self, at: Instant) -> DateTime<Utc> {
        let d = if at >= self.at {
            chrono::Duration::from_std(at - self.at).unwrap_or_default()
        } else {
            -chrono::Duration::from_std(self.at - at).unwrap_or_default()
        };
        self.utc + d
    }
}

/// The workload, and the write probe beside it, as they will run.
#[derive(Debug, Clone)]
pub struct DuringSpec {
    pub workload: RunSpec,
    pub probe: Option<RunSpec>,
}

impl DuringSpec {
    /// The plan's benchmark as the workload beside it: `threads` threads, one-second lines, no end but the
    /// plan's; and the write probe when the workload only reads a real table.
    pub fn of(plan: &PlanBench, threads: u32, procedure: &str) -> anyhow::Result<DuringSpec> {
        let base = plan.run_spec(procedure)?;
        let workload = RunSpec {
            threads: threads.max(1),
            time: Duration::ZERO,
            report_interval: INTERVAL,
            during: true,
            tag: format!("/* innops:{}:during */", crate::plan::tag_safe(procedure)),
            ..base.clone()
        };
        let probe = match &base.workload {
            Workload::Table { db, table } => Some(RunSpec {
                workload: Workload::WriteProbe {
                    db: db.clone(),
                    table: table.clone(),
                },
                threads: 1,
                rate: PROBE_RATE,
                tag: format!(
                    "/* innops:{}:during-writes */",
                    crate::plan::tag_safe(procedure)
                ),
                ..workload.clone()
            }),
            _ => None,
        };
        Ok(DuringSpec { workload, probe })
    }

    /// Sessions it keeps busy on the server: what the load guard discounts from `Threads_running`.
    pub fn sessions(&self) -> u64 {
        u64::from(self.workload.threads) + self.probe.as_ref().map_or(0, |p| u64::from(p.threads))
    }
}

/// The running workload beside a plan.
pub struct During {
    spec: DuringSpec,
    target: Target,
    clock: Clock,
    stop: Arc<AtomicBool>,
    tap: Arc<Tap>,
    sink: Arc<Mutex<Sink>>,
    handles: Vec<JoinHandle<()>>,
}

impl During {
    /// Start the workload (and the probe) in threads of their own, writing to `run_dir`'s [`FILE`]. A server
    /// that answers must be able to run it (its tables are prepared here on first use); a server that does
    /// not answer (a run resumed while it is down) is waited for, each failed attempt counted.
    pub fn start(target: &Target, spec: DuringSpec, run_dir: &Path) -> anyhow::Result<During> {
        if mysql::Conn::new(target.opts.clone()).is_ok() {
            super::ready(target, &spec.workload)?;
        }
        let path = run_dir.join(FILE);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", path.display()))?;
        let sink = Arc::new(Mutex::new(Sink { path, file }));
        let stop = Arc::new(AtomicBool::new(false));
        let tap = Arc::new(Tap::default());
        let mut handles = Vec::new();
        let clock = Clock::now();
        let mut series = vec![(WORKLOAD, spec.workload.clone(), tap.clone())];
        if let Some(p) = &spec.probe {
            series.push((WRITES, p.clone(), Arc::new(Tap::default())));
        }
        for (name, run_spec, tap) in series {
            let (target, sink, stop) = (target.clone(), sink.clone(), stop.clone());
            handles.push(std::thread::spawn(move || {
                series_loop(&target, &run_spec, name, &stop, &tap, &sink, clock)
            }));
        }
        let during = During {
            spec,
            target: target.clone(),
            clock,
            stop,
            tap,
            sink,
            handles,
        };
        // The first step should find the workload measuring: wait for it (bounded; a server that is down is
        // not waited for, the workload keeps trying on its own).
        during.tap.wait_started(Duration::from_secs(60));
        Ok(during)
    }

    pub fn spec(&self) -> &DuringSpec {
        &self.spec
    }

    /// The figures of `time` of the workload from now, as a benchmark of its own would give them: three
    /// thirds as its interval lines (the noise a change is judged against), like the plan's own benchmark.
    /// Ends early, with what it measured, when `abort` is set.
    pub fn slice(
        &self,
        label: &str,
        time: Duration,
        abort: &AtomicBool,
    ) -> anyhow::Result<BenchResult> {
        let wait = INTERVAL * 3 + Duration::from_secs(10);
        let not_running = || {
            anyhow::anyhow!(
                "the workload beside the plan is not measuring (the server did not answer it): the figures {label} cannot be taken; see {FILE}"
            )
        };
        // The server's counters at each mark, read here so that the measurement never waits for them (a
        // SHOW STATUS can stall for seconds while the server resizes its redo log, say).
        let mut conn = mysql::Conn::new(self.target.opts.clone()).ok();
        let mut counters = || -> BTreeMap<String, u64> {
            if let Some(c) = conn.as_mut() {
                if let Ok(v) = run::status_counters(c) {
                    return v;
                }
            }
            conn = mysql::Conn::new(self.target.opts.clone()).ok();
            conn.as_mut()
                .and_then(|c| run::status_counters(c).ok())
                .unwrap_or_default()
        };
        let first = self
            .tap
            .mark(wait)
            .ok_or_else(not_running)?
            .with_counters(counters());
        let parts = if time >= Duration::from_secs(3) { 3 } else { 1 };
        let mut marks: Vec<Mark> = vec![first];
        for i in 1..=parts {
            // A mark comes at the first interval boundary after it is asked for: ask just before the one
            // that ends the part, so that `time` whole seconds are whole intervals.
            let until = (marks[0].at + time * i / parts)
                .checked_sub(INTERVAL / 5)
                .unwrap_or(marks[0].at)
                .max(marks[marks.len() - 1].at);
            while Instant::now() < until && !abort.load(Ordering::Relaxed) {
                std::thread::sleep((until - Instant::now()).min(Duration::from_millis(50)));
            }
            let m = self.tap.mark(wait).ok_or_else(not_running)?;
            marks.push(m.with_counters(counters()));
            if abort.load(Ordering::Relaxed) {
                break;
            }
        }
        let spec = &self.spec.workload;
        let thirds: Vec<Interval> = if marks.len() == 4 {
            marks
                .windows(2)
                .map(|w| {
                    let r = run::slice(spec, &w[0], &w[1], Vec::new());
                    Interval {
                        t: w[1].at.saturating_duration_since(marks[0].at).as_secs_f64(),
                        threads: r.threads,
                        tps: r.tps,
                        qps: r.qps,
                        reads_ps: r.reads as f64 / r.time_s.max(1e-9),
                        writes_ps: r.writes as f64 / r.time_s.max(1e-9),
                        other_ps: r.other as f64 / r.time_s.max(1e-9),
                        p95_ms: r.latency_ms.p95,
                        err_ps: r.errors as f64 / r.time_s.max(1e-9),
                        reconn_ps: r.reconnects as f64 / r.time_s.max(1e-9),
                        seconds: r.time_s,
                        transactions: r.transactions,
                        error_codes: BTreeMap::new(),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let (a, b) = (&marks[0], &marks[marks.len() - 1]);
        write(
            &self.sink,
            &Line::Slice {
                label: label.to_string(),
                from: self.clock.wall(a.at),
                to: self.clock.wall(b.at),
            },
        );
        Ok(run::slice(spec, a, b, thirds))
    }

    /// Stop every series (each ends its statement in flight, bounded by the worker's timeouts) and close
    /// the file.
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        for h in self.handles {
            let _ = h.join();
        }
    }
}

/// One series: the run, started again whenever it could not start (the server was away), until stopped.
fn series_loop(
    target: &Target,
    spec: &RunSpec,
    name: &str,
    stop: &AtomicBool,
    tap: &Tap,
    sink: &Mutex<Sink>,
    clock: Clock,
) {
    let mut wait = Duration::from_millis(200);
    let socket = target.opts.get_socket().is_some();
    // One start line per process: the attempts after a failure continue the same series.
    write(
        sink,
        &Line::Start {
            ts: Utc::now(),
            series: name.to_string(),
            workload: spec.workload.name(),
            threads: spec.threads,
        },
    );
    while !stop.load(Ordering::SeqCst) {
        let t0 = Utc::now();
        // Wall-clock times of the run's own instants: the first line starts when measurement did, each one
        // lasts what the run measured it to last, and the next starts where it ended, so the lines tile the
        // time exactly.
        let mut last_to: Option<DateTime<Utc>> = None;
        let result = run::run_tapped(
            target,
            spec,
            stop,
            &mut |i| {
                let from = last_to
                    .unwrap_or_else(|| clock.wall(tap.started().unwrap_or_else(Instant::now)));
                let to = from + chrono::Duration::microseconds((i.seconds * 1e6) as i64);
                last_to = Some(to);
                write(sink, &Line::Interval(DuringInterval::of(name, from, to, i)))
            },
            Some(tap),
        );
        let Err(e) = result else { break };
        if stop.load(Ordering::SeqCst) {
            break;
        }
        // It did not get going: the server is away, or not ready for it. Counted as an interval of errors
        // when it is unreachable, said once as a failure otherwise, and tried again after a pause.
        let reachable = mysql::Conn::new(target.opts.clone());
        let now = Utc::now();
        match reachable {
            Err(ce) => write(
                sink,
                &Line::Interval(DuringInterval {
                    series: name.to_string(),
                    from: t0,
                    to: now,
                    transactions: 0,
                    tps: 0.0,
                    p95_ms: None,
                    errors: 1,
                    error_codes: [(super::worker::connect_error_code(&ce, socket), 1)]
                        .into_iter()
                        .collect(),
                    reconnects: 0,
                }),
            ),
            Ok(_) => write(
                sink,
                &Line::Failure {
                    ts: now,
                    series: name.to_string(),
                    message: crate::error::display_of(&e),
                },
            ),
        }
        let until = Instant::now() + wait;
        while Instant::now() < until && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        wait = (wait * 2).min(Duration::from_secs(2));
    }
    write(
        sink,
        &Line::Stop {
            ts: Utc::now(),
            series: name.to_string(),
        },
    );
}

/// Every line of a run's [`FILE`]; a torn last line (a crash mid-write) is left out.
pub fn read_lines(run_dir: &Path) -> Vec<Line> {
    std::fs::read_to_string(run_dir.join(FILE))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A step's span, from the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSpan {
    pub step: String,
    pub title: String,
    pub from: DateTime<Utc>,
    /// When it ended (done, refused, failed, or the run stopped); None while it runs.
    pub to: Option<DateTime<Utc>>,
    pub status: String,
}

/// What the workload measured while one step ran, set against "before".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepImpact {
    pub step: String,
    pub seconds: f64,
    /// Intervals of the workload in the step (those whose middle falls in it).
    pub intervals: usize,
    pub median_tps: Option<f64>,
    /// The highest p95 of those intervals.
    pub worst_p95_ms: Option<f64>,
    /// Change of the median tps against "before", in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tps_vs_before_pct: Option<f64>,
    /// Errors of the workload and of the write probe in those intervals, by code.
    pub errors: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_codes: BTreeMap<u16, u64>,
    /// Of those, the write probe's.
    pub write_errors: u64,
    /// The step was shorter than an interval: the figures are those of the interval it ran in, which other
    /// steps share.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
}

/// The impact over time, as `report.json` holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DuringReport {
    pub workload: String,
    pub threads: u32,
    /// The write probe, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<String>,
    pub interval_s: f64,
    /// The time the chart counts from: the first line.
    pub started: DateTime<Utc>,
    pub intervals: Vec<DuringInterval>,
    pub steps: Vec<StepSpan>,
    /// Where the "before" and "after" figures were taken.
    pub slices: Vec<(String, DateTime<Utc>, DateTime<Utc>)>,
    pub impact: Vec<StepImpact>,
    /// What kept a series from running for a while.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
}

/// The steps' spans from the journal: each start to its end (a step started again after a resume has a
/// span for each start).
pub fn step_spans(
    events: &[crate::plan::journal::Event],
    titles: &BTreeMap<String, String>,
) -> Vec<StepSpan> {
    use crate::plan::journal::EventKind as K;
    let mut spans: Vec<StepSpan> = Vec::new();
    let close = |spans: &mut Vec<StepSpan>, step: Option<&str>, ts, status: &str| {
        for s in spans.iter_mut().rev() {
            if s.to.is_none() && step.is_none_or(|id| id == s.step) {
                s.to = Some(ts);
                s.status = status.to_string();
            }
        }
    };
    for e in events {
        match &e.kind {
            K::StepStarted { step } => {
                close(&mut spans, None, e.ts, "stopped");
                spans.push(StepSpan {
                    step: step.clone(),
                    title: titles.get(step).cloned().unwrap_or_default(),
                    from: e.ts,
                    to: None,
                    status: "running".into(),
                });
            }
            K::StepDone { step } => close(&mut spans, Some(step), e.ts, "done"),
            K::StepRefused { step, .. } => close(&mut spans, Some(step), e.ts, "refused"),
            K::StepFailed { step, .. } => close(&mut spans, Some(step), e.ts, "failed"),
            K::Interrupted { .. } | K::RunDone { .. } | K::Resumed { .. } => {
                close(&mut spans, None, e.ts, "stopped")
            }
            _ => {}
        }
    }
    spans
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    })
}

/// Each step's figures from the intervals that overlap it (pure, so it is tested without a server). The
/// "before" figures are taken inside the first step they bracket, after its pre-checks: that time is the
/// benchmark's, not the step's, and is left out of it.
pub fn impact(
    intervals: &[DuringInterval],
    steps: &[StepSpan],
    slices: &[(String, DateTime<Utc>, DateTime<Utc>)],
    before: Option<&BenchResult>,
    now: DateTime<Utc>,
) -> Vec<StepImpact> {
    steps
        .iter()
        .map(|s| {
            let to = s.to.unwrap_or(now);
            let from = slices
                .iter()
                .filter(|(_, a, _)| *a >= s.from && *a < to)
                .map(|(_, _, b)| *b)
                .fold(s.from, |f, b| f.max(b))
                .min(to);
            // The intervals whose middle falls in the step; a step shorter than that gets the interval it ran
            // in, shared with its neighbours (`shared`).
            let mid = |i: &DuringInterval| i.from + (i.to - i.from) / 2;
            let mut over: Vec<&DuringInterval> = intervals
                .iter()
                .filter(|i| mid(i) >= from && mid(i) < to)
                .collect();
            let shared = !over.iter().any(|i| i.series == WORKLOAD);
            if shared {
                let at = from + (to - from) / 2;
                over = intervals
                    .iter()
                    .filter(|i| i.from <= at && i.to > at)
                    .collect();
            }
            let work: Vec<&&DuringInterval> =
                over.iter().filter(|i| i.series == WORKLOAD).collect();
            let median_tps = median(work.iter().map(|i| i.tps).collect());
            let worst_p95_ms = work
                .iter()
                .filter_map(|i| i.p95_ms)
                .fold(None, |m: Option<f64>, p| Some(m.map_or(p, |m| m.max(p))));
            let mut error_codes = BTreeMap::new();
            for i in &over {
                for (c, n) in &i.error_codes {
                    *error_codes.entry(*c).or_default() += n;
                }
            }
            StepImpact {
                step: s.step.clone(),
                seconds: (to - from).num_microseconds().unwrap_or(0) as f64 / 1e6,
                intervals: work.len(),
                median_tps,
                worst_p95_ms,
                tps_vs_before_pct: match (median_tps, before) {
                    (Some(m), Some(b)) if b.tps > 0.0 => Some((m - b.tps) / b.tps * 100.0),
                    _ => None,
                },
                errors: over.iter().map(|i| i.errors).sum(),
                error_codes,
                write_errors: over
                    .iter()
                    .filter(|i| i.series == WRITES)
                    .map(|i| i.errors)
                    .sum(),
                shared,
            }
        })
        .collect()
}

/// The impact over time of the run in `run_dir`: its lines and its journal's steps; None without lines.
pub fn report_of(
    run_dir: &Path,
    titles: &BTreeMap<String, String>,
    before: Option<&BenchResult>,
) -> Option<DuringReport> {
    let lines = read_lines(run_dir);
    let (workload, threads, started) = lines.iter().find_map(|l| match l {
        Line::Start {
            ts,
            series,
            workload,
            threads,
        } if series == WORKLOAD => Some((workload.clone(), *threads, *ts)),
        _ => None,
    })?;
    let probe = lines.iter().find_map(|l| match l {
        Line::Start {
            series, workload, ..
        } if series == WRITES => Some(workload.clone()),
        _ => None,
    });
    let intervals: Vec<DuringInterval> = lines
        .iter()
        .filter_map(|l| match l {
            Line::Interval(i) => Some(i.clone()),
            _ => None,
        })
        .collect();
    let slices: Vec<(String, DateTime<Utc>, DateTime<Utc>)> = lines
        .iter()
        .filter_map(|l| match l {
            Line::Slice { label, from, to } => Some((label.clone(), *from, *to)),
            _ => None,
        })
        .collect();
    let mut failures: Vec<String> = Vec::new();
    for l in &lines {
        if let Line::Failure {
            series, message, ..
        } = l
        {
            let f = format!("{series}: {message}");
            if !failures.contains(&f) {
                failures.push(f);
            }
        }
    }
    let events = crate::plan::journal::read_journal(run_dir).unwrap_or_default();
    let steps = step_spans(&events, titles);
    let impact = impact(&intervals, &steps, &slices, before, Utc::now());
    Some(DuringReport {
        workload,
        threads,
        probe,
        interval_s: INTERVAL.as_secs_f64(),
        started,
        intervals,
        steps,
        slices,
        impact,
        failures,
    })
}

impl DuringReport {
    /// True when nothing measured writes: a workload that only reads and no write probe beside it.
    pub fn reads_only(&self) -> bool {
        self.probe.is_none() && Workload::parse(&self.workload).is_ok_and(|w| w.is_read_only())
    }

    /// The text summary's lines: one per step.
    pub fn render_text(&self, before: Option<&BenchResult>) -> String {
        let mut s = format!(
            "\nimpact during the plan ({}, {} thread(s), {} s intervals{}",
            self.workload,
            self.threads,
            self.interval_s,
            self.probe
                .as_ref()
                .map(|p| format!("; writes probed by {p}"))
                .unwrap_or_default()
        );
        match before {
            Some(b) => s.push_str(&format!(
                "; before: {:.1} tps, p95 {:.2} ms):\n",
                b.tps, b.latency_ms.p95
            )),
            None => s.push_str("):\n"),
        }
        for i in &self.impact {
            let tps = match (i.median_tps, i.tps_vs_before_pct) {
                (Some(m), Some(p)) => format!("median {m:.1} tps ({p:+.0}% vs before)"),
                (Some(m), None) => format!("median {m:.1} tps"),
                (None, _) => "no interval".to_string(),
            };
            let p95 = i
                .worst_p95_ms
                .map(|p| format!(", worst p95 {p:.2} ms"))
                .unwrap_or_else(|| ", no transaction completed".to_string());
            let errors = if i.errors == 0 {
                ", no errors".to_string()
            } else {
                format!(
                    ", {} error(s): {}{}",
                    i.errors,
                    describe_codes(&i.error_codes),
                    if i.write_errors > 0 {
                        format!(" ({} of the write probe)", i.write_errors)
                    } else {
                        String::new()
                    }
                )
            };
            s.push_str(&format!(
                "  {} ({:.1} s{}): {tps}{p95}{errors}\n",
                i.step,
                i.seconds,
                if i.shared {
                    ", within one interval"
                } else {
                    ""
                }
            ));
        }
        if self.reads_only() {
            s.push_str("  (the workload only reads: writes were not measured)\n");
        }
        for f in &self.failures {
            s.push_str(&format!("  not measured for a while: {f}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::journal::{Event, EventKind};

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    fn iv(
        series: &str,
        from: i64,
        tps: f64,
        p95: Option<f64>,
        codes: &[(u16, u64)],
    ) -> DuringInterval {
        let error_codes: BTreeMap<u16, u64> = codes.iter().copied().collect();
        DuringInterval {
            series: series.into(),
            from: t(from),
            to: t(from + 1),
            transactions: tps as u64,
            tps,
            p95_ms: p95,
            errors: error_codes.values().sum(),
            error_codes,
            reconnects: 0,
        }
    }

    fn ev(s: i64, kind: EventKind) -> Event {
        Event { ts: t(s), kind }
    }

    #[test]
    fn steps_span_from_their_start_to_their_end_and_a_resume_closes_the_one_left_open() {
        let events = vec![
            ev(0, EventKind::StepStarted { step: "a".into() }),
            ev(2, EventKind::StepDone { step: "a".into() }),
            ev(2, EventKind::StepStarted { step: "b".into() }),
            ev(
                5,
                EventKind::Resumed {
                    after_step: Some("a".into()),
                },
            ),
            ev(6, EventKind::StepStarted { step: "b".into() }),
            ev(
                9,
                EventKind::StepFailed {
                    step: "b".into(),
                    reason: "x".into(),
                    recovery: None,
                },
            ),
        ];
        let titles = [("a".to_string(), "Step A".to_string())]
            .into_iter()
            .collect();
        let spans = step_spans(&events, &titles);
        assert_eq!(spans.len(), 3);
        assert_eq!(
            (spans[0].from, spans[0].to, spans[0].status.as_str()),
            (t(0), Some(t(2)), "done")
        );
        assert_eq!(spans[0].title, "Step A");
        assert_eq!(
            (spans[1].to, spans[1].status.as_str()),
            (Some(t(5)), "stopped")
        );
        assert_eq!(
            (spans[2].from, spans[2].to, spans[2].status.as_str()),
            (t(6), Some(t(9)), "failed")
        );
    }

    #[test]
    fn a_step_gets_the_median_the_worst_p95_and_the_errors_of_the_intervals_it_overlaps() {
        let intervals = vec![
            iv(WORKLOAD, 0, 100.0, Some(2.0), &[]),
            iv(WORKLOAD, 1, 40.0, Some(9.0), &[(1205, 2)]),
            iv(WRITES, 1, 0.0, None, &[(1205, 3)]),
            iv(WORKLOAD, 2, 0.0, None, &[(2002, 5)]),
            iv(WORKLOAD, 3, 90.0, Some(3.0), &[]),
        ];
        let steps = vec![StepSpan {
            step: "copy".into(),
            title: String::new(),
            from: t(1),
            to: Some(t(3)),
            status: "done".into(),
        }];
        let before = BenchResult {
            tps: 80.0,
            ..serde_json::from_str::<BenchResult>(
                r#"{"workload":"w","threads":1,"time_s":1,"transactions":1,"queries":1,"errors":0,"tps":1,"qps":1,
                "latency_ms":{"min":1,"avg":1,"p95":1,"p99":1,"max":1},"per_transaction":{}}"#,
            )
            .unwrap()
        };
        let i = &impact(&intervals, &steps, &[], Some(&before), t(10))[0];
        // The intervals from 1 to 3, whose middles are in it.
        assert_eq!(i.intervals, 2);
        assert!(!i.shared);
        assert_eq!(i.median_tps, Some(20.0));
        assert_eq!(i.worst_p95_ms, Some(9.0));
        assert_eq!(i.tps_vs_before_pct, Some(-75.0));
        assert_eq!(i.errors, 10);
        assert_eq!(i.write_errors, 3);
        assert_eq!(i.error_codes, [(1205, 5), (2002, 5)].into_iter().collect());
        assert_eq!(i.seconds, 2.0);
        // A step in no interval has nothing to tell, and says so.
        let far = StepSpan {
            from: t(50),
            to: Some(t(51)),
            ..steps[0].clone()
        };
        let none = &impact(&intervals, &[far], &[], None, t(60))[0];
        assert_eq!(
            (none.intervals, none.median_tps, none.worst_p95_ms),
            (0, None, None)
        );
        // A step shorter than an interval gets the one it ran in, marked as shared.
        let short = StepSpan {
            from: t(3) + chrono::Duration::milliseconds(100),
            to: Some(t(3) + chrono::Duration::milliseconds(300)),
            ..steps[0].clone()
        };
        let s = &impact(&intervals, &[short], &[], None, t(60))[0];
        assert_eq!((s.intervals, s.median_tps, s.shared), (1, Some(90.0), true));
        // The "before" figures taken inside the step are not the step's.
        let sliced = &impact(
            &intervals,
            &steps,
            &[("before".to_string(), t(1), t(2))],
            Some(&before),
            t(10),
        )[0];
        assert_eq!(
            (sliced.intervals, sliced.median_tps, sliced.seconds),
            (1, Some(0.0), 1.0)
        );
    }

    #[test]
    fn lines_read_back_as_written_and_a_torn_one_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("bench")).unwrap();
        let lines = vec![
            Line::Start {
                ts: t(0),
                series: WORKLOAD.into(),
                workload: "oltp_read_write".into(),
                threads: 2,
            },
            Line::Interval(iv(WORKLOAD, 0, 10.0, Some(1.5), &[(2013, 1)])),
            Line::Slice {
                label: "before".into(),
                from: t(0),
                to: t(1),
            },
        ];
        let mut text: String = lines
            .iter()
            .map(|l| serde_json::to_string(l).unwrap() + "\n")
            .collect();
        text.push_str("{\"interval\":{\"ser");
        std::fs::write(dir.path().join(FILE), text).unwrap();
        assert_eq!(read_lines(dir.path()), lines);
        let r = report_of(dir.path(), &BTreeMap::new(), None).unwrap();
        assert_eq!(
            (r.workload.as_str(), r.threads, r.started),
            ("oltp_read_write", 2, t(0))
        );
        assert_eq!(r.intervals.len(), 1);
        assert_eq!(r.slices, vec![("before".to_string(), t(0), t(1))]);
        assert_eq!(
            describe_codes(&r.intervals[0].error_codes),
            "2013 connection lost ×1"
        );
    }

    #[test]
    fn the_probe_comes_with_a_workload_that_reads_a_real_table_only() {
        let table = PlanBench {
            workload: "table:shop.orders".into(),
            ..PlanBench::read_only(Duration::from_secs(5))
        };
        let d = DuringSpec::of(&table, 3, "convert").unwrap();
        assert_eq!(
            (
                d.workload.threads,
                d.workload.report_interval,
                d.workload.during
            ),
            (3, INTERVAL, true)
        );
        assert_eq!(d.workload.tag, "/* innops:convert:during */");
        let p = d.probe.as_ref().unwrap();
        assert_eq!(p.workload.name(), "write_probe:shop.orders");
        assert_eq!((p.threads, p.rate, p.during), (1, PROBE_RATE, true));
        assert_eq!(d.sessions(), 4);
        let rw = DuringSpec::of(&PlanBench::read_write(Duration::from_secs(5)), 2, "redo").unwrap();
        assert!(rw.probe.is_none());
        assert_eq!(rw.sessions(), 2);
    }
}
