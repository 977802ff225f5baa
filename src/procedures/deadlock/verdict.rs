//! The deadlock runner's verdicts, as pure functions over what the server answered: a statement's reply
//! against the scenario's expectation ([`record`]), InnoDB's report against the errors the run's sessions got
//! ([`judge_report`]), whether repetitions had the same outcome, and the names innops refuses as a scenario's
//! schema. The runner ([`super::runner`]) collects the answers; nothing here talks to a server.

use super::parse::Deadlock;
use super::runner::{Repetition, Reply, StepOutcome};
use super::scenario::{rows_text, End, Expectation, RowsCheck, Scenario};

/// Schemas a scenario never runs in (it creates and drops its schema).
const SYSTEM_SCHEMAS: &[&str] = &["mysql", "information_schema", "performance_schema", "sys"];

/// Why `schema` cannot be a scenario's schema, as a sentence with the fix; None if it can.
pub fn schema_problem(schema: &str) -> Option<String> {
    let chars = schema.chars().count();
    if chars == 0 || chars > 64 || schema.ends_with(' ') {
        return Some(format!(
            "--schema {schema:?} is not a schema name the server takes: give 1 to 64 characters that do not end in a space, e.g. innops_deadlock"
        ));
    }
    if SYSTEM_SCHEMAS
        .iter()
        .any(|s| s.eq_ignore_ascii_case(schema))
    {
        return Some(format!(
            "--schema {schema} is a system schema, and a scenario runs in a schema it creates and removes again: give a schema of its own, e.g. innops_deadlock"
        ));
    }
    None
}

/// Whether a processlist state is a wait for a lock the server's SQL layer manages: a metadata lock (`Waiting
/// for table metadata lock`, `… schema metadata lock`, …), a table-level lock, the global read lock, or a
/// GET_LOCK (`User lock`).
pub fn is_lock_wait_state(state: &str) -> bool {
    (state.starts_with("Waiting for") && state.ends_with("lock")) || state == "User lock"
}

/// Whether every repetition had the same outcome. A step whose end the scenario leaves open (one of several)
/// is compared by its verdict, and the victims only where no step leaves its end open.
pub fn same_every_time(scenario: &Scenario, reps: &[Repetition]) -> bool {
    let open_end = |i: usize| scenario.steps.get(i).is_some_and(|s| s.expected.one_of());
    let any_open = (0..scenario.steps.len()).any(open_end);
    let sig = |r: &Repetition| {
        (
            r.steps
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    if open_end(i) {
                        (o.as_expected.to_string(), o.as_expected)
                    } else {
                        (o.result.clone(), o.blocked)
                    }
                })
                .collect::<Vec<_>>(),
            if any_open { None } else { r.victim.clone() },
            r.deadlocks,
        )
    };
    let first = reps.first().map(sig);
    reps.iter().all(|r| Some(sig(r)) == first)
}

/// Judge a statement's reply against what the scenario expects of it (pure: unit-tested).
pub fn record(outcome: &mut StepOutcome, r: &Reply, want: &Expectation, returns: &RowsCheck) {
    let code = r.error.as_ref().map(|(c, _)| *c);
    let killed = code == Some(0);
    outcome.result = match code {
        None => "ok",
        Some(0) => "killed",
        Some(1213) => "deadlock",
        Some(1205) => "timeout",
        Some(_) => "error",
    }
    .into();
    outcome.error_code = code.filter(|c| *c != 0);
    outcome.error = r.error.as_ref().map(|(_, m)| m.clone());
    outcome.rows = r.rows.clone();
    outcome.row_count = r.rows.as_ref().map(|_| r.row_count);
    // A lock wait timeout is the end of a wait, whether or not innops saw the wait before it ended.
    if code == Some(1205) {
        outcome.blocked = true;
    }
    let end = End::of(code);
    let mut wrong = Vec::new();
    if killed {
        wrong.push("innops killed it".to_string());
    } else if !want.allows(end) {
        wrong.push(format!(
            "ended {}, expected {}",
            end.name(),
            want.describe()
        ));
    }
    // A statement expected to end in a lock wait timeout has waited by definition; otherwise the wait must be
    // as the scenario says.
    let wait_matters = !(end == End::Timeout && want.allows(End::Timeout));
    if wait_matters && want.block != outcome.blocked {
        wrong.push(if want.block {
            "it did not wait for a lock".to_string()
        } else {
            "it waited for a lock".to_string()
        });
    }
    if !returns.is_empty() && end == End::Ok {
        let got = r.rows.clone().unwrap_or_default();
        if !returns.matches(&got) {
            wrong.push(format!(
                "it returned {} ({} row(s)), expected {}",
                rows_text(got.iter().map(|r| r.iter().map(|v| v.as_deref()))),
                r.row_count,
                returns.describe()
            ));
        }
    }
    outcome.as_expected = wrong.is_empty();
    outcome.wrong = (!wrong.is_empty()).then(|| wrong.join("; "));
}

/// What InnoDB's report says about this repetition, judged against the errors the sessions got (pure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportJudgement {
    pub report_victim: Option<String>,
    pub ours: bool,
    /// A session InnoDB rolled back that got no error: counts as a deadlock the run did not see.
    pub unseen: Option<String>,
    /// A session the report names that ended in an error other than 1213 (counted as a deadlock).
    pub other_error_victim: bool,
    pub problem: Option<String>,
}

/// `sessions`: (name, thread id); `errors`: (session, error code) of every statement that ended in an error.
pub fn judge_report(
    report: Option<&Deadlock>,
    sessions: &[(String, u64)],
    errors: &[(String, u16)],
) -> ReportJudgement {
    let mut j = ReportJudgement {
        report_victim: None,
        ours: false,
        unseen: None,
        other_error_victim: false,
        problem: None,
    };
    let Some(d) = report else { return j };
    let name_of = |id: u64| {
        sessions
            .iter()
            .find(|(_, t)| *t == id)
            .map(|(n, _)| n.clone())
    };
    j.ours = d
        .transactions
        .iter()
        .any(|t| t.thread_id.and_then(name_of).is_some());
    let victim_thread = d.victim_txn().and_then(|t| t.thread_id);
    let Some(victim) = victim_thread.and_then(name_of) else {
        if j.ours {
            j.problem = Some(format!(
                "InnoDB's report of a deadlock of this run's sessions names {} as the victim, not one of them",
                victim_thread.map_or("no thread".to_string(), |t| format!("thread {t}"))
            ));
        }
        return j;
    };
    j.report_victim = Some(victim.clone());
    let codes: Vec<u16> = errors
        .iter()
        .filter(|(s, _)| *s == victim)
        .map(|(_, c)| *c)
        .collect();
    if codes.is_empty() {
        j.unseen = Some(victim.clone());
        j.problem = Some(format!(
            "InnoDB's report names {victim} (thread {}) as the deadlock victim it rolled back, but {victim} got no ERROR 1213 (no error at all): the run did not see this deadlock",
            victim_thread.unwrap_or(0)
        ));
    } else if !codes.contains(&1213) {
        j.other_error_victim = true;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedures::deadlock::parse::Txn;
    use crate::procedures::deadlock::scenario::RowsCheck;

    fn outcome() -> StepOutcome {
        StepOutcome::sent(1, "t2", "", String::new())
    }

    fn reply(code: Option<u16>) -> Reply {
        Reply {
            error: code.map(|c| (c, "x".into())),
            ..Reply::default()
        }
    }

    fn want(block: bool, ends: &[End]) -> Expectation {
        Expectation {
            block,
            ends: ends.to_vec(),
        }
    }

    #[test]
    fn an_expected_timeout_passes_whether_or_not_the_wait_was_seen() {
        let none = RowsCheck {
            rows: None,
            row_count: None,
        };
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(1205)),
            &want(false, &[End::Timeout]),
            &none,
        );
        assert!(o.as_expected, "{o:?}");
        assert!(o.blocked);
        let mut o = outcome();
        o.blocked = true;
        record(
            &mut o,
            &reply(Some(1205)),
            &want(true, &[End::Timeout]),
            &none,
        );
        assert!(o.as_expected, "{o:?}");
        // A statement expected to return that timed out, or one expected to block that did not.
        let mut o = outcome();
        record(&mut o, &reply(Some(1205)), &want(false, &[End::Ok]), &none);
        assert!(!o.as_expected);
        assert!(o.wrong.unwrap().contains("ended timeout"));
        let mut o = outcome();
        record(&mut o, &reply(None), &want(true, &[End::Ok]), &none);
        assert_eq!(o.wrong.as_deref(), Some("it did not wait for a lock"));
        // Only an actual timeout excuses an unseen wait: one that may end either way and returned at once
        // did not wait.
        let mut o = outcome();
        record(
            &mut o,
            &reply(None),
            &want(true, &[End::Ok, End::Timeout]),
            &none,
        );
        assert_eq!(o.wrong.as_deref(), Some("it did not wait for a lock"));
    }

    #[test]
    fn rows_are_judged_only_for_a_statement_that_returned() {
        let two = RowsCheck {
            rows: Some(vec![vec!["1".into()], vec!["3".into()]]),
            row_count: None,
        };
        // One that may end in a deadlock, and did: its rows are not what the check is about.
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(1213)),
            &want(false, &[End::Ok, End::Deadlock]),
            &two,
        );
        assert!(o.as_expected, "{o:?}");
    }

    #[test]
    fn the_error_code_is_kept_and_a_kill_is_no_error_code() {
        let none = RowsCheck {
            rows: None,
            row_count: None,
        };
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(1213)),
            &want(false, &[End::Deadlock]),
            &none,
        );
        assert_eq!((o.result.as_str(), o.error_code), ("deadlock", Some(1213)));
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(1467)),
            &want(false, &[End::Deadlock]),
            &none,
        );
        assert_eq!(o.error_code, Some(1467));
        let mut o = outcome();
        record(&mut o, &reply(Some(0)), &want(false, &[End::Ok]), &none);
        assert_eq!((o.result.as_str(), o.error_code), ("killed", None));
        assert_eq!(o.wrong.as_deref(), Some("innops killed it"));
        let mut o = outcome();
        record(&mut o, &reply(None), &want(false, &[End::Ok]), &none);
        assert_eq!((o.result.as_str(), o.error_code), ("ok", None));
        assert!(o.as_expected);
    }

    #[test]
    fn error_codes_one_of_ends_and_rows_are_judged() {
        let none = RowsCheck {
            rows: None,
            row_count: None,
        };
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(1467)),
            &want(false, &[End::Error(1467)]),
            &none,
        );
        assert!(o.as_expected);
        assert_eq!(o.result, "error");
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(1213)),
            &want(false, &[End::Error(1467)]),
            &none,
        );
        assert!(!o.as_expected);
        for code in [None, Some(1213)] {
            let mut o = outcome();
            o.blocked = true;
            record(
                &mut o,
                &reply(code),
                &want(true, &[End::Ok, End::Deadlock]),
                &none,
            );
            assert!(o.as_expected, "{code:?}");
        }
        let two = RowsCheck {
            rows: Some(vec![vec!["1".into()], vec!["3".into()]]),
            row_count: None,
        };
        let rows = |v: &[&str]| Reply {
            rows: Some(v.iter().map(|x| vec![Some(x.to_string())]).collect()),
            row_count: v.len() as u64,
            ..Reply::default()
        };
        let mut o = outcome();
        record(&mut o, &rows(&["1", "3"]), &want(false, &[End::Ok]), &two);
        assert!(o.as_expected);
        assert_eq!(o.row_count, Some(2));
        let mut o = outcome();
        record(
            &mut o,
            &rows(&["1", "2", "3"]),
            &want(false, &[End::Ok]),
            &two,
        );
        assert!(!o.as_expected);
        assert!(o.wrong.unwrap().contains("it returned [[1], [2], [3]]"));
        // innops's own kill is never as expected.
        let mut o = outcome();
        record(
            &mut o,
            &reply(Some(0)),
            &want(false, &[End::Ok, End::Timeout]),
            &none,
        );
        assert_eq!(o.result, "killed");
        assert!(!o.as_expected);
    }

    fn report(victim_thread: u64, other: u64) -> Deadlock {
        let txn = |n: u32, t: u64| Txn {
            number: n,
            thread_id: Some(t),
            ..Txn::default()
        };
        Deadlock {
            transactions: vec![txn(1, victim_thread), txn(2, other)],
            victim: Some(1),
            ..Deadlock::default()
        }
    }

    fn rep(results: &[(&str, bool)], victim: Option<&str>, deadlocks: u64) -> Repetition {
        Repetition {
            n: 1,
            steps: results
                .iter()
                .map(|(r, blocked)| {
                    let mut o = StepOutcome::sent(1, "t1", "", String::new());
                    o.result = r.to_string();
                    o.blocked = *blocked;
                    o.as_expected = true;
                    o
                })
                .collect(),
            victim: victim.map(str::to_string),
            victims: victim.map(|v| vec![v.to_string()]).unwrap_or_default(),
            deadlocks,
            expected_deadlocks: deadlocks,
            report_victim: None,
            report_new: false,
            report_ours: false,
            deadlocks_before: 0,
            deadlocks_after: 0,
            rolled_back_open: Vec::new(),
            open_after: 0,
            report: None,
            count_problem: None,
            report_problem: None,
            as_expected: true,
        }
    }

    #[test]
    fn the_same_outcome_every_time_means_the_same_results_victim_and_count() {
        let sc = crate::procedures::deadlock::scenario::load("opposite-order").unwrap();
        let usual = [
            ("ok", false),
            ("ok", false),
            ("ok", true),
            ("deadlock", false),
        ];
        let a = rep(&usual, Some("t2"), 1);
        assert!(same_every_time(&sc, &[a.clone(), a.clone()]));
        assert!(same_every_time(&sc, std::slice::from_ref(&a)));
        // Each differs from `a` in one thing: the victim, a result, a wait, the count.
        let mut timeout = usual;
        timeout[2] = ("timeout", true);
        let mut not_blocked = usual;
        not_blocked[2] = ("ok", false);
        for other in [
            rep(&usual, Some("t1"), 1),
            rep(&timeout, Some("t2"), 1),
            rep(&not_blocked, Some("t2"), 1),
            rep(&usual, Some("t2"), 2),
        ] {
            assert!(!same_every_time(&sc, &[a.clone(), other]));
        }
    }

    #[test]
    fn schema_names_are_checked_at_their_bounds() {
        assert!(schema_problem(&"s".repeat(64)).is_none());
        assert!(schema_problem(&"s".repeat(65)).is_some());
        assert!(
            schema_problem(&"é".repeat(64)).is_none(),
            "64 characters, not bytes"
        );
        assert!(schema_problem("").is_some());
        assert!(schema_problem("innops deadlock ").is_some());
        assert!(schema_problem("innops deadlock").is_none());
        assert!(schema_problem("Performance_Schema").is_some());
    }

    #[test]
    fn the_report_must_name_a_victim_whose_session_got_an_error() {
        let sessions = vec![("t1".to_string(), 10), ("t2".to_string(), 11)];
        // Seen: t2 got 1213 and the report names t2.
        let j = judge_report(Some(&report(11, 10)), &sessions, &[("t2".into(), 1213)]);
        assert_eq!(j.report_victim.as_deref(), Some("t2"));
        assert!(j.problem.is_none() && j.ours && !j.other_error_victim);
        // Unseen: the report names t1, which got no error.
        let j = judge_report(Some(&report(10, 11)), &sessions, &[]);
        assert_eq!(j.unseen.as_deref(), Some("t1"));
        assert!(j.problem.unwrap().contains("t1 got no ERROR 1213"));
        // The victim told with another code (1467): counted, no problem.
        let j = judge_report(Some(&report(11, 10)), &sessions, &[("t2".into(), 1467)]);
        assert!(j.other_error_victim && j.problem.is_none());
        // Another client's deadlock: not this run's, judged neither way.
        let j = judge_report(Some(&report(50, 51)), &sessions, &[("t2".into(), 1213)]);
        assert!(!j.ours && j.problem.is_none() && j.report_victim.is_none());
        // A deadlock with a foreign session whose victim is the foreign one disturbs the scenario.
        let j = judge_report(Some(&report(50, 10)), &sessions, &[]);
        assert!(j.ours && j.problem.is_some());
        assert_eq!(judge_report(None, &sessions, &[]).problem, None);
    }

    #[test]
    fn lock_wait_states_of_the_sql_layer_are_recognised() {
        for s in [
            "Waiting for table metadata lock",
            "Waiting for schema metadata lock",
            "Waiting for table level lock",
            "Waiting for global read lock",
            "Waiting for backup lock",
            "User lock",
        ] {
            assert!(is_lock_wait_state(s), "{s}");
        }
        for s in [
            "Sending data",
            "Updating",
            "Waiting for table flush",
            "User sleep",
            "",
        ] {
            assert!(!is_lock_wait_state(s), "{s}");
        }
    }

    #[test]
    fn schema_names_the_server_refuses_and_system_schemas_are_problems() {
        assert!(schema_problem("innops_deadlock").is_none());
        assert!(schema_problem("a.b").is_none());
        for bad in ["", "x ", &"y".repeat(65)] {
            assert!(
                schema_problem(bad).unwrap().contains("1 to 64 characters"),
                "{bad:?}"
            );
        }
        for sys in [
            "mysql",
            "MySQL",
            "information_schema",
            "performance_schema",
            "sys",
        ] {
            assert!(
                schema_problem(sys).unwrap().contains("system schema"),
                "{sys}"
            );
        }
    }
}
