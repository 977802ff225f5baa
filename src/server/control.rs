//! Stopping and starting a server: a clean or slow shutdown that waits until the server is really gone, and a
//! start with extra options that waits until it accepts connections, through one of three backends (a sandbox, a
//! systemd unit, or the user's own start/stop commands).
//!
//! Every stop and start records the error-log offset first, so the caller can classify exactly what the server
//! wrote about it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::sql::Queryable;
use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::error::{bad_input, refused};
use crate::progress::Waiting;
use crate::server::connect::Target;
use crate::server::errorlog;
use crate::server::process;
use crate::server::sandbox::Sandbox;

/// How the user lets innops stop and start the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "backend", rename_all = "snake_case")]
pub enum ControlSpec {
    Sandbox { root: PathBuf, name: String },
    Systemd { unit: String },
    Commands { start: String, stop: Option<String> },
}

impl ControlSpec {
    /// Parse `--service systemd:UNIT`.
    pub fn parse_service(s: &str) -> anyhow::Result<ControlSpec> {
        match s.split_once(':') {
            Some(("systemd", unit)) if !unit.is_empty() => Ok(ControlSpec::Systemd {
                unit: unit.to_string(),
            }),
            _ => Err(bad_input(format!(
                "--service '{s}' is not understood: use systemd:UNIT (for example systemd:mariadb)"
            ))),
        }
    }

    /// How a person starts the server by hand through this backend.
    pub fn start_hint(&self) -> String {
        match self {
            ControlSpec::Sandbox { root, name } => format!(
                "`innops sandbox start {name} --sandbox-root {}`",
                root.display()
            ),
            ControlSpec::Systemd { unit } => format!("`systemctl start {unit}`"),
            ControlSpec::Commands { start, .. } => format!("`{start}`"),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            ControlSpec::Sandbox { name, .. } => format!("sandbox {name}"),
            ControlSpec::Systemd { unit } => format!("systemd unit {unit}"),
            ControlSpec::Commands { start, .. } => format!("start command `{start}`"),
        }
    }
}

/// How to shut down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopMode {
    /// `innodb_fast_shutdown` 1 (raised from 2 if needed, so the shutdown is clean).
    Clean,
    /// `innodb_fast_shutdown=0`: full purge and change-buffer merge.
    Slow,
}

/// What a stop observed, for the journal.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct StopRecord {
    /// The error log's length before the stop: what the server wrote about this stop starts here.
    #[serde(default)]
    pub log_offset: u64,
    pub fast_shutdown: Option<u64>,
    pub history_list_length: Option<u64>,
    pub log_lines: Vec<String>,
    pub clean: bool,
    /// When innops asked the server to shut down: where the downtime begins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// A server innops may stop and start.
pub struct Control {
    pub spec: ControlSpec,
    /// The server's error log when innops can read it.
    pub error_log: Option<PathBuf>,
    pub start_timeout: Duration,
    pub stop_timeout: Duration,
}

impl Control {
    pub fn new(spec: ControlSpec, error_log: Option<PathBuf>) -> Control {
        let error_log = match &spec {
            ControlSpec::Sandbox { root, name } => Sandbox::open(root, name)
                .ok()
                .map(|s| s.error_log)
                .or(error_log),
            _ => error_log,
        };
        Control {
            spec,
            error_log,
            start_timeout: Duration::from_secs(600),
            stop_timeout: Duration::from_secs(3600),
        }
    }

    fn sandbox(&self) -> anyhow::Result<Option<Sandbox>> {
        match &self.spec {
            ControlSpec::Sandbox { root, name } => Ok(Some(Sandbox::open(root, name)?)),
            _ => Ok(None),
        }
    }

    pub fn log_offset(&self) -> u64 {
        self.error_log
            .as_deref()
            .map(errorlog::end_offset)
            .unwrap_or(0)
    }

    pub fn log_since(&self, offset: u64) -> Vec<String> {
        self.error_log
            .as_deref()
            .and_then(|p| errorlog::read_since(p, offset).ok())
            .map(|t| t.lines)
            .unwrap_or_default()
    }

    /// Shut the server down cleanly (or slowly) and wait until it is gone.
    pub fn stop(&self, target: &Target, mode: StopMode, tag: &str) -> anyhow::Result<StopRecord> {
        let offset = self.log_offset();
        let mut rec = StopRecord {
            log_offset: offset,
            stopped_at: Some(chrono::Utc::now()),
            ..StopRecord::default()
        };
        let sandbox = self.sandbox()?;
        let mut pid = sandbox.as_ref().and_then(Sandbox::running_pid);
        match target.connect() {
            Ok(mut conn) => {
                // The socket closes before InnoDB has finished shutting down: on a local server, wait for the
                // process itself, found through its pid file.
                if pid.is_none() && target.local {
                    pid = local_pid(&mut conn, tag);
                }
                let current: Option<u64> = conn.query_first(format!("SELECT /* {tag} */ @@GLOBAL.innodb_fast_shutdown"))?;
                let wanted = match (mode, current) {
                    (StopMode::Slow, _) => Some(0),
                    (StopMode::Clean, Some(2)) => Some(1),
                    _ => None,
                };
                if let Some(w) = wanted {
                    conn.query_drop(format!("SET /* {tag} */ GLOBAL innodb_fast_shutdown = {w}"))?;
                }
                rec.fast_shutdown = conn.query_first(format!("SELECT /* {tag} */ @@GLOBAL.innodb_fast_shutdown"))?;
                rec.history_list_length = conn
                    .query_first::<(String, String), _>(format!(
                        "SHOW /* {tag} */ GLOBAL STATUS LIKE 'Innodb_history_list_length'"
                    ))?
                    .and_then(|(_, v)| v.parse().ok());
                let kill = crate::testhooks::kill_at_stop();
                match &self.spec {
                    _ if kill && pid.is_some() => {
                        // The server's own pid (test hook).
                        process::send(pid.unwrap_or_default(), process::Signal::Kill);
                    }
                    ControlSpec::Commands { stop: Some(cmd), .. } => {
                        run_shell(shell_command(cmd, &[], false))?
                    }
                    ControlSpec::Systemd { unit } => run_cmd("systemctl", &["stop", unit])?,
                    _ => {
                        // The connection drops as the server goes away; that is the expected outcome.
                        let _ = conn.query_drop(format!("SHUTDOWN /* {tag} */"));
                    }
                }
            }
            Err(e) if pid.is_none() => {
                return Err(refused(format!(
                    "cannot stop the server: it is not reachable ({}), so innops cannot make the shutdown clean",
                    crate::error::display_of(&e)
                )))
            }
            Err(_) => {
                // A sandbox whose socket is gone but whose process lives: SIGTERM is a clean shutdown too.
                if let Some(pid) = pid {
                    process::send(pid, process::Signal::Term);
                }
            }
        }
        self.wait_down(target, pid)?;
        rec.log_lines = self.log_since(offset);
        let summary = errorlog::summarize(&rec.log_lines);
        rec.clean = summary.clean_shutdown || self.error_log.is_none();
        Ok(rec)
    }

    fn wait_down(&self, target: &Target, pid: Option<u32>) -> anyhow::Result<()> {
        let start = Instant::now();
        let mut shown = Waiting::new(
            &format!("waiting for {} to shut down", target.label),
            self.stop_timeout,
        );
        loop {
            shown.tick();
            let gone = match pid {
                Some(pid) => !process::process_alive(pid),
                None => mysql::Conn::new(target.opts.clone()).is_err(),
            };
            if gone {
                shown.finish();
                return Ok(());
            }
            if start.elapsed() > self.stop_timeout {
                shown.finish();
                return Err(anyhow::anyhow!(
                    "the server at {} is still running {}s after SHUTDOWN: check its error log",
                    target.label,
                    self.stop_timeout.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Start with extra options and wait until it accepts connections. Returns the error-log lines of the start.
    pub fn start(&self, target: &Target, extra: &[String]) -> anyhow::Result<Vec<String>> {
        let offset = self.log_offset();
        match &self.spec {
            ControlSpec::Sandbox { .. } => {
                let mut sb = self.sandbox()?.expect("sandbox spec");
                let shown = Waiting::new(
                    &format!("waiting for {} to start", target.label),
                    self.start_timeout,
                );
                let r = sb.start(extra, self.start_timeout);
                shown.finish();
                r?;
            }
            ControlSpec::Systemd { unit } => {
                let opts = extra.join(" ");
                run_cmd(
                    "systemctl",
                    &["set-environment", &format!("MYSQLD_OPTS={opts}")],
                )?;
                let r = run_cmd("systemctl", &["start", unit]);
                run_cmd("systemctl", &["unset-environment", "MYSQLD_OPTS"])?;
                r?;
                self.wait_up(target)?;
            }
            ControlSpec::Commands { start, .. } => {
                run_shell(shell_command(
                    start,
                    &[("INNOPS_EXTRA_OPTS", extra.join(" "))],
                    true,
                ))?;
                self.wait_up(target)?;
            }
        }
        Ok(self.log_since(offset))
    }

    fn wait_up(&self, target: &Target) -> anyhow::Result<()> {
        let start = Instant::now();
        let mut shown = Waiting::new(
            &format!("waiting for {} to accept connections", target.label),
            self.start_timeout,
        );
        loop {
            shown.tick();
            if mysql::Conn::new(target.opts.clone()).is_ok() {
                shown.finish();
                return Ok(());
            }
            if start.elapsed() > self.start_timeout {
                shown.finish();
                return Err(anyhow::anyhow!(
                    "the server at {} did not accept connections within {}s after {}: check its error log",
                    target.label,
                    self.start_timeout.as_secs(),
                    self.spec.describe()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// The pid of a local server, from its `@@pid_file` (relative paths are in the datadir).
fn local_pid(conn: &mut mysql::Conn, tag: &str) -> Option<u32> {
    let (pid_file, datadir): (Option<String>, Option<String>) = conn
        .query_first(format!(
            "SELECT /* {tag} */ @@GLOBAL.pid_file, @@GLOBAL.datadir"
        ))
        .ok()??;
    let p = PathBuf::from(pid_file?);
    let p = if p.is_absolute() {
        p
    } else {
        Path::new(&datadir?).join(p)
    };
    let pid: u32 = std::fs::read_to_string(p).ok()?.trim().parse().ok()?;
    process::process_alive(pid).then_some(pid)
}

/// The error log of a running server, from `@@log_error` (relative paths are in the datadir).
pub fn error_log_of(log_error: &str, datadir: &str) -> Option<PathBuf> {
    let v = log_error.trim();
    if v.is_empty() || v == "stderr" {
        return None;
    }
    let p = Path::new(v);
    Some(if p.is_absolute() {
        p.to_path_buf()
    } else {
        Path::new(datadir).join(p)
    })
}

fn run_cmd(prog: &str, args: &[&str]) -> anyhow::Result<()> {
    let st = Command::new(prog)
        .args(args)
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .status()
        .with_context(|| format!("running {prog}"))?;
    if !st.success() {
        return Err(anyhow::anyhow!(
            "`{prog} {}` failed ({st}): run it by hand to see why",
            args.join(" ")
        ));
    }
    Ok(())
}

/// `/bin/sh -c CMD` with `env` added; a command that starts the server (`starts_server`) passes on no client
/// password ([`process::NOT_FOR_SERVERS`]), while a stop command may need it (`mysqladmin shutdown`).
fn shell_command(cmd: &str, env: &[(&str, String)], starts_server: bool) -> Command {
    let mut c = Command::new("/bin/sh");
    // The command's output goes to stderr: stdout carries innops's report (JSON with --format json).
    c.arg("-c")
        .arg(cmd)
        .stdout(std::process::Stdio::from(std::io::stderr()));
    for (k, v) in env {
        c.env(k, v);
    }
    if starts_server {
        process::without_client_secrets(&mut c);
    }
    c
}

fn run_shell(mut c: Command) -> anyhow::Result<()> {
    let cmd = c
        .get_args()
        .nth(1)
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_default();
    let st = c.status().with_context(|| format!("running `{cmd}`"))?;
    if !st.success() {
        return Err(anyhow::anyhow!(
            "the command `{cmd}` failed ({st}): run it by hand to see why"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_flag_parses_systemd_units_only() {
        assert_eq!(
            ControlSpec::parse_service("systemd:mariadb").unwrap(),
            ControlSpec::Systemd {
                unit: "mariadb".into()
            }
        );
        assert_eq!(
            crate::error::exit_code_of(&ControlSpec::parse_service("init:mysql").unwrap_err()),
            2
        );
        assert!(ControlSpec::parse_service("systemd:").is_err());
    }

    #[test]
    fn a_start_command_passes_on_no_client_password_and_a_stop_command_keeps_it() {
        let removed = |c: &Command| c.get_envs().any(|(k, v)| k == "MYSQL_PWD" && v.is_none());
        let start = shell_command("start-it", &[("INNOPS_EXTRA_OPTS", "--x".into())], true);
        assert!(removed(&start));
        assert!(start
            .get_envs()
            .any(|(k, v)| k == "INNOPS_EXTRA_OPTS" && v == Some(std::ffi::OsStr::new("--x"))));
        assert!(!removed(&shell_command("mysqladmin shutdown", &[], false)));
    }

    #[test]
    fn relative_error_logs_live_in_the_datadir() {
        assert_eq!(
            error_log_of("./host.err", "/var/lib/mysql/"),
            Some(PathBuf::from("/var/lib/mysql/./host.err"))
        );
        assert_eq!(
            error_log_of("/var/log/mysql/error.log", "/x"),
            Some(PathBuf::from("/var/log/mysql/error.log"))
        );
        assert_eq!(error_log_of("", "/x"), None);
    }
}
