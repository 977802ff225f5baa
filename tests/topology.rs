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
        &["convert", "--tables", "d.t", "--format", "json"],
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
    let as_app = |on: &innops::server::sandbox::Sandbox| {
        let socket = on.socket.display().to_string();
        run_innops(
            &args(&[
                "convert",
                "--tables",
                "d.t",
                "--strategy",
                "alter",
                "--socket",
                &socket,
                "--user",
                "app",
            ]),
            &[],
        )
    };
    let replica = as_app(&t.replicas[0]);
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
    let primary = as_app(&t.primary);
    assert_eq!(primary.code, 0, "{primary:?}");
    assert!(
        primary.stdout.contains("read_only OFF") || primary.stderr.contains("read_only OFF"),
        "{primary:?}"
    );
}
