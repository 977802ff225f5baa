//! The conversion's writes: the write guard on the source, the shadow InnoDB table, the copy (one bulk
//! statement or primary-key chunks that resume where they stopped), the deferred index build, and the atomic
//! swap.
//!
//! The guard is `FLUSH TABLES t WITH READ LOCK` in a session of its own: other sessions keep reading the
//! source, writers wait. At the swap the RENAME is queued behind the guard before the guard lets go; the
//! server grants the RENAME's exclusive lock ahead of the queued writers, so no write reaches the old table
//! after it was verified, and the waiting writes land in the new one.

use std::time::{Duration, Instant};

use crate::sql::Queryable;
use mysql::{Conn, Value};

use crate::error::{refused, Failure};
use crate::plan::guard::{decide, LoadDecision, Threshold};
use crate::plan::Ctx;
use crate::procedures::convert::keys::{after_key, ident_list, key_columns, next_chunk, read_list};
use crate::procedures::convert::schema::TableInfo;
use crate::progress::Progress;
use crate::sql::{qualified, quote_ident};

/// Name of the shadow table a copy fills.
pub fn shadow_name(table: &str) -> String {
    bounded(&format!("_{table}_innops_new"), table, "_innops_new")
}

/// Name the source keeps after the swap.
pub fn old_name(table: &str) -> String {
    bounded(&format!("_{table}_myisam_old"), table, "_myisam_old")
}

/// Identifiers are at most 64 characters: shorten the table part and keep it unique with a hash.
pub(crate) fn bounded(full: &str, table: &str, suffix: &str) -> String {
    if full.chars().count() <= 64 {
        return full.to_string();
    }
    use sha2::Digest;
    let h = sha2::Sha256::digest(table.as_bytes());
    let head: String = table.chars().take(40).collect();
    format!("_{head}_{:02x}{:02x}{:02x}{suffix}", h[0], h[1], h[2])
}

pub(crate) fn guard_key(info: &TableInfo) -> String {
    format!("guard:{}", info.display())
}

pub fn guard_held(ctx: &Ctx, info: &TableInfo) -> bool {
    ctx.held.contains_key(&guard_key(info))
}

/// Block writes to the source (reads go on) until [`release_guard`] or the swap.
/// How long innops waits to lock a table before it gives up and names who holds it: 60 s
/// (`INNOPS_TEST_LOCK_WAIT=N` in tests).
pub fn lock_wait_secs() -> u64 {
    crate::testhooks::lock_wait_secs().unwrap_or(60)
}

/// The refusal for a lock on `info` that could not be had within [`lock_wait_secs`], naming the sessions that
/// may hold it.
pub fn lock_refusal(
    conn: &mut Conn,
    info: &TableInfo,
    what: &str,
    e: &mysql::Error,
) -> anyhow::Error {
    let timed_out = matches!(e, mysql::Error::MySqlError(me) if me.code == 1205);
    refused(if timed_out {
        let who = crate::plan::lock::lock_holder_candidates(conn).unwrap_or_default();
        format!(
            "could not {what} {} within {} s: a long transaction, statement or LOCK TABLES holds it (sessions that may hold it: {who}); nothing was changed, retry when it is done",
            info.display(),
            lock_wait_secs()
        )
    } else {
        format!(
            "could not {what} {} ({}): fix that and run the command again",
            info.display(),
            crate::error::describe_mysql(e)
        )
    })
}

pub fn acquire_guard(ctx: &mut Ctx, info: &TableInfo) -> anyhow::Result<()> {
    let key = guard_key(info);
    if ctx.held.contains_key(&key) {
        return Ok(());
    }
    let tag = ctx.tag();
    let mut conn = ctx.target.connect()?;
    conn.query_drop(format!(
        "SET {tag} SESSION lock_wait_timeout = {}",
        lock_wait_secs()
    ))?;
    if let Err(e) = conn.query_drop(format!(
        "FLUSH {tag} TABLES {} WITH READ LOCK",
        info.qualified()
    )) {
        return Err(lock_refusal(&mut conn, info, "block writes to", &e));
    }
    ctx.held.insert(key, conn);
    ctx.writes_blocked(&info.display());
    Ok(())
}

pub fn release_guard(ctx: &mut Ctx, info: &TableInfo) {
    // A verification holds only while the guard does.
    ctx.state::<super::Memo>().verified.remove(&info.display());
    if let Some(mut conn) = ctx.held.remove(&guard_key(info)) {
        let _ = conn.query_drop("UNLOCK TABLES");
    }
    ctx.writes_released(&info.display());
}

/// Statements of an earlier run of this conversion that the server is still running: the client was killed,
/// and the server finishes a statement before it notices. The caller holds the run's lock on the table, so
/// no live innops run owns them. Each is stopped (`KILL`, which rolls its transaction back) and waited for,
/// so that what the shadow holds afterwards is final. Returns the connection ids stopped.
pub fn reap_orphans(ctx: &mut Ctx, info: &TableInfo) -> anyhow::Result<Vec<u64>> {
    let suffix = format!(":{} */", crate::plan::tag_safe(&info.display()));
    let procedure = format!("/* innops:{}:", crate::plan::tag_safe(ctx.procedure.name()));
    let tag = ctx.tag();
    // This run's own sessions: a statement that just returned (the guard's FLUSH) can still show as running.
    let mut own: Vec<u64> = ctx
        .held
        .values()
        .map(|c| c.connection_id() as u64)
        .collect();
    let conn = ctx.conn()?;
    own.push(conn.connection_id() as u64);
    let find = |conn: &mut Conn| -> anyhow::Result<Vec<u64>> {
        let rows: Vec<(u64, Option<String>)> = conn.query(format!(
            "SELECT {tag} ID, INFO FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query' AND INFO LIKE '%innops:%'"
        ))?;
        Ok(rows
            .into_iter()
            .filter(|(id, info)| {
                !own.contains(id)
                    && info.as_deref().is_some_and(|q| {
                        let head: String = q.chars().take(300).collect();
                        let verb = head.trim_start().to_ascii_uppercase();
                        // Only what writes the shadow: a chunk or bulk INSERT, an index-building ALTER.
                        (verb.starts_with("INSERT") || verb.starts_with("ALTER"))
                            && head.contains(&procedure)
                            && head.contains(&suffix)
                    })
            })
            .map(|(id, _)| id)
            .collect())
    };
    let orphans = find(conn)?;
    for id in &orphans {
        // Gone already is fine: it finished on its own.
        let _ = conn.query_drop(format!("KILL {tag} CONNECTION {id}"));
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while !orphans.is_empty() {
        let left: Vec<u64> = find(conn)?
            .into_iter()
            .filter(|id| orphans.contains(id))
            .collect();
        if left.is_empty() {
            break;
        }
        if Instant::now() > deadline {
            return Err(refused(format!(
                "statements of an interrupted run on {} (connections {}) are still rolling back after 120 s: wait until SHOW PROCESSLIST no longer lists them, then resume",
                info.display(),
                left.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(orphans)
}

/// Create the empty InnoDB shadow: the source's definition, InnoDB, and (deferred path) only the primary key.
pub fn create_shadow(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    deferred: bool,
) -> anyhow::Result<Vec<String>> {
    let shadow = qualified(&info.schema, &shadow_name(&info.name));
    let mut alter = vec!["ENGINE=InnoDB".to_string()];
    alter.extend(info.innodb_fixups().iter().map(|f| f.to_string()));
    if deferred {
        for i in info.deferred_indexes() {
            alter.push(format!("DROP INDEX {}", quote_ident(&i.name)));
        }
    }
    let stmts = vec![
        format!("CREATE TABLE {tag} {shadow} LIKE {}", info.qualified()),
        format!("ALTER TABLE {tag} {shadow} {}", alter.join(", ")),
    ];
    conn.query_drop(&stmts[0])?;
    if let Err(e) = conn.query_drop(&stmts[1]) {
        // The shadow just made is an empty MyISAM table: it goes, so no later step (a resume) can take it for
        // the InnoDB copy.
        let _ = conn.query_drop(format!("DROP {tag} TABLE IF EXISTS {shadow}"));
        return Err(anyhow::Error::new(e).context(format!(
            "InnoDB refused the definition of {} (its empty copy {shadow} was dropped again)",
            info.display()
        )));
    }
    Ok(stmts)
}

/// The stored (not generated) columns of `info`, quoted and comma-separated: what a copy reads and writes.
pub fn column_list(info: &TableInfo) -> String {
    info.stored_columns()
        .iter()
        .map(|c| quote_ident(&c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `sql_mode` every session that copies rows (or a trigger that does) runs in: values go in verbatim.
pub const VERBATIM_SQL_MODE: &str = "'NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION'";

/// Session settings for a copy: values go in verbatim (zero dates, id 0 in an AUTO_INCREMENT column), and
/// TIMESTAMP key boundaries are read and bound in UTC (no daylight-saving change maps two instants to one).
fn copy_session(conn: &mut Conn, tag: &str) -> anyhow::Result<()> {
    conn.query_drop(format!(
        "SET {tag} SESSION sql_mode = {VERBATIM_SQL_MODE}, unique_checks = 0, foreign_key_checks = 0, time_zone = '+00:00'"
    ))?;
    Ok(())
}

/// One `INSERT … SELECT` in one transaction into an empty table with every index: the server's bulk path.
/// Progress comes from the server's own count of rows the statement examined.
pub fn copy_bulk(ctx: &mut Ctx, info: &TableInfo, total: u64) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    let shadow = qualified(&info.schema, &shadow_name(&info.name));
    let cols = column_list(info);
    let force = if info.primary().is_some() {
        " FORCE INDEX (PRIMARY)"
    } else {
        ""
    };
    let sql = format!(
        "INSERT {tag} INTO {shadow} ({cols}) SELECT {cols} FROM {}{force}",
        info.qualified()
    );
    let mut conn = ctx.target.connect()?;
    copy_session(&mut conn, &tag)?;
    let id = conn.connection_id();
    let t0 = Instant::now();
    let label = format!("copy {}", info.display());
    let inserted = watch_progress(ctx.target, id, &label, total, Watch::Inserted, || {
        conn.query_drop("START TRANSACTION")?;
        conn.query_drop(&sql)?;
        let inserted = conn.affected_rows();
        conn.query_drop("COMMIT")?;
        Ok(inserted)
    })?;
    Ok(
        serde_json::json!({ "path": "bulk", "statement": sql, "rows_inserted": inserted, "seconds": t0.elapsed().as_secs_f64() }),
    )
}

/// What the server reports while a long statement runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// Rows an `INSERT … SELECT` wrote. MariaDB 10.11 updates `PROCESSLIST.EXAMINED_ROWS` only when the
    /// statement ends (it read 0 for the whole of a 1M-row bulk copy: the bar froze at 0), but `SHOW GLOBAL
    /// STATUS` sums every session's `Handler_write` as it goes, so the rows written since the statement began
    /// are the growth of that counter (other sessions' writes count too: the figure is clamped to the total).
    Inserted,
    /// Percent done of an ALTER: `PROCESSLIST.PROGRESS` for a copying ALTER, `Innodb_onlineddl_pct_progress`
    /// (hundredths of a percent) for an in-place index build, which leaves `PROGRESS` at 0.
    Percent,
}

// The watcher's polls go straight to the server: `--verbose` shows what a run does, not five polls a second.
fn handler_write(conn: &mut Conn) -> Option<u64> {
    mysql::prelude::Queryable::query_first::<(String, String), _>(
        conn,
        "SHOW /* innops:convert:progress */ GLOBAL STATUS LIKE 'Handler_write'",
    )
    .ok()
    .flatten()
    .and_then(|(_, v)| v.parse().ok())
}

/// Run `body` while a progress bar follows the server's own view of connection `conn_id`'s statement.
pub fn watch_progress<R>(
    target: &crate::server::Target,
    conn_id: u32,
    label: &str,
    total: u64,
    what: Watch,
    body: impl FnOnce() -> anyhow::Result<R>,
) -> anyhow::Result<R> {
    let done = std::sync::atomic::AtomicBool::new(false);
    // The baseline is read before the statement starts, on the watcher's own session.
    let mut watch = target.connect().ok();
    let base = match (what, watch.as_mut()) {
        (Watch::Inserted, Some(w)) => handler_write(w),
        _ => None,
    };
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut bar = match what {
                Watch::Inserted => Progress::new(label, total),
                Watch::Percent => Progress::percent(label),
            };
            let Some(mut watch) = watch else { return };
            let sql = "SELECT /* innops:convert:progress */ ROUND(EXAMINED_ROWS), ROUND(PROGRESS) FROM information_schema.PROCESSLIST WHERE ID = ?";
            // Ask the server every 200 ms, but notice the end within 20 ms: on small tables a long sleep here
            // was a measurable share of the whole conversion.
            let mut tick = 0u32;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                if tick.is_multiple_of(10) {
                    let row: Option<(Option<u64>, Option<u64>)> =
                        mysql::prelude::Queryable::exec_first(&mut watch, sql, (conn_id,))
                            .ok()
                            .flatten();
                    let (examined, pct) = row.unwrap_or((None, None));
                    match what {
                        Watch::Inserted => {
                            let written = match (base, handler_write(&mut watch)) {
                                (Some(b), Some(n)) => n.saturating_sub(b),
                                _ => 0,
                            };
                            let n = written.max(examined.unwrap_or(0)).min(total);
                            bar.set(n);
                            if n == total && total > 0 {
                                // The statement goes on after its last row: the secondary indexes, the commit.
                                bar.phase("every row written; building indexes and committing");
                            }
                        }
                        Watch::Percent => {
                            let online: Option<(String, String)> = mysql::prelude::Queryable::query_first(
                                &mut watch,
                                "SHOW /* innops:convert:progress */ GLOBAL STATUS LIKE 'Innodb_onlineddl_pct_progress'",
                            )
                                .ok()
                                .flatten();
                            let online = online
                                .and_then(|(_, v)| v.parse::<u64>().ok())
                                .unwrap_or(0)
                                / 100;
                            bar.set(pct.unwrap_or(0).max(online).min(100));
                        }
                    }
                }
                tick = tick.wrapping_add(1);
                std::thread::sleep(Duration::from_millis(20));
            }
            bar.finish();
        });
        let r = body();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = watcher.join();
        r
    })
}

/// Settings of a chunked copy.
#[derive(Debug, Clone)]
pub struct ChunkSettings {
    pub target_chunk: Duration,
    pub max_load: Threshold,
    pub critical_load: Threshold,
    /// The replicas whose lag pauses the copy (a run on a primary), and the lag thresholds.
    pub replicas: Vec<crate::procedures::kit::replicas::Link>,
    pub watch: crate::procedures::kit::replicas::Watch,
}

/// The status variables the load guard watches, less what `own` sessions of innops's workload beside the plan
/// add to them ([`crate::plan::guard::discount`]). Their names were validated as plain identifiers.
pub fn load_snapshot(
    conn: &mut Conn,
    settings: &ChunkSettings,
    own: u64,
) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
    let mut snap = std::collections::BTreeMap::new();
    for v in [
        &settings.max_load.variable,
        &settings.critical_load.variable,
    ] {
        if !snap.contains_key(v) {
            let row: Option<(String, String)> = conn.query_first(format!(
                "SHOW /* innops:convert:load */ GLOBAL STATUS LIKE '{v}'"
            ))?;
            if let Some((_, value)) = row {
                snap.insert(v.clone(), value);
            }
        }
    }
    crate::plan::guard::discount(&mut snap, own);
    Ok(snap)
}

/// The longest a copy waits for the load to drop before it gives up.
pub const MAX_PAUSE: Duration = Duration::from_secs(3600);

/// A pause for load: says why every 10 s on stderr, and ends the wait after [`MAX_PAUSE`].
pub(crate) struct Pause {
    since: Option<Instant>,
    said: Option<Instant>,
}

impl Pause {
    pub(crate) fn new() -> Pause {
        Pause {
            since: None,
            said: None,
        }
    }

    /// One more pause of 500 ms for `why`; an error once the wait is over its bound.
    pub(crate) fn wait(&mut self, why: &str) -> anyhow::Result<()> {
        let since = *self.since.get_or_insert_with(|| {
            crate::testhooks::hold("load-paused");
            Instant::now()
        });
        if since.elapsed() > MAX_PAUSE {
            return Err(refused(format!(
                "the load stayed high for {} minutes ({why}): run again when the server is calmer, or raise --max-load",
                MAX_PAUSE.as_secs() / 60
            )));
        }
        if self
            .said
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(10))
        {
            crate::progress::print_line(&format!(
                "innops: paused for {} s: {why} (Ctrl-C stops at a safe point)",
                since.elapsed().as_secs()
            ));
            self.said = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(500));
        Ok(())
    }

    pub(crate) fn reset(&mut self) {
        self.since = None;
        self.said = None;
    }
}

/// Wait while the server is above `--max-load`; refuse above `--critical-load` (and stop on Ctrl-C).
pub fn wait_for_load(ctx: &Ctx, settings: &ChunkSettings) -> anyhow::Result<()> {
    let mut status = ctx.target.connect()?;
    let mut pause = Pause::new();
    loop {
        match decide(
            &load_snapshot(&mut status, settings, ctx.own_sessions)?,
            &settings.max_load,
            &settings.critical_load,
        ) {
            LoadDecision::Go => return Ok(()),
            LoadDecision::Abort(why) => return Err(refused(why)),
            LoadDecision::Pause(why) => {
                if ctx.aborted() {
                    return Err(Failure::Interrupted(format!(
                        "interrupted while waiting for the load to drop ({why}): nothing was locked or created; continue with `innops resume {}`",
                        ctx.run_dir.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
                    ))
                    .into());
                }
                pause.wait(&why)?;
            }
        }
    }
}

/// Copy in primary-key chunks into the PK-only shadow, continuing after the highest key already copied.
pub fn copy_chunked(
    ctx: &mut Ctx,
    info: &TableInfo,
    total: u64,
    settings: &ChunkSettings,
) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    let run = ctx
        .run_dir
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let shadow_t = shadow_name(&info.name);
    let shadow = qualified(&info.schema, &shadow_t);
    let cols = column_list(info);
    let pk = info.pk_columns();
    let pk_list = ident_list(&pk);
    let mut conn = ctx.target.connect()?;
    copy_session(&mut conn, &tag)?;
    let mut status = ctx.target.connect()?;
    let mut replicas = replica_sessions(&mut conn, &tag, settings)?;
    let mut paused_for_lag = 0.0f64;
    let key = key_columns(&mut conn, &tag, info)?;
    // A prepared statement: the binary protocol returns the key typed.
    let last_sql = last_copied_sql(&tag, &read_list(&key), &shadow, &pk);
    let mut last: Option<Vec<Value>> = conn
        .exec_first::<mysql::Row, _, _>(&last_sql, ())?
        .map(|r| r.unwrap());
    let fixed_chunk = crate::testhooks::chunk_rows();
    let mut chunk: u64 = fixed_chunk.unwrap_or(1000);
    let already = crate::procedures::convert::verify::count_rows(
        &mut conn,
        &tag,
        &info.schema,
        &shadow_t,
        true,
    )?;
    let insert = format!(
        "INSERT {tag} INTO {shadow} ({cols}) SELECT {cols} FROM {} FORCE INDEX (PRIMARY)",
        info.qualified()
    );
    let mut copied = already;
    let mut chunks = 0u64;
    let mut paused = 0.0f64;
    let mut bar = Progress::new(&format!("copy {}", info.display()), total);
    bar.resume_at(copied);
    let t0 = Instant::now();
    let mut pause = Pause::new();
    loop {
        if ctx.aborted() {
            bar.finish();
            return Err(Failure::Interrupted(format!(
                "interrupted after copying {copied} of about {total} rows of {}: continue with `innops resume {run}`",
                info.display()
            ))
            .into());
        }
        let (decision, for_lag) =
            next_decision(&mut status, settings, ctx.own_sessions, &mut replicas)?;
        match decision {
            LoadDecision::Go => pause.reset(),
            LoadDecision::Pause(why) => {
                bar.suspend(|| pause.wait(&why))?;
                paused += 0.5;
                if for_lag {
                    paused_for_lag += 0.5;
                }
                continue;
            }
            LoadDecision::Abort(why) => {
                bar.finish();
                return Err(refused(format!(
                    "{why} ({copied} rows copied so far are kept: `innops resume {run}` continues)"
                )));
            }
        }
        let started = Instant::now();
        // The rows after the highest key copied so far (from the start for the first chunk).
        let n = match &last {
            None => {
                conn.query_drop(format!("{insert} ORDER BY {pk_list} LIMIT {chunk}"))?;
                conn.affected_rows()
            }
            Some(last) => {
                let (pred, params) = after_key(&key, last)?;
                conn.exec_drop(
                    format!("{insert} WHERE {pred} ORDER BY {pk_list} LIMIT {chunk}"),
                    params,
                )?;
                conn.affected_rows()
            }
        };
        if n == 0 {
            break;
        }
        copied += n;
        chunks += 1;
        bar.set(copied.min(total.max(copied)));
        last = conn
            .exec_first::<mysql::Row, _, _>(&last_sql, ())?
            .map(|r| r.unwrap());
        crate::testhooks::after_chunk(chunks);
        if n < chunk {
            // A short chunk was the last one.
            break;
        }
        chunk = fixed_chunk
            .unwrap_or_else(|| next_chunk(chunk, started.elapsed(), settings.target_chunk));
    }
    bar.finish();
    Ok(serde_json::json!({
        "path": "deferred",
        "rows_copied": copied - already,
        "rows_before_resume": already,
        "chunks": chunks,
        "paused_seconds": paused,
        "paused_for_replica_lag_seconds": paused_for_lag,
        "replicas_watched": settings.replicas.iter().map(|l| l.label.clone()).collect::<Vec<_>>(),
        "seconds": t0.elapsed().as_secs_f64(),
    }))
}

/// The statement that reads the highest key the shadow holds (where a resumed copy goes on).
fn last_copied_sql(tag: &str, reads: &str, shadow: &str, pk: &[String]) -> String {
    let pk_desc = pk
        .iter()
        .map(|c| format!("{} DESC", quote_ident(c)))
        .collect::<Vec<_>>()
        .join(", ");
    format!("SELECT {tag} {reads} FROM {shadow} ORDER BY {pk_desc} LIMIT 1")
}

/// Sessions to the replicas a copy watches (none without replicas).
pub(crate) fn replica_sessions(
    conn: &mut Conn,
    tag: &str,
    settings: &ChunkSettings,
) -> anyhow::Result<crate::procedures::kit::replicas::Sessions> {
    let mariadb = settings.replicas.is_empty()
        || conn
            .query_first::<String, _>(format!("SELECT {tag} VERSION()"))?
            .is_some_and(|v| v.contains("MariaDB"));
    crate::procedures::kit::replicas::Sessions::open(&settings.replicas, mariadb)
}

/// Go, pause or stop before the next chunk: the load guard first, then (when it lets the copy go) the replicas'
/// lag; and whether the decision is the replicas'.
pub(crate) fn next_decision(
    status: &mut Conn,
    settings: &ChunkSettings,
    own_sessions: u64,
    replicas: &mut crate::procedures::kit::replicas::Sessions,
) -> anyhow::Result<(LoadDecision, bool)> {
    let snap = load_snapshot(status, settings, own_sessions)?;
    let decision = decide(&snap, &settings.max_load, &settings.critical_load);
    if decision != LoadDecision::Go || replicas.conns.is_empty() {
        return Ok((decision, false));
    }
    Ok((
        crate::procedures::kit::replicas::decide(&replicas.lags()?, &settings.watch),
        true,
    ))
}

/// No primary key: one statement, no chunks (and no resuming mid-copy).
pub fn copy_whole(ctx: &mut Ctx, info: &TableInfo) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    let shadow = qualified(&info.schema, &shadow_name(&info.name));
    let cols = column_list(info);
    let mut conn = ctx.target.connect()?;
    copy_session(&mut conn, &tag)?;
    let t0 = Instant::now();
    conn.query_drop("START TRANSACTION")?;
    conn.query_drop(format!("DELETE {tag} FROM {shadow}"))?;
    conn.query_drop(format!(
        "INSERT {tag} INTO {shadow} ({cols}) SELECT {cols} FROM {}",
        info.qualified()
    ))?;
    let inserted = conn.affected_rows();
    conn.query_drop("COMMIT")?;
    Ok(
        serde_json::json!({ "path": "whole", "rows_inserted": inserted, "seconds": t0.elapsed().as_secs_f64() }),
    )
}

/// The deferred index build: every B-tree index in one ALTER, then each FULLTEXT index in its own (InnoDB
/// builds one FULLTEXT index per statement).
pub fn index_statements(info: &TableInfo) -> Vec<String> {
    let shadow = qualified(&info.schema, &shadow_name(&info.name));
    let btree: Vec<String> = info
        .deferred_indexes()
        .filter(|i| !i.is_fulltext())
        .map(|i| i.add_clause())
        .collect();
    let mut out = Vec::new();
    if !btree.is_empty() {
        out.push(format!("ALTER TABLE {shadow} {}", btree.join(", ")));
    }
    for ft in info.deferred_indexes().filter(|i| i.is_fulltext()) {
        out.push(format!("ALTER TABLE {shadow} {}", ft.add_clause()));
    }
    out
}

/// [`index_statements`] with `IF NOT EXISTS` on every index (MariaDB), so that the same statement is a no-op on a
/// server that has the index already; None when a clause does not take it (then no server may build ahead).
pub fn index_statements_if_not_exists(info: &TableInfo) -> Option<Vec<String>> {
    let shadow = qualified(&info.schema, &shadow_name(&info.name));
    let btree: Option<Vec<String>> = info
        .deferred_indexes()
        .filter(|i| !i.is_fulltext())
        .map(|i| if_not_exists(&i.add_clause()))
        .collect();
    let btree = btree?;
    let mut out = Vec::new();
    if !btree.is_empty() {
        out.push(format!("ALTER TABLE {shadow} {}", btree.join(", ")));
    }
    for ft in info.deferred_indexes().filter(|i| i.is_fulltext()) {
        out.push(format!(
            "ALTER TABLE {shadow} {}",
            if_not_exists(&ft.add_clause())?
        ));
    }
    Some(out)
}

/// `ADD [UNIQUE|FULLTEXT|SPATIAL] KEY|INDEX `name` …` with `IF NOT EXISTS` before the name.
fn if_not_exists(clause: &str) -> Option<String> {
    let rest = clause.strip_prefix("ADD ")?;
    for kind in [
        "UNIQUE KEY",
        "UNIQUE INDEX",
        "FULLTEXT KEY",
        "FULLTEXT INDEX",
        "SPATIAL KEY",
        "SPATIAL INDEX",
        "KEY",
        "INDEX",
    ] {
        if let Some(name) = rest.strip_prefix(kind).and_then(|r| r.strip_prefix(' ')) {
            if name.starts_with('`') {
                return Some(format!("ADD {kind} IF NOT EXISTS {name}"));
            }
        }
    }
    None
}

/// A RENAME that could not have its locks within its wait: nothing was renamed.
#[derive(Debug)]
pub struct RenameTimedOut(pub String);

impl std::fmt::Display for RenameTimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RenameTimedOut {}

/// RENAME source → `keep_as`, `bring_in` → source, queued behind the guard before the guard lets go. The RENAME
/// waits at most `wait_s` for its locks (a statement still reading the source holds them); past that it fails
/// with [`RenameTimedOut`] and nothing is renamed.
pub fn swap(
    ctx: &mut Ctx,
    info: &TableInfo,
    keep_as: &str,
    bring_in: &str,
    wait_s: u64,
) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    let src = info.qualified();
    let old = qualified(&info.schema, keep_as);
    let shadow = qualified(&info.schema, bring_in);
    let sql = format!("RENAME {tag} TABLE {src} TO {old}, {shadow} TO {src}");
    let mut conn = ctx.target.connect()?;
    conn.query_drop(format!(
        "SET {tag} SESSION lock_wait_timeout = {}",
        wait_s.max(1)
    ))?;
    let id = conn.connection_id();
    // Test hook: a test can queue a write behind the guard here without depending on timing.
    crate::testhooks::hold("before-swap");
    let key = guard_key(info);
    let guard = ctx.held.remove(&key);
    let mut watch = ctx.target.connect()?;
    let t0 = Instant::now();
    let result = std::thread::scope(|s| {
        let renamer = s.spawn(|| conn.query_drop(&sql));
        // Let the guard go only once the RENAME waits for it: then the RENAME goes first.
        let mut queued = false;
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && !renamer.is_finished() {
            let state: Option<Option<String>> = watch
                .exec_first("SELECT /* innops:convert:swap */ STATE FROM information_schema.PROCESSLIST WHERE ID = ?", (id,))
                .ok()
                .flatten();
            if matches!(state, Some(Some(ref st)) if st.contains("metadata lock")) {
                queued = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(mut g) = guard {
            let _ = g.query_drop("UNLOCK TABLES");
        }
        let r = renamer.join().expect("rename thread");
        (queued, r)
    });
    let (queued, r) = result;
    // The RENAME went first and writes that queued behind the guard now reach the new table.
    ctx.writes_released(&info.display());
    r.map_err(|e| {
        if matches!(&e, mysql::Error::MySqlError(me) if me.code == 1205) {
            return anyhow::Error::new(RenameTimedOut(format!(
                "the swap `{sql}` could not have its locks within {wait_s} s (a statement still using {} holds them): {} is unchanged",
                info.display(),
                info.display()
            )));
        }
        anyhow::anyhow!(
            "the swap `{sql}` failed ({}): {} is unchanged",
            crate::error::describe_mysql(&e),
            info.display()
        )
    })?;
    Ok(
        serde_json::json!({ "statement": sql, "queued_behind_guard": queued, "seconds": t0.elapsed().as_secs_f64() }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedures::convert::keys::*;

    #[test]
    fn every_index_clause_takes_if_not_exists_or_none_does() {
        assert_eq!(
            if_not_exists("ADD UNIQUE KEY `u` (`a`,`b`)").as_deref(),
            Some("ADD UNIQUE KEY IF NOT EXISTS `u` (`a`,`b`)")
        );
        assert_eq!(
            if_not_exists("ADD KEY `k` (`k`)").as_deref(),
            Some("ADD KEY IF NOT EXISTS `k` (`k`)")
        );
        assert_eq!(
            if_not_exists("ADD FULLTEXT INDEX `f` (`t`)").as_deref(),
            Some("ADD FULLTEXT INDEX IF NOT EXISTS `f` (`t`)")
        );
        assert_eq!(if_not_exists("ADD CONSTRAINT `c` CHECK (a > 0)"), None);
        assert_eq!(
            if_not_exists("ADD KEY (`k`)"),
            None,
            "an index without a name is not matched"
        );
    }

    #[test]
    fn names_stay_within_64_characters_and_distinct() {
        assert_eq!(shadow_name("t"), "_t_innops_new");
        assert_eq!(old_name("t"), "_t_myisam_old");
        let long = "x".repeat(64);
        let other = format!("{}y", "x".repeat(63));
        assert!(shadow_name(&long).chars().count() <= 64);
        assert!(old_name(&long).chars().count() <= 64);
        assert_ne!(old_name(&long), old_name(&other));
    }

    fn kc(name: &str, kind: KeyKind) -> KeyColumn {
        KeyColumn {
            name: name.into(),
            kind,
        }
    }

    #[test]
    fn keyset_predicate_for_composite_keys() {
        let key = [kc("a", KeyKind::Typed), kc("b", KeyKind::Typed)];
        let (p, params) = after_key(&key, &[Value::Int(1), Value::Int(7)]).unwrap();
        assert_eq!(p, "(`a` > ?) OR (`a` = ? AND `b` > ?)");
        assert_eq!(params, vec![Value::Int(1), Value::Int(1), Value::Int(7)]);
        assert!(after_key(&key, &[Value::Int(1)]).is_err());
    }

    #[test]
    fn every_key_type_is_compared_in_its_own_type() {
        let k = |dt: &str, ct: &str, cs: Option<&str>, co: Option<&str>| key_kind(dt, ct, cs, co);
        for t in [
            "tinyint",
            "int",
            "bigint",
            "float",
            "double",
            "date",
            "datetime",
            "timestamp",
            "time",
            "year",
            "uuid",
            "inet6",
            "inet4",
        ] {
            assert_eq!(k(t, t, None, None), KeyKind::Typed, "{t}");
        }
        assert_eq!(k("bit", "bit(16)", None, None), KeyKind::Bit);
        assert_eq!(k("set", "set('a','b')", None, None), KeyKind::Set);
        assert_eq!(
            k("decimal", "decimal(40,10) unsigned", None, None),
            KeyKind::Decimal {
                cast: "DECIMAL(40,10)".into()
            }
        );
        assert_eq!(
            k(
                "varchar",
                "varchar(20)",
                Some("utf8mb4"),
                Some("utf8mb4_unicode_ci")
            ),
            KeyKind::Text {
                charset: "utf8mb4".into(),
                collation: "utf8mb4_unicode_ci".into()
            }
        );
        assert_eq!(k("varbinary", "varbinary(20)", None, None), KeyKind::Binary);
        assert_eq!(
            k("blob", "blob", Some("binary"), Some("binary")),
            KeyKind::Binary
        );
        assert_eq!(enum_members(r"enum('a\\','b''c','d,e','x\\''y')"), 4);
        assert_eq!(enum_members("enum('')"), 1);

        let key = [
            kc("e", KeyKind::Enum { members: 4 }),
            kc("b", KeyKind::Bit),
            kc(
                "d",
                KeyKind::Decimal {
                    cast: "DECIMAL(40,10)".into(),
                },
            ),
            kc(
                "c",
                KeyKind::Text {
                    charset: "latin1".into(),
                    collation: "latin1_german2_ci".into(),
                },
            ),
            kc("v", KeyKind::Binary),
        ];
        let reads: Vec<String> = key.iter().map(KeyColumn::read_expr).collect();
        assert_eq!(reads, ["`e` + 0", "`b` + 0", "`d`", "HEX(`c`)", "HEX(`v`)"]);
        let last = [
            Value::UInt(2),
            Value::UInt(5),
            Value::Bytes(b"1.5000000000".to_vec()),
            Value::Bytes(b"C4".to_vec()),
            Value::Bytes(b"00FF".to_vec()),
        ];
        let (p, params) = after_key(&key, &last).unwrap();
        let c = "CONVERT(UNHEX(?) USING latin1) COLLATE latin1_german2_ci";
        assert_eq!(
            p,
            format!(
                "(`e` IN (3, 4)) \
                 OR (`e` = ? AND `b` > ?) \
                 OR (`e` = ? AND `b` = ? AND `d` > CAST(? AS DECIMAL(40,10))) \
                 OR (`e` = ? AND `b` = ? AND `d` = CAST(? AS DECIMAL(40,10)) AND `c` > {c}) \
                 OR (`e` = ? AND `b` = ? AND `d` = CAST(? AS DECIMAL(40,10)) AND `c` = {c} AND `v` > UNHEX(?))"
            )
        );
        assert_eq!(params.len(), 2 + 3 + 4 + 5);
        assert_eq!(
            params[..3],
            [Value::UInt(2), Value::UInt(5), Value::UInt(2)]
        );
        // The last member: nothing comes after it.
        let (p, _) = after_key(&key[..1], &[Value::UInt(4)]).unwrap();
        assert_eq!(p, "(FALSE)");
    }

    #[test]
    fn chunks_adapt_toward_the_target_time_within_bounds() {
        let target = Duration::from_millis(500);
        assert_eq!(next_chunk(1000, Duration::from_millis(100), target), 2000);
        assert_eq!(next_chunk(1000, Duration::from_millis(1000), target), 500);
        assert_eq!(next_chunk(1000, Duration::from_millis(400), target), 1250);
        assert_eq!(next_chunk(150, Duration::from_secs(10), target), 100);
    }
}
