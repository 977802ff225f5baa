//! A table's definition for the page parser (`pages::def`), asked of the server: the stored columns from
//! information_schema.COLUMNS, and the clustered index — its id, root page and fields in order — from InnoDB's
//! own dictionary (`INNODB_SYS_TABLES`, `INNODB_SYS_INDEXES`, `INNODB_SYS_FIELDS`), which names the index InnoDB
//! really clusters by, the hidden row id (`GEN_CLUST_INDEX`) included. [`TableInfo`](super::TableInfo) does not
//! fit here: it leaves out stored generated columns and says nothing of lengths or nullability.

use mysql::prelude::Queryable;
use mysql::Conn;

use super::TableName;
use crate::error::refused;
use crate::pages::def::{table_def, ColumnSpec, TableDef};

/// A table as the page parser reads it: the definition, and where its clustered index is in the `.ibd`.
#[derive(Debug, Clone)]
pub struct PagedTable {
    pub def: TableDef,
    /// The clustered index's id (bytes 66..74 of its pages) and root page.
    pub index_id: u64,
    pub root: u32,
}

/// Ask the server for `name`'s definition as the page parser needs it.
pub fn page_def(conn: &mut Conn, tag: &str, name: &TableName) -> anyhow::Result<PagedTable> {
    type Col = (
        String,
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        String,
    );
    let cols: Vec<Col> = conn.exec(
        format!(
            "SELECT {tag} COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, COLLATION_NAME, EXTRA \
             FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION"
        ),
        (&name.db, &name.table),
    )?;
    let specs: Vec<ColumnSpec> = cols
        .into_iter()
        .map(
            |(name, data_type, column_type, nullable, charset, collation, extra)| ColumnSpec {
                name,
                data_type,
                column_type,
                nullable: nullable.eq_ignore_ascii_case("YES"),
                charset,
                collation,
                extra,
            },
        )
        .collect();
    let sys_name = format!("{}/{}", name.db, name.table);
    let clustered: Option<(u64, String, u32, String)> = conn.exec_first(
        format!(
            "SELECT {tag} i.INDEX_ID, i.NAME, i.PAGE_NO, t.ROW_FORMAT FROM information_schema.INNODB_SYS_TABLES t \
             JOIN information_schema.INNODB_SYS_INDEXES i ON i.TABLE_ID = t.TABLE_ID \
             WHERE t.NAME = ? AND i.TYPE & 1 = 1"
        ),
        (&sys_name,),
    )?;
    let Some((index_id, index, root, format)) = clustered else {
        return Err(refused(format!(
            "InnoDB's dictionary lists no clustered index for {name}: only InnoDB tables can be read from pages"
        )));
    };
    let key: Vec<String> = if index == "GEN_CLUST_INDEX" {
        Vec::new()
    } else {
        let prefixed: Option<u64> = conn.exec_first(
            format!(
                "SELECT {tag} COUNT(*) FROM information_schema.STATISTICS \
                 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND INDEX_NAME = ? AND SUB_PART IS NOT NULL"
            ),
            (&name.db, &name.table, &index),
        )?;
        if prefixed.unwrap_or(0) > 0 {
            return Err(refused(format!(
                "{name}'s clustered index {index} holds a column prefix, which the page parser does not read yet"
            )));
        }
        conn.exec(
            format!(
                "SELECT {tag} NAME FROM information_schema.INNODB_SYS_FIELDS WHERE INDEX_ID = ? ORDER BY POS"
            ),
            (index_id,),
        )?
    };
    let def = table_def(&specs, &key, &format)
        .map_err(|why| refused(format!("{name} cannot be read from pages: {why}")))?;
    Ok(PagedTable {
        def,
        index_id,
        root,
    })
}

/// A `CREATE TABLE` for a table the server cannot open (`SHOW CREATE TABLE` fails with ERROR 1877 on a damaged
/// root page) rebuilt from what still answers: information_schema.COLUMNS (types, character sets, NULL,
/// defaults, generated columns) and InnoDB's dictionary (the clustered index's columns). Secondary indexes,
/// comments, AUTO_INCREMENT and foreign keys are not in it: the dump file says so.
pub fn rebuilt_create(
    conn: &mut Conn,
    tag: &str,
    name: &TableName,
    pt: &PagedTable,
) -> anyhow::Result<String> {
    type Col = (
        String,
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
        Option<String>,
    );
    let cols: Vec<Col> = conn.exec(
        format!(
            "SELECT {tag} COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, CHARACTER_SET_NAME, COLLATION_NAME, COLUMN_DEFAULT, \
             EXTRA, GENERATION_EXPRESSION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
             ORDER BY ORDINAL_POSITION"
        ),
        (&name.db, &name.table),
    )?;
    let mut parts = Vec::new();
    for (col, ty, nullable, charset, collation, default, extra, generated) in cols {
        let ok_type = ty
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b" (),'_-".contains(&b));
        if !ok_type {
            return Err(refused(format!(
                "column {col} of {name} has a type innops does not rebuild a CREATE TABLE with: {ty}"
            )));
        }
        let mut s = format!("{} {ty}", crate::sql::quote_ident(&col));
        if let (Some(cs), Some(co)) = (&charset, &collation) {
            s.push_str(&format!(
                " CHARACTER SET {} COLLATE {}",
                crate::sql::quote_ident(cs),
                crate::sql::quote_ident(co)
            ));
        }
        let extra_up = extra.to_ascii_uppercase();
        if let Some(g) = generated.filter(|_| extra_up.contains("GENERATED")) {
            let kind = if extra_up.contains("STORED") {
                "STORED"
            } else {
                "VIRTUAL"
            };
            s.push_str(&format!(" AS ({g}) {kind}"));
        } else {
            s.push_str(if nullable.eq_ignore_ascii_case("YES") {
                " NULL"
            } else {
                " NOT NULL"
            });
            // COLUMN_DEFAULT is an expression in MariaDB 10.2+ (a string literal quoted, NULL as the word).
            if let Some(d) = default.filter(|d| d != "NULL") {
                s.push_str(&format!(" DEFAULT {d}"));
            }
        }
        parts.push(s);
    }
    if !pt.def.key.is_empty() {
        let key: Vec<String> = pt
            .def
            .key
            .iter()
            .map(|&k| crate::sql::quote_ident(&pt.def.columns[k].name))
            .collect();
        parts.push(format!("PRIMARY KEY ({})", key.join(", ")));
    }
    Ok(format!(
        "CREATE TABLE {} (\n  {}\n) ENGINE=InnoDB",
        crate::sql::quote_ident(&name.table),
        parts.join(",\n  ")
    ))
}
