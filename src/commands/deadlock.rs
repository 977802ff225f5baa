//! `innops deadlock run|parse|watch|replay`.

use std::io::Read;

use super::env::env_from;
use crate::cli::{
    DeadlockAction, DeadlockArgs, DeadlockParseArgs, DeadlockReplayArgs, DeadlockRunArgs,
    DeadlockWatchArgs, Format, OnOff,
};
use crate::error::{bad_input, post_check};
use crate::procedures::deadlock::{parse, replay, runner, scenario, watch};

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
    let env = env_from(&a.conn, &Default::default(), a.fmt.format, None)?;
    let settings = runner::RunSettings {
        schema: a.schema.clone(),
        keep: a.keep,
        repeat: a.repeat,
        detect: a.detect.map(|d| d == OnOff::On),
        lock_wait_timeout: a.lock_wait_timeout,
        execute: a.execute,
    };
    let report = runner::run(&env.plan_env.target, &sc, &settings)?;
    match env.format {
        Format::Json => {
            println!("{}", serde_json::to_string_pretty(&report)?);
            crate::error::note_json_printed();
        }
        Format::Text => print!("{}", runner::render(&report)),
    }
    if report.executed && !report.as_expected {
        return Err(post_check(format!(
            "scenario {} did not end as its file expects (see the statements marked ✗): the server behaves differently from the scenario's expectations",
            sc.name
        )));
    }
    if report.executed && !report.same_every_time {
        return Err(post_check(format!(
            "scenario {} did not have the same outcome in every run: see the runs above",
            sc.name
        )));
    }
    Ok(())
}

/// A playbook's deadlock step: the flags of `innops deadlock run` as the plan's parameters (a scenario file by
/// its absolute path, so `innops resume` finds it from any directory).
pub fn deadlock_params(
    a: &DeadlockRunArgs,
) -> anyhow::Result<crate::procedures::deadlock::plan::DeadlockParams> {
    if a.keep {
        return Err(bad_input(
            "--keep: a playbook's deadlock step always drops its schema: leave keep out",
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
    };
    p.check()?;
    Ok(p)
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
        Format::Text => print!("{}", parse::render(&all)),
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
