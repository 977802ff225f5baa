//! Files only innops's user may read: a run directory holds option-file backups, server facts, the journal and
//! every variable and status value of the server, so its directories are made 0700 and its files 0600 whatever
//! the umask allows. A leaf: plan's journal, the during-sampler and the drill's records all write through here.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

/// Creates `path` and any missing parents with mode 0700: a run directory holds option-file backups, server
/// facts and the journal, which other local users have no business reading. Directories that already exist
/// keep their mode (`--run-dir /tmp/x` must not lock others out of `/tmp`).
pub fn create_private_dir(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .with_context(|| format!("creating {}", path.display()))
}

pub fn write_json_atomic(path: &Path, value: &impl Serialize) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    write_private(&tmp, serde_json::to_string_pretty(value)?.as_bytes())?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} into place", tmp.display()))
}

/// Opens `path` for appending, creating it readable and writable by its owner only (0600). A run's files hold
/// every variable and status value of the server and the plan; a `--run-dir` that already exists keeps its own
/// mode, so the files themselves must be private whatever the directory and the umask allow. An existing file
/// is made 0600 too.
pub fn open_private_append(path: &Path) -> anyhow::Result<File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("making {} private", path.display()))?;
    Ok(f)
}

/// Writes `bytes` to `path` (replacing what it held) as a file only its owner can read: see
/// [`open_private_append`].
pub fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("making {} private", path.display()))?;
    f.write_all(bytes)
        .with_context(|| format!("writing {}", path.display()))
}
