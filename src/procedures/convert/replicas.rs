//! A conversion on a primary, as its replicas see it: before anything is written, each replica must still hold
//! the MyISAM table and none of the names the conversion makes (a replica converted alone, with `--binlog
//! local`, would stop on the primary's first statement); before the swap, each must have applied the whole
//! copy and hold the same rows (counted and hashed there, under the primary's guard, so nothing moves); after
//! it, each must have swapped too. The replicas are reached through [`crate::procedures::kit::replicas`].

use super::*;
use crate::procedures::kit::replicas::{self as kit, Link};

/// The engine of `schema.table` on a replica, if the table exists there.
fn engine_there(
    conn: &mut mysql::Conn,
    schema: &str,
    table: &str,
) -> anyhow::Result<Option<String>> {
    Ok(conn
        .exec_first::<Option<String>, _, _>(
            "SELECT /* innops:convert:replicas */ ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
            (schema, table),
        )?
        .flatten())
}

/// What a replica holds of `t` before the primary's conversion: None when it can follow, else the reason.
fn not_ready(conn: &mut mysql::Conn, t: &TableInfo) -> anyhow::Result<Option<String>> {
    let engine = engine_there(conn, &t.schema, &t.name)?;
    let old = old_name(&t.name);
    let shadow = shadow_name(&t.name);
    Ok(match engine {
        None => Some(format!("it has no table {}", t.display())),
        Some(e) if e.eq_ignore_ascii_case("InnoDB") => Some(format!(
            "{} is InnoDB there already (converted on that replica alone, with --binlog local)",
            t.display()
        )),
        Some(_) => {
            if engine_there(conn, &t.schema, &old)?.is_some() {
                Some(format!("{}.{old} exists there", t.schema))
            } else if engine_there(conn, &t.schema, &shadow)?.is_some() {
                Some(format!("{}.{shadow} exists there (a conversion of it on that replica alone did not finish)", t.schema))
            } else {
                None
            }
        }
    })
}

/// Why innops could not build the indexes on a replica itself, prefixed with [`BUILD`]; None when it can.
const BUILD: &str = "index build: ";

fn cannot_build(c: &mut mysql::Conn, tag: &str, mariadb: bool) -> anyhow::Result<Option<String>> {
    if let Err(e) = c.query_drop(format!("SET {tag} SESSION sql_log_bin = 0")) {
        return Ok(Some(format!("{BUILD}the account may not keep its ALTER out of the binary log ({e}): it needs BINLOG ADMIN (SUPER before MariaDB 10.5)")));
    }
    c.query_drop(format!("SET {tag} SESSION sql_log_bin = 1"))?;
    let v = crate::procedures::kit::checks::read_only_writable(c, tag, mariadb)?;
    Ok((!v.passed).then(|| format!("{BUILD}{}", v.observed)))
}

/// The pre-flight's "replicas can follow": every replica reachable, holding the MyISAM table and none of the
/// conversion's names, and the table chunkable (one transaction would make them lag for its whole length).
pub(super) fn replicas_can_follow(
    info: &TableInfo,
    links: &[Link],
    flags: &str,
    builds_there: bool,
    mariadb: bool,
) -> Check {
    let (t, links, flags) = (info.clone(), links.to_vec(), flags.to_string());
    Check::new("replicas can follow", move |ctx| {
        let tag = ctx.tag();
        let labels: Vec<&str> = links.iter().map(|l| l.label.as_str()).collect();
        if t.primary().is_none() {
            return Ok(Verdict::fail(
                "no primary key",
                "a primary key to copy in chunks",
                format!("{} has no primary key, so its copy would reach the replicas ({}) as one transaction they apply only after it: add a primary key first, or convert each replica and then this server with --binlog local", t.display(), labels.join(", ")),
            ));
        }
        for l in &links {
            let mut c = l.connect()?;
            let why = match not_ready(&mut c, &t)? {
                Some(why) => Some(why),
                None if builds_there && t.deferred_indexes().next().is_some() => {
                    cannot_build(&mut c, &tag, mariadb)?
                }
                None => None,
            };
            if let Some(why) = why.as_ref().filter(|w| w.starts_with(BUILD)) {
                return Ok(Verdict::fail(
                    format!("replica {}: {why}", l.label),
                    "the MyISAM table, and an account that may build the indexes there",
                    format!("innops builds the secondary indexes on each replica itself, and cannot on replica {} ({}): fix that, or convert with --strategy deferred (one ALTER that each replica runs after the primary, lagging for its length)", l.label, why.trim_start_matches(BUILD)),
                ));
            }
            if let Some(why) = why {
                return Ok(Verdict::fail(
                    format!("replica {}: {why}", l.label),
                    "the MyISAM table, and none of the conversion's names",
                    format!("replica {} cannot apply this conversion ({why}), and replication there would stop on it: when the replicas were converted first with --binlog local, convert this server the same way (`innops convert --tables {} --binlog local --yes {flags} --execute`); otherwise make the replica match the primary first", l.label, shell_words::quote(&t.display())).replace("  ", " "),
                ));
            }
        }
        Ok(Verdict::pass(
            format!(
                "{} replica(s) hold the MyISAM table: {}",
                links.len(),
                labels.join(", ")
            ),
            "the MyISAM table, and none of the conversion's names",
        ))
    })
}

/// The chunked path's index step: once every replica has applied the whole copy, the secondary indexes are built
/// on the primary and on each replica at once, each server's ALTER kept out of its binary log (`sql_log_bin=0`):
/// no replica waits for the primary's ALTER to end before starting its own, so none lags behind it. Resumed,
/// it builds only where the indexes are missing, after any ALTER a killed run left running there has ended.
pub(super) fn parallel_index_step(
    info: &TableInfo,
    links: &[Link],
    mariadb: bool,
    stmts: Vec<String>,
    bound: Option<online::rows::LockBound>,
) -> Step {
    let labels: Vec<String> = links.iter().map(|l| l.label.clone()).collect();
    let mut step = Step::new(
        step_id("indexes", info),
        format!(
            "Build the secondary indexes of {} on the primary and on each replica at once",
            info.display()
        ),
        if bound.is_some() {
            Risk::Online
        } else {
            Risk::Locking
        },
    );
    for st in &stmts {
        step = step.preview(format!("{st}   -- on {} at once (SET SESSION sql_log_bin = 0 there, once each has applied the copy), and on the primary, logged: a no-op where the indexes exist, it builds them on a replica innops does not reach", labels.join(", ")));
    }
    let (t, t2, t3) = (info.clone(), info.clone(), info.clone());
    let (l1, l2, l3) = (links.to_vec(), links.to_vec(), links.to_vec());
    step.pre(Check::new("indexes missing", move |ctx| {
        let missing = servers_missing(ctx, &t, &l1)?;
        Ok(if missing.is_empty() || swapped(ctx, &t)? {
            Verdict::done("present on the primary and each replica", "missing")
        } else {
            Verdict::pass(format!("missing on {}", missing.join(", ")), "missing")
        })
    }))
    .act(move |ctx| build_everywhere(ctx, &t2, &l2, mariadb, &stmts, bound))
    .post(Check::new("same indexes as the source, on the primary and each replica", move |ctx| {
        let missing = servers_missing(ctx, &t3, &l3)?;
        Ok(Verdict::check(
            missing.is_empty(),
            if missing.is_empty() { "the source's indexes everywhere".to_string() } else { format!("different on {}", missing.join(", ")) },
            "the source's indexes, in its order, on every server",
            "a server's copy has other indexes than the source: read the ALTER statements and their errors in the run's journal, then resume",
        ))
    }))
}

/// The servers (`primary`, or a replica's label) whose shadow lacks the source's indexes.
fn servers_missing(ctx: &mut Ctx, t: &TableInfo, links: &[Link]) -> anyhow::Result<Vec<String>> {
    let tag = ctx.tag();
    let shadow = shadow_name(&t.name);
    let mut out = Vec::new();
    let have = index_step::index_lines(ctx, &t.schema, &shadow)?;
    if !index_step::index_differences(t, &have).is_empty() {
        out.push("the primary".to_string());
    }
    for l in links {
        let mut c = l.connect()?;
        let have = TableInfo::load(&mut c, &tag, &t.schema, &shadow)?
            .map(|i| i.definition.indexes)
            .unwrap_or_default();
        if !index_step::index_differences(t, &have).is_empty() {
            out.push(l.label.clone());
        }
    }
    Ok(out)
}

/// Wait on `c` until no ALTER of this run's index step runs there (one a killed run left behind).
fn wait_for_left_alters(c: &mut mysql::Conn, tag: &str) -> anyhow::Result<()> {
    let marker = tag
        .trim_start_matches("/* ")
        .trim_end_matches(" */")
        .to_string();
    loop {
        let n: Option<u64> = c.exec_first(
            "SELECT /* innops:convert:replicas */ COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE CONCAT('ALTER /* ', ?, ' */%')",
            (&marker,),
        )?;
        if n.unwrap_or(0) == 0 {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Build `stmts` (`IF NOT EXISTS` on every index) over `c`. On a replica (`local`) the ALTERs stay out of its
/// binary log and run only where the indexes are missing; on the primary they always run and are logged: a no-op
/// where the indexes exist, they reach every replica, so one innops did not reach (disconnected, or a replica of
/// a replica) builds them from the replicated statement instead of keeping none.
fn build_on(
    c: &mut mysql::Conn,
    tag: &str,
    t: &TableInfo,
    stmts: &[String],
    local: bool,
    bound: Option<online::rows::LockBound>,
    abort: &dyn Fn() -> bool,
) -> anyhow::Result<serde_json::Value> {
    let t0 = std::time::Instant::now();
    wait_for_left_alters(c, tag)?;
    let shadow = shadow_name(&t.name);
    let have = TableInfo::load(c, tag, &t.schema, &shadow)?
        .map(|i| i.definition.indexes)
        .unwrap_or_default();
    let missing = !index_step::index_differences(t, &have).is_empty();
    if local && !missing {
        return Ok(serde_json::json!({ "built": false, "seconds": 0.0 }));
    }
    if local {
        c.query_drop(format!("SET {tag} SESSION sql_log_bin = 0"))?;
    }
    let mut attempts = 0;
    for st in stmts {
        let sql = st.replacen("ALTER TABLE", &format!("ALTER {tag} TABLE"), 1);
        match bound {
            // Online: writes go on, so the ALTER's short exclusive phases wait a bounded time, retried.
            Some(b) => online::rows::with_bounded_lock(
                c,
                tag,
                b,
                &sql,
                &format!("finish the index build of {}", t.display()),
                abort,
                &mut attempts,
            )?,
            None => c.query_drop(sql)?,
        }
    }
    if local {
        c.query_drop(format!("SET {tag} SESSION sql_log_bin = 1"))?;
    }
    Ok(
        serde_json::json!({ "built": missing, "lock_attempts": attempts, "seconds": t0.elapsed().as_secs_f64() }),
    )
}

fn build_everywhere(
    ctx: &mut Ctx,
    t: &TableInfo,
    links: &[Link],
    mariadb: bool,
    stmts: &[String],
    bound: Option<online::rows::LockBound>,
) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    let t0 = std::time::Instant::now();
    // Every replica holds the whole copy before any server starts: the ALTERs then run side by side.
    let mut waited = Vec::new();
    let mut sessions = Vec::new();
    for l in links {
        let mut c = l.connect()?;
        waited.push(caught_up(ctx, l, &mut c, mariadb)?);
        sessions.push(c);
    }
    // Each replica's ALTER on the session that saw it catch up.
    let handles: Vec<_> = sessions
        .into_iter()
        .map(|mut c| {
            let (t, tag, stmts) = (t.clone(), tag.clone(), stmts.to_vec());
            std::thread::spawn(move || -> anyhow::Result<serde_json::Value> {
                // Ctrl-C stops the primary's build; a replica's ends on its own.
                build_on(&mut c, &tag, &t, &stmts, true, bound, &|| false)
            })
        })
        .collect();
    // Online: the triggers leave the shadow alone while it is built (verification compares the keys changed).
    let held = match bound {
        Some(_) => online::capture::hold(ctx.target, &tag, t)?,
        None => None,
    };
    let mut primary_conn = ctx.target.connect()?;
    let id = primary_conn.connection_id();
    let label = format!(
        "indexes {} (primary and {} replica(s))",
        t.display(),
        links.len()
    );
    let flag = ctx.abort;
    let abort = move || flag.load(std::sync::atomic::Ordering::SeqCst);
    let primary = copy::watch_progress(ctx.target, id, &label, 100, copy::Watch::Percent, || {
        build_on(&mut primary_conn, &tag, t, stmts, false, bound, &abort)
    });
    let shadow_writes_held = held.is_some();
    drop(held);
    let mut each = Vec::new();
    let mut failed = Vec::new();
    for (l, h) in links.iter().zip(handles) {
        match h
            .join()
            .map_err(|_| anyhow::anyhow!("the index thread panicked"))?
        {
            Ok(r) => each.push(serde_json::json!({ "replica": l.label, "result": r })),
            Err(e) => failed.push(format!("{}: {}", l.label, crate::error::display_of(&e))),
        }
    }
    let primary = match primary {
        Ok(r) => r,
        Err(e) => {
            failed.insert(0, format!("the primary: {}", crate::error::display_of(&e)));
            serde_json::Value::Null
        }
    };
    if !failed.is_empty() {
        let run = ctx
            .run_dir
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "RUN_DIR".into());
        return Err(crate::error::refused(format!(
            "building the indexes of {} failed on {}; the source is untouched everywhere: fix the cause, then `innops resume {run}` builds them where they are missing",
            qualified(&t.schema, &shadow_name(&t.name)),
            failed.join("; ")
        )));
    }
    Ok(
        serde_json::json!({ "statements": stmts, "waited_for_replicas_s": waited, "primary": primary, "replicas": each, "shadow_writes_held": shadow_writes_held, "seconds": t0.elapsed().as_secs_f64() }),
    )
}

/// Wait until `l` has applied everything the primary wrote so far; the seconds waited.
fn caught_up(ctx: &mut Ctx, l: &Link, c: &mut mysql::Conn, mariadb: bool) -> anyhow::Result<f64> {
    let pos = kit::position(ctx.conn()?, mariadb)?;
    kit::wait_applied(l, c, mariadb, &pos, ctx.abort)
}

/// After verification, under the guard: each replica applies the whole copy, and its shadow is counted and
/// hashed by the method the primary's shadow was, and must match it.
pub(super) fn replicas_verify_step(info: &TableInfo, links: &[Link], mariadb: bool) -> Step {
    let (t, t2, t3) = (info.clone(), info.clone(), info.clone());
    let links = links.to_vec();
    let n = links.len();
    let labels: Vec<String> = links.iter().map(|l| l.label.clone()).collect();
    Step::new(
        step_id("replicas-verify", info),
        format!("Wait for each replica to apply the copy of {}, and verify it there", info.display()),
        Risk::Read,
    )
    .preview(format!(
        "on each replica ({}): {}; then the new table's rows and checksum, as on the primary",
        labels.join(", "),
        if mariadb { "SELECT MASTER_GTID_WAIT(@@gtid_binlog_pos of the primary)" } else { "SELECT WAIT_FOR_EXECUTED_GTID_SET(@@gtid_executed of the primary)" }
    ))
    .pre(Check::after_prior("not converted yet", move |ctx| {
        Ok(if swapped(ctx, &t)? { Verdict::done("already swapped", "a shadow to verify") } else { Verdict::pass("shadow present", "a shadow to verify") })
    }))
    .act(move |ctx| {
        let t = &t2;
        let tag = ctx.tag();
        let shadow_t = shadow_name(&t.name);
        let primary = match ctx.state::<Memo>().shadow.get(&t.display()).cloned() {
            Some(fp) => fp,
            None => verify::fingerprint(ctx.conn()?, &tag, t, &shadow_t, verify::Method::RowXxh3)?,
        };
        let mut each = Vec::new();
        let mut primary_hash: Option<verify::Fingerprint> = None;
        for l in &links {
            let mut c = l.connect()?;
            let waited = caught_up(ctx, l, &mut c, mariadb)?;
            let mut there = verify::fingerprint(&mut c, &tag, t, &shadow_t, primary.method)?;
            let mut identical = there == primary;
            let mut decided = None;
            if !identical && primary.method == verify::Method::ChecksumTable {
                // CHECKSUM TABLE can differ between two InnoDB copies of the same rows (measured with generated
                // columns): as in verification, innops's row hash of both decides.
                let ours = match &primary_hash {
                    Some(h) => h.clone(),
                    None => verify::fingerprint(ctx.conn()?, &tag, t, &shadow_t, verify::Method::RowXxh3)?,
                };
                primary_hash = Some(ours.clone());
                decided = Some(format!("CHECKSUM TABLE {} there, {} here", there.checksum, primary.checksum));
                there = verify::fingerprint(&mut c, &tag, t, &shadow_t, verify::Method::RowXxh3)?;
                identical = there == ours;
            }
            each.push(serde_json::json!({
                "replica": l.label, "waited_s": waited, "rows": there.rows, "checksum": there.checksum,
                "identical": identical, "checksum_table_differed": decided,
            }));
        }
        Ok(serde_json::json!({ "primary": primary, "replicas": each }))
    })
    .post(Check::new("each replica holds the same copy", move |ctx| {
        let r = ctx.recorded_result(&step_id("replicas-verify", &t3)).unwrap_or_default();
        let primary: Option<verify::Fingerprint> = serde_json::from_value(r["primary"].clone()).ok();
        let each = r["replicas"].as_array().cloned().unwrap_or_default();
        let differ: Vec<String> = each
            .iter()
            .filter(|x| x["identical"] != serde_json::json!(true))
            .map(|x| format!("{}: {} rows, {}", x["replica"].as_str().unwrap_or("?"), x["rows"], x["checksum"].as_str().unwrap_or("?")))
            .collect();
        let ok = primary.is_some() && differ.is_empty() && each.len() == n;
        Ok(Verdict::check(
            ok,
            if ok { format!("{} replica(s) identical", each.len()) } else if differ.is_empty() { format!("{} of {n} replica(s) read", each.len()) } else { differ.join("; ") },
            primary.map(|p| format!("{} rows, {} {} on each replica", p.rows, p.method, p.checksum)).unwrap_or_else(|| "the primary's copy on each replica".into()),
            format!("a replica's copy of {} differs from the primary's, so nothing was swapped and the source is untouched everywhere: that replica had diverged from its primary (pt-table-checksum finds where); fix it, then `innops resume RUN_DIR`", t3.display()),
        ))
    }))
}

/// After the swap: each replica applies it, and holds the InnoDB table with the MyISAM one kept.
pub(super) fn replicas_swapped_step(info: &TableInfo, links: &[Link], mariadb: bool) -> Step {
    let (t, t2) = (info.clone(), info.clone());
    let links = links.to_vec();
    let n = links.len();
    Step::new(
        step_id("replicas-swapped", info),
        format!("Wait for each replica to apply the swap of {}", info.display()),
        Risk::Read,
    )
    .preview(format!(
        "on each replica ({}): wait for the primary's position, then read the engines of {} and {}",
        links.iter().map(|l| l.label.as_str()).collect::<Vec<_>>().join(", "),
        info.name,
        old_name(&info.name)
    ))
    .act(move |ctx| {
        let mut each = Vec::new();
        for l in &links {
            let mut c = l.connect()?;
            let waited = caught_up(ctx, l, &mut c, mariadb)?;
            let engine = engine_there(&mut c, &t.schema, &t.name)?.unwrap_or_default();
            let kept = engine_there(&mut c, &t.schema, &old_name(&t.name))?.unwrap_or_default();
            each.push(serde_json::json!({ "replica": l.label, "waited_s": waited, "engine": engine, "kept": kept }));
        }
        Ok(serde_json::json!({ "replicas": each }))
    })
    .post(Check::new("each replica swapped", move |ctx| {
        let r = ctx.recorded_result(&step_id("replicas-swapped", &t2)).unwrap_or_default();
        let each = r["replicas"].as_array().cloned().unwrap_or_default();
        let wrong: Vec<String> = each
            .iter()
            .filter(|x| !(x["engine"].as_str().is_some_and(|e| e.eq_ignore_ascii_case("InnoDB")) && x["kept"].as_str().is_some_and(|e| e.eq_ignore_ascii_case("MyISAM"))))
            .map(|x| format!("{}: {} is {}, {} is {}", x["replica"].as_str().unwrap_or("?"), t2.name, x["engine"].as_str().unwrap_or("?"), old_name(&t2.name), x["kept"].as_str().unwrap_or("missing")))
            .collect();
        let ok = wrong.is_empty() && each.len() == n;
        Ok(Verdict::check(
            ok,
            if ok { format!("{} replica(s): InnoDB in place, MyISAM kept", each.len()) } else { wrong.join("; ") },
            "InnoDB in place and MyISAM kept on each replica",
            "a replica did not apply the swap as the primary did: read its SHOW SLAVE STATUS before anything else",
        ))
    }))
}
