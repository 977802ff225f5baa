//! What watches the server while an arm's workload runs, on a connection of its own: about once a second one
//! `SHOW GLOBAL STATUS`, which feeds both the load guard ([`crate::plan::guard`], the rule long copies follow:
//! pause above `--max-load`, stop above `--critical-load`) and, during the measured run, the explaining counters
//! ([`crate::bench::experiment::CounterSample`]: history list length, dirty pages, checkpoint age, and the
//! thread-concurrency queue where the server has one).
//!
//! Why the guard stops the run rather than pausing it: a workload paused halfway is not the arm's workload any
//! more, and seconds measured beside another tenant's load measure that tenant. So when the guard trips, the
//! run is stopped, its figures are thrown away, every variable goes back to its baseline, and the arm waits for
//! the load to drop (or the experiment stops, above the critical value) before it runs again from its warm-up.
//!
//! The workload's own sessions are taken off `Threads_running` and `Threads_connected` before the decision
//! ([`crate::plan::guard::discount`]), as `--bench-during` does for a copy: the guard judges the server's load,
//! not the measurement's. The sampler always takes one reading after the run ends, so a load that arrived in
//! its last second counts too.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;

use crate::bench::experiment::counters::{self, CounterSample};
use crate::plan::guard::{self, LoadDecision, Threshold};
use crate::server::connect::Target;

/// The guard's thresholds and how many sessions of the workload to take off the per-session variables.
#[derive(Debug, Clone)]
pub struct Guard {
    pub max: Threshold,
    pub critical: Threshold,
    pub own: u64,
}

/// What one watched run saw: the counters (measured runs only), the counters the server does not have and
/// why, and the guard's decision if it tripped.
#[derive(Debug, Default)]
pub struct Watched {
    pub samples: Vec<CounterSample>,
    pub unavailable: BTreeMap<String, String>,
    pub tripped: Option<Load>,
}

/// The guard's decision, in the experiment's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Load {
    Go,
    /// Above `--max-load`: why.
    Pause(String),
    /// Above `--critical-load`: which value, e.g. `Threads_running=61 is above --critical-load Threads_running=50`.
    Stop(String),
}

/// One `SHOW GLOBAL STATUS`, as a map.
pub fn status(conn: &mut mysql::Conn, tag: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let rows: Vec<(String, String)> = conn.query(format!("SHOW {tag} GLOBAL STATUS"))?;
    Ok(rows.into_iter().collect())
}

/// The guard's decision ([`guard::decide`], the rule of long copies) on a snapshot taken while `own` sessions
/// of the workload run.
pub fn decide(mut snap: BTreeMap<String, String>, g: &Guard, own: u64) -> Load {
    guard::discount(&mut snap, own);
    match guard::decide(&snap, &g.max, &g.critical) {
        LoadDecision::Go => Load::Go,
        LoadDecision::Pause(why) => Load::Pause(why),
        LoadDecision::Abort(_) => {
            let c = &g.critical;
            let seen = snap.get(&c.variable).cloned().unwrap_or_default();
            Load::Stop(format!(
                "{}={seen} is above --critical-load {}={}",
                c.variable, c.variable, c.value
            ))
        }
    }
}

/// How the counters are read on this server, found once per run.
struct Probe {
    /// The server has `innodb_thread_concurrency`: its queue is read from `SHOW ENGINE INNODB STATUS`.
    queue: bool,
}

fn probe(conn: &mut mysql::Conn, tag: &str, unavailable: &mut BTreeMap<String, String>) -> Probe {
    let has: Option<(String, String)> = conn
        .query_first(format!(
            "SHOW {tag} GLOBAL VARIABLES LIKE 'innodb\\_thread\\_concurrency'"
        ))
        .ok()
        .flatten();
    if has.is_none() {
        let version: Option<String> = conn
            .query_first(format!("SELECT {tag} VERSION()"))
            .ok()
            .flatten();
        unavailable.insert(
            "thread_concurrency_queue".into(),
            counters::queue_unavailable(&version.unwrap_or_else(|| "this server".into())),
        );
    }
    Probe {
        queue: has.is_some(),
    }
}

/// `trx_rseg_history_len` from `INNODB_METRICS` when the counter is enabled (MariaDB's `ENABLED` column,
/// MySQL's `STATUS`).
fn metrics_history(conn: &mut mysql::Conn, tag: &str) -> Option<u64> {
    let row: mysql::Row = conn
        .query_first(format!(
            "SELECT {tag} * FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'"
        ))
        .ok()
        .flatten()?;
    let text = |name: &str| -> Option<String> {
        row.get_opt::<Option<String>, _>(name)
            .and_then(Result::ok)
            .flatten()
    };
    let enabled = text("ENABLED").is_some_and(|v| v == "1")
        || text("STATUS").is_some_and(|v| v.eq_ignore_ascii_case("enabled"));
    enabled.then(|| text("COUNT")?.parse().ok()).flatten()
}

/// One reading of the counters.
fn read_counters(
    conn: &mut mysql::Conn,
    tag: &str,
    snap: &BTreeMap<String, String>,
    probe: &Probe,
    unavailable: &mut BTreeMap<String, String>,
) -> CounterSample {
    let queued = if probe.queue {
        let row: Option<(String, String, String)> = conn
            .query_first(format!("SHOW {tag} ENGINE INNODB STATUS"))
            .ok()
            .flatten();
        let q = row.and_then(|(_, _, text)| counters::queue_in_status(&text));
        if q.is_none() {
            unavailable.entry("thread_concurrency_queue".into()).or_insert_with(|| {
                "not available on this server: SHOW ENGINE INNODB STATUS gave no 'queries in queue' line (it needs the PROCESS privilege)".into()
            });
        }
        q
    } else {
        None
    };
    counters::sample(snap, metrics_history(conn, tag), queued)
}

/// Run `body` with the server watched: the guard on every reading (the workload's `g.own` sessions taken off),
/// the counters too when `counters` (a measured run). `body` gets the flag that stops the workload: set when
/// the guard trips or when Ctrl-C sets `abort`. `hold_at` names a test hook the sampler waits at before its
/// first reading.
pub fn watch<T>(
    target: &Target,
    abort: &AtomicBool,
    g: &Guard,
    tag: &str,
    counters: bool,
    hold_at: Option<&str>,
    body: impl FnOnce(&AtomicBool) -> anyhow::Result<T>,
) -> anyhow::Result<(T, Watched)> {
    let mut conn = target.connect()?;
    let stop = AtomicBool::new(abort.load(Ordering::SeqCst));
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let sampler = scope.spawn(|| -> anyhow::Result<Watched> {
            let mut w = Watched::default();
            let probe = probe(&mut conn, tag, &mut w.unavailable);
            if let Some(point) = hold_at {
                crate::testhooks::hold(point);
            }
            loop {
                let finished = done.load(Ordering::SeqCst);
                let snap = status(&mut conn, tag)?;
                if counters {
                    let s = read_counters(&mut conn, tag, &snap, &probe, &mut w.unavailable);
                    w.samples.push(s);
                }
                let d = decide(snap, g, g.own);
                if w.tripped.is_none() && d != Load::Go {
                    w.tripped = Some(d);
                    stop.store(true, Ordering::SeqCst);
                }
                if finished {
                    return Ok(w);
                }
                let next = Instant::now() + Duration::from_secs(1);
                while Instant::now() < next && !done.load(Ordering::SeqCst) {
                    if abort.load(Ordering::SeqCst) {
                        stop.store(true, Ordering::SeqCst);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        });
        let r = body(&stop);
        done.store(true, Ordering::SeqCst);
        let w = sampler
            .join()
            .map_err(|_| anyhow::anyhow!("the server watcher of the arm's run panicked"))?;
        let out = r?;
        Ok((out, w?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(max: &str, critical: &str, own: u64) -> Guard {
        Guard {
            max: Threshold::parse(max).unwrap(),
            critical: Threshold::parse(critical).unwrap(),
            own,
        }
    }

    fn snap(running: u64) -> BTreeMap<String, String> {
        [("Threads_running".to_string(), running.to_string())]
            .into_iter()
            .collect()
    }

    #[test]
    fn the_workload_s_own_threads_do_not_trip_the_guard_and_others_do() {
        let g = guard("Threads_running=2", "Threads_running=5", 4);
        // 4 workload threads and the watcher's own statement: not the server's load.
        assert_eq!(decide(snap(5), &g, g.own), Load::Go);
        assert!(
            matches!(decide(snap(7), &g, g.own), Load::Pause(w) if w.contains("Threads_running=3"))
        );
        assert_eq!(
            decide(snap(10), &g, g.own),
            Load::Stop("Threads_running=6 is above --critical-load Threads_running=5".into())
        );
        // Before the workload starts nothing is discounted.
        assert!(matches!(decide(snap(3), &g, 0), Load::Pause(_)));
    }
}
