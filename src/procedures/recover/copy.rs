//! The evidence first: a copy of the (stopped) server's data directory, so forced recovery never runs on the
//! original. The copy is self-contained (files behind symbolic links are copied, not linked), lives in a 0700
//! directory (it holds production data), and is complete only once its record (`copy.json`) is written.

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

/// Files and bytes under `dir` that a copy takes (see [`skipped`]).
pub fn measure(dir: &Path) -> anyhow::Result<(u64, u64)> {
    let mut files = 0;
    let mut bytes = 0;
    walk(dir, &mut |_, meta| {
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
    f: &mut dyn FnMut(&Path, &std::fs::Metadata) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("reading {}", dir.display()))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        if skipped(&e.file_name().to_string_lossy()) {
            continue;
        }
        // Follows links: a table whose files live elsewhere is copied whole.
        let meta =
            std::fs::metadata(&path).with_context(|| format!("reading {}", path.display()))?;
        if meta.is_dir() {
            walk(&path, f)?;
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
    walk(from, &mut |path, meta| {
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
        assert_eq!(measure(&from).unwrap(), (3, 5009));
        let to = tmp.path().join("copy/data");
        let mut seen = vec![];
        let rec = copy_datadir(&from, &to, &mut |b| seen.push(b)).unwrap();
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
        let again = copy_datadir(&from, &to, &mut |_| {})
            .unwrap_err()
            .to_string();
        assert!(again.contains("exists already"), "{again}");
        assert_eq!(existing_ancestor(&tmp.path().join("a/b/c")), tmp.path());
    }
}
