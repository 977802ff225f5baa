//! Forced-recovery dumps: every row SQL can still read, read table by table into SQL files that
//! `mariadb < FILE` loads, with the exact key ranges that were lost (`lost.jsonl`), the rows innops cannot
//! vouch for (doubts), and a manifest (`manifest.json`) of rows, lost ranges, doubts, file hashes and the
//! `innodb_force_recovery` level used.
//!
//! How a table is read (shared/FACTS.md §4): by the key InnoDB clusters it by where SQL can name one (the
//! primary key, else the UNIQUE NOT NULL index InnoDB picks), else through a secondary index whose values
//! proved unique, else group by group through one whose values repeat, else a plain scan ([`KeySource`]).
//! Ascending, streaming, so every row received before an error is kept; after an error, one row at a time
//! from the last key (rows InnoDB's prefetch dropped before the bad page); then descending from the end of the
//! range to find where readable rows resume; rows found that way are read again ascending, because only an
//! ascending scan that ends without error proves that nothing is missing (a descending scan ends silently at
//! level ≥ 1, and `COUNT(*)` is answered from a secondary index). What stays between two readable rows is
//! searched by probes (the keys a readable secondary index lists; else integers by bisection and galloping,
//! strings ranked by the server in their collation), tolerating failures of lookups next to a bad page; what
//! no probe reaches is a lost range, bounded by the nearest readable keys.
//!
//! Every written read is watched for evidence innops does not write itself: the server's error log (a
//! corruption line no SQL error accounts for), a crash, keys out of order, a date no column can hold; and
//! each readable secondary index is read alone against the rows written ([`xcheck`]). What fails one of them
//! is a doubt, and a table with a doubt is never "complete".
//!
//! A healthy table costs one ascending scan per key range (several ranges read in parallel when the leading key
//! column is an integer and `threads` > 1) and one read of each secondary index; the recovery logic runs only
//! after an error.
//!
//! The caller owns the server: [`Connector::reconnect`] is called when the connection is lost (2013: the server
//! crashed on a garbage record), and must bring the server back at the same level and return a session; the
//! read goes on from the last key received.

pub mod independent;
pub mod literal;
pub mod manifest;
pub mod page_def;
mod read;
mod xcheck;
mod xsums;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Conn;
use serde::{Deserialize, Serialize};

pub use literal::Kind;
pub use manifest::{
    verify_load, Doubt, DoubtKind, KeyRange, LoadCheck, Manifest, TableEntry, TableStatus, Verified,
};

use crate::server::Target;
use crate::sql::{qualified, quote_ident};

/// Where sessions to the server being dumped come from.
pub trait Connector: Sync {
    /// A new session.
    fn connect(&self) -> anyhow::Result<Conn>;
    /// The connection was lost while reading (`why` says how, e.g. `2013 Lost connection`): bring the server
    /// back (restart it at the same level if it crashed) and return a new session. Called from any reading
    /// thread, possibly from several at once for one crash.
    fn reconnect(&self, why: &str) -> anyhow::Result<Conn>;
    /// The server's error log, when this machine can read it: a corruption line written while rows were read
    /// makes them doubtful (a BLOB page that failed comes back as a truncated column without any SQL error).
    fn error_log(&self) -> Option<PathBuf> {
        None
    }
}

/// Sessions to a target that restarts by itself (or is restarted by someone else): reconnect waits up to
/// `wait` for it to accept connections again.
pub struct TargetConnector<'a> {
    pub target: &'a Target,
    pub wait: Duration,
    /// The server's error log, when known (see [`Connector::error_log`]).
    pub error_log: Option<PathBuf>,
}

impl Connector for TargetConnector<'_> {
    fn connect(&self) -> anyhow::Result<Conn> {
        self.target.connect()
    }

    fn reconnect(&self, why: &str) -> anyhow::Result<Conn> {
        let start = Instant::now();
        loop {
            match self.target.connect() {
                Ok(c) => return Ok(c),
                Err(e) if start.elapsed() > self.wait => {
                    return Err(e.context(format!(
                        "the connection was lost while dumping ({}) and the server did not come back within {}s",
                        crate::error::went_away_detail(why),
                        self.wait.as_secs()
                    )))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    fn error_log(&self) -> Option<PathBuf> {
        self.error_log.clone()
    }
}

/// A table to dump.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableName {
    pub db: String,
    pub table: String,
}

impl TableName {
    pub fn new(db: &str, table: &str) -> TableName {
        TableName {
            db: db.into(),
            table: table.into(),
        }
    }

    pub fn qualified(&self) -> String {
        qualified(&self.db, &self.table)
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.db, self.table)
    }
}

/// How to dump.
#[derive(Debug, Clone)]
pub struct DumpOptions {
    /// The directory the files go to (created if missing).
    pub out_dir: PathBuf,
    /// Sessions reading one table at once (key ranges of an integer-led primary key).
    pub threads: usize,
    /// Bytes per INSERT statement (about).
    pub chunk_bytes: usize,
    /// The `innodb_force_recovery` level the server runs at; recorded in the manifest.
    pub level: u8,
    /// The statement tag (`/* innops:recover:dump */`).
    pub tag: String,
    /// Probes per unreadable stretch before it is declared lost, times one more for each distinct page the
    /// server has reported damaged in this table (up to 64 times).
    pub probe_budget: usize,
    /// Tables with fewer rows (the server's estimate) are read by one session.
    pub split_min_rows: u64,
    /// Lost connections tolerated per table before its remaining stretches are declared lost.
    pub max_reconnects: u32,
    /// Doubts known before any row is read (transactions the server did not roll back): for one table, or
    /// for every table (`None`) when the evidence does not say which.
    pub table_doubts: Vec<(Option<TableName>, manifest::Doubt)>,
    /// `--pages`: after the SQL reads, rows inside the lost ranges are read from the copy's data files.
    pub pages: Option<PageOptions>,
    /// Why the page pass does not run, when `pages` is `None` and the caller says so (`--pages never`, no copy
    /// to read): every table's manifest entry then says it (`page_pass`). Both `None`: nothing is said.
    pub pages_off: Option<String>,
}

/// Where `--pages` reads from and what it checks the rows against.
#[derive(Debug, Clone)]
pub struct PageOptions {
    /// The data directory of the server the rows are read from (the private server's copy, never the
    /// original's files).
    pub datadir: PathBuf,
    /// Transactions active at the crash that InnoDB did not prove rolled back: a page row last written by one
    /// of them is marked possibly uncommitted.
    pub uncommitted: Vec<u64>,
    /// The lowest id of the transactions active at the crash, when known: a page row written by a
    /// transaction from it on is marked too (a transaction the log named without its id).
    pub lowest_active: Option<u64>,
}

impl DumpOptions {
    pub fn new(out_dir: &Path, level: u8) -> DumpOptions {
        DumpOptions {
            out_dir: out_dir.to_path_buf(),
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            chunk_bytes: 1 << 20,
            level,
            tag: "/* innops:recover:dump */".into(),
            probe_budget: 256,
            max_reconnects: 20,
            split_min_rows: 100_000,
            table_doubts: Vec::new(),
            pages: None,
            pages_off: None,
        }
    }
}

/// A column as the dump reads and writes it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    pub data_type: String,
    pub kind: Kind,
    pub unsigned: bool,
    /// Character set and collation of a string column (the order its keys sort in).
    #[serde(default)]
    pub charset: Option<String>,
    #[serde(default)]
    pub collation: Option<String>,
    /// The column may hold NULL (`IS_NULLABLE`); a file without the field says it may.
    #[serde(default = "nullable_unless_said")]
    pub nullable: bool,
}

fn nullable_unless_said() -> bool {
    true
}

/// An index the dump can read through (B-tree, no column prefix unless said).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub name: String,
    /// Positions of its columns in `TableInfo::columns`, in index order.
    pub cols: Vec<usize>,
    pub unique: bool,
    /// A column of it may be NULL.
    pub nullable: bool,
    /// A column of it is indexed by a prefix only (its values are not the column's).
    pub prefix: bool,
}

/// Which index the dump walks the table by, and what it is to InnoDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeySource {
    /// The primary key.
    Primary,
    /// No primary key: the first UNIQUE index whose columns are all NOT NULL, which InnoDB makes the
    /// clustered index.
    UniqueClustered,
    /// No clustered key SQL can name (InnoDB's hidden row id): a secondary index whose values proved unique
    /// and non-NULL, read through (each row is a lookup into the clustered index).
    Secondary,
    /// No clustered key SQL can name and no index whose values are unique: a secondary index walked group by
    /// group (the rows of one index value together), a group with an unreadable row read up to it.
    Groups,
    /// Nothing to walk by: a plain scan.
    None,
}

/// What the dump needs to know about a table.
#[derive(Debug, Clone)]
pub struct TableInfo {
    pub name: TableName,
    /// Stored columns, in table order (generated columns are left out: the server computes them on load).
    pub columns: Vec<Column>,
    /// Positions in `columns` of the key the dump walks by (see `key_index`), in key order; empty when none.
    pub pk: Vec<usize>,
    /// The index `pk` belongs to (`PRIMARY`, or a UNIQUE index), and what it is.
    pub key_index: Option<String>,
    pub key_source: KeySource,
    /// Every other readable index (B-tree, not FULLTEXT or SPATIAL), in the server's key order.
    pub secondary: Vec<Index>,
}

impl TableInfo {
    /// Read the column and index definitions (information_schema, and `SHOW INDEX` for the server's key order,
    /// which is the order InnoDB picks its clustered index in).
    pub fn read(conn: &mut Conn, tag: &str, name: &TableName) -> anyhow::Result<TableInfo> {
        type ColumnRow = (
            String,
            String,
            String,
            String,
            Option<String>,
            Option<String>,
            String,
        );
        let cols: Vec<ColumnRow> = conn.exec(
            format!(
                "SELECT {tag} COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, EXTRA, CHARACTER_SET_NAME, COLLATION_NAME, \
                 IS_NULLABLE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION"
            ),
            (&name.db, &name.table),
        )?;
        if cols.is_empty() {
            return Err(crate::error::bad_input(format!(
                "table {name} does not exist: check the table list"
            )));
        }
        let mut columns = Vec::new();
        for (col, data_type, column_type, extra, charset, collation, nullable) in cols {
            if extra.to_ascii_uppercase().contains("GENERATED") {
                continue;
            }
            columns.push(Column {
                kind: Kind::of(&data_type),
                unsigned: column_type.to_ascii_lowercase().contains("unsigned"),
                name: col,
                data_type: data_type.to_ascii_lowercase(),
                charset,
                collation,
                nullable: nullable != "NO",
            });
        }
        // A table the server cannot open (ERROR 1877, 1030) lists no index here; the dump's SHOW CREATE TABLE
        // then finds it unrecoverable.
        let rows: Vec<mysql::Row> =
            match conn.query(format!("SHOW {tag} INDEX FROM {}", name.qualified())) {
                Ok(rows) => rows,
                Err(mysql::Error::MySqlError(_)) => Vec::new(),
                Err(e) => return Err(e.into()),
            };
        let mut indexes: Vec<(Index, bool)> = Vec::new();
        for r in rows {
            let get = |c: &str| -> String {
                r.get_opt::<Option<String>, _>(c)
                    .and_then(Result::ok)
                    .flatten()
                    .unwrap_or_default()
            };
            let (key, col, kind) = (get("Key_name"), get("Column_name"), get("Index_type"));
            let usable_type = kind.eq_ignore_ascii_case("BTREE");
            let pos = columns.iter().position(|x| x.name == col);
            let idx = match indexes.last_mut() {
                Some((i, _)) if i.name == key => i,
                _ => {
                    indexes.push((
                        Index {
                            name: key.clone(),
                            cols: Vec::new(),
                            unique: get("Non_unique") == "0",
                            nullable: false,
                            prefix: false,
                        },
                        usable_type,
                    ));
                    &mut indexes.last_mut().unwrap().0
                }
            };
            idx.nullable |= get("Null").eq_ignore_ascii_case("YES");
            idx.prefix |= !get("Sub_part").is_empty();
            match pos {
                Some(p) => idx.cols.push(p),
                // A generated column: the index cannot be walked by stored columns alone.
                None => idx.prefix = true,
            }
        }
        let mut secondary: Vec<Index> = indexes
            .into_iter()
            .filter(|(i, usable)| *usable && !i.cols.is_empty())
            .map(|(i, _)| i)
            .collect();
        let walkable = |i: &Index| i.unique && !i.nullable && !i.prefix;
        let (key_source, key) = if let Some(at) = secondary.iter().position(|i| i.name == "PRIMARY")
        {
            if walkable(&secondary[at]) {
                (KeySource::Primary, Some(secondary.remove(at)))
            } else {
                secondary.remove(at);
                (KeySource::None, None)
            }
        } else if secondary.first().is_some_and(walkable) {
            (KeySource::UniqueClustered, Some(secondary.remove(0)))
        } else {
            (KeySource::None, None)
        };
        Ok(TableInfo {
            name: name.clone(),
            columns,
            pk: key.as_ref().map(|k| k.cols.clone()).unwrap_or_default(),
            key_index: key.map(|k| k.name),
            key_source,
            secondary,
        })
    }

    /// With no clustered key SQL can name, walk by a secondary index whose values are unique and never NULL,
    /// as its own entries show (read through the index alone, which works while clustered pages are damaged).
    /// UNIQUE NOT NULL indexes first, then the others by how many columns they have.
    pub(crate) fn choose_secondary_key(&mut self, conn: &mut Conn, tag: &str) {
        if self.key_source != KeySource::None {
            return;
        }
        let mut order: Vec<usize> = (0..self.secondary.len())
            .filter(|&i| !self.secondary[i].prefix)
            .collect();
        order.sort_by_key(|&i| {
            let x = &self.secondary[i];
            (!x.unique || x.nullable, std::cmp::Reverse(x.cols.len()))
        });
        // The index with the most distinct values, should none be unique: walked group by group.
        let mut groups: Option<(usize, u64)> = None;
        for i in order {
            let idx = &self.secondary[i];
            let cols: Vec<String> = idx
                .cols
                .iter()
                .map(|&p| quote_ident(&self.columns[p].name))
                .collect();
            let nulls = cols
                .iter()
                .map(|c| format!("{c} IS NULL"))
                .collect::<Vec<_>>()
                .join(" OR ");
            let sql = format!(
                "SELECT {tag} COUNT(*), COUNT(DISTINCT {list}), COALESCE(SUM({nulls}), 0) FROM {} FORCE INDEX ({})",
                self.name.qualified(),
                quote_ident(&idx.name),
                list = cols.join(", ")
            );
            if let Ok(Some((n, distinct, null))) = conn.query_first::<(u64, u64, u64), _>(sql) {
                if n == distinct && null == 0 {
                    let idx = self.secondary.remove(i);
                    self.pk = idx.cols;
                    self.key_index = Some(idx.name);
                    self.key_source = KeySource::Secondary;
                    return;
                }
                if null == 0 && groups.is_none_or(|(_, d)| distinct > d) {
                    groups = Some((i, distinct));
                }
            }
        }
        if let Some((i, _)) = groups {
            let idx = self.secondary.remove(i);
            self.pk = idx.cols;
            self.key_index = Some(idx.name);
            self.key_source = KeySource::Groups;
        }
    }

    /// `FROM db.t FORCE INDEX (key)`, or the bare table when there is no key.
    pub(crate) fn read_from(&self) -> String {
        match &self.key_index {
            Some(k) => format!("{} FORCE INDEX ({})", self.name.qualified(), quote_ident(k)),
            None => self.name.qualified(),
        }
    }

    /// `a`, `b`, … (the stored columns).
    pub fn select_list(&self) -> String {
        self.columns
            .iter()
            .map(|c| quote_ident(&c.name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn first_key_is_integer(&self) -> bool {
        self.pk.first().is_some_and(|&p| self.is_integer(p))
    }

    /// Whether column `p` is an integer type.
    pub(crate) fn is_integer(&self, p: usize) -> bool {
        matches!(
            self.columns[p].data_type.as_str(),
            "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint"
        )
    }
}

/// Base tables of the given databases (all but the system ones when `dbs` is empty), sorted.
pub fn list_tables(conn: &mut Conn, tag: &str, dbs: &[String]) -> anyhow::Result<Vec<TableName>> {
    let rows: Vec<(String, String)> = conn.query(format!(
        "SELECT {tag} TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' \
         AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') \
         ORDER BY TABLE_SCHEMA, TABLE_NAME"
    ))?;
    Ok(rows
        .into_iter()
        .filter(|(db, _)| dbs.is_empty() || dbs.contains(db))
        .map(|(db, table)| TableName { db, table })
        .collect())
}

/// A file name for a table's dump: letters, digits and `_` kept, every other byte as `@xx`.
pub fn file_name(t: &TableName) -> String {
    let enc = |s: &str| {
        let mut out = String::new();
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || b == b'_' {
                out.push(b as char);
            } else {
                out.push_str(&format!("@{b:02x}"));
            }
        }
        out
    };
    format!("{}.{}.sql", enc(&t.db), enc(&t.table))
}

/// Session settings of every reading session: text exactly as the dump files load it back.
pub(crate) fn prepare_session(conn: &mut Conn, tag: &str) -> anyhow::Result<()> {
    conn.query_drop(format!(
        "SET {tag} SESSION sql_mode = '', time_zone = '+00:00', net_write_timeout = 3600, \
         net_read_timeout = 3600, character_set_client = utf8mb4, character_set_connection = utf8mb4, \
         character_set_results = utf8mb4, collation_connection = utf8mb4_general_ci"
    ))?;
    Ok(())
}

/// Dump `tables` into `opts.out_dir`: one SQL file per readable table, `lost.jsonl`, `manifest.json`.
/// A table that cannot be opened (ERROR 1877) or read at all is reported in the manifest and the others go on;
/// the error returned is for the dump as a whole (the output directory, a lost server that does not come
/// back, Ctrl-C).
pub fn dump(
    connector: &dyn Connector,
    tables: &[TableName],
    opts: &DumpOptions,
    abort: &AtomicBool,
) -> anyhow::Result<Manifest> {
    dump_each(tables, opts, None, |t| {
        read::dump_table(connector, t, opts, abort)
    })
}

/// Dump `tables` from their files alone, with no server (`opts.pages` names the copy's data directory; `why`
/// says why no server runs, into the manifest): each table's definition from its `.frm`, its rows from its
/// `.ibd`'s leaf pages.
pub fn dump_from_files(
    tables: &[TableName],
    opts: &DumpOptions,
    abort: &AtomicBool,
    why: &str,
) -> anyhow::Result<Manifest> {
    dump_each(tables, opts, Some(why), |t| {
        read::dump_table_from_files(t, opts, abort)
    })
}

/// The base tables of a data directory as its files name them (`db/t.frm`, views and the system schemas left
/// out), for a dump with no server to list them.
pub fn list_from_files(datadir: &Path) -> std::io::Result<Vec<TableName>> {
    read::list_from_files(datadir)
}

fn dump_each(
    tables: &[TableName],
    opts: &DumpOptions,
    files_only: Option<&str>,
    mut one: impl FnMut(&TableName) -> anyhow::Result<(TableEntry, Vec<String>)>,
) -> anyhow::Result<Manifest> {
    use anyhow::Context;
    create_private_dir(&opts.out_dir)
        .with_context(|| format!("creating {}", opts.out_dir.display()))?;
    let mut entries = Vec::new();
    let mut lost_lines = Vec::new();
    for t in tables {
        let (entry, lines) = one(t)?;
        // The directory (0700) already keeps the file from other users; the file's own mode says so too.
        let sql = opts.out_dir.join(file_name(t));
        if sql.exists() {
            make_private(&sql).with_context(|| format!("restricting {}", sql.display()))?;
        }
        entries.push(entry);
        lost_lines.extend(lines);
    }
    manifest::finish(
        &opts.out_dir,
        (opts.level, files_only),
        entries,
        &lost_lines,
    )
}

/// A dump holds production rows: its directory is 0700 (made so, or made so again when it exists: `--out`
/// may name an empty directory), so no other local user can read a file in it.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// A file of the dump, created (or truncated) readable and writable by its owner only (0600), whatever the
/// umask and whatever mode an earlier file of that name had.
pub fn create_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    make_private(path)?;
    Ok(f)
}

fn make_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn dump_files_and_their_directory_are_the_owners_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("out/deeper");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        // An empty directory the user made is made private too.
        let given = tmp.path().join("given");
        std::fs::create_dir(&given).unwrap();
        std::fs::set_permissions(&given, std::fs::Permissions::from_mode(0o755)).unwrap();
        create_private_dir(&given).unwrap();
        assert_eq!(mode(&given), 0o700);
        let f = dir.join("db.t.sql");
        create_private(&f).unwrap();
        assert_eq!(mode(&f), 0o600);
        // A file left with a wider mode is truncated and narrowed.
        std::fs::write(&f, b"old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        use std::io::Write;
        create_private(&f).unwrap().write_all(b"new").unwrap();
        assert_eq!(
            (mode(&f), std::fs::read(&f).unwrap()),
            (0o600, b"new".to_vec())
        );
    }
}
