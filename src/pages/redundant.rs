//! The REDUNDANT record header and field layout (MariaDB's `rem0rec.h`, `rem0rec.cc`: the "old-style"
//! records, still what `ROW_FORMAT=REDUNDANT` tables get in 10.11). The rest of the parse (values, BLOB chains,
//! key order, neighbours) is [`super::record`]'s, shared with COMPACT.
//!
//! Read backwards from its origin, a REDUNDANT record has 6 header bytes: the info bits and n_owned; 13 bits of
//! heap number, 10 bits of field count and the flag saying the end offsets take 1 byte each (else 2); then the
//! absolute page offset of the next record. Before them, one end offset per field (the first field's nearest
//! the header), each the end of that field counted from the origin: with 1-byte offsets the top bit marks SQL
//! NULL and 7 bits remain; with 2-byte ones the top bit marks SQL NULL, the next one external storage, and 14
//! bits remain. Every field is in the record, hidden ones included (the row id when there is no primary key,
//! the transaction id, the roll pointer), each at its length: unlike COMPACT, a NULL fixed-length column keeps
//! its length's worth of zeros, and a CHAR is always its full byte length (characters × the character set's
//! longest character, padded with spaces). InnoDB takes the 2-byte offsets exactly when the data exceeds 127
//! bytes or a field is stored externally, so a record's choice is checked against its contents.

use super::def::{ColType, TableDef};
use super::page::{be16, HEAP_TOP, PAGE};
use super::record::{byte, get, heap_number, Field, Marks, DELETED, MIN_REC};
use super::value;

/// `REC_N_OLD_EXTRA_BYTES`: the header's length.
pub(super) const EXTRA: usize = 6;
/// Where the infimum and the supremum of a REDUNDANT page have their origins (`PAGE_OLD_INFIMUM`,
/// `PAGE_OLD_SUPREMUM`), and where the user records may start (`PAGE_OLD_SUPREMUM_END`).
pub(super) const INFIMUM: usize = 101;
pub(super) const SUPREMUM: usize = 116;
pub(super) const RECORDS_START: usize = 125;
/// `REC_1BYTE_OFFS_LIMIT`: the most data 1-byte end offsets can describe.
const SHORT_LIMIT: usize = 0x7F;

/// The header's checks: info bits and heap number (a REDUNDANT header has no record status).
pub(super) fn header(p: &[u8], origin: usize, heaps: &mut Marks) -> Result<(), String> {
    let h = get(p, origin - EXTRA, EXTRA)?;
    let info = h[0] & 0xF0;
    if info & !(DELETED | MIN_REC) != 0 {
        return Err(format!("info bits {info:#x} that no record has"));
    }
    if info & MIN_REC != 0 {
        return Err("the minimum-record flag on a leaf record that is not the page's first".into());
    }
    heap_number(p, u16::from_be_bytes([h[1], h[2]]) >> 3, heaps)
}

/// The bytes a column takes in a REDUNDANT record whatever its value, NULL included; `None` when its length
/// varies (a NULL of such a column takes no bytes).
fn fixed_len(ty: &ColType) -> Option<usize> {
    match ty {
        ColType::Char { chars, charset } => Some(chars * charset.max_len()),
        other => value::fixed_len(other),
    }
}

/// Where each field of the record lies, and the record's extent in the page (from its first end-offset byte
/// to the end of its last field). Every field's length is checked against its column here: the end offsets
/// say nothing a value's decoding would catch on its own when they are wrong.
pub(super) fn fields(
    (def, lay): (&TableDef, &[(Option<usize>, usize)]),
    p: &[u8],
    origin: usize,
    out: &mut Vec<Field>,
) -> Result<(usize, usize), String> {
    let h = get(p, origin - EXTRA, EXTRA)?;
    let n = usize::from(u16::from_be_bytes([h[2], h[3]]) >> 1 & 0x3FF);
    let short = h[3] & 1 == 1;
    if n < lay.len() {
        return Err(format!(
            "{n} fields where the index has {}: an instant ADD COLUMN record, which is not read yet",
            lay.len()
        ));
    }
    if n != lay.len() {
        return Err(format!("{n} fields where the index has {}", lay.len()));
    }
    let width = if short { 1 } else { 2 };
    let first = (origin - EXTRA)
        .checked_sub(n * width)
        .filter(|&f| f >= RECORDS_START)
        .ok_or("the record's end offsets start before the page's records")?;
    let (mut end, mut any_external) = (0usize, false);
    for (i, &(col, hidden_len)) in lay.iter().enumerate() {
        let (at_end, null, external) = if short {
            let b = byte(p, origin - EXTRA - 1 - i)?;
            (usize::from(b & 0x7F), b & 0x80 != 0, false)
        } else {
            let w = be16(p, origin - EXTRA - 2 * (i + 1));
            (usize::from(w & 0x3FFF), w & 0x8000 != 0, w & 0x4000 != 0)
        };
        let len = at_end
            .checked_sub(end)
            .ok_or_else(|| format!("field {i} ends at {at_end}, before its start at {end}"))?;
        let f = Field {
            start: origin + end,
            len,
            null,
            external,
        };
        end = at_end;
        any_external |= external;
        check_field(def, p, col, hidden_len, &f)?;
        out.push(f);
    }
    if !short && end <= SHORT_LIMIT && !any_external {
        return Err(format!(
            "2-byte end offsets for {end} bytes of data, which InnoDB writes with 1-byte ones"
        ));
    }
    let last = origin + end;
    if last > usize::from(be16(p, HEAP_TOP)) || last > PAGE - 8 {
        return Err(format!(
            "the record's fields end at {last}, past the page's heap"
        ));
    }
    Ok((first, last))
}

/// One field's flags and length against what its column (or the hidden field) can have.
fn check_field(
    def: &TableDef,
    p: &[u8],
    col: Option<usize>,
    hidden_len: usize,
    f: &Field,
) -> Result<(), String> {
    let Some(c) = col else {
        if f.null || f.external || f.len != hidden_len {
            return Err(format!(
                "a system field of {} bytes{}, where it takes {hidden_len}",
                f.len,
                if f.null { ", NULL" } else { "" }
            ));
        }
        return Ok(());
    };
    let column = &def.columns[c];
    let fixed = fixed_len(&column.ty);
    if f.null {
        if !column.nullable {
            return Err(format!(
                "column {} is NULL, which it cannot be",
                column.name
            ));
        }
        if f.external || f.len != fixed.unwrap_or(0) {
            return Err(format!(
                "column {} is NULL with {} bytes, where a NULL takes {}",
                column.name,
                f.len,
                fixed.unwrap_or(0)
            ));
        }
        // InnoDB fills a NULL's bytes with zeros (`data_write_sql_null`).
        if get(p, f.start, f.len)?.iter().any(|&b| b != 0) {
            return Err(format!(
                "column {} is NULL but its bytes are not the zeros InnoDB writes",
                column.name
            ));
        }
        return Ok(());
    }
    match fixed {
        Some(n) if !f.external && f.len != n => Err(format!(
            "column {}: {} bytes where the type takes {n}",
            column.name, f.len
        )),
        _ => Ok(()),
    }
}

/// A REDUNDANT CHAR's value: its bytes with the padding spaces beyond its characters removed (the server
/// returns CHAR without trailing spaces), then checked as the string of at most its length in characters.
pub(super) fn decode(ty: &ColType, b: &[u8]) -> Result<value::Value, String> {
    match ty {
        ColType::Char { chars, charset } if charset.max_len() > 1 => {
            let kept = b.len() - b.iter().rev().take_while(|&&c| c == b' ').count();
            value::decode(
                &ColType::Varchar {
                    chars: *chars,
                    charset: *charset,
                },
                &b[..kept],
            )
        }
        other => value::decode(other, b),
    }
}
