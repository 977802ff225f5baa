//! `innops experiment --set VAR=v1,v2 … --table-option '…'`: the flags checked, each variable's baseline read, the plan built and
//! run.

use super::env::{attach_error_log, env_from};
use super::{run_options, run_plan};
use crate::cli::{ExperimentArgs, KeepArg};
use crate::procedures::experiment::{self, ExperimentParams};
use crate::server::facts::ServerFacts;

pub fn run(a: &ExperimentArgs) -> anyhow::Result<()> {
    let sets = a
        .set
        .iter()
        .map(|s| experiment::parse_set(s))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for (i, s) in sets.iter().enumerate() {
        if sets[..i].iter().any(|o| o.name == s.name) {
            return Err(crate::error::bad_input(format!(
                "--set names {} twice: give all its values in one --set {}=v1,v2",
                s.name, s.name
            )));
        }
    }
    let mut p = ExperimentParams {
        sets,
        baseline: Vec::new(),
        workload: a.workload.clone(),
        threads: a.threads,
        time_s: a.time,
        rounds: a.rounds,
        warmup_s: a.warmup,
        rate: a.rate,
        keep_best: a.keep == Some(KeepArg::Best),
        restart_vars: Vec::new(),
        tables: experiment::table_opts::parse_all(&a.table_option)?
            .iter()
            .map(|t| t.canonical())
            .collect(),
    };
    experiment::check_shape(&p)?;
    // The control flags say how to restart the server for restart variables (the preflight refuses those
    // without them, naming the flags).
    let mut env = env_from(&a.conn, &a.control, a.fmt.format, None)?;
    let mut conn = env.plan_env.target.connect()?;
    let facts = ServerFacts::collect(&mut conn)?;
    (p.baseline, p.restart_vars) = experiment::baseline(&mut conn, &facts, &p.sets)?;
    drop(conn);
    attach_error_log(&mut env, &facts);
    let plan = experiment::plan(&p, &facts, &env.plan_env)?;
    run_plan(plan, &env, &run_options(&a.run, None), None)
}
