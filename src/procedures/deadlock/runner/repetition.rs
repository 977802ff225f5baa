//! One repetition of a scenario, the part of a run that sends the statements: the schema made afresh, one
//! session per scenario session, each statement sent in turn (a statement expected to block confirmed waiting
//! before the next is sent, every wait bounded), then every session rolled back and the repetition judged.
//! [`super`] keeps the sessions' connections, the server reads and how a whole run is set up and cleaned up;
//! this part is long enough to be read on its own, and reads that way.

use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use mysql::Conn;

use super::{
    in_lock_wait, innodb_status, open_trx, processlist_wait, status_u64, InForce, Repetition,
    Reply, Session, StepOutcome, PROCESSLIST_PACE, TAG, TRX_CACHE_IDLE,
};
use crate::error::bad_input;
use crate::procedures::deadlock::parse::{self, Deadlock};
use crate::procedures::deadlock::scenario::{Expectation, Scenario};
use crate::procedures::deadlock::verdict::{judge_report, record};
use crate::server::connect::Target;
use crate::sql::{quote_ident, Queryable};

/// Receive a statement's result within `bound`; past it, kill the statement and say so.
fn finish(monitor: &mut Conn, sess: &Session, bound: Duration) -> anyhow::Result<Reply> {
    match sess.rx.recv_timeout(bound) {
        Ok(r) => Ok(r),
        Err(RecvTimeoutError::Timeout) => {
            monitor.query_drop(format!("KILL {TAG} QUERY {}", sess.thread_id))?;
            match sess.rx.recv_timeout(Duration::from_secs(30)) {
                Ok(r) => Ok(Reply {
                    error: Some((
                        0,
                        format!(
                            "did not finish within {}s; innops killed it",
                            bound.as_secs()
                        ),
                    )),
                    ..r
                }),
                Err(_) => Err(anyhow::anyhow!(
                    "session {}'s statement went on after KILL QUERY: check thread {} on the server",
                    sess.name,
                    sess.thread_id
                )),
            }
        }
        Err(RecvTimeoutError::Disconnected) => Err(anyhow::anyhow!(
            "session {}'s connection thread ended unexpectedly",
            sess.name
        )),
    }
}

/// The scenario's schema, made afresh and set up.
fn fresh_schema(monitor: &mut Conn, scenario: &Scenario, in_force: &InForce) -> anyhow::Result<()> {
    let schema = quote_ident(&in_force.schema);
    monitor.query_drop(format!("DROP {TAG} SCHEMA IF EXISTS {schema}"))?;
    monitor
        .query_drop(format!("CREATE {TAG} SCHEMA {schema}"))
        .map_err(|e| match &e {
            mysql::Error::MySqlError(me) if me.code == 1102 => bad_input(format!(
                "--schema {}: the server does not take it as a schema name ({}): give another, e.g. innops_deadlock",
                in_force.schema, me.message
            )),
            _ => e.into(),
        })?;
    monitor.query_drop(format!("USE {TAG} {schema}"))?;
    for sql in &scenario.setup {
        monitor.query_drop(format!("{TAG} {sql}")).map_err(|e| {
            bad_input(format!(
                "the scenario's setup statement `{sql}` failed ({}): fix the scenario file",
                crate::error::describe_mysql(&e)
            ))
        })?;
    }
    Ok(())
}

/// After step `n` was sent on `sess`, expected to block: wait until the server shows it waiting for a lock
/// (recorded in `outcome`; None returned) or until it ends without waiting (its reply returned).
fn watch_block(
    monitor: &mut Conn,
    sess: &Session,
    n: usize,
    bound: Duration,
    last_trx_read: &mut Option<Instant>,
    outcome: &mut StepOutcome,
) -> anyhow::Result<Option<Reply>> {
    let start = Instant::now();
    let tid = sess.thread_id;
    loop {
        if let Some(state) = processlist_wait(monitor, tid)? {
            outcome.blocked = true;
            outcome.waited_for = Some(state);
            return Ok(None);
        }
        // INNODB_TRX is a cache InnoDB refreshes only when nobody read it in the last 100 ms: read it
        // no more often than that, and meanwhile wait for the statement's own result.
        let since = last_trx_read.map_or(TRX_CACHE_IDLE, |t: Instant| t.elapsed());
        if since >= TRX_CACHE_IDLE {
            let waiting = in_lock_wait(monitor, tid)?;
            *last_trx_read = Some(Instant::now());
            if waiting {
                outcome.blocked = true;
                outcome.waited_for = Some("InnoDB lock wait".into());
                return Ok(None);
            }
        }
        match sess.rx.recv_timeout(PROCESSLIST_PACE) {
            Ok(r) => return Ok(Some(r)),
            Err(RecvTimeoutError::Timeout) if start.elapsed() < bound => {}
            Err(RecvTimeoutError::Timeout) => {
                return Err(anyhow::anyhow!(
                "step {n} ({}) neither waited for a lock nor finished within {}s: check the server",
                sess.name,
                bound.as_secs()
            ))
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(anyhow::anyhow!(
                    "session {}'s connection thread ended unexpectedly",
                    sess.name
                ))
            }
        }
    }
}

/// Roll every session back: the sessions whose transaction was still open, and how many are open after.
fn roll_back_all(
    monitor: &mut Conn,
    sessions: &mut [Session],
    bound: Duration,
) -> anyhow::Result<(Vec<String>, u64)> {
    let ids: Vec<u64> = sessions.iter().map(|s| s.thread_id).collect();
    let open = open_trx(monitor, &ids)?;
    let mut rolled_back_open = Vec::new();
    for sess in sessions.iter_mut() {
        if open.contains(&sess.thread_id) {
            rolled_back_open.push(sess.name.clone());
        }
        sess.send(format!("ROLLBACK {TAG}"))?;
        if let Some((c, m)) = finish(monitor, sess, bound)?.error {
            return Err(anyhow::anyhow!(
                "session {}'s ROLLBACK failed with error {c} ({m}): check thread {} on the server",
                sess.name,
                sess.thread_id
            ));
        }
    }
    let open_after = open_trx(monitor, &ids)?.len() as u64;
    Ok((rolled_back_open, open_after))
}

/// The errors the sessions received, as (session, error code), in the order they came.
fn errors_in_order(outcomes: &[StepOutcome], replies: &[Option<Reply>]) -> Vec<(String, u16)> {
    let mut errors: Vec<(Instant, String, u16)> = outcomes
        .iter()
        .zip(replies)
        .filter_map(|(o, r)| {
            let r = r.as_ref()?;
            let (code, _) = r.error.as_ref()?;
            Some((r.at?, o.session.clone(), *code))
        })
        .collect();
    errors.sort_by_key(|(at, _, _)| *at);
    errors.into_iter().map(|(_, s, c)| (s, c)).collect()
}

/// One run of the scenario in a fresh schema: each statement sent in order, then the server's counters and
/// report read, every session rolled back, and the outcome judged against the scenario.
pub(super) fn repetition(
    target: &Target,
    monitor: &mut Conn,
    scenario: &Scenario,
    in_force: &InForce,
    n: u32,
) -> anyhow::Result<Repetition> {
    let mut play = Play::start(target, monitor, scenario, in_force)?;
    for i in 0..scenario.steps.len() {
        play.step(i)?;
    }
    play.end(n)
}

/// A repetition under way: its sessions, what each statement sent so far did, and the server's deadlock
/// figures from before the first statement, to set the ones after against. One place holds them so each phase
/// (start, a statement, the end) reads as one method.
struct Play<'a> {
    monitor: &'a mut Conn,
    scenario: &'a Scenario,
    in_force: &'a InForce,
    sessions: Vec<Session>,
    /// How long a statement may take before innops kills it.
    bound: Duration,
    last_trx_read: Option<Instant>,
    outcomes: Vec<StepOutcome>,
    /// Each statement's reply, once it came.
    replies: Vec<Option<Reply>>,
    deadlocks_before: u64,
    report_before: Option<Deadlock>,
}

impl<'a> Play<'a> {
    /// The schema made afresh, one session per scenario session, and the figures before.
    fn start(
        target: &Target,
        monitor: &'a mut Conn,
        scenario: &'a Scenario,
        in_force: &'a InForce,
    ) -> anyhow::Result<Play<'a>> {
        fresh_schema(monitor, scenario, in_force)?;
        let mut sessions: Vec<Session> = Vec::new();
        for (name, timeout) in &in_force.lock_wait_timeout {
            sessions.push(Session::open(target, name, &in_force.schema, *timeout)?);
        }
        let max_timeout = sessions.iter().map(|s| s.timeout).max().unwrap_or(1);
        // A statement ends within its lock wait timeout (or by deadlock detection); allow the server some slack.
        let bound = Duration::from_secs(max_timeout * 2 + 10);
        let deadlocks_before = status_u64(monitor, "Innodb_deadlocks")?;
        let report_before = parse::parse_latest(&innodb_status(monitor)?);
        Ok(Play {
            monitor,
            scenario,
            in_force,
            sessions,
            bound,
            last_trx_read: None,
            outcomes: Vec::new(),
            replies: Vec::new(),
            deadlocks_before,
            report_before,
        })
    }

    /// What step `i` is expected to do with deadlock detection as the run has it.
    fn want(&self, i: usize) -> &'a Expectation {
        let st = &self.scenario.steps[i];
        if self.in_force.deadlock_detect {
            &st.expected
        } else {
            &st.without_detection
        }
    }

    /// Wait for the statement session `si` still has pending, if any, and record its reply.
    fn settle(&mut self, si: usize) -> anyhow::Result<()> {
        if let Some(p) = self.sessions[si].pending.take() {
            let r = finish(self.monitor, &self.sessions[si], self.bound)?;
            let want = self.want(p);
            record(
                &mut self.outcomes[p],
                &r,
                want,
                &self.scenario.steps[p].returns,
            );
            self.replies[p] = Some(r);
        }
        Ok(())
    }

    /// Send step `i` from its session, and wait until it ends or, expected to block, until the server shows
    /// it waiting for a lock.
    fn step(&mut self, i: usize) -> anyhow::Result<()> {
        let scenario = self.scenario;
        let step = &scenario.steps[i];
        let want = self.want(i);
        let si = scenario
            .sessions
            .iter()
            .position(|s| *s == step.session)
            .expect("validated session");
        // The session's previous statement must end before it sends the next.
        self.settle(si)?;
        let sql = format!(
            "/* innops:deadlock:step-{} */ {}",
            i + 1,
            Scenario::sql_for(&step.sql, &self.in_force.shared_lock_clause)
        );
        let mut outcome = StepOutcome::sent(i + 1, &step.session, &sql, want.describe());
        self.sessions[si].send(sql)?;
        if want.block {
            let done = watch_block(
                self.monitor,
                &self.sessions[si],
                i + 1,
                self.bound,
                &mut self.last_trx_read,
                &mut outcome,
            )?;
            self.outcomes.push(outcome);
            self.replies.push(None);
            match done {
                Some(r) => {
                    record(
                        self.outcomes.last_mut().expect("pushed"),
                        &r,
                        want,
                        &step.returns,
                    );
                    self.replies[i] = Some(r);
                }
                None => self.sessions[si].pending = Some(i),
            }
        } else {
            let r = finish(self.monitor, &self.sessions[si], self.bound)?;
            record(&mut outcome, &r, want, &step.returns);
            self.outcomes.push(outcome);
            self.replies.push(Some(r));
        }
        Ok(())
    }

    /// After the last step: every pending statement's reply, the figures after, every session rolled back,
    /// and the repetition judged.
    fn end(mut self, n: u32) -> anyhow::Result<Repetition> {
        for si in 0..self.sessions.len() {
            self.settle(si)?;
        }
        let monitor = &mut *self.monitor;
        let deadlocks_after = status_u64(monitor, "Innodb_deadlocks")?;
        let report_after = parse::parse_latest(&innodb_status(monitor)?);
        let (rolled_back_open, open_after) =
            roll_back_all(monitor, &mut self.sessions, self.bound)?;
        let codes = errors_in_order(&self.outcomes, &self.replies);
        let victims: Vec<String> = codes
            .iter()
            .filter(|(_, c)| *c == 1213)
            .map(|(s, _)| s.clone())
            .collect();
        let report_new = report_after.is_some() && report_after != self.report_before;
        let report = if report_new { report_after } else { None };
        let named: Vec<(String, u64)> = self
            .sessions
            .iter()
            .map(|s| (s.name.clone(), s.thread_id))
            .collect();
        let j = judge_report(report.as_ref(), &named, &codes);
        let deadlocks =
            victims.len() as u64 + u64::from(j.other_error_victim || j.unseen.is_some());
        let mut victims = victims;
        if let (true, Some(v)) = (j.other_error_victim, &j.report_victim) {
            victims.push(v.clone());
        }
        let expected_deadlocks = self.scenario.victims_per_run(self.in_force.deadlock_detect);
        let count_problem = (deadlocks != expected_deadlocks).then(|| {
            format!(
                "this run's sessions had {deadlocks} deadlock(s), the scenario expects {expected_deadlocks}"
            )
        });
        let as_expected = self.outcomes.iter().all(|o| o.as_expected)
            && count_problem.is_none()
            && j.problem.is_none();
        drop(self.sessions);
        Ok(Repetition {
            n,
            steps: self.outcomes,
            victim: victims.last().cloned(),
            victims,
            deadlocks,
            expected_deadlocks,
            report_victim: j.report_victim,
            report_new,
            report_ours: j.ours,
            deadlocks_before: self.deadlocks_before,
            deadlocks_after,
            rolled_back_open,
            open_after,
            report,
            count_problem,
            report_problem: j.problem,
            as_expected,
        })
    }
}
