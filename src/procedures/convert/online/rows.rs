//! What the online path reads and writes row by row: primary-key ranges and key sets as SQL, the short table
//! locks the copy and the comparisons hold (taken with a bounded wait and backed off, never queueing writers
//! behind a stuck lock), a range's row hash on either table, and the comparison of single keys.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mysql::{Conn, Value};

use crate::error::{refused, Failure};
use crate::procedures::convert::keys::{key_bound, Bound, KeyColumn};
use crate::procedures::convert::schema::TableInfo;
use crate::procedures::convert::verify::{encode_value, Method, RowSum};
use crate::sql::{qualified, Queryable};

/// A key's values as read by [`crate::procedures::convert::keys::read_list`].
pub type Key = Vec<Value>;

/// The SQL of "after `lo`" and "at or before `hi`" for a primary-key range; `TRUE` where a side is open.
pub fn range(
    key: &[KeyColumn],
    lo: Option<&Key>,
    hi: Option<&Key>,
) -> anyhow::Result<(String, Vec<Value>)> {
    let mut parts = Vec::new();
    let mut params = Vec::new();
    if let Some(lo) = lo {
        let (p, v) = key_bound(key, lo, Bound::After)?;
        parts.push(format!("({p})"));
        params.extend(v);
    }
    if let Some(hi) = hi {
        let (p, v) = key_bound(key, hi, Bound::Before)?;
        let (e, w) = equal_key(key, hi);
        parts.push(format!("({p} OR {e})"));
        params.extend(v);
        params.extend(w);
    }
    if parts.is_empty() {
        parts.push("TRUE".into());
    }
    Ok((parts.join(" AND "), params))
}

/// `(k1 = ? AND k2 = ?)` for one key.
pub fn equal_key(key: &[KeyColumn], values: &Key) -> (String, Vec<Value>) {
    let mut params = Vec::new();
    let ands: Vec<String> = key
        .iter()
        .zip(values)
        .map(|(k, v)| k.equal(v, &mut params))
        .collect();
    (format!("({})", ands.join(" AND ")), params)
}

/// `(key = …) OR (key = …)` for a set of keys.
pub fn key_set(key: &[KeyColumn], keys: &[Key]) -> (String, Vec<Value>) {
    let mut params = Vec::new();
    let ors: Vec<String> = keys
        .iter()
        .map(|k| {
            let (s, p) = equal_key(key, k);
            params.extend(p);
            s
        })
        .collect();
    (
        if ors.is_empty() {
            "FALSE".into()
        } else {
            ors.join(" OR ")
        },
        params,
    )
}

/// The row hash of `table`'s rows matching `pred`, read through its primary key.
pub fn range_sum(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    table: &str,
    pred: &str,
    params: Vec<Value>,
) -> anyhow::Result<RowSum> {
    let sql = format!(
        "SELECT {tag} {} FROM {} FORCE INDEX (PRIMARY) WHERE {pred}",
        crate::procedures::convert::verify::hashed_columns(info),
        qualified(&info.schema, table)
    );
    let mut sum = RowSum::default();
    let mut buf = Vec::with_capacity(512);
    let mut result = conn.exec_iter(sql, params)?;
    while let Some(set) = result.iter() {
        for row in set {
            let row = row?;
            buf.clear();
            for v in row.unwrap() {
                encode_value(&mut buf, &v);
            }
            sum.add_row(&buf, Method::RowXxh3);
        }
    }
    Ok(sum)
}

/// Each key of `keys` found in `table`, with its row's bytes.
pub fn rows_by_key(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    table: &str,
    key: &[KeyColumn],
    keys: &[Key],
) -> anyhow::Result<BTreeMap<Vec<u8>, Vec<u8>>> {
    let (pred, params) = key_set(key, keys);
    let sql = format!(
        "SELECT {tag} {}, {} FROM {} FORCE INDEX (PRIMARY) WHERE {pred}",
        crate::procedures::convert::keys::read_list(key),
        crate::procedures::convert::verify::hashed_columns(info),
        qualified(&info.schema, table)
    );
    let mut out = BTreeMap::new();
    let rows: Vec<mysql::Row> = conn.exec(sql, params)?;
    for row in rows {
        let values = row.unwrap();
        let (k, rest) = values.split_at(key.len());
        out.insert(encode(k), encode(rest));
    }
    Ok(out)
}

/// Values as bytes (for comparing keys and rows).
pub fn encode(values: &[Value]) -> Vec<u8> {
    let mut buf = Vec::new();
    for v in values {
        encode_value(&mut buf, v);
    }
    buf
}

/// The keys of `keys` whose rows differ between the source and the shadow (present in one only, or unequal).
pub fn differing(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    shadow: &str,
    key: &[KeyColumn],
    keys: &[Key],
) -> anyhow::Result<Vec<Key>> {
    let a = rows_by_key(conn, tag, info, &info.name, key, keys)?;
    let b = rows_by_key(conn, tag, info, shadow, key, keys)?;
    Ok(keys
        .iter()
        .filter(|k| {
            let e = encode(k);
            a.get(&e) != b.get(&e)
        })
        .cloned()
        .collect())
}

/// Copy again the rows of `pred` from the source to the shadow: what the shadow holds there goes first.
pub fn recopy(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    shadow: &str,
    pred: &str,
    params: Vec<Value>,
) -> anyhow::Result<()> {
    let cols = crate::procedures::convert::copy::column_list(info);
    let shadow = qualified(&info.schema, shadow);
    conn.exec_drop(
        format!("DELETE {tag} FROM {shadow} WHERE {pred}"),
        params.clone(),
    )?;
    conn.exec_drop(
        format!(
            "INSERT {tag} INTO {shadow} ({cols}) SELECT {cols} FROM {} FORCE INDEX (PRIMARY) WHERE {pred}",
            info.qualified()
        ),
        params,
    )?;
    Ok(())
}

/// How long and how often a short lock is tried before the run gives up on it.
#[derive(Debug, Clone, Copy)]
pub struct LockBound {
    /// Seconds one attempt waits (`lock_wait_timeout`).
    pub wait_s: u64,
    /// Attempts before the run is refused.
    pub tries: u32,
}

/// Run `stmt` (a lock, or a statement that takes one) with `lock_wait_timeout` set to the bound; when it times
/// out, back off (writers that queued behind the attempt go on meanwhile) and try again, up to the bound's
/// tries. Each attempt is counted in `attempts`. Ctrl-C stops between attempts.
pub fn with_bounded_lock(
    conn: &mut Conn,
    tag: &str,
    bound: LockBound,
    stmt: &str,
    what: &str,
    abort: &dyn Fn() -> bool,
    attempts: &mut u32,
) -> anyhow::Result<()> {
    conn.query_drop(format!(
        "SET {tag} SESSION lock_wait_timeout = {}",
        bound.wait_s.max(1)
    ))?;
    let mut backoff = Duration::from_millis(250);
    loop {
        *attempts += 1;
        match conn.query_drop(stmt) {
            Ok(()) => return Ok(()),
            Err(mysql::Error::MySqlError(e)) if e.code == 1205 => {
                if *attempts >= bound.tries {
                    let who = crate::plan::lock::lock_holder_candidates(conn).unwrap_or_default();
                    return Err(refused(format!(
                        "could not {what} within {} s in {} tries: a long transaction or statement holds the table (sessions that may hold it: {who}); writers were never held longer than one try — retry when it is done, or raise --cutover-lock-wait",
                        bound.wait_s, bound.tries
                    )));
                }
                if abort() {
                    return Err(Failure::Interrupted(format!(
                        "interrupted while trying to {what}"
                    ))
                    .into());
                }
                let until = Instant::now() + backoff;
                while Instant::now() < until && !abort() {
                    std::thread::sleep(Duration::from_millis(20));
                }
                backoff = (backoff * 2).min(Duration::from_secs(4));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::procedures::convert::keys::KeyKind;

    fn k(name: &str) -> KeyColumn {
        KeyColumn {
            name: name.into(),
            kind: KeyKind::Typed,
        }
    }

    #[test]
    fn a_range_is_after_its_low_key_and_at_or_before_its_high_key() {
        let key = [k("a"), k("b")];
        let (sql, params) = range(
            &key,
            Some(&vec![Value::Int(1), Value::Int(2)]),
            Some(&vec![Value::Int(5), Value::Int(6)]),
        )
        .unwrap();
        assert_eq!(
            sql,
            "((`a` > ?) OR (`a` = ? AND `b` > ?)) AND (((`a` < ? OR `a` IS NULL)) OR (`a` = ? AND (`b` < ? OR `b` IS NULL)) OR (`a` = ? AND `b` = ?))"
        );
        assert_eq!(params.len(), 8);
        assert_eq!(range(&key, None, None).unwrap().0, "TRUE");
    }

    #[test]
    fn a_key_set_matches_each_key_whole() {
        let key = [k("a"), k("b")];
        let (sql, params) = key_set(
            &key,
            &[
                vec![Value::Int(1), Value::Int(2)],
                vec![Value::Int(3), Value::Int(4)],
            ],
        );
        assert_eq!(sql, "(`a` = ? AND `b` = ?) OR (`a` = ? AND `b` = ?)");
        assert_eq!(
            params,
            vec![Value::Int(1), Value::Int(2), Value::Int(3), Value::Int(4)]
        );
        assert_eq!(key_set(&key, &[]).0, "FALSE");
    }
}
