//! The impact-over-time chart of `report.html` (`--bench-during`): one inline SVG with three panels on one
//! time axis — the workload's throughput, p95 latency (log scale, so a one-second lock wait and a one-
//! millisecond read both show) and errors per interval — behind which the steps are marked (a numbered line at
//! each start, listed under the chart), the spans the "before" and "after" figures were taken from, and the
//! spans innops blocked writes. No scripts, nothing fetched: it is text in the page.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use super::html::esc;
use super::impact::DuringReport;
use super::labels::{self, Placed, Want};
use super::WriteBlock;
use crate::bench::during::{describe_codes, DuringInterval, WORKLOAD, WRITES};

const W: f64 = 940.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 24.0;
/// Rows of step labels above the panels (a label goes to the next row where the first has no room).
const LABEL_ROWS: usize = 4;
/// Steps whose starts are closer than this on the chart share one label, the range of their numbers.
const CLUSTER_PX: f64 = 16.0;
/// Rows of "writes blocked" labels at the top of the throughput panel.
const BLOCK_ROWS: usize = 2;
const TOP: f64 = 28.0 + 14.0 * LABEL_ROWS as f64;
const TPS_H: f64 = 170.0;
const P95_H: f64 = 150.0;
const ERR_H: f64 = 80.0;
const GAP: f64 = 34.0;
/// Under the last panel: the x axis, its label and the key of steps too close together to label.
const BOTTOM: f64 = 62.0;

pub(super) const C_WORKLOAD: &str = "#1f5fbf";
pub(super) const C_PROBE: &str = "#d9730d";
/// The two kinds of errors differ in hue (vermilion against blue, apart for every common colour blindness,
/// Okabe and Ito's palette), in lightness, and in texture: the workload's are solid, the write probe's hatched.
pub(super) const C_ERR_WORKLOAD: &str = "#d55e00";
pub(super) const C_ERR_PROBE: &str = "#0072b2";
/// The hatching of the write probe's errors (a pattern per `<svg>`: the chart's, and the legend's swatch).
pub(super) fn hatch(id: &str) -> String {
    format!(
        r##"<defs><pattern id="{id}" patternUnits="userSpaceOnUse" width="5" height="5" patternTransform="rotate(45)"><rect width="5" height="5" fill="#fff"/><line x1="0" y1="0" x2="0" y2="5" stroke="{C_ERR_PROBE}" stroke-width="3"/></pattern></defs>"##
    )
}
const HATCH: &str = "innops-probe-errors";
pub(super) const HATCH_KEY: &str = "innops-probe-errors-key";
pub(super) const C_SLICE: &str = "#dce8fb";
pub(super) const C_BLOCKED: &str = "#fbdcdc";
pub(super) const C_STEP: &str = "#555";

/// Seconds since the chart's start.
pub(super) fn secs(t: DateTime<Utc>, t0: DateTime<Utc>) -> f64 {
    (t - t0).num_microseconds().unwrap_or(0) as f64 / 1e6
}

/// A step for axis ticks: 1, 2 or 5 times a power of ten, so that about `n` ticks cover `span`.
pub fn nice_step(span: f64, n: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / n.max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

/// A tick value: whole numbers as they are, fractions with the digits they need (0.1, 0.25, 2.5).
pub(crate) fn fmt_num(v: f64) -> String {
    if v >= 100.0 || v == v.round() {
        return format!("{v:.0}");
    }
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Where a value lands on a panel: linear from 0 to `max`, or log10 between `lo` and `hi`.
#[derive(Clone, Copy)]
enum Scale {
    Linear { max: f64 },
    Log { lo: f64, hi: f64 },
}

impl Scale {
    /// The fraction of the panel's height (0 at the bottom).
    fn frac(self, v: f64) -> f64 {
        match self {
            Scale::Linear { max } => (v / max).clamp(0.0, 1.0),
            Scale::Log { lo, hi } => {
                ((v.max(lo).log10() - lo.log10()) / (hi.log10() - lo.log10())).clamp(0.0, 1.0)
            }
        }
    }

    fn ticks(self) -> Vec<f64> {
        match self {
            Scale::Linear { max } => {
                let step = if max <= 2.0 { 1.0 } else { nice_step(max, 4.0) };
                (0..)
                    .map(|i| i as f64 * step)
                    .take_while(|v| *v <= max * 1.0001)
                    .collect()
            }
            Scale::Log { lo, hi } => {
                let mut v = lo;
                let mut out = Vec::new();
                while v <= hi * 1.0001 {
                    out.push(v);
                    v *= 10.0;
                }
                out
            }
        }
    }
}

/// A panel: its top, height and scale.
struct Panel {
    top: f64,
    h: f64,
    scale: Scale,
}

impl Panel {
    fn y(&self, v: f64) -> f64 {
        self.top + self.h - self.scale.frac(v) * self.h
    }

    /// The frame, the y axis with its ticks and the title naming the unit.
    fn frame(&self, s: &mut String, title: &str, unit: &str) {
        let _ = write!(
            s,
            r##"<rect x="{LEFT}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#bbb"/>"##,
            self.top,
            W - LEFT - RIGHT,
            self.h
        );
        let _ = write!(
            s,
            r#"<text class="panel-title" x="{LEFT}" y="{:.1}" font-size="13" font-weight="bold">{}</text>"#,
            self.top - 6.0,
            esc(title)
        );
        for v in self.scale.ticks() {
            let y = self.y(v);
            let _ = write!(
                s,
                r##"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#eee"/><line x1="{:.1}" y1="{y:.1}" x2="{LEFT}" y2="{y:.1}" stroke="#888"/><text class="y-tick" x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{} {}</text>"##,
                LEFT,
                W - RIGHT,
                LEFT - 4.0,
                LEFT - 6.0,
                y + 4.0,
                fmt_num(v),
                esc(unit)
            );
        }
    }
}

/// The interval's points of one series: (x of its middle, value), split where the value is missing.
fn runs(
    intervals: &[&DuringInterval],
    f: impl Fn(&DuringInterval) -> Option<f64>,
    x: impl Fn(DateTime<Utc>) -> f64,
) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for i in intervals {
        match f(i) {
            Some(v) => {
                let mid = i.from + (i.to - i.from) / 2;
                out.last_mut().expect("one run at least").push((x(mid), v));
            }
            None => {
                if !out.last().expect("one run at least").is_empty() {
                    out.push(Vec::new());
                }
            }
        }
    }
    out.retain(|r| !r.is_empty());
    out
}

fn polyline(
    s: &mut String,
    pts: &[(f64, f64)],
    panel: &Panel,
    colour: &str,
    dash: &str,
    class: &str,
) {
    if pts.len() == 1 {
        let (x, v) = pts[0];
        let _ = write!(
            s,
            r#"<circle class="{class}" cx="{x:.1}" cy="{:.1}" r="2.5" fill="{colour}"/>"#,
            panel.y(v)
        );
        return;
    }
    let p: Vec<String> = pts
        .iter()
        .map(|(x, v)| format!("{x:.1},{:.1}", panel.y(*v)))
        .collect();
    let _ = write!(
        s,
        r#"<polyline class="{class}" points="{}" fill="none" stroke="{colour}" stroke-width="1.8"{dash}/>"#,
        p.join(" ")
    );
}

/// Where everything lands: the time axis (from the workload's start to the last interval or step end) and the
/// three panels under it, scaled to the figures.
struct Layout {
    t0: DateTime<Utc>,
    end: DateTime<Utc>,
    span: f64,
    plot_w: f64,
    tps: Panel,
    p95: Panel,
    errs: Panel,
    plot_top: f64,
    plot_bottom: f64,
    /// The height of the whole chart.
    h: f64,
}

impl Layout {
    fn of(d: &DuringReport, work: &[&DuringInterval]) -> Layout {
        let t0 = d.started;
        let end = d
            .intervals
            .iter()
            .map(|i| i.to)
            .chain(d.steps.iter().filter_map(|s| s.to))
            .max()
            .unwrap_or(t0);
        let tps_max = work.iter().map(|i| i.tps).fold(0.0f64, f64::max);
        let tps = Panel {
            top: TOP,
            h: TPS_H,
            scale: Scale::Linear {
                max: {
                    let step = nice_step(tps_max.max(1.0), 4.0);
                    (tps_max / step).ceil().max(1.0) * step
                },
            },
        };
        let p95s = d.intervals.iter().filter_map(|i| i.p95_ms);
        let (lo, hi) = p95s.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let (lo, hi) = if hi <= 0.0 {
            (0.1, 10.0)
        } else {
            (
                10f64.powf(lo.max(0.001).log10().floor()),
                10f64
                    .powf(hi.log10().ceil())
                    .max(10f64.powf(lo.max(0.001).log10().floor() + 1.0)),
            )
        };
        let p95 = Panel {
            top: TOP + TPS_H + GAP,
            h: P95_H,
            scale: Scale::Log { lo, hi },
        };
        // The probe's bars stand on the workload's: the panel reaches the top of the highest stack.
        let err_max = d
            .intervals
            .iter()
            .map(|i| {
                i.errors
                    + if i.series == WRITES {
                        errors_below(work, i)
                    } else {
                        0
                    }
            })
            .max()
            .unwrap_or(0) as f64;
        let errs = Panel {
            top: TOP + TPS_H + GAP + P95_H + GAP,
            h: ERR_H,
            scale: Scale::Linear {
                // Counts: whole ticks only.
                max: {
                    let step = nice_step(err_max.max(1.0), 2.0).max(1.0);
                    (err_max / step).ceil().max(1.0) * step
                },
            },
        };
        Layout {
            t0,
            end,
            span: secs(end, t0).max(1.0),
            plot_w: W - LEFT - RIGHT,
            plot_top: TOP,
            plot_bottom: errs.top + ERR_H,
            h: errs.top + ERR_H + BOTTOM,
            tps,
            p95,
            errs,
        }
    }

    /// The x of a moment.
    fn x(&self, t: DateTime<Utc>) -> f64 {
        LEFT + (secs(t, self.t0) / self.span).clamp(0.0, 1.0) * self.plot_w
    }
}

/// The chart, with the write-block spans innops measured from its own guard.
pub fn impact_chart(d: &DuringReport, blocks: &[WriteBlock]) -> String {
    let work: Vec<&DuringInterval> = d
        .intervals
        .iter()
        .filter(|i| i.series == WORKLOAD)
        .collect();
    let probe: Vec<&DuringInterval> = d.intervals.iter().filter(|i| i.series == WRITES).collect();
    let l = Layout::of(d, &work);
    let h = l.h;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="impact" width="{W}" height="{h:.0}" viewBox="0 0 {W} {h:.0}" role="img" aria-label="Throughput, p95 latency and errors over time, with the steps marked">"#
    );
    s.push_str("<title>Throughput, p95 latency and errors each second during the plan, with the steps marked</title>");
    s.push_str(&hatch(HATCH));
    shaded_spans(&mut s, &l, d, blocks);
    l.tps.frame(
        &mut s,
        "Throughput of the workload (transactions per second)",
        "tps",
    );
    l.p95.frame(
        &mut s,
        "95th percentile latency (milliseconds, log scale)",
        "ms",
    );
    l.errs.frame(
        &mut s,
        "Errors per interval (failed statements and connection attempts)",
        "",
    );
    x_axis(&mut s, &l);
    step_marks(&mut s, &l, d);
    block_labels(&mut s, &l, blocks);
    series(&mut s, &l, &work, &probe);
    error_bars(&mut s, &l, &work, &probe);
    s.push_str("</svg>");
    s
}

/// Behind everything: where the figures before and after were taken, and where innops blocked writes.
fn shaded_spans(s: &mut String, l: &Layout, d: &DuringReport, blocks: &[WriteBlock]) {
    let (plot_top, plot_bottom) = (l.plot_top, l.plot_bottom);
    for (label, a, b) in &d.slices {
        let (xa, xb) = (l.x(*a), l.x(*b));
        let _ = write!(
            s,
            r##"<rect class="slice" x="{xa:.1}" y="{plot_top:.1}" width="{:.1}" height="{:.1}" fill="{C_SLICE}"><title>benchmark {}: the figures {} were taken here</title></rect><text x="{:.1}" y="{:.1}" font-size="10" fill="#3a64a8">bench {}</text>"##,
            (xb - xa).max(1.0),
            plot_bottom - plot_top,
            esc(label),
            esc(label),
            xa + 2.0,
            plot_bottom - 4.0,
            esc(label)
        );
    }
    for b in blocks {
        let (xa, xb) = (l.x(b.from), l.x(b.to));
        let _ = write!(
            s,
            r##"<rect class="blocked" x="{xa:.1}" y="{plot_top:.1}" width="{:.1}" height="{:.1}" fill="{C_BLOCKED}" fill-opacity="0.8"><title>writes to {} blocked for {:.2} s</title></rect>"##,
            (xb - xa).max(1.0),
            plot_bottom - plot_top,
            esc(&b.object),
            b.seconds,
        );
    }
}

/// The "writes blocked" labels, over the step lines that cross them.
fn block_labels(s: &mut String, l: &Layout, blocks: &[WriteBlock]) {
    let plot_top = l.plot_top;
    // One label for a table's blocks close together (the online path blocks writes for a moment per chunk),
    // in rows so that two tables blocked one after the other are both read; one with no room at all is in its
    // band's tooltip and in the report's sentence on blocked writes.
    let mut wants: Vec<(String, Want)> = Vec::new();
    for b in blocks {
        let (xa, xb) = (l.x(b.from) + 2.0, l.x(b.to));
        match wants.last_mut() {
            Some((o, w)) if *o == b.object && xa - w.to < 40.0 => w.to = w.to.max(xb),
            _ => wants.push((
                b.object.clone(),
                Want {
                    from: xa,
                    to: xb,
                    texts: vec![
                        format!("writes to {} blocked", b.object),
                        format!("{} blocked", b.object),
                        "blocked".into(),
                    ],
                },
            )),
        }
    }
    let wants: Vec<Want> = wants.into_iter().map(|(_, w)| w).collect();
    for p in labels::place(&wants, BLOCK_ROWS, LEFT + 2.0, W - RIGHT - 2.0)
        .iter()
        .flatten()
    {
        label_text(
            s,
            "blocked-label",
            p,
            plot_top + 12.0 + 12.0 * p.row as f64,
            "#a11",
        );
    }
}

/// The x axis: seconds since the workload started, under the last panel.
fn x_axis(s: &mut String, l: &Layout) {
    let (span, plot_w, plot_bottom) = (l.span, l.plot_w, l.plot_bottom);
    let step = nice_step(span, 10.0);
    let mut v = 0.0;
    while v <= span + 1e-9 {
        let xv = LEFT + v / span * plot_w;
        let _ = write!(
            s,
            r##"<line x1="{xv:.1}" y1="{plot_bottom:.1}" x2="{xv:.1}" y2="{:.1}" stroke="#888"/><text class="x-tick" x="{xv:.1}" y="{:.1}" text-anchor="middle" font-size="11">{} s</text>"##,
            plot_bottom + 4.0,
            plot_bottom + 16.0,
            fmt_num(v)
        );
        v += step;
    }
    let _ = write!(
        s,
        r#"<text class="x-label" x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12">time since the workload started (seconds; 0 s = {} UTC)</text>"#,
        LEFT + plot_w / 2.0,
        plot_bottom + 34.0,
        l.t0.format("%Y-%m-%d %H:%M:%S")
    );
}

/// A label's `<text>`, drawn with the width the layout gave it, so it covers the box the layout kept free; a
/// white halo keeps the step lines that cross it from striking it through.
fn label_text(s: &mut String, class: &str, p: &Placed, y: f64, fill: &str) {
    let _ = write!(
        s,
        r##"<text class="{class}" x="{:.1}" y="{y:.1}" font-size="10" fill="{fill}" stroke="#fff" stroke-width="3" stroke-linejoin="round" paint-order="stroke" textLength="{:.1}" lengthAdjust="spacing" data-w="{:.1}">{}</text>"##,
        p.x,
        p.w,
        p.w,
        esc(&p.text)
    );
}

/// The steps: in the lanes above the panels each step is a bar from its start to its end, and a dashed line
/// runs down from its start through every panel. Steps that start too close together to tell apart get one
/// label, the range of their numbers; where no lane has room for a label, its steps are named in the key
/// under the chart instead of being written over another.
fn step_marks(s: &mut String, l: &Layout, d: &DuringReport) {
    let plot_bottom = l.plot_bottom;
    let span: Vec<(f64, f64)> = d
        .steps
        .iter()
        .map(|st| {
            let xs = l.x(st.from);
            (xs, l.x(st.to.unwrap_or(l.end)).max(xs + 2.0))
        })
        .collect();
    let starts: Vec<f64> = span.iter().map(|x| x.0).collect();
    let runs = labels::clusters(&starts, CLUSTER_PX);
    let wants: Vec<Want> = runs
        .iter()
        .map(|r| {
            let (first, last) = (r.start, r.end - 1);
            let texts = if first == last {
                vec![
                    format!("{} {}", first + 1, d.steps[first].step),
                    format!("{}", first + 1),
                ]
            } else {
                vec![format!("{}–{}", first + 1, last + 1)]
            };
            Want {
                from: span[first].0,
                to: span[r.clone()].iter().map(|x| x.1).fold(0.0, f64::max),
                texts,
            }
        })
        .collect();
    let placed = labels::place(&wants, LABEL_ROWS, LEFT, W - 4.0);
    let mut unlabelled: Vec<String> = Vec::new();
    // The labels go on top of every step's line.
    let mut texts = String::new();
    for ((r, p), want) in runs.iter().zip(&placed).zip(&wants) {
        let lane = p.as_ref().map(|p| 6.0 + 14.0 * p.row as f64);
        match (p, lane) {
            (Some(p), Some(lane)) => label_text(&mut texts, "step-label", p, lane + 8.0, "#222"),
            _ => unlabelled.extend(want.texts.last().cloned()),
        }
        for n in r.clone() {
            let st = &d.steps[n];
            let (xs, xe) = span[n];
            let _ = write!(
                s,
                r#"<g class="step"><title>{}. {} ({}): {} → {}</title>"#,
                n + 1,
                esc(&st.step),
                esc(st.status.name()),
                st.from.format("%H:%M:%S%.3f"),
                st.to
                    .map(|t| t.format("%H:%M:%S%.3f").to_string())
                    .unwrap_or_else(|| "running".into()),
            );
            if let Some(lane) = lane {
                let _ = write!(
                    s,
                    r#"<rect class="step-span" x="{xs:.1}" y="{:.1}" width="{:.1}" height="3" fill="{C_STEP}"/>"#,
                    lane + 10.0,
                    xe - xs
                );
            }
            let _ = write!(
                s,
                r#"</g><line class="step-mark" x1="{xs:.1}" y1="{:.1}" x2="{xs:.1}" y2="{plot_bottom:.1}" stroke="{C_STEP}" stroke-dasharray="3,3" stroke-width="1"/>"#,
                lane.map_or(l.plot_top, |lane| lane + 10.0),
            );
        }
    }
    s.push_str(&texts);
    if !unlabelled.is_empty() {
        let _ = write!(
            s,
            r#"<text class="step-key" x="{LEFT}" y="{:.1}" font-size="11">steps too close together to label above the chart: {} (see the table below)</text>"#,
            l.plot_bottom + 50.0,
            esc(&unlabelled.join(", "))
        );
    }
}

/// The series: the workload's tps and p95, and the write probe's p95 dashed.
fn series(s: &mut String, l: &Layout, work: &[&DuringInterval], probe: &[&DuringInterval]) {
    let x = |t| l.x(t);
    for r in runs(work, |i| Some(i.tps), x) {
        polyline(s, &r, &l.tps, C_WORKLOAD, "", "tps");
    }
    for r in runs(work, |i| i.p95_ms, x) {
        polyline(s, &r, &l.p95, C_WORKLOAD, "", "p95");
    }
    for r in runs(probe, |i| i.p95_ms, x) {
        polyline(
            s,
            &r,
            &l.p95,
            C_PROBE,
            r#" stroke-dasharray="5,3""#,
            "p95-writes",
        );
    }
}

/// The workload's errors in the interval a probe's interval `i` starts in: where its bar is stacked.
fn errors_below(work: &[&DuringInterval], i: &DuringInterval) -> u64 {
    work.iter()
        .find(|w| w.from <= i.from && w.to > i.from)
        .map_or(0, |w| w.errors)
}

/// Errors: a bar per interval, the probe's stacked on the workload's.
fn error_bars(s: &mut String, l: &Layout, work: &[&DuringInterval], probe: &[&DuringInterval]) {
    for series in [work, probe] {
        for i in series.iter().filter(|i| i.errors > 0) {
            let below = if i.series == WRITES {
                errors_below(work, i)
            } else {
                0
            };
            let (xa, xb) = (l.x(i.from), l.x(i.to));
            let y0 = l.errs.y(below as f64);
            let y1 = l.errs.y((below + i.errors) as f64);
            let (class, paint) = if i.series == WRITES {
                (
                    "errors errors-writes",
                    format!(r#"fill="url(#{HATCH})" stroke="{C_ERR_PROBE}" stroke-width="1""#),
                )
            } else {
                (
                    "errors errors-workload",
                    format!(r#"fill="{C_ERR_WORKLOAD}""#),
                )
            };
            let _ = write!(
                s,
                r#"<rect class="{class}" x="{xa:.1}" y="{y1:.1}" width="{:.1}" height="{:.1}" {paint}><title>{}: {} error(s): {}</title></rect>"#,
                (xb - xa - 0.5).max(1.0),
                (y0 - y1).max(1.0),
                esc(&i.series),
                i.errors,
                esc(&describe_codes(&i.error_codes))
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::chart_key::{impact_table, legend};
    use super::super::impact::StepSpan;
    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    fn report() -> DuringReport {
        let iv =
            |series: &str, from: i64, tps: f64, p95: Option<f64>, errors: u64| DuringInterval {
                series: series.into(),
                from: t(from),
                to: t(from + 1),
                transactions: tps as u64,
                tps,
                p95_ms: p95,
                errors,
                error_codes: if errors > 0 {
                    [(1205, errors)].into_iter().collect()
                } else {
                    Default::default()
                },
                reconnects: 0,
                errors_at: Vec::new(),
                tenths: Vec::new(),
            };
        DuringReport {
            workload: "table:d.t".into(),
            threads: 2,
            probe: Some("write_probe:d.t".into()),
            interval_s: 1.0,
            started: t(0),
            intervals: vec![
                iv(WORKLOAD, 0, 100.0, Some(1.0), 0),
                iv(WORKLOAD, 1, 0.0, None, 0),
                iv(WORKLOAD, 2, 90.0, Some(2.0), 0),
                iv(WRITES, 1, 0.0, None, 2),
            ],
            steps: vec![StepSpan {
                step: "copy:d.t".into(),
                title: "Copy <d.t>".into(),
                from: t(1),
                to: Some(t(2)),
                status: crate::plan::report::impact::SpanEnd::Done,
            }],
            slices: vec![("before".into(), t(0), t(1))],
            impact: Vec::new(),
            failures: Vec::new(),
        }
    }

    #[test]
    fn ticks_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(100.0, 4.0), 50.0);
        assert_eq!(nice_step(3.0, 10.0), 0.5);
        assert_eq!(nice_step(7000.0, 4.0), 2000.0);
        assert_eq!(nice_step(0.0, 4.0), 1.0);
        assert_eq!(
            Scale::Log { lo: 0.1, hi: 100.0 }.ticks(),
            vec![0.1, 1.0, 10.0, 100.0]
        );
        assert_eq!(Scale::Linear { max: 100.0 }.ticks(), vec![0.0, 50.0, 100.0]);
        assert_eq!(
            Scale::Linear { max: 1.0 }.ticks(),
            vec![0.0, 1.0],
            "counts tick whole"
        );
        assert_eq!(fmt_num(0.1), "0.1");
        assert_eq!(fmt_num(2.5), "2.5");
        assert_eq!(fmt_num(6000.0), "6000");
    }

    #[test]
    fn the_chart_has_its_axes_units_steps_bands_and_a_gap_where_nothing_completed() {
        let d = report();
        let blocks = [WriteBlock {
            object: "d.t".into(),
            from: t(1),
            to: t(2),
            seconds: 1.0,
        }];
        let svg = impact_chart(&d, &blocks);
        roxmltree::Document::parse(&svg).expect("well-formed SVG");
        for needle in [
            "transactions per second",
            "milliseconds, log scale",
            "Errors per interval",
            "time since the workload started (seconds",
            " tps</text>",
            " ms</text>",
            ">1 s</text>",
            "class=\"step-mark\"",
            "class=\"slice\"",
            "writes to d.t blocked",
            "1205 lock wait timeout ×2",
        ] {
            assert!(svg.contains(needle), "{needle}: {svg}");
        }
        // The error panel reaches the top of the probe's bar stacked on the workload's.
        let mut stacked = d.clone();
        stacked.intervals[1].errors = 3;
        stacked.intervals[1].error_codes = [(1205, 3)].into_iter().collect();
        let l = Layout::of(
            &stacked,
            &stacked
                .intervals
                .iter()
                .filter(|i| i.series == WORKLOAD)
                .collect::<Vec<_>>(),
        );
        assert!(matches!(l.errs.scale, Scale::Linear { max } if max >= 5.0));
        // The interval with no completed transaction breaks the latency line: two single points, no line
        // through a value that was never measured.
        assert_eq!(svg.matches("class=\"p95\"").count(), 2, "{svg}");
        assert!(!svg.contains("<script"));
        let table = impact_table(&d);
        assert!(table.contains("Copy &lt;d.t&gt;"));
        let legend = legend(&d, &blocks);
        assert!(legend.contains("write probe (write_probe:d.t)"), "{legend}");
    }

    /// The boxes of the chart's labels as drawn: x, baseline and the width each is drawn with (`textLength`).
    fn label_boxes(svg: &str) -> Vec<(String, f64, f64, f64)> {
        let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
        doc.descendants()
            .filter(|n| n.has_tag_name("text") && n.attribute("data-w").is_some())
            .map(|n| {
                let f = |a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
                (
                    n.text().unwrap_or("").to_string(),
                    f("x"),
                    f("y"),
                    f("data-w"),
                )
            })
            .collect()
    }

    #[test]
    fn a_crowded_chart_draws_no_label_over_another_and_names_the_steps_it_could_not_label() {
        let mut d = report();
        // 40 steps: bursts of steps a few milliseconds long, two longer ones, and a burst at the very end.
        let ms = |n: i64| t(0) + chrono::Duration::milliseconds(n);
        let mut at = 1000;
        d.steps = (0..40)
            .map(|n| {
                let len = match n {
                    5 | 20 => 3000,
                    _ if n % 9 == 0 => 400,
                    _ => 30,
                };
                let span = StepSpan {
                    // Ids without digits: a number in a label is a step's number.
                    step: [
                        "redo/persist",
                        "convert/copy:d.orders",
                        "deadlock/run",
                        "readonly/stop",
                    ][n % 4]
                        .into(),
                    title: String::new(),
                    from: ms(at),
                    to: Some(ms(at + len)),
                    status: crate::plan::report::impact::SpanEnd::Done,
                };
                at += len;
                span
            })
            .collect();
        // Two tables blocked one right after the other, and one blocked in many short spans (the online path).
        let block = |object: &str, from: i64, to: i64| WriteBlock {
            object: object.into(),
            from: ms(from),
            to: ms(to),
            seconds: (to - from) as f64 / 1000.0,
        };
        let mut blocks = vec![
            block("d.orders", 2000, 2600),
            block("d.orders2", 2650, 3200),
        ];
        blocks.extend((0..20).map(|k| block("d.items", 4000 + 50 * k, 4020 + 50 * k)));
        let svg = impact_chart(&d, &blocks);
        let boxes = label_boxes(&svg);
        assert!(boxes.len() >= 6, "{boxes:?}");
        for (i, a) in boxes.iter().enumerate() {
            assert!(
                a.1 >= LEFT - 0.01 && a.1 + a.3 <= W,
                "{a:?} leaves the chart"
            );
            for b in &boxes[i + 1..] {
                // Text 10 px high above its baseline.
                let apart_x = a.1 + a.3 <= b.1 || b.1 + b.3 <= a.1;
                let apart_y = (a.2 - b.2).abs() >= 10.0;
                assert!(apart_x || apart_y, "{a:?} overlaps {b:?}");
            }
        }
        // Both tables' blocks are named, the many spans of one table once.
        let texts: Vec<&str> = boxes.iter().map(|b| b.0.as_str()).collect();
        assert!(
            texts.iter().any(|t| t.contains("d.orders blocked")),
            "{texts:?}"
        );
        assert!(
            texts.iter().any(|t| t.contains("d.orders2 blocked")),
            "{texts:?}"
        );
        assert_eq!(
            texts.iter().filter(|t| t.contains("d.items")).count(),
            1,
            "{texts:?}"
        );
        // Every step is labelled above the chart, alone or in a range, or named in the key under it.
        let key = svg
            .split("class=\"step-key\"")
            .nth(1)
            .map(|k| k[..k.find("</text>").unwrap()].to_string())
            .unwrap_or_default();
        for n in 1..=d.steps.len() {
            let named = texts.iter().chain(std::iter::once(&key.as_str())).any(|t| {
                t.split(|c: char| !c.is_ascii_digit() && c != '–')
                    .filter(|w| !w.is_empty())
                    .any(|w| match w.split_once('–') {
                        Some((a, b)) => {
                            a.parse::<usize>().is_ok_and(|a| a <= n)
                                && b.parse::<usize>().is_ok_and(|b| n <= b)
                        }
                        None => w.parse::<usize>() == Ok(n),
                    })
            });
            assert!(named, "step {n} is nowhere: {texts:?} {key}");
        }
    }
}
