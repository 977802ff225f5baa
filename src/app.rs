//! From parsed flags to validated settings, and each command's run. Nothing below this module sees clap types.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{Cli, Command, ConnArgs, Format, SandboxAction};
use crate::error::{bad_input, refused};
use crate::plan::report::Report;
use crate::plan::runner::{self, RunOptions};
use crate::procedures::{self, PlanEnv};
use crate::sandbox::{self, Sandbox, SandboxOptions};
use crate::server::connect::ConnSpec;
use crate::server::control::{self, Control, ControlSpec};
use crate::server::facts::ServerFacts;
use crate::server::optionfile;

/// Where the server is and how innops may handle it.
pub struct Env {
    pub plan_env: PlanEnv,
    pub control: Option<Control>,
    pub format: Format,
}

fn sandbox_root(args: &ConnArgs) -> PathBuf {
    args.sandbox_root
        .clone()
        .unwrap_or_else(sandbox::default_root)
}

/// `--sandbox` says where the server is and how to control it: any other flag saying so conflicts with it.
fn check_sandbox_flags(args: &ConnArgs) -> anyhow::Result<()> {
    let Some(name) = &args.sandbox else {
        return Ok(());
    };
    let given: Vec<&str> = [
        ("--socket", args.socket.is_some()),
        ("--host", args.host.is_some()),
        ("--port", args.port.is_some()),
        ("--defaults-file", args.defaults_file.is_some()),
        ("--service", args.service.is_some()),
        ("--start-cmd", args.start_cmd.is_some()),
        ("--stop-cmd", args.stop_cmd.is_some()),
        ("--config-file", args.config_file.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, set)| set.then_some(flag))
    .collect();
    if given.is_empty() {
        return Ok(());
    }
    Err(bad_input(format!(
        "--sandbox {name} already says where the server is and how to control it: drop {}, or drop --sandbox",
        given.join(" and ")
    )))
}

/// The copy-chunk duration innops accepts, in milliseconds.
pub const CHUNK_TIME_MS: std::ops::RangeInclusive<u64> = 10..=60_000;

/// Convert's flags that contradict each other or are out of range are bad input, never clamped.
pub fn check_convert_flags(a: &crate::cli::ConvertArgs) -> anyhow::Result<()> {
    if a.all_myisam && !a.tables.is_empty() {
        return Err(bad_input(
            "--tables and --all-myisam both choose the tables to convert: give one",
        ));
    }
    if !CHUNK_TIME_MS.contains(&a.chunk_time) {
        return Err(bad_input(format!(
            "--chunk-time {} is out of range: give milliseconds from {} to {}",
            a.chunk_time,
            CHUNK_TIME_MS.start(),
            CHUNK_TIME_MS.end()
        )));
    }
    let (max, critical) = load_thresholds(a)?;
    if max.variable.eq_ignore_ascii_case(&critical.variable) && max.value > critical.value {
        return Err(bad_input(format!(
            "--max-load {}={} is above --critical-load {}={}: the copy would abort before it ever paused; lower --max-load or raise --critical-load",
            max.variable, max.value, critical.variable, critical.value
        )));
    }
    Ok(())
}

/// `--max-load` and `--critical-load`. Without `--max-load` the copy pauses above `Threads_running=25`, or at
/// the critical value when `--critical-load` sets a lower one on the same variable.
fn load_thresholds(
    a: &crate::cli::ConvertArgs,
) -> anyhow::Result<(crate::plan::guard::Threshold, crate::plan::guard::Threshold)> {
    use crate::plan::guard::Threshold;
    let critical = Threshold::parse(&a.critical_load)?;
    let max = match &a.max_load {
        Some(m) => Threshold::parse(m)?,
        None => {
            let mut max = Threshold::parse("Threads_running=25")?;
            if max.variable.eq_ignore_ascii_case(&critical.variable) {
                max.value = max.value.min(critical.value);
            }
            max
        }
    };
    Ok((max, critical))
}

/// Resolve connection, control and option file from the flags.
pub fn env_from(args: &ConnArgs, bench_time: Option<u64>) -> anyhow::Result<Env> {
    check_sandbox_flags(args)?;
    let (conn, control_spec, option_file) = if let Some(name) = &args.sandbox {
        let root = sandbox_root(args);
        let sb = Sandbox::open(&root, name)?;
        (
            sb.conn_spec(),
            Some(ControlSpec::Sandbox {
                root,
                name: name.clone(),
            }),
            Some(sb.option_file),
        )
    } else {
        let conn = ConnSpec {
            socket: args.socket.clone(),
            host: args.host.clone(),
            port: args.port,
            user: args.user.clone(),
            password: args.password.clone(),
            defaults_file: args.defaults_file.clone(),
        };
        let control = match (&args.service, &args.start_cmd) {
            (Some(_), Some(_)) => {
                return Err(bad_input(
                    "--service and --start-cmd both say how to start the server: give one",
                ))
            }
            (Some(s), None) => Some(ControlSpec::parse_service(s)?),
            (None, Some(start)) => Some(ControlSpec::Commands {
                start: start.clone(),
                stop: args.stop_cmd.clone(),
            }),
            (None, None) if args.stop_cmd.is_some() => return Err(bad_input(
                "--stop-cmd needs --start-cmd too: innops must be able to start the server again",
            )),
            (None, None) => None,
        };
        let option_file = args.config_file.clone().or_else(|| {
            matches!(control, Some(ControlSpec::Systemd { .. }))
                .then(|| PathBuf::from("/etc/mysql/my.cnf"))
                .filter(|p| p.exists())
        });
        if let Some(f) = &args.config_file {
            if !f.is_file() {
                return Err(bad_input(format!(
                    "--config-file {} does not exist: give the option file the server reads",
                    f.display()
                )));
            }
        }
        (conn, control, option_file)
    };
    let target = if args.sandbox.is_some() {
        conn.resolve_plain()
    } else {
        conn.resolve()?
    };
    let dropin = match &option_file {
        Some(f) => optionfile::choose_dropin(f).map_err(|e| crate::error::display_of(&e)),
        None => Err("innops does not know the server's option file: pass --config-file (for example /etc/mysql/my.cnf) so the new setting survives a restart".to_string()),
    };
    let control = control_spec.clone().map(|spec| Control::new(spec, None));
    Ok(Env {
        plan_env: PlanEnv {
            conn,
            target,
            control: control_spec,
            option_file,
            dropin,
            bench_time,
            error_log: None,
        },
        control,
        format: args.format,
    })
}

/// Learn the error log of a local server once connected, for control backends that do not know it.
fn attach_error_log(env: &mut Env, facts: &ServerFacts) {
    // A loopback port may lead into a container or a VM: the datadir is on this machine only when the server
    // says it runs on this host.
    if env.plan_env.conn.socket.is_none() && env.plan_env.target.local {
        let ours = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        if facts.var("hostname").is_some_and(|h| h != ours.trim()) {
            env.plan_env.target.local = false;
        }
    }
    if let Some(c) = env.control.as_mut() {
        if c.error_log.is_none() && env.plan_env.target.local {
            c.error_log = control::error_log_of(
                facts.var("log_error").unwrap_or(""),
                facts.var("datadir").unwrap_or(""),
            );
        }
    }
    let log = env
        .control
        .as_ref()
        .and_then(|c| c.error_log.clone())
        .or_else(|| {
            env.plan_env
                .target
                .local
                .then(|| {
                    control::error_log_of(
                        facts.var("log_error").unwrap_or(""),
                        facts.var("datadir").unwrap_or(""),
                    )
                })
                .flatten()
        });
    env.plan_env.error_log = log.map(|p| {
        let end = crate::server::errorlog::end_offset(&p);
        (p, end)
    });
}

fn print_report(report: &Report, format: Format) {
    match format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(report).unwrap_or_default()
        ),
        Format::Text => print!("{}", report.render_text()),
    }
}

fn abort_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = flag.clone();
    // A second handler cannot be installed (tests call this more than once in one process); the first stays.
    let _ = ctrlc::set_handler(move || {
        if f.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::process::exit(crate::error::EXIT_INTERRUPTED);
        }
        eprintln!("\ninnops: stopping at the next safe point (Ctrl-C again to quit at once)");
    });
    flag
}

/// Run the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Inspect(a) => {
            let env = env_from(&a.conn, None)?;
            let i =
                procedures::inspect::inspect(&env.plan_env.target, Duration::from_secs(a.sample))?;
            match env.format {
                Format::Json => println!("{}", serde_json::to_string_pretty(&i)?),
                Format::Text => print!("{}", procedures::inspect::render(&i)),
            }
            Ok(())
        }
        Command::Redo(a) => {
            let bench_time = (!a.run.no_bench).then_some(a.run.bench_time);
            let mut env = env_from(&a.conn, bench_time)?;
            if a.advise {
                let adv = procedures::redo::advise(
                    &env.plan_env.target,
                    Duration::from_secs(a.interval),
                )?;
                match env.format {
                    Format::Json => println!("{}", serde_json::to_string_pretty(&adv)?),
                    Format::Text => print!("{}", procedures::redo::render_advice(&adv)),
                }
                return Ok(());
            }
            let params =
                procedures::redo::params(a.size.as_deref().unwrap_or_default(), a.offline)?;
            let facts = ServerFacts::collect(&mut env.plan_env.target.connect()?)?;
            attach_error_log(&mut env, &facts);
            let plan = procedures::redo::plan(&params, &facts, &env.plan_env)?;
            let opts = RunOptions {
                execute: a.run.execute,
                yes: a.run.yes,
                run_dir: a.run.run_dir.clone(),
                no_bench: a.run.no_bench,
            };
            run_plan(plan, &env, &opts, None)
        }
        Command::Convert(a) => {
            check_convert_flags(&a)?;
            let bench_time = (!a.run.no_bench).then_some(a.run.bench_time);
            let mut env = env_from(&a.conn, bench_time)?;
            let mut conn = env.plan_env.target.connect()?;
            let facts = ServerFacts::collect(&mut conn)?;
            facts.supported().map_err(refused)?;
            attach_error_log(&mut env, &facts);
            let opts = RunOptions {
                execute: a.run.execute,
                yes: a.run.yes,
                run_dir: a.run.run_dir.clone(),
                no_bench: a.run.no_bench,
            };
            let plan = if let Some(t) = &a.drop_kept {
                let (schema, table) = procedures::convert::parse_table_arg(t).ok_or_else(|| {
                    bad_input(format!(
                        "--drop-kept '{t}' does not name a table: write db.table (the converted table, not the kept one)"
                    ))
                })?;
                procedures::convert::drop_kept::plan(&schema, &table, &facts, &env.plan_env)?
            } else if let Some(t) = &a.rollback {
                let (schema, table) = procedures::convert::parse_table_arg(t).ok_or_else(|| {
                    bad_input(format!(
                        "--rollback '{t}' does not name a table: write db.table (with backquotes around a name that holds a dot)"
                    ))
                })?;
                procedures::convert::rollback::plan(&schema, &table, &facts, &env.plan_env)?
            } else {
                let (tables, skipped) =
                    procedures::convert::resolve(&mut conn, &a.tables, a.all_myisam)?;
                let (max_load, critical_load) = load_thresholds(&a)?;
                let params = procedures::convert::ConvertParams {
                    tables,
                    strategy: procedures::convert::Strategy::parse(&a.strategy)?,
                    drop_old: a.drop_old_table,
                    chunk_ms: a.chunk_time,
                    max_load,
                    critical_load,
                    skipped,
                    restart: a.restart,
                };
                procedures::convert::plan(&params, &facts, &env.plan_env)?
            };
            // An idle session of innops's own would show among the sessions a lock wait names.
            drop(conn);
            run_plan(plan, &env, &opts, None)
        }
        Command::Resume(a) => {
            let pf = crate::plan::journal::read_plan(&a.run_dir)?;
            let mut args = a.conn.clone();
            // The run's own target and control, unless the flags say otherwise.
            if args.socket.is_none()
                && args.host.is_none()
                && args.port.is_none()
                && args.sandbox.is_none()
            {
                if let Some(ControlSpec::Sandbox { root, name }) = &pf.header.control {
                    args.sandbox = Some(name.clone());
                    args.sandbox_root = Some(root.clone());
                } else {
                    args.socket = pf.header.conn.socket.clone();
                    args.host = pf.header.conn.host.clone();
                    args.port = pf.header.conn.port;
                    args.user = args.user.or(pf.header.conn.user.clone());
                    args.defaults_file =
                        args.defaults_file.or(pf.header.conn.defaults_file.clone());
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
                Err(e) => {
                    match pf.header.facts.clone() {
                        Some(f) => {
                            eprintln!("innops: {} — resuming with the facts recorded when the run started", crate::error::display_of(&e));
                            f
                        }
                        None => return Err(e),
                    }
                }
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
        Command::Sandbox(a) => sandbox_cmd(a.action, &a.conn),
        Command::Bench(a) => crate::bench::command::run(&a),
        Command::Drill(a) => {
            crate::drill::run(&a.conn, sandbox_root(&a.conn), a.out, a.keep, a.bench_time)
        }
    }
}

pub fn run_plan(
    plan: crate::plan::Plan,
    env: &Env,
    opts: &RunOptions,
    resume: Option<PathBuf>,
) -> anyhow::Result<()> {
    let abort = abort_flag();
    let (report, result) = runner::run(
        plan,
        &env.plan_env.target,
        env.control.as_ref(),
        opts,
        &abort,
        resume,
    );
    print_report(&report, env.format);
    result
}

/// How to reach a sandbox over TCP: root has a generated password there, kept in a 0600 file.
fn tcp_hint(sb: &Sandbox) -> String {
    match &sb.client_file {
        Some(f) => format!(
            "  over TCP: mariadb --defaults-file={}   (root's password for 127.0.0.1:{} is in that file, readable by you only)\n",
            f.display(),
            sb.port
        ),
        None => String::new(),
    }
}

fn sandbox_cmd(action: SandboxAction, args: &ConnArgs) -> anyhow::Result<()> {
    let root = sandbox_root(args);
    let timeout = Duration::from_secs(600);
    let json = args.format == Format::Json;
    match action {
        SandboxAction::Up { name, buffer_pool } => {
            let mut sb = Sandbox::create(
                &root,
                &name,
                &SandboxOptions {
                    buffer_pool,
                    extra: Vec::new(),
                },
            )?;
            sb.start(&[], timeout)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&sb)?);
            } else {
                println!(
                    "sandbox '{}' is up: mariadb -S {} -uroot   (or --sandbox {} for innops)\n{}  datadir {}\n  port {}  error log {}\n  option file {}",
                    sb.name,
                    sb.socket.display(),
                    sb.name,
                    tcp_hint(&sb),
                    sb.datadir.display(),
                    sb.port,
                    sb.error_log.display(),
                    sb.option_file.display()
                );
            }
        }
        SandboxAction::Stop { name } => {
            let sb = Sandbox::open(&root, &name)?;
            if !sb.is_running() {
                return Err(refused(format!(
                    "sandbox '{name}' is not running: nothing to stop"
                )));
            }
            let control = Control::new(
                ControlSpec::Sandbox {
                    root: root.clone(),
                    name: name.clone(),
                },
                None,
            );
            let rec = control.stop(
                &sb.conn_spec().resolve_plain(),
                control::StopMode::Clean,
                "innops:sandbox:stop",
            )?;
            println!(
                "sandbox '{name}' stopped ({})",
                if rec.clean {
                    "clean shutdown"
                } else {
                    "no clean-shutdown line in the log"
                }
            );
        }
        SandboxAction::Start { name } => {
            let mut sb = Sandbox::open(&root, &name)?;
            sb.start(&[], timeout)?;
            println!(
                "sandbox '{name}' started: mariadb -S {} -uroot\n{}",
                sb.socket.display(),
                tcp_hint(&sb).trim_end()
            );
        }
        SandboxAction::Down { name } => {
            let sb = Sandbox::open(&root, &name)?;
            sb.destroy()?;
            println!("sandbox '{name}' stopped and deleted");
        }
        SandboxAction::List => {
            let list = Sandbox::list(&root)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&list)?);
            } else if list.is_empty() {
                println!("no sandboxes in {}", root.display());
            } else {
                let mut out = std::io::stdout().lock();
                for s in list {
                    writeln!(
                        out,
                        "{:<20} {:<8} port {:<6} socket {}",
                        s.sandbox.name,
                        if s.running { "running" } else { "stopped" },
                        s.sandbox.port,
                        s.sandbox.socket.display()
                    )?;
                }
            }
        }
    }
    Ok(())
}
