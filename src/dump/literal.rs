//! SQL literals for values read over the text protocol: the one function that turns a value into SQL text, used
//! both for the dump's INSERT statements and for the key bounds of the recovery scans.
//!
//! Values arrive as the server prints them (`Value::Bytes`) or as `NULL`. Numbers are written as printed (after
//! checking they look like a number), binary strings and geometry as `0x…` hex, BIT as `b'…'`, everything else
//! (character strings, temporal values including zero dates, ENUM, SET, JSON) as a quoted string with every byte
//! that matters escaped. The session that reads the text must not have `NO_BACKSLASH_ESCAPES`; the dump files set
//! their own `sql_mode`.

use mysql::Value;

/// How a column's values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Integers, DECIMAL, FLOAT, DOUBLE, YEAR: the printed number.
    Number,
    /// BINARY, VARBINARY, BLOBs, geometry: hex.
    Binary,
    /// BIT(n): `b'0101'`.
    Bit,
    /// Everything else: a quoted, escaped string.
    Text,
}

impl Kind {
    /// The kind of a column from `information_schema.COLUMNS.DATA_TYPE`.
    pub fn of(data_type: &str) -> Kind {
        match data_type.to_ascii_lowercase().as_str() {
            "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint" | "decimal"
            | "numeric" | "float" | "double" | "real" | "year" => Kind::Number,
            "bit" => Kind::Bit,
            "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob"
            | "geometry" | "point" | "linestring" | "polygon" | "multipoint"
            | "multilinestring" | "multipolygon" | "geometrycollection" => Kind::Binary,
            _ => Kind::Text,
        }
    }
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Append the SQL literal for `v` (a column of kind `kind`) to `out`.
pub fn push(out: &mut Vec<u8>, kind: Kind, v: &Value) {
    match v {
        Value::NULL => out.extend_from_slice(b"NULL"),
        Value::Bytes(b) => push_bytes(out, kind, b),
        // The text protocol only sends bytes; other variants come from key bounds built in code.
        Value::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Value::UInt(u) => out.extend_from_slice(u.to_string().as_bytes()),
        other => push_bytes(
            out,
            Kind::Text,
            other.as_sql(true).trim_matches('\'').as_bytes(),
        ),
    }
}

/// The integer a value's text spells, as `str::parse::<i128>` reads it (an optional sign, then decimal digits;
/// None for anything else or past the range), without checking the bytes are UTF-8 first: keys are read this
/// way for every row.
pub(crate) fn parse_int(b: &[u8]) -> Option<i128> {
    let (neg, digits) = match b.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: i128 = 0;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n.checked_mul(10)?;
        n = if neg {
            n.checked_sub(i128::from(d))?
        } else {
            n.checked_add(i128::from(d))?
        };
    }
    Some(n)
}

/// The literal as a `String` (key bounds in WHERE clauses).
pub fn to_sql(kind: Kind, v: &Value) -> String {
    let mut out = Vec::new();
    push(&mut out, kind, v);
    String::from_utf8_lossy(&out).into_owned()
}

/// Only digits, signs, points and exponents, and at least one digit (one pass: every number of a dump goes
/// through here).
fn looks_numeric(b: &[u8]) -> bool {
    let mut digit = false;
    for &c in b {
        if c.is_ascii_digit() {
            digit = true;
        } else if !matches!(c, b'-' | b'+' | b'.' | b'e' | b'E') {
            return false;
        }
    }
    digit
}

fn push_bytes(out: &mut Vec<u8>, kind: Kind, b: &[u8]) {
    match kind {
        Kind::Number if looks_numeric(b) => out.extend_from_slice(b),
        Kind::Binary if !b.is_empty() => {
            out.reserve(2 + 2 * b.len());
            out.extend_from_slice(b"0x");
            for &c in b {
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
        }
        Kind::Bit => {
            out.extend_from_slice(b"b'");
            if b.is_empty() {
                out.push(b'0');
            }
            for &c in b {
                for i in (0..8).rev() {
                    out.push(if c >> i & 1 == 1 { b'1' } else { b'0' });
                }
            }
            out.push(b'\'');
        }
        _ => push_quoted(out, b),
    }
}

/// A quoted string literal: `\0`, `'`, `\`, newline, carriage return and Ctrl-Z are escaped with a backslash,
/// every other byte is copied (all escaped bytes are ASCII, so multi-byte UTF-8 characters pass unchanged).
pub fn push_quoted(out: &mut Vec<u8>, b: &[u8]) {
    out.reserve(b.len() + 2);
    out.push(b'\'');
    // Most values need no escape: 8 bytes at a time up to the first word that may hold a byte to escape, then
    // byte by byte from there.
    let clean = b
        .chunks_exact(8)
        .take_while(|w| !may_need_escape(u64::from_le_bytes((*w).try_into().unwrap())))
        .count()
        * 8;
    out.extend_from_slice(&b[..clean]);
    let mut start = clean;
    while let Some(off) = b[start..].iter().position(|&c| ESCAPED[c as usize] != 0) {
        let i = start + off;
        out.extend_from_slice(&b[start..i]);
        out.push(b'\\');
        out.push(ESCAPED[b[i] as usize]);
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'\'');
}

/// Whether one of the 8 bytes of `w` may be one [`push_quoted`] escapes: a control byte (below 0x20, which holds
/// `\0`, newline, carriage return and Ctrl-Z), a quote or a backslash. Never false for a word holding one; true
/// for other control bytes too (they are then looked at one by one).
#[inline(always)]
fn may_need_escape(w: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte of `x` is zero, or below `n` (n <= 0x80): the classic exact word tests.
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH != 0;
    below(w, 0x20)
        || below(w ^ (ONES * u64::from(b'\'')), 1)
        || below(w ^ (ONES * u64::from(b'\\')), 1)
}

/// For each byte, the letter that follows the backslash when it is escaped, or 0.
const ESCAPED: [u8; 256] = {
    let mut t = [0u8; 256];
    t[0] = b'0';
    t[b'\'' as usize] = b'\'';
    t[b'\\' as usize] = b'\\';
    t[b'\n' as usize] = b'n';
    t[b'\r' as usize] = b'r';
    t[0x1a] = b'Z';
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(kind: Kind, v: Value) -> String {
        to_sql(kind, &v)
    }

    #[test]
    fn strings_escape_every_byte_that_ends_or_bends_a_literal() {
        assert_eq!(
            lit(Kind::Text, Value::Bytes(b"it's a \\ b\n\r\0\x1az".to_vec())),
            r"'it\'s a \\ b\n\r\0\Zz'"
        );
        assert_eq!(lit(Kind::Text, Value::Bytes(Vec::new())), "''");
        assert_eq!(lit(Kind::Text, Value::NULL), "NULL");
        assert_eq!(
            lit(Kind::Text, Value::Bytes("é😀".as_bytes().to_vec())),
            "'é😀'"
        );
        assert_eq!(
            lit(Kind::Text, Value::Bytes(b"0000-00-00 00:00:00".to_vec())),
            "'0000-00-00 00:00:00'"
        );
    }

    #[test]
    fn long_strings_escape_the_same_bytes_wherever_they_are() {
        // Every byte value, at every position of a string longer than the 16-byte blocks scanned at once.
        for c in 0..=255u8 {
            for at in [0, 5, 15, 16, 17, 31, 32, 40] {
                let mut s = vec![b'a'; 41];
                s[at] = c;
                let mut got = Vec::new();
                push_quoted(&mut got, &s);
                let mut want = vec![b'\''];
                for &x in &s {
                    if ESCAPED[x as usize] != 0 {
                        want.extend([b'\\', ESCAPED[x as usize]]);
                    } else {
                        want.push(x);
                    }
                }
                want.push(b'\'');
                assert_eq!(got, want, "byte {c:#x} at {at}");
                if ESCAPED[c as usize] != 0 {
                    assert!(may_need_escape(u64::from_le_bytes([
                        b'a', b'a', b'a', c, 0x80, 0xff, b'a', b'a'
                    ])));
                }
            }
        }
    }

    #[test]
    fn integers_parse_as_the_standard_library_parses_them() {
        let max = i128::MAX.to_string();
        let min = i128::MIN.to_string();
        let past_max = format!("{max}0");
        let past_min = "-170141183460469231731687303715884105729".to_string();
        for s in [
            "0",
            "-0",
            "+0",
            "7",
            "-7",
            "+7",
            "18446744073709551615",
            "-9223372036854775808",
            "",
            "-",
            "+",
            "--1",
            "+-1",
            "1-",
            " 1",
            "1 ",
            "1.0",
            "1e3",
            "0x10",
            "٣",
            &max,
            &min,
            &past_max,
            &past_min,
        ] {
            assert_eq!(parse_int(s.as_bytes()), s.parse::<i128>().ok(), "{s:?}");
        }
        assert_eq!(parse_int(b"\xff1"), None);
    }

    #[test]
    fn numbers_are_copied_only_when_they_look_like_numbers() {
        assert_eq!(
            lit(Kind::Number, Value::Bytes(b"-12.50".to_vec())),
            "-12.50"
        );
        assert_eq!(lit(Kind::Number, Value::Bytes(b"1e-7".to_vec())), "1e-7");
        assert_eq!(
            lit(Kind::Number, Value::Bytes(b"1; DROP TABLE t".to_vec())),
            "'1; DROP TABLE t'"
        );
        assert_eq!(lit(Kind::Number, Value::Bytes(Vec::new())), "''");
        assert_eq!(lit(Kind::Number, Value::Bytes(b"-.".to_vec())), "'-.'");
        assert_eq!(lit(Kind::Number, Value::Bytes(b"e5x".to_vec())), "'e5x'");
        assert_eq!(lit(Kind::Number, Value::Int(-3)), "-3");
    }

    #[test]
    fn binary_is_hex_and_bit_is_a_bit_string() {
        assert_eq!(
            lit(Kind::Binary, Value::Bytes(vec![0, 0x27, 0x5c, 0xff])),
            "0x00275CFF"
        );
        assert_eq!(lit(Kind::Binary, Value::Bytes(Vec::new())), "''");
        assert_eq!(
            lit(Kind::Bit, Value::Bytes(vec![1, 0x80])),
            "b'0000000110000000'"
        );
        assert_eq!(lit(Kind::Bit, Value::Bytes(Vec::new())), "b'0'");
    }

    #[test]
    fn kinds_follow_the_data_type() {
        assert_eq!(Kind::of("BIGINT"), Kind::Number);
        assert_eq!(Kind::of("decimal"), Kind::Number);
        assert_eq!(Kind::of("varbinary"), Kind::Binary);
        assert_eq!(Kind::of("point"), Kind::Binary);
        assert_eq!(Kind::of("bit"), Kind::Bit);
        assert_eq!(Kind::of("datetime"), Kind::Text);
        assert_eq!(Kind::of("longtext"), Kind::Text);
    }
}
