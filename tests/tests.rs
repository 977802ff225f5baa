//! The one integration-test binary: every test runs against a real mariadbd in a sandbox of its own.

mod bench;
mod common;
mod convert;
mod docker;
mod foundation;
mod recover;
mod redo;
mod verdicts;
