//! `report.html`: a run's report as one self-contained page (inline CSS and SVG, no scripts, nothing fetched),
//! with before/after bar charts of tps and p95 latency. It is written as well-formed XHTML so any XML parser
//! can check it.

use std::fmt::Write as _;

use super::impact::DuringReport;
use super::{Report, RunStatus, StepReport, WriteBlock};
use crate::bench::{compare, BenchResult};

/// Escape text for HTML/XML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// A vertical bar chart as inline SVG: one bar per (label, value, colour), scaled to the largest value, on a
/// y axis with ticks in `unit`.
pub fn bar_chart(title: &str, unit: &str, bars: &[(&str, f64, &str)]) -> String {
    let (w, h, top, bottom, left) = (380.0, 220.0, 36.0, 36.0, 64.0);
    let plot_h = h - top - bottom;
    let max = bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
    let scale = if max > 0.0 { plot_h / max } else { 0.0 };
    let slot = (w - left) / bars.len().max(1) as f64;
    let bar_w = (slot * 0.5).min(90.0);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{t}">"#,
        t = esc(title)
    );
    let _ = write!(s, r#"<title>{}</title>"#, esc(title));
    let _ = write!(
        s,
        r#"<text x="{}" y="20" text-anchor="middle" font-size="14" font-weight="bold">{}</text>"#,
        w / 2.0,
        esc(title)
    );
    let base = h - bottom;
    // The y axis: a tick at 0 and at round values up to the largest bar.
    let _ = write!(
        s,
        r##"<line class="y-axis" x1="{left}" y1="{top}" x2="{left}" y2="{base}" stroke="#888" stroke-width="1"/>"##
    );
    if max > 0.0 {
        let step = super::timeline::nice_step(max, 3.0);
        let mut v = 0.0;
        while v <= max * 1.0001 {
            let y = base - v * scale;
            let _ = write!(
                s,
                r##"<line x1="{:.1}" y1="{y:.1}" x2="{left}" y2="{y:.1}" stroke="#888"/><text class="y-tick" x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{} {}</text>"##,
                left - 4.0,
                left - 6.0,
                y + 4.0,
                super::timeline::fmt_num(v),
                esc(unit)
            );
            v += step;
        }
    }
    let _ = write!(
        s,
        r##"<line class="x-axis" x1="{left}" y1="{base}" x2="{}" y2="{base}" stroke="#888" stroke-width="1"/>"##,
        w - 10.0
    );
    for (i, (label, v, colour)) in bars.iter().enumerate() {
        let v = if v.is_finite() { v.max(0.0) } else { 0.0 };
        let bh = v * scale;
        let x = left + slot * i as f64 + (slot - bar_w) / 2.0;
        let _ = write!(
            s,
            r#"<rect x="{x:.1}" y="{:.1}" width="{bar_w:.1}" height="{bh:.1}" fill="{}"><title>{}: {} {}</title></rect>"#,
            base - bh,
            esc(colour),
            esc(label),
            fmt_value(v),
            esc(unit)
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12">{} {}</text>"#,
            x + bar_w / 2.0,
            (base - bh - 6.0).max(top - 4.0),
            fmt_value(v),
            esc(unit)
        );
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="12">{}</text>"#,
            x + bar_w / 2.0,
            base + 18.0,
            esc(label)
        );
    }
    s.push_str("</svg>");
    s
}

fn fmt_value(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// One figure of a result, for the before/after table.
type Figure = fn(&BenchResult) -> f64;

fn bench_table(b: Option<&BenchResult>, a: Option<&BenchResult>) -> String {
    let mut s = String::from("<table><thead><tr><th></th><th>before</th><th>after</th><th>change</th></tr></thead><tbody>");
    let change = match (b, a) {
        (Some(b), Some(a)) => Some(compare(b, a)),
        _ => None,
    };
    let cell = |r: Option<&BenchResult>, f: Figure| {
        r.map(|r| fmt_value(f(r))).unwrap_or_else(|| "–".into())
    };
    type Judged = fn(&crate::bench::Comparison) -> Option<&crate::bench::noise::Resolution>;
    type Row<'r> = (
        &'r str,
        Figure,
        fn(&crate::bench::Comparison) -> f64,
        Option<Judged>,
    );
    let rows: [Row; 5] = [
        (
            "transactions/s",
            |r| r.tps,
            |c| c.tps_pct,
            Some(|c| c.tps_noise.as_ref()),
        ),
        (
            "queries/s",
            |r| r.qps,
            |c| c.qps_pct,
            Some(|c| c.qps_noise.as_ref()),
        ),
        (
            "latency avg (ms)",
            |r| r.latency_ms.avg,
            |c| c.avg_pct,
            None,
        ),
        (
            "latency p95 (ms)",
            |r| r.latency_ms.p95,
            |c| c.p95_pct,
            Some(|c| c.p95_noise.as_ref()),
        ),
        (
            "latency p99 (ms)",
            |r| r.latency_ms.p99,
            |c| c.p99_pct,
            None,
        ),
    ];
    for (label, f, pct, judged) in rows {
        let text = match (&change, judged) {
            (Some(c), Some(j)) => crate::bench::noise::describe(pct(c), j(c)),
            (Some(c), None) => format!("{:+.1}% (not judged)", pct(c)),
            (None, _) => "–".into(),
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(label),
            cell(b, f),
            cell(a, f),
            esc(&text)
        );
    }
    let count = |r: Option<&BenchResult>| {
        r.map(|r| r.errors.to_string())
            .unwrap_or_else(|| "–".into())
    };
    let _ = write!(
        s,
        "<tr><td>ignored errors</td><td>{}</td><td>{}</td><td></td></tr>",
        count(b),
        count(a)
    );
    let keys: Vec<&String> = b
        .or(a)
        .map(|r| r.per_transaction.keys().collect())
        .unwrap_or_default();
    for k in keys {
        let pt = |r: Option<&BenchResult>| {
            r.and_then(|r| r.per_transaction.get(k))
                .map(|v| format!("{v:.1}"))
                .unwrap_or_else(|| "–".into())
        };
        let _ = write!(
            s,
            "<tr><td>{} per transaction</td><td>{}</td><td>{}</td><td></td></tr>",
            esc(k),
            pt(b),
            pt(a)
        );
    }
    s.push_str("</tbody></table>");
    if let Some(c) = &change {
        for (figure, r) in [("tps", &c.tps_noise), ("p95", &c.p95_noise)] {
            if let Some(r) = r {
                let _ = write!(
                    s,
                    "<p>noise: {}</p>",
                    esc(&crate::bench::noise::explain(figure, r))
                );
            }
        }
        if c.tps_noise.is_none() && c.p95_noise.is_none() {
            s.push_str("<p class=\"warn\">noise: not measured (runs too short); the changes above may be noise</p>");
        }
        if let Some(w) = c.regression_warning() {
            let _ = write!(s, "<p class=\"warn\">⚠ {}</p>", esc(&w));
        }
    }
    s
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;max-width:60em;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}\
.charts{display:flex;flex-wrap:wrap;gap:2em}ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3em 1.6em;font-size:.9em}\
ul.legend svg{vertical-align:middle}.ok{color:#1a7f37}.bad{color:#b42318;font-weight:600}.warn{color:#9a6700}code{background:#f4f4f4}\
pre.sql{white-space:pre-wrap;overflow-wrap:anywhere;max-width:36em;font-size:.85em;background:#f6f6f6;padding:.4em}\
.verdict p.overall{font-size:1.15em}.verdict table.members td{border:none;padding:.1em .6em .1em 0}details.notes summary{cursor:pointer;margin:.5em 0}";

/// The page's Content-Security-Policy: nothing from anywhere, but its own inline style.
pub const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

/// The whole run report as a page.
pub fn render_report(r: &Report) -> String {
    let mut s = String::new();
    head(&mut s, r);
    summary(&mut s, r);
    // An experiment measures its arms itself: no benchmark before and after to show.
    if r.experiment.is_none() || r.bench.before.is_some() {
        bench_section(&mut s, r);
    }
    if let Some(d) = &r.during {
        impact_section(&mut s, d, &r.write_blocks);
    }
    steps_table(&mut s, r);
    s.push_str("</body></html>\n");
    s
}

/// The page's head, up to the opening `<body>`.
fn head(s: &mut String, r: &Report) {
    s.push_str("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head><meta charset=\"utf-8\"/>");
    // The page is the whole report: a browser that opens it must not fetch anything, even if text in it
    // (a table name, a note) looked like a reference.
    s.push_str(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\"/>"
    ));
    let _ = write!(
        s,
        "<title>innops {} — {}</title><style>{STYLE}</style></head><body>",
        esc(r.procedure.name()),
        esc(r.status.name())
    );
}

/// The heading, the table of what ran where and how it stands, then the run's sentences: blocked writes, the
/// message, the notes and what the run got.
fn summary(s: &mut String, r: &Report) {
    let class = if r.status == RunStatus::Done {
        "ok"
    } else {
        "bad"
    };
    let _ = write!(s, "<h1>innops {}</h1>", esc(r.procedure.name()));
    // A run of several procedures opens with its verdict, member by member; an experiment with its verdicts.
    s.push_str(&super::summary::render_html(r));
    if let Some(e) = &r.experiment {
        super::experiment::section(s, e, &r.downtime);
    }
    let _ = write!(
        s,
        "<table><tbody><tr><th>target</th><td>{}</td></tr><tr><th>server</th><td>{}</td></tr>",
        esc(&r.target),
        esc(&r.server)
    );
    let _ = write!(
        s,
        "<tr><th>status</th><td class=\"{class}\">{}</td></tr>",
        esc(r.status.name())
    );
    if let Some(d) = &r.run_dir {
        let _ = write!(
            s,
            "<tr><th>run directory</th><td><code>{}</code></td></tr>",
            esc(d)
        );
    }
    let _ = write!(
        s,
        "<tr><th>innops</th><td>{}</td></tr>",
        esc(if r.version.is_empty() {
            "unknown"
        } else {
            &r.version
        })
    );
    s.push_str("</tbody></table>");
    for line in r.write_block_lines() {
        let _ = write!(s, "<p class=\"blocked\">{}</p>", esc(&line));
    }
    if let Some(m) = &r.message {
        let _ = write!(s, "<p class=\"{class}\">{}</p>", esc(m));
    }
    for w in &r.warnings {
        let _ = write!(s, "<p class=\"warn\">⚠ {}</p>", esc(w));
    }
    // Many notes (a drill's members each bring theirs) fold away under one line, after the verdict.
    let fold = r.notes.len() > 5;
    if fold {
        let _ = write!(
            s,
            "<details class=\"notes\"><summary>{} notes on the plan</summary>",
            r.notes.len()
        );
    }
    for n in &r.notes {
        let _ = write!(s, "<p>note: {}</p>", esc(n));
    }
    if fold {
        s.push_str("</details>");
    }
    // What the run got (a read-only switch's downtime, say), as the text summary ends with it.
    for o in &r.outcome {
        let _ = write!(s, "<p class=\"outcome\">{}</p>", esc(o));
    }
}

/// "Benchmark before and after": how it ran, the two bar charts and the table, or why there is none.
fn bench_section(s: &mut String, r: &Report) {
    s.push_str("<h2>Benchmark before and after</h2>");
    let (b, a) = (r.bench.before.as_ref(), r.bench.after.as_ref());
    let Some(any) = b.or(a) else {
        s.push_str("<p>No benchmark was run (--no-bench, or the run stopped before its first measured step).</p>");
        return;
    };
    let _ = write!(
        s,
        "<p>{} with {} threads, {:.0} s each, seed {}, {} distribution, {}.</p>",
        esc(&any.workload),
        any.threads,
        any.time_s,
        any.seed,
        esc(&any.rand_type),
        if any.tables == 0 {
            format!("keys drawn from {} sampled rows", any.table_size)
        } else {
            format!("{} table(s) of {} rows", any.tables, any.table_size)
        }
    );
    if r.during.is_some() {
        s.push_str("<p>Both are slices of the workload that ran through the whole plan (below), taken at the points a separate benchmark would run.</p>");
    }
    let mut tps = Vec::new();
    let mut p95 = Vec::new();
    if let Some(b) = b {
        tps.push(("before", b.tps, "#6b8fd6"));
        p95.push(("before", b.latency_ms.p95, "#6b8fd6"));
    }
    if let Some(a) = a {
        tps.push(("after", a.tps, "#e39a3b"));
        p95.push(("after", a.latency_ms.p95, "#e39a3b"));
    }
    let _ = write!(
        s,
        "<div class=\"charts\">{}{}</div>",
        bar_chart("Transactions per second (higher is better)", "tps", &tps),
        bar_chart("95th percentile latency (lower is better)", "ms", &p95)
    );
    s.push_str(&bench_table(b, a));
}

/// "Impact over time" (`--bench-during`): what ran beside the plan, the chart, its legend, the per-step table
/// and the spans nothing was measured.
fn impact_section(s: &mut String, d: &DuringReport, blocks: &[WriteBlock]) {
    s.push_str("<h2>Impact over time</h2>");
    let _ = write!(
        s,
        "<p>{} with {} thread(s) ran from before the first step to after the last (<code>--bench-during</code>), one line a second in <code>bench/during.jsonl</code>; the figures before and after are slices of it.{} Every error is counted where it happened: a write held by a lock fails after {} s, a restart refuses connections until the server is back.</p>",
        esc(&d.workload),
        d.threads,
        d.probe
            .as_ref()
            .map(|p| format!(
                " Beside it, {} ({} a second) takes a writer's locks and changes nothing, standing for the table's writers.",
                esc(p),
                crate::bench::during::PROBE_RATE
            ))
            .unwrap_or_else(|| if d.reads_only() {
                " It only reads: writes were not measured.".to_string()
            } else {
                String::new()
            }),
        crate::bench::DURING_LOCK_WAIT_S
    );
    s.push_str(&super::timeline::impact_chart(d, blocks));
    s.push_str(&super::chart_key::legend(d, blocks));
    s.push_str(&super::chart_key::impact_table(d));
    for f in &d.failures {
        let _ = write!(
            s,
            "<p class=\"bad\">not measured for a while: {}</p>",
            esc(f)
        );
    }
}

/// "Steps": one row per step, with what it ran and every verdict.
fn steps_table(s: &mut String, r: &Report) {
    s.push_str("<h2>Steps</h2><table><thead><tr><th>#</th><th>step</th><th>risk</th><th>status</th><th>started (UTC)</th><th>took</th><th>checks</th></tr></thead><tbody>");
    for (i, st) in r.steps.iter().enumerate() {
        step_row(s, i, st);
    }
    s.push_str("</tbody></table>");
}

/// The row of step `i`.
fn step_row(s: &mut String, i: usize, st: &StepReport) {
    let status = serde_json::to_value(&st.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    // Each check in the colour of its mark: a failure red, a warning amber.
    let class = |v: &crate::plan::Verdict| match v.mark() {
        "✗" => "bad",
        "⚠" => "warn",
        _ => "",
    };
    let mut checks: Vec<String> = st
        .pre
        .iter()
        .chain(st.post.iter())
        .map(|v| {
            format!(
                "<span class=\"{}\">{}</span>",
                class(v),
                esc(&format!("{} {}: {}", v.mark(), v.check, v.observed))
            )
        })
        .collect();
    // The sentence the step failed with (already free of debug text: see error::display_of).
    checks.extend(
        st.error
            .iter()
            .map(|e| format!("<span class=\"bad\">{}</span>", esc(&format!("error: {e}")))),
    );
    let detail = step_detail(st);
    let _ = write!(
        s,
        "<tr><td>{}</td><td>{} <code>{}</code>{detail}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        i + 1,
        esc(&st.title),
        esc(&st.id),
        esc(st.risk.as_str()),
        esc(&status),
        st.started
            .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
            .unwrap_or_else(|| "–".into()),
        st.seconds
            .map(|x| format!("{x:.2} s"))
            .unwrap_or_else(|| "–".into()),
        checks.join("<br/>")
    );
}

/// What the step ran: the statements its action reports, else the plan's preview; and the option-file diff of
/// a step that edited one.
fn step_detail(st: &StepReport) -> String {
    let result = st.result.as_ref();
    let mut sql: Vec<String> = Vec::new();
    if let Some(v) = result
        .and_then(|r| r.get("statement"))
        .and_then(|v| v.as_str())
    {
        sql.push(v.to_string());
    }
    if let Some(vs) = result
        .and_then(|r| r.get("statements"))
        .and_then(|v| v.as_array())
    {
        sql.extend(vs.iter().filter_map(|v| v.as_str().map(str::to_string)));
    }
    let shown = st.shown_commands();
    // The applied diff is in the commands shown when they hold the edit; else it follows them.
    let diff_shown = sql.is_empty() && shown != st.commands;
    if sql.is_empty() {
        sql = shown;
    }
    let diff = result
        .and_then(|r| r.get("diff"))
        .and_then(|v| v.as_str())
        .filter(|d| !d.trim().is_empty() && !diff_shown);
    let mut detail = String::new();
    if !sql.is_empty() {
        let _ = write!(detail, "<pre class=\"sql\">{}</pre>", esc(&sql.join("\n")));
    }
    if let Some(d) = diff {
        let _ = write!(detail, "<pre class=\"diff\">{}</pre>", esc(d));
    }
    detail
}

/// Write `report.html` into the run directory.
pub fn write_report(dir: &std::path::Path, r: &Report) -> anyhow::Result<()> {
    let path = dir.join("report.html");
    crate::files::write_private(&path, render_report(r).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_check_is_red_and_a_warning_amber() {
        let st = StepReport {
            id: "s".into(),
            title: "S".into(),
            risk: crate::plan::Risk::Read,
            status: crate::plan::report::StepStatus::Refused,
            commands: Vec::new(),
            pre: vec![
                crate::plan::Verdict::pass("fine", "fine"),
                crate::plan::Verdict::warn("big <table>", "small"),
                crate::plan::Verdict::fail("no", "yes", "fix it"),
            ],
            post: Vec::new(),
            result: None,
            error: None,
            started: None,
            seconds: None,
            acts: false,
        };
        let mut s = String::new();
        step_row(&mut s, 0, &st);
        assert!(
            s.contains("<span class=\"warn\">⚠ : big &lt;table&gt;</span>"),
            "{s}"
        );
        assert!(s.contains("<span class=\"bad\">✗ : no</span>"), "{s}");
        assert!(s.contains("<span class=\"\">✓ : fine</span>"), "{s}");
        assert!(STYLE.contains(".bad{color:#b42318") && STYLE.contains(".warn{color:"));
    }

    #[test]
    fn an_edit_reads_with_the_diff_it_applied_not_the_one_planned() {
        let planned = "edit /x/99-innops.cnf:\n--- /x/99-innops.cnf\n+++ /x/99-innops.cnf\n@@ -1,2 +1,2 @@\n [mysqld]\n-innodb_log_file_size = 209715200\n+innodb_log_file_size = 134217728";
        let applied = "--- /x/99-innops.cnf\n+++ /x/99-innops.cnf\n@@ -1,2 +1,2 @@\n [mysqld]\n-innodb_log_file_size = 201326592\n+innodb_log_file_size = 134217728\n";
        let mut st = StepReport {
            id: "redo.2/persist".into(),
            title: "Persist".into(),
            risk: crate::plan::Risk::Online,
            status: crate::plan::report::StepStatus::Done,
            commands: vec![planned.into(), "SET GLOBAL x = 1".into()],
            pre: Vec::new(),
            post: Vec::new(),
            result: Some(serde_json::json!({ "diff": applied })),
            error: None,
            started: None,
            seconds: None,
            acts: true,
        };
        let shown = st.shown_commands();
        assert_eq!(
            shown[0],
            format!(
                "edit /x/99-innops.cnf (as applied):\n{}",
                applied.trim_end()
            )
        );
        assert_eq!(shown[1], "SET GLOBAL x = 1");
        let html = step_detail(&st);
        assert!(html.contains("-innodb_log_file_size = 201326592"), "{html}");
        assert!(!html.contains("209715200"), "{html}");
        // The applied diff once, not again after the commands.
        assert_eq!(
            html.matches("+innodb_log_file_size = 134217728").count(),
            1,
            "{html}"
        );
        // A dry run (nothing applied) shows the plan's diff.
        st.result = None;
        assert!(step_detail(&st).contains("209715200"));
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("a<b & \"c\"'"), "a&lt;b &amp; &quot;c&quot;&#39;");
    }

    #[test]
    fn bars_scale_to_the_largest_value() {
        let svg = bar_chart(
            "tps",
            "tps",
            &[("before", 100.0, "#111"), ("after", 50.0, "#222")],
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        // plot height 148: the larger bar fills it, the other is half.
        assert!(svg.contains(r#"height="148.0""#), "{svg}");
        assert!(svg.contains(r#"height="74.0""#), "{svg}");
        let empty = bar_chart("p95", "ms", &[("before", 0.0, "#111")]);
        assert!(empty.contains(r#"height="0.0""#));
    }

    #[test]
    fn a_report_without_bench_says_so() {
        let mut r = Report::new(
            crate::plan::Procedure::Redo,
            "root@localhost",
            "10.11",
            vec!["a <note>".into()],
            &[],
        );
        r.outcome
            .push("downtime: 1.20 s <to> the first connection".into());
        let html = render_report(&r);
        assert!(html.contains("No benchmark was run"));
        assert!(html
            .contains("<p class=\"outcome\">downtime: 1.20 s &lt;to&gt; the first connection</p>"));
        assert!(html.contains("a &lt;note&gt;"));
        assert!(!html.contains("<script"));
    }

    #[test]
    fn a_failed_step_shows_its_error_sentence() {
        let mut r = Report::new(
            crate::plan::Procedure::Convert,
            "root@localhost",
            "10.11",
            Vec::new(),
            &[crate::plan::StepPreview {
                id: "copy".into(),
                title: "Copy".into(),
                risk: crate::plan::Risk::Locking,
                commands: Vec::new(),
                pre_checks: Vec::new(),
                post_checks: Vec::new(),
                bench: false,
            }],
        );
        r.step_mut("copy").error =
            Some("the server went away (broken pipe): check that it is <running>".into());
        let html = render_report(&r);
        assert!(
            html.contains(
                "error: the server went away (broken pipe): check that it is &lt;running&gt;"
            ),
            "{html}"
        );
    }
}
