//! The keys changed since the walk verified them, compared again: read from the change log by sequence, each
//! batch compared row by row on both tables under a short lock (or, at the cut-over, under the guard that already
//! stops writers), a key that differs copied again and compared again. Whatever a trigger missed — a statement
//! that failed half-way, a shadow write refused — is found here, since the log keeps the key of every change
//! the source kept.

use mysql::Conn;

use crate::error::refused;
use crate::sql::{qualified, quote_ident, Queryable};

use super::rows::{self, Key};
use super::walk::{describe, Walker};
use crate::procedures::convert::copy::shadow_name;
use crate::procedures::convert::keys::read_list;

/// Sequence numbers read from the log at once, and keys compared in one statement.
const SEQ_WINDOW: u64 = 20_000;
const KEY_BATCH: usize = 500;

/// What a catch-up compared.
#[derive(Debug, Default, Clone, serde::Serialize)]
pub struct Compared {
    /// Distinct keys compared (a key changed in two windows counts twice).
    pub keys: u64,
    /// Keys whose shadow row differed and was copied again.
    pub differed: u64,
    /// The first few of them, for the record.
    pub examples: Vec<String>,
    /// Batches that waited for their lock more than once.
    pub lock_attempts: u32,
}

/// Compare the keys logged with a sequence in `(from, to]`. `locked`: each batch under `LOCK TABLES source READ,
/// shadow WRITE`; otherwise the caller holds the guard.
pub fn compare(
    conn: &mut Conn,
    w: &mut Walker,
    from: u64,
    to: u64,
    locked: bool,
    abort: &dyn Fn() -> bool,
) -> anyhow::Result<Compared> {
    let mut out = Compared::default();
    let info = w.info;
    let tag = w.tag.clone();
    let log = qualified(&info.schema, &super::capture::log_name(&info.name));
    let seq = quote_ident(&super::capture::seq_column(info));
    let mut a = from;
    while a < to {
        let b = (a + SEQ_WINDOW).min(to);
        let keys: Vec<Key> = conn
            .exec::<mysql::Row, _, _>(
                format!(
                    "SELECT {tag} DISTINCT {} FROM {log} WHERE {seq} > ? AND {seq} <= ?",
                    read_list(&w.key)
                ),
                (a, b),
            )?
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        for batch in keys.chunks(KEY_BATCH) {
            if locked {
                let lock = format!(
                    "LOCK {tag} TABLES {} READ, {} WRITE",
                    info.qualified(),
                    qualified(&info.schema, &shadow_name(&info.name))
                );
                let before = w.lock_attempts;
                rows::with_bounded_lock(
                    conn,
                    &tag,
                    w.bound,
                    &lock,
                    &format!("lock {} to compare changed keys", info.display()),
                    abort,
                    &mut w.lock_attempts,
                )?;
                out.lock_attempts += w.lock_attempts - before - 1;
            }
            let r = compare_batch(conn, w, batch, &mut out);
            if locked {
                let _ = conn.query_drop("UNLOCK TABLES");
            }
            r?;
        }
        a = b;
    }
    Ok(out)
}

/// Compare one batch of keys; copy the differing ones again and compare those again.
fn compare_batch(
    conn: &mut Conn,
    w: &Walker,
    batch: &[Key],
    out: &mut Compared,
) -> anyhow::Result<()> {
    let info = w.info;
    let shadow_t = shadow_name(&info.name);
    out.keys += batch.len() as u64;
    let diff = rows::differing(conn, &w.tag, info, &shadow_t, &w.key, batch)?;
    if diff.is_empty() {
        return Ok(());
    }
    out.differed += diff.len() as u64;
    for k in diff.iter().take(5usize.saturating_sub(out.examples.len())) {
        out.examples.push(describe(Some(k)));
    }
    let (pred, params) = rows::key_set(&w.key, &diff);
    rows::recopy(conn, &w.tag, info, &shadow_t, &pred, params)?;
    let still = rows::differing(conn, &w.tag, info, &shadow_t, &w.key, &diff)?;
    if let Some(k) = still.first() {
        return Err(refused(format!(
            "the row of {} with key {} differs from the source even after it was copied again: nothing was swapped and the source is untouched; check what writes innops's copy {}.{shadow_t} besides its triggers",
            info.display(),
            describe(Some(k)),
            info.schema
        )));
    }
    Ok(())
}
