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
            "--password",
            "wrong-one",
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
