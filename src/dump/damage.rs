//! Damaging leaf pages on purpose, for the drill, the tests and the benchmark of `innops recover`: the leaf
//! pages of a table's `.ibd` file in key order (shared/FACTS.md §4), and 512 bytes of 0xA5 written into the
//! body of a chosen page.
//!
//! Only ever a sandbox's own data directory, and only with its server stopped after a slow shutdown: a
//! [`Stopped`] is made only by [`Stopped::slow`] (which shuts the sandbox down with `innodb_fast_shutdown = 0`)
//! or [`Stopped::already`] (a sandbox found down), and every write checks again that the file is a regular file
//! inside that sandbox's data directory and that its server is not running.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use mysql::prelude::Queryable;

use crate::error::refused;
use crate::sandbox::Sandbox;

/// The page size innops damages (MariaDB's default, `innodb_page_size = 16k`).
pub const PAGE: usize = 16384;
/// Where the damage goes inside a page, and how much: inside the body (bytes 38..16375), FACTS §4.
const DAMAGE_AT: usize = 2000;
const DAMAGE_LEN: usize = 512;
/// `FIL_PAGE_INDEX`.
const INDEX_PAGE: u16 = 17855;
const NO_PAGE: u32 = u32::MAX;

/// One leaf page of an index: its page number and how many records it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct IndexPage {
    pub page: u32,
    pub n_recs: usize,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The leaf pages of the index whose root is page `root` (3: the clustered index, 4: the first secondary
/// index) in key order: the level-0 index pages with the root's index id, following the next-page links from
/// the one that has no previous page. `Err` says why the file does not read as such an index.
pub fn leaves_in(data: &[u8], root: u32) -> Result<Vec<IndexPage>, String> {
    let pages = data.len() / PAGE;
    let page = |n: usize| &data[n * PAGE..(n + 1) * PAGE];
    if root as usize >= pages {
        return Err(format!("the file has {pages} pages, no page {root}"));
    }
    let r = page(root as usize);
    if be16(r, 24) != INDEX_PAGE {
        return Err(format!("page {root} is not an index page"));
    }
    let index_id = &r[66..74];
    let mut by_no = std::collections::HashMap::new();
    let mut first = None;
    for n in 0..pages {
        let p = page(n);
        if be16(p, 24) == INDEX_PAGE && be16(p, 64) == 0 && &p[66..74] == index_id {
            by_no.insert(n as u32, (be32(p, 12), be16(p, 54) as usize));
            if be32(p, 8) == NO_PAGE {
                if first.is_some() {
                    return Err("two leaf pages have no previous page".into());
                }
                first = Some(n as u32);
            }
        }
    }
    let mut at = first.ok_or("no leaf page without a previous page")?;
    let mut out = Vec::new();
    loop {
        let &(next, n_recs) = by_no.get(&at).ok_or(format!(
            "the leaf chain leads to page {at}, which is not a leaf of this index"
        ))?;
        out.push(IndexPage { page: at, n_recs });
        if out.len() > by_no.len() {
            return Err("the leaf chain loops".into());
        }
        if next == NO_PAGE {
            break;
        }
        at = next;
    }
    if out.len() != by_no.len() {
        return Err(format!(
            "{} leaf pages, {} on the chain from the first",
            by_no.len(),
            out.len()
        ));
    }
    Ok(out)
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
            if !crate::sandbox::wait_exit(pid, Duration::from_secs(600)) {
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

    /// 512 bytes of 0xA5 into the body of page `page` (FACTS §4); the server must still be down.
    pub fn damage(&self, page: u32) -> anyhow::Result<()> {
        check_down(self.sb)?;
        overwrite(&self.path, page)
    }
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
}
