//! `innops deadlock`: reproduce a deadlock from a scenario file, deterministically, and capture and parse
//! InnoDB's report of it. `innops deadlock run` without `--detect` is no step plan: a run creates a schema of its
//! own (holding its named lock), runs the scenario's statements from one connection per session, and drops the
//! schema again. With `--detect`, which changes a global, in a playbook and in the drill, the same run is one step
//! of a plan ([`plan`]) with a run directory, checked by what the server did.

pub mod parse;
pub mod plan;
pub mod replay;
pub mod runner;
pub mod scenario;
pub mod show;
pub mod verdict;
pub mod watch;
