//! Verification and the swap it guards: the shadow is compared with the source under the write guard (rows,
//! checksum or row hash, definition, AUTO_INCREMENT), and the swap runs only on a verification this process
//! made under the guard it still holds, verifying again first after a resume. They share the verified mark
//! and the source's fingerprint ([`Memo`]), so neither can be read without the other.

use super::*;

/// The source fingerprint this run verified the copy against: in memory, else from the journal (a resumed
/// run), from the swap's or the verify step's recorded result.
pub(super) fn verified_source(ctx: &mut Ctx, t: &TableInfo) -> Option<Fingerprint> {
    let memo = ctx.state::<Memo>();
    if memo.verified.contains(&t.display()) {
        if let Some(fp) = memo.source.get(&t.display()) {
            return Some(fp.clone());
        }
    }
    for (step, key) in [("swap", "verified_source"), ("verify", "source")] {
        let recorded = ctx.recorded_result(&step_id(step, t));
        if let Some(fp) = recorded
            .as_ref()
            .and_then(|r| r.get(key))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
        {
            if step == "swap"
                || recorded.as_ref().and_then(|r| r.get("identical"))
                    == Some(&serde_json::json!(true))
            {
                return Some(fp);
            }
        }
    }
    None
}

/// Verify the shadow against the source under the guard; the verdicts, the source's fingerprint, and whether
/// everything matched. Everything compared is read now, under the guard: the source as it is, not as the
/// plan saw it.
pub(super) fn verify_now(
    ctx: &mut Ctx,
    t: &TableInfo,
    choice: verify::Choice,
) -> anyhow::Result<(Vec<Verdict>, Fingerprint, bool)> {
    let key = t.display();
    if !copy::guard_held(ctx, t) {
        // The guard was lost (a crash and resume): the source may have changed, so measure it again, and
        // count the new table rather than trust the copy's own count.
        let memo = ctx.state::<Memo>();
        memo.source.remove(&key);
        memo.inserted.remove(&key);
        copy::acquire_guard(ctx, t)?;
    }
    let tag = ctx.tag();
    let shadow_t = shadow_name(&t.name);
    let shadow = qualified(&t.schema, &shadow_t);
    let live = load(ctx, &t.schema, &t.name)?.ok_or_else(|| {
        post_check(format!(
            "the source table {} is gone: check the schema before anything else",
            t.display()
        ))
    })?;
    // The counter as it is now, under the guard: an INSERT and a DELETE since the plan moved it on, and
    // the new table must never hand out an id the old one already gave.
    if let Some(ai) = live.auto_increment {
        ctx.conn()?
            .query_drop(format!("ALTER {tag} TABLE {shadow} AUTO_INCREMENT = {ai}"))?;
    }
    let m = measure(ctx, t, &tag, choice)?;
    let now = load(ctx, &t.schema, &shadow_t)?.ok_or_else(|| {
        post_check(format!(
            "the shadow table {shadow} is gone: run the conversion again"
        ))
    })?;
    let diff = definition::differences(&live.definition, &now.definition, &set_aside(t));
    let v = verdicts(&m, &live, &now, &diff);
    let ok = v.iter().all(|x| x.passed);
    let memo = ctx.state::<Memo>();
    memo.source.insert(key.clone(), m.source.clone());
    memo.shadow.insert(key.clone(), m.shadow.clone());
    if ok {
        memo.verified.insert(key);
    } else {
        memo.verified.remove(&key);
    }
    Ok((v, m.source, ok))
}

/// The two fingerprints verification compares, and how they were taken.
struct Measured {
    source: Fingerprint,
    shadow: Fingerprint,
    /// The rows the copy's one statement reported inserting into the empty shadow, if it did.
    inserted: Option<u64>,
    /// CHECKSUM TABLE's two results when they differed and the row hash of both tables decided instead.
    checksum_differed: Option<String>,
}

/// Fingerprint the source (unless the copy already did, under the guard) and the shadow by the same method.
fn measure(
    ctx: &mut Ctx,
    t: &TableInfo,
    tag: &str,
    choice: verify::Choice,
) -> anyhow::Result<Measured> {
    let key = t.display();
    let shadow_t = shadow_name(&t.name);
    let (method, _) = verify::first_method(t, choice);
    let mut source: Fingerprint = match ctx.state::<Memo>().source.get(&key).cloned() {
        Some(fp) => fp,
        None => verify::fingerprint(ctx.conn()?, tag, t, &t.name, method)?,
    };
    // The shadow by the source's own method (a fingerprint a run recorded before an upgrade keeps its own):
    // nothing writes to it, and this read is the one the verified copy adds to the server's own work. The row
    // hash reads it in two halves at once; CHECKSUM TABLE reads it inside the server, and takes the count the
    // copy's one statement reported for the empty table it filled. It should hold the source's rows: that is
    // what the progress counts toward.
    let expecting = |rows: u64| TableInfo {
        rows_estimate: rows,
        ..t.clone()
    };
    let inserted = ctx.state::<Memo>().inserted.get(&key).map(|i| i.inserted);
    let target = ctx.target;
    let hash_start = std::time::Instant::now();
    let mut shadow_fp = verify::fingerprint_new(
        target,
        ctx.conn()?,
        tag,
        &expecting(source.rows),
        &shadow_t,
        source.method,
        inserted,
    )?;
    // CHECKSUM TABLE differs between the engines for some tables with the same rows: whenever it differs, the
    // row hash of both tables decides (the source cannot have changed: the guard has held since the copy).
    let mut checksum_differed = None;
    if source.method == verify::Method::ChecksumTable
        && (source.rows != shadow_fp.rows
            || source.checksum != shadow_fp.checksum
            || source.checksum == "NULL")
    {
        checksum_differed = Some(format!(
            "CHECKSUM TABLE {} rows {} vs {} rows {}",
            shadow_fp.rows, shadow_fp.checksum, source.rows, source.checksum
        ));
        source = verify::fingerprint(ctx.conn()?, tag, t, &t.name, verify::Method::RowXxh3)?;
        shadow_fp = verify::fingerprint_clustered(
            target,
            ctx.conn()?,
            tag,
            &expecting(source.rows),
            &shadow_t,
            verify::Method::RowXxh3,
        )?;
    }
    ctx.state::<Memo>()
        .shadow_hash_s
        .insert(key.clone(), hash_start.elapsed().as_secs_f64());
    Ok(Measured {
        source,
        shadow: shadow_fp,
        inserted,
        checksum_differed,
    })
}

/// The verdicts of a verification: row count, checksum, definition (`diff`, the differences found) and
/// AUTO_INCREMENT, of the shadow as it is `now` against the `live` source.
fn verdicts(m: &Measured, live: &TableInfo, now: &TableInfo, diff: &[String]) -> Vec<Verdict> {
    let (source, shadow_fp, inserted, checksum_differed) =
        (&m.source, &m.shadow, m.inserted, &m.checksum_differed);
    let counted = if source.method == verify::Method::ChecksumTable && inserted.is_some() {
        " (inserted by the copy's one statement into the empty table)"
    } else {
        ""
    };
    let decided = match checksum_differed {
        Some(d) => format!(" ({d} differed, so the row hash of both tables decided)"),
        None => String::new(),
    };
    let mut v = vec![
        Verdict::check(
            source.rows == shadow_fp.rows,
            format!("{} rows{counted}", shadow_fp.rows),
            format!("{} rows", source.rows),
            "row counts differ: the shadow is not a copy",
        ),
        Verdict::check(
            source.checksum == shadow_fp.checksum,
            format!("{} {}{decided}", shadow_fp.method, shadow_fp.checksum),
            format!("{} {}", source.method, source.checksum),
            "checksums differ: the copy is not exact",
        ),
        Verdict::check(
            diff.is_empty(),
            if diff.is_empty() {
                "the same columns, indexes in the same order with every attribute, constraints and table options".to_string()
            } else {
                diff.join("; ")
            },
            "the source's definition, apart from the engine",
            "the definition differs from the source's",
        ),
        Verdict::check(
            match (now.auto_increment, live.auto_increment) {
                (_, None) => true,
                (Some(n), Some(s)) => n >= s,
                (None, Some(_)) => false,
            },
            format!(
                "AUTO_INCREMENT {}",
                now.auto_increment
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "none".into())
            ),
            format!(
                "AUTO_INCREMENT ≥ {}",
                live.auto_increment
                    .map(|n| n.to_string())
                    .unwrap_or_else(|| "none".into())
            ),
            "the new table's counter is below the source's and would hand out ids again",
        ),
    ];
    for (name, x) in ["row count", "checksum", "definition", "AUTO_INCREMENT"]
        .iter()
        .zip(v.iter_mut())
    {
        x.check = name.to_string();
    }
    v
}

/// What failed, in one line.
pub(super) fn failed_verdicts(v: &[Verdict]) -> String {
    v.iter()
        .filter(|x| !x.passed)
        .map(|x| format!("{}: {} vs {}", x.check, x.observed, x.expected))
        .collect::<Vec<_>>()
        .join("; ")
}

pub(super) fn verify_step(info: &TableInfo, flags: &str, choice: verify::Choice) -> Step {
    let t = info.clone();
    let t2 = info.clone();
    let t3 = info.clone();
    let flags = flags.to_string();
    let (method, why) = verify::first_method(info, choice);
    let checks = match method {
        verify::Method::ChecksumTable => "rows, checksum",
        _ => "rows, row hash",
    };
    Step::new(step_id("verify", info), format!("Verify the copy of {} ({checks}, definition, AUTO_INCREMENT)", info.display()), Risk::Locking)
        .preview(match method {
            verify::Method::ChecksumTable => "the source's COUNT(*) against the rows the copy's one statement inserted (a chunked copy: the new table's COUNT(*)); CHECKSUM TABLE … EXTENDED of both tables, computed in the server (where the two differ — the engines checksum some tables differently — innops's row hash of both tables decides); SHOW CREATE TABLE of both".to_string(),
            m => match why {
                Some(w) => format!("innops's {m} over the base columns of both tables (it counts the rows too; CHECKSUM TABLE reads this table differently on the two engines: {w}), the new table read in two halves of its primary key at once; SHOW CREATE TABLE of both"),
                None => format!("innops's {m} over the base columns of both tables, as --verify hash asks (it counts the rows too), the new table read in two halves of its primary key at once; SHOW CREATE TABLE of both"),
            },
        })
        .pre(Check::after_prior("not converted yet", move |ctx| {
            Ok(if swapped(ctx, &t)? { Verdict::done("already swapped", "a shadow to verify") } else { Verdict::pass("shadow present", "a shadow to verify") })
        }))
        .act(move |ctx| {
            let t0 = std::time::Instant::now();
            let (v, source, ok) = verify_now(ctx, &t2, choice)?;
            // Where the step's time went: the new table's row hash is the read a verified copy adds.
            let shadow_hash_s = ctx.state::<Memo>().shadow_hash_s.remove(&t2.display());
            Ok(serde_json::json!({ "verdicts": v, "identical": ok, "source": source,
                "timing": { "total_s": t0.elapsed().as_secs_f64(), "shadow_hash_s": shadow_hash_s } }))
        })
        .post(Check::new("copy identical to the source", move |ctx| {
            let ok = ctx.state::<Memo>().verified.contains(&t3.display());
            let why = ctx
                .recorded_result(&step_id("verify", &t3))
                .and_then(|r| serde_json::from_value::<Vec<Verdict>>(r["verdicts"].clone()).ok())
                .map(|v| failed_verdicts(&v))
                .unwrap_or_default();
            Ok(Verdict::check(
                ok,
                if ok { "identical".to_string() } else if why.is_empty() { "not proven in this run".to_string() } else { format!("different ({why})") },
                "identical",
                format!("the copy differs from the source, so nothing was swapped and the source is untouched: `{}` drops innops's copy and converts again", restart_command(&flags, &t3)),
            ))
        }))
}

pub(super) fn swap_step(info: &TableInfo, flags: &str, choice: verify::Choice) -> Step {
    let old = qualified(&info.schema, &old_name(&info.name));
    let shadow = qualified(&info.schema, &shadow_name(&info.name));
    let t = info.clone();
    let t2 = info.clone();
    let t3 = info.clone();
    let flags = flags.to_string();
    Step::new(step_id("swap", info), format!("Swap {} atomically, keeping the MyISAM table as {}", info.display(), old_name(&info.name)), Risk::Locking)
        .preview(format!("RENAME TABLE {} TO {old}, {shadow} TO {}   -- queued behind the guard, then the guard lets go", info.qualified(), info.qualified()))
        .pre(Check::after_prior("verified in this run, under the guard", move |ctx| {
            if swapped(ctx, &t)? {
                return Ok(Verdict::done("already swapped", "verified"));
            }
            let verified = ctx.state::<Memo>().verified.contains(&t.display());
            Ok(Verdict::pass(if verified { "verified, guard held" } else { "will verify again first (the run was resumed)" }, "verified"))
        }))
        .act(move |ctx| {
            require_innodb_shadow(ctx, &t2, &flags)?;
            let verified = ctx.state::<Memo>().verified.contains(&t2.display());
            if !verified {
                let (v, _, ok) = verify_now(ctx, &t2, choice)?;
                if !ok {
                    copy::release_guard(ctx, &t2);
                    return Err(crate::error::refused(format!(
                        "the source changed since the copy ({}), so nothing was swapped and the source is untouched: `{}` drops innops's copy and converts again",
                        failed_verdicts(&v),
                        restart_command(&flags, &t2)
                    )));
                }
            }
            let source = ctx.state::<Memo>().source.get(&t2.display()).cloned();
            let tag = ctx.tag();
            let run_dir = ctx.run_dir.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
            // The kept table is recorded before the swap, with what was verified: `--drop-kept` proves it
            // unchanged against that, and `--all-myisam` knows to leave it alone.
            own::record(ctx.conn()?, &tag, &own::Record {
                kind: own::KEPT.into(),
                schema: t2.schema.clone(),
                name: old_name(&t2.name),
                of_table: t2.name.clone(),
                fingerprint: source.clone(),
                run_dir,
                origin: 0,
            })?;
            let mut r = match copy::swap(ctx, &t2, &old_name(&t2.name), &shadow_name(&t2.name), 60) {
                Ok(r) => r,
                Err(e) => {
                    let _ = own::forget(ctx.conn()?, &tag, &t2.schema, &old_name(&t2.name));
                    return Err(e);
                }
            };
            own::forget(ctx.conn()?, &tag, &t2.schema, &shadow_name(&t2.name))?;
            r["verified_source"] = source.map(serde_json::to_value).transpose()?.unwrap_or_default();
            Ok(r)
        })
        .post(Check::new("InnoDB in place, MyISAM kept as verified", move |ctx| {
            let tag = ctx.tag();
            let engine = engine_of(ctx, &t3.schema, &t3.name)?.unwrap_or_default();
            let kept = engine_of(ctx, &t3.schema, &old_name(&t3.name))?.unwrap_or_default();
            // Writes queued behind the guard land in the new table, so its count may differ by now; the kept
            // table is the source as verified, and nothing writes to it.
            let Some(verified) = verified_source(ctx, &t3) else {
                return Ok(Verdict::fail(
                    format!("{} is {engine}, {} is {kept}", t3.name, old_name(&t3.name)),
                    "InnoDB in place, MyISAM kept as verified",
                    "this run has no record of the verified source: compare the two tables before anything else",
                ));
            };
            let kept_rows = if kept.is_empty() {
                None
            } else {
                Some(verify::count_rows(ctx.conn()?, &tag, &t3.schema, &old_name(&t3.name), t3.primary().is_some())?)
            };
            Ok(Verdict::check(
                engine.eq_ignore_ascii_case("InnoDB") && kept.eq_ignore_ascii_case("MyISAM") && kept_rows == Some(verified.rows),
                format!("{} is {engine}, {} is {kept} ({} rows)", t3.name, old_name(&t3.name), kept_rows.map(|n| n.to_string()).unwrap_or_else(|| "missing".into())),
                format!("InnoDB in place, MyISAM kept with the {} rows verified", verified.rows),
                "the swap did not complete: check both tables before anything else",
            ))
        }))
}
