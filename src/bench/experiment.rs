//! An experiment's figures and verdicts, apart from how they were measured: the arms (the baseline A, the
//! baseline again A′, and one arm per combination of the values asked for), the order each round runs them
//! in, each arm's one-second figures pooled over its rounds, and the verdict of each variant against A.
//!
//! Why an A/A pair of arms and not the halves of one run (as [`super::noise::resolve`] does for a before →
//! after comparison): the arms are interleaved in rounds, so drift over the experiment hits A, A′ and every
//! variant alike, and the gap between A and A′ is what this server does to the same settings measured twice in
//! this experiment. A variant's change counts only when it lies beyond the A/A spread (the largest change the
//! A′-against-A interval holds): compared round by round, the change itself beyond it and its own 95% interval
//! excluding zero ([`super::noise::resolve_paired`]); with the seconds pooled, its whole interval beyond it
//! ([`super::noise::resolve_against`]).
//!
//! Pure: the procedure stores one [`ArmRun`] per arm and round in the run directory and asks [`summarize`]
//! for the verdicts, so a resumed run judges the rounds measured before the interruption with the new ones.

use serde::{Deserialize, Serialize};

use super::noise::{self, Resolution};

pub mod counters;
mod judge;
mod render;

use judge::{Figure, Judge};

pub use counters::{CounterFigure, CounterSample};

/// The baseline's key: the server's values when the experiment started.
pub const BASELINE: &str = "A";
/// The baseline measured again, as an arm of its own: the A/A pair.
pub const BASELINE_AGAIN: &str = "A2";

/// One server variable and the value an arm gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub name: String,
    pub value: String,
}

/// One arm of an experiment: its key (`A`, `A2`, `B`, `C`, …) and the settings it runs with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arm {
    pub key: String,
    pub settings: Vec<Setting>,
}

impl Arm {
    /// How a person reads the key: `A′` for the baseline again.
    pub fn label(&self) -> String {
        label_of(&self.key)
    }
    pub fn is_baseline(&self) -> bool {
        self.key == BASELINE || self.key == BASELINE_AGAIN
    }
    /// `name=value, …`.
    pub fn describe(&self) -> String {
        self.settings
            .iter()
            .map(|s| format!("{}={}", s.name, s.value))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn label_of(key: &str) -> String {
    if key == BASELINE_AGAIN {
        "A′".to_string()
    } else {
        key.to_string()
    }
}

/// Every combination of the values asked for, the first variable's values varying slowest.
pub fn cross(sets: &[(String, Vec<String>)]) -> Vec<Vec<Setting>> {
    let mut out: Vec<Vec<Setting>> = vec![Vec::new()];
    for (name, values) in sets {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                values.iter().map(move |v| {
                    let mut p = prefix.clone();
                    p.push(Setting {
                        name: name.clone(),
                        value: v.clone(),
                    });
                    p
                })
            })
            .collect();
    }
    out
}

/// The arms: A and A′ with the baseline, then one per combination, keyed B, C, … (after Z: V27, V28, …).
pub fn arms(baseline: &[Setting], variants: &[Vec<Setting>]) -> Vec<Arm> {
    let mut out = vec![
        Arm {
            key: BASELINE.into(),
            settings: baseline.to_vec(),
        },
        Arm {
            key: BASELINE_AGAIN.into(),
            settings: baseline.to_vec(),
        },
    ];
    for (i, v) in variants.iter().enumerate() {
        let key = match u8::try_from(i + 1).ok().filter(|n| *n < 26) {
            Some(n) => char::from(b'A' + n).to_string(),
            None => format!("V{}", i + 2),
        };
        out.push(Arm {
            key,
            settings: v.clone(),
        });
    }
    out
}

/// The order round `round` (0-based) runs `arms` arms in: the list rotated by one more each round, so that
/// every arm runs in every position and none always follows the same neighbour's warm buffers.
pub fn round_order(arms: usize, round: usize) -> Vec<usize> {
    (0..arms).map(|i| (i + round) % arms.max(1)).collect()
}

/// One arm's run in one round: its one-second figures and counters, as stored in the run directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmRun {
    pub arm: String,
    /// 1-based.
    pub round: u32,
    /// Transactions a second, each one-second interval of the measured run.
    pub tps: Vec<f64>,
    /// p95 latency in ms, each one-second interval.
    pub p95_ms: Vec<f64>,
    /// p99 latency in ms, each one-second interval (absent from runs stored before innops measured it).
    #[serde(default)]
    pub p99_ms: Vec<f64>,
    pub transactions: u64,
    pub seconds: f64,
    /// `Innodb_data_written` and `Innodb_os_log_written` over the measured run, in bytes.
    pub data_written: u64,
    pub log_written: u64,
    /// The server process's CPU (user + system) over the measured run, in seconds; None when not measured.
    pub cpu_s: Option<f64>,
    /// Why the CPU was not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_note: Option<String>,
    /// The server process's `write_bytes` (`/proc/<pid>/io`) over the measured run: what every engine wrote
    /// to storage, RocksDB's and Aria's files included; None when not measured (the CPU note says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proc_written: Option<u64>,
    /// When the measured run started (UTC): the tps-over-time chart places the arm's seconds from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<chrono::DateTime<chrono::Utc>>,
    /// The server's explaining counters, sampled about once a second during the measured run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<CounterSample>,
    /// Why a counter could not be sampled on this server, by counter name (e.g. the thread-concurrency queue
    /// on a server without `innodb_thread_concurrency`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unavailable: std::collections::BTreeMap<String, String>,
    /// Load-guard pauses before this run was measured: each the reason and how long it waited, in seconds
    /// (a run the guard interrupted was thrown away and measured again once the load dropped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paused: Vec<(String, f64)>,
}

/// A table variant's copy on disk, measured once it is built (the same rows in every copy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableSize {
    /// `information_schema.TABLES` after `ANALYZE TABLE`, in bytes.
    pub data_length: u64,
    pub index_length: u64,
    /// The files' size and allocated size in bytes (page compression punches holes: allocated is what the disk
    /// holds), and where these came from; None with `files_from` saying why not.
    pub file_bytes: Option<u64>,
    pub allocated_bytes: Option<u64>,
    pub files_from: String,
}

/// One arm's figures, pooled over its rounds, and its verdict against A.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArmFigures {
    pub key: String,
    pub label: String,
    pub settings: Vec<Setting>,
    pub rounds: usize,
    /// One-second intervals pooled.
    pub seconds: usize,
    /// Mean of the one-second tps.
    pub tps: f64,
    /// Mean of the one-second p95 latencies, in ms.
    pub p95_ms: f64,
    /// Against A, in percent; None for A itself.
    pub tps_change_pct: Option<f64>,
    pub tps_noise: Option<Resolution>,
    pub p95_change_pct: Option<f64>,
    pub p95_noise: Option<Resolution>,
    /// Mean of the one-second p99 latencies, in ms, and its change against A judged as p95's is.
    #[serde(default)]
    pub p99_ms: f64,
    #[serde(default)]
    pub p99_change_pct: Option<f64>,
    #[serde(default)]
    pub p99_noise: Option<Resolution>,
    pub verdict: String,
    /// Bytes per transaction: `Innodb_data_written` and `Innodb_os_log_written` deltas over the transactions.
    pub data_bytes_per_trx: Option<f64>,
    pub log_bytes_per_trx: Option<f64>,
    /// Server CPU per transaction in ms; None with `cpu_note` saying why.
    pub cpu_ms_per_trx: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_note: Option<String>,
    /// Why the arm was never measured (the server did not start with its values): it has no figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// The server process's `write_bytes` per transaction, every engine's writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_bytes_per_trx: Option<f64>,
    /// With table variants: the arm's copy on disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_size: Option<TableSize>,
    /// The server's explaining counters over the arm's measured runs (mean and max; no verdict).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_counters: Vec<CounterFigure>,
}

/// How the experiment was run, for the report's heading.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shape {
    pub workload: String,
    pub threads: u32,
    pub rounds: u32,
    pub time_s: u64,
    pub warmup_s: u64,
    /// Transactions a second to start in all threads (0: as fast as they go).
    #[serde(default)]
    pub rate: u32,
}

/// The experiment's result: the verdict table, the A/A line and the winner beyond noise, if any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    pub shape: Shape,
    pub arms: Vec<ArmFigures>,
    /// The A/A spread of tps in percent; None when too few seconds were measured.
    pub aa_spread_pct: Option<f64>,
    /// The noise floor a variant's tps change must exceed, in percent: the A/A spread, or one transaction a
    /// second of A's tps when that is larger (a count of whole transactions cannot show less: it matters only
    /// at low rates, under 100 tps).
    #[serde(default)]
    pub floor_pct: Option<f64>,
    /// How tps was judged: the number of rounds compared pairwise (each arm's round against the baseline's
    /// round), or None when the one-second figures were pooled over the rounds (fewer than
    /// [`noise::MIN_PAIRED_ROUNDS`] rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_rounds: Option<usize>,
    /// One sentence on the A/A pair.
    pub aa_line: String,
    /// The key of the variant with the most tps among those faster than A beyond noise.
    pub winner: Option<String>,
    /// Rounds measured of those planned (a summary of an interrupted run holds fewer).
    pub rounds_measured: u32,
    /// Every measured run on one time axis, in the order they ran: the tps-over-time chart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<RunSpan>,
    /// The load guard's waits before runs, one line each ("round 2, arm B: waited 3.1 s: Threads_running=30 is
    /// above --max-load 25").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_pauses: Vec<String>,
    /// The server's cores and the values given relative to them, resolved (`cores: 2 (…): x: 2xcores = 4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<String>,
    /// With several client-thread counts (`--threads 4,16,64`): one experiment per count, in the order given,
    /// each with its own A, A′ and verdicts; the fields above then repeat the first count's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_threads: Vec<Experiment>,
}

/// One measured run placed in time: its arm, round, start, length and one-second tps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpan {
    pub arm: String,
    pub label: String,
    pub round: u32,
    pub started: chrono::DateTime<chrono::Utc>,
    pub seconds: f64,
    pub tps: Vec<f64>,
}

/// The runs that know when they started, in the order they ran.
fn timeline(runs: &[ArmRun]) -> Vec<RunSpan> {
    let mut out: Vec<RunSpan> = runs
        .iter()
        .filter_map(|r| {
            Some(RunSpan {
                arm: r.arm.clone(),
                label: label_of(&r.arm),
                round: r.round,
                started: r.started?,
                seconds: r.seconds,
                tps: r.tps.clone(),
            })
        })
        .collect();
    out.sort_by_key(|s| s.started);
    out
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// A variant's verdict in words, from its tps change and how the noise judged it.
pub fn verdict(change_pct: f64, r: Option<&Resolution>) -> String {
    match r {
        None => format!(
            "not judged: too few seconds (under {} per arm)",
            noise::MIN_INTERVALS
        ),
        // The wording a before → after comparison uses too.
        Some(r) if !r.resolved => noise::describe(change_pct, Some(r)),
        Some(r) => format!(
            "{} by {:.1}% (95% CI {:+.1}…{:+.1}%)",
            if change_pct > 0.0 { "faster" } else { "slower" },
            change_pct.abs(),
            r.ci_low_pct,
            r.ci_high_pct
        ),
    }
}

/// Pool each arm's runs and judge each variant against A, with A′ against A as the noise floor.
pub fn summarize(shape: Shape, arms: &[Arm], runs: &[ArmRun]) -> Experiment {
    let pooled = |key: &str, f: Figure| judge::pooled(runs, key, f);
    let keys: Vec<&str> = arms.iter().map(|a| a.key.as_str()).collect();
    let tps_judge = Judge::new(runs, &keys, |r| &r.tps);
    let p95_judge = Judge::new(runs, &keys, |r| &r.p95_ms);
    let p99_judge = Judge::new(runs, &keys, |r| &r.p99_ms);
    let a_tps = pooled(BASELINE, |r| &r.tps);
    let aa = tps_judge.aa();
    let one_trx = if mean(&a_tps) > 0.0 {
        100.0 / mean(&a_tps)
    } else {
        0.0
    };
    let floor = aa.map(|s| s.max(one_trx));
    let (aa_p95, aa_p99) = (p95_judge.aa(), p99_judge.aa());
    let mut figures = Vec::new();
    for arm in arms {
        let tps = pooled(&arm.key, |r| &r.tps);
        let p95 = pooled(&arm.key, |r| &r.p95_ms);
        let p99 = pooled(&arm.key, |r| &r.p99_ms);
        let own: Vec<&ArmRun> = runs.iter().filter(|r| r.arm == arm.key).collect();
        let trx: u64 = own.iter().map(|r| r.transactions).sum();
        let per_trx = |bytes: u64| (trx > 0).then(|| bytes as f64 / trx as f64);
        let cpu: Option<f64> = own.iter().map(|r| r.cpu_s).sum();
        let cpu_note = own.iter().find_map(|r| r.cpu_note.clone());
        let disk: Option<u64> = own.iter().map(|r| r.proc_written).sum();
        let (mut tps_change, mut tps_noise, mut p95_change, mut p95_noise) =
            (None, None, None, None);
        let (mut p99_change, mut p99_noise) = (None, None);
        let verdict_text = if arm.key == BASELINE {
            "baseline".to_string()
        } else {
            tps_change = tps_judge.change(&arm.key, &tps);
            p95_change = p95_judge.change(&arm.key, &p95);
            p99_change = p99_judge.change(&arm.key, &p99);
            let change = tps_change.unwrap_or(0.0);
            if arm.key == BASELINE_AGAIN {
                // The pair itself: its interval is shown, it is never a change.
                tps_noise = tps_judge.resolve(&arm.key, &tps, f64::INFINITY);
                p95_noise = p95_judge.resolve(&arm.key, &p95, f64::INFINITY);
                p99_noise = p99_judge.resolve(&arm.key, &p99, f64::INFINITY);
                match floor {
                    Some(s) => format!("the baseline again (A/A): noise floor ±{s:.1}%"),
                    None => "the baseline again (A/A): too few seconds to measure the noise".into(),
                }
            } else {
                tps_noise = floor.and_then(|s| tps_judge.resolve(&arm.key, &tps, s));
                p95_noise = aa_p95.and_then(|s| p95_judge.resolve(&arm.key, &p95, s));
                p99_noise = aa_p99.and_then(|s| p99_judge.resolve(&arm.key, &p99, s));
                verdict(change, tps_noise.as_ref())
            }
        };
        figures.push(ArmFigures {
            key: arm.key.clone(),
            label: arm.label(),
            settings: arm.settings.clone(),
            rounds: own.len(),
            seconds: tps.len(),
            tps: mean(&tps),
            p95_ms: mean(&p95),
            tps_change_pct: tps_change,
            tps_noise,
            p95_change_pct: p95_change,
            p95_noise,
            p99_ms: mean(&p99),
            p99_change_pct: p99_change,
            p99_noise,
            verdict: verdict_text,
            data_bytes_per_trx: per_trx(own.iter().map(|r| r.data_written).sum()),
            log_bytes_per_trx: per_trx(own.iter().map(|r| r.log_written).sum()),
            cpu_ms_per_trx: cpu.filter(|_| trx > 0).map(|c| c * 1000.0 / trx as f64),
            cpu_note,
            failed: None,
            disk_bytes_per_trx: disk.and_then(per_trx),
            table_size: None,
            server_counters: counters::summarize(&own),
        });
    }
    let winner = figures
        .iter()
        .filter(|f| !arms.iter().any(|a| a.key == f.key && a.is_baseline()))
        .filter(|f| {
            f.tps_noise.as_ref().is_some_and(|r| r.resolved)
                && f.tps_change_pct.unwrap_or(0.0) > 0.0
        })
        .max_by(|x, y| x.tps.total_cmp(&y.tps))
        .map(|f| f.key.clone());
    let aa_line = aa_line(&figures, aa, floor, tps_judge.paired_rounds());
    Experiment {
        cores: None,
        by_threads: Vec::new(),
        rounds_measured: runs.iter().map(|r| r.round).max().unwrap_or(0),
        timeline: timeline(runs),
        load_pauses: runs
            .iter()
            .flat_map(|r| {
                r.paused.iter().map(|(why, secs)| {
                    format!(
                        "round {}, arm {}: waited {secs:.1} s: {why}",
                        r.round,
                        label_of(&r.arm)
                    )
                })
            })
            .collect(),
        shape,
        arms: figures,
        aa_spread_pct: aa,
        floor_pct: floor,
        paired_rounds: tps_judge.paired_rounds(),
        aa_line,
        winner,
    }
}

fn aa_line(
    figures: &[ArmFigures],
    aa: Option<f64>,
    floor: Option<f64>,
    paired: Option<usize>,
) -> String {
    let again = figures.iter().find(|f| f.key == BASELINE_AGAIN);
    let (how, rule) = match paired {
        Some(n) => (
            format!("each arm against A in the same round, {n} rounds"),
            "its change lies beyond",
        ),
        None => (
            format!(
                "the one-second figures pooled over the rounds: fewer than {} rounds to compare round by round",
                noise::MIN_PAIRED_ROUNDS
            ),
            "its whole 95% interval lies beyond",
        ),
    };
    match (again, aa, floor) {
        (Some(f), Some(aa), Some(s)) => format!(
            "A/A: the baseline measured twice differs by {:+.1}% in tps (95% CI {:+.1}…{:+.1}%; {how}): a variant counts only when {rule} ±{s:.1}%{}{}",
            f.tps_change_pct.unwrap_or(0.0),
            f.tps_noise.as_ref().map_or(0.0, |r| r.ci_low_pct),
            f.tps_noise.as_ref().map_or(0.0, |r| r.ci_high_pct),
            if s > aa {
                " (one transaction a second of A's tps: whole transactions cannot show less)"
            } else {
                ""
            },
            if paired.is_some() {
                " and its own 95% interval excludes zero"
            } else {
                ""
            }
        ),
        _ => format!(
            "A/A: not measured (fewer than {} one-second intervals per arm): no variant is judged; give more --time or --rounds",
            noise::MIN_INTERVALS
        ),
    }
}

impl Experiment {
    /// Arm `key` could not be run (`why`: the server did not start with its values, and was put back): it is
    /// in the table as failed, with no figures, and is never the winner.
    pub fn mark_failed(&mut self, key: &str, why: &str) {
        if let Some(f) = self.arms.iter_mut().find(|f| f.key == key) {
            f.verdict = format!("failed: {why}");
            f.failed = Some(why.to_string());
            f.tps_change_pct = None;
            f.tps_noise = None;
            f.p95_change_pct = None;
            f.p95_noise = None;
            f.p99_change_pct = None;
            f.p99_noise = None;
        }
        if self.winner.as_deref() == Some(key) {
            self.winner = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, value: &str) -> Setting {
        Setting {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn each_round_rotates_the_order_by_one_so_every_arm_runs_in_every_place() {
        assert_eq!(round_order(4, 0), [0, 1, 2, 3]);
        assert_eq!(round_order(4, 1), [1, 2, 3, 0]);
        assert_eq!(round_order(4, 5), [1, 2, 3, 0]);
        for place in 0..3 {
            let firsts: std::collections::BTreeSet<usize> =
                (0..3).map(|r| round_order(3, r)[place]).collect();
            assert_eq!(firsts.len(), 3);
        }
    }

    #[test]
    fn several_variables_cross_into_every_combination() {
        let c = cross(&[
            ("a".into(), vec!["1".into(), "2".into()]),
            ("b".into(), vec!["x".into(), "y".into(), "z".into()]),
        ]);
        assert_eq!(c.len(), 6);
        assert_eq!(c[0], [set("a", "1"), set("b", "x")]);
        assert_eq!(c[5], [set("a", "2"), set("b", "z")]);
        let arms = arms(&[set("a", "0"), set("b", "w")], &c);
        let keys: Vec<&str> = arms.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(keys, ["A", "A2", "B", "C", "D", "E", "F", "G"]);
        assert_eq!(arms[1].label(), "A′");
        assert_eq!(arms[2].describe(), "a=1, b=x");
    }

    fn run(arm: &str, round: u32, tps: &[f64]) -> ArmRun {
        ArmRun {
            arm: arm.into(),
            round,
            tps: tps.to_vec(),
            p95_ms: tps.iter().map(|t| 1000.0 / t).collect(),
            p99_ms: tps.iter().map(|t| 2000.0 / t).collect(),
            transactions: tps.iter().sum::<f64>() as u64,
            seconds: tps.len() as f64,
            data_written: 1000 * tps.len() as u64,
            log_written: 500 * tps.len() as u64,
            cpu_s: None,
            cpu_note: Some("not measured: server not local".into()),
            proc_written: None,
            started: None,
            samples: Vec::new(),
            unavailable: Default::default(),
            paused: Vec::new(),
        }
    }

    fn shape() -> Shape {
        Shape {
            workload: "oltp_read_write".into(),
            threads: 4,
            rounds: 2,
            time_s: 4,
            warmup_s: 0,
            rate: 0,
        }
    }

    #[test]
    fn a_steady_gain_beyond_the_a_a_spread_is_faster_and_the_best() {
        let base = [100.0, 104.0, 97.0, 101.0];
        let again = [101.0, 98.0, 103.0, 99.0];
        let fast: Vec<f64> = base.iter().map(|t| t * 1.5).collect();
        let same = [99.0, 103.0, 100.0, 102.0];
        let arms = arms(
            &[set("v", "1")],
            &[vec![set("v", "2")], vec![set("v", "3")]],
        );
        let runs = [
            run("A", 1, &base),
            run("A2", 1, &again),
            run("B", 1, &fast),
            run("C", 1, &same),
            run("A", 2, &base),
            run("A2", 2, &again),
            run("B", 2, &fast),
            run("C", 2, &same),
        ];
        let e = summarize(shape(), &arms, &runs);
        assert_eq!(e.arms[0].verdict, "baseline");
        assert!(e.arms[1]
            .verdict
            .starts_with("the baseline again (A/A): noise floor ±"));
        assert!(
            e.arms[2].verdict.starts_with("faster by 50.0% (95% CI +"),
            "{:?}",
            e.arms[2]
        );
        assert_eq!(e.arms[3].verdict, "no difference the noise can resolve");
        assert_eq!(e.winner.as_deref(), Some("B"));
        // p99 is judged as p95 is: its change against A with an interval, the A/A pair's spread the floor.
        let b = &e.arms[2];
        assert!(
            (b.p99_change_pct.unwrap() + 100.0 / 3.0).abs() < 1.0,
            "{b:?}"
        );
        assert!(
            b.p99_noise
                .as_ref()
                .is_some_and(|r| r.resolved && r.ci_high_pct < 0.0),
            "{b:?}"
        );
        assert!(
            e.arms[1].p99_noise.as_ref().is_some_and(|r| !r.resolved),
            "{:?}",
            e.arms[1]
        );
        assert!(e.arms[0].p99_noise.is_none() && e.arms[0].p99_ms > 0.0);
        assert_eq!(e.table()[0][4], "p99 ms");
        assert_eq!(e.rounds_measured, 2);
        assert_eq!(e.arms[2].seconds, 8);
        assert!(e.arms[0].cpu_ms_per_trx.is_none());
        let text = e.render_text();
        assert!(
            text.contains("A/A: the baseline measured twice differs by"),
            "{text}"
        );
        assert!(
            text.contains("CPU and disk bytes per transaction: not measured: server not local"),
            "{text}"
        );
        assert!(text.contains("best beyond noise: B (v=2)"), "{text}");
    }

    /// `rounds` rounds of A, A′, B and C whose level swings by ±40% from round to round (another tenant's
    /// load), each run 5 seconds with its own small jitter; B runs `gain` × A's level in every round, C and A′
    /// the same as A.
    fn drifting_runs(rounds: u32, gain: f64, aa_jitter: f64) -> Vec<ArmRun> {
        let level = |round: u32| 100.0 * [1.0, 1.4, 0.6, 1.2, 0.8, 1.3][round as usize % 6];
        let seconds = |l: f64, phase: u32| -> Vec<f64> {
            (0..5u32)
                .map(|i| l * (1.0 + 0.02 * (((i + phase) % 3) as f64 - 1.0)))
                .collect()
        };
        let mut out = Vec::new();
        for round in 1..=rounds {
            let l = level(round);
            // A′'s own round-to-round wobble against A: the noise a variant must clear.
            let wobble = 1.0 + aa_jitter * if round % 2 == 0 { 1.0 } else { -1.0 };
            out.push(run("A", round, &seconds(l, round)));
            out.push(run("A2", round, &seconds(l * wobble, round + 1)));
            out.push(run("B", round, &seconds(l * gain, round + 2)));
            out.push(run("C", round, &seconds(l / wobble, round)));
        }
        out
    }

    #[test]
    fn round_by_round_a_real_gain_shows_through_load_that_swings_between_rounds() {
        let arms = arms(
            &[set("v", "1")],
            &[vec![set("v", "2")], vec![set("v", "3")]],
        );
        let runs = drifting_runs(6, 1.10, 0.01);
        let e = summarize(shape(), &arms, &runs);
        assert_eq!(e.paired_rounds, Some(6), "{e:?}");
        assert!(
            e.arms[2].verdict.starts_with("faster by 10.0% (95% CI +"),
            "{:?}",
            e.arms[2]
        );
        assert_eq!(e.arms[3].verdict, "no difference the noise can resolve");
        assert_eq!(e.winner.as_deref(), Some("B"));
        assert!(
            e.aa_line
                .contains("each arm against A in the same round, 6 rounds"),
            "{}",
            e.aa_line
        );
        // The same seconds pooled over the rounds hide the gain in the swing: the rule this replaces.
        let a = judge::pooled(&runs, "A", |r| &r.tps);
        let b = judge::pooled(&runs, "B", |r| &r.tps);
        let a2 = judge::pooled(&runs, "A2", |r| &r.tps);
        let floor = noise::aa_spread(&a, &a2).unwrap();
        assert!(!noise::resolve_against(&a, &b, floor).unwrap().resolved);
    }

    #[test]
    fn round_by_round_a_gain_counts_only_beyond_the_a_a_pairs_wobble() {
        let arms = arms(
            &[set("v", "1")],
            &[vec![set("v", "2")], vec![set("v", "3")]],
        );
        // A′ wobbles ±15% against A from round to round: the A/A interval over 6 rounds reaches past 10%, and a
        // 10% gain lies inside it.
        let e = summarize(shape(), &arms, &drifting_runs(6, 1.10, 0.15));
        assert_eq!(e.paired_rounds, Some(6));
        assert!(e.floor_pct.unwrap() > 10.0, "{e:?}");
        assert_eq!(e.arms[2].verdict, "no difference the noise can resolve");
        assert_eq!(e.winner, None);
        // ±8%: the A/A interval ends near 7%, and the gain lies beyond it with its own interval above zero — found,
        // though that interval reaches below the floor (the rule before, which asked the whole interval to clear
        // the floor, did not find it).
        let e = summarize(shape(), &arms, &drifting_runs(6, 1.10, 0.08));
        let b = e.arms[2].tps_noise.clone().unwrap();
        assert!(
            b.ci_low_pct > 0.0 && b.ci_low_pct < e.floor_pct.unwrap(),
            "{e:?}"
        );
        assert!(
            e.arms[2].verdict.starts_with("faster by 10.0%"),
            "{:?}",
            e.arms[2]
        );
    }

    #[test]
    fn fewer_rounds_than_pairing_needs_pool_the_seconds_and_say_so() {
        let arms = arms(
            &[set("v", "1")],
            &[vec![set("v", "2")], vec![set("v", "3")]],
        );
        let e = summarize(shape(), &arms, &drifting_runs(2, 1.10, 0.01));
        assert_eq!(e.paired_rounds, None);
        assert!(
            e.aa_line
                .contains("pooled over the rounds: fewer than 3 rounds"),
            "{}",
            e.aa_line
        );
        // Identical ratios in every round (the same seeded arrivals at a fixed --rate) measure no spread:
        // pooled too, never an interval of zero width.
        let flat: Vec<ArmRun> = (1..=4)
            .flat_map(|r| ["A", "A2", "B", "C"].map(|k| run(k, r, &[10.0, 9.0, 11.0, 10.0])))
            .collect();
        let e = summarize(shape(), &arms, &flat);
        assert_eq!(e.paired_rounds, None, "{e:?}");
        assert_eq!(e.arms[2].verdict, "no difference the noise can resolve");
    }

    #[test]
    fn a_failed_arm_has_no_figures_and_never_wins() {
        let base = [100.0, 104.0, 97.0, 101.0];
        let fast: Vec<f64> = base.iter().map(|t| t * 1.5).collect();
        let arms = arms(
            &[set("v", "1")],
            &[vec![set("v", "bad")], vec![set("v", "3")]],
        );
        let runs = [run("A", 1, &base), run("A2", 1, &base), run("C", 1, &fast)];
        let mut e = summarize(shape(), &arms, &runs);
        e.mark_failed("B", "the server did not start with v=bad");
        assert_eq!(
            e.arms[2].verdict,
            "failed: the server did not start with v=bad"
        );
        assert!(e.arms[2].tps_change_pct.is_none() && e.arms[2].failed.is_some());
        let row = &e.table()[3];
        assert_eq!(
            (
                row[2].as_str(),
                row[3].as_str(),
                row[4].as_str(),
                row[5].as_str()
            ),
            ("-", "-", "-", "-")
        );
        // The others are judged as before.
        assert_ne!(
            e.arms[3].verdict,
            "not judged: too few seconds (under 4 per arm)"
        );
        assert!(!e.arms[3].verdict.starts_with("failed"));
    }

    #[test]
    fn a_steady_loss_is_slower_and_never_the_best() {
        let base = [100.0, 102.0, 98.0, 100.0, 101.0];
        let slow: Vec<f64> = base.iter().map(|t| t * 0.6).collect();
        let arms = arms(&[set("v", "1")], &[vec![set("v", "2")]]);
        let runs = [run("A", 1, &base), run("A2", 1, &base), run("B", 1, &slow)];
        let e = summarize(shape(), &arms, &runs);
        assert!(
            e.arms[2].verdict.starts_with("slower by 40.0% (95% CI -"),
            "{:?}",
            e.arms[2]
        );
        assert_eq!(e.winner, None);
        assert!(e.render_text().contains("best beyond noise: none"));
    }

    #[test]
    fn a_gain_inside_a_noisy_a_a_pair_is_no_difference() {
        // A′ sits 20% above A: the noise floor is at least that, and a 15% gain is inside it.
        let base = [100.0, 101.0, 99.0, 100.0];
        let again: Vec<f64> = base.iter().map(|t| t * 1.2).collect();
        let gain: Vec<f64> = base.iter().map(|t| t * 1.15).collect();
        let arms = arms(&[set("v", "1")], &[vec![set("v", "2")]]);
        let runs = [run("A", 1, &base), run("A2", 1, &again), run("B", 1, &gain)];
        let e = summarize(shape(), &arms, &runs);
        assert!(e.aa_spread_pct.unwrap() >= 19.0, "{e:?}");
        assert_eq!(e.arms[2].verdict, "no difference the noise can resolve");
        assert_eq!(e.winner, None);
    }

    #[test]
    fn at_a_few_transactions_a_second_one_transaction_is_the_floor() {
        // The same arrivals in every arm: the seconds differ only by where a transaction's end fell, and a
        // steady series gives a bootstrap interval of almost nothing.
        let base = [9.0, 4.0, 8.0, 9.0, 4.0, 8.0];
        let jitter = [9.0, 3.43, 9.58, 9.0, 4.0, 8.0];
        let arms = arms(&[set("v", "1")], &[vec![set("v", "2")]]);
        let runs = [
            run("A", 1, &base),
            run("A2", 1, &base),
            run("B", 1, &jitter),
        ];
        let e = summarize(shape(), &arms, &runs);
        assert!(e.aa_spread_pct.unwrap() < 1.0, "{e:?}");
        assert!((e.floor_pct.unwrap() - 100.0 / 7.0).abs() < 1e-9, "{e:?}");
        assert_eq!(e.arms[2].verdict, "no difference the noise can resolve");
        assert!(
            e.aa_line.ends_with("whole transactions cannot show less)"),
            "{}",
            e.aa_line
        );
    }

    #[test]
    fn too_few_seconds_are_not_judged_and_say_how_to_get_more() {
        let arms = arms(&[set("v", "1")], &[vec![set("v", "2")]]);
        let runs = [
            run("A", 1, &[100.0, 100.0]),
            run("A2", 1, &[100.0, 100.0]),
            run("B", 1, &[200.0, 200.0]),
        ];
        let e = summarize(shape(), &arms, &runs);
        assert_eq!(
            e.arms[2].verdict,
            "not judged: too few seconds (under 4 per arm)"
        );
        assert!(e.aa_line.starts_with("A/A: not measured"));
        assert_eq!(e.winner, None);
        assert_eq!(e.arms[2].data_bytes_per_trx, Some(2000.0 / 400.0));
    }
}
