//! `innops convert --drop-kept db.t`: after a soak period, drop the MyISAM table a conversion kept, only when
//! innops's record says it kept it and the table is still exactly what was verified before the swap (row count
//! and checksum, by the method recorded then). A kept table that changed since is refused: someone wrote to it,
//! and those rows would be lost.

use crate::sql::Queryable;

use crate::error::bad_input;
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::convert::copy::old_name;
use crate::procedures::convert::own;
use crate::procedures::convert::schema::TableInfo;
use crate::procedures::convert::verify::{self, Fingerprint};
use crate::procedures::PlanEnv;
use crate::server::facts::ServerFacts;
use crate::sql::qualified;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DropKeptParams {
    pub schema: String,
    pub table: String,
    /// `--binlog`, `--yes`.
    #[serde(flatten)]
    pub asked: crate::procedures::kit::binlog::Asked,
}

/// The kept table's recorded fingerprint, and what it holds now.
fn now_and_then(
    ctx: &mut Ctx,
    p: &DropKeptParams,
) -> anyhow::Result<Option<(Fingerprint, Fingerprint)>> {
    let tag = ctx.tag();
    let kept = old_name(&p.table);
    let Some(rec) =
        own::lookup(ctx.conn()?, &tag, &p.schema, &kept)?.filter(|r| r.kind == own::KEPT)
    else {
        return Ok(None);
    };
    let Some(then) = rec.fingerprint else {
        return Ok(None);
    };
    let Some(info) = TableInfo::load(ctx.conn()?, &tag, &p.schema, &kept)? else {
        return Ok(None);
    };
    let now = verify::fingerprint(ctx.conn()?, &tag, &info, &kept, then.method)?;
    Ok(Some((then, now)))
}

pub fn plan(
    schema: &str,
    table: &str,
    asked: &crate::procedures::kit::binlog::Asked,
    facts: &ServerFacts,
    env: &PlanEnv,
) -> anyhow::Result<Plan> {
    let binlog = asked.decide(&facts.topology, "dropping the kept table")?;
    let tag = "/* innops:convert-drop-kept:plan */";
    let kept = old_name(table);
    let mut conn = env.target.connect()?;
    let rec = own::lookup(&mut conn, tag, schema, &kept)?.filter(|r| r.kind == own::KEPT);
    let Some(rec) = rec else {
        return Err(bad_input(format!(
            "innops has no record of keeping {schema}.{kept} for {schema}.{table}: it drops only the tables it kept (check the name, or drop a table of your own yourself)"
        )));
    };
    if rec.from_elsewhere(own::this_server(&mut conn, tag)?) {
        return Err(crate::error::refused(rec.replicated_refusal("dropping it")));
    }
    let p = DropKeptParams {
        schema: schema.into(),
        table: table.into(),
        asked: asked.clone(),
    };
    let (p1, p2, p3) = (p.clone(), p.clone(), p.clone());
    let target = qualified(schema, &kept);
    let step = Step::new(
        format!("drop-kept:{schema}.{table}"),
        format!("Drop the MyISAM table {schema}.{kept} innops kept when it converted {schema}.{table}"),
        Risk::Destructive,
    )
    .preview(format!("DROP TABLE {target}   -- only if unchanged since the swap"))
    .pre(Check::new("kept table unchanged since the swap", move |ctx| {
        let kept = old_name(&p1.table);
        let tag = ctx.tag();
        let present: Option<u64> = ctx.conn()?.exec_first(
            format!("SELECT {tag} COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"),
            (&p1.schema, &kept),
        )?;
        if present.unwrap_or(0) == 0 {
            return Ok(Verdict::done("already dropped", "the kept table, unchanged"));
        }
        Ok(match now_and_then(ctx, &p1)? {
            None => Verdict::fail("no fingerprint recorded at the swap", "the kept table, unchanged", format!("innops cannot prove {}.{kept} unchanged (its record holds no fingerprint): drop it yourself once you are sure", p1.schema)),
            Some((then, now)) => Verdict::check(
                then == now,
                format!("{} rows, {} {}", now.rows, now.method, now.checksum),
                format!("{} rows, {} {} (verified before the swap)", then.rows, then.method, then.checksum),
                format!("{}.{kept} changed since the swap (someone wrote to it), and dropping it would lose those rows: copy what you need, then drop it yourself", p1.schema),
            ),
        })
    }))
    .act(move |ctx| {
        let tag = ctx.tag();
        let kept = old_name(&p2.table);
        let target = qualified(&p2.schema, &kept);
        ctx.conn()?.query_drop(format!("DROP {tag} TABLE {target}"))?;
        own::forget(ctx.conn()?, &tag, &p2.schema, &kept)?;
        Ok(serde_json::json!({ "dropped": target }))
    })
    .post(Check::new("kept table gone", move |ctx| {
        let tag = ctx.tag();
        let n: Option<u64> = ctx.conn()?.exec_first(
            format!("SELECT {tag} COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"),
            (&p3.schema, old_name(&p3.table)),
        )?;
        let gone = n.unwrap_or(0) == 0;
        Ok(Verdict::check(gone, if gone { "gone" } else { "still there" }, "gone", "DROP TABLE did not take effect: check the table by hand"))
    }));
    Ok(Plan {
        header: env.header(
            crate::plan::Procedure::ConvertDropKept,
            facts,
            serde_json::to_value(&p)?,
            vec![
                format!("drops {schema}.{kept} for good: there is no rollback of {schema}.{table} afterwards"),
                binlog.note.clone(),
            ],
        ),
        steps: vec![step],
        bench: None,
        locks: vec![format!("table:{schema}.{table}")],
        session: binlog.session,
    })
}
