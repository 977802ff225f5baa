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
//!
//! The thread's pieces have files of their own under `worker/`: the counts it keeps ([`counts`]), what all
//! threads share ([`pace`]), its connection and prepared statements ([`conn`]) and the statements of one event
//! ([`script`]); this file keeps the loop, its timing and its errors.

mod conn;
mod counts;
mod pace;
mod script;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mysql::Conn;

use self::conn::{open, socket_of, Statements};
pub(crate) use self::counts::{Counts, Moments, Window};
pub(crate) use self::pace::Pace;
use super::distribution::SbRng;
use super::run::RunSpec;
use super::stats::record_ns;
use super::table::TablePlan;
use super::wire::{Socket, Wire, WireError};
use super::workloads::{self as wl, Group};

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

/// What a thread's loop answers to, the same for every event: the window its measurements go into, when they
/// start to count and when the run ends, the flags that stop it, and the pace all threads share.
#[derive(Clone, Copy)]
pub(crate) struct Frame<'s> {
    pub(crate) window: &'s Mutex<Window>,
    pub(crate) measure_from: Instant,
    pub(crate) deadline: Instant,
    pub(crate) stop: &'s AtomicBool,
    pub(crate) abort: &'s AtomicBool,
    pub(crate) pace: &'s Pace,
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

/// The code a failed connection attempt is counted under: the server's, else the client's "cannot connect"
/// (CR_CONNECTION_ERROR 2002 through a socket, CR_CONN_HOST_ERROR 2003 over TCP).
pub(crate) fn connect_error_code(e: &mysql::Error, socket: bool) -> u16 {
    match e {
        mysql::Error::MySqlError(me) => me.code,
        _ if socket => 2002,
        _ => 2003,
    }
}

/// Where an event's latency is timed from: under `--rate`, its arrival, so the time it waited for a free thread
/// counts (sysbench adds an event's time in its queue to its latency); the time it started otherwise, and when
/// a thread was free before the arrival (it slept until then).
fn latency_start(arrival: Option<Instant>, started: Instant) -> Instant {
    arrival.map_or(started, |at| at.min(started))
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
                    let code = connect_error_code(&e, socket);
                    let mut w = window.lock().expect("bench window lock");
                    w.counts.error(code);
                    w.moments.errors.push((Instant::now(), code));
                    drop(w);
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
        let mut w = window.lock().expect("bench window lock");
        w.counts.add(c);
        w.moments.errors.push((Instant::now(), code));
        drop(w);
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
    pub(crate) fn run(mut self, frame: Frame) -> anyhow::Result<()> {
        let result = self.events(frame);
        let window = frame.window;
        // bulk_insert.lua's thread_done(): the rows still pending are sent before the thread ends.
        let mut c = Counts::default();
        let flushed = self.flush_bulk(&mut c);
        window.lock().expect("bench window lock").counts.add(&c);
        result?;
        flushed.map_err(|e| anyhow::anyhow!("the benchmark's last bulk INSERT failed: {e}"))
    }

    fn events(&mut self, frame: Frame) -> anyhow::Result<()> {
        let Frame {
            window,
            measure_from,
            deadline,
            stop,
            abort,
            pace,
        } = frame;
        loop {
            if Instant::now() >= deadline
                || stop.load(Ordering::Relaxed)
                || abort.load(Ordering::Relaxed)
            {
                return Ok(());
            }
            let arrival = match pace.claim() {
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
                    Some(at)
                }
                Some(None) => None,
            };
            let mut c = Counts::default();
            let start = Instant::now();
            let timed_from = latency_start(arrival, start);
            let (done, result) = self.one_event(&mut c, frame);
            // Statements, errors and reconnects count as they happen, finished transaction or not.
            if start >= measure_from {
                let mut w = window.lock().expect("bench window lock");
                if done {
                    let ns = timed_from.elapsed().as_nanos();
                    c.txns = 1;
                    c.busy_ns = ns;
                    record_ns(&mut w.hist, ns);
                    if self.spec.during {
                        w.moments.done.push(Instant::now());
                    }
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
    fn one_event(&mut self, c: &mut Counts, frame: Frame) -> (bool, anyhow::Result<()>) {
        let Frame {
            window,
            deadline,
            stop,
            abort,
            pace,
            ..
        } = frame;
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
                            "the benchmark stopped: the server went away ({}): check that it is running (its error log says why it stopped){}",
                            crate::error::io_detail(io),
                            if self.spec.ignore_flag {
                                "; --ignore-errors 2013 reconnects instead"
                            } else {
                                ""
                            }
                        )),
                    );
                }
                return (
                    false,
                    Err(anyhow::anyhow!(
                        "the benchmark stopped on an error the run does not ignore: {e}{}",
                        code.map(|c| if self.spec.ignore_flag {
                            format!(
                                " (code {c}; add it to --ignore-errors to retry such transactions)"
                            )
                        } else {
                            format!(" (code {c})")
                        })
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
    fn under_a_rate_latency_counts_from_the_arrival_so_queueing_counts() {
        let t0 = Instant::now();
        let late = t0 + Duration::from_millis(40);
        // The event arrived at t0 and a thread was free only 40 ms later: the 40 ms are its latency's.
        assert_eq!(latency_start(Some(t0), late), t0);
        // A thread waited for the arrival: timed from when it started, which is the arrival.
        assert_eq!(latency_start(Some(late), t0), t0);
        // No --rate: from the start.
        assert_eq!(latency_start(None, late), late);
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
