//! The dry run's notes of an experiment: the study, the cores, the arms, the load, the thread-count groups,
//! the SQL workload, the table copies, the restarts and what is kept.

use super::{tables, ExperimentParams, Layout};

/// The dry run's notes: the arms, the load, the restarts and what is kept.
pub fn notes(p: &ExperimentParams, layout: &Layout) -> Vec<String> {
    let arms = &layout.arms;
    let mut notes: Vec<String> = p
        .study
        .iter()
        .map(|st| {
            format!(
                "study: {} ({}; flags given on the command line override its fields)",
                st.title.as_deref().unwrap_or("untitled"),
                st.file
            )
        })
        .collect();
    notes.extend(p.cores.as_ref().map(|c| {
        format!(
            "{} (resolved when the plan was made; resume runs these numbers)",
            c.line()
        )
    }));
    notes.extend([
        format!(
            "arms: {}",
            arms.iter()
                .map(|a| format!("{} {}", a.label(), a.describe()))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        format!(
            "load: --execute creates the schema {} (1 table × 10000 rows, on first use; it stays for later runs) and runs {} with {} thread(s){} for {} round(s) × {} arm(s) × ({} s warm-up + {} s measured) = {} s, the variables set to each arm's values in turn; the restore step sets them back",
            crate::sql::quote_ident(crate::bench::PLAN_DB),
            p.workload,
            if p.thread_counts.len() > 1 {
                format!(
                    "{} (one group of every arm per count, the groups one after the other)",
                    p.thread_counts.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
                )
            } else {
                p.threads.to_string()
            },
            if p.rate > 0 { format!(" at {} transactions a second", p.rate) } else { String::new() },
            p.rounds,
            arms.len() * p.groups().len(),
            p.warmup_s,
            p.time_s,
            p.load_seconds()
        ),
    ]);
    if p.thread_counts.len() > 1 {
        notes.push(format!(
            "threads: each client-thread count ({}) is a group of its own: A, A′ and every variant at that count, interleaved in its rounds, each variant judged only against A at the same count with that count's A/A pair as the noise floor; the verdicts are reported per count",
            p.thread_counts.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(w) = &p.sql {
        let base = p.workload_kind().ok();
        let shown = match &base {
            Some(crate::bench::Workload::Sql { statements, .. }) => statements
                .iter()
                .enumerate()
                .map(|(i, s)| format!("{}. {}", i + 1, s.sql))
                .collect::<Vec<_>>()
                .join(" "),
            _ => String::new(),
        };
        notes.push(format!(
            "sql: {} statement(s) from {}, run by each thread as one transaction per event (BEGIN, the statements, COMMIT), each ? a row id drawn per statement; as the baseline runs them: {shown}",
            w.statements.len(),
            w.file
        ));
    }
    if !p.tables.is_empty() {
        notes.push(format!(
            "tables: each arm runs on a copy of {}.sbtest1 in innops's own schema, built once from the same rows before the first round: {} with the original definition (A, A′){}; each copy's definition is read back from the server's dictionary (a variant the server refuses or ignores is left out and reported as failed), its size measured, and every copy dropped at the end — your tables are never altered",
            crate::bench::PLAN_DB,
            tables::schema(0),
            p.tables
                .iter()
                .enumerate()
                .map(|(i, t)| format!(", {} with {t}", tables::schema(i + 1)))
                .collect::<String>()
        ));
    }
    if !p.restart_vars.is_empty() {
        let needing: Vec<String> = arms
            .iter()
            .zip(&layout.config_of)
            .filter(|(_, &c)| c != 0)
            .map(|(a, _)| a.label())
            .collect();
        let n = layout.restarts();
        notes.push(format!(
            "restarts: {} read-only while the server runs, set through innops's drop-in and a restart; {} run with other values of them than the server's ({}): {n} restart(s) in all, each a clean shutdown and a start, so {n} downtime(s) of the server — arms with the same values run together in each round (rotated), and the last restart puts innops's drop-in back as it was{}",
            p.restart_vars.join(", "),
            if needing.is_empty() { "no arm".to_string() } else { format!("arm(s) {}", needing.join(", ")) },
            p.restart_baseline().iter().map(|s| format!("{}={}", s.name, s.value)).collect::<Vec<_>>().join(", "),
            if p.keep_best { "; --keep best may restart once more to keep a winner" } else { "" }
        ));
    }
    notes.push(format!(
        "keep: {}",
        if p.keep_best {
            "--keep best sets the fastest variant again after the restore, only if it is faster than A beyond the noise, and keeps it in innops's drop-in (the diff shown): restart variables through the drop-in and a restart, dynamic ones with SET GLOBAL and written into the drop-in for the next start, no restart"
        } else {
            "everything is set back as it was (--keep best keeps a winner beyond the noise)"
        }
    ));
    notes.push(noise_note(
        p.rounds,
        p.time_s,
        p.warmup_s,
        p.restart_vars.is_empty(),
    ));
    notes
}

/// How the plan's verdicts will be judged, from its rounds and seconds (src/bench/experiment/judge.rs), and,
/// when no arm needs a restart and each run is long, the same seconds split into more, shorter rounds:
/// round by round, the interval narrows with √rounds, and a round's arms run seconds apart instead of tens of
/// seconds (measured in docs/experiment.md, "Measured: false alarms and power").
fn noise_note(rounds: u32, time_s: u64, warmup_s: u64, online: bool) -> String {
    let judged = judged_note(rounds, time_s);
    let shorter = u64::from(rounds) * (time_s + warmup_s) / SHORT_RUN_S;
    // At least twice the rounds: runs of 2 × SHORT_RUN_S seconds or more, warm-up included.
    if online && shorter >= 2 * u64::from(rounds) {
        format!("{judged}; every change here is online, so the same time resolves more as --rounds {shorter} --time {SHORT_RUN_S} --warmup 0: more rounds narrow the interval, and a round's arms run closer together")
    } else {
        judged
    }
}

/// The measured run length the noise note proposes for experiments without restarts.
const SHORT_RUN_S: u64 = 2;

fn judged_note(rounds: u32, time_s: u64) -> String {
    use crate::bench::noise::{MIN_INTERVALS, MIN_PAIRED_ROUNDS};
    if rounds as usize >= MIN_PAIRED_ROUNDS {
        format!("noise: each arm is compared with A in the same round, {rounds} rounds (load that changes between rounds cancels); a variant's change must lie beyond the A/A pair's interval and its own interval exclude zero")
    } else if u64::from(rounds) * time_s < MIN_INTERVALS as u64 {
        format!("noise: {rounds} round(s) × {time_s} s give each arm fewer than {MIN_INTERVALS} one-second figures: no variant can be judged; give more --time or --rounds")
    } else {
        format!("noise: with fewer than {MIN_PAIRED_ROUNDS} rounds the one-second figures are pooled over the rounds, so load that changes between rounds widens every interval; --rounds {MIN_PAIRED_ROUNDS} or more compares each arm with A round by round")
    }
}

#[cfg(test)]
mod tests {
    use super::noise_note;

    #[test]
    fn the_noise_note_says_how_the_rounds_will_be_judged() {
        assert!(noise_note(3, 1, 0, true).contains("compared with A in the same round, 3 rounds"));
        assert!(noise_note(1, 3, 0, true).contains("no variant can be judged"));
        assert!(noise_note(2, 5, 0, false).contains("--rounds 3 or more compares each arm"));
    }

    #[test]
    fn long_online_runs_are_proposed_as_more_shorter_rounds_and_restarts_are_not() {
        // The defaults (3 rounds × (2 s warm-up + 10 s)): the same 36 s an arm as 18 rounds of 2 s.
        let online = noise_note(3, 10, 2, true);
        assert!(
            online.contains("--rounds 18 --time 2 --warmup 0"),
            "{online}"
        );
        // A restart per arm and round makes short rounds costly: no proposal.
        assert!(!noise_note(3, 10, 2, false).contains("--warmup 0"));
        // Already short: nothing to propose.
        assert!(!noise_note(48, 2, 0, true).contains("--warmup 0"));
        assert!(!noise_note(16, 3, 0, true).contains("--warmup 0"));
    }
}
