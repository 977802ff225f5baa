//! The drill's own members of its plan: what only a sandbox drill may do, kept apart from the playbook. A
//! playbook cannot name them (its parser knows only the real procedures), a playbook's `plan.json` cannot carry
//! them into `innops resume` (only a `drill` plan rebuilds them), and every step that changes anything first
//! checks that the server is the drill's own sandbox (`drill-…`, controlled as that sandbox).
//!
//! - `drill-setup/tables`, first: the tables the drill created before the playbook was planned are there.
//! - `drill-damage/redo-size`: the size the last redo step set is in force after the restarts since.
//! - `drill-damage/damage`, just before the recovery: leaf pages of `drill.damaged` damaged with the server
//!   stopped after a slow shutdown, then started without the buffer-pool load (FACTS §4).
//! - `drill-figures/recovery`, after it: what `innops recover` got back, against the limit (every row not on a
//!   damaged page) and against `mariadb-dump` on the same damaged files.

pub mod damage;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::dump::Manifest;
use crate::error::{bad_input, refused};
use crate::plan::{Check, Ctx, Plan, PlanHeader, Procedure, Risk, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::server::control::ControlSpec;
use crate::server::facts::ServerFacts;
use crate::server::sandbox::Sandbox;
use crate::sql::{qualified, Queryable};

/// The drill's sandbox, as every member names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrillSandbox {
    pub root: PathBuf,
    pub name: String,
}

/// A table the setup made: `db`.`table`, its engine and its rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupTable {
    pub db: String,
    pub table: String,
    pub engine: String,
    pub rows: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetupParams {
    pub sandbox: DrillSandbox,
    pub tables: Vec<SetupTable>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DamageParams {
    pub sandbox: DrillSandbox,
    pub db: String,
    pub table: String,
    /// The redo size the last redo member set (bytes), checked before the damage.
    pub redo_size: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FiguresParams {
    pub sandbox: DrillSandbox,
    pub db: String,
    pub table: String,
    /// The recovery's dump directory (its `--out`).
    pub dump: PathBuf,
}

/// What the damage step did, written to `drill-damage.json` in the run directory before the first byte is
/// damaged, so a resumed step damages the same pages and the figures step judges against it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DamageRecord {
    pub table: String,
    pub file: PathBuf,
    /// Pages damaged, in key order.
    pub pages: Vec<u32>,
    pub expected: damage::Expected,
}

/// What the recovery got back, against the limit and mariadb-dump.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecoveryFigures {
    pub table: String,
    pub damaged_pages: Vec<u32>,
    pub rows_before: u64,
    pub rows_on_damaged_pages: u64,
    /// Every row not on a damaged page: what a perfect recovery gets back.
    pub limit: u64,
    /// Rows in `innops recover`'s dump (its manifest).
    pub innops: u64,
    /// Of them, rows the SQL reads wrote, and rows the page pass read from the data file (0 when it did not run).
    #[serde(default)]
    pub innops_sql: u64,
    #[serde(default)]
    pub innops_pages: u64,
    /// Whether the recovery's page pass ran on the table, and why (its manifest's word).
    #[serde(default)]
    pub page_pass: Option<crate::dump::manifest::PagePass>,
    /// Rows in `mariadb-dump`'s output from the same damaged files (None: not run).
    pub mariadb_dump: Option<u64>,
    /// mariadb-dump's exit code, or why it did not run.
    pub mariadb_dump_exit: String,
    /// Lost ranges as `innops recover` reported them: (after, before), exclusive, None = the table's end.
    pub innops_lost: Vec<(Option<u64>, Option<u64>)>,
    /// The exact lost ranges, from the keys on the damaged pages.
    pub exact_lost: Vec<(Option<u64>, Option<u64>)>,
}

const RECORD: &str = "drill-damage.json";

/// The server is the drill's own sandbox: controlled as that sandbox, named `drill-…`, and on disk.
fn sandbox_check(sb: &DrillSandbox) -> Check {
    let sb = sb.clone();
    Check::new("the server is the drill's own sandbox", move |ctx| {
        let spec = ctx.control.map(|c| c.spec.clone());
        let ours = matches!(&spec, Some(ControlSpec::Sandbox { root, name }) if *root == sb.root && *name == sb.name);
        let on_disk = Sandbox::open(&sb.root, &sb.name).is_ok();
        Ok(Verdict::check(
            ours && on_disk && sb.name.starts_with("drill-"),
            match &spec {
                Some(ControlSpec::Sandbox { name, .. }) => format!("sandbox {name}"),
                Some(_) => "a server that is no sandbox".into(),
                None => "a server innops cannot control".into(),
            },
            format!("sandbox {} in {}", sb.name, sb.root.display()),
            "the drill's own steps run only on the sandbox `innops drill` created: run the drill again",
        ))
    })
}

/// `drill-setup`: one step that checks the tables the setup made are there, as made.
pub fn setup_plan(p: &SetupParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    let mut step = Step::new(
        "tables",
        "The tables the drill created before the playbook was planned",
        Risk::Read,
    )
    .pre(sandbox_check(&p.sandbox));
    for t in &p.tables {
        let t = t.clone();
        step = step.pre(Check::new(
            format!("{}.{} is {} with {} rows", t.db, t.table, t.engine, t.rows),
            move |ctx| {
                let tag = ctx.tag();
                let engine: Option<String> = ctx.conn()?.exec_first(
                    format!("SELECT {tag} ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"),
                    (&t.db, &t.table),
                )?;
                let rows: Option<u64> = match engine {
                    Some(_) => ctx
                        .conn()?
                        .query_first(format!("SELECT {tag} COUNT(*) FROM {}", qualified(&t.db, &t.table)))?,
                    None => None,
                };
                Ok(Verdict::check(
                    engine.as_deref() == Some(t.engine.as_str()) && rows == Some(t.rows),
                    match (&engine, rows) {
                        (Some(e), Some(r)) => format!("{e}, {r} rows"),
                        _ => "missing".into(),
                    },
                    format!("{}, {} rows", t.engine, t.rows),
                    "the drill's setup did not make this table: run the drill again on a fresh sandbox",
                ))
            },
        ));
    }
    let notes = vec![format!(
        "before the playbook was planned the drill created {}; its own steps (drill-…) run only on its sandbox",
        p.tables
            .iter()
            .map(|t| format!("{}.{} ({}, {} rows)", t.db, t.table, t.engine, t.rows))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    Ok(Plan {
        header: env.header(
            Procedure::DrillSetup,
            facts,
            serde_json::to_value(p)?,
            notes,
        ),
        steps: vec![step],
        bench: None,
        locks: Vec::new(),
        session: Vec::new(),
    })
}

/// `drill-damage`: the redo size after the restarts, then the damage.
pub fn damage_plan(p: &DamageParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    let mut steps = Vec::new();
    if let Some(size) = p.redo_size {
        steps.push(
            Step::new(
                "redo-size",
                "The redo size the redo steps set survives the restarts since",
                Risk::Read,
            )
            .post(Check::new("innodb_log_file_size after the restarts", move |ctx| {
                let tag = ctx.tag();
                let now: Option<u64> = ctx
                    .conn()?
                    .query_first(format!("SELECT {tag} @@GLOBAL.innodb_log_file_size"))?;
                let f = |b: u64| crate::units::format_size(b);
                Ok(Verdict::check(
                    now == Some(size),
                    now.map(f).unwrap_or_else(|| "unknown".into()),
                    f(size),
                    "the redo size did not survive a restart: read innops's drop-in and the option files",
                ))
            })),
        );
    }
    let target = format!("{}.{}", p.db, p.table);
    let pd = p.clone();
    steps.push(
        Step::new(
            "damage",
            format!("Damage leaf pages of {target} (slow shutdown, overwrite, start without the buffer-pool load)"),
            Risk::Destructive,
        )
        .preview("SET GLOBAL innodb_fast_shutdown = 0; SHUTDOWN")
        .preview(format!("512 bytes of 0xA5 into four leaf pages of {}/{}.ibd", p.db, p.table))
        .preview("mariadbd … --innodb-buffer-pool-load-at-startup=OFF")
        .pre(sandbox_check(&p.sandbox))
        .pre(Check::new(format!("{target} is a file-per-table InnoDB table"), {
            let p = p.clone();
            move |ctx| {
                let tag = ctx.tag();
                let engine: Option<String> = ctx.conn()?.exec_first(
                    format!("SELECT {tag} ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"),
                    (&p.db, &p.table),
                )?;
                Ok(Verdict::check(
                    engine.as_deref() == Some("InnoDB"),
                    engine.unwrap_or_else(|| "missing".into()),
                    "InnoDB",
                    "the drill damages only its own InnoDB table: run the drill again on a fresh sandbox",
                ))
            }
        }))
        .act(move |ctx| damage_act(ctx, &pd))
        .post(Check::new("the server answers, started without the buffer-pool load", |ctx| {
            ctx.drop_conn();
            let tag = ctx.tag();
            let load: Option<String> = ctx
                .conn()?
                .query_first(format!("SELECT {tag} @@GLOBAL.innodb_buffer_pool_load_at_startup"))?;
            Ok(Verdict::check(
                matches!(load.as_deref(), Some("0") | Some("OFF")),
                format!("up, innodb_buffer_pool_load_at_startup={}", load.as_deref().unwrap_or("?")),
                "up, innodb_buffer_pool_load_at_startup=0 (the dump lists pages the damage is on)",
                "start the sandbox with --innodb-buffer-pool-load-at-startup=OFF",
            ))
        }))
        .post(Check::new("the damage is in the table's file", move |ctx| {
            let Some(rec) = ctx.run_dir.as_ref().and_then(|d| read_record(d).ok()) else {
                return Ok(Verdict::fail(
                    format!("no {RECORD} in the run directory"),
                    "the pages damaged",
                    "the damage step did not finish: run it again (innops resume does)",
                ));
            };
            let bad: Vec<u32> = rec
                .pages
                .iter()
                .copied()
                .filter(|&pg| !damage::is_damaged(&rec.file, pg).unwrap_or(false))
                .collect();
            Ok(Verdict::check(
                bad.is_empty() && !rec.pages.is_empty(),
                format!("pages {} damaged", list(&rec.pages)),
                "every chosen page damaged",
                format!("pages {} are intact: run the damage step again", list(&bad)),
            ))
        })),
    );
    let notes = vec![format!(
        "after the last step that restarts the server: {target}'s leaf pages are damaged with the server stopped after a slow shutdown, and it starts without loading the buffer-pool dump (which lists those pages); no member before the recovery reads them"
    )];
    Ok(Plan {
        header: env.header(
            Procedure::DrillDamage,
            facts,
            serde_json::to_value(p)?,
            notes,
        ),
        steps,
        bench: None,
        locks: Vec::new(),
        session: Vec::new(),
    })
}

fn list(pages: &[u32]) -> String {
    pages
        .iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn read_record(run_dir: &Path) -> anyhow::Result<DamageRecord> {
    let text = std::fs::read_to_string(run_dir.join(RECORD))?;
    Ok(serde_json::from_str(&text)?)
}

fn damage_act(ctx: &mut Ctx, p: &DamageParams) -> anyhow::Result<serde_json::Value> {
    let run_dir = ctx
        .run_dir
        .clone()
        .ok_or_else(|| bad_input("the damage step needs a run directory"))?;
    let tag = ctx.tag();
    let sb = Sandbox::open(&p.sandbox.root, &p.sandbox.name)?;
    // A resumed attempt damages the pages the first one chose; the keys it read may no longer be readable.
    let record = match read_record(&run_dir) {
        Ok(r) => r,
        Err(_) => {
            let keys: Vec<u64> = ctx.conn()?.query(format!(
                "SELECT {tag} id FROM {} FORCE INDEX (PRIMARY) ORDER BY id",
                qualified(&p.db, &p.table)
            ))?;
            ctx.drop_conn();
            let stopped = damage::Stopped::slow(&sb, &tag)?;
            let file = stopped.table(&p.db, &p.table)?;
            let leaves = file.leaves(3)?;
            let bad = damage::spread(leaves.len()).ok_or_else(|| {
                refused(format!(
                    "{}.{} has only {} leaf pages, too few to damage apart: the drill's table is too small",
                    p.db,
                    p.table,
                    leaves.len()
                ))
            })?;
            let expected = damage::expected(&keys, &leaves, &bad).map_err(|why| {
                refused(format!(
                    "the leaf pages of {}.{} do not match its rows ({why}): read the sandbox's error log",
                    p.db, p.table
                ))
            })?;
            let record = DamageRecord {
                table: format!("{}.{}", p.db, p.table),
                file: file.path.clone(),
                pages: bad.iter().map(|&i| leaves[i].page).collect(),
                expected,
            };
            crate::plan::journal::write_json_atomic(&run_dir.join(RECORD), &record)?;
            record
        }
    };
    ctx.drop_conn();
    let stopped = damage::Stopped::slow(&sb, &tag)?;
    let file = stopped.table(&p.db, &p.table)?;
    for &pg in &record.pages {
        file.damage(pg)?;
    }
    // Up again as a damaged production server runs; the buffer-pool dump the slow shutdown wrote lists the
    // damaged pages, so it is not loaded (it would read them first).
    let mut sb = Sandbox::open(&p.sandbox.root, &p.sandbox.name)?;
    sb.start(
        &["--innodb-buffer-pool-load-at-startup=OFF".into()],
        Duration::from_secs(600),
    )?;
    Ok(serde_json::to_value(&record)?)
}

/// `drill-figures`: the recovery against the limit and mariadb-dump.
pub fn figures_plan(p: &FiguresParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    let target = format!("{}.{}", p.db, p.table);
    let pa = p.clone();
    let step = Step::new(
        "recovery",
        format!("What innops recover got back from {target}, against every row not on a damaged page and mariadb-dump"),
        Risk::Read,
    )
    .preview(format!("mariadb-dump --skip-extended-insert {} {} > mariadb-dump.sql", p.db, p.table))
    .pre(sandbox_check(&p.sandbox))
    .act(move |ctx| figures_act(ctx, &pa))
    .post(figure_check(p, "the SQL reads got every row not on a damaged page", |m, rec| {
        let (got, limit) = (sql_rows(m), rec.expected.limit);
        (got == limit, format!("{got} rows"), format!("{limit} (the limit)"))
    }))
    .post(figure_check(p, "the page pass read rows from the damaged pages, and only from them", |m, rec| {
        page_pass_judged(m, rec)
    }))
    .post(figure_check(p, "every lost range lies inside a damaged page's keys", |m, rec| {
        let lost = lost_of(m);
        let inside = lost.iter().all(|l| rec.expected.lost.iter().any(|e| within(*l, *e)));
        (
            inside && (lost.is_empty() || m.pages.is_some() || lost == rec.expected.lost),
            ranges(&lost),
            format!("inside {}", ranges(&rec.expected.lost)),
        )
    }));
    Ok(Plan {
        header: env.header(
            Procedure::DrillFigures,
            facts,
            serde_json::to_value(p)?,
            Vec::new(),
        ),
        steps: vec![step],
        bench: None,
        locks: Vec::new(),
        session: Vec::new(),
    })
}

/// A post-check comparing the recovery's manifest on disk now with the damage record.
fn figure_check(
    p: &FiguresParams,
    name: &str,
    judge: impl Fn(&crate::dump::manifest::TableEntry, &DamageRecord) -> (bool, String, String)
        + 'static,
) -> Check {
    let p = p.clone();
    Check::new(name, move |ctx| {
        let rec = ctx.run_dir.as_ref().and_then(|d| read_record(d).ok());
        let entry = Manifest::read(&p.dump)
            .ok()
            .and_then(|m| m.table(&p.db, &p.table).cloned());
        let (Some(rec), Some(entry)) = (rec, entry) else {
            return Ok(Verdict::fail(
                "no damage record or no manifest entry for the table",
                "both",
                format!(
                    "the damage or the recovery did not finish: read {}",
                    p.dump.display()
                ),
            ));
        };
        let (ok, observed, expected) = judge(&entry, &rec);
        Ok(Verdict::check(
            ok,
            observed,
            expected,
            "innops recover did not get back what the damaged files hold: read its report and its manifest",
        ))
    })
}

/// The lost ranges of a manifest entry, in key order, as (after, before), exclusive: an inclusive bound (a cut
/// between parallel reads, an unproven record's own key) is moved out by one.
fn lost_of(t: &crate::dump::manifest::TableEntry) -> Vec<(Option<u64>, Option<u64>)> {
    let key = |k: &Option<Vec<serde_json::Value>>| {
        k.as_ref().and_then(|v| v.first()).and_then(|x| x.as_u64())
    };
    let mut lost: Vec<(Option<u64>, Option<u64>)> = t
        .lost
        .iter()
        .map(|l| {
            (
                key(&l.after).or(key(&l.from).and_then(|f| f.checked_sub(1))),
                key(&l.before).or(key(&l.to).map(|t| t + 1)),
            )
        })
        .collect();
    lost.sort();
    lost
}

/// Whether the exclusive range `l` lies inside the exclusive range `e` (None: the table's end).
fn within(l: (Option<u64>, Option<u64>), e: (Option<u64>, Option<u64>)) -> bool {
    let low = match (l.0, e.0) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(a), Some(b)) => a >= b,
    };
    let high = match (l.1, e.1) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(a), Some(b)) => a <= b,
    };
    low && high
}

/// The rows the SQL reads wrote: the manifest's count without the rows read from pages.
fn sql_rows(t: &crate::dump::manifest::TableEntry) -> u64 {
    t.pages.as_ref().map_or(t.rows, |p| p.sql_rows)
}

/// The page pass ran on the damaged table, read rows, no more than the damaged pages held, and only from them.
fn page_pass_judged(
    t: &crate::dump::manifest::TableEntry,
    rec: &DamageRecord,
) -> (bool, String, String) {
    let expected = format!(
        "it ran, and read between 1 and {} rows (those on the damaged pages), from pages {} only",
        rec.expected.on_damaged,
        list(&rec.pages)
    );
    let ran = t.page_pass.as_ref().is_some_and(|p| p.ran);
    let Some(p) = t.pages.as_ref().filter(|_| ran) else {
        let why = t
            .page_pass
            .as_ref()
            .map_or("the manifest does not say".to_string(), |p| p.why.clone());
        return (false, format!("not run: {why}"), expected);
    };
    let from: Vec<u32> = p
        .pages
        .iter()
        .filter(|r| r.rows > 0)
        .map(|r| r.page)
        .collect();
    let ok = p.page_rows > 0
        && p.page_rows <= rec.expected.on_damaged
        && from.iter().all(|pg| rec.pages.contains(pg));
    (
        ok,
        format!("{} rows from pages {}", p.page_rows, list(&from)),
        expected,
    )
}

fn figures_act(ctx: &mut Ctx, p: &FiguresParams) -> anyhow::Result<serde_json::Value> {
    let run_dir = ctx
        .run_dir
        .clone()
        .ok_or_else(|| bad_input("the figures step needs a run directory"))?;
    let rec = read_record(&run_dir)?;
    let sb = Sandbox::open(&p.sandbox.root, &p.sandbox.name)?;
    let (mariadb_dump, mariadb_dump_exit) =
        mariadb_dump_rows(&sb, &p.db, &p.table, &run_dir.join("mariadb-dump.sql"));
    let entry = Manifest::read(&p.dump)
        .ok()
        .and_then(|m| m.table(&p.db, &p.table).cloned());
    let f = RecoveryFigures {
        table: rec.table.clone(),
        damaged_pages: rec.pages.clone(),
        rows_before: rec.expected.rows_before,
        rows_on_damaged_pages: rec.expected.on_damaged,
        limit: rec.expected.limit,
        innops: entry.as_ref().map_or(0, |t| t.rows),
        innops_sql: entry.as_ref().map_or(0, sql_rows),
        innops_pages: entry
            .as_ref()
            .and_then(|t| t.pages.as_ref())
            .map_or(0, |p| p.page_rows),
        page_pass: entry.as_ref().and_then(|t| t.page_pass.clone()),
        mariadb_dump,
        mariadb_dump_exit,
        innops_lost: entry.as_ref().map(lost_of).unwrap_or_default(),
        exact_lost: rec.expected.lost.clone(),
    };
    ctx.outcome.extend(recovery_lines(&f));
    Ok(serde_json::to_value(f)?)
}

/// Run `mariadb-dump` on the damaged table (one INSERT a row) into `file` and count the rows it wrote; the
/// exit code (3 when it stops at the damage) or why it did not run.
fn mariadb_dump_rows(sb: &Sandbox, db: &str, table: &str, file: &Path) -> (Option<u64>, String) {
    let Ok(out) = std::fs::File::create(file) else {
        return (None, format!("{} could not be created", file.display()));
    };
    let run = std::process::Command::new("mariadb-dump")
        .arg("--no-defaults")
        .arg(format!("--socket={}", sb.socket.display()))
        .args(["--user=root", "--skip-extended-insert", db, table])
        .stdout(out)
        .stderr(std::process::Stdio::piped())
        .output();
    let out = match run {
        Ok(o) => o,
        Err(_) => return (None, "mariadb-dump is not on PATH".into()),
    };
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let prefix = format!("INSERT INTO {} VALUES", crate::sql::quote_ident(table));
    let rows = text.lines().filter(|l| l.starts_with(&prefix)).count() as u64;
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let code = out
        .status
        .code()
        .map(|c| format!("exit {c}"))
        .unwrap_or_else(|| "killed by a signal".into());
    (
        Some(rows),
        if last.is_empty() {
            code
        } else {
            format!("{code}: {}", last.trim())
        },
    )
}

/// `after 6660, before 6733; after 9990, to the end`.
pub fn ranges(r: &[(Option<u64>, Option<u64>)]) -> String {
    if r.is_empty() {
        return "none".into();
    }
    r.iter()
        .map(|(a, b)| {
            let low = a.map_or("from the start".to_string(), |a| format!("after {a}"));
            let high = b.map_or("to the end".to_string(), |b| format!("before {b}"));
            format!("{low}, {high}")
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn percent(part: u64, of: u64) -> String {
    if of == 0 {
        return "-".into();
    }
    format!("{:.1}%", part as f64 * 100.0 / of as f64)
}

/// The recovery figures as lines for a person.
pub fn recovery_lines(f: &RecoveryFigures) -> Vec<String> {
    use crate::units::format_count as n;
    vec![
        format!(
            "recovery of {}: {} rows, {} on {} damaged leaf pages ({}), limit {}",
            f.table,
            n(f.rows_before),
            n(f.rows_on_damaged_pages),
            f.damaged_pages.len(),
            f.damaged_pages
                .iter()
                .map(|p| format!("page {p}"))
                .collect::<Vec<_>>()
                .join(", "),
            n(f.limit)
        ),
        format!(
            "recovery: innops recover {} rows: {} through SQL ({} of the limit), {}",
            n(f.innops),
            n(f.innops_sql),
            percent(f.innops_sql, f.limit),
            match &f.page_pass {
                Some(p) if p.ran => format!(
                    "{} read from the damaged pages' records ({} of the {} on them)",
                    n(f.innops_pages),
                    percent(f.innops_pages, f.rows_on_damaged_pages),
                    n(f.rows_on_damaged_pages)
                ),
                Some(p) => format!("the page pass not run ({})", p.why),
                None => "the page pass not run".into(),
            }
        ),
        match f.mariadb_dump {
            Some(m) => format!(
                "recovery: mariadb-dump {} rows ({} of the limit; {})",
                n(m),
                percent(m, f.limit),
                f.mariadb_dump_exit
            ),
            None => format!("recovery: mariadb-dump not run ({})", f.mariadb_dump_exit),
        },
        format!("recovery: lost by innops: {}", ranges(&f.innops_lost)),
        format!("recovery: lost exactly: {}", ranges(&f.exact_lost)),
    ]
}

/// Build a drill member again from its `plan.json` header (for `innops resume` of a drill run).
pub fn rebuild(h: &PlanHeader, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    match h.procedure {
        Procedure::DrillSetup => setup_plan(&serde_json::from_value(h.params.clone())?, facts, env),
        Procedure::DrillDamage => {
            damage_plan(&serde_json::from_value(h.params.clone())?, facts, env)
        }
        Procedure::DrillFigures => {
            figures_plan(&serde_json::from_value(h.params.clone())?, facts, env)
        }
        other => Err(bad_input(format!("'{other}' is not a member of the drill"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump::manifest::{LostRange, PagePass, PageRows, PagesRead, TableEntry};

    fn entry(lost: Vec<LostRange>, pages: Option<PagesRead>, ran: bool) -> TableEntry {
        serde_json::from_value::<TableEntry>(serde_json::json!({
            "db": "drill", "table": "damaged", "status": "partial", "file": null, "sha256": null,
            "rows": 100, "content_hash": null, "columns": ["id"], "primary_key": ["id"],
            "lost": [], "key_index": "PRIMARY", "reconnects": 0, "note": null,
        }))
        .map(|mut t| {
            t.lost = lost;
            t.pages = pages;
            t.page_pass = Some(PagePass {
                ran,
                why: "because".into(),
            });
            t
        })
        .unwrap()
    }

    fn record() -> DamageRecord {
        DamageRecord {
            table: "drill.damaged".into(),
            file: "x.ibd".into(),
            pages: vec![7, 9],
            expected: damage::Expected {
                rows_before: 100,
                on_damaged: 20,
                limit: 80,
                lost: vec![(Some(10), Some(31)), (Some(60), None)],
            },
        }
    }

    #[test]
    fn lost_ranges_narrowed_by_the_page_pass_lie_inside_the_damaged_pages_keys() {
        let key = |k: u64| Some(vec![serde_json::json!(k)]);
        let t = entry(
            vec![
                LostRange {
                    after: key(14),
                    before: key(20),
                    ..Default::default()
                },
                LostRange {
                    from: key(25),
                    to: key(25),
                    ..Default::default()
                },
                LostRange {
                    after: key(70),
                    ..Default::default()
                },
            ],
            None,
            true,
        );
        let lost = lost_of(&t);
        assert_eq!(
            lost,
            [(Some(14), Some(20)), (Some(24), Some(26)), (Some(70), None)]
        );
        let e = record().expected.lost;
        assert!(lost.iter().all(|l| e.iter().any(|x| within(*l, *x))));
        assert!(!within((Some(9), Some(20)), e[0]), "below the damaged keys");
        assert!(!within((Some(14), None), e[0]), "open past them");
        assert!(!within((None, Some(20)), e[0]));
    }

    #[test]
    fn the_page_pass_is_judged_on_the_damaged_pages_only() {
        let pages = |rows: &[(u32, u64)]| PagesRead {
            sql_rows: 80,
            page_rows: rows.iter().map(|r| r.1).sum(),
            pages: rows
                .iter()
                .map(|&(page, rows)| PageRows {
                    page,
                    rows,
                    unproven: 0,
                    checksum_ok: false,
                    problems: Vec::new(),
                })
                .collect(),
            ..Default::default()
        };
        let rec = record();
        assert!(page_pass_judged(&entry(vec![], Some(pages(&[(7, 9), (9, 8)])), true), &rec).0);
        assert_eq!(sql_rows(&entry(vec![], Some(pages(&[(7, 9)])), true)), 80);
        // Rows from a page that was not damaged, more rows than the damaged pages held, none, or not run.
        assert!(!page_pass_judged(&entry(vec![], Some(pages(&[(8, 3)])), true), &rec).0);
        assert!(!page_pass_judged(&entry(vec![], Some(pages(&[(7, 21)])), true), &rec).0);
        assert!(!page_pass_judged(&entry(vec![], Some(pages(&[])), true), &rec).0);
        let (ok, seen, _) = page_pass_judged(&entry(vec![], None, false), &rec);
        assert!(!ok && seen == "not run: because", "{seen}");
    }
}
