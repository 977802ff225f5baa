//! The load guard around an arm's run: before the arm sets its values, wait while the server is above
//! `--max-load` and stop the experiment above `--critical-load`; after a run the guard stopped (the
//! [`super::sampler`] watches it), set the baseline back, say why, and let the arm run again once the load has
//! dropped. A pause waits at most [`MAX_PAUSE`](crate::procedures::convert::copy::MAX_PAUSE), saying why every
//! 10 s; Ctrl-C stops it at once with the variables at their baseline.

use std::time::Instant;

use crate::bench::experiment::Arm;
use crate::error::{refused, Failure};
use crate::plan::Ctx;
use crate::procedures::convert::copy::Pause;

use super::sampler::{self, Guard, Load};
use super::{values, ExperimentParams};

/// Runs of one arm the guard may stop before the experiment gives up on a server that stays busy.
pub const MAX_INTERRUPTED: u32 = 5;

/// Wait while the server is above `--max-load` (each pause recorded in `paused` with its reason and length);
/// refuse above `--critical-load`. The server is at its baseline here: no workload of innops's runs.
pub fn wait(
    ctx: &mut Ctx,
    p: &ExperimentParams,
    g: &Guard,
    paused: &mut Vec<(String, f64)>,
) -> anyhow::Result<()> {
    let tag = ctx.tag();
    let mut pause = Pause::new();
    let mut since: Option<(String, Instant)> = None;
    loop {
        let snap = sampler::status(ctx.conn()?, &tag)?;
        match sampler::decide(snap, g, 0) {
            Load::Go => {
                if let Some((why, t)) = since {
                    paused.push((why, t.elapsed().as_secs_f64()));
                }
                return Ok(());
            }
            Load::Stop(why) => return Err(stopped(ctx, &why)),
            Load::Pause(why) => {
                if ctx.aborted() {
                    values::set_baseline(ctx, &p.online_baseline())?;
                    return Err(Failure::Interrupted(format!(
                        "interrupted during {} while waiting for the load to drop ({why}): every variable set with SET GLOBAL is back at its baseline; the rounds measured so far are kept",
                        ctx.step
                    ))
                    .into());
                }
                since.get_or_insert_with(|| (why.clone(), Instant::now()));
                pause.wait(&why)?;
            }
        }
    }
}

/// The guard stopped arm `arm`'s run (the `n`-th time): the baseline set back, then either the experiment
/// stops (above `--critical-load`, or stopped too often) or the arm is to run again after [`wait`].
pub fn tripped(
    ctx: &mut Ctx,
    p: &ExperimentParams,
    arm: &Arm,
    load: Option<Load>,
    n: u32,
) -> anyhow::Result<()> {
    values::set_baseline(ctx, &p.online_baseline())?;
    let why = match load {
        Some(Load::Stop(why)) => return Err(stopped(ctx, &why)),
        Some(Load::Pause(why)) => why,
        _ => "the load guard stopped it".to_string(),
    };
    if n >= MAX_INTERRUPTED {
        return Err(refused(format!(
            "the load stopped arm {}'s run {n} times ({why}): run the experiment when the server is calmer, or raise --max-load",
            arm.label()
        )));
    }
    crate::progress::print_line(&format!(
        "innops: arm {}'s run in {} was stopped: {why}; its figures are thrown away, every variable is back at its baseline, and it runs again once the load drops",
        arm.label(),
        ctx.step
    ));
    Ok(())
}

/// Above `--critical-load`: the refusal, the variables already at their baseline.
fn stopped(ctx: &Ctx, why: &str) -> anyhow::Error {
    let resume = ctx.run_dir.as_ref().map_or_else(
        || "run the experiment again".to_string(),
        |d| format!("continue with `innops resume {}`", d.display()),
    );
    refused(format!(
        "{why}: the server is overloaded, so innops stopped the experiment at {} with every variable at its baseline and the runs measured so far kept; {resume} when it is calmer, or raise --critical-load",
        ctx.step
    ))
}
