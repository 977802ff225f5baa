//! The page parser (issue 30) against pages a real server wrote: tables with every column type it reads, in
//! COMPACT and DYNAMIC, rows read by SELECT before a slow shutdown, then every leaf page of the stopped server's
//! `.ibd` parsed; the parser must return exactly those rows, in key order, column for column. Delete-marked
//! records come from a DELETE run at `innodb_force_recovery = 2` (no purge thread runs, so the marks reach the
//! disk deterministically). Then damage: pages overwritten or scrambled must yield rejected records, never a
//! wrong row.

use std::collections::BTreeMap;

use innops::dump::page_def::{page_def, PagedTable};
use innops::dump::TableName;
use innops::pages::page::leaves_in;
use innops::pages::space::Space;
use innops::pages::{parse_leaf, ColType, InMemory, Outcome, Record, Value};
use innops::procedures::drill::damage::{BlobChain, Scramble, Stopped, PAGE};
use mysql::prelude::Queryable;

use crate::common::recover::{rows, start_at, stop_slow, TextRow};
use crate::common::Sandboxed;
use innops::server::sandbox::SandboxOptions;

const TAG: &str = "/* innops:test */";

pub(crate) fn types_table(c: &mut mysql::Conn, name: &str, format: &str) {
    c.query_drop(format!(
        "CREATE TABLE db.{name} (id INT NOT NULL PRIMARY KEY, ti TINYINT, su SMALLINT UNSIGNED, mi MEDIUMINT, \
         bi BIGINT, u INT UNSIGNED, f FLOAT, d DOUBLE, de DECIMAL(20,6), dz DECIMAL(5,0), \
         c CHAR(5) CHARACTER SET utf8mb4, cl CHAR(4) CHARACTER SET latin1, vc VARCHAR(300) CHARACTER SET utf8mb4, \
         vl VARCHAR(10) CHARACTER SET latin1, b BINARY(4), vb VARBINARY(20), dt DATE, dtt DATETIME(6), \
         dt0 DATETIME, ts TIMESTAMP(3) NULL, tm TIME(2), tm6 TIME(6), y YEAR, e ENUM('a','b','c'), \
         s SET('x','y','z'), bt BIT(10), tx TEXT CHARACTER SET utf8mb4, big VARCHAR(9000) CHARACTER SET latin1) \
         ENGINE=InnoDB ROW_FORMAT={format}"
    ))
    .unwrap();
    c.query_drop(format!(
        "INSERT INTO db.{name} SELECT seq * 3 - 300, IF(seq % 7 = 0, NULL, seq % 256 - 128), seq * 331 % 65536, \
         seq * 40000 - 4000000, (seq - 100) * 92233720368547, seq * 21474836, seq / 8 - 10, seq * 0.25 - 20, \
         (seq - 100) * 1234567.891011, seq * 457 % 99999 - 50000, \
         IF(seq % 5 = 0, '', SUBSTRING('héllo wörld', 1 + seq % 5, 5)), LEFT(CONCAT('ab', seq), 4), \
         IF(seq % 11 = 0, NULL, REPEAT('ü', seq % 300)), IF(seq % 13 = 0, '', CONCAT('v', seq)), \
         UNHEX(HEX(seq * seq)), IF(seq % 9 = 0, '', UNHEX(REPEAT(HEX(seq), seq % 10))), \
         '2000-01-01' + INTERVAL seq * 17 DAY, '2020-02-29 12:34:56.123456' + INTERVAL seq * 3661000001 MICROSECOND, \
         '1999-12-31 23:59:59' + INTERVAL seq DAY, IF(seq % 6 = 0, NULL, FROM_UNIXTIME(1600000000 + seq * 86461.125)), \
         SEC_TO_TIME(seq * 4567.25 - 400000), SEC_TO_TIME(seq * 1234.000123 - 100000), \
         IF(seq % 50 = 0, 0, 1901 + seq), ELT(1 + seq % 3, 'a', 'b', 'c'), seq % 8, seq * 5 % 1024, \
         IF(seq % 4 = 0, NULL, CONCAT('text ', seq, ' 😀')), \
         IF(seq % 50 = 1, REPEAT(CHAR(65 + seq % 26), 9000), IF(seq % 10 = 0, NULL, CONCAT('small', seq))) \
         FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_200) s"
    ))
    .unwrap();
    c.query_drop(format!(
        "INSERT INTO db.{name} VALUES \
         (-2147483648, -128, 0, -8388608, -9223372036854775808, 0, -3.4e38, 1e-300, -99999999999999.999999, -99999, \
          '', '', '', '', 0x00000000, '', '1000-01-01', '1000-01-01 00:00:00.000000', '0000-00-00 00:00:00', \
          '1970-01-01 00:00:01.000', '-838:59:59.00', '-00:00:00.000001', 1901, 'a', '', 0, '', ''), \
         (2147483647, 127, 65535, 8388607, 9223372036854775807, 4294967295, 3.4e38, 0.1, 99999999999999.999999, \
          99999, '😀😀😀😀😀', 'zzzz', REPEAT('😀', 300), 'éééééééééé', 0xFFFFFFFF, REPEAT(0xFF, 20), '9999-12-31', \
          '9999-12-31 23:59:59.999999', '9999-12-31 23:59:59', '2038-01-19 03:14:07.999', '838:59:59.00', \
          '-838:59:59.000000', 2155, 'c', 'x,y,z', b'1111111111', REPEAT('ß', 100), REPEAT('z', 9000)), \
         (1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
          NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
    ))
    .unwrap();
}

/// The SELECT list that prints each column as the comparison wants it: bytes in hex, BIT as a number.
fn select_list(t: &PagedTable) -> String {
    t.def
        .columns
        .iter()
        .map(|c| {
            let q = format!("`{}`", c.name);
            match &c.ty {
                ColType::Binary { .. } | ColType::Varbinary { .. } => format!("HEX({q})"),
                ColType::Blob { charset: None, .. } => format!("HEX({q})"),
                ColType::Bit { .. } => format!("{q} + 0"),
                _ => q,
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A parsed value in the form of [`select_list`]'s column; floating point is compared as numbers.
fn same(v: &Value, truth: &Option<String>) -> bool {
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02X}")).collect::<String>();
    match (v, truth) {
        (Value::Null, None) => true,
        (_, None) | (Value::Null, _) => false,
        (Value::Float(f), Some(t)) => t.parse::<f32>().ok() == Some(*f),
        (Value::Double(d), Some(t)) => t.parse::<f64>().ok() == Some(*d),
        (Value::Bytes(b), Some(t)) => &hex(b) == t,
        (v, Some(t)) => v.text().as_deref() == Some(t.as_str()),
    }
}

fn file(sb: &Sandboxed, table: &str) -> Vec<u8> {
    std::fs::read(sb.sandbox.datadir.join("db").join(format!("{table}.ibd"))).unwrap()
}

/// Every record of the table's clustered-index leaves, in key order.
/// Each table's definition from the dictionary and its rows as the server prints them (in key order; `nopk`,
/// the table without a primary key, in the server's order).
fn truths(
    c: &mut mysql::Conn,
    names: &[&'static str],
    nopk: &str,
) -> BTreeMap<&'static str, (PagedTable, Vec<TextRow>)> {
    let mut tables = BTreeMap::new();
    for &name in names {
        let t = page_def(c, TAG, &TableName::new("db", name)).unwrap();
        let order = if name == nopk { "" } else { " ORDER BY id" };
        let truth = rows(
            c,
            &format!("SELECT {} FROM db.{name}{order}", select_list(&t)),
        );
        tables.insert(name, (t, truth));
    }
    tables
}

/// Every table's leaf pages parsed from the stopped sandbox's file and compared with its truth; `del` is the
/// table whose ids divisible by 7 (of 1–300) were deleted.
fn parse_and_compare(
    sb: &Sandboxed,
    tables: &BTreeMap<&'static str, (PagedTable, Vec<TextRow>)>,
    del: &str,
) {
    for (name, (t, truth)) in tables {
        let deleted: Vec<String> = if *name == del {
            (1..=300)
                .filter(|i| i % 7 == 0)
                .map(|i| i.to_string())
                .collect()
        } else {
            Vec::new()
        };
        let recs = parse_table(&file(sb, name), t);
        compare(t, truth, &recs, &deleted);
    }
}

fn parse_table(data: &[u8], t: &PagedTable) -> Vec<Record> {
    let space = Space::read(&data[..PAGE]).unwrap();
    let pages = InMemory {
        data,
        page_size: PAGE,
    };
    let leaves = leaves_in(data, t.root.expect("the dictionary's root")).unwrap();
    let mut out = Vec::new();
    for l in leaves {
        let p = &data[l.page as usize * PAGE..(l.page as usize + 1) * PAGE];
        assert_eq!(&p[66..74], t.index_id.to_be_bytes(), "page {}", l.page);
        let leaf = parse_leaf(&t.def, &space, &pages, p)
            .unwrap_or_else(|e| panic!("page {}: {e}", l.page));
        assert!(
            leaf.checksum_ok && leaf.problems.is_empty(),
            "page {}: {leaf:?}",
            l.page
        );
        out.extend(leaf.records);
    }
    out
}

/// The parser's rows must be the SELECT's, in its order, column for column; `deleted` the keys (as text)
/// of the delete-marked records it sets aside.
fn compare(t: &PagedTable, truth: &[TextRow], recs: &[Record], deleted: &[String]) {
    let mut got_rows = Vec::new();
    let mut got_deleted = Vec::new();
    for r in recs {
        match &r.outcome {
            Outcome::Row(row) => got_rows.push(row),
            Outcome::Rejected { reason, key } => {
                assert!(
                    reason.contains("delete-marked"),
                    "record at {}: {reason}",
                    r.origin
                );
                let key = key.as_ref().expect("a deleted record's key validates");
                got_deleted.push(key[0].text().unwrap());
            }
        }
    }
    assert_eq!(got_deleted, deleted);
    assert_eq!(got_rows.len(), truth.len());
    for (row, want) in got_rows.iter().zip(truth) {
        for (i, c) in t.def.columns.iter().enumerate() {
            assert!(
                same(&row.values[i], &want[i]),
                "column {} of the row {want:?}: parsed {:?}",
                c.name,
                row.values[i]
            );
        }
    }
}

/// Every column type, COMPACT and DYNAMIC, NULLs, empty strings, extremes, multibyte, off-page VARCHARs, a
/// hidden row id, and delete-marked records: the parser returns exactly the rows SELECT returned, in key
/// order; then overwritten and scrambled pages give rejected records and never a wrong row.
#[test]
fn leaf_pages_written_by_the_server_parse_into_exactly_the_rows_select_returns() {
    let mut sb = Sandboxed::new("pages1");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    types_table(&mut c, "dyn", "DYNAMIC");
    types_table(&mut c, "cmp", "COMPACT");
    c.query_drop("CREATE TABLE db.del (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL) ENGINE=InnoDB")
        .unwrap();
    c.query_drop("INSERT INTO db.del SELECT seq, REPEAT('d', seq % 40) FROM seq_1_to_300")
        .unwrap();
    c.query_drop("CREATE TABLE db.nopk (a INT, v VARCHAR(10)) ENGINE=InnoDB ROW_FORMAT=COMPACT")
        .unwrap();
    c.query_drop("INSERT INTO db.nopk SELECT 100 - seq, IF(seq % 3 = 0, NULL, CONCAT('n', seq)) FROM seq_1_to_50")
        .unwrap();
    drop(c);
    stop_slow(&sb);
    // No purge at level 2: the DELETE's marks stay in the records through the shutdown.
    start_at(&mut sb, 2);
    let mut c = sb.conn();
    c.query_drop("USE db").unwrap();
    c.query_drop("DELETE FROM db.del WHERE id % 7 = 0").unwrap();
    c.query_drop("SET time_zone = '+00:00'").unwrap();
    let tables = truths(&mut c, &["dyn", "cmp", "del", "nopk"], "nopk");
    drop(c);
    stop_slow(&sb);
    parse_and_compare(&sb, &tables, "del");
    let (dyn_def, dyn_truth) = &tables["dyn"];
    garbage_is_rejected(&sb, dyn_def, dyn_truth);
}

/// Damaged leaves of the stopped server's `dyn` table: every row the parser still returns is the row SELECT
/// returned for its key, and the damage is seen (rejected records or a broken list).
fn garbage_is_rejected(sb: &Sandboxed, t: &PagedTable, truth: &[TextRow]) {
    let stopped = Stopped::already(&sb.sandbox).unwrap();
    let tf = stopped.table("db", "dyn").unwrap();
    let leaves = tf.leaves(t.root.expect("the dictionary's root")).unwrap();
    assert!(leaves.len() >= 4, "{leaves:?}");
    let by_key: BTreeMap<String, &TextRow> =
        truth.iter().map(|r| (r[0].clone().unwrap(), r)).collect();
    tf.damage(leaves[0].page).unwrap();
    tf.scramble(leaves[1].page, &Scramble::Fill).unwrap();
    tf.scramble(
        leaves[2].page,
        &Scramble::Key {
            nth: 3,
            key: innops::procedures::drill::damage::int_key(2_000_000_000, 4),
        },
    )
    .unwrap();
    tf.scramble(leaves[3].page, &Scramble::Swap { nth: 5 })
        .unwrap();
    let data = file(sb, "dyn");
    let space = Space::read(&data[..PAGE]).unwrap();
    assert!(space.full_crc32, "{space:?}");
    for l in &leaves[..4] {
        let p = &data[l.page as usize * PAGE..(l.page as usize + 1) * PAGE];
        let pages = InMemory {
            data: &data,
            page_size: PAGE,
        };
        let leaf = match parse_leaf(&t.def, &space, &pages, p) {
            Ok(leaf) => leaf,
            Err(why) => panic!("page {}: {why}", l.page),
        };
        let rejected = leaf
            .records
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Rejected { .. }))
            .count();
        assert!(
            rejected > 0 || !leaf.problems.is_empty(),
            "page {}: the damage went unseen",
            l.page
        );
        for r in &leaf.records {
            let Outcome::Row(row) = &r.outcome else {
                continue;
            };
            let key = row.values[0].text().unwrap();
            let want = by_key.get(&key).unwrap_or_else(|| {
                panic!("page {}: a row with key {key} that never existed", l.page)
            });
            for i in 0..t.def.columns.len() {
                assert!(
                    same(&row.values[i], &want[i]),
                    "page {}: a wrong row {key}",
                    l.page
                );
            }
        }
    }
}

/// The server options that load `file_key_management` with one key (id 1) from a file in `dir`.
fn encryption(dir: &std::path::Path) -> Vec<String> {
    let keys = dir.join("keys.txt");
    std::fs::write(&keys, format!("1;{}\n", "a1".repeat(32))).unwrap();
    vec![
        "plugin_load_add = file_key_management".into(),
        format!("file_key_management_filename = {}", keys.display()),
    ]
}

/// An `ENCRYPTED=YES` table of the stopped sandbox: page 0 carries crypt data (scheme 1, key 1) and its
/// leaf (the root of a small table) is refused as encrypted, not read.
fn encrypted_is_refused(sb: &Sandboxed, t: &PagedTable, table: &str) {
    let data = file(sb, table);
    let space = Space::read(&data[..PAGE]).unwrap();
    let crypt = space.crypt.expect("crypt data on page 0");
    assert_eq!((crypt.scheme, crypt.key_id), (1, 1), "{space:?}");
    let root = t.root.expect("the dictionary's root") as usize;
    let root = &data[root * PAGE..(root + 1) * PAGE];
    let pages = InMemory {
        data: &data,
        page_size: PAGE,
    };
    let why = parse_leaf(&t.def, &space, &pages, root).unwrap_err();
    assert!(why.contains("encryption key version"), "{why}");
}

/// A tablespace in the older page format (created with `innodb_checksum_algorithm = crc32`, as files from
/// before MariaDB 10.5 and MySQL's are): bytes 0..4 of each page are its checksum, not an encryption key
/// version. Its flags say so, every page's checksum verifies in that format (and fails as full_crc32), and the
/// rows parse as SELECT returned them; an encrypted table's key version is found at its place in that format.
#[test]
fn a_crc32_tablespace_is_read_by_its_flags_not_refused_as_encrypted() {
    let keys = tempfile::tempdir().unwrap();
    let mut extra = encryption(keys.path());
    extra.push("innodb_checksum_algorithm = crc32".into());
    let mut sb = Sandboxed::with(
        "pages2",
        SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra,
            ..Default::default()
        },
    );
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    c.query_drop("CREATE TABLE db.old (id INT PRIMARY KEY, v VARCHAR(200), n INT, b MEDIUMBLOB) ENGINE=InnoDB")
        .unwrap();
    c.query_drop(
        "INSERT INTO db.old SELECT seq, REPEAT('o', seq % 200), IF(seq % 5 = 0, NULL, seq * 7), \
         IF(seq % 400 = 0, UNHEX(REPEAT(SHA2(seq, 256), 1500)), NULL) FROM seq_1_to_2000",
    )
    .unwrap();
    c.query_drop(
        "CREATE TABLE db.enc (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB ENCRYPTED=YES",
    )
    .unwrap();
    c.query_drop("INSERT INTO db.enc VALUES (1, 'secret')")
        .unwrap();
    let enc = page_def(&mut c, TAG, &TableName::new("db", "enc")).unwrap();
    let t = page_def(&mut c, TAG, &TableName::new("db", "old")).unwrap();
    let truth = rows(
        &mut c,
        &format!("SELECT {} FROM db.old ORDER BY id", select_list(&t)),
    );
    drop(c);
    stop_slow(&sb);
    sb.reopen();
    let data = file(&sb, "old");
    let space = Space::read(&data[..PAGE]).unwrap();
    assert!(!space.full_crc32 && space.crypt.is_none(), "{space:?}");
    let mut full = space;
    full.full_crc32 = true;
    let mut used = 0;
    for (n, p) in data.chunks(PAGE).enumerate() {
        if p.iter().all(|&b| b == 0) {
            continue;
        }
        used += 1;
        assert!(space.checksum_ok(p), "page {n} fails its crc32 checksum");
        assert!(!full.checksum_ok(p), "page {n} passes as full_crc32");
        assert_eq!(space.key_version(p), 0, "page {n}");
    }
    assert!(used > 4, "{used} pages");
    // Its BLOB pages too: five 48,000-byte values, three pages each, read through their crc32 checksums.
    let chains = innops::procedures::drill::damage::blob_chains_in(&data).unwrap();
    assert_eq!(chains.len(), 5, "{chains:?}");
    compare(&t, &truth, &parse_table(&data, &t), &[]);
    encrypted_is_refused(&sb, &enc, "enc");
}

/// Pages in the legacy `innodb` checksum format (files last written before MariaDB 10.2): every page of a crc32
/// tablespace is given InnoDB's fold checksums by innops's formula, and the server — which accepts that
/// format beside crc32 — reads every row back as before, with no corruption in its log: the formula is the
/// server's. The parser counts those pages as passing, and a byte changed as failing.
#[test]
fn pages_with_the_legacy_innodb_checksum_pass_as_the_server_reads_them() {
    let mut sb = Sandboxed::with(
        "pages5",
        SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra: vec!["innodb_checksum_algorithm = crc32".into()],
            ..Default::default()
        },
    );
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    c.query_drop(
        "CREATE TABLE db.old (id INT PRIMARY KEY, v VARCHAR(200), b MEDIUMBLOB) ENGINE=InnoDB",
    )
    .unwrap();
    c.query_drop(
        "INSERT INTO db.old SELECT seq, REPEAT('o', seq % 200), \
         IF(seq % 400 = 0, UNHEX(REPEAT(SHA2(seq, 256), 1500)), NULL) FROM seq_1_to_2000",
    )
    .unwrap();
    let all = "SELECT id, v, SHA2(b, 256) FROM db.old ORDER BY id";
    let truth = rows(&mut c, all);
    drop(c);
    stop_slow(&sb);
    sb.reopen();
    let path = sb.sandbox.datadir.join("db").join("old.ibd");
    let mut data = std::fs::read(&path).unwrap();
    let space = Space::read(&data[..PAGE]).unwrap();
    assert!(!space.full_crc32, "{space:?}");
    let mut rewritten = 0;
    for p in data.chunks_mut(PAGE) {
        if p.iter().all(|&b| b == 0) {
            continue;
        }
        // As the server wrote them: the new checksum first, then the old one, whose bytes include it.
        let (new, _) = innops::pages::space::innodb_checksums(p);
        p[..4].copy_from_slice(&new.to_be_bytes());
        let (_, old) = innops::pages::space::innodb_checksums(p);
        p[PAGE - 8..PAGE - 4].copy_from_slice(&old.to_be_bytes());
        assert!(space.checksum_ok(p), "a legacy page fails");
        let mut changed = p.to_vec();
        changed[PAGE / 2] ^= 0x10;
        assert!(!space.checksum_ok(&changed), "a changed legacy page passes");
        rewritten += 1;
    }
    assert!(rewritten > 4, "{rewritten} pages");
    std::fs::write(&path, &data).unwrap();
    start_at(&mut sb, 0);
    let mut c = sb.conn();
    assert_eq!(rows(&mut c, all), truth);
    let log = std::fs::read_to_string(&sb.sandbox.error_log).unwrap();
    assert!(
        !log.contains("corrupt") && !log.contains("checksum"),
        "{log}"
    );
}

/// One table of off-page values: MEDIUMTEXT, LONGBLOB and a long VARCHAR, from inline to more than 100 KB
/// (chains of up to eight BLOB pages), NULL and empty ones between.
fn blob_table(c: &mut mysql::Conn, name: &str, format: &str) {
    c.query_drop(format!(
        "CREATE TABLE db.{name} (id INT PRIMARY KEY, t MEDIUMTEXT CHARACTER SET utf8mb4, b LONGBLOB, \
         v VARCHAR(20000) CHARACTER SET latin1) ENGINE=InnoDB ROW_FORMAT={format}"
    ))
    .unwrap();
    c.query_drop(format!(
        "INSERT INTO db.{name} SELECT seq, \
         IF(seq % 5 = 0, NULL, REPEAT(CONCAT('ü', MD5(seq)), ELT(1 + seq % 4, 2, 300, 1000, 1900))), \
         IF(seq % 7 = 0, '', UNHEX(REPEAT(SHA2(seq, 256), seq * 100))), \
         REPEAT(CHAR(65 + seq % 26, 48 + seq % 10), seq * 250) \
         FROM seq_1_to_40"
    ))
    .unwrap();
}

/// The bytes of a value as the SELECT of [`select_list`] printed it.
fn truth_bytes(ty: &ColType, t: &str) -> Vec<u8> {
    match ty {
        ColType::Blob { charset: None, .. } => (0..t.len() / 2)
            .map(|i| u8::from_str_radix(&t[2 * i..2 * i + 2], 16).unwrap())
            .collect(),
        _ => t.as_bytes().to_vec(),
    }
}

/// Externally stored columns, DYNAMIC and COMPACT, followed through their BLOB chains: every row comes back
/// byte for byte as SELECT returned it. Then one page in the middle of a multi-page chain and the first page
/// of another are damaged: exactly the records whose chains pass through them are rejected, naming the
/// column and the page, with their keys; every other row is still the truth. (And a full_crc32 encrypted
/// table is refused by the key version in bytes 0..4.)
#[test]
fn externally_stored_columns_are_followed_and_a_damaged_blob_page_rejects_exactly_its_records() {
    let keys = tempfile::tempdir().unwrap();
    let sb = Sandboxed::with(
        "pages3",
        SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra: encryption(keys.path()),
            ..Default::default()
        },
    );
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    c.query_drop("SET NAMES utf8mb4").unwrap();
    c.query_drop(
        "CREATE TABLE db.enc (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB ENCRYPTED=YES",
    )
    .unwrap();
    c.query_drop("INSERT INTO db.enc VALUES (1, 'secret')")
        .unwrap();
    let enc = page_def(&mut c, TAG, &TableName::new("db", "enc")).unwrap();
    let mut tables = Vec::new();
    for (name, format) in [("bd", "DYNAMIC"), ("bc", "COMPACT")] {
        blob_table(&mut c, name, format);
        let t = page_def(&mut c, TAG, &TableName::new("db", name)).unwrap();
        let truth = rows(
            &mut c,
            &format!("SELECT {} FROM db.{name} ORDER BY id", select_list(&t)),
        );
        tables.push((name, format, t, truth));
    }
    drop(c);
    stop_slow(&sb);
    encrypted_is_refused(&sb, &enc, "enc");
    let stopped = Stopped::already(&sb.sandbox).unwrap();
    for (name, format, t, truth) in &tables {
        compare(t, truth, &parse_table(&file(&sb, name), t), &[]);
        // Which row's column each chain holds: its off-page part (COMPACT keeps the first 768 bytes in the
        // record) by length and first bytes; the values differ from row to row.
        let tf = stopped.table("db", name).unwrap();
        let chains = tf.blob_chains().unwrap();
        let prefix = if *format == "COMPACT" { 768 } else { 0 };
        let parts: Vec<(String, Vec<u8>)> = truth
            .iter()
            .flat_map(|row| {
                t.def.columns.iter().zip(row).filter_map(|(col, v)| {
                    let b = truth_bytes(&col.ty, v.as_deref()?);
                    Some((row[0].clone().unwrap(), b.get(prefix..)?.to_vec()))
                })
            })
            .collect();
        let owner = |ch: &BlobChain| -> String {
            let found: Vec<&String> = parts
                .iter()
                .filter(|(_, rest)| rest.len() as u64 == ch.len && rest.starts_with(&ch.head))
                .map(|(key, _)| key)
                .collect();
            assert_eq!(
                found.len(),
                1,
                "{name}: the chain {:?} belongs to {found:?}",
                ch.pages
            );
            found[0].clone()
        };
        assert!(
            chains.iter().any(|ch| ch.len > 100_000),
            "{name}: {chains:?}"
        );
        let long = chains
            .iter()
            .find(|ch| ch.pages.len() >= 3)
            .expect("a chain of 3 pages or more");
        let short = chains
            .iter()
            .find(|ch| ch.pages.len() == 1)
            .expect("a one-page chain");
        let bad = [long.pages[1], short.pages[0]];
        let mut hit: Vec<String> = chains
            .iter()
            .filter(|ch| ch.pages.iter().any(|p| bad.contains(p)))
            .map(owner)
            .collect();
        hit.sort();
        hit.dedup();
        assert!(!hit.is_empty());
        assert_eq!(chains.iter().map(owner).count(), chains.len());
        for p in bad {
            tf.damage(p).unwrap();
        }
        let data = file(&sb, name);
        let space = Space::read(&data[..PAGE]).unwrap();
        let pages = InMemory {
            data: &data,
            page_size: PAGE,
        };
        let by_key: BTreeMap<String, &TextRow> =
            truth.iter().map(|r| (r[0].clone().unwrap(), r)).collect();
        let mut rejected = Vec::new();
        for l in leaves_in(&data, t.root.expect("the dictionary's root")).unwrap() {
            let p = &data[l.page as usize * PAGE..(l.page as usize + 1) * PAGE];
            for r in parse_leaf(&t.def, &space, &pages, p).unwrap().records {
                match r.outcome {
                    Outcome::Row(row) => {
                        let want = by_key[&row.values[0].text().unwrap()];
                        for (i, v) in row.values.iter().enumerate() {
                            assert!(same(v, &want[i]), "{name}: a wrong row {:?}", want[0]);
                        }
                    }
                    Outcome::Rejected { reason, key } => {
                        assert!(
                            bad.iter().any(|p| reason.contains(&format!("is incomplete: page {p} fails"))),
                            "{name}: {reason}"
                        );
                        rejected.push(key.expect("its key")[0].text().unwrap());
                    }
                }
            }
        }
        rejected.sort();
        assert_eq!(
            rejected, hit,
            "{name}: the records whose chains pass the damaged pages"
        );
    }
}

/// The values the FLOAT and DOUBLE columns of [`floats_print_as_the_server_prints_them`] hold, as SQL literals:
/// edges first (zeros, extremes, subnormals, the layout's thresholds, ties), then random finite bit patterns
/// (seeded) and random fixed-decimal values within the `(M,D)` columns' ranges.
fn float_rows(n: usize) -> Vec<[String; 6]> {
    use rand::{Rng, SeedableRng};
    let f = |x: f32| format!("{:e}", f64::from(x));
    let d = |x: f64| format!("{x:e}");
    let mut out: Vec<[String; 6]> = Vec::new();
    // DOUBLE(255,30) holds up to 225 digits before the point.
    let wide = |x: f64| if x.abs() < 1e224 { d(x) } else { "0".into() };
    let edges: [f64; 32] = [
        0.0,
        0.1,
        1.0 / 3.0,
        0.5,
        1.0,
        1e14,
        1e15,
        1e16,
        1e17,
        1e-4,
        1e-5,
        1e-14,
        1e-15,
        1e-16,
        123456789.0,
        1234565.0,
        1234575.0,
        16777217.0,
        999999999999999.9,
        1234567890123456.7,
        123456789012345678.0,
        0.1 + 0.2,
        1e100,
        1e-100,
        f64::MAX,
        f64::MIN_POSITIVE,
        5e-324,
        2.2250738585072e-308,
        1.2345678901234567e-15,
        3.4e38,
        1e-45,
        1.17549435e-38,
    ];
    for (i, &x) in edges.iter().enumerate() {
        let fx = x as f32;
        let fx = if fx.is_finite() { fx } else { f32::MAX };
        for s in [1.0, -1.0] {
            out.push([
                f(fx * s as f32),
                d(x * s),
                format!("{:.3}", (x * s).clamp(-9999.999, 9999.999)),
                format!(
                    "{:.6}",
                    (x * s).clamp(-99999999999999.99, 99999999999999.99)
                ),
                d(edges[(i + 7) % edges.len()] * s),
                wide(x * s),
            ]);
        }
    }
    // Values that round to zero: -0 as the FLOAT stores it.
    out.push([
        "-1e-50".into(),
        "-1e-320".into(),
        "-0.0001".into(),
        "-0.0000001".into(),
        "-0e0".into(),
        "-1e-31".into(),
    ]);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(30);
    while out.len() < n {
        let fx = f32::from_bits(rng.gen());
        let dx = f64::from_bits(rng.gen());
        let rx = f64::from_bits(rng.gen());
        if !(fx.is_finite() && dx.is_finite() && rx.is_finite()) {
            continue;
        }
        let fixed7 = rng.gen_range(-9_999_999i64..=9_999_999);
        let fixed20 = rng.gen_range(-99_999_999_999_999_999_999i128..=99_999_999_999_999_999_999);
        out.push([
            f(fx),
            d(dx),
            format!(
                "{}{}.{:03}",
                if fixed7 < 0 { "-" } else { "" },
                fixed7.abs() / 1000,
                fixed7.abs() % 1000
            ),
            format!(
                "{}{}.{:06}",
                if fixed20 < 0 { "-" } else { "" },
                fixed20.abs() / 1_000_000,
                fixed20.abs() % 1_000_000
            ),
            d(rx),
            wide(dx),
        ]);
    }
    out
}

/// FLOAT, DOUBLE, FLOAT(7,3), DOUBLE(20,6), REAL and DOUBLE(255,30) values read from the leaves of a stopped server's file print
/// byte for byte as the server's SELECT printed them.
#[test]
fn floats_print_as_the_server_prints_them() {
    let sb = Sandboxed::new("pages_float");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop(
        "CREATE TABLE db.fl (id INT PRIMARY KEY, f FLOAT, d DOUBLE, f73 FLOAT(7,3), d206 DOUBLE(20,6), \
         r REAL, dw DOUBLE(255,30)) ENGINE=InnoDB",
    )
    .unwrap();
    let values = float_rows(3000);
    for (n, chunk) in values.chunks(500).enumerate() {
        let tuples: Vec<String> = chunk
            .iter()
            .enumerate()
            .map(|(i, v)| format!("({}, {})", n * 500 + i, v.join(", ")))
            .collect();
        c.query_drop(format!("INSERT INTO db.fl VALUES {}", tuples.join(", ")))
            .unwrap();
    }
    let t = page_def(&mut c, TAG, &TableName::new("db", "fl")).unwrap();
    let truth = rows(&mut c, "SELECT * FROM db.fl ORDER BY id");
    assert_eq!(truth.len(), values.len());
    drop(c);
    stop_slow(&sb);
    let recs = parse_table(&file(&sb, "fl"), &t);
    assert_eq!(recs.len(), truth.len());
    for (r, want) in recs.iter().zip(&truth) {
        let Outcome::Row(row) = &r.outcome else {
            panic!("record at {}: {:?}", r.origin, r.outcome);
        };
        for (i, c) in t.def.columns.iter().enumerate().skip(1) {
            let got = innops::pages::value::float_text(&row.values[i], &c.ty);
            assert_eq!(
                got.as_ref(),
                want[i].as_ref(),
                "column {} of row {}: {:?}",
                c.name,
                want[0].as_deref().unwrap_or(""),
                row.values[i]
            );
        }
    }
}

/// ROW_FORMAT=REDUNDANT, which MariaDB 10.11 still creates: every column type (NULL fixed-length columns,
/// full-length CHARs, an off-page VARCHAR with its 768-byte local prefix), a hidden row id, delete-marked
/// records, purged ones on the free list; the parser returns exactly SELECT's rows. Then each leaf of the types table overwritten at random,
/// many times over, from inside a record's header on: never a row SELECT did not return for its key.
#[test]
fn redundant_leaf_pages_parse_into_exactly_the_rows_select_returns() {
    let mut sb = Sandboxed::new("pages_redundant");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    types_table(&mut c, "red", "REDUNDANT");
    c.query_drop(
        "CREATE TABLE db.rdel (id INT PRIMARY KEY, v VARCHAR(40) NOT NULL) ENGINE=InnoDB ROW_FORMAT=REDUNDANT",
    )
    .unwrap();
    c.query_drop("INSERT INTO db.rdel SELECT seq, REPEAT('d', seq % 40) FROM seq_1_to_300")
        .unwrap();
    c.query_drop(
        "CREATE TABLE db.rnopk (a INT, c CHAR(3) CHARACTER SET utf8mb4, v VARCHAR(10)) ENGINE=InnoDB ROW_FORMAT=REDUNDANT",
    )
    .unwrap();
    c.query_drop(
        "INSERT INTO db.rnopk SELECT IF(seq % 4 = 0, NULL, 100 - seq), IF(seq % 5 = 0, NULL, CONCAT('é', seq % 10)), \
         IF(seq % 3 = 0, NULL, CONCAT('n', seq)) FROM seq_1_to_50",
    )
    .unwrap();
    // Purged by the slow shutdown: freed records on the page's free list, their bytes counted as garbage.
    c.query_drop(
        "CREATE TABLE db.rpurged (id INT PRIMARY KEY, v VARCHAR(200)) ENGINE=InnoDB ROW_FORMAT=REDUNDANT",
    )
    .unwrap();
    c.query_drop("INSERT INTO db.rpurged SELECT seq, REPEAT('p', seq % 200) FROM seq_1_to_600")
        .unwrap();
    c.query_drop("DELETE FROM db.rpurged WHERE id % 5 = 0")
        .unwrap();
    drop(c);
    stop_slow(&sb);
    // No purge at level 2: the DELETE's marks stay in the records through the shutdown.
    start_at(&mut sb, 2);
    let mut c = sb.conn();
    c.query_drop("USE db").unwrap();
    c.query_drop("DELETE FROM db.rdel WHERE id % 7 = 0")
        .unwrap();
    c.query_drop("SET time_zone = '+00:00'").unwrap();
    let tables = truths(&mut c, &["red", "rdel", "rnopk", "rpurged"], "rnopk");
    for (t, _) in tables.values() {
        assert_eq!(t.def.format, innops::pages::RowFormat::Redundant);
    }
    drop(c);
    stop_slow(&sb);
    parse_and_compare(&sb, &tables, "rdel");
    // The purge did leave freed records: some leaf has a free list (PAGE_FREE, page header byte 6).
    let (purged, _) = &tables["rpurged"];
    let data = file(&sb, "rpurged");
    assert!(
        leaves_in(&data, purged.root.expect("the dictionary's root"))
            .unwrap()
            .iter()
            .any(|l| {
                let at = l.page as usize * PAGE + 38 + 6;
                data[at..at + 2] != [0, 0]
            })
    );
    let (t, truth) = &tables["red"];
    overwritten_redundant_pages_give_no_wrong_row(&file(&sb, "red"), t, truth);
}

/// Random bytes (a fixed seed) from inside a random record's 6-byte header on, over up to 400 bytes, 100 times
/// a leaf: every row still returned is SELECT's row for its key. The stretch starts in a header because bytes
/// overwritten wholly inside one string's value (a latin1 VARCHAR takes any byte) cannot be seen in the
/// record, on a COMPACT page neither: only the page's checksum, which fails, says so.
fn overwritten_redundant_pages_give_no_wrong_row(data: &[u8], t: &PagedTable, truth: &[TextRow]) {
    let space = Space::read(&data[..PAGE]).unwrap();
    let pages = InMemory {
        data,
        page_size: PAGE,
    };
    let by_key: BTreeMap<String, &TextRow> =
        truth.iter().map(|r| (r[0].clone().unwrap(), r)).collect();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut rows_kept, mut rejected) = (0, 0);
    for l in leaves_in(data, t.root.expect("the dictionary's root")).unwrap() {
        let good = &data[l.page as usize * PAGE..(l.page as usize + 1) * PAGE];
        let heap_top = usize::from(u16::from_be_bytes([good[40], good[41]]));
        let origins: Vec<usize> = parse_leaf(&t.def, &space, &pages, good)
            .unwrap()
            .records
            .iter()
            .map(|r| r.origin)
            .collect();
        for _ in 0..100 {
            let mut p = good.to_vec();
            let len = 8 + (rand() % 400) as usize;
            let from = origins[rand() as usize % origins.len()] - 6 + (rand() % 4) as usize;
            for b in &mut p[from..(from + len).min(heap_top)] {
                *b = rand() as u8;
            }
            if p == good {
                continue;
            }
            let Ok(leaf) = parse_leaf(&t.def, &space, &pages, &p) else {
                continue;
            };
            for r in &leaf.records {
                let Outcome::Row(row) = &r.outcome else {
                    rejected += 1;
                    continue;
                };
                rows_kept += 1;
                let key = row.values[0].text().unwrap();
                let want = by_key.get(&key).unwrap_or_else(|| {
                    panic!("page {}: a row with key {key} that never existed", l.page)
                });
                for (i, c) in t.def.columns.iter().enumerate() {
                    assert!(
                        same(&row.values[i], &want[i]),
                        "page {}, bytes {from}..{}: a wrong {} in row {key}",
                        l.page,
                        from + len,
                        c.name
                    );
                }
            }
        }
    }
    // The overwrites hit records (some rejected) and left others standing (rows still read).
    assert!(rejected > 0 && rows_kept > 0, "{rejected} {rows_kept}");
}
