//! UNIQUE keys whose rows are duplicates under the table's own collation. MyISAM checks uniqueness when a row is
//! written, under the collation of that moment, and never again: a collation changed outside the server (a
//! `.frm` from another table, an upgrade whose collation rules changed) leaves 'A' and 'a' side by side under a
//! case-insensitive UNIQUE key. InnoDB checks every row it is given: the bulk copy's insert is dropped at commit,
//! the deferred copy stops on ERROR 1062 midway, the server's own ALTER names one value of many. So the pre-flight
//! finds them first and names them.
//!
//! How, without holding writers: a `GROUP BY` over the whole key is one MyISAM read, holding the table's read
//! lock for the whole scan. Instead the key's own index is walked in chunks, as [`super::scan`] walks the primary
//! key: each statement reads at most `chunk` rows in the index's order (`FORCE INDEX … ORDER BY key LIMIT
//! chunk`) and groups them under the collation. A group of equal keys can straddle two chunks, so each chunk
//! starts *at* the last key of the one before (`key >= last`, not `>`), and groups only its rows *below* its own
//! last key: every group is counted once, whole, in the chunk where it starts. A group longer than a chunk (the
//! chunk's first and last keys equal under the collation) is a duplicate by itself; the walk then moves past it.
//!
//! What the walk assumes: the index is in order under the collation the table names now. An index built under a
//! collation that sorts differently is corrupt for the server as well (CHECK TABLE says so); there the walk may
//! miss duplicates, never invents one (each group is counted inside one statement), and the copy's own duplicate
//! check (ERROR 1062) still stops the conversion before anything is swapped.

use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::Value;

use super::keys::{
    ident_list, index_columns, key_bound, next_chunk, read_list, value_operand, Bound, KeyColumn,
};
use super::scan::{MAX_CHUNK, TARGET};
use super::schema::{Index, TableInfo};
use crate::plan::{Ctx, Verdict};
use crate::sql::quote_ident;

/// The most duplicate groups a check names (the walk stops there: the DBA has work to do already).
pub const MAX_GROUPS: usize = 10;

/// One group of rows whose keys are equal under the collation.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// The key values of the group's rows as SQL literals, each row's key once: `'A', 'a'`.
    pub values: String,
    /// Rows in the group, or the least it has when it was longer than a chunk.
    pub rows: u64,
    pub at_least: bool,
}

/// What the walk of one key found.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyDuplicates {
    pub index: String,
    pub groups: Vec<Group>,
    pub statements: u64,
    pub longest: Duration,
}

/// The unique keys the collation decides: B-tree keys (hash keys have no order to walk), with a character
/// column, whole (a prefix key's order is not the column's) and ascending. The others, and why they are not
/// walked.
pub fn keys_to_walk(t: &TableInfo, text: impl Fn(&str) -> bool) -> (Vec<&Index>, Vec<String>) {
    let (mut walk, mut skipped) = (Vec::new(), Vec::new());
    for ix in t.indexes.iter().filter(|i| i.unique) {
        if !ix.parts.iter().any(|p| text(&p.column)) {
            continue;
        }
        let why = if ix.kind != "BTREE" {
            Some("a hash key")
        } else if ix.parts.iter().any(|p| p.sub_part.is_some()) {
            Some("a prefix key")
        } else if ix.parts.iter().any(|p| p.desc) {
            Some("a descending key")
        } else {
            None
        };
        match why {
            None => walk.push(ix),
            Some(w) => skipped.push(format!("`{}` ({w})", ix.name)),
        }
    }
    (walk, skipped)
}

/// A column compared under a collation: a character type in a character set other than `binary`.
fn is_text(t: &TableInfo, column: &str) -> bool {
    t.columns.iter().any(|c| {
        c.name == column
            && matches!(
                c.data_type.as_str(),
                "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext"
            )
    })
}

/// The pre-flight check: no UNIQUE key holds rows that are equal under the table's collation.
pub fn check_unique_keys_hold(ctx: &mut Ctx, t: &TableInfo) -> anyhow::Result<Verdict> {
    let expected = "every UNIQUE key unique under its collation";
    let (walk, skipped) = keys_to_walk(t, |c| is_text(t, c));
    let skipped_note = if skipped.is_empty() {
        String::new()
    } else {
        format!(
            "; not walked: {} (a duplicate there stops the copy with nothing swapped)",
            skipped.join(", ")
        )
    };
    if walk.is_empty() {
        return Ok(Verdict::pass(
            format!("no UNIQUE key over a character column{skipped_note}"),
            expected,
        ));
    }
    let keys = walk.len();
    let mut found = Vec::new();
    let (mut statements, mut longest) = (0u64, Duration::ZERO);
    for ix in walk {
        let d = walk_key(ctx, t, ix)?;
        statements += d.statements;
        longest = longest.max(d.longest);
        if !d.groups.is_empty() {
            found.push(d);
        }
    }
    let how = format!(
        "read in {statements} short statement(s), the longest {} ms",
        longest.as_millis()
    );
    if found.is_empty() {
        return Ok(Verdict::pass(
            format!("no duplicates in {keys} key(s) ({how}){skipped_note}"),
            expected,
        ));
    }
    let named: Vec<String> = found.iter().map(describe).collect();
    Ok(Verdict::fail(
        named.join("; "),
        expected,
        format!(
            "{}: {}, which its collation counts as equal (the index was built under another collation) and InnoDB refuses: make each key unique (UPDATE or delete the rows) or give the column a collation that tells them apart (ALTER TABLE {} MODIFY … COLLATE …_bin), then convert",
            t.display(),
            named.join("; "),
            t.qualified()
        ),
    ))
}

fn describe(d: &KeyDuplicates) -> String {
    let groups: Vec<String> = d
        .groups
        .iter()
        .map(|g| {
            format!(
                "{} ({}{} rows)",
                g.values,
                if g.at_least { "at least " } else { "" },
                g.rows
            )
        })
        .collect();
    format!(
        "the UNIQUE key `{}` holds duplicates {}{}",
        d.index,
        groups.join(", "),
        if d.groups.len() >= MAX_GROUPS {
            " and perhaps more"
        } else {
            ""
        }
    )
}

/// Walk one unique key in chunks of its own index and collect the groups of rows equal under the collation.
pub fn walk_key(ctx: &mut Ctx, t: &TableInfo, ix: &Index) -> anyhow::Result<KeyDuplicates> {
    let tag = ctx.tag();
    let names: Vec<String> = ix.parts.iter().map(|p| p.column.clone()).collect();
    let conn = ctx.conn()?;
    let key = index_columns(conn, &tag, t, &names)?;
    let cols = ident_list(&names);
    let reads = read_list(&key);
    let not_null = names
        .iter()
        .map(|c| format!("{} IS NOT NULL", quote_ident(c)))
        .collect::<Vec<_>>()
        .join(" AND ");
    // Each row's key as SQL literals, `('A', 1)` for a key of two columns.
    let shown = if names.len() == 1 {
        format!("QUOTE({cols})")
    } else {
        format!(
            "CONCAT('(', CONCAT_WS(', ', {}), ')')",
            names
                .iter()
                .map(|c| format!("QUOTE({})", quote_ident(c)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let index = quote_ident(&ix.name);
    let source = format!("{} FORCE INDEX ({index})", t.qualified());
    let fixed = crate::testhooks::chunk_rows();
    // Two rows at least: a chunk of one could never hold a group.
    let mut chunk = fixed.unwrap_or(1000).clamp(2, MAX_CHUNK);
    let mut from: Option<(Vec<Value>, bool)> = None;
    let mut out = KeyDuplicates {
        index: ix.name.clone(),
        groups: Vec::new(),
        statements: 0,
        longest: Duration::ZERO,
    };
    let timed = |out: &mut KeyDuplicates, started: Instant| {
        let took = started.elapsed();
        out.statements += 1;
        out.longest = out.longest.max(took);
        took
    };
    while out.groups.len() < MAX_GROUPS {
        let (pred, params) = match &from {
            None => ("TRUE".to_string(), Vec::new()),
            Some((k, strict)) => key_bound(
                &key,
                k,
                if *strict {
                    Bound::After
                } else {
                    Bound::AtOrAfter
                },
            )?,
        };
        // The chunk's last key (none: this chunk is the last).
        let started = Instant::now();
        let last: Option<mysql::Row> = conn.exec_first(
            format!(
                "SELECT {tag} {reads} FROM {source} WHERE {pred} ORDER BY {cols} LIMIT 1 OFFSET {}",
                chunk - 1
            ),
            params.clone(),
        )?;
        timed(&mut out, started);
        let last: Option<Vec<Value>> = last.map(mysql::Row::unwrap);
        // A chunk whose last key equals the key it started at is one group, longer than the chunk.
        let whole_group = match (&from, &last) {
            (Some((f, false)), Some(l)) => same_key(conn, &tag, &key, f, l)?,
            _ => false,
        };
        let (below, mut below_params) = match &last {
            Some(l) if !whole_group => {
                let (p, v) = key_bound(&key, l, Bound::Before)?;
                (format!(" AND ({p})"), v)
            }
            _ => (String::new(), Vec::new()),
        };
        let mut all = params;
        all.append(&mut below_params);
        let started = Instant::now();
        let groups: Vec<(Option<String>, u64)> = conn.exec(
            format!(
                "SELECT {tag} SUBSTRING(GROUP_CONCAT({shown} ORDER BY CAST({shown} AS BINARY) SEPARATOR ', '), 1, 200), COUNT(*) FROM (SELECT {cols} FROM {source} WHERE {pred} ORDER BY {cols} LIMIT {chunk}) AS innops_chunk WHERE {not_null}{below} GROUP BY {cols} HAVING COUNT(*) > 1 ORDER BY {cols} LIMIT {MAX_GROUPS}"
            ),
            all,
        )?;
        let took = timed(&mut out, started);
        for (values, rows) in groups {
            out.groups.push(Group {
                values: values.unwrap_or_default(),
                rows,
                at_least: whole_group,
            });
        }
        match last {
            None => break,
            Some(l) => from = Some((l, whole_group)),
        }
        chunk = fixed
            .unwrap_or_else(|| next_chunk(chunk, took, TARGET))
            .clamp(2, MAX_CHUNK);
    }
    out.groups.truncate(MAX_GROUPS);
    Ok(out)
}

/// Two keys equal under the key's collations, asked of the server (no table read).
fn same_key(
    conn: &mut mysql::Conn,
    tag: &str,
    key: &[KeyColumn],
    a: &[Value],
    b: &[Value],
) -> anyhow::Result<bool> {
    let mut params = Vec::new();
    let mut ands = Vec::new();
    for ((k, x), y) in key.iter().zip(a).zip(b) {
        let op = value_operand(k);
        ands.push(format!("{op} <=> {op}"));
        params.push(x.clone());
        params.push(y.clone());
    }
    let same: Option<Option<i64>> =
        conn.exec_first(format!("SELECT {tag} {}", ands.join(" AND ")), params)?;
    Ok(same.flatten() == Some(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedures::convert::keys::KeyKind;

    fn text(name: &str) -> KeyColumn {
        KeyColumn {
            name: name.into(),
            kind: KeyKind::Text {
                charset: "utf8mb4".into(),
                collation: "utf8mb4_general_ci".into(),
            },
        }
    }

    #[test]
    fn a_chunk_starts_at_the_last_key_so_a_group_across_the_border_is_read_whole() {
        let key = [text("a"), text("b")];
        let last = [Value::from("41"), Value::from("61")];
        let (p, v) = key_bound(&key, &last, Bound::AtOrAfter).unwrap();
        assert_eq!(
            p,
            "(`a` > CONVERT(UNHEX(?) USING utf8mb4) COLLATE utf8mb4_general_ci) OR (`a` = CONVERT(UNHEX(?) USING utf8mb4) COLLATE utf8mb4_general_ci AND (`b` > CONVERT(UNHEX(?) USING utf8mb4) COLLATE utf8mb4_general_ci OR `b` = CONVERT(UNHEX(?) USING utf8mb4) COLLATE utf8mb4_general_ci))"
        );
        assert_eq!(v.len(), 4);
    }

    #[test]
    fn null_sorts_first_in_every_bound() {
        let key = [text("a")];
        let last = [Value::NULL];
        assert_eq!(key_bound(&key, &last, Bound::Before).unwrap().0, "(FALSE)");
        assert_eq!(
            key_bound(&key, &last, Bound::After).unwrap().0,
            "(`a` IS NOT NULL)"
        );
        assert_eq!(
            key_bound(&key, &last, Bound::AtOrAfter).unwrap().0,
            "((`a` IS NOT NULL OR `a` IS NULL))"
        );
        let (p, _) = key_bound(&key, &[Value::from("41")], Bound::Before).unwrap();
        assert_eq!(
            p,
            "((`a` < CONVERT(UNHEX(?) USING utf8mb4) COLLATE utf8mb4_general_ci OR `a` IS NULL))"
        );
    }
}
