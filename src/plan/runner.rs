//! The runner: shows a plan (a dry run that still runs every read-only pre-check) or executes it, step by step:
//! pre-checks → benchmark before (once) → act → post-checks → benchmark after (once) → journal. It stops at a
//! safe point on Ctrl-C and, given a journal, continues an interrupted run.

mod steps;

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

use crate::error::{Failure, EXIT_INCOMPLETE, EXIT_INTERRUPTED};
use crate::plan::journal::{self, EventKind, PlanFile, RecordedOptions, RunDir};
use crate::plan::lock::Locks;
use crate::plan::report::{Report, RunStatus};
use crate::plan::{Check, Ctx, Plan, Verdict};
use crate::server::connect::Target;
use crate::server::control::Control;

/// How to run a plan.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub execute: bool,
    /// Restart and destructive steps may run without a prompt.
    pub yes: bool,
    pub run_dir: Option<PathBuf>,
    pub no_bench: bool,
}

/// Show or execute `plan`. `resume` names the run directory of an interrupted run to continue.
pub fn run(
    plan: Plan,
    target: &Target,
    control: Option<&Control>,
    opts: &RunOptions,
    abort: &AtomicBool,
    resume: Option<PathBuf>,
) -> (Report, anyhow::Result<()>) {
    let previews = plan.previews();
    let mut report = Report::new(
        plan.header.procedure,
        &plan.header.target,
        &plan.header.server,
        plan.header.notes.clone(),
        &previews,
    );
    // An executed run's sessions start with the plan's statements (a dry run writes nothing).
    let in_session =
        (opts.execute && !plan.session.is_empty()).then(|| target.with_session(&plan.session));
    let target = in_session.as_ref().unwrap_or(target);
    let mut ctx = Ctx::new(target, control, plan.header.procedure, abort);
    if let Some(threads) = bench_during(&plan) {
        match during_spec(&plan, opts, threads) {
            Ok(d) => report.notes.push(format!(
                "--bench-during: {} ({} thread(s){}) runs from the first step to the last, one line a second, and gives the figures before and after",
                d.workload.workload,
                d.workload.threads,
                d.probe
                    .as_ref()
                    .map(|p| format!(", and {} locking reads a second standing for the table's writers", p.rate))
                    .unwrap_or_default()
            )),
            Err(e) => {
                report.status = RunStatus::Refused;
                report.message = Some(crate::error::display_of(&e));
                return (report, Err(e));
            }
        }
    }
    if !opts.execute {
        if let Some(b) = plan
            .bench
            .as_ref()
            .filter(|b| b.during.is_none() && !opts.no_bench)
        {
            report.notes.push(bench_note(b));
        }
        let r = dry_run(&plan, &mut ctx, &mut report);
        return (report, r);
    }
    let r = execute(plan, &mut ctx, &mut report, opts, resume);
    (report, r)
}

/// What the benchmark before and after will do to the server, for a dry run to say.
pub fn bench_note(b: &crate::bench::PlanBench) -> String {
    format!(
        "benchmark: --execute creates the schema {} ({} table(s) × {} rows, on first use; it stays for later runs) and runs {} with {} thread(s) for {} s before the first changing step and {} s after the last ({} s of load in all); --no-bench skips it",
        crate::sql::quote_ident(&b.db),
        b.tables,
        b.table_size,
        b.workload,
        b.threads,
        b.time.as_secs(),
        b.time.as_secs(),
        2 * b.time.as_secs()
    )
}

/// `--bench-during`: the plan's benchmark runs for the whole plan with `threads` threads, and its "before" and
/// "after" figures are taken from it ([`crate::bench::during`]). Refused (bad input) when the plan has no
/// benchmark or `no_bench` skips it.
pub fn set_bench_during(plan: &mut Plan, threads: u32, no_bench: bool) -> anyhow::Result<()> {
    if !(1..=crate::bench::during::MAX_THREADS).contains(&threads) {
        return Err(crate::error::bad_input(format!(
            "--bench-during-threads {threads} is out of range: give 1 to {}",
            crate::bench::during::MAX_THREADS
        )));
    }
    let probe = RunOptions {
        no_bench,
        ..Default::default()
    };
    during_spec(plan, &probe, threads)?;
    if let Some(b) = plan.bench.as_mut() {
        b.during = Some(threads);
    }
    Ok(())
}

/// The threads of the workload beside the plan, when it has one.
fn bench_during(plan: &Plan) -> Option<u32> {
    plan.bench.as_ref().and_then(|b| b.during)
}

/// The workload that runs beside the plan, or why `--bench-during` cannot be honoured.
fn during_spec(
    plan: &Plan,
    opts: &RunOptions,
    threads: u32,
) -> anyhow::Result<crate::bench::during::DuringSpec> {
    if opts.no_bench {
        return Err(crate::error::bad_input(
            "--bench-during runs the plan's benchmark workload through the whole plan and --no-bench skips it: drop one of them",
        ));
    }
    let Some(bench) = &plan.bench else {
        let why = match plan.header.procedure.why_no_workload() {
            Some(why) => format!(" ({why})"),
            None => String::new(),
        };
        return Err(crate::error::bad_input(format!(
            "--bench-during runs the plan's benchmark workload through the whole plan, and this {} plan has none{why}: drop --bench-during",
            plan.header.procedure
        )));
    };
    crate::bench::during::DuringSpec::of(bench, threads, plan.header.procedure.name())
}

/// Run checks in order. A check that cannot run (the server went away, a lock wait ran out) has not proven
/// anything: it fails, with what stopped it, rather than ending the run with an internal error.
fn run_checks(ctx: &mut Ctx, checks: &[Check], dry: bool) -> Vec<Verdict> {
    let mut out = Vec::new();
    for c in checks {
        let mut v = if dry && c.needs_prior {
            Verdict {
                deferred: true,
                ..Verdict::pass("runs after the earlier steps", "checked at execution")
            }
        } else {
            (c.run)(ctx).unwrap_or_else(|e| {
                if crate::plan::lock::is_lock_wait_timeout(&e) {
                    let who = ctx
                        .conn()
                        .and_then(crate::plan::lock::lock_holder_candidates)
                        .unwrap_or_default();
                    let why = format!(
                        "a table lock was not granted within {} s",
                        crate::plan::CHECK_LOCK_WAIT_S
                    );
                    return Verdict::fail(
                        format!("could not check: {why}"),
                        "the check runs",
                        format!("the check \"{}\" could not run ({why}; sessions that may hold it: {who}): wait for that session to finish or end it, then run the command again", c.name),
                    );
                }
                let why = crate::error::display_of(&e);
                Verdict::fail(
                    format!("could not check: {why}"),
                    "the check runs",
                    format!("the check \"{}\" could not run ({why}): fix that and run the command again", c.name),
                )
            })
        };
        v.check = c.name.clone();
        out.push(v);
    }
    out
}

/// A resumed run continues exactly the plan it started: `plan.json` unchanged, and the plan built again from
/// it has the same steps.
fn check_same_plan(dir: &std::path::Path, plan: &Plan) -> anyhow::Result<()> {
    let events = journal::read_journal(dir)?;
    journal::check_plan_unchanged(dir, &events)?;
    let recorded = journal::read_plan(dir)?;
    let then: Vec<&str> = recorded.steps.iter().map(|s| s.id.as_str()).collect();
    let now: Vec<&str> = plan.steps.iter().map(|s| s.id.as_str()).collect();
    if then != now {
        return Err(Failure::Refused(format!(
            "the plan built again for this run has other steps ({}) than the run started with ({}): the server changed under the run; check it by hand and start a new run",
            now.join(", "),
            then.join(", ")
        ))
        .into());
    }
    Ok(())
}

/// Whether a dry run's step would act: it has an action and no pre-check found its work already done (a
/// deferred check, which runs only at execution, may still find it done then).
fn would_act(has_action: bool, pre: &[Verdict]) -> bool {
    has_action && !pre.iter().any(|v| v.already_done)
}

fn first_failure(vs: &[Verdict]) -> Option<&Verdict> {
    vs.iter().find(|v| !v.passed)
}

/// `group: why; group: why`.
fn each_refused(refused: &[(String, String)]) -> String {
    refused
        .iter()
        .map(|(g, why)| format!("{g}: {why}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// How many groups the plan's steps form (see `Step::group`).
fn group_count(plan: &Plan) -> usize {
    plan.steps
        .iter()
        .filter_map(|s| s.group.as_ref())
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}

/// The group a refusal of step `i` refuses alone, the others going on: when `i` is its group's first step
/// (nothing of the group has acted) and the plan has other groups.
fn refusable_group(plan: &Plan, i: usize, groups: usize) -> Option<&String> {
    let g = plan.steps[i].group.as_ref()?;
    (groups > 1 && plan.steps.iter().position(|s| s.group.as_ref() == Some(g)) == Some(i))
        .then_some(g)
}

fn dry_run(plan: &Plan, ctx: &mut Ctx, report: &mut Report) -> anyhow::Result<()> {
    let mut refusal = Locks::new(plan.header.procedure, plan.locks.clone())
        .taken(ctx.target)
        .ok()
        .flatten();
    // As execution does (see `Step::group`): a group refused at its first step is skipped, the others go on.
    let groups = group_count(plan);
    let mut refused_groups: Vec<(String, String)> = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        ctx.step = step.id.clone();
        let verdicts = run_checks(ctx, &step.pre, true);
        let skipped = |r: &[(String, String)]| {
            step.group
                .as_ref()
                .is_some_and(|g| r.iter().any(|(x, _)| x == g))
        };
        if refusal.is_none() && !skipped(&refused_groups) {
            if let Some(v) = first_failure(&verdicts) {
                let why = v.fix.clone().unwrap_or_default();
                let first_of_group = refusable_group(plan, i, groups);
                match first_of_group {
                    Some(g) => refused_groups.push((g.clone(), why)),
                    None => {
                        refusal = Some(format!("step {} would be refused: {why}", step.id));
                    }
                }
            }
        }
        // Execution would stop at the first refused step: neither it nor any after it would act.
        if refusal.is_none()
            && !skipped(&refused_groups)
            && would_act(step.act.is_some(), &verdicts)
        {
            report.mark_acts(&step.id);
        }
        let sr = report.step_mut(&step.id);
        sr.pre = verdicts;
        sr.post = step
            .post
            .iter()
            .map(|c| Verdict {
                check: c.name.clone(),
                deferred: true,
                ..Verdict::pass("runs after the step acts", "checked at execution")
            })
            .collect();
    }
    if refusal.is_none() && !refused_groups.is_empty() {
        refusal = Some(format!(
            "{} of {groups} would be refused, every other one would go on: {}",
            refused_groups.len(),
            each_refused(&refused_groups)
        ));
    }
    match refusal {
        Some(msg) => {
            report.status = RunStatus::Refused;
            report.message = Some(msg.clone());
            Err(Failure::Refused(msg).into())
        }
        None => Ok(()),
    }
}

fn confirm(plan: &Plan, opts: &RunOptions, report: &Report) -> anyhow::Result<()> {
    let risky: Vec<String> = plan
        .steps
        .iter()
        .filter(|s| s.risk.needs_confirmation())
        .map(|s| format!("{} ({})", s.id, s.risk.as_str()))
        .collect();
    if risky.is_empty() || opts.yes {
        return Ok(());
    }
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(Failure::Refused(format!(
            "the plan has steps that stop the server or overwrite data ({}) and stdin is not a terminal: pass --yes to allow them",
            risky.join(", ")
        ))
        .into());
    }
    // The DBA confirms what was shown: the plan first, then the question.
    eprint!(
        "{}",
        crate::progress::paint(&report.render_text(), crate::progress::colour_on(false))
    );
    eprint!(
        "\nThe plan will run {}. Type 'yes' to go on: ",
        risky.join(", ")
    );
    std::io::stderr().flush().ok();
    let mut line = String::new();
    stdin.lock().read_line(&mut line)?;
    if line.trim() != "yes" {
        return Err(
            Failure::Refused("not confirmed at the prompt: nothing was changed".into()).into(),
        );
    }
    Ok(())
}

fn execute(
    plan: Plan,
    ctx: &mut Ctx,
    report: &mut Report,
    opts: &RunOptions,
    resume: Option<PathBuf>,
) -> anyhow::Result<()> {
    report.executed = true;
    report.status = RunStatus::Running;
    if let Some(dir) = &resume {
        check_same_plan(dir, &plan)?;
    }
    confirm(&plan, opts, report)?;
    // Before anything is created or changed: a second run of the same object stops here.
    let mut locks = Locks::new(plan.header.procedure, plan.locks.clone());
    locks.ensure(ctx.target)?;
    let (mut rd, prior) = open_run_dir(&plan, opts, resume.as_deref())?;
    if resume.is_some() {
        carry_prior(&rd.path, report);
    }
    report.run_dir = Some(rd.path.display().to_string());
    ctx.run_dir = Some(rd.path.clone());
    let during = start_during(&plan, opts, ctx.target, &rd);
    ctx.own_sessions = during
        .as_ref()
        .ok()
        .and_then(|d| d.as_ref())
        .map_or(0, |d| d.spec().sessions());
    let result = match &during {
        Ok(d) => steps::Execution {
            plan: &plan,
            ctx,
            report,
            opts,
            rd: &mut rd,
            prior: prior.as_ref(),
            locks: &mut locks,
            during: d.as_ref(),
            groups: group_count(&plan),
            refused_groups: Vec::new(),
        }
        .steps(),
        Err(e) => Err(anyhow::anyhow!(
            "the workload beside the plan could not start: {}",
            crate::error::display_of(e)
        )),
    };
    if let Ok(Some(d)) = during {
        d.stop();
    }
    ctx.own_sessions = 0;
    // A guard still held ends with the run.
    ctx.release_all_blocks();
    report.write_blocks.append(&mut ctx.write_blocks);
    report.downtime.append(&mut ctx.downtime);
    for line in ctx.outcome.drain(..) {
        if !report.outcome.contains(&line) {
            report.outcome.push(line);
        }
    }
    // Every step done: what they made may still fall short of the aim (a dump with losses).
    let result = result.and_then(|()| shortfall(&plan, ctx));
    let status = status_of(&result);
    report.status = status;
    if let Err(e) = &result {
        report.message = Some(crate::error::display_of(e));
    }
    rd.log(EventKind::RunDone { status })?;
    if bench_during(&plan).is_some() && !opts.no_bench {
        let titles = report
            .steps
            .iter()
            .map(|s| (s.id.clone(), s.title.clone()))
            .collect();
        report.during =
            crate::plan::report::impact::report_of(&rd.path, &titles, report.bench.before.as_ref());
    }
    rd.write_json("report.json", report)?;
    crate::plan::report::html::write_report(&rd.path, report)?;
    result
}

/// A resumed run's report keeps what the interrupted attempts measured: their blocked writes, their downtime and
/// their summary lines (a line the resumed step says again is kept once), so the totals cover the whole run.
fn carry_prior(dir: &std::path::Path, report: &mut Report) {
    let Ok(text) = std::fs::read_to_string(dir.join("report.json")) else {
        return;
    };
    let Ok(prior) = serde_json::from_str::<Report>(&text) else {
        return;
    };
    report.write_blocks = prior.write_blocks;
    report.downtime = prior.downtime;
    report.outcome = prior.outcome;
    report.warnings = prior.warnings;
    report.experiment = prior.experiment;
}

/// The run directory: the interrupted run's, reopened with the progress its journal records, or a new one
/// with `plan.json` written.
fn open_run_dir(
    plan: &Plan,
    opts: &RunOptions,
    resume: Option<&std::path::Path>,
) -> anyhow::Result<(RunDir, Option<journal::Progress>)> {
    if let Some(dir) = resume {
        let events = journal::read_journal(dir)?;
        let progress = journal::progress(&events);
        let mut rd = RunDir::open(dir)?;
        rd.log(EventKind::Resumed {
            after_step: progress.done.last().cloned(),
        })?;
        return Ok((rd, Some(progress)));
    }
    let path = opts
        .run_dir
        .clone()
        .unwrap_or_else(|| RunDir::default_path(plan.header.procedure.name()));
    let file = PlanFile {
        header: plan.header.clone(),
        steps: plan.previews(),
        created: chrono::Utc::now(),
        options: RecordedOptions {
            no_bench: opts.no_bench,
            yes: opts.yes,
            bench_time_s: plan.bench.as_ref().map(|b| b.time.as_secs()),
            bench_during: bench_during(plan),
        },
    };
    Ok((RunDir::create(&path, &file)?, None))
}

/// The workload beside the plan (`--bench-during`), started before the first step (it stops after the last);
/// None when the plan has none or `--no-bench` skips it.
fn start_during(
    plan: &Plan,
    opts: &RunOptions,
    target: &Target,
    rd: &RunDir,
) -> anyhow::Result<Option<crate::bench::during::During>> {
    match bench_during(plan).filter(|_| !opts.no_bench) {
        Some(threads) => during_spec(plan, opts, threads)
            .and_then(|spec| {
                say(&format!(
                    "[bench] during: {} with {} thread(s) until the plan ends",
                    spec.workload.workload, spec.workload.threads
                ));
                crate::bench::during::During::start(target, spec, &rd.path)
            })
            .map(Some),
        None => Ok(None),
    }
}

/// How an executed run stands, from how it ended.
fn status_of(result: &anyhow::Result<()>) -> RunStatus {
    match result {
        Ok(()) => RunStatus::Done,
        Err(e) => match crate::error::exit_code_of(e) {
            EXIT_INTERRUPTED => RunStatus::Interrupted,
            // Every step finished: the run is done, and its message says what fell short.
            EXIT_INCOMPLETE => RunStatus::Done,
            1 => RunStatus::Refused,
            _ => RunStatus::Failed,
        },
    }
}

/// One line of what the run is doing, on stderr as it happens (stdout carries the report).
fn say(line: &str) {
    crate::progress::say(line);
}

/// The sentences of every step whose work falls short of the plan's aim, as one [`Failure::Incomplete`]; a
/// shortfall that cannot be judged is reported as such, never taken for success.
fn shortfall(plan: &Plan, ctx: &mut Ctx) -> anyhow::Result<()> {
    let mut said = Vec::new();
    for step in &plan.steps {
        let Some(f) = &step.shortfall else { continue };
        ctx.step = step.id.clone();
        match f(ctx) {
            Ok(Some(s)) => said.push(s),
            Ok(None) => {}
            Err(e) => said.push(format!(
                "step {} could not judge its result ({})",
                step.id,
                crate::error::display_of(&e)
            )),
        }
    }
    if said.is_empty() {
        Ok(())
    } else {
        Err(Failure::Incomplete(said.join("; ")).into())
    }
}

/// Run the step's recovery after a failure; the sentence says what state it left.
fn recover(step: &crate::plan::Step, ctx: &mut Ctx) -> Option<String> {
    let r = step.recover.as_ref()?;
    Some(
        r(ctx)
            .unwrap_or_else(|re| format!("Recovery failed too: {}", crate::error::display_of(&re))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dry_run_says_what_the_benchmark_will_load_the_server_with() {
        let b = crate::bench::PlanBench {
            workload: "oltp_read_write".into(),
            threads: 4,
            time: std::time::Duration::from_secs(10),
            seed: 1,
            db: "innops_bench".into(),
            table_size: 10_000,
            tables: 1,
            rand_type: Default::default(),
            during: None,
        };
        let n = bench_note(&b);
        assert!(
            n.contains("creates the schema `innops_bench` (1 table(s) × 10000 rows"),
            "{n}"
        );
        assert!(
            n.contains("oltp_read_write with 4 thread(s) for 10 s before")
                && n.contains("(20 s of load in all)"),
            "{n}"
        );
    }

    #[test]
    fn a_dry_run_step_would_act_unless_it_only_checks_or_is_already_done() {
        let pass = Verdict::pass("x", "x");
        let done = Verdict::done("size 128M", "128M");
        let deferred = Verdict {
            deferred: true,
            ..Verdict::pass("runs after the earlier steps", "checked at execution")
        };
        assert!(would_act(true, std::slice::from_ref(&pass)));
        assert!(would_act(true, &[]));
        assert!(would_act(true, &[pass.clone(), deferred]));
        assert!(!would_act(true, &[pass.clone(), done.clone()]));
        assert!(!would_act(false, &[pass]));
        assert!(!would_act(false, &[done]));
    }
}
