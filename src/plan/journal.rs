//! The run directory: `plan.json`, `journal.jsonl` (one event a line, appended and flushed as it happens),
//! `report.json` (rewritten after every step) and `bench/*.json`. A crash loses nothing already written, and
//! `innops resume` reads it all back.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::plan::{PlanHeader, StepPreview, Verdict};

/// One line of `journal.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub ts: DateTime<Utc>,
    #[serde(flatten)]
    pub kind: EventKind,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    RunStarted {
        procedure: String,
        target: String,
        /// sha256 of `plan.json` as written: `resume` refuses a plan that was changed since.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        plan_sha256: Option<String>,
    },
    Resumed {
        after_step: Option<String>,
    },
    StepStarted {
        step: String,
    },
    Check {
        step: String,
        phase: String,
        verdict: Verdict,
    },
    ActionSkipped {
        step: String,
        reason: String,
    },
    ActionDone {
        step: String,
        result: serde_json::Value,
    },
    StepDone {
        step: String,
    },
    StepRefused {
        step: String,
        reason: String,
    },
    StepFailed {
        step: String,
        reason: String,
        recovery: Option<String>,
    },
    Bench {
        label: String,
        file: String,
    },
    Interrupted {
        before_step: String,
    },
    RunDone {
        status: String,
    },
}

/// The plan as written to `plan.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanFile {
    #[serde(flatten)]
    pub header: PlanHeader,
    pub steps: Vec<StepPreview>,
    pub created: DateTime<Utc>,
    /// The options the run started with; `resume` honours them.
    #[serde(default)]
    pub options: RecordedOptions,
}

/// The run options that are part of a plan: a resumed run behaves as the run that started it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedOptions {
    /// `--no-bench`: no benchmark before or after.
    pub no_bench: bool,
    /// `--yes`: restart and destructive steps were allowed without a prompt.
    pub yes: bool,
    /// Seconds each benchmark runs.
    pub bench_time_s: Option<u64>,
    /// `--bench-during`: the threads of the workload that runs for the whole plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bench_during: Option<u32>,
}

pub struct RunDir {
    pub path: PathBuf,
    journal: File,
}

impl RunDir {
    /// The default run directory: `./innops-runs/<UTC time>-<procedure>`.
    pub fn default_path(procedure: &str) -> PathBuf {
        PathBuf::from("innops-runs").join(format!(
            "{}-{procedure}",
            Utc::now().format("%Y%m%dT%H%M%S%.3fZ")
        ))
    }

    /// Create a new run directory and write `plan.json`.
    pub fn create(path: &Path, plan: &PlanFile) -> anyhow::Result<RunDir> {
        if path.join("journal.jsonl").exists() {
            return Err(crate::error::bad_input(format!(
                "the run directory {} already holds a run: continue it with `innops resume {}` or pick another --run-dir",
                path.display(),
                path.display()
            )));
        }
        create_private_dir(&path.join("bench"))?;
        write_json_atomic(&path.join("plan.json"), plan)?;
        let mut rd = RunDir::open(path)?;
        rd.log(EventKind::RunStarted {
            procedure: plan.header.procedure.clone(),
            target: plan.header.target.clone(),
            plan_sha256: Some(file_sha256(&path.join("plan.json"))?),
        })?;
        Ok(rd)
    }

    /// Open an existing run directory to append to its journal.
    pub fn open(path: &Path) -> anyhow::Result<RunDir> {
        let journal = open_private_append(&path.join("journal.jsonl"))
            .with_context(|| format!("opening the journal in {}", path.display()))?;
        Ok(RunDir {
            path: path.to_path_buf(),
            journal,
        })
    }

    pub fn log(&mut self, kind: EventKind) -> anyhow::Result<()> {
        let ev = Event {
            ts: Utc::now(),
            kind,
        };
        let mut line = serde_json::to_string(&ev)?;
        line.push('\n');
        let path = self.path.join("journal.jsonl");
        self.journal
            .write_all(line.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        self.journal
            .sync_data()
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    pub fn write_json(&self, rel: &str, value: &impl Serialize) -> anyhow::Result<()> {
        write_json_atomic(&self.path.join(rel), value)
    }
}

/// sha256 of a file's bytes, in hex.
pub fn file_sha256(path: &Path) -> anyhow::Result<String> {
    use sha2::Digest;
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// `plan.json` is evidence of what the DBA was shown, not input: refuse to continue a run whose plan was
/// changed after it started, or whose journal does not say what the plan was.
pub fn check_plan_unchanged(dir: &Path, events: &[Event]) -> anyhow::Result<()> {
    let recorded = events.iter().find_map(|e| match &e.kind {
        EventKind::RunStarted { plan_sha256, .. } => Some(plan_sha256.clone()),
        _ => None,
    });
    let now = file_sha256(&dir.join("plan.json"))?;
    match recorded {
        Some(Some(sha)) if sha == now => Ok(()),
        Some(Some(_)) => Err(crate::error::refused(format!(
            "{} was changed after the run started: innops continues only the plan it showed, so start a new run instead of resuming this one",
            dir.join("plan.json").display()
        ))),
        _ => Err(crate::error::refused(format!(
            "the journal in {} does not record which plan the run started with: innops cannot prove the plan is unchanged, so start a new run",
            dir.display()
        ))),
    }
}

pub fn read_plan(dir: &Path) -> anyhow::Result<PlanFile> {
    let p = dir.join("plan.json");
    let text = std::fs::read_to_string(&p).map_err(|_| {
        crate::error::bad_input(format!(
            "{} is not an innops run directory (no plan.json): pass the directory a run printed",
            dir.display()
        ))
    })?;
    serde_json::from_str(&text).with_context(|| format!("reading {}", p.display()))
}

/// Every event of a journal; a torn last line (crash mid-write) is ignored.
pub fn read_journal(dir: &Path) -> anyhow::Result<Vec<Event>> {
    let p = dir.join("journal.jsonl");
    let text = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// Where a run stands, from its journal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Progress {
    pub done: Vec<String>,
    /// A step that started and did not finish.
    pub in_flight: Option<String>,
    pub finished: bool,
    /// Steps whose action ran (an `action_done` event), and steps a pre-check found already done or that only
    /// check (`action_skipped`): what a resumed run reports as having acted.
    pub acted: Vec<String>,
    pub skipped: Vec<String>,
}

pub fn progress(events: &[Event]) -> Progress {
    let mut p = Progress::default();
    for e in events {
        match &e.kind {
            EventKind::StepStarted { step } => p.in_flight = Some(step.clone()),
            EventKind::StepDone { step } => {
                if !p.done.contains(step) {
                    p.done.push(step.clone());
                }
                p.in_flight = None;
            }
            EventKind::RunDone { status } => p.finished = status == "done",
            EventKind::ActionDone { step, .. } if !p.acted.contains(step) => {
                p.acted.push(step.clone())
            }
            EventKind::ActionSkipped { step, .. } if !p.skipped.contains(step) => {
                p.skipped.push(step.clone())
            }
            _ => {}
        }
    }
    p
}

/// Creates `path` and any missing parents with mode 0700: a run directory holds option-file backups, server
/// facts and the journal, which other local users have no business reading. Directories that already exist
/// keep their mode (`--run-dir /tmp/x` must not lock others out of `/tmp`).
pub fn create_private_dir(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .with_context(|| format!("creating {}", path.display()))
}

pub fn write_json_atomic(path: &Path, value: &impl Serialize) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    write_private(&tmp, serde_json::to_string_pretty(value)?.as_bytes())?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} into place", tmp.display()))
}

/// Opens `path` for appending, creating it readable and writable by its owner only (0600). A run's files hold
/// every variable and status value of the server and the plan; a `--run-dir` that already exists keeps its own
/// mode, so the files themselves must be private whatever the directory and the umask allow. An existing file
/// is made 0600 too.
pub fn open_private_append(path: &Path) -> anyhow::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("making {} private", path.display()))?;
    Ok(f)
}

/// Writes `bytes` to `path` (replacing what it held) as a file only its owner can read: see
/// [`open_private_append`].
pub fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("making {} private", path.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: EventKind) -> Event {
        Event {
            ts: Utc::now(),
            kind,
        }
    }

    #[test]
    fn progress_knows_done_steps_and_the_one_in_flight() {
        let events = vec![
            ev(EventKind::StepStarted { step: "a".into() }),
            ev(EventKind::StepDone { step: "a".into() }),
            ev(EventKind::StepStarted { step: "b".into() }),
        ];
        let p = progress(&events);
        assert_eq!(p.done, vec!["a".to_string()]);
        assert_eq!(p.in_flight.as_deref(), Some("b"));
        assert!(!p.finished);
    }

    #[test]
    fn a_new_run_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("innops-runs/20260101T000000Z-redo");
        let plan = PlanFile {
            header: serde_json::from_value(serde_json::json!({
                "procedure": "redo", "target": "t", "server": "s", "params": {}, "notes": [],
                "conn": {}, "control": null
            }))
            .unwrap_or_else(|e| panic!("a minimal header: {e}")),
            steps: Vec::new(),
            created: Utc::now(),
            options: RecordedOptions::default(),
        };
        RunDir::create(&run, &plan).unwrap();
        for d in [
            dir.path().join("innops-runs"),
            run.clone(),
            run.join("bench"),
        ] {
            let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
    }

    #[test]
    fn a_torn_last_journal_line_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let mut rd = RunDir::open(dir.path()).unwrap();
        rd.log(EventKind::StepStarted { step: "a".into() }).unwrap();
        rd.log(EventKind::StepDone { step: "a".into() }).unwrap();
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.path().join("journal.jsonl"))
            .unwrap();
        f.write_all(b"{\"ts\":\"2026-").unwrap();
        let events = read_journal(dir.path()).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(progress(&events).done, vec!["a".to_string()]);
    }
}
