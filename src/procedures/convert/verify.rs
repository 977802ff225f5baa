//! Proving a copy: the exact row count and a checksum that holds for every column type.
//!
//! `CHECKSUM TABLE … EXTENDED` is not engine-independent: MyISAM and InnoDB give different values for identical
//! data with BIT columns, VARCHAR in MyISAM's fixed row format (shared/FACTS.md §1), STORED generated columns,
//! indexed VIRTUAL columns, and UNIQUE keys MyISAM implements as hash keys (TEXT/BLOB, long VARCHAR), whose
//! hidden hash column MyISAM checksums too. innops's own row hash (a 128-bit hash of every row's base columns,
//! read through the binary protocol and added up so the order rows arrive in does not matter) holds for every
//! type. `CHECKSUM TABLE` is computed inside the server, so it reads a table in about half the time the row
//! hash takes to receive it: a copy beside its source is verified by it where the table's classes checksum
//! alike on both engines ([`first_method`]), and whenever the two checksums differ the row hash of both tables
//! decides. Where the source cannot be read again (the ALTER path), the row hash is used from the start. The
//! sha256 row hash of earlier versions stays for fingerprints they recorded (a recorded fingerprint is always
//! recomputed by its own method).

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

/// The row hash, where a verification cannot fall back on it: the ALTER path (the MyISAM table is gone once the
/// ALTER ran), a rollback, a kept table proven unchanged. It is valid for every column type.
pub fn method_for(_t: &TableInfo) -> Method {
    Method::RowXxh3
}

/// `innops convert --verify`: how a copy beside its source is proven before the swap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    /// `CHECKSUM TABLE` where the table's columns checksum alike on both engines, else the row hash; the row
    /// hash decides whenever `CHECKSUM TABLE` differs.
    #[default]
    Auto,
    /// `CHECKSUM TABLE` first for every table; the row hash decides whenever it differs.
    Checksum,
    /// The row hash for every table (128 bits, read through the client).
    Hash,
}

impl Choice {
    pub fn parse(s: &str) -> anyhow::Result<Choice> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Choice::Auto),
            "checksum" => Ok(Choice::Checksum),
            "hash" => Ok(Choice::Hash),
            _ => Err(crate::error::bad_input(format!(
                "--verify {s} is not a verification: give auto, checksum or hash"
            ))),
        }
    }
}

/// The first method a copy beside its source is verified by, for `choice`, and why when `auto` chose the row
/// hash. `CHECKSUM TABLE` is computed inside the server (no row crosses the wire), so it is the cheaper read;
/// the row hash is what decides whenever the two engines' checksums differ, so a table classed wrongly here
/// costs a second read, never a false verdict.
pub fn first_method(t: &TableInfo, choice: Choice) -> (Method, Option<String>) {
    match choice {
        Choice::Hash => (Method::RowXxh3, None),
        Choice::Checksum => (Method::ChecksumTable, None),
        Choice::Auto => match checksum_differs_by_engine(t) {
            None => (Method::ChecksumTable, None),
            Some(why) => (Method::RowXxh3, Some(why)),
        },
    }
}

/// Column types whose stored value `CHECKSUM TABLE … EXTENDED` reads alike from MyISAM and InnoDB
/// (tests/convert.rs, `checksum_table_is_trusted_only_for_tables_it_reads_alike_on_both_engines`, checksums each
/// on a real server).
pub const CHECKSUM_ALIKE: &[&str] = &[
    "tinyint",
    "smallint",
    "mediumint",
    "int",
    "bigint",
    "decimal",
    "float",
    "double",
    "date",
    "datetime",
    "timestamp",
    "time",
    "year",
    "char",
    "varchar",
    "binary",
    "varbinary",
    "tinytext",
    "text",
    "mediumtext",
    "longtext",
    "tinyblob",
    "blob",
    "mediumblob",
    "longblob",
    "enum",
    "set",
    "inet4",
    "inet6",
    "uuid",
    "geometry",
    "point",
    "linestring",
    "polygon",
    "multipoint",
    "multilinestring",
    "multipolygon",
    "geometrycollection",
];

/// Why `CHECKSUM TABLE … EXTENDED` may differ between this MyISAM table and its InnoDB copy with the same
/// rows, or None when every column and option of the table is of a class it reads alike on both engines: BIT
/// columns and MyISAM's fixed row format change the record's null-and-flag bytes, generated columns and UNIQUE
/// hash keys add values MyISAM stores and InnoDB computes (shared/FACTS.md §1); a type or row format not tried
/// on both engines is not trusted.
pub fn checksum_differs_by_engine(t: &TableInfo) -> Option<String> {
    if let Some(c) = t.columns.iter().find(|c| c.data_type == "bit") {
        return Some(format!("BIT column `{}`", c.name));
    }
    if let Some(c) = t.columns.iter().find(|c| c.generated) {
        return Some(format!("generated column `{}`", c.name));
    }
    if let Some(c) = t
        .columns
        .iter()
        .find(|c| !CHECKSUM_ALIKE.contains(&c.data_type.as_str()))
    {
        return Some(format!(
            "{} column `{}`",
            c.data_type.to_ascii_uppercase(),
            c.name
        ));
    }
    if let Some(c) = t.definition.old_temporal_columns().first() {
        return Some(format!(
            "column `{c}` in the temporal format of before MySQL 5.6"
        ));
    }
    if let Some(k) = t.definition.hash_keys().first() {
        return Some(format!("UNIQUE hash key `{k}`"));
    }
    if let Some(f) = t
        .definition
        .option("ROW_FORMAT")
        .filter(|f| !f.eq_ignore_ascii_case("DYNAMIC") && !f.eq_ignore_ascii_case("DEFAULT"))
    {
        return Some(format!("ROW_FORMAT={f}"));
    }
    None
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
            return Ok(Fingerprint {
                rows,
                method,
                checksum: checksum_table(conn, tag, &info.schema, table)?,
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

/// The new table's fingerprint by `method` (the source's): the row hash as [`fingerprint_clustered`] reads it;
/// `CHECKSUM TABLE` computed in the server, one read of the new table, with `inserted` as its row count when
/// the copy's one statement reported how many rows it inserted into the empty table (nothing else writes to
/// it), else counted.
pub fn fingerprint_new(
    target: &Target,
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    table: &str,
    method: Method,
    inserted: Option<u64>,
) -> anyhow::Result<Fingerprint> {
    if method != Method::ChecksumTable {
        return fingerprint_clustered(target, conn, tag, info, table, method);
    }
    let rows = match inserted {
        Some(n) => n,
        None => count_rows(conn, tag, &info.schema, table, info.primary().is_some())?,
    };
    // The server reports no progress for CHECKSUM TABLE: its time so far is what moves.
    let label = format!(
        "verify {}.{table}: CHECKSUM TABLE of {} rows",
        info.schema,
        crate::units::format_count(rows)
    );
    let checksum =
        crate::progress::elapsed(&label, || checksum_table(conn, tag, &info.schema, table))?;
    Ok(Fingerprint {
        rows,
        method,
        checksum,
    })
}

/// `CHECKSUM TABLE … EXTENDED`, as text ("NULL" when the server gives none).
fn checksum_table(conn: &mut Conn, tag: &str, schema: &str, table: &str) -> anyhow::Result<String> {
    let r: Option<(String, Option<u64>)> = conn.query_first(format!(
        "CHECKSUM TABLE {} EXTENDED {tag}",
        qualified(schema, table)
    ))?;
    Ok(r.and_then(|(_, c)| c)
        .map(|c| c.to_string())
        .unwrap_or_else(|| "NULL".into()))
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
    format!(
        "SELECT {tag} {} FROM {} {hint}",
        hashed_columns(info),
        qualified(&info.schema, table)
    )
}

/// What the row hash reads of a row: the base columns (generated ones are recomputed from them), TIMESTAMP as
/// its absolute value; `1` for a table without any.
pub fn hashed_columns(info: &TableInfo) -> String {
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
    if cols.is_empty() {
        "1".to_string()
    } else {
        cols.join(", ")
    }
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

    fn info(types: &[&str], row_format: &str) -> TableInfo {
        let names: Vec<String> = (0..types.len()).map(|i| format!("c{i}")).collect();
        let cols: Vec<(&str, &str)> = names
            .iter()
            .map(String::as_str)
            .zip(types.iter().copied())
            .collect();
        TableInfo {
            row_format: row_format.into(),
            collation: String::new(),
            ..TableInfo::synthetic("d", "t", &cols)
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
    fn checksum_table_first_only_where_both_engines_read_the_table_alike() {
        use crate::procedures::convert::definition::Definition;
        let plain = info(
            &["int", "char", "varchar", "timestamp", "longblob", "inet6"],
            "Dynamic",
        );
        assert_eq!(
            first_method(&plain, Choice::Auto),
            (Method::ChecksumTable, None)
        );
        assert_eq!(first_method(&plain, Choice::Hash), (Method::RowXxh3, None));
        let why = |t: &TableInfo| first_method(t, Choice::Auto).1.unwrap_or_default();
        let bit = info(&["int", "bit"], "Dynamic");
        assert_eq!(why(&bit), "BIT column `c1`");
        // --verify checksum tries it anyway (the row hash decides when it differs).
        assert_eq!(
            first_method(&bit, Choice::Checksum),
            (Method::ChecksumTable, None)
        );
        let mut generated = plain.clone();
        generated.columns[1].generated = true;
        assert_eq!(why(&generated), "generated column `c1`");
        assert_eq!(
            why(&info(&["int", "bigint", "wktblob"], "Dynamic")),
            "WKTBLOB column `c2`"
        );
        let mut hashed = plain.clone();
        hashed.definition = Definition::parse(
            "CREATE TABLE `t` (\n  `c0` int(11) NOT NULL,\n  `c4` longblob,\n  PRIMARY KEY (`c0`),\n  UNIQUE KEY `u` (`c4`) USING HASH\n) ENGINE=MyISAM",
        );
        assert_eq!(why(&hashed), "UNIQUE hash key `u`");
        for (format, trusted) in [("FIXED", false), ("COMPRESSED", false), ("DYNAMIC", true)] {
            let mut t = plain.clone();
            t.definition = Definition::parse(&format!(
                "CREATE TABLE `t` (\n  `c0` int(11) NOT NULL,\n  PRIMARY KEY (`c0`)\n) ENGINE=MyISAM ROW_FORMAT={format}"
            ));
            assert_eq!(
                checksum_differs_by_engine(&t).is_none(),
                trusted,
                "{format}"
            );
        }
        assert!(Choice::parse("sha")
            .unwrap_err()
            .to_string()
            .contains("auto, checksum or hash"));
        assert_eq!(Choice::parse("HASH").unwrap(), Choice::Hash);
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
