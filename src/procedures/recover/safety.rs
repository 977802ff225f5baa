//! What keeps `innops recover` itself from doing harm (issue 21, found by the fault probe): refusals that must
//! come before anything is stopped, the copy's recovery (a failed copy must not leave the original down), the
//! private server stopped after any failure, and the load sandbox of `--verify-load` reached by a path its
//! installer can take.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use super::private::Private;
use super::RecoverParams;
use crate::plan::{Check, Ctx, Verdict};

/// A Unix socket path holds at most 107 bytes (sun_path's 108 with its NUL).
const SUN_PATH_MAX: usize = 107;

/// The private server's socket (`COPY/server/mysqld.sock`) fits a Unix socket path. Too long, the private
/// server cannot listen, which showed only after the stop and the copy, as a failure to start at every level.
pub(super) fn socket_fits(copy_to: &Path) -> Check {
    let socket = copy_to.join("server").join("mysqld.sock");
    Check::new("the private server's socket path fits", move |_| {
        Ok(socket_verdict(&socket))
    })
}

fn socket_verdict(socket: &Path) -> Verdict {
    let n = socket.as_os_str().len();
    let observed = format!("{} ({n} bytes)", socket.display());
    let expected = format!("at most {SUN_PATH_MAX} bytes");
    Verdict::check(
        n <= SUN_PATH_MAX,
        observed,
        expected,
        format!(
            "the private server's socket {} would be {n} bytes, longer than a Unix socket path may be ({SUN_PATH_MAX}): give a shorter --copy-to",
            socket.display()
        ),
    )
}

/// The copy step's recovery: remove this run's unfinished copy, start the original server again if the run
/// stopped it, and say which state each is in.
pub(super) fn copy_failed(ctx: &mut Ctx, p: &RecoverParams) -> anyhow::Result<String> {
    let mut said = Vec::new();
    if p.copy_to.exists()
        && super::own_run(&p.copy_to, ctx)
        && !p.copy_to.join(super::COPY_RECORD).is_file()
    {
        said.push(match std::fs::remove_dir_all(&p.copy_to) {
            Ok(()) => format!("innops removed its unfinished copy {}", p.copy_to.display()),
            Err(e) => format!(
                "innops could not remove its unfinished copy {} ({}): remove it yourself",
                p.copy_to.display(),
                crate::error::describe_io(&e)
            ),
        });
    }
    if p.original_running {
        if super::server_answers(ctx) {
            said.push("the original server runs".into());
        } else {
            let control = ctx.control()?;
            ctx.drop_conn();
            said.push(match control.start(ctx.target, &[]) {
                Ok(_) => "innops started the original server again (without forced recovery)".into(),
                Err(e) => format!(
                    "the original server is DOWN: innops could not start it again ({}); start it with {}",
                    crate::error::display_of(&e),
                    control.spec.start_hint()
                ),
            });
        }
    }
    if said.is_empty() {
        said.push("the original was not touched".into());
    }
    Ok(format!(
        "{}; run innops recover again as a new run",
        said.join(", and ")
    ))
}

/// After a failed step: the private server on the copy is stopped (it holds production data at a forced-
/// recovery level; a resume starts it again), and the sentence says which state it is in.
pub(super) fn private_stopped(private: &Private) -> String {
    match private.running_pid() {
        None => "the private server on the copy is not running".into(),
        Some(pid) => match private.stop() {
            Ok(()) => {
                "innops stopped the private server on the copy (a resume starts it again)".into()
            }
            Err(e) => format!(
                "the private server on the copy still runs (pid {pid}): {}",
                crate::error::display_of(&e)
            ),
        },
    }
}

/// Ctrl-C inside the step is the one failure the runner runs no recovery for (the step resumes): the private
/// server is stopped here and the message says so; every other failure is left to the step's recovery
/// ([`private_stopped`]).
pub(super) fn stop_private_on_interrupt<T>(
    private: &Private,
    r: anyhow::Result<T>,
) -> anyhow::Result<T> {
    use crate::error::Failure;
    match r {
        Err(e)
            if matches!(
                e.chain().find_map(|c| c.downcast_ref::<Failure>()),
                Some(Failure::Interrupted(_))
            ) =>
        {
            Err(Failure::Interrupted(format!(
                "{}; {}",
                crate::error::display_of(&e),
                private_stopped(private)
            ))
            .into())
        }
        r => r,
    }
}

/// A fresh directory of innops's own in the temp dir (0700) holding one link to the directory where the load
/// sandbox's files go: `mariadb-install-db` is a shell script that breaks on a path with spaces (its `chown`
/// takes `/srv/my copy/…` as three paths), and a sandbox's socket path must be short. The files stay where
/// the link points; dropping this removes the link and its directory only.
pub(super) struct LoadRoot {
    dir: PathBuf,
    link: PathBuf,
}

impl LoadRoot {
    pub(super) fn new(files: &Path) -> anyhow::Result<LoadRoot> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::create_dir_all(files).with_context(|| format!("creating {}", files.display()))?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let dir =
            std::env::temp_dir().join(format!("innops-load-{}-{nanos:08x}", std::process::id()));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        let link = dir.join("v");
        std::os::unix::fs::symlink(files, &link)
            .with_context(|| format!("linking {} to {}", link.display(), files.display()))?;
        Ok(LoadRoot { dir, link })
    }

    /// The sandbox root to give `Sandbox::create`.
    pub(super) fn path(&self) -> &Path {
        &self.link
    }
}

impl Drop for LoadRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.link);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// A run killed during `--verify-load` leaves its load sandbox in `files/load`, its server perhaps still
/// running: stop that server (its pid file is in the sandbox's own directory) and remove the sandbox.
pub(super) fn clear_leftover_load(files: &Path) -> anyhow::Result<()> {
    let dir = files.join("load");
    if !dir.exists() {
        return Ok(());
    }
    let pid = std::fs::read_to_string(dir.join("mysqld.pid"))
        .ok()
        .and_then(|t| t.trim().parse::<u32>().ok())
        .filter(|&pid| crate::server::process::process_alive(pid));
    if let Some(pid) = pid {
        // The pid a load sandbox of this copy recorded.
        use crate::server::process::{signal_and_wait, Signal};
        if !signal_and_wait(pid, Signal::Term, Duration::from_secs(300)) {
            anyhow::bail!(
                "the load sandbox left in {} (pid {pid}) did not stop: stop it with kill {pid}, then resume",
                dir.display()
            );
        }
    }
    std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_directory_too_deep_for_the_private_socket_is_refused_with_the_path() {
        let at = |n: usize| PathBuf::from(format!("/{}", "c".repeat(n - 1)));
        // COPY/server/mysqld.sock adds 19 bytes: 107 fits, 108 does not.
        let ok = socket_verdict(&at(88).join("server/mysqld.sock"));
        assert!(ok.passed, "{ok:?}");
        let long = socket_verdict(&at(89).join("server/mysqld.sock"));
        assert!(!long.passed);
        assert!(long.fix.unwrap().ends_with(
            "mysqld.sock would be 108 bytes, longer than a Unix socket path may be (107): give a shorter --copy-to"
        ));
    }

    #[test]
    fn the_load_root_is_a_short_link_without_spaces_that_goes_away_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let files = tmp.path().join("my copy/verify");
        let root = LoadRoot::new(&files).unwrap();
        let p = root.path().to_path_buf();
        assert!(
            !p.to_string_lossy().contains(' ')
                || std::env::temp_dir().to_string_lossy().contains(' ')
        );
        std::fs::write(p.join("through-the-link"), b"x").unwrap();
        drop(root);
        assert!(!p.exists() && !p.parent().unwrap().exists());
        assert_eq!(std::fs::read(files.join("through-the-link")).unwrap(), b"x");
        // Nothing left: nothing to clear.
        clear_leftover_load(&files).unwrap();
        std::fs::create_dir_all(files.join("load/data")).unwrap();
        clear_leftover_load(&files).unwrap();
        assert!(!files.join("load").exists());
    }
}
