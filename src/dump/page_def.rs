//! A table's definition for the page parser (`pages::def`), asked of the server: the stored columns from
//! information_schema.COLUMNS, and the clustered index — its id, root page and fields in order — from InnoDB's
//! own dictionary (`INNODB_SYS_TABLES`, `INNODB_SYS_INDEXES`, `INNODB_SYS_FIELDS`), which names the index InnoDB
//! really clusters by, the hidden row id (`GEN_CLUST_INDEX`) included. [`TableInfo`](super::TableInfo) does not
//! fit here: it leaves out stored generated columns and says nothing of lengths or nullability.

use mysql::prelude::Queryable;
use mysql::Conn;

use super::TableName;
use crate::error::refused;
use crate::pages::def::{table_def, ColumnSpec, RowFormat, TableDef};
use crate::pages::frm::Frm;

/// A table as the page parser reads it: the definition, and where its clustered index is in the `.ibd`.
#[derive(Debug, Clone)]
pub struct PagedTable {
    pub def: TableDef,
    /// The clustered index's id (bytes 66..74 of its pages) and root page (`None` when the definition came
    /// from a `.frm`: the data file alone does not name the root, and the page pass does not need it).
    pub index_id: u64,
    pub root: Option<u32>,
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
        root: Some(root),
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
        let extra = extra.to_ascii_uppercase();
        let generated = generated
            .filter(|_| extra.contains("GENERATED"))
            .map(|g| (g, extra.contains("STORED")));
        parts.push(column_sql(
            name,
            &RebuiltColumn {
                name: &col,
                ty: &ty,
                charset: charset.as_deref().zip(collation.as_deref()),
                nullable: nullable.eq_ignore_ascii_case("YES"),
                // COLUMN_DEFAULT is an expression in MariaDB 10.2+ (a string literal quoted, NULL as the word).
                default: default.as_deref().filter(|d| *d != "NULL"),
                generated: generated.as_ref().map(|(g, stored)| (g.as_str(), *stored)),
            },
        )?);
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
    // The table's default collation: information_schema.TABLES answers it from the .frm even when InnoDB
    // cannot open the table.
    let default: Option<(Option<String>, Option<String>)> = conn.exec_first(
        format!(
            "SELECT {tag} c.CHARACTER_SET_NAME, t.TABLE_COLLATION FROM information_schema.TABLES t \
             LEFT JOIN information_schema.COLLATIONS c ON c.COLLATION_NAME = t.TABLE_COLLATION \
             WHERE t.TABLE_SCHEMA = ? AND t.TABLE_NAME = ?"
        ),
        (&name.db, &name.table),
    )?;
    let charset = match default {
        Some((cs, Some(co))) => default_charset(cs.as_deref(), &co),
        _ => String::new(),
    };
    Ok(format!(
        "CREATE TABLE {} (\n  {}\n) ENGINE=InnoDB{charset}",
        crate::sql::quote_ident(&name.table),
        parts.join(",\n  ")
    ))
}

/// One column of a rebuilt `CREATE TABLE`.
struct RebuiltColumn<'a> {
    name: &'a str,
    /// Its type as `COLUMN_TYPE` words it (`int(10) unsigned`, `enum('a','b')`).
    ty: &'a str,
    /// Character set and collation.
    charset: Option<(&'a str, &'a str)>,
    nullable: bool,
    /// The default as an SQL expression.
    default: Option<&'a str>,
    /// A generated column's expression, and whether it is stored.
    generated: Option<(&'a str, bool)>,
}

/// A column's definition in a rebuilt `CREATE TABLE`. The type, default and expression are the server's own
/// text (from its dictionary or its `.frm`), yet a damaged file can hold anything: each must be one SQL piece
/// that cannot end the statement (see [`one_piece`]), else `Err` names the column.
fn column_sql(table: &TableName, c: &RebuiltColumn) -> anyhow::Result<String> {
    let ok_type =
        c.ty.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b" (),'_-".contains(&b))
            && one_piece(c.ty);
    if !ok_type {
        return Err(refused(format!(
            "column {} of {table} has a type innops does not rebuild a CREATE TABLE with: {}",
            c.name, c.ty
        )));
    }
    let mut s = format!("{} {}", crate::sql::quote_ident(c.name), c.ty);
    if let Some((cs, co)) = c.charset {
        s.push_str(&format!(
            " CHARACTER SET {} COLLATE {}",
            crate::sql::quote_ident(cs),
            crate::sql::quote_ident(co)
        ));
    }
    let checked = |what: &str, text: &str| -> anyhow::Result<()> {
        if one_piece(text) {
            Ok(())
        } else {
            Err(refused(format!(
                "the {what} of column {} of {table} is not one SQL expression innops can put in a CREATE TABLE: {text}",
                c.name
            )))
        }
    };
    if let Some((expr, stored)) = c.generated {
        checked("generation expression", expr)?;
        let kind = if stored { "STORED" } else { "VIRTUAL" };
        s.push_str(&format!(" AS ({expr}) {kind}"));
    } else {
        s.push_str(if c.nullable { " NULL" } else { " NOT NULL" });
        if let Some(d) = c.default {
            checked("default", d)?;
            s.push_str(&format!(" DEFAULT {d}"));
        }
    }
    Ok(s)
}

/// `text` is one piece of SQL that cannot reach past the place it is put in: its quotes (`'`, `"`, `` ` ``)
/// close, its parentheses balance and never close one they did not open, and outside quotes it holds no `;`
/// and no comment (`--`, `#`, `/*`). Not a parser: what it lets through is still the server's to reject.
pub(crate) fn one_piece(text: &str) -> bool {
    let b = text.as_bytes();
    let (mut depth, mut quote, mut i) = (0i64, None::<u8>, 0);
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) if c == b'\\' && q != b'`' => i += 1,
            Some(q) if c == q => {
                // A doubled quote stays inside.
                if b.get(i + 1) == Some(&q) {
                    i += 1;
                } else {
                    quote = None;
                }
            }
            Some(_) => {}
            None => match c {
                b'\'' | b'"' | b'`' => quote = Some(c),
                b'(' => depth += 1,
                b')' if depth == 0 => return false,
                b')' => depth -= 1,
                b';' | b'#' => return false,
                b'-' if b.get(i + 1) == Some(&b'-') => return false,
                b'/' if b.get(i + 1) == Some(&b'*') => return false,
                _ => {}
            },
        }
        i += 1;
    }
    quote.is_none() && depth == 0
}

/// A `CREATE TABLE` for a table read from its files alone (no server starts on the copy), from its `.frm`:
/// every column with its type, character set, NULL and generation expression, and the clustered key
/// (`PRIMARY KEY`, or the `UNIQUE` key InnoDB clusters by). Defaults, secondary indexes, comments,
/// AUTO_INCREMENT and foreign keys are not in it: the dump file says so.
pub fn create_from_frm(name: &TableName, frm: &Frm) -> anyhow::Result<String> {
    let mut parts = Vec::new();
    for c in &frm.columns {
        let s = &c.spec;
        if s.extra.contains("VIRTUAL") && c.generated.is_none() {
            // The hidden hash column of a long UNIQUE: the server adds it again with the key.
            continue;
        }
        parts.push(column_sql(
            name,
            &RebuiltColumn {
                name: &s.name,
                ty: &s.column_type,
                charset: s.charset.as_deref().zip(s.collation.as_deref()),
                nullable: s.nullable,
                default: None,
                generated: c.generated.as_ref().map(|g| (g.expr.as_str(), g.stored)),
            },
        )?);
    }
    if let Some(k) = frm
        .clustered()
        .map_err(|why| refused(format!("{name}: {why}")))?
    {
        let cols: Vec<String> = k
            .parts
            .iter()
            .map(|&(c, _)| crate::sql::quote_ident(&frm.columns[c].spec.name))
            .collect();
        parts.push(if k.name == "PRIMARY" {
            format!("PRIMARY KEY ({})", cols.join(", "))
        } else {
            format!(
                "UNIQUE KEY {} ({})",
                crate::sql::quote_ident(&k.name),
                cols.join(", ")
            )
        });
    }
    let format = match frm.row_format {
        Some(RowFormat::Compact) => " ROW_FORMAT=COMPACT",
        Some(RowFormat::Dynamic) => " ROW_FORMAT=DYNAMIC",
        Some(RowFormat::Redundant) => " ROW_FORMAT=REDUNDANT",
        Some(RowFormat::Compressed) => " ROW_FORMAT=COMPRESSED",
        None => "",
    };
    let charset = frm
        .charset
        .as_ref()
        .map(|(cs, co)| default_charset(Some(cs), co))
        .unwrap_or_default();
    Ok(format!(
        "CREATE TABLE {} (\n  {}\n) ENGINE=InnoDB{charset}{format}",
        crate::sql::quote_ident(&name.table),
        parts.join(",\n  ")
    ))
}

/// The table option giving its default character set and collation (what a column added later gets; the
/// columns name their own): ` DEFAULT CHARSET=cs COLLATE=co`, or ` DEFAULT COLLATE=co` (which implies its
/// character set) when the character set is not known.
fn default_charset(charset: Option<&str>, collation: &str) -> String {
    match charset {
        Some(cs) => format!(
            " DEFAULT CHARSET={} COLLATE={}",
            crate::sql::quote_ident(cs),
            crate::sql::quote_ident(collation)
        ),
        None => format!(" DEFAULT COLLATE={}", crate::sql::quote_ident(collation)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_piece_refuses_what_could_end_or_comment_out_the_statement() {
        for ok in [
            "`a` * 2",
            "concat('x',`a`)",
            "'it''s; -- fine'",
            "json_valid(`j`)",
            "enum('a','b')",
            "'a\\'b'",
        ] {
            assert!(one_piece(ok), "{ok}");
        }
        for bad in [
            "1); DROP TABLE t; --",
            "1) VIRTUAL, `x` int",
            "(1",
            "'open",
            "1 -- rest",
            "1 # rest",
            "1 /* rest */",
            "`a",
        ] {
            assert!(!one_piece(bad), "{bad}");
        }
    }
}
