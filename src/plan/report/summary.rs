//! The verdict a combined run (the drill, a playbook) opens its report with: one line per member procedure
//! with its mark, and one line for the run, before the notes. Each says only what the report holds: a member
//! is ✓ when every one of its steps ran and every check passed, ⚠ when they all ran and a check passed with a
//! warning, ✗ when a step of it failed or was refused, and … when some of its steps never ran (not proven
//! either way). The run's line follows the run's status, not only its members': an interrupted run is not ✓.

use super::{Report, RunStatus, StepReport, StepStatus};

/// One member's verdict: its mark, its name and what it rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberVerdict {
    pub mark: &'static str,
    pub member: String,
    pub line: String,
}

/// The member a step belongs to: its id up to the first `/` (`redo.2/stop` → `redo.2`).
fn member_of(step: &StepReport) -> &str {
    step.id.split_once('/').map_or("", |(m, _)| m)
}

/// `n` and the noun, plural when it is not one.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// One member from its steps, in the plan's order.
fn member(name: &str, steps: &[&StepReport], executed: bool) -> MemberVerdict {
    let checks = || steps.iter().flat_map(|s| s.pre.iter().chain(s.post.iter()));
    let failed_check = checks().find(|v| !v.deferred && !v.passed);
    let warnings: Vec<_> = checks()
        .filter(|v| !v.deferred && v.passed && v.warning)
        .collect();
    let checked = checks().filter(|v| !v.deferred).count();
    let stopped = steps
        .iter()
        .find(|s| matches!(s.status, StepStatus::Failed | StepStatus::Refused));
    let finished = |s: &&&StepReport| matches!(s.status, StepStatus::Done | StepStatus::Skipped);
    let done = steps.iter().filter(finished).count();
    let (mark, line) = if let Some(s) = stopped {
        let how = if s.status == StepStatus::Failed {
            "failed"
        } else {
            "refused"
        };
        let why = s
            .error
            .clone()
            .or_else(|| failed_check.map(|v| format!("{}: {}", v.check, v.observed)))
            .unwrap_or_default();
        let why = if why.is_empty() {
            why
        } else {
            format!(": {why}")
        };
        ("✗", format!("{} {how}{why}", s.id))
    } else if let (false, Some(v)) = (executed, failed_check) {
        (
            "✗",
            format!("would be refused: {}: {}", v.check, v.observed),
        )
    } else if executed && done < steps.len() {
        (
            "…",
            format!(
                "{} of {} ran; not proven",
                count(done, "step", "steps"),
                steps.len()
            ),
        )
    } else {
        let what = if executed {
            format!(
                "{} done, {} passed",
                count(steps.len(), "step", "steps"),
                count(checked, "check", "checks")
            )
        } else {
            format!(
                "{}, {} pass (dry run)",
                count(steps.len(), "step", "steps"),
                count(checked, "pre-check", "pre-checks")
            )
        };
        match warnings.first() {
            None => ("✓", what),
            Some(w) => (
                "⚠",
                format!(
                    "{what}, {}: {}: {}",
                    count(warnings.len(), "warning", "warnings"),
                    w.check,
                    w.observed
                ),
            ),
        }
    };
    MemberVerdict {
        mark,
        member: name.to_string(),
        line,
    }
}

/// Every member's verdict, in the plan's order; empty for a run that is not made of members.
pub fn members(r: &Report) -> Vec<MemberVerdict> {
    if !r.procedure.combines_members() {
        return Vec::new();
    }
    let mut names: Vec<&str> = Vec::new();
    for s in &r.steps {
        let m = member_of(s);
        if !m.is_empty() && !names.contains(&m) {
            names.push(m);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let steps: Vec<&StepReport> = r.steps.iter().filter(|s| member_of(s) == name).collect();
            member(name, &steps, r.executed)
        })
        .collect()
}

/// The run's own line: its mark and what it rests on.
pub fn overall(r: &Report, members: &[MemberVerdict]) -> (&'static str, String) {
    let n = |mark: &str| members.iter().filter(|m| m.mark == mark).count();
    let procs = count(members.len(), "procedure", "procedures");
    let which = |mark: &str| {
        members
            .iter()
            .filter(|m| m.mark == mark)
            .map(|m| m.member.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let name = r.procedure.name();
    match r.status {
        RunStatus::Done if n("✗") == 0 && n("…") == 0 => match (n("⚠"), &r.message) {
            // A run-wide warning (slower after than before beyond the noise) is no member's.
            (0, None) if !r.warnings.is_empty() => (
                "⚠",
                format!(
                    "{name} done: {procs}, every check passed; {}",
                    r.warnings.join("; ")
                ),
            ),
            (0, None) => ("✓", format!("{name} done: {procs}, every check passed")),
            (w, m) => (
                "⚠",
                format!(
                    "{name} done: {procs}, {} with warnings ({}){}",
                    w,
                    which("⚠"),
                    m.as_ref().map(|m| format!("; {m}")).unwrap_or_default()
                ),
            ),
        },
        RunStatus::DryRun if n("✗") == 0 => (
            "✓",
            format!("{name} (dry run): {procs}, every pre-check passes; nothing was changed"),
        ),
        RunStatus::Running => ("…", format!("{name} is running")),
        status => {
            let mut line = format!("{name} {status}");
            if n("✗") > 0 {
                line.push_str(&format!(": {}", which("✗")));
            }
            if n("…") > 0 {
                line.push_str(&format!("; not proven: {}", which("…")));
            }
            ("✗", line)
        }
    }
}

/// The verdict as the text report opens with it: the run's line, then one per member; empty when the run is
/// not made of members.
pub fn render_text(r: &Report) -> String {
    let members = members(r);
    if members.is_empty() {
        return String::new();
    }
    let (mark, line) = overall(r, &members);
    let width = members
        .iter()
        .map(|m| m.member.chars().count())
        .max()
        .unwrap_or(0);
    let mut s = format!("\nverdict: {mark} {line}\n");
    for m in &members {
        s.push_str(&format!("  {} {:<width$}  {}\n", m.mark, m.member, m.line));
    }
    s
}

/// The verdict as the page opens with it: the run's line, then a list of the members; empty when the run is
/// not made of members.
pub fn render_html(r: &Report) -> String {
    use super::html::esc;
    let members = members(r);
    if members.is_empty() {
        return String::new();
    }
    let class = |mark: &str| match mark {
        "✓" => "ok",
        "✗" => "bad",
        _ => "warn",
    };
    let (mark, line) = overall(r, &members);
    let mut s = format!(
        "<section class=\"verdict\"><p class=\"overall {}\"><strong>{mark} {}</strong></p><table class=\"members\"><tbody>",
        class(mark),
        esc(&line)
    );
    for m in &members {
        s.push_str(&format!(
            "<tr><td class=\"{}\">{}</td><td><code>{}</code></td><td>{}</td></tr>",
            class(m.mark),
            m.mark,
            esc(&m.member),
            esc(&m.line)
        ));
    }
    s.push_str("</tbody></table></section>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Procedure, Risk, StepPreview, Verdict};

    fn report(ids: &[&str]) -> Report {
        let steps: Vec<StepPreview> = ids
            .iter()
            .map(|id| StepPreview {
                id: id.to_string(),
                title: String::new(),
                risk: Risk::Read,
                commands: Vec::new(),
                pre_checks: Vec::new(),
                post_checks: Vec::new(),
                bench: false,
            })
            .collect();
        let mut r = Report::new(Procedure::Drill, "t", "s", vec!["a note".into()], &steps);
        r.executed = true;
        r.status = RunStatus::Done;
        for s in &mut r.steps {
            s.status = StepStatus::Done;
            s.pre.push(Verdict::pass("ok", "ok"));
        }
        r
    }

    #[test]
    fn each_member_gets_its_mark_and_the_run_its_line() {
        let mut r = report(&[
            "redo/resize",
            "redo/verify",
            "convert/copy",
            "readonly/stop",
        ]);
        let all_good = render_text(&r);
        assert_eq!(
            all_good,
            "\nverdict: ✓ drill done: 3 procedures, every check passed\n  ✓ redo      2 steps done, 2 checks passed\n  ✓ convert   1 step done, 1 check passed\n  ✓ readonly  1 step done, 1 check passed\n"
        );
        r.steps[3].post.push(Verdict {
            check: "downtime".into(),
            ..Verdict::warn("3.2 s", "under 2 s")
        });
        let m = members(&r);
        assert_eq!(m[2].mark, "⚠");
        assert_eq!(
            m[2].line,
            "1 step done, 2 checks passed, 1 warning: downtime: 3.2 s"
        );
        assert_eq!(
            overall(&r, &m),
            (
                "⚠",
                "drill done: 3 procedures, 1 with warnings (readonly)".to_string()
            )
        );
        // A failed step: its member ✗ with the error, the members after it not reached, the run ✗.
        r.status = RunStatus::Failed;
        r.steps[2].status = StepStatus::Failed;
        r.steps[2].error = Some("the copy lost rows".into());
        r.steps[3].status = StepStatus::Pending;
        let m = members(&r);
        assert_eq!(
            (m[1].mark, m[1].line.as_str()),
            ("✗", "convert/copy failed: the copy lost rows")
        );
        assert_eq!(
            (m[2].mark, m[2].line.as_str()),
            ("…", "0 steps of 1 ran; not proven")
        );
        assert_eq!(
            overall(&r, &m),
            (
                "✗",
                "drill failed: convert; not proven: readonly".to_string()
            )
        );
    }

    #[test]
    fn a_run_wide_warning_makes_the_run_s_mark_a_warning() {
        let mut r = report(&["redo/preflight", "convert/copy"]);
        r.warnings
            .push("the benchmark after is slower than before beyond the noise (tps -61.0%)".into());
        let (mark, line) = overall(&r, &members(&r));
        assert_eq!(mark, "⚠", "{line}");
        assert!(line.ends_with("every check passed; the benchmark after is slower than before beyond the noise (tps -61.0%)"), "{line}");
    }

    #[test]
    fn the_text_report_opens_with_the_verdict_and_the_notes_come_after_it() {
        let r = report(&["redo/resize", "convert/copy"]);
        let text = r.render_text();
        let verdict = text.find("verdict: ✓").expect("a verdict");
        let note = text.find("note: a note").expect("the note");
        let first_step = text.find("1. ").expect("the steps");
        assert!(verdict < note && note < first_step, "{text}");
        // A single procedure's report has no members to sum up.
        let mut single = r.clone();
        single.procedure = Procedure::Redo;
        assert!(members(&single).is_empty());
        assert!(!single.render_text().contains("verdict:"));
    }

    #[test]
    fn the_page_opens_with_the_verdict_before_the_notes() {
        let mut r = report(&["redo/resize", "convert/copy"]);
        r.steps[1].status = StepStatus::Refused;
        r.steps[1].pre.push(Verdict {
            check: "table is MyISAM".into(),
            ..Verdict::fail("InnoDB", "MyISAM", "nothing to convert")
        });
        r.status = RunStatus::Refused;
        let html = super::super::html::render_report(&r);
        let verdict = html.find("<section class=\"verdict\">").expect("a verdict");
        assert!(verdict < html.find("note: a note").unwrap(), "{html}");
        assert!(verdict < html.find("<th>target</th>").unwrap(), "{html}");
        assert!(
            html.contains("<p class=\"overall bad\"><strong>✗ drill refused: convert</strong></p>"),
            "{html}"
        );
        assert!(
            html.contains("<tr><td class=\"ok\">✓</td><td><code>redo</code></td>"),
            "{html}"
        );
        assert!(html.contains("<tr><td class=\"bad\">✗</td><td><code>convert</code></td><td>convert/copy refused: table is MyISAM: InnoDB</td></tr>"), "{html}");
    }
}
