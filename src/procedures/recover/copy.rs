//! The evidence first: a copy of the (stopped) server's data directory, so forced recovery never runs on the
//! original. The copy is self-contained (files behind symbolic links are copied, not linked), lives in a 0700
//! directory (it holds production data), and is complete only once its record (`copy.json`) is written.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// What a finished copy holds; written last, so its presence proves the copy finished.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct CopyRecord {
    pub from: PathBuf,
    pub files: u64,
    pub bytes: u64,
}

/// Files at the top of a data directory a copy leaves out besides sockets and pids: the binary and relay logs
/// and the replication info files ([`log_files`]), unless `--with-logs`.
pub type Leave = BTreeSet<String>;

/// The binary and relay logs at the top of `dir` (the files each `*.index` there lists, the index itself and its
/// `.state` file) and the replication info files (`master.info`, `relay-log.info`, `multi-master.info`, and
/// their per-connection `master-NAME.info`, `relay-log-NAME.info`). A dump never reads them, and a replica's
/// relay logs can be gigabytes. Read from the files themselves, so it holds for a server that is down too.
pub fn log_files(dir: &Path) -> Leave {
    let mut out = Leave::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let names: BTreeSet<String> = rd
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    for n in &names {
        let info =
            (n.starts_with("master") || n.starts_with("relay-log") || n == "multi-master.info")
                && n.ends_with(".info");
        if info {
            out.insert(n.clone());
        }
        let Some(stem) = n.strip_suffix(".index") else {
            continue;
        };
        let listed: Vec<String> = std::fs::read_to_string(dir.join(n))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                Path::new(l.trim())
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
            })
            .filter(|f| names.contains(f) && f.starts_with(stem))
            .collect();
        out.extend(listed);
        out.insert(n.clone());
        // Its gtid state (binary log) and relay-log recovery file (`relay-bin.~rec~`).
        for extra in [format!("{stem}.state"), format!("{stem}.~rec~")] {
            if names.contains(&extra) {
                out.insert(extra);
            }
        }
    }
    out
}

/// Files and bytes under `dir` that a copy takes (see [`skipped`]), leaving out `leave` at its top.
pub fn measure(dir: &Path, leave: &Leave) -> anyhow::Result<(u64, u64)> {
    let mut files = 0;
    let mut bytes = 0;
    walk(dir, leave, &mut |_, meta| {
        files += 1;
        bytes += meta.len();
        Ok(())
    })?;
    Ok((files, bytes))
}

/// Not copied: the running server's socket, pid and lock files (stale in a copy, and a socket cannot be copied).
pub fn skipped(name: &str) -> bool {
    name.ends_with(".sock") || name.ends_with(".pid") || name.ends_with(".sock.lock")
}

fn walk(
    dir: &Path,
    leave: &Leave,
    f: &mut dyn FnMut(&Path, &std::fs::Metadata) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if skipped(&name) || leave.contains(&name) {
            continue;
        }
        // Follows links: a table whose files live elsewhere is copied whole.
        let meta =
            std::fs::metadata(&path).with_context(|| format!("reading {}", path.display()))?;
        if meta.is_dir() {
            // Only the top of the data directory holds logs.
            walk(&path, &Leave::new(), f)?;
        } else if meta.is_file() {
            f(&path, &meta)?;
        }
    }
    Ok(())
}

/// Copy `from` into `to` (which must not exist), reporting bytes copied so far to `progress`.
pub fn copy_datadir(
    from: &Path,
    to: &Path,
    leave: &Leave,
    progress: &mut dyn FnMut(u64),
) -> anyhow::Result<CopyRecord> {
    use std::os::unix::fs::DirBuilderExt;
    if to.exists() {
        anyhow::bail!(
            "{} exists already: name a new directory for the copy",
            to.display()
        );
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(to)
        .with_context(|| format!("creating {}", to.display()))?;
    let mut files = 0;
    let mut bytes = 0;
    walk(from, leave, &mut |path, meta| {
        let rel = path.strip_prefix(from).expect("walk stays under its root");
        let dest = to.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        let n = std::fs::copy(path, &dest)
            .with_context(|| format!("copying {} to {}", path.display(), dest.display()))?;
        if n != meta.len() {
            anyhow::bail!(
                "{} changed while it was copied ({} bytes, then {n}): is the server stopped?",
                path.display(),
                meta.len()
            );
        }
        files += 1;
        bytes += n;
        progress(bytes);
        Ok(())
    })?;
    Ok(CopyRecord {
        from: from.to_path_buf(),
        files,
        bytes,
    })
}

/// The nearest existing directory at or above `p` (where free space is measured for a path not made yet).
pub fn existing_ancestor(p: &Path) -> PathBuf {
    let mut cur = p.to_path_buf();
    while !cur.exists() {
        match cur.parent() {
            Some(parent) if parent != cur => cur = parent.to_path_buf(),
            _ => break,
        }
    }
    cur
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_logs_a_copy_leaves_out_are_what_the_indexes_list_and_the_replication_info() {
        let d = tempfile::tempdir().unwrap();
        let w = |n: &str, t: &str| std::fs::write(d.path().join(n), t).unwrap();
        w("binlog.000001", "x");
        w("binlog.000002", "x");
        w("binlog.index", "./binlog.000001\n./binlog.000002\n");
        w("binlog.state", "x");
        w("r1-relay-bin.000003", "x");
        w("r1-relay-bin.index", "/var/lib/mysql/r1-relay-bin.000003\n");
        w("r1-relay-bin.~rec~", "x");
        w("master.info", "x");
        w("relay-log-x.info", "x");
        w("ibdata1", "x");
        w("ib_logfile0", "x");
        w("aria_log.00000001", "x");
        w("aria_log_control", "x");
        std::fs::create_dir(d.path().join("shop")).unwrap();
        let left: Vec<String> = log_files(d.path()).into_iter().collect();
        assert_eq!(
            left,
            [
                "binlog.000001",
                "binlog.000002",
                "binlog.index",
                "binlog.state",
                "master.info",
                "r1-relay-bin.000003",
                "r1-relay-bin.index",
                "r1-relay-bin.~rec~",
                "relay-log-x.info",
            ]
        );
        let (files, _) = measure(d.path(), &log_files(d.path())).unwrap();
        assert_eq!(files, 4, "InnoDB's and Aria's own files are copied");
    }

    #[test]
    fn a_copy_takes_every_file_but_sockets_and_pids_and_refuses_an_existing_target() {
        let tmp = tempfile::tempdir().unwrap();
        let from = tmp.path().join("data");
        std::fs::create_dir_all(from.join("db")).unwrap();
        std::fs::write(from.join("ibdata1"), vec![7u8; 5000]).unwrap();
        std::fs::write(from.join("db/t.ibd"), b"abc").unwrap();
        std::fs::write(from.join("mysqld.pid"), b"1").unwrap();
        std::fs::write(from.join("mysqld.sock"), b"").unwrap();
        let outside = tmp.path().join("elsewhere.ibd");
        std::fs::write(&outside, b"linked").unwrap();
        std::os::unix::fs::symlink(&outside, from.join("db/l.ibd")).unwrap();
        assert_eq!(measure(&from, &Leave::new()).unwrap(), (3, 5009));
        let to = tmp.path().join("copy/data");
        let mut seen = vec![];
        let rec = copy_datadir(&from, &to, &Leave::new(), &mut |b| seen.push(b)).unwrap();
        assert_eq!((rec.files, rec.bytes), (3, 5009));
        assert_eq!(seen.last(), Some(&5009));
        assert_eq!(std::fs::read(to.join("db/l.ibd")).unwrap(), b"linked");
        assert!(!std::fs::symlink_metadata(to.join("db/l.ibd"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(!to.join("mysqld.pid").exists() && !to.join("mysqld.sock").exists());
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&to).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let again = copy_datadir(&from, &to, &Leave::new(), &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(again.contains("exists already"), "{again}");
        assert_eq!(existing_ancestor(&tmp.path().join("a/b/c")), tmp.path());
    }
}
