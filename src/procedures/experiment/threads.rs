//! Client threads as a dimension of the experiment: `--threads 4,16,64` (or a study's `threads = [4, 16, 64]`)
//! makes one group of arms per count — A, A′ and every variant at that count — run one group after the other,
//! the arms interleaved within each, and each variant judged only against A at its own count with that
//! count's A/A pair as the noise floor. Client threads are part of the workload, not a variant: a variant at
//! 64 threads against a baseline at 4 would measure the load, not the setting.

use super::ExperimentParams;
use crate::error::bad_input;

impl ExperimentParams {
    /// One experiment per client-thread count, in the order given (itself when there is one count).
    pub fn groups(&self) -> Vec<ExperimentParams> {
        if self.thread_counts.len() < 2 {
            return vec![self.clone()];
        }
        self.thread_counts
            .iter()
            .map(|&t| ExperimentParams {
                threads: t,
                thread_counts: Vec::new(),
                group: Some(t),
                ..self.clone()
            })
            .collect()
    }

    /// What the group's step ids and figure files start with: `t16-`, or nothing without groups.
    pub fn prefix(&self) -> String {
        self.group.map_or(String::new(), |t| format!("t{t}-"))
    }
}

/// Several client-thread counts: each at least 1, each once; not with `--keep best` (each count has its own
/// winner) nor with restart variables (their restarts are scheduled within one group of arms).
pub fn check_counts(p: &ExperimentParams) -> anyhow::Result<()> {
    let counts = &p.thread_counts;
    if counts.len() < 2 {
        return Ok(());
    }
    let list = counts
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if let Some((i, t)) = counts
        .iter()
        .enumerate()
        .find(|(i, t)| counts[..*i].contains(t))
    {
        let _ = i;
        return Err(bad_input(format!(
            "--threads {list} gives {t} twice: give each client-thread count once"
        )));
    }
    if counts.contains(&0) {
        return Err(bad_input(format!(
            "--threads {list} has a count of 0: give counts of at least 1"
        )));
    }
    if p.keep_best {
        return Err(bad_input(format!(
            "--keep best keeps one winner, and --threads {list} judges each client-thread count on its own: give one --threads to keep a winner, or leave --keep out"
        )));
    }
    if !p.restart_vars.is_empty() {
        return Err(bad_input(format!(
            "{} take(s) a restart, and restarts are not scheduled across several client-thread counts yet: give one --threads, or run one experiment per count",
            p.restart_vars.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(counts: &[u32]) -> ExperimentParams {
        serde_json::from_value(serde_json::json!({
            "sets": [{"name": "innodb_io_capacity", "values": ["300", "400"]}],
            "baseline": [{"name": "innodb_io_capacity", "value": "200"}],
            "workload": "oltp_read_write", "threads": counts[0], "time_s": 10, "rounds": 3,
            "warmup_s": 2, "keep_best": false, "thread_counts": if counts.len() > 1 { counts.to_vec() } else { vec![] },
        }))
        .unwrap()
    }

    #[test]
    fn each_thread_count_is_a_group_with_its_own_baseline_and_ids() {
        let p = params(&[4, 16]);
        let g = p.groups();
        assert_eq!(g.iter().map(|g| g.threads).collect::<Vec<_>>(), [4, 16]);
        assert_eq!(g[1].prefix(), "t16-");
        assert_eq!(g[1].arms()[0].key, "A");
        assert_eq!(g[1].guard().own, 16);
        assert_eq!(super::super::arm_run::run_id(&g[0], 2, "B"), "t4-round-2-B");
        assert_eq!(p.load_seconds(), 2 * 4 * 3 * 12);
        let one = params(&[8]);
        assert_eq!(one.groups(), vec![one.clone()]);
        assert_eq!(one.prefix(), "");
        assert_eq!(super::super::arm_run::run_id(&one, 2, "A2"), "round-2-A2");
    }

    #[test]
    fn thread_counts_that_cannot_be_judged_apart_are_refused() {
        let msg = |p: &ExperimentParams| crate::error::display_of(&check_counts(p).unwrap_err());
        assert!(check_counts(&params(&[4, 16])).is_ok());
        assert!(msg(&params(&[4, 4])).contains("gives 4 twice"));
        let mut p = params(&[4, 16]);
        p.keep_best = true;
        assert!(msg(&p).contains("--keep best keeps one winner"));
        let mut p = params(&[4, 16]);
        p.restart_vars = vec!["innodb_log_buffer_size".into()];
        assert!(msg(&p).contains("takes a restart") || msg(&p).contains("take(s) a restart"));
    }
}
