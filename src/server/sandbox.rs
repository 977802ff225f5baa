//! Throwaway local servers: a data directory, port, socket, error log and option file of their own, made from
//! the `mariadbd` (or MySQL `mysqld`) binary on PATH.
//!
//! Every sandbox lives in `<root>/<name>/`. Its option file `my.cnf` is what the server starts with, and it
//! includes `conf.d/`, where procedures put innops's drop-in: a sandbox exercises the same config path as a real
//! server. Tests use this code through the library, each test with a root of its own.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::error::{bad_input, refused};
use crate::server::connect::ConnSpec;
use crate::server::errorlog;
use crate::server::process::{
    process_alive, signal_and_wait, wait_exit, without_client_secrets, Signal,
};

/// Environment variable that moves the sandbox root.
pub const ROOT_ENV: &str = "INNOPS_SANDBOX_DIR";

/// The default place for sandboxes: `$INNOPS_SANDBOX_DIR`, else `~/.local/share/innops/sandboxes`.
pub fn default_root() -> PathBuf {
    if let Some(d) = std::env::var_os(ROOT_ENV) {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    home.join(".local/share/innops/sandboxes")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerKind {
    MariaDB,
    MySQL,
}

/// Seconds a sandbox replica waits before it connects to its primary again (`MASTER_CONNECT_RETRY`): short,
/// so a rehearsal's restarts of the primary do not keep its replicas away for the server's default minute.
pub const REPLICA_CONNECT_RETRY_S: u32 = 1;

/// What `sandbox up` may tune.
#[derive(Debug, Clone, Default)]
pub struct SandboxOptions {
    /// `innodb_buffer_pool_size`, as the server takes it (`128M`).
    pub buffer_pool: Option<String>,
    /// More `key=value` lines for the `[mysqld]` group.
    pub extra: Vec<String>,
    /// Write a binary log (ROW, GTID strict mode, replicas' changes logged too), so replicas can follow it.
    pub binlog: bool,
    /// Set up to be a replica ([`Sandbox::replicate_from`]): a binary log as above, and `read_only`.
    pub replica: bool,
}

/// A sandbox on disk.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Sandbox {
    pub name: String,
    pub dir: PathBuf,
    pub datadir: PathBuf,
    pub socket: PathBuf,
    pub port: u16,
    pub pid_file: PathBuf,
    pub error_log: PathBuf,
    pub option_file: PathBuf,
    /// The directory the option file includes; innops's drop-in goes here.
    pub conf_dir: PathBuf,
    pub binary: PathBuf,
    pub kind: ServerKind,
    /// A `[client]` option file (mode 0600) with root's generated password for TCP
    /// (`mariadb --defaults-file=FILE`). Over the socket root needs none: the socket's directory is 0700.
    #[serde(default)]
    pub client_file: Option<PathBuf>,
    /// The port was chosen with `sandbox up --port`: a start never moves it to another.
    #[serde(default)]
    pub fixed_port: bool,
}

/// The buffer pool of a sandbox when `sandbox up` is given no `--buffer-pool` (the server's own default).
pub const DEFAULT_BUFFER_POOL: &str = "128M";

/// Which server a new sandbox runs and where it listens: `sandbox up --mariadbd PATH --port N`. Unset: the
/// first `mariadbd`/`mysqld` found, on a free port picked by the kernel.
#[derive(Debug, Clone, Default)]
pub struct ServerChoice {
    pub port: Option<u16>,
    pub binary: Option<PathBuf>,
}

/// The server binary at `path`, checked to be an executable that answers `--version` as MariaDB or MySQL.
pub fn server_binary_at(path: &Path) -> anyhow::Result<(PathBuf, ServerKind)> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|_| {
        bad_input(format!(
            "--mariadbd {}: no such file; give the path of a mariadbd or mysqld binary",
            path.display()
        ))
    })?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(bad_input(format!(
            "--mariadbd {} is not an executable file: give the path of a mariadbd or mysqld binary",
            path.display()
        )));
    }
    let version = Command::new(path)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).to_lowercase())
        .unwrap_or_default();
    let kind = if version.contains("mariadb") {
        ServerKind::MariaDB
    } else if version.contains("mysql") {
        ServerKind::MySQL
    } else {
        return Err(bad_input(format!(
            "--mariadbd {} does not answer --version as a MariaDB or MySQL server: give the path of a mariadbd or mysqld binary",
            path.display()
        )));
    };
    Ok((path.to_path_buf(), kind))
}

/// `--buffer-pool` checked and written in bytes; the error names the flag.
fn buffer_pool_bytes(opts: &SandboxOptions) -> anyhow::Result<u64> {
    let text = opts.buffer_pool.as_deref().unwrap_or(DEFAULT_BUFFER_POOL);
    let bytes = crate::units::parse_size(text).map_err(|_| {
        bad_input(format!(
            "--buffer-pool '{text}' is not a size: write bytes or a number with K, M or G (for example 256M; the default is {DEFAULT_BUFFER_POOL})"
        ))
    })?;
    // The server refuses a buffer pool below a few megabytes.
    if bytes < 8 << 20 {
        return Err(bad_input(format!(
            "--buffer-pool '{text}' is below the 8M a sandbox needs: give 8M or more (the default is {DEFAULT_BUFFER_POOL})"
        )));
    }
    Ok(bytes)
}

/// `list` output: the sandbox and whether it runs.
#[derive(Debug, Clone, Serialize)]
pub struct SandboxStatus {
    #[serde(flatten)]
    pub sandbox: Sandbox,
    pub pid: Option<u32>,
    pub running: bool,
}

/// Find the server binary: `mariadbd`, then `mysqld`, on PATH or in the usual sbin directories.
pub fn find_server_binary() -> anyhow::Result<(PathBuf, ServerKind)> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin"].map(PathBuf::from));
    for (name, kind) in [
        ("mariadbd", ServerKind::MariaDB),
        ("mysqld", ServerKind::MySQL),
    ] {
        for d in &dirs {
            let p = d.join(name);
            if p.is_file() {
                return Ok((p, kind));
            }
        }
    }
    Err(bad_input(
        "no mariadbd or mysqld binary was found on PATH or in /usr/sbin: install one with `apt-get install -y mariadb-server`",
    ))
}

fn validate_name(name: &str) -> anyhow::Result<()> {
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(bad_input(format!(
            "sandbox name '{name}' is not allowed: use 1-64 letters, digits, '-' or '_'"
        )));
    }
    Ok(())
}

/// A free TCP port on the loopback interface, chosen by the kernel.
pub fn free_port() -> anyhow::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("binding a probe socket on 127.0.0.1")?;
    Ok(l.local_addr()?.port())
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

impl Sandbox {
    fn paths(root: &Path, name: &str, binary: PathBuf, kind: ServerKind, port: u16) -> Sandbox {
        let dir = root.join(name);
        Sandbox {
            name: name.to_string(),
            datadir: dir.join("data"),
            socket: dir.join("mysqld.sock"),
            port,
            pid_file: dir.join("mysqld.pid"),
            error_log: dir.join("error.log"),
            option_file: dir.join("my.cnf"),
            conf_dir: dir.join("conf.d"),
            client_file: Some(dir.join("client.cnf")),
            binary,
            kind,
            dir,
            fixed_port: false,
        }
    }

    /// SQL run once, at the first start, before the server accepts connections (`--init-file`).
    fn secure_sql_path(&self) -> PathBuf {
        self.dir.join("secure.sql")
    }

    fn tmpdir(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    fn meta_path(dir: &Path) -> PathBuf {
        dir.join("sandbox.json")
    }

    /// Initialise a new sandbox (data directory and option file); it is not started.
    pub fn create(root: &Path, name: &str, opts: &SandboxOptions) -> anyhow::Result<Sandbox> {
        Sandbox::create_on(root, name, opts, &ServerChoice::default())
    }

    /// [`Sandbox::create`] with the server binary and port chosen. On failure nothing of the sandbox is left.
    pub fn create_on(
        root: &Path,
        name: &str,
        opts: &SandboxOptions,
        choice: &ServerChoice,
    ) -> anyhow::Result<Sandbox> {
        validate_name(name)?;
        buffer_pool_bytes(opts)?;
        let (binary, kind) = match &choice.binary {
            Some(p) => server_binary_at(p)?,
            None => find_server_binary()?,
        };
        let port = match choice.port {
            Some(0) => {
                return Err(bad_input(
                    "--port 0 is not a port: give 1024-65535, or leave --port out for a free one",
                ))
            }
            Some(p) => {
                if TcpListener::bind(("127.0.0.1", p)).is_err() {
                    return Err(bad_input(format!(
                        "port {p} on 127.0.0.1 is in use or not allowed: pick another --port, or leave it out for a free one"
                    )));
                }
                p
            }
            None => free_port()?,
        };
        let mut sb = Sandbox::paths(root, name, binary, kind, port);
        sb.fixed_port = choice.port.is_some();
        if sb.dir.exists() {
            return Err(bad_input(format!(
                "sandbox '{name}' already exists in {}: pick another name or run `innops sandbox down {name}`",
                sb.dir.display()
            )));
        }
        // The socket path must fit sun_path (108 bytes).
        if sb.socket.as_os_str().len() > 100 {
            return Err(bad_input(format!(
                "the sandbox root {} is too deep for a Unix socket path: use a shorter --sandbox-root or {ROOT_ENV}",
                root.display()
            )));
        }
        std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
        // Everything of the sandbox, its socket included, is in a directory only its owner may enter: the
        // socket itself is world-writable and root needs no password over it.
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&sb.dir)
                .with_context(|| format!("creating {}", sb.dir.display()))?;
        }
        let fill = || -> anyhow::Result<()> {
            for d in [&sb.conf_dir, &sb.tmpdir()] {
                std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            }
            sb.write_option_file(opts)?;
            sb.write_credentials()?;
            sb.init_datadir()?;
            sb.save()
        };
        // A sandbox that could not be made leaves nothing behind: `up` again with the same name works.
        fill().inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&sb.dir);
        })?;
        Ok(sb)
    }

    /// Open an existing sandbox by name.
    pub fn open(root: &Path, name: &str) -> anyhow::Result<Sandbox> {
        validate_name(name)?;
        let meta = Sandbox::meta_path(&root.join(name));
        let text = std::fs::read_to_string(&meta).map_err(|_| {
            bad_input(format!(
                "there is no sandbox '{name}' in {}: create it with `innops sandbox up {name}` or check `innops sandbox list`",
                root.display()
            ))
        })?;
        serde_json::from_str(&text).with_context(|| format!("reading {}", meta.display()))
    }

    /// Every sandbox under `root`, sorted by name.
    pub fn list(root: &Path) -> anyhow::Result<Vec<SandboxStatus>> {
        let mut out = Vec::new();
        let Ok(rd) = std::fs::read_dir(root) else {
            return Ok(out);
        };
        for e in rd.flatten() {
            let meta = Sandbox::meta_path(&e.path());
            if let Ok(text) = std::fs::read_to_string(&meta) {
                if let Ok(sandbox) = serde_json::from_str::<Sandbox>(&text) {
                    let pid = sandbox.running_pid();
                    out.push(SandboxStatus {
                        running: pid.is_some(),
                        pid,
                        sandbox,
                    });
                }
            }
        }
        out.sort_by(|a, b| a.sandbox.name.cmp(&b.sandbox.name));
        Ok(out)
    }

    fn save(&self) -> anyhow::Result<()> {
        let meta = Sandbox::meta_path(&self.dir);
        std::fs::write(&meta, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("writing {}", meta.display()))
    }

    fn write_option_file(&self, opts: &SandboxOptions) -> anyhow::Result<()> {
        let mut s = String::new();
        s.push_str(
            "# innops sandbox option file: the server starts with --defaults-file pointing here.\n",
        );
        s.push_str("[mysqld]\n");
        s.push_str(&format!("datadir = {}\n", self.datadir.display()));
        s.push_str(&format!("socket = {}\n", self.socket.display()));
        s.push_str(&format!("port = {}\n", self.port));
        s.push_str("bind-address = 127.0.0.1\n");
        s.push_str(&format!("pid-file = {}\n", self.pid_file.display()));
        s.push_str(&format!("log-error = {}\n", self.error_log.display()));
        s.push_str(&format!("tmpdir = {}\n", self.tmpdir().display()));
        s.push_str(&format!(
            "innodb_buffer_pool_size = {}\n",
            buffer_pool_bytes(opts)?
        ));
        s.push_str("skip-name-resolve\n");
        if opts.binlog || opts.replica {
            // The port is free on this machine now, so no other sandbox has it as its server_id.
            s.push_str(&format!("server_id = {}\n", self.port));
            s.push_str("log_bin = binlog\n");
            s.push_str("binlog_format = ROW\n");
            s.push_str("log_slave_updates = ON\n");
            s.push_str("gtid_strict_mode = ON\n");
        }
        if opts.replica {
            s.push_str("relay_log = relay-bin\n");
            s.push_str("read_only = ON\n");
            s.push_str("report_host = 127.0.0.1\n");
        }
        if is_root() {
            s.push_str("user = root\n");
        }
        for line in &opts.extra {
            s.push_str(line);
            s.push('\n');
        }
        s.push_str(&format!("\n!includedir {}\n", self.conf_dir.display()));
        std::fs::write(&self.option_file, s)
            .with_context(|| format!("writing {}", self.option_file.display()))
    }

    fn set_port(&mut self, port: u16) -> anyhow::Result<()> {
        let old = format!("port = {}\n", self.port);
        let text = std::fs::read_to_string(&self.option_file)?;
        let text = text.replacen(&old, &format!("port = {port}\n"), 1);
        std::fs::write(&self.option_file, text)?;
        if let Some(f) = self.client_file.as_ref().filter(|f| f.exists()) {
            let text = std::fs::read_to_string(f)?;
            std::fs::write(f, text.replacen(&old, &format!("port = {port}\n"), 1))?;
        }
        self.port = port;
        self.save()
    }

    /// A generated password for root over TCP, in `client.cnf` (0600), and the SQL that sets it at the first
    /// start (0600, removed once the server is up). Anonymous accounts are dropped: without them and with
    /// root's password, TCP on the loopback lets no other local user in.
    fn write_credentials(&self) -> anyhow::Result<()> {
        use rand::Rng;
        let Some(client_file) = &self.client_file else {
            return Ok(());
        };
        let password: String = rand::thread_rng()
            .sample_iter(&rand::distributions::Alphanumeric)
            .take(24)
            .map(char::from)
            .collect();
        write_private(
            client_file,
            &format!(
                "# innops sandbox '{}': root over TCP. Connect with `mariadb --defaults-file={}`.\n\
                 [client]\nuser = root\npassword = {password}\nhost = 127.0.0.1\nport = {}\n",
                self.name,
                client_file.display(),
                self.port
            ),
        )?;
        let lit = crate::sql::quote_string;
        let sql = [
            format!(
                "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY {};",
                lit(&password)
            ),
            format!(
                "ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY {};",
                lit(&password)
            ),
            "GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;".to_string(),
            format!(
                "ALTER USER IF EXISTS 'root'@'::1' IDENTIFIED BY {};",
                lit(&password)
            ),
            "DROP USER IF EXISTS ''@'localhost';".to_string(),
        ];
        // Accounts named by host name (root@HOST, ''@HOST) are ignored under skip-name-resolve, which the
        // sandbox's option file sets: no connection can match them.
        // Not logged: a replica's own accounts must not reach its primary's GTID domain, nor the primary's
        // accounts its replicas.
        let mut text = format!("SET SESSION sql_log_bin = 0;\n{}", sql.join("\n"));
        text.push('\n');
        write_private(&self.secure_sql_path(), &text)
    }

    fn init_datadir(&self) -> anyhow::Result<()> {
        let log = self.dir.join("install.log");
        let logf = std::fs::File::create(&log)?;
        let mut cmd = match self.kind {
            ServerKind::MariaDB => {
                let installer = ["mariadb-install-db", "mysql_install_db"]
                    .iter()
                    .map(|n| self.binary.parent().unwrap_or(Path::new("/usr/bin")).join("..").join("bin").join(n))
                    .chain(["/usr/bin/mariadb-install-db", "/usr/local/bin/mariadb-install-db"].map(PathBuf::from))
                    .find(|p| p.is_file())
                    .ok_or_else(|| {
                        bad_input("mariadb-install-db was not found: install it with `apt-get install -y mariadb-server`")
                    })?;
                let mut c = Command::new(installer);
                c.arg("--no-defaults")
                    .arg(format!("--datadir={}", self.datadir.display()))
                    // Concurrent bootstraps sharing /tmp collide on temporary-table names.
                    .arg(format!("--tmpdir={}", self.tmpdir().display()))
                    .arg("--auth-root-authentication-method=normal")
                    .arg("--skip-test-db");
                if is_root() {
                    c.arg("--user=root");
                }
                c
            }
            ServerKind::MySQL => {
                let mut c = Command::new(&self.binary);
                c.arg("--no-defaults")
                    .arg("--initialize-insecure")
                    .arg(format!("--datadir={}", self.datadir.display()))
                    .arg(format!("--tmpdir={}", self.tmpdir().display()));
                if is_root() {
                    c.arg("--user=root");
                }
                c
            }
        };
        // The installer runs a bootstrap server.
        let status = without_client_secrets(&mut cmd)
            .stdin(Stdio::null())
            .stdout(logf.try_clone()?)
            .stderr(logf)
            .status()
            .context("running the data directory initialiser")?;
        if !status.success() {
            let tail = std::fs::read_to_string(&log).unwrap_or_default();
            let last: Vec<&str> = tail.lines().rev().take(5).collect();
            anyhow::bail!(
                "initialising the data directory {} failed ({status}): {}",
                self.datadir.display(),
                last.into_iter().rev().collect::<Vec<_>>().join(" | ")
            );
        }
        Ok(())
    }

    /// The pid of the running server, if any.
    pub fn running_pid(&self) -> Option<u32> {
        let pid: u32 = std::fs::read_to_string(&self.pid_file)
            .ok()?
            .trim()
            .parse()
            .ok()?;
        process_alive(pid).then_some(pid)
    }

    pub fn is_running(&self) -> bool {
        self.running_pid().is_some()
    }

    /// How to connect to it.
    pub fn conn_spec(&self) -> ConnSpec {
        ConnSpec {
            socket: Some(self.socket.clone()),
            user: Some("root".into()),
            ..Default::default()
        }
    }

    /// Make this (running, empty, [`SandboxOptions::replica`]) sandbox a GTID replica of `primary` (running, with
    /// [`SandboxOptions::binlog`]): an account of its own on the primary (not logged, so it reaches no other
    /// replica), `CHANGE MASTER` over TCP on the loopback, and both threads running, caught up with the
    /// primary's binary log as it is now. The primary's log must hold its whole history (its first file never
    /// purged): a replica of an empty sandbox gets every row by replaying it.
    pub fn replicate_from(&self, primary: &Sandbox, timeout: Duration) -> anyhow::Result<()> {
        use crate::sql::Queryable;
        if self.kind != ServerKind::MariaDB || primary.kind != ServerKind::MariaDB {
            return Err(bad_input(
                "--replica-of builds MariaDB topologies only (MySQL's GTID setup is not built yet): use mariadbd sandboxes",
            ));
        }
        let mut p = primary.conn_spec().resolve_plain().connect()?;
        let log_bin: Option<u8> =
            p.query_first("SELECT /* innops:sandbox:replica */ @@GLOBAL.log_bin")?;
        if log_bin != Some(1) {
            return Err(bad_input(format!(
                "sandbox '{}' writes no binary log, so it cannot have replicas: create the primary with `innops sandbox up {} --binlog`",
                primary.name, primary.name
            )));
        }
        let logs: Vec<mysql::Row> = p.query("SHOW /* innops:sandbox:replica */ BINARY LOGS")?;
        let first: Option<String> = logs.first().and_then(|r| r.get(0));
        if !first.is_some_and(|f| f.ends_with(".000001")) {
            return Err(bad_input(format!(
                "sandbox '{}' no longer has its first binary log, so a new replica cannot replay its history: make the replica from a copy of its data, or start a new primary",
                primary.name
            )));
        }
        let user = format!("innops_repl_{}", self.port);
        let password: String = {
            use rand::Rng;
            rand::thread_rng()
                .sample_iter(&rand::distributions::Alphanumeric)
                .take(24)
                .map(char::from)
                .collect()
        };
        let lit = crate::sql::quote_string;
        p.query_drop(format!(
            "SET /* innops:sandbox:replica */ SESSION sql_log_bin = 0; \
             CREATE OR REPLACE USER {}@'127.0.0.1' IDENTIFIED BY {}; \
             GRANT REPLICATION SLAVE ON *.* TO {}@'127.0.0.1'",
            lit(&user),
            lit(&password),
            lit(&user)
        ))?;
        let target: String = p
            .query_first("SELECT /* innops:sandbox:replica */ @@GLOBAL.gtid_binlog_pos")?
            .unwrap_or_default();
        let mut r = self.conn_spec().resolve_plain().connect()?;
        r.query_drop(format!(
            "CHANGE /* innops:sandbox:replica */ MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = {}, \
             MASTER_USER = {}, MASTER_PASSWORD = {}, MASTER_USE_GTID = slave_pos, MASTER_CONNECT_RETRY = {REPLICA_CONNECT_RETRY_S}",
            primary.port,
            lit(&user),
            lit(&password)
        ))?;
        r.query_drop("START /* innops:sandbox:replica */ SLAVE")?;
        let start = std::time::Instant::now();
        loop {
            // 0 once the replica has applied `target`, -1 when 0.1 s passed first.
            let caught_up: Option<i64> = r.query_first(format!(
                "SELECT /* innops:sandbox:replica */ MASTER_GTID_WAIT({}, 0.1)",
                lit(&target)
            ))?;
            let row: Option<mysql::Row> =
                r.query_first("SHOW /* innops:sandbox:replica */ SLAVE STATUS")?;
            let field = |n: &str| -> String {
                row.as_ref()
                    .and_then(|row| {
                        let i = row.columns_ref().iter().position(|c| c.name_str() == n)?;
                        match row.as_ref(i)? {
                            mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
                            _ => None,
                        }
                    })
                    .unwrap_or_default()
            };
            let (io, sql) = (field("Slave_IO_Running"), field("Slave_SQL_Running"));
            if io == "Yes" && sql == "Yes" && caught_up == Some(0) {
                return Ok(());
            }
            let error = [field("Last_IO_Error"), field("Last_SQL_Error")]
                .into_iter()
                .find(|e| !e.is_empty());
            // On the loopback a first connection does not fail by chance: an error (a refused login, say, which
            // leaves the IO thread "Connecting" and retrying) ends the wait instead of the timeout.
            if let Some(e) = error {
                return Err(refused(format!(
                    "sandbox '{}' did not start replicating from '{}' ({e}), so it is removed: fix what the server said, then run `innops sandbox up {}` again",
                    self.name, primary.name, self.name
                )));
            }
            if start.elapsed() > timeout {
                return Err(refused(format!(
                    "sandbox '{}' did not catch up with '{}' within {} s (IO {io}, SQL {sql}): see {}",
                    self.name,
                    primary.name,
                    timeout.as_secs(),
                    self.error_log.display()
                )));
            }
        }
    }

    /// Start the server with extra command-line options and wait until it accepts connections. When the port
    /// was taken meanwhile, pick another and retry.
    pub fn start(&mut self, extra: &[String], timeout: Duration) -> anyhow::Result<()> {
        if let Some(pid) = self.running_pid() {
            return Err(refused(format!(
                "sandbox '{}' is already running (pid {pid}): stop it first with `innops sandbox stop {}`",
                self.name, self.name
            )));
        }
        // The first start sets root's TCP password before the server accepts any connection.
        let secure = self.secure_sql_path();
        let mut extra = extra.to_vec();
        if secure.exists() {
            extra.push(format!("--init-file={}", secure.display()));
        }
        for attempt in 0..3 {
            let offset = errorlog::end_offset(&self.error_log);
            let pid = self.spawn(&extra)?;
            match self.wait_ready(pid, offset, timeout) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&secure);
                    return Ok(());
                }
                Err(e) => {
                    let lines = errorlog::read_since(&self.error_log, offset)
                        .map(|t| t.lines)
                        .unwrap_or_default();
                    let port_taken = lines.iter().any(|l| {
                        l.contains("Address already in use") || l.contains("Bind on TCP/IP port")
                    });
                    if port_taken && attempt < 2 && !self.fixed_port {
                        wait_exit(pid, Duration::from_secs(30));
                        self.set_port(free_port()?)?;
                        continue;
                    }
                    return Err(e);
                }
            }
        }
        unreachable!("the loop returns on its last attempt")
    }

    fn spawn(&self, extra: &[String]) -> anyhow::Result<u32> {
        // A shell backgrounds the server and prints its pid, so the server is not our child: it outlives
        // innops and never lingers as our zombie. Its own process group keeps Ctrl-C in the terminal away.
        let mut args = vec![
            self.binary.display().to_string(),
            format!("--defaults-file={}", self.option_file.display()),
        ];
        args.extend(extra.iter().cloned());
        let out = without_client_secrets(&mut Command::new("/bin/sh"))
            .arg("-c")
            .arg("\"$@\" </dev/null >/dev/null 2>&1 & echo $!")
            .arg("sh")
            .args(&args)
            .process_group(0)
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .context("starting the sandbox server through /bin/sh")?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .with_context(|| {
                format!(
                    "reading the started server's pid from '{}'",
                    String::from_utf8_lossy(&out.stdout)
                )
            })
    }

    fn wait_ready(&self, pid: u32, log_offset: u64, timeout: Duration) -> anyhow::Result<()> {
        let target = self.conn_spec().resolve_plain();
        let start = Instant::now();
        loop {
            if mysql::Conn::new(target.opts.clone()).is_ok() {
                return Ok(());
            }
            if !process_alive(pid) {
                let lines = errorlog::read_since(&self.error_log, log_offset)
                    .map(|t| t.lines)
                    .unwrap_or_default();
                let summary = errorlog::summarize(&lines);
                let why = summary
                    .aborted
                    .or_else(|| summary.errors.last().cloned())
                    .unwrap_or_else(|| "no reason in the error log".to_string());
                return Err(anyhow::anyhow!(
                    "sandbox '{}' failed to start ({why}): read {} and fix the option that caused it",
                    self.name,
                    self.error_log.display()
                ));
            }
            if start.elapsed() > timeout {
                return Err(anyhow::anyhow!(
                    "sandbox '{}' did not accept connections within {}s: read {}",
                    self.name,
                    timeout.as_secs(),
                    self.error_log.display()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Kill the server without a clean shutdown (tests and drills that need a crash).
    pub fn kill9(&self) -> anyhow::Result<()> {
        if let Some(pid) = self.running_pid() {
            // A pid read from our own pid file.
            if !signal_and_wait(pid, Signal::Kill, Duration::from_secs(120)) {
                anyhow::bail!("pid {pid} survived SIGKILL for 120 s");
            }
        }
        Ok(())
    }

    /// Stop (SIGTERM, a clean shutdown) if running, then delete the directory.
    pub fn destroy(&self) -> anyhow::Result<()> {
        if let Some(pid) = self.running_pid() {
            // A pid read from our own pid file.
            if !signal_and_wait(pid, Signal::Term, Duration::from_secs(300)) {
                signal_and_wait(pid, Signal::Kill, Duration::from_secs(60));
            }
        }
        std::fs::remove_dir_all(&self.dir)
            .with_context(|| format!("removing {}", self.dir.display()))
    }
}

impl ConnSpec {
    /// The target without reading any option file (sandboxes are fully described by their own spec).
    pub fn resolve_plain(&self) -> crate::server::Target {
        let mut spec = self.clone();
        spec.defaults_file = None;
        crate::server::connect::to_target(&spec)
    }
}

/// Create `path` with mode 0600 (replacing any old file) and write `text`.
fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::remove_file(path);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

use std::os::unix::process::CommandExt as _;
