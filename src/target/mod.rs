//! Reaching and controlling a server: connection options, the facts a plan decides on, server control, option
//! files and the error log.

pub mod connect;
pub mod control;
pub mod errorlog;
pub mod facts;
pub mod optionfile;

pub use connect::{ConnSpec, Target};
pub use facts::ServerFacts;
