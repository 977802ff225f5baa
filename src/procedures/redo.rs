//! Redo-log resize and sizing advice.
//!
//! The resize is online where the server can do it (MariaDB 10.9+ `SET GLOBAL innodb_log_file_size`, MySQL
//! 8.0.30+ `innodb_redo_log_capacity`) and otherwise a clean shutdown, a config edit and a start. Either way the
//! new size goes into innops's drop-in so a restart keeps it: MariaDB forgets an online resize at restart
//! (shared/FACTS.md §2). The advice follows the well-known Percona method: measure the redo bytes written over an
//! interval and size the log to hold about an hour of them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sql::Queryable;
use serde::{Deserialize, Serialize};

use crate::error::bad_input;
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::server::control::{Control, StopMode};
use crate::server::errorlog;
use crate::server::facts::{Flavor, RedoResize, RedoSizeVariable, ServerFacts};
use crate::server::optionfile;
use crate::units::format_size;

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

/// `innops redo --size SIZE [--offline] FLAGS --execute`, the size written so that it parses back exactly.
pub fn redo_command(size: u64, offline: bool, flags: &str) -> String {
    let mut parts = vec![
        "innops redo --size".to_string(),
        crate::units::size_arg(size),
    ];
    if offline {
        parts.push("--offline".into());
    }
    if !flags.is_empty() {
        parts.push(flags.to_string());
    }
    parts.push("--execute".into());
    parts.join(" ")
}

/// The recommended size for `bytes_per_sec` and the command that applies it, unless the log is already at
/// least that large: advice never shrinks a log on the strength of one sample.
pub fn advice_command(
    bytes_per_sec: f64,
    current: Option<u64>,
    flags: &str,
) -> (u64, Option<String>) {
    let rec = recommend_size(bytes_per_sec);
    let cmd = match current {
        Some(c) if c >= rec => None,
        _ => Some(redo_command(rec, false, flags)),
    };
    (rec, cmd)
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
    /// The command that applies the recommendation; None when the current size is enough.
    pub command: Option<String>,
}

/// Measure the redo write rate over `interval` and recommend a size.
pub fn advise(
    target: &crate::server::Target,
    interval: Duration,
    flags: &str,
) -> anyhow::Result<Advice> {
    let mut conn = target.connect()?;
    let first = ServerFacts::collect(&mut conn)?;
    let (counter, v0) = redo_counter(&first)
        .ok_or_else(|| crate::error::refused("the server reports no redo counter (Innodb_lsn_current or Innodb_os_log_written): it cannot be measured"))?;
    let t0 = std::time::Instant::now();
    crate::progress::timed("sampling redo writes", interval.as_secs(), true, || {
        std::thread::sleep(interval)
    });
    let second = ServerFacts::collect(&mut conn)?;
    let elapsed = t0.elapsed().as_secs_f64();
    let v1 = second.status_u64(counter).unwrap_or(v0);
    let written = v1.saturating_sub(v0);
    let rate = written as f64 / elapsed;
    let current = second.redo_size_bytes();
    let (rec, command) = advice_command(rate, current, flags);
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
        command,
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
    match (&a.command, a.current_size) {
        (Some(cmd), _) => s.push_str(&format!(
            "recommended: {} (about an hour of writes)\n  {cmd}\n",
            a.recommended
        )),
        (None, Some(c)) => s.push_str(&format!(
            "the current size is enough: {} holds at least an hour of the measured writes (which need {}); nothing to change\n",
            format_size(c),
            a.recommended
        )),
        (None, None) => {}
    }
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
/// What the option files give `key` at the next start of a server of `version` (`10.11.6-MariaDB`): every group
/// that server reads, as `my_print_defaults --mysqld` lists them ([mariadb-10.11], [client-server], [galera],
/// the group suffix), the last value winning.
pub fn effective_config(
    option_file: &Path,
    key: &str,
    version: &str,
) -> anyhow::Result<Option<String>> {
    let set = optionfile::read(option_file)?;
    let groups = optionfile::server_groups(
        Some(version).filter(|v| !v.is_empty()),
        optionfile::group_suffix_from_env().as_deref(),
    );
    Ok(set.get(&groups, key).map(str::to_string))
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

/// The result of the latest action of `step` in this run's journal: what a check needs from its own step's
/// action (an error-log offset, say) survives a crash and a resume that way.
pub(crate) fn journaled(ctx: &Ctx, step: &str) -> Option<serde_json::Value> {
    // Through the context, so a playbook's member finds its own step (journaled as `readonly/stop`).
    ctx.recorded_result(step)
}

/// The error-log lines a check of `step` may judge: those the server wrote since that step's action began
/// (its offset is in the journal), or, when the action's result was never journaled (innops died inside it),
/// those of the server's latest process.
pub(crate) fn lines_since_action(ctx: &Ctx, control: &Control, step: &str) -> (Vec<String>, bool) {
    match journaled(ctx, step).and_then(|r| r.get("log_offset")?.as_u64()) {
        Some(offset) => (control.log_since(offset), true),
        None => {
            let all = control.log_since(0);
            (errorlog::latest_process(&all).to_vec(), false)
        }
    }
}

/// A readable error log, or None.
pub(crate) fn readable_log<'a>(ctx: &Ctx<'a>) -> Option<&'a Control> {
    ctx.control.filter(|c| c.error_log.is_some())
}

pub(crate) fn interrupted(msg: String) -> anyhow::Error {
    crate::error::Failure::Interrupted(msg).into()
}

/// Test hook: `INNOPS_FAULT=sigint-in-action:STEP` sends innops a SIGINT inside that step's action, as Ctrl-C
/// would, and waits until the handler has raised the abort flag.
fn sigint_fault(ctx: &Ctx, step: &str) {
    let Ok(f) = std::env::var(crate::plan::runner::FAULT_ENV) else {
        return;
    };
    if f.strip_prefix("sigint-in-action:") != Some(step) {
        return;
    }
    // SAFETY: raise(2) on our own process; the handler installed by the command layer only sets a flag.
    unsafe { libc::raise(libc::SIGINT) };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !ctx.aborted() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
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
    let header = env.header("redo", facts, serde_json::to_value(p)?, notes);

    let mut steps = vec![preflight(p, facts, env, online)];
    let dropin = env.dropin.clone();
    let persist = persist_step(&dropin, &want);

    if online {
        let set_sql = match path {
            RedoResize::OnlineRedoLogCapacity => {
                format!("SET GLOBAL innodb_redo_log_capacity = {size}")
            }
            _ => format!("SET GLOBAL innodb_log_file_size = {size}"),
        };
        let set_sql2 = set_sql.clone();
        let w = want.clone();
        let resize = Step::new(
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
            &want,
            "the server did not take the new size: read its error log",
        ))
        .post(error_log_check(false, &want))
        .post(log_file_check(&want))
        .bench();
        steps.push(resize);
        steps.push(persist);
    } else {
        steps.push(persist);
        steps.push(stop_step(&want));
        steps.push(start_step(&want, &dropin));
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
    })
}

fn stop_step(want: &Want) -> Step {
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
            let start = ctx.control.map(|c| c.spec.start_hint()).unwrap_or_else(|| "your usual start".into());
            let then = ctx.run_dir.as_ref().map(|d| format!("`innops resume {}`", d.display())).unwrap_or_else(|| "run the resize again".into());
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
            let control = ctx.control()?;
            let resume = ctx
                .run_dir
                .as_ref()
                .map(|d| format!("`innops resume {}`", d.display()))
                .unwrap_or_else(|| "innops".into());
            if ctx.aborted() {
                return Err(interrupted(format!(
                    "interrupted before the shutdown: the server is still running and this step changed nothing; continue with {resume}"
                )));
            }
            let tag = ctx.tag();
            ctx.drop_conn();
            let rec = control.stop(ctx.target, StopMode::Clean, &tag.replace("/* ", "").replace(" */", ""))?;
            sigint_fault(ctx, "stop");
            if ctx.aborted() {
                let how = if rec.clean {
                    "it shut down cleanly".to_string()
                } else {
                    "its error log shows no clean shutdown, so the next start runs crash recovery".to_string()
                };
                return Err(interrupted(format!(
                    "interrupted during the shutdown: the server is DOWN ({how}); {resume} starts it with the new redo size and checks it, or start it yourself with {} (innops's drop-in already sets the new size)",
                    control.spec.start_hint()
                )));
            }
            Ok(serde_json::to_value(rec)?)
        })
        .post(clean_shutdown_check())
        .recover(move |ctx| start_after_unclean_stop(ctx, var))
        .bench()
}

fn clean_shutdown_check() -> Check {
    Check::new("clean shutdown", |ctx| {
        let up = ctx.target.connect().is_ok();
        let expected = "down after a clean shutdown";
        if up {
            return Ok(Verdict::fail(
                "server still answers",
                expected,
                "the server still answers after the shutdown: check what started it again",
            ));
        }
        let Some(control) = readable_log(ctx) else {
            return Ok(Verdict::pass(
                "down (not checked for a clean shutdown: the error log is not readable here)",
                expected,
            ));
        };
        // Only what the server wrote since innops's own SHUTDOWN: an older clean shutdown proves nothing.
        let (lines, own) = lines_since_action(ctx, control, "stop");
        let since = if own {
            "since innops's shutdown"
        } else {
            "for its last process"
        };
        Ok(Verdict::check(
            errorlog::stopped_cleanly(&lines),
            if errorlog::stopped_cleanly(&lines) {
                format!("down, the log says Shutdown complete {since}")
            } else {
                format!("down, no Shutdown complete line {since}")
            },
            expected,
            "the server went down without a clean shutdown (killed?), and starting it with a new redo size now would mix crash recovery with the resize",
        ))
    })
}

/// After a stop that was not clean: start the server so InnoDB's crash recovery finishes, and say where it is.
fn start_after_unclean_stop(ctx: &mut Ctx, var: RedoSizeVariable) -> anyhow::Result<String> {
    let control = ctx.control()?;
    if ctx.target.connect().is_ok() {
        return Ok("The server is running; innops changed nothing more.".into());
    }
    ctx.drop_conn();
    control.start(ctx.target, &[])?;
    let now = current_size(ctx, var)
        .map(format_size)
        .unwrap_or_else(|_| "an unknown size".into());
    let resume = ctx
        .run_dir
        .as_ref()
        .map(|d| format!("`innops resume {}`", d.display()))
        .unwrap_or_else(|| "the resize again".into());
    Ok(format!(
        "innops started the server again so InnoDB's crash recovery could finish, and it runs with a redo log of {now}: read its error log, then run {resume} to finish"
    ))
}

fn start_step(want: &Want, dropin: &Result<PathBuf, String>) -> Step {
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
        let control = ctx.control()?;
        ctx.drop_conn();
        let offset = control.log_offset();
        let file_before = w2.file();
        let lines = control.start(ctx.target, &[])?;
        Ok(serde_json::json!({ "log_offset": offset, "file_before": file_before, "log": lines }))
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
        want,
        "the server started with another size: check which option file or command-line option sets it last",
    ))
    .post(log_file_check(want))
    .post(error_log_check(true, want))
    .recover(move |ctx| restore_and_start(ctx, &dropin, var))
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
            let backup = ctx.run_dir.clone().unwrap_or_else(std::env::temp_dir).join("backup");
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

/// Calls `probe` every `every` until it reports done or `bound` has passed, and returns its last value: a wait for
/// something the server writes a moment after a statement returns, never longer than the bound.
pub(crate) fn poll_until<T>(
    bound: Duration,
    every: Duration,
    mut probe: impl FnMut() -> (bool, T),
) -> T {
    let deadline = std::time::Instant::now() + bound;
    loop {
        let (done, value) = probe();
        if done || std::time::Instant::now() > deadline {
            return value;
        }
        std::thread::sleep(every);
    }
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
        })
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

/// Put the previous drop-in back from the run's backup.
pub(crate) fn restore_dropin(ctx: &Ctx, path: &Path) -> anyhow::Result<()> {
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
        std::fs::copy(&saved, path)?;
    } else if backup.join(format!("{name}.absent")).exists() {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// After a failed start: when the server did not come up, put the previous drop-in back and start again, so
/// the server runs as before. When it did come up, touch nothing and say how it runs.
fn restore_and_start(
    ctx: &mut Ctx,
    dropin: &Result<PathBuf, String>,
    var: RedoSizeVariable,
) -> anyhow::Result<String> {
    let control = ctx.control()?;
    let path = dropin.clone().map_err(crate::error::refused)?;
    if let Ok(mut conn) = ctx.target.connect() {
        let now = query_size(&mut conn, &ctx.tag(), var)?;
        return Ok(format!(
            "The server is running with a redo log of {}; innops left {} as it is.",
            format_size(now),
            path.display()
        ));
    }
    restore_dropin(ctx, &path)?;
    ctx.drop_conn();
    control.start(ctx.target, &[])?;
    Ok(format!(
        "The previous {} was restored and the server started again with it.",
        path.display()
    ))
}

fn preflight(p: &RedoParams, facts: &ServerFacts, env: &PlanEnv, online: bool) -> Step {
    let size = p.size;
    let supported = facts.supported();
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

#[cfg(test)]
mod tests {

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

    /// The file: `my_print_defaults --mysqld` gives innodb_log_file_size=1G (the version group comes
    /// after [mysqld]), and so does innops for a 10.11 server; a 10.6 server would read 96M.
    #[test]
    fn the_next_start_reads_the_groups_of_the_servers_version() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("my.cnf");
        std::fs::write(
            &f,
            "[mysqld]\ninnodb_log_file_size=96M\n[mariadb-10.11]\ninnodb_log_file_size=1G\n",
        )
        .unwrap();
        let got = |v: &str| effective_config(&f, "innodb_log_file_size", v).unwrap();
        assert_eq!(got("10.11.19-MariaDB-0+deb12u1").as_deref(), Some("1G"));
        assert_eq!(got("10.6.18-MariaDB").as_deref(), Some("96M"));
        assert_eq!(got("").as_deref(), Some("96M"));
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

    #[test]
    fn advice_never_shrinks_and_its_command_parses_back() {
        let mib = 1u64 << 20;
        // 3.9G an hour (the sample that printed `--size 3.9G`): exact MiB in the command.
        let rate = (4000 * mib) as f64 / 3600.0;
        let (rec, cmd) = advice_command(rate, Some(96 * mib), "--socket /s");
        assert_eq!(rec, 4032 * mib);
        assert_eq!(
            cmd.as_deref(),
            Some("innops redo --size 4032M --socket /s --execute")
        );
        // A quiet sample never suggests shrinking the log.
        let (_, cmd) = advice_command(1.0, Some(2 << 30), "");
        assert_eq!(cmd, None);
        let (_, cmd) = advice_command(rate, Some(4032 * mib), "");
        assert_eq!(cmd, None);
        // Unknown current size: the recommendation stands.
        assert!(advice_command(1.0, None, "").1.is_some());
    }
}
