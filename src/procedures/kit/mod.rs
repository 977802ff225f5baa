//! The kit every procedure that checks or restarts a server shares (issue 24, items 4 and 5).
//!
//! - [`checks`]: the checks several preflights make the same way (version supported, control present, drop-in
//!   writable, free space, not in forced recovery, error-log lines since the action). Each is a named function
//!   returning a [`crate::plan::Check`]; the decision inside is a plain function over facts, unit-tested without a
//!   server, as [`crate::plan::guard`] does for the load decision.
//! - [`restart`]: stop, start and the checks that prove them (clean shutdown, accepts connections), the journal
//!   look-ups a check of a restart needs (the error-log offset its own action recorded), and the waits around
//!   them. Used by redo, readonly and recover (its original server, its `--in-place` restarts). `deadlock
//!   --detect` does not restart: `innodb_deadlock_detect` is dynamic, so it uses none of this.
//! - [`replication`]: what a preflight reads of the topology (a replica? replicas reading the binlog?), the
//!   place the replication-facts issue grows.
//! - [`binlog`]: where a run's writes go (`--binlog replicate|local`), decided from the server's place in its
//!   topology; [`replicas`]: the replicas a run on a primary watches for lag and verifies.
//! - [`dropin`]: innops's drop-in option file as a restart reads it: what the option files give at the next
//!   start, the backup a failed restart puts back.
//!
//! Before this module these lived in `redo.rs` (readonly imported seven helpers from it) or were written again
//! as closures in each preflight.

pub mod binlog;
pub mod checks;
pub mod dropin;
pub mod replicas;
pub mod replication;
pub mod restart;
