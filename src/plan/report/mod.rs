//! `report.json`: where a run stands, step by step, with every verdict and the before/after figures. Rewritten
//! after every step so a crash leaves an accurate report behind; also rendered as text for the terminal.
//!
//! The report's one home: [`impact`] reads the during-workload's lines back with the journal's step spans,
//! [`timeline`] draws the impact-over-time chart and [`html`] renders `report.html`. They use bench's figures
//! and statistics; bench knows nothing of them.

pub mod chart_key;
pub mod experiment;
mod experiment_time;
pub mod html;
pub mod impact;
pub mod labels;
pub mod summary;
pub mod timeline;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::bench::{BenchResult, Comparison};
use crate::plan::{Risk, StepPreview, Verdict};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    Running,
    Done,
    Skipped,
    Refused,
    Failed,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepReport {
    pub id: String,
    pub title: String,
    pub risk: Risk,
    pub status: StepStatus,
    pub commands: Vec<String>,
    pub pre: Vec<Verdict>,
    pub post: Vec<Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the step started (after the benchmark before, where there is one) and how long it took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<DateTime<Utc>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// Whether the step's action ran (an executed run) or would run (a dry run: the step has an action and no
    /// pre-check found its work already done). False for a step that only checks, one skipped as already done,
    /// one refused before it acted, and one not reached.
    #[serde(default)]
    pub acts: bool,
}

impl StepReport {
    /// The step's commands as a report shows them: an option-file edit the step applied reads with the diff it
    /// applied (its result's `diff`), not the one planned — a playbook's later member plans its diff before the
    /// earlier members edit the same drop-in, so the planned one can be stale.
    pub fn shown_commands(&self) -> Vec<String> {
        let applied = self
            .result
            .as_ref()
            .and_then(|r| r.get("diff"))
            .and_then(|v| v.as_str())
            .filter(|d| !d.trim().is_empty());
        let Some(diff) = applied else {
            return self.commands.clone();
        };
        self.commands
            .iter()
            .map(|c| match c.split_once(":\n--- ") {
                Some((head, _)) if c.starts_with("edit ") => {
                    format!("{head} (as applied):\n{}", diff.trim_end())
                }
                _ => c.clone(),
            })
            .collect()
    }
}

/// A span during which innops blocked writes to an object (the convert's write guard, from acquiring it to
/// releasing it).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WriteBlock {
    pub object: String,
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub seconds: f64,
}

/// A span during which the server refused connections because innops stopped it: from the SHUTDOWN innops sent to
/// the first connection the server accepted again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Downtime {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub seconds: f64,
    /// What came back: "read-only", "with the new redo size", "as it was".
    pub what: String,
}

impl Downtime {
    /// The sentence the summary prints.
    pub fn line(&self) -> String {
        format!(
            "downtime: {:.2} s from SHUTDOWN to the first accepted connection, {} ({} → {} UTC)",
            self.seconds,
            self.what,
            self.from.format("%H:%M:%S%.3f"),
            self.to.format("%H:%M:%S%.3f")
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct BenchReport {
    pub before: Option<BenchResult>,
    pub after: Option<BenchResult>,
    pub change: Option<Comparison>,
}

/// How a run stands, as `report.json`, the journal's last line and `innops runs` spell it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Planned and checked, nothing executed.
    DryRun,
    Running,
    /// Every step done (the message says what fell short of the aim, if anything did).
    Done,
    Refused,
    Failed,
    Interrupted,
}

impl RunStatus {
    /// The word `--format json` consumers read (`dry_run`, `done`, …).
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::DryRun => "dry_run",
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Refused => "refused",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub procedure: crate::plan::Procedure,
    pub target: String,
    pub server: String,
    pub status: RunStatus,
    pub executed: bool,
    pub notes: Vec<String>,
    pub steps: Vec<StepReport>,
    /// Whether any step's action ran (a dry run: would run); false when every step found its work already
    /// done or only checks. What a caller such as Ansible reports as `changed` ([`Report::mark_acts`]).
    #[serde(default)]
    pub changed: bool,
    pub bench: BenchReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The innops that ran, with the commit it was built from: `0.1.0 (commit 1b19568)`.
    #[serde(default)]
    pub version: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub write_blocks: Vec<WriteBlock>,
    /// Each time innops kept the server down (stopped and started it), in order; empty when it never did.
    #[serde(default)]
    pub downtime: Vec<Downtime>,
    /// What the run got, in a line each (printed at the end of the text summary).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcome: Vec<String>,
    /// With `--bench-during`: the workload's throughput and latency over the whole run, with the steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<impact::DuringReport>,
    /// What the run did not fail on but a person must read: a benchmark slower after than before beyond the
    /// noise, say. Printed in the summary and the final line; the exit status is not changed by them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// `innops experiment`: the verdict table, the A/A line and the winner beyond noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experiment: Option<crate::bench::experiment::Experiment>,
}

impl Report {
    pub fn new(
        procedure: crate::plan::Procedure,
        target: &str,
        server: &str,
        notes: Vec<String>,
        steps: &[StepPreview],
    ) -> Report {
        Report {
            procedure,
            target: target.into(),
            server: server.into(),
            status: RunStatus::DryRun,
            executed: false,
            notes,
            steps: steps
                .iter()
                .map(|s| StepReport {
                    id: s.id.clone(),
                    title: s.title.clone(),
                    risk: s.risk,
                    status: StepStatus::Pending,
                    commands: s.commands.clone(),
                    pre: Vec::new(),
                    post: Vec::new(),
                    result: None,
                    error: None,
                    started: None,
                    seconds: None,
                    acts: false,
                })
                .collect(),
            changed: false,
            bench: BenchReport::default(),
            run_dir: None,
            message: None,
            version: env!("INNOPS_VERSION").to_string(),
            write_blocks: Vec::new(),
            downtime: Vec::new(),
            outcome: Vec::new(),
            during: None,
            warnings: Vec::new(),
            experiment: None,
        }
    }

    pub fn step_mut(&mut self, id: &str) -> &mut StepReport {
        self.steps
            .iter_mut()
            .find(|s| s.id == id)
            .expect("report has every step of the plan")
    }

    /// Record that step `id`'s action ran (or, in a dry run, would run); `changed` follows.
    pub fn mark_acts(&mut self, id: &str) {
        self.step_mut(id).acts = true;
        self.changed = true;
    }

    /// One sentence per object whose writes were blocked: its one span, or how many, in all and at most (the
    /// online path's chunks each block writes for a moment).
    pub fn write_block_lines(&self) -> Vec<String> {
        let mut objects: Vec<&str> = Vec::new();
        for w in &self.write_blocks {
            if !objects.contains(&w.object.as_str()) {
                objects.push(&w.object);
            }
        }
        objects
            .into_iter()
            .map(|o| {
                let spans: Vec<&WriteBlock> = self.write_blocks.iter().filter(|w| w.object == o).collect();
                let (first, last) = (spans[0], spans[spans.len() - 1]);
                let when = format!("{} → {} UTC", first.from.format("%H:%M:%S%.3f"), last.to.format("%H:%M:%S%.3f"));
                if spans.len() == 1 {
                    format!("writes to {o} were blocked for {:.2} s ({when})", first.seconds)
                } else {
                    let total: f64 = spans.iter().map(|w| w.seconds).sum();
                    let longest = spans.iter().map(|w| w.seconds).fold(0.0, f64::max);
                    format!("writes to {o} were blocked {} times, {total:.2} s in all, at most {longest:.2} s at once ({when})", spans.len())
                }
            })
            .collect()
    }

    /// The final verdict alone (`--quiet`): one line.
    pub fn render_verdict(&self) -> String {
        let what = if self.executed {
            match self.status {
                // A run that finished short of its aim (exit 4) says how, even in one line.
                RunStatus::Done => match &self.message {
                    Some(m) => format!("done, {m}"),
                    None => "done".to_string(),
                },
                other => other.to_string(),
            }
        } else if self.status == RunStatus::Refused {
            "refused (dry run: nothing was changed)".to_string()
        } else {
            "every pre-check passes (dry run: nothing was changed; add --execute to act)"
                .to_string()
        };
        let dir = self
            .run_dir
            .as_ref()
            .map(|d| format!(", run directory {d}"))
            .unwrap_or_default();
        let warnings: String = self.warnings.iter().map(|w| format!("; ⚠ {w}")).collect();
        format!(
            "innops {} on {}: {what}{warnings}{dir}\n",
            self.procedure, self.target
        )
    }

    /// The report as text.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        let what = if self.executed {
            "run"
        } else {
            "plan (dry run: nothing was changed; add --execute to act)"
        };
        s.push_str(&format!(
            "innops {} {what}\n  target: {} ({})\n",
            self.procedure, self.target, self.server
        ));
        // A run of several procedures opens with its verdict, member by member; the notes come after it.
        let verdict = summary::render_text(self);
        if !verdict.is_empty() {
            s.push_str(&verdict);
            s.push('\n');
        }
        for n in &self.notes {
            s.push_str(&format!("  note: {n}\n"));
        }
        for (i, st) in self.steps.iter().enumerate() {
            let status = match st.status {
                StepStatus::Pending if !self.executed => String::new(),
                ref other => format!(
                    "  [{}]",
                    serde_json::to_value(other)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                ),
            };
            s.push_str(&format!(
                "\n{:>3}. {} ({}, risk {}){status}\n",
                i + 1,
                st.title,
                st.id,
                st.risk.as_str()
            ));
            for c in &st.shown_commands() {
                let mut lines = c.lines();
                if let Some(first) = lines.next() {
                    s.push_str(&format!("       $ {first}\n"));
                }
                for l in lines {
                    s.push_str(&format!("         {l}\n"));
                }
            }
            for (phase, vs) in [("pre ", &st.pre), ("post", &st.post)] {
                for v in vs {
                    let mark = v.mark();
                    if v.deferred {
                        s.push_str(&format!(
                            "       {phase} {mark} {} (checked when the step runs)\n",
                            v.check
                        ));
                        continue;
                    }
                    s.push_str(&format!(
                        "       {phase} {mark} {}: {}",
                        v.check, v.observed
                    ));
                    if !v.passed {
                        s.push_str(&format!(" (expected {})", v.expected));
                    }
                    if v.already_done {
                        s.push_str(" — already done, action skipped");
                    }
                    s.push('\n');
                    if let Some(fix) = &v.fix {
                        s.push_str(&format!("            → {fix}\n"));
                    }
                }
            }
            if let Some(e) = &st.error {
                s.push_str(&format!("       error: {e}\n"));
            }
        }
        if !self.write_blocks.is_empty() {
            s.push('\n');
            for line in self.write_block_lines() {
                s.push_str(&format!("{line}\n"));
            }
        }
        if let Some(e) = &self.experiment {
            s.push('\n');
            s.push_str(&e.render_text());
        }
        if !self.outcome.is_empty() {
            s.push('\n');
            for line in &self.outcome {
                s.push_str(&format!("{line}\n"));
            }
        }
        if let (Some(b), Some(a)) = (&self.bench.before, &self.bench.after) {
            s.push_str("\nbenchmark before → after:\n");
            s.push_str(&crate::bench::render_comparison(b, a));
        }
        if let Some(d) = &self.during {
            s.push_str(&d.render_text(self.bench.before.as_ref()));
        }
        if let Some(m) = &self.message {
            s.push_str(&format!("\n{m}\n"));
        }
        for w in &self.warnings {
            s.push_str(&format!("⚠ warning: {w}\n"));
        }
        if let Some(d) = &self.run_dir {
            s.push_str(&format!("run directory: {d}\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_names_the_innops_that_ran_with_its_commit() {
        let r = Report::new(crate::plan::Procedure::Redo, "t", "s", Vec::new(), &[]);
        assert!(
            r.version.starts_with(env!("CARGO_PKG_VERSION")),
            "{}",
            r.version
        );
        assert!(r.version.contains("(commit "), "{}", r.version);
    }

    #[test]
    fn a_warning_is_in_the_summary_and_the_final_line_and_the_run_stays_done() {
        let mut r = Report::new(
            crate::plan::Procedure::Convert,
            "sb",
            "MariaDB 10.11",
            Vec::new(),
            &[],
        );
        r.executed = true;
        r.status = RunStatus::Done;
        r.warnings
            .push("the benchmark after is slower than before beyond the noise (tps -61.0%)".into());
        let line = r.render_verdict();
        assert!(
            line.contains("done; ⚠ the benchmark after is slower"),
            "{line}"
        );
        assert!(r
            .render_text()
            .contains("⚠ warning: the benchmark after is slower"));
        let html = super::html::render_report(&r);
        assert!(
            html.contains("<p class=\"warn\">⚠ the benchmark after is slower"),
            "{html}"
        );
    }

    fn block(object: &str, from_ms: i64, seconds: f64) -> WriteBlock {
        let from = DateTime::<Utc>::from_timestamp_millis(from_ms).unwrap();
        WriteBlock {
            object: object.into(),
            from,
            to: from + chrono::Duration::milliseconds((seconds * 1000.0) as i64),
            seconds,
        }
    }

    #[test]
    fn one_sentence_per_object_counting_many_short_blocks() {
        let mut r = Report::new(crate::plan::Procedure::Convert, "t", "s", vec![], &[]);
        r.write_blocks = vec![
            block("d.a", 0, 0.25),
            block("d.b", 1000, 0.5),
            block("d.a", 2000, 0.75),
        ];
        let lines = r.write_block_lines();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0], "writes to d.a were blocked 2 times, 1.00 s in all, at most 0.75 s at once (00:00:00.000 → 00:00:02.750 UTC)");
        assert_eq!(
            lines[1],
            "writes to d.b were blocked for 0.50 s (00:00:01.000 → 00:00:01.500 UTC)"
        );
    }
}
