//! `innops recover --in-place` (DANGER): forced recovery on the server itself, through innops's drop-in, instead
//! of a copy. Each level is a restart through the restart kit ([`crate::procedures::kit::restart`]); the setting
//! is removed again at the end, and the last check proves the server runs at level 0.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use crate::dump::{self, Connector, DumpOptions};
use crate::error::{post_check, refused};
use crate::plan::{Check, Ctx, Risk, Step, Verdict};
use crate::procedures::kit::dropin;
use crate::procedures::kit::restart::restart;

use super::describe::{summary, table_lines};
use super::private::Attempt;
use super::{
    answering_level, escalation, level_zero_check, manifest_check, tables_to_dump, trx, verdict,
};
use super::{Escalation, Pages, RecoverParams};

/// The settings innops's drop-in carries while the server runs in forced recovery (`None` removes them).
fn recovery_settings(level: Option<u8>) -> Vec<(&'static str, Option<String>)> {
    vec![
        ("innodb_force_recovery", level.map(|l| l.to_string())),
        // The startup load would read the bad page first.
        (
            "innodb_buffer_pool_load_at_startup",
            level.map(|_| "OFF".to_string()),
        ),
    ]
}

fn change_dropin(
    ctx: &Ctx,
    dropin: &Result<PathBuf, String>,
    level: Option<u8>,
) -> anyhow::Result<crate::server::optionfile::ConfigChange> {
    let path = dropin.clone().map_err(refused)?;
    let settings = recovery_settings(level);
    let refs: Vec<(&str, Option<&str>)> =
        settings.iter().map(|(k, v)| (*k, v.as_deref())).collect();
    let change = crate::server::optionfile::plan_change(&path, "mysqld", &refs)?;
    change.apply(&dropin::backup_dir(ctx))?;
    Ok(change)
}

pub(super) fn escalate_in_place_step(p: &RecoverParams, dropin: &Result<PathBuf, String>) -> Step {
    let p1 = p.clone();
    let (d1, d2) = (dropin.clone(), dropin.clone());
    Step::new(
        "escalate",
        "Restart the server itself at the lowest forced-recovery level that lists the tables (--in-place, DANGER)",
        Risk::Destructive,
    )
    .preview(format!(
        "for each level 1..{}: set innodb_force_recovery = N and innodb_buffer_pool_load_at_startup = OFF in {}; restart",
        p.max_level,
        dropin.as_ref().map(|d| d.display().to_string()).unwrap_or_else(|e| e.clone())
    ))
    .pre(Check::new("not in forced recovery yet", |ctx| {
        let level = answering_level(ctx);
        Ok(match (level, escalation(ctx)) {
            (Some(l), Some(e)) if l == u64::from(e.level) => Verdict::done(format!("running at level {l}"), "level 0"),
            (Some(0), _) => Verdict::pass("running at level 0", "level 0"),
            (Some(l), _) => Verdict::fail(
                format!("running at level {l}, not set by this run"),
                "level 0",
                "the server already runs with innodb_force_recovery set by someone else: remove it from the option files and restart, or dump it yourself",
            ),
            (None, _) => Verdict::pass("down", "level 0, or down"),
        })
    }))
    .act(move |ctx| {
        let tag = ctx.tag();
        let mut attempts = Vec::new();
        for level in 1..=p1.max_level {
            crate::progress::say(&format!("      level {level}: restarting the server"));
            change_dropin(ctx, &d1, Some(level))?;
            let log_from = ctx.control.map(|c| c.log_offset()).unwrap_or(0);
            let up = restart(ctx)?;
            let mut a = Attempt {
                level,
                started: up,
                error_log: ctx.control.map(|c| c.log_since(log_from)).unwrap_or_default(),
            };
            if up {
                let listed = ctx.target.connect().and_then(|mut c| tables_to_dump(&mut c, &tag, &p1));
                if let Ok((_, missing)) = &listed {
                    if missing.is_empty() {
                        attempts.push(a);
                        let e = Escalation { level, attempts, look: None, recovered: Vec::new(), log_from: Some(log_from), files_only: None };
                        let v = serde_json::to_value(&e)?;
                        ctx.state::<super::Memo>().escalation = Some(e);
                        return Ok(v);
                    }
                    a.error_log.push(format!("innops: the data dictionary does not list {}", missing.join(", ")));
                }
            }
            attempts.push(a);
        }
        // No level worked: the server goes back to normal.
        change_dropin(ctx, &d1, None)?;
        let up = restart(ctx)?;
        Err(refused(format!(
            "the server did not start with its tables listed at any level up to {}; innops removed innodb_force_recovery again and the server {}",
            p1.max_level,
            if up { "runs normally" } else { "is DOWN: read its error log" }
        )))
    })
    .post(Check::new("server runs at the recorded level", |ctx| {
        let e = escalation(ctx);
        let level = answering_level(ctx);
        Ok(Verdict::check(
            level.is_some() && e.as_ref().map(|e| u64::from(e.level)) == level,
            level.map(|l| format!("innodb_force_recovery={l}")).unwrap_or_else(|| "not answering".into()),
            e.map(|e| format!("innodb_force_recovery={}", e.level)).unwrap_or_else(|| "a recorded level".into()),
            "the server does not run at the level the escalation chose: resume to go on",
        ))
    }))
    .recover(move |ctx| {
        change_dropin(ctx, &d2, None)?;
        let up = restart(ctx)?;
        Ok(if up {
            "innops removed innodb_force_recovery from its drop-in and the server runs normally again".into()
        } else {
            "innops removed innodb_force_recovery from its drop-in, but the server did not start: read its error log".into()
        })
    })
}

/// Sessions to the server itself; when it crashes (a garbage record) and does not come back within a minute,
/// innops starts it again (its drop-in still holds the level).
struct InPlaceConnector<'a> {
    target: &'a crate::server::Target,
    control: &'a crate::server::control::Control,
    restarting: Mutex<()>,
}

impl Connector for InPlaceConnector<'_> {
    fn error_log(&self) -> Option<PathBuf> {
        self.control.error_log.clone()
    }

    fn connect(&self) -> anyhow::Result<mysql::Conn> {
        self.target.connect()
    }

    fn reconnect(&self, why: &str) -> anyhow::Result<mysql::Conn> {
        let _one = self.restarting.lock().unwrap_or_else(|e| e.into_inner());
        let waited = dump::TargetConnector {
            target: self.target,
            wait: Duration::from_secs(60),
            error_log: self.control.error_log.clone(),
        }
        .reconnect(why);
        if waited.is_ok() {
            return waited;
        }
        crate::progress::say(&format!(
            "      the server went away ({}): innops is starting it again, and the dump goes on from the last key read",
            crate::error::went_away_detail(why)
        ));
        self.control.start(self.target, &[])?;
        self.target.connect()
    }
}

pub(super) fn dump_in_place_step(p: &RecoverParams) -> Step {
    let (p1, p2) = (p.clone(), p.clone());
    Step::new("dump", format!("Dump every table to {}, ascending, descending and by key ranges past the damage", p.out.display()), Risk::Read)
        .preview(format!("per table: SELECT … FORCE INDEX (its key) ORDER BY key (streaming), then DESC from the end, then key ranges; the error log, key order and dates watched; each secondary index read against the rows; {} thread(s)", p.threads))
        .act(move |ctx| {
            let e = escalation(ctx).ok_or_else(|| post_check("the escalation's level is not recorded in this run: run the recovery again"))?;
            let tag = ctx.tag();
            let (tables, missing) = tables_to_dump(ctx.conn()?, &tag, &p1)?;
            if !missing.is_empty() {
                return Err(refused(format!("the server does not list {}: check the names in --tables", missing.join(", "))));
            }
            let mut opts = DumpOptions::new(&p1.out, e.level);
            opts.threads = p1.threads.max(1);
            opts.tag = tag.clone();
            // The page pass reads a copy's files, never the files of a server that runs: there is none here.
            opts.pages_off = Some(match p1.pages {
                Pages::Auto => "--in-place: the page pass reads only a copy's data files, and there is no copy".into(),
                Pages::Never => "--pages never".into(),
            });
            let control = ctx.control()?;
            // Transactions active at the crash, from the server's log since the chosen start (no look at level 3:
            // the server itself is not started more often than the escalation needs).
            let log = || e.log_from.map(|o| control.log_since(o)).unwrap_or_default();
            if e.level < 3 && !trx::wait_rollback(log, || ctx.target.connect().is_ok(), trx::ROLLBACK_WAIT) {
                trx::say_still_rolling_back();
            }
            let seen = if e.level >= 3 { trx::read_active(ctx.target, &tag).unwrap_or_default() } else { Vec::new() };
            let before = trx::assess(&log(), &seen);
            opts.table_doubts = trx::doubts(&before);
            let connector = InPlaceConnector { target: ctx.target, control, restarting: Mutex::new(()) };
            let mut m = dump::dump(&connector, &tables, &opts, ctx.abort)?;
            let after = trx::assess(&log(), &before);
            let late: Vec<_> = trx::doubts(&after).into_iter().filter(|d| !opts.table_doubts.contains(d)).collect();
            trx::amend(&p1.out, &mut m, &late)?;
            for line in after.iter().map(trx::describe).chain(table_lines(&m)) {
                crate::progress::say(&format!("      {line}"));
                ctx.outcome.push(line);
            }
            let mut v = summary(&m);
            v["recovered"] = serde_json::to_value(&after)?;
            Ok(v)
        })
        .post(manifest_check(&p2.out))
        .shortfall(verdict::losses(&p.out))
}

pub(super) fn restore_in_place_step(dropin: &Result<PathBuf, String>) -> Step {
    let d1 = dropin.clone();
    Step::new("restore", "Remove innodb_force_recovery from innops's drop-in and start the server normally", Risk::Restart)
        .preview("remove innodb_force_recovery and innodb_buffer_pool_load_at_startup from the drop-in; restart")
        .act(move |ctx| {
            let change = change_dropin(ctx, &d1, None)?;
            let up = restart(ctx)?;
            if !up {
                return Err(post_check("the server did not start without innodb_force_recovery: read its error log (the dump is complete in --out)"));
            }
            Ok(serde_json::json!({ "diff": change.diff() }))
        })
        .post(level_zero_check("the server runs without forced recovery"))
}

pub(super) fn final_in_place_step() -> Step {
    Step::new(
        "final",
        "Prove the server runs without forced recovery",
        Risk::Read,
    )
    .post(level_zero_check("the server runs without forced recovery"))
}
