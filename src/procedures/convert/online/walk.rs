//! The online copy: the source walked in primary-key chunks while the triggers keep the shadow up to date. Each
//! chunk is copied and verified under one short lock (`LOCK TABLES source READ, shadow WRITE`: writers wait
//! for that chunk only, readers go on): the chunk's upper key is read, its rows go in with `INSERT IGNORE`
//! (a row a trigger already wrote is newer than nothing and equal to the source), and the chunk's row hash is
//! compared on both tables. A chunk that differs is copied again and compared again, a bounded number of times.
//! Where the walk got to is written to the run directory after every chunk, so a resumed run goes on from there.

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

pub fn position_file(ctx: &Ctx, info: &TableInfo) -> Option<PathBuf> {
    ctx.run_dir.as_ref().map(|d| {
        d.join(format!(
            "online-walk-{}.json",
            crate::plan::tag_safe(&info.display())
        ))
    })
}

pub fn read_position(ctx: &Ctx, info: &TableInfo) -> Option<Position> {
    let f = position_file(ctx, info)?;
    serde_json::from_slice(&std::fs::read(f).ok()?).ok()
}

pub fn write_position(ctx: &Ctx, info: &TableInfo, p: &Position) -> anyhow::Result<()> {
    if let Some(f) = position_file(ctx, info) {
        crate::files::write_json_atomic(&f, p)?;
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

/// What one chunk did.
struct Chunk {
    /// Its last key; none for the last chunk (it ran to the end of the table).
    hi: Option<Key>,
    rows: u64,
    recopied: u32,
}

/// The session of the walk: the statements' session settings, the key, and the lock bound.
pub struct Walker<'a> {
    pub info: &'a TableInfo,
    pub tag: String,
    pub key: Vec<KeyColumn>,
    pub bound: LockBound,
    pub lock_attempts: u32,
}

impl Walker<'_> {
    /// Copy and verify the chunk after `lo` (at most `n` rows) under one short lock.
    fn chunk(
        &mut self,
        conn: &mut Conn,
        lo: Option<&Key>,
        n: u64,
        abort: &dyn Fn() -> bool,
    ) -> anyhow::Result<Chunk> {
        let (info, tag) = (self.info, self.tag.clone());
        let shadow_t = shadow_name(&info.name);
        let lock = format!(
            "LOCK {tag} TABLES {} READ, {} WRITE",
            info.qualified(),
            qualified(&info.schema, &shadow_t)
        );
        rows::with_bounded_lock(
            conn,
            &tag,
            self.bound,
            &lock,
            &format!("lock a chunk of {}", info.display()),
            abort,
            &mut self.lock_attempts,
        )?;
        let r = self.chunk_locked(conn, lo, n);
        let _ = conn.query_drop("UNLOCK TABLES");
        r
    }

    fn chunk_locked(&mut self, conn: &mut Conn, lo: Option<&Key>, n: u64) -> anyhow::Result<Chunk> {
        let (info, tag) = (self.info, self.tag.as_str());
        let shadow_t = shadow_name(&info.name);
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
                qualified(&info.schema, &shadow_t),
                info.qualified()
            ),
            params,
        )?;
        let (pred, params) = rows::range(&self.key, lo, hi.as_ref())?;
        let mut recopied = 0;
        loop {
            let a = rows::range_sum(conn, tag, info, &info.name, &pred, params.clone())?;
            let b = rows::range_sum(conn, tag, info, &shadow_t, &pred, params.clone())?;
            if a == b {
                return Ok(Chunk {
                    hi,
                    rows: a.rows,
                    recopied,
                });
            }
            if recopied >= RECOPIES {
                return Err(refused(format!(
                    "the chunk of {} after key {} up to {} still differs from the source after {RECOPIES} copies ({} rows against {}): nothing was swapped and the source is untouched; check what writes innops's copy {}.{shadow_t} besides its triggers",
                    info.display(),
                    describe(lo),
                    describe(hi.as_ref()),
                    b.rows,
                    a.rows,
                    info.schema
                )));
            }
            rows::recopy(conn, tag, info, &shadow_t, &pred, params.clone())?;
            recopied += 1;
        }
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
    let mut conn = ctx.target.connect()?;
    conn.query_drop(format!(
        "SET {tag} SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION', time_zone = '+00:00'"
    ))?;
    let mut status = ctx.target.connect()?;
    let key = key_columns(&mut conn, &tag, info)?;
    let mut pos = match read_position(ctx, info) {
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
    let mut walker = Walker {
        info,
        tag: tag.clone(),
        key,
        bound,
        lock_attempts: 0,
    };
    let fixed = crate::testhooks::chunk_rows();
    let mut n = fixed.unwrap_or(1000);
    let mut bar = Progress::new(
        &format!("copy {} online", info.display()),
        info.rows_estimate.max(1),
    );
    bar.set(pos.rows);
    let (t0, mut paused, mut longest_lock) = (Instant::now(), 0.0f64, Duration::ZERO);
    let mut replicas = copy::replica_sessions(&mut conn, &tag, settings)?;
    while !pos.done {
        if ctx.aborted() {
            bar.finish();
            return Err(Failure::Interrupted(format!(
                "interrupted after copying and verifying {} rows of {}: the triggers keep its copy up to date; continue with `innops resume {run}`",
                pos.rows,
                info.display()
            ))
            .into());
        }
        match copy::next_decision(&mut status, settings, ctx.own_sessions, &mut replicas)?.0 {
            LoadDecision::Go => {}
            LoadDecision::Pause(why) => {
                bar.suspend(|| eprintln!("innops: paused: {why}"));
                std::thread::sleep(Duration::from_millis(500));
                paused += 0.5;
                continue;
            }
            LoadDecision::Abort(why) => {
                bar.finish();
                return Err(refused(format!(
                    "{why} ({} rows copied and verified so far; the triggers keep them up to date: `innops resume {run}` continues)",
                    pos.rows
                )));
            }
        }
        let started = Instant::now();
        let flag = ctx.abort;
        let abort = move || flag.load(std::sync::atomic::Ordering::SeqCst);
        let c = walker.chunk(&mut conn, last.as_ref(), n, &abort)?;
        longest_lock = longest_lock.max(started.elapsed());
        pos.chunks += 1;
        pos.rows += c.rows;
        pos.recopied_chunks += u64::from(c.recopied > 0);
        pos.done = c.hi.is_none();
        pos.last = c.hi.as_ref().map(|k| k.iter().map(store).collect());
        last = c.hi;
        write_position(ctx, info, &pos)?;
        bar.set(pos.rows);
        crate::testhooks::after_chunk(pos.chunks);
        if pos.chunks == 1 {
            crate::testhooks::hold("online-chunk");
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
