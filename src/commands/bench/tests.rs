//! The command line of `innops bench` checked without a server: words, flags, sysbench's names and notes.

use super::*;
use crate::cli::{Cli, Command};
use clap::Parser;

fn parse(args: &[&str]) -> anyhow::Result<Settings> {
    let mut all = vec!["innops", "bench"];
    all.extend_from_slice(args);
    match Cli::try_parse_from(all)?.command {
        Command::Bench(a) => settings(&a),
        _ => unreachable!(),
    }
}

#[test]
fn defaults_are_sysbench_s() {
    let s = parse(&["run", "--seed", "5"]).unwrap();
    assert_eq!(s.action, Action::Run);
    assert_eq!(s.spec.workload, Workload::ReadWrite);
    assert_eq!(
        (s.spec.threads, s.spec.tables, s.spec.table_size),
        (1, 1, 10_000)
    );
    assert_eq!(s.spec.rand_type, RandType::Special);
    assert_eq!(s.spec.ignore_errors, IgnoreErrors::default());
    assert_eq!(s.spec.db, "sbtest");
    assert_eq!(s.spec.seed, 5);
    assert_eq!(s.spec.tag, "/* innops:bench:run */");
    assert!(!s.json);
}

#[test]
fn flags_reach_the_spec_and_seed_zero_means_the_clock() {
    let s = parse(&[
        "run",
        "--workload",
        "oltp_point_select",
        "--threads",
        "4",
        "--time",
        "3",
        "--warmup",
        "1",
        "--tables",
        "2",
        "--table-size",
        "500",
        "--rand-type",
        "uniform",
        "--report-interval",
        "1",
        "--format",
        "json",
    ])
    .unwrap();
    assert_eq!(s.spec.workload, Workload::PointSelect);
    assert_eq!(
        (s.spec.threads, s.spec.tables, s.spec.table_size),
        (4, 2, 500)
    );
    assert_eq!(
        (s.spec.time, s.spec.warmup, s.spec.report_interval),
        (
            Duration::from_secs(3),
            Duration::from_secs(1),
            Duration::from_secs(1)
        )
    );
    assert_eq!(s.spec.rand_type, RandType::Uniform);
    assert!(s.spec.seed > 0);
    assert!(s.json);
}

#[test]
fn bad_flags_are_bad_input_with_the_fix() {
    for args in [
        &["run", "--threads", "0"][..],
        &["run", "--time", "0"],
        &["run", "--workload", "tpcc"],
        &["run", "--ignore-errors", "x"],
    ] {
        let e = parse(args).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2, "{args:?}: {e}");
    }
    assert!(
        parse(&["prepare", "--time", "0"]).is_ok(),
        "prepare does not need a time"
    );
}

fn args(args: &[&str]) -> BenchArgs {
    let mut all = vec!["innops", "bench"];
    all.extend_from_slice(args);
    match Cli::try_parse_from(all).unwrap().command {
        Command::Bench(a) => *a,
        _ => unreachable!(),
    }
}

#[test]
fn sysbench_s_word_order_and_flag_names_are_accepted() {
    let s = parse(&[
        "/usr/share/sysbench/oltp_write_only.lua",
        "--mysql-db=shop",
        "--rand-seed=3",
        "--warmup-time=1",
        "--mysql-ignore-errors=all",
        "--events=100",
        "--time=0",
        "--rate=50",
        "--percentile=99",
        "--histogram",
        "--rand-type=zipfian",
        "--rand-zipfian-exp=1.2",
        "--table_size=700",
        "run",
    ])
    .unwrap();
    assert_eq!(s.action, Action::Run);
    assert_eq!(s.spec.workload, Workload::WriteOnly);
    assert_eq!(
        (s.spec.db.as_str(), s.spec.seed, s.spec.table_size),
        ("shop", 3, 700)
    );
    assert_eq!(s.spec.warmup, Duration::from_secs(1));
    assert_eq!(s.spec.ignore_errors, IgnoreErrors::All);
    assert_eq!(
        (s.spec.events, s.spec.rate, s.spec.percentile),
        (100, 50, 99)
    );
    assert!(s.spec.histogram);
    assert_eq!(s.spec.rand_type, RandType::Zipfian);
    assert_eq!(s.spec.rand.zipfian_exp, 1.2);
    // The command first and the test by flag, as innops wrote it before.
    let s = parse(&["prepare", "--workload", "oltp_delete", "--histogram=off"]).unwrap();
    assert_eq!(
        (s.action, &s.spec.workload),
        (Action::Prepare, &Workload::Delete)
    );
    assert!(!s.spec.histogram);
    // bulk_insert has one table per thread.
    let s = parse(&["bulk_insert", "prepare", "--threads=3"]).unwrap();
    assert_eq!(s.spec.tables, 3);
}

#[test]
fn sysbench_s_connection_flags_take_the_place_of_innops_s() {
    let a = args(&[
        "oltp_read_only",
        "run",
        "--mysql-host=db1",
        "--mysql-port=3307",
        "--mysql-socket=/tmp/x.sock",
        "--mysql-user=bench",
        "--mysql-password=pw",
        "--db-driver=mysql",
    ]);
    let (c, notes) = connection(&a).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(c.host.as_deref(), Some("db1"));
    assert_eq!(c.port, Some(3307));
    assert_eq!(
        c.socket.as_deref(),
        Some(std::path::Path::new("/tmp/x.sock"))
    );
    assert_eq!(
        (
            c.user.as_deref(),
            c.password.as_ref().and_then(|p| p.as_deref())
        ),
        (Some("bench"), Some("pw"))
    );
    let e = connection(&args(&["run", "--db-driver=pgsql"])).unwrap_err();
    assert_eq!(crate::error::exit_code_of(&e), 2);
    assert!(e.to_string().contains("--db-driver=mysql"), "{e}");
}

#[test]
fn benchmark_tables_never_go_into_a_system_schema() {
    for db in ["mysql", "SYS", "performance_schema", "information_schema"] {
        for action in ["prepare", "cleanup"] {
            let e = settings(&args(&["oltp_point_select", action, "--db", db])).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&e), 2, "{db}: {e}");
            assert!(e.to_string().contains("is a system schema"), "{e}");
        }
    }
    assert!(settings(&args(&["oltp_point_select", "prepare", "--db", "mysqlx"])).is_ok());
}

#[test]
fn oltp_script_options_parse_with_dashes_or_underscores_and_on_off_values() {
    let d = OltpOptions::default();
    assert_eq!(parse(&["run"]).unwrap().spec.oltp, d);
    let s = parse(&[
        "oltp_read_write",
        "run",
        "--range_size=5",
        "--point-selects=3",
        "--simple_ranges=0",
        "--sum-ranges=2",
        "--order_ranges=4",
        "--distinct-ranges=6",
        "--index_updates=7",
        "--non-index-updates=8",
        "--delete_inserts=9",
        "--range-selects=off",
        "--skip_trx",
        "--auto-inc=false",
        "--secondary=on",
        "--create_secondary=0",
        "--mysql_storage_engine=myisam",
        "--create_table_options=ROW_FORMAT=FIXED",
        "--reconnect=10",
    ])
    .unwrap();
    assert_eq!(
        s.spec.oltp,
        OltpOptions {
            range_size: 5,
            point_selects: 3,
            simple_ranges: 0,
            sum_ranges: 2,
            order_ranges: 4,
            distinct_ranges: 6,
            index_updates: 7,
            non_index_updates: 8,
            delete_inserts: 9,
            range_selects: false,
            skip_trx: true,
            auto_inc: false,
            secondary: true,
            create_secondary: false,
            storage_engine: "myisam".into(),
            create_table_options: "ROW_FORMAT=FIXED".into(),
            reconnect: 10,
            ..OltpOptions::default()
        }
    );
    // The other spellings of the same flags.
    let s = parse(&[
        "run",
        "--mysql-storage-engine=aria",
        "--skip-trx=yes",
        "--create-table-options=x",
        "--table-size=9",
    ])
    .unwrap();
    assert_eq!(
        (
            s.spec.oltp.storage_engine.as_str(),
            s.spec.oltp.skip_trx,
            s.spec.oltp.create_table_options.as_str()
        ),
        ("aria", true, "x")
    );
    assert!(parse(&["run", "--storage-engine=innodb", "--skip_trx=1"]).is_ok());
}

#[test]
fn oltp_script_options_that_cannot_work_are_refused_and_idle_ones_noted() {
    for (a, says) in [
        (
            &["bulk_insert", "run", "--point_selects=3"][..],
            "--point_selects is an option of the oltp_* scripts",
        ),
        (
            &["bulk_insert", "prepare", "--auto_inc=off"],
            "--auto_inc is an option",
        ),
        (&["table:shop.t", "run", "--skip_trx"], "--skip_trx"),
        (&["run", "--mysql_storage_engine="], "is empty"),
        (
            &["prepare", "--create_table_options=x; DROP TABLE t"],
            "holds a ';'",
        ),
    ] {
        let e = parse(a).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2, "{a:?}: {e}");
        assert!(e.to_string().contains(says), "{a:?}: {e}");
    }
    // A value sysbench would not take is a usage error (exit 2 in main), as sysbench's "invalid option".
    for a in [
        &["run", "--skip_trx=maybe"][..],
        &["run", "--point_selects=-1"],
    ] {
        let mut all = vec!["innops", "bench"];
        all.extend_from_slice(a);
        assert!(Cli::try_parse_from(all).is_err(), "{a:?}");
    }
    let note = |a: &[&str]| oltp_note(&args(a), &parse(a).unwrap());
    assert_eq!(note(&["oltp_read_write", "run", "--point_selects=3"]), None);
    assert_eq!(note(&["oltp_insert", "run", "--auto_inc=off"]), None);
    assert_eq!(note(&["oltp_read_only", "prepare", "--secondary"]), None);
    assert_eq!(note(&["oltp_read_only", "run", "--reconnect=5"]), None);
    assert_eq!(
        note(&["oltp_delete", "run", "--point_selects=3", "--secondary", "--reconnect=2"]).as_deref(),
        Some("note: --point_selects, --secondary change nothing in oltp_delete run (sysbench ignores them there too)")
    );
    assert_eq!(
        note(&["oltp_read_write", "prepare", "--skip_trx", "--auto_inc=off", "--reconnect=2"]).as_deref(),
        Some("note: --skip_trx, --reconnect change nothing in oltp_read_write prepare (sysbench ignores them there too)")
    );
}

#[test]
fn words_that_do_not_make_a_command_line_say_what_is_missing() {
    for (a, says) in [
        (&["oltp_read_write"][..], "add prepare, run, cleanup"),
        (&["run", "cleanup"], "two commands"),
        (
            &["oltp_read_write", "run", "--workload", "oltp_insert"],
            "two tests",
        ),
        (&["bulk_insert", "prewarm"], "bulk_insert has no prewarm"),
        (&["run", "--time", "0"], "--events"),
        (&["run", "--rand-pareto-h", "1.5"], "--rand-pareto-h"),
    ] {
        let e = parse(a).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2, "{a:?}: {e}");
        assert!(e.to_string().contains(says), "{a:?}: {e}");
    }
    assert!(parse(&["run", "--time", "0", "--events", "10"]).is_ok());
    assert_eq!(words(&args(&["oltp_read_write", "help"])).unwrap().0, None);
}

/// Words of a line as a shell splits them: blanks separate, '…' and "…" quote (no escapes, no variables).
pub(crate) fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for ch in line.chars() {
        match (quote, ch) {
            (None, '\'' | '"') => (quote, any) = (Some(ch), true),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                }
                any = false;
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

#[test]
fn every_sysbench_line_of_the_corpus_is_accepted() {
    let corpus = include_str!("../../../tests/cases/bench/sysbench-lines.txt");
    let mut n = 0;
    for line in corpus.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words = shell_words(line.trim_start_matches("[sandbox]"));
        let a = args(&words.iter().map(String::as_str).collect::<Vec<_>>());
        let (action, test) = words_of(&a);
        match action {
            None => assert!(
                help::text(&Workload::parse(&test.unwrap()).unwrap()).contains("options"),
                "{line}"
            ),
            Some(_) => {
                let s = settings(&a).unwrap_or_else(|e| panic!("{line}: {e}"));
                sysbench::general(&a, Some(s.action)).unwrap_or_else(|e| panic!("{line}: {e}"));
                connection(&a).unwrap_or_else(|e| panic!("{line}: {e}"));
            }
        }
        n += 1;
    }
    assert!(n >= 30, "{n} lines");
    assert_eq!(
        shell_words(r#"a --x="COMMENT='foo'"  'b c' """#),
        ["a", "--x=COMMENT='foo'", "b c", ""]
    );
}

fn words_of(a: &BenchArgs) -> (Option<BenchAction>, Option<String>) {
    words(a).unwrap()
}

#[test]
fn sysbench_s_old_names_fold_into_the_new_ones_as_sysbench_folds_them() {
    let s = parse(&[
        "oltp_read_only",
        "run",
        "--max-time=3",
        "--max-requests=40",
        "--tx-rate=20",
        "--num-threads=2",
    ])
    .unwrap();
    assert_eq!(
        (s.spec.time, s.spec.events, s.spec.rate, s.spec.threads),
        (Duration::from_secs(3), 40, 20, 2)
    );
    // Given above 0, the old name wins over the new one (sysbench copies it over); 0 leaves the new one.
    let s = parse(&[
        "run",
        "--time=9",
        "--max-time=3",
        "--events=5",
        "--max_requests=0",
    ])
    .unwrap();
    assert_eq!((s.spec.time, s.spec.events), (Duration::from_secs(3), 5));
    let g = sysbench::general(&args(&["run", "--tx_rate=7", "--max-time=2"]), None).unwrap();
    assert_eq!(
        g.notes,
        [
            "note: --max-time is sysbench's old name for --time",
            "note: --tx-rate is sysbench's old name for --rate"
        ]
    );
    // --max-time=0 with no --events would never stop either.
    let e = parse(&["run", "--time=0", "--max-time=0"]).unwrap_err();
    assert!(e.to_string().contains("--events"), "{e}");
}

#[test]
fn verbosity_and_debug_choose_the_report_and_the_statements_printed() {
    let g = |a: &[&str]| sysbench::general(&args(a), Some(Action::Run)).unwrap();
    let plain = g(&["run"]);
    assert!(plain.report && !plain.statements && plain.notes.is_empty());
    for v in ["0", "1", "2"] {
        let q = g(&["run", &format!("--verbosity={v}")]);
        assert!(!q.report && !q.statements && q.notes.is_empty(), "{v}");
        assert!(!parse(&["run", &format!("--verbosity={v}")]).unwrap().report);
    }
    let info = g(&["run", "--verbosity=4"]);
    assert!(info.report && !info.statements);
    assert!(info.notes[0].contains("--verbosity=4 prints what 3 prints"));
    for a in [
        &["run", "--verbosity=5"][..],
        &["run", "--debug"],
        &["run", "--verbosity=1", "--debug=on"],
    ] {
        let d = g(a);
        assert!(d.report && d.statements, "{a:?}");
        assert!(d.notes[0].contains("the server's general log"), "{a:?}");
    }
    assert!(!g(&["run", "--debug=off"]).statements);
    let mut all = vec!["innops", "bench", "run", "--verbosity=6"];
    assert!(
        Cli::try_parse_from(&all).is_err(),
        "sysbench's levels are 0 to 5"
    );
    all[3] = "--debug=maybe";
    assert!(Cli::try_parse_from(&all).is_err());
}

#[test]
fn forced_shutdown_takes_sysbench_s_values_and_says_what_innops_does_instead() {
    use sysbench::forced_shutdown as fs;
    assert_eq!(fs("off", 60).unwrap(), None);
    assert_eq!(fs("OFF", 60).unwrap(), None);
    assert_eq!(fs("", 60).unwrap(), Some(3), "alone: 5% of --time");
    assert_eq!(fs("7", 60).unwrap(), Some(7));
    assert_eq!(fs("10%", 60).unwrap(), Some(6));
    for bad in ["x", "5s", "%", "-1"] {
        let e = fs(bad, 60).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2, "{bad}");
        assert!(e.to_string().contains("is not off, N or N%"), "{e}");
        assert!(parse(&["run", &format!("--forced-shutdown={bad}")]).is_err());
    }
    let notes = |a: &[&str], action| sysbench::general(&args(a), action).unwrap().notes;
    assert!(
        notes(&["run", "--forced-shutdown=2"], Some(Action::Run))[0].starts_with(
            "note: --forced-shutdown: innops does not cut a transaction short 2 s after --time"
        )
    );
    assert!(notes(&["run", "--forced-shutdown=off"], Some(Action::Run)).is_empty());
    assert!(notes(&["prepare", "--forced-shutdown=2"], Some(Action::Prepare)).is_empty());
}

#[test]
fn mysql_ssl_becomes_innops_s_ssl_mode_and_compression_is_noted() {
    let dir = tempfile::tempdir().unwrap();
    let tls = |a: &[&str]| {
        let a = args(a);
        let mut c = a.conn.clone();
        let notes = sysbench::tls(&a, &mut c, dir.path()).unwrap();
        (c, notes)
    };
    use crate::cli::SslModeArg::*;
    for (v, mode) in [
        ("--mysql-ssl", Required),
        ("--mysql-ssl=on", Required),
        ("--mysql-ssl=off", Disabled),
        ("--mysql_ssl=0", Disabled),
        ("--mysql-ssl=PREFERRED", Preferred),
        ("--mysql-ssl=required", Required),
        ("--mysql-ssl=VERIFY_CA", VerifyCa),
        ("--mysql-ssl=verify_identity", VerifyIdentity),
    ] {
        let (c, notes) = tls(&["run", v]);
        assert_eq!(c.ssl_mode, Some(mode), "{v}");
        assert!(notes.is_empty(), "{v}: {notes:?}");
    }
    let (c, _) = tls(&[
        "run",
        "--mysql-ssl-ca=/ca.pem",
        "--mysql-ssl-cert=/c.pem",
        "--mysql-ssl-key=/k.pem",
        "--mysql-ssl-cipher=X",
    ]);
    assert_eq!(
        (
            c.ssl_ca,
            c.ssl_cert,
            c.ssl_key,
            c.ssl_cipher.as_deref(),
            c.ssl_mode
        ),
        (
            Some("/ca.pem".into()),
            Some("/c.pem".into()),
            Some("/k.pem".into()),
            Some("X"),
            None
        )
    );
    // sysbench 1.0's --mysql-ssl=on reads its three files from the current directory.
    for f in ["client-key.pem", "client-cert.pem", "cacert.pem"] {
        std::fs::write(dir.path().join(f), "x").unwrap();
    }
    let (c, notes) = tls(&["run", "--mysql-ssl=on"]);
    assert_eq!(c.ssl_key, Some(dir.path().join("client-key.pem")));
    assert_eq!(c.ssl_cert, Some(dir.path().join("client-cert.pem")));
    assert_eq!(c.ssl_ca, Some(dir.path().join("cacert.pem")));
    assert_eq!(
        notes,
        ["note: --mysql-ssl=on uses client-key.pem, client-cert.pem, cacert.pem from the current directory, as sysbench 1.0 does"]
    );
    // An explicit mode (sysbench 1.1) or files given by flag: the current directory is not read.
    assert_eq!(tls(&["run", "--mysql-ssl=REQUIRED"]).0.ssl_key, None);
    assert_eq!(
        tls(&["run", "--mysql-ssl", "--mysql-ssl-ca=/x.pem"])
            .0
            .ssl_cert,
        None
    );
    let e = sysbench::tls(
        &args(&["run", "--mysql-ssl=maybe"]),
        &mut Default::default(),
        dir.path(),
    )
    .unwrap_err();
    assert_eq!(crate::error::exit_code_of(&e), 2);
    assert!(e.to_string().contains("VERIFY_IDENTITY"), "{e}");
    assert!(tls(&["run", "--mysql-compression=off"]).1.is_empty());
    for on in ["--mysql-compression", "--mysql-compression=on"] {
        assert!(tls(&["run", on]).1[0].contains("stay uncompressed"), "{on}");
    }
}

#[test]
fn select_random_scripts_prepare_their_tables_read_sbtest1_and_take_oltp_common_s_options() {
    let s = parse(&[
        "select_random_ranges",
        "prepare",
        "--tables=4",
        "--mysql_storage_engine=myisam",
    ])
    .unwrap();
    assert_eq!(
        (s.spec.tables, s.spec.oltp.storage_engine.as_str()),
        (4, "myisam")
    );
    assert_eq!(
        parse(&["select_random_ranges", "cleanup", "--tables=4"])
            .unwrap()
            .spec
            .tables,
        4
    );
    let a = args(&["select_random_ranges", "run", "--tables=4"]);
    let s = settings(&a).unwrap();
    assert_eq!(s.spec.tables, 1, "a run reads sbtest1 only");
    assert_eq!(
        tables_note(&a, &s).as_deref(),
        Some("note: select_random_ranges reads sbtest1 only (as sysbench's): --tables 4 changes nothing in its run")
    );
    let one = args(&["select_random_ranges", "run"]);
    assert_eq!(tables_note(&one, &settings(&one).unwrap()), None);
    let note = |a: &[&str]| oltp_note(&args(a), &parse(a).unwrap());
    assert_eq!(
        note(&["select_random_points", "prepare", "--secondary"]),
        None
    );
    assert_eq!(
        note(&["select_random_points", "run", "--point_selects=3"]).as_deref(),
        Some("note: --point_selects changes nothing in select_random_points run (sysbench ignores it there too)")
    );
}

#[test]
fn prewarm_is_a_command_and_a_test_s_help_is_its_own() {
    let s = parse(&["oltp_read_only", "prewarm", "--tables=3"]).unwrap();
    assert_eq!((s.action, s.spec.tables), (Action::Prewarm, 3));
    assert!(!writes(&s), "prewarm reads (ANALYZE NO_WRITE_TO_BINLOG)");
    let note = |a: &[&str]| oltp_note(&args(a), &parse(a).unwrap());
    assert_eq!(
        note(&["prewarm", "--point_selects=1"]).as_deref(),
        Some("note: --point_selects changes nothing in oltp_read_write prewarm (sysbench ignores it there too)")
    );
    assert_eq!(
        words_of(&args(&["help", "--workload", "oltp_insert"])),
        (None, Some("oltp_insert".into()))
    );
}

#[test]
fn select_random_scripts_own_options_reach_their_run_and_no_other_test_s() {
    let s = parse(&[
        "select_random_ranges",
        "run",
        "--number_of_ranges=3",
        "--delta=2",
    ])
    .unwrap();
    assert_eq!((s.spec.oltp.number_of_ranges, s.spec.oltp.delta), (3, 2));
    assert_eq!(s.spec.oltp.random_points, 10);
    let s = parse(&["select_random_points", "run", "--random-points=4"]).unwrap();
    assert_eq!(s.spec.oltp.random_points, 4);
    for (a, says) in [
        (
            &["oltp_read_write", "run", "--delta=5"][..],
            "--delta is an option of select_random_ranges, which oltp_read_write is not",
        ),
        (
            &["select_random_points", "run", "--number_of_ranges=2"],
            "--number_of_ranges is an option of select_random_ranges, which select_random_points is not",
        ),
        (
            &["bulk_insert", "run", "--random_points=2"],
            "--random_points is an option of select_random_points",
        ),
    ] {
        let e = parse(a).unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2, "{a:?}");
        assert!(e.to_string().contains(says), "{a:?}: {e}");
    }
    for zero in ["--number_of_ranges=0", "--random_points=0"] {
        assert!(
            Cli::try_parse_from(["innops", "bench", "run", zero]).is_err(),
            "{zero}"
        );
    }
    let note = |a: &[&str]| oltp_note(&args(a), &parse(a).unwrap());
    assert_eq!(note(&["select_random_ranges", "run", "--delta=1"]), None);
    assert_eq!(
        note(&["select_random_ranges", "prepare", "--delta=1"]).as_deref(),
        Some("note: --delta changes nothing in select_random_ranges prepare (sysbench ignores it there too)")
    );
    let help = help::text(&Workload::SelectRandomRanges);
    assert!(help.contains("\n  --delta=N  "), "{help}");
    assert!(help.contains("\n  --number_of_ranges=N  "), "{help}");
    assert!(!help.contains("--random_points"), "{help}");
    assert!(help::text(&Workload::SelectRandomPoints).contains("\n  --random_points=N  "));
}
