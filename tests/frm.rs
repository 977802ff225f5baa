//! Table definitions read from `.frm` files (`pages::frm`, issue 30's path for a copy no server starts on)
//! against the server's own: for each table a real server created, the definition built from its `.frm` must
//! equal the one `dump::page_def` asks information_schema and InnoDB's dictionary for (columns, types, NULL,
//! the clustered index, the row format), and a table the server's definition refuses must be refused from the
//! `.frm` too. Then the clustered index's id found in the data file alone (the smallest id among the index pages
//! whose checksums pass) must be the dictionary's, and the data file's row format the dictionary's.

use innops::dump::page_def::page_def;
use innops::dump::TableName;
use innops::pages::def::RowFormat;
use innops::pages::frm;
use innops::pages::page::{clustered_index_id, N_HEAP, PAGE};
use innops::pages::space::Space;
use mysql::prelude::Queryable;

use crate::common::recover::stop_slow;
use crate::common::Sandboxed;

const TAG: &str = "/* innops:test */";

/// Tables beside the page tests' all-types ones: each names a rule the `.frm` reader must follow.
const TABLES: &[(&str, &str)] = &[
    ("nopk", "(a INT, v VARCHAR(10)) ROW_FORMAT=COMPACT"),
    // The first UNIQUE key over NOT NULL columns is the clustered index.
    ("uq", "(a INT NOT NULL, b VARCHAR(10) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, c INT, UNIQUE KEY (b, a), KEY (c))"),
    // A UNIQUE key over a column that may be NULL is not: the hidden row id is.
    ("uqnull", "(a INT, b INT NOT NULL, UNIQUE KEY (a), KEY (b))"),
    ("comp", "(a INT, b BIGINT UNSIGNED, v VARCHAR(5) CHARACTER SET utf8mb3 COLLATE utf8mb3_bin, PRIMARY KEY (b, a), KEY (v))"),
    // Virtual columns are not in the record; stored ones are.
    ("gen", "(id INT PRIMARY KEY, a INT, v INT AS (a * 2) VIRTUAL, s VARCHAR(8) AS (CONCAT('x', a)) STORED, KEY (v))"),
    // A UNIQUE over a TEXT column is enforced through a hidden virtual hash column.
    ("lh", "(id INT PRIMARY KEY, t TEXT, UNIQUE KEY (t))"),
    ("misc", "(id SMALLINT UNSIGNED PRIMARY KEY, e ENUM('it''s', 'b,c', 'ü') CHARACTER SET latin1, \
              s SET('x', 'y') CHARACTER SET utf8mb4, tt TINYTEXT, mt MEDIUMTEXT CHARACTER SET latin1 COLLATE latin1_bin, \
              lb LONGBLOB, tb TINYBLOB, mb MEDIUMBLOB NOT NULL, j JSON, b1 BIT(1), d65 DECIMAL(65,30), \
              ud DECIMAL(10,2) UNSIGNED NOT NULL, ts TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, fl FLOAT(7,3), \
              dbl DOUBLE, t0 TIME, dt3 DATETIME(3) NOT NULL, ch CHAR(255) CHARACTER SET utf8mb4 NOT NULL, \
              vb VARBINARY(3000), bn BINARY(1))"),
    ("zip", "(id BIGINT PRIMARY KEY, v VARCHAR(20)) ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8"),
    ("red", "(id INT PRIMARY KEY, v VARCHAR(20)) ROW_FORMAT=REDUNDANT"),
    // The table's default character set (the server's is latin1).
    ("u4", "(id INT PRIMARY KEY, v VARCHAR(5)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci"),
    ("a1", "(id INT PRIMARY KEY) DEFAULT CHARSET=ascii"),
    // Fixed decimals (D of (M,D)) or none: the server prints the two differently.
    ("flt", "(id INT PRIMARY KEY, f FLOAT, f10 FLOAT(10), f30 FLOAT(30), r REAL, d DOUBLE(20,6) UNSIGNED, \
             d0 DOUBLE(10,0), f73 FLOAT(7,3) NOT NULL)"),
    // Refused by both: a prefix in the clustered key, a data-type plugin, ZEROFILL numbers.
    ("pfx", "(a VARCHAR(100) NOT NULL, PRIMARY KEY (a(10)))"),
    ("uuid", "(id INT PRIMARY KEY, u UUID)"),
    ("fz", "(id INT PRIMARY KEY, f FLOAT ZEROFILL)"),
    ("iz", "(id INT PRIMARY KEY, n SMALLINT(5) ZEROFILL)"),
    ("dz", "(id INT PRIMARY KEY, d DECIMAL(8,2) ZEROFILL)"),
];

fn frm_bytes(sb: &Sandboxed, table: &str) -> Vec<u8> {
    std::fs::read(sb.sandbox.datadir.join("db").join(format!("{table}.frm"))).unwrap()
}

/// Every table's definition from its `.frm` equals the server's, or both refuse it; then, the server stopped,
/// the data file alone names the clustered index the dictionary names and the row format it has.
#[test]
fn definitions_read_from_frm_files_equal_the_servers_own() {
    let sb = Sandboxed::new("frm1");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    crate::pages::types_table(&mut c, "dyn", "DYNAMIC");
    crate::pages::types_table(&mut c, "cmp", "COMPACT");
    for (name, body) in TABLES {
        c.query_drop(format!("CREATE TABLE db.{name} {body} ENGINE=InnoDB"))
            .unwrap_or_else(|e| panic!("creating {name}: {e}"));
    }
    c.query_drop("INSERT INTO db.red SELECT seq, CONCAT('r', seq) FROM seq_1_to_50")
        .unwrap();
    let names: Vec<&str> = ["dyn", "cmp"]
        .into_iter()
        .chain(TABLES.iter().map(|(n, _)| *n))
        .collect();
    let mut servers = Vec::new();
    for name in &names {
        let server = page_def(&mut c, TAG, &TableName::new("db", name));
        let parsed = frm::parse(&frm_bytes(&sb, name));
        let fallback = server
            .as_ref()
            .map(|t| t.def.format)
            .unwrap_or(RowFormat::Dynamic);
        let from_frm = parsed.and_then(|f| f.table_def(fallback));
        match (&server, &from_frm) {
            (Ok(t), Ok(d)) => assert_eq!(&t.def, d, "{name}: the .frm's definition differs"),
            (Err(s), Err(f)) => {
                let s = innops::error::display_of(s);
                assert!(
                    (s.contains("prefix") && f.contains("prefix"))
                        || (s.contains("uuid") && f.contains("uuid"))
                        || (s.contains("ZEROFILL") && f.contains("ZEROFILL")),
                    "{name}: refused for different reasons: server {s}; .frm {f}"
                )
            }
            (s, f) => panic!(
                "{name}: server {:?}, .frm {f:?}",
                s.as_ref().map(|t| &t.def)
            ),
        }
        servers.push((name.to_string(), server.ok()));
        // The table's default character set and collation, as information_schema.TABLES has them.
        let default: Option<(String, String)> = c
            .exec_first(
                "SELECT c.CHARACTER_SET_NAME, t.TABLE_COLLATION FROM information_schema.TABLES t \
                 JOIN information_schema.COLLATIONS c ON c.COLLATION_NAME = t.TABLE_COLLATION \
                 WHERE t.TABLE_SCHEMA = 'db' AND t.TABLE_NAME = ?",
                (name,),
            )
            .unwrap();
        if let Ok(f) = frm::parse(&frm_bytes(&sb, name)) {
            assert_eq!(f.charset, default, "{name}: the table's default collation");
        }
    }
    let u4 = frm::parse(&frm_bytes(&sb, "u4")).unwrap().charset;
    assert_eq!(u4, Some(("utf8mb4".into(), "utf8mb4_unicode_ci".into())));
    // The row formats given explicitly are in the .frm; DEFAULT is not.
    let explicit = |n: &str| frm::parse(&frm_bytes(&sb, n)).unwrap().row_format;
    assert_eq!(explicit("cmp"), Some(RowFormat::Compact));
    assert_eq!(explicit("zip"), Some(RowFormat::Compressed));
    assert_eq!(explicit("uq"), None);
    drop(c);
    stop_slow(&sb);
    for (name, server) in servers {
        // ROW_FORMAT=COMPRESSED pages are not read (their page 0 too is compressed).
        let Some(t) = server.filter(|t| t.def.format != RowFormat::Compressed) else {
            continue;
        };
        let data =
            std::fs::read(sb.sandbox.datadir.join("db").join(format!("{name}.ibd"))).unwrap();
        let space = Space::read(&data[..PAGE]).unwrap();
        let (id, pages) = clustered_index_id(&data, |p| space.checksum_ok(p)).unwrap();
        assert_eq!(id, t.index_id, "{name}: the data file's clustered index id");
        assert!(pages >= 1);
        let root = t.root.expect("the dictionary names the root") as usize;
        let root = &data[root * PAGE..(root + 1) * PAGE];
        let compact = u16::from_be_bytes([root[N_HEAP], root[N_HEAP + 1]]) & 0x8000 != 0;
        let (format, assumed) = space.row_format(compact);
        if assumed {
            // full_crc32 files do not record COMPACT against DYNAMIC: DYNAMIC is assumed.
            assert_eq!(format, RowFormat::Dynamic, "{name}");
        } else {
            assert_eq!(format, t.def.format, "{name}: the data file's row format");
        }
    }
}
