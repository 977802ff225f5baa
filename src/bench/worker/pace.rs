//! The one thing the threads of a run share while they run: how many events are left under `--events`, when the
//! next may start under `--rate`, and `sysbench.rand.unique()`'s counter. It is apart from the worker because it
//! is not one thread's state but every thread's, behind an atomic or a lock that no query takes.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::bench::distribution::SbRng;
use crate::bench::run::RunSpec;

/// What all threads share to keep `--events` and `--rate`: the events handed out so far, and the schedule of
/// arrivals (exponentially spaced, as sysbench's event generator spaces them).
pub(crate) struct Pace {
    events: u64,
    started: std::sync::atomic::AtomicU64,
    rate: u32,
    next: Mutex<(Instant, SbRng)>,
    /// `sysbench.rand.unique()`'s counter, shared so that no two threads draw the same id.
    unique: AtomicU32,
    unique_offset: u32,
}

/// Jeff Preshing's quadratic-residue permutation of the 32-bit integers below the prime 4294967291, which
/// `sysbench.rand.unique()` applies twice to a counter: every counter value gives a different id.
fn permute_qpr(x: u32) -> u32 {
    const P: u32 = 4_294_967_291;
    if x >= P {
        return x;
    }
    let residue = ((u64::from(x) * u64::from(x)) % u64::from(P)) as u32;
    if x <= P / 2 {
        residue
    } else {
        P - residue
    }
}

impl Pace {
    pub(crate) fn new(spec: &RunSpec, start: Instant) -> Pace {
        Pace {
            events: spec.events,
            started: std::sync::atomic::AtomicU64::new(0),
            rate: spec.rate,
            next: Mutex::new((start, SbRng::new(spec.seed, u64::MAX))),
            unique: AtomicU32::new(SbRng::new(spec.seed, u64::MAX - 1).next_u64() as u32),
            unique_offset: SbRng::new(spec.seed, u64::MAX - 2).next_u64() as u32,
        }
    }

    /// `sysbench.rand.unique()`: a 32-bit value no other call of this run returns.
    pub(crate) fn unique(&self) -> u32 {
        let i = self.unique.fetch_add(1, Ordering::Relaxed);
        permute_qpr(permute_qpr(i).wrapping_add(self.unique_offset) ^ 0x5bf0_3635)
    }

    /// Claim the next event: `None` when `--events` are used up, else the time it may start.
    pub(super) fn claim(&self) -> Option<Option<Instant>> {
        if self.events > 0 && self.started.fetch_add(1, Ordering::Relaxed) >= self.events {
            return None;
        }
        if self.rate == 0 {
            return Some(None);
        }
        let mut g = self.next.lock().expect("bench pace lock");
        // Exponential gap with mean 1/rate: -ln(1 - u) / rate.
        let gap = -(1.0 - g.1.uniform_double()).ln() / f64::from(self.rate);
        g.0 += Duration::from_secs_f64(gap.min(3600.0));
        Some(Some(g.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::workloads::Workload;

    #[test]
    fn pace_hands_out_events_up_to_the_limit_and_spaces_arrivals_at_the_rate() {
        let start = Instant::now();
        let spec = RunSpec {
            events: 3,
            ..RunSpec::new(Workload::PointSelect, "sbtest", "/* t */", 5)
        };
        let pace = Pace::new(&spec, start);
        assert_eq!(
            (0..5).map(|_| pace.claim().is_some()).collect::<Vec<_>>(),
            vec![true, true, true, false, false]
        );
        assert_eq!(pace.claim(), None);
        // 1000 arrivals at 100/s end about 10 s after the start (sd of the sum: 0.32 s).
        let spec = RunSpec {
            rate: 100,
            ..RunSpec::new(Workload::PointSelect, "sbtest", "/* t */", 5)
        };
        let pace = Pace::new(&spec, start);
        let mut last = start;
        for _ in 0..1000 {
            let at = pace.claim().unwrap().unwrap();
            assert!(at >= last, "arrivals are in order");
            last = at;
        }
        let span = (last - start).as_secs_f64();
        assert!((8.5..11.5).contains(&span), "{span}");
    }

    #[test]
    fn unique_ids_never_repeat_across_threads() {
        let spec = RunSpec::new(Workload::Insert, "sbtest", "/* t */", 9);
        let pace = Pace::new(&spec, Instant::now());
        let ids: Vec<u32> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..50_000).map(|_| pace.unique()).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let distinct: std::collections::HashSet<u32> = ids.iter().copied().collect();
        assert_eq!(distinct.len(), 200_000);
        // Spread over the whole 32-bit range, not a counter: both halves (negative and positive SQL ids) occur.
        assert!(ids.iter().any(|&i| i < 1 << 31) && ids.iter().any(|&i| i >= 1 << 31));
    }
}
