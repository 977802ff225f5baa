//! The account's privileges against what each path needs: read from information_schema at three levels (global,
//! schema, table) plus innops's own schema, and turned into the GRANT statements to run. It is one unit because
//! the list a path needs and the check that reads it must change together.

use super::*;

/// The privileges each path needs, read for the current account; a missing one is refused with the GRANT to run.
pub(super) fn privileges(
    ctx: &mut Ctx,
    t: &TableInfo,
    strategy: Strategy,
) -> anyhow::Result<Verdict> {
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
    let grantee = crate::procedures::kit::checks::grantee_of(&user);
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
        Strategy::Online => (
            vec!["RELOAD"],
            vec![
                "SELECT",
                "INSERT",
                "DELETE",
                "CREATE",
                "DROP",
                "ALTER",
                "LOCK TABLES",
                "TRIGGER",
            ],
        ),
        _ => (
            vec!["RELOAD"],
            vec!["SELECT", "INSERT", "CREATE", "DROP", "ALTER", "LOCK TABLES"],
        ),
    }
}

pub(super) fn strategy_name(s: Strategy) -> &'static str {
    match s {
        Strategy::Auto => "auto",
        Strategy::Bulk => "bulk",
        Strategy::Deferred => "deferred",
        Strategy::Alter => "alter",
        Strategy::Chunked => "chunked",
        Strategy::Online => "online",
    }
}
