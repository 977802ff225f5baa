//! `innops drill`: every procedure innops has, end to end, on a fresh sandbox, with one report: the redo resize
//! online and offline (and proof the size survives a restart), and MyISAM → InnoDB conversion by the bulk and
//! the deferred-index paths; and a recovery: leaf pages of a table damaged in the sandbox (its server stopped
//! after a slow shutdown), `innops recover` run on it with `--verify-load`, and the rows it got back set
//! against the limit (every row not on a damaged page) and against what `mariadb-dump` gets from the same files.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use mysql::prelude::Queryable;
use serde::Serialize;

use crate::dump::{damage, Manifest};
use crate::error::post_check;
use crate::plan::runner::{self, RunOptions};
use crate::plan::Plan;
use crate::procedures::recover::{self, RecoverParams};
use crate::procedures::{self, convert, PlanEnv};
use crate::sandbox::{Sandbox, SandboxOptions};
use crate::server::control::Control;
use crate::server::facts::ServerFacts;

#[derive(Debug, Serialize)]
struct Section {
    name: String,
    status: String,
    run_dir: String,
    detail: String,
    /// The recovery section's figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    recovery: Option<RecoveryFigures>,
}

/// What the recovery section measured on its damaged table.
#[derive(Debug, Clone, Serialize)]
struct RecoveryFigures {
    table: String,
    /// Pages damaged, in key order.
    damaged_pages: Vec<u32>,
    rows_before: u64,
    rows_on_damaged_pages: u64,
    /// Every row not on a damaged page: what a perfect recovery gets back.
    limit: u64,
    /// Rows in `innops recover`'s dump (its manifest).
    innops: u64,
    /// Rows in `mariadb-dump`'s output from the same damaged files (None: not run).
    mariadb_dump: Option<u64>,
    /// mariadb-dump's exit code, or why it did not run.
    mariadb_dump_exit: String,
    /// Lost ranges as `innops recover` reported them: (after, before), exclusive, None = the table's end.
    innops_lost: Vec<(Option<u64>, Option<u64>)>,
    /// The exact lost ranges, from the keys on the damaged pages.
    exact_lost: Vec<(Option<u64>, Option<u64>)>,
}

/// The recovery section's table: sysbench's shape, InnoDB, about 270 leaf pages.
const DAMAGED: &str = "CREATE TABLE /* innops:drill:setup */ `drill`.`damaged` (id INT UNSIGNED NOT NULL PRIMARY KEY, \
    k INT UNSIGNED NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', \
    KEY k_1 (k)) ENGINE=InnoDB";
const DAMAGED_ROWS: u32 = 20_000;

#[derive(Debug, Serialize)]
struct DrillReport {
    sandbox: String,
    server: String,
    sections: Vec<Section>,
    passed: bool,
}

/// The table the conversion sections convert: sysbench's shape, with secondary indexes.
const ORDERS: &str = "CREATE TABLE /* innops:drill:setup */ `drill`.`{t}` (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, \
    k INT UNSIGNED NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', \
    KEY k_1 (k), KEY c_1 (c(20))) ENGINE=MyISAM";

/// What the drill does, validated.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where the drill's sandbox is created.
    pub root: PathBuf,
    /// Where its runs and report go (default ./innops-runs/<time>-drill).
    pub out: Option<PathBuf>,
    /// Keep the sandbox afterwards.
    pub keep: bool,
    pub json: bool,
}

/// How the drill reaches its sandbox: the command layer resolves a sandbox name into the plans' environment and
/// the server's control, as `--sandbox NAME` would, so each section sees what a person's run would see.
pub type Resolve<'a> = &'a dyn Fn(&str) -> anyhow::Result<(PlanEnv, Option<Control>)>;

struct Drill<'a> {
    resolve: Resolve<'a>,
    name: &'a str,
    out: &'a Path,
    sb: &'a Sandbox,
}

impl Drill<'_> {
    /// Build a plan with fresh facts and run it to the end; one section of the report.
    fn section(
        &self,
        label: &str,
        build: impl FnOnce(&ServerFacts, &PlanEnv) -> anyhow::Result<Plan>,
    ) -> anyhow::Result<(Section, String)> {
        let (plan_env, mut control) = (self.resolve)(self.name)?;
        let facts = ServerFacts::collect(&mut plan_env.target.connect()?)?;
        if let Some(c) = control.as_mut() {
            c.error_log = Some(self.sb.error_log.clone());
        }
        let plan = build(&facts, &plan_env)?;
        let run_dir = self.out.join(label);
        let opts = RunOptions {
            execute: true,
            yes: true,
            run_dir: Some(run_dir.clone()),
            no_bench: false,
        };
        let abort = AtomicBool::new(false);
        eprintln!("innops drill: {label}");
        let (report, r) = runner::run(
            plan,
            &plan_env.target,
            control.as_ref(),
            &opts,
            &abort,
            None,
        );
        let detail = match (&report.bench.before, &report.bench.after) {
            (Some(b), Some(a)) => format!(
                "tps {:.0} → {:.0}, p95 {:.2} → {:.2} ms",
                b.tps, a.tps, b.latency_ms.p95, a.latency_ms.p95
            ),
            _ => String::new(),
        };
        let status = match &r {
            Ok(()) => "passed".into(),
            Err(e) => format!("failed: {}", crate::error::display_of(e)),
        };
        Ok((
            Section {
                name: label.into(),
                status,
                run_dir: run_dir.display().to_string(),
                detail,
                recovery: None,
            },
            facts.version_string,
        ))
    }
}

impl Drill<'_> {
    /// Read-only and back: `innops readonly` (pre-flush, slow shutdown, read-only start, write probe), then
    /// `--undo`. The first section carries the downtime and what the write probe got; the second proves the
    /// server writable again.
    fn readonly_sections(&self) -> anyhow::Result<Vec<Section>> {
        use procedures::readonly::{self, ReadonlyParams};
        // What a run's report says: the start's downtime and the verify step's write-probe check.
        let read = |s: &Section| -> (Option<f64>, Option<(bool, String)>) {
            let Ok(text) = std::fs::read_to_string(Path::new(&s.run_dir).join("report.json"))
            else {
                return (None, None);
            };
            let r: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            let step = |id: &str| {
                r["steps"]
                    .as_array()
                    .and_then(|a| a.iter().find(|s| s["id"] == id))
                    .cloned()
                    .unwrap_or_default()
            };
            let downtime = step("start")["result"]["downtime_s"].as_f64();
            let probe = step("verify")["post"].as_array().and_then(|a| {
                a.iter()
                    .find(|c| {
                        c["check"]
                            .as_str()
                            .is_some_and(|c| c.starts_with("write probe"))
                    })
                    .map(|c| {
                        (
                            c["passed"] == true,
                            c["observed"].as_str().unwrap_or_default().to_string(),
                        )
                    })
            });
            (downtime, probe)
        };
        let mut out = Vec::new();
        for (label, undo) in [("readonly", false), ("readonly-undo", true)] {
            let (mut s, _) = self.section(label, |facts, env| {
                let p = ReadonlyParams {
                    undo,
                    min_redo: false,
                    sql_read_only: false,
                    preflush: true,
                    preflush_timeout_s: 120,
                };
                readonly::plan(&p, facts, env)
            })?;
            let (downtime, probe) = read(&s);
            // The server itself, after the run: read-only after the switch, read-write after the undo.
            let live: Option<u64> = (self.resolve)(self.name)
                .and_then(|(env, _)| env.target.connect())
                .and_then(|mut c| {
                    Ok(c.query_first("SELECT /* innops:drill:check */ @@GLOBAL.innodb_read_only")?)
                })
                .unwrap_or(None);
            let want = u64::from(!undo);
            if s.status == "passed" && live != Some(want) {
                s.status = format!(
                    "failed: innodb_read_only is {} after the run, not {want}",
                    live.map_or("unknown".into(), |v| v.to_string())
                );
            }
            if s.status == "passed" && !probe.as_ref().is_some_and(|p| p.0) {
                s.status = "failed: the write probe did not get what it expected".into();
            }
            let mut d = vec![format!(
                "innodb_read_only={}",
                live.map_or("?".into(), |v| v.to_string())
            )];
            if let Some(t) = downtime {
                d.push(format!("downtime {t:.2} s"));
            }
            if let Some((_, observed)) = probe {
                d.push(format!("write probe: {observed}"));
            }
            if !s.detail.is_empty() {
                d.push(s.detail.clone());
            }
            s.detail = d.join("; ");
            out.push(s);
        }
        Ok(out)
    }
}

pub fn run(settings: &Settings, resolve: Resolve) -> anyhow::Result<()> {
    let root = &settings.root;
    let out = settings
        .out
        .clone()
        .unwrap_or_else(|| crate::plan::journal::RunDir::default_path("drill"));
    crate::plan::journal::create_private_dir(&out)?;
    let name = format!("drill-{}", chrono::Utc::now().format("%Y%m%d%H%M%S%3f"));
    eprintln!(
        "innops drill: creating sandbox '{name}' in {}",
        root.display()
    );
    let mut sb = Sandbox::create(
        root,
        &name,
        &SandboxOptions {
            buffer_pool: Some("128M".into()),
            extra: Vec::new(),
        },
    )?;
    let result = (|| -> anyhow::Result<DrillReport> {
        sb.start(&[], Duration::from_secs(600))?;
        let drill = Drill {
            resolve,
            name: &name,
            out: &out,
            sb: &sb,
        };
        let mut sections = Vec::new();
        let mut server = String::new();
        for (label, size, offline) in [
            ("redo-online", 192u64 << 20, false),
            ("redo-offline", 128u64 << 20, true),
        ] {
            let (s, v) = drill.section(label, |facts, env| {
                procedures::redo::plan(&procedures::redo::RedoParams { size, offline }, facts, env)
            })?;
            sections.push(s);
            server = v;
        }
        // The size must survive a plain restart.
        let control = Control::new(
            crate::server::control::ControlSpec::Sandbox {
                root: root.clone(),
                name: name.clone(),
            },
            None,
        );
        let target = sb.conn_spec().resolve_plain();
        control.stop(
            &target,
            crate::server::control::StopMode::Clean,
            "innops:drill:restart",
        )?;
        control.start(&target, &[])?;
        let after = ServerFacts::collect(&mut target.connect()?)?.redo_size_bytes();
        sections.push(Section {
            name: "redo-survives-restart".into(),
            status: if after == Some(128 << 20) {
                "passed".into()
            } else {
                format!(
                    "failed: size after restart {}",
                    after
                        .map(crate::units::format_size)
                        .unwrap_or_else(|| "unknown".into())
                )
            },
            run_dir: String::new(),
            detail: format!(
                "innodb_log_file_size after restart: {}",
                after.map(crate::units::format_size).unwrap_or_default()
            ),
            recovery: None,
        });

        // Conversions: the server's bulk path, then the deferred path as on a row-by-row server.
        let mut conn = target.connect()?;
        conn.query_drop("CREATE DATABASE /* innops:drill:setup */ IF NOT EXISTS `drill`")?;
        for (label, table, bulk) in [
            ("convert-bulk", "orders", "ON"),
            ("convert-deferred", "orders2", "OFF"),
        ] {
            conn.query_drop(ORDERS.replace("{t}", table))?;
            conn.query_drop(format!(
                "INSERT /* innops:drill:setup */ INTO `drill`.`{table}` (k, c, pad) SELECT seq % 997, CONCAT('c-', seq), REPEAT('p', seq % 60) FROM `drill`.`seq_1_to_50000`"
            ))?;
            conn.query_drop(format!(
                "SET /* innops:drill:setup */ GLOBAL innodb_alter_copy_bulk = {bulk}"
            ))?;
            let (mut s, _) = drill.section(label, |facts, env| {
                let mut c = env.target.connect()?;
                let (tables, skipped) =
                    convert::resolve(&mut c, &[format!("drill.{table}")], false)?;
                let params = convert::ConvertParams {
                    tables,
                    strategy: convert::Strategy::Auto,
                    drop_old: false,
                    chunk_ms: 500,
                    max_load: crate::plan::guard::Threshold::parse("Threads_running=25")?,
                    critical_load: crate::plan::guard::Threshold::parse("Threads_running=50")?,
                    restart: false,
                    skipped,
                    described: Vec::new(),
                };
                convert::plan(&params, facts, env)
            })?;
            let engine: Option<String> = conn.exec_first(
                "SELECT /* innops:drill:check */ ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'drill' AND TABLE_NAME = ?",
                (table,),
            )?;
            if s.status == "passed" && engine.as_deref() != Some("InnoDB") {
                s.status = format!(
                    "failed: drill.{table} is {} after the run",
                    engine.as_deref().unwrap_or("missing")
                );
            }
            s.detail = format!("innodb_alter_copy_bulk={bulk}; {}", s.detail);
            sections.push(s);
        }
        conn.query_drop("SET /* innops:drill:setup */ GLOBAL innodb_alter_copy_bulk = ON")?;
        drop(conn);
        sections.extend(drill.readonly_sections()?);

        // Recovery, last: it leaves the sandbox with a damaged table.
        sections.push(recovery(&drill, root, &name)?);

        let passed = sections.iter().all(|s| s.status == "passed");
        Ok(DrillReport {
            sandbox: name.clone(),
            server,
            sections,
            passed,
        })
    })();
    if !settings.keep {
        let _ = sb.destroy();
    }
    let report = result?;
    crate::plan::journal::write_json_atomic(&out.join("drill.json"), &report)?;
    std::fs::write(out.join("drill.html"), render_html(&report))?;
    if settings.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        crate::error::note_json_printed();
    } else {
        println!("innops drill on {} ({})", report.sandbox, report.server);
        for s in &report.sections {
            match &s.recovery {
                Some(f) => {
                    println!("  {:<24} {}", s.name, s.status);
                    for line in recovery_lines(f) {
                        println!("  {:<24} {line}", "");
                    }
                }
                None => println!("  {:<24} {}  {}", s.name, s.status, s.detail),
            }
            if !s.run_dir.is_empty() {
                println!("  {:<24} run directory {}", "", s.run_dir);
            }
        }
        println!(
            "report: {} and {}",
            out.join("drill.json").display(),
            out.join("drill.html").display()
        );
    }
    if report.passed {
        Ok(())
    } else {
        Err(post_check(
            "the drill failed: read the sections above and their run directories",
        ))
    }
}

/// The recovery section: damage leaf pages of `drill`.`damaged` in the sandbox (stopped after a slow
/// shutdown), start it again as a damaged server would run, run `innops recover` on it with `--verify-load`
/// and `--drop-copy`, then read the same damaged table with `mariadb-dump`. Passed when innops got back every
/// row not on a damaged page and named exactly the lost ranges.
fn recovery(drill: &Drill, root: &Path, name: &str) -> anyhow::Result<Section> {
    let mut sb = Sandbox::open(root, name)?;
    let keys: Vec<u64> = {
        let mut c = sb.conn_spec().resolve_plain().connect()?;
        c.query_drop(DAMAGED)?;
        c.query_drop(format!(
            "INSERT /* innops:drill:setup */ INTO `drill`.`damaged` SELECT seq, seq * 7919 % {DAMAGED_ROWS}, \
             CONCAT_WS('-', seq * 7, seq * 11, seq * 13, seq * 17, seq * 19, seq * 23), CONCAT_WS('-', seq * 43, seq * 47) \
             FROM `drill`.`seq_1_to_{DAMAGED_ROWS}`"
        ))?;
        c.query("SELECT /* innops:drill:setup */ id FROM `drill`.`damaged` FORCE INDEX (PRIMARY) ORDER BY id")?
    };
    eprintln!("innops drill: damaging leaf pages of drill.damaged (slow shutdown first)");
    let (pages, expected) = {
        let stopped = damage::Stopped::slow(&sb, "/* innops:drill:damage */")?;
        let file = stopped.table("drill", "damaged")?;
        let leaves = file.leaves(3)?;
        let bad = damage::spread(leaves.len()).ok_or_else(|| {
            post_check(format!(
                "drill.damaged has only {} leaf pages, too few to damage apart: the drill's table is too small",
                leaves.len()
            ))
        })?;
        let expected = damage::expected(&keys, &leaves, &bad).map_err(|why| {
            post_check(format!(
                "the leaf pages of drill.damaged do not match its rows ({why}): read the sandbox's error log"
            ))
        })?;
        let pages: Vec<u32> = bad.iter().map(|&i| leaves[i].page).collect();
        for &p in &pages {
            file.damage(p)?;
        }
        (pages, expected)
    };
    // Up again as a damaged production server runs; the buffer-pool dump the slow shutdown wrote lists the
    // damaged pages, so it is not loaded (it would read them first).
    sb.start(
        &["--innodb-buffer-pool-load-at-startup=OFF".into()],
        Duration::from_secs(600),
    )?;

    let dump_dir = drill.out.join("recover-dump");
    let params = RecoverParams {
        out: dump_dir.clone(),
        copy_to: drill.out.join("recover-copy"),
        tables: vec!["drill.damaged".into()],
        max_level: recover::SAFE_MAX_LEVEL,
        drop_copy: true,
        verify_load: true,
        threads: 2,
        mariadbd: Some(sb.binary.clone()),
        datadir: None,
        original_running: true,
        in_place: false,
    };
    params.check(None)?;
    let (mut s, _) = drill.section("recover", |facts, env| recover::plan(&params, facts, env))?;

    let sb = Sandbox::open(root, name)?;
    let (mariadb_dump, mariadb_dump_exit) =
        mariadb_dump_rows(&sb, &drill.out.join("mariadb-dump.sql"));
    let entry = Manifest::read(&dump_dir)
        .ok()
        .and_then(|m| m.table("drill", "damaged").cloned());
    let innops = entry.as_ref().map_or(0, |t| t.rows);
    // In key order (the manifest lists them in the order the reads found them).
    let mut innops_lost: Vec<(Option<u64>, Option<u64>)> = entry
        .as_ref()
        .map(|t| {
            t.lost
                .iter()
                .map(|l| {
                    let key = |k: &Option<Vec<serde_json::Value>>| {
                        k.as_ref().and_then(|v| v.first()).and_then(|x| x.as_u64())
                    };
                    (key(&l.after).or(key(&l.from)), key(&l.before))
                })
                .collect()
        })
        .unwrap_or_default();
    innops_lost.sort();
    let f = RecoveryFigures {
        table: "drill.damaged".into(),
        damaged_pages: pages,
        rows_before: expected.rows_before,
        rows_on_damaged_pages: expected.on_damaged,
        limit: expected.limit,
        innops,
        mariadb_dump,
        mariadb_dump_exit,
        innops_lost,
        exact_lost: expected.lost,
    };
    if s.status == "passed" {
        if f.innops != f.limit {
            s.status = format!(
                "failed: innops recovered {} rows where {} are not on a damaged page",
                f.innops, f.limit
            );
        } else if f.innops_lost != f.exact_lost {
            s.status = format!(
                "failed: innops reported the lost ranges {} where they are {}",
                ranges(&f.innops_lost),
                ranges(&f.exact_lost)
            );
        }
    }
    s.detail = recovery_lines(&f).join("; ");
    s.recovery = Some(f);
    Ok(s)
}

/// Run `mariadb-dump` on the damaged table (one INSERT a row) into `file` and count the rows it wrote; the
/// exit code (3 when it stops at the damage) or why it did not run.
fn mariadb_dump_rows(sb: &Sandbox, file: &Path) -> (Option<u64>, String) {
    let Ok(out) = std::fs::File::create(file) else {
        return (None, format!("{} could not be created", file.display()));
    };
    let run = std::process::Command::new("mariadb-dump")
        .arg("--no-defaults")
        .arg(format!("--socket={}", sb.socket.display()))
        .args(["--user=root", "--skip-extended-insert", "drill", "damaged"])
        .stdout(out)
        .stderr(std::process::Stdio::piped())
        .output();
    let out = match run {
        Ok(o) => o,
        Err(_) => return (None, "mariadb-dump is not on PATH".into()),
    };
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let rows = text
        .lines()
        .filter(|l| l.starts_with("INSERT INTO `damaged` VALUES"))
        .count() as u64;
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

/// `after 6660, before 6733; after 9990 to the end`.
fn ranges(r: &[(Option<u64>, Option<u64>)]) -> String {
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
fn recovery_lines(f: &RecoveryFigures) -> Vec<String> {
    use crate::units::format_count as n;
    vec![
        format!(
            "{}: {} rows, {} on {} damaged leaf pages, limit {}",
            f.table,
            n(f.rows_before),
            n(f.rows_on_damaged_pages),
            f.damaged_pages.len(),
            n(f.limit)
        ),
        format!(
            "innops recover {} rows ({} of the limit)",
            n(f.innops),
            percent(f.innops, f.limit)
        ),
        match f.mariadb_dump {
            Some(m) => format!(
                "mariadb-dump {} rows ({} of the limit; {})",
                n(m),
                percent(m, f.limit),
                f.mariadb_dump_exit
            ),
            None => format!("mariadb-dump not run ({})", f.mariadb_dump_exit),
        },
        format!("lost by innops: {}", ranges(&f.innops_lost)),
        format!("lost exactly: {}", ranges(&f.exact_lost)),
    ]
}

/// `drill.html`: the sections and the recovery figures as one self-contained XHTML page.
fn render_html(r: &DrillReport) -> String {
    use crate::bench::html::esc;
    use std::fmt::Write as _;
    let mut s = String::from(
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head><meta charset=\"utf-8\"/>",
    );
    let _ = write!(
        s,
        "<title>innops drill on {}</title><style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin:1em 0}}\
         td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}td.n{{text-align:right}}.failed{{color:#b00}}</style></head><body>",
        esc(&r.sandbox)
    );
    let _ = write!(
        s,
        "<h1>innops drill on {} ({})</h1><p>{}</p>",
        esc(&r.sandbox),
        esc(&r.server),
        if r.passed {
            "Every section passed."
        } else {
            "A section failed: read it below and its run directory."
        }
    );
    s.push_str("<table><thead><tr><th>section</th><th>status</th><th>detail</th><th>run directory</th></tr></thead><tbody>");
    for sec in &r.sections {
        let class = if sec.status == "passed" {
            ""
        } else {
            " class=\"failed\""
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td{class}>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&sec.name),
            esc(&sec.status),
            esc(&sec.detail),
            esc(&sec.run_dir)
        );
    }
    s.push_str("</tbody></table>");
    for f in r.sections.iter().filter_map(|s| s.recovery.as_ref()) {
        let _ = write!(
            s,
            "<h2>Recovery of {}</h2><p>{} rows before the damage; {} of them on the {} damaged leaf pages ({}).</p>",
            esc(&f.table),
            f.rows_before,
            f.rows_on_damaged_pages,
            f.damaged_pages.len(),
            esc(&f.damaged_pages.iter().map(|p| format!("page {p}")).collect::<Vec<_>>().join(", "))
        );
        s.push_str("<table><thead><tr><th>what</th><th>rows</th><th>of the limit</th><th>note</th></tr></thead><tbody>");
        let mut row = |what: &str, rows: Option<u64>, note: &str| {
            let _ = write!(
                s,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
                esc(what),
                rows.map_or("-".into(), |r| r.to_string()),
                rows.map_or("-".into(), |r| percent(r, f.limit)),
                esc(note)
            );
        };
        row("limit (every row not on a damaged page)", Some(f.limit), "");
        row("innops recover", Some(f.innops), "");
        row("mariadb-dump", f.mariadb_dump, &f.mariadb_dump_exit);
        s.push_str("</tbody></table>");
        let _ = write!(
            s,
            "<p>Lost, as innops reported: {}</p><p>Lost, exactly: {}</p>",
            esc(&ranges(&f.innops_lost)),
            esc(&ranges(&f.exact_lost))
        );
    }
    s.push_str("</body></html>\n");
    s
}
