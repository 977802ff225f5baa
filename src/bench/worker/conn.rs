//! A thread's connection as the transaction loop uses it: opened with the session settings of the run, every
//! statement of the workload prepared once, and the few calls that send a prepared statement and count it.
//! Opening is a unit because the first connection, `--reconnect` and the reconnects beside a plan must all
//! prepare exactly the same statements.

use std::os::unix::io::AsRawFd;

use mysql::prelude::Queryable;
use mysql::{Conn, Statement, Value};

use super::counts::{count, Counts};
use super::{DURING_LOCK_WAIT_S, DURING_READ_TIMEOUT};
use crate::bench::run::RunSpec;
use crate::bench::table::TablePlan;
use crate::bench::wire::{Socket, Wire, WireError};
use crate::bench::workloads::{self as wl, GroupKind, Workload};

/// The sbtest statements prepared on one connection for one table.
#[derive(Default)]
pub(super) struct TableStmts {
    pub(super) point: Option<Statement>,
    pub(super) simple: Option<Statement>,
    pub(super) sum: Option<Statement>,
    pub(super) order: Option<Statement>,
    pub(super) distinct: Option<Statement>,
    pub(super) index_update: Option<Statement>,
    pub(super) non_index_update: Option<Statement>,
    pub(super) delete: Option<Statement>,
    pub(super) insert: Option<Statement>,
}

/// BEGIN and COMMIT are prepared as sysbench prepares them, or sent as text where the server refuses.
pub(super) enum Control {
    Prepared(Statement),
    Text(String),
}

pub(super) struct Statements {
    /// Not prepared under `--skip_trx` or for the scripts without a transaction, as sysbench does.
    pub(super) begin: Option<Control>,
    pub(super) commit: Option<Control>,
    pub(super) tables: Vec<TableStmts>,
    /// table workload: point read, PK range, one per secondary index.
    pub(super) table_point: Option<Statement>,
    pub(super) table_range: Option<Statement>,
    pub(super) table_index: Vec<Statement>,
    /// The write probe's locking read.
    pub(super) table_lock: Option<Statement>,
    /// select_random_points / select_random_ranges: the one statement on sbtest1.
    pub(super) random: Option<Statement>,
    /// An SQL workload's statements, in the file's order.
    pub(super) sql: Vec<Statement>,
}

fn prepare_control(conn: &mut Conn, sql: &str) -> Result<Control, mysql::Error> {
    match conn.prep(sql) {
        Ok(s) => Ok(Control::Prepared(s)),
        // ER_UNSUPPORTED_PS: sysbench falls back to client-side emulation, i.e. plain text.
        Err(mysql::Error::MySqlError(e)) if e.code == 1295 => Ok(Control::Text(sql.to_string())),
        Err(e) => Err(e),
    }
}

fn prepare_statements(
    conn: &mut Conn,
    spec: &RunSpec,
    plan: Option<&TablePlan>,
) -> Result<Statements, mysql::Error> {
    let tag = spec.tag.as_str();
    let script = spec
        .workload
        .script(&spec.oltp, plan.map_or(0, |p| p.index_sql.len()));
    let (begin, commit) = if script.iter().any(|g| g.kind == GroupKind::Begin) {
        (
            Some(prepare_control(conn, &wl::tag_sql("BEGIN", tag))?),
            Some(prepare_control(conn, &wl::tag_sql("COMMIT", tag))?),
        )
    } else {
        (None, None)
    };
    let mut tables = Vec::new();
    let w = &spec.workload;
    let reads = matches!(
        w,
        Workload::PointSelect | Workload::ReadOnly | Workload::ReadWrite
    );
    // oltp_read_only/read_write.lua prepare the ranges only with --range_selects on.
    let ranges = matches!(w, Workload::ReadOnly | Workload::ReadWrite) && spec.oltp.range_selects;
    let writes = matches!(w, Workload::ReadWrite | Workload::WriteOnly);
    let index_updates = writes || matches!(w, Workload::UpdateIndex);
    let non_index_updates = writes || matches!(w, Workload::UpdateNonIndex);
    let deletes = writes || matches!(w, Workload::Delete);
    if reads || index_updates || non_index_updates || deletes {
        for t in 1..=spec.tables {
            let mut p = |tmpl: &str, on: bool| -> Result<Option<Statement>, mysql::Error> {
                if on {
                    conn.prep(wl::tagged(tmpl, t, tag)).map(Some)
                } else {
                    Ok(None)
                }
            };
            tables.push(TableStmts {
                point: p(wl::STMT_POINT_SELECT, reads)?,
                simple: p(wl::STMT_SIMPLE_RANGE, ranges)?,
                sum: p(wl::STMT_SUM_RANGE, ranges)?,
                order: p(wl::STMT_ORDER_RANGE, ranges)?,
                distinct: p(wl::STMT_DISTINCT_RANGE, ranges)?,
                index_update: p(wl::STMT_INDEX_UPDATE, index_updates)?,
                non_index_update: p(wl::STMT_NON_INDEX_UPDATE, non_index_updates)?,
                delete: p(wl::STMT_DELETE, deletes)?,
                insert: p(wl::STMT_INSERT, writes)?,
            });
        }
    }
    let (mut table_point, mut table_range, mut table_index) = (None, None, Vec::new());
    let mut table_lock = None;
    match (plan, w) {
        (Some(plan), Workload::WriteProbe { .. }) => table_lock = Some(conn.prep(&plan.lock_sql)?),
        (Some(plan), _) => {
            table_point = Some(conn.prep(&plan.point_sql)?);
            table_range = Some(conn.prep(&plan.range_sql)?);
            for sql in &plan.index_sql {
                table_index.push(conn.prep(sql)?);
            }
        }
        (None, _) => {}
    }
    let random = match w {
        Workload::SelectRandomPoints => {
            Some(conn.prep(wl::random_points_sql(spec.oltp.random_points, tag))?)
        }
        Workload::SelectRandomRanges => {
            Some(conn.prep(wl::random_ranges_sql(spec.oltp.number_of_ranges, tag))?)
        }
        _ => None,
    };
    let mut sql = Vec::new();
    if let Workload::Sql { statements, .. } = w {
        for s in statements {
            sql.push(conn.prep(wl::tag_sql(&s.sql, tag))?);
        }
    }
    Ok(Statements {
        begin,
        commit,
        tables,
        table_point,
        table_range,
        table_index,
        table_lock,
        random,
        sql,
    })
}

/// The connection's socket for the wire; beside a plan, a reply is awaited at most [`DURING_READ_TIMEOUT`].
pub(super) fn socket_of(conn: &Conn, spec: &RunSpec) -> Socket {
    let socket = Socket::new(conn.as_raw_fd());
    if spec.during {
        socket.with_timeout(DURING_READ_TIMEOUT)
    } else {
        socket
    }
}

/// A connection of the run with its statements prepared; beside a plan, with its lock waits bounded.
pub(super) fn open(
    opts: &mysql::Opts,
    spec: &RunSpec,
    plan: Option<&TablePlan>,
) -> Result<(Conn, Statements), mysql::Error> {
    let mut conn = Conn::new(opts.clone())?;
    if spec.during {
        conn.query_drop(format!(
            "SET {} SESSION lock_wait_timeout = {DURING_LOCK_WAIT_S}, innodb_lock_wait_timeout = {DURING_LOCK_WAIT_S}",
            spec.tag
        ))?;
    }
    let stmts = prepare_statements(&mut conn, spec, plan)?;
    Ok((conn, stmts))
}

pub(super) fn exec(
    wire: &mut Wire<Socket>,
    stmt: &Statement,
    params: &[Value],
    c: &mut Counts,
) -> Result<(), WireError> {
    count(wire.execute(stmt.id(), params)?, c);
    Ok(())
}

pub(super) fn exec_control(
    wire: &mut Wire<Socket>,
    ctl: &Option<Control>,
    c: &mut Counts,
) -> Result<(), WireError> {
    let o = match ctl.as_ref().expect("BEGIN/COMMIT prepared for this script") {
        Control::Prepared(s) => wire.execute(s.id(), &[])?,
        Control::Text(sql) => wire.query(sql)?,
    };
    count(o, c);
    Ok(())
}

pub(super) fn stmt(s: &Option<Statement>) -> &Statement {
    s.as_ref().expect("statement prepared for this workload")
}
