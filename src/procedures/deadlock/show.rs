//! The deadlock runner's report as a person reads it.

use super::parse;
use super::runner::{Repetition, RunReport};
use super::scenario::{rows_text, Scenario};

/// The run as a person reads it.
pub fn render(r: &RunReport) -> String {
    let s = &r.settings;
    let mut out = format!(
        "scenario {}: {}\nserver {}; schema {} ({})\n",
        r.scenario.name,
        r.scenario.description,
        s.server,
        s.schema,
        if r.schema_kept {
            "kept afterwards"
        } else {
            "dropped afterwards"
        }
    );
    out.push_str(&format!(
        "settings: innodb_deadlock_detect={}{}, innodb_print_all_deadlocks={}, innodb_lock_wait_timeout {}; shared lock `{}`\n",
        if s.deadlock_detect { "ON" } else { "OFF" },
        if s.deadlock_detect != s.deadlock_detect_now {
            " (for this run only)"
        } else {
            ""
        },
        if s.print_all_deadlocks { "ON" } else { "OFF" },
        s.lock_wait_timeout
            .iter()
            .map(|(n, t)| format!("{n}={t}s"))
            .collect::<Vec<_>>()
            .join(" "),
        s.shared_lock_clause
    ));
    if !r.executed {
        dry_run(&mut out, r);
        return out;
    }
    for rep in &r.repetitions {
        if r.repetitions.len() > 1 && rep.n > 1 && rep.as_expected && r.same_every_time {
            continue;
        }
        repetition(&mut out, rep);
    }
    let victims: Vec<String> = r
        .repetitions
        .iter()
        .filter_map(|x| x.victim.clone())
        .collect();
    out.push_str(&format!(
        "{} run(s): {} deadlock(s), {}; {}\n",
        r.repetitions.len(),
        r.repetitions.iter().map(|x| x.deadlocks).sum::<u64>(),
        if r.same_every_time {
            let mut distinct: Vec<&str> = victims.iter().map(String::as_str).collect();
            distinct.sort_unstable();
            distinct.dedup();
            format!(
                "the same outcome every time (victim {})",
                match distinct.len() {
                    0 => "none".to_string(),
                    1 => distinct[0].to_string(),
                    _ => format!("one of {}, as the scenario allows", distinct.join(", ")),
                }
            )
        } else {
            "outcomes differed between runs".to_string()
        },
        if r.as_expected {
            "every statement did what the scenario expects"
        } else {
            "some statements did not do what the scenario expects (✗)"
        }
    ));
    out
}

/// What a dry run would send: the setup and each step with the end it is expected to have.
fn dry_run(out: &mut String, r: &RunReport) {
    let s = &r.settings;
    out.push_str("setup:\n");
    for sql in &r.scenario.setup {
        out.push_str(&format!("  {sql}\n"));
    }
    out.push_str("steps:\n");
    for (i, st) in r.scenario.steps.iter().enumerate() {
        let want = if s.deadlock_detect {
            &st.expected
        } else {
            &st.without_detection
        };
        out.push_str(&format!(
            "  {:>2}. {:<4} {}  → {}\n",
            i + 1,
            st.session,
            Scenario::sql_for(&st.sql, &s.shared_lock_clause),
            want.describe()
        ));
    }
    out.push_str(
        "dry run: nothing was created; add --execute to create the schema and run the scenario\n",
    );
}

/// One repetition: each step's end beside the expected one, the victim and counts, and InnoDB's report.
fn repetition(out: &mut String, rep: &Repetition) {
    out.push_str(&format!("run {}:\n", rep.n));
    for o in &rep.steps {
        out.push_str(&format!(
            "  {:>2}. {:<4} {:<7} {}{}{}  (expected {}){}\n",
            o.step,
            o.session,
            o.result,
            if o.blocked { "after waiting " } else { "" },
            o.error_code
                .map(|c| format!("ERROR {c} "))
                .unwrap_or_default(),
            match &o.rows {
                Some(rows) if rows.len() <= 10 => format!(
                    "rows {} ",
                    rows_text(rows.iter().map(|r| r.iter().map(|v| v.as_deref())))
                ),
                Some(_) => format!("{} rows ", o.row_count.unwrap_or(0)),
                None => String::new(),
            },
            o.expected,
            match &o.wrong {
                Some(w) => format!("  ✗ {w}"),
                None if !o.as_expected => "  ✗".to_string(),
                None => String::new(),
            }
        ));
    }
    out.push_str(&format!(
        "  victim: {}; deadlocks of this run's sessions: {} (expected {}); Innodb_deadlocks {} → {} (server-wide)\n",
        if rep.victims.len() > 1 {
            rep.victims.join(", ")
        } else {
            rep.victim.clone().unwrap_or_else(|| "none".into())
        },
        rep.deadlocks,
        rep.expected_deadlocks,
        rep.deadlocks_before,
        rep.deadlocks_after
    ));
    for p in rep.count_problem.iter().chain(&rep.report_problem) {
        out.push_str(&format!("  ✗ {p}\n"));
    }
    for sname in &rep.rolled_back_open {
        out.push_str(&format!(
            "  session {sname} left its transaction open: innops rolled it back\n"
        ));
    }
    if let Some(d) = &rep.report {
        for l in parse::render(std::slice::from_ref(d)).lines() {
            out.push_str(&format!("  {l}\n"));
        }
    }
}
