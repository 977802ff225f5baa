//! The typed failures that decide innops's exit code.
//!
//! Anything that is not one of these is an internal error and exits 1 with the error chain. Code that needs to
//! tell one failure from another matches on [`Failure`], never on message text.

use std::fmt;

/// Exit codes, fixed by DESIGN.md.
pub const EXIT_OK: i32 = 0;
pub const EXIT_REFUSED: i32 = 1;
pub const EXIT_BAD_INPUT: i32 = 2;
pub const EXIT_POST_CHECK: i32 = 3;
/// The run finished every step but fell short of its aim: a recovery with lost rows or rows in doubt.
pub const EXIT_INCOMPLETE: i32 = 4;
pub const EXIT_INTERRUPTED: i32 = 130;

/// A failure a DBA must read: one sentence naming what was found and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Bad input, or the server cannot be reached (exit 2).
    BadInput(String),
    /// A check or guard refused; the failing step changed nothing (exit 1).
    Refused(String),
    /// A post-check failed after an action; a human must look (exit 3).
    PostCheck(String),
    /// Ctrl-C, stopped at a safe point (exit 130).
    Interrupted(String),
    /// Every step finished, but the result falls short of the aim: a recovery with lost rows or rows in
    /// doubt (exit 4), so a script knows without reading the manifest.
    Incomplete(String),
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::BadInput(_) => EXIT_BAD_INPUT,
            Failure::Refused(_) => EXIT_REFUSED,
            Failure::PostCheck(_) => EXIT_POST_CHECK,
            Failure::Interrupted(_) => EXIT_INTERRUPTED,
            Failure::Incomplete(_) => EXIT_INCOMPLETE,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Failure::BadInput(m)
            | Failure::Refused(m)
            | Failure::PostCheck(m)
            | Failure::Interrupted(m)
            | Failure::Incomplete(m) => m,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Failure {}

static JSON_ON_STDOUT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Note that the command printed its JSON document on stdout (a run's report, the drill's): an error after it
/// then goes to stderr only, so that stdout stays one JSON document.
pub fn note_json_printed() {
    JSON_ON_STDOUT.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Whether [`note_json_printed`] was called.
pub fn json_printed() -> bool {
    JSON_ON_STDOUT.load(std::sync::atomic::Ordering::SeqCst)
}

/// Shorthands that build an `anyhow::Error` carrying a [`Failure`].
pub fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    Failure::BadInput(msg.into()).into()
}
pub fn refused(msg: impl Into<String>) -> anyhow::Error {
    Failure::Refused(msg.into()).into()
}
pub fn post_check(msg: impl Into<String>) -> anyhow::Error {
    Failure::PostCheck(msg.into()).into()
}

/// The exit code for any error: the first [`Failure`] in its chain decides, anything else is 1.
pub fn exit_code_of(err: &anyhow::Error) -> i32 {
    err.chain()
        .find_map(|e| e.downcast_ref::<Failure>())
        .map(Failure::exit_code)
        .unwrap_or(EXIT_REFUSED)
}

/// The text shown for an error: a [`Failure`]'s own sentence, or the chain of contexts with its cause put in
/// words ([`describe`]). Every place that formats an error for a person (stderr, report text, journal reasons,
/// report.html) goes through here, so no Rust debug text (`MySqlError { … }`, `IoError { … }`) reaches anyone.
pub fn display_of(err: &anyhow::Error) -> String {
    if let Some(f) = err.downcast_ref::<Failure>() {
        return f.message().to_string();
    }
    let links: Vec<&(dyn std::error::Error + 'static)> = err.chain().collect();
    // A full disk is said first, with what was being written when it filled up.
    if let Some(pos) = links.iter().position(|e| is_disk_full(*e)) {
        let what: Vec<String> = links[..pos].iter().map(|e| e.to_string()).collect();
        let what = if what.is_empty() {
            String::new()
        } else {
            format!(" {}", what.join(": "))
        };
        return format!(
            "disk full{what}: free space on that filesystem, then run the command again (an interrupted run continues with `innops resume RUN_DIR`)"
        );
    }
    let mut parts: Vec<String> = Vec::new();
    for e in links {
        let text = describe(e);
        // anyhow's own wrappers repeat the inner text; say each thing once.
        if parts.last() != Some(&text) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

/// One link of an error chain in words: server errors as the mysql client prints them
/// (`ERROR 1146 (42S02): Table 'db.t' doesn't exist`), a lost connection as such, I/O errors without Rust's
/// debug text; anything else by its own `Display`.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    if let Some(f) = e.downcast_ref::<Failure>() {
        f.message().to_string()
    } else if let Some(m) = e.downcast_ref::<mysql::Error>() {
        describe_mysql(m)
    } else if let Some(m) = e.downcast_ref::<mysql::MySqlError>() {
        m.to_string()
    } else if let Some(io) = e.downcast_ref::<std::io::Error>() {
        describe_io(io)
    } else {
        e.to_string()
    }
}

/// The server closed the connection or is gone: the statement's fate is unknown and the run must be resumed.
const WENT_AWAY: &str = "check that it is running (its error log says why it stopped), then run the command again (an interrupted run continues with `innops resume RUN_DIR`)";

/// The detail of a [`describe_mysql`] "the server went away (DETAIL): check that it is running …" sentence, for a
/// caller that brings the server back itself and must not tell anyone to run the command again; any other
/// text as it is.
pub fn went_away_detail(sentence: &str) -> &str {
    let advice = format!("): {WENT_AWAY}");
    sentence
        .strip_prefix("the server went away (")
        .and_then(|rest| rest.strip_suffix(advice.as_str()))
        .unwrap_or(sentence)
}

/// Server error codes that mean the connection is gone: shutdown in progress, connection killed, and the
/// client-side "gone away" / "lost connection" codes.
const GONE_CODES: [u16; 5] = [1053, 1927, 2006, 2013, 4031];

/// A `mysql::Error` as one sentence.
pub fn describe_mysql(e: &mysql::Error) -> String {
    use mysql::{DriverError, Error};
    match e {
        Error::MySqlError(me) if GONE_CODES.contains(&me.code) => {
            format!("the server went away ({me}): {WENT_AWAY}")
        }
        Error::MySqlError(me) => me.to_string(),
        Error::IoError(io) => format!("the server went away ({}): {WENT_AWAY}", io_detail(io)),
        Error::CodecError(c) => {
            let detail = match std::error::Error::source(c)
                .and_then(|s| s.downcast_ref::<std::io::Error>())
            {
                Some(io) => io_detail(io),
                None => c.to_string(),
            };
            format!("the server went away ({detail}): {WENT_AWAY}")
        }
        Error::DriverError(d @ (DriverError::ConnectTimeout | DriverError::CouldNotConnect(_))) => {
            format!(
                "cannot connect to the server ({}): check that it is running and the connection options",
                first_lower(&d.to_string())
            )
        }
        Error::DriverError(DriverError::PacketOutOfSync | DriverError::UnexpectedPacket) => {
            format!("the connection to the server broke (the replies are out of step): {WENT_AWAY}")
        }
        Error::DriverError(d) => format!("the MySQL client library refused the request ({}): this is a bug in innops, please report it", first_lower(&d.to_string())),
        Error::UrlError(u) => format!("the connection options are not valid ({u}): check them"),
        Error::FromValueError(_) | Error::FromRowError(_) => "the server returned a value of an unexpected type: this is a bug in innops, please report it with the server version".to_string(),
        #[allow(unreachable_patterns)]
        other => first_lower(&strip_wrapper(&other.to_string())),
    }
}

/// A `mysql::Error`'s own text without the crate's `Variant { … }` wrapper, for sentences that add their own
/// context (connection failures).
pub fn mysql_detail(e: &mysql::Error) -> String {
    use mysql::Error;
    match e {
        Error::MySqlError(me) => me.to_string(),
        Error::IoError(io) => io_detail(io),
        Error::DriverError(d) => first_lower(&d.to_string()),
        Error::UrlError(u) => u.to_string(),
        other => first_lower(&strip_wrapper(&other.to_string())),
    }
}

/// `TlsError { … }` and friends: the text between the braces.
fn strip_wrapper(s: &str) -> String {
    match (s.find(" { "), s.strip_suffix(" }")) {
        (Some(i), Some(inner)) if i < inner.len() => inner[i + 3..].to_string(),
        _ => s.to_string(),
    }
}

fn first_lower(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) if c.clone().next().is_some_and(|n| n.is_lowercase()) => {
            f.to_lowercase().chain(c).collect()
        }
        _ => s.to_string(),
    }
}

/// ENOSPC (or a quota) anywhere: the disk is full.
fn is_disk_full(e: &(dyn std::error::Error + 'static)) -> bool {
    let io =
        e.downcast_ref::<std::io::Error>()
            .or_else(|| match e.downcast_ref::<mysql::Error>() {
                Some(mysql::Error::IoError(io)) => Some(io),
                _ => None,
            });
    io.is_some_and(|io| {
        matches!(io.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
            || io.kind() == std::io::ErrorKind::StorageFull
    })
}

/// An I/O error's text without the `(os error N)` suffix.
pub fn io_detail(io: &std::io::Error) -> String {
    let s = io.to_string();
    let s = match s.rfind(" (os error ") {
        Some(i) if s.ends_with(')') => s[..i].to_string(),
        _ => s,
    };
    first_lower(&s)
}

/// An I/O error as words; a full disk says so.
pub fn describe_io(io: &std::io::Error) -> String {
    if is_disk_full(io) {
        return "the disk is full: free space on that filesystem and run the command again"
            .to_string();
    }
    io_detail(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn each_failure_maps_to_its_design_exit_code() {
        assert_eq!(exit_code_of(&bad_input("x")), 2);
        assert_eq!(exit_code_of(&refused("x")), 1);
        assert_eq!(exit_code_of(&post_check("x")), 3);
        assert_eq!(exit_code_of(&Failure::Interrupted("x".into()).into()), 130);
        assert_eq!(exit_code_of(&Failure::Incomplete("x".into()).into()), 4);
        assert_eq!(exit_code_of(&anyhow::anyhow!("internal")), 1);
    }

    fn server_error(code: u16, state: &str, message: &str) -> mysql::Error {
        mysql::Error::MySqlError(mysql::MySqlError {
            code,
            state: state.into(),
            message: message.into(),
        })
    }

    /// No Rust debug text: no `Name { … }`, no `Some(…)`, no `(os error N)`.
    fn assert_readable(text: &str) {
        for bad in ["{ ", " }", "Some(", "None", "Error {", "os error"] {
            assert!(!text.contains(bad), "{bad:?} in {text:?}");
        }
    }

    #[test]
    fn a_server_error_reads_as_the_mysql_client_prints_it() {
        let e = server_error(1146, "42S02", "Table 'app.t' doesn't exist");
        let err = anyhow::Error::from(e).context("counting the rows of app.t");
        let text = display_of(&err);
        assert_eq!(
            text,
            "counting the rows of app.t: ERROR 1146 (42S02): Table 'app.t' doesn't exist"
        );
        assert_readable(&text);
        assert_eq!(exit_code_of(&err), 1);
    }

    #[test]
    fn a_lost_connection_says_the_server_went_away_and_what_to_do() {
        for e in [
            mysql::Error::server_disconnected(),
            mysql::Error::IoError(std::io::Error::from_raw_os_error(libc::ECONNRESET)),
            server_error(1927, "70100", "Connection was killed"),
            server_error(1053, "08S01", "Server shutdown in progress"),
        ] {
            let text = display_of(&anyhow::Error::from(e));
            assert!(text.starts_with("the server went away ("), "{text}");
            assert!(text.contains("check that it is running"), "{text}");
            assert!(text.contains("innops resume"), "{text}");
            assert_readable(&text);
        }
    }

    #[test]
    fn the_detail_of_a_lost_connection_drops_the_advice_to_run_again() {
        let lost = describe_mysql(&server_error(
            2013,
            "HY000",
            "Lost connection to server during query",
        ));
        assert_eq!(
            went_away_detail(&lost),
            "ERROR 2013 (HY000): Lost connection to server during query"
        );
        assert_eq!(went_away_detail("anything else"), "anything else");
    }

    #[test]
    fn driver_and_conversion_errors_are_sentences() {
        for e in [
            mysql::Error::DriverError(mysql::DriverError::ConnectTimeout),
            mysql::Error::DriverError(mysql::DriverError::PacketOutOfSync),
            mysql::Error::DriverError(mysql::DriverError::MismatchedStmtParams(2, 1)),
            mysql::Error::FromValueError(mysql::Value::NULL),
        ] {
            let text = display_of(&anyhow::Error::from(e));
            assert_readable(&text);
            assert!(text.contains(": "), "says what to do: {text}");
        }
    }

    #[test]
    fn a_full_disk_says_so_and_names_the_file() {
        // /dev/full answers every write with ENOSPC.
        let err = std::fs::write("/dev/full", "x")
            .context("writing /dev/full")
            .unwrap_err();
        let text = display_of(&err);
        assert!(
            text.starts_with("disk full writing /dev/full: free space"),
            "{text}"
        );
        assert_readable(&text);
        let bare = display_of(&std::io::Error::from_raw_os_error(libc::ENOSPC).into());
        assert!(bare.starts_with("disk full: free space"), "{bare}");
    }

    #[test]
    fn other_io_errors_lose_the_os_error_suffix() {
        let err = std::fs::read("/nonexistent/x")
            .context("reading /nonexistent/x")
            .unwrap_err();
        let text = display_of(&err);
        assert_eq!(text, "reading /nonexistent/x: no such file or directory");
    }

    #[test]
    fn a_failure_wrapped_in_context_still_decides_the_exit_code() {
        let err = Err::<(), _>(bad_input("no such socket"))
            .context("connecting")
            .unwrap_err();
        assert_eq!(exit_code_of(&err), 2);
    }
}
