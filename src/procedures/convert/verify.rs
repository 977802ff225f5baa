//! Proving a copy: the exact row count through the primary key, and a checksum that is valid for the column
//! types involved — `CHECKSUM TABLE … EXTENDED` where it is engine-independent, otherwise innops's own row
//! hash (sha256 of every row, combined so the order rows arrive in does not matter).

use mysql::prelude::Queryable;
use mysql::{Conn, Value};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::procedures::convert::schema::TableInfo;
use crate::sql::{qualified, quote_ident};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// `CHECKSUM TABLE … EXTENDED`.
    ChecksumTable,
    /// sha256 per row, summed.
    RowHash,
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Method::ChecksumTable => "CHECKSUM TABLE",
            Method::RowHash => "row hash",
        })
    }
}

/// `CHECKSUM TABLE` differs between MyISAM and InnoDB for BIT columns, and for VARCHAR in MyISAM's fixed row
/// format (shared/FACTS.md §1); everything else it computes the same on both engines.
pub fn method_for(t: &TableInfo) -> Method {
    let fixed = t.row_format.eq_ignore_ascii_case("fixed") || t.explicit_fixed_format();
    let varchar = t
        .columns
        .iter()
        .any(|c| c.data_type == "varchar" || c.data_type == "varbinary");
    if t.has_bit_columns() || (fixed && varchar) {
        Method::RowHash
    } else {
        Method::ChecksumTable
    }
}

/// What one side of a verification measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub rows: u64,
    pub method: Method,
    pub checksum: String,
}

/// Exact row count, through the primary key when there is one (the optimizer would pick a smaller secondary
/// index, which is what we are verifying).
pub fn count_rows(
    conn: &mut Conn,
    tag: &str,
    schema: &str,
    table: &str,
    has_pk: bool,
) -> anyhow::Result<u64> {
    let force = if has_pk { " FORCE INDEX (PRIMARY)" } else { "" };
    let n: Option<u64> = conn.query_first(format!(
        "SELECT {tag} COUNT(*) FROM {}{force}",
        qualified(schema, table)
    ))?;
    Ok(n.unwrap_or(0))
}

/// Count and checksum one table by `method`, reading the columns of `info` (the source's description).
pub fn fingerprint(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    table: &str,
    method: Method,
) -> anyhow::Result<Fingerprint> {
    let has_pk = info.primary().is_some();
    let rows = count_rows(conn, tag, &info.schema, table, has_pk)?;
    let checksum = match method {
        Method::ChecksumTable => {
            let r: Option<(String, Option<u64>)> = conn.query_first(format!(
                "CHECKSUM TABLE {} EXTENDED {tag}",
                qualified(&info.schema, table)
            ))?;
            r.and_then(|(_, c)| c)
                .map(|c| c.to_string())
                .unwrap_or_else(|| "NULL".into())
        }
        Method::RowHash => row_hash(conn, tag, info, table)?,
    };
    Ok(Fingerprint {
        rows,
        method,
        checksum,
    })
}

/// sha256 of each row's values (length-prefixed, NULL marked), the digests added up as two 128-bit halves:
/// independent of row order, sensitive to duplicates.
pub fn row_hash(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    table: &str,
) -> anyhow::Result<String> {
    let cols: Vec<String> = info.columns.iter().map(|c| quote_ident(&c.name)).collect();
    let sql = format!(
        "SELECT {tag} {} FROM {}",
        cols.join(", "),
        qualified(&info.schema, table)
    );
    let (mut hi, mut lo) = (0u128, 0u128);
    // query_iter streams: a large table is never held in memory.
    let mut result = conn.query_iter(sql)?;
    while let Some(set) = result.iter() {
        for row in set {
            let row = row?;
            let mut h = Sha256::new();
            for v in row.unwrap() {
                match v {
                    Value::NULL => h.update([0u8]),
                    Value::Bytes(b) => {
                        h.update([1u8]);
                        h.update((b.len() as u64).to_le_bytes());
                        h.update(&b);
                    }
                    other => {
                        let s = other.as_sql(false);
                        h.update([2u8]);
                        h.update((s.len() as u64).to_le_bytes());
                        h.update(s.as_bytes());
                    }
                }
            }
            let d = h.finalize();
            hi = hi.wrapping_add(u128::from_le_bytes(d[..16].try_into().expect("16 bytes")));
            lo = lo.wrapping_add(u128::from_le_bytes(d[16..].try_into().expect("16 bytes")));
        }
    }
    Ok(format!("{hi:032x}{lo:032x}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedures::convert::schema::Column;

    fn info(types: &[&str], row_format: &str) -> TableInfo {
        TableInfo {
            schema: "d".into(),
            name: "t".into(),
            engine: "MyISAM".into(),
            row_format: row_format.into(),
            create_options: String::new(),
            collation: String::new(),
            auto_increment: None,
            comment: String::new(),
            rows_estimate: 0,
            data_length: 0,
            index_length: 0,
            columns: types
                .iter()
                .enumerate()
                .map(|(i, t)| Column {
                    name: format!("c{i}"),
                    data_type: t.to_string(),
                    column_type: t.to_string(),
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

    #[test]
    fn checksum_table_only_where_it_is_engine_independent() {
        assert_eq!(
            method_for(&info(&["int", "varchar", "text", "datetime"], "Dynamic")),
            Method::ChecksumTable
        );
        assert_eq!(
            method_for(&info(&["int", "bit"], "Dynamic")),
            Method::RowHash
        );
        assert_eq!(
            method_for(&info(&["int", "varchar"], "Fixed")),
            Method::RowHash
        );
        assert_eq!(
            method_for(&info(&["int", "char"], "Fixed")),
            Method::ChecksumTable
        );
    }
}
