//! `innops redo`: `--advise` measures and recommends a size; `--size` plans the resize and runs it.

use std::time::Duration;

use super::env::{attach_error_log, env_from};
use super::{bench_time, run_options, run_plan, with_bench_during};
use crate::cli::{Format, RedoArgs};
use crate::procedures;
use crate::server::facts::ServerFacts;

pub fn run(a: &RedoArgs) -> anyhow::Result<()> {
    if a.size.is_none() && !a.advise {
        return Err(crate::error::bad_input(
            "redo needs a size or a question: --size 2G to resize the redo log to 2G, or --advise to measure the write rate and recommend a size",
        ));
    }
    let mut env = env_from(&a.conn, &a.control, a.fmt.format, bench_time(&a.bench))?;
    if a.advise {
        let adv = procedures::redo::advise(
            &env.plan_env.target,
            Duration::from_secs(a.interval),
            &env.plan_env.flags(),
        )?;
        match env.format {
            Format::Json => println!("{}", serde_json::to_string_pretty(&adv)?),
            Format::Text => print!("{}", procedures::redo::render_advice(&adv)),
        }
        return Ok(());
    }
    let params = procedures::redo::params(a.size.as_deref().unwrap_or_default(), a.offline)?;
    let facts = ServerFacts::collect(&mut env.plan_env.target.connect()?)?;
    attach_error_log(&mut env, &facts);
    let plan = procedures::redo::plan(&params, &facts, &env.plan_env)?;
    run_plan(
        with_bench_during(plan, &a.bench)?,
        &env,
        &run_options(&a.run, Some(&a.bench)),
        None,
    )
}
