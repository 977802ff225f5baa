//! InnoDB's deadlock report parsed into a structure: the `LATEST DETECTED DEADLOCK` section of `SHOW ENGINE
//! INNODB STATUS`, or every report an error log holds when `innodb_print_all_deadlocks` is on.
//!
//! Two layouts exist. MariaDB 10.6+ prints per transaction `*** WAITING FOR THIS LOCK TO BE GRANTED:` then `***
//! CONFLICTING WITH:` (the locks in the way of that wait) and a `MariaDB thread id` line; MySQL (and MariaDB up
//! to 10.5) print `*** (N) HOLDS THE LOCK(S):` and `*** (N) WAITING FOR THIS LOCK TO BE GRANTED:` and `MySQL
//! thread id`. Both end with `*** WE ROLL BACK TRANSACTION (N)`; a report without that line was cut short and is
//! marked truncated, except a `TOO DEEP OR LONG SEARCH` one, which prints one unnumbered transaction, the one
//! rolled back. In an error log the heading lines carry the log's prefix (`2024-05-01  8:22:44 5 [Note] InnoDB: `
//! on MariaDB and MySQL 5.7, `… [Note] [MY-012469] [InnoDB]  ` with two blanks on MySQL 8.0/8.4; MySQL 5.6 writes
//! `… 7f0c4c3b2700InnoDB: transactions deadlock detected` and the report bare), which is stripped.
//!
//! Every server generation is read: times as `YYMMDD H:MM:SS` (≤ 5.5), `YYYY-MM-DD HH:MM:SS [thread]` or the log
//! line's own; transaction ids of two words (5.0/5.1: high and low 32 bits); names in backticks, in double quotes
//! (ANSI_QUOTES) or bare (index names of 5.7+), `db/table` (5.0); partitions as `/* Partition `p` */` or
//! `table#P#p`. `Deadlock::gaps` says what a report lacks to be parsed fully; the corpus of
//! `tests/fixtures/deadlock-reports/` holds every form, each with its values written down by hand.

use serde::Serialize;

/// One deadlock as InnoDB reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct Deadlock {
    /// When InnoDB detected it, as the report (or the log line) writes it (runs of blanks made one).
    pub ts: Option<String>,
    /// The same time as `YYYY-MM-DD HH:MM:SS` (`YYMMDD` read as 19YY from 70, else 20YY; fraction and zone
    /// dropped).
    pub time: Option<String>,
    pub transactions: Vec<Txn>,
    /// The number, as the report numbers transactions (1, 2, …), of the transaction rolled back.
    pub victim: Option<u32>,
    /// The report ended before `*** WE ROLL BACK TRANSACTION`: what was read is kept.
    pub truncated: bool,
    /// `TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH`: InnoDB gave up the search and rolled back the
    /// one transaction it prints (numbered 1 here, the victim).
    pub too_deep: bool,
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
    /// The partition (`/* Partition `p1` */` or `table#P#p1`) and subpartition the lock is in.
    pub partition: Option<String>,
    pub subpartition: Option<String>,
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

impl Lock {
    /// What this lock line lacks (see [`Deadlock::gaps`]).
    pub fn gaps(&self) -> Vec<String> {
        let mut g = Vec::new();
        let quoted = |s: &str| s.starts_with(['`', '"']) || s.ends_with(['`', '"']);
        if self.lock_type != "RECORD" && self.lock_type != "TABLE" {
            g.push(format!("lock type {:?}", self.lock_type));
        }
        if !matches!(
            self.mode.as_deref(),
            Some("S" | "X" | "IS" | "IX" | "AUTO-INC")
        ) {
            g.push(format!("lock mode {:?}", self.mode));
        }
        for (what, v) in [("schema", &self.db), ("table", &self.table)] {
            match v {
                None => g.push(format!("no {what}")),
                Some(s) if s.is_empty() || quoted(s) => g.push(format!("{what} {s:?}")),
                _ => {}
            }
        }
        if self.lock_type == "RECORD" {
            match &self.index {
                None => g.push("no index".into()),
                Some(s) if s.is_empty() || quoted(s) => g.push(format!("index {s:?}")),
                _ => {}
            }
        }
        if self.trx_id.is_none() {
            g.push("lock without its transaction".into());
        }
        g
    }
}

/// `111212 22:52:42`, `2024-05-01  8:22:44`, `2024-05-01T10:00:00.123456Z` or `…+02:00` as `YYYY-MM-DD HH:MM:SS`.
pub fn normalize_time(ts: &str) -> Option<String> {
    let ts = ts.trim();
    let (date, time) = match ts.split_once('T') {
        Some((d, t)) if d.len() == 10 => (d.to_string(), t.to_string()),
        _ => {
            let mut w = ts.split_whitespace();
            (w.next()?.to_string(), w.next()?.to_string())
        }
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (y, m, d): (u32, u32, u32) = if date.len() == 6 && digits(&date) {
        let yy: u32 = date[..2].parse().ok()?;
        (
            if yy >= 70 { 1900 + yy } else { 2000 + yy },
            date[2..4].parse().ok()?,
            date[4..].parse().ok()?,
        )
    } else {
        let mut p = date.split('-');
        let (y, m, d) = (p.next()?, p.next()?, p.next()?);
        if y.len() != 4 || !digits(y) || !digits(m) || !digits(d) || p.next().is_some() {
            return None;
        }
        (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?)
    };
    let clock = time.split(['.', 'Z', '+']).next()?;
    let clock = match clock.rfind('-') {
        Some(i) if i >= 5 => &clock[..i],
        _ => clock,
    };
    let mut p = clock.split(':');
    let (h, mi, s) = (p.next()?, p.next()?, p.next()?);
    if !digits(h) || !digits(mi) || !digits(s) || p.next().is_some() {
        return None;
    }
    let (h, mi, s): (u32, u32, u32) = (h.parse().ok()?, mi.parse().ok()?, s.parse().ok()?);
    ((1..=12).contains(&m) && (1..=31).contains(&d) && h < 24 && mi < 60 && s < 61)
        .then(|| format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02}"))
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
    /// What this report lacks to be parsed fully, one phrase each; empty when it is. Parsed fully: a time, the
    /// victim among its transactions, not cut short, at least two transactions (one for a TOO DEEP search), and
    /// for each transaction its id, thread id, query id, statement and the lock it waits for; every lock (waited
    /// for, held or conflicting) with its type, mode, schema, table, owning transaction and, for a record lock,
    /// its index, every name without its quotes; a waited-for lock flagged waiting and owned by its transaction.
    pub fn gaps(&self) -> Vec<String> {
        let mut g = Vec::new();
        match &self.ts {
            None => g.push("no time".to_string()),
            Some(ts) if normalize_time(ts).is_none() => {
                g.push(format!("time {ts:?} not understood"))
            }
            _ => {}
        }
        if self.truncated {
            g.push("cut short".into());
        }
        match self.victim {
            None => g.push("no victim".into()),
            Some(v) if !self.transactions.iter().any(|t| t.number == v) => {
                g.push(format!("victim ({v}) is none of its transactions"))
            }
            _ => {}
        }
        let least = if self.too_deep { 1 } else { 2 };
        if self.transactions.len() < least {
            g.push(format!("{} transaction(s)", self.transactions.len()));
        }
        for t in &self.transactions {
            let n = t.number;
            let mut miss = |what: &str| g.push(format!("({n}) {what}"));
            if t.trx_id.is_none() {
                miss("no transaction id");
            }
            if t.thread_id.is_none() {
                miss("no thread id");
            }
            if t.query_id.is_none() {
                miss("no query id");
            }
            if t.query.as_deref().is_none_or(|q| q.trim().is_empty()) {
                miss("no statement");
            }
            if t.waiting_for.is_empty() {
                miss("no lock waited for");
            }
            for l in &t.waiting_for {
                if !l.waiting {
                    miss("the lock waited for is not marked waiting");
                }
                if l.trx_id.is_some() && l.trx_id != t.trx_id {
                    miss("the lock waited for belongs to another transaction");
                }
            }
            for l in t.waiting_for.iter().chain(&t.held) {
                for gap in l.gaps() {
                    miss(&gap);
                }
            }
        }
        g
    }

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

/// The text of a line after an error-log prefix (`… InnoDB: ` or `… [InnoDB] `), and the prefix's time. MySQL 8.0
/// and 8.4 write a heading as `[InnoDB]  *** (1) TRANSACTION: ` (the message's leading and trailing newlines made
/// blanks), so the text is trimmed.
fn strip_log_prefix(line: &str) -> (&str, Option<String>) {
    let starts_with_date = line.len() > 10
        && line.as_bytes()[..4].iter().all(u8::is_ascii_digit)
        && line.as_bytes()[4] == b'-';
    if starts_with_date {
        for marker in ["InnoDB: ", "[InnoDB] ", "[InnoDB]"] {
            if let Some(at) = line.find(marker) {
                let prefix: Vec<&str> = line[..at].split_whitespace().collect();
                // MySQL writes `2024-05-01T10:00:00.123456Z THREAD`, MariaDB `2024-05-01  8:22:44 THREAD`, MySQL
                // 5.6 `2016-09-14 08:30:12 7f0c4c3b2700InnoDB: `.
                let ts = if prefix.first().is_some_and(|p| p.contains('T')) {
                    prefix[0].to_string()
                } else {
                    prefix.iter().take(2).copied().collect::<Vec<_>>().join(" ")
                };
                return (line[at + marker.len()..].trim(), Some(ts));
            }
        }
    }
    (line, None)
}

/// `*** (N) HEADING` → (N, HEADING); `*** HEADING` → (None, HEADING).
fn heading(line: &str) -> Option<(Option<u32>, &str)> {
    let rest = line.trim_start().strip_prefix("*** ")?;
    if let Some(r) = rest.strip_prefix('(') {
        let close = r.find(')')?;
        let n = r[..close].parse().ok()?;
        return Some((Some(n), r[close + 1..].trim()));
    }
    Some((None, rest.trim()))
}

/// The line that opens a report in SHOW ENGINE INNODB STATUS: the time, alone or with the thread's handle
/// (`111212 22:52:42`, `130624  7:39:24`, `2015-03-04 11:22:33 7f3a2c1f6700`, `2025-06-03 17:41:09 13977…`).
/// Runs of blanks are made one.
fn status_timestamp(line: &str) -> Option<String> {
    let w: Vec<&str> = line.split_whitespace().collect();
    if !(2..=3).contains(&w.len()) {
        return None;
    }
    let ts = format!("{} {}", w[0], w[1]);
    normalize_time(&ts)?;
    if w.len() == 3 && !w[2].bytes().all(|b| b.is_ascii_hexdigit() || b == b'x') {
        return None;
    }
    Some(ts)
}

const TOO_DEEP: &str = "TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH";

#[derive(PartialEq, Clone, Copy)]
enum Part {
    Header,
    Waiting,
    Held,
}

/// A report ends without `*** WE ROLL BACK TRANSACTION`: cut short, unless it is a TOO DEEP search, which names
/// no victim line (the one transaction it prints is rolled back) and is whole once its waited-for lock was read.
fn close(mut d: Deadlock) -> Deadlock {
    if d.too_deep
        && d.transactions
            .first()
            .is_some_and(|t| !t.waiting_for.is_empty())
    {
        d.victim = d.transactions.first().map(|t| t.number);
    } else {
        d.truncated = true;
    }
    d
}

/// Every deadlock report in `text`, in order: a saved `SHOW ENGINE INNODB STATUS` gives one, an error log
/// written with `innodb_print_all_deadlocks` one per deadlock.
pub fn parse_all(text: &str) -> Vec<Deadlock> {
    let mut out: Vec<Deadlock> = Vec::new();
    let mut cur: Option<Deadlock> = None;
    let mut part = Part::Header;
    // The time of the last line that may open a report, and of the error log's "Transactions deadlock detected".
    let mut last_ts: Option<String> = None;
    let mut opening_ts: Option<String> = None;
    let mut after_thread_line = false;
    for raw in text.lines() {
        let (line, log_ts) = strip_log_prefix(raw);
        let logged = log_ts.is_some();
        let line = line.trim_end();
        if let Some(at) = line.find(TOO_DEEP) {
            // `130624 17:39:24TOO DEEP …` (5.5) or `2016-01-02 03:04:05 7f7d3a5ff700TOO DEEP …` (5.6, 5.7).
            out.extend(cur.take().map(close));
            let ts = status_timestamp(&line[..at])
                .or_else(|| opening_ts.take())
                .or(log_ts)
                .or_else(|| last_ts.clone());
            cur = Some(Deadlock {
                ts,
                too_deep: true,
                ..Deadlock::default()
            });
            part = Part::Header;
            continue;
        }
        if cur.is_none() && heading(line).is_none() {
            if let Some(ts) = log_ts.clone() {
                if line
                    .to_ascii_lowercase()
                    .starts_with("transactions deadlock detected")
                {
                    opening_ts = Some(ts.clone());
                }
                last_ts = Some(ts);
            } else if let Some(ts) = status_timestamp(line) {
                last_ts = Some(ts);
            } else if !line.trim().is_empty() {
                last_ts = None;
                opening_ts = None;
            }
        }
        if let Some((n, h)) = heading(line) {
            if h == "TRANSACTION:" && n == Some(1) {
                out.extend(cur.take().map(close));
                cur = Some(Deadlock {
                    ts: opening_ts.take().or(last_ts.take()).or(log_ts),
                    ..Deadlock::default()
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
        // ends (cut short, unless it is a TOO DEEP search).
        if line.starts_with("------") || (logged && !line.trim().is_empty()) {
            out.extend(cur.take().map(close));
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
    out.extend(cur.take().map(close));
    for d in &mut out {
        d.time = d.ts.as_deref().and_then(normalize_time);
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

/// A transaction id as one number: MySQL 5.0 and 5.1 print its high and low 32 bits (`0 3793488`).
fn trx_id(s: &str) -> Option<String> {
    let w: Vec<&str> = s.split_whitespace().collect();
    let num = |x: &str| x.parse::<u64>().ok();
    match w.as_slice() {
        [] => None,
        [hi, lo] => match (num(hi), num(lo)) {
            (Some(hi), Some(lo)) => Some(((hi << 32) + lo).to_string()),
            _ => Some(w.join(" ")),
        },
        _ => Some(w.join(" ")),
    }
}

fn header_line(t: &mut Txn, line: &str, after_thread_line: &mut bool) {
    if let Some(r) = line.strip_prefix("TRANSACTION ") {
        let mut parts = r.split(", ");
        t.trx_id = parts.next().and_then(trx_id);
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

/// `5, OS thread handle 1396…, query id 10 localhost 127.0.0.1 root Updating`; MySQL 5.0 and 5.1 print no OS
/// thread handle (`11, query id 350 localhost baron Updating`).
fn thread_line(t: &mut Txn, r: &str) {
    let (id, rest) = r.split_once(',').unwrap_or((r, ""));
    t.thread_id = id.trim().parse().ok();
    let Some(at) = rest.find("query id ") else {
        return;
    };
    let rest = &rest[at + "query id ".len()..];
    let (qid, rest) = rest.split_once(' ').unwrap_or((rest, ""));
    t.query_id = qid.parse().ok();
    let mut rest = rest.trim().to_string();
    if let Some(s) = STATES.iter().find(|s| {
        rest.len() > s.len() && rest.ends_with(*s) && rest[..rest.len() - s.len()].ends_with(' ')
    }) {
        t.state = Some(s.to_string());
        rest.truncate(rest.len() - s.len() - 1);
    }
    // A replication thread prints no host and no user, only what it does (its state may hold any words).
    let replication = [
        "Slave has ",
        "Replica has ",
        "Has read all relay log",
        "Has sent all binlog",
        "Applying batch of row changes",
        "Executing event",
        "Reading event from the relay log",
        "Waiting for ",
    ];
    if !rest.split(' ').any(is_ip)
        && (replication.iter().any(|p| rest.starts_with(p)) || rest.contains("_log_event::"))
    {
        t.state = Some(rest);
        return;
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
        // `index PRIMARY of table` (5.7, 8.0, MariaDB), `index `PRIMARY`` (≤ 5.6), `index "PRIMARY"` (ANSI_QUOTES).
        if let Some(i) = r.find(" index ") {
            let after = &r[i + " index ".len()..];
            if let Some(of) = after.find(" of table ") {
                l.index = Some(unquote(&after[..of]));
                lock_common(&mut l, &after[of + " of table ".len()..]);
            }
        }
        list.push(l);
    } else if let Some(r) = line.strip_prefix("TABLE LOCK ") {
        let mut l = Lock {
            lock_type: "TABLE".into(),
            ..Lock::default()
        };
        if let Some(r) = r.strip_prefix("table ") {
            lock_common(&mut l, r);
        }
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

/// Table, partition, owning transaction and mode of a lock line, `r` starting at the table's name.
fn lock_common(l: &mut Lock, r: &str) {
    let (db, table, rest) = table_name(r);
    let (table, mut partition, mut subpartition) = match table {
        Some(t) => {
            let (t, p, s) = split_partition(&t);
            (Some(t), p, s)
        }
        None => (None, None, None),
    };
    if let Some(c) = rest.trim_start().strip_prefix("/* Partition ") {
        let (p, after) = one_ident(c);
        partition = p;
        if let Some(c) = after.trim_start().strip_prefix(", Subpartition ") {
            subpartition = one_ident(c).0;
        }
    }
    (l.db, l.table, l.partition, l.subpartition) = (db, table, partition, subpartition);
    if let Some(i) = rest.find(" trx id ") {
        let ids: Vec<&str> = rest[i + " trx id ".len()..]
            .split_whitespace()
            .take_while(|w| !w.starts_with("lock"))
            .collect();
        l.trx_id = trx_id(&ids.join(" "));
    }
    let mode_at = rest
        .find(" lock_mode ")
        .or_else(|| rest.find(" lock mode "))
        .map(|i| i + " lock_mode ".len());
    if let Some(i) = mode_at {
        let rest = &rest[i..];
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

/// A name quoted with backticks or double quotes (the quote doubled inside), or bare up to a blank or a comma;
/// and what follows it.
fn one_ident(s: &str) -> (Option<String>, &str) {
    let Some(q) = s.chars().next().filter(|c| *c == '`' || *c == '"') else {
        let end = s.find([' ', ',']).unwrap_or(s.len());
        return ((end > 0).then(|| s[..end].to_string()), &s[end..]);
    };
    let body = &s[1..];
    let mut out = String::new();
    let mut chars = body.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == q {
            if chars.peek().map(|(_, c)| *c) == Some(q) {
                out.push(q);
                chars.next();
            } else {
                return (Some(out), &body[i + 1..]);
            }
        } else {
            out.push(c);
        }
    }
    (None, s)
}

/// An index name as printed: bare (`PRIMARY`, `by v`) or quoted.
fn unquote(s: &str) -> String {
    match one_ident(s) {
        (Some(name), rest) if rest.is_empty() && (s.starts_with('`') || s.starts_with('"')) => name,
        _ => s.to_string(),
    }
}

/// `` `db`.`table` ``, `"db"."table"` (ANSI_QUOTES) or `` `db/table` `` (MySQL 5.0) → (db, table, rest).
fn table_name(s: &str) -> (Option<String>, Option<String>, &str) {
    let (first, rest) = one_ident(s);
    let Some(first) = first else {
        return (None, None, s);
    };
    if let Some(after) = rest.strip_prefix('.') {
        if let (Some(table), rest) = one_ident(after) {
            return (Some(first), Some(table), rest);
        }
    }
    match first.split_once('/') {
        Some((db, table)) => (Some(db.to_string()), Some(table.to_string()), rest),
        None => (None, Some(first), rest),
    }
}

/// `events#P#p2012#SP#s1` (a partition's table as MySQL ≤ 5.6 names it) → (events, p2012, s1).
fn split_partition(t: &str) -> (String, Option<String>, Option<String>) {
    let find = |s: &str, m: &str| s.find(m).or_else(|| s.find(&m.to_ascii_lowercase()));
    match find(t, "#P#") {
        Some(i) => {
            let p = &t[i + 3..];
            match find(p, "#SP#") {
                Some(j) => (t[..i].into(), Some(p[..j].into()), Some(p[j + 4..].into())),
                None => (t[..i].into(), Some(p.into()), None),
            }
        }
        None => (t.to_string(), None, None),
    }
}

#[cfg(test)]
#[path = "corpus_tests.rs"]
mod corpus_tests;

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
    fn times_of_every_layout_are_normalized_and_other_text_is_not_a_time() {
        for (ts, want) in [
            ("111212 22:52:42", "2011-12-12 22:52:42"),
            ("130624  7:39:24", "2013-06-24 07:39:24"),
            ("990101 0:00:01", "1999-01-01 00:00:01"),
            ("2024-05-01  8:22:44", "2024-05-01 08:22:44"),
            ("2024-05-01T10:00:00.123456Z", "2024-05-01 10:00:00"),
            ("2025-02-11T16:31:48.902113+02:00", "2025-02-11 16:31:48"),
            ("2025-02-11T16:31:48-05:00", "2025-02-11 16:31:48"),
        ] {
            assert_eq!(normalize_time(ts).as_deref(), Some(want), "{ts}");
        }
        for bad in [
            "INNODB MONITOR OUTPUT",
            "1234567 10:00:00",
            "2024-13-01 10:00:00",
            "240501 25:00:00",
            "x",
        ] {
            assert_eq!(normalize_time(bad), None, "{bad}");
        }
        assert_eq!(
            status_timestamp("070915 15:34:37 INNODB MONITOR OUTPUT"),
            None
        );
        assert_eq!(
            status_timestamp("2015-03-04 11:22:33 7f3a2c1f6700").as_deref(),
            Some("2015-03-04 11:22:33")
        );
    }

    #[test]
    fn each_missing_piece_is_named_by_gaps() {
        let full = parse_latest(MYSQL80_STATUS).expect("a deadlock");
        assert_eq!(full.gaps(), Vec::<String>::new());
        type Spoil = Box<dyn Fn(&mut Deadlock)>;
        let cases: Vec<(&str, Spoil)> = vec![
            ("no time", Box::new(|d| d.ts = None)),
            ("not understood", Box::new(|d| d.ts = Some("soon".into()))),
            ("cut short", Box::new(|d| d.truncated = true)),
            ("no victim", Box::new(|d| d.victim = None)),
            ("none of its transactions", Box::new(|d| d.victim = Some(7))),
            ("1 transaction(s)", Box::new(|d| d.transactions.truncate(1))),
            (
                "(1) no transaction id",
                Box::new(|d| d.transactions[0].trx_id = None),
            ),
            (
                "(1) no thread id",
                Box::new(|d| d.transactions[0].thread_id = None),
            ),
            (
                "(1) no query id",
                Box::new(|d| d.transactions[0].query_id = None),
            ),
            (
                "(2) no statement",
                Box::new(|d| d.transactions[1].query = None),
            ),
            (
                "(1) no lock waited for",
                Box::new(|d| d.transactions[0].waiting_for.clear()),
            ),
            (
                "not marked waiting",
                Box::new(|d| d.transactions[0].waiting_for[0].waiting = false),
            ),
            (
                "belongs to another",
                Box::new(|d| d.transactions[0].waiting_for[0].trx_id = Some("1".into())),
            ),
            (
                "lock type",
                Box::new(|d| d.transactions[0].held[0].lock_type = "ROW".into()),
            ),
            (
                "lock mode",
                Box::new(|d| d.transactions[0].held[0].mode = None),
            ),
            (
                "no schema",
                Box::new(|d| d.transactions[0].held[0].db = None),
            ),
            (
                "table \"`t`\"",
                Box::new(|d| d.transactions[1].held[0].table = Some("`t`".into())),
            ),
            (
                "no index",
                Box::new(|d| d.transactions[1].waiting_for[0].index = None),
            ),
            (
                "index \"\\\"PRIMARY\\\"\"",
                Box::new(|d| d.transactions[0].held[0].index = Some("\"PRIMARY\"".into())),
            ),
            (
                "without its transaction",
                Box::new(|d| d.transactions[1].held[0].trx_id = None),
            ),
        ];
        for (want, spoil) in cases {
            let mut d = full.clone();
            spoil(&mut d);
            let gaps = d.gaps();
            assert!(
                gaps.iter().any(|g| g.contains(want)),
                "{want:?} not in {gaps:?}"
            );
        }
        let mut deep = full.clone();
        deep.transactions.truncate(1);
        deep.too_deep = true;
        deep.victim = Some(1);
        assert_eq!(
            deep.gaps(),
            Vec::<String>::new(),
            "a TOO DEEP search prints one transaction"
        );
    }

    #[test]
    fn names_are_read_in_every_quoting_and_partitions_apart() {
        let one = |line: &str| {
            let mut v = Vec::new();
            lock_line(&mut v, line);
            v.remove(0)
        };
        let l = one("RECORD LOCKS space id 1 page no 3 n bits 72 index \"k \"\"x\"\"\" of table \"d\"\"b\".\"t\" /* Partition \"p1\", Subpartition \"s2\" */ trx id 0 5 lock_mode X waiting");
        assert_eq!(
            (l.db.as_deref(), l.table.as_deref(), l.index.as_deref()),
            (Some("d\"b"), Some("t"), Some("k \"x\""))
        );
        assert_eq!(
            (l.partition.as_deref(), l.subpartition.as_deref()),
            (Some("p1"), Some("s2"))
        );
        assert_eq!((l.trx_id.as_deref(), l.waiting), (Some("5"), true));
        let l = one("TABLE LOCK table `app`.`ev#p#p9#sp#p9sp0` trx id 4294967297 lock mode IX");
        assert_eq!(
            (l.table.as_deref(), l.partition.as_deref()),
            (Some("ev"), Some("p9"))
        );
        assert_eq!(
            (l.subpartition.as_deref(), l.trx_id.as_deref()),
            (Some("p9sp0"), Some("4294967297"))
        );
        let l = one("RECORD LOCKS space id 0 page no 52 n bits 72 index `GEN_CLUST_INDEX` of table `wiki/page` trx id 1 2 lock mode S");
        assert_eq!(
            (l.db.as_deref(), l.table.as_deref()),
            (Some("wiki"), Some("page"))
        );
        assert_eq!(
            (l.index.as_deref(), l.trx_id.as_deref()),
            (Some("GEN_CLUST_INDEX"), Some("4294967298"))
        );
    }

    #[test]
    fn thread_lines_of_every_generation_give_host_ip_user_and_state() {
        let read = |r: &str| {
            let mut t = Txn::default();
            thread_line(&mut t, r);
            (
                t.thread_id,
                t.query_id,
                t.host,
                t.ip,
                t.user,
                t.state.unwrap_or_default(),
            )
        };
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            read("11, query id 350 localhost baron Updating"),
            (
                Some(11),
                Some(350),
                s("localhost"),
                None,
                s("baron"),
                "Updating".into()
            )
        );
        assert_eq!(
            read("7, OS thread handle 0x7f1b5c2e9700, query id 9 10.9.8.7 metrics update"),
            (
                Some(7),
                Some(9),
                None,
                s("10.9.8.7"),
                s("metrics"),
                "update".into()
            )
        );
        assert_eq!(
            read("12, OS thread handle 1398, query id 4321 Applying batch of row changes (update)"),
            (
                Some(12),
                Some(4321),
                None,
                None,
                None,
                "Applying batch of row changes (update)".into()
            )
        );
        assert_eq!(
            read("13, OS thread handle 1400, query id 88 Update_rows_log_event::find_row(-1)"),
            (
                Some(13),
                Some(88),
                None,
                None,
                None,
                "Update_rows_log_event::find_row(-1)".into()
            )
        );
        assert_eq!(
            read("5, OS thread handle 0x7f, query id 100 Slave has read all relay log; waiting for more updates"),
            (
                Some(5),
                Some(100),
                None,
                None,
                None,
                "Slave has read all relay log; waiting for more updates".into()
            )
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
