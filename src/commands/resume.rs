//! `innops resume RUN_DIR`: continue an interrupted run on the run's own server (unless the flags say
//! otherwise), with the run's recorded options and, when the server is down, the facts recorded at its start.

use std::time::Duration;

use super::env::{attach_error_log, env_from};
use super::run_plan;
use crate::cli::ResumeArgs;
use crate::error::refused;
use crate::plan::runner::RunOptions;
use crate::procedures;
use crate::server::control::ControlSpec;
use crate::server::facts::ServerFacts;

pub fn run(a: ResumeArgs) -> anyhow::Result<()> {
    let pf = crate::plan::journal::read_plan(&a.run_dir)?;
    let mut args = a.conn.clone();
    // The run's own target and control, unless the flags say otherwise.
    if args.socket.is_none() && args.host.is_none() && args.port.is_none() && args.sandbox.is_none()
    {
        if let Some(ControlSpec::Sandbox { root, name }) = &pf.header.control {
            args.sandbox = Some(name.clone());
            args.sandbox_root = Some(root.clone());
        } else {
            args.socket = pf.header.conn.socket.clone();
            args.host = pf.header.conn.host.clone();
            args.port = pf.header.conn.port;
            args.user = args.user.or(pf.header.conn.user.clone());
            args.defaults_file = args.defaults_file.or(pf.header.conn.defaults_file.clone());
            match &pf.header.control {
                Some(ControlSpec::Systemd { unit }) if args.service.is_none() => {
                    args.service = Some(format!("systemd:{unit}"))
                }
                Some(ControlSpec::Commands { start, stop }) if args.start_cmd.is_none() => {
                    args.start_cmd = Some(start.clone());
                    args.stop_cmd = stop.clone();
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
    let mut env = env_from(&args, bench_time)?;
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
    let mut plan = procedures::rebuild(&pf.header, &facts, &env.plan_env)?;
    // The figures must be comparable: the same workload as before the crash.
    if let Ok(text) = std::fs::read_to_string(a.run_dir.join("bench/before.json")) {
        if let (Ok(before), Some(b)) = (
            serde_json::from_str::<crate::bench::BenchResult>(&text),
            plan.bench.as_mut(),
        ) {
            b.time = Duration::from_secs_f64(before.time_s.round().max(1.0));
        }
    }
    let opts = RunOptions {
        execute: true,
        yes: a.yes || recorded.yes,
        run_dir: None,
        no_bench,
    };
    run_plan(plan, &env, &opts, Some(a.run_dir))
}
