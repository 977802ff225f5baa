//! Column variants (`--column-variant 'c_crc INT UNSIGNED AS (CRC32(c)) VIRTUAL INDEXED'`): a generated column
//! added to innops's copy of the benchmark table, VIRTUAL (computed when read) or STORED (computed when the row
//! is written, kept in the row), with or without an index on it. Apart from the server: the text parsed into a
//! canonical column, the `ALTER TABLE` clause written from it (never from the text typed), and the proof, as a
//! pure function over what `information_schema.COLUMNS` and `STATISTICS` say of the copy.
//!
//! Why the expression is rebuilt from an allow-list: it is written into an `ALTER TABLE`, so a name, a number,
//! a quoted string, an operator and a function from the list below are the only things it may hold, each
//! written back in a form that cannot end the statement (names quoted, strings quoted again). Whether the
//! expression means anything — a column that exists, a function allowed in a generated column — is the
//! server's to say, on innops's copy only. (Found on MariaDB 10.11 here: a STORED or indexed column over a
//! `CHAR` column, `CRC32(c)` on sbtest's `c CHAR(120)`, is refused with `ERROR 1901 … cannot be used in the
//! GENERATED ALWAYS AS clause`, because a CHAR's value depends on the session's `PAD_CHAR_TO_FULL_LENGTH`;
//! `CRC32(RTRIM(c))` is taken. The copy's build reports such a refusal and leaves the variant out.)

use serde::{Deserialize, Serialize};

use crate::error::bad_input;
use crate::sql::{quote_ident, quote_string};

/// The functions an expression may call.
const FUNCTIONS: &[&str] = &[
    "CRC32",
    "MD5",
    "SHA1",
    "SHA2",
    "LEFT",
    "RIGHT",
    "SUBSTRING",
    "SUBSTR",
    "SUBSTRING_INDEX",
    "LOWER",
    "UPPER",
    "LENGTH",
    "CHAR_LENGTH",
    "CONCAT",
    "CONCAT_WS",
    "REVERSE",
    "TRIM",
    "RTRIM",
    "LTRIM",
    "HEX",
    "ABS",
    "MOD",
    "FLOOR",
    "CEIL",
    "ROUND",
    "IF",
    "IFNULL",
    "COALESCE",
    "JSON_VALUE",
    "JSON_EXTRACT",
    "JSON_UNQUOTE",
    "REPLACE",
];

/// The column types a variant may give, without a length, and those that take one (`VARCHAR(32)`).
const TYPES: [&str; 10] = [
    "INT UNSIGNED",
    "INT",
    "BIGINT UNSIGNED",
    "BIGINT",
    "SMALLINT UNSIGNED",
    "SMALLINT",
    "TINYINT UNSIGNED",
    "TINYINT",
    "DOUBLE",
    "DATE",
];
const SIZED_TYPES: [&str; 4] = ["VARCHAR", "CHAR", "VARBINARY", "BINARY"];

/// A generated column of a variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenColumn {
    /// Lower case, letters, digits and `_`.
    pub name: String,
    /// Canonical: `INT UNSIGNED`, `VARCHAR(32)`.
    pub col_type: String,
    /// Rebuilt from its tokens: names quoted, functions upper case.
    pub expr: String,
    pub stored: bool,
    pub indexed: bool,
}

fn fix() -> &'static str {
    "write it as 'NAME TYPE AS (EXPRESSION) VIRTUAL|STORED [INDEXED]', as 'c_crc INT UNSIGNED AS (CRC32(c)) VIRTUAL INDEXED'"
}

fn refuse(text: &str, why: &str) -> anyhow::Error {
    bad_input(format!("--column-variant {text:?}: {why}"))
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

impl GenColumn {
    /// Parse `NAME TYPE AS (EXPRESSION) VIRTUAL|STORED [INDEXED]` (a leading `COLUMN` allowed).
    pub fn parse(text: &str) -> anyhow::Result<GenColumn> {
        let body = text.trim();
        let body = match body.get(..7) {
            Some(w) if w.eq_ignore_ascii_case("COLUMN ") => body[7..].trim_start(),
            _ => body,
        };
        let (name, rest) = body
            .split_once(char::is_whitespace)
            .ok_or_else(|| refuse(text, fix()))?;
        let name = name.to_ascii_lowercase();
        if !is_name(&name) {
            return Err(refuse(
                text,
                &format!(
                    "'{name}' is not a column name (letters, digits and _): {}",
                    fix()
                ),
            ));
        }
        let upper = rest.to_ascii_uppercase();
        let as_at = upper
            .find(" AS (")
            .or_else(|| upper.find(" AS("))
            .ok_or_else(|| refuse(text, &format!("no AS (EXPRESSION): {}", fix())))?;
        let col_type = parse_type(text, rest[..as_at].trim())?;
        let after_as = rest[as_at..].trim_start()[2..].trim_start();
        let close = closing_paren(after_as).ok_or_else(|| {
            refuse(
                text,
                "the expression's parentheses do not close: balance them",
            )
        })?;
        let expr = expression(text, &after_as[1..close])?;
        let tail: Vec<String> = after_as[close + 1..]
            .split_whitespace()
            .map(str::to_ascii_uppercase)
            .collect();
        let (stored, indexed) = match tail.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["VIRTUAL"] => (false, false),
            ["VIRTUAL", "INDEXED"] => (false, true),
            ["STORED" | "PERSISTENT"] => (true, false),
            ["STORED" | "PERSISTENT", "INDEXED"] => (true, true),
            _ => {
                return Err(refuse(
                    text,
                    &format!(
                        "after the expression give VIRTUAL or STORED, then INDEXED or nothing: {}",
                        fix()
                    ),
                ))
            }
        };
        Ok(GenColumn {
            name,
            col_type,
            expr,
            stored,
            indexed,
        })
    }

    /// The canonical text: how the variant is named in the plan, the report and plan.json.
    pub fn canonical(&self) -> String {
        format!(
            "COLUMN {} {} AS ({}) {}{}",
            self.name,
            self.col_type,
            self.expr,
            if self.stored { "STORED" } else { "VIRTUAL" },
            if self.indexed { " INDEXED" } else { "" }
        )
    }

    /// The name of the index innops gives the column.
    pub fn index_name(&self) -> String {
        format!("innops_{}", self.name)
    }

    /// The `ALTER TABLE` clause: the column, and its index when asked.
    pub fn clause(&self) -> String {
        let mut s = format!(
            "ADD COLUMN {} {} AS ({}) {}",
            quote_ident(&self.name),
            self.col_type,
            self.expr,
            if self.stored { "STORED" } else { "VIRTUAL" }
        );
        if self.indexed {
            s.push_str(&format!(
                ", ADD INDEX {} ({})",
                quote_ident(&self.index_name()),
                quote_ident(&self.name)
            ));
        }
        s
    }
}

fn parse_type(text: &str, t: &str) -> anyhow::Result<String> {
    let t = t
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_uppercase();
    if let Some(ty) = TYPES.iter().find(|ty| **ty == t) {
        return Ok(ty.to_string());
    }
    let sized = SIZED_TYPES.iter().find_map(|ty| {
        let n = t
            .strip_prefix(ty)?
            .trim()
            .strip_prefix('(')?
            .strip_suffix(')')?;
        let n: u32 = n.trim().parse().ok().filter(|n| (1..=1024).contains(n))?;
        Some(format!("{ty}({n})"))
    });
    sized.ok_or_else(|| {
        refuse(
            text,
            &format!(
                "the type '{t}' is not one innops gives a generated column: use {} or {}(N) with N up to 1024",
                TYPES.join(", "),
                SIZED_TYPES.join("(N), ")
            ),
        )
    })
}

/// The index of the `)` that closes the `(` at the start of `s`, outside quoted strings.
fn closing_paren(s: &str) -> Option<usize> {
    if !s.starts_with('(') {
        return None;
    }
    let (mut depth, mut quoted) = (0i32, false);
    for (i, c) in s.char_indices() {
        match c {
            '\'' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The expression rebuilt from allow-listed tokens.
fn expression(text: &str, e: &str) -> anyhow::Result<String> {
    let chars: Vec<char> = e.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let call = chars[i..].iter().find(|c| !c.is_whitespace()) == Some(&'(');
            if call {
                let f = word.to_ascii_uppercase();
                if !FUNCTIONS.contains(&f.as_str()) {
                    return Err(refuse(
                        text,
                        &format!("{f}() is not a function innops puts in a generated column: use one of {}", FUNCTIONS.join(", ")),
                    ));
                }
                out.push_str(&f);
            } else {
                out.push_str(&quote_ident(&word.to_ascii_lowercase()));
            }
        } else if c == '`' {
            let end = (i + 1..chars.len()).find(|&j| chars[j] == '`');
            let name: String = end.map_or(String::new(), |e| chars[i + 1..e].iter().collect());
            if !is_name(&name) {
                return Err(refuse(
                    text,
                    "a `quoted` name in the expression is not a column name (letters, digits and _)",
                ));
            }
            out.push_str(&quote_ident(&name.to_ascii_lowercase()));
            i = end.map_or(chars.len(), |e| e + 1);
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            let n: String = chars[start..i].iter().collect();
            if n.matches('.').count() > 1 || n.ends_with('.') {
                return Err(refuse(text, &format!("'{n}' is not a number")));
            }
            out.push_str(&n);
        } else if c == '\'' {
            let mut s = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => {
                        return Err(refuse(
                            text,
                            "a quoted string is never closed: close it with '",
                        ))
                    }
                    Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                        s.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some('\\') => {
                        return Err(refuse(
                            text,
                            "a backslash in a quoted string: write the string without one",
                        ))
                    }
                    Some(&ch) => {
                        s.push(ch);
                        i += 1;
                    }
                }
            }
            out.push_str(&quote_string(&s));
        } else if "+-*/%(),<>=!".contains(c) {
            out.push(c);
            i += 1;
            // Two-character comparisons stay whole.
            if matches!(
                (c, chars.get(i)),
                ('<' | '>' | '!', Some('=')) | ('<', Some('>'))
            ) {
                out.push(chars[i]);
                i += 1;
            }
            if c == ',' {
                out.push(' ');
            }
            continue;
        } else {
            return Err(refuse(
                text,
                &format!("'{c}' is not allowed in the expression: use column names, numbers, 'strings', + - * / % comparisons and the listed functions"),
            ));
        }
    }
    if out.is_empty() {
        return Err(refuse(text, &format!("the expression is empty: {}", fix())));
    }
    Ok(out)
}

/// What the server's dictionary says of a generated column of the copy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ColumnDef {
    pub name: String,
    /// `information_schema.COLUMNS.COLUMN_TYPE`, `EXTRA`, `GENERATION_EXPRESSION`.
    pub column_type: String,
    pub extra: String,
    pub expression: String,
    /// An index of the table starts with the column (`information_schema.STATISTICS`, `SEQ_IN_INDEX = 1`).
    pub indexed: bool,
}

/// Lower case, no backquotes, no spaces, integer display widths dropped: how a type or expression compares
/// with the server's spelling of it.
fn norm(s: &str) -> String {
    let s: String = s
        .to_ascii_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace() && *c != '`')
        .collect();
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(i) = rest.find("int(") {
        out.push_str(&rest[..i + 3]);
        let after = &rest[i + 4..];
        rest = after.find(')').map_or(after, |j| &after[j + 1..]);
    }
    out.push_str(rest);
    out
}

/// Whether the copy's generated column `d` is column `c`: None when it is, else what differs, in words.
pub fn disproof(c: &GenColumn, d: Option<&ColumnDef>) -> Option<String> {
    let Some(d) = d else {
        return Some(format!("the table has no generated column {}", c.name));
    };
    let mut wrong = Vec::new();
    let kind = if c.stored { "STORED" } else { "VIRTUAL" };
    let extra = d.extra.to_ascii_uppercase();
    let is_stored = extra.contains("STORED") || extra.contains("PERSISTENT");
    if !extra.contains("GENERATED") || is_stored != c.stored {
        wrong.push(format!("{} is {:?}, not {kind} GENERATED", c.name, d.extra));
    }
    if norm(&d.column_type) != norm(&c.col_type) {
        wrong.push(format!("its type is {}, not {}", d.column_type, c.col_type));
    }
    if norm(&d.expression) != norm(&c.expr) {
        wrong.push(format!(
            "its expression is {}, not {}",
            d.expression, c.expr
        ));
    }
    if d.indexed != c.indexed {
        wrong.push(if c.indexed {
            "no index starts with it".to_string()
        } else {
            "an index starts with it".to_string()
        });
    }
    (!wrong.is_empty()).then(|| wrong.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_variant_is_canonical_and_its_clause_is_rebuilt() {
        let c = GenColumn::parse("c_crc int unsigned as (crc32( c )) virtual indexed").unwrap();
        assert_eq!(
            c.canonical(),
            "COLUMN c_crc INT UNSIGNED AS (CRC32(`c`)) VIRTUAL INDEXED"
        );
        assert_eq!(
            c.clause(),
            "ADD COLUMN `c_crc` INT UNSIGNED AS (CRC32(`c`)) VIRTUAL, ADD INDEX `innops_c_crc` (`c_crc`)"
        );
        // The canonical text parses back to the same column (plan.json keeps it).
        assert_eq!(GenColumn::parse(&c.canonical()).unwrap(), c);
        let s =
            GenColumn::parse("k10 BIGINT AS (k % 10 + LENGTH(LEFT(pad, 3))) PERSISTENT").unwrap();
        assert_eq!(
            s.canonical(),
            "COLUMN k10 BIGINT AS (`k`%10+LENGTH(LEFT(`pad`, 3))) STORED"
        );
        assert!(!s.clause().contains("INDEX"));
        let v = GenColumn::parse("p VARCHAR( 8 ) AS (CONCAT(c, 'it''s')) STORED INDEXED").unwrap();
        assert_eq!(v.col_type, "VARCHAR(8)");
        assert_eq!(v.expr, "CONCAT(`c`, 'it''s')");
    }

    #[test]
    fn a_bad_column_variant_is_refused_in_one_sentence_naming_the_fix() {
        for (bad, says) in [
            ("c_crc", "write it as"),
            ("1x INT AS (k) VIRTUAL", "is not a column name"),
            ("c2 INT (k) VIRTUAL", "no AS (EXPRESSION)"),
            ("c2 TEXT AS (c) VIRTUAL", "the type 'TEXT' is not one"),
            ("c2 VARCHAR(5000) AS (c) VIRTUAL", "is not one innops gives"),
            ("c2 INT AS (CRC32(c) VIRTUAL", "do not close"),
            ("c2 INT AS (SLEEP(1)) VIRTUAL", "SLEEP() is not a function"),
            (
                "c2 INT AS (k); DROP TABLE t; --) VIRTUAL",
                "after the expression",
            ),
            ("c2 INT AS (k;1) VIRTUAL", "';' is not allowed"),
            ("c2 INT AS (k) /* x */ VIRTUAL", "after the expression"),
            ("c2 INT AS (`k x`) VIRTUAL", "is not a column name"),
            ("c2 INT AS (`k) VIRTUAL", "is not a column name"),
            ("c2 INT AS ('a\\') VIRTUAL", "backslash"),
            ("c2 INT AS (k) VIRTUAL UNIQUE", "after the expression"),
            ("c2 INT AS () VIRTUAL", "the expression is empty"),
            ("c2 INT AS (1.2.3) STORED", "is not a number"),
        ] {
            let e = crate::error::display_of(&GenColumn::parse(bad).unwrap_err());
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_column_is_proven_from_the_dictionary() {
        let c = GenColumn::parse("c_crc INT UNSIGNED AS (CRC32(c)) VIRTUAL INDEXED").unwrap();
        let d = ColumnDef {
            name: "c_crc".into(),
            column_type: "int(10) unsigned".into(),
            extra: "VIRTUAL GENERATED".into(),
            expression: "crc32(`c`)".into(),
            indexed: true,
        };
        assert_eq!(disproof(&c, Some(&d)), None);
        let stored = ColumnDef {
            extra: "STORED GENERATED".into(),
            indexed: false,
            ..d.clone()
        };
        let why = disproof(&c, Some(&stored)).unwrap();
        assert!(
            why.contains("not VIRTUAL GENERATED") && why.contains("no index"),
            "{why}"
        );
        assert!(disproof(&c, None)
            .unwrap()
            .contains("no generated column c_crc"));
        let other = ColumnDef {
            expression: "crc32(`pad`)".into(),
            ..d
        };
        assert!(disproof(&c, Some(&other))
            .unwrap()
            .contains("its expression is"));
    }
}
