//! Latency statistics and sysbench-style text: HDR histograms in microseconds, percentiles from them, the
//! per-interval line of `--report-interval`, and the final report with sysbench's section names.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

use super::{BenchResult, Interval, Latency, COUNTERS};

/// Highest latency recorded exactly: one hour, in microseconds. Longer transactions are clamped to it.
const MAX_US: u64 = 3_600_000_000;

/// An empty latency histogram (microseconds, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("static histogram bounds are valid")
}

/// Record one latency given in nanoseconds.
pub fn record_ns(h: &mut Histogram<u64>, ns: u128) {
    let us = ((ns + 500) / 1000).clamp(1, u128::from(MAX_US)) as u64;
    h.saturating_record(us);
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// The latency at quantile `q` (0..1) in milliseconds; 0 for an empty histogram.
pub fn percentile_ms(h: &Histogram<u64>, q: f64) -> f64 {
    if h.is_empty() {
        0.0
    } else {
        ms(h.value_at_quantile(q))
    }
}

/// min/avg/p95/p99/max/sum in milliseconds. `sum_ns` is the exact sum of the recorded latencies (the
/// histogram's own sum is rounded to its buckets).
pub fn latency_of(h: &Histogram<u64>, sum_ns: u128) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    Latency {
        min: ms(h.min()),
        avg: sum_ns as f64 / 1e6 / h.len() as f64,
        p95: percentile_ms(h, 0.95),
        p99: percentile_ms(h, 0.99),
        max: ms(h.max()),
        sum: sum_ns as f64 / 1e6,
        pctl: percentile_ms(h, 0.95),
    }
}

/// Mean and population standard deviation, as sysbench's "Threads fairness" prints them.
pub fn mean_stddev(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// The non-empty buckets of a latency histogram as (upper bound in ms, count), on a log scale of about 2% per
/// bucket (sysbench's histogram has 1024 buckets over eight decades).
pub fn histogram_rows(h: &Histogram<u64>) -> Vec<(f64, u64)> {
    if h.is_empty() {
        return Vec::new();
    }
    h.iter_log(1, 1.02)
        .filter(|v| v.count_since_last_iteration() > 0)
        .map(|v| (ms(v.value_iterated_to()), v.count_since_last_iteration()))
        .collect()
}

/// sysbench's `--histogram` block: one row per non-empty bucket, stars scaled to the fullest.
pub fn render_histogram(rows: &[(f64, u64)]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Latency histogram (values are in milliseconds)");
    let _ = writeln!(
        s,
        "       value  ------------- distribution ------------- count"
    );
    let most = rows.iter().map(|r| r.1).max().unwrap_or(1).max(1);
    for &(v, n) in rows {
        let stars = ((n as f64 / most as f64) * 40.0).ceil() as usize;
        let _ = writeln!(s, "{v:>12.3} |{:<40} {n}", "*".repeat(stars.min(40)));
    }
    let _ = writeln!(s, " ");
    s
}

/// One `--report-interval` line, in sysbench's words; `pct` is the `--percentile` shown.
pub fn render_interval(i: &Interval, pct: u8) -> String {
    let pct = if pct == 0 { 95 } else { pct };
    format!(
        "[ {}s ] thds: {} tps: {:.2} qps: {:.2} (r/w/o: {:.2}/{:.2}/{:.2}) lat (ms,{pct}%): {:.2} err/s: {:.2} reconn/s: {:.2}",
        i.t.round() as u64,
        i.threads,
        i.tps,
        i.qps,
        i.reads_ps,
        i.writes_ps,
        i.other_ps,
        i.p95_ms,
        i.err_ps,
        i.reconn_ps
    )
}

/// The options block sysbench prints before it starts.
pub fn render_header(r: &BenchResult, report_interval: u64, rate: u32) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "innops bench {} (sysbench 1.0 compatible)\n", r.workload);
    let _ = writeln!(s, "Running the test with following options:");
    let _ = writeln!(s, "Number of threads: {}", r.threads);
    if rate > 0 {
        let _ = writeln!(s, "Target transaction rate: {rate}/sec");
    }
    if report_interval > 0 {
        let _ = writeln!(
            s,
            "Report intermediate results every {report_interval} second(s)"
        );
    }
    if r.warmup_s > 0.0 {
        let _ = writeln!(s, "Warmup time: {}s", r.warmup_s);
    }
    let _ = writeln!(
        s,
        "Initializing random number generator from seed ({}).",
        r.seed
    );
    let _ = writeln!(s, "Random numbers distribution: {}\n", r.rand_type);
    s
}

/// The final report: sysbench's sections and layout, plus 99th percentile and innops's server counters.
pub fn render_result(r: &BenchResult) -> String {
    let mut s = String::new();
    if !r.histogram.is_empty() {
        s.push_str(&render_histogram(&r.histogram));
    }
    let t = r.time_s.max(f64::MIN_POSITIVE);
    let per_sec = |n: u64| n as f64 / t;
    let _ = writeln!(s, "SQL statistics:");
    let _ = writeln!(s, "    queries performed:");
    for (k, v) in [
        ("read:", r.reads),
        ("write:", r.writes),
        ("other:", r.other),
        ("total:", r.queries),
    ] {
        let _ = writeln!(s, "        {k:<33}{v}");
    }
    for (k, v) in [
        ("transactions:", r.transactions),
        ("queries:", r.queries),
        ("ignored errors:", r.errors),
        ("reconnects:", r.reconnects),
    ] {
        let _ = writeln!(s, "    {k:<37}{v:<6} ({:.2} per sec.)", per_sec(v));
    }
    let _ = writeln!(s, "\nGeneral statistics:");
    let _ = writeln!(s, "    {:<37}{:.4}s", "total time:", r.time_s);
    let _ = writeln!(s, "    {:<37}{}", "total number of events:", r.transactions);
    let l = &r.latency_ms;
    let _ = writeln!(s, "\nLatency (ms):");
    let mut rows = vec![
        ("min:".to_string(), l.min),
        ("avg:".to_string(), l.avg),
        ("max:".to_string(), l.max),
    ];
    if r.percentile > 0 {
        // Results saved before --percentile existed have no pctl: their p95 is the figure.
        let v = if l.pctl == 0.0 && r.percentile == 95 {
            l.p95
        } else {
            l.pctl
        };
        rows.push((format!("{}th percentile:", r.percentile), v));
    }
    if r.percentile != 99 {
        rows.push(("99th percentile:".to_string(), l.p99));
    }
    rows.push(("sum:".to_string(), l.sum));
    for (k, v) in rows {
        let _ = writeln!(s, "         {k:<16}{v:>28.2}");
    }
    let f = &r.fairness;
    let _ = writeln!(s, "\nThreads fairness:");
    let _ = writeln!(
        s,
        "    {:<31}{:.4}/{:.2}",
        "events (avg/stddev):", f.events_avg, f.events_stddev
    );
    let _ = writeln!(
        s,
        "    {:<31}{:.4}/{:.2}",
        "execution time (avg/stddev):", f.exec_time_avg, f.exec_time_stddev
    );
    if !r.per_transaction.is_empty() {
        let _ = writeln!(
            s,
            "\nServer counters per transaction (SHOW GLOBAL STATUS deltas):"
        );
        for k in COUNTERS {
            if let Some(v) = r.per_transaction.get(k) {
                let _ = writeln!(s, "    {:<37}{v:.2}", format!("{k}:"));
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_one_to_a_hundred_milliseconds() {
        let mut h = new_histogram();
        let mut sum = 0u128;
        for v in 1..=100u128 {
            record_ns(&mut h, v * 1_000_000);
            sum += v * 1_000_000;
        }
        let l = latency_of(&h, sum);
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.001 + 1e-9;
        assert!(close(l.min, 1.0), "{l:?}");
        assert!(close(l.p95, 95.0), "{l:?}");
        assert!(close(l.p99, 99.0), "{l:?}");
        assert!(close(l.max, 100.0), "{l:?}");
        assert!(close(l.avg, 50.5), "{l:?}");
        assert!(close(l.sum, 5050.0), "{l:?}");
    }

    #[test]
    fn a_skewed_sample_puts_p95_in_the_tail() {
        // 94 fast transactions and 6 slow ones: the 95th is slow, the 94th would not be.
        let mut h = new_histogram();
        for _ in 0..94 {
            record_ns(&mut h, 200_000);
        }
        for _ in 0..6 {
            record_ns(&mut h, 30_000_000);
        }
        assert!((percentile_ms(&h, 0.95) - 30.0).abs() < 0.05);
        assert!((percentile_ms(&h, 0.94) - 0.2).abs() < 0.001);
    }

    #[test]
    fn merged_histograms_give_the_percentiles_of_the_union() {
        let (mut a, mut b, mut all) = (new_histogram(), new_histogram(), new_histogram());
        for v in 1..=50u128 {
            record_ns(&mut a, v * 1_000_000);
            record_ns(&mut all, v * 1_000_000);
        }
        for v in 51..=100u128 {
            record_ns(&mut b, v * 1_000_000);
            record_ns(&mut all, v * 1_000_000);
        }
        a.add(&b).unwrap();
        assert_eq!(percentile_ms(&a, 0.95), percentile_ms(&all, 0.95));
        assert_eq!(percentile_ms(&a, 0.5), percentile_ms(&all, 0.5));
    }

    #[test]
    fn sub_microsecond_and_empty_cases() {
        let mut h = new_histogram();
        assert_eq!(latency_of(&h, 0), Latency::default());
        assert_eq!(percentile_ms(&h, 0.95), 0.0);
        record_ns(&mut h, 10);
        assert_eq!(
            h.min(),
            1,
            "a latency rounds up to one microsecond, never zero"
        );
    }

    #[test]
    fn fairness_is_mean_and_population_stddev() {
        let (m, sd) = mean_stddev(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!((m, sd), (5.0, 2.0));
        assert_eq!(mean_stddev(&[]), (0.0, 0.0));
    }

    #[test]
    fn the_interval_line_reads_like_sysbench_s() {
        let i = Interval {
            t: 1.0,
            threads: 4,
            tps: 756.26,
            qps: 15149.21,
            reads_ps: 10607.65,
            writes_ps: 3025.05,
            other_ps: 1516.52,
            p95_ms: 9.39,
            err_ps: 0.0,
            reconn_ps: 0.0,
            ..Default::default()
        };
        assert_eq!(
            render_interval(&i, 95),
            "[ 1s ] thds: 4 tps: 756.26 qps: 15149.21 (r/w/o: 10607.65/3025.05/1516.52) lat (ms,95%): 9.39 err/s: 0.00 reconn/s: 0.00"
        );
    }
}
