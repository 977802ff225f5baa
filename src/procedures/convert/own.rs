//! innops's own tables: the shadow a copy fills and the MyISAM table a swap keeps. innops knows them by a
//! record it writes on the server (`innops`.`own_tables`), never by their names alone: a user table called
//! `_orders_myisam_old` is a user table and converts like any other, and innops's kept tables are skipped by
//! `--all-myisam`, listed apart by `inspect`, and dropped only through `--drop-kept`, which first proves them
//! unchanged since the swap against the fingerprint recorded there.
//!
//! Each record names the server whose run made it (`origin_server_id`, part of the key): a run on a primary
//! writes its records through the binary log, so its replicas hold them too, with the primary's id; a replica's
//! own run (`--binlog local`) writes them with `sql_log_bin=0` and its own id. The two never collide, and a
//! replica knows a table that replication made (a shadow the primary's run is filling, a kept table) from one
//! of its own: it never calls the first "interrupted", and never drops either alone.

use crate::sql::Queryable;
use mysql::Conn;

use crate::procedures::convert::verify::{Fingerprint, Method};

/// The schema and table of the record.
pub const SCHEMA: &str = "innops";
pub const TABLE: &str = "own_tables";

/// What a recorded table is.
pub const SHADOW: &str = "shadow";
pub const KEPT: &str = "kept";

/// One recorded table.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Record {
    pub kind: String,
    pub schema: String,
    pub name: String,
    /// The table it belongs to (the one converted).
    pub of_table: String,
    /// For a kept table: the source as verified before the swap.
    pub fingerprint: Option<Fingerprint>,
    pub run_dir: String,
    /// The `server_id` of the server whose run made the record (0: recorded before innops kept it).
    pub origin: u64,
}

impl Record {
    /// Made by another server's run and brought here by replication: `this` is this server's `server_id`.
    pub fn from_elsewhere(&self, this: u64) -> bool {
        self.origin != 0 && self.origin != this
    }

    /// The sentence of a refusal to change a table replication made here, naming the server that owns it.
    pub fn replicated_refusal(&self, what: &str) -> String {
        format!(
            "{}.{} was made by the conversion of {} on server_id {} and reached this server by replication, so {what} here would make this replica differ from its primary: do it on that server (its writes replicate here), or let its run finish",
            self.schema, self.name, self.of_table, self.origin
        )
    }
}

/// This server's `server_id`, read as a value (a statement that named `@@server_id` would replicate as text
/// and mean the replica's own).
pub fn this_server(conn: &mut Conn, tag: &str) -> anyhow::Result<u64> {
    Ok(conn
        .query_first::<u64, _>(format!("SELECT {tag} @@server_id"))?
        .unwrap_or(0))
}

fn qualified() -> String {
    crate::sql::qualified(SCHEMA, TABLE)
}

/// Create the record's schema and table if they are missing.
pub fn ensure(conn: &mut Conn, tag: &str) -> anyhow::Result<()> {
    conn.query_drop(format!(
        "CREATE {tag} DATABASE IF NOT EXISTS {}",
        crate::sql::quote_ident(SCHEMA)
    ))?;
    conn.query_drop(format!(
        "CREATE {tag} TABLE IF NOT EXISTS {} (\
         table_schema VARCHAR(64) NOT NULL, table_name VARCHAR(64) NOT NULL, kind VARCHAR(16) NOT NULL, \
         of_table VARCHAR(64) NOT NULL, verified_rows BIGINT UNSIGNED NULL, method VARCHAR(32) NULL, \
         checksum VARCHAR(80) NULL, run_dir VARCHAR(1024) NOT NULL DEFAULT '', \
         recorded_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), \
         origin_server_id INT UNSIGNED NOT NULL DEFAULT 0, PRIMARY KEY (table_schema, table_name, origin_server_id)\
         ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin \
         COMMENT='tables innops made or kept: shadows of copies, MyISAM tables kept by a conversion'",
        qualified()
    ))?;
    // A record table of an earlier innops has no origin: add it, idempotently (on MariaDB a replica that
    // already added it applies the primary's statement without an error).
    let has_origin: Option<u64> = conn.exec_first(
        format!("SELECT {tag} COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = 'origin_server_id'"),
        (SCHEMA, TABLE),
    )?;
    if has_origin == Some(0) {
        let mariadb = conn
            .query_first::<String, _>(format!("SELECT {tag} VERSION()"))?
            .is_some_and(|v| v.contains("MariaDB"));
        conn.query_drop(format!(
            "ALTER {tag} TABLE {} ADD COLUMN {}origin_server_id INT UNSIGNED NOT NULL DEFAULT 0, DROP PRIMARY KEY, ADD PRIMARY KEY (table_schema, table_name, origin_server_id)",
            qualified(),
            if mariadb { "IF NOT EXISTS " } else { "" }
        ))?;
    }
    Ok(())
}

/// Record `schema.name` as innops's own.
pub fn record(conn: &mut Conn, tag: &str, r: &Record) -> anyhow::Result<()> {
    ensure(conn, tag)?;
    let (rows, method, checksum) = match &r.fingerprint {
        Some(f) => (
            Some(f.rows),
            Some(
                serde_json::to_value(f.method)?
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            ),
            Some(f.checksum.clone()),
        ),
        None => (None, None, None),
    };
    let origin = this_server(conn, tag)?;
    conn.exec_drop(
        format!(
            "REPLACE {tag} INTO {} (table_schema, table_name, kind, of_table, verified_rows, method, checksum, run_dir, origin_server_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            qualified()
        ),
        (&r.schema, &r.name, &r.kind, &r.of_table, rows, method, checksum, &r.run_dir, origin),
    )?;
    Ok(())
}

/// Forget this server's record of `schema.name` (it is gone, or a user table again). Another server's record
/// stays: that server's run forgets it, and its statement replicates here.
pub fn forget(conn: &mut Conn, tag: &str, schema: &str, name: &str) -> anyhow::Result<()> {
    if !exists(conn, tag)? {
        return Ok(());
    }
    let origin = this_server(conn, tag)?;
    conn.exec_drop(
        format!(
            "DELETE {tag} FROM {} WHERE table_schema = ? AND table_name = ? AND origin_server_id IN (0, ?)",
            qualified()
        ),
        (schema, name, origin),
    )?;
    Ok(())
}

fn exists(conn: &mut Conn, tag: &str) -> anyhow::Result<bool> {
    let n: Option<u64> = conn.exec_first(
        format!("SELECT {tag} COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?"),
        (SCHEMA, TABLE),
    )?;
    Ok(n.unwrap_or(0) > 0)
}

type Row = (
    String,
    String,
    String,
    String,
    Option<u64>,
    Option<String>,
    Option<String>,
    String,
    u64,
);

fn from_row(
    (schema, name, kind, of_table, rows, method, checksum, run_dir, origin): Row,
) -> Record {
    let fingerprint = match (rows, method, checksum) {
        (Some(rows), Some(m), Some(checksum)) => {
            serde_json::from_value::<Method>(serde_json::Value::String(m))
                .ok()
                .map(|method| Fingerprint {
                    rows,
                    method,
                    checksum,
                })
        }
        _ => None,
    };
    Record {
        kind,
        schema,
        name,
        of_table,
        fingerprint,
        run_dir,
        origin,
    }
}

const COLUMNS: &str =
    "table_schema, table_name, kind, of_table, verified_rows, method, checksum, run_dir, origin_server_id";

/// The record of `schema.name`, if innops made or kept it: this server's own first, else the one replication
/// brought.
pub fn lookup(
    conn: &mut Conn,
    tag: &str,
    schema: &str,
    name: &str,
) -> anyhow::Result<Option<Record>> {
    if !exists(conn, tag)? {
        return Ok(None);
    }
    let origin = this_server(conn, tag)?;
    let row: Option<Row> = conn.exec_first(
        format!(
            "SELECT {tag} {COLUMNS} FROM {} WHERE table_schema = ? AND table_name = ? ORDER BY origin_server_id IN (0, ?) DESC LIMIT 1",
            qualified()
        ),
        (schema, name, origin),
    )?;
    Ok(row.map(from_row))
}

/// Every recorded table of `kind`.
pub fn all(conn: &mut Conn, tag: &str, kind: &str) -> anyhow::Result<Vec<Record>> {
    if !exists(conn, tag)? {
        return Ok(Vec::new());
    }
    let rows: Vec<Row> = conn.exec(
        format!(
            "SELECT {tag} {COLUMNS} FROM {} WHERE kind = ? ORDER BY table_schema, table_name",
            qualified()
        ),
        (kind,),
    )?;
    Ok(rows.into_iter().map(from_row).collect())
}
