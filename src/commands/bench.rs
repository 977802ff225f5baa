//! `innops bench prepare|run|cleanup`: the flags checked and turned into the bench's [`Settings`], then run on
//! the server the connection flags name.

use std::time::Duration;

use super::env::env_from;
use crate::bench::action::{execute, Action, Settings};
use crate::bench::distribution::{RandParams, RandType};
use crate::bench::run::{IgnoreErrors, RunSpec};
use crate::bench::workloads::{OltpOptions, Workload};
use crate::cli::{BenchAction, BenchArgs, BenchRandType, ConnArgs, Format};
use crate::error::bad_input;
use clap::CommandFactory;

pub fn run(a: &BenchArgs) -> anyhow::Result<()> {
    let (action, _) = words(a)?;
    if action.is_none() {
        // `innops bench oltp_read_write help`, as sysbench's `help` command: the flags of every command.
        let mut cmd = crate::cli::Cli::command();
        // Built first, so the subcommand carries the global --help and no -h of its own (-h is the host).
        cmd.build();
        if let Some(b) = cmd.find_subcommand_mut("bench") {
            b.print_long_help()?;
        }
        return Ok(());
    }
    let s = settings(a)?;
    if let Some(note) = oltp_note(a, &s) {
        eprintln!("{note}");
    }
    let env = env_from(&connection(a)?, &Default::default(), a.fmt.format, None)?;
    let target = match writes(&s) {
        true => writes_go(a, &env.plan_env.target)?,
        false => env.plan_env.target.clone(),
    };
    execute(&target, &s)
}

/// Whether the command writes: prepare and cleanup of the sbtest tables, and a workload that is not read-only
/// (a table workload only reads).
fn writes(s: &crate::bench::action::Settings) -> bool {
    use crate::bench::action::Action;
    match (&s.spec.workload, s.action) {
        (crate::bench::workloads::Workload::Table { .. }, _) => false,
        (_, Action::Prepare | Action::Cleanup) => true,
        (w, Action::Run) => !w.is_read_only(),
    }
}

/// The target a writing command uses: on a replica only with `--binlog local`, its sessions kept out of the
/// binary log (an errant GTID otherwise).
fn writes_go(
    a: &BenchArgs,
    target: &crate::server::Target,
) -> anyhow::Result<crate::server::Target> {
    let mut c = target.connect()?;
    let mariadb = crate::server::facts::ServerFacts::collect(&mut c)?.flavor
        == crate::server::facts::Flavor::MariaDB;
    let topo = crate::server::topology::Topology::read(&mut c, mariadb)?;
    let asked = a
        .binlog
        .as_deref()
        .map(crate::procedures::kit::binlog::Mode::parse)
        .transpose()
        .map_err(bad_input)?;
    let d = crate::procedures::kit::binlog::decide(asked, &topo, true, "the benchmark's writes")
        .map_err(crate::error::refused)?;
    Ok(target.with_session(&d.session))
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

/// The oltp_common.lua options given on the command line, by their sysbench names, each with the workloads
/// whose run it changes (`None`: it changes what prepare creates).
fn oltp_given(a: &BenchArgs) -> Vec<(&'static str, Option<&'static [Workload]>)> {
    use Workload::*;
    const RANGES: &[Workload] = &[ReadOnly, ReadWrite];
    const INDEX: &[Workload] = &[ReadWrite, WriteOnly, UpdateIndex];
    const NON_INDEX: &[Workload] = &[ReadWrite, WriteOnly, UpdateNonIndex];
    const DELETE_INSERTS: &[Workload] = &[ReadWrite, WriteOnly];
    const TRX: &[Workload] = &[ReadOnly, ReadWrite, WriteOnly];
    const INSERT: &[Workload] = &[Insert];
    [
        ("--range_size", a.range_size.is_some(), Some(RANGES)),
        ("--point_selects", a.point_selects.is_some(), Some(RANGES)),
        ("--simple_ranges", a.simple_ranges.is_some(), Some(RANGES)),
        ("--sum_ranges", a.sum_ranges.is_some(), Some(RANGES)),
        ("--order_ranges", a.order_ranges.is_some(), Some(RANGES)),
        (
            "--distinct_ranges",
            a.distinct_ranges.is_some(),
            Some(RANGES),
        ),
        ("--range_selects", a.range_selects.is_some(), Some(RANGES)),
        ("--index_updates", a.index_updates.is_some(), Some(INDEX)),
        (
            "--non_index_updates",
            a.non_index_updates.is_some(),
            Some(NON_INDEX),
        ),
        (
            "--delete_inserts",
            a.delete_inserts.is_some(),
            Some(DELETE_INSERTS),
        ),
        ("--skip_trx", a.skip_trx.is_some(), Some(TRX)),
        // --auto_inc shapes the table, and oltp_insert's ids.
        ("--auto_inc", a.auto_inc.is_some(), Some(INSERT)),
        ("--secondary", a.secondary.is_some(), None),
        ("--create_secondary", a.create_secondary.is_some(), None),
        ("--mysql_storage_engine", a.storage_engine.is_some(), None),
        (
            "--create_table_options",
            a.create_table_options.is_some(),
            None,
        ),
    ]
    .into_iter()
    .filter(|(_, given, _)| *given)
    .map(|(name, _, runs)| (name, runs))
    .collect()
}

/// oltp_common.lua's options from the flags, sysbench's defaults for the rest. The scripts not built on
/// oltp_common.lua (select_random_*, bulk_insert, table:) have none of them, so giving one is refused.
fn oltp_options(a: &BenchArgs, workload: &Workload) -> anyhow::Result<OltpOptions> {
    if !workload.uses_oltp_common() {
        if let Some((name, _)) = oltp_given(a).first() {
            return Err(bad_input(format!(
                "{name} is an option of the oltp_* scripts, which {workload} is not: drop it, or run an oltp_* test"
            )));
        }
    }
    let d = OltpOptions::default();
    let engine = a.storage_engine.clone().unwrap_or(d.storage_engine);
    if engine.trim().is_empty() {
        return Err(bad_input(
            "--mysql_storage_engine is empty: name an engine, for example --mysql_storage_engine=innodb",
        ));
    }
    let table_options = a.create_table_options.clone().unwrap_or_default();
    if table_options.contains(';') {
        return Err(bad_input(format!(
            "--create_table_options '{table_options}' holds a ';': give table options only (for example ROW_FORMAT=COMPRESSED), they end the one CREATE TABLE"
        )));
    }
    Ok(OltpOptions {
        range_size: a.range_size.unwrap_or(d.range_size),
        point_selects: a.point_selects.unwrap_or(d.point_selects),
        simple_ranges: a.simple_ranges.unwrap_or(d.simple_ranges),
        sum_ranges: a.sum_ranges.unwrap_or(d.sum_ranges),
        order_ranges: a.order_ranges.unwrap_or(d.order_ranges),
        distinct_ranges: a.distinct_ranges.unwrap_or(d.distinct_ranges),
        index_updates: a.index_updates.unwrap_or(d.index_updates),
        non_index_updates: a.non_index_updates.unwrap_or(d.non_index_updates),
        delete_inserts: a.delete_inserts.unwrap_or(d.delete_inserts),
        range_selects: a.range_selects.unwrap_or(d.range_selects),
        skip_trx: a.skip_trx.unwrap_or(d.skip_trx),
        auto_inc: a.auto_inc.unwrap_or(d.auto_inc),
        secondary: a.secondary.unwrap_or(d.secondary),
        create_secondary: a.create_secondary.unwrap_or(d.create_secondary),
        storage_engine: engine,
        create_table_options: table_options,
        reconnect: a.reconnect.unwrap_or(d.reconnect),
    })
}

/// The oltp options given that change nothing in this command of this script (sysbench accepts and ignores
/// them too, so a DBA's one line serves prepare, run and cleanup): one line saying so, or `None`.
fn oltp_note(a: &BenchArgs, s: &Settings) -> Option<String> {
    let reconnect = a.reconnect.is_some().then_some(("--reconnect", None));
    let idle: Vec<&str> = oltp_given(a)
        .into_iter()
        .filter(|(name, runs)| match (s.action, runs) {
            (Action::Prepare, None) => false,
            (Action::Prepare, Some(_)) => *name != "--auto_inc",
            (Action::Run, Some(runs)) => !runs.contains(&s.spec.workload),
            (Action::Run, None) | (Action::Cleanup, _) => true,
        })
        .chain(reconnect.filter(|_| s.action != Action::Run))
        .map(|(name, _)| name)
        .collect();
    (!idle.is_empty()).then(|| {
        format!(
            "note: {} change nothing in {} {} (sysbench ignores them there too)",
            idle.join(", "),
            s.spec.workload,
            s.action.name()
        )
    })
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
    // prepare would create (and cleanup drop) sbtest tables among the server's own.
    if crate::procedures::convert::schema::SYSTEM_SCHEMAS
        .contains(&a.db.to_ascii_lowercase().as_str())
    {
        return Err(bad_input(format!(
            "--db {} is a system schema, and benchmark tables do not belong there: name a schema of their own, such as sbtest",
            a.db
        )));
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
    let oltp = oltp_options(a, &workload)?;
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
            oltp,
            during: false,
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
    fn benchmark_tables_never_go_into_a_system_schema() {
        for db in ["mysql", "SYS", "performance_schema", "information_schema"] {
            for action in ["prepare", "cleanup"] {
                let e = settings(&args(&["oltp_point_select", action, "--db", db])).unwrap_err();
                assert_eq!(crate::error::exit_code_of(&e), 2, "{db}: {e}");
                assert!(e.to_string().contains("is a system schema"), "{e}");
            }
        }
        assert!(settings(&args(&["oltp_point_select", "prepare", "--db", "mysqlx"])).is_ok());
    }

    #[test]
    fn oltp_script_options_parse_with_dashes_or_underscores_and_on_off_values() {
        let d = OltpOptions::default();
        assert_eq!(parse(&["run"]).unwrap().spec.oltp, d);
        let s = parse(&[
            "oltp_read_write",
            "run",
            "--range_size=5",
            "--point-selects=3",
            "--simple_ranges=0",
            "--sum-ranges=2",
            "--order_ranges=4",
            "--distinct-ranges=6",
            "--index_updates=7",
            "--non-index-updates=8",
            "--delete_inserts=9",
            "--range-selects=off",
            "--skip_trx",
            "--auto-inc=false",
            "--secondary=on",
            "--create_secondary=0",
            "--mysql_storage_engine=myisam",
            "--create_table_options=ROW_FORMAT=FIXED",
            "--reconnect=10",
        ])
        .unwrap();
        assert_eq!(
            s.spec.oltp,
            OltpOptions {
                range_size: 5,
                point_selects: 3,
                simple_ranges: 0,
                sum_ranges: 2,
                order_ranges: 4,
                distinct_ranges: 6,
                index_updates: 7,
                non_index_updates: 8,
                delete_inserts: 9,
                range_selects: false,
                skip_trx: true,
                auto_inc: false,
                secondary: true,
                create_secondary: false,
                storage_engine: "myisam".into(),
                create_table_options: "ROW_FORMAT=FIXED".into(),
                reconnect: 10,
            }
        );
        // The other spellings of the same flags.
        let s = parse(&[
            "run",
            "--mysql-storage-engine=aria",
            "--skip-trx=yes",
            "--create-table-options=x",
            "--table-size=9",
        ])
        .unwrap();
        assert_eq!(
            (
                s.spec.oltp.storage_engine.as_str(),
                s.spec.oltp.skip_trx,
                s.spec.oltp.create_table_options.as_str()
            ),
            ("aria", true, "x")
        );
        assert!(parse(&["run", "--storage-engine=innodb", "--skip_trx=1"]).is_ok());
    }

    #[test]
    fn oltp_script_options_that_cannot_work_are_refused_and_idle_ones_noted() {
        for (a, says) in [
            (
                &["select_random_points", "run", "--point_selects=3"][..],
                "--point_selects is an option of the oltp_* scripts",
            ),
            (
                &["bulk_insert", "prepare", "--auto_inc=off"],
                "--auto_inc is an option",
            ),
            (&["table:shop.t", "run", "--skip_trx"], "--skip_trx"),
            (&["run", "--mysql_storage_engine="], "is empty"),
            (
                &["prepare", "--create_table_options=x; DROP TABLE t"],
                "holds a ';'",
            ),
        ] {
            let e = parse(a).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&e), 2, "{a:?}: {e}");
            assert!(e.to_string().contains(says), "{a:?}: {e}");
        }
        // A value sysbench would not take is a usage error (exit 2 in main), as sysbench's "invalid option".
        for a in [
            &["run", "--skip_trx=maybe"][..],
            &["run", "--point_selects=-1"],
        ] {
            let mut all = vec!["innops", "bench"];
            all.extend_from_slice(a);
            assert!(Cli::try_parse_from(all).is_err(), "{a:?}");
        }
        let note = |a: &[&str]| oltp_note(&args(a), &parse(a).unwrap());
        assert_eq!(note(&["oltp_read_write", "run", "--point_selects=3"]), None);
        assert_eq!(note(&["oltp_insert", "run", "--auto_inc=off"]), None);
        assert_eq!(note(&["oltp_read_only", "prepare", "--secondary"]), None);
        assert_eq!(note(&["oltp_read_only", "run", "--reconnect=5"]), None);
        assert_eq!(
            note(&["oltp_delete", "run", "--point_selects=3", "--secondary", "--reconnect=2"]).as_deref(),
            Some("note: --point_selects, --secondary change nothing in oltp_delete run (sysbench ignores them there too)")
        );
        assert_eq!(
            note(&["oltp_read_write", "prepare", "--skip_trx", "--auto_inc=off", "--reconnect=2"]).as_deref(),
            Some("note: --skip_trx, --reconnect change nothing in oltp_read_write prepare (sysbench ignores them there too)")
        );
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
