//! Redo-log resize and sizing advice.
//!
//! The resize is online where the server can do it (MariaDB 10.9+ `SET GLOBAL innodb_log_file_size`, MySQL
//! 8.0.30+ `innodb_redo_log_capacity`) and otherwise a clean shutdown, a config edit and a start. Either way the
//! new size goes into innops's drop-in so a restart keeps it: MariaDB forgets an online resize at restart
//! (shared/FACTS.md §2). The advice follows the well-known Percona method: measure the redo bytes written over an
//! interval and size the log to hold about an hour of them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use mysql::prelude::Queryable;
use serde::{Deserialize, Serialize};

use crate::error::bad_input;
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::target::control::StopMode;
use crate::target::errorlog;
use crate::target::facts::{Flavor, RedoResize, RedoSizeVariable, ServerFacts};
use crate::target::optionfile;
use crate::units::format_size;

/// The groups a server reads its options from, in the order they apply.
pub const SERVER_GROUPS: [&str; 4] = ["mysqld", "server", "mariadb", "mariadbd"];

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

/// The redo size that holds about an hour of writes at `bytes_per_sec`, rounded up to 64 MiB, and never below
/// the server's default (96 MiB) so an idle sample does not shrink the log.
pub fn recommend_size(bytes_per_sec: f64) -> u64 {
    const STEP: u64 = 64 << 20;
    let hour = (bytes_per_sec.max(0.0) * 3600.0).ceil() as u64;
    (hour.div_ceil(STEP) * STEP).max(96 << 20)
}

/// Minutes of writes a log of `size` holds at `bytes_per_sec` (None when nothing is written).
pub fn minutes_held(size: u64, bytes_per_sec: f64) -> Option<f64> {
    (bytes_per_sec > 0.0).then(|| size as f64 / bytes_per_sec / 60.0)
}

/// The counter that grows with every redo byte written: the LSN where the server reports it.
pub fn redo_counter(facts: &ServerFacts) -> Option<(&'static str, u64)> {
    for name in [
        "Innodb_lsn_current",
        "Innodb_redo_log_current_lsn",
        "Innodb_os_log_written",
    ] {
        if let Some(v) = facts.status_u64(name) {
            return Some((name, v));
        }
    }
    None
}

/// What `--advise` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    pub counter: String,
    pub interval_s: f64,
    pub bytes_written: u64,
    pub bytes_per_sec: f64,
    pub bytes_per_hour: f64,
    pub current_size: Option<u64>,
    pub minutes_held_now: Option<f64>,
    pub checkpoint_age: Option<u64>,
    pub checkpoint_max_age: Option<u64>,
    pub recommended_size: u64,
    pub recommended: String,
    pub command: String,
}

/// Measure the redo write rate over `interval` and recommend a size.
pub fn advise(target: &crate::target::Target, interval: Duration) -> anyhow::Result<Advice> {
    let mut conn = target.connect()?;
    let first = ServerFacts::collect(&mut conn)?;
    let (counter, v0) = redo_counter(&first)
        .ok_or_else(|| crate::error::refused("the server reports no redo counter (Innodb_lsn_current or Innodb_os_log_written): it cannot be measured"))?;
    let t0 = std::time::Instant::now();
    std::thread::sleep(interval);
    let second = ServerFacts::collect(&mut conn)?;
    let elapsed = t0.elapsed().as_secs_f64();
    let v1 = second.status_u64(counter).unwrap_or(v0);
    let written = v1.saturating_sub(v0);
    let rate = written as f64 / elapsed;
    let rec = recommend_size(rate);
    let current = second.redo_size_bytes();
    Ok(Advice {
        counter: counter.to_string(),
        interval_s: elapsed,
        bytes_written: written,
        bytes_per_sec: rate,
        bytes_per_hour: rate * 3600.0,
        current_size: current,
        minutes_held_now: current.and_then(|c| minutes_held(c, rate)),
        checkpoint_age: second.status_u64("Innodb_checkpoint_age"),
        checkpoint_max_age: second.status_u64("Innodb_checkpoint_max_age"),
        recommended_size: rec,
        recommended: format_size(rec),
        command: format!("innops redo --size {} --execute", format_size(rec)),
    })
}

pub fn render_advice(a: &Advice) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "redo written: {} in {:.1} s ({} from {}) = {}/s, {}/hour\n",
        format_size(a.bytes_written),
        a.interval_s,
        a.bytes_written,
        a.counter,
        format_size(a.bytes_per_sec as u64),
        format_size(a.bytes_per_hour as u64)
    ));
    if let Some(c) = a.current_size {
        let held = a
            .minutes_held_now
            .map(|m| format!("{m:.0} minutes of writes"))
            .unwrap_or_else(|| "no writes measured".into());
        s.push_str(&format!("current redo size: {} ({held})\n", format_size(c)));
    }
    if let (Some(age), Some(max)) = (a.checkpoint_age, a.checkpoint_max_age) {
        s.push_str(&format!(
            "checkpoint age: {} of at most {}\n",
            format_size(age),
            format_size(max)
        ));
    }
    s.push_str(&format!(
        "recommended: {} (about an hour of writes)\n  {}\n",
        a.recommended, a.command
    ));
    s
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

/// Free bytes on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and st a properly sized out-parameter.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// The value the server will read for `key` at its next start, from its option file.
pub fn effective_config(option_file: &Path, key: &str) -> anyhow::Result<Option<String>> {
    let set = optionfile::read(option_file)?;
    Ok(set.get(&SERVER_GROUPS, key).map(str::to_string))
}

fn current_size(ctx: &mut Ctx, facts_var: RedoSizeVariable) -> anyhow::Result<u64> {
    let tag = ctx.tag();
    let sql = match facts_var {
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
    let v: Option<u64> = ctx.conn()?.query_first(sql)?;
    Ok(v.unwrap_or(0))
}

/// Build the resize plan.
pub fn plan(p: &RedoParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    let path = choose_path(facts, p.offline);
    let online = path != RedoResize::RestartOnly;
    let var = facts.redo_size_variable();
    // What one config key can express: on old MySQL the size is per file.
    let files = match var {
        RedoSizeVariable::LogFileSizeTimesFiles => {
            facts.var_u64("innodb_log_files_in_group").unwrap_or(2)
        }
        _ => 1,
    };
    let config_key = var.config_key();
    let config_value = (p.size / files).to_string();
    let size = p.size;
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
    let header = env.header("redo", facts, serde_json::to_value(p)?, notes);

    let mut steps = Vec::new();
    steps.push(preflight(p, facts, env, online));

    let dropin = env.dropin.clone();
    let option_file = env.option_file.clone();
    let persist = persist_step(
        &dropin,
        option_file.clone(),
        config_key,
        &config_value,
        size,
        var,
    );

    if online {
        let set_sql = match path {
            RedoResize::OnlineRedoLogCapacity => {
                format!("SET GLOBAL innodb_redo_log_capacity = {size}")
            }
            _ => format!("SET GLOBAL innodb_log_file_size = {size}"),
        };
        let set_sql2 = set_sql.clone();
        let logfile = log_file_path(facts);
        let resize = Step::new(
            "resize",
            format!("Resize the redo log online to {}", format_size(size)),
            Risk::Online,
        )
        .preview(format!("/* innops:redo:resize */ {set_sql}"))
        .pre(Check::new("current size", move |ctx| {
            let cur = current_size(ctx, var)?;
            Ok(if cur == size {
                Verdict::done(format_size(cur), format!("≠ {}", format_size(size)))
            } else {
                Verdict::pass(format_size(cur), format!("≠ {}", format_size(size)))
            })
        }))
        .act(move |ctx| {
            let offset = ctx.control.map(|c| c.log_offset()).unwrap_or(0);
            ctx.memo
                .insert("redo:log_offset".into(), serde_json::json!(offset));
            let tag = ctx.tag();
            let t0 = std::time::Instant::now();
            ctx.conn()?
                .query_drop(format!("SET {tag} {}", set_sql2.trim_start_matches("SET ")))?;
            Ok(serde_json::json!({ "log_offset": offset, "seconds": t0.elapsed().as_secs_f64() }))
        })
        .post(size_check(
            var,
            size,
            "the server did not take the new size: read its error log",
        ))
        .post(error_log_check(false, size))
        .post(log_file_check(logfile))
        .bench();
        steps.push(resize);
        steps.push(persist);
    } else {
        steps.push(persist);
        let stop = Step::new("stop", "Shut the server down cleanly", Risk::Restart)
            .preview("/* innops:redo:stop */ SET GLOBAL innodb_fast_shutdown = 1 (when it is 2); SHUTDOWN")
            .pre(Check::new("restart needed", move |ctx| {
                let cur = current_size(ctx, var)?;
                Ok(if cur == size {
                    Verdict::done(format!("running with {}", format_size(cur)), "a different size")
                } else {
                    Verdict::pass(format!("running with {}", format_size(cur)), format!("{} after restart", format_size(size)))
                })
            }))
            .act(|ctx| {
                let control = ctx.control()?;
                let tag = ctx.tag();
                ctx.drop_conn();
                let rec = control.stop(ctx.target, StopMode::Clean, &tag.replace("/* ", "").replace(" */", ""))?;
                Ok(serde_json::to_value(rec)?)
            })
            .post(Check::new("clean shutdown", |ctx| {
                let up = ctx.target.connect().is_ok();
                let lines = ctx
                    .control
                    .map(|c| c.log_since(0))
                    .unwrap_or_default();
                let summary = errorlog::summarize(&tail_from_last(&lines, "Shutdown complete"));
                Ok(Verdict::check(
                    !up && (summary.clean_shutdown || ctx.control.and_then(|c| c.error_log.as_ref()).is_none()),
                    if up { "server still answers".to_string() } else if summary.clean_shutdown { "down, log says Shutdown complete".into() } else { "down, no clean-shutdown line".into() },
                    "down after a clean shutdown",
                    "the server did not shut down cleanly: read its error log before starting it",
                ))
            }))
            .bench();
        let dropin2 = dropin.clone();
        let start = Step::new(
            "start",
            "Start the server with the new redo size",
            Risk::Restart,
        )
        .preview("start the server (it resizes the redo log at startup)")
        .pre(Check::after_prior("server is down", |ctx| {
            let up = ctx.target.connect().is_ok();
            Ok(if up {
                Verdict::done("server answers", "down")
            } else {
                Verdict::pass("down", "down")
            })
        }))
        .act(|ctx| {
            let control = ctx.control()?;
            ctx.drop_conn();
            let lines = control.start(ctx.target, &[])?;
            Ok(serde_json::json!({ "log": lines }))
        })
        .post(Check::new("server accepts connections", |ctx| {
            ctx.drop_conn();
            let ok = ctx.conn().is_ok();
            Ok(Verdict::check(
                ok,
                if ok { "connected" } else { "refused" },
                "connected",
                "the server did not come back: read its error log",
            ))
        }))
        .post(size_check(
            var,
            size,
            "the server started with another size: check which option file sets it last",
        ))
        .post(error_log_check(true, size))
        .recover(move |ctx| restore_and_start(ctx, &dropin2))
        .bench();
        steps.push(stop);
        steps.push(start);
        let logfile = log_file_path(facts);
        steps.push(
            Step::new("verify", "Verify the redo log file on disk", Risk::Read)
                .post(log_file_check(logfile)),
        );
    }
    let bench = env
        .bench_time
        .map(|t| crate::bench::PlanBench::for_server(Duration::from_secs(t), facts));
    Ok(Plan {
        header,
        steps,
        bench,
        locks: vec!["redo-log".into()],
    })
}

/// The lines from the last occurrence of `marker`'s shutdown/startup cycle: everything after the previous
/// "ready for connections", so a check reads only the latest stop.
fn tail_from_last(lines: &[String], marker: &str) -> Vec<String> {
    let end = lines
        .iter()
        .rposition(|l| l.contains(marker))
        .map(|i| i + 1)
        .unwrap_or(lines.len());
    let start = lines[..end]
        .iter()
        .rposition(|l| l.contains("ready for connections"))
        .unwrap_or(0);
    lines[start..end].to_vec()
}

fn preflight(p: &RedoParams, facts: &ServerFacts, env: &PlanEnv, online: bool) -> Step {
    let size = p.size;
    let supported = facts.supported();
    let problem = size_problem(facts, size, online);
    let needs_control = !online;
    let has_control = env.control.is_some();
    let dropin = env.dropin.clone();
    let logfile = log_file_path(facts);
    let local = env.target.local;
    Step::new("preflight", "Check the server can take the new redo size", Risk::Read)
        .pre(Check::new("server version supported", move |_| {
            Ok(match &supported {
                Ok(()) => Verdict::pass("supported", "MySQL 5.7+ or MariaDB 10.5+"),
                Err(why) => Verdict::fail("unsupported", "MySQL 5.7+ or MariaDB 10.5+", why.clone()),
            })
        }))
        .pre(Check::new("size within the server's limits", move |_| {
            Ok(match &problem {
                None => Verdict::pass(format_size(size), "within limits"),
                Some(why) => Verdict::fail(format_size(size), "within limits", why.clone()),
            })
        }))
        .pre(Check::new("server healthy", |ctx| {
            let tag = ctx.tag();
            let (force, ro): (u64, u64) = ctx
                .conn()?
                .query_first(format!("SELECT {tag} @@GLOBAL.innodb_force_recovery, @@GLOBAL.innodb_read_only"))?
                .unwrap_or((0, 0));
            Ok(if force > 0 {
                Verdict::fail(format!("innodb_force_recovery={force}"), "0", "the server runs in forced recovery: finish the recovery and restart without innodb_force_recovery first")
            } else if ro > 0 {
                Verdict::fail("innodb_read_only=ON", "OFF", "the server runs with innodb_read_only, which cannot resize the redo log: restart it without innodb_read_only first")
            } else {
                Verdict::pass("force_recovery=0, read_only=OFF", "force_recovery=0, read_only=OFF")
            })
        }))
        .pre(Check::new("no resize already running", |ctx| {
            let tag = ctx.tag();
            let others: Vec<(u64, String)> = ctx.conn()?.query(format!(
                "SELECT {tag} ID, INFO FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND \
                 (INFO LIKE '%innodb_log_file_size%' OR INFO LIKE '%innodb_redo_log_capacity%')"
            ))?;
            let status: Option<(String, String)> =
                ctx.conn()?.query_first(format!("SHOW {tag} GLOBAL STATUS LIKE 'Innodb_redo_log_resize_status'"))?;
            let mysql_busy = status.as_ref().is_some_and(|(_, v)| !v.eq_ignore_ascii_case("OK"));
            Ok(if let Some((id, info)) = others.first() {
                Verdict::fail(format!("connection {id} runs `{info}`"), "no resize running", format!("another resize is running in connection {id}: wait for it to finish"))
            } else if mysql_busy {
                Verdict::fail(format!("Innodb_redo_log_resize_status={}", status.map(|s| s.1).unwrap_or_default()), "OK", "a redo resize is in progress: wait for it to finish")
            } else {
                Verdict::pass("none", "no resize running")
            })
        }))
        .pre(Check::new("free disk for the new log", move |_| {
            let Some(file) = logfile.clone().filter(|_| local) else {
                return Ok(Verdict::pass("not checked: the redo log directory is not on this machine", format!("≥ {} free", format_size(size))));
            };
            let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
            Ok(match free_bytes(&dir) {
                Some(free) => Verdict::check(
                    free > size,
                    format!("{} free in {}", format_size(free), dir.display()),
                    format!("> {} free", format_size(size)),
                    format!("the filesystem of {} has {} free and the new log needs {}: free space or choose a smaller size", dir.display(), format_size(free), format_size(size)),
                ),
                None => Verdict::pass(format!("not checked: {} is not readable here", dir.display()), format!("> {} free", format_size(size))),
            })
        }))
        .pre(Check::new("drop-in can be written", move |_| {
            Ok(match &dropin {
                Ok(path) => Verdict::pass(path.display().to_string(), "a drop-in file innops may write"),
                Err(why) => Verdict::fail("unknown", "a drop-in file innops may write", why.clone()),
            })
        }))
        .pre(Check::new("server control", move |_| {
            Ok(if !needs_control || has_control {
                Verdict::pass(if has_control { "available" } else { "not needed" }, "available when restarting")
            } else {
                Verdict::fail("none", "a way to stop and start the server", "this server can only resize at restart and innops was not told how to restart it: pass --sandbox NAME, --service systemd:UNIT or --start-cmd/--stop-cmd")
            })
        }))
}

fn persist_step(
    dropin: &Result<PathBuf, String>,
    option_file: Option<PathBuf>,
    key: &'static str,
    value: &str,
    size: u64,
    var: RedoSizeVariable,
) -> Step {
    let preview = match dropin {
        Ok(path) => match optionfile::plan_change(path, "mysqld", &[(key, Some(value))]) {
            Ok(change) if change.is_noop() => {
                format!("{} already sets {key} = {value}", path.display())
            }
            Ok(change) => format!("edit {}:\n{}", path.display(), change.diff().trim_end()),
            Err(e) => format!("edit {} ({e:#})", path.display()),
        },
        Err(_) => "write innops's drop-in (location unknown)".to_string(),
    };
    let (d1, d2) = (dropin.clone(), dropin.clone());
    let value = value.to_string();
    let value2 = value.clone();
    let _ = var;
    Step::new("persist", format!("Persist {key} = {} in innops's drop-in", format_size(size)), Risk::Online)
        .preview(preview)
        .pre(Check::new("drop-in state", move |_| {
            let path = d1.clone().map_err(crate::error::refused)?;
            let change = optionfile::plan_change(&path, "mysqld", &[(key, Some(&value))])?;
            Ok(if change.is_noop() {
                Verdict::done(format!("{} sets {key} = {value}", path.display()), "a change")
            } else {
                Verdict::pass(format!("{} would change", path.display()), "a change")
            })
        }))
        .act(move |ctx| {
            let path = d2.clone().map_err(crate::error::refused)?;
            let change = optionfile::plan_change(&path, "mysqld", &[(key, Some(&value2))])?;
            let backup = ctx.run_dir.clone().unwrap_or_else(std::env::temp_dir).join("backup");
            change.apply(&backup)?;
            Ok(serde_json::json!({ "file": path, "diff": change.diff(), "backup_dir": backup, "change": change }))
        })
        .post(Check::new("the server will read the new size at startup", move |_| {
            let Some(file) = option_file.clone() else {
                return Ok(Verdict::pass("not checked: the server's option file is unknown (pass --config-file)", format!("{key} = {size}")));
            };
            let got = effective_config(&file, key)?;
            let ok = got.as_deref().and_then(|v| crate::units::parse_size(v).ok()) == Some(size);
            Ok(Verdict::check(
                ok,
                format!("{} reads {key} = {}", file.display(), got.as_deref().unwrap_or("(unset)")),
                format!("{key} = {size}"),
                format!("another option file read after innops's drop-in sets {key}: remove it there so the drop-in wins"),
            ))
        }))
}

/// The redo size the server reports now equals `size`.
fn size_check(var: RedoSizeVariable, size: u64, fix: &'static str) -> Check {
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

fn error_log_check(startup: bool, size: u64) -> Check {
    let name = if startup {
        "error log: resized at startup, no errors"
    } else {
        "error log: resize line, no errors"
    };
    Check::new(name, move |ctx| {
        let Some(control) = ctx.control else {
            return Ok(Verdict::pass(
                "not checked: the error log is not readable here",
                "a resize line",
            ));
        };
        if control.error_log.is_none() {
            return Ok(Verdict::pass(
                "not checked: the error log is not readable here",
                "a resize line",
            ));
        }
        let recent = if startup {
            let lines = control.log_since(0);
            let start = lines
                .iter()
                .rposition(|l| l.contains("Shutdown complete"))
                .map(|i| i + 1)
                .unwrap_or(0);
            lines[start..].to_vec()
        } else {
            // Since the SET (its offset was noted when it ran); after a resume, since the last start. The
            // server writes the line when the switch to the new file completes, which can be just after the
            // SET returns: wait for it, within a bound.
            let since = || match ctx.memo.get("redo:log_offset").and_then(|v| v.as_u64()) {
                Some(offset) => control.log_since(offset),
                None => {
                    let lines = control.log_since(0);
                    let start = lines
                        .iter()
                        .rposition(|l| l.contains("ready for connections"))
                        .unwrap_or(0);
                    lines[start..].to_vec()
                }
            };
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            loop {
                let recent = since();
                let s = errorlog::summarize(&recent);
                if s.redo_resized_to == Some(size)
                    || !s.errors.is_empty()
                    || std::time::Instant::now() > deadline
                {
                    break recent;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        };
        let s = errorlog::summarize(&recent);
        let resized = s.redo_resized_to == Some(size);
        Ok(if !s.errors.is_empty() {
            Verdict::fail(
                s.errors.join(" | "),
                "no [ERROR] lines",
                "the server logged errors during the resize: read them before going on",
            )
        } else if startup && s.crash_recovery {
            Verdict::fail(
                "crash recovery ran at startup",
                "a clean start",
                "the server was not shut down cleanly: check the data before going on",
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
        })
    })
}

fn log_file_check(file: Option<PathBuf>) -> Check {
    Check::new("redo log file on disk has the new size", move |ctx| {
        let Some(file) = file.clone().filter(|_| ctx.target.local) else {
            return Ok(Verdict::pass(
                "not checked: the redo log file is not on this machine",
                "the new size",
            ));
        };
        let cur: Option<u64> = ctx
            .conn()?
            .query_first("SELECT /* innops:redo:verify */ @@GLOBAL.innodb_log_file_size")?;
        let want = cur.unwrap_or(0);
        Ok(match std::fs::metadata(&file) {
            Ok(m) => Verdict::check(
                m.len() == want,
                format!("{} is {}", file.display(), format_size(m.len())),
                format_size(want),
                "the redo log file does not have the configured size: read the error log",
            ),
            Err(_) => Verdict::pass(
                format!("not checked: {} is not readable here", file.display()),
                format_size(want),
            ),
        })
    })
}

/// After a failed start: put the previous drop-in back and start again, so the server runs as before.
fn restore_and_start(ctx: &mut Ctx, dropin: &Result<PathBuf, String>) -> anyhow::Result<String> {
    let control = ctx.control()?;
    let path = dropin.clone().map_err(crate::error::refused)?;
    let backup = ctx
        .run_dir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join("backup");
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let saved = backup.join(&name);
    if saved.is_file() {
        std::fs::copy(&saved, &path)?;
    } else if backup.join(format!("{name}.absent")).exists() {
        let _ = std::fs::remove_file(&path);
    }
    if ctx.target.connect().is_ok() {
        return Ok(format!(
            "The server is running; the previous {} was restored.",
            path.display()
        ));
    }
    control.start(ctx.target, &[])?;
    Ok(format!(
        "The previous {} was restored and the server started again with it.",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::facts::Version;

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
    fn recommendation_holds_an_hour_and_never_shrinks_below_the_default() {
        assert_eq!(recommend_size(0.0), 96 << 20);
        // 100 KiB/s → 351.6 MiB/hour → rounded up to 384 MiB.
        assert_eq!(recommend_size(100.0 * 1024.0), 384 << 20);
        assert_eq!(minutes_held(96 << 20, 0.0), None);
        let m = minutes_held(60 << 20, (1 << 20) as f64).unwrap();
        assert!((m - 1.0).abs() < 1e-9);
    }

    #[test]
    fn the_path_follows_the_version_and_offline_forces_a_restart() {
        let f = maria();
        assert_eq!(choose_path(&f, false), RedoResize::OnlineLogFileSize);
        assert_eq!(choose_path(&f, true), RedoResize::RestartOnly);
        let old = ServerFacts::synthetic(Flavor::MariaDB, Version::new(10, 6, 0));
        assert_eq!(choose_path(&old, false), RedoResize::RestartOnly);
    }

    #[test]
    fn only_the_latest_stop_counts() {
        let lines: Vec<String> = [
            "a ready for connections",
            "x Shutdown complete",
            "b ready for connections",
            "c [ERROR] boom",
            "y Shutdown complete",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let t = tail_from_last(&lines, "Shutdown complete");
        assert_eq!(
            t.first().map(String::as_str),
            Some("b ready for connections")
        );
        assert_eq!(t.len(), 3);
    }
}
