//! Helpers the convert tests share: a schema `d` set up from SQL, the `innops convert` command on a sandbox, rows
//! and engines read independently of innops, and the usual 30,000-row MyISAM shape.

use mysql::prelude::Queryable;
use mysql::Conn;

use crate::common::{run_innops, Output, Sandboxed};

/// Every row of a table, as text, sorted: compared independently of innops's own checksums.
pub fn rows(conn: &mut Conn, table: &str) -> Vec<Vec<String>> {
    let q = format!("SELECT * FROM `d`.`{}`", table.replace('`', "``"));
    let mut out: Vec<Vec<String>> = conn
        .query::<mysql::Row, _>(q)
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().into_iter().map(|v| v.as_sql(false)).collect())
        .collect();
    out.sort();
    out
}

pub fn engine(conn: &mut Conn, table: &str) -> Option<String> {
    conn.exec_first::<Option<String>, _, _>(
        "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = ?",
        (table,),
    )
    .unwrap()
    .flatten()
}

pub fn setup(sb: &Sandboxed, sql: &str) -> Conn {
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE d").unwrap();
    c.query_drop("USE d").unwrap();
    let mut r = c.query_iter(sql).unwrap();
    while let Some(set) = r.iter() {
        for row in set {
            row.unwrap();
        }
    }
    drop(r);
    c
}

pub fn convert(sb: &Sandboxed, args: &[String], extra_env: &[(&str, &str)]) -> Output {
    let mut all = vec!["convert".to_string()];
    all.extend(args.iter().cloned());
    all.extend([
        "--sandbox".into(),
        sb.sandbox.name.clone(),
        "--sandbox-root".into(),
        sb.root.display().to_string(),
    ]);
    run_innops(&all, extra_env)
}

pub const SHAPE: &str = "CREATE TABLE t (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT UNSIGNED NOT NULL DEFAULT 0, \
    c CHAR(120) NOT NULL DEFAULT '', KEY k_1 (k)) ENGINE=MyISAM; \
    INSERT INTO t (k, c) SELECT seq % 101, CONCAT('c-', seq) FROM seq_1_to_30000;";
