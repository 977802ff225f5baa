//! `innops experiment`: server variables judged by an A/B experiment. The baseline (the server's values when
//! the experiment starts) is arm A and, measured again, arm A′; each combination of the values asked for is a
//! variant arm. Every round runs every arm once, in an order rotated each round, each run after a warm-up that
//! is discarded; one step per arm and round sets the arm's values with `SET GLOBAL`, proves them by reading them
//! back, measures, stores its figures in the run directory (so a resumed run keeps every round measured before
//! the interruption) and sets the baseline back. The `restore` step sets every variable back to its baseline and proves it by
//! reading each back; the `verdict` step judges the variants ([`crate::bench::experiment`]); `keep-best`
//! (`--keep best`) sets the winner again, only when it is faster than A beyond the noise.
//!
//! This slice changes dynamic variables only: a variable the server cannot change while it runs is refused
//! (restart variants, table and engine variants and study files are not built yet: docs/experiment.md).

mod arm_run;
mod values;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::bench::experiment::{self as figures, Arm, Setting};
use crate::bench::PlanBench;
use crate::error::bad_input;
use crate::plan::{Check, Plan, Procedure, Risk, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::server::facts::ServerFacts;

pub use values::{parse_set, VarValues};

/// At most this many variant arms (combinations of the values asked for).
pub const MAX_VARIANTS: usize = 24;

/// What an experiment runs, as recorded in plan.json (enough to build the plan again on `resume`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentParams {
    pub sets: Vec<VarValues>,
    /// Each variable's value when the experiment was planned: arm A, and what `restore` sets back.
    pub baseline: Vec<Setting>,
    pub workload: String,
    pub threads: u32,
    pub time_s: u64,
    pub rounds: u32,
    pub warmup_s: u64,
    /// Transactions a second to start in all threads (0: as fast as they go).
    #[serde(default)]
    pub rate: u32,
    pub keep_best: bool,
}

impl ExperimentParams {
    /// Every arm: A, A′, then the variants.
    pub fn arms(&self) -> Vec<Arm> {
        let sets: Vec<(String, Vec<String>)> = self
            .sets
            .iter()
            .map(|s| (s.name.clone(), s.values.clone()))
            .collect();
        figures::arms(&self.baseline, &figures::cross(&sets))
    }

    /// The workload each arm runs, `seconds` long.
    pub fn bench(&self, seconds: u64) -> PlanBench {
        PlanBench {
            workload: self.workload.clone(),
            threads: self.threads,
            ..PlanBench::read_write(Duration::from_secs(seconds))
        }
    }

    pub fn shape(&self) -> figures::Shape {
        figures::Shape {
            workload: self.workload.clone(),
            threads: self.threads,
            rounds: self.rounds,
            time_s: self.time_s,
            warmup_s: self.warmup_s,
            rate: self.rate,
        }
    }

    /// Seconds of load the experiment puts on the server, warm-ups included.
    pub fn load_seconds(&self) -> u64 {
        self.arms().len() as u64 * u64::from(self.rounds) * (self.time_s + self.warmup_s)
    }
}

/// Check the settings that need no server: the workload, the counts, how many arms.
pub fn check_shape(p: &ExperimentParams) -> anyhow::Result<()> {
    crate::bench::Workload::parse(&p.workload)?;
    if p.sets.is_empty() {
        return Err(bad_input(
            "an experiment needs at least one --set VAR=v1,v2 (for example --set innodb_io_capacity=200,2000)",
        ));
    }
    if p.rounds == 0 || p.time_s == 0 || p.threads == 0 {
        return Err(bad_input(
            "--rounds, --time and --threads must each be at least 1: give a positive number",
        ));
    }
    let variants: usize = p.sets.iter().map(|s| s.values.len()).product();
    if variants > MAX_VARIANTS {
        return Err(bad_input(format!(
            "the --set values cross into {variants} variants, more than the {MAX_VARIANTS} one experiment runs: give fewer values or fewer --set flags"
        )));
    }
    Ok(())
}

/// Each variable's current value, after checking that it exists and that the server can change it while it
/// runs (`information_schema.SYSTEM_VARIABLES`: not read-only, not session-only). Bad input otherwise, in
/// one sentence.
pub fn baseline(
    conn: &mut mysql::Conn,
    facts: &ServerFacts,
    sets: &[VarValues],
) -> anyhow::Result<Vec<Setting>> {
    let mut out = Vec::new();
    for s in sets {
        let Some(now) = facts.var(&s.name) else {
            return Err(bad_input(format!(
                "{} has no variable {}: check its spelling in SHOW GLOBAL VARIABLES",
                facts.version_string, s.name
            )));
        };
        if let Some(why) = values::not_dynamic(conn, &s.name, "/* innops:experiment:preflight */")?
        {
            return Err(bad_input(format!(
                "{} {why}, and restart variants are not supported yet: experiment with a dynamic variable",
                s.name
            )));
        }
        out.push(Setting {
            name: s.name.clone(),
            value: now.to_string(),
        });
    }
    Ok(out)
}

/// The plan: preflight, the benchmark tables, one step per arm and round, restore, verdict, and keep-best
/// with `--keep best`.
pub fn plan(p: &ExperimentParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    check_shape(p)?;
    let arms = p.arms();
    let notes = vec![
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
            p.threads,
            if p.rate > 0 { format!(" at {} transactions a second", p.rate) } else { String::new() },
            p.rounds,
            arms.len(),
            p.warmup_s,
            p.time_s,
            p.load_seconds()
        ),
        format!(
            "keep: {}",
            if p.keep_best {
                "--keep best sets the fastest variant again after the restore, only if it is faster than A beyond the noise (SET GLOBAL only: nothing is written to an option file)"
            } else {
                "everything is set back as it was (--keep best keeps a winner beyond the noise)"
            }
        ),
    ];
    let mut notes = notes;
    if u64::from(p.rounds) * p.time_s < crate::bench::noise::MIN_INTERVALS as u64 {
        notes.push(format!(
            "noise: {} round(s) × {} s give each arm fewer than {} one-second figures: no variant can be judged; give more --time or --rounds",
            p.rounds,
            p.time_s,
            crate::bench::noise::MIN_INTERVALS
        ));
    }
    let header = env.header(
        Procedure::Experiment,
        facts,
        serde_json::to_value(p)?,
        notes,
    );
    let mut steps = vec![preflight(p), prepare_step(p)];
    for round in 0..p.rounds as usize {
        for i in figures::round_order(arms.len(), round) {
            steps.push(arm_run::step(p, &arms[i], round as u32 + 1));
        }
    }
    steps.push(restore_step(p));
    steps.push(verdict_step(p));
    if p.keep_best {
        steps.push(keep_step(p));
    }
    Ok(Plan {
        header,
        steps,
        bench: None,
        locks: vec!["experiment".into(), crate::plan::lock::SERVER.into()],
        session: Vec::new(),
    })
}

/// Each variable exists, can change while the server runs, and is at its baseline now; the workload can run.
fn preflight(p: &ExperimentParams) -> Step {
    let mut step = Step::new(
        "preflight",
        "Check each variable can be changed online and is at its baseline",
        Risk::Read,
    );
    for b in &p.baseline {
        let b = b.clone();
        step = step.pre(Check::new(format!("{} is dynamic", b.name), {
            let name = b.name.clone();
            move |ctx| {
                let tag = ctx.tag();
                let why = values::not_dynamic(ctx.conn()?, &name, &tag)?;
                Ok(match why {
                    None => Verdict::pass("changes with SET GLOBAL", "dynamic"),
                    Some(why) => Verdict::fail(
                        why,
                        "dynamic",
                        "restart variants are not supported yet: experiment with a dynamic variable",
                    ),
                })
            }
        }));
        step = step.pre(Check::new(
            format!("{} is at its baseline {}", b.name, b.value),
            move |ctx| values::reads_back(ctx, &b, "the experiment's baseline"),
        ));
    }
    let workload = p.workload.clone();
    step.pre(Check::new("the workload can run here", move |ctx| {
        let tag = ctx.tag();
        let ro: Option<(i64, i64)> = crate::sql::Queryable::query_first(
            ctx.conn()?,
            format!("SELECT {tag} @@innodb_read_only, @@read_only"),
        )?;
        let read_only = ro.is_some_and(|(a, b)| a != 0 || b != 0);
        let writes = !crate::bench::Workload::parse(&workload)?.is_read_only();
        Ok(Verdict::check(
            !(read_only && writes),
            if read_only { "read-only" } else { "writable" },
            "writable, or a read-only workload",
            format!(
                "the server is read-only and {workload} writes: give --workload oltp_read_only"
            ),
        ))
    }))
}

/// The benchmark tables in `innops_bench`, made on first use.
fn prepare_step(p: &ExperimentParams) -> Step {
    let bench = p.bench(p.time_s);
    let check_bench = bench.clone();
    Step::new(
        "prepare",
        "Prepare the benchmark tables (first use only)",
        Risk::Online,
    )
    .preview(format!(
        "innops bench {} prepare --db {} --tables 1 --table-size 10000   # when missing",
        bench.workload,
        crate::bench::PLAN_DB
    ))
    .pre(Check::new("benchmark tables", move |ctx| {
        let run = check_bench.run_spec(Procedure::Experiment.name())?;
        let there = crate::bench::prepare::is_prepared(
            ctx.conn()?,
            &run.db,
            run.tables,
            run.table_size,
            &run.tag,
        )?;
        Ok(if there {
            Verdict::done("prepared", "prepared")
        } else {
            Verdict::pass("missing: made by this step", "prepared")
        })
    }))
    .act(move |ctx| {
        let run = bench.run_spec(Procedure::Experiment.name())?;
        crate::bench::ready(ctx.target, &run)?;
        Ok(serde_json::json!({"prepared": run.db}))
    })
}

/// Every variable back at its baseline, proven by reading each back.
fn restore_step(p: &ExperimentParams) -> Step {
    let mut step = Step::new(
        "restore",
        "Set every variable back to its baseline",
        Risk::Online,
    );
    for b in &p.baseline {
        step = step.preview(values::set_sql(
            &b.name,
            &values::baseline_literal(&b.value),
        ));
        let b = b.clone();
        step = step.post(Check::new(
            format!("{} reads back {}", b.name, b.value),
            move |ctx| values::reads_back(ctx, &b, "its value before the experiment"),
        ));
    }
    let baseline = p.baseline.clone();
    step.act(move |ctx| {
        values::set_baseline(ctx, &baseline)?;
        Ok(serde_json::json!({"restored": baseline}))
    })
}

/// The verdicts, from the figures every arm-run stored.
fn verdict_step(p: &ExperimentParams) -> Step {
    let p = p.clone();
    Step::new(
        "verdict",
        "Judge each variant against A, with A′ as the noise floor",
        Risk::Read,
    )
    .act(move |ctx| {
        let e = arm_run::summary(ctx, &p)?;
        let out = serde_json::json!({"winner": e.winner, "aa_spread_pct": e.aa_spread_pct});
        if let Some(dir) = &ctx.run_dir {
            crate::files::create_private_dir(&dir.join("experiment"))?;
            crate::files::write_json_atomic(&dir.join("experiment/summary.json"), &e)?;
        }
        ctx.experiment = Some(e);
        Ok(out)
    })
}

/// `--keep best`: the winner set again, only when it won beyond the noise.
fn keep_step(p: &ExperimentParams) -> Step {
    let (pre_p, act_p, post_p) = (p.clone(), p.clone(), p.clone());
    Step::new(
        "keep-best",
        "Keep the fastest variant, if it is faster than A beyond the noise",
        Risk::Online,
    )
    .preview("SET GLOBAL each variable to the winner's value (only with a winner beyond the noise)")
    .pre(Check::after_prior("a winner beyond the noise", move |ctx| {
        let e = arm_run::summary(ctx, &pre_p)?;
        Ok(match winner(&pre_p, &e) {
            Some(arm) => Verdict::pass(
                format!("{} ({}) wins", arm.label(), arm.describe()),
                "a winner beyond the noise",
            ),
            None => Verdict::done(
                "no variant is faster than A beyond the noise: nothing is kept",
                "a winner beyond the noise",
            ),
        })
    }))
    .act(move |ctx| {
        let e = arm_run::summary(ctx, &act_p)?;
        let arm = winner(&act_p, &e).ok_or_else(|| anyhow::anyhow!("no winner to keep"))?;
        values::set_all(ctx, &arm.settings)?;
        ctx.outcome.push(format!(
            "kept: {} ({}) with SET GLOBAL; it lasts until the server restarts (no option file was changed)",
            arm.label(),
            arm.describe()
        ));
        Ok(serde_json::json!({"kept": arm.settings}))
    })
    .post(Check::after_prior("the winner reads back", move |ctx| {
        let e = arm_run::summary(ctx, &post_p)?;
        let Some(arm) = winner(&post_p, &e) else {
            return Ok(Verdict::pass("nothing kept", "nothing kept"));
        };
        for s in &arm.settings {
            let v = values::reads_back(ctx, s, "the winner's value")?;
            if !v.passed {
                return Ok(v);
            }
        }
        Ok(Verdict::pass(arm.describe(), "the winner's values"))
    }))
}

/// The winning arm, if the experiment has one beyond the noise.
fn winner(p: &ExperimentParams, e: &figures::Experiment) -> Option<Arm> {
    let key = e.winner.as_ref()?;
    p.arms().into_iter().find(|a| &a.key == key)
}
