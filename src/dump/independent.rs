//! The half of `--verify-load` that does not rest on innops's own manifest: the loaded rows against what the
//! damaged server's readable secondary indexes held when the table was dumped.
//!
//! The manifest's sha256, row count and content hash prove that the files are the ones innops wrote, not that
//! the rows are the table's: a file edited with its manifest fixed up, or a bug that wrote a wrong value and
//! hashed it, passes them. A readable secondary index is a second copy of some of each row's columns, written by
//! InnoDB into other pages. While dumping, each one was read alone (`xcheck`): outside the lost ranges, its
//! count of entries and the wrapping sum of their entry hashes ([`IndexEvidence`]); inside each lost range, its
//! count ([`LostRange::listed`]). Here every row loaded into the fresh server, read back from it, is hashed the
//! same way, and:
//! - the loaded rows must give the entries the index held outside the lost ranges (count and sum). Where the
//!   dump's own cross-check already disagreed (a doubt of kind `secondary_index` for that index), a difference
//!   is what the manifest says and does not fail; anywhere else it does;
//! - no loaded row may lie inside a lost range, and the index's count there is the number of rows lost there:
//!   loaded rows plus the rows listed inside the lost ranges add up to every entry the index held.
//!
//! What it cannot see: a column no index holds (a BLOB: the error-log check at dump time is the evidence
//! there), and a table without a readable secondary index, or not read by its primary or clustered UNIQUE
//! key (nothing is recorded for it; the manifest's checks alone apply).

use std::collections::BTreeMap;

use mysql::prelude::Queryable;
use mysql::Conn;
use serde::{Deserialize, Serialize};

use super::literal::{self, Kind};
use super::manifest::{DoubtKind, IndexEvidence, LostRange, TableEntry};
use super::xcheck::Tally;
use super::TableInfo;
use crate::sql::quote_ident;

/// The loaded rows against one index of the damaged server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexAgreement {
    pub index: String,
    /// Entries the damaged server's index listed outside the lost ranges.
    pub listed_outside: u64,
    /// Entries it listed inside the lost ranges; none when a range could not be read through it.
    pub listed_inside: Option<u64>,
    /// Entries the loaded rows give (one per row); none when the loaded table has no such index.
    pub loaded: Option<u64>,
    /// Count and sum of entry hashes equal.
    pub agrees: bool,
    /// The manifest's doubts of kind `secondary_index` already say this index disagrees with the rows.
    pub doubted: bool,
    /// One sentence for a person.
    pub verdict: String,
}

impl IndexAgreement {
    pub fn ok(&self) -> bool {
        self.agrees || self.doubted
    }
}

/// One lost range: the loaded rows inside it, and what the damaged server's indexes listed there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LostCount {
    /// The range's bounds, and `listed`: each index's count of the rows in it.
    #[serde(flatten)]
    pub range: LostRange,
    /// Loaded rows inside the range: the dump read none there, so any is a row innops did not read.
    pub loaded: u64,
    /// One sentence for a person.
    pub verdict: String,
}

impl LostCount {
    pub fn ok(&self) -> bool {
        self.loaded == 0
    }
}

/// Compare table `t`'s loaded rows (`tally`, every row read back from the fresh server) with the evidence the
/// dump recorded, counting the loaded rows inside each lost range on `conn` (the fresh server).
pub(crate) fn check(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    t: &TableEntry,
    tally: &Tally,
) -> anyhow::Result<(Vec<IndexAgreement>, Vec<LostCount>)> {
    // Only a table read by its primary or clustered UNIQUE key has index evidence (`xcheck::indexes`); the dump
    // read no row inside its lost ranges (a range of a table walked group by group, with `rows`, is not one).
    if t.indexes.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let key: Option<Vec<(String, Kind)>> = t
        .primary_key
        .iter()
        .map(|n| {
            info.columns
                .iter()
                .find(|c| &c.name == n)
                .map(|c| (c.name.clone(), c.kind))
        })
        .collect();
    let mut in_lost = Vec::new();
    for r in &t.lost {
        // A key the loaded table has not, or bounds that are not the key's: every row of the table counts
        // (then the range fails, as it should: the file is not the table the manifest describes).
        let wh = key
            .as_deref()
            .and_then(|k| range_sql(k, r))
            .unwrap_or_else(|| "TRUE".into());
        let n: Option<u64> = conn.query_first(format!(
            "SELECT {tag} COUNT(*) FROM {} WHERE {wh}",
            info.name.qualified()
        ))?;
        in_lost.push(n.unwrap_or(0));
    }
    let loaded: BTreeMap<String, (u64, u64)> = t
        .indexes
        .iter()
        .filter_map(|e| Some((e.index.clone(), tally.get(&e.index)?)))
        .collect();
    Ok(judge(t, &loaded, &in_lost))
}

/// The verdicts, from the manifest's entry `t`, what the loaded rows give per index (entries, sum), and the
/// loaded rows inside each of `t.lost`.
pub(crate) fn judge(
    t: &TableEntry,
    loaded: &BTreeMap<String, (u64, u64)>,
    in_lost: &[u64],
) -> (Vec<IndexAgreement>, Vec<LostCount>) {
    let any_index_doubt = t.doubts.iter().any(|d| d.kind == DoubtKind::SecondaryIndex);
    let indexes = t
        .indexes
        .iter()
        .map(|e| agreement(t, e, loaded.get(&e.index).copied(), any_index_doubt))
        .collect();
    let lost = t
        .lost
        .iter()
        .zip(in_lost)
        .map(|(r, &n)| lost_count(r, n))
        .collect();
    (indexes, lost)
}

fn agreement(
    t: &TableEntry,
    e: &IndexEvidence,
    loaded: Option<(u64, u64)>,
    any_index_doubt: bool,
) -> IndexAgreement {
    let name = quote_ident(&e.index);
    let inside: Option<u64> = t.lost.iter().map(|r| r.listed.get(&e.index).copied()).sum();
    let sum = u64::from_str_radix(&e.sum, 16).ok();
    let agrees = matches!((loaded, sum), (Some((n, s)), Some(want)) if n == e.entries && s == want);
    let doubted = e.doubted && any_index_doubt;
    let held = match inside {
        Some(i) if i > 0 => format!(
            "{} entries outside the lost ranges and {i} inside them",
            e.entries
        ),
        Some(_) => format!("{} entries", e.entries),
        None => format!(
            "{} entries outside the lost ranges (not every lost range could be read through it)",
            e.entries
        ),
    };
    let verdict = match loaded {
        None => format!(
            "the loaded table has no index {name} to check the rows with, though the damaged server's listed {held}: the file's CREATE TABLE is not the table's"
        ),
        Some((n, _)) if agrees => match inside {
            Some(i) if i > 0 => format!(
                "the damaged server's index {name} listed {held}; the {n} loaded rows give the same entries: {n} loaded + {i} lost = {} rows",
                n + i
            ),
            _ => format!(
                "the damaged server's index {name} listed {held}; the {n} loaded rows give the same entries"
            ),
        },
        Some((n, _)) => {
            let how = if n == e.entries {
                "the same number of entries with other values (at least one row differs)".to_string()
            } else if n > e.entries {
                format!("{n} entries, {} more", n - e.entries)
            } else {
                format!("{n} entries, {} fewer", e.entries - n)
            };
            let end = if doubted {
                "it differs as the manifest's doubts say"
            } else {
                "the loaded rows are not what the damaged server held, and no doubt in the manifest says so"
            };
            format!(
                "the damaged server's index {name} listed {held}; the {n} loaded rows give {how}: {end}"
            )
        }
    };
    IndexAgreement {
        index: e.index.clone(),
        listed_outside: e.entries,
        listed_inside: inside,
        loaded: loaded.map(|(n, _)| n),
        agrees,
        doubted,
        verdict,
    }
}

fn lost_count(r: &LostRange, loaded: u64) -> LostCount {
    let counts: Vec<u64> = r.listed.values().copied().collect();
    let listed = match (counts.iter().min(), counts.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!(
            "the damaged server's {} listed {lo} row(s) here",
            if counts.len() == 1 {
                format!(
                    "index {}",
                    quote_ident(r.listed.keys().next().expect("one"))
                )
            } else {
                "indexes each".to_string()
            }
        ),
        (Some(_), Some(_)) => format!(
            "the damaged server's indexes disagree on the rows here ({})",
            r.listed
                .iter()
                .map(|(i, n)| format!("{}: {n}", quote_ident(i)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => "no index could count the rows here".to_string(),
    };
    let verdict = if loaded == 0 {
        match (counts.iter().min(), counts.iter().max()) {
            (Some(lo), Some(hi)) if lo == hi => {
                format!("{listed}, none is in the dump: {lo} row(s) lost")
            }
            (Some(lo), Some(hi)) => {
                format!("{listed}, none is in the dump: {lo} to {hi} rows lost")
            }
            _ => format!("{listed}; none is in the dump"),
        }
    } else {
        format!(
            "{listed}, and {loaded} loaded row(s) lie inside this range the manifest calls lost: the file holds rows innops did not read"
        )
    };
    LostCount {
        range: r.clone(),
        loaded,
        verdict,
    }
}

/// The condition for the keys inside lost range `r` on columns `key` (names and kinds, in key order), as the
/// dump bounded it: none when a bound has more values than the key has columns.
pub(crate) fn range_sql(key: &[(String, Kind)], r: &LostRange) -> Option<String> {
    let mut conds = Vec::new();
    if let Some(a) = &r.after {
        conds.push(bound(key, a, ">")?);
    }
    if let Some(f) = &r.from {
        conds.push(bound(key, f, ">=")?);
    }
    if let Some(b) = &r.before {
        conds.push(bound(key, b, "<")?);
    }
    if let Some(t) = &r.to {
        conds.push(bound(key, t, "<=")?);
    }
    Some(if conds.is_empty() {
        "TRUE".into()
    } else {
        conds.join(" AND ")
    })
}

/// `key op vals` in key order, for a bound that may be a prefix of the key (as `read::bound_sql` writes it).
fn bound(key: &[(String, Kind)], vals: &[serde_json::Value], op: &str) -> Option<String> {
    let n = vals.len();
    if n == 0 || n > key.len() {
        return None;
    }
    let strict = &op[..1];
    let mut sql = String::new();
    for i in (0..n).rev() {
        let c = quote_ident(&key[i].0);
        let v = literal_of(key[i].1, &vals[i]);
        sql = if i == n - 1 {
            format!("{c} {op} {v}")
        } else {
            format!("({c} {strict} {v} OR ({c} = {v} AND {sql}))")
        };
    }
    Some(sql)
}

/// A key value as the manifest holds it (`read::json_of`) back to SQL: numbers as numbers, binary and BIT as
/// the literal it already is, text quoted. Anything that is not what its kind writes is quoted as text.
fn literal_of(kind: Kind, v: &serde_json::Value) -> String {
    let text = |s: &str| literal::to_sql(Kind::Text, &mysql::Value::Bytes(s.as_bytes().to_vec()));
    match v {
        serde_json::Value::Null => "NULL".into(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => {
            let ok = match kind {
                Kind::Number => {
                    !s.is_empty()
                        && s.bytes()
                            .all(|c| c.is_ascii_digit() || b"-+.eE".contains(&c))
                        && s.bytes().any(|c| c.is_ascii_digit())
                }
                Kind::Binary => {
                    s == "''"
                        || (s.len() > 2
                            && s.starts_with("0x")
                            && s[2..].bytes().all(|c| c.is_ascii_hexdigit()))
                }
                Kind::Bit => {
                    s.len() >= 3
                        && s.starts_with("b'")
                        && s.ends_with('\'')
                        && s[2..s.len() - 1].bytes().all(|c| c == b'0' || c == b'1')
                }
                Kind::Text => false,
            };
            if ok {
                s.clone()
            } else {
                text(s)
            }
        }
        other => text(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump::manifest::{Doubt, LoadCheck, TableStatus, Verified};
    use serde_json::json;

    fn entry(lost: Vec<LostRange>, indexes: Vec<IndexEvidence>, doubts: Vec<Doubt>) -> TableEntry {
        TableEntry {
            db: "db".into(),
            table: "t".into(),
            status: TableStatus::Partial,
            file: Some("db.t.sql".into()),
            sha256: None,
            rows: 0,
            content_hash: None,
            columns: vec!["id".into(), "k".into()],
            primary_key: vec!["id".into()],
            key_index: Some("PRIMARY".into()),
            lost,
            doubts,
            unchecked: Vec::new(),
            indexes,
            reconnects: 0,
            note: None,
            pages: None,
            page_pass: None,
        }
    }

    fn range(after: i64, before: i64, listed: &[(&str, u64)]) -> LostRange {
        LostRange {
            after: Some(vec![json!(after)]),
            before: Some(vec![json!(before)]),
            listed: listed.iter().map(|(i, n)| (i.to_string(), *n)).collect(),
            ..Default::default()
        }
    }

    fn evidence(index: &str, entries: u64, sum: u64, doubted: bool) -> IndexEvidence {
        IndexEvidence {
            index: index.into(),
            entries,
            sum: format!("{sum:016x}"),
            doubted,
            compared: Default::default(),
        }
    }

    fn index_doubt() -> Doubt {
        Doubt {
            kind: DoubtKind::SecondaryIndex,
            why: "index `k` holds other values than the recovered row for 1 row(s)".into(),
            range: None,
            keys: vec![vec![json!(5)]],
        }
    }

    #[test]
    fn loaded_rows_that_give_the_index_entries_agree_and_each_lost_range_reports_the_index_count() {
        let t = entry(
            vec![range(10, 84, &[("k", 73)]), range(900, 910, &[("k", 9)])],
            vec![evidence("k", 2918, 0xabc, false)],
            Vec::new(),
        );
        let loaded = BTreeMap::from([("k".to_string(), (2918, 0xabc))]);
        let (ix, lost) = judge(&t, &loaded, &[0, 0]);
        assert!(ix[0].ok() && ix[0].agrees, "{ix:?}");
        assert_eq!(ix[0].listed_inside, Some(82));
        assert!(
            ix[0].verdict.contains("2918 loaded + 82 lost = 3000 rows"),
            "{}",
            ix[0].verdict
        );
        assert!(lost.iter().all(LostCount::ok));
        assert_eq!(
            lost[0].verdict,
            "the damaged server's index `k` listed 73 row(s) here, none is in the dump: 73 row(s) lost"
        );
    }

    #[test]
    fn loaded_rows_that_differ_from_the_index_fail_unless_a_doubt_of_the_dump_says_so() {
        let lost = vec![range(10, 84, &[("k", 73)])];
        // One value changed: same count, another sum.
        let loaded = BTreeMap::from([("k".to_string(), (2927, 0xabd))]);
        let t = entry(
            lost.clone(),
            vec![evidence("k", 2927, 0xabc, false)],
            Vec::new(),
        );
        let (ix, _) = judge(&t, &loaded, &[0]);
        assert!(!ix[0].ok(), "{ix:?}");
        assert!(
            ix[0].verdict.contains("other values")
                && ix[0].verdict.contains("no doubt in the manifest says so"),
            "{}",
            ix[0].verdict
        );
        // A row fewer.
        let fewer = BTreeMap::from([("k".to_string(), (2926, 0xabc))]);
        let (ix, _) = judge(&t, &fewer, &[0]);
        assert!(!ix[0].ok() && ix[0].verdict.contains("1 fewer"), "{ix:?}");
        // The dump's cross-check disagreed on this index and the manifest says so: expected, not a failure.
        let t = entry(
            lost.clone(),
            vec![evidence("k", 2927, 0xabc, true)],
            vec![index_doubt()],
        );
        let (ix, _) = judge(&t, &loaded, &[0]);
        assert!(ix[0].ok() && !ix[0].agrees, "{ix:?}");
        assert!(
            ix[0]
                .verdict
                .ends_with("it differs as the manifest's doubts say"),
            "{}",
            ix[0].verdict
        );
        // A flag without a doubt in the manifest is not the manifest saying so.
        let t = entry(lost, vec![evidence("k", 2927, 0xabc, true)], Vec::new());
        assert!(!judge(&t, &loaded, &[0]).0[0].ok());
        // The loaded table has not the index at all.
        let t = entry(
            Vec::new(),
            vec![evidence("k", 2927, 0xabc, false)],
            Vec::new(),
        );
        let (ix, _) = judge(&t, &BTreeMap::new(), &[]);
        assert!(!ix[0].ok() && ix[0].loaded.is_none(), "{ix:?}");
    }

    #[test]
    fn a_loaded_row_inside_a_lost_range_fails_the_range() {
        let t = entry(
            vec![range(10, 84, &[("k", 73), ("c", 72)])],
            Vec::new(),
            Vec::new(),
        );
        let (_, lost) = judge(&t, &BTreeMap::new(), &[1]);
        assert!(!lost[0].ok());
        assert!(
            lost[0].verdict.starts_with(
                "the damaged server's indexes disagree on the rows here (`c`: 72, `k`: 73), and 1 loaded row(s)"
            ),
            "{}",
            lost[0].verdict
        );
        let (_, lost) = judge(&t, &BTreeMap::new(), &[0]);
        assert!(lost[0].ok() && lost[0].verdict.ends_with("72 to 73 rows lost"));
    }

    fn load_check(rows_loaded: u64, hash: bool, index: bool, in_lost: u64) -> LoadCheck {
        let t = entry(
            vec![range(10, 84, &[("k", 73)])],
            vec![evidence("k", 100, 7, false)],
            Vec::new(),
        );
        let loaded = BTreeMap::from([("k".to_string(), (100, if index { 7 } else { 8 }))]);
        let (indexes, lost) = judge(&t, &loaded, &[in_lost]);
        LoadCheck {
            db: "db".into(),
            table: "t".into(),
            rows_expected: 100,
            rows_loaded,
            hash_matches: hash,
            hash_differs_as_doubted: false,
            indexes,
            lost,
            unchecked: None,
        }
    }

    #[test]
    fn a_load_check_passes_only_when_every_part_of_it_does() {
        assert!(load_check(100, true, true, 0).ok());
        assert!(!load_check(99, true, true, 0).ok(), "row count");
        assert!(!load_check(100, false, true, 0).ok(), "content hash");
        assert!(!load_check(100, true, false, 0).ok(), "the index");
        assert!(!load_check(100, true, true, 1).ok(), "a lost range");
        let tables = |second_ok: bool| Verified {
            tables: vec![
                load_check(100, true, true, 0),
                load_check(100, true, second_ok, 0),
            ],
        };
        assert!(tables(true).ok());
        assert!(!tables(false).ok(), "one table of two");
    }

    #[test]
    fn lost_range_bounds_become_conditions_on_the_key() {
        let key = [
            ("id".to_string(), Kind::Number),
            ("s".to_string(), Kind::Text),
        ];
        let r = LostRange {
            after: Some(vec![json!(5), json!("it's")]),
            before: Some(vec![json!(9)]),
            ..Default::default()
        };
        assert_eq!(
            range_sql(&key, &r).unwrap(),
            r"(`id` > 5 OR (`id` = 5 AND `s` > 'it\'s')) AND `id` < 9"
        );
        let cut = LostRange {
            from: Some(vec![json!(1500)]),
            ..Default::default()
        };
        assert_eq!(range_sql(&key, &cut).unwrap(), "`id` >= 1500");
        let group = LostRange {
            from: Some(vec![json!(7)]),
            to: Some(vec![json!(7)]),
            ..Default::default()
        };
        assert_eq!(range_sql(&key, &group).unwrap(), "`id` >= 7 AND `id` <= 7");
        assert_eq!(range_sql(&key, &LostRange::default()).unwrap(), "TRUE");
        let too_long = LostRange {
            before: Some(vec![json!(1), json!("a"), json!(2)]),
            ..Default::default()
        };
        assert_eq!(range_sql(&key, &too_long), None);
        // A binary key is written as the hex literal it is; anything else for it is quoted.
        assert_eq!(literal_of(Kind::Binary, &json!("0x00FF")), "0x00FF");
        assert_eq!(
            literal_of(Kind::Binary, &json!("0x1) OR (1")),
            r"'0x1) OR (1'"
        );
        assert_eq!(literal_of(Kind::Number, &json!("1e3")), "1e3");
    }
}
