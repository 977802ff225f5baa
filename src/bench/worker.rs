//! One benchmark thread: its connection and prepared statements, and the transaction loop. A transaction is
//! timed from its first statement to its last (retries included, as sysbench times an event) and its
//! statements are counted the way sysbench counts them.
//!
//! Errors follow sysbench's `--mysql-ignore-errors` (default 1213, 1020, 1205): an ignored error restarts the
//! transaction and is counted; a lost connection is re-established when its code is ignored; any other error
//! stops every thread and ends the run with that error.
//!
//! The workload beside a plan ([`RunSpec::during`]) must outlive what the plan does to the server, so there no
//! error ends a thread: every failed statement and every failed connection attempt is counted by its code in the
//! interval it happens in (not when the transaction finally ends), a refused statement is rolled back and retried
//! after a pause that grows while the errors go on, a lost connection is opened again after a pause that grows
//! while the server is away, and nothing waits unbounded: lock waits end after [`DURING_LOCK_WAIT_S`] (a write
//! blocked by a conversion's guard fails with 1205 instead of hanging), a reply that does not come within
//! [`DURING_READ_TIMEOUT`] counts as a lost connection, and connecting has the connection's own timeouts.

use std::os::unix::io::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mysql::prelude::Queryable;
use mysql::{Conn, Statement, Value};

use super::distribution::SbRng;
use super::run::RunSpec;
use super::stats::record_ns;
use super::table::TablePlan;
use super::wire::{Outcome, Socket, Wire, WireError};
use super::workloads::{self as wl, Group, GroupKind, Workload};

/// Client-side codes for a lost connection (CR_SERVER_GONE_ERROR, CR_TCP_CONNECTION, CR_SERVER_LOST,
/// CR_SERVER_LOST_EXTENDED): when ignored, sysbench reconnects.
const RECONNECT_CODES: [u16; 4] = [2006, 2011, 2013, 2055];

/// Seconds a statement of the workload beside a plan waits for a lock (`lock_wait_timeout` and
/// `innodb_lock_wait_timeout` of its sessions) before it fails with 1205 and is counted.
pub const DURING_LOCK_WAIT_S: u32 = 1;
/// The longest the workload beside a plan waits for a reply before it calls the connection lost.
pub const DURING_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Pauses between retries of a refused transaction, and between connection attempts, beside a plan: from the
/// first to the last, doubling while the errors go on.
const RETRY_PAUSE: (Duration, Duration) = (Duration::from_millis(20), Duration::from_secs(1));
const RECONNECT_PAUSE: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(1));

/// Statement counts of one thread, by sysbench's classes.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Counts {
    pub(crate) txns: u64,
    pub(crate) reads: u64,
    pub(crate) writes: u64,
    pub(crate) other: u64,
    pub(crate) errors: u64,
    pub(crate) reconnects: u64,
    pub(crate) busy_ns: u128,
    /// Errors by server or client error code (only beside a plan: the bench counts them in `errors` alone).
    pub(crate) codes: std::collections::BTreeMap<u16, u64>,
}

impl Counts {
    pub(crate) fn add(&mut self, o: &Counts) {
        self.txns += o.txns;
        self.reads += o.reads;
        self.writes += o.writes;
        self.other += o.other;
        self.errors += o.errors;
        self.reconnects += o.reconnects;
        self.busy_ns += o.busy_ns;
        for (k, v) in &o.codes {
            *self.codes.entry(*k).or_default() += v;
        }
    }

    /// What was counted after `earlier`, a snapshot of the same running totals.
    pub(crate) fn since(&self, earlier: &Counts) -> Counts {
        let mut codes = self.codes.clone();
        for (k, v) in &earlier.codes {
            if let Some(n) = codes.get_mut(k) {
                *n = n.saturating_sub(*v);
            }
        }
        codes.retain(|_, n| *n > 0);
        Counts {
            txns: self.txns.saturating_sub(earlier.txns),
            reads: self.reads.saturating_sub(earlier.reads),
            writes: self.writes.saturating_sub(earlier.writes),
            other: self.other.saturating_sub(earlier.other),
            errors: self.errors.saturating_sub(earlier.errors),
            reconnects: self.reconnects.saturating_sub(earlier.reconnects),
            busy_ns: self.busy_ns.saturating_sub(earlier.busy_ns),
            codes,
        }
    }

    /// One error with its code.
    fn error(&mut self, code: u16) {
        self.errors += 1;
        *self.codes.entry(code).or_default() += 1;
    }
    pub(crate) fn queries(&self) -> u64 {
        self.reads + self.writes + self.other
    }
}

/// What a thread measured since the reporter last looked.
pub(crate) struct Window {
    pub(crate) hist: Histogram<u64>,
    pub(crate) counts: Counts,
}

/// The sbtest statements prepared on one connection for one table.
#[derive(Default)]
struct TableStmts {
    point: Option<Statement>,
    simple: Option<Statement>,
    sum: Option<Statement>,
    order: Option<Statement>,
    distinct: Option<Statement>,
    index_update: Option<Statement>,
    non_index_update: Option<Statement>,
    delete: Option<Statement>,
    insert: Option<Statement>,
}

/// BEGIN and COMMIT are prepared as sysbench prepares them, or sent as text where the server refuses.
enum Control {
    Prepared(Statement),
    Text(String),
}

struct Statements {
    /// Not prepared under `--skip_trx` or for the scripts without a transaction, as sysbench does.
    begin: Option<Control>,
    commit: Option<Control>,
    tables: Vec<TableStmts>,
    /// table workload: point read, PK range, one per secondary index.
    table_point: Option<Statement>,
    table_range: Option<Statement>,
    table_index: Vec<Statement>,
    /// The write probe's locking read.
    table_lock: Option<Statement>,
    /// select_random_points / select_random_ranges: the one statement on sbtest1.
    random: Option<Statement>,
}

/// What all threads share to keep `--events` and `--rate`: the events handed out so far, and the schedule of
/// arrivals (exponentially spaced, as sysbench's event generator spaces them).
pub(crate) struct Pace {
    events: u64,
    started: std::sync::atomic::AtomicU64,
    rate: u32,
    next: Mutex<(Instant, SbRng)>,
    /// `sysbench.rand.unique()`'s counter, shared so that no two threads draw the same id.
    unique: AtomicU32,
    unique_offset: u32,
}

/// Jeff Preshing's quadratic-residue permutation of the 32-bit integers below the prime 4294967291, which
/// `sysbench.rand.unique()` applies twice to a counter: every counter value gives a different id.
fn permute_qpr(x: u32) -> u32 {
    const P: u32 = 4_294_967_291;
    if x >= P {
        return x;
    }
    let residue = ((u64::from(x) * u64::from(x)) % u64::from(P)) as u32;
    if x <= P / 2 {
        residue
    } else {
        P - residue
    }
}

impl Pace {
    pub(crate) fn new(spec: &RunSpec, start: Instant) -> Pace {
        Pace {
            events: spec.events,
            started: std::sync::atomic::AtomicU64::new(0),
            rate: spec.rate,
            next: Mutex::new((start, SbRng::new(spec.seed, u64::MAX))),
            unique: AtomicU32::new(SbRng::new(spec.seed, u64::MAX - 1).next_u64() as u32),
            unique_offset: SbRng::new(spec.seed, u64::MAX - 2).next_u64() as u32,
        }
    }

    /// `sysbench.rand.unique()`: a 32-bit value no other call of this run returns.
    pub(crate) fn unique(&self) -> u32 {
        let i = self.unique.fetch_add(1, Ordering::Relaxed);
        permute_qpr(permute_qpr(i).wrapping_add(self.unique_offset) ^ 0x5bf0_3635)
    }

    /// Claim the next event: `None` when `--events` are used up, else the time it may start.
    fn claim(&self) -> Option<Option<Instant>> {
        if self.events > 0 && self.started.fetch_add(1, Ordering::Relaxed) >= self.events {
            return None;
        }
        if self.rate == 0 {
            return Some(None);
        }
        let mut g = self.next.lock().expect("bench pace lock");
        // Exponential gap with mean 1/rate: -ln(1 - u) / rate.
        let gap = -(1.0 - g.1.uniform_double()).ln() / f64::from(self.rate);
        g.0 += Duration::from_secs_f64(gap.min(3600.0));
        Some(Some(g.0))
    }
}

pub(crate) struct Worker<'a> {
    spec: &'a RunSpec,
    plan: Option<&'a TablePlan>,
    opts: mysql::Opts,
    /// Owns the socket (and closes the statements at the end); statements run over `wire`.
    _conn: Conn,
    wire: Wire<Socket>,
    stmts: Statements,
    rng: SbRng,
    dist: super::distribution::Dist,
    thread: u32,
    /// bulk_insert: the pending INSERT and the rows in it; `bulk_next` is the next row's id.
    bulk: String,
    bulk_rows: u32,
    bulk_next: u64,
    script: Vec<Group>,
    /// Events completed on this connection's thread, for `--reconnect`.
    events_done: u64,
    c_buf: String,
    pad_buf: String,
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
            Some(conn.prep(wl::random_points_sql(wl::RANDOM_POINTS, tag))?)
        }
        Workload::SelectRandomRanges => {
            Some(conn.prep(wl::random_ranges_sql(wl::NUMBER_OF_RANGES, tag))?)
        }
        _ => None,
    };
    Ok(Statements {
        begin,
        commit,
        tables,
        table_point,
        table_range,
        table_index,
        table_lock,
        random,
    })
}

/// The connection's socket for the wire; beside a plan, a reply is awaited at most [`DURING_READ_TIMEOUT`].
fn socket_of(conn: &Conn, spec: &RunSpec) -> Socket {
    let socket = Socket::new(conn.as_raw_fd());
    if spec.during {
        socket.with_timeout(DURING_READ_TIMEOUT)
    } else {
        socket
    }
}

/// A connection of the run with its statements prepared; beside a plan, with its lock waits bounded.
fn open(
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

/// The code a failed connection attempt is counted under: the server's, else the client's "cannot connect"
/// (CR_CONNECTION_ERROR 2002 through a socket, CR_CONN_HOST_ERROR 2003 over TCP).
pub(crate) fn connect_error_code(e: &mysql::Error, socket: bool) -> u16 {
    match e {
        mysql::Error::MySqlError(me) => me.code,
        _ if socket => 2002,
        _ => 2003,
    }
}

/// Sleep `d`, in short naps, unless `halt` says stop first; false when it did.
fn pause(d: Duration, halt: &dyn Fn() -> bool) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if halt() {
            return false;
        }
        std::thread::sleep((until - Instant::now()).min(Duration::from_millis(20)));
    }
    !halt()
}

/// A server error code for `e`, with a lost connection reported as CR_SERVER_LOST (2013), as libmysqlclient
/// reports it.
fn error_code(e: &WireError) -> Option<u16> {
    match e {
        WireError::Server { code, .. } => Some(*code),
        WireError::Io(_) => Some(2013),
        WireError::Protocol(_) => None,
    }
}

/// Count a statement the way sysbench does: a result set is a read, changed rows a write, the rest other.
fn count(o: Outcome, c: &mut Counts) {
    match o {
        Outcome::Rows(_) => c.reads += 1,
        Outcome::Affected(n) if n > 0 => c.writes += 1,
        Outcome::Affected(_) => c.other += 1,
    }
}

fn exec(
    wire: &mut Wire<Socket>,
    stmt: &Statement,
    params: &[Value],
    c: &mut Counts,
) -> Result<(), WireError> {
    count(wire.execute(stmt.id(), params)?, c);
    Ok(())
}

fn exec_control(
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

fn stmt(s: &Option<Statement>) -> &Statement {
    s.as_ref().expect("statement prepared for this workload")
}

impl<'a> Worker<'a> {
    pub(crate) fn new(
        spec: &'a RunSpec,
        plan: Option<&'a TablePlan>,
        opts: mysql::Opts,
        thread: u32,
    ) -> anyhow::Result<Worker<'a>> {
        let (conn, stmts) = open(&opts, spec, plan)?;
        Ok(Worker {
            spec,
            plan,
            opts,
            wire: Wire::new(socket_of(&conn, spec)),
            _conn: conn,
            stmts,
            rng: SbRng::new(spec.seed, u64::from(thread)),
            dist: spec.dist(),
            thread,
            bulk: String::new(),
            bulk_rows: 0,
            bulk_next: 1,
            script: spec
                .workload
                .script(&spec.oltp, plan.map_or(0, |p| p.index_sql.len())),
            events_done: 0,
            c_buf: String::with_capacity(wl::C_TEMPLATE.len()),
            pad_buf: String::with_capacity(wl::PAD_TEMPLATE.len()),
        })
    }

    /// Take over a connection opened by [`open`].
    fn adopt(&mut self, conn: Conn, stmts: Statements) {
        self.wire = Wire::new(socket_of(&conn, self.spec));
        self._conn = conn;
        self.stmts = stmts;
    }

    /// `get_table_num()`: uniform over the tables; 0-based here.
    fn table_index(&mut self) -> usize {
        (self.rng.uniform(1, self.spec.tables) - 1) as usize
    }

    /// `get_id()`: the default distribution over [1, table_size].
    fn id(&mut self) -> u32 {
        self.rng.default(&self.dist, 1, self.spec.table_size)
    }

    /// select_random_*.lua's `sb_rand(rmin, rmax)`: the default distribution over this thread's slice of the
    /// table (rlen = table_size / threads; slices keep the threads' ranges apart).
    fn slice_id(&mut self) -> u32 {
        let rlen = f64::from(self.spec.table_size) / f64::from(self.spec.threads.max(1));
        let rmin = rlen * f64::from(self.thread % self.spec.threads.max(1));
        let rmax = rmin + rlen;
        self.rng.default(&self.dist, rmin as u32, rmax as u32)
    }

    /// Send the pending bulk INSERT, if any.
    fn flush_bulk(&mut self, c: &mut Counts) -> Result<(), WireError> {
        if self.bulk_rows == 0 {
            return Ok(());
        }
        let sql = std::mem::take(&mut self.bulk);
        self.bulk_rows = 0;
        count(self.wire.query(&sql)?, c);
        Ok(())
    }

    /// A sampled row of the table workload, drawn with the run's distribution.
    fn sample(&mut self) -> usize {
        let n = self.plan.map_or(1, |p| p.samples.len()) as u32;
        (self.rng.default(&self.dist, 1, n.max(1)) - 1) as usize
    }

    /// One event of the script. Returns at the first failing statement.
    fn transaction(&mut self, c: &mut Counts, pace: &Pace) -> Result<(), WireError> {
        let script = std::mem::take(&mut self.script);
        let r = self.run_script(&script, c, pace);
        self.script = script;
        r
    }

    fn run_script(
        &mut self,
        script: &[Group],
        c: &mut Counts,
        pace: &Pace,
    ) -> Result<(), WireError> {
        // `id + range_size - 1`, as the INT sysbench binds (range_size 0 gives an empty range).
        let range = i64::from(self.spec.oltp.range_size) - 1;
        for g in script {
            match g.kind {
                GroupKind::Begin => exec_control(&mut self.wire, &self.stmts.begin, c)?,
                GroupKind::Commit => exec_control(&mut self.wire, &self.stmts.commit, c)?,
                GroupKind::PointSelects => {
                    let t = self.table_index();
                    for _ in 0..g.count {
                        let id = self.id();
                        exec(
                            &mut self.wire,
                            stmt(&self.stmts.tables[t].point),
                            &[Value::from(id)],
                            c,
                        )?;
                    }
                }
                GroupKind::SimpleRanges
                | GroupKind::SumRanges
                | GroupKind::OrderRanges
                | GroupKind::DistinctRanges => {
                    let t = self.table_index();
                    for _ in 0..g.count {
                        let id = self.id();
                        let ts = &self.stmts.tables[t];
                        let s = match g.kind {
                            GroupKind::SimpleRanges => &ts.simple,
                            GroupKind::SumRanges => &ts.sum,
                            GroupKind::OrderRanges => &ts.order,
                            _ => &ts.distinct,
                        };
                        exec(
                            &mut self.wire,
                            stmt(s),
                            &[Value::from(id), Value::from(i64::from(id) + range)],
                            c,
                        )?;
                    }
                }
                GroupKind::IndexUpdates => {
                    let t = self.table_index();
                    for _ in 0..g.count {
                        let id = self.id();
                        exec(
                            &mut self.wire,
                            stmt(&self.stmts.tables[t].index_update),
                            &[Value::from(id)],
                            c,
                        )?;
                    }
                }
                GroupKind::NonIndexUpdates => {
                    let t = self.table_index();
                    for _ in 0..g.count {
                        self.rng.fill_template(wl::C_TEMPLATE, &mut self.c_buf);
                        let id = self.id();
                        let params = [Value::from(self.c_buf.as_str()), Value::from(id)];
                        exec(
                            &mut self.wire,
                            stmt(&self.stmts.tables[t].non_index_update),
                            &params,
                            c,
                        )?;
                    }
                }
                GroupKind::DeleteInserts => {
                    let t = self.table_index();
                    for _ in 0..g.count {
                        let id = self.id();
                        let k = self.id();
                        self.rng.fill_template(wl::C_TEMPLATE, &mut self.c_buf);
                        self.rng.fill_template(wl::PAD_TEMPLATE, &mut self.pad_buf);
                        exec(
                            &mut self.wire,
                            stmt(&self.stmts.tables[t].delete),
                            &[Value::from(id)],
                            c,
                        )?;
                        let params = [
                            Value::from(id),
                            Value::from(k),
                            Value::from(self.c_buf.as_str()),
                            Value::from(self.pad_buf.as_str()),
                        ];
                        exec(
                            &mut self.wire,
                            stmt(&self.stmts.tables[t].insert),
                            &params,
                            c,
                        )?;
                    }
                }
                GroupKind::Deletes => {
                    // oltp_delete.lua: table uniform, then the id.
                    let t = self.table_index();
                    for _ in 0..g.count {
                        let id = self.id();
                        exec(
                            &mut self.wire,
                            stmt(&self.stmts.tables[t].delete),
                            &[Value::from(id)],
                            c,
                        )?;
                    }
                }
                GroupKind::RandomPoints => {
                    let params: Vec<Value> = (0..wl::RANDOM_POINTS)
                        .map(|_| Value::from(self.slice_id()))
                        .collect();
                    exec(&mut self.wire, stmt(&self.stmts.random), &params, c)?;
                }
                GroupKind::RandomRanges => {
                    let mut params = Vec::with_capacity(2 * wl::NUMBER_OF_RANGES as usize);
                    for _ in 0..wl::NUMBER_OF_RANGES {
                        let v = self.slice_id();
                        params.push(Value::from(v));
                        params.push(Value::from(v + wl::RANGE_DELTA));
                    }
                    exec(&mut self.wire, stmt(&self.stmts.random), &params, c)?;
                }
                GroupKind::BulkRow => {
                    // bulk_insert.lua: rows (n, n) into sbtest<thread + 1>, sent before the INSERT would
                    // pass sysbench's packet size.
                    let row = format!("({0},{0})", self.bulk_next);
                    if self.bulk_rows > 0 && self.bulk.len() + row.len() + 1 > wl::BULK_PACKET_SIZE
                    {
                        self.flush_bulk(c)?;
                    }
                    if self.bulk_rows == 0 {
                        self.bulk = format!(
                            "INSERT {} INTO sbtest{} VALUES",
                            self.spec.tag,
                            self.thread + 1
                        );
                    } else {
                        self.bulk.push(',');
                    }
                    self.bulk.push_str(&row);
                    self.bulk_rows += 1;
                    self.bulk_next += 1;
                }
                GroupKind::InsertText => {
                    // oltp_insert.lua: table, k, c, pad drawn in that order; id 0 lets AUTO_INCREMENT assign it,
                    // and with --auto_inc=off the id is sysbench.rand.unique() - 2147483648 (an SQL INT).
                    let t = self.rng.uniform(1, self.spec.tables);
                    let k = self.id();
                    self.rng.fill_template(wl::C_TEMPLATE, &mut self.c_buf);
                    self.rng.fill_template(wl::PAD_TEMPLATE, &mut self.pad_buf);
                    let id = if self.spec.oltp.auto_inc {
                        0
                    } else {
                        i64::from(pace.unique()) - 2_147_483_648
                    };
                    let sql = format!(
                        "INSERT {} INTO sbtest{t} (id, k, c, pad) VALUES ({id}, {k}, '{}', '{}')",
                        self.spec.tag, self.c_buf, self.pad_buf
                    );
                    count(self.wire.query(&sql)?, c);
                }
                GroupKind::TablePoints => {
                    for _ in 0..g.count {
                        let row = self.sample();
                        let p = self.plan.expect("table plan");
                        exec(
                            &mut self.wire,
                            stmt(&self.stmts.table_point),
                            &p.point_params(row),
                            c,
                        )?;
                    }
                }
                GroupKind::TableRange => {
                    let row = self.sample();
                    let p = self.plan.expect("table plan");
                    exec(
                        &mut self.wire,
                        stmt(&self.stmts.table_range),
                        &p.range_params(row),
                        c,
                    )?;
                }
                GroupKind::TableLockingPoint => {
                    let row = self.sample();
                    let p = self.plan.expect("table plan");
                    exec(
                        &mut self.wire,
                        stmt(&self.stmts.table_lock),
                        &p.point_params(row),
                        c,
                    )?;
                }
                GroupKind::TableIndex(i) => {
                    let row = self.sample();
                    let p = self.plan.expect("table plan");
                    exec(
                        &mut self.wire,
                        &self.stmts.table_index[i],
                        &p.index_params(i, row),
                        c,
                    )?;
                }
            }
        }
        Ok(())
    }

    /// oltp_common.lua's check_reconnect() (sysbench 1.1's `--reconnect=N`): after every N-th event of this
    /// thread, a new connection with its statements prepared again, counted as a reconnect. The event is done
    /// either way; a failed reconnection is an error like a failed first connection.
    fn check_reconnect(
        &mut self,
        c: &mut Counts,
        deadline: Instant,
        stop: &AtomicBool,
    ) -> (bool, anyhow::Result<()>) {
        let every = self.spec.oltp.reconnect;
        if every == 0 {
            return (true, Ok(()));
        }
        self.events_done += 1;
        if !self.events_done.is_multiple_of(every) {
            return (true, Ok(()));
        }
        // bulk_insert rows still queued stay in `self.bulk` and go out on the new connection.
        match open(&self.opts, self.spec, self.plan) {
            Ok((conn, stmts)) => {
                self.adopt(conn, stmts);
                c.reconnects += 1;
                (true, Ok(()))
            }
            Err(e) if Instant::now() < deadline && !stop.load(Ordering::Relaxed) => (
                true,
                Err(anyhow::anyhow!(
                    "the benchmark stopped: --reconnect could not open a new connection ({e}): check that the server takes connections, or drop --reconnect"
                )),
            ),
            Err(_) => (true, Ok(())),
        }
    }

    fn reconnect(&mut self, stop: &AtomicBool, deadline: Instant) -> bool {
        while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
            if let Ok((conn, stmts)) = open(&self.opts, self.spec, self.plan) {
                self.adopt(conn, stmts);
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    /// Beside a plan: open the connection again until it works or the run is stopped, counting each failed
    /// attempt by its code in the interval it fails in, and pausing longer while the server stays away.
    fn reconnect_during(&mut self, window: &Mutex<Window>, halt: &dyn Fn() -> bool) -> bool {
        let socket = self.opts.get_socket().is_some();
        let mut wait = RECONNECT_PAUSE.0;
        loop {
            if halt() {
                return false;
            }
            match open(&self.opts, self.spec, self.plan) {
                Ok((conn, stmts)) => {
                    self.adopt(conn, stmts);
                    window.lock().expect("bench window lock").counts.reconnects += 1;
                    return true;
                }
                Err(e) => {
                    window
                        .lock()
                        .expect("bench window lock")
                        .counts
                        .error(connect_error_code(&e, socket));
                    if !pause(wait, halt) {
                        return false;
                    }
                    wait = (wait * 2).min(RECONNECT_PAUSE.1);
                }
            }
        }
    }

    /// Beside a plan: after a failed statement, count it where it happened, roll back what the transaction
    /// holds, and get ready to retry (a new connection when the old one is gone). False when the run was
    /// stopped meanwhile.
    fn recover_during(
        &mut self,
        e: &WireError,
        c: &mut Counts,
        window: &Mutex<Window>,
        wait: &mut Duration,
        halt: &dyn Fn() -> bool,
    ) -> bool {
        let code = error_code(e).unwrap_or(2013);
        c.error(code);
        window.lock().expect("bench window lock").counts.add(c);
        *c = Counts::default();
        let mut lost = !matches!(e, WireError::Server { .. }) || RECONNECT_CODES.contains(&code);
        if !lost {
            // A lock wait timeout leaves the transaction open with what it holds: let go before the pause.
            let rollback = wl::tag_sql("ROLLBACK", &self.spec.tag);
            lost = matches!(
                self.wire.query(&rollback),
                Err(WireError::Io(_) | WireError::Protocol(_))
            );
        }
        if lost {
            return self.reconnect_during(window, halt);
        }
        let ok = pause(*wait, halt);
        *wait = (*wait * 2).min(RETRY_PAUSE.1);
        ok
    }

    /// Run transactions until the deadline; what started after `measure_from` goes into `window`.
    pub(crate) fn run(
        mut self,
        window: &Mutex<Window>,
        measure_from: Instant,
        deadline: Instant,
        stop: &AtomicBool,
        abort: &AtomicBool,
        pace: &Pace,
    ) -> anyhow::Result<()> {
        let result = self.events(window, measure_from, deadline, stop, abort, pace);
        // bulk_insert.lua's thread_done(): the rows still pending are sent before the thread ends.
        let mut c = Counts::default();
        let flushed = self.flush_bulk(&mut c);
        window.lock().expect("bench window lock").counts.add(&c);
        result?;
        flushed.map_err(|e| anyhow::anyhow!("the benchmark's last bulk INSERT failed: {e}"))
    }

    fn events(
        &mut self,
        window: &Mutex<Window>,
        measure_from: Instant,
        deadline: Instant,
        stop: &AtomicBool,
        abort: &AtomicBool,
        pace: &Pace,
    ) -> anyhow::Result<()> {
        loop {
            if Instant::now() >= deadline
                || stop.load(Ordering::Relaxed)
                || abort.load(Ordering::Relaxed)
            {
                return Ok(());
            }
            match pace.claim() {
                None => return Ok(()),
                Some(Some(at)) => {
                    while Instant::now() < at.min(deadline)
                        && !stop.load(Ordering::Relaxed)
                        && !abort.load(Ordering::Relaxed)
                    {
                        std::thread::sleep(
                            at.saturating_duration_since(Instant::now())
                                .min(Duration::from_millis(50)),
                        );
                    }
                    if Instant::now() >= deadline {
                        return Ok(());
                    }
                }
                Some(None) => {}
            }
            let mut c = Counts::default();
            let start = Instant::now();
            let (done, result) = self.one_event(&mut c, deadline, stop, abort, pace, window);
            // Statements, errors and reconnects count as they happen, finished transaction or not.
            if start >= measure_from {
                let mut w = window.lock().expect("bench window lock");
                if done {
                    let ns = start.elapsed().as_nanos();
                    c.txns = 1;
                    c.busy_ns = ns;
                    record_ns(&mut w.hist, ns);
                }
                w.counts.add(&c);
            }
            if !done || result.is_err() {
                if result.is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                return result;
            }
        }
    }

    /// One event: the transaction, restarted after each ignored error. Returns whether it completed, and an
    /// error when the run must stop.
    #[allow(clippy::too_many_arguments)]
    fn one_event(
        &mut self,
        c: &mut Counts,
        deadline: Instant,
        stop: &AtomicBool,
        abort: &AtomicBool,
        pace: &Pace,
        window: &Mutex<Window>,
    ) -> (bool, anyhow::Result<()>) {
        let halt = || {
            stop.load(Ordering::Relaxed)
                || abort.load(Ordering::Relaxed)
                || Instant::now() >= deadline
        };
        let mut wait = RETRY_PAUSE.0;
        loop {
            let Err(e) = self.transaction(c, pace) else {
                return self.check_reconnect(c, deadline, stop);
            };
            if self.spec.during {
                if !self.recover_during(&e, c, window, &mut wait, &halt) {
                    return (false, Ok(()));
                }
                continue;
            }
            let code = error_code(&e);
            if !code.is_some_and(|code| self.spec.ignore_errors.ignores(code)) {
                if let WireError::Io(io) = &e {
                    return (
                        false,
                        Err(anyhow::anyhow!(
                            "the benchmark stopped: the server went away ({}): check that it is running (its error log says why it stopped); --ignore-errors 2013 reconnects instead",
                            crate::error::io_detail(io)
                        )),
                    );
                }
                return (
                    false,
                    Err(anyhow::anyhow!(
                        "the benchmark stopped on an error the run does not ignore: {e}{}",
                        code.map(|c| format!(
                            " (code {c}; add it to --ignore-errors to retry such transactions)"
                        ))
                        .unwrap_or_default()
                    )),
                );
            }
            if code.is_some_and(|code| RECONNECT_CODES.contains(&code)) {
                c.reconnects += 1;
                if !self.reconnect(stop, deadline) {
                    return (false, Ok(()));
                }
            } else {
                c.errors += 1;
            }
            if Instant::now() >= deadline || stop.load(Ordering::Relaxed) {
                return (false, Ok(()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pace_hands_out_events_up_to_the_limit_and_spaces_arrivals_at_the_rate() {
        let start = Instant::now();
        let spec = RunSpec {
            events: 3,
            ..RunSpec::new(Workload::PointSelect, "sbtest", "/* t */", 5)
        };
        let pace = Pace::new(&spec, start);
        assert_eq!(
            (0..5).map(|_| pace.claim().is_some()).collect::<Vec<_>>(),
            vec![true, true, true, false, false]
        );
        assert_eq!(pace.claim(), None);
        // 1000 arrivals at 100/s end about 10 s after the start (sd of the sum: 0.32 s).
        let spec = RunSpec {
            rate: 100,
            ..RunSpec::new(Workload::PointSelect, "sbtest", "/* t */", 5)
        };
        let pace = Pace::new(&spec, start);
        let mut last = start;
        for _ in 0..1000 {
            let at = pace.claim().unwrap().unwrap();
            assert!(at >= last, "arrivals are in order");
            last = at;
        }
        let span = (last - start).as_secs_f64();
        assert!((8.5..11.5).contains(&span), "{span}");
    }

    #[test]
    fn unique_ids_never_repeat_across_threads() {
        let spec = RunSpec::new(Workload::Insert, "sbtest", "/* t */", 9);
        let pace = Pace::new(&spec, Instant::now());
        let ids: Vec<u32> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..50_000).map(|_| pace.unique()).collect::<Vec<_>>()))
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let distinct: std::collections::HashSet<u32> = ids.iter().copied().collect();
        assert_eq!(distinct.len(), 200_000);
        // Spread over the whole 32-bit range, not a counter: both halves (negative and positive SQL ids) occur.
        assert!(ids.iter().any(|&i| i < 1 << 31) && ids.iter().any(|&i| i >= 1 << 31));
    }

    #[test]
    fn lost_connections_map_to_cr_server_lost() {
        let io = WireError::Io(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "gone"));
        assert_eq!(error_code(&io), Some(2013));
        assert!(RECONNECT_CODES.contains(&2013));
        let deadlock = WireError::Server {
            code: 1213,
            message: "Deadlock found".into(),
        };
        assert_eq!(error_code(&deadlock), Some(1213));
        assert_eq!(error_code(&WireError::Protocol("?".into())), None);
    }
}
