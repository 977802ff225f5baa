//! The secondary-index cross-check's fast path: sums the server computes, compared with sums of the rows written.
//!
//! For each index, every row the dump writes adds its entry's count and the CRC32 and CRC32C of the entry's
//! text (each index column, then the key's columns, separated by a zero byte: the value as the server sent it,
//! and in a column that may hold NULL `v` before it, or `n` for NULL). After the table is read, the server computes the same three figures from the index
//! alone (`FORCE INDEX`, only the index's columns and the key: InnoDB answers from the index pages), outside the
//! lost ranges, in one statement that sends one row back. Equal figures are the index agreeing with the rows
//! written: a difference hidden from both would need a change that both polynomials divide, in the sum of every
//! entry's checksum. Any other answer — different figures, a value the server prints otherwise than it sent it
//! (a FLOAT), a server without `CRC32C()` (MySQL), an error — proves nothing either way, and the index is read
//! row by row against the rows ([`super::xcheck::compare`]), which names the rows that differ.
//!
//! Why: reading a 1,000,000-entry index row by row into innops doubled the time of a healthy table's dump; the
//! sums cost the server one pass over the index pages and innops one row.

use mysql::prelude::Queryable;
use mysql::{Conn, Row, Value};

use super::literal::Kind;
use super::xcheck::XIndex;
use super::TableInfo;
use crate::sql::quote_ident;

/// One index's figures over the rows written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sums {
    pub entries: u64,
    crc: u128,
    crc_c: u128,
    /// False once a row held a value not sent as text (the server's figures could not be compared).
    comparable: bool,
}

impl Default for Sums {
    fn default() -> Sums {
        Sums {
            entries: 0,
            crc: 0,
            crc_c: 0,
            comparable: true,
        }
    }
}

/// Add `row` (all columns, table order) to each index's sums; `buf` is scratch space.
pub(crate) fn add(xs: &[XIndex], row: &Row, sums: &mut [Sums], buf: &mut Vec<u8>) {
    add_values(xs, |p| row.as_ref(p), sums, buf)
}

/// [`add`] of the row whose column `p` is `val(p)`.
fn add_values<'v>(
    xs: &[XIndex],
    val: impl Fn(usize) -> Option<&'v Value>,
    sums: &mut [Sums],
    buf: &mut Vec<u8>,
) {
    for (x, s) in xs.iter().zip(sums.iter_mut()) {
        if entry_text(x, &val, buf) {
            s.entries += 1;
            s.crc += u128::from(crc32fast::hash(buf));
            s.crc_c += u128::from(crc32c::crc32c(buf));
        } else {
            s.comparable = false;
        }
    }
}

/// The text the server's [`entry_sql`] makes of one entry, into `buf`; false when a value is not text.
fn entry_text<'v>(x: &XIndex, val: impl Fn(usize) -> Option<&'v Value>, buf: &mut Vec<u8>) -> bool {
    buf.clear();
    for (i, (&p, &nullable)) in x.pos.iter().zip(&x.nullable).enumerate() {
        if i > 0 {
            buf.push(0);
        }
        match val(p) {
            None | Some(Value::NULL) if nullable => buf.push(b'n'),
            Some(Value::Bytes(b)) => {
                if nullable {
                    buf.push(b'v');
                }
                buf.extend_from_slice(b);
            }
            // NULL in a NOT NULL column, or a value not sent as text: nothing the server's text can equal.
            _ => return false,
        }
    }
    true
}

/// Add one reader's sums into the table's, leaving the reader's empty.
pub(crate) fn merge(into: &mut [Sums], from: &mut [Sums]) {
    for (a, b) in into.iter_mut().zip(from.iter_mut()) {
        let b = std::mem::take(b);
        a.entries += b.entries;
        a.crc += b.crc;
        a.crc_c += b.crc_c;
        a.comparable &= b.comparable;
    }
}

/// The SQL expression of an entry's text: a string column converted to utf8mb4 (the session's
/// `character_set_results`, what the rows came in), every part made bytes by the zero byte between them. (A NOT
/// NULL column goes in bare: `CONCAT_WS` of the bare values cost the server a third less than wrapping each.)
fn entry_sql(info: &TableInfo, x: &XIndex) -> String {
    let parts: Vec<String> = x
        .pos
        .iter()
        .zip(&x.nullable)
        .map(|(&p, &nullable)| {
            let c = &info.columns[p];
            let name = quote_ident(&c.name);
            let value = match (&c.kind, c.charset.as_deref()) {
                (Kind::Text, Some(cs)) if cs != "binary" => {
                    format!("CONVERT({name} USING utf8mb4)")
                }
                _ => name,
            };
            if nullable {
                format!("IFNULL(CONCAT('v', {value}), 'n')")
            } else {
                value
            }
        })
        .collect();
    format!("CONCAT_WS(X'00', {})", parts.join(", "))
}

/// The statement that makes the server's figures for index `x` (outside the lost ranges: `outside`).
pub(crate) fn server_sql(tag: &str, info: &TableInfo, x: &XIndex, outside: Option<&str>) -> String {
    let e = entry_sql(info, x);
    format!(
        "SELECT {tag} COUNT(*), SUM(CRC32({e})), SUM(CRC32C({e})) FROM {} FORCE INDEX ({}){}",
        info.name.qualified(),
        quote_ident(&x.name),
        outside.map(|w| format!(" WHERE {w}")).unwrap_or_default()
    )
}

/// Whether the server's figures for index `x` equal `mine`: true only when they were read and are equal.
/// An index led by an integer column is summed in `threads` pieces of its value range at once, the first on
/// `conn`, the others on sessions from `connect`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn agree(
    conn: &mut Conn,
    connect: &(dyn Fn() -> anyhow::Result<Conn> + Sync),
    threads: usize,
    tag: &str,
    info: &TableInfo,
    x: &XIndex,
    mine: &Sums,
    outside: Option<&str>,
    early: Option<&Figures>,
) -> bool {
    if !mine.comparable {
        return false;
    }
    // The whole index's figures, asked beside the reads: what the rows are compared with when no range was lost.
    if outside.is_none() && early == Some(&Figures(mine.entries, mine.crc, mine.crc_c)) {
        return true;
    }
    let pieces = pieces(conn, tag, info, x, threads);
    let sql = |piece: &Option<String>| {
        let cond = match (outside, piece) {
            (Some(o), Some(p)) => Some(format!("({o}) AND ({p})")),
            (o, p) => o.map(str::to_string).or_else(|| p.clone()),
        };
        server_sql(tag, info, x, cond.as_deref())
    };
    let figures: Vec<Option<Figures>> = std::thread::scope(|s| {
        let others: Vec<_> = pieces[1..]
            .iter()
            .map(|p| {
                let q = sql(p);
                s.spawn(move || figures(&mut connect().ok()?, q))
            })
            .collect();
        let mut all = vec![figures(conn, sql(&pieces[0]))];
        all.extend(others.into_iter().map(|h| h.join().ok().flatten()));
        all
    });
    let mut total = Figures::default();
    for f in figures {
        let Some(f) = f else { return false };
        total.0 += f.0;
        total.1 += f.1;
        total.2 += f.2;
    }
    total == Figures(mine.entries, mine.crc, mine.crc_c)
}

/// An index's entry count and its two sums, as the server computed them (over the whole index or one piece).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Figures(u64, u128, u128);

/// Each index's figures over the whole table, asked by [`early`] while the rows are still being read.
#[derive(Debug, Default)]
pub(crate) struct Early {
    /// Per index, in order; `None` where the server gave no figures.
    pub figures: Vec<Option<Figures>>,
    /// A statement failed (an error, or the session lost): the index pass may have disturbed the reads.
    pub failed: bool,
}

/// The server's figures of every index over the whole table, index after index in one session, asked while
/// the table's rows are still being read, so on a table where no range is lost the cross-check need not wait
/// for a pass of its own after the reads (measured: docs/recover.md). Until `stop` is set; the caller kills the statement in flight when it stops it.
pub(crate) fn early(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    xs: &[XIndex],
    stop: &std::sync::atomic::AtomicBool,
) -> Early {
    let mut out = Early::default();
    for x in xs {
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        match asked(conn, server_sql(tag, info, x, None)) {
            Ok(f) => out.figures.push(f),
            Err(_) => {
                out.failed = true;
                break;
            }
        }
    }
    out
}

fn figures(conn: &mut Conn, sql: String) -> Option<Figures> {
    asked(conn, sql).ok()?
}

/// The server's figures from `sql`: the statement's error, or `None` when its answer is not three numbers.
fn asked(conn: &mut Conn, sql: String) -> Result<Option<Figures>, mysql::Error> {
    let row: Option<(u64, Option<String>, Option<String>)> = conn.query_first(sql)?;
    Ok(row.and_then(|(n, crc, crc_c)| {
        // SUM over no rows is NULL.
        let parse = |s: Option<String>| s.map_or(Some(0), |s| s.parse::<u128>().ok());
        Some(Figures(n, parse(crc)?, parse(crc_c)?))
    }))
}

/// The pieces index `x` is summed in: conditions on its leading column when that is an integer and the index
/// spans a range worth cutting (NULLs go with the last piece), else the whole index (`None`).
fn pieces(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    x: &XIndex,
    threads: usize,
) -> Vec<Option<String>> {
    let whole = vec![None];
    let lead = x.pos[0];
    if threads < 2 || !info.is_integer(lead) {
        return whole;
    }
    let col = quote_ident(&info.columns[lead].name);
    let Ok(Some((Some(lo), Some(hi)))) =
        conn.query_first::<(Option<String>, Option<String>), _>(format!(
            "SELECT {tag} MIN({col}), MAX({col}) FROM {} FORCE INDEX ({})",
            info.name.qualified(),
            quote_ident(&x.name)
        ))
    else {
        return whole;
    };
    let (Ok(lo), Ok(hi)) = (lo.parse::<i128>(), hi.parse::<i128>()) else {
        return whole;
    };
    cut(&col, lo, hi, threads)
}

/// `n` conditions on `col` that together hold every value (and NULL) once, cutting `lo..=hi` evenly.
fn cut(col: &str, lo: i128, hi: i128, n: usize) -> Vec<Option<String>> {
    let n = n as i128;
    if hi - lo < n {
        return vec![None];
    }
    let at: Vec<i128> = (1..n).map(|i| lo + (hi - lo) * i / n).collect();
    let mut out = vec![Some(format!("{col} < {}", at[0]))];
    for w in at.windows(2) {
        out.push(Some(format!("{col} >= {} AND {col} < {}", w[0], w[1])));
    }
    out.push(Some(format!(
        "{col} >= {} OR {col} IS NULL",
        at[at.len() - 1]
    )));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xindex(pos: Vec<usize>) -> XIndex {
        XIndex::for_test("k", pos)
    }

    #[test]
    fn the_pieces_hold_every_value_once() {
        let pieces = cut("`k`", 0, 999, 2);
        assert_eq!(
            pieces,
            vec![
                Some("`k` < 499".to_string()),
                Some("`k` >= 499 OR `k` IS NULL".to_string())
            ]
        );
        let three = cut("`k`", -10, 20, 3);
        assert_eq!(three[1].as_deref(), Some("`k` >= 0 AND `k` < 10"));
        // Too narrow a range to cut: the whole index in one piece.
        assert_eq!(cut("`k`", 5, 6, 2), vec![None]);
    }

    #[test]
    fn a_not_null_column_goes_in_bare_and_a_null_there_is_incomparable() {
        let mut x = xindex(vec![0, 1]);
        x.nullable = vec![false, true];
        let vals = [Value::Bytes(b"7".to_vec()), Value::NULL];
        let mut buf = Vec::new();
        assert!(entry_text(&x, |p| vals.get(p), &mut buf));
        assert_eq!(buf, b"7\0n");
        let null_first = [Value::NULL, Value::NULL];
        assert!(!entry_text(&x, |p| null_first.get(p), &mut buf));
    }

    #[test]
    fn an_entry_s_text_marks_nulls_and_separates_columns() {
        let x = xindex(vec![0, 1]);
        let vals = [Value::Bytes(b"ab".to_vec()), Value::NULL];
        let mut buf = Vec::new();
        assert!(entry_text(&x, |p| vals.get(p), &mut buf));
        assert_eq!(buf, b"vab\0n");
        // 'a','b' is not 'ab',NULL, nor 'a\0vb'.
        let other = [Value::Bytes(b"a".to_vec()), Value::Bytes(b"b".to_vec())];
        let mut b2 = Vec::new();
        entry_text(&x, |p| other.get(p), &mut b2);
        assert_ne!(buf, b2);
        // A value that did not come as text cannot be compared with the server's text.
        assert!(!entry_text(&x, |_| Some(&Value::Int(1)), &mut buf));
    }

    #[test]
    fn sums_merge_and_a_value_not_sent_as_text_makes_them_incomparable() {
        let x = xindex(vec![0]);
        let mut a = vec![Sums::default()];
        let mut b = vec![Sums::default()];
        let mut buf = Vec::new();
        let one = [Value::Bytes(b"1".to_vec())];
        let two = [Value::Bytes(b"2".to_vec())];
        add_values(std::slice::from_ref(&x), |p| one.get(p), &mut a, &mut buf);
        add_values(std::slice::from_ref(&x), |p| two.get(p), &mut b, &mut buf);
        let mut both = vec![Sums::default()];
        merge(&mut both, &mut a);
        merge(&mut both, &mut b);
        // The figures the server gives for the entries 'v1' and 'v2' (CRC32 and CRC32C of each, summed).
        assert_eq!(both[0].entries, 2);
        assert_eq!(
            both[0].crc,
            u128::from(crc32fast::hash(b"v1")) + u128::from(crc32fast::hash(b"v2"))
        );
        assert_eq!(
            both[0].crc_c,
            u128::from(crc32c::crc32c(b"v1")) + u128::from(crc32c::crc32c(b"v2"))
        );
        assert_eq!(a[0], Sums::default());
        let int = [Value::Int(1)];
        add_values(std::slice::from_ref(&x), |p| int.get(p), &mut b, &mut buf);
        merge(&mut both, &mut b);
        assert!(!both[0].comparable);
        assert_eq!(both[0].entries, 2);
        assert_eq!(b[0], Sums::default());
    }
}
