//! Connection options → a reachable [`Target`], the way the mysql client resolves them: flags first, then
//! `MYSQL_PWD`, then the `[innops]` and `[client]` groups of `--defaults-file` or `~/.my.cnf`; `--protocol`
//! and TLS (`--ssl-mode` and friends) as the mysql client takes them.
//!
//! A connection failure becomes one sentence naming the target and the likely fix; the password never appears
//! in any message or label.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sql::Queryable;
use mysql::{ClientIdentity, Conn, Opts, OptsBuilder, SslOpts};

pub use super::connect_error::describe_connect_error;
use super::connect_error::is_rustls;
use crate::error::{bad_input, Failure};
use crate::server::client_options::{bool_option, tls_cipher_suites, with_full_names};
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
    /// Read after the global option files, before `~/.my.cnf` (`--defaults-extra-file`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults_extra_file: Option<PathBuf>,
    /// Read no option file (`--no-defaults`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_defaults: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_mode: Option<SslMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_ca: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_cert: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_key: Option<PathBuf>,
    /// `--ssl` / `--skip-ssl` (`ssl`, `skip-ssl`, `disable-ssl` in option files): `Some(false)` asks for
    /// a plain connection unless a CA or `ssl-verify-server-cert` asks for more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl: Option<bool>,
    /// A directory of CA certificates (`--ssl-capath`): the mariadb client checks the server's certificate
    /// against it. innops cannot read such a directory, so it refuses when it is the only CA given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_capath: Option<PathBuf>,
    /// The ciphers allowed (`--ssl-cipher`, OpenSSL's names separated by `:`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_cipher: Option<String>,
    /// A certificate revocation list (`--ssl-crl`); innops cannot check one, so it refuses when the
    /// certificate is checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_crl: Option<PathBuf>,
    /// A directory of certificate revocation lists (`--ssl-crlpath`); as `ssl_crl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_crlpath: Option<PathBuf>,
    /// `--ssl-verify-server-cert`: TLS or no connection, the certificate checked against the CA and the host
    /// name (the mariadb client's ERROR 2026 when the server offers no TLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_verify_server_cert: Option<bool>,
    /// The TLS versions allowed (`--tls-version`, e.g. `TLSv1.2,TLSv1.3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_version: Option<String>,
    /// Also read each option group with this suffix (`--defaults-group-suffix`, else `MYSQL_GROUP_SUFFIX`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defaults_group_suffix: Option<String>,
}

/// `--protocol`: how to reach the server (the mysql client's PIPE and MEMORY are Windows-only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Protocol {
    Tcp,
    Socket,
}

impl Protocol {
    /// The option file's spelling, any case.
    pub fn parse(s: &str) -> Option<Protocol> {
        match s.to_ascii_uppercase().as_str() {
            "TCP" => Some(Protocol::Tcp),
            "SOCKET" => Some(Protocol::Socket),
            _ => None,
        }
    }
}

/// `--ssl-mode`, with the mysql client's meanings, weakest first. TLS applies to TCP only: a socket is
/// already private.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SslMode {
    /// Plain.
    Disabled,
    /// TLS when the server offers it, else plain; the certificate is not checked.
    Preferred,
    /// TLS or no connection; the certificate is not checked.
    Required,
    /// TLS with a certificate signed by `--ssl-ca`.
    VerifyCa,
    /// As VerifyCa, and the certificate names the host innops connects to.
    VerifyIdentity,
}

impl SslMode {
    /// The option file's spelling, any case.
    pub fn parse(s: &str) -> Option<SslMode> {
        Some(match s.to_ascii_uppercase().replace('-', "_").as_str() {
            "DISABLED" => SslMode::Disabled,
            "PREFERRED" => SslMode::Preferred,
            "REQUIRED" => SslMode::Required,
            "VERIFY_CA" => SslMode::VerifyCa,
            "VERIFY_IDENTITY" => SslMode::VerifyIdentity,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disabled => "DISABLED",
            SslMode::Preferred => "PREFERRED",
            SslMode::Required => "REQUIRED",
            SslMode::VerifyCa => "VERIFY_CA",
            SslMode::VerifyIdentity => "VERIFY_IDENTITY",
        }
    }
}

/// The keys innops reads from the `[client]` and `[innops]` groups (normalised: `ssl-mode` is `ssl_mode`). An
/// `[innops]` key outside this list is reported; `[client]` belongs to every client and may hold anything.
pub const OPTION_FILE_KEYS: &[&str] = &[
    "user",
    "password",
    "host",
    "port",
    "socket",
    "protocol",
    "ssl_mode",
    "ssl_ca",
    "ssl_cert",
    "ssl_key",
    "ssl",
    "ssl_capath",
    "ssl_cipher",
    "ssl_crl",
    "ssl_crlpath",
    "ssl_verify_server_cert",
    "tls_version",
];

/// The boolean keys, which also come as `skip-KEY`, `disable-KEY` and `enable-KEY`.
const BOOLEAN_KEYS: &[&str] = &["ssl", "ssl_verify_server_cert"];

/// Whether innops reads `key` (normalised) from an option file.
fn reads_key(key: &str) -> bool {
    OPTION_FILE_KEYS.contains(&key)
        || ["skip_", "disable_", "enable_"].iter().any(|p| {
            key.strip_prefix(p)
                .is_some_and(|rest| BOOLEAN_KEYS.contains(&rest))
        })
}

/// Where innops connects, resolved.
#[derive(Debug, Clone)]
pub struct Target {
    pub opts: Opts,
    /// `user@host:port` or `user@localhost via SOCKET`; never the password.
    pub label: String,
    /// True when the server is on this machine (socket or loopback), so its datadir can be read directly.
    pub local: bool,
    /// The TLS mode of a TCP connection that asks for TLS; `None` for plain or a socket.
    pub ssl_mode: Option<SslMode>,
}

impl ConnSpec {
    /// The flags that give this spec on innops's command line (never the password): what innops prints in
    /// every command it suggests, so the command reaches the server as the user's did, TLS and protocol
    /// included. Every field is named here, so a new one cannot be forgotten.
    pub fn flags(&self) -> Vec<String> {
        let ConnSpec {
            socket,
            host,
            port,
            user,
            password: _,
            defaults_file,
            defaults_extra_file,
            no_defaults,
            protocol,
            ssl_mode,
            ssl_ca,
            ssl_cert,
            ssl_key,
            ssl,
            ssl_capath,
            ssl_cipher,
            ssl_crl,
            ssl_crlpath,
            ssl_verify_server_cert,
            tls_version,
            defaults_group_suffix,
        } = self;
        let mut out = Vec::new();
        let mut flag = |name: &str, value: Option<String>| {
            if let Some(v) = value {
                out.push(format!("--{name}"));
                out.push(v);
            }
        };
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        flag("socket", path(socket));
        flag("host", host.clone());
        flag("port", port.map(|p| p.to_string()));
        flag("user", user.clone());
        flag("defaults-file", path(defaults_file));
        flag("defaults-extra-file", path(defaults_extra_file));
        flag("defaults-group-suffix", defaults_group_suffix.clone());
        flag(
            "protocol",
            protocol.map(|p| {
                match p {
                    Protocol::Tcp => "TCP",
                    Protocol::Socket => "SOCKET",
                }
                .to_string()
            }),
        );
        flag(
            "ssl-mode",
            ssl_mode.map(|m| {
                match m {
                    SslMode::Disabled => "DISABLED",
                    SslMode::Preferred => "PREFERRED",
                    SslMode::Required => "REQUIRED",
                    SslMode::VerifyCa => "VERIFY_CA",
                    SslMode::VerifyIdentity => "VERIFY_IDENTITY",
                }
                .to_string()
            }),
        );
        flag("ssl-ca", path(ssl_ca));
        flag("ssl-capath", path(ssl_capath));
        flag("ssl-cert", path(ssl_cert));
        flag("ssl-key", path(ssl_key));
        flag("ssl-cipher", ssl_cipher.clone());
        flag("ssl-crl", path(ssl_crl));
        flag("ssl-crlpath", path(ssl_crlpath));
        flag("tls-version", tls_version.clone());
        if *no_defaults {
            out.push("--no-defaults".into());
        }
        match ssl {
            Some(true) => out.push("--ssl".into()),
            Some(false) => out.push("--skip-ssl".into()),
            None => {}
        }
        if *ssl_verify_server_cert == Some(true) {
            out.push("--ssl-verify-server-cert".into());
        }
        out
    }

    /// This spec (what the user gave now) over `then` (what a run recorded): each setting given now wins, the
    /// rest comes from the record. Every field is named here, so a new one cannot be forgotten.
    pub fn over(self, then: &ConnSpec) -> ConnSpec {
        let ConnSpec {
            socket,
            host,
            port,
            user,
            password,
            defaults_file,
            defaults_extra_file,
            no_defaults,
            protocol,
            ssl_mode,
            ssl_ca,
            ssl_cert,
            ssl_key,
            ssl,
            ssl_capath,
            ssl_cipher,
            ssl_crl,
            ssl_crlpath,
            ssl_verify_server_cert,
            tls_version,
            defaults_group_suffix,
        } = self;
        ConnSpec {
            socket: socket.or_else(|| then.socket.clone()),
            host: host.or_else(|| then.host.clone()),
            port: port.or(then.port),
            user: user.or_else(|| then.user.clone()),
            password: password.or_else(|| then.password.clone()),
            defaults_file: defaults_file.or_else(|| then.defaults_file.clone()),
            defaults_extra_file: defaults_extra_file.or_else(|| then.defaults_extra_file.clone()),
            no_defaults: no_defaults || then.no_defaults,
            protocol: protocol.or(then.protocol),
            ssl_mode: ssl_mode.or(then.ssl_mode),
            ssl_ca: ssl_ca.or_else(|| then.ssl_ca.clone()),
            ssl_cert: ssl_cert.or_else(|| then.ssl_cert.clone()),
            ssl_key: ssl_key.or_else(|| then.ssl_key.clone()),
            ssl: ssl.or(then.ssl),
            ssl_capath: ssl_capath.or_else(|| then.ssl_capath.clone()),
            ssl_cipher: ssl_cipher.or_else(|| then.ssl_cipher.clone()),
            ssl_crl: ssl_crl.or_else(|| then.ssl_crl.clone()),
            ssl_crlpath: ssl_crlpath.or_else(|| then.ssl_crlpath.clone()),
            ssl_verify_server_cert: ssl_verify_server_cert.or(then.ssl_verify_server_cert),
            tls_version: tls_version.or_else(|| then.tls_version.clone()),
            defaults_group_suffix: defaults_group_suffix
                .or_else(|| then.defaults_group_suffix.clone()),
        }
    }

    /// The option files to read, in the mysql client's order (a later file's value wins): `--no-defaults`
    /// reads none, `--defaults-file` only that one; else the global files that exist, then
    /// `--defaults-extra-file`, then `~/.my.cnf` when it exists.
    pub fn option_files(&self) -> anyhow::Result<Vec<PathBuf>> {
        let home = std::env::var_os("HOME").map(|h| Path::new(&h).join(".my.cnf"));
        let global = global_option_files(|v| std::env::var_os(v));
        let global: Vec<&str> = global.iter().map(String::as_str).collect();
        self.option_files_in(&global, home.as_deref())
    }

    /// The group suffix in force: `--defaults-group-suffix`, else `MYSQL_GROUP_SUFFIX`.
    pub fn group_suffix(&self) -> Option<String> {
        self.defaults_group_suffix
            .clone()
            .filter(|s| !s.is_empty())
            .or_else(optionfile::group_suffix_from_env)
    }

    fn option_files_in(
        &self,
        global: &[&str],
        home: Option<&Path>,
    ) -> anyhow::Result<Vec<PathBuf>> {
        let must_exist = |f: &PathBuf, flag: &str| -> anyhow::Result<PathBuf> {
            if f.is_file() {
                Ok(f.clone())
            } else {
                Err(bad_input(format!(
                    "the option file {} does not exist: check the {flag} path",
                    f.display()
                )))
            }
        };
        if self.no_defaults {
            return Ok(Vec::new());
        }
        if let Some(f) = &self.defaults_file {
            return Ok(vec![must_exist(f, "--defaults-file")?]);
        }
        let mut files: Vec<PathBuf> = global
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.is_file())
            .collect();
        if let Some(f) = &self.defaults_extra_file {
            files.push(must_exist(f, "--defaults-extra-file")?);
        }
        files.extend(home.filter(|p| p.is_file()).map(Path::to_path_buf));
        Ok(files)
    }

    /// Fill unset fields from the option files the mysql client reads ([`ConnSpec::option_files`]): their
    /// `[innops]` group, else `[client]`, `[client-server]` or `[client-mariadb]` (each also with the group
    /// suffix). TLS options the server cannot be reached with as the mariadb client would be are refused.
    pub fn resolve(&self) -> anyhow::Result<Target> {
        let mut spec = self.clone();
        let mut all = optionfile::OptionSet::default();
        let mut last = None;
        for file in self.option_files()? {
            let set = optionfile::read(&file).map_err(|e| {
                bad_input(format!(
                    "cannot read option file {} ({}): fix it or pass another --defaults-file",
                    file.display(),
                    crate::error::display_of(&e)
                ))
            })?;
            all.extend(set);
            last = Some(file);
        }
        if let Some(file) = last {
            for w in all
                .warnings
                .iter()
                .cloned()
                .chain(unknown_innops_keys(&all))
            {
                eprintln!("innops: warning: {w}");
            }
            spec.fill_from(&all, &file)?;
        }
        spec.check()?;
        // ssl-verify-server-cert asks for a checked TLS connection; the mariadb client makes one even over the
        // socket, innops only over TCP. An explicit --ssl-mode is the user's own choice.
        if self.ssl_mode.is_none()
            && spec.ssl_verify_server_cert == Some(true)
            && uses_socket(&spec)
        {
            return Err(bad_input(
                "ssl-verify-server-cert asks for a TLS connection with a checked certificate, which innops makes over TCP only: connect with --protocol=TCP (and --host/--port), or pass --ssl-mode=DISABLED to trust the local socket instead",
            ));
        }
        let mut target = to_target(&spec);
        // PREFERRED: TLS when the server offers it. Asked once here, so every connection of the run (benchmark
        // threads and restart waits included) uses the same opts.
        if target.ssl_mode == Some(SslMode::Preferred) {
            match Conn::new(target.opts.clone()) {
                Ok(_) | Err(mysql::Error::MySqlError(_)) => {}
                // A TLS handshake that fails stays a failure (the mariadb client does not fall back either): a
                // --tls-version or --ssl-cipher the server cannot meet must not turn into plain text.
                Err(mysql::Error::TlsError(_)) => {}
                Err(mysql::Error::IoError(ref io)) if is_rustls(io) => {}
                // No TLS offered, or the server is not reachable now: plain, as the mysql client falls back.
                Err(_) => {
                    target.opts = Opts::from(OptsBuilder::from_opts(target.opts).ssl_opts(None));
                    target.ssl_mode = None;
                }
            }
        }
        Ok(target)
    }

    /// Fill the fields the flags left unset from the option file: `[innops]` first, then `[client]`.
    fn fill_from(&mut self, set: &optionfile::OptionSet, file: &Path) -> anyhow::Result<()> {
        let suffix = self.group_suffix();
        let own = optionfile::with_suffix(&["innops".to_string()], suffix.as_deref());
        let client = optionfile::client_groups(suffix.as_deref());
        let expanded = with_full_names(set, &client)?;
        let set = &expanded;
        let get = |key: &str| {
            set.get(&own, key)
                .or_else(|| set.get(&client, key))
                .map(str::to_string)
        };
        // Named by the file and line that set it, when known (several files may be read).
        let bad = |key: &str, value: &str, want: &str| {
            let norm = key.replace('-', "_");
            let at = set
                .entries
                .iter()
                .rev()
                .find(|e| e.key == norm && e.value.as_deref() == Some(value))
                .map(|e| format!("{}:{}", e.file.display(), e.line))
                .unwrap_or_else(|| file.display().to_string());
            bad_input(format!(
                "{key} '{value}' in {at} is not {want}: fix the [client] or [innops] group"
            ))
        };
        if self.user.is_none() {
            self.user = get("user");
        }
        if self.password.is_none() {
            self.password = get("password");
        }
        if self.socket.is_none() && self.host.is_none() {
            self.socket = get("socket").map(PathBuf::from);
        }
        if self.host.is_none() && self.socket.is_none() {
            self.host = get("host");
        }
        if self.port.is_none() {
            if let Some(p) = get("port") {
                self.port = Some(p.parse().map_err(|_| bad("port", &p, "a number"))?);
            }
        }
        if self.protocol.is_none() {
            if let Some(p) = get("protocol") {
                self.protocol =
                    Some(Protocol::parse(&p).ok_or_else(|| bad("protocol", &p, "TCP or SOCKET"))?);
            }
        }
        if self.ssl_mode.is_none() {
            if let Some(m) = get("ssl_mode") {
                self.ssl_mode = Some(SslMode::parse(&m).ok_or_else(|| {
                    bad(
                        "ssl-mode",
                        &m,
                        "DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY",
                    )
                })?);
            }
        }
        for (field, key) in [
            (&mut self.ssl_ca, "ssl_ca"),
            (&mut self.ssl_cert, "ssl_cert"),
            (&mut self.ssl_key, "ssl_key"),
            (&mut self.ssl_capath, "ssl_capath"),
            (&mut self.ssl_crl, "ssl_crl"),
            (&mut self.ssl_crlpath, "ssl_crlpath"),
        ] {
            if field.is_none() {
                *field = get(key).map(PathBuf::from);
            }
        }
        if self.ssl_cipher.is_none() {
            self.ssl_cipher = get("ssl_cipher");
        }
        if self.tls_version.is_none() {
            self.tls_version = get("tls_version");
        }
        for (field, name) in [
            (&mut self.ssl, "ssl"),
            (&mut self.ssl_verify_server_cert, "ssl_verify_server_cert"),
        ] {
            if field.is_none() {
                *field = match bool_option(set, &own, name)? {
                    Some(b) => Some(b),
                    None => bool_option(set, &client, name)?,
                };
            }
        }
        Ok(())
    }

    /// TLS and protocol settings that contradict each other, or name files that are not there.
    fn check(&self) -> anyhow::Result<()> {
        match (&self.ssl_cert, &self.ssl_key) {
            (Some(_), None) | (None, Some(_)) => {
                return Err(bad_input(
                    "--ssl-cert and --ssl-key go together: give both (the client certificate and its key) or neither",
                ))
            }
            _ => {}
        }
        for (flag, path) in [
            ("--ssl-ca", &self.ssl_ca),
            ("--ssl-cert", &self.ssl_cert),
            ("--ssl-key", &self.ssl_key),
        ] {
            if let Some(p) = path.as_ref().filter(|p| !p.is_file()) {
                return Err(bad_input(format!(
                    "{flag} {} does not exist: give the path of the PEM file",
                    p.display()
                )));
            }
        }
        let mode = self.effective_ssl_mode();
        let verifying = matches!(mode, SslMode::VerifyCa | SslMode::VerifyIdentity);
        // ssl-verify-server-cert without a CA checks against the public CAs (the mariadb client uses the
        // system's); the crate's rustls always trusts them.
        let public_cas = self.ssl_mode.is_none() && self.ssl_verify_server_cert == Some(true);
        if verifying && self.ssl_ca.is_none() && !public_cas {
            if let Some(dir) = &self.ssl_capath {
                return Err(bad_input(format!(
                    "ssl-capath {} asks to check the server's certificate against a CA directory, which innops cannot read: give the CA certificate file with --ssl-ca (or ssl-ca in the option file)",
                    dir.display()
                )));
            }
            return Err(bad_input(format!(
                "--ssl-mode={} checks the server's certificate against a CA: give it with --ssl-ca",
                mode.name()
            )));
        }
        if verifying {
            if let Some(crl) = self.ssl_crl.as_ref().or(self.ssl_crlpath.as_ref()) {
                return Err(bad_input(format!(
                    "ssl-crl {} asks to check the server's certificate against a revocation list, which innops cannot do: remove ssl-crl and ssl-crlpath, or pass --ssl-mode=REQUIRED to use TLS without checking the certificate",
                    crl.display()
                )));
            }
        }
        if mode != SslMode::Disabled {
            tls_cipher_suites(self)?;
        }
        if self.protocol == Some(Protocol::Socket) {
            if let Some(h) = self.host.as_ref().filter(|h| h.as_str() != "localhost") {
                return Err(bad_input(format!(
                    "--protocol=SOCKET reaches a server on this machine, but the host is {h}: drop --host or use --protocol=TCP"
                )));
            }
        }
        Ok(())
    }

    /// `--ssl-mode` when given; else VERIFY_IDENTITY for `ssl-verify-server-cert`, VERIFY_CA when a CA
    /// (file or directory) is given (the mariadb client checks the chain then), DISABLED for `--skip-ssl`,
    /// else PREFERRED.
    pub fn effective_ssl_mode(&self) -> SslMode {
        self.ssl_mode
            .unwrap_or(if self.ssl_verify_server_cert == Some(true) {
                SslMode::VerifyIdentity
            } else if self.ssl_ca.is_some() || self.ssl_capath.is_some() {
                SslMode::VerifyCa
            } else if self.ssl == Some(false) {
                SslMode::Disabled
            } else {
                SslMode::Preferred
            })
    }
}

/// One sentence for each key of an `[innops]` group that innops does not read (a `loose-` key is skipped
/// silently, as the mysql client does).
pub fn unknown_innops_keys(set: &optionfile::OptionSet) -> Vec<String> {
    set.entries
        .iter()
        .filter(|e| e.group == "innops" && !e.loose && !reads_key(&e.key))
        .map(|e| {
            format!(
                "{}:{} sets '{}' in [innops], which innops does not read: remove it (innops reads {})",
                e.file.display(),
                e.line,
                e.key,
                OPTION_FILE_KEYS.join(", ")
            )
        })
        .collect()
}

/// Whether [`to_target`] reaches the server through the socket.
fn uses_socket(spec: &ConnSpec) -> bool {
    let host = spec.host.as_deref().unwrap_or("localhost");
    match spec.protocol {
        Some(Protocol::Socket) => true,
        Some(Protocol::Tcp) => false,
        None => spec.socket.is_some() || (host == "localhost" && spec.port.is_none()),
    }
}

/// Build the target from a fully resolved spec.
/// The option files every mysql/mariadb client reads first, when they exist.
pub const GLOBAL_OPTION_FILES: &[&str] = &["/etc/my.cnf", "/etc/mysql/my.cnf"];

/// The global option files in MariaDB's order: [`GLOBAL_OPTION_FILES`], then `$MARIADB_HOME/my.cnf`, else
/// `$MYSQL_HOME/my.cnf` (`env` looks a variable up).
fn global_option_files(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Vec<String> {
    let mut files: Vec<String> = GLOBAL_OPTION_FILES.iter().map(|s| s.to_string()).collect();
    // A set but empty MARIADB_HOME hides MYSQL_HOME and names no file, as in MariaDB.
    let dir = ["MARIADB_HOME", "MYSQL_HOME"].iter().find_map(|v| env(v));
    if let Some(dir) = dir.filter(|d| !d.is_empty()) {
        files.push(Path::new(&dir).join("my.cnf").display().to_string());
    }
    files
}

/// The client groups innops reads besides its own `[innops]`, as the mariadb client does.
pub const CLIENT_GROUPS: &[&str] = &["client", "client-server", "client-mariadb"];

pub(crate) fn to_target(spec: &ConnSpec) -> Target {
    let user = spec.user.clone().unwrap_or_else(|| "root".to_string());
    let host = spec.host.clone().unwrap_or_else(|| "localhost".to_string());
    // Like the mysql client: "localhost" without a port means the socket, unless --protocol says otherwise.
    let use_socket = uses_socket(spec);
    let mut b = OptsBuilder::new()
        .user(Some(user.clone()))
        .pass(spec.password.clone())
        .tcp_connect_timeout(Some(Duration::from_secs(10)))
        .prefer_socket(false);
    let mut ssl_mode = None;
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
        let mode = spec.effective_ssl_mode();
        // VERIFY_IDENTITY checks the name the user gave, as the mariadb client does: "localhost" stays a name.
        let ip = if host == "localhost" && mode != SslMode::VerifyIdentity {
            "127.0.0.1".to_string()
        } else {
            host.clone()
        };
        let local = ip == "::1" || ip == "localhost" || ip.starts_with("127.");
        if mode != SslMode::Disabled {
            ssl_mode = Some(mode);
            b = b.ssl_opts(Some(ssl_opts(spec, mode)));
        }
        b = b.ip_or_hostname(Some(ip)).tcp_port(port);
        (format!("{user}@{host}:{port}"), local)
    };
    Target {
        opts: Opts::from(b),
        label,
        local,
        ssl_mode,
    }
}

/// The TLS options of a mode other than DISABLED.
fn ssl_opts(spec: &ConnSpec, mode: SslMode) -> SslOpts {
    let mut o = SslOpts::default()
        .with_danger_accept_invalid_certs(matches!(mode, SslMode::Preferred | SslMode::Required))
        .with_danger_skip_domain_validation(mode != SslMode::VerifyIdentity)
        .with_root_cert_path(spec.ssl_ca.clone());
    if let (Some(cert), Some(key)) = (&spec.ssl_cert, &spec.ssl_key) {
        o = o.with_client_identity(Some(ClientIdentity::new(cert.clone(), key.clone())));
    }
    // Checked in ConnSpec::check; a spec built without it gets no restriction rather than a panic.
    let suites = tls_cipher_suites(spec).unwrap_or_default();
    o.with_cipher_suites(&suites)
}

impl Target {
    /// Connect, tag the session, and turn failures into one sentence with the fix.
    pub fn connect(&self) -> anyhow::Result<Conn> {
        match Conn::new(self.opts.clone()) {
            Ok(c) => Ok(c),
            // A session statement the account may not run (`sql_log_bin` needs BINLOG ADMIN or SUPER).
            Err(mysql::Error::MySqlError(e))
                if !self.opts.get_init().is_empty() && matches!(e.code, 1227 | 1044 | 1142) =>
            {
                Err(Failure::Refused(format!(
                    "{} may not run `{}` ({}), which this run needs in every session: grant BINLOG ADMIN (MariaDB 10.5+; SUPER before, and on MySQL SYSTEM_VARIABLES_ADMIN) to the account, or run without --binlog local",
                    self.label,
                    self.opts.get_init().join("; "),
                    e.message
                ))
                .into())
            }
            Err(e) => Err(Failure::BadInput(describe_connect_error(&self.label, &e)).into()),
        }
    }

    /// This target with `statements` run first in every session it opens.
    pub fn with_session(&self, statements: &[String]) -> Target {
        Target {
            opts: OptsBuilder::from_opts(self.opts.clone())
                .init(statements.to_vec())
                .into(),
            ..self.clone()
        }
    }

    /// Connect and run one query returning the first column of the first row.
    pub fn query_first_string(&self, sql: &str) -> anyhow::Result<Option<String>> {
        let mut c = self.connect()?;
        Ok(c.query_first::<Option<String>, _>(sql)?.flatten())
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
    fn option_files_are_read_in_the_mysql_clients_order_and_the_last_value_wins() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let global = write(
            "global.cnf",
            "[client]\nuser = g\nport = 3301\n[client-server]\nhost = h1\n",
        );
        let extra = write("extra.cnf", "[client-mariadb]\nport = 3302\n");
        let home = write("home.cnf", "[client]\nuser = me\n");
        let missing = dir.path().join("none.cnf");
        let g = [global.to_str().unwrap(), missing.to_str().unwrap()];
        let spec = ConnSpec {
            defaults_extra_file: Some(extra.clone()),
            ..Default::default()
        };
        // Globals that exist, then the extra file, then the user's own.
        assert_eq!(
            spec.option_files_in(&g, Some(&home)).unwrap(),
            vec![global.clone(), extra.clone(), home.clone()]
        );
        let mut all = optionfile::OptionSet::default();
        for f in spec.option_files_in(&g, Some(&home)).unwrap() {
            all.entries.extend(optionfile::read(&f).unwrap().entries);
        }
        let mut filled = ConnSpec::default();
        filled.fill_from(&all, &home).unwrap();
        assert_eq!(filled.user.as_deref(), Some("me"));
        assert_eq!(filled.port, Some(3302));
        assert_eq!(filled.host.as_deref(), Some("h1"));
        // --defaults-file reads only itself; --no-defaults nothing; a missing extra file is bad input.
        let only = ConnSpec {
            defaults_file: Some(home.clone()),
            defaults_extra_file: Some(extra.clone()),
            ..Default::default()
        };
        assert_eq!(
            only.option_files_in(&g, Some(&global)).unwrap(),
            vec![home.clone()]
        );
        let none = ConnSpec {
            no_defaults: true,
            ..Default::default()
        };
        assert!(none.option_files_in(&g, Some(&home)).unwrap().is_empty());
        let bad = ConnSpec {
            defaults_extra_file: Some(missing.clone()),
            ..Default::default()
        };
        let e = bad.option_files_in(&g, None).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2);
        assert!(e.to_string().contains("--defaults-extra-file"), "{e}");
    }

    #[test]
    fn mariadb_home_else_mysql_home_follows_the_etc_files() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |v: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == v)
                    .map(|(_, d)| std::ffi::OsString::from(d))
            }
        };
        assert_eq!(global_option_files(env(&[])), GLOBAL_OPTION_FILES);
        assert_eq!(
            global_option_files(env(&[("MYSQL_HOME", "/m"), ("MARIADB_HOME", "/a")])),
            ["/etc/my.cnf", "/etc/mysql/my.cnf", "/a/my.cnf"]
        );
        assert_eq!(
            global_option_files(env(&[("MYSQL_HOME", "/m")])),
            ["/etc/my.cnf", "/etc/mysql/my.cnf", "/m/my.cnf"]
        );
        // As my_print_defaults: an empty MARIADB_HOME hides MYSQL_HOME.
        assert_eq!(
            global_option_files(env(&[("MYSQL_HOME", "/m"), ("MARIADB_HOME", "")])),
            GLOBAL_OPTION_FILES
        );
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

    fn tcp(port: u16) -> ConnSpec {
        ConnSpec {
            host: Some("127.0.0.1".into()),
            port: Some(port),
            ..Default::default()
        }
    }

    #[test]
    fn protocol_overrides_the_socket_or_tcp_choice() {
        let t = to_target(&ConnSpec {
            protocol: Some(Protocol::Tcp),
            ..Default::default()
        });
        assert_eq!(t.label, "root@localhost:3306");
        assert_eq!(t.opts.get_socket(), None);
        let t = to_target(&ConnSpec {
            host: Some("localhost".into()),
            port: Some(3307),
            protocol: Some(Protocol::Socket),
            ..Default::default()
        });
        assert_eq!(t.opts.get_socket(), Some(DEFAULT_SOCKET));
        let remote = ConnSpec {
            host: Some("db1".into()),
            protocol: Some(Protocol::Socket),
            ..Default::default()
        };
        let err = remote.check().unwrap_err().to_string();
        assert!(
            err.contains("--protocol=SOCKET") && err.contains("db1"),
            "{err}"
        );
    }

    #[test]
    fn tls_is_preferred_over_tcp_only_and_each_mode_checks_what_the_mysql_client_checks() {
        // A socket never carries TLS options.
        let t = to_target(&ConnSpec {
            ssl_mode: Some(SslMode::Required),
            ..Default::default()
        });
        assert!(t.opts.get_ssl_opts().is_none() && t.ssl_mode.is_none());
        // TCP: PREFERRED by default, accepting any certificate.
        let t = to_target(&tcp(3306));
        assert_eq!(t.ssl_mode, Some(SslMode::Preferred));
        let o = t.opts.get_ssl_opts().expect("TLS options");
        assert!(o.accept_invalid_certs() && o.skip_domain_validation());
        let t = to_target(&ConnSpec {
            ssl_mode: Some(SslMode::Disabled),
            ..tcp(3306)
        });
        assert!(t.opts.get_ssl_opts().is_none());
        // A CA without a mode means VERIFY_CA: the chain is checked, the name is not.
        let t = to_target(&ConnSpec {
            ssl_ca: Some("/etc/ca.pem".into()),
            ..tcp(3306)
        });
        assert_eq!(t.ssl_mode, Some(SslMode::VerifyCa));
        let o = t.opts.get_ssl_opts().unwrap();
        assert!(!o.accept_invalid_certs() && o.skip_domain_validation());
        assert_eq!(o.root_cert_path(), Some(Path::new("/etc/ca.pem")));
        let t = to_target(&ConnSpec {
            ssl_mode: Some(SslMode::VerifyIdentity),
            ssl_ca: Some("/etc/ca.pem".into()),
            ..tcp(3306)
        });
        let o = t.opts.get_ssl_opts().unwrap();
        assert!(!o.accept_invalid_certs() && !o.skip_domain_validation());
    }

    #[test]
    fn contradicting_tls_settings_are_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let pem = dir.path().join("c.pem");
        std::fs::write(&pem, "x").unwrap();
        for (spec, says) in [
            (
                ConnSpec {
                    ssl_cert: Some(pem.clone()),
                    ..tcp(1)
                },
                "--ssl-cert and --ssl-key go together",
            ),
            (
                ConnSpec {
                    ssl_mode: Some(SslMode::VerifyCa),
                    ..tcp(1)
                },
                "--ssl-mode=VERIFY_CA checks the server's certificate against a CA: give it with --ssl-ca",
            ),
            (
                ConnSpec {
                    ssl_ca: Some(dir.path().join("missing.pem")),
                    ..tcp(1)
                },
                "missing.pem does not exist",
            ),
        ] {
            let err = spec.check().unwrap_err();
            assert_eq!(crate::error::exit_code_of(&err), 2);
            assert!(err.to_string().contains(says), "{err}");
        }
    }

    #[test]
    fn the_innops_group_overrides_the_client_group_and_its_unknown_keys_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("my.cnf");
        // [innops] first in the file: it still wins over [client].
        std::fs::write(
            &file,
            "[innops]\npassword = ours\nssl-mode = required\ncolour = blue\nloose-later = 1\n\
             [client]\nuser = dba\npassword = theirs\nport = 3307\nprotocol = tcp\ndefault-character-set = utf8mb4\n",
        )
        .unwrap();
        let set = optionfile::read(&file).unwrap();
        let mut spec = ConnSpec::default();
        spec.fill_from(&set, &file).unwrap();
        assert_eq!(spec.password.as_deref(), Some("ours"));
        assert_eq!(spec.user.as_deref(), Some("dba"));
        assert_eq!(spec.port, Some(3307));
        assert_eq!(spec.protocol, Some(Protocol::Tcp));
        assert_eq!(spec.ssl_mode, Some(SslMode::Required));
        // Only the [innops] key innops does not read is reported, with its file and line; [client] belongs to
        // every client, and a loose- key may be skipped.
        let warnings = unknown_innops_keys(&set);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(&format!("{}:4 sets 'colour' in [innops]", file.display())),
            "{warnings:?}"
        );
        std::fs::write(&file, "[innops]\nssl-mode = sometimes\n").unwrap();
        let set = optionfile::read(&file).unwrap();
        let err = ConnSpec::default().fill_from(&set, &file).unwrap_err();
        assert!(err.to_string().contains("ssl-mode 'sometimes'"), "{err}");
    }

    fn spec_from(text: &str) -> anyhow::Result<ConnSpec> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("my.cnf");
        std::fs::write(&file, text).unwrap();
        let set = optionfile::read(&file).unwrap();
        let mut spec = ConnSpec::default();
        spec.fill_from(&set, &file)?;
        Ok(spec)
    }

    #[test]
    fn boolean_tls_options_read_as_my_getopt_reads_them() {
        for (text, want) in [
            ("ssl-verify-server-cert", Some(true)),
            ("ssl_verify_server_cert = 1", Some(true)),
            ("ssl-verify-server-cert = ON", Some(true)),
            ("loose-ssl-verify-server-cert = true", Some(true)),
            (
                "ssl-verify-server-cert\nskip-ssl-verify-server-cert",
                Some(false),
            ),
            (
                "disable-ssl-verify-server-cert\nenable-ssl-verify-server-cert",
                Some(true),
            ),
            ("ssl-verify-server-cert = off", Some(false)),
            ("user = x", None),
        ] {
            let spec = spec_from(&format!("[client]\n{text}\n")).unwrap();
            assert_eq!(spec.ssl_verify_server_cert, want, "{text}");
        }
        // A unique prefix counts, as my_getopt counts it; one that could be several TLS options is refused.
        let spec = spec_from("[client]\nssl-verify-server\nus = dba\nssl-cap = /d\n").unwrap();
        assert_eq!(spec.ssl_verify_server_cert, Some(true));
        assert_eq!(spec.user.as_deref(), Some("dba"));
        assert_eq!(spec.ssl_ca, None);
        assert_eq!(spec.ssl_capath, Some(PathBuf::from("/d")));
        let err = spec_from("[client]\nssl-c = /x\n").unwrap_err();
        assert_eq!(crate::error::exit_code_of(&err), 2);
        assert!(err.to_string().contains("'ssl-c' in"), "{err}");
        let spec = spec_from("[client]\nssl-verify-server\nskip-ssl-verify\n").unwrap();
        assert_eq!(spec.ssl_verify_server_cert, Some(false));
        let spec = spec_from("[client]\nskip-ssl\n").unwrap();
        assert_eq!(spec.ssl, Some(false));
        assert_eq!(spec.effective_ssl_mode(), SslMode::Disabled);
        // In [innops], the prefixed forms are keys innops reads: no warning.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("my.cnf");
        std::fs::write(
            &file,
            "[innops]\nskip-ssl\ndisable-ssl-verify-server-cert\nskip-colour\n",
        )
        .unwrap();
        let warnings = unknown_innops_keys(&optionfile::read(&file).unwrap());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("'skip_colour'"), "{warnings:?}");
        let err = spec_from("[client]\nssl-verify-server-cert = maybe\n").unwrap_err();
        assert_eq!(crate::error::exit_code_of(&err), 2);
        assert!(err.to_string().contains("is not a boolean"), "{err}");
    }

    #[test]
    fn a_client_header_with_a_trailing_space_and_suffix_groups_are_read() {
        let spec = spec_from("[client ]\nuser = configured\n[ client]\npassword = no\n").unwrap();
        assert_eq!(spec.user.as_deref(), Some("configured"));
        assert_eq!(spec.password, None);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("my.cnf");
        std::fs::write(&file, "[client]\nuser = base\n[client_prod]\nuser = prod\n").unwrap();
        let set = optionfile::read(&file).unwrap();
        let mut spec = ConnSpec {
            defaults_group_suffix: Some("_prod".into()),
            ..Default::default()
        };
        spec.fill_from(&set, &file).unwrap();
        assert_eq!(spec.user.as_deref(), Some("prod"));
    }

    #[test]
    fn which_tls_mode_the_options_ask_for() {
        let mode = |text: &str| spec_from(text).unwrap().effective_ssl_mode();
        assert_eq!(mode("[client]\n"), SslMode::Preferred);
        assert_eq!(
            mode("[client]\nssl-verify-server-cert\n"),
            SslMode::VerifyIdentity
        );
        // A CA, even with skip-ssl, checks the chain (the mariadb client does, and innops refuses to be weaker).
        assert_eq!(
            mode("[client]\nskip-ssl\nssl-ca = /x.pem\n"),
            SslMode::VerifyCa
        );
        assert_eq!(
            mode("[client]\nssl-capath = /etc/ssl/certs\n"),
            SslMode::VerifyCa
        );
        // An explicit --ssl-mode is the user's choice.
        let spec = ConnSpec {
            ssl_mode: Some(SslMode::Required),
            ssl_verify_server_cert: Some(true),
            ..tcp(1)
        };
        assert_eq!(spec.effective_ssl_mode(), SslMode::Required);
    }

    #[test]
    fn tls_options_innops_cannot_honour_are_refused_in_one_sentence() {
        for (spec, says) in [
            (
                ConnSpec {
                    ssl_capath: Some("/etc/ssl/certs".into()),
                    ..tcp(1)
                },
                "which innops cannot read: give the CA certificate file with --ssl-ca",
            ),
            (
                ConnSpec {
                    ssl_verify_server_cert: Some(true),
                    ssl_crl: Some("/x.crl".into()),
                    ..tcp(1)
                },
                "against a revocation list, which innops cannot do",
            ),
            (
                ConnSpec {
                    tls_version: Some("TLSv1.1".into()),
                    ..tcp(1)
                },
                "allows only versions innops cannot speak",
            ),
            (
                ConnSpec {
                    tls_version: Some("SSLv3".into()),
                    ..tcp(1)
                },
                "is not a TLS version",
            ),
            (
                ConnSpec {
                    ssl_cipher: Some("AES128-SHA:DHE-RSA-AES256-SHA".into()),
                    ..tcp(1)
                },
                "names no cipher innops can use",
            ),
            (
                ConnSpec {
                    ssl_cipher: Some("TLS_AES_128_GCM_SHA256".into()),
                    tls_version: Some("TLSv1.2".into()),
                    ..tcp(1)
                },
                "names no cipher innops can use with that tls-version",
            ),
        ] {
            let err = spec.check().unwrap_err();
            assert_eq!(crate::error::exit_code_of(&err), 2, "{err}");
            assert!(err.to_string().contains(says), "{err}");
        }
        // Not checking the certificate, a CRL changes nothing; without TLS, neither do ciphers.
        ConnSpec {
            ssl_crl: Some("/x.crl".into()),
            ..tcp(1)
        }
        .check()
        .unwrap();
        ConnSpec {
            ssl: Some(false),
            tls_version: Some("TLSv1.1".into()),
            ..tcp(1)
        }
        .check()
        .unwrap();
    }

    #[test]
    fn tls_version_and_cipher_restrict_the_suites_as_openssl_does() {
        let names = |spec: ConnSpec| -> Vec<String> {
            tls_cipher_suites(&spec)
                .unwrap()
                .iter()
                .map(|s| s.suite().as_str().unwrap().to_string())
                .collect()
        };
        assert!(names(tcp(1)).is_empty(), "no restriction");
        let v13 = names(ConnSpec {
            tls_version: Some("TLSv1.3".into()),
            ..tcp(1)
        });
        assert!(
            !v13.is_empty() && v13.iter().all(|n| n.starts_with("TLS13_")),
            "{v13:?}"
        );
        let v12 = names(ConnSpec {
            tls_version: Some("tlsv1.2".into()),
            ..tcp(1)
        });
        assert!(
            !v12.is_empty() && v12.iter().all(|n| !n.starts_with("TLS13_")),
            "{v12:?}"
        );
        // OpenSSL's names; a list of TLS 1.2 ciphers leaves TLS 1.3's suites alone (as the mariadb client).
        let c = names(ConnSpec {
            ssl_cipher: Some("ECDHE-RSA-AES128-GCM-SHA256:HIGH".into()),
            ..tcp(1)
        });
        assert!(
            c.contains(&"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_string()),
            "{c:?}"
        );
        assert!(
            !c.contains(&"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384".to_string()),
            "{c:?}"
        );
        assert!(
            c.iter().filter(|n| n.starts_with("TLS13_")).count() == 3,
            "{c:?}"
        );
        let c = names(ConnSpec {
            ssl_cipher: Some("TLS_AES_128_GCM_SHA256".into()),
            ..tcp(1)
        });
        assert_eq!(c, ["TLS13_AES_128_GCM_SHA256"]);
        // The restriction reaches the connection's options.
        let t = to_target(&ConnSpec {
            tls_version: Some("TLSv1.3".into()),
            ..tcp(1)
        });
        let o = t.opts.get_ssl_opts().unwrap();
        assert!(o
            .cipher_suites()
            .unwrap()
            .iter()
            .all(|n| n.starts_with("TLS13_")));
    }

    #[test]
    fn ssl_verify_server_cert_over_the_socket_is_refused_before_connecting() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("my.cnf");
        std::fs::write(
            &file,
            "[client]\nsocket = /nonexistent/mysqld.sock\nssl-verify-server-cert\n",
        )
        .unwrap();
        let spec = ConnSpec {
            defaults_file: Some(file.clone()),
            ..Default::default()
        };
        let err = spec.resolve().unwrap_err();
        assert_eq!(crate::error::exit_code_of(&err), 2);
        assert!(
            err.to_string().contains("which innops makes over TCP only"),
            "{err}"
        );
        // An explicit --ssl-mode decides instead (and then the missing socket is what fails).
        let spec = ConnSpec {
            ssl_mode: Some(SslMode::Disabled),
            ..spec
        };
        let t = spec.resolve().unwrap();
        assert_eq!(t.opts.get_socket(), Some("/nonexistent/mysqld.sock"));
        // VERIFY_IDENTITY checks the name given: localhost stays a name.
        let t = to_target(&ConnSpec {
            host: Some("localhost".into()),
            protocol: Some(Protocol::Tcp),
            ssl_verify_server_cert: Some(true),
            ..Default::default()
        });
        assert_eq!(t.opts.get_ip_or_hostname(), "localhost");
    }
}
