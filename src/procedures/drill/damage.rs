//! Damaging pages on purpose, for the drill, the tests and the benchmark of `innops recover`: reading a table's
//! `.ibd` file as InnoDB lays it out (shared/FACTS.md §4) — the pages of each B-tree level of an index in key
//! order (the leaves, and the non-leaf pages above them), the chains of externally stored BLOB pages — and three
//! kinds of damage: 512 bytes of 0xA5 written into the body of a page (its checksum no longer matches: InnoDB
//! refuses the page), and checksum-valid scrambling of a leaf page's records (InnoDB reads the page as good and
//! returns what the records now say: garbage, a key that never existed, rows out of key order).
//!
//! Only ever a sandbox's own data directory, and only with its server stopped after a slow shutdown: a
//! [`Stopped`] is made only by [`Stopped::slow`] (which shuts the sandbox down with `innodb_fast_shutdown = 0`)
//! or [`Stopped::already`] (a sandbox found down), and every write checks again that the file is a regular file
//! inside that sandbox's data directory and that its server is not running. Every write stays inside the one
//! page it names.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mysql::prelude::Queryable;

use crate::error::refused;
use crate::pages::page::{be16, be32, stored_crc, INFIMUM, NO_PAGE, SUPREMUM};
pub use crate::pages::page::{
    crc32c, leaves_in, level_in, levels_in, record_origins, IndexPage, PAGE,
};
use crate::server::sandbox::Sandbox;

/// Where the damage goes inside a page, and how much: inside the body (bytes 38..16375), FACTS §4.
const DAMAGE_AT: usize = 2000;
const DAMAGE_LEN: usize = 512;

/// Which pages of the level below each page of `upper` points to: a non-leaf page holds one node pointer per
/// child, in key order, so the children of the level below (in key order) split by the upper pages' record
/// counts. This is how a test finds the leaves (and so the keys) under a non-leaf page without parsing its
/// node pointers.
pub fn children(upper: &[IndexPage], lower: &[IndexPage]) -> Result<Vec<Vec<IndexPage>>, String> {
    split_by_leaf(upper, lower)
}

pub use crate::pages::blob::BLOB_PAGE;
use crate::pages::blob::{DATA as BLOB_DATA, NEXT as BLOB_NEXT, PART_LEN as BLOB_PART_LEN};

/// The pages holding one externally stored column value, first to last, with the value's length and its
/// first bytes (for a test to tell whose value it is).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BlobChain {
    pub pages: Vec<u32>,
    pub len: u64,
    pub head: Vec<u8>,
}

/// The chains of BLOB pages (`FIL_PAGE_TYPE_BLOB`) of a file, in the file order of their first pages: a chain
/// starts at a BLOB page no other BLOB page names as its next, and follows `BTR_BLOB_HDR_NEXT_PAGE_NO`.
pub fn blob_chains_in(data: &[u8]) -> Result<Vec<BlobChain>, String> {
    let pages = data.len() / PAGE;
    let page = |n: usize| &data[n * PAGE..(n + 1) * PAGE];
    let blobs: Vec<u32> = (0..pages)
        .filter(|&n| be16(page(n), 24) == BLOB_PAGE)
        .map(|n| n as u32)
        .collect();
    let named: std::collections::HashSet<u32> = blobs
        .iter()
        .map(|&n| be32(page(n as usize), BLOB_NEXT))
        .collect();
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for &first in blobs.iter().filter(|n| !named.contains(n)) {
        let mut chain = BlobChain {
            pages: Vec::new(),
            len: 0,
            head: Vec::new(),
        };
        let mut at = first;
        loop {
            if at as usize >= pages || be16(page(at as usize), 24) != BLOB_PAGE {
                return Err(format!(
                    "the BLOB chain from page {first} leads to page {at}, which is no BLOB page"
                ));
            }
            if !seen.insert(at) {
                return Err(format!(
                    "the BLOB chain from page {first} meets page {at} twice"
                ));
            }
            let p = page(at as usize);
            let part = be32(p, BLOB_PART_LEN) as usize;
            if part > PAGE - 8 - BLOB_DATA {
                return Err(format!("BLOB page {at} says it holds {part} bytes"));
            }
            if chain.head.len() < 64 {
                let take = part.min(64 - chain.head.len());
                chain
                    .head
                    .extend_from_slice(&p[BLOB_DATA..BLOB_DATA + take]);
            }
            chain.pages.push(at);
            chain.len += part as u64;
            at = be32(p, BLOB_NEXT);
            if at == NO_PAGE {
                break;
            }
        }
        out.push(chain);
    }
    if seen.len() != blobs.len() {
        return Err(format!(
            "{} BLOB pages, {} on chains from a first page (a chain loops)",
            blobs.len(),
            seen.len()
        ));
    }
    Ok(out)
}

/// How [`TableFile::scramble`] rewrites a leaf page so that its checksum still holds: InnoDB reads the page as
/// good and serves whatever its records now say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scramble {
    /// 512 bytes of 0xA5 in the middle of the page, over the records there (FACTS §4: InnoDB's record code
    /// asserts on them and the server crashes, or returns the garbage as column values).
    Fill,
    /// The first bytes of the `nth` user record (0-based, in the page's key order) replaced by `key`, the
    /// leading key column as InnoDB stores it (see [`int_key`]): a key that never existed appears in place
    /// of a real one, out of key order when it does not fit between its neighbours.
    Key { nth: usize, key: Vec<u8> },
    /// The `nth` and `nth + 1` user records swapped in the page's record list (each record intact, the two rows
    /// come out in the wrong key order). Neither record may own a page-directory slot, so lookups still land
    /// in the right group; the first such pair at or after `nth` is taken.
    Swap { nth: usize },
    /// `len` bytes starting `from` bytes after the origin exchanged between the `nth` and `nth + 1` user
    /// records: with `from` past the key (and the transaction id and roll pointer), each row keeps its key and
    /// place but carries its neighbour's columns, which only a secondary index can tell. The two records must
    /// have the same layout (equal lengths of their variable-length columns).
    Exchange { nth: usize, from: usize, len: usize },
}

/// A signed integer key column (`TINYINT` … `BIGINT`, `width` bytes) as InnoDB stores it: big-endian with the
/// sign bit flipped, so that unsigned byte order is numeric order.
pub fn int_key(v: i64, width: usize) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let mut out = bytes[8 - width..].to_vec();
    out[0] ^= 0x80;
    out
}

fn set_next(p: &mut [u8], from: usize, to: usize) {
    let off = (to as i64 - from as i64) as i16;
    p[from - 2..from].copy_from_slice(&off.to_be_bytes());
}

/// Apply `how` to one page and give it a valid `full_crc32` checksum again; the index (in the page's key order)
/// of the first record changed (`None` for [`Scramble::Fill`], which does not aim at a record). Refused
/// (nothing changed) when the page's checksum was not a `full_crc32` one to begin with, when it is no leaf page
/// of COMPACT records, or when the record asked for is not there.
pub fn scramble_page(p: &mut [u8], how: &Scramble) -> Result<Option<usize>, String> {
    assert_eq!(p.len(), PAGE);
    if stored_crc(p) != crc32c(&p[..PAGE - 4]) {
        return Err(
            "the page's checksum is not full_crc32 (or the page is damaged already)".into(),
        );
    }
    if be16(p, 64) != 0 {
        return Err("not a leaf page".into());
    }
    let recs = record_origins(p)?;
    let mut q = p.to_vec();
    let first = match how {
        Scramble::Fill => {
            q[DAMAGE_AT..DAMAGE_AT + DAMAGE_LEN].fill(0xA5);
            None
        }
        Scramble::Key { nth, key } => {
            let &at = recs.get(*nth).ok_or(format!(
                "the page holds {} records, no record {nth}",
                recs.len()
            ))?;
            if at + key.len() > PAGE - 8 {
                return Err("the key runs past the page's records".into());
            }
            q[at..at + key.len()].copy_from_slice(key);
            Some(*nth)
        }
        Scramble::Swap { nth } => {
            // n_owned: the low 4 bits of the byte 5 before a record's origin.
            let owns = |at: usize| p[at - 5] & 0x0F != 0;
            let i = (*nth..recs.len().saturating_sub(1))
                .find(|&i| !owns(recs[i]) && !owns(recs[i + 1]))
                .ok_or(format!(
                    "no two adjacent records from record {nth} on own no directory slot"
                ))?;
            let (a, b) = (recs[i], recs[i + 1]);
            let prev = if i == 0 { INFIMUM } else { recs[i - 1] };
            let next = recs.get(i + 2).copied().unwrap_or(SUPREMUM);
            set_next(&mut q, prev, b);
            set_next(&mut q, b, a);
            set_next(&mut q, a, next);
            Some(i)
        }
        Scramble::Exchange { nth, from, len } => {
            let (Some(&a), Some(&b)) = (recs.get(*nth), recs.get(nth + 1)) else {
                return Err(format!(
                    "the page holds {} records, no records {nth} and {}",
                    recs.len(),
                    nth + 1
                ));
            };
            let (lo, hi) = (a.min(b), a.max(b));
            if lo + from + len > hi - 5 || hi + from + len > PAGE - 8 {
                return Err(format!(
                    "{len} bytes from {from} run past record {nth}'s data"
                ));
            }
            let (x, y) = (a + from, b + from);
            let tmp = q[x..x + len].to_vec();
            q.copy_within(y..y + len, x);
            q[y..y + len].copy_from_slice(&tmp);
            Some(*nth)
        }
    };
    let sum = crc32c(&q[..PAGE - 4]);
    q[PAGE - 4..].copy_from_slice(&sum.to_be_bytes());
    p.copy_from_slice(&q);
    Ok(first)
}

/// Rows in key order split by the leaf they are on (`keys` read in key order before the damage; the leaves'
/// record counts must add up to them, which holds after a slow shutdown: no delete-marked records are left).
pub fn split_by_leaf<T: Clone>(leaves: &[IndexPage], keys: &[T]) -> Result<Vec<Vec<T>>, String> {
    let total: usize = leaves.iter().map(|l| l.n_recs).sum();
    if total != keys.len() {
        return Err(format!(
            "the leaves hold {total} records and the table {} rows: stop the server with a slow shutdown first",
            keys.len()
        ));
    }
    let mut at = 0;
    Ok(leaves
        .iter()
        .map(|l| {
            let part = keys[at..at + l.n_recs].to_vec();
            at += l.n_recs;
            part
        })
        .collect())
}

/// Which leaves of a chain of `n` the drill and the benchmark damage: one in the middle, an adjacent pair at
/// three quarters, one next to the last (indexes into the chain, ascending, three separate lost ranges). Needs
/// `n >= 20`.
pub fn spread(n: usize) -> Option<Vec<usize>> {
    (n >= 20).then(|| vec![n / 2, n * 3 / 4, n * 3 / 4 + 1, n - 2])
}

/// What a perfect recovery gets back from a table with an integer primary key whose leaves `bad` (indexes
/// into the chain) are damaged: every row not on them (the limit), and per run of adjacent bad leaves the lost
/// range, bounded by the last key before it and the first key after it (exclusive; `None`: the table's end).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Expected {
    pub rows_before: u64,
    pub on_damaged: u64,
    pub limit: u64,
    pub lost: Vec<(Option<u64>, Option<u64>)>,
}

/// [`Expected`] from the keys in key order read before the damage and the leaf chain.
pub fn expected(keys: &[u64], leaves: &[IndexPage], bad: &[usize]) -> Result<Expected, String> {
    let per_leaf = split_by_leaf(leaves, keys)?;
    let is_bad = |i: usize| bad.contains(&i);
    let on_damaged: usize = bad
        .iter()
        .map(|&i| per_leaf.get(i).map_or(0, Vec::len))
        .sum();
    let mut lost = Vec::new();
    let mut i = 0;
    while i < per_leaf.len() {
        if !is_bad(i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < per_leaf.len() && is_bad(i) {
            i += 1;
        }
        let after = per_leaf[..start]
            .iter()
            .rev()
            .find_map(|l| l.last().copied());
        let before = per_leaf[i..].iter().find_map(|l| l.first().copied());
        lost.push((after, before));
    }
    Ok(Expected {
        rows_before: keys.len() as u64,
        on_damaged: on_damaged as u64,
        limit: (keys.len() - on_damaged) as u64,
        lost,
    })
}

/// A sandbox whose server innops has seen stopped (after a slow shutdown, or found down).
pub struct Stopped<'a> {
    sb: &'a Sandbox,
}

/// A table's `.ibd` file inside a stopped sandbox's data directory.
pub struct TableFile<'a> {
    sb: &'a Sandbox,
    pub path: PathBuf,
}

/// The sandbox must be one on disk (its `sandbox.json` says the same) and its data directory inside it.
fn check_sandbox(sb: &Sandbox) -> anyhow::Result<()> {
    let root = sb.dir.parent().unwrap_or(Path::new("/"));
    let on_disk = Sandbox::open(root, &sb.name).ok();
    let inside = match (sb.dir.canonicalize(), sb.datadir.canonicalize()) {
        (Ok(d), Ok(data)) => data.starts_with(&d) && data != d,
        _ => false,
    };
    if on_disk.as_ref() != Some(sb) || !inside {
        return Err(refused(format!(
            "{} is not the data directory of a sandbox innops made: innops damages pages only in its own sandboxes",
            sb.datadir.display()
        )));
    }
    Ok(())
}

fn check_down(sb: &Sandbox) -> anyhow::Result<()> {
    if let Some(pid) = sb.running_pid() {
        return Err(refused(format!(
            "sandbox '{}' runs (pid {pid}): innops damages pages only with the server stopped after a slow shutdown",
            sb.name
        )));
    }
    Ok(())
}

impl<'a> Stopped<'a> {
    /// Shut the sandbox's server down slowly (`innodb_fast_shutdown = 0`: purge and change-buffer merge done,
    /// every page written), so the pages on disk are all there is, and wait for it to exit.
    pub fn slow(sb: &'a Sandbox, tag: &str) -> anyhow::Result<Stopped<'a>> {
        check_sandbox(sb)?;
        if let Some(pid) = sb.running_pid() {
            let mut c = sb.conn_spec().resolve_plain().connect()?;
            c.query_drop(format!("SET {tag} GLOBAL innodb_fast_shutdown = 0"))?;
            // The server closes the session as it goes down; the statement's own result does not matter.
            let _ = c.query_drop(format!("SHUTDOWN {tag}"));
            if !crate::server::process::wait_exit(pid, Duration::from_secs(600)) {
                return Err(refused(format!(
                    "sandbox '{}' (pid {pid}) did not exit within 600 s of its slow shutdown: read {}",
                    sb.name,
                    sb.error_log.display()
                )));
            }
        }
        Ok(Stopped { sb })
    }

    /// A sandbox found down; the caller vouches its last shutdown was slow.
    pub fn already(sb: &'a Sandbox) -> anyhow::Result<Stopped<'a>> {
        check_sandbox(sb)?;
        check_down(sb)?;
        Ok(Stopped { sb })
    }

    /// The `.ibd` file of `db`.`table`, which must be a regular file inside the sandbox's data directory.
    pub fn table(&self, db: &str, table: &str) -> anyhow::Result<TableFile<'a>> {
        let plain = |s: &str| !s.is_empty() && s != "." && s != ".." && !s.contains(['/', '\0']);
        if !plain(db) || !plain(table) {
            return Err(refused(format!(
                "{db}.{table} is not a plain table name: innops damages only a table's own file in the sandbox"
            )));
        }
        let path = self.sb.datadir.join(db).join(format!("{table}.ibd"));
        let regular = std::fs::symlink_metadata(&path)
            .map(|m| m.file_type().is_file())
            .unwrap_or(false);
        let inside = match (path.canonicalize(), self.sb.datadir.canonicalize()) {
            (Ok(p), Ok(d)) => p.starts_with(d),
            _ => false,
        };
        if !regular || !inside {
            return Err(refused(format!(
                "{} is not a table file of sandbox '{}': name a file-per-table InnoDB table that exists in it",
                path.display(),
                self.sb.name
            )));
        }
        Ok(TableFile { sb: self.sb, path })
    }
}

impl TableFile<'_> {
    /// The leaf pages of the index whose root is `root`, in key order (see [`leaves_in`]).
    pub fn leaves(&self, root: u32) -> anyhow::Result<Vec<IndexPage>> {
        let data = std::fs::read(&self.path)?;
        leaves_in(&data, root).map_err(|why| {
            refused(format!(
                "{} does not read as an index with its root at page {root} ({why}): damage a file-per-table InnoDB table with 16 KiB pages",
                self.path.display()
            ))
        })
    }

    /// Every level of the index whose root is `root`, leaves first, each in key order (see [`levels_in`]).
    pub fn levels(&self, root: u32) -> anyhow::Result<Vec<Vec<IndexPage>>> {
        let data = std::fs::read(&self.path)?;
        levels_in(&data, root).map_err(|why| {
            refused(format!(
                "{} does not read as an index with its root at page {root} ({why}): damage a file-per-table InnoDB table with 16 KiB pages",
                self.path.display()
            ))
        })
    }

    /// The chains of externally stored column pages (see [`blob_chains_in`]).
    pub fn blob_chains(&self) -> anyhow::Result<Vec<BlobChain>> {
        let data = std::fs::read(&self.path)?;
        blob_chains_in(&data).map_err(|why| {
            refused(format!(
                "{} does not read as a tablespace with BLOB chains ({why})",
                self.path.display()
            ))
        })
    }

    /// 512 bytes of 0xA5 into the body of page `page` (FACTS §4); the server must still be down.
    pub fn damage(&self, page: u32) -> anyhow::Result<()> {
        check_down(self.sb)?;
        overwrite(&self.path, page)
    }

    /// Rewrite the records of leaf page `page` as `how` says and recompute its checksum (see
    /// [`scramble_page`]); the server must still be down. Returns the index of the first record changed.
    pub fn scramble(&self, page: u32, how: &Scramble) -> anyhow::Result<Option<usize>> {
        check_down(self.sb)?;
        scramble_file(&self.path, page, how)
    }
}

fn scramble_file(path: &Path, page: u32, how: &Scramble) -> anyhow::Result<Option<usize>> {
    use std::io::Read;
    let len = std::fs::metadata(path)?.len();
    let at = u64::from(page) * PAGE as u64;
    if at + PAGE as u64 > len {
        return Err(refused(format!(
            "{} has no page {page}: name a page of the file",
            path.display()
        )));
    }
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    f.seek(SeekFrom::Start(at))?;
    let mut p = vec![0u8; PAGE];
    f.read_exact(&mut p)?;
    let first = scramble_page(&mut p, how).map_err(|why| {
        refused(format!(
            "page {page} of {} cannot be scrambled ({why}): name a leaf page of a full_crc32 tablespace",
            path.display()
        ))
    })?;
    f.seek(SeekFrom::Start(at))?;
    f.write_all(&p)?;
    f.sync_all()?;
    Ok(first)
}

/// Whether page `page` of `path` holds the damage [`TableFile::damage`] writes (read only; the server may run).
pub fn is_damaged(path: &Path, page: u32) -> anyhow::Result<bool> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(
        u64::from(page) * PAGE as u64 + DAMAGE_AT as u64,
    ))?;
    let mut buf = vec![0u8; DAMAGE_LEN];
    f.read_exact(&mut buf)?;
    Ok(buf.iter().all(|&b| b == 0xA5))
}

fn overwrite(path: &Path, page: u32) -> anyhow::Result<()> {
    let len = std::fs::metadata(path)?.len();
    let at = u64::from(page) * PAGE as u64 + DAMAGE_AT as u64;
    if at + DAMAGE_LEN as u64 > len {
        return Err(refused(format!(
            "{} has no page {page}: name a page of the file",
            path.display()
        )));
    }
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.seek(SeekFrom::Start(at))?;
    f.write_all(&[0xA5; DAMAGE_LEN])?;
    f.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::page::INDEX_PAGE;

    /// A page of type `ty` at B-tree level `level` with index id `id`, prev/next links and `n` records.
    fn page(ty: u16, level: u16, id: u64, prev: u32, next: u32, n: u16) -> Vec<u8> {
        let mut p = vec![0u8; PAGE];
        p[8..12].copy_from_slice(&prev.to_be_bytes());
        p[12..16].copy_from_slice(&next.to_be_bytes());
        p[24..26].copy_from_slice(&ty.to_be_bytes());
        p[54..56].copy_from_slice(&n.to_be_bytes());
        p[64..66].copy_from_slice(&level.to_be_bytes());
        p[66..74].copy_from_slice(&id.to_be_bytes());
        p
    }

    /// Pages 0-2 not index pages, 3 the root (level 1) of index 7, 4 the root of index 8 with a leaf of its own
    /// at 7; index 7's leaves are 6 → 5 → 8 in key order.
    fn file() -> Vec<u8> {
        [
            page(8, 0, 0, NO_PAGE, NO_PAGE, 0),
            page(5, 0, 0, NO_PAGE, NO_PAGE, 0),
            page(3, 0, 0, NO_PAGE, NO_PAGE, 0),
            page(INDEX_PAGE, 1, 7, NO_PAGE, NO_PAGE, 3),
            page(INDEX_PAGE, 1, 8, NO_PAGE, NO_PAGE, 1),
            page(INDEX_PAGE, 0, 7, 6, 8, 20),
            page(INDEX_PAGE, 0, 7, NO_PAGE, 5, 10),
            page(INDEX_PAGE, 0, 8, NO_PAGE, NO_PAGE, 99),
            page(INDEX_PAGE, 0, 7, 5, NO_PAGE, 30),
        ]
        .concat()
    }

    #[test]
    fn leaves_come_in_chain_order_and_only_of_the_roots_index() {
        let f = file();
        let l = leaves_in(&f, 3).unwrap();
        assert_eq!(
            l,
            [
                IndexPage {
                    page: 6,
                    n_recs: 10
                },
                IndexPage {
                    page: 5,
                    n_recs: 20
                },
                IndexPage {
                    page: 8,
                    n_recs: 30
                },
            ]
        );
        assert_eq!(
            leaves_in(&f, 4).unwrap(),
            [IndexPage {
                page: 7,
                n_recs: 99
            }]
        );
        assert!(leaves_in(&f, 2).unwrap_err().contains("not an index page"));
        assert!(leaves_in(&f, 40).unwrap_err().contains("no page 40"));
    }

    #[test]
    fn a_broken_chain_is_an_error_not_a_panic() {
        let mut f = file();
        // Page 5 now points to page 1, which is no leaf.
        f[5 * PAGE + 12..5 * PAGE + 16].copy_from_slice(&1u32.to_be_bytes());
        assert!(leaves_in(&f, 3).unwrap_err().contains("page 1"));
        let mut f = file();
        // Page 8 points back to 6: a loop.
        f[8 * PAGE + 12..8 * PAGE + 16].copy_from_slice(&6u32.to_be_bytes());
        assert!(leaves_in(&f, 3).unwrap_err().contains("loops"));
    }

    #[test]
    fn rows_split_by_the_leaves_record_counts_and_a_mismatch_is_refused() {
        let l = [
            IndexPage { page: 6, n_recs: 2 },
            IndexPage { page: 5, n_recs: 1 },
        ];
        assert_eq!(
            split_by_leaf(&l, &[1, 2, 3]).unwrap(),
            vec![vec![1, 2], vec![3]]
        );
        assert!(split_by_leaf(&l, &[1, 2]).is_err());
    }

    #[test]
    fn the_limit_is_every_row_off_the_bad_leaves_and_adjacent_bad_leaves_are_one_range() {
        let l: Vec<IndexPage> = (0..5)
            .map(|p| IndexPage {
                page: p + 10,
                n_recs: 2,
            })
            .collect();
        let keys: Vec<u64> = (1..=10).collect();
        let e = expected(&keys, &l, &[1, 2, 4]).unwrap();
        assert_eq!((e.rows_before, e.on_damaged, e.limit), (10, 6, 4));
        assert_eq!(e.lost, [(Some(2), Some(7)), (Some(8), None)]);
        let e = expected(&keys, &l, &[0]).unwrap();
        assert_eq!(e.lost, [(None, Some(3))]);
        assert_eq!(spread(20), Some(vec![10, 15, 16, 18]));
        assert_eq!(spread(100), Some(vec![50, 75, 76, 98]));
        assert_eq!(spread(19), None);
    }

    #[test]
    fn the_damage_lands_in_the_page_body_and_nowhere_else() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ibd");
        std::fs::write(&path, vec![0u8; 3 * PAGE]).unwrap();
        overwrite(&path, 1).unwrap();
        let d = std::fs::read(&path).unwrap();
        let hit: Vec<usize> = (0..d.len()).filter(|&i| d[i] != 0).collect();
        assert_eq!(hit.len(), DAMAGE_LEN);
        assert_eq!(hit[0], PAGE + DAMAGE_AT);
        assert!(d[hit[0]..hit[0] + DAMAGE_LEN].iter().all(|&b| b == 0xA5));
        assert!(overwrite(&path, 3).is_err(), "no page 3 in a 3-page file");
    }

    /// Index 7 with three levels: root 3 (level 2) over level-1 pages 10 → 9, which hold 2 and 1 node pointers
    /// over the leaves 5 → 6 → 8; index 8 (root 4) beside it.
    fn three_levels() -> Vec<u8> {
        let mut f: Vec<Vec<u8>> = (0..11)
            .map(|_| page(0, 0, 0, NO_PAGE, NO_PAGE, 0))
            .collect();
        f[3] = page(INDEX_PAGE, 2, 7, NO_PAGE, NO_PAGE, 2);
        f[4] = page(INDEX_PAGE, 0, 8, NO_PAGE, NO_PAGE, 5);
        f[10] = page(INDEX_PAGE, 1, 7, NO_PAGE, 9, 2);
        f[9] = page(INDEX_PAGE, 1, 7, 10, NO_PAGE, 1);
        f[5] = page(INDEX_PAGE, 0, 7, NO_PAGE, 6, 10);
        f[6] = page(INDEX_PAGE, 0, 7, 5, 8, 11);
        f[8] = page(INDEX_PAGE, 0, 7, 6, NO_PAGE, 12);
        f.concat()
    }

    #[test]
    fn every_level_of_an_index_comes_in_key_order_and_non_leaf_pages_know_their_children() {
        let f = three_levels();
        let ip = |page, n_recs| IndexPage { page, n_recs };
        let levels = levels_in(&f, 3).unwrap();
        assert_eq!(
            levels,
            vec![
                vec![ip(5, 10), ip(6, 11), ip(8, 12)],
                vec![ip(10, 2), ip(9, 1)],
                vec![ip(3, 2)],
            ]
        );
        assert_eq!(leaves_in(&f, 3).unwrap(), levels[0]);
        assert_eq!(
            children(&levels[1], &levels[0]).unwrap(),
            vec![vec![ip(5, 10), ip(6, 11)], vec![ip(8, 12)]]
        );
        assert_eq!(
            children(&levels[2], &levels[1]).unwrap(),
            vec![vec![ip(10, 2), ip(9, 1)]]
        );
        assert!(level_in(&f, 3, 3).unwrap_err().contains("no level 3"));
        assert_eq!(levels_in(&f, 4).unwrap(), vec![vec![ip(4, 5)]]);
        // A level-1 page that points to more children than the level below has: refused, not guessed.
        let mut bad = f.clone();
        bad[9 * PAGE + 54..9 * PAGE + 56].copy_from_slice(&2u16.to_be_bytes());
        let l = levels_in(&bad, 3).unwrap();
        assert!(children(&l[1], &l[0]).is_err());
    }

    /// A BLOB page: `part` bytes of `fill`, then page `next`.
    fn blob(part: u32, next: u32, fill: u8) -> Vec<u8> {
        let mut p = page(BLOB_PAGE, 0, 0, NO_PAGE, NO_PAGE, 0);
        p[BLOB_PART_LEN..BLOB_PART_LEN + 4].copy_from_slice(&part.to_be_bytes());
        p[BLOB_NEXT..BLOB_NEXT + 4].copy_from_slice(&next.to_be_bytes());
        p[BLOB_DATA..BLOB_DATA + part as usize].fill(fill);
        p
    }

    #[test]
    fn blob_chains_start_where_no_page_points_and_follow_the_next_page_numbers() {
        let mut f: Vec<Vec<u8>> = (0..8).map(|_| page(0, 0, 0, NO_PAGE, NO_PAGE, 0)).collect();
        f[3] = page(INDEX_PAGE, 0, 7, NO_PAGE, NO_PAGE, 2);
        // Row A's value: pages 7 → 4 → 6; row B's: page 5 alone.
        f[7] = blob(16000, 4, b'a');
        f[4] = blob(16000, 6, b'a');
        f[6] = blob(100, NO_PAGE, b'a');
        f[5] = blob(30, NO_PAGE, b'b');
        let f = f.concat();
        let chains = blob_chains_in(&f).unwrap();
        assert_eq!(chains.len(), 2);
        assert_eq!(chains[0].pages, [5]);
        assert_eq!(
            (chains[0].len, chains[0].head.clone()),
            (30, vec![b'b'; 30])
        );
        assert_eq!(chains[1].pages, [7, 4, 6]);
        assert_eq!((chains[1].len, chains[1].head.len()), (32100, 64));
        // A chain that leads out of the BLOB pages is an error.
        let mut broken = f.clone();
        broken[6 * PAGE + BLOB_NEXT..6 * PAGE + BLOB_NEXT + 4].copy_from_slice(&3u32.to_be_bytes());
        assert!(blob_chains_in(&broken).unwrap_err().contains("page 3"));
        // Two pages pointing at each other form no chain with a first page: said so.
        let mut looped = f.clone();
        looped[5 * PAGE + BLOB_NEXT..5 * PAGE + BLOB_NEXT + 4].copy_from_slice(&7u32.to_be_bytes());
        looped[6 * PAGE + BLOB_NEXT..6 * PAGE + BLOB_NEXT + 4].copy_from_slice(&5u32.to_be_bytes());
        assert!(blob_chains_in(&looped).is_err());
    }

    /// A COMPACT leaf page holding INT keys `keys` in a record list in heap order, each record 5 header bytes
    /// and 20 data bytes (the key first), every fourth record (and the last) owning a directory slot; a valid
    /// full_crc32 checksum.
    fn leaf(keys: &[i64]) -> Vec<u8> {
        let mut p = page(INDEX_PAGE, 0, 7, NO_PAGE, NO_PAGE, keys.len() as u16);
        p[38 + 4..38 + 6].copy_from_slice(&(0x8000u16 | (keys.len() as u16 + 2)).to_be_bytes());
        let origin = |i: usize| 125 + 5 + i * 25;
        let mut prev = INFIMUM;
        for (i, &k) in keys.iter().enumerate() {
            let at = origin(i);
            set_next(&mut p, prev, at);
            if i % 4 == 3 || i + 1 == keys.len() {
                p[at - 5] = 4;
            }
            p[at..at + 4].copy_from_slice(&int_key(k, 4));
            p[at + 4..at + 20].fill(i as u8);
            prev = at;
        }
        set_next(&mut p, prev, SUPREMUM);
        let sum = crc32c(&p[..PAGE - 4]);
        p[PAGE - 4..].copy_from_slice(&sum.to_be_bytes());
        p
    }

    fn keys_of(p: &[u8]) -> Vec<i64> {
        record_origins(p)
            .unwrap()
            .iter()
            .map(|&at| {
                let mut b = [0u8; 4];
                b.copy_from_slice(&p[at..at + 4]);
                b[0] ^= 0x80;
                i32::from_be_bytes(b) as i64
            })
            .collect()
    }

    fn changed(a: &[u8], b: &[u8]) -> Vec<usize> {
        (0..a.len()).filter(|&i| a[i] != b[i]).collect()
    }

    #[test]
    fn crc32c_is_castagnoli() {
        // The standard check value of CRC-32C.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(int_key(1, 4), [0x80, 0, 0, 1]);
        assert_eq!(int_key(-1, 4), [0x7F, 0xFF, 0xFF, 0xFF]);
        assert_eq!(
            int_key(2_000_000_000, 8),
            [0x80, 0, 0, 0, 0x77, 0x35, 0x94, 0]
        );
    }

    #[test]
    fn scrambling_keeps_the_checksum_valid_and_changes_only_what_it_says() {
        let keys: Vec<i64> = (100..140).collect();
        let good = leaf(&keys);
        let valid = |p: &[u8]| stored_crc(p) == crc32c(&p[..PAGE - 4]);
        assert!(valid(&good));
        assert_eq!(keys_of(&good), keys);

        // Fill: 512 bytes of 0xA5 mid-page and the checksum, nothing else.
        let mut p = good.clone();
        assert_eq!(scramble_page(&mut p, &Scramble::Fill), Ok(None));
        assert!(valid(&p));
        assert!(changed(&good, &p)
            .iter()
            .all(|&i| (DAMAGE_AT..DAMAGE_AT + DAMAGE_LEN).contains(&i) || i >= PAGE - 4));
        assert!(p[DAMAGE_AT..DAMAGE_AT + DAMAGE_LEN]
            .iter()
            .all(|&b| b == 0xA5));

        // Key: record 10's key is now 2,000,000,000, the others unchanged and in place.
        let mut p = good.clone();
        let how = Scramble::Key {
            nth: 10,
            key: int_key(2_000_000_000, 4),
        };
        assert_eq!(scramble_page(&mut p, &how), Ok(Some(10)));
        assert!(valid(&p));
        let mut want = keys.clone();
        want[10] = 2_000_000_000;
        assert_eq!(keys_of(&p), want);
        assert!(changed(&good, &p).len() <= 4 + 4);

        // Swap: records 1 and 2 trade places in the list (record 3 owns a slot, so a pair asked for at 3
        // moves on to 4 and 5); every record's bytes stay as they were.
        let mut p = good.clone();
        assert_eq!(
            scramble_page(&mut p, &Scramble::Swap { nth: 1 }),
            Ok(Some(1))
        );
        assert!(valid(&p));
        let mut want = keys.clone();
        want.swap(1, 2);
        assert_eq!(keys_of(&p), want);
        let mut p = good.clone();
        assert_eq!(
            scramble_page(&mut p, &Scramble::Swap { nth: 3 }),
            Ok(Some(4))
        );
        let mut want = keys.clone();
        want.swap(4, 5);
        assert_eq!(keys_of(&p), want);

        // Exchange: records 7 and 8 keep their keys and trade the 16 bytes after them.
        let mut p = good.clone();
        let how = Scramble::Exchange {
            nth: 7,
            from: 4,
            len: 16,
        };
        assert_eq!(scramble_page(&mut p, &how), Ok(Some(7)));
        assert!(valid(&p));
        assert_eq!(keys_of(&p), keys);
        let recs = record_origins(&p).unwrap();
        assert!(p[recs[7] + 4..recs[7] + 20].iter().all(|&b| b == 8));
        assert!(p[recs[8] + 4..recs[8] + 20].iter().all(|&b| b == 7));
        let mut p = good.clone();
        let long = Scramble::Exchange {
            nth: 7,
            from: 4,
            len: 30,
        };
        assert!(scramble_page(&mut p, &long)
            .unwrap_err()
            .contains("run past"));

        // Refused, page untouched: a record that is not there, a page whose checksum is not full_crc32, a
        // non-leaf page.
        let mut p = good.clone();
        let far = Scramble::Key {
            nth: 40,
            key: int_key(1, 4),
        };
        assert!(scramble_page(&mut p, &far)
            .unwrap_err()
            .contains("no record 40"));
        assert_eq!(p, good);
        p[PAGE - 1] ^= 1;
        let before = p.clone();
        assert!(scramble_page(&mut p, &Scramble::Fill)
            .unwrap_err()
            .contains("full_crc32"));
        assert_eq!(p, before);
        let mut upper = good.clone();
        upper[64..66].copy_from_slice(&1u16.to_be_bytes());
        let sum = crc32c(&upper[..PAGE - 4]);
        upper[PAGE - 4..].copy_from_slice(&sum.to_be_bytes());
        assert!(scramble_page(&mut upper, &Scramble::Fill)
            .unwrap_err()
            .contains("not a leaf"));
    }

    #[test]
    fn a_broken_record_list_is_an_error_not_a_panic() {
        let mut p = leaf(&[1, 2, 3]);
        // The infimum points at itself.
        set_next(&mut p, INFIMUM, INFIMUM);
        assert!(record_origins(&p).unwrap_err().contains("broken"));
        let mut p = leaf(&[1, 2, 3]);
        p[38 + 4] &= 0x7F;
        assert!(record_origins(&p).unwrap_err().contains("COMPACT"));
    }

    #[test]
    fn scrambling_a_file_stays_inside_the_page_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ibd");
        let filler = page(0, 0, 0, NO_PAGE, NO_PAGE, 0);
        let keys: Vec<i64> = (1..30).collect();
        let before = [filler.clone(), leaf(&keys), filler].concat();
        std::fs::write(&path, &before).unwrap();
        for how in [
            Scramble::Fill,
            Scramble::Key {
                nth: 5,
                key: int_key(9, 4),
            },
            Scramble::Swap { nth: 8 },
            Scramble::Exchange {
                nth: 2,
                from: 4,
                len: 16,
            },
        ] {
            std::fs::write(&path, &before).unwrap();
            scramble_file(&path, 1, &how).unwrap();
            let after = std::fs::read(&path).unwrap();
            let hit = changed(&before, &after);
            assert!(!hit.is_empty(), "{how:?}");
            assert!(hit.iter().all(|&i| i / PAGE == 1), "{how:?}");
        }
        // Page 0 is no leaf; page 3 is past the end.
        std::fs::write(&path, &before).unwrap();
        assert!(scramble_file(&path, 0, &Scramble::Fill).is_err());
        assert!(scramble_file(&path, 3, &Scramble::Fill).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
}
