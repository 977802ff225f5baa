//! The forward half of `innops readonly`: what only making a server read-only needs. The preflight's
//! measurements (open transactions, purge history, dirty pages, replication role, what stays writable), turning
//! change buffering off, the probe table, the online pre-flush and `--min-redo`, and the checks proving the
//! read-only start. The stop, drop-in and start steps both directions share are in [`super::steps`].

use std::time::{Duration, Instant};

use crate::plan::{Check, Ctx, Risk, Step, Verdict};
use crate::procedures::kit::checks::global_u64;
use crate::procedures::kit::replication::Replication;
use crate::procedures::kit::restart::{interrupted, journaled, readable_log};
use crate::server::errorlog;
use crate::server::facts::{ChangeBuffering, Flavor, RedoResize, ServerFacts};
use crate::sql::Queryable;
use crate::units::{format_count, format_size};

use super::{live_ro, resume_hint, status_u64, Ro, LONG_TRX_S, PROBE_SCHEMA, PROBE_TABLE};

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

/// An open transaction: id, connection, seconds open, rows changed, statement.
type Trx = (String, Option<u64>, u64, u64, Option<String>);

/// The preflight's checks only the forward direction makes.
pub(super) fn preflight_checks(step: Step, sql_ro: bool, flavor: Flavor) -> Step {
    step.pre(open_transactions())
        .pre(purge_history())
        .pre(dirty_pages())
        .pre(replication_role(flavor))
        .pre(what_stays_writable(sql_ro))
}

/// Transactions open now; one open a minute or longer refuses the plan (the shutdown would roll it back).
fn open_transactions() -> Check {
    Check::new("open and long-running transactions", |ctx| {
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
                    q.as_deref()
                        .map(|q| format!(", running `{}`", q.chars().take(60).collect::<String>()))
                        .unwrap_or_default()
                )
            })
            .collect();
        let long: Vec<&Trx> = trx.iter().filter(|t| t.2 >= LONG_TRX_S).collect();
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
    })
}

/// How long the slow shutdown's purge will take, measured over a second.
fn purge_history() -> Check {
    Check::new("purge history (slow shutdown estimate)", |ctx| {
        let h0 = status_u64(ctx, "Innodb_history_list_length")?.unwrap_or(0);
        if h0 == 0 {
            return Ok(Verdict::pass(
                "history list length 0: the slow shutdown has nothing to purge",
                "measured",
            ));
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
                if rate > 0.0 {
                    estimate(h1, rate)
                } else {
                    "an unknown time (purge made no progress: an open read view may hold it)".into()
                }
            ),
            "measured",
        ))
    })
}

/// How long flushing the dirty pages will take at innodb_io_capacity_max.
fn dirty_pages() -> Check {
    Check::new("dirty pages", |ctx| {
        let dirty = status_u64(ctx, "Innodb_buffer_pool_pages_dirty")?.unwrap_or(0);
        let tag = ctx.tag();
        let (page, io): (Option<u64>, Option<u64>) = ctx
            .conn()?
            .query_first(format!(
                "SELECT {tag} @@GLOBAL.innodb_page_size, @@GLOBAL.innodb_io_capacity_max"
            ))?
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
    })
}

/// A replica is frozen (its replication stopped at a recorded position: [`super::replica`]); a primary's replicas
/// are listed with what still reaches them.
fn replication_role(flavor: Flavor) -> Check {
    Check::new("replication role", move |ctx| {
        Ok(role_verdict(&Replication::read(ctx, flavor)?))
    })
}

/// A replica passes, to be frozen; a primary passes, naming its replicas and what still reaches them.
fn role_verdict(r: &Replication) -> Verdict {
    if r.source_connections > 0 {
        Verdict::pass(
            format!("a replica ({} replication connection(s) configured): replication is stopped at a recorded position before the shutdown and stays stopped while read-only; --undo starts it again", r.source_connections),
            "a primary, a replica (frozen), or neither",
        )
    } else if !r.replicas.is_empty() {
        Verdict::pass(
            format!(
                "a primary with {} replica(s): {}; while it is read-only they receive only what stays writable (MyISAM/Aria writes, GRANT, CREATE USER; none with --sql-read-only)",
                r.replicas.len(),
                r.replica_list()
            ),
            "a primary, a replica (frozen), or neither",
        )
    } else {
        Verdict::pass(
            "neither a replica nor a primary with replicas",
            "a primary, a replica (frozen), or neither",
        )
    }
}

/// What innodb_read_only leaves writable (MyISAM/Aria tables, GRANT, CREATE USER), and with --sql-read-only who
/// may still write.
fn what_stays_writable(sql_ro: bool) -> Check {
    Check::new("what stays writable in read-only mode", move |ctx| {
        let tag = ctx.tag();
        let tables: Vec<(String, String, String)> = ctx.conn()?.query(format!(
            "SELECT {tag} TABLE_SCHEMA, TABLE_NAME, ENGINE FROM information_schema.TABLES \
             WHERE ENGINE IN ('MyISAM', 'Aria') AND TABLE_TYPE = 'BASE TABLE' \
             AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') \
             ORDER BY TABLE_SCHEMA, TABLE_NAME"
        ))?;
        let listed: Vec<String> = tables
            .iter()
            .take(10)
            .map(|(s, t, e)| format!("{s}.{t} ({e})"))
            .collect();
        let more = tables.len().saturating_sub(listed.len());
        let mut observed = if tables.is_empty() {
            "no MyISAM/Aria tables outside the system schemas".to_string()
        } else {
            format!(
                "{} MyISAM/Aria table(s): {}{}",
                tables.len(),
                listed.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )
        };
        if sql_ro {
            let bypass: Vec<String> = ctx
                .conn()?
                .query(format!(
                    "SELECT {tag} DISTINCT GRANTEE FROM information_schema.USER_PRIVILEGES \
                 WHERE PRIVILEGE_TYPE IN ('SUPER', 'READ_ONLY ADMIN') ORDER BY GRANTEE"
                ))
                .unwrap_or_default();
            observed.push_str(&format!(
                "; read_only=1 refuses their writes, GRANT and CREATE USER except for {} account(s) with READ_ONLY ADMIN or SUPER{}",
                bypass.len(),
                if bypass.is_empty() { String::new() } else { format!(": {}", bypass.iter().take(10).cloned().collect::<Vec<_>>().join(", ")) }
            ));
        } else {
            observed.push_str("; these tables, GRANT and CREATE USER stay writable (pass --sql-read-only to refuse them too)");
        }
        Ok(Verdict::pass(observed, "listed"))
    })
}

pub(super) fn change_buffering_step(facts: &ServerFacts) -> Step {
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

pub(super) fn probe_sql(tag: &str) -> String {
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

pub(super) fn probe_table_step() -> Step {
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

/// The values the pre-flush changed, to put back (this process's own record while the pre-flush runs).
#[derive(Default)]
struct Memo {
    /// innodb_max_dirty_pages_pct before, and innodb_io_capacity before when the pre-flush raised it.
    preflush: Option<(f64, Option<u64>)>,
}

/// The pre-flush values to put back, from this run's journal.
fn restore_preflush(ctx: &mut Ctx) -> anyhow::Result<String> {
    let rec = match journaled(ctx, "preflush") {
        Some(rec) => match rec.get("old_max_dirty_pages_pct").and_then(|v| v.as_f64()) {
            Some(pct) => Some((pct, rec.get("old_io_capacity").and_then(|v| v.as_u64()))),
            None => return Ok("nothing to restore".into()),
        },
        None => ctx.state::<Memo>().preflush,
    };
    let Some((pct, old_io)) = rec else {
        return Ok("nothing to restore: the pre-flush recorded no old values".into());
    };
    if ctx.target.connect().is_err() {
        return Ok("the server is down: innodb_max_dirty_pages_pct comes from its option files at the next start".into());
    }
    let tag = ctx.tag();
    ctx.conn()?.query_drop(format!(
        "SET {tag} GLOBAL innodb_max_dirty_pages_pct = {pct}"
    ))?;
    match old_io {
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

pub(super) fn preflush_step(ro: &Ro) -> Step {
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
        ctx.state::<Memo>().preflush = Some((old, raise.map(|(io, _)| io)));
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

pub(super) fn min_redo_step(ro: &Ro) -> Step {
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
        let cur = global_u64(ctx, key)?;
        Ok(Verdict::check(
            cur == size,
            format_size(cur),
            format_size(size),
            "the server did not take the smaller redo size: read its error log",
        ))
    }))
}

/// The running server logged a read-only start (its latest process: the start innops made, or a later one).
pub(super) fn logged_read_only_start() -> Check {
    Check::new("error log says read-only mode", |ctx| {
        let Some(control) = readable_log(ctx) else {
            return Ok(crate::procedures::kit::checks::log_not_readable("checked"));
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
    })
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

    #[test]
    fn a_replica_is_frozen_and_a_primary_names_its_replicas_and_what_reaches_them() {
        let replica = Replication {
            source_connections: 1,
            replicas: vec![],
        };
        let v = role_verdict(&replica);
        assert!(
            v.passed && v.observed.contains("stopped at a recorded position"),
            "{v:?}"
        );
        assert!(
            !format!("{v:?}").contains("RESET SLAVE"),
            "the configuration is never thrown away"
        );
        let primary = Replication {
            source_connections: 0,
            replicas: vec![(7, "r1:4000".into())],
        };
        let v = role_verdict(&primary);
        assert!(
            v.passed
                && v.observed.contains("r1:4000 (connection 7)")
                && v.observed.contains("MyISAM/Aria writes"),
            "{v:?}"
        );
        assert!(role_verdict(&Replication::default()).passed);
    }
}
