//! What each workload sends, as data: the statement texts of sysbench 1.0's `oltp_common.lua` (byte for byte,
//! apart from innops's tag comment), the order and count of statement groups in one transaction of each
//! script, and the `sbtestN` table definition. The runner executes these scripts; tests count them.

use std::fmt;

use crate::error::bad_input;

/// A workload named on the command line or in a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Workload {
    PointSelect,
    ReadOnly,
    ReadWrite,
    Insert,
    /// Reads generated from a real table's schema: `table:DB.TABLE`.
    Table {
        db: String,
        table: String,
    },
}

impl Workload {
    pub fn parse(s: &str) -> anyhow::Result<Workload> {
        Ok(match s {
            "oltp_point_select" => Workload::PointSelect,
            "oltp_read_only" => Workload::ReadOnly,
            "oltp_read_write" => Workload::ReadWrite,
            "oltp_insert" => Workload::Insert,
            other => {
                let Some(rest) = other.strip_prefix("table:") else {
                    return Err(bad_input(format!(
                        "unknown workload '{other}': use oltp_point_select, oltp_read_only, oltp_read_write, oltp_insert or table:DB.TABLE"
                    )));
                };
                match rest.split_once('.') {
                    Some((db, table)) if !db.is_empty() && !table.is_empty() => {
                        Workload::Table { db: db.to_string(), table: table.to_string() }
                    }
                    _ => {
                        return Err(bad_input(format!(
                            "workload '{other}' does not name a table: write it as table:DB.TABLE, for example table:shop.orders"
                        )))
                    }
                }
            }
        })
    }

    pub fn name(&self) -> String {
        match self {
            Workload::PointSelect => "oltp_point_select".into(),
            Workload::ReadOnly => "oltp_read_only".into(),
            Workload::ReadWrite => "oltp_read_write".into(),
            Workload::Insert => "oltp_insert".into(),
            Workload::Table { db, table } => format!("table:{db}.{table}"),
        }
    }

    /// True when the workload never writes, so it can measure a read-only server.
    pub fn is_read_only(&self) -> bool {
        matches!(
            self,
            Workload::PointSelect | Workload::ReadOnly | Workload::Table { .. }
        )
    }

    /// The sysbench script's transaction; `secondary_indexes` only matters for the table workload.
    pub fn script(&self, secondary_indexes: usize) -> Vec<Group> {
        use GroupKind::*;
        let g = |kind, count| Group { kind, count };
        match self {
            Workload::PointSelect => vec![g(PointSelects, 1)],
            // oltp_read_only.lua event(): begin, point selects, the four ranges, commit.
            Workload::ReadOnly => vec![
                g(Begin, 1),
                g(PointSelects, POINT_SELECTS),
                g(SimpleRanges, 1),
                g(SumRanges, 1),
                g(OrderRanges, 1),
                g(DistinctRanges, 1),
                g(Commit, 1),
            ],
            // oltp_read_write.lua event(): as read-only, then index and non-index updates, delete + insert.
            Workload::ReadWrite => vec![
                g(Begin, 1),
                g(PointSelects, POINT_SELECTS),
                g(SimpleRanges, 1),
                g(SumRanges, 1),
                g(OrderRanges, 1),
                g(DistinctRanges, 1),
                g(IndexUpdates, 1),
                g(NonIndexUpdates, 1),
                g(DeleteInserts, 1),
                g(Commit, 1),
            ],
            Workload::Insert => vec![g(InsertText, 1)],
            Workload::Table { .. } => {
                let mut v = vec![g(Begin, 1), g(TablePoints, POINT_SELECTS), g(TableRange, 1)];
                v.extend((0..secondary_indexes).map(|i| g(TableIndex(i), 1)));
                v.push(g(Commit, 1));
                v
            }
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// sysbench's `--point-selects` and `--range-size` defaults.
pub const POINT_SELECTS: u32 = 10;
pub const RANGE_SIZE: u32 = 100;

/// One `execute_*` call of `oltp_common.lua`: it draws a table number once, then runs its statement
/// `count` times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Group {
    pub kind: GroupKind,
    pub count: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    Begin,
    Commit,
    PointSelects,
    SimpleRanges,
    SumRanges,
    OrderRanges,
    DistinctRanges,
    IndexUpdates,
    NonIndexUpdates,
    /// A DELETE and an INSERT of the same id, both prepared.
    DeleteInserts,
    /// oltp_insert.lua: a plain (not prepared) INSERT with id 0, so AUTO_INCREMENT assigns it.
    InsertText,
    TablePoints,
    TableRange,
    /// A lookup through the table's n-th secondary index.
    TableIndex(usize),
}

/// How sysbench counts a statement: a result set is a read, affected rows make a write, anything else
/// (BEGIN, COMMIT, a DELETE that found nothing) is "other".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryClass {
    Read,
    Write,
    Other,
}

impl GroupKind {
    /// Statements one repetition of the group sends.
    pub fn statements(self) -> u32 {
        match self {
            GroupKind::DeleteInserts => 2,
            _ => 1,
        }
    }

    /// The class each statement gets when it runs as intended (rows found, rows changed).
    pub fn nominal_classes(self) -> &'static [QueryClass] {
        use QueryClass::*;
        match self {
            GroupKind::Begin | GroupKind::Commit => &[Other],
            GroupKind::IndexUpdates | GroupKind::NonIndexUpdates | GroupKind::InsertText => {
                &[Write]
            }
            GroupKind::DeleteInserts => &[Write, Write],
            _ => &[Read],
        }
    }
}

/// Statements per transaction by class, when every statement finds its rows.
pub fn nominal_mix(script: &[Group]) -> (u32, u32, u32) {
    let (mut r, mut w, mut o) = (0, 0, 0);
    for g in script {
        for c in g.kind.nominal_classes() {
            match c {
                QueryClass::Read => r += g.count,
                QueryClass::Write => w += g.count,
                QueryClass::Other => o += g.count,
            }
        }
    }
    (r, w, o)
}

// The statement texts of oltp_common.lua's stmt_defs, `%u` being the table number.
pub const STMT_POINT_SELECT: &str = "SELECT c FROM sbtest%u WHERE id=?";
pub const STMT_SIMPLE_RANGE: &str = "SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ?";
pub const STMT_SUM_RANGE: &str = "SELECT SUM(k) FROM sbtest%u WHERE id BETWEEN ? AND ?";
pub const STMT_ORDER_RANGE: &str = "SELECT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c";
pub const STMT_DISTINCT_RANGE: &str =
    "SELECT DISTINCT c FROM sbtest%u WHERE id BETWEEN ? AND ? ORDER BY c";
pub const STMT_INDEX_UPDATE: &str = "UPDATE sbtest%u SET k=k+1 WHERE id=?";
pub const STMT_NON_INDEX_UPDATE: &str = "UPDATE sbtest%u SET c=? WHERE id=?";
pub const STMT_DELETE: &str = "DELETE FROM sbtest%u WHERE id=?";
pub const STMT_INSERT: &str = "INSERT INTO sbtest%u (id, k, c, pad) VALUES (?, ?, ?, ?)";

/// Every prepared statement text, in stmt_defs order.
pub const STMT_DEFS: [&str; 9] = [
    STMT_POINT_SELECT,
    STMT_SIMPLE_RANGE,
    STMT_SUM_RANGE,
    STMT_ORDER_RANGE,
    STMT_DISTINCT_RANGE,
    STMT_INDEX_UPDATE,
    STMT_NON_INDEX_UPDATE,
    STMT_DELETE,
    STMT_INSERT,
];

/// 10 groups of 11 random digits (119 characters), for `c`.
pub const C_TEMPLATE: &str =
    "###########-###########-###########-###########-###########-###########-###########-###########-###########-###########";
/// 5 groups (59 characters), for `pad`.
pub const PAD_TEMPLATE: &str = "###########-###########-###########-###########-###########";

/// Put innops's tag after a statement's first keyword (as every innops statement carries it) and fill in the
/// table number.
pub fn tagged(template: &str, table: u32, tag: &str) -> String {
    let sql = template.replace("%u", &table.to_string());
    tag_sql(&sql, tag)
}

/// `SELECT x` → `SELECT /* tag */ x`.
pub fn tag_sql(sql: &str, tag: &str) -> String {
    match sql.split_once(' ') {
        Some((verb, rest)) => format!("{verb} {tag} {rest}"),
        None => format!("{sql} {tag}"),
    }
}

/// `CREATE TABLE sbtestN` exactly as oltp_common.lua's create_table() builds it for MySQL with the defaults
/// (auto_inc on, primary key on id, InnoDB).
pub fn create_table_sql(table: u32, tag: &str) -> String {
    tag_sql(
        &format!(
            "CREATE TABLE sbtest{table}(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  \
             c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) /*! ENGINE = innodb */ "
        ),
        tag,
    )
}

/// The secondary index create_table() adds after loading the rows.
pub fn create_index_sql(table: u32, tag: &str) -> String {
    tag_sql(&format!("CREATE INDEX k_{table} ON sbtest{table}(k)"), tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(w: &Workload, idx: usize) -> u32 {
        w.script(idx)
            .iter()
            .map(|g| g.count * g.kind.statements())
            .sum()
    }

    #[test]
    fn statement_mix_per_transaction_is_sysbench_s() {
        // sysbench 1.0.20 reports per transaction: read_write 14 reads / 4 writes / 2 other (20 queries),
        // read_only 14 / 0 / 2, point_select 1 / 0 / 0, insert 0 / 1 / 0.
        assert_eq!(nominal_mix(&Workload::ReadWrite.script(0)), (14, 4, 2));
        assert_eq!(statements(&Workload::ReadWrite, 0), 20);
        assert_eq!(nominal_mix(&Workload::ReadOnly.script(0)), (14, 0, 2));
        assert_eq!(statements(&Workload::ReadOnly, 0), 16);
        assert_eq!(nominal_mix(&Workload::PointSelect.script(0)), (1, 0, 0));
        assert_eq!(nominal_mix(&Workload::Insert.script(0)), (0, 1, 0));
    }

    #[test]
    fn read_write_runs_the_groups_in_oltp_read_write_order() {
        use GroupKind::*;
        let kinds: Vec<GroupKind> = Workload::ReadWrite
            .script(0)
            .iter()
            .map(|g| g.kind)
            .collect();
        assert_eq!(
            kinds,
            vec![
                Begin,
                PointSelects,
                SimpleRanges,
                SumRanges,
                OrderRanges,
                DistinctRanges,
                IndexUpdates,
                NonIndexUpdates,
                DeleteInserts,
                Commit
            ]
        );
    }

    #[test]
    fn the_table_workload_reads_through_every_secondary_index() {
        let w = Workload::parse("table:shop.orders").unwrap();
        assert_eq!(
            w,
            Workload::Table {
                db: "shop".into(),
                table: "orders".into()
            }
        );
        assert!(w.is_read_only());
        // BEGIN, 10 point reads, 1 range, one lookup per index, COMMIT.
        assert_eq!(nominal_mix(&w.script(3)), (14, 0, 2));
        assert_eq!(statements(&w, 0), 13);
    }

    #[test]
    fn bad_workload_names_say_what_is_accepted() {
        let e = Workload::parse("oltp_bogus").unwrap_err();
        assert_eq!(crate::error::exit_code_of(&e), 2);
        assert!(e.to_string().contains("oltp_read_write"));
        assert!(Workload::parse("table:nodot")
            .unwrap_err()
            .to_string()
            .contains("table:DB.TABLE"));
        for w in [
            "oltp_point_select",
            "oltp_read_only",
            "oltp_read_write",
            "oltp_insert",
            "table:a.b",
        ] {
            assert_eq!(Workload::parse(w).unwrap().name(), w);
        }
    }

    #[test]
    fn tags_go_after_the_first_keyword() {
        assert_eq!(
            tagged(STMT_POINT_SELECT, 3, "/* t */"),
            "SELECT /* t */ c FROM sbtest3 WHERE id=?"
        );
        assert_eq!(tag_sql("BEGIN", "/* t */"), "BEGIN /* t */");
        assert!(create_table_sql(2, "/* t */").starts_with("CREATE /* t */ TABLE sbtest2("));
    }

    #[test]
    fn statement_texts_match_the_installed_oltp_common_lua() {
        // The sysbench package ships the scripts; compare when it is installed.
        let Ok(lua) = std::fs::read_to_string("/usr/share/sysbench/oltp_common.lua") else {
            return;
        };
        for s in STMT_DEFS {
            assert!(
                lua.contains(&format!("\"{s}\"")),
                "oltp_common.lua has no statement {s:?}"
            );
        }
        for t in [C_TEMPLATE, PAD_TEMPLATE] {
            let groups = t.split('-').count();
            assert!(t.split('-').all(|g| g == "###########"));
            assert!(
                lua.contains(&format!("-- {groups} groups, {} characters", t.len())),
                "{t}"
            );
        }
        assert!(lua.contains(
            "point_selects =\n      {\"Number of point SELECT queries per transaction\", 10}"
        ));
        assert!(lua.contains("range_size =\n      {\"Range size for range SELECT queries\", 100}"));
    }
}
