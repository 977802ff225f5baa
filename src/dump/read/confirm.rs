//! Suspect reads confirmed against the server's error log: once every reader is done, each read during which
//! the log got a corruption line (and no SQL error explains it) is read again, halving its keys until the rows
//! that make the server log corruption are named. A unit because it is the only part that reads the error log as
//! evidence, and it runs after the table's reads, one read at a time.

use std::sync::atomic::Ordering;

use mysql::Value;

use super::{key_json, Reader, B};
use crate::dump::manifest::{Doubt, DoubtKind, KeyRange};

impl<'s, 'a> Reader<'s, 'a> {
    /// Suspect reads (a corruption line in the error log while they ran) read again one at a time, halving
    /// the keys until each row whose read makes the server log corruption is named; those rows are doubtful.
    /// A read that the server logs nothing for again was another reader's line.
    pub(super) fn confirm(&mut self) -> anyhow::Result<()> {
        let Some(log) = self.sh.log.clone() else {
            return Ok(());
        };
        let suspects = std::mem::take(&mut *self.sh.suspects.lock().unwrap());
        let info = self.sh.info;
        let explained = self.sh.explained.lock().unwrap().clone();
        // Past the crash budget no row can be read again: every suspect stays a doubt as a whole; a table
        // without a key cannot be halved: its suspects are doubts on the whole table.
        let can_read = self.sh.reconnects.load(Ordering::SeqCst) <= self.sh.opts.max_reconnects
            && !info.pk.is_empty();
        for (first, last, lines) in suspects {
            let Some(line) = unexplained(&lines, &explained).into_iter().next() else {
                continue;
            };
            if !can_read {
                let why = format!(
                    "the server's error log said \"{line}\" while these rows were read, and they could not be read again one by one: a column may have come back truncated or empty without any SQL error"
                );
                let range = (!info.pk.is_empty()).then(|| KeyRange {
                    from: Some(key_json(info, &first)),
                    to: Some(key_json(info, &last)),
                    ..Default::default()
                });
                self.sh.doubts.lock().unwrap().push(Doubt {
                    kind: DoubtKind::ErrorLog,
                    why,
                    range,
                    keys: Vec::new(),
                });
                continue;
            }
            let lo = Some(B {
                key: first.clone(),
                incl: true,
            });
            // Up to the last key, not through it: a read that goes on past its last row touches the page
            // after it, which may be the damaged one.
            let below = Some(B::before(last.clone()));
            let sql = self.select(&lo, &below, false, Some(CONFIRM_MAX as u32 + 1), true);
            let o = self.run_keys(&sql)?.map(|mut keys| {
                keys.push(last.clone());
                keys
            });
            let why = format!(
                "the server's error log said \"{line}\" while these rows were read: a column may have come back truncated or empty without any SQL error"
            );
            let mut doubtful = Vec::new();
            match o {
                Some(keys) if keys.len() <= CONFIRM_MAX => {
                    self.bisect(&log, &explained, &keys, &mut doubtful)?;
                    if doubtful.is_empty() {
                        continue;
                    }
                    let range = KeyRange {
                        from: doubtful.first().map(|k: &Vec<Value>| key_json(info, k)),
                        to: doubtful.last().map(|k| key_json(info, k)),
                        ..Default::default()
                    };
                    self.sh.doubts.lock().unwrap().push(Doubt {
                        kind: DoubtKind::ErrorLog,
                        why,
                        range: Some(range),
                        keys: doubtful.iter().map(|k| key_json(info, k)).collect(),
                    });
                }
                // Too many keys to halve, or the keys cannot be read again: the whole read is doubtful.
                _ => self.sh.doubts.lock().unwrap().push(Doubt {
                    kind: DoubtKind::ErrorLog,
                    why,
                    range: Some(KeyRange {
                        from: Some(key_json(info, &first)),
                        to: Some(key_json(info, &last)),
                        ..Default::default()
                    }),
                    keys: Vec::new(),
                }),
            }
        }
        Ok(())
    }

    /// The keys of `keys` whose rows, read alone, make the server log corruption (see [`Reader::confirm`]).
    fn bisect(
        &mut self,
        log: &std::path::Path,
        explained: &std::collections::BTreeSet<u64>,
        keys: &[Vec<Value>],
        out: &mut Vec<Vec<Value>>,
    ) -> anyhow::Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let from = crate::server::errorlog::end_offset(log);
        let sql = if keys.len() == 1 {
            // One row by equality on the whole key: InnoDB reads no record after it.
            self.point(&keys[0])
        } else {
            let lo = Some(B {
                key: keys[0].clone(),
                incl: true,
            });
            let hi = Some(B {
                key: keys[keys.len() - 1].clone(),
                incl: true,
            });
            self.select(&lo, &hi, false, None, false)
        };
        let o = self.run(&sql, false, false)?;
        let _ = o;
        let logged = crate::server::errorlog::end_offset(log) > from
            && !unexplained(&corruption_since(log, from), explained).is_empty();
        if crate::testhooks::dump_trace() {
            eprintln!("confirm {} key(s): logged {logged}", keys.len());
        }
        if !logged {
            return Ok(());
        }
        if keys.len() == 1 {
            out.push(keys[0].clone());
            return Ok(());
        }
        let mid = keys.len() / 2;
        self.bisect(log, explained, &keys[..mid], out)?;
        self.bisect(log, explained, &keys[mid..], out)
    }
}

/// Keys at most in one suspect read that [`Reader::confirm`] halves; a larger read is doubtful as a whole.
const CONFIRM_MAX: usize = 1_000_000;

/// The corruption lines the error log got after byte `from`, without their timestamps.
pub(super) fn corruption_since(path: &std::path::Path, from: u64) -> Vec<String> {
    let Ok(tail) = crate::server::errorlog::read_since(path, from) else {
        return Vec::new();
    };
    tail.lines
        .iter()
        .filter(|l| crate::server::errorlog::is_corruption(l))
        .map(|l| crate::server::errorlog::message_of(l).to_string())
        .collect()
}

/// The page a corruption line names: `Failed to read page 28 from file …` or `[page id: space=6, page
/// number=3]`.
pub(super) fn page_of(line: &str) -> Option<u64> {
    let after = |pat: &str| -> Option<u64> {
        let at = line.find(pat)? + pat.len();
        let digits: String = line[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    after("read page ").or_else(|| after("page number="))
}

/// The lines of `lines` that no SQL error accounts for: a line naming a page that never failed a read with an
/// error, or, where no read failed with an error at all, any line.
fn unexplained(lines: &[String], explained: &std::collections::BTreeSet<u64>) -> Vec<String> {
    lines
        .iter()
        .filter(|l| match page_of(l) {
            Some(p) => !explained.contains(&p),
            None => explained.is_empty(),
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corruption_line_is_explained_only_by_a_page_an_sql_error_named() {
        let leaf = "InnoDB: Failed to read page 28 from file './db/t.ibd': Page read from tablespace is corrupted.";
        let blob = "InnoDB: Failed to read page 15 from file './db/t.ibd': Page read from tablespace is corrupted.";
        let skip = "InnoDB: Index corruption: rec offs 320 next offs 333[page id: space=6, page number=3], index `PRIMARY` of table `t`.`c`. We try to skip the record.";
        assert_eq!(page_of(leaf), Some(28));
        assert_eq!(page_of(skip), Some(3));
        assert_eq!(page_of("InnoDB: File './db/t.ibd' is corrupted"), None);
        let explained: std::collections::BTreeSet<u64> = [28].into();
        let lines = vec![leaf.to_string(), blob.to_string()];
        assert_eq!(unexplained(&lines, &explained), vec![blob.to_string()]);
        // A line naming no page is explained while some read failed with an error, never otherwise.
        let generic = vec!["InnoDB: File './db/t.ibd' is corrupted".to_string()];
        assert!(unexplained(&generic, &explained).is_empty());
        assert_eq!(unexplained(&generic, &Default::default()), generic);
    }
}
