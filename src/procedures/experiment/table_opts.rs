//! Table variants of an experiment, apart from the server: `--table-option` parsed against an allow-list into
//! canonical options, the `ALTER TABLE` clause built from them (never from the text the user typed), and the
//! proof that a copy took the variant, as a pure function over what the server's dictionary says.
//!
//! Why the proof reads the dictionary and not `SHOW CREATE TABLE`: InnoDB keeps the options it was given in
//! the table's `CREATE_OPTIONS` even when it ignores them (`KEY_BLOCK_SIZE` under `innodb_strict_mode=OFF`
//! with `innodb_file_per_table=OFF`, for one): what the table *is* shows in `information_schema.TABLES`'s
//! `ENGINE` and `ROW_FORMAT`, and for InnoDB in `INNODB_SYS_TABLES` (`ZIP_PAGE_SIZE`, and `FLAG` bit 7 for
//! page compression, bits 8–11 its level: MariaDB's `DICT_TF_MASK_PAGE_COMPRESSION` and `…_LEVEL`).

use serde::{Deserialize, Serialize};

use super::columns::{self, ColumnDef, GenColumn};
use crate::error::bad_input;

/// The engines a variant may name, in their canonical spelling.
pub const ENGINES: [&str; 4] = ["InnoDB", "RocksDB", "Aria", "MyISAM"];
const ROW_FORMATS: [&str; 7] = [
    "DYNAMIC",
    "COMPACT",
    "REDUNDANT",
    "COMPRESSED",
    "PAGE",
    "FIXED",
    "DEFAULT",
];
const KEY_BLOCK_SIZES: [u32; 5] = [1, 2, 4, 8, 16];

/// One table variant: its options, canonical and in a fixed order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TableVariant {
    pub engine: Option<String>,
    pub row_format: Option<String>,
    pub key_block_size: Option<u32>,
    pub page_compressed: Option<bool>,
    pub page_compression_level: Option<u32>,
    /// Aria's `TRANSACTIONAL=0|1`.
    pub transactional: Option<bool>,
    /// A column variant: a generated column added to the copy (and nothing else in this variant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<GenColumn>,
}

fn fix() -> &'static str {
    "give options such as 'ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8', 'PAGE_COMPRESSED=1 PAGE_COMPRESSION_LEVEL=6' or 'ENGINE=Aria' (options of one variant separated by spaces, variants by commas)"
}

fn flag(name: &str, v: &str) -> anyhow::Result<bool> {
    match v {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(bad_input(format!(
            "--table-option {name}={v}: {name} takes 0 or 1"
        ))),
    }
}

impl TableVariant {
    /// Parse one variant, `NAME=VALUE NAME=VALUE …`, each name and value checked against the allow-list.
    pub fn parse(text: &str) -> anyhow::Result<TableVariant> {
        if text
            .trim_start()
            .get(..7)
            .is_some_and(|w| w.eq_ignore_ascii_case("COLUMN "))
        {
            return Ok(TableVariant {
                column: Some(GenColumn::parse(text)?),
                ..TableVariant::default()
            });
        }
        let mut t = TableVariant::default();
        let words: Vec<&str> = text.split_whitespace().collect();
        if words.is_empty() {
            return Err(bad_input(format!(
                "--table-option has an empty variant: {}",
                fix()
            )));
        }
        for w in words {
            let Some((name, value)) = w.split_once('=') else {
                return Err(bad_input(format!(
                    "--table-option {w:?} is not NAME=VALUE: {}",
                    fix()
                )));
            };
            let name = name.to_ascii_uppercase();
            let upper = value.to_ascii_uppercase();
            let taken = match name.as_str() {
                "ENGINE" => {
                    let e = ENGINES.iter().find(|e| e.eq_ignore_ascii_case(value));
                    let e = e.ok_or_else(|| {
                        bad_input(format!(
                            "--table-option ENGINE={value}: innops experiments with {} only: name one of them",
                            ENGINES.join(", ")
                        ))
                    })?;
                    t.engine.replace(e.to_string()).is_some()
                }
                "ROW_FORMAT" => {
                    if !ROW_FORMATS.contains(&upper.as_str()) {
                        return Err(bad_input(format!(
                            "--table-option ROW_FORMAT={value}: give one of {}",
                            ROW_FORMATS.join(", ")
                        )));
                    }
                    t.row_format.replace(upper).is_some()
                }
                "KEY_BLOCK_SIZE" => {
                    let n = value.parse().ok().filter(|n| KEY_BLOCK_SIZES.contains(n));
                    let n = n.ok_or_else(|| {
                        bad_input(format!(
                            "--table-option KEY_BLOCK_SIZE={value}: give 1, 2, 4, 8 or 16 (kilobytes)"
                        ))
                    })?;
                    t.key_block_size.replace(n).is_some()
                }
                "PAGE_COMPRESSED" => t.page_compressed.replace(flag(&name, value)?).is_some(),
                "PAGE_COMPRESSION_LEVEL" => {
                    let n = value.parse().ok().filter(|n| (1..=9).contains(n));
                    let n = n.ok_or_else(|| {
                        bad_input(format!(
                            "--table-option PAGE_COMPRESSION_LEVEL={value}: give 1 to 9"
                        ))
                    })?;
                    t.page_compression_level.replace(n).is_some()
                }
                "TRANSACTIONAL" => t.transactional.replace(flag(&name, value)?).is_some(),
                _ => {
                    return Err(bad_input(format!(
                        "--table-option {name} is not an option innops experiments with: use ENGINE, ROW_FORMAT, KEY_BLOCK_SIZE, PAGE_COMPRESSED, PAGE_COMPRESSION_LEVEL or TRANSACTIONAL"
                    )))
                }
            };
            if taken {
                return Err(bad_input(format!(
                    "--table-option {text:?} names {name} twice: give it once per variant"
                )));
            }
        }
        t.check_combination(text)?;
        Ok(t)
    }

    /// Combinations the server would refuse or silently bend, refused here with the fix.
    fn check_combination(&self, text: &str) -> anyhow::Result<()> {
        let innodb = self.engine.as_deref().is_none_or(|e| e == "InnoDB");
        let compressed_rows =
            self.key_block_size.is_some() || self.row_format.as_deref() == Some("COMPRESSED");
        let why = if !innodb && (self.page_compressed.is_some() || self.key_block_size.is_some()) {
            Some("KEY_BLOCK_SIZE and PAGE_COMPRESSED are InnoDB's: drop them or ENGINE")
        } else if self.page_compressed == Some(true) && compressed_rows {
            Some(
                "InnoDB cannot page-compress a ROW_FORMAT=COMPRESSED table: make them two variants",
            )
        } else if self.page_compression_level.is_some() && self.page_compressed != Some(true) {
            Some("PAGE_COMPRESSION_LEVEL needs PAGE_COMPRESSED=1 in the same variant: add it")
        } else if self.transactional.is_some() && self.engine.as_deref() != Some("Aria") {
            Some("TRANSACTIONAL is Aria's: add ENGINE=Aria or drop it")
        } else {
            None
        };
        match why {
            Some(why) => Err(bad_input(format!("--table-option {text:?}: {why}"))),
            None => Ok(()),
        }
    }

    /// The canonical text: how the variant is named in the plan, the report and plan.json.
    pub fn canonical(&self) -> String {
        match &self.column {
            Some(c) => c.canonical(),
            None => self.clauses().join(" "),
        }
    }

    /// The `ALTER TABLE` clauses, each from an allow-listed name and a checked value.
    pub fn clauses(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(c) = &self.column {
            out.push(c.clause());
        }
        if let Some(e) = &self.engine {
            out.push(format!("ENGINE={e}"));
        }
        if let Some(r) = &self.row_format {
            out.push(format!("ROW_FORMAT={r}"));
        }
        if let Some(k) = self.key_block_size {
            out.push(format!("KEY_BLOCK_SIZE={k}"));
        }
        if let Some(p) = self.page_compressed {
            out.push(format!("PAGE_COMPRESSED={}", u8::from(p)));
        }
        if let Some(l) = self.page_compression_level {
            out.push(format!("PAGE_COMPRESSION_LEVEL={l}"));
        }
        if let Some(t) = self.transactional {
            out.push(format!("TRANSACTIONAL={}", u8::from(t)));
        }
        out
    }
}

/// Every variant of `--table-option` (its values, each one variant), parsed; a variant given twice is refused.
pub fn parse_all(args: &[String]) -> anyhow::Result<Vec<TableVariant>> {
    let mut out: Vec<TableVariant> = Vec::new();
    for a in args {
        let t = TableVariant::parse(a)?;
        if out.contains(&t) {
            return Err(bad_input(format!(
                "--table-option gives {} twice: give each variant once",
                t.canonical()
            )));
        }
        out.push(t);
    }
    Ok(out)
}

/// What the server's dictionary says a table is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableDef {
    pub engine: String,
    pub row_format: String,
    pub create_options: String,
    /// `INNODB_SYS_TABLES.FLAG` and `ZIP_PAGE_SIZE`, for an InnoDB table.
    pub innodb_flag: Option<u64>,
    pub zip_page_size: Option<u64>,
    /// The table's generated columns, as `information_schema.COLUMNS` and `STATISTICS` give them.
    pub generated: Vec<ColumnDef>,
}

impl TableDef {
    pub fn describe(&self) -> String {
        let mut s = format!("ENGINE={} ROW_FORMAT={}", self.engine, self.row_format);
        if let Some(z) = self.zip_page_size.filter(|z| *z > 0) {
            s.push_str(&format!(" (compressed pages of {} KB)", z / 1024));
        }
        if let Some(f) = self.innodb_flag.filter(|f| f & 128 != 0) {
            s.push_str(&format!(" (page-compressed, level {})", (f >> 8) & 15));
        }
        for g in &self.generated {
            s.push_str(&format!(
                " {} {} AS ({}) {}{}",
                g.name,
                g.column_type,
                g.expression,
                g.extra,
                if g.indexed { " INDEXED" } else { "" }
            ));
        }
        s
    }
}

/// Whether table `d` is variant `t`: None when it is, else what differs, in words.
pub fn disproof(t: &TableVariant, d: &TableDef) -> Option<String> {
    let mut wrong = Vec::new();
    if let Some(c) = &t.column {
        let found = d
            .generated
            .iter()
            .find(|g| g.name.eq_ignore_ascii_case(&c.name));
        wrong.extend(columns::disproof(c, found));
    }
    if let Some(e) = &t.engine {
        if !e.eq_ignore_ascii_case(&d.engine) {
            wrong.push(format!("ENGINE is {}, not {e}", d.engine));
        }
    }
    let row_format = t
        .row_format
        .as_deref()
        .or(t.key_block_size.map(|_| "COMPRESSED"));
    if let Some(r) = row_format.filter(|r| *r != "DEFAULT") {
        if !r.eq_ignore_ascii_case(&d.row_format) {
            wrong.push(format!("ROW_FORMAT is {}, not {r}", d.row_format));
        }
    }
    if let Some(k) = t.key_block_size {
        let zip = d.zip_page_size.unwrap_or(0);
        if zip != u64::from(k) * 1024 {
            wrong.push(format!(
                "its compressed page size is {} KB, not KEY_BLOCK_SIZE={k}",
                zip / 1024
            ));
        }
    }
    if let Some(p) = t.page_compressed {
        let flag = d.innodb_flag.unwrap_or(0);
        if (flag & 128 != 0) != p {
            wrong.push(format!(
                "InnoDB's dictionary has page compression {}",
                if p { "off" } else { "on" }
            ));
        }
        if let Some(l) = t.page_compression_level {
            if (flag >> 8) & 15 != u64::from(l) {
                wrong.push(format!(
                    "its page compression level is {}, not {l}",
                    (flag >> 8) & 15
                ));
            }
        }
    }
    if let Some(tr) = t.transactional {
        let want = format!("transactional={}", u8::from(tr));
        if !d.create_options.to_ascii_lowercase().contains(&want) {
            wrong.push(format!(
                "its options are {:?}, not {want}",
                d.create_options
            ));
        }
    }
    (!wrong.is_empty()).then(|| wrong.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_canonical_whatever_their_case_and_order() {
        let t = TableVariant::parse("key_block_size=8 row_format=compressed").unwrap();
        assert_eq!(t.canonical(), "ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8");
        assert_eq!(
            TableVariant::parse("engine=aria").unwrap().canonical(),
            "ENGINE=Aria"
        );
        let p = TableVariant::parse("PAGE_COMPRESSED=1 PAGE_COMPRESSION_LEVEL=6").unwrap();
        assert_eq!(
            p.clauses(),
            ["PAGE_COMPRESSED=1", "PAGE_COMPRESSION_LEVEL=6"]
        );
    }

    #[test]
    fn anything_off_the_allow_list_is_refused_naming_the_fix() {
        for (bad, says) in [
            ("ENGINE=Memory", "ENGINE=Memory: innops experiments with"),
            ("ENGINE=InnoDB;DROP", "ENGINE=InnoDB;DROP"),
            ("KEY_BLOCK_SIZE=3", "give 1, 2, 4, 8 or 16"),
            ("COMMENT='x'", "COMMENT is not an option"),
            ("ROW_FORMAT", "is not NAME=VALUE"),
            ("ENGINE=Aria ENGINE=MyISAM", "names ENGINE twice"),
            ("ENGINE=Aria KEY_BLOCK_SIZE=8", "are InnoDB's"),
            (
                "ROW_FORMAT=COMPRESSED PAGE_COMPRESSED=1",
                "cannot page-compress",
            ),
            ("PAGE_COMPRESSION_LEVEL=3", "needs PAGE_COMPRESSED=1"),
            ("PAGE_COMPRESSED=yes", "takes 0 or 1"),
            ("   ", "empty variant"),
        ] {
            let e = TableVariant::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains('\n'), "one sentence: {e}");
        }
        let twice = parse_all(&["ENGINE=Aria".into(), "engine=aria".into()]).unwrap_err();
        assert!(twice.to_string().contains("twice"), "{twice}");
    }

    fn def(engine: &str, row_format: &str, flag: Option<u64>, zip: Option<u64>) -> TableDef {
        TableDef {
            engine: engine.into(),
            row_format: row_format.into(),
            create_options: String::new(),
            innodb_flag: flag,
            zip_page_size: zip,
            generated: Vec::new(),
        }
    }

    #[test]
    fn a_variant_the_server_ignored_is_disproven() {
        let kbs = TableVariant::parse("ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8").unwrap();
        assert_eq!(
            disproof(&kbs, &def("InnoDB", "Compressed", Some(41), Some(8192))),
            None
        );
        // innodb_strict_mode=OFF with innodb_file_per_table=OFF: a warning, and a Dynamic table.
        let d = disproof(&kbs, &def("InnoDB", "Dynamic", Some(33), Some(0))).unwrap();
        assert!(d.contains("ROW_FORMAT is Dynamic, not COMPRESSED"), "{d}");
        let pc = TableVariant::parse("PAGE_COMPRESSED=1 PAGE_COMPRESSION_LEVEL=6").unwrap();
        assert_eq!(
            disproof(&pc, &def("InnoDB", "Dynamic", Some(1697), Some(0))),
            None
        );
        assert!(disproof(&pc, &def("InnoDB", "Dynamic", Some(33), Some(0))).is_some());
        let aria = TableVariant::parse("ENGINE=Aria").unwrap();
        assert!(disproof(&aria, &def("InnoDB", "Dynamic", None, None))
            .unwrap()
            .contains("ENGINE is InnoDB, not Aria"));
        assert_eq!(disproof(&aria, &def("Aria", "Page", None, None)), None);
    }
}
