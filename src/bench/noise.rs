//! Whether a difference between two benchmark runs is larger than the noise of the machine can make on its
//! own. Two measures, and a difference counts only when it clears both:
//! - **An A/A pair**: each run's first half against its second half. Nothing changed between them, so the
//!   gap between the halves is what drift alone does to this server in this run; a before → after change no
//!   larger than that proves nothing.
//! - **A confidence interval** of the change, from a moving-block bootstrap over the runs' one-second
//!   intervals (blocks of ⌈√n⌉ seconds keep the neighbouring seconds' correlation; a fixed seed makes the
//!   same figures give the same interval). A change counts only when its whole 95% interval lies beyond the
//!   A/A gap on one side.
//!
//! The experiment procedure judges its variants against a real A/A pair: the baseline measured as two arms of
//! its own, interleaved with the variants — with the seconds pooled the same way ([`resolve_against`],
//! [`aa_spread`]), round by round with the change itself beyond the A/A spread ([`resolve_paired`]). A before → after
//! comparison cannot interleave (the change goes one way), so its A/A pair is the halves of each run.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// Fewer one-second intervals than this in either run: too few to judge the noise.
pub const MIN_INTERVALS: usize = 4;
const RESAMPLES: usize = 2000;

/// A change of one figure, judged against the noise.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Resolution {
    /// The 95% confidence interval of the change of the per-second mean, in percent.
    pub ci_low_pct: f64,
    pub ci_high_pct: f64,
    /// The larger gap between the two halves of one run (the A/A pair), in percent of the first half.
    pub aa_pct: f64,
    /// Whether `change_pct` is outside both: a difference the noise can resolve.
    pub resolved: bool,
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// The gap between the first and second half of `xs`, in percent of the first half.
fn halves_gap_pct(xs: &[f64]) -> f64 {
    let (a, b) = xs.split_at(xs.len() / 2);
    let (ma, mb) = (mean(a), mean(b));
    if ma <= 0.0 {
        return 0.0;
    }
    ((mb - ma) / ma * 100.0).abs()
}

/// One moving-block resample of `xs`, its mean.
fn resampled_mean(xs: &[f64], block: usize, rng: &mut SmallRng) -> f64 {
    let n = xs.len();
    let mut sum = 0.0;
    let mut taken = 0;
    while taken < n {
        let start = rng.gen_range(0..=n - block);
        for x in &xs[start..start + block] {
            if taken == n {
                break;
            }
            sum += x;
            taken += 1;
        }
    }
    sum / n as f64
}

/// Judge `change_pct` (after against before, in percent, as the report prints it) with the per-second values
/// of the figure in the run before and the run after. None when either run has fewer than [`MIN_INTERVALS`]
/// seconds or the before run's mean is zero.
pub fn resolve(before: &[f64], after: &[f64], change_pct: f64) -> Option<Resolution> {
    let aa = halves_gap_pct(before).max(halves_gap_pct(after));
    let (lo, hi) = interval(before, after)?;
    // The whole interval beyond the drift, as an experiment judges a variant against its A/A pair: an interval
    // that merely leaves zero while reaching into the drift proves nothing the drift could not make.
    let resolved = (lo > aa || hi < -aa) && change_pct.abs() > aa;
    Some(Resolution {
        ci_low_pct: lo,
        ci_high_pct: hi,
        aa_pct: aa,
        resolved,
    })
}

/// As [`resolve`], with the A/A gap measured apart: an experiment runs the baseline twice (arms A and A′,
/// interleaved with the others), and the gap the baseline shows against itself is the noise floor a variant
/// must clear. `aa_pct` is that floor in percent (see [`aa_spread`]). Stricter than [`resolve`]: the change's
/// whole 95% interval must lie beyond the floor, not only its point estimate — an arm the same as A measured
/// "-3.2% (95% CI -6.8…-0.9)" against a ±2.9% floor on a sandbox, which the point rule called slower.
pub fn resolve_against(before: &[f64], after: &[f64], aa_pct: f64) -> Option<Resolution> {
    let (lo, hi) = interval(before, after)?;
    let resolved = lo > aa_pct || hi < -aa_pct;
    Some(Resolution {
        ci_low_pct: lo,
        ci_high_pct: hi,
        aa_pct,
        resolved,
    })
}

/// The spread of an A/A pair: the largest change (in percent, either sign) the 95% interval of A′ against A
/// holds. A difference no larger than this is what the baseline does against itself. None when the pair is
/// too short to judge.
pub fn aa_spread(a: &[f64], a_again: &[f64]) -> Option<f64> {
    let (lo, hi) = interval(a, a_again)?;
    Some(lo.abs().max(hi.abs()))
}

/// Rounds in which the baseline, its A/A pair and a variant must each have been measured before an experiment
/// compares them round by round ([`paired_noise`]); with fewer, it pools the seconds ([`resolve_against`]).
pub const MIN_PAIRED_ROUNDS: usize = 3;

/// The spread of an arm's per-round change against the baseline measured in the same round, pooled over the
/// arms: the standard deviation of ln(arm ÷ A) about each arm's own mean, and its degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedNoise {
    pub sd: f64,
    pub df: usize,
}

/// ln(arm ÷ A) for each round where both were measured with a positive figure: `base` and `arm` are
/// (round, the round's mean) pairs. Adjacent runs share the machine's state, so what moves every arm between
/// rounds (load from another tenant, a warming cache) cancels in the ratio.
pub fn round_log_ratios(base: &[(u32, f64)], arm: &[(u32, f64)]) -> Vec<f64> {
    arm.iter()
        .filter_map(|(round, x)| {
            let (_, a) = base.iter().find(|(r, _)| r == round)?;
            (*a > 0.0 && *x > 0.0).then(|| (x / a).ln())
        })
        .collect()
}

/// The pooled spread of every arm's per-round log ratios (the A/A pair's and each variant's), each about its
/// own mean: under "no difference" every arm's ratio varies as the A/A pair's does, and pooling gives the
/// spread more rounds than one arm has. None when no arm has two rounds, or every ratio is the same (a spread
/// of zero would make any difference a change).
pub fn paired_noise(arms: &[&[f64]]) -> Option<PairedNoise> {
    let (mut squares, mut df) = (0.0, 0usize);
    for xs in arms.iter().filter(|xs| xs.len() >= 2) {
        let m = mean(xs);
        squares += xs.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        df += xs.len() - 1;
    }
    let sd = (squares / df.max(1) as f64).sqrt();
    (df > 0 && sd > 0.0).then_some(PairedNoise { sd, df })
}

/// The 95% interval of an arm's change against the baseline, in percent, from its per-round log ratios:
/// mean ± t(0.975, df) × sd ÷ √rounds, turned back into a ratio. None with fewer than
/// [`MIN_PAIRED_ROUNDS`] rounds.
pub fn paired_interval(ratios: &[f64], noise: PairedNoise) -> Option<(f64, f64)> {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if ratios.len() < MIN_PAIRED_ROUNDS {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, noise.df as f64)
        .ok()?
        .inverse_cdf(0.975);
    let half = t * noise.sd / (ratios.len() as f64).sqrt();
    let m = mean(ratios);
    let pct = |l: f64| (l.exp() - 1.0) * 100.0;
    Some((pct(m - half), pct(m + half)))
}

/// Round by round: the arm's change (the geometric mean of its per-round ratios) must lie beyond `floor_pct`
/// — outside the whole of the A/A pair's interval, so a difference inside the A/A spread is never a change — and
/// its own 95% interval must exclude zero on the same side. Unlike the pooled rule ([`resolve_against`]) the
/// whole interval need not clear the floor: every arm's interval here has the same width (one pooled spread,
/// the same rounds), and the floor already holds the A/A pair's own half-width, so asking the arm's interval
/// to clear it too counted that width twice — a change had to exceed about two half-widths plus the A/A
/// offset (10–15% at 8 rounds on a 2-core sandbox) before it showed. Simulated (the test below), this rule
/// calls an A/A difference a change in about 1–2% of experiments.
pub fn resolve_paired(ratios: &[f64], noise: PairedNoise, floor_pct: f64) -> Option<Resolution> {
    let (lo, hi) = paired_interval(ratios, noise)?;
    let change = (mean(ratios).exp() - 1.0) * 100.0;
    Some(Resolution {
        ci_low_pct: lo,
        ci_high_pct: hi,
        aa_pct: floor_pct,
        resolved: (lo > 0.0 && change > floor_pct) || (hi < 0.0 && change < -floor_pct),
    })
}

/// The A/A pair's paired spread: the largest change (either sign) its paired interval holds.
pub fn aa_spread_paired(aa_ratios: &[f64], noise: PairedNoise) -> Option<f64> {
    let (lo, hi) = paired_interval(aa_ratios, noise)?;
    Some(lo.abs().max(hi.abs()))
}

/// The moving-block bootstrap's 95% interval of the change of the per-second mean, after against before, in
/// percent; None when either series has fewer than [`MIN_INTERVALS`] seconds or the before mean is zero.
fn interval(before: &[f64], after: &[f64]) -> Option<(f64, f64)> {
    if before.len() < MIN_INTERVALS || after.len() < MIN_INTERVALS || mean(before) <= 0.0 {
        return None;
    }
    let block = |n: usize| ((n as f64).sqrt().ceil() as usize).clamp(1, n);
    let (bb, ab) = (block(before.len()), block(after.len()));
    let mut rng = SmallRng::seed_from_u64(0x1a0b_5e11);
    let mut changes: Vec<f64> = (0..RESAMPLES)
        .filter_map(|_| {
            let b = resampled_mean(before, bb, &mut rng);
            let a = resampled_mean(after, ab, &mut rng);
            (b > 0.0).then(|| (a - b) / b * 100.0)
        })
        .collect();
    if changes.len() < RESAMPLES / 2 {
        return None;
    }
    changes.sort_by(f64::total_cmp);
    let at = |q: f64| changes[((changes.len() - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
}

/// A change as a person should read it: `+12.3%` when the noise resolves it, else "no difference the noise
/// can resolve"; `+12.3%` alone when the noise was not measured (a run too short).
pub fn describe(change_pct: f64, r: Option<&Resolution>) -> String {
    match r {
        Some(r) if !r.resolved => "no difference the noise can resolve".to_string(),
        _ => format!("{change_pct:+.1}%"),
    }
}

/// The line under a comparison saying how the noise was judged, for one figure.
pub fn explain(figure: &str, r: &Resolution) -> String {
    format!(
        "{figure}: 95% interval of the change {:+.1}% … {:+.1}%, the halves of one run differ by up to {:.1}% (A/A)",
        r.ci_low_pct, r.ci_high_pct, r.aa_pct
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A steady series around `level` with a deterministic wobble of ±`wobble`.
    fn series(level: f64, wobble: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| level + wobble * [1.0, -0.5, 0.3, -0.8, 0.6, -0.2][i % 6])
            .collect()
    }

    #[test]
    fn a_large_steady_drop_is_resolved_and_its_interval_holds_it() {
        let b = series(1000.0, 20.0, 10);
        let a = series(400.0, 10.0, 10);
        let r = resolve(&b, &a, -60.0).unwrap();
        assert!(r.resolved, "{r:?}");
        assert!(
            r.ci_low_pct < -55.0 && r.ci_high_pct > -65.0 && r.ci_high_pct < 0.0,
            "{r:?}"
        );
    }

    #[test]
    fn the_same_series_again_is_no_difference_the_noise_can_resolve() {
        let b = series(1000.0, 300.0, 10);
        let a: Vec<f64> = b.iter().rev().copied().collect();
        let r = resolve(&b, &a, 0.0).unwrap();
        assert!(!r.resolved, "{r:?}");
        assert!(r.ci_low_pct < 0.0 && r.ci_high_pct > 0.0, "{r:?}");
        assert_eq!(
            describe(0.0, Some(&r)),
            "no difference the noise can resolve"
        );
    }

    #[test]
    fn a_change_no_larger_than_the_drift_inside_one_run_is_not_resolved() {
        // Both runs drift by 30% from their first half to their second; the after run sits 20% higher. The
        // bootstrap alone would call 20% real (the seconds are steady within each half).
        let b: Vec<f64> = (0..10).map(|i| if i < 5 { 100.0 } else { 130.0 }).collect();
        let a: Vec<f64> = b.iter().map(|x| x * 1.2).collect();
        let r = resolve(&b, &a, 20.0).unwrap();
        assert!(r.aa_pct >= 29.9, "{r:?}");
        assert!(!r.resolved, "{r:?}");
    }

    #[test]
    fn wild_noise_hides_a_large_change() {
        // ±80% swings: a +40% change in the mean is inside what the noise does.
        let b = vec![100.0, 180.0, 20.0, 170.0, 30.0, 160.0, 40.0, 100.0];
        let a: Vec<f64> = b.iter().map(|x| x * 1.4).rev().collect();
        let r = resolve(&b, &a, 40.0).unwrap();
        assert!(!r.resolved, "{r:?}");
        assert!(
            r.aa_pct > 40.0 && r.ci_high_pct - r.ci_low_pct > 50.0,
            "{r:?}"
        );
    }

    #[test]
    fn too_few_seconds_are_not_judged_and_read_as_a_bare_change() {
        assert!(resolve(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0], 0.0).is_none());
        assert!(resolve(&[0.0; 6], &[1.0; 6], 0.0).is_none());
        assert_eq!(describe(12.34, None), "+12.3%");
    }

    #[test]
    fn a_measured_a_a_spread_is_the_floor_a_change_must_clear() {
        let a = series(1000.0, 100.0, 8);
        let a_again: Vec<f64> = a.iter().rev().copied().collect();
        let spread = aa_spread(&a, &a_again).unwrap();
        assert!(spread > 0.0, "{spread}");
        // A steady +30% clears a small floor and not one above it.
        let b: Vec<f64> = a.iter().map(|x| x * 1.3).collect();
        assert!(resolve_against(&a, &b, spread).unwrap().resolved);
        let r = resolve_against(&a, &b, 35.0).unwrap();
        assert!(!r.resolved && r.ci_low_pct > 0.0, "{r:?}");
        assert_eq!(r.aa_pct, 35.0);
        assert!(aa_spread(&a[..3], &a).is_none());
    }

    #[test]
    fn an_interval_reaching_into_the_floor_is_not_a_change_even_when_its_middle_is_beyond() {
        let a = series(1000.0, 100.0, 12);
        let b: Vec<f64> = a.iter().rev().map(|x| x * 1.08).collect();
        let r = resolve_against(&a, &b, 0.0).unwrap();
        assert!(r.resolved && r.ci_low_pct > 0.0, "{r:?}");
        // A floor above the interval's low end and below the +8% change: not resolved.
        let floor = (r.ci_low_pct + 8.0) / 2.0;
        assert!(floor < 8.0);
        assert!(!resolve_against(&a, &b, floor).unwrap().resolved);
    }

    #[test]
    fn paired_rounds_pool_each_arms_spread_about_its_own_mean_and_use_student_s_t() {
        let base = [(1, 100.0), (2, 140.0), (3, 60.0)];
        // Exactly +10% in every round: a ratio with no spread of its own.
        let steady = round_log_ratios(&base, &[(1, 110.0), (2, 154.0), (3, 66.0)]);
        assert!(steady.iter().all(|r| (r - 1.1f64.ln()).abs() < 1e-12));
        // A round the baseline did not run is not paired.
        assert_eq!(round_log_ratios(&base, &[(1, 100.0), (4, 90.0)]).len(), 1);
        let wobbly = [0.05, -0.05, 0.05, -0.05];
        let noise = paired_noise(&[&steady, &wobbly, &[0.3]]).unwrap();
        // Squares 4 × 0.05² over (3 − 1) + (4 − 1) degrees of freedom; the one-round arm adds none.
        assert_eq!(noise.df, 5);
        assert!((noise.sd - (0.01f64 / 5.0).sqrt()).abs() < 1e-12);
        let (lo, hi) = paired_interval(&steady, noise).unwrap();
        // t(0.975, 5) = 2.5706: +10% ± 6.6% in log terms, about +2.9% … +17.7%.
        let half = 2.5706 * noise.sd / 3f64.sqrt();
        assert!((lo - ((1.1f64.ln() - half).exp() - 1.0) * 100.0).abs() < 0.01);
        assert!((hi - ((1.1f64.ln() + half).exp() - 1.0) * 100.0).abs() < 0.01);
        assert!(resolve_paired(&steady, noise, 2.0).unwrap().resolved);
        // The change (+10%) beyond a floor the interval's low end reaches into: resolved; beyond the change: not.
        assert!(resolve_paired(&steady, noise, lo + 0.1).unwrap().resolved);
        assert!(!resolve_paired(&steady, noise, 10.1).unwrap().resolved);
        // Too few rounds, or no spread at all: no interval.
        assert!(paired_interval(&steady[..2], noise).is_none());
        assert!(paired_noise(&[&steady]).is_none());
    }

    /// Simulated experiments, judged as an experiment judges them: per round, each arm's log tps is the round's
    /// level (which cancels in the ratios) plus normal noise of `sd`; A′ is A, and B is `change` faster. The
    /// verdict of this rule, and of the one before it (the whole interval beyond the floor).
    fn judged(rng: &mut SmallRng, rounds: usize, change: f64, sd: f64) -> (bool, bool) {
        let mut normal = || {
            // Box–Muller.
            let (u, v): (f64, f64) = (rng.gen_range(f64::EPSILON..1.0), rng.gen());
            (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos() * sd
        };
        let (mut aa, mut b) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let a = normal();
            aa.push(normal() - a);
            b.push((1.0 + change).ln() + normal() - a);
        }
        let noise = paired_noise(&[&aa, &b]).unwrap();
        let floor = aa_spread_paired(&aa, noise).unwrap();
        let r = resolve_paired(&b, noise, floor).unwrap();
        (r.resolved, r.ci_low_pct > floor || r.ci_high_pct < -floor)
    }

    /// How many of `trials` simulated experiments each rule (this one, the one before) called a change.
    fn count(rounds: usize, change: f64, sd: f64, trials: usize) -> (usize, usize) {
        let mut rng = SmallRng::seed_from_u64(29);
        (0..trials).fold((0, 0), |(n, o), _| {
            let (new, old) = judged(&mut rng, rounds, change, sd);
            (n + usize::from(new), o + usize::from(old))
        })
    }

    #[test]
    fn the_paired_rule_rarely_calls_an_a_a_difference_a_change_and_finds_more_than_the_rule_before()
    {
        let trials = 4000;
        for rounds in [3, 8, 12] {
            let (alarms, before) = count(rounds, 0.0, 0.05, trials);
            eprintln!("{rounds} rounds, no difference: {alarms} false alarms in {trials} (the rule before: {before})");
            // The target is at most 1 in 20; the rule gives far fewer.
            assert!(
                alarms * 40 < trials,
                "{rounds} rounds: {alarms} in {trials}"
            );
            assert!(before <= alarms);
        }
        // A 10% change with a per-round spread of 5.7% per arm (as measured under oltp_write_only with 8 client
        // threads on the 2-core sandbox).
        for rounds in [8, 12] {
            let (found, before) = count(rounds, 0.10, 0.057, trials);
            eprintln!(
                "{rounds} rounds, +10%: found in {found} of {trials} (the rule before: {before})"
            );
            assert!(
                found > before * 3 / 2,
                "{rounds} rounds: {found} against {before}"
            );
        }
    }

    #[test]
    fn the_same_figures_give_the_same_interval() {
        let b = series(500.0, 100.0, 12);
        let a = series(450.0, 90.0, 12);
        assert_eq!(resolve(&b, &a, -10.0), resolve(&b, &a, -10.0));
    }
}
