//! `prewarm`: oltp_common.lua's `cmd_prewarm` — read every sbtest table through each of its indexes, so their
//! pages are in the buffer pool before a run measures anything.
//!
//! sysbench 1.0.20 runs `ANALYZE TABLE`, then `SELECT AVG(id) FROM (SELECT * FROM t FORCE KEY (PRIMARY) LIMIT
//! table_size) t` and a `k LIKE '%0%'` scan it leaves to the optimizer. innops names the indexes the table has
//! (from information_schema) and forces each one, so what is read is what was meant: the clustered index whole
//! (the primary key, or a table scan that ignores the secondary indexes when `--secondary` left the table
//! without one) and every secondary index whole (a covering count), however many rows the table holds now.
//! `ANALYZE` is `NO_WRITE_TO_BINLOG`: refreshing a table's statistics is no reason for a replica to receive a
//! transaction it did not have.

use std::time::Instant;

use crate::sql::Queryable;
use mysql::Conn;
use serde::Serialize;

use super::prepare::missing_tables;
use super::run::RunSpec;
use super::workloads::tag_sql;
use crate::error::bad_input;
use crate::server::connect::Target;
use crate::sql::quote_ident;

/// What `prewarm` read.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Prewarmed {
    pub db: String,
    pub tables: Vec<String>,
    /// Indexes read, in all tables (a table without a primary key counts its table scan as one).
    pub indexes: usize,
    pub seconds: f64,
}

/// The statements that read table `t` of `db` whole through each index: `indexes` are the table's index names
/// (`PRIMARY` among them when it has a primary key).
pub fn read_statements(db: &str, t: &str, indexes: &[String], tag: &str) -> Vec<String> {
    let table = format!("{}.{}", quote_ident(db), quote_ident(t));
    let secondary: Vec<&String> = indexes.iter().filter(|i| *i != "PRIMARY").collect();
    let clustered = if indexes.iter().any(|i| i == "PRIMARY") {
        format!("SELECT COUNT(*) FROM {table} FORCE INDEX (PRIMARY)")
    } else if secondary.is_empty() {
        format!("SELECT COUNT(*) FROM {table}")
    } else {
        let names: Vec<String> = secondary.iter().map(|i| quote_ident(i)).collect();
        format!(
            "SELECT COUNT(*) FROM {table} IGNORE INDEX ({})",
            names.join(", ")
        )
    };
    std::iter::once(clustered)
        .chain(secondary.iter().map(|i| {
            format!(
                "SELECT COUNT(*) FROM {table} FORCE INDEX ({})",
                quote_ident(i)
            )
        }))
        .map(|sql| tag_sql(&sql, tag))
        .collect()
}

fn index_names(conn: &mut Conn, db: &str, t: &str, tag: &str) -> anyhow::Result<Vec<String>> {
    Ok(conn.exec(
        tag_sql(
            "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME",
            tag,
        ),
        (db, t),
    )?)
}

/// The sbtest tables of a spec, refused in one sentence when one is missing.
pub fn sbtest_tables(
    conn: &mut Conn,
    target: &Target,
    spec: &RunSpec,
) -> anyhow::Result<Vec<String>> {
    if let Some(t) = missing_tables(conn, &spec.db, spec.tables, &spec.tag)?.first() {
        return Err(bad_input(format!(
            "table {}.sbtest{t} does not exist on {}: run `innops bench {} prepare --db {} --tables {}` first, or give the --tables it was prepared with",
            spec.db, target.label, spec.workload, spec.db, spec.tables
        )));
    }
    Ok((1..=spec.tables).map(|n| format!("sbtest{n}")).collect())
}

/// Prewarm `tables` of `db`, one after another, printing sysbench's line per table on stderr unless `quiet`.
pub fn prewarm(
    conn: &mut Conn,
    db: &str,
    tables: Vec<String>,
    tag: &str,
    quiet: bool,
) -> anyhow::Result<Prewarmed> {
    let started = Instant::now();
    let mut indexes = 0;
    for t in &tables {
        if !quiet {
            crate::progress::print_line(&format!("Prewarming table {db}.{t}"));
        }
        conn.query_drop(tag_sql(
            &format!(
                "ANALYZE NO_WRITE_TO_BINLOG TABLE {}.{}",
                quote_ident(db),
                quote_ident(t)
            ),
            tag,
        ))?;
        let names = index_names(conn, db, t, tag)?;
        let reads = read_statements(db, t, &names, tag);
        indexes += reads.len();
        for sql in reads {
            conn.query_drop(sql)?;
        }
    }
    Ok(Prewarmed {
        db: db.to_string(),
        tables,
        indexes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_is_read_by_name_and_the_clustered_one_first() {
        let ix = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            read_statements("sb`x", "sbtest1", &ix(&["PRIMARY", "k_1"]), "/* t */"),
            vec![
                "SELECT /* t */ COUNT(*) FROM `sb``x`.`sbtest1` FORCE INDEX (PRIMARY)",
                "SELECT /* t */ COUNT(*) FROM `sb``x`.`sbtest1` FORCE INDEX (`k_1`)",
            ]
        );
        // --secondary: no primary key; the table scan must not be answered from a secondary index.
        assert_eq!(
            read_statements("sb", "sbtest2", &ix(&["k_2", "xid"]), "/* t */")[0],
            "SELECT /* t */ COUNT(*) FROM `sb`.`sbtest2` IGNORE INDEX (`k_2`, `xid`)"
        );
        assert_eq!(
            read_statements("sb", "sbtest3", &[], "/* t */"),
            vec!["SELECT /* t */ COUNT(*) FROM `sb`.`sbtest3`"]
        );
    }
}
