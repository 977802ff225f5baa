//! From the connection flags to where the server is and how innops may handle it: `--sandbox` or the
//! connection and control flags resolved into a [`PlanEnv`] and a [`Control`], and the error log learned once
//! connected. Every subcommand that reaches a server starts here.

use std::path::PathBuf;

use crate::cli::{ConnArgs, ControlArgs, Format, ProtocolArg, SandboxRootArg, SslModeArg};
use crate::error::bad_input;
use crate::procedures::PlanEnv;
use crate::server::connect::{ConnSpec, Protocol, SslMode};
use crate::server::control::{self, Control, ControlSpec};
use crate::server::facts::ServerFacts;
use crate::server::optionfile;
use crate::server::sandbox::{self, Sandbox};

/// Where the server is and how innops may handle it.
pub struct Env {
    pub plan_env: PlanEnv,
    pub control: Option<Control>,
    pub format: Format,
}

/// Where sandboxes live: `--sandbox-root`, else the default.
pub fn sandbox_root(args: &SandboxRootArg) -> PathBuf {
    args.sandbox_root
        .clone()
        .unwrap_or_else(sandbox::default_root)
}

/// `--sandbox` says where the server is and how to control it: any other flag saying so conflicts with it.
fn check_sandbox_flags(args: &ConnArgs, control: &ControlArgs) -> anyhow::Result<()> {
    let Some(name) = &args.sandbox else {
        return Ok(());
    };
    let given: Vec<&str> = [
        ("--socket", args.socket.is_some()),
        ("--host", args.host.is_some()),
        ("--port", args.port.is_some()),
        // The sandbox's own account is the one its client file names; another was silently ignored.
        ("--user", args.user.is_some()),
        ("--defaults-file", args.defaults_file.is_some()),
        ("--defaults-extra-file", args.defaults_extra_file.is_some()),
        ("--no-defaults", args.no_defaults),
        // -p alone would ask for a password the sandbox does not use.
        ("-p", matches!(args.password, Some(None))),
        ("--protocol", args.protocol.is_some()),
        ("--ssl-mode", args.ssl_mode.is_some()),
        ("--ssl-ca", args.ssl_ca.is_some()),
        ("--ssl-cert", args.ssl_cert.is_some()),
        ("--ssl-key", args.ssl_key.is_some()),
        ("--ssl", args.ssl),
        ("--skip-ssl", args.skip_ssl),
        ("--ssl-capath", args.ssl_capath.is_some()),
        ("--ssl-cipher", args.ssl_cipher.is_some()),
        ("--ssl-crl", args.ssl_crl.is_some()),
        ("--ssl-crlpath", args.ssl_crlpath.is_some()),
        ("--ssl-verify-server-cert", args.ssl_verify_server_cert),
        ("--tls-version", args.tls_version.is_some()),
        (
            "--defaults-group-suffix",
            args.defaults_group_suffix.is_some(),
        ),
        ("--service", control.service.is_some()),
        ("--start-cmd", control.start_cmd.is_some()),
        ("--stop-cmd", control.stop_cmd.is_some()),
        ("--config-file", control.config_file.is_some()),
    ]
    .into_iter()
    .filter_map(|(flag, set)| set.then_some(flag))
    .collect();
    if given.is_empty() {
        return Ok(());
    }
    Err(bad_input(format!(
        "--sandbox {name} already says where the server is and how to control it: drop {}, or drop --sandbox",
        given.join(" and ")
    )))
}

/// The connection flags as the server layer takes them; `-p` alone asks for the password on the terminal.
pub fn conn_spec(args: &ConnArgs) -> anyhow::Result<ConnSpec> {
    let password = match &args.password {
        Some(None) => Some(super::password::ask()?),
        Some(Some(p)) => Some(p.clone()),
        None => None,
    };
    Ok(ConnSpec {
        socket: args.socket.clone(),
        host: args.host.clone(),
        port: args.port,
        user: args.user.clone(),
        password,
        defaults_file: args.defaults_file.clone(),
        defaults_extra_file: args.defaults_extra_file.clone(),
        no_defaults: args.no_defaults,
        protocol: args.protocol.map(|p| match p {
            ProtocolArg::Tcp => Protocol::Tcp,
            ProtocolArg::Socket => Protocol::Socket,
        }),
        ssl_mode: args.ssl_mode.map(|m| match m {
            SslModeArg::Disabled => SslMode::Disabled,
            SslModeArg::Preferred => SslMode::Preferred,
            SslModeArg::Required => SslMode::Required,
            SslModeArg::VerifyCa => SslMode::VerifyCa,
            SslModeArg::VerifyIdentity => SslMode::VerifyIdentity,
        }),
        ssl_ca: args.ssl_ca.clone(),
        ssl_cert: args.ssl_cert.clone(),
        ssl_key: args.ssl_key.clone(),
        ssl: if args.skip_ssl {
            Some(false)
        } else {
            args.ssl.then_some(true)
        },
        ssl_capath: args.ssl_capath.clone(),
        ssl_cipher: args.ssl_cipher.clone(),
        ssl_crl: args.ssl_crl.clone(),
        ssl_crlpath: args.ssl_crlpath.clone(),
        ssl_verify_server_cert: args.ssl_verify_server_cert.then_some(true),
        tls_version: args.tls_version.clone(),
        defaults_group_suffix: args.defaults_group_suffix.clone(),
    })
}

/// Resolve connection, control and option file from the flags; `control` is empty for commands that never
/// stop or start the server.
pub fn env_from(
    args: &ConnArgs,
    ctl: &ControlArgs,
    format: Format,
    bench_time: Option<u64>,
) -> anyhow::Result<Env> {
    env_over(args, ctl, None, format, bench_time)
}

/// As [`env_from`], the connection settings given now over `recorded` ones (a resumed run's): what the
/// user gives wins, the rest comes from the record.
pub fn env_over(
    args: &ConnArgs,
    ctl: &ControlArgs,
    recorded: Option<&ConnSpec>,
    format: Format,
    bench_time: Option<u64>,
) -> anyhow::Result<Env> {
    check_sandbox_flags(args, ctl)?;
    let (conn, control_spec, option_file) = if let Some(name) = &args.sandbox {
        let root = sandbox_root(&args.root);
        let sb = Sandbox::open(&root, name)?;
        (
            sb.conn_spec(),
            Some(ControlSpec::Sandbox {
                root,
                name: name.clone(),
            }),
            Some(sb.option_file),
        )
    } else {
        let conn = match recorded {
            Some(then) => conn_spec(args)?.over(then),
            None => conn_spec(args)?,
        };
        let control = match (&ctl.service, &ctl.start_cmd) {
            (Some(_), Some(_)) => {
                return Err(bad_input(
                    "--service and --start-cmd both say how to start the server: give one",
                ))
            }
            (Some(s), None) => Some(ControlSpec::parse_service(s)?),
            (None, Some(start)) => Some(ControlSpec::Commands {
                start: start.clone(),
                stop: ctl.stop_cmd.clone(),
            }),
            (None, None) if ctl.stop_cmd.is_some() => return Err(bad_input(
                "--stop-cmd needs --start-cmd too: innops must be able to start the server again",
            )),
            (None, None) => None,
        };
        let option_file = ctl.config_file.clone().or_else(|| {
            matches!(control, Some(ControlSpec::Systemd { .. }))
                .then(|| PathBuf::from("/etc/mysql/my.cnf"))
                .filter(|p| p.exists())
        });
        if let Some(f) = &ctl.config_file {
            if !f.is_file() {
                return Err(bad_input(format!(
                    "--config-file {} does not exist: give the option file the server reads",
                    f.display()
                )));
            }
        }
        (conn, control, option_file)
    };
    let target = if args.sandbox.is_some() {
        conn.resolve_plain()
    } else {
        conn.resolve()?
    };
    let dropin = match &option_file {
        Some(f) => optionfile::choose_dropin(f).map_err(|e| crate::error::display_of(&e)),
        None => Err("innops does not know the server's option file: pass --config-file (for example /etc/mysql/my.cnf) so the new setting survives a restart".to_string()),
    };
    let control = control_spec.clone().map(|spec| Control::new(spec, None));
    Ok(Env {
        plan_env: PlanEnv {
            conn,
            target,
            control: control_spec,
            option_file,
            dropin,
            bench_time,
            error_log: None,
        },
        control,
        format,
    })
}

/// Learn the error log of a local server once connected, for control backends that do not know it.
pub fn attach_error_log(env: &mut Env, facts: &ServerFacts) {
    // A loopback port may lead into a container or a VM: the datadir is on this machine only when the server
    // says it runs on this host.
    if env.plan_env.conn.socket.is_none() && env.plan_env.target.local {
        let ours = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        if facts.var("hostname").is_some_and(|h| h != ours.trim()) {
            env.plan_env.target.local = false;
        }
    }
    if let Some(c) = env.control.as_mut() {
        if c.error_log.is_none() && env.plan_env.target.local {
            c.error_log = control::error_log_of(
                facts.var("log_error").unwrap_or(""),
                facts.var("datadir").unwrap_or(""),
            );
        }
    }
    let log = env
        .control
        .as_ref()
        .and_then(|c| c.error_log.clone())
        .or_else(|| {
            env.plan_env
                .target
                .local
                .then(|| {
                    control::error_log_of(
                        facts.var("log_error").unwrap_or(""),
                        facts.var("datadir").unwrap_or(""),
                    )
                })
                .flatten()
        });
    env.plan_env.error_log = log.map(|p| {
        let end = crate::server::errorlog::end_offset(&p);
        (p, end)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::connect::{Protocol, SslMode};
    use clap::Parser;

    #[derive(Parser)]
    #[command(disable_help_flag = true)]
    struct Only {
        #[command(flatten)]
        conn: ConnArgs,
    }

    fn every_setting() -> ConnSpec {
        ConnSpec {
            socket: Some("/run/my sql/mysqld.sock".into()),
            host: Some("db-1.example".into()),
            port: Some(3307),
            user: Some("o'brien".into()),
            password: None,
            defaults_file: None,
            defaults_extra_file: Some("/etc/innops extra.cnf".into()),
            no_defaults: false,
            protocol: Some(Protocol::Tcp),
            ssl_mode: Some(SslMode::VerifyIdentity),
            ssl_ca: Some("/etc/ssl/ca.pem".into()),
            ssl_cert: Some("/etc/ssl/client cert.pem".into()),
            ssl_key: Some("/etc/ssl/client.key".into()),
            ssl: Some(true),
            ssl_capath: Some("/etc/ssl/certs".into()),
            ssl_cipher: Some("TLS_AES_256_GCM_SHA384:ECDHE-RSA-AES128-GCM-SHA256".into()),
            ssl_crl: Some("/etc/ssl/crl.pem".into()),
            ssl_crlpath: Some("/etc/ssl/crls".into()),
            ssl_verify_server_cert: Some(true),
            tls_version: Some("TLSv1.2,TLSv1.3".into()),
            defaults_group_suffix: Some("_staging".into()),
        }
    }

    /// Parse what innops prints, as a shell would split it, with innops's own flags.
    fn parse_back(printed: &str) -> ConnSpec {
        let words = shell_words::split(printed).unwrap();
        let only =
            Only::try_parse_from(std::iter::once("innops".to_string()).chain(words)).unwrap();
        conn_spec(&only.conn).unwrap()
    }

    #[test]
    fn the_flags_innops_prints_give_back_every_connection_setting() {
        let spec = every_setting();
        assert_eq!(parse_back(&shell_words::join(spec.flags())), spec);
        let other = ConnSpec {
            ssl: Some(false),
            ssl_verify_server_cert: None,
            defaults_extra_file: None,
            defaults_file: Some("/etc/my.cnf".into()),
            protocol: Some(Protocol::Socket),
            ..every_setting()
        };
        assert_eq!(parse_back(&shell_words::join(other.flags())), other);
        let bare = ConnSpec {
            no_defaults: true,
            ..Default::default()
        };
        assert_eq!(parse_back(&shell_words::join(bare.flags())), bare);
        let password = ConnSpec {
            password: Some("secret".into()),
            ..every_setting()
        };
        assert!(!shell_words::join(password.flags()).contains("secret"));
    }

    #[test]
    fn a_resumed_run_keeps_its_recorded_settings_unless_given_again() {
        let then = every_setting();
        let none_given = ConnSpec::default().over(&then);
        assert_eq!(none_given, then);
        let given = ConnSpec {
            user: Some("admin".into()),
            ssl: Some(false),
            ssl_mode: Some(SslMode::Required),
            password: Some("now".into()),
            ..Default::default()
        };
        let merged = given.over(&then);
        assert_eq!(merged.user.as_deref(), Some("admin"));
        assert_eq!(merged.ssl, Some(false), "--skip-ssl given now wins");
        assert_eq!(merged.ssl_mode, Some(SslMode::Required));
        assert_eq!(merged.password.as_deref(), Some("now"));
        assert_eq!(merged.ssl_ca, then.ssl_ca);
        assert_eq!(merged.tls_version, then.tls_version);
        assert_eq!(merged.socket, then.socket);
    }
}
