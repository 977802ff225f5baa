//! The face of innops beyond its procedures: `sandbox up`'s choices and its cleanup after a failed start,
//! `innops runs` over real runs, and the generated completions and man page.

use std::process::Command;

use mysql::prelude::Queryable;

use crate::common::{run_innops, Output, Sandboxed};

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn temp_root() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("ino-")
        .tempdir_in("/tmp")
        .unwrap()
}

fn in_root(root: &std::path::Path, args: &[&str]) -> Output {
    let mut v = s(args);
    v.extend(["--sandbox-root".to_string(), root.display().to_string()]);
    run_innops(&v, &[])
}

#[test]
fn a_failed_sandbox_up_says_why_in_one_sentence_and_leaves_nothing_behind() {
    let dir = temp_root();
    let root = dir.path();
    // A path that is no server, a size that is no size, a size too small: refused before anything is made.
    for (args, says) in [
        (&["--mariadbd", "/nonexistent/mariadbd"][..], "--mariadbd"),
        (
            &["--buffer-pool", "lots"],
            "--buffer-pool 'lots' is not a size",
        ),
        (&["--buffer-pool", "1K"], "--buffer-pool '1K'"),
    ] {
        let out = in_root(root, &[&["sandbox", "up", "bad"][..], args].concat());
        assert_eq!(out.code, 2, "{out:?}");
        assert!(out.error_line().contains(says), "{out:?}");
        assert!(
            !root.join("bad").exists(),
            "{args:?} left {}",
            root.join("bad").display()
        );
    }
    // A binary that claims to be MariaDB but will not run as a server: the data directory is made, the
    // start fails, and the whole sandbox is removed again.
    let fake = root.join("fake-mariadbd");
    std::fs::write(
        &fake,
        "#!/bin/sh\ncase \"$1\" in --version) echo 'mariadbd  Ver 10.11.6-MariaDB';; *) exit 1;; esac\n",
    )
    .unwrap();
    Command::new("chmod")
        .args(["755"])
        .arg(&fake)
        .status()
        .unwrap();
    let out = in_root(
        root,
        &["sandbox", "up", "bad", "--mariadbd", fake.to_str().unwrap()],
    );
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.error_line().contains("did not start and was removed"),
        "{out:?}"
    );
    assert!(!root.join("bad").exists(), "the failed sandbox is gone");
    let list = in_root(root, &["sandbox", "list", "--format", "json"]).json();
    assert_eq!(list.as_array().unwrap().len(), 0, "{list}");
}

#[test]
fn sandbox_up_takes_the_port_binary_and_buffer_pool_given_and_lists_under_a_header() {
    let dir = temp_root();
    let root = dir.path();
    let port = innops::server::sandbox::free_port().unwrap();
    let bin = innops::server::sandbox::find_server_binary().unwrap().0;
    let up = in_root(
        root,
        &[
            "sandbox",
            "up",
            "chosen",
            "--port",
            &port.to_string(),
            "--mariadbd",
            bin.to_str().unwrap(),
            "--buffer-pool",
            "48M",
        ],
    );
    assert_eq!(up.code, 0, "{up:?}");
    let sb = innops::server::sandbox::Sandbox::open(root, "chosen").unwrap();
    assert_eq!(sb.port, port);
    assert_eq!(sb.binary, bin);
    let mut c = sb.conn_spec().resolve_plain().connect().unwrap();
    let (p, bp): (u16, u64) = c
        .query_first("SELECT @@port, @@innodb_buffer_pool_size")
        .unwrap()
        .unwrap();
    assert_eq!((p, bp), (port, 48 << 20));
    // The port is taken now: a second sandbox on it is refused, not moved elsewhere.
    let taken = in_root(
        root,
        &["sandbox", "up", "second", "--port", &port.to_string()],
    );
    assert_eq!(taken.code, 2, "{taken:?}");
    assert!(
        taken.error_line().contains(&format!("port {port}")),
        "{taken:?}"
    );
    assert!(!root.join("second").exists());
    let list = in_root(root, &["sandbox", "list"]);
    let mut lines = list.stdout.lines();
    let header = lines.next().unwrap();
    for col in ["NAME", "STATUS", "PORT", "SOCKET"] {
        assert!(header.contains(col), "{header}");
    }
    let row = lines.next().unwrap();
    assert!(
        row.starts_with("chosen") && row.contains("running") && row.contains(&port.to_string()),
        "{row}"
    );
    assert_eq!(in_root(root, &["sandbox", "down", "chosen"]).code, 0);
}

/// innops run in `cwd` against the sandbox, so its run directories go to `cwd/innops-runs`.
fn innops_in(sb: &Sandboxed, cwd: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_innops"));
    c.args(args)
        .args(["--sandbox", &sb.sandbox.name, "--sandbox-root"])
        .arg(&sb.root)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .env_remove("INNOPS_SANDBOX_DIR")
        .env_remove("MYSQL_PWD");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    Output {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

#[test]
fn runs_lists_done_interrupted_and_refused_runs_with_their_step_and_dir() {
    let sb = Sandboxed::new("runs");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE d").unwrap();
    for t in ["t", "u", "v"] {
        c.query_drop(format!(
            "CREATE TABLE d.{t} (id INT PRIMARY KEY AUTO_INCREMENT, c VARCHAR(20)) ENGINE=MyISAM"
        ))
        .unwrap();
        c.query_drop(format!("INSERT INTO d.{t} (c) VALUES ('a'), ('b')"))
            .unwrap();
    }
    // A trigger makes the default strategy refuse d.v at its preflight.
    c.query_drop("CREATE TRIGGER d.tv BEFORE INSERT ON d.v FOR EACH ROW SET NEW.c = 'x'")
        .unwrap();
    let cwd = sb.root.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let go = ["--execute", "--no-bench", "--yes"];

    // A dry run writes no run directory: nothing to list yet.
    assert_eq!(
        innops_in(&sb, &cwd, &["convert", "--tables", "d.t"], &[]).code,
        0
    );
    let none = run_innops(
        &s(&[
            "runs",
            "--runs-dir",
            cwd.join("innops-runs").to_str().unwrap(),
        ]),
        &[],
    );
    assert_eq!(none.code, 0, "{none:?}");
    assert!(
        none.stdout.contains("no runs in") && none.stdout.contains("--runs-dir"),
        "{none:?}"
    );

    let done = innops_in(
        &sb,
        &cwd,
        &[&["convert", "--tables", "d.t"][..], &go].concat(),
        &[],
    );
    assert_eq!(done.code, 0, "{done:?}");
    let killed = innops_in(
        &sb,
        &cwd,
        &[&["convert", "--tables", "d.u"][..], &go].concat(),
        &[("INNOPS_FAULT", "after-action:copy:d.u")],
    );
    assert_eq!(killed.code, 137, "{killed:?}");
    let refused = innops_in(
        &sb,
        &cwd,
        &[&["convert", "--tables", "d.v"][..], &go].concat(),
        &[],
    );
    assert_eq!(refused.code, 1, "{refused:?}");

    let runs_dir = cwd.join("innops-runs");
    let j = run_innops(
        &s(&[
            "runs",
            "--runs-dir",
            runs_dir.to_str().unwrap(),
            "--format",
            "json",
        ]),
        &[],
    )
    .json();
    let runs = j.as_array().unwrap();
    let by = |obj: &str| {
        runs.iter()
            .find(|r| r["objects"] == obj)
            .unwrap_or_else(|| panic!("no run of {obj}: {j}"))
    };
    let t = by("d.t");
    assert_eq!(
        (t["status"].as_str(), t["resumable"].as_bool()),
        (Some("done"), Some(false)),
        "{t}"
    );
    assert_eq!(t["procedure"], "convert");
    let u = by("d.u");
    assert_eq!(
        (
            u["status"].as_str(),
            u["step"].as_str(),
            u["resumable"].as_bool()
        ),
        (Some("interrupted"), Some("copy:d.u"), Some(true)),
        "{u}"
    );
    assert!(
        std::path::Path::new(u["run_dir"].as_str().unwrap())
            .join("journal.jsonl")
            .is_file(),
        "{u}"
    );
    let v = by("d.v");
    assert_eq!(
        (
            v["status"].as_str(),
            v["step"].as_str(),
            v["resumable"].as_bool()
        ),
        (Some("refused"), Some("preflight:d.v"), Some(false)),
        "{v}"
    );

    let text = run_innops(&s(&["runs", "--runs-dir", runs_dir.to_str().unwrap()]), &[]);
    assert_eq!(text.code, 0, "{text:?}");
    assert!(
        text.stdout.lines().next().unwrap().contains("STATUS"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("interrupted at step copy:d.u, resumable"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("innops resume"), "{}", text.stdout);
    assert!(
        text.stdout
            .contains(&format!("d.t on {}", t["target"].as_str().unwrap())),
        "every run names its server: {}",
        text.stdout
    );

    // Resumed to its end, the interrupted run lists as done.
    let resumed = innops_in(
        &sb,
        &cwd,
        &[
            "resume",
            u["run_dir"].as_str().unwrap(),
            "--yes",
            "--no-bench",
        ],
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let j = run_innops(
        &s(&[
            "runs",
            "--runs-dir",
            runs_dir.to_str().unwrap(),
            "--format",
            "json",
        ]),
        &[],
    )
    .json();
    let u = j
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["objects"] == "d.u")
        .unwrap()
        .clone();
    assert_eq!(u["status"], "done", "{u}");
}

#[test]
fn completions_and_man_page_come_from_the_binary() {
    for shell in ["bash", "zsh", "fish"] {
        let out = run_innops(&s(&["completions", shell]), &[]);
        assert_eq!(out.code, 0, "{out:?}");
        for sub in ["convert", "bench", "sandbox", "runs"] {
            assert!(out.stdout.contains(sub), "{shell}: no {sub}");
        }
    }
    let bash = run_innops(&s(&["completions", "bash"]), &[]);
    let check = Command::new("bash")
        .args(["-n", "-c", &bash.stdout])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let man = run_innops(&s(&["man"]), &[]);
    assert_eq!(man.code, 0);
    assert!(
        man.stdout.contains(".TH INNOPS 1") && man.stdout.contains(".SS \"innops bench"),
        "{}",
        &man.stdout[..200]
    );
    let bad = run_innops(&s(&["completions", "tcsh"]), &[]);
    assert_eq!(bad.code, 2, "{bad:?}");
}

#[test]
fn a_closed_pipe_ends_the_output_quietly_instead_of_a_panic() {
    // `innops man | head -1` after head has gone: the pipe's read end is closed before innops writes, so
    // its first print meets a broken pipe, every time.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_innops"))
        .arg("man")
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    // Ended by SIGPIPE, as `ls | head` ends ls: not exit 101 (a panic).
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
}
