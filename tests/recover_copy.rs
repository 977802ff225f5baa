//! The evidence-first half of `innops recover`: a private server on a copy of a stopped server's data
//! directory, at a forced-recovery level, reachable only through its own socket.

use std::time::Duration;

use innops::procedures::recover::copy::{copy_datadir, measure};
use innops::procedures::recover::private::{carried_from, Private};
use mysql::prelude::Queryable;

use std::collections::BTreeSet;
use std::path::Path;

use innops::dump::{Manifest, TableStatus};

use crate::common::recover::{
    damage, expected_lost, int_table, keys_per_leaf, leaves, minus_bad, reported_lost, rows,
    start_at, stop_slow, table_rows, TextRow,
};
use crate::common::{read_json, run_innops, Sandboxed};

#[test]
fn a_private_server_on_a_copy_starts_at_the_level_asked_without_tcp_and_leaves_the_original_alone()
{
    let sb = Sandboxed::new("rc");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE d").unwrap();
    c.query_drop("CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
        .unwrap();
    c.query_drop("INSERT INTO d.t SELECT seq, CONCAT('v', seq) FROM d.seq_1_to_500")
        .unwrap();
    let vars: Vec<(String, String)> = c
        .query("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_page_size', 'innodb_log_file_size', 'innodb_data_file_path', 'innodb_undo_tablespaces', 'lower_case_table_names')")
        .unwrap();
    let pid = sb.sandbox.running_pid().expect("running");
    c.query_drop("SHUTDOWN").unwrap();
    assert!(innops::server::process::wait_exit(
        pid,
        Duration::from_secs(120)
    ));

    let work = sb.root.join("recover");
    let copy = work.join("data");
    let rec = copy_datadir(&sb.sandbox.datadir, &copy, &Default::default(), &mut |_| {}).unwrap();
    assert_eq!(
        (rec.files, rec.bytes),
        measure(&sb.sandbox.datadir, &Default::default()).unwrap()
    );
    let p = Private {
        dir: work.join("server"),
        datadir: copy.clone(),
        binary: sb.sandbox.binary.clone(),
        carried: carried_from(&vars),
    };
    let a = p.start(1, Duration::from_secs(120)).unwrap();
    assert!(a.started, "{:?}", a.error_log);
    let mut pc = p.target().connect().unwrap();
    let (level, networking, rows): (u8, u8, u64) = pc
        .query_first("SELECT @@innodb_force_recovery, @@skip_networking, (SELECT COUNT(*) FROM d.t FORCE INDEX (PRIMARY))")
        .unwrap()
        .unwrap();
    assert_eq!((level, networking, rows), (1, 1, 500));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&p.dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // A second start on the same copy is refused while the first runs.
    assert!(p.start(2, Duration::from_secs(5)).is_err());
    drop(pc);
    p.stop().unwrap();
    assert!(p.running_pid().is_none());
    // The original never saw innodb_force_recovery and starts as before.
    let mut sandbox = sb.sandbox.clone();
    sandbox.start(&[], Duration::from_secs(120)).unwrap();
    let mut c = sb.conn();
    let (level, rows): (u8, u64) = c
        .query_first("SELECT @@innodb_force_recovery, (SELECT COUNT(*) FROM d.t)")
        .unwrap()
        .unwrap();
    assert_eq!((level, rows), (0, 500));
}

#[test]
fn a_private_server_that_cannot_start_says_why_and_is_not_left_running() {
    let sb = Sandboxed::new("rcbad");
    let work = sb.root.join("recover");
    // An empty directory is no data directory: the server exits, and the attempt carries its error log.
    std::fs::create_dir_all(work.join("data")).unwrap();
    let p = Private {
        dir: work.join("server"),
        datadir: work.join("data"),
        binary: sb.sandbox.binary.clone(),
        carried: vec!["innodb_page_size=4096".into()],
    };
    let a = p.start(1, Duration::from_secs(60)).unwrap();
    assert!(!a.started);
    assert!(!a.error_log.is_empty());
    assert!(p.running_pid().is_none());
}

/// A sandbox whose table `db.t` (3,000 rows) has one damaged leaf page in the middle, running again at level 0
/// as a damaged production server would; `db.healthy` beside it. Returns the rows expected in the dump of
/// `db.t` (all but the damaged page's), the lost ranges expected, and `db.healthy`'s rows.
/// The damaged sandbox, the rows expected of `db.t`, its lost ranges, and `db.healthy`'s rows.
type Damaged = (
    Sandboxed,
    Vec<TextRow>,
    Vec<(Option<i64>, Option<i64>)>,
    Vec<TextRow>,
);

fn damaged_sandbox(name: &str) -> Damaged {
    let mut sb = Sandboxed::new(name);
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    int_table(&mut c, "t", 3000);
    int_table(&mut c, "healthy", 500);
    let before = table_rows(&mut c, "db.t", "id");
    let healthy = table_rows(&mut c, "db.healthy", "id");
    let keys = rows(&mut c, "SELECT id FROM db.t ORDER BY id");
    drop(c);
    stop_slow(&sb);
    let leaves = leaves(&sb, "t", 3);
    let per_leaf = keys_per_leaf(&leaves, &keys);
    let bad: BTreeSet<usize> = [leaves.len() / 2].into();
    for &i in &bad {
        damage(&sb, "t", leaves[i].page);
    }
    start_at(&mut sb, 0);
    (
        sb,
        minus_bad(&before, &per_leaf, &bad),
        expected_lost(&per_leaf, &bad),
        healthy,
    )
}

fn recover_args(sb: &Sandboxed, work: &Path, run: &str, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "recover",
        "--sandbox",
        &sb.sandbox.name,
        "--sandbox-root",
        sb.root.to_str().unwrap(),
        "--out",
        work.join(format!("out-{run}")).to_str().unwrap(),
        "--copy-to",
        work.join(format!("copy-{run}")).to_str().unwrap(),
        // What the SQL reads alone get back (the page pass, auto by default, is tests/recover_pages.rs's).
        "--pages",
        "never",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

#[test]
fn recover_dumps_every_row_not_on_the_damaged_page_from_a_copy_and_leaves_the_original_running() {
    let (sb, expected, lost, healthy) = damaged_sandbox("rcmd");
    let work = sb.root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let datadir_files = innops::procedures::recover::copy::measure(
        &sb.sandbox.datadir,
        &innops::procedures::recover::copy::log_files(&sb.sandbox.datadir),
    )
    .unwrap();

    // A dry run: every pre-check, nothing made, the server untouched.
    let dry = run_innops(&recover_args(&sb, &work, "a", &[]), &[]);
    assert_eq!(dry.code, 0, "{dry:?}");
    assert!(
        dry.stdout.contains("copy directory is new"),
        "{}",
        dry.stdout
    );
    // Post-checks are named and shown as deferred in a dry run (they judge what the step did).
    assert!(
        dry.stdout
            .contains("post … copy complete (checked when the step runs)"),
        "{}",
        dry.stdout
    );
    // A check that needs the earlier steps is shown as deferred, not as passed.
    assert!(
        dry.stdout
            .contains("copy not made yet (checked when the step runs)"),
        "{}",
        dry.stdout
    );
    assert!(!work.join("copy-a").exists() && !work.join("out-a").exists());
    assert!(sb.sandbox.running_pid().is_some());

    let run_dir = work.join("run-a");
    let out = run_innops(
        &recover_args(
            &sb,
            &work,
            "a",
            &[
                "--execute",
                "--yes",
                "--verify-load",
                "--run-dir",
                run_dir.to_str().unwrap(),
            ],
        ),
        &[],
    );
    // Every step ran, and a table with a lost range exits 4 with one sentence naming it (issue 21).
    assert_eq!(out.code, 4, "{out:?}");
    assert_eq!(
        out.error_line(),
        format!(
            "innops: recovered with losses or doubts: db.t (1 lost range) — see {}",
            work.join("out-a/manifest.json").display()
        )
    );
    let m = Manifest::read(&work.join("out-a")).unwrap();
    // The original's downtime is reported as readonly's is, and the copy left behind is named with its size.
    let report = read_json(&run_dir.join("report.json"));
    let downtime = report["downtime"].as_array().expect("downtime");
    assert_eq!(downtime.len(), 1, "{report}");
    assert!(downtime[0]["seconds"].as_f64().unwrap() > 0.0, "{report}");
    assert!(out.stdout.contains("downtime: "), "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!(
            "the copy is left at {} (",
            work.join("copy-a").display()
        )),
        "{}",
        out.stdout
    );
    // Recovered rows are production data: the directory is its owner's only, and so is every file in it.
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&work.join("out-a")), 0o700);
        let files: Vec<_> = std::fs::read_dir(work.join("out-a"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(
            files.len(),
            4,
            "two tables, lost.jsonl, manifest.json: {files:?}"
        );
        for f in files {
            assert_eq!(mode(&f), 0o600, "{}", f.display());
        }
    }
    let t = m.table("db", "t").unwrap();
    assert_eq!(t.status, TableStatus::Partial, "{t:?}");
    assert_eq!(t.rows as usize, expected.len());
    assert_eq!(reported_lost(&m, "t"), lost);
    assert_eq!(
        m.table("db", "healthy").unwrap().status,
        TableStatus::Complete
    );
    // Level 1 was enough: the lowest level that lists the tables.
    assert_eq!(m.level, 1);
    // The original runs again, never with forced recovery, and its files are as they were (the copy was made
    // from them, the private server ran on the copy).
    let mut c = sb.conn();
    let level: u8 = c
        .query_first("SELECT @@innodb_force_recovery")
        .unwrap()
        .unwrap();
    assert_eq!(level, 0);
    assert_eq!(
        innops::procedures::recover::copy::measure(
            &sb.sandbox.datadir,
            &innops::procedures::recover::copy::log_files(&sb.sandbox.datadir)
        )
        .unwrap()
        .0,
        datadir_files.0
    );
    // The files load into a fresh server with exactly the rows expected.
    let fresh = Sandboxed::new("rcmdload");
    let checked =
        innops::dump::verify_load(&work.join("out-a"), &fresh.target(), "/* t */").unwrap();
    assert!(checked.ok(), "{checked:?}");
    let mut f = fresh.conn();
    assert_eq!(table_rows(&mut f, "db.t", "id"), expected);
    assert_eq!(table_rows(&mut f, "db.healthy", "id"), healthy);
    // No private server is left, and the report says where the rows went.
    let report = std::fs::read_to_string(run_dir.join("report.json")).unwrap();
    assert!(
        report.contains("\"not_complete\": 1") || report.contains("\"not_complete\":1"),
        "{report}"
    );

    // Killed after the dump, before its journal line: resume dumps again into the same files.
    let run_b = work.join("run-b");
    let killed = run_innops(
        &recover_args(
            &sb,
            &work,
            "b",
            &["--execute", "--yes", "--run-dir", run_b.to_str().unwrap()],
        ),
        &[("INNOPS_FAULT", "before-journal:dump")],
    );
    assert_ne!(killed.code, 0, "{killed:?}");
    let resumed = run_innops(
        &[
            "resume".to_string(),
            run_b.to_str().unwrap().to_string(),
            "--yes".to_string(),
        ],
        &[],
    );
    // A resumed run judges the same manifest: exit 4 again.
    assert_eq!(resumed.code, 4, "{resumed:?}");
    assert!(
        resumed.error_line().contains("db.t (1 lost range)"),
        "{resumed:?}"
    );
    let mb = Manifest::read(&work.join("out-b")).unwrap();
    assert_eq!(mb.files, m.files, "the same files, byte for byte");
    let level: u8 = sb
        .conn()
        .query_first("SELECT @@innodb_force_recovery")
        .unwrap()
        .unwrap();
    assert_eq!(level, 0);

    // kill -9 in the middle of the dump (the first table written, the second about to be read), then resume:
    // the same files again.
    let run_c = work.join("run-c");
    let hold = work.join("hold-c");
    std::fs::create_dir_all(&hold).unwrap();
    let spec = format!("dump-connect-2={}", hold.display());
    let mut child = crate::common::spawn_innops(
        &recover_args(
            &sb,
            &work,
            "c",
            &["--execute", "--yes", "--run-dir", run_c.to_str().unwrap()],
        ),
        &[("INNOPS_TEST_HOLD", spec.as_str())],
    );
    crate::common::wait_holding(&hold, &mut child);
    assert!(
        std::fs::read_dir(work.join("out-c")).unwrap().count() >= 1,
        "a table file is written before the kill"
    );
    assert!(!work.join("out-c").join("manifest.json").exists());
    child.kill().unwrap();
    crate::common::wait_innops(child);
    let resumed = run_innops(
        &[
            "resume".to_string(),
            run_c.to_str().unwrap().to_string(),
            "--yes".to_string(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 4, "{resumed:?}");
    let mc = Manifest::read(&work.join("out-c")).unwrap();
    assert_eq!(
        mc.files, m.files,
        "the same files after a kill mid-dump and resume"
    );

    // Killed right after the copy; before the resume, the original data directory gains a file (someone
    // started and stopped the server meanwhile, say). The copy no longer matches the original though it
    // matches its own record: its check fails on resume, and the copy is made again.
    let run_d = work.join("run-d");
    let killed = run_innops(
        &recover_args(
            &sb,
            &work,
            "d",
            &["--execute", "--yes", "--run-dir", run_d.to_str().unwrap()],
        ),
        &[("INNOPS_FAULT", "after-action:copy")],
    );
    assert_ne!(killed.code, 0, "{killed:?}");
    let extra = sb.sandbox.datadir.join("innops-test-extra");
    std::fs::write(&extra, vec![7u8; 4096]).unwrap();
    let resumed = run_innops(
        &[
            "resume".to_string(),
            run_d.to_str().unwrap().to_string(),
            "--yes".to_string(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 4, "{resumed:?}");
    let copy_checks: Vec<serde_json::Value> = crate::common::events(&run_d)
        .into_iter()
        .filter(|e| e["event"] == "check" && e["step"] == "copy")
        .collect();
    assert!(
        copy_checks
            .iter()
            .any(|e| e["phase"] == "resume-post" && e["verdict"]["passed"] == false),
        "the stale copy's check fails on resume: {copy_checks:#?}"
    );
    let copies = crate::common::events(&run_d)
        .into_iter()
        .filter(|e| e["event"] == "action_done" && e["step"] == "copy")
        .count();
    assert_eq!(copies, 2, "the copy is made again");
    assert!(
        copy_checks
            .last()
            .is_some_and(|e| e["phase"] == "post" && e["verdict"]["passed"] == true),
        "and then matches the original: {copy_checks:#?}"
    );
    std::fs::remove_file(&extra).unwrap();
}

#[test]
fn recover_refuses_levels_above_three_without_allow_level_and_a_used_copy_directory() {
    let sb = Sandboxed::new("rcref");
    let work = sb.root.join("work");
    std::fs::create_dir_all(work.join("copy-x")).unwrap();
    let high = run_innops(&recover_args(&sb, &work, "y", &["--max-level", "5"]), &[]);
    assert_eq!(high.code, 2, "{high:?}");
    assert!(
        high.error_line().contains("--allow-level 5"),
        "{}",
        high.error_line()
    );
    // Dump files inside the datadir would read as a database to the server: refused.
    let mut inside = recover_args(&sb, &work, "z", &[]);
    let out_at = inside.iter().position(|a| a == "--out").unwrap() + 1;
    inside[out_at] = sb.sandbox.datadir.join("rescue").display().to_string();
    let refused = run_innops(&inside, &[]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stdout
            .contains("never writes into the server's data directory"),
        "{}",
        refused.stdout
    );
    // A table that does not exist is named in the refusal, before anything is stopped.
    let typo = run_innops(
        &recover_args(&sb, &work, "q", &["--tables", "db.nope"]),
        &[],
    );
    assert_eq!(typo.code, 1, "{typo:?}");
    assert!(
        typo.stdout.contains("the server has no table `db`.`nope`"),
        "{}",
        typo.stdout
    );
    let used = run_innops(&recover_args(&sb, &work, "x", &[]), &[]);
    assert_eq!(used.code, 1, "{used:?}");
    assert!(used.stdout.contains("exists already"), "{}", used.stdout);
}

#[test]
fn recover_from_the_datadir_of_a_server_that_crashed_starts_nothing_but_its_private_server() {
    let (sb, expected, lost, _) = damaged_sandbox("rcdown");
    let work = sb.root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let datadir = sb.sandbox.datadir.to_str().unwrap().to_string();
    let args = |run: &str, extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "recover",
            "--datadir",
            &datadir,
            "--out",
            work.join(format!("out-{run}")).to_str().unwrap(),
            "--copy-to",
            work.join(format!("copy-{run}")).to_str().unwrap(),
            // What the SQL reads alone get back (the page pass, auto by default, is tests/recover_pages.rs's).
            "--pages",
            "never",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // While a server runs on it, its files are no copy: refused, nothing made.
    let busy = run_innops(&args("a", &["--execute", "--yes"]), &[]);
    assert_eq!(busy.code, 1, "{busy:?}");
    assert!(
        busy.stdout
            .contains("a server is running on this data directory"),
        "{}",
        busy.stdout
    );
    assert!(!work.join("copy-a").exists());

    // It crashes (kill -9): the copy goes through crash recovery on the private server, the original stays down.
    sb.sandbox.kill9().unwrap();
    let run_dir = work.join("run-b");
    let out = run_innops(
        &args(
            "b",
            &["--execute", "--yes", "--run-dir", run_dir.to_str().unwrap()],
        ),
        &[],
    );
    assert_eq!(out.code, 4, "{out:?}");
    assert!(out.stdout.contains("(server down)"), "{}", out.stdout);
    let m = Manifest::read(&work.join("out-b")).unwrap();
    let t = m.table("db", "t").unwrap();
    assert_eq!(t.rows as usize, expected.len());
    assert_eq!(reported_lost(&m, "t"), lost);
    assert!(
        sb.sandbox.running_pid().is_none(),
        "innops started the original"
    );
    let events = crate::common::events(&run_dir);
    assert!(
        !events
            .iter()
            .any(|e| e["step"] == "stop" || e["step"] == "start-original"),
        "no stop or start of the original"
    );
}

#[test]
fn recover_in_place_restarts_the_server_itself_in_forced_recovery_and_back_to_normal() {
    let (sb, expected, lost, _) = damaged_sandbox("rcinp");
    let work = sb.root.join("work");
    let out_dir = work.join("out");
    let run_dir = work.join("run");
    let base = [
        "recover",
        "--sandbox",
        &sb.sandbox.name,
        "--sandbox-root",
        sb.root.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--in-place",
    ];
    let mut a: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    // --in-place and --copy-to say two different things.
    let mut both = a.clone();
    both.extend(["--copy-to".into(), work.join("c").display().to_string()]);
    assert_eq!(run_innops(&both, &[]).code, 2);
    a.extend(
        [
            "--execute",
            "--yes",
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--format",
            "json",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let out = run_innops(&a, &[]);
    // A lost range: exit 4, and stdout is still the report, one JSON document that says why.
    assert_eq!(out.code, 4, "{out:?}");
    let j = out.json();
    assert_eq!(j["status"], "done", "{j}");
    assert!(
        j["message"]
            .as_str()
            .unwrap()
            .starts_with("recovered with losses or doubts: db.t (1 lost range)"),
        "{j}"
    );
    let m = Manifest::read(&out_dir).unwrap();
    let t = m.table("db", "t").unwrap();
    assert_eq!(t.rows as usize, expected.len());
    assert_eq!(reported_lost(&m, "t"), lost);
    // --pages is auto by default, and says per table why it did not run: no copy to read.
    let pass = t.page_pass.as_ref().expect("the page pass's word");
    assert!(!pass.ran && pass.why.starts_with("--in-place"), "{pass:?}");
    assert_eq!(m.level, 1);
    // Back to normal: level 0, and innops's drop-in no longer sets forced recovery.
    let level: u8 = sb
        .conn()
        .query_first("SELECT @@innodb_force_recovery")
        .unwrap()
        .unwrap();
    assert_eq!(level, 0);
    let dropin =
        std::fs::read_to_string(sb.sandbox.conf_dir.join("99-innops.cnf")).unwrap_or_default();
    assert!(!dropin.contains("innodb_force_recovery"), "{dropin}");
    assert!(!work.join("c").exists());
}
