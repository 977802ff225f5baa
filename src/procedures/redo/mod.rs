//! Redo-log resize.
//!
//! The resize is online where the server can do it (MariaDB 10.9+ `SET GLOBAL innodb_log_file_size`, MySQL
//! 8.0.30+ `innodb_redo_log_capacity`) and otherwise a clean shutdown, a config edit and a start. Either way the
//! new size goes into innops's drop-in so a restart keeps it: MariaDB forgets an online resize at restart
//! (shared/FACTS.md §2). The sizing advice is in [`advice`]; the checks and restart steps shared with other
//! procedures are in [`crate::procedures::kit`].

mod advice;
mod offline;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sql::Queryable;
use serde::{Deserialize, Serialize};

use crate::error::bad_input;
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::kit::checks::{self, ControlNeed, SpaceNeed};
use crate::procedures::kit::dropin::{self, effective_config};
use crate::procedures::kit::restart::{journaled, lines_since_action, poll_until, readable_log};
use crate::procedures::PlanEnv;
use crate::server::errorlog;
use crate::server::facts::{Flavor, RedoResize, RedoSizeVariable, ServerFacts};
use crate::server::optionfile;
use crate::units::format_size;

/// Kept where convert finds it until its preflight moves to the kit (another helper's work).
pub use crate::procedures::kit::checks::free_bytes;
pub use advice::{
    advice_command, advise, minutes_held, recommend_size, redo_command, redo_counter,
    render_advice, Advice,
};
use offline::{start_step, stop_step};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RedoParams {
    /// New total redo size in bytes.
    pub size: u64,
    /// Force the restart path.
    pub offline: bool,
}

/// Which path a resize takes here.
pub fn choose_path(facts: &ServerFacts, offline: bool) -> RedoResize {
    if offline {
        RedoResize::RestartOnly
    } else {
        facts.redo_resize()
    }
}

/// Why a size cannot be used on this server, if it cannot. Pure, so every limit is unit-tested.
pub fn size_problem(facts: &ServerFacts, size: u64, online: bool) -> Option<String> {
    let (min, max, granule) = facts.redo_size_limits();
    let mut min = min;
    let buffer = facts.var_u64("innodb_log_buffer_size").unwrap_or(0);
    if online && facts.redo_size_variable() == RedoSizeVariable::InnodbLogFileSize && buffer > min {
        min = buffer;
    }
    if size < min {
        return Some(format!(
            "{} is below the smallest redo log {} accepts here ({}{}): choose at least {}",
            format_size(size),
            facts.describe(),
            format_size(min),
            if min == buffer {
                ", innodb_log_buffer_size"
            } else {
                ""
            },
            format_size(min)
        ));
    }
    if size > max {
        return Some(format!(
            "{} is above the largest redo log {} accepts ({}): choose a smaller size",
            format_size(size),
            facts.describe(),
            format_size(max)
        ));
    }
    if !size.is_multiple_of(granule) {
        let up = size.div_ceil(granule) * granule;
        return Some(format!(
            "{size} bytes is not a multiple of {granule} bytes, and the server would silently round it: use {up} ({})",
            format_size(up)
        ));
    }
    None
}

/// Parse the `--size` flag and build the params.
pub fn params(size: &str, offline: bool) -> anyhow::Result<RedoParams> {
    let size = crate::units::parse_size(size)?;
    if size == 0 {
        return Err(bad_input(
            "--size 0 is not a redo size: give the new total size, for example --size 256M",
        ));
    }
    Ok(RedoParams { size, offline })
}

fn log_file_path(facts: &ServerFacts) -> Option<PathBuf> {
    if facts.flavor != Flavor::MariaDB {
        return None;
    }
    let datadir = facts.var("datadir")?;
    let home = facts.var("innodb_log_group_home_dir").unwrap_or("./");
    let dir = if Path::new(home).is_absolute() {
        PathBuf::from(home)
    } else {
        Path::new(datadir).join(home)
    };
    Some(dir.join("ib_logfile0"))
}

fn query_size(conn: &mut mysql::Conn, tag: &str, var: RedoSizeVariable) -> anyhow::Result<u64> {
    let sql = match var {
        RedoSizeVariable::InnodbRedoLogCapacity => {
            format!("SELECT {tag} @@GLOBAL.innodb_redo_log_capacity")
        }
        RedoSizeVariable::InnodbLogFileSize => {
            format!("SELECT {tag} @@GLOBAL.innodb_log_file_size")
        }
        RedoSizeVariable::LogFileSizeTimesFiles => {
            format!(
                "SELECT {tag} @@GLOBAL.innodb_log_file_size * @@GLOBAL.innodb_log_files_in_group"
            )
        }
    };
    let v: Option<u64> = conn.query_first(sql)?;
    Ok(v.unwrap_or(0))
}

fn current_size(ctx: &mut Ctx, var: RedoSizeVariable) -> anyhow::Result<u64> {
    let tag = ctx.tag();
    query_size(ctx.conn()?, &tag, var)
}

/// The requested end state, and where every check reads the live one.
#[derive(Debug, Clone)]
struct Want {
    var: RedoSizeVariable,
    /// The total redo size asked for.
    size: u64,
    /// The option that sets it at startup, and the value the option files must give it (per file on old MySQL).
    key: &'static str,
    config: u64,
    logfile: Option<PathBuf>,
    option_file: Option<PathBuf>,
    /// The server's version string: which version groups of the option files it reads.
    version: String,
    local: bool,
    offline: bool,
    /// The connection and control flags the run was given, for commands it prints.
    flags: String,
}

/// The redo size as the server and its files show it now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Live {
    /// The running size; None when the server does not answer.
    running: Option<u64>,
    /// The size of `ib_logfile0`; None when it cannot be read here.
    file: Option<u64>,
    /// What the option files give at the next start: None when innops does not know them, Some(None) when
    /// they do not set it.
    next_start: Option<Option<u64>>,
}

impl Live {
    /// The live state is the requested end state: running with the size, the file on disk of that size (where
    /// it can be read), and the option files giving it at the next start (where they are known).
    fn is_end(&self, want: &Want) -> bool {
        self.running == Some(want.size)
            && self.file.is_none_or(|f| f == want.size)
            && self.next_start.is_none_or(|n| n == Some(want.config))
    }

    fn describe(&self, want: &Want) -> String {
        let mut parts = vec![match self.running {
            Some(r) => format!("running with {}", format_size(r)),
            None => "down".to_string(),
        }];
        if let Some(f) = self.file {
            parts.push(format!("ib_logfile0 {}", format_size(f)));
        }
        match self.next_start {
            Some(Some(n)) => parts.push(format!("option files give {} = {n}", want.key)),
            Some(None) => parts.push(format!("option files do not set {}", want.key)),
            None => {}
        }
        parts.join(", ")
    }
}

impl Want {
    /// The running size from a connection of its own (the step's may be stale after a restart); None when the
    /// server does not answer.
    fn running(&self, ctx: &Ctx) -> anyhow::Result<Option<u64>> {
        match ctx.target.connect() {
            Ok(mut conn) => Ok(Some(query_size(&mut conn, &ctx.tag(), self.var)?)),
            Err(_) => Ok(None),
        }
    }

    fn file(&self) -> Option<u64> {
        let file = self.logfile.as_ref().filter(|_| self.local)?;
        std::fs::metadata(file).ok().map(|m| m.len())
    }

    fn next_start(&self) -> anyhow::Result<Option<Option<u64>>> {
        let Some(file) = &self.option_file else {
            return Ok(None);
        };
        let got = effective_config(file, self.key, &self.version)?;
        Ok(Some(
            got.as_deref()
                .and_then(|v| crate::units::parse_size(v).ok()),
        ))
    }

    fn live(&self, ctx: &Ctx) -> anyhow::Result<Live> {
        Ok(Live {
            running: self.running(ctx)?,
            file: self.file(),
            next_start: self.next_start()?,
        })
    }

    /// The command that starts this resize afresh, with the run's connection flags.
    fn rerun(&self) -> String {
        redo_command(self.size, self.offline, &self.flags)
    }
}

/// Build the resize plan. A size the server cannot take is bad input: no plan is built for it.
pub fn plan(p: &RedoParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    let path = choose_path(facts, p.offline);
    let online = path != RedoResize::RestartOnly;
    if let Some(why) = size_problem(facts, p.size, online) {
        return Err(bad_input(why));
    }
    let var = facts.redo_size_variable();
    // What one config key can express: on old MySQL the size is per file.
    let files = match var {
        RedoSizeVariable::LogFileSizeTimesFiles => {
            facts.var_u64("innodb_log_files_in_group").unwrap_or(2)
        }
        _ => 1,
    };
    let size = p.size;
    let want = Want {
        var,
        size,
        key: var.config_key(),
        config: size / files,
        logfile: log_file_path(facts),
        option_file: env.option_file.clone(),
        version: facts.version_string.clone(),
        local: env.target.local,
        offline: !online,
        flags: env.flags(),
    };
    let mut notes = vec![match path {
        RedoResize::OnlineLogFileSize => format!(
            "{} resizes the redo log online (SET GLOBAL innodb_log_file_size); the drop-in keeps the size across restarts",
            facts.describe()
        ),
        RedoResize::OnlineRedoLogCapacity => format!(
            "{} resizes the redo log online (innodb_redo_log_capacity); the drop-in keeps the size across restarts",
            facts.describe()
        ),
        RedoResize::RestartOnly if p.offline && facts.redo_resize() != RedoResize::RestartOnly => {
            "--offline: clean shutdown, config edit, start (the server could resize online)".to_string()
        }
        RedoResize::RestartOnly => format!(
            "{} resizes the redo log only at startup: clean shutdown, config edit, start",
            facts.describe()
        ),
    }];
    if let Some(cur) = facts.redo_size_bytes() {
        notes.push(format!(
            "redo log now {}, target {}",
            format_size(cur),
            format_size(size)
        ));
    }
    let mut header = env.header(
        crate::plan::Procedure::Redo,
        facts,
        serde_json::to_value(p)?,
        notes,
    );

    let mut steps = vec![preflight(p, facts, env, online)];
    let dropin = env.dropin.clone();
    let persist = persist_step(&dropin, &want);

    if online {
        steps.push(resize_step(path, &want));
        steps.push(persist);
    } else {
        steps.push(persist);
        steps.push(stop_step(&want));
        steps.push(start_step(&want, &dropin));
        steps.extend(crate::procedures::kit::replicas::after_restart(
            "replicas-reconnect",
            env,
            facts,
            &mut header.notes,
        ));
    }
    steps.push(
        Step::new(
            "verify",
            "Verify the running size, the redo log file and the option files",
            Risk::Read,
        )
        .post(size_check(
            &want,
            "the server does not run with the new size: read its error log and check which option sets it",
        ))
        .post(log_file_check(&want))
        .post(option_file_check(&want, false)),
    );
    let bench = env
        .bench_time
        .map(|t| crate::bench::PlanBench::for_server(Duration::from_secs(t), facts));
    Ok(Plan {
        header,
        steps,
        bench,
        locks: vec!["redo-log".into(), crate::plan::lock::SERVER.into()],
        session: Vec::new(),
    })
}

/// The online resize: one SET, proven by the running size, the server's own resize line and the file on disk.
fn resize_step(path: RedoResize, want: &Want) -> Step {
    let size = want.size;
    let set_sql = match path {
        RedoResize::OnlineRedoLogCapacity => {
            format!("SET GLOBAL innodb_redo_log_capacity = {size}")
        }
        _ => format!("SET GLOBAL innodb_log_file_size = {size}"),
    };
    let set_sql2 = set_sql.clone();
    let w = want.clone();
    Step::new(
        "resize",
        format!("Resize the redo log online to {}", format_size(size)),
        Risk::Online,
    )
    .preview(format!("/* innops:redo:resize */ {set_sql}"))
    .pre(Check::new("current size", move |ctx| {
        let running = current_size(ctx, w.var)?;
        let file = w.file();
        let observed = match file {
            Some(f) => format!(
                "running with {}, ib_logfile0 {}",
                format_size(running),
                format_size(f)
            ),
            None => format!("running with {}", format_size(running)),
        };
        let expected = format!("≠ {}", format_size(w.size));
        // Already done only when the server runs with the size and the file on disk has it too.
        Ok(if running == w.size && file.is_none_or(|f| f == w.size) {
            Verdict::done(observed, expected)
        } else {
            Verdict::pass(observed, expected)
        })
    }))
    .act(move |ctx| {
        let offset = ctx.control.map(|c| c.log_offset()).unwrap_or(0);
        let tag = ctx.tag();
        let t0 = std::time::Instant::now();
        ctx.conn()?
            .query_drop(format!("SET {tag} {}", set_sql2.trim_start_matches("SET ")))?;
        Ok(serde_json::json!({ "log_offset": offset, "seconds": t0.elapsed().as_secs_f64() }))
    })
    .post(size_check(
        want,
        "the server did not take the new size: read its error log",
    ))
    .post(error_log_check(false, want))
    .post(log_file_check(want))
    .bench()
}

fn persist_step(dropin: &Result<PathBuf, String>, want: &Want) -> Step {
    let key = want.key;
    let value = want.config.to_string();
    let preview = match dropin {
        Ok(path) => match optionfile::plan_change(path, "mysqld", &[(key, Some(&value))]) {
            Ok(change) if change.is_noop() => {
                format!("{} already sets {key} = {value}", path.display())
            }
            Ok(change) => format!("edit {}:\n{}", path.display(), change.diff().trim_end()),
            Err(e) => format!("edit {} ({e:#})", path.display()),
        },
        Err(_) => "write innops's drop-in (location unknown)".to_string(),
    };
    let (d1, d2) = (dropin.clone(), dropin.clone());
    let value2 = value.clone();
    let w = want.clone();
    Step::new("persist", format!("Persist {key} = {} in innops's drop-in", format_size(want.size)), Risk::Online)
        .preview(preview)
        .pre(Check::new("drop-in state", move |_| {
            let path = d1.clone().map_err(crate::error::refused)?;
            let change = optionfile::plan_change(&path, "mysqld", &[(key, Some(&value))])?;
            let next = w.next_start()?;
            // Already done only when the drop-in sets it and the option files, read as the server reads them,
            // give that value at the next start.
            Ok(if change.is_noop() && next.is_none_or(|n| n == Some(w.config)) {
                Verdict::done(format!("{} sets {key} = {value}", path.display()), "a change")
            } else {
                Verdict::pass(format!("{} would change", path.display()), "a change")
            })
        }))
        .act(move |ctx| {
            let path = d2.clone().map_err(crate::error::refused)?;
            let change = optionfile::plan_change(&path, "mysqld", &[(key, Some(&value2))])?;
            let backup = dropin::backup_dir(ctx);
            change.apply(&backup)?;
            Ok(serde_json::json!({ "file": path, "diff": change.diff(), "backup_dir": backup, "change": change }))
        })
        .post(option_file_check(want, false))
}

/// The option files, read as the server reads them, give the new size at the next start.
fn option_file_check(want: &Want, prior: bool) -> Check {
    let w = want.clone();
    let name = "the server will read the new size at startup";
    let run = move |_: &mut Ctx| {
        let expected = format!("{} = {}", w.key, w.config);
        let Some(file) = w.option_file.clone() else {
            return Ok(Verdict::pass(
                "not checked: the server's option file is unknown (pass --config-file)",
                expected,
            ));
        };
        let got = effective_config(&file, w.key, &w.version)?;
        let ok = got
            .as_deref()
            .and_then(|v| crate::units::parse_size(v).ok())
            == Some(w.config);
        Ok(Verdict::check(
            ok,
            format!("{} reads {} = {}", file.display(), w.key, got.as_deref().unwrap_or("(unset)")),
            expected,
            format!("the option files do not give {} = {} at the next start (another file read after innops's drop-in sets it, or the drop-in was changed): make innops's drop-in the last to set it", w.key, w.config),
        ))
    };
    if prior {
        Check::after_prior(name, run)
    } else {
        Check::new(name, run)
    }
}

/// The redo size the server reports now equals the requested one.
fn size_check(want: &Want, fix: &'static str) -> Check {
    let (var, size) = (want.var, want.size);
    Check::new("variable shows the new size", move |ctx| {
        let cur = current_size(ctx, var)?;
        Ok(Verdict::check(
            cur == size,
            format_size(cur),
            format_size(size),
            fix,
        ))
    })
}

fn error_log_check(startup: bool, want: &Want) -> Check {
    let size = want.size;
    let name = if startup {
        "error log: resized at startup, no errors"
    } else {
        "error log: resize line, no errors"
    };
    Check::new(name, move |ctx| {
        let Some(control) = readable_log(ctx) else {
            return Ok(Verdict::pass(
                "not checked: the error log is not readable here",
                "a resize line",
            ));
        };
        // Only what the server wrote since this step's own action (the offset is in the journal), and of that
        // only its latest process: a start that was retried (port taken) leaves the failed attempt's lines.
        let (recent, expect_resize) = if startup {
            let (lines, _) = lines_since_action(ctx, control, "start");
            let before = journaled(ctx, "start").and_then(|r| r.get("file_before")?.as_u64());
            (
                errorlog::latest_process(&lines).to_vec(),
                before != Some(size),
            )
        } else {
            // The server writes the line when the switch to the new file completes, which can be just after
            // the SET returns: wait for it, within a bound.
            let recent = poll_until(Duration::from_secs(60), Duration::from_millis(100), || {
                let (lines, _) = lines_since_action(ctx, control, "resize");
                let s = errorlog::summarize(&lines);
                let settled = s
                    .redo_resized_to
                    .is_some_and(|to| errorlog::logged_size_is(to, size))
                    || !s.errors.is_empty();
                (settled, lines)
            });
            (recent, true)
        };
        let s = errorlog::summarize(&recent);
        let resized = s
            .redo_resized_to
            .is_some_and(|to| errorlog::logged_size_is(to, size));
        Ok(
            if let Some(failed) = checks::log_errors_verdict(
                &s,
                "the server logged errors during the resize: read them before going on",
            ) {
                failed
            } else if startup && s.crash_recovery {
                Verdict::fail(
                    "crash recovery ran at startup",
                    "a clean start",
                    "the server was not shut down cleanly: check the data before going on",
                )
            } else if !expect_resize {
                Verdict::pass(
                    format!("no errors; the log file had {} already", format_size(size)),
                    "no [ERROR] lines",
                )
            } else {
                Verdict::check(
                    resized,
                    match s.redo_resized_to {
                        Some(to) => format!("resized to {}", format_size(to)),
                        None => "no resize line".into(),
                    },
                    format!("resized to {}", format_size(size)),
                    "the server did not log a resize to the new size: read its error log",
                )
            },
        )
    })
}

/// `ib_logfile0` on disk has the requested size (not merely the size the server reports: a read-only start
/// reports the configured size and keeps the old file).
fn log_file_check(want: &Want) -> Check {
    let w = want.clone();
    Check::new("redo log file on disk has the new size", move |_| {
        let Some(file) = w.logfile.clone().filter(|_| w.local) else {
            return Ok(Verdict::pass(
                "not checked: the redo log file is not on this machine",
                format_size(w.size),
            ));
        };
        Ok(match std::fs::metadata(&file) {
            Ok(m) => Verdict::check(
                m.len() == w.size,
                format!("{} is {}", file.display(), format_size(m.len())),
                format_size(w.size),
                "the redo log file on disk does not have the new size: read the error log (a read-only start keeps the old file)",
            ),
            Err(_) => Verdict::pass(
                format!("not checked: {} is not readable here", file.display()),
                format_size(w.size),
            ),
        })
    })
}

/// The preflight: every check a named function, the shared ones from the kit.
fn preflight(p: &RedoParams, facts: &ServerFacts, env: &PlanEnv, online: bool) -> Step {
    let logfile = log_file_path(facts).filter(|_| env.target.local);
    Step::new("preflight", "Check the server can take the new redo size", Risk::Read)
        .pre(checks::version_supported(facts))
        .pre(server_healthy())
        .pre(no_resize_running())
        .pre(checks::free_space(SpaceNeed {
            name: "free disk for the new log",
            dir: logfile.map(|f| f.parent().map(Path::to_path_buf).unwrap_or_default()),
            place: "the redo log directory",
            bytes: p.size,
            for_what: "the new log",
            fix: "free space or choose a smaller size",
            strictly_more: true,
        }))
        .pre(checks::dropin_writable(&env.dropin))
        .pre(checks::control_present(ControlNeed {
            name: "server control",
            needed: !online,
            expected: "available when restarting",
            fix: "this server can only resize at restart and innops was not told how to restart it: pass --sandbox NAME, --service systemd:UNIT or --start-cmd/--stop-cmd",
        }))
}

/// Not in forced recovery, and not read-only InnoDB (which cannot resize the redo log).
fn server_healthy() -> Check {
    Check::new("server healthy", |ctx| {
        let tag = ctx.tag();
        let (force, ro): (u64, u64) = ctx
            .conn()?
            .query_first(format!(
                "SELECT {tag} @@GLOBAL.innodb_force_recovery, @@GLOBAL.innodb_read_only"
            ))?
            .unwrap_or((0, 0));
        Ok(if force > 0 {
            checks::forced_recovery_verdict(force, "restart without innodb_force_recovery first")
        } else if ro > 0 {
            Verdict::fail("innodb_read_only=ON", "OFF", "the server runs with innodb_read_only, which cannot resize the redo log: restart it without innodb_read_only first")
        } else {
            Verdict::pass(
                "force_recovery=0, innodb_read_only=OFF",
                "force_recovery=0, innodb_read_only=OFF",
            )
        })
    })
}

/// No other session resizes the redo log (MariaDB: a SET in the processlist; MySQL: its resize status).
fn no_resize_running() -> Check {
    Check::new("no resize already running", |ctx| {
        let tag = ctx.tag();
        let others: Vec<(u64, String)> = ctx.conn()?.query(format!(
            "SELECT {tag} ID, INFO FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND \
             (INFO LIKE '%innodb_log_file_size%' OR INFO LIKE '%innodb_redo_log_capacity%')"
        ))?;
        let status: Option<(String, String)> = ctx.conn()?.query_first(format!(
            "SHOW {tag} GLOBAL STATUS LIKE 'Innodb_redo_log_resize_status'"
        ))?;
        let mysql_busy = status
            .as_ref()
            .is_some_and(|(_, v)| !v.eq_ignore_ascii_case("OK"));
        Ok(if let Some((id, info)) = others.first() {
            Verdict::fail(
                format!("connection {id} runs `{info}`"),
                "no resize running",
                format!("another resize is running in connection {id}: wait for it to finish"),
            )
        } else if mysql_busy {
            Verdict::fail(
                format!(
                    "Innodb_redo_log_resize_status={}",
                    status.map(|s| s.1).unwrap_or_default()
                ),
                "OK",
                "a redo resize is in progress: wait for it to finish",
            )
        } else {
            Verdict::pass("none", "no resize running")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::facts::Version;

    fn maria() -> ServerFacts {
        let mut f = ServerFacts::synthetic(Flavor::MariaDB, Version::new(10, 11, 19));
        f.variables
            .insert("innodb_log_buffer_size".into(), (16u64 << 20).to_string());
        f.variables
            .insert("innodb_log_file_size".into(), (96u64 << 20).to_string());
        f
    }

    #[test]
    fn limits_refuse_sizes_the_server_would_reject_or_round() {
        let f = maria();
        assert!(size_problem(&f, 256 << 20, true).is_none());
        let small = size_problem(&f, 8 << 20, true).unwrap();
        assert!(small.contains("innodb_log_buffer_size"), "{small}");
        // Offline, the startup minimum is 4M.
        assert!(size_problem(&f, 8 << 20, false).is_none());
        assert!(size_problem(&f, (256 << 20) + 1, true)
            .unwrap()
            .contains("268439552"));
        assert!(size_problem(&f, 1 << 40, true).unwrap().contains("largest"));
        let mysql = ServerFacts::synthetic(Flavor::MySQL, Version::new(8, 0, 36));
        assert!(size_problem(&mysql, 4 << 20, true).unwrap().contains("8M"));
        assert!(size_problem(&mysql, (64 << 20) + 4096, true).is_some());
    }

    #[test]
    fn the_path_follows_the_version_and_offline_forces_a_restart() {
        let f = maria();
        assert_eq!(choose_path(&f, false), RedoResize::OnlineLogFileSize);
        assert_eq!(choose_path(&f, true), RedoResize::RestartOnly);
        let old = ServerFacts::synthetic(Flavor::MariaDB, Version::new(10, 6, 0));
        assert_eq!(choose_path(&old, false), RedoResize::RestartOnly);
    }

    fn want() -> Want {
        Want {
            var: RedoSizeVariable::InnodbLogFileSize,
            size: 128 << 20,
            key: "innodb_log_file_size",
            config: 128 << 20,
            logfile: None,
            option_file: None,
            version: String::new(),
            local: true,
            offline: true,
            flags: String::new(),
        }
    }

    #[test]
    fn only_the_requested_end_state_counts_as_done() {
        let w = want();
        let end = Live {
            running: Some(128 << 20),
            file: Some(128 << 20),
            next_start: Some(Some(128 << 20)),
        };
        assert!(end.is_end(&w));
        // Anything unknown is not judged; anything known must match.
        assert!(Live {
            file: None,
            next_start: None,
            ..end.clone()
        }
        .is_end(&w));
        for not in [
            Live {
                running: None,
                ..end.clone()
            },
            Live {
                running: Some(96 << 20),
                ..end.clone()
            },
            Live {
                file: Some(96 << 20),
                ..end.clone()
            },
            Live {
                next_start: Some(Some(96 << 20)),
                ..end.clone()
            },
            Live {
                next_start: Some(None),
                ..end.clone()
            },
        ] {
            assert!(!not.is_end(&w), "{not:?}");
        }
        assert_eq!(
            end.describe(&w),
            "running with 128M, ib_logfile0 128M, option files give innodb_log_file_size = 134217728"
        );
    }

    #[test]
    fn the_rerun_command_is_one_a_dba_can_paste() {
        let mut w = want();
        assert_eq!(w.rerun(), "innops redo --size 128M --offline --execute");
        w.size = (1 << 30) + (512 << 20) + 4096;
        w.offline = false;
        assert_eq!(w.rerun(), "innops redo --size 1572868K --execute");
        assert_eq!(crate::units::parse_size("1572868K").unwrap(), w.size);
        w.flags = "--socket /tmp/s --user dba".into();
        assert_eq!(
            w.rerun(),
            "innops redo --size 1572868K --socket /tmp/s --user dba --execute"
        );
    }
}
