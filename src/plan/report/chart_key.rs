//! What the impact chart's marks mean, under it: the legend (each colour, line and pattern) and the per-step
//! table with each step's figures against "before".

use std::fmt::Write as _;

use super::html::esc;
use super::impact::DuringReport;
use super::timeline::{
    hatch, secs, C_BLOCKED, C_ERR_PROBE, C_ERR_WORKLOAD, C_PROBE, C_SLICE, C_STEP, C_WORKLOAD,
    HATCH_KEY,
};
use super::WriteBlock;
use crate::bench::during::describe_codes;

/// The legend under the chart: what each colour is, then the numbered steps.
pub fn legend(d: &DuringReport, blocks: &[WriteBlock]) -> String {
    let mut s = String::from("<ul class=\"legend\">");
    let item = |s: &mut String, swatch: String, text: &str| {
        let _ = write!(
            s,
            "<li><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"26\" height=\"12\">{swatch}</svg> {}</li>",
            esc(text)
        );
    };
    item(
        &mut s,
        format!(r#"<line x1="0" y1="6" x2="26" y2="6" stroke="{C_WORKLOAD}" stroke-width="2"/>"#),
        &format!(
            "workload ({}, {} thread(s)): tps and p95",
            d.workload, d.threads
        ),
    );
    if let Some(p) = &d.probe {
        item(
            &mut s,
            format!(
                r#"<line x1="0" y1="6" x2="26" y2="6" stroke="{C_PROBE}" stroke-width="2" stroke-dasharray="5,3"/>"#
            ),
            &format!("write probe ({p}): p95 of its locking reads"),
        );
    }
    item(
        &mut s,
        format!(r#"<rect x="4" y="1" width="18" height="10" fill="{C_ERR_WORKLOAD}"/>"#),
        "errors of the workload (solid)",
    );
    if d.probe.is_some() {
        item(
            &mut s,
            format!(
                r#"{}<rect x="4" y="1" width="18" height="10" fill="url(#{HATCH_KEY})" stroke="{C_ERR_PROBE}"/>"#,
                hatch(HATCH_KEY)
            ),
            "errors of the write probe (hatched, stacked on the workload's)",
        );
    }
    item(
        &mut s,
        format!(r#"<rect x="0" y="0" width="26" height="12" fill="{C_SLICE}"/>"#),
        "where the figures before and after were taken",
    );
    if !blocks.is_empty() {
        item(
            &mut s,
            format!(r#"<rect x="0" y="0" width="26" height="12" fill="{C_BLOCKED}"/>"#),
            "innops held writes to a table (its guard)",
        );
    }
    item(
        &mut s,
        format!(
            r#"<line x1="13" y1="0" x2="13" y2="12" stroke="{C_STEP}" stroke-dasharray="3,3"/>"#
        ),
        "a step: its span above the chart, a line at its start (numbered as below)",
    );
    s.push_str("</ul>");
    s
}

/// The per-step table: each step's span and what the workload saw in it, against "before".
pub fn impact_table(d: &DuringReport) -> String {
    let mut s = String::from(
        "<table class=\"impact-steps\"><thead><tr><th>#</th><th>step</th><th>from (s)</th><th>took</th><th>tps (median)</th><th>vs before</th><th>worst p95</th><th>errors</th></tr></thead><tbody>",
    );
    for (n, st) in d.steps.iter().enumerate() {
        let imp = d.impact.get(n).filter(|i| i.step == st.step);
        let cell = |v: Option<String>| v.unwrap_or_else(|| "–".into());
        let errors = imp.map(|i| {
            if i.errors == 0 {
                "0".to_string()
            } else {
                format!("{} ({})", i.errors, describe_codes(&i.error_codes))
            }
        });
        let _ = write!(
            s,
            "<tr><td>{}</td><td><code>{}</code> {}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            n + 1,
            esc(&st.step),
            esc(&st.title),
            secs(st.from, d.started),
            cell(imp.map(|i| format!(
                "{:.2} s{}",
                i.seconds,
                if i.shared { " (shorter than an interval)" } else { "" }
            ))),
            // A step with no whole interval has no median: its rate is that of its own tenths of a second.
            cell(imp.and_then(|i| Some((i.median_tps?, i.shared))).map(|(v, shared)| {
                format!("{v:.1} tps{}", if shared { " (its tenths of a second)" } else { "" })
            })),
            cell(imp.and_then(|i| i.tps_vs_before_pct).map(|p| format!("{p:+.0}%"))),
            cell(imp.and_then(|i| i.worst_p95_ms).map(|v| format!("{v:.2} ms"))),
            esc(&cell(errors))
        );
    }
    s.push_str("</tbody></table>");
    s
}
