//! Whole-table checks of a dry run (zero dates, rows that break a CHECK constraint) read a MyISAM table, and a
//! MyISAM read holds the table's read lock for the whole statement: one `SELECT SUM(…) FROM t` over 100 GB keeps
//! every writer waiting for minutes while the plan says "risk read, nothing changed". So a check reads the table
//! in short statements instead: the primary key walked in chunks, each one statement over at most `chunk` rows
//! (a derived table with `ORDER BY key LIMIT chunk`), the chunk sized to take about [`TARGET`] and never more
//! than [`MAX_CHUNK`] rows. Writers wait at most one chunk at a time. A table without a primary key is read in
//! one statement only while it is small ([`WHOLE_MAX_ROWS`]); a larger one is not scanned, and the check says so.

use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Value;

use super::keys::{after_key, ident_list, key_columns, next_chunk, read_list, KeyColumn};
use super::schema::TableInfo;
use crate::plan::Ctx;

/// How long one chunk's statement should take.
pub const TARGET: Duration = Duration::from_millis(50);
/// The most rows one statement reads.
pub const MAX_CHUNK: u64 = 20_000;
/// A table without a primary key is read whole only up to this many rows (by the server's estimate).
pub const WHOLE_MAX_ROWS: u64 = 20_000;

/// What a scan found: one sum per expression, or why the table was not read.
#[derive(Debug, Clone, PartialEq)]
pub enum Scanned {
    Sums {
        sums: Vec<u64>,
        /// Statements that read the table.
        statements: u64,
        /// The slowest of them.
        longest: Duration,
    },
    NotScanned(String),
}

/// `SUM(expr)` of each of `exprs` (SQL expressions over the table's columns, each true/false/NULL) over every
/// row of `t`, read in short statements.
pub fn sums(ctx: &mut Ctx, t: &TableInfo, exprs: &[String]) -> anyhow::Result<Scanned> {
    let tag = ctx.tag();
    let select = exprs
        .iter()
        .map(|e| format!("IFNULL(SUM({e}), 0)"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut total = vec![0u64; exprs.len()];
    let pk = t.pk_columns();
    if pk.is_empty() {
        if t.rows_estimate > WHOLE_MAX_ROWS {
            return Ok(Scanned::NotScanned(format!(
                "not scanned in the dry run: {} has no primary key to read it in short steps, and reading about {} rows in one statement would hold its writers that long",
                t.display(),
                t.rows_estimate
            )));
        }
        let started = Instant::now();
        let row: Option<mysql::Row> = ctx
            .conn()?
            .query_first(format!("SELECT {tag} {select} FROM {}", t.qualified()))?;
        add(&mut total, row);
        return Ok(Scanned::Sums {
            sums: total,
            statements: 1,
            longest: started.elapsed(),
        });
    }
    let conn = ctx.conn()?;
    let key: Vec<KeyColumn> = key_columns(conn, &tag, t)?;
    let order = ident_list(&pk);
    let reads = read_list(&key);
    let fixed = crate::testhooks::chunk_rows();
    let mut chunk = fixed.unwrap_or(1000).min(MAX_CHUNK);
    let mut last: Option<Vec<Value>> = None;
    let (mut statements, mut longest) = (0u64, Duration::ZERO);
    loop {
        let (pred, params) = match &last {
            None => ("TRUE".to_string(), Vec::new()),
            Some(l) => after_key(&key, l)?,
        };
        let started = Instant::now();
        let row: Option<mysql::Row> = conn.exec_first(
            format!(
                "SELECT {tag} {select}, COUNT(*) FROM (SELECT * FROM {} FORCE INDEX (PRIMARY) WHERE {pred} ORDER BY {order} LIMIT {chunk}) AS innops_chunk",
                t.qualified()
            ),
            params.clone(),
        )?;
        let took = started.elapsed();
        statements += 1;
        longest = longest.max(took);
        let mut values: Vec<u64> = row.map(row_u64s).unwrap_or_default();
        let n = values.pop().unwrap_or(0);
        for (s, v) in total.iter_mut().zip(values) {
            *s += v;
        }
        if n < chunk {
            break;
        }
        // The chunk's last key, in a statement of its own (as short: the same rows, by the index).
        let next: Option<mysql::Row> = conn.exec_first(
            format!(
                "SELECT {tag} {reads} FROM {} FORCE INDEX (PRIMARY) WHERE {pred} ORDER BY {order} LIMIT 1 OFFSET {}",
                t.qualified(),
                chunk - 1
            ),
            params,
        )?;
        match next {
            Some(r) => last = Some(r.unwrap()),
            None => break,
        }
        chunk = fixed
            .unwrap_or_else(|| next_chunk(chunk, took, TARGET))
            .min(MAX_CHUNK);
    }
    Ok(Scanned::Sums {
        sums: total,
        statements,
        longest,
    })
}

fn row_u64s(r: mysql::Row) -> Vec<u64> {
    r.unwrap()
        .into_iter()
        .map(|v| {
            mysql::from_value_opt::<Option<u64>>(v)
                .ok()
                .flatten()
                .unwrap_or(0)
        })
        .collect()
}

fn add(total: &mut [u64], row: Option<mysql::Row>) {
    for (s, v) in total.iter_mut().zip(row.map(row_u64s).unwrap_or_default()) {
        *s += v;
    }
}

/// How a scan read the table, for a check's observed text.
pub fn how(s: &Scanned) -> String {
    match s {
        Scanned::Sums {
            statements,
            longest,
            ..
        } => format!(
            "read in {statements} short statement(s), the longest {} ms",
            longest.as_millis()
        ),
        Scanned::NotScanned(why) => why.clone(),
    }
}
