//! The server's own counters that explain a difference between arms, sampled about once a second during each
//! measured run: the purge history list length, dirty pages (and their share of the buffer pool), the
//! checkpoint age, and the queue of `innodb_thread_concurrency` where the server still has one. They carry no
//! verdict: they are single readings of a moving state, with no interval, shown beside the verdicts so a DBA can
//! see *why* an arm was slower (history growing, the pool full of dirty pages, the redo near its checkpoint).
//!
//! A counter the server does not have is named as such with the reason, never shown as zero: MariaDB 10.6
//! removed InnoDB's thread throttling, so 10.11 has no queue to count.
//!
//! Pure: the procedure reads `SHOW GLOBAL STATUS` (and, where needed, `information_schema.INNODB_METRICS` and
//! `SHOW ENGINE INNODB STATUS`) and builds a [`CounterSample`] with [`sample`]; [`summarize`] pools an arm's
//! samples over its rounds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ArmRun;

/// One reading of the explaining counters; None where the server did not give the value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CounterSample {
    /// Undo logs of committed transactions not yet purged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_len: Option<u64>,
    /// `Innodb_buffer_pool_pages_dirty` and `Innodb_buffer_pool_pages_total`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dirty_pages: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_pages: Option<u64>,
    /// Bytes of redo written since the last checkpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_age: Option<u64>,
    /// Queries waiting in InnoDB's thread-concurrency queue (`SHOW ENGINE INNODB STATUS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued: Option<u64>,
}

/// One counter over an arm's measured runs: mean and max of its samples, or why it has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterFigure {
    /// A stable key: `history_list_length`, `dirty_pages`, `dirty_pct`, `checkpoint_age`,
    /// `thread_concurrency_queue`.
    pub name: String,
    /// What a person reads.
    pub title: String,
    pub unit: String,
    pub samples: usize,
    pub mean: Option<f64>,
    pub max: Option<f64>,
    /// Why there is no figure ("not available on this server: …").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The counters in the order they are shown: key, title, unit, and how a sample gives the value.
type Read = fn(&CounterSample) -> Option<f64>;
pub const COUNTERS: [(&str, &str, &str, Read); 5] = [
    (
        "history_list_length",
        "history list length",
        "undo logs",
        |s| s.history_len.map(|v| v as f64),
    ),
    ("dirty_pages", "dirty pages", "pages", |s| {
        s.dirty_pages.map(|v| v as f64)
    }),
    ("dirty_pct", "dirty pages, % of the pool", "%", |s| {
        match (s.dirty_pages, s.pool_pages) {
            (Some(d), Some(t)) if t > 0 => Some(d as f64 * 100.0 / t as f64),
            _ => None,
        }
    }),
    ("checkpoint_age", "checkpoint age", "bytes", |s| {
        s.checkpoint_age.map(|v| v as f64)
    }),
    (
        "thread_concurrency_queue",
        "queries in the innodb_thread_concurrency queue",
        "queries",
        |s| s.queued.map(|v| v as f64),
    ),
];

/// A sample from one `SHOW GLOBAL STATUS` snapshot, the history length read from `INNODB_METRICS` where it was
/// (`trx_rseg_history_len`, enabled by default), and the queue read from `SHOW ENGINE INNODB STATUS` where the
/// server has one.
pub fn sample(
    status: &BTreeMap<String, String>,
    metrics_history: Option<u64>,
    queued: Option<u64>,
) -> CounterSample {
    let get = |k: &str| {
        status
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(k))
            .and_then(|(_, v)| v.trim().parse::<u64>().ok())
    };
    CounterSample {
        history_len: metrics_history.or_else(|| get("Innodb_history_list_length")),
        dirty_pages: get("Innodb_buffer_pool_pages_dirty"),
        pool_pages: get("Innodb_buffer_pool_pages_total"),
        checkpoint_age: get("Innodb_checkpoint_age"),
        queued,
    }
}

/// `M` of InnoDB status's `N queries inside InnoDB, M queries in queue` line (ROW OPERATIONS), which InnoDB
/// prints where it throttles threads (MySQL, MariaDB up to 10.5).
pub fn queue_in_status(innodb_status: &str) -> Option<u64> {
    innodb_status.lines().find_map(|l| {
        let rest = l.split_once("queries inside InnoDB,")?.1;
        rest.trim()
            .strip_suffix("queries in queue")?
            .trim()
            .parse()
            .ok()
    })
}

/// The reason a counter has no samples on a server, by counter key, from what the server has: whether it has
/// `innodb_thread_concurrency` at all.
pub fn queue_unavailable(version: &str) -> String {
    format!(
        "not available on this server: {version} has no innodb_thread_concurrency (MariaDB removed InnoDB's thread throttling in 10.6), so no query waits in its queue"
    )
}

/// Each counter over `runs` (one arm's measured runs): mean and max of every sample, or the reason it has none.
pub fn summarize(runs: &[&ArmRun]) -> Vec<CounterFigure> {
    if runs
        .iter()
        .all(|r| r.samples.is_empty() && r.unavailable.is_empty())
    {
        // Runs stored before innops sampled the counters, or none at all: nothing to show.
        return Vec::new();
    }
    COUNTERS
        .iter()
        .map(|(name, title, unit, read)| {
            let values: Vec<f64> = runs
                .iter()
                .flat_map(|r| r.samples.iter().filter_map(read))
                .filter(|v| v.is_finite())
                .collect();
            let note = values.is_empty().then(|| {
                runs.iter()
                    .find_map(|r| r.unavailable.get(*name).cloned())
                    .unwrap_or_else(|| "not available on this server: it did not report it".into())
            });
            CounterFigure {
                name: name.to_string(),
                title: title.to_string(),
                unit: unit.to_string(),
                samples: values.len(),
                mean: (!values.is_empty())
                    .then(|| values.iter().sum::<f64>() / values.len() as f64),
                max: values.iter().copied().reduce(f64::max),
                note,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_sample_reads_the_status_and_prefers_innodb_metrics_for_the_history() {
        let s = status(&[
            ("Innodb_buffer_pool_pages_dirty", "50"),
            ("Innodb_buffer_pool_pages_total", "200"),
            ("Innodb_checkpoint_age", "4096"),
            ("Innodb_history_list_length", "7"),
        ]);
        let a = sample(&s, Some(9), None);
        assert_eq!(a.history_len, Some(9));
        assert_eq!(sample(&s, None, None).history_len, Some(7));
        assert_eq!((a.dirty_pages, a.pool_pages), (Some(50), Some(200)));
        assert_eq!(a.checkpoint_age, Some(4096));
        assert_eq!(a.queued, None);
        assert_eq!(
            sample(&BTreeMap::new(), None, None),
            CounterSample::default()
        );
    }

    #[test]
    fn the_queue_is_read_from_innodb_status_s_row_operations() {
        let text = "--------------\nROW OPERATIONS\n--------------\n3 queries inside InnoDB, 12 queries in queue\n0 read views open inside InnoDB\n";
        assert_eq!(queue_in_status(text), Some(12));
        assert_eq!(queue_in_status("0 read views open inside InnoDB\n"), None);
    }

    fn run(samples: Vec<CounterSample>, unavailable: &[(&str, &str)]) -> ArmRun {
        ArmRun {
            arm: "A".into(),
            round: 1,
            tps: vec![],
            p95_ms: vec![],
            p99_ms: vec![],
            transactions: 0,
            seconds: 0.0,
            data_written: 0,
            log_written: 0,
            cpu_s: None,
            cpu_note: None,
            proc_written: None,
            started: None,
            samples,
            unavailable: unavailable
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            paused: vec![],
        }
    }

    #[test]
    fn counters_pool_mean_and_max_and_a_missing_one_says_why_never_zero() {
        let s = |h, d| CounterSample {
            history_len: Some(h),
            dirty_pages: Some(d),
            pool_pages: Some(100),
            checkpoint_age: None,
            queued: None,
        };
        let why = queue_unavailable("MariaDB 10.11.19");
        let a = run(
            vec![s(10, 20), s(30, 40)],
            &[("thread_concurrency_queue", &why)],
        );
        let b = run(vec![s(20, 60)], &[]);
        let f = summarize(&[&a, &b]);
        let by = |n: &str| f.iter().find(|c| c.name == n).unwrap().clone();
        assert_eq!(by("history_list_length").mean, Some(20.0));
        assert_eq!(by("history_list_length").max, Some(30.0));
        assert_eq!(by("dirty_pct").max, Some(60.0));
        assert_eq!(by("dirty_pages").samples, 3);
        let q = by("thread_concurrency_queue");
        assert_eq!((q.mean, q.max, q.samples), (None, None, 0));
        assert!(q.note.unwrap().starts_with(
            "not available on this server: MariaDB 10.11.19 has no innodb_thread_concurrency"
        ));
        assert!(by("checkpoint_age")
            .note
            .unwrap()
            .starts_with("not available"));
        // Runs from before the counters were sampled show none.
        assert!(summarize(&[&run(vec![], &[])]).is_empty());
    }
}
