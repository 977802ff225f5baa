//! `innops deadlock`: reproduce a deadlock from a scenario file, deterministically, and capture and parse
//! InnoDB's report of it. Unlike the other procedures this is no step plan: a run creates a schema of its own,
//! runs the scenario's statements from one connection per session, and drops the schema again.

pub mod parse;
pub mod replay;
pub mod runner;
pub mod scenario;
pub mod watch;
