//! Externally stored columns followed through their BLOB pages (MariaDB's `btr0cur.cc`, `btr_copy_blob_prefix`):
//! a record keeps a 20-byte reference (tablespace, first page, the offset of the BLOB header on it, the length
//! stored outside the record) after its local prefix (COMPACT: the first 768 bytes; DYNAMIC: none). Each page of
//! the chain is an uncompressed `FIL_PAGE_TYPE_BLOB` page whose header, at `FIL_PAGE_DATA`, says how many bytes of
//! the value it holds (`BTR_BLOB_HDR_PART_LEN`) and which page holds the next part (`BTR_BLOB_HDR_NEXT_PAGE_NO`,
//! `FIL_NULL` on the last).
//!
//! Pages are untrusted input: a value is returned only when every page of its chain is in the file, is a BLOB
//! page of this tablespace that says it is that page, carries no encryption key version, passes its checksum,
//! holds a part that fits in it, the chain meets no page twice, and the parts add up to exactly the reference's
//! length. Otherwise the sentence names the page where the proof failed.

use std::collections::HashSet;

use super::page::{be16, be32, NO_PAGE};
use super::space::Space;
use super::value::Extern;

/// `FIL_PAGE_TYPE_BLOB`: an uncompressed page of an externally stored column.
pub const BLOB_PAGE: u16 = 10;
/// `FIL_PAGE_DATA`: where the BLOB header is on every page of a chain (the reference's offset on the first).
pub const BLOB_HEADER: usize = 38;
/// The BLOB header: the part's length, the next page, then the part (`BTR_BLOB_HDR_SIZE` = 8).
pub(crate) const PART_LEN: usize = BLOB_HEADER;
pub(crate) const NEXT: usize = BLOB_HEADER + 4;
pub(crate) const DATA: usize = BLOB_HEADER + 8;
/// `FIL_PAGE_DATA_END`: the trailer no part may run into.
const TRAILER: usize = 8;

/// The pages of one tablespace, by page number: what the parser reads BLOB chains from. `None` when the file
/// has no such page.
pub trait PageReader {
    fn page(&self, n: u32) -> Option<&[u8]>;
}

/// A whole file in memory, pages of `page_size` bytes.
#[derive(Debug, Clone, Copy)]
pub struct InMemory<'a> {
    pub data: &'a [u8],
    pub page_size: usize,
}

impl PageReader for InMemory<'_> {
    fn page(&self, n: u32) -> Option<&[u8]> {
        let start = (n as usize).checked_mul(self.page_size)?;
        self.data.get(start..start.checked_add(self.page_size)?)
    }
}

/// The bytes stored outside the record for reference `e` (without the record's own prefix), or the sentence
/// saying where the chain fails to prove them.
pub fn follow(space: &Space, pages: &dyn PageReader, e: &Extern) -> Result<Vec<u8>, String> {
    if e.offset as usize != BLOB_HEADER {
        return Err(format!(
            "its reference puts the BLOB header at byte {} of page {}, not where an uncompressed BLOB page has it",
            e.offset, e.page
        ));
    }
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut at = e.page;
    loop {
        if !seen.insert(at) {
            return Err(format!("page {at} comes twice in the chain"));
        }
        let p = pages
            .page(at)
            .ok_or_else(|| format!("page {at} is outside the file"))?;
        let part = blob_part(space, e.space, at, p)?;
        if out.len() as u64 + part.len() as u64 > e.len {
            return Err(format!(
                "page {at} brings the chain to {} bytes, the reference says {}",
                out.len() + part.len(),
                e.len
            ));
        }
        out.extend_from_slice(part);
        at = be32(p, NEXT);
        if at == NO_PAGE {
            break;
        }
    }
    if out.len() as u64 != e.len {
        return Err(format!(
            "the chain ends with {} bytes, the reference says {}",
            out.len(),
            e.len
        ));
    }
    Ok(out)
}

/// The part of the value page `n` holds, once the page proves itself a good BLOB page of the chain.
fn blob_part<'p>(space: &Space, space_id: u32, n: u32, p: &'p [u8]) -> Result<&'p [u8], String> {
    if p.len() != space.page_size || p.len() < DATA + TRAILER {
        return Err(format!("page {n} has {} bytes", p.len()));
    }
    let ty = be16(p, 24);
    if ty != BLOB_PAGE {
        return Err(format!("page {n} is not a BLOB page (page type {ty})"));
    }
    if be32(p, 4) != n || be32(p, 34) != space_id {
        return Err(format!(
            "page {n} says it is page {} of tablespace {}",
            be32(p, 4),
            be32(p, 34)
        ));
    }
    if space.key_version(p) != 0 {
        return Err(format!("page {n} is encrypted"));
    }
    if !space.checksum_ok(p) {
        return Err(format!("page {n} fails its {} checksum", space.format()));
    }
    let len = be32(p, PART_LEN) as usize;
    let end = DATA
        .checked_add(len)
        .filter(|&end| end <= p.len() - TRAILER);
    match end {
        Some(end) if len > 0 => Ok(&p[DATA..end]),
        _ => Err(format!(
            "page {n} says it holds {len} bytes, which cannot be"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pages::page::{crc32c, PAGE};

    const FCRC32: Space = Space {
        id: 5,
        flags: 0x15,
        full_crc32: true,
        page_size: PAGE,
        page_compressed: false,
        zip_size: None,
        crypt: None,
    };

    /// A file whose pages 3.. hold `value` in a BLOB chain of parts of `part` bytes, in page order.
    fn file(value: &[u8], part: usize) -> (Vec<u8>, Extern) {
        let chunks: Vec<&[u8]> = value.chunks(part).collect();
        let mut data = vec![0u8; PAGE * (3 + chunks.len())];
        for (i, c) in chunks.iter().enumerate() {
            let n = 3 + i as u32;
            let p = &mut data[n as usize * PAGE..(n as usize + 1) * PAGE];
            p[4..8].copy_from_slice(&n.to_be_bytes());
            p[24..26].copy_from_slice(&BLOB_PAGE.to_be_bytes());
            p[34..38].copy_from_slice(&5u32.to_be_bytes());
            p[PART_LEN..PART_LEN + 4].copy_from_slice(&(c.len() as u32).to_be_bytes());
            let next = if i + 1 == chunks.len() {
                NO_PAGE
            } else {
                n + 1
            };
            p[NEXT..NEXT + 4].copy_from_slice(&next.to_be_bytes());
            p[DATA..DATA + c.len()].copy_from_slice(c);
            seal(p);
        }
        let e = Extern {
            prefix: Vec::new(),
            space: 5,
            page: 3,
            offset: BLOB_HEADER as u32,
            len: value.len() as u64,
        };
        (data, e)
    }

    fn seal(p: &mut [u8]) {
        let c = crc32c(&p[..PAGE - 4]);
        p[PAGE - 4..].copy_from_slice(&c.to_be_bytes());
    }

    fn read(data: &[u8], e: &Extern) -> Result<Vec<u8>, String> {
        let pages = InMemory {
            data,
            page_size: PAGE,
        };
        follow(&FCRC32, &pages, e)
    }

    #[test]
    fn a_whole_chain_gives_the_value_and_every_broken_one_names_its_page() {
        let value: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (data, e) = file(&value, 16_000);
        assert_eq!(read(&data, &e).unwrap(), value);

        let mut short = e.clone();
        short.len -= 1;
        assert!(read(&data, &short).unwrap_err().contains("page 5"));
        let mut long = e.clone();
        long.len += 1;
        assert!(read(&data, &long).unwrap_err().contains("ends with"));

        let mut bad = data.clone();
        bad[4 * PAGE + 3000] ^= 1;
        assert_eq!(
            read(&bad, &e).unwrap_err(),
            "page 4 fails its full_crc32 checksum"
        );

        let mut looped = data.clone();
        let p = &mut looped[4 * PAGE..5 * PAGE];
        p[NEXT..NEXT + 4].copy_from_slice(&3u32.to_be_bytes());
        seal(p);
        assert_eq!(
            read(&looped, &e).unwrap_err(),
            "page 3 comes twice in the chain"
        );

        let mut out = data.clone();
        let p = &mut out[5 * PAGE..6 * PAGE];
        p[NEXT..NEXT + 4].copy_from_slice(&99u32.to_be_bytes());
        seal(p);
        let mut more = e.clone();
        more.len += 10;
        assert_eq!(
            read(&out, &more).unwrap_err(),
            "page 99 is outside the file"
        );

        let mut typed = data.clone();
        typed[3 * PAGE + 25] = 11;
        seal(&mut typed[3 * PAGE..4 * PAGE]);
        assert!(read(&typed, &e).unwrap_err().contains("not a BLOB page"));

        let mut huge = data.clone();
        let p = &mut huge[3 * PAGE..4 * PAGE];
        p[PART_LEN..PART_LEN + 4].copy_from_slice(&20_000u32.to_be_bytes());
        seal(p);
        assert!(read(&huge, &e).unwrap_err().contains("cannot be"));
    }
}
