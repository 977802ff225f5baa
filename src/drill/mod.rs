//! `innops drill`: the staging drill playbook (`playbooks/staging-drill.toml`) on a fresh sandbox, as **one**
//! plan: one run directory, one journal, one benchmark before and after, one report (text, `report.json`,
//! `report.html`), resumable with `innops resume`. The playbook runs every procedure innops has: the redo resize
//! online and offline, MyISAM → InnoDB by the bulk and the deferred paths, the deadlock scenarios (with detection
//! off too), read-only and back, and a forced-recovery dump.
//!
//! What only a sandbox drill may do stays here, apart from the playbook: before the playbook is planned the drill
//! creates its tables ([`setup`]); its own members of the plan ([`crate::procedures::drill`]) check that setup, check that the
//! redo size survived the restarts, damage leaf pages of `drill.damaged` just before the recovery, and set what
//! the recovery got back against the limit and `mariadb-dump`. A playbook cannot name them.
//!
//! The order (the playbook's, and where the drill's members go) is explained in docs/sandbox.md ("The drill").

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::plan::report::Report;
use crate::plan::runner::{self, RunOptions};
use crate::plan::Plan;
use crate::playbook::{self, Checked, FlagValue, Setting};
use crate::procedures::PlanEnv;
use crate::server::control::Control;
use crate::server::facts::ServerFacts;
use crate::server::sandbox::{Sandbox, SandboxOptions};
use crate::sql::Queryable;

use crate::procedures::drill as members;
use members::{DamageParams, DrillSandbox, FiguresParams, SetupParams, SetupTable};

/// The staging drill playbook, as the drill runs it.
pub const PLAYBOOK: &str = include_str!("../../playbooks/staging-drill.toml");
pub const PLAYBOOK_FILE: &str = "playbooks/staging-drill.toml";

/// The drill's schema and the table the recovery works on.
const DB: &str = "drill";
const DAMAGED_TABLE: &str = "damaged";

/// The recovery's table: sysbench's shape, InnoDB, about 270 leaf pages.
const DAMAGED: &str = "CREATE TABLE /* innops:drill:setup */ `drill`.`damaged` (id INT UNSIGNED NOT NULL PRIMARY KEY, \
    k INT UNSIGNED NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', \
    KEY k_1 (k)) ENGINE=InnoDB";
const DAMAGED_ROWS: u64 = 20_000;

/// The tables the conversions convert: sysbench's shape, with secondary indexes.
const ORDERS: &str = "CREATE TABLE /* innops:drill:setup */ `drill`.`{t}` (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
    k INT UNSIGNED NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', \
    KEY k_1 (k), KEY c_1 (c(20))) ENGINE=MyISAM";
const ORDERS_ROWS: u64 = 50_000;

/// The drill's setup: the tables its playbook names, made before the playbook is planned (a conversion is
/// planned from the tables it finds). MariaDB's sequence engine gives the rows. Public so a test can make a
/// sandbox the playbook's dry run works on.
pub fn setup(conn: &mut mysql::Conn) -> anyhow::Result<Vec<SetupTable>> {
    conn.query_drop("CREATE DATABASE /* innops:drill:setup */ IF NOT EXISTS `drill`")?;
    let mut made = Vec::new();
    for table in ["orders", "orders2"] {
        conn.query_drop(ORDERS.replace("{t}", table))?;
        conn.query_drop(format!(
            "INSERT /* innops:drill:setup */ INTO `drill`.`{table}` (k, c, pad) SELECT seq % 997, CONCAT('c-', seq), REPEAT('p', seq % 60) FROM `drill`.`seq_1_to_{ORDERS_ROWS}`"
        ))?;
        made.push(SetupTable {
            db: DB.into(),
            table: table.into(),
            engine: "MyISAM".into(),
            rows: ORDERS_ROWS,
        });
    }
    conn.query_drop(DAMAGED)?;
    conn.query_drop(format!(
        "INSERT /* innops:drill:setup */ INTO `drill`.`damaged` SELECT seq, seq * 7919 % {DAMAGED_ROWS}, \
         CONCAT_WS('-', seq * 7, seq * 11, seq * 13, seq * 17, seq * 19, seq * 23), CONCAT_WS('-', seq * 43, seq * 47) \
         FROM `drill`.`seq_1_to_{DAMAGED_ROWS}`"
    ))?;
    made.push(SetupTable {
        db: DB.into(),
        table: DAMAGED_TABLE.into(),
        engine: "InnoDB".into(),
        rows: DAMAGED_ROWS,
    });
    Ok(made)
}

/// What the drill does, validated.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where the drill's sandbox is created.
    pub root: PathBuf,
    /// The run directory (default ./innops-runs/<time>-drill).
    pub out: Option<PathBuf>,
    /// Keep the sandbox afterwards.
    pub keep: bool,
}

/// How the drill reaches its sandbox: the command layer resolves a sandbox name into the plan's environment
/// and the server's control, as `--sandbox NAME` would, so the plan sees what a person's run would see.
pub type Resolve<'a> = &'a dyn Fn(&str) -> anyhow::Result<(PlanEnv, Option<Control>)>;

/// How the drill plans the playbook's members: the command layer turns each member's settings into its
/// procedure's parameters as `innops run` does.
pub type PlanMembers<'a> =
    &'a dyn Fn(&Checked, &Path, &str, &ServerFacts, &PlanEnv) -> anyhow::Result<Vec<Plan>>;

/// The drill's run: its report, how it ended, and what became of the sandbox.
pub struct Outcome {
    pub report: Report,
    pub result: anyhow::Result<()>,
    /// One sentence: the sandbox removed, or kept and why.
    pub sandbox: String,
}

/// Set (or add) a member's setting, as if the playbook said so: the drill's own directories for the recovery.
fn set(m: &mut playbook::Member, key: &'static str, value: String) {
    let span = m.span.clone();
    let settings = &mut m.settings;
    settings.retain(|s| s.key != key);
    settings.push(Setting {
        key,
        span,
        value: FlagValue::Text(value),
    });
}

pub fn run(
    settings: &Settings,
    resolve: Resolve,
    plan_members: PlanMembers,
    abort: &AtomicBool,
) -> anyhow::Result<Outcome> {
    let root = &settings.root;
    let out = std::path::absolute(
        settings
            .out
            .clone()
            .unwrap_or_else(|| crate::plan::journal::RunDir::default_path("drill")),
    )?;
    if out.join("journal.jsonl").exists() {
        return Err(crate::error::bad_input(format!(
            "{} already holds a run: continue it with `innops resume {}` or give another --out",
            out.display(),
            out.display()
        )));
    }
    // Before any sandbox exists: an --out that cannot be the run directory would otherwise fail only when the
    // run starts, and leave the drill's sandbox running with nothing to resume.
    if out.exists() && !out.is_dir() {
        return Err(crate::error::bad_input(format!(
            "--out {} is a file, not a directory: give a directory for the drill's run (it is made if missing)",
            out.display()
        )));
    }
    crate::plan::journal::create_private_dir(&out).map_err(|e| {
        crate::error::bad_input(format!(
            "--out {} cannot be made ({}): give a directory you can write",
            out.display(),
            crate::error::display_of(&e)
        ))
    })?;
    let name = format!("drill-{}", chrono::Utc::now().format("%Y%m%d%H%M%S%3f"));
    eprintln!(
        "innops drill: creating sandbox '{name}' in {}",
        root.display()
    );
    let mut sb = Sandbox::create(
        root,
        &name,
        &SandboxOptions {
            binlog: false,
            replica: false,
            buffer_pool: Some("128M".into()),
            extra: Vec::new(),
        },
    )?;
    let planned = (|| -> anyhow::Result<(Plan, PlanEnv, Option<Control>)> {
        sb.start(&[], Duration::from_secs(600))?;
        eprintln!("innops drill: setup (the drill's tables, before the playbook is planned)");
        let tables = setup(&mut sb.conn_spec().resolve_plain().connect()?)?;
        let (plan_env, control) = resolve(&name)?;
        let facts = ServerFacts::collect(&mut plan_env.target.connect()?)?;
        let plan = plan(&out, &sb, tables, &facts, &plan_env, plan_members)?;
        Ok((plan, plan_env, control))
    })();
    let (plan, plan_env, control) = match planned {
        Ok(p) => p,
        Err(e) => {
            if !settings.keep {
                let _ = sb.destroy();
            }
            return Err(e);
        }
    };
    let opts = RunOptions {
        execute: true,
        yes: true,
        run_dir: Some(out.clone()),
        no_bench: false,
    };
    let (report, result) =
        runner::run(plan, &plan_env.target, control.as_ref(), &opts, abort, None);
    // A run that never started (no journal) has nothing to resume: its sandbox goes as if it had finished.
    let started = out.join("journal.jsonl").exists();
    let sandbox = if (result.is_ok() || !started) && !settings.keep {
        match Sandbox::open(root, &name).and_then(|s| s.destroy()) {
            Ok(()) => format!("the drill's sandbox {name} is removed"),
            Err(e) => format!(
                "the drill's sandbox {name} could not be removed ({}): remove it with `innops sandbox down {name} --sandbox-root {}`",
                crate::error::display_of(&e),
                root.display()
            ),
        }
    } else if result.is_ok() {
        format!(
            "the drill's sandbox {name} is kept (--keep): remove it with `innops sandbox down {name} --sandbox-root {}`",
            root.display()
        )
    } else {
        format!(
            "the drill's sandbox {name} is kept: continue with `innops resume {}`, or remove it with `innops sandbox down {name} --sandbox-root {}`",
            out.display(),
            root.display()
        )
    };
    Ok(Outcome {
        report,
        result,
        sandbox,
    })
}

/// The drill's plan: the playbook's members with the drill's own around them, joined as one `drill` plan.
fn plan(
    out: &Path,
    sb: &Sandbox,
    tables: Vec<SetupTable>,
    facts: &ServerFacts,
    env: &PlanEnv,
    plan_members: PlanMembers,
) -> anyhow::Result<Plan> {
    let file = Path::new(PLAYBOOK_FILE);
    let mut checked = playbook::parse(file, PLAYBOOK)?;
    let dump = out.join("recover-dump");
    // The recovery writes into the run directory, with the sandbox's own server binary.
    for m in checked
        .members
        .iter_mut()
        .filter(|m| m.procedure == crate::plan::Procedure::Recover)
    {
        set(m, "out", dump.display().to_string());
        set(m, "copy-to", out.join("recover-copy").display().to_string());
        set(m, "mariadbd", sb.binary.display().to_string());
    }
    let members = plan_members(&checked, file, PLAYBOOK, facts, env)?;
    let drill_sb = DrillSandbox {
        root: sb.dir.parent().unwrap_or(Path::new("/")).to_path_buf(),
        name: sb.name.clone(),
    };
    let redo_size = members
        .iter()
        .rev()
        .find(|p| p.header.procedure == crate::plan::Procedure::Redo)
        .and_then(|p| p.header.params["size"].as_u64());
    let mut plans = vec![members::setup_plan(
        &SetupParams {
            sandbox: drill_sb.clone(),
            tables,
        },
        facts,
        env,
    )?];
    for p in members {
        let recover = p.header.procedure == crate::plan::Procedure::Recover;
        if recover {
            plans.push(members::damage_plan(
                &DamageParams {
                    sandbox: drill_sb.clone(),
                    db: DB.into(),
                    table: DAMAGED_TABLE.into(),
                    redo_size,
                },
                facts,
                env,
            )?);
        }
        plans.push(p);
        if recover {
            plans.push(members::figures_plan(
                &FiguresParams {
                    sandbox: drill_sb.clone(),
                    db: DB.into(),
                    table: DAMAGED_TABLE.into(),
                    dump: dump.clone(),
                },
                facts,
                env,
            )?);
        }
    }
    let mut plan = playbook::combine(
        crate::plan::Procedure::Drill,
        PLAYBOOK_FILE,
        checked.playbook.description.as_deref(),
        plans,
        facts,
        env,
    )?;
    // `[bench] during`, as `innops run` takes it: the workload runs through the whole drill.
    if let Some(threads) = checked.playbook.bench.during_threads(file, PLAYBOOK)? {
        crate::plan::runner::set_bench_during(&mut plan, threads, false)?;
    }
    Ok(plan)
}
