//! innops: MySQL/MariaDB DBA procedures as guarded step plans. The binary is a thin shell over this library so
//! tests and benches drive the same code.

pub mod bench;
pub mod buildinfo;
pub mod cli;
pub mod commands;
pub mod drill;
pub mod dump;
pub mod error;
pub mod files;
#[cfg(test)]
mod layers;
pub mod pages;
pub mod plan;
pub mod playbook;
pub mod procedures;
pub mod progress;
pub mod registry;
pub mod server;
pub mod sql;
pub mod testhooks;
pub mod units;
