//! Run a scenario deterministically: one connection per session, each statement sent from that session's own
//! thread. A statement expected to block is confirmed blocked from the server's own view (its session's
//! transaction in `LOCK WAIT` in information_schema.INNODB_TRX) before the next statement is sent; nothing here
//! sleeps. Every wait is bounded: a lock wait ends at the session's innodb_lock_wait_timeout, and innops kills a
//! statement that outlives that.

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mysql::Conn;
use serde::Serialize;

use super::parse::{self, Deadlock};
use super::scenario::{Expect, Expectation, Scenario};
use crate::error::{bad_input, refused};
use crate::server::connect::Target;
use crate::server::facts::ServerFacts;
use crate::sql::{quote_ident, Queryable};

const TAG: &str = "/* innops:deadlock:run */";

/// InnoDB refreshes the INNODB_TRX cache only when it was not read for 100 ms (trx_i_s cache); a little more.
const TRX_CACHE_IDLE: Duration = Duration::from_millis(120);

/// How to run.
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub schema: String,
    pub keep: bool,
    pub repeat: u32,
    /// Set innodb_deadlock_detect for the run (restored after); None keeps the server's.
    pub detect: Option<bool>,
    /// innodb_lock_wait_timeout of sessions the scenario gives none.
    pub lock_wait_timeout: u64,
    pub execute: bool,
}

/// The settings in force for a run.
#[derive(Debug, Clone, Serialize)]
pub struct InForce {
    pub server: String,
    pub schema: String,
    /// innodb_deadlock_detect as the server has it now.
    pub deadlock_detect_now: bool,
    /// innodb_deadlock_detect during the run.
    pub deadlock_detect: bool,
    /// innodb_lock_wait_timeout per session.
    pub lock_wait_timeout: Vec<(String, u64)>,
    pub print_all_deadlocks: bool,
    pub shared_lock_clause: String,
    pub lock_waits_view: String,
    pub deadlock_holder_heading: String,
}

/// What one statement did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StepOutcome {
    pub step: usize,
    pub session: String,
    pub sql: String,
    pub expected: String,
    /// Confirmed waiting for a lock in INNODB_TRX before the next statement was sent.
    pub blocked: bool,
    /// ok, deadlock, timeout, error, or killed.
    pub result: String,
    pub error_code: Option<u16>,
    pub error: Option<String>,
    pub as_expected: bool,
}

/// One run of the scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Repetition {
    pub n: u32,
    pub steps: Vec<StepOutcome>,
    /// The session that got ERROR 1213.
    pub victim: Option<String>,
    /// The session InnoDB's report says it rolled back.
    pub report_victim: Option<String>,
    pub deadlocks_before: u64,
    pub deadlocks_after: u64,
    /// Sessions whose transaction was still open after the last statement; innops rolled each back.
    pub rolled_back_open: Vec<String>,
    /// Transactions of this run's sessions in INNODB_TRX after the rollback (0 unless something is wrong).
    pub open_after: u64,
    pub report: Option<Deadlock>,
    pub as_expected: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub scenario: Scenario,
    pub settings: InForce,
    pub executed: bool,
    pub repetitions: Vec<Repetition>,
    /// Every repetition had the same outcomes and the same victim.
    pub same_every_time: bool,
    pub as_expected: bool,
    pub schema_kept: bool,
}

type StmtResult = Result<(), (u16, String)>;

struct Session {
    name: String,
    thread_id: u64,
    timeout: u64,
    tx: Option<Sender<String>>,
    rx: Receiver<StmtResult>,
    handle: Option<JoinHandle<()>>,
    /// The step waiting for its result.
    pending: Option<usize>,
}

impl Session {
    fn open(target: &Target, name: &str, schema: &str, timeout: u64) -> anyhow::Result<Session> {
        let mut conn = target.connect()?;
        conn.query_drop(format!(
            "SET {TAG} SESSION innodb_lock_wait_timeout = {timeout}"
        ))?;
        conn.query_drop(format!("USE {TAG} {}", quote_ident(schema)))?;
        let thread_id: u64 = conn
            .query_first(format!("SELECT {TAG} CONNECTION_ID()"))?
            .unwrap_or(0);
        let (tx, worker_rx) = channel::<String>();
        let (worker_tx, rx) = channel::<StmtResult>();
        let handle = std::thread::spawn(move || worker(conn, worker_rx, worker_tx));
        Ok(Session {
            name: name.to_string(),
            thread_id,
            timeout,
            tx: Some(tx),
            rx,
            handle: Some(handle),
            pending: None,
        })
    }

    fn send(&mut self, sql: String) -> anyhow::Result<()> {
        self.tx
            .as_ref()
            .and_then(|t| t.send(sql).ok())
            .ok_or_else(|| anyhow::anyhow!("session {}'s connection thread ended", self.name))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn worker(mut conn: Conn, rx: Receiver<String>, tx: Sender<StmtResult>) {
    while let Ok(sql) = rx.recv() {
        let r = match conn.query_drop(&sql) {
            Ok(()) => Ok(()),
            Err(mysql::Error::MySqlError(e)) => Err((e.code, e.message)),
            Err(e) => Err((0, crate::error::describe_mysql(&e))),
        };
        if tx.send(r).is_err() {
            break;
        }
    }
}

fn result_name(r: &StmtResult) -> (&'static str, Option<u16>, Option<String>) {
    match r {
        Ok(()) => ("ok", None, None),
        Err((1213, m)) => ("deadlock", Some(1213), Some(m.clone())),
        Err((1205, m)) => ("timeout", Some(1205), Some(m.clone())),
        Err((c, m)) => ("error", Some(*c), Some(m.clone())),
    }
}

fn status_u64(conn: &mut Conn, name: &str) -> anyhow::Result<u64> {
    let row: Option<(String, String)> =
        conn.query_first(format!("SHOW {TAG} GLOBAL STATUS LIKE '{name}'"))?;
    Ok(row.and_then(|(_, v)| v.parse().ok()).unwrap_or(0))
}

fn var_on(conn: &mut Conn, name: &str) -> anyhow::Result<bool> {
    let v: Option<String> = conn.query_first(format!("SELECT {TAG} @@GLOBAL.{name}"))?;
    Ok(matches!(v.as_deref(), Some("1") | Some("ON")))
}

/// Whether this thread's transaction waits for a lock, from the server's view.
fn in_lock_wait(monitor: &mut Conn, thread_id: u64) -> anyhow::Result<bool> {
    let n: Option<u64> = monitor.query_first(format!(
        "SELECT {TAG} COUNT(*) FROM information_schema.INNODB_TRX \
         WHERE trx_mysql_thread_id = {thread_id} AND trx_state = 'LOCK WAIT'"
    ))?;
    Ok(n.unwrap_or(0) > 0)
}

/// Thread ids of the transactions InnoDB has active now, from the TRANSACTIONS section of `SHOW ENGINE INNODB
/// STATUS` (read live, unlike INNODB_TRX, which is a cache). Transactions `not started` are left out.
pub fn live_transactions(status: &str) -> Vec<u64> {
    let Some(at) = status.find("\nTRANSACTIONS\n") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut active = false;
    for line in status[at..].lines() {
        if line.starts_with("---TRANSACTION ") {
            active = !line.contains("not started");
        }
        let thread = line
            .strip_prefix("MariaDB thread id ")
            .or_else(|| line.strip_prefix("MySQL thread id "));
        if let (true, Some(r)) = (active, thread) {
            if let Some(id) = r.split(',').next().and_then(|n| n.trim().parse().ok()) {
                out.push(id);
            }
        }
    }
    out
}

fn open_trx(monitor: &mut Conn, ids: &[u64]) -> anyhow::Result<Vec<u64>> {
    let status: Option<(String, String, String)> =
        monitor.query_first(format!("SHOW {TAG} ENGINE INNODB STATUS"))?;
    let live = status
        .map(|(_, _, t)| live_transactions(&t))
        .unwrap_or_default();
    Ok(live.into_iter().filter(|id| ids.contains(id)).collect())
}

/// The settings the run would use, read from the server.
pub fn settings(
    conn: &mut Conn,
    facts: &ServerFacts,
    scenario: &Scenario,
    s: &RunSettings,
) -> anyhow::Result<InForce> {
    let now = var_on(conn, "innodb_deadlock_detect")?;
    Ok(InForce {
        server: facts.describe(),
        schema: s.schema.clone(),
        deadlock_detect_now: now,
        deadlock_detect: s.detect.unwrap_or(now),
        lock_wait_timeout: scenario
            .sessions
            .iter()
            .map(|n| {
                (
                    n.clone(),
                    *scenario
                        .lock_wait_timeout
                        .get(n)
                        .unwrap_or(&s.lock_wait_timeout),
                )
            })
            .collect(),
        print_all_deadlocks: var_on(conn, "innodb_print_all_deadlocks")?,
        shared_lock_clause: facts.shared_lock_clause().into(),
        lock_waits_view: facts.lock_waits_view().into(),
        deadlock_holder_heading: facts.deadlock_holder_heading().into(),
    })
}

/// Show (dry run) or run the scenario.
pub fn run(target: &Target, scenario: &Scenario, s: &RunSettings) -> anyhow::Result<RunReport> {
    if s.repeat == 0 {
        return Err(bad_input("--repeat 0 runs nothing: give 1 or more"));
    }
    let mut monitor = target.connect()?;
    let facts = ServerFacts::collect(&mut monitor)?;
    let in_force = settings(&mut monitor, &facts, scenario, s)?;
    let exists: Option<String> = monitor.query_first(format!(
        "SELECT {TAG} SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{}'",
        s.schema.replace('\\', "\\\\").replace('\'', "''")
    ))?;
    if exists.is_some() {
        return Err(refused(format!(
            "schema {} already exists on {} and a scenario runs in a schema of its own: drop it, or pick another with --schema",
            s.schema,
            target.label
        )));
    }
    let mut report = RunReport {
        scenario: scenario.clone(),
        settings: in_force.clone(),
        executed: s.execute,
        repetitions: Vec::new(),
        same_every_time: true,
        as_expected: true,
        schema_kept: s.keep,
    };
    if !s.execute {
        return Ok(report);
    }
    let restore = (s.detect.is_some() && in_force.deadlock_detect != in_force.deadlock_detect_now)
        .then_some(in_force.deadlock_detect_now);
    if restore.is_some() {
        set_detect(&mut monitor, in_force.deadlock_detect)?;
    }
    let result = (|| -> anyhow::Result<()> {
        for n in 1..=s.repeat {
            let rep = repetition(target, &mut monitor, scenario, &in_force, n)?;
            report.repetitions.push(rep);
        }
        Ok(())
    })();
    if let Some(was) = restore {
        set_detect(&mut monitor, was)?;
    }
    if !s.keep {
        monitor.query_drop(format!(
            "DROP {TAG} SCHEMA IF EXISTS {}",
            quote_ident(&s.schema)
        ))?;
    }
    result?;
    let sig = |r: &Repetition| {
        (
            r.steps
                .iter()
                .map(|o| (o.result.clone(), o.blocked))
                .collect::<Vec<_>>(),
            r.victim.clone(),
        )
    };
    let first = report.repetitions.first().map(sig);
    report.same_every_time = report.repetitions.iter().all(|r| Some(sig(r)) == first);
    report.as_expected = report.repetitions.iter().all(|r| r.as_expected);
    Ok(report)
}

fn set_detect(monitor: &mut Conn, on: bool) -> anyhow::Result<()> {
    monitor.query_drop(format!(
        "SET {TAG} GLOBAL innodb_deadlock_detect = {}",
        if on { "ON" } else { "OFF" }
    ))?;
    Ok(())
}

/// Receive a statement's result within `bound`; past it, kill the statement and say so.
fn finish(monitor: &mut Conn, sess: &Session, bound: Duration) -> anyhow::Result<StmtResult> {
    match sess.rx.recv_timeout(bound) {
        Ok(r) => Ok(r),
        Err(RecvTimeoutError::Timeout) => {
            monitor.query_drop(format!("KILL {TAG} QUERY {}", sess.thread_id))?;
            match sess.rx.recv_timeout(Duration::from_secs(30)) {
                Ok(_) => Ok(Err((
                    0,
                    format!(
                        "did not finish within {}s; innops killed it",
                        bound.as_secs()
                    ),
                ))),
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

fn record(outcome: &mut StepOutcome, r: &StmtResult, want: Expectation) {
    let (name, code, msg) = result_name(r);
    let name = if code == Some(0) { "killed" } else { name };
    outcome.result = name.into();
    outcome.error_code = code.filter(|c| *c != 0);
    outcome.error = msg;
    let end = match want.expect {
        Expect::Block => want.then.unwrap_or(Expect::Ok),
        e => e,
    };
    outcome.as_expected = (want.expect == Expect::Block) == outcome.blocked && end.name() == name;
}

fn repetition(
    target: &Target,
    monitor: &mut Conn,
    scenario: &Scenario,
    in_force: &InForce,
    n: u32,
) -> anyhow::Result<Repetition> {
    let schema = quote_ident(&in_force.schema);
    monitor.query_drop(format!("DROP {TAG} SCHEMA IF EXISTS {schema}"))?;
    monitor.query_drop(format!("CREATE {TAG} SCHEMA {schema}"))?;
    monitor.query_drop(format!("USE {TAG} {schema}"))?;
    for sql in &scenario.setup {
        monitor.query_drop(format!("{TAG} {sql}")).map_err(|e| {
            bad_input(format!(
                "the scenario's setup statement `{sql}` failed ({}): fix the scenario file",
                crate::error::describe_mysql(&e)
            ))
        })?;
    }
    let mut sessions: Vec<Session> = Vec::new();
    for (name, timeout) in &in_force.lock_wait_timeout {
        sessions.push(Session::open(target, name, &in_force.schema, *timeout)?);
    }
    let max_timeout = sessions.iter().map(|s| s.timeout).max().unwrap_or(1);
    // A statement ends within its lock wait timeout (or by deadlock detection); allow the server some slack.
    let bound = Duration::from_secs(max_timeout * 2 + 10);
    let deadlocks_before = status_u64(monitor, "Innodb_deadlocks")?;
    let mut last_trx_read: Option<Instant> = None;
    let mut outcomes: Vec<StepOutcome> = Vec::new();
    let mut wants: Vec<Expectation> = Vec::new();
    for (i, step) in scenario.steps.iter().enumerate() {
        let want = if in_force.deadlock_detect {
            step.expected
        } else {
            step.without_detection
        };
        let si = scenario
            .sessions
            .iter()
            .position(|s| *s == step.session)
            .expect("validated session");
        // The session's previous statement must end before it sends the next.
        if let Some(p) = sessions[si].pending.take() {
            let r = finish(monitor, &sessions[si], bound)?;
            record(&mut outcomes[p], &r, wants[p]);
        }
        let sql = format!(
            "/* innops:deadlock:step-{} */ {}",
            i + 1,
            Scenario::sql_for(&step.sql, &in_force.shared_lock_clause)
        );
        let mut outcome = StepOutcome {
            step: i + 1,
            session: step.session.clone(),
            sql: sql.clone(),
            expected: want.describe(),
            blocked: false,
            result: String::new(),
            error_code: None,
            error: None,
            as_expected: false,
        };
        sessions[si].send(sql)?;
        if want.expect == Expect::Block {
            let start = Instant::now();
            let mut done = None;
            loop {
                // INNODB_TRX is a cache InnoDB refreshes only when nobody read it in the last 100 ms: read it
                // no more often than that, and meanwhile wait for the statement's own result.
                let since = last_trx_read.map_or(TRX_CACHE_IDLE, |t: Instant| t.elapsed());
                if since >= TRX_CACHE_IDLE {
                    let waiting = in_lock_wait(monitor, sessions[si].thread_id)?;
                    last_trx_read = Some(Instant::now());
                    if waiting {
                        outcome.blocked = true;
                        break;
                    }
                }
                let pace = TRX_CACHE_IDLE
                    .saturating_sub(last_trx_read.map_or(TRX_CACHE_IDLE, |t| t.elapsed()));
                match sessions[si].rx.recv_timeout(pace.max(Duration::from_millis(1))) {
                    Ok(r) => {
                        done = Some(r);
                        break;
                    }
                    Err(RecvTimeoutError::Timeout) if start.elapsed() < bound => {}
                    Err(RecvTimeoutError::Timeout) => {
                        return Err(anyhow::anyhow!(
                            "step {} ({}) neither waited for a lock nor finished within {}s: check the server",
                            i + 1,
                            step.session,
                            bound.as_secs()
                        ))
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        return Err(anyhow::anyhow!(
                            "session {}'s connection thread ended unexpectedly",
                            step.session
                        ))
                    }
                }
            }
            outcomes.push(outcome);
            wants.push(want);
            match done {
                Some(r) => record(outcomes.last_mut().expect("pushed"), &r, want),
                None => sessions[si].pending = Some(i),
            }
        } else {
            let r = finish(monitor, &sessions[si], bound)?;
            // A statement expected to finish may instead have waited: tell from the error it ended with.
            outcome.blocked = matches!(r, Err((1205, _)));
            record(&mut outcome, &r, want);
            outcomes.push(outcome);
            wants.push(want);
        }
    }
    for sess in sessions.iter_mut() {
        if let Some(p) = sess.pending.take() {
            let r = finish(monitor, sess, bound)?;
            record(&mut outcomes[p], &r, wants[p]);
        }
    }
    let deadlocks_after = status_u64(monitor, "Innodb_deadlocks")?;
    let ids: Vec<u64> = sessions.iter().map(|s| s.thread_id).collect();
    let open = open_trx(monitor, &ids)?;
    let mut rolled_back_open = Vec::new();
    for sess in sessions.iter_mut() {
        if open.contains(&sess.thread_id) {
            rolled_back_open.push(sess.name.clone());
        }
        sess.send(format!("ROLLBACK {TAG}"))?;
        if let Err((c, m)) = finish(monitor, sess, bound)? {
            return Err(anyhow::anyhow!(
                "session {}'s ROLLBACK failed with error {c} ({m}): check thread {} on the server",
                sess.name,
                sess.thread_id
            ));
        }
    }
    let open_after = open_trx(monitor, &ids)?.len() as u64;
    let report = if deadlocks_after > deadlocks_before {
        let status: Option<(String, String, String)> =
            monitor.query_first(format!("SHOW {TAG} ENGINE INNODB STATUS"))?;
        status.and_then(|(_, _, text)| parse::parse_latest(&text))
    } else {
        None
    };
    let report_victim = report
        .as_ref()
        .and_then(|d| d.victim_txn())
        .and_then(|t| t.thread_id)
        .and_then(|id| sessions.iter().find(|s| s.thread_id == id))
        .map(|s| s.name.clone());
    let victim = outcomes
        .iter()
        .find(|o| o.error_code == Some(1213))
        .map(|o| o.session.clone());
    let as_expected = outcomes.iter().all(|o| o.as_expected);
    drop(sessions);
    Ok(Repetition {
        n,
        steps: outcomes,
        victim,
        report_victim,
        deadlocks_before,
        deadlocks_after,
        rolled_back_open,
        open_after,
        report,
        as_expected,
    })
}

/// The run as a person reads it.
pub fn render(r: &RunReport) -> String {
    let s = &r.settings;
    let mut out = format!(
        "scenario {}: {}\nserver {}; schema {} ({})\n",
        r.scenario.name,
        r.scenario.description,
        s.server,
        s.schema,
        if r.schema_kept {
            "kept afterwards"
        } else {
            "dropped afterwards"
        }
    );
    out.push_str(&format!(
        "settings: innodb_deadlock_detect={}{}, innodb_print_all_deadlocks={}, innodb_lock_wait_timeout {}; shared lock `{}`\n",
        if s.deadlock_detect { "ON" } else { "OFF" },
        if s.deadlock_detect != s.deadlock_detect_now {
            " (for this run only)"
        } else {
            ""
        },
        if s.print_all_deadlocks { "ON" } else { "OFF" },
        s.lock_wait_timeout
            .iter()
            .map(|(n, t)| format!("{n}={t}s"))
            .collect::<Vec<_>>()
            .join(" "),
        s.shared_lock_clause
    ));
    if !r.executed {
        out.push_str("setup:\n");
        for sql in &r.scenario.setup {
            out.push_str(&format!("  {sql}\n"));
        }
        out.push_str("steps:\n");
        for (i, st) in r.scenario.steps.iter().enumerate() {
            let want = if s.deadlock_detect {
                st.expected
            } else {
                st.without_detection
            };
            out.push_str(&format!(
                "  {:>2}. {:<4} {}  → {}\n",
                i + 1,
                st.session,
                Scenario::sql_for(&st.sql, &s.shared_lock_clause),
                want.describe()
            ));
        }
        out.push_str("dry run: nothing was created; add --execute to create the schema and run the scenario\n");
        return out;
    }
    for rep in &r.repetitions {
        if r.repetitions.len() > 1 && rep.n > 1 && rep.as_expected && r.same_every_time {
            continue;
        }
        out.push_str(&format!("run {}:\n", rep.n));
        for o in &rep.steps {
            out.push_str(&format!(
                "  {:>2}. {:<4} {:<7} {}{}  (expected {}){}\n",
                o.step,
                o.session,
                o.result,
                if o.blocked { "after waiting " } else { "" },
                o.error_code
                    .map(|c| format!("ERROR {c} "))
                    .unwrap_or_default(),
                o.expected,
                if o.as_expected { "" } else { "  ✗" }
            ));
        }
        out.push_str(&format!(
            "  victim: {}; Innodb_deadlocks {} → {}\n",
            rep.victim.as_deref().unwrap_or("none"),
            rep.deadlocks_before,
            rep.deadlocks_after
        ));
        for sname in &rep.rolled_back_open {
            out.push_str(&format!(
                "  session {sname} left its transaction open: innops rolled it back\n"
            ));
        }
        if let Some(d) = &rep.report {
            for l in parse::render(std::slice::from_ref(d)).lines() {
                out.push_str(&format!("  {l}\n"));
            }
        }
    }
    let victims: Vec<String> = r
        .repetitions
        .iter()
        .filter_map(|x| x.victim.clone())
        .collect();
    out.push_str(&format!(
        "{} run(s): {} deadlock(s), {}; {}\n",
        r.repetitions.len(),
        r.repetitions
            .iter()
            .map(|x| x.deadlocks_after - x.deadlocks_before)
            .sum::<u64>(),
        if r.same_every_time {
            format!(
                "the same outcome every time (victim {})",
                victims.first().map(String::as_str).unwrap_or("none")
            )
        } else {
            "outcomes differed between runs".to_string()
        },
        if r.as_expected {
            "every statement did what the scenario expects"
        } else {
            "some statements did not do what the scenario expects (✗)"
        }
    ));
    out
}
