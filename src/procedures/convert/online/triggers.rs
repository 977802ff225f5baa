//! The table's own triggers on the online path. They keep firing on the source while innops copies (the capture
//! triggers sit beside them: the server runs several per event), and at the cut-over they move to the new table
//! in the same locked moment as the swap: under a guard of `LOCK TABLES t WRITE, shadow WRITE, log WRITE` (held
//! by one session, so it alone may drop and create triggers there), innops's capture triggers and the table's
//! own are dropped from the source and the table's own created on the shadow, each from its definition in
//! information_schema with its own sql_mode, character set and definer; the RENAME is queued behind the guard,
//! so the first write after it finds them on the new table. Their definitions go to the run directory first: a
//! run that stops between the drop and the RENAME puts them back on the source when it is resumed.

use mysql::Conn;
use serde::{Deserialize, Serialize};

use crate::plan::Ctx;
use crate::procedures::convert::schema::TableInfo;
use crate::sql::{qualified, quote_ident, quote_string, Queryable};

/// One trigger of the table's own, as information_schema describes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Def {
    pub name: String,
    pub timing: String,
    pub event: String,
    pub body: String,
    pub definer: String,
    pub sql_mode: String,
    pub charset: String,
    pub collation: String,
}

/// The table's own triggers on `on` (innops's capture triggers left out), in the order the server fires them.
pub fn of_table(conn: &mut Conn, tag: &str, t: &TableInfo, on: &str) -> anyhow::Result<Vec<Def>> {
    let ours = super::capture::trigger_names(&t.name);
    type Row = (
        String,
        String,
        String,
        String,
        String,
        String,
        String,
        String,
    );
    let rows: Vec<Row> = conn.exec(
        format!("SELECT {tag} TRIGGER_NAME, ACTION_TIMING, EVENT_MANIPULATION, ACTION_STATEMENT, DEFINER, SQL_MODE, CHARACTER_SET_CLIENT, COLLATION_CONNECTION FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? ORDER BY EVENT_MANIPULATION, ACTION_TIMING, ACTION_ORDER"),
        (&t.schema, on),
    )?;
    Ok(rows
        .into_iter()
        .filter(|r| !ours.contains(&r.0))
        .map(
            |(name, timing, event, body, definer, sql_mode, charset, collation)| Def {
                name,
                timing,
                event,
                body,
                definer,
                sql_mode,
                charset,
                collation,
            },
        )
        .collect())
}

fn plain(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `'user'@'host'` of information_schema's `user@host` (the host after the last `@`).
fn definer(d: &str) -> String {
    match d.rsplit_once('@') {
        Some((u, h)) => format!("{}@{}", quote_string(u), quote_string(h)),
        None => "CURRENT_USER".into(),
    }
}

/// The statements that create `d` on `table` (schema-qualified): its session settings, then the trigger.
pub fn create_sql(tag: &str, schema: &str, table: &str, d: &Def) -> anyhow::Result<Vec<String>> {
    anyhow::ensure!(
        plain(&d.charset) && plain(&d.collation) && ["BEFORE", "AFTER"].contains(&d.timing.as_str()) && ["INSERT", "UPDATE", "DELETE"].contains(&d.event.as_str()),
        "the trigger {} reads back as {} {} with character set {} and collation {}, which innops will not write into a statement",
        d.name, d.timing, d.event, d.charset, d.collation
    );
    Ok(vec![
        format!("SET {tag} SESSION sql_mode = {}", quote_string(&d.sql_mode)),
        format!("SET {tag} NAMES {} COLLATE {}", d.charset, d.collation),
        format!(
            "CREATE {tag} DEFINER={} TRIGGER {} {} {} ON {} FOR EACH ROW {}",
            definer(&d.definer),
            qualified(schema, &d.name),
            d.timing,
            d.event,
            qualified(schema, table),
            d.body
        ),
    ])
}

fn file(ctx: &Ctx, t: &TableInfo) -> Option<std::path::PathBuf> {
    ctx.run_dir.as_ref().map(|d| {
        d.join(format!(
            "online-triggers-{}.json",
            crate::plan::tag_safe(&t.display())
        ))
    })
}

/// Keep the definitions in the run directory before anything is dropped.
pub fn save(ctx: &Ctx, t: &TableInfo, defs: &[Def]) -> anyhow::Result<()> {
    if let Some(f) = file(ctx, t) {
        crate::files::write_json_atomic(&f, &defs)?;
    }
    Ok(())
}

/// In the guard's session (it holds the source and the shadow locked for write): drop innops's capture triggers
/// and the table's own from the source, and create the table's own on the shadow. The statements sent.
pub fn move_to_shadow(
    g: &mut Conn,
    tag: &str,
    t: &TableInfo,
    defs: &[Def],
) -> anyhow::Result<Vec<String>> {
    let mut sent = Vec::new();
    let drops = super::capture::trigger_names(&t.name)
        .into_iter()
        .chain(defs.iter().map(|d| d.name.clone()));
    for name in drops {
        let s = format!(
            "DROP {tag} TRIGGER IF EXISTS {}",
            qualified(&t.schema, &name)
        );
        g.query_drop(&s)?;
        sent.push(s);
    }
    let shadow = super::super::copy::shadow_name(&t.name);
    for d in defs {
        for s in create_sql(tag, &t.schema, &shadow, d)? {
            g.query_drop(&s)?;
            sent.push(s);
        }
    }
    Ok(sent)
}

/// A run that stopped after the move and before the RENAME: the table's own triggers go back on the source from
/// the definitions the run kept (dropped from the shadow first). The names put back.
pub fn put_back(ctx: &mut Ctx, t: &TableInfo) -> anyhow::Result<Vec<String>> {
    let Some(defs) = file(ctx, t)
        .and_then(|f| std::fs::read(f).ok())
        .and_then(|b| serde_json::from_slice::<Vec<Def>>(&b).ok())
    else {
        return Ok(Vec::new());
    };
    let tag = ctx.tag();
    let on_source: Vec<String> = of_table(ctx.conn()?, &tag, t, &t.name)?
        .into_iter()
        .map(|d| d.name)
        .collect();
    let mut c = ctx.target.connect()?;
    let mut back = Vec::new();
    for d in defs.iter().filter(|d| !on_source.contains(&d.name)) {
        c.query_drop(format!(
            "DROP {tag} TRIGGER IF EXISTS {}",
            qualified(&t.schema, &d.name)
        ))?;
        for s in create_sql(&tag, &t.schema, &t.name, d)? {
            c.query_drop(s)?;
        }
        back.push(d.name.clone());
    }
    Ok(back)
}

/// The guard of a table with triggers of its own: the source, the shadow and the log locked for write in one
/// session, waiting at most `wait_s`; None when it timed out.
pub fn try_lock_guard(ctx: &Ctx, t: &TableInfo, wait_s: u64) -> anyhow::Result<Option<Conn>> {
    let tag = ctx.tag();
    let mut g = ctx.target.connect()?;
    g.query_drop(format!(
        "SET {tag} SESSION lock_wait_timeout = {}",
        wait_s.max(1)
    ))?;
    let lock = format!(
        "LOCK {tag} TABLES {} WRITE, {} WRITE, {} WRITE",
        t.qualified(),
        qualified(&t.schema, &super::super::copy::shadow_name(&t.name)),
        qualified(&t.schema, &super::capture::log_name(&t.name))
    );
    match g.query_drop(lock) {
        Ok(()) => Ok(Some(g)),
        Err(mysql::Error::MySqlError(e)) if e.code == 1205 => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Names for a sentence.
pub fn names(defs: &[Def]) -> String {
    defs.iter()
        .map(|d| quote_ident(&d.name))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def() -> Def {
        Def {
            name: "t_ai".into(),
            timing: "AFTER".into(),
            event: "INSERT".into(),
            body: "INSERT INTO log VALUES (NEW.id)".into(),
            definer: "app@10.0.%".into(),
            sql_mode: "STRICT_TRANS_TABLES".into(),
            charset: "utf8mb4".into(),
            collation: "utf8mb4_general_ci".into(),
        }
    }

    #[test]
    fn a_trigger_is_made_again_with_its_own_settings_and_definer_on_the_table_named() {
        let s = create_sql("", "d", "_t_innops_new", &def()).unwrap();
        assert_eq!(s[0], "SET  SESSION sql_mode = 'STRICT_TRANS_TABLES'");
        assert_eq!(s[1], "SET  NAMES utf8mb4 COLLATE utf8mb4_general_ci");
        assert_eq!(s[2], "CREATE  DEFINER='app'@'10.0.%' TRIGGER `d`.`t_ai` AFTER INSERT ON `d`.`_t_innops_new` FOR EACH ROW INSERT INTO log VALUES (NEW.id)");
    }

    #[test]
    fn settings_that_are_not_plain_names_are_refused() {
        let mut d = def();
        d.charset = "utf8mb4; DROP TABLE x".into();
        assert!(create_sql("", "d", "t", &d).is_err());
        let mut d = def();
        d.timing = "INSTEAD".into();
        assert!(create_sql("", "d", "t", &d).is_err());
    }
}
