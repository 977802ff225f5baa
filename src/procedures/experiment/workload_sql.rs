//! An experiment's workload given as SQL (`--workload-sql FILE`, or `workload-sql` in a study): the file's
//! statements, read and checked once ([`crate::bench::sqlfile`]) and kept in plan.json, so `resume` runs the
//! same statements whatever happened to the file since. Each arm runs them on its own table (innops_bench's
//! `sbtest1`, or its copy), where a `{name}` reference becomes the arm's generated column when its table has
//! one of that name, and the column variant's expression otherwise: the baseline computes in the query what
//! the variants read from the column.
//!
//! Before an arm measures, its pre-check prepares every statement in the arm's schema (a statement is
//! prepared, never run): a statement the server refuses there stops the experiment at that step, before it
//! measures, naming the statement and the server's error.

use serde::{Deserialize, Serialize};

use super::{tables, ExperimentParams};
use crate::bench::experiment::Arm;
use crate::bench::sqlfile::{self, FileStatement};
use crate::bench::Workload;
use crate::error::bad_input;
use crate::plan::{Check, Verdict};
use crate::sql::quote_ident;

/// The SQL workload as recorded in plan.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqlWorkload {
    /// The file it was read from, as given.
    pub file: String,
    pub statements: Vec<FileStatement>,
}

impl SqlWorkload {
    /// Check the text of `file`; the refusal names the file and says why, in one sentence.
    pub fn from_text(file: &str, text: &str) -> anyhow::Result<SqlWorkload> {
        let statements = sqlfile::parse(text).map_err(|why| {
            bad_input(format!(
                "the SQL workload {file}: {why}; fix it and run the experiment again"
            ))
        })?;
        Ok(SqlWorkload {
            file: file.to_string(),
            statements,
        })
    }

    /// The name the experiment shows for it: `sql:` and the file's name.
    pub fn name(&self) -> String {
        let base = std::path::Path::new(&self.file)
            .file_name()
            .map_or(self.file.clone(), |f| f.to_string_lossy().into_owned());
        format!("sql:{base}")
    }
}

/// The generated column of copy `n`'s variant, if it has one: its name and expression.
fn column_of(p: &ExperimentParams, n: Option<usize>) -> Option<(String, String)> {
    let v = tables::variant(p, n?).ok()?;
    v.column.map(|c| (c.name.clone(), c.expr.clone()))
}

/// What `{name}` stands for on copy `n`: the column where the copy has it, else the expression of the column
/// variant that defines it (the same in every variant, which [`check`] proved).
fn resolve(p: &ExperimentParams, n: Option<usize>, name: &str) -> anyhow::Result<String> {
    if let Some((col, _)) = column_of(p, n).filter(|(c, _)| c == name) {
        return Ok(quote_ident(&col));
    }
    (1..=p.tables.len())
        .find_map(|i| column_of(p, Some(i)).filter(|(c, _)| c == name))
        .map(|(_, expr)| format!("({expr})"))
        .ok_or_else(|| {
            bad_input(format!(
                "the SQL workload names {{{name}}}, which no --column-variant defines: add one, as --column-variant '{name} INT UNSIGNED AS (CRC32(c)) VIRTUAL INDEXED', or write the expression itself"
            ))
        })
}

/// Every `{name}` of the workload is defined by a column variant, each name with one expression and type.
pub fn check(p: &ExperimentParams) -> anyhow::Result<()> {
    let Some(w) = &p.sql else {
        return Ok(());
    };
    let defs: Vec<_> = (1..=p.tables.len())
        .filter_map(|i| tables::variant(p, i).ok()?.column)
        .collect();
    for (i, a) in defs.iter().enumerate() {
        if let Some(b) = defs[..i]
            .iter()
            .find(|b| b.name == a.name && (b.expr != a.expr || b.col_type != a.col_type))
        {
            return Err(bad_input(format!(
                "the column variants define {} twice, as {} AS ({}) and {} AS ({}): give every variant of one column the same type and expression (they differ in how it is kept), or name them apart",
                a.name, b.col_type, b.expr, a.col_type, a.expr
            )));
        }
    }
    for s in &w.statements {
        for c in s.columns() {
            resolve(p, None, c)?;
        }
    }
    Ok(())
}

/// The workload an arm on copy `n` (None: innops_bench's own table) runs.
pub fn workload(
    p: &ExperimentParams,
    w: &SqlWorkload,
    n: Option<usize>,
) -> anyhow::Result<Workload> {
    for s in &w.statements {
        for c in s.columns() {
            resolve(p, n, c)?;
        }
    }
    let statements = w
        .statements
        .iter()
        .map(|s| s.resolve(&|c| resolve(p, n, c).unwrap_or_default()))
        .collect();
    Ok(Workload::Sql {
        name: w.name().trim_start_matches("sql:").to_string(),
        statements,
    })
}

/// The arm-run's pre-check: every statement prepares in the arm's schema (prepared and closed, never run).
pub fn prepares_check(p: &ExperimentParams, arm: &Arm) -> Check {
    let n = tables::copy_of(p, arm);
    let db = n.map_or(crate::bench::PLAN_DB.to_string(), tables::schema);
    let w = p.arm_workload(arm);
    Check::after_prior(
        format!("the SQL workload's statements prepare in {db}"),
        move |ctx| {
            let expected = "every statement prepared";
            if let Some(f) = n.and_then(|n| tables::failed(ctx.run_dir.as_deref(), n)) {
                return Ok(Verdict::done(format!("left out: {}", f.why), expected));
            }
            let Workload::Sql { statements, .. } =
                w.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?
            else {
                return Ok(Verdict::pass("not an SQL workload", expected));
            };
            let tag = ctx.tag();
            let conn = ctx.conn()?;
            let current: Option<Option<String>> =
                crate::sql::Queryable::query_first(conn, format!("SELECT {tag} DATABASE()"))?;
            mysql::prelude::Queryable::query_drop(conn, format!("USE {}", quote_ident(&db)))?;
            let mut refused = None;
            for (i, s) in statements.iter().enumerate() {
                match mysql::prelude::Queryable::prep(conn, &s.sql) {
                    Ok(stmt) => mysql::prelude::Queryable::close(conn, stmt)?,
                    Err(e) => {
                        refused = Some(format!(
                            "statement {} ({}): {}",
                            i + 1,
                            s.sql,
                            crate::error::describe_mysql(&e)
                        ));
                        break;
                    }
                }
            }
            if let Some(Some(d)) = current {
                mysql::prelude::Queryable::query_drop(conn, format!("USE {}", quote_ident(&d)))?;
            }
            Ok(match refused {
                None => Verdict::pass(format!("{} prepared", statements.len()), expected),
                Some(why) => Verdict::fail(
                    format!("the server refused {why}"),
                    expected,
                    "the server cannot prepare a statement of the SQL workload on the arm's table: fix the file and run the experiment again",
                ),
            })
        },
    )
}
