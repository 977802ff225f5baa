//! `innops experiment`: server variables judged by an A/B experiment. The baseline (the server's values when
//! the experiment starts) is arm A and, measured again, arm A′; each combination of the values asked for is a
//! variant arm. Every round runs every arm once, in an order rotated each round, each run after a warm-up that
//! is discarded; one step per arm and round sets the arm's dynamic values with `SET GLOBAL`, proves them by
//! reading them back, measures, stores its figures in the run directory (so a resumed run keeps every round measured before
//! the interruption) and sets the baseline back. The `restore` step sets every variable back to its baseline and proves it by
//! reading each back; the `verdict` step judges the variants ([`crate::bench::experiment`]); `keep-best`
//! (`--keep best`) sets the winner again, only when it is faster than A beyond the noise.
//!
//! A variable the server cannot change while it runs (a **restart variable**) is set through innops's drop-in
//! and a guarded restart ([`restarts`]); the arms then fall into configurations of the restart variables' values
//! and run in an order that needs as few restarts as an honest rotation allows ([`schedule`]). A table variant
//! (`--table-option`) runs the arm's workload on a copy of the benchmark table built with that definition in
//! innops's own schema ([`tables`], [`table_opts`]). A study file (`crate::commands`' study module) gives the
//! same parameters as the flags, and its title is kept in [`StudyInfo`].

mod arm_run;
pub mod columns;
pub mod cores;
pub mod engine;
mod keep;
mod load;
mod notes;
mod restarts;
mod sampler;
mod schedule;
pub mod table_opts;
pub mod tables;
mod threads;
mod values;
pub mod workload_sql;

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::bench::experiment::{self as figures, Arm, Setting};
use crate::bench::PlanBench;
use crate::error::bad_input;
use crate::plan::{Check, Plan, Procedure, Risk, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::server::facts::ServerFacts;

pub use values::{check_zip, parse_set, VarValues};

/// At most this many variant arms (combinations of the values asked for).
pub const MAX_VARIANTS: usize = 24;

/// What an experiment runs, as recorded in plan.json (enough to build the plan again on `resume`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentParams {
    pub sets: Vec<VarValues>,
    /// `--zip`: the n-th values of every `--set` make the n-th variant (the lists are as long as each other),
    /// where without it every combination is one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zip: bool,
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
    /// The variables read-only while the server runs: set through innops's drop-in and a restart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restart_vars: Vec<String>,
    /// The table variants (`--table-option`), each in its canonical text: every arm runs on a copy of the
    /// benchmark table, the baseline arms on one with the original definition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<String>,
    /// The load guard during the arms' runs (`--max-load`, `--critical-load`); None: the defaults,
    /// `Threads_running=25` and `Threads_running=50`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_load: Option<crate::plan::guard::Threshold>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_load: Option<crate::plan::guard::Threshold>,
    /// `--workload-sql`: the workload given as SQL (its statements, checked), in place of `workload`'s
    /// sysbench script; `workload` then names it (`sql:FILE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<workload_sql::SqlWorkload>,
    /// The study file the experiment came from, if any (its settings are the fields above, flags laid over).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub study: Option<StudyInfo>,
    /// The server's cores and the values given relative to them (`2xcores`), resolved when the plan was made:
    /// `sets` holds the resolved numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<cores::Cores>,
    /// `--threads 4,16,64`: several client-thread counts, each its own group of arms (A, A′ and every variant
    /// at that count, judged only against that count's A); empty with one count (`threads`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thread_counts: Vec<u32>,
    /// `--install-engine`: RocksDB, when a table variant needs it and the server has the plugin but has not
    /// loaded it, is loaded through innops's drop-in and a restart ([`engine`]) and unloaded at the end.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub install_engine: bool,
    /// In one group of several: its thread count (its step ids and figure files start `t{N}-`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
}

/// A study file's own words, kept in plan.json and shown in the plan's notes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyInfo {
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The arms and the order they run in: each arm's configuration of restart values, and the sequence of
/// arm-runs and restarts.
pub struct Layout {
    pub arms: Vec<Arm>,
    pub config_of: Vec<usize>,
    pub configs: Vec<Vec<Setting>>,
    pub sequence: Vec<schedule::Slot>,
}

impl Layout {
    /// Restarts in all: the ones between arms, and the one back to the original values at the end when the
    /// last arms ran in another configuration.
    pub fn restarts(&self) -> usize {
        let between = self
            .sequence
            .iter()
            .filter(|s| matches!(s, schedule::Slot::Restart { .. }))
            .count();
        between + usize::from(schedule::last_config(&self.sequence) != 0)
    }
}

impl ExperimentParams {
    pub fn is_restart(&self, name: &str) -> bool {
        self.restart_vars.iter().any(|v| v == name)
    }

    /// The baseline of the restart variables.
    pub fn restart_baseline(&self) -> Vec<Setting> {
        self.restart_part(&self.baseline)
    }

    /// The baseline of the variables set with `SET GLOBAL`.
    pub fn online_baseline(&self) -> Vec<Setting> {
        self.online_part(&self.baseline)
    }

    pub fn restart_part(&self, settings: &[Setting]) -> Vec<Setting> {
        settings
            .iter()
            .filter(|s| self.is_restart(&s.name))
            .cloned()
            .collect()
    }

    pub fn online_part(&self, settings: &[Setting]) -> Vec<Setting> {
        settings
            .iter()
            .filter(|s| !self.is_restart(&s.name) && s.name != tables::TABLE)
            .cloned()
            .collect()
    }

    /// The arms, their configurations and the order of arm-runs and restarts.
    pub fn layout(&self) -> Layout {
        let arms = self.arms();
        let (config_of, configs) = schedule::configs(&arms, &self.restart_vars, &self.baseline);
        let sequence = schedule::sequence(&config_of, configs.len(), self.rounds);
        Layout {
            arms,
            config_of,
            configs,
            sequence,
        }
    }

    /// Every arm: A, A′, then the variants: the `--set` values crossed (or zipped, with `--zip`), each of those
    /// with each table variant.
    pub fn arms(&self) -> Vec<Arm> {
        let sets: Vec<(String, Vec<String>)> = self
            .sets
            .iter()
            .map(|s| (s.name.clone(), s.values.clone()))
            .collect();
        let mut variants = if self.zip {
            values::zip(&sets)
        } else {
            figures::cross(&sets)
        };
        let mut baseline = self.baseline.clone();
        if !self.tables.is_empty() {
            variants = values::with_each(&variants, tables::TABLE, &self.tables);
            baseline.push(Setting {
                name: tables::TABLE.into(),
                value: tables::ORIGINAL.into(),
            });
        }
        figures::arms(&baseline, &variants)
    }

    /// How many variant arms the settings make (before the baseline's two).
    pub fn variant_count(&self) -> usize {
        let sets = if self.zip {
            self.sets.first().map_or(1, |s| s.values.len())
        } else {
            self.sets.iter().map(|s| s.values.len()).product::<usize>()
        };
        sets * self.tables.len().max(1)
    }

    /// The workload as the baseline runs it (an SQL workload's `{column}` references as their expressions).
    pub fn workload_kind(&self) -> anyhow::Result<crate::bench::Workload> {
        match &self.sql {
            Some(w) => workload_sql::workload(self, w, None),
            None => crate::bench::Workload::parse(&self.workload),
        }
    }

    /// The workload `arm` runs, on its own table.
    pub fn arm_workload(&self, arm: &Arm) -> anyhow::Result<crate::bench::Workload> {
        match &self.sql {
            Some(w) => workload_sql::workload(self, w, tables::copy_of(self, arm)),
            None => crate::bench::Workload::parse(&self.workload),
        }
    }

    /// The workload each arm runs, `seconds` long (for an SQL workload, the sysbench read-only script on the
    /// same tables: what prepares them; each arm-run puts its SQL in its place).
    pub fn bench(&self, seconds: u64) -> PlanBench {
        PlanBench {
            workload: if self.sql.is_some() {
                crate::bench::Workload::ReadOnly.name()
            } else {
                self.workload.clone()
            },
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

    /// The load guard of the arms' runs: `--max-load` (default `Threads_running=25`, or the critical value when
    /// that is lower on the same variable) and `--critical-load` (default `Threads_running=50`), the workload's
    /// own threads taken off the per-session variables.
    pub fn guard(&self) -> sampler::Guard {
        let critical = self
            .critical_load
            .clone()
            .unwrap_or(crate::plan::guard::Threshold {
                variable: "Threads_running".into(),
                value: 50,
            });
        let max = self
            .max_load
            .clone()
            .unwrap_or_else(|| crate::plan::guard::Threshold {
                variable: "Threads_running".into(),
                value: if critical.variable.eq_ignore_ascii_case("Threads_running") {
                    critical.value.min(25)
                } else {
                    25
                },
            });
        sampler::Guard {
            max,
            critical,
            own: u64::from(self.threads),
        }
    }

    /// Seconds of load the experiment puts on the server, warm-ups included.
    pub fn load_seconds(&self) -> u64 {
        self.groups().len() as u64
            * self.arms().len() as u64
            * u64::from(self.rounds)
            * (self.time_s + self.warmup_s)
    }
}

/// Check the settings that need no server: the workload, the counts, how many arms.
pub fn check_shape(p: &ExperimentParams) -> anyhow::Result<()> {
    workload_sql::check(p)?;
    let workload = p.workload_kind()?;
    if p.sets.is_empty() && p.tables.is_empty() {
        return Err(bad_input(
            "an experiment needs at least one --set VAR=v1,v2 (for example --set innodb_io_capacity=200,2000) or --table-option (for example --table-option 'ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8')",
        ));
    }
    if !p.tables.is_empty()
        && (workload.real_table().is_some() || workload == crate::bench::Workload::BulkInsert)
    {
        return Err(bad_input(format!(
            "--table-option runs the workload on copies of innops's sbtest1, which {} does not use: give an oltp_* workload",
            p.workload
        )));
    }
    if p.rounds == 0 || p.time_s == 0 || p.threads == 0 {
        return Err(bad_input(
            "--rounds, --time and --threads must each be at least 1: give a positive number",
        ));
    }
    if p.zip {
        values::check_zip(&p.sets)?;
    }
    threads::check_counts(p)?;
    if engine::planned(p) && p.keep_best {
        return Err(bad_input(
            "--install-engine and --keep best do not go together yet (the engine is unloaded at the end, and --keep best keeps variables only): run the engine study without --keep best",
        ));
    }
    let variants = p.variant_count();
    if variants > MAX_VARIANTS {
        return Err(bad_input(format!(
            "the --set values {} into {variants} variants, more than the {MAX_VARIANTS} one experiment runs: give fewer values or fewer --set flags",
            if p.zip { "zip" } else { "cross" }
        )));
    }
    Ok(())
}

/// Each variable's current value, after checking that it exists and that the server can give it a global
/// value; and the names of those it changes only at a restart (read-only while it runs). Bad input
/// otherwise, in one sentence.
pub fn baseline(
    conn: &mut mysql::Conn,
    facts: &ServerFacts,
    sets: &[VarValues],
) -> anyhow::Result<(Vec<Setting>, Vec<String>)> {
    let mut out = Vec::new();
    let mut restart = Vec::new();
    for s in sets {
        let Some(now) = facts.var(&s.name) else {
            let fix =
                values::removed(&s.name).unwrap_or("check its spelling in SHOW GLOBAL VARIABLES");
            return Err(bad_input(format!(
                "{} has no variable {}: {fix}",
                facts.version_string, s.name
            )));
        };
        match values::how_set(conn, &s.name, "/* innops:experiment:preflight */")? {
            values::HowSet::Online => {}
            values::HowSet::Restart => restart.push(s.name.clone()),
            values::HowSet::Never(why) => {
                return Err(bad_input(format!(
                    "{} {why}: experiment with a global server variable",
                    s.name
                )))
            }
        }
        out.push(Setting {
            name: s.name.clone(),
            value: now.to_string(),
        });
    }
    Ok((out, restart))
}

/// The plan: preflight, the benchmark tables, one step per arm and round (and a restart step wherever the
/// restart variables' values change), restore, verdict, and keep-best with `--keep best`.
pub fn plan(p: &ExperimentParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    check_shape(p)?;
    cores::check_resolved(&p.sets)?;
    let layout = p.layout();
    let mut header = env.header(
        Procedure::Experiment,
        facts,
        serde_json::to_value(p)?,
        notes::notes(p, &layout),
    );
    let mut steps = vec![preflight(p, env, facts), prepare_step(p)];
    if engine::planned(p) {
        steps.push(engine::load_step(p, &env.dropin));
        steps.extend(restarts::after(
            "engine-load",
            env,
            facts,
            &mut header.notes,
        ));
    }
    if !p.tables.is_empty() {
        steps.extend((0..=p.tables.len()).map(|n| tables::build_step(p, n)));
    }
    let target = |id: String, config: usize| restarts::Target {
        id,
        config,
        values: layout.configs[config].clone(),
    };
    // One group of arms per client-thread count, one after the other (check_thread_counts keeps restart
    // variables to a single group, so `layout`'s restarts are the only ones).
    for g in p.groups() {
        let layout = g.layout();
        for slot in &layout.sequence {
            match *slot {
                schedule::Slot::Restart { n, config } => {
                    let id = format!("restart-{n}");
                    steps.push(restarts::step(&g, &env.dropin, target(id.clone(), config)));
                    steps.extend(restarts::after(&id, env, facts, &mut header.notes));
                }
                schedule::Slot::Run { round, arm } => {
                    let config = layout.config_of[arm];
                    let cfg = (!g.restart_vars.is_empty())
                        .then(|| (config, layout.configs[config].clone()));
                    steps.push(arm_run::step(&g, &layout.arms[arm], round, cfg));
                }
            }
        }
    }
    if !p.tables.is_empty() {
        steps.push(tables::drop_step(p));
    }
    if !p.restart_vars.is_empty() {
        steps.push(restarts::step(
            p,
            &env.dropin,
            target("restore-config".into(), 0),
        ));
        steps.extend(restarts::after(
            "restore-config",
            env,
            facts,
            &mut header.notes,
        ));
    }
    if engine::planned(p) {
        steps.push(engine::unload_step(p, &env.dropin));
        steps.extend(restarts::after(
            "engine-unload",
            env,
            facts,
            &mut header.notes,
        ));
    }
    if !p.online_baseline().is_empty() {
        steps.push(restore_step(p));
    }
    steps.push(verdict_step(p));
    if p.keep_best {
        steps.push(keep::keep_step(p, env, facts));
    }
    Ok(Plan {
        header,
        steps,
        bench: None,
        locks: vec!["experiment".into(), crate::plan::lock::SERVER.into()],
        session: Vec::new(),
    })
}

/// Each variable exists, can change as the experiment means to change it (online, or at a restart), and is at
/// its baseline now; for restart variables, innops can restart the server and write its drop-in, and the option
/// files give each its running value at the next start; the workload can run.
fn preflight(p: &ExperimentParams, env: &PlanEnv, facts: &ServerFacts) -> Step {
    let mut step = Step::new(
        "preflight",
        "Check each variable can be changed and is at its baseline",
        Risk::Read,
    );
    for b in &p.baseline {
        let b = b.clone();
        let restart = p.is_restart(&b.name);
        let name = if restart {
            format!("{} takes a restart", b.name)
        } else {
            format!("{} is dynamic", b.name)
        };
        step = step.pre(Check::new(name, {
            let name = b.name.clone();
            move |ctx| {
                let tag = ctx.tag();
                let how = values::how_set(ctx.conn()?, &name, &tag)?;
                let want = if restart { values::HowSet::Restart } else { values::HowSet::Online };
                let describe = |h: &values::HowSet| match h {
                    values::HowSet::Online => "changes with SET GLOBAL".to_string(),
                    values::HowSet::Restart => "read-only while the server runs".to_string(),
                    values::HowSet::Never(why) => why.clone(),
                };
                Ok(Verdict::check(
                    how == want,
                    describe(&how),
                    describe(&want),
                    format!("{name} changed how it can be set since the plan was made: run the experiment again"),
                ))
            }
        }));
        if restart {
            step = step.pre(next_start_check(&b, env, facts));
        }
        step = step.pre(Check::new(
            format!("{} is at its baseline {}", b.name, b.value),
            move |ctx| values::reads_back(ctx, &b, "the experiment's baseline"),
        ));
    }
    if !p.tables.is_empty() {
        step = step.pre(tables::names_free_check(p.tables.len() + 1));
    }
    if p.keep_best && p.restart_vars.is_empty() {
        // --keep best writes a dynamic winner into the drop-in too (with restart variables the check below).
        step = step.pre(crate::procedures::kit::checks::dropin_writable(&env.dropin));
    }
    if !p.restart_vars.is_empty() || engine::planned(p) {
        step = step
            .pre(crate::procedures::kit::checks::control_present(
                crate::procedures::kit::checks::ControlNeed {
                    name: "server control",
                    needed: true,
                    expected: "available: restart variables and --install-engine take a restart",
                    fix: "restart variables and --install-engine take a restart and innops was not told how to restart this server: pass --sandbox NAME, --service systemd:UNIT or --start-cmd/--stop-cmd",
                },
            ))
            .pre(crate::procedures::kit::checks::dropin_writable(&env.dropin));
        if facts.topology.role() == crate::server::topology::Role::Replica {
            step = step.pre(crate::procedures::kit::replication::runs_check(
                facts.flavor == crate::server::facts::Flavor::MariaDB,
            ));
        }
    }
    if let Some(name) = p.sets.iter().find(|s| values::needs_binlog(&s.name)) {
        step = step.pre(binlog_check(name.name.clone()));
    }
    let workload = p.workload.clone();
    let writes = p.workload_kind().map_or(true, |w| !w.is_read_only());
    step.pre(Check::new("the workload can run here", move |ctx| {
        let tag = ctx.tag();
        let ro: Option<(i64, i64)> = crate::sql::Queryable::query_first(
            ctx.conn()?,
            format!("SELECT {tag} @@innodb_read_only, @@read_only"),
        )?;
        let read_only = ro.is_some_and(|(a, b)| a != 0 || b != 0);
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

/// The option files, read as the server reads them, give restart variable `b` its running value at the next
/// start (or do not set it): else the restart that ends the experiment would not bring the server back as it
/// was.
fn next_start_check(b: &Setting, env: &PlanEnv, facts: &ServerFacts) -> Check {
    let (b, file, version) = (
        b.clone(),
        env.option_file.clone(),
        facts.version_string.clone(),
    );
    Check::new(
        format!("the option files give {} its running value", b.name),
        move |_| {
            let expected = format!("{} = {} or unset", b.name, b.value);
            let Some(file) = &file else {
                return Ok(Verdict::pass(
                    "not checked: the server's option file is unknown (pass --config-file)",
                    expected,
                ));
            };
            let got = crate::procedures::kit::dropin::effective_config(file, &b.name, &version)?;
            Ok(match got {
            None => Verdict::pass(format!("{} does not set {}", file.display(), b.name), expected),
            Some(v) => Verdict::check(
                values::same_value(&b.value, &v),
                format!("{} sets {} = {v}", file.display(), b.name),
                expected,
                format!("the option files set {} = {v} but the server runs with {}, so a restart would not bring it back as it is: make them agree first", b.name, b.value),
            ),
        })
        },
    )
}

/// A variable that acts only on the binary log (`sync_binlog`) is varied only where the server writes one:
/// without it every arm would measure the same thing, and the verdict would say "no difference" of a setting
/// that was never in force.
fn binlog_check(name: String) -> Check {
    Check::new("the binary log is on", move |ctx| {
        let tag = ctx.tag();
        let on: Option<i64> =
            crate::sql::Queryable::query_first(ctx.conn()?, format!("SELECT {tag} @@log_bin"))?;
        Ok(Verdict::check(
            on == Some(1),
            if on == Some(1) { "log_bin = ON" } else { "log_bin = OFF" },
            "log_bin = ON",
            format!("{name} acts only on the binary log and this server writes none: start it with log_bin (a sandbox: innops sandbox up NAME --binlog), or leave {name} out"),
        ))
    })
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
    for b in &p.online_baseline() {
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
    let baseline = p.online_baseline();
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
