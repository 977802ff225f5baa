//! `innops run PLAYBOOK.toml`: a playbook's procedures as one plan. Each member's settings are the flags of its
//! procedure's own command, turned into its parameters by that command's own code; the plans are joined by
//! [`crate::playbook::combine`] and run once.

use std::path::Path;
use std::time::Duration;

use clap::Parser;

use super::env::{attach_error_log, env_from};
use super::{run_options, run_plan};
use crate::cli::{Cli, Command, ConnArgs, ControlArgs, RunPlaybookArgs};
use crate::error::{bad_input, refused, EXIT_BAD_INPUT};
use crate::plan::{Plan, Procedure};
use crate::playbook::{self, error_at, Member, Playbook};
use crate::procedures;
use crate::server::facts::ServerFacts;

pub fn run_playbook(a: &RunPlaybookArgs) -> anyhow::Result<()> {
    let file = &a.playbook;
    let text = std::fs::read_to_string(file).map_err(|e| {
        bad_input(format!(
            "cannot read the playbook {}: {e}; give the path of a TOML playbook",
            file.display()
        ))
    })?;
    let checked = playbook::parse(file, &text)?;
    let pb = &checked.playbook;
    // `[bench] during`, unless the command line asks for it itself; `--no-bench` on the command line wins over
    // the file's benchmark settings, `during` with them (as it does over `enabled` and `time`).
    let during = match pb.bench.during_threads(file, &text)? {
        _ if a.bench.bench_during => Some(
            a.bench
                .bench_during_threads
                .unwrap_or(crate::bench::during::DEFAULT_THREADS),
        ),
        _ if a.bench.no_bench => None,
        from_file => from_file,
    };
    let (conn_args, ctl_args) = target_of(pb, &a.conn, &a.control);
    let no_bench = a.bench.no_bench || pb.bench.enabled == Some(false);
    let bench_time = (!no_bench).then(|| pb.bench.time.unwrap_or(a.bench.bench_time));
    let mut env = env_from(&conn_args, &ctl_args, a.fmt.format, bench_time)?;
    let mut conn = env.plan_env.target.connect()?;
    let facts = ServerFacts::collect(&mut conn)?;
    facts.supported().map_err(refused)?;
    attach_error_log(&mut env, &facts);
    drop(conn);
    let plans = member_plans(&checked, file, &text, &facts, &env.plan_env)?;
    let plan = playbook::combine(
        crate::plan::Procedure::Playbook,
        &file.display().to_string(),
        pb.description.as_deref(),
        plans,
        &facts,
        &env.plan_env,
    )?;
    let mut plan = plan;
    if let Some(threads) = during {
        crate::plan::runner::set_bench_during(&mut plan, threads, no_bench).map_err(|e| {
            // Said at the line that asked for it.
            let asked = if a.bench.bench_during {
                None
            } else if pb.bench.during_threads.is_some()
                && !(1..=crate::bench::during::MAX_THREADS).contains(&threads)
            {
                pb.bench
                    .during_threads
                    .as_ref()
                    .map(|t| (t.span(), "during-threads"))
            } else {
                pb.bench.during.as_ref().map(|d| (d.span(), "during"))
            };
            match asked {
                Some((span, field)) => error_at(
                    file,
                    &text,
                    span,
                    Some(field),
                    &crate::error::display_of(&e),
                ),
                None => e,
            }
        })?;
    }
    let mut opts = run_options(&a.run, Some(&a.bench));
    opts.no_bench = no_bench;
    run_plan(plan, &env, &opts, None)
}

/// Every member's plan, in order. Each is planned on the facts of now: a member that restarts the server makes
/// them stale for the members after it, whose checks judge the live server when they run.
pub fn member_plans(
    checked: &playbook::Checked,
    file: &Path,
    text: &str,
    facts: &ServerFacts,
    pe: &procedures::PlanEnv,
) -> anyhow::Result<Vec<Plan>> {
    let mut conn = pe.target.connect()?;
    let mut plans = Vec::new();
    for m in &checked.members {
        let plan = member_plan(m, &checked.playbook, file, text, facts, pe, &mut conn)
            .map_err(|e| located(e, file, text, m))?;
        plans.push(plan);
    }
    Ok(plans)
}

/// The playbook's `[target]`, unless the command line names a server (connection) or a way to control it.
fn target_of(pb: &Playbook, conn: &ConnArgs, ctl: &ControlArgs) -> (ConnArgs, ControlArgs) {
    let mut conn = conn.clone();
    let mut ctl = ctl.clone();
    let t = &pb.target;
    let named = conn.socket.is_some()
        || conn.host.is_some()
        || conn.port.is_some()
        || conn.sandbox.is_some();
    if !named {
        conn.sandbox = t.sandbox.clone();
        conn.socket = t.socket.as_ref().map(Into::into);
        conn.host = t.host.clone();
        conn.port = t.port;
        if conn.root.sandbox_root.is_none() {
            conn.root.sandbox_root = t.sandbox_root.as_ref().map(Into::into);
        }
        if ctl.service.is_none() && ctl.start_cmd.is_none() {
            ctl.service = t.service.clone();
            ctl.start_cmd = t.start_cmd.clone();
            ctl.stop_cmd = t.stop_cmd.clone();
        }
        if ctl.config_file.is_none() {
            ctl.config_file = t.config_file.as_ref().map(Into::into);
        }
    }
    if conn.user.is_none() {
        conn.user = t.user.clone();
    }
    if conn.defaults_file.is_none() && !named {
        conn.defaults_file = t.defaults_file.as_ref().map(Into::into);
    }
    (conn, ctl)
}

/// A bad setting found while a member's plan was made, said at the setting it names (or at the member).
fn located(e: anyhow::Error, file: &Path, text: &str, m: &Member) -> anyhow::Error {
    if crate::error::exit_code_of(&e) != EXIT_BAD_INPUT {
        return e;
    }
    let msg = crate::error::display_of(&e);
    // Already located (a clap refusal of one setting).
    if msg.starts_with(&format!("{}:", file.display())) {
        return e;
    }
    // A flag by its name; a positional argument (deadlock's scenario) by its value.
    let setting = m.settings.iter().find(|s| match &s.value {
        playbook::FlagValue::Positional(v) => msg.contains(v.as_str()),
        _ => msg.contains(&format!("--{}", s.key)),
    });
    match setting {
        Some(s) => error_at(file, text, s.span.clone(), Some(s.key), &msg),
        None => error_at(
            file,
            text,
            m.span.clone(),
            Some("procedure"),
            &format!("{}: {msg}", m.procedure),
        ),
    }
}

/// The member's flags as its own command line, parsed by the procedure's own command.
fn member_command(m: &Member, pb: &Playbook, file: &Path, text: &str) -> anyhow::Result<Command> {
    let mut argv: Vec<String> = vec!["innops".into(), m.procedure.name().into()];
    // `innops deadlock run SCENARIO`: the playbook's scenario is the positional argument.
    if m.procedure == Procedure::Deadlock {
        if !m.settings.iter().any(|s| s.key == "scenario") {
            return Err(error_at(
                file,
                text,
                m.span.clone(),
                Some("scenario"),
                "a deadlock step needs `scenario`: a built-in's name (share-then-delete, opposite-order, gap-insert) or the path of a scenario file",
            ));
        }
        argv.push("run".into());
    }
    argv.extend(m.settings.iter().flat_map(|s| s.args()));
    if m.procedure == Procedure::Convert {
        let has = |k: &str| m.settings.iter().any(|s| s.key == k);
        if let (false, Some(v)) = (has("max-load"), &pb.load.max_load) {
            argv.push(format!("--max-load={v}"));
        }
        if let (false, Some(v)) = (has("critical-load"), &pb.load.critical_load) {
            argv.push(format!("--critical-load={v}"));
        }
    }
    Cli::try_parse_from(&argv).map(|c| c.command).map_err(|e| {
        let os: Vec<std::ffi::OsString> = argv.iter().map(Into::into).collect();
        let first = super::flags::unused_flag_sentence(&e, &os)
            .or_else(|| super::flags::invalid_value_sentence(&e))
            .unwrap_or_else(|| {
                let rendered = e.render().to_string();
                rendered
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .trim_start_matches("error: ")
                    .replace('\'', "")
            });
        let setting = m
            .settings
            .iter()
            .find(|s| first.contains(&format!("--{}", s.key)));
        match setting {
            Some(s) => error_at(file, text, s.span.clone(), Some(s.key), &first),
            None => error_at(
                file,
                text,
                m.span.clone(),
                Some("procedure"),
                &format!("{}: {first}", m.procedure),
            ),
        }
    })
}

fn member_plan(
    m: &Member,
    pb: &Playbook,
    file: &Path,
    text: &str,
    facts: &ServerFacts,
    pe: &procedures::PlanEnv,
    conn: &mut mysql::Conn,
) -> anyhow::Result<Plan> {
    match member_command(m, pb, file, text)? {
        Command::Convert(a) => {
            super::convert::check_convert_flags(&a)?;
            let params = super::convert::convert_params(&a, conn)?;
            procedures::convert::plan(&params, facts, pe)
        }
        Command::Redo(a) => {
            let size = match (&a.size, a.advise) {
                (Some(s), _) => s.clone(),
                (None, _) => {
                    let adv = procedures::redo::advise(
                        &pe.target,
                        Duration::from_secs(a.interval),
                        &pe.flags(),
                    )?;
                    adv.recommended_size.to_string()
                }
            };
            let params = procedures::redo::params(&size, a.offline)?;
            procedures::redo::plan(&params, facts, pe)
        }
        Command::Readonly(a) => {
            procedures::readonly::plan(&super::readonly::readonly_params(&a), facts, pe)
        }
        Command::Recover(a) => {
            let params = super::recover::recover_params(&a)?;
            procedures::recover::plan(&params, facts, pe)
        }
        Command::Deadlock(a) => match &a.action {
            crate::cli::DeadlockAction::Run(r) => {
                let params = super::deadlock::deadlock_params(r)?;
                procedures::deadlock::plan::plan(&params, facts, pe)
            }
            _ => Err(bad_input("a playbook's deadlock step runs a scenario")),
        },
        _ => Err(bad_input(format!(
            "'{}' is not a procedure a playbook can run",
            m.procedure
        ))),
    }
}
