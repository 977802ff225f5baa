//! `innops bench prepare|run|cleanup|prewarm|help`: the flags checked and turned into the bench's [`Settings`],
//! then run on the server the connection flags name. sysbench's general and driver options have a file of their
//! own ([`sysbench`]), and so has a test's `help` ([`help`]).

mod help;
mod sysbench;

use std::path::Path;
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
    let (action, test) = words(a)?;
    if let (None, Some(test)) = (action, &test) {
        // `innops bench oltp_read_write help`, as `sysbench oltp_read_write help`: the test's own options.
        print!("{}", help::text(&Workload::parse(test)?));
        return Ok(());
    }
    if action.is_none() {
        // `innops bench help`: the flags of every command.
        let mut cmd = crate::cli::Cli::command();
        // Built first, so the subcommand carries the global --help and no -h of its own (-h is the host).
        cmd.build();
        if let Some(b) = cmd.find_subcommand_mut("bench") {
            b.print_long_help()?;
        }
        return Ok(());
    }
    let s = settings(a)?;
    let general = sysbench::general(a, Some(s.action))?;
    if general.statements {
        crate::progress::set_level(crate::progress::Level::Verbose);
    }
    let (conn, tls_notes) = connection(a)?;
    let notes = general.notes.into_iter().chain(tls_notes);
    for note in notes.chain(tables_note(a, &s)).chain(oltp_note(a, &s)) {
        eprintln!("{note}");
    }
    let env = env_from(&conn, &Default::default(), a.fmt.format, None)?;
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
        // ANALYZE NO_WRITE_TO_BINLOG and reads: nothing a replica would receive.
        (_, Action::Prewarm) => false,
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

/// innops's connection flags, with sysbench's `--mysql-*` names put in their places, and the notes sysbench's
/// TLS and compression flags call for.
fn connection(a: &BenchArgs) -> anyhow::Result<(ConnArgs, Vec<String>)> {
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
    let notes = sysbench::tls(a, &mut c, Path::new("."))?;
    Ok((c, notes))
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
        "prewarm" => Some(Some(BenchAction::Prewarm)),
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
                    "two commands given ({} and {w}): give one of prepare, run, cleanup, prewarm or help",
                    a.first
                )))
            }
            None if test.is_none() => test = Some(test_name(w).to_string()),
            None => {
                return Err(bad_input(format!(
                    "'{w}' is not a command: give prepare, run, cleanup, prewarm or help after the test name"
                )))
            }
        }
    }
    let Some(action) = action else {
        return Err(bad_input(format!(
            "no command after '{}': add prepare, run, cleanup, prewarm or help, as with sysbench",
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

/// The oltp_common.lua options (and select_random_*.lua's own) given on the command line, by their sysbench
/// names, each with the workloads whose run it changes (`None`: it changes what prepare creates).
fn oltp_given(a: &BenchArgs) -> Vec<(&'static str, Option<&'static [Workload]>)> {
    use Workload::*;
    const RANGES: &[Workload] = &[ReadOnly, ReadWrite];
    const INDEX: &[Workload] = &[ReadWrite, WriteOnly, UpdateIndex];
    const NON_INDEX: &[Workload] = &[ReadWrite, WriteOnly, UpdateNonIndex];
    const DELETE_INSERTS: &[Workload] = &[ReadWrite, WriteOnly];
    const TRX: &[Workload] = &[ReadOnly, ReadWrite, WriteOnly];
    const INSERT: &[Workload] = &[Insert];
    const POINTS: &[Workload] = &[SelectRandomPoints];
    const RANGES_OF_K: &[Workload] = &[SelectRandomRanges];
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
        ("--random_points", a.random_points.is_some(), Some(POINTS)),
        (
            "--number_of_ranges",
            a.number_of_ranges.is_some(),
            Some(RANGES_OF_K),
        ),
        ("--delta", a.delta.is_some(), Some(RANGES_OF_K)),
    ]
    .into_iter()
    .filter(|(_, given, _)| *given)
    .map(|(name, _, runs)| (name, runs))
    .collect()
}

/// oltp_common.lua's options from the flags, sysbench's defaults for the rest. The scripts not built on
/// oltp_common.lua (select_random_*, bulk_insert, table:) have none of them, so giving one is refused.
fn oltp_options(a: &BenchArgs, workload: &Workload) -> anyhow::Result<OltpOptions> {
    random_options(a, workload)?;
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
        random_points: a.random_points.unwrap_or(d.random_points),
        number_of_ranges: a.number_of_ranges.unwrap_or(d.number_of_ranges),
        delta: a.delta.unwrap_or(d.delta),
    })
}

/// select_random_points.lua's and select_random_ranges.lua's own options exist only in their scripts: given
/// to another test, sysbench refuses them as unknown, and so does innops, by name.
fn random_options(a: &BenchArgs, workload: &Workload) -> anyhow::Result<()> {
    let given = [
        (
            "--random_points",
            a.random_points.is_some(),
            Workload::SelectRandomPoints,
        ),
        (
            "--number_of_ranges",
            a.number_of_ranges.is_some(),
            Workload::SelectRandomRanges,
        ),
        ("--delta", a.delta.is_some(), Workload::SelectRandomRanges),
    ];
    match given.into_iter().find(|(_, g, w)| *g && w != workload) {
        Some((name, _, owner)) => Err(bad_input(format!(
            "{name} is an option of {owner}, which {workload} is not: drop it, or run {owner}"
        ))),
        None => Ok(()),
    }
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
            (Action::Run, None) | (Action::Cleanup | Action::Prewarm, _) => true,
        })
        .chain(reconnect.filter(|_| s.action != Action::Run))
        .map(|(name, _)| name)
        .collect();
    (!idle.is_empty()).then(|| {
        format!(
            "note: {} {} nothing in {} {} (sysbench ignores {} there too)",
            idle.join(", "),
            if idle.len() == 1 { "changes" } else { "change" },
            s.spec.workload,
            s.action.name(),
            if idle.len() == 1 { "it" } else { "them" }
        )
    })
}

fn action_of(a: BenchAction) -> Action {
    match a {
        BenchAction::Prepare => Action::Prepare,
        BenchAction::Run => Action::Run,
        BenchAction::Cleanup => Action::Cleanup,
        BenchAction::Prewarm => Action::Prewarm,
    }
}

/// Check the flags and turn them into settings.
fn settings(a: &BenchArgs) -> anyhow::Result<Settings> {
    let (action, test) = words(a)?;
    let Some(action) = action else {
        return Err(bad_input("help prints the flags and runs nothing"));
    };
    let workload = Workload::parse(test.as_deref().unwrap_or("oltp_read_write"))?;
    let g = sysbench::general(a, Some(action_of(action)))?;
    if g.threads == 0 {
        return Err(bad_input("--threads 0 runs nothing: give at least 1"));
    }
    if action == BenchAction::Run && g.time == 0 && g.events == 0 {
        return Err(bad_input(
            "--time 0 with no --events would never stop: give the seconds to run (--time 10) or the transactions (--events 1000)",
        ));
    }
    if a.tables == 0 || a.table_size == 0 {
        return Err(bad_input("--tables and --table-size must be at least 1"));
    }
    if workload == Workload::BulkInsert && action == BenchAction::Prewarm {
        return Err(bad_input(
            "bulk_insert has no prewarm (sysbench's has none either): its run only appends rows to empty tables, so there is nothing to read in first",
        ));
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
    let tables = if workload == Workload::BulkInsert {
        // bulk_insert.lua makes one table per thread.
        g.threads
    } else if workload.single_table() && action == BenchAction::Run {
        // select_random_*.lua's event() reads sbtest1 whatever --tables says ([`tables_note`]).
        1
    } else {
        a.tables
    };
    Ok(Settings {
        action: action_of(action),
        spec: RunSpec {
            workload,
            db: a.db.clone(),
            threads: g.threads,
            time: Duration::from_secs(g.time),
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
            ignore_flag: true,
            tag: format!("/* innops:bench:{} */", action_of(action).name()),
            events: g.events,
            rate: g.rate,
            percentile: a.percentile,
            histogram: a.histogram,
            oltp,
            during: false,
        },
        json: a.fmt.format == Format::Json,
        report: g.report,
    })
}

/// select_random_*.lua read sbtest1 only: its prepare makes (and innops's cleanup drops) `--tables` tables, as
/// oltp_common.lua's prepare does, but a run with `--tables` above 1 reads no other table, as sysbench's.
fn tables_note(a: &BenchArgs, s: &Settings) -> Option<String> {
    (s.spec.workload.single_table() && s.action == Action::Run && a.tables != 1).then(|| {
        format!(
            "note: {} reads sbtest1 only (as sysbench's): --tables {} changes nothing in its run",
            s.spec.workload, a.tables
        )
    })
}

#[cfg(test)]
mod tests;
