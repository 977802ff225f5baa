//! The copy step of the bulk and deferred paths: it waits for a calm server, takes the write guard, makes
//! innops's shadow, fills it (one statement or primary-key chunks) while the source's checksum is taken beside
//! it, and proves the shadow holds every row. Its pre-check, action and post-check share the shadow's life
//! cycle and the copy's outcome in [`Memo`], so they live together, apart from the plan that lists them.

use super::*;

/// What the copy step's action and post-check share: the table as planned, and how this run copies it.
#[derive(Clone)]
struct CopyJob {
    t: TableInfo,
    /// The shadow has the primary key only (the deferred path builds the other indexes after the copy).
    deferred: bool,
    /// Copied in primary-key chunks (deferred and chunked paths, a table with a primary key).
    in_chunks: bool,
    /// The path's name in the step's result.
    path: &'static str,
    choice: verify::Choice,
    settings: copy::ChunkSettings,
    flags: String,
    room: space::Where,
}

pub(super) fn copy_step(
    info: &TableInfo,
    strategy: Strategy,
    p: &ConvertParams,
    flags: &str,
    room: &space::Where,
    replicas: &[crate::procedures::kit::replicas::Link],
) -> Step {
    // The chunked path copies into a primary-key-only shadow too: its indexes are built on every server at once.
    let deferred = matches!(strategy, Strategy::Deferred | Strategy::Chunked);
    let in_chunks = deferred && info.primary().is_some();
    let shadow = qualified(&info.schema, &shadow_name(&info.name));
    let cols = copy::column_list(info);
    let job = CopyJob {
        t: info.clone(),
        deferred,
        in_chunks,
        path: if strategy == Strategy::Chunked {
            "chunked"
        } else {
            "deferred"
        },
        choice: p.verify,
        settings: copy::ChunkSettings {
            target_chunk: Duration::from_millis(p.chunk_ms),
            max_load: p.max_load.clone(),
            critical_load: p.critical_load.clone(),
            replicas: replicas.to_vec(),
            watch: p.watch.clone(),
        },
        flags: flags.to_string(),
        room: room.clone(),
    };
    let title = if !replicas.is_empty() && deferred {
        format!(
            "Copy {} in primary-key chunks into a primary-key-only InnoDB table, paused while a replica lags",
            info.display()
        )
    } else if deferred {
        format!(
            "Copy {} in primary-key chunks into a primary-key-only InnoDB table",
            info.display()
        )
    } else {
        format!(
            "Copy {} into an InnoDB table with every index, as one bulk insert",
            info.display()
        )
    };
    let mut step = Step::new(step_id("copy", info), title, Risk::Locking)
        .preview(format!("/* guard session */ FLUSH TABLES {} WITH READ LOCK   -- writes wait, reads go on, until the swap", info.qualified()))
        .preview(format!("CREATE TABLE {shadow} LIKE {}; ALTER TABLE {shadow} ENGINE=InnoDB{}{}", info.qualified(), info.innodb_fixups_sql(), if deferred { ", DROP INDEX … (secondary indexes come after the copy)" } else { "" }))
        .preview(if in_chunks {
            format!("INSERT INTO {shadow} ({cols}) SELECT {cols} FROM {} FORCE INDEX (PRIMARY) WHERE pk > last ORDER BY pk LIMIT chunk   -- repeated, ~{} ms per chunk{}", info.qualified(), p.chunk_ms, if replicas.is_empty() { String::new() } else { format!(", each its own transaction; paused while a replica lags more than {} s (SHOW SLAVE STATUS on each)", p.watch.max_lag_s) })
        } else {
            format!("SET unique_checks=0, foreign_key_checks=0; START TRANSACTION; INSERT INTO {shadow} ({cols}) SELECT {cols} FROM {} FORCE INDEX (PRIMARY); COMMIT", info.qualified())
        })
        .bench();
    let t = info.clone();
    step = step.pre(Check::new("not converted yet", move |ctx| {
        Ok(if swapped(ctx, &t)? {
            Verdict::done(
                format!(
                    "{} is InnoDB and {} is kept",
                    t.display(),
                    old_name(&t.name)
                ),
                "MyISAM",
            )
        } else {
            Verdict::pass("MyISAM", "MyISAM")
        })
    }));
    let post = job.clone();
    step.act(move |ctx| job.act(ctx))
        .post(Check::new("shadow has every row", move |ctx| {
            post.shadow_has_every_row(ctx)
        }))
}

/// What the copy and the source's checksum beside it gave, and how long each took.
struct Filled {
    copied: serde_json::Value,
    source: anyhow::Result<Fingerprint>,
    copy_s: f64,
    source_hash_s: f64,
    waited_for_hash_s: f64,
}

impl CopyJob {
    /// Wait for a calm server, take the guard, make the shadow and fill it; the step's recorded result.
    fn act(&self, ctx: &mut Ctx) -> anyhow::Result<serde_json::Value> {
        let t = &self.t;
        crate::testhooks::hold("before-guard");
        let t_start = std::time::Instant::now();
        // Wait for a calm server before blocking writes or creating anything.
        copy::wait_for_load(ctx, &self.settings)?;
        copy::acquire_guard(ctx, t)?;
        // A run killed mid-statement leaves that statement running on the server: stop it before reading
        // what the shadow holds.
        let reaped = copy::reap_orphans(ctx, t)?;
        let tag = ctx.tag();
        let has_pk = t.primary().is_some();
        let total = verify::count_rows(ctx.conn()?, &tag, &t.schema, &t.name, has_pk)?;
        if total == 0 && t.rows_estimate > 0 {
            copy::release_guard(ctx, t);
            return Err(crate::error::refused(format!(
                "{} held {} rows when the plan was made and holds none now: if they were deleted on purpose run the conversion again, otherwise check the table (an automatic repair can empty it) before converting",
                t.display(),
                t.rows_estimate
            )));
        }
        let chunked = self.in_chunks && has_pk;
        let created = self.make_shadow(ctx, &tag, chunked)?;
        // Nothing goes into a shadow that is not InnoDB (one left by an older run whose ALTER failed).
        require_innodb_shadow(ctx, t, &self.flags)?;
        let prepare_s = t_start.elapsed().as_secs_f64();
        let filled = self.fill(ctx, &tag, total, chunked)?;
        crate::testhooks::hold("after-copy");
        // One statement in one transaction: the server's count of the rows it inserted, against the source's
        // count under the guard, is the copy's outcome (the post-check uses it instead of reading the shadow
        // again; verification reads every row next).
        if let Some(n) = filled.copied.get("rows_inserted").and_then(|v| v.as_u64()) {
            ctx.state::<Memo>().inserted.insert(
                t.display(),
                Inserted {
                    inserted: n,
                    source_rows: total,
                },
            );
        }
        let source = filled.source?;
        ctx.state::<Memo>().source.insert(t.display(), source);
        Ok(serde_json::json!({
            "created": created,
            "source_rows": total,
            "copy": filled.copied,
            "stopped_orphans": reaped,
            // Where the step's time goes: before the copy (load, guard, shadow), the copy, the source's hash
            // beside it, and any wait for that hash after the copy ended.
            "timing": { "prepare_s": prepare_s, "copy_s": filled.copy_s, "source_hash_s": filled.source_hash_s, "waited_for_hash_s": filled.waited_for_hash_s },
        }))
    }

    /// An empty shadow for a one-statement copy, or the shadow a chunked copy continues, recorded as innops's
    /// own before it is made; the statements that dropped and made it.
    fn make_shadow(&self, ctx: &mut Ctx, tag: &str, chunked: bool) -> anyhow::Result<Vec<String>> {
        let t = &self.t;
        let shadow_t = shadow_name(&t.name);
        let has_pk = t.primary().is_some();
        let mut created = Vec::new();
        if engine_of(ctx, &t.schema, &shadow_t)?.is_some() && !chunked {
            // One statement fills the shadow whole: whatever an interrupted run left in it goes first.
            let rows = verify::count_rows(ctx.conn()?, tag, &t.schema, &shadow_t, has_pk)?;
            if rows > 0 {
                let drop = format!("DROP {tag} TABLE {}", qualified(&t.schema, &shadow_t));
                ctx.conn()?.query_drop(&drop)?;
                created.push(drop);
            }
        }
        if engine_of(ctx, &t.schema, &shadow_t)?.is_none() {
            // Recorded first: a crash between the two leaves a record of a table that does not exist, never
            // a shadow innops would not know as its own.
            let run_dir = ctx
                .run_dir
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            own::record(
                ctx.conn()?,
                tag,
                &own::Record {
                    kind: own::SHADOW.into(),
                    schema: t.schema.clone(),
                    name: shadow_t.clone(),
                    of_table: t.name.clone(),
                    fingerprint: None,
                    run_dir,
                    origin: 0,
                },
            )?;
            let made = copy::create_shadow(ctx.conn()?, tag, t, self.deferred);
            if made.is_err() {
                copy::release_guard(ctx, t);
            }
            created.extend(made?);
        }
        Ok(created)
    }

    /// Copy the rows into the shadow while another session checksums the source beside it (the source cannot
    /// change under the guard). A copy that fails says why, in terms of space where that is the cause.
    fn fill(&self, ctx: &mut Ctx, tag: &str, total: u64, chunked: bool) -> anyhow::Result<Filled> {
        let t = &self.t;
        let shadow_t = shadow_name(&t.name);
        let has_pk = t.primary().is_some();
        let (method, _) = verify::first_method(t, self.choice);
        let target = ctx.target.clone();
        let t2 = t.clone();
        let tag2 = tag.to_string();
        let side = std::thread::spawn(move || -> anyhow::Result<(Fingerprint, f64)> {
            let t0 = std::time::Instant::now();
            let mut c = target.connect()?;
            let fp = verify::fingerprint(&mut c, &tag2, &t2, &t2.name, method)?;
            Ok((fp, t0.elapsed().as_secs_f64()))
        });
        let copy_start = std::time::Instant::now();
        let copied = if chunked {
            copy::copy_chunked(ctx, t, total, &self.settings)
        } else {
            // One statement cannot pause midway: the load was checked just before.
            if has_pk {
                copy::copy_bulk(ctx, t, total)
            } else {
                copy::copy_whole(ctx, t)
            }
        };
        let copy_s = copy_start.elapsed().as_secs_f64();
        // The chunked path fills a shadow with every index; the deferred one a primary-key-only shadow.
        let copied = copied.map(|mut c| {
            if chunked {
                c["path"] = serde_json::json!(self.path);
            }
            c
        });
        let source = side
            .join()
            .map_err(|_| anyhow::anyhow!("the checksum thread panicked"))?;
        let copied = copied.map_err(|e| {
            let run = ctx.run_dir.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "RUN_DIR".into());
            space::explain(
                e,
                t,
                &self.room,
                &format!("copying it into {}", qualified(&t.schema, &shadow_t)),
                &format!("continue with `innops resume {run}` (innops's copy {shadow_t} is kept for it; `{}` starts over)", restart_command(&self.flags, t)),
                false,
            )
        })?;
        let (source, source_hash_s) = match source {
            Ok((fp, secs)) => (Ok(fp), secs),
            Err(e) => (Err(e), 0.0),
        };
        let waited_for_hash_s = (copy_start.elapsed().as_secs_f64() - copy_s).max(0.0);
        Ok(Filled {
            copied,
            source,
            copy_s,
            source_hash_s,
            waited_for_hash_s,
        })
    }

    /// The post-check: the shadow holds as many rows as the source, by the server's own count of the one
    /// statement's inserts when this process made them under the guard it still holds, else by counting both.
    fn shadow_has_every_row(&self, ctx: &mut Ctx) -> anyhow::Result<Verdict> {
        let (t, flags, room) = (&self.t, &self.flags, &self.room);
        let tag = ctx.tag();
        let has_pk = t.primary().is_some();
        let shadow_t = shadow_name(&t.name);
        if engine_of(ctx, &t.schema, &shadow_t)?.is_none() {
            return Ok(Verdict::fail(
                format!("{shadow_t} does not exist"),
                "a copy of every row",
                "the copy has not started: the step runs again",
            ));
        }
        // Copied in one statement in this process, under the guard: the server said how many rows it inserted.
        // Otherwise (a chunked copy, or a resumed run) count both tables.
        let reported = match ctx.state::<Memo>().inserted.get(&t.display()).copied() {
            Some(i) if copy::guard_held(ctx, t) => Some((i.source_rows, i.inserted)),
            _ => None,
        };
        let (src, dst, said) = match reported {
            Some((src, dst)) => {
                // What the server said it inserted, and one look that the shadow really holds rows (a bulk
                // insert the server undid at commit reported every row inserted). Verification compares the two
                // tables in full next.
                let any: Option<u8> = ctx.conn()?.query_first(format!(
                    "SELECT {tag} 1 FROM {} LIMIT 1",
                    qualified(&t.schema, &shadow_t)
                ))?;
                let dst = if any.is_none() { 0 } else { dst };
                (src, dst, "rows inserted, as the server reported")
            }
            None => (
                verify::count_rows(ctx.conn()?, &tag, &t.schema, &t.name, has_pk)?,
                verify::count_rows(ctx.conn()?, &tag, &t.schema, &shadow_t, has_pk)?,
                "rows",
            ),
        };
        // The server said it inserted rows, and the shadow holds none: the bulk insert was undone at COMMIT.
        let undone = reported.is_some_and(|(_, n)| n > 0) && dst == 0 && src > 0;
        let run = ctx
            .run_dir
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "RUN_DIR".into());
        Ok(Verdict::check(
            src == dst,
            format!("{dst} {said}"),
            format!("{src} rows"),
            if dst > src {
                // More rows than the source: resuming would only add to them. Start over.
                format!(
                    "{}.{shadow_t} holds more rows than the source (rows were deleted from {} since the copy, or the copy was written to): `{}` drops innops's copy and converts again",
                    t.schema,
                    t.display(),
                    restart_command(flags, t)
                )
            } else if undone {
                space::undone_at_commit(t, room, &format!("`innops resume {run}` copies again"))
            } else {
                format!("the copy is incomplete: `innops resume {run}` continues it")
            },
        ))
    }
}
