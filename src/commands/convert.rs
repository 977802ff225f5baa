//! `innops convert`: the flags checked and turned into conversion settings (tables, strategy, chunk time, load
//! thresholds), or into a rollback or a drop of the kept table, then the plan run.

use super::env::{attach_error_log, env_from};
use super::{bench_time, run_options, run_plan, with_bench_during};
use crate::cli::ConvertArgs;
use crate::error::{bad_input, refused};
use crate::plan::guard::Threshold;
use crate::procedures;
use crate::server::facts::ServerFacts;

pub fn run(a: &ConvertArgs) -> anyhow::Result<()> {
    check_convert_flags(a)?;
    let mut env = env_from(
        &a.conn,
        &Default::default(),
        a.fmt.format,
        bench_time(&a.bench),
    )?;
    let mut conn = env.plan_env.target.connect()?;
    let facts = ServerFacts::collect(&mut conn)?;
    facts.supported().map_err(refused)?;
    attach_error_log(&mut env, &facts);
    let opts = run_options(&a.run, Some(&a.bench));
    let asked = binlog_asked(a)?;
    let plan = if let Some(t) = &a.drop_kept {
        let (schema, table) = procedures::convert::parse_table_arg(t).ok_or_else(|| {
            bad_input(format!(
                "--drop-kept '{t}' does not name a table: write db.table (the converted table, not the kept one)"
            ))
        })?;
        procedures::convert::drop_kept::plan(&schema, &table, &asked, &facts, &env.plan_env)?
    } else if let Some(t) = &a.rollback {
        let (schema, table) = procedures::convert::parse_table_arg(t).ok_or_else(|| {
            bad_input(format!(
                "--rollback '{t}' does not name a table: write db.table (with backquotes around a name that holds a dot)"
            ))
        })?;
        procedures::convert::rollback::plan(&schema, &table, &asked, &facts, &env.plan_env)?
    } else {
        let params = convert_params(a, &mut conn)?;
        procedures::convert::plan(&params, &facts, &env.plan_env)?
    };
    // An idle session of innops's own would show among the sessions a lock wait names.
    drop(conn);
    run_plan(with_bench_during(plan, &a.bench)?, &env, &opts, None)
}

/// The conversion settings of `--tables`/`--all-myisam` and the copy flags (checked by
/// [`check_convert_flags`]), the tables resolved on the server.
pub fn convert_params(
    a: &ConvertArgs,
    conn: &mut mysql::Conn,
) -> anyhow::Result<procedures::convert::ConvertParams> {
    let (tables, skipped) = procedures::convert::resolve(conn, &a.tables, a.all_myisam)?;
    let (max_load, critical_load) = load_thresholds(a)?;
    Ok(procedures::convert::ConvertParams {
        tables,
        strategy: procedures::convert::Strategy::parse(&a.strategy)?,
        drop_old: a.drop_old_table,
        chunk_ms: chunk_ms(a)?,
        max_load,
        critical_load,
        skipped,
        restart: a.restart,
        described: Vec::new(),
        verify: procedures::convert::verify::Choice::parse(&a.verify)?,
        binlog: binlog_asked(a)?.binlog,
        yes: a.run.yes,
        watch: procedures::kit::replicas::Watch {
            max_lag_s: a.max_lag,
            critical_lag_s: a.critical_lag,
            named: a.replicas.clone(),
        },
        online: procedures::convert::online::OnlineSettings {
            above_bytes: crate::units::parse_size(&a.online_above).map_err(|e| {
                bad_input(format!(
                    "--online-above '{}' is not a size ({e}): give bytes, or a number with K, M or G",
                    a.online_above
                ))
            })?,
            lock_wait_s: a.cutover_lock_wait,
            ..Default::default()
        },
    })
}

/// `--binlog` and `--yes`, as the plans record them.
fn binlog_asked(a: &ConvertArgs) -> anyhow::Result<procedures::kit::binlog::Asked> {
    Ok(procedures::kit::binlog::Asked {
        binlog: a
            .binlog
            .as_deref()
            .map(procedures::kit::binlog::Mode::parse)
            .transpose()
            .map_err(bad_input)?,
        yes: a.run.yes,
    })
}

/// `--chunk-time` in milliseconds (it takes pt-osc's seconds too: [`crate::units::parse_millis`]).
fn chunk_ms(a: &ConvertArgs) -> anyhow::Result<u64> {
    crate::units::parse_millis(&a.chunk_time).map_err(bad_input)
}

/// The copy-chunk duration innops accepts, in milliseconds.
pub const CHUNK_TIME_MS: std::ops::RangeInclusive<u64> = 10..=60_000;

/// Convert's flags that contradict each other or are out of range are bad input, never clamped.
pub fn check_convert_flags(a: &ConvertArgs) -> anyhow::Result<()> {
    if a.tables.is_empty() && !a.all_myisam && a.rollback.is_none() && a.drop_kept.is_none() {
        return Err(bad_input(
            "convert needs to know which tables: --tables db.t[,db.*] to convert them, --all-myisam for every MyISAM table, --rollback db.t to swap a conversion back, or --drop-kept db.t to drop the MyISAM table a conversion kept",
        ));
    }
    if a.all_myisam && !a.tables.is_empty() {
        return Err(bad_input(
            "--tables and --all-myisam both choose the tables to convert: give one",
        ));
    }
    if a.critical_lag < a.max_lag {
        return Err(bad_input(format!(
            "--critical-lag {} is below --max-lag {}: the copy would stop before it ever paused; give a --critical-lag above --max-lag",
            a.critical_lag, a.max_lag
        )));
    }
    for r in &a.replicas {
        procedures::kit::replicas::parse_dsn(r).map_err(bad_input)?;
    }
    let chunk_time = chunk_ms(a)?;
    if !CHUNK_TIME_MS.contains(&chunk_time) {
        return Err(bad_input(format!(
            "--chunk-time {} is out of range: give milliseconds from {} to {}",
            a.chunk_time,
            CHUNK_TIME_MS.start(),
            CHUNK_TIME_MS.end()
        )));
    }
    if !(1..=60).contains(&a.cutover_lock_wait) {
        return Err(bad_input(format!(
            "--cutover-lock-wait {} is out of range: give seconds from 1 to 60",
            a.cutover_lock_wait
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
fn load_thresholds(a: &ConvertArgs) -> anyhow::Result<(Threshold, Threshold)> {
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
