//! The corpus of `tests/fixtures/deadlock-reports/`: every report of every file parsed fully, and every value equal
//! to the one a person wrote down by reading the report (`NAME.toml` beside `NAME.txt`).

use super::*;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExpFile {
    report: Vec<ExpReport>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct ExpReport {
    /// The values are those of the first report of this other file (the same deadlock in another form); `ts` and
    /// `time` given here replace its own.
    like: Option<String>,
    ts: Option<String>,
    time: Option<String>,
    victim: Option<u32>,
    #[serde(default)]
    too_deep: bool,
    #[serde(default)]
    txn: Vec<ExpTxn>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct ExpTxn {
    n: u32,
    trx: String,
    thread: u64,
    query_id: u64,
    host: Option<String>,
    ip: Option<String>,
    user: Option<String>,
    query: Option<String>,
    /// For a statement InnoDB printed cut: how it starts, how it ends and its length in characters.
    query_starts: Option<String>,
    query_ends: Option<String>,
    query_len: Option<usize>,
    wait: String,
    #[serde(default)]
    held: Vec<String>,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/deadlock-reports")
}

fn load(name: &str) -> Vec<ExpReport> {
    let text = std::fs::read_to_string(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let f: ExpFile = toml::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    f.report
        .into_iter()
        .map(|r| match &r.like {
            None => r,
            Some(other) => {
                let base = load(other).remove(0);
                ExpReport {
                    like: None,
                    ts: r.ts.clone().or(base.ts.clone()),
                    time: r.time.clone().or(base.time.clone()),
                    ..base
                }
            }
        })
        .collect()
}

/// `TYPE MODE[ FLAGS][ waiting] | db | table | partition | index | owning trx`, `-` for what is absent.
fn lock_text(l: &Lock) -> String {
    let mut head = vec![
        l.lock_type.clone(),
        l.mode.clone().unwrap_or_else(|| "?".into()),
    ];
    head.extend(l.flags.clone());
    if l.waiting {
        head.push("waiting".into());
    }
    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let partition = match (&l.partition, &l.subpartition) {
        (Some(p), Some(s)) => format!("{p}/{s}"),
        (p, _) => dash(p),
    };
    [
        head.join(" "),
        dash(&l.db),
        dash(&l.table),
        partition,
        dash(&l.index),
        dash(&l.trx_id),
    ]
    .join(" | ")
}

/// Where `d` differs from what was written down.
fn mismatches(d: &Deadlock, e: &ExpReport) -> Vec<String> {
    let mut m = Vec::new();
    let mut check = |what: String, got: String, want: String| {
        if got != want {
            m.push(format!("{what}: parsed {got}, expected {want}"));
        }
    };
    check("ts".into(), format!("{:?}", d.ts), format!("{:?}", e.ts));
    check(
        "time".into(),
        format!("{:?}", d.time),
        format!("{:?}", e.time),
    );
    check(
        "victim".into(),
        format!("{:?}", d.victim),
        format!("{:?}", e.victim),
    );
    check(
        "too_deep".into(),
        d.too_deep.to_string(),
        e.too_deep.to_string(),
    );
    check(
        "transactions".into(),
        d.transactions.len().to_string(),
        e.txn.len().to_string(),
    );
    for (t, x) in d.transactions.iter().zip(&e.txn) {
        let n = x.n;
        check(format!("({n}) number"), t.number.to_string(), n.to_string());
        check(
            format!("({n}) trx"),
            format!("{:?}", t.trx_id),
            format!("{:?}", Some(&x.trx)),
        );
        check(
            format!("({n}) thread"),
            format!("{:?}", t.thread_id),
            format!("{:?}", Some(x.thread)),
        );
        check(
            format!("({n}) query id"),
            format!("{:?}", t.query_id),
            format!("{:?}", Some(x.query_id)),
        );
        check(
            format!("({n}) host"),
            format!("{:?}", t.host),
            format!("{:?}", x.host),
        );
        check(
            format!("({n}) ip"),
            format!("{:?}", t.ip),
            format!("{:?}", x.ip),
        );
        check(
            format!("({n}) user"),
            format!("{:?}", t.user),
            format!("{:?}", x.user),
        );
        let q = t.query.clone().unwrap_or_default();
        match &x.query {
            Some(want) => check(
                format!("({n}) query"),
                format!("{q:?}"),
                format!("{want:?}"),
            ),
            None => {
                let starts = x.query_starts.as_deref().expect("query or query_starts");
                check(
                    format!("({n}) query start"),
                    q.starts_with(starts).to_string(),
                    "true".into(),
                );
                if let Some(end) = &x.query_ends {
                    check(
                        format!("({n}) query end"),
                        q.ends_with(end.as_str()).to_string(),
                        "true".into(),
                    );
                }
                if let Some(len) = x.query_len {
                    check(
                        format!("({n}) query length"),
                        q.chars().count().to_string(),
                        len.to_string(),
                    );
                }
            }
        }
        let waits: Vec<String> = t.waiting_for.iter().map(lock_text).collect();
        check(
            format!("({n}) waits for"),
            format!("{waits:?}"),
            format!("{:?}", vec![&x.wait]),
        );
        let held: Vec<String> = t.held.iter().map(lock_text).collect();
        check(
            format!("({n}) held"),
            format!("{held:?}"),
            format!("{:?}", x.held),
        );
    }
    m
}

#[derive(Default)]
struct Tally {
    full: usize,
    partial: usize,
    refused: usize,
    lines: Vec<String>,
}

fn tally() -> Tally {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .expect("the corpus directory")
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".txt"))
        .collect();
    names.sort();
    let mut t = Tally::default();
    for name in names {
        let bytes = std::fs::read(dir().join(&name)).expect("a fixture");
        let parsed = parse_all(&String::from_utf8_lossy(&bytes));
        let expected = load(&name.replace(".txt", ".toml"));
        for (i, e) in expected.iter().enumerate() {
            let at = format!("{name} #{}", i + 1);
            let Some(d) = parsed.get(i) else {
                t.refused += 1;
                t.lines.push(format!("REFUSED {at}"));
                continue;
            };
            let mut wrong = d.gaps();
            wrong.extend(mismatches(d, e));
            if wrong.is_empty() {
                t.full += 1;
            } else {
                t.partial += 1;
                t.lines.push(format!("PARTIAL {at}: {}", wrong.join("; ")));
            }
        }
        if parsed.len() > expected.len() {
            t.partial += 1;
            t.lines.push(format!(
                "PARTIAL {name}: {} report(s) parsed, {} written down",
                parsed.len(),
                expected.len()
            ));
        }
    }
    t
}

#[test]
fn every_report_of_the_corpus_is_parsed_fully_with_the_values_read_by_hand() {
    let t = tally();
    let total = t.full + t.partial + t.refused;
    eprintln!(
        "deadlock corpus: {total} reports, {} parsed fully, {} partially, {} refused\n{}",
        t.full,
        t.partial,
        t.refused,
        t.lines.join("\n")
    );
    assert!(
        total >= 42,
        "the corpus holds {total} reports, fewer than 42"
    );
    assert_eq!((t.partial, t.refused), (0, 0), "{}", t.lines.join("\n"));
}

#[test]
fn the_corpus_holds_every_generation_and_form() {
    let names: Vec<String> = std::fs::read_dir(dir())
        .expect("the corpus directory")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for want in [
        "mysql-5.0-",
        "mysql-5.1-",
        "mysql-5.5-",
        "mysql-5.6-",
        "mysql-5.7-",
        "mysql-8.0-",
        "mysql-8.4-",
        "mariadb-5.5-",
        "mariadb-10.1-",
        "mariadb-10.3-",
        "mariadb-10.5-",
        "mariadb-10.11-",
        "mariadb-11.4-",
    ] {
        for form in ["status", "errorlog"] {
            let has = names
                .iter()
                .any(|n| n.starts_with(want) && n.contains(form) && n.ends_with(".txt"));
            // Servers before innodb_print_all_deadlocks (5.6, MariaDB 10.0) have no error-log form.
            let needed = form == "status"
                && !want.contains("10.1-")
                && !want.contains("10.5-")
                && !want.contains("11.4-")
                || form == "errorlog"
                    && !want.contains("5.0-")
                    && !want.contains("5.1-")
                    && !want.contains("5.5-")
                    && !want.contains("10.3-");
            assert!(has || !needed, "no {form} file for {want}");
        }
    }
    let text: String = names
        .iter()
        .filter(|n| n.ends_with(".txt"))
        .map(|n| std::fs::read_to_string(dir().join(n)).unwrap_or_default())
        .collect();
    for shape in [
        "[InnoDB]  *** (1) TRANSACTION:",
        "[Note] InnoDB: \n*** (1) TRANSACTION:",
        "InnoDB: transactions deadlock detected",
        "TOO DEEP OR LONG SEARCH IN THE LOCK TABLE WAITS-FOR GRAPH",
        "*** (1) HOLDS THE LOCK(S):",
        "*** CONFLICTING WITH:",
        "*** (3) TRANSACTION:",
        " /* Partition `",
        "#P#",
        "index PRIMARY of table",
        "index `PRIMARY` of table",
        "index \"PRIMARY\" of table \"",
        "TABLE LOCK table \"",
        "lock_mode X locks rec but not gap",
        "insert intention",
        "lock mode AUTO-INC",
        "MySQL thread id 21, query id",
        "OS thread handle 0x",
        "hex 73757072656d756d; asc supremum;;",
    ] {
        assert!(
            text.contains(shape),
            "no report in the corpus shows {shape:?}"
        );
    }
}
