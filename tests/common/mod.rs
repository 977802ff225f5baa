//! Shared test harness: every test gets a sandbox of its own (own datadir, socket, free port) under a fresh
//! temporary root, destroyed when the test ends.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use innops::server::sandbox::{Sandbox, SandboxOptions};
use innops::server::Target;

pub struct Sandboxed {
    pub sandbox: Sandbox,
    pub root: PathBuf,
    _dir: tempfile::TempDir,
}

impl Sandboxed {
    /// A fresh, started sandbox.
    pub fn new(name: &str) -> Sandboxed {
        Sandboxed::with(
            name,
            SandboxOptions {
                buffer_pool: Some("64M".into()),
                extra: Vec::new(),
                ..Default::default()
            },
        )
    }

    pub fn with(name: &str, opts: SandboxOptions) -> Sandboxed {
        // Short paths: the socket must fit in 108 bytes.
        let dir = tempfile::Builder::new()
            .prefix("ino-")
            .tempdir_in("/tmp")
            .expect("temp dir");
        let root = dir.path().to_path_buf();
        let mut sandbox = Sandbox::create(&root, name, &opts).expect("create sandbox");
        sandbox
            .start(&[], Duration::from_secs(300))
            .expect("start sandbox");
        Sandboxed {
            sandbox,
            root,
            _dir: dir,
        }
    }

    pub fn target(&self) -> Target {
        self.sandbox.conn_spec().resolve_plain()
    }

    pub fn conn(&self) -> mysql::Conn {
        self.target().connect().expect("connect to sandbox")
    }

    /// Reload the sandbox's metadata (its port may change on restart).
    pub fn reopen(&mut self) {
        self.sandbox = Sandbox::open(&self.root, &self.sandbox.name).expect("open sandbox");
    }

    /// Run innops against this sandbox: `--sandbox NAME --sandbox-root ROOT` are appended.
    pub fn innops(&self, args: &[&str]) -> Output {
        self.innops_env(args, &[])
    }

    /// [`Sandboxed::innops`] with extra environment (fault injection, test hooks).
    pub fn innops_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.extend([
            "--sandbox".into(),
            self.sandbox.name.clone(),
            "--sandbox-root".into(),
            self.root.display().to_string(),
        ]);
        run_innops(&all, env)
    }
}

impl Drop for Sandboxed {
    fn drop(&mut self) {
        let _ = self.sandbox.destroy();
        // A test that fails half-way must not leave servers behind either: recover's private server on a copy
        // under this root, or an innops the test spawned and never waited for.
        kill_processes_under(&self.root);
    }
}

/// SIGKILL every `mariadbd`, `mysqld` or `innops` process whose command line names a path under `root`.
pub fn kill_processes_under(root: &Path) {
    let root = root.display().to_string();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    let me = std::process::id();
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmdline) = std::fs::read(p.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let program = args
            .first()
            .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
            .unwrap_or_default();
        let ours = ["mariadbd", "mysqld", "innops"].contains(&program.as_str());
        if ours && args.iter().any(|a| a.contains(&root)) {
            // SAFETY: kill(2) on a process id read from /proc; at worst it is gone already.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    }
}

/// What a run of the binary printed.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The one error line (`innops: …`) of stderr; the test fails unless there is exactly one. Step lines of a
    /// run that acted come before it.
    pub fn error_line(&self) -> String {
        let lines: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| l.starts_with("innops: "))
            .collect();
        assert_eq!(lines.len(), 1, "one error sentence: {}", self.stderr);
        lines[0].to_string()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }
}

/// Run the innops binary with no terminal on stdin and the given extra environment.
pub fn run_innops(args: &[String], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_innops"));
    c.args(args)
        .stdin(Stdio::null())
        .env_remove("INNOPS_SANDBOX_DIR")
        .env_remove("MYSQL_PWD");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run innops");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Start the innops binary without waiting for it (a test that kills it, or acts while it holds).
pub fn spawn_innops(args: &[String], env: &[(&str, &str)]) -> std::process::Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_innops"));
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("INNOPS_SANDBOX_DIR")
        .env_remove("MYSQL_PWD");
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("start innops")
}

/// Wait for a spawned innops to end.
pub fn wait_innops(child: std::process::Child) -> Output {
    let out = child.wait_with_output().expect("wait for innops");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Wait until a run held at a test point (`INNOPS_TEST_HOLD=POINT=DIR`) writes `DIR/holding`; fails the test
/// if the run ends first.
pub fn wait_holding(dir: &Path, child: &mut std::process::Child) {
    while !dir.join("holding").exists() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("innops ended ({status}) before it reached the hold point");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Run `sql` from a session of its own and return once the server shows it waiting for a lock (innops's write
/// guard); the test fails if the statement completes instead. Join the handle after letting the guard go.
pub fn write_that_waits(sb: &Sandboxed, sql: &str) -> std::thread::JoinHandle<()> {
    use mysql::prelude::Queryable;
    let target = sb.target();
    let sql = sql.to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || {
        let mut w = target.connect().unwrap();
        tx.send(w.connection_id()).unwrap();
        w.query_drop(sql).unwrap();
    });
    let id = rx.recv().unwrap();
    let mut watch = sb.conn();
    loop {
        let state: Option<Option<String>> = watch
            .exec_first(
                "SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = ?",
                (id,),
            )
            .unwrap();
        if state.flatten().is_some_and(|s| s.contains("lock")) {
            return writer;
        }
        assert!(
            !writer.is_finished(),
            "the write went through while the guard was held"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// The events of a run's journal.
pub fn events(run_dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run_dir.join("journal.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub mod convert;
pub mod recover;
pub mod topology;

pub const MIB: u64 = 1 << 20;

/// Owned strings for a command line.
pub fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// `--sandbox NAME --sandbox-root ROOT`: the flags that point a command at this test's sandbox.
pub fn sandbox_args(sb: &Sandboxed) -> Vec<String> {
    vec![
        "--sandbox".into(),
        sb.sandbox.name.clone(),
        "--sandbox-root".into(),
        sb.root.display().to_string(),
    ]
}

/// `innops sandbox ACTION` on this test's sandbox; the test fails unless it exits 0.
pub fn sandbox_cmd(sb: &Sandboxed, action: &str) {
    let mut all = args(&["sandbox", action, &sb.sandbox.name]);
    all.extend(["--sandbox-root".into(), sb.root.display().to_string()]);
    let o = run_innops(&all, &[]);
    assert_eq!(o.code, 0, "{o:?}");
}

/// `innops resume RUN_DIR --yes` with `extra` flags.
pub fn resume(run_dir: &Path, extra: &[&str]) -> Output {
    let mut all = vec![
        "resume".to_string(),
        run_dir.display().to_string(),
        "--yes".into(),
    ];
    all.extend(args(extra));
    run_innops(&all, &[])
}

/// The step `id` of a report (plan.json's or `--format json`'s); the test fails if there is none.
pub fn step<'a>(report: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {report}"))
}

/// The sandbox's innops drop-in file (empty when there is none).
pub fn dropin(sb: &Sandboxed) -> String {
    std::fs::read_to_string(sb.sandbox.conf_dir.join("99-innops.cnf")).unwrap_or_default()
}

/// Whether schema `name` exists.
pub fn schema_exists(sb: &Sandboxed, name: &str) -> bool {
    use mysql::prelude::Queryable;
    let n: Option<String> = sb
        .conn()
        .exec_first(
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?",
            (name,),
        )
        .unwrap();
    n.is_some()
}

/// The engine of `db`.`table`, read from information_schema (None when the table does not exist).
pub fn engine_of(sb: &Sandboxed, db: &str, table: &str) -> Option<String> {
    use mysql::prelude::Queryable;
    sb.conn()
        .exec_first::<Option<String>, _, _>(
            "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
            (db, table),
        )
        .unwrap()
        .flatten()
}

/// A CA and a certificate it signs for 127.0.0.1, written as DIR/NAME-ca.pem, NAME-cert.pem and NAME-key.pem.
pub fn certificates(dir: &Path, name: &str) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, format!("innops test CA {name}"));
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "127.0.0.1");
    let cert = params.signed_by(&key, &ca_cert, &ca_key).unwrap();
    std::fs::write(dir.join(format!("{name}-ca.pem")), ca_cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}-cert.pem")), cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}-key.pem")), key.serialize_pem()).unwrap();
}
