//! A table's definition read from its `.frm` file, for when no server can be asked (the copy does not start at
//! any forced-recovery level): MariaDB writes one per table beside the `.ibd` (`sql/unireg.cc` writes it,
//! `TABLE_SHARE::init_from_binary_frm_image` in `sql/table.cc` reads it). The layout read here, all integers
//! little-endian:
//!
//! - the 64-byte header: `FE 01`, the format version (11 since MariaDB 10.2, which stores generated columns and
//!   defaults as expressions), the engine's legacy code (12: InnoDB), the length of the `extra2` segment (at 4),
//!   where the keys start (at 6), the record length (at 16), the row format (at 40);
//! - `extra2` at 64: sections of (type, length, bytes); the one read here names a column's data-type plugin
//!   (`UUID`, `INET6`), whose values read like `BINARY(16)`'s bytes but are not that type;
//! - the position of the form info (4 bytes after `extra2`); the form info is 288 bytes: the number of
//!   columns (at 258), the screens' length (260), the names' (268), the enum/set lists' count and length
//!   (270, 274), the comments' length (284) and the generated-column expressions' (286);
//! - after it the screens, then one 17-byte record per column (its length in bytes at 3, its pack flags at 8
//!   — bit 0 set for a signed number, bit 15 for NULL allowed, bits 8..14 the decimals — its enum/set list at
//!   12, its type code at 13, its collation id in bytes 14 (low) and 11 (high)), then the names
//!   (`\xff`-separated, `\0`-ended), the enum/set lists (each with its own separator), the comments, and the
//!   expressions (each: kind, column number, expression length, name length, name, expression);
//! - the keys: their count and part count, then per key 8 bytes (flags, length, parts, algorithm, block size)
//!   and 9 per part (column number from 1, offset, flags, type, length), then the key names.
//!
//! From these it builds the same [`ColumnSpec`]s information_schema would give, so the definition goes
//! through [`super::def::table_def`] as the server's does, and a test compares the two on a real server.
//! Pure: the caller reads the file.

use super::def::{table_def, ColumnSpec, RowFormat, TableDef};

/// The `.frm` format versions this reads: `FRM_VER_TRUE_VARCHAR` (10, what the server still writes for a table
/// without expressions) and `FRM_VER_EXPRESSSIONS` (11, MariaDB 10.2's, for a table with generated columns,
/// default expressions or CHECK constraints).
const FRM_VERSIONS: [u8; 2] = [10, 11];
/// `DB_TYPE_INNODB`.
const LEGACY_INNODB: u8 = 12;
/// The form info's size (`FRM_FORMINFO_SIZE`).
const FORMINFO: usize = 288;
/// One column's record.
const FIELD_RECORD: usize = 17;
/// `EXTRA2_FIELD_DATA_TYPE_INFO`: a column's data-type plugin by name.
const EXTRA2_DATA_TYPE_INFO: u8 = 130;
/// `HA_KEY_ALG_LONG_HASH`: a UNIQUE over long columns, enforced through a hidden virtual hash column.
const LONG_HASH: u8 = 5;
/// Generated-column kinds in the expressions (`enum_vcol_info_type`): virtual, stored (the others are
/// default expressions and CHECK constraints).
const VCOL_VIRTUAL: u8 = 0;
const VCOL_STORED: u8 = 1;
/// The expressions' segment begins with a header this long (`FRM_VCOL_NEW_BASE_SIZE`), each expression with
/// one of `FRM_VCOL_NEW_HEADER_SIZE`.
const VCOL_BASE: usize = 16;
const VCOL_HEADER: usize = 6;

/// One column of the `.frm`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrmColumn {
    /// What information_schema.COLUMNS would say of it.
    pub spec: ColumnSpec,
    /// Its length in bytes as the `.frm` has it (a string's bytes, not characters).
    pub bytes: usize,
    /// A generated column's expression as the server printed it into the `.frm`, and whether it is stored.
    pub generated: Option<Generated>,
}

/// A generated column: its expression's text, and whether its values are stored in the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub expr: String,
    pub stored: bool,
}

/// One key of the `.frm`, in the `.frm`'s order (PRIMARY first, then UNIQUE keys, then the others).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrmKey {
    pub name: String,
    pub unique: bool,
    /// A UNIQUE enforced through a hidden hash column (`HA_KEY_ALG_LONG_HASH`).
    pub long_hash: bool,
    /// Per part: the column's position (from 0) and the part's length in bytes.
    pub parts: Vec<(usize, usize)>,
}

/// A table as its `.frm` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frm {
    pub columns: Vec<FrmColumn>,
    pub keys: Vec<FrmKey>,
    /// The row format the table was created with; `None`: the server's default at the time (which the data
    /// file tells).
    pub row_format: Option<RowFormat>,
    /// The table's default character set and collation (`DEFAULT CHARSET=… COLLATE=…`: what a column added
    /// later gets), when its id is one of the collations known here; `None` otherwise.
    pub charset: Option<(String, String)>,
}

fn le16(b: &[u8], at: usize) -> Result<usize, String> {
    b.get(at..at + 2)
        .map(|s| usize::from(u16::from_le_bytes([s[0], s[1]])))
        .ok_or_else(|| format!("the file ends before byte {}", at + 2))
}

fn le32(b: &[u8], at: usize) -> Result<usize, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
        .ok_or_else(|| format!("the file ends before byte {}", at + 4))
}

fn slice(b: &[u8], at: usize, len: usize) -> Result<&[u8], String> {
    b.get(at..at.saturating_add(len))
        .ok_or_else(|| format!("a segment of {len} bytes at {at} runs past the file's end"))
}

/// A list as `fix_type_pointers` reads it: its first byte is the separator, each value ends at the next one,
/// and the list ends at a separator followed by `\0`. Returns the values and the bytes the list took.
fn typelib(b: &[u8]) -> Result<(Vec<Vec<u8>>, usize), String> {
    let sep = *b.first().ok_or("an empty name list")?;
    let (mut out, mut at) = (Vec::new(), 1);
    loop {
        if b.get(at) == Some(&0) {
            return Ok((out, at + 1));
        }
        let end = b[at..]
            .iter()
            .position(|&c| c == sep)
            .map(|p| at + p)
            .ok_or("a name list without its end")?;
        out.push(b[at..end].to_vec());
        at = end + 1;
    }
}

/// The character set and collation of a collation id, for the character sets the page parser reads; other
/// ids are named by number, and the parser refuses them.
fn collation(id: usize) -> (String, String) {
    let named = COLLATIONS.iter().find(|(i, _, _)| usize::from(*i) == id);
    match named {
        Some((_, cs, co)) => ((*cs).to_string(), (*co).to_string()),
        None => (format!("collation #{id}"), format!("#{id}")),
    }
}

/// Collation ids of the character sets the parser reads (`SELECT ID, CHARACTER_SET_NAME, COLLATION_NAME
/// FROM information_schema.COLLATIONS` on MariaDB 10.11, those of latin1, ascii, utf8mb3, utf8mb4 and binary).
const COLLATIONS: &[(u16, &str, &str)] = &[
    (5, "latin1", "latin1_german1_ci"),
    (8, "latin1", "latin1_swedish_ci"),
    (11, "ascii", "ascii_general_ci"),
    (15, "latin1", "latin1_danish_ci"),
    (31, "latin1", "latin1_german2_ci"),
    (33, "utf8mb3", "utf8mb3_general_ci"),
    (45, "utf8mb4", "utf8mb4_general_ci"),
    (46, "utf8mb4", "utf8mb4_bin"),
    (47, "latin1", "latin1_bin"),
    (48, "latin1", "latin1_general_ci"),
    (49, "latin1", "latin1_general_cs"),
    (63, "binary", "binary"),
    (65, "ascii", "ascii_bin"),
    (83, "utf8mb3", "utf8mb3_bin"),
    (94, "latin1", "latin1_spanish_ci"),
    (192, "utf8mb3", "utf8mb3_unicode_ci"),
    (193, "utf8mb3", "utf8mb3_icelandic_ci"),
    (194, "utf8mb3", "utf8mb3_latvian_ci"),
    (195, "utf8mb3", "utf8mb3_romanian_ci"),
    (196, "utf8mb3", "utf8mb3_slovenian_ci"),
    (197, "utf8mb3", "utf8mb3_polish_ci"),
    (198, "utf8mb3", "utf8mb3_estonian_ci"),
    (199, "utf8mb3", "utf8mb3_spanish_ci"),
    (200, "utf8mb3", "utf8mb3_swedish_ci"),
    (201, "utf8mb3", "utf8mb3_turkish_ci"),
    (202, "utf8mb3", "utf8mb3_czech_ci"),
    (203, "utf8mb3", "utf8mb3_danish_ci"),
    (204, "utf8mb3", "utf8mb3_lithuanian_ci"),
    (205, "utf8mb3", "utf8mb3_slovak_ci"),
    (206, "utf8mb3", "utf8mb3_spanish2_ci"),
    (207, "utf8mb3", "utf8mb3_roman_ci"),
    (208, "utf8mb3", "utf8mb3_persian_ci"),
    (209, "utf8mb3", "utf8mb3_esperanto_ci"),
    (210, "utf8mb3", "utf8mb3_hungarian_ci"),
    (211, "utf8mb3", "utf8mb3_sinhala_ci"),
    (212, "utf8mb3", "utf8mb3_german2_ci"),
    (213, "utf8mb3", "utf8mb3_croatian_mysql561_ci"),
    (214, "utf8mb3", "utf8mb3_unicode_520_ci"),
    (215, "utf8mb3", "utf8mb3_vietnamese_ci"),
    (223, "utf8mb3", "utf8mb3_general_mysql500_ci"),
    (224, "utf8mb4", "utf8mb4_unicode_ci"),
    (225, "utf8mb4", "utf8mb4_icelandic_ci"),
    (226, "utf8mb4", "utf8mb4_latvian_ci"),
    (227, "utf8mb4", "utf8mb4_romanian_ci"),
    (228, "utf8mb4", "utf8mb4_slovenian_ci"),
    (229, "utf8mb4", "utf8mb4_polish_ci"),
    (230, "utf8mb4", "utf8mb4_estonian_ci"),
    (231, "utf8mb4", "utf8mb4_spanish_ci"),
    (232, "utf8mb4", "utf8mb4_swedish_ci"),
    (233, "utf8mb4", "utf8mb4_turkish_ci"),
    (234, "utf8mb4", "utf8mb4_czech_ci"),
    (235, "utf8mb4", "utf8mb4_danish_ci"),
    (236, "utf8mb4", "utf8mb4_lithuanian_ci"),
    (237, "utf8mb4", "utf8mb4_slovak_ci"),
    (238, "utf8mb4", "utf8mb4_spanish2_ci"),
    (239, "utf8mb4", "utf8mb4_roman_ci"),
    (240, "utf8mb4", "utf8mb4_persian_ci"),
    (241, "utf8mb4", "utf8mb4_esperanto_ci"),
    (242, "utf8mb4", "utf8mb4_hungarian_ci"),
    (243, "utf8mb4", "utf8mb4_sinhala_ci"),
    (244, "utf8mb4", "utf8mb4_german2_ci"),
    (245, "utf8mb4", "utf8mb4_croatian_mysql561_ci"),
    (246, "utf8mb4", "utf8mb4_unicode_520_ci"),
    (247, "utf8mb4", "utf8mb4_vietnamese_ci"),
    (576, "utf8mb3", "utf8mb3_croatian_ci"),
    (577, "utf8mb3", "utf8mb3_myanmar_ci"),
    (578, "utf8mb3", "utf8mb3_thai_520_w2"),
    (608, "utf8mb4", "utf8mb4_croatian_ci"),
    (609, "utf8mb4", "utf8mb4_myanmar_ci"),
    (610, "utf8mb4", "utf8mb4_thai_520_w2"),
    (1032, "latin1", "latin1_swedish_nopad_ci"),
    (1035, "ascii", "ascii_general_nopad_ci"),
    (1057, "utf8mb3", "utf8mb3_general_nopad_ci"),
    (1069, "utf8mb4", "utf8mb4_general_nopad_ci"),
    (1070, "utf8mb4", "utf8mb4_nopad_bin"),
    (1071, "latin1", "latin1_nopad_bin"),
    (1089, "ascii", "ascii_nopad_bin"),
    (1107, "utf8mb3", "utf8mb3_nopad_bin"),
    (1216, "utf8mb3", "utf8mb3_unicode_nopad_ci"),
    (1238, "utf8mb3", "utf8mb3_unicode_520_nopad_ci"),
    (1248, "utf8mb4", "utf8mb4_unicode_nopad_ci"),
    (1270, "utf8mb4", "utf8mb4_unicode_520_nopad_ci"),
];

/// Text of an enum or set member in its column's character set (information_schema gives UTF-8).
fn member(bytes: &[u8], charset: &str) -> String {
    if charset == "latin1" {
        bytes.iter().map(|&b| char::from(b)).collect()
    } else {
        String::from_utf8_lossy(bytes).into_owned()
    }
}

/// The column types of `extra2`'s data-type section: (column position, type name).
fn data_type_plugins(extra2: &[u8]) -> Result<Vec<(usize, String)>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 3 <= extra2.len() {
        let kind = extra2[at];
        let (len, head) = match extra2[at + 1] {
            0 => (le16(extra2, at + 2)?, 4),
            n => (usize::from(n), 2),
        };
        let body = slice(extra2, at + head, len)?;
        if kind == EXTRA2_DATA_TYPE_INFO {
            let mut p = 0;
            while p < body.len() {
                let (field, name_len) = (usize::from(body[p]), body.get(p + 1).copied());
                let name_len = usize::from(name_len.ok_or("a data-type entry without its name")?);
                let name = slice(body, p + 2, name_len)?;
                out.push((field, String::from_utf8_lossy(name).into_owned()));
                p += 2 + name_len;
            }
        }
        at += head + len;
    }
    Ok(out)
}

/// Read a `.frm` file's bytes.
pub fn parse(b: &[u8]) -> Result<Frm, String> {
    if b.len() < 64 || b[0] != 0xFE || b[1] != 0x01 {
        return Err("not a .frm file (it does not begin with FE 01)".into());
    }
    if !FRM_VERSIONS.contains(&b[2]) {
        return Err(format!(
            "the .frm is format version {}, where MySQL 5.0 and later write 10 and MariaDB 10.2 and later 10 or 11",
            b[2]
        ));
    }
    if b[3] != LEGACY_INNODB {
        // `legacy_db_type` codes a DBA meets (sql/handler.h).
        let engine = match b[3] {
            6 => " (MEMORY)",
            9 => " (MyISAM)",
            16 => " (ARCHIVE)",
            17 => " (CSV)",
            20 => " (a partitioned table, whose partitions are files of their own)",
            42 => " (Aria)",
            _ => "",
        };
        return Err(format!(
            "the .frm names engine code {}{engine}, not InnoDB's {LEGACY_INNODB}",
            b[3]
        ));
    }
    let extra2_len = le16(b, 4)?;
    let plugins = data_type_plugins(slice(b, 64, extra2_len)?)?;
    let forminfo = le32(b, 64 + extra2_len)?;
    let fi = slice(b, forminfo, FORMINFO)?;
    let fields = le16(fi, 258)?;
    let screens = le16(fi, 260)?;
    let names_len = le16(fi, 268)?;
    let int_count = le16(fi, 270)?;
    let int_len = le16(fi, 274)?;
    let com_len = le16(fi, 284)?;
    let vcol_len = le16(fi, 286)?;
    let records_at = forminfo + FORMINFO + screens;
    let records = slice(b, records_at, fields * FIELD_RECORD)?;
    let names_at = records_at + fields * FIELD_RECORD;
    let (names, _) = typelib(slice(b, names_at, names_len)?)?;
    if names.len() != fields {
        return Err(format!(
            "the .frm lists {} column names for {fields} columns",
            names.len()
        ));
    }
    let mut intervals = Vec::new();
    let mut ints = slice(b, names_at + names_len, int_len)?;
    for _ in 0..int_count {
        let (values, used) = typelib(ints)?;
        intervals.push(values);
        ints = &ints[used..];
    }
    let vcols = slice(b, names_at + names_len + int_len + com_len, vcol_len)?;
    if b[2] < 11 && vcol_len > 0 {
        return Err(
            "the .frm keeps generated columns in the format before MariaDB 10.2 (or MySQL 5.7's), which is not read"
                .into(),
        );
    }
    let generated = generated_columns(vcols, fields)?;
    let keys = keys(b, fields)?;
    let hidden_hashes = keys.iter().filter(|k| k.long_hash).count();
    let mut columns = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let r = &records[i * FIELD_RECORD..(i + 1) * FIELD_RECORD];
        let name = String::from_utf8_lossy(name).into_owned();
        if let Some((_, ty)) = plugins.iter().find(|(f, _)| *f == i) {
            return Err(format!(
                "column {name} has data type {ty}, which the page parser does not handle yet"
            ));
        }
        let gen = generated
            .iter()
            .find(|(f, _)| *f == i)
            .map(|(_, g)| g.clone());
        let hidden = i >= fields.saturating_sub(hidden_hashes);
        let virtual_ = hidden || gen.as_ref().is_some_and(|g| !g.stored);
        let mut c = column(name, r, &intervals, virtual_)?;
        if gen.as_ref().is_some_and(|g| g.stored) {
            c.spec.extra = "STORED GENERATED".into();
        }
        c.generated = gen;
        columns.push(c);
    }
    let row_format = match b.get(40).copied().unwrap_or(0) {
        // DEFAULT, and FIXED and PAGE, which InnoDB takes as its default.
        0 | 1 | 6 => None,
        2 => Some(RowFormat::Dynamic),
        3 => Some(RowFormat::Compressed),
        4 => Some(RowFormat::Redundant),
        5 => Some(RowFormat::Compact),
        n => {
            return Err(format!(
                "the .frm gives row format code {n}, which InnoDB does not have"
            ))
        }
    };
    // The header's default collation id: its low byte at 38, its high byte at 41 (ids above 255, as the
    // uca1400 collations have).
    let table_collation = usize::from(b[38]) | usize::from(b[41]) << 8;
    let charset = COLLATIONS
        .iter()
        .find(|(i, _, _)| usize::from(*i) == table_collation)
        .map(|(_, cs, co)| ((*cs).to_string(), (*co).to_string()));
    Ok(Frm {
        columns,
        keys,
        row_format,
        charset,
    })
}

/// The generated columns by position, from the expressions' segment (each: kind, column number, expression
/// length, name length, name, expression).
fn generated_columns(v: &[u8], fields: usize) -> Result<Vec<(usize, Generated)>, String> {
    let mut out = Vec::new();
    let mut at = if v.is_empty() { 0 } else { VCOL_BASE };
    while at < v.len() {
        let h = slice(v, at, VCOL_HEADER)?;
        let (kind, field, expr, name) = (h[0], le16(h, 1)?, le16(h, 3)?, usize::from(h[5]));
        if kind == VCOL_VIRTUAL || kind == VCOL_STORED {
            if field >= fields {
                return Err(format!(
                    "a generated column's number {field} is past the {fields} columns"
                ));
            }
            let text = slice(v, at + VCOL_HEADER + name, expr)?;
            out.push((
                field,
                Generated {
                    expr: String::from_utf8_lossy(text).into_owned(),
                    stored: kind == VCOL_STORED,
                },
            ));
        }
        at += VCOL_HEADER + name + expr;
    }
    Ok(out)
}

/// The keys, from the segment the header's bytes 6..8 point at.
fn keys(b: &[u8], fields: usize) -> Result<Vec<FrmKey>, String> {
    let at = le16(b, 6)?;
    let head = slice(b, at, 6)?;
    // The key count (two bytes when the first has its top bit set), then the part count, not needed here.
    let count = if head[0] & 0x80 != 0 {
        (usize::from(head[1]) << 7) | usize::from(head[0] & 0x7F)
    } else {
        usize::from(head[0])
    };
    let mut p = at + 6;
    let mut keys = Vec::new();
    for _ in 0..count {
        let k = slice(b, p, 8)?;
        // The stored flags are HA_NOSAME (1) inverted.
        let unique = (le16(k, 0)? ^ 1) & 1 != 0;
        let (n, algorithm) = (usize::from(k[4]), k[5]);
        p += 8;
        let mut parts = Vec::new();
        for _ in 0..n {
            let kp = slice(b, p, 9)?;
            let field = le16(kp, 0)? & 0x3FFF;
            if field == 0 || field > fields {
                return Err(format!("a key part names column {field} of {fields}"));
            }
            parts.push((field - 1, le16(kp, 7)?));
            p += 9;
        }
        keys.push(FrmKey {
            name: String::new(),
            unique,
            long_hash: algorithm == LONG_HASH,
            parts,
        });
    }
    if count > 0 {
        let rest = b.get(p..).ok_or("the key names are missing")?;
        let (names, _) = typelib(rest)?;
        if names.len() != count {
            return Err(format!(
                "the .frm names {} of its {count} keys",
                names.len()
            ));
        }
        for (k, n) in keys.iter_mut().zip(names) {
            k.name = String::from_utf8_lossy(&n).into_owned();
        }
    }
    Ok(keys)
}

/// An ENUM's or SET's words from its member list (`None`: the column names no list).
fn members(
    name: &str,
    kind: &str,
    list: Option<&Vec<Vec<u8>>>,
    charset: &str,
) -> Result<(String, String), String> {
    let list = list.ok_or_else(|| format!("column {name}'s {kind} has no member list"))?;
    let quoted: Vec<String> = list
        .iter()
        .map(|m| format!("'{}'", member(m, charset).replace('\'', "''")))
        .collect();
    Ok((kind.to_string(), format!("{kind}({})", quoted.join(","))))
}

/// A BLOB's or TEXT's words. Tiny, medium and long ones carry their own type codes; the plain code says the size
/// in the pack flags' bits 3..6 (the length of the length: 1..4 bytes).
fn blob(name: &str, code: u8, flags: usize, binary: bool) -> Result<(String, String), String> {
    let size = match code {
        249 => 1,
        250 => 3,
        251 => 4,
        _ => (flags >> 3) & 0xF,
    };
    let prefix = match size {
        1 => "tiny",
        2 => "",
        3 => "medium",
        4 => "long",
        n => return Err(format!("column {name} is a BLOB with a {n}-byte length")),
    };
    let t = format!("{prefix}{}", if binary { "blob" } else { "text" });
    Ok((t.clone(), t))
}

/// One column from its 17-byte record.
fn column(
    name: String,
    r: &[u8],
    intervals: &[Vec<Vec<u8>>],
    virtual_: bool,
) -> Result<FrmColumn, String> {
    let bytes = le16(r, 3)?;
    let flags = le16(r, 8)?;
    let interval = usize::from(r[12]);
    let code = r[13];
    let coll_id = usize::from(r[14]) | (usize::from(r[11]) << 8);
    let nullable = flags & 0x8000 != 0;
    let unsigned = if flags & 1 == 0 { " unsigned" } else { "" };
    let zerofill = if flags & 4 != 0 { " zerofill" } else { "" }; // FIELDFLAG_ZEROFILL
    let decimals = (flags >> 8) & 0x3F;
    let (charset, coll) = collation(coll_id);
    let binary = coll_id == 63;
    let mbmax = match charset.as_str() {
        "utf8mb4" => 4,
        "utf8mb3" => 3,
        _ => 1,
    };
    let text = |t: &str| (t.to_string(), t.to_string());
    let fsp = |base: usize| bytes.saturating_sub(base + 1);
    let temporal = |t: &str, base: usize| {
        let f = fsp(base);
        (
            t.to_string(),
            if f > 0 {
                format!("{t}({f})")
            } else {
                t.to_string()
            },
        )
    };
    let members = |kind: &str| {
        members(
            &name,
            kind,
            intervals.get(interval.wrapping_sub(1)),
            &charset,
        )
    };
    let (data_type, column_type) = match code {
        1 => ("tinyint".into(), format!("tinyint{unsigned}{zerofill}")),
        2 => ("smallint".into(), format!("smallint{unsigned}{zerofill}")),
        9 => ("mediumint".into(), format!("mediumint{unsigned}{zerofill}")),
        3 => ("int".into(), format!("int{unsigned}{zerofill}")),
        8 => ("bigint".into(), format!("bigint{unsigned}{zerofill}")),
        4 | 5 => {
            let t = if code == 4 { "float" } else { "double" };
            // NOT_FIXED_DEC (31): no fixed decimals, printed as `my_gcvt` does.
            let fixed = if decimals < 31 {
                format!("({bytes},{decimals})")
            } else {
                String::new()
            };
            (t.into(), format!("{t}{fixed}{unsigned}{zerofill}"))
        }
        246 => {
            let precision = bytes
                .checked_sub(usize::from(decimals > 0) + usize::from(unsigned.is_empty()))
                .ok_or_else(|| format!("column {name} is a DECIMAL of {bytes} characters, too few for its sign and point"))?;
            (
                "decimal".into(),
                format!("decimal({precision},{decimals}){unsigned}{zerofill}"),
            )
        }
        7 | 17 => temporal("timestamp", 19),
        12 | 18 => temporal("datetime", 19),
        11 | 19 => temporal("time", 10),
        14 => text("date"),
        13 => text("year"),
        16 => ("bit".into(), format!("bit({bytes})")),
        15 => {
            if binary {
                ("varbinary".into(), format!("varbinary({bytes})"))
            } else {
                ("varchar".into(), format!("varchar({})", bytes / mbmax))
            }
        }
        254 if interval == 0 => {
            if binary {
                ("binary".into(), format!("binary({bytes})"))
            } else {
                ("char".into(), format!("char({})", bytes / mbmax))
            }
        }
        247 => members("enum")?,
        248 => members("set")?,
        254 if flags & 0x200 != 0 => members("set")?,
        254 => members("enum")?,
        249..=252 => blob(&name, code, flags, binary)?,
        other => {
            return Err(format!(
                "column {name} has type code {other}, which the page parser does not handle yet"
            ))
        }
    };
    let has_charset = matches!(
        data_type.as_str(),
        "char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext" | "enum" | "set"
    );
    Ok(FrmColumn {
        spec: ColumnSpec {
            name,
            data_type,
            column_type,
            nullable,
            charset: has_charset.then(|| charset.clone()),
            collation: (has_charset || binary).then_some(coll),
            extra: if virtual_ {
                "VIRTUAL GENERATED".into()
            } else {
                String::new()
            },
        },
        bytes,
        generated: None,
    })
}

impl Frm {
    /// The index InnoDB clusters the table by: PRIMARY; else the first key when it is UNIQUE over NOT NULL
    /// columns without a prefix (the server promotes only the first, and sorts such keys first); else none
    /// (InnoDB's hidden row id). `Err` when that key holds a column prefix, which the parser does not read.
    pub fn clustered(&self) -> Result<Option<&FrmKey>, String> {
        let Some(first) = self.keys.first() else {
            return Ok(None);
        };
        let prefix = |k: &FrmKey| {
            k.parts.iter().any(|&(c, len)| {
                let col = &self.columns[c];
                match col.spec.data_type.as_str() {
                    "char" | "varchar" | "binary" | "varbinary" => len < col.bytes,
                    t => t.ends_with("blob") || t.ends_with("text"),
                }
            })
        };
        if first.name == "PRIMARY" {
            if prefix(first) {
                return Err(format!(
                    "the clustered index {} holds a column prefix, which the page parser does not read yet",
                    first.name
                ));
            }
            return Ok(Some(first));
        }
        let promoted = first.unique
            && !first.long_hash
            && !prefix(first)
            && first
                .parts
                .iter()
                .all(|&(c, _)| !self.columns[c].spec.nullable);
        Ok(promoted.then_some(first))
    }

    /// The definition the page parser reads records by; `format` is the data file's when the `.frm` leaves it
    /// to the server's default.
    pub fn table_def(&self, format: RowFormat) -> Result<TableDef, String> {
        let specs: Vec<ColumnSpec> = self.columns.iter().map(|c| c.spec.clone()).collect();
        let key: Vec<String> = match self.clustered()? {
            Some(k) => k
                .parts
                .iter()
                .map(|&(c, _)| self.columns[c].spec.name.clone())
                .collect(),
            None => Vec::new(),
        };
        // table_def takes information_schema's word for the format; the .frm's code was read already.
        let mut def = table_def(&specs, &key, "Dynamic")?;
        def.format = self.row_format.unwrap_or(format);
        Ok(def)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_lists_end_at_a_separator_before_nul_and_may_hold_any_other_byte() {
        let (v, used) = typelib(b"\xffid\xffname\xff\0rest").unwrap();
        assert_eq!(v, vec![b"id".to_vec(), b"name".to_vec()]);
        assert_eq!(used, 10);
        // An enum whose members hold \xff gets another separator.
        let (v, _) = typelib(b",a\xffb,c,\0").unwrap();
        assert_eq!(v, vec![b"a\xffb".to_vec(), b"c".to_vec()]);
        assert!(typelib(b"\xffid").is_err());
        assert!(typelib(b"").is_err());
    }

    #[test]
    fn a_file_that_is_not_an_innodb_frm_of_this_format_is_refused_in_one_sentence() {
        let mut b = vec![0u8; 64];
        assert!(parse(&b).unwrap_err().contains("not a .frm"));
        b[0] = 0xFE;
        b[1] = 1;
        b[2] = 9;
        b[3] = LEGACY_INNODB;
        assert!(parse(&b).unwrap_err().contains("format version 9"));
        b[2] = 11;
        b[3] = 9;
        assert!(parse(&b)
            .unwrap_err()
            .contains("engine code 9 (MyISAM), not InnoDB's 12"));
        b[3] = LEGACY_INNODB;
        // extra2 says 200 bytes, the file has none of them.
        b[4] = 200;
        assert!(parse(&b).unwrap_err().contains("runs past"));
    }

    #[test]
    fn a_data_type_plugin_is_found_in_extra2() {
        // A table-definition version (type 0, 16 bytes), then the data-type section naming column 2 "uuid".
        let mut e = vec![0u8, 16];
        e.extend([7u8; 16]);
        e.extend([EXTRA2_DATA_TYPE_INFO, 6, 2, 4]);
        e.extend(b"uuid");
        assert_eq!(
            data_type_plugins(&e).unwrap(),
            vec![(2, "uuid".to_string())]
        );
        assert!(data_type_plugins(&[EXTRA2_DATA_TYPE_INFO, 9, 2, 4]).is_err());
    }

    const GEN: &[u8] = include_bytes!("../../tests/fixtures/frm/gen.frm");
    const PLAIN: &[u8] = include_bytes!("../../tests/fixtures/frm/plain.frm");

    /// gen.frm: `(id INT PRIMARY KEY, a INT, v INT AS (a * 2) VIRTUAL, s VARCHAR(8) AS (CONCAT('x', a))
    /// STORED, e ENUM('it''s','b') CHARACTER SET latin1, KEY (v))`; plain.frm: `(id BIGINT UNSIGNED NOT NULL,
    /// c CHAR(10) CHARACTER SET utf8mb4 NOT NULL, UNIQUE KEY u (id), KEY (c)) ROW_FORMAT=COMPACT`, both written
    /// by MariaDB 10.11.
    #[test]
    fn files_the_server_wrote_give_their_columns_keys_and_clustered_index() {
        let g = parse(GEN).unwrap();
        let names: Vec<&str> = g.columns.iter().map(|c| c.spec.name.as_str()).collect();
        assert_eq!(names, ["id", "a", "v", "s", "e"]);
        assert_eq!(g.columns[2].spec.extra, "VIRTUAL GENERATED");
        assert_eq!(g.columns[3].spec.extra, "STORED GENERATED");
        let gen = |i: usize| g.columns[i].generated.clone().map(|g| (g.expr, g.stored));
        assert_eq!(gen(2), Some(("`a` * 2".to_string(), false)));
        assert_eq!(gen(3), Some(("concat('x',`a`)".to_string(), true)));
        assert_eq!((gen(0), gen(1)), (None, None));
        assert_eq!(g.columns[4].spec.column_type, "enum('it''s','b')");
        assert_eq!(g.row_format, None);
        assert_eq!(g.clustered().unwrap().unwrap().name, "PRIMARY");
        let d = g.table_def(RowFormat::Dynamic).unwrap();
        assert_eq!(
            d.columns.len(),
            4,
            "the virtual column is not in the record"
        );
        assert_eq!((d.key.clone(), d.format), (vec![0], RowFormat::Dynamic));

        let p = parse(PLAIN).unwrap();
        assert_eq!(PLAIN[2], 10, "no expressions: the older format version");
        assert_eq!(p.row_format, Some(RowFormat::Compact));
        assert_eq!(p.columns[0].spec.column_type, "bigint unsigned");
        assert_eq!(p.columns[1].spec.column_type, "char(10)");
        assert_eq!(p.columns[1].spec.charset.as_deref(), Some("utf8mb4"));
        let u = p.clustered().unwrap().unwrap();
        assert_eq!(
            (u.name.as_str(), u.unique, u.parts.clone()),
            ("u", true, vec![(0, 8)])
        );
        assert_eq!(
            p.table_def(RowFormat::Dynamic).unwrap().format,
            RowFormat::Compact
        );
    }

    #[test]
    fn damaged_or_foreign_files_are_refused_not_misread() {
        let with = |b: &[u8], at: usize, v: &[u8]| {
            let mut b = b.to_vec();
            b[at..at + v.len()].copy_from_slice(v);
            b
        };
        assert!(parse(&with(PLAIN, 40, &[7]))
            .unwrap_err()
            .contains("row format code 7"));
        // Expressions in a version-10 file: MySQL 5.7's or MariaDB 10.1's generated columns.
        assert!(parse(&with(GEN, 2, &[10]))
            .unwrap_err()
            .contains("before MariaDB 10.2"));
        // The first key's first part names column 0x3FFF.
        let keys = le16(PLAIN, 6).unwrap();
        assert!(parse(&with(PLAIN, keys + 6 + 8, &[0xFF, 0x3F]))
            .unwrap_err()
            .contains("a key part names column"));
        // One column more than the names list holds.
        let extra2 = le16(PLAIN, 4).unwrap();
        let fi = le32(PLAIN, 64 + extra2).unwrap();
        let fields = le16(PLAIN, fi + 258).unwrap() as u16;
        assert!(parse(&with(PLAIN, fi + 258, &(fields + 1).to_le_bytes())).is_err());
        // The enum's list gone: its column has no members.
        let cut = parse(&with(GEN, fi_of(GEN) + 270, &[0, 0]));
        assert!(cut.unwrap_err().contains("no member list"));
    }

    fn fi_of(b: &[u8]) -> usize {
        le32(b, 64 + le16(b, 4).unwrap()).unwrap()
    }
}
