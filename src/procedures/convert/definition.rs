//! A table's definition as the server prints it (`SHOW CREATE TABLE`), split into what a conversion must keep
//! — columns, indexes in their order with every attribute, constraints, table options — and compared whole.
//!
//! The order of the indexes is part of the table: on a table without a primary key the first UNIQUE NOT NULL
//! index becomes InnoDB's clustered index. Index lines are kept verbatim, so the deferred path re-creates an index
//! with exactly the clause the server printed (IGNORED, KEY_BLOCK_SIZE, USING HASH, COMMENT, a SPATIAL index's
//! lack of a prefix) instead of rebuilding it from information_schema.

use serde::{Deserialize, Serialize};

/// One table's definition, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    /// Column lines, in order, without the trailing comma.
    pub columns: Vec<String>,
    /// `(name, line)` of every index, in the server's order; the primary key is named `PRIMARY`.
    pub indexes: Vec<(String, String)>,
    /// CONSTRAINT lines (CHECK, FOREIGN KEY).
    pub constraints: Vec<String>,
    /// Table options after the closing parenthesis, as `(KEY, value)`; keys upper-case.
    pub options: Vec<(String, String)>,
}

/// Table options that only say which engine or where: compared by other checks, or refused in pre-flight.
const ENGINE_OPTIONS: [&str; 4] = [
    "ENGINE",
    "AUTO_INCREMENT",
    "DATA DIRECTORY",
    "INDEX DIRECTORY",
];

/// How `SHOW CREATE TABLE` marks a DATETIME, TIME or TIMESTAMP column in the format of before MySQL 5.6
/// (MariaDB, MySQL 5.7).
pub const OLD_TEMPORAL_MARKERS: [&str; 2] = [" /* mariadb-5.3 */", " /* 5.5 binary format */"];

/// A column line without the old temporal format's marker: the copy upgrades the format, not the values
/// (the row hash compares those), so the marker is the one part of a column line compared apart.
fn without_old_temporal(line: &str) -> String {
    OLD_TEMPORAL_MARKERS
        .iter()
        .fold(line.to_string(), |l, m| l.replace(m, ""))
}

/// Options an Aria table had and keep when it became MyISAM (`PAGE_CHECKSUM=1 … /* TRANSACTIONAL=1 */`): MyISAM
/// ignores them, and InnoDB drops PAGE_CHECKSUM but shows TRANSACTIONAL=1 as its own. The InnoDB table gets
/// neither (`=DEFAULT`), the plan says so, and verification sets them aside.
pub const ARIA_OPTIONS: [&str; 2] = ["PAGE_CHECKSUM", "TRANSACTIONAL"];

/// MyISAM options InnoDB keeps in the definition but ignores: named in the plan.
pub const MYISAM_ONLY_OPTIONS: [&str; 3] = ["PACK_KEYS", "CHECKSUM", "DELAY_KEY_WRITE"];

/// The row formats InnoDB accepts.
pub const INNODB_ROW_FORMATS: [&str; 5] =
    ["DEFAULT", "DYNAMIC", "COMPACT", "REDUNDANT", "COMPRESSED"];

impl Definition {
    /// Parse the text of `SHOW CREATE TABLE`.
    pub fn parse(create: &str) -> Definition {
        let mut d = Definition::default();
        let lines: Vec<&str> = create.lines().collect();
        let Some(close) = lines.iter().rposition(|l| l.starts_with(')')) else {
            return d;
        };
        for line in lines.iter().take(close).skip(1) {
            let l = line.trim().trim_end_matches(',').to_string();
            if l.starts_with('`') {
                d.columns.push(l);
            } else if let Some(name) = index_name(&l) {
                d.indexes.push((name, l));
            } else if l.starts_with("CONSTRAINT") || l.starts_with("CHECK") {
                d.constraints.push(l);
            } else if !l.is_empty() {
                // Anything else (a PERIOD, say) is kept with the constraints so it is compared too.
                d.constraints.push(l);
            }
        }
        let tail: String = lines[close..].join("\n");
        d.options = parse_options(tail.trim_start_matches(')'));
        d
    }

    pub fn option(&self, key: &str) -> Option<&str> {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The explicit row format, when InnoDB cannot take it (MyISAM's FIXED, Aria's PAGE).
    /// The Aria options this definition carries, as `KEY=value` (see [`ARIA_OPTIONS`]).
    pub fn aria_options(&self) -> Vec<String> {
        ARIA_OPTIONS
            .iter()
            .filter_map(|k| self.option(k).map(|v| format!("{k}={v}")))
            .collect()
    }

    pub fn foreign_row_format(&self) -> Option<&str> {
        self.option("ROW_FORMAT")
            .filter(|f| !INNODB_ROW_FORMATS.contains(&f.to_ascii_uppercase().as_str()))
    }

    /// Columns still in the temporal format of before MySQL 5.6 (a table created then and upgraded in place):
    /// `SHOW CREATE TABLE` marks them, and every copy — `ALTER TABLE … ENGINE=InnoDB` too — writes the current
    /// format with the same values.
    pub fn old_temporal_columns(&self) -> Vec<String> {
        self.columns
            .iter()
            .filter(|l| OLD_TEMPORAL_MARKERS.iter().any(|m| l.contains(m)))
            .filter_map(|l| quoted_ident(l).map(|(name, _)| name))
            .collect()
    }

    /// UNIQUE keys the server implements as hash keys (`USING HASH`).
    pub fn hash_keys(&self) -> Vec<String> {
        self.indexes
            .iter()
            .filter(|(_, l)| l.starts_with("UNIQUE KEY") && l.ends_with("USING HASH"))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// The line of the index `name`.
    pub fn index_line(&self, name: &str) -> Option<&str> {
        self.indexes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, l)| l.as_str())
    }
}

/// The name of the index a definition line declares, or None for other lines.
fn index_name(line: &str) -> Option<String> {
    if line.starts_with("PRIMARY KEY") {
        return Some("PRIMARY".into());
    }
    let rest = [
        "UNIQUE KEY ",
        "KEY ",
        "FULLTEXT KEY ",
        "SPATIAL KEY ",
        "VECTOR KEY ",
    ]
    .iter()
    .find_map(|p| line.strip_prefix(p))?;
    quoted_ident(rest).map(|(name, _)| name)
}

/// A backquoted identifier at the start of `s` (doubled backquotes inside), and the rest.
pub fn quoted_ident(s: &str) -> Option<(String, &str)> {
    let s = s.strip_prefix('`')?;
    let mut name = String::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '`' {
            if matches!(chars.peek(), Some((_, '`'))) {
                name.push('`');
                chars.next();
            } else {
                return Some((name, &s[i + 1..]));
            }
        } else {
            name.push(c);
        }
    }
    None
}

/// `ENGINE=MyISAM AUTO_INCREMENT=5 DEFAULT CHARSET=latin1 COMMENT='it''s'` → key/value pairs. Keys may be
/// several words; values are bare or single-quoted.
fn parse_options(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s.trim();
    while !rest.is_empty() {
        // An option the engine does not use, shown commented out: `/* TRANSACTIONAL=1 */`.
        if let Some(inner) = rest.strip_prefix("/* ") {
            if let Some(end) = inner.find(" */") {
                let (k, v) = inner[..end].split_once('=').unwrap_or((&inner[..end], ""));
                if !k.trim().to_ascii_uppercase().starts_with("PARTITION") {
                    out.push((k.trim().to_ascii_uppercase(), v.trim().to_string()));
                    rest = inner[end + 3..].trim_start();
                    continue;
                }
            }
        }
        // A partitioning clause (in a version comment) ends the options.
        if rest.starts_with("/*") || rest.to_ascii_uppercase().starts_with("PARTITION") {
            out.push(("PARTITION".into(), rest.to_string()));
            break;
        }
        let Some(eq) = rest.find('=') else {
            out.push((rest.to_ascii_uppercase(), String::new()));
            break;
        };
        let key = rest[..eq].trim().to_ascii_uppercase();
        let after = &rest[eq + 1..];
        let (value, next) = if let Some(q) = after.strip_prefix('\'') {
            let (v, end) = quoted_string(q);
            (v, &q[end..])
        } else {
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            (after[..end].to_string(), &after[end..])
        };
        out.push((key, value));
        rest = next.trim_start();
    }
    out
}

/// The text of a single-quoted string whose opening quote is already read (`it''s \' ok'` → `it's ' ok`), and the
/// byte length of `q` up to and including its closing quote (all of `q` when it is not closed).
fn quoted_string(q: &str) -> (String, usize) {
    let mut v = String::new();
    let mut it = q.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if c == '\\' {
            if let Some((_, n)) = it.next() {
                v.push(n);
            }
        } else if c == '\'' {
            if matches!(it.peek(), Some((_, '\''))) {
                v.push('\'');
                it.next();
            } else {
                return (v, i + 1);
            }
        } else {
            v.push(c);
        }
    }
    (v, q.len())
}

/// A partitioning clause with each partition's `ENGINE = X` left out: the engine is what a conversion changes, in
/// every partition (`PARTITION p0 VALUES LESS THAN (100) ENGINE = MyISAM` becomes `… ENGINE = InnoDB`); the bounds,
/// names and every other partition option must stay. Quoted text (a partition's COMMENT) is left as it is.
fn without_partition_engines(clause: &str) -> String {
    let mut out = String::with_capacity(clause.len());
    let mut rest = clause;
    while !rest.is_empty() {
        if let Some(q) = rest.strip_prefix('\'') {
            // A quoted string (a partition's COMMENT), kept as written.
            let (_, end) = quoted_string(q);
            out.push('\'');
            out.push_str(&q[..end]);
            rest = &q[end..];
            continue;
        }
        let upper = rest.get(..6).map(str::to_ascii_uppercase);
        let boundary = out
            .chars()
            .last()
            .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
        if boundary && upper.as_deref() == Some("ENGINE") {
            let after = rest[6..].trim_start();
            if let Some(v) = after.strip_prefix('=') {
                let v = v.trim_start();
                let end = v
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(v.len());
                out.push_str("ENGINE = *");
                rest = &v[end..];
                continue;
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// What differs between the source's definition and the new table's, one phrase per difference. `set_aside`
/// names options the conversion changes on purpose (and says so in the plan).
pub fn differences(source: &Definition, new: &Definition, set_aside: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    if source.columns != new.columns {
        for (i, (a, b)) in source.columns.iter().zip(&new.columns).enumerate() {
            if without_old_temporal(a) != without_old_temporal(b) {
                out.push(format!("column {}: `{b}` instead of `{a}`", i + 1));
            }
        }
        if source.columns.len() != new.columns.len() {
            out.push(format!(
                "{} columns instead of {}",
                new.columns.len(),
                source.columns.len()
            ));
        }
    }
    if source.indexes != new.indexes {
        // A UNIQUE hash key (MyISAM's way to index a long column) becomes a B-tree in InnoDB where the key fits,
        // and the server then sorts it among the B-tree unique keys: the engine change itself does this
        // (ALTER TABLE … ENGINE=InnoDB), so such keys are compared without `USING HASH` and their position.
        let hashed = source.hash_keys();
        let names = |d: &Definition| {
            d.indexes
                .iter()
                .map(|(n, _)| n.clone())
                .filter(|n| !hashed.contains(n))
                .collect::<Vec<_>>()
        };
        let (a, b) = (names(source), names(new));
        if a != b {
            out.push(format!(
                "indexes in the order {} instead of {}",
                b.join(", "),
                a.join(", ")
            ));
        }
        let norm = |n: &String, l: &str| {
            if hashed.contains(n) {
                l.replace(" USING HASH", "")
            } else {
                l.to_string()
            }
        };
        for (name, line) in &source.indexes {
            match new.index_line(name) {
                Some(l) if norm(name, l) != norm(name, line) => {
                    out.push(format!("index {name}: `{l}` instead of `{line}`"))
                }
                None => out.push(format!("index {name} missing")),
                _ => {}
            }
        }
        for (name, line) in &new.indexes {
            if source.index_line(name).is_none() {
                out.push(format!(
                    "an index {name} the source does not have: `{line}`"
                ));
            }
        }
    }
    if source.constraints != new.constraints {
        out.push(format!(
            "constraints `{}` instead of `{}`",
            new.constraints.join("; "),
            source.constraints.join("; ")
        ));
    }
    let keep = |d: &Definition| {
        let mut o: Vec<(String, String)> = d
            .options
            .iter()
            .filter(|(k, _)| {
                !ENGINE_OPTIONS.contains(&k.as_str()) && !set_aside.contains(&k.as_str())
            })
            .map(|(k, v)| {
                if k == "PARTITION" {
                    (k.clone(), without_partition_engines(v))
                } else {
                    (k.clone(), v.clone())
                }
            })
            .collect();
        o.sort();
        o
    };
    let (a, b) = (keep(source), keep(new));
    if a != b {
        let show = |o: &[(String, String)]| {
            o.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        out.push(format!(
            "table options `{}` instead of `{}`",
            show(&b),
            show(&a)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "CREATE TABLE `a` (\n  `id` int(11) NOT NULL,\n  `u` varchar(10) NOT NULL,\n  `t` text DEFAULT NULL,\n  UNIQUE KEY `uu` (`u`) KEY_BLOCK_SIZE=1024,\n  UNIQUE KEY `ut` (`t`) USING HASH,\n  KEY `k``1` (`id`) COMMENT 'kc',\n  KEY `ig` (`id`,`u`) IGNORED,\n  FULLTEXT KEY `ft` (`t`),\n  CONSTRAINT `ck` CHECK (`id` >= 0)\n) ENGINE=MyISAM AUTO_INCREMENT=5 DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci PACK_KEYS=1 CHECKSUM=1 DELAY_KEY_WRITE=1 ROW_FORMAT=FIXED COMMENT='it''s, ok'";

    #[test]
    fn the_old_temporal_marker_is_named_and_set_aside_but_nothing_else_in_the_column() {
        let old = Definition::parse("CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `d` datetime /* mariadb-5.3 */ DEFAULT NULL,\n  `m` time /* 5.5 binary format */ NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=MyISAM");
        assert_eq!(old.old_temporal_columns(), ["d", "m"]);
        let new = Definition::parse("CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `d` datetime DEFAULT NULL,\n  `m` time NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB");
        assert!(new.old_temporal_columns().is_empty());
        assert_eq!(differences(&old, &new, &[]), Vec::<String>::new());
        let changed = Definition::parse("CREATE TABLE `t` (\n  `id` int(11) NOT NULL,\n  `d` datetime(6) DEFAULT NULL,\n  `m` time NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB");
        assert_eq!(differences(&old, &changed, &[]).len(), 1);
    }

    #[test]
    fn show_create_table_splits_into_columns_indexes_constraints_and_options() {
        let d = Definition::parse(A);
        assert_eq!(d.columns.len(), 3);
        let names: Vec<&str> = d.indexes.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, vec!["uu", "ut", "k`1", "ig", "ft"]);
        assert_eq!(d.index_line("ig"), Some("KEY `ig` (`id`,`u`) IGNORED"));
        assert_eq!(
            d.constraints,
            vec!["CONSTRAINT `ck` CHECK (`id` >= 0)".to_string()]
        );
        assert_eq!(d.option("ENGINE"), Some("MyISAM"));
        assert_eq!(d.option("DEFAULT CHARSET"), Some("latin1"));
        assert_eq!(d.option("COMMENT"), Some("it's, ok"));
        assert_eq!(d.foreign_row_format(), Some("FIXED"));
        // An Aria table made MyISAM: its options, one shown commented out, read as options, not as a partition
        // clause.
        let aria = Definition::parse(
            "CREATE TABLE `t` (\n  `id` int(11) NOT NULL\n) ENGINE=MyISAM DEFAULT CHARSET=latin1 PAGE_CHECKSUM=1 ROW_FORMAT=PAGE /* TRANSACTIONAL=1 */",
        );
        assert_eq!(aria.option("TRANSACTIONAL"), Some("1"));
        assert_eq!(aria.option("PARTITION"), None);
        assert_eq!(
            aria.aria_options(),
            vec!["PAGE_CHECKSUM=1", "TRANSACTIONAL=1"]
        );
        assert_eq!(aria.foreign_row_format(), Some("PAGE"));
        let p = Definition::parse("CREATE TABLE `p` (\n  `id` int NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE=MyISAM DATA DIRECTORY='/d/' INDEX DIRECTORY='/i/'");
        assert_eq!(p.indexes[0].0, "PRIMARY");
        assert_eq!(p.option("DATA DIRECTORY"), Some("/d/"));
        assert_eq!(p.option("INDEX DIRECTORY"), Some("/i/"));
    }

    #[test]
    fn each_partition_s_engine_is_the_conversion_s_but_bounds_names_and_comments_are_compared() {
        let t = |engine: &str, bound: &str, comment: &str| {
            Definition::parse(&format!(
                "CREATE TABLE `p` (\n  `id` int(11) NOT NULL,\n  PRIMARY KEY (`id`)\n) ENGINE={engine} DEFAULT CHARSET=latin1\n PARTITION BY RANGE (`id`)\n(PARTITION `p0` VALUES LESS THAN ({bound}) COMMENT = '{comment}' ENGINE = {engine},\n PARTITION `p1` VALUES LESS THAN MAXVALUE ENGINE = {engine})"
            ))
        };
        let source = t("MyISAM", "100", "engine = x");
        assert_eq!(
            differences(&source, &t("InnoDB", "100", "engine = x"), &[]),
            Vec::<String>::new()
        );
        assert_eq!(
            differences(&source, &t("InnoDB", "200", "engine = x"), &[]).len(),
            1
        );
        // A comment that reads like an engine clause is text, compared as it is.
        assert_eq!(
            differences(&source, &t("InnoDB", "100", "engine = y"), &[]).len(),
            1
        );
        assert_eq!(
            without_partition_engines(
                "(PARTITION `p0` ENGINE=MyISAM, PARTITION `engine_x` ENGINE = Aria)"
            ),
            "(PARTITION `p0` ENGINE = *, PARTITION `engine_x` ENGINE = *)"
        );
    }

    #[test]
    fn the_comparison_catches_lost_attributes_and_order_but_not_the_engine() {
        let source = Definition::parse(A);
        let same = Definition::parse(
            &A.replace("ENGINE=MyISAM AUTO_INCREMENT=5", "ENGINE=InnoDB")
                .replace(" ROW_FORMAT=FIXED", ""),
        );
        assert_eq!(
            differences(&source, &same, &["ROW_FORMAT"]),
            Vec::<String>::new()
        );
        // Without setting the row format aside, its change is a difference.
        assert_eq!(differences(&source, &same, &[]).len(), 1);
        let lost = Definition::parse(&A.replace(" IGNORED", ""));
        let d = differences(&source, &lost, &[]);
        assert!(d.iter().any(|x| x.contains("index ig")), "{d:?}");
        let reordered = Definition::parse(&A.replace(
            "  KEY `k``1` (`id`) COMMENT 'kc',\n  KEY `ig` (`id`,`u`) IGNORED,\n",
            "  KEY `ig` (`id`,`u`) IGNORED,\n  KEY `k``1` (`id`) COMMENT 'kc',\n",
        ));
        let d = differences(&source, &reordered, &[]);
        assert!(d.iter().any(|x| x.contains("order uu, ig, k`1")), "{d:?}");
        let block = Definition::parse(&A.replace(" KEY_BLOCK_SIZE=1024", ""));
        assert!(!differences(&source, &block, &[]).is_empty());
        // A hash key InnoDB makes a B-tree, sorted among the unique keys as the engine change itself does.
        let btree = Definition::parse(&A.replace(
            "  UNIQUE KEY `uu` (`u`) KEY_BLOCK_SIZE=1024,\n  UNIQUE KEY `ut` (`t`) USING HASH,\n",
            "  UNIQUE KEY `ut` (`t`),\n  UNIQUE KEY `uu` (`u`) KEY_BLOCK_SIZE=1024,\n",
        ));
        assert_eq!(differences(&source, &btree, &[]), Vec::<String>::new());
        let extra = Definition::parse(&A.replace("  FULLTEXT", "  KEY `new` (`id`),\n  FULLTEXT"));
        assert!(differences(&source, &extra, &[])
            .iter()
            .any(|x| x.contains("index new")));
        let column = Definition::parse(
            &A.replace("`u` varchar(10) NOT NULL", "`u` varchar(10) DEFAULT NULL"),
        );
        let d = differences(&source, &column, &[]);
        assert!(d.iter().any(|x| x.starts_with("column 2:")), "{d:?}");
        let fewer = Definition::parse(&A.replace("  `t` text DEFAULT NULL,\n", ""));
        assert!(differences(&source, &fewer, &[])
            .iter()
            .any(|x| x.contains("2 columns instead of 3")));
        let check = Definition::parse(&A.replace("`id` >= 0", "`id` > 0"));
        assert!(differences(&source, &check, &[])[0].starts_with("constraints"));
        let comment = Definition::parse(&A.replace("'it''s, ok'", "'other'"));
        assert!(differences(&source, &comment, &[])[0].contains("table options"));
    }
}
