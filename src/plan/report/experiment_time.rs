//! report.html's experiment charts over time and beside the verdicts: tps over the whole experiment, one line per
//! measured run in its arm's colour on a shaded span labelled with the arm (so drift over the experiment, and an
//! arm's runs in each round, can be seen), the restarts' downtimes marked where the experiment had restart
//! variables; and the table of the server's explaining counters per arm, which carry no verdict. Inline SVG
//! and HTML, nothing fetched.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};

use super::experiment::colour;
use super::html::esc;
use super::timeline::{fmt_num, nice_step};
use super::Downtime;
use crate::bench::experiment::Experiment;

const W: f64 = 940.0;
const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 44.0;
const BOTTOM: f64 = 46.0;

fn secs(t: DateTime<Utc>, t0: DateTime<Utc>) -> f64 {
    (t - t0).num_milliseconds() as f64 / 1000.0
}

/// The tps-over-time chart, or nothing when no run recorded when it started.
pub fn tps_over_time(e: &Experiment, downtime: &[Downtime]) -> String {
    let spans = &e.timeline;
    let (Some(first), Some(last)) = (spans.first(), spans.last()) else {
        return String::new();
    };
    let restarts: Vec<&Downtime> = downtime
        .iter()
        .filter(|d| d.from >= first.started - chrono::Duration::hours(1))
        .collect();
    let t0 = restarts
        .iter()
        .map(|d| d.from)
        .chain([first.started])
        .min()
        .unwrap_or(first.started);
    let end = spans
        .iter()
        .map(|s| secs(s.started, t0) + s.seconds)
        .chain(restarts.iter().map(|d| secs(d.to, t0)))
        .fold(secs(last.started, t0) + last.seconds, f64::max)
        .max(1.0);
    let max_tps = spans
        .iter()
        .flat_map(|s| s.tps.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max)
        .max(1.0)
        * 1.1;
    let (plot_w, plot_h) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |t: f64| LEFT + t / end * plot_w;
    let y = |v: f64| TOP + plot_h - v / max_tps * plot_h;
    let title = "Over time: transactions per second of every measured run, on its arm's span";
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="experiment-time" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{t}"><title>{t}</title><text x="{:.1}" y="16" text-anchor="middle" font-size="14" font-weight="bold">{t}</text>"##,
        W / 2.0,
        t = esc(title)
    );
    for d in &restarts {
        let (a, b) = (
            x(secs(d.from, t0)),
            x(secs(d.to, t0)).max(x(secs(d.from, t0)) + 3.0),
        );
        let id = d.what.split(':').next().unwrap_or("restart");
        let _ = write!(
            s,
            r##"<g class="restart"><title>{}: down {:.2} s ({})</title><rect x="{a:.1}" y="{TOP}" width="{:.1}" height="{plot_h}" fill="#d65f5f" fill-opacity="0.35"/><text x="{a:.1}" y="{:.1}" font-size="10" fill="#a33">{}</text></g>"##,
            esc(id),
            d.seconds,
            esc(&d.what),
            b - a,
            TOP - 4.0,
            esc(&id.replace("restart-", "R"))
        );
    }
    for sp in spans {
        let i = e.arms.iter().position(|f| f.key == sp.arm).unwrap_or(0);
        let c = e.arms.get(i).map_or("#888", |f| colour(f, i));
        let (a, b) = (
            x(secs(sp.started, t0)),
            x(secs(sp.started, t0) + sp.seconds),
        );
        let pts: Vec<String> = sp
            .tps
            .iter()
            .enumerate()
            .map(|(k, v)| {
                let t = secs(sp.started, t0) + k as f64 + 0.5;
                format!("{:.1},{:.1}", x(t), y(v.max(0.0)))
            })
            .collect();
        let _ = write!(
            s,
            r##"<g class="arm-span" data-arm="{}"><title>arm {} round {}: {:.0} s measured</title><rect x="{a:.1}" y="{TOP}" width="{:.1}" height="{plot_h}" fill="{c}" fill-opacity="0.15"/><text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="10">{}</text><polyline class="tps-line" points="{}" fill="none" stroke="{c}" stroke-width="2"/></g>"##,
            esc(&sp.arm),
            esc(&sp.label),
            sp.round,
            sp.seconds,
            (b - a).max(1.0),
            (a + b) / 2.0,
            TOP + 12.0,
            esc(&sp.label),
            pts.join(" ")
        );
    }
    axes(&mut s, end, max_tps, !restarts.is_empty());
    s
}

/// The axes: tps at the left, seconds since the first run (or restart) below, and the axis's caption.
fn axes(s: &mut String, end: f64, max_tps: f64, restarts: bool) {
    let (plot_w, plot_h) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |t: f64| LEFT + t / end * plot_w;
    let base = TOP + plot_h;
    let _ = write!(
        s,
        r##"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#888"/><line x1="{LEFT}" y1="{base}" x2="{:.1}" y2="{base}" stroke="#888"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{} tps</text><text x="{:.1}" y="{base}" text-anchor="end" font-size="11">0</text>"##,
        W - RIGHT,
        LEFT - 6.0,
        TOP + 4.0,
        fmt_num(max_tps.round()),
        LEFT - 6.0
    );
    let step = nice_step(end, 8.0);
    let mut t = 0.0;
    while t <= end + 1e-9 {
        let _ = write!(
            s,
            r##"<line x1="{0:.1}" y1="{base}" x2="{0:.1}" y2="{1:.1}" stroke="#888"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle" font-size="11">{3}</text>"##,
            x(t),
            base + 4.0,
            base + 16.0,
            fmt_num(t)
        );
        t += step;
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="11">seconds since the first measured run{}</text></svg>"##,
        LEFT + plot_w / 2.0,
        H - 8.0,
        if !restarts {
            ""
        } else {
            " (red: a restart's downtime, R1, R2, …)"
        }
    );
}

/// The explaining counters per arm: mean / max over the measured runs, or why the server has none.
pub fn counters_table(s: &mut String, e: &Experiment) {
    let Some(names) = e.arms.iter().find(|f| !f.server_counters.is_empty()) else {
        return;
    };
    s.push_str("<h3>The server's counters during the measured runs</h3>");
    s.push_str("<p>Sampled about once a second during each arm's measured runs, mean / max over its rounds. They carry no verdict: single readings of a moving state, with no interval, to explain a difference the verdicts found, not to make one.</p>");
    s.push_str("<table class=\"experiment-counters\"><thead><tr><th>counter</th>");
    for f in &e.arms {
        let _ = write!(s, "<th>{}</th>", esc(&f.label));
    }
    s.push_str("</tr></thead><tbody>");
    for (i, c) in names.server_counters.iter().enumerate() {
        let _ = write!(s, "<tr><th>{} ({})</th>", esc(&c.title), esc(&c.unit));
        let cells: Vec<_> = e.arms.iter().map(|f| f.server_counters.get(i)).collect();
        let none = cells.iter().all(|c| c.is_none_or(|c| c.mean.is_none()));
        if none {
            let note = cells
                .iter()
                .find_map(|c| c.and_then(|c| c.note.clone()))
                .unwrap_or_else(|| "not measured".into());
            let _ = write!(
                s,
                "<td class=\"unavailable\" colspan=\"{}\">{}</td></tr>",
                e.arms.len(),
                esc(&note)
            );
            continue;
        }
        for c in cells {
            let text = match c.and_then(|c| c.mean.zip(c.max)) {
                Some((mean, max)) => {
                    format!("{} / {}", fmt_num(round2(mean)), fmt_num(round2(max)))
                }
                None => "-".into(),
            };
            let _ = write!(s, "<td>{}</td>", esc(&text));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}
