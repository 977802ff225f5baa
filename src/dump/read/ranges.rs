//! The ways a table's key space is read as a whole: cut into ranges read at once (and a range whose start could
//! not be reached read on from the range before it), walked group by group along an index whose values repeat,
//! or scanned plainly when there is no key. A unit because these decide which sessions read what; each read
//! itself is the scan's.

use mysql::prelude::Queryable;
use mysql::{Conn, Value};

use super::{as_int, DumpOptions, Reader, Shared, Stretch, TableInfo, Unopenable, B};
use crate::dump::manifest::TableEntry;
use crate::sql::quote_ident;

/// Where to cut an integer-led primary key into `threads` ranges read at once: evenly between MIN and MAX of
/// the leading column. None on a small table, a non-integer key, one thread, or when MIN/MAX cannot be read.
pub(super) fn split_points(conn: &mut Conn, info: &TableInfo, opts: &DumpOptions) -> Vec<Value> {
    if opts.threads < 2 || !info.first_key_is_integer() {
        return Vec::new();
    }
    let estimate: Option<u64> = conn
        .exec_first(
            format!(
                "SELECT {} TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
                opts.tag
            ),
            (&info.name.db, &info.name.table),
        )
        .ok()
        .flatten();
    if estimate.unwrap_or(0) < opts.split_min_rows {
        return Vec::new();
    }
    let col = quote_ident(&info.columns[info.pk[0]].name);
    let Ok(Some((Some(lo), Some(hi)))) =
        conn.query_first::<(Option<String>, Option<String>), _>(format!(
            "SELECT {} MIN({col}), MAX({col}) FROM {} FORCE INDEX (PRIMARY)",
            opts.tag,
            info.name.qualified()
        ))
    else {
        return Vec::new();
    };
    let (Ok(lo), Ok(hi)) = (lo.parse::<i128>(), hi.parse::<i128>()) else {
        return Vec::new();
    };
    let n = opts.threads as i128;
    let mut out: Vec<i128> = (1..n)
        .map(|i| lo + (hi - lo) * i / n)
        .filter(|c| *c > lo)
        .collect();
    out.dedup();
    out.into_iter()
        .map(|c| Value::Bytes(c.to_string().into_bytes()))
        .collect()
}

/// Read every range (cut at `splits`) in a session of its own, at once.
pub(super) fn read_ranges(sh: &Shared, splits: &[Value]) -> anyhow::Result<()> {
    let bound = |i: usize, lower: bool| -> Option<B> {
        let idx = if lower { i.checked_sub(1)? } else { i };
        splits.get(idx).map(|v| B {
            key: vec![v.clone()],
            incl: lower,
        })
    };
    let ranges: Vec<Stretch> = (0..=splits.len())
        .map(|i| (i, bound(i, true), bound(i, false)))
        .collect();
    let read = |(i, lo, hi): Stretch| -> anyhow::Result<()> {
        let mut r = Reader::new(sh, i)?;
        r.fill(lo, hi)?;
        r.flush()
    };
    if ranges.len() == 1 {
        return read(ranges.into_iter().next().unwrap());
    }
    read_parallel(ranges, &read)?;
    // A range whose start could not be reached: the B-tree descent to its cut goes through a damaged
    // non-leaf page, while the leaf chain from the range before still leads there. Read on from that range's
    // start, past the cut, writing only from the cut.
    let at_cut: Vec<Stretch> = {
        let mut lost = sh.lost.lock().unwrap();
        let (cut, rest): (Vec<Stretch>, Vec<Stretch>) = std::mem::take(&mut *lost)
            .into_iter()
            .partition(|(i, lo, _)| {
                *i > 0
                    && lo
                        .as_ref()
                        .is_some_and(|b| b.incl && bound(*i, true).as_ref() == Some(b))
            });
        *lost = rest;
        cut
    };
    for (i, lo, hi) in at_cut {
        let mut r = Reader::new(sh, i)?;
        let cut = lo.as_ref().and_then(|b| as_int(&b.key[0]));
        r.skip_below = cut;
        let sql = r.select(&bound(i - 1, true), &hi, false, None, false);
        let o = r.run(&sql, true, false)?;
        r.skip_below = None;
        match (&o.last, o.ok) {
            (Some(_), true) => {}
            (Some(last), false) => {
                let after = Some(B::after(r.key_of(last)));
                r.after_asc_error(after, hi)?;
            }
            // Nothing read from the cut on: the stretch stays as it was.
            (None, _) => sh.lost.lock().unwrap().push((i, lo, hi)),
        }
        r.flush()?;
    }
    Ok(())
}

/// Read the ranges in a session each, at once.
fn read_parallel(
    ranges: Vec<Stretch>,
    read: &(dyn Fn(Stretch) -> anyhow::Result<()> + Sync),
) -> anyhow::Result<()> {
    std::thread::scope(|s| {
        let handles: Vec<_> = ranges
            .into_iter()
            .map(|r| s.spawn(move || read(r)))
            .collect();
        let mut first_err = None;
        for h in handles {
            let res = h
                .join()
                .unwrap_or_else(|_| Err(anyhow::anyhow!("a reading thread panicked")));
            if let Err(e) = res {
                // The table cannot be opened: that decides; otherwise the first error.
                if e.downcast_ref::<Unopenable>().is_some() || first_err.is_none() {
                    first_err = Some(e);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    })
}

/// A table walked by an index whose values repeat (no clustered key SQL can name, no unique index): rows in
/// index order, each group of one value together. A read that fails inside a group is followed by the group
/// alone, read again as far as it goes (its rows already written are read and not written again: the order
/// inside a group, the hidden row id's, is the same every time); what is left of the group is lost, counted by
/// the index itself, and the walk goes on after the group. Rows of such a group after its unreadable row
/// cannot be reached through SQL: nothing orders them but the hidden row id.
pub(super) fn walk_groups(sh: &Shared) -> anyhow::Result<()> {
    let mut r = Reader::new(sh, 0)?;
    let mut lo: Option<B> = None;
    loop {
        r.last_group = None;
        let sql = r.select(&lo, &None, false, None, false);
        let o = r.run(&sql, true, false)?;
        if o.ok {
            break;
        }
        // The group the read failed in: the last one it returned rows of (how many of them is counted again
        // below), else the first group after lo, as the index alone lists it.
        let group = match &o.last {
            Some(row) => Some(r.key_of(row)),
            None => {
                let sql = r.select(&lo, &None, false, Some(1), true);
                r.run_keys(&sql)?.and_then(|k| k.into_iter().next())
            }
        };
        let Some(g) = group else {
            // No group after lo, yet the read failed: what is left cannot be listed.
            sh.lost.lock().unwrap().push((0, lo, None));
            break;
        };
        r.skip_first = r.rows_in_group_written(&g);
        let sql = format!("{} ORDER BY {}", r.point(&g), sh.key_list);
        let again = r.run(&sql, true, false)?;
        r.skip_first = 0;
        if !again.ok {
            let listed = r.group_size(&g)?;
            let read = again.n;
            if listed.is_none_or(|n| n > read) {
                if let Some(n) = listed {
                    sh.group_lost
                        .lock()
                        .unwrap()
                        .insert(format!("{:?}", g), n - read);
                }
                let at = Some(B {
                    key: g.clone(),
                    incl: true,
                });
                sh.lost.lock().unwrap().push((0, at.clone(), at));
            }
        }
        lo = Some(B::after(g));
    }
    r.flush()
}

/// A table without a primary key: one plain scan, as far as it goes.
pub(super) fn plain_scan(sh: &Shared, entry: &mut TableEntry) -> anyhow::Result<()> {
    let mut r = Reader::new(sh, 0)?;
    let sql = format!("SELECT {} {} FROM {}", sh.opts.tag, sh.select_list, sh.from);
    let o = r.run(&sql, true, false)?;
    r.flush()?;
    entry.note = Some(if o.ok {
        format!(
            "{} has no usable primary key (none, or one on a column prefix or a generated column): it was dumped by a plain scan, which ended without error",
            sh.info.name
        )
    } else {
        format!(
            "{} has no usable primary key (none, or one on a column prefix or a generated column): a plain scan stopped at a read error after {} rows and the rows after the damage cannot be reached through SQL",
            sh.info.name, o.n
        )
    });
    Ok(())
}

impl<'s, 'a> Reader<'s, 'a> {
    /// How many rows of group `g` the last written read returned at its end.
    pub(super) fn rows_in_group_written(&self, g: &[Value]) -> u64 {
        match &self.last_group {
            Some((k, n)) if k.as_slice() == g => *n,
            _ => 0,
        }
    }

    /// How many entries of group `g` the index walked by lists (read from the index alone).
    pub(super) fn group_size(&mut self, g: &[Value]) -> anyhow::Result<Option<u64>> {
        let sql = format!(
            "SELECT {} COUNT(*) FROM {} WHERE {}",
            self.sh.opts.tag,
            self.sh.from,
            self.key_equals(g)
        );
        match self.conn.query_first::<u64, _>(sql) {
            Ok(n) => Ok(n),
            Err(e) => {
                self.failed(&e)?;
                Ok(None)
            }
        }
    }
}
