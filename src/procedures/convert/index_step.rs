//! The deferred path's index step, and how innops compares a table's indexes: the secondary indexes are built
//! in one ALTER after the copy, and both the step's checks and verification judge the result the same way
//! (the same differences, the same options set aside on purpose).

use super::*;

/// The `(name, clause)` list of a table's indexes as the server prints them, in its order.
pub(super) fn index_lines(
    ctx: &mut Ctx,
    schema: &str,
    table: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    Ok(load(ctx, schema, table)?
        .map(|i| i.definition.indexes)
        .unwrap_or_default())
}

/// How the indexes `have` differ from the source's, judged as verification judges them.
pub(super) fn index_differences(t: &TableInfo, have: &[(String, String)]) -> Vec<String> {
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

pub(super) fn show_indexes(lines: &[(String, String)]) -> String {
    lines
        .iter()
        .map(|(_, l)| l.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the InnoDB table is meant to differ in, on purpose: an explicit row format InnoDB refuses, and the Aria
/// options it does not get.
pub(super) fn set_aside(t: &TableInfo) -> Vec<&'static str> {
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

pub(super) fn index_step(info: &TableInfo, room: &space::Where) -> Step {
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
