//! `innops bench prepare|run|cleanup`: the flags checked and turned into the bench's [`Settings`], then run on
//! the server the connection flags name.

use std::time::Duration;

use super::env::env_from;
use crate::bench::action::{execute, Action, Settings};
use crate::bench::distribution::RandType;
use crate::bench::run::{IgnoreErrors, RunSpec};
use crate::bench::workloads::Workload;
use crate::cli::{BenchAction, BenchArgs, BenchRandType, Format};
use crate::error::bad_input;

pub fn run(a: &BenchArgs) -> anyhow::Result<()> {
    let s = settings(a)?;
    let env = env_from(&a.conn, &Default::default(), a.fmt.format, None)?;
    execute(&env.plan_env.target, &s)
}

fn action_of(a: BenchAction) -> Action {
    match a {
        BenchAction::Prepare => Action::Prepare,
        BenchAction::Run => Action::Run,
        BenchAction::Cleanup => Action::Cleanup,
    }
}

/// Check the flags and turn them into settings.
fn settings(a: &BenchArgs) -> anyhow::Result<Settings> {
    let workload = Workload::parse(&a.workload)?;
    if a.threads == 0 {
        return Err(bad_input("--threads 0 runs nothing: give at least 1"));
    }
    if a.action == BenchAction::Run && a.time == 0 {
        return Err(bad_input(
            "--time 0 measures nothing: give the seconds to run, for example --time 10",
        ));
    }
    if a.tables == 0 || a.table_size == 0 {
        return Err(bad_input("--tables and --table-size must be at least 1"));
    }
    if a.db.is_empty() {
        return Err(bad_input(
            "--db is empty: name the schema of the sbtest tables",
        ));
    }
    let seed = if a.seed == 0 {
        // sysbench's --rand-seed=0: from the clock; the seed used is reported so a run can be repeated.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1)
    } else {
        a.seed
    };
    Ok(Settings {
        action: action_of(a.action),
        spec: RunSpec {
            workload,
            db: a.db.clone(),
            threads: a.threads,
            time: Duration::from_secs(a.time),
            warmup: Duration::from_secs(a.warmup),
            tables: a.tables,
            table_size: a.table_size,
            rand_type: match a.rand_type {
                BenchRandType::Special => RandType::Special,
                BenchRandType::Uniform => RandType::Uniform,
            },
            seed,
            report_interval: Duration::from_secs(a.report_interval),
            ignore_errors: IgnoreErrors::parse(&a.ignore_errors)?,
            tag: format!("/* innops:bench:{} */", action_of(a.action).name()),
        },
        json: a.fmt.format == Format::Json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn parse(args: &[&str]) -> anyhow::Result<Settings> {
        let mut all = vec!["innops", "bench"];
        all.extend_from_slice(args);
        match Cli::try_parse_from(all)?.command {
            Command::Bench(a) => settings(&a),
            _ => unreachable!(),
        }
    }

    #[test]
    fn defaults_are_sysbench_s() {
        let s = parse(&["run", "--seed", "5"]).unwrap();
        assert_eq!(s.action, Action::Run);
        assert_eq!(s.spec.workload, Workload::ReadWrite);
        assert_eq!(
            (s.spec.threads, s.spec.tables, s.spec.table_size),
            (1, 1, 10_000)
        );
        assert_eq!(s.spec.rand_type, RandType::Special);
        assert_eq!(s.spec.ignore_errors, IgnoreErrors::default());
        assert_eq!(s.spec.db, "sbtest");
        assert_eq!(s.spec.seed, 5);
        assert_eq!(s.spec.tag, "/* innops:bench:run */");
        assert!(!s.json);
    }

    #[test]
    fn flags_reach_the_spec_and_seed_zero_means_the_clock() {
        let s = parse(&[
            "run",
            "--workload",
            "oltp_point_select",
            "--threads",
            "4",
            "--time",
            "3",
            "--warmup",
            "1",
            "--tables",
            "2",
            "--table-size",
            "500",
            "--rand-type",
            "uniform",
            "--report-interval",
            "1",
            "--format",
            "json",
        ])
        .unwrap();
        assert_eq!(s.spec.workload, Workload::PointSelect);
        assert_eq!(
            (s.spec.threads, s.spec.tables, s.spec.table_size),
            (4, 2, 500)
        );
        assert_eq!(
            (s.spec.time, s.spec.warmup, s.spec.report_interval),
            (
                Duration::from_secs(3),
                Duration::from_secs(1),
                Duration::from_secs(1)
            )
        );
        assert_eq!(s.spec.rand_type, RandType::Uniform);
        assert!(s.spec.seed > 0);
        assert!(s.json);
    }

    #[test]
    fn bad_flags_are_bad_input_with_the_fix() {
        for args in [
            &["run", "--threads", "0"][..],
            &["run", "--time", "0"],
            &["run", "--workload", "tpcc"],
            &["run", "--ignore-errors", "x"],
        ] {
            let e = parse(args).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&e), 2, "{args:?}: {e}");
        }
        assert!(
            parse(&["prepare", "--time", "0"]).is_ok(),
            "prepare does not need a time"
        );
    }
}
