//! `innops convert` against real sandboxes: the data-driven cases in tests/cases/convert, a crash mid-copy and
//! resume, writes queued behind the guard, rollback, and the drop-old guard.

use std::path::{Path, PathBuf};

use mysql::prelude::Queryable;
use mysql::Conn;

use crate::common::{read_json, run_innops, Output, Sandboxed};

fn case_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cases/convert")
        .join(name)
}

/// Every row of a table, as text, sorted: compared independently of innops's own checksums.
pub fn rows(conn: &mut Conn, table: &str) -> Vec<Vec<String>> {
    let q = format!("SELECT * FROM `d`.`{}`", table.replace('`', "``"));
    let mut out: Vec<Vec<String>> = conn
        .query::<mysql::Row, _>(q)
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().into_iter().map(|v| v.as_sql(false)).collect())
        .collect();
    out.sort();
    out
}

pub fn engine(conn: &mut Conn, table: &str) -> Option<String> {
    conn.exec_first::<Option<String>, _, _>(
        "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = ?",
        (table,),
    )
    .unwrap()
    .flatten()
}

pub fn setup(sb: &Sandboxed, sql: &str) -> Conn {
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE d").unwrap();
    c.query_drop("USE d").unwrap();
    let mut r = c.query_iter(sql).unwrap();
    while let Some(set) = r.iter() {
        for row in set {
            row.unwrap();
        }
    }
    drop(r);
    c
}

pub fn convert(sb: &Sandboxed, args: &[String], extra_env: &[(&str, &str)]) -> Output {
    let mut all = vec!["convert".to_string()];
    all.extend(args.iter().cloned());
    all.extend([
        "--sandbox".into(),
        sb.sandbox.name.clone(),
        "--sandbox-root".into(),
        sb.root.display().to_string(),
    ]);
    run_innops(&all, extra_env)
}

fn run_case(name: &str) {
    let dir = case_dir(name);
    let sql = std::fs::read_to_string(dir.join("create.sql")).unwrap();
    let args: Vec<String> = std::fs::read_to_string(dir.join("args"))
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let expect: Vec<(String, String)> = std::fs::read_to_string(dir.join("expect"))
        .unwrap()
        .lines()
        .filter_map(|l| {
            l.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let get = |k: &str| {
        expect
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
    };
    // `env=NAME=VALUE` lines: environment for innops.
    let env: Vec<(String, String)> = expect
        .iter()
        .filter(|(k, _)| k == "env")
        .filter_map(|(_, v)| {
            v.split_once('=')
                .map(|(a, b)| (a.to_string(), b.to_string()))
        })
        .collect();
    let sb = Sandboxed::new(&name.replace('_', "-"));
    // `strategies=a,b`: the whole case once per strategy (`--strategy X` added), each on a fresh database.
    match get("strategies") {
        None => run_case_once(name, &sb, &sql, args, &get, &env, "run"),
        Some(list) => {
            for (i, strategy) in list.split(',').enumerate() {
                if i > 0 {
                    sb.conn().query_drop("DROP DATABASE d").unwrap();
                }
                let mut a = args.clone();
                a.extend(["--strategy".to_string(), strategy.to_string()]);
                run_case_once(
                    &format!("{name} ({strategy})"),
                    &sb,
                    &sql,
                    a,
                    &get,
                    &env,
                    &format!("run-{strategy}"),
                );
            }
        }
    }
}

fn run_case_once(
    name: &str,
    sb: &Sandboxed,
    sql: &str,
    mut args: Vec<String>,
    get: &dyn Fn(&str) -> Option<String>,
    env: &[(String, String)],
    run: &str,
) {
    let env: Vec<(&str, &str)> = env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let table = get("table").unwrap_or_else(|| "t".into());
    let old = format!("_{table}_myisam_old");
    let shadow = format!("_{table}_innops_new");

    let mut c = setup(sb, sql);
    let before = rows(&mut c, &table);
    let engine_before = engine(&mut c, &table);

    // A dry run changes nothing, and exits as the run would up to its first action: a refusal or bad input
    // already shows, an action's outcome cannot (`dry_exit=` in expect says otherwise where needed).
    let dry = convert(sb, &args, &env);
    let dry_code: i32 = get("dry_exit")
        .or_else(|| get("exit"))
        .expect("expect has exit=")
        .parse()
        .unwrap();
    assert_eq!(dry.code, dry_code, "{name}: dry run: {dry:?}");
    assert_eq!(
        engine(&mut c, &table),
        engine_before,
        "dry run changed the engine: {dry:?}"
    );
    assert!(engine(&mut c, &shadow).is_none());

    let run_dir = sb.root.join(run);
    args.extend(
        [
            "--execute",
            "--yes",
            "--no-bench",
            "--run-dir",
            run_dir.to_str().unwrap(),
        ]
        .map(String::from),
    );
    let out = convert(sb, &args, &env);
    let code: i32 = get("exit").expect("expect has exit=").parse().unwrap();
    assert_eq!(out.code, code, "{name}: {out:?}");
    if let Some(s) = get("stdout_contains") {
        assert!(
            out.stdout.contains(&s),
            "{name}: stdout lacks {s:?}: {}",
            out.stdout
        );
    }
    if let Some(s) = get("stderr_contains") {
        assert!(
            out.stderr.contains(&s),
            "{name}: stderr lacks {s:?}: {}",
            out.stderr
        );
        assert_eq!(
            out.stderr.trim().lines().count(),
            1,
            "one sentence: {}",
            out.stderr
        );
    }
    // `--strategy alter` keeps no old table.
    let alter = args
        .windows(2)
        .any(|w| w[0] == "--strategy" && w[1] == "alter");
    let kept = get("kept").as_deref() != Some("no") && !alter;
    if code == 0 {
        assert_eq!(engine(&mut c, &table).as_deref(), Some("InnoDB"), "{name}");
        assert_eq!(
            rows(&mut c, &table),
            before,
            "{name}: the InnoDB table must hold exactly the rows of the source"
        );
        if kept {
            assert_eq!(
                engine(&mut c, &old).as_deref(),
                Some("MyISAM"),
                "{name}: the old table is kept"
            );
            assert_eq!(
                rows(&mut c, &old),
                before,
                "{name}: the kept table is untouched"
            );
            let report = read_json(&run_dir.join("report.json"));
            assert_eq!(report["status"], "done", "{report}");
        }
        assert!(
            engine(&mut c, &shadow).is_none(),
            "{name}: no shadow left behind"
        );
    } else {
        assert_eq!(
            engine(&mut c, &table),
            engine_before,
            "{name}: a refusal changes nothing"
        );
        assert_eq!(rows(&mut c, &table), before);
        assert!(engine(&mut c, &shadow).is_none() && engine(&mut c, &old).is_none());
    }
    if let Some(trigger) = get("trigger") {
        let n: Option<String> = c
            .exec_first("SELECT EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'd' AND TRIGGER_NAME = ?", (&trigger,))
            .unwrap();
        assert_eq!(
            n.as_deref(),
            Some(table.as_str()),
            "{name}: trigger {trigger} stays on the table"
        );
    }
    if let Some(ai) = get("auto_increment") {
        let v: Option<u64> = c
            .exec_first("SELECT AUTO_INCREMENT FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = ?", (&table,))
            .unwrap();
        assert_eq!(
            v,
            Some(ai.parse().unwrap()),
            "{name}: AUTO_INCREMENT preserved"
        );
    }
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        $(#[test] fn $name() { run_case(stringify!($name)); })*

        #[test]
        fn every_case_directory_has_a_test() {
            let listed = [$(stringify!($name)),*];
            for e in std::fs::read_dir(case_dir("")).unwrap() {
                let e = e.unwrap();
                if e.path().is_dir() {
                    let n = e.file_name().to_string_lossy().to_string();
                    assert!(listed.contains(&n.as_str()), "tests/cases/convert/{n} has no test in the cases! list");
                }
            }
        }
    };
}

cases!(
    already_innodb,
    autoinc_second_in_pk,
    bit_columns,
    empty_table,
    every_column_type,
    fixed_row_format,
    fulltext,
    generated_stored,
    generated_virtual_indexed,
    no_primary_key,
    nulls_blobs_dates,
    odd_identifiers,
    pk_binary,
    pk_bit,
    pk_collation,
    pk_decimal,
    pk_double,
    pk_enum,
    pk_float,
    pk_integers,
    pk_mixed_composite,
    pk_other_types,
    pk_set,
    pk_temporal,
    sysbench_shape,
    sysbench_shape_deferred,
    too_wide_row,
    triggers_alter,
    triggers_refused,
    unique_hash_keys,
    unknown_table,
    utf8mb4_text,
);

pub const SHAPE: &str = "CREATE TABLE t (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT UNSIGNED NOT NULL DEFAULT 0, \
    c CHAR(120) NOT NULL DEFAULT '', KEY k_1 (k)) ENGINE=MyISAM; \
    INSERT INTO t (k, c) SELECT seq % 101, CONCAT('c-', seq) FROM seq_1_to_30000;";

pub fn args(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_copy_killed_mid_way_resumes_to_the_same_result() {
    let sb = Sandboxed::new("cv-resume");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    let run_dir = sb.root.join("run");
    let a = args(&[
        "--tables",
        "d.t",
        "--strategy",
        "deferred",
        "--chunk-time",
        "10",
        "--execute",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    let killed = convert(&sb, &a, &[("INNOPS_FAULT", "after-chunk:3")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    let partial: u64 = c
        .query_first("SELECT COUNT(*) FROM d._t_innops_new")
        .unwrap()
        .unwrap();
    assert!(
        partial > 0 && partial < 30000,
        "three chunks were copied: {partial}"
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));

    let resumed = run_innops(
        &args(&["resume", run_dir.to_str().unwrap(), "--no-bench"]),
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
    assert_eq!(
        rows(&mut c, "t"),
        before,
        "identical to an uninterrupted run"
    );
    assert_eq!(rows(&mut c, "_t_myisam_old"), before);
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    let copy = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "copy:d.t")
        .unwrap();
    assert_eq!(
        copy["result"]["copy"]["rows_before_resume"], partial,
        "the resumed copy continued after the rows already copied: {copy}"
    );
    // The resumed run verified again under a new guard before swapping.
    let verify = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "verify:d.t")
        .unwrap();
    assert_eq!(verify["result"]["identical"], true, "{verify}");
}

#[test]
fn a_write_waiting_on_the_guard_lands_in_the_new_table() {
    let sb = Sandboxed::new("cv-guard");
    let mut c = setup(&sb, SHAPE);
    let hold = sb.root.join("hold");
    std::fs::create_dir_all(&hold).unwrap();
    let run_dir = sb.root.join("run");
    let a = args(&[
        "--tables",
        "d.t",
        "--execute",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    let hold_s = hold.to_str().unwrap().to_string();
    let sb_name = sb.sandbox.name.clone();
    let root = sb.root.display().to_string();
    let runner = std::thread::spawn(move || {
        let mut all = vec!["convert".to_string()];
        all.extend(a);
        all.extend(["--sandbox".into(), sb_name, "--sandbox-root".into(), root]);
        run_innops(&all, &[("INNOPS_TEST_HOLD_BEFORE_SWAP", &hold_s)])
    });
    while !hold.join("holding").exists() {
        assert!(!runner.is_finished(), "innops ended before the swap");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Reads go on under the guard...
    let n: u64 = c.query_first("SELECT COUNT(*) FROM d.t").unwrap().unwrap();
    assert_eq!(n, 30000);
    // ...and a write waits for it.
    let target = sb.target();
    let writer = std::thread::spawn(move || {
        let mut w = target.connect().unwrap();
        let id: u64 = w.query_first("SELECT CONNECTION_ID()").unwrap().unwrap();
        let h = std::thread::spawn(move || {
            w.query_drop("INSERT INTO d.t (k, c) VALUES (7, 'late write')")
                .unwrap()
        });
        (id, h)
    });
    let (writer_id, insert) = writer.join().unwrap();
    loop {
        let state: Option<Option<String>> = c
            .exec_first(
                "SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = ?",
                (writer_id,),
            )
            .unwrap();
        if state.flatten().is_some_and(|s| s.contains("lock")) {
            break;
        }
        assert!(
            !insert.is_finished(),
            "the write went through while the guard was held"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::write(hold.join("go"), b"").unwrap();
    let out = runner.join().unwrap();
    insert.join().unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    let in_new: u64 = c
        .query_first("SELECT COUNT(*) FROM d.t WHERE c = 'late write'")
        .unwrap()
        .unwrap();
    let in_old: u64 = c
        .query_first("SELECT COUNT(*) FROM d._t_myisam_old WHERE c = 'late write'")
        .unwrap()
        .unwrap();
    assert_eq!(
        (in_new, in_old),
        (1, 0),
        "the queued write must reach the InnoDB table, never the old one"
    );
}

#[test]
fn rollback_swaps_back_only_while_nothing_changed() {
    let sb = Sandboxed::new("cv-rollback");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    let out = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--execute",
            "--no-bench",
            "--run-dir",
            sb.root.join("r1").to_str().unwrap(),
        ]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    c.query_drop("INSERT INTO d.t (k, c) VALUES (1, 'new row')")
        .unwrap();
    let refused = convert(
        &sb,
        &args(&[
            "--rollback",
            "d.t",
            "--execute",
            "--no-bench",
            "--run-dir",
            sb.root.join("r2").to_str().unwrap(),
        ]),
        &[],
    );
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("would lose those writes"),
        "{}",
        refused.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
    c.query_drop("DELETE FROM d.t WHERE c = 'new row'").unwrap();
    let back = convert(
        &sb,
        &args(&[
            "--rollback",
            "d.t",
            "--execute",
            "--no-bench",
            "--run-dir",
            sb.root.join("r3").to_str().unwrap(),
        ]),
        &[],
    );
    assert_eq!(back.code, 0, "{back:?}");
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    assert_eq!(rows(&mut c, "t"), before);
    assert_eq!(
        engine(&mut c, "_t_innodb_rolled_back").as_deref(),
        Some("InnoDB"),
        "nothing is dropped by a rollback"
    );
}

#[test]
fn drop_old_table_needs_its_flag_and_drops_only_after_verification() {
    let sb = Sandboxed::new("cv-dropold");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    let dry = convert(
        &sb,
        &args(&["--tables", "d.t", "--drop-old-table", "--format", "json"]),
        &[],
    );
    assert_eq!(dry.code, 0, "{dry:?}");
    let j = dry.json();
    let drop = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == "drop-old:d.t")
        .unwrap();
    assert_eq!(drop["risk"], "destructive");
    let no_yes = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--drop-old-table",
            "--execute",
            "--no-bench",
        ]),
        &[],
    );
    assert_eq!(
        no_yes.code, 1,
        "a destructive step without --yes and without a terminal is refused: {no_yes:?}"
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    let out = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--drop-old-table",
            "--execute",
            "--yes",
            "--no-bench",
            "--run-dir",
            sb.root.join("r").to_str().unwrap(),
        ]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(rows(&mut c, "t"), before);
    assert!(engine(&mut c, "_t_myisam_old").is_none());
}

#[test]
fn critical_load_refuses_before_anything_is_locked_or_created() {
    let sb = Sandboxed::new("cv-load");
    let mut c = setup(&sb, SHAPE);
    // Threads_running is at least 1 (innops's own status query), so 0 is always exceeded.
    let out = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--critical-load",
            "Threads_running=0",
            "--execute",
            "--no-bench",
            "--run-dir",
            sb.root.join("r").to_str().unwrap(),
        ]),
        &[],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("above --critical-load Threads_running=0"),
        "{}",
        out.stderr
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    assert!(engine(&mut c, "_t_innops_new").is_none(), "nothing created");
    let typo = convert(
        &sb,
        &args(&["--tables", "d.t", "--max-load", "threads_running=5"]),
        &[],
    );
    assert_eq!(typo.code, 1, "{typo:?}");
    assert!(
        typo.stderr.contains("no status variable threads_running"),
        "{}",
        typo.stderr
    );
}

#[test]
fn ctrl_c_mid_copy_stops_at_a_chunk_boundary_with_130_and_resume_finishes() {
    let sb = Sandboxed::new("cv-sigint");
    let mut c = setup(&sb, SHAPE);
    let before = rows(&mut c, "t");
    let run_dir = sb.root.join("run");
    let a = args(&[
        "--tables",
        "d.t",
        "--strategy",
        "deferred",
        "--chunk-time",
        "10",
        "--execute",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    let stopped = convert(&sb, &a, &[("INNOPS_FAULT", "sigint-after-chunk:2")]);
    assert_eq!(stopped.code, 130, "{stopped:?}");
    assert!(
        stopped.stderr.contains("innops resume"),
        "{}",
        stopped.stderr
    );
    let partial: u64 = c
        .query_first("SELECT COUNT(*) FROM d._t_innops_new")
        .unwrap()
        .unwrap();
    assert!(partial > 0 && partial < 30000, "{partial}");
    let journal = std::fs::read_to_string(run_dir.join("journal.jsonl")).unwrap();
    assert!(journal.contains("\"event\":\"interrupted\""), "{journal}");
    assert!(!journal.contains("step_failed"), "{journal}");
    assert_eq!(
        read_json(&run_dir.join("report.json"))["status"],
        "interrupted"
    );

    let resumed = run_innops(
        &args(&["resume", run_dir.to_str().unwrap(), "--no-bench"]),
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    assert_eq!(rows(&mut c, "t"), before);
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
}
