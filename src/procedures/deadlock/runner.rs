//! Run a scenario deterministically: one connection per session, each statement sent from that session's own
//! thread. A statement expected to block is confirmed blocked from the server's own view before the next
//! statement is sent: its session's transaction in `LOCK WAIT` in information_schema.INNODB_TRX (a row or table
//! lock), or its processlist state `Waiting for … lock` or `User lock` (a metadata lock, a table lock, a
//! GET_LOCK). Nothing here sleeps. Every wait is bounded: a lock wait ends at the session's
//! innodb_lock_wait_timeout (and lock_wait_timeout, set to the same for metadata locks), and innops kills a
//! statement that outlives that.
//!
//! Every statement's reply is read to its end, every result set and every row: an error that arrives after a
//! result set's header (a scanning `SELECT … FOR UPDATE` chosen as the deadlock victim gets its ERROR 1213
//! after the column definitions, which `query_drop` would drop) ends the statement; the rows are kept for the
//! scenario's `rows` checks.
//!
//! What a repetition counts is its own: its deadlocks are the errors this run's sessions got (ERROR 1213, and
//! another error of a session InnoDB's report names as the victim, as MariaDB's ERROR 1467 for the victim of
//! an AUTO-INC lock), never the server-wide `Innodb_deadlocks`, which counts every schema's deadlocks (it is
//! shown, not judged). InnoDB's own report (LATEST DETECTED DEADLOCK) is read before and after each repetition:
//! a new report whose victim is one of this run's sessions must match an error that session got, so a run never
//! passes on a deadlock it did not see.

mod repetition;

use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mysql::Conn;
use serde::{Deserialize, Serialize};

use super::parse::Deadlock;
use super::scenario::Scenario;
pub use super::show::render;
use super::verdict::same_every_time;
pub use super::verdict::{is_lock_wait_state, schema_problem};
use crate::error::{bad_input, refused};
use crate::server::connect::Target;
use crate::server::facts::ServerFacts;
use crate::sql::{quote_ident, Queryable};

const TAG: &str = "/* innops:deadlock:run */";

/// InnoDB refreshes the INNODB_TRX cache only when it was not read for 100 ms (trx_i_s cache); a little more.
const TRX_CACHE_IDLE: Duration = Duration::from_millis(120);

/// How often the processlist (read live) is looked at while a statement expected to block has not yet.
const PROCESSLIST_PACE: Duration = Duration::from_millis(20);

/// Rows kept of one statement's reply (all are counted).
const ROWS_KEPT: usize = 1000;

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
    /// Hold the named lock of the schema for the run (a plan's step runs under its plan's lock instead).
    pub take_lock: bool,
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
    /// innodb_lock_wait_timeout (and lock_wait_timeout) per session.
    pub lock_wait_timeout: Vec<(String, u64)>,
    pub print_all_deadlocks: bool,
    pub shared_lock_clause: String,
    pub lock_waits_view: String,
    pub deadlock_holder_heading: String,
}

/// A row of a reply, each value as the text the server sent (NULL as None).
pub type Row = Vec<Option<String>>;

/// What one statement did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct StepOutcome {
    pub step: usize,
    pub session: String,
    pub sql: String,
    pub expected: String,
    /// Confirmed waiting for a lock before the next statement was sent (or ended by a lock wait timeout).
    pub blocked: bool,
    /// What the server showed it waiting for: `InnoDB lock wait`, or the processlist state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_for: Option<String>,
    /// ok, deadlock, timeout, error, or killed.
    pub result: String,
    pub error_code: Option<u16>,
    pub error: Option<String>,
    /// The rows of its result sets (the first 1000), where it returned any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<Vec<Row>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_count: Option<u64>,
    pub as_expected: bool,
    /// What differs from the scenario, where something does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wrong: Option<String>,
}

impl StepOutcome {
    /// A statement sent and not yet answered.
    pub fn sent(step: usize, session: &str, sql: &str, expected: String) -> StepOutcome {
        StepOutcome {
            step,
            session: session.to_string(),
            sql: sql.to_string(),
            expected,
            blocked: false,
            waited_for: None,
            result: String::new(),
            error_code: None,
            error: None,
            rows: None,
            row_count: None,
            as_expected: false,
            wrong: None,
        }
    }
}

/// One run of the scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Repetition {
    pub n: u32,
    pub steps: Vec<StepOutcome>,
    /// The session that got ERROR 1213 last.
    pub victim: Option<String>,
    /// Every session that got ERROR 1213, in the order the errors came.
    pub victims: Vec<String>,
    /// Deadlocks of this run's own sessions: statements ended by ERROR 1213, and one ended by another error
    /// whose session InnoDB's report names as the victim.
    pub deadlocks: u64,
    /// What the scenario expects.
    pub expected_deadlocks: u64,
    /// The session InnoDB's report (new in this repetition) says it rolled back.
    pub report_victim: Option<String>,
    /// InnoDB's latest report changed during this repetition.
    pub report_new: bool,
    /// The new report is about this run's sessions (not another client's deadlock).
    pub report_ours: bool,
    /// The server-wide counter around the repetition: every schema's deadlocks, shown, not judged.
    pub deadlocks_before: u64,
    pub deadlocks_after: u64,
    /// Sessions whose transaction was still open after the last statement; innops rolled each back.
    pub rolled_back_open: Vec<String>,
    /// Transactions of this run's sessions in INNODB_TRX after the rollback (0 unless something is wrong).
    pub open_after: u64,
    pub report: Option<Deadlock>,
    /// The deadlock count differs from the scenario's, in a sentence.
    pub count_problem: Option<String>,
    /// InnoDB's report disagrees with the errors the sessions got, in a sentence.
    pub report_problem: Option<String>,
    pub as_expected: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub scenario: Scenario,
    pub settings: InForce,
    pub executed: bool,
    pub repetitions: Vec<Repetition>,
    /// Every repetition had the same outcomes and the same victim (where the scenario fixes them).
    pub same_every_time: bool,
    pub as_expected: bool,
    pub schema_kept: bool,
}

/// A statement's reply, read to its end.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    /// The error that ended it (0: innops killed it).
    pub error: Option<(u16, String)>,
    /// Rows of its result sets, where it returned any.
    pub rows: Option<Vec<Row>>,
    pub row_count: u64,
    /// When the reply ended (the order of several sessions' errors).
    pub at: Option<Instant>,
}

struct Session {
    name: String,
    thread_id: u64,
    timeout: u64,
    tx: Option<Sender<String>>,
    rx: Receiver<Reply>,
    handle: Option<JoinHandle<()>>,
    /// The step waiting for its result.
    pending: Option<usize>,
}

impl Session {
    fn open(target: &Target, name: &str, schema: &str, timeout: u64) -> anyhow::Result<Session> {
        let mut conn = target.connect()?;
        conn.query_drop(format!(
            "SET {TAG} SESSION innodb_lock_wait_timeout = {timeout}, SESSION lock_wait_timeout = {timeout}"
        ))?;
        conn.query_drop(format!("USE {TAG} {}", quote_ident(schema)))?;
        let thread_id: u64 = conn
            .query_first(format!("SELECT {TAG} CONNECTION_ID()"))?
            .unwrap_or(0);
        let (tx, worker_rx) = channel::<String>();
        let (worker_tx, rx) = channel::<Reply>();
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

fn error_of(e: mysql::Error) -> (u16, String) {
    match e {
        mysql::Error::MySqlError(e) => (e.code, e.message),
        e => (0, crate::error::describe_mysql(&e)),
    }
}

fn text_of(v: &mysql::Value) -> Option<String> {
    use mysql::Value;
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::Int(i) => Some(i.to_string()),
        Value::UInt(u) => Some(u.to_string()),
        Value::Float(f) => Some(f.to_string()),
        Value::Double(d) => Some(d.to_string()),
        other => Some(other.as_sql(true).trim_matches('\'').to_string()),
    }
}

/// Send one statement and read its whole reply: every result set, every row, and the error that ends it
/// wherever it comes.
fn execute(conn: &mut Conn, sql: &str) -> Reply {
    crate::progress::statement(sql);
    let mut reply = Reply::default();
    match mysql::prelude::Queryable::query_iter(conn, sql) {
        Err(e) => reply.error = Some(error_of(e)),
        Ok(mut result) => {
            'sets: while let Some(set) = result.iter() {
                let has_columns = !set.columns().as_ref().is_empty();
                if has_columns && reply.rows.is_none() {
                    reply.rows = Some(Vec::new());
                }
                for row in set {
                    match row {
                        Ok(row) => {
                            reply.row_count += 1;
                            if let Some(rows) = reply.rows.as_mut().filter(|r| r.len() < ROWS_KEPT)
                            {
                                rows.push(row.unwrap().iter().map(text_of).collect());
                            }
                        }
                        Err(e) => {
                            reply.error = Some(error_of(e));
                            break 'sets;
                        }
                    }
                }
            }
        }
    }
    reply.at = Some(Instant::now());
    reply
}

fn worker(mut conn: Conn, rx: Receiver<String>, tx: Sender<Reply>) {
    while let Ok(sql) = rx.recv() {
        let r = execute(&mut conn, &sql);
        if tx.send(r).is_err() {
            break;
        }
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

/// Whether this thread's transaction waits for a row or table lock in InnoDB (a cache: see TRX_CACHE_IDLE).
fn in_lock_wait(monitor: &mut Conn, thread_id: u64) -> anyhow::Result<bool> {
    let n: Option<u64> = monitor.query_first(format!(
        "SELECT {TAG} COUNT(*) FROM information_schema.INNODB_TRX \
         WHERE trx_mysql_thread_id = {thread_id} AND trx_state = 'LOCK WAIT'"
    ))?;
    Ok(n.unwrap_or(0) > 0)
}

/// The thread's processlist state when it is a lock wait (read live).
fn processlist_wait(monitor: &mut Conn, thread_id: u64) -> anyhow::Result<Option<String>> {
    let state: Option<Option<String>> = monitor.query_first(format!(
        "SELECT {TAG} STATE FROM information_schema.PROCESSLIST WHERE ID = {thread_id}"
    ))?;
    Ok(state.flatten().filter(|s| is_lock_wait_state(s)))
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

fn innodb_status(monitor: &mut Conn) -> anyhow::Result<String> {
    let status: Option<(String, String, String)> =
        monitor.query_first(format!("SHOW {TAG} ENGINE INNODB STATUS"))?;
    Ok(status.map(|(_, _, t)| t).unwrap_or_default())
}

fn open_trx(monitor: &mut Conn, ids: &[u64]) -> anyhow::Result<Vec<u64>> {
    let live = live_transactions(&innodb_status(monitor)?);
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
    if let Some(problem) = schema_problem(&s.schema) {
        return Err(bad_input(problem));
    }
    let mut monitor = target.connect()?;
    let facts = ServerFacts::collect(&mut monitor)?;
    let in_force = settings(&mut monitor, &facts, scenario, s)?;
    // Another innops run's schema is never called a leftover: its lock says it is in use.
    let lock_object = format!("deadlock:{}", s.schema);
    let mut locks =
        crate::plan::lock::Locks::new(crate::plan::Procedure::Deadlock, vec![lock_object]);
    if s.take_lock {
        if s.execute {
            locks.ensure(target)?;
        } else if let Some(why) = locks.taken(target)? {
            return Err(refused(format!("{why}, or give another --schema")));
        }
    }
    let exists: Option<String> = monitor.query_first(format!(
        "SELECT {TAG} SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{}'",
        s.schema.replace('\\', "\\\\").replace('\'', "''")
    ))?;
    if exists.is_some() {
        return Err(refused(format!(
            "schema {} already exists on {} and a scenario runs in a schema of its own: drop it if it is a leftover of an earlier run, or pick another with --schema",
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
            let rep = repetition::repetition(target, &mut monitor, scenario, &in_force, n)?;
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
    report.same_every_time = same_every_time(scenario, &report.repetitions);
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
