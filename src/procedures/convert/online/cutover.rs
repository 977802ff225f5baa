//! The online path's cut-over: the keys changed since the last comparison are compared once more outside any
//! lock; then the guard (`FLUSH TABLES t WITH READ LOCK`) is tried for at most `--cutover-lock-wait`, and given
//! up and retried later when it cannot be had, so writers never queue behind a stuck guard for longer. Under the
//! guard no write reaches the source: the last changed keys are compared, the counter and the definition
//! checked, and the RENAME queued behind the guard. Then the triggers (they moved with the source to the kept
//! table) and the change log go, and the kept table is fingerprinted for `--drop-kept`.

use std::time::{Duration, Instant};

use super::*;

/// One try at the guard, waiting at most `wait_s`: the guard's session, or None when it timed out.
fn try_guard(ctx: &mut Ctx, t: &TableInfo, wait_s: u64) -> anyhow::Result<Option<mysql::Conn>> {
    let tag = ctx.tag();
    let mut conn = ctx.target.connect()?;
    conn.query_drop(format!(
        "SET {tag} SESSION lock_wait_timeout = {}",
        wait_s.max(1)
    ))?;
    match conn.query_drop(format!(
        "FLUSH {tag} TABLES {} WITH READ LOCK",
        t.qualified()
    )) {
        Ok(()) => Ok(Some(conn)),
        Err(mysql::Error::MySqlError(e)) if e.code == 1205 => Ok(None),
        Err(e) => Err(copy::lock_refusal(&mut conn, t, "block writes to", &e)),
    }
}

/// The cut-over's record: how many tries it took, and how long writes waited for it.
#[derive(Default, serde::Serialize)]
struct Tries {
    guard_tries: u32,
    guard_timeouts: u32,
    too_much_left: u32,
    /// RENAMEs that could not have their locks in time (a statement still using the table).
    rename_timeouts: u32,
    /// From the guard granted to the RENAME done, on the try that swapped.
    writes_held_s: f64,
}

pub fn cutover_step(info: &TableInfo, p: &ConvertParams, flags: &str) -> Step {
    let old = qualified(&info.schema, &old_name(&info.name));
    let shadow = qualified(&info.schema, &shadow_name(&info.name));
    let (t, t2, t3) = (info.clone(), info.clone(), info.clone());
    let settings = p.online.clone();
    let flags = flags.to_string();
    let choice = p.verify;
    Step::new(step_id("swap", info), format!("Cut over: swap {} atomically under a guard held for well under a second, keeping the MyISAM table as {}", info.display(), old_name(&info.name)), Risk::Locking)
        .preview(format!("/* guard session, waits at most {} s, retried up to {} times */ FLUSH TABLES {} WITH READ LOCK; the keys changed since the last comparison compared; ALTER TABLE {shadow} AUTO_INCREMENT = …; RENAME TABLE {} TO {old}, {shadow} TO {}   -- queued behind the guard, then the guard lets go", settings.lock_wait_s, settings.lock_tries, info.qualified(), info.qualified(), info.qualified()))
        .preview(format!("DROP TRIGGER … (innops's three, now on {old}); DROP TABLE {}", qualified(&info.schema, &capture::log_name(&info.name))))
        .pre(Check::after_prior("not swapped yet", move |ctx| {
            if swapped(ctx, &t)? {
                let left = capture_now(ctx, &t, &old_name(&t.name))?;
                return Ok(if left.triggers.is_empty() && !left.log {
                    Verdict::done("already swapped, the triggers and log gone", "a copy to swap")
                } else {
                    Verdict::pass("swapped; the triggers and log are still to drop", "a copy to swap")
                });
            }
            Ok(Verdict::pass("a verified copy, kept up to date by the triggers", "a copy to swap"))
        }))
        .act(move |ctx| {
            let mut r = if swapped(ctx, &t2)? {
                serde_json::json!({ "swapped_before": true })
            } else {
                require_innodb_shadow(ctx, &t2, &flags)?;
                // A run stopped between moving the table's own triggers and the RENAME: they go back first.
                let back = triggers::put_back(ctx, &t2)?;
                let mut r = swap_now(ctx, &t2, &settings).map_err(|e| refuse_and_remove(ctx, &t2, e))?;
                if !back.is_empty() {
                    r["triggers_put_back_first"] = serde_json::json!(back);
                }
                r
            };
            r["cleaned_up"] = serde_json::json!(clean_up(ctx, &t2, choice)?);
            Ok(r)
        })
        .post(Check::new("InnoDB in place, MyISAM kept, the capture gone", move |ctx| {
            let engine = engine_of(ctx, &t3.schema, &t3.name)?.unwrap_or_default();
            let kept = engine_of(ctx, &t3.schema, &old_name(&t3.name))?.unwrap_or_default();
            let left = capture_now(ctx, &t3, &old_name(&t3.name))?;
            let on_new = capture_now(ctx, &t3, &t3.name)?.triggers;
            Ok(Verdict::check(
                engine.eq_ignore_ascii_case("InnoDB") && kept.eq_ignore_ascii_case("MyISAM") && left.triggers.is_empty() && on_new.is_empty() && !left.log,
                format!("{} is {engine}, {} is {kept}; {} capture trigger(s) left, change log {}", t3.name, old_name(&t3.name), left.triggers.len() + on_new.len(), if left.log { "left" } else { "gone" }),
                "InnoDB in place, MyISAM kept, no trigger or log of innops's",
                "the cut-over did not complete: read the journal, then resume",
            ))
        }))
}

/// Catch up, take the guard (bounded, retried), compare the last changes under it, and swap.
fn swap_now(ctx: &mut Ctx, t: &TableInfo, s: &OnlineSettings) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    let bound = s.bound();
    let mut pos = walk::read_position(ctx, t)?.ok_or_else(|| {
        crate::error::refused(format!(
            "this run has no record of its walk of {}: convert again with --restart",
            t.display()
        ))
    })?;
    let mut conn = ctx.target.connect()?;
    let key = crate::procedures::convert::keys::key_columns(&mut conn, &tag, t)?;
    let mut w = walk::Walker::new(t, &tag, key, bound);
    let mut tries = Tries::default();
    let mut compared = catchup::Compared::default();
    let mut backoff = Duration::from_millis(250);
    let mut done = pos.compared_to.max(pos.since_seq);
    loop {
        let flag = ctx.abort;
        let abort = move || flag.load(std::sync::atomic::Ordering::SeqCst);
        let to = walk::log_max(&mut conn, &tag, t)?;
        let c = catchup::compare(&mut conn, &mut w, done, to, true, &abort)?;
        compared.keys += c.keys;
        compared.differed += c.differed;
        done = to;
        pos.compared_to = done;
        walk::write_position(ctx, t, &pos)?;
        if tries.guard_tries >= s.lock_tries {
            return Err(crate::error::refused(format!(
                "could not cut over {} in {} tries ({} times the guard was not granted within {} s, {} times the RENAME was not, {} times too many changes came in meanwhile): writers were never held longer than one try; the copy is kept up to date, so resume the run when the table is quieter, or raise --cutover-lock-wait",
                t.display(), tries.guard_tries, tries.guard_timeouts, s.lock_wait_s, tries.rename_timeouts, tries.too_much_left
            )));
        }
        tries.guard_tries += 1;
        crate::testhooks::hold("before-guard");
        // The table's own triggers move at the cut-over: then the guard locks for write, in one session.
        let own = triggers::of_table(&mut conn, &tag, t, &t.name)?;
        let guard = if own.is_empty() {
            try_guard(ctx, t, s.lock_wait_s)?
        } else {
            triggers::try_lock_guard(ctx, t, s.lock_wait_s)?
        };
        let Some(mut guard) = guard else {
            tries.guard_timeouts += 1;
            crate::progress::print_line(&format!("innops: the guard on {} was not granted within {} s: writers go on; trying again in {} ms", t.display(), s.lock_wait_s, backoff.as_millis()));
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(4));
            continue;
        };
        let held = Instant::now();
        ctx.writes_blocked(&t.display());
        // Under a write lock only its own session reads the tables.
        let work = if own.is_empty() {
            &mut conn
        } else {
            &mut guard
        };
        let to = walk::log_max(work, &tag, t)?;
        if to.saturating_sub(done) > CUTOVER_BACKLOG {
            // Too much came in since: compare it with writes going on, then try again.
            let _ = guard.query_drop("UNLOCK TABLES");
            ctx.writes_released(&t.display());
            tries.too_much_left += 1;
            continue;
        }
        let c = catchup::compare(work, &mut w, done, to, false, &abort)?;
        compared.keys += c.keys;
        compared.differed += c.differed;
        compared.examples.extend(c.examples);
        pos.compared_to = to;
        walk::write_position(ctx, t, &pos)?;
        let Some(r) = under_guard(ctx, t, s.lock_wait_s, guard, &own)? else {
            tries.rename_timeouts += 1;
            std::thread::sleep(backoff);
            backoff = (backoff * 2).min(Duration::from_secs(4));
            continue;
        };
        tries.writes_held_s = held.elapsed().as_secs_f64();
        compared.examples.truncate(5);
        return Ok(
            serde_json::json!({ "swap": r, "tries": tries, "compared_at_cutover": compared, "compared_to_change": to }),
        );
    }
}

/// Under the guard: the capture whole, the counter, the definition, then the RENAME queued behind the guard,
/// waiting at most `wait_s` for its locks; None when it could not have them (nothing was renamed).
fn under_guard(
    ctx: &mut Ctx,
    t: &TableInfo,
    wait_s: u64,
    mut guard: mysql::Conn,
    own: &[triggers::Def],
) -> anyhow::Result<Option<serde_json::Value>> {
    let tag = ctx.tag();
    let c = capture_now(ctx, t, &t.name)?;
    if !c.complete() {
        let _ = guard.query_drop("UNLOCK TABLES");
        return Err(crate::error::refused(format!("the triggers that keep innops's copy of {} up to date are not all in place ({}), so changes may be missing from it: nothing was swapped", t.display(), c.describe())));
    }
    let shadow_t = shadow_name(&t.name);
    let live = load(ctx, &t.schema, &t.name)?.ok_or_else(|| {
        crate::error::refused(format!("the table {} no longer exists", t.display()))
    })?;
    if let Some(ai) = live.auto_increment {
        // In the guard's session where it holds the shadow locked for write.
        let sql = format!(
            "ALTER {tag} TABLE {} AUTO_INCREMENT = {ai}",
            qualified(&t.schema, &shadow_t)
        );
        if own.is_empty() {
            ctx.conn()?.query_drop(sql)?;
        } else {
            guard.query_drop(sql)?;
        }
    }
    let now = load(ctx, &t.schema, &shadow_t)?.ok_or_else(|| {
        crate::error::refused(format!("innops's copy of {} is gone", t.display()))
    })?;
    let diff = definition::differences(
        &live.definition,
        &now.definition,
        &super::super::index_step::set_aside(t),
    );
    if !diff.is_empty() {
        return Err(crate::error::refused(format!("the copy's definition differs from the source's ({}): nothing was swapped and the source is untouched", diff.join("; "))));
    }
    if now.auto_increment.unwrap_or(0) < live.auto_increment.unwrap_or(0) {
        return Err(crate::error::refused(format!(
            "the copy's AUTO_INCREMENT {} stayed below the source's {}: nothing was swapped",
            now.auto_increment.unwrap_or(0),
            live.auto_increment.unwrap_or(0)
        )));
    }
    record_with(ctx, t, own::KEPT, &old_name(&t.name), None)?;
    let mut moved = Vec::new();
    if !own.is_empty() {
        triggers::save(ctx, t, own)?;
        moved = triggers::move_to_shadow(&mut guard, &tag, t, own)?;
        crate::testhooks::exit_at("triggers-moved:", &ctx.step);
    }
    ctx.held.insert(copy::guard_key(t), guard);
    // Once the table's own triggers are on the shadow, the RENAME must not give up after a second: a long wait
    // behind another statement holds writers, but a RENAME given up would leave the table without them.
    let wait = if own.is_empty() { wait_s } else { 60 };
    match copy::swap(ctx, t, &old_name(&t.name), &shadow_t, wait) {
        Ok(mut r) => {
            if !own.is_empty() {
                r["moved_triggers"] = serde_json::json!(moved);
            }
            Ok(Some(r))
        }
        Err(e) => {
            let _ = own::forget(ctx.conn()?, &tag, &t.schema, &old_name(&t.name));
            if !own.is_empty() {
                let back = triggers::put_back(ctx, t);
                return Err(crate::error::refused(format!(
                    "{e}; the triggers {} were put back on {} ({})",
                    triggers::names(own),
                    t.display(),
                    match back {
                        Ok(b) => format!("{} recreated", b.len()),
                        Err(b) => format!("putting them back failed: {b}; their definitions are in the run directory"),
                    }
                )));
            }
            if e.downcast_ref::<copy::RenameTimedOut>().is_some() {
                // The guard has let go already: writers go on, and the cut-over is tried again.
                crate::progress::print_line(&format!(
                    "innops: {e}: writers go on; trying the cut-over again"
                ));
                return Ok(None);
            }
            Err(e)
        }
    }
}

/// After the swap: the triggers (on the kept table now) and the change log go, the shadow's record is
/// forgotten, and the kept table, which nothing writes any more, is fingerprinted for `--drop-kept`.
fn clean_up(
    ctx: &mut Ctx,
    t: &TableInfo,
    choice: verify::Choice,
) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    let dropped = remove_capture(ctx, t, false)?;
    own::forget(ctx.conn()?, &tag, &t.schema, &shadow_name(&t.name))?;
    let (method, _) = verify::first_method(t, choice);
    let kept = old_name(&t.name);
    let fp = verify::fingerprint(ctx.conn()?, &tag, t, &kept, method)?;
    record_with(ctx, t, own::KEPT, &kept, Some(fp.clone()))?;
    Ok(serde_json::json!({ "dropped": dropped, "kept_fingerprint": fp }))
}
