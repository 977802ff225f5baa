//! A copy that runs out of space, said in one sentence instead of the server's raw text.
//!
//! The server reports a full disk or a full tablespace in several ways, depending on the engine, the statement
//! and what filled up: `ERROR 1114` (the table is full: InnoDB's system tablespace at the limit of
//! `innodb_data_file_path`, or a full disk), `ERROR 1005` / `1030` / `1026` / `1180` / `1501` carrying a handler
//! error (135 and 136: no more room in the data or index file; 28: ENOSPC; 122: EDQUOT), `ERROR 1021` (disk full).
//! They are told apart by the error code and the handler error number, the one number the server prints after
//! `errno:` / `Got error` (never by the words). `Got error 168` (an engine's generic error) is how InnoDB reports
//! a failed write on a full disk too, but it means many things: it counts as out of space only when the datadir's
//! filesystem is, measured now, short of what the copy needs.
//!
//! The sentence names the datadir's filesystem, its free space (statvfs, read when the failure happens), what the
//! copy needs (twice the MyISAM data and indexes, the pre-flight's estimate), what is full when the disk is not
//! (the system tablespace's cap, with `innodb_file_per_table=OFF`), and the way on. Nothing of the user's table
//! is touched by a failed copy; the shadow stays as any failed copy leaves it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::schema::TableInfo;
use crate::units::format_size;

/// What the sentence needs to know of the server, taken when the plan is built (the settings named here change
/// only with a restart).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Where {
    /// The datadir, when the server runs on this machine.
    pub datadir: Option<PathBuf>,
    /// The server's (first) tmpdir, when the server runs on this machine: where it sorts during a copy.
    #[serde(default)]
    pub tmpdir: Option<PathBuf>,
    pub file_per_table: bool,
    pub data_file_path: String,
}

/// How sure an error is to mean "out of space".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lack {
    /// The error says so by its code or handler error.
    Sure,
    /// A generic engine error: out of space only if the filesystem is.
    Perhaps,
    /// A temporary file the server sorts in (the tmpdir) could not be written.
    Temp,
}

/// Handler errors that mean no room: HA_ERR_RECORD_FILE_FULL, HA_ERR_INDEX_FILE_FULL, ENOSPC, EDQUOT.
const FULL_ERRNOS: [u32; 4] = [135, 136, 28, 122];
/// HA_ERR_GENERIC.
const GENERIC_ERRNO: u32 = 168;

/// The handler error number in an error that carries one (`errno: 135 "…"`, `Got error 168 "…"`).
pub fn handler_errno(message: &str) -> Option<u32> {
    ["errno: ", "Got error "].iter().find_map(|marker| {
        let at = message.find(marker)? + marker.len();
        let digits: String = message[at..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    })
}

/// Whether the server error `code` (with its text, for the handler error number) reports a lack of space.
pub fn classify(code: u16, message: &str) -> Option<Lack> {
    match code {
        // ER_RECORD_FILE_FULL, ER_DISK_FULL.
        1114 | 1021 => Some(Lack::Sure),
        // ER_TEMP_FILE_WRITE_FAILURE; ER_GET_TEMPORARY_ERRMSG with InnoDB's DB_TEMP_FILE_WRITE_FAIL (59), as a bulk
        // insert reports a full tmpdir.
        1878 => Some(Lack::Temp),
        1296 if handler_errno(message) == Some(59) => Some(Lack::Temp),
        // ER_CANT_CREATE_TABLE, ER_GET_ERRNO, ER_ERROR_ON_WRITE, ER_ERROR_DURING_COMMIT, ER_CANT_CREATE_HANDLER_FILE,
        // ER_ERROR_ON_WRITE (3).
        1005 | 1030 | 1026 | 1180 | 1501 | 3 => match handler_errno(message) {
            Some(n) if FULL_ERRNOS.contains(&n) => Some(Lack::Sure),
            Some(GENERIC_ERRNO) => Some(Lack::Perhaps),
            // ER_CANT_CREATE_HANDLER_FILE names no handler error: a file the server could not create.
            None if code == 1501 => Some(Lack::Perhaps),
            _ => None,
        },
        _ => None,
    }
}

/// Free and total bytes of the filesystem holding `path`.
pub fn filesystem(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and st a properly sized out-parameter.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| {
        let unit = st.f_frsize as u64;
        (st.f_bavail as u64 * unit, st.f_blocks as u64 * unit)
    })
}

/// What a copy of `t` needs, as the pre-flight estimates it: twice the MyISAM data and indexes.
pub fn needed(t: &TableInfo) -> u64 {
    (t.data_length + t.index_length) * 2
}

/// `e` in one sentence when it is the server running out of space while `doing`; otherwise `e` unchanged.
/// `then` is the way on once there is room. With `unchanged` (the failed statement changed nothing, as a failed
/// ALTER) it is a refusal.
pub fn explain(
    e: anyhow::Error,
    t: &TableInfo,
    at: &Where,
    doing: &str,
    then: &str,
    unchanged: bool,
) -> anyhow::Error {
    let Some((code, message)) = e
        .chain()
        .find_map(|c| match c.downcast_ref::<mysql::Error>() {
            Some(mysql::Error::MySqlError(me)) => Some((me.code, me.message.clone())),
            _ => c
                .downcast_ref::<mysql::MySqlError>()
                .map(|me| (me.code, me.message.clone())),
        })
    else {
        return e;
    };
    let Some(lack) = classify(code, &message) else {
        return e;
    };
    let need = needed(t);
    let (place, dir) = match lack {
        Lack::Temp => ("tmpdir", &at.tmpdir),
        _ => ("datadir", &at.datadir),
    };
    let fs = dir.as_ref().and_then(|d| filesystem(d).map(|s| (d, s)));
    if lack == Lack::Perhaps && !matches!(fs, Some((_, (free, _))) if free < need) {
        return e;
    }
    let error = match handler_errno(&message) {
        Some(n) => format!("ERROR {code}, engine error {n}"),
        None => format!("ERROR {code}"),
    };
    let sentence = sentence(t, at, place, &error, fs, doing, then);
    if unchanged {
        crate::error::refused(sentence)
    } else {
        anyhow::anyhow!(sentence)
    }
}

/// The fix for a bulk insert the server undid at COMMIT without an error (MariaDB 10.11 does so when the
/// space runs out during a bulk insert into an empty table: the `INSERT` reports every row, the `COMMIT`
/// succeeds, the table is empty, and neither a warning nor the error log says why). What the datadir's
/// filesystem and the system tablespace's cap say now is the evidence at hand; `then` is the way on.
pub fn undone_at_commit(t: &TableInfo, at: &Where, then: &str) -> String {
    let need = needed(t);
    let fs = at
        .datadir
        .as_ref()
        .and_then(|d| filesystem(d).map(|s| (d, s)));
    let capped = !at.file_per_table && at.data_file_path.contains(":max:");
    let (disk, fix) = match fs {
        Some((dir, (free, total))) if free < need => (
            format!("the datadir {} is on a filesystem with {} free of {}, and the copy needs about {}", dir.display(), format_size(free), format_size(total), format_size(need)),
            format!("free at least {} there", format_size(need - free)),
        ),
        Some((dir, (free, total))) if capped => (
            format!("the datadir {} has {} free of {}, but innodb_file_per_table=OFF puts the copy (about {}) in the system tablespace, which innodb_data_file_path={} caps", dir.display(), format_size(free), format_size(total), format_size(need), at.data_file_path),
            "raise or remove that max (a restart), or set innodb_file_per_table=ON".to_string(),
        ),
        Some((dir, (free, total))) => (
            format!("the datadir {} has {} free of {}, enough for the copy's {} now (space freed since, a limit outside the server such as a quota, or a duplicate in a UNIQUE key the pre-flight does not walk: hash, prefix or descending)", dir.display(), format_size(free), format_size(total), format_size(need)),
            "make sure the server can write about that much there".to_string(),
        ),
        None if capped => (
            format!("the datadir is not on this machine (its free space was not measured), and innodb_file_per_table=OFF puts the copy (about {}) in the system tablespace, which innodb_data_file_path={} caps", format_size(need), at.data_file_path),
            "free space there or raise that max".to_string(),
        ),
        None => (
            format!("the datadir is not on this machine (its free space was not measured); the copy needs about {}", format_size(need)),
            "free space on the datadir's filesystem".to_string(),
        ),
    };
    format!(
        "the server reported every row inserted but undid the bulk insert at COMMIT without an error, as MariaDB does when a bulk insert runs out of space: {disk}; {fix}, then {then} ({} itself is unchanged)",
        t.display()
    )
}

fn sentence(
    t: &TableInfo,
    at: &Where,
    place: &str,
    error: &str,
    fs: Option<(&PathBuf, (u64, u64))>,
    doing: &str,
    then: &str,
) -> String {
    let need = needed(t);
    let capped = place == "datadir" && !at.file_per_table && at.data_file_path.contains(":max:");
    let room = fs.is_some_and(|(_, (free, _))| free >= need);
    let (disk, fix) = match fs {
        Some((dir, (free, total))) => (
            format!(
                "the {place} {} is on a filesystem with {} free of {}",
                dir.display(),
                format_size(free),
                format_size(total)
            ),
            if capped && room {
                format!(
                    "so what is full is InnoDB's system tablespace, where innodb_file_per_table=OFF puts the copy and innodb_data_file_path={} caps it: raise or remove its max (a restart), or set innodb_file_per_table=ON",
                    at.data_file_path
                )
            } else {
                format!(
                    "free at least {} there (or move the {place} to a larger filesystem)",
                    format_size(need.saturating_sub(free))
                )
            },
        ),
        None => (
            format!("the {place} is not on this machine, so its free space was not measured"),
            if capped {
                format!("free space on the datadir's filesystem, or raise the max of innodb_data_file_path={} (innodb_file_per_table=OFF puts the copy in the system tablespace)", at.data_file_path)
            } else {
                format!("free space on the {place}'s filesystem")
            },
        ),
    };
    format!(
        "{}: the server ran out of space while {doing} ({error}): {disk}, and the copy needs about {}; {fix}, then {then} ({} itself is unchanged)",
        t.display(),
        format_size(need),
        t.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handler_error_is_the_number_after_errno_or_got_error() {
        assert_eq!(
            handler_errno(
                "Can't create table `d`.`t` (errno: 135 \"No more room in record file\")"
            ),
            Some(135)
        );
        assert_eq!(
            handler_errno(
                "Got error 168 \"Unknown (generic) error from engine\" from storage engine InnoDB"
            ),
            Some(168)
        );
        assert_eq!(handler_errno("The table 't' is full"), None);
    }

    #[test]
    fn full_by_code_or_handler_error_generic_only_perhaps() {
        assert_eq!(classify(1114, "The table 'x' is full"), Some(Lack::Sure));
        assert_eq!(classify(1021, ""), Some(Lack::Sure));
        assert_eq!(
            classify(
                1005,
                "Can't create table `d`.`t` (errno: 135 \"No more room in record file\")"
            ),
            Some(Lack::Sure)
        );
        assert_eq!(
            classify(
                1030,
                "Got error 28 \"No space left on device\" from storage engine InnoDB"
            ),
            Some(Lack::Sure)
        );
        assert_eq!(
            classify(
                1030,
                "Got error 168 \"Unknown (generic) error from engine\" from storage engine InnoDB"
            ),
            Some(Lack::Perhaps)
        );
        assert_eq!(
            classify(1501, "Failed to create specific handler file"),
            Some(Lack::Perhaps)
        );
        // A bulk insert whose sort file in the tmpdir could not be written (seen on a full tmpfs).
        assert_eq!(
            classify(1296, "Got error 59 'Temp file write failure' from InnoDB"),
            Some(Lack::Temp)
        );
        assert_eq!(
            classify(1296, "Got error 60 'Something else' from InnoDB"),
            None
        );
        // Other handler errors, and other errors, are not about space.
        assert_eq!(
            classify(
                1030,
                "Got error 1 \"Operation not permitted\" from storage engine"
            ),
            None
        );
        assert_eq!(classify(1062, "Duplicate entry 'a' for key 'u'"), None);
        assert_eq!(classify(1205, "Lock wait timeout exceeded"), None);
    }
}
