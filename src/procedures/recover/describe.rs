//! How the outcome of a recovery dump reads for a person: one line per table (what came back, which keys did
//! not, which rows are in doubt), and the dump step's journaled summary.

use crate::dump::{self, Manifest, TableStatus};

/// One line per table for a person: what came back and which keys did not. innops's own tables (its record of
/// the tables it made, in the schema `innops`) are dumped too, but said apart from the user's data.
pub fn table_lines(m: &Manifest) -> Vec<String> {
    m.tables
        .iter()
        .map(|t| format!("{}{}", table_line(t, m.files_only.is_some()), pages_part(t)))
        .collect()
}

/// What `--pages` did for the table, after its line: the rows by source and the pages read, or why its
/// pages were not read.
fn pages_part(t: &dump::manifest::TableEntry) -> String {
    let Some(p) = &t.pages else {
        // Not run on a table with losses: why (a table SQL read whole needs no word).
        return match &t.page_pass {
            Some(pp)
                if !pp.ran && (!t.lost.is_empty() || t.status == TableStatus::Unrecoverable) =>
            {
                format!(" (page pass not run: {})", pp.why)
            }
            _ => String::new(),
        };
    };
    if let Some(why) = &p.refused {
        return format!(" ({why})");
    }
    let from = from_pages(p);
    format!(
        " ({} from SQL, {} read from the data file{from})",
        crate::units::format_count(p.sql_rows),
        crate::units::format_count(p.page_rows)
    )
}

/// " from page 4, 5 (checksum fails), …": the first ten pages rows were read from, and how many more there are.
fn from_pages(p: &dump::manifest::PagesRead) -> String {
    let with_rows: Vec<_> = p.pages.iter().filter(|r| r.rows > 0).collect();
    if with_rows.is_empty() {
        return String::new();
    }
    let named: Vec<String> = with_rows
        .iter()
        .take(10)
        .map(|r| {
            let bad = if r.checksum_ok {
                ""
            } else {
                " (checksum fails)"
            };
            format!("{}{bad}", r.page)
        })
        .collect();
    let more = match with_rows.len().saturating_sub(named.len()) {
        0 => String::new(),
        n => format!(" and {} more", crate::units::format_count(n as u64)),
    };
    let word = if with_rows.len() == 1 {
        "page"
    } else {
        "pages"
    };
    format!(" from {word} {}{more}", named.join(", "))
}

/// `files`: no server read the tables (each was read from its files alone).
fn table_line(t: &dump::manifest::TableEntry, files: bool) -> String {
    {
        {
            let name = table_label(&t.db, &t.table);
            let rows = crate::units::format_count(t.rows);
            let rows_word = if t.rows == 1 { "row" } else { "rows" };
            match t.status {
                TableStatus::Complete => format!("{name}: complete, {rows} {rows_word}"),
                TableStatus::Partial => {
                    let ranges: Vec<String> = t.lost.iter().map(describe_lost).collect();
                    format!(
                        "{name}: {rows} rows recovered; lost: {} ({})",
                        ranges.join(", "),
                        primary_key_of(t)
                    )
                }
                TableStatus::Doubtful => {
                    let doubts: Vec<String> = t
                        .doubts
                        .iter()
                        .map(|d| format!("{} ({})", d.why, doubted_rows(d)))
                        .collect();
                    let lost = if t.lost.is_empty() {
                        String::new()
                    } else {
                        let ranges: Vec<String> = t.lost.iter().map(describe_lost).collect();
                        format!("; lost: {} ({})", ranges.join(", "), primary_key_of(t))
                    };
                    format!(
                        "{name}: {rows} rows recovered with doubts: {}{lost}",
                        doubts.join("; ")
                    )
                }
                TableStatus::NoPrimaryKey => format!(
                    "{name}: no primary key, {rows} rows by a plain scan{}",
                    t.note
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                ),
                TableStatus::Unrecoverable => format!(
                    "{name}: not recoverable {}{}",
                    if files {
                        "from its files"
                    } else {
                        "through SQL"
                    },
                    t.note
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                ),
            }
        }
    }
}

/// How a dumped table is named for a person: innops's own tables (its record of the tables it made, in the
/// schema `innops`) are said apart from the user's data.
fn table_label(db: &str, table: &str) -> String {
    if db == crate::procedures::convert::own::SCHEMA {
        format!("{db}.{table} (innops's own record of the tables it made, not user data)")
    } else {
        format!("{db}.{table}")
    }
}

fn primary_key_of(t: &dump::manifest::TableEntry) -> String {
    match t.key_index.as_deref() {
        None | Some("PRIMARY") => format!("primary key ({})", t.primary_key.join(", ")),
        Some(i) => format!("index {i} ({})", t.primary_key.join(", ")),
    }
}

/// A key for a person: `(1, 'b')`.
fn key_text(v: &[serde_json::Value]) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|x| match x {
            serde_json::Value::String(s) => format!("'{s}'"),
            other => other.to_string(),
        })
        .collect();
    format!("({})", parts.join(", "))
}

/// Which rows a doubt covers, for a person: `rows (11), (26)`, `keys from (5) to (90)`, or every row.
fn doubted_rows(d: &dump::Doubt) -> String {
    let key = |v: &Vec<serde_json::Value>| key_text(v);
    if !d.keys.is_empty() {
        let shown: Vec<String> = d.keys.iter().take(5).map(key).collect();
        let more = d.keys.len().saturating_sub(5);
        let more = if more > 0 {
            format!(" and {more} more in manifest.json")
        } else {
            String::new()
        };
        return format!("rows {}{more}", shown.join(", "));
    }
    match &d.range {
        None => "every row of the table".into(),
        Some(r) => {
            let low = r
                .from
                .as_ref()
                .map(|k| format!("from {}", key(k)))
                .or_else(|| r.after.as_ref().map(|k| format!("after {}", key(k))));
            let high =
                r.to.as_ref()
                    .map(|k| format!("to {}", key(k)))
                    .or_else(|| r.before.as_ref().map(|k| format!("before {}", key(k))));
            match (low, high) {
                (None, None) => "every row of the table".into(),
                (l, h) => format!(
                    "keys {}",
                    [l, h].into_iter().flatten().collect::<Vec<_>>().join(" ")
                ),
            }
        }
    }
}

/// `keys after (6970) and before (7044)`, with either end open.
fn describe_lost(r: &dump::manifest::LostRange) -> String {
    let key = |v: &Vec<serde_json::Value>| key_text(v);
    let low = match (&r.after, &r.from) {
        (Some(a), _) => Some(format!("after {}", key(a))),
        (None, Some(f)) => Some(format!("from {}", key(f))),
        _ => None,
    };
    if let (Some(f), Some(t)) = (&r.from, &r.to) {
        if let (true, Some(u)) = (f == t, r.records.first()) {
            return format!(
                "the record with key {} on page {}, not proven a row ({})",
                key(f),
                u.page,
                u.reason
            );
        }
        if f == t {
            let n = r
                .rows
                .map(|n| format!("{} row(s) of ", crate::units::format_count(n)))
                .unwrap_or_default();
            return format!("{n}the rows with key {}", key(f));
        }
    }
    let high = match (&r.before, &r.to) {
        (Some(b), _) => Some(format!("before {}", key(b))),
        (None, Some(t)) => Some(format!("up to {}", key(t))),
        _ => None,
    };
    match (low, high) {
        (Some(l), Some(h)) => format!("keys {l} and {h}"),
        (Some(l), None) => format!("keys {l} to the end"),
        (None, Some(h)) => format!("keys from the start {h}"),
        (None, None) => "every key".into(),
    }
}

/// What the dump step reports: per table its status, rows and lost ranges.
pub(super) fn summary(m: &Manifest) -> serde_json::Value {
    let tables: Vec<serde_json::Value> = m
        .tables
        .iter()
        .map(|t| {
            serde_json::json!({
                "table": format!("{}.{}", t.db, t.table),
                "status": t.status,
                "rows": t.rows,
                "pages": t.pages,
                "page_pass": t.page_pass,
                "lost": t.lost,
                "note": t.note,
            })
        })
        .collect();
    let partial = m
        .tables
        .iter()
        .filter(|t| t.status != TableStatus::Complete)
        .count();
    let mut v = serde_json::json!({ "level": m.level, "tables": tables, "not_complete": partial, "summary": table_lines(m) });
    if let Some(why) = &m.files_only {
        v["files_only"] = why.clone().into();
    }
    v
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_pages_rows_came_from_are_named_up_to_ten_and_the_rest_counted() {
        let page = |n: u32, rows: u64, ok: bool| dump::manifest::PageRows {
            page: n,
            rows,
            unproven: 0,
            checksum_ok: ok,
            problems: Vec::new(),
        };
        let mut p = dump::manifest::PagesRead {
            pages: vec![page(28, 65, false), page(29, 0, true)],
            ..Default::default()
        };
        assert_eq!(from_pages(&p), " from page 28 (checksum fails)");
        p.pages = (4..17).map(|n| page(n, 70, true)).collect();
        assert_eq!(
            from_pages(&p),
            " from pages 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 and 3 more"
        );
        p.pages.clear();
        assert_eq!(from_pages(&p), "");
    }

    use super::*;
    use dump::manifest::LostRange;

    #[test]
    fn innops_s_own_tables_are_said_apart_from_user_data() {
        assert_eq!(table_label("shop", "orders"), "shop.orders");
        assert_eq!(
            table_label("innops", "own_tables"),
            "innops.own_tables (innops's own record of the tables it made, not user data)"
        );
    }

    #[test]
    fn lost_ranges_read_as_keys_between_the_nearest_readable_rows() {
        let r = |after: Option<i64>, from: Option<i64>, before: Option<i64>| LostRange {
            after: after.map(|a| vec![serde_json::json!(a)]),
            from: from.map(|a| vec![serde_json::json!(a)]),
            before: before.map(|a| vec![serde_json::json!(a)]),
            ..Default::default()
        };
        assert_eq!(
            describe_lost(&r(Some(6970), None, Some(7044))),
            "keys after (6970) and before (7044)"
        );
        assert_eq!(
            describe_lost(&r(None, Some(500), None)),
            "keys from (500) to the end"
        );
        assert_eq!(
            describe_lost(&r(None, None, Some(73))),
            "keys from the start before (73)"
        );
        let composite = LostRange {
            after: Some(vec![serde_json::json!(1), serde_json::json!("b")]),
            from: None,
            before: None,
            ..Default::default()
        };
        assert_eq!(describe_lost(&composite), "keys after (1, 'b') to the end");
        let group = LostRange {
            from: Some(vec![serde_json::json!(7)]),
            to: Some(vec![serde_json::json!(7)]),
            rows: Some(2),
            ..Default::default()
        };
        assert_eq!(describe_lost(&group), "2 row(s) of the rows with key (7)");
        let doubt = |keys: Vec<i64>, range: Option<dump::KeyRange>| dump::Doubt {
            kind: dump::DoubtKind::Crash,
            why: "w".into(),
            range,
            keys: keys
                .into_iter()
                .map(|k| vec![serde_json::json!(k)])
                .collect(),
        };
        assert_eq!(doubted_rows(&doubt(vec![11, 26], None)), "rows (11), (26)");
        assert_eq!(
            doubted_rows(&doubt((1..=7).collect(), None)),
            "rows (1), (2), (3), (4), (5) and 2 more in manifest.json"
        );
        let range = dump::KeyRange {
            from: Some(vec![serde_json::json!(5)]),
            to: Some(vec![serde_json::json!(90)]),
            ..Default::default()
        };
        assert_eq!(
            doubted_rows(&doubt(vec![], Some(range))),
            "keys from (5) to (90)"
        );
        assert_eq!(doubted_rows(&doubt(vec![], None)), "every row of the table");
    }
}
