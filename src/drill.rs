//! `innops drill`: every procedure innops has, end to end, on a fresh sandbox, with one report: the redo resize
//! online and offline (and proof the size survives a restart), and MyISAM → InnoDB conversion by the bulk and
//! the deferred-index paths.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use mysql::prelude::Queryable;
use serde::Serialize;

use crate::error::post_check;
use crate::plan::runner::{self, RunOptions};
use crate::plan::Plan;
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
}

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
    if settings.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        crate::error::note_json_printed();
    } else {
        println!("innops drill on {} ({})", report.sandbox, report.server);
        for s in &report.sections {
            println!("  {:<24} {}  {}", s.name, s.status, s.detail);
            if !s.run_dir.is_empty() {
                println!("  {:<24} run directory {}", "", s.run_dir);
            }
        }
        println!("report: {}", out.join("drill.json").display());
    }
    if report.passed {
        Ok(())
    } else {
        Err(post_check(
            "the drill failed: read the sections above and their run directories",
        ))
    }
}
