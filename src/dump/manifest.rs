//! `manifest.json` and `lost.jsonl`, and loading a dump back into a server to prove it (`--verify-load`).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::Context;
use mysql::prelude::Queryable;
use mysql::Row;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::independent::{IndexAgreement, LostCount};
use super::read::push_tuple;
use super::{prepare_session, TableInfo, TableName};
use crate::server::Target;

pub const MANIFEST: &str = "manifest.json";
pub const LOST: &str = "lost.jsonl";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TableStatus {
    /// Every row: ascending reads covered the whole key space without error.
    Complete,
    /// Every readable row; `lost` names the key ranges that could not be read.
    Partial,
    /// Recovered with doubts: some rows in the file may not be what the table held (`doubts` names the key
    /// ranges or rows and the evidence: a server crash, a corruption line of the server's error log during the
    /// read, an uncommitted transaction, a row out of key order, a secondary index that disagrees). Never
    /// "complete", whatever else holds.
    Doubtful,
    /// No primary key: dumped by a plain scan as far as it went (`note` says whether it ended cleanly).
    NoPrimaryKey,
    /// The table cannot be opened (ERROR 1877): nothing is recoverable through SQL.
    Unrecoverable,
}

/// A key range no read could reach; rows strictly between the bounds are lost. Bounds are values of the key
/// the table was read by (`TableEntry::key_index`: the nearest readable rows) or, at a cut between parallel
/// reads, a leading-column value; an absent bound is the start or end of the table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LostRange {
    /// How many entries each readable secondary index listed inside the range when it was dumped: the
    /// damaged server's own count of the rows lost here (`--verify-load` reports it per range).
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub listed: BTreeMap<String, u64>,
    /// Lower bound, exclusive.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub after: Option<Vec<serde_json::Value>>,
    /// Lower bound, inclusive (a cut between parallel reads).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub from: Option<Vec<serde_json::Value>>,
    /// Upper bound, exclusive.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub before: Option<Vec<serde_json::Value>>,
    /// Upper bound, inclusive: with `from` equal to it, the rows of one value of an index whose values repeat
    /// (a table walked group by group), of which `rows` were not read.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub to: Option<Vec<serde_json::Value>>,
    /// Rows lost here as the index walked by counts them, where it can (a group of repeated values).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rows: Option<u64>,
    /// Records of the copy's data file inside this range that `--pages` read but could not prove rows (a
    /// range with `from` = `to` is one such record, whose key validated).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub records: Vec<Unproven>,
}

/// A record `--pages` found inside a lost range and could not prove a row: where it is and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unproven {
    pub page: u32,
    /// Its key, when the key's bytes validate.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub key: Option<Vec<serde_json::Value>>,
    pub reason: String,
}

/// What `--pages` read from the copy's data file for one table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PagesRead {
    /// Rows the SQL reads wrote, and rows read from pages (together `rows` of the table).
    pub sql_rows: u64,
    pub page_rows: u64,
    /// Each leaf page rows were read from, or that held unproven records inside a lost range.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pages: Vec<PageRows>,
    /// The one sentence saying why the table's pages were not read (the table keeps the SQL result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Pages not read, or read only in part, one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The clustered index's leaf pages on the chain, and how many of them were parsed whole (the others
    /// were read for their keys alone: no key inside a lost range, nothing wrong with them).
    #[serde(default)]
    pub leaves: u64,
    #[serde(default)]
    pub parsed_whole: u64,
    /// How long the page pass took (from asking the definition to the ranges cut), in seconds.
    #[serde(default)]
    pub seconds: f64,
}

/// One leaf page `--pages` read rows from ("read from page N").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageRows {
    pub page: u32,
    /// Rows written from this page (inside the lost ranges).
    pub rows: u64,
    /// Records inside the lost ranges that could not be proven rows.
    pub unproven: u64,
    /// Whether the page's checksum passes; rows from a page whose checksum fails (or that has `problems`)
    /// are doubts of kind `page_checksum` unless the secondary indexes confirm every column of them.
    pub checksum_ok: bool,
    /// What the parser found wrong with the page as a whole (a broken record list, a record count that
    /// differs): bytes of it are not what InnoDB wrote, whatever its checksum says.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// A key range of a doubt: bounds as in [`LostRange`], plus an inclusive upper bound; all absent is the whole
/// table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeyRange {
    /// Lower bound, exclusive.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub after: Option<Vec<serde_json::Value>>,
    /// Lower bound, inclusive.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub from: Option<Vec<serde_json::Value>>,
    /// Upper bound, exclusive.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub before: Option<Vec<serde_json::Value>>,
    /// Upper bound, inclusive.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub to: Option<Vec<serde_json::Value>>,
}

/// What made innops doubt rows it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DoubtKind {
    /// The server crashed (the session was lost) while this range was being read.
    Crash,
    /// The server's error log reported corruption (a page it could not read, a record it skipped) while this
    /// range was being read: a row may have come back truncated or incomplete without any SQL error.
    ErrorLog,
    /// A transaction was active when the server stopped and was not rolled back (forced recovery ≥ 3, or a
    /// rollback that gave up): rows it changed may hold uncommitted values.
    Uncommitted,
    /// Rows came back out of the primary key's order: the page holding them is not what InnoDB wrote.
    KeyOrder,
    /// A value its column cannot hold (a time of day past 23:59:59, a month past 12): the record's bytes are
    /// not what InnoDB wrote.
    ImpossibleValue,
    /// A readable secondary index disagrees with the clustered row (a value, or a key it lists that no read
    /// returned, outside every lost range).
    SecondaryIndex,
    /// Rows `--pages` read from a leaf page whose checksum fails or whose record list is broken: each record
    /// parsed whole, but a value
    /// rewritten in place with another valid one cannot be told, and no readable secondary index covers every
    /// column to confirm them.
    PageChecksum,
}

/// What a readable secondary index of the damaged server held outside the lost ranges, read alone while the
/// table was dumped (see `xcheck`): evidence innops did not write, that `--verify-load` compares the loaded
/// rows with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexEvidence {
    pub index: String,
    /// Entries the index listed outside every lost range.
    pub entries: u64,
    /// Wrapping sum of their entry hashes (each entry: the index's columns and the key, hashed as `xcheck`
    /// does), 16 hex digits.
    pub sum: String,
    /// The dump's own cross-check of this index against the rows it wrote disagreed: the table's doubts of
    /// kind `secondary_index` say how.
    #[serde(default)]
    pub doubted: bool,
    /// How the index was compared with the rows written.
    #[serde(default)]
    pub compared: Compared,
}

/// How a secondary index was compared with the rows written (`xcheck`, `xsums`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compared {
    /// The server's count and CRC32/CRC32C sums of the index's entries equal those of the rows written: one
    /// statement, one row back.
    ServerSums,
    /// The index read row by row against the rows written (the sums differed or could not be made): this is
    /// what names rows that differ.
    #[default]
    RowByRow,
}

/// Rows innops wrote but cannot vouch for, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Doubt {
    pub kind: DoubtKind,
    /// One sentence for a person: the evidence.
    pub why: String,
    /// The key range the doubt covers; `None`: the whole table.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub range: Option<KeyRange>,
    /// Primary keys of the rows in doubt, where the evidence names rows.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub keys: Vec<Vec<serde_json::Value>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TableEntry {
    pub db: String,
    pub table: String,
    pub status: TableStatus,
    /// The SQL file, relative to the dump directory; none when nothing was recoverable.
    pub file: Option<String>,
    pub sha256: Option<String>,
    pub rows: u64,
    /// Order-independent hash of the rows as written (xxh3-128 of each row's SQL tuple, summed).
    pub content_hash: Option<String>,
    pub columns: Vec<String>,
    pub primary_key: Vec<String>,
    /// The index the rows were read by (`PRIMARY`, the UNIQUE index InnoDB clusters by, or a secondary index
    /// whose values proved unique); `primary_key` names its columns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_index: Option<String>,
    pub lost: Vec<LostRange>,
    /// Rows in the file innops cannot vouch for (see [`TableStatus::Doubtful`]).
    #[serde(default)]
    pub doubts: Vec<Doubt>,
    /// Checks that could not run for this table, one sentence each (the server's error log not readable
    /// here, a secondary index that could not be read to its end): the verdict rests on less evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unchecked: Vec<String>,
    /// What each readable secondary index held outside the lost ranges (the per-range counts are on each
    /// [`LostRange`]); empty when no index could be checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indexes: Vec<IndexEvidence>,
    /// Sessions lost (server crashes) while reading this table.
    pub reconnects: u32,
    /// One sentence for a person: why the table is not complete.
    pub note: Option<String>,
    /// What `--pages` read from the copy's data file (absent without `--pages`, or when nothing was lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pages: Option<PagesRead>,
    /// Whether the page pass read this table's data file, and why or why not (absent when the caller did not
    /// say whether it may run: a library dump without page options).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_pass: Option<PagePass>,
}

/// The page pass's decision for one table: it ran, or why not, in one sentence a person reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PagePass {
    /// Rows were sought in the table's data file (the pass ran to its end; `pages` says what it found).
    pub ran: bool,
    pub why: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub format: u32,
    /// `innodb_force_recovery` of the server the rows were read from (the caller's figure).
    pub level: u8,
    /// Why no server read the tables, when none did: every table was read from its files alone (its `.frm`
    /// and `.ibd`), and `level` is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_only: Option<String>,
    pub created: String,
    pub tables: Vec<TableEntry>,
    /// sha256 of every file of the dump but the manifest itself.
    pub files: BTreeMap<String, String>,
}

impl Manifest {
    pub fn read(dir: &Path) -> anyhow::Result<Manifest> {
        let p = dir.join(MANIFEST);
        let text =
            std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a dump manifest", p.display()))
    }

    pub fn table(&self, db: &str, table: &str) -> Option<&TableEntry> {
        self.tables.iter().find(|t| t.db == db && t.table == table)
    }
}

/// Write lost.jsonl and manifest.json.
pub(crate) fn finish(
    dir: &Path,
    (level, files_only): (u8, Option<&str>),
    tables: Vec<TableEntry>,
    lost_lines: &[String],
) -> anyhow::Result<Manifest> {
    let mut lost = lost_lines.join("\n");
    if !lost.is_empty() {
        lost.push('\n');
    }
    let lost_path = dir.join(LOST);
    write_private(&lost_path, lost.as_bytes())?;
    let mut files = BTreeMap::new();
    files.insert(
        LOST.to_string(),
        format!("{:x}", Sha256::digest(lost.as_bytes())),
    );
    for t in &tables {
        if let (Some(f), Some(h)) = (&t.file, &t.sha256) {
            files.insert(f.clone(), h.clone());
        }
    }
    let m = Manifest {
        format: 1,
        level,
        files_only: files_only.map(str::to_string),
        created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        tables,
        files,
    };
    let p = dir.join(MANIFEST);
    write_private(&p, serde_json::to_string_pretty(&m)?.as_bytes())?;
    Ok(m)
}

/// Write a file of the dump, 0600 (it names production keys).
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    super::create_private(path)
        .and_then(|mut f| f.write_all(bytes))
        .with_context(|| format!("writing {}", path.display()))
}

/// sha256 of a file, streamed.
pub fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let mut f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(format!("{:x}", h.finalize()))
}

/// What loading one table showed: against the manifest (rows, content hash: that proves the file), and against
/// the damaged server's own secondary indexes (that proves the data, where an index was readable).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadCheck {
    pub db: String,
    pub table: String,
    pub rows_expected: u64,
    pub rows_loaded: u64,
    /// The loaded rows' content hash is the manifest's, or differs only as its doubts say.
    pub hash_matches: bool,
    /// The content differs, and the manifest names rows holding values their columns cannot hold, which do
    /// not load back as they were dumped.
    #[serde(default)]
    pub hash_differs_as_doubted: bool,
    /// The loaded rows against each index the damaged server could read.
    #[serde(default)]
    pub indexes: Vec<IndexAgreement>,
    /// Each lost range: the loaded rows in it, and what the indexes listed there.
    #[serde(default)]
    pub lost: Vec<LostCount>,
    /// Why the rows could only be checked against the manifest (no index evidence was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
}

impl LoadCheck {
    pub fn ok(&self) -> bool {
        self.rows_expected == self.rows_loaded
            && self.hash_matches
            && self.indexes.iter().all(IndexAgreement::ok)
            && self.lost.iter().all(LostCount::ok)
    }

    /// One sentence per part that failed, naming the table.
    pub fn failures(&self) -> Vec<String> {
        let name = TableName::new(&self.db, &self.table);
        let mut out = Vec::new();
        if self.rows_expected != self.rows_loaded {
            out.push(format!(
                "{name}: {} rows loaded, the manifest says {}",
                self.rows_loaded, self.rows_expected
            ));
        }
        if !self.hash_matches {
            out.push(format!(
                "{name}: the loaded rows' content hash is not the manifest's"
            ));
        }
        let index = self.indexes.iter().filter(|i| !i.ok()).map(|i| &i.verdict);
        let lost = self.lost.iter().filter(|l| !l.ok()).map(|l| &l.verdict);
        out.extend(index.chain(lost).map(|v| format!("{name}: {v}")));
        out
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verified {
    pub tables: Vec<LoadCheck>,
}

impl Verified {
    pub fn ok(&self) -> bool {
        self.tables.iter().all(LoadCheck::ok)
    }

    /// Every failure of every table (see [`LoadCheck::failures`]).
    pub fn failures(&self) -> Vec<String> {
        self.tables.iter().flat_map(LoadCheck::failures).collect()
    }
}

/// The mysql-compatible client on PATH.
fn client_binary() -> anyhow::Result<std::path::PathBuf> {
    let dirs: Vec<std::path::PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for name in ["mariadb", "mysql"] {
        for d in &dirs {
            if d.join(name).is_file() {
                return Ok(d.join(name));
            }
        }
    }
    Err(crate::error::bad_input(
        "no mariadb or mysql client was found on PATH: install one (apt-get install -y mariadb-client) to load the dump",
    ))
}

/// Load every file of the dump in `dir` into `target` with the `mariadb` client (as `mariadb < FILE` does),
/// after checking each file's sha256 against the manifest, then count each table's rows and hash its content
/// the way the dump did, and compare every loaded row with what the damaged server's readable secondary
/// indexes held (see [`super::independent`]). The target must not hold the dumped tables yet.
pub fn verify_load(dir: &Path, target: &Target, tag: &str) -> anyhow::Result<Verified> {
    let m = Manifest::read(dir)?;
    for (f, h) in &m.files {
        let found = sha256_file(&dir.join(f))?;
        if &found != h {
            return Err(crate::error::post_check(format!(
                "{} has sha256 {found}, not the manifest's {h}: the dump was changed or damaged after it was written",
                dir.join(f).display()
            )));
        }
    }
    let client = client_binary()?;
    let opts = &target.opts;
    let mut args = vec!["--no-defaults".to_string(), "--batch".to_string()];
    if let Some(s) = opts.get_socket() {
        args.push(format!("--socket={s}"));
    } else {
        args.push(format!("--host={}", opts.get_ip_or_hostname()));
        args.push(format!("--port={}", opts.get_tcp_port()));
        args.push("--protocol=TCP".into());
    }
    if let Some(u) = opts.get_user() {
        args.push(format!("--user={u}"));
    }
    let mut checks = Vec::new();
    for t in &m.tables {
        let Some(file) = &t.file else { continue };
        let path = dir.join(file);
        let input =
            std::fs::File::open(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut cmd = Command::new(&client);
        cmd.args(&args)
            .stdin(input)
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        match opts.get_pass() {
            Some(p) => cmd.env("MYSQL_PWD", p),
            None => cmd.env_remove("MYSQL_PWD"),
        };
        let out = cmd
            .output()
            .with_context(|| format!("running {}", client.display()))?;
        if !out.status.success() {
            return Err(crate::error::post_check(format!(
                "loading {} into {} failed ({}): {}",
                path.display(),
                target.label,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let mut conn = target.connect()?;
        prepare_session(&mut conn, tag)?;
        let name = TableName::new(&t.db, &t.table);
        let info = TableInfo::read(&mut conn, tag, &name)?;
        let names: Vec<&str> = info.columns.iter().map(|c| c.name.as_str()).collect();
        if names != t.columns.iter().map(String::as_str).collect::<Vec<_>>() {
            return Err(crate::error::post_check(format!(
                "the loaded table {name} has columns {names:?}, not the dumped {:?}: the file's CREATE TABLE does not match its rows",
                t.columns
            )));
        }
        let kinds: Vec<_> = info.columns.iter().map(|c| c.kind).collect();
        let sql = format!(
            "SELECT {tag} {} FROM {}",
            info.select_list(),
            info.read_from()
        );
        let mut rows = 0u64;
        let mut hash = 0u128;
        let mut buf = Vec::new();
        let named: Vec<&str> = t.indexes.iter().map(|e| e.index.as_str()).collect();
        let mut tally = super::xcheck::Tally::new(&info, &named);
        for r in conn.query_iter(sql)? {
            let r: Row = r?;
            tally.add(&r);
            buf.clear();
            push_tuple(&mut buf, &kinds, &r);
            hash = hash.wrapping_add(xxhash_rust::xxh3::xxh3_128(&buf));
            rows += 1;
        }
        let (indexes, lost) = super::independent::check(&mut conn, tag, &info, t, &tally)?;
        let exact = t.content_hash.as_deref() == Some(format!("{hash:032x}").as_str());
        let impossible = t
            .doubts
            .iter()
            .any(|d| d.kind == DoubtKind::ImpossibleValue);
        checks.push(LoadCheck {
            db: t.db.clone(),
            table: t.table.clone(),
            rows_expected: t.rows,
            rows_loaded: rows,
            // A value its column cannot hold does not load back as it was dumped (the server stores its
            // nearest value or zero): the content then differs where the manifest's doubts say.
            hash_matches: exact || impossible,
            hash_differs_as_doubted: !exact && impossible,
            indexes,
            lost,
            unchecked: t.indexes.is_empty().then(|| {
                "the dump recorded no readable secondary index of the damaged server for this table (none, or the table was not read by its primary or clustered UNIQUE key): its rows are checked against innops's own manifest only".to_string()
            }),
        });
    }
    Ok(Verified { tables: checks })
}
