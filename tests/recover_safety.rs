//! `innops recover`'s own safety (issue 21, "found by the fault probe"): a failed copy starts the original
//! again, refusals that used to come after the stop come in preflight, no server innops starts inherits the
//! client password, and the dump's verdict is one a script can read.

use std::path::{Path, PathBuf};

use mysql::prelude::Queryable;

use crate::common::{run_innops, spawn_innops, wait_holding, wait_innops, Output, Sandboxed};

/// `recover --sandbox … --out OUT --copy-to COPY` and `extra`.
fn recover(sb: &Sandboxed, out: &Path, copy: &Path, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "recover",
        "--sandbox",
        &sb.sandbox.name,
        "--sandbox-root",
        sb.root.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--copy-to",
        copy.to_str().unwrap(),
        // What the SQL reads alone get back (the page pass, auto by default, is tests/recover_pages.rs's).
        "--pages",
        "never",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    // The run directory beside the copy, never in the working directory.
    if !extra.contains(&"--run-dir") {
        let name = copy.file_name().unwrap().to_string_lossy();
        let run = copy.with_file_name(format!("run-{name}"));
        a.extend(["--run-dir".to_string(), run.display().to_string()]);
    }
    a
}

/// A small table, so the dump has something to read.
fn small_table(sb: &Sandboxed) {
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("CREATE TABLE db.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
        .unwrap();
    c.query_drop("INSERT INTO db.t SELECT seq, CONCAT('v', seq) FROM db.seq_1_to_300")
        .unwrap();
}

fn level(sb: &Sandboxed) -> u8 {
    sb.conn()
        .query_first("SELECT @@innodb_force_recovery")
        .unwrap()
        .unwrap()
}

/// A tmpfs of `bytes` mounted at a directory, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, bytes: u64) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let st = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}")])
            .arg("tmpfs")
            .arg(at)
            .status()
            .unwrap();
        assert!(
            st.success(),
            "this test fills a small tmpfs of its own: it needs to mount one (root)"
        );
        Tmpfs(at.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Fill the filesystem at `dir` but for `leave` bytes.
fn fill(dir: &Path, leave: u64) {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let block = vec![0u8; 1 << 16];
    while f.write_all(&block).is_ok() {}
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(leave)).unwrap();
}

#[test]
fn a_copy_that_fills_the_disk_starts_the_original_again_and_says_so() {
    let sb = Sandboxed::new("rsfull");
    small_table(&sb);
    let pid = sb.sandbox.running_pid().unwrap();
    let work = sb.root.join("work");
    let (_, bytes) = innops::procedures::recover::copy::measure(
        &sb.sandbox.datadir,
        &innops::procedures::recover::copy::log_files(&sb.sandbox.datadir),
    )
    .unwrap();
    // Room for the preflight (the copy and a tenth), filled once the server is down.
    let disk = Tmpfs::mount(
        &work.join("small"),
        (bytes + bytes / 5) / 4096 * 4096 + (1 << 20),
    );
    let copy = disk.0.join("copy");
    let hold = work.join("hold");
    std::fs::create_dir_all(&hold).unwrap();
    let spec = format!("after-action:stop={}", hold.display());
    let run_dir = work.join("run");
    let mut child = spawn_innops(
        &recover(
            &sb,
            &work.join("out"),
            &copy,
            &["--execute", "--yes", "--run-dir", run_dir.to_str().unwrap()],
        ),
        &[("INNOPS_TEST_HOLD", spec.as_str())],
    );
    wait_holding(&hold, &mut child);
    assert!(
        !innops::server::process::process_alive(pid),
        "held after the stop"
    );
    assert!(
        sb.target().connect().is_err(),
        "the server is down for the copy"
    );
    fill(&disk.0, 1 << 20);
    std::fs::write(hold.join("go"), b"").unwrap();
    let out = wait_innops(child);
    // The copy failed (exit 3), and the message says the server was started again.
    assert_eq!(out.code, 3, "{out:?}");
    let line = out.error_line();
    assert!(line.contains("step copy failed: disk full"), "{line}");
    assert!(
        line.contains("innops started the original server again"),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "innops removed its unfinished copy {}",
            copy.display()
        )),
        "{line}"
    );
    assert!(!copy.exists());
    // It runs, as it was.
    assert_eq!(level(&sb), 0);
    let rows: u64 = sb
        .conn()
        .query_first("SELECT COUNT(*) FROM db.t")
        .unwrap()
        .unwrap();
    assert_eq!(rows, 300);
    // Resuming would copy a running server's files (its stop step is done): refused, and it says what to do.
    let resumed = run_innops(
        &[
            "resume".into(),
            run_dir.display().to_string(),
            "--yes".into(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 1, "{resumed:?}");
    assert!(
        resumed
            .error_line()
            .contains("run innops recover again as a new run"),
        "{resumed:?}"
    );
    assert!(!copy.exists());
}

#[test]
fn an_out_file_and_a_copy_dir_too_deep_for_its_socket_are_refused_before_anything_stops() {
    let sb = Sandboxed::new("rspre");
    let pid = sb.sandbox.running_pid().unwrap();
    let work = sb.root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let file = work.join("rescue.sql");
    std::fs::write(&file, b"keep me").unwrap();
    let copy = work.join("copy");
    let out = run_innops(&recover(&sb, &file, &copy, &["--execute", "--yes"]), &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.error_line(),
        format!(
            "innops: step preflight refused: --out {} names a file: name a new or empty directory for --out",
            file.display()
        )
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    // COPY/server/mysqld.sock one byte over 107.
    let base = work.display().to_string().len() + 1;
    let deep = work.join("c".repeat(108 - base - "/server/mysqld.sock".len()));
    assert_eq!(deep.join("server/mysqld.sock").as_os_str().len(), 108);
    let out2 = run_innops(
        &recover(&sb, &work.join("out"), &deep, &["--execute", "--yes"]),
        &[],
    );
    assert_eq!(out2.code, 1, "{out2:?}");
    let line = out2.error_line();
    assert!(
        line.contains("mysqld.sock would be 108 bytes, longer than a Unix socket path may be (107): give a shorter --copy-to"),
        "{line}"
    );
    // Nothing was stopped, copied or made.
    assert_eq!(sb.sandbox.running_pid(), Some(pid));
    assert!(!copy.exists() && !deep.exists() && !work.join("out").exists());
}

/// `MYSQL_PWD` in a process's environment, as /proc shows it.
fn has_mysql_pwd(pid: u32) -> bool {
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    env.split(|b| *b == 0)
        .any(|kv| kv.starts_with(b"MYSQL_PWD="))
}

#[test]
fn no_server_innops_starts_inherits_mysql_pwd() {
    let dir = tempfile::Builder::new()
        .prefix("ino-")
        .tempdir_in("/tmp")
        .unwrap();
    let root = dir.path();
    let secret = [("MYSQL_PWD", "not-for-servers")];
    let up: Vec<String> = [
        "sandbox",
        "up",
        "rspwd",
        "--sandbox-root",
        root.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run_innops(&up, &secret);
    assert_eq!(out.code, 0, "{out:?}");
    let mut sandbox = innops::server::sandbox::Sandbox::open(root, "rspwd").unwrap();
    let pid = sandbox.running_pid().unwrap();
    // The check reads what it means to: innops itself has it.
    assert!(has_mysql_pwd(std::process::id()) || std::env::var_os("MYSQL_PWD").is_none());
    assert!(
        !has_mysql_pwd(pid),
        "the sandbox server inherited MYSQL_PWD"
    );

    // The private server of a recovery: from a down server's data directory (innops connects to nothing
    // else, so the password reaches no server), held while the dump opens its first session.
    let mut c = sandbox.conn_spec().resolve_plain().connect().unwrap();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("CREATE TABLE db.t (id INT PRIMARY KEY) ENGINE=InnoDB")
        .unwrap();
    c.query_drop("INSERT INTO db.t VALUES (1), (2)").unwrap();
    drop(c);
    sandbox.kill9().unwrap();
    let work = root.join("work");
    let hold = work.join("hold");
    std::fs::create_dir_all(&hold).unwrap();
    let copy = work.join("copy");
    let args: Vec<String> = [
        "recover",
        "--datadir",
        sandbox.datadir.to_str().unwrap(),
        "--out",
        work.join("out").to_str().unwrap(),
        "--copy-to",
        copy.to_str().unwrap(),
        "--execute",
        "--yes",
        "--run-dir",
        work.join("run").to_str().unwrap(),
        "--pages",
        "never",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let spec = format!("dump-connect-1={}", hold.display());
    let mut child = spawn_innops(&args, &[("INNOPS_TEST_HOLD", spec.as_str()), secret[0]]);
    wait_holding(&hold, &mut child);
    let private: u32 = std::fs::read_to_string(copy.join("server/mysqld.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let leaked = has_mysql_pwd(private);
    std::fs::write(hold.join("go"), b"").unwrap();
    let out: Output = wait_innops(child);
    assert!(!leaked, "the private server inherited MYSQL_PWD");
    assert_eq!(out.code, 0, "{out:?}");
    sandbox
        .start(&[], std::time::Duration::from_secs(120))
        .unwrap();
    sandbox.destroy().unwrap();
}

fn private_pid(copy: &Path) -> u32 {
    std::fs::read_to_string(copy.join("server/mysqld.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_kill_during_escalate_resumes_and_a_failed_dump_leaves_no_private_server() {
    let sb = Sandboxed::new("rspriv");
    small_table(&sb);
    let work = sb.root.join("work");
    let hold = work.join("hold-a");
    std::fs::create_dir_all(&hold).unwrap();

    // kill -9 while the escalation has a private server up at level 1 and has not recorded it.
    let (out_a, copy_a, run_a) = (work.join("out-a"), work.join("copy-a"), work.join("run-a"));
    let spec = format!("escalate-started-1={}", hold.display());
    let mut child = spawn_innops(
        &recover(
            &sb,
            &out_a,
            &copy_a,
            &["--execute", "--yes", "--run-dir", run_a.to_str().unwrap()],
        ),
        &[("INNOPS_TEST_HOLD", spec.as_str())],
    );
    wait_holding(&hold, &mut child);
    let left = private_pid(&copy_a);
    child.kill().unwrap();
    wait_innops(child);
    assert!(
        innops::server::process::process_alive(left),
        "the private server outlives innops"
    );
    // Resume stops this run's leftover server and goes on (it refused before: "already runs").
    let resumed = run_innops(
        &["resume".into(), run_a.display().to_string(), "--yes".into()],
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert!(!innops::server::process::process_alive(left));
    let m = innops::dump::Manifest::read(&out_a).unwrap();
    assert_eq!(m.table("db", "t").unwrap().rows, 300);
    assert_eq!(level(&sb), 0);

    // The dump fails (its output directory turned into a file under it): the private server is stopped.
    let (out_b, copy_b) = (work.join("out-b"), work.join("copy-b"));
    let hold = work.join("hold-b");
    std::fs::create_dir_all(&hold).unwrap();
    let spec = format!("dump-connect-1={}", hold.display());
    let mut child = spawn_innops(
        &recover(&sb, &out_b, &copy_b, &["--execute", "--yes"]),
        &[("INNOPS_TEST_HOLD", spec.as_str())],
    );
    wait_holding(&hold, &mut child);
    let running = private_pid(&copy_b);
    assert!(innops::server::process::process_alive(running));
    std::fs::remove_dir(&out_b).unwrap();
    std::fs::write(&out_b, b"in the way").unwrap();
    std::fs::write(hold.join("go"), b"").unwrap();
    let out = wait_innops(child);
    assert_eq!(out.code, 3, "{out:?}");
    let line = out.error_line();
    assert!(line.contains("step dump failed"), "{line}");
    assert!(
        line.contains("innops stopped the private server on the copy"),
        "{line}"
    );
    assert!(!innops::server::process::process_alive(running));
    assert_eq!(level(&sb), 0);
}

#[test]
fn paths_with_spaces_recover_and_verify_the_load() {
    let sb = Sandboxed::new("rsspace");
    small_table(&sb);
    let work = sb.root.join("work dir");
    let (out, copy) = (work.join("rescued rows"), work.join("the copy"));
    let run = run_innops(
        &recover(&sb, &out, &copy, &["--execute", "--yes", "--verify-load"]),
        &[],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let m = innops::dump::Manifest::read(&out).unwrap();
    assert_eq!(m.table("db", "t").unwrap().rows, 300);
    // The load was checked (it failed in mariadb-install-db's chown before), and its sandbox is gone.
    assert!(
        run.stdout
            .contains("post ✓ the dump loads with the rows and content of the manifest"),
        "{}",
        run.stdout
    );
    assert!(!copy.join("verify/load").exists());
}

#[test]
fn when_no_level_starts_the_refusal_quotes_the_cause_from_the_error_log() {
    let sb = Sandboxed::new("rscause");
    small_table(&sb);
    // A crash, then the redo log that crash recovery needs is damaged: no level up to 3 skips the redo.
    sb.sandbox.kill9().unwrap();
    crate::common::recover::damage_redo(&sb);
    let work = sb.root.join("work");
    let args: Vec<String> = [
        "recover",
        "--datadir",
        sb.sandbox.datadir.to_str().unwrap(),
        "--out",
        work.join("out").to_str().unwrap(),
        "--copy-to",
        work.join("copy").to_str().unwrap(),
        "--execute",
        "--yes",
        "--run-dir",
        work.join("run").to_str().unwrap(),
        "--pages",
        "never",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = run_innops(&args, &[]);
    assert_eq!(out.code, 1, "{out:?}");
    let line = out.error_line();
    assert!(
        line.contains(
            "at any level up to 3 (its error log at level 3: InnoDB: Missing FILE_CHECKPOINT"
        ),
        "{line}"
    );
    assert!(!line.contains("Aborting"), "{line}");
}

/// A table with a damaged leaf (a lost range) and a garbled one (garbage records with a valid checksum: the
/// private server crashes on them), recovered with `innops recover`: its output and dump directory.
fn crash_and_loss(name: &str) -> (Sandboxed, Output, PathBuf) {
    use crate::common::recover::{damage, garble, int_table, leaves, start_at, stop_slow};
    let mut sb = Sandboxed::new(name);
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    drop(c);
    stop_slow(&sb);
    let leaves = leaves(&sb, "t", 3);
    damage(&sb, "t", leaves[leaves.len() / 3].page);
    garble(&sb, "t", leaves[2 * leaves.len() / 3].page);
    start_at(&mut sb, 0);
    let work = sb.root.join("work");
    let out_dir = work.join("out");
    let run = run_innops(
        &recover(&sb, &out_dir, &work.join("copy"), &["--execute", "--yes"]),
        &[],
    );
    (sb, run, out_dir)
}

#[test]
fn a_crash_during_the_dump_says_innops_restarts_the_private_server_and_exits_4() {
    let (_sb, run, out_dir) = crash_and_loss("rscrash");
    assert_eq!(run.code, 4, "{run:?}");
    let restart = run
        .stderr
        .lines()
        .find(|l| l.contains("the private server crashed or went away"))
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(
        restart.contains(
            "innops is restarting it at level 1, and the dump goes on from the last key read"
        ),
        "{restart}"
    );
    assert!(!restart.contains("run the command again"), "{restart}");
    let m = innops::dump::Manifest::read(&out_dir).unwrap();
    let t = m.table("db", "t").unwrap();
    assert!(t.reconnects >= 1 && !t.lost.is_empty(), "{t:?}");
}

/// After that restart, lost.jsonl still lists the keys the secondary index holds inside each lost range, read
/// through a session from after the restart, not errors from the table's first session.
#[test]
fn lost_ranges_keep_their_secondary_keys_after_a_private_server_restart() {
    let (_sb, run, out_dir) = crash_and_loss("rs2nd");
    assert_eq!(run.code, 4, "{run:?}");
    let lost = std::fs::read_to_string(out_dir.join("lost.jsonl")).unwrap();
    assert!(!lost.is_empty());
    for line in lost.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for index in v["secondary"].as_array().unwrap() {
            assert!(index.get("error").is_none(), "{index}");
            assert!(index["rows"].is_array(), "{index}");
        }
    }
}
