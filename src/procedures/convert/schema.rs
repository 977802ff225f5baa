//! What a table is, read from information_schema: columns, indexes, options, and what hangs on it (triggers,
//! MERGE tables, views); and the pure judgements the conversion's pre-flight checks make from it.

use crate::sql::Queryable;
use mysql::Conn;
use serde::{Deserialize, Serialize};

use crate::procedures::convert::definition::Definition;
use crate::sql::{qualified, quote_ident};

/// InnoDB's limit for the inline part of a row (half a 16 KiB page, less headers).
pub const INNODB_MAX_ROW: u64 = 8126;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    pub data_type: String,
    pub column_type: String,
    /// Bytes for character and binary types.
    pub octet_length: Option<u64>,
    pub auto_increment: bool,
    pub generated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexPart {
    pub column: String,
    pub sub_part: Option<u64>,
    pub desc: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    pub name: String,
    pub unique: bool,
    /// BTREE, FULLTEXT, SPATIAL, HASH.
    pub kind: String,
    pub parts: Vec<IndexPart>,
    pub comment: String,
    /// The index's clause exactly as `SHOW CREATE TABLE` prints it (every attribute kept).
    #[serde(default)]
    pub line: String,
}

impl Index {
    pub fn is_primary(&self) -> bool {
        self.name == "PRIMARY"
    }
    pub fn is_fulltext(&self) -> bool {
        self.kind == "FULLTEXT"
    }

    /// The `ADD ...` clause that recreates this secondary index: the server's own clause where known.
    pub fn add_clause(&self) -> String {
        if !self.line.is_empty() {
            // A UNIQUE hash key is MyISAM's way to index a long column: let InnoDB make a B-tree of it where the
            // key fits, as `ALTER TABLE … ENGINE=InnoDB` does.
            let line = if self.line.starts_with("UNIQUE KEY") {
                self.line.trim_end_matches(" USING HASH")
            } else {
                &self.line
            };
            return format!("ADD {line}");
        }
        let kind = match (self.kind.as_str(), self.unique) {
            ("FULLTEXT", _) => "FULLTEXT INDEX",
            ("SPATIAL", _) => "SPATIAL INDEX",
            (_, true) => "UNIQUE INDEX",
            _ => "INDEX",
        };
        let cols: Vec<String> = self
            .parts
            .iter()
            .map(|p| {
                let mut c = quote_ident(&p.column);
                if let Some(n) = p.sub_part {
                    c.push_str(&format!("({n})"));
                }
                if p.desc {
                    c.push_str(" DESC");
                }
                c
            })
            .collect();
        let mut s = format!(
            "ADD {kind} {} ({})",
            quote_ident(&self.name),
            cols.join(", ")
        );
        if !self.comment.is_empty() {
            s.push_str(&format!(
                " COMMENT '{}'",
                self.comment.replace('\\', "\\\\").replace('\'', "''")
            ));
        }
        s
    }

    /// Names, columns, prefixes, order and uniqueness: what verification compares.
    pub fn signature(&self) -> String {
        let parts: Vec<String> = self
            .parts
            .iter()
            .map(|p| {
                format!(
                    "{}{}{}",
                    p.column,
                    p.sub_part.map(|n| format!("({n})")).unwrap_or_default(),
                    if p.desc { " DESC" } else { "" }
                )
            })
            .collect();
        format!(
            "{}{} {} ({})",
            if self.unique { "UNIQUE " } else { "" },
            self.kind,
            self.name,
            parts.join(", ")
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableInfo {
    pub schema: String,
    pub name: String,
    pub engine: String,
    pub row_format: String,
    pub create_options: String,
    pub collation: String,
    pub auto_increment: Option<u64>,
    pub comment: String,
    pub rows_estimate: u64,
    pub data_length: u64,
    pub index_length: u64,
    pub columns: Vec<Column>,
    pub indexes: Vec<Index>,
    pub triggers: Vec<String>,
    pub merge_parents: Vec<String>,
    pub views: Vec<String>,
    /// The server cannot open the table: it is marked as crashed (the server's words, from
    /// information_schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crashed: Option<String>,
    /// `SHOW CREATE TABLE`, parsed: what verification compares whole.
    #[serde(default)]
    pub definition: Definition,
    /// MERGE tables whose definition the server could not read, with why.
    #[serde(default)]
    pub merge_unreadable: Vec<String>,
}

/// A table described without a server, for unit tests of the SQL a path writes.
#[cfg(test)]
impl TableInfo {
    pub fn synthetic(schema: &str, name: &str, cols: &[(&str, &str)]) -> TableInfo {
        TableInfo {
            schema: schema.into(),
            name: name.into(),
            engine: "MyISAM".into(),
            row_format: "Dynamic".into(),
            create_options: String::new(),
            collation: "latin1_swedish_ci".into(),
            auto_increment: None,
            comment: String::new(),
            rows_estimate: 0,
            data_length: 0,
            index_length: 0,
            columns: cols
                .iter()
                .map(|(n, ty)| Column {
                    name: n.to_string(),
                    data_type: ty.to_string(),
                    column_type: ty.to_string(),
                    octet_length: None,
                    auto_increment: false,
                    generated: false,
                })
                .collect(),
            indexes: vec![],
            triggers: vec![],
            merge_parents: vec![],
            views: vec![],
            crashed: None,
            definition: Default::default(),
            merge_unreadable: vec![],
        }
    }

    pub fn set_primary(&mut self, cols: &[&str]) {
        self.indexes.insert(
            0,
            Index {
                name: "PRIMARY".into(),
                unique: true,
                kind: "BTREE".into(),
                parts: cols
                    .iter()
                    .map(|c| IndexPart {
                        column: c.to_string(),
                        sub_part: None,
                        desc: false,
                    })
                    .collect(),
                comment: String::new(),
                line: String::new(),
            },
        );
    }
}

/// Errors opening a MyISAM table that mean its files are damaged: wrong file format (130), index or data file
/// crashed (126, 127), crashed and last repair failed (144), marked as crashed (145, 1194), crashed on repair
/// (1195), unexpected end of file (137 is "no more records", not here).
const CANNOT_OPEN: [u16; 7] = [126, 127, 130, 144, 145, 1194, 1195];

/// Schemas innops never converts.
pub const SYSTEM_SCHEMAS: [&str; 4] = ["mysql", "information_schema", "performance_schema", "sys"];

type TableRow = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<u64>,
    Option<String>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
);

impl TableInfo {
    /// Read a table's description; None when it does not exist or is a view.
    pub fn load(
        conn: &mut Conn,
        tag: &str,
        schema: &str,
        name: &str,
    ) -> anyhow::Result<Option<TableInfo>> {
        let row: Option<TableRow> = conn.exec_first(
            format!(
                "SELECT {tag} IFNULL(ENGINE, ''), ROW_FORMAT, CREATE_OPTIONS, TABLE_COLLATION, AUTO_INCREMENT, TABLE_COMMENT, \
                 TABLE_ROWS, DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES \
                 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND TABLE_TYPE = 'BASE TABLE'"
            ),
            (schema, name),
        )?;
        let Some((
            engine,
            row_format,
            create_options,
            collation,
            auto_increment,
            comment,
            rows,
            data,
            index,
        )) = row
        else {
            return Ok(None);
        };
        // A table the server cannot open has no engine in information_schema; its comment says why.
        let comment = comment.unwrap_or_default();
        let crashed = (engine.is_empty() && comment.contains("crashed")).then(|| comment.clone());
        let comment = if crashed.is_some() {
            String::new()
        } else {
            comment
        };
        let columns = load_columns(conn, tag, schema, name)?;
        let mut indexes = load_indexes(conn, tag, schema, name)?;
        let mut crashed = crashed;
        let definition = load_definition(conn, tag, schema, name, &mut crashed)?;
        // The server's order, and its own clause for each index.
        indexes.sort_by_key(|i| {
            definition
                .indexes
                .iter()
                .position(|(n, _)| *n == i.name)
                .unwrap_or(usize::MAX)
        });
        for i in indexes.iter_mut() {
            if let Some(l) = definition.index_line(&i.name) {
                i.line = l.to_string();
            }
        }
        let triggers: Vec<String> = conn.exec(
            format!("SELECT {tag} TRIGGER_NAME FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? ORDER BY TRIGGER_NAME"),
            (schema, name),
        )?;
        let needle = format!("{}.{}", quote_ident(schema), quote_ident(name));
        let views: Vec<(String, String)> = conn.exec(
            format!("SELECT {tag} TABLE_SCHEMA, TABLE_NAME FROM information_schema.VIEWS WHERE INSTR(VIEW_DEFINITION, ?) > 0"),
            (needle,),
        )?;
        let (merge_parents, merge_unreadable) = load_merge_parents(conn, tag, schema, name)?;
        Ok(Some(TableInfo {
            schema: schema.to_string(),
            name: name.to_string(),
            engine,
            row_format: row_format.unwrap_or_default(),
            create_options: create_options.unwrap_or_default(),
            collation: collation.unwrap_or_default(),
            auto_increment,
            comment,
            rows_estimate: rows.unwrap_or(0),
            data_length: data.unwrap_or(0),
            index_length: index.unwrap_or(0),
            columns,
            indexes,
            triggers,
            merge_parents,
            views: views.into_iter().map(|(s, t)| format!("{s}.{t}")).collect(),
            crashed,
            definition,
            merge_unreadable,
        }))
    }

    pub fn qualified(&self) -> String {
        qualified(&self.schema, &self.name)
    }

    pub fn display(&self) -> String {
        format!("{}.{}", self.schema, self.name)
    }

    pub fn primary(&self) -> Option<&Index> {
        self.indexes.iter().find(|i| i.is_primary())
    }

    pub fn secondary(&self) -> impl Iterator<Item = &Index> {
        self.indexes.iter().filter(|i| !i.is_primary())
    }

    /// How many leading secondary indexes the deferred path keeps in the shadow from the start. InnoDB wants an
    /// AUTO_INCREMENT column to lead an index (ERROR 1075 otherwise): when only a secondary index leads with it,
    /// that index stays, and so does every index before it, so the order of the indexes is kept.
    pub fn secondaries_kept_in_shadow(&self) -> usize {
        let Some(ai) = self.columns.iter().find(|c| c.auto_increment) else {
            return 0;
        };
        let leads = |i: &Index| i.parts.first().is_some_and(|p| p.column == ai.name);
        if self.primary().is_some_and(leads) {
            return 0;
        }
        self.secondary().position(leads).map(|p| p + 1).unwrap_or(0)
    }

    /// The secondary indexes the deferred path builds after the copy.
    pub fn deferred_indexes(&self) -> impl Iterator<Item = &Index> {
        self.secondary().skip(self.secondaries_kept_in_shadow())
    }

    pub fn pk_columns(&self) -> Vec<String> {
        self.primary()
            .map(|p| p.parts.iter().map(|c| c.column.clone()).collect())
            .unwrap_or_default()
    }

    /// Columns a copy writes (generated columns compute themselves).
    pub fn stored_columns(&self) -> Vec<&Column> {
        self.columns.iter().filter(|c| !c.generated).collect()
    }

    /// An explicit row format InnoDB refuses (MyISAM's FIXED, Aria's PAGE): the InnoDB table gets the default.
    /// What `ALTER TABLE … ENGINE=InnoDB` must add for InnoDB to take this definition as it should: the default
    /// row format instead of one InnoDB refuses, and no Aria options.
    pub fn innodb_fixups(&self) -> Vec<&'static str> {
        let mut out = Vec::new();
        if self.explicit_fixed_format() {
            out.push("ROW_FORMAT=DEFAULT");
        }
        for k in super::definition::ARIA_OPTIONS {
            if self.definition.option(k).is_some() {
                out.push(match k {
                    "PAGE_CHECKSUM" => "PAGE_CHECKSUM=DEFAULT",
                    _ => "TRANSACTIONAL=DEFAULT",
                });
            }
        }
        out
    }

    /// [`TableInfo::innodb_fixups`] as the tail of an ALTER clause list (`, ROW_FORMAT=DEFAULT`), or nothing.
    pub fn innodb_fixups_sql(&self) -> String {
        self.innodb_fixups()
            .iter()
            .map(|f| format!(", {f}"))
            .collect()
    }

    pub fn explicit_fixed_format(&self) -> bool {
        self.definition.foreign_row_format().is_some()
            || self
                .create_options
                .to_ascii_lowercase()
                .contains("row_format=fixed")
    }

    pub fn has_bit_columns(&self) -> bool {
        self.columns.iter().any(|c| c.data_type == "bit")
    }
}

/// The table's columns, in their order.
fn load_columns(
    conn: &mut Conn,
    tag: &str,
    schema: &str,
    name: &str,
) -> anyhow::Result<Vec<Column>> {
    let cols: Vec<(String, String, String, Option<u64>, String, String)> = conn.exec(
        format!(
            "SELECT {tag} COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, CHARACTER_OCTET_LENGTH, EXTRA, IS_GENERATED \
             FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION"
        ),
        (schema, name),
    )?;
    Ok(cols
        .into_iter()
        .map(
            |(name, data_type, column_type, octet_length, extra, generated)| Column {
                auto_increment: extra.to_ascii_lowercase().contains("auto_increment"),
                generated: generated != "NEVER",
                name,
                data_type: data_type.to_ascii_lowercase(),
                column_type,
                octet_length,
            },
        )
        .collect())
}

/// The table's definition as SHOW CREATE TABLE prints it, parsed; none for a table the server cannot open,
/// which sets `crashed` to why when only opening it tells.
fn load_definition(
    conn: &mut Conn,
    tag: &str,
    schema: &str,
    name: &str,
    crashed: &mut Option<String>,
) -> anyhow::Result<Definition> {
    // A table the server cannot open has no definition to show.
    Ok(if crashed.is_some() {
        Definition::default()
    } else {
        match conn.query_first::<(String, String), _>(format!(
            "SHOW {tag} CREATE TABLE {}",
            qualified(schema, name)
        )) {
            Ok(create) => create
                .map(|(_, c)| Definition::parse(&c))
                .unwrap_or_default(),
            // information_schema can list a MyISAM table whose index file the server cannot read (a torn
            // or overwritten .MYI header): opening it says why. That is the table's state, for the
            // pre-flight to refuse with the repair, not an error of innops.
            Err(mysql::Error::MySqlError(e)) if CANNOT_OPEN.contains(&e.code) => {
                *crashed = Some(format!("ERROR {}: {}", e.code, e.message));
                Definition::default()
            }
            Err(e) => return Err(e.into()),
        }
    })
}

/// The MERGE tables whose UNION lists this table, and those that could not be read to tell.
fn load_merge_parents(
    conn: &mut Conn,
    tag: &str,
    schema: &str,
    name: &str,
) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let merges: Vec<(String, String)> = conn.query(format!(
        "SELECT {tag} TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE ENGINE = 'MRG_MyISAM'"
    ))?;
    let mut merge_parents = Vec::new();
    let mut merge_unreadable = Vec::new();
    for (ms, mt) in merges {
        // A broken MERGE table elsewhere (one of its tables dropped: ERROR 1168) must not stop this one.
        match conn.query_first::<(String, String), _>(format!(
            "SHOW {tag} CREATE TABLE {}",
            qualified(&ms, &mt)
        )) {
            Ok(Some((_, ddl))) => {
                if merge_union_includes(&ddl, &ms, schema, name) {
                    merge_parents.push(format!("{ms}.{mt}"));
                }
            }
            Ok(None) => {}
            Err(e) => {
                merge_unreadable.push(format!("{ms}.{mt} ({})", crate::error::describe_mysql(&e)))
            }
        }
    }
    Ok((merge_parents, merge_unreadable))
}

fn load_indexes(
    conn: &mut Conn,
    tag: &str,
    schema: &str,
    name: &str,
) -> anyhow::Result<Vec<Index>> {
    type Row = (
        String,
        u64,
        String,
        Option<u64>,
        u64,
        String,
        Option<String>,
        Option<String>,
    );
    let rows: Vec<Row> = conn.exec(
        format!(
            "SELECT {tag} INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, SUB_PART, NON_UNIQUE, INDEX_TYPE, COLLATION, INDEX_COMMENT \
             FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX"
        ),
        (schema, name),
    )?;
    let mut out: Vec<Index> = Vec::new();
    for (iname, _seq, column, sub_part, non_unique, kind, collation, comment) in rows {
        let part = IndexPart {
            column,
            sub_part,
            desc: collation.as_deref() == Some("D"),
        };
        match out.last_mut() {
            Some(last) if last.name == iname => last.parts.push(part),
            _ => out.push(Index {
                name: iname,
                unique: non_unique == 0,
                kind,
                parts: vec![part],
                comment: comment.unwrap_or_default(),
                line: String::new(),
            }),
        }
    }
    Ok(out)
}

/// Whether a MERGE table's `UNION=(...)` names `schema.name` (entries without a schema are in the MERGE table's).
pub fn merge_union_includes(ddl: &str, merge_schema: &str, schema: &str, name: &str) -> bool {
    let Some(start) = ddl.find("UNION=(") else {
        return false;
    };
    let rest = &ddl[start + 7..];
    let list = &rest[..rest.find(')').unwrap_or(rest.len())];
    list.split(',').any(|entry| {
        let parts: Vec<String> = entry
            .trim()
            .split("`.`")
            .map(|p| p.trim_matches('`').replace("``", "`"))
            .collect();
        match parts.as_slice() {
            [t] => merge_schema == schema && t == name,
            [s, t] => s == schema && t == name,
            _ => false,
        }
    })
}

/// Column names InnoDB reserves for its own (ERROR 1166 "Incorrect column name" at CREATE): `DB_ROW_ID`,
/// `DB_TRX_ID` and `DB_ROLL_PTR` in any letter case, and `FTS_DOC_ID` unless it is spelled exactly so and is
/// `BIGINT UNSIGNED NOT NULL` (the document id of a FULLTEXT index). MyISAM takes them all.
pub fn reserved_column_problem(t: &TableInfo) -> Option<String> {
    let not_null = |name: &str| {
        let head = format!("{} ", crate::sql::quote_ident(name));
        t.definition
            .columns
            .iter()
            .any(|l| l.starts_with(&head) && l.contains(" NOT NULL"))
    };
    let bad: Vec<&Column> = t
        .columns
        .iter()
        .filter(|c| {
            let upper = c.name.to_ascii_uppercase();
            if ["DB_ROW_ID", "DB_TRX_ID", "DB_ROLL_PTR"].contains(&upper.as_str()) {
                return true;
            }
            upper == "FTS_DOC_ID"
                && !(c.name == "FTS_DOC_ID"
                    && c.column_type.eq_ignore_ascii_case("bigint(20) unsigned")
                    && not_null(&c.name))
        })
        .collect();
    let first = bad.first()?;
    Some(format!(
        "{}: InnoDB reserves the column name{} {} for its own use and refuses the table; rename {} first (ALTER TABLE {} RENAME COLUMN {} TO {}), then convert",
        t.display(),
        if bad.len() > 1 { "s" } else { "" },
        bad.iter().map(|c| format!("`{}`", c.name)).collect::<Vec<_>>().join(", "),
        if bad.len() > 1 { "them" } else { "it" },
        t.display(),
        crate::sql::quote_ident(&first.name),
        crate::sql::quote_ident(&format!("{}_", first.name.to_ascii_lowercase())),
    ))
}

/// MyISAM keeps one AUTO_INCREMENT sequence per prefix group when the column is not the first of an index;
/// InnoDB cannot, so such a table refuses.
pub fn auto_increment_problem(t: &TableInfo) -> Option<String> {
    let col = t.columns.iter().find(|c| c.auto_increment)?;
    let leads = t
        .indexes
        .iter()
        .any(|i| i.parts.first().is_some_and(|p| p.column == col.name));
    if leads {
        return None;
    }
    let idx = t
        .indexes
        .iter()
        .find(|i| i.parts.iter().any(|p| p.column == col.name))
        .map(|i| i.name.clone())
        .unwrap_or_default();
    Some(format!(
        "{}: AUTO_INCREMENT column `{}` is not the first column of any index (it is part {} of `{idx}`), so MyISAM numbers it per group and InnoDB would refuse or renumber it; add an index that starts with `{}` if one global sequence is acceptable, or keep the table MyISAM",
        t.display(),
        col.name,
        t.indexes.iter().find(|i| i.name == idx).and_then(|i| i.parts.iter().position(|p| p.column == col.name)).map(|p| p + 1).unwrap_or(0),
        col.name
    ))
}

/// The inline bytes a column takes in an InnoDB DYNAMIC row: long variable-length columns move off-page and
/// leave a 20-byte pointer, fixed-size ones stay whole.
pub fn inline_bytes(c: &Column) -> u64 {
    let fixed = |n: u64| n;
    match c.data_type.as_str() {
        "tinyint" | "bool" | "boolean" => 1,
        "smallint" | "year" => fixed(2),
        "mediumint" | "date" | "time" => 3,
        "int" | "integer" | "float" => 4,
        "bigint" | "double" | "real" | "datetime" | "timestamp" => 8,
        "decimal" | "numeric" => 16,
        "bit" => 8,
        "enum" => 2,
        "set" => 8,
        "char" | "binary" => {
            let n = c.octet_length.unwrap_or(0);
            // CHAR in a multi-byte character set (more bytes than characters, utf8mb4's CHAR(100) is 400)
            // is stored with a length like VARCHAR, so a long one moves off-page: InnoDB accepts 80 such
            // columns where the fixed-width count would say a fifth of that.
            let chars = declared_length(&c.column_type).unwrap_or(n);
            if c.data_type == "char" && n > chars {
                return if n > 255 { 20 } else { n + 1 };
            }
            // CHAR of 768 bytes or more is stored like VARCHAR.
            if n >= 768 {
                20
            } else {
                n
            }
        }
        "varchar" | "varbinary" => {
            let n = c.octet_length.unwrap_or(0);
            if n > 255 {
                20
            } else {
                n + 1
            }
        }
        // TEXT, BLOB, JSON, GEOMETRY: off-page.
        _ => 20,
    }
}

/// The length in a column type such as `char(100)` or `binary(16)`.
fn declared_length(column_type: &str) -> Option<u64> {
    let open = column_type.find('(')?;
    let close = column_type[open..].find(')')? + open;
    column_type[open + 1..close].trim().parse().ok()
}

/// Refuse rows that cannot fit InnoDB's inline limit, naming the widest columns.
pub fn row_size_problem(t: &TableInfo) -> Option<String> {
    let total: u64 = t.columns.iter().map(inline_bytes).sum();
    if total <= INNODB_MAX_ROW {
        return None;
    }
    let mut widest: Vec<(&Column, u64)> = t.columns.iter().map(|c| (c, inline_bytes(c))).collect();
    widest.sort_by_key(|w| std::cmp::Reverse(w.1));
    let names: Vec<String> = widest
        .iter()
        .take(3)
        .map(|(c, n)| format!("`{}` {} ({n} bytes)", c.name, c.column_type))
        .collect();
    let fixed = widest
        .iter()
        .take(3)
        .any(|(c, _)| matches!(c.data_type.as_str(), "char" | "binary"));
    Some(format!(
        "{}: a row needs about {total} bytes inline and InnoDB allows {INNODB_MAX_ROW} (widest: {}): {} before converting",
        t.display(),
        names.join(", "),
        if fixed {
            "turn wide CHAR or BINARY columns into VARCHAR, VARBINARY or TEXT"
        } else {
            "turn some of the widest columns into TEXT or BLOB (they are then stored off-page)"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, ty: &str, octets: Option<u64>) -> Column {
        Column {
            name: name.into(),
            data_type: ty.into(),
            column_type: ty.into(),
            octet_length: octets,
            auto_increment: false,
            generated: false,
        }
    }

    fn idx(name: &str, cols: &[&str]) -> Index {
        Index {
            name: name.into(),
            unique: name == "PRIMARY",
            kind: "BTREE".into(),
            parts: cols
                .iter()
                .map(|c| IndexPart {
                    column: c.to_string(),
                    sub_part: None,
                    desc: false,
                })
                .collect(),
            comment: String::new(),
            line: String::new(),
        }
    }

    fn table(columns: Vec<Column>, indexes: Vec<Index>) -> TableInfo {
        TableInfo {
            columns,
            indexes,
            ..TableInfo::synthetic("d", "t", &[])
        }
    }

    #[test]
    fn auto_increment_second_in_a_composite_key_is_refused() {
        let mut id = col("id", "int", None);
        id.auto_increment = true;
        let t = table(
            vec![col("grp", "int", None), id.clone()],
            vec![idx("PRIMARY", &["grp", "id"])],
        );
        let why = auto_increment_problem(&t).unwrap();
        assert!(
            why.contains("part 2 of `PRIMARY`")
                && why.contains("add an index that starts with `id`"),
            "{why}"
        );
        let ok = table(
            vec![col("grp", "int", None), id],
            vec![idx("PRIMARY", &["grp", "id"]), idx("k", &["id"])],
        );
        assert!(auto_increment_problem(&ok).is_none());
    }

    #[test]
    fn char_in_a_multibyte_charset_is_counted_as_innodb_stores_it() {
        // 80 CHAR(100) utf8mb4 columns: MariaDB 10.11 creates that InnoDB table (measured).
        let mut cols: Vec<Column> = (0..80)
            .map(|i| {
                let mut c = col(&format!("c{i}"), "char", Some(400));
                c.column_type = "char(100)".into();
                c
            })
            .collect();
        assert!(row_size_problem(&table(cols.clone(), vec![])).is_none());
        // 40 CHAR(60) utf8mb4 (240 bytes each, too short to go off-page) do not fit: 40 × 241.
        for c in cols.iter_mut() {
            c.octet_length = Some(240);
            c.column_type = "char(60)".into();
        }
        cols.truncate(40);
        let why = row_size_problem(&table(cols, vec![])).unwrap();
        assert!(
            why.contains("9640 bytes") && why.contains("CHAR or BINARY"),
            "{why}"
        );
        // Wide VARCHARs under 256 bytes: the advice does not speak of CHAR.
        let v: Vec<Column> = (0..40)
            .map(|i| col(&format!("v{i}"), "varchar", Some(250)))
            .collect();
        let why = row_size_problem(&table(v, vec![])).unwrap();
        assert!(
            why.contains("into TEXT or BLOB") && !why.contains("CHAR"),
            "{why}"
        );
        assert_eq!(declared_length("char(100)"), Some(100));
        assert_eq!(declared_length("binary(16)"), Some(16));
        assert_eq!(declared_length("char"), None);
    }

    #[test]
    fn forty_char_255_latin1_columns_do_not_fit() {
        let cols: Vec<Column> = (0..40)
            .map(|i| col(&format!("c{i}"), "char", Some(255)))
            .collect();
        let why = row_size_problem(&table(cols, vec![])).unwrap();
        assert!(why.contains("10200 bytes") && why.contains("`c0`"), "{why}");
        let fits: Vec<Column> = (0..40)
            .map(|i| col(&format!("c{i}"), "varchar", Some(1020)))
            .collect();
        assert!(row_size_problem(&table(fits, vec![])).is_none());
    }

    #[test]
    fn index_clauses_quote_and_keep_prefixes_order_and_kind() {
        let mut i = idx("we`ird", &["a`b", "c"]);
        i.parts[1].sub_part = Some(10);
        i.parts[1].desc = true;
        i.unique = true;
        assert_eq!(
            i.add_clause(),
            "ADD UNIQUE INDEX `we``ird` (`a``b`, `c`(10) DESC)"
        );
        let mut ft = idx("ft", &["body"]);
        ft.kind = "FULLTEXT".into();
        assert_eq!(ft.add_clause(), "ADD FULLTEXT INDEX `ft` (`body`)");
        assert_eq!(i.signature(), "UNIQUE BTREE we`ird (a`b, c(10) DESC)");
    }

    #[test]
    fn merge_unions_are_matched_with_and_without_schema() {
        let ddl = "CREATE TABLE `m` (\n  `id` int\n) ENGINE=MRG_MyISAM UNION=(`t1`,`other`.`t2`)";
        assert!(merge_union_includes(ddl, "d", "d", "t1"));
        assert!(!merge_union_includes(ddl, "d", "x", "t1"));
        assert!(merge_union_includes(ddl, "d", "other", "t2"));
        assert!(!merge_union_includes(ddl, "d", "d", "t2"));
        assert!(!merge_union_includes(
            "CREATE TABLE x (a int)",
            "d",
            "d",
            "x"
        ));
    }
}
