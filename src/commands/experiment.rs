//! `innops experiment [STUDY.toml] --set VAR=v1,v2 … --table-option '…'`: the study file read (if any), the flags
//! laid over it (a flag given wins over the file's field), each variable's baseline read, the plan built and run.

use super::env::{attach_error_log, env_from};
use super::{run_options, run_plan, study};
use crate::cli::{ExperimentArgs, KeepArg};
use crate::plan::guard::Threshold;
use crate::procedures::experiment::{self, ExperimentParams, StudyInfo};
use crate::server::facts::ServerFacts;

/// The defaults of the flags a study file may also give.
const WORKLOAD: &str = "oltp_read_write";
const THREADS: u32 = 4;
const TIME_S: u64 = 10;
const ROUNDS: u32 = 3;
const WARMUP_S: u64 = 2;

pub fn run(a: &ExperimentArgs) -> anyhow::Result<()> {
    let mut p = params(a)?;
    // The control flags say how to restart the server for restart variables (the preflight refuses those
    // without them, naming the flags).
    let mut env = env_from(&a.conn, &a.control, a.fmt.format, None)?;
    let mut conn = env.plan_env.target.connect()?;
    let facts = ServerFacts::collect(&mut conn)?;
    // After attach_error_log: it learns whether a loopback server really runs on this host.
    attach_error_log(&mut env, &facts);
    if experiment::cores::any_relative(&p.sets) {
        let (count, from) = experiment::cores::server_cores(&mut conn, env.plan_env.target.local)?;
        p.cores = Some(experiment::cores::resolve(&mut p.sets, count, &from)?);
    }
    (p.baseline, p.restart_vars) = experiment::baseline(&mut conn, &facts, &p.sets)?;
    drop(conn);
    let plan = experiment::plan(&p, &facts, &env.plan_env)?;
    run_plan(plan, &env, &run_options(&a.run, None), None)
}

/// The experiment's parameters: the study file's fields, each overridden by its flag when the flag is given,
/// then the defaults; checked as far as they can be without a server.
fn params(a: &ExperimentArgs) -> anyhow::Result<ExperimentParams> {
    let file = a.study.as_deref().map(study::read).transpose()?;
    let s = file.unwrap_or_default();
    let sets = if a.set.is_empty() {
        s.sets
    } else {
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
        sets
    };
    // --table-option or --column-variant on the command line replaces the file's table variants, both kinds.
    let tables = if a.table_option.is_empty() && a.column_variant.is_empty() {
        s.tables
    } else {
        let all: Vec<String> = a
            .table_option
            .iter()
            .cloned()
            .chain(a.column_variant.iter().map(|c| study::column_text(c)))
            .collect();
        experiment::table_opts::parse_all(&all)?
            .iter()
            .map(|t| t.canonical())
            .collect()
    };
    // --workload or --workload-sql on the command line replaces both fields of the file.
    let sql = match (&a.workload_sql, &a.workload) {
        (Some(f), _) => Some(read_sql(f)?),
        (None, Some(_)) => None,
        (None, None) => s.sql,
    };
    // --threads on the command line replaces the file's threads, one count or several.
    let counts: Vec<u32> = if a.threads.is_empty() {
        s.threads.clone()
    } else {
        a.threads.clone()
    };
    let p = ExperimentParams {
        sets,
        zip: a.zip || s.zip,
        baseline: Vec::new(),
        workload: match &sql {
            Some(w) => w.name(),
            None => a
                .workload
                .clone()
                .or(s.workload)
                .unwrap_or_else(|| WORKLOAD.into()),
        },
        threads: counts.first().copied().unwrap_or(THREADS),
        thread_counts: if counts.len() > 1 {
            counts.clone()
        } else {
            Vec::new()
        },
        group: None,
        time_s: a.time.or(s.time).unwrap_or(TIME_S),
        rounds: a.rounds.or(s.rounds).unwrap_or(ROUNDS),
        warmup_s: a.warmup.or(s.warmup).unwrap_or(WARMUP_S),
        rate: a.rate.or(s.rate).unwrap_or(0),
        keep_best: a.keep == Some(KeepArg::Best) || s.keep_best,
        restart_vars: Vec::new(),
        tables,
        install_engine: a.install_engine,
        max_load: a
            .max_load
            .as_deref()
            .map(Threshold::parse)
            .transpose()?
            .or(s.max_load),
        critical_load: a
            .critical_load
            .as_deref()
            .map(Threshold::parse)
            .transpose()?
            .or(s.critical_load),
        sql,
        study: a.study.as_ref().map(|f| StudyInfo {
            file: f.display().to_string(),
            title: s.title,
            description: s.description,
        }),
        cores: None,
    };
    let g = p.guard();
    if g.max.variable.eq_ignore_ascii_case(&g.critical.variable) && g.max.value > g.critical.value {
        return Err(crate::error::bad_input(format!(
            "--max-load {}={} is above --critical-load {}={}: the experiment would stop before it ever paused; lower --max-load or raise --critical-load",
            g.max.variable, g.max.value, g.critical.variable, g.critical.value
        )));
    }
    experiment::check_shape(&p).map_err(|e| match &a.study {
        Some(f) => {
            crate::error::bad_input(format!("{}: {}", f.display(), crate::error::display_of(&e)))
        }
        None => e,
    })?;
    Ok(p)
}

/// `--workload-sql FILE`, read and checked.
pub fn read_sql(file: &std::path::Path) -> anyhow::Result<experiment::workload_sql::SqlWorkload> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        crate::error::bad_input(format!(
            "cannot read the SQL workload {}: {e}: give the path of a file of SQL statements",
            file.display()
        ))
    })?;
    experiment::workload_sql::SqlWorkload::from_text(&file.display().to_string(), &text)
}
