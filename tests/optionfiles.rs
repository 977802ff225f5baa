//! innops reads option files as MariaDB does: for every file of a corpus of tricky option files
//! (`tests/fixtures/optionfiles/`), innops's reading of a set of groups prints exactly what the real
//! `my_print_defaults` prints for the same groups — the server's groups (with the running version's
//! `[mysqld-X.Y]`/`[mariadb-X.Y]` groups, and with a group suffix) and the client groups — and a file the
//! server cannot read is one innops refuses.

use std::path::{Path, PathBuf};
use std::process::Command;

use innops::server::optionfile;

const SUFFIX: &str = "_prod";

/// The corpus copied into a temporary directory, `@DIR@` replaced by its path (includes name absolute
/// paths), and the files named `*ww.*` made world-writable (git keeps no such mode). Returns the top-level
/// files, sorted.
fn corpus() -> (tempfile::TempDir, Vec<PathBuf>) {
    use std::os::unix::fs::PermissionsExt;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/optionfiles");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    fn copy(from: &Path, to: &Path, root: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &target, root);
                continue;
            }
            let bytes = std::fs::read(e.path()).unwrap();
            let text = replace(&bytes, b"@DIR@", root.to_str().unwrap().as_bytes());
            std::fs::write(&target, text).unwrap();
            let name = e.file_name().to_string_lossy().to_string();
            let mode = if name.contains("ww.") { 0o666 } else { 0o644 };
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    copy(&src, &root, &root);
    let mut top: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cnf"))
        .collect();
    top.sort();
    (dir, top)
}

fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// What `my_print_defaults` prints for `file` and `args`, run in the file's directory; `None` when it fails.
fn my_print_defaults(file: &Path, args: &[&str], env_suffix: Option<&str>) -> Option<String> {
    let mut c = Command::new("my_print_defaults");
    c.arg(format!("--defaults-file={}", file.display()))
        .args(args)
        .current_dir(file.parent().unwrap())
        .env_remove("MYSQL_GROUP_SUFFIX");
    if let Some(s) = env_suffix {
        c.env("MYSQL_GROUP_SUFFIX", s);
    }
    let out = c
        .output()
        .expect("run my_print_defaults (MariaDB's client package)");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// innops's reading of `file` for `groups`, printed as `my_print_defaults` prints; `None` when it refuses.
fn innops_prints(file: &Path, groups: &[String]) -> Option<String> {
    let set = optionfile::read(file).ok()?;
    Some(
        set.printed(groups)
            .iter()
            .map(|l| format!("{l}\n"))
            .collect(),
    )
}

fn server_version() -> String {
    let out = Command::new("mariadbd").arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.split_whitespace()
        .skip_while(|w| *w != "Ver")
        .nth(1)
        .expect("mariadbd --version names a version")
        .to_string()
}

/// What is compared: a name, `my_print_defaults`'s arguments, its `MYSQL_GROUP_SUFFIX`, innops's groups.
type Case<'a> = (&'a str, Vec<&'a str>, Option<&'a str>, Vec<String>);

#[test]
fn every_corpus_file_reads_as_my_print_defaults_prints_it() {
    let (_dir, files) = corpus();
    assert!(files.len() >= 30, "the corpus has {} files", files.len());
    let version = server_version();
    let mut client: Vec<String> = optionfile::client_groups(None);
    client.push("mysql".into());
    let mut client_sfx = optionfile::with_suffix(&client, Some(SUFFIX));
    client_sfx.dedup();
    let client_args: Vec<&str> = client.iter().map(String::as_str).collect();
    let sfx_arg = format!("--defaults-group-suffix={SUFFIX}");
    let cases: Vec<Case> = vec![
        (
            "server",
            vec!["--mysqld"],
            None,
            optionfile::server_groups(Some(&version), None),
        ),
        (
            "server with --defaults-group-suffix",
            vec![sfx_arg.as_str(), "--mysqld"],
            None,
            optionfile::server_groups(Some(&version), Some(SUFFIX)),
        ),
        ("client", client_args.clone(), None, client.clone()),
        (
            "client with MYSQL_GROUP_SUFFIX",
            client_args.clone(),
            Some(SUFFIX),
            client_sfx,
        ),
    ];
    let mut mismatches = Vec::new();
    let mut matched = 0;
    for file in &files {
        let mut same = true;
        for (what, args, env, groups) in &cases {
            let theirs = my_print_defaults(file, args, *env);
            let ours = innops_prints(file, groups);
            if theirs != ours {
                same = false;
                mismatches.push(format!(
                    "{} ({what}):\n  my_print_defaults: {theirs:?}\n  innops:            {ours:?}",
                    file.file_name().unwrap().to_string_lossy()
                ));
            }
        }
        matched += usize::from(same);
    }
    eprintln!(
        "{matched} of {} corpus files read as my_print_defaults reads them",
        files.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

// ---- connections: the client options innops honours, against real servers --------------------------------

use crate::common::certificates;
use crate::common::{run_innops, Output, Sandboxed};
use innops::server::sandbox::SandboxOptions;
use innops::server::ConnSpec;

/// Root's TCP settings of a sandbox (user, password, host, port), as option-file lines.
fn tcp_lines(sb: &Sandboxed) -> (String, String) {
    let file = sb.sandbox.client_file.clone().expect("a client file");
    let set = optionfile::read(&file).unwrap();
    let password = set.get(&["client"], "password").unwrap().to_string();
    (
        format!(
            "password = {password}\nhost = 127.0.0.1\nport = {}\n",
            sb.sandbox.port
        ),
        password,
    )
}

fn write_cnf(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

fn inspect(file: &Path) -> Output {
    run_innops(
        &[
            "inspect".to_string(),
            "--defaults-file".into(),
            file.display().to_string(),
            "--sample".into(),
            "0".into(),
            "--format".into(),
            "json".into(),
        ],
        &[],
    )
}

/// Whether the real mariadb client connects with this option file.
fn client_connects(file: &Path) -> bool {
    Command::new("mariadb")
        .arg(format!("--defaults-file={}", file.display()))
        .args(["-N", "-e", "SELECT 1"])
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn client_options_against_a_server_without_tls() {
    let sb = Sandboxed::new("of-plain");
    let dir = tempfile::tempdir().unwrap();
    let (tcp, password) = tcp_lines(&sb);
    let label = format!("127.0.0.1:{}", sb.sandbox.port);

    // ssl-verify-server-cert: the mariadb client refuses (ERROR 2026); so does innops, in one sentence, exit 2.
    let f = write_cnf(
        dir.path(),
        "verify.cnf",
        &format!("[client]\nuser = root\n{tcp}ssl-verify-server-cert\n"),
    );
    assert!(!client_connects(&f), "the mariadb client refuses too");
    let out = inspect(&f);
    assert_eq!(out.code, 2, "{out:?}");
    let j = out.json();
    let error = j["error"].as_str().unwrap();
    assert!(
        error.contains(&format!("root@{label} does not offer TLS")),
        "{error}"
    );

    // `[client ]` is the client group: innops logs in as the user configured there, as the client does.
    let mut c = sb.conn();
    use mysql::prelude::Queryable;
    c.query_drop(format!(
        "CREATE USER ofuser@'127.0.0.1' IDENTIFIED BY '{password}'"
    ))
    .unwrap();
    c.query_drop("GRANT ALL ON *.* TO ofuser@'127.0.0.1'")
        .unwrap();
    let f = write_cnf(
        dir.path(),
        "space.cnf",
        &format!("[client]\n{tcp}[client ]\nuser = ofuser\n"),
    );
    let out = inspect(&f);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["target"], format!("ofuser@{label}").as_str());
    let who = Command::new("mariadb")
        .arg(format!("--defaults-file={}", f.display()))
        .args(["-N", "-e", "SELECT CURRENT_USER()"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&who.stdout).trim(),
        "ofuser@127.0.0.1"
    );

    // A dangling !include is skipped, as the client skips it: innops connects, and warns.
    let f = write_cnf(
        dir.path(),
        "dangling.cnf",
        &format!(
            "[client]\nuser = root\n!include {}/gone.cnf\n{tcp}",
            dir.path().display()
        ),
    );
    assert!(client_connects(&f));
    let out = inspect(&f);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("gone.cnf does not exist, skipped"),
        "{}",
        out.stderr
    );

    // skip-ssl and a CRL that is not checked change nothing here: plain text, as the client.
    let f = write_cnf(
        dir.path(),
        "skip.cnf",
        &format!("[client]\nuser = root\n{tcp}skip-ssl\nssl-crl = /nonexistent.crl\n"),
    );
    let out = inspect(&f);
    assert_eq!(out.code, 0, "{out:?}");
}

/// The TLS version and cipher of a connection innops makes with this option file.
fn negotiated(file: &Path) -> anyhow::Result<(String, String)> {
    use mysql::prelude::Queryable;
    let spec = ConnSpec {
        defaults_file: Some(file.to_path_buf()),
        ..Default::default()
    };
    let mut c = spec.resolve()?.connect()?;
    let v: Option<(String, String)> = c.query_first("SHOW STATUS LIKE 'Ssl_version'").unwrap();
    let ci: Option<(String, String)> = c.query_first("SHOW STATUS LIKE 'Ssl_cipher'").unwrap();
    Ok((v.unwrap().1, ci.unwrap().1))
}

#[test]
fn client_tls_options_against_a_server_with_tls() {
    let dir = tempfile::Builder::new()
        .prefix("ino-oftls-")
        .tempdir_in("/tmp")
        .unwrap();
    certificates(dir.path(), "server");
    certificates(dir.path(), "other");
    let p = |f: &str| dir.path().join(f).display().to_string();
    let sb = Sandboxed::with(
        "of-tls",
        SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra: vec![
                format!("ssl_ca={}", p("server-ca.pem")),
                format!("ssl_cert={}", p("server-cert.pem")),
                format!("ssl_key={}", p("server-key.pem")),
            ],
            ..Default::default()
        },
    );
    let (tcp, _) = tcp_lines(&sb);
    let cnf = |name: &str, extra: &str| {
        write_cnf(
            dir.path(),
            name,
            &format!("[client]\nuser = root\n{tcp}{extra}"),
        )
    };

    // The default: TLS 1.3. tls-version and ssl-cipher restrict it, as they restrict the mariadb client.
    assert_eq!(negotiated(&cnf("default.cnf", "")).unwrap().0, "TLSv1.3");
    let f = cnf("v12.cnf", "tls-version = TLSv1.2\n");
    assert_eq!(negotiated(&f).unwrap().0, "TLSv1.2");
    let f = cnf(
        "cipher12.cnf",
        "tls-version = TLSv1.2\nssl-cipher = ECDHE-ECDSA-AES128-GCM-SHA256\n",
    );
    assert_eq!(
        negotiated(&f).unwrap(),
        ("TLSv1.2".into(), "ECDHE-ECDSA-AES128-GCM-SHA256".into())
    );
    let f = cnf("cipher13.cnf", "ssl-cipher = TLS_AES_128_GCM_SHA256\n");
    assert_eq!(
        negotiated(&f).unwrap(),
        ("TLSv1.3".into(), "TLS_AES_128_GCM_SHA256".into())
    );

    // ssl-verify-server-cert: with the server's CA both connect; with another CA both refuse.
    let good = cnf(
        "verify.cnf",
        &format!("ssl-verify-server-cert\nssl-ca = {}\n", p("server-ca.pem")),
    );
    assert!(client_connects(&good));
    assert_eq!(inspect(&good).code, 0);
    let bad = cnf(
        "verify-other.cnf",
        &format!("ssl-verify-server-cert\nssl-ca = {}\n", p("other-ca.pem")),
    );
    assert!(!client_connects(&bad));
    let out = inspect(&bad);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.json()["error"]
            .as_str()
            .unwrap()
            .contains("the TLS handshake with"),
        "{out:?}"
    );
    // A self-signed chain without ssl-ca is not trusted either (public CAs only).
    let none = cnf("verify-no-ca.cnf", "ssl-verify-server-cert\n");
    assert!(!client_connects(&none));
    assert_eq!(inspect(&none).code, 2);

    // TLS 1.1 only: the client's handshake fails; innops cannot speak it and says so before connecting.
    let old = cnf("v11.cnf", "tls-version = TLSv1.1\n");
    assert!(!client_connects(&old));
    let out = inspect(&old);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.json()["error"]
            .as_str()
            .unwrap()
            .contains("allows only versions innops cannot speak"),
        "{out:?}"
    );
}
