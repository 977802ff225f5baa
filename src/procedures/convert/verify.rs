//! Proving a copy: the exact row count and a checksum that holds for every column type — innops's own row hash
//! (sha256 of every row's base columns, combined so the order rows arrive in does not matter).
//!
//! `CHECKSUM TABLE … EXTENDED` is not engine-independent: MyISAM and InnoDB give different values for identical
//! data with BIT columns, VARCHAR in MyISAM's fixed row format (shared/FACTS.md §1), STORED generated columns,
//! indexed VIRTUAL columns, and UNIQUE keys MyISAM implements as hash keys (TEXT/BLOB, long VARCHAR), whose
//! hidden hash column MyISAM checksums too. The row hash reads the base columns through the binary protocol
//! and is as cheap (benches/verify_cost.rs: it also counts the rows in the same scan), so it is used always;
//! `CHECKSUM TABLE` stays for measurements and for fingerprints recorded by older runs.

use crate::sql::Queryable;
use mysql::{Conn, Value};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::procedures::convert::schema::TableInfo;
use crate::sql::{qualified, quote_ident};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// `CHECKSUM TABLE … EXTENDED`: engine-dependent for some tables (see the module comment).
    ChecksumTable,
    /// sha256 per row of the base columns, summed.
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

/// The row hash, for every table: it is valid for every column type and costs about what `CHECKSUM TABLE` and
/// the separate row count cost together (measured in benches/verify_cost.rs).
pub fn method_for(_t: &TableInfo) -> Method {
    Method::RowHash
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
    let (rows, checksum) = match method {
        Method::ChecksumTable => {
            let rows = count_rows(conn, tag, &info.schema, table, info.primary().is_some())?;
            let r: Option<(String, Option<u64>)> = conn.query_first(format!(
                "CHECKSUM TABLE {} EXTENDED {tag}",
                qualified(&info.schema, table)
            ))?;
            let sum = r
                .and_then(|(_, c)| c)
                .map(|c| c.to_string())
                .unwrap_or_else(|| "NULL".into());
            (rows, sum)
        }
        // The hash reads every row from the table itself, so it counts them exactly in the same scan.
        Method::RowHash => row_hash(conn, tag, info, table)?,
    };
    Ok(Fingerprint {
        rows,
        method,
        checksum,
    })
}

/// The SELECT the row hash reads: the base columns (generated ones are recomputed from them, and their
/// definitions are compared apart), TIMESTAMP as its absolute value (its text depends on the session's time
/// zone, and a DST change maps two instants to one local time), from the table itself (`USE INDEX ()`: never a
/// covering secondary index, which is part of what is being verified).
pub fn row_hash_sql(tag: &str, info: &TableInfo, table: &str) -> String {
    let cols: Vec<String> = info
        .stored_columns()
        .iter()
        .map(|c| {
            let q = quote_ident(&c.name);
            if c.data_type == "timestamp" {
                format!("UNIX_TIMESTAMP({q})")
            } else {
                q
            }
        })
        .collect();
    format!(
        "SELECT {tag} {} FROM {} USE INDEX ()",
        if cols.is_empty() {
            "1".to_string()
        } else {
            cols.join(", ")
        },
        qualified(&info.schema, table)
    )
}

/// One value into a row's digest: a type tag, then the exact value (the binary protocol gives FLOAT and
/// DOUBLE as their bits, where text would round a FLOAT to 6 digits); strings length-prefixed.
pub fn hash_value(h: &mut Sha256, v: &Value) {
    match v {
        Value::NULL => h.update([0u8]),
        Value::Bytes(b) => {
            h.update([1u8]);
            h.update((b.len() as u64).to_le_bytes());
            h.update(b);
        }
        Value::Int(i) => {
            h.update([2u8]);
            h.update(i.to_le_bytes());
        }
        Value::UInt(u) => {
            h.update([3u8]);
            h.update(u.to_le_bytes());
        }
        Value::Float(f) => {
            h.update([4u8]);
            h.update(f.to_bits().to_le_bytes());
        }
        Value::Double(d) => {
            h.update([5u8]);
            h.update(d.to_bits().to_le_bytes());
        }
        Value::Date(y, mo, d, hh, mi, s, us) => {
            h.update([6u8]);
            h.update(y.to_le_bytes());
            h.update([*mo, *d, *hh, *mi, *s]);
            h.update(us.to_le_bytes());
        }
        Value::Time(neg, days, hh, mi, s, us) => {
            h.update([7u8, u8::from(*neg)]);
            h.update(days.to_le_bytes());
            h.update([*hh, *mi, *s]);
            h.update(us.to_le_bytes());
        }
    }
}

/// Adds one row's digest into the order-independent sum.
fn add_digest(sum: &mut (u128, u128), d: &[u8]) {
    sum.0 = sum
        .0
        .wrapping_add(u128::from_le_bytes(d[..16].try_into().expect("16 bytes")));
    sum.1 = sum
        .1
        .wrapping_add(u128::from_le_bytes(d[16..32].try_into().expect("16 bytes")));
}

/// The row count and the row hash: sha256 of each row's base-column values, the digests added up as two
/// 128-bit halves — independent of row order, sensitive to duplicates.
pub fn row_hash(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    table: &str,
) -> anyhow::Result<(u64, String)> {
    let sql = row_hash_sql(tag, info, table);
    let mut sum = (0u128, 0u128);
    let mut rows = 0u64;
    // A prepared statement: the binary protocol gives typed values. The result streams: a large table is
    // never held in memory.
    // Rows read against the rows expected (the table's estimate; the shadow's is the source's count).
    let mut bar = crate::plan::progress::Progress::new(
        &format!("verify {}.{table}", info.schema),
        info.rows_estimate,
    );
    let mut result = conn.exec_iter(sql, ())?;
    while let Some(set) = result.iter() {
        for row in set {
            let row = row?;
            if rows.is_multiple_of(4096) {
                bar.set(rows);
            }
            let mut h = Sha256::new();
            for i in 0..row.len() {
                if let Some(v) = row.as_ref(i) {
                    hash_value(&mut h, v);
                }
            }
            add_digest(&mut sum, &h.finalize());
            rows += 1;
        }
    }
    bar.finish();
    Ok((rows, format!("{:032x}{:032x}", sum.0, sum.1)))
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
    fn the_row_hash_reads_base_columns_timestamps_as_instants_and_no_secondary_index() {
        let mut t = info(&["int", "timestamp", "int", "bit"], "Dynamic");
        t.columns[2].generated = true;
        assert_eq!(method_for(&t), Method::RowHash);
        assert_eq!(
            row_hash_sql("/* x */", &t, "_t_innops_new"),
            "SELECT /* x */ `c0`, UNIX_TIMESTAMP(`c1`), `c3` FROM `d`.`_t_innops_new` USE INDEX ()"
        );
    }

    #[test]
    fn values_of_different_types_or_boundaries_hash_differently() {
        let digest = |vals: &[Value]| {
            let mut h = Sha256::new();
            for v in vals {
                hash_value(&mut h, v);
            }
            h.finalize().to_vec()
        };
        let pairs: Vec<(Vec<Value>, Vec<Value>)> = vec![
            (vec![Value::NULL], vec![Value::Bytes(vec![])]),
            (
                vec![Value::Bytes(b"ab".to_vec()), Value::Bytes(b"c".to_vec())],
                vec![Value::Bytes(b"a".to_vec()), Value::Bytes(b"bc".to_vec())],
            ),
            (vec![Value::Int(1)], vec![Value::UInt(1)]),
            (
                vec![Value::Float(0.1)],
                vec![Value::Float(0.1f32.next_up())],
            ),
            (vec![Value::Double(-0.0)], vec![Value::Double(0.0)]),
            (
                vec![Value::Time(true, 0, 1, 0, 0, 0)],
                vec![Value::Time(false, 0, 1, 0, 0, 0)],
            ),
            (
                vec![Value::Date(2024, 1, 1, 0, 0, 0, 1)],
                vec![Value::Date(2024, 1, 1, 0, 0, 0, 0)],
            ),
        ];
        for (a, b) in pairs {
            assert_ne!(digest(&a), digest(&b), "{a:?} vs {b:?}");
        }
        // The sum does not depend on the order rows arrive in, and counts duplicates.
        let (x, y) = (digest(&[Value::Int(1)]), digest(&[Value::Int(2)]));
        let (mut s1, mut s2, mut s3) = ((0, 0), (0, 0), (0, 0));
        for d in [&x, &y] {
            add_digest(&mut s1, d);
        }
        for d in [&y, &x] {
            add_digest(&mut s2, d);
        }
        for d in [&x, &x] {
            add_digest(&mut s3, d);
        }
        assert_eq!(s1, s2);
        assert_ne!(s1, s3);
    }
}
