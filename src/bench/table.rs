//! The `table:DB.TABLE` workload: read a real table's keys and secondary indexes from `information_schema`,
//! sample rows to take lookup values from, and build the statements (point reads and ranges on the primary
//! key, one lookup through each secondary index). It reads only: it is the workload to run around a
//! conversion of that table.

use mysql::prelude::Queryable;
use mysql::{Conn, Value};

use super::distribution::SbRng;
use super::run::RunSpec;
use super::workloads::{tag_sql, RANGE_SIZE};
use crate::error::bad_input;
use crate::sql::{qualified, quote_ident};

/// Rows sampled to draw lookup values from.
pub const SAMPLE_ROWS: usize = 1000;

/// The parts of a table's definition the workload needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableShape {
    pub db: String,
    pub table: String,
    /// `PRIMARY`, or the first unique index when there is no primary key.
    pub key_name: String,
    pub key: Vec<String>,
    /// True when the key's first column is an integer type (sampled by probing between MIN and MAX).
    pub key_is_integer: bool,
    /// Secondary (BTREE/HASH) indexes other than the key: name and columns in order.
    pub indexes: Vec<(String, Vec<String>)>,
    pub rows_estimate: u64,
}

/// Statements and sampled values, ready to run.
#[derive(Debug, Clone)]
pub struct TablePlan {
    pub shape: TableShape,
    pub point_sql: String,
    pub range_sql: String,
    pub index_sql: Vec<String>,
    /// The write probe's locking read by key ([`locking_point`]).
    pub lock_sql: String,
    /// Columns of a sample row: the key columns, then every index column not already there.
    pub columns: Vec<String>,
    pub samples: Vec<Vec<Value>>,
}

/// Build the statements for a shape (pure, so it is tested without a server).
pub fn statements(shape: &TableShape, tag: &str) -> (String, String, Vec<String>) {
    let t = qualified(&shape.db, &shape.table);
    let eq = |cols: &[String], op: &str| {
        cols.iter()
            .map(|c| format!("{} {op} ?", quote_ident(c)))
            .collect::<Vec<_>>()
            .join(" AND ")
    };
    let point = tag_sql(
        &format!("SELECT * FROM {t} WHERE {}", eq(&shape.key, "=")),
        tag,
    );
    let order = shape
        .key
        .iter()
        .map(|c| quote_ident(c))
        .collect::<Vec<_>>()
        .join(", ");
    let range = tag_sql(
        &format!(
            "SELECT * FROM {t} FORCE INDEX ({}) WHERE {} >= ? ORDER BY {order} LIMIT {RANGE_SIZE}",
            quote_ident(&shape.key_name),
            quote_ident(&shape.key[0])
        ),
        tag,
    );
    // Null-safe equality, so sampled NULLs still find their rows through the index.
    let index = shape
        .indexes
        .iter()
        .map(|(name, cols)| {
            tag_sql(
                &format!(
                    "SELECT * FROM {t} FORCE INDEX ({}) WHERE {} LIMIT {RANGE_SIZE}",
                    quote_ident(name),
                    eq(cols, "<=>")
                ),
                tag,
            )
        })
        .collect();
    (point, range, index)
}

/// The write probe's statement: the key of one row, read with the locks a write takes (`FOR UPDATE`).
pub fn locking_point(shape: &TableShape, tag: &str) -> String {
    let t = qualified(&shape.db, &shape.table);
    let cols = shape
        .key
        .iter()
        .map(|c| quote_ident(c))
        .collect::<Vec<_>>()
        .join(", ");
    let cond = shape
        .key
        .iter()
        .map(|c| format!("{} = ?", quote_ident(c)))
        .collect::<Vec<_>>()
        .join(" AND ");
    tag_sql(
        &format!("SELECT {cols} FROM {t} WHERE {cond} FOR UPDATE"),
        tag,
    )
}

/// The sample columns: key first, then the index columns in first-seen order.
pub fn sample_columns(shape: &TableShape) -> Vec<String> {
    let mut cols = shape.key.clone();
    for (_, ic) in &shape.indexes {
        for c in ic {
            if !cols.contains(c) {
                cols.push(c.clone());
            }
        }
    }
    cols
}

fn is_integer(data_type: &str) -> bool {
    matches!(
        data_type.to_ascii_lowercase().as_str(),
        "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint"
    )
}

/// Read the table's key and indexes.
pub fn read_shape(conn: &mut Conn, db: &str, table: &str, tag: &str) -> anyhow::Result<TableShape> {
    let exists: Option<(String, Option<u64>)> = conn.exec_first(
        tag_sql("SELECT ENGINE, TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", tag),
        (db, table),
    )?;
    let Some((_, rows_estimate)) = exists else {
        return Err(bad_input(format!("table {db}.{table} does not exist (or is a view): name an existing table as table:DB.TABLE")));
    };
    let rows: Vec<(String, u32, String, i64, String)> = conn.exec(
        tag_sql(
            "SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE, INDEX_TYPE FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME = 'PRIMARY' DESC, NON_UNIQUE, INDEX_NAME, SEQ_IN_INDEX",
            tag,
        ),
        (db, table),
    )?;
    let mut indexes: Vec<(String, bool, String, Vec<String>)> = Vec::new();
    for (name, _, col, non_unique, kind) in rows {
        match indexes.last_mut() {
            Some(last) if last.0 == name => last.3.push(col),
            _ => indexes.push((name, non_unique == 0, kind, vec![col])),
        }
    }
    let usable = |kind: &str| matches!(kind, "BTREE" | "HASH");
    let key_pos = indexes
        .iter()
        .position(|(n, _, k, _)| n == "PRIMARY" && usable(k))
        .or_else(|| indexes.iter().position(|(_, unique, k, _)| *unique && usable(k)))
        .ok_or_else(|| {
            bad_input(format!(
                "table {db}.{table} has no primary key or unique index: the table workload reads rows by key; add a key or benchmark another table"
            ))
        })?;
    let (key_name, _, _, key) = indexes.remove(key_pos);
    let types: Vec<(String, String)> = conn.exec(
        tag_sql("SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", tag),
        (db, table),
    )?;
    let key_is_integer = types.iter().any(|(c, t)| c == &key[0] && is_integer(t));
    Ok(TableShape {
        db: db.into(),
        table: table.into(),
        key_name,
        key,
        key_is_integer,
        indexes: indexes
            .into_iter()
            .filter(|(_, _, k, _)| usable(k))
            .map(|(n, _, _, c)| (n, c))
            .collect(),
        rows_estimate: rows_estimate.unwrap_or(0),
    })
}

/// Sample up to [`SAMPLE_ROWS`] rows: by probing random points of an integer key (cheap on any size), else by
/// a random filter over a scan.
pub fn sample(
    conn: &mut Conn,
    shape: &TableShape,
    columns: &[String],
    seed: u64,
    tag: &str,
) -> anyhow::Result<Vec<Vec<Value>>> {
    let t = qualified(&shape.db, &shape.table);
    let cols = columns
        .iter()
        .map(|c| quote_ident(c))
        .collect::<Vec<_>>()
        .join(", ");
    let k0 = quote_ident(&shape.key[0]);
    let key_idx = quote_ident(&shape.key_name);
    let mut out = Vec::new();
    if shape.key_is_integer {
        let bounds: Option<(Option<i64>, Option<i64>)> = conn.query_first(tag_sql(
            &format!("SELECT MIN({k0}), MAX({k0}) FROM {t}"),
            tag,
        ))?;
        if let Some((Some(lo), Some(hi))) = bounds {
            let probe = conn.prep(tag_sql(&format!("SELECT {cols} FROM {t} FORCE INDEX ({key_idx}) WHERE {k0} >= ? ORDER BY {k0} LIMIT 1"), tag))?;
            let mut rng = SbRng::new(seed, 0xA11CE);
            let span = (hi as i128 - lo as i128 + 1) as f64;
            for _ in 0..SAMPLE_ROWS {
                let v = lo as i128 + (rng.uniform_double() * span) as i128;
                let row: Option<mysql::Row> = conn.exec_first(&probe, (v as i64,))?;
                if let Some(row) = row {
                    out.push(row.unwrap());
                }
            }
            conn.close(probe)?;
        }
    } else {
        let p = (2.0 * SAMPLE_ROWS as f64 / shape.rows_estimate.max(1) as f64).min(1.0);
        let rows: Vec<mysql::Row> = conn.exec(
            tag_sql(
                &format!("SELECT {cols} FROM {t} WHERE RAND() < ? LIMIT {SAMPLE_ROWS}"),
                tag,
            ),
            (p,),
        )?;
        out = rows.into_iter().map(|r| r.unwrap()).collect();
    }
    if out.is_empty() {
        return Err(bad_input(format!(
            "table {}.{} has no rows to sample: the table workload needs data to look up",
            shape.db, shape.table
        )));
    }
    Ok(out)
}

/// Shape, statements and samples for a run.
pub fn plan(conn: &mut Conn, db: &str, table: &str, spec: &RunSpec) -> anyhow::Result<TablePlan> {
    let shape = read_shape(conn, db, table, &spec.tag)?;
    let columns = sample_columns(&shape);
    let samples = sample(conn, &shape, &columns, spec.seed, &spec.tag)?;
    let (point_sql, range_sql, index_sql) = statements(&shape, &spec.tag);
    let lock_sql = locking_point(&shape, &spec.tag);
    Ok(TablePlan {
        shape,
        point_sql,
        range_sql,
        index_sql,
        lock_sql,
        columns,
        samples,
    })
}

impl TablePlan {
    fn values(&self, row: usize, cols: &[String]) -> Vec<Value> {
        let r = &self.samples[row % self.samples.len()];
        cols.iter()
            .map(|c| {
                self.columns
                    .iter()
                    .position(|x| x == c)
                    .map(|i| r[i].clone())
                    .unwrap_or(Value::NULL)
            })
            .collect()
    }
    pub fn point_params(&self, row: usize) -> Vec<Value> {
        self.values(row, &self.shape.key)
    }
    pub fn range_params(&self, row: usize) -> Vec<Value> {
        self.values(row, &self.shape.key[..1])
    }
    pub fn index_params(&self, index: usize, row: usize) -> Vec<Value> {
        self.values(row, &self.shape.indexes[index].1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> TableShape {
        TableShape {
            db: "shop".into(),
            table: "orders".into(),
            key_name: "PRIMARY".into(),
            key: vec!["id".into()],
            key_is_integer: true,
            indexes: vec![
                (
                    "by_customer".into(),
                    vec!["customer".into(), "created".into()],
                ),
                ("by_sku".into(), vec!["sku".into()]),
            ],
            rows_estimate: 1000,
        }
    }

    #[test]
    fn statements_read_by_key_by_range_and_through_each_index() {
        let (point, range, index) = statements(&shape(), "/* t */");
        assert_eq!(
            point,
            "SELECT /* t */ * FROM `shop`.`orders` WHERE `id` = ?"
        );
        assert_eq!(range, "SELECT /* t */ * FROM `shop`.`orders` FORCE INDEX (`PRIMARY`) WHERE `id` >= ? ORDER BY `id` LIMIT 100");
        assert_eq!(
            index,
            vec![
                "SELECT /* t */ * FROM `shop`.`orders` FORCE INDEX (`by_customer`) WHERE `customer` <=> ? AND `created` <=> ? LIMIT 100",
                "SELECT /* t */ * FROM `shop`.`orders` FORCE INDEX (`by_sku`) WHERE `sku` <=> ? LIMIT 100",
            ]
        );
    }

    #[test]
    fn the_write_probe_locks_one_row_by_its_key_and_reads_only_the_key() {
        let mut s = shape();
        assert_eq!(
            locking_point(&s, "/* t */"),
            "SELECT /* t */ `id` FROM `shop`.`orders` WHERE `id` = ? FOR UPDATE"
        );
        s.key = vec!["a".into(), "b`c".into()];
        assert_eq!(
            locking_point(&s, "/* t */"),
            "SELECT /* t */ `a`, `b``c` FROM `shop`.`orders` WHERE `a` = ? AND `b``c` = ? FOR UPDATE"
        );
    }

    #[test]
    fn sample_rows_hold_each_column_once_and_params_pick_theirs() {
        let s = shape();
        let cols = sample_columns(&s);
        assert_eq!(cols, vec!["id", "customer", "created", "sku"]);
        let plan = TablePlan {
            point_sql: String::new(),
            range_sql: String::new(),
            index_sql: Vec::new(),
            lock_sql: String::new(),
            samples: vec![vec![
                Value::Int(7),
                Value::Int(3),
                Value::from("2024-01-01"),
                Value::NULL,
            ]],
            columns: cols,
            shape: s,
        };
        assert_eq!(plan.point_params(0), vec![Value::Int(7)]);
        assert_eq!(
            plan.index_params(0, 0),
            vec![Value::Int(3), Value::from("2024-01-01")]
        );
        assert_eq!(plan.index_params(1, 0), vec![Value::NULL]);
    }
}
