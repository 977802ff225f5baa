//! The steps both directions of `innops readonly` share: the stop (slow going read-only, clean coming back),
//! the drop-in edit, the start and the verification, built on the restart kit
//! ([`crate::procedures::kit::restart`]). What differs by direction is asked of [`super::forward`] and
//! [`super::undo`].

use std::time::Instant;

use crate::plan::{Check, Ctx, Risk, Step, Verdict};
use crate::procedures::kit::restart::{
    self, journaled, lines_since_action, readable_log, AfterStop, ShutdownWording,
};
use crate::procedures::kit::{checks, dropin};
use crate::server::control::StopMode;
use crate::server::errorlog;
use crate::server::optionfile;
use crate::sql::Queryable;

use super::forward::{self, probe_sql};
use super::undo;
use super::{
    live_ro, merge_state, read_only_is, read_state, resume_hint, state_path, Ro, State,
    ER_OPEN_AS_READONLY, PROBE_SCHEMA, PROBE_TABLE,
};

pub(super) fn stop_step(ro: &Ro) -> Step {
    let undo = ro.p.undo;
    let want_ro = !undo;
    let pid_file = ro.pid_file.clone();
    let pid_file2 = ro.pid_file.clone();
    let mode = if undo {
        StopMode::Clean
    } else {
        StopMode::Slow
    };
    Step::new(
        "stop",
        if undo {
            "Shut the read-only server down cleanly"
        } else {
            "Slow shutdown (innodb_fast_shutdown=0)"
        },
        Risk::Restart,
    )
    .preview(if undo {
        "/* innops:readonly:stop */ SET GLOBAL innodb_fast_shutdown = 1 (when it is 2); SHUTDOWN"
    } else {
        "/* innops:readonly:stop */ SELECT @@innodb_fast_shutdown, Innodb_history_list_length; SET GLOBAL innodb_fast_shutdown = 0; SHUTDOWN; wait for the process to exit"
    })
    .pre(Check::after_prior("shutdown needed", move |ctx| {
        Ok(match live_ro(ctx)? {
            Some(ro) if ro == want_ro => Verdict::done(
                format!("running with innodb_read_only={}", u8::from(ro)),
                "a restart",
            ),
            Some(ro) => Verdict::pass(
                format!("running with innodb_read_only={}", u8::from(ro)),
                "running",
            ),
            None => {
                let log_clean = readable_log(ctx).map(|c| errorlog::stopped_cleanly(&c.log_since(0)));
                let pid_left = pid_file.as_ref().map(|f| f.exists());
                let hint = restart::start_hint_or(ctx, "its usual start command");
                down_verdict(log_clean, pid_left, &hint)
            }
        })
    }))
    .act(move |ctx| {
        restart::abort_before_stop(ctx)?;
        let tag = ctx.tag();
        let fast_before: Option<u64> = ctx
            .conn()?
            .query_first(format!("SELECT {tag} @@GLOBAL.innodb_fast_shutdown"))?;
        let at = chrono::Utc::now();
        let t0 = Instant::now();
        let rec = restart::stop(ctx, mode)?;
        Ok(serde_json::json!({
            "shutdown_at": at,
            "shutdown_seconds": t0.elapsed().as_secs_f64(),
            "fast_shutdown_before": fast_before,
            "fast_shutdown": rec.fast_shutdown,
            "history_list_length": rec.history_list_length,
            "log_offset": rec.log_offset,
            "log": rec.log_lines,
            "clean": rec.clean,
        }))
    })
    .post(clean_shutdown_check(undo))
    .post(Check::new("pid file removed", move |_| {
        let Some(f) = pid_file2.clone() else {
            return Ok(Verdict::pass("not checked: the pid file is not on this machine", "removed"));
        };
        let gone = !f.exists();
        Ok(Verdict::check(
            gone,
            if gone { format!("{} is gone", f.display()) } else { format!("{} is still there", f.display()) },
            "removed",
            "the pid file is still there, so the server did not end cleanly (or another process wrote it): check its error log",
        ))
    }))
    .recover(start_after_failed_stop)
}

/// The stop step's verdict on a server found down before innops stopped it: `log_clean` is what the error log
/// says of its last process (None: not readable here), `pid_left` whether its pid file is still there (None: not
/// on this machine). A server that went down without a clean shutdown (a crash, `kill -9`) needs crash recovery,
/// which a read-only start refuses; with no evidence either way innops cannot tell, and says so.
fn down_verdict(log_clean: Option<bool>, pid_left: Option<bool>, start_hint: &str) -> Verdict {
    let expected = "running, or down after a clean shutdown";
    let start = format!(
        "start it with {start_hint} so InnoDB's crash recovery runs, then run the command again"
    );
    match (log_clean, pid_left) {
        (Some(false), _) => Verdict::fail(
            "down, and the error log shows no clean shutdown of its last process (a crash or a kill)",
            expected,
            format!("the server is down without a clean shutdown, and a read-only start would refuse its crash recovery: {start}"),
        ),
        (_, Some(true)) => Verdict::fail(
            "down, and its pid file is still there (a server that shuts down cleanly removes it)",
            expected,
            format!("the server is down without a clean shutdown, and a read-only start would refuse its crash recovery: {start}"),
        ),
        (Some(true), _) => Verdict::done(
            "down after a clean shutdown innops did not make (the error log says Shutdown complete for its last process)",
            "running",
        ),
        (None, _) => Verdict::fail(
            "down, and innops cannot tell whether it shut down cleanly (its error log is not readable here and the pid file tells nothing)",
            expected,
            format!("the server went down before this step and nothing here proves a clean shutdown: {start}"),
        ),
    }
}

fn clean_shutdown_check(undo: bool) -> Check {
    let w = ShutdownWording {
        name: if undo {
            "clean shutdown"
        } else {
            "clean slow shutdown"
        },
        expected: if undo {
            "down after a clean shutdown"
        } else {
            "down after a clean shutdown with innodb_fast_shutdown=0"
        },
        own_stop: "SHUTDOWN",
        fix: "the server went down without a clean shutdown (killed?), and a read-only start would refuse the crash recovery it needs",
    };
    Check::new(w.name, move |ctx| {
        let (after, lines) = restart::after_stop(ctx);
        if after == AfterStop::Answers {
            return Ok(restart::clean_shutdown_verdict(after, &w, ""));
        }
        let rec = journaled(ctx, "stop");
        let fast = rec.as_ref().and_then(|r| r.get("fast_shutdown")?.as_u64());
        let history = rec
            .as_ref()
            .and_then(|r| r.get("history_list_length")?.as_u64());
        if !undo && fast.is_some_and(|f| f != 0) {
            return Ok(Verdict::fail(
                format!("innodb_fast_shutdown was {} at SHUTDOWN", fast.unwrap_or(0)),
                w.expected,
                "the shutdown was not slow, and a read-only server must start without pending purge: run the command again",
            ));
        }
        Ok(restart::clean_shutdown_verdict(
            after,
            &w,
            &slow_detail(fast, history, &lines),
        ))
    })
}

/// What a clean observation adds about the slow shutdown: the settings at SHUTDOWN and the server's purge line.
fn slow_detail(fast: Option<u64>, history: Option<u64>, lines: &[String]) -> String {
    let purge = lines
        .iter()
        .find(|l| l.contains("to purge"))
        .map(|l| format!("; {}", l.trim()))
        .unwrap_or_default();
    match (fast, history) {
        (Some(f), Some(h)) => {
            format!(" (innodb_fast_shutdown={f}, history {h} at SHUTDOWN{purge})")
        }
        _ => purge,
    }
}

/// After a stop that was not clean (or not slow): start the server normally so crash recovery finishes.
fn start_after_failed_stop(ctx: &mut Ctx) -> anyhow::Result<String> {
    if ctx.target.connect().is_ok() {
        return Ok("The server is running read-write; innops changed nothing more.".into());
    }
    let (_, lines) = restart::start(ctx)?;
    let recovered = errorlog::summarize(&lines).crash_recovery;
    Ok(format!(
        "innops started the server again read-write{}; read its error log, then run {} to try again",
        if recovered {
            " and InnoDB's crash recovery ran"
        } else {
            ""
        },
        resume_hint(ctx)
    ))
}

pub(super) fn dropin_step(ro: &Ro) -> Step {
    let r1 = ro.clone();
    let r2 = ro.clone();
    let r3 = ro.clone();
    let state = match (&ro.dropin, ro.p.undo) {
        (Ok(path), true) => read_state(path),
        _ => None,
    };
    let preview = match (&ro.dropin, ro.change(state.as_ref())) {
        (Ok(path), Ok(c)) if c.is_noop() => {
            format!("{} already has these settings", path.display())
        }
        (Ok(path), Ok(c)) => format!("edit {}:\n{}", path.display(), c.diff().trim_end()),
        (Ok(path), Err(e)) => format!("edit {} ({})", path.display(), crate::error::display_of(&e)),
        (Err(_), _) => "write innops's drop-in (location unknown)".into(),
    };
    let undo = ro.p.undo;
    Step::new(
        "dropin",
        if undo {
            "Remove innodb_read_only from innops's drop-in"
        } else {
            "Write innodb_read_only=1 into innops's drop-in"
        },
        Risk::Online,
    )
    .preview(preview)
    .pre(Check::new("drop-in state", move |_| {
        let path = r1.dropin.clone().map_err(crate::error::refused)?;
        let state = if r1.p.undo { read_state(&path) } else { None };
        let change = r1.change(state.as_ref())?;
        let state_left = r1.p.undo && state_path(&path).exists();
        Ok(if change.is_noop() && !state_left {
            Verdict::done(format!("{} has the settings", path.display()), "a change")
        } else {
            Verdict::pass(format!("{} would change", path.display()), "a change")
        })
    }))
    .act(move |ctx| {
        let path = r2.dropin.clone().map_err(crate::error::refused)?;
        let backup = dropin::backup_dir(ctx);
        let state = if r2.p.undo {
            read_state(&path)
        } else {
            // What --undo gives back: the drop-in's redo value before and the size the server ran with.
            let redo_running_before = ctx
                .recorded_result("min-redo")
                .and_then(|r| r.get("before")?.as_u64())
                .or(r2.redo_before);
            let current = optionfile::read(&path).ok();
            Some(State {
                redo_key: r2.min_redo.map(|(_, k)| k.to_string()),
                redo_dropin_before: r2.min_redo.and_then(|(_, k)| {
                    current.as_ref()?.get(&["mysqld"], k).map(str::to_string)
                }),
                redo_running_before: r2.min_redo.and(redo_running_before),
                sql_read_only: r2.p.sql_read_only,
                replication: super::replica::frozen(ctx),
                read_only_before: Some(r2.read_only_now),
            })
        };
        let change = r2.change(if r2.p.undo { state.as_ref() } else { None })?;
        change.apply(&backup)?;
        let sp = state_path(&path);
        if r2.p.undo {
            if sp.exists() {
                let name = sp.file_name().unwrap_or_default().to_string_lossy().to_string();
                let _ = std::fs::create_dir_all(&backup);
                std::fs::copy(&sp, backup.join(&name))?;
                std::fs::remove_file(&sp)?;
            }
        } else if let Some(st) = &state {
            // A second forward run must not overwrite what the first recorded (the original values), but what
            // only it changed (the redo size) is added, so --undo gives that back too.
            let merged = merge_state(read_state(&path), st.clone());
            std::fs::write(&sp, serde_json::to_string_pretty(&merged)?)?;
        }
        Ok(serde_json::json!({ "file": path, "diff": change.diff(), "backup_dir": backup, "state": state }))
    })
    .post(Check::new("the server will read innodb_read_only at startup", move |_| {
        let want = !r3.p.undo;
        let expected = format!("innodb_read_only = {}", u8::from(want));
        Ok(match r3.next_start_ro()? {
            None => Verdict::pass("not checked: the server's option file is unknown (pass --config-file)", expected),
            Some(got) => Verdict::check(
                got == want,
                format!("the option files give innodb_read_only = {}", u8::from(got)),
                expected,
                "another option file read after innops's drop-in sets innodb_read_only: make innops's drop-in the last to set it",
            ),
        })
    }))
}

pub(super) fn start_step(ro: &Ro) -> Step {
    let undo = ro.p.undo;
    let want_ro = !undo;
    let r = ro.clone();
    let sql_ro = ro.p.sql_read_only;
    let rerun = ro.rerun();
    let mut step = Step::new(
        "start",
        if undo {
            "Start the server read-write"
        } else {
            "Start the server read-only"
        },
        Risk::Restart,
    )
    .preview("start the server with innops's drop-in; measure the downtime from SHUTDOWN to the first accepted connection")
    .pre(Check::after_prior("server is down", move |ctx| {
        Ok(match live_ro(ctx)? {
            None => Verdict::pass("down", "down"),
            Some(ro) if ro == want_ro => Verdict::done(format!("running with innodb_read_only={}", u8::from(ro)), "down"),
            Some(ro) => Verdict::fail(
                format!("running with innodb_read_only={}", u8::from(ro)),
                "down",
                format!("the server is running, but not as this run wants it (after a failed start innops puts the previous drop-in back and starts it): read its error log for why, then run `{rerun}` again"),
            ),
        })
    }))
    .act(move |ctx| {
        let (offset, lines) = restart::start(ctx)?;
        // The first connection the server accepts ends the downtime.
        let d = restart::record_downtime(ctx, "stop", if want_ro { "in read-only mode" } else { "read-write" });
        Ok(serde_json::json!({
            "log_offset": offset,
            "first_connection_at": d.as_ref().map(|d| d.to),
            "downtime_s": d.as_ref().map(|d| d.seconds),
            "log": lines
        }))
    })
    .post(restart::accepts_connections())
    .post(ro_var_check(want_ro))
    .post(Check::new(
        if undo { "error log: a normal start, no errors" } else { "error log: started in read only mode" },
        move |ctx| {
            let Some(s) = restart::start_log(ctx) else {
                return Ok(checks::log_not_readable("checked"));
            };
            Ok(if let Some(failed) = checks::log_errors_verdict(&s, "the server logged errors at its start: read them before going on") {
                failed
            } else if undo {
                Verdict::check(!s.read_only, if s.read_only { "Started in read only mode" } else { "no read-only line" }, "no read-only line", "the server still started read-only: check which option file sets innodb_read_only")
            } else {
                Verdict::check(s.read_only, if s.read_only { "InnoDB: Started in read only mode" } else { "no read-only line" }, "InnoDB: Started in read only mode", "the server did not log a read-only start: read its error log")
            })
        },
    ))
    .recover(move |ctx| restore_and_start(ctx, &r))
    .bench();
    if undo {
        step = step
            .post(undo::read_only_as_before(ro.read_only_after_undo))
            .post(undo::redo_size_restored());
    } else if sql_ro {
        step = step.post(read_only_is(
            true,
            "read_only did not come on: check which option file sets it last",
        ));
    }
    step
}

fn ro_var_check(want: bool) -> Check {
    Check::new(
        if want {
            "@@innodb_read_only is 1"
        } else {
            "@@innodb_read_only is 0"
        },
        move |ctx| {
            let tag = ctx.tag();
            let v: Option<u64> = ctx
                .conn()?
                .query_first(format!("SELECT {tag} @@GLOBAL.innodb_read_only"))?;
            let v = v.unwrap_or(0);
            Ok(Verdict::check(
                (v != 0) == want,
                format!("innodb_read_only={v}"),
                format!("innodb_read_only={}", u8::from(want)),
                "the server did not start as the drop-in says: check which option file or command-line option sets innodb_read_only",
            ))
        },
    )
}

/// After a failed start: put the previous drop-in (and state file) back and start the server as it was; the
/// sentence quotes why the start failed.
fn restore_and_start(ctx: &mut Ctx, ro: &Ro) -> anyhow::Result<String> {
    let path = ro.dropin.clone().map_err(crate::error::refused)?;
    let lines = match readable_log(ctx) {
        Some(control) => lines_since_action(ctx, control, "start").0,
        None => Vec::new(),
    };
    let why = errorlog::summarize(&lines)
        .aborted
        .map(|r| format!(" The start failed because the server logged: {r}."))
        .unwrap_or_default();
    if let Ok(mut conn) = ctx.target.connect() {
        let v: Option<u64> =
            conn.query_first(format!("SELECT {} @@GLOBAL.innodb_read_only", ctx.tag()))?;
        return Ok(format!(
            "The server is running with innodb_read_only={}; innops left {} as it is.{why}",
            v.unwrap_or(0),
            path.display()
        ));
    }
    dropin::restore(ctx, &path)?;
    let sp = state_path(&path);
    let backup = dropin::backup_dir(ctx).join(sp.file_name().unwrap_or_default());
    if ro.p.undo {
        if backup.is_file() {
            std::fs::copy(&backup, &sp)?;
        }
    } else {
        let _ = std::fs::remove_file(&sp);
    }
    let (_, started) = restart::start(ctx)?;
    let recovered = errorlog::summarize(&started).crash_recovery;
    Ok(format!(
        "innops put the previous {} back and started the server {}{}.{why}",
        path.display(),
        if ro.p.undo {
            "read-only again"
        } else {
            "read-write"
        },
        if recovered {
            " (InnoDB's crash recovery ran)"
        } else {
            ""
        }
    ))
}

/// InnoDB's refusals of a write on a read-only server: `ER_OPEN_AS_READONLY` (what MariaDB 10.11 answers an
/// UPDATE with under innodb_read_only), `ER_CANT_LOCK` with errno 165 (MySQL 5.7), `ER_READ_ONLY_MODE` and
/// `ER_INNODB_READ_ONLY`.
const INNODB_READ_ONLY_ERRORS: [u16; 4] = [ER_OPEN_AS_READONLY, 1015, 1836, 1874];
/// `ER_OPTION_PREVENTS_STATEMENT`: read_only=1 refused the statement before InnoDB saw it.
const ER_OPTION_PREVENTS_STATEMENT: u16 = 1290;

/// The verdict on the write probe's outcome. Only a read-only refusal proves the server read-only: any other
/// error (the table missing, access denied, a lock wait that ran out) proves nothing and fails the check.
/// read_only=1's refusal counts only when the run set it (`--sql-read-only`); innodb_read_only itself is then
/// proven by the variable's check beside this one.
fn probe_verdict(undo: bool, sql_ro: bool, r: Result<(), mysql::Error>) -> Verdict {
    let expected = if undo {
        "accepted (0 rows changed)".to_string()
    } else {
        format!("ERROR {ER_OPEN_AS_READONLY} (table is read only) or another read-only refusal")
    };
    match (undo, r) {
        (true, Ok(())) => Verdict::pass("accepted, 0 rows changed", expected),
        (false, Err(mysql::Error::MySqlError(e))) if INNODB_READ_ONLY_ERRORS.contains(&e.code) => {
            Verdict::pass(format!("ERROR {}: {}", e.code, e.message), expected)
        }
        (false, Err(mysql::Error::MySqlError(e)))
            if sql_ro && e.code == ER_OPTION_PREVENTS_STATEMENT =>
        {
            Verdict::pass(
                format!("ERROR {}: {} (read_only=1 refused it before InnoDB)", e.code, e.message),
                expected,
            )
        }
        (_, Err(mysql::Error::MySqlError(e))) if e.code == 1146 => Verdict::fail(
            format!("{PROBE_SCHEMA}.{PROBE_TABLE} is missing"),
            expected,
            "the probe table innops created before the shutdown is gone: check the data directory the server started with",
        ),
        (_, Err(e)) => Verdict::fail(
            format!("ERROR: {}", crate::error::describe_mysql(&e)),
            expected,
            if undo {
                "the server refuses writes: check innodb_read_only and read_only"
            } else {
                "the write probe failed with another error than a read-only refusal, so it proves nothing: fix what the error says (the account needs UPDATE on the probe table), then run the command again"
            },
        ),
        (false, Ok(())) => Verdict::fail(
            "accepted",
            expected,
            "the server accepts InnoDB writes: it is not read-only; check innodb_read_only",
        ),
    }
}

pub(super) fn verify_step(ro: &Ro) -> Step {
    let undo = ro.p.undo;
    let sql_ro = ro.p.sql_read_only;
    let mut step = Step::new(
        "verify",
        if undo {
            "Verify the server is read-write"
        } else {
            "Verify the server is read-only"
        },
        Risk::Read,
    )
    .post(ro_var_check(!undo))
    .post(Check::new(
        if undo {
            "write probe is accepted"
        } else {
            "write probe is refused with the read-only error"
        },
        move |ctx| {
            let tag = ctx.tag();
            let sql = probe_sql(&tag);
            let r = ctx.conn()?.query_drop(&sql);
            Ok(probe_verdict(undo, sql_ro, r))
        },
    ));
    if !undo {
        step = step.post(forward::logged_read_only_start());
        if sql_ro {
            step = step.post(read_only_is(
                true,
                "read_only is off: check which option file sets it last",
            ));
        }
    }
    step
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_error(code: u16) -> Result<(), mysql::Error> {
        Err(mysql::Error::MySqlError(mysql::MySqlError {
            state: "HY000".into(),
            message: format!("error {code}"),
            code,
        }))
    }

    #[test]
    fn only_a_read_only_refusal_proves_the_server_read_only() {
        // What MariaDB 10.11 answers under innodb_read_only, and the other InnoDB read-only refusals.
        for code in [1036, 1015, 1836, 1874] {
            assert!(
                probe_verdict(false, false, server_error(code)).passed,
                "{code}"
            );
        }
        // A missing table, access denied, a lock wait that ran out, a deadlock, a lost connection: nothing
        // proven, the check fails.
        for code in [1146, 1142, 1205, 1213, 2013] {
            let v = probe_verdict(false, false, server_error(code));
            assert!(!v.passed, "{code}: {v:?}");
            assert!(
                v.observed.contains(&code.to_string()) || code == 1146,
                "{v:?}"
            );
        }
        // read_only=1's refusal counts only when the run set it.
        assert!(probe_verdict(false, true, server_error(1290)).passed);
        assert!(!probe_verdict(false, false, server_error(1290)).passed);
        assert!(
            !probe_verdict(false, false, Ok(())).passed,
            "an accepted write"
        );
        // Back to read-write: only an accepted write passes.
        assert!(probe_verdict(true, false, Ok(())).passed);
        assert!(!probe_verdict(true, false, server_error(1036)).passed);
    }

    #[test]
    fn a_server_found_down_passes_only_after_a_proven_clean_shutdown() {
        let clean_log = Some(true);
        assert!(down_verdict(clean_log, Some(false), "x").already_done);
        assert!(down_verdict(clean_log, None, "x").already_done);
        // A crash: the log shows no clean shutdown, or the pid file was left behind.
        let crashed = down_verdict(Some(false), None, "systemctl start x");
        assert!(
            !crashed.passed
                && crashed
                    .fix
                    .as_deref()
                    .unwrap()
                    .contains("systemctl start x")
        );
        assert!(!down_verdict(Some(false), Some(false), "x").passed);
        assert!(
            !down_verdict(clean_log, Some(true), "x").passed,
            "a pid file left behind"
        );
        assert!(!down_verdict(None, Some(true), "x").passed);
        // No evidence at all: not taken as clean.
        let unknown = down_verdict(None, None, "x");
        assert!(
            !unknown.passed && unknown.observed.contains("cannot tell"),
            "{unknown:?}"
        );
        assert!(!down_verdict(None, Some(false), "x").passed);
    }
}
