//! Transactions that were active when the server crashed, and whether the rows innops dumps may hold their
//! uncommitted values (issue 21).
//!
//! What MariaDB 10.11 tells, measured (a session's open `UPDATE` of 222 rows in two tables, kill -9): every start
//! that reads the undo logs says `InnoDB: 1 transaction(s) which must be rolled back or cleaned up in total 222
//! row operations to undo` (no id). Below level 3 it rolls them back in the background and names each one:
//! `Rolled back recovered transaction 37`, then `Rollback of non-prepared transactions completed`. That line is
//! printed even when the rollback **gave up** at an unreadable undo page: the start then also logs `Failed to read
//! page 308 from file './ibdata1'` and 197 of the 217 rows keep the uncommitted values while
//! `information_schema.INNODB_TRX` lists nothing. At levels 3 and 4 nothing is rolled back; INNODB_TRX lists the
//! transaction (`trx_mysql_thread_id` 0), a consistent read gets each row as it was before it (InnoDB builds that
//! version from the undo log, or crashes with `[FATAL] InnoDB: Unknown error Required history data has been
//! deleted` when the undo page is unreadable). At level 5 the undo logs are not read at all: InnoDB treats the
//! transaction as committed and logs nothing about it.
//!
//! No view names the tables a recovered transaction touched (`SHOW ENGINE INNODB STATUS` prints no lock lines for
//! it even with `innodb_status_output_locks`), but it still holds an IX lock on each: at level 3 a `LOCK TABLES t
//! READ` waits for that lock, and `INNODB_LOCK_WAITS` names the holder. So when the run may go to level 3, innops
//! first starts the copy at level 3 (nothing rolled back yet), asks, and stops it again ([`look`]); a rollback that
//! gives up later is then tied to its tables, and the other tables stay complete.
//!
//! The private server's error log is parsed as a whole (every start of this run: the look, each escalation
//! attempt, each restart during the dump), so a crash in the middle of a rollback and the start after it are
//! judged together ([`assess`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::private::{Attempt, Private};
use crate::dump::{Doubt, DoubtKind, Manifest, TableName, TableStatus};
use crate::server::Target;
use crate::sql::Queryable;

/// What became of a transaction InnoDB found active at the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrxState {
    /// Rolled back, and nothing in that start's log says the undo log could not be read.
    RolledBack,
    /// The log says it was rolled back, but an undo page could not be read in that start: the rollback stopped
    /// there and the rows it had not reached keep the uncommitted values.
    GaveUp,
    /// The rollback began and the log does not show it ending (the server stopped or crashed meanwhile, or it
    /// still runs).
    Interrupted,
    /// Not rolled back (innodb_force_recovery 3 or 4): still active; consistent reads see rows as before it.
    NotRolledBack,
    /// innodb_force_recovery 5 or more: InnoDB did not read the undo logs, so it treats any transaction active at
    /// the crash as committed (one an earlier start of the run found, or, when no start read the undo logs, an
    /// unknown one).
    UndoNotRead,
}

/// A transaction InnoDB found active at a start of the private server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveredTrx {
    /// The transaction id; `None` where no evidence names it (a level-5 start, a rollback that crashed before
    /// its log line).
    pub id: Option<u64>,
    /// Row changes to undo, where known (the log gives only the total of one start).
    pub rows: Option<u64>,
    pub state: TrxState,
    /// The tables it holds a lock on, as the server answered; `None`: innops could not ask.
    pub tables: Option<Vec<TableName>>,
    /// innodb_force_recovery of the start that decided `state`.
    pub level: u8,
    /// The undo pages that start could not read (`page 308 of ./ibdata1`), for a rollback that gave up.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
}

impl RecoveredTrx {
    /// Whether rows it changed may hold its uncommitted values in what the server serves now.
    pub fn doubtful(&self) -> bool {
        matches!(
            self.state,
            TrxState::GaveUp | TrxState::Interrupted | TrxState::UndoNotRead
        )
    }

    fn name(&self) -> String {
        match self.id {
            Some(id) => format!("transaction {id}"),
            None => "a transaction (the log names no id)".into(),
        }
    }

    fn changes(&self) -> String {
        self.rows
            .map(|n| format!(" ({} row change{})", n, if n == 1 { "" } else { "s" }))
            .unwrap_or_default()
    }

    fn table_list(&self) -> Option<String> {
        self.tables.as_ref().map(|ts| {
            if ts.is_empty() {
                "no user table".to_string()
            } else {
                ts.iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        })
    }
}

/// One sentence for a person: what happened to the transaction and what it means for the dump.
pub fn describe(t: &RecoveredTrx) -> String {
    let who = format!("{}{}", t.name(), t.changes());
    let rows_of = match t.table_list() {
        Some(list) => format!("rows of {list}"),
        None => "rows of any table (innops cannot tell which tables it touched)".into(),
    };
    match t.state {
        TrxState::RolledBack => format!(
            "{who} was active at the crash and InnoDB rolled it back (innodb_force_recovery {}; its error log shows the rollback and no unreadable undo page)",
            t.level
        ),
        TrxState::GaveUp => format!(
            "{who} was active at the crash; InnoDB's rollback of it could not read {} and stopped short (innodb_force_recovery {}, though the log says it was rolled back): {rows_of} may hold its uncommitted values",
            if t.unreadable.is_empty() { "an undo page".to_string() } else { t.unreadable.join(", ") },
            t.level
        ),
        TrxState::Interrupted => format!(
            "{who} was active at the crash; its rollback began but the error log does not show it finishing (innodb_force_recovery {}): {rows_of} may hold its uncommitted values",
            t.level
        ),
        TrxState::NotRolledBack => format!(
            "{who} was active at the crash and was not rolled back (innodb_force_recovery {}){}; the dump reads each row as it was before it (InnoDB builds that version from the undo log)",
            t.level,
            t.table_list().map(|l| format!(", it touched {l}")).unwrap_or_default()
        ),
        TrxState::UndoNotRead if t.id.is_some() => format!(
            "{who} was active at the crash; innodb_force_recovery {} does not read the undo logs, so InnoDB serves its changes as committed: {rows_of} may hold its uncommitted values",
            t.level
        ),
        TrxState::UndoNotRead => format!(
            "innodb_force_recovery {} does not read the undo logs: InnoDB treats any transaction active at the crash as committed, and innops cannot tell whether one was or which tables it touched: rows of any table may hold uncommitted values",
            t.level
        ),
    }
}

/// The doubts the dump records: for each transaction whose changes may be served as committed, each table it
/// touched, or every table (`None`) when the server could not say which.
pub fn doubts(trx: &[RecoveredTrx]) -> Vec<(Option<TableName>, Doubt)> {
    let mut out = Vec::new();
    for t in trx.iter().filter(|t| t.doubtful()) {
        let doubt = Doubt {
            kind: DoubtKind::Uncommitted,
            why: describe(t),
            range: None,
            keys: Vec::new(),
        };
        match &t.tables {
            Some(ts) => out.extend(ts.iter().map(|n| (Some(n.clone()), doubt.clone()))),
            None => out.push((None, doubt)),
        }
    }
    out
}

/// Add to `m` the doubts the dump did not know of when it began (a rollback that gave up during the dump, seen in
/// the log afterwards), and write manifest.json again. Whether anything changed.
pub fn amend(
    out: &Path,
    m: &mut Manifest,
    doubts: &[(Option<TableName>, Doubt)],
) -> anyhow::Result<bool> {
    let mut changed = false;
    for t in &mut m.tables {
        for (name, d) in doubts {
            let here = name
                .as_ref()
                .is_none_or(|n| n.db == t.db && n.table == t.table);
            if here && !t.doubts.contains(d) {
                t.doubts.push(d.clone());
                if t.status != TableStatus::Unrecoverable {
                    t.status = TableStatus::Doubtful;
                }
                changed = true;
            }
        }
    }
    if changed {
        let p = out.join(crate::dump::manifest::MANIFEST);
        std::fs::write(&p, serde_json::to_string_pretty(m)?)?;
    }
    Ok(changed)
}

/// What one start of the server said about recovered transactions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Start {
    level: u8,
    /// Transactions and row operations to undo, when the start read the undo logs and found any.
    recovered: Option<(u64, u64)>,
    rolled_back: Vec<u64>,
    /// `Rolling back trx with id N, M rows to undo` (MySQL, older MariaDB): id and rows.
    rolling: Vec<(u64, Option<u64>)>,
    rollback_started: bool,
    rollback_done: bool,
    /// Pages of the system or undo tablespaces that could not be read (`page 308 of './ibdata1'`).
    unreadable: Vec<String>,
    crashed: bool,
    /// `128 rollback segments are active.`: the start read the undo logs (never at level 5 or more, nor when an
    /// undo log page it needs at startup is unreadable).
    undo_read: bool,
}

fn is_start_line(line: &str) -> bool {
    line.contains("[Note] Starting MariaDB ") || line.contains("starting as process")
}

/// The number right after `key` in `line`, decimal or `0x` hex.
fn number_after(line: &str, key: &str) -> Option<u64> {
    let rest = &line[line.find(key)? + key.len()..];
    let rest = rest.trim_start();
    if let Some(hex) = rest.strip_prefix("0x") {
        let digits: String = hex.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
        return u64::from_str_radix(&digits, 16).ok();
    }
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// `InnoDB: 1 transaction(s) which must be rolled back or cleaned up in total 222 row operations to undo`.
fn recovered_count(line: &str) -> Option<(u64, u64)> {
    let i = line.find(" transaction(s) which must be rolled back")?;
    let n = line[..i].rsplit(' ').next()?.parse().ok()?;
    let rows = number_after(line, "in total ")?;
    Some((n, rows))
}

/// `Failed to read page 308 from file './ibdata1': …` for a file that is not a table's own tablespace (the
/// system tablespace, an undo tablespace): where the undo logs live.
fn unreadable_undo(line: &str) -> Option<String> {
    let page = number_after(line, "Failed to read page ")?;
    let file = line.split("from file '").nth(1)?.split('\'').next()?;
    (!file.ends_with(".ibd")).then(|| format!("page {page} of {file}"))
}

fn starts(lines: &[String]) -> Vec<Start> {
    let mut out: Vec<Start> = Vec::new();
    for line in lines {
        if is_start_line(line) || out.is_empty() {
            out.push(Start::default());
            if is_start_line(line) {
                continue;
            }
        }
        let s = out.last_mut().expect("pushed above");
        if let Some(l) = number_after(line, "innodb_force_recovery is set to ") {
            s.level = l.min(6) as u8;
        } else if let Some(r) = recovered_count(line) {
            s.recovered = Some(r);
        } else if line.contains("rollback segments are active") {
            s.undo_read = true;
        } else if line.contains("Starting in background the rollback") {
            s.rollback_started = true;
        } else if let Some(id) = number_after(line, "Rolled back recovered transaction ") {
            s.rolled_back.push(id);
        } else if let Some(id) = number_after(line, "Rolling back trx with id ") {
            let rows = line.split(", ").nth(1).and_then(|r| number_after(r, ""));
            s.rolling.push((id, rows));
        } else if let Some(id) = number_after(line, "Rollback of trx with id ") {
            if line.contains(" completed") {
                s.rolled_back.push(id);
            }
        } else if line.contains("Rollback of non-prepared transactions completed") {
            s.rollback_done = true;
        } else if let Some(page) = unreadable_undo(line) {
            if !s.unreadable.contains(&page) {
                s.unreadable.push(page);
            }
        } else if line.contains(" got signal ")
            || line.contains("[FATAL]")
            || line.contains("Assertion failure")
        {
            s.crashed = true;
        }
    }
    out
}

/// What the private server's error log (every start of this run) says of transactions active at the crash,
/// combined with what the server answered about them (`seen`: ids, row counts, tables, from [`read_active`]).
/// The last start that read the undo logs decides each transaction's state, except that a rollback that gave up
/// stays given up (its undo log is gone, the rows keep their values). A start at level 5 or more serves those
/// still active as committed, and, when no start of the run read the undo logs, an unknown one too.
pub fn assess(lines: &[String], seen: &[RecoveredTrx]) -> Vec<RecoveredTrx> {
    let all = starts(lines);
    let mut gave_up: BTreeMap<u64, RecoveredTrx> = BTreeMap::new();
    let mut last: Vec<RecoveredTrx> = Vec::new();
    let mut undo_not_read = None;
    let mut undo_read = false;
    for s in &all {
        undo_read |= s.level < 5 && (s.undo_read || s.recovered.is_some());
        if s.level >= 5 {
            undo_not_read = Some(s.level);
            continue;
        }
        let Some((n, rows)) = s.recovered else {
            continue;
        };
        let one_rows = (n == 1).then_some(rows);
        let mut here = Vec::new();
        if s.level >= 3 {
            for _ in 0..n {
                here.push(trx(None, one_rows, TrxState::NotRolledBack, s.level));
            }
        } else {
            let mut named: Vec<(u64, Option<u64>)> =
                s.rolled_back.iter().map(|&id| (id, one_rows)).collect();
            for &(id, r) in &s.rolling {
                if !s.rolled_back.contains(&id) && !named.iter().any(|(x, _)| *x == id) {
                    named.push((id, r));
                }
            }
            for (id, r) in named {
                let done = s.rolled_back.contains(&id);
                let state = match (done, s.unreadable.is_empty()) {
                    (true, true) => TrxState::RolledBack,
                    (true, false) => TrxState::GaveUp,
                    (false, _) => TrxState::Interrupted,
                };
                let mut t = trx(Some(id), r.or(one_rows), state, s.level);
                if state == TrxState::GaveUp {
                    t.unreadable = s.unreadable.clone();
                }
                here.push(t);
            }
            // Those the log does not name: cleaned up (committed, or nothing to undo) when the rollback finished,
            // else still being rolled back or cut short.
            let unnamed = (n as usize).saturating_sub(here.len());
            if !s.rollback_done {
                for _ in 0..unnamed {
                    here.push(trx(None, one_rows, TrxState::Interrupted, s.level));
                }
            }
        }
        for t in &here {
            if let (Some(id), TrxState::GaveUp) = (t.id, t.state) {
                gave_up.insert(id, t.clone());
            }
        }
        last = here;
    }
    for (id, t) in gave_up {
        match last.iter_mut().find(|x| x.id == Some(id)) {
            Some(x) => x.state = TrxState::GaveUp,
            None => last.push(t),
        }
    }
    let mut out = merge(last, seen);
    if let Some(level) = undo_not_read {
        for t in out
            .iter_mut()
            .filter(|t| matches!(t.state, TrxState::NotRolledBack | TrxState::Interrupted))
        {
            t.state = TrxState::UndoNotRead;
            t.level = level;
        }
        if !undo_read {
            out.push(trx(None, None, TrxState::UndoNotRead, level));
        }
    }
    out
}

fn trx(id: Option<u64>, rows: Option<u64>, state: TrxState, level: u8) -> RecoveredTrx {
    RecoveredTrx {
        id,
        rows,
        state,
        tables: None,
        level,
        unreadable: Vec::new(),
    }
}

/// The log's transactions with what the server answered: tables and row counts by id; a transaction the log
/// does not name takes the id of one the server listed that the log does not name either.
fn merge(mut log: Vec<RecoveredTrx>, seen: &[RecoveredTrx]) -> Vec<RecoveredTrx> {
    let named: BTreeSet<u64> = log.iter().filter_map(|t| t.id).collect();
    let mut spare = seen
        .iter()
        .filter(|s| s.id.is_some_and(|id| !named.contains(&id)));
    for t in &mut log {
        let found = match t.id {
            Some(id) => seen.iter().find(|s| s.id == Some(id)),
            None => spare.next(),
        };
        if let Some(s) = found {
            t.id = s.id;
            t.rows = s.rows.or(t.rows);
            t.tables = s.tables.clone();
        }
    }
    log
}

/// The private server's error log, every line this run's starts wrote (the copy and its server directory are
/// this run's own).
pub fn log_lines(private: &Private) -> Vec<String> {
    crate::server::errorlog::read_since(&private.error_log(), 0)
        .map(|t| t.lines)
        .unwrap_or_default()
}

/// After a start below level 3: wait (up to `bound`) until the background rollback of recovered transactions
/// has finished, so what the dump reads and what the log says are final. `lines` reads the server's log (its
/// last start decides), `alive` whether the server still runs. Whether it finished.
pub fn wait_rollback(
    lines: impl Fn() -> Vec<String>,
    alive: impl Fn() -> bool,
    bound: Duration,
) -> bool {
    let t0 = Instant::now();
    loop {
        let s = starts(&lines()).pop().unwrap_or_default();
        if s.recovered.is_none() || s.rollback_done || s.crashed || s.level >= 3 || !alive() {
            return true;
        }
        if t0.elapsed() > bound {
            return false;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Bound of the wait for a background rollback before the dump reads on (the log is judged again after it).
pub const ROLLBACK_WAIT: Duration = Duration::from_secs(300);

/// What the private server, running at `level`, and its whole log say now of the transactions active at the
/// crash; `known` is what was learnt before (the look at level 3, or the escalation's findings). At level 3 or
/// more the server is asked again (they are still active); below, innops waits for the rollback to end first.
pub fn now(private: &Private, tag: &str, level: u8, known: &[RecoveredTrx]) -> Vec<RecoveredTrx> {
    let mut seen = known.to_vec();
    if level >= 3 {
        if let Ok(asked) = read_active(&private.target(), tag) {
            if !asked.is_empty() {
                seen = asked;
            }
        }
    } else {
        let alive = || private.running_pid().is_some();
        if !wait_rollback(|| log_lines(private), alive, ROLLBACK_WAIT) {
            say_still_rolling_back();
        }
    }
    assess(&log_lines(private), &seen)
}

pub fn say_still_rolling_back() {
    crate::progress::say(&format!(
        "      InnoDB's rollback of the transactions active at the crash still runs after {} s: the dump reads on, and the error log is judged again when it ends",
        ROLLBACK_WAIT.as_secs()
    ));
}

/// Transactions the running server lists as recovered (no session: `trx_mysql_thread_id` 0), each with the user
/// tables it holds a lock on. Asks only while they are still active (level 3 or more, or a rollback running).
pub fn read_active(target: &Target, tag: &str) -> anyhow::Result<Vec<RecoveredTrx>> {
    let mut c = target.connect()?;
    let listed: Vec<(u64, u64)> = c.query(format!(
        "SELECT {tag} trx_id, trx_rows_modified FROM information_schema.INNODB_TRX \
         WHERE trx_mysql_thread_id = 0 ORDER BY trx_id"
    ))?;
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    let level: u64 = c
        .query_first(format!("SELECT {tag} @@innodb_force_recovery"))?
        .unwrap_or(0);
    let ids: BTreeSet<u64> = listed.iter().map(|(id, _)| *id).collect();
    let mut touched: BTreeMap<u64, Vec<TableName>> = BTreeMap::new();
    for t in crate::dump::list_tables(&mut c, tag, &[])? {
        if let Some(holders) = lock_holders(target, &mut c, tag, &t)? {
            // A wait nobody was seen holding (or a table that would not open) is put on every one of them.
            let on: Vec<u64> = if holders.is_empty() {
                ids.iter().copied().collect()
            } else {
                holders.intersection(&ids).copied().collect()
            };
            for id in on {
                touched.entry(id).or_default().push(t.clone());
            }
        }
    }
    Ok(listed
        .into_iter()
        .map(|(id, rows)| RecoveredTrx {
            id: Some(id),
            rows: Some(rows),
            state: TrxState::NotRolledBack,
            tables: Some(touched.remove(&id).unwrap_or_default()),
            level: level.min(6) as u8,
            unreadable: Vec::new(),
        })
        .collect())
}

/// Seconds a probe waits for a table lock: long enough for the watcher to see who holds it.
const PROBE_WAIT_SECS: u32 = 1;

/// Whether a transaction holds a lock on `t` that conflicts with a shared table lock (the IX lock every
/// transaction that changed a row of it holds until it ends), and which ones (`INNODB_LOCK_WAITS` while the probe
/// waits). `None`: no lock held.
fn lock_holders(
    target: &Target,
    watcher: &mut mysql::Conn,
    tag: &str,
    t: &TableName,
) -> anyhow::Result<Option<BTreeSet<u64>>> {
    let mut probe = target.connect()?;
    // With autocommit off, LOCK TABLES … READ takes InnoDB's own S lock on the table (innodb_table_locks).
    probe.query_drop(format!(
        "SET {tag} SESSION autocommit = 0, innodb_table_locks = 1, innodb_lock_wait_timeout = {PROBE_WAIT_SECS}"
    ))?;
    let sql = format!("LOCK {tag} TABLES {} READ", t.qualified());
    std::thread::scope(|s| {
        let waiting = s.spawn(move || {
            let r = probe.query_drop(&sql);
            let _ = probe.query_drop("UNLOCK TABLES");
            r
        });
        let mut holders = BTreeSet::new();
        while !waiting.is_finished() {
            let ids: Vec<String> = watcher
                .query(format!(
                    "SELECT {tag} blocking_trx_id FROM information_schema.INNODB_LOCK_WAITS"
                ))
                .unwrap_or_default();
            holders.extend(ids.iter().filter_map(|i| i.parse::<u64>().ok()));
            std::thread::sleep(Duration::from_millis(50));
        }
        match waiting.join() {
            Ok(Ok(())) => Ok(None),
            Ok(Err(mysql::Error::MySqlError(e))) if e.code == 1205 => Ok(Some(holders)),
            // Could not tell (the table did not open): counted as held, the careful side.
            Ok(Err(_)) => Ok(Some(BTreeSet::new())),
            Err(_) => anyhow::bail!("the lock probe on {t} panicked"),
        }
    })
}

/// A start of the copy at level 3 before any rollback, when the run may go that far: the transactions active
/// at the crash and the tables each touched, while they still hold their locks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Look {
    pub attempt: Attempt,
    pub seen: Vec<RecoveredTrx>,
    /// Why the server could not be asked, if so.
    pub note: Option<String>,
}

pub fn look(private: &Private, tag: &str) -> anyhow::Result<Look> {
    let attempt = private.start(3, Duration::from_secs(600))?;
    let mut look = Look {
        attempt,
        seen: Vec::new(),
        note: None,
    };
    if !look.attempt.started {
        look.note = Some("the copy did not start at level 3".into());
        return Ok(look);
    }
    if look
        .attempt
        .error_log
        .iter()
        .any(|l| recovered_count(l).is_some())
    {
        match read_active(&private.target(), tag) {
            Ok(seen) => look.seen = seen,
            Err(e) => look.note = Some(crate::error::display_of(&e)),
        }
    }
    private.stop()?;
    Ok(look)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(|l| l.trim_start().to_string()).collect()
    }

    /// A start at level 1 after a kill -9 with an open UPDATE of 222 rows (10.11.19, verbatim).
    const ROLLED_BACK: &str = "2026-12-02  3:46:05 0 [Note] Starting MariaDB 10.11.19-MariaDB-0+deb12u1 source revision 5843d8475120241667a7ce0f8a1abb6c9b43a273 server_uid fXdYp7ZWAMMBm0PUMZFJoAcM0o0= as process 12959
        2026-12-02  3:46:05 0 [Note] InnoDB: !!! innodb_force_recovery is set to 1 !!!
        2026-12-02  3:46:05 0 [Note] InnoDB: End of log at LSN=1317799
        2026-12-02  3:46:05 0 [Note] InnoDB: 1 transaction(s) which must be rolled back or cleaned up in total 222 row operations to undo
        2026-12-02  3:46:05 0 [Note] InnoDB: Trx id counter is 39
        2026-12-02  3:46:05 0 [Note] InnoDB: 128 rollback segments are active.
        2026-12-02  3:46:05 0 [Note] InnoDB: Starting in background the rollback of recovered transactions
        2026-12-02  3:46:05 0 [Note] InnoDB: Rolled back recovered transaction 37
        2026-12-02  3:46:05 0 [Note] InnoDB: Rollback of non-prepared transactions completed
        2026-12-02  3:46:05 0 [Note] InnoDB: log sequence number 1317799; transaction id 41
        2026-12-02  3:46:05 0 [Note] mariadbd: ready for connections.";

    /// The same with undo page 308 of ibdata1 damaged: the rollback stops there, 197 rows keep their
    /// uncommitted values, and the log still says the transaction was rolled back.
    const GAVE_UP: &str = "2026-12-02  3:46:15 0 [Note] Starting MariaDB 10.11.19-MariaDB-0+deb12u1 source revision 5843d8475120241667a7ce0f8a1abb6c9b43a273 server_uid fXdYp7ZWAMMBm0PUMZFJoAcM0o0= as process 14327
        2026-12-02  3:46:15 0 [Note] InnoDB: !!! innodb_force_recovery is set to 1 !!!
        2026-12-02  3:46:15 0 [Note] InnoDB: End of log at LSN=1317799
        2026-12-02  3:46:15 0 [ERROR] InnoDB: Failed to read page 308 from file './ibdata1': Page read from tablespace is corrupted.
        2026-12-02  3:46:15 0 [Note] InnoDB: End of page dump
        2026-12-02  3:46:15 0 [ERROR] InnoDB: File './ibdata1' is corrupted
        2026-12-02  3:46:15 0 [Note] InnoDB: 1 transaction(s) which must be rolled back or cleaned up in total 222 row operations to undo
        2026-12-02  3:46:15 0 [Note] InnoDB: Trx id counter is 39
        2026-12-02  3:46:15 0 [Note] InnoDB: 128 rollback segments are active.
        2026-12-02  3:46:15 0 [Note] InnoDB: Starting in background the rollback of recovered transactions
        2026-12-02  3:46:15 0 [Note] InnoDB: log sequence number 1317799; transaction id 40
        2026-12-02  3:46:15 0 [ERROR] InnoDB: Failed to read page 308 from file './ibdata1': Page read from tablespace is corrupted.
        2026-12-02  3:46:15 0 [Note] InnoDB: End of page dump
        2026-12-02  3:46:15 0 [Note] InnoDB: Rolled back recovered transaction 37
        2026-12-02  3:46:15 0 [Note] InnoDB: Rollback of non-prepared transactions completed
        2026-12-02  3:46:15 0 [Note] mariadbd: ready for connections.";

    /// Level 3: nothing rolled back, no id in the log; then a read that needs the row's older version from the
    /// damaged undo page crashes the server.
    const LEVEL_3_CRASH: &str = "2026-12-02  3:46:42 0 [Note] Starting MariaDB 10.11.19-MariaDB-0+deb12u1 source revision 5843d8475120241667a7ce0f8a1abb6c9b43a273 server_uid fXdYp7ZWAMMBm0PUMZFJoAcM0o0= as process 14945
        2026-12-02  3:46:42 0 [Note] InnoDB: !!! innodb_force_recovery is set to 3 !!!
        2026-12-02  3:46:42 0 [ERROR] InnoDB: Failed to read page 308 from file './ibdata1': Page read from tablespace is corrupted.
        2026-12-02  3:46:42 0 [ERROR] InnoDB: File './ibdata1' is corrupted
        2026-12-02  3:46:42 0 [Note] InnoDB: 1 transaction(s) which must be rolled back or cleaned up in total 222 row operations to undo
        2026-12-02  3:46:42 0 [Note] InnoDB: Trx id counter is 39
        2026-12-02  3:46:42 0 [Note] InnoDB: 128 rollback segments are active.
        2026-12-02  3:46:42 0 [Note] InnoDB: log sequence number 1317799; transaction id 39
        2026-12-02  3:46:42 0 [Note] mariadbd: ready for connections.
        2026-12-02  3:46:44 8 [ERROR] InnoDB: Failed to read page 308 from file './ibdata1': Page read from tablespace is corrupted.
        2026-12-02  3:46:44 8 [ERROR] [FATAL] InnoDB: Unknown error Required history data has been deleted
        261202  3:46:44 [ERROR] mariadbd got signal 6 ;";

    /// Level 5: the undo logs are not read; nothing about the transaction is logged.
    const LEVEL_5: &str = "2026-12-02  3:47:33 0 [Note] Starting MariaDB 10.11.19-MariaDB-0+deb12u1 source revision 5843d8475120241667a7ce0f8a1abb6c9b43a273 server_uid fXdYp7ZWAMMBm0PUMZFJoAcM0o0= as process 15010
        2026-12-02  3:47:33 0 [Note] InnoDB: !!! innodb_force_recovery is set to 5 !!!
        2026-12-02  3:47:33 0 [Note] InnoDB: log sequence number 1317799; transaction id 39
        2026-12-02  3:47:33 0 [Note] mariadbd: ready for connections.";

    fn seen(id: u64, tables: &[(&str, &str)]) -> RecoveredTrx {
        RecoveredTrx {
            id: Some(id),
            rows: Some(222),
            state: TrxState::NotRolledBack,
            tables: Some(tables.iter().map(|(d, t)| TableName::new(d, t)).collect()),
            level: 3,
            unreadable: Vec::new(),
        }
    }

    #[test]
    fn uncommitted_a_clean_rollback_is_evidence_and_no_doubt() {
        let t = assess(&lines(ROLLED_BACK), &[]);
        assert_eq!(t.len(), 1);
        assert_eq!(
            (t[0].id, t[0].rows, t[0].state),
            (Some(37), Some(222), TrxState::RolledBack)
        );
        assert!(doubts(&t).is_empty());
        assert!(describe(&t[0]).contains(
            "transaction 37 (222 row changes) was active at the crash and InnoDB rolled it back"
        ));
    }

    #[test]
    fn uncommitted_a_rollback_that_met_an_unreadable_undo_page_gave_up_though_the_log_says_rolled_back(
    ) {
        let t = assess(&lines(GAVE_UP), &[]);
        assert_eq!((t[0].id, t[0].state), (Some(37), TrxState::GaveUp));
        // No table named: every table is in doubt.
        let d = doubts(&t);
        assert_eq!(d.len(), 1);
        assert!(d[0].0.is_none());
        assert_eq!(d[0].1.kind, DoubtKind::Uncommitted);
        assert!(
            d[0].1.why.contains("transaction 37 (222 row changes) was active at the crash; InnoDB's rollback of it could not read page 308 of ./ibdata1 and stopped short"),
            "{}",
            d[0].1.why
        );
        assert!(
            d[0].1.why.contains("innops cannot tell which tables"),
            "{}",
            d[0].1.why
        );
        // The look at level 3 named its tables: only those are in doubt.
        let t = assess(&lines(GAVE_UP), &[seen(37, &[("db", "t"), ("db", "t2")])]);
        let d = doubts(&t);
        let named: Vec<String> = d
            .iter()
            .map(|(n, _)| n.as_ref().unwrap().to_string())
            .collect();
        assert_eq!(named, ["db.t", "db.t2"]);
        assert!(
            d[0].1
                .why
                .contains("rows of db.t, db.t2 may hold its uncommitted values"),
            "{}",
            d[0].1.why
        );
    }

    #[test]
    fn uncommitted_the_whole_log_decides_a_look_then_a_clean_or_a_failed_rollback() {
        let look = LEVEL_3_CRASH.lines().take(9).collect::<Vec<_>>().join("\n");
        // Level 3 first (nothing rolled back, no id), then level 1 rolls back cleanly.
        let log = lines(&format!("{look}\n{ROLLED_BACK}"));
        let t = assess(&log, &[seen(37, &[("db", "t")])]);
        assert_eq!(t.len(), 1);
        assert_eq!((t[0].id, t[0].state), (Some(37), TrxState::RolledBack));
        assert_eq!(t[0].tables.as_ref().unwrap().len(), 1);
        // A rollback that gave up stays given up, whatever the starts after it say (the undo log is gone).
        let log = lines(&format!(
            "{look}\n{GAVE_UP}\n{}",
            LEVEL_5.replace("set to 5", "set to 1")
        ));
        let t = assess(&log, &[]);
        assert_eq!((t[0].id, t[0].state), (Some(37), TrxState::GaveUp));
    }

    #[test]
    fn uncommitted_a_crash_during_the_rollback_and_the_start_after_it_are_judged_together() {
        let crashed = "2026-12-02  4:00:00 0 [Note] Starting MariaDB 10.11.19-MariaDB-0+deb12u1 source revision x server_uid y as process 1
            2026-12-02  4:00:00 0 [Note] InnoDB: !!! innodb_force_recovery is set to 1 !!!
            2026-12-02  4:00:00 0 [Note] InnoDB: 1 transaction(s) which must be rolled back or cleaned up in total 222 row operations to undo
            2026-12-02  4:00:00 0 [Note] InnoDB: Starting in background the rollback of recovered transactions
            2026-12-02  4:00:00 0 [Note] mariadbd: ready for connections.
            261202  4:00:01 [ERROR] mariadbd got signal 6 ;";
        let alone = assess(&lines(crashed), &[]);
        assert_eq!((alone[0].id, alone[0].state), (None, TrxState::Interrupted));
        assert!(alone[0].doubtful());
        // The next start rolls it back for good: no doubt; or gives up: doubt.
        let t = assess(&lines(&format!("{crashed}\n{ROLLED_BACK}")), &[]);
        assert_eq!((t.len(), t[0].state), (1, TrxState::RolledBack));
        let t = assess(&lines(&format!("{crashed}\n{GAVE_UP}")), &[]);
        assert_eq!((t.len(), t[0].state), (1, TrxState::GaveUp));
    }

    #[test]
    fn uncommitted_level_3_leaves_it_active_and_level_5_takes_it_as_committed() {
        let t = assess(&lines(LEVEL_3_CRASH), &[seen(37, &[("db", "t")])]);
        assert_eq!((t[0].id, t[0].state), (Some(37), TrxState::NotRolledBack));
        assert!(doubts(&t).is_empty());
        assert!(
            describe(&t[0]).starts_with("transaction 37 (222 row changes) was active at the crash and was not rolled back (innodb_force_recovery 3), it touched db.t"),
            "{}",
            describe(&t[0])
        );
        let t = assess(&lines(LEVEL_5), &[]);
        assert_eq!(
            (t.len(), t[0].state, t[0].level),
            (1, TrxState::UndoNotRead, 5)
        );
        let d = doubts(&t);
        assert_eq!(d.len(), 1);
        assert!(d[0].0.is_none());
        // A start of the run that read the undo logs found the one transaction, with its tables: level 5 serves
        // its changes as committed, and only its tables are in doubt.
        let look = LEVEL_3_CRASH.lines().take(9).collect::<Vec<_>>().join("\n");
        let t = assess(
            &lines(&format!("{look}\n{LEVEL_5}")),
            &[seen(37, &[("db", "t")])],
        );
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(
            (t[0].id, t[0].state, t[0].level),
            (Some(37), TrxState::UndoNotRead, 5)
        );
        let d = doubts(&t);
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].0, Some(TableName::new("db", "t")));
        assert!(d[0].1.why.contains("transaction 37 (222 row changes) was active at the crash; innodb_force_recovery 5 does not read the undo logs, so InnoDB serves its changes as committed: rows of db.t may hold"), "{}", d[0].1.why);
        // A start that read the undo logs and found nothing active: level 5 serves nothing uncommitted.
        let clean = "2026-12-02  4:11:28 0 [Note] Starting MariaDB 10.11.19-MariaDB-0+deb12u1 source revision 5843d8475120241667a7ce0f8a1abb6c9b43a273 server_uid fXdYp7ZWAMMBm0PUMZFJoAcM0o0= as process 1
            2026-12-02  4:11:28 0 [Note] InnoDB: !!! innodb_force_recovery is set to 3 !!!
            2026-12-02  4:11:28 0 [Note] InnoDB: 128 rollback segments are active.
            2026-12-02  4:11:28 0 [Note] mariadbd: ready for connections.";
        assert!(assess(&lines(&format!("{clean}\n{LEVEL_5}")), &[]).is_empty());
    }

    #[test]
    fn uncommitted_older_and_mysql_lines_name_the_transaction_too() {
        let log = lines(
            "2026-01-01T00:00:00.0Z 0 [System] [MY-010116] [Server] /usr/sbin/mysqld (mysqld 8.0.36) starting as process 1
            2026-01-01T00:00:01.0Z 0 [Note] [MY-013032] [InnoDB] 1 transaction(s) which must be rolled back or cleaned up in total 217 row operations to undo
            2026-01-01T00:00:01.0Z 0 [Note] [MY-013033] [InnoDB] Starting in background the rollback of uncommitted transactions
            2026-01-01T00:00:01.0Z 0 [Note] [MY-013034] [InnoDB] Rolling back trx with id 1234, 217 rows to undo
            2026-01-01T00:00:02.0Z 0 [Note] [MY-013035] [InnoDB] Rollback of trx with id 1234 completed
            2026-01-01T00:00:02.0Z 0 [Note] [MY-013036] [InnoDB] Rollback of non-prepared transactions completed",
        );
        let t = assess(&log, &[]);
        assert_eq!(
            (t[0].id, t[0].rows, t[0].state),
            (Some(1234), Some(217), TrxState::RolledBack)
        );
        // Cut short by a crash after `Rolling back`: not finished.
        let t = assess(&log[..4], &[]);
        assert_eq!((t[0].id, t[0].state), (Some(1234), TrxState::Interrupted));
    }

    #[test]
    fn uncommitted_doubts_found_after_the_dump_are_written_into_its_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let entry = |table: &str, status| crate::dump::TableEntry {
            db: "db".into(),
            table: table.into(),
            status,
            file: None,
            sha256: None,
            rows: 1,
            content_hash: None,
            columns: vec![],
            primary_key: vec![],
            key_index: None,
            lost: vec![],
            doubts: vec![],
            unchecked: vec![],
            reconnects: 0,
            note: None,
            indexes: Vec::new(),
            pages: None,
            page_pass: None,
        };
        let mut m = Manifest {
            format: 1,
            level: 1,
            files_only: None,
            created: String::new(),
            tables: vec![
                entry("t", TableStatus::Complete),
                entry("u", TableStatus::Partial),
            ],
            files: Default::default(),
        };
        let t = assess(&lines(GAVE_UP), &[seen(37, &[("db", "t")])]);
        let d = doubts(&t);
        assert!(amend(dir.path(), &mut m, &d).unwrap());
        let back = Manifest::read(dir.path()).unwrap();
        let t = back.table("db", "t").unwrap();
        assert_eq!((t.status, t.doubts.len()), (TableStatus::Doubtful, 1));
        assert_eq!(back.table("db", "u").unwrap().status, TableStatus::Partial);
        // Known already: nothing to add, nothing written.
        assert!(!amend(dir.path(), &mut m, &d).unwrap());
    }

    #[test]
    fn uncommitted_only_pages_outside_table_files_count_as_undo() {
        assert_eq!(
            unreadable_undo("[ERROR] InnoDB: Failed to read page 308 from file './ibdata1': Page read from tablespace is corrupted."),
            Some("page 308 of ./ibdata1".into())
        );
        assert_eq!(
            unreadable_undo("[ERROR] InnoDB: Failed to read page 3 from file './undo002': x"),
            Some("page 3 of ./undo002".into())
        );
        assert_eq!(
            unreadable_undo("[ERROR] InnoDB: Failed to read page 40 from file './db/t.ibd': x"),
            None
        );
        assert_eq!(
            recovered_count("InnoDB: 2 transaction(s) which must be rolled back or cleaned up in total 1000 row operations to undo"),
            Some((2, 1000))
        );
    }
}
