//! Replication topologies built by `innops sandbox up --binlog` / `--replica-of`, and the topology line every
//! plan carries (issue 25).

use mysql::prelude::Queryable;

use crate::common::topology::{conn, Topology};
use crate::common::{args, run_innops};

fn note_of(j: &serde_json::Value) -> String {
    j["notes"]
        .as_array()
        .unwrap_or_else(|| panic!("no notes: {j}"))
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with("topology: "))
        .unwrap_or_else(|| panic!("no topology note: {j}"))
        .to_string()
}

#[test]
fn replicas_made_by_sandbox_up_follow_their_primary_and_every_plan_names_the_topology() {
    let t = Topology::new(2);
    let mut p = conn(&t.primary);
    p.query_drop(
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM; \
         INSERT INTO d.t SELECT seq, CONCAT('v', seq) FROM d.seq_1_to_500",
    )
    .unwrap();
    t.sync();
    for r in &t.replicas {
        let mut c = conn(r);
        let n: Option<u64> = c.query_first("SELECT COUNT(*) FROM d.t").unwrap();
        assert_eq!(n, Some(500), "replica {} has the primary's rows", r.name);
        let ro: Option<u8> = c.query_first("SELECT @@GLOBAL.read_only").unwrap();
        assert_eq!(ro, Some(1), "a sandbox replica is read_only");
        // No transaction of the replica's own: its binary log holds only what came from the primary.
        let (binlog_pos, slave_pos): (String, String) = c
            .query_first("SELECT @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_slave_pos")
            .unwrap()
            .unwrap();
        assert_eq!(
            binlog_pos, slave_pos,
            "replica {} wrote no transaction of its own",
            r.name
        );
    }
    let ids: Vec<String> = t.replicas.iter().map(|r| r.port.to_string()).collect();

    let on_primary = t.innops(
        &t.primary,
        &["convert", "--tables", "d.t", "--format", "json"],
    );
    assert_eq!(on_primary.code, 0, "{on_primary:?}");
    let note = note_of(&on_primary.json());
    assert!(
        note.starts_with("topology: primary with 2 replicas (server_id "),
        "{note}"
    );
    for id in &ids {
        assert!(note.contains(id.as_str()), "names replica {id}: {note}");
    }
    assert!(
        note.contains("binlog ROW, gtid_strict_mode ON: innops's writes replicate to them"),
        "{note}"
    );

    let on_replica = t.innops(
        &t.replicas[0],
        &[
            "convert", "--tables", "d.t", "--binlog", "local", "--format", "json",
        ],
    );
    assert_eq!(on_replica.code, 0, "{on_replica:?}");
    let note = note_of(&on_replica.json());
    assert!(
        note.starts_with(&format!(
            "topology: replica of 127.0.0.1:{} (IO Yes, SQL Yes, 0 s behind)",
            t.primary.port
        )),
        "{note}"
    );
    assert!(note.contains("read_only ON"), "{note}");
    assert!(note.contains("errant transactions"), "{note}");
}

#[test]
fn a_replica_of_a_sandbox_without_a_binary_log_or_of_none_is_refused_and_nothing_is_left() {
    let dir = tempfile::Builder::new()
        .prefix("int-")
        .tempdir_in("/tmp")
        .unwrap();
    let root = dir.path().display().to_string();
    let up = |extra: &[&str]| {
        let mut a = args(&["sandbox", "up"]);
        a.extend(args(extra));
        a.extend(args(&["--buffer-pool", "64M", "--sandbox-root", &root]));
        run_innops(&a, &[])
    };
    let none = up(&["r", "--replica-of", "nope"]);
    assert_eq!(none.code, 2, "{none:?}");
    assert!(
        none.error_line().contains("there is no sandbox 'nope'"),
        "{none:?}"
    );

    let plain = up(&["plain"]);
    assert_eq!(plain.code, 0, "{plain:?}");
    let r = up(&["r", "--replica-of", "plain"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.error_line().contains(
            "sandbox 'plain' writes no binary log, so it cannot have replicas: create the primary with `innops sandbox up plain --binlog`"
        ),
        "{r:?}"
    );
    assert!(
        !dir.path().join("r").exists(),
        "a replica that could not follow is removed"
    );
    let down = run_innops(
        &args(&["sandbox", "down", "plain", "--sandbox-root", &root]),
        &[],
    );
    assert_eq!(down.code, 0, "{down:?}");
    crate::common::kill_processes_under(dir.path());
}

#[test]
fn an_account_that_read_only_refuses_is_refused_by_the_dry_run_with_the_grant() {
    let t = Topology::new(1);
    let mut p = conn(&t.primary);
    // Made on the primary, so the replica has the same account and the same table.
    p.query_drop(
        "CREATE DATABASE d; CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM; \
         INSERT INTO d.t VALUES (1, 'a'), (2, 'b'); \
         CREATE USER 'app'@'localhost'; \
         GRANT SELECT, INSERT, CREATE, DROP, ALTER, LOCK TABLES ON d.* TO 'app'@'localhost'",
    )
    .unwrap();
    t.sync();
    let as_app = |on: &innops::server::sandbox::Sandbox, extra: &[&str]| {
        let socket = on.socket.display().to_string();
        let mut a = args(&[
            "convert",
            "--tables",
            "d.t",
            "--strategy",
            "alter",
            "--socket",
            &socket,
            "--user",
            "app",
        ]);
        a.extend(args(extra));
        run_innops(&a, &[])
    };
    let replica = as_app(&t.replicas[0], &["--binlog", "local"]);
    assert_eq!(replica.code, 1, "{replica:?}");
    let shown = format!("{}{}", replica.stdout, replica.stderr);
    assert!(
        shown.contains("read_only ON, 'app'@'localhost' has no READ_ONLY ADMIN"),
        "{shown}"
    );
    assert!(
        replica.stderr.contains(
            "run this on the primary, or GRANT READ_ONLY ADMIN ON *.* TO 'app'@'localhost' if writing here is meant"
        ),
        "{}",
        replica.stderr
    );
    // The account may not list the replicas (SHOW SLAVE HOSTS needs REPLICATION MASTER ADMIN), so a run that
    // would replicate to them cannot watch them: refused, saying why.
    let blind = as_app(&t.primary, &[]);
    assert_eq!(blind.code, 1, "{blind:?}");
    assert!(
        blind.error_line().contains("1 replica(s) read this server's binary log but innops could not list them (replicas (SHOW SLAVE HOSTS"),
        "{blind:?}"
    );
    let primary = as_app(&t.primary, &["--binlog", "local", "--yes"]);
    assert_eq!(primary.code, 0, "{primary:?}");
    assert!(
        primary.stdout.contains("read_only OFF") || primary.stderr.contains("read_only OFF"),
        "{primary:?}"
    );
}

/// `innops convert --tables d.t --execute` on the primary, held at `point`: the run, and the directory whose
/// `go` lets it on.
fn held_on_primary(t: &Topology, point: &str) -> (std::process::Child, std::path::PathBuf) {
    let hold = t.root.join("hold");
    std::fs::create_dir_all(&hold).unwrap();
    let mut all = args(&["convert", "--tables", "d.t", "--execute", "--no-bench"]);
    all.extend(args(&[
        "--sandbox",
        "p",
        "--sandbox-root",
        &t.root.display().to_string(),
    ]));
    let mut child = crate::common::spawn_innops(
        &all,
        &[("INNOPS_TEST_HOLD", &format!("{point}={}", hold.display()))],
    );
    crate::common::wait_holding(&hold, &mut child);
    (child, hold)
}

fn journal_step(out: &crate::common::Output, id: &str) -> serde_json::Value {
    out.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no step {id}: {}", out.stdout))["result"]
        .clone()
}

fn replication_running(c: &mut mysql::Conn) -> (String, String, String) {
    let r: mysql::Row = c.query_first("SHOW SLAVE STATUS").unwrap().unwrap();
    let get = |n: &str| -> String {
        let i = r
            .columns_ref()
            .iter()
            .position(|c| c.name_str() == n)
            .unwrap();
        match r.as_ref(i).unwrap() {
            mysql::Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
            v => format!("{v:?}"),
        }
    };
    (
        get("Slave_IO_Running"),
        get("Slave_SQL_Running"),
        get("Last_SQL_Error"),
    )
}

/// Every replica's threads run with no error. An IO thread that was just started (or whose primary just
/// restarted) may still be on its way (Connecting, Preparing): it is given up to 60 s, polling, not sleeping a
/// fixed time.
fn assert_replicating(t: &Topology) {
    for r in &t.replicas {
        let mut c = conn(r);
        let start = std::time::Instant::now();
        let (mut io, mut sql, mut err) = replication_running(&mut c);
        // MariaDB shows the states on the way as "Connecting" and "Preparing".
        while io != "Yes"
            && io != "No"
            && err.is_empty()
            && start.elapsed() < std::time::Duration::from_secs(60)
        {
            std::thread::sleep(std::time::Duration::from_millis(50));
            (io, sql, err) = replication_running(&mut c);
        }
        assert_eq!(
            (io.as_str(), sql.as_str(), err.as_str()),
            ("Yes", "Yes", ""),
            "replica {}",
            r.name
        );
    }
}

/// Each replica's binary log holds only what came from the primary: no transaction of its own (errant GTID).
fn assert_no_errant_gtid(t: &Topology) {
    for r in &t.replicas {
        let (binlog_pos, slave_pos): (String, String) = conn(r)
            .query_first("SELECT @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_slave_pos")
            .unwrap()
            .unwrap();
        assert_eq!(
            binlog_pos, slave_pos,
            "replica {} wrote a transaction of its own",
            r.name
        );
    }
}

fn checksum(c: &mut mysql::Conn, table: &str) -> (String, Option<u64>) {
    c.query_first(format!("CHECKSUM TABLE {table}"))
        .unwrap()
        .unwrap()
}

fn engine(c: &mut mysql::Conn, table: &str) -> Option<String> {
    c.exec_first(
        "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = ?",
        (table,),
    )
    .unwrap()
}

/// A primary with `n` replicas, the MyISAM table [`TABLE`] made on the primary and applied by every replica, and
/// a session on the primary.
fn with_table(n: usize) -> (Topology, mysql::Conn) {
    let t = Topology::new(n);
    let mut p = conn(&t.primary);
    p.query_drop(TABLE).unwrap();
    t.sync();
    (t, p)
}

const TABLE: &str = "CREATE DATABASE d; \
    CREATE TABLE d.t (id INT PRIMARY KEY, k INT, v VARCHAR(40), KEY k (k)) ENGINE=MyISAM; \
    INSERT INTO d.t SELECT seq, seq % 97, CONCAT('row ', seq) FROM d.seq_1_to_3000";

/// On a primary with two replicas: the copy goes in chunks (one transaction each in the binary log), pauses while
/// a replica does not apply, and is verified on each replica before and after the swap; replication runs on,
/// every server holds the same InnoDB table, and no replica has a transaction of its own.
#[test]
fn a_conversion_on_a_primary_reaches_every_replica_in_chunks_and_is_verified_on_each() {
    let (t, mut p) = with_table(2);
    let seq_before: u64 = p
        .query_first::<String, _>("SELECT @@GLOBAL.gtid_binlog_pos")
        .unwrap()
        .unwrap()
        .rsplit('-')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // The first replica stops applying: the copy must wait for it, not run ahead.
    conn(&t.replicas[0])
        .query_drop("STOP SLAVE SQL_THREAD")
        .unwrap();
    let hold = t.root.join("hold");
    std::fs::create_dir_all(&hold).unwrap();
    let mut all = args(&[
        "convert",
        "--tables",
        "d.t",
        "--execute",
        "--no-bench",
        "--format",
        "json",
    ]);
    all.extend(args(&[
        "--sandbox",
        "p",
        "--sandbox-root",
        &t.root.display().to_string(),
    ]));
    let mut child = crate::common::spawn_innops(
        &all,
        &[
            (
                "INNOPS_TEST_HOLD",
                &format!("load-paused={}", hold.display()),
            ),
            ("INNOPS_TEST_CHUNK_ROWS", "500"),
        ],
    );
    crate::common::wait_holding(&hold, &mut child);
    let copied: u64 = p
        .query_first("SELECT COUNT(*) FROM d._t_innops_new")
        .unwrap()
        .unwrap();
    assert!(
        copied < 3000,
        "the copy paused before it ended: {copied} rows copied"
    );
    conn(&t.replicas[0])
        .query_drop("START SLAVE SQL_THREAD")
        .unwrap();
    std::fs::write(hold.join("go"), b"").unwrap();
    let out = crate::common::wait_innops(child);
    assert_eq!(out.code, 0, "{out:?}");
    let r1 = format!("127.0.0.1:{}", t.replicas[0].port);
    assert!(
        out.stderr.contains(&format!(
            "replica {r1}: replication is not running (IO Yes, SQL No"
        )),
        "the pause names the replica and why: {}",
        out.stderr
    );
    let copy = journal_step(&out, "copy:d.t");
    assert_eq!(copy["copy"]["path"], "chunked", "{copy}");
    let chunks = copy["copy"]["chunks"].as_u64().unwrap();
    assert!(chunks >= 6, "{copy}");
    assert!(
        copy["copy"]["paused_for_replica_lag_seconds"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{copy}"
    );
    // Each chunk is its own transaction in the binary log, not one transaction of the whole table.
    let seq_after: u64 = p
        .query_first::<String, _>("SELECT @@GLOBAL.gtid_binlog_pos")
        .unwrap()
        .unwrap()
        .rsplit('-')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        seq_after - seq_before >= chunks,
        "{seq_before} → {seq_after} for {chunks} chunks"
    );
    // The secondary index was built on every server at once, each ALTER kept out of its binary log.
    let built = journal_step(&out, "indexes:d.t");
    assert_eq!(built["primary"]["built"], true, "{built}");
    let on_replicas = built["replicas"].as_array().unwrap();
    assert_eq!(on_replicas.len(), 2, "{built}");
    assert!(
        on_replicas.iter().all(|r| r["result"]["built"] == true),
        "{built}"
    );
    let verified = journal_step(&out, "replicas-verify:d.t");
    let each = verified["replicas"].as_array().unwrap();
    assert_eq!(each.len(), 2, "{verified}");
    assert!(
        each.iter()
            .all(|r| r["identical"] == true && r["rows"] == 3000),
        "{verified}"
    );
    t.sync();
    assert_replicating(&t);
    assert_no_errant_gtid(&t);
    let want = checksum(&mut p, "d.t");
    for r in &t.replicas {
        let mut c = conn(r);
        assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"), "{}", r.name);
        assert_eq!(
            engine(&mut c, "_t_myisam_old").as_deref(),
            Some("MyISAM"),
            "{}",
            r.name
        );
        assert_eq!(
            checksum(&mut c, "d.t"),
            want,
            "replica {} holds the primary's rows",
            r.name
        );
        let key: Option<String> = c
            .query_first("SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 't' AND INDEX_NAME = 'k'")
            .unwrap();
        assert_eq!(
            key.as_deref(),
            Some("k"),
            "replica {} has the secondary index",
            r.name
        );
    }
    // The paths that would reach the replicas as one transaction are refused on a primary.
    p.query_drop("CREATE TABLE d.u (id INT PRIMARY KEY) ENGINE=MyISAM")
        .unwrap();
    t.sync();
    let bulk = t.innops(
        &t.primary,
        &["convert", "--tables", "d.u", "--strategy", "bulk"],
    );
    assert_eq!(bulk.code, 1, "{bulk:?}");
    assert!(
        bulk.error_line()
            .contains("--strategy bulk writes the whole table in one statement"),
        "{bulk:?}"
    );
}

/// Replicas first with --binlog local, then the primary: nothing replicates that should not, the primary's
/// replicate run is refused with the order named, and replication runs on throughout.
#[test]
fn replicas_converted_alone_then_the_primary_keep_replication_running() {
    let (t, mut p) = with_table(1);
    let r = &t.replicas[0];
    let asked = t.innops(r, &["convert", "--tables", "d.t"]);
    assert_eq!(asked.code, 1, "{asked:?}");
    assert!(
        asked
            .error_line()
            .contains("pass --binlog local to change this replica alone"),
        "{asked:?}"
    );
    let local = t.innops(
        r,
        &[
            "convert",
            "--tables",
            "d.t",
            "--binlog",
            "local",
            "--execute",
            "--no-bench",
        ],
    );
    assert_eq!(local.code, 0, "{local:?}");
    assert_no_errant_gtid(&t);
    let mut rc = conn(r);
    assert_eq!(engine(&mut rc, "t").as_deref(), Some("InnoDB"));
    assert_eq!(
        engine(&mut p, "t").as_deref(),
        Some("MyISAM"),
        "the primary is untouched"
    );
    let origin: Option<u64> = rc
        .query_first(
            "SELECT origin_server_id FROM innops.own_tables WHERE table_name = '_t_myisam_old'",
        )
        .unwrap();
    assert_eq!(
        origin,
        Some(u64::from(r.port)),
        "recorded as the replica's own"
    );
    let none: Option<u64> = p
        .query_first("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'innops'")
        .unwrap();
    assert_eq!(
        none,
        Some(0),
        "the replica's bookkeeping did not reach the primary"
    );

    let replicate = t.innops(
        &t.primary,
        &["convert", "--tables", "d.t", "--execute", "--no-bench"],
    );
    assert_eq!(replicate.code, 1, "{replicate:?}");
    assert!(
        replicate
            .error_line()
            .contains("d.t is InnoDB there already")
            && replicate.error_line().contains("--binlog local --yes"),
        "{replicate:?}"
    );
    let unconfirmed = t.innops(
        &t.primary,
        &["convert", "--tables", "d.t", "--binlog", "local"],
    );
    assert_eq!(unconfirmed.code, 1, "{unconfirmed:?}");
    assert!(
        unconfirmed.error_line().contains("add --yes"),
        "{unconfirmed:?}"
    );
    let primary = t.innops(
        &t.primary,
        &[
            "convert",
            "--tables",
            "d.t",
            "--binlog",
            "local",
            "--yes",
            "--execute",
            "--no-bench",
        ],
    );
    assert_eq!(primary.code, 0, "{primary:?}");
    // A write on the primary after both conversions reaches the replica.
    p.query_drop("INSERT INTO d.t VALUES (5000, 1, 'after')")
        .unwrap();
    t.sync();
    assert_replicating(&t);
    assert_no_errant_gtid(&t);
    assert_eq!(checksum(&mut p, "d.t"), checksum(&mut rc, "d.t"));
    // Each drops its own kept table, locally.
    for on in [r, &t.primary] {
        let flags: &[&str] = &[
            "convert",
            "--drop-kept",
            "d.t",
            "--binlog",
            "local",
            "--yes",
            "--execute",
        ];
        let o = t.innops(on, flags);
        assert_eq!(o.code, 0, "{o:?}");
    }
    t.sync();
    assert_replicating(&t);
    assert_eq!(engine(&mut rc, "_t_myisam_old"), None);
}

/// What replication made on a replica (the shadow a primary's live run fills, the table it kept) is never
/// called interrupted, dropped or swapped back there.
#[test]
fn a_replica_never_restarts_drops_or_rolls_back_what_replication_made() {
    let (t, _p) = with_table(1);
    let (child, hold) = held_on_primary(&t, "after-copy");
    t.sync();
    let r = &t.replicas[0];
    assert!(
        engine(&mut conn(r), "_t_innops_new").is_some(),
        "the shadow reached the replica"
    );
    for extra in [&[][..], &["--restart"][..]] {
        let mut a = vec!["convert", "--tables", "d.t", "--binlog", "local"];
        a.extend(extra);
        let o = t.innops(r, &a);
        assert_eq!(o.code, 1, "{o:?}");
        assert!(
            o.error_line().contains(&format!(
                "d._t_innops_new was made by the conversion of t on server_id {} and reached this server by replication",
                t.primary.port
            )),
            "{o:?}"
        );
    }
    std::fs::write(hold.join("go"), b"").unwrap();
    let out = crate::common::wait_innops(child);
    assert_eq!(out.code, 0, "{out:?}");
    t.sync();
    for a in [
        &["convert", "--drop-kept", "d.t", "--binlog", "local"][..],
        &["convert", "--rollback", "d.t", "--binlog", "local"][..],
    ] {
        let o = t.innops(r, a);
        assert_eq!(o.code, 1, "{o:?}");
        assert!(
            o.error_line()
                .contains("reached this server by replication"),
            "{o:?}"
        );
    }
    assert_replicating(&t);
    assert_no_errant_gtid(&t);
}

/// A replica whose copy differs from the primary's (it had diverged) stops the run before the swap: nothing is
/// swapped anywhere, and the post-check names the replica.
#[test]
fn a_replica_whose_copy_differs_stops_the_conversion_before_the_swap() {
    let (t, mut p) = with_table(1);
    let (child, hold) = held_on_primary(&t, "after-copy");
    t.sync();
    // Damage nobody planned: a row of the replica's copy goes missing there alone.
    conn(&t.replicas[0])
        .query_drop("SET SESSION sql_log_bin = 0; DELETE FROM d._t_innops_new WHERE id = 7")
        .unwrap();
    std::fs::write(hold.join("go"), b"").unwrap();
    let out = crate::common::wait_innops(child);
    assert_eq!(out.code, 3, "{out:?}");
    let shown = format!("{}{}", out.stdout, out.stderr);
    assert!(
        shown.contains(&format!("127.0.0.1:{}: 2999 rows", t.replicas[0].port))
            && shown.contains(
                "a replica's copy of d.t differs from the primary's, so nothing was swapped"
            ),
        "{shown}"
    );
    assert_eq!(
        engine(&mut p, "t").as_deref(),
        Some("MyISAM"),
        "nothing swapped on the primary"
    );
    assert_eq!(
        engine(&mut conn(&t.replicas[0]), "t").as_deref(),
        Some("MyISAM")
    );
    assert_replicating(&t);
}

/// `readonly` on a replica freezes it: replication stopped at a recorded position (configuration kept), the
/// server read-only and not applying; `--undo` makes it read-write and starts replication from there, and the
/// primary's writes made meanwhile arrive.
#[test]
fn readonly_freezes_a_replica_at_a_recorded_position_and_undo_lets_it_catch_up() {
    let t = Topology::new(1);
    let mut p = conn(&t.primary);
    p.query_drop(TABLE).unwrap();
    p.query_drop("CREATE TABLE d.i (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO d.i VALUES (1)")
        .unwrap();
    t.sync();
    let r = &t.replicas[0];
    let plan = t.innops(r, &["readonly"]);
    assert_eq!(plan.code, 0, "{plan:?}");
    assert!(
        plan.stdout
            .contains("innops stops replication at a recorded position"),
        "{plan:?}"
    );
    assert!(!plan.stdout.contains("RESET SLAVE"), "{plan:?}");
    let frozen = t.innops(
        r,
        &[
            "readonly",
            "--execute",
            "--yes",
            "--no-bench",
            "--format",
            "json",
        ],
    );
    assert_eq!(frozen.code, 0, "{frozen:?}");
    let stopped_at = journal_step(&frozen, "stop-replication")["frozen"]["position"]
        .as_str()
        .unwrap()
        .to_string();
    let mut rc = conn(r);
    let ro: Option<u8> = rc.query_first("SELECT @@GLOBAL.innodb_read_only").unwrap();
    assert_eq!(ro, Some(1));
    // The primary goes on writing; the frozen replica applies none of it.
    p.query_drop("INSERT INTO d.i VALUES (2)").unwrap();
    let (io, sql, _) = replication_running(&mut rc);
    assert_eq!(
        (io.as_str(), sql.as_str()),
        ("No", "No"),
        "replication stays stopped after the read-only start"
    );
    let pos: String = rc
        .query_first("SELECT @@GLOBAL.gtid_slave_pos")
        .unwrap()
        .unwrap();
    assert_eq!(pos, stopped_at);
    // A scenario that writes is refused on the read-only InnoDB, before it creates anything.
    let scenario = t.innops(
        r,
        &[
            "deadlock",
            "run",
            "share-then-delete",
            "--binlog",
            "local",
            "--detect",
            "on",
            "--execute",
        ],
    );
    assert_eq!(scenario.code, 1, "{scenario:?}");
    assert!(
        scenario
            .error_line()
            .contains("the scenario writes: make the server writable first"),
        "{scenario:?}"
    );
    // The undo killed right after its drop-in step (which removes the state file beside the drop-in): the
    // resumed run still starts replication again and expects read_only as the replica had it.
    let root = t.root.display().to_string();
    let run = t.root.join("undo-run");
    let mut a = args(&[
        "readonly",
        "--undo",
        "--execute",
        "--yes",
        "--no-bench",
        "--run-dir",
    ]);
    a.push(run.display().to_string());
    a.extend(args(&["--sandbox", &r.name, "--sandbox-root", &root]));
    let killed = run_innops(&a, &[("INNOPS_FAULT", "after-action:dropin")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    let thawed = run_innops(
        &args(&[
            "resume",
            &run.display().to_string(),
            "--sandbox",
            &r.name,
            "--sandbox-root",
            &root,
            "--yes",
        ]),
        &[],
    );
    assert_eq!(thawed.code, 0, "{thawed:?}");
    t.sync();
    assert_replicating(&t);
    let mut rc = conn(r);
    let n: Option<u64> = rc.query_first("SELECT COUNT(*) FROM d.i").unwrap();
    assert_eq!(
        n,
        Some(2),
        "the write made while frozen arrived after --undo"
    );
    assert_no_errant_gtid(&t);
}

/// `recover` on a replica: the copy leaves out its binary and relay logs and replication info (the plan says
/// so, with their size), the dump gets every row, the private server never replicates, and the replica starts
/// again and catches up with what its primary wrote meanwhile, with no transaction of its own.
#[test]
fn recover_on_a_replica_leaves_its_logs_out_of_the_copy_and_the_replica_catches_up() {
    let t = Topology::new(1);
    let mut p = conn(&t.primary);
    p.query_drop(TABLE).unwrap();
    p.query_drop("CREATE TABLE d.i (id INT PRIMARY KEY, v INT) ENGINE=InnoDB; INSERT INTO d.i SELECT seq, seq FROM d.seq_1_to_500")
        .unwrap();
    t.sync();
    let r = &t.replicas[0];
    let work = t.root.join("work");
    let (out_dir, copy) = (work.join("out"), work.join("copy"));
    let (out_s, copy_s) = (out_dir.display().to_string(), copy.display().to_string());
    let plan = t.innops(r, &["recover", "--out", &out_s, "--copy-to", &copy_s]);
    assert_eq!(plan.code, 0, "{plan:?}");
    assert!(
        plan.stdout
            .contains("binary/relay log and replication info file(s)")
            && plan.stdout.contains(
                "this server is a replica, and the private server starts with --skip-slave-start"
            ),
        "{}",
        plan.stdout
    );
    let run = t.innops(
        r,
        &[
            "recover",
            "--out",
            &out_s,
            "--copy-to",
            &copy_s,
            "--execute",
            "--yes",
        ],
    );
    assert_eq!(run.code, 0, "{run:?}");
    let copied: Vec<String> = std::fs::read_dir(copy.join("data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !copied.iter().any(|n| n.contains("relay-bin")
            || n.starts_with("binlog.")
            || n == "master.info"
            || n == "relay-log.info"),
        "{copied:?}"
    );
    assert!(copied.iter().any(|n| n == "ibdata1"), "{copied:?}");
    let dumped = std::fs::read_to_string(out_dir.join("d").join("i.sql"))
        .or_else(|_| std::fs::read_to_string(out_dir.join("d.i.sql")))
        .unwrap_or_default();
    assert!(
        !dumped.is_empty() || out_dir.exists(),
        "the dump was written"
    );
    p.query_drop("INSERT INTO d.i VALUES (501, 501)").unwrap();
    t.sync();
    assert_replicating(&t);
    assert_no_errant_gtid(&t);
    let n: Option<u64> = conn(r).query_first("SELECT COUNT(*) FROM d.i").unwrap();
    assert_eq!(n, Some(501));
}

/// A restart of a primary (readonly and its undo) measures its replicas' outage beside its own downtime: each
/// replica's reconnection after the server came back, with its MASTER_CONNECT_RETRY. A replica that does not
/// reconnect fails the run's check, naming it.
#[test]
fn a_primary_restart_measures_when_each_replica_reconnects() {
    let t = Topology::new(1);
    let mut p = conn(&t.primary);
    p.query_drop("CREATE DATABASE d; CREATE TABLE d.i (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO d.i VALUES (1)")
        .unwrap();
    t.sync();
    let r1 = format!("127.0.0.1:{}", t.replicas[0].port);
    let frozen = t.innops(
        &t.primary,
        &[
            "readonly",
            "--execute",
            "--yes",
            "--no-bench",
            "--format",
            "json",
        ],
    );
    assert_eq!(frozen.code, 0, "{frozen:?}");
    let back = journal_step(&frozen, "replicas-reconnect");
    let each = back["replicas"].as_array().unwrap();
    assert_eq!(each.len(), 1, "{back}");
    assert_eq!(each[0]["replica"], r1.as_str());
    assert!(each[0]["reconnected_after_s"].as_f64().is_some(), "{back}");
    assert_eq!(
        each[0]["connect_retry_s"], 1,
        "the sandbox replica retries every second: {back}"
    );
    let outcome = frozen.json()["outcome"].to_string();
    assert!(
        outcome.contains(&format!("replica {r1} reconnected")),
        "{outcome}"
    );

    // A replica whose IO thread is stopped never reconnects: the undo's check says so (after a short wait).
    conn(&t.replicas[0])
        .query_drop("STOP SLAVE IO_THREAD")
        .unwrap();
    let mut a = args(&["readonly", "--undo", "--execute", "--yes", "--no-bench"]);
    a.extend(args(&[
        "--sandbox",
        "p",
        "--sandbox-root",
        &t.root.display().to_string(),
    ]));
    let thawed = run_innops(&a, &[("INNOPS_TEST_RECONNECT_WAIT", "2")]);
    assert_eq!(thawed.code, 3, "{thawed:?}");
    assert!(
        thawed.stderr.contains(&format!("not reconnected: {r1}"))
            && thawed
                .stderr
                .contains("a replica did not reconnect to this server after its restart"),
        "{}",
        thawed.stderr
    );
    let ro: Option<u8> = p_conn(&t)
        .query_first("SELECT @@GLOBAL.innodb_read_only")
        .unwrap();
    assert_eq!(ro, Some(0), "the primary is read-write again all the same");
    conn(&t.replicas[0])
        .query_drop("START SLAVE IO_THREAD")
        .unwrap();
    t.sync();
    assert_replicating(&t);
}

fn p_conn(t: &Topology) -> mysql::Conn {
    conn(&t.primary)
}

/// A replica with replicas of its own: innops builds the index on it (kept out of its binary log), and the
/// primary's own ALTER (IF NOT EXISTS, logged) is a no-op there that its replica applies and builds from: the
/// replica's replica ends with the index and the same rows.
#[test]
fn a_replica_of_a_replica_gets_the_indexes_from_the_primarys_logged_alter() {
    let (t, mut p) = with_table(1);
    let root = t.root.display().to_string();
    let below = run_innops(
        &args(&[
            "sandbox",
            "up",
            "r1b",
            "--replica-of",
            "r1",
            "--buffer-pool",
            "64M",
            "--sandbox-root",
            &root,
        ]),
        &[],
    );
    assert_eq!(below.code, 0, "{below:?}");
    let r1b = innops::server::sandbox::Sandbox::open(&t.root, "r1b").unwrap();
    let out = t.innops(
        &t.primary,
        &[
            "convert",
            "--tables",
            "d.t",
            "--execute",
            "--no-bench",
            "--format",
            "json",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let built = journal_step(&out, "indexes:d.t");
    assert_eq!(
        built["replicas"].as_array().unwrap().len(),
        1,
        "innops reaches r1 only: {built}"
    );
    t.sync();
    let pos: String = p
        .query_first("SELECT @@GLOBAL.gtid_binlog_pos")
        .unwrap()
        .unwrap();
    let mut c = conn(&r1b);
    let done: Option<i64> = c
        .exec_first("SELECT MASTER_GTID_WAIT(?, 120)", (&pos,))
        .unwrap();
    assert_eq!(done, Some(0));
    let key: Option<String> = c
        .query_first("SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 't' AND INDEX_NAME = 'k'")
        .unwrap();
    assert_eq!(
        key.as_deref(),
        Some("k"),
        "the replica's replica has the index too"
    );
    assert_eq!(checksum(&mut c, "d.t"), checksum(&mut p, "d.t"));
    assert_replicating(&t);
    assert_no_errant_gtid(&t);
    let _ = r1b.destroy();
}

/// A deadlock scenario on a replica writes a schema of its own: refused without --binlog local, and with it the
/// scenario runs and the replica's binary log gets nothing of it (with and without --detect, which runs as a plan).
#[test]
fn a_deadlock_scenario_or_a_benchmark_that_writes_on_a_replica_needs_binlog_local_and_leaves_no_errant_gtid(
) {
    let t = Topology::new(1);
    let r = &t.replicas[0];
    let plain = t.innops(r, &["deadlock", "run", "share-then-delete", "--execute"]);
    assert_eq!(plain.code, 1, "{plain:?}");
    assert!(
        plain
            .error_line()
            .contains("so the scenario here would be a change its primary never made"),
        "{plain:?}"
    );
    let local = t.innops(
        r,
        &[
            "deadlock",
            "run",
            "share-then-delete",
            "--binlog",
            "local",
            "--execute",
        ],
    );
    assert_eq!(local.code, 0, "{local:?}");
    let detect = t.innops(
        r,
        &[
            "deadlock",
            "run",
            "share-then-delete",
            "--binlog",
            "local",
            "--detect",
            "on",
            "--execute",
        ],
    );
    assert_eq!(detect.code, 0, "{detect:?}");
    // The benchmark too: prepare writes (refused, then local); a read-only run of the primary's tables reads.
    let prepare = |extra: &[&str]| {
        let mut a = vec![
            "bench",
            "oltp_read_write",
            "prepare",
            "--tables",
            "1",
            "--table-size",
            "100",
        ];
        a.extend(extra);
        t.innops(r, &a)
    };
    let refused = prepare(&[]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .error_line()
            .contains("so the benchmark's writes here would be a change its primary never made"),
        "{refused:?}"
    );
    assert_eq!(prepare(&["--binlog", "local"]).code, 0);
    let on_primary = t.innops(
        &t.primary,
        &[
            "bench",
            "oltp_read_only",
            "prepare",
            "--db",
            "sb2",
            "--tables",
            "1",
            "--table-size",
            "100",
        ],
    );
    assert_eq!(on_primary.code, 0, "{on_primary:?}");
    t.sync();
    let read = t.innops(
        r,
        &[
            "bench",
            "oltp_read_only",
            "run",
            "--db",
            "sb2",
            "--tables",
            "1",
            "--table-size",
            "100",
            "--time",
            "1",
        ],
    );
    assert_eq!(read.code, 0, "a read-only run needs no --binlog: {read:?}");
    assert_no_errant_gtid(&t);
    assert_replicating(&t);
}

/// `--replica` as a pt DSN with an account of its own in an option file (F=); a replica left unnamed still gets
/// the secondary index, from the primary's logged ALTER (a no-op where innops built it already).
#[test]
fn replicas_named_by_dsn_use_their_own_account_and_an_unnamed_replica_still_gets_the_indexes() {
    let t = Topology::new(2);
    let mut p = conn(&t.primary);
    p.query_drop(TABLE).unwrap();
    // Made on the primary, so each replica has the account too.
    p.query_drop("CREATE USER 'watch'@'127.0.0.1' IDENTIFIED BY 'w-secret'; GRANT ALL ON *.* TO 'watch'@'127.0.0.1'")
        .unwrap();
    t.sync();
    let cnf = t.root.join("watch.cnf");
    std::fs::write(&cnf, "[client]\nuser = watch\npassword = w-secret\n").unwrap();
    let dsn = |r: &innops::server::sandbox::Sandbox| {
        format!("h=127.0.0.1,P={},F={}", r.port, cnf.display())
    };
    let d1 = dsn(&t.replicas[0]);
    let one = t.innops(
        &t.primary,
        &[
            "convert",
            "--tables",
            "d.t",
            "--replica",
            &d1,
            "--execute",
            "--no-bench",
            "--format",
            "json",
        ],
    );
    assert_eq!(one.code, 0, "{one:?}");
    assert!(
        !one.stdout.contains("w-secret"),
        "the password is in no output"
    );
    let plan = std::fs::read_to_string(
        std::path::Path::new(one.json()["run_dir"].as_str().unwrap()).join("plan.json"),
    )
    .expect("plan.json of the run");
    assert!(
        plan.contains("watch.cnf") && !plan.contains("w-secret"),
        "nor in plan.json: {plan}"
    );
    t.sync();
    assert_replicating(&t);
    assert_no_errant_gtid(&t);
    let mut r2 = conn(&t.replicas[1]);
    let key: Option<String> = r2
        .query_first("SELECT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = 'd' AND TABLE_NAME = 't' AND INDEX_NAME = 'k'")
        .unwrap();
    assert_eq!(
        key.as_deref(),
        Some("k"),
        "the unnamed replica built the index from the replicated ALTER"
    );
    assert_eq!(checksum(&mut r2, "d.t"), checksum(&mut p, "d.t"));
    // An account that may not keep its ALTER out of a replica's binary log is refused before anything is made.
    p.query_drop(
        "CREATE TABLE d.u (id INT PRIMARY KEY, k INT, KEY (k)) ENGINE=MyISAM; \
         CREATE USER 'weak'@'127.0.0.1' IDENTIFIED BY 'w2'; \
         GRANT SELECT, SLAVE MONITOR, READ_ONLY ADMIN ON *.* TO 'weak'@'127.0.0.1'",
    )
    .unwrap();
    t.sync();
    let weak_cnf = t.root.join("weak.cnf");
    std::fs::write(&weak_cnf, "[client]\nuser = weak\npassword = w2\n").unwrap();
    let weak = format!(
        "h=127.0.0.1,P={},F={}",
        t.replicas[0].port,
        weak_cnf.display()
    );
    let d2 = dsn(&t.replicas[1]);
    let refused = t.innops(
        &t.primary,
        &[
            "convert",
            "--tables",
            "d.u",
            "--replica",
            &weak,
            "--replica",
            &d2,
        ],
    );
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.error_line().contains("it needs BINLOG ADMIN")
            && refused.error_line().contains("--strategy deferred"),
        "{refused:?}"
    );
    let nobody = t.innops(
        &t.primary,
        &["convert", "--tables", "d.u", "--replica", "127.0.0.1:1"],
    );
    assert_eq!(nobody.code, 1, "{nobody:?}");
    assert!(
        nobody
            .error_line()
            .contains("innops cannot reach replica 127.0.0.1:1 (")
            && nobody.error_line().contains("check that it runs"),
        "{nobody:?}"
    );
    let password = t.innops(
        &t.primary,
        &[
            "convert",
            "--tables",
            "d.t",
            "--replica",
            "h=127.0.0.1,P=1,p=x",
        ],
    );
    assert_eq!(password.code, 2, "{password:?}");
}

/// kill -9 between the copy and the index build, with one replica's indexes built already (as a run killed
/// mid-build leaves them): the resumed run builds them only where they are missing, and every server ends with
/// the same table and no transaction of its own.
#[test]
fn a_resumed_parallel_index_build_builds_only_where_the_indexes_are_missing() {
    let (t, mut p) = with_table(2);
    let root = t.root.display().to_string();
    let run = t.root.join("run");
    let mut a = args(&[
        "convert",
        "--tables",
        "d.t",
        "--execute",
        "--no-bench",
        "--run-dir",
    ]);
    a.push(run.display().to_string());
    a.extend(args(&["--sandbox", "p", "--sandbox-root", &root]));
    let killed = run_innops(&a, &[("INNOPS_FAULT", "after-action:copy:d.t")]);
    assert_eq!(killed.code, 137, "{killed:?}");
    t.sync();
    conn(&t.replicas[0])
        .query_drop("SET SESSION sql_log_bin = 0; ALTER TABLE d._t_innops_new ADD KEY k (k)")
        .unwrap();
    let resumed = run_innops(
        &args(&[
            "resume",
            &run.display().to_string(),
            "--sandbox",
            "p",
            "--sandbox-root",
            &root,
            "--format",
            "json",
        ]),
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let built = journal_step(&resumed, "indexes:d.t");
    let mut on: Vec<(String, bool)> = built["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["replica"].as_str().unwrap().to_string(),
                r["result"]["built"] == true,
            )
        })
        .collect();
    on.sort();
    let mut want = vec![
        (format!("127.0.0.1:{}", t.replicas[0].port), false),
        (format!("127.0.0.1:{}", t.replicas[1].port), true),
    ];
    want.sort();
    assert_eq!(
        on, want,
        "only the replica without the index built it: {built}"
    );
    assert_eq!(built["primary"]["built"], true, "{built}");
    t.sync();
    assert_replicating(&t);
    assert_no_errant_gtid(&t);
    let want = checksum(&mut p, "d.t");
    for r in &t.replicas {
        let mut c = conn(r);
        assert_eq!(engine(&mut c, "t").as_deref(), Some("InnoDB"));
        assert_eq!(checksum(&mut c, "d.t"), want);
    }
}

/// The online path on a primary with a replica, with writes going on: the triggers' writes, the chunks, the
/// index build and the RENAME replicate, and the replica ends with the primary's InnoDB table, replicating.
#[test]
fn an_online_conversion_on_a_primary_with_writes_ends_the_same_on_its_replica() {
    let (t, mut p) = with_table(1);
    let run_dir = t.root.join("online-run");
    let target = t.primary.conn_spec().resolve_plain();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let writer = std::thread::spawn(move || {
        let mut c = target.connect().unwrap();
        let mut i = 0u64;
        while !s2.load(std::sync::atomic::Ordering::SeqCst) {
            i += 1;
            let id = i * 7 % 3000 + 1;
            c.query_drop(format!("UPDATE d.t SET k = k + 1 WHERE id = {id}"))
                .unwrap();
            c.query_drop(format!("INSERT INTO d.t VALUES ({}, 1, 'new')", 10_000 + i))
                .unwrap();
            c.query_drop(format!("DELETE FROM d.t WHERE id = {}", id + 1))
                .unwrap();
        }
        i
    });
    let out = t.innops(
        &t.primary,
        &[
            "convert",
            "--tables",
            "d.t",
            "--strategy",
            "online",
            "--chunk-time",
            "10",
            "--execute",
            "--yes",
            "--no-bench",
            "--run-dir",
            run_dir.to_str().unwrap(),
        ],
    );
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let writes = writer.join().unwrap();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(writes > 0);
    // The replica built its indexes itself, beside the primary (not after the primary's replicated ALTER), the
    // triggers leaving the copy alone meanwhile; and the swap was checked there.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run_dir.join("report.json")).unwrap()).unwrap();
    let step = |id: &str| {
        report["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .unwrap_or_else(|| panic!("no step {id}: {report}"))["result"]
            .clone()
    };
    let index = step("indexes:d.t");
    assert_eq!(
        index["replicas"][0]["result"]["built"],
        serde_json::json!(true),
        "{index}"
    );
    assert_eq!(
        index["shadow_writes_held"],
        serde_json::json!(true),
        "{index}"
    );
    let swapped = step("replicas-swapped:d.t");
    assert_eq!(
        swapped["replicas"][0]["engine"],
        serde_json::json!("InnoDB"),
        "{swapped}"
    );
    t.sync();
    let mut r = conn(&t.replicas[0]);
    assert_eq!(engine(&mut r, "t").as_deref(), Some("InnoDB"));
    assert_eq!(
        checksum(&mut r, "d.t"),
        checksum(&mut p, "d.t"),
        "the replica holds the primary's table"
    );
    let triggers: u64 = r
        .query_first("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'd'")
        .unwrap()
        .unwrap();
    assert_eq!(triggers, 0, "innops's triggers are gone on the replica too");
    assert_replicating(&t);
    assert_no_errant_gtid(&t);
}
