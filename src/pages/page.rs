//! One 16 KiB page of a file-per-table `.ibd` as InnoDB lays it out (shared/FACTS.md §4; MariaDB's
//! `fil0fil.h`, `page0page.h`): the file header (page type, previous and next page of the same B-tree level),
//! the index page header (record count, heap, level, index id), the `full_crc32` checksum, the record list of
//! COMPACT pages, and the leaves of an index found by page type and index id, not through the tree (whose upper
//! levels may be the damaged part). Every read here is of a whole page, so fixed offsets stay inside it.

/// `FIL_PAGE_INDEX`: a B-tree page.
pub const INDEX_PAGE: u16 = 17855;
/// `FIL_NULL`: no page (the end of a level's list).
pub const NO_PAGE: u32 = u32::MAX;
/// Where the index page header starts (`PAGE_HEADER`, after the 38-byte file header).
pub const PAGE_HEADER: usize = 38;
/// `PAGE_HEAP_TOP`: the end of the records' heap.
pub const HEAP_TOP: usize = PAGE_HEADER + 2;
/// `PAGE_N_HEAP`: records in the heap (infimum and supremum included); the top bit marks a COMPACT page.
pub const N_HEAP: usize = PAGE_HEADER + 4;
/// `PAGE_N_RECS`: user records on the page (delete-marked ones included).
pub const N_RECS: usize = PAGE_HEADER + 16;
/// `PAGE_LEVEL`: 0 on a leaf.
pub const LEVEL: usize = PAGE_HEADER + 26;
/// `FIL_PAGE_SPACE_ID`: the tablespace the page belongs to.
pub const SPACE_ID: usize = 34;
/// Where user records may start on a COMPACT page (`PAGE_NEW_SUPREMUM_END`).
pub const RECORDS_START: usize = 120;

/// The page size innops reads (MariaDB's default, `innodb_page_size = 16k`).
pub const PAGE: usize = 16384;

/// One leaf page of an index: its page number and how many records it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct IndexPage {
    pub page: u32,
    pub n_recs: usize,
}

pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The leaf pages of the index whose root is page `root` (3: the clustered index, 4: the first secondary
/// index) in key order: the level-0 index pages with the root's index id, following the next-page links from
/// the one that has no previous page. `Err` says why the file does not read as such an index.
pub fn leaves_in(data: &[u8], root: u32) -> Result<Vec<IndexPage>, String> {
    level_in(data, root, 0)
}

/// The pages of B-tree level `level` (0: the leaves) of the index whose root is page `root`, in key order: the
/// index pages at that level with the root's index id, following the next-page links (every level of an
/// InnoDB B-tree is a doubly linked list) from the one that has no previous page.
pub fn level_in(data: &[u8], root: u32, level: u16) -> Result<Vec<IndexPage>, String> {
    let pages = data.len() / PAGE;
    let page = |n: usize| &data[n * PAGE..(n + 1) * PAGE];
    let r = root_page(data, root)?;
    if be16(r, 64) < level {
        return Err(format!(
            "the index has {} levels, no level {level}",
            be16(r, 64) + 1
        ));
    }
    let index_id = &r[66..74];
    let mut by_no = std::collections::HashMap::new();
    let mut first = None;
    for n in 0..pages {
        let p = page(n);
        if be16(p, 24) == INDEX_PAGE && be16(p, 64) == level && &p[66..74] == index_id {
            by_no.insert(n as u32, (be32(p, 12), be16(p, 54) as usize));
            if be32(p, 8) == NO_PAGE {
                if first.is_some() {
                    return Err(format!("two pages of level {level} have no previous page"));
                }
                first = Some(n as u32);
            }
        }
    }
    let mut at =
        first.ok_or_else(|| format!("no page of level {level} without a previous page"))?;
    let mut out = Vec::new();
    loop {
        let &(next, n_recs) = by_no.get(&at).ok_or_else(|| format!(
            "the chain of level {level} leads to page {at}, which is not a page of this index at that level"
        ))?;
        out.push(IndexPage { page: at, n_recs });
        if out.len() > by_no.len() {
            return Err(format!("the chain of level {level} loops"));
        }
        if next == NO_PAGE {
            break;
        }
        at = next;
    }
    if out.len() != by_no.len() {
        return Err(format!(
            "{} pages of level {level}, {} on the chain from the first",
            by_no.len(),
            out.len()
        ));
    }
    Ok(out)
}

fn root_page(data: &[u8], root: u32) -> Result<&[u8], String> {
    let pages = data.len() / PAGE;
    if root as usize >= pages {
        return Err(format!("the file has {pages} pages, no page {root}"));
    }
    let r = &data[root as usize * PAGE..(root as usize + 1) * PAGE];
    if be16(r, 24) != INDEX_PAGE {
        return Err(format!("page {root} is not an index page"));
    }
    Ok(r)
}

/// Every level of the index whose root is page `root`, from the leaves (`[0]`) up to the root alone (the
/// last), each in key order.
pub fn levels_in(data: &[u8], root: u32) -> Result<Vec<Vec<IndexPage>>, String> {
    let top = be16(root_page(data, root)?, 64);
    (0..=top).map(|l| level_in(data, root, l)).collect()
}

/// The leaf chain: each page and whether it is linked to the one before it; and the pages left off it.
pub type Chain = (Vec<(u32, bool)>, Vec<u32>);

/// The leaf level of the index whose id is `index_id`, found by page type, level and index id alone (the
/// root and every upper level may be the damaged part): the pages joined by mutual links (A's next is B and
/// B's previous is A), walked forwards from the one page without a previous page and backwards from the one
/// without a next page. Each page comes with whether it is linked to the one before it in the list (`false`
/// after a break in the chain: a page whose links are damaged, or missing, lies there). `Err` when the level
/// has no single first or last page (stale pages of a freed part of the file could not be told apart); the
/// pages carrying the id that are on neither walk are returned second (stale pages, or pages in the break).
pub fn leaf_chain(data: &[u8], index_id: u64) -> Result<Chain, String> {
    let id = index_id.to_be_bytes();
    let mut links = std::collections::BTreeMap::new();
    for n in 0..data.len() / PAGE {
        let p = &data[n * PAGE..(n + 1) * PAGE];
        if be16(p, 24) == INDEX_PAGE && be16(p, 64) == 0 && p[66..74] == id {
            links.insert(n as u32, (be32(p, 8), be32(p, 12)));
        }
    }
    let ends = |first: bool| -> Vec<u32> {
        links
            .iter()
            .filter(|(_, &(prev, next))| if first { prev } else { next } == NO_PAGE)
            .map(|(&n, _)| n)
            .collect()
    };
    let (firsts, lasts) = (ends(true), ends(false));
    if firsts.len() != 1 || lasts.len() != 1 {
        return Err(format!(
            "the index's leaf level has {} pages without a previous page and {} without a next one, where a B-tree has one each",
            firsts.len(),
            lasts.len()
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut forward = vec![firsts[0]];
    seen.insert(firsts[0]);
    while let Some(&(_, next)) = links.get(forward.last().unwrap()) {
        match links.get(&next) {
            Some(&(prev, _)) if prev == *forward.last().unwrap() && seen.insert(next) => {
                forward.push(next)
            }
            _ => break,
        }
    }
    let mut chain: Vec<(u32, bool)> = forward
        .iter()
        .enumerate()
        .map(|(i, &n)| (n, i > 0))
        .collect();
    if !seen.contains(&lasts[0]) {
        let mut back = vec![lasts[0]];
        seen.insert(lasts[0]);
        while let Some(&(prev, _)) = links.get(back.last().unwrap()) {
            match links.get(&prev) {
                Some(&(_, next)) if next == *back.last().unwrap() && seen.insert(prev) => {
                    back.push(prev)
                }
                _ => break,
            }
        }
        back.reverse();
        chain.extend(back.iter().enumerate().map(|(i, &n)| (n, i > 0)));
    }
    let off: Vec<u32> = links
        .keys()
        .filter(|n| !seen.contains(n))
        .copied()
        .collect();
    Ok((chain, off))
}

/// CRC-32C (Castagnoli): the page checksum of `full_crc32` tablespaces (MariaDB's default). The `crc32c`
/// crate's (the SSE 4.2 / ARMv8 instruction where the processor has it): the page pass sums every leaf page of
/// the file, a bitwise loop one bit at a time was too slow for that.
pub fn crc32c(data: &[u8]) -> u32 {
    ::crc32c::crc32c(data)
}

pub(crate) fn stored_crc(p: &[u8]) -> u32 {
    be32(p, PAGE - 4)
}

/// Where the infimum and the supremum of a COMPACT (or DYNAMIC) index page have their origins.
pub(crate) const INFIMUM: usize = 99;
pub(crate) const SUPREMUM: usize = 112;

/// The origins of a COMPACT page's user records in list (key) order, walking the next-record offsets from the
/// infimum to the supremum.
pub fn record_origins(p: &[u8]) -> Result<Vec<usize>, String> {
    if be16(p, 24) != INDEX_PAGE {
        return Err("not an index page".into());
    }
    // PAGE_N_HEAP (page header byte 4): its top bit says the page is in the COMPACT format.
    if be16(p, 38 + 4) & 0x8000 == 0 {
        return Err("not a COMPACT/DYNAMIC page (REDUNDANT records are not supported)".into());
    }
    let mut out = Vec::new();
    let mut at = INFIMUM;
    loop {
        let off = be16(p, at - 2) as i16;
        let next = (at as i64 + off as i64).rem_euclid(PAGE as i64) as usize;
        if off == 0 || !(SUPREMUM..PAGE - 8).contains(&next) {
            return Err(format!(
                "the record at {at} points to {next}: the record list is broken"
            ));
        }
        if next == SUPREMUM {
            return Ok(out);
        }
        out.push(next);
        if out.len() > PAGE / 5 {
            return Err("the record list loops".into());
        }
        at = next;
    }
}

/// The clustered index's id and the pages that vote for it, found in the file alone (no dictionary to ask):
/// the smallest index id among the index pages whose checksums pass (`ok`). InnoDB creates a table's clustered
/// index first and gives every later index a larger id, and a rebuild writes a new file, so no page of the file
/// carries a smaller one. When page 3 (where InnoDB puts the first index's root) is an index page that passes,
/// it must carry that id too, else `Err`: the file is not laid out as the rule assumes.
pub fn clustered_index_id(data: &[u8], ok: impl Fn(&[u8]) -> bool) -> Result<(u64, usize), String> {
    let mut ids = std::collections::BTreeMap::<u64, usize>::new();
    for p in data.chunks_exact(PAGE) {
        if be16(p, 24) == INDEX_PAGE && ok(p) {
            *ids.entry(index_id(p)).or_default() += 1;
        }
    }
    let (&id, &pages) = ids
        .iter()
        .next()
        .ok_or("no index page of the file passes its checksum")?;
    if let Some(p3) = data.get(3 * PAGE..4 * PAGE) {
        let id3 = index_id(p3);
        if be16(p3, 24) == INDEX_PAGE && ok(p3) && id3 != id {
            return Err(format!(
                "page 3, the first index's root, carries index id {id3} where the smallest id in the file is {id}"
            ));
        }
    }
    Ok((id, pages))
}

/// `FIL_PAGE_TYPE_INSTANT`: the clustered index's root after an instant ALTER TABLE (ADD, DROP or reorder of
/// columns) that left the metadata record on the leftmost leaf.
pub const INSTANT_ROOT: u16 = 18;

/// The page of index `id` whose type says an instant ALTER TABLE changed the table (its root), if any.
pub fn instant_root(data: &[u8], id: u64) -> Option<u32> {
    data.chunks_exact(PAGE)
        .position(|p| be16(p, 24) == INSTANT_ROOT && index_id(p) == id)
        .map(|n| n as u32)
}

/// PAGE_INDEX_ID: 8 bytes at page header byte 28.
fn index_id(p: &[u8]) -> u64 {
    u64::from_be_bytes(p[66..74].try_into().expect("8 bytes"))
}

/// Whether index `id`'s pages are in the COMPACT page format (`PAGE_N_HEAP`'s top bit; REDUNDANT's are not), as
/// the first of them whose checksum passes (`ok`) says; `None` when none passes.
pub fn index_pages_compact(data: &[u8], id: u64, ok: impl Fn(&[u8]) -> bool) -> Option<bool> {
    data.chunks_exact(PAGE)
        .find(|p| be16(p, 24) == INDEX_PAGE && index_id(p) == id && ok(p))
        .map(|p| be16(p, N_HEAP) & 0x8000 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `n` pages; `leaves` are (page, prev, next) of level-0 pages of index 9.
    fn file(n: usize, leaves: &[(u32, u32, u32)]) -> Vec<u8> {
        let mut d = vec![0u8; n * PAGE];
        for &(no, prev, next) in leaves {
            let p = &mut d[no as usize * PAGE..(no as usize + 1) * PAGE];
            p[8..12].copy_from_slice(&prev.to_be_bytes());
            p[12..16].copy_from_slice(&next.to_be_bytes());
            p[24..26].copy_from_slice(&INDEX_PAGE.to_be_bytes());
            p[66..74].copy_from_slice(&9u64.to_be_bytes());
        }
        d
    }

    #[test]
    fn crc32c_is_the_castagnoli_checksum() {
        // The check value of CRC-32C (RFC 3720, B.4: 32 zero bytes; the catalogue's "123456789").
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
    }

    #[test]
    fn the_leaf_chain_is_found_by_index_id_and_mutual_links() {
        let whole = file(8, &[(4, NO_PAGE, 6), (6, 4, 5), (5, 6, NO_PAGE)]);
        assert_eq!(
            leaf_chain(&whole, 9).unwrap(),
            (vec![(4, false), (6, true), (5, true)], vec![])
        );
        // Another index's pages are not its leaves.
        assert!(leaf_chain(&whole, 10).is_err());
        // A stale page pointing into the chain is not on it (its neighbour does not point back).
        let stale = file(8, &[(4, NO_PAGE, 6), (6, 4, 5), (5, 6, NO_PAGE), (7, 4, 5)]);
        assert_eq!(leaf_chain(&stale, 9).unwrap().1, vec![7]);
        // A broken link: both ends walked, the break marked, the page behind it left off.
        let broken = file(
            9,
            &[
                (3, NO_PAGE, 4),
                (4, 3, 99),
                (5, 77, 88),
                (6, 5, 7),
                (7, 6, NO_PAGE),
            ],
        );
        assert_eq!(
            leaf_chain(&broken, 9).unwrap(),
            (vec![(3, false), (4, true), (6, false), (7, true)], vec![5])
        );
        // Two first pages: stale pages cannot be told apart.
        let two = file(8, &[(4, NO_PAGE, 6), (6, 4, NO_PAGE), (7, NO_PAGE, 6)]);
        assert!(leaf_chain(&two, 9).is_err());
    }

    /// A damaged root (page 3) that fails its checksum does not vote; one that passes but carries another id is
    /// named, not followed.
    #[test]
    fn the_clustered_index_id_is_the_smallest_among_pages_that_pass() {
        let page = |id: u64, good: bool| {
            let mut p = vec![0u8; PAGE];
            p[24..26].copy_from_slice(&17855u16.to_be_bytes());
            p[66..74].copy_from_slice(&id.to_be_bytes());
            p[0] = u8::from(good);
            p
        };
        let ok = |p: &[u8]| p[0] == 1;
        // Pages 0..2 are not index pages; page 3 the root, then the given pages.
        let file = |from_3: Vec<Vec<u8>>| [vec![vec![0u8; 3 * PAGE]], from_3].concat().concat();
        // Leaves of the clustered index (40) and of a secondary (41).
        let healthy = file(vec![page(40, true), page(41, true), page(40, true)]);
        assert_eq!(clustered_index_id(&healthy, ok).unwrap(), (40, 2));
        let bad_root = file(vec![page(3, false), page(41, true), page(40, true)]);
        assert_eq!(clustered_index_id(&bad_root, ok).unwrap(), (40, 1));
        let odd_root = file(vec![page(41, true), page(40, true)]);
        assert!(clustered_index_id(&odd_root, ok)
            .unwrap_err()
            .contains("page 3"));
        assert!(clustered_index_id(&[vec![0u8; PAGE], page(9, false)].concat(), ok).is_err());
    }
}
