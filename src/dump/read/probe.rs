//! Probing a stretch whose rows next to both ends are unreadable: where to probe (the keys a secondary index
//! lists, integers by bisection and galloping, strings the server ranks in the column's collation) and the
//! bisection that spends the probe budget. A unit because it is the one search of the dump: everything here
//! decides which key to try next; what a probe finds is read by the scan.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use mysql::prelude::Queryable;
use mysql::{Row, Value};

use super::{as_int, literal, range_where, Reader, B};
use crate::sql::quote_ident;

impl<'s, 'a> Reader<'s, 'a> {
    /// (lo, hi) where the rows next to both ends are unreadable: probe inside; what no probe reaches is lost.
    /// Probe points come from a readable secondary index (the keys it lists), else from the key's type at the
    /// first column where the bounds differ (and one column deeper on either side): integers by bisection,
    /// galloping away from a known key where the other side is open (the end of the table is unknown when the
    /// last leaf is bad); strings by candidates the server itself ranks in the column's collation.
    pub(super) fn gap(&mut self, lo: Option<B>, hi: Option<B>) -> anyhow::Result<()> {
        self.span = (lo.clone(), hi.clone());
        // The budget grows with the damage: each distinct page the server reported bad can hide a readable
        // stretch behind it (bounded, so a table of garbage ends).
        let damaged = self.sh.explained.lock().unwrap().len();
        let mut budget = self.sh.opts.probe_budget * (1 + damaged.min(63));
        for space in self.probe_spaces(&lo, &hi) {
            if self.probe(space, &lo, &hi, &mut budget)? {
                return Ok(());
            }
        }
        self.sh.lost.lock().unwrap().push((self.range, lo, hi));
        Ok(())
    }

    /// Probe one space; true when a probe found rows (the stretch was then handled by the recursion).
    fn probe(
        &mut self,
        space: Space,
        lo: &Option<B>,
        hi: &Option<B>,
        budget: &mut usize,
    ) -> anyhow::Result<bool> {
        let (prefix, points, a, mut b, gallop) = match space {
            Space::List(keys) => {
                let n = keys.len() as i128;
                (Vec::new(), Some(keys), -1, n, Vec::new())
            }
            Space::Ints {
                prefix,
                a,
                b,
                gallop,
            } => (prefix, None, a, b, gallop),
        };
        let at = |c: i128| -> B {
            let key = match &points {
                Some(keys) => keys[c as usize].clone(),
                None => {
                    let mut k = prefix.clone();
                    k.push(match i64::try_from(c) {
                        Ok(i) => Value::Int(i),
                        Err(_) => Value::UInt(u64::try_from(c).unwrap_or(u64::MAX)),
                    });
                    k
                }
            };
            B { key, incl: true }
        };
        let probe_at = |r: &mut Self, c: i128| -> anyhow::Result<Said> {
            let probe = Some(at(c));
            let sql = r.select(&probe, hi, false, None, false);
            let o = r.run(&sql, true, false)?;
            if let Some(first) = o.first {
                // A readable stretch from the probe: finish it, then search below its first row.
                if !o.ok {
                    let last = o.last.as_ref().map(|x| r.key_of(x)).unwrap_or_default();
                    r.after_asc_error(Some(B::after(last)), hi.clone())?;
                }
                r.resume_below(lo.clone(), Some(B::before(first)))?;
                return Ok(Said::Found);
            }
            Ok(if o.ok { Said::Empty } else { Said::Failed })
        };
        let spent = |r: &Self, budget: &usize| {
            *budget == 0 || r.sh.reconnects.load(Ordering::SeqCst) >= r.sh.opts.max_reconnects
        };
        // Galloping from an origin: o+1, o+2, o+4, … (or o-1, o-2, …) until past the window.
        for (origin, up) in gallop {
            let mut step: i128 = 1;
            loop {
                let c = if up { origin + step } else { origin - step };
                if c <= a || c >= b {
                    if (up && c >= b) || (!up && c <= a) {
                        break;
                    }
                    step = step.saturating_mul(2);
                    continue;
                }
                if spent(self, budget) {
                    break;
                }
                *budget -= 1;
                match probe_at(self, c)? {
                    Said::Found => return Ok(true),
                    Said::Empty => b = c,
                    Said::Failed => {}
                }
                step = step.saturating_mul(2);
            }
        }
        bisect(a, b, |c| {
            if spent(self, budget) {
                return Ok(None);
            }
            *budget -= 1;
            probe_at(self, c).map(Some)
        })
    }

    /// Where to probe inside (lo, hi), in the order to try.
    fn probe_spaces(&mut self, lo: &Option<B>, hi: &Option<B>) -> Vec<Space> {
        if let Some(keys) = self.candidates(lo, hi) {
            return vec![Space::List(keys)];
        }
        let n = self.sh.info.pk.len();
        let lk = lo.as_ref().map(|b| b.key.as_slice());
        let hk = hi.as_ref().map(|b| b.key.as_slice());
        // The first column where the bounds differ (a bound may be a prefix: a cut between parallel reads).
        let mut i = 0;
        while let (Some(l), Some(h)) = (lk, hk) {
            if i + 1 < n && i + 1 < l.len() && i + 1 < h.len() && l[i] == h[i] {
                i += 1;
            } else {
                break;
            }
        }
        let mut out = Vec::new();
        let prefix = lk.or(hk).map(|k| k[..i].to_vec()).unwrap_or_default();
        let lower = lo.as_ref().and_then(|b| {
            let v = b.key.get(i)?;
            // Only an inclusive bound ending at this column lets its value in: the rest of a bound's group
            // (more columns after this one) is the deeper space's below.
            Some((v.clone(), b.incl && b.key.len() == i + 1))
        });
        let upper = hi.as_ref().and_then(|b| b.key.get(i).cloned());
        out.extend(self.column_space(i, prefix, lower, upper));
        // One column deeper on either side: the rest of the lower bound's group, the start of the upper's.
        if i + 1 < n {
            if let Some(l) = lk.filter(|l| l.len() > i + 1) {
                let v = l[i + 1].clone();
                let incl = lo.as_ref().is_some_and(|b| b.incl) && l.len() == i + 2;
                out.extend(self.column_space(i + 1, l[..=i].to_vec(), Some((v, incl)), None));
            }
            if let Some(h) = hk.filter(|h| h.len() > i + 1) {
                out.extend(self.column_space(
                    i + 1,
                    h[..=i].to_vec(),
                    None,
                    Some(h[i + 1].clone()),
                ));
            }
        }
        out
    }

    /// Probe points for key column `i` after `prefix`, strictly between `lower` (value, and whether the value
    /// itself is in) and `upper` (exclusive).
    fn column_space(
        &mut self,
        i: usize,
        prefix: Vec<Value>,
        lower: Option<(Value, bool)>,
        upper: Option<Value>,
    ) -> Option<Space> {
        let info = self.sh.info;
        let p = info.pk[i];
        if info.is_integer(p) {
            let col = &info.columns[p];
            let bits = match col.data_type.as_str() {
                "tinyint" => 8,
                "smallint" => 16,
                "mediumint" => 24,
                "int" | "integer" => 32,
                _ => 64,
            };
            let (min, max) = if col.unsigned {
                (0i128, (1i128 << bits) - 1)
            } else {
                (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
            };
            let a = match &lower {
                None => min - 1,
                Some((v, incl)) => as_int(v)? - i128::from(*incl),
            };
            let b = match &upper {
                None => max + 1,
                Some(v) => as_int(v)?,
            };
            // Away from the known side; with neither known, out from zero both ways (keys cluster near it).
            let gallop = match (&lower, &upper) {
                (Some(_), None) => vec![(a, true)],
                (None, Some(_)) => vec![(b, false)],
                (None, None) => vec![(0, true), (0, false)],
                (Some(_), Some(_)) => Vec::new(),
            };
            return Some(Space::Ints {
                prefix,
                a,
                b,
                gallop,
            });
        }
        let points = self.string_points(p, lower.as_ref().map(|l| &l.0), upper.as_ref())?;
        Some(Space::List(
            points
                .into_iter()
                .map(|v| {
                    let mut k = prefix.clone();
                    k.push(v);
                    k
                })
                .collect(),
        ))
    }

    /// Strings strictly between `lo` and `hi` in column `p`'s collation, in its order: made from the bounds'
    /// prefixes and a set of characters, then filtered and sorted by the server (which alone knows the
    /// collation's order). None when the column is not a character or binary string, or the server cannot say.
    fn string_points(
        &mut self,
        p: usize,
        lo: Option<&Value>,
        hi: Option<&Value>,
    ) -> Option<Vec<Value>> {
        let col = &self.sh.info.columns[p];
        let binary = matches!(col.data_type.as_str(), "binary" | "varbinary");
        if !binary && !matches!(col.data_type.as_str(), "char" | "varchar") {
            return None;
        }
        let bytes = |v: Option<&Value>| match v {
            Some(Value::Bytes(b)) => Some(b.clone()),
            _ => None,
        };
        let (l, h) = (bytes(lo), bytes(hi));
        let cands = candidate_strings(l.as_deref(), h.as_deref(), binary);
        if cands.is_empty() {
            return None;
        }
        let expr = |lit: &str| -> String {
            match (&col.charset, &col.collation) {
                (Some(cs), Some(co)) if !binary => format!(
                    "CONVERT({lit} USING {}) COLLATE {}",
                    quote_ident(cs),
                    quote_ident(co)
                ),
                _ => format!("CAST({lit} AS BINARY)"),
            }
        };
        let kind = col.kind;
        let union = cands
            .iter()
            .map(|c| {
                format!(
                    "SELECT {} AS x",
                    literal::to_sql(kind, &Value::Bytes(c.clone()))
                )
            })
            .collect::<Vec<_>>()
            .join(" UNION ALL ");
        let mut conds = Vec::new();
        if let Some(v) = lo {
            conds.push(format!(
                "{} > {}",
                expr("x"),
                expr(&literal::to_sql(kind, v))
            ));
        }
        if let Some(v) = hi {
            conds.push(format!(
                "{} < {}",
                expr("x"),
                expr(&literal::to_sql(kind, v))
            ));
        }
        let sql = format!(
            "SELECT {} x FROM ({union}) AS c{} ORDER BY {}",
            self.sh.opts.tag,
            if conds.is_empty() {
                String::new()
            } else {
                format!(" WHERE {}", conds.join(" AND "))
            },
            expr("x")
        );
        let rows: Vec<Row> = self.conn.query(sql).ok()?;
        Some(
            rows.into_iter()
                .filter_map(|r| r.as_ref(0).cloned())
                .collect(),
        )
    }

    /// The primary keys in (lo, hi) listed by the first secondary index that can be read, in key order (at
    /// most a million); None when no secondary index can be read.
    fn candidates(&mut self, lo: &Option<B>, hi: &Option<B>) -> Option<Vec<Vec<Value>>> {
        let info = self.sh.info;
        let wh = range_where(info, lo, hi);
        for index in &info.secondary {
            let sql = format!(
                // Sorted outside the index read: ORDER BY on the table itself would make the optimizer
                // read the clustered index instead; a derived table with LIMIT is materialized first.
                "SELECT {} {keys} FROM (SELECT {keys} FROM {} FORCE INDEX ({}){wh} LIMIT 1000000) AS c ORDER BY {keys}",
                self.sh.opts.tag,
                info.name.qualified(),
                quote_ident(&index.name),
                keys = self.sh.key_list,
            );
            let res = self.conn.query::<Row, _>(&sql);
            if crate::testhooks::dump_trace() {
                match &res {
                    Ok(r) => eprintln!("{sql} -> {} keys", r.len()),
                    Err(e) => eprintln!("{sql} -> {}", crate::error::describe_mysql(e)),
                }
            }
            match res {
                Ok(rows) => return Some(rows.into_iter().map(|r| r.unwrap()).collect()),
                Err(e) => {
                    if self.failed(&e).is_err() {
                        return None;
                    }
                }
            }
        }
        None
    }
}

/// Where [`Reader::gap`] probes.
enum Space {
    /// Keys (full, or a prefix of the key) in key order, probed by bisection of their positions.
    List(Vec<Vec<Value>>),
    /// Integers of one key column after a shared prefix: the open interval (a, b); `gallop`: origins probed
    /// at doubling distances first (true: upwards) where a side was open.
    Ints {
        prefix: Vec<Value>,
        a: i128,
        b: i128,
        gallop: Vec<(i128, bool)>,
    },
}

/// Candidate strings between two bounds: each bound's prefixes around where they part, each followed by one
/// character of a set (the bounds' own characters, digits, letters, common punctuation; for binary strings
/// also the high bytes). The caller has the server keep those strictly between and sort them.
fn candidate_strings(lo: Option<&[u8]>, hi: Option<&[u8]>, binary: bool) -> Vec<Vec<u8>> {
    let mut alphabet: Vec<u8> =
        b" -.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~".to_vec();
    if binary {
        alphabet.extend([0x00, 0x20, 0x40, 0x60, 0x80, 0xA0, 0xC0, 0xE0, 0xFF]);
    }
    for s in [lo, hi].into_iter().flatten() {
        // Characters of the bounds (whole UTF-8 sequences are kept by using only ASCII here, and the bounds'
        // own prefixes below carry their other characters).
        alphabet.extend(s.iter().filter(|c| c.is_ascii_graphic()));
    }
    alphabet.sort_unstable();
    alphabet.dedup();
    let common = match (lo, hi) {
        (Some(l), Some(h)) => l.iter().zip(h).take_while(|(a, b)| a == b).count(),
        _ => 0,
    };
    let mut out: Vec<Vec<u8>> = Vec::new();
    let char_start = |s: &[u8], k: usize| binary || k == s.len() || (s[k] & 0xC0) != 0x80;
    for s in [lo, hi].into_iter().flatten() {
        // Every prefix up to 32 bytes (short ones reach far from the bound, in either direction of an open
        // side), and those around where the bounds part.
        let near = common.saturating_sub(1)..=s.len().min(common + 6);
        for k in 0..=s.len() {
            if !(k <= 32 || near.contains(&k)) || !char_start(s, k) {
                continue;
            }
            for &c in &alphabet {
                let mut v = s[..k].to_vec();
                v.push(c);
                out.push(v);
            }
        }
    }
    if lo.is_none() && hi.is_none() {
        out.extend(alphabet.iter().map(|&c| vec![c]));
    }
    out.sort();
    out.dedup();
    out
}

/// What one probe at c said: rows found (and handled), nothing from c up to the stretch's end, or an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Said {
    Found,
    Empty,
    Failed,
}

/// Bisection over the candidates strictly between `a` and `b`: `probe(c)` probes candidate c (None once the
/// budget is spent). True as soon as a probe found rows. A failed probe leaves both halves to search; an empty
/// one (nothing from c up) leaves only what is below c. Every candidate is probed while the budget lasts, the
/// last one of a window too.
fn bisect(
    a: i128,
    b: i128,
    mut probe: impl FnMut(i128) -> anyhow::Result<Option<Said>>,
) -> anyhow::Result<bool> {
    let mut windows: VecDeque<(i128, i128)> = [(a, b)].into();
    while let Some((wa, wb)) = windows.pop_front() {
        if wb - wa < 2 {
            continue;
        }
        let c = wa + (wb - wa) / 2;
        match probe(c)? {
            None => break,
            Some(Said::Found) => return Ok(true),
            Some(Said::Empty) => {
                // Nothing from the probe up to hi: only below it is left.
                windows.retain(|w| w.0 < c);
                windows.iter_mut().for_each(|w| w.1 = w.1.min(c));
                windows.push_back((wa, c));
            }
            Some(Said::Failed) => {
                windows.push_back((wa, c));
                windows.push_back((c, wb));
            }
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bisection_probes_every_candidate_while_the_budget_lasts() {
        // Every probe fails (damage everywhere): each candidate strictly between a and b is probed once.
        for (a, b) in [(-1, 1), (0, 2), (0, 3), (10, 20), (-1, 7)] {
            let mut seen = Vec::new();
            let found = bisect(a, b, |c| {
                seen.push(c);
                Ok(Some(Said::Failed))
            })
            .unwrap();
            assert!(!found);
            seen.sort();
            assert_eq!(seen, ((a + 1)..b).collect::<Vec<_>>(), "({a}, {b})");
        }
        // One candidate (a list of one key): probed, and found.
        assert!(bisect(-1, 1, |c| Ok(Some(if c == 0 {
            Said::Found
        } else {
            Said::Failed
        })))
        .unwrap());
        // A readable row only at the last candidate of a window.
        assert!(bisect(0, 9, |c| Ok(Some(if c == 8 {
            Said::Found
        } else {
            Said::Failed
        })))
        .unwrap());
        // Empty at c: nothing at or above c is probed again.
        let mut seen = Vec::new();
        bisect(0, 100, |c| {
            seen.push(c);
            Ok(Some(if c >= 50 { Said::Empty } else { Said::Failed }))
        })
        .unwrap();
        assert_eq!(seen.iter().filter(|&&c| c >= 50).count(), 1, "{seen:?}");
        assert_eq!(seen.iter().filter(|&&c| c < 50).count(), 49, "{seen:?}");
        // The budget ends the search.
        let mut n = 0;
        let found = bisect(0, 1000, |_| {
            n += 1;
            Ok(if n > 5 { None } else { Some(Said::Failed) })
        })
        .unwrap();
        assert!(!found);
        assert_eq!(n, 6);
    }

    #[test]
    fn candidate_strings_reach_far_from_an_open_side_and_near_where_the_bounds_part() {
        let c = candidate_strings(Some(b"Key-013329"), None, false);
        // Short prefixes reach past the bound's own neighbourhood: 'Key_' sorts after every 'Key-…'.
        assert!(c.contains(&b"Key_".to_vec()), "{}", c.len());
        assert!(c.contains(&b"L".to_vec()));
        // Every candidate extends a prefix of the bound by one character.
        assert!(c
            .iter()
            .all(|x| b"Key-013329".starts_with(&x[..x.len() - 1])));
        let both = candidate_strings(Some(b"key_000100"), Some(b"key_000300"), false);
        assert!(both.contains(&b"key_0002".to_vec()));
        // A multi-byte character is never cut in two.
        let utf8 = candidate_strings(Some("aé".as_bytes()), None, false);
        assert!(utf8.iter().all(|x| std::str::from_utf8(x).is_ok()));
        // Binary strings get high bytes too.
        assert!(candidate_strings(Some(b"a"), None, true).contains(&vec![0xFF]));
    }
}
