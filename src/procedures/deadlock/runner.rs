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

use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mysql::Conn;
use serde::{Deserialize, Serialize};

use super::parse::{self, Deadlock};
use super::scenario::{rows_text, End, Expectation, Scenario};
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

/// Schemas a scenario never runs in (it creates and drops its schema).
const SYSTEM_SCHEMAS: &[&str] = &["mysql", "information_schema", "performance_schema", "sys"];

/// Why `schema` cannot be a scenario's schema, as a sentence with the fix; None if it can.
pub fn schema_problem(schema: &str) -> Option<String> {
    let chars = schema.chars().count();
    if chars == 0 || chars > 64 || schema.ends_with(' ') {
        return Some(format!(
            "--schema {schema:?} is not a schema name the server takes: give 1 to 64 characters that do not end in a space, e.g. innops_deadlock"
        ));
    }
    if SYSTEM_SCHEMAS
        .iter()
        .any(|s| s.eq_ignore_ascii_case(schema))
    {
        return Some(format!(
            "--schema {schema} is a system schema, and a scenario runs in a schema it creates and removes again: give a schema of its own, e.g. innops_deadlock"
        ));
    }
    None
}

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
struct Reply {
    /// The error that ended it (0: innops killed it).
    error: Option<(u16, String)>,
    /// Rows of its result sets, where it returned any.
    rows: Option<Vec<Row>>,
    row_count: u64,
    /// When the reply ended (the order of several sessions' errors).
    at: Option<Instant>,
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

/// Whether a processlist state is a wait for a lock the server's SQL layer manages: a metadata lock (`Waiting
/// for table metadata lock`, `… schema metadata lock`, …), a table-level lock, the global read lock, or a
/// GET_LOCK (`User lock`).
pub fn is_lock_wait_state(state: &str) -> bool {
    (state.starts_with("Waiting for") && state.ends_with("lock")) || state == "User lock"
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
    let mut locks = crate::plan::lock::Locks::new(vec![lock_object]);
    if s.take_lock {
        if s.execute {
            locks.ensure(target)?;
        } else if let Some((object, who)) = locks.taken(target)? {
            return Err(refused(format!(
                "another innops run is working on {object} ({who} holds its lock): wait for it to finish, or give another --schema"
            )));
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
    report.same_every_time = same_every_time(scenario, &report.repetitions);
    report.as_expected = report.repetitions.iter().all(|r| r.as_expected);
    Ok(report)
}

/// Whether every repetition had the same outcome. A step whose end the scenario leaves open (one of several)
/// is compared by its verdict, and the victims only where no step leaves its end open.
fn same_every_time(scenario: &Scenario, reps: &[Repetition]) -> bool {
    let open_end = |i: usize| scenario.steps.get(i).is_some_and(|s| s.expected.one_of());
    let any_open = (0..scenario.steps.len()).any(open_end);
    let sig = |r: &Repetition| {
        (
            r.steps
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    if open_end(i) {
                        (o.as_expected.to_string(), o.as_expected)
                    } else {
                        (o.result.clone(), o.blocked)
                    }
                })
                .collect::<Vec<_>>(),
            if any_open { None } else { r.victim.clone() },
            r.deadlocks,
        )
    };
    let first = reps.first().map(sig);
    reps.iter().all(|r| Some(sig(r)) == first)
}

fn set_detect(monitor: &mut Conn, on: bool) -> anyhow::Result<()> {
    monitor.query_drop(format!(
        "SET {TAG} GLOBAL innodb_deadlock_detect = {}",
        if on { "ON" } else { "OFF" }
    ))?;
    Ok(())
}

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

/// Judge a statement's reply against what the scenario expects of it (pure: unit-tested).
fn record(
    outcome: &mut StepOutcome,
    r: &Reply,
    want: &Expectation,
    returns: &super::scenario::RowsCheck,
) {
    let code = r.error.as_ref().map(|(c, _)| *c);
    let killed = code == Some(0);
    outcome.result = match code {
        None => "ok",
        Some(0) => "killed",
        Some(1213) => "deadlock",
        Some(1205) => "timeout",
        Some(_) => "error",
    }
    .into();
    outcome.error_code = code.filter(|c| *c != 0);
    outcome.error = r.error.as_ref().map(|(_, m)| m.clone());
    outcome.rows = r.rows.clone();
    outcome.row_count = r.rows.as_ref().map(|_| r.row_count);
    // A lock wait timeout is the end of a wait, whether or not innops saw the wait before it ended.
    if code == Some(1205) {
        outcome.blocked = true;
    }
    let end = End::of(code);
    let mut wrong = Vec::new();
    if killed {
        wrong.push("innops killed it".to_string());
    } else if !want.allows(end) {
        wrong.push(format!(
            "ended {}, expected {}",
            end.name(),
            want.describe()
        ));
    }
    // A statement expected to end in a lock wait timeout has waited by definition; otherwise the wait must be
    // as the scenario says.
    let wait_matters = !(end == End::Timeout && want.allows(End::Timeout));
    if wait_matters && want.block != outcome.blocked {
        wrong.push(if want.block {
            "it did not wait for a lock".to_string()
        } else {
            "it waited for a lock".to_string()
        });
    }
    if !returns.is_empty() && end == End::Ok {
        let got = r.rows.clone().unwrap_or_default();
        if !returns.matches(&got) {
            wrong.push(format!(
                "it returned {} ({} row(s)), expected {}",
                rows_text(got.iter().map(|r| r.iter().map(|v| v.as_deref()))),
                r.row_count,
                returns.describe()
            ));
        }
    }
    outcome.as_expected = wrong.is_empty();
    outcome.wrong = (!wrong.is_empty()).then(|| wrong.join("; "));
}

/// What InnoDB's report says about this repetition, judged against the errors the sessions got (pure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportJudgement {
    pub report_victim: Option<String>,
    pub ours: bool,
    /// A session InnoDB rolled back that got no error: counts as a deadlock the run did not see.
    pub unseen: Option<String>,
    /// A session the report names that ended in an error other than 1213 (counted as a deadlock).
    pub other_error_victim: bool,
    pub problem: Option<String>,
}

/// `sessions`: (name, thread id); `errors`: (session, error code) of every statement that ended in an error.
pub fn judge_report(
    report: Option<&Deadlock>,
    sessions: &[(String, u64)],
    errors: &[(String, u16)],
) -> ReportJudgement {
    let mut j = ReportJudgement {
        report_victim: None,
        ours: false,
        unseen: None,
        other_error_victim: false,
        problem: None,
    };
    let Some(d) = report else { return j };
    let name_of = |id: u64| {
        sessions
            .iter()
            .find(|(_, t)| *t == id)
            .map(|(n, _)| n.clone())
    };
    j.ours = d
        .transactions
        .iter()
        .any(|t| t.thread_id.and_then(name_of).is_some());
    let victim_thread = d.victim_txn().and_then(|t| t.thread_id);
    let Some(victim) = victim_thread.and_then(name_of) else {
        if j.ours {
            j.problem = Some(format!(
                "InnoDB's report of a deadlock of this run's sessions names {} as the victim, not one of them",
                victim_thread.map_or("no thread".to_string(), |t| format!("thread {t}"))
            ));
        }
        return j;
    };
    j.report_victim = Some(victim.clone());
    let codes: Vec<u16> = errors
        .iter()
        .filter(|(s, _)| *s == victim)
        .map(|(_, c)| *c)
        .collect();
    if codes.is_empty() {
        j.unseen = Some(victim.clone());
        j.problem = Some(format!(
            "InnoDB's report names {victim} (thread {}) as the deadlock victim it rolled back, but {victim} got no ERROR 1213 (no error at all): the run did not see this deadlock",
            victim_thread.unwrap_or(0)
        ));
    } else if !codes.contains(&1213) {
        j.other_error_victim = true;
    }
    j
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
    let mut sessions: Vec<Session> = Vec::new();
    for (name, timeout) in &in_force.lock_wait_timeout {
        sessions.push(Session::open(target, name, &in_force.schema, *timeout)?);
    }
    let max_timeout = sessions.iter().map(|s| s.timeout).max().unwrap_or(1);
    // A statement ends within its lock wait timeout (or by deadlock detection); allow the server some slack.
    let bound = Duration::from_secs(max_timeout * 2 + 10);
    let deadlocks_before = status_u64(monitor, "Innodb_deadlocks")?;
    let report_before = parse::parse_latest(&innodb_status(monitor)?);
    let mut last_trx_read: Option<Instant> = None;
    let mut outcomes: Vec<StepOutcome> = Vec::new();
    let mut replies: Vec<Option<Reply>> = Vec::new();
    let want_of = |i: usize| {
        let st = &scenario.steps[i];
        if in_force.deadlock_detect {
            &st.expected
        } else {
            &st.without_detection
        }
    };
    for (i, step) in scenario.steps.iter().enumerate() {
        let want = want_of(i);
        let si = scenario
            .sessions
            .iter()
            .position(|s| *s == step.session)
            .expect("validated session");
        // The session's previous statement must end before it sends the next.
        if let Some(p) = sessions[si].pending.take() {
            let r = finish(monitor, &sessions[si], bound)?;
            record(&mut outcomes[p], &r, want_of(p), &scenario.steps[p].returns);
            replies[p] = Some(r);
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
            waited_for: None,
            result: String::new(),
            error_code: None,
            error: None,
            rows: None,
            row_count: None,
            as_expected: false,
            wrong: None,
        };
        sessions[si].send(sql)?;
        if want.block {
            let start = Instant::now();
            let mut done = None;
            let tid = sessions[si].thread_id;
            loop {
                if let Some(state) = processlist_wait(monitor, tid)? {
                    outcome.blocked = true;
                    outcome.waited_for = Some(state);
                    break;
                }
                // INNODB_TRX is a cache InnoDB refreshes only when nobody read it in the last 100 ms: read it
                // no more often than that, and meanwhile wait for the statement's own result.
                let since = last_trx_read.map_or(TRX_CACHE_IDLE, |t: Instant| t.elapsed());
                if since >= TRX_CACHE_IDLE {
                    let waiting = in_lock_wait(monitor, tid)?;
                    last_trx_read = Some(Instant::now());
                    if waiting {
                        outcome.blocked = true;
                        outcome.waited_for = Some("InnoDB lock wait".into());
                        break;
                    }
                }
                match sessions[si].rx.recv_timeout(PROCESSLIST_PACE) {
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
            replies.push(None);
            match done {
                Some(r) => {
                    record(
                        outcomes.last_mut().expect("pushed"),
                        &r,
                        want,
                        &step.returns,
                    );
                    replies[i] = Some(r);
                }
                None => sessions[si].pending = Some(i),
            }
        } else {
            let r = finish(monitor, &sessions[si], bound)?;
            record(&mut outcome, &r, want, &step.returns);
            outcomes.push(outcome);
            replies.push(Some(r));
        }
    }
    for sess in sessions.iter_mut() {
        if let Some(p) = sess.pending.take() {
            let r = finish(monitor, sess, bound)?;
            record(&mut outcomes[p], &r, want_of(p), &scenario.steps[p].returns);
            replies[p] = Some(r);
        }
    }
    let deadlocks_after = status_u64(monitor, "Innodb_deadlocks")?;
    let report_after = parse::parse_latest(&innodb_status(monitor)?);
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
    // The errors in the order they came.
    let mut errors: Vec<(Instant, String, u16)> = outcomes
        .iter()
        .zip(&replies)
        .filter_map(|(o, r)| {
            let r = r.as_ref()?;
            let (code, _) = r.error.as_ref()?;
            Some((r.at?, o.session.clone(), *code))
        })
        .collect();
    errors.sort_by_key(|(at, _, _)| *at);
    let victims: Vec<String> = errors
        .iter()
        .filter(|(_, _, c)| *c == 1213)
        .map(|(_, s, _)| s.clone())
        .collect();
    let report_new = report_after.is_some() && report_after != report_before;
    let report = if report_new { report_after } else { None };
    let named: Vec<(String, u64)> = sessions
        .iter()
        .map(|s| (s.name.clone(), s.thread_id))
        .collect();
    let codes: Vec<(String, u16)> = errors.iter().map(|(_, s, c)| (s.clone(), *c)).collect();
    let j = judge_report(report.as_ref(), &named, &codes);
    let deadlocks = victims.len() as u64 + u64::from(j.other_error_victim || j.unseen.is_some());
    let mut victims = victims;
    if let (true, Some(v)) = (j.other_error_victim, &j.report_victim) {
        victims.push(v.clone());
    }
    let expected_deadlocks = scenario.victims_per_run(in_force.deadlock_detect);
    let count_problem = (deadlocks != expected_deadlocks).then(|| {
        format!(
            "this run's sessions had {deadlocks} deadlock(s), the scenario expects {expected_deadlocks}"
        )
    });
    let as_expected =
        outcomes.iter().all(|o| o.as_expected) && count_problem.is_none() && j.problem.is_none();
    drop(sessions);
    Ok(Repetition {
        n,
        steps: outcomes,
        victim: victims.last().cloned(),
        victims,
        deadlocks,
        expected_deadlocks,
        report_victim: j.report_victim,
        report_new,
        report_ours: j.ours,
        deadlocks_before,
        deadlocks_after,
        rolled_back_open,
        open_after,
        report,
        count_problem,
        report_problem: j.problem,
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
                &st.expected
            } else {
                &st.without_detection
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
                "  {:>2}. {:<4} {:<7} {}{}{}  (expected {}){}\n",
                o.step,
                o.session,
                o.result,
                if o.blocked { "after waiting " } else { "" },
                o.error_code
                    .map(|c| format!("ERROR {c} "))
                    .unwrap_or_default(),
                match &o.rows {
                    Some(rows) if rows.len() <= 10 => format!(
                        "rows {} ",
                        rows_text(rows.iter().map(|r| r.iter().map(|v| v.as_deref())))
                    ),
                    Some(_) => format!("{} rows ", o.row_count.unwrap_or(0)),
                    None => String::new(),
                },
                o.expected,
                match &o.wrong {
                    Some(w) => format!("  ✗ {w}"),
                    None if !o.as_expected => "  ✗".to_string(),
                    None => String::new(),
                }
            ));
        }
        out.push_str(&format!(
            "  victim: {}; deadlocks of this run's sessions: {} (expected {}); Innodb_deadlocks {} → {} (server-wide)\n",
            if rep.victims.len() > 1 {
                rep.victims.join(", ")
            } else {
                rep.victim.clone().unwrap_or_else(|| "none".into())
            },
            rep.deadlocks,
            rep.expected_deadlocks,
            rep.deadlocks_before,
            rep.deadlocks_after
        ));
        for p in rep.count_problem.iter().chain(&rep.report_problem) {
            out.push_str(&format!("  ✗ {p}\n"));
        }
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
        r.repetitions.iter().map(|x| x.deadlocks).sum::<u64>(),
        if r.same_every_time {
            let mut distinct: Vec<&str> = victims.iter().map(String::as_str).collect();
            distinct.sort_unstable();
            distinct.dedup();
            format!(
                "the same outcome every time (victim {})",
                match distinct.len() {
                    0 => "none".to_string(),
                    1 => distinct[0].to_string(),
                    _ => format!("one of {}, as the scenario allows", distinct.join(", ")),
                }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedures::deadlock::parse::Txn;
    use crate::procedures::deadlock::scenario::RowsCheck;

    fn outcome() -> StepOutcome {
        StepOutcome {
            step: 1,
            session: "t2".into(),
            sql: String::new(),
            expected: String::new(),
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

    fn reply(code: Option<u16>) -> Reply {
        Reply {
            error: code.map(|c| (c, "x".into())),
            ..Reply::default()
        }
    }

    fn want(block: bool, ends: &[End]) -> Expectation {
        Expectation {
            block,
            ends: ends.to_vec(),
        }
    }

    #[test]
    fn an_expected_timeout_passes_whether_or_not_the_wait_was_seen() {
        let none = RowsCheck {
            rows: None,
            row_count: None,
        };
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(1205)),
            &want(false, &[End::Timeout]),
            &none,
        );
        assert!(o.as_expected, "{o:?}");
        assert!(o.blocked);
        let mut o = outcome();
        o.blocked = true;
        record(
            &mut o,
            &reply(Some(1205)),
            &want(true, &[End::Timeout]),
            &none,
        );
        assert!(o.as_expected, "{o:?}");
        // A statement expected to return that timed out, or one expected to block that did not.
        let mut o = outcome();
        record(&mut o, &reply(Some(1205)), &want(false, &[End::Ok]), &none);
        assert!(!o.as_expected);
        assert!(o.wrong.unwrap().contains("ended timeout"));
        let mut o = outcome();
        record(&mut o, &reply(None), &want(true, &[End::Ok]), &none);
        assert_eq!(o.wrong.as_deref(), Some("it did not wait for a lock"));
    }

    #[test]
    fn error_codes_one_of_ends_and_rows_are_judged() {
        let none = RowsCheck {
            rows: None,
            row_count: None,
        };
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(1467)),
            &want(false, &[End::Error(1467)]),
            &none,
        );
        assert!(o.as_expected);
        assert_eq!(o.result, "error");
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(1213)),
            &want(false, &[End::Error(1467)]),
            &none,
        );
        assert!(!o.as_expected);
        for code in [None, Some(1213)] {
            let mut o = outcome();
            o.blocked = true;
            record(
                &mut o,
                &reply(code),
                &want(true, &[End::Ok, End::Deadlock]),
                &none,
            );
            assert!(o.as_expected, "{code:?}");
        }
        let two = RowsCheck {
            rows: Some(vec![vec!["1".into()], vec!["3".into()]]),
            row_count: None,
        };
        let rows = |v: &[&str]| Reply {
            rows: Some(v.iter().map(|x| vec![Some(x.to_string())]).collect()),
            row_count: v.len() as u64,
            ..Reply::default()
        };
        let mut o = outcome();
        record(&mut o, &rows(&["1", "3"]), &want(false, &[End::Ok]), &two);
        assert!(o.as_expected);
        assert_eq!(o.row_count, Some(2));
        let mut o = outcome();
        record(
            &mut o,
            &rows(&["1", "2", "3"]),
            &want(false, &[End::Ok]),
            &two,
        );
        assert!(!o.as_expected);
        assert!(o.wrong.unwrap().contains("it returned [[1], [2], [3]]"));
        // innops's own kill is never as expected.
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(0)),
            &want(false, &[End::Ok, End::Timeout]),
            &none,
        );
        assert_eq!(o.result, "killed");
        assert!(!o.as_expected);
    }

    fn report(victim_thread: u64, other: u64) -> Deadlock {
        let txn = |n: u32, t: u64| Txn {
            number: n,
            thread_id: Some(t),
            ..Txn::default()
        };
        Deadlock {
            ts: None,
            transactions: vec![txn(1, victim_thread), txn(2, other)],
            victim: Some(1),
            truncated: false,
        }
    }

    #[test]
    fn the_report_must_name_a_victim_whose_session_got_an_error() {
        let sessions = vec![("t1".to_string(), 10), ("t2".to_string(), 11)];
        // Seen: t2 got 1213 and the report names t2.
        let j = judge_report(Some(&report(11, 10)), &sessions, &[("t2".into(), 1213)]);
        assert_eq!(j.report_victim.as_deref(), Some("t2"));
        assert!(j.problem.is_none() && j.ours && !j.other_error_victim);
        // Unseen: the report names t1, which got no error.
        let j = judge_report(Some(&report(10, 11)), &sessions, &[]);
        assert_eq!(j.unseen.as_deref(), Some("t1"));
        assert!(j.problem.unwrap().contains("t1 got no ERROR 1213"));
        // The victim told with another code (1467): counted, no problem.
        let j = judge_report(Some(&report(11, 10)), &sessions, &[("t2".into(), 1467)]);
        assert!(j.other_error_victim && j.problem.is_none());
        // Another client's deadlock: not this run's, judged neither way.
        let j = judge_report(Some(&report(50, 51)), &sessions, &[("t2".into(), 1213)]);
        assert!(!j.ours && j.problem.is_none() && j.report_victim.is_none());
        // A deadlock with a foreign session whose victim is the foreign one disturbs the scenario.
        let j = judge_report(Some(&report(50, 10)), &sessions, &[]);
        assert!(j.ours && j.problem.is_some());
        assert_eq!(judge_report(None, &sessions, &[]).problem, None);
    }

    #[test]
    fn lock_wait_states_of_the_sql_layer_are_recognised() {
        for s in [
            "Waiting for table metadata lock",
            "Waiting for schema metadata lock",
            "Waiting for table level lock",
            "Waiting for global read lock",
            "Waiting for backup lock",
            "User lock",
        ] {
            assert!(is_lock_wait_state(s), "{s}");
        }
        for s in [
            "Sending data",
            "Updating",
            "Waiting for table flush",
            "User sleep",
            "",
        ] {
            assert!(!is_lock_wait_state(s), "{s}");
        }
    }

    #[test]
    fn schema_names_the_server_refuses_and_system_schemas_are_problems() {
        assert!(schema_problem("innops_deadlock").is_none());
        assert!(schema_problem("a.b").is_none());
        for bad in ["", "x ", &"y".repeat(65)] {
            assert!(
                schema_problem(bad).unwrap().contains("1 to 64 characters"),
                "{bad:?}"
            );
        }
        for sys in [
            "mysql",
            "MySQL",
            "information_schema",
            "performance_schema",
            "sys",
        ] {
            assert!(
                schema_problem(sys).unwrap().contains("system schema"),
                "{sys}"
            );
        }
    }
}
