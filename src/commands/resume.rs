//! `innops resume RUN_DIR`: continue an interrupted run on the run's own server (unless the flags say
//! otherwise), with the run's recorded options and, when the server is down, the facts recorded at its start.

use std::time::Duration;

use super::env::{attach_error_log, env_from};
use super::run_plan;
use crate::cli::{ProtocolArg, ResumeArgs, SslModeArg};
use crate::error::refused;
use crate::plan::runner::RunOptions;
use crate::server::connect::{Protocol, SslMode};
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
    // The run's own target and control, unless the flags say otherwise.
    if args.socket.is_none() && args.host.is_none() && args.port.is_none() && args.sandbox.is_none()
    {
        if let Some(ControlSpec::Sandbox { root, name }) = &pf.header.control {
            args.sandbox = Some(name.clone());
            args.root.sandbox_root = Some(root.clone());
        } else {
            let then = &pf.header.conn;
            args.socket = pf.header.conn.socket.clone();
            args.host = pf.header.conn.host.clone();
            args.port = pf.header.conn.port;
            args.user = args.user.or(pf.header.conn.user.clone());
            args.defaults_file = args.defaults_file.or(pf.header.conn.defaults_file.clone());
            args.defaults_extra_file = args
                .defaults_extra_file
                .or(then.defaults_extra_file.clone());
            args.no_defaults = args.no_defaults || then.no_defaults;
            args.protocol = args.protocol.or(then.protocol.map(protocol_arg));
            args.ssl_mode = args.ssl_mode.or(then.ssl_mode.map(ssl_mode_arg));
            args.ssl_ca = args.ssl_ca.or(then.ssl_ca.clone());
            args.ssl_cert = args.ssl_cert.or(then.ssl_cert.clone());
            args.ssl_key = args.ssl_key.or(then.ssl_key.clone());
            args.ssl = args.ssl || then.ssl == Some(true);
            args.skip_ssl = (args.skip_ssl || then.ssl == Some(false)) && !args.ssl;
            args.ssl_capath = args.ssl_capath.or(then.ssl_capath.clone());
            args.ssl_cipher = args.ssl_cipher.or(then.ssl_cipher.clone());
            args.ssl_crl = args.ssl_crl.or(then.ssl_crl.clone());
            args.ssl_crlpath = args.ssl_crlpath.or(then.ssl_crlpath.clone());
            args.ssl_verify_server_cert =
                args.ssl_verify_server_cert || then.ssl_verify_server_cert == Some(true);
            args.tls_version = args.tls_version.or(then.tls_version.clone());
            args.defaults_group_suffix = args
                .defaults_group_suffix
                .or(then.defaults_group_suffix.clone());
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
    let mut env = env_from(&args, &ctl, a.fmt.format, bench_time)?;
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

fn protocol_arg(p: Protocol) -> ProtocolArg {
    match p {
        Protocol::Tcp => ProtocolArg::Tcp,
        Protocol::Socket => ProtocolArg::Socket,
    }
}

fn ssl_mode_arg(m: SslMode) -> SslModeArg {
    match m {
        SslMode::Disabled => SslModeArg::Disabled,
        SslMode::Preferred => SslModeArg::Preferred,
        SslMode::Required => SslModeArg::Required,
        SslMode::VerifyCa => SslModeArg::VerifyCa,
        SslMode::VerifyIdentity => SslModeArg::VerifyIdentity,
    }
}
