//! `innops drill`: every procedure innops has, end to end, on a fresh sandbox, with one report. Today that is
//! the redo resize, online and offline, and proof that the size survives a restart.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::Serialize;

use crate::cli::{ConnArgs, Format};
use crate::error::post_check;
use crate::plan::runner::{self, RunOptions};
use crate::procedures;
use crate::sandbox::{Sandbox, SandboxOptions};
use crate::target::facts::ServerFacts;

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

pub fn run(
    args: &ConnArgs,
    root: PathBuf,
    out: Option<PathBuf>,
    keep: bool,
    bench_time: u64,
) -> anyhow::Result<()> {
    let out = out.unwrap_or_else(|| crate::plan::journal::RunDir::default_path("drill"));
    std::fs::create_dir_all(&out)?;
    let name = format!("drill-{}", chrono::Utc::now().format("%Y%m%d%H%M%S%3f"));
    eprintln!(
        "innops drill: creating sandbox '{name}' in {}",
        root.display()
    );
    let mut sb = Sandbox::create(
        &root,
        &name,
        &SandboxOptions {
            buffer_pool: Some("128M".into()),
            extra: Vec::new(),
        },
    )?;
    let result = (|| -> anyhow::Result<DrillReport> {
        sb.start(&[], Duration::from_secs(600))?;
        let mut conn_args = args.clone();
        conn_args.sandbox = Some(name.clone());
        conn_args.sandbox_root = Some(root.clone());
        let mut sections = Vec::new();
        let mut server = String::new();
        for (label, size, offline) in [
            ("redo-online", 192u64 << 20, false),
            ("redo-offline", 128u64 << 20, true),
        ] {
            let mut env = crate::app::env_from(&conn_args, Some(bench_time))?;
            let facts = ServerFacts::collect(&mut env.plan_env.target.connect()?)?;
            server = facts.version_string.clone();
            if let Some(c) = env.control.as_mut() {
                c.error_log = Some(sb.error_log.clone());
            }
            let plan = procedures::redo::plan(
                &procedures::redo::RedoParams { size, offline },
                &facts,
                &env.plan_env,
            )?;
            let run_dir = out.join(label);
            let opts = RunOptions {
                execute: true,
                yes: true,
                run_dir: Some(run_dir.clone()),
                no_bench: false,
            };
            let abort = AtomicBool::new(false);
            eprintln!(
                "innops drill: {label}: resize the redo log to {}",
                crate::units::format_size(size)
            );
            let (report, r) = runner::run(
                plan,
                &env.plan_env.target,
                env.control.as_ref(),
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
            sections.push(Section {
                name: label.into(),
                status: match &r {
                    Ok(()) => "passed".into(),
                    Err(e) => format!("failed: {}", crate::error::display_of(e)),
                },
                run_dir: run_dir.display().to_string(),
                detail,
            });
        }
        // The size must survive a plain restart.
        let control = crate::target::control::Control::new(
            crate::target::control::ControlSpec::Sandbox {
                root: root.clone(),
                name: name.clone(),
            },
            None,
        );
        let target = sb.conn_spec().resolve_plain();
        control.stop(
            &target,
            crate::target::control::StopMode::Clean,
            "innops:drill:restart",
        )?;
        control.start(&target, &[])?;
        let after = ServerFacts::collect(&mut target.connect()?)?.redo_size_bytes();
        sections.push(Section {
            name: "redo-survives-restart".into(),
            status: if after == Some(128 << 20) {
                "passed".into()
            } else {
                format!("failed: size after restart {after:?}")
            },
            run_dir: String::new(),
            detail: format!(
                "innodb_log_file_size after restart: {}",
                after.map(crate::units::format_size).unwrap_or_default()
            ),
        });
        let passed = sections.iter().all(|s| s.status == "passed");
        Ok(DrillReport {
            sandbox: name.clone(),
            server,
            sections,
            passed,
        })
    })();
    if !keep {
        let _ = sb.destroy();
    }
    let report = result?;
    crate::plan::journal::write_json_atomic(&out.join("drill.json"), &report)?;
    match args.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&report)?),
        Format::Text => {
            println!("innops drill on {} ({})", report.sandbox, report.server);
            for s in &report.sections {
                println!("  {:<24} {}  {}", s.name, s.status, s.detail);
                if !s.run_dir.is_empty() {
                    println!("  {:<24} run directory {}", "", s.run_dir);
                }
            }
            println!("report: {}", out.join("drill.json").display());
        }
    }
    if report.passed {
        Ok(())
    } else {
        Err(post_check(
            "the drill failed: read the sections above and their run directories",
        ))
    }
}
