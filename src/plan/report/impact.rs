//! The impact over time read back: a run's lines of [`crate::bench::during::FILE`] and its journal's step starts and ends
//! become `report.json`'s `during` ([`report_of`]): each step's span, and what the workload measured in it set
//! against "before" ([`impact`], pure and tested without a server); and the text summary's lines.

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
                        ", within one interval"
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
                    format!(", {} steps within one interval", g.len()),
                ),
                [] => continue,
            };
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
    use crate::bench::during::test_support::{iv, t};
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

    #[test]
    fn steps_within_one_interval_in_a_row_share_one_text_line_and_the_rest_keep_their_own() {
        let intervals = vec![
            iv(WORKLOAD, 0, 100.0, Some(2.0), &[]),
            iv(WORKLOAD, 1, 50.0, Some(4.0), &[(2013, 1)]),
            iv(WORKLOAD, 2, 90.0, Some(3.0), &[]),
            iv(WORKLOAD, 3, 95.0, Some(3.0), &[]),
        ];
        let span = |step: &str, from_ms: i64, to_ms: i64| StepSpan {
            step: step.into(),
            title: String::new(),
            from: t(0) + chrono::Duration::milliseconds(from_ms),
            to: Some(t(0) + chrono::Duration::milliseconds(to_ms)),
            status: SpanEnd::Done,
        };
        // a, b, c in the second interval; d in the third; e across the third and fourth.
        let steps = vec![
            span("a", 1100, 1200),
            span("b", 1200, 1300),
            span("c", 1300, 1400),
            span("d", 2100, 2200),
            span("e", 2200, 3900),
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
            "  a … c (0.3 s, 3 steps within one interval): median 50.0 tps, worst p95 4.00 ms, 1 error(s): 2013 connection lost ×1",
            "{text}"
        );
        assert!(
            lines[1].starts_with("  d (0.1 s, within one interval): median 90.0 tps"),
            "{text}"
        );
        assert!(lines[2].starts_with("  e (1.7 s): "), "{text}");
        assert_eq!(
            lines.len(),
            4,
            "and the note that only reads were measured: {text}"
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
}
