//! The face: one file per subcommand turns its flags into settings and calls the procedure, the bench, the
//! sandbox or the drill. This is the only module that sees clap's types (`crate::cli`); nothing below it imports
//! them or this module.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::cli::{Cli, Command, Format};
use crate::plan::report::Report;
use crate::plan::runner::{self, RunOptions};

mod bench;
mod completions;
mod convert;
mod deadlock;
mod drill;
mod env;
mod experiment;
mod flags;
mod inspect;
mod man;
mod password;
mod readonly;
mod recover;
mod redo;
mod resume;
mod run;
mod runs;
mod sandbox;
mod study;

use env::Env;

/// The `--format` of the parsed command line.
pub fn format_of(cli: &Cli) -> Format {
    match &cli.command {
        Command::Inspect(a) => a.fmt.format,
        Command::Redo(a) => a.fmt.format,
        Command::Readonly(a) => a.fmt.format,
        Command::Recover(a) => a.fmt.format,
        Command::Convert(a) => a.fmt.format,
        Command::Deadlock(a) => deadlock::format(a),
        Command::Experiment(a) => a.fmt.format,
        Command::Run(a) => a.fmt.format,
        Command::Resume(a) => a.fmt.format,
        Command::Sandbox(a) => a.fmt.format,
        Command::Bench(a) => a.fmt.format,
        Command::Drill(a) => a.fmt.format,
        Command::Runs(a) => a.fmt.format,
        Command::Completions(_) | Command::Man => Format::Text,
    }
}

/// The mysql client's `-pSECRET` (the password attached to `-p`) as `--password=SECRET`: `-p` takes its value
/// only attached, so that `-p` alone asks for the password, which clap's `require_equals` would otherwise read
/// as `-p=SECRET` only. Arguments after `--` stay as they are.
pub fn mysql_style_args(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut after_dashes = false;
    args.into_iter()
        .map(|a| {
            if a == "--" {
                after_dashes = true;
            }
            match a.to_str() {
                Some(t)
                    if !after_dashes
                        && t.len() > 2
                        && t.starts_with("-p")
                        && !t.starts_with("-p=") =>
                {
                    format!("--password={}", &t[2..]).into()
                }
                _ => a,
            }
        })
        .collect()
}

/// Whether the raw arguments ask for `--format json`: for a command line clap refused, which has no parsed
/// format.
pub fn json_in_args(args: &[std::ffi::OsString]) -> bool {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    args.iter().enumerate().any(|(i, a)| {
        a == "--format=json" || (a == "--format" && args.get(i + 1).is_some_and(|v| v == "json"))
    })
}

/// Print an error the way `--format` asks: one sentence on stderr, and with json also
/// `{"error": SENTENCE, "exit": CODE}` on stdout, unless the command already printed its JSON document there.
pub fn print_error(sentence: &str, exit: i32, json: bool) {
    eprintln!("innops: {sentence}");
    if json && !crate::error::json_printed() {
        println!("{}", serde_json::json!({"error": sentence, "exit": exit}));
    }
}

/// A command line clap refused (exit 2), or `--help`/`--version` (exit 0, printed as clap prints them). A
/// flag that another command takes is refused in one sentence naming those commands.
pub fn usage_error(e: clap::Error, args: &[std::ffi::OsString]) -> ! {
    use clap::error::ErrorKind;
    let json = json_in_args(args);
    if let Some(sentence) =
        flags::unused_flag_sentence(&e, args).or_else(|| flags::invalid_value_sentence(&e))
    {
        print_error(&sentence, crate::error::EXIT_BAD_INPUT, json);
        std::process::exit(crate::error::EXIT_BAD_INPUT);
    }
    if !json
        || matches!(
            e.kind(),
            ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        )
    {
        e.exit();
    }
    let rendered = e.render().to_string();
    // clap's message is its first paragraph ("error: ... not provided:" and the missing flags below it).
    let message: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    let sentence = format!(
        "{}: see --help for the flags this command takes",
        message.trim_end_matches(':')
    );
    eprint!("{rendered}");
    println!(
        "{}",
        serde_json::json!({"error": sentence, "exit": crate::error::EXIT_BAD_INPUT})
    );
    std::process::exit(crate::error::EXIT_BAD_INPUT);
}

/// Run the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    use crate::progress::{set_level, Level};
    set_level(if cli.quiet {
        Level::Quiet
    } else if cli.verbose {
        Level::Verbose
    } else {
        Level::Normal
    });
    match cli.command {
        Command::Inspect(a) => inspect::run(&a),
        Command::Redo(a) => redo::run(&a),
        Command::Readonly(a) => readonly::run(&a),
        Command::Recover(a) => recover::run(&a),
        Command::Convert(a) => convert::run(&a),
        Command::Deadlock(a) => deadlock::run(&a),
        Command::Experiment(a) => experiment::run(&a),
        Command::Run(a) => run::run_playbook(&a),
        Command::Resume(a) => resume::run(a),
        Command::Sandbox(a) => sandbox::run(a),
        Command::Bench(a) => bench::run(&a),
        Command::Drill(a) => drill::run(&a),
        Command::Runs(a) => runs::run(&a),
        Command::Completions(a) => completions::completions(a.shell),
        Command::Man => completions::man(),
    }
}

/// The run options of a new run from `--execute`, `--yes`, `--run-dir` and, on a command whose plans benchmark,
/// `--no-bench`.
fn run_options(a: &crate::cli::RunArgs, bench: Option<&crate::cli::PlanBenchArgs>) -> RunOptions {
    RunOptions {
        execute: a.execute,
        yes: a.yes,
        run_dir: a.run_dir.clone(),
        no_bench: bench.is_some_and(|b| b.no_bench),
    }
}

/// The plan with `--bench-during` (its workload through the whole plan), refused where the plan has no
/// benchmark.
fn with_bench_during(
    mut plan: crate::plan::Plan,
    a: &crate::cli::PlanBenchArgs,
) -> anyhow::Result<crate::plan::Plan> {
    if a.bench_during {
        let threads = a
            .bench_during_threads
            .unwrap_or(crate::bench::during::DEFAULT_THREADS);
        runner::set_bench_during(&mut plan, threads, a.no_bench)?;
    }
    Ok(plan)
}

/// `--bench-time`, unless `--no-bench` skips the benchmarks.
fn bench_time(a: &crate::cli::PlanBenchArgs) -> Option<u64> {
    (!a.no_bench).then_some(a.bench_time)
}

/// Run a plan to its end (or its first refusal) and print its report.
fn run_plan(
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

fn print_report(report: &Report, format: Format) {
    match format {
        Format::Json => {
            println!(
                "{}",
                serde_json::to_string_pretty(report).unwrap_or_default()
            );
            crate::error::note_json_printed();
        }
        Format::Text if crate::progress::level() == crate::progress::Level::Quiet => {
            print!("{}", report.render_verdict())
        }
        Format::Text => print!(
            "{}",
            crate::progress::paint(&report.render_text(), crate::progress::colour_on(true))
        ),
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
        // Not eprintln!: after a SIGHUP the terminal may be gone, and a failed write must not end the handler.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\ninnops: stopping at the next safe point (Ctrl-C again to quit at once)"
        );
    });
    flag
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<std::ffi::OsString> {
        v.iter().map(|a| a.into()).collect()
    }

    #[test]
    fn an_attached_password_is_the_password_and_p_alone_stays_a_prompt() {
        assert_eq!(
            mysql_style_args(args(&[
                "innops", "inspect", "-pS3cr-t", "-p", "-P", "3307", "-p=x"
            ])),
            args(&[
                "innops",
                "inspect",
                "--password=S3cr-t",
                "-p",
                "-P",
                "3307",
                "-p=x"
            ])
        );
        assert_eq!(
            mysql_style_args(args(&["innops", "--", "-pkeep"])),
            args(&["innops", "--", "-pkeep"])
        );
    }

    #[test]
    fn format_json_is_found_in_a_command_line_clap_refused() {
        let a = |v: &[&str]| json_in_args(&args(v));
        assert!(a(&["innops", "inspect", "--bogus", "--format", "json"]));
        assert!(a(&["innops", "inspect", "--format=json", "--bogus"]));
        assert!(!a(&["innops", "inspect", "--format", "text", "--bogus"]));
        assert!(!a(&["innops", "inspect", "--bogus"]));
    }
}
