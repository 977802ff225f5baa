//! A table's key as the chunked reads walk it: how each key column's boundary value is read, carried and compared
//! in the column's own type, and the predicates that bound a chunk before, at or after a key. The copy, the
//! dry run's scans and the duplicate-key walk all read a table in key order through these, so that a boundary
//! means the same row in each; they are one unit apart from the copy's writes.

use std::time::Duration;

use mysql::{Conn, Value};

use crate::procedures::convert::schema::TableInfo;
use crate::sql::{quote_ident, Queryable};

/// The columns `names` quoted and comma-separated, in their order: an ORDER BY or a column list of a key.
pub fn ident_list(names: &[String]) -> String {
    names
        .iter()
        .map(|c| quote_ident(c))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The expressions that read `key`'s values ([`KeyColumn::read_expr`]), comma-separated, in the key's order.
pub fn read_list(key: &[KeyColumn]) -> String {
    key.iter()
        .map(KeyColumn::read_expr)
        .collect::<Vec<_>>()
        .join(", ")
}

/// How one primary-key column's chunk boundary travels from the shadow's last row to the next chunk's WHERE, so
/// the server compares it in the column's own type and the next chunk starts exactly after the last copied key
/// in the primary index's order. Text would not do: a FLOAT prints rounded to 6 digits, BIT as raw bytes, and
/// ENUM and SET sort by their number, not their name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyKind {
    /// Integers, FLOAT, DOUBLE, temporal types, YEAR, and types the server parses from text into their own
    /// (INET4, INET6, UUID): the value as the binary protocol returns it, bound as that type. The copy session
    /// runs in UTC, so a TIMESTAMP never passes through a daylight-saving change.
    Typed,
    /// BIT: its number (`col + 0`), compared as a number.
    Bit,
    /// ENUM of `members` members: sorted by member number. `col > n` is no range for the optimizer, so the
    /// members after `n` are listed (`col IN (n+1, …)`), which is.
    Enum { members: u64 },
    /// SET: sorted by its bitmask (`col + 0`), compared as a number (no range for the optimizer: each chunk
    /// scans the primary index from its start).
    Set,
    /// DECIMAL: its exact text, cast back to the column's own precision and scale (`DECIMAL(M,D)`).
    Decimal { cast: String },
    /// Character strings: the bytes in hex, back in the column's character set and collation (no conversion
    /// through the connection's character set).
    Text { charset: String, collation: String },
    /// Binary strings: the bytes in hex.
    Binary,
}

/// One primary-key column and how its boundary travels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyColumn {
    pub name: String,
    pub kind: KeyKind,
}

/// A character set or collation name as the server reports it, safe to put into SQL unquoted.
fn plain_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The number of members of `enum('a','b''c',…)` as information_schema.COLUMNS shows it (a quote is doubled,
/// a backslash escaped).
pub fn enum_members(column_type: &str) -> u64 {
    let mut n = 0;
    let mut chars = column_type.chars().peekable();
    let mut inside = false;
    while let Some(c) = chars.next() {
        match (inside, c) {
            (false, '\'') => {
                inside = true;
                n += 1;
            }
            (true, '\\') => {
                chars.next();
            }
            (true, '\'') => {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                } else {
                    inside = false;
                }
            }
            _ => {}
        }
    }
    n
}

/// How a key column of this type carries its boundary.
pub fn key_kind(
    data_type: &str,
    column_type: &str,
    charset: Option<&str>,
    collation: Option<&str>,
) -> KeyKind {
    match data_type {
        "bit" => KeyKind::Bit,
        "enum" => KeyKind::Enum {
            members: enum_members(column_type),
        },
        "set" => KeyKind::Set,
        "decimal" | "numeric" | "fixed" | "dec" => {
            let spec = column_type
                .find('(')
                .and_then(|a| column_type[a..].find(')').map(|b| &column_type[a..=a + b]))
                .filter(|p| p.chars().all(|c| "(),".contains(c) || c.is_ascii_digit()))
                .unwrap_or("(10,0)");
            KeyKind::Decimal {
                cast: format!("DECIMAL{spec}"),
            }
        }
        "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext" | "binary"
        | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" => {
            match (charset, collation) {
                (Some(cs), Some(co)) if cs != "binary" && plain_name(cs) && plain_name(co) => {
                    KeyKind::Text {
                        charset: cs.to_string(),
                        collation: co.to_string(),
                    }
                }
                _ => KeyKind::Binary,
            }
        }
        _ => KeyKind::Typed,
    }
}

impl KeyColumn {
    /// What the last-key SELECT reads for this column.
    pub fn read_expr(&self) -> String {
        let q = quote_ident(&self.name);
        match &self.kind {
            KeyKind::Bit | KeyKind::Enum { .. } | KeyKind::Set => format!("{q} + 0"),
            KeyKind::Text { .. } | KeyKind::Binary => format!("HEX({q})"),
            KeyKind::Typed | KeyKind::Decimal { .. } => q,
        }
    }

    /// The boundary as the server should see it, in the column's own type.
    pub fn operand(&self) -> String {
        match &self.kind {
            KeyKind::Decimal { cast } => format!("CAST(? AS {cast})"),
            KeyKind::Text { charset, collation } => {
                format!("CONVERT(UNHEX(?) USING {charset}) COLLATE {collation}")
            }
            KeyKind::Binary => "UNHEX(?)".into(),
            _ => "?".into(),
        }
    }

    pub fn equal(&self, v: &Value, params: &mut Vec<Value>) -> String {
        params.push(v.clone());
        format!("{} = {}", quote_ident(&self.name), self.operand())
    }

    pub fn after(&self, v: &Value, params: &mut Vec<Value>) -> anyhow::Result<String> {
        let q = quote_ident(&self.name);
        if let KeyKind::Enum { members } = self.kind {
            let n = value_u64(v).ok_or_else(|| {
                anyhow::anyhow!("the ENUM key column {q} read back as {v:?}, not a member number")
            })?;
            if n >= members {
                return Ok("FALSE".into());
            }
            let list: Vec<String> = (n + 1..=members).map(|i| i.to_string()).collect();
            return Ok(format!("{q} IN ({})", list.join(", ")));
        }
        params.push(v.clone());
        Ok(format!("{q} > {}", self.operand()))
    }
}

fn value_u64(v: &Value) -> Option<u64> {
    match v {
        Value::Int(i) => u64::try_from(*i).ok(),
        Value::UInt(u) => Some(*u),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        _ => None,
    }
}

/// The primary-key columns of `info` and how each carries its boundary (character sets and collations read
/// from the server).
pub fn key_columns(conn: &mut Conn, tag: &str, info: &TableInfo) -> anyhow::Result<Vec<KeyColumn>> {
    index_columns(conn, tag, info, &info.pk_columns())
}

/// The columns `names` of one of `info`'s indexes, and how each carries its boundary.
pub fn index_columns(
    conn: &mut Conn,
    tag: &str,
    info: &TableInfo,
    names: &[String],
) -> anyhow::Result<Vec<KeyColumn>> {
    let mut out = Vec::new();
    for name in names.iter().cloned() {
        let col = info
            .columns
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "key column {name} is not among the columns of {}",
                    info.display()
                )
            })?;
        let cs: Option<(Option<String>, Option<String>)> = conn.exec_first(
            format!("SELECT {tag} CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?"),
            (&info.schema, &info.name, &name),
        )?;
        let (charset, collation) = cs.unwrap_or((None, None));
        out.push(KeyColumn {
            kind: key_kind(
                &col.data_type,
                &col.column_type,
                charset.as_deref(),
                collation.as_deref(),
            ),
            name,
        });
    }
    Ok(out)
}

/// `WHERE key > last` in the primary index's order (a primary key holds no NULL), with its parameters.
pub fn after_key(key: &[KeyColumn], last: &[Value]) -> anyhow::Result<(String, Vec<Value>)> {
    key_bound(key, last, Bound::After)
}

/// A value read with [`KeyColumn::read_expr`], as the server compares it: for an ENUM, BIT or SET its number.
pub fn value_operand(k: &KeyColumn) -> String {
    match k.kind {
        KeyKind::Enum { .. } | KeyKind::Bit | KeyKind::Set => "?".into(),
        _ => k.operand(),
    }
}

/// Where a chunk of a key's index starts or ends, relative to the last key read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Before,
    AtOrAfter,
    After,
}

/// `key < last`, `key >= last` or `key > last` in the index's order, expanded column by column
/// (`a > ? OR (a = ? AND b >= ?)`) so the range optimizer uses the index. NULL sorts first in an index.
pub fn key_bound(
    key: &[KeyColumn],
    last: &[Value],
    bound: Bound,
) -> anyhow::Result<(String, Vec<Value>)> {
    anyhow::ensure!(
        key.len() == last.len() && !key.is_empty(),
        "the last key read has {} values for {} key columns",
        last.len(),
        key.len()
    );
    let mut ors = Vec::new();
    let mut params = Vec::new();
    for i in 0..key.len() {
        let mut ands: Vec<String> = (0..i)
            .map(|j| equal(&key[j], &last[j], &mut params))
            .collect();
        let final_column = i + 1 == key.len();
        ands.push(match bound {
            Bound::Before => before(&key[i], &last[i], &mut params),
            Bound::After => after(&key[i], &last[i], &mut params)?,
            Bound::AtOrAfter if final_column => {
                let gt = after(&key[i], &last[i], &mut params)?;
                let eq = equal(&key[i], &last[i], &mut params);
                format!("({gt} OR {eq})")
            }
            Bound::AtOrAfter => after(&key[i], &last[i], &mut params)?,
        });
        ors.push(format!("({})", ands.join(" AND ")));
    }
    Ok((ors.join(" OR "), params))
}

fn equal(k: &KeyColumn, v: &Value, params: &mut Vec<Value>) -> String {
    if *v == Value::NULL {
        return format!("{} IS NULL", quote_ident(&k.name));
    }
    k.equal(v, params)
}

fn after(k: &KeyColumn, v: &Value, params: &mut Vec<Value>) -> anyhow::Result<String> {
    if *v == Value::NULL {
        return Ok(format!("{} IS NOT NULL", quote_ident(&k.name)));
    }
    k.after(v, params)
}

fn before(k: &KeyColumn, v: &Value, params: &mut Vec<Value>) -> String {
    let q = quote_ident(&k.name);
    if *v == Value::NULL {
        return "FALSE".into();
    }
    params.push(v.clone());
    format!("({q} < {} OR {q} IS NULL)", value_operand(k))
}

/// The next chunk size: aim at the target duration, never more than doubling or less than halving at once.
pub fn next_chunk(rows: u64, took: Duration, target: Duration) -> u64 {
    let secs = took.as_secs_f64().max(0.001);
    let ideal = rows as f64 * target.as_secs_f64() / secs;
    let bounded = ideal.clamp(rows as f64 / 2.0, rows as f64 * 2.0);
    (bounded as u64).clamp(100, 200_000)
}
