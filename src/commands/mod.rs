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
mod drill;
mod env;
mod inspect;
mod redo;
mod resume;
mod runs;
mod sandbox;

use env::Env;

/// Run the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Inspect(a) => inspect::run(&a),
        Command::Redo(a) => redo::run(&a),
        Command::Convert(a) => convert::run(&a),
        Command::Resume(a) => resume::run(a),
        Command::Sandbox(a) => sandbox::run(a.action, &a.conn),
        Command::Bench(a) => bench::run(&a),
        Command::Drill(a) => drill::run(&a),
        Command::Runs(a) => runs::run(&a),
        Command::Completions(a) => completions::completions(a.shell),
        Command::Man => completions::man(),
    }
}

/// The run options of a new run from `--execute`, `--yes`, `--run-dir` and `--no-bench`.
fn run_options(a: &crate::cli::RunArgs) -> RunOptions {
    RunOptions {
        execute: a.execute,
        yes: a.yes,
        run_dir: a.run_dir.clone(),
        no_bench: a.no_bench,
    }
}

/// `--bench-time`, unless `--no-bench` skips the benchmarks.
fn bench_time(a: &crate::cli::RunArgs) -> Option<u64> {
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
