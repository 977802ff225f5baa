//! Proving a copy: the exact row count and a checksum that holds for every column type — innops's own row hash
//! (a 128-bit hash of every row's base columns, added up so the order rows arrive in does not matter).
//!
//! `CHECKSUM TABLE … EXTENDED` is not engine-independent: MyISAM and InnoDB give different values for identical
//! data with BIT columns, VARCHAR in MyISAM's fixed row format (shared/FACTS.md §1), STORED generated columns,
//! indexed VIRTUAL columns, and UNIQUE keys MyISAM implements as hash keys (TEXT/BLOB, long VARCHAR), whose
//! hidden hash column MyISAM checksums too. The row hash reads the base columns through the binary protocol
//! and is as cheap (benches/verify_cost.rs: it also counts the rows in the same scan), so it is used always;
//! `CHECKSUM TABLE` stays for measurements and for fingerprints recorded by older runs, and so does the sha256
//! row hash of earlier versions (a recorded fingerprint is always recomputed by its own method).

use crate::sql::Queryable;
use mysql::{Conn, Value};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::procedures::convert::schema::TableInfo;
use crate::progress::Progress;
use crate::server::connect::Target;
use crate::sql::{qualified, quote_ident};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// `CHECKSUM TABLE … EXTENDED`: engine-dependent for some tables (see the module comment).
    ChecksumTable,
    /// sha256 per row of the base columns, summed (fingerprints recorded before xxh3).
    RowHash,
    /// xxh3-128 per row of the base columns, summed: the same encoding as `RowHash`, a hash that costs a
    /// tenth of sha256's time per row (benches/verify_cost.rs). It guards against accidental differences —
    /// a lost, changed or duplicated row — as pt-table-checksum's CRC32/MD5 do, with 128 bits.
    RowXxh3,
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Method::ChecksumTable => "CHECKSUM TABLE",
            Method::RowHash => "row hash (sha256)",
            Method::RowXxh3 => "row hash (xxh3-128)",
        })
    }
}

/// The row hash, for every table: it is valid for every column type and costs about what `CHECKSUM TABLE` and
/// the separate row count cost together (measured in benches/verify_cost.rs).
pub fn method_for(_t: &TableInfo) -> Method {
    Method::RowXxh3
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
    let checksum = match method {
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
            return Ok(Fingerprint {
                rows,
                method,
                checksum: sum,
            });
        }
        // The hash reads every row from the table itself, so it counts them exactly in the same scan.
        Method::RowHash | Method::RowXxh3 => {
            let mut bar = verify_bar(info, table);
            let sum = row_sum(
                conn,
                &row_hash_sql(tag, info, table),
                method,
                &AtomicU64::new(0),
                Some(&mut bar),
            )?;
            bar.finish();
            sum
        }
    };
    Ok(checksum.fingerprint(method))
}

/// Like [`fingerprint`], for an InnoDB table that nothing else writes to (the new table after the copy, the
/// swapped table): the row hash reads it in two halves of its primary key at once, on two connections, when
/// the key leads with an integer column — the clustered index is the table, so each half is a range of it.
/// The halves' sums add up to exactly the one-stream value. Other tables and methods read in one stream.
pub fn fingerprint_clustered(
    target: &Target,
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    table: &str,
    method: Method,
) -> anyhow::Result<Fingerprint> {
    let Some(split) = split_point(conn, tag, info, table, method)? else {
        return fingerprint(conn, tag, info, table, method);
    };
    let (low, high) = split;
    let (target, high_sql) = (target.clone(), high);
    let read = Arc::new(AtomicU64::new(0));
    let theirs_read = Arc::clone(&read);
    let other = std::thread::spawn(move || -> anyhow::Result<RowSum> {
        let mut c = target.connect()?;
        row_sum(&mut c, &high_sql, method, &theirs_read, None)
    });
    let mut bar = verify_bar(info, table);
    let mine = row_sum(conn, &low, method, &read, Some(&mut bar));
    bar.finish();
    let theirs = other
        .join()
        .map_err(|_| anyhow::anyhow!("the row hash thread panicked"))?;
    let mut sum = mine?;
    sum.add(&theirs?);
    Ok(sum.fingerprint(method))
}

/// Rows read against the rows expected (the table's estimate; for the new table, the source's count).
fn verify_bar(info: &TableInfo, table: &str) -> Progress {
    Progress::new(
        &format!("verify {}.{table}", info.schema),
        info.rows_estimate,
    )
}

/// The two range SELECTs of a split row hash, or None when the table is not split: not a row hash, no primary
/// key led by an integer column (whole, not a prefix), or fewer than two distinct leading values.
fn split_point(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    table: &str,
    method: Method,
) -> anyhow::Result<Option<(String, String)>> {
    if method == Method::ChecksumTable {
        return Ok(None);
    }
    let Some(first) = info.primary().and_then(|pk| pk.parts.first()) else {
        return Ok(None);
    };
    let integer = info.columns.iter().any(|c| {
        c.name == first.column
            && matches!(
                c.data_type.as_str(),
                "tinyint" | "smallint" | "mediumint" | "int" | "bigint"
            )
    });
    if !integer || first.sub_part.is_some() {
        return Ok(None);
    }
    let col = quote_ident(&first.column);
    let bounds: Option<(Value, Value)> = conn.query_first(format!(
        "SELECT {tag} MIN({col}), MAX({col}) FROM {} FORCE INDEX (PRIMARY)",
        qualified(&info.schema, table)
    ))?;
    let as_i128 = |v: &Value| match v {
        Value::Int(i) => Some(i128::from(*i)),
        Value::UInt(u) => Some(i128::from(*u)),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    };
    let Some((lo, hi)) = bounds.and_then(|(a, b)| Some((as_i128(&a)?, as_i128(&b)?))) else {
        return Ok(None);
    };
    if hi <= lo {
        return Ok(None);
    }
    let mid = lo + (hi - lo) / 2;
    let base = row_hash_select(tag, info, table, "FORCE INDEX (PRIMARY)");
    Ok(Some((
        format!("{base} WHERE {col} <= {mid}"),
        format!("{base} WHERE {col} > {mid}"),
    )))
}

/// The SELECT the row hash reads: the base columns (generated ones are recomputed from them, and their
/// definitions are compared apart), TIMESTAMP as its absolute value (its text depends on the session's time
/// zone, and a DST change maps two instants to one local time), from the table itself (`USE INDEX ()`: never a
/// covering secondary index, which is part of what is being verified).
pub fn row_hash_sql(tag: &str, info: &TableInfo, table: &str) -> String {
    row_hash_select(tag, info, table, "USE INDEX ()")
}

fn row_hash_select(tag: &str, info: &TableInfo, table: &str, hint: &str) -> String {
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
        "SELECT {tag} {} FROM {} {hint}",
        if cols.is_empty() {
            "1".to_string()
        } else {
            cols.join(", ")
        },
        qualified(&info.schema, table)
    )
}

/// One value into a row's bytes: a type tag, then the exact value (the binary protocol gives FLOAT and
/// DOUBLE as their bits, where text would round a FLOAT to 6 digits); strings length-prefixed.
pub fn encode_value(buf: &mut Vec<u8>, v: &Value) {
    match v {
        Value::NULL => buf.push(0),
        Value::Bytes(b) => {
            buf.push(1);
            buf.extend_from_slice(&(b.len() as u64).to_le_bytes());
            buf.extend_from_slice(b);
        }
        Value::Int(i) => {
            buf.push(2);
            buf.extend_from_slice(&i.to_le_bytes());
        }
        Value::UInt(u) => {
            buf.push(3);
            buf.extend_from_slice(&u.to_le_bytes());
        }
        Value::Float(f) => {
            buf.push(4);
            buf.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Value::Double(d) => {
            buf.push(5);
            buf.extend_from_slice(&d.to_bits().to_le_bytes());
        }
        Value::Date(y, mo, d, hh, mi, s, us) => {
            buf.push(6);
            buf.extend_from_slice(&y.to_le_bytes());
            buf.extend_from_slice(&[*mo, *d, *hh, *mi, *s]);
            buf.extend_from_slice(&us.to_le_bytes());
        }
        Value::Time(neg, days, hh, mi, s, us) => {
            buf.extend_from_slice(&[7u8, u8::from(*neg)]);
            buf.extend_from_slice(&days.to_le_bytes());
            buf.extend_from_slice(&[*hh, *mi, *s]);
            buf.extend_from_slice(&us.to_le_bytes());
        }
    }
}

/// The order-independent sum of row digests, and the rows counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowSum {
    pub rows: u64,
    a: u128,
    b: u128,
}

impl RowSum {
    /// Adds one row's encoded bytes, hashed by `method` (sha256: its two 128-bit halves; xxh3: its 128 bits).
    pub fn add_row(&mut self, row: &[u8], method: Method) {
        match method {
            Method::RowXxh3 => {
                self.a = self.a.wrapping_add(xxhash_rust::xxh3::xxh3_128(row));
            }
            _ => {
                let d = Sha256::digest(row);
                self.a = self
                    .a
                    .wrapping_add(u128::from_le_bytes(d[..16].try_into().expect("16 bytes")));
                self.b = self
                    .b
                    .wrapping_add(u128::from_le_bytes(d[16..32].try_into().expect("16 bytes")));
            }
        }
        self.rows += 1;
    }

    /// Adds another part of the same table (a range read apart).
    pub fn add(&mut self, other: &RowSum) {
        self.rows += other.rows;
        self.a = self.a.wrapping_add(other.a);
        self.b = self.b.wrapping_add(other.b);
    }

    fn fingerprint(&self, method: Method) -> Fingerprint {
        let checksum = match method {
            Method::RowXxh3 => format!("{:032x}", self.a),
            _ => format!("{:032x}{:032x}", self.a, self.b),
        };
        Fingerprint {
            rows: self.rows,
            method,
            checksum,
        }
    }
}

/// Reads `sql` (a row hash SELECT) and sums its rows' digests. A prepared statement: the binary protocol gives
/// typed values. The result streams: a large table is never held in memory.
/// Rows read so far go into `read` (shared by the streams of a split read); the stream that owns `bar` shows
/// them against the rows expected.
fn row_sum(
    conn: &mut Conn,
    sql: &str,
    method: Method,
    read: &AtomicU64,
    mut bar: Option<&mut Progress>,
) -> anyhow::Result<RowSum> {
    let mut sum = RowSum::default();
    let mut buf = Vec::with_capacity(1024);
    let mut result = conn.exec_iter(sql, ())?;
    while let Some(set) = result.iter() {
        for row in set {
            let row = row?;
            if sum.rows % 4096 == 4095 {
                let total = read.fetch_add(4096, Ordering::Relaxed) + 4096;
                if let Some(bar) = bar.as_deref_mut() {
                    bar.set(total);
                }
            }
            buf.clear();
            for i in 0..row.len() {
                if let Some(v) = row.as_ref(i) {
                    encode_value(&mut buf, v);
                }
            }
            sum.add_row(&buf, method);
        }
    }
    Ok(sum)
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
        assert_eq!(method_for(&t), Method::RowXxh3);
        assert_eq!(
            row_hash_sql("/* x */", &t, "_t_innops_new"),
            "SELECT /* x */ `c0`, UNIX_TIMESTAMP(`c1`), `c3` FROM `d`.`_t_innops_new` USE INDEX ()"
        );
    }

    #[test]
    fn values_of_different_types_or_boundaries_hash_differently() {
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
        for method in [Method::RowHash, Method::RowXxh3] {
            for (a, b) in &pairs {
                assert_ne!(sum(&[a], method), sum(&[b], method), "{a:?} vs {b:?}");
            }
        }
    }

    fn sum(rows: &[&Vec<Value>], method: Method) -> RowSum {
        let mut s = RowSum::default();
        for r in rows {
            let mut buf = vec![];
            for v in r.iter() {
                encode_value(&mut buf, v);
            }
            s.add_row(&buf, method);
        }
        s
    }

    #[test]
    fn the_sum_ignores_order_counts_duplicates_and_adds_up_from_parts() {
        let (x, y, z) = (
            vec![Value::Int(1), Value::Bytes(b"a".to_vec())],
            vec![Value::Int(2), Value::NULL],
            vec![Value::Int(3), Value::Double(1.5)],
        );
        for method in [Method::RowHash, Method::RowXxh3] {
            let whole = sum(&[&x, &y, &z], method);
            assert_eq!(whole, sum(&[&z, &x, &y], method));
            assert_ne!(
                whole.fingerprint(method),
                sum(&[&x, &x, &y], method).fingerprint(method)
            );
            assert_ne!(
                whole.fingerprint(method),
                sum(&[&x, &y], method).fingerprint(method)
            );
            // Two ranges read apart (the split read of a clustered table) give the one-stream value.
            let mut parts = sum(&[&x], method);
            parts.add(&sum(&[&y, &z], method));
            assert_eq!(parts, whole);
            assert_eq!(parts.rows, 3);
        }
        // The methods are told apart, so a fingerprint is only ever compared with one of its own kind.
        assert_ne!(
            sum(&[&x], Method::RowHash)
                .fingerprint(Method::RowHash)
                .checksum,
            sum(&[&x], Method::RowXxh3)
                .fingerprint(Method::RowXxh3)
                .checksum
        );
    }

    #[test]
    fn the_sha256_row_hash_of_earlier_runs_is_reproduced() {
        // sha256 over the value encoding, as recorded by runs before xxh3 (one row: Int(1), Bytes("a")):
        // a fingerprint an older run recorded for a kept table still verifies.
        let mut s = RowSum::default();
        let mut buf = vec![];
        encode_value(&mut buf, &Value::Int(1));
        encode_value(&mut buf, &Value::Bytes(b"a".to_vec()));
        s.add_row(&buf, Method::RowHash);
        let mut h = Sha256::new();
        h.update([2u8]);
        h.update(1i64.to_le_bytes());
        h.update([1u8]);
        h.update(1u64.to_le_bytes());
        h.update(b"a");
        let d = h.finalize();
        let want = format!(
            "{:032x}{:032x}",
            u128::from_le_bytes(d[..16].try_into().unwrap()),
            u128::from_le_bytes(d[16..].try_into().unwrap())
        );
        assert_eq!(s.fingerprint(Method::RowHash).checksum, want);
    }
}
