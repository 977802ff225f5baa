//! Redo sizing advice (`innops redo --advise`), after the well-known Percona method: measure the redo bytes
//! written over an interval and size the log to hold about an hour of them. Never shrinks a log on the strength
//! of one sample.

use std::time::Duration;

use serde::Serialize;

use crate::server::facts::ServerFacts;
use crate::units::format_size;

/// The redo size that holds about an hour of writes at `bytes_per_sec`, rounded up to 64 MiB, and never below
/// the server's default (96 MiB) so an idle sample does not shrink the log.
pub fn recommend_size(bytes_per_sec: f64) -> u64 {
    const STEP: u64 = 64 << 20;
    let hour = (bytes_per_sec.max(0.0) * 3600.0).ceil() as u64;
    (hour.div_ceil(STEP) * STEP).max(96 << 20)
}

/// Minutes of writes a log of `size` holds at `bytes_per_sec` (None when nothing is written).
pub fn minutes_held(size: u64, bytes_per_sec: f64) -> Option<f64> {
    (bytes_per_sec > 0.0).then(|| size as f64 / bytes_per_sec / 60.0)
}

/// The counter that grows with every redo byte written: the LSN where the server reports it.
pub fn redo_counter(facts: &ServerFacts) -> Option<(&'static str, u64)> {
    for name in [
        "Innodb_lsn_current",
        "Innodb_redo_log_current_lsn",
        "Innodb_os_log_written",
    ] {
        if let Some(v) = facts.status_u64(name) {
            return Some((name, v));
        }
    }
    None
}

/// `innops redo --size SIZE [--offline] FLAGS --execute`, the size written so that it parses back exactly.
pub fn redo_command(size: u64, offline: bool, flags: &str) -> String {
    let mut parts = vec![
        "innops redo --size".to_string(),
        crate::units::size_arg(size),
    ];
    if offline {
        parts.push("--offline".into());
    }
    if !flags.is_empty() {
        parts.push(flags.to_string());
    }
    parts.push("--execute".into());
    parts.join(" ")
}

/// The recommended size for `bytes_per_sec` and the command that applies it, unless the log is already at
/// least that large: advice never shrinks a log on the strength of one sample.
pub fn advice_command(
    bytes_per_sec: f64,
    current: Option<u64>,
    flags: &str,
) -> (u64, Option<String>) {
    let rec = recommend_size(bytes_per_sec);
    let cmd = match current {
        Some(c) if c >= rec => None,
        _ => Some(redo_command(rec, false, flags)),
    };
    (rec, cmd)
}

/// What `--advise` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    pub counter: String,
    pub interval_s: f64,
    pub bytes_written: u64,
    pub bytes_per_sec: f64,
    pub bytes_per_hour: f64,
    pub current_size: Option<u64>,
    pub minutes_held_now: Option<f64>,
    pub checkpoint_age: Option<u64>,
    pub checkpoint_max_age: Option<u64>,
    pub recommended_size: u64,
    pub recommended: String,
    /// The command that applies the recommendation; None when the current size is enough.
    pub command: Option<String>,
}

/// Measure the redo write rate over `interval` and recommend a size.
pub fn advise(
    target: &crate::server::Target,
    interval: Duration,
    flags: &str,
) -> anyhow::Result<Advice> {
    let mut conn = target.connect()?;
    let first = ServerFacts::collect(&mut conn)?;
    let (counter, v0) = redo_counter(&first)
        .ok_or_else(|| crate::error::refused("the server reports no redo counter (Innodb_lsn_current or Innodb_os_log_written): it cannot be measured"))?;
    let t0 = std::time::Instant::now();
    crate::progress::timed("sampling redo writes", interval.as_secs(), true, || {
        std::thread::sleep(interval)
    });
    let second = ServerFacts::collect(&mut conn)?;
    let elapsed = t0.elapsed().as_secs_f64();
    let v1 = second.status_u64(counter).unwrap_or(v0);
    let written = v1.saturating_sub(v0);
    let rate = written as f64 / elapsed;
    let current = second.redo_size_bytes();
    let (rec, command) = advice_command(rate, current, flags);
    Ok(Advice {
        counter: counter.to_string(),
        interval_s: elapsed,
        bytes_written: written,
        bytes_per_sec: rate,
        bytes_per_hour: rate * 3600.0,
        current_size: current,
        minutes_held_now: current.and_then(|c| minutes_held(c, rate)),
        checkpoint_age: second.status_u64("Innodb_checkpoint_age"),
        checkpoint_max_age: second.status_u64("Innodb_checkpoint_max_age"),
        recommended_size: rec,
        recommended: format_size(rec),
        command,
    })
}

pub fn render_advice(a: &Advice) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "redo written: {} in {:.1} s ({} from {}) = {}/s, {}/hour\n",
        format_size(a.bytes_written),
        a.interval_s,
        a.bytes_written,
        a.counter,
        format_size(a.bytes_per_sec as u64),
        format_size(a.bytes_per_hour as u64)
    ));
    if let Some(c) = a.current_size {
        let held = a
            .minutes_held_now
            .map(|m| format!("{m:.0} minutes of writes"))
            .unwrap_or_else(|| "no writes measured".into());
        s.push_str(&format!("current redo size: {} ({held})\n", format_size(c)));
    }
    if let (Some(age), Some(max)) = (a.checkpoint_age, a.checkpoint_max_age) {
        s.push_str(&format!(
            "checkpoint age: {} of at most {}\n",
            format_size(age),
            format_size(max)
        ));
    }
    match (&a.command, a.current_size) {
        (Some(cmd), _) => s.push_str(&format!(
            "recommended: {} (about an hour of writes)\n  {cmd}\n",
            a.recommended
        )),
        (None, Some(c)) => s.push_str(&format!(
            "the current size is enough: {} holds at least an hour of the measured writes (which need {}); nothing to change\n",
            format_size(c),
            a.recommended
        )),
        (None, None) => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recommendation_holds_an_hour_and_never_shrinks_below_the_default() {
        assert_eq!(recommend_size(0.0), 96 << 20);
        // 100 KiB/s → 351.6 MiB/hour → rounded up to 384 MiB.
        assert_eq!(recommend_size(100.0 * 1024.0), 384 << 20);
        assert_eq!(minutes_held(96 << 20, 0.0), None);
        let m = minutes_held(60 << 20, (1 << 20) as f64).unwrap();
        assert!((m - 1.0).abs() < 1e-9);
    }
    #[test]
    fn advice_never_shrinks_and_its_command_parses_back() {
        let mib = 1u64 << 20;
        // 3.9G an hour (the sample that printed `--size 3.9G`): exact MiB in the command.
        let rate = (4000 * mib) as f64 / 3600.0;
        let (rec, cmd) = advice_command(rate, Some(96 * mib), "--socket /s");
        assert_eq!(rec, 4032 * mib);
        assert_eq!(
            cmd.as_deref(),
            Some("innops redo --size 4032M --socket /s --execute")
        );
        // A quiet sample never suggests shrinking the log.
        let (_, cmd) = advice_command(1.0, Some(2 << 30), "");
        assert_eq!(cmd, None);
        let (_, cmd) = advice_command(rate, Some(4032 * mib), "");
        assert_eq!(cmd, None);
        // Unknown current size: the recommendation stands.
        assert!(advice_command(1.0, None, "").1.is_some());
    }
}
