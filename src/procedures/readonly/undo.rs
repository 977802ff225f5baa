//! The undo half of `innops readonly --undo`: what only the way back to read-write checks. The server must come
//! back with `read_only` off and, where a forward run shrank the redo log (`--min-redo`), with the redo size it
//! had before (recorded beside the drop-in and journaled by the drop-in step). The steps themselves are the
//! shared ones in [`super::steps`].

use crate::plan::{Check, Verdict};
use crate::procedures::kit::checks::global_u64;
use crate::procedures::kit::restart::journaled;
use crate::units::format_size;

/// The redo option a forward run recorded, if it is one innops ever records: anything else in the record is not
/// innops's and is refused rather than queried.
pub(super) fn recorded_redo_key(key: &str) -> Option<&'static str> {
    match key {
        "innodb_log_file_size" => Some("innodb_log_file_size"),
        "innodb_redo_log_capacity" => Some("innodb_redo_log_capacity"),
        _ => None,
    }
}

/// `read_only` as it was before the first forward run (a replica's own configuration often sets it): from the
/// record the drop-in step journaled when the step runs, else as the plan read the state file.
pub(super) fn read_only_as_before(planned: bool) -> Check {
    Check::new("read_only as before innops readonly", move |ctx| {
        let want = journaled(ctx, "dropin")
            .and_then(|r| r.get("state")?.get("read_only_before")?.as_bool())
            .unwrap_or(planned);
        let v = global_u64(ctx, "read_only")? != 0;
        Ok(Verdict::check(
            v == want,
            format!("read_only={}", u8::from(v)),
            u8::from(want).to_string(),
            if want {
                "read_only was on before innops readonly and is off now: check which option file set it"
            } else {
                "read_only is still on: check which option file sets it"
            },
        ))
    })
}

/// The server runs with the redo size it had before `--min-redo` (passes when no forward run changed it).
pub(super) fn redo_size_restored() -> Check {
    Check::new("redo size as before --min-redo", |ctx| {
        let want = journaled(ctx, "dropin").and_then(|r| {
            let st = r.get("state")?;
            Some((
                st.get("redo_key")?.as_str()?.to_string(),
                st.get("redo_running_before")?.as_u64()?,
            ))
        });
        let Some((key, size)) = want else {
            return Ok(Verdict::pass("not changed by innops readonly", "unchanged"));
        };
        let Some(key) = recorded_redo_key(&key) else {
            return Ok(Verdict::fail(
                format!("the record names {key}"),
                "a redo size option",
                "innops's record beside the drop-in was edited: check the redo size by hand",
            ));
        };
        let cur = global_u64(ctx, key)?;
        Ok(Verdict::check(
            cur == size,
            format_size(cur),
            format_size(size),
            "the server started with another redo size than it had before --min-redo: check which option file sets it",
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_two_redo_options_are_read_back_from_the_record() {
        assert_eq!(
            recorded_redo_key("innodb_log_file_size"),
            Some("innodb_log_file_size")
        );
        assert_eq!(
            recorded_redo_key("innodb_redo_log_capacity"),
            Some("innodb_redo_log_capacity")
        );
        // A hand-edited record never reaches a query.
        assert_eq!(
            recorded_redo_key("innodb_log_file_size; DROP TABLE t"),
            None
        );
        assert_eq!(recorded_redo_key("read_only"), None);
    }
}
