//! Helpers the recover tests share: damage a stopped sandbox's pages through the library's guard, start at a
//! recovery level, read rows as text, and the expected lost ranges computed from the truth taken before the damage.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use innops::dump::{self, Manifest};
use innops::procedures::drill::damage as pages;
use mysql::prelude::Queryable;

use crate::common::Sandboxed;

/// A row as text (NULL as None), in the order the server returns columns.
pub type TextRow = Vec<Option<String>>;

pub use innops::procedures::drill::damage::IndexPage;

/// The leaf pages of `db`.`table`'s index whose root is `root` (3: clustered, 4: the first secondary index),
/// in key order, read by the library's page parser (`innops::procedures::drill::damage`) from the stopped sandbox.
pub fn leaves(sb: &Sandboxed, table: &str, root: u32) -> Vec<IndexPage> {
    pages::Stopped::already(&sb.sandbox)
        .unwrap()
        .table("db", table)
        .unwrap()
        .leaves(root)
        .unwrap()
}

/// FACTS §4: 512 bytes of 0xA5 into the body of page `n` of `db`.`table`, through the library's guard (a
/// sandbox's own file, server stopped).
pub fn damage(sb: &Sandboxed, table: &str, n: u32) {
    pages::Stopped::already(&sb.sandbox)
        .unwrap()
        .table("db", table)
        .unwrap()
        .damage(n)
        .unwrap();
}

/// Overwrite the redo log past its header: no level up to 3 skips the redo, so none starts.
pub fn damage_redo(sb: &Sandboxed) {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(sb.sandbox.datadir.join("ib_logfile0"))
        .unwrap();
    f.seek(SeekFrom::Start(12288)).unwrap();
    f.write_all(&vec![0xA5u8; 8 << 20]).unwrap();
}

pub fn ibd(sb: &Sandboxed, db: &str, table: &str) -> PathBuf {
    sb.sandbox.datadir.join(db).join(format!("{table}.ibd"))
}

/// A slow shutdown, so the pages on disk are all there is.
pub fn stop_slow(sb: &Sandboxed) {
    pages::Stopped::slow(&sb.sandbox, "/* innops:test */").expect("a slow shutdown");
}

/// Start with `innodb_force_recovery = level`, without loading the buffer pool dump (which would read the bad
/// pages first).
pub fn start_at(sb: &mut Sandboxed, level: u8) {
    sb.sandbox
        .start(
            &[
                "--innodb-buffer-pool-load-at-startup=OFF".into(),
                format!("--innodb-force-recovery={level}"),
            ],
            Duration::from_secs(300),
        )
        .expect("start at the recovery level");
}

pub fn rows(conn: &mut mysql::Conn, sql: &str) -> Vec<TextRow> {
    conn.query_iter(sql)
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (0..r.len())
                .map(|i| match r.as_ref(i).unwrap() {
                    mysql::Value::NULL => None,
                    mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                    other => Some(other.as_sql(true)),
                })
                .collect()
        })
        .collect()
}

/// Rows of a table in primary-key order.
pub fn table_rows(conn: &mut mysql::Conn, table: &str, order: &str) -> Vec<TextRow> {
    rows(conn, &format!("SELECT * FROM {table} ORDER BY {order}"))
}

/// A table of `n` rows, about 70 to a leaf page: (id INT, k INT with an index, c VARCHAR(200)).
pub fn int_table(conn: &mut mysql::Conn, table: &str, n: u32) {
    conn.query_drop(format!(
        "CREATE TABLE db.{table} (id INT PRIMARY KEY, k INT NOT NULL, c VARCHAR(200) NOT NULL, KEY k (k)) ENGINE=InnoDB"
    ))
    .unwrap();
    conn.query_drop(format!(
        "INSERT INTO db.{table} SELECT seq, seq * 7 % 1000, CONCAT(REPEAT('x', 180), seq) FROM seq_1_to_{n}"
    ))
    .unwrap();
}

/// Keys of the rows on each leaf page (`keys` in primary-key order, from before the damage).
pub fn keys_per_leaf(leaves: &[IndexPage], keys: &[TextRow]) -> Vec<Vec<TextRow>> {
    pages::split_by_leaf(leaves, keys).expect("the leaves hold every row once")
}

/// The lost ranges a dump must report for damaged leaves `bad` (indexes into the leaf chain) of an INT-keyed
/// table: one per run of adjacent bad leaves, bounded by the last id before and the first id after.
pub fn expected_lost(
    per_leaf: &[Vec<TextRow>],
    bad: &BTreeSet<usize>,
) -> Vec<(Option<i64>, Option<i64>)> {
    let id = |r: &TextRow| r[0].as_ref().unwrap().parse::<i64>().unwrap();
    let mut out = Vec::new();
    let mut i = 0;
    while i < per_leaf.len() {
        if bad.contains(&i) {
            let start = i;
            while bad.contains(&i) {
                i += 1;
            }
            let after = start
                .checked_sub(1)
                .map(|p| id(per_leaf[p].last().unwrap()));
            let before = per_leaf.get(i).map(|l| id(&l[0]));
            out.push((after, before));
        } else {
            i += 1;
        }
    }
    out
}

pub fn reported_lost(m: &Manifest, table: &str) -> Vec<(Option<i64>, Option<i64>)> {
    let t = m.table("db", table).unwrap();
    let mut v: Vec<_> = t
        .lost
        .iter()
        .map(|l| {
            assert!(
                l.from.is_none(),
                "a lost range starts at a readable key: {l:?}"
            );
            (
                l.after.as_ref().map(|k| k[0].as_i64().unwrap()),
                l.before.as_ref().map(|k| k[0].as_i64().unwrap()),
            )
        })
        .collect();
    v.sort();
    v
}

/// All rows of `before` but those whose ids are on the bad leaves.
pub fn minus_bad(
    before: &[TextRow],
    per_leaf: &[Vec<TextRow>],
    bad: &BTreeSet<usize>,
) -> Vec<TextRow> {
    let gone: BTreeSet<&TextRow> = bad.iter().flat_map(|&i| per_leaf[i].iter()).collect();
    before
        .iter()
        .filter(|r| !gone.contains(&vec![r[0].clone()]))
        .cloned()
        .collect()
}

/// Overwrite records of page `n` with garbage and give the page a valid checksum again, through the library's
/// guard: InnoDB reads it as a good page and crashes on the records (FACTS §4).
pub fn garble(sb: &Sandboxed, table: &str, n: u32) {
    pages::Stopped::already(&sb.sandbox)
        .unwrap()
        .table("db", table)
        .unwrap()
        .scramble(n, &pages::Scramble::Fill)
        .unwrap();
}

/// Whether the manifest entry holds integer key `id` in doubt (named, or inside a doubt's range, or the whole
/// table).
pub fn doubted(t: &dump::TableEntry, id: i64) -> bool {
    let k = |v: &Option<Vec<serde_json::Value>>| v.as_ref().and_then(|k| k[0].as_i64());
    t.doubts.iter().any(|d| {
        d.keys.iter().any(|key| key[0].as_i64() == Some(id))
            || match &d.range {
                None => true,
                Some(r) => {
                    k(&r.after).is_none_or(|a| id > a)
                        && k(&r.from).is_none_or(|a| id >= a)
                        && k(&r.before).is_none_or(|b| id < b)
                        && k(&r.to).is_none_or(|b| id <= b)
                }
            }
    })
}
