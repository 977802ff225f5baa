//! The online copy: the source walked in primary-key chunks while the triggers keep the shadow up to date. Each
//! chunk is copied and verified under one short lock (`FLUSH TABLES source WITH READ LOCK` on a session of its
//! own: writers wait for that chunk only, readers go on, innops's sessions write the shadow): the chunk's upper
//! key is read, its rows go in with `INSERT IGNORE` (a row a trigger already wrote is newer than nothing and
//! equal to the source), and the chunk's row hash is compared on both tables. A chunk that differs is copied again and compared again, a bounded number of times.
//! Where the walk got to is written to the run directory after every chunk, signed like the plan, so a resumed run
//! goes on from there and from nowhere else.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use mysql::{Conn, Value};
use serde::{Deserialize, Serialize};

use crate::error::{refused, Failure};
use crate::plan::guard::LoadDecision;
use crate::plan::Ctx;
use crate::procedures::convert::copy::{self, column_list, shadow_name, ChunkSettings};
use crate::procedures::convert::keys::{key_columns, next_chunk, read_list, KeyColumn};
use crate::procedures::convert::schema::TableInfo;
use crate::progress::Progress;
use crate::sql::{qualified, quote_ident, Queryable};

use super::rows::{self, Key, LockBound};

/// A key value as the run directory keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", content = "v", rename_all = "snake_case")]
enum Stored {
    Null,
    Hex(String),
    Int(i64),
    Uint(u64),
    Float(u32),
    Double(u64),
    Date(u16, u8, u8, u8, u8, u8, u32),
    Time(bool, u32, u8, u8, u8, u32),
}

fn store(v: &Value) -> Stored {
    match v {
        Value::NULL => Stored::Null,
        Value::Bytes(b) => Stored::Hex(b.iter().map(|x| format!("{x:02x}")).collect()),
        Value::Int(i) => Stored::Int(*i),
        Value::UInt(u) => Stored::Uint(*u),
        Value::Float(f) => Stored::Float(f.to_bits()),
        Value::Double(d) => Stored::Double(d.to_bits()),
        Value::Date(y, m, d, h, i, s, u) => Stored::Date(*y, *m, *d, *h, *i, *s, *u),
        Value::Time(n, d, h, i, s, u) => Stored::Time(*n, *d, *h, *i, *s, *u),
    }
}

fn load(s: &Stored) -> anyhow::Result<Value> {
    Ok(match s {
        Stored::Null => Value::NULL,
        Stored::Hex(h) => Value::Bytes(
            (0..h.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(h.get(i..i + 2).unwrap_or("zz"), 16))
                .collect::<Result<Vec<u8>, _>>()
                .map_err(|_| anyhow::anyhow!("the walk's stored key holds bad hex {h:?}"))?,
        ),
        Stored::Int(i) => Value::Int(*i),
        Stored::Uint(u) => Value::UInt(*u),
        Stored::Float(f) => Value::Float(f32::from_bits(*f)),
        Stored::Double(d) => Value::Double(f64::from_bits(*d)),
        Stored::Date(y, m, d, h, i, s, u) => Value::Date(*y, *m, *d, *h, *i, *s, *u),
        Stored::Time(n, d, h, i, s, u) => Value::Time(*n, *d, *h, *i, *s, *u),
    })
}

/// Where the walk is, kept in the run directory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Position {
    /// The change log's highest sequence when this walk began: every change after it is compared again before
    /// the swap (a chunk verified earlier may have changed since).
    pub since_seq: u64,
    /// The last key of the last chunk verified; none before the first.
    last: Option<Vec<Stored>>,
    pub chunks: u64,
    pub rows: u64,
    pub recopied_chunks: u64,
    pub done: bool,
    /// The change log's sequence up to which the changed keys were compared again after the walk.
    #[serde(default)]
    pub compared_to: u64,
}

impl Position {
    /// The chunk `done` verified by round `r`: the walk goes on after it.
    fn verified(&mut self, done: &Pending, r: &Round) {
        self.chunks += 1;
        self.rows += r.compared_rows;
        self.recopied_chunks += u64::from(r.recopied > 0);
        self.done = done.hi.is_none();
        self.last = done.hi.as_ref().map(|k| k.iter().map(store).collect());
    }
}

pub fn position_file(ctx: &Ctx, info: &TableInfo) -> Option<PathBuf> {
    ctx.run_dir.as_ref().map(|d| {
        d.join(format!(
            "online-walk-{}.json",
            crate::plan::tag_safe(&info.display())
        ))
    })
}

/// The position file's content: the position and its signature, made with the key innops signs plans with and
/// bound to the table, so a resume never trusts a position it did not write (an edited `last` key would skip
/// chunks that were never copied).
#[derive(Serialize, Deserialize)]
struct Signed {
    position: Position,
    signature: String,
}

fn signed_bytes(info: &TableInfo, p: &Position) -> anyhow::Result<Vec<u8>> {
    let mut b = format!("online-walk {}\n", info.display()).into_bytes();
    b.extend(serde_json::to_vec(p)?);
    Ok(b)
}

/// The walk's position as this run recorded it; none when it recorded none. A file innops cannot prove it wrote
/// itself for this table is refused.
pub fn read_position(ctx: &Ctx, info: &TableInfo) -> anyhow::Result<Option<Position>> {
    let Some(f) = position_file(ctx, info) else {
        return Ok(None);
    };
    let Ok(bytes) = std::fs::read(&f) else {
        return Ok(None);
    };
    let forged = || {
        crate::error::refused(format!(
            "{} was not written by innops for {} as this user (its signature does not match): innops does not trust an edited walk position, which could skip rows, so convert again with --restart",
            f.display(),
            info.display()
        ))
    };
    let s: Signed = serde_json::from_slice(&bytes).map_err(|_| forged())?;
    if !crate::plan::journal::signed_by_us(&signed_bytes(info, &s.position)?, &s.signature)? {
        return Err(forged());
    }
    Ok(Some(s.position))
}

pub fn write_position(ctx: &Ctx, info: &TableInfo, p: &Position) -> anyhow::Result<()> {
    if let Some(f) = position_file(ctx, info) {
        let signature = crate::plan::journal::sign(&signed_bytes(info, p)?)?;
        crate::files::write_json_atomic(
            &f,
            &Signed {
                position: p.clone(),
                signature,
            },
        )?;
    }
    Ok(())
}

/// The change log's highest sequence now (0 when empty).
pub fn log_max(conn: &mut Conn, tag: &str, info: &TableInfo) -> anyhow::Result<u64> {
    let n: Option<Option<u64>> = conn.query_first(format!(
        "SELECT {tag} MAX({}) FROM {}",
        quote_ident(&super::capture::seq_column(info)),
        qualified(&info.schema, &super::capture::log_name(&info.name))
    ))?;
    Ok(n.flatten().unwrap_or(0))
}

/// How many times a chunk that differs is copied again before the run gives up on it.
pub const RECOPIES: u32 = 3;

/// A chunk copied and not yet compared: the range after `lo` up to `hi` (none: to the end of the table).
#[derive(Clone)]
struct Pending {
    lo: Option<Key>,
    hi: Option<Key>,
}

/// What one locked round did: the chunk it copied, and the earlier chunk it compared.
struct Round {
    copied: Option<Pending>,
    compared_rows: u64,
    recopied: u32,
}

/// The session of the walk: the key, the lock bound, and its four sessions — the guard, the copy, and one
/// reader of each table for the comparison.
pub struct Walker<'a> {
    pub info: &'a TableInfo,
    pub tag: String,
    pub key: Vec<KeyColumn>,
    pub bound: LockBound,
    pub lock_attempts: u32,
}

/// The walk's sessions.
struct Sessions {
    guard: Conn,
    copy: Conn,
    source: Conn,
    shadow: Conn,
}

impl Sessions {
    /// The guard's session, and three more in the copy's settings (`copy`, already open, among them). Their
    /// statements stop at `ceiling` (MariaDB's `max_statement_time`; where the server has none, no ceiling): a
    /// round that would hold writers longer is cut short and tried again with a smaller chunk.
    fn open(ctx: &Ctx, copy: Conn, tag: &str, ceiling: Duration) -> anyhow::Result<Sessions> {
        let mut s = Sessions {
            guard: ctx.target.connect()?,
            copy,
            source: ctx.target.connect()?,
            shadow: ctx.target.connect()?,
        };
        for c in [&mut s.copy, &mut s.source, &mut s.shadow] {
            c.query_drop(format!(
                "SET {tag} SESSION sql_mode = {}, time_zone = '+00:00'",
                copy::VERBATIM_SQL_MODE
            ))?;
            let _ = c.query_drop(format!(
                "SET {tag} SESSION max_statement_time = {:.3}",
                ceiling.as_secs_f64()
            ));
        }
        Ok(s)
    }
}

impl<'a> Walker<'a> {
    pub fn new(
        info: &'a TableInfo,
        tag: &str,
        key: Vec<KeyColumn>,
        bound: LockBound,
    ) -> Walker<'a> {
        Walker {
            info,
            tag: tag.to_string(),
            key,
            bound,
            lock_attempts: 0,
        }
    }

    /// One locked round: under the guard (`FLUSH TABLES t WITH READ LOCK`: no write reaches the source, reads
    /// go on, and innops's sessions may write its copy), the chunk after `lo` (at most `n` rows) is copied while
    /// the chunk copied in the round before (`prev`) is compared on both tables at once. Writes between the two
    /// rounds reach both tables through the triggers, so the earlier chunk is compared as both are now; a trigger
    /// write that failed in between shows as a difference (and is copied again), as it should.
    fn round(
        &mut self,
        s: &mut Sessions,
        lo: Option<&Key>,
        n: Option<u64>,
        prev: Option<&Pending>,
        abort: &dyn Fn() -> bool,
    ) -> anyhow::Result<Round> {
        let (info, tag) = (self.info, self.tag.clone());
        let guard = format!("FLUSH {tag} TABLES {} WITH READ LOCK", info.qualified());
        rows::with_bounded_lock(
            &mut s.guard,
            &tag,
            self.bound,
            &guard,
            &format!("block writes to {} for a chunk", info.display()),
            abort,
            &mut self.lock_attempts,
        )?;
        let r = self.round_locked(s, lo, n, prev);
        let _ = s.guard.query_drop("UNLOCK TABLES");
        r
    }

    fn round_locked(
        &self,
        s: &mut Sessions,
        lo: Option<&Key>,
        n: Option<u64>,
        prev: Option<&Pending>,
    ) -> anyhow::Result<Round> {
        let (info, tag) = (self.info, self.tag.as_str());
        let shadow_t = shadow_name(&info.name);
        let compare = match prev {
            Some(p) => Some(rows::range(&self.key, p.lo.as_ref(), p.hi.as_ref())?),
            None => None,
        };
        let Sessions {
            copy,
            source,
            shadow,
            ..
        } = s;
        let (copied, sums) = std::thread::scope(|sc| {
            let sums = compare.clone().map(|(pred, params)| {
                let p2 = params.clone();
                let pred2 = pred.clone();
                let a =
                    sc.spawn(move || rows::range_sum(source, tag, info, &info.name, &pred, params));
                let b = sc.spawn(move || rows::range_sum(shadow, tag, info, &shadow_t, &pred2, p2));
                (a, b)
            });
            let copied = if crate::testhooks::slow_round() {
                // Read, not dropped: dropping a result set discards an error that arrives after its header.
                copy.query::<Option<u64>, _>(format!(
                    "SELECT {tag} SUM(seq % 7) FROM mysql.seq_1_to_10000000000"
                ))
                .map_err(anyhow::Error::from)
                .map(|_| None)
            } else {
                match n {
                    Some(n) => self.copy_chunk(copy, lo, n).map(Some),
                    None => Ok(None),
                }
            };
            let sums = sums.map(|(a, b)| -> anyhow::Result<_> {
                let a = a
                    .join()
                    .map_err(|_| anyhow::anyhow!("a comparison thread panicked"))??;
                let b = b
                    .join()
                    .map_err(|_| anyhow::anyhow!("a comparison thread panicked"))??;
                Ok((a, b))
            });
            (copied, sums)
        });
        let copied = copied?;
        let (mut compared_rows, mut recopied) = (0, 0);
        if let (Some((pred, params)), Some(sums), Some(p)) = (compare, sums, prev) {
            let (a, mut b) = sums?;
            // A chunk that differs is copied again and compared again, under this same guard.
            while a != b {
                if recopied >= RECOPIES {
                    return Err(refused(format!(
                        "the chunk of {} after key {} up to {} still differs from the source after {RECOPIES} copies ({} rows against {}): nothing was swapped and the source is untouched; check what writes innops's copy {}.{} besides its triggers",
                        info.display(), describe(p.lo.as_ref()), describe(p.hi.as_ref()), b.rows, a.rows, info.schema, shadow_name(&info.name)
                    )));
                }
                rows::recopy(
                    &mut s.copy,
                    tag,
                    info,
                    &shadow_name(&info.name),
                    &pred,
                    params.clone(),
                )?;
                recopied += 1;
                b = rows::range_sum(
                    &mut s.shadow,
                    tag,
                    info,
                    &shadow_name(&info.name),
                    &pred,
                    params.clone(),
                )?;
            }
            compared_rows = a.rows;
        }
        Ok(Round {
            copied,
            compared_rows,
            recopied,
        })
    }

    /// Copy the chunk after `lo`: its upper key is read first, then its rows go in with `INSERT IGNORE`.
    fn copy_chunk(&self, conn: &mut Conn, lo: Option<&Key>, n: u64) -> anyhow::Result<Pending> {
        let (info, tag) = (self.info, self.tag.as_str());
        let pk_order = crate::procedures::convert::keys::ident_list(&info.pk_columns());
        let (after, params) = rows::range(&self.key, lo, None)?;
        let hi: Option<Key> = conn
            .exec_first::<mysql::Row, _, _>(
                format!(
                    "SELECT {tag} {} FROM {} FORCE INDEX (PRIMARY) WHERE {after} ORDER BY {pk_order} LIMIT 1 OFFSET {}",
                    read_list(&self.key),
                    info.qualified(),
                    n.saturating_sub(1)
                ),
                params.clone(),
            )?
            .map(|r| r.unwrap());
        let cols = column_list(info);
        conn.exec_drop(
            format!(
                "INSERT {tag} IGNORE INTO {} ({cols}) SELECT {cols} FROM {} FORCE INDEX (PRIMARY) WHERE {after} ORDER BY {pk_order} LIMIT {n}",
                qualified(&info.schema, &shadow_name(&info.name)),
                info.qualified()
            ),
            params,
        )?;
        Ok(Pending {
            lo: lo.cloned(),
            hi,
        })
    }
}

/// Whether a round was cut short by its statements' ceiling (ER_STATEMENT_TIMEOUT): nothing of it counts, an
/// interrupted INSERT is undone, and the round is tried again with a smaller chunk.
fn cut_short(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        matches!(c.downcast_ref::<mysql::Error>(), Some(mysql::Error::MySqlError(m)) if m.code == 1969)
    })
}

/// The ceiling of a round's statements: 1.6 times the chunk's target time (at least 50 ms).
pub fn round_ceiling(target: Duration) -> Duration {
    target.mul_f64(1.6).max(Duration::from_millis(50))
}

/// Rounds cut short in a row, each with half the chunk before, after which the walk is refused.
const CUT_SHORT_IN_A_ROW: u32 = 8;

/// The rounds cut short: in all, and in a row since the last that finished.
#[derive(Default)]
struct Cuts {
    total: u64,
    in_a_row: u32,
}

impl Cuts {
    /// Count a round of `n` rows cut short; refused after [`CUT_SHORT_IN_A_ROW`] in a row.
    fn one_more(
        &mut self,
        info: &TableInfo,
        n: u64,
        ceiling: Duration,
        target: Duration,
    ) -> anyhow::Result<()> {
        self.total += 1;
        self.in_a_row += 1;
        if self.in_a_row >= CUT_SHORT_IN_A_ROW {
            return Err(refused(format!(
                "{CUT_SHORT_IN_A_ROW} rounds of the copy of {} in a row took longer than {:.2} s under their lock, the last with {n} rows: the server is too busy or too slow for chunks of --chunk-time {} ms; convert again when it is quieter, or with a larger --chunk-time",
                info.display(), ceiling.as_secs_f64(), target.as_millis()
            )));
        }
        Ok(())
    }
}

/// A key for a sentence.
pub fn describe(k: Option<&Key>) -> String {
    match k {
        None => "(the end)".into(),
        Some(k) => format!(
            "({})",
            k.iter()
                .map(|v| match v {
                    Value::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
                    other => other.as_sql(true),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Whether the walk goes on now: a pause for load or lag waits 500 ms (said every 10 s, bounded as every copy's
/// pause is) and says no; a stop is refused.
fn go_on(
    decision: LoadDecision,
    pause: &mut copy::Pause,
    bar: &mut Progress,
    pos: &Position,
) -> anyhow::Result<bool> {
    match decision {
        LoadDecision::Go => {
            pause.reset();
            Ok(true)
        }
        LoadDecision::Pause(why) => {
            bar.suspend(|| pause.wait(&why))?;
            Ok(false)
        }
        LoadDecision::Abort(why) => {
            Err(refused(format!(
                "{why}: the online copy stopped after {} rows copied and verified; convert again when the load is down",
                pos.rows
            )))
        }
    }
}

/// Walk the source from where the run got to (the beginning, the first time), copying and verifying each chunk
/// under its own short lock, paused by the load and replica guards. The step's recorded result.
pub fn walk(
    ctx: &mut Ctx,
    info: &TableInfo,
    settings: &ChunkSettings,
    bound: LockBound,
) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    let run = ctx
        .run_dir
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    // Its session settings come with the walk's other sessions (Sessions::open).
    let mut conn = ctx.target.connect()?;
    let mut status = ctx.target.connect()?;
    let key = key_columns(&mut conn, &tag, info)?;
    let mut pos = match read_position(ctx, info)? {
        Some(p) => p,
        None => Position {
            since_seq: log_max(&mut conn, &tag, info)?,
            ..Position::default()
        },
    };
    let resumed_at = pos.rows;
    let mut last: Option<Key> = pos
        .last
        .as_ref()
        .map(|l| l.iter().map(load).collect::<anyhow::Result<_>>())
        .transpose()?;
    write_position(ctx, info, &pos)?;
    let mut walker = Walker::new(info, &tag, key, bound);
    let ceiling = round_ceiling(settings.target_chunk);
    let mut s = Sessions::open(ctx, conn, &tag, ceiling)?;
    let mut cuts = Cuts::default();
    let fixed = crate::testhooks::chunk_rows();
    let mut n = fixed.unwrap_or(1000);
    let mut bar = Progress::new(
        &format!("copy {} online", info.display()),
        info.rows_estimate.max(1),
    );
    bar.resume_at(pos.rows);
    let (t0, mut paused, mut longest_lock) = (Instant::now(), 0.0f64, Duration::ZERO);
    let mut replicas = copy::replica_sessions(&mut s.copy, &tag, settings)?;
    // The chunk copied in the round before, compared in the next round; the walk ends once the last is compared.
    let mut pending: Option<Pending> = None;
    let mut pause = copy::Pause::new();
    let mut copying = true;
    while copying || pending.is_some() {
        if ctx.aborted() {
            bar.finish();
            return Err(Failure::Interrupted(format!(
                "interrupted after copying and verifying {} rows of {}: the triggers keep its copy up to date; continue with `innops resume {run}`",
                pos.rows, info.display()
            )).into());
        }
        let decision =
            copy::next_decision(&mut status, settings, ctx.own_sessions, &mut replicas)?.0;
        if !go_on(decision, &mut pause, &mut bar, &pos)? {
            paused += 0.5;
            continue;
        }
        let started = Instant::now();
        let flag = ctx.abort;
        let abort = move || flag.load(std::sync::atomic::Ordering::SeqCst);
        // Each round blocks writes for its length: the report counts them with the cut-over's.
        ctx.writes_blocked(&info.display());
        let r = walker.round(
            &mut s,
            last.as_ref(),
            copying.then_some(n),
            pending.as_ref(),
            &abort,
        );
        ctx.writes_released(&info.display());
        let r = match r {
            Err(e) if cut_short(&e) => {
                // Writers waited for the ceiling at most; the same chunk again, halved.
                longest_lock = longest_lock.max(started.elapsed());
                cuts.one_more(info, n, ceiling, settings.target_chunk)?;
                n = (n / 2).max(1);
                continue;
            }
            other => other?,
        };
        cuts.in_a_row = 0;
        longest_lock = longest_lock.max(started.elapsed());
        if let Some(done) = pending.take() {
            // The earlier chunk is verified: the walk goes on after it from now on, even after a crash.
            pos.verified(&done, &r);
            write_position(ctx, info, &pos)?;
            bar.set(pos.rows);
            crate::testhooks::after_chunk(pos.chunks);
            if pos.chunks == 1 {
                crate::testhooks::hold("online-chunk");
            }
        }
        if let Some(c) = r.copied {
            copying = c.hi.is_some();
            last = c.hi.clone();
            pending = Some(c);
        }
        n = fixed.unwrap_or_else(|| next_chunk(n, started.elapsed(), settings.target_chunk));
    }
    bar.finish();
    Ok(serde_json::json!({
        "path": "online",
        "rows_copied_and_verified": pos.rows - resumed_at,
        "rows_before_resume": resumed_at,
        "chunks": pos.chunks,
        "chunks_copied_again": pos.recopied_chunks,
        "changes_compared_again_from_seq": pos.since_seq,
        "longest_chunk_lock_s": longest_lock.as_secs_f64(),
        "round_ceiling_s": ceiling.as_secs_f64(),
        "rounds_cut_short": cuts.total,
        "lock_attempts": walker.lock_attempts,
        "paused_seconds": paused,
        "seconds": t0.elapsed().as_secs_f64(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_key_reads_back_as_it_was() {
        let k = vec![
            Value::Bytes(b"\x00\xffab".to_vec()),
            Value::Int(-3),
            Value::UInt(u64::MAX),
            Value::Double(0.1),
            Value::Float(1.5),
            Value::Date(2026, 12, 3, 1, 2, 3, 4),
            Value::Time(true, 1, 2, 3, 4, 5),
            Value::NULL,
        ];
        let stored: Vec<Stored> = k.iter().map(store).collect();
        let json = serde_json::to_string(&stored).unwrap();
        let back: Vec<Stored> = serde_json::from_str(&json).unwrap();
        let values: Vec<Value> = back.iter().map(|s| load(s).unwrap()).collect();
        assert_eq!(values, k);
        assert!(load(&Stored::Hex("zz".into())).is_err());
    }
}
