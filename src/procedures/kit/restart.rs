//! Stopping and starting a server inside a plan, and proving each worked: the one restart kit redo, readonly and
//! recover use.
//!
//! A check of a restart judges only what the server wrote since the step's own action: the action journals the
//! error log's length before it acts (`log_offset`), and [`lines_since_action`] reads from there, so an older
//! clean shutdown or an older error proves nothing. When innops died inside the action (nothing journaled), the
//! lines of the server's latest process are what is left to judge, and the verdict says so.

use std::time::Duration;

use crate::plan::{Check, Ctx, Verdict};
use crate::server::control::{Control, StopMode, StopRecord};
use crate::server::errorlog;

/// The result of the latest action of `step` in this run's journal: what a check needs from its own step's
/// action (an error-log offset, say) survives a crash and a resume that way.
pub fn journaled(ctx: &Ctx, step: &str) -> Option<serde_json::Value> {
    // Through the context, so a playbook's member finds its own step (journaled as `readonly/stop`).
    ctx.recorded_result(step)
}

/// The error-log lines a check of `step` may judge: those the server wrote since that step's action began
/// (its offset is in the journal), or, when the action's result was never journaled (innops died inside it),
/// those of the server's latest process. The flag says which.
pub fn lines_since_action(ctx: &Ctx, control: &Control, step: &str) -> (Vec<String>, bool) {
    match journaled(ctx, step).and_then(|r| r.get("log_offset")?.as_u64()) {
        Some(offset) => (control.log_since(offset), true),
        None => {
            let all = control.log_since(0);
            (errorlog::latest_process(&all).to_vec(), false)
        }
    }
}

/// A readable error log, or None.
pub fn readable_log<'a>(ctx: &Ctx<'a>) -> Option<&'a Control> {
    ctx.control.filter(|c| c.error_log.is_some())
}

/// The error stopping a plan at a safe point, with the sentence that says where things stand.
pub fn interrupted(msg: String) -> anyhow::Error {
    crate::error::Failure::Interrupted(msg).into()
}

/// How this run goes on: `innops resume RUN_DIR`, or `otherwise` for a run without a directory.
pub fn resume_or(ctx: &Ctx, otherwise: &str) -> String {
    ctx.run_dir
        .as_ref()
        .map(|d| format!("`innops resume {}`", d.display()))
        .unwrap_or_else(|| otherwise.to_string())
}

/// The start command a person types for this server (from the control backend), or `otherwise`.
pub fn start_hint_or(ctx: &Ctx, otherwise: &str) -> String {
    ctx.control
        .map(|c| c.spec.start_hint())
        .unwrap_or_else(|| otherwise.to_string())
}

/// Whether the server answers a new connection now (the step's own may be stale after a restart).
pub fn server_answers(ctx: &mut Ctx) -> bool {
    ctx.drop_conn();
    ctx.target.connect().is_ok()
}

/// Before a stop: an abort asked for (Ctrl-C) ends the plan here, where nothing went down yet.
pub fn abort_before_stop(ctx: &Ctx) -> anyhow::Result<()> {
    if ctx.aborted() {
        return Err(interrupted(format!(
            "interrupted before the shutdown: the server is still running and this step changed nothing; continue with {}",
            resume_or(ctx, "innops")
        )));
    }
    Ok(())
}

/// Shut the server down through the control backend, the statement tagged with the step.
pub fn stop(ctx: &mut Ctx, mode: StopMode) -> anyhow::Result<StopRecord> {
    let control = ctx.control()?;
    let tag = ctx.tag();
    ctx.drop_conn();
    control.stop(ctx.target, mode, &tag.replace("/* ", "").replace(" */", ""))
}

/// Start the server with what its option files say; the error log's length before the start (what the start's
/// checks read from) and the lines the start wrote.
pub fn start(ctx: &mut Ctx) -> anyhow::Result<(u64, Vec<String>)> {
    let control = ctx.control()?;
    ctx.drop_conn();
    let offset = control.log_offset();
    let lines = control.start(ctx.target, &[])?;
    Ok((offset, lines))
}

/// After a start: wait (at most the start timeout) for the first connection the server accepts, and record the
/// downtime from `stop_step`'s SHUTDOWN to it, as the report's `downtime` and a summary line; `what` says how
/// the server came back. None when the stop's time is not journaled (a resumed run whose stop was never
/// recorded) or the server never accepted a connection.
pub fn record_downtime(
    ctx: &mut Ctx,
    stop_step: &str,
    what: &str,
) -> Option<crate::plan::report::Downtime> {
    let control = ctx.control?;
    let answered = wait_answers(ctx, control);
    let to = chrono::Utc::now();
    let stop = journaled(ctx, stop_step)?;
    // `stopped_at` from the stop record; `shutdown_at` in runs journaled before it existed.
    let from = ["stopped_at", "shutdown_at"].iter().find_map(|k| {
        serde_json::from_value::<chrono::DateTime<chrono::Utc>>(stop.get(*k)?.clone()).ok()
    })?;
    answered.then(|| push_downtime(ctx, from, to, what))
}

/// As [`record_downtime`], for a step that stopped the server itself, at `from` (a stop and a start in one
/// action, as an experiment's restart is).
pub fn record_downtime_since(
    ctx: &mut Ctx,
    from: chrono::DateTime<chrono::Utc>,
    what: &str,
) -> Option<crate::plan::report::Downtime> {
    let control = ctx.control?;
    let answered = wait_answers(ctx, control);
    let to = chrono::Utc::now();
    answered.then(|| push_downtime(ctx, from, to, what))
}

/// Wait (at most the start timeout) for the first connection the server accepts; whether it came.
fn wait_answers(ctx: &Ctx, control: &Control) -> bool {
    let deadline = std::time::Instant::now() + control.start_timeout;
    let mut answered = ctx.target.connect().is_ok();
    while !answered && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        answered = ctx.target.connect().is_ok();
    }
    answered
}

fn push_downtime(
    ctx: &mut Ctx,
    from: chrono::DateTime<chrono::Utc>,
    to: chrono::DateTime<chrono::Utc>,
    what: &str,
) -> crate::plan::report::Downtime {
    let d = crate::plan::report::Downtime {
        from,
        to,
        seconds: (to - from).num_milliseconds() as f64 / 1000.0,
        what: what.to_string(),
    };
    ctx.outcome.push(d.line());
    ctx.downtime.push(d.clone());
    d
}

/// Stop the server if it runs and start it with what the option files now say; whether it came up.
pub fn restart(ctx: &mut Ctx) -> anyhow::Result<bool> {
    if server_answers(ctx) {
        stop(ctx, StopMode::Clean)?;
    }
    Ok(start(ctx).is_ok() && ctx.target.connect().is_ok())
}

/// `server accepts connections`: the start's first proof.
pub fn accepts_connections() -> Check {
    Check::new("server accepts connections", |ctx| {
        ctx.drop_conn();
        let ok = ctx.conn().is_ok();
        Ok(Verdict::check(
            ok,
            if ok { "connected" } else { "refused" },
            "connected",
            "the server did not come back: read its error log",
        ))
    })
}

/// What the server shows after a shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterStop {
    /// It still answers.
    Answers,
    /// Down, and its error log is not readable here.
    DownUnread,
    /// Down; whether its log says `Shutdown complete`, and whether those lines are the ones since innops's own
    /// stop (else: its latest process's).
    Down { clean: bool, own: bool },
}

/// How a procedure words its clean-shutdown check.
#[derive(Debug, Clone, Copy)]
pub struct ShutdownWording {
    /// The check's name (in plan.json: keep it).
    pub name: &'static str,
    pub expected: &'static str,
    /// What innops's own stop is called in "since innops's …".
    pub own_stop: &'static str,
    /// Why an unclean shutdown stops the plan.
    pub fix: &'static str,
}

/// The verdict on a shutdown; `detail` is added to a clean one's observation (the slow shutdown's figures).
pub fn clean_shutdown_verdict(after: AfterStop, w: &ShutdownWording, detail: &str) -> Verdict {
    match after {
        AfterStop::Answers => Verdict::fail(
            "server still answers",
            w.expected,
            "the server still answers after the shutdown: check what started it again",
        ),
        AfterStop::DownUnread => Verdict::pass(
            "down (not checked for a clean shutdown: the error log is not readable here)",
            w.expected,
        ),
        AfterStop::Down { clean, own } => {
            let since = if own {
                format!("since innops's {}", w.own_stop)
            } else {
                "for its last process".to_string()
            };
            Verdict::check(
                clean,
                if clean {
                    format!("down, the log says Shutdown complete {since}{detail}")
                } else {
                    format!("down, no Shutdown complete line {since}")
                },
                w.expected,
                w.fix,
            )
        }
    }
}

/// What the server shows after the `stop` step's shutdown, and the log lines judged (empty when none were).
pub fn after_stop(ctx: &Ctx) -> (AfterStop, Vec<String>) {
    if ctx.target.connect().is_ok() {
        return (AfterStop::Answers, Vec::new());
    }
    let Some(control) = readable_log(ctx) else {
        return (AfterStop::DownUnread, Vec::new());
    };
    // Only what the server wrote since innops's own SHUTDOWN: an older clean shutdown proves nothing.
    let (lines, own) = lines_since_action(ctx, control, "stop");
    let clean = errorlog::stopped_cleanly(&lines);
    (AfterStop::Down { clean, own }, lines)
}

/// The clean-shutdown check of a `stop` step.
pub fn clean_shutdown(w: ShutdownWording) -> Check {
    Check::new(w.name, move |ctx| {
        let (after, _) = after_stop(ctx);
        Ok(clean_shutdown_verdict(after, &w, ""))
    })
}

/// The error-log summary of the server's latest process since the `start` step's action (None: the log is not
/// readable here).
pub fn start_log(ctx: &Ctx) -> Option<errorlog::LogSummary> {
    let control = readable_log(ctx)?;
    let (lines, _) = lines_since_action(ctx, control, "start");
    Some(errorlog::summarize(errorlog::latest_process(&lines)))
}

/// Calls `probe` every `every` until it reports done or `bound` has passed, and returns its last value: a wait for
/// something the server writes a moment after a statement returns, never longer than the bound.
pub fn poll_until<T>(bound: Duration, every: Duration, mut probe: impl FnMut() -> (bool, T)) -> T {
    let deadline = std::time::Instant::now() + bound;
    loop {
        let (done, value) = probe();
        if done || std::time::Instant::now() > deadline {
            return value;
        }
        std::thread::sleep(every);
    }
}

/// Test hook: `INNOPS_FAULT=sigint-in-action:STEP` sends innops a SIGINT inside that step's action, as Ctrl-C
/// would, and waits until the handler has raised the abort flag.
pub fn sigint_fault(ctx: &Ctx, step: &str) {
    if !crate::testhooks::sigint_in_action(step) {
        return;
    }
    // SAFETY: raise(2) on our own process; the handler installed by the command layer only sets a flag.
    unsafe { libc::raise(libc::SIGINT) };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !ctx.aborted() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_until_returns_when_done_and_ends_at_its_bound() {
        // Done at the third look, well inside the bound: exactly three looks.
        let mut looks = 0;
        let got = poll_until(Duration::from_secs(30), Duration::ZERO, || {
            looks += 1;
            (looks >= 3, looks)
        });
        assert_eq!((got, looks), (3, 3));
        // Never done, no time allowed: it gives up after the first look past the bound, with the last value.
        let mut looks = 0;
        let got = poll_until(Duration::ZERO, Duration::from_millis(1), || {
            looks += 1;
            (false, looks)
        });
        assert!((1..=3).contains(&got), "{got}");
    }

    const W: ShutdownWording = ShutdownWording {
        name: "clean shutdown",
        expected: "down after a clean shutdown",
        own_stop: "shutdown",
        fix: "the server went down without a clean shutdown",
    };

    #[test]
    fn only_a_shutdown_complete_line_since_innops_stop_proves_it_clean() {
        let v = clean_shutdown_verdict(
            AfterStop::Down {
                clean: true,
                own: true,
            },
            &W,
            " (slow)",
        );
        assert!(v.passed);
        assert_eq!(
            v.observed,
            "down, the log says Shutdown complete since innops's shutdown (slow)"
        );
        let v = clean_shutdown_verdict(
            AfterStop::Down {
                clean: true,
                own: false,
            },
            &W,
            "",
        );
        assert!(
            v.passed && v.observed.ends_with("for its last process"),
            "{v:?}"
        );
        let v = clean_shutdown_verdict(
            AfterStop::Down {
                clean: false,
                own: true,
            },
            &W,
            " (slow)",
        );
        assert!(!v.passed && !v.observed.contains("slow"), "{v:?}");
        assert_eq!(v.fix.as_deref(), Some(W.fix));
        assert!(!clean_shutdown_verdict(AfterStop::Answers, &W, "").passed);
        // An unreadable log is not taken as evidence either way: it passes and says it did not look.
        let v = clean_shutdown_verdict(AfterStop::DownUnread, &W, "");
        assert!(v.passed && v.observed.contains("not checked"));
    }
}
