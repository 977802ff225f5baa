//! The two steps that drop a table: `--restart` drops innops's own leftover copy, `--drop-old-table` the kept
//! MyISAM table once it is proven identical. Each refuses anything it cannot prove is innops's to drop, and
//! they are kept apart from the steps that make tables so that every DROP of a conversion is in one place.

use super::*;

/// `--restart`: drop innops's own leftover copy, never the source or the kept table.
pub(super) fn discard_step(info: &TableInfo) -> Step {
    let shadow_t = shadow_name(&info.name);
    let shadow = qualified(&info.schema, &shadow_t);
    let (t, t2, t3) = (info.clone(), info.clone(), info.clone());
    let drop = shadow.clone();
    Step::new(step_id("restart", info), format!("Drop innops's leftover copy {}.{shadow_t} (--restart)", info.schema), Risk::Online)
        .preview(format!("DROP TABLE {shadow}   -- innops's own copy of an interrupted run; the source stays as it is"))
        .pre(Check::new("a leftover copy to drop", move |ctx| {
            let shadow_t = shadow_name(&t.name);
            if swapped(ctx, &t)? {
                return Ok(Verdict::fail("already converted", "a MyISAM source", format!("{} was converted already: there is nothing to start over", t.display())));
            }
            let tag = ctx.tag();
            let record = own::lookup(ctx.conn()?, &tag, &t.schema, &shadow_t)?.filter(|r| r.kind == own::SHADOW);
            let this = own::this_server(ctx.conn()?, &tag)?;
            if let Some(r) = record.as_ref().filter(|r| r.from_elsewhere(this)) {
                return Ok(Verdict::fail(format!("{shadow_t} is server_id {}'s copy, arriving by replication", r.origin), "a copy made by innops here", r.replicated_refusal("dropping it")));
            }
            let ours = record.is_some();
            let capture = super::online::capture_now(ctx, &t, &t.name)?;
            Ok(match engine_of(ctx, &t.schema, &shadow_t)? {
                None if capture.log || !capture.triggers.is_empty() => Verdict::pass(format!("{} (an online run's)", capture.describe()), "a leftover copy"),
                None => Verdict::done("no leftover copy", "a leftover copy"),
                // innops's record is what makes it droppable: a copy it made whose ALTER to InnoDB failed (or was
                // undone) holds nothing but copied rows, whatever its engine.
                Some(e) if ours => Verdict::pass(format!("{shadow_t} ({e}, recorded as innops's copy)"), "a leftover copy"),
                Some(e) => Verdict::fail(format!("{shadow_t} is {e}, with no record of innops making it"), "a copy made by innops", format!("{}.{shadow_t} was not made by innops (it has no record in {}.{}), so --restart leaves it alone: check it, then drop or rename it yourself", t.schema, own::SCHEMA, own::TABLE)),
            })
        }))
        .act(move |ctx| {
            let tag = ctx.tag();
            // A statement of the interrupted run may still be filling it.
            copy::reap_orphans(ctx, &t2)?;
            // An online run's triggers and change log go first: nothing writes the copy any more.
            let capture = super::online::remove_capture(ctx, &t2, false)?;
            ctx.conn()?.query_drop(format!("DROP {tag} TABLE IF EXISTS {drop}"))?;
            own::forget(ctx.conn()?, &tag, &t2.schema, &shadow_name(&t2.name))?;
            Ok(serde_json::json!({ "dropped": drop, "capture_dropped": capture }))
        })
        .post(Check::new("leftover copy gone", move |ctx| {
            let gone = engine_of(ctx, &t3.schema, &shadow_name(&t3.name))?.is_none();
            Ok(Verdict::check(gone, if gone { "gone" } else { "still there" }, "gone", "DROP TABLE did not take effect: check the table by hand"))
        }))
}

pub(super) fn drop_old_step(info: &TableInfo) -> Step {
    let old = qualified(&info.schema, &old_name(&info.name));
    let t = info.clone();
    let t2 = info.clone();
    let old2 = old.clone();
    Step::new(step_id("drop-old", info), format!("Drop the kept MyISAM table {} (--drop-old-table)", old_name(&info.name)), Risk::Destructive)
        .preview(format!("DROP TABLE {old}"))
        .pre(Check::new("old table identical to the new one", move |ctx| {
            let tag = ctx.tag();
            let Some(_) = engine_of(ctx, &t.schema, &old_name(&t.name))? else {
                return Ok(Verdict::done("already dropped", "kept table present"));
            };
            let method = verify::method_for(&t);
            let a = verify::fingerprint(ctx.conn()?, &tag, &t, &old_name(&t.name), method)?;
            let b = verify::fingerprint(ctx.conn()?, &tag, &t, &t.name, method)?;
            Ok(Verdict::check(
                a == b,
                format!("{} rows, {}", a.rows, a.checksum),
                format!("{} rows, {}", b.rows, b.checksum),
                "the InnoDB table already differs from the kept MyISAM table (writes since the swap): innops keeps the old table; drop it yourself once you are sure",
            ))
        }))
        .act(move |ctx| {
            let tag = ctx.tag();
            ctx.conn()?.query_drop(format!("DROP {tag} TABLE {old2}"))?;
            Ok(serde_json::json!({ "dropped": old2 }))
        })
        .post(Check::new("old table gone", move |ctx| {
            let gone = engine_of(ctx, &t2.schema, &old_name(&t2.name))?.is_none();
            Ok(Verdict::check(gone, if gone { "gone" } else { "still there" }, "gone", "DROP TABLE did not take effect: check the table by hand"))
        }))
}
