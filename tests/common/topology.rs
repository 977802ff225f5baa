//! A primary and its replicas, made as a DBA would make them (`innops sandbox up P --binlog`, then
//! `innops sandbox up R --replica-of P`), under one temporary root, every server stopped when the test ends.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use innops::server::sandbox::Sandbox;
use mysql::prelude::Queryable;

use super::{kill_processes_under, run_innops, Output};

pub struct Topology {
    pub root: PathBuf,
    pub primary: Sandbox,
    pub replicas: Vec<Sandbox>,
    _dir: tempfile::TempDir,
}

impl Topology {
    /// A primary `p` and `n` replicas `r1`…`rn` of it, replicating.
    pub fn new(n: usize) -> Topology {
        let names: Vec<String> = (1..=n).map(|i| format!("r{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        Topology::named("p", &names)
    }

    /// The primary `primary` and its replicas named `replicas`, replicating.
    pub fn named(primary: &str, replicas: &[&str]) -> Topology {
        let dir = tempfile::Builder::new()
            .prefix("int-")
            .tempdir_in("/tmp")
            .expect("temp dir");
        let root = dir.path().to_path_buf();
        let mut t = Topology {
            primary: up(&root, primary, &["--binlog"]),
            replicas: Vec::new(),
            root,
            _dir: dir,
        };
        for name in replicas {
            let r = up(&t.root, name, &["--replica-of", primary]);
            t.replicas.push(r);
        }
        t
    }

    /// `innops ARGS --sandbox NAME --sandbox-root ROOT`.
    pub fn innops(&self, on: &Sandbox, args: &[&str]) -> Output {
        let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        all.extend([
            "--sandbox".into(),
            on.name.clone(),
            "--sandbox-root".into(),
            self.root.display().to_string(),
        ]);
        run_innops(&all, &[])
    }

    /// Wait until every replica has applied all the primary has logged; the test fails after 120 s.
    pub fn sync(&self) {
        let pos: String = conn(&self.primary)
            .query_first("SELECT @@GLOBAL.gtid_binlog_pos")
            .unwrap()
            .unwrap_or_default();
        let start = Instant::now();
        for r in &self.replicas {
            let mut c = conn(r);
            loop {
                // 0 once applied, -1 after 0.1 s without.
                let done: Option<i64> = c
                    .exec_first("SELECT MASTER_GTID_WAIT(?, 0.1)", (&pos,))
                    .unwrap();
                if done == Some(0) {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(120),
                    "replica {} did not apply {pos}",
                    r.name
                );
            }
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for s in self.replicas.iter().chain([&self.primary]) {
            let _ = s.destroy();
        }
        kill_processes_under(&self.root);
    }
}

/// A session as root over the sandbox's socket.
pub fn conn(s: &Sandbox) -> mysql::Conn {
    s.conn_spec().resolve_plain().connect().expect("connect")
}

fn up(root: &std::path::Path, name: &str, extra: &[&str]) -> Sandbox {
    let mut args: Vec<String> = ["sandbox", "up", name, "--buffer-pool", "64M"]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect();
    args.extend(["--sandbox-root".into(), root.display().to_string()]);
    let o = run_innops(&args, &[]);
    assert_eq!(o.code, 0, "sandbox up {name}: {o:?}");
    Sandbox::open(root, name).expect("open sandbox")
}
