//! A deadlock scenario as a plan step, so a playbook (and the drill) can run one between other procedures, and
//! so a standalone `innops deadlock run --detect on|off`, which changes a global, has a run directory and a
//! resume like every plan: one step, risk `online` (it creates its own schema and drops it again, and sets
//! `innodb_deadlock_detect` only for the run), whose action is the deterministic runner of [`super::runner`] and
//! whose post-checks are the scenario's expectations, judged from what the server did: the error (and rows) each
//! statement got, the deadlocks of the run's own sessions in each repetition, every victim InnoDB's own report
//! names among them having got the error that said so, the transactions left open, and, read live after the
//! run, that the schema is gone and the setting is back.
//!
//! The action's result (journaled before the post-checks run) is what the post-checks read: a resumed run whose
//! action did not finish finds no result, the checks fail, and the step runs again. The schema such an
//! interrupted attempt may leave behind is this run's own when the journal shows the step started before (the
//! plan's named lock keeps any other innops run out of it meanwhile); only then is it dropped. The server's own
//! `innodb_deadlock_detect` is recorded in plan.json when the plan is made, and a resumed attempt puts it back
//! before it runs the scenario again.

use serde::{Deserialize, Serialize};

use super::runner::StepOutcome;
use super::runner::{self, RunReport, RunSettings};
use super::scenario::{self, Scenario};
use crate::error::bad_input;
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::server::facts::ServerFacts;
use crate::sql::{quote_ident, Queryable};

/// What a deadlock step runs, as `innops deadlock run` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeadlockParams {
    /// A built-in scenario's name, or the absolute path of a scenario file.
    pub scenario: String,
    pub repeat: u32,
    /// innodb_deadlock_detect for the run (restored after); None keeps the server's.
    pub detect: Option<bool>,
    /// innodb_lock_wait_timeout of the sessions the scenario gives none.
    pub lock_wait_timeout: u64,
    pub schema: String,
    /// innodb_deadlock_detect as the server had it when the plan was made, when the run sets it: recorded in
    /// plan.json, so a run killed while the variable was set for the scenario puts it back on resume (the live
    /// value then is the killed run's, not the server's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detect_at_plan: Option<bool>,
    /// `--binlog`: where the scenario's writes go; None takes the default for the server's place in its topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binlog: Option<crate::procedures::kit::binlog::Mode>,
}

impl DeadlockParams {
    pub fn check(&self) -> anyhow::Result<()> {
        if self.repeat == 0 || self.repeat > 10_000 {
            return Err(bad_input(
                "--repeat must be 1 to 10000: give the number of times to run the scenario",
            ));
        }
        if self.lock_wait_timeout == 0 || self.lock_wait_timeout > 3600 {
            return Err(bad_input(
                "--lock-wait-timeout must be 1 to 3600 seconds: give a short one such as 2",
            ));
        }
        if let Some(problem) = runner::schema_problem(&self.schema) {
            return Err(bad_input(problem));
        }
        Ok(())
    }
}

/// How many deadlocks one repetition of `sc` should count, with detection on or off.
pub fn deadlocks_per_run(sc: &Scenario, detect: bool) -> u64 {
    sc.victims_per_run(detect)
}

/// What the step's action records: enough for the post-checks and for a person.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Outcome {
    pub scenario: String,
    pub deadlock_detect: bool,
    /// innodb_deadlock_detect before the run (what it is restored to).
    pub deadlock_detect_before: bool,
    pub repeat: u32,
    pub expected_deadlocks_per_run: u64,
    pub runs: Vec<RunSummary>,
    pub same_every_time: bool,
    pub as_expected: bool,
    /// InnoDB's report of the last run's deadlock, parsed.
    pub report: Option<serde_json::Value>,
    /// The settings in force, as `innops deadlock run` prints them.
    pub settings: serde_json::Value,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    pub n: u32,
    pub victim: Option<String>,
    /// Deadlocks of this run's own sessions (the errors they got), and what the scenario expects.
    #[serde(default)]
    pub deadlocks: u64,
    #[serde(default)]
    pub expected_deadlocks: u64,
    #[serde(default)]
    pub count_problem: Option<String>,
    #[serde(default)]
    pub report_problem: Option<String>,
    pub report_victim: Option<String>,
    pub deadlocks_before: u64,
    pub deadlocks_after: u64,
    pub rolled_back_open: Vec<String>,
    pub open_after: u64,
    pub as_expected: bool,
    /// Each statement: `t2 DELETE … → deadlock (ERROR 1213) after waiting`, with ✗ where it was unexpected.
    pub statements: Vec<String>,
    /// Each statement's outcome in full (its error, its rows).
    #[serde(default)]
    pub steps: Vec<StepOutcome>,
}

fn summarize(r: &RunReport, detect_before: bool, per_run: u64, repeat: u32) -> Outcome {
    Outcome {
        scenario: r.scenario.name.clone(),
        deadlock_detect: r.settings.deadlock_detect,
        deadlock_detect_before: detect_before,
        repeat,
        expected_deadlocks_per_run: per_run,
        runs: r
            .repetitions
            .iter()
            .map(|rep| RunSummary {
                n: rep.n,
                victim: rep.victim.clone(),
                deadlocks: rep.deadlocks,
                expected_deadlocks: rep.expected_deadlocks,
                count_problem: rep.count_problem.clone(),
                report_problem: rep.report_problem.clone(),
                report_victim: rep.report_victim.clone(),
                deadlocks_before: rep.deadlocks_before,
                deadlocks_after: rep.deadlocks_after,
                rolled_back_open: rep.rolled_back_open.clone(),
                open_after: rep.open_after,
                as_expected: rep.as_expected,
                statements: rep
                    .steps
                    .iter()
                    .map(|o| {
                        format!(
                            "{}. {} → {}{}{} (expected {}){}",
                            o.step,
                            o.session,
                            o.result,
                            o.error_code
                                .map(|c| format!(" (ERROR {c})"))
                                .unwrap_or_default(),
                            if o.blocked { " after waiting" } else { "" },
                            o.expected,
                            match (&o.wrong, o.as_expected) {
                                (Some(w), _) => format!(" ✗ {w}"),
                                (None, false) => " ✗".to_string(),
                                (None, true) => String::new(),
                            }
                        )
                    })
                    .collect(),
                steps: rep.steps.clone(),
            })
            .collect(),
        same_every_time: r.same_every_time,
        as_expected: r.as_expected,
        report: r
            .repetitions
            .last()
            .and_then(|rep| rep.report.as_ref())
            .and_then(|d| serde_json::to_value(d).ok()),
        settings: serde_json::to_value(&r.settings).unwrap_or_default(),
    }
}

/// The step's outcome lines: what a person reads at the end of the run.
pub fn outcome_lines(o: &Outcome) -> Vec<String> {
    let deadlocks: u64 = o.runs.iter().map(|r| r.deadlocks).sum();
    let victims: Vec<&str> = o.runs.iter().filter_map(|r| r.victim.as_deref()).collect();
    let first = o.runs.first();
    let last = o.runs.last();
    let mut line = format!(
        "deadlock {} ×{} (innodb_deadlock_detect={}): {} deadlock(s) of its sessions, Innodb_deadlocks {} → {} (server-wide), ",
        o.scenario,
        o.runs.len(),
        if o.deadlock_detect { "ON" } else { "OFF" },
        deadlocks,
        first.map_or(0, |r| r.deadlocks_before),
        last.map_or(0, |r| r.deadlocks_after),
    );
    line.push_str(&match (victims.first(), victims.len() == o.runs.len()) {
        (None, _) => "no victim".to_string(),
        (Some(v), true) if victims.iter().all(|x| x == v) => format!("victim {v} every time"),
        _ => format!("victims {}", victims.join(", ")),
    });
    let open: Vec<&String> = o.runs.iter().flat_map(|r| &r.rolled_back_open).collect();
    if !open.is_empty() {
        let mut names: Vec<&str> = open.iter().map(|s| s.as_str()).collect();
        names.dedup();
        line.push_str(&format!(
            "; left open and rolled back by innops: {}",
            names.join(", ")
        ));
    }
    let mut out = vec![line];
    if let Some(rep) = &o.report {
        let victim = rep["victim"].as_u64();
        let txns: Vec<String> = rep["transactions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| {
                        let lock = &t["waiting_for"][0];
                        format!(
                            "({}) thread {} waited for {} {} on index {} of {}{}",
                            t["number"],
                            t["thread_id"],
                            lock["lock_type"].as_str().unwrap_or("?"),
                            lock["mode"].as_str().unwrap_or("?"),
                            lock["index"].as_str().unwrap_or("?"),
                            lock["table"].as_str().unwrap_or("?"),
                            if t["number"].as_u64() == victim {
                                ", rolled back"
                            } else {
                                ""
                            }
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(format!(
            "deadlock {}: InnoDB's report: {}",
            o.scenario,
            txns.join("; ")
        ));
    }
    out
}

/// The plan: one step that runs the scenario, checked by what the server did.
pub fn plan(p: &DeadlockParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    p.check()?;
    // A resumed run's parameters come from plan.json and keep the value recorded by the first planning.
    let mut p = p.clone();
    if p.detect.is_some() && p.detect_at_plan.is_none() {
        p.detect_at_plan = Some(facts.var_on("innodb_deadlock_detect"));
    }
    let p = &p;
    let sc = scenario::load(&p.scenario).map_err(bad_input)?;
    let id = format!("run:{}", crate::plan::tag_safe(&sc.name));
    let detect_note = match p.detect {
        Some(true) => " with innodb_deadlock_detect=ON for the run",
        Some(false) => " with innodb_deadlock_detect=OFF for the run",
        None => "",
    };
    let shared = facts.shared_lock_clause();
    let mut step = Step::new(
        id.clone(),
        format!(
            "Run the deadlock scenario {} ({}) {} time(s){detect_note}",
            sc.name, sc.description, p.repeat
        ),
        Risk::Online,
    )
    .preview(format!("CREATE SCHEMA {}", quote_ident(&p.schema)));
    for sql in &sc.setup {
        step = step.preview(sql.clone());
    }
    for (i, s) in sc.steps.iter().enumerate() {
        let want = if p.detect == Some(false) {
            &s.without_detection
        } else {
            &s.expected
        };
        step = step.preview(format!(
            "{}. {}: {}  → {}",
            i + 1,
            s.session,
            Scenario::sql_for(&s.sql, shared),
            want.describe()
        ));
    }
    step = step.preview(format!("DROP SCHEMA {}", quote_ident(&p.schema)));
    let step = step
        .pre(schema_free_check(p, &id))
        .pre(writable_check(
            facts.flavor == crate::server::facts::Flavor::MariaDB,
        ))
        .act({
            let (p, sc, id) = (p.clone(), sc.clone(), id.clone());
            move |ctx| act(ctx, &p, &sc, &id)
        });
    let step = post_checks(step, p, &id);
    let binlog = binlog_decision(p.binlog, &facts.topology)?;
    let notes = vec![
        format!(
            "scenario {} runs in schema {} (created and dropped by the step){}; every wait is confirmed from the server, never by sleeping",
            sc.name, p.schema, detect_note
        ),
        binlog.note.clone(),
    ];
    Ok(Plan {
        header: env.header(
            crate::plan::Procedure::Deadlock,
            facts,
            serde_json::to_value(p)?,
            notes,
        ),
        steps: vec![step],
        bench: None,
        locks: crate::plan::lock::server_if(p.detect.is_some(), format!("deadlock:{}", p.schema)),
        session: binlog.session,
    })
}

/// Where a scenario's writes go on a server with topology `topo`: a throwaway schema, so a local run on a
/// primary needs no confirmation; on a replica the run needs `--binlog local` ([`crate::procedures::kit::binlog`]).
pub fn binlog_decision(
    asked: Option<crate::procedures::kit::binlog::Mode>,
    topo: &crate::server::topology::Topology,
) -> anyhow::Result<crate::procedures::kit::binlog::Decision> {
    crate::procedures::kit::binlog::decide(asked, topo, true, "the scenario")
        .map_err(crate::error::refused)
}

fn schema_exists(ctx: &mut Ctx, schema: &str) -> anyhow::Result<bool> {
    let tag = ctx.tag();
    let found: Option<String> = ctx.conn()?.exec_first(
        format!("SELECT {tag} SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?"),
        (schema,),
    )?;
    Ok(found.is_some())
}

/// Whether this run's journal shows an earlier start of this step (an attempt interrupted before its end).
fn started_before(ctx: &Ctx, local: &str) -> bool {
    let Some(dir) = &ctx.run_dir else {
        return false;
    };
    let id = format!("{}{local}", ctx.journal_prefix);
    let starts = crate::plan::journal::read_journal(dir)
        .map(|ev| {
            ev.iter()
                .filter(|e| {
                    matches!(&e.kind, crate::plan::journal::EventKind::StepStarted { step } if *step == id)
                })
                .count()
        })
        .unwrap_or(0);
    // The current attempt's own start is journaled before its pre-checks run.
    starts > 1
}

fn schema_free_check(p: &DeadlockParams, local: &str) -> Check {
    let (schema, local) = (p.schema.clone(), local.to_string());
    Check::new(format!("schema {schema} does not exist"), move |ctx| {
        let expected = "absent (the scenario runs in a schema of its own)";
        if !schema_exists(ctx, &schema)? {
            return Ok(Verdict::pass("absent", expected));
        }
        if started_before(ctx, &local) {
            return Ok(Verdict::pass(
                "left by this run's interrupted attempt of the step: it is dropped and made again",
                expected,
            ));
        }
        Ok(Verdict::fail(
            "exists",
            expected,
            format!("drop schema {schema} if it is a leftover, or give the step another `schema`"),
        ))
    })
}

fn writable_check(mariadb: bool) -> Check {
    Check::new("InnoDB accepts writes", move |ctx| {
        let tag = ctx.tag();
        let innodb: Option<i64> = ctx
            .conn()?
            .query_first(format!("SELECT {tag} @@GLOBAL.innodb_read_only"))?;
        if innodb.unwrap_or(0) != 0 {
            return Ok(Verdict::fail(
                "innodb_read_only=1",
                "innodb_read_only=0, and read_only=0 or an account that may write under it",
                "the scenario writes: make the server writable first (innops readonly --undo)",
            ));
        }
        // read_only (a replica's, say) lets an account with READ_ONLY ADMIN or SUPER write: the kit's check.
        crate::procedures::kit::checks::read_only_writable(ctx.conn()?, &tag, mariadb)
    })
}

fn act(
    ctx: &mut Ctx,
    p: &DeadlockParams,
    sc: &Scenario,
    local: &str,
) -> anyhow::Result<serde_json::Value> {
    let resumed = started_before(ctx, local);
    if schema_exists(ctx, &p.schema)? && resumed {
        let tag = ctx.tag();
        ctx.conn()?
            .query_drop(format!("DROP SCHEMA {tag} {}", quote_ident(&p.schema)))?;
    }
    if let (true, Some(_), Some(was)) = (resumed, p.detect, p.detect_at_plan) {
        // The interrupted attempt may have left the variable set for its scenario: the server's own value
        // first, so that the run below restores to it.
        let tag = ctx.tag();
        ctx.conn()?.query_drop(format!(
            "SET {tag} GLOBAL innodb_deadlock_detect = {}",
            if was { "ON" } else { "OFF" }
        ))?;
    }
    let detect_before = {
        let tag = ctx.tag();
        let v: Option<String> = ctx
            .conn()?
            .query_first(format!("SELECT {tag} @@GLOBAL.innodb_deadlock_detect"))?;
        matches!(v.as_deref(), Some("1") | Some("ON"))
    };
    let settings = RunSettings {
        schema: p.schema.clone(),
        keep: false,
        repeat: p.repeat,
        detect: p.detect,
        lock_wait_timeout: p.lock_wait_timeout,
        execute: true,
        // The plan holds the schema's lock.
        take_lock: false,
    };
    let report = runner::run(ctx.target, sc, &settings)?;
    let per_run = deadlocks_per_run(sc, report.settings.deadlock_detect);
    let outcome = summarize(&report, detect_before, per_run, p.repeat);
    ctx.outcome.extend(outcome_lines(&outcome));
    Ok(serde_json::to_value(outcome)?)
}

/// The action's result, as journaled.
fn recorded(ctx: &Ctx, local: &str) -> Option<Outcome> {
    ctx.recorded_result(local)
        .and_then(|v| serde_json::from_value(v).ok())
}

fn no_result() -> Verdict {
    Verdict::fail(
        "no result of the run in the journal",
        "the run's outcome",
        "the step's action did not finish: run the step again (innops resume does)",
    )
}

/// The step's proofs, each a named check over what the run recorded and what the server shows now.
fn post_checks(step: Step, p: &DeadlockParams, local: &str) -> Step {
    step.post(statements_as_expected(local))
        .post(same_outcome_every_run(local))
        .post(expected_deadlocks(local))
        .post(report_agrees(local))
        .post(none_left_open(local))
        .post(schema_dropped(&p.schema))
        .post(detect_restored(local))
}

/// Every statement of every run ended (and waited) as the scenario file says.
fn statements_as_expected(local: &str) -> Check {
    let l = local.to_string();
    Check::new(
        "every statement ended as the scenario expects",
        move |ctx| {
            let Some(o) = recorded(ctx, &l) else {
                return Ok(no_result());
            };
            let wrong: Vec<String> = o
                .runs
                .iter()
                .flat_map(|r| {
                    r.statements
                        .iter()
                        .filter(|s| s.contains(" ✗"))
                        .map(move |s| format!("run {}: {s}", r.n))
                })
                .collect();
            Ok(Verdict::check(
            o.as_expected && wrong.is_empty(),
            if wrong.is_empty() {
                format!(
                    "{} statement(s) in each of {} run(s), each as expected",
                    o.runs.first().map_or(0, |r| r.statements.len()),
                    o.runs.len()
                )
            } else {
                wrong.join("; ")
            },
            "each statement's result (and its wait) as the scenario file says",
            "the server behaves differently from the scenario's expectations: read the statements marked ✗",
        ))
        },
    )
}

/// Every run had the same results and the same victim.
fn same_outcome_every_run(local: &str) -> Check {
    let l = local.to_string();
    Check::new("the same outcome in every run", move |ctx| {
        let Some(o) = recorded(ctx, &l) else {
            return Ok(no_result());
        };
        let victims: Vec<String> = o
            .runs
            .iter()
            .map(|r| r.victim.clone().unwrap_or_else(|| "none".into()))
            .collect();
        Ok(Verdict::check(
            o.same_every_time,
            format!("{} run(s), victim {}", o.runs.len(), dedup_join(&victims)),
            "the same statements' results and the same victim every time",
            "the outcome differs between runs: read each run's statements in the step's result",
        ))
    })
}

/// This run's own sessions got the deadlock errors the scenario expects (never the server-wide counter alone).
fn expected_deadlocks(local: &str) -> Check {
    let l = local.to_string();
    Check::new(
        "this run's sessions had the expected deadlocks",
        move |ctx| {
            let Some(o) = recorded(ctx, &l) else {
                return Ok(no_result());
            };
            let counts: Vec<u64> = o.runs.iter().map(|r| r.deadlocks).collect();
            let want = o.expected_deadlocks_per_run;
            Ok(Verdict::check(
            counts.iter().all(|&c| c == want),
            format!(
                "{} (from the errors of this run's sessions; Innodb_deadlocks, server-wide, went {} → {})",
                match counts.first() {
                    Some(c) if counts.iter().all(|x| x == c) => format!("{c} in each run"),
                    _ => format!(
                        "per run {}",
                        counts.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
                    ),
                },
                o.runs.first().map_or(0, |r| r.deadlocks_before),
                o.runs.last().map_or(0, |r| r.deadlocks_after),
            ),
            format!("{want} per run"),
            "the scenario's sessions deadlocked a different number of times than the scenario says: read each run's statements in the step's result",
        ))
        },
    )
}

/// InnoDB's own report names the victims the sessions saw fail.
fn report_agrees(local: &str) -> Check {
    let l = local.to_string();
    Check::new(
        "InnoDB's report agrees with the errors this run's sessions got",
        move |ctx| {
            let Some(o) = recorded(ctx, &l) else {
                return Ok(no_result());
            };
            let differ: Vec<String> = o
                .runs
                .iter()
                .filter_map(|r| {
                    r.report_problem
                        .as_ref()
                        .map(|p| format!("run {}: {p}", r.n))
                })
                .collect();
            Ok(Verdict::check(
            differ.is_empty(),
            if differ.is_empty() {
                format!(
                    "the sessions' errors name {}; InnoDB's report names {}",
                    dedup_join(
                        &o.runs
                            .iter()
                            .map(|r| r.victim.clone().unwrap_or_else(|| "none".into()))
                            .collect::<Vec<_>>()
                    ),
                    dedup_join(
                        &o.runs
                            .iter()
                            .map(|r| r.report_victim.clone().unwrap_or_else(|| "none".into()))
                            .collect::<Vec<_>>()
                    )
                )
            } else {
                differ.join("; ")
            },
            "every victim InnoDB's report names among this run's sessions got the error that said so",
            "InnoDB rolled back a transaction of the scenario that the run did not see fail: read the report in the step's result",
        ))
        },
    )
}

/// No transaction of the scenario's sessions stayed open.
fn none_left_open(local: &str) -> Check {
    let l = local.to_string();
    Check::new("no transaction of the scenario is left open", move |ctx| {
        let Some(o) = recorded(ctx, &l) else {
            return Ok(no_result());
        };
        let open: u64 = o.runs.iter().map(|r| r.open_after).sum();
        Ok(Verdict::check(
            open == 0,
            format!("{open} open after the runs"),
            "0",
            "a transaction of the scenario's sessions stayed open: check the server's TRANSACTIONS list",
        ))
    })
}

/// The scenario's schema is gone again.
fn schema_dropped(schema: &str) -> Check {
    let schema = schema.to_string();
    Check::new(format!("schema {schema} is dropped"), move |ctx| {
        let there = schema_exists(ctx, &schema)?;
        Ok(Verdict::check(
            !there,
            if there { "exists" } else { "absent" },
            "absent",
            format!("drop schema {schema}: the run left it behind"),
        ))
    })
}

/// `innodb_deadlock_detect` is back to the value before the run (`--detect` sets it for the run only).
fn detect_restored(local: &str) -> Check {
    let l = local.to_string();
    Check::new(
        "innodb_deadlock_detect is what it was before the run",
        move |ctx| {
            let Some(o) = recorded(ctx, &l) else {
                return Ok(no_result());
            };
            let tag = ctx.tag();
            let v: Option<String> = ctx
                .conn()?
                .query_first(format!("SELECT {tag} @@GLOBAL.innodb_deadlock_detect"))?;
            let now = matches!(v.as_deref(), Some("1") | Some("ON"));
            let name = |b: bool| if b { "ON" } else { "OFF" };
            Ok(Verdict::check(
                now == o.deadlock_detect_before,
                name(now),
                name(o.deadlock_detect_before),
                format!(
                    "SET GLOBAL innodb_deadlock_detect = {}",
                    name(o.deadlock_detect_before)
                ),
            ))
        },
    )
}

/// `t2 every time` when every item is t2 (`none`: no victim in any run), else `t2, t1, t2`.
fn dedup_join(items: &[String]) -> String {
    match items.first() {
        Some(f) if f == "none" && items.iter().all(|x| x == f) => "no victim in any run".into(),
        Some(f) if items.iter().all(|x| x == f) => format!("{f} every time"),
        _ => items.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expected_deadlocks_follow_the_detection_setting() {
        let sc = scenario::load("share-then-delete").unwrap();
        assert_eq!(deadlocks_per_run(&sc, true), 1);
        assert_eq!(deadlocks_per_run(&sc, false), 0);
    }

    #[test]
    fn bad_settings_are_refused_as_bad_input() {
        let p = DeadlockParams {
            scenario: "share-then-delete".into(),
            repeat: 0,
            detect: None,
            lock_wait_timeout: 2,
            schema: "innops_deadlock".into(),
            detect_at_plan: None,
            binlog: None,
        };
        let e = p.check().unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), crate::error::EXIT_BAD_INPUT);
        let p = DeadlockParams {
            repeat: 1,
            lock_wait_timeout: 0,
            ..p
        };
        assert!(p.check().is_err());
    }
}
