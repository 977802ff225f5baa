//! What no read reached: the lost stretches put back in key order (stretches that meet at a range cut become one
//! range) and what each secondary index still lists inside them. A unit because it turns the readers' raw
//! stretches into the ranges lost.jsonl and the manifest report, after the reading is over.

use mysql::prelude::Queryable;
use mysql::{Conn, Row, Value};

use super::{as_int, json_of, range_conds, Stretch, TableInfo, B};
use crate::sql::quote_ident;

/// Lost stretches in key order of their ranges, those that meet at a range cut joined into one.
pub(super) fn merge_lost(mut lost: Vec<Stretch>, splits: &[Value]) -> Vec<(Option<B>, Option<B>)> {
    let at_cut = |b: &Option<B>, cut: Option<&Value>| match (b, cut) {
        (Some(b), Some(c)) => b.key.len() == 1 && b.key[0] == *c,
        _ => false,
    };
    // Within a range: the one starting at the range's start first, the one ending at its end last.
    // Within a range the middle ones by their lower bound: they are found in probe order, not key order.
    let class = |(i, lo, hi): &Stretch| {
        let starts = i.checked_sub(1).is_some_and(|j| at_cut(lo, splits.get(j)));
        let ends = at_cut(hi, splits.get(*i));
        (
            *i,
            if lo.is_none() || starts {
                0
            } else if ends || hi.is_none() {
                2
            } else {
                1
            },
        )
    };
    lost.sort_by(|x, y| {
        class(x).cmp(&class(y)).then_with(|| match (&x.1, &y.1) {
            (Some(a), Some(b)) => cmp_keys(&a.key, &b.key),
            _ => std::cmp::Ordering::Equal,
        })
    });
    let mut out: Vec<Stretch> = Vec::new();
    for (i, lo, hi) in lost {
        if let Some(prev) = out.last_mut() {
            let cut = i.checked_sub(1).and_then(|j| splits.get(j));
            if prev.0 + 1 == i && at_cut(&prev.2, cut) && at_cut(&lo, cut) {
                prev.0 = i;
                prev.2 = hi;
                continue;
            }
        }
        out.push((i, lo, hi));
    }
    out.into_iter().map(|(_, lo, hi)| (lo, hi)).collect()
}

/// Key order for sorting what was found: numbers as numbers, anything else by its bytes (the collation's order
/// may differ for strings; only the listing's order depends on it).
fn cmp_keys(a: &[Value], b: &[Value]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (as_int(x), as_int(y)) {
            (Some(p), Some(q)) => p.cmp(&q),
            _ => match (x, y) {
                (Value::Bytes(p), Value::Bytes(q)) => p.cmp(q),
                _ => std::cmp::Ordering::Equal,
            },
        };
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// The rows each secondary index still lists inside each lost stretch: its columns and the primary key, read
/// through that index only, one answer per stretch. An index that cannot be read is said so. One statement per
/// index for all the stretches (a `CASE` names the stretch of each row): a secondary index is not ordered by
/// the primary key, so each statement scans the whole index, and `--pages` can leave many small stretches.
pub(super) fn secondary_rows(
    conn: &mut Conn,
    info: &TableInfo,
    tag: &str,
    lost: &[(Option<B>, Option<B>)],
) -> Vec<serde_json::Value> {
    let mut out: Vec<Vec<serde_json::Value>> = vec![Vec::new(); lost.len()];
    if lost.is_empty() {
        return Vec::new();
    }
    let conds: Vec<String> = lost
        .iter()
        .map(|(lo, hi)| {
            let c = range_conds(info, lo, hi);
            if c.is_empty() {
                "TRUE".to_string()
            } else {
                c.join(" AND ")
            }
        })
        .collect();
    let which = conds
        .iter()
        .enumerate()
        .map(|(i, c)| format!("WHEN {c} THEN {i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let any = conds
        .iter()
        .map(|c| format!("({c})"))
        .collect::<Vec<_>>()
        .join(" OR ");
    for idx in &info.secondary {
        let (index, cols) = (&idx.name, &idx.cols);
        let mut pos: Vec<usize> = cols.clone();
        for p in &info.pk {
            if !pos.contains(p) {
                pos.push(*p);
            }
        }
        let names: Vec<String> = pos.iter().map(|&p| info.columns[p].name.clone()).collect();
        let list = names
            .iter()
            .map(|n| quote_ident(n))
            .collect::<Vec<_>>()
            .join(", ");
        let sql = format!(
            "SELECT {tag} CASE {which} END, {list} FROM {} FORCE INDEX ({}) WHERE {any}",
            info.name.qualified(),
            quote_ident(index)
        );
        let rows: Result<Vec<Row>, _> = conn.query(sql);
        match rows {
            Ok(rows) => {
                let mut per: Vec<Vec<Vec<serde_json::Value>>> = vec![Vec::new(); lost.len()];
                for r in &rows {
                    let Some(i) = r
                        .as_ref(0)
                        .and_then(as_int)
                        .and_then(|i| usize::try_from(i).ok())
                    else {
                        continue;
                    };
                    let Some(bucket) = per.get_mut(i) else {
                        continue;
                    };
                    bucket.push(
                        pos.iter()
                            .enumerate()
                            .map(|(j, &p)| {
                                json_of(
                                    info.columns[p].kind,
                                    r.as_ref(j + 1).unwrap_or(&Value::NULL),
                                )
                            })
                            .collect(),
                    );
                }
                for (o, rows) in out.iter_mut().zip(per) {
                    o.push(serde_json::json!({"index": index, "columns": names, "rows": rows}));
                }
            }
            Err(e) => {
                let error = crate::error::describe_mysql(&e);
                for o in &mut out {
                    o.push(serde_json::json!({"index": index, "columns": names, "error": error}));
                }
            }
        }
    }
    out.into_iter().map(serde_json::Value::Array).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(v: i64) -> Vec<Value> {
        vec![Value::Bytes(v.to_string().into_bytes())]
    }

    #[test]
    fn keys_sort_as_numbers_where_they_are_numbers() {
        use std::cmp::Ordering::*;
        assert_eq!(cmp_keys(&key(9), &key(10)), Less);
        assert_eq!(cmp_keys(&key(-5), &key(3)), Less);
        let s = |t: &str| vec![Value::Bytes(t.as_bytes().to_vec())];
        assert_eq!(cmp_keys(&s("b"), &s("a")), Greater);
        assert_eq!(cmp_keys(&key(4), &key(4)), Equal);
        // A prefix sorts before the key it starts.
        let long = vec![Value::Int(4), Value::Int(1)];
        assert_eq!(cmp_keys(&key(4), &long), Less);
    }

    #[test]
    fn lost_stretches_inside_a_range_are_listed_in_key_order() {
        let lost = vec![
            (0, Some(B::after(key(500))), Some(B::before(key(600)))),
            (0, Some(B::after(key(20))), Some(B::before(key(90)))),
            (0, Some(B::after(key(900))), None),
            (0, None, Some(B::before(key(5)))),
        ];
        let merged = merge_lost(lost, &[]);
        let lows: Vec<Option<Vec<Value>>> = merged
            .iter()
            .map(|(lo, _)| lo.as_ref().map(|b| b.key.clone()))
            .collect();
        assert_eq!(
            lows,
            vec![None, Some(key(20)), Some(key(500)), Some(key(900))]
        );
    }

    #[test]
    fn lost_stretches_meeting_at_a_cut_become_one_range() {
        let cuts = [Value::Bytes(b"100".to_vec()), Value::Bytes(b"200".to_vec())];
        let below = |v: &Value| B {
            key: vec![v.clone()],
            incl: false,
        };
        let from = |v: &Value| B {
            key: vec![v.clone()],
            incl: true,
        };
        let lost = vec![
            // Range 2 entirely unreadable, range 1 unreadable at both ends, range 0 at its end and inside.
            (2, Some(from(&cuts[1])), Some(B::before(key(260)))),
            (1, Some(B::after(key(150))), Some(below(&cuts[1]))),
            (0, Some(B::after(key(10))), Some(B::before(key(20)))),
            (1, Some(from(&cuts[0])), Some(B::before(key(120)))),
            (0, Some(B::after(key(90))), Some(below(&cuts[0]))),
        ];
        let merged = merge_lost(lost, &cuts);
        assert_eq!(
            merged,
            vec![
                (Some(B::after(key(10))), Some(B::before(key(20)))),
                (Some(B::after(key(90))), Some(B::before(key(120)))),
                (Some(B::after(key(150))), Some(B::before(key(260)))),
            ]
        );
        // Stretches of neighbouring ranges with readable rows between them stay apart: one that does not reach
        // the cut, or one after the cut that does not start at it (rows from the cut on were read).
        let apart = vec![
            (0, Some(B::after(key(40))), Some(B::before(key(50)))),
            (1, Some(B::after(key(150))), Some(below(&cuts[1]))),
            (2, Some(B::after(key(230))), Some(B::before(key(240)))),
        ];
        assert_eq!(merge_lost(apart.clone(), &cuts).len(), 3);
        let one_side = vec![
            (0, Some(B::after(key(90))), Some(below(&cuts[0]))),
            (1, Some(B::after(key(130))), Some(B::before(key(140)))),
        ];
        assert_eq!(merge_lost(one_side, &cuts).len(), 2);
        let other_side = vec![
            (0, Some(B::after(key(40))), Some(B::before(key(50)))),
            (1, Some(from(&cuts[0])), Some(B::before(key(140)))),
        ];
        assert_eq!(merge_lost(other_side, &cuts).len(), 2);
        // A stretch that ends at a cut the next range read from is kept as it is, bounded by the cut.
        let lone = vec![(0, Some(B::after(key(90))), Some(below(&cuts[0])))];
        assert_eq!(
            merge_lost(lone, &cuts),
            vec![(Some(B::after(key(90))), Some(below(&cuts[0])))]
        );
    }
}
