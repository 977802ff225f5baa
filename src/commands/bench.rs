//! `innops bench prepare|run|cleanup`: the flags checked and turned into the bench's [`Settings`], then run on
//! the server the connection flags name.

use std::time::Duration;

use super::env::env_from;
use crate::bench::action::{execute, Action, Settings};
use crate::bench::distribution::{RandParams, RandType};
use crate::bench::run::{IgnoreErrors, RunSpec};
use crate::bench::workloads::Workload;
use crate::cli::{BenchAction, BenchArgs, BenchRandType, ConnArgs, Format};
use crate::error::bad_input;
use clap::CommandFactory;

pub fn run(a: &BenchArgs) -> anyhow::Result<()> {
    let (action, _) = words(a)?;
    if action.is_none() {
        // `innops bench oltp_read_write help`, as sysbench's `help` command: the flags of every command.
        let mut cmd = crate::cli::Cli::command();
        if let Some(b) = cmd.find_subcommand_mut("bench") {
            b.print_long_help()?;
        }
        return Ok(());
    }
    let s = settings(a)?;
    let env = env_from(&connection(a)?, &Default::default(), a.fmt.format, None)?;
    execute(&env.plan_env.target, &s)
}

/// innops's connection flags, with sysbench's `--mysql-*` names put in their places.
fn connection(a: &BenchArgs) -> anyhow::Result<ConnArgs> {
    if let Some(d) = &a.db_driver {
        if d != "mysql" {
            return Err(bad_input(format!(
                "--db-driver={d} is not supported: innops bench speaks to MySQL and MariaDB only (--db-driver=mysql)"
            )));
        }
    }
    let mut c = a.conn.clone();
    if a.mysql_host.is_some() {
        c.host = a.mysql_host.clone();
    }
    if a.mysql_port.is_some() {
        c.port = a.mysql_port;
    }
    if a.mysql_socket.is_some() {
        c.socket = a.mysql_socket.clone();
    }
    if a.mysql_user.is_some() {
        c.user = a.mysql_user.clone();
    }
    if a.mysql_password.is_some() {
        c.password = a.mysql_password.clone().map(Some);
    }
    Ok(c)
}

/// A sysbench script named by path or file name (`/usr/share/sysbench/oltp_read_write.lua`) → its test name.
fn test_name(w: &str) -> &str {
    if w.starts_with("table:") {
        return w;
    }
    let base = w.rsplit('/').next().unwrap_or(w);
    base.strip_suffix(".lua").unwrap_or(base)
}

/// The command and the test name from the words, in either order. `None` as the command means `help`.
fn words(a: &BenchArgs) -> anyhow::Result<(Option<BenchAction>, Option<String>)> {
    let command = |w: &str| match w {
        "prepare" => Some(Some(BenchAction::Prepare)),
        "run" => Some(Some(BenchAction::Run)),
        "cleanup" => Some(Some(BenchAction::Cleanup)),
        "help" => Some(None),
        _ => None,
    };
    let mut action: Option<Option<BenchAction>> = None;
    let mut test: Option<String> = None;
    for w in std::iter::once(a.first.as_str()).chain(a.second.as_deref()) {
        match command(w) {
            Some(c) if action.is_none() => action = Some(c),
            Some(_) => {
                return Err(bad_input(format!(
                    "two commands given ({} and {w}): give one of prepare, run, cleanup or help",
                    a.first
                )))
            }
            None if test.is_none() => test = Some(test_name(w).to_string()),
            None => {
                return Err(bad_input(format!(
                    "'{w}' is not a command: give prepare, run, cleanup or help after the test name"
                )))
            }
        }
    }
    let Some(action) = action else {
        return Err(bad_input(format!(
            "no command after '{}': add prepare, run, cleanup or help, as with sysbench",
            a.first
        )));
    };
    if let (Some(t), Some(w)) = (&test, &a.workload) {
        if test_name(w) != t {
            return Err(bad_input(format!(
                "two tests given ({t} and --workload {w}): name one"
            )));
        }
    }
    Ok((
        action,
        test.or_else(|| a.workload.as_deref().map(|w| test_name(w).to_string())),
    ))
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
    let (action, test) = words(a)?;
    let Some(action) = action else {
        return Err(bad_input("help prints the flags and runs nothing"));
    };
    let workload = Workload::parse(test.as_deref().unwrap_or("oltp_read_write"))?;
    if a.threads == 0 {
        return Err(bad_input("--threads 0 runs nothing: give at least 1"));
    }
    if action == BenchAction::Run && a.time == 0 && a.events == 0 {
        return Err(bad_input(
            "--time 0 with no --events would never stop: give the seconds to run (--time 10) or the transactions (--events 1000)",
        ));
    }
    if a.tables == 0 || a.table_size == 0 {
        return Err(bad_input("--tables and --table-size must be at least 1"));
    }
    if workload.single_table() && a.tables != 1 {
        return Err(bad_input(format!(
            "{workload} works on sbtest1 only (as in sysbench): drop --tables {} or give --tables 1",
            a.tables
        )));
    }
    if a.db.is_empty() {
        return Err(bad_input(
            "--db is empty: name the schema of the sbtest tables",
        ));
    }
    let rand = RandParams {
        spec_iter: a.rand_spec_iter,
        spec_pct: a.rand_spec_pct,
        spec_res: a.rand_spec_res,
        pareto_h: a.rand_pareto_h,
        zipfian_exp: a.rand_zipfian_exp,
    };
    rand.validate()?;
    let seed = if a.seed == 0 {
        // sysbench's --rand-seed=0: from the clock; the seed used is reported so a run can be repeated.
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1)
    } else {
        a.seed
    };
    // bulk_insert.lua makes one table per thread.
    let tables = if workload == Workload::BulkInsert {
        a.threads
    } else {
        a.tables
    };
    Ok(Settings {
        action: action_of(action),
        spec: RunSpec {
            workload,
            db: a.db.clone(),
            threads: a.threads,
            time: Duration::from_secs(a.time),
            warmup: Duration::from_secs(a.warmup),
            tables,
            table_size: a.table_size,
            rand_type: match a.rand_type {
                BenchRandType::Special => RandType::Special,
                BenchRandType::Uniform => RandType::Uniform,
                BenchRandType::Gaussian => RandType::Gaussian,
                BenchRandType::Pareto => RandType::Pareto,
                BenchRandType::Zipfian => RandType::Zipfian,
            },
            rand,
            seed,
            report_interval: Duration::from_secs(a.report_interval),
            ignore_errors: IgnoreErrors::parse(&a.ignore_errors)?,
            tag: format!("/* innops:bench:{} */", action_of(action).name()),
            events: a.events,
            rate: a.rate,
            percentile: a.percentile,
            histogram: a.histogram,
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

    fn args(args: &[&str]) -> BenchArgs {
        let mut all = vec!["innops", "bench"];
        all.extend_from_slice(args);
        match Cli::try_parse_from(all).unwrap().command {
            Command::Bench(a) => a,
            _ => unreachable!(),
        }
    }

    #[test]
    fn sysbench_s_word_order_and_flag_names_are_accepted() {
        let s = parse(&[
            "/usr/share/sysbench/oltp_write_only.lua",
            "--mysql-db=shop",
            "--rand-seed=3",
            "--warmup-time=1",
            "--mysql-ignore-errors=all",
            "--events=100",
            "--time=0",
            "--rate=50",
            "--percentile=99",
            "--histogram",
            "--rand-type=zipfian",
            "--rand-zipfian-exp=1.2",
            "--table_size=700",
            "run",
        ])
        .unwrap();
        assert_eq!(s.action, Action::Run);
        assert_eq!(s.spec.workload, Workload::WriteOnly);
        assert_eq!(
            (s.spec.db.as_str(), s.spec.seed, s.spec.table_size),
            ("shop", 3, 700)
        );
        assert_eq!(s.spec.warmup, Duration::from_secs(1));
        assert_eq!(s.spec.ignore_errors, IgnoreErrors::All);
        assert_eq!(
            (s.spec.events, s.spec.rate, s.spec.percentile),
            (100, 50, 99)
        );
        assert!(s.spec.histogram);
        assert_eq!(s.spec.rand_type, RandType::Zipfian);
        assert_eq!(s.spec.rand.zipfian_exp, 1.2);
        // The command first and the test by flag, as innops wrote it before.
        let s = parse(&["prepare", "--workload", "oltp_delete", "--histogram=off"]).unwrap();
        assert_eq!(
            (s.action, &s.spec.workload),
            (Action::Prepare, &Workload::Delete)
        );
        assert!(!s.spec.histogram);
        // bulk_insert has one table per thread.
        let s = parse(&["bulk_insert", "prepare", "--threads=3"]).unwrap();
        assert_eq!(s.spec.tables, 3);
    }

    #[test]
    fn sysbench_s_connection_flags_take_the_place_of_innops_s() {
        let a = args(&[
            "oltp_read_only",
            "run",
            "--mysql-host=db1",
            "--mysql-port=3307",
            "--mysql-socket=/tmp/x.sock",
            "--mysql-user=bench",
            "--mysql-password=pw",
            "--db-driver=mysql",
        ]);
        let c = connection(&a).unwrap();
        assert_eq!(c.host.as_deref(), Some("db1"));
        assert_eq!(c.port, Some(3307));
        assert_eq!(
            c.socket.as_deref(),
            Some(std::path::Path::new("/tmp/x.sock"))
        );
        assert_eq!(
            (
                c.user.as_deref(),
                c.password.as_ref().and_then(|p| p.as_deref())
            ),
            (Some("bench"), Some("pw"))
        );
        let e = connection(&args(&["run", "--db-driver=pgsql"])).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2);
        assert!(e.to_string().contains("--db-driver=mysql"), "{e}");
    }

    #[test]
    fn words_that_do_not_make_a_command_line_say_what_is_missing() {
        for (a, says) in [
            (&["oltp_read_write"][..], "add prepare, run, cleanup"),
            (&["run", "cleanup"], "two commands"),
            (
                &["oltp_read_write", "run", "--workload", "oltp_insert"],
                "two tests",
            ),
            (
                &["select_random_points", "prepare", "--tables", "2"],
                "sbtest1 only",
            ),
            (&["run", "--time", "0"], "--events"),
            (&["run", "--rand-pareto-h", "1.5"], "--rand-pareto-h"),
        ] {
            let e = parse(a).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&e), 2, "{a:?}: {e}");
            assert!(e.to_string().contains(says), "{a:?}: {e}");
        }
        assert!(parse(&["run", "--time", "0", "--events", "10"]).is_ok());
        assert_eq!(words(&args(&["oltp_read_write", "help"])).unwrap().0, None);
    }
}
