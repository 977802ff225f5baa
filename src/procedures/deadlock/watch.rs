//! Watch a server for deadlocks, as pt-deadlock-logger does but into a JSON-lines file instead of a table on
//! the server: every poll reads `Innodb_deadlocks` and the `LATEST DETECTED DEADLOCK` of SHOW ENGINE INNODB
//! STATUS (not INNODB_TRX, a cache a fast poller would keep stale). A report whose time and transaction ids
//! differ from the last one seen is new; when the counter grew by more than one between polls, the reports in
//! between were overwritten before innops could read them, and the entry says how many were missed.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mysql::Conn;
use serde::Serialize;

use super::parse::{self, Deadlock};
use crate::error::bad_input;
use crate::server::connect::Target;
use crate::sql::Queryable;

const TAG: &str = "/* innops:deadlock:watch */";

#[derive(Debug, Clone)]
pub struct WatchSettings {
    pub interval: Duration,
    pub duration: Option<Duration>,
    pub count: Option<u64>,
    pub out: PathBuf,
}

/// One line of the output file.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// When innops saw it (UTC, RFC 3339).
    pub seen_at: String,
    pub server: String,
    /// Innodb_deadlocks at that poll.
    pub innodb_deadlocks: u64,
    /// Deadlocks since the previous poll whose reports were overwritten before this one could be read.
    pub missed_before: u64,
    pub deadlock: Deadlock,
    /// pt-deadlock-logger's columns.
    pub rows: Vec<parse::LoggerRow>,
}

#[derive(Debug, Clone, Serialize)]
pub struct WatchSummary {
    pub server: String,
    pub out: PathBuf,
    pub polls: u64,
    pub written: u64,
    pub missed: u64,
    pub print_all_deadlocks: bool,
    /// `count` or `duration`.
    pub ended_by: String,
}

/// What identifies a report: its time and its transactions' ids.
pub type Key = (Option<String>, Vec<Option<String>>);

pub fn key(d: &Deadlock) -> Key {
    (
        d.ts.clone(),
        d.transactions.iter().map(|t| t.trx_id.clone()).collect(),
    )
}

/// What one poll found, against the previous poll: whether the latest report is new, and how many deadlocks
/// happened whose reports innops never saw.
pub fn judge(
    last: Option<&Key>,
    last_count: u64,
    latest: Option<&Deadlock>,
    count: u64,
) -> (bool, u64) {
    let grew = count.saturating_sub(last_count);
    let new = latest.is_some_and(|d| Some(&key(d)) != last);
    let missed = if new { grew.saturating_sub(1) } else { grew };
    (new, missed)
}

fn poll(conn: &mut Conn) -> anyhow::Result<(u64, Option<Deadlock>)> {
    let row: Option<(String, String)> =
        conn.query_first(format!("SHOW {TAG} GLOBAL STATUS LIKE 'Innodb_deadlocks'"))?;
    let count = row.and_then(|(_, v)| v.parse().ok()).unwrap_or(0);
    let status: Option<(String, String, String)> =
        conn.query_first(format!("SHOW {TAG} ENGINE INNODB STATUS"))?;
    Ok((count, status.and_then(|(_, _, t)| parse::parse_latest(&t))))
}

/// Poll until `count` new deadlocks were written or `duration` passed. `progress` gets each line a person
/// reads as it happens (the first once the starting point is read).
pub fn watch(
    target: &Target,
    s: &WatchSettings,
    mut progress: impl FnMut(&str),
) -> anyhow::Result<WatchSummary> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&s.out)
        .map_err(|e| {
            bad_input(format!(
                "cannot open {} to append to: {}",
                s.out.display(),
                crate::error::describe_io(&e)
            ))
        })?;
    let mut conn = target.connect()?;
    let pad: Option<String> =
        conn.query_first(format!("SELECT {TAG} @@GLOBAL.innodb_print_all_deadlocks"))?;
    let print_all = matches!(pad.as_deref(), Some("1") | Some("ON"));
    let start = Instant::now();
    let (mut last_count, latest) = poll(&mut conn)?;
    let mut last_key = latest.as_ref().map(key);
    let mut summary = WatchSummary {
        server: target.label.clone(),
        out: s.out.clone(),
        polls: 1,
        written: 0,
        missed: 0,
        print_all_deadlocks: print_all,
        ended_by: String::new(),
    };
    progress(&format!(
        "watching {} every {:?} (Innodb_deadlocks = {last_count}{}); new deadlocks go to {}",
        target.label,
        s.interval,
        if latest.is_some() {
            ", the latest report already there is not new"
        } else {
            ""
        },
        s.out.display()
    ));
    loop {
        if s.count.is_some_and(|c| summary.written >= c) {
            summary.ended_by = "count".into();
            break;
        }
        let left = s.duration.map(|d| d.saturating_sub(start.elapsed()));
        if left == Some(Duration::ZERO) {
            summary.ended_by = "duration".into();
            break;
        }
        std::thread::sleep(left.map_or(s.interval, |l| l.min(s.interval)));
        let (count, latest) = poll(&mut conn)?;
        summary.polls += 1;
        let (new, missed) = judge(last_key.as_ref(), last_count, latest.as_ref(), count);
        last_count = count;
        if missed > 0 {
            summary.missed += missed;
            progress(&format!(
                "{missed} deadlock(s) happened between two polls and InnoDB keeps only the latest report: {}",
                if print_all {
                    "innodb_print_all_deadlocks is ON, so the error log has each (innops deadlock parse reads it)"
                } else {
                    "set innodb_print_all_deadlocks=ON to have every one written to the error log, or poll more often"
                }
            ));
        }
        let Some(d) = latest.filter(|_| new) else {
            continue;
        };
        last_key = Some(key(&d));
        let entry = Entry {
            seen_at: chrono::Utc::now().to_rfc3339(),
            server: target.label.clone(),
            innodb_deadlocks: count,
            missed_before: missed,
            rows: d.logger_rows(),
            deadlock: d,
        };
        let line = serde_json::to_string(&entry)?;
        writeln!(file, "{line}")
            .and_then(|_| file.flush())
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot append to {}: {}",
                    s.out.display(),
                    crate::error::describe_io(&e)
                )
            })?;
        summary.written += 1;
        let v = entry.deadlock.victim_txn();
        progress(&format!(
            "deadlock at {}: {} transaction(s), victim thread {}",
            entry.deadlock.ts.as_deref().unwrap_or("(time not printed)"),
            entry.deadlock.transactions.len(),
            v.and_then(|t| t.thread_id)
                .map_or("?".into(), |n| n.to_string())
        ));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dl(ts: &str, ids: &[&str]) -> Deadlock {
        Deadlock {
            ts: Some(ts.into()),
            transactions: ids
                .iter()
                .enumerate()
                .map(|(i, id)| parse::Txn {
                    number: i as u32 + 1,
                    trx_id: Some(id.to_string()),
                    ..Default::default()
                })
                .collect(),
            victim: Some(2),
            ..Default::default()
        }
    }

    #[test]
    fn a_report_is_new_when_its_time_or_ids_differ_and_a_jump_of_the_counter_is_missed_deadlocks() {
        let a = dl("2026-01-01 10:00:00", &["1", "2"]);
        let k = key(&a);
        assert_eq!(judge(Some(&k), 5, Some(&a), 5), (false, 0));
        assert_eq!(judge(None, 5, Some(&a), 6), (true, 0));
        let same_second = dl("2026-01-01 10:00:00", &["3", "4"]);
        assert_eq!(judge(Some(&k), 5, Some(&same_second), 6), (true, 0));
        assert_eq!(judge(Some(&k), 5, Some(&same_second), 8), (true, 2));
        assert_eq!(judge(Some(&k), 5, Some(&a), 7), (false, 2));
        assert_eq!(judge(None, 0, None, 0), (false, 0));
    }
}
