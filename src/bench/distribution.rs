//! Random numbers as sysbench draws them (`src/sb_rand.c`): a per-thread xoroshiro128+ generator, doubles
//! in [0, 1) built from its top 52 bits, and the distributions of `--rand-type`: sysbench 1.0's `uniform`,
//! `gaussian`, `special` and `pareto`, and sysbench 1.1's `zipfian` (rejection-inversion sampling of a bounded
//! Zipf distribution, Hörmann and Derflinger 1996). Keys drawn here hit the same rows with the same skew as
//! sysbench's, which is what makes figures comparable.

use serde::{Deserialize, Serialize};

/// `--rand-type`: how row ids are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RandType {
    /// sysbench 1.0's default: 75% of draws fall in the central 1% of the range, the rest are Gaussian.
    #[default]
    Special,
    Uniform,
    /// The mean of `--rand-spec-iter` uniform draws: a bell centred in the range.
    Gaussian,
    /// `--rand-pareto-h` of the draws go to the lowest (1 - h) of the range (the 80/20 rule by default).
    Pareto,
    /// Id n drawn with probability proportional to 1/n^`--rand-zipfian-exp`: the lowest ids are hot.
    Zipfian,
}

impl RandType {
    pub fn as_str(self) -> &'static str {
        match self {
            RandType::Special => "special",
            RandType::Uniform => "uniform",
            RandType::Gaussian => "gaussian",
            RandType::Pareto => "pareto",
            RandType::Zipfian => "zipfian",
        }
    }
}

/// sysbench's distribution parameters: `--rand-spec-iter`, `--rand-spec-pct`, `--rand-spec-res`,
/// `--rand-pareto-h` and `--rand-zipfian-exp`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RandParams {
    pub spec_iter: u32,
    pub spec_pct: f64,
    pub spec_res: f64,
    pub pareto_h: f64,
    pub zipfian_exp: f64,
}

impl Default for RandParams {
    /// sysbench's defaults.
    fn default() -> Self {
        RandParams {
            spec_iter: 12,
            spec_pct: 1.0,
            spec_res: 75.0,
            pareto_h: 0.2,
            zipfian_exp: 0.8,
        }
    }
}

impl RandParams {
    /// Check the values the way sysbench would accept them; the error names the flag and the fix.
    pub fn validate(&self) -> anyhow::Result<()> {
        use crate::error::bad_input;
        if self.spec_iter == 0 {
            return Err(bad_input(
                "--rand-spec-iter 0 draws nothing: give at least 1 (sysbench's default is 12)",
            ));
        }
        if !(0.0..=100.0).contains(&self.spec_pct) {
            return Err(bad_input(
                "--rand-spec-pct is a percentage: give 0 to 100 (sysbench's default is 1)",
            ));
        }
        if !(0.0..100.0).contains(&self.spec_res) {
            return Err(bad_input("--rand-spec-res is a percentage below 100: give 0 to 99 (sysbench's default is 75)"));
        }
        if !(self.pareto_h > 0.0 && self.pareto_h < 1.0) {
            return Err(bad_input(
                "--rand-pareto-h must lie strictly between 0 and 1 (sysbench's default is 0.2)",
            ));
        }
        if !(self.zipfian_exp >= 0.0 && self.zipfian_exp.is_finite()) {
            return Err(bad_input(
                "--rand-zipfian-exp must be 0 or more (sysbench's default is 0.8)",
            ));
        }
        Ok(())
    }
}

/// A distribution ready to draw from: the kind with its parameters and the constants sysbench precomputes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dist {
    pub kind: RandType,
    iter: u32,
    pct: f64,
    res: f64,
    pareto_power: f64,
    zipf_exp: f64,
    /// The rejection-inversion shortcut bound `s` and H(1.5) - 1.
    zipf_s: f64,
    zipf_h_x1: f64,
}

impl Dist {
    pub fn new(kind: RandType, p: &RandParams) -> Dist {
        let e = p.zipfian_exp;
        Dist {
            kind,
            iter: p.spec_iter.max(1),
            pct: p.spec_pct,
            res: p.spec_res,
            pareto_power: p.pareto_h.ln() / (1.0 - p.pareto_h).ln(),
            zipf_exp: e,
            zipf_s: 2.0 - zipf_h_inv(zipf_h_int(2.5, e) - zipf_h(2.0, e), e),
            zipf_h_x1: zipf_h_int(1.5, e) - 1.0,
        }
    }
}

impl From<RandType> for Dist {
    /// The kind with sysbench's default parameters.
    fn from(kind: RandType) -> Dist {
        Dist::new(kind, &RandParams::default())
    }
}

/// `ln(1 + x) / x`, by its series near 0.
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// `(e^x - 1) / x`, by its series near 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// The Zipf hat function h(x) = x^-e.
fn zipf_h(x: f64, e: f64) -> f64 {
    (-e * x.ln()).exp()
}

/// H(x), the integral of h: (x^(1-e) - 1) / (1-e), or ln x for e = 1.
fn zipf_h_int(x: f64, e: f64) -> f64 {
    let l = x.ln();
    expm1_over_x((1.0 - e) * l) * l
}

/// The inverse of H.
fn zipf_h_inv(y: f64, e: f64) -> f64 {
    let t = (y * (1.0 - e)).max(-1.0);
    (ln1p_over_x(t) * y).exp()
}

/// xoroshiro128+ with sysbench's constants (a=55, b=14, c=36).
#[derive(Debug, Clone)]
pub struct SbRng {
    s: [u64; 2],
}

fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SbRng {
    /// A generator for one thread. sysbench seeds each thread from libc `random()`; innops derives the state
    /// from the run's seed and the thread number, so a run is repeatable for a given seed.
    pub fn new(seed: u64, thread: u64) -> SbRng {
        let mut x = seed ^ thread.wrapping_mul(0xD1B5_4A32_D192_ED03);
        let mut s = [splitmix64(&mut x), splitmix64(&mut x)];
        if s == [0, 0] {
            s[0] = 1;
        }
        SbRng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s0 = self.s[0];
        let mut s1 = self.s[1];
        let result = s0.wrapping_add(s1);
        s1 ^= s0;
        self.s[0] = s0.rotate_left(55) ^ s1 ^ (s1 << 14);
        self.s[1] = s1.rotate_left(36);
        result
    }

    /// A double in [0, 1): sysbench's bit trick (exponent of 1.0, top 52 bits as mantissa, minus one).
    pub fn uniform_double(&mut self) -> f64 {
        let x = self.next_u64();
        f64::from_bits((0x3FFu64 << 52) | (x >> 12)) - 1.0
    }

    /// `sb_rand_uniform(a, b)`: an integer in [a, b].
    pub fn uniform(&mut self, a: u32, b: u32) -> u32 {
        uniform_from(a, b, self.uniform_double())
    }

    /// `sb_rand_special(a, b)` with sysbench's default parameters.
    pub fn special(&mut self, a: u32, b: u32) -> u32 {
        self.default(&Dist::from(RandType::Special), a, b)
    }

    /// `sysbench.rand.default(a, b)` under `--rand-type` and its parameters.
    pub fn default(&mut self, d: &Dist, a: u32, b: u32) -> u32 {
        let (a, b) = (a.min(b), a.max(b));
        match d.kind {
            RandType::Special => {
                let rnd = self.uniform_double();
                special_from(d, a, b, rnd, || self.uniform_double())
            }
            RandType::Uniform => self.uniform(a, b),
            RandType::Gaussian => {
                // The mean of `iter` uniform draws over the b - a + 1 values.
                let t = (b - a) as f64 + 1.0;
                let sum: f64 = (0..d.iter).map(|_| self.uniform_double() * t).sum();
                a + (sum / d.iter as f64) as u32
            }
            RandType::Pareto => {
                let t = (b - a) as f64 + 1.0;
                (a as f64 + t * self.uniform_double().powf(d.pareto_power)) as u32
            }
            RandType::Zipfian => a + self.zipf(d, b - a + 1) - 1,
        }
    }

    /// A Zipf-distributed integer in [1, n] by rejection inversion: draw from the continuous hat, round to the
    /// nearest integer k, and accept k with the ratio of the discrete mass to the hat's mass over k's cell.
    fn zipf(&mut self, d: &Dist, n: u32) -> u32 {
        let e = d.zipf_exp;
        let h_n = zipf_h_int(f64::from(n) + 0.5, e);
        loop {
            let u = h_n + self.uniform_double() * (d.zipf_h_x1 - h_n);
            let x = zipf_h_inv(u, e);
            let k = ((x + 0.5) as u32).clamp(1, n);
            let kf = f64::from(k);
            if kf - x <= d.zipf_s || u >= zipf_h_int(kf + 0.5, e) - zipf_h(kf, e) {
                return k;
            }
        }
    }

    /// `sb_rand_str`: each `#` of the template becomes a random digit (drawn with `sb_rand_uniform('0','9')`).
    pub fn fill_template(&mut self, template: &str, out: &mut String) {
        out.clear();
        for ch in template.chars() {
            if ch == '#' {
                out.push(char::from(
                    self.uniform(u32::from(b'0'), u32::from(b'9')) as u8
                ));
            } else {
                out.push(ch);
            }
        }
    }
}

/// `a + rnd * (b - a + 1)`, truncated, as C converts the double back to `uint32_t`.
fn uniform_from(a: u32, b: u32, rnd: f64) -> u32 {
    (a as f64 + rnd * ((b - a) as f64 + 1.0)) as u32
}

/// sysbench's `special` distribution, given its first uniform draw `rnd` and a source of further draws.
///
/// With the defaults, a draw below 25% of the enlarged range takes a 12-term Gaussian over [a, b]; the rest
/// map `rnd` itself into a window of 1% of the range centred in it. Because the same `rnd` that chose the
/// branch is reused, only the upper three quarters of that window are ever hit — a sysbench quirk kept on
/// purpose so that the same rows are hot.
pub(crate) fn special_from(
    dist: &Dist,
    a: u32,
    b: u32,
    rnd: f64,
    mut more: impl FnMut() -> f64,
) -> u32 {
    let t = (b - a) as f64;
    let range_size = t * (100.0 / (100.0 - dist.res));
    let res = rnd * range_size;
    if res < t {
        let mut sum = 0.0;
        for _ in 0..dist.iter {
            sum += more();
        }
        return (a as f64 + sum * t * (1.0 / dist.iter as f64)) as u32;
    }
    let d = t * (dist.pct / 100.0);
    let mut res = rnd * (d + 1.0);
    res += t / 2.0 - t * (dist.pct / 200.0);
    a + res as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_puts_about_three_quarters_of_ids_in_the_central_one_percent() {
        let (a, b) = (1u32, 100_000u32);
        let t = f64::from(b - a);
        let (lo, hi) = (
            a as f64 + t / 2.0 - t * 0.005,
            a as f64 + t / 2.0 + t * 0.005 + 1.0,
        );
        let mut rng = SbRng::new(42, 0);
        let n = 400_000;
        let inside = (0..n)
            .map(|_| rng.special(a, b))
            .filter(|&id| {
                assert!((a..=b).contains(&id), "{id} out of range");
                (id as f64) >= lo && (id as f64) < hi
            })
            .count();
        let share = inside as f64 / n as f64;
        // 75% from the special window plus the Gaussian's share of the centre (about 1.2%): sysbench's ~76%.
        assert!(
            (0.755..0.772).contains(&share),
            "share in the central 1%: {share}"
        );
    }

    #[test]
    fn special_reuses_the_branch_draw_as_sysbench_does() {
        let sp = Dist::from(RandType::Special);
        // rnd = 0.5 selects the special window; the value is a + t/2 - t*pct/200 + rnd*(t*pct/100 + 1).
        let v = special_from(&sp, 1, 10_001, 0.5, || {
            panic!("no further draws in the special branch")
        });
        assert_eq!(v, 1 + (0.5 * 101.0 + 5000.0 - 50.0) as u32);
        // rnd just above 0.25 lands at the bottom of the upper three quarters of the window, never below.
        let low = special_from(&sp, 1, 10_001, 0.2500001, || unreachable!());
        assert_eq!(low, 1 + (0.2500001 * 101.0 + 4950.0) as u32);
        // rnd below 0.25 takes the Gaussian: twelve more draws averaged over the range.
        let mut calls = 0;
        let g = special_from(&sp, 1, 10_001, 0.1, || {
            calls += 1;
            0.5
        });
        assert_eq!(calls, 12);
        assert_eq!(g, 1 + 5000);
    }

    #[test]
    fn uniform_covers_both_ends_and_doubles_stay_below_one() {
        assert_eq!(uniform_from(1, 10, 0.0), 1);
        assert_eq!(uniform_from(1, 10, 0.999_999), 10);
        let mut rng = SbRng::new(7, 3);
        for _ in 0..10_000 {
            let d = rng.uniform_double();
            assert!((0.0..1.0).contains(&d));
        }
        let ids: std::collections::BTreeSet<u32> = (0..10_000).map(|_| rng.uniform(1, 5)).collect();
        assert_eq!(ids.into_iter().collect::<Vec<_>>(), vec![1, 2, 3, 4, 5]);
    }

    fn draws(kind: RandType, p: RandParams, n: usize, a: u32, b: u32) -> Vec<u32> {
        let d = Dist::new(kind, &p);
        let mut rng = SbRng::new(11, 0);
        (0..n)
            .map(|_| {
                let v = rng.default(&d, a, b);
                assert!((a..=b).contains(&v), "{kind:?} drew {v} outside [{a}, {b}]");
                v
            })
            .collect()
    }

    #[test]
    fn gaussian_centres_its_draws_and_more_iterations_narrow_the_bell() {
        let spread = |iter: u32| {
            let p = RandParams {
                spec_iter: iter,
                ..RandParams::default()
            };
            let xs = draws(RandType::Gaussian, p, 100_000, 1, 10_000);
            let mean = xs.iter().map(|&x| f64::from(x)).sum::<f64>() / xs.len() as f64;
            assert!((mean - 5000.5).abs() < 50.0, "mean {mean}");
            // Share within the middle fifth of the range.
            xs.iter().filter(|&&x| (4000..6000).contains(&x)).count() as f64 / xs.len() as f64
        };
        // One draw is uniform (20% in the middle fifth); 12 draws put about 77% there (sd = range/12, ±1.2 sd).
        let one = spread(1);
        let twelve = spread(12);
        assert!((0.19..0.21).contains(&one), "{one}");
        assert!((0.74..0.79).contains(&twelve), "{twelve}");
    }

    #[test]
    fn pareto_puts_one_minus_h_of_the_draws_in_the_lowest_h_of_the_range() {
        for (h, expect) in [(0.2, 0.8), (0.1, 0.9)] {
            let p = RandParams {
                pareto_h: h,
                ..RandParams::default()
            };
            let xs = draws(RandType::Pareto, p, 100_000, 1, 100_000);
            let low = xs
                .iter()
                .filter(|&&x| f64::from(x) <= 100_000.0 * h)
                .count() as f64
                / xs.len() as f64;
            assert!((low - expect).abs() < 0.01, "h={h}: {low}");
        }
    }

    #[test]
    fn zipfian_draws_id_n_in_proportion_to_n_to_the_minus_exponent() {
        for e in [0.8, 1.0, 1.5] {
            let p = RandParams {
                zipfian_exp: e,
                ..RandParams::default()
            };
            let xs = draws(RandType::Zipfian, p, 300_000, 1, 1000);
            let count = |v: u32| xs.iter().filter(|&&x| x == v).count() as f64;
            let (c1, c2, c4) = (count(1), count(2), count(4));
            // P(1)/P(2) = 2^e and P(1)/P(4) = 4^e.
            assert!(
                (c1 / c2 / 2f64.powf(e) - 1.0).abs() < 0.05,
                "e={e}: {c1}/{c2}"
            );
            assert!(
                (c1 / c4 / 4f64.powf(e) - 1.0).abs() < 0.08,
                "e={e}: {c1}/{c4}"
            );
        }
        // Exponent 0 is flat: every id about equally often.
        let p = RandParams {
            zipfian_exp: 0.0,
            ..RandParams::default()
        };
        let xs = draws(RandType::Zipfian, p, 100_000, 1, 10);
        for v in 1..=10 {
            let share = xs.iter().filter(|&&x| x == v).count() as f64 / xs.len() as f64;
            assert!((share - 0.1).abs() < 0.01, "{v}: {share}");
        }
        // An offset range keeps the shape: a is the hottest id.
        let xs = draws(RandType::Zipfian, RandParams::default(), 10_000, 500, 600);
        let hot = xs.iter().filter(|&&x| x == 500).count();
        assert!(hot > xs.iter().filter(|&&x| x == 501).count());
    }

    #[test]
    fn special_parameters_move_the_hot_window() {
        // --rand-spec-res=0: every draw takes the Gaussian branch; --rand-spec-pct=10 widens the window.
        let p = RandParams {
            spec_res: 0.0,
            ..RandParams::default()
        };
        let d = Dist::new(RandType::Special, &p);
        let mut calls = 0;
        let _ = special_from(&d, 1, 1001, 0.99, || {
            calls += 1;
            0.5
        });
        assert_eq!(calls, 12);
        let p = RandParams {
            spec_pct: 10.0,
            ..RandParams::default()
        };
        let d = Dist::new(RandType::Special, &p);
        // rnd = 0.9: window of 10% (1000 + 1 values) starting at t/2 - t*5%.
        assert_eq!(
            special_from(&d, 1, 10_001, 0.9, || unreachable!()),
            1 + (0.9 * 1001.0 + 4500.0) as u32
        );
    }

    #[test]
    fn out_of_range_parameters_are_refused_with_the_flag_named() {
        for (p, flag) in [
            (
                RandParams {
                    spec_iter: 0,
                    ..RandParams::default()
                },
                "--rand-spec-iter",
            ),
            (
                RandParams {
                    spec_res: 100.0,
                    ..RandParams::default()
                },
                "--rand-spec-res",
            ),
            (
                RandParams {
                    pareto_h: 1.0,
                    ..RandParams::default()
                },
                "--rand-pareto-h",
            ),
            (
                RandParams {
                    zipfian_exp: -1.0,
                    ..RandParams::default()
                },
                "--rand-zipfian-exp",
            ),
        ] {
            let e = p.validate().unwrap_err();
            assert!(e.to_string().contains(flag), "{e}");
            assert_eq!(crate::error::exit_code_of(&e), 2);
        }
        RandParams::default().validate().unwrap();
    }

    #[test]
    fn the_same_seed_and_thread_repeat_the_same_sequence() {
        let mut a = SbRng::new(9, 1);
        let mut b = SbRng::new(9, 1);
        let mut c = SbRng::new(9, 2);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        assert_eq!(xs, (0..8).map(|_| b.next_u64()).collect::<Vec<_>>());
        assert_ne!(xs, (0..8).map(|_| c.next_u64()).collect::<Vec<_>>());
    }

    #[test]
    fn templates_become_digits_with_the_dashes_kept() {
        let mut rng = SbRng::new(1, 0);
        let mut s = String::new();
        rng.fill_template("###-##", &mut s);
        assert_eq!(s.len(), 6);
        assert_eq!(&s[3..4], "-");
        assert!(s.chars().filter(|c| *c != '-').all(|c| c.is_ascii_digit()));
    }
}
