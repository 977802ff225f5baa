//! The run directory: `plan.json`, `journal.jsonl` (one event a line, appended and flushed as it happens),
//! `report.json` (rewritten after every step) and `bench/*.json`. A crash loses nothing already written, and
//! `innops resume` reads it all back.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::plan::report::RunStatus;
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
        procedure: crate::plan::Procedure,
        target: String,
        /// sha256 of `plan.json` as written: `resume` refuses a plan that was changed since.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        plan_sha256: Option<String>,
        /// HMAC-SHA256 of `plan.json` under the key of the user who started the run ([`plan_mac`]): a plan
        /// rewritten together with its recorded sha256 still fails this.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        plan_mac: Option<String>,
    },
    Resumed {
        after_step: Option<String>,
    },
    StepStarted {
        step: String,
    },
    Check {
        step: String,
        phase: CheckPhase,
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
    /// The benchmark before or after began: a phase of its own between the steps (its span in the report).
    BenchStarted {
        label: BenchPoint,
    },
    Bench {
        label: BenchPoint,
        file: String,
    },
    Interrupted {
        before_step: String,
    },
    RunDone {
        status: RunStatus,
    },
}

/// When a check recorded in the journal was judged.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CheckPhase {
    /// Before the step's action.
    Pre,
    /// After it.
    Post,
    /// On resume, the post-checks of a step whose action was recorded done.
    ResumePost,
}

/// Where a plan's benchmark figures are taken: before its first benchmarked step, after its last.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BenchPoint {
    Before,
    After,
}

impl BenchPoint {
    /// `before` or `after`: the journal's word, the file name under `bench/` and the progress line's.
    pub fn name(self) -> &'static str {
        match self {
            BenchPoint::Before => "before",
            BenchPoint::After => "after",
        }
    }
}

impl std::fmt::Display for BenchPoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
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
        if path.exists() && !path.is_dir() {
            return Err(crate::error::bad_input(format!(
                "--run-dir {} is a file, not a directory: give a directory for the run (it is made if missing)",
                path.display()
            )));
        }
        create_private_dir(&path.join("bench")).map_err(|e| {
            crate::error::bad_input(format!(
                "the run directory {} cannot be made ({}): give a --run-dir you can write",
                path.display(),
                crate::error::display_of(&e)
            ))
        })?;
        write_json_atomic(&path.join("plan.json"), plan)?;
        let bytes = std::fs::read(path.join("plan.json"))
            .with_context(|| format!("reading {}", path.join("plan.json").display()))?;
        let mac = plan_mac(&key_file()?, &bytes)?;
        let mut rd = RunDir::open(path)?;
        rd.log(EventKind::RunStarted {
            procedure: plan.header.procedure,
            target: plan.header.target.clone(),
            plan_sha256: Some(file_sha256(&path.join("plan.json"))?),
            plan_mac: Some(mac),
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
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(sha256_hex(&bytes))
}

/// `plan.json` is evidence of what the DBA was shown, not input: refuse to continue a run whose plan was
/// changed after it started, whose journal does not say what the plan was, or whose plan innops did not write
/// itself (a plan and journal rewritten together, sha256 and all, fail the keyed check).
pub fn check_plan_unchanged(dir: &Path, events: &[Event]) -> anyhow::Result<()> {
    check_plan_with_key(dir, events, &key_file()?)
}

fn check_plan_with_key(dir: &Path, events: &[Event], key: &Path) -> anyhow::Result<()> {
    let recorded = events.iter().find_map(|e| match &e.kind {
        EventKind::RunStarted {
            plan_sha256,
            plan_mac,
            ..
        } => Some((plan_sha256.clone(), plan_mac.clone())),
        _ => None,
    });
    let plan = dir.join("plan.json");
    let bytes = std::fs::read(&plan).map_err(|_| not_a_run_dir(dir))?;
    let now = sha256_hex(&bytes);
    match recorded {
        Some((Some(sha), _)) if sha != now => Err(crate::error::refused(format!(
            "{} was changed after the run started: innops continues only the plan it showed, so start a new run instead of resuming this one",
            plan.display()
        ))),
        Some((Some(_), Some(mac))) if verify_mac(key, &bytes, &mac)? => Ok(()),
        Some((Some(_), Some(_))) => Err(crate::error::refused(format!(
            "{} and its journal were not written by innops as {} (the plan's signature does not match the key in {}): innops continues only plans it wrote itself, so resume as the user who started the run, or start a new run",
            plan.display(),
            whoami(),
            key.display()
        ))),
        Some((Some(_), None)) => Err(crate::error::refused(format!(
            "the journal in {} records no signature for its plan (an older innops, or an edited journal): innops cannot prove the plan is its own, so start a new run",
            dir.display()
        ))),
        _ => Err(crate::error::refused(format!(
            "the journal in {} does not record which plan the run started with: innops cannot prove the plan is unchanged, so start a new run",
            dir.display()
        ))),
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn whoami() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| format!("uid {}", unsafe { libc::getuid() }))
}

/// The file holding the key innops signs its plans with: `$INNOPS_STATE_DIR/run-key`, else
/// `$XDG_STATE_HOME/innops/run-key`, else `~/.local/state/innops/run-key`. Readable by its owner only, so a
/// plan rewritten by anyone who cannot read it (another user with write access to a shared run directory, a
/// script that patches JSON) is refused on resume.
pub fn key_file() -> anyhow::Result<PathBuf> {
    let dir = if let Some(d) = std::env::var_os("INNOPS_STATE_DIR").filter(|d| !d.is_empty()) {
        PathBuf::from(d)
    } else if let Some(d) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(d).join("innops")
    } else if let Some(h) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        PathBuf::from(h).join(".local/state/innops")
    } else {
        return Err(crate::error::bad_input(
            "innops needs a private directory for the key it signs run plans with, and neither HOME nor XDG_STATE_HOME is set: set INNOPS_STATE_DIR to one",
        ));
    };
    Ok(dir.join("run-key"))
}

/// The signing key in `path`, made (32 random bytes, 0600, in a 0700 directory) the first time. Two runs
/// starting at once agree on one key: the new key is written in full under a temporary name, then linked into
/// place, which fails if another process linked its own first.
fn signing_key(path: &Path) -> anyhow::Result<Vec<u8>> {
    if let Ok(k) = std::fs::read(path) {
        if k.len() == 32 {
            return Ok(k);
        }
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    create_private_dir(dir)?;
    let mut key = [0u8; 32];
    use rand::RngCore;
    rand::rngs::OsRng.fill_bytes(&mut key);
    let tmp = dir.join(format!("run-key.{}.tmp", std::process::id()));
    write_private(&tmp, &key)?;
    let linked = std::fs::hard_link(&tmp, path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(key.to_vec()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let k = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            if k.len() != 32 {
                return Err(crate::error::refused(format!(
                    "{} is not a key innops wrote (it holds {} bytes, not 32): move it away, and innops makes a new one (runs signed with it can then not be resumed)",
                    path.display(),
                    k.len()
                )));
            }
            Ok(k)
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!("creating {}", path.display()))),
    }
}

/// HMAC-SHA256 of a plan's bytes under the key in `key`, in hex.
pub fn plan_mac(key: &Path, plan: &[u8]) -> anyhow::Result<String> {
    use hmac::Mac;
    let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(&signing_key(key)?)
        .expect("HMAC takes a key of any length");
    m.update(plan);
    Ok(m.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// HMAC-SHA256 of `bytes` under the running user's key ([`key_file`]): for the other files a resume trusts
/// (the online walk's position), signed as the plan is.
pub fn sign(bytes: &[u8]) -> anyhow::Result<String> {
    plan_mac(&key_file()?, bytes)
}

/// Whether `mac` is the running user's signature of `bytes` ([`sign`]).
pub fn signed_by_us(bytes: &[u8], mac: &str) -> anyhow::Result<bool> {
    verify_mac(&key_file()?, bytes, mac)
}

fn verify_mac(key: &Path, plan: &[u8], mac: &str) -> anyhow::Result<bool> {
    use hmac::Mac;
    let Some(tag) = (0..mac.len())
        .step_by(2)
        .map(|i| {
            mac.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
    else {
        return Ok(false);
    };
    let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(&signing_key(key)?)
        .expect("HMAC takes a key of any length");
    m.update(plan);
    // Constant-time comparison, as the crate does it.
    Ok(m.verify_slice(&tag).is_ok())
}

/// A directory without a readable plan.json, as bad input.
pub fn not_a_run_dir(dir: &Path) -> anyhow::Error {
    crate::error::bad_input(format!(
        "{} is not an innops run directory (no plan.json): pass the directory a run printed",
        dir.display()
    ))
}

pub fn read_plan(dir: &Path) -> anyhow::Result<PlanFile> {
    let p = dir.join("plan.json");
    let text = std::fs::read_to_string(&p).map_err(|_| not_a_run_dir(dir))?;
    serde_json::from_str(&text).map_err(|e| {
        // A procedure this innops does not have (a newer version's run) is said as such, not as a parse error.
        let named = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| {
            v.get("procedure")
                .and_then(|n| n.as_str())
                .map(str::to_string)
        });
        match named {
            Some(name) if crate::plan::Procedure::named(&name).is_none() => crate::error::bad_input(format!(
                "the run directory holds a '{name}' run, which this innops cannot resume: use the innops version that started it"
            )),
            _ => anyhow::Error::new(e).context(format!("reading {}", p.display())),
        }
    })
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
            EventKind::RunDone { status } => p.finished = *status == RunStatus::Done,
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

pub use crate::files::{create_private_dir, open_private_append, write_json_atomic, write_private};

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::OpenOptions;

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
    fn a_run_dir_that_is_a_file_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let plan = PlanFile {
            header: serde_json::from_value(serde_json::json!({
                "procedure": "redo", "target": "t", "server": "s", "params": {}, "notes": [],
                "conn": {}, "control": null
            }))
            .unwrap(),
            steps: Vec::new(),
            created: Utc::now(),
            options: RecordedOptions::default(),
        };
        let e = RunDir::create(&file, &plan).err().unwrap();
        assert_eq!(crate::error::exit_code_of(&e), 2, "{e}");
        assert!(e.to_string().contains("is a file, not a directory"), "{e}");
        let e = RunDir::create(&file.join("sub"), &plan).err().unwrap();
        assert_eq!(crate::error::exit_code_of(&e), 2, "{e}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
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

    fn started(sha: Option<String>, mac: Option<String>) -> Vec<Event> {
        vec![ev(EventKind::RunStarted {
            procedure: crate::plan::Procedure::Convert,
            target: "t".into(),
            plan_sha256: sha,
            plan_mac: mac,
        })]
    }

    #[test]
    fn a_plan_is_resumed_only_unchanged_and_signed_with_the_users_own_key() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("state/run-key");
        let plan = br#"{"steps": ["copy", "swap"], "drop_old": false}"#;
        std::fs::write(dir.path().join("plan.json"), plan).unwrap();
        let sha = sha256_hex(plan);
        let mac = plan_mac(&key, plan).unwrap();
        let ok = started(Some(sha.clone()), Some(mac.clone()));
        check_plan_with_key(dir.path(), &ok, &key).unwrap();
        // The key is private, and made once.
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&key).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(plan_mac(&key, plan).unwrap(), mac);

        // Edited: the recorded sha256 no longer matches.
        let forged = br#"{"steps": ["copy", "swap"], "drop_old": true}"#;
        std::fs::write(dir.path().join("plan.json"), forged).unwrap();
        let e = check_plan_with_key(dir.path(), &ok, &key).unwrap_err();
        assert!(
            e.to_string().contains("was changed after the run started"),
            "{e}"
        );

        // Forged in full: the journal rewritten with the new sha256 and a signature made with another key.
        let other = dir.path().join("other/run-key");
        let rewritten = started(
            Some(sha256_hex(forged)),
            Some(plan_mac(&other, forged).unwrap()),
        );
        let e = check_plan_with_key(dir.path(), &rewritten, &key).unwrap_err();
        assert!(e.to_string().contains("were not written by innops"), "{e}");
        // ... or with the signature left out, or garbage.
        let unsigned = started(Some(sha256_hex(forged)), None);
        let e = check_plan_with_key(dir.path(), &unsigned, &key).unwrap_err();
        assert!(e.to_string().contains("records no signature"), "{e}");
        let garbage = started(Some(sha256_hex(forged)), Some("zz".into()));
        assert!(check_plan_with_key(dir.path(), &garbage, &key).is_err());
        // No record of the plan at all.
        let e = check_plan_with_key(dir.path(), &started(None, None), &key).unwrap_err();
        assert!(e.to_string().contains("does not record which plan"), "{e}");
        // A key file innops did not write is refused, not silently replaced.
        let bad = dir.path().join("bad/run-key");
        std::fs::create_dir_all(bad.parent().unwrap()).unwrap();
        std::fs::write(&bad, b"short").unwrap();
        assert!(plan_mac(&bad, plan).is_err());
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

    #[test]
    fn a_plan_json_written_before_the_procedure_type_reads_back_and_an_unknown_procedure_is_named()
    {
        let dir = tempfile::tempdir().unwrap();
        let plan = |procedure: &str| {
            serde_json::json!({
                "procedure": procedure, "target": "t", "server": "s", "params": {}, "notes": [],
                "conn": {}, "control": null, "steps": [], "created": "2026-01-01T00:00:00Z"
            })
            .to_string()
        };
        std::fs::write(dir.path().join("plan.json"), plan("convert-drop-kept")).unwrap();
        let pf = read_plan(dir.path()).unwrap();
        assert_eq!(pf.header.procedure, crate::plan::Procedure::ConvertDropKept);
        assert_eq!(
            serde_json::to_value(&pf).unwrap()["procedure"],
            "convert-drop-kept"
        );
        std::fs::write(dir.path().join("plan.json"), plan("resize-everything")).unwrap();
        let e = read_plan(dir.path()).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2, "{e}");
        assert_eq!(
            crate::error::display_of(&e),
            "the run directory holds a 'resize-everything' run, which this innops cannot resume: use the innops version that started it"
        );
    }

    #[test]
    fn journal_lines_written_before_the_enums_read_back_with_the_same_spelling() {
        // Lines as an older innops wrote them: the words are the enums' serde names.
        let old = [
            r#"{"ts":"2026-01-01T00:00:00Z","event":"check","step":"s","phase":"resume-post","verdict":{"check":"c","passed":true,"observed":"o","expected":"x"}}"#,
            r#"{"ts":"2026-01-01T00:00:01Z","event":"bench","label":"before","file":"bench/before.json"}"#,
            r#"{"ts":"2026-01-01T00:00:02Z","event":"run_done","status":"interrupted"}"#,
        ];
        let kinds: Vec<EventKind> = old
            .iter()
            .map(|l| {
                serde_json::from_str::<Event>(l)
                    .unwrap_or_else(|e| panic!("{l}: {e}"))
                    .kind
            })
            .collect();
        assert!(matches!(
            &kinds[0],
            EventKind::Check {
                phase: CheckPhase::ResumePost,
                ..
            }
        ));
        assert!(matches!(
            &kinds[1],
            EventKind::Bench {
                label: BenchPoint::Before,
                ..
            }
        ));
        assert_eq!(
            kinds[2],
            EventKind::RunDone {
                status: RunStatus::Interrupted
            }
        );
        for (l, k) in old.iter().zip(&kinds) {
            let again: serde_json::Value = serde_json::to_value(Event {
                ts: serde_json::from_str::<Event>(l).unwrap().ts,
                kind: k.clone(),
            })
            .unwrap();
            let was: serde_json::Value = serde_json::from_str(l).unwrap();
            for key in ["phase", "label", "status"] {
                assert_eq!(again.get(key), was.get(key), "{l}");
            }
        }
        for s in [
            RunStatus::DryRun,
            RunStatus::Running,
            RunStatus::Done,
            RunStatus::Refused,
            RunStatus::Failed,
            RunStatus::Interrupted,
        ] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
        for b in [BenchPoint::Before, BenchPoint::After] {
            assert_eq!(serde_json::to_value(b).unwrap(), b.name());
        }
    }
}
