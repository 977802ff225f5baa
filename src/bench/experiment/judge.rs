//! How one figure of an experiment (tps, p95, p99) is judged against the baseline: round by round when every
//! arm was measured beside the baseline in enough rounds, else over the pooled one-second figures.
//!
//! Round by round ("paired"): each arm's mean in a round is divided by the baseline's mean in the same round,
//! so what moves every arm between rounds — another tenant's load, a warming cache, purge — cancels in the
//! ratio, where pooling the seconds keeps it in both intervals. The A/A pair is judged the same way and its
//! interval's far end is the noise floor a variant's change must lie beyond, its own interval excluding zero
//! ([`noise::resolve_paired`]; pooled seconds: its whole interval beyond it). Measured with
//! `benches/experiment.sh` (docs/experiment.md): 20 of 20 A/A experiments "no difference" under load 11–22,
//! where two adjacent runs of the same settings differed by up to a factor of 6 (which no pairing of rounds
//! removes); on a quiet machine a ~25% difference found in 10 of 10 runs of 145 s (the pooled rule: 5 of 10
//! under load 5–10), and a ~10% one (the slow log) in 10 of 10 runs of 291 s cut into 48 rounds of 2 s.

use std::collections::BTreeMap;

use super::{ArmRun, BASELINE, BASELINE_AGAIN};
use crate::bench::noise::{self, PairedNoise, Resolution};

/// One figure of an [`ArmRun`]: its one-second values.
pub(super) type Figure = fn(&ArmRun) -> &Vec<f64>;

/// The judge of one figure over an experiment's runs.
pub(super) enum Judge {
    /// Per arm, ln(arm ÷ A) in each round both ran; the pooled spread of those ratios; the A/A spread.
    Paired {
        ratios: BTreeMap<String, Vec<f64>>,
        noise: PairedNoise,
        aa: Option<f64>,
    },
    /// The baseline's pooled seconds and the A/A spread of the pooled seconds.
    Pooled { base: Vec<f64>, aa: Option<f64> },
}

/// Every run of `key`, their one-second values of `f` in round order.
pub(super) fn pooled(runs: &[ArmRun], key: &str, f: Figure) -> Vec<f64> {
    let mut of: Vec<&ArmRun> = runs.iter().filter(|r| r.arm == key).collect();
    of.sort_by_key(|r| r.round);
    of.into_iter().flat_map(|r| f(r).iter().copied()).collect()
}

/// (round, the mean of `f` over that round's run) for each run of `key` that has seconds.
fn round_means(runs: &[ArmRun], key: &str, f: Figure) -> Vec<(u32, f64)> {
    runs.iter()
        .filter(|r| r.arm == key && !f(r).is_empty())
        .map(|r| (r.round, f(r).iter().sum::<f64>() / f(r).len() as f64))
        .collect()
}

impl Judge {
    /// Paired when the A/A pair and every variant that was measured at all each have
    /// [`noise::MIN_PAIRED_ROUNDS`] rounds beside the baseline and the ratios vary (a spread of zero —
    /// the same seeded arrivals repeating exactly at a fixed `--rate` — cannot be a noise measure); else pooled.
    pub(super) fn new(runs: &[ArmRun], keys: &[&str], f: Figure) -> Judge {
        let base = round_means(runs, BASELINE, f);
        let ratios: BTreeMap<String, Vec<f64>> = keys
            .iter()
            .filter(|k| **k != BASELINE && runs.iter().any(|r| r.arm == **k))
            .map(|k| {
                (
                    k.to_string(),
                    noise::round_log_ratios(&base, &round_means(runs, k, f)),
                )
            })
            .collect();
        let enough = ratios.contains_key(BASELINE_AGAIN)
            && ratios.values().all(|r| r.len() >= noise::MIN_PAIRED_ROUNDS);
        let spread = enough
            .then(|| noise::paired_noise(&ratios.values().map(Vec::as_slice).collect::<Vec<_>>()))
            .flatten();
        match spread {
            Some(noise) => {
                let aa = noise::aa_spread_paired(&ratios[BASELINE_AGAIN], noise);
                Judge::Paired { ratios, noise, aa }
            }
            None => {
                let base = pooled(runs, BASELINE, f);
                let aa = noise::aa_spread(&base, &pooled(runs, BASELINE_AGAIN, f));
                Judge::Pooled { base, aa }
            }
        }
    }

    /// The A/A spread in percent; None when too little was measured to judge.
    pub(super) fn aa(&self) -> Option<f64> {
        match self {
            Judge::Paired { aa, .. } | Judge::Pooled { aa, .. } => *aa,
        }
    }

    /// The rounds compared pairwise (those of the A/A pair), or None when the seconds were pooled.
    pub(super) fn paired_rounds(&self) -> Option<usize> {
        match self {
            Judge::Paired { ratios, .. } => ratios.get(BASELINE_AGAIN).map(Vec::len),
            Judge::Pooled { .. } => None,
        }
    }

    /// Arm `key`'s change against A in percent: the geometric mean of its per-round ratios when paired (the
    /// figure its interval is built around), else the pooled means' change.
    pub(super) fn change(&self, key: &str, seconds: &[f64]) -> Option<f64> {
        match self {
            Judge::Paired { ratios, .. } => {
                let r = ratios.get(key).filter(|r| !r.is_empty())?;
                Some(((r.iter().sum::<f64>() / r.len() as f64).exp() - 1.0) * 100.0)
            }
            Judge::Pooled { base, .. } => {
                let (b, x) = (mean(base), mean(seconds));
                (b > 0.0).then(|| (x - b) / b * 100.0)
            }
        }
    }

    /// Arm `key`'s change judged against `floor_pct` (∞: shown, never a change — the A/A pair itself).
    pub(super) fn resolve(&self, key: &str, seconds: &[f64], floor_pct: f64) -> Option<Resolution> {
        match self {
            Judge::Paired { ratios, noise, .. } => {
                noise::resolve_paired(ratios.get(key)?, *noise, floor_pct)
            }
            Judge::Pooled { base, .. } => noise::resolve_against(base, seconds, floor_pct),
        }
    }
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}
