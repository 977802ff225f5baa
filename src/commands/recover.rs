//! `innops recover`: a forced-recovery dump from a copy of a damaged server's data directory.

use super::env::{attach_error_log, env_from};
use super::{run_options, run_plan};
use crate::cli::RecoverArgs;
use crate::procedures::recover::{self, Pages, RecoverParams};
use crate::server::facts::ServerFacts;

pub fn run(a: &RecoverArgs) -> anyhow::Result<()> {
    let mut params = recover_params(a)?;
    let mut env = env_from(&a.conn, &a.control, a.fmt.format, None)?;
    let facts = match &params.datadir {
        // Down already: nothing to ask a server; the copy is made from the files.
        Some(d) => {
            let binary = match &params.mariadbd {
                Some(b) => crate::server::sandbox::server_binary_at(b)?.0,
                None => crate::server::sandbox::find_server_binary()?.0,
            };
            let option_file = a.control.config_file.as_deref();
            params.original_running = false;
            recover::offline_facts(d, &binary, option_file)?
        }
        None => {
            let facts = ServerFacts::collect(&mut env.plan_env.target.connect()?)?;
            attach_error_log(&mut env, &facts);
            facts
        }
    };
    let plan = recover::plan(&params, &facts, &env.plan_env)?;
    // A recovery's plan has no benchmark: the command takes no benchmark flags.
    run_plan(plan, &env, &run_options(&a.run, None), None)
}

/// Paths as absolute: the plan is resumed from another working directory.
fn absolute(p: &std::path::Path) -> anyhow::Result<std::path::PathBuf> {
    Ok(std::path::absolute(p)?)
}

/// The recovery settings of the flags, checked.
pub fn recover_params(a: &RecoverArgs) -> anyhow::Result<RecoverParams> {
    let out = match (&a.out, &a.copy_to, a.in_place) {
        (Some(out), Some(_), _) | (Some(out), None, true) => out,
        (None, _, _) => {
            return Err(crate::error::Failure::BadInput(
                "recover needs --out DIR, where the dump goes (a new or empty directory), and --copy-to DIR, where the data directory is copied for the private server (or --in-place, to restart the server itself in forced recovery)".into(),
            )
            .into())
        }
        (Some(_), None, false) => {
            return Err(crate::error::Failure::BadInput(
                "recover needs --copy-to DIR, a new directory with the data directory's size free where the copy and its private server go, or --in-place to restart the server itself in forced recovery".into(),
            )
            .into())
        }
    };
    let pages = match a.pages.as_deref() {
        // Not given: auto, which does not run without a copy (the report says so per table).
        None => Pages::Auto,
        Some(w) => Pages::named(w).ok_or_else(|| {
            crate::error::Failure::BadInput(format!("--pages {w}: give auto or never"))
        })?,
    };
    if a.in_place && a.pages.is_some() && pages == Pages::Auto {
        return Err(crate::error::Failure::BadInput(
            "--pages reads the rows from a copy's data files, and --in-place makes no copy: give --copy-to DIR instead of --in-place, or leave --pages out".into(),
        )
        .into());
    }
    let params = RecoverParams {
        out: absolute(out)?,
        // Unused with --in-place: the plan names no copy then.
        copy_to: match &a.copy_to {
            Some(c) => absolute(c)?,
            None => absolute(out)?.join(".no-copy"),
        },
        tables: a.tables.clone(),
        max_level: a.max_level,
        drop_copy: a.drop_copy,
        verify_load: a.verify_load,
        threads: a.threads,
        mariadbd: a.mariadbd.clone(),
        datadir: a.datadir.as_deref().map(absolute).transpose()?,
        original_running: a.datadir.is_none(),
        in_place: a.in_place,
        with_logs: a.with_logs,
        pages,
    };
    params.check(a.allow_level)?;
    Ok(params)
}
