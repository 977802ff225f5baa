//! `innops convert` against real sandboxes: the data-driven cases in tests/cases/convert, a crash mid-copy and
//! resume, writes queued behind the guard, rollback, and the drop-old guard.

use std::path::{Path, PathBuf};

use mysql::prelude::Queryable;
use mysql::Conn;

use crate::common::convert::{convert, engine, rows, setup, SHAPE};
use crate::common::{args, read_json, run_innops, write_that_waits, Sandboxed};

pub(crate) fn case_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cases/convert")
        .join(name)
}

/// `SHOW CREATE TABLE`, normalised the way a DBA would compare two of them by eye: the table name, the engine
/// and the AUTO_INCREMENT counter left out (and the row format where the case says InnoDB changes it).
fn definition(conn: &mut Conn, table: &str, drop_row_format: bool) -> String {
    let (_, create): (String, String) = conn
        .query_first(format!(
            "SHOW CREATE TABLE `d`.`{}`",
            table.replace('`', "``")
        ))
        .unwrap()
        .unwrap();
    let mut lines: Vec<String> = create.lines().skip(1).map(str::to_string).collect();
    // The table options: the line that closes the column list (a partitioning clause may follow it).
    if let Some(last) = lines.iter_mut().rev().find(|l| l.starts_with(") ")) {
        let opts: Vec<&str> = last
            .split(' ')
            .filter(|w| {
                // With the row format, an Aria table's leftovers (`PAGE_CHECKSUM=1 … /* TRANSACTIONAL=1 */`).
                let aria = w.starts_with("PAGE_CHECKSUM=")
                    || w.starts_with("TRANSACTIONAL=")
                    || *w == "/*"
                    || *w == "*/";
                let dropped = w.starts_with("ENGINE=")
                    || w.starts_with("AUTO_INCREMENT=")
                    || (drop_row_format && (w.starts_with("ROW_FORMAT=") || aria));
                !dropped
            })
            .collect();
        *last = opts.join(" ");
    }
    // A partitioned table's clause follows on lines of its own, each partition naming its engine.
    for l in lines.iter_mut() {
        let t = l.trim_start();
        if t.starts_with("(PARTITION")
            || t.starts_with("PARTITION")
            || t.starts_with("(SUBPARTITION")
            || t.starts_with("SUBPARTITION")
        {
            *l = l
                .replace("ENGINE = MyISAM", "ENGINE = (engine)")
                .replace("ENGINE = InnoDB", "ENGINE = (engine)");
        }
    }
    lines.join("\n")
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
    // Every strategy the case names, each with the server's bulk insert path on and off.
    let strategies: Vec<Option<String>> = match get("strategies") {
        Some(list) => list.split(',').map(|s| Some(s.to_string())).collect(),
        None => vec![None],
    };
    let sb = Sandboxed::new(&name.replace('_', "-"));
    // `{root}` in create.sql: the sandbox's own root, for files a table keeps outside the datadir.
    let sql = sql.replace("{root}", &sb.root.display().to_string());
    for strategy in &strategies {
        for bulk in ["ON", "OFF"] {
            let mut a = args.clone();
            if let Some(st) = strategy {
                a.extend(["--strategy".to_string(), st.clone()]);
            }
            let label = format!(
                "{name} (strategy {}, innodb_alter_copy_bulk={bulk})",
                strategy.as_deref().unwrap_or("as in args")
            );
            let mut c = sb.conn();
            c.query_drop("DROP DATABASE IF EXISTS d").unwrap();
            c.query_drop(format!("SET GLOBAL innodb_alter_copy_bulk = {bulk}"))
                .unwrap();
            drop(c);
            run_one(
                &sb,
                &label,
                &sql,
                a,
                &get,
                &env,
                strategy.as_deref() == Some("alter"),
            );
        }
    }
}

pub(crate) fn run_one(
    sb: &Sandboxed,
    name: &str,
    sql: &str,
    mut args: Vec<String>,
    get: &dyn Fn(&str) -> Option<String>,
    env: &[(String, String)],
    alter: bool,
) {
    let env: Vec<(&str, &str)> = env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let table = get("table").unwrap_or_else(|| "t".into());
    let old = format!("_{table}_myisam_old");
    let shadow = format!("_{table}_innops_new");

    let mut c = setup(sb, sql);
    if let Some(spec) = get("relabel") {
        relabel(sb, &mut c, &spec);
    }
    let before = rows(&mut c, &table);
    let engine_before = engine(&mut c, &table);
    let row_format_changes = get("row_format_changes").as_deref() == Some("yes");
    let definition_before = engine_before
        .is_some()
        .then(|| definition(&mut c, &table, row_format_changes));

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

    let run_dir = sb.root.join(format!(
        "run-{}",
        name.replace(|ch: char| !ch.is_ascii_alphanumeric(), "-")
    ));
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
    if let Some(s) = get("report_contains") {
        // The verdicts as the run recorded them (a step that passed shows its preview, not its verdicts, in text).
        let report = std::fs::read_to_string(run_dir.join("report.json")).unwrap();
        assert!(
            report.contains(&s),
            "{name}: report.json lacks {s:?}: {report}"
        );
    }
    if let Some(s) = get("stderr_contains") {
        assert!(
            out.error_line().contains(&s),
            "{name}: the error lacks {s:?}: {}",
            out.stderr
        );
    }
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
        // `create_lacks=TEXT`: the converted table's SHOW CREATE TABLE does not hold TEXT.
        if let Some(lacks) = get("create_lacks") {
            let (_, create): (String, String) = c
                .query_first(format!(
                    "SHOW CREATE TABLE `d`.`{}`",
                    table.replace('`', "``")
                ))
                .unwrap()
                .unwrap();
            assert!(!create.contains(&lacks), "{name}: {create}");
        }
        if let Some(want) = &definition_before {
            let mut have = definition(&mut c, &table, row_format_changes);
            let mut want = want.clone();
            // A long UNIQUE column is a hash key in MyISAM; InnoDB makes a B-tree where it fits, and sorts it
            // among the unique keys, as ALTER TABLE … ENGINE=InnoDB does: compare those as a set.
            if get("hash_keys_become_btree").as_deref() == Some("yes") {
                let as_set = |d: &str| {
                    let mut l: Vec<String> = d
                        .lines()
                        .map(|l| {
                            l.replace(" USING HASH", "")
                                .trim_end_matches(',')
                                .to_string()
                        })
                        .collect();
                    l.sort();
                    l.join("\n")
                };
                have = as_set(&have);
                want = as_set(&want);
            }
            // A temporal column in the format of before MySQL 5.6 is written in the current one by any copy
            // (ALTER TABLE … ENGINE=InnoDB too): the marker goes, the values (compared above) stay.
            if get("old_temporal_upgraded").as_deref() == Some("yes") {
                assert!(
                    want.contains(" /* mariadb-5.3 */"),
                    "{name}: the source has old-format columns"
                );
                assert!(
                    !have.contains(" /* mariadb-5.3 */"),
                    "{name}: the new table has the current format"
                );
                want = want.replace(" /* mariadb-5.3 */", "");
            }
            let want = &want;
            assert!(
                &have == want,
                "{name}: the definition changed:\n{have}\ninstead of\n{want}"
            );
        }
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

/// `relabel=TABLE:TWIN` in expect: TABLE takes the definition of TWIN (a MyISAM table identical but for a
/// collation, made by create.sql), outside the server, as a collation changed under a MyISAM table's data does:
/// TWIN's `.frm` goes over TABLE's, and the collation numbers in TABLE's index file (its key segments: MyISAM
/// refuses to open an index whose key segments name another collation, error 190) are set to TWIN's. TABLE's
/// rows and index entries stay as they were written, so a UNIQUE key under a case-insensitive TWIN can hold 'A'
/// and 'a'. Which header bytes name the collation is found by comparing TWIN's index file with an empty copy
/// of TABLE's layout (the two differ only there, past the state section).
fn relabel(sb: &Sandboxed, c: &mut Conn, spec: &str) {
    let (table, twin) = spec.split_once(':').expect("relabel=TABLE:TWIN");
    let layout = "_relabel_layout";
    c.query_drop(format!("CREATE TABLE d.`{layout}` LIKE d.`{table}`"))
        .unwrap();
    c.query_drop("FLUSH TABLES").unwrap();
    let dir = sb.sandbox.datadir.join("d");
    let read = |t: &str, ext: &str| std::fs::read(dir.join(format!("{t}.{ext}"))).unwrap();
    let (empty, wanted, mut index) = (read(layout, "MYI"), read(twin, "MYI"), read(table, "MYI"));
    // The MyISAM header: its length at byte 6, where the base information starts at byte 12 (big-endian).
    let at = |d: &[u8], i: usize| usize::from(u16::from_be_bytes([d[i], d[i + 1]]));
    let (header, base) = (at(&wanted, 6), at(&wanted, 12));
    assert_eq!(
        at(&empty, 6),
        header,
        "{twin} and {table} differ in more than a collation"
    );
    let mut patched = 0;
    for i in base..header {
        if empty[i] != wanted[i] {
            index[i] = wanted[i];
            patched += 1;
        }
    }
    assert!(
        patched > 0,
        "{twin}'s index file names the same collations as {table}'s"
    );
    std::fs::write(dir.join(format!("{table}.MYI")), index).unwrap();
    std::fs::write(dir.join(format!("{table}.frm")), read(twin, "frm")).unwrap();
    c.query_drop(format!("DROP TABLE d.`{layout}`, d.`{twin}`"))
        .unwrap();
    c.query_drop("FLUSH TABLES").unwrap();
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
    unique_long_varchar,
    partitioned,
    system_versioned,
    system_versioned_skipped,
    broken_merge_elsewhere,
    check_constraint_rows,
    dotted_names,
    view_named,
    already_innodb,
    aria_row_format_page,
    autoinc_secondary_key,
    index_attributes,
    index_order_no_pk,
    spatial_index,
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
    old_temporal_format,
    verify_checksum_first,
    verify_hash,
    reserved_column_names,
    fts_doc_id_allowed,
    wide_char_utf8mb4,
    autoinc_option_without_column,
    sequence_named,
    partition_data_directory,
    sequence_default,
    sequence_default_alter,
    aria_leftover_options,
    unique_collation_duplicates,
    unique_keys_nulls_composite,
);

/// The duplicate check reads a UNIQUE key in chunks; a group of equal keys may start in one chunk and end in
/// the next, or be longer than a chunk. At every chunk size from the smallest, the dry run names every group.
#[test]
fn collation_duplicates_are_found_across_every_chunk_border() {
    let sb = Sandboxed::new("cv-dup-chunks");
    let mut c = setup(
        &sb,
        "CREATE TABLE t (id INT PRIMARY KEY, code VARCHAR(20) COLLATE utf8mb4_bin, UNIQUE KEY uk (code)) ENGINE=MyISAM; \
         CREATE TABLE t_ci (id INT PRIMARY KEY, code VARCHAR(20) COLLATE utf8mb4_general_ci, UNIQUE KEY uk (code)) ENGINE=MyISAM; \
         INSERT INTO t VALUES (1, 'A'), (2, 'a'), (3, 'b1'), (4, NULL), (5, NULL), (6, 'b2'), (7, 'bX'), (8, 'bx'), \
         (9, 'c1'), (10, 'zED'), (11, 'zeD'), (12, 'zed');",
    );
    relabel(&sb, &mut c, "t:t_ci");
    for rows in 2..=7 {
        let n = rows.to_string();
        let out = convert(
            &sb,
            &args(&["--tables", "d.t"]),
            &[("INNOPS_TEST_CHUNK_ROWS", &n)],
        );
        assert_eq!(out.code, 1, "chunks of {rows}: {out:?}");
        let err = out.error_line();
        for group in ["'A', 'a'", "'bX', 'bx'", "'zED'"] {
            assert!(
                err.contains(group),
                "chunks of {rows}: {group} not named: {err}"
            );
        }
        assert!(
            !err.contains("NULL") && !err.contains("'b1'"),
            "chunks of {rows}: {err}"
        );
    }
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
        run_innops(
            &all,
            &[("INNOPS_TEST_HOLD", &format!("before-swap={hold_s}"))],
        )
    });
    while !hold.join("holding").exists() {
        assert!(!runner.is_finished(), "innops ended before the swap");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Reads go on under the guard...
    let n: u64 = c.query_first("SELECT COUNT(*) FROM d.t").unwrap().unwrap();
    assert_eq!(n, 30000);
    // ...and a write waits for it.
    let insert = write_that_waits(&sb, "INSERT INTO d.t (k, c) VALUES (7, 'late write')");
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
    signal_mid_copy_stops_at_a_chunk_boundary("sigint");
}

/// systemd stops a unit with SIGTERM and a dropped ssh session sends SIGHUP: both stop at the next safe point as
/// Ctrl-C does, never mid-chunk.
#[test]
fn sigterm_and_sighup_mid_copy_stop_at_a_chunk_boundary_as_ctrl_c_does() {
    signal_mid_copy_stops_at_a_chunk_boundary("sigterm");
    signal_mid_copy_stops_at_a_chunk_boundary("sighup");
}

fn signal_mid_copy_stops_at_a_chunk_boundary(signal: &str) {
    let sb = Sandboxed::new(&format!("cv-{signal}"));
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
    let fault = format!("{signal}-after-chunk:2");
    let stopped = convert(&sb, &a, &[("INNOPS_FAULT", &fault)]);
    assert_eq!(stopped.code, 130, "{signal}: {stopped:?}");
    assert!(
        stopped.stderr.contains("stopping at the next safe point"),
        "{}",
        stopped.stderr
    );
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

#[test]
fn a_missing_privilege_is_refused_with_the_grant_to_run() {
    let sb = Sandboxed::new("cv-grants");
    let mut c = setup(&sb, SHAPE);
    c.query_drop("CREATE USER 'lim'@'localhost'").unwrap();
    c.query_drop(
        "GRANT SELECT, INSERT, CREATE, DROP, ALTER, LOCK TABLES ON d.* TO 'lim'@'localhost'",
    )
    .unwrap();
    let socket = sb.sandbox.socket.display().to_string();
    let as_lim = |extra: &[&str]| {
        let mut a = args(&[
            "convert", "--tables", "d.t", "--socket", &socket, "--user", "lim",
        ]);
        a.extend(args(extra));
        run_innops(&a, &[])
    };
    let dry = as_lim(&[]);
    assert_eq!(dry.code, 1, "{dry:?}");
    assert!(
        dry.stderr
            .contains("GRANT RELOAD ON *.* TO 'lim'@'localhost'")
            && dry.stderr.contains(
                "GRANT SELECT, INSERT, DELETE, CREATE ON `innops`.* TO 'lim'@'localhost'"
            ),
        "{}",
        dry.stderr
    );
    // The alter path takes no guard, so it needs no RELOAD.
    let alter = as_lim(&["--strategy", "alter"]);
    assert_eq!(alter.code, 0, "{alter:?}");
    c.query_drop("GRANT RELOAD ON *.* TO 'lim'@'localhost'")
        .unwrap();
    c.query_drop("GRANT SELECT, INSERT, DELETE, CREATE ON innops.* TO 'lim'@'localhost'")
        .unwrap();
    let out = as_lim(&[
        "--execute",
        "--no-bench",
        "--run-dir",
        sb.root.join("r").to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
}

#[test]
fn a_table_with_files_outside_the_datadir_is_refused_in_one_sentence() {
    let sb = Sandboxed::new("cv-datadir");
    let elsewhere = sb.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let mut c = setup(
        &sb,
        &format!(
            "CREATE TABLE t (id INT PRIMARY KEY) ENGINE=MyISAM DATA DIRECTORY='{0}' INDEX DIRECTORY='{0}'; INSERT INTO t VALUES (1);",
            elsewhere.display()
        ),
    );
    for strategy in ["bulk", "deferred", "alter"] {
        let out = convert(
            &sb,
            &args(&[
                "--tables",
                "d.t",
                "--strategy",
                strategy,
                "--execute",
                "--no-bench",
            ]),
            &[],
        );
        assert_eq!(out.code, 1, "{strategy}: {out:?}");
        assert!(
            out.stderr.contains("keeps its files outside the datadir"),
            "{}",
            out.stderr
        );
        out.error_line();
        assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"));
    }
}

/// innops knows its own tables by its record, not by their names.
#[test]
fn innops_knows_its_own_tables_by_its_record_not_by_name() {
    let sb = Sandboxed::new("cv-own");
    let mut c = setup(
        &sb,
        "CREATE TABLE t (id INT PRIMARY KEY, v INT) ENGINE=MyISAM; INSERT INTO t VALUES (1, 1), (2, 2); \
         CREATE TABLE _u_myisam_old (id INT PRIMARY KEY) ENGINE=MyISAM; INSERT INTO _u_myisam_old VALUES (7);",
    );
    let out = convert(
        &sb,
        &args(&["--tables", "d.t", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    // --all-myisam: the kept table is innops's and is skipped; the user's look-alike converts.
    let all = convert(&sb, &args(&["--all-myisam", "--format", "json"]), &[]);
    assert_eq!(all.code, 0, "{all:?}");
    let plan = all.json();
    let ids: Vec<&str> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"copy:d._u_myisam_old"), "{ids:?}");
    assert!(
        !ids.iter().any(|i| i.ends_with("d._t_myisam_old")),
        "{ids:?}"
    );
    assert!(
        plan.to_string()
            .contains("innops's kept MyISAM table of d.t"),
        "{plan}"
    );
    // inspect lists the kept table apart and does not count it as a hazard.
    let inspect = sb.innops(&["inspect", "--format", "json"]);
    assert_eq!(inspect.code, 0, "{inspect:?}");
    let i = inspect.json();
    let names = |k: &str| -> Vec<String> {
        i[k].as_array()
            .unwrap()
            .iter()
            .map(|t| {
                format!(
                    "{}.{}",
                    t["schema"].as_str().unwrap(),
                    t["table"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(names("kept_by_innops"), vec!["d._t_myisam_old".to_string()]);
    assert!(!names("myisam_tables").contains(&"d._t_myisam_old".to_string()));
    // --restart leaves a shadow-named table innops did not make alone.
    c.query_drop("CREATE TABLE d._w_innops_new (id INT PRIMARY KEY) ENGINE=InnoDB")
        .unwrap();
    c.query_drop("CREATE TABLE d.w (id INT PRIMARY KEY) ENGINE=MyISAM")
        .unwrap();
    let restart = convert(
        &sb,
        &args(&["--tables", "d.w", "--restart", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(restart.code, 1, "{restart:?}");
    assert!(
        restart.stderr.contains("was not made by innops"),
        "{}",
        restart.stderr
    );
    assert_eq!(engine(&mut c, "_w_innops_new").as_deref(), Some("InnoDB"));
    // --rollback and --drop-kept work only on what innops kept.
    let rb = convert(&sb, &args(&["--rollback", "d._u"]), &[]);
    assert_eq!(rb.code, 2, "{rb:?}");
}

#[test]
fn drop_kept_drops_only_an_unchanged_kept_table_and_only_when_told() {
    let sb = Sandboxed::new("cv-dropkept");
    let mut c = setup(&sb, SHAPE);
    let out = convert(
        &sb,
        &args(&["--tables", "d.t", "--execute", "--no-bench"]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let dry = convert(&sb, &args(&["--drop-kept", "d.t"]), &[]);
    assert_eq!(dry.code, 0, "{dry:?}");
    let no_yes = convert(&sb, &args(&["--drop-kept", "d.t", "--execute"]), &[]);
    assert_eq!(
        no_yes.code, 1,
        "a destructive step needs --yes without a terminal: {no_yes:?}"
    );
    assert_eq!(engine(&mut c, "_t_myisam_old").as_deref(), Some("MyISAM"));
    // Someone wrote to the kept table: dropping it would lose that row.
    c.query_drop("INSERT INTO d._t_myisam_old (k, c) VALUES (1, 'written after the swap')")
        .unwrap();
    let changed = convert(
        &sb,
        &args(&["--drop-kept", "d.t", "--execute", "--yes"]),
        &[],
    );
    assert_eq!(changed.code, 1, "{changed:?}");
    assert!(
        changed.stderr.contains("changed since the swap"),
        "{}",
        changed.stderr
    );
    assert_eq!(engine(&mut c, "_t_myisam_old").as_deref(), Some("MyISAM"));
    c.query_drop("DELETE FROM d._t_myisam_old WHERE c = 'written after the swap'")
        .unwrap();
    let dropped = convert(
        &sb,
        &args(&["--drop-kept", "d.t", "--execute", "--yes"]),
        &[],
    );
    assert_eq!(dropped.code, 0, "{dropped:?}");
    assert!(engine(&mut c, "_t_myisam_old").is_none());
    assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
    let again = convert(&sb, &args(&["--drop-kept", "d.t"]), &[]);
    assert_eq!(again.code, 2, "nothing innops kept is left: {again:?}");
}

/// A run that acts says what it does as it happens, on stderr, one step at a time; stdout keeps the report.
#[test]
fn an_executed_run_shows_each_step_as_it_happens() {
    let sb = Sandboxed::new("cv-live");
    setup(&sb, SHAPE);
    let out = convert(
        &sb,
        &args(&[
            "--tables",
            "d.t",
            "--execute",
            "--no-bench",
            "--format",
            "json",
        ]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let steps: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with('[')).collect();
    assert!(
        steps.first().is_some_and(|l| l.starts_with("[1/")),
        "{}",
        out.stderr
    );
    assert!(
        steps.iter().any(|l| l.contains("(swap:d.t, risk locking)")),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("done in "), "{}", out.stderr);
    // --format json keeps stdout to the JSON report.
    assert_eq!(out.json()["status"], "done");
}

/// `--verify auto` trusts `CHECKSUM TABLE … EXTENDED` for a table only where it reads the same rows alike on
/// MyISAM and InnoDB. For one table per column class (every type innops trusts it for, with NULLs, and the
/// shapes that change MyISAM's record: row formats, null bytes, hash keys, generated columns), a MyISAM table
/// and an InnoDB copy of it are checksummed on the server: every table innops classes as alike must checksum
/// alike. Tables it sends to the row hash may checksum alike too (a wasted read, never a false verdict), but the
/// classes known to differ must differ here, or the test could not tell.
#[test]
fn checksum_table_is_trusted_only_for_tables_it_reads_alike_on_both_engines() {
    use innops::procedures::convert::schema::TableInfo;
    use innops::procedures::convert::verify::{checksum_differs_by_engine, CHECKSUM_ALIKE};
    let sb = Sandboxed::new("cv-classes");
    let mut c = setup(&sb, "SELECT 1");
    // (columns, values from `seq` 1..300, table options); a row of defaults (NULLs) is added to each but the
    // SPATIAL one.
    let cases: &[(&str, &str, &str)] = &[
        ("v TINYINT, w TINYINT UNSIGNED", "seq % 100, seq % 200", ""),
        ("v SMALLINT, w SMALLINT UNSIGNED ZEROFILL", "-seq, seq", ""),
        ("v MEDIUMINT, w MEDIUMINT UNSIGNED", "-seq * 1000, seq * 5000", ""),
        ("v INT, w INT UNSIGNED NOT NULL DEFAULT 0", "-seq, 4294967295 - seq", ""),
        ("v BIGINT, w BIGINT UNSIGNED", "-9223372036854775808 + seq, 18446744073709551615 - seq", ""),
        ("v DECIMAL(65,30), w DECIMAL(10,2) UNSIGNED", "seq / 7, seq / 100", ""),
        ("v FLOAT, w FLOAT(7,3), x DOUBLE, y DOUBLE(20,10)", "seq / 7, seq / 3, 1 / seq, seq / 13", ""),
        ("v DATE, w YEAR", "'2024-01-01' + INTERVAL seq DAY, 1901 + seq % 200", ""),
        ("v DATETIME, w DATETIME(6)", "'1970-01-01' + INTERVAL seq * 86399 SECOND, '2024-03-31' + INTERVAL seq * 1234567 MICROSECOND", ""),
        ("v TIMESTAMP NULL, w TIMESTAMP(3) NULL", "FROM_UNIXTIME(1711846800 + seq * 7), FROM_UNIXTIME(1711846800 + seq / 1000)", ""),
        ("v TIME, w TIME(6)", "SEC_TO_TIME(seq * 97 - 20000), SEC_TO_TIME(seq * 13) + INTERVAL seq MICROSECOND", ""),
        ("v CHAR(10), w CHAR(10) CHARACTER SET utf8mb4", "CONCAT('c', seq), CONCAT(_utf8mb4 0xC3BC, seq)", ""),
        ("v CHAR(10), w INT", "CONCAT('c', seq), seq", "ROW_FORMAT=FIXED"),
        ("v CHAR(10), w INT", "CONCAT('c', seq), seq", "ROW_FORMAT=DYNAMIC"),
        ("v VARCHAR(100), w VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", "CONCAT('v', seq, '  '), CONCAT(_utf8mb4 0xF09F9880, seq)", ""),
        ("v VARCHAR(100), w INT", "CONCAT('v', seq), seq", "ROW_FORMAT=FIXED"),
        ("v BINARY(8), w VARBINARY(100)", "UNHEX(HEX(seq)), UNHEX(SHA1(seq))", ""),
        ("v TINYTEXT, w TEXT, x MEDIUMTEXT, y LONGTEXT", "CONCAT('t', seq), REPEAT('t', seq), REPEAT('m', seq), REPEAT('l', seq * 3)", ""),
        ("v TINYBLOB, w BLOB, x MEDIUMBLOB, y LONGBLOB", "UNHEX(SHA1(seq)), REPEAT('b', seq), REPEAT('m', seq), REPEAT(UNHEX(SHA1(seq)), 5)", ""),
        ("v ENUM('a','b','c'), w SET('p','q','r')", "1 + seq % 3, seq % 8", ""),
        ("v JSON", "JSON_OBJECT('k', seq)", ""),
        ("a INT, b INT, c INT, d INT, e INT, f INT, g INT, h INT, v INT", "seq, seq, seq, seq, seq, seq, seq, seq, seq", ""),
        ("a INT, b INT, c INT, d INT, e INT, f INT, g INT, v VARCHAR(10)", "seq, seq, seq, seq, seq, seq, seq, seq", ""),
        ("v INT NOT NULL DEFAULT 0, w VARCHAR(5) NOT NULL DEFAULT ''", "seq, 'x'", "CHECKSUM=1"),
        ("v TEXT, UNIQUE KEY (v(10))", "CONCAT('u', seq)", ""),
        ("v INET6, w UUID, x INET4", "CONCAT('2001:db8::', HEX(seq)), CONCAT('00000000-0000-1000-8000-', LPAD(HEX(seq), 12, '0')), CONCAT('10.', seq % 250, '.0.1')", ""),
        ("v GEOMETRY, w POINT, x LINESTRING, y POLYGON", "POINT(seq, -seq), POINT(seq / 3, seq / 7), LINESTRING(POINT(0, 0), POINT(seq, seq)), POLYGON(LINESTRING(POINT(0, 0), POINT(seq, 0), POINT(seq, seq), POINT(0, 0)))", ""),
        ("v MULTIPOINT, w MULTILINESTRING, x MULTIPOLYGON, y GEOMETRYCOLLECTION NOT NULL, SPATIAL KEY (y)", "MULTIPOINT(POINT(1, seq), POINT(2, seq)), MULTILINESTRING(LINESTRING(POINT(0, 0), POINT(1, seq))), MULTIPOLYGON(POLYGON(LINESTRING(POINT(0, 0), POINT(seq, 0), POINT(seq, seq), POINT(0, 0)))), GEOMETRYCOLLECTION(POINT(seq, 1), LINESTRING(POINT(0, 0), POINT(1, seq)))", ""),
        // Sent to the row hash:
        ("v BIT(5), w BIT(64)", "seq % 32, seq * 3", ""),
        ("v TEXT, UNIQUE KEY (v)", "CONCAT('u', seq)", ""),
        ("v VARCHAR(2000) CHARACTER SET utf8mb4, UNIQUE KEY (v)", "CONCAT('u', seq)", ""),
        ("v INT, w BIGINT AS (v * 2) STORED", "seq", ""),
        ("v VARCHAR(20), w VARCHAR(30) AS (CONCAT(v, '!')) VIRTUAL, KEY (w)", "CONCAT('v', seq)", ""),
    ];
    let mut trusted_but_differ = Vec::new();
    let mut differ = Vec::new();
    let mut trusted_types = std::collections::BTreeSet::new();
    for (n, (cols, values, opts)) in cases.iter().enumerate() {
        c.query_drop(format!(
            "CREATE TABLE m{n} (id INT NOT NULL PRIMARY KEY, {cols}) ENGINE=MyISAM {opts}"
        ))
        .unwrap();
        let names: Vec<String> = c
            .exec("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = ? AND IS_GENERATED = 'NEVER' ORDER BY ORDINAL_POSITION", (format!("m{n}"),))
            .unwrap();
        let list = names
            .iter()
            .map(|x| format!("`{x}`"))
            .collect::<Vec<_>>()
            .join(", ");
        c.query_drop(format!("INSERT INTO m{n} ({list}) SELECT seq, {values} FROM (SELECT CAST(seq AS SIGNED) AS seq FROM seq_1_to_300) s")).unwrap();
        if !cols.contains("SPATIAL") {
            // A SPATIAL key needs NOT NULL columns without a default.
            c.query_drop(format!("INSERT INTO m{n} (id) VALUES (0)"))
                .unwrap();
        }
        // The copy as innops makes it: the same definition in InnoDB, an explicit foreign row format dropped.
        c.query_drop(format!("CREATE TABLE i{n} LIKE m{n}"))
            .unwrap();
        let fmt = if opts.contains("FIXED") {
            " ROW_FORMAT=DEFAULT"
        } else {
            ""
        };
        c.query_drop(format!("ALTER TABLE i{n} ENGINE=InnoDB{fmt}"))
            .unwrap();
        c.query_drop(format!("INSERT INTO i{n} ({list}) SELECT {list} FROM m{n}"))
            .unwrap();
        let sum = |c: &mut Conn, t: &str| -> Option<u64> {
            c.query_first::<(String, Option<u64>), _>(format!("CHECKSUM TABLE {t} EXTENDED"))
                .unwrap()
                .unwrap()
                .1
        };
        let (a, b) = (sum(&mut c, &format!("m{n}")), sum(&mut c, &format!("i{n}")));
        let info = TableInfo::load(&mut c, "", "d", &format!("m{n}"))
            .unwrap()
            .unwrap();
        let why = checksum_differs_by_engine(&info);
        if why.is_none() {
            trusted_types.extend(info.columns.iter().map(|x| x.data_type.clone()));
        }
        if a != b || a.is_none() {
            differ.push(format!("{cols} {opts}"));
            if why.is_none() {
                trusted_but_differ.push(format!("{cols} {opts}: {a:?} vs {b:?}"));
            }
        }
    }
    eprintln!("differ between the engines: {differ:#?}");
    assert!(
        trusted_but_differ.is_empty(),
        "CHECKSUM TABLE trusted but differs: {trusted_but_differ:#?}"
    );
    for known in [
        "v BIT(5)",
        "v VARCHAR(100), w INT ROW_FORMAT=FIXED",
        "v TEXT, UNIQUE KEY (v) ",
        "v VARCHAR(2000)",
        "v INT, w BIGINT AS (v * 2) STORED",
        "v VARCHAR(20), w VARCHAR(30) AS",
    ] {
        assert!(
            differ.iter().any(|d| d.starts_with(known)),
            "{known} should differ between the engines: {differ:#?}"
        );
    }
    // Every type the classifier trusts was tried here.
    let untried: Vec<&&str> = CHECKSUM_ALIKE
        .iter()
        .filter(|t| !trusted_types.contains(**t))
        .collect();
    assert!(untried.is_empty(), "trusted but never tried: {untried:?}");
}

/// A dry run's whole-table checks (zero dates, CHECK constraints, duplicates under a UNIQUE key's collation) read a MyISAM table, and each MyISAM read
/// holds the table's writers for its whole statement: they read in short statements over the primary key,
/// never the table in one. Judged from the server's own log of what innops sent, not from timings: every
/// statement that reads `d`.`t`'s rows is bounded by a LIMIT, and the scan took many of them.
#[test]
fn a_dry_runs_scans_read_the_table_in_short_statements() {
    let sb = Sandboxed::new("cv-scan");
    let mut c = setup(
        &sb,
        "CREATE TABLE t (id INT PRIMARY KEY, d DATE, n INT, u VARCHAR(20), CONSTRAINT pos CHECK (n >= 0), UNIQUE KEY uk (u)) ENGINE=MyISAM; \
         INSERT INTO t SELECT seq, IF(seq = 777, '2020-00-05', '2020-01-01'), seq, CONCAT('u', seq) FROM seq_1_to_20000;",
    );
    let log = sb.root.join("general.log");
    c.query_drop(format!(
        "SET GLOBAL general_log_file = '{}', log_output = 'FILE', general_log = 1",
        log.display()
    ))
    .unwrap();
    let out = convert(
        &sb,
        &args(&["--tables", "d.t"]),
        &[("INNOPS_TEST_CHUNK_ROWS", "1000")],
    );
    c.query_drop("SET GLOBAL general_log = 0").unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("1 zero dates in `d`"), "{out:?}");
    assert!(
        out.stdout
            .contains("every row satisfies 1 constraint(s) (read in 21 short statement(s)"),
        "{out:?}"
    );
    // The UNIQUE key's duplicate check walks its own index in chunks too.
    assert!(
        out.stdout.contains("no duplicates in 1 key(s) (read in"),
        "{out:?}"
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.lines()
            .filter(|l| l.contains("FORCE INDEX (`uk`)"))
            .count()
            >= 20,
        "the UNIQUE key was not read in chunks"
    );
    let reads: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("innops:") && l.contains("FROM `d`.`t`"))
        .collect();
    assert!(reads.len() >= 40, "{} reads: {reads:#?}", reads.len());
    for l in &reads {
        assert!(l.contains("LIMIT"), "a read of the whole table: {l}");
    }
}

/// A copy that runs out of space, made deterministic without a small mount: the system tablespace capped at
/// 20M with `innodb_file_per_table=0`, so the copy of a ~20M table fills it (ERROR 1114 on the chunked copy,
/// ERROR 1114 or 1005 with handler error 135 on the ALTER, and a bulk insert the server reports done and undoes
/// at COMMIT without an error). Each path ends in one sentence naming the datadir's filesystem, its free space,
/// what the copy needs and what is full, and the table is left as it was.
#[test]
fn a_copy_out_of_space_says_which_space_and_leaves_the_table() {
    let cap = "ibdata1:12M:autoextend:max:20M";
    let sb = Sandboxed::with(
        "cv-full",
        innops::server::sandbox::SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra: vec![
                "innodb_file_per_table = 0".into(),
                format!("innodb_data_file_path = {cap}"),
            ],
            ..Default::default()
        },
    );
    let mut c = setup(
        &sb,
        "CREATE TABLE t (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT UNSIGNED NOT NULL DEFAULT 0, \
         c CHAR(120) NOT NULL DEFAULT '', KEY k_1 (k)) ENGINE=MyISAM; \
         INSERT INTO t (k, c) SELECT seq % 101, CONCAT('c-', seq) FROM seq_1_to_150000;",
    );
    let checksum = |c: &mut Conn| -> Option<u64> {
        c.query_first::<(String, Option<u64>), _>("CHECKSUM TABLE d.t EXTENDED")
            .unwrap()
            .and_then(|(_, v)| v)
    };
    let before = checksum(&mut c);
    // Bulk first: its undone insert leaves the tablespace as it found it. `--restart` lets each later path
    // start over from the shadow the one before left.
    for (strategy, code) in [("bulk", 3), ("deferred", 3), ("alter", 1)] {
        let run_dir = sb.root.join(format!("run-{strategy}"));
        let out = convert(
            &sb,
            &args(&[
                "--tables",
                "d.t",
                "--strategy",
                strategy,
                "--restart",
                "--execute",
                "--yes",
                "--no-bench",
                "--run-dir",
                run_dir.to_str().unwrap(),
            ]),
            &[],
        );
        assert_eq!(out.code, code, "{strategy}: {out:?}");
        let err = out.error_line();
        for said in [
            "out of space",
            &format!("innodb_data_file_path={cap}"),
            "free of",
            "d.t itself is unchanged",
        ] {
            assert!(err.contains(said), "{strategy}: lacks {said:?}: {err}");
        }
        assert!(
            !err.contains("(HY000)"),
            "{strategy}: the server's raw text: {err}"
        );
        assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"), "{strategy}");
        assert_eq!(checksum(&mut c), before, "{strategy}: the table changed");
    }
}
