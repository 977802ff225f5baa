//! `innops runs`: the run directories under `--runs-dir` (default ./innops-runs), each with when it started,
//! what it worked on and how it ended, read from its `plan.json` and `journal.jsonl`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::{Format, RunsArgs};
use crate::error::bad_input;
use crate::plan::journal::{progress, read_journal, read_plan, EventKind};

/// One past run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunSummary {
    /// When the run started (RFC 3339, UTC).
    pub started: String,
    pub procedure: String,
    /// The tables it works on, when the procedure names any (`db.table`, comma-separated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objects: Option<String>,
    /// The server.
    pub target: String,
    /// done, failed, refused, interrupted or unreadable.
    pub status: String,
    /// The step the run stopped at or before, when it did not finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// True when `innops resume RUN_DIR` can continue it.
    pub resumable: bool,
    /// The status in words, as the text listing shows it.
    pub summary: String,
    pub run_dir: PathBuf,
}

/// `[["d","t"],["d","u"]]` → `d.t, d.u`.
fn objects(params: &serde_json::Value) -> Option<String> {
    let tables = params.get("tables")?.as_array()?;
    let names: Vec<String> = tables
        .iter()
        .filter_map(|t| match t {
            serde_json::Value::Array(parts) => Some(
                parts
                    .iter()
                    .filter_map(|p| p.as_str())
                    .collect::<Vec<_>>()
                    .join("."),
            ),
            serde_json::Value::String(s) => Some(s.clone()),
            _ => None,
        })
        .collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// How the run in `dir` stands. A directory that holds no run is `None`.
pub fn summarize(dir: &Path) -> Option<RunSummary> {
    if !dir.join("journal.jsonl").is_file() && !dir.join("plan.json").is_file() {
        return None;
    }
    let unreadable = |why: String| RunSummary {
        started: String::new(),
        procedure: String::new(),
        objects: None,
        target: String::new(),
        status: "unreadable".into(),
        step: None,
        resumable: false,
        summary: why,
        run_dir: dir.to_path_buf(),
    };
    let plan = match read_plan(dir) {
        Ok(p) => p,
        Err(e) => return Some(unreadable(crate::error::display_of(&e))),
    };
    let events = match read_journal(dir) {
        Ok(e) => e,
        Err(e) => return Some(unreadable(crate::error::display_of(&e))),
    };
    // Only what happened since the last start or resume decides how the run ended.
    let from = events
        .iter()
        .rposition(|e| {
            matches!(
                e.kind,
                EventKind::Resumed { .. } | EventKind::RunStarted { .. }
            )
        })
        .unwrap_or(0);
    let tail = &events[from..];
    let ended = tail.iter().rev().find_map(|e| match &e.kind {
        EventKind::RunDone { status } => Some(status.to_string()),
        _ => None,
    });
    let last_step = |pick: fn(&EventKind) -> Option<&String>| {
        tail.iter().rev().find_map(|e| pick(&e.kind).cloned())
    };
    let p = progress(&events);
    let (status, step) = match ended.as_deref() {
        Some("done") => ("done".to_string(), None),
        Some("refused") => (
            "refused".to_string(),
            last_step(|k| match k {
                EventKind::StepRefused { step, .. } => Some(step),
                _ => None,
            }),
        ),
        Some("interrupted") => (
            "interrupted".to_string(),
            last_step(|k| match k {
                EventKind::Interrupted { before_step } => Some(before_step),
                _ => None,
            })
            .or(p.in_flight.clone()),
        ),
        Some(other) => (
            other.to_string(),
            last_step(|k| match k {
                EventKind::StepFailed { step, .. } => Some(step),
                _ => None,
            })
            .or(p.in_flight.clone()),
        ),
        // No end recorded: the process died (kill -9, a crash, the machine) in the middle of the run.
        None => ("interrupted".to_string(), p.in_flight.clone()),
    };
    let resumable = status == "interrupted";
    let at = |s: &Option<String>| {
        s.as_deref()
            .map(|x| format!(" at step {x}"))
            .unwrap_or_default()
    };
    let summary = match status.as_str() {
        "done" => "done".to_string(),
        "interrupted" => format!("interrupted{}, resumable", at(&step)),
        "failed" => format!("failed{}", at(&step)),
        "refused" => format!("refused{}", at(&step)),
        s => s.to_string(),
    };
    let started = events
        .first()
        .map(|e| e.ts)
        .unwrap_or(plan.created)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    Some(RunSummary {
        started,
        procedure: plan.header.procedure.to_string(),
        objects: objects(&plan.header.params),
        target: plan.header.target.clone(),
        status,
        step,
        resumable,
        summary,
        run_dir: dir.to_path_buf(),
    })
}

/// Every run under `root`, oldest first.
pub fn list(root: &Path) -> anyhow::Result<Vec<RunSummary>> {
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        // No directory yet: no run has acted here (a dry run writes none). Not an error: nothing to list.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(bad_input(format!(
                "cannot read {}: {}",
                root.display(),
                crate::error::io_detail(&e)
            )))
        }
    };
    let mut runs: Vec<RunSummary> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .filter_map(|e| summarize(&e.path()))
        .collect();
    runs.sort_by(|a, b| (&a.started, &a.run_dir).cmp(&(&b.started, &b.run_dir)));
    Ok(runs)
}

pub fn run(a: &RunsArgs) -> anyhow::Result<()> {
    let runs = list(&a.runs_dir)?;
    if a.fmt.format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(());
    }
    if runs.is_empty() {
        println!(
            "no runs in {}{}: runs go to ./innops-runs of the directory they ran in (a dry run writes none); give --runs-dir DIR for another",
            a.runs_dir.display(),
            if a.runs_dir.is_dir() { "" } else { " (it does not exist)" }
        );
        return Ok(());
    }
    // The server, and what the run worked on there when the procedure names tables.
    let target_of = |r: &RunSummary| match &r.objects {
        Some(o) => format!("{o} on {}", r.target),
        None => r.target.clone(),
    };
    // Columns as wide as their widest value, so a long target never pushes the others out of line.
    let tw = runs
        .iter()
        .map(|r| target_of(r).chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let sw = runs
        .iter()
        .map(|r| r.summary.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    let pw = runs
        .iter()
        .map(|r| r.procedure.len())
        .max()
        .unwrap_or(0)
        .max(9);
    println!(
        "{:<21} {:<pw$} {:<tw$} {:<sw$} RUN DIR",
        "STARTED", "PROCEDURE", "TARGET", "STATUS"
    );
    for r in &runs {
        println!(
            "{:<21} {:<pw$} {:<tw$} {:<sw$} {}",
            r.started,
            r.procedure,
            target_of(r),
            r.summary,
            r.run_dir.display()
        );
    }
    if runs.iter().any(|r| r.resumable) {
        println!("\ncontinue an interrupted run with `innops resume RUN_DIR`");
    }
    Ok(())
}
