//! What the record parser must know of a table: its stored columns with the types as InnoDB stores them
//! (lengths, precision, signedness, character set), which may be NULL, the clustered index's columns in order,
//! and the row format. Built from information_schema's words ([`ColumnSpec`], what `COLUMNS` says of a
//! column) by a pure function, so that the server query (in `dump::page_def`) and a later `.frm` reader can
//! both feed it.

/// The row formats InnoDB has; the parser reads all but COMPRESSED.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFormat {
    Compact,
    Dynamic,
    Redundant,
    Compressed,
}

impl RowFormat {
    /// information_schema.TABLES.ROW_FORMAT's word (`Dynamic`, `Compact`, …).
    pub fn of(word: &str) -> Result<RowFormat, String> {
        match word.to_ascii_lowercase().as_str() {
            "compact" => Ok(RowFormat::Compact),
            "dynamic" => Ok(RowFormat::Dynamic),
            "redundant" => Ok(RowFormat::Redundant),
            "compressed" => Ok(RowFormat::Compressed),
            other => Err(format!("row format '{other}' is not an InnoDB row format")),
        }
    }
}

/// A character set the parser knows the byte widths of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    Latin1,
    Ascii,
    Utf8mb3,
    Utf8mb4,
}

impl Charset {
    fn of(name: &str) -> Result<Charset, String> {
        match name.to_ascii_lowercase().as_str() {
            "latin1" => Ok(Charset::Latin1),
            "ascii" => Ok(Charset::Ascii),
            "utf8" | "utf8mb3" => Ok(Charset::Utf8mb3),
            "utf8mb4" => Ok(Charset::Utf8mb4),
            other => Err(format!("character set {other} is not handled yet")),
        }
    }

    /// The most bytes one character takes.
    pub fn max_len(self) -> usize {
        match self {
            Charset::Latin1 | Charset::Ascii => 1,
            Charset::Utf8mb3 => 3,
            Charset::Utf8mb4 => 4,
        }
    }
}

/// A column type as InnoDB stores it in a clustered-index record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColType {
    /// TINYINT (1) … BIGINT (8) bytes.
    Int {
        bytes: usize,
        unsigned: bool,
    },
    /// FLOAT and DOUBLE (REAL): `decimals` is D of `FLOAT(M,D)`, which the server prints with D fixed
    /// decimals; `None` prints the shortest digits (FLOAT rounded to 6).
    Float {
        decimals: Option<usize>,
    },
    Double {
        decimals: Option<usize>,
    },
    Decimal {
        precision: usize,
        scale: usize,
    },
    /// CHAR(chars): fixed in a single-byte character set, else between `chars` and `chars × max_len` bytes.
    Char {
        chars: usize,
        charset: Charset,
    },
    Varchar {
        chars: usize,
        charset: Charset,
    },
    Binary {
        bytes: usize,
    },
    Varbinary {
        bytes: usize,
    },
    /// The TEXT and BLOB families (a character set for TEXT), up to `max` bytes.
    Blob {
        max: u64,
        charset: Option<Charset>,
    },
    Date,
    Datetime {
        fsp: usize,
    },
    Timestamp {
        fsp: usize,
    },
    Time {
        fsp: usize,
    },
    Year,
    Enum(Vec<String>),
    Set(Vec<String>),
    Bit {
        bits: usize,
    },
}

/// One stored column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    pub name: String,
    pub ty: ColType,
    pub nullable: bool,
    /// Its collation compares bytes (`binary`, `*_bin`): key order can be checked on its bytes.
    pub byte_order: bool,
}

/// A table as the parser reads its clustered index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableDef {
    /// Stored columns in table order (virtual generated columns are not in the record).
    pub columns: Vec<ColumnDef>,
    /// Positions in `columns` of the clustered index's columns, in key order; empty: InnoDB's hidden 6-byte
    /// row id (`DB_ROW_ID`) is the key.
    pub key: Vec<usize>,
    pub format: RowFormat,
}

/// What information_schema.COLUMNS says of one column.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ColumnSpec {
    pub name: String,
    /// `DATA_TYPE` (`int`, `varchar`, …).
    pub data_type: String,
    /// `COLUMN_TYPE` (`int(10) unsigned`, `varchar(20)`, `enum('a','b')`, …).
    pub column_type: String,
    pub nullable: bool,
    pub charset: Option<String>,
    pub collation: Option<String>,
    /// `EXTRA` (`VIRTUAL GENERATED` columns are not stored).
    pub extra: String,
}

/// The numbers in `COLUMN_TYPE`'s parentheses (`decimal(10,3)` → [10, 3]); none when there are none.
fn args(column_type: &str) -> Vec<usize> {
    let Some(open) = column_type.find('(') else {
        return Vec::new();
    };
    let inner = column_type[open + 1..].split(')').next().unwrap_or("");
    inner
        .split(',')
        .filter_map(|a| a.trim().parse().ok())
        .collect()
}

/// The members of `enum('a','it''s')` or `set(…)`, unquoted.
fn members(column_type: &str) -> Result<Vec<String>, String> {
    let open = column_type.find('(').ok_or("no member list")?;
    let b: Vec<char> = column_type[open + 1..].chars().collect();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() && b[i] == '\'' {
        let mut m = String::new();
        i += 1;
        loop {
            match (b.get(i), b.get(i + 1)) {
                (Some('\''), Some('\'')) => {
                    m.push('\'');
                    i += 2;
                }
                (Some('\\'), Some(&c)) => {
                    m.push(c);
                    i += 2;
                }
                (Some('\''), _) => {
                    i += 1;
                    break;
                }
                (Some(&c), _) => {
                    m.push(c);
                    i += 1;
                }
                (None, _) => return Err("an unterminated member".into()),
            }
        }
        out.push(m);
        if b.get(i) == Some(&',') {
            i += 1;
        }
    }
    Ok(out)
}

/// The type of one column, from what information_schema says of it.
pub fn col_type(spec: &ColumnSpec) -> Result<ColType, String> {
    let ct = spec.column_type.to_ascii_lowercase();
    let a = args(&ct);
    let first = |d: usize| a.first().copied().unwrap_or(d);
    let unsigned = ct.contains("unsigned");
    let charset = || {
        spec.charset
            .as_deref()
            .ok_or_else(|| format!("column {} has no character set", spec.name))
            .and_then(Charset::of)
    };
    let int = |bytes| Ok(ColType::Int { bytes, unsigned });
    let numeric = matches!(
        spec.data_type.to_ascii_lowercase().as_str(),
        "tinyint" | "smallint" | "mediumint" | "int" | "bigint" | "float" | "double" | "decimal"
    );
    if numeric && ct.ends_with(" zerofill") {
        // The server pads the value with zeros to the column's display width.
        return Err(format!(
            "column {} is a ZEROFILL {}, whose zero-padded text the page parser does not reproduce yet",
            spec.name, spec.data_type
        ));
    }
    match spec.data_type.to_ascii_lowercase().as_str() {
        "tinyint" => int(1),
        "smallint" => int(2),
        "mediumint" => int(3),
        "int" => int(4),
        "bigint" => int(8),
        "float" => Ok(ColType::Float {
            decimals: a.get(1).copied(),
        }),
        "double" => Ok(ColType::Double {
            decimals: a.get(1).copied(),
        }),
        "decimal" => Ok(ColType::Decimal {
            precision: first(10),
            scale: a.get(1).copied().unwrap_or(0),
        }),
        "char" => Ok(ColType::Char {
            chars: first(1),
            charset: charset()?,
        }),
        "varchar" => Ok(ColType::Varchar {
            chars: first(1),
            charset: charset()?,
        }),
        "binary" => Ok(ColType::Binary { bytes: first(1) }),
        "varbinary" => Ok(ColType::Varbinary { bytes: first(1) }),
        t @ ("tinyblob" | "blob" | "mediumblob" | "longblob" | "tinytext" | "text"
        | "mediumtext" | "longtext") => Ok(ColType::Blob {
            max: match &t[..t.len() - 4] {
                "tiny" => 255,
                "" => 65535,
                "medium" => (1 << 24) - 1,
                _ => (1 << 32) - 1,
            },
            charset: if t.ends_with("text") {
                Some(charset()?)
            } else {
                None
            },
        }),
        "date" => Ok(ColType::Date),
        "datetime" => Ok(ColType::Datetime { fsp: first(0) }),
        "timestamp" => Ok(ColType::Timestamp { fsp: first(0) }),
        "time" => Ok(ColType::Time { fsp: first(0) }),
        "year" => Ok(ColType::Year),
        "enum" => Ok(ColType::Enum(members(&spec.column_type)?)),
        "set" => Ok(ColType::Set(members(&spec.column_type)?)),
        "bit" => Ok(ColType::Bit { bits: first(1) }),
        other => Err(format!(
            "column {} has type {other}, which the page parser does not handle yet",
            spec.name
        )),
    }
}

/// A table definition from information_schema's columns (in `ORDINAL_POSITION` order), the clustered index's
/// column names in key order (empty: the hidden row id), and `TABLES.ROW_FORMAT`.
pub fn table_def(specs: &[ColumnSpec], key: &[String], format: &str) -> Result<TableDef, String> {
    let format = RowFormat::of(format)?;
    let mut columns = Vec::new();
    for s in specs {
        if s.extra.to_ascii_uppercase().contains("VIRTUAL") {
            continue;
        }
        let collation = s.collation.as_deref().unwrap_or("binary");
        columns.push(ColumnDef {
            name: s.name.clone(),
            ty: col_type(s)?,
            nullable: s.nullable,
            byte_order: collation == "binary" || collation.ends_with("_bin"),
        });
    }
    let mut positions = Vec::new();
    for k in key {
        let at = columns
            .iter()
            .position(|c| &c.name == k)
            .ok_or_else(|| format!("key column {k} is not a stored column of the table"))?;
        if columns[at].nullable {
            return Err(format!(
                "key column {k} may be NULL, which a clustered key cannot"
            ));
        }
        positions.push(at);
    }
    Ok(TableDef {
        columns,
        key: positions,
        format,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, data_type: &str, column_type: &str, cs: Option<&str>) -> ColumnSpec {
        ColumnSpec {
            name: name.into(),
            data_type: data_type.into(),
            column_type: column_type.into(),
            nullable: name != "id",
            charset: cs.map(Into::into),
            collation: cs.map(|c| format!("{c}_general_ci")),
            extra: String::new(),
        }
    }

    #[test]
    fn column_types_come_from_information_schemas_words() {
        let t = |d, c, cs| col_type(&spec("c", d, c, cs)).unwrap();
        assert_eq!(
            t("int", "int(10) unsigned", None),
            ColType::Int {
                bytes: 4,
                unsigned: true
            }
        );
        assert_eq!(
            t("decimal", "decimal(20,6)", None),
            ColType::Decimal {
                precision: 20,
                scale: 6
            }
        );
        assert_eq!(
            t("varchar", "varchar(20)", Some("utf8mb4")),
            ColType::Varchar {
                chars: 20,
                charset: Charset::Utf8mb4
            }
        );
        assert_eq!(
            t("datetime", "datetime(6)", None),
            ColType::Datetime { fsp: 6 }
        );
        assert_eq!(t("time", "time", None), ColType::Time { fsp: 0 });
        assert_eq!(
            t("enum", "enum('a','it''s','b,c')", None),
            ColType::Enum(vec!["a".into(), "it's".into(), "b,c".into()])
        );
        assert_eq!(
            t("longtext", "longtext", Some("utf8mb4")),
            ColType::Blob {
                max: (1 << 32) - 1,
                charset: Some(Charset::Utf8mb4)
            }
        );
        assert_eq!(
            t("float", "float(7,3) unsigned", None),
            ColType::Float { decimals: Some(3) }
        );
        assert_eq!(
            t("double", "double", None),
            ColType::Double { decimals: None }
        );
        for (ty, ct) in [
            ("float", "float unsigned zerofill"),
            ("smallint", "smallint(5) unsigned zerofill"),
            ("decimal", "decimal(8,2) unsigned zerofill"),
        ] {
            assert!(
                col_type(&spec("z", ty, ct, None))
                    .unwrap_err()
                    .contains("ZEROFILL"),
                "{ct}"
            );
        }
        // An ENUM member that reads "zerofill" is no ZEROFILL.
        assert!(col_type(&spec("e", "enum", "enum('a zerofill')", Some("latin1"))).is_ok());
        assert!(col_type(&spec("g", "point", "point", None))
            .unwrap_err()
            .contains("does not handle yet"));
        assert!(col_type(&spec("u", "varchar", "varchar(3)", Some("utf16")))
            .unwrap_err()
            .contains("utf16"));
    }

    #[test]
    fn the_key_is_named_columns_and_virtual_columns_are_left_out() {
        let mut v = spec("v", "int", "int(11)", None);
        v.extra = "VIRTUAL GENERATED".into();
        let specs = [
            spec("id", "int", "int(11)", None),
            v,
            spec("b", "blob", "blob", None),
        ];
        let d = table_def(&specs, &["id".into()], "Dynamic").unwrap();
        assert_eq!(d.columns.len(), 2);
        assert_eq!((d.key.clone(), d.format), (vec![0], RowFormat::Dynamic));
        assert!(d.columns[1].byte_order);
        assert!(table_def(&specs, &["b".into()], "Dynamic")
            .unwrap_err()
            .contains("may be NULL"));
        assert!(table_def(&specs, &["v".into()], "Dynamic").is_err());
        assert!(table_def(&specs, &[], "Fixed").is_err());
    }
}
