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

/// The literal as a `String` (key bounds in WHERE clauses).
pub fn to_sql(kind: Kind, v: &Value) -> String {
    let mut out = Vec::new();
    push(&mut out, kind, v);
    String::from_utf8_lossy(&out).into_owned()
}

fn looks_numeric(b: &[u8]) -> bool {
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E'))
        && b.iter().any(|c| c.is_ascii_digit())
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
    let mut start = 0;
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
