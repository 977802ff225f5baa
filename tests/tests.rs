//! The one integration-test binary: every test runs against a real mariadbd in a sandbox of its own.

mod bench;
mod cli;
mod common;
mod connect_inspect;
mod convert;
mod deadlock;
mod docker;
mod fleet;
mod impact;
mod lock;
mod online;
mod optionfiles;
mod playbook;
mod readonly;
mod recover;
mod recover_copy;
mod recover_layouts;
mod recover_safety;
mod recover_uncommitted;
mod recover_verify;
mod redo;
mod report_browser;
mod sandbox_runs;
mod terminal_output;
mod topology;
mod verdicts;
