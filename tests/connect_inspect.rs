//! Connecting, inspecting and sandboxes, against real servers.

use mysql::prelude::Queryable;

use crate::common::{run_innops, Sandboxed};

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn inspect_reports_version_matrix_myisam_tables_and_hazards() {
    let sb = Sandboxed::new("inspect");
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE app").unwrap();
    c.query_drop("CREATE TABLE app.legacy (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM")
        .unwrap();
    c.query_drop("INSERT INTO app.legacy VALUES (1,'a'),(2,'b')")
        .unwrap();
    let out = sb.innops(&["inspect", "--format", "json", "--sample", "0"]);
    assert_eq!(out.code, 0, "{out:?}");
    let j = out.json();
    assert_eq!(j["flavor"], "mariadb");
    assert!(j["version"].as_str().unwrap().starts_with("10."), "{j}");
    assert_eq!(j["matrix"]["online_redo_resize"], "online_log_file_size");
    assert_eq!(j["matrix"]["deadlock_holder_heading"], "CONFLICTING WITH");
    // Settings as an object a script reads by name; a variable the server lacks is null.
    assert_eq!(j["settings"]["innodb_buffer_pool_size"], "67108864", "{j}");
    assert!(j["settings"]["innodb_redo_log_capacity"].is_null(), "{j}");
    let tables = j["myisam_tables"].as_array().unwrap();
    assert_eq!(tables.len(), 1, "{j}");
    assert_eq!(tables[0]["schema"], "app");
    assert_eq!(tables[0]["table"], "legacy");
    assert!(
        j["hazards"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h.as_str().unwrap().contains("1 MyISAM")),
        "{j}"
    );
    let text = sb.innops(&["inspect", "--sample", "0"]);
    assert_eq!(text.code, 0);
    assert!(text.stdout.contains("app.legacy"), "{}", text.stdout);
}

#[test]
fn wrong_password_exits_2_with_one_sentence_and_never_prints_the_password() {
    let sb = Sandboxed::new("badpw");
    sb.conn()
        .query_drop("CREATE USER 'dba'@'localhost' IDENTIFIED BY 'right-one'")
        .unwrap();
    let sock = sb.sandbox.socket.display().to_string();
    let out = run_innops(
        &s(&[
            "inspect",
            "--socket",
            &sock,
            "--user",
            "dba",
            "--password=wrong-one",
            "--sample",
            "0",
        ]),
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("refused the credentials"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("dba@localhost via socket"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("wrong-one") && !out.stdout.contains("wrong-one"));
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);

    // The right password through MYSQL_PWD and through a defaults file.
    let ok = run_innops(
        &s(&[
            "inspect", "--socket", &sock, "--user", "dba", "--sample", "0",
        ]),
        &[("MYSQL_PWD", "right-one")],
    );
    assert_eq!(ok.code, 0, "{ok:?}");
    let cnf = sb.root.join("client.cnf");
    std::fs::write(
        &cnf,
        format!("[client]\nuser = dba\npassword = \"right-one\"\nsocket = {sock}\n"),
    )
    .unwrap();
    let ok = run_innops(
        &s(&[
            "inspect",
            "--defaults-file",
            cnf.to_str().unwrap(),
            "--sample",
            "0",
            "--format",
            "json",
        ]),
        &[],
    );
    assert_eq!(ok.code, 0, "{ok:?}");
    assert!(ok.json()["target"].as_str().unwrap().starts_with("dba@"));
}

#[test]
fn a_missing_socket_exits_2_naming_the_socket() {
    let out = run_innops(
        &s(&[
            "inspect",
            "--socket",
            "/tmp/innops-no-such.sock",
            "--sample",
            "0",
        ]),
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("/tmp/innops-no-such.sock"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("is the server running"),
        "{}",
        out.stderr
    );
}

#[test]
fn sandbox_lifecycle_through_the_cli() {
    let dir = tempfile::Builder::new()
        .prefix("ino-")
        .tempdir_in("/tmp")
        .unwrap();
    let root = dir.path().to_str().unwrap().to_string();
    let cli = |args: &[&str]| {
        let mut v = s(args);
        v.extend(["--sandbox-root".to_string(), root.clone()]);
        run_innops(&v, &[])
    };
    let up = cli(&["sandbox", "up", "life", "--buffer-pool", "32M"]);
    assert_eq!(up.code, 0, "{up:?}");
    assert!(up.stdout.contains("mariadb -S"), "{}", up.stdout);
    assert!(
        up.stdout.contains("over TCP: mariadb --defaults-file=")
            && up.stdout.contains("life/client.cnf"),
        "{}",
        up.stdout
    );
    let list = cli(&["sandbox", "list", "--format", "json"]).json();
    let entry = &list.as_array().unwrap()[0];
    assert_eq!(entry["name"], "life");
    assert_eq!(entry["running"], true);
    for key in [
        "datadir",
        "socket",
        "port",
        "pid",
        "error_log",
        "option_file",
    ] {
        assert!(!entry[key].is_null(), "{key} missing in {entry}");
    }
    let again = cli(&["sandbox", "up", "life"]);
    assert_eq!(again.code, 2, "{again:?}");
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);

    let stop = cli(&["sandbox", "stop", "life"]);
    assert_eq!(stop.code, 0, "{stop:?}");
    assert!(stop.stdout.contains("clean shutdown"), "{}", stop.stdout);
    let list = cli(&["sandbox", "list", "--format", "json"]).json();
    assert_eq!(list[0]["running"], false);
    assert_eq!(cli(&["sandbox", "start", "life"]).code, 0);
    assert_eq!(cli(&["sandbox", "down", "life"]).code, 0);
    assert_eq!(
        cli(&["sandbox", "list", "--format", "json"])
            .json()
            .as_array()
            .unwrap()
            .len(),
        0
    );
    let gone = cli(&["sandbox", "stop", "life"]);
    assert_eq!(gone.code, 2);
    assert!(gone.stderr.contains("no sandbox 'life'"), "{}", gone.stderr);
}

/// What a person reads carries no Rust debug text.
fn assert_no_debug_text(out: &crate::common::Output) {
    for text in [&out.stdout, &out.stderr] {
        for bad in [
            "{ ",
            "Some(",
            "MySqlError",
            "IoError",
            "DriverError",
            "CodecError",
            "os error",
        ] {
            assert!(!text.contains(bad), "{bad:?} in {out:?}");
        }
    }
}

#[test]
fn a_server_error_through_a_command_reads_as_the_mysql_client_prints_it() {
    let sb = Sandboxed::new("rawerr");
    sb.conn()
        .query_drop("CREATE USER 'lim'@'localhost' IDENTIFIED BY 'pw'")
        .unwrap();
    let sock = sb.sandbox.socket.display().to_string();
    // `bench prepare` creates its schema: a user without the privilege gets the server's own error.
    let out = run_innops(
        &s(&["bench", "prepare", "--socket", &sock, "--user", "lim"]),
        &[("MYSQL_PWD", "pw")],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        "innops: ERROR 1044 (42000): Access denied for user 'lim'@'localhost' to database 'sbtest'",
        "{out:?}"
    );
    assert_no_debug_text(&out);

    // Over TCP without root's generated password: refused, in one sentence.
    let port = sb.sandbox.port.to_string();
    let out = run_innops(
        &s(&[
            "inspect",
            "--host",
            "127.0.0.1",
            "--port",
            &port,
            "--user",
            "root",
            "--sample",
            "0",
        ]),
        &[],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("refused the credentials"), "{out:?}");
    assert_eq!(out.stderr.trim().lines().count(), 1, "{out:?}");
    assert_no_debug_text(&out);
}

#[test]
fn a_sandbox_lets_no_other_local_user_in() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandboxed::new("private");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // The socket is world-writable, so its directory is what keeps others out.
    assert_eq!(sb.sandbox.socket.parent(), Some(sb.sandbox.dir.as_path()));
    assert_eq!(mode(&sb.sandbox.dir), 0o700);
    let client = sb.sandbox.client_file.clone().expect("a client file");
    assert_eq!(mode(&client), 0o600);
    assert!(
        !sb.sandbox.dir.join("secure.sql").exists(),
        "the SQL holding the password is gone once the server is up"
    );

    let tcp = |user: &str, password: Option<String>| {
        mysql::Conn::new(
            mysql::OptsBuilder::new()
                .ip_or_hostname(Some("127.0.0.1"))
                .tcp_port(sb.sandbox.port)
                .prefer_socket(false)
                .user(Some(user))
                .pass(password),
        )
    };
    for user in ["root", ""] {
        match tcp(user, None) {
            Err(mysql::Error::MySqlError(e)) => assert_eq!(e.code, 1045, "{user}: {e}"),
            Err(e) => panic!("{user}: expected ERROR 1045, got {e}"),
            Ok(_) => panic!("'{user}'@127.0.0.1 got in over TCP without a password"),
        }
    }
    let set = innops::server::optionfile::read(&client).unwrap();
    let password = set.get(&["client"], "password").unwrap().to_string();
    assert!(password.len() >= 20, "a generated password");
    let mut c = tcp("root", Some(password)).expect("root with the generated password");
    let who: String = c.query_first("SELECT CURRENT_USER()").unwrap().unwrap();
    assert_eq!(who, "root@127.0.0.1");
    // innops itself, and the test harness, still work over the socket.
    assert_eq!(sb.innops(&["inspect", "--sample", "0"]).code, 0);
}

#[test]
fn conflicting_or_out_of_range_flags_are_bad_input() {
    for (args, says) in [
        (
            vec!["convert", "--tables", "d.t", "--chunk-time", "0"],
            "--chunk-time 0 is out of range: give milliseconds from 10 to 60000",
        ),
        (
            vec!["convert", "--tables", "d.t", "--chunk-time", "600000"],
            "--chunk-time 600000 is out of range",
        ),
        (
            vec![
                "convert",
                "--tables",
                "d.t",
                "--max-load",
                "Threads_running=60",
            ],
            "--max-load Threads_running=60 is above --critical-load Threads_running=50",
        ),
        (
            vec![
                "convert",
                "--tables",
                "d.t",
                "--max-load",
                "Threads_running=9",
                "--critical-load",
                "threads_running=8",
            ],
            "--max-load Threads_running=9 is above --critical-load threads_running=8",
        ),
        (
            vec!["convert", "--tables", "d.t", "--all-myisam"],
            "--tables and --all-myisam both choose the tables to convert: give one",
        ),
        (
            vec!["inspect", "--sandbox", "s", "--socket", "/tmp/x.sock"],
            "--sandbox s already says where the server is and how to control it: drop --socket",
        ),
        (
            vec!["inspect", "--sandbox", "s", "--user", "dba"],
            "--sandbox s already says where the server is and how to control it: drop --user",
        ),
        (
            vec![
                "redo",
                "--size",
                "1G",
                "--sandbox",
                "s",
                "--service",
                "systemd:mariadb",
            ],
            "drop --service, or drop --sandbox",
        ),
    ] {
        let out = run_innops(&s(&args), &[]);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        let line = out.stderr.trim();
        assert_eq!(line.lines().count(), 1, "{args:?}: one sentence: {out:?}");
        assert!(line.starts_with("innops: "), "{args:?}: {out:?}");
        assert!(line.contains(says), "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
    }
}

#[test]
fn a_run_directory_is_private_and_holds_no_secret_from_the_option_file() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandboxed::new("secrets");
    let dropin = sb.sandbox.conf_dir.join("99-innops.cnf");
    std::fs::write(&dropin, "[client]\npassword = hunter2\n[mysqld]\n").unwrap();
    std::fs::set_permissions(&dropin, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let run_dir = sb.root.join("runs/redo");
    // A --run-dir that exists already keeps its mode (0755 here): the files in it must be private themselves.
    let shared = sb.root.join("shared-run");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = sb.innops(&[
        "redo",
        "--size",
        "96M",
        "--execute",
        "--no-bench",
        "--run-dir",
        shared.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(mode(&shared), 0o755);
    let mut files = 0;
    let mut dirs = vec![shared.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                assert_eq!(mode(&p), 0o700, "{}", p.display());
                dirs.push(p);
            } else {
                assert_eq!(mode(&p), 0o600, "{}", p.display());
                files += 1;
            }
        }
    }
    // plan, journal, report.json and .html and the option file's backup at least.
    assert!(files >= 5, "{files} files in the run directory");
    let out = sb.innops(&[
        "redo",
        "--size",
        "128M",
        "--execute",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("password = <redacted>"), "{out:?}");
    for d in [sb.root.join("runs"), run_dir.clone()] {
        assert_eq!(mode(&d), 0o700, "{}", d.display());
    }
    for f in ["plan.json", "journal.jsonl", "report.json", "report.html"] {
        let text = std::fs::read_to_string(run_dir.join(f)).unwrap();
        assert!(!text.contains("hunter2"), "{f} holds the password: {text}");
    }
    assert!(!out.stdout.contains("hunter2") && !out.stderr.contains("hunter2"));
    // The backup is the real file, as private as the original.
    let backup = run_dir.join("backup/99-innops.cnf");
    assert_eq!(mode(&backup), 0o600);
    assert!(std::fs::read_to_string(&backup)
        .unwrap()
        .contains("hunter2"));
    assert!(std::fs::read_to_string(&dropin)
        .unwrap()
        .contains("password = hunter2"));
}
