//! `innops deadlock run|parse`.

use std::io::Read;

use super::env::env_from;
use crate::cli::{DeadlockAction, DeadlockArgs, DeadlockParseArgs, DeadlockRunArgs, Format, OnOff};
use crate::error::{bad_input, post_check};
use crate::procedures::deadlock::{parse, runner, scenario};

pub fn format(a: &DeadlockArgs) -> Format {
    match &a.action {
        DeadlockAction::Run(r) => r.fmt.format,
        DeadlockAction::Parse(p) => p.fmt.format,
    }
}

pub fn run(a: &DeadlockArgs) -> anyhow::Result<()> {
    match &a.action {
        DeadlockAction::Run(r) => run_scenario(r),
        DeadlockAction::Parse(p) => parse_file(p),
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

fn parse_file(a: &DeadlockParseArgs) -> anyhow::Result<()> {
    let mut text = String::new();
    if a.file.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).map_err(|e| {
            bad_input(format!(
                "cannot read stdin: {}",
                crate::error::describe_io(&e)
            ))
        })?;
    } else {
        let bytes = std::fs::read(&a.file).map_err(|e| {
            bad_input(format!(
                "cannot read {}: {}",
                a.file.display(),
                crate::error::describe_io(&e)
            ))
        })?;
        text = String::from_utf8_lossy(&bytes).into_owned();
    }
    let all = parse::parse_all(&text);
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
