//! The online path measured (issue 26; a benchmark, not a test: it prints figures and the targets beside
//! them, it judges nothing). Run by `ONLINE=1 benches/convert.sh` (benches/convert_online.sh), which brings up a
//! sandbox per buffer-pool size; or against any server: `OB_SOCKET=/path/mysqld.sock cargo bench --bench
//! convert_online`.
//!
//! On database `ob` it builds `pristine`, a sysbench-shaped MyISAM table of OB_ROWS rows (id INT UNSIGNED
//! AUTO_INCREMENT PK, k INT UNSIGNED, c CHAR(120), pad CHAR(60), KEY k_1(k)), reused when it holds that many.
//! Each timed run starts from a fresh copy `t` (untimed, dirty pages flushed). Then, in one run of this program,
//! side by side:
//! 1. **Without writes**, in rotated order per round: `innops convert --strategy online` against the server's
//!    bulk `ALTER TABLE t ENGINE=InnoDB` (innodb_alter_copy_bulk=ON), and pt-online-schema-change when installed
//!    (OB_PTOSC=0 leaves it out).
//! 2. **With writes**: the capacity of a 2-thread writer (UPDATE by key 70%, DELETE 15%, INSERT with a new key
//!    15%, each applied to `t` and then to `ref`, an InnoDB copy innops never touches) is measured for 5 s on the
//!    MyISAM table; then the writer runs at half that rate for 10 s before, during `innops convert --strategy
//!    online`, and for 10 s after. Each phase prints the writes' p99 and longest latency on `t`; the conversion's
//!    time with writes against its time without, and the writer's rate during against before.
//! 3. **Lost or diverged writes**: after the writer stopped, `t` and `ref` (both InnoDB then) are compared by
//!    row count and CHECKSUM TABLE, independently of innops.
//!
//! Settings: OB_SOCKET (required), OB_ROWS (1000000), OB_ROUNDS (1), OB_PTOSC (1), INNOPS (target/release/innops).

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};
use rand::{Rng, SeedableRng};

fn env_or<T: std::str::FromStr>(k: &str, d: T) -> T {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

fn connect(socket: &str) -> Conn {
    Conn::new(
        OptsBuilder::new()
            .socket(Some(socket))
            .user(Some("root"))
            .db_name(Some("ob")),
    )
    .expect("connect")
}

fn fresh_t(c: &mut Conn) {
    for s in [
        "DROP TABLE IF EXISTS t, _t_myisam_old, _t_innops_new, _t_innops_chg, _t_old, _t_new, ref",
        "DROP DATABASE IF EXISTS innops",
        "CREATE TABLE t LIKE pristine",
        "INSERT INTO t SELECT * FROM pristine",
        "SET GLOBAL innodb_max_dirty_pages_pct = 0",
    ] {
        c.query_drop(s).unwrap();
    }
    // Let the page cleaner write what the previous run left.
    std::thread::sleep(Duration::from_secs(2));
    c.query_drop("SET GLOBAL innodb_max_dirty_pages_pct = 90")
        .unwrap();
}

fn timed(f: impl FnOnce()) -> f64 {
    let t0 = Instant::now();
    f();
    t0.elapsed().as_secs_f64()
}

fn innops_online(socket: &str, dir: &std::path::Path) -> f64 {
    let bin = std::env::var("INNOPS").unwrap_or_else(|_| "target/release/innops".into());
    timed(|| {
        let out = Command::new(&bin)
            .args([
                "convert",
                "--socket",
                socket,
                "--user",
                "root",
                "--tables",
                "ob.t",
                "--strategy",
                "online",
                "--execute",
                "--yes",
                "--no-bench",
                "--quiet",
                "--run-dir",
            ])
            .arg(dir)
            .output()
            .expect("run innops");
        assert!(
            out.status.success(),
            "innops: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    })
}

fn ptosc(socket: &str) -> Option<f64> {
    if Command::new("pt-online-schema-change")
        .arg("--version")
        .output()
        .is_err()
    {
        return None;
    }
    Some(timed(|| {
        let out = Command::new("pt-online-schema-change")
            .args([
                "--alter",
                "ENGINE=InnoDB",
                "--execute",
                "--no-drop-old-table",
                "--recursion-method=none",
                "--no-version-check",
            ])
            .arg(format!("D=ob,t=t,S={socket},u=root"))
            .output()
            .expect("pt-osc");
        assert!(
            out.status.success(),
            "pt-osc: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }))
}

/// One write to `t` and `ref`; the latency of `t`'s.
fn write(c: &mut Conn, rng: &mut rand::rngs::SmallRng, rows: u64, next: &AtomicU64) -> Duration {
    let id = rng.gen_range(1..=rows);
    let sql = match rng.gen_range(0..100) {
        0..=69 => format!("UPDATE {{t}} SET k = k + 1 WHERE id = {id}"),
        70..=84 => format!("DELETE FROM {{t}} WHERE id = {id}"),
        _ => format!(
            "INSERT INTO {{t}} (id, k, c, pad) VALUES ({}, 1, 'c', 'p')",
            next.fetch_add(1, Ordering::SeqCst)
        ),
    };
    let t0 = Instant::now();
    c.query_drop(sql.replace("{t}", "t")).unwrap();
    let took = t0.elapsed();
    c.query_drop(sql.replace("{t}", "ref")).unwrap();
    took
}

/// Writers on `threads` connections at `rate` writes/s in all (0: as fast as they go), recording into `hist`
/// until `stop`; how many writes they made.
/// What the writers share: when to stop, the latencies, the next new key, the longest write.
#[derive(Clone)]
struct Shared {
    stop: Arc<AtomicBool>,
    hist: Arc<Mutex<Histogram<u64>>>,
    next: Arc<AtomicU64>,
    worst: Arc<Mutex<Worst>>,
}

fn writers(
    socket: &str,
    rows: u64,
    threads: u64,
    rate: f64,
    sh: &Shared,
) -> Vec<std::thread::JoinHandle<u64>> {
    (0..threads)
        .map(|i| {
            let socket = socket.to_string();
            let Shared {
                stop,
                hist,
                next,
                worst,
            } = sh.clone();
            std::thread::spawn(move || {
                let mut c = connect(&socket);
                let mut rng = rand::rngs::SmallRng::seed_from_u64(i + 1);
                let gap = if rate > 0.0 {
                    Duration::from_secs_f64(threads as f64 / rate)
                } else {
                    Duration::ZERO
                };
                let mut due = Instant::now();
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let began = chrono::Utc::now();
                    let took = write(&mut c, &mut rng, rows, &next);
                    {
                        let mut w = worst.lock().unwrap();
                        if took > w.0 {
                            *w = (took, Some(began));
                        }
                    }
                    hist.lock()
                        .unwrap()
                        .record(took.as_micros() as u64)
                        .unwrap();
                    n += 1;
                    due += gap;
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        std::thread::sleep(wait);
                    }
                }
                n
            })
        })
        .collect()
}

/// Until `on` turns false, samples the server's statements running longer than 200 ms every 50 ms (the writers'
/// and innops's alike); for each statement, its longest sample: when, how long so far, its state and its text.
#[allow(clippy::type_complexity)]
fn watch_waits(
    socket: &str,
    on: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(chrono::DateTime<chrono::Utc>, u64, String, String)>> {
    let socket = socket.to_string();
    std::thread::spawn(move || {
        let mut c = connect(&socket);
        let mut seen: std::collections::HashMap<
            (u64, String),
            (chrono::DateTime<chrono::Utc>, u64, String),
        > = Default::default();
        while on.load(Ordering::SeqCst) {
            let rows: Vec<(u64, u64, String, String)> = c
                .query("SELECT ID, CAST(TIME_MS AS UNSIGNED), COALESCE(STATE, ''), LEFT(COALESCE(INFO, ''), 90) FROM information_schema.PROCESSLIST WHERE COMMAND = 'Query' AND TIME_MS > 200 AND ID <> CONNECTION_ID()")
                .unwrap_or_default();
            let now = chrono::Utc::now();
            for (id, ms, state, info) in rows {
                let e = seen.entry((id, info)).or_insert((now, 0, String::new()));
                if ms > e.1 {
                    *e = (now, ms, state);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut v: Vec<_> = seen
            .into_iter()
            .map(|((_, info), (at, ms, state))| (at, ms, state, info))
            .collect();
        v.sort_by_key(|x| std::cmp::Reverse(x.1));
        v
    })
}

/// The longest write so far, and when it began.
type Worst = (Duration, Option<chrono::DateTime<chrono::Utc>>);

struct Phase {
    worst_began: Option<chrono::DateTime<chrono::Utc>>,
    writes: u64,
    secs: f64,
    p99_ms: f64,
    max_ms: f64,
}

/// Writers running for `body`'s duration (or `secs`).
fn phase(socket: &str, rows: u64, rate: f64, next: &Arc<AtomicU64>, body: impl FnOnce()) -> Phase {
    let stop = Arc::new(AtomicBool::new(false));
    let hist = Arc::new(Mutex::new(Histogram::<u64>::new(3).unwrap()));
    let t0 = Instant::now();
    let worst = Arc::new(Mutex::new((Duration::ZERO, None)));
    let sh = Shared {
        stop: stop.clone(),
        hist: hist.clone(),
        next: next.clone(),
        worst: worst.clone(),
    };
    let hs = writers(socket, rows, 2, rate, &sh);
    body();
    stop.store(true, Ordering::SeqCst);
    let writes: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    let h = hist.lock().unwrap();
    let worst_began = worst.lock().unwrap().1;
    Phase {
        worst_began,
        writes,
        secs: t0.elapsed().as_secs_f64(),
        p99_ms: h.value_at_quantile(0.99) as f64 / 1000.0,
        max_ms: h.max() as f64 / 1000.0,
    }
}

fn main() {
    let Ok(socket) = std::env::var("OB_SOCKET") else {
        eprintln!(
            "convert_online: set OB_SOCKET to a server's socket (see the comment at the top)"
        );
        return;
    };
    let rows: u64 = env_or("OB_ROWS", 1_000_000);
    let rounds: usize = env_or("OB_ROUNDS", 1);
    let with_ptosc = env_or("OB_PTOSC", 1) == 1;
    let mut root = Conn::new(
        OptsBuilder::new()
            .socket(Some(socket.clone()))
            .user(Some("root")),
    )
    .unwrap();
    root.query_drop("CREATE DATABASE IF NOT EXISTS ob").unwrap();
    let mut c = connect(&socket);
    let have: Option<u64> = c
        .query_first("SELECT COUNT(*) FROM pristine")
        .unwrap_or(None);
    if have != Some(rows) {
        c.query_drop("DROP TABLE IF EXISTS pristine").unwrap();
        c.query_drop("CREATE TABLE pristine (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT UNSIGNED NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k)) ENGINE=MyISAM").unwrap();
        c.query_drop(format!("INSERT INTO pristine (k, c, pad) SELECT FLOOR(RAND(seq) * {rows}), REPEAT(MD5(seq), 3), REPEAT(SHA1(seq), 1) FROM seq_1_to_{rows}")).unwrap();
    }
    c.query_drop("SET GLOBAL innodb_alter_copy_bulk = ON")
        .unwrap();
    let pool: String = c
        .query_first("SELECT @@innodb_buffer_pool_size DIV 1048576")
        .unwrap()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (mut online, mut alter, mut pt) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let mut methods = vec!["online", "alter", "ptosc"];
        methods.rotate_left(round % 3);
        for m in methods {
            fresh_t(&mut c);
            match m {
                "online" => online.push(innops_online(
                    &socket,
                    &dir.path().join(format!("plain-{round}")),
                )),
                "alter" => alter.push(timed(|| {
                    c.query_drop("ALTER TABLE t ENGINE=InnoDB").unwrap()
                })),
                _ if with_ptosc => pt.extend(ptosc(&socket)),
                _ => {}
            }
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v.get(v.len() / 2).copied()
    };
    let (on, al, ptm) = (
        med(&mut online).unwrap(),
        med(&mut alter).unwrap(),
        med(&mut pt),
    );
    println!("pool {pool}M, {rows} rows, {rounds} round(s); medians:");
    println!("  without writes: online {on:.2} s, bulk ALTER {al:.2} s: online/ALTER {:.2}x (target: 1.5x at the 1G pool, 3x at 48M)", on / al);
    if let Some(p) = ptm {
        println!("  pt-online-schema-change {p:.2} s: pt-osc/ALTER {:.2}x, innops online is {:.2}x pt-osc's time", p / al, on / p);
    }

    // With writes: capacity, then half of it before, during and after.
    fresh_t(&mut c);
    c.query_drop("CREATE TABLE ref LIKE t").unwrap();
    c.query_drop("ALTER TABLE ref ENGINE=InnoDB").unwrap();
    c.query_drop("INSERT INTO ref SELECT * FROM t").unwrap();
    let next = Arc::new(AtomicU64::new(rows + 1_000_000));
    let cap = phase(&socket, rows, 0.0, &next, || {
        std::thread::sleep(Duration::from_secs(5))
    });
    let rate = cap.writes as f64 / cap.secs / 2.0;
    let before = phase(&socket, rows, rate, &next, || {
        std::thread::sleep(Duration::from_secs(10))
    });
    let mut conv = 0.0;
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = watch_waits(&socket, watching.clone());
    let during = phase(&socket, rows, rate, &next, || {
        conv = innops_online(&socket, &dir.path().join("writes"))
    });
    watching.store(false, Ordering::SeqCst);
    let waits = watcher.join().unwrap();
    let after = phase(&socket, rows, rate, &next, || {
        std::thread::sleep(Duration::from_secs(10))
    });
    println!(
        "  with writes at half the capacity ({:.0} of {:.0} writes/s, 2 threads):",
        rate,
        cap.writes as f64 / cap.secs
    );
    for (name, p) in [("before", &before), ("during", &during), ("after", &after)] {
        println!(
            "    {name:<7} {:>6.0} writes/s  p99 {:>7.2} ms  longest {:>7.2} ms",
            p.writes as f64 / p.secs,
            p.p99_ms,
            p.max_ms
        );
    }
    println!("    longest write wait during the conversion: {:.2} s (target: at most 1 s, the same at every size)", during.max_ms / 1000.0);
    println!("    conversion with writes {conv:.2} s, {:.2}x its time without; the writer ran at {:.2}x its rate before", conv / on, (during.writes as f64 / during.secs) / (before.writes as f64 / before.secs));
    // Where the longest waits can come from, as the run recorded them.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("writes/report.json")).unwrap())
            .unwrap();
    let step = |id: &str| {
        report["steps"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .map(|s| (s["seconds"].clone(), s["result"].clone()))
            .unwrap_or_default()
    };
    let (copy_s, copy) = step("copy:ob.t");
    let (index_s, _) = step("indexes:ob.t");
    let (_, swap) = step("swap:ob.t");
    println!(
        "    the run: copy {copy_s} s in {} chunks, the longest chunk's lock {} s; index build {index_s} s; cut-over tries {}, writes held {} s",
        copy["chunks"], copy["longest_chunk_lock_s"], swap["tries"]["guard_tries"], swap["tries"]["writes_held_s"]
    );
    // What the statements that waited longest were waiting on (sampled every 50 ms), the longest first.
    for (at, ms, state, info) in waits.iter().take(14) {
        println!(
            "    a statement waited {ms} ms at {} UTC: {state}: {info}",
            at.format("%H:%M:%S%.3f")
        );
    }
    // Which step the longest write began in, by the steps' spans in the report.
    if let Some(at) = during.worst_began {
        let inside = report["steps"].as_array().unwrap().iter().find(|s| {
            let start = s["started"]
                .as_str()
                .and_then(|v| chrono::DateTime::parse_from_rfc3339(v).ok());
            match (start, s["seconds"].as_f64()) {
                (Some(b), Some(secs)) => {
                    let b = b.with_timezone(&chrono::Utc);
                    at >= b && at <= b + chrono::Duration::milliseconds((secs * 1000.0) as i64)
                }
                _ => false,
            }
        });
        println!(
            "    the longest write began at {} UTC, in step {}",
            at.format("%H:%M:%S%.3f"),
            inside
                .map(|s| s["id"].to_string())
                .unwrap_or_else(|| "none (between steps)".into())
        );
    }
    let sum = |c: &mut Conn, t: &str| -> (u64, Option<u64>) {
        let n: u64 = c
            .query_first(format!("SELECT COUNT(*) FROM {t}"))
            .unwrap()
            .unwrap();
        let s: Option<(String, Option<u64>)> = c
            .query_first(format!("CHECKSUM TABLE {t} EXTENDED"))
            .unwrap();
        (n, s.and_then(|x| x.1))
    };
    let (a, b) = (sum(&mut c, "t"), sum(&mut c, "ref"));
    println!("    lost or diverged writes: {} (t {} rows checksum {:?}, the reference {} rows checksum {:?})", if a == b { "0" } else { "SOME" }, a.0, a.1, b.0, b.1);
}
