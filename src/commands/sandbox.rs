//! `innops sandbox up|stop|start|down|list`: throwaway local servers, created, controlled and listed.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use super::env::sandbox_root;
use crate::cli::{Format, SandboxArgs};
use crate::error::refused;
use crate::server::control::{self, Control, ControlSpec};
use crate::server::sandbox::{Sandbox, SandboxOptions, ServerChoice};

/// How to reach a sandbox over TCP: root has a generated password there, kept in a 0600 file.
fn tcp_hint(sb: &Sandbox) -> String {
    match &sb.client_file {
        Some(f) => format!(
            "  over TCP: mariadb --defaults-file={}   (root's password for 127.0.0.1:{} is in that file, readable by you only)\n",
            f.display(),
            sb.port
        ),
        None => String::new(),
    }
}

pub fn run(args: SandboxArgs) -> anyhow::Result<()> {
    use crate::cli::SandboxAction;
    let root = sandbox_root(&args.root);
    let json = args.fmt.format == Format::Json;
    match args.action {
        SandboxAction::Up {
            name,
            buffer_pool,
            mariadbd,
            port,
            binlog,
            replica_of,
        } => up(
            &root,
            &name,
            SandboxOptions {
                buffer_pool,
                binlog: binlog || replica_of.is_some(),
                replica: replica_of.is_some(),
                ..Default::default()
            },
            ServerChoice {
                port,
                binary: mariadbd,
            },
            replica_of.as_deref(),
            json,
        ),
        SandboxAction::Stop { name } => stop(&root, &name, json),
        SandboxAction::Start { name } => start(&root, &name, json),
        SandboxAction::Down { name } => down(&root, &name, json),
        SandboxAction::List => list(&root, json),
    }
}

/// Sandboxes start (and stop) within this.
const TIMEOUT: Duration = Duration::from_secs(600);

/// The first `[ERROR]` line of a server's log that gives a reason (not the closing "Aborting"), without its
/// time stamp.
fn first_reason(log: &str) -> Option<String> {
    log.lines()
        .filter_map(|l| l.split_once("[ERROR]").map(|(_, r)| r.trim()))
        .find(|r| !r.is_empty() && !r.eq_ignore_ascii_case("aborting"))
        .map(str::to_string)
}

fn up(
    root: &Path,
    name: &str,
    opts: SandboxOptions,
    choice: ServerChoice,
    replica_of: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    // The primary first: a replica of a sandbox that is not there or not running is refused before anything is made.
    let primary = match replica_of {
        Some(p) => {
            let primary = Sandbox::open(root, p)?;
            if !primary.is_running() {
                return Err(refused(format!(
                    "sandbox '{p}' is not running, so it cannot take a replica: start it with `innops sandbox start {p}`"
                )));
            }
            Some(primary)
        }
        None => None,
    };
    let mut sb = Sandbox::create_on(root, name, &opts, &choice)?;
    if let Err(e) = sb.start(&[], TIMEOUT) {
        // A sandbox that never came up is not kept, but its error log is (beside the sandboxes, by its name),
        // and the first error that says why is in the message ("Aborting" says only that it stopped).
        let log = std::fs::read_to_string(&sb.error_log).unwrap_or_default();
        let why = first_reason(&log);
        let kept = root.join(format!("{name}.failed-start.log"));
        let kept = if !log.is_empty() && crate::files::write_private(&kept, log.as_bytes()).is_ok()
        {
            format!("; its error log is kept at {}", kept.display())
        } else {
            String::new()
        };
        let _ = sb.destroy();
        drop(e);
        return Err(match why {
            Some(line) => anyhow::anyhow!(
                "sandbox '{name}' did not start and was removed; the server said: {line}{kept}"
            ),
            None => anyhow::anyhow!(
                "sandbox '{name}' did not start and was removed; the server logged no error: check that {} runs as a server and that --buffer-pool fits in memory{kept}",
                sb.binary.display()
            ),
        });
    }
    if let Some(primary) = &primary {
        // A replica that cannot follow its primary is not kept.
        if let Err(e) = sb.replicate_from(primary, TIMEOUT) {
            let _ = sb.destroy();
            return Err(e);
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&sb)?);
    } else {
        println!(
            "sandbox '{}' is up: mariadb -S {} -uroot   (or --sandbox {} for innops)\n{}  datadir {}\n  port {}  error log {}\n  option file {}",
            sb.name,
            sb.socket.display(),
            sb.name,
            tcp_hint(&sb),
            sb.datadir.display(),
            sb.port,
            sb.error_log.display(),
            sb.option_file.display()
        );
        if let Some(p) = &primary {
            println!(
                "  replica of '{}' (127.0.0.1:{}): read_only, caught up with every row it had; `innops inspect --sandbox {}` shows the topology",
                p.name, p.port, sb.name
            );
        } else if opts.binlog {
            println!(
                "  binary log on (ROW, GTID strict): add replicas with `innops sandbox up NAME --replica-of {}`",
                sb.name
            );
        }
    }
    Ok(())
}

fn stop(root: &Path, name: &str, json: bool) -> anyhow::Result<()> {
    let sb = Sandbox::open(root, name)?;
    if !sb.is_running() {
        return Err(refused(format!(
            "sandbox '{name}' is not running: nothing to stop"
        )));
    }
    let control = Control::new(
        ControlSpec::Sandbox {
            root: root.to_path_buf(),
            name: name.to_string(),
        },
        None,
    );
    let rec = control.stop(
        &sb.conn_spec().resolve_plain(),
        control::StopMode::Clean,
        "innops:sandbox:stop",
    )?;
    if json {
        println!(
            "{}",
            serde_json::json!({"sandbox": name, "running": false, "clean_shutdown": rec.clean})
        );
    } else {
        println!(
            "sandbox '{name}' stopped ({})",
            if rec.clean {
                "clean shutdown"
            } else {
                "no clean-shutdown line in the log"
            }
        );
    }
    Ok(())
}

fn start(root: &Path, name: &str, json: bool) -> anyhow::Result<()> {
    let mut sb = Sandbox::open(root, name)?;
    sb.start(&[], TIMEOUT)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&sb)?);
    } else {
        println!(
            "sandbox '{name}' started: mariadb -S {} -uroot\n{}",
            sb.socket.display(),
            tcp_hint(&sb).trim_end()
        );
    }
    Ok(())
}

fn down(root: &Path, name: &str, json: bool) -> anyhow::Result<()> {
    let sb = Sandbox::open(root, name)?;
    sb.destroy()?;
    if json {
        println!("{}", serde_json::json!({"sandbox": name, "deleted": true}));
    } else {
        println!("sandbox '{name}' stopped and deleted");
    }
    Ok(())
}

fn list(root: &Path, json: bool) -> anyhow::Result<()> {
    let list = Sandbox::list(root)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else if list.is_empty() {
        println!("no sandboxes in {}", root.display());
    } else {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{:<20} {:<8} {:<11} SOCKET", "NAME", "STATUS", "PORT")?;
        for s in list {
            writeln!(
                out,
                "{:<20} {:<8} {:<11} {}",
                s.sandbox.name,
                if s.running { "running" } else { "stopped" },
                s.sandbox.port,
                s.sandbox.socket.display()
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_a_server_did_not_start_is_its_first_error_not_aborting() {
        let log = "2026-12-03  7:20:32 0 [Note] Starting\n\
2026-12-03  7:20:32 0 [ERROR] InnoDB: Cannot allocate memory for the buffer pool\n\
2026-12-03  7:20:32 0 [ERROR] Plugin 'InnoDB' init function returned error.\n\
2026-12-03  7:20:32 0 [ERROR] Aborting\n";
        assert_eq!(
            first_reason(log).as_deref(),
            Some("InnoDB: Cannot allocate memory for the buffer pool")
        );
        assert_eq!(first_reason("0 [ERROR] Aborting\n"), None);
        assert_eq!(first_reason(""), None);
    }
}
