//! `innops readonly [--undo] [--min-redo] [--sql-read-only]`: the read-only switch and its way back.

use super::env::{attach_error_log, env_from};
use super::{bench_time, run_options, run_plan, with_bench_during};
use crate::cli::ReadonlyArgs;
use crate::procedures::readonly::{self, ReadonlyParams};
use crate::server::facts::ServerFacts;

pub fn run(a: &ReadonlyArgs) -> anyhow::Result<()> {
    let params = readonly_params(a);
    let mut env = env_from(&a.conn, &a.control, a.fmt.format, bench_time(&a.bench))?;
    let facts = ServerFacts::collect(&mut env.plan_env.target.connect()?)?;
    attach_error_log(&mut env, &facts);
    let plan = readonly::plan(&params, &facts, &env.plan_env)?;
    run_plan(
        with_bench_during(plan, &a.bench)?,
        &env,
        &run_options(&a.run, Some(&a.bench)),
        None,
    )
}

/// The read-only settings of the flags.
pub fn readonly_params(a: &ReadonlyArgs) -> ReadonlyParams {
    ReadonlyParams {
        undo: a.undo,
        min_redo: a.min_redo,
        sql_read_only: a.sql_read_only,
        preflush: !a.no_preflush,
        preflush_timeout_s: a.preflush_timeout,
    }
}
