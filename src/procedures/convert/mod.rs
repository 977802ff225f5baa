//! MyISAM → InnoDB, by the fastest correct path for the server at hand, verified before anything is swapped.
//!
//! - **bulk**: where the server sorts index entries during a bulk insert into an empty table (MariaDB's
//!   `innodb_alter_copy_bulk=ON`), one `INSERT … SELECT` in one transaction into a shadow that has every index.
//! - **deferred**: where the server inserts row by row, a primary-key-only shadow filled in primary-key chunks
//!   (resumable after a crash), then every secondary index in one ALTER.
//! - **alter**: a plain `ALTER TABLE … ENGINE=InnoDB` under `LOCK TABLES … WRITE`, checked against the checksum
//!   taken before; it keeps no old table.
//!
//! The first two hold a write guard on the source from the copy to the swap (reads go on), verify row count,
//! checksum, indexes, AUTO_INCREMENT, collation and comment, and then swap atomically, keeping the source as
//! `_<table>_myisam_old` unless `--drop-old-table`. shared/FACTS.md §1 has the measurements behind the choice.

pub mod copy;
pub mod definition;
pub mod drop_kept;
pub mod duplicates;
pub mod own;
mod preflight;
pub mod rollback;
pub mod scan;
pub mod schema;
pub mod space;
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    Auto,
    Bulk,
    Deferred,
    Alter,
}

impl Strategy {
    pub fn parse(s: &str) -> anyhow::Result<Strategy> {
        Ok(match s {
            "auto" => Strategy::Auto,
            "bulk" => Strategy::Bulk,
            "deferred" => Strategy::Deferred,
            "alter" => Strategy::Alter,
            other => {
                return Err(bad_input(format!(
                    "--strategy '{other}' is not one of auto, bulk, deferred, alter"
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

/// Turn `db.t,db2.*` (or every MyISAM table) into concrete tables; InnoDB tables are skipped with a note.
/// Concrete tables, and the notes on tables skipped.
pub type Resolved = (Vec<(String, String)>, Vec<String>);

pub fn resolve(
    conn: &mut mysql::Conn,
    patterns: &[String],
    all_myisam: bool,
) -> anyhow::Result<Resolved> {
    let tag = "/* innops:convert:resolve */";
    let mut out: Vec<(String, String)> = Vec::new();
    let mut skipped = Vec::new();
    let push = |out: &mut Vec<(String, String)>, s: String, t: String| {
        if !out.contains(&(s.clone(), t.clone())) {
            out.push((s, t));
        }
    };
    if all_myisam {
        let rows: Vec<(String, String, String)> = conn.query(format!(
            "SELECT {tag} TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE (ENGINE = 'MyISAM' OR (ENGINE IS NULL AND TABLE_COMMENT LIKE '%crashed%')) AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') \
             AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') ORDER BY TABLE_SCHEMA, TABLE_NAME"
        ))?;
        for (s, t, kind) in rows {
            match own::lookup(conn, tag, &s, &t)? {
                Some(r) if r.kind == own::KEPT => skipped.push(format!(
                    "{s}.{t} is innops's kept MyISAM table of {s}.{}, skipped",
                    r.of_table
                )),
                // innops's own copy of a table being converted (an interrupted run's): never a table to convert
                // itself, or each rerun would add a copy of the copy.
                Some(r) => skipped.push(format!(
                    "{s}.{t} is innops's copy of {s}.{} from an unfinished run, skipped",
                    r.of_table
                )),
                _ if kind == "SYSTEM VERSIONED" => {
                    skipped.push(format!("{}, skipped", versioned(&s, &t)))
                }
                _ => push(&mut out, s, t),
            }
        }
    }
    for p in patterns {
        let (schema, table) = parse_table_arg(p).ok_or_else(|| {
            bad_input(format!("'{p}' does not name a table: write db.table or db.* (for example --tables shop.orders), with backquotes around a name that holds a dot (`my.db`.`t`)"))
        })?;
        let (schema, table) = (schema.as_str(), table.as_str());
        if SYSTEM_SCHEMAS.contains(&schema.to_ascii_lowercase().as_str()) {
            return Err(bad_input(format!("{p} is in the system schema {schema}, which innops never converts: name your own tables")));
        }
        let rows: Vec<(String, String, String, String, String)> = if table == "*" {
            conn.exec(
                format!("SELECT {tag} TABLE_SCHEMA, TABLE_NAME, IFNULL(ENGINE, ''), IFNULL(TABLE_COMMENT, ''), TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY TABLE_NAME"),
                (schema,),
            )?
        } else {
            conn.exec(
                format!("SELECT {tag} TABLE_SCHEMA, TABLE_NAME, IFNULL(ENGINE, ''), IFNULL(TABLE_COMMENT, ''), TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')"),
                (schema, table),
            )?
        };
        if rows.is_empty() && table != "*" {
            let view: Option<String> = conn.exec_first(
                format!("SELECT {tag} TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"),
                (schema, table),
            )?;
            if let Some(kind) = view {
                return Err(bad_input(if kind.contains("VIEW") {
                    format!("{schema}.{table} is a view, not a base table: innops converts tables (name the tables the view reads)")
                } else if kind.eq_ignore_ascii_case("SEQUENCE") {
                    format!(
                        "{schema}.{table} is a sequence, not a base table: innops converts tables; a sequence changes engine with `ALTER TABLE {} ENGINE=InnoDB` (it holds one row)",
                        qualified(schema, table)
                    )
                } else {
                    format!("{schema}.{table} is a {kind}, not a base table: innops converts base tables only")
                }));
            }
        }
        if rows.is_empty() {
            return Err(bad_input(if table == "*" {
                format!("the schema {schema} has no tables: check the name in --tables {p}")
            } else {
                format!("the table {p} does not exist: check the name (innops inspect lists the MyISAM tables)")
            }));
        }
        for (s, t, engine, comment, kind) in rows {
            if kind == "SYSTEM VERSIONED" && engine.eq_ignore_ascii_case("MyISAM") {
                if table == "*" {
                    skipped.push(format!("{}, skipped", versioned(&s, &t)));
                    continue;
                }
                return Err(bad_input(versioned(&s, &t)));
            }
            if let Some(r) = own::lookup(conn, tag, &s, &t)? {
                skipped.push(format!(
                    "{s}.{t} is innops's {} of {s}.{}, skipped{}",
                    if r.kind == own::KEPT { "kept MyISAM table" } else { "copy" },
                    r.of_table,
                    if r.kind == own::KEPT { format!(" (`innops convert --drop-kept {s}.{}` drops it once you no longer need it)", r.of_table) } else { String::new() }
                ));
            } else if engine.eq_ignore_ascii_case("MyISAM")
                || (engine.is_empty() && comment.contains("crashed"))
            {
                // A crashed table is planned so that its pre-flight refuses it with the repair to run.
                push(&mut out, s, t);
            } else if engine.eq_ignore_ascii_case("InnoDB") {
                skipped.push(format!("{s}.{t} is already InnoDB, skipped"));
            } else if table == "*" {
                skipped.push(format!("{s}.{t} is {engine}, not MyISAM, skipped"));
            } else {
                return Err(bad_input(format!("{s}.{t} uses the {engine} engine, not MyISAM: innops converts MyISAM tables only")));
            }
        }
    }
    // --all-myisam on a server with nothing left to convert is a finished job, not bad input: a fleet's second
    // run of the same play must succeed.
    if out.is_empty() && skipped.is_empty() && !all_myisam {
        return Err(bad_input(
            "no tables to convert: pass --tables db.table[,db.*] or --all-myisam",
        ));
    }
    Ok((out, skipped))
}

/// Why a system-versioned MyISAM table is not converted, and what converts it. innops's copy reads the current
/// rows (a plain SELECT of a versioned table sees no history), so the new table would lose the history; the
/// server's own ALTER keeps it.
fn versioned(schema: &str, table: &str) -> String {
    format!(
        "{schema}.{table} is system-versioned: innops's copy would keep only its current rows and lose its history, so convert it with `ALTER TABLE {} ENGINE=InnoDB` (the server keeps the history; writes wait while it runs)",
        qualified(schema, table)
    )
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

/// Columns whose DEFAULT calls a sequence (`nextval(s)`, `NEXT VALUE FOR s`, `lastval(s)`), as SHOW CREATE TABLE
/// prints them: `` `id` int(11) NOT NULL DEFAULT nextval(`x`.`s1`) ``.
fn sequence_defaults(t: &TableInfo) -> Option<String> {
    let cols: Vec<String> = t
        .definition
        .columns
        .iter()
        .filter(|l| {
            let u = l.to_ascii_uppercase();
            u.contains(" DEFAULT ")
                && [
                    "NEXTVAL(",
                    "LASTVAL(",
                    "NEXT VALUE FOR",
                    "PREVIOUS VALUE FOR",
                    "SETVAL(",
                ]
                .iter()
                .any(|f| u.contains(f))
        })
        .map(|l| l.split(' ').next().unwrap_or(l).to_string())
        .collect();
    (!cols.is_empty()).then(|| format!("column {}", cols.join(", ")))
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

/// `db.t`, `db.*`, or with backquotes `` `my.db`.`t.1` `` (a doubled backquote inside is one backquote).
pub fn parse_table_arg(arg: &str) -> Option<(String, String)> {
    fn part(s: &str) -> Option<(String, &str)> {
        if s.starts_with('`') {
            definition::quoted_ident(s)
        } else {
            let end = s.find('.').unwrap_or(s.len());
            Some((s[..end].to_string(), &s[end..]))
        }
    }
    let (schema, rest) = part(arg.trim())?;
    let rest = rest.strip_prefix('.')?;
    let (table, tail) = part(rest)?;
    (!schema.is_empty() && !table.is_empty() && tail.is_empty()).then_some((schema, table))
}

/// Error-log lines about an automatic repair of `schema.table` (myisam_recover_options).
pub fn repair_lines(lines: &[String], schema: &str, table: &str) -> Vec<String> {
    let path = format!("'./{schema}/{table}'");
    lines
        .iter()
        .filter(|l| {
            l.contains(&path)
                && (l.contains("Checking table")
                    || l.contains("Recovering table")
                    || l.contains("marked as crashed"))
        })
        .map(|l| l.trim().to_string())
        .collect()
}

/// The command that drops innops's own copy of `t` and converts it again, with the user's connection flags.
fn restart_command(flags: &str, t: &TableInfo) -> String {
    format!(
        "innops convert --tables {} --restart {flags} --execute",
        shell_words::quote(&t.display())
    )
    .replace("  ", " ")
}

/// The source fingerprint this run verified the copy against: in memory, else from the journal (a resumed
/// run), from the swap's or the verify step's recorded result.
fn verified_source(ctx: &mut Ctx, t: &TableInfo) -> Option<Fingerprint> {
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

/// MyISAM's DATA DIRECTORY / INDEX DIRECTORY put the table's files elsewhere; InnoDB has no INDEX DIRECTORY
/// and `CREATE TABLE … LIKE` keeps neither, so innops refuses rather than move the data silently.
fn files_outside_datadir(t: &TableInfo) -> Verdict {
    let mut dirs: Vec<String> = ["DATA DIRECTORY", "INDEX DIRECTORY"]
        .iter()
        .filter_map(|k| t.definition.option(k).map(|v| format!("{k}='{v}'")))
        .collect();
    // Partitions carry their own: `PARTITION p1 … DATA DIRECTORY = '/x' INDEX DIRECTORY = '/x'`.
    if let Some(parts) = t.definition.option("PARTITION") {
        let upper = parts.to_ascii_uppercase();
        for k in ["DATA DIRECTORY", "INDEX DIRECTORY"] {
            if upper.contains(k) {
                dirs.push(format!("{k} on a partition"));
            }
        }
    }
    Verdict::check(
        dirs.is_empty(),
        if dirs.is_empty() { "yes".to_string() } else { dirs.join(", ") },
        "the table's files in the datadir",
        format!(
            "{} keeps its files outside the datadir ({}), which innops cannot carry over to InnoDB: convert it by hand (CREATE TABLE … ENGINE=InnoDB DATA DIRECTORY=… and a copy), or move its files into the datadir first",
            t.display(),
            dirs.join(", ")
        ),
    )
}

/// Rows that break a CHECK constraint (possible in MyISAM: added with check_constraint_checks=0) would stop
/// the copy into InnoDB midway (ERROR 4025).
fn check_constraint_rows(ctx: &mut Ctx, t: &TableInfo) -> anyhow::Result<Verdict> {
    let tag = ctx.tag();
    let checks: Vec<(String, String)> = ctx.conn()?.exec(
        format!("SELECT {tag} CONSTRAINT_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?"),
        (&t.schema, &t.name),
    )?;
    if checks.is_empty() {
        return Ok(Verdict::pass(
            "no CHECK constraints",
            "every row satisfies them",
        ));
    }
    // The clauses are the server's own text of the constraints, not user input. Read in short statements:
    // a dry run must not hold the table's writers for a whole scan.
    let exprs: Vec<String> = checks.iter().map(|(_, c)| format!("NOT ({c})")).collect();
    let scanned = scan::sums(ctx, t, &exprs)?;
    let scan::Scanned::Sums { sums, .. } = &scanned else {
        return Ok(Verdict::pass(
            format!("{} CHECK constraint(s), {}; InnoDB refuses a breaking row during the copy, which then stops with nothing swapped", checks.len(), scan::how(&scanned)),
            "every row satisfies them",
        ));
    };
    let broken: Vec<String> = checks
        .iter()
        .zip(sums)
        .filter(|(_, n)| **n > 0)
        .map(|((name, clause), n)| format!("{n} rows break `{name}` CHECK ({clause})"))
        .collect();
    Ok(Verdict::check(
        broken.is_empty(),
        if broken.is_empty() { format!("every row satisfies {} constraint(s) ({})", checks.len(), scan::how(&scanned)) } else { broken.join("; ") },
        "every row satisfies them",
        format!("{}: {}, and InnoDB would refuse those rows in the middle of the copy: fix or delete them first", t.display(), broken.join("; ")),
    ))
}

/// The privileges each path needs, read for the current account; a missing one is refused with the GRANT to run.
fn privileges(ctx: &mut Ctx, t: &TableInfo, strategy: Strategy) -> anyhow::Result<Verdict> {
    let tag = ctx.tag();
    let (user, role): (String, Option<String>) = ctx
        .conn()?
        .query_first(format!("SELECT {tag} CURRENT_USER(), CURRENT_ROLE()"))?
        .unwrap_or_default();
    if role.is_some() {
        return Ok(Verdict::pass(
            format!(
                "not checked: {user} has the role {} active",
                role.unwrap_or_default()
            ),
            "the privileges of the path",
        ));
    }
    let grantee = match user.rsplit_once('@') {
        Some((u, h)) => format!("'{u}'@'{h}'"),
        None => format!("'{user}'"),
    };
    let mut have: Vec<String> = ctx.conn()?.exec(
        format!(
            "SELECT {tag} PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = ?"
        ),
        (&grantee,),
    )?;
    // A schema-level grant covers the table; information_schema matches the schema name, not its patterns.
    let schema_level: Vec<String> = ctx.conn()?.exec(
        format!("SELECT {tag} PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ? AND ? LIKE TABLE_SCHEMA"),
        (&grantee, &t.schema),
    )?;
    let table_level: Vec<String> = ctx.conn()?.exec(
        format!("SELECT {tag} PRIVILEGE_TYPE FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = ? AND TABLE_SCHEMA = ? AND TABLE_NAME = ?"),
        (&grantee, &t.schema, &t.name),
    )?;
    let global = have.clone();
    have.extend(schema_level);
    let (needed_global, needed_schema) = needed_privileges(strategy);
    let missing_global: Vec<&str> = needed_global
        .iter()
        .filter(|p| !global.iter().any(|h| h == *p))
        .copied()
        .collect();
    let missing_schema: Vec<&str> = needed_schema
        .iter()
        .filter(|p| !have.iter().any(|h| h == *p) && !table_level.iter().any(|h| h == *p))
        .copied()
        .collect();
    // innops's record of its own tables (innops.own_tables), written at the copy and the swap.
    let own_schema: Vec<String> = if strategy == Strategy::Alter {
        Vec::new()
    } else {
        ctx.conn()?.exec(
            format!("SELECT {tag} PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ? AND ? LIKE TABLE_SCHEMA"),
            (&grantee, own::SCHEMA),
        )?
    };
    let missing_own: Vec<&str> = if strategy == Strategy::Alter {
        Vec::new()
    } else {
        ["SELECT", "INSERT", "DELETE", "CREATE"]
            .into_iter()
            .filter(|p| !global.iter().any(|h| h == p) && !own_schema.iter().any(|h| h == p))
            .collect()
    };
    let mut grants = Vec::new();
    if !missing_own.is_empty() {
        grants.push(format!(
            "GRANT {} ON {}.* TO {grantee}",
            missing_own.join(", "),
            crate::sql::quote_ident(own::SCHEMA)
        ));
    }
    if !missing_global.is_empty() {
        grants.push(format!(
            "GRANT {} ON *.* TO {grantee}",
            missing_global.join(", ")
        ));
    }
    if !missing_schema.is_empty() {
        grants.push(format!(
            "GRANT {} ON {}.* TO {grantee}",
            missing_schema.join(", "),
            crate::sql::quote_ident(&t.schema)
        ));
    }
    let all: Vec<&str> = needed_global
        .iter()
        .chain(needed_schema.iter())
        .copied()
        .collect();
    Ok(Verdict::check(
        grants.is_empty(),
        if grants.is_empty() {
            format!("{user} has {}", all.join(", "))
        } else {
            format!(
                "{user} lacks {}",
                missing_global
                    .iter()
                    .chain(missing_schema.iter())
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        all.join(", "),
        format!(
            "the {} path needs privileges {user} does not have: run {}",
            strategy_name(strategy),
            grants.join("; ")
        ),
    ))
}

/// Global and schema-level privileges a path needs: the guard is `FLUSH TABLES … WITH READ LOCK` (RELOAD and
/// LOCK TABLES); the shadow is created, filled, altered, renamed and, with --restart, dropped.
pub fn needed_privileges(strategy: Strategy) -> (Vec<&'static str>, Vec<&'static str>) {
    match strategy {
        Strategy::Alter => (
            vec![],
            vec!["SELECT", "INSERT", "CREATE", "ALTER", "LOCK TABLES"],
        ),
        _ => (
            vec!["RELOAD"],
            vec!["SELECT", "INSERT", "CREATE", "DROP", "ALTER", "LOCK TABLES"],
        ),
    }
}

fn strategy_name(s: Strategy) -> &'static str {
    match s {
        Strategy::Auto => "auto",
        Strategy::Bulk => "bulk",
        Strategy::Deferred => "deferred",
        Strategy::Alter => "alter",
    }
}

/// Build the conversion plan.
pub fn plan(p: &ConvertParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    let (strategy, why) = choose(p.strategy, facts);
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
        _ => notes.push(
            "users will notice: writes to each table wait from the copy to the swap (reads go on); the old table is kept, so `innops convert --rollback db.t` can swap back".into(),
        ),
    }
    let mut conn = match env.target.connect() {
        Ok(c) => Some(c),
        Err(_) if p.described.len() == p.tables.len() && !p.tables.is_empty() => {
            notes.push("the server is down: the steps are built from the tables as this run described them when it started; each step judges the live table when it runs".into());
            None
        }
        Err(e) => return Err(e),
    };
    let tag = "/* innops:convert:plan */";
    let flags = env.flags();
    // Where a copy's bytes go, for the sentence of a copy that runs out of space.
    let room = space::Where {
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
    };
    let mut steps = Vec::new();
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
    for info in &described {
        // What InnoDB takes differently, said before anything runs.
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
        if info.secondaries_kept_in_shadow() > 0 && strategy == Strategy::Deferred {
            notes.push(format!(
                "{}: the AUTO_INCREMENT column leads only a secondary index, which InnoDB needs from the start: the shadow keeps the first {} secondary index(es) during the copy",
                info.display(),
                info.secondaries_kept_in_shadow()
            ));
        }
        steps.push(preflight::preflight(info, strategy, facts, env, p));
        if p.restart && strategy != Strategy::Alter {
            steps.push(discard_step(info));
        }
        match strategy {
            Strategy::Alter => steps.push(alter_step(info, &room)),
            _ => {
                steps.push(copy_step(info, strategy, p, &flags, &room));
                if strategy == Strategy::Deferred && info.deferred_indexes().next().is_some() {
                    steps.push(index_step(info, &room));
                }
                steps.push(verify_step(info, &flags, p.verify));
                steps.push(swap_step(info, &flags, p.verify));
                if p.drop_old {
                    steps.push(drop_old_step(info));
                }
            }
        }
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
    })
}

/// What convert's steps leave for later steps of the same process ([`Ctx::state`]), each keyed by the table's
/// display name (`db.t`). A crash forgets it: every reader copes with its absence, as after `resume`.
#[derive(Default)]
struct Memo {
    /// The table as each step first read it ([`fresh`]), by step id and table.
    fresh: BTreeMap<(String, String), TableInfo>,
    /// The source's fingerprint: taken beside the copy under the guard, or by verification.
    source: BTreeMap<String, Fingerprint>,
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

fn copy_step(
    info: &TableInfo,
    strategy: Strategy,
    p: &ConvertParams,
    flags: &str,
    room: &space::Where,
) -> Step {
    let flags = flags.to_string();
    let room_act = room.clone();
    let deferred = strategy == Strategy::Deferred;
    let shadow = qualified(&info.schema, &shadow_name(&info.name));
    let cols = info
        .stored_columns()
        .iter()
        .map(|c| crate::sql::quote_ident(&c.name))
        .collect::<Vec<_>>()
        .join(", ");
    let choice = p.verify;
    let settings = copy::ChunkSettings {
        target_chunk: Duration::from_millis(p.chunk_ms),
        max_load: p.max_load.clone(),
        critical_load: p.critical_load.clone(),
    };
    let title = if deferred {
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
        .preview(if deferred && info.primary().is_some() {
            format!("INSERT INTO {shadow} ({cols}) SELECT {cols} FROM {} FORCE INDEX (PRIMARY) WHERE pk > last ORDER BY pk LIMIT chunk   -- repeated, ~{} ms per chunk", info.qualified(), p.chunk_ms)
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
    let t = info.clone();
    let flags_copy = flags.clone();
    step = step.act(move |ctx| {
        crate::testhooks::hold("before-guard");
        let t_start = std::time::Instant::now();
        // Wait for a calm server before blocking writes or creating anything.
        copy::wait_for_load(ctx, &settings)?;
        copy::acquire_guard(ctx, &t)?;
        // A run killed mid-statement leaves that statement running on the server: stop it before reading
        // what the shadow holds.
        let reaped = copy::reap_orphans(ctx, &t)?;
        let tag = ctx.tag();
        let shadow_t = shadow_name(&t.name);
        let has_pk = t.primary().is_some();
        let total = verify::count_rows(ctx.conn()?, &tag, &t.schema, &t.name, has_pk)?;
        if total == 0 && t.rows_estimate > 0 {
            copy::release_guard(ctx, &t);
            return Err(crate::error::refused(format!(
                "{} held {} rows when the plan was made and holds none now: if they were deleted on purpose run the conversion again, otherwise check the table (an automatic repair can empty it) before converting",
                t.display(),
                t.rows_estimate
            )));
        }
        let chunked = deferred && has_pk;
        let mut created = Vec::new();
        if engine_of(ctx, &t.schema, &shadow_t)?.is_some() && !chunked {
            // One statement fills the shadow whole: whatever an interrupted run left in it goes first.
            let rows = verify::count_rows(ctx.conn()?, &tag, &t.schema, &shadow_t, has_pk)?;
            if rows > 0 {
                let drop = format!("DROP {tag} TABLE {}", qualified(&t.schema, &shadow_t));
                ctx.conn()?.query_drop(&drop)?;
                created.push(drop);
            }
        }
        if engine_of(ctx, &t.schema, &shadow_t)?.is_none() {
            // Recorded first: a crash between the two leaves a record of a table that does not exist, never
            // a shadow innops would not know as its own.
            let run_dir = ctx.run_dir.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
            own::record(ctx.conn()?, &tag, &own::Record {
                kind: own::SHADOW.into(),
                schema: t.schema.clone(),
                name: shadow_t.clone(),
                of_table: t.name.clone(),
                fingerprint: None,
                run_dir,
            })?;
            let made = copy::create_shadow(ctx.conn()?, &tag, &t, deferred);
            if made.is_err() {
                copy::release_guard(ctx, &t);
            }
            created.extend(made?);
        }
        // Nothing goes into a shadow that is not InnoDB (one left by an older run whose ALTER failed).
        require_innodb_shadow(ctx, &t, &flags_copy)?;
        // The source cannot change under the guard: checksum it beside the copy.
        let (method, _) = verify::first_method(&t, choice);
        let target = ctx.target.clone();
        let t2 = t.clone();
        let tag2 = tag.clone();
        let prepare_s = t_start.elapsed().as_secs_f64();
        let side = std::thread::spawn(move || -> anyhow::Result<(Fingerprint, f64)> {
            let t0 = std::time::Instant::now();
            let mut c = target.connect()?;
            let fp = verify::fingerprint(&mut c, &tag2, &t2, &t2.name, method)?;
            Ok((fp, t0.elapsed().as_secs_f64()))
        });
        let copy_start = std::time::Instant::now();
        let copied = if chunked {
            copy::copy_chunked(ctx, &t, total, &settings)
        } else {
            // One statement cannot pause midway: the load was checked just before.
            if has_pk {
                copy::copy_bulk(ctx, &t, total)
            } else {
                copy::copy_whole(ctx, &t)
            }
        };
        let copy_s = copy_start.elapsed().as_secs_f64();
        let source = side
            .join()
            .map_err(|_| anyhow::anyhow!("the checksum thread panicked"))?;
        let copied = copied.map_err(|e| {
            let run = ctx.run_dir.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "RUN_DIR".into());
            space::explain(
                e,
                &t,
                &room_act,
                &format!("copying it into {}", qualified(&t.schema, &shadow_t)),
                &format!("continue with `innops resume {run}` (innops's copy {shadow_t} is kept for it; `{}` starts over)", restart_command(&flags_copy, &t)),
                false,
            )
        })?;
        let (source, source_hash_s) = match source {
            Ok((fp, secs)) => (Ok(fp), secs),
            Err(e) => (Err(e), 0.0),
        };
        let waited_for_hash_s = (copy_start.elapsed().as_secs_f64() - copy_s).max(0.0);
        crate::testhooks::hold("after-copy");
        // One statement in one transaction: the server's count of the rows it inserted, against the source's
        // count under the guard, is the copy's outcome (the post-check uses it instead of reading the shadow
        // again; verification reads every row next).
        if let Some(n) = copied.get("rows_inserted").and_then(|v| v.as_u64()) {
            ctx.state::<Memo>().inserted.insert(
                t.display(),
                Inserted { inserted: n, source_rows: total },
            );
        }
        let source = source?;
        ctx.state::<Memo>().source.insert(t.display(), source);
        Ok(serde_json::json!({
            "created": created,
            "source_rows": total,
            "copy": copied,
            "stopped_orphans": reaped,
            // Where the step's time goes: before the copy (load, guard, shadow), the copy, the source's hash
            // beside it, and any wait for that hash after the copy ended.
            "timing": { "prepare_s": prepare_s, "copy_s": copy_s, "source_hash_s": source_hash_s, "waited_for_hash_s": waited_for_hash_s },
        }))
    });
    let t = info.clone();
    let room = room.clone();
    step.post(Check::new("shadow has every row", move |ctx| {
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
            Some(i) if copy::guard_held(ctx, &t) => Some((i.source_rows, i.inserted)),
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
                    restart_command(&flags, &t)
                )
            } else if undone {
                space::undone_at_commit(&t, &room, &format!("`innops resume {run}` copies again"))
            } else {
                format!("the copy is incomplete: `innops resume {run}` continues it")
            },
        ))
    }))
}

/// The `(name, clause)` list of a table's indexes as the server prints them, in its order.
fn index_lines(ctx: &mut Ctx, schema: &str, table: &str) -> anyhow::Result<Vec<(String, String)>> {
    Ok(load(ctx, schema, table)?
        .map(|i| i.definition.indexes)
        .unwrap_or_default())
}

/// How the indexes `have` differ from the source's, judged as verification judges them.
fn index_differences(t: &TableInfo, have: &[(String, String)]) -> Vec<String> {
    let only = |indexes: Vec<(String, String)>| definition::Definition {
        indexes,
        ..Default::default()
    };
    definition::differences(
        &only(t.definition.indexes.clone()),
        &only(have.to_vec()),
        &[],
    )
}

fn show_indexes(lines: &[(String, String)]) -> String {
    lines
        .iter()
        .map(|(_, l)| l.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the InnoDB table is meant to differ in, on purpose: an explicit row format InnoDB refuses, and the Aria
/// options it does not get.
fn set_aside(t: &TableInfo) -> Vec<&'static str> {
    let mut out = Vec::new();
    if t.explicit_fixed_format() {
        out.push("ROW_FORMAT");
    }
    out.extend(
        definition::ARIA_OPTIONS
            .iter()
            .filter(|k| t.definition.option(k).is_some()),
    );
    out
}

fn index_step(info: &TableInfo, room: &space::Where) -> Step {
    let room = room.clone();
    let stmts = copy::index_statements(info);
    let mut step = Step::new(
        step_id("indexes", info),
        format!(
            "Build the secondary indexes of {} in one ALTER",
            info.display()
        ),
        Risk::Locking,
    );
    for s in &stmts {
        step = step.preview(s.clone());
    }
    let t = info.clone();
    step = step.pre(Check::new("indexes missing", move |ctx| {
        let have = index_lines(ctx, &t.schema, &shadow_name(&t.name))?;
        Ok(
            if index_differences(&t, &have).is_empty() || swapped(ctx, &t)? {
                Verdict::done("all present", "missing")
            } else {
                Verdict::pass(format!("{} of {}", have.len(), t.indexes.len()), "missing")
            },
        )
    }));
    let t2 = info.clone();
    step = step.act(move |ctx| {
        let tag = ctx.tag();
        let t0 = std::time::Instant::now();
        let target = ctx.target;
        let run = ctx
            .run_dir
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "RUN_DIR".into());
        let conn = ctx.conn()?;
        let id = conn.connection_id();
        for (i, s) in stmts.iter().enumerate() {
            let label = if stmts.len() > 1 {
                format!("indexes {} ({}/{})", t2.display(), i + 1, stmts.len())
            } else {
                format!("indexes {}", t2.display())
            };
            let sql = s.replacen("ALTER TABLE", &format!("ALTER {tag} TABLE"), 1);
            copy::watch_progress(target, id, &label, 100, copy::Watch::Percent, || {
                Ok(conn.query_drop(&sql)?)
            })
            .map_err(|e| {
                space::explain(
                    e,
                    &t2,
                    &room,
                    &format!(
                        "building the indexes of {}",
                        qualified(&t2.schema, &shadow_name(&t2.name))
                    ),
                    &format!("continue with `innops resume {run}`"),
                    false,
                )
            })?;
        }
        Ok(serde_json::json!({ "statements": stmts, "seconds": t0.elapsed().as_secs_f64() }))
    });
    let t = info.clone();
    step.post(Check::new("same indexes as the source, in the same order", move |ctx| {
        let have = index_lines(ctx, &t.schema, &shadow_name(&t.name))?;
        let diff = index_differences(&t, &have);
        Ok(Verdict::check(diff.is_empty(), show_indexes(&have), show_indexes(&t.definition.indexes), format!("the shadow's indexes differ from the source's ({}): read the ALTER statements in the run's journal", diff.join("; "))))
    }))
}

/// Verify the shadow against the source under the guard; the verdicts, the source's fingerprint, and whether
/// everything matched. Everything compared is read now, under the guard: the source as it is, not as the
/// plan saw it.
fn verify_now(
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
    let (method, _) = verify::first_method(t, choice);
    let mut source: Fingerprint = match ctx.state::<Memo>().source.get(&key).cloned() {
        Some(fp) => fp,
        None => verify::fingerprint(ctx.conn()?, &tag, t, &t.name, method)?,
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
        &tag,
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
        source = verify::fingerprint(ctx.conn()?, &tag, t, &t.name, verify::Method::RowXxh3)?;
        shadow_fp = verify::fingerprint_clustered(
            target,
            ctx.conn()?,
            &tag,
            &expecting(source.rows),
            &shadow_t,
            verify::Method::RowXxh3,
        )?;
    }
    let counted = if source.method == verify::Method::ChecksumTable && inserted.is_some() {
        " (inserted by the copy's one statement into the empty table)"
    } else {
        ""
    };
    let decided = match &checksum_differed {
        Some(d) => format!(" ({d} differed, so the row hash of both tables decided)"),
        None => String::new(),
    };
    ctx.state::<Memo>()
        .shadow_hash_s
        .insert(key.clone(), hash_start.elapsed().as_secs_f64());
    let now = load(ctx, &t.schema, &shadow_t)?.ok_or_else(|| {
        post_check(format!(
            "the shadow table {shadow} is gone: run the conversion again"
        ))
    })?;
    let diff = definition::differences(&live.definition, &now.definition, &set_aside(t));
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
    let ok = v.iter().all(|x| x.passed);
    let memo = ctx.state::<Memo>();
    memo.source.insert(key.clone(), source.clone());
    if ok {
        memo.verified.insert(key);
    } else {
        memo.verified.remove(&key);
    }
    Ok((v, source, ok))
}

/// What failed, in one line.
fn failed_verdicts(v: &[Verdict]) -> String {
    v.iter()
        .filter(|x| !x.passed)
        .map(|x| format!("{}: {} vs {}", x.check, x.observed, x.expected))
        .collect::<Vec<_>>()
        .join("; ")
}

fn verify_step(info: &TableInfo, flags: &str, choice: verify::Choice) -> Step {
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

fn swap_step(info: &TableInfo, flags: &str, choice: verify::Choice) -> Step {
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
            })?;
            let mut r = match copy::swap(ctx, &t2, &old_name(&t2.name), &shadow_name(&t2.name)) {
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

/// `--restart`: drop innops's own leftover copy, never the source or the kept table.
fn discard_step(info: &TableInfo) -> Step {
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
            let ours = own::lookup(ctx.conn()?, &tag, &t.schema, &shadow_t)?
                .is_some_and(|r| r.kind == own::SHADOW);
            Ok(match engine_of(ctx, &t.schema, &shadow_t)? {
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
            ctx.conn()?.query_drop(format!("DROP {tag} TABLE {drop}"))?;
            own::forget(ctx.conn()?, &tag, &t2.schema, &shadow_name(&t2.name))?;
            Ok(serde_json::json!({ "dropped": drop }))
        })
        .post(Check::new("leftover copy gone", move |ctx| {
            let gone = engine_of(ctx, &t3.schema, &shadow_name(&t3.name))?.is_none();
            Ok(Verdict::check(gone, if gone { "gone" } else { "still there" }, "gone", "DROP TABLE did not take effect: check the table by hand"))
        }))
}

fn drop_old_step(info: &TableInfo) -> Step {
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

fn alter_step(info: &TableInfo, room: &space::Where) -> Step {
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
fn alter_proof(ctx: &mut Ctx, t: &TableInfo) -> Option<(Fingerprint, Fingerprint)> {
    if let Some(proof) = ctx.state::<Memo>().alter.get(&t.display()) {
        return Some(proof.clone());
    }
    let v = ctx.recorded_result(&step_id("alter", t))?;
    Some((
        serde_json::from_value(v["before"].clone()).ok()?,
        serde_json::from_value(v["after"].clone()).ok()?,
    ))
}

fn analyze_step(info: &TableInfo) -> Step {
    let t = info.clone();
    let t2 = info.clone();
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::facts::{Flavor, Version};

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
