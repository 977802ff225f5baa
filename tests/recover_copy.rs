//! The evidence-first half of `innops recover`: a private server on a copy of a stopped server's data
//! directory, at a forced-recovery level, reachable only through its own socket.

use std::time::Duration;

use innops::procedures::recover::copy::{copy_datadir, measure};
use innops::procedures::recover::private::{carried_from, Private};
use mysql::prelude::Queryable;

use crate::common::Sandboxed;

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
    assert!(innops::sandbox::wait_exit(pid, Duration::from_secs(120)));

    let work = sb.root.join("recover");
    let copy = work.join("data");
    let rec = copy_datadir(&sb.sandbox.datadir, &copy, &mut |_| {}).unwrap();
    assert_eq!(
        (rec.files, rec.bytes),
        measure(&sb.sandbox.datadir).unwrap()
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
