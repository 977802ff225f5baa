//! Connection options → a reachable [`Target`], the way the mysql client resolves them: flags first, then
//! `MYSQL_PWD`, then the `[client]` group of `--defaults-file` or `~/.my.cnf`.
//!
//! A connection failure becomes one sentence naming the target and the likely fix; the password never appears
//! in any message or label.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sql::Queryable;
use mysql::{Conn, Opts, OptsBuilder};

use crate::error::{bad_input, Failure};
use crate::server::optionfile;

/// The default socket of Debian's MariaDB and MySQL packages.
pub const DEFAULT_SOCKET: &str = "/run/mysqld/mysqld.sock";

/// Connection options as the user gave them; everything optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConnSpec {
    pub socket: Option<PathBuf>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
    #[serde(skip_serializing, default)]
    pub password: Option<String>,
    pub defaults_file: Option<PathBuf>,
}

/// Where innops connects, resolved.
#[derive(Debug, Clone)]
pub struct Target {
    pub opts: Opts,
    /// `user@host:port` or `user@localhost via SOCKET`; never the password.
    pub label: String,
    /// True when the server is on this machine (socket or loopback), so its datadir can be read directly.
    pub local: bool,
}

impl ConnSpec {
    /// Fill unset fields from the `[client]` group of the option file (explicit `--defaults-file`, else
    /// `~/.my.cnf` when it exists).
    pub fn resolve(&self) -> anyhow::Result<Target> {
        let mut spec = self.clone();
        let file = match &self.defaults_file {
            Some(f) if !f.exists() => {
                return Err(bad_input(format!(
                    "the defaults file {} does not exist: check the --defaults-file path",
                    f.display()
                )))
            }
            Some(f) => Some(f.clone()),
            None => std::env::var_os("HOME")
                .map(|h| Path::new(&h).join(".my.cnf"))
                .filter(|p| p.is_file()),
        };
        if let Some(file) = file {
            let set = optionfile::read(&file).map_err(|e| {
                bad_input(format!(
                    "cannot read option file {} ({}): fix it or pass another --defaults-file",
                    file.display(),
                    crate::error::display_of(&e)
                ))
            })?;
            let groups = ["client", "innops"];
            if spec.user.is_none() {
                spec.user = set.get(&groups, "user").map(str::to_string);
            }
            if spec.password.is_none() {
                spec.password = set.get(&groups, "password").map(str::to_string);
            }
            if spec.socket.is_none() && spec.host.is_none() {
                spec.socket = set.get(&groups, "socket").map(PathBuf::from);
            }
            if spec.host.is_none() && spec.socket.is_none() {
                spec.host = set.get(&groups, "host").map(str::to_string);
            }
            if spec.port.is_none() {
                if let Some(p) = set.get(&groups, "port") {
                    spec.port = Some(p.parse().map_err(|_| {
                        bad_input(format!(
                            "port '{p}' in {} is not a number: fix the [client] group",
                            file.display()
                        ))
                    })?);
                }
            }
        }
        Ok(to_target(&spec))
    }
}

/// Build the target from a fully resolved spec.
pub(crate) fn to_target(spec: &ConnSpec) -> Target {
    let user = spec.user.clone().unwrap_or_else(|| "root".to_string());
    let host = spec.host.clone().unwrap_or_else(|| "localhost".to_string());
    // Like the mysql client: "localhost" without a port means the socket.
    let use_socket = spec.socket.is_some() || (host == "localhost" && spec.port.is_none());
    let mut b = OptsBuilder::new()
        .user(Some(user.clone()))
        .pass(spec.password.clone())
        .tcp_connect_timeout(Some(Duration::from_secs(10)))
        .prefer_socket(false);
    let (label, local) = if use_socket {
        let socket = spec
            .socket
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_SOCKET));
        b = b.socket(Some(socket.to_string_lossy().to_string()));
        (
            format!("{user}@localhost via socket {}", socket.display()),
            true,
        )
    } else {
        let port = spec.port.unwrap_or(3306);
        let ip = if host == "localhost" {
            "127.0.0.1".to_string()
        } else {
            host.clone()
        };
        let local = ip == "::1" || ip.starts_with("127.");
        b = b.ip_or_hostname(Some(ip)).tcp_port(port);
        (format!("{user}@{host}:{port}"), local)
    };
    Target {
        opts: Opts::from(b),
        label,
        local,
    }
}

impl Target {
    /// Connect, tag the session, and turn failures into one sentence with the fix.
    pub fn connect(&self) -> anyhow::Result<Conn> {
        match Conn::new(self.opts.clone()) {
            Ok(c) => Ok(c),
            Err(e) => Err(Failure::BadInput(describe_connect_error(&self.label, &e)).into()),
        }
    }

    /// Connect and run one query returning the first column of the first row.
    pub fn query_first_string(&self, sql: &str) -> anyhow::Result<Option<String>> {
        let mut c = self.connect()?;
        Ok(c.query_first::<Option<String>, _>(sql)?.flatten())
    }
}

/// One sentence for a connection failure.
pub fn describe_connect_error(label: &str, e: &mysql::Error) -> String {
    use mysql::{DriverError, Error};
    match e {
        Error::MySqlError(me) if me.code == 1045 || me.code == 1698 => format!(
            "the server at {label} refused the credentials ({}): check --user and --password (or MYSQL_PWD, or the [client] group of ~/.my.cnf)",
            me.message
        ),
        Error::MySqlError(me) if me.code == 1049 => {
            format!("the server at {label} has no such database ({}): check the database name", me.message)
        }
        Error::MySqlError(me) => {
            format!("the server at {label} refused the connection with error {} ({}): fix that and retry", me.code, me.message)
        }
        Error::IoError(io) => io_sentence(label, io.kind(), &io.to_string()),
        Error::DriverError(DriverError::CouldNotConnect(Some((_, desc, kind)))) => io_sentence(label, *kind, desc),
        Error::DriverError(DriverError::ConnectTimeout) => {
            format!("connecting to {label} timed out: check the host, the port and any firewall in between")
        }
        other => format!(
            "cannot connect to {label} ({}): check the connection options",
            crate::error::mysql_detail(other)
        ),
    }
}

fn io_sentence(label: &str, kind: std::io::ErrorKind, detail: &str) -> String {
    use std::io::ErrorKind::*;
    match kind {
        NotFound => format!(
            "cannot connect to {label}: the socket does not exist; is the server running, and is --socket right?"
        ),
        ConnectionRefused => {
            format!("cannot connect to {label}: connection refused; is the server running, and are --host/--port/--socket right?")
        }
        PermissionDenied => {
            format!("cannot connect to {label}: permission denied on the socket; run as a user that may open it")
        }
        _ => format!("cannot connect to {label} ({detail}): check that the server is running and the connection options"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_options_means_root_on_the_default_socket() {
        let t = to_target(&ConnSpec::default());
        assert_eq!(
            t.label,
            format!("root@localhost via socket {DEFAULT_SOCKET}")
        );
        assert!(t.local);
        assert_eq!(t.opts.get_socket(), Some(DEFAULT_SOCKET));
    }

    #[test]
    fn a_port_means_tcp_and_the_label_never_holds_the_password() {
        let spec = ConnSpec {
            port: Some(3307),
            user: Some("dba".into()),
            password: Some("s3cret".into()),
            ..Default::default()
        };
        let t = to_target(&spec);
        assert_eq!(t.label, "dba@localhost:3307");
        assert!(!t.label.contains("s3cret"));
        assert_eq!(t.opts.get_tcp_port(), 3307);
        assert_eq!(t.opts.get_socket(), None);
        let json = serde_json::to_string(&spec).unwrap();
        assert!(!json.contains("s3cret"), "{json}");
    }

    #[test]
    fn a_missing_defaults_file_is_bad_input_naming_the_file() {
        let spec = ConnSpec {
            defaults_file: Some("/nonexistent/my.cnf".into()),
            ..Default::default()
        };
        let err = spec.resolve().unwrap_err();
        assert_eq!(crate::error::exit_code_of(&err), 2);
        assert!(err.to_string().contains("/nonexistent/my.cnf"));
    }
}
