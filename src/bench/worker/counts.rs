//! What a thread counts, kept apart from the loop that counts it: the same totals are read by the reporter
//! (added up per interval and per thread), by the tap's marks and by the run beside a plan (counted by error
//! code), so their arithmetic and sysbench's rule for classing a statement live in one place.

use hdrhistogram::Histogram;

use crate::bench::wire::Outcome;

/// Statement counts of one thread, by sysbench's classes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Counts {
    pub(crate) txns: u64,
    pub(crate) reads: u64,
    pub(crate) writes: u64,
    pub(crate) other: u64,
    pub(crate) errors: u64,
    pub(crate) reconnects: u64,
    pub(crate) busy_ns: u128,
    /// Errors by server or client error code (only beside a plan: the bench counts them in `errors` alone).
    pub(crate) codes: std::collections::BTreeMap<u16, u64>,
}

impl Counts {
    pub(crate) fn add(&mut self, o: &Counts) {
        self.txns += o.txns;
        self.reads += o.reads;
        self.writes += o.writes;
        self.other += o.other;
        self.errors += o.errors;
        self.reconnects += o.reconnects;
        self.busy_ns += o.busy_ns;
        for (k, v) in &o.codes {
            *self.codes.entry(*k).or_default() += v;
        }
    }

    /// What was counted after `earlier`, a snapshot of the same running totals.
    pub(crate) fn since(&self, earlier: &Counts) -> Counts {
        let mut codes = self.codes.clone();
        for (k, v) in &earlier.codes {
            if let Some(n) = codes.get_mut(k) {
                *n = n.saturating_sub(*v);
            }
        }
        codes.retain(|_, n| *n > 0);
        Counts {
            txns: self.txns.saturating_sub(earlier.txns),
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            other: self.other.saturating_sub(earlier.other),
            errors: self.errors.saturating_sub(earlier.errors),
            reconnects: self.reconnects.saturating_sub(earlier.reconnects),
            busy_ns: self.busy_ns.saturating_sub(earlier.busy_ns),
            codes,
        }
    }

    /// One error with its code.
    pub(super) fn error(&mut self, code: u16) {
        self.errors += 1;
        *self.codes.entry(code).or_default() += 1;
    }
    pub(crate) fn queries(&self) -> u64 {
        self.reads + self.writes + self.other
    }
}

/// What a thread measured since the reporter last looked.
pub(crate) struct Window {
    pub(crate) hist: Histogram<u64>,
    pub(crate) counts: Counts,
    /// Beside a plan only: when each error and each completed transaction happened.
    pub(crate) moments: Moments,
}

/// Beside a plan: the instants of what [`Counts`] adds up, so an interval's errors and transactions can be
/// placed within it (a step may end in the middle of an interval). A few hundred a second at most: the
/// workload's transactions, and errors spaced by the worker's retry pauses.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Moments {
    pub(crate) errors: Vec<(std::time::Instant, u16)>,
    pub(crate) done: Vec<std::time::Instant>,
}

impl Moments {
    pub(crate) fn append(&mut self, o: &mut Moments) {
        self.errors.append(&mut o.errors);
        self.done.append(&mut o.done);
    }
}

/// Count a statement the way sysbench does: a result set is a read, changed rows a write, the rest other.
pub(super) fn count(o: Outcome, c: &mut Counts) {
    match o {
        Outcome::Rows(_) => c.reads += 1,
        Outcome::Affected(n) if n > 0 => c.writes += 1,
        Outcome::Affected(_) => c.other += 1,
    }
}
