//! One module per procedure, each turning validated settings plus [`ServerFacts`] into a [`Plan`]. Which plan a
//! [`Procedure`] names, for `resume`, the playbook and the drill, is the registry's (`crate::registry`).

pub mod convert;
pub mod deadlock;
pub mod drill;
pub mod experiment;
pub mod inspect;
pub mod kit;
pub mod readonly;
pub mod recover;
pub mod redo;

use std::path::PathBuf;

use crate::plan::{PlanHeader, Procedure};
use crate::server::connect::{ConnSpec, Target};
use crate::server::control::ControlSpec;
use crate::server::facts::ServerFacts;

/// What every procedure may use besides its own settings.
#[derive(Debug, Clone)]
pub struct PlanEnv {
    pub conn: ConnSpec,
    pub target: Target,
    pub control: Option<ControlSpec>,
    /// The server's option file (what it reads at startup), when known.
    pub option_file: Option<PathBuf>,
    /// innops's drop-in, or why it cannot be placed.
    pub dropin: Result<PathBuf, String>,
    /// Seconds each benchmark runs; None skips them.
    pub bench_time: Option<u64>,
    /// The server's error log and its length when the command started: checks read only what the server
    /// wrote since (an automatic table repair, say).
    pub error_log: Option<(PathBuf, u64)>,
}

impl PlanEnv {
    /// The flags that reach this server and control it, as the user gave them (never the password), for
    /// commands innops suggests: they must run as printed.
    pub fn flags(&self) -> String {
        let mut out: Vec<String> = Vec::new();
        match &self.control {
            Some(ControlSpec::Sandbox { root, name }) => {
                out.extend(["--sandbox".into(), name.clone()]);
                if *root != crate::server::sandbox::default_root() {
                    out.extend(["--sandbox-root".into(), root.display().to_string()]);
                }
                return shell_words::join(out);
            }
            Some(ControlSpec::Systemd { unit }) => {
                out.extend(["--service".into(), format!("systemd:{unit}")])
            }
            Some(ControlSpec::Commands { start, stop }) => {
                out.extend(["--start-cmd".into(), start.clone()]);
                if let Some(stop) = stop {
                    out.extend(["--stop-cmd".into(), stop.clone()]);
                }
            }
            None => {}
        }
        out.extend(self.conn.flags());
        if let Some(f) = &self.option_file {
            if !matches!(self.control, Some(ControlSpec::Systemd { .. })) {
                out.extend(["--config-file".into(), f.display().to_string()]);
            }
        }
        shell_words::join(out)
    }

    /// The header of a plan of `procedure`.
    pub fn header(
        &self,
        procedure: Procedure,
        facts: &ServerFacts,
        params: serde_json::Value,
        mut notes: Vec<String>,
    ) -> PlanHeader {
        // Every plan says where the server stands in replication, and so what its writes will do there.
        notes.push(format!("topology: {}", facts.topology.describe()));
        PlanHeader {
            procedure,
            target: self.target.label.clone(),
            server: facts.version_string.clone(),
            params,
            conn: self.conn.clone(),
            control: self.control.clone(),
            notes,
            facts: Some(facts.clone()),
        }
    }
}
