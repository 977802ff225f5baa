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
}

impl Failure {
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::BadInput(_) => EXIT_BAD_INPUT,
            Failure::Refused(_) => EXIT_REFUSED,
            Failure::PostCheck(_) => EXIT_POST_CHECK,
            Failure::Interrupted(_) => EXIT_INTERRUPTED,
        }
    }

    pub fn message(&self) -> &str {
        match self {
            Failure::BadInput(m)
            | Failure::Refused(m)
            | Failure::PostCheck(m)
            | Failure::Interrupted(m) => m,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Failure {}

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

/// The text shown for an error: a [`Failure`]'s own sentence, or the whole chain for anything else.
pub fn display_of(err: &anyhow::Error) -> String {
    match err.downcast_ref::<Failure>() {
        Some(f) => f.message().to_string(),
        None => format!("{err:#}"),
    }
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
        assert_eq!(exit_code_of(&anyhow::anyhow!("internal")), 1);
    }

    #[test]
    fn a_failure_wrapped_in_context_still_decides_the_exit_code() {
        let err = Err::<(), _>(bad_input("no such socket"))
            .context("connecting")
            .unwrap_err();
        assert_eq!(exit_code_of(&err), 2);
    }
}
