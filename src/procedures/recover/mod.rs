//! `innops recover` (issue 10), being built: the evidence-first half — a copy of the stopped server's data
//! directory and a private server on it at a chosen `innodb_force_recovery` level. The dump engine and the
//! plan that ties them together come next; no subcommand exists until the procedure works end to end.

pub mod copy;
pub mod private;
