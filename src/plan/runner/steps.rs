//! An executed run going through its steps, one phase of a step at a time: refused groups skipped, the locks
//! taken again, a step done before an interruption recognised, then pre-checks, the benchmark before, the
//! action, post-checks and the benchmark after, each journaled as it happens. Every phase reads and writes the
//! same state (the plan, the context, the report, the run directory, the locks, the progress a resumed run
//! found, the workload beside the plan), so one struct holds it and each phase is a method: no phase takes
//! eight parameters. [`super`] decides between a dry run and an execution and sets a run up and winds it down.

use std::time::Instant;

use super::{each_refused, first_failure, recover, refusable_group, run_checks, say, RunOptions};
use crate::bench::during::During;
use crate::bench::PlanBench;
use crate::error::Failure;
use crate::plan::journal::{BenchPoint, CheckPhase, EventKind, Progress, RunDir};
use crate::plan::lock::Locks;
use crate::plan::report::{Report, StepStatus};
use crate::plan::{Ctx, Plan, Step};

/// An executed run's state while its steps run.
pub(super) struct Execution<'a, 'c> {
    pub(super) plan: &'a Plan,
    pub(super) ctx: &'a mut Ctx<'c>,
    pub(super) report: &'a mut Report,
    pub(super) opts: &'a RunOptions,
    pub(super) rd: &'a mut RunDir,
    /// What the journal says was done before the interruption, when the run resumes.
    pub(super) prior: Option<&'a Progress>,
    pub(super) locks: &'a mut Locks,
    /// The workload beside the plan (`--bench-during`): the figures before and after are slices of it.
    pub(super) during: Option<&'a During>,
    /// How many groups the plan's steps form (see `Step::group`).
    pub(super) groups: usize,
    /// Groups whose first step was refused (see `Step::group`), with why: their other steps are skipped.
    pub(super) refused_groups: Vec<(String, String)>,
}

/// What a step's pre-checks allow.
enum Cleared {
    /// The step goes on; `already_done` when a pre-check found its work already done (it does not act).
    Go { already_done: bool },
    /// The step was refused as the first of its group: the group is refused alone, the others go on.
    GroupRefused,
}

impl<'a, 'c> Execution<'a, 'c> {
    /// Run every step in order, from where a resumed run left off.
    pub(super) fn steps(mut self) -> anyhow::Result<()> {
        // Resuming keeps the figures measured before the crash.
        if let Ok(text) = std::fs::read_to_string(self.rd.path.join("bench/before.json")) {
            self.report.bench.before = serde_json::from_str(&text).ok();
        }
        let plan = self.plan;
        for (i, step) in plan.steps.iter().enumerate() {
            if let Some(g) = &step.group {
                if self.refused_groups.iter().any(|(r, _)| r == g) {
                    self.report.step_mut(&step.id).status = StepStatus::Skipped;
                    continue;
                }
            }
            self.ctx.step = step.id.clone();
            self.take_locks(step)?;
            if self.done_before(i, step)? {
                continue;
            }
            if self.ctx.aborted() {
                return self.interrupted(step, "interrupted before step");
            }
            self.step(i, step)?;
        }
        if !self.refused_groups.is_empty() {
            return Err(Failure::Refused(format!(
                "{} of {} refused, every other one done: {}",
                self.refused_groups.len(),
                self.groups,
                each_refused(&self.refused_groups)
            ))
            .into());
        }
        Ok(())
    }

    /// The plan's benchmark, unless `--no-bench` skips it.
    fn bench(&self) -> Option<&'a PlanBench> {
        if self.opts.no_bench {
            None
        } else {
            self.plan.bench.as_ref()
        }
    }

    /// Whether step `i` is the plan's first measured step (the benchmark before runs after its pre-checks).
    fn first_bench(&self, i: usize) -> bool {
        self.plan.steps.iter().position(|s| s.bench) == Some(i)
    }

    /// Whether step `i` is the plan's last measured step (the benchmark after runs once it is done).
    fn last_bench(&self, i: usize) -> bool {
        self.plan.steps.iter().rposition(|s| s.bench) == Some(i)
    }

    /// After a restart the lock session is gone: take the locks again before the next step; and a plan that is
    /// not server-wide stops while a server-wide run holds the server (its session was lost, and another run
    /// started meanwhile).
    fn take_locks(&mut self, step: &Step) -> anyhow::Result<()> {
        let stop = match self.locks.ensure(self.ctx.target) {
            Ok(()) => self.locks.server_taken().unwrap_or_else(|e| {
                Some(format!(
                    "innops could not look at the server lock ({})",
                    crate::error::display_of(&e)
                ))
            }),
            Err(e) => Some(crate::error::display_of(&e)),
        };
        if let Some(why) = stop {
            self.rd.log(EventKind::Interrupted {
                before_step: step.id.clone(),
            })?;
            return Err(Failure::PostCheck(format!(
                "stopped before step {}: {why}; nothing of that step was done; continue with `innops resume {}` once that is over",
                step.id,
                self.rd.path.display()
            ))
            .into());
        }
        Ok(())
    }

    /// Whether a resumed run finds step `i` done before the interruption, and so does not run it again: the
    /// journal says it was done, or it had started and its post-checks hold now.
    fn done_before(&mut self, i: usize, step: &Step) -> anyhow::Result<bool> {
        let Some(p) = self.prior else {
            return Ok(false);
        };
        if p.done.contains(&step.id) {
            self.report.step_mut(&step.id).status = StepStatus::Done;
            if p.acted.contains(&step.id) {
                self.report.mark_acts(&step.id);
            }
            return Ok(true);
        }
        if p.in_flight.as_deref() != Some(step.id.as_str()) {
            return Ok(false);
        }
        // The step started before the crash: if its post-checks hold, its action completed.
        let post = run_checks(self.ctx, &step.post, false);
        let all_pass = post.iter().all(|v| v.passed);
        for v in &post {
            self.rd.log(EventKind::Check {
                step: step.id.clone(),
                phase: CheckPhase::ResumePost,
                verdict: v.clone(),
            })?;
        }
        if !all_pass {
            return Ok(false);
        }
        // Its action completed before the interruption unless the journal says it was skipped (the
        // `action_done` event itself may be what the interruption lost).
        if step.act.is_some() && !p.skipped.contains(&step.id) {
            self.report.mark_acts(&step.id);
        }
        say(&format!(
            "[{}/{}] {} ({}): done before the interruption, its post-checks hold",
            i + 1,
            self.plan.steps.len(),
            step.title,
            step.id
        ));
        let sr = self.report.step_mut(&step.id);
        sr.post = post;
        sr.status = StepStatus::Done;
        self.rd.log(EventKind::StepDone {
            step: step.id.clone(),
        })?;
        self.rd.write_json("report.json", self.report)?;
        if self.last_bench(i) {
            self.bench_point(BenchPoint::After)?;
        }
        Ok(true)
    }

    /// Stop before `step`, nothing of it done: journaled as an interruption, with how to continue (`when` begins
    /// the sentence). Always an error.
    fn interrupted(&mut self, step: &Step, when: &str) -> anyhow::Result<()> {
        self.rd.log(EventKind::Interrupted {
            before_step: step.id.clone(),
        })?;
        Err(Failure::Interrupted(format!(
            "{when} {}: nothing of that step was done; continue with `innops resume {}`",
            step.id,
            self.rd.path.display()
        ))
        .into())
    }

    /// Step `i`: pre-checks, the benchmark before (at the first measured step), the action, post-checks and the
    /// benchmark after (at the last measured step).
    fn step(&mut self, i: usize, step: &Step) -> anyhow::Result<()> {
        // The benchmark before is a phase of its own, before the first changing step's header: its time,
        // its statements' tag and its span in the report are its own, not the step's.
        if self.first_bench(i) && self.report.bench.before.is_none() {
            self.bench_point(BenchPoint::Before)?;
            if self.ctx.aborted() {
                return self.interrupted(step, "interrupted during the benchmark before step");
            }
        }
        self.rd.log(EventKind::StepStarted {
            step: step.id.clone(),
        })?;
        let started = Instant::now();
        say(&format!(
            "[{}/{}] {} ({}, risk {})",
            i + 1,
            self.plan.steps.len(),
            step.title,
            step.id,
            step.risk.as_str()
        ));
        self.report.step_mut(&step.id).status = StepStatus::Running;
        self.report.step_mut(&step.id).started = Some(chrono::Utc::now());
        self.rd.write_json("report.json", self.report)?;
        let already_done = match self.pre_checks(i, step)? {
            Cleared::Go { already_done } => already_done,
            Cleared::GroupRefused => return Ok(()),
        };
        self.act(step, already_done)?;
        self.post_checks(step, already_done, started)?;
        if self.last_bench(i) {
            self.bench_point(BenchPoint::After)?;
        }
        Ok(())
    }

    /// Step `i`'s pre-checks, journaled. A failing one refuses the step: the run stops, unless the step is the
    /// first of its group, which is then refused alone.
    fn pre_checks(&mut self, i: usize, step: &Step) -> anyhow::Result<Cleared> {
        let pre = run_checks(self.ctx, &step.pre, false);
        for v in &pre {
            self.rd.log(EventKind::Check {
                step: step.id.clone(),
                phase: CheckPhase::Pre,
                verdict: v.clone(),
            })?;
        }
        let refusal = first_failure(&pre).map(|v| {
            v.fix
                .clone()
                .unwrap_or_else(|| format!("{} failed", v.check))
        });
        let already_done = pre.iter().any(|v| v.already_done);
        self.report.step_mut(&step.id).pre = pre;
        let Some(reason) = refusal else {
            return Ok(Cleared::Go { already_done });
        };
        self.rd.log(EventKind::StepRefused {
            step: step.id.clone(),
            reason: reason.clone(),
        })?;
        self.report.step_mut(&step.id).status = StepStatus::Refused;
        let first_of_group = refusable_group(self.plan, i, self.groups);
        if let Some(g) = first_of_group {
            // Nothing of this group has acted: refuse it alone and go on with the others.
            say(&format!("      refused, the others go on: {reason}"));
            self.refused_groups.push((g.clone(), reason));
            self.rd.write_json("report.json", self.report)?;
            return Ok(Cleared::GroupRefused);
        }
        Err(Failure::Refused(format!("step {} refused: {reason}", step.id)).into())
    }

    /// The step's action, journaled; skipped (and journaled so) when a pre-check found its work already done or
    /// the step only checks.
    fn act(&mut self, step: &Step, already_done: bool) -> anyhow::Result<()> {
        let Some(act) = step.act.as_ref().filter(|_| !already_done) else {
            let reason = if already_done {
                "a pre-check found it already done"
            } else {
                "the step only checks"
            };
            self.rd.log(EventKind::ActionSkipped {
                step: step.id.clone(),
                reason: reason.into(),
            })?;
            return Ok(());
        };
        match act(self.ctx) {
            Ok(result) => {
                crate::testhooks::exit_at("before-journal:", &step.id);
                self.report.mark_acts(&step.id);
                self.rd.log(EventKind::ActionDone {
                    step: step.id.clone(),
                    result: result.clone(),
                })?;
                self.report.step_mut(&step.id).result = Some(result);
            }
            Err(e) => return self.action_failed(step, e),
        }
        crate::testhooks::exit_at("after-action:", &step.id);
        crate::testhooks::hold(&format!("after-action:{}", step.id));
        Ok(())
    }

    /// The action failed with `e`: an interruption at a safe point inside it ends the run to be resumed;
    /// anything else runs the step's recovery and ends the run, refused or failed. Always an error.
    fn action_failed(&mut self, step: &Step, e: anyhow::Error) -> anyhow::Result<()> {
        let msg = crate::error::display_of(&e);
        if let Some(Failure::Interrupted(_)) = e.chain().find_map(|c| c.downcast_ref::<Failure>()) {
            // A safe point inside the action: nothing to recover, the step resumes. It may have done part of
            // its work (copied chunks), so it counts as having acted.
            self.report.mark_acts(&step.id);
            self.rd.log(EventKind::Interrupted {
                before_step: step.id.clone(),
            })?;
            self.report.step_mut(&step.id).error = Some(msg.clone());
            return Err(Failure::Interrupted(msg).into());
        }
        let recovery = recover(step, self.ctx);
        self.rd.log(EventKind::StepFailed {
            step: step.id.clone(),
            reason: msg.clone(),
            recovery: recovery.clone(),
        })?;
        let sr = self.report.step_mut(&step.id);
        sr.status = StepStatus::Failed;
        sr.error = Some(msg.clone());
        let state = recovery.map(|r| format!(" — {r}")).unwrap_or_default();
        // A refusal inside the action (a guard) changed nothing; anything else needs a human (Ctrl-C inside the
        // action returned above, before any recovery).
        let kind = e.chain().find_map(|c| c.downcast_ref::<Failure>());
        if !matches!(kind, Some(Failure::Refused(_) | Failure::BadInput(_))) {
            // It may have changed the server before it failed.
            self.report.mark_acts(&step.id);
        }
        Err(match kind {
            Some(Failure::Refused(_) | Failure::BadInput(_)) => {
                Failure::Refused(format!("step {} refused: {msg}{state}", step.id))
            }
            _ => Failure::PostCheck(format!("step {} failed: {msg}{state}", step.id)),
        }
        .into())
    }

    /// The step's post-checks, journaled, and its end: done (or skipped as already done), or failed, its
    /// recovery run, when a post-check fails.
    fn post_checks(
        &mut self,
        step: &Step,
        already_done: bool,
        started: Instant,
    ) -> anyhow::Result<()> {
        // A step a pre-check found already done did not act: its end state was observed by that check, and
        // its post-checks (a clean shutdown, say) may describe an action that was rightly never taken.
        let post = if already_done {
            Vec::new()
        } else {
            run_checks(self.ctx, &step.post, false)
        };
        for v in &post {
            self.rd.log(EventKind::Check {
                step: step.id.clone(),
                phase: CheckPhase::Post,
                verdict: v.clone(),
            })?;
        }
        let failed = first_failure(&post).map(|v| {
            format!(
                "{} (observed {}, expected {}): {}",
                v.check,
                v.observed,
                v.expected,
                v.fix.clone().unwrap_or_default()
            )
        });
        let sr = self.report.step_mut(&step.id);
        sr.post = post;
        sr.seconds = Some(started.elapsed().as_secs_f64());
        self.report.write_blocks.append(&mut self.ctx.write_blocks);
        self.report.downtime.append(&mut self.ctx.downtime);
        if let Some(e) = self.ctx.experiment.take() {
            self.report.experiment = Some(e);
        }
        for line in self.ctx.outcome.drain(..) {
            if !self.report.outcome.contains(&line) {
                self.report.outcome.push(line);
            }
        }
        if let Some(why) = failed {
            let recovery = recover(step, self.ctx);
            self.rd.log(EventKind::StepFailed {
                step: step.id.clone(),
                reason: why.clone(),
                recovery: recovery.clone(),
            })?;
            self.report.step_mut(&step.id).status = StepStatus::Failed;
            let state = recovery.map(|r| format!(" — {r}")).unwrap_or_default();
            return Err(Failure::PostCheck(format!(
                "step {} post-check failed: {why}{state}",
                step.id
            ))
            .into());
        }
        self.rd.log(EventKind::StepDone {
            step: step.id.clone(),
        })?;
        self.report.step_mut(&step.id).status = if already_done {
            StepStatus::Skipped
        } else {
            StepStatus::Done
        };
        say(&if already_done {
            "      skipped: a pre-check found it already done".to_string()
        } else {
            format!(
                "      done in {:.2} s, {} check(s) passed",
                started.elapsed().as_secs_f64(),
                step.pre.len() + step.post.len()
            )
        });
        self.rd.write_json("report.json", self.report)
    }

    /// Measure the benchmark at `label` (before or after), journaled and in the report; nothing without a
    /// benchmark.
    fn bench_point(&mut self, label: BenchPoint) -> anyhow::Result<()> {
        let Some(spec) = self.bench() else {
            return Ok(());
        };
        self.rd.log(EventKind::BenchStarted { label })?;
        // The benchmark's statements carry its own tag; the step's come back after it.
        let step = std::mem::replace(&mut self.ctx.step, format!("bench-{label}"));
        let measured = self.measure(label, spec);
        self.ctx.step = step;
        let result = measured?;
        say(&format!(
            "      {label}: {:.1} tps, p95 {:.2} ms over {:.0} s",
            result.tps, result.latency_ms.p95, result.time_s
        ));
        let file = format!("bench/{label}.json");
        self.rd.write_json(&file, &result)?;
        self.rd.log(EventKind::Bench { label, file })?;
        if label == BenchPoint::Before {
            self.report.bench.before = Some(result);
        } else {
            if let Some(b) = &self.report.bench.before {
                let change = crate::bench::compare(b, &result);
                if let Some(w) = change.regression_warning() {
                    say(&format!("      ⚠ {w}"));
                    self.report.warnings.push(w);
                }
                self.report.bench.change = Some(change);
            }
            self.report.bench.after = Some(result);
        }
        self.rd.write_json("report.json", self.report)
    }

    /// Run the benchmark at `label` (or slice the workload beside the plan), with a timer on the screen.
    fn measure(
        &self,
        label: BenchPoint,
        spec: &PlanBench,
    ) -> anyhow::Result<crate::bench::BenchResult> {
        let secs = spec.time.as_secs();
        let ctx = &*self.ctx;
        match self.during {
            // The figures are the workload beside the plan's, over the same time at the same point.
            Some(d) => {
                say(&format!(
                    "[bench] {label}: {} s of the workload beside the plan ({})",
                    secs,
                    d.spec().workload.workload
                ));
                crate::progress::timed(&format!("[bench] {label}"), secs, false, || {
                    d.slice(label.name(), spec.time, ctx.abort)
                })
            }
            None => {
                say(&format!(
                    "[bench] {label}: {} for {} s",
                    spec.workload, secs
                ));
                crate::progress::timed(&format!("[bench] {label}"), secs, false, || {
                    crate::bench::plan_bench(ctx.target, spec, ctx.procedure.name(), ctx.abort)
                })
            }
        }
    }
}
