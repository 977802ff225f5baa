//! The face: the mysql client's conventions (-h, -p, --protocol, TLS, option-file groups) and each command taking
//! only its own flags, against real servers.

use std::io::{Read, Write};

use std::process::{Command, Stdio};

use innops::server::sandbox::SandboxOptions;

use crate::common::{args as s, certificates};
use crate::common::{run_innops, Output, Sandboxed};

/// Root's generated TCP password of a sandbox, from its client.cnf.
fn tcp_password(sb: &Sandboxed) -> String {
    let file = sb.sandbox.client_file.clone().expect("a client file");
    let set = innops::server::optionfile::read(&file).unwrap();
    set.get(&["client"], "password").unwrap().to_string()
}

/// `{"error": SENTENCE, "exit": CODE}` alone on stdout.
fn assert_json_error(out: &Output, code: i32, says: &str) {
    assert_eq!(out.code, code, "{out:?}");
    let j = out.json();
    assert_eq!(j["exit"], code, "{out:?}");
    let error = j["error"].as_str().unwrap_or_else(|| panic!("{out:?}"));
    assert!(error.contains(says), "{says:?} in {out:?}");
    assert_eq!(j.as_object().unwrap().len(), 2, "{out:?}");
}

/// Flags, each with its value.
type FlagGroup<'a> = &'a [&'a [&'a str]];

#[test]
fn every_flag_a_command_does_not_use_is_rejected() {
    let conn: &[&[&str]] = &[
        &["--socket", "/tmp/x.sock"],
        &["-h", "db1"],
        &["--host", "db1"],
        &["-u", "dba"],
        &["--password=x"],
        &["--defaults-file", "/tmp/x.cnf"],
        &["--protocol", "TCP"],
        &["--ssl-mode", "REQUIRED"],
        &["--ssl-ca", "/tmp/ca.pem"],
        &["--sandbox", "s"],
    ];
    let control: &[&[&str]] = &[
        &["--service", "systemd:foo"],
        &["--start-cmd", "true"],
        &["--stop-cmd", "true"],
        &["--config-file", "/etc/mysql/my.cnf"],
    ];
    let run: &[&[&str]] = &[
        &["--execute"],
        &["--yes"],
        &["--run-dir", "/tmp/r"],
        &["--no-bench"],
        &["--bench-time", "1"],
    ];
    let resume_run: &[&[&str]] = &[
        &["--execute"],
        &["--run-dir", "/tmp/r"],
        &["--bench-time", "1"],
    ];
    let drill_run: &[&[&str]] = &[
        &["--execute"],
        &["--yes"],
        &["--run-dir", "/tmp/r"],
        &["--no-bench"],
    ];
    let bench: &[&[&str]] = &[&["--no-bench"], &["--bench-time", "1"], &["--bench-during"]];
    let table: &[(&[&str], &[FlagGroup])] = &[
        (&["convert", "--tables", "d.t"], &[control]),
        (
            &["recover", "--out", "/tmp/o", "--copy-to", "/tmp/c"],
            &[bench],
        ),
        (&["deadlock", "parse", "/tmp/f"], &[control, run]),
        (&["inspect"], &[control, run]),
        (&["bench", "run"], &[control, run]),
        (&["resume", "/tmp/no-run"], &[resume_run]),
        (&["sandbox", "list"], &[conn, control, run]),
        (&["sandbox", "up", "s"], &[control, run]),
        (&["drill"], &[conn, control, drill_run]),
    ];
    let mut cases = 0;
    for (command, groups) in table {
        for flag in groups.iter().flat_map(|g| g.iter()) {
            let args: Vec<&str> = command.iter().chain(flag.iter()).copied().collect();
            let name = flag[0].split('=').next().unwrap();
            let out = run_innops(&s(&args), &[]);
            assert_eq!(out.code, 2, "{args:?}: {out:?}");
            // One sentence: the flag, the commands that take it, the fix.
            let said = format!("does not use {name}: only ");
            assert!(
                out.stderr.starts_with("innops: ")
                    && out.stderr.contains(&said)
                    && out
                        .stderr
                        .contains(&format!("drop {name} from this command line"))
                    && out.stderr.trim_end().lines().count() == 1,
                "{args:?}: {out:?}"
            );
            assert!(out.stdout.is_empty(), "{args:?}: {out:?}");
            // With --format json the refusal is JSON on stdout.
            let mut json = args.clone();
            json.extend(["--format", "json"]);
            assert_json_error(&run_innops(&s(&json), &[]), 2, name);
            cases += 1;
        }
    }
    assert_eq!(cases, 83);
}

#[test]
fn each_command_shows_only_its_own_groups_and_help_is_on_double_dash_help() {
    for (command, groups) in [
        (vec!["inspect"], vec!["Connection:"]),
        (vec!["bench"], vec!["Connection:"]),
        (vec!["redo"], vec!["Connection:", "Server control:", "Run:"]),
        (vec!["convert"], vec!["Connection:", "Run:"]),
        (
            vec!["recover"],
            vec!["Connection:", "Server control:", "Run:"],
        ),
        (
            vec!["resume"],
            vec!["Connection:", "Server control:", "Run:"],
        ),
        (vec!["sandbox", "up"], vec![]),
        (vec!["drill"], vec![]),
    ] {
        let mut args = command.clone();
        args.push("--help");
        let out = run_innops(&s(&args), &[]);
        assert_eq!(out.code, 0, "{args:?}: {out:?}");
        for heading in ["Connection:", "Server control:", "Run:"] {
            assert_eq!(
                out.stdout.lines().any(|l| l == heading),
                groups.contains(&heading),
                "{heading} in {args:?}: {}",
                out.stdout
            );
        }
        assert_eq!(
            out.stdout.contains("-h, --host"),
            groups.contains(&"Connection:"),
            "{args:?}: {}",
            out.stdout
        );
    }
    // Where -h is not the host, it is not help either.
    let out = run_innops(&s(&["sandbox", "list", "-h"]), &[]);
    assert_eq!(out.code, 2, "{out:?}");
}

#[test]
fn a_json_command_reports_its_errors_and_refusals_as_json() {
    // Bad input found by innops (the connection), not clap.
    let out = run_innops(
        &s(&[
            "inspect",
            "--socket",
            "/tmp/innops-no-such.sock",
            "--format",
            "json",
        ]),
        &[],
    );
    assert_json_error(&out, 2, "/tmp/innops-no-such.sock");
    assert!(out.stderr.contains("innops: cannot connect"), "{out:?}");
    // A usage error clap finds, with --format=json spelled with an equals sign.
    let out = run_innops(&s(&["redo", "--format=json"]), &[]);
    assert_json_error(&out, 2, "--size");
    // -p without a terminal.
    let out = run_innops(&s(&["bench", "run", "-p", "--format", "json"]), &[]);
    assert_json_error(
        &out,
        2,
        "-p without a value asks for the password on a terminal",
    );

    // A refusal (exit 1): stopping a sandbox that is not running.
    let sb = Sandboxed::new("cli-json");
    let root = sb.root.display().to_string();
    let name = sb.sandbox.name.clone();
    let sandbox = |action: &str| {
        run_innops(
            &s(&[
                "sandbox",
                action,
                &name,
                "--sandbox-root",
                &root,
                "--format",
                "json",
            ]),
            &[],
        )
    };
    let stop = sandbox("stop");
    assert_eq!(stop.code, 0, "{stop:?}");
    assert_eq!(stop.json()["running"], false);
    assert_json_error(&sandbox("stop"), 1, "is not running");
    let start = sandbox("start");
    assert_eq!(start.code, 0, "{start:?}");
    assert_eq!(start.json()["name"], name.as_str());
}

#[test]
fn h_and_p_connect_as_the_mysql_client_and_required_tls_refuses_a_plain_server() {
    let sb = Sandboxed::new("cli-hp");
    let port = sb.sandbox.port.to_string();
    let password = tcp_password(&sb);
    let inspect = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = s(&[
            "inspect",
            "-h",
            "127.0.0.1",
            "-P",
            &port,
            "-u",
            "root",
            "--sample",
            "0",
        ]);
        args.extend(s(extra));
        run_innops(&args, env)
    };
    let out = inspect(&["--format", "json"], &[("MYSQL_PWD", &password)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["target"], format!("root@127.0.0.1:{port}"));
    // -pSECRET attached, and --password=SECRET.
    let attached = format!("-p{password}");
    assert_eq!(inspect(&[&attached], &[]).code, 0);
    let long = format!("--password={password}");
    assert_eq!(inspect(&[&long], &[]).code, 0);

    // This server has no certificate: REQUIRED refuses it in one sentence, PREFERRED (the default) went plain.
    let out = inspect(&["--ssl-mode=REQUIRED"], &[("MYSQL_PWD", &password)]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.error_line(),
        format!("innops: the server at root@127.0.0.1:{port} does not offer TLS, and the connection options ask for it (--ssl-mode, --ssl-ca or ssl-verify-server-cert, as the mariadb client's ERROR 2026): give the server ssl_cert and ssl_key, or connect with --ssl-mode=PREFERRED")
    );

    // [innops] overrides [client] in the option file; a key innops does not read there is named on stderr.
    let cnf = sb.root.join("my.cnf");
    std::fs::write(
        &cnf,
        format!("[client]\nuser = root\npassword = wrong\nhost = 127.0.0.1\nport = {port}\n[innops]\npassword = {password}\ncolour = blue\n"),
    )
    .unwrap();
    let out = run_innops(
        &s(&[
            "inspect",
            "--defaults-file",
            cnf.to_str().unwrap(),
            "--sample",
            "0",
        ]),
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stderr.trim(),
        format!("innops: warning: {}:8 sets 'colour' in [innops], which innops does not read: remove it (innops reads user, password, host, port, socket, protocol, ssl_mode, ssl_ca, ssl_cert, ssl_key, ssl, ssl_capath, ssl_cipher, ssl_crl, ssl_crlpath, ssl_verify_server_cert, tls_version)", cnf.display()),
        "{out:?}"
    );

    // -p alone asks on the terminal, without echo.
    let out = under_a_terminal(
        &format!("inspect -h 127.0.0.1 -P {port} -u root -p --sample 0"),
        &password,
    );
    assert!(out.contains("Enter password:"), "the prompt: {out}");
    assert!(
        out.contains(&format!("root@127.0.0.1:{port}")) && out.contains("exit=0"),
        "connected: {out}"
    );
    assert!(!out.contains(&password), "the password was echoed: {out}");
}

/// Run innops under a pseudo-terminal (util-linux `script`), type `typed` once the password prompt shows, and
/// return everything the terminal showed, ending with `exit=CODE`.
fn under_a_terminal(args: &str, typed: &str) -> String {
    under_a_terminal_at(args, "Enter password:", typed)
}

/// As [`under_a_terminal`], typing once `prompt` shows.
fn under_a_terminal_at(args: &str, prompt: &str, typed: &str) -> String {
    let bin = env!("CARGO_BIN_EXE_innops");
    let mut child = Command::new("script")
        .args([
            "-q",
            "-e",
            "-c",
            &format!("{bin} {args}; echo exit=$?"),
            "/dev/null",
        ])
        .env_remove("MYSQL_PWD")
        .env_remove("INNOPS_SANDBOX_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run script(1)");
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    // innops turns echo off before it writes the prompt: what is typed after the prompt shows is never echoed.
    while !String::from_utf8_lossy(&seen).contains(prompt) {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "no prompt: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{typed}\n").as_bytes()).unwrap();
    stdout.read_to_end(&mut seen).unwrap();
    child.wait().unwrap();
    drop(stdin);
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn tls_reaches_a_server_that_requires_secure_transport() {
    let dir = tempfile::Builder::new()
        .prefix("ino-tls-")
        .tempdir_in("/tmp")
        .unwrap();
    certificates(dir.path(), "server");
    certificates(dir.path(), "other");
    let p = |f: &str| dir.path().join(f).display().to_string();
    let sb = Sandboxed::with(
        "cli-tls",
        SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra: vec![
                format!("ssl_ca={}", p("server-ca.pem")),
                format!("ssl_cert={}", p("server-cert.pem")),
                format!("ssl_key={}", p("server-key.pem")),
                "require_secure_transport=ON".into(),
            ],
            ..Default::default()
        },
    );
    let cnf = sb.sandbox.client_file.clone().unwrap();
    let label = format!("root@127.0.0.1:{}", sb.sandbox.port);
    let inspect = |extra: &[&str]| {
        let mut args = s(&[
            "inspect",
            "--defaults-file",
            cnf.to_str().unwrap(),
            "--sample",
            "0",
            "--format",
            "json",
        ]);
        args.extend(s(extra));
        run_innops(&args, &[])
    };
    // Plain is refused by the server itself (MariaDB answers "Access denied"): what gets through below with the
    // same credentials is TLS.
    let plain = inspect(&["--ssl-mode=DISABLED"]);
    assert_json_error(&plain, 2, &label);
    // PREFERRED (the default), REQUIRED, and the two verifying modes with the server's CA.
    let ca = format!("--ssl-ca={}", p("server-ca.pem"));
    for extra in [
        vec![],
        vec!["--ssl-mode=REQUIRED"],
        vec![ca.as_str()],
        vec!["--ssl-mode=VERIFY_IDENTITY", ca.as_str()],
    ] {
        let out = inspect(&extra);
        assert_eq!(out.code, 0, "{extra:?}: {out:?}");
        assert_eq!(out.json()["target"], label.as_str());
    }
    // Another CA's certificate is refused in one sentence.
    let other = format!("--ssl-ca={}", p("other-ca.pem"));
    let out = inspect(&["--ssl-mode=VERIFY_CA", &other]);
    assert_json_error(&out, 2, &format!("the TLS handshake with {label} failed"));
    // A client certificate and key, signed by the CA the server trusts.
    let out = inspect(&[
        "--ssl-mode=VERIFY_CA",
        &ca,
        &format!("--ssl-cert={}", p("server-cert.pem")),
        &format!("--ssl-key={}", p("server-key.pem")),
    ]);
    assert_eq!(out.code, 0, "{out:?}");
}

#[test]
fn p_alone_with_a_sandbox_is_refused_before_any_prompt() {
    // The sandbox needs no password: `-p` would only ask for one, so it is a conflicting flag, exit 2,
    // named in the sentence (not the "no terminal to ask on" error).
    let out = run_innops(&s(&["inspect", "--sandbox", "nowhere", "-p"]), &[]);
    assert_eq!(out.code, 2, "{out:?}");
    let line = out.error_line();
    assert!(line.contains("drop -p"), "{line}");
}

#[test]
fn a_restart_asks_after_showing_the_plan_and_anything_but_yes_changes_nothing() {
    let sb = Sandboxed::new("cli-ask");
    let pid = sb.sandbox.running_pid().unwrap();
    let args = format!(
        "redo --size 128M --offline --execute --no-bench --sandbox cli-ask --sandbox-root {}",
        sb.root.display()
    );
    let out = under_a_terminal_at(&args, "Type 'yes' to go on:", "no");
    assert!(out.contains("exit=1"), "{out}");
    assert!(
        out.contains("not confirmed at the prompt: nothing was changed"),
        "{out}"
    );
    // The plan was on the screen before the question.
    let plan_at = out
        .find("Shut the server down cleanly")
        .expect("the plan is shown");
    assert!(plan_at < out.find("Type 'yes' to go on:").unwrap(), "{out}");
    assert_eq!(
        sb.sandbox.running_pid(),
        Some(pid),
        "the server was not restarted"
    );
}

/// `resume` of a directory that holds no run: bad input (exit 2) saying so, for a missing directory, an empty
/// one, and one with a journal but no plan.
#[test]
fn resume_of_a_directory_without_a_run_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let half = dir.path().join("half");
    std::fs::create_dir(&half).unwrap();
    std::fs::write(half.join("journal.jsonl"), "").unwrap();
    for d in [dir.path().join("missing"), empty, half] {
        let out = run_innops(&s(&["resume", d.to_str().unwrap()]), &[]);
        assert_eq!(out.code, 2, "{out:?}");
        assert!(
            out.stderr.contains("is not an innops run directory"),
            "{}",
            out.stderr
        );
    }
}

/// pt-online-schema-change's spellings: `--dry-run`, `--chunk-time` in seconds with decimals, sizes with `MB`.
#[test]
fn pt_osc_habits_are_understood() {
    use crate::common::convert::{convert, engine, setup, SHAPE};
    let sb = Sandboxed::new("cli-ptosc");
    let mut c = setup(&sb, SHAPE);
    let plan = convert(
        &sb,
        &s(&[
            "--tables",
            "d.t",
            "--strategy",
            "online",
            "--dry-run",
            "--chunk-time",
            "0.25",
            "--online-above",
            "256MB",
            "--no-bench",
        ]),
        &[],
    );
    assert_eq!(plan.code, 0, "{plan:?}");
    assert!(
        plan.stdout.contains("one copy chunk (~250 ms)"),
        "0.25 is a quarter second, as pt-osc reads it: {}",
        plan.stdout
    );
    assert_eq!(engine(&mut c, "t").as_deref(), Some("MyISAM"), "a dry run");
    let both = convert(&sb, &s(&["--tables", "d.t", "--dry-run", "--execute"]), &[]);
    assert_eq!(both.code, 2, "{both:?}");
    assert!(
        both.stderr.contains("cannot be used with"),
        "{}",
        both.stderr
    );
    let one = convert(&sb, &s(&["--tables", "d.t", "--chunk-time", "1"]), &[]);
    assert_eq!(one.code, 2, "{one:?}");
    assert!(
        one.stderr.contains("write 1s for 1 second(s)"),
        "{}",
        one.stderr
    );
}

/// A command missing what it acts on says every way to give it, in one sentence, before it connects anywhere.
#[test]
fn a_missing_target_names_every_alternative() {
    let conv = run_innops(&s(&["convert", "--socket", "/nonexistent.sock"]), &[]);
    assert_eq!(conv.code, 2, "{conv:?}");
    let line = conv.error_line();
    for alt in ["--tables", "--all-myisam", "--rollback", "--drop-kept"] {
        assert!(line.contains(alt), "{alt}: {line}");
    }
    let redo = run_innops(&s(&["redo", "--socket", "/nonexistent.sock"]), &[]);
    assert_eq!(redo.code, 2, "{redo:?}");
    let line = redo.error_line();
    assert!(
        line.contains("--size") && line.contains("--advise"),
        "{line}"
    );
    let recover = run_innops(&s(&["recover", "--socket", "/nonexistent.sock"]), &[]);
    assert_eq!(recover.code, 2, "{recover:?}");
    let line = recover.error_line();
    for alt in ["--out", "--copy-to", "--in-place"] {
        assert!(line.contains(alt), "{alt}: {line}");
    }
    let no_copy = run_innops(
        &s(&[
            "recover",
            "--out",
            "/tmp/x",
            "--socket",
            "/nonexistent.sock",
        ]),
        &[],
    );
    assert_eq!(no_copy.code, 2, "{no_copy:?}");
    let line = no_copy.error_line();
    assert!(
        line.contains("--copy-to") && line.contains("--in-place"),
        "{line}"
    );
}

/// `innops bench help` (no test: `TESTNAME help` lists the test's own options) shows -h once, as the host.
#[test]
fn bench_help_shows_h_as_the_host_only() {
    let out = run_innops(&s(&["bench", "help"]), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("-h, --host"), "{}", out.stdout);
    assert!(!out.stdout.contains("-h, --help"), "{}", out.stdout);
    assert!(out.stdout.contains("--help"), "{}", out.stdout);
}

/// A dry run says what the benchmark will do to the server, and does none of it.
#[test]
fn a_dry_run_says_the_benchmark_s_schema_and_load() {
    use crate::common::convert::{convert, setup, SHAPE};
    use mysql::prelude::Queryable;
    let sb = Sandboxed::new("cli-bench-note");
    let mut c = setup(&sb, SHAPE);
    let out = convert(&sb, &s(&["--tables", "d.t"]), &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout
            .contains("benchmark: --execute creates the schema `innops_bench`")
            && out
                .stdout
                .contains("s of load in all); --no-bench skips it"),
        "{}",
        out.stdout
    );
    let made: Option<String> = c
        .query_first("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'innops_bench'")
        .unwrap();
    assert_eq!(made, None, "the dry run created nothing");
    let quiet = convert(&sb, &s(&["--tables", "d.t", "--no-bench"]), &[]);
    assert!(!quiet.stdout.contains("benchmark:"), "{}", quiet.stdout);
}
