//! Restart variables: a configuration's values written into innops's drop-in (the diff shown), a clean
//! shutdown, a start, and each value read back from the server — through the restart kit
//! ([`crate::procedures::kit::restart`]) that redo and readonly use.
//!
//! The drop-in's text for a configuration is a function of its text before the experiment (kept in the run
//! directory by the first restart, as `experiment/dropin-before.json`) and the configuration's values, so a
//! step can tell "already done" by reading the file and the server, and a resumed run writes the same text.
//! Configuration 0 is the text from before, exactly (or no file, when there was none): the `restore-config`
//! step ends every experiment with it.
//!
//! A configuration the server does not start with (a value mariadbd rejects at startup), or starts with but
//! takes otherwise (clamped, rounded), is **reverted**: the drop-in from before written back, the server
//! started with it and its values read back, and the failure stored as `experiment/failed-config-N.json`.
//! The step itself succeeds — the server is as it was — and the experiment goes on without that
//! configuration's arms: their steps and later restarts into it are skipped, and the verdict table reports
//! them as failed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::bench::experiment::Setting;
use crate::plan::{Check, Ctx, Risk, Step, Verdict};
use crate::procedures::kit::restart;
use crate::server::control::StopMode;
use crate::server::optionfile::{self, ConfigChange};

use super::{values, ExperimentParams};

/// The drop-in's text from before the experiment, in the run directory.
const BEFORE: &str = "experiment/dropin-before.json";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Before {
    path: PathBuf,
    /// None: there was no file.
    content: Option<String>,
}

/// A configuration the server did not run with, and why; stored in the run directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailedStart {
    pub config: usize,
    pub settings: Vec<Setting>,
    pub why: String,
    /// The error log's lines of the failed start, when readable.
    #[serde(default)]
    pub log: Vec<String>,
}

fn failed_file(config: usize) -> String {
    format!("experiment/failed-config-{config}.json")
}

/// The failure stored for `config` in this run, if any.
pub fn failed(run_dir: Option<&Path>, config: usize) -> Option<FailedStart> {
    let text = std::fs::read_to_string(run_dir?.join(failed_file(config))).ok()?;
    serde_json::from_str(&text).ok()
}

/// The drop-in's text from before the experiment: as kept by the first restart, else as it is now (nothing
/// has changed it yet).
fn before(ctx: &Ctx, path: &Path) -> anyhow::Result<Before> {
    if let Some(dir) = &ctx.run_dir {
        if let Ok(text) = std::fs::read_to_string(dir.join(BEFORE)) {
            return Ok(serde_json::from_str(&text)?);
        }
    }
    Ok(Before {
        path: path.to_path_buf(),
        content: read_optional(path)?,
    })
}

/// Keep the drop-in's text from before the experiment, once (0600: it may hold anything a DBA put there).
fn keep_before(ctx: &Ctx, path: &Path) -> anyhow::Result<Before> {
    let b = before(ctx, path)?;
    if let Some(dir) = &ctx.run_dir {
        if !dir.join(BEFORE).exists() {
            crate::files::create_private_dir(&dir.join("experiment"))?;
            crate::files::write_private(&dir.join(BEFORE), &serde_json::to_vec_pretty(&b)?)?;
        }
    }
    Ok(b)
}

pub(super) fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
    }
}

/// The drop-in's text for a configuration: the text from before with each value set in `[mysqld]`; for
/// configuration 0 (no values given), the text from before exactly (None: no file).
pub fn wanted(before: Option<&str>, values: Option<&[Setting]>) -> Option<String> {
    match values {
        None => before.map(str::to_string),
        Some(vals) => {
            let pairs: Vec<(&str, Option<&str>)> = vals
                .iter()
                .map(|s| (s.name.as_str(), Some(s.value.as_str())))
                .collect();
            Some(optionfile::set_options(
                before.unwrap_or(""),
                "mysqld",
                &pairs,
            ))
        }
    }
}

/// Write `want` into the drop-in (None: remove it); the diff, empty when nothing changed.
pub(super) fn write_dropin(ctx: &Ctx, path: &Path, want: Option<&str>) -> anyhow::Result<String> {
    let now = read_optional(path)?;
    if now.as_deref() == want {
        return Ok(String::new());
    }
    let change = ConfigChange {
        path: path.to_path_buf(),
        before: now,
        after: want.unwrap_or("").to_string(),
    };
    let diff = change.diff();
    match want {
        Some(_) => change.apply(&crate::procedures::kit::dropin::backup_dir(ctx))?,
        None => std::fs::remove_file(path)?,
    }
    Ok(diff)
}

/// Whether the server answers and runs with `vals` (None: it does not answer).
fn runs_with(ctx: &mut Ctx, vals: &[Setting]) -> anyhow::Result<Option<Vec<String>>> {
    if !restart::server_answers(ctx) {
        return Ok(None);
    }
    let mut off = Vec::new();
    for s in vals {
        let now = values::global_value(ctx, &s.name)?;
        if !values::same_value(&s.value, &now) {
            off.push(format!("{} = {now}", s.name));
        }
    }
    Ok(Some(off))
}

/// The steps that follow restart step `id`, as redo's and readonly's restarts are followed: on a primary, its
/// replicas' reconnection measured and proven ([`crate::procedures::kit::replicas::after_restart`]); on a
/// replica, its own replication running again ([`crate::procedures::kit::replication::resumed_step`]). A
/// note (once) when the replicas cannot be reached.
pub fn after(
    id: &str,
    env: &crate::procedures::PlanEnv,
    facts: &crate::server::facts::ServerFacts,
    notes: &mut Vec<String>,
) -> Vec<Step> {
    let mut said = Vec::new();
    let mut out: Vec<Step> = crate::procedures::kit::replicas::after_restart(
        &format!("replicas-reconnect-{id}"),
        env,
        facts,
        &mut said,
    )
    .into_iter()
    .collect();
    for n in said {
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
    if facts.topology.role() == crate::server::topology::Role::Replica {
        out.push(crate::procedures::kit::replication::resumed_step(
            &format!("replication-{id}"),
            facts.flavor == crate::server::facts::Flavor::MariaDB,
        ));
    }
    out
}

/// What a restart step aims at.
#[derive(Clone)]
pub struct Target {
    /// The step's id: `restart-N`, or `restore-config`.
    pub id: String,
    pub config: usize,
    /// The restart variables' values in this configuration.
    pub values: Vec<Setting>,
}

impl Target {
    /// The drop-in's values: None for configuration 0 (the text from before, exactly).
    fn dropin_values(&self) -> Option<&[Setting]> {
        (self.config != 0).then_some(self.values.as_slice())
    }
    fn describe(&self) -> String {
        self.values
            .iter()
            .map(|s| format!("{}={}", s.name, s.value))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A restart into `t`'s configuration: drop-in, clean shutdown, start, values read back; a configuration the
/// server does not run with is reverted and stored as failed (see the module's paragraph).
pub fn step(p: &ExperimentParams, dropin: &Result<PathBuf, String>, t: Target) -> Step {
    let back = t.config == 0;
    let title = if t.id == "restore-config" {
        "Put the drop-in back as it was and restart with the original values".to_string()
    } else if back {
        format!("Restart with the original values ({})", t.describe())
    } else {
        format!("Restart with {}", t.describe())
    };
    let mut step = Step::new(t.id.clone(), title, Risk::Restart)
        .preview(preview(dropin, &t))
        .preview(format!(
            "/* innops:experiment:{} */ SET GLOBAL innodb_fast_shutdown = 1 (when it is 2); SHUTDOWN; start; read each value back",
            t.id
        ));
    let (pre_t, pre_d) = (t.clone(), dropin.clone());
    step = step.pre(Check::after_prior("restart needed", move |ctx| {
        needed(ctx, &pre_d, &pre_t)
    }));
    step = step.post(restart::accepts_connections());
    let (post_t, post_d, base) = (t.clone(), dropin.clone(), p.restart_baseline());
    step = step.post(Check::new(
        if back {
            "each value reads back its value before the experiment, the drop-in as it was"
        } else {
            "each value reads back the configuration's (or, after a failed start, the original)"
        },
        move |ctx| in_force(ctx, &post_d, &post_t, &base),
    ));
    let (act_t, act_d, act_p) = (t.clone(), dropin.clone(), p.clone());
    let (rec_d, rec_p) = (dropin.clone(), p.clone());
    step.act(move |ctx| {
        let path = act_d.clone().map_err(crate::error::refused)?;
        apply(ctx, &act_p, &path, &act_t, true)
    })
    .recover(move |ctx| {
        let path = rec_d.clone().map_err(crate::error::refused)?;
        start_original(ctx, &rec_p, &path)
    })
}

/// The dry run's view of the drop-in change.
fn preview(dropin: &Result<PathBuf, String>, t: &Target) -> String {
    let Ok(path) = dropin else {
        return "write innops's drop-in (location unknown: pass --config-file or --sandbox)".into();
    };
    let now = read_optional(path).ok().flatten();
    match t.dropin_values() {
        None => format!(
            "put {} back as it was before the experiment",
            path.display()
        ),
        Some(_) => {
            let change = ConfigChange {
                path: path.clone(),
                before: now.clone(),
                after: wanted(now.as_deref(), t.dropin_values()).unwrap_or_default(),
            };
            format!("edit {}:\n{}", path.display(), change.diff().trim_end())
        }
    }
}

/// The pre-check: skipped when the configuration failed earlier in this run, or the server already runs with
/// it from the drop-in's text for it.
fn needed(ctx: &mut Ctx, dropin: &Result<PathBuf, String>, t: &Target) -> anyhow::Result<Verdict> {
    let expected = format!("a restart into {}", t.describe());
    if t.config != 0 {
        if let Some(f) = failed(ctx.run_dir.as_deref(), t.config) {
            return Ok(Verdict::done(format!("left out: {}", f.why), expected));
        }
    }
    let path = dropin.clone().map_err(crate::error::refused)?;
    let b = before(ctx, &path)?;
    let file_ok = read_optional(&path)? == wanted(b.content.as_deref(), t.dropin_values());
    Ok(match runs_with(ctx, &t.values)? {
        None => Verdict::pass("the server is down: this step starts it", expected),
        Some(off) if off.is_empty() && file_ok => Verdict::done(
            format!("runs with {} from the drop-in already", t.describe()),
            expected,
        ),
        Some(off) if off.is_empty() => Verdict::pass(
            format!("runs with {}, the drop-in differs", t.describe()),
            expected,
        ),
        Some(off) => Verdict::pass(format!("runs with {}", off.join(", ")), expected),
    })
}

/// The post-check: the server runs with the configuration's values and the drop-in holds its text — or,
/// after a failed start stored for it, with the original values and the drop-in from before.
fn in_force(
    ctx: &mut Ctx,
    dropin: &Result<PathBuf, String>,
    t: &Target,
    base: &[Setting],
) -> anyhow::Result<Verdict> {
    let path = dropin.clone().map_err(crate::error::refused)?;
    let b = before(ctx, &path)?;
    let failure = (t.config != 0)
        .then(|| failed(ctx.run_dir.as_deref(), t.config))
        .flatten();
    let (vals, want, what) = match &failure {
        Some(_) => (base, b.content.clone(), "the original values (reverted)"),
        None => (
            t.values.as_slice(),
            wanted(b.content.as_deref(), t.dropin_values()),
            "the configuration's values",
        ),
    };
    let file_ok = read_optional(&path)? == want;
    let off = runs_with(ctx, vals)?;
    let shown = vals
        .iter()
        .map(|s| format!("{}={}", s.name, s.value))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(match off {
        Some(off) if off.is_empty() && file_ok => Verdict::pass(
            format!("runs with {shown}, the drop-in as planned"),
            format!("{shown} ({what})"),
        ),
        Some(off) if off.is_empty() => Verdict::fail(
            format!("runs with {shown}, but {} holds other text", path.display()),
            format!("{shown} ({what})"),
            format!("{} changed under the experiment: compare it with {BEFORE} in the run directory", path.display()),
        ),
        Some(off) => Verdict::fail(
            format!("runs with {}", off.join(", ")),
            format!("{shown} ({what})"),
            "the server does not run with the values innops wrote: another option file or a command-line option sets them after innops's drop-in",
        ),
        None => Verdict::fail(
            "the server does not answer",
            format!("{shown} ({what})"),
            "the server did not come back: read its error log",
        ),
    })
}

/// `--keep best`'s restart: the winner's configuration written into the drop-in, the server restarted with it
/// and its values read back; one that does not take is reverted, and that is an error.
pub fn keep(ctx: &mut Ctx, p: &ExperimentParams, path: &Path, t: &Target) -> anyhow::Result<()> {
    let done = apply(ctx, p, path, t, false)?;
    match done.get("failed").and_then(|v| v.as_str()) {
        Some(why) => Err(crate::error::Failure::PostCheck(format!(
            "the winner could not be kept: {why}; innops put {} back as it was and started the server with its original values",
            path.display()
        ))
        .into()),
        None => Ok(()),
    }
}

/// `--keep best` of dynamic variables: the winner's values written into innops's drop-in (set in `[mysqld]`,
/// the rest of the file kept), so the next start keeps what `SET GLOBAL` set now; the diff shown. No restart.
pub fn persist(ctx: &Ctx, path: &Path, values: &[Setting]) -> anyhow::Result<String> {
    let now = read_optional(path)?;
    let want = wanted(now.as_deref(), Some(values));
    let diff = write_dropin(ctx, path, want.as_deref())?;
    if !diff.is_empty() {
        crate::progress::say(&format!(
            "      {}",
            diff.trim_end().replace('\n', "\n      ")
        ));
    }
    Ok(diff)
}

/// The action: drop-in, stop, start, read back; a configuration that does not take is reverted (and stored
/// as failed when `store_failure`).
fn apply(
    ctx: &mut Ctx,
    p: &ExperimentParams,
    path: &Path,
    t: &Target,
    store_failure: bool,
) -> anyhow::Result<serde_json::Value> {
    restart::abort_before_stop(ctx)?;
    let b = keep_before(ctx, path)?;
    let want = wanted(b.content.as_deref(), t.dropin_values());
    let diff = write_dropin(ctx, path, want.as_deref())?;
    if !diff.is_empty() {
        crate::progress::say(&format!(
            "      {}",
            diff.trim_end().replace('\n', "\n      ")
        ));
    }
    let from = stop(ctx)?;
    crate::testhooks::exit_at("restart-stopped:", &t.id);
    let offset = ctx.control.map(|c| c.log_offset()).unwrap_or(0);
    let outcome = match restart::start(ctx) {
        Ok(_) => match runs_with(ctx, &t.values)? {
            Some(off) if off.is_empty() => None,
            Some(off) => Some((
                format!("the server took {} as {}", t.describe(), off.join(", ")),
                Vec::new(),
            )),
            None => Some((
                "the server did not answer after its start".into(),
                Vec::new(),
            )),
        },
        Err(e) => {
            let log = restart::readable_log(ctx)
                .map(|c| c.log_since(offset))
                .unwrap_or_default();
            let first_error = log
                .iter()
                .find(|l| l.contains("[ERROR]"))
                .map(|l| l.split("[ERROR]").nth(1).unwrap_or(l).trim().to_string());
            let why = first_error.unwrap_or_else(|| crate::error::display_of(&e));
            Some((
                format!("the server did not start with {} ({why})", t.describe()),
                log,
            ))
        }
    };
    let Some((why, log)) = outcome else {
        values::set_baseline(ctx, &p.online_baseline())?;
        let d = from.and_then(|f| {
            restart::record_downtime_since(ctx, f, &format!("{}: with {}", t.id, t.describe()))
        });
        return Ok(serde_json::json!({
            "runs_with": t.values, "diff": diff, "downtime_s": d.map(|d| d.seconds)
        }));
    };
    if t.config == 0 {
        return Err(crate::error::Failure::PostCheck(format!(
            "{why}, though these are its values from before the experiment: read its error log"
        ))
        .into());
    }
    crate::progress::say(&format!(
        "      ⚠ {why}: putting the drop-in back and starting the server with its original values"
    ));
    let failure = FailedStart {
        config: t.config,
        settings: t.values.clone(),
        why: why.clone(),
        log,
    };
    start_original(ctx, p, path)?;
    // Stored only once the server is back as it was: a run killed before that finds no failure on resume and
    // tries the configuration again, reverting it again, instead of skipping a step whose server is down.
    if let Some(dir) = ctx.run_dir.as_ref().filter(|_| store_failure) {
        crate::files::write_json_atomic(&dir.join(failed_file(t.config)), &failure)?;
    }
    let d = from.and_then(|f| {
        restart::record_downtime_since(
            ctx,
            f,
            &format!("{}: {why}; back with the original values", t.id),
        )
    });
    if store_failure {
        ctx.outcome.push(format!(
            "left out: {why}; the server was started again with its original values"
        ));
    }
    Ok(serde_json::json!({
        "failed": why, "reverted_to": p.restart_baseline(), "diff": diff, "downtime_s": d.map(|d| d.seconds)
    }))
}

/// Shut the server down if it runs; when innops asked it to (None: it was down already, as in a run resumed
/// after a kill between the stop and the start — then the time kept by that stop, if any).
pub(super) fn stop(ctx: &mut Ctx) -> anyhow::Result<Option<chrono::DateTime<chrono::Utc>>> {
    let file = ctx
        .run_dir
        .as_ref()
        .map(|d| d.join(format!("experiment/stop-{}.json", ctx.step)));
    if !restart::server_answers(ctx) {
        let kept = file
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| serde_json::from_str::<crate::server::control::StopRecord>(&t).ok());
        return Ok(kept.and_then(|r| r.stopped_at));
    }
    let rec = restart::stop(ctx, StopMode::Clean)?;
    if !rec.clean {
        return Err(crate::error::Failure::PostCheck(
            "the server went down without a clean shutdown (its error log has no Shutdown complete line): start it, let crash recovery finish, then resume".into(),
        )
        .into());
    }
    if let Some(f) = file {
        crate::files::write_json_atomic(&f, &rec)?;
    }
    Ok(rec.stopped_at)
}

/// Put the drop-in from before back and start the server with it (stopping it first if it runs); its
/// values proven by reading them back. The sentence says where things stand.
pub fn start_original(ctx: &mut Ctx, p: &ExperimentParams, path: &Path) -> anyhow::Result<String> {
    let b = keep_before(ctx, path)?;
    write_dropin(ctx, path, b.content.as_deref())?;
    if restart::server_answers(ctx) {
        restart::stop(ctx, StopMode::Clean)?;
    }
    restart::start(ctx)?;
    match runs_with(ctx, &p.restart_baseline())? {
        Some(off) if off.is_empty() => {
            values::set_baseline(ctx, &p.online_baseline())?;
            Ok(format!(
                "{} is back as it was before the experiment and the server runs with its original values (read back)",
                path.display()
            ))
        }
        Some(off) => Err(crate::error::Failure::PostCheck(format!(
            "with {} back as it was the server runs with {}: check which option file sets them",
            path.display(),
            off.join(", ")
        ))
        .into()),
        None => Err(crate::error::Failure::PostCheck(format!(
            "the server did not answer after its start with {} back as it was: read its error log",
            path.display()
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(name: &str, value: &str) -> Setting {
        Setting {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn a_configuration_s_drop_in_is_the_text_from_before_with_its_values() {
        let before = "[mysqld]\ninnodb_log_file_size = 1G\n";
        let vals = [s("innodb_log_buffer_size", "32M")];
        assert_eq!(
            wanted(Some(before), Some(&vals)).unwrap(),
            "[mysqld]\ninnodb_log_file_size = 1G\ninnodb_log_buffer_size = 32M\n"
        );
        assert_eq!(
            wanted(None, Some(&vals)).unwrap(),
            "[mysqld]\ninnodb_log_buffer_size = 32M\n"
        );
        // Configuration 0 is the text from before exactly: no file when there was none.
        assert_eq!(wanted(Some(before), None).as_deref(), Some(before));
        assert_eq!(wanted(None, None), None);
    }
}
