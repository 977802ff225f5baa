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
    /// oltp_write_only.lua: the read/write transaction without its reads.
    WriteOnly,
    /// oltp_update_index.lua: one `UPDATE ... SET k=k+1` per event, no transaction.
    UpdateIndex,
    /// oltp_update_non_index.lua: one `UPDATE ... SET c=?` per event.
    UpdateNonIndex,
    /// oltp_delete.lua: one `DELETE ... WHERE id=?` per event.
    Delete,
    /// select_random_points.lua: one `SELECT ... WHERE k IN (10 values)` on sbtest1.
    SelectRandomPoints,
    /// select_random_ranges.lua: one `SELECT count(k) ... WHERE k BETWEEN .. OR ..` (10 ranges) on sbtest1.
    SelectRandomRanges,
    /// bulk_insert.lua: each thread appends rows (n, n) to its own table sbtest<thread> in multi-row INSERTs;
    /// an event is one row.
    BulkInsert,
    /// Reads generated from a real table's schema: `table:DB.TABLE`.
    Table {
        db: String,
        table: String,
    },
    /// A write probe on a real table for the workload beside a plan (`--bench-during`): one locking read by
    /// key (`SELECT key FROM t WHERE key = ? FOR UPDATE`) per event, in autocommit. It takes the locks a write
    /// takes (a metadata write lock, and for MyISAM the table's write lock) and changes nothing, so it waits
    /// where the table's writers wait and writes no row, no undo and no binary log. Not a sysbench script
    /// and not named on the command line.
    WriteProbe {
        db: String,
        table: String,
    },
    /// A workload given as SQL ([`super::sqlfile`]): its statements, one transaction per event, on the run's
    /// schema. Not named on the command line: built from a file.
    Sql {
        name: String,
        statements: Vec<super::sqlfile::SqlStatement>,
    },
}

impl Workload {
    pub fn parse(s: &str) -> anyhow::Result<Workload> {
        Ok(match s {
            "oltp_point_select" => Workload::PointSelect,
            "oltp_read_only" => Workload::ReadOnly,
            "oltp_read_write" => Workload::ReadWrite,
            "oltp_insert" => Workload::Insert,
            "oltp_write_only" => Workload::WriteOnly,
            "oltp_update_index" => Workload::UpdateIndex,
            "oltp_update_non_index" => Workload::UpdateNonIndex,
            "oltp_delete" => Workload::Delete,
            "select_random_points" => Workload::SelectRandomPoints,
            "select_random_ranges" => Workload::SelectRandomRanges,
            "bulk_insert" => Workload::BulkInsert,
            other => {
                let Some(rest) = other.strip_prefix("table:") else {
                    return Err(bad_input(format!(
                        "unknown workload '{other}': use one of {} or table:DB.TABLE",
                        SYSBENCH_NAMES.join(", ")
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
            Workload::WriteOnly => "oltp_write_only".into(),
            Workload::UpdateIndex => "oltp_update_index".into(),
            Workload::UpdateNonIndex => "oltp_update_non_index".into(),
            Workload::Delete => "oltp_delete".into(),
            Workload::SelectRandomPoints => "select_random_points".into(),
            Workload::SelectRandomRanges => "select_random_ranges".into(),
            Workload::BulkInsert => "bulk_insert".into(),
            Workload::Table { db, table } => format!("table:{db}.{table}"),
            Workload::WriteProbe { db, table } => format!("write_probe:{db}.{table}"),
            Workload::Sql { name, .. } => format!("sql:{name}"),
        }
    }

    /// The real table a `table:` workload or a write probe works on.
    pub fn real_table(&self) -> Option<(&str, &str)> {
        match self {
            Workload::Table { db, table } | Workload::WriteProbe { db, table } => {
                Some((db.as_str(), table.as_str()))
            }
            _ => None,
        }
    }

    /// True when the workload never writes, so it can measure a read-only server.
    pub fn is_read_only(&self) -> bool {
        if let Workload::Sql { statements, .. } = self {
            return statements.iter().all(|s| !s.writes);
        }
        matches!(
            self,
            Workload::PointSelect
                | Workload::ReadOnly
                | Workload::SelectRandomPoints
                | Workload::SelectRandomRanges
                | Workload::Table { .. }
        )
    }

    /// True for the scripts whose run reads sbtest1 only, whatever `--tables` says (their prepare makes
    /// `--tables` tables all the same: oltp_common.lua's parallel prepare command takes the place of the
    /// script's own, which asserts `--tables=1`).
    pub fn single_table(&self) -> bool {
        matches!(
            self,
            Workload::SelectRandomPoints | Workload::SelectRandomRanges
        )
    }

    /// True for the scripts built on oltp_common.lua, which take its options (`--point_selects`, `--skip_trx`,
    /// `--auto_inc`, ...). select_random_*.lua `require("oltp_common")` too: its table options shape their
    /// prepare (`--mysql_storage_engine=myisam` is what select_random_ranges was written for), the others are
    /// accepted and change nothing in their run.
    pub fn uses_oltp_common(&self) -> bool {
        matches!(
            self,
            Workload::SelectRandomPoints
                | Workload::SelectRandomRanges
                | Workload::PointSelect
                | Workload::ReadOnly
                | Workload::ReadWrite
                | Workload::Insert
                | Workload::WriteOnly
                | Workload::UpdateIndex
                | Workload::UpdateNonIndex
                | Workload::Delete
        )
    }

    /// The sysbench script's transaction with oltp_common.lua's options `o`; `secondary_indexes` only matters
    /// for the table workload. A group whose count is 0 stays in: sysbench still draws its table number.
    pub fn script(&self, o: &OltpOptions, secondary_indexes: usize) -> Vec<Group> {
        use GroupKind::*;
        let g = |kind, count| Group { kind, count };
        // The event() bodies of oltp_read_only/read_write/write_only.lua: BEGIN unless --skip_trx, the point
        // selects, the four ranges unless --range_selects=off, the writes, COMMIT unless --skip_trx.
        let reads = || {
            let mut v = vec![g(PointSelects, o.point_selects)];
            if o.range_selects {
                v.extend([
                    g(SimpleRanges, o.simple_ranges),
                    g(SumRanges, o.sum_ranges),
                    g(OrderRanges, o.order_ranges),
                    g(DistinctRanges, o.distinct_ranges),
                ]);
            }
            v
        };
        let writes = || {
            vec![
                g(IndexUpdates, o.index_updates),
                g(NonIndexUpdates, o.non_index_updates),
                g(DeleteInserts, o.delete_inserts),
            ]
        };
        let trx = |body: Vec<Group>| {
            if o.skip_trx {
                body
            } else {
                let mut v = vec![g(Begin, 1)];
                v.extend(body);
                v.push(g(Commit, 1));
                v
            }
        };
        match self {
            // oltp_point_select.lua sets point_selects to 1 whatever the command line says.
            Workload::PointSelect => vec![g(PointSelects, 1)],
            Workload::ReadOnly => trx(reads()),
            Workload::ReadWrite => trx([reads(), writes()].concat()),
            Workload::Insert => vec![g(InsertText, 1)],
            Workload::WriteOnly => trx(writes()),
            Workload::UpdateIndex => vec![g(IndexUpdates, o.index_updates)],
            Workload::UpdateNonIndex => vec![g(NonIndexUpdates, o.non_index_updates)],
            Workload::Delete => vec![g(Deletes, 1)],
            Workload::SelectRandomPoints => vec![g(RandomPoints, 1)],
            Workload::SelectRandomRanges => vec![g(RandomRanges, 1)],
            Workload::BulkInsert => vec![g(BulkRow, 1)],
            Workload::Table { .. } => {
                let mut v = vec![g(Begin, 1), g(TablePoints, POINT_SELECTS), g(TableRange, 1)];
                v.extend((0..secondary_indexes).map(|i| g(TableIndex(i), 1)));
                v.push(g(Commit, 1));
                v
            }
            Workload::WriteProbe { .. } => vec![g(TableLockingPoint, 1)],
            Workload::Sql { statements, .. } => {
                let mut v = vec![g(Begin, 1)];
                v.extend(statements.iter().enumerate().map(|(index, s)| {
                    g(
                        Sql {
                            index,
                            writes: s.writes,
                        },
                        1,
                    )
                }));
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

/// The sysbench scripts innops runs, by their names.
pub const SYSBENCH_NAMES: [&str; 11] = [
    "oltp_read_write",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_point_select",
    "oltp_insert",
    "oltp_update_index",
    "oltp_update_non_index",
    "oltp_delete",
    "select_random_points",
    "select_random_ranges",
    "bulk_insert",
];

/// select_random_points.lua's `--random-points` and select_random_ranges.lua's `--number-of-ranges` and
/// `--delta` defaults.
pub const RANDOM_POINTS: u32 = 10;
pub const NUMBER_OF_RANGES: u32 = 10;
pub const RANGE_DELTA: u32 = 5;

/// sysbench's bulk insert packet limit: an INSERT is sent before it would grow past 512 KiB.
pub const BULK_PACKET_SIZE: usize = 512 * 1024;

/// sysbench's `--point-selects` and `--range-size` defaults.
pub const POINT_SELECTS: u32 = 10;
pub const RANGE_SIZE: u32 = 100;

/// The options oltp_common.lua defines (sysbench 1.0.20, plus 1.1's `--create_table_options` and
/// `--reconnect`), with its defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OltpOptions {
    /// `--range_size`: ids in each range SELECT (`BETWEEN id AND id + range_size - 1`).
    pub range_size: u32,
    pub point_selects: u32,
    pub simple_ranges: u32,
    pub sum_ranges: u32,
    pub order_ranges: u32,
    pub distinct_ranges: u32,
    pub index_updates: u32,
    pub non_index_updates: u32,
    pub delete_inserts: u32,
    /// `--range_selects=off` leaves out all four range groups.
    pub range_selects: bool,
    /// `--skip_trx`: no BEGIN/COMMIT, every statement in autocommit.
    pub skip_trx: bool,
    /// `--auto_inc=off`: `id` without AUTO_INCREMENT, loaded with ids 1..N, oltp_insert sends unique
    /// client-generated ids.
    pub auto_inc: bool,
    /// `--secondary`: `KEY xid (id)` in place of the PRIMARY KEY.
    pub secondary: bool,
    /// `--create_secondary=off`: no `k_N` index on `k`.
    pub create_secondary: bool,
    /// `--mysql_storage_engine`.
    pub storage_engine: String,
    /// `--create_table_options`: text appended to CREATE TABLE.
    pub create_table_options: String,
    /// `--reconnect=N`: a new connection (statements prepared again) after every N events; 0 never.
    pub reconnect: u64,
    /// select_random_points.lua's `--random_points`: values in its `k IN (…)` list.
    pub random_points: u32,
    /// select_random_ranges.lua's `--number_of_ranges`: BETWEEN ranges OR-ed in its SELECT.
    pub number_of_ranges: u32,
    /// select_random_ranges.lua's `--delta`: each range is `k BETWEEN v AND v + delta`.
    pub delta: u32,
}

impl Default for OltpOptions {
    fn default() -> Self {
        OltpOptions {
            range_size: RANGE_SIZE,
            point_selects: POINT_SELECTS,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_selects: true,
            skip_trx: false,
            auto_inc: true,
            secondary: false,
            create_secondary: true,
            storage_engine: "innodb".into(),
            create_table_options: String::new(),
            reconnect: 0,
            random_points: RANDOM_POINTS,
            number_of_ranges: NUMBER_OF_RANGES,
            delta: RANGE_DELTA,
        }
    }
}

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
    /// oltp_delete.lua: one prepared DELETE by id.
    Deletes,
    /// select_random_points.lua's IN() lookup on `k`.
    RandomPoints,
    /// select_random_ranges.lua's OR of BETWEEN ranges on `k`.
    RandomRanges,
    /// bulk_insert.lua: one row appended to the thread's pending multi-row INSERT (sent when it is full).
    BulkRow,
    /// oltp_insert.lua: a plain (not prepared) INSERT with id 0, so AUTO_INCREMENT assigns it.
    InsertText,
    TablePoints,
    TableRange,
    /// A lookup through the table's n-th secondary index.
    TableIndex(usize),
    /// The write probe's locking read by key (`FOR UPDATE`).
    TableLockingPoint,
    /// The `index`-th statement of an SQL workload, with a row id drawn for its `:id`s.
    Sql {
        index: usize,
        writes: bool,
    },
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
            GroupKind::IndexUpdates
            | GroupKind::NonIndexUpdates
            | GroupKind::InsertText
            | GroupKind::Deletes => &[Write],
            // A row only queues; the INSERT that carries it is counted when it is sent.
            GroupKind::BulkRow => &[],
            GroupKind::DeleteInserts => &[Write, Write],
            GroupKind::Sql { writes: true, .. } => &[Write],
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

/// select_random_points.lua's statement: `points` placeholders in the IN() list (its whitespace folded).
pub fn random_points_sql(points: u32, tag: &str) -> String {
    let list = vec!["?"; points.max(1) as usize].join(", ");
    tag_sql(
        &format!("SELECT id, k, c, pad FROM sbtest1 WHERE k IN ({list})"),
        tag,
    )
}

/// select_random_ranges.lua's statement: `ranges` BETWEEN ranges joined by OR (its whitespace folded).
pub fn random_ranges_sql(ranges: u32, tag: &str) -> String {
    let list = vec!["k BETWEEN ? AND ?"; ranges.max(1) as usize].join(" OR ");
    tag_sql(&format!("SELECT count(k) FROM sbtest1 WHERE {list}"), tag)
}

/// bulk_insert.lua's table: no `c` or `pad`, no auto-increment, no secondary index.
pub fn bulk_table_sql(table: u32, tag: &str) -> String {
    tag_sql(
        &format!(
            "CREATE TABLE IF NOT EXISTS sbtest{table} (\n  id INTEGER NOT NULL,\n  k INTEGER DEFAULT '0' NOT NULL,\n  PRIMARY KEY (id))"
        ),
        tag,
    )
}

/// `CREATE TABLE sbtestN` as oltp_common.lua's create_table() builds it for MySQL: `id` with or without
/// AUTO_INCREMENT (`--auto_inc`), keyed by the PRIMARY KEY or a plain `KEY xid` (`--secondary`), the engine in a
/// version comment (`--mysql_storage_engine`, quoted here) and `--create_table_options` after it.
pub fn create_table_sql(table: u32, o: &OltpOptions, tag: &str) -> String {
    let id_def = if o.auto_inc {
        "INTEGER NOT NULL AUTO_INCREMENT"
    } else {
        "INTEGER NOT NULL"
    };
    let id_index_def = if o.secondary {
        "KEY xid"
    } else {
        "PRIMARY KEY"
    };
    tag_sql(
        &format!(
            "CREATE TABLE sbtest{table}(\n  id {id_def},\n  k INTEGER DEFAULT '0' NOT NULL,\n  \
             c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  {id_index_def} (id)\n) /*! ENGINE = {} */ {}",
            crate::sql::quote_ident(&o.storage_engine),
            o.create_table_options
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
        w.script(&OltpOptions::default(), idx)
            .iter()
            .map(|g| g.count * g.kind.statements())
            .sum()
    }

    #[test]
    fn statement_mix_per_transaction_is_sysbench_s() {
        // sysbench 1.0.20 reports per transaction: read_write 14 reads / 4 writes / 2 other (20 queries),
        // read_only 14 / 0 / 2, point_select 1 / 0 / 0, insert 0 / 1 / 0.
        assert_eq!(
            nominal_mix(&Workload::ReadWrite.script(&OltpOptions::default(), 0)),
            (14, 4, 2)
        );
        assert_eq!(statements(&Workload::ReadWrite, 0), 20);
        assert_eq!(
            nominal_mix(&Workload::ReadOnly.script(&OltpOptions::default(), 0)),
            (14, 0, 2)
        );
        assert_eq!(statements(&Workload::ReadOnly, 0), 16);
        assert_eq!(
            nominal_mix(&Workload::PointSelect.script(&OltpOptions::default(), 0)),
            (1, 0, 0)
        );
        assert_eq!(
            nominal_mix(&Workload::Insert.script(&OltpOptions::default(), 0)),
            (0, 1, 0)
        );
    }

    #[test]
    fn oltp_options_change_the_transaction_as_in_the_lua_scripts() {
        use GroupKind::*;
        let o = OltpOptions {
            point_selects: 3,
            simple_ranges: 0,
            sum_ranges: 2,
            skip_trx: true,
            ..OltpOptions::default()
        };
        // No BEGIN/COMMIT; a 0 count keeps its group (sysbench still draws the table number).
        let rw = Workload::ReadWrite.script(&o, 0);
        assert_eq!(
            rw.iter().map(|g| (g.kind, g.count)).collect::<Vec<_>>(),
            vec![
                (PointSelects, 3),
                (SimpleRanges, 0),
                (SumRanges, 2),
                (OrderRanges, 1),
                (DistinctRanges, 1),
                (IndexUpdates, 1),
                (NonIndexUpdates, 1),
                (DeleteInserts, 1),
            ]
        );
        assert_eq!(nominal_mix(&rw), (7, 4, 0));
        // --range_selects=off drops the four range groups; write_only has no reads to change.
        let o = OltpOptions {
            range_selects: false,
            index_updates: 2,
            non_index_updates: 0,
            delete_inserts: 3,
            ..OltpOptions::default()
        };
        assert_eq!(nominal_mix(&Workload::ReadOnly.script(&o, 0)), (10, 0, 2));
        assert_eq!(nominal_mix(&Workload::WriteOnly.script(&o, 0)), (0, 8, 2));
        assert_eq!(nominal_mix(&Workload::UpdateIndex.script(&o, 0)), (0, 2, 0));
        assert_eq!(
            nominal_mix(&Workload::UpdateNonIndex.script(&o, 0)),
            (0, 0, 0)
        );
        // oltp_point_select.lua forces one point select; oltp_delete and oltp_insert have one statement.
        let o = OltpOptions {
            point_selects: 7,
            skip_trx: true,
            ..OltpOptions::default()
        };
        assert_eq!(nominal_mix(&Workload::PointSelect.script(&o, 0)), (1, 0, 0));
        assert_eq!(nominal_mix(&Workload::Delete.script(&o, 0)), (0, 1, 0));
        assert_eq!(nominal_mix(&Workload::Insert.script(&o, 0)), (0, 1, 0));
    }

    #[test]
    fn create_table_follows_the_table_options() {
        let d = create_table_sql(1, &OltpOptions::default(), "/* t */");
        assert_eq!(
            d,
            "CREATE /* t */ TABLE sbtest1(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  \
             c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) /*! ENGINE = `innodb` */ "
        );
        let o = OltpOptions {
            auto_inc: false,
            secondary: true,
            storage_engine: "my`isam".into(),
            create_table_options: "ROW_FORMAT=FIXED".into(),
            ..OltpOptions::default()
        };
        let s = create_table_sql(3, &o, "/* t */");
        assert!(s.contains("  id INTEGER NOT NULL,\n"), "{s}");
        assert!(s.contains("  KEY xid (id)\n"), "{s}");
        assert!(
            s.ends_with(") /*! ENGINE = `my``isam` */ ROW_FORMAT=FIXED"),
            "{s}"
        );
    }

    #[test]
    fn read_write_runs_the_groups_in_oltp_read_write_order() {
        use GroupKind::*;
        let kinds: Vec<GroupKind> = Workload::ReadWrite
            .script(&OltpOptions::default(), 0)
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
        assert_eq!(
            nominal_mix(&w.script(&OltpOptions::default(), 3)),
            (14, 0, 2)
        );
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
        assert!(create_table_sql(2, &OltpOptions::default(), "/* t */")
            .starts_with("CREATE /* t */ TABLE sbtest2("));
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
        // Every option innops takes from oltp_common.lua, with the default OltpOptions has.
        let d = OltpOptions::default();
        for (name, default) in [
            ("simple_ranges", d.simple_ranges.to_string()),
            ("sum_ranges", d.sum_ranges.to_string()),
            ("order_ranges", d.order_ranges.to_string()),
            ("distinct_ranges", d.distinct_ranges.to_string()),
            ("index_updates", d.index_updates.to_string()),
            ("non_index_updates", d.non_index_updates.to_string()),
            ("delete_inserts", d.delete_inserts.to_string()),
            ("range_selects", d.range_selects.to_string()),
            ("auto_inc", d.auto_inc.to_string()),
            ("skip_trx", d.skip_trx.to_string()),
            ("secondary", d.secondary.to_string()),
            ("create_secondary", d.create_secondary.to_string()),
            ("mysql_storage_engine", format!("\"{}\"", d.storage_engine)),
        ] {
            let at = lua
                .find(&format!("   {name} =\n"))
                .unwrap_or_else(|| panic!("no option {name} in oltp_common.lua"));
            let def = &lua[at..at + lua[at..].find('}').unwrap()];
            assert!(
                def.trim_end().ends_with(&format!(", {default}")),
                "{name}: {def:?} vs {default}"
            );
        }
    }
}
