//! MyISAM → InnoDB, by the fastest correct path for the server at hand, verified before anything is swapped.
//!
//! - **bulk**: where the server sorts index entries during a bulk insert into an empty table (MariaDB's
//!   `innodb_alter_copy_bulk=ON`), one `INSERT … SELECT` in one transaction into a shadow that has every index.
//! - **deferred**: where the server inserts row by row, a primary-key-only shadow filled in primary-key chunks
//!   (resumable after a crash), then every secondary index in one ALTER.
//! - **chunked**: on a primary with replicas, a shadow with every index filled in primary-key chunks, each its own
//!   transaction, paused while a replica lags (one bulk transaction reaches a replica only when it is whole,
//!   and it lags for as long as it takes to apply); each replica is verified before and after the swap.
//! - **alter**: a plain `ALTER TABLE … ENGINE=InnoDB` under `LOCK TABLES … WRITE`, checked against the checksum
//!   taken before; it keeps no old table.
//!
//! The first two hold a write guard on the source from the copy to the swap (reads go on), verify row count,
//! checksum, indexes, AUTO_INCREMENT, collation and comment, and then swap atomically, keeping the source as
//! `_<table>_myisam_old` unless `--drop-old-table`. shared/FACTS.md §1 has the measurements behind the choice.

mod alter;
pub mod copy;
mod copy_step;
pub mod definition;
pub mod drop_kept;
mod drop_steps;
pub mod duplicates;
mod index_step;
pub mod keys;
mod memory;
pub mod online;
pub mod own;
mod preflight;
mod privileges;
mod replicas;
mod resolve;
pub mod rollback;
pub mod scan;
pub mod schema;
pub mod space;
mod verified_swap;
pub mod verify;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::sql::Queryable;
use serde::{Deserialize, Serialize};

use crate::error::{bad_input, post_check};
use crate::plan::guard::Threshold;
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::server::facts::ServerFacts;
use crate::sql::qualified;
use crate::units::format_size;
use copy::{old_name, shadow_name};
use schema::{TableInfo, SYSTEM_SCHEMAS};
use verify::Fingerprint;

use alter::alter_step;
use copy_step::copy_step;
use drop_steps::{discard_step, drop_old_step};
use index_step::{index_step, set_aside};
pub use privileges::needed_privileges;
use privileges::privileges;
pub use resolve::{parse_table_arg, resolve, Resolved};
use verified_swap::{swap_step, verify_step};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    Auto,
    Bulk,
    Deferred,
    Alter,
    Chunked,
    Online,
}

impl Strategy {
    pub fn parse(s: &str) -> anyhow::Result<Strategy> {
        Ok(match s {
            "auto" => Strategy::Auto,
            "bulk" => Strategy::Bulk,
            "deferred" => Strategy::Deferred,
            "alter" => Strategy::Alter,
            "chunked" => Strategy::Chunked,
            "online" => Strategy::Online,
            other => {
                return Err(bad_input(format!(
                "--strategy '{other}' is not one of auto, bulk, deferred, chunked, online, alter"
            )))
            }
        })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ConvertParams {
    /// Resolved `(schema, table)` pairs, so a resumed run works on the same tables.
    pub tables: Vec<(String, String)>,
    pub strategy: Strategy,
    pub drop_old: bool,
    pub chunk_ms: u64,
    pub max_load: Threshold,
    pub critical_load: Threshold,
    /// Tables named but skipped, with the reason.
    pub skipped: Vec<String>,
    /// `--restart`: drop innops's own leftover shadow of an interrupted run and copy again.
    #[serde(default)]
    pub restart: bool,
    /// The tables as the plan described them (filled in by [`plan`], recorded in `plan.json`): a run resumed
    /// while the server is down — a playbook killed between a redo's shutdown and its start — builds the same
    /// steps from them. Every step still judges the live table when it runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub described: Vec<TableInfo>,
    /// `--verify`: how the copy is proven before the swap (plans recorded before it verify as `auto`).
    #[serde(default)]
    pub verify: verify::Choice,
    /// `--binlog`: where the writes go; None takes the default for the server's place in its topology.
    #[serde(default)]
    pub binlog: Option<crate::procedures::kit::binlog::Mode>,
    /// `--yes`: a local run on a primary with replicas was confirmed.
    #[serde(default)]
    pub yes: bool,
    /// `--max-lag`, `--critical-lag`, `--replica`: the replicas a run on a primary watches.
    #[serde(default)]
    pub watch: crate::procedures::kit::replicas::Watch,
    /// `--online-above`, `--cutover-lock-wait`: the online path's settings.
    #[serde(default)]
    pub online: online::OnlineSettings,
}

/// The path on a primary whose replicas will apply the copy: chunks, never one transaction of the whole table.
pub fn choose_with_replicas(
    strategy: Strategy,
    facts: &ServerFacts,
    replicas: usize,
) -> anyhow::Result<(Strategy, String)> {
    if replicas == 0 {
        return Ok(choose(strategy, facts));
    }
    match strategy {
        Strategy::Auto | Strategy::Chunked => Ok((
            Strategy::Chunked,
            format!("{} replica(s) apply this server's writes: the copy goes in primary-key chunks, each its own transaction, into a primary-key-only shadow, paused while a replica lags more than --max-lag (one bulk transaction would reach them only when whole, and they would lag for as long as it takes to apply); then innops builds the secondary indexes on this server and on each replica at once, each ALTER kept out of the binary log, so no replica waits for the primary's ALTER", replicas),
        )),
        Strategy::Deferred => Ok((
            Strategy::Deferred,
            format!("--strategy deferred was asked for: the copy goes in primary-key chunks, but the secondary indexes are built by one ALTER that each of the {replicas} replica(s) runs after this server, lagging for its length"),
        )),
        Strategy::Online => Ok((
            Strategy::Online,
            format!("--strategy online was asked for: writes go on; the copy's chunks pause while any of the {replicas} replica(s) lags more than --max-lag, and the replicas apply the triggers' writes and the index build as they come"),
        )),
        Strategy::Bulk | Strategy::Alter => Err(crate::error::refused(format!(
            "--strategy {} writes the whole table in one statement, which each of this primary's {replicas} replica(s) applies only after it, lagging for its whole length: use --strategy auto (chunked, paused while a replica lags), or convert each replica and then this server with --binlog local",
            if strategy == Strategy::Bulk { "bulk" } else { "alter" }
        ))),
    }
}

/// The path `auto` takes on this server, and why. Decided by capability, not version number.
pub fn choose(strategy: Strategy, facts: &ServerFacts) -> (Strategy, String) {
    match strategy {
        Strategy::Auto => match facts.var("innodb_alter_copy_bulk") {
            Some(v) if v.eq_ignore_ascii_case("ON") => (
                Strategy::Bulk,
                "innodb_alter_copy_bulk=ON: this server sorts index entries during a bulk insert into an empty table, so one INSERT … SELECT into a fully indexed shadow is fastest".into(),
            ),
            Some(_) => (
                Strategy::Deferred,
                "innodb_alter_copy_bulk=OFF: this server inserts row by row, so innops copies into a primary-key-only shadow and builds the secondary indexes afterwards".into(),
            ),
            None => (
                Strategy::Deferred,
                "this server has no bulk insert path (no innodb_alter_copy_bulk), so innops copies into a primary-key-only shadow and builds the secondary indexes afterwards".into(),
            ),
        },
        other => (other, format!("--strategy {} was asked for", serde_json::to_value(other).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default())),
    }
}

fn load(ctx: &mut Ctx, schema: &str, table: &str) -> anyhow::Result<Option<TableInfo>> {
    let tag = ctx.tag();
    TableInfo::load(ctx.conn()?, &tag, schema, table)
}

fn engine_of(ctx: &mut Ctx, schema: &str, table: &str) -> anyhow::Result<Option<String>> {
    let tag = ctx.tag();
    let e: Option<Option<String>> = ctx.conn()?.exec_first(
        format!("SELECT {tag} ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"),
        (schema, table),
    )?;
    Ok(e.flatten())
}

/// The shadow is an InnoDB table: otherwise the guard is let go and the step refused, naming what the shadow
/// is and the command that drops it and starts over.
fn require_innodb_shadow(ctx: &mut Ctx, info: &TableInfo, flags: &str) -> anyhow::Result<()> {
    let shadow = shadow_name(&info.name);
    let found = engine_of(ctx, &info.schema, &shadow)?;
    if found
        .as_deref()
        .is_some_and(|e| e.eq_ignore_ascii_case("InnoDB"))
    {
        return Ok(());
    }
    copy::release_guard(ctx, info);
    Err(crate::error::refused(format!(
        "{}.{shadow} is {}, not InnoDB, so innops will neither copy into it nor swap it in (the source {} is untouched): `{}` drops innops's copy and converts again",
        info.schema,
        found.map(|e| format!("a {e} table")).unwrap_or_else(|| "missing".into()),
        info.display(),
        restart_command(flags, info)
    )))
}

/// The conversion already happened: the table is InnoDB and the old one is kept.
fn swapped(ctx: &mut Ctx, info: &TableInfo) -> anyhow::Result<bool> {
    Ok(
        engine_of(ctx, &info.schema, &info.name)?.is_some_and(|e| e.eq_ignore_ascii_case("InnoDB"))
            && engine_of(ctx, &info.schema, &old_name(&info.name))?.is_some(),
    )
}

/// The command that drops innops's own copy of `t` and converts it again, with the user's connection flags.
fn restart_command(flags: &str, t: &TableInfo) -> String {
    format!(
        "innops convert --tables {} --restart {flags} --execute",
        shell_words::quote(&t.display())
    )
    .replace("  ", " ")
}

/// Build the conversion plan.
pub fn plan(p: &ConvertParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    use crate::procedures::kit::{binlog, replicas as kit_replicas};
    let binlog = binlog::decide(p.binlog, &facts.topology, p.yes, "the conversion")
        .map_err(crate::error::refused)?;
    // The replicas that will apply the copy: watched for lag, verified before and after the swap.
    let links = if binlog.mode == binlog::Mode::Replicate
        && (facts.topology.role() == crate::server::topology::Role::Primary
            || !p.watch.named.is_empty())
        && !p.tables.is_empty()
    {
        kit_replicas::of_plan(env, &facts.topology, &p.watch.named)
            .map_err(crate::error::refused)?
    } else {
        Vec::new()
    };
    let (strategy, why) = choose_with_replicas(p.strategy, facts, links.len())?;
    let mut notes = path_notes(p, strategy, &why)?;
    notes.push(binlog.note.clone());
    let mut conn = match env.target.connect() {
        Ok(c) => Some(c),
        Err(_) if p.described.len() == p.tables.len() && !p.tables.is_empty() => {
            notes.push("the server is down: the steps are built from the tables as this run described them when it started; each step judges the live table when it runs".into());
            None
        }
        Err(e) => return Err(e),
    };
    let flags = env.flags();
    let room = room(facts, env);
    let mut steps = Vec::new();
    let described = describe(p, &mut conn)?;
    for info in &described {
        let strategy = match (p.strategy, strategy, conn.as_mut()) {
            // auto: the online path for a large table, or one the application is writing.
            (Strategy::Auto, _, Some(c)) if info.primary().is_some() => {
                match online::auto_reason(c, info, &p.online)? {
                    Some(why) => {
                        notes.push(format!("{}: path online — {why}", info.display()));
                        Strategy::Online
                    }
                    None => strategy,
                }
            }
            _ => strategy,
        };
        notes.extend(table_notes(info, strategy));
        steps.push(preflight::preflight(info, strategy, facts, env, p, &links));
        if p.restart && strategy != Strategy::Alter {
            steps.push(discard_step(info));
        }
        steps.extend(path_steps(info, strategy, p, facts, &flags, &room, &links));
        steps.push(analyze_step(info));
    }
    // Each table's steps are a group: a table refused in its pre-flight does not hold back the others.
    for st in steps.iter_mut() {
        if let Some((_, table)) = st.id.split_once(':') {
            st.group = Some(table.to_string());
        }
    }
    let bench = match (env.bench_time, p.tables.first()) {
        (Some(t), Some((s, n))) => Some(crate::bench::PlanBench {
            workload: format!("table:{s}.{n}"),
            ..crate::bench::PlanBench::read_only(Duration::from_secs(t))
        }),
        _ => None,
    };
    let recorded = ConvertParams {
        described,
        ..p.clone()
    };
    Ok(Plan {
        header: env.header(
            crate::plan::Procedure::Convert,
            facts,
            serde_json::to_value(recorded)?,
            notes,
        ),
        steps,
        bench,
        locks: p
            .tables
            .iter()
            .map(|(s, t)| format!("table:{s}.{t}"))
            .collect(),
        session: binlog.session,
    })
}

/// A table's steps after its pre-flight (and `--restart`'s discard), by path.
fn path_steps(
    info: &TableInfo,
    strategy: Strategy,
    p: &ConvertParams,
    facts: &ServerFacts,
    flags: &str,
    room: &space::Where,
    links: &[crate::procedures::kit::replicas::Link],
) -> Vec<Step> {
    let mut out = Vec::new();
    match strategy {
        Strategy::Alter => out.push(alter_step(info, room)),
        Strategy::Online => {
            let mariadb = facts.flavor == crate::server::facts::Flavor::MariaDB;
            out.push(online::capture_step(info, p));
            out.push(online::walk_step(info, p, flags, links));
            if online::deferred(info) && info.deferred_indexes().next().is_some() {
                // With replicas (MariaDB: every index takes IF NOT EXISTS), each builds at once with the
                // primary instead of lagging behind its replicated ALTER for the build's whole length.
                match copy::index_statements_if_not_exists(info)
                    .filter(|_| mariadb && !links.is_empty())
                {
                    Some(stmts) => out.push(replicas::parallel_index_step(
                        info,
                        links,
                        mariadb,
                        online::online_statements(stmts),
                        Some(p.online.bound()),
                    )),
                    None => out.push(online::index_step(info, p, mariadb)),
                }
            }
            // No comparison on the replicas: their tables change with every write, and a lock there that could
            // hold them still (FLUSH TABLES … WITH READ LOCK, LOCK TABLES … READ) was measured to fail the applier's
            // event group with a deadlock, whose retry applied the group's MyISAM rows twice (docs/convert.md).
            out.push(online::verify_step(info, p, flags));
            out.push(online::cutover_step(info, p, flags));
            if !links.is_empty() {
                out.push(replicas::replicas_swapped_step(info, links, mariadb));
            }
            if p.drop_old {
                out.push(drop_old_step(info));
            }
        }
        _ => {
            out.push(copy_step(info, strategy, p, flags, room, links));
            let mariadb = facts.flavor == crate::server::facts::Flavor::MariaDB;
            if info.deferred_indexes().next().is_some() {
                match strategy {
                    Strategy::Deferred => out.push(index_step(info, room)),
                    Strategy::Chunked if !links.is_empty() => {
                        // Only where every index takes IF NOT EXISTS (MariaDB): the primary's logged ALTER is
                        // then a no-op on the replicas that built ahead. Otherwise one replicated ALTER.
                        match copy::index_statements_if_not_exists(info).filter(|_| mariadb) {
                            Some(stmts) => out.push(replicas::parallel_index_step(
                                info, links, mariadb, stmts, None,
                            )),
                            None => out.push(index_step(info, room)),
                        }
                    }
                    Strategy::Chunked => out.push(index_step(info, room)),
                    _ => {}
                }
            }
            out.push(verify_step(info, flags, p.verify));
            if !links.is_empty() {
                out.push(replicas::replicas_verify_step(info, links, mariadb));
            }
            out.push(swap_step(info, flags, p.verify));
            if !links.is_empty() {
                out.push(replicas::replicas_swapped_step(info, links, mariadb));
            }
            if p.drop_old {
                out.push(drop_old_step(info));
            }
        }
    }
    out
}

/// The plan's opening notes: the path and why, the tables skipped, and what users will notice.
fn path_notes(p: &ConvertParams, strategy: Strategy, why: &str) -> anyhow::Result<Vec<String>> {
    let mut notes = if p.tables.is_empty() {
        // --all-myisam after the work is done: nothing to plan, and that is a success.
        vec!["nothing to convert: no MyISAM table is left outside the system schemas".to_string()]
    } else {
        vec![format!(
            "path: {} — {why}",
            serde_json::to_value(strategy)?.as_str().unwrap_or("")
        )]
    };
    notes.extend(p.skipped.iter().cloned());
    match strategy {
        _ if p.tables.is_empty() => {}
        Strategy::Alter => notes.push(
            "users will notice: reads and writes of each table wait for its whole conversion (LOCK TABLES … WRITE around the ALTER), and there is no old table to roll back to".into(),
        ),
        Strategy::Online => notes.push(format!(
            "users will notice: writes to each table go on; each waits at most for one copy chunk (~{} ms) or one try at the cut-over's guard ({} s), and until the swap every write to the table also writes innops's copy and change log through three triggers; the old table is kept, so `innops convert --rollback db.t` can swap back",
            p.chunk_ms, p.online.lock_wait_s
        )),
        _ => notes.push(
            "users will notice: writes to each table wait from the copy to the swap (reads go on); the old table is kept, so `innops convert --rollback db.t` can swap back".into(),
        ),
    }
    Ok(notes)
}

/// Where a copy's bytes go, for the sentence of a copy that runs out of space.
fn room(facts: &ServerFacts, env: &PlanEnv) -> space::Where {
    space::Where {
        datadir: facts
            .var("datadir")
            .filter(|_| env.target.local)
            .map(std::path::PathBuf::from),
        tmpdir: facts
            .var("tmpdir")
            .filter(|_| env.target.local)
            .and_then(|d| d.split(':').next())
            .filter(|d| !d.is_empty())
            .map(std::path::PathBuf::from),
        file_per_table: facts.var_on("innodb_file_per_table"),
        data_file_path: facts.var("innodb_data_file_path").unwrap_or("").to_string(),
    }
}

/// The tables as they are now, from `conn`; without one (the server is down), as the run described them when
/// it started. After a swap (resume) a table is described as it was: the kept old table.
fn describe(p: &ConvertParams, conn: &mut Option<mysql::Conn>) -> anyhow::Result<Vec<TableInfo>> {
    let tag = "/* innops:convert:plan */";
    let mut described = Vec::new();
    for (schema, table) in &p.tables {
        let Some(conn) = conn.as_mut() else {
            let info = p
                .described
                .iter()
                .find(|i| &i.schema == schema && &i.name == table)
                .cloned()
                .ok_or_else(|| {
                    bad_input(format!(
                        "the run recorded no description of {schema}.{table} and the server is down: start the server, then resume"
                    ))
                })?;
            described.push(info);
            continue;
        };
        let info = match TableInfo::load(conn, tag, schema, table)? {
            Some(i) => i,
            None => {
                return Err(bad_input(format!(
                "the table {schema}.{table} no longer exists: run the conversion again without it"
            )))
            }
        };
        // After a swap (resume), describe the table as it was: the kept old table.
        let info = if info.engine.eq_ignore_ascii_case("InnoDB") {
            TableInfo::load(conn, tag, schema, &old_name(table))?
                .map(|mut old| {
                    old.name = table.clone();
                    old
                })
                .unwrap_or(info)
        } else {
            info
        };
        described.push(info);
    }
    Ok(described)
}

/// What InnoDB takes differently from `info`'s MyISAM definition, said before anything runs.
fn table_notes(info: &TableInfo, strategy: Strategy) -> Vec<String> {
    let mut notes = Vec::new();
    let ignored: Vec<String> = definition::MYISAM_ONLY_OPTIONS
        .iter()
        .filter_map(|k| info.definition.option(k).map(|v| format!("{k}={v}")))
        .collect();
    if !ignored.is_empty() {
        notes.push(format!(
            "{}: {} stay in the definition, and InnoDB ignores them",
            info.display(),
            ignored.join(", ")
        ));
    }
    let old_temporal = info.definition.old_temporal_columns();
    if !old_temporal.is_empty() {
        notes.push(format!(
            "{}: column(s) {} are in the temporal format of before MySQL 5.6 (marked `/* mariadb-5.3 */` in SHOW CREATE TABLE); the InnoDB table stores them in the current format, as ALTER TABLE … ENGINE=InnoDB does, and verification compares their values, not the marker",
            info.display(),
            old_temporal.join(", ")
        ));
    }
    let hashed = info.definition.hash_keys();
    if !hashed.is_empty() {
        notes.push(format!(
            "{}: the UNIQUE key(s) {} are hash keys in MyISAM; InnoDB makes a B-tree of each that fits (at most 3072 bytes), as ALTER TABLE … ENGINE=InnoDB does, and sorts it among the unique keys",
            info.display(),
            hashed.join(", ")
        ));
    }
    let aria = info.definition.aria_options();
    if !aria.is_empty() {
        notes.push(format!(
            "{}: {} are left from an Aria table (MyISAM ignores them): the InnoDB table gets neither, and verification sets them aside",
            info.display(),
            aria.join(", ")
        ));
    }
    if let Some(f) = info.definition.foreign_row_format() {
        notes.push(format!(
            "{}: ROW_FORMAT={f} is not an InnoDB row format: the InnoDB table gets ROW_FORMAT=DEFAULT, and verification sets the row format aside",
            info.display()
        ));
    }
    if info.secondaries_kept_in_shadow() > 0
        && matches!(
            strategy,
            Strategy::Deferred | Strategy::Chunked | Strategy::Online
        )
    {
        notes.push(format!(
            "{}: the AUTO_INCREMENT column leads only a secondary index, which InnoDB needs from the start: the shadow keeps the first {} secondary index(es) during the copy",
            info.display(),
            info.secondaries_kept_in_shadow()
        ));
    }
    notes
}

/// What convert's steps leave for later steps of the same process ([`Ctx::state`]), each keyed by the table's
/// display name (`db.t`). A crash forgets it: every reader copes with its absence, as after `resume`.
#[derive(Default)]
struct Memo {
    /// The table as each step first read it ([`fresh`]), by step id and table.
    fresh: BTreeMap<(String, String), TableInfo>,
    /// The source's fingerprint: taken beside the copy under the guard, or by verification.
    source: BTreeMap<String, Fingerprint>,
    /// The shadow's fingerprint as verification took it: each replica's shadow must match it.
    shadow: BTreeMap<String, Fingerprint>,
    /// What the copy's one statement inserted, against the source's count under the guard.
    inserted: BTreeMap<String, Inserted>,
    /// Seconds verification spent on the new table's row hash, for the verify step's timing.
    shadow_hash_s: BTreeMap<String, f64>,
    /// Tables whose shadow was verified against the source under the guard this process holds; a verification
    /// holds only while the guard does ([`copy::release_guard`]).
    verified: BTreeSet<String>,
    /// The fingerprints taken before and after the alter path's ALTER, under its lock.
    alter: BTreeMap<String, (Fingerprint, Fingerprint)>,
}

/// The server's count of the rows the copy's one statement inserted, and the source's count under the guard.
#[derive(Debug, Clone, Copy)]
struct Inserted {
    inserted: u64,
    source_rows: u64,
}

/// The table as it is now, read once per step: pre-flight checks judge the live table, not the one the plan
/// was built from.
fn fresh(ctx: &mut Ctx, t: &TableInfo) -> anyhow::Result<TableInfo> {
    let key = (ctx.step.clone(), t.display());
    if let Some(now) = ctx.state::<Memo>().fresh.get(&key) {
        return Ok(now.clone());
    }
    let now = load(ctx, &t.schema, &t.name)?.ok_or_else(|| {
        crate::error::refused(format!(
            "the table {} no longer exists: run the conversion again without it",
            t.display()
        ))
    })?;
    ctx.state::<Memo>().fresh.insert(key, now.clone());
    Ok(now)
}

fn step_id(kind: &str, info: &TableInfo) -> String {
    format!("{kind}:{}", info.display())
}

fn analyze_step(info: &TableInfo) -> Step {
    let t = info.clone();
    let t2 = info.clone();
    let t3 = info.clone();
    // Marked for the benchmark so the "after" figures are taken once the InnoDB table is in place.
    Step::new(step_id("analyze", info), format!("ANALYZE {} and report its sizes", info.display()), Risk::Online)
        .preview(format!("ANALYZE TABLE {}", info.qualified()))
        .bench()
        .act(move |ctx| {
            let tag = ctx.tag();
            let _: Vec<mysql::Row> = ctx.conn()?.query(format!("ANALYZE {tag} TABLE {}", t.qualified()))?;
            let now = load(ctx, &t.schema, &t.name)?;
            Ok(serde_json::json!({
                "before": { "engine": t.engine, "rows_estimate": t.rows_estimate, "data_bytes": t.data_length, "index_bytes": t.index_length },
                "after": now.map(|n| serde_json::json!({ "engine": n.engine, "rows_estimate": n.rows_estimate, "data_bytes": n.data_length, "index_bytes": n.index_length })),
            }))
        })
        .post(Check::new("table is InnoDB", move |ctx| {
            let e = engine_of(ctx, &t2.schema, &t2.name)?.unwrap_or_default();
            Ok(Verdict::check(e.eq_ignore_ascii_case("InnoDB"), e, "InnoDB", "the table is not InnoDB after the conversion: read the journal"))
        }))
        // The pre-flight judged the MyISAM table's size; the InnoDB table's, once analysed, is what the buffer
        // pool must hold now (a 48M pool passed as ✓ before a conversion that made reads 61% slower).
        .post(Check::new("InnoDB table within the buffer pool", move |ctx| {
            let tag = ctx.tag();
            let pool: Option<u64> = ctx.conn()?.query_first(format!("SELECT {tag} @@GLOBAL.innodb_buffer_pool_size"))?;
            let size = load(ctx, &t3.schema, &t3.name)?.map_or(0, |n| n.data_length + n.index_length);
            Ok(memory::pool_verdict(size, pool.unwrap_or(0), true))
        }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::facts::{Flavor, Version};

    #[test]
    fn a_table_larger_than_the_buffer_pool_is_a_warning_before_and_after_the_copy() {
        const M: u64 = 1 << 20;
        let before = memory::pool_verdict(167 * M, 256 * M, false);
        assert_eq!(before.mark(), "✓");
        assert!(
            before.observed.contains("checked again after the copy"),
            "{}",
            before.observed
        );
        let after = memory::pool_verdict(410 * M, 256 * M, true);
        assert_eq!(after.mark(), "⚠");
        assert!(
            after
                .observed
                .contains("of InnoDB data and indexes vs a 256M buffer pool"),
            "{}",
            after.observed
        );
        assert_eq!(memory::pool_verdict(300 * M, 48 * M, false).mark(), "⚠");
        // An unknown pool (0) judges nothing.
        assert_eq!(memory::pool_verdict(300 * M, 0, true).mark(), "✓");
    }

    #[test]
    fn table_arguments_take_backquoted_names_with_dots() {
        let p = |s: &str| parse_table_arg(s);
        assert_eq!(p("shop.orders"), Some(("shop".into(), "orders".into())));
        assert_eq!(p("shop.*"), Some(("shop".into(), "*".into())));
        assert_eq!(p("`my.db`.`t.1`"), Some(("my.db".into(), "t.1".into())));
        assert_eq!(p("`a``b`.c"), Some(("a`b".into(), "c".into())));
        assert_eq!(p("shop"), None);
        assert_eq!(p("shop.a.b"), None);
        assert_eq!(p("`open.x"), None);
    }

    #[test]
    fn auto_follows_the_bulk_capability_not_the_version() {
        let mut f = ServerFacts::synthetic(Flavor::MariaDB, Version::new(10, 11, 19));
        f.variables
            .insert("innodb_alter_copy_bulk".into(), "ON".into());
        assert_eq!(choose(Strategy::Auto, &f).0, Strategy::Bulk);
        f.variables
            .insert("innodb_alter_copy_bulk".into(), "OFF".into());
        assert_eq!(choose(Strategy::Auto, &f).0, Strategy::Deferred);
        let mysql = ServerFacts::synthetic(Flavor::MySQL, Version::new(8, 0, 36));
        assert_eq!(choose(Strategy::Auto, &mysql).0, Strategy::Deferred);
        assert_eq!(choose(Strategy::Alter, &mysql).0, Strategy::Alter);
        assert!(Strategy::parse("fast").is_err());
    }
}
