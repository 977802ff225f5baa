//! `innops convert --strategy online` against real sandboxes, with writes going on: every case directory, writes
//! at every phase against a reference copy the writes were also applied to, kill -9 at every step then resume,
//! a trigger write made to fail, and a cut-over that cannot have its locks.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Conn;
use rand::{Rng, SeedableRng};

use crate::common::convert::{convert, engine, rows, setup, SHAPE};
use crate::common::{args, read_json, run_innops, Output, Sandboxed};
use crate::convert::{case_dir, run_one};

/// The shape, and `ref`: an InnoDB copy of it that every write of the test also goes to.
const WITH_REF: &str =
    "CREATE TABLE ref LIKE t; ALTER TABLE ref ENGINE=InnoDB; INSERT INTO ref SELECT * FROM t;";

fn fresh(sb: &Sandboxed) -> Conn {
    let mut c = sb.conn();
    c.query_drop("DROP DATABASE IF EXISTS d").unwrap();
    c.query_drop("DROP DATABASE IF EXISTS innops").unwrap();
    drop(c);
    setup(sb, &format!("{SHAPE} {WITH_REF}"))
}

/// One random write, as SQL with `{t}` for the table: explicit keys only, so both tables take the same rows
/// (their AUTO_INCREMENT counters follow different rules when a key is moved up).
fn random_write(rng: &mut rand::rngs::SmallRng, i: u64) -> String {
    let id = rng.gen_range(1..=30_500u64);
    match rng.gen_range(0..10) {
        0..=3 => format!("UPDATE {{t}} SET k = k + 1, c = 'u{i}' WHERE id = {id}"),
        4..=5 => format!("DELETE FROM {{t}} WHERE id = {id}"),
        6..=7 => format!(
            "INSERT INTO {{t}} (id, k, c) VALUES ({}, {i} % 101, 'i{i}')",
            1_000_000 + i
        ),
        8 => format!("UPDATE {{t}} SET id = {} WHERE id = {id}", 2_000_000 + i),
        _ => format!(
            "UPDATE {{t}} SET k = k + 2 WHERE id BETWEEN {id} AND {}",
            id + 40
        ),
    }
}

/// Apply one write to `t` then `ref`; both must succeed. How long `t`'s took.
fn write_both(c: &mut Conn, sql: &str) -> Duration {
    let t0 = Instant::now();
    c.query_drop(sql.replace("{t}", "t"))
        .unwrap_or_else(|e| panic!("{sql} on t: {e}"));
    let took = t0.elapsed();
    c.query_drop(sql.replace("{t}", "ref"))
        .unwrap_or_else(|e| panic!("{sql} on ref: {e}"));
    took
}

/// A writer that applies random writes to `t` and `ref` until stopped: how many it made, and the longest
/// write to `t`.
struct Writer {
    stop: Arc<AtomicBool>,
    count: Arc<AtomicU64>,
    handle: std::thread::JoinHandle<Duration>,
}

impl Writer {
    fn start(sb: &Sandboxed, seed: u64) -> Writer {
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicU64::new(0));
        let (s, n) = (stop.clone(), count.clone());
        let target = sb.target();
        let handle = std::thread::spawn(move || {
            let mut c = target.connect().unwrap();
            c.query_drop("USE d").unwrap();
            let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
            let mut longest = Duration::ZERO;
            while !s.load(Ordering::SeqCst) {
                let i = n.load(Ordering::SeqCst);
                longest = longest.max(write_both(&mut c, &random_write(&mut rng, i)));
                n.fetch_add(1, Ordering::SeqCst);
            }
            longest
        });
        Writer {
            stop,
            count,
            handle,
        }
    }

    /// Wait until it made `more` writes beyond what it had made.
    fn wait_for(&self, more: u64) {
        let goal = self.count.load(Ordering::SeqCst) + more;
        while self.count.load(Ordering::SeqCst) < goal {
            assert!(!self.handle.is_finished(), "the writer stopped");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn finish(self) -> (u64, Duration) {
        self.stop.store(true, Ordering::SeqCst);
        let longest = self.handle.join().expect("writer");
        (self.count.load(Ordering::SeqCst), longest)
    }
}

/// `--tables d.t --strategy online --execute --yes --no-bench`, then `extra`.
fn online_args(extra: &[&str]) -> Vec<String> {
    let mut a = args(&[
        "--tables",
        "d.t",
        "--strategy",
        "online",
        "--execute",
        "--yes",
        "--no-bench",
    ]);
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// `innops convert --strategy online` in the background.
fn online_in_background(
    sb: &Sandboxed,
    run_dir: &Path,
    env: Vec<(String, String)>,
) -> std::thread::JoinHandle<Output> {
    let a = online_args(&["--run-dir", run_dir.to_str().unwrap()]);
    let sb_args = (sb.sandbox.name.clone(), sb.root.clone());
    std::thread::spawn(move || {
        let mut all = vec!["convert".to_string()];
        all.extend(a);
        all.extend([
            "--sandbox".into(),
            sb_args.0,
            "--sandbox-root".into(),
            sb_args.1.display().to_string(),
        ]);
        let env: Vec<(&str, &str)> = env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        run_innops(&all, &env)
    })
}

/// Wait for the run to reach `point` (`holding-POINT` in `dir`).
fn reached(dir: &Path, point: &str, run: &std::thread::JoinHandle<Output>) {
    let f = dir.join(format!("holding-{point}"));
    let deadline = Instant::now() + Duration::from_secs(300);
    while !f.exists() {
        assert!(!run.is_finished(), "the run ended before {point}");
        assert!(Instant::now() < deadline, "the run never reached {point}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn go(dir: &Path, point: &str) {
    std::fs::write(dir.join(format!("go-{point}")), b"").unwrap();
}

/// The converted table equals the reference, the kept table is MyISAM, and nothing of the capture is left.
fn assert_converted_like_ref(c: &mut Conn, what: &str) {
    assert_eq!(engine(c, "t").as_deref(), Some("InnoDB"), "{what}");
    assert_eq!(
        engine(c, "_t_myisam_old").as_deref(),
        Some("MyISAM"),
        "{what}"
    );
    assert_eq!(
        rows(c, "t"),
        rows(c, "ref"),
        "{what}: the converted table differs from the reference"
    );
    let left: u64 = c
        .query_first("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'd'")
        .unwrap()
        .unwrap();
    assert_eq!(left, 0, "{what}: innops's triggers are gone");
    assert!(
        engine(c, "_t_innops_chg").is_none() && engine(c, "_t_innops_new").is_none(),
        "{what}"
    );
}

fn step_result(run_dir: &Path, id: &str) -> serde_json::Value {
    let report = read_json(&run_dir.join("report.json"));
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id} in {report}"))["result"]
        .clone()
}

#[test]
fn writes_at_every_phase_end_in_the_converted_table_as_in_a_reference() {
    let sb = Sandboxed::new("online-phases");
    let mut c = fresh(&sb);
    let dir = tempfile::tempdir().unwrap();
    let run_dir = sb.root.join("run");
    let points = [
        "after-action:capture:d.t",
        "online-chunk",
        "after-action:copy:d.t",
        "online-indexes-held",
        "after-action:indexes:d.t",
        "after-action:verify:d.t",
        "before-guard",
    ];
    let run = online_in_background(
        &sb,
        &run_dir,
        vec![
            (
                "INNOPS_TEST_HOLD".into(),
                format!("{}={}", points.join(","), dir.path().display()),
            ),
            ("INNOPS_TEST_CHUNK_ROWS".into(), "1000".into()),
        ],
    );
    let writer = Writer::start(&sb, 7);
    for p in points {
        reached(dir.path(), p, &run);
        writer.wait_for(40);
        if p == "online-indexes-held" {
            // While the indexes are built the triggers log the key and leave the copy alone.
            c.query_drop("USE d").unwrap();
            write_both(
                &mut c,
                "INSERT INTO {t} (id, k, c) VALUES (3000000, 1, 'held')",
            );
            let there: u64 = c
                .query_first("SELECT COUNT(*) FROM d._t_innops_new WHERE id = 3000000")
                .unwrap()
                .unwrap();
            assert_eq!(there, 0, "the copy was left alone while held");
        }
        go(dir.path(), p);
    }
    let out = run.join().unwrap();
    let (writes, _) = writer.finish();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(writes > 240, "{writes} writes");
    assert_converted_like_ref(&mut c, "writes at every phase");
    let copy = step_result(&run_dir, "copy:d.t");
    assert_eq!(
        copy["chunks"], 31,
        "30,000 rows in chunks of 1000, and the end: {copy}"
    );
    let verify = step_result(&run_dir, "verify:d.t");
    assert!(
        verify["compared"]["keys"].as_u64().unwrap() > 0,
        "the keys written after their chunk were compared again: {verify}"
    );
}

#[test]
fn a_trigger_write_that_fails_is_found_and_copied_again() {
    let sb = Sandboxed::new("online-trigger-fails");
    let mut c = fresh(&sb);
    let dir = tempfile::tempdir().unwrap();
    let run_dir = sb.root.join("run");
    let point = "after-action:copy:d.t";
    let run = online_in_background(
        &sb,
        &run_dir,
        vec![(
            "INNOPS_TEST_HOLD".into(),
            format!("{point},unused={}", dir.path().display()),
        )],
    );
    reached(dir.path(), point, &run);
    // Another session holds the copy's row 7; the application's UPDATE of row 7 waits for it in the trigger
    // and fails, and MyISAM keeps its change to the source.
    let mut holder = sb.conn();
    holder.query_drop("BEGIN").unwrap();
    let _: Vec<mysql::Row> = holder
        .query("SELECT * FROM d._t_innops_new WHERE id = 7 FOR UPDATE")
        .unwrap();
    let mut app = sb.conn();
    app.query_drop("SET SESSION innodb_lock_wait_timeout = 1")
        .unwrap();
    let failed = app.query_drop("UPDATE d.t SET k = k + 1000, c = 'changed' WHERE id = 7");
    assert!(
        matches!(&failed, Err(mysql::Error::MySqlError(e)) if e.code == 1205),
        "{failed:?}"
    );
    holder.query_drop("ROLLBACK").unwrap();
    let (source, copy): (String, String) = c
        .query_first(
            "SELECT (SELECT c FROM d.t WHERE id = 7), (SELECT c FROM d._t_innops_new WHERE id = 7)",
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        (source.as_str(), copy.as_str()),
        ("changed", "c-7"),
        "the source kept the change, the copy did not"
    );
    c.query_drop("UPDATE d.ref SET k = k + 1000, c = 'changed' WHERE id = 7")
        .unwrap();
    go(dir.path(), point);
    let out = run.join().unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    assert_converted_like_ref(&mut c, "a failed trigger write");
    let verify = step_result(&run_dir, "verify:d.t");
    assert_eq!(verify["compared"]["differed"], 1, "{verify}");
    assert_eq!(verify["compared"]["examples"][0], "(7)", "{verify}");
}

#[test]
fn a_cutover_that_cannot_have_its_locks_backs_off_and_writers_go_on() {
    let sb = Sandboxed::new("online-cutover");
    let mut c = fresh(&sb);
    let dir = tempfile::tempdir().unwrap();
    let run_dir = sb.root.join("run");
    let point = "before-guard";
    let run = online_in_background(
        &sb,
        &run_dir,
        vec![(
            "INNOPS_TEST_HOLD".into(),
            format!("{point},unused={}", dir.path().display()),
        )],
    );
    reached(dir.path(), point, &run);
    // A long read of the source: the RENAME cannot have the table until it ends.
    let target = sb.target();
    let reader = std::thread::spawn(move || {
        let mut r = target.connect().unwrap();
        let _: Vec<mysql::Row> = r.query("SELECT SLEEP(8) FROM d.t LIMIT 1").unwrap();
    });
    let mut watch = sb.conn();
    while watch.query_first::<u64, _>("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(8)%'").unwrap() != Some(1) {
        std::thread::sleep(Duration::from_millis(20));
    }
    go(dir.path(), point);
    // Writes go on while the reader holds the table: none waits for the whole read.
    let mut w = sb.conn();
    w.query_drop("USE d").unwrap();
    let mut longest = Duration::ZERO;
    for i in 0..10 {
        let took = write_both(
            &mut w,
            &format!(
                "INSERT INTO {{t}} (id, k, c) VALUES ({}, 1, 'w')",
                3_000_000 + i
            ),
        );
        longest = longest.max(took);
        std::thread::sleep(Duration::from_millis(300));
    }
    reader.join().unwrap();
    let out = run.join().unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        longest < Duration::from_secs(5),
        "a write waited {longest:?}, behind the 8 s read"
    );
    let swap = step_result(&run_dir, "swap:d.t");
    assert!(
        swap["tries"]["rename_timeouts"].as_u64().unwrap() >= 1,
        "{swap}"
    );
    assert_converted_like_ref(&mut c, "a cut-over that backed off");
}

#[test]
fn killed_at_every_step_the_run_resumes_to_the_reference() {
    let sb = Sandboxed::new("online-kill");
    for fault in [
        "after-action:capture:d.t",
        "after-chunk:2",
        "after-action:copy:d.t",
        "after-action:indexes:d.t",
        "after-action:verify:d.t",
        "before-journal:swap:d.t",
    ] {
        let mut c = fresh(&sb);
        let run_dir = sb
            .root
            .join(format!("run-{}", fault.replace([':', '.'], "-")));
        let a = online_args(&["--run-dir", run_dir.to_str().unwrap()]);
        let killed = convert(
            &sb,
            &a,
            &[("INNOPS_FAULT", fault), ("INNOPS_TEST_CHUNK_ROWS", "1000")],
        );
        assert_eq!(killed.code, 137, "{fault}: {killed:?}");
        // The application writes while innops is dead.
        let mut rng = rand::rngs::SmallRng::seed_from_u64(11);
        c.query_drop("USE d").unwrap();
        for i in 0..200 {
            write_both(&mut c, &random_write(&mut rng, 10_000 + i));
        }
        let resumed = run_innops(
            &args(&["resume", run_dir.to_str().unwrap(), "--yes", "--no-bench"]),
            &[("INNOPS_TEST_CHUNK_ROWS", "1000")],
        );
        assert_eq!(resumed.code, 0, "{fault}: {resumed:?}");
        assert_converted_like_ref(&mut c, fault);
    }
}

#[test]
fn every_case_directory_converts_online_or_is_refused_for_its_own_reason() {
    let sb = Sandboxed::new("online-cases");
    let mut names: Vec<String> = std::fs::read_dir(case_dir(""))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    for name in names {
        let dir = case_dir(&name);
        let sql = std::fs::read_to_string(dir.join("create.sql"))
            .unwrap()
            .replace("{root}", &sb.root.display().to_string());
        let mut a: Vec<String> = Vec::new();
        let mut skip = false;
        for l in std::fs::read_to_string(dir.join("args"))
            .unwrap()
            .lines()
            .filter(|l| !l.is_empty())
        {
            if skip {
                skip = false;
            } else if l == "--strategy" {
                skip = true;
            } else {
                a.push(l.to_string());
            }
        }
        a.extend(["--strategy".to_string(), "online".to_string()]);
        let expect: Vec<(String, String)> = std::fs::read_to_string(dir.join("expect"))
            .unwrap()
            .lines()
            .filter_map(|l| {
                l.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect();
        let table = expect
            .iter()
            .find(|(k, _)| k == "table")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "t".into());
        // Whether the case's table has a primary key, read from the server.
        let mut c = sb.conn();
        c.query_drop("DROP DATABASE IF EXISTS d").unwrap();
        c.query_drop("DROP DATABASE IF EXISTS innops").unwrap();
        drop(c);
        let mut c = setup(&sb, &sql);
        let has_pk: Option<u64> = c
            .exec_first("SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY'", (&table,))
            .unwrap();
        c.query_drop("DROP DATABASE d").unwrap();
        drop(c);
        let succeeds = expect.iter().any(|(k, v)| k == "exit" && v == "0");
        let refused_for_no_pk = succeeds && has_pk == Some(0);
        let get = |k: &str| -> Option<String> {
            match k {
                "exit" | "dry_exit" if refused_for_no_pk => Some("1".into()),
                "stderr_contains" if refused_for_no_pk => {
                    Some("has no primary key, and the online path".into())
                }
                "stdout_contains" | "report_contains" if refused_for_no_pk => None,
                // A column whose DEFAULT is a sequence's: refused, as on the alter path.
                "exit" | "dry_exit" if name == "sequence_default" => Some("1".into()),
                "stderr_contains" if name == "sequence_default" => {
                    Some("takes its DEFAULT from a sequence".into())
                }
                // The table's own triggers move to the new table on the online path, as ALTER keeps them.
                "kept" if name == "triggers_alter" => None,
                "exit" | "dry_exit" if name == "triggers_refused" => Some("0".into()),
                "stderr_contains" if name == "triggers_refused" => None,
                "trigger" if name == "triggers_refused" => Some("t_ai".into()),
                // What the other paths print and record about their own verification.
                "report_contains" | "stdout_contains" => None,
                _ => expect
                    .iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.clone()),
            }
        };
        let env: Vec<(String, String)> = expect
            .iter()
            .filter(|(k, _)| k == "env")
            .filter_map(|(_, v)| {
                v.split_once('=')
                    .map(|(a, b)| (a.to_string(), b.to_string()))
            })
            .collect();
        run_one(&sb, &format!("{name} (online)"), &sql, a, &get, &env, false);
    }
}

#[test]
fn a_capture_someone_broke_is_refused_and_restart_starts_over() {
    let sb = Sandboxed::new("online-broken");
    let mut c = fresh(&sb);
    let run_dir = sb.root.join("run");
    let a = online_args(&["--run-dir", run_dir.to_str().unwrap()]);
    let killed = convert(&sb, &a, &[("INNOPS_FAULT", "after-action:copy:d.t")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    // Someone drops one of innops's triggers: deletes since are not in the copy.
    c.query_drop("DROP TRIGGER d._t_innops_del").unwrap();
    c.query_drop("DELETE FROM d.t WHERE id <= 10").unwrap();
    c.query_drop("DELETE FROM d.ref WHERE id <= 10").unwrap();
    let resumed = run_innops(
        &args(&["resume", run_dir.to_str().unwrap(), "--yes", "--no-bench"]),
        &[],
    );
    assert_ne!(resumed.code, 0, "{resumed:?}");
    assert!(
        resumed.error_line().contains("are not all in place")
            && resumed.error_line().contains("--restart"),
        "{}",
        resumed.stderr
    );
    assert_eq!(
        engine(&mut c, "t").as_deref(),
        Some("MyISAM"),
        "nothing swapped"
    );
    // A new run names the leftovers; --restart drops only innops's own and converts.
    let again = convert(&sb, &online_args(&[]), &[]);
    assert_eq!(again.code, 1, "{again:?}");
    assert!(
        again
            .error_line()
            .contains("left from an interrupted conversion"),
        "{}",
        again.stderr
    );
    let restarted = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--strategy",
            "online",
            "--restart",
            "--execute",
            "--yes",
            "--no-bench",
        ]),
        &[],
    );
    assert_eq!(restarted.code, 0, "{restarted:?}");
    assert_converted_like_ref(&mut c, "after --restart");
    // The kept table was recorded as on the other paths: --rollback swaps it back.
    let back = convert(
        &sb,
        &args(&["--rollback", "d.t", "--execute", "--yes", "--no-bench"]),
        &[],
    );
    assert_eq!(back.code, 0, "{back:?}");
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    assert_eq!(rows(&mut c, "t"), rows(&mut c, "ref"));
}

#[test]
fn names_the_capture_needs_that_are_not_innops_s_are_refused() {
    let sb = Sandboxed::new("online-names");
    let mut c = fresh(&sb);
    c.query_drop("CREATE TABLE d.other (a INT) ENGINE=MyISAM")
        .unwrap();
    c.query_drop(
        "CREATE TRIGGER d._t_innops_ins BEFORE INSERT ON d.other FOR EACH ROW SET NEW.a = 1",
    )
    .unwrap();
    let out = convert(&sb, &online_args(&[]), &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.error_line()
            .contains("_t_innops_ins already exist with no record of innops making them"),
        "{}",
        out.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    let kept: Option<String> = c.query_first("SELECT EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_NAME = '_t_innops_ins'").unwrap();
    assert_eq!(kept.as_deref(), Some("other"), "the user's trigger stays");
}

/// A table with triggers of its own: they keep firing during the whole conversion, exactly once per row, and
/// move to the new table at the cut-over.
#[test]
fn the_table_s_own_triggers_keep_firing_once_per_write_and_move_to_the_new_table() {
    let sb = Sandboxed::new("online-own-triggers");
    let mut c = sb.conn();
    drop(c.query_drop("DROP DATABASE IF EXISTS d"));
    let mut c = setup(
        &sb,
        &format!(
            "{SHAPE} CREATE TABLE audit (id INT UNSIGNED, what CHAR(1)) ENGINE=MyISAM; \
             CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW INSERT INTO audit VALUES (NEW.id, 'i'); \
             CREATE TRIGGER t_bu BEFORE UPDATE ON t FOR EACH ROW SET NEW.c = CONCAT('by trigger ', OLD.id);"
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let run_dir = sb.root.join("run");
    let points = [
        "after-action:capture:d.t",
        "after-action:copy:d.t",
        "before-guard",
    ];
    let run = online_in_background(
        &sb,
        &run_dir,
        vec![
            (
                "INNOPS_TEST_HOLD".into(),
                format!("{}={}", points.join(","), dir.path().display()),
            ),
            ("INNOPS_TEST_CHUNK_ROWS".into(), "1000".into()),
        ],
    );
    let mut inserts = 0u64;
    for p in points {
        reached(dir.path(), p, &run);
        for _ in 0..20 {
            inserts += 1;
            c.query_drop(format!(
                "INSERT INTO d.t (id, k, c) VALUES ({}, 1, 'x')",
                100_000 + inserts
            ))
            .unwrap();
        }
        c.query_drop(format!("UPDATE d.t SET k = k + 1 WHERE id = {inserts}"))
            .unwrap();
        go(dir.path(), p);
    }
    let out = run.join().unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    // After the swap, on the new table.
    for _ in 0..5 {
        inserts += 1;
        c.query_drop(format!(
            "INSERT INTO d.t (id, k, c) VALUES ({}, 1, 'x')",
            100_000 + inserts
        ))
        .unwrap();
    }
    c.query_drop("UPDATE d.t SET k = 0 WHERE id = 7").unwrap();
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
    let on: Vec<(String, String)> = c
        .query("SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'd' ORDER BY TRIGGER_NAME")
        .unwrap();
    assert_eq!(
        on,
        vec![
            ("t_ai".to_string(), "t".to_string()),
            ("t_bu".to_string(), "t".to_string())
        ],
        "the table's own triggers, on the new table, and nothing of innops's"
    );
    let audited: u64 = c
        .query_first("SELECT COUNT(*) FROM d.audit")
        .unwrap()
        .unwrap();
    let distinct: u64 = c
        .query_first("SELECT COUNT(DISTINCT id) FROM d.audit")
        .unwrap()
        .unwrap();
    assert_eq!(
        (audited, distinct),
        (inserts, inserts),
        "each insert fired the trigger exactly once"
    );
    let by_trigger: Option<String> = c.query_first("SELECT c FROM d.t WHERE id = 7").unwrap();
    assert_eq!(
        by_trigger.as_deref(),
        Some("by trigger 7"),
        "the BEFORE UPDATE trigger fires on the new table"
    );
    // The rows the triggers changed during the conversion are in the new table as in the kept one.
    let changed: Vec<(u64, String)> = c
        .query("SELECT id, c FROM d._t_myisam_old WHERE c LIKE 'by trigger%' ORDER BY id")
        .unwrap();
    assert_eq!(changed.len(), 3, "{changed:?}");
    for (id, v) in changed {
        let now: Option<String> = c
            .exec_first("SELECT c FROM d.t WHERE id = ?", (id,))
            .unwrap();
        assert_eq!(now, Some(v));
    }
}

/// Killed after the table's own triggers moved to the copy and before the RENAME: the resumed run puts them
/// back on the source before anything else, and refuses the broken capture.
#[test]
fn killed_between_the_trigger_move_and_the_rename_the_triggers_go_back() {
    let sb = Sandboxed::new("online-trigger-kill");
    let mut c = setup(
        &sb,
        &format!("{SHAPE} CREATE TABLE audit (id INT UNSIGNED) ENGINE=MyISAM; CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW INSERT INTO audit VALUES (NEW.id);"),
    );
    let run_dir = sb.root.join("run");
    let a = online_args(&["--run-dir", run_dir.to_str().unwrap()]);
    let killed = convert(&sb, &a, &[("INNOPS_FAULT", "triggers-moved:swap:d.t")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    let on: Option<String> = c.query_first("SELECT EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_NAME = 't_ai'").unwrap();
    assert_eq!(
        on.as_deref(),
        Some("_t_innops_new"),
        "the kill came after the move"
    );
    let resumed = run_innops(
        &args(&["resume", run_dir.to_str().unwrap(), "--yes", "--no-bench"]),
        &[],
    );
    assert_ne!(resumed.code, 0, "{resumed:?}");
    let on: Option<String> = c.query_first("SELECT EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_NAME = 't_ai'").unwrap();
    assert_eq!(
        on.as_deref(),
        Some("t"),
        "the trigger is back on the source: {}",
        resumed.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    c.query_drop("INSERT INTO d.t (id, k, c) VALUES (500000, 1, 'x')")
        .unwrap();
    let n: u64 = c
        .query_first("SELECT COUNT(*) FROM d.audit WHERE id = 500000")
        .unwrap()
        .unwrap();
    assert_eq!(n, 1, "it fires again");
    // A new run converts, triggers and all.
    let again = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--strategy",
            "online",
            "--restart",
            "--execute",
            "--yes",
            "--no-bench",
        ]),
        &[],
    );
    assert_eq!(again.code, 0, "{again:?}");
    let on: Option<String> = c.query_first("SELECT EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_NAME = 't_ai'").unwrap();
    assert_eq!(on.as_deref(), Some("t"));
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
    // A swap back would leave the trigger on the InnoDB table it sets aside: refused.
    let back = convert(
        &sb,
        &args(&["--rollback", "d.t", "--execute", "--yes", "--no-bench"]),
        &[],
    );
    assert_eq!(back.code, 1, "{back:?}");
    assert!(
        back.error_line()
            .contains("which a swap back would leave on the InnoDB table"),
        "{}",
        back.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
}

#[test]
fn an_edited_walk_position_is_refused_and_the_table_is_left_as_it_was() {
    let sb = Sandboxed::new("online-forged");
    let mut c = fresh(&sb);
    let run_dir = sb.root.join("run");
    let a = online_args(&["--run-dir", run_dir.to_str().unwrap()]);
    let killed = convert(
        &sb,
        &a,
        &[
            ("INNOPS_FAULT", "after-chunk:2"),
            ("INNOPS_TEST_CHUNK_ROWS", "1000"),
        ],
    );
    assert_eq!(killed.code, 137, "{killed:?}");
    // Someone moves the walk on past rows it never copied, as a script patching JSON would.
    let f = run_dir.join("online-walk-d.t.json");
    let mut pos = read_json(&f);
    assert!(
        pos["signature"].is_string(),
        "the position is signed: {pos}"
    );
    pos["position"]["chunks"] = serde_json::json!(40);
    std::fs::write(&f, serde_json::to_vec_pretty(&pos).unwrap()).unwrap();
    let resumed = run_innops(
        &args(&["resume", run_dir.to_str().unwrap(), "--yes", "--no-bench"]),
        &[("INNOPS_TEST_CHUNK_ROWS", "1000")],
    );
    assert_eq!(resumed.code, 1, "{resumed:?}");
    assert!(
        resumed
            .error_line()
            .contains("does not trust an edited walk position"),
        "{}",
        resumed.stderr
    );
    // Nothing of the capture is left, and the table is the MyISAM one with every row.
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    assert_eq!(rows(&mut c, "t"), rows(&mut c, "ref"));
    let left: u64 = c
        .query_first("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'd'")
        .unwrap()
        .unwrap();
    assert_eq!(left, 0);
    assert!(engine(&mut c, "_t_innops_new").is_none());
}

#[test]
fn a_round_that_outlasts_its_ceiling_is_cut_short_and_tried_again_smaller() {
    let sb = Sandboxed::new("online-ceiling");
    let a = online_args(&[]);
    // Three rounds outlast the ceiling: each is cut short (writers wait at most the ceiling) and tried again.
    let mut c = fresh(&sb);
    let run_dir = sb.root.join("cut");
    let mut with_dir = a.clone();
    with_dir.extend(["--run-dir".into(), run_dir.display().to_string()]);
    let out = convert(
        &sb,
        &with_dir,
        &[
            ("INNOPS_TEST_SLOW_ROUNDS", "3"),
            ("INNOPS_TEST_CHUNK_ROWS", "1000"),
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let copy = step_result(&run_dir, "copy:d.t");
    assert_eq!(copy["rounds_cut_short"], 3, "{copy}");
    assert!(
        copy["round_ceiling_s"].as_f64().unwrap() < 1.0,
        "the default chunk time keeps rounds under a second: {copy}"
    );
    assert_converted_like_ref(&mut c, "rounds cut short");
    // Eight in a row: the server cannot hold chunks that short; refused, and nothing of the capture is left.
    let mut c = fresh(&sb);
    let out = convert(&sb, &a, &[("INNOPS_TEST_SLOW_ROUNDS", "8")]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.error_line()
            .contains("rounds of the copy of d.t in a row took longer than"),
        "{}",
        out.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    assert_eq!(rows(&mut c, "t"), rows(&mut c, "ref"));
    assert!(engine(&mut c, "_t_innops_new").is_none());
}
