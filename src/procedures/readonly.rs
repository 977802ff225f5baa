//! `innops readonly` (issue 11): prepare a server for read-only InnoDB, and `--undo` it.
//!
//! The path follows shared/FACTS.md §3: change buffering off where it matters, an online pre-flush (dirty pages
//! and purge history drained while the server still serves, so the downtime is short), a slow shutdown
//! (`innodb_fast_shutdown=0`, recorded with the history length just before `SHUTDOWN`, since no log line marks
//! it), proof of a clean shutdown (the `Shutdown complete` line since innops's own `SHUTDOWN`, the pid file
//! gone), `innodb_read_only=1` in innops's drop-in, a start, and checks of the live state: the variable, a
//! write probe refused with the read-only error, the `Started in read only mode` line. A start that fails (a
//! crash-recovery refusal after an unclean stop) puts the previous drop-in back and starts the server normally.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::bad_input;
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::redo::{
    effective_config, free_bytes, interrupted, journaled, lines_since_action, readable_log,
    restore_dropin,
};
use crate::procedures::PlanEnv;
use crate::server::control::StopMode;
use crate::server::errorlog;
use crate::server::facts::{ChangeBuffering, Flavor, RedoResize, ServerFacts};
use crate::server::optionfile;
use crate::sql::Queryable;
use crate::units::{format_count, format_size};

/// The schema and table of the write probe innops creates before the shutdown.
pub const PROBE_SCHEMA: &str = "innops";
pub const PROBE_TABLE: &str = "readonly_probe";
/// MariaDB/MySQL `ER_OPEN_AS_READONLY`: `Table '…' is read only`.
pub const ER_OPEN_AS_READONLY: u16 = 1036;
/// A transaction open this long (seconds) refuses the plan: its rollback at shutdown would lengthen the downtime
/// and end someone's work.
pub const LONG_TRX_S: u64 = 60;
/// Free space the restart needs at least (buffer-pool dump, temporary tablespace).
const MIN_FREE: u64 = 64 << 20;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReadonlyParams {
    /// Return the server to read-write (and to the redo size it had).
    pub undo: bool,
    /// Shrink the redo log to the smallest size the version accepts online before the shutdown.
    pub min_redo: bool,
    /// Also `read_only=1`, so MyISAM/Aria writes, GRANT and CREATE USER are refused too.
    pub sql_read_only: bool,
    /// Flush dirty pages and drain purge online before the shutdown.
    pub preflush: bool,
    /// Bound of each pre-flush wait, seconds.
    pub preflush_timeout_s: u64,
}

/// What the forward run records beside the drop-in, so `--undo` can give back what it changed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct State {
    /// The redo size option innops changed, its value in the drop-in before (None: unset), and the size the
    /// server ran with before.
    pub redo_key: Option<String>,
    pub redo_dropin_before: Option<String>,
    pub redo_running_before: Option<u64>,
    pub sql_read_only: bool,
}

/// The state file beside the drop-in (not a `.cnf`: `!includedir` never reads it).
pub fn state_path(dropin: &Path) -> PathBuf {
    dropin.with_file_name("innops-readonly.json")
}

fn read_state(dropin: &Path) -> Option<State> {
    serde_json::from_str(&std::fs::read_to_string(state_path(dropin)).ok()?).ok()
}

/// What the state file holds after a forward run that recorded `new`, when an earlier run recorded `old`: the
/// earlier record wins for what both changed (it has the values from before innops), and the new one adds what
/// only it changed.
fn merge_state(old: Option<State>, new: State) -> State {
    let Some(old) = old else { return new };
    let redo = if old.redo_key.is_some() {
        (
            old.redo_key,
            old.redo_dropin_before,
            old.redo_running_before,
        )
    } else {
        (
            new.redo_key,
            new.redo_dropin_before,
            new.redo_running_before,
        )
    };
    State {
        redo_key: redo.0,
        redo_dropin_before: redo.1,
        redo_running_before: redo.2,
        sql_read_only: old.sql_read_only || new.sql_read_only,
    }
}

/// The smallest redo size this server accepts for an online resize, and the statement, or why `--min-redo`
/// cannot be done here. Pure, unit-tested per version.
pub fn min_redo(facts: &ServerFacts) -> Result<(u64, &'static str), String> {
    let (min, _, _) = facts.redo_size_limits();
    match facts.redo_resize() {
        RedoResize::OnlineLogFileSize => {
            let buffer = facts.var_u64("innodb_log_buffer_size").unwrap_or(0);
            Ok((min.max(buffer), "innodb_log_file_size"))
        }
        RedoResize::OnlineRedoLogCapacity => Ok((min, "innodb_redo_log_capacity")),
        RedoResize::RestartOnly => Err(format!(
            "--min-redo needs an online redo resize, and {} resizes the redo log only at a read-write start (a read-only start keeps the old file): run `innops redo --size SIZE` first, then innops readonly without --min-redo",
            facts.describe()
        )),
    }
}

/// Whether change buffering must be turned off on this server, as the step's pre-check says it.
pub fn change_buffering_note(facts: &ServerFacts) -> &'static str {
    match facts.change_buffering() {
        ChangeBuffering::Disable => "innodb_change_buffering matters here: set to none before the slow shutdown",
        ChangeBuffering::Ignored => "innodb_change_buffering exists but the server ignores it (MariaDB 10.9+): nothing to do",
        ChangeBuffering::Gone => "the change buffer is gone (MariaDB 11.0+): nothing to do",
    }
}

/// Seconds a drain of `amount` takes at `per_sec`, as words.
pub fn estimate(amount: u64, per_sec: f64) -> String {
    if amount == 0 {
        return "nothing to do".into();
    }
    if per_sec <= 0.0 {
        return "no progress measured".into();
    }
    let s = amount as f64 / per_sec;
    if s < 1.0 {
        "under a second".into()
    } else if s < 120.0 {
        format!("about {:.0} s", s.ceil())
    } else {
        format!("about {:.0} min", (s / 60.0).ceil())
    }
}

/// Everything the steps share.
#[derive(Debug, Clone)]
struct Ro {
    p: ReadonlyParams,
    dropin: Result<PathBuf, String>,
    option_file: Option<PathBuf>,
    pid_file: Option<PathBuf>,
    datadir: Option<PathBuf>,
    min_redo: Option<(u64, &'static str)>,
    redo_before: Option<u64>,
    /// The server's version string: which version groups of the option files it reads.
    version: String,
    flags: String,
}

impl Ro {
    fn rerun(&self) -> String {
        let mut parts = vec!["innops readonly".to_string()];
        if self.p.undo {
            parts.push("--undo".into());
        }
        if self.p.min_redo {
            parts.push("--min-redo".into());
        }
        if self.p.sql_read_only {
            parts.push("--sql-read-only".into());
        }
        if !self.flags.is_empty() {
            parts.push(self.flags.clone());
        }
        parts.push("--execute".into());
        parts.join(" ")
    }

    /// The settings the drop-in gets.
    fn settings(&self, state: Option<&State>) -> Vec<(String, Option<String>)> {
        if self.p.undo {
            let mut s = vec![
                ("innodb_read_only".to_string(), None),
                ("read_only".to_string(), None),
            ];
            if let Some(st) = state {
                if let Some(k) = &st.redo_key {
                    s.push((k.clone(), st.redo_dropin_before.clone()));
                }
            }
            s
        } else {
            let mut s = vec![("innodb_read_only".to_string(), Some("1".to_string()))];
            if self.p.sql_read_only {
                s.push(("read_only".into(), Some("1".into())));
            }
            if let Some((size, key)) = self.min_redo {
                s.push((key.to_string(), Some(size.to_string())));
            }
            s
        }
    }

    fn change(&self, state: Option<&State>) -> anyhow::Result<optionfile::ConfigChange> {
        let path = self.dropin.clone().map_err(crate::error::refused)?;
        let settings = self.settings(state);
        let refs: Vec<(&str, Option<&str>)> = settings
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        optionfile::plan_change(&path, "mysqld", &refs)
    }

    /// The innodb_read_only the option files give at the next start: None when innops does not know them.
    fn next_start_ro(&self) -> anyhow::Result<Option<bool>> {
        let Some(file) = &self.option_file else {
            return Ok(None);
        };
        let v = effective_config(file, "innodb_read_only", &self.version)?;
        Ok(Some(v.as_deref().is_some_and(is_on)))
    }
}

fn is_on(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "on" | "true")
}

/// `@@innodb_read_only` from a connection of its own; None when the server does not answer.
fn live_ro(ctx: &Ctx) -> anyhow::Result<Option<bool>> {
    match ctx.target.connect() {
        Ok(mut c) => {
            let v: Option<u64> =
                c.query_first(format!("SELECT {} @@GLOBAL.innodb_read_only", ctx.tag()))?;
            Ok(Some(v.unwrap_or(0) != 0))
        }
        Err(_) => Ok(None),
    }
}

fn status_u64(ctx: &mut Ctx, name: &str) -> anyhow::Result<Option<u64>> {
    let tag = ctx.tag();
    let row: Option<(String, String)> = ctx
        .conn()?
        .query_first(format!("SHOW {tag} GLOBAL STATUS LIKE '{name}'"))?;
    Ok(row.and_then(|(_, v)| v.parse().ok()))
}

fn resume_hint(ctx: &Ctx) -> String {
    ctx.run_dir
        .as_ref()
        .map(|d| format!("`innops resume {}`", d.display()))
        .unwrap_or_else(|| "innops".into())
}

/// Build the plan.
pub fn plan(p: &ReadonlyParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    if p.undo && p.min_redo {
        return Err(bad_input(
            "--undo gives back the redo size the server had before --min-redo by itself: drop --min-redo",
        ));
    }
    let min = if p.min_redo {
        Some(min_redo(facts).map_err(bad_input)?)
    } else {
        None
    };
    let datadir = facts.var("datadir").map(PathBuf::from);
    let pid_file = match (facts.var("pid_file"), &datadir) {
        (Some(f), Some(d)) if env.target.local => {
            let f = Path::new(f);
            Some(if f.is_absolute() {
                f.to_path_buf()
            } else {
                d.join(f)
            })
        }
        _ => None,
    };
    let ro = Ro {
        p: p.clone(),
        dropin: env.dropin.clone(),
        option_file: env.option_file.clone(),
        pid_file,
        datadir: datadir.filter(|_| env.target.local),
        min_redo: min,
        redo_before: facts.redo_size_bytes(),
        version: facts.version_string.clone(),
        flags: env.flags(),
    };
    let mut notes = Vec::new();
    let mut steps = Vec::new();
    if p.undo {
        notes.push("innops shuts the server down cleanly, removes innodb_read_only (and read_only, and the redo size --min-redo set) from its drop-in, and starts it read-write".to_string());
        steps.push(preflight(&ro, facts, env));
        steps.push(stop_step(&ro));
        steps.push(dropin_step(&ro));
        steps.push(start_step(&ro));
        steps.push(verify_step(&ro));
    } else {
        notes.push(format!(
            "innops turns change buffering off where it matters ({}), {}shuts the server down slowly (innodb_fast_shutdown=0), proves the shutdown clean, writes innodb_read_only=1 into its drop-in and starts it",
            change_buffering_note(facts),
            if p.preflush { "flushes dirty pages and drains purge online, " } else { "" }
        ));
        notes.push(if p.sql_read_only {
            "--sql-read-only: read_only=1 too, so MyISAM/Aria writes, GRANT and CREATE USER are refused as well (except for accounts with READ_ONLY ADMIN or SUPER)".to_string()
        } else {
            "innodb_read_only does not stop MyISAM/Aria writes, GRANT or CREATE USER (FACTS §3): --sql-read-only also sets read_only=1".to_string()
        });
        if let Some((size, key)) = min {
            notes.push(format!(
                "--min-redo: the redo log shrinks online to {} ({key}) before the shutdown; --undo gives back {}",
                format_size(size),
                ro.redo_before.map(format_size).unwrap_or_else(|| "the size it had".into())
            ));
        }
        steps.push(preflight(&ro, facts, env));
        steps.push(change_buffering_step(facts));
        steps.push(probe_table_step());
        if p.preflush {
            steps.push(preflush_step(&ro));
        }
        if min.is_some() {
            steps.push(min_redo_step(&ro));
        }
        steps.push(stop_step(&ro));
        steps.push(dropin_step(&ro));
        steps.push(start_step(&ro));
        steps.push(verify_step(&ro));
    }
    let header = env.header("readonly", facts, serde_json::to_value(p)?, notes);
    // A read-only workload runs on either side of the switch; --undo starts from a read-only server, whose
    // benchmark tables may be missing, so it does not benchmark.
    let bench = env
        .bench_time
        .filter(|_| !p.undo)
        .map(|t| crate::bench::PlanBench::read_only(Duration::from_secs(t)));
    Ok(Plan {
        header,
        steps,
        bench,
        locks: vec!["readonly".into(), crate::plan::lock::SERVER.into()],
    })
}

/// An open transaction: id, connection, seconds open, rows changed, statement.
type Trx = (String, Option<u64>, u64, u64, Option<String>);

fn preflight(ro: &Ro, facts: &ServerFacts, env: &PlanEnv) -> Step {
    let supported = facts.supported();
    let has_control = env.control.is_some();
    let dropin = ro.dropin.clone();
    let datadir = ro.datadir.clone();
    let undo = ro.p.undo;
    let sql_ro = ro.p.sql_read_only;
    let flavor = facts.flavor;
    let need_free = if undo {
        MIN_FREE.max(ro.redo_before.unwrap_or(0))
    } else {
        MIN_FREE
    };
    let mut step = Step::new(
        "preflight",
        if undo {
            "Check the server can return to read-write"
        } else {
            "Check the server can be made read-only"
        },
        Risk::Read,
    )
    .pre(Check::new("server version supported", move |_| {
        Ok(match &supported {
            Ok(()) => Verdict::pass("supported", "MySQL 5.7+ or MariaDB 10.5+"),
            Err(why) => Verdict::fail("unsupported", "MySQL 5.7+ or MariaDB 10.5+", why.clone()),
        })
    }))
    .pre(Check::new("not in forced recovery", |ctx| {
        let tag = ctx.tag();
        let force: Option<u64> = ctx
            .conn()?
            .query_first(format!("SELECT {tag} @@GLOBAL.innodb_force_recovery"))?;
        let force = force.unwrap_or(0);
        Ok(Verdict::check(
            force == 0,
            format!("innodb_force_recovery={force}"),
            "0",
            "the server runs in forced recovery: finish the recovery and restart it without innodb_force_recovery first",
        ))
    }))
    .pre(Check::new("server control", move |_| {
        Ok(Verdict::check(
            has_control,
            if has_control { "available" } else { "none" },
            "a way to start the server again",
            "innops must stop and start the server and was not told how: pass --sandbox NAME, --service systemd:UNIT or --start-cmd/--stop-cmd",
        ))
    }))
    .pre(Check::new("drop-in can be written", move |_| {
        Ok(match &dropin {
            Ok(path) => Verdict::pass(path.display().to_string(), "a drop-in file innops may write"),
            Err(why) => Verdict::fail("unknown", "a drop-in file innops may write", why.clone()),
        })
    }))
    .pre(Check::new("free space in the data directory", move |_| {
        let expected = format!("≥ {} free", format_size(need_free));
        let Some(dir) = datadir.clone() else {
            return Ok(Verdict::pass("not checked: the data directory is not on this machine", expected));
        };
        Ok(match free_bytes(&dir) {
            Some(free) => Verdict::check(
                free >= need_free,
                format!("{} free in {}", format_size(free), dir.display()),
                expected,
                format!("the filesystem of {} has {} free and the restart needs {}: free space first", dir.display(), format_size(free), format_size(need_free)),
            ),
            None => Verdict::pass(format!("not checked: {} is not readable here", dir.display()), expected),
        })
    }));
    if undo {
        return step;
    }
    step = step
        .pre(Check::new("open and long-running transactions", |ctx| {
            let tag = ctx.tag();
            let trx: Vec<Trx> = ctx.conn()?.query(format!(
                "SELECT {tag} trx_id, trx_mysql_thread_id, TIMESTAMPDIFF(SECOND, trx_started, NOW()), trx_rows_modified, trx_query \
                 FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id <> CONNECTION_ID() ORDER BY trx_started"
            ))?;
            let listed: Vec<String> = trx
                .iter()
                .take(10)
                .map(|(id, thread, age, rows, q)| {
                    format!(
                        "trx {id} (connection {}, open {age} s, {rows} rows changed{})",
                        thread.map(|t| t.to_string()).unwrap_or_else(|| "?".into()),
                        q.as_deref().map(|q| format!(", running `{}`", q.chars().take(60).collect::<String>())).unwrap_or_default()
                    )
                })
                .collect();
            let long: Vec<&Trx> =
                trx.iter().filter(|t| t.2 >= LONG_TRX_S).collect();
            let observed = if trx.is_empty() {
                "none".to_string()
            } else {
                format!("{} open: {}", trx.len(), listed.join("; "))
            };
            Ok(match long.first() {
                Some((id, thread, age, _, _)) => Verdict::fail(
                    observed,
                    format!("none open {LONG_TRX_S} s or longer"),
                    format!(
                        "transaction {id} has been open {age} s (connection {}) and the shutdown would roll it back: let it commit, or end it with KILL {}, then run the command again",
                        thread.map(|t| t.to_string()).unwrap_or_else(|| "?".into()),
                        thread.map(|t| t.to_string()).unwrap_or_else(|| "ID".into())
                    ),
                ),
                None => Verdict::pass(observed, format!("none open {LONG_TRX_S} s or longer (shorter ones are rolled back at the shutdown)")),
            })
        }))
        .pre(Check::new("purge history (slow shutdown estimate)", |ctx| {
            let h0 = status_u64(ctx, "Innodb_history_list_length")?.unwrap_or(0);
            if h0 == 0 {
                return Ok(Verdict::pass("history list length 0: the slow shutdown has nothing to purge", "measured"));
            }
            let t0 = Instant::now();
            std::thread::sleep(Duration::from_secs(1));
            let h1 = status_u64(ctx, "Innodb_history_list_length")?.unwrap_or(0);
            let rate = h0.saturating_sub(h1) as f64 / t0.elapsed().as_secs_f64();
            Ok(Verdict::pass(
                format!(
                    "history list length {} (purged {}/s over 1 s): the slow shutdown's purge takes {}",
                    format_count(h1),
                    format_count(rate as u64),
                    if rate > 0.0 { estimate(h1, rate) } else { "an unknown time (purge made no progress: an open read view may hold it)".into() }
                ),
                "measured",
            ))
        }))
        .pre(Check::new("dirty pages", |ctx| {
            let dirty = status_u64(ctx, "Innodb_buffer_pool_pages_dirty")?.unwrap_or(0);
            let tag = ctx.tag();
            let (page, io): (Option<u64>, Option<u64>) = ctx
                .conn()?
                .query_first(format!("SELECT {tag} @@GLOBAL.innodb_page_size, @@GLOBAL.innodb_io_capacity_max"))?
                .unwrap_or((None, None));
            let page = page.unwrap_or(16384);
            let io = io.unwrap_or(2000);
            Ok(Verdict::pass(
                if dirty == 0 {
                    "0 dirty pages: nothing to flush".to_string()
                } else {
                    format!(
                        "{} dirty pages ({}): flushing takes {} at innodb_io_capacity_max={io}",
                        format_count(dirty),
                        format_size(dirty * page),
                        estimate(dirty, io as f64)
                    )
                },
                "measured",
            ))
        }))
        .pre(Check::new("replication role", move |ctx| {
            let tag = ctx.tag();
            let status_sql = match flavor {
                Flavor::MariaDB => format!("SHOW {tag} ALL SLAVES STATUS"),
                Flavor::MySQL => format!("SHOW {tag} REPLICA STATUS"),
            };
            let replica: Vec<mysql::Row> = ctx.conn()?.query(status_sql).unwrap_or_default();
            let dumps: Vec<(u64, String)> = ctx.conn()?.query(format!(
                "SELECT {tag} ID, HOST FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'"
            ))?;
            Ok(if !replica.is_empty() {
                Verdict::fail(
                    format!("a replica ({} replication connection(s) configured)", replica.len()),
                    "not a replica",
                    "this server is a replica and read-only InnoDB cannot apply its source's changes: stop replication (STOP ALL SLAVES; RESET SLAVE ALL) first if it is to stay read-only",
                )
            } else if !dumps.is_empty() {
                let hosts: Vec<String> = dumps.iter().map(|(id, h)| format!("{h} (connection {id})")).collect();
                Verdict::pass(
                    format!("a primary with {} replica(s): {}; they receive nothing new while it is read-only", dumps.len(), hosts.join(", ")),
                    "not a replica",
                )
            } else {
                Verdict::pass("neither a replica nor a primary with replicas", "not a replica")
            })
        }))
        .pre(Check::new("what stays writable in read-only mode", move |ctx| {
            let tag = ctx.tag();
            let tables: Vec<(String, String, String)> = ctx.conn()?.query(format!(
                "SELECT {tag} TABLE_SCHEMA, TABLE_NAME, ENGINE FROM information_schema.TABLES \
                 WHERE ENGINE IN ('MyISAM', 'Aria') AND TABLE_TYPE = 'BASE TABLE' \
                 AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') \
                 ORDER BY TABLE_SCHEMA, TABLE_NAME"
            ))?;
            let listed: Vec<String> = tables.iter().take(10).map(|(s, t, e)| format!("{s}.{t} ({e})")).collect();
            let more = tables.len().saturating_sub(listed.len());
            let mut observed = if tables.is_empty() {
                "no MyISAM/Aria tables outside the system schemas".to_string()
            } else {
                format!(
                    "{} MyISAM/Aria table(s): {}{}",
                    tables.len(),
                    listed.join(", "),
                    if more > 0 { format!(" and {more} more") } else { String::new() }
                )
            };
            if sql_ro {
                let bypass: Vec<String> = ctx.conn()?.query(format!(
                    "SELECT {tag} DISTINCT GRANTEE FROM information_schema.USER_PRIVILEGES \
                     WHERE PRIVILEGE_TYPE IN ('SUPER', 'READ_ONLY ADMIN') ORDER BY GRANTEE"
                )).unwrap_or_default();
                observed.push_str(&format!(
                    "; read_only=1 refuses their writes, GRANT and CREATE USER except for {} account(s) with READ_ONLY ADMIN or SUPER{}",
                    bypass.len(),
                    if bypass.is_empty() { String::new() } else { format!(": {}", bypass.iter().take(10).cloned().collect::<Vec<_>>().join(", ")) }
                ));
            } else {
                observed.push_str("; these tables, GRANT and CREATE USER stay writable (pass --sql-read-only to refuse them too)");
            }
            Ok(Verdict::pass(observed, "listed"))
        }));
    step
}

fn change_buffering_step(facts: &ServerFacts) -> Step {
    let cb = facts.change_buffering();
    Step::new("change-buffering", "Turn change buffering off", Risk::Online)
        .preview("/* innops:readonly:change-buffering */ SET GLOBAL innodb_change_buffering = 'none' (where it matters)")
        .pre(Check::new("change buffering", move |ctx| {
            let why = match cb {
                ChangeBuffering::Disable => None,
                ChangeBuffering::Ignored => Some("the server ignores innodb_change_buffering (MariaDB 10.9+)"),
                ChangeBuffering::Gone => Some("the change buffer is gone (MariaDB 11.0+)"),
            };
            if let Some(why) = why {
                return Ok(Verdict::done(why, "none"));
            }
            if live_ro(ctx)? == Some(true) {
                return Ok(Verdict::done("the server is read-only already", "none"));
            }
            let tag = ctx.tag();
            let v: Option<String> = ctx.conn()?.query_first(format!("SELECT {tag} @@GLOBAL.innodb_change_buffering"))?;
            let v = v.unwrap_or_default();
            Ok(if v.eq_ignore_ascii_case("none") {
                Verdict::done(format!("innodb_change_buffering={v}"), "none")
            } else {
                Verdict::pass(format!("innodb_change_buffering={v}"), "none")
            })
        }))
        .act(|ctx| {
            let tag = ctx.tag();
            let before: Option<String> = ctx.conn()?.query_first(format!("SELECT {tag} @@GLOBAL.innodb_change_buffering"))?;
            ctx.conn()?.query_drop(format!("SET {tag} GLOBAL innodb_change_buffering = 'none'"))?;
            Ok(serde_json::json!({ "before": before }))
        })
        .post(Check::new("innodb_change_buffering is none", |ctx| {
            let tag = ctx.tag();
            let v: Option<String> = ctx.conn()?.query_first(format!("SELECT {tag} @@GLOBAL.innodb_change_buffering"))?;
            let v = v.unwrap_or_default();
            Ok(Verdict::check(
                v.eq_ignore_ascii_case("none"),
                format!("innodb_change_buffering={v}"),
                "none",
                "the change buffer is still on: check what set it again",
            ))
        }))
        .bench()
}

fn probe_sql(tag: &str) -> String {
    format!(
        "UPDATE {tag} {} SET id = id WHERE id = -1",
        crate::sql::qualified(PROBE_SCHEMA, PROBE_TABLE)
    )
}

fn probe_exists(ctx: &mut Ctx) -> anyhow::Result<bool> {
    let tag = ctx.tag();
    let n: Option<u64> = ctx.conn()?.exec_first(
        format!("SELECT {tag} COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND ENGINE = 'InnoDB'"),
        (PROBE_SCHEMA, PROBE_TABLE),
    )?;
    Ok(n.unwrap_or(0) > 0)
}

fn probe_table_step() -> Step {
    let q = crate::sql::qualified(PROBE_SCHEMA, PROBE_TABLE);
    Step::new(
        "probe-table",
        "Create the InnoDB table the write probe uses",
        Risk::Online,
    )
    .preview(format!(
        "/* innops:readonly:probe-table */ CREATE TABLE IF NOT EXISTS {q} (id INT PRIMARY KEY) ENGINE=InnoDB"
    ))
    .pre(Check::new("probe table", |ctx| {
        Ok(if probe_exists(ctx)? {
            Verdict::done(format!("{PROBE_SCHEMA}.{PROBE_TABLE} exists"), "an InnoDB table")
        } else if live_ro(ctx)? == Some(true) {
            Verdict::fail(
                format!("{PROBE_SCHEMA}.{PROBE_TABLE} is missing and the server is read-only"),
                "an InnoDB table",
                "the server is read-only already and innops cannot create its probe table: run `innops readonly --undo` first",
            )
        } else {
            Verdict::pass("missing", "an InnoDB table")
        })
    }))
    .act(move |ctx| {
        let tag = ctx.tag();
        ctx.conn()?.query_drop(format!(
            "CREATE {tag} DATABASE IF NOT EXISTS {}",
            crate::sql::quote_ident(PROBE_SCHEMA)
        ))?;
        ctx.conn()?.query_drop(format!(
            "CREATE {tag} TABLE IF NOT EXISTS {q} (id INT PRIMARY KEY) ENGINE=InnoDB"
        ))?;
        Ok(serde_json::json!({ "table": format!("{PROBE_SCHEMA}.{PROBE_TABLE}") }))
    })
    .post(Check::new("probe table exists", |ctx| {
        let ok = probe_exists(ctx)?;
        Ok(Verdict::check(
            ok,
            if ok { "exists" } else { "missing" },
            "an InnoDB table",
            "the probe table was not created: check the account may create the innops schema",
        ))
    }))
}

/// The pre-flush values to put back, from this run's journal.
fn restore_preflush(ctx: &mut Ctx) -> anyhow::Result<String> {
    let Some(rec) = journaled(ctx, "preflush").or_else(|| ctx.memo.get("preflush").cloned()) else {
        return Ok("nothing to restore: the pre-flush recorded no old values".into());
    };
    let Some(pct) = rec.get("old_max_dirty_pages_pct").and_then(|v| v.as_f64()) else {
        return Ok("nothing to restore".into());
    };
    if ctx.target.connect().is_err() {
        return Ok("the server is down: innodb_max_dirty_pages_pct comes from its option files at the next start".into());
    }
    let tag = ctx.tag();
    ctx.conn()?.query_drop(format!(
        "SET {tag} GLOBAL innodb_max_dirty_pages_pct = {pct}"
    ))?;
    match rec.get("old_io_capacity").and_then(|v| v.as_u64()) {
        Some(io) => {
            ctx.conn()?
                .query_drop(format!("SET {tag} GLOBAL innodb_io_capacity = {io}"))?;
            Ok(format!(
                "innodb_max_dirty_pages_pct was set back to {pct} and innodb_io_capacity to {io}"
            ))
        }
        None => Ok(format!("innodb_max_dirty_pages_pct was set back to {pct}")),
    }
}

fn preflush_step(ro: &Ro) -> Step {
    let timeout = Duration::from_secs(ro.p.preflush_timeout_s);
    let t_s = ro.p.preflush_timeout_s;
    Step::new(
        "preflush",
        "Pre-flush dirty pages and drain purge while the server still serves",
        Risk::Online,
    )
    .preview("/* innops:readonly:preflush */ SET GLOBAL innodb_max_dirty_pages_pct = 0, innodb_io_capacity = @@innodb_io_capacity_max; wait for Innodb_buffer_pool_pages_dirty, then Innodb_history_list_length, to fall")
    .pre(Check::new("server read-write", |ctx| {
        Ok(match live_ro(ctx)? {
            Some(true) => Verdict::done("read-only already", "read-write"),
            Some(false) => Verdict::pass("read-write", "read-write"),
            None => Verdict::done("down", "read-write"),
        })
    }))
    .act(move |ctx| {
        let tag = ctx.tag();
        let old: Option<f64> = ctx.conn()?.query_first(format!("SELECT {tag} @@GLOBAL.innodb_max_dirty_pages_pct"))?;
        let old = old.unwrap_or(90.0);
        // With dirty pages above innodb_max_dirty_pages_pct the page cleaner writes at innodb_io_capacity (200
        // by default: ~140 pages/s measured, half a minute for 5,000 pages). The DBA's own burst ceiling,
        // innodb_io_capacity_max, is what the pre-flush runs at; both come back if the plan stops here, and the
        // restart reads them from the option files.
        let (io, io_max): (Option<u64>, Option<u64>) = ctx
            .conn()?
            .query_first(format!("SELECT {tag} @@GLOBAL.innodb_io_capacity, @@GLOBAL.innodb_io_capacity_max"))?
            .unwrap_or((None, None));
        let raise = match (io, io_max) {
            (Some(io), Some(max)) if max > io => Some((io, max)),
            _ => None,
        };
        let rec = serde_json::json!({ "old_max_dirty_pages_pct": old, "old_io_capacity": raise.map(|(io, _)| io) });
        ctx.memo.insert("preflush".into(), rec.clone());
        ctx.conn()?.query_drop(format!("SET {tag} GLOBAL innodb_max_dirty_pages_pct = 0"))?;
        if let Some((_, max)) = raise {
            ctx.conn()?.query_drop(format!("SET {tag} GLOBAL innodb_io_capacity = {max}"))?;
        }
        let mut out = serde_json::json!({
            "old_max_dirty_pages_pct": old,
            "old_io_capacity": raise.map(|(io, _)| io),
            "io_capacity": raise.map(|(_, max)| max).or(io),
            "timeout_s": t_s,
        });
        for (key, var, label) in [
            ("dirty", "Innodb_buffer_pool_pages_dirty", "pre-flush: dirty pages written"),
            ("history", "Innodb_history_list_length", "pre-flush: purge history drained"),
        ] {
            let start = status_u64(ctx, var)?.unwrap_or(0);
            let t0 = Instant::now();
            let mut bar = crate::progress::Progress::rows(label, start.max(1), "pages");
            let mut now = start;
            let mut timed_out = false;
            while now > 0 {
                if ctx.aborted() {
                    bar.finish();
                    let restored = restore_preflush(ctx)?;
                    return Err(interrupted(format!(
                        "interrupted during the pre-flush: nothing went down and {restored}; continue with {}",
                        resume_hint(ctx)
                    )));
                }
                if t0.elapsed() > timeout {
                    timed_out = true;
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
                now = status_u64(ctx, var)?.unwrap_or(0);
                bar.set(start.saturating_sub(now));
            }
            bar.finish();
            out[key] = serde_json::json!({ "before": start, "after": now, "seconds": t0.elapsed().as_secs_f64(), "timed_out": timed_out });
            if timed_out {
                ctx.outcome.push(format!(
                    "pre-flush: {var} was {now} (from {start}) when the {t_s} s bound ran out; the slow shutdown does the rest"
                ));
            }
        }
        Ok(out)
    })
    .post(Check::new("innodb_max_dirty_pages_pct is 0 until the shutdown", |ctx| {
        let tag = ctx.tag();
        let v: Option<f64> = ctx.conn()?.query_first(format!("SELECT {tag} @@GLOBAL.innodb_max_dirty_pages_pct"))?;
        let v = v.unwrap_or(-1.0);
        Ok(Verdict::check(
            v == 0.0,
            format!("innodb_max_dirty_pages_pct={v}"),
            "0",
            "something set innodb_max_dirty_pages_pct again during the pre-flush: check who, then run the command again",
        ))
    }))
    .recover(restore_preflush)
}

fn min_redo_step(ro: &Ro) -> Step {
    let (size, key) = ro.min_redo.expect("min-redo step only with --min-redo");
    Step::new(
        "min-redo",
        format!("Shrink the redo log online to {}", format_size(size)),
        Risk::Online,
    )
    .preview(format!(
        "/* innops:readonly:min-redo */ SET GLOBAL {key} = {size}"
    ))
    .pre(Check::new("redo size", move |ctx| {
        // A read-only (or stopped) server cannot resize its redo log online: skipping the shrink would leave
        // the drop-in naming a size the server never ran with, and --undo would take it for the old one.
        match live_ro(ctx)? {
            Some(false) => {}
            state => {
                let what = if state == Some(true) { "read-only already" } else { "down" };
                return Ok(Verdict::fail(
                    format!("the server is {what}"),
                    format!("{} online, on a read-write server", format_size(size)),
                    format!("--min-redo shrinks the redo log online and the server is {what}, so it cannot: run `innops readonly --undo` first (or start it), or drop --min-redo"),
                ));
            }
        }
        let tag = ctx.tag();
        let cur: Option<u64> = ctx
            .conn()?
            .query_first(format!("SELECT {tag} @@GLOBAL.{key}"))?;
        let cur = cur.unwrap_or(0);
        Ok(if cur == size {
            Verdict::done(format_size(cur), format_size(size))
        } else {
            Verdict::pass(format_size(cur), format_size(size))
        })
    }))
    .act(move |ctx| {
        let tag = ctx.tag();
        let before: Option<u64> = ctx
            .conn()?
            .query_first(format!("SELECT {tag} @@GLOBAL.{key}"))?;
        ctx.conn()?
            .query_drop(format!("SET {tag} GLOBAL {key} = {size}"))?;
        Ok(serde_json::json!({ "before": before, "after": size }))
    })
    .post(Check::new("redo size is the minimum", move |ctx| {
        let tag = ctx.tag();
        let cur: Option<u64> = ctx
            .conn()?
            .query_first(format!("SELECT {tag} @@GLOBAL.{key}"))?;
        let cur = cur.unwrap_or(0);
        Ok(Verdict::check(
            cur == size,
            format_size(cur),
            format_size(size),
            "the server did not take the smaller redo size: read its error log",
        ))
    }))
}

fn stop_step(ro: &Ro) -> Step {
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
                let hint = ctx.control.map(|c| c.spec.start_hint()).unwrap_or_else(|| "its usual start command".into());
                down_verdict(log_clean, pid_left, &hint)
            }
        })
    }))
    .act(move |ctx| {
        let control = ctx.control()?;
        if ctx.aborted() {
            return Err(interrupted(format!(
                "interrupted before the shutdown: the server is still running and this step changed nothing; continue with {}",
                resume_hint(ctx)
            )));
        }
        let tag = ctx.tag();
        let fast_before: Option<u64> = ctx
            .conn()?
            .query_first(format!("SELECT {tag} @@GLOBAL.innodb_fast_shutdown"))?;
        ctx.drop_conn();
        let at = chrono::Utc::now();
        let t0 = Instant::now();
        let rec = control.stop(
            ctx.target,
            mode,
            &tag.replace("/* ", "").replace(" */", ""),
        )?;
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
    Check::new(
        if undo {
            "clean shutdown"
        } else {
            "clean slow shutdown"
        },
        move |ctx| {
            let expected = if undo {
                "down after a clean shutdown"
            } else {
                "down after a clean shutdown with innodb_fast_shutdown=0"
            };
            if ctx.target.connect().is_ok() {
                return Ok(Verdict::fail(
                    "server still answers",
                    expected,
                    "the server still answers after the shutdown: check what started it again",
                ));
            }
            let rec = journaled(ctx, "stop");
            let fast = rec.as_ref().and_then(|r| r.get("fast_shutdown")?.as_u64());
            let history = rec
                .as_ref()
                .and_then(|r| r.get("history_list_length")?.as_u64());
            if !undo && fast.is_some_and(|f| f != 0) {
                return Ok(Verdict::fail(
                    format!("innodb_fast_shutdown was {} at SHUTDOWN", fast.unwrap_or(0)),
                    expected,
                    "the shutdown was not slow, and a read-only server must start without pending purge: run the command again",
                ));
            }
            let Some(control) = readable_log(ctx) else {
                return Ok(Verdict::pass(
                    "down (not checked for a clean shutdown: the error log is not readable here)",
                    expected,
                ));
            };
            let (lines, own) = lines_since_action(ctx, control, "stop");
            let clean = errorlog::stopped_cleanly(&lines);
            let since = if own {
                "since innops's SHUTDOWN"
            } else {
                "for its last process"
            };
            let purge = lines
                .iter()
                .find(|l| l.contains("to purge"))
                .map(|l| format!("; {}", l.trim()))
                .unwrap_or_default();
            let slow = match (fast, history) {
                (Some(f), Some(h)) => {
                    format!(" (innodb_fast_shutdown={f}, history {h} at SHUTDOWN{purge})")
                }
                _ => purge,
            };
            Ok(Verdict::check(
                clean,
                if clean {
                    format!("down, the log says Shutdown complete {since}{slow}")
                } else {
                    format!("down, no Shutdown complete line {since}")
                },
                expected,
                "the server went down without a clean shutdown (killed?), and a read-only start would refuse the crash recovery it needs",
            ))
        },
    )
}

/// After a stop that was not clean (or not slow): start the server normally so crash recovery finishes.
fn start_after_failed_stop(ctx: &mut Ctx) -> anyhow::Result<String> {
    let control = ctx.control()?;
    if ctx.target.connect().is_ok() {
        return Ok("The server is running read-write; innops changed nothing more.".into());
    }
    ctx.drop_conn();
    let lines = control.start(ctx.target, &[])?;
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

fn dropin_step(ro: &Ro) -> Step {
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
        let backup = ctx.run_dir.clone().unwrap_or_else(std::env::temp_dir).join("backup");
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

fn start_step(ro: &Ro) -> Step {
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
        let control = ctx.control()?;
        ctx.drop_conn();
        let offset = control.log_offset();
        let lines = control.start(ctx.target, &[])?;
        // The first connection the server accepts ends the downtime.
        let deadline = Instant::now() + control.start_timeout;
        while ctx.target.connect().is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let first = chrono::Utc::now();
        let shutdown_at = journaled(ctx, "stop")
            .and_then(|r| serde_json::from_value::<chrono::DateTime<chrono::Utc>>(r.get("shutdown_at")?.clone()).ok());
        let downtime = shutdown_at.map(|at| (first - at).num_milliseconds() as f64 / 1000.0);
        if let Some(d) = downtime {
            ctx.outcome.push(format!(
                "downtime: {d:.2} s from SHUTDOWN to the first accepted connection {}",
                if want_ro { "in read-only mode" } else { "read-write" }
            ));
        }
        Ok(serde_json::json!({ "log_offset": offset, "first_connection_at": first, "downtime_s": downtime, "log": lines }))
    })
    .post(Check::new("server accepts connections", |ctx| {
        ctx.drop_conn();
        let ok = ctx.conn().is_ok();
        Ok(Verdict::check(ok, if ok { "connected" } else { "refused" }, "connected", "the server did not come back: read its error log"))
    }))
    .post(ro_var_check(want_ro))
    .post(Check::new(
        if undo { "error log: a normal start, no errors" } else { "error log: started in read only mode" },
        move |ctx| {
            let Some(control) = readable_log(ctx) else {
                return Ok(Verdict::pass("not checked: the error log is not readable here", "checked"));
            };
            let (lines, _) = lines_since_action(ctx, control, "start");
            let s = errorlog::summarize(errorlog::latest_process(&lines));
            Ok(if !s.errors.is_empty() {
                Verdict::fail(s.errors.join(" | "), "no [ERROR] lines", "the server logged errors at its start: read them before going on")
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
        step = step.post(Check::new("read_only is 0", |ctx| {
            let tag = ctx.tag();
            let v: Option<u64> = ctx.conn()?.query_first(format!("SELECT {tag} @@GLOBAL.read_only"))?;
            let v = v.unwrap_or(0);
            Ok(Verdict::check(v == 0, format!("read_only={v}"), "0", "read_only is still on: check which option file sets it"))
        }))
        .post(Check::new("redo size as before --min-redo", |ctx| {
            let want = journaled(ctx, "dropin").and_then(|r| {
                let st = r.get("state")?;
                st.get("redo_key")?.as_str()?;
                Some((st.get("redo_key")?.as_str()?.to_string(), st.get("redo_running_before")?.as_u64()?))
            });
            let Some((key, size)) = want else {
                return Ok(Verdict::pass("not changed by innops readonly", "unchanged"));
            };
            // Only the two redo options are ever recorded; anything else in the file is not innops's.
            let key = match key.as_str() {
                "innodb_log_file_size" => "innodb_log_file_size",
                "innodb_redo_log_capacity" => "innodb_redo_log_capacity",
                other => return Ok(Verdict::fail(format!("the record names {other}"), "a redo size option", "innops's record beside the drop-in was edited: check the redo size by hand")),
            };
            let tag = ctx.tag();
            let cur: Option<u64> = ctx.conn()?.query_first(format!("SELECT {tag} @@GLOBAL.{key}"))?;
            let cur = cur.unwrap_or(0);
            Ok(Verdict::check(cur == size, format_size(cur), format_size(size), "the server started with another redo size than it had before --min-redo: check which option file sets it"))
        }));
    } else if sql_ro {
        step = step.post(Check::new("read_only is 1", |ctx| {
            let tag = ctx.tag();
            let v: Option<u64> = ctx
                .conn()?
                .query_first(format!("SELECT {tag} @@GLOBAL.read_only"))?;
            let v = v.unwrap_or(0);
            Ok(Verdict::check(
                v == 1,
                format!("read_only={v}"),
                "1",
                "read_only did not come on: check which option file sets it last",
            ))
        }));
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
    let control = ctx.control()?;
    let path = ro.dropin.clone().map_err(crate::error::refused)?;
    let (lines, _) = lines_since_action(ctx, control, "start");
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
    restore_dropin(ctx, &path)?;
    let sp = state_path(&path);
    let backup = ctx
        .run_dir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join("backup")
        .join(sp.file_name().unwrap_or_default());
    if ro.p.undo {
        if backup.is_file() {
            std::fs::copy(&backup, &sp)?;
        }
    } else {
        let _ = std::fs::remove_file(&sp);
    }
    ctx.drop_conn();
    let started = control.start(ctx.target, &[])?;
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

fn verify_step(ro: &Ro) -> Step {
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
        step = step.post(Check::new("error log says read-only mode", |ctx| {
            let Some(control) = readable_log(ctx) else {
                return Ok(Verdict::pass(
                    "not checked: the error log is not readable here",
                    "checked",
                ));
            };
            let lines = control.log_since(0);
            let ok = errorlog::summarize(errorlog::latest_process(&lines)).read_only;
            Ok(Verdict::check(
                ok,
                if ok {
                    "the running server logged InnoDB: Started in read only mode"
                } else {
                    "no read-only line since its last start"
                },
                "InnoDB: Started in read only mode",
                "the running server did not log a read-only start: read its error log",
            ))
        }));
        if sql_ro {
            step = step.post(Check::new("read_only is 1", |ctx| {
                let tag = ctx.tag();
                let v: Option<u64> = ctx
                    .conn()?
                    .query_first(format!("SELECT {tag} @@GLOBAL.read_only"))?;
                let v = v.unwrap_or(0);
                Ok(Verdict::check(
                    v == 1,
                    format!("read_only={v}"),
                    "1",
                    "read_only is off: check which option file sets it last",
                ))
            }));
        }
    }
    step
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::facts::Version;

    #[test]
    fn min_redo_is_the_smallest_online_size_per_version() {
        let mut maria = ServerFacts::synthetic(Flavor::MariaDB, Version::new(10, 11, 19));
        maria
            .variables
            .insert("innodb_log_buffer_size".into(), (16u64 << 20).to_string());
        assert_eq!(
            min_redo(&maria).unwrap(),
            (16 << 20, "innodb_log_file_size")
        );
        maria
            .variables
            .insert("innodb_log_buffer_size".into(), (2u64 << 20).to_string());
        assert_eq!(min_redo(&maria).unwrap().0, 4 << 20);
        let mysql = ServerFacts::synthetic(Flavor::MySQL, Version::new(8, 0, 36));
        assert_eq!(
            min_redo(&mysql).unwrap(),
            (8 << 20, "innodb_redo_log_capacity")
        );
        for old in [
            ServerFacts::synthetic(Flavor::MariaDB, Version::new(10, 6, 0)),
            ServerFacts::synthetic(Flavor::MySQL, Version::new(5, 7, 44)),
        ] {
            assert!(min_redo(&old).unwrap_err().contains("innops redo --size"));
        }
    }

    #[test]
    fn estimates_say_how_long_in_words() {
        assert_eq!(estimate(0, 0.0), "nothing to do");
        assert_eq!(estimate(10, 0.0), "no progress measured");
        assert_eq!(estimate(10, 100.0), "under a second");
        assert_eq!(estimate(1000, 100.0), "about 10 s");
        assert_eq!(estimate(100_000, 100.0), "about 17 min");
    }

    #[test]
    fn change_buffering_matters_only_before_mariadb_10_9() {
        let n = |f: Flavor, v| change_buffering_note(&ServerFacts::synthetic(f, v));
        assert!(n(Flavor::MariaDB, Version::new(10, 11, 0)).contains("ignores"));
        assert!(n(Flavor::MariaDB, Version::new(11, 4, 0)).contains("gone"));
        assert!(n(Flavor::MariaDB, Version::new(10, 6, 0)).contains("matters"));
        assert!(n(Flavor::MySQL, Version::new(8, 0, 36)).contains("matters"));
    }

    fn ro(p: ReadonlyParams) -> Ro {
        Ro {
            p,
            dropin: Ok(PathBuf::from("/x/99-innops.cnf")),
            option_file: None,
            pid_file: None,
            datadir: None,
            min_redo: Some((16 << 20, "innodb_log_file_size")),
            redo_before: Some(96 << 20),
            version: "10.11.6-MariaDB".into(),
            flags: "--sandbox s".into(),
        }
    }

    fn params(undo: bool) -> ReadonlyParams {
        ReadonlyParams {
            undo,
            min_redo: !undo,
            sql_read_only: true,
            preflush: true,
            preflush_timeout_s: 60,
        }
    }

    #[test]
    fn the_drop_in_settings_go_there_and_back() {
        let fwd = ro(params(false)).settings(None);
        assert_eq!(
            fwd,
            vec![
                ("innodb_read_only".into(), Some("1".into())),
                ("read_only".into(), Some("1".into())),
                (
                    "innodb_log_file_size".into(),
                    Some((16u64 << 20).to_string())
                ),
            ]
        );
        let st = State {
            redo_key: Some("innodb_log_file_size".into()),
            redo_dropin_before: Some("128M".into()),
            redo_running_before: Some(128 << 20),
            sql_read_only: true,
        };
        let back = ro(params(true)).settings(Some(&st));
        assert_eq!(
            back,
            vec![
                ("innodb_read_only".into(), None),
                ("read_only".into(), None),
                ("innodb_log_file_size".into(), Some("128M".into())),
            ]
        );
        // Without a record, undo removes only what read-only mode set.
        assert_eq!(ro(params(true)).settings(None).len(), 2);
        assert_eq!(
            ro(params(false)).rerun(),
            "innops readonly --min-redo --sql-read-only --sandbox s --execute"
        );
    }

    #[test]
    fn the_state_file_is_never_read_as_an_option_file() {
        let p = state_path(Path::new("/etc/mysql/conf.d/99-innops.cnf"));
        assert_eq!(p, PathBuf::from("/etc/mysql/conf.d/innops-readonly.json"));
        assert!(!p.to_string_lossy().ends_with(".cnf"));
    }
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

    #[test]
    fn a_second_forward_run_keeps_the_first_record_and_adds_the_redo_size() {
        let first = State {
            redo_key: None,
            redo_dropin_before: None,
            redo_running_before: None,
            sql_read_only: true,
        };
        let second = State {
            redo_key: Some("innodb_log_file_size".into()),
            redo_dropin_before: None,
            redo_running_before: Some(96 << 20),
            sql_read_only: false,
        };
        let merged = merge_state(Some(first.clone()), second.clone());
        assert_eq!(merged.redo_key.as_deref(), Some("innodb_log_file_size"));
        assert_eq!(merged.redo_running_before, Some(96 << 20));
        assert!(merged.sql_read_only);
        // The first run's redo record (the size from before innops) wins over a later one.
        let third = State {
            redo_running_before: Some(16 << 20),
            ..second.clone()
        };
        assert_eq!(
            merge_state(Some(second.clone()), third.clone()).redo_running_before,
            Some(96 << 20)
        );
        assert_eq!(merge_state(None, third.clone()), third);
    }
}
