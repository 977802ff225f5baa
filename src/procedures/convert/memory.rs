//! Whether a table fits the buffer pool: judged before the copy from the MyISAM table's size, and again after it
//! from the InnoDB table's own (often larger), since an InnoDB table that outgrows the pool reads from disk what
//! the OS cache served for MyISAM.

use crate::plan::Verdict;
use crate::units::format_size;

/// Whether a table of `size` bytes (data and indexes) fits a buffer pool of `pool`: a warning when it does not.
/// `after`: the InnoDB table's own size, once converted; else the MyISAM table's (the InnoDB table is often
/// larger, so the check is made again after the copy).
pub(super) fn pool_verdict(size: u64, pool: u64, after: bool) -> Verdict {
    let (what, consequence) = if after {
        ("InnoDB", "reads the OS cache served for MyISAM now go to disk, and the table reads slower than before")
    } else {
        (
            "MyISAM",
            "the copy runs out of memory, and the table may read slower after it",
        )
    };
    if size > pool && pool > 0 {
        Verdict::warn(
            format!(
                "{} of {what} data and indexes vs a {} buffer pool: {consequence}; a larger innodb_buffer_pool_size would keep it in memory",
                format_size(size),
                format_size(pool)
            ),
            "the table within the buffer pool",
        )
    } else {
        let again = if after {
            ""
        } else {
            " (the InnoDB table is often larger: checked again after the copy)"
        };
        Verdict::pass(
            format!(
                "{} of {what} data and indexes fit the {} buffer pool{again}",
                format_size(size),
                format_size(pool)
            ),
            "the table within the buffer pool",
        )
    }
}
