//! The table file's side of a read: rows become INSERT literals in a reader's buffer, full statements go to one
//! writer thread per file, which hashes what it writes. A unit because it is the hot path of every dump (every
//! row passes through `write_row_parts`) and the only code that touches the file, its row count and its hashes.

use std::io::Write;

use anyhow::Context;

use mysql::{Row, Value};
use sha2::{Digest, Sha256};

use super::literal::{self, Kind};
use super::{xcheck, Reader, Shared};

/// The table file as the reading threads see it: full INSERT statements go to a writer thread (which also
/// hashes the file), the row count and content hash add up here.
pub(super) struct Out {
    pub(super) tx: std::sync::mpsc::SyncSender<Vec<u8>>,
    /// Buffers the writer is done with, emptied, for the readers' next statements (no fresh megabyte to
    /// allocate and fault in per statement).
    pub(super) spare: std::sync::mpsc::Receiver<Vec<u8>>,
    pub(super) rows: u64,
    pub(super) hash: u128,
}

/// A table file's writer: where statements go, where emptied buffers come back, and the thread (the sha256).
type Writer = (
    std::sync::mpsc::SyncSender<Vec<u8>>,
    std::sync::mpsc::Receiver<Vec<u8>>,
    std::thread::JoinHandle<std::io::Result<String>>,
);

/// The writer thread of a table file: writes and hashes what the readers send, and hands the emptied buffers
/// back through `spare`; the file's sha256.
pub(super) fn spawn_writer(f: std::fs::File, header: Vec<u8>) -> Writer {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
    let (back, spare) = std::sync::mpsc::sync_channel::<Vec<u8>>(8);
    let handle = std::thread::spawn(move || {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        let mut sha = Sha256::new();
        sha.update(&header);
        w.write_all(&header)?;
        for mut buf in rx {
            sha.update(&buf);
            w.write_all(&buf)?;
            buf.clear();
            // Full (the readers have enough) or gone: the buffer is simply freed.
            let _ = back.try_send(buf);
        }
        w.flush()?;
        Ok(format!("{:x}", sha.finalize()))
    });
    (tx, spare, handle)
}

/// One row as the dump writes it, `(v1,v2,…)`, appended to `buf`.
pub(crate) fn push_tuple(buf: &mut Vec<u8>, kinds: &[Kind], row: &Row) {
    buf.push(b'(');
    for (i, k) in kinds.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        literal::push(buf, *k, row.as_ref(i).unwrap_or(&Value::NULL));
    }
    buf.push(b')');
}

impl<'s, 'a> Reader<'s, 'a> {
    pub(super) fn write_row(&mut self, row: &Row) -> anyhow::Result<()> {
        let Reader {
            sh,
            kinds,
            buf,
            rows,
            hash,
            ..
        } = self;
        write_row_parts(
            buf,
            rows,
            hash,
            kinds,
            &sh.insert_prefix,
            row,
            &mut Vec::new(),
        );
        self.xbuf.add(&sh.xs, &sh.shape, row);
        if buf.len() >= sh.opts.chunk_bytes {
            flush_parts(sh, buf, rows, hash)?;
        }
        Ok(())
    }

    pub(super) fn flush(&mut self) -> anyhow::Result<()> {
        self.end_crash_doubt();
        if !self.xbuf.is_empty() {
            let mut w = self.sh.written.lock().unwrap();
            xcheck::merge(&self.sh.shape, &mut w, &mut self.xbuf);
        }
        let Reader {
            sh,
            buf,
            rows,
            hash,
            ..
        } = self;
        flush_parts(sh, buf, rows, hash)
    }
}

/// One row appended to the INSERT in `buf`; `spans` gets where each column's literal is in `buf` (for the
/// cross-check, which hashes the same literals).
// Called per row from the scan (another module, maybe another codegen unit): inlined there as before the split.
#[inline]
pub(super) fn write_row_parts(
    buf: &mut Vec<u8>,
    rows: &mut u64,
    hash: &mut u128,
    kinds: &[Kind],
    prefix: &[u8],
    row: &Row,
    spans: &mut Vec<(usize, usize)>,
) {
    if buf.is_empty() {
        buf.extend_from_slice(prefix);
    } else {
        buf.push(b',');
    }
    let start = buf.len();
    spans.clear();
    buf.push(b'(');
    for (i, k) in kinds.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        let at = buf.len();
        literal::push(buf, *k, row.as_ref(i).unwrap_or(&Value::NULL));
        spans.push((at, buf.len()));
    }
    buf.push(b')');
    *hash = hash.wrapping_add(xxhash_rust::xxh3::xxh3_128(&buf[start..]));
    *rows += 1;
}

pub(super) fn flush_parts(
    sh: &Shared,
    buf: &mut Vec<u8>,
    rows: &mut u64,
    hash: &mut u128,
) -> anyhow::Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    buf.extend_from_slice(b";\n");
    let mut out = sh.out.lock().unwrap();
    let next = out
        .spare
        .try_recv()
        .unwrap_or_else(|_| Vec::with_capacity(sh.opts.chunk_bytes + (64 << 10)));
    let full = std::mem::replace(buf, next);
    out.rows += *rows;
    out.hash = out.hash.wrapping_add(*hash);
    let tx = out.tx.clone();
    drop(out);
    // The writer only stops early on a write error, which the caller reports when it joins it.
    tx.send(full)
        .map_err(|_| anyhow::anyhow!("the dump file's writer stopped"))?;
    *rows = 0;
    *hash = 0;
    crate::testhooks::dump_pause();
    Ok(())
}

/// Close a table's file: the writer's end, and the rows, content hash and sha256 of what it wrote.
pub(super) fn finish(
    out: Out,
    writer: std::thread::JoinHandle<std::io::Result<String>>,
    path: &std::path::Path,
) -> anyhow::Result<(u64, String, String)> {
    let (rows, hash) = (out.rows, format!("{:032x}", out.hash));
    drop(out.tx);
    let sha = writer
        .join()
        .map_err(|_| anyhow::anyhow!("the writer thread of {} panicked", path.display()))?
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((rows, hash, sha))
}
