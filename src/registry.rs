//! The one registry of procedures: which plan a [`Procedure`] builds again from its `plan.json` header. `innops
//! resume` asks it for the run's plan; a playbook's and the drill's `resume` ask it for each member's. The
//! match is exhaustive, so a procedure added to the enum without a way to rebuild it does not compile.
//!
//! It sits above the playbook (a playbook's plan is rebuilt by the playbook, which is handed this function to
//! rebuild its members) and below the drill and the command layer.

use crate::plan::{Plan, PlanHeader, Procedure};
use crate::procedures::{convert, deadlock, drill, experiment, readonly, recover, redo, PlanEnv};
use crate::server::facts::ServerFacts;

/// Build a plan again from a `plan.json` header (for `resume`), on the facts the server shows now.
pub fn rebuild(header: &PlanHeader, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    let params = || header.params.clone();
    match header.procedure {
        Procedure::Redo => redo::plan(&serde_json::from_value(params())?, facts, env),
        Procedure::Readonly => readonly::plan(&serde_json::from_value(params())?, facts, env),
        Procedure::Recover => recover::plan(&serde_json::from_value(params())?, facts, env),
        Procedure::Convert => convert::plan(&serde_json::from_value(params())?, facts, env),
        Procedure::ConvertDropKept => {
            let p: convert::drop_kept::DropKeptParams = serde_json::from_value(params())?;
            convert::drop_kept::plan(&p.schema, &p.table, &p.asked, facts, env)
        }
        Procedure::ConvertRollback => {
            let p: convert::rollback::RollbackParams = serde_json::from_value(params())?;
            convert::rollback::plan(&p.schema, &p.table, &p.asked, facts, env)
        }
        Procedure::Deadlock => deadlock::plan::plan(&serde_json::from_value(params())?, facts, env),
        Procedure::Experiment => experiment::plan(&serde_json::from_value(params())?, facts, env),
        Procedure::Playbook | Procedure::Drill => {
            crate::playbook::rebuild(header, facts, env, &rebuild)
        }
        Procedure::DrillSetup | Procedure::DrillDamage | Procedure::DrillFigures => {
            drill::rebuild(header, facts, env)
        }
    }
}
