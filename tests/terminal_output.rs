//! The face (issue 9): progress that moves under a terminal, commands printed that run as printed, and
//! `--quiet` / `--verbose`.

use std::process::Command;

use mysql::prelude::Queryable;

use crate::common::args;
use crate::common::convert::{setup, SHAPE};
use crate::common::{run_innops, Output, Sandboxed};

/// Run innops under a pseudo-terminal (`script`), so stderr is a terminal and bars are drawn; the capture holds
/// everything written to the terminal.
fn innops_in_pty(sb: &Sandboxed, a: &[&str], env: &[(&str, &str)]) -> Output {
    let mut words: Vec<String> = vec![env!("CARGO_BIN_EXE_innops").to_string()];
    words.extend(a.iter().map(|s| s.to_string()));
    words.extend([
        "--sandbox".to_string(),
        sb.sandbox.name.clone(),
        "--sandbox-root".to_string(),
        sb.root.display().to_string(),
    ]);
    let line = words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ");
    // A terminal wide enough that no line wraps (the screen emulation below does not wrap).
    let line = format!("stty cols 400 rows 60; {line}");
    let mut c = Command::new("script");
    c.args(["-qefc", &line, "/dev/null"])
        .env_remove("INNOPS_SANDBOX_DIR")
        .env_remove("MYSQL_PWD")
        .env("TERM", "xterm");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run script");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The numbers a bar labelled `label` showed, frame by frame: the text right after `label [bars] ` up to `/`.
fn frames(capture: &str, label: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for piece in capture.split(['\r', '\n', '\u{1b}']) {
        let Some(at) = piece.find(label) else {
            continue;
        };
        let rest = &piece[at + label.len()..];
        let Some(close) = rest.find("] ") else {
            continue;
        };
        let num: String = rest[close + 2..]
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .filter(|c| *c != ',')
            .collect();
        if let Ok(n) = num.parse() {
            out.push(n);
        }
    }
    out
}

fn assert_moving(numbers: &[u64], what: &str, capture: &str) {
    let distinct: std::collections::BTreeSet<u64> = numbers.iter().copied().collect();
    assert!(
        distinct.len() >= 2,
        "{what}: the bar never moved ({numbers:?}):\n{capture}"
    );
    assert!(
        numbers.windows(2).all(|w| w[0] <= w[1]),
        "{what}: the bar went backwards ({numbers:?})"
    );
}

#[test]
fn a_long_convert_under_a_terminal_shows_steps_and_a_moving_bar() {
    let sb = Sandboxed::new("face-pty");
    setup(&sb, SHAPE);
    let out = innops_in_pty(
        &sb,
        &[
            "convert",
            "--tables",
            "d.t",
            "--strategy",
            "deferred",
            "--execute",
            "--no-bench",
        ],
        // 30 chunks of 1000 rows: the bar is set 30 times whatever the machine's speed.
        &[("INNOPS_TEST_CHUNK_ROWS", "1000")],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("[1/"), "{}", out.stdout);
    assert!(out.stdout.contains("done in "), "{}", out.stdout);
    let copy = frames(&out.stdout, "copy d.t [");
    assert_moving(&copy, "copy", &out.stdout);
    // Rates read like numbers.
    assert!(out.stdout.contains(" rows/s"), "{}", out.stdout);
}

#[test]
fn a_restart_path_redo_under_a_terminal_shows_steps_and_the_benchmark_moving() {
    let sb = Sandboxed::new("face-redo");
    let out = innops_in_pty(
        &sb,
        &[
            "redo",
            "--size",
            "128M",
            "--offline",
            "--execute",
            "--yes",
            "--bench-time",
            "3",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("[1/"), "{}", out.stdout);
    assert!(out.stdout.contains("risk restart"), "{}", out.stdout);
    // The benchmark lasts 3 s: its bar shows the seconds passing.
    let bench = frames(&out.stdout, "[bench] before [");
    assert_moving(&bench, "bench", &out.stdout);
    // One benchmark before the first step it brackets (the stop: preflight and persist leave the server's
    // speed alone), as a phase of its own before that step's header (issue 27: it ran inside the step), one
    // after the last.
    let first_step = out.stdout.find("[2/").expect("the persist step");
    let second_step = out.stdout.find("[3/").expect("the stop step");
    let before = out
        .stdout
        .find("[bench] before:")
        .expect("a before benchmark");
    let after = out
        .stdout
        .find("[bench] after:")
        .expect("an after benchmark");
    assert!(
        first_step < before && before < second_step && second_step < after,
        "{}",
        out.stdout
    );
    // A wait with a bound names it whenever it is drawn (it once read "(at most )").
    for at in out.stdout.match_indices("(at most ").map(|(i, _)| i) {
        let rest = &out.stdout[at + "(at most ".len()..];
        assert!(
            rest.starts_with(|c: char| c.is_ascii_digit()),
            "a bound without its number: {}",
            &out.stdout[at..(at + 40).min(out.stdout.len())]
        );
    }
    assert_eq!(
        out.stdout.matches("[bench] before:").count(),
        1,
        "{}",
        out.stdout
    );
}

/// The command a line of output suggests, run as printed (the binary under test standing for `innops`).
fn run_printed(cmd: &str) -> Output {
    let cmd = cmd.trim().trim_matches('`');
    let rest = cmd.strip_prefix("innops ").expect("an innops command");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("'{}' {rest}", env!("CARGO_BIN_EXE_innops")))
        .stdin(std::process::Stdio::null())
        .env_remove("INNOPS_SANDBOX_DIR")
        .env_remove("MYSQL_PWD")
        .output()
        .expect("run the printed command");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn redo_advice_keeps_a_big_enough_log_and_its_command_runs_as_printed() {
    let sb = Sandboxed::new("face-adv");
    // A quiet sample: the default 96M holds an hour of nothing.
    let quiet = sb.innops(&["redo", "--advise", "--interval", "1"]);
    assert_eq!(quiet.code, 0, "{quiet:?}");
    assert!(
        quiet.stdout.contains("the current size is enough"),
        "{}",
        quiet.stdout
    );
    assert!(
        !quiet.stdout.contains("innops redo --size"),
        "{}",
        quiet.stdout
    );

    // The busy sample on a server with a small log: any writer, however slow the machine, outgrows 8M in
    // an hour, so the advice always has a command (a larger log would make this depend on the write rate).
    let sb = Sandboxed::with(
        "face-adv2",
        innops::server::sandbox::SandboxOptions {
            buffer_pool: Some("64M".into()),
            extra: vec!["innodb_log_file_size = 8M".into()],
            ..Default::default()
        },
    );
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE w").unwrap();
    c.query_drop(
        "CREATE TABLE w.t (id INT AUTO_INCREMENT PRIMARY KEY, pad VARCHAR(2000)) ENGINE=InnoDB",
    )
    .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let target = sb.target();
    let s2 = stop.clone();
    let writer = std::thread::spawn(move || {
        let mut c = target.connect().unwrap();
        while !s2.load(std::sync::atomic::Ordering::SeqCst) {
            // About 2 KB of redo an insert, at most 50 a second: far above what 8M holds for an hour on any
            // machine (one insert a second is enough), and a bounded advice (a few hundred MB, not gigabytes).
            c.query_drop("INSERT INTO w.t (pad) VALUES (REPEAT('x', 2000))")
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    });
    let busy = sb.innops(&["redo", "--advise", "--interval", "2"]);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.join().unwrap();
    assert_eq!(busy.code, 0, "{busy:?}");
    let cmd = busy
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("innops redo --size"))
        .unwrap_or_else(|| panic!("no command in {}", busy.stdout))
        .to_string();
    assert!(cmd.contains("--sandbox face-adv2"), "{cmd}");
    let ran = run_printed(&cmd);
    assert_eq!(ran.code, 0, "{cmd}: {ran:?}");
}

#[test]
fn the_resume_hint_of_an_interrupted_run_runs_as_printed() {
    let sb = Sandboxed::new("face-resume");
    let mut c = setup(&sb, SHAPE);
    let run_dir = sb.root.join("run");
    let mut a = args(&[
        "convert",
        "--tables",
        "d.t",
        "--strategy",
        "deferred",
        "--execute",
        "--no-bench",
        "--run-dir",
        run_dir.to_str().unwrap(),
    ]);
    a.extend(args(&[
        "--sandbox",
        "face-resume",
        "--sandbox-root",
        sb.root.to_str().unwrap(),
    ]));
    let stopped = run_innops(
        &a,
        &[
            ("INNOPS_FAULT", "sigint-after-chunk:2"),
            ("INNOPS_TEST_CHUNK_ROWS", "1000"),
        ],
    );
    assert_eq!(stopped.code, 130, "{stopped:?}");
    let hint = stopped
        .stderr
        .split('`')
        .find(|p| p.starts_with("innops resume"))
        .unwrap_or_else(|| panic!("no resume hint in {}", stopped.stderr))
        .to_string();
    let ran = run_printed(&hint);
    assert_eq!(ran.code, 0, "{hint}: {ran:?}");
    let engine: Option<String> = c
        .query_first("SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA='d' AND TABLE_NAME='t'")
        .unwrap();
    assert_eq!(engine.as_deref(), Some("InnoDB"));
}

#[test]
fn quiet_prints_only_the_verdict_and_verbose_shows_statements() {
    let sb = Sandboxed::new("face-q");
    setup(&sb, SHAPE);
    let quiet = sb.innops(&[
        "convert",
        "--tables",
        "d.t",
        "--execute",
        "--no-bench",
        "--quiet",
    ]);
    assert_eq!(quiet.code, 0, "{quiet:?}");
    assert_eq!(quiet.stderr, "", "nothing on stderr: {quiet:?}");
    assert_eq!(quiet.stdout.lines().count(), 1, "{}", quiet.stdout);
    assert!(quiet.stdout.contains(": done"), "{}", quiet.stdout);

    let mut c = sb.conn();
    c.query_drop("CREATE TABLE d.u (id INT PRIMARY KEY) ENGINE=MyISAM")
        .unwrap();
    let verbose = sb.innops(&[
        "convert",
        "--tables",
        "d.u",
        "--execute",
        "--no-bench",
        "--verbose",
    ]);
    assert_eq!(verbose.code, 0, "{verbose:?}");
    assert!(
        verbose
            .stderr
            .lines()
            .any(|l| l.contains("sql> INSERT /* innops:convert:copy:d.u */")),
        "{}",
        verbose.stderr
    );
    assert!(
        verbose
            .stderr
            .contains("sql> RENAME /* innops:convert:swap:d.u */"),
        "{}",
        verbose.stderr
    );
}

/// On a terminal a failed check's ✗ is bold red; NO_COLOR turns colour off; a pipe never gets it.
#[test]
fn a_failed_check_stands_out_on_a_terminal_unless_no_color() {
    let sb = Sandboxed::new("face-colour");
    setup(
        &sb,
        "CREATE TABLE t (a INT) ENGINE=MyISAM; INSERT INTO t VALUES (1);",
    );
    let a = ["convert", "--tables", "d.t", "--strategy", "online"];
    let red = "\x1b[1;31m✗";
    let out = innops_in_pty(&sb, &a, &[]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains(red), "{:?}", out.stdout);
    let plain = innops_in_pty(&sb, &a, &[("NO_COLOR", "1")]);
    assert_eq!(plain.code, 1, "{plain:?}");
    assert!(
        plain.stdout.contains("✗") && !plain.stdout.contains("\x1b[1;31m"),
        "{:?}",
        plain.stdout
    );
    let piped = sb.innops(&a);
    assert!(
        piped.stdout.contains("✗") && !piped.stdout.contains("\x1b["),
        "{:?}",
        piped.stdout
    );
}

/// Issue 27: recover's dump showed nothing for 16 s on 6M rows. Each table has a bar of the rows written so
/// far, with their rate, that moves while the table is read.
#[test]
fn a_recover_dump_under_a_terminal_shows_each_table_s_rows_moving() {
    let sb = Sandboxed::new("face-recover");
    setup(&sb, SHAPE);
    let work = sb.root.join("work");
    let (out_dir, copy) = (work.join("out"), work.join("copy"));
    let out = innops_in_pty(
        &sb,
        &[
            "recover",
            "--out",
            out_dir.to_str().unwrap(),
            "--copy-to",
            copy.to_str().unwrap(),
            "--tables",
            "d.t",
            "--threads",
            "1",
            "--execute",
            "--yes",
        ],
        // Each statement the dump writes is followed by a pause: the bar is drawn between them whatever the
        // machine's speed.
        &[("INNOPS_TEST_DUMP_PAUSE_MS", "300")],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let rows = frames(&out.stdout, "dump d.t [");
    assert_moving(&rows, "dump", &out.stdout);
    assert!(out.stdout.contains(" rows/s"), "{}", out.stdout);
    assert!(
        out.stdout.contains("d.t: complete, 30,000 rows"),
        "{}",
        out.stdout
    );
}

/// The screen a terminal shows at the end of `capture`: printable text placed at the cursor, `\r`, `\n`, and
/// the escapes the bars use (cursor up and down, clear line, clear to the end of the line or the screen);
/// colours and other escapes are skipped.
fn final_screen(capture: &str) -> Vec<String> {
    let mut lines: Vec<Vec<char>> = vec![Vec::new()];
    let (mut row, mut col) = (0usize, 0usize);
    let mut chars = capture.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => col = 0,
            '\n' => {
                row += 1;
                col = 0;
                if lines.len() <= row {
                    lines.push(Vec::new());
                }
            }
            '\u{1b}' => {
                if chars.peek() != Some(&'[') {
                    chars.next();
                    continue;
                }
                chars.next();
                let mut arg = String::new();
                let mut end = ' ';
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() || d == '~' {
                        end = d;
                        break;
                    }
                    arg.push(d);
                }
                let n: usize = arg.parse().unwrap_or(1);
                match end {
                    'A' => row = row.saturating_sub(n),
                    'B' => {
                        row += n;
                        while lines.len() <= row {
                            lines.push(Vec::new());
                        }
                    }
                    'G' => col = n.saturating_sub(1),
                    'K' if arg == "2" => lines[row].clear(),
                    'K' => lines[row].truncate(col),
                    'J' => {
                        lines[row].truncate(col);
                        lines.truncate(row + 1);
                    }
                    _ => {}
                }
            }
            c if c.is_control() => {}
            c => {
                let line = &mut lines[row];
                while line.len() < col {
                    line.push(' ');
                }
                if col < line.len() {
                    line[col] = c;
                } else {
                    line.push(c);
                }
                col += 1;
            }
        }
    }
    lines
        .into_iter()
        .map(|l| l.into_iter().collect::<String>().trim_end().to_string())
        .collect()
}

#[test]
fn the_screen_emulation_keeps_printed_lines_and_drops_cleared_bars() {
    let capture = "a [==>  ] 1/3\r\u{1b}[2Kline\nb [=>] 1/2\r\n\u{1b}[1A\u{1b}[2Kdone\n";
    assert_eq!(final_screen(capture), ["line", "done", ""]);
}

/// Issue 27: bars drawn when a line was printed past them stayed on the screen, dead ("inserting rows [ ]
/// 0/10,000" above "Creating table …", "[bench] before 0/10 s"). At the end of a run no bar is left.
#[test]
fn no_dead_bar_is_left_on_the_screen_after_a_run_that_prepares_and_benchmarks() {
    let sb = Sandboxed::new("face-dead");
    let out = innops_in_pty(
        &sb,
        &[
            "redo",
            "--size",
            "128M",
            "--offline",
            "--execute",
            "--yes",
            "--bench-time",
            "2",
            "--bench-during",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{out:?}");
    // The run prepared the benchmark's table (its line is on the screen) and measured before and after.
    let screen = final_screen(&out.stdout);
    let text = screen.join("\n");
    assert!(
        text.contains("Creating table 'innops_bench.sbtest1'"),
        "{text}"
    );
    assert!(text.contains("[bench] after:"), "{text}");
    let bars: Vec<&String> = screen.iter().filter(|l| is_bar(l)).collect();
    assert!(bars.is_empty(), "dead bars on the screen: {bars:?}\n{text}");
}

/// Whether a screen line is a progress bar: `label [====>   ] …`, its brackets holding only the bar's
/// characters.
fn is_bar(line: &str) -> bool {
    line.match_indices(" [").any(|(at, _)| {
        let rest = &line[at + 2..];
        rest.find(']').is_some_and(|end| {
            end >= 10 && rest[..end].chars().all(|c| matches!(c, '=' | '>' | ' '))
        })
    })
}

#[test]
fn a_bar_is_told_from_a_step_line() {
    assert!(is_bar(
        "inserting rows [                              ] 0/10,000 rows 0 rows/s ETA 0s"
    ));
    assert!(is_bar(
        "[bench] before [======>                       ] 1/5 s"
    ));
    assert!(!is_bar(
        "[3/5] Shut the server down cleanly (stop, risk restart)"
    ));
    assert!(!is_bar("  2. Copy d.t [done]"));
}
