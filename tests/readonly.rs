//! `innops readonly` end to end on sandboxes: the switch and its undo, the slow shutdown with pending purge,
//! an unclean stop, a read-only start refused for crash recovery, and innops killed after each action.

use std::time::Duration;

use mysql::prelude::Queryable;

use crate::common::{dropin, resume, step, MIB};
use crate::common::{
    events, read_json, run_innops, spawn_innops, wait_holding, wait_innops, Sandboxed,
};

fn var(sb: &Sandboxed, name: &str) -> u64 {
    sb.conn()
        .query_first(format!("SELECT @@GLOBAL.{name}"))
        .unwrap()
        .unwrap()
}

fn args<'a>(run_dir: &'a std::path::Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "readonly",
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ];
    a.extend_from_slice(extra);
    a
}

/// The probe UPDATE, as any client would send it.
fn probe(sb: &Sandboxed) -> Result<(), mysql::Error> {
    sb.conn()
        .query_drop("UPDATE innops.readonly_probe SET id = id WHERE id = -1")
}

fn error_code(r: Result<(), mysql::Error>) -> Option<u16> {
    match r {
        Err(mysql::Error::MySqlError(e)) => Some(e.code),
        _ => None,
    }
}

#[test]
fn dry_run_checks_everything_and_changes_nothing() {
    let sb = Sandboxed::new("rodry");
    let run_dir = sb.root.join("run");
    let pid = sb.sandbox.running_pid();
    let out = sb.innops(&[
        "readonly",
        "--sql-read-only",
        "--min-redo",
        "--format",
        "json",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["status"], "dry_run");
    let pre = step(&j, "preflight")["pre"].as_array().unwrap();
    assert!(
        pre.len() >= 10 && pre.iter().all(|v| v["passed"] == true),
        "{j}"
    );
    assert_eq!(sb.sandbox.running_pid(), pid, "not restarted");
    assert_eq!(var(&sb, "innodb_read_only"), 0);
    assert_eq!(var(&sb, "innodb_log_file_size"), 96 * MIB);
    let pct: f64 = sb
        .conn()
        .query_first("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
        .unwrap()
        .unwrap();
    assert_eq!(pct, 90.0, "the pre-flush did not run");
    let probe_table: Option<String> = sb
        .conn()
        .query_first(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'innops'",
        )
        .unwrap();
    assert_eq!(probe_table, None, "no probe table in a dry run");
    assert!(!sb.sandbox.conf_dir.join("99-innops.cnf").exists());
    assert!(!sb.sandbox.conf_dir.join("innops-readonly.json").exists());
    assert!(!run_dir.exists(), "a dry run writes no run directory");
}

#[test]
fn read_only_with_sql_read_only_and_min_redo_then_undo() {
    let mut sb = Sandboxed::new("rofull");
    {
        let mut c = sb.conn();
        c.query_drop("CREATE DATABASE app").unwrap();
        c.query_drop("CREATE TABLE app.m (id INT) ENGINE=MyISAM")
            .unwrap();
        c.query_drop("CREATE USER app@localhost IDENTIFIED BY 'pw'")
            .unwrap();
        c.query_drop("GRANT ALL ON app.* TO app@localhost").unwrap();
    }
    let run_dir = sb.root.join("run");
    let out = sb.innops(&args(&run_dir, &["--sql-read-only", "--min-redo"]));
    assert_eq!(out.code, 0, "{out:?}");
    sb.reopen();
    assert_eq!(var(&sb, "innodb_read_only"), 1);
    assert_eq!(var(&sb, "read_only"), 1);
    assert_eq!(var(&sb, "innodb_log_file_size"), 16 * MIB);
    // The write probe is refused with the read-only error, to innops and to any client.
    assert_eq!(error_code(probe(&sb)), Some(1036));
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    let verify = step(&report, "verify")["post"].as_array().unwrap();
    let p = verify
        .iter()
        .find(|v| v["check"] == "write probe is refused with the read-only error")
        .unwrap();
    assert_eq!(p["passed"], true, "{report}");
    assert!(p["observed"].as_str().unwrap().contains("1036"), "{report}");
    // Downtime measured from SHUTDOWN to the first read-only connection.
    let downtime = step(&report, "start")["result"]["downtime_s"]
        .as_f64()
        .unwrap();
    assert!(downtime > 0.0, "{report}");
    assert!(out.stdout.contains("downtime: "), "{}", out.stdout);
    // The slow shutdown was recorded as such.
    let stop = &step(&report, "stop")["result"];
    assert_eq!(stop["fast_shutdown"], 0, "{report}");
    // --sql-read-only: a MyISAM write by an account without READ_ONLY ADMIN is refused.
    let mut app = mysql::Conn::new(
        mysql::OptsBuilder::new()
            .socket(Some(sb.sandbox.socket.display().to_string()))
            .user(Some("app"))
            .pass(Some("pw")),
    )
    .unwrap();
    let w = app.query_drop("INSERT INTO app.m VALUES (1)");
    assert_eq!(
        error_code(w),
        Some(1290),
        "read_only refuses the MyISAM write"
    );

    // --undo: read-write again, with the redo size it had.
    let undo_dir = sb.root.join("undo");
    let out = sb.innops(&args(&undo_dir, &["--undo"]));
    assert_eq!(out.code, 0, "{out:?}");
    sb.reopen();
    assert_eq!(var(&sb, "innodb_read_only"), 0);
    assert_eq!(var(&sb, "read_only"), 0);
    assert_eq!(var(&sb, "innodb_log_file_size"), 96 * MIB);
    assert_eq!(
        std::fs::metadata(sb.sandbox.datadir.join("ib_logfile0"))
            .unwrap()
            .len(),
        96 * MIB
    );
    assert!(probe(&sb).is_ok());
    sb.conn()
        .query_drop("INSERT INTO app.m VALUES (1)")
        .unwrap();
    assert!(!dropin(&sb).contains("read_only"), "{}", dropin(&sb));
    assert!(!sb.sandbox.conf_dir.join("innops-readonly.json").exists());
    let report = read_json(&undo_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
}

#[test]
fn a_slow_shutdown_purges_pending_history() {
    let mut sb = Sandboxed::new("ropurge");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE d").unwrap();
    c.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        .unwrap();
    c.query_drop("INSERT INTO d.t SELECT seq, 0 FROM d.seq_1_to_2000")
        .unwrap();
    // A read view held open keeps purge from running: every committed update stays in the history.
    let mut reader = sb.conn();
    reader
        .query_drop("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        .unwrap();
    for i in 0..300 {
        c.query_drop(format!("UPDATE d.t SET v = v + 1 WHERE id = {}", i + 1))
            .unwrap();
    }
    let history: (String, u64) = c
        .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'")
        .unwrap()
        .unwrap();
    assert!(history.1 > 0, "history is pending: {history:?}");
    drop(c);
    let run_dir = sb.root.join("run");
    let out = sb.innops(&args(&run_dir, &["--no-preflush"]));
    assert_eq!(out.code, 0, "{out:?}");
    drop(reader);
    let report = read_json(&run_dir.join("report.json"));
    let stop = &step(&report, "stop")["result"];
    assert_eq!(stop["fast_shutdown"], 0, "{report}");
    assert!(
        stop["history_list_length"].as_u64().unwrap() > 0,
        "{report}"
    );
    // The preflight showed the history it found.
    let pre = step(&report, "preflight")["pre"].as_array().unwrap();
    let purge = pre
        .iter()
        .find(|v| v["check"] == "purge history (slow shutdown estimate)")
        .unwrap();
    assert!(
        !purge["observed"].as_str().unwrap().contains("length 0"),
        "{report}"
    );
    sb.reopen();
    assert_eq!(var(&sb, "innodb_read_only"), 1);
    let after: (String, u64) = sb
        .conn()
        .query_first("SHOW GLOBAL STATUS LIKE 'Innodb_history_list_length'")
        .unwrap()
        .unwrap();
    assert_eq!(after.1, 0, "the slow shutdown purged everything");
}

#[test]
fn a_server_killed_at_the_shutdown_ends_running_read_write_with_the_reason() {
    let mut sb = Sandboxed::new("rokill");
    let run_dir = sb.root.join("run");
    let out = sb.innops_env(&args(&run_dir, &[]), &[("INNOPS_TEST_KILL_AT_STOP", "1")]);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stderr.contains("without a clean shutdown")
            && out.stderr.contains("started the server again read-write"),
        "{}",
        out.stderr
    );
    sb.reopen();
    assert!(sb.sandbox.is_running());
    assert_eq!(var(&sb, "innodb_read_only"), 0);
    assert!(!dropin(&sb).contains("innodb_read_only"), "{}", dropin(&sb));
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(step(&report, "stop")["status"], "failed", "{report}");
}

#[test]
fn a_read_only_start_refused_for_crash_recovery_restores_the_drop_in_and_starts_read_write() {
    let mut sb = Sandboxed::new("rorefuse");
    let run_dir = sb.root.join("run");
    let hold = sb.root.join("hold");
    std::fs::create_dir_all(&hold).unwrap();
    let mut all: Vec<String> = args(&run_dir, &[]).iter().map(|s| s.to_string()).collect();
    all.extend([
        "--sandbox".into(),
        sb.sandbox.name.clone(),
        "--sandbox-root".into(),
        sb.root.display().to_string(),
    ]);
    let hold_spec = format!("after-action:dropin={}", hold.display());
    let mut child = spawn_innops(&all, &[("INNOPS_TEST_HOLD", &hold_spec)]);
    wait_holding(&hold, &mut child);
    // Behind innops's back: the server is started read-write, writes, and is killed (-9).
    sb.reopen();
    sb.sandbox
        .start(&["--innodb-read-only=0".into()], Duration::from_secs(120))
        .unwrap();
    sb.conn()
        .query_drop("CREATE TABLE innops.w (id INT PRIMARY KEY) ENGINE=InnoDB")
        .unwrap();
    sb.conn()
        .query_drop("INSERT INTO innops.w VALUES (1)")
        .unwrap();
    sb.sandbox.kill9().unwrap();
    std::fs::write(hold.join("go"), b"").unwrap();
    let out = wait_innops(child);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stderr
            .contains("innodb_read_only prevents crash recovery")
            && out.stderr.contains("started the server read-write"),
        "{}",
        out.stderr
    );
    sb.reopen();
    assert!(sb.sandbox.is_running());
    assert_eq!(var(&sb, "innodb_read_only"), 0);
    assert!(
        !sb.sandbox.conf_dir.join("99-innops.cnf").exists(),
        "previous drop-in (none) restored"
    );
    let n: u64 = sb
        .conn()
        .query_first("SELECT COUNT(*) FROM innops.w")
        .unwrap()
        .unwrap();
    assert_eq!(n, 1, "crash recovery kept the committed row");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(step(&report, "start")["status"], "failed", "{report}");
    assert!(
        report["message"]
            .as_str()
            .unwrap()
            .contains("prevents crash recovery"),
        "{report}"
    );
}

#[test]
fn innops_killed_after_each_action_then_resumed_ends_read_only() {
    let mut sb = Sandboxed::new("rocat");
    for (i, killed_at) in ["probe-table", "preflush", "stop", "dropin", "start"]
        .into_iter()
        .enumerate()
    {
        let run_dir = sb.root.join(format!("run{i}"));
        let fault = format!("after-action:{killed_at}");
        let killed = sb.innops_env(&args(&run_dir, &[]), &[("INNOPS_FAULT", &fault)]);
        assert_eq!(killed.code, 137, "{killed:?}");
        let resumed = resume(&run_dir, &[]);
        assert_eq!(resumed.code, 0, "after {killed_at}: {resumed:?}");
        sb.reopen();
        assert_eq!(var(&sb, "innodb_read_only"), 1, "after {killed_at}");
        assert_eq!(error_code(probe(&sb)), Some(1036), "after {killed_at}");
        let report = read_json(&run_dir.join("report.json"));
        assert_eq!(report["status"], "done", "after {killed_at}: {report}");
        let ev = events(&run_dir);
        assert_eq!(
            ev.iter()
                .filter(|e| e["event"] == "action_done" && e["step"] == killed_at)
                .count(),
            1,
            "after {killed_at}: the action ran once"
        );
        // Back to read-write for the next round (and the undo proves itself each time).
        let undo_dir = sb.root.join(format!("undo{i}"));
        let undo = sb.innops(&args(&undo_dir, &["--undo"]));
        assert_eq!(undo.code, 0, "{undo:?}");
        sb.reopen();
        assert_eq!(var(&sb, "innodb_read_only"), 0);
        // The probe table outlives a round; drop it so the next round's probe-table step acts.
        sb.conn().query_drop("DROP DATABASE innops").unwrap();
    }
}

#[test]
fn a_pre_flush_that_fails_its_check_puts_back_the_dirty_page_limit_and_the_io_capacity() {
    let sb = Sandboxed::new("roflush");
    let (io, io_max) = (
        var(&sb, "innodb_io_capacity"),
        var(&sb, "innodb_io_capacity_max"),
    );
    assert!(
        io_max > io,
        "the sandbox's io_capacity_max {io_max} is above io_capacity {io}"
    );
    let run_dir = sb.root.join("run");
    let hold = sb.root.join("hold");
    std::fs::create_dir_all(&hold).unwrap();
    let mut all: Vec<String> = args(&run_dir, &[]).iter().map(|s| s.to_string()).collect();
    all.extend([
        "--sandbox".into(),
        sb.sandbox.name.clone(),
        "--sandbox-root".into(),
        sb.root.display().to_string(),
    ]);
    let hold_spec = format!("after-action:preflush={}", hold.display());
    let mut child = spawn_innops(&all, &[("INNOPS_TEST_HOLD", &hold_spec)]);
    wait_holding(&hold, &mut child);
    // The pre-flush runs at the DBA's burst ceiling.
    assert_eq!(var(&sb, "innodb_io_capacity"), io_max);
    assert_eq!(pct(&sb), 0.0);
    // Behind innops's back, someone raises the dirty-page limit again: the post-check fails.
    sb.conn()
        .query_drop("SET GLOBAL innodb_max_dirty_pages_pct = 75")
        .unwrap();
    std::fs::write(hold.join("go"), b"").unwrap();
    let out = wait_innops(child);
    assert_eq!(out.code, 3, "{out:?}");
    assert!(
        out.stderr.contains("innodb_io_capacity to"),
        "the recovery says what it put back: {}",
        out.stderr
    );
    assert_eq!(pct(&sb), 90.0);
    assert_eq!(var(&sb, "innodb_io_capacity"), io);
    assert_eq!(
        var(&sb, "innodb_read_only"),
        0,
        "the server was not touched"
    );
}

fn pct(sb: &Sandboxed) -> f64 {
    sb.conn()
        .query_first("SELECT @@GLOBAL.innodb_max_dirty_pages_pct")
        .unwrap()
        .unwrap()
}

/// Issue 22: `--min-redo` on a server that is read-only already cannot shrink the redo log (a read-only server
/// does not resize it online): it is refused, and nothing names a size the server never ran with.
#[test]
fn min_redo_on_a_read_only_server_is_refused_and_the_drop_in_names_no_redo_size() {
    let mut sb = Sandboxed::new("ro-minro");
    let first = sb.innops(&args(&sb.root.join("run1"), &[]));
    assert_eq!(first.code, 0, "{first:?}");
    sb.reopen();
    let size = var(&sb, "innodb_log_file_size");
    let dry = sb.innops(&["readonly", "--min-redo", "--no-bench"]);
    assert_eq!(dry.code, 1, "the dry run says so: {dry:?}");
    assert!(
        dry.stdout
            .contains("--min-redo shrinks the redo log online")
            || dry
                .stderr
                .contains("--min-redo shrinks the redo log online"),
        "{dry:?}"
    );
    let second = sb.innops(&args(&sb.root.join("run2"), &["--min-redo"]));
    assert_eq!(second.code, 1, "{second:?}");
    assert!(
        second.error_line().contains("read-only already"),
        "{second:?}"
    );
    assert!(
        !dropin(&sb).contains("innodb_log_file_size"),
        "{}",
        dropin(&sb)
    );
    let undo = sb.innops(&args(&sb.root.join("undo"), &["--undo"]));
    assert_eq!(undo.code, 0, "{undo:?}");
    sb.reopen();
    assert_eq!(var(&sb, "innodb_read_only"), 0);
    assert_eq!(
        var(&sb, "innodb_log_file_size"),
        size,
        "back at the size it had"
    );
}

/// Issue 22: a server that crashed before the slow shutdown is not taken for one that shut down cleanly: the
/// stop step refuses (a read-only start would refuse the crash recovery), and once it was started, resume ends
/// read-only.
#[test]
fn a_server_that_crashed_before_the_stop_is_refused_not_taken_as_cleanly_down() {
    let mut sb = Sandboxed::new("ro-crash");
    let run_dir = sb.root.join("run");
    let hold = sb.root.join("hold");
    std::fs::create_dir_all(&hold).unwrap();
    // innops dies right after the pre-flush, and the server crashes before anyone resumes.
    let killed = sb.innops_env(
        &args(&run_dir, &[]),
        &[("INNOPS_FAULT", "after-action:preflush")],
    );
    assert_eq!(killed.code, 137, "{killed:?}");
    sb.sandbox.kill9().unwrap();
    let out = resume(&run_dir, &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("innops: step stop refused: the server is down without a clean shutdown"),
        "{}",
        out.stderr
    );
    assert!(!dropin(&sb).contains("innodb_read_only"), "{}", dropin(&sb));
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(step(&report, "stop")["status"], "refused", "{report}");
    // Started (crash recovery runs), the run goes on from the stop.
    sb.reopen();
    sb.sandbox.start(&[], Duration::from_secs(120)).unwrap();
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    sb.reopen();
    assert_eq!(var(&sb, "innodb_read_only"), 1);
}

/// Issue 22: only a read-only refusal proves the server read-only. Here the probe fails because the account
/// may not write the probe table (ERROR 1142): the verdict fails, it is not taken for "refused read-only".
#[test]
fn a_write_probe_refused_for_another_reason_proves_nothing() {
    let mut sb = Sandboxed::new("ro-probe");
    let first = sb.innops(&args(&sb.root.join("run1"), &[]));
    assert_eq!(first.code, 0, "{first:?}");
    sb.reopen();
    // Accounts live in Aria tables: they can be made on a read-only InnoDB.
    let mut c = sb.conn();
    c.query_drop("CREATE USER lim@localhost").unwrap();
    c.query_drop("GRANT SELECT, PROCESS, RELOAD, SHUTDOWN ON *.* TO lim@localhost")
        .unwrap();
    // As that account (`--sandbox` connects as root, so the socket and a start command are given instead).
    let run2 = sb.root.join("run2");
    let start = format!(
        "{} sandbox start {} --sandbox-root {}",
        env!("CARGO_BIN_EXE_innops"),
        sb.sandbox.name,
        sb.root.display()
    );
    let again = run_innops(
        &[
            "readonly",
            "--execute",
            "--yes",
            "--no-bench",
            "--run-dir",
            run2.to_str().unwrap(),
            "--socket",
            sb.sandbox.socket.to_str().unwrap(),
            "--user",
            "lim",
            "--start-cmd",
            &start,
            "--config-file",
            sb.sandbox.option_file.to_str().unwrap(),
        ]
        .map(String::from),
        &[],
    );
    assert_eq!(again.code, 3, "{again:?}");
    let line = again.error_line();
    assert!(
        line.contains("write probe") && line.contains("1142"),
        "{line}"
    );
    // The same run as root proves it.
    let root = sb.innops(&args(&sb.root.join("run3"), &[]));
    assert_eq!(root.code, 0, "{root:?}");
}
