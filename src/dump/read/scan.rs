//! One read and what it watches: the ascending scan of a stretch, the statement that streams its rows to the
//! file, and the fallbacks after an error (row by row up, then a descending scan from the far end). A unit
//! because every other part of the table's read (probes, ranges, group walks, confirmation) goes through these
//! reads, and the doubts a read raises (a crash, keys out of order, impossible dates) are judged while it streams.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;

use mysql::prelude::Queryable;
use mysql::{Row, Value};

use super::confirm::{corruption_since, page_of};
use super::writer::{flush_parts, write_row_parts};
use super::{
    as_int, is_gone, key_into, key_json, key_of, range_where, status_of, xcheck, CrashDoubt,
    Outcome, Reader, Shared, Unopenable, B, CRASH_WINDOW, UNOPENABLE,
};
use crate::dump::manifest::{Doubt, DoubtKind, KeyRange};
use crate::dump::{literal, prepare_session};
use crate::sql::quote_ident;

impl<'s, 'a> Reader<'s, 'a> {
    pub(super) fn new(sh: &'s Shared<'a>, range: usize) -> anyhow::Result<Self> {
        let mut conn = sh.connector.connect()?;
        prepare_session(&mut conn, &sh.opts.tag)?;
        Ok(Reader {
            sh,
            range,
            conn,
            kinds: sh.info.columns.iter().map(|c| c.kind).collect(),
            buf: Vec::with_capacity(sh.opts.chunk_bytes + 64 * 1024),
            rows: 0,
            hash: 0,
            crash: None,
            xbuf: xcheck::Recorded::new(sh.xs.len()),
            skip_below: None,
            skip_first: 0,
            last_group: None,
            span: (None, None),
        })
    }

    pub(super) fn key_of(&self, row: &Row) -> Vec<Value> {
        self.sh
            .info
            .pk
            .iter()
            .map(|&p| row.as_ref(p).cloned().unwrap_or(Value::NULL))
            .collect()
    }

    pub(super) fn select(
        &self,
        lo: &Option<B>,
        hi: &Option<B>,
        desc: bool,
        limit: Option<u32>,
        keys_only: bool,
    ) -> String {
        let wh = range_where(self.sh.info, lo, hi);
        let order: Vec<String> = self
            .sh
            .info
            .pk
            .iter()
            .map(|&p| {
                let c = quote_ident(&self.sh.info.columns[p].name);
                if desc {
                    format!("{c} DESC")
                } else {
                    c
                }
            })
            .collect();
        format!(
            "SELECT {} {} FROM {}{wh} ORDER BY {}{}",
            self.sh.opts.tag,
            if keys_only {
                &self.sh.key_list
            } else {
                &self.sh.select_list
            },
            self.sh.from,
            order.join(", "),
            limit.map(|l| format!(" LIMIT {l}")).unwrap_or_default()
        )
    }

    /// `a = 1 AND b = 'x'`: every key column equal to `key`'s value.
    pub(super) fn key_equals(&self, key: &[Value]) -> String {
        let info = self.sh.info;
        key.iter()
            .zip(&info.pk)
            .map(|(v, &p)| {
                let c = &info.columns[p];
                format!("{} = {}", quote_ident(&c.name), literal::to_sql(c.kind, v))
            })
            .collect::<Vec<_>>()
            .join(" AND ")
    }

    /// The row with key `key`, by equality on every key column.
    pub(super) fn point(&self, key: &[Value]) -> String {
        format!(
            "SELECT {} {} FROM {} WHERE {}",
            self.sh.opts.tag,
            self.sh.select_list,
            self.sh.from,
            self.key_equals(key)
        )
    }

    /// The keys a keys-only read returns, or None when it fails.
    pub(super) fn run_keys(&mut self, sql: &str) -> anyhow::Result<Option<Vec<Vec<Value>>>> {
        let res: Result<Vec<Row>, _> = self.conn.query(sql);
        match res {
            Ok(rows) => Ok(Some(rows.into_iter().map(|r| r.unwrap()).collect())),
            Err(e) => {
                self.failed(&e)?;
                Ok(None)
            }
        }
    }

    /// Run one read, streaming; rows are written as they arrive when `write`. A lost session is replaced
    /// through the connector and reported as a failed read. A written read is watched: the server's error log
    /// (a corruption line makes the read a suspect), the key order of its rows, and a crash (the rows around it
    /// become doubtful).
    pub(super) fn run(
        &mut self,
        sql: &str,
        write: bool,
        keys_only: bool,
    ) -> anyhow::Result<Outcome> {
        if self.sh.reconnects.load(Ordering::SeqCst) > self.sh.opts.max_reconnects {
            // The server crashed too often on this table: no more reads of it; what is left is lost.
            return Ok(Outcome {
                ok: false,
                n: 0,
                first: None,
                last: None,
            });
        }
        if self.sh.abort.load(Ordering::Relaxed) {
            return Err(crate::error::Failure::Interrupted(
                "the dump was interrupted: the files written so far are incomplete, run it again"
                    .into(),
            )
            .into());
        }
        let log_from = self
            .sh
            .log
            .as_ref()
            .map(|p| crate::server::errorlog::end_offset(p));
        self.sh
            .read_noted
            .store(true, std::sync::atomic::Ordering::SeqCst);
        crate::testhooks::early_inside(&self.sh.early_done);
        let mut watch = Watch::new(self, write, keys_only);
        let (mut o, failure) = self.stream(sql, write, &mut watch)?;
        if crate::testhooks::dump_trace() {
            let end = failure
                .as_ref()
                .map_or("end".to_string(), crate::error::describe_mysql);
            eprintln!("{sql} -> {} rows, {end}", o.n);
        }
        self.judge(&mut watch);
        self.check_log(log_from, failure.as_ref(), &o, write, &watch.key_pos);
        if let Some(e) = failure {
            o.ok = false;
            if is_gone(&e) {
                self.begin_crash_doubt(&e, watch.recent);
            }
            self.failed(&e)?;
        }
        Ok(o)
    }

    /// The statement's rows, each through [`Stream::row`]; what it returned, and the error that ended it.
    fn stream(
        &mut self,
        sql: &str,
        write: bool,
        watch: &mut Watch,
    ) -> anyhow::Result<(Outcome, Option<mysql::Error>)> {
        let Reader {
            sh,
            conn,
            kinds,
            buf,
            rows,
            hash,
            crash,
            xbuf,
            skip_first,
            last_group,
            ..
        } = self;
        let mut s = Stream {
            sh,
            kinds,
            buf,
            rows,
            hash,
            crash,
            xbuf,
            skip_first,
            last_group,
            write,
            w: watch,
            o: Outcome {
                ok: true,
                n: 0,
                first: None,
                last: None,
            },
        };
        let mut failure = None;
        match conn.query_iter(sql) {
            Err(e) => failure = Some(e),
            Ok(result) => {
                for row in result {
                    match row {
                        Ok(r) => s.row(r)?,
                        Err(e) => {
                            failure = Some(e);
                            break;
                        }
                    }
                }
            }
        }
        Ok((s.o, failure))
    }

    /// After a read: its share of a crash's window, and the doubts its rows raised.
    fn judge(&mut self, watch: &mut Watch) {
        if let (Some(c), Some(f), Some(l)) = (
            self.crash.as_mut(),
            watch.tail.take(),
            watch.tail_last.take(),
        ) {
            c.spans.push((f, l));
        }
        if self.crash.as_ref().is_some_and(|c| c.tail == 0) {
            self.end_crash_doubt();
        }
        if !watch.out_of_order.is_empty() {
            self.doubt_out_of_order(&watch.out_of_order);
        }
        if !watch.impossible.is_empty() {
            let info = self.sh.info;
            self.sh.doubts.lock().unwrap().push(Doubt {
                kind: DoubtKind::ImpossibleValue,
                why: format!(
                    "{} row(s) hold a date or time their column cannot hold (a time past 23:59:59, a month past 12): their record is not what InnoDB wrote",
                    watch.impossible.len()
                ),
                range: None,
                keys: watch
                    .impossible
                    .iter()
                    .filter(|k| !k.is_empty())
                    .map(|k| key_json(info, k))
                    .collect(),
            });
        }
    }

    /// Pages named while a read failed with an SQL error are that error's: the damage SQL reports. A written
    /// read that ended without an error while the server logged corruption may have returned a damaged row (a
    /// BLOB page that failed): a suspect, judged once every page SQL reported is known.
    fn check_log(
        &self,
        log_from: Option<u64>,
        failure: Option<&mysql::Error>,
        o: &Outcome,
        write: bool,
        key_pos: &[usize],
    ) {
        let (Some(from), Some(path)) = (log_from, self.sh.log.as_ref()) else {
            return;
        };
        let lines = if crate::server::errorlog::end_offset(path) > from {
            corruption_since(path, from)
        } else {
            Vec::new()
        };
        match (failure, &o.first, &o.last) {
            _ if lines.is_empty() => {}
            (Some(e), _, _) if !is_gone(e) => {
                self.sh
                    .explained
                    .lock()
                    .unwrap()
                    .extend(lines.iter().filter_map(|l| page_of(l)));
            }
            (None, Some(first), Some(last)) if write => {
                if crate::testhooks::dump_trace() {
                    eprintln!("suspect: {lines:?}");
                }
                let last = key_of(key_pos, last);
                self.sh
                    .suspects
                    .lock()
                    .unwrap()
                    .push((first.clone(), last, lines));
            }
            _ => {}
        }
    }

    /// The server went away while this reader read: the rows received just before (`recent`) and the next
    /// rows written after it are in doubt; the window is closed by [`Reader::end_crash_doubt`].
    fn begin_crash_doubt(&mut self, e: &mysql::Error, recent: VecDeque<Vec<Value>>) {
        self.end_crash_doubt();
        self.crash = Some(CrashDoubt {
            why: format!(
                "the server went away while these rows were read ({}); innops started it again and read on: a record on the page it crashed on may be garbage that came back as a row",
                crate::error::went_away_detail(&crate::error::describe_mysql(e))
            ),
            spans: match (recent.front(), recent.back()) {
                (Some(f), Some(l)) => vec![(f.clone(), l.clone())],
                _ => Vec::new(),
            },
            at: self.span.clone(),
            tail: CRASH_WINDOW,
        });
    }

    pub(super) fn end_crash_doubt(&mut self) {
        let Some(c) = self.crash.take() else { return };
        let info = self.sh.info;
        let keyed = !info.pk.is_empty();
        let mut ranges: Vec<Option<KeyRange>> = c
            .spans
            .iter()
            .filter(|_| keyed)
            .map(|(f, t)| {
                Some(KeyRange {
                    from: Some(key_json(info, f)),
                    to: Some(key_json(info, t)),
                    ..Default::default()
                })
            })
            .collect();
        if ranges.is_empty() {
            // No row before or after it: the stretch it was reading (the whole table without a key).
            let (lo, hi) = &c.at;
            let bound = |b: &Option<B>, incl: bool| {
                b.as_ref()
                    .filter(|b| b.incl == incl && keyed)
                    .map(|b| key_json(info, &b.key))
            };
            let r = KeyRange {
                after: bound(lo, false),
                from: bound(lo, true),
                before: bound(hi, false),
                to: bound(hi, true),
            };
            ranges.push((r != KeyRange::default()).then_some(r));
        }
        let mut doubts = self.sh.doubts.lock().unwrap();
        for range in ranges {
            // A crash met again at the same place (the reader restarts and meets the same page) says nothing
            // new: one doubt, not one per crash (a scrambled page gave 77 identical ones).
            if doubts
                .iter()
                .any(|d| d.kind == DoubtKind::Crash && d.range == range && d.why == c.why)
            {
                continue;
            }
            doubts.push(Doubt {
                kind: DoubtKind::Crash,
                why: c.why.clone(),
                range,
                keys: Vec::new(),
            });
        }
    }

    fn doubt_out_of_order(&self, keys: &[Vec<Value>]) {
        let info = self.sh.info;
        self.sh.doubts.lock().unwrap().push(Doubt {
            kind: DoubtKind::KeyOrder,
            why: format!(
                "{} row(s) came back with a key not above the row before it: the page holding them is not in the order InnoDB keeps, so they or their neighbours may be garbage",
                keys.len()
            ),
            range: None,
            keys: keys.iter().map(|k| key_json(info, k)).collect(),
        });
    }

    /// Classify a read failure: the table cannot be opened (stop), the session is gone (reconnect), or a read
    /// error the caller works around.
    pub(super) fn failed(&mut self, e: &mysql::Error) -> anyhow::Result<()> {
        let (code, gone) = (status_of(e), is_gone(e));
        if let Some(c) = code.filter(|c| UNOPENABLE.contains(c)) {
            let _ = c;
            return Err(Unopenable(crate::error::describe_mysql(e)).into());
        }
        if gone {
            // Past the budget the server is still brought back (the next table needs it), but no read of
            // this table is made again (see `run`).
            self.sh.reconnects.fetch_add(1, Ordering::SeqCst);
            let mut conn = self
                .sh
                .connector
                .reconnect(&crate::error::describe_mysql(e))?;
            prepare_session(&mut conn, &self.sh.opts.tag)?;
            self.conn = conn;
        }
        Ok(())
    }

    /// Every readable row of (lo, hi).
    pub(super) fn fill(&mut self, lo: Option<B>, hi: Option<B>) -> anyhow::Result<()> {
        self.span = (lo.clone(), hi.clone());
        let sql = self.select(&lo, &hi, false, None, false);
        let o = self.run(&sql, true, false)?;
        if o.ok {
            return Ok(());
        }
        let lo = match &o.last {
            Some(r) => Some(B::after(self.key_of(r))),
            None => lo,
        };
        self.after_asc_error(lo, hi)
    }

    /// An ascending read of (lo, hi) failed after lo: one row at a time from lo (the rows prefetch dropped),
    /// then look for readable rows below hi.
    pub(super) fn after_asc_error(
        &mut self,
        mut lo: Option<B>,
        hi: Option<B>,
    ) -> anyhow::Result<()> {
        self.span = (lo.clone(), hi.clone());
        loop {
            let sql = self.select(&lo, &hi, false, Some(1), false);
            let o = self.run(&sql, true, false)?;
            match (o.ok, o.last) {
                // An ascending read that ends without error and without a row: nothing more up to hi.
                (true, None) => return Ok(()),
                (true, Some(r)) => lo = Some(B::after(self.key_of(&r))),
                (false, _) => break,
            }
        }
        self.resume_below(lo, hi)
    }

    /// Rows of (lo, hi) where the row after lo is unreadable: descend from hi to the lowest readable row m,
    /// read (m, hi) again ascending, and search (lo, m).
    pub(super) fn resume_below(&mut self, lo: Option<B>, hi: Option<B>) -> anyhow::Result<()> {
        self.span = (lo.clone(), hi.clone());
        let sql = self.select(&lo, &hi, true, None, true);
        let o = self.run(&sql, false, true)?;
        let mut low: Option<Row> = None;
        if let Some(k) = o.last.map(|r| r.unwrap()) {
            // The lowest key the descending scan reached, as a full row, then one row at a time below it.
            let mut upper = Some(B { key: k, incl: true });
            loop {
                let sql = self.select(&lo, &upper, true, Some(1), false);
                let o = self.run(&sql, false, false)?;
                match o.last {
                    Some(r) if o.ok => {
                        upper = Some(B::before(self.key_of(&r)));
                        low = Some(r);
                    }
                    _ => break,
                }
            }
        }
        match low {
            Some(m) => {
                self.write_row(&m)?;
                let mk = self.key_of(&m);
                self.fill(Some(B::after(mk.clone())), hi)?;
                self.gap(lo, Some(B::before(mk)))
            }
            None => self.gap(lo, hi),
        }
    }
}

/// What one read watches across its rows, judged when it ends. Kept across rows: no allocation per row.
struct Watch {
    /// Where the key columns are in a row (the first columns of a keys-only read).
    key_pos: Vec<usize>,
    /// The keys of the rows received, the last CRASH_WINDOW of them, for a crash.
    recent: VecDeque<Vec<Value>>,
    check_order: bool,
    /// The previous row's integer key, when it had one, and the current row's.
    prev: Vec<i128>,
    prev_ok: bool,
    ints: Vec<i128>,
    out_of_order: Vec<Vec<Value>>,
    impossible: Vec<Vec<Value>>,
    /// The first and last rows of this read inside a crash's window.
    tail: Option<Vec<Value>>,
    tail_last: Option<Vec<Value>>,
    /// Per row scratch space: the key (a window entry dropped from `recent` is reused), where each column's
    /// literal is in the buffer, and the cross-check's buffers.
    spare: Option<Vec<Value>>,
    spans: Vec<(usize, usize)>,
    scratch: xcheck::Scratch,
    skip_below: Option<i128>,
}

impl Watch {
    fn new(r: &Reader, write: bool, keys_only: bool) -> Watch {
        Watch {
            key_pos: if keys_only {
                (0..r.sh.info.pk.len()).collect()
            } else {
                r.sh.info.pk.clone()
            },
            recent: VecDeque::new(),
            check_order: write && r.sh.int_key,
            prev: Vec::new(),
            prev_ok: false,
            ints: Vec::new(),
            out_of_order: Vec::new(),
            impossible: Vec::new(),
            tail: None,
            tail_last: None,
            spare: None,
            spans: Vec::new(),
            scratch: xcheck::Scratch::default(),
            skip_below: r.skip_below,
        }
    }
}

/// One statement's rows on their way: the parts of the reader they go to, the read's watch, and what the
/// statement returned so far.
struct Stream<'r, 'a> {
    sh: &'r Shared<'a>,
    kinds: &'r [literal::Kind],
    buf: &'r mut Vec<u8>,
    rows: &'r mut u64,
    hash: &'r mut u128,
    crash: &'r mut Option<CrashDoubt>,
    xbuf: &'r mut xcheck::Recorded,
    skip_first: &'r mut u64,
    last_group: &'r mut Option<(Vec<Value>, u64)>,
    write: bool,
    w: &'r mut Watch,
    o: Outcome,
}

impl Stream<'_, '_> {
    /// One row the server returned: skipped, written, or only counted.
    fn row(&mut self, r: Row) -> anyhow::Result<()> {
        let w = &mut *self.w;
        let mut key = w.spare.take().unwrap_or_default();
        key_into(&mut key, &w.key_pos, &r);
        if w.skip_below
            .is_some_and(|s| as_int(&key[0]).is_some_and(|k| k < s))
        {
            w.spare = Some(key);
            return Ok(());
        }
        if *self.skip_first > 0 {
            *self.skip_first -= 1;
            self.o.n += 1;
            return Ok(());
        }
        if self.o.first.is_none() {
            self.o.first = Some(key.clone());
        }
        if self.write {
            self.keep(&r, key)?;
        } else {
            self.w.spare = Some(key);
        }
        self.o.n += 1;
        self.o.last = Some(r);
        Ok(())
    }

    /// A row written to the file, and watched: its group, its dates, its key order, a crash's window.
    fn keep(&mut self, r: &Row, key: Vec<Value>) -> anyhow::Result<()> {
        let (sh, w) = (self.sh, &mut *self.w);
        if sh.repeats {
            match self.last_group {
                Some((k, n)) if *k == key => *n += 1,
                _ => *self.last_group = Some((key.clone(), 1)),
            }
        }
        write_row_parts(
            self.buf,
            self.rows,
            self.hash,
            self.kinds,
            &sh.insert_prefix,
            r,
            &mut w.spans,
        );
        // Before the flush: `spans` point into `buf`.
        xcheck::record_lits(
            &sh.xs,
            &sh.shape,
            r,
            self.buf,
            &w.spans,
            self.xbuf,
            &mut w.scratch,
        );
        if self.buf.len() >= sh.opts.chunk_bytes {
            flush_parts(sh, self.buf, self.rows, self.hash)?;
        }
        if sh
            .temporal
            .iter()
            .any(|&p| r.as_ref(p).is_some_and(|v| !possible_datetime(v)))
        {
            w.impossible.push(key.clone());
        }
        if w.check_order {
            w.ints.clear();
            let ok = key
                .iter()
                .all(|v| as_int(v).map(|i| w.ints.push(i)).is_some());
            // Equal keys follow each other in a walk by groups.
            if ok && w.prev_ok && (w.ints < w.prev || (w.ints == w.prev && !sh.repeats)) {
                w.out_of_order.push(key.clone());
            }
            std::mem::swap(&mut w.prev, &mut w.ints);
            w.prev_ok = ok;
        }
        if let Some(c) = self.crash.as_mut().filter(|c| c.tail > 0) {
            w.tail.get_or_insert_with(|| key.clone());
            w.tail_last = Some(key.clone());
            c.tail -= 1;
        }
        if w.recent.len() == CRASH_WINDOW {
            w.spare = w.recent.pop_front();
        }
        w.recent.push_back(key);
        Ok(())
    }
}

/// Whether a DATE, DATETIME or TIMESTAMP value as the server prints it (`YYYY-MM-DD[ HH:MM:SS[.ffffff]]`) is
/// one the type can hold: month up to 12, day up to 31, hour up to 23, minute and second up to 59 (zero parts
/// are allowed, as the zero date is). NULL and anything not in that shape are left alone.
fn possible_datetime(v: &Value) -> bool {
    let Value::Bytes(b) = v else { return true };
    let Ok(t) = std::str::from_utf8(b) else {
        return true;
    };
    let num = |s: Option<&str>| s.and_then(|x| x.parse::<u32>().ok());
    let (date, time) = t.split_once(' ').unwrap_or((t, ""));
    let mut d = date.split('-');
    let (_, month, day) = (d.next(), num(d.next()), num(d.next()));
    if month.is_some_and(|m| m > 12) || day.is_some_and(|x| x > 31) {
        return false;
    }
    if time.is_empty() {
        return true;
    }
    let mut h = time.split(':');
    let (hour, minute) = (num(h.next()), num(h.next()));
    let second = num(h.next().map(|s| s.split('.').next().unwrap_or(s)));
    !(hour.is_some_and(|x| x > 23)
        || minute.is_some_and(|x| x > 59)
        || second.is_some_and(|x| x > 59))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_past_midnight_or_a_thirteenth_month_is_impossible() {
        let v = |t: &str| Value::Bytes(t.as_bytes().to_vec());
        for ok in [
            "2024-02-29",
            "0000-00-00 00:00:00",
            "2024-12-31 23:59:59.999999",
            "2024-01-01 00:00:00",
        ] {
            assert!(possible_datetime(&v(ok)), "{ok}");
        }
        assert!(possible_datetime(&Value::NULL));
        for bad in [
            "2024-13-01",
            "2024-01-32",
            "2024-01-01 31:00:00",
            "2024-01-01 23:60:00",
            "2024-01-01 23:59:61.5",
        ] {
            assert!(!possible_datetime(&v(bad)), "{bad}");
        }
    }
}
