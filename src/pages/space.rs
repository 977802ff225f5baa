//! What page 0 of a file-per-table `.ibd` says about every page of the file (MariaDB's `fsp0types.h`,
//! `fil0fil.h`, `fil0crypt.h`): the tablespace flags (`FSP_SPACE_FLAGS`, in the FSP header) decide the page
//! size, whether pages are page-compressed or ROW_FORMAT=COMPRESSED, and — the part the page parser cannot
//! guess — which of the two page formats the file is in:
//!
//! - `full_crc32` (the flags' marker bit 4; MariaDB 10.5+ creates new files so by default): bytes 0..4 of a
//!   page hold the encryption key version (0: not encrypted), the last 4 bytes the CRC-32C of all the others.
//! - the older format (files created before 10.5, or with `innodb_checksum_algorithm=crc32`/`strict_crc32`,
//!   and MySQL's): bytes 0..4 hold the checksum, repeated in the trailer's first 4 bytes (the `crc32`
//!   algorithm: CRC-32C of bytes 4..26 XOR CRC-32C of bytes 38..size-8), the trailer's last 4 the low half of
//!   the page LSN, and the key version is at bytes 26..30.
//!
//! Encryption is not in the flags: an encrypted tablespace keeps its crypt data on page 0 after the extent
//! descriptors, and each encrypted page carries its key version. Pure: the caller reads page 0.

use super::page::{be16, be32, crc32c};

/// Where the FSP header starts on page 0 (`FSP_HEADER_OFFSET` = `FIL_PAGE_DATA`).
const FSP_HEADER: usize = 38;
/// `FSP_SPACE_FLAGS`, inside the FSP header.
const FSP_FLAGS: usize = FSP_HEADER + 16;
/// The full_crc32 marker (`FSP_FLAGS_FCRC32_MASK_MARKER`).
const FCRC32_MARKER: u32 = 1 << 4;
/// The older format's `PAGE_COMPRESSION` flag (bit 16; bits 10..15 are reserved).
const PAGE_COMPRESSION: u32 = 1 << 16;
/// The flags the older format defines (bits 0..16); any other bit set means the flags are not that format.
const KNOWN_FLAGS: u32 = (1 << 17) - 1;
/// Pages that must pass their checksums in one format, and none in the other, before a damaged page 0's
/// format is taken from them ([`Space::infer`]).
pub const INFER_MIN: usize = 2;
/// `FIL_PAGE_PAGE_COMPRESSED` and `FIL_PAGE_PAGE_COMPRESSED_ENCRYPTED` (the older format's page types; a
/// full_crc32 page-compressed page sets the type's high bit).
const PAGE_COMPRESSED_TYPE: u16 = 34354;
const PAGE_COMPRESSED_ENCRYPTED_TYPE: u16 = 37401;
/// `CRYPT_MAGIC`: the start of the crypt data on page 0.
const CRYPT_MAGIC: [u8; 6] = [b's', 0x0E, 0x0C, b'R', b'E', b't'];

/// The crypt data of an encrypted (or once encrypted) tablespace, from page 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Crypt {
    /// 0: unencrypted, 1: encrypted (`CRYPT_SCHEME_1`).
    pub scheme: u8,
    pub min_key_version: u32,
    pub key_id: u32,
}

/// A tablespace as its page 0 describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Space {
    pub id: u32,
    /// `FSP_SPACE_FLAGS` as stored.
    pub flags: u32,
    pub full_crc32: bool,
    /// The (logical) page size in bytes.
    pub page_size: usize,
    /// PAGE_COMPRESSED=1 (full_crc32: a compression algorithm in bits 5..7; older: bit 16).
    pub page_compressed: bool,
    /// ROW_FORMAT=COMPRESSED's page size (`KEY_BLOCK_SIZE`), when the tablespace has one.
    pub zip_size: Option<usize>,
    pub crypt: Option<Crypt>,
}

/// The flags alone, decoded: `Err` when they are neither format's (the older format's bits 10..15 hold a buggy
/// MariaDB 10.1's page size, or a page size no server writes).
pub fn decode_flags(id: u32, flags: u32) -> Result<Space, String> {
    let size = |ssize: u32| match ssize {
        3..=7 => Ok(512usize << ssize),
        _ => Err(format!(
            "tablespace flags {flags:#x} give page size code {ssize}, which no server writes"
        )),
    };
    if flags & FCRC32_MARKER != 0 {
        if flags >> 8 != 0 {
            return Err(format!(
                "tablespace flags {flags:#x} set bits a full_crc32 tablespace does not have"
            ));
        }
        return Ok(Space {
            id,
            flags,
            full_crc32: true,
            page_size: size(flags & 0xF)?,
            page_compressed: (flags >> 5) & 7 != 0,
            zip_size: None,
            crypt: None,
        });
    }
    if flags & !KNOWN_FLAGS != 0 || (flags >> 10) & 0x3E != 0 {
        return Err(format!(
            "tablespace flags {flags:#x} set bits that MySQL 5.7/8.0 (shared, temporary, encrypted, SDI) or MariaDB 10.1.0–10.1.20 use, which are not read yet"
        ));
    }
    let (post_antelope, atomic_blobs) = (flags & 1 != 0, flags & (1 << 5) != 0);
    if atomic_blobs && !post_antelope {
        return Err(format!(
            "tablespace flags {flags:#x} say DYNAMIC or COMPRESSED without COMPACT's bit"
        ));
    }
    let ssize = (flags >> 6) & 0xF;
    let page_size = if ssize == 0 { 16384 } else { size(ssize)? };
    let zssize = (flags >> 1) & 0xF;
    Ok(Space {
        id,
        flags,
        full_crc32: false,
        page_size,
        page_compressed: flags & PAGE_COMPRESSION != 0,
        zip_size: (zssize != 0).then_some(512usize << zssize),
        crypt: None,
    })
}

impl Space {
    /// Page 0 of the file: its flags, its crypt data when it has any. `Err` when page 0 cannot be trusted
    /// (not page 0 of a tablespace, a checksum that fails under its own flags' format, flags of no format).
    pub fn read(page0: &[u8]) -> Result<Space, String> {
        if page0.len() < 1024 {
            return Err(format!("page 0 has {} bytes", page0.len()));
        }
        if be32(page0, 4) != 0 || be16(page0, 24) != 8 {
            return Err(
                "the first page is not a tablespace header page (FIL_PAGE_TYPE_FSP_HDR)".into(),
            );
        }
        let id = be32(page0, 34);
        if be32(page0, FSP_HEADER) != id {
            return Err(format!(
                "page 0 says tablespace {id} in its file header and {} in its FSP header",
                be32(page0, FSP_HEADER)
            ));
        }
        let mut space = decode_flags(id, be32(page0, FSP_FLAGS))?;
        if page0.len() != space.page_size {
            return Err(format!(
                "the flags say {}-byte pages, page 0 has {} bytes",
                space.page_size,
                page0.len()
            ));
        }
        if !space.checksum_ok(page0) {
            return Err(format!(
                "page 0's {} checksum fails: its flags cannot be trusted",
                space.format()
            ));
        }
        space.crypt = crypt_data(page0, space.page_size);
        Ok(space)
    }

    /// The tablespace as the file's other pages describe it, when page 0 itself is damaged (its checksum fails
    /// in both formats): the format is the one under which the other pages' checksums pass — a page passes in
    /// one format only — and the tablespace id is theirs. The page size is `page_size` (the only one read).
    /// Page 0 also holds what no other page repeats, so `Err` when the pages say the file may have it:
    /// encryption (a page with a key version: the crypt data was on page 0) or page compression (a
    /// page-compressed page type); and when too few pages pass to tell (fewer than [`INFER_MIN`], or pages
    /// passing in both formats), or page 0 is not damaged after all (then its own flags are the answer, and
    /// the caller's error about them stands). Returns the space and the sentence saying how it was found.
    pub fn infer(data: &[u8], page_size: usize) -> Result<(Space, String), String> {
        let candidate = |full_crc32: bool| {
            let ssize = (page_size / 512).trailing_zeros();
            let flags = if full_crc32 {
                FCRC32_MARKER | ssize
            } else {
                // COMPACT + atomic BLOBs (DYNAMIC's bits); the row format is the dictionary's, not these.
                0x21 | if page_size == 16384 { 0 } else { ssize << 6 }
            };
            decode_flags(0, flags)
        };
        let (full, older) = (candidate(true)?, candidate(false)?);
        let page0 = data
            .get(..page_size)
            .ok_or("the file is shorter than one page")?;
        if full.checksum_ok(page0) || older.checksum_ok(page0) {
            return Err("page 0's checksum passes: its flags are what they say".into());
        }
        let pages: Vec<&[u8]> = data
            .chunks_exact(page_size)
            .skip(1)
            .filter(|p| p.iter().any(|b| *b != 0))
            .collect();
        let passing = |s: &Space| -> Vec<&[u8]> {
            pages.iter().copied().filter(|p| s.checksum_ok(p)).collect()
        };
        let (by_full, by_older) = (passing(&full), passing(&older));
        let (mut space, good) = match (by_full.len(), by_older.len()) {
            (n, 0) if n >= INFER_MIN => (full, by_full),
            (0, n) if n >= INFER_MIN => (older, by_older),
            (f, o) => {
                return Err(format!(
                    "page 0 is damaged and the other pages do not tell the file's format ({f} pass as full_crc32, {o} as crc32, of {} written)",
                    pages.len()
                ))
            }
        };
        if let Some(p) = good.iter().find(|p| space.key_version(p) != 0) {
            return Err(format!(
                "page 0 is damaged and page {} is encrypted: the crypt data was on page 0",
                be32(p, 4)
            ));
        }
        if good.iter().any(|p| {
            let ty = be16(p, 24);
            ty == PAGE_COMPRESSED_TYPE || ty == PAGE_COMPRESSED_ENCRYPTED_TYPE || ty & 0x8000 != 0
        }) {
            return Err("page 0 is damaged and the file has page-compressed pages".into());
        }
        let mut ids: Vec<u32> = good.iter().map(|p| be32(p, 34)).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != 1 {
            return Err(format!(
                "page 0 is damaged and the other pages name {} tablespaces ({ids:?})",
                ids.len()
            ));
        }
        space.id = ids[0];
        let note = format!(
            "page 0 is damaged: the file's format ({}, {page_size}-byte pages, tablespace {}) was read from the {} other pages whose checksums pass in it",
            space.format(),
            space.id,
            good.len()
        );
        Ok((space, note))
    }

    /// `full_crc32` or `crc32`: the checksum format of the file's pages.
    pub fn format(&self) -> &'static str {
        if self.full_crc32 {
            "full_crc32"
        } else {
            "crc32"
        }
    }

    /// Whether the page's checksum matches in this tablespace's format (`crc32` for the older one: the header
    /// and trailer checksums both equal to the computed one, and the trailer's LSN half equal to the header's).
    pub fn checksum_ok(&self, p: &[u8]) -> bool {
        let n = p.len();
        if n != self.page_size || n < 64 {
            return false;
        }
        if self.full_crc32 {
            return be32(p, n - 4) == crc32c(&p[..n - 4]);
        }
        if be32(p, n - 4) != be32(p, 20) {
            return false;
        }
        let sum = crc32c(&p[4..26]) ^ crc32c(&p[38..n - 8]);
        if be32(p, 0) == sum && be32(p, n - 8) == sum {
            return true;
        }
        // Pages last written before MariaDB 10.2 (or with innodb_checksum_algorithm=innodb) carry InnoDB's
        // own fold in both places; the server still reads them (innodb_checksum_algorithm=crc32 is not
        // strict). Only both formulas matching count: a page without checksums (0, 0xDEADBEEF, the LSN in the
        // trailer, which the server also accepts) proves nothing and reads as failing.
        let (new, old) = innodb_checksums(p);
        be32(p, 0) == new && be32(p, n - 8) == old
    }

    /// The encryption key version the page carries (0: not encrypted; a slice too short to hold one is no page).
    pub fn key_version(&self, p: &[u8]) -> u32 {
        let at = if self.full_crc32 { 0 } else { 26 };
        p.get(at..at + 4).map_or(0, |b| be32(b, 0))
    }

    /// The row format the data file says its records have, given whether its index pages are in the COMPACT
    /// page format (`PAGE_N_HEAP`'s top bit): REDUNDANT when they are not; else the older flags tell DYNAMIC
    /// (atomic BLOBs) from COMPACT. full_crc32 flags do not record it, and the two differ only in what an
    /// externally stored column keeps on the page: DYNAMIC, the server's default since 10.2.2, is assumed, and
    /// the second value says so.
    pub fn row_format(&self, compact_pages: bool) -> (super::def::RowFormat, bool) {
        use super::def::RowFormat;
        if !compact_pages {
            return (RowFormat::Redundant, false);
        }
        if self.full_crc32 {
            return (RowFormat::Dynamic, true);
        }
        if self.zip_size.is_some() {
            (RowFormat::Compressed, false)
        } else if self.flags & (1 << 5) != 0 {
            (RowFormat::Dynamic, false)
        } else {
            (RowFormat::Compact, false)
        }
    }

    /// The sentence saying why no page of this tablespace is read, when none is.
    pub fn refusal(&self, page_size: usize) -> Option<String> {
        if self.page_size != page_size {
            return Some(format!(
                "the tablespace has {}-byte pages: only {page_size}-byte pages are read",
                self.page_size
            ));
        }
        if let Some(z) = self.zip_size {
            return Some(format!(
                "the tablespace is ROW_FORMAT=COMPRESSED ({z}-byte pages), which is not read yet"
            ));
        }
        if self.page_compressed {
            return Some("the tablespace is page-compressed, which is not read yet".into());
        }
        None
    }
}

/// InnoDB's fold of a byte string (`ut_fold_binary`: `ut_fold_ulint_pair` byte by byte, in 64-bit words).
fn fold(bytes: &[u8]) -> u64 {
    const MASK: u64 = 1_463_735_687;
    const MASK2: u64 = 1_653_893_711;
    bytes.iter().fold(0u64, |f, &b| {
        let b = u64::from(b);
        ((((f ^ b ^ MASK2) << 8).wrapping_add(f)) ^ MASK).wrapping_add(b)
    })
}

/// The legacy `innodb` checksums of a page in the older format (`buf_calc_page_new_checksum`, stored in bytes
/// 0..4, and `buf_calc_page_old_checksum`, in the trailer's first 4 bytes): the first over bytes 4..26 and
/// 38..size-8, the second over bytes 0..26 — which hold the first, so a writer stores the first before it
/// computes the second.
pub fn innodb_checksums(p: &[u8]) -> (u32, u32) {
    let n = p.len();
    let new = fold(&p[4..26]).wrapping_add(fold(&p[38..n - 8]));
    (new as u32, fold(&p[..26]) as u32)
}

/// The crypt data on page 0 (`fil_space_read_crypt_data`): after the FSP header and the extent descriptors
/// (`XDES_SIZE`, 40 bytes at 16 KiB, for each of page_size / `FSP_EXTENT_SIZE` extents), when its magic is there.
fn crypt_data(page0: &[u8], page_size: usize) -> Option<Crypt> {
    let extent = extents_pages(page_size);
    let xdes = 24 + (extent * 2).div_ceil(8);
    // `FIL_PAGE_DATA` past the end of the descriptor array: byte 10428 of a 16 KiB page (seen on a real
    // server's encrypted tablespace, tests/pages.rs).
    let at = FSP_HEADER + FSP_HEADER + 112 + xdes * (page_size / extent);
    let c = page0.get(at..at + 6 + 2 + 16 + 9)?;
    if c[..6] != CRYPT_MAGIC {
        return None;
    }
    Some(Crypt {
        scheme: c[6],
        min_key_version: be32(c, 24),
        key_id: be32(c, 28),
    })
}

/// Pages per extent (`FSP_EXTENT_SIZE`): 1 MiB of pages up to 16 KiB pages, 64 pages above.
fn extents_pages(page_size: usize) -> usize {
    if page_size <= 16384 {
        (1 << 20) / page_size
    } else {
        64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_crc32_flags_give_page_size_and_compression() {
        // 0x15: marker + page size code 5 (16 KiB), what MariaDB 10.5+ writes for a new file.
        let s = decode_flags(7, 0x15).unwrap();
        assert!(s.full_crc32 && !s.page_compressed);
        assert_eq!((s.page_size, s.zip_size), (16384, None));
        assert_eq!(decode_flags(7, 0x13).unwrap().page_size, 4096);
        // Algorithm 1 (zlib) in bits 5..7.
        assert!(decode_flags(7, 0x35).unwrap().page_compressed);
        assert!(decode_flags(7, 0x115).is_err());
        assert!(decode_flags(7, 0x12).is_err());
    }

    #[test]
    fn older_flags_give_page_size_row_format_and_compression() {
        // 0x21: COMPACT + atomic BLOBs (DYNAMIC), 16 KiB (code 0), crc32 format.
        let s = decode_flags(7, 0x21).unwrap();
        assert!(!s.full_crc32 && !s.page_compressed);
        assert_eq!((s.page_size, s.zip_size), (16384, None));
        assert!(decode_flags(7, 0).is_ok());
        // KEY_BLOCK_SIZE=8: zip code 4.
        assert_eq!(decode_flags(7, 0x21 | 4 << 1).unwrap().zip_size, Some(8192));
        assert_eq!(decode_flags(7, 0x21 | 6 << 6).unwrap().page_size, 32768);
        assert!(decode_flags(7, 0x21 | 1 << 16).unwrap().page_compressed);
        // MariaDB 10.1's buggy page size bits, atomic BLOBs without COMPACT, a bit past 16.
        assert!(decode_flags(7, 0x21 | 3 << 13).is_err());
        assert!(decode_flags(7, 0x20).is_err());
        assert!(decode_flags(7, 0x21 | 1 << 17).is_err());
        // MySQL 8.0's SDI bit and MySQL 5.7's encryption bit.
        assert!(decode_flags(7, 0x21 | 1 << 14).is_err());
        assert!(decode_flags(7, 0x21 | 1 << 13).is_err());
    }

    fn page0(flags: u32, full: bool, crypt: bool) -> Vec<u8> {
        let mut p = vec![0u8; 16384];
        p[24..26].copy_from_slice(&8u16.to_be_bytes());
        p[34..38].copy_from_slice(&9u32.to_be_bytes());
        p[38..42].copy_from_slice(&9u32.to_be_bytes());
        p[54..58].copy_from_slice(&flags.to_be_bytes());
        p[20..24].copy_from_slice(&0x1234u32.to_be_bytes());
        if crypt {
            let at = 10428;
            p[at..at + 6].copy_from_slice(&CRYPT_MAGIC);
            p[at + 6] = 1;
            p[at + 7] = 16;
            p[at + 24..at + 28].copy_from_slice(&1u32.to_be_bytes());
            p[at + 28..at + 32].copy_from_slice(&3u32.to_be_bytes());
        }
        let n = p.len();
        if full {
            let c = crc32c(&p[..n - 4]);
            p[n - 4..].copy_from_slice(&c.to_be_bytes());
        } else {
            let c = crc32c(&p[4..26]) ^ crc32c(&p[38..n - 8]);
            p[..4].copy_from_slice(&c.to_be_bytes());
            p[n - 8..n - 4].copy_from_slice(&c.to_be_bytes());
            p[n - 4..].copy_from_slice(&0x1234u32.to_be_bytes());
        }
        p
    }

    #[test]
    fn page_0_is_read_in_its_own_format_and_its_checksum_checked() {
        let s = Space::read(&page0(0x15, true, false)).unwrap();
        assert!(s.full_crc32 && s.crypt.is_none() && s.id == 9);
        let s = Space::read(&page0(0x21, false, true)).unwrap();
        assert!(!s.full_crc32);
        assert_eq!(
            s.crypt,
            Some(Crypt {
                scheme: 1,
                min_key_version: 1,
                key_id: 3
            })
        );
        // A crc32-format page read as full_crc32 (and the reverse) fails its checksum.
        assert!(Space::read(&page0(0x21, true, false)).is_err());
        let mut p = page0(0x21, false, false);
        p[5000] ^= 1;
        assert!(Space::read(&p).is_err());
        // A non-zero first word is the checksum in the older format, never a key version.
        let s = Space::read(&page0(0x21, false, false)).unwrap();
        assert_eq!(s.key_version(&page0(0x21, false, false)), 0);
        assert!(s.refusal(16384).is_none());
    }

    /// Page `n` of tablespace `id`, of type `ty`, with a checksum in its format (`key` in its key version).
    fn page(n: u32, id: u32, ty: u16, full: bool, key: u32) -> Vec<u8> {
        let mut p = vec![0u8; 16384];
        p[4..8].copy_from_slice(&n.to_be_bytes());
        p[24..26].copy_from_slice(&ty.to_be_bytes());
        p[34..38].copy_from_slice(&id.to_be_bytes());
        p[20..24].copy_from_slice(&0x1234u32.to_be_bytes());
        p[200..210].copy_from_slice(b"some bytes");
        let n = p.len();
        if full {
            p[..4].copy_from_slice(&key.to_be_bytes());
            let c = crc32c(&p[..n - 4]);
            p[n - 4..].copy_from_slice(&c.to_be_bytes());
        } else {
            p[26..30].copy_from_slice(&key.to_be_bytes());
            let c = crc32c(&p[4..26]) ^ crc32c(&p[38..n - 8]);
            p[..4].copy_from_slice(&c.to_be_bytes());
            p[n - 8..n - 4].copy_from_slice(&c.to_be_bytes());
            p[n - 4..].copy_from_slice(&0x1234u32.to_be_bytes());
        }
        p
    }

    /// A file: page 0 (512 bytes overwritten unless `intact`), then `pages`, then an unwritten page.
    fn file(full: bool, intact: bool, pages: &[Vec<u8>]) -> Vec<u8> {
        let mut f = page0(if full { 0x15 } else { 0x21 }, full, false);
        if !intact {
            f[2000..2512].fill(0xab);
        }
        for p in pages {
            f.extend_from_slice(p);
        }
        f.extend(std::iter::repeat_n(0u8, 16384));
        f
    }

    #[test]
    fn a_damaged_page_0_is_inferred_from_the_pages_that_pass_in_one_format() {
        for full in [true, false] {
            let idx = |n| page(n, 9, 17855, full, 0);
            let (s, note) =
                Space::infer(&file(full, false, &[idx(1), idx(2), idx(3)]), 16384).unwrap();
            assert_eq!((s.full_crc32, s.id, s.page_size), (full, 9, 16384));
            assert!(s.refusal(16384).is_none() && s.zip_size.is_none());
            assert!(note.contains("from the 3 other pages"), "{note}");
            // Every page of the file reads in the inferred format.
            assert!(s.checksum_ok(&idx(2)));
            // An intact page 0 is not overruled: its own flags (and their errors) stand.
            let why = Space::infer(&file(full, true, &[idx(1), idx(2)]), 16384).unwrap_err();
            assert!(why.contains("passes"), "{why}");
            // One page is too few to tell.
            let why = Space::infer(&file(full, false, &[idx(1)]), 16384).unwrap_err();
            assert!(why.contains("do not tell the file's format"), "{why}");
            // What only page 0 held: encryption, page compression; and pages of two tablespaces.
            let why = Space::infer(
                &file(full, false, &[idx(1), page(2, 9, 17855, full, 5)]),
                16384,
            )
            .unwrap_err();
            assert!(why.contains("page 2 is encrypted"), "{why}");
            let why = Space::infer(
                &file(full, false, &[idx(1), page(2, 9, 34354, full, 0)]),
                16384,
            )
            .unwrap_err();
            assert!(why.contains("page-compressed"), "{why}");
            let why = Space::infer(
                &file(full, false, &[idx(1), page(2, 10, 17855, full, 0)]),
                16384,
            )
            .unwrap_err();
            assert!(why.contains("name 2 tablespaces"), "{why}");
        }
        // Pages passing in both formats would not tell either (a file of mixed pages).
        let mixed = file(
            true,
            false,
            &[
                page(1, 9, 17855, true, 0),
                page(2, 9, 17855, true, 0),
                page(3, 9, 17855, false, 0),
            ],
        );
        let why = Space::infer(&mixed, 16384).unwrap_err();
        assert!(why.contains("2 pass as full_crc32, 1 as crc32"), "{why}");
    }
}
