//! A private server on a copy of a damaged data directory: the same binary as the original, its own socket in
//! a 0700 directory, no TCP, no grant checks (only the directory's owner can reach the socket), the buffer-pool
//! load at startup off (it would read the bad page first), and `innodb_force_recovery` at the level asked.
//! It holds production data, so nothing about it is reachable by another local user.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::server::connect::{ConnSpec, Target};
use crate::server::errorlog;
use crate::server::process::{process_alive, signal_and_wait, Signal};

/// Options that change how InnoDB reads the data files; the private server must start with the original's.
pub const CARRIED: &[&str] = &[
    "innodb_page_size",
    "innodb_log_file_size",
    "innodb_data_file_path",
    "innodb_undo_tablespaces",
    "lower_case_table_names",
];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Private {
    /// 0700: socket, pid file, error log and tmpdir.
    pub dir: PathBuf,
    pub datadir: PathBuf,
    pub binary: PathBuf,
    /// `name=value` options carried from the original server (see [`CARRIED`]).
    pub carried: Vec<String>,
}

/// One start at one level: whether the server came up, and what it wrote to its error log meanwhile.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Attempt {
    pub level: u8,
    pub started: bool,
    pub error_log: Vec<String>,
}

impl Private {
    pub fn socket(&self) -> PathBuf {
        self.dir.join("mysqld.sock")
    }
    pub fn pid_file(&self) -> PathBuf {
        self.dir.join("mysqld.pid")
    }
    pub fn error_log(&self) -> PathBuf {
        self.dir.join("error.log")
    }

    /// How to reach it: root over its socket (the server checks no grants).
    pub fn target(&self) -> Target {
        ConnSpec {
            socket: Some(self.socket()),
            user: Some("root".into()),
            ..Default::default()
        }
        .resolve_plain()
    }

    pub fn running_pid(&self) -> Option<u32> {
        let pid: u32 = std::fs::read_to_string(self.pid_file())
            .ok()?
            .trim()
            .parse()
            .ok()?;
        process_alive(pid).then_some(pid)
    }

    /// The server's command line at `level`.
    pub fn args(&self, level: u8) -> Vec<String> {
        let mut a = vec![
            "--no-defaults".to_string(),
            format!("--datadir={}", self.datadir.display()),
            format!("--socket={}", self.socket().display()),
            format!("--pid-file={}", self.pid_file().display()),
            format!("--log-error={}", self.error_log().display()),
            format!("--tmpdir={}", self.dir.join("tmp").display()),
            "--skip-networking".into(),
            "--skip-grant-tables".into(),
            "--skip-slave-start".into(),
            "--innodb-buffer-pool-load-at-startup=OFF".into(),
            "--innodb-buffer-pool-dump-at-shutdown=OFF".into(),
            format!("--innodb-force-recovery={level}"),
        ];
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            a.push("--user=root".into());
        }
        a.extend(self.carried.iter().map(|kv| format!("--{kv}")));
        a
    }

    /// Start at `level` and wait until it accepts connections, it exits, or `timeout` passes. A server that
    /// does not come up is stopped again; the attempt says what its error log said.
    pub fn start(&self, level: u8, timeout: Duration) -> anyhow::Result<Attempt> {
        if let Some(pid) = self.running_pid() {
            anyhow::bail!(
                "a private server already runs on {} (pid {pid}): stop it first",
                self.datadir.display()
            );
        }
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(self.dir.join("tmp"))
                .with_context(|| format!("creating {}", self.dir.display()))?;
        }
        let offset = errorlog::end_offset(&self.error_log());
        let out = crate::server::process::without_client_secrets(&mut Command::new("/bin/sh"))
            .arg("-c")
            .arg("\"$@\" </dev/null >/dev/null 2>&1 & echo $!")
            .arg("sh")
            .arg(&self.binary)
            .args(self.args(level))
            .stdin(Stdio::null())
            .output()
            .context("starting the private server through /bin/sh")?;
        let pid: u32 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .context("reading the private server's pid")?;
        let target = self.target();
        let t0 = Instant::now();
        let started = loop {
            if mysql::Conn::new(target.opts.clone()).is_ok() {
                break true;
            }
            if !process_alive(pid) || t0.elapsed() > timeout {
                break false;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        if !started && process_alive(pid) {
            stop_pid(pid);
        }
        let error_log = errorlog::read_since(&self.error_log(), offset)
            .map(|t| t.lines)
            .unwrap_or_default();
        Ok(Attempt {
            level,
            started,
            error_log,
        })
    }

    /// A normal shutdown (SIGTERM), waiting until the process is gone.
    pub fn stop(&self) -> anyhow::Result<()> {
        if let Some(pid) = self.running_pid() {
            if !stop_pid(pid) {
                anyhow::bail!(
                    "the private server (pid {pid}) on {} did not stop within 10 minutes: stop it with kill {pid}",
                    self.datadir.display()
                );
            }
        }
        Ok(())
    }
}

fn stop_pid(pid: u32) -> bool {
    // The pid of a server this module started.
    signal_and_wait(pid, Signal::Term, Duration::from_secs(600))
}

/// The options to carry, from the original server's variables (`name`, `value` pairs as read).
pub fn carried_from(vars: &[(String, String)]) -> Vec<String> {
    CARRIED
        .iter()
        .filter_map(|k| {
            vars.iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(k))
                .map(|(_, v)| format!("{k}={v}"))
        })
        .collect()
}

/// Whether `p` lies inside `dir` (lexically, both absolute).
pub fn inside(p: &Path, dir: &Path) -> bool {
    p.starts_with(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_private_server_is_unreachable_but_by_its_socket_and_reads_nothing_at_start() {
        let p = Private {
            dir: "/x/p".into(),
            datadir: "/x/copy".into(),
            binary: "/usr/sbin/mariadbd".into(),
            carried: carried_from(&[
                ("innodb_page_size".into(), "16384".into()),
                ("innodb_log_file_size".into(), "100663296".into()),
                ("port".into(), "3306".into()),
            ]),
        };
        let a = p.args(2);
        for want in [
            "--no-defaults",
            "--skip-networking",
            "--skip-grant-tables",
            "--innodb-buffer-pool-load-at-startup=OFF",
            "--innodb-force-recovery=2",
            "--datadir=/x/copy",
            "--socket=/x/p/mysqld.sock",
            "--innodb_page_size=16384",
            "--innodb_log_file_size=100663296",
        ] {
            assert!(a.iter().any(|x| x == want), "{want} missing from {a:?}");
        }
        assert!(!a.iter().any(|x| x.contains("port")), "{a:?}");
        assert_eq!(a[0], "--no-defaults");
    }
}
