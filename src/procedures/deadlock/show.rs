//! The deadlock runner's report as a person reads it.

use super::parse::Deadlock;
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
        for l in render_deadlocks(std::slice::from_ref(d)).lines() {
            out.push_str(&format!("  {l}\n"));
        }
    }
}

/// Parsed deadlock reports as a person reads them.
pub fn render_deadlocks(deadlocks: &[Deadlock]) -> String {
    let mut s = String::new();
    if deadlocks.is_empty() {
        s.push_str("no deadlock report found\n");
    }
    for (i, d) in deadlocks.iter().enumerate() {
        s.push_str(&format!(
            "deadlock {} at {}{}{}\n",
            i + 1,
            d.ts.as_deref().unwrap_or("(time not printed)"),
            if d.truncated {
                " (report cut short)"
            } else {
                ""
            },
            if d.too_deep {
                " (TOO DEEP OR LONG SEARCH: InnoDB gave up the search and rolled back the transaction it printed)"
            } else {
                ""
            }
        ));
        for t in &d.transactions {
            let victim = if d.victim == Some(t.number) {
                "  ← rolled back (victim)"
            } else {
                ""
            };
            s.push_str(&format!(
                "  ({}) trx {} thread {} {}@{}{} active {}s{victim}\n",
                t.number,
                t.trx_id.as_deref().unwrap_or("?"),
                t.thread_id.map_or("?".into(), |n| n.to_string()),
                t.user.as_deref().unwrap_or("?"),
                t.host.as_deref().unwrap_or("?"),
                t.ip.as_deref()
                    .map(|ip| format!(" ({ip})"))
                    .unwrap_or_default(),
                t.active_secs.map_or("?".into(), |n| n.to_string()),
            ));
            if let Some(q) = &t.query {
                for l in q.lines() {
                    s.push_str(&format!("      {l}\n"));
                }
            }
            for (what, locks) in [("waits for", &t.waiting_for), ("held/conflicting", &t.held)] {
                for l in locks.iter() {
                    let mut parts = vec![
                        l.lock_type.clone(),
                        l.mode.clone().unwrap_or_else(|| "?".into()),
                    ];
                    parts.extend(l.flags.clone());
                    parts.extend(l.index.as_deref().map(|i| format!("on index {i}")));
                    parts.push(format!(
                        "of {}.{}",
                        l.db.as_deref().unwrap_or("?"),
                        l.table.as_deref().unwrap_or("?")
                    ));
                    parts.extend(l.partition.as_deref().map(|p| format!("partition {p}")));
                    parts.extend(
                        l.subpartition
                            .as_deref()
                            .map(|p| format!("subpartition {p}")),
                    );
                    if !l.records.is_empty() {
                        parts.push(format!("({} record(s))", l.records.len()));
                    }
                    parts.push(format!("(trx {})", l.trx_id.as_deref().unwrap_or("?")));
                    s.push_str(&format!("    {what}: {}\n", parts.join(" ")));
                }
            }
        }
        match d.victim {
            Some(v) => s.push_str(&format!("  InnoDB rolled back transaction ({v})\n")),
            None => s.push_str("  the report does not say which transaction was rolled back\n"),
        }
        let gaps = d.gaps();
        if !gaps.is_empty() {
            s.push_str(&format!("  not read in full: {}\n", gaps.join("; ")));
        }
    }
    s
}
