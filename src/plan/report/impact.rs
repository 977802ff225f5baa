//! The impact over time read back: a run's lines of [`crate::bench::during::FILE`] and its journal's step starts and ends
//! become `report.json`'s `during` ([`report_of`]): each step's span, and what the workload measured in it set
//! against "before" ([`impact`], pure and tested without a server: errors by their own time, figures from the
//! intervals wholly inside the step); and the text summary's lines.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::bench::during::{
    describe_codes, read_lines, DuringInterval, Line, INTERVAL, WORKLOAD, WRITES,
};
use crate::bench::{BenchResult, Workload};

/// A step's span, from the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSpan {
    pub step: String,
    pub title: String,
    pub from: DateTime<Utc>,
    /// When it ended (done, refused, failed, or the run stopped); None while it runs.
    pub to: Option<DateTime<Utc>>,
    pub status: SpanEnd,
}

/// How a step's span ended, as its journal tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpanEnd {
    /// Not ended: the step runs now.
    Running,
    Done,
    Refused,
    Failed,
    /// The run stopped (interrupted, resumed, or another step started) before the step said how it ended.
    Stopped,
}

impl SpanEnd {
    /// The word the report shows.
    pub fn name(self) -> &'static str {
        match self {
            SpanEnd::Running => "running",
            SpanEnd::Done => "done",
            SpanEnd::Refused => "refused",
            SpanEnd::Failed => "failed",
            SpanEnd::Stopped => "stopped",
        }
    }
}

/// What the workload measured while one step ran, set against "before".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepImpact {
    pub step: String,
    pub seconds: f64,
    /// Whole intervals of the workload inside the step.
    pub intervals: usize,
    /// The median tps of those intervals; for a step with none, the transactions completed in the tenths of
    /// a second inside it, per second.
    pub median_tps: Option<f64>,
    /// The highest p95 of those intervals (None without a whole interval: a p95 cannot be split).
    pub worst_p95_ms: Option<f64>,
    /// Change of the median tps against "before", in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tps_vs_before_pct: Option<f64>,
    /// Errors of the workload and of the write probe while the step ran (each by its own time), by code.
    pub errors: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub error_codes: BTreeMap<u16, u64>,
    /// Of those, the write probe's.
    pub write_errors: u64,
    /// No whole interval lies inside the step: its tps is from the tenths of a second inside it, and it has
    /// no p95 of its own.
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
    let close = |spans: &mut Vec<StepSpan>, step: Option<&str>, ts, status: SpanEnd| {
        for s in spans.iter_mut().rev() {
            if s.to.is_none() && step.is_none_or(|id| id == s.step) {
                s.to = Some(ts);
                s.status = status;
            }
        }
    };
    for e in events {
        match &e.kind {
            K::StepStarted { step } => {
                close(&mut spans, None, e.ts, SpanEnd::Stopped);
                spans.push(StepSpan {
                    step: step.clone(),
                    title: titles.get(step).cloned().unwrap_or_default(),
                    from: e.ts,
                    to: None,
                    status: SpanEnd::Running,
                });
            }
            K::BenchStarted { label } => {
                close(&mut spans, None, e.ts, SpanEnd::Stopped);
                spans.push(StepSpan {
                    step: format!("bench-{label}"),
                    title: format!("benchmark {label}"),
                    from: e.ts,
                    to: None,
                    status: SpanEnd::Running,
                });
            }
            K::Bench { label, .. } => close(
                &mut spans,
                Some(&format!("bench-{label}")),
                e.ts,
                SpanEnd::Done,
            ),
            K::StepDone { step } => close(&mut spans, Some(step), e.ts, SpanEnd::Done),
            K::StepRefused { step, .. } => close(&mut spans, Some(step), e.ts, SpanEnd::Refused),
            K::StepFailed { step, .. } => close(&mut spans, Some(step), e.ts, SpanEnd::Failed),
            K::Interrupted { .. } | K::RunDone { .. } | K::Resumed { .. } => {
                close(&mut spans, None, e.ts, SpanEnd::Stopped)
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

/// What happened between `from` and `to`, from the intervals: the workload's whole intervals inside the span
/// (their median tps and worst p95), the transactions counted in the tenths inside it, and every error at its
/// own time. An interval that only overlaps the span lends nothing of the time outside it: a step that ends
/// half a second before a shutdown gets none of the shutdown's refused connections.
struct Within<'a> {
    whole: Vec<&'a DuringInterval>,
    /// Transactions completed in the tenths wholly inside, and the microseconds those tenths cover.
    tenth_txns: u64,
    tenth_us: i64,
    error_codes: BTreeMap<u16, u64>,
    write_errors: u64,
}

fn within<'a>(
    intervals: &'a [DuringInterval],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Within<'a> {
    let mut w = Within {
        whole: Vec::new(),
        tenth_txns: 0,
        tenth_us: 0,
        error_codes: BTreeMap::new(),
        write_errors: 0,
    };
    for i in intervals.iter().filter(|i| i.to > from && i.from < to) {
        if i.series == WORKLOAD {
            if i.from >= from && i.to <= to {
                w.whole.push(i);
            }
            let tenth = (i.to - i.from) / 10;
            for (k, n) in i.tenths.iter().enumerate() {
                let a = i.from + tenth * k as i32;
                if a >= from && a + tenth <= to {
                    w.tenth_txns += u64::from(*n);
                    w.tenth_us += tenth.num_microseconds().unwrap_or(0);
                }
            }
        }
        let mut count = |code: u16| {
            *w.error_codes.entry(code).or_default() += 1;
            if i.series == WRITES {
                w.write_errors += 1;
            }
        };
        if i.errors_placed() {
            for (_, code) in i.errors_at.iter().filter(|(at, _)| *at >= from && *at < to) {
                count(*code);
            }
        } else {
            // Lines written before each error carried its time: the interval goes where its middle is.
            let mid = i.from + (i.to - i.from) / 2;
            if mid >= from && mid < to {
                for (code, n) in &i.error_codes {
                    for _ in 0..*n {
                        count(*code);
                    }
                }
            }
        }
    }
    w
}

/// Each step's figures from what happened while it ran (pure, so it is tested without a server): errors by
/// their own time; median tps and worst p95 from the workload's intervals wholly inside the step; a step
/// shorter than that gets its tps from the transactions counted in the tenths of a second inside it, and no
/// p95 (`shared`). The "before" figures are taken inside the first step they bracket, after its pre-checks:
/// that time is the benchmark's, not the step's, and is left out of it.
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
            let w = within(intervals, from, to);
            let shared = w.whole.is_empty();
            let median_tps = if shared {
                (w.tenth_us > 0).then(|| w.tenth_txns as f64 * 1e6 / w.tenth_us as f64)
            } else {
                median(w.whole.iter().map(|i| i.tps).collect())
            };
            let worst_p95_ms = w
                .whole
                .iter()
                .filter_map(|i| i.p95_ms)
                .fold(None, |m: Option<f64>, p| Some(m.map_or(p, |m| m.max(p))));
            StepImpact {
                step: s.step.clone(),
                seconds: (to - from).num_microseconds().unwrap_or(0) as f64 / 1e6,
                intervals: w.whole.len(),
                median_tps,
                worst_p95_ms,
                tps_vs_before_pct: match (median_tps, before) {
                    (Some(m), Some(b)) if b.tps > 0.0 => Some((m - b.tps) / b.tps * 100.0),
                    _ => None,
                },
                errors: w.error_codes.values().sum(),
                error_codes: w.error_codes,
                write_errors: w.write_errors,
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
        // Steps within one interval in a row share its figures: one line for the run of them.
        let same = |a: &StepImpact, b: &StepImpact| {
            a.shared
                && b.shared
                && a.median_tps == b.median_tps
                && a.worst_p95_ms == b.worst_p95_ms
                && a.error_codes == b.error_codes
                && a.write_errors == b.write_errors
        };
        let mut groups: Vec<&[StepImpact]> = Vec::new();
        let mut start = 0;
        for n in 1..=self.impact.len() {
            if n == self.impact.len() || !same(&self.impact[n - 1], &self.impact[n]) {
                groups.push(&self.impact[start..n]);
                start = n;
            }
        }
        for g in groups {
            let i = &g[0];
            let (steps, seconds, within) = match g {
                [one] => (
                    one.step.clone(),
                    one.seconds,
                    if one.shared {
                        ", shorter than an interval"
                    } else {
                        ""
                    }
                    .to_string(),
                ),
                [first, .., last] => (
                    if g.len() == 2 {
                        format!("{}, {}", first.step, last.step)
                    } else {
                        format!("{} … {}", first.step, last.step)
                    },
                    g.iter().map(|x| x.seconds).sum(),
                    format!(", {} steps each shorter than an interval", g.len()),
                ),
                [] => continue,
            };
            let what = if i.shared { "" } else { "median " };
            let tps = match (i.median_tps, i.tps_vs_before_pct) {
                (Some(m), Some(p)) => format!("{what}{m:.1} tps ({p:+.0}% vs before)"),
                (Some(m), None) => format!("{what}{m:.1} tps"),
                (None, _) => "no tps measured".to_string(),
            };
            let p95 = match i.worst_p95_ms {
                Some(p) => format!(", worst p95 {p:.2} ms"),
                None if i.shared => ", no p95 of its own".to_string(),
                None => ", no transaction completed".to_string(),
            };
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
                "  {steps} ({seconds:.1} s{within}): {tps}{p95}{errors}\n"
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
    use crate::bench::during::test_support::{iv, iv_at, t};
    use crate::bench::during::FILE;
    use crate::plan::journal::{Event, EventKind};

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
            (spans[0].from, spans[0].to, spans[0].status.name()),
            (t(0), Some(t(2)), "done")
        );
        assert_eq!(spans[0].title, "Step A");
        assert_eq!(
            (spans[1].to, spans[1].status.name()),
            (Some(t(5)), "stopped")
        );
        assert_eq!(
            (spans[2].from, spans[2].to, spans[2].status.name()),
            (t(6), Some(t(9)), "failed")
        );
    }

    fn span_ms(step: &str, from_ms: i64, to_ms: i64) -> StepSpan {
        StepSpan {
            step: step.into(),
            title: String::new(),
            from: t(0) + chrono::Duration::milliseconds(from_ms),
            to: Some(t(0) + chrono::Duration::milliseconds(to_ms)),
            status: SpanEnd::Done,
        }
    }

    #[test]
    fn a_step_that_ends_before_a_shutdown_in_the_same_interval_gets_none_of_its_refused_connections(
    ) {
        // One-second intervals; the step ends 400 ms into the second one, the shutdown follows it: from then on
        // nothing completes and every connection attempt is refused (2002).
        let intervals = vec![
            iv_at(WORKLOAD, 0, 100.0, Some(2.0), &[], [10; 10]),
            iv_at(
                WORKLOAD,
                1,
                40.0,
                Some(3.0),
                &[(450, 2013), (600, 2002), (800, 2002), (950, 2002)],
                [10, 10, 10, 10, 0, 0, 0, 0, 0, 0],
            ),
            iv_at(WORKLOAD, 2, 0.0, None, &[(300, 2002)], [0; 10]),
        ];
        let steps = vec![
            span_ms("redo/persist", 0, 1400),
            span_ms("redo/stop", 1400, 3000),
        ];
        let i = impact(&intervals, &steps, &[], None, t(10));
        assert_eq!(i[0].errors, 0, "{:?}", i[0]);
        assert!(i[0].error_codes.is_empty());
        // Its one whole interval (the first) gives its tps and p95; the second's shutdown does not.
        assert_eq!(
            (i[0].intervals, i[0].median_tps, i[0].worst_p95_ms),
            (1, Some(100.0), Some(2.0))
        );
        assert_eq!(
            i[1].error_codes,
            [(2002, 4), (2013, 1)].into_iter().collect()
        );
        assert_eq!((i[1].intervals, i[1].median_tps), (1, Some(0.0)));
    }

    #[test]
    fn an_error_at_a_step_boundary_belongs_to_the_step_that_starts_there() {
        let intervals = vec![iv_at(
            WORKLOAD,
            0,
            0.0,
            None,
            &[(299, 1205), (300, 1290), (999, 2013)],
            [0; 10],
        )];
        let steps = vec![span_ms("a", 0, 300), span_ms("b", 300, 1000)];
        let i = impact(&intervals, &steps, &[], None, t(10));
        assert_eq!(i[0].error_codes, [(1205, 1)].into_iter().collect());
        assert_eq!(
            i[1].error_codes,
            [(1290, 1), (2013, 1)].into_iter().collect()
        );
    }

    #[test]
    fn a_step_shorter_than_an_interval_counts_the_transactions_of_its_own_tenths_and_has_no_p95() {
        // 100 transactions a tenth, then none from 500 ms on (a lock); the write probe fails at 700 ms.
        let intervals = vec![
            iv_at(
                WORKLOAD,
                0,
                500.0,
                Some(9.0),
                &[],
                [100, 100, 100, 100, 100, 0, 0, 0, 0, 0],
            ),
            iv_at(WRITES, 0, 0.0, None, &[(700, 1205)], [0; 10]),
        ];
        let steps = vec![span_ms("a", 100, 400), span_ms("b", 500, 1000)];
        let i = impact(&intervals, &steps, &[], None, t(10));
        assert_eq!(
            (
                i[0].shared,
                i[0].intervals,
                i[0].median_tps,
                i[0].worst_p95_ms
            ),
            (true, 0, Some(1000.0), None)
        );
        assert_eq!((i[0].errors, i[0].write_errors), (0, 0));
        assert_eq!(i[1].median_tps, Some(0.0));
        assert_eq!((i[1].errors, i[1].write_errors), (1, 1));
        // A tenth only partly inside a step is not counted: no tps rather than a diluted one.
        let tiny = impact(&intervals, &[span_ms("c", 120, 180)], &[], None, t(10));
        assert_eq!(tiny[0].median_tps, None);
    }

    #[test]
    fn steps_shorter_than_an_interval_in_a_row_with_the_same_figures_share_one_text_line() {
        let intervals = vec![
            iv_at(WORKLOAD, 0, 100.0, Some(2.0), &[], [10; 10]),
            iv_at(WORKLOAD, 1, 50.0, Some(4.0), &[(150, 2013)], [5; 10]),
            iv_at(WORKLOAD, 2, 90.0, Some(3.0), &[], [9; 10]),
            iv_at(
                WORKLOAD,
                3,
                95.0,
                Some(3.0),
                &[],
                [10, 10, 10, 10, 10, 10, 10, 10, 10, 5],
            ),
        ];
        // b and c in the second interval with the same figures; a there too, with the error; d in the third;
        // e across the third and fourth.
        let steps = vec![
            span_ms("a", 1100, 1200),
            span_ms("b", 1200, 1300),
            span_ms("c", 1300, 1400),
            span_ms("d", 2100, 2200),
            span_ms("e", 2200, 4000),
        ];
        let report = DuringReport {
            workload: "oltp_read_only".into(),
            threads: 2,
            probe: None,
            interval_s: 1.0,
            started: t(0),
            intervals: intervals.clone(),
            steps: steps.clone(),
            slices: Vec::new(),
            impact: impact(&intervals, &steps, &[], None, t(10)),
            failures: Vec::new(),
        };
        let text = report.render_text(None);
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("  ")).collect();
        assert_eq!(
            lines[0],
            "  a (0.1 s, shorter than an interval): 50.0 tps, no p95 of its own, 1 error(s): 2013 connection lost ×1",
            "{text}"
        );
        assert_eq!(
            lines[1],
            "  b, c (0.2 s, 2 steps each shorter than an interval): 50.0 tps, no p95 of its own, no errors",
            "{text}"
        );
        assert!(
            lines[2].starts_with("  d (0.1 s, shorter than an interval): 90.0 tps"),
            "{text}"
        );
        assert_eq!(
            lines[3], "  e (1.8 s): median 95.0 tps, worst p95 3.00 ms, no errors",
            "{text}"
        );
        assert_eq!(
            lines.len(),
            5,
            "and the note that only reads were measured: {text}"
        );
    }

    #[test]
    fn a_step_gets_the_median_the_worst_p95_and_the_errors_of_the_whole_intervals_inside_it() {
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
            status: SpanEnd::Done,
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
        let short = StepSpan {
            from: t(3) + chrono::Duration::milliseconds(100),
            to: Some(t(3) + chrono::Duration::milliseconds(300)),
            ..steps[0].clone()
        };
        // A step shorter than an interval, in lines that counted no tenths: nothing it can call its own.
        let s = &impact(&intervals, &[short], &[], None, t(60))[0];
        assert_eq!((s.intervals, s.median_tps, s.shared), (0, None, true));
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
}
