//! InnoDB's deadlock report parsed into a structure: the `LATEST DETECTED DEADLOCK` section of `SHOW ENGINE
//! INNODB STATUS`, or every report an error log holds when `innodb_print_all_deadlocks` is on.
//!
//! Two layouts exist. MariaDB prints per transaction `*** WAITING FOR THIS LOCK TO BE GRANTED:` then `***
//! CONFLICTING WITH:` (the locks in the way of that wait) and a `MariaDB thread id` line; MySQL 5.7/8.0 print
//! `*** (N) HOLDS THE LOCK(S):` and `*** (N) WAITING FOR THIS LOCK TO BE GRANTED:` and `MySQL thread id`. Both
//! end with `*** WE ROLL BACK TRANSACTION (N)`; a report without that line was cut short and is marked
//! truncated. In an error log every heading line carries the log's prefix (`2024-05-01 8:22:44 5 [Note]
//! InnoDB: ` on MariaDB, `… [Note] [MY-012469] [InnoDB] ` on MySQL 8.0), which is stripped.

use serde::Serialize;

/// One deadlock as InnoDB reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deadlock {
    /// When InnoDB detected it, as the report (or the log line) writes it.
    pub ts: Option<String>,
    pub transactions: Vec<Txn>,
    /// The number, as the report numbers transactions (1, 2, …), of the transaction rolled back.
    pub victim: Option<u32>,
    /// The report ended before `*** WE ROLL BACK TRANSACTION`: what was read is kept.
    pub truncated: bool,
}

/// One transaction of a deadlock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Txn {
    /// Its number in the report: `*** (N) TRANSACTION:`.
    pub number: u32,
    pub trx_id: Option<String>,
    /// Seconds active (`ACTIVE N sec`).
    pub active_secs: Option<u64>,
    pub thread_id: Option<u64>,
    pub query_id: Option<u64>,
    pub host: Option<String>,
    pub ip: Option<String>,
    pub user: Option<String>,
    /// The thread's state (`Updating`, `statistics`, …).
    pub state: Option<String>,
    /// The statement it ran when the deadlock was found (several lines as printed).
    pub query: Option<String>,
    /// The lock it waited for.
    pub waiting_for: Vec<Lock>,
    /// MySQL: the locks it held (`HOLDS THE LOCK(S)`); MariaDB: the locks in the way of its wait (`CONFLICTING
    /// WITH`), each with the id of the transaction holding it.
    pub held: Vec<Lock>,
}

/// A lock line and the records printed under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Lock {
    /// RECORD or TABLE.
    pub lock_type: String,
    pub db: Option<String>,
    pub table: Option<String>,
    pub index: Option<String>,
    /// The transaction owning this lock (request).
    pub trx_id: Option<String>,
    /// S, X, IS, IX or AUTO-INC.
    pub mode: Option<String>,
    /// What follows the mode: `locks rec but not gap`, `locks gap before rec`, `insert intention`, …
    pub flags: Option<String>,
    pub waiting: bool,
    /// Each `Record lock, heap no …` paragraph as printed.
    pub records: Vec<String>,
}

/// One row per transaction in pt-deadlock-logger's columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoggerRow {
    pub ts: Option<String>,
    pub thread: Option<u64>,
    pub txn_id: Option<String>,
    pub txn_time: Option<u64>,
    pub user: Option<String>,
    pub hostname: Option<String>,
    pub ip: Option<String>,
    pub db: Option<String>,
    pub tbl: Option<String>,
    pub idx: Option<String>,
    pub lock_type: Option<String>,
    pub lock_mode: Option<String>,
    /// `w` when the row's lock is the one waited for, `h` when held.
    pub wait_hold: Option<String>,
    pub victim: bool,
    pub query: Option<String>,
}

impl Deadlock {
    /// The transaction rolled back.
    pub fn victim_txn(&self) -> Option<&Txn> {
        self.victim
            .and_then(|v| self.transactions.iter().find(|t| t.number == v))
    }

    /// pt-deadlock-logger's rows: one per transaction, with the lock it waited for (else the first it held).
    pub fn logger_rows(&self) -> Vec<LoggerRow> {
        self.transactions
            .iter()
            .map(|t| {
                let (lock, wh) = match (t.waiting_for.first(), t.held.first()) {
                    (Some(l), _) => (Some(l), Some("w")),
                    (None, Some(l)) => (Some(l), Some("h")),
                    (None, None) => (None, None),
                };
                LoggerRow {
                    ts: self.ts.clone(),
                    thread: t.thread_id,
                    txn_id: t.trx_id.clone(),
                    txn_time: t.active_secs,
                    user: t.user.clone(),
                    hostname: t.host.clone(),
                    ip: t.ip.clone(),
                    db: lock.and_then(|l| l.db.clone()),
                    tbl: lock.and_then(|l| l.table.clone()),
                    idx: lock.and_then(|l| l.index.clone()),
                    lock_type: lock.map(|l| l.lock_type.clone()),
                    lock_mode: lock.and_then(|l| l.mode.clone()),
                    wait_hold: wh.map(str::to_string),
                    victim: self.victim == Some(t.number),
                    query: t.query.clone(),
                }
            })
            .collect()
    }
}

/// Thread states a report may end its thread line with (several words each); a user name may hold spaces,
/// so the state is found by its known text rather than by splitting on spaces.
const STATES: &[&str] = &[
    "Searching rows for update",
    "Waiting for table metadata lock",
    "Copying to tmp table",
    "Creating sort index",
    "Sending to client",
    "Sending data",
    "Sorting result",
    "Opening tables",
    "closing tables",
    "checking permissions",
    "System lock",
    "query end",
    "freeing items",
    "cleaning up",
    "Updating",
    "updating",
    "Update",
    "update",
    "statistics",
    "executing",
    "preparing",
    "optimizing",
    "starting",
    "init",
    "end",
];

/// The text of a line after an error-log prefix (`… InnoDB: ` or `… [InnoDB] `), and the prefix's time.
fn strip_log_prefix(line: &str) -> (&str, Option<String>) {
    let starts_with_date = line.len() > 10
        && line.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && line.as_bytes()[4] == b'-';
    if starts_with_date {
        for marker in ["InnoDB: ", "[InnoDB] "] {
            if let Some(at) = line.find(marker) {
                let prefix: Vec<&str> = line[..at].split_whitespace().collect();
                // MySQL writes `2024-05-01T10:00:00.123456Z THREAD`, MariaDB `2024-05-01  8:22:44 THREAD`.
                let ts = if prefix[0].contains('T') {
                    prefix[0].to_string()
                } else {
                    prefix.iter().take(2).copied().collect::<Vec<_>>().join(" ")
                };
                return (&line[at + marker.len()..], Some(ts));
            }
        }
    }
    (line, None)
}

/// `*** (N) HEADING` → (N, HEADING); `*** HEADING` → (None, HEADING).
fn heading(line: &str) -> Option<(Option<u32>, &str)> {
    let rest = line.strip_prefix("*** ")?;
    if let Some(r) = rest.strip_prefix('(') {
        let close = r.find(')')?;
        let n = r[..close].parse().ok()?;
        return Some((Some(n), r[close + 1..].trim()));
    }
    Some((None, rest.trim()))
}

/// `YYYY-MM-DD HH:MM:SS 0x…` (the first line of the section in `SHOW ENGINE INNODB STATUS`).
fn status_timestamp(line: &str) -> Option<String> {
    let t = line.trim();
    let b = t.as_bytes();
    (b.len() >= 19 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[13] == b':')
        .then(|| t.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
}

#[derive(PartialEq, Clone, Copy)]
enum Part {
    Header,
    Waiting,
    Held,
}

/// Every deadlock report in `text`, in order: a saved `SHOW ENGINE INNODB STATUS` gives one, an error log
/// written with `innodb_print_all_deadlocks` one per deadlock.
pub fn parse_all(text: &str) -> Vec<Deadlock> {
    let mut out: Vec<Deadlock> = Vec::new();
    let mut cur: Option<Deadlock> = None;
    let mut part = Part::Header;
    let mut last_ts: Option<String> = None;
    let mut after_thread_line = false;
    for raw in text.lines() {
        let (line, log_ts) = strip_log_prefix(raw);
        let logged = log_ts.is_some();
        if let Some(ts) = log_ts {
            last_ts = Some(ts);
        } else if let Some(ts) = status_timestamp(line) {
            last_ts = Some(ts);
        }
        let line = line.trim_end();
        if let Some((n, h)) = heading(line) {
            if h == "TRANSACTION:" && n == Some(1) {
                if let Some(mut d) = cur.take() {
                    d.truncated = true;
                    out.push(d);
                }
                cur = Some(Deadlock {
                    ts: last_ts.clone(),
                    transactions: Vec::new(),
                    victim: None,
                    truncated: false,
                });
            }
            let Some(d) = cur.as_mut() else { continue };
            after_thread_line = false;
            if h == "TRANSACTION:" {
                d.transactions.push(Txn {
                    number: n.unwrap_or(d.transactions.len() as u32 + 1),
                    ..Txn::default()
                });
                part = Part::Header;
            } else if h.starts_with("WAITING FOR THIS LOCK") {
                part = Part::Waiting;
            } else if h.starts_with("HOLDS THE LOCK") || h.starts_with("CONFLICTING WITH") {
                part = Part::Held;
            } else if let Some(v) = h.strip_prefix("WE ROLL BACK TRANSACTION (") {
                d.victim = v.trim_end_matches(')').parse().ok();
                out.push(cur.take().expect("a deadlock is being read"));
            }
            continue;
        }
        let Some(d) = cur.as_mut() else { continue };
        // Another section of SHOW ENGINE INNODB STATUS, or another message of the error log, starts: the report
        // was cut short.
        if line.starts_with("------") || (logged && !line.trim().is_empty()) {
            let mut d = cur.take().expect("a deadlock is being read");
            d.truncated = true;
            out.push(d);
            continue;
        }
        let Some(t) = d.transactions.last_mut() else {
            continue;
        };
        match part {
            Part::Header => header_line(t, line, &mut after_thread_line),
            Part::Waiting | Part::Held => {
                let list = if part == Part::Waiting {
                    &mut t.waiting_for
                } else {
                    &mut t.held
                };
                lock_line(list, line);
            }
        }
    }
    if let Some(mut d) = cur.take() {
        d.truncated = true;
        out.push(d);
    }
    for d in &mut out {
        for t in &mut d.transactions {
            if let Some(q) = &t.query {
                let q = q.trim_end().to_string();
                t.query = (!q.is_empty()).then_some(q);
            }
        }
    }
    out
}

/// The `LATEST DETECTED DEADLOCK` of a `SHOW ENGINE INNODB STATUS` text (its last report, were there several).
pub fn parse_latest(status: &str) -> Option<Deadlock> {
    parse_all(status).pop()
}

fn header_line(t: &mut Txn, line: &str, after_thread_line: &mut bool) {
    if let Some(r) = line.strip_prefix("TRANSACTION ") {
        let mut parts = r.split(", ");
        t.trx_id = parts.next().map(str::to_string);
        if let Some(a) = parts.next().and_then(|p| p.strip_prefix("ACTIVE ")) {
            t.active_secs = a.split_whitespace().next().and_then(|n| n.parse().ok());
        }
        return;
    }
    let thread = line
        .strip_prefix("MariaDB thread id ")
        .or_else(|| line.strip_prefix("MySQL thread id "));
    if let Some(r) = thread {
        thread_line(t, r);
        *after_thread_line = true;
        return;
    }
    if !*after_thread_line || line.starts_with("Trx read view") {
        return;
    }
    let q = t.query.get_or_insert_with(String::new);
    if !q.is_empty() {
        q.push('\n');
    }
    q.push_str(line);
}

fn is_ip(s: &str) -> bool {
    s.parse::<std::net::IpAddr>().is_ok()
}

/// `5, OS thread handle 1396…, query id 10 localhost 127.0.0.1 root Updating`.
fn thread_line(t: &mut Txn, r: &str) {
    let mut parts = r.splitn(3, ", ");
    t.thread_id = parts.next().and_then(|n| n.trim().parse().ok());
    let _handle = parts.next();
    let Some(rest) = parts.next() else { return };
    let Some(rest) = rest.strip_prefix("query id ") else {
        return;
    };
    let (qid, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    t.query_id = qid.parse().ok();
    let mut rest = rest.trim().to_string();
    if let Some(s) = STATES.iter().find(|s| {
        rest.len() > s.len() && rest.ends_with(*s) && rest[..rest.len() - s.len()].ends_with(' ')
    }) {
        t.state = Some(s.to_string());
        rest.truncate(rest.len() - s.len() - 1);
    }
    let words: Vec<&str> = rest.split(' ').collect();
    // The address anchors the split: the host before it (which may hold spaces), the user after.
    if let Some(at) = words.iter().position(|w| is_ip(w)) {
        if at > 0 {
            t.host = Some(words[..at].join(" "));
        }
        t.ip = Some(words[at].to_string());
        let user = words[at + 1..].join(" ");
        t.user = (!user.is_empty()).then_some(user);
    } else if let Some((host, user)) = rest.split_once(' ') {
        t.host = Some(host.to_string());
        t.user = Some(user.to_string());
    } else if !rest.is_empty() {
        t.user = Some(rest);
    }
}

/// A `RECORD LOCKS …` or `TABLE LOCK …` line starts a lock; other lines belong to its records.
fn lock_line(list: &mut Vec<Lock>, line: &str) {
    if let Some(r) = line.strip_prefix("RECORD LOCKS ") {
        let mut l = Lock {
            lock_type: "RECORD".into(),
            ..Lock::default()
        };
        if let Some(i) = r.find(" index ") {
            let after = &r[i + 7..];
            if let Some(of) = after.find(" of table ") {
                l.index = Some(after[..of].to_string());
            }
        }
        lock_common(&mut l, r);
        list.push(l);
    } else if let Some(r) = line.strip_prefix("TABLE LOCK ") {
        let mut l = Lock {
            lock_type: "TABLE".into(),
            ..Lock::default()
        };
        lock_common(&mut l, r);
        list.push(l);
    } else if let Some(l) = list.last_mut() {
        if line.starts_with("Record lock,") {
            l.records.push(line.to_string());
        } else if let Some(rec) = l.records.last_mut() {
            if !line.trim().is_empty() {
                rec.push('\n');
                rec.push_str(line);
            }
        }
    }
}

/// Table, owning transaction and mode of a lock line.
fn lock_common(l: &mut Lock, r: &str) {
    if let Some(i) = r.find("table `") {
        let (db, table, _) = two_idents(&r[i + 6..]);
        l.db = db;
        l.table = table;
    }
    if let Some(i) = r.find(" trx id ") {
        l.trx_id = r[i + 8..].split_whitespace().next().map(str::to_string);
    }
    let mode_at = r
        .find(" lock_mode ")
        .map(|i| i + 11)
        .or_else(|| r.find(" lock mode ").map(|i| i + 11));
    if let Some(i) = mode_at {
        let rest = &r[i..];
        let (mode, flags) = rest.split_once(' ').unwrap_or((rest, ""));
        l.mode = Some(mode.to_string());
        let mut flags = flags.trim().to_string();
        if flags == "waiting" || flags.ends_with(" waiting") {
            l.waiting = true;
            flags.truncate(flags.len() - "waiting".len());
        }
        let flags = flags.trim().to_string();
        l.flags = (!flags.is_empty()).then_some(flags);
    }
}

/// `` `db`.`table` `` (backticks doubled inside) → (db, table, rest).
fn two_idents(s: &str) -> (Option<String>, Option<String>, &str) {
    fn ident(s: &str) -> Option<(String, &str)> {
        let s = s.strip_prefix('`')?;
        let mut out = String::new();
        let mut chars = s.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == '`' {
                if chars.peek().map(|(_, c)| *c) == Some('`') {
                    out.push('`');
                    chars.next();
                } else {
                    return Some((out, &s[i + 1..]));
                }
            } else {
                out.push(c);
            }
        }
        None
    }
    match ident(s) {
        Some((db, rest)) => match rest.strip_prefix('.').and_then(ident) {
            Some((t, rest)) => (Some(db), Some(t), rest),
            None => (None, Some(db), rest),
        },
        None => (None, None, s),
    }
}

/// The report as a person reads it.
pub fn render(deadlocks: &[Deadlock]) -> String {
    let mut s = String::new();
    if deadlocks.is_empty() {
        s.push_str("no deadlock report found\n");
    }
    for (i, d) in deadlocks.iter().enumerate() {
        s.push_str(&format!(
            "deadlock {} at {}{}\n",
            i + 1,
            d.ts.as_deref().unwrap_or("(time not printed)"),
            if d.truncated {
                " (report cut short)"
            } else {
                ""
            }
        ));
        for t in &d.transactions {
            let victim = if d.victim == Some(t.number) {
                "  ← rolled back (victim)"
            } else {
                ""
            };
            s.push_str(&format!(
                "  ({}) trx {} thread {} {}@{}{} active {}s{victim}\n",
                t.number,
                t.trx_id.as_deref().unwrap_or("?"),
                t.thread_id.map_or("?".into(), |n| n.to_string()),
                t.user.as_deref().unwrap_or("?"),
                t.host.as_deref().unwrap_or("?"),
                t.ip.as_deref()
                    .map(|ip| format!(" ({ip})"))
                    .unwrap_or_default(),
                t.active_secs.map_or("?".into(), |n| n.to_string()),
            ));
            if let Some(q) = &t.query {
                for l in q.lines() {
                    s.push_str(&format!("      {l}\n"));
                }
            }
            for (what, locks) in [("waits for", &t.waiting_for), ("held/conflicting", &t.held)] {
                for l in locks.iter() {
                    let mut parts = vec![
                        l.lock_type.clone(),
                        l.mode.clone().unwrap_or_else(|| "?".into()),
                    ];
                    parts.extend(l.flags.clone());
                    parts.extend(l.index.as_deref().map(|i| format!("on index {i}")));
                    parts.push(format!(
                        "of {}.{}",
                        l.db.as_deref().unwrap_or("?"),
                        l.table.as_deref().unwrap_or("?")
                    ));
                    if !l.records.is_empty() {
                        parts.push(format!("({} record(s))", l.records.len()));
                    }
                    parts.push(format!("(trx {})", l.trx_id.as_deref().unwrap_or("?")));
                    s.push_str(&format!("    {what}: {}\n", parts.join(" ")));
                }
            }
        }
        match d.victim {
            Some(v) => s.push_str(&format!("  InnoDB rolled back transaction ({v})\n")),
            None => s.push_str("  the report does not say which transaction was rolled back\n"),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARIADB_STATUS: &str = include_str!("testdata/mariadb-status.txt");
    const MARIADB_LOG: &str = include_str!("testdata/mariadb-errorlog.txt");
    const MYSQL80_STATUS: &str = include_str!("testdata/mysql80-status.txt");
    const MYSQL57_LOG: &str = include_str!("testdata/mysql57-errorlog.txt");

    #[test]
    fn mariadb_status_gives_both_transactions_their_locks_and_the_victim() {
        let d = parse_latest(MARIADB_STATUS).expect("a deadlock");
        assert!(!d.truncated);
        assert_eq!(d.ts.as_deref(), Some("2026-12-01 08:22:44"));
        assert_eq!(d.victim, Some(2));
        assert_eq!(d.transactions.len(), 2);
        let t1 = &d.transactions[0];
        assert_eq!(t1.trx_id.as_deref(), Some("22"));
        assert_eq!(t1.active_secs, Some(1));
        assert_eq!(t1.thread_id, Some(5));
        assert_eq!(t1.query_id, Some(10));
        assert_eq!(t1.host.as_deref(), Some("localhost"));
        assert_eq!(t1.user.as_deref(), Some("root"));
        assert_eq!(t1.state.as_deref(), Some("Updating"));
        assert_eq!(t1.query.as_deref(), Some("delete from t where i=1"));
        assert_eq!(t1.waiting_for.len(), 1);
        let w = &t1.waiting_for[0];
        assert_eq!(
            (w.lock_type.as_str(), w.mode.as_deref(), w.waiting),
            ("RECORD", Some("X"), true)
        );
        assert_eq!(w.index.as_deref(), Some("GEN_CLUST_INDEX"));
        assert_eq!(
            (w.db.as_deref(), w.table.as_deref()),
            (Some("test"), Some("t"))
        );
        assert_eq!(w.records.len(), 1);
        assert!(w.records[0].contains("3: len 4; hex 80000001"));
        let h = &d.transactions[1].held[0];
        assert_eq!(
            (h.mode.as_deref(), h.waiting, h.trx_id.as_deref()),
            (Some("S"), false, Some("22"))
        );
        assert_eq!(h.records.len(), 2, "supremum and the row");
        assert_eq!(d.victim_txn().and_then(|t| t.thread_id), Some(6));
    }

    #[test]
    fn an_error_log_gives_every_deadlock_and_a_user_with_spaces_on_a_query_of_several_lines() {
        let all = parse_all(MARIADB_LOG);
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|d| !d.truncated && d.victim == Some(2)));
        assert_eq!(all[0].ts.as_deref(), Some("2026-12-01 8:22:44"));
        let t = &all[1].transactions[0];
        assert_eq!(t.user.as_deref(), Some("app user"));
        assert_eq!(t.host.as_deref(), Some("db host"));
        assert_eq!(t.ip.as_deref(), Some("10.0.0.7"));
        assert_eq!(t.state.as_deref(), Some("Searching rows for update"));
        assert_eq!(
            t.query.as_deref(),
            Some("UPDATE t\n   SET v = v + 1\n WHERE id IN (1, 2)")
        );
        let w = &all[1].transactions[1].waiting_for[0];
        assert_eq!(w.mode.as_deref(), Some("X"));
        assert_eq!(w.flags.as_deref(), Some("locks rec but not gap"));
        assert_eq!(w.index.as_deref(), Some("PRIMARY"));
    }

    #[test]
    fn mysql_80_holds_the_locks_and_waits_in_numbered_sections() {
        let d = parse_latest(MYSQL80_STATUS).expect("a deadlock");
        assert_eq!(d.victim, Some(1));
        let t1 = &d.transactions[0];
        assert_eq!(t1.thread_id, Some(9));
        assert_eq!(t1.host.as_deref(), Some("localhost"));
        assert_eq!(t1.user.as_deref(), Some("root"));
        assert_eq!(t1.query.as_deref(), Some("DELETE FROM t WHERE i = 1"));
        assert_eq!(t1.held[0].mode.as_deref(), Some("S"));
        assert!(!t1.held[0].waiting);
        assert_eq!(t1.waiting_for[0].mode.as_deref(), Some("X"));
        assert!(t1.waiting_for[0].waiting);
        let t2 = &d.transactions[1];
        assert_eq!(t2.held.len(), 1);
        assert_eq!(t2.waiting_for[0].flags.as_deref(), Some("insert intention"));
        let rows = d.logger_rows();
        assert_eq!(rows.len(), 2);
        assert!(rows[0].victim && !rows[1].victim);
        assert_eq!(rows[0].wait_hold.as_deref(), Some("w"));
        assert_eq!(rows[0].tbl.as_deref(), Some("t"));
        assert_eq!(rows[0].ip, None);
    }

    #[test]
    fn a_report_cut_short_keeps_what_was_read_and_names_no_victim() {
        let all = parse_all(MYSQL57_LOG);
        assert_eq!(all.len(), 2);
        assert!(all[0].truncated);
        assert_eq!(all[0].victim, None);
        assert_eq!(all[0].transactions.len(), 2);
        assert_eq!(all[0].transactions[1].trx_id.as_deref(), Some("5634"));
        assert!(!all[1].truncated);
        assert_eq!(all[1].victim, Some(2));
        let t = &all[1].transactions[0];
        assert_eq!(t.host.as_deref(), Some("localhost"));
        assert_eq!(t.ip.as_deref(), Some("127.0.0.1"));
        assert_eq!(t.user.as_deref(), Some("app"));
        let tl = &all[1].transactions[1].held[0];
        assert_eq!(tl.lock_type, "TABLE");
        assert_eq!(tl.mode.as_deref(), Some("IX"));
        assert_eq!(
            (tl.db.as_deref(), tl.table.as_deref()),
            (Some("we`ird db"), Some("t"))
        );
    }

    #[test]
    fn a_status_without_a_deadlock_gives_none() {
        assert_eq!(
            parse_latest("=====\nBACKGROUND THREAD\n-----\nsrv_master_thread loops\n"),
            None
        );
    }
}
