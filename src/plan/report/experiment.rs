//! report.html's experiment section: the verdict table first, the A/A line, then one bar chart per measure,
//! the arms side by side. tps and p95 carry whiskers: the 95% interval of the arm's change against A, drawn at
//! A's level (A's own bar has none: it is the reference). Bytes and CPU per transaction are totals over the
//! arm's runs, with no per-second figure to draw an interval from, so their bars have no whiskers.

use std::fmt::Write as _;

use super::html::esc;
use crate::bench::experiment::{ArmFigures, Experiment};

/// Bar colours: the baseline pair grey-blue, the variants in turn.
const COLOURS: [&str; 6] = [
    "#e39a3b", "#4caf7a", "#b05fc4", "#d65f5f", "#3bb0c9", "#8c8c3b",
];

pub(super) fn colour(f: &ArmFigures, i: usize) -> &'static str {
    match f.key.as_str() {
        "A" => "#6b8fd6",
        "A2" => "#9db4e3",
        _ => COLOURS[i % COLOURS.len()],
    }
}

/// One bar: label, value, colour, and the whisker's low and high ends when it has one.
type Bar<'a> = (&'a str, f64, &'a str, Option<(f64, f64)>);

/// A vertical bar chart with whiskers, as inline SVG.
pub fn bar_chart_ci(title: &str, unit: &str, bars: &[Bar]) -> String {
    let (w, h, top, bottom, left) = (60.0 + 80.0 * bars.len() as f64, 220.0, 36.0, 36.0, 64.0);
    // Wide enough for the title (bold 14px: about 8 px a character), which was cut off at 300 px.
    let w: f64 = f64::max(w, 300.0).max(title.chars().count() as f64 * 8.0 + 20.0);
    let plot_h = h - top - bottom;
    let max = bars
        .iter()
        .map(|b| b.3.map_or(b.1, |(_, hi)| hi.max(b.1)))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let scale = if max > 0.0 { plot_h / max } else { 0.0 };
    let slot = (w - left) / bars.len().max(1) as f64;
    let bar_w = (slot * 0.5).min(60.0);
    let base = h - bottom;
    let mut s = String::new();
    let _ = write!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{t}"><title>{t}</title><text x="{:.1}" y="20" text-anchor="middle" font-size="14" font-weight="bold">{t}</text><line x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="#888"/><line x1="{left}" y1="{base}" x2="{:.1}" y2="{base}" stroke="#888"/>"##,
        w / 2.0,
        w - 10.0,
        t = esc(title)
    );
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{} {}</text>"#,
        left - 6.0,
        top + 4.0,
        fmt(max),
        esc(unit)
    );
    for (i, (label, v, c, ci)) in bars.iter().enumerate() {
        let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
        let x = left + slot * i as f64 + (slot - bar_w) / 2.0;
        let cx = x + bar_w / 2.0;
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="{bar_w:.1}" height="{:.1}" fill="{}"><title>{}: {} {}</title></rect>"#,
            base - v * scale,
            v * scale,
            esc(c),
            esc(label),
            fmt(v),
            esc(unit)
        );
        if let Some((lo, hi)) = ci.filter(|(lo, hi)| lo.is_finite() && hi.is_finite()) {
            let (ylo, yhi) = (base - lo.max(0.0) * scale, base - hi.max(0.0) * scale);
            let _ = write!(
                s,
                r##"<g class="whisker" stroke="#222" stroke-width="1.5"><title>95% interval: {} … {} {}</title><line x1="{cx:.1}" y1="{ylo:.1}" x2="{cx:.1}" y2="{yhi:.1}"/><line x1="{:.1}" y1="{ylo:.1}" x2="{:.1}" y2="{ylo:.1}"/><line x1="{:.1}" y1="{yhi:.1}" x2="{:.1}" y2="{yhi:.1}"/></g>"##,
                fmt(lo),
                fmt(hi),
                esc(unit),
                cx - 6.0,
                cx + 6.0,
                cx - 6.0,
                cx + 6.0
            );
        }
        let _ = write!(
            s,
            r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" font-size="12">{}</text>"#,
            base + 18.0,
            esc(label)
        );
    }
    s.push_str("</svg>");
    s
}

fn fmt(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The section: verdict table, A/A line, winner, charts, tps over time (restarts marked from `downtime`), the
/// server's counters.
pub fn section(s: &mut String, e: &Experiment, downtime: &[super::Downtime]) {
    if e.by_threads.is_empty() {
        s.push_str("<h2>Experiment: verdicts</h2>");
        return section_of(s, e, downtime);
    }
    s.push_str("<p>One group of arms per client-thread count, each with its own A, A′ and verdicts: a variant is compared only with A at the same count.</p>");
    for g in &e.by_threads {
        let _ = write!(
            s,
            "<h2>Experiment at {} client threads: verdicts</h2>",
            g.shape.threads
        );
        section_of(s, g, downtime);
    }
}

/// The verdict table, the A/A line, the cores line, the winner and what was run.
fn verdict_head(s: &mut String, e: &Experiment) {
    let rows = e.table();
    s.push_str("<table class=\"experiment\"><thead><tr>");
    for h in &rows[0] {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &rows[1..] {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    let _ = write!(s, "<p>{}</p>", esc(&e.aa_line));
    if let Some(line) = &e.cores {
        let _ = write!(s, "<p>{}</p>", esc(line));
    }
    let best = match &e.winner {
        Some(w) => format!(
            "Best beyond noise: {}.",
            e.arms
                .iter()
                .find(|f| &f.key == w)
                .map_or(w.clone(), |f| f.label.clone())
        ),
        None => "Best beyond noise: none (no variant is faster than A beyond the noise).".into(),
    };
    let _ = write!(s, "<p>{}</p>", esc(&best));
    let _ = write!(
        s,
        "<p>{} with {} thread(s), {} of {} round(s) of {} s per arm after {} s of warm-up. Whiskers: the 95% interval of each arm's change against A, drawn at A's level.</p>",
        esc(&e.shape.workload),
        e.shape.threads,
        e.rounds_measured,
        e.shape.rounds,
        e.shape.time_s,
        e.shape.warmup_s
    );
}

fn section_of(s: &mut String, e: &Experiment, downtime: &[super::Downtime]) {
    verdict_head(s, e);
    let a = e.arms.iter().find(|f| f.key == "A");
    let around = |level: Option<f64>, r: Option<&crate::bench::noise::Resolution>| {
        level.zip(r).map(|(l, r)| {
            (
                l * (1.0 + r.ci_low_pct / 100.0),
                l * (1.0 + r.ci_high_pct / 100.0),
            )
        })
    };
    let chart = |title: &str,
                 unit: &str,
                 value: &dyn Fn(&ArmFigures) -> Option<f64>,
                 ci: &dyn Fn(&ArmFigures) -> Option<(f64, f64)>| {
        let bars: Vec<Bar> = e
            .arms
            .iter()
            .enumerate()
            .filter_map(|(i, f)| value(f).map(|v| (f.label.as_str(), v, colour(f, i), ci(f))))
            .collect();
        if bars.is_empty() {
            String::new()
        } else {
            bar_chart_ci(title, unit, &bars)
        }
    };
    s.push_str("<div class=\"charts\">");
    s.push_str(&chart(
        "Transactions per second (higher is better)",
        "tps",
        // An arm never measured (its configuration did not start) has no bar: its row in the table says why.
        &|f| (f.seconds > 0).then_some(f.tps),
        &|f| around(a.map(|a| a.tps), f.tps_noise.as_ref()),
    ));
    s.push_str(&chart(
        "p95 latency, mean of the seconds (lower is better)",
        "ms",
        &|f| (f.seconds > 0).then_some(f.p95_ms),
        &|f| around(a.map(|a| a.p95_ms), f.p95_noise.as_ref()),
    ));
    s.push_str(&chart(
        "p99 latency, mean of the seconds (lower is better)",
        "ms",
        &|f| (f.seconds > 0 && f.p99_ms > 0.0).then_some(f.p99_ms),
        &|f| around(a.map(|a| a.p99_ms), f.p99_noise.as_ref()),
    ));
    s.push_str(&chart(
        "Data bytes written per transaction",
        "B",
        &|f| f.data_bytes_per_trx,
        &|_| None,
    ));
    s.push_str(&chart(
        "Redo bytes written per transaction",
        "B",
        &|f| f.log_bytes_per_trx,
        &|_| None,
    ));
    s.push_str(&chart(
        "Bytes the server process wrote per transaction (/proc write_bytes, every engine)",
        "B",
        &|f| f.disk_bytes_per_trx,
        &|_| None,
    ));
    s.push_str(&chart(
        "Table size once built: data+index (information_schema)",
        "KB",
        &|f| {
            f.table_size
                .as_ref()
                .map(|t| (t.data_length + t.index_length) as f64 / 1024.0)
        },
        &|_| None,
    ));
    s.push_str(&chart(
        "Server CPU per transaction",
        "ms",
        &|f| f.cpu_ms_per_trx,
        &|_| None,
    ));
    s.push_str("</div>");
    if let Some(note) = e.arms.iter().find_map(|f| f.cpu_note.as_ref()) {
        let _ = write!(s, "<p>CPU per transaction: {}.</p>", esc(note));
    }
    let time = super::experiment_time::tps_over_time(e, downtime);
    if !time.is_empty() {
        s.push_str("<h3>Throughput over time</h3><div class=\"charts\">");
        s.push_str(&time);
        s.push_str("</div><p>The measured seconds of every run, each on its arm's span (warm-ups and the statements between runs are the gaps).</p>");
    }
    for line in &e.load_pauses {
        let _ = write!(s, "<p>Load guard: {}.</p>", esc(line));
    }
    super::experiment_time::counters_table(s, e);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whiskers_are_drawn_only_where_an_interval_exists() {
        let svg = bar_chart_ci(
            "tps",
            "tps",
            &[
                ("A", 100.0, "#000", None),
                ("B", 120.0, "#111", Some((110.0, 130.0))),
            ],
        );
        assert_eq!(svg.matches("class=\"whisker\"").count(), 1, "{svg}");
        assert!(svg.contains("95% interval: 110 … 130 tps"), "{svg}");
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
