//! The plan model: a [`Plan`] is an ordered list of [`Step`]s; each step has read-only checks before it acts
//! (pre), an action, checks that prove it worked (post), a risk level, and a preview of the statements and
//! commands it runs. Procedures build plans; the [`runner`] shows or executes them.

pub mod guard;
pub mod journal;
pub mod lock;
pub mod procedure;
pub mod report;
pub mod runner;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use mysql::Conn;
use serde::{Deserialize, Serialize};

use crate::server::connect::Target;
use crate::server::control::Control;
use crate::server::facts::ServerFacts;

/// How much a step can hurt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Changes nothing.
    Read,
    /// Changes settings or files, no downtime.
    Online,
    /// Blocks writes to a table.
    Locking,
    /// The server goes down.
    Restart,
    /// Drops or overwrites data; needs its own opt-in flag.
    Destructive,
}

impl Risk {
    pub fn needs_confirmation(self) -> bool {
        matches!(self, Risk::Restart | Risk::Destructive)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Read => "read",
            Risk::Online => "online",
            Risk::Locking => "locking",
            Risk::Restart => "restart",
            Risk::Destructive => "destructive",
        }
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub check: String,
    pub passed: bool,
    pub observed: String,
    pub expected: String,
    /// On failure: one sentence of what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// A passing pre-check that finds the step's work already done: the action is skipped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub already_done: bool,
    /// A check that could not run in a dry run because it depends on earlier steps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deferred: bool,
    /// A passing check that found something the DBA should weigh (the step goes on): shown as ⚠, not ✓.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warning: bool,
}

impl Verdict {
    pub fn pass(observed: impl Into<String>, expected: impl Into<String>) -> Verdict {
        Verdict {
            check: String::new(),
            passed: true,
            observed: observed.into(),
            expected: expected.into(),
            fix: None,
            already_done: false,
            deferred: false,
            warning: false,
        }
    }
    /// Passes, with a warning: the step goes on, and the DBA sees ⚠ and what was found.
    pub fn warn(observed: impl Into<String>, expected: impl Into<String>) -> Verdict {
        Verdict {
            warning: true,
            ..Verdict::pass(observed, expected)
        }
    }
    /// The mark a check shows: ✓, ⚠, ✗, or … when it runs later.
    pub fn mark(&self) -> &'static str {
        if self.deferred {
            "…"
        } else if !self.passed {
            "✗"
        } else if self.warning {
            "⚠"
        } else {
            "✓"
        }
    }
    pub fn fail(
        observed: impl Into<String>,
        expected: impl Into<String>,
        fix: impl Into<String>,
    ) -> Verdict {
        Verdict {
            passed: false,
            fix: Some(fix.into()),
            ..Verdict::pass(observed, expected)
        }
    }
    pub fn done(observed: impl Into<String>, expected: impl Into<String>) -> Verdict {
        Verdict {
            already_done: true,
            ..Verdict::pass(observed, expected)
        }
    }
    /// Pass when `ok`, else fail with `fix`.
    pub fn check(
        ok: bool,
        observed: impl Into<String>,
        expected: impl Into<String>,
        fix: impl Into<String>,
    ) -> Verdict {
        if ok {
            Verdict::pass(observed, expected)
        } else {
            Verdict::fail(observed, expected, fix)
        }
    }
}

pub type CheckFn = Box<dyn Fn(&mut Ctx) -> anyhow::Result<Verdict>>;
pub type ActFn = Box<dyn Fn(&mut Ctx) -> anyhow::Result<serde_json::Value>>;
pub type RecoverFn = Box<dyn Fn(&mut Ctx) -> anyhow::Result<String>>;
pub type ShortfallFn = Box<dyn Fn(&mut Ctx) -> anyhow::Result<Option<String>>>;

/// A named read-only check.
pub struct Check {
    pub name: String,
    /// True when the check only makes sense after earlier steps acted; a dry run shows it as deferred.
    pub needs_prior: bool,
    pub run: CheckFn,
}

impl Check {
    pub fn new(
        name: impl Into<String>,
        run: impl Fn(&mut Ctx) -> anyhow::Result<Verdict> + 'static,
    ) -> Check {
        Check {
            name: name.into(),
            needs_prior: false,
            run: Box::new(run),
        }
    }
    /// A check that depends on earlier steps having acted.
    pub fn after_prior(
        name: impl Into<String>,
        run: impl Fn(&mut Ctx) -> anyhow::Result<Verdict> + 'static,
    ) -> Check {
        Check {
            name: name.into(),
            needs_prior: true,
            run: Box::new(run),
        }
    }
}

/// One step of a plan.
pub struct Step {
    pub id: String,
    pub title: String,
    pub risk: Risk,
    pub commands_preview: Vec<String>,
    pub pre: Vec<Check>,
    pub act: Option<ActFn>,
    pub post: Vec<Check>,
    /// Measure the server around this step (the plan benchmarks before the first such step and after the last).
    pub bench: bool,
    /// What to do when a post-check fails (for example restore the config and start the server again);
    /// returns a sentence describing the state it left.
    pub recover: Option<RecoverFn>,
    /// Steps of one group work on one object (a table of a multi-table convert). When the group's first step
    /// is refused by a pre-check, nothing of the group has acted: the run skips the group's other steps, goes
    /// on with the other groups, and ends refused (exit 1) naming each group it refused.
    pub group: Option<String>,
    /// Once every step of the run is done (in this process or before a resume): a sentence when what this
    /// step made falls short of the plan's aim (a dump with lost rows or rows in doubt). The run then ends
    /// with exit 4 instead of 0, so a script need not read what the step wrote.
    pub shortfall: Option<ShortfallFn>,
}

impl Step {
    pub fn new(id: impl Into<String>, title: impl Into<String>, risk: Risk) -> Step {
        Step {
            id: id.into(),
            title: title.into(),
            risk,
            commands_preview: Vec::new(),
            pre: Vec::new(),
            act: None,
            post: Vec::new(),
            bench: false,
            recover: None,
            group: None,
            shortfall: None,
        }
    }
    /// See [`Step::group`](Step#structfield.group).
    pub fn in_group(mut self, group: impl Into<String>) -> Step {
        self.group = Some(group.into());
        self
    }
    pub fn preview(mut self, cmd: impl Into<String>) -> Step {
        self.commands_preview.push(cmd.into());
        self
    }
    pub fn pre(mut self, c: Check) -> Step {
        self.pre.push(c);
        self
    }
    pub fn post(mut self, c: Check) -> Step {
        self.post.push(c);
        self
    }
    pub fn act(
        mut self,
        f: impl Fn(&mut Ctx) -> anyhow::Result<serde_json::Value> + 'static,
    ) -> Step {
        self.act = Some(Box::new(f));
        self
    }
    pub fn recover(mut self, f: impl Fn(&mut Ctx) -> anyhow::Result<String> + 'static) -> Step {
        self.recover = Some(Box::new(f));
        self
    }
    pub fn shortfall(
        mut self,
        f: impl Fn(&mut Ctx) -> anyhow::Result<Option<String>> + 'static,
    ) -> Step {
        self.shortfall = Some(Box::new(f));
        self
    }
    pub fn bench(mut self) -> Step {
        self.bench = true;
        self
    }
}

/// What a plan is, as written to `plan.json`, and what `resume` needs to build it again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanHeader {
    pub procedure: Procedure,
    pub target: String,
    pub server: String,
    /// The procedure's own settings, enough to rebuild the plan.
    pub params: serde_json::Value,
    pub conn: crate::server::connect::ConnSpec,
    pub control: Option<crate::server::control::ControlSpec>,
    /// Lines the DBA should read before executing (choices made, warnings).
    pub notes: Vec<String>,
    /// The server as the plan saw it: `resume` rebuilds the plan from these when the server is down (a run
    /// stopped between a shutdown and a start).
    #[serde(default)]
    pub facts: Option<ServerFacts>,
}

/// An ordered list of steps.
pub struct Plan {
    pub header: PlanHeader,
    pub steps: Vec<Step>,
    /// The workload to run before the first and after the last step marked `bench`.
    pub bench: Option<crate::bench::PlanBench>,
    /// The objects the run changes (such as `convert:db.t`): it holds a server-side named lock on each for
    /// its whole length, so a second run of the same object is refused ([`lock`]).
    pub locks: Vec<String>,
    /// Statements every session of an executed run starts with (`SET SESSION sql_log_bin = 0` for a run whose
    /// writes stay on this server: [`crate::procedures::kit::binlog`]).
    pub session: Vec<String>,
}

/// The preview of one step, as serialised.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepPreview {
    pub id: String,
    pub title: String,
    pub risk: Risk,
    pub commands: Vec<String>,
    pub pre_checks: Vec<String>,
    pub post_checks: Vec<String>,
    pub bench: bool,
}

impl Plan {
    pub fn previews(&self) -> Vec<StepPreview> {
        self.steps
            .iter()
            .map(|s| StepPreview {
                id: s.id.clone(),
                title: s.title.clone(),
                risk: s.risk,
                commands: s.commands_preview.clone(),
                pre_checks: s.pre.iter().map(|c| c.name.clone()).collect(),
                post_checks: s.post.iter().map(|c| c.name.clone()).collect(),
                bench: s.bench,
            })
            .collect()
    }
}

pub use crate::sql::tag_safe;
pub use procedure::Procedure;

/// Seconds a check's session waits for a table lock before it gives up and names who may hold it.
pub const CHECK_LOCK_WAIT_S: u64 = 10;

/// What steps see while they run.
pub struct Ctx<'a> {
    pub target: &'a Target,
    pub control: Option<&'a Control>,
    pub procedure: Procedure,
    pub step: String,
    pub run_dir: Option<PathBuf>,
    pub abort: &'a AtomicBool,
    /// Values one step leaves for a later step of the same process, one typed value per type ([`Ctx::state`];
    /// a crash forgets them: steps that read them must cope with their absence, as after `resume`).
    states: std::collections::HashMap<std::any::TypeId, Box<dyn std::any::Any>>,
    /// Sessions a step keeps open for later steps, such as a lock guard.
    pub held: std::collections::HashMap<String, Conn>,
    /// Objects whose writes innops blocks now, since when ([`Ctx::writes_blocked`]).
    blocked_since: std::collections::BTreeMap<String, chrono::DateTime<chrono::Utc>>,
    /// Spans of blocked writes that ended; the runner moves them into the report.
    pub write_blocks: Vec<report::WriteBlock>,
    /// Spans the server was down because a step stopped it; the runner moves them into the report.
    pub downtime: Vec<report::Downtime>,
    /// Lines a step leaves for the end of the text summary (what a recovery got back, say).
    pub outcome: Vec<String>,
    /// What this run's journal puts before the step ids the steps know themselves by (a playbook's member
    /// steps are journaled as `convert/copy:d.t`): [`Ctx::recorded_result`] adds it.
    pub journal_prefix: String,
    /// An experiment's verdicts, once its verdict step judged them; the runner moves them into the report.
    pub experiment: Option<crate::bench::experiment::Experiment>,
    /// Sessions of innops's own workload beside the plan (`--bench-during`): the load guard does not count
    /// them as the server's load.
    pub own_sessions: u64,
    conn: Option<Conn>,
}

impl<'a> Ctx<'a> {
    pub fn new(
        target: &'a Target,
        control: Option<&'a Control>,
        procedure: Procedure,
        abort: &'a AtomicBool,
    ) -> Ctx<'a> {
        Ctx {
            target,
            control,
            procedure,
            step: String::new(),
            run_dir: None,
            abort,
            states: Default::default(),
            held: Default::default(),
            blocked_since: Default::default(),
            write_blocks: Vec::new(),
            downtime: Vec::new(),
            outcome: Vec::new(),
            journal_prefix: String::new(),
            experiment: None,
            own_sessions: 0,
            conn: None,
        }
    }

    /// The value of type `T` that this process's steps share (its `Default` until a step changes it): each
    /// procedure keeps what its steps leave for later steps in one struct of its own, so a reader finds every
    /// such value, and its type, in one place instead of behind string keys.
    pub fn state<T: Default + 'static>(&mut self) -> &mut T {
        self.states
            .entry(std::any::TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()))
            .downcast_mut::<T>()
            .expect("each value is stored under its own type's id")
    }

    /// The comment every statement of this step starts with.
    pub fn tag(&self) -> String {
        format!(
            "/* innops:{}:{} */",
            tag_safe(self.procedure.name()),
            tag_safe(&self.step)
        )
    }

    /// A connection, opened on first use and again after [`Ctx::drop_conn`].
    pub fn conn(&mut self) -> anyhow::Result<&mut Conn> {
        if self.conn.is_none() {
            let mut conn = self.target.connect()?;
            // Checks and short statements wait for a table lock at most this long, then say who may hold it.
            crate::sql::Queryable::query_drop(
                &mut conn,
                format!(
                    "SET {} SESSION lock_wait_timeout = {CHECK_LOCK_WAIT_S}",
                    self.tag()
                ),
            )?;
            self.conn = Some(conn);
        }
        Ok(self.conn.as_mut().expect("just set"))
    }

    /// Forget the connection (the server is about to go away, or went away).
    pub fn drop_conn(&mut self) {
        self.conn = None;
    }

    /// Fresh facts about the server.
    pub fn facts(&mut self) -> anyhow::Result<ServerFacts> {
        let conn = self.conn()?;
        ServerFacts::collect(conn)
    }

    /// The control backend, or a refusal naming the flags that provide one.
    pub fn control(&self) -> anyhow::Result<&'a Control> {
        self.control.ok_or_else(|| {
            crate::error::refused(
                "this step must stop and start the server, and innops was not told how: pass --sandbox NAME, --service systemd:UNIT, or --start-cmd/--stop-cmd",
            )
        })
    }

    /// The result the last completed action of `step` recorded in this run's journal (a resumed run finds
    /// there what the process that crashed had learned).
    pub fn recorded_result(&self, step: &str) -> Option<serde_json::Value> {
        let dir = self.run_dir.as_ref()?;
        let step = format!("{}{step}", self.journal_prefix);
        journal::read_journal(dir)
            .ok()?
            .into_iter()
            .rev()
            .find_map(|e| match e.kind {
                journal::EventKind::ActionDone { step: s, result } if s == step => Some(result),
                _ => None,
            })
    }

    /// Writes to `object` are blocked from now on (a write guard was granted).
    pub fn writes_blocked(&mut self, object: &str) {
        self.blocked_since
            .entry(object.to_string())
            .or_insert_with(chrono::Utc::now);
    }

    /// Writes to `object` go on again: the span is recorded for the report.
    pub fn writes_released(&mut self, object: &str) {
        if let Some(from) = self.blocked_since.remove(object) {
            let to = chrono::Utc::now();
            self.write_blocks.push(report::WriteBlock {
                object: object.to_string(),
                from,
                to,
                seconds: (to - from).num_microseconds().unwrap_or(0) as f64 / 1e6,
            });
        }
    }

    /// Every block still held ends with the run (the process that holds the guard goes away).
    pub fn release_all_blocks(&mut self) {
        let open: Vec<String> = self.blocked_since.keys().cloned().collect();
        for o in open {
            self.writes_released(&o);
        }
    }

    pub fn aborted(&self) -> bool {
        self.abort.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_result_is_the_named_steps_last_not_the_runs_last() {
        let dir = tempfile::tempdir().unwrap();
        let done = |step: &str, n: u64| journal::Event {
            ts: chrono::Utc::now(),
            kind: journal::EventKind::ActionDone {
                step: step.into(),
                result: serde_json::json!(n),
            },
        };
        let lines: Vec<String> = [done("copy", 1), done("copy", 2), done("verify", 3)]
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        std::fs::write(dir.path().join("journal.jsonl"), lines.join("\n")).unwrap();
        let target = crate::server::connect::to_target(&Default::default());
        let abort = AtomicBool::new(false);
        let mut ctx = Ctx::new(&target, None, Procedure::Convert, &abort);
        assert_eq!(
            ctx.recorded_result("copy"),
            None,
            "no run directory, no record"
        );
        ctx.run_dir = Some(dir.path().to_path_buf());
        assert_eq!(ctx.recorded_result("copy"), Some(serde_json::json!(2)));
        assert_eq!(ctx.recorded_result("verify"), Some(serde_json::json!(3)));
        assert_eq!(ctx.recorded_result("swap"), None);
    }

    #[test]
    fn each_type_of_step_state_is_kept_apart_and_starts_at_its_default() {
        #[derive(Default)]
        struct A(Vec<u32>);
        #[derive(Default)]
        struct B(Option<String>);
        let target = crate::server::connect::to_target(&Default::default());
        let abort = AtomicBool::new(false);
        let mut ctx = Ctx::new(&target, None, Procedure::Convert, &abort);
        assert!(ctx.state::<A>().0.is_empty());
        ctx.state::<A>().0.push(7);
        ctx.state::<B>().0 = Some("x".into());
        ctx.state::<A>().0.push(8);
        assert_eq!(ctx.state::<A>().0, vec![7, 8]);
        assert_eq!(ctx.state::<B>().0.as_deref(), Some("x"));
    }

    #[test]
    fn a_check_s_mark_says_pass_warning_fail_or_later() {
        assert_eq!(Verdict::pass("a", "a").mark(), "✓");
        assert_eq!(Verdict::warn("a", "b").mark(), "⚠");
        assert!(
            Verdict::warn("a", "b").passed,
            "a warning lets the step go on"
        );
        assert_eq!(Verdict::fail("a", "b", "fix").mark(), "✗");
        let later = Verdict {
            deferred: true,
            ..Verdict::warn("a", "b")
        };
        assert_eq!(later.mark(), "…");
    }

    #[test]
    fn a_table_name_cannot_close_the_statement_tag() {
        assert_eq!(tag_safe("copy:d.we*/ DROP"), "copy:d.we___DROP");
        assert_eq!(tag_safe("verify:shop.orders"), "verify:shop.orders");
    }
}
