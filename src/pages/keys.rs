//! A clustered-index leaf page read for its keys alone: the page pass (`dump::read::pages`) needs the rows of
//! the records inside lost ranges only, and the keys of the others (to find those records, and for the
//! duplicate-key check and the cutting of the ranges). The same code as [`super::parse_leaf`] up to each
//! record's key, so the two cannot disagree on a key.

use super::def::TableDef;
use super::record::{layout, list_of, parse_record, Scratch};
use super::space::Space;
use super::value::Value;

/// A leaf page read for its keys alone ([`leaf_keys`]).
#[derive(Debug, Clone, PartialEq)]
pub struct LeafKeys {
    /// Per record, in the order [`super::parse_leaf`] returns them: its key (the one `parse_leaf` gives it, proven
    /// row or not), or why it has none.
    pub keys: Vec<Result<Vec<Value>, String>>,
    pub checksum_ok: bool,
    /// The same findings [`super::parse_leaf`] makes about the page as a whole.
    pub problems: Vec<String>,
}

/// Page `p` read as [`super::parse_leaf`] reads it up to each record's key and no further: the same refusal, the
/// same record list (walked again from the directory past a break), the same header and length checks and
/// the same key decoding, so each record has a key here exactly when `parse_leaf` gives it one, the same key.
/// No value past the key is decoded and nothing is proven: for the pages whose keys the caller does not need
/// the rows of (the page pass reads only the rows inside lost ranges).
pub fn leaf_keys(def: &TableDef, space: &Space, p: &[u8]) -> Result<LeafKeys, String> {
    let (origins, problems, _) = list_of(def, space, p)?;
    let mut scratch = Scratch::new();
    let lay = layout(def);
    let keys = origins
        .iter()
        .map(|&at| {
            let r = parse_record((def, &lay), None, p, at, &mut scratch);
            r.key.ok_or_else(|| r.reason.unwrap_or_default())
        })
        .collect();
    Ok(LeafKeys {
        keys,
        checksum_ok: space.checksum_ok(p),
        problems,
    })
}
