//! Ground truth for `innops recover` on each damage layout (issue 21): every case builds a table on a sandbox,
//! reads an independent truth with plain SQL before the damage (every key and every row as text), damages the
//! stopped server's file (`innops::procedures::drill::damage`), runs the real CLI end to end on it, loads the SQL files into
//! a fresh sandbox and judges them against the truth: every row the server can still return is there, no row
//! that differs from the truth is in a file unless a doubt covers it, the lost ranges are exact and in key
//! order, the table's status and the exit code say what happened. The verdict never rests on innops's own
//! manifest alone: the manifest is only checked for what it claims.
//!
//! Each case prints one `layout <case>:` line with its numbers (rows recovered of the limit, rows that differ,
//! lost ranges, status, exit code), whether it passes or not. `INNOPS_LAYOUT_KEEP=DIR` keeps each run's
//! evidence in `DIR/<case>/` (the dump's read trace, the private server's error log, the manifest).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use innops::dump::{self, Doubt, KeyRange, Manifest, TableEntry, TableStatus};
use innops::procedures::drill::damage::{self as pages, IndexPage, Scramble, TableFile};
use innops::testhooks;
use mysql::prelude::Queryable;

use crate::common::recover::{rows, start_at, stop_slow, TextRow};
use crate::common::{Output, Sandboxed};

/// A key as text, one part per key column.
type Key = Vec<String>;

/// A table to build and how to read its truth.
struct Case {
    /// The case (and sandbox) name.
    name: &'static str,
    /// Statements run in `db` to make the table `db.t`.
    sql: Vec<String>,
    /// Positions in `SELECT *` of the columns that identify a row: the clustered index's key (a column
    /// holding unique values where InnoDB uses its hidden row id).
    key: Vec<usize>,
    /// The column whose order is the clustered index's (the leaves') order; `None`: a plain scan (no primary
    /// key: the hidden row id follows the insert order).
    order: Option<&'static str>,
    threads: usize,
}

/// What the server held before the damage.
struct Truth {
    /// Rows in the clustered index's order.
    rows: Vec<TextRow>,
    key: Vec<usize>,
}

impl Truth {
    fn key_of(&self, r: &TextRow) -> Key {
        key_of(&self.key, r)
    }
    fn keys(&self) -> Vec<Key> {
        self.rows.iter().map(|r| self.key_of(r)).collect()
    }
    fn by_key(&self) -> BTreeMap<Key, TextRow> {
        self.rows
            .iter()
            .map(|r| (self.key_of(r), r.clone()))
            .collect()
    }
}

fn key_of(pos: &[usize], r: &TextRow) -> Key {
    pos.iter()
        .map(|&p| r[p].clone().unwrap_or_else(|| "NULL".into()))
        .collect()
}

/// What a perfect recovery gets back after the damage.
struct Expect {
    /// Keys of every row the server can still return (the rows not on a damaged leaf).
    limit: BTreeSet<Key>,
    /// The lost ranges, in key order, bounded by the nearest readable keys (`None`: the table's start or
    /// end); `None`: not checked exactly (no primary key to bound them by, or damage whose lost rows depend
    /// on what the server makes of garbage).
    lost: Option<Vec<(Option<Key>, Option<Key>)>>,
    /// Whether every real row missing from the file must lie inside a lost range or a doubt (the table has a
    /// key the manifest can name rows by).
    keyed: bool,
    /// Whether the file can and must be the whole truth with status `complete` (damage that loses and
    /// changes no row, and leaves the server nothing to doubt).
    complete: bool,
}

/// Build the case's table, read the truth, and stop the server with a slow shutdown.
fn build(case: &Case) -> (Sandboxed, Truth) {
    let sb = Sandboxed::new(case.name);
    let mut c = sb.conn();
    c.query_drop("CREATE DATABASE db").unwrap();
    c.query_drop("USE db").unwrap();
    for s in &case.sql {
        c.query_drop(s).unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    // The dump splits a table between threads by the server's row estimate: make it current.
    c.query_drop("ANALYZE TABLE `db`.`t`").unwrap();
    let sql = match case.order {
        Some(o) => format!("SELECT * FROM `db`.`t` ORDER BY `{o}`"),
        None => "SELECT * FROM `db`.`t`".into(),
    };
    let truth = Truth {
        rows: rows(&mut c, &sql),
        key: case.key.clone(),
    };
    let distinct: BTreeSet<Key> = truth.keys().into_iter().collect();
    assert_eq!(distinct.len(), truth.rows.len(), "the case's key is unique");
    drop(c);
    stop_slow(&sb);
    (sb, truth)
}

fn table_file(sb: &Sandboxed) -> TableFile<'_> {
    pages::Stopped::already(&sb.sandbox)
        .unwrap()
        .table("db", "t")
        .unwrap()
}

/// The truth's rows split by the clustered index's leaves (page 3 is its root).
fn per_leaf(sb: &Sandboxed, truth: &Truth) -> (Vec<IndexPage>, Vec<Vec<Key>>) {
    let leaves = table_file(sb).leaves(3).unwrap();
    let split =
        pages::split_by_leaf(&leaves, &truth.keys()).expect("the leaves hold every row once");
    (leaves, split)
}

/// Expectations when the leaves `bad` (indexes into the chain) cannot be read: every other row, one lost
/// range per run of adjacent bad leaves.
fn leaves_lost(per_leaf: &[Vec<Key>], bad: &BTreeSet<usize>, keyed: bool) -> Expect {
    let limit = per_leaf
        .iter()
        .enumerate()
        .filter(|(i, _)| !bad.contains(i))
        .flat_map(|(_, l)| l.iter().cloned())
        .collect();
    let mut lost = Vec::new();
    let mut i = 0;
    while i < per_leaf.len() {
        if !bad.contains(&i) {
            i += 1;
            continue;
        }
        let start = i;
        while bad.contains(&i) {
            i += 1;
        }
        let after = per_leaf[..start]
            .iter()
            .rev()
            .find_map(|l| l.last().cloned());
        let before = per_leaf[i..].iter().find_map(|l| l.first().cloned());
        lost.push((after, before));
    }
    Expect {
        limit,
        lost: keyed.then_some(lost),
        keyed,
        complete: false,
    }
}

/// What the CLI did, and the rows its files load as.
struct Run {
    out: Output,
    manifest: Option<Manifest>,
    /// Rows of `db.t` after loading the files into a fresh sandbox, or why they could not be loaded.
    loaded: Result<Vec<TextRow>, String>,
    error_log: String,
}

/// `innops recover --out OUT --copy-to COPY --execute --yes --format json --threads N`, then the files loaded
/// into a fresh sandbox (sha256 checked against the manifest first, by `verify_load`).
fn recover(sb: &Sandboxed, case: &Case) -> Run {
    recover_env(sb, case, &[])
}

/// [`recover`] with more of innops's environment (test hooks).
fn recover_env(sb: &Sandboxed, case: &Case, env: &[(&str, &str)]) -> Run {
    let work = sb.root.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let (out_dir, copy) = (work.join("out"), work.join("copy"));
    let threads = case.threads.to_string();
    let args = [
        "recover",
        "--out",
        out_dir.to_str().unwrap(),
        "--copy-to",
        copy.to_str().unwrap(),
        "--execute",
        "--yes",
        "--format",
        "json",
        "--threads",
        &threads,
        // These layouts pin what the SQL reads alone get back; the page pass (auto by default) is
        // tests/recover_pages.rs's.
        "--pages",
        "never",
    ];
    let mut env = env.to_vec();
    env.push(("INNOPS_DUMP_TRACE", "1"));
    let out = sb.innops_env(&args, &env);
    let error_log = std::fs::read_to_string(copy.join("server/error.log")).unwrap_or_default();
    let manifest = Manifest::read(&out_dir).ok();
    let loaded = if manifest.is_some() {
        let fresh = Sandboxed::new(&format!("{}l", case.name));
        match dump::verify_load(&out_dir, &fresh.target(), "/* innops:test */") {
            // The load proves the files against the damaged server's own indexes too: a layout whose files
            // load but do not agree fails here.
            Ok(v) if !v.ok() => Err(v.failures().join("; ")),
            Ok(_) => {
                let mut f = fresh.conn();
                let exists: Option<String> = f
                    .query_first("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'db' AND TABLE_NAME = 't'")
                    .unwrap();
                Ok(match exists {
                    Some(_) => rows(&mut f, "SELECT * FROM `db`.`t`"),
                    None => Vec::new(),
                })
            }
            Err(e) => Err(innops::error::display_of(&e)),
        }
    } else {
        Err("no manifest.json".into())
    };
    keep(case.name, &out, &error_log, &out_dir);
    Run {
        out,
        manifest,
        loaded,
        error_log,
    }
}

/// With `INNOPS_LAYOUT_KEEP=DIR`: the run's stderr (the dump's read trace), stdout, the private server's
/// error log and the manifest, in `DIR/<case>/`.
fn keep(name: &str, out: &Output, error_log: &str, out_dir: &Path) {
    let Some(dir) = std::env::var_os("INNOPS_LAYOUT_KEEP") else {
        return;
    };
    let dir = PathBuf::from(dir).join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("stderr"), &out.stderr).unwrap();
    std::fs::write(dir.join("stdout"), &out.stdout).unwrap();
    std::fs::write(dir.join("error.log"), error_log).unwrap();
    let _ = std::fs::copy(out_dir.join("manifest.json"), dir.join("manifest.json"));
}

/// Key parts compare as numbers when both are integers, else as the case-folded text (the order of
/// `utf8mb4_general_ci` for the ASCII keys of these cases; [`check_order`] proves it on the truth).
fn cmp_key(a: &[String], b: &[String]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.parse::<i128>(), y.parse::<i128>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => x.to_uppercase().cmp(&y.to_uppercase()),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// The truth (read in the server's key order) is in the order [`cmp_key`] says.
fn check_order(keys: &[Key]) {
    for w in keys.windows(2) {
        assert_eq!(
            cmp_key(&w[0], &w[1]),
            Ordering::Less,
            "the harness compares keys as the server orders them: {w:?}"
        );
    }
}

fn json_key(v: &[serde_json::Value]) -> Key {
    v.iter()
        .map(|x| match x {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// `key` lies above the lower bounds and below the upper ones given (a bound may be a key prefix: only its
/// parts are compared).
fn inside(
    key: &Key,
    after: &Option<Vec<serde_json::Value>>,
    from: &Option<Vec<serde_json::Value>>,
    before: &Option<Vec<serde_json::Value>>,
    to: &Option<Vec<serde_json::Value>>,
) -> bool {
    let c = |b: &Vec<serde_json::Value>| {
        let b = json_key(b);
        cmp_key(&key[..b.len().min(key.len())], &b)
    };
    after.as_ref().is_none_or(|b| c(b) == Ordering::Greater)
        && from.as_ref().is_none_or(|b| c(b) != Ordering::Less)
        && before.as_ref().is_none_or(|b| c(b) == Ordering::Less)
        && to.as_ref().is_none_or(|b| c(b) != Ordering::Greater)
}

/// A doubt covers `key`: it names it, or its range holds it. A doubt without a range covers the whole table
/// only when it names no rows either (one that names rows covers those rows).
fn doubted(t: &TableEntry, key: &Key) -> bool {
    t.doubts.iter().any(|d: &Doubt| {
        d.keys.iter().any(|k| &json_key(k) == key)
            || match &d.range {
                None => d.keys.is_empty(),
                Some(KeyRange {
                    after,
                    from,
                    before,
                    to,
                }) => inside(key, after, from, before, to),
            }
    })
}

fn in_lost(t: &TableEntry, key: &Key) -> bool {
    t.lost
        .iter()
        .any(|l| inside(key, &l.after, &l.from, &l.before, &None))
}

fn show(k: &Option<Key>) -> String {
    k.as_ref()
        .map_or("end".into(), |k| format!("({})", k.join(", ")))
}

/// Judge a run against the truth; panics with every failure and the case's numbers.
fn judge(case: &Case, truth: &Truth, expect: &Expect, run: &Run) {
    let mut fail: Vec<String> = Vec::new();
    let code = run.out.code;
    let Some(m) = &run.manifest else {
        panic!(
            "layout {}: no manifest (exit {code}): {}",
            case.name, run.out.stderr
        );
    };
    let t = m.table("db", "t").expect("the manifest lists db.t");
    let got = match &run.loaded {
        Ok(g) => g.clone(),
        Err(e) => {
            fail.push(format!("the files do not load: {e}"));
            Vec::new()
        }
    };
    let by_key = truth.by_key();
    let got_keys: BTreeSet<Key> = got.iter().map(|r| truth.key_of(r)).collect();
    // Every row the server can still return is recovered.
    let missing: Vec<&Key> = expect
        .limit
        .iter()
        .filter(|k| !got_keys.contains(*k))
        .collect();
    if !missing.is_empty() {
        fail.push(format!(
            "{} of the {} rows the server can still return are not in the file (first {:?}, last {:?})",
            missing.len(),
            expect.limit.len(),
            missing[0],
            missing[missing.len() - 1]
        ));
    }
    // No row that differs from the truth unless a doubt covers it.
    let differ: Vec<Key> = got
        .iter()
        .filter(|r| by_key.get(&truth.key_of(r)) != Some(*r))
        .map(|r| truth.key_of(r))
        .collect();
    let unmarked: Vec<&Key> = differ.iter().filter(|k| !doubted(t, k)).collect();
    if !unmarked.is_empty() {
        fail.push(format!(
            "{} rows in the file differ from the truth ({} in all) and no doubt covers them: {:?}",
            unmarked.len(),
            differ.len(),
            &unmarked[..unmarked.len().min(5)]
        ));
    }
    // A real row missing from the file is inside a lost range or a doubt.
    let gone: Vec<Key> = truth
        .keys()
        .into_iter()
        .filter(|k| !got_keys.contains(k))
        .collect();
    if got_keys.len() != got.len() {
        fail.push(format!(
            "{} rows in the file repeat another row's key",
            got.len() - got_keys.len()
        ));
    }
    if expect.keyed {
        let unaccounted: Vec<&Key> = gone
            .iter()
            .filter(|k| !in_lost(t, k) && !doubted(t, k))
            .collect();
        if !unaccounted.is_empty() {
            fail.push(format!(
                "{} rows of the truth are not in the file and in no lost range or doubt (first {:?}, last {:?})",
                unaccounted.len(),
                unaccounted[0],
                unaccounted[unaccounted.len() - 1]
            ));
        }
    }
    // Lost ranges exact and in key order.
    let reported: Vec<(Option<Key>, Option<Key>)> = t
        .lost
        .iter()
        .map(|l| {
            (
                l.after.as_ref().or(l.from.as_ref()).map(|k| json_key(k)),
                l.before.as_ref().map(|k| json_key(k)),
            )
        })
        .collect();
    let shown = |v: &[(Option<Key>, Option<Key>)]| {
        v.iter()
            .map(|(a, b)| format!("{}..{}", show(a), show(b)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // Whatever the expectation, a lost range says its rows are not in the file: it holds no row that is,
    // and at least one that is not.
    if expect.keyed {
        for l in &t.lost {
            let within = |k: &Key| inside(k, &l.after, &l.from, &l.before, &None);
            let present = got_keys.iter().filter(|k| within(k)).count();
            let absent = gone.iter().filter(|k| within(k)).count();
            if present > 0 || absent == 0 {
                fail.push(format!(
                    "the lost range {:?}..{:?} holds {present} rows that are in the file and {absent} that are not",
                    l.after.as_ref().or(l.from.as_ref()),
                    l.before
                ));
            }
        }
    }
    if let Some(want) = &expect.lost {
        if t.lost.iter().any(|l| l.from.is_some()) {
            fail.push("a lost range starts at a cut, not after a readable key".into());
        }
        if &reported != want {
            let mut sorted = reported.clone();
            sorted.sort_by(|a, b| match (&a.0, &b.0) {
                (None, None) => Ordering::Equal,
                (None, _) => Ordering::Less,
                (_, None) => Ordering::Greater,
                (Some(x), Some(y)) => cmp_key(x, y),
            });
            if &sorted == want {
                fail.push(format!(
                    "lost ranges not in key order: {}",
                    shown(&reported)
                ));
            } else {
                fail.push(format!(
                    "lost ranges [{}], expected [{}]",
                    shown(&reported),
                    shown(want)
                ));
            }
        }
    }
    // The status: complete only when every row is there and none differs (and then it must be).
    let whole = got.len() == truth.rows.len() && differ.is_empty() && gone.is_empty();
    if t.status == TableStatus::Complete && !whole {
        fail.push(format!(
            "status complete, but {} rows of the truth are missing and {} differ",
            gone.len(),
            differ.len()
        ));
    }
    if expect.complete && t.status != TableStatus::Complete {
        fail.push(format!(
            "status {:?} for a table whose every row is in the file unchanged",
            t.status
        ));
    }
    if !differ.is_empty() && t.status != TableStatus::Doubtful {
        fail.push(format!(
            "status {:?} with {} rows that differ from the truth: recovered with doubts",
            t.status,
            differ.len()
        ));
    }
    // The exit code: 0 only when every table is complete; otherwise neither 0 nor 3 (a post-check that
    // failed after an action). The recover safety work gives partial and doubtful dumps exit code 4.
    let all_complete = m.tables.iter().all(|t| t.status == TableStatus::Complete);
    if all_complete && code != 0 {
        fail.push(format!("exit {code} with every table complete"));
    }
    if !all_complete && (code == 0 || code == 3) {
        fail.push(format!(
            "exit {code} with table status {:?} (a dump that is not complete exits neither 0 nor 3)",
            t.status
        ));
    }
    let in_limit = expect
        .limit
        .iter()
        .filter(|k| got_keys.contains(*k))
        .count();
    let log_lines: Vec<&str> = run
        .error_log
        .lines()
        .filter(|l| l.contains("[ERROR]") || l.contains("orrupt") || l.contains("Failed"))
        .collect();
    let line = format!(
        "layout {}: truth {} rows, limit {}, file {} rows ({} of the limit), {} differ ({} unmarked), {} missing \
         from the file; lost [{}] expected [{}]; status {:?}, {} doubts, note {:?}; exit {code}; private error \
         log: {} corruption lines{}",
        case.name,
        truth.rows.len(),
        expect.limit.len(),
        got.len(),
        in_limit,
        differ.len(),
        unmarked.len(),
        gone.len(),
        shown(&reported),
        expect.lost.as_deref().map(shown).unwrap_or_else(|| "not checked".into()),
        t.status,
        t.doubts.len(),
        t.note,
        log_lines.len(),
        log_lines
            .first()
            .map(|l| format!(" (first: {l})"))
            .unwrap_or_default()
    );
    assert!(fail.is_empty(), "{line}\n  - {}", fail.join("\n  - "));
    eprintln!("{line}");
}

/// An INT-keyed table of `n` rows about 73 to a leaf page: (id INT PRIMARY KEY, c VARCHAR(200)), with a
/// secondary index on k when `secondary`.
fn int_sql(n: u32, secondary: bool) -> Vec<String> {
    let (k_col, k_key) = if secondary {
        (", k INT NOT NULL", ", KEY k (k)")
    } else {
        ("", "")
    };
    let k_val = if secondary { ", seq * 7 % 1000" } else { "" };
    vec![
        format!(
            "CREATE TABLE db.t (id INT NOT NULL PRIMARY KEY{k_col}, c VARCHAR(200) NOT NULL{k_key}) ENGINE=InnoDB"
        ),
        format!("INSERT INTO db.t SELECT seq{k_val}, CONCAT(REPEAT('x', 180), seq) FROM seq_1_to_{n}"),
    ]
}

/// Damage the leaves `bad` (indexes into the chain) and start the server again at level 0, as a damaged
/// production server runs.
fn damage_leaves(sb: &mut Sandboxed, leaves: &[IndexPage], bad: &BTreeSet<usize>) {
    let f = table_file(sb);
    for &i in bad {
        f.damage(leaves[i].page).unwrap();
    }
    start_at(sb, 0);
}

/// What plain SQL gets from the damaged server (streaming, as the dump reads): the first column of every row
/// received, and how the read ended (`None`: without error). Printed for the record, and used to prove the
/// damage does what the case says.
fn observe(sb: &Sandboxed, sql: &str) -> (Vec<String>, Option<String>) {
    let mut c = sb.conn();
    let mut got = Vec::new();
    let mut end = None;
    match c.query_iter(sql) {
        Ok(result) => {
            for r in result {
                match r {
                    Ok(r) => got.push(match r.as_ref(0) {
                        Some(mysql::Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
                        Some(v) => v.as_sql(true),
                        None => String::new(),
                    }),
                    Err(e) => {
                        end = Some(e.to_string());
                        break;
                    }
                }
            }
        }
        Err(e) => end = Some(e.to_string()),
    }
    eprintln!(
        "observed: {sql} -> {} rows{}",
        got.len(),
        end.as_deref()
            .map(|e| format!(", then {e}"))
            .unwrap_or_else(|| ", end".into())
    );
    (got, end)
}

/// a. A damaged non-leaf page, read by two threads whose cut lies under it: every row is readable by a plain
/// ascending scan (it descends the leftmost path and follows the leaf links, never reading the damaged page),
/// so every row must come back and the table is complete.
#[test]
fn layout_a_damaged_non_leaf_page_under_the_cut_between_two_threads() {
    // 200,000 rows of ~190 bytes: ~2,700 leaves, three levels (the root at level 2).
    let case = Case {
        name: "lya",
        sql: int_sql(200_000, false),
        key: vec![0],
        order: Some("id"),
        threads: 2,
    };
    let (mut sb, truth) = build(&case);
    let levels = table_file(&sb).levels(3).unwrap();
    assert_eq!(
        levels.len(),
        3,
        "a root at level 2: {:?}",
        levels.iter().map(Vec::len).collect::<Vec<_>>()
    );
    let (_, per_leaf) = per_leaf(&sb, &truth);
    // The dump cuts an integer key evenly between MIN and MAX (two threads: one cut).
    let cut = cut_of(&truth);
    let leaf_of_cut = leaf_of(&per_leaf, cut);
    let under = pages::children(&levels[1], &levels[0]).unwrap();
    let mut first_leaf = 0;
    let mut upper = None;
    for (i, kids) in under.iter().enumerate() {
        if (first_leaf..first_leaf + kids.len()).contains(&leaf_of_cut) {
            upper = Some(i);
        }
        first_leaf += kids.len();
    }
    let upper = upper.unwrap();
    assert!(
        upper > 0,
        "the cut lies under the first level-1 page, which a scan from the start descends through"
    );
    let below: usize = under[..upper].iter().map(Vec::len).sum();
    let covered = &per_leaf[below..below + under[upper].len()];
    eprintln!(
        "layout {}: levels {:?} (pages per level), cut {cut} on leaf {leaf_of_cut}, under level-1 page {} of {} \
         (page {}, leaves {below}..{}, keys {:?}..{:?})",
        case.name,
        levels.iter().map(Vec::len).collect::<Vec<_>>(),
        upper,
        levels[1].len(),
        levels[1][upper].page,
        below + under[upper].len(),
        covered[0][0],
        covered[covered.len() - 1].last().unwrap()
    );
    table_file(&sb).damage(levels[1][upper].page).unwrap();
    start_at(&mut sb, 0);
    // What the case claims: a plain ascending scan reads every row; a read that starts at the cut descends
    // through the damaged page.
    let (all, end) = observe(&sb, "SELECT id FROM db.t FORCE INDEX (PRIMARY) ORDER BY id");
    assert_eq!((all.len(), end), (truth.rows.len(), None));
    observe(
        &sb,
        &format!("SELECT id FROM db.t FORCE INDEX (PRIMARY) WHERE id >= {cut} ORDER BY id"),
    );
    observe(
        &sb,
        &format!("SELECT id FROM db.t FORCE INDEX (PRIMARY) WHERE id >= {cut} ORDER BY id DESC"),
    );
    let expect = Expect {
        limit: truth.keys().into_iter().collect(),
        lost: Some(Vec::new()),
        keyed: true,
        complete: true,
    };
    let run = recover(&sb, &case);
    judge(&case, &truth, &expect, &run);
}

/// A case whose damage is whole leaves of the clustered index: `bad` picks them (indexes into the leaf chain)
/// from the truth split by leaf; the expectation follows (every row off them, one lost range per run of
/// adjacent bad leaves, bounded by the nearest keys). `keyed`: the table has a key the manifest can bound lost
/// ranges by (not so without a primary key or a unique key InnoDB clusters by).
fn bad_leaves(
    case: &Case,
    keyed: bool,
    bad: impl Fn(&[Vec<Key>], &Truth) -> BTreeSet<usize>,
) -> Run {
    let (mut sb, truth) = build(case);
    // The leaves hold the rows in key order; the harness compares keys in that order.
    check_order(&truth.keys());
    let (leaves, per_leaf) = per_leaf(&sb, &truth);
    let bad = bad(&per_leaf, &truth);
    eprintln!(
        "layout {}: {} leaves, bad leaves {bad:?}",
        case.name,
        leaves.len()
    );
    damage_leaves(&mut sb, &leaves, &bad);
    let expect = leaves_lost(&per_leaf, &bad, keyed);
    let run = recover(&sb, case);
    judge(case, &truth, &expect, &run);
    run
}

fn middle(per_leaf: &[Vec<Key>], _: &Truth) -> BTreeSet<usize> {
    [per_leaf.len() / 2].into()
}

/// b. The last leaf damaged, no secondary index to list what it held: every row before it is recovered, and
/// the lost range runs from the last readable key to the end.
#[test]
fn layout_b_the_last_leaf_damaged_without_a_secondary_index() {
    let case = Case {
        name: "lyb",
        sql: int_sql(3000, false),
        key: vec![0],
        order: Some("id"),
        threads: 2,
    };
    bad_leaves(&case, true, |l, _| [l.len() - 1].into());
}

/// c. A VARCHAR-led primary key (utf8mb4_general_ci, mixed case), a bad leaf in the middle, no secondary
/// index: no integer midpoints to probe and no index to list the keys.
#[test]
fn layout_c_a_varchar_primary_key_with_a_bad_leaf_in_the_middle() {
    let case = Case {
        name: "lyc",
        sql: vec![
            "CREATE TABLE db.t (name VARCHAR(64) NOT NULL PRIMARY KEY, v INT NOT NULL, pad VARCHAR(200) NOT NULL) \
             ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci"
                .into(),
            "INSERT INTO db.t SELECT CONCAT(IF(seq % 2, 'Key-', 'key-'), LPAD(seq, 6, '0'), IF(seq % 3, 'a', 'B')), \
             seq, REPEAT('v', 180) FROM seq_1_to_3000"
                .into(),
        ],
        key: vec![0],
        order: Some("name"),
        threads: 2,
    };
    bad_leaves(&case, true, middle);
}

/// d. No primary key (InnoDB's hidden row id orders the clustered index), a bad clustered leaf in the middle,
/// and a secondary index on a column whose values are unique though not declared so: the rows after the bad
/// leaf are reached through that index, and the lost range is bounded in it. The plain scan the truth is read
/// by follows the hidden row id, which follows the insert order (id).
#[test]
fn layout_d_no_primary_key_walked_by_a_secondary_index_of_unique_values() {
    let case = Case {
        name: "lyd",
        sql: vec![
            "CREATE TABLE db.t (id INT NOT NULL, k INT NOT NULL, c VARCHAR(200) NOT NULL, KEY k (k), KEY id (id)) \
             ENGINE=InnoDB"
                .into(),
            "INSERT INTO db.t SELECT seq, seq * 7 % 1000, CONCAT(REPEAT('n', 180), seq) FROM seq_1_to_3000".into(),
        ],
        key: vec![0],
        order: None,
        threads: 2,
    };
    let run = bad_leaves(&case, true, middle);
    let t = run.manifest.as_ref().unwrap().table("db", "t").unwrap();
    assert_eq!(t.key_index.as_deref(), Some("id"), "{t:?}");
}

/// d2. No primary key and only an index whose values repeat (three rows per value of k): the walk goes group
/// by group. A group with a row on the bad leaf is read up to that row, as SQL allows (nothing but the hidden
/// row id orders a group); every other row is recovered, and each group read in part is a lost range whose
/// `rows` is what the index counts and the file lacks.
#[test]
fn layout_d2_no_primary_key_and_an_index_whose_values_repeat() {
    let case = Case {
        name: "lyd2",
        sql: vec![
            "CREATE TABLE db.t (id INT NOT NULL, k INT NOT NULL, c VARCHAR(200) NOT NULL, KEY k (k)) ENGINE=InnoDB"
                .into(),
            "INSERT INTO db.t SELECT seq, seq * 7 % 1000, CONCAT(REPEAT('n', 180), seq) FROM seq_1_to_3000".into(),
        ],
        key: vec![0],
        order: None,
        threads: 2,
    };
    let (mut sb, truth) = build(&case);
    let (leaves, per_leaf) = per_leaf(&sb, &truth);
    let bad = middle(&per_leaf, &truth);
    damage_leaves(&mut sb, &leaves, &bad);
    let on_bad: BTreeSet<Key> = bad
        .iter()
        .flat_map(|&i| per_leaf[i].iter().cloned())
        .collect();
    // What SQL can reach: per value of k, its rows in hidden-row-id (insert) order up to the first on the bad
    // leaf.
    let mut groups: BTreeMap<String, Vec<&TextRow>> = BTreeMap::new();
    for r in &truth.rows {
        groups.entry(r[1].clone().unwrap()).or_default().push(r);
    }
    let mut reachable: BTreeSet<Key> = BTreeSet::new();
    let mut cut: BTreeMap<i64, u64> = BTreeMap::new();
    for (k, rows) in &groups {
        let upto = rows
            .iter()
            .position(|r| on_bad.contains(&truth.key_of(r)))
            .unwrap_or(rows.len());
        reachable.extend(rows[..upto].iter().map(|r| truth.key_of(r)));
        if upto < rows.len() {
            cut.insert(k.parse().unwrap(), (rows.len() - upto) as u64);
        }
    }
    let run = recover(&sb, &case);
    let m = run.manifest.as_ref().expect("a manifest");
    let t = m.table("db", "t").unwrap();
    let got = run.loaded.as_ref().expect("the files load");
    let by_key = truth.by_key();
    for r in got {
        assert_eq!(
            Some(r),
            by_key.get(&truth.key_of(r)),
            "a row that is not the truth's"
        );
    }
    let got_keys: BTreeSet<Key> = got.iter().map(|r| truth.key_of(r)).collect();
    assert_eq!(got_keys, reachable, "every row SQL can reach, and no other");
    let lost: BTreeMap<i64, u64> = t
        .lost
        .iter()
        .map(|l| {
            assert_eq!(l.from, l.to, "a group's range is one value: {l:?}");
            (
                l.from.as_ref().unwrap()[0].as_i64().unwrap(),
                l.rows.unwrap(),
            )
        })
        .collect();
    assert_eq!(
        lost, cut,
        "one lost range per group read in part, counted by the index"
    );
    assert_eq!(t.key_index.as_deref(), Some("k"), "{t:?}");
    assert_eq!(t.status, TableStatus::Partial, "{t:?}");
    assert_eq!(run.out.code, 4, "{}", run.out.stderr);
}

/// e. The clustered index is a UNIQUE NOT NULL key (no PRIMARY KEY), a bad leaf in the middle, a secondary
/// index beside it: the unique key is the table's key, and the lost range is bounded in it.
#[test]
fn layout_e_a_unique_not_null_clustered_key_with_a_bad_leaf() {
    let case = Case {
        name: "lye",
        sql: vec![
            "CREATE TABLE db.t (u INT NOT NULL, k INT NOT NULL, c VARCHAR(200) NOT NULL, UNIQUE KEY u (u), KEY k (k)) \
             ENGINE=InnoDB"
                .into(),
            "INSERT INTO db.t SELECT seq * 3, seq * 7 % 1000, CONCAT(REPEAT('u', 180), seq) FROM seq_1_to_3000".into(),
        ],
        key: vec![0],
        order: Some("u"),
        threads: 2,
    };
    bad_leaves(&case, true, middle);
}

/// The key at which the dump cuts an integer key between two threads: evenly between MIN and MAX.
fn cut_of(truth: &Truth) -> i128 {
    let ids: Vec<i128> = truth.keys().iter().map(|k| k[0].parse().unwrap()).collect();
    let (lo, hi) = (ids[0], ids[ids.len() - 1]);
    lo + (hi - lo) / 2
}

/// The index of the leaf the integer key `at` falls on (the first leaf holding a key at or above it).
fn leaf_of(per_leaf: &[Vec<Key>], at: i128) -> usize {
    per_leaf
        .iter()
        .position(|l| l.iter().any(|k| k[0].parse::<i128>().unwrap() >= at))
        .unwrap()
}

/// f. Sparse BIGINT keys (far beyond 32 bits, irregular gaps), `n` rows: two adjacent bad leaves, one apart,
/// and, when the table is big enough for two threads to split the key range (the dump splits tables the
/// server estimates at 100,000 rows or more), the leaf holding the cut (which is no key: it falls into a gap).
fn sparse_bigint(name: &'static str, n: u32) {
    let case = Case {
        name,
        sql: vec![
            "CREATE TABLE db.t (id BIGINT NOT NULL PRIMARY KEY, c VARCHAR(200) NOT NULL) ENGINE=InnoDB".into(),
            format!(
                "INSERT INTO db.t SELECT 5000000000 + seq * 1000 + seq * 7919 % 997, CONCAT(REPEAT('f', 180), seq) \
                 FROM seq_1_to_{n}"
            ),
        ],
        key: vec![0],
        order: Some("id"),
        threads: 2,
    };
    bad_leaves(&case, true, |per_leaf, truth| {
        let count = per_leaf.len();
        let mut bad: BTreeSet<usize> = [count / 4, count / 4 + 1, 3 * count / 4].into();
        if n >= 100_000 {
            let cut = cut_of(truth);
            let at_cut = leaf_of(per_leaf, cut);
            assert!(
                per_leaf[at_cut]
                    .iter()
                    .all(|k| k[0].parse::<i128>().unwrap() != cut),
                "the cut {cut} is no key"
            );
            eprintln!("layout {name}: cut {cut} (no key) on leaf {at_cut}");
            bad.insert(at_cut);
        }
        bad
    });
}

#[test]
fn layout_f1_sparse_bigint_keys_with_bad_leaves_and_one_on_the_cut() {
    sparse_bigint("lyf1", 120_000);
}

#[test]
fn layout_f2_sparse_bigint_keys_with_bad_leaves_read_by_one_session() {
    sparse_bigint("lyf2", 3000);
}

/// g. Damaged BLOB pages: the first page of one row's chain and a later page of another's. The server
/// returns both rows, their column truncated or empty, without an SQL error: only its error log says so, and
/// the manifest must doubt exactly those rows.
#[test]
fn layout_g_damaged_blob_pages_first_and_later_in_a_chain() {
    let case = Case {
        name: "lyg",
        sql: vec![
            "CREATE TABLE db.t (id INT NOT NULL PRIMARY KEY, b LONGBLOB, c VARCHAR(20)) ENGINE=InnoDB ROW_FORMAT=DYNAMIC"
                .into(),
            // Rows 50, 100 and 150 hold 40,000 bytes each (three BLOB pages), the others a few bytes in the
            // record.
            "INSERT INTO db.t SELECT seq, IF(seq % 50 = 0, CONCAT('blob-', seq, ':', REPEAT(MD5(seq), 1250)), \
             CONCAT('small-', seq)), CONCAT('c', seq) FROM seq_1_to_200"
                .into(),
        ],
        key: vec![0],
        order: Some("id"),
        threads: 2,
    };
    let (mut sb, truth) = build(&case);
    let chains = table_file(&sb).blob_chains().unwrap();
    let chain_of = |id: u32| {
        let head = format!("blob-{id}:");
        chains
            .iter()
            .find(|c| c.head.starts_with(head.as_bytes()))
            .unwrap_or_else(|| panic!("no BLOB chain starts with {head}: {chains:?}"))
            .clone()
    };
    let (a, b) = (chain_of(50), chain_of(100));
    assert!(a.pages.len() >= 2 && b.pages.len() >= 2, "{a:?} {b:?}");
    assert_eq!(a.len, 40_000 + "blob-50:".len() as u64);
    let f = table_file(&sb);
    f.damage(a.pages[0]).unwrap();
    f.damage(b.pages[1]).unwrap();
    start_at(&mut sb, 0);
    // What the case claims: both rows come back, their value cut short, and no SQL error.
    let (lens, end) = observe(
        &sb,
        "SELECT CONCAT_WS(' ', id, LENGTH(b)) FROM db.t WHERE id IN (50, 100, 150) ORDER BY id",
    );
    eprintln!("observed lengths (id, LENGTH(b)) of rows 50, 100, 150: {lens:?}");
    assert_eq!((lens.len(), end), (3, None));
    assert!(
        lens[0] != "50 40008" && lens[1] != "100 40009" && lens[2] == "150 40009",
        "{lens:?}"
    );
    let expect = Expect {
        limit: truth.keys().into_iter().collect(),
        lost: Some(Vec::new()),
        keyed: true,
        complete: false,
    };
    let run = recover(&sb, &case);
    judge(&case, &truth, &expect, &run);
}

/// h. Checksum-valid scrambling of a leaf in the middle of an INT-keyed table with a secondary index: InnoDB
/// reads the page as good. No row that differs from the truth may be in a file unmarked, and every real row
/// missing from it must be inside a lost range or a doubt.
fn scrambled(name: &'static str, how: impl Fn(&IndexPage) -> Scramble) {
    let case = Case {
        name,
        sql: int_sql(3000, true),
        key: vec![0],
        order: Some("id"),
        threads: 1,
    };
    let (mut sb, truth) = build(&case);
    let (leaves, per_leaf) = per_leaf(&sb, &truth);
    let i = leaves.len() / 2;
    let how = how(&leaves[i]);
    let first = table_file(&sb).scramble(leaves[i].page, &how).unwrap();
    start_at(&mut sb, 0);
    if !matches!(how, Scramble::Fill) {
        // What the case claims: the server reads the page as good and serves what its records say (a
        // filled page crashes the server, so it is not read here).
        let (ids, end) = observe(&sb, "SELECT id FROM db.t FORCE INDEX (PRIMARY) ORDER BY id");
        assert_eq!((ids.len(), end), (truth.rows.len(), None));
        let ids: Vec<i64> = ids.iter().map(|i| i.parse().unwrap()).collect();
        let out_of_order: Vec<(i64, i64)> = ids
            .windows(2)
            .filter(|w| w[0] >= w[1])
            .map(|w| (w[0], w[1]))
            .collect();
        eprintln!("observed out of key order: {out_of_order:?}");
        if let (Scramble::Exchange { .. }, Some(nth)) = (&how, first) {
            // Every key in place, two rows carrying each other's columns; the secondary index disagrees.
            assert!(out_of_order.is_empty(), "{out_of_order:?}");
            let pair = format!("{}, {}", per_leaf[i][nth][0], per_leaf[i][nth + 1][0]);
            let (clustered, _) = observe(
                &sb,
                &format!("SELECT CONCAT_WS(' ', id, k) FROM db.t FORCE INDEX (PRIMARY) WHERE id IN ({pair}) ORDER BY id"),
            );
            let (secondary, _) = observe(
                &sb,
                &format!("SELECT CONCAT_WS(' ', id, k) FROM db.t FORCE INDEX (k) WHERE id IN ({pair}) AND k >= 0 ORDER BY id"),
            );
            eprintln!(
                "observed (id, k) by the primary key {clustered:?}, through index k {secondary:?}"
            );
        } else {
            assert!(
                !out_of_order.is_empty(),
                "the scrambled page reads in key order"
            );
        }
    }
    // What the server can still return: every row off the page; a record whose key was rewritten is gone
    // under its real key, and the rows of a filled page may be garbage or lost.
    let mut limit: BTreeSet<Key> = truth.keys().into_iter().collect();
    match (&how, first) {
        (Scramble::Fill, _) => {
            for k in &per_leaf[i] {
                limit.remove(k);
            }
        }
        (Scramble::Key { .. }, Some(nth)) => {
            limit.remove(&per_leaf[i][nth]);
        }
        _ => {}
    }
    eprintln!(
        "layout {name}: {how:?} on leaf {i} of {} (page {}, keys {:?}..{:?}), first record changed {first:?}",
        leaves.len(),
        leaves[i].page,
        per_leaf[i][0],
        per_leaf[i][per_leaf[i].len() - 1]
    );
    // The lost rows depend on what the server makes of the page (garbage, a crash, rows out of order), so
    // the lost ranges are not checked exactly; every real row missing from the file must be accounted for.
    let expect = Expect {
        limit,
        lost: None,
        keyed: true,
        complete: false,
    };
    let run = recover(&sb, &case);
    judge(&case, &truth, &expect, &run);
    // The server meets the same page again after each restart: the same crash, at the same place, is one
    // doubt, not one per crash.
    let t = run.manifest.as_ref().unwrap().table("db", "t").unwrap();
    for (n, d) in t.doubts.iter().enumerate() {
        let twin = t.doubts[n + 1..]
            .iter()
            .find(|e| e.kind == d.kind && e.range == d.range && e.why == d.why);
        assert!(twin.is_none(), "the doubt {d:?} is listed twice");
    }
    if let (Scramble::Swap { .. }, Some(nth)) = (&how, first) {
        // The rows are whole, only out of order: the key order is the one evidence, and it names them.
        let t = run.manifest.as_ref().unwrap().table("db", "t").unwrap();
        let named: BTreeSet<Key> = t
            .doubts
            .iter()
            .filter(|d| d.kind == dump::DoubtKind::KeyOrder)
            .flat_map(|d| d.keys.iter().map(|k| json_key(k)))
            .collect();
        assert!(
            named.contains(&per_leaf[i][nth]) || named.contains(&per_leaf[i][nth + 1]),
            "no key-order doubt names the swapped rows {:?}, {:?}: {t:?}",
            per_leaf[i][nth],
            per_leaf[i][nth + 1]
        );
        assert_eq!(t.status, TableStatus::Doubtful, "{t:?}");
    }
}

#[test]
fn layout_h1_garbage_records_with_a_valid_checksum() {
    scrambled("lyh1", |_| Scramble::Fill);
}

#[test]
fn layout_h2_a_key_that_never_existed_with_a_valid_checksum() {
    scrambled("lyh2", |l| Scramble::Key {
        nth: l.n_recs / 2,
        key: pages::int_key(2_000_000_000, 4),
    });
}

#[test]
fn layout_h3_two_records_swapped_with_a_valid_checksum() {
    scrambled("lyh3", |l| Scramble::Swap { nth: l.n_recs / 2 });
}

/// Two neighbouring rows trade their non-key columns (k and c: after the 4-byte id, the 6-byte transaction
/// id and the 7-byte roll pointer; c holds 184 bytes for these four-digit ids): keys in order, no error, two
/// rows that were never written. Only the secondary index k can tell.
#[test]
fn layout_h4_two_rows_carrying_each_others_columns_with_a_valid_checksum() {
    scrambled("lyh4", |l| Scramble::Exchange {
        nth: l.n_recs / 2,
        from: 4 + 6 + 7,
        len: 4 + 184,
    });
}

/// h5. A leaf of the secondary index k filled with garbage under a valid checksum, every clustered page whole:
/// the server logs `Index corruption … We try to skip the rest of the page` when it reads that leaf, and the
/// one reading it is innops's own pass over the index (asked beside the reads of the rows, then again after
/// them), never a read of the rows. Every row must be in the file, and neither a crash nor a corruption line
/// may be pinned on rows as a doubt: both come from the index, which the cross-check judges.
#[test]
fn layout_h5_a_secondary_index_leaf_that_crashes_the_server_doubts_no_row() {
    let case = Case {
        name: "lyh5",
        sql: int_sql(20_000, true),
        key: vec![0],
        order: Some("id"),
        threads: 2,
    };
    let (mut sb, truth) = build(&case);
    // Page 4 is the root of the first secondary index of a file-per-table tablespace (3 is the clustered one's).
    let leaves = table_file(&sb).leaves(4).unwrap();
    assert!(leaves.len() >= 3, "index k has {} leaves", leaves.len());
    let mid = &leaves[leaves.len() / 2];
    table_file(&sb).scramble(mid.page, &Scramble::Fill).unwrap();
    start_at(&mut sb, 0);
    // What the case claims: the rows read by the primary key are all there; the index leaf is garbage.
    let (ids, end) = observe(&sb, "SELECT id FROM db.t FORCE INDEX (PRIMARY) ORDER BY id");
    assert_eq!((ids.len(), end), (truth.rows.len(), None));
    // The reads wait for the pass over the index beside them, so the corruption lines it makes the server write
    // fall inside a read, as they can on an unlucky timing: the table must be read again without the pass.
    let run = recover_env(&sb, &case, &[(testhooks::EARLY_INSIDE, "1")]);
    assert!(
        run.out
            .stderr
            .contains("reading the table again without it"),
        "the reads were not done again: {}",
        run.out.stderr
    );
    let expect = Expect {
        limit: truth.keys().into_iter().collect(),
        lost: Some(Vec::new()),
        keyed: true,
        complete: false,
    };
    judge(&case, &truth, &expect, &run);
    let t = run.manifest.as_ref().unwrap().table("db", "t").unwrap();
    for d in &t.doubts {
        eprintln!("doubt {:?}: {} ({} keys)", d.kind, d.why, d.keys.len());
    }
    let pinned: Vec<_> = t
        .doubts
        .iter()
        .filter(|d| matches!(d.kind, dump::DoubtKind::Crash | dump::DoubtKind::ErrorLog))
        .collect();
    assert!(
        pinned.is_empty(),
        "what innops's own index pass made the server do is pinned on rows: {pinned:?}\n{}",
        run.error_log
    );
}

/// i. One record's DATETIME rewritten to an hour the type cannot hold (31), on a page whose checksum is made
/// valid again: no SQL error, no log line, the key in order, no secondary index on the column. Only the value
/// itself tells, and the row must be in doubt.
#[test]
fn layout_i_a_datetime_its_column_cannot_hold_with_a_valid_checksum() {
    let case = Case {
        name: "lyi",
        sql: vec![
            "CREATE TABLE db.t (id INT NOT NULL PRIMARY KEY, dt DATETIME NOT NULL, c VARCHAR(200) NOT NULL) ENGINE=InnoDB"
                .into(),
            "INSERT INTO db.t SELECT seq, '2024-05-17 08:30:00' + INTERVAL seq MINUTE, REPEAT('d', 180) FROM seq_1_to_3000"
                .into(),
        ],
        key: vec![0],
        order: Some("id"),
        threads: 2,
    };
    let (mut sb, truth) = build(&case);
    let (leaves, per_leaf) = per_leaf(&sb, &truth);
    let i = leaves.len() / 2;
    let path = sb.sandbox.datadir.join("db/t.ibd");
    let mut data = std::fs::read(&path).unwrap();
    let page = &mut data
        [leaves[i].page as usize * pages::PAGE..(leaves[i].page as usize + 1) * pages::PAGE];
    let origins = pages::record_origins(page).unwrap();
    // A compact clustered record: id (4 bytes), DB_TRX_ID (6), DB_ROLL_PTR (7), then dt (5 bytes, big-endian,
    // the hour in bits 12..17 of the packed value).
    let at = origins[10] + 4 + 6 + 7;
    let mut v = [0u8; 8];
    v[3..].copy_from_slice(&page[at..at + 5]);
    let packed = u64::from_be_bytes(v) | (31 << 12);
    page[at..at + 5].copy_from_slice(&packed.to_be_bytes()[3..]);
    let sum = pages::crc32c(&page[..pages::PAGE - 4]);
    page[pages::PAGE - 4..].copy_from_slice(&sum.to_be_bytes());
    std::fs::write(&path, &data).unwrap();
    start_at(&mut sb, 0);
    let id = &per_leaf[i][10];
    let (seen, end) = observe(
        &sb,
        &format!("SELECT CAST(dt AS CHAR) FROM db.t WHERE id = {}", id[0]),
    );
    eprintln!("observed dt of row {id:?}: {seen:?} {end:?}");
    assert!(
        seen[0].contains(" 31:"),
        "the server serves the impossible hour: {seen:?}"
    );
    let expect = Expect {
        limit: truth.keys().into_iter().collect(),
        lost: Some(Vec::new()),
        keyed: true,
        complete: false,
    };
    let run = recover(&sb, &case);
    judge(&case, &truth, &expect, &run);
    let t = run.manifest.as_ref().unwrap().table("db", "t").unwrap();
    assert!(
        t.doubts
            .iter()
            .any(|d| d.kind == dump::DoubtKind::ImpossibleValue
                && d.keys == vec![vec![serde_json::json!(id[0].parse::<i64>().unwrap())]]),
        "{t:?}"
    );
}
