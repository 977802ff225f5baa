//! The alter path: one `ALTER TABLE … ENGINE=InnoDB` under `LOCK TABLES … WRITE`, proven by the checksums taken
//! before and after it under the same lock. It keeps no old table, so its proof is all a resumed run has; the
//! step and the proof's reader are kept together.

use super::*;

pub(super) fn alter_step(info: &TableInfo, room: &space::Where) -> Step {
    let room = room.clone();
    let t = info.clone();
    let t2 = info.clone();
    let t3 = info.clone();
    let fixed = info.innodb_fixups_sql();
    Step::new(step_id("alter", info), format!("ALTER {} to InnoDB in place, checked against the checksum before", info.display()), Risk::Locking)
        .preview(format!("LOCK TABLES {q} WRITE; checksum; ALTER TABLE {q} ENGINE=InnoDB{fixed}; checksum; UNLOCK TABLES   -- no old table is kept: there is no rollback", q = info.qualified()))
        .bench()
        .pre(Check::new("still MyISAM", move |ctx| {
            let e = engine_of(ctx, &t.schema, &t.name)?.unwrap_or_default();
            if !e.eq_ignore_ascii_case("InnoDB") {
                return Ok(Verdict::pass(e, "MyISAM"));
            }
            // Converted already, yet this step is not done in the journal: a proof recorded by the action would
            // have let the resumed run pass the step's post-check before this pre-check ran, so there is none.
            Ok(Verdict::fail(
                "InnoDB, without this run's record of the checksum before the ALTER",
                "MyISAM",
                format!("{} is InnoDB already, but the run was interrupted before it recorded the checksum taken before the ALTER, so innops cannot prove no row changed: compare the table with your backup", t.display()),
            ))
        }))
        .act(move |ctx| {
            let tag = ctx.tag();
            let method = verify::method_for(&t2);
            let mut conn = ctx.target.connect()?;
            conn.query_drop(format!("SET {tag} SESSION lock_wait_timeout = {}", copy::lock_wait_secs()))?;
            // A myisampack'ed table is read-only: the server refuses to lock it for writing (ERROR 1036), and
            // no statement can change its rows, so the checksums before and after need no lock around them.
            let packed = t2.row_format.eq_ignore_ascii_case("Compressed");
            if !packed {
                if let Err(e) = conn.query_drop(format!("LOCK {tag} TABLES {} WRITE", t2.qualified())) {
                    return Err(copy::lock_refusal(&mut conn, &t2, "lock", &e));
                }
            }
            ctx.writes_blocked(&t2.display());
            let r = (|| -> anyhow::Result<(Fingerprint, Fingerprint, f64)> {
                let before = verify::fingerprint(&mut conn, &tag, &t2, &t2.name, method)?;
                let t0 = std::time::Instant::now();
                let alter = format!("ALTER {tag} TABLE {} ENGINE=InnoDB{}", t2.qualified(), t2.innodb_fixups_sql());
                let id = conn.connection_id();
                let label = format!("alter {}", t2.display());
                copy::watch_progress(ctx.target, id, &label, 100, copy::Watch::Percent, || Ok(conn.query_drop(&alter)?))?;
                let secs = t0.elapsed().as_secs_f64();
                let after = verify::fingerprint(&mut conn, &tag, &t2, &t2.name, method)?;
                Ok((before, after, secs))
            })();
            let _ = conn.query_drop("UNLOCK TABLES");
            ctx.writes_released(&t2.display());
            let (before, after, secs) = r.map_err(|e| {
                space::explain(e, &t2, &room, "rebuilding it as InnoDB (the ALTER was undone)", "convert again", true)
            })?;
            ctx.state::<Memo>().alter.insert(t2.display(), (before.clone(), after.clone()));
            Ok(serde_json::json!({ "before": before, "after": after, "seconds": secs }))
        })
        .post(Check::new("same rows and checksum as before the ALTER", move |ctx| {
            let Some((before, after)) = alter_proof(ctx, &t3) else {
                return Ok(Verdict::fail("the before-checksum was lost with the interrupted run", "equal", "compare the table with your backup: innops cannot prove this conversion"));
            };
            Ok(Verdict::check(before == after, format!("{} rows, {}", after.rows, after.checksum), format!("{} rows, {}", before.rows, before.checksum), "the table changed during the ALTER: compare it with your backup"))
        }))
}

/// The fingerprints taken before and after the ALTER under its lock: in memory, else from the journal.
pub(super) fn alter_proof(ctx: &mut Ctx, t: &TableInfo) -> Option<(Fingerprint, Fingerprint)> {
    if let Some(proof) = ctx.state::<Memo>().alter.get(&t.display()) {
        return Some(proof.clone());
    }
    let v = ctx.recorded_result(&step_id("alter", t))?;
    Some((
        serde_json::from_value(v["before"].clone()).ok()?,
        serde_json::from_value(v["after"].clone()).ok()?,
    ))
}
