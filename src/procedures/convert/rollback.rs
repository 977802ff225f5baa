//! `innops convert --rollback db.t`: swap the kept MyISAM table back in, only while the InnoDB table still holds
//! exactly the same rows (a write since the conversion would otherwise be lost). The InnoDB table is kept too.

use crate::sql::Queryable;

use crate::error::{bad_input, refused};
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::convert::copy::{self, old_name};
use crate::procedures::convert::own;
use crate::procedures::convert::schema::TableInfo;
use crate::procedures::convert::verify;
use crate::procedures::PlanEnv;
use crate::server::facts::ServerFacts;

/// Name the InnoDB table keeps after a rollback.
pub fn rolled_back_name(table: &str) -> String {
    let full = format!("_{table}_innodb_rolled_back");
    if full.chars().count() <= 64 {
        full
    } else {
        format!("_{}_innodb_rb", table.chars().take(40).collect::<String>())
    }
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RollbackParams {
    pub schema: String,
    pub table: String,
    /// `--binlog`, `--yes`.
    #[serde(flatten)]
    pub asked: crate::procedures::kit::binlog::Asked,
}

fn same(ctx: &mut Ctx, old: &TableInfo, table: &str) -> anyhow::Result<(bool, String)> {
    let tag = ctx.tag();
    let method = verify::method_for(old);
    let a = verify::fingerprint(ctx.conn()?, &tag, old, table, method)?;
    let b = verify::fingerprint(ctx.conn()?, &tag, old, &old.name, method)?;
    Ok((
        a == b,
        format!(
            "{table}: {} rows {}; {}: {} rows {}",
            a.rows, a.checksum, old.name, b.rows, b.checksum
        ),
    ))
}

pub fn plan(
    schema: &str,
    table: &str,
    asked: &crate::procedures::kit::binlog::Asked,
    facts: &ServerFacts,
    env: &PlanEnv,
) -> anyhow::Result<Plan> {
    let binlog = asked.decide(&facts.topology, "the rollback")?;
    let mut conn = env.target.connect()?;
    let tag = "/* innops:convert-rollback:plan */";
    let kept = old_name(table);
    let old = TableInfo::load(&mut conn, tag, schema, &kept)?.ok_or_else(|| {
        bad_input(format!("there is no kept MyISAM table {schema}.{kept} to roll back to: it was dropped, or {schema}.{table} was not converted by innops"))
    })?;
    let record = own::lookup(&mut conn, tag, schema, &kept)?.filter(|r| r.kind == own::KEPT);
    if let Some(r) = record
        .as_ref()
        .filter(|r| r.from_elsewhere(own::this_server(&mut conn, tag).unwrap_or(0)))
    {
        return Err(refused(r.replicated_refusal("swapping it back")));
    }
    if record.is_none() {
        return Err(bad_input(format!(
            "{schema}.{kept} has no record of innops keeping it for {schema}.{table} (in {}.{}): innops rolls back only its own conversions",
            own::SCHEMA,
            own::TABLE
        )));
    }
    let params = RollbackParams {
        schema: schema.into(),
        table: table.into(),
        asked: asked.clone(),
    };
    let back = rolled_back_name(table);
    let (o1, o2) = (old.clone(), old.clone());
    let (tbl1, tbl2, tbl3) = (table.to_string(), table.to_string(), table.to_string());
    let (s3, back3) = (schema.to_string(), back.clone());
    let (s_trig, t_trig) = (schema.to_string(), table.to_string());
    let check = Step::new(format!("check:{schema}.{table}"), format!("Check {schema}.{table} is unchanged since the conversion"), Risk::Read)
        .pre(Check::new("InnoDB table identical to the kept MyISAM table", move |ctx| {
            let (ok, seen) = same(ctx, &o1, &tbl1)?;
            Ok(Verdict::check(ok, seen, "identical", "the InnoDB table has changed since the conversion, and swapping back would lose those writes: copy them to the kept table first, or keep the InnoDB table"))
        }))
        .pre(Check::new("no triggers on the InnoDB table", move |ctx| {
            // The swap would keep them on the InnoDB table it sets aside, and the MyISAM table would run without them.
            let tag = ctx.tag();
            let names: Vec<String> = ctx.conn()?.exec(
                format!("SELECT {tag} TRIGGER_NAME FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?"),
                (&s_trig, &t_trig),
            )?;
            Ok(Verdict::check(
                names.is_empty(),
                if names.is_empty() { "none".to_string() } else { names.join(", ") },
                "none",
                format!("{s_trig}.{t_trig} has triggers ({}), which a swap back would leave on the InnoDB table it sets aside: the MyISAM table would run without them; move them by hand (SHOW CREATE TRIGGER) if you must roll back", names.join(", ")),
            ))
        }));
    let swap = Step::new(format!("swap-back:{schema}.{table}"), format!("Swap the MyISAM table back in; keep the InnoDB one as {back}"), Risk::Locking)
        .preview(format!(
            "RENAME TABLE {t} TO {b}, {k} TO {t}   -- queued behind a write guard, after checking again",
            t = crate::sql::qualified(schema, table),
            b = crate::sql::qualified(schema, &back),
            k = crate::sql::qualified(schema, &kept)
        ))
        .act(move |ctx| {
            // The guard is keyed by the table it protects: the current (InnoDB) one.
            let mut current = o2.clone();
            current.name = tbl2.clone();
            copy::acquire_guard(ctx, &current)?;
            let mut kept_info = o2.clone();
            kept_info.name = old_name(&tbl2);
            let (ok, seen) = same(ctx, &kept_info, &tbl2)?;
            if !ok {
                copy::release_guard(ctx, &current);
                return Err(refused(format!("{tbl2} changed while innops was checking ({seen}): nothing was swapped")));
            }
            let r = copy::swap(ctx, &current, &rolled_back_name(&tbl2), &old_name(&tbl2), 60)?;
            // The kept table is the live table again: no longer innops's.
            let tag = ctx.tag();
            own::forget(ctx.conn()?, &tag, &current.schema, &old_name(&tbl2))?;
            Ok(r)
        })
        .post(Check::new("MyISAM table back in place", move |ctx| {
            let tag = ctx.tag();
            let e: Option<Option<String>> = ctx.conn()?.exec_first(
                format!("SELECT {tag} ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"),
                (&s3, &tbl3),
            )?;
            let e = e.flatten().unwrap_or_default();
            Ok(Verdict::check(e.eq_ignore_ascii_case("MyISAM"), format!("{tbl3} is {e}, InnoDB kept as {back3}"), "MyISAM", "the swap back did not complete: check both tables by hand"))
        }));
    let notes = vec![
        format!("the InnoDB table stays as {schema}.{back}; nothing is dropped"),
        binlog.note.clone(),
    ];
    Ok(Plan {
        header: env.header(
            crate::plan::Procedure::ConvertRollback,
            facts,
            serde_json::to_value(&params)?,
            notes,
        ),
        steps: vec![check, swap],
        bench: None,
        locks: vec![format!("table:{schema}.{table}")],
        session: binlog.session,
    })
}
