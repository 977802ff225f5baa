//! Reading InnoDB's data files directly, where SQL cannot reach the rows (issue 30): pages of a file-per-table
//! `.ibd` ([`page`]: headers, checksums, the leaves of an index), a table's definition as the record parser needs
//! it ([`def`]), column values from their stored bytes ([`value`]), and the user records of a clustered-index
//! leaf page, each a row proven by its own bytes or rejected with the reason ([`record`]); what page 0 says
//! about every page of the file (its format, page size, compression, encryption: [`space`]) and externally
//! stored columns followed through their BLOB pages ([`blob`]).
//!
//! Pure: nothing here opens a file or a connection. The definition comes from the server through
//! `dump::page_def`, or from the table's `.frm` file ([`frm`]) when no server can be asked; the bytes from
//! whoever read the file.
//!
//! Every page read goes through the checks here for each of its records, so an error message is formatted only
//! when there is an error (`ok_or_else`, not `ok_or(format!(..))`): formatted eagerly, the unused messages took
//! a sixth of the page pass's time.
#![warn(clippy::or_fun_call)]

pub mod blob;
pub mod def;
pub mod frm;
pub mod keys;
pub mod page;
pub mod record;
mod redundant;
pub mod space;
pub mod value;

pub use blob::{InMemory, PageReader};
pub use def::{ColType, ColumnDef, ColumnSpec, RowFormat, TableDef};
pub use keys::{leaf_keys, LeafKeys};
pub use record::{parse_leaf, starts_with_metadata, Leaf, Outcome, Record, Row};
pub use value::{Extern, Value};
