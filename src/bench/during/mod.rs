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
//! and a restart's refused connections are counted as what they are. Each line also carries every error with
//! its own time and the transactions completed in each tenth of it, so the report can charge a step with what
//! happened while it ran even when it ends mid-interval (a shutdown right after a step is not that step's).
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

use super::run::{self, RunSpec};
use super::tap::{self, Mark, Tap};
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
    /// Each error at its own time, with its code: what a step that ends inside the interval is judged by.
    /// (Empty in lines written before innops recorded it; the report then places the interval by its middle.)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors_at: Vec<(DateTime<Utc>, u16)>,
    /// The transactions completed in each tenth of the interval (ten counts; empty when none was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tenths: Vec<u32>,
}

impl DuringInterval {
    fn of(series: &str, from: DateTime<Utc>, to: DateTime<Utc>, i: &Interval) -> DuringInterval {
        let at = |s: f64| (from + chrono::Duration::microseconds((s * 1e6) as i64)).min(to);
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
            errors_at: i.error_at.iter().map(|(s, c)| (at(*s), *c)).collect(),
            tenths: i.tenths.clone(),
        }
    }

    /// Whether each of its errors carries its own time (every line innops writes now; not older ones).
    pub fn errors_placed(&self) -> bool {
        self.errors_at.len() as u64 == self.errors
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
            tag: format!("/* innops:{}:during */", crate::sql::tag_safe(procedure)),
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
                    crate::sql::tag_safe(procedure)
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
        let reachable = mysql::Conn::new(target.opts.clone()).is_ok();
        if reachable {
            super::ready(target, &spec.workload)?;
        }
        let path = run_dir.join(FILE);
        let file = crate::files::open_private_append(&path)?;
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
        // The first step should find the workload measuring: wait for it (bounded). A server that is down is
        // not waited for: the workload keeps trying on its own, and the plan is what starts the server.
        if reachable {
            during.tap.wait_started(Duration::from_secs(60));
        }
        Ok(during)
    }

    pub fn spec(&self) -> &DuringSpec {
        &self.spec
    }

    /// The figures of `time` of the workload from now, as a benchmark of its own would give them: one
    /// interval line a second (the noise a change is judged against), like the plan's own benchmark.
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
        let parts = (time.as_secs() as u32).max(1);
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
        let seconds: Vec<Interval> = if parts > 1 && marks.len() == parts as usize + 1 {
            marks
                .windows(2)
                .map(|w| {
                    let r = tap::slice(spec, &w[0], &w[1], Vec::new());
                    Interval {
                        t: w[1].at.saturating_duration_since(marks[0].at).as_secs_f64(),
                        threads: r.threads,
                        tps: r.tps,
                        qps: r.qps,
                        reads_ps: r.reads as f64 / r.time_s.max(1e-9),
                        writes_ps: r.writes as f64 / r.time_s.max(1e-9),
                        other_ps: r.other as f64 / r.time_s.max(1e-9),
                        p95_ms: r.latency_ms.p95,
                        p99_ms: r.latency_ms.p99,
                        err_ps: r.errors as f64 / r.time_s.max(1e-9),
                        reconn_ps: r.reconnects as f64 / r.time_s.max(1e-9),
                        seconds: r.time_s,
                        transactions: r.transactions,
                        ..Interval::default()
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
        Ok(tap::slice(spec, a, b, seconds))
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
        // It did not get going: the server is away, or not ready for it. Tried again after a pause; while it
        // is unreachable the attempt and the pause after it are one interval with its error, so the chart has
        // no hole where the server was down; otherwise the reason is said as a failure.
        let reachable = mysql::Conn::new(target.opts.clone()).map(|_| ());
        let tried = Utc::now();
        if let Ok(()) = reachable {
            write(
                sink,
                &Line::Failure {
                    ts: Utc::now(),
                    series: name.to_string(),
                    message: crate::error::display_of(&e),
                },
            );
        }
        let until = Instant::now() + wait;
        while Instant::now() < until && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        wait = (wait * 2).min(Duration::from_secs(2));
        if let Err(ce) = reachable {
            let code = super::worker::connect_error_code(&ce, socket);
            write(
                sink,
                &Line::Interval(DuringInterval {
                    series: name.to_string(),
                    from: t0,
                    to: Utc::now(),
                    transactions: 0,
                    tps: 0.0,
                    p95_ms: None,
                    errors: 1,
                    error_codes: [(code, 1)].into_iter().collect(),
                    reconnects: 0,
                    errors_at: vec![(tried, code)],
                    tenths: Vec::new(),
                }),
            );
        }
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

/// Intervals and instants for the unit tests of this module and of the plan's impact report.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// An instant `s` seconds after a fixed origin.
    pub fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    /// One interval of `series` from second `from` to the next, with its errors by code.
    pub fn iv(
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
            errors_at: Vec::new(),
            tenths: Vec::new(),
        }
    }

    /// [`iv`] with each error at its own time, `ms` milliseconds after the interval's start, and the
    /// transactions completed in each tenth.
    pub fn iv_at(
        series: &str,
        from: i64,
        tps: f64,
        p95: Option<f64>,
        errors: &[(i64, u16)],
        tenths: [u32; 10],
    ) -> DuringInterval {
        let mut codes: BTreeMap<u16, u64> = BTreeMap::new();
        for (_, c) in errors {
            *codes.entry(*c).or_default() += 1;
        }
        let codes: Vec<(u16, u64)> = codes.into_iter().collect();
        DuringInterval {
            errors_at: errors
                .iter()
                .map(|(ms, c)| (t(from) + chrono::Duration::milliseconds(*ms), *c))
                .collect(),
            tenths: tenths.to_vec(),
            transactions: tenths.iter().map(|n| u64::from(*n)).sum(),
            ..iv(series, from, tps, p95, &codes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
