//! One module per procedure, each turning validated settings plus [`ServerFacts`] into a [`Plan`]; and the
//! registry `resume` uses to build a plan again from its `plan.json`.

pub mod convert;
pub mod inspect;
pub mod redo;

use std::path::PathBuf;

use crate::plan::{Plan, PlanHeader};
use crate::target::connect::{ConnSpec, Target};
use crate::target::control::ControlSpec;
use crate::target::facts::ServerFacts;

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
}

impl PlanEnv {
    pub fn header(
        &self,
        procedure: &str,
        facts: &ServerFacts,
        params: serde_json::Value,
        notes: Vec<String>,
    ) -> PlanHeader {
        PlanHeader {
            procedure: procedure.to_string(),
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

/// Build a plan again from a `plan.json` header (for `resume`).
pub fn rebuild(header: &PlanHeader, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    match header.procedure.as_str() {
        "redo" => {
            let params: redo::RedoParams = serde_json::from_value(header.params.clone())?;
            redo::plan(&params, facts, env)
        }
        "convert" => {
            let params: convert::ConvertParams = serde_json::from_value(header.params.clone())?;
            convert::plan(&params, facts, env)
        }
        "convert-rollback" => {
            let p: convert::rollback::RollbackParams = serde_json::from_value(header.params.clone())?;
            convert::rollback::plan(&p.schema, &p.table, facts, env)
        }
        other => Err(crate::error::bad_input(format!(
            "the run directory holds a '{other}' run, which this innops cannot resume: use the innops version that started it"
        ))),
    }
}
