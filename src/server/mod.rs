//! Reaching and controlling a server: connection options, the facts a plan decides on, server control, option
//! files and the error log. (Named `server`, not `target`: `target/` is cargo's build directory, and readers and
//! tools take a source folder of that name for build output.) Nothing here knows a plan.

mod client_options;
pub mod connect;
mod connect_error;
pub mod control;
pub mod errorlog;
pub mod facts;
pub mod optionfile;
pub mod process;
pub mod sandbox;
pub mod topology;

pub use connect::{ConnSpec, Target};
pub use facts::ServerFacts;
