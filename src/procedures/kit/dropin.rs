//! innops's drop-in option file, as the procedures that restart a server use it: the value the option files give
//! a key at the next start (read as the server of that version reads them), where the backup of the previous file
//! goes, and how a failed restart puts it back.

use std::path::{Path, PathBuf};

use crate::plan::Ctx;
use crate::server::optionfile;

/// What the option files give `key` at the next start of a server of `version` (`10.11.6-MariaDB`): every group
/// that server reads, as `my_print_defaults --mysqld` lists them ([mariadb-10.11], [client-server], [galera],
/// the group suffix), the last value winning.
pub fn effective_config(
    option_file: &Path,
    key: &str,
    version: &str,
) -> anyhow::Result<Option<String>> {
    let set = optionfile::read(option_file)?;
    let groups = optionfile::server_groups(
        Some(version).filter(|v| !v.is_empty()),
        optionfile::group_suffix_from_env().as_deref(),
    );
    Ok(set.get(&groups, key).map(str::to_string))
}

/// Where this run keeps the files it changes as they were before (the run directory's `backup/`, or one in the
/// temporary directory for a run without a directory).
pub fn backup_dir(ctx: &Ctx) -> PathBuf {
    ctx.run_dir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join("backup")
}

/// Put the previous drop-in back from the run's backup.
pub fn restore(ctx: &Ctx, path: &Path) -> anyhow::Result<()> {
    let backup = backup_dir(ctx);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let saved = backup.join(&name);
    if saved.is_file() {
        std::fs::copy(&saved, path)?;
    } else if backup.join(format!("{name}.absent")).exists() {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The file: `my_print_defaults --mysqld` gives innodb_log_file_size=1G (the version group comes
    /// after [mysqld]), and so does innops for a 10.11 server; a 10.6 server would read 96M.
    #[test]
    fn the_next_start_reads_the_groups_of_the_servers_version() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("my.cnf");
        std::fs::write(
            &f,
            "[mysqld]\ninnodb_log_file_size=96M\n[mariadb-10.11]\ninnodb_log_file_size=1G\n",
        )
        .unwrap();
        let got = |v: &str| effective_config(&f, "innodb_log_file_size", v).unwrap();
        assert_eq!(got("10.11.19-MariaDB-0+deb12u1").as_deref(), Some("1G"));
        assert_eq!(got("10.6.18-MariaDB").as_deref(), Some("96M"));
        assert_eq!(got("").as_deref(), Some("96M"));
    }
}
