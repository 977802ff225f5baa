//! `innops experiment`'s restarts beyond the server itself: a primary's replicas proven reconnected after
//! each restart (and a run stopped when one does not, resumed once it does), a replica's own replication proven
//! running again after each of its restarts (started by innops when the server starts with skip_slave_start),
//! and the RocksDB engine loaded for an experiment through the drop-in and a restart and unloaded at its end.

use mysql::prelude::Queryable;

use crate::common::topology::{conn, Topology};
use crate::common::{args, read_json, resume, run_innops, step, Sandboxed};
use innops::server::sandbox::SandboxOptions;

fn global(c: &mut mysql::Conn, name: &str) -> String {
    c.query_first::<String, _>(format!("SELECT CAST(@@GLOBAL.{name} AS CHAR)"))
        .unwrap()
        .unwrap()
}

/// A restart-variable experiment on sandbox `on` of `t`: 2 rounds of 1 s, no warm-up, `workload`.
fn experiment_on(t: &Topology, on: &str, workload: &str, run_dir: &std::path::Path) -> Vec<String> {
    let mut a = args(&[
        "experiment",
        "--set",
        "innodb_log_buffer_size=32M",
        "--workload",
        workload,
        "--threads",
        "2",
        "--time",
        "1",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--execute",
        "--yes",
        "--sandbox",
        on,
        "--sandbox-root",
    ]);
    a.push(t.root.display().to_string());
    a.push("--run-dir".into());
    a.push(run_dir.display().to_string());
    a
}

fn io_sql_running(c: &mut mysql::Conn) -> (String, String) {
    let row: mysql::Row = c.query_first("SHOW SLAVE STATUS").unwrap().unwrap();
    (
        row.get::<String, _>("Slave_IO_Running").unwrap(),
        row.get::<String, _>("Slave_SQL_Running").unwrap(),
    )
}

fn dropin_of(s: &innops::server::sandbox::Sandbox) -> String {
    std::fs::read_to_string(s.conf_dir.join("99-innops.cnf")).unwrap_or_default()
}

/// On a primary, every restart of the experiment is followed by its replicas' reconnection, measured and
/// proven; a replica that does not reconnect stops the run (exit 3, naming it), and the run resumed once it
/// replicates again ends with the server as it was.
#[test]
fn an_experiment_s_restarts_on_a_primary_wait_for_its_replicas() {
    let t = Topology::new(1);
    let r1 = format!("127.0.0.1:{}", t.replicas[0].port);
    let before = global(&mut conn(&t.primary), "innodb_log_buffer_size");
    let run_dir = t.root.join("run");
    // The replica's IO thread stopped: the first restart's check waits (2 s here) and says it did not reconnect.
    conn(&t.replicas[0])
        .query_drop("STOP SLAVE IO_THREAD")
        .unwrap();
    let a = experiment_on(&t, "p", "oltp_read_write", &run_dir);
    let stopped = run_innops(&a, &[("INNOPS_TEST_RECONNECT_WAIT", "2")]);
    assert_eq!(stopped.code, 3, "{stopped:?}");
    assert!(
        stopped.stderr.contains(&format!("not reconnected: {r1}"))
            && stopped
                .stderr
                .contains("a replica did not reconnect to this server after its restart"),
        "{}",
        stopped.stderr
    );
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(
        step(&report, "replicas-reconnect-restart-1")["status"],
        "failed",
        "{report}"
    );
    conn(&t.replicas[0])
        .query_drop("START SLAVE IO_THREAD")
        .unwrap();
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    // Both restarts between the arms are followed by a measured reconnection of r1.
    for id in [
        "replicas-reconnect-restart-1",
        "replicas-reconnect-restart-2",
    ] {
        let s = step(&report, id);
        assert_eq!(s["status"], "done", "{s}");
        let each = s["result"]["replicas"].as_array().unwrap();
        assert_eq!(each.len(), 1, "{s}");
        assert_eq!(each[0]["replica"], r1.as_str());
        assert!(each[0]["reconnected_after_s"].as_f64().is_some(), "{s}");
    }
    assert_eq!(
        global(&mut conn(&t.primary), "innodb_log_buffer_size"),
        before
    );
    assert_eq!(dropin_of(&t.primary), "");
    t.sync();
    assert_eq!(
        io_sql_running(&mut conn(&t.replicas[0])),
        ("Yes".into(), "Yes".into())
    );
}

/// On a replica, the preflight refuses while its replication is stopped (a restart would start it), and each
/// restart is followed by its replication proven running again: with skip_slave_start (the server does not
/// start replication itself) innops starts it, so the replica ends replicating as it began.
#[test]
fn an_experiment_on_a_replica_proves_its_replication_runs_after_each_restart() {
    let t = Topology::new(1);
    // The benchmark tables come from the primary, as every write a replica holds does.
    let prep = run_innops(
        &experiment_on(&t, "p", "oltp_read_only", &t.root.join("prep")),
        &[],
    );
    assert_eq!(prep.code, 0, "{prep:?}");
    t.sync();
    let r = &t.replicas[0];
    let before = global(&mut conn(r), "innodb_log_buffer_size");

    conn(r).query_drop("STOP SLAVE").unwrap();
    let refused = run_innops(
        &experiment_on(&t, "r1", "oltp_read_only", &t.root.join("refused")),
        &[],
    );
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .error_line()
            .contains("replication on this replica is stopped, and a restart would start it again"),
        "{}",
        refused.stderr
    );
    conn(r).query_drop("START SLAVE").unwrap();

    // The replica's own option file keeps replication stopped at every start.
    std::fs::write(
        r.conf_dir.join("50-skip.cnf"),
        "[mysqld]\nskip_slave_start\n",
    )
    .unwrap();
    let run_dir = t.root.join("run");
    let out = run_innops(&experiment_on(&t, "r1", "oltp_read_only", &run_dir), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    for id in ["replication-restart-1", "replication-restart-2"] {
        let s = step(&report, id);
        assert_eq!(s["status"], "done", "{s}");
        assert!(s["result"]["running_after_s"].as_f64().is_some(), "{s}");
        assert_eq!(s["result"]["started_by_innops"], true, "{s}");
    }
    let mut c = conn(r);
    assert_eq!(global(&mut c, "innodb_log_buffer_size"), before);
    assert_eq!(io_sql_running(&mut c), ("Yes".into(), "Yes".into()));
    assert_eq!(dropin_of(r), "");
    // It still applies what the primary writes.
    conn(&t.primary)
        .query_drop("CREATE DATABASE after_exp")
        .unwrap();
    t.sync();
}

/// A plugin directory holding the server's own plugins and Debian's ha_rocksdb.so (mariadb-plugin-rocksdb, the
/// same version as mariadbd), made once under /tmp from `apt-get download` without installing the package;
/// None, with the reason printed, when the package cannot be fetched.
fn rocksdb_plugin_dir() -> Option<std::path::PathBuf> {
    let dir = std::path::PathBuf::from("/tmp/innops-test-rocksdb");
    let plugins = dir.join("plugin");
    if plugins.join("ha_rocksdb.so").exists() {
        return Some(plugins);
    }
    let help = std::process::Command::new("mariadbd")
        .args(["--verbose", "--help"])
        .output()
        .ok()?;
    let system = String::from_utf8_lossy(&help.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("plugin-dir").map(|v| v.trim().to_string()))
        .unwrap_or_else(|| "/usr/lib/mysql/plugin".into());
    let work = tempfile::Builder::new()
        .prefix("innops-rocksdb-")
        .tempdir_in("/tmp")
        .unwrap();
    let got = std::process::Command::new("apt-get")
        .args(["download", "mariadb-plugin-rocksdb"])
        .current_dir(work.path())
        .output();
    let deb = std::fs::read_dir(work.path())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"));
    let Some(deb) = deb else {
        eprintln!(
            "skipped: `apt-get download mariadb-plugin-rocksdb` fetched no package ({})",
            match got {
                Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                Err(e) => e.to_string(),
            }
        );
        return None;
    };
    let root = work.path().join("root");
    let x = std::process::Command::new("dpkg")
        .args([
            "-x",
            &deb.display().to_string(),
            &root.display().to_string(),
        ])
        .status()
        .unwrap();
    assert!(x.success(), "dpkg -x {}", deb.display());
    let so = walk_find(&root, "ha_rocksdb.so").expect("ha_rocksdb.so in the package");
    let mine = work.path().join("plugin");
    std::fs::create_dir(&mine).unwrap();
    for e in std::fs::read_dir(&system).unwrap().filter_map(Result::ok) {
        std::os::unix::fs::symlink(e.path(), mine.join(e.file_name())).unwrap();
    }
    std::fs::copy(&so, mine.join("ha_rocksdb.so")).unwrap();
    // Another test may have made it meanwhile: either copy serves.
    let kept = work.keep();
    if std::fs::rename(&kept, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&kept);
    }
    Some(plugins)
}

fn walk_find(dir: &std::path::Path, name: &str) -> Option<std::path::PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            if let Some(f) = walk_find(&p, name) {
                return Some(f);
            }
        } else if e.file_name() == name {
            return Some(p);
        }
    }
    None
}

fn rocksdb_support(sb: &Sandboxed) -> Option<String> {
    sb.conn()
        .query_first("SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB'")
        .unwrap()
}

/// With the plugin in the server's plugin directory but not loaded, an ENGINE=RocksDB variant is refused in
/// one sentence naming --install-engine; with it, the plan loads the engine through the drop-in and a restart,
/// proves it enabled, runs the variant, and unloads it at the end: killed with the server down inside the load,
/// resumed, killed again inside the unload, resumed, the run ends with the engine gone and the drop-in as it was.
#[test]
fn install_engine_loads_rocksdb_for_the_experiment_and_unloads_it_after_kills() {
    let Some(plugins) = rocksdb_plugin_dir() else {
        return;
    };
    let sb = Sandboxed::with(
        "exprocks",
        SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra: vec![format!("plugin_dir = {}", plugins.display())],
            ..Default::default()
        },
    );
    assert_eq!(rocksdb_support(&sb), None, "not loaded before");
    let run_dir = sb.root.join("run");
    let mut a = args(&[
        "experiment",
        "--table-option",
        "ENGINE=RocksDB",
        "--workload",
        "oltp_read_write",
        "--threads",
        "2",
        "--time",
        "1",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--run-dir",
    ]);
    a.push(run_dir.display().to_string());
    let refused = sb.innops(&strs(&a));
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .error_line()
            .contains("but not loaded: pass --install-engine"),
        "{}",
        refused.error_line()
    );
    let _ = std::fs::remove_dir_all(&run_dir);
    a.extend(args(&["--install-engine", "--execute", "--yes"]));
    // Killed with the server down inside the load, the drop-in loading the plugin.
    let first = sb.innops_env(
        &strs(&a),
        &[("INNOPS_FAULT", "restart-stopped:engine-load")],
    );
    assert_eq!(first.code, 137, "{first:?}");
    assert!(sb.target().connect().is_err(), "the server is down");
    assert!(crate::common::dropin(&sb).contains("plugin_load_add = ha_rocksdb"));
    // Resumed, and killed again with the server down inside the unload, the drop-in back as it was.
    let killed = run_innops(
        &args(&["resume", &run_dir.display().to_string(), "--yes"]),
        &[("INNOPS_FAULT", "restart-stopped:engine-unload")],
    );
    assert_eq!(killed.code, 137, "{killed:?}");
    assert!(sb.target().connect().is_err(), "the server is down");
    assert_eq!(crate::common::dropin(&sb), "");
    let resumed = resume(&run_dir, &[]);
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let report = read_json(&run_dir.join("report.json"));
    assert_eq!(report["status"], "done", "{report}");
    let load = step(&report, "engine-load");
    assert_eq!(load["status"], "done", "{load}");
    // The load's action, as the journal kept it from the resumed run (the drop-in written already, its diff
    // printed by the run that was killed).
    let acted = crate::common::events(&run_dir)
        .into_iter()
        .find(|e| e["event"] == "action_done" && e["step"] == "engine-load")
        .expect("engine-load acted");
    assert_eq!(acted["result"]["loaded"], "ha_rocksdb", "{acted}");
    assert!(
        first.stderr.contains("+plugin_load_add = ha_rocksdb"),
        "{}",
        first.stderr
    );
    // Its post-check read the engine enabled from information_schema.ENGINES.
    assert!(
        crate::common::events(&run_dir)
            .iter()
            .any(|e| e["step"] == "engine-load" && e.to_string().contains("ENGINES: ROCKSDB YES")),
        "no post-check of engine-load read ROCKSDB YES"
    );
    assert_eq!(step(&report, "table-1")["status"], "done");
    let rocks = report["experiment"]["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["key"] == "B")
        .unwrap();
    assert_eq!(rocks["rounds"], 2, "{rocks}");
    // The end: the engine gone and innops's drop-in as it was (none), read back from the server.
    assert_eq!(step(&report, "engine-unload")["status"], "done");
    assert_eq!(rocksdb_support(&sb), None, "unloaded");
    assert_eq!(crate::common::dropin(&sb), "");
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The dry run shows the load and the unload; a library the server cannot load (here a file that is no
/// library, in a private plugin directory) makes a start without the engine: the load is reverted, the RocksDB
/// variant left out and reported, the rest judged, and the server ends as it was.
#[test]
fn a_rocksdb_load_that_does_not_take_is_reverted_and_its_variant_left_out() {
    let dir = tempfile::Builder::new()
        .prefix("ino-rk-")
        .tempdir_in("/tmp")
        .unwrap();
    let plugins = dir.path().join("plugin");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::write(plugins.join("ha_rocksdb.so"), "not a library\n").unwrap();
    let sb = Sandboxed::with(
        "exprkbad",
        SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra: vec![format!("plugin_dir = {}", plugins.display())],
            ..Default::default()
        },
    );
    let run_dir = sb.root.join("run");
    let mut a = args(&[
        "experiment",
        "--table-option",
        "ENGINE=RocksDB,ENGINE=Aria",
        "--workload",
        "oltp_read_write",
        "--threads",
        "2",
        "--time",
        "1",
        "--rounds",
        "2",
        "--warmup",
        "0",
        "--install-engine",
        "--format",
        "json",
    ]);
    let dry = sb.innops(&strs(&a));
    assert_eq!(dry.code, 0, "{dry:?}");
    let ids: Vec<String> = dry.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    let at = |id: &str| {
        ids.iter()
            .position(|i| i == id)
            .unwrap_or_else(|| panic!("no {id} in {ids:?}"))
    };
    assert!(
        at("engine-load") < at("table-1") && at("drop-tables") < at("engine-unload"),
        "{ids:?}"
    );
    a.extend(args(&["--execute", "--yes", "--run-dir"]));
    a.push(run_dir.display().to_string());
    let out = sb.innops(&strs(&a));
    assert_eq!(out.code, 0, "{out:?}");
    let report = read_json(&run_dir.join("report.json"));
    let load = step(&report, "engine-load");
    assert!(
        load["result"]["left_out"]
            .as_str()
            .unwrap_or_default()
            .contains("the server started without the engine"),
        "{load}"
    );
    let verdict = |key: &str| {
        report["experiment"]["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["key"] == key)
            .unwrap()["verdict"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(verdict("B").starts_with("failed"), "{report}");
    assert!(!verdict("C").starts_with("failed"), "{report}");
    assert_eq!(rocksdb_support(&sb), None);
    assert_eq!(crate::common::dropin(&sb), "");
}
