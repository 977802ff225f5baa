//! The restart path of the resize (servers that resize only at startup, and `--offline`): a clean shutdown, the
//! drop-in already written by the persist step, a start, and the proofs, through the restart kit
//! ([`crate::procedures::kit::restart`]). A start that fails puts the previous drop-in back and starts again.

use std::path::PathBuf;

use crate::plan::{Check, Ctx, Risk, Step, Verdict};
use crate::procedures::kit::dropin;
use crate::procedures::kit::restart::{
    self, interrupted, readable_log, sigint_fault, ShutdownWording,
};
use crate::server::control::StopMode;
use crate::server::errorlog;
use crate::server::facts::RedoSizeVariable;
use crate::units::format_size;

use super::{
    current_size, error_log_check, log_file_check, option_file_check, query_size, size_check, Want,
};

pub(super) fn stop_step(want: &Want) -> Step {
    let w = want.clone();
    let var = want.var;
    Step::new("stop", "Shut the server down cleanly", Risk::Restart)
        .preview("/* innops:redo:stop */ SET GLOBAL innodb_fast_shutdown = 1 (when it is 2); SHUTDOWN")
        .pre(Check::new("restart needed", move |ctx| {
            let live = w.live(ctx)?;
            let observed = live.describe(&w);
            if live.is_end(&w) {
                return Ok(Verdict::done(observed, "a different size"));
            }
            if live.running.is_some() {
                return Ok(Verdict::pass(observed, format!("{} after restart", format_size(w.size))));
            }
            // Down already (a resumed run whose stop was cut short): done only after a clean shutdown.
            let start = restart::start_hint_or(ctx, "your usual start");
            let then = restart::resume_or(ctx, "run the resize again");
            Ok(match readable_log(ctx) {
                Some(control) if !errorlog::stopped_cleanly(&control.log_since(0)) => Verdict::fail(
                    format!("{observed}; its last process did not shut down cleanly"),
                    "running, or down after a clean shutdown",
                    format!("the server is down without a clean shutdown, and starting it with a new redo size would mix crash recovery with the resize: start it with {start} so InnoDB's crash recovery finishes, then {then}"),
                ),
                Some(_) => Verdict::done(format!("{observed} after a clean shutdown"), "running"),
                None => Verdict::done(format!("{observed} (its error log is not readable here)"), "running"),
            })
        }))
        .act(|ctx| {
            restart::abort_before_stop(ctx)?;
            let rec = restart::stop(ctx, StopMode::Clean)?;
            sigint_fault(ctx, "stop");
            if ctx.aborted() {
                let how = if rec.clean {
                    "it shut down cleanly".to_string()
                } else {
                    "its error log shows no clean shutdown, so the next start runs crash recovery".to_string()
                };
                return Err(interrupted(format!(
                    "interrupted during the shutdown: the server is DOWN ({how}); {} starts it with the new redo size and checks it, or start it yourself with {} (innops's drop-in already sets the new size)",
                    restart::resume_or(ctx, "innops"),
                    restart::start_hint_or(ctx, "your usual start")
                )));
            }
            Ok(serde_json::to_value(rec)?)
        })
        .post(restart::clean_shutdown(CLEAN_SHUTDOWN))
        .recover(move |ctx| start_after_unclean_stop(ctx, var))
        .bench()
}

/// The stop's proof: down, and `Shutdown complete` in what the server wrote since innops's own SHUTDOWN.
const CLEAN_SHUTDOWN: ShutdownWording = ShutdownWording {
    name: "clean shutdown",
    expected: "down after a clean shutdown",
    own_stop: "shutdown",
    fix: "the server went down without a clean shutdown (killed?), and starting it with a new redo size now would mix crash recovery with the resize",
};

/// After a stop that was not clean: start the server so InnoDB's crash recovery finishes, and say where it is.
fn start_after_unclean_stop(ctx: &mut Ctx, var: RedoSizeVariable) -> anyhow::Result<String> {
    if ctx.target.connect().is_ok() {
        return Ok("The server is running; innops changed nothing more.".into());
    }
    restart::start(ctx)?;
    let now = current_size(ctx, var)
        .map(format_size)
        .unwrap_or_else(|_| "an unknown size".into());
    let resume = restart::resume_or(ctx, "the resize again");
    Ok(format!(
        "innops started the server again so InnoDB's crash recovery could finish, and it runs with a redo log of {now}: read its error log, then run {resume} to finish"
    ))
}

pub(super) fn start_step(want: &Want, dropin: &Result<PathBuf, String>) -> Step {
    let (w, w2, w3) = (want.clone(), want.clone(), want.clone());
    let dropin = dropin.clone();
    let var = want.var;
    Step::new(
        "start",
        "Start the server with the new redo size",
        Risk::Restart,
    )
    .preview("start the server (it resizes the redo log at startup)")
    .pre(Check::after_prior("server is down, or runs with the new size already", move |ctx| {
        let live = w.live(ctx)?;
        let observed = live.describe(&w);
        Ok(if live.running.is_none() {
            Verdict::pass(observed, "down")
        } else if live.is_end(&w) {
            Verdict::done(observed, "down")
        } else {
            Verdict::fail(
                observed,
                format!("down, or running with {} from the option files", format_size(w.size)),
                format!(
                    "the server is running, but not with {} from the option files (after a failed start innops put the previous option file back and started it): find why the start failed in its error log, then run `{}` again",
                    format_size(w.size),
                    w.rerun()
                ),
            )
        })
    }))
    .pre(option_file_check(&w3, true))
    .act(move |ctx| {
        let file_before = w2.file();
        let (offset, lines) = restart::start(ctx)?;
        let d = restart::record_downtime(ctx, "stop", "with the new redo size");
        Ok(serde_json::json!({
            "log_offset": offset,
            "file_before": file_before,
            "log": lines,
            "downtime_s": d.map(|d| d.seconds)
        }))
    })
    .post(restart::accepts_connections())
    .post(size_check(
        want,
        "the server started with another size: check which option file or command-line option sets it last",
    ))
    .post(log_file_check(want))
    .post(error_log_check(true, want))
    .recover(move |ctx| restore_and_start(ctx, &dropin, var))
    .bench()
}

/// After a failed start: when the server did not come up, put the previous drop-in back and start again, so
/// the server runs as before. When it did come up, touch nothing and say how it runs.
fn restore_and_start(
    ctx: &mut Ctx,
    dropin: &Result<PathBuf, String>,
    var: RedoSizeVariable,
) -> anyhow::Result<String> {
    let path = dropin.clone().map_err(crate::error::refused)?;
    if let Ok(mut conn) = ctx.target.connect() {
        let now = query_size(&mut conn, &ctx.tag(), var)?;
        return Ok(format!(
            "The server is running with a redo log of {}; innops left {} as it is.",
            format_size(now),
            path.display()
        ));
    }
    dropin::restore(ctx, &path)?;
    restart::start(ctx)?;
    Ok(format!(
        "The previous {} was restored and the server started again with it.",
        path.display()
    ))
}
