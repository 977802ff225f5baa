//! The order an experiment runs its arms in when some variables change only at a restart: the arms fall into
//! **configurations** (the values of the restart variables they need; configuration 0 is the server's own), and
//! every round runs each configuration's arms together, so a restart is needed only between configurations.
//!
//! Why this order stays honest: every arm still runs once per round; the arms inside a configuration rotate by
//! one each round (as [`crate::bench::experiment::round_order`] rotates them all when no restart is needed), and
//! the configurations rotate too — backwards by one each round, so a round begins with the configuration the
//! round before ended with, and that boundary costs no restart. Over the rounds every configuration takes every
//! position, so drift over the experiment still hits every arm alike. What a restart does that a `SET GLOBAL`
//! does not — an emptied buffer pool, reloaded in the background where `innodb_buffer_pool_load_at_startup` is
//! on — falls on the first arm after it; the rotation inside a configuration spreads that slot over its arms.
//!
//! Pure: unit-tested without a server.

use crate::bench::experiment::{round_order, Arm, Setting};

use super::values::same_value;

/// The arms' configurations: for each arm, the index of its configuration; for each configuration, the values
/// of the restart variables it needs (index 0: the baseline's own, whatever the arms are).
pub fn configs(
    arms: &[Arm],
    restart_vars: &[String],
    baseline: &[Setting],
) -> (Vec<usize>, Vec<Vec<Setting>>) {
    let restart_part = |settings: &[Setting]| -> Vec<Setting> {
        settings
            .iter()
            .filter(|s| restart_vars.contains(&s.name))
            .cloned()
            .collect()
    };
    let same = |a: &[Setting], b: &[Setting]| {
        a.len() == b.len()
            && a.iter()
                .zip(b)
                .all(|(x, y)| x.name == y.name && same_value(&x.value, &y.value))
    };
    let mut configs = vec![restart_part(baseline)];
    let mut of = Vec::new();
    for arm in arms {
        let part = restart_part(&arm.settings);
        let i = match configs.iter().position(|c| same(c, &part)) {
            Some(i) => i,
            None => {
                configs.push(part);
                configs.len() - 1
            }
        };
        of.push(i);
    }
    (of, configs)
}

/// One place in the experiment's sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// The `n`-th restart (1-based), into configuration `config`.
    Restart { n: usize, config: usize },
    /// Arm `arm` (an index into the arms) in round `round` (1-based).
    Run { round: u32, arm: usize },
}

/// The order of configurations in round `round` (0-based): rotated backwards by one each round, so each round
/// begins with the configuration the one before ended with.
fn config_order(configs: usize, round: usize) -> Vec<usize> {
    let n = configs.max(1);
    let start = (n - round % n) % n;
    (0..n).map(|i| (start + i) % n).collect()
}

/// Every arm-run and every restart between them, in order, from a server in configuration 0. The restart back
/// to configuration 0 at the end is not in it (the plan's `restore-config` step).
pub fn sequence(config_of: &[usize], configs: usize, rounds: u32) -> Vec<Slot> {
    let mut out = Vec::new();
    let mut current = 0;
    let mut n = 0;
    for round in 0..rounds as usize {
        for config in config_order(configs, round) {
            let members: Vec<usize> = (0..config_of.len())
                .filter(|&a| config_of[a] == config)
                .collect();
            if members.is_empty() {
                continue;
            }
            if config != current {
                n += 1;
                out.push(Slot::Restart { n, config });
                current = config;
            }
            for i in round_order(members.len(), round) {
                out.push(Slot::Run {
                    round: round as u32 + 1,
                    arm: members[i],
                });
            }
        }
    }
    out
}

/// The configuration the sequence leaves the server in.
pub fn last_config(seq: &[Slot]) -> usize {
    seq.iter()
        .rev()
        .find_map(|s| match s {
            Slot::Restart { config, .. } => Some(*config),
            Slot::Run { .. } => None,
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::experiment::arms;

    fn s(name: &str, value: &str) -> Setting {
        Setting {
            name: name.into(),
            value: value.into(),
        }
    }

    fn runs(seq: &[Slot], round: u32) -> Vec<usize> {
        seq.iter()
            .filter_map(|x| match x {
                Slot::Run { round: r, arm } if *r == round => Some(*arm),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn without_restart_variables_the_order_is_the_plain_rotation() {
        let (of, configs) = configs(
            &arms(&[s("x", "1")], &[vec![s("x", "2")], vec![s("x", "3")]]),
            &[],
            &[s("x", "1")],
        );
        assert_eq!(configs.len(), 1);
        let seq = sequence(&of, configs.len(), 3);
        assert!(!seq.iter().any(|x| matches!(x, Slot::Restart { .. })));
        for r in 0..3 {
            assert_eq!(runs(&seq, r as u32 + 1), round_order(4, r));
        }
    }

    #[test]
    fn arms_with_the_baseline_s_restart_values_share_its_configuration() {
        let base = [s("log", "16777216"), s("io", "200")];
        let variants = [
            vec![s("log", "16M"), s("io", "2000")],
            vec![s("log", "32M"), s("io", "200")],
            vec![s("log", "32M"), s("io", "2000")],
        ];
        let (of, configs) = configs(&arms(&base, &variants), &["log".into()], &base);
        // A, A′ and B (16M is the baseline's 16777216) in 0; C and D in 1.
        assert_eq!(of, [0, 0, 0, 1, 1]);
        assert_eq!(configs[1], [s("log", "32M")]);
    }

    #[test]
    fn each_round_runs_every_arm_once_and_begins_where_the_last_ended() {
        // Three configurations: A, A′ | B | C.
        let of = [0, 0, 1, 2];
        let seq = sequence(&of, 3, 3);
        for r in 1..=3 {
            let mut got = runs(&seq, r);
            got.sort();
            assert_eq!(got, [0, 1, 2, 3], "round {r}");
        }
        // Round 1: A A′ [1] B [2] C; round 2 begins with C's configuration, no restart; and so on.
        let restarts: Vec<usize> = seq
            .iter()
            .filter_map(|x| match x {
                Slot::Restart { config, .. } => Some(*config),
                _ => None,
            })
            .collect();
        assert_eq!(restarts, [1, 2, 0, 1, 2, 0]);
        assert_eq!(last_config(&seq), 0);
        // A rotation, not the same order each round: every configuration takes every position.
        assert_eq!(runs(&seq, 1), [0, 1, 2, 3]);
        assert_eq!(runs(&seq, 2), [3, 1, 0, 2]);
        assert_eq!(runs(&seq, 3), [2, 3, 0, 1]);
        // Numbered from 1 in order.
        let ns: Vec<usize> = seq
            .iter()
            .filter_map(|x| match x {
                Slot::Restart { n, .. } => Some(*n),
                _ => None,
            })
            .collect();
        assert_eq!(ns, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn two_configurations_cost_one_restart_a_round() {
        let seq = sequence(&[0, 0, 1], 2, 2);
        // A A′ [1] B | B [2] A′ A: the restart back at the end is the plan's restore step's.
        assert_eq!(
            seq,
            [
                Slot::Run { round: 1, arm: 0 },
                Slot::Run { round: 1, arm: 1 },
                Slot::Restart { n: 1, config: 1 },
                Slot::Run { round: 1, arm: 2 },
                Slot::Run { round: 2, arm: 2 },
                Slot::Restart { n: 2, config: 0 },
                Slot::Run { round: 2, arm: 1 },
                Slot::Run { round: 2, arm: 0 },
            ]
        );
        assert_eq!(last_config(&seq), 0);
    }
}
