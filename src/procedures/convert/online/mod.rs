//! The online path: writes to the table go on during the whole conversion; only each chunk's short lock and the
//! cut-over hold them, each for a bounded time.
//!
//! 1. **capture**: the shadow (primary key only, unless the table has a FULLTEXT or SPATIAL index, which InnoDB
//!    cannot add online), the change log and three triggers on the source ([`capture`]).
//! 2. **copy**: the source walked in primary-key chunks, each copied and verified under one short lock
//!    ([`walk`]).
//! 3. **indexes**: the secondary indexes built by `ALTER … ALGORITHM=INPLACE, LOCK=NONE` while the triggers
//!    log the changed keys only ([`capture::hold`]); on a primary with replicas, on each replica at once.
//! 4. **verify**: the definitions compared, and every key changed since the walk compared again
//!    ([`catchup`]), until little is left.
//! 5. **swap**: the guard (bounded, backed off and retried), the last changed keys compared under it, the
//!    counter set, the RENAME queued behind the guard; then the triggers and the log go ([`cutover`]).

pub mod capture;
pub mod catchup;
mod cutover;
pub mod rows;
pub mod triggers;
pub mod walk;

use super::*;
use rows::LockBound;

pub use cutover::cutover_step;

/// The online path's own settings.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct OnlineSettings {
    /// `--online-above`: auto takes the online path for a table larger than this (data and indexes, bytes).
    pub above_bytes: u64,
    /// `--cutover-lock-wait`: seconds one attempt at a lock waits (the cut-over's guard, a chunk's lock, a
    /// trigger's creation), so writers are never held longer.
    pub lock_wait_s: u64,
    /// Attempts at such a lock before the run gives up.
    pub lock_tries: u32,
}

impl Default for OnlineSettings {
    fn default() -> Self {
        OnlineSettings {
            above_bytes: 1 << 30,
            lock_wait_s: 1,
            lock_tries: 30,
        }
    }
}

impl OnlineSettings {
    pub fn bound(&self) -> LockBound {
        LockBound {
            wait_s: self.lock_wait_s,
            tries: self.lock_tries,
        }
    }
}

/// Whether the shadow starts with the primary key only (the secondary indexes built online afterwards): not
/// for a table with a FULLTEXT or SPATIAL index, which InnoDB adds only with writes blocked, nor one with an
/// index over a generated column or a UNIQUE hash key (InnoDB adds such an index in place only alone, not beside
/// others).
pub fn deferred(info: &TableInfo) -> bool {
    let generated = |c: &str| info.columns.iter().any(|x| x.name == c && x.generated);
    // A UNIQUE hash key is a hidden generated column too, where InnoDB cannot make a B-tree of it.
    info.definition.hash_keys().is_empty()
        && !info.secondary().any(|i| {
            i.is_fulltext()
                || i.kind.eq_ignore_ascii_case("SPATIAL")
                || i.parts.iter().any(|p| generated(&p.column))
        })
}

/// Which of the capture's objects exist now.
#[derive(Debug, Default)]
pub struct Capture {
    pub shadow: Option<String>,
    pub log: bool,
    /// The capture triggers found on the source.
    pub triggers: Vec<String>,
}

impl Capture {
    pub fn complete(&self) -> bool {
        self.shadow
            .as_deref()
            .is_some_and(|e| e.eq_ignore_ascii_case("InnoDB"))
            && self.log
            && self.triggers.len() == 3
    }

    pub fn any(&self) -> bool {
        self.shadow.is_some() || self.log || !self.triggers.is_empty()
    }

    pub fn describe(&self) -> String {
        format!(
            "shadow {}, change log {}, {} of 3 triggers on the source",
            self.shadow.as_deref().unwrap_or("missing"),
            if self.log { "present" } else { "missing" },
            self.triggers.len()
        )
    }
}

/// The capture's objects as they are now; triggers are looked for on `on` (the source, or after the swap the
/// kept table).
pub fn capture_now(ctx: &mut Ctx, t: &TableInfo, on: &str) -> anyhow::Result<Capture> {
    let tag = ctx.tag();
    let names = capture::trigger_names(&t.name);
    let found: Vec<String> = ctx.conn()?.exec(
        format!("SELECT {tag} TRIGGER_NAME FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? AND TRIGGER_NAME IN (?, ?, ?)"),
        (&t.schema, on, &names[0], &names[1], &names[2]),
    )?;
    Ok(Capture {
        shadow: engine_of(ctx, &t.schema, &shadow_name(&t.name))?,
        log: engine_of(ctx, &t.schema, &capture::log_name(&t.name))?.is_some(),
        triggers: found,
    })
}

/// Drop the capture's triggers, its change log and (with `shadow`) the shadow: only what innops's record says
/// this server's run made. What was dropped.
pub fn remove_capture(ctx: &mut Ctx, t: &TableInfo, shadow: bool) -> anyhow::Result<Vec<String>> {
    let tag = ctx.tag();
    let this = own::this_server(ctx.conn()?, &tag)?;
    let mut dropped = Vec::new();
    let mine = |r: &Option<own::Record>, kind: &str| {
        r.as_ref()
            .is_some_and(|r| r.kind == kind && r.of_table == t.name && !r.from_elsewhere(this))
    };
    for name in capture::trigger_names(&t.name) {
        let r = own::lookup(ctx.conn()?, &tag, &t.schema, &name)?;
        if mine(&r, capture::TRIGGER) {
            ctx.conn()?.query_drop(format!(
                "DROP {tag} TRIGGER IF EXISTS {}",
                qualified(&t.schema, &name)
            ))?;
            own::forget(ctx.conn()?, &tag, &t.schema, &name)?;
            dropped.push(name);
        }
    }
    let mut tables = vec![(capture::log_name(&t.name), capture::CHANGES)];
    if shadow {
        tables.push((shadow_name(&t.name), own::SHADOW));
    }
    for (name, kind) in tables {
        let r = own::lookup(ctx.conn()?, &tag, &t.schema, &name)?;
        if mine(&r, kind) {
            ctx.conn()?.query_drop(format!(
                "DROP {tag} TABLE IF EXISTS {}",
                qualified(&t.schema, &name)
            ))?;
            own::forget(ctx.conn()?, &tag, &t.schema, &name)?;
            dropped.push(name);
        }
    }
    Ok(dropped)
}

/// A refusal after the capture began: innops's triggers, log and shadow go first (the application stops paying
/// for them), then the refusal, saying so.
pub fn refuse_and_remove(ctx: &mut Ctx, t: &TableInfo, e: anyhow::Error) -> anyhow::Error {
    if !matches!(
        e.downcast_ref::<crate::error::Failure>(),
        Some(crate::error::Failure::Refused(_))
    ) {
        return e;
    }
    copy::release_guard(ctx, t);
    let _ = ctx.conn().map(|c| c.query_drop("UNLOCK TABLES"));
    match remove_capture(ctx, t, true) {
        Ok(d) if !d.is_empty() => crate::error::refused(format!(
            "{e} (innops removed its triggers, change log and copy: {})",
            d.join(", ")
        )),
        _ => e,
    }
}

fn record(ctx: &mut Ctx, t: &TableInfo, kind: &str, name: &str) -> anyhow::Result<()> {
    record_with(ctx, t, kind, name, None)
}

/// Record `name` as innops's own (of kind `kind`, belonging to `t`), with what was verified of it.
pub fn record_with(
    ctx: &mut Ctx,
    t: &TableInfo,
    kind: &str,
    name: &str,
    fingerprint: Option<verify::Fingerprint>,
) -> anyhow::Result<()> {
    let tag = ctx.tag();
    let run_dir = ctx
        .run_dir
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    own::record(
        ctx.conn()?,
        &tag,
        &own::Record {
            kind: kind.into(),
            schema: t.schema.clone(),
            name: name.into(),
            of_table: t.name.clone(),
            fingerprint,
            run_dir,
            origin: 0,
        },
    )
}

/// The pre-check every step after the capture makes: the triggers still keep the copy up to date.
fn capture_live(t: &TableInfo, flags: &str) -> Check {
    let t = t.clone();
    let flags = flags.to_string();
    Check::after_prior("triggers keep the copy up to date", move |ctx| {
        if swapped(ctx, &t)? {
            return Ok(Verdict::done("already swapped", "the capture in place"));
        }
        let c = capture_now(ctx, &t, &t.name)?;
        Ok(Verdict::check(
            c.complete(),
            c.describe(),
            "shadow InnoDB, change log present, 3 of 3 triggers on the source",
            format!("the triggers that keep innops's copy of {} up to date are not all in place, so changes since may be missing from it: `{}` removes innops's objects and converts again", t.display(), restart_command(&flags, &t)),
        ))
    })
}

/// Step 1: the shadow, the change log and the triggers.
pub fn capture_step(info: &TableInfo, p: &ConvertParams) -> Step {
    let shadow_t = shadow_name(&info.name);
    let deferred = deferred(info);
    let mut step = Step::new(
        step_id("capture", info),
        format!(
            "Capture every change to {} from now on: a {}InnoDB copy, a change log and three triggers",
            info.display(),
            if deferred { "primary-key-only " } else { "" }
        ),
        Risk::Online,
    )
    .preview(format!(
        "CREATE TABLE {} LIKE {}; ALTER TABLE … ENGINE=InnoDB{}",
        qualified(&info.schema, &shadow_t),
        info.qualified(),
        if deferred { ", DROP INDEX … (secondary indexes come after the copy)" } else { "" }
    ))
    .preview(capture::log_create_sql("", info).replacen("  ", " ", 1));
    for (_, sql) in capture::trigger_sql("", info, &shadow_t) {
        step = step.preview(format!(
            "{}   -- waits at most {} s for running statements, retried",
            sql.replacen("  ", " ", 1),
            p.online.lock_wait_s
        ));
    }
    let (t, t2, t3) = (info.clone(), info.clone(), info.clone());
    let bound = p.online.bound();
    step.pre(Check::new("not converted yet", move |ctx| {
        Ok(if swapped(ctx, &t)? {
            Verdict::done("already swapped", "MyISAM")
        } else if capture_now(ctx, &t, &t.name)?.complete() {
            Verdict::done("the capture is in place", "no capture yet")
        } else {
            Verdict::pass("MyISAM", "MyISAM")
        })
    }))
    .act(move |ctx| capture_act(ctx, &t2, bound, deferred))
    .post(Check::new("capture in place", move |ctx| {
        let c = capture_now(ctx, &t3, &t3.name)?;
        Ok(Verdict::check(
            c.complete(),
            c.describe(),
            "shadow InnoDB, change log present, 3 of 3 triggers on the source",
            "the capture is incomplete: read the journal, then resume",
        ))
    }))
}

fn capture_act(
    ctx: &mut Ctx,
    t: &TableInfo,
    bound: LockBound,
    deferred: bool,
) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    // What an interrupted capture left (and nothing else) goes: the copy starts after the capture is whole.
    let removed = remove_capture(ctx, t, true)?;
    let shadow_t = shadow_name(&t.name);
    // Recorded first: a crash between the two leaves a record of something that does not exist, never an object
    // innops would not know as its own.
    record(ctx, t, own::SHADOW, &shadow_t)?;
    record(ctx, t, capture::CHANGES, &capture::log_name(&t.name))?;
    for name in capture::trigger_names(&t.name) {
        record(ctx, t, capture::TRIGGER, &name)?;
    }
    let mut conn = ctx.target.connect()?;
    // The triggers keep the session's sql_mode: values go in verbatim, as the copy writes them.
    conn.query_drop(format!(
        "SET {tag} SESSION sql_mode = {}",
        copy::VERBATIM_SQL_MODE
    ))?;
    let mut made = copy::create_shadow(&mut conn, &tag, t, deferred)?;
    let log = capture::log_create_sql(&tag, t);
    conn.query_drop(&log)?;
    made.push(log);
    let mut attempts = 0;
    for (name, sql) in capture::trigger_sql(&tag, t, &shadow_t) {
        let flag = ctx.abort;
        let abort = move || flag.load(std::sync::atomic::Ordering::SeqCst);
        rows::with_bounded_lock(
            &mut conn,
            &tag,
            bound,
            &sql,
            &format!("create the trigger {name} on {}", t.display()),
            &abort,
            &mut attempts,
        )?;
        made.push(sql);
    }
    Ok(
        serde_json::json!({ "removed_leftovers": removed, "created": made, "lock_attempts": attempts }),
    )
}

/// Step 2: the walk.
pub fn walk_step(
    info: &TableInfo,
    p: &ConvertParams,
    flags: &str,
    replicas: &[crate::procedures::kit::replicas::Link],
) -> Step {
    let settings = copy::ChunkSettings {
        target_chunk: Duration::from_millis(p.chunk_ms),
        max_load: p.max_load.clone(),
        critical_load: p.critical_load.clone(),
        replicas: replicas.to_vec(),
        watch: p.watch.clone(),
    };
    let bound = p.online.bound();
    let (t, t2) = (info.clone(), info.clone());
    let cols = copy::column_list(info);
    Step::new(step_id("copy", info), format!("Copy {} in primary-key chunks while writes go on, each chunk verified under its own short lock", info.display()), Risk::Online)
        .preview(format!("FLUSH TABLES {src} WITH READ LOCK (on a session of its own); INSERT IGNORE INTO {shadow} ({cols}) SELECT {cols} FROM {src} FORCE INDEX (PRIMARY) WHERE pk > last ORDER BY pk LIMIT chunk; the chunk's row hash on both tables; UNLOCK TABLES   -- writes wait for one chunk (~{} ms), reads go on", p.chunk_ms, src = info.qualified(), shadow = qualified(&info.schema, &shadow_name(&info.name))))
        .pre(capture_live(info, flags))
        .act(move |ctx| walk::walk(ctx, &t, &settings, bound).map_err(|e| refuse_and_remove(ctx, &t, e)))
        .post(Check::new("every chunk copied and verified", move |ctx| {
            let pos = walk::read_position(ctx, &t2)?;
            let done = pos.as_ref().is_some_and(|p| p.done) || swapped(ctx, &t2)?;
            Ok(Verdict::check(
                done,
                pos.map(|p| format!("{} chunks, {} rows", p.chunks, p.rows)).unwrap_or_else(|| "no walk recorded".into()),
                "the walk at the end of the table",
                "the walk stopped before the end of the table: resume the run",
            ))
        }))
}

/// The index statements as the online path runs them: in place, writes going on.
pub fn online_statements(stmts: Vec<String>) -> Vec<String> {
    stmts
        .into_iter()
        .map(|s| format!("{s}, ALGORITHM=INPLACE, LOCK=NONE"))
        .collect()
}

/// Step 3 (a shadow with the primary key only): the secondary indexes, built while writes go on.
pub fn index_step(info: &TableInfo, p: &ConvertParams, mariadb: bool) -> Step {
    let stmts: Vec<String> = match copy::index_statements_if_not_exists(info).filter(|_| mariadb) {
        Some(s) => s,
        None => copy::index_statements(info),
    };
    let stmts = online_statements(stmts);
    let bound = p.online.bound();
    let mut step = Step::new(
        step_id("indexes", info),
        format!(
            "Build the secondary indexes of {} while writes go on",
            info.display()
        ),
        Risk::Online,
    );
    for s in &stmts {
        step = step.preview(format!("{s}   -- InnoDB logs the writes meanwhile; its last phase waits at most {} s for a lock, retried", p.online.lock_wait_s));
    }
    let (t, t2, t3) = (info.clone(), info.clone(), info.clone());
    step.pre(Check::new("indexes missing", move |ctx| {
        let have = super::index_step::index_lines(ctx, &t.schema, &shadow_name(&t.name))?;
        Ok(if super::index_step::index_differences(&t, &have).is_empty() || swapped(ctx, &t)? {
            Verdict::done("all present", "missing")
        } else {
            Verdict::pass(format!("{} of {}", have.len(), t.indexes.len()), "missing")
        })
    }))
    .act(move |ctx| {
        let tag = ctx.tag();
        let t0 = std::time::Instant::now();
        // An ALTER of a run killed mid-way may still be running on the server.
        let reaped = copy::reap_orphans(ctx, &t2)?;
        // The triggers leave the shadow alone while it is built; verification compares the keys changed meanwhile.
        let held = capture::hold(ctx.target, &tag, &t2)?;
        crate::testhooks::hold("online-indexes-held");
        let target = ctx.target;
        let mut conn = target.connect()?;
        let id = conn.connection_id();
        let mut attempts = 0;
        for s in &stmts {
            let sql = s.replacen("ALTER TABLE", &format!("ALTER {tag} TABLE"), 1);
            let flag = ctx.abort;
        let abort = move || flag.load(std::sync::atomic::Ordering::SeqCst);
            copy::watch_progress(target, id, &format!("indexes {}", t2.display()), 100, copy::Watch::Percent, || {
                rows::with_bounded_lock(&mut conn, &tag, bound, &sql, &format!("finish the index build of {}", t2.display()), &abort, &mut attempts)
            })?;
        }
        let shadow_writes_held = held.is_some();
        drop(held);
        Ok(serde_json::json!({ "statements": stmts, "stopped_orphans": reaped, "attempts": attempts, "shadow_writes_held": shadow_writes_held, "seconds": t0.elapsed().as_secs_f64() }))
    })
    .post(Check::new("same indexes as the source, in the same order", move |ctx| {
        let have = super::index_step::index_lines(ctx, &t3.schema, &shadow_name(&t3.name))?;
        let diff = super::index_step::index_differences(&t3, &have);
        Ok(Verdict::check(diff.is_empty(), super::index_step::show_indexes(&have), super::index_step::show_indexes(&t3.definition.indexes), format!("the shadow's indexes differ from the source's ({}): read the ALTER statements in the run's journal", diff.join("; "))))
    }))
}

/// Keys changed since the walk, left to compare, below which the run goes on to the cut-over.
pub const CUTOVER_BACKLOG: u64 = 2_000;
/// Rounds of comparing changed keys before the cut-over is tried anyway.
const ROUNDS: u32 = 20;

/// Step 4: the definitions compared, and the keys changed since the walk compared again until few are left.
pub fn verify_step(info: &TableInfo, p: &ConvertParams, flags: &str) -> Step {
    let bound = p.online.bound();
    let (t, t2) = (info.clone(), info.clone());
    Step::new(step_id("verify", info), format!("Verify {}'s copy: the definition, and every row changed since its chunk was verified", info.display()), Risk::Online)
        .preview("SHOW CREATE TABLE of both tables; the keys in the change log since the copy began, compared row by row on both tables in batches under LOCK TABLES … READ (a differing row is copied again and compared again)")
        .pre(capture_live(info, flags))
        .act(move |ctx| verify_act(ctx, &t, bound).map_err(|e| refuse_and_remove(ctx, &t, e)))
        .post(Check::new("changes compared", move |ctx| {
            let pos = walk::read_position(ctx, &t2)?;
            let ok = pos.as_ref().is_some_and(|p| p.done && p.compared_to >= p.since_seq) || swapped(ctx, &t2)?;
            Ok(Verdict::check(ok, pos.map(|p| format!("compared up to change {}", p.compared_to)).unwrap_or_else(|| "no walk recorded".into()), "every change since the walk compared", "the changes were not all compared: resume the run"))
        }))
}

fn verify_act(ctx: &mut Ctx, t: &TableInfo, bound: LockBound) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    let live = load(ctx, &t.schema, &t.name)?.ok_or_else(|| {
        crate::error::refused(format!("the table {} no longer exists", t.display()))
    })?;
    let now = load(ctx, &t.schema, &shadow_name(&t.name))?.ok_or_else(|| {
        crate::error::refused(format!(
            "innops's copy of {} is gone: convert again with --restart",
            t.display()
        ))
    })?;
    let diff = definition::differences(
        &live.definition,
        &now.definition,
        &super::index_step::set_aside(t),
    );
    if !diff.is_empty() {
        return Err(crate::error::refused(format!("the copy's definition differs from the source's ({}): nothing was swapped and the source is untouched", diff.join("; "))));
    }
    let mut pos = walk::read_position(ctx, t)?.ok_or_else(|| crate::error::refused(format!("this run has no record of its walk of {}: resume it from the copy step, or convert again with --restart", t.display())))?;
    let mut conn = ctx.target.connect()?;
    let key = crate::procedures::convert::keys::key_columns(&mut conn, &tag, t)?;
    let mut w = walk::Walker::new(t, &tag, key, bound);
    let mut total = catchup::Compared::default();
    let from = pos.compared_to.max(pos.since_seq);
    let mut done = from;
    let mut rounds = 0;
    loop {
        let to = walk::log_max(&mut conn, &tag, t)?;
        rounds += 1;
        let flag = ctx.abort;
        let abort = move || flag.load(std::sync::atomic::Ordering::SeqCst);
        let c = catchup::compare(&mut conn, &mut w, done, to, true, &abort)?;
        total.keys += c.keys;
        total.differed += c.differed;
        total.examples.extend(c.examples);
        done = to;
        pos.compared_to = done;
        walk::write_position(ctx, t, &pos)?;
        let left = walk::log_max(&mut conn, &tag, t)?.saturating_sub(done);
        if left <= CUTOVER_BACKLOG || rounds >= ROUNDS {
            break;
        }
    }
    total.examples.truncate(5);
    Ok(
        serde_json::json!({ "definition": "identical", "changes_from": from, "changes_to": done, "rounds": rounds, "compared": total, "lock_attempts": w.lock_attempts }),
    )
}

/// Why `auto` takes the online path for `info`, if it does: the table is larger than `--online-above`, or the
/// application wrote it in the last minute (its `UPDATE_TIME`, for a table made earlier than that).
pub fn auto_reason(
    conn: &mut mysql::Conn,
    info: &TableInfo,
    s: &OnlineSettings,
) -> anyhow::Result<Option<String>> {
    let size = info.data_length + info.index_length;
    if size > s.above_bytes {
        return Ok(Some(format!(
            "{} of data and indexes, more than --online-above {}: writes go on during the copy",
            format_size(size),
            format_size(s.above_bytes)
        )));
    }
    let times: Option<(Option<i64>, Option<i64>, i64)> = conn.exec_first(
        "SELECT /* innops:convert:plan */ UNIX_TIMESTAMP(UPDATE_TIME), UNIX_TIMESTAMP(CREATE_TIME), UNIX_TIMESTAMP() FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
        (&info.schema, &info.name),
    )?;
    Ok(match times {
        Some((Some(updated), Some(created), now)) if written_lately(updated, created, now) => Some(format!(
            "it was written {} s ago (information_schema.TABLES.UPDATE_TIME) and made earlier than a minute ago, so an application writes it: writes go on during the copy",
            now - updated
        )),
        _ => None,
    })
}

/// Written in the last minute, by something other than the statements that made and filled it.
pub fn written_lately(updated: i64, created: i64, now: i64) -> bool {
    now - updated <= 60 && now - created > 60
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_written_in_the_last_minute_but_made_before_it_counts_as_written() {
        assert!(written_lately(1000, 100, 1010));
        assert!(!written_lately(1000, 990, 1010), "made and filled just now");
        assert!(!written_lately(900, 100, 1010), "written over a minute ago");
    }

    #[test]
    fn fulltext_and_spatial_indexes_stay_in_the_shadow_from_the_start() {
        let mut t = TableInfo::synthetic("d", "t", &[("id", "int"), ("b", "text")]);
        t.set_primary(&["id"]);
        assert!(deferred(&t));
        t.indexes.push(schema::Index {
            name: "f".into(),
            unique: false,
            kind: "FULLTEXT".into(),
            parts: vec![],
            comment: String::new(),
            line: String::new(),
        });
        assert!(!deferred(&t));
    }
}
