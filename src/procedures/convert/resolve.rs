//! Which tables a conversion works on, from what the user named (`--tables db.t,db.*`, `--all-myisam`): the
//! names are parsed, looked up and sorted into tables to convert and tables skipped with a reason before any
//! plan exists, so this is the one place that decides what "the tables" of a run are and what refuses a name.

use super::*;

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
                    "{s}.{t} is innops's {} of {s}.{} from an unfinished run, skipped",
                    own_kind(&r.kind),
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
                    own_kind(&r.kind),
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
pub(super) fn versioned(schema: &str, table: &str) -> String {
    format!(
        "{schema}.{table} is system-versioned: innops's copy would keep only its current rows and lose its history, so convert it with `ALTER TABLE {} ENGINE=InnoDB` (the server keeps the history; writes wait while it runs)",
        qualified(schema, table)
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

/// What a table innops recorded as its own is, in a sentence.
fn own_kind(kind: &str) -> &'static str {
    match kind {
        own::KEPT => "kept MyISAM table",
        super::online::capture::CHANGES => "change log",
        _ => "copy",
    }
}
