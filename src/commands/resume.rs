//! `innops resume RUN_DIR`: continue an interrupted run on the run's own server (unless the flags say
//! otherwise), with the run's recorded options and, when the server is down, the facts recorded at its start.

use std::time::Duration;

use super::env::{attach_error_log, env_over};
use super::run_plan;
use crate::cli::ResumeArgs;
use crate::error::refused;
use crate::plan::runner::RunOptions;

use crate::server::control::ControlSpec;
use crate::server::facts::ServerFacts;

pub fn run(a: ResumeArgs) -> anyhow::Result<()> {
    // First of all: what plan.json says (its server, its options, its parameters) is acted on only if it is the
    // plan innops wrote and showed; a tampered one is refused for that, not for what the tampering broke next.
    // (plan.json is parsed only after the check: a tampered one may not even be JSON.)
    if !a.run_dir.join("plan.json").is_file() || !a.run_dir.join("journal.jsonl").is_file() {
        return Err(crate::plan::journal::not_a_run_dir(&a.run_dir));
    }
    let events = crate::plan::journal::read_journal(&a.run_dir)?;
    crate::plan::journal::check_plan_unchanged(&a.run_dir, &events)?;
    let pf = crate::plan::journal::read_plan(&a.run_dir)?;
    let mut args = a.conn.clone();
    let mut ctl = a.control.clone();
    let mut recorded_conn = None;
    // The run's own target and control, unless the flags say otherwise.
    if args.socket.is_none() && args.host.is_none() && args.port.is_none() && args.sandbox.is_none()
    {
        if let Some(ControlSpec::Sandbox { root, name }) = &pf.header.control {
            args.sandbox = Some(name.clone());
            args.root.sandbox_root = Some(root.clone());
        } else {
            recorded_conn = Some(&pf.header.conn);
            match &pf.header.control {
                Some(ControlSpec::Systemd { unit }) if ctl.service.is_none() => {
                    ctl.service = Some(format!("systemd:{unit}"))
                }
                Some(ControlSpec::Commands { start, stop }) if ctl.start_cmd.is_none() => {
                    ctl.start_cmd = Some(start.clone());
                    ctl.stop_cmd = stop.clone();
                }
                _ => {}
            }
        }
    }
    // The run's options are part of its plan: a resumed run benchmarks (or not) as the run did.
    let recorded = &pf.options;
    let no_bench = a.no_bench || recorded.no_bench;
    let bench_time = if no_bench {
        None
    } else {
        Some(recorded.bench_time_s.unwrap_or(10))
    };
    let mut env = env_over(&args, &ctl, recorded_conn, a.fmt.format, bench_time)?;
    let facts = match env
        .plan_env
        .target
        .connect()
        .and_then(|mut c| ServerFacts::collect(&mut c))
    {
        Ok(f) => f,
        // Stopped between a shutdown and a start: the server is down, and the plan can say so.
        Err(e) => match pf.header.facts.clone() {
            Some(f) => {
                eprintln!(
                    "innops: {} — resuming with the facts recorded when the run started",
                    crate::error::display_of(&e)
                );
                f
            }
            None => return Err(e),
        },
    };
    if let Some(then) = &pf.header.facts {
        if then.identity() != facts.identity() {
            return Err(refused(format!(
                "{} holds a run on the server with {}, but innops reached the server with {} at {}: pass the connection flags of the run's own server",
                a.run_dir.display(),
                then.identity(),
                facts.identity(),
                env.plan_env.target.label
            )));
        }
    }
    attach_error_log(&mut env, &facts);
    let mut plan = crate::registry::rebuild(&pf.header, &facts, &env.plan_env)?;
    // The figures must be comparable: the same workload as before the crash.
    if let Ok(text) = std::fs::read_to_string(a.run_dir.join("bench/before.json")) {
        if let (Ok(before), Some(b)) = (
            serde_json::from_str::<crate::bench::BenchResult>(&text),
            plan.bench.as_mut(),
        ) {
            b.time = Duration::from_secs_f64(before.time_s.round().max(1.0));
        }
    }
    // A run that had its workload through the whole plan has it again.
    if let Some(threads) = recorded.bench_during.filter(|_| !no_bench) {
        crate::plan::runner::set_bench_during(&mut plan, threads, false)?;
    }
    let opts = RunOptions {
        execute: true,
        yes: a.yes || recorded.yes,
        run_dir: None,
        no_bench,
    };
    run_plan(plan, &env, &opts, Some(a.run_dir))
}
