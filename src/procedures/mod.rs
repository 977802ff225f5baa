//! One module per procedure, each turning validated settings plus [`ServerFacts`] into a [`Plan`]. Which plan a
//! [`Procedure`] names, for `resume`, the playbook and the drill, is the registry's (`crate::registry`).

pub mod convert;
pub mod deadlock;
pub mod drill;
pub mod inspect;
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
        fn sh(s: &str) -> String {
            if !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/._-:=@,+".contains(c))
            {
                s.to_string()
            } else {
                format!("'{}'", s.replace('\'', "'\\''"))
            }
        }
        let mut out = Vec::new();
        match &self.control {
            Some(ControlSpec::Sandbox { root, name }) => {
                out.push(format!("--sandbox {}", sh(name)));
                if *root != crate::server::sandbox::default_root() {
                    out.push(format!(
                        "--sandbox-root {}",
                        sh(&root.display().to_string())
                    ));
                }
                return out.join(" ");
            }
            Some(ControlSpec::Systemd { unit }) => {
                out.push(format!("--service systemd:{}", sh(unit)))
            }
            Some(ControlSpec::Commands { start, stop }) => {
                out.push(format!("--start-cmd {}", sh(start)));
                if let Some(stop) = stop {
                    out.push(format!("--stop-cmd {}", sh(stop)));
                }
            }
            None => {}
        }
        let c = &self.conn;
        if let Some(s) = &c.socket {
            out.push(format!("--socket {}", sh(&s.display().to_string())));
        }
        if let Some(h) = &c.host {
            out.push(format!("--host {}", sh(h)));
        }
        if let Some(p) = c.port {
            out.push(format!("--port {p}"));
        }
        if let Some(u) = &c.user {
            out.push(format!("--user {}", sh(u)));
        }
        if let Some(f) = &c.defaults_file {
            out.push(format!("--defaults-file {}", sh(&f.display().to_string())));
        }
        if let Some(f) = &self.option_file {
            if !matches!(self.control, Some(ControlSpec::Systemd { .. })) {
                out.push(format!("--config-file {}", sh(&f.display().to_string())));
            }
        }
        out.join(" ")
    }

    /// The header of a plan of `procedure`, which must be one innops has ([`Procedure::named`]): each
    /// procedure's module names itself, and the registry's test builds every one.
    pub fn header(
        &self,
        procedure: &str,
        facts: &ServerFacts,
        params: serde_json::Value,
        notes: Vec<String>,
    ) -> PlanHeader {
        let procedure = Procedure::named(procedure).unwrap_or_else(|| {
            panic!("{procedure:?} is not a procedure of crate::plan::Procedure")
        });
        self.header_of(procedure, facts, params, notes)
    }

    /// The header of a plan of `procedure`.
    pub fn header_of(
        &self,
        procedure: Procedure,
        facts: &ServerFacts,
        params: serde_json::Value,
        notes: Vec<String>,
    ) -> PlanHeader {
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
