//! The RocksDB engine loaded for an experiment (`--install-engine`): `plugin_load_add = ha_rocksdb` written into
//! innops's drop-in, a clean shutdown and a start (the restart kit restart variables use), the engine proven
//! enabled from `information_schema.ENGINES`; at the end the drop-in put back exactly as it was, another
//! restart, and the engine proven gone. Not `INSTALL SONAME 'ha_rocksdb'`: on this machine it crashed a running
//! 10.11.19 server (signal 6 in ha_rocksdb.so's init), where the same plugin loaded at startup works.
//!
//! The drop-in's text before the load and whether the engine was enabled then are kept in the run directory
//! (`experiment/engine-before.json`) by the load's action before it changes anything, so a resumed run (after a
//! kill with the server down, say) writes the same text and the unload puts back that text. An engine enabled
//! before the experiment is left as it is: neither step acts. A load that does not take (the server does not
//! start, or starts without the engine) is reverted — the drop-in from before, a start, read back — and the
//! RocksDB variants are left out (stored as failed table variants), as a variant the server refuses is.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::restarts::{read_optional, stop, write_dropin};
use super::{tables, values, ExperimentParams};
use crate::plan::{Check, Ctx, Risk, Step, Verdict};
use crate::procedures::kit::restart;
use crate::server::control::StopMode;
use crate::sql::Queryable;

/// The engine innops loads, as `--table-option ENGINE=` names it.
pub const ROCKSDB: &str = "RocksDB";
/// Its plugin's library, in `@@plugin_dir`.
pub const LIBRARY: &str = "ha_rocksdb";
const STATE: &str = "experiment/engine-before.json";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Before {
    path: PathBuf,
    /// None: there was no file.
    content: Option<String>,
    /// The engine was enabled before the experiment (by the server's own configuration): left as it is.
    loaded: bool,
}

/// Whether the plan loads RocksDB: `--install-engine` and a table variant with `ENGINE=RocksDB`.
pub fn planned(p: &ExperimentParams) -> bool {
    p.install_engine && rocksdb_variants(p).next().is_some()
}

/// The table variants (their copy numbers) on RocksDB.
fn rocksdb_variants(p: &ExperimentParams) -> impl Iterator<Item = usize> + '_ {
    (1..=p.tables.len())
        .filter(move |&n| tables::variant(p, n).is_ok_and(|v| v.engine.as_deref() == Some(ROCKSDB)))
}

/// The drop-in's text with the plugin loaded: `plugin_load_add = ha_rocksdb` in `[mysqld]`, every other line
/// kept. The option is repeatable, so one already in the file (another plugin) is kept and a group of its own
/// is added after it.
pub fn with_plugin(text: Option<&str>) -> String {
    let text = text.unwrap_or("");
    let has = text.lines().any(|l| {
        let k = l.split('=').next().unwrap_or("").trim().replace('-', "_");
        k.eq_ignore_ascii_case("plugin_load_add") || k.eq_ignore_ascii_case("loose_plugin_load_add")
    });
    if !has {
        return crate::server::optionfile::set_options(
            text,
            "mysqld",
            &[("plugin_load_add", Some(LIBRARY))],
        );
    }
    let mut out = text.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!("[mysqld]\nplugin_load_add = {LIBRARY}\n"));
    out
}

/// RocksDB's `SUPPORT` in `information_schema.ENGINES` (None: no row, the plugin not loaded).
fn support(ctx: &mut Ctx) -> anyhow::Result<Option<String>> {
    let tag = ctx.tag();
    Ok(ctx.conn()?.query_first(format!(
        "SELECT {tag} SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB'"
    ))?)
}

fn enabled(ctx: &mut Ctx) -> anyhow::Result<bool> {
    Ok(support(ctx)?.is_some_and(|s| matches!(s.as_str(), "YES" | "DEFAULT")))
}

fn state(ctx: &Ctx) -> Option<Before> {
    let text = std::fs::read_to_string(ctx.run_dir.as_ref()?.join(STATE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Keep the text and the engine's state from before, once (0600); the server answers when this is first called.
fn keep_state(ctx: &mut Ctx, path: &Path) -> anyhow::Result<Before> {
    if let Some(b) = state(ctx) {
        return Ok(b);
    }
    let b = Before {
        path: path.to_path_buf(),
        content: read_optional(path)?,
        loaded: enabled(ctx)?,
    };
    if let Some(dir) = &ctx.run_dir {
        crate::files::create_private_dir(&dir.join("experiment"))?;
        crate::files::write_private(&dir.join(STATE), &serde_json::to_vec_pretty(&b)?)?;
    }
    Ok(b)
}

/// Whether the library is in the server's `@@plugin_dir` (None: the server is not local, so innops cannot look).
pub fn library_present(ctx: &mut Ctx) -> anyhow::Result<(Option<bool>, String)> {
    let tag = ctx.tag();
    let dir: Option<String> = ctx
        .conn()?
        .query_first(format!("SELECT {tag} @@plugin_dir"))?;
    let so = Path::new(&dir.unwrap_or_default()).join(format!("{LIBRARY}.so"));
    let shown = so.display().to_string();
    Ok((ctx.target.local.then(|| so.exists()), shown))
}

/// The load: drop-in, clean shutdown, start, the engine read back (step `engine-load`).
pub fn load_step(p: &ExperimentParams, dropin: &Result<PathBuf, String>) -> Step {
    let preview = match dropin {
        Ok(path)
            if read_optional(path)
                .ok()
                .flatten()
                .is_some_and(|t| t.contains(LIBRARY)) =>
        {
            format!(
                "{} loads {LIBRARY} already (as written by this step)",
                path.display()
            )
        }
        Ok(path) => {
            let now = read_optional(path).ok().flatten();
            let change = crate::server::optionfile::ConfigChange {
                path: path.clone(),
                before: now.clone(),
                after: with_plugin(now.as_deref()),
            };
            format!("edit {}:\n{}", path.display(), change.diff().trim_end())
        }
        Err(_) => {
            "write innops's drop-in (location unknown: pass --config-file or --sandbox)".into()
        }
    };
    let (act_d, act_p) = (dropin.clone(), p.clone());
    Step::new(
        "engine-load",
        "Load the RocksDB engine for the experiment (drop-in and a restart)",
        Risk::Restart,
    )
    .preview(preview)
    .preview("/* innops:experiment:engine-load */ SHUTDOWN; start; SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB'")
    .pre(Check::new("ha_rocksdb.so in the server's plugin directory", |ctx| {
        let expected = "present (Debian: mariadb-plugin-rocksdb)";
        if !restart::server_answers(ctx) {
            // A run resumed after a kill inside this step's restart: the step starts the server.
            return Ok(Verdict::pass("not checked: the server is down, this step starts it", expected));
        }
        if enabled(ctx)? {
            return Ok(Verdict::pass("RocksDB enabled already", expected));
        }
        Ok(match library_present(ctx)? {
            (Some(true), so) => Verdict::pass(format!("{so} present"), expected),
            (Some(false), so) => Verdict::fail(
                format!("{so} absent"),
                expected,
                format!("RocksDB is not installed here ({so} is absent): install it with `apt-get install mariadb-plugin-rocksdb`, then run the experiment again"),
            ),
            (None, _) => Verdict::pass("not checked: the server is not on this machine (the load's post-check proves it)", expected),
        })
    }))
    .pre(Check::after_prior("RocksDB to load", |ctx| {
        let expected = "RocksDB not loaded";
        if !restart::server_answers(ctx) {
            return Ok(Verdict::pass("the server is down: this step starts it", expected));
        }
        Ok(match (state(ctx), enabled(ctx)?) {
            (None, true) => Verdict::done("enabled by the server's own configuration: left as it is", expected),
            (Some(b), true) if b.loaded => Verdict::done("enabled before the experiment: left as it is", expected),
            (Some(_), true) => Verdict::done("loaded by this run already", expected),
            (_, false) => Verdict::pass("not loaded", expected),
        })
    }))
    .act(move |ctx| {
        let path = act_d.clone().map_err(crate::error::refused)?;
        load(ctx, &act_p, &path)
    })
    .post(restart::accepts_connections())
    .post(Check::new("RocksDB enabled, or its variants left out", |ctx| {
        let expected = "ENGINES: ROCKSDB YES";
        let got = support(ctx)?;
        let shown = format!("ENGINES: ROCKSDB {}", got.as_deref().unwrap_or("(no row)"));
        Ok(match ctx.recorded_result("engine-load").and_then(|r| r["left_out"].as_str().map(str::to_string)) {
            Some(why) if !matches!(got.as_deref(), Some("YES" | "DEFAULT")) => {
                Verdict::pass(format!("{shown}; left out: {why}"), expected)
            }
            _ => Verdict::check(
                matches!(got.as_deref(), Some("YES" | "DEFAULT")),
                shown,
                expected,
                "the server runs without RocksDB although innops's drop-in loads it: read its error log",
            ),
        })
    }))
}

/// Restart with the drop-in's text `want`: stop (if it runs), start, the dynamic variables set to their
/// baseline; the start's error, if any.
fn restart_with(
    ctx: &mut Ctx,
    p: &ExperimentParams,
    path: &Path,
    want: Option<&str>,
) -> anyhow::Result<(Option<String>, String)> {
    let diff = write_dropin(ctx, path, want)?;
    if !diff.is_empty() {
        crate::progress::say(&format!(
            "      {}",
            diff.trim_end().replace('\n', "\n      ")
        ));
    }
    let from = stop(ctx)?;
    crate::testhooks::exit_at("restart-stopped:", &ctx.step.clone());
    let started = restart::start(ctx).map_err(|e| crate::error::display_of(&e));
    if started.is_ok() {
        values::set_baseline(ctx, &p.online_baseline())?;
    }
    if let Some(f) = from {
        let what = format!(
            "{}: {}",
            ctx.step,
            if want.is_some_and(|w| w.contains(LIBRARY)) {
                "RocksDB loaded"
            } else {
                "RocksDB unloaded"
            }
        );
        restart::record_downtime_since(ctx, f, &what);
    }
    Ok((started.err(), diff))
}

/// The load's action; a load that does not take is reverted and the RocksDB variants are left out.
fn load(ctx: &mut Ctx, p: &ExperimentParams, path: &Path) -> anyhow::Result<serde_json::Value> {
    restart::abort_before_stop(ctx)?;
    if !restart::server_answers(ctx) && state(ctx).is_none() {
        return Err(crate::error::refused(
            "the server is down and this run kept no drop-in text from before the load: start it, then run the experiment again",
        ));
    }
    let b = keep_state(ctx, path)?;
    if b.loaded {
        return Ok(serde_json::json!({"loaded_before": true}));
    }
    let (failed, diff) = restart_with(ctx, p, path, Some(&with_plugin(b.content.as_deref())))?;
    let why = match failed {
        Some(e) => Some(format!(
            "the server did not start with {LIBRARY} loaded ({e})"
        )),
        None if !enabled(ctx)? => Some(format!(
            "the server started without the engine although {} loads {LIBRARY}: read its error log",
            path.display()
        )),
        None => None,
    };
    let Some(why) = why else {
        return Ok(serde_json::json!({"loaded": LIBRARY, "diff": diff}));
    };
    crate::progress::say(&format!(
        "      ⚠ {why}: putting the drop-in back and starting the server as it was"
    ));
    if restart::server_answers(ctx) {
        restart::stop(ctx, StopMode::Clean)?;
    }
    write_dropin(ctx, path, b.content.as_deref())?;
    restart::start(ctx)?;
    values::set_baseline(ctx, &p.online_baseline())?;
    for n in rocksdb_variants(p) {
        tables::store_failed(ctx, p, n, &why)?;
    }
    ctx.outcome.push(format!(
        "left out: {why}; the server was started again as it was"
    ));
    Ok(serde_json::json!({"left_out": why, "diff": diff}))
}

/// The unload at the end: the drop-in put back as it was before the load, a restart, the engine proven gone
/// (step `engine-unload`).
pub fn unload_step(p: &ExperimentParams, dropin: &Result<PathBuf, String>) -> Step {
    let shown = dropin
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "innops's drop-in".into());
    let (act_d, act_p, post_d) = (dropin.clone(), p.clone(), dropin.clone());
    Step::new(
        "engine-unload",
        "Unload RocksDB: the drop-in back as it was and a restart",
        Risk::Restart,
    )
    .preview(format!("put {shown} back as it was before engine-load"))
    .preview("/* innops:experiment:engine-unload */ SHUTDOWN; start; SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB'")
    .pre(Check::after_prior("RocksDB loaded by this run", move |ctx| {
        let expected = "loaded by engine-load";
        let Some(b) = state(ctx) else {
            return Ok(Verdict::done("this run loaded nothing", expected));
        };
        if b.loaded {
            return Ok(Verdict::done("enabled before the experiment: left as it is", expected));
        }
        if !restart::server_answers(ctx) {
            return Ok(Verdict::pass("the server is down: this step starts it", expected));
        }
        let file_back = read_optional(&b.path)? == b.content;
        Ok(match (enabled(ctx)?, file_back) {
            (false, true) => Verdict::done("not loaded, the drop-in as it was", expected),
            _ => Verdict::pass("loaded", expected),
        })
    }))
    .act(move |ctx| {
        let path = act_d.clone().map_err(crate::error::refused)?;
        restart::abort_before_stop(ctx)?;
        let Some(b) = state(ctx) else {
            return Ok(serde_json::json!({"unloaded": false}));
        };
        let (failed, diff) = restart_with(ctx, &act_p, &path, b.content.as_deref())?;
        if let Some(e) = failed {
            return Err(crate::error::Failure::PostCheck(format!(
                "the server did not start with {} back as it was before the experiment ({e}): read its error log",
                path.display()
            ))
            .into());
        }
        Ok(serde_json::json!({"unloaded": LIBRARY, "diff": diff}))
    })
    .post(restart::accepts_connections())
    .post(Check::new("the engine and the drop-in as they were before the experiment", move |ctx| {
        let expected = "ROCKSDB as before the experiment, the drop-in's text as before";
        let Some(b) = state(ctx) else {
            return Ok(Verdict::pass("this run loaded nothing", expected));
        };
        let now = support(ctx)?;
        let engine_ok = matches!(now.as_deref(), Some("YES" | "DEFAULT")) == b.loaded;
        let path = post_d.clone().map_err(crate::error::refused)?;
        let file_ok = read_optional(&path)? == b.content;
        Ok(Verdict::check(
            engine_ok && file_ok,
            format!(
                "ENGINES: ROCKSDB {}; {} {}",
                now.as_deref().unwrap_or("(no row)"),
                path.display(),
                if file_ok { "as it was" } else { "holds other text" }
            ),
            expected,
            format!("the server does not run as before the experiment: compare {} with {STATE} in the run directory and read the error log", path.display()),
        ))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_is_added_to_the_drop_in_and_another_plugin_is_kept() {
        assert_eq!(
            with_plugin(None),
            "[mysqld]\nplugin_load_add = ha_rocksdb\n"
        );
        assert_eq!(
            with_plugin(Some("[mysqld]\ninnodb_log_file_size = 1G\n")),
            "[mysqld]\ninnodb_log_file_size = 1G\nplugin_load_add = ha_rocksdb\n"
        );
        // A DBA's own plugin_load_add stays: the option is repeatable, and set_options would replace it.
        assert_eq!(
            with_plugin(Some("[mysqld]\nplugin-load-add = server_audit")),
            "[mysqld]\nplugin-load-add = server_audit\n[mysqld]\nplugin_load_add = ha_rocksdb\n"
        );
    }
}
