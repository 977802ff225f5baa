//! Every test hook innops reads, in one place: environment variables the integration tests set to put a run at
//! an exact point (hold there, die there, send itself a signal there) or to make a bound small enough to cross
//! on a small table, so no test depends on timing. None of them changes what a run does when unset; a DBA never
//! sets them. Each hook says where it fires.

use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `INNOPS_FAULT=POINT…`: end the process (or signal it) at a point; see each function below.
pub const FAULT: &str = "INNOPS_FAULT";
/// `INNOPS_TEST_HOLD=POINT=DIR`: wait at a point; see [`hold`].
pub const HOLD: &str = "INNOPS_TEST_HOLD";
/// `INNOPS_TEST_KILL_AT_STOP`: a stop kills the server instead; see [`kill_at_stop`].
pub const KILL_AT_STOP: &str = "INNOPS_TEST_KILL_AT_STOP";
/// `INNOPS_TEST_LOCK_WAIT=N`: convert's table-lock wait in seconds; see [`lock_wait_secs`].
pub const LOCK_WAIT: &str = "INNOPS_TEST_LOCK_WAIT";
/// `INNOPS_TEST_RECONNECT_WAIT=N`: how long a restart waits for its replicas, seconds; see [`reconnect_wait`].
pub const RECONNECT_WAIT: &str = "INNOPS_TEST_RECONNECT_WAIT";
/// `INNOPS_TEST_CHUNK_ROWS=N`: chunks of exactly N rows; see [`chunk_rows`].
pub const CHUNK_ROWS: &str = "INNOPS_TEST_CHUNK_ROWS";
/// `INNOPS_TEST_DUMP_PAUSE_MS=N`: the dump waits N ms after each statement it writes; see [`dump_pause`].
pub const DUMP_PAUSE_MS: &str = "INNOPS_TEST_DUMP_PAUSE_MS";
/// `INNOPS_TEST_SLOW_ROUNDS=N`: the online walk's first N rounds outlast their ceiling; see [`slow_round`].
pub const SLOW_ROUNDS: &str = "INNOPS_TEST_SLOW_ROUNDS";
/// `INNOPS_TEST_EARLY_INSIDE`: the dump's reads wait for the index pass beside them; see [`early_inside`].
pub const EARLY_INSIDE: &str = "INNOPS_TEST_EARLY_INSIDE";
/// `INNOPS_DUMP_TRACE`: the dump prints each read it makes to stderr; see [`dump_trace`].
pub const DUMP_TRACE: &str = "INNOPS_DUMP_TRACE";

fn fault() -> Option<String> {
    std::env::var(FAULT).ok()
}

/// With `INNOPS_TEST_HOLD=POINT=DIR`, the run writes `DIR/holding` when it reaches `point` and waits (at most
/// 10 minutes) for `DIR/go`, so a test can act on the server at exactly that point (`P1,P2=DIR`: several points,
/// each with `DIR/holding-P` and `DIR/go-P`). Points: convert's
/// `before-guard`, `load-paused`, `after-copy` and `before-swap` (the guard held), the online walk's
/// `online-chunk` (after its first chunk), recover's `dump-connect-N`
/// (before the dump opens its N-th session) and `escalate-started-N` (the private server up at level N, not
/// yet recorded), and `after-action:STEP` in any plan.
pub fn hold(point: &str) {
    let Ok(spec) = std::env::var(HOLD) else {
        return;
    };
    let Some((p, dir)) = spec.split_once('=') else {
        return;
    };
    let dir = PathBuf::from(dir);
    // Several points, comma-separated: each has its own files, `holding-POINT` and `go-POINT`.
    let (holding, go) = if p.contains(',') {
        if !p.split(',').any(|x| x == point) {
            return;
        }
        (
            dir.join(format!("holding-{point}")),
            dir.join(format!("go-{point}")),
        )
    } else if p == point {
        (dir.join("holding"), dir.join("go"))
    } else {
        return;
    };
    let _ = std::fs::write(holding, b"");
    let deadline = Instant::now() + Duration::from_secs(600);
    while !go.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `INNOPS_FAULT=after-action:STEP` ends the process once the action's result is journaled;
/// `before-journal:STEP` ends it before, as a kill between the server doing the work and innops writing it
/// down would (the runner calls this with `point` = `after-action:` or `before-journal:`; the online cut-over with
/// `triggers-moved:`, once the table's own triggers are on the shadow and before the RENAME; an experiment's
/// arm-run with `arm-measured:`, once the arm is measured with its values in force and before its figures are
/// stored and the baseline set back).
pub fn exit_at(point: &str, step: &str) {
    if fault().is_some_and(|f| f.strip_prefix(point) == Some(step)) {
        eprintln!("innops: {FAULT} ends the process at {point}{step}");
        std::process::exit(137);
    }
}

/// Whether `INNOPS_FAULT=sigint-in-action:STEP` names `step`: the restart kit (and an experiment's arm-run, once
/// the arm's values are set) then sends innops a SIGINT inside that step's action, as Ctrl-C would.
pub fn sigint_in_action(step: &str) -> bool {
    fault().is_some_and(|f| f.strip_prefix("sigint-in-action:") == Some(step))
}

/// After convert's `n`-th chunk: `INNOPS_FAULT=after-chunk:N` ends the process, as a kill would;
/// `sigint-after-chunk:N` sends it a SIGINT, as Ctrl-C would (`sigterm-…`, `sighup-…`: SIGTERM, SIGHUP).
pub fn after_chunk(n: u64) {
    let Some(f) = fault() else {
        return;
    };
    let at = |prefix: &str| f.strip_prefix(prefix).and_then(|v| v.parse::<u64>().ok()) == Some(n);
    if at("after-chunk:") {
        eprintln!("innops: {FAULT} ends the process after chunk {n}");
        std::process::exit(137);
    }
    for (name, signal) in [
        ("sigint-after-chunk:", libc::SIGINT),
        ("sigterm-after-chunk:", libc::SIGTERM),
        ("sighup-after-chunk:", libc::SIGHUP),
    ] {
        if at(name) {
            // SAFETY: raise(2) on our own process; the handler installed by the command layer only sets a flag.
            unsafe { libc::raise(signal) };
        }
    }
}

/// Whether a stop kills the server (SIGKILL) instead of shutting it down, as a mariadbd killed during its
/// shutdown leaves things: no `Shutdown complete` line, crash recovery at the next start.
pub fn kill_at_stop() -> bool {
    std::env::var_os(KILL_AT_STOP).is_some()
}

/// Convert's table-lock wait in seconds (1 to 3600), when a test sets one.
pub fn lock_wait_secs() -> Option<u64> {
    std::env::var(LOCK_WAIT)
        .ok()?
        .parse()
        .ok()
        .filter(|n| (1..=3600).contains(n))
}

/// How long a restart waits for its replicas to reconnect (1 to 3600 s), when a test sets it.
pub fn reconnect_wait() -> Option<Duration> {
    std::env::var(RECONNECT_WAIT)
        .ok()?
        .parse()
        .ok()
        .filter(|n| (1..=3600).contains(n))
        .map(Duration::from_secs)
}

/// With `INNOPS_TEST_SLOW_ROUNDS=N`, the online walk's first N locked rounds run a statement that outlasts the
/// round's ceiling (a sum over ten billion rows of the Sequence engine, stopped by the session's
/// `max_statement_time`), as a chunk on a busy server would: each is cut short and tried again smaller.
pub fn slow_round() -> bool {
    use std::sync::atomic::{AtomicU64, Ordering};
    static DONE: AtomicU64 = AtomicU64::new(0);
    let Some(n) = std::env::var(SLOW_ROUNDS)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return false;
    };
    DONE.fetch_add(1, Ordering::SeqCst) < n
}

/// Chunks of exactly this many rows (convert's copy and dry-run scans), so a small table crosses many chunk
/// boundaries whatever the machine's speed.
pub fn chunk_rows() -> Option<u64> {
    std::env::var(CHUNK_ROWS)
        .ok()?
        .parse()
        .ok()
        .filter(|n| *n > 0)
}

/// Whether the dump prints each read it makes to stderr.
pub fn dump_trace() -> bool {
    std::env::var_os(DUMP_TRACE).is_some()
}

/// With `INNOPS_TEST_EARLY_INSIDE`, each read of the dump, once it has noted where the server's error log ends,
/// waits (at most a minute) until `done`: the pass over the secondary indexes asked beside the reads has ended,
/// so whatever that pass makes the server log or do falls inside a read, as it can when the timing is unlucky.
pub fn early_inside(done: &std::sync::atomic::AtomicBool) {
    early_wait_for(done);
}

/// With `INNOPS_TEST_EARLY_INSIDE`, the pass over the secondary indexes waits (at most a minute) until a read
/// has noted where the server's error log ends: without it, a pass scheduled before the reads (a loaded
/// machine) could make the server log before any read looks, and the case `early_inside` stages would not
/// happen.
pub fn early_after_read(noted: &std::sync::atomic::AtomicBool) {
    early_wait_for(noted);
}

/// Under `INNOPS_TEST_EARLY_INSIDE` only: wait (at most a minute) until `flag` is set.
fn early_wait_for(flag: &std::sync::atomic::AtomicBool) {
    if std::env::var_os(EARLY_INSIDE).is_none() {
        return;
    }
    let start = Instant::now();
    while !flag.load(std::sync::atomic::Ordering::SeqCst)
        && start.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// With `INNOPS_TEST_DUMP_PAUSE_MS=N`, the dump waits N ms after each statement it hands to its file, so a
/// small table's dump lasts long enough for its progress bar to be drawn more than once.
pub fn dump_pause() {
    static PAUSE: std::sync::OnceLock<Option<Duration>> = std::sync::OnceLock::new();
    let pause = PAUSE.get_or_init(|| {
        std::env::var(DUMP_PAUSE_MS)
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
    });
    if let Some(p) = pause {
        std::thread::sleep(*p);
    }
}
