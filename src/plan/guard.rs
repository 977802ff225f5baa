//! The load guard of long copies, after pt-online-schema-change's `--max-load` / `--critical-load`: pause while a
//! status variable exceeds the max, abort above the critical value. The decision is a pure function of a status
//! snapshot, returning the reason.

use std::collections::BTreeMap;

use crate::error::bad_input;

/// `Threads_running=25`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Threshold {
    pub variable: String,
    pub value: u64,
}

impl Threshold {
    pub fn parse(s: &str) -> anyhow::Result<Threshold> {
        let (k, v) = s.split_once('=').ok_or_else(|| {
            bad_input(format!(
                "load threshold '{s}' is not VARIABLE=NUMBER: write it like Threads_running=25"
            ))
        })?;
        let value = v.trim().parse().map_err(|_| {
            bad_input(format!(
                "load threshold '{s}' has no number after '=': write it like Threads_running=25"
            ))
        })?;
        if k.trim().is_empty()
            || !k
                .trim()
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(bad_input(format!("load threshold '{s}' does not name a status variable: write it like Threads_running=25")));
        }
        Ok(Threshold {
            variable: k.trim().to_string(),
            value,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadDecision {
    Go,
    Pause(String),
    Abort(String),
}

/// What to do given one `SHOW GLOBAL STATUS` snapshot.
pub fn decide(
    status: &BTreeMap<String, String>,
    max: &Threshold,
    critical: &Threshold,
) -> LoadDecision {
    let get = |t: &Threshold| status.get(&t.variable).and_then(|v| v.parse::<u64>().ok());
    if let Some(v) = get(critical).filter(|v| *v > critical.value) {
        return LoadDecision::Abort(format!(
            "{}={v} is above --critical-load {}={}: the server is overloaded, so innops stopped the copy; retry when it is calmer or raise --critical-load",
            critical.variable, critical.variable, critical.value
        ));
    }
    if let Some(v) = get(max).filter(|v| *v > max.value) {
        return LoadDecision::Pause(format!(
            "{}={v} is above --max-load {}",
            max.variable, max.value
        ));
    }
    LoadDecision::Go
}

/// The status variables each session of innops's own workload beside the plan (`--bench-during`) adds one to
/// at most: its threads run statements all the time, and the guard must judge the server's load, not the
/// measurement's, or a modest `--max-load` would pause the copy for innops's own threads.
pub const PER_SESSION: [&str; 2] = ["Threads_running", "Threads_connected"];

/// Take `own` sessions off the [`PER_SESSION`] variables of a snapshot (never below zero). An upper bound of
/// what they add: a thread between two statements adds nothing, so the guard may let a little more through.
pub fn discount(status: &mut BTreeMap<String, String>, own: u64) {
    if own == 0 {
        return;
    }
    for k in PER_SESSION {
        if let Some(v) = status.get_mut(k) {
            if let Ok(n) = v.parse::<u64>() {
                *v = n.saturating_sub(own).to_string();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(v: u64) -> BTreeMap<String, String> {
        [("Threads_running".to_string(), v.to_string())]
            .into_iter()
            .collect()
    }

    #[test]
    fn pause_above_max_abort_above_critical() {
        let max = Threshold::parse("Threads_running=25").unwrap();
        let crit = Threshold::parse("Threads_running=50").unwrap();
        assert_eq!(decide(&snap(3), &max, &crit), LoadDecision::Go);
        assert_eq!(decide(&snap(25), &max, &crit), LoadDecision::Go);
        assert!(
            matches!(decide(&snap(26), &max, &crit), LoadDecision::Pause(r) if r.contains("Threads_running=26"))
        );
        assert!(
            matches!(decide(&snap(51), &max, &crit), LoadDecision::Abort(r) if r.contains("--critical-load"))
        );
        // At the critical value itself the copy pauses (above --max-load), it is not stopped: pt-osc's rule,
        // abort only above.
        assert!(matches!(
            decide(&snap(50), &max, &crit),
            LoadDecision::Pause(_)
        ));
        // A variable the server does not report never blocks.
        assert_eq!(decide(&BTreeMap::new(), &max, &crit), LoadDecision::Go);
    }

    #[test]
    fn innops_s_own_workload_sessions_are_not_the_server_s_load() {
        let max = Threshold::parse("Threads_running=2").unwrap();
        let crit = Threshold::parse("Threads_running=50").unwrap();
        let mut s = snap(5);
        s.insert("Innodb_row_lock_waits".into(), "9".into());
        assert!(matches!(decide(&s, &max, &crit), LoadDecision::Pause(_)));
        discount(&mut s, 4);
        assert_eq!(s["Threads_running"], "1");
        assert_eq!(
            s["Innodb_row_lock_waits"], "9",
            "only per-session variables"
        );
        assert_eq!(decide(&s, &max, &crit), LoadDecision::Go);
        discount(&mut s, 10);
        assert_eq!(s["Threads_running"], "0", "never below zero");
    }

    #[test]
    fn thresholds_parse_or_say_how_to_write_them() {
        assert_eq!(Threshold::parse("Threads_running=25").unwrap().value, 25);
        assert_eq!(
            crate::error::exit_code_of(&Threshold::parse("Threads_running").unwrap_err()),
            2
        );
        assert!(Threshold::parse("x=y").is_err());
        assert!(Threshold::parse("a;b=1").is_err());
    }
}
