//! Marks on a running workload: another thread asks, the run's reporting loop answers at its next interval
//! boundary with everything measured so far ([`Mark`]), and [`slice`] turns two marks into the figures of the
//! time between them, as a run of its own would report them. The workload beside a plan gives the plan its
//! "before" and "after" figures this way ([`super::during`]).

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::run::{assemble, RunSpec};
use super::worker::Counts;
use super::{BenchResult, Interval, COUNTERS};

/// A view into a running workload from another thread: when measurement started, and [`Mark`]s taken at
/// interval boundaries on request, from which [`slice`] makes the figures of the time between two marks. The
/// workload beside a plan gives the plan its "before" and "after" figures this way, without a second workload.
#[derive(Default)]
pub struct Tap {
    state: Mutex<TapState>,
    cv: Condvar,
}

#[derive(Default)]
struct TapState {
    started: Option<Instant>,
    wanted: bool,
    mark: Option<Mark>,
    ended: bool,
}

/// Everything measured up to one interval boundary: the latency histogram, each thread's counts and the
/// server's counters then.
#[derive(Clone)]
pub struct Mark {
    pub at: Instant,
    pub(crate) hist: Histogram<u64>,
    pub(crate) per_thread: Vec<Counts>,
    pub(crate) counters: BTreeMap<String, u64>,
    /// The rows the table workload draws its keys from (None for sbtest workloads).
    pub(crate) table_rows: Option<u32>,
}

impl Mark {
    /// The mark with the server's counters, read by whoever asked for it just after it was taken.
    pub fn with_counters(self, counters: BTreeMap<String, u64>) -> Mark {
        Mark { counters, ..self }
    }
}

impl Tap {
    fn lock(&self) -> std::sync::MutexGuard<'_, TapState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When the measurement started, once it has.
    pub fn started(&self) -> Option<Instant> {
        self.lock().started
    }

    /// True once the run has ended (or failed to start).
    pub fn ended(&self) -> bool {
        self.lock().ended
    }

    /// Wait (at most `timeout`) until the measurement started or the run ended; true when it started.
    pub fn wait_started(&self, timeout: Duration) -> bool {
        let g = self.lock();
        let (g, _) = self
            .cv
            .wait_timeout_while(g, timeout, |g| g.started.is_none() && !g.ended)
            .unwrap_or_else(|p| p.into_inner());
        g.started.is_some()
    }

    /// A mark at the next interval boundary; None when the run ends first or `timeout` passes.
    /// A run that is not going (it is being started again) may still deliver one before `timeout`.
    pub fn mark(&self, timeout: Duration) -> Option<Mark> {
        let mut g = self.lock();
        g.mark = None;
        g.wanted = true;
        let (mut g, _) = self
            .cv
            .wait_timeout_while(g, timeout, |g| g.mark.is_none())
            .unwrap_or_else(|p| p.into_inner());
        g.wanted = false;
        g.mark.take()
    }

    /// A new run on the same tap: not started, not ended.
    pub(crate) fn reset(&self) {
        let mut g = self.lock();
        g.started = None;
        g.ended = false;
    }

    pub(crate) fn set_started(&self, at: Instant) {
        self.lock().started = Some(at);
        self.cv.notify_all();
    }

    pub(crate) fn wanted(&self) -> bool {
        self.lock().wanted
    }

    pub(crate) fn deliver(&self, m: Mark) {
        let mut g = self.lock();
        g.mark = Some(m);
        g.wanted = false;
        self.cv.notify_all();
    }

    pub(crate) fn end(&self) {
        self.lock().ended = true;
        self.cv.notify_all();
    }
}

/// The figures of the time between marks `a` and `b` of one run, as if a run of its own had measured just
/// that; `intervals` become the result's interval lines.
pub fn slice(spec: &RunSpec, a: &Mark, b: &Mark, intervals: Vec<Interval>) -> BenchResult {
    let mut hist = b.hist.clone();
    // `a` was taken earlier in the same run: its histogram is part of `b`'s.
    let _ = hist.subtract(&a.hist);
    let per_thread: Vec<Counts> = b
        .per_thread
        .iter()
        .zip(a.per_thread.iter())
        .map(|(later, earlier)| later.since(earlier))
        .collect();
    let counters = COUNTERS
        .iter()
        .filter_map(|k| {
            Some((
                k.to_string(),
                b.counters.get(*k)?.saturating_sub(*a.counters.get(*k)?),
            ))
        })
        .collect();
    let elapsed = b.at.saturating_duration_since(a.at).as_secs_f64();
    assemble(
        spec,
        &hist,
        &per_thread,
        counters,
        elapsed,
        intervals,
        b.table_rows,
    )
}
