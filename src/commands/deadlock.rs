//! `innops deadlock run|parse|watch|replay`.

use std::io::Read;

use super::env::env_from;
use crate::cli::{
    DeadlockAction, DeadlockArgs, DeadlockParseArgs, DeadlockReplayArgs, DeadlockRunArgs,
    DeadlockWatchArgs, Format, OnOff,
};
use crate::error::{bad_input, post_check};
use crate::plan::runner::RunOptions;
use crate::procedures::deadlock::{parse, replay, runner, scenario, watch};
use crate::server::facts::ServerFacts;

pub fn format(a: &DeadlockArgs) -> Format {
    match &a.action {
        DeadlockAction::Run(r) => r.fmt.format,
        DeadlockAction::Parse(p) => p.fmt.format,
        DeadlockAction::Watch(w) => w.fmt.format,
        DeadlockAction::Replay(_) => Format::Text,
    }
}

pub fn run(a: &DeadlockArgs) -> anyhow::Result<()> {
    match &a.action {
        DeadlockAction::Run(r) => run_scenario(r),
        DeadlockAction::Parse(p) => parse_file(p),
        DeadlockAction::Watch(w) => watch_server(w),
        DeadlockAction::Replay(r) => replay_file(r),
    }
}

fn run_scenario(a: &DeadlockRunArgs) -> anyhow::Result<()> {
    let sc = scenario::load(&a.scenario).map_err(bad_input)?;
    if a.lock_wait_timeout == 0 || a.lock_wait_timeout > 3600 {
        return Err(bad_input(
            "--lock-wait-timeout must be 1 to 3600 seconds: give a short one such as 2",
        ));
    }
    if let Some(problem) = runner::schema_problem(&a.schema) {
        return Err(bad_input(problem));
    }
    if a.detect.is_some() {
        return run_as_plan(a);
    }
    let env = env_from(&a.conn, &Default::default(), a.fmt.format, None)?;
    // Where the scenario's writes go (on a replica only with --binlog local, kept out of its binary log).
    let topo = {
        let mut c = env.plan_env.target.connect()?;
        let mariadb = ServerFacts::collect(&mut c)?.flavor == crate::server::facts::Flavor::MariaDB;
        crate::server::topology::Topology::read(&mut c, mariadb)?
    };
    let binlog = crate::procedures::deadlock::plan::binlog_decision(binlog_mode(a)?, &topo)?;
    let target = match a.execute {
        true => env.plan_env.target.with_session(&binlog.session),
        false => env.plan_env.target.clone(),
    };
    let settings = runner::RunSettings {
        schema: a.schema.clone(),
        keep: a.keep,
        repeat: a.repeat,
        detect: None,
        lock_wait_timeout: a.lock_wait_timeout,
        execute: a.execute,
        take_lock: true,
    };
    let report = runner::run(&target, &sc, &settings)?;
    match env.format {
        Format::Json => {
            println!("{}", serde_json::to_string_pretty(&report)?);
            crate::error::note_json_printed();
        }
        Format::Text => print!("{}", runner::render(&report)),
    }
    if report.executed && !report.as_expected {
        let run_problem = report.repetitions.iter().find_map(|r| {
            r.report_problem
                .as_ref()
                .or(r.count_problem.as_ref())
                .map(|p| format!("run {}: {p}", r.n))
        });
        return Err(post_check(match run_problem {
            Some(p) => format!("scenario {} did not end as its file expects ({p})", sc.name),
            None => format!(
                "scenario {} did not end as its file expects (see the statements marked ✗): the server behaves differently from the scenario's expectations",
                sc.name
            ),
        }));
    }
    if report.executed && !report.same_every_time {
        return Err(post_check(format!(
            "scenario {} did not have the same outcome in every run: see the runs above",
            sc.name
        )));
    }
    Ok(())
}

/// A run that sets innodb_deadlock_detect changes a global: it runs as a plan like every procedure that changes
/// the server, with a run directory whose `innops resume` puts the setting back after a kill (the plan's step
/// records the server's own value in plan.json before it changes it).
fn run_as_plan(a: &DeadlockRunArgs) -> anyhow::Result<()> {
    let params = deadlock_params(a)?;
    let env = env_from(&a.conn, &Default::default(), a.fmt.format, None)?;
    let facts = ServerFacts::collect(&mut env.plan_env.target.connect()?)?;
    let plan = crate::procedures::deadlock::plan::plan(&params, &facts, &env.plan_env)?;
    let opts = RunOptions {
        execute: a.execute,
        yes: false,
        run_dir: a.run_dir.clone(),
        no_bench: true,
    };
    super::run_plan(plan, &env, &opts, None)
}

/// A playbook's deadlock step: the flags of `innops deadlock run` as the plan's parameters (a scenario file by
/// its absolute path, so `innops resume` finds it from any directory).
pub fn deadlock_params(
    a: &DeadlockRunArgs,
) -> anyhow::Result<crate::procedures::deadlock::plan::DeadlockParams> {
    if a.keep {
        return Err(bad_input(
            "--keep: a run with --detect, and a playbook's deadlock step, always drop their schema: leave keep out",
        ));
    }
    let built_in = scenario::BUILT_IN.iter().any(|(n, _)| *n == a.scenario);
    // A file by its absolute path (one that does not exist keeps its name, for the error that names it).
    let scenario = if built_in || !std::path::Path::new(&a.scenario).exists() {
        a.scenario.clone()
    } else {
        std::path::absolute(&a.scenario)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| a.scenario.clone())
    };
    let p = crate::procedures::deadlock::plan::DeadlockParams {
        scenario,
        repeat: a.repeat,
        detect: a.detect.map(|d| d == OnOff::On),
        lock_wait_timeout: a.lock_wait_timeout,
        schema: a.schema.clone(),
        detect_at_plan: None,
        binlog: binlog_mode(a)?,
    };
    p.check()?;
    Ok(p)
}

fn binlog_mode(
    a: &DeadlockRunArgs,
) -> anyhow::Result<Option<crate::procedures::kit::binlog::Mode>> {
    a.binlog
        .as_deref()
        .map(crate::procedures::kit::binlog::Mode::parse)
        .transpose()
        .map_err(bad_input)
}

fn read_input(file: &std::path::Path) -> anyhow::Result<String> {
    let mut text = String::new();
    if file.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).map_err(|e| {
            bad_input(format!(
                "cannot read stdin: {}",
                crate::error::describe_io(&e)
            ))
        })?;
    } else {
        let bytes = std::fs::read(file).map_err(|e| {
            bad_input(format!(
                "cannot read {}: {}",
                file.display(),
                crate::error::describe_io(&e)
            ))
        })?;
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    Ok(text)
}

fn parse_file(a: &DeadlockParseArgs) -> anyhow::Result<()> {
    let text = read_input(&a.file)?;
    let all = parse::parse_all(&text);
    if all.is_empty() {
        return Err(no_report(&a.file));
    }
    match a.fmt.format {
        Format::Json => {
            let docs: Vec<serde_json::Value> = all
                .iter()
                .map(|d| {
                    let mut v = serde_json::to_value(d).unwrap_or_default();
                    v["rows"] = serde_json::to_value(d.logger_rows()).unwrap_or_default();
                    v
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&docs)?);
            crate::error::note_json_printed();
        }
        Format::Text => print!(
            "{}",
            crate::procedures::deadlock::show::render_deadlocks(&all)
        ),
    }
    Ok(())
}

/// The input holds no deadlock report: bad input for parse and replay.
fn no_report(file: &std::path::Path) -> anyhow::Error {
    let name = if file.as_os_str() == "-" {
        "stdin".to_string()
    } else {
        file.display().to_string()
    };
    bad_input(format!(
        "{name} holds no deadlock report (no `*** (1) TRANSACTION:`): give a saved SHOW ENGINE INNODB STATUS or an error log written with innodb_print_all_deadlocks"
    ))
}

fn watch_server(a: &DeadlockWatchArgs) -> anyhow::Result<()> {
    if !(0.1..=3600.0).contains(&a.interval) {
        return Err(bad_input(
            "--interval must be 0.1 to 3600 seconds: give one such as 1",
        ));
    }
    if a.duration.is_none() && a.count.is_none() {
        return Err(bad_input(
            "watch needs a bound to end: give --duration SECONDS, --count N, or both",
        ));
    }
    if a.count == Some(0) || a.duration == Some(0) {
        return Err(bad_input(
            "--count 0 or --duration 0 watches nothing: give 1 or more",
        ));
    }
    let env = env_from(&a.conn, &Default::default(), a.fmt.format, None)?;
    let settings = watch::WatchSettings {
        interval: std::time::Duration::from_secs_f64(a.interval),
        duration: a.duration.map(std::time::Duration::from_secs),
        count: a.count,
        out: a.out.clone(),
    };
    let summary = watch::watch(&env.plan_env.target, &settings, |line| {
        eprintln!("innops: {line}")
    })?;
    match env.format {
        Format::Json => {
            println!("{}", serde_json::to_string_pretty(&summary)?);
            crate::error::note_json_printed();
        }
        Format::Text => println!(
            "{} poll(s), {} new deadlock(s) written to {}{}; ended by {}",
            summary.polls,
            summary.written,
            summary.out.display(),
            if summary.missed > 0 {
                format!(
                    ", {} missed between polls{}",
                    summary.missed,
                    if summary.print_all_deadlocks {
                        " (the error log has them: innodb_print_all_deadlocks is ON)"
                    } else {
                        " (set innodb_print_all_deadlocks=ON to have the error log keep every one)"
                    }
                )
            } else {
                String::new()
            },
            summary.ended_by
        ),
    }
    Ok(())
}

fn replay_file(a: &DeadlockReplayArgs) -> anyhow::Result<()> {
    let text = read_input(&a.from)?;
    let all = parse::parse_all(&text);
    if all.is_empty() {
        return Err(no_report(&a.from));
    }
    let d = match a.index {
        None => all.last().expect("not empty"),
        Some(n) if n >= 1 && n <= all.len() => &all[n - 1],
        Some(n) => {
            return Err(bad_input(format!(
                "--index {n}: {} holds {} deadlock report(s): give 1 to {}",
                a.from.display(),
                all.len(),
                all.len()
            )))
        }
    };
    let toml = replay::scenario_toml(
        d,
        &a.from.display().to_string(),
        text.contains("*** CONFLICTING WITH:"),
    );
    if let Some(path) = a.out.as_ref().filter(|p| p.exists() && !a.force) {
        return Err(bad_input(format!(
            "{} already exists: give another --out, or add --force to overwrite it",
            path.display()
        )));
    }
    match &a.out {
        Some(path) => std::fs::write(path, &toml).map_err(|e| {
            bad_input(format!(
                "cannot write {}: {}",
                path.display(),
                crate::error::describe_io(&e)
            ))
        })?,
        None => print!("{toml}"),
    }
    Ok(())
}
