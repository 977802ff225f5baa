//! Which procedure a plan is: one name per procedure innops can plan and resume, typed, with the spelling
//! `plan.json`, the journal, `report.json` and the statements' `/* innops:<procedure>:<step> */` tags have
//! always used (run directories made before the type existed resume unchanged). The properties the runner and
//! the playbook need are asked of the procedure here, so neither branches on a name; what builds each plan is
//! the registry's (`crate::registry`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Procedure {
    #[serde(rename = "redo")]
    Redo,
    #[serde(rename = "readonly")]
    Readonly,
    #[serde(rename = "recover")]
    Recover,
    #[serde(rename = "convert")]
    Convert,
    #[serde(rename = "convert-drop-kept")]
    ConvertDropKept,
    #[serde(rename = "convert-rollback")]
    ConvertRollback,
    #[serde(rename = "deadlock")]
    Deadlock,
    #[serde(rename = "playbook")]
    Playbook,
    #[serde(rename = "drill")]
    Drill,
    #[serde(rename = "drill-setup")]
    DrillSetup,
    #[serde(rename = "drill-damage")]
    DrillDamage,
    #[serde(rename = "drill-figures")]
    DrillFigures,
    #[serde(rename = "experiment")]
    Experiment,
}

impl Procedure {
    /// Every procedure, in the order `innops --help` lists their commands.
    pub const ALL: [Procedure; 13] = [
        Procedure::Convert,
        Procedure::ConvertDropKept,
        Procedure::ConvertRollback,
        Procedure::Redo,
        Procedure::Readonly,
        Procedure::Recover,
        Procedure::Deadlock,
        Procedure::Experiment,
        Procedure::Playbook,
        Procedure::Drill,
        Procedure::DrillSetup,
        Procedure::DrillDamage,
        Procedure::DrillFigures,
    ];

    /// The name on disk and in statement tags (`convert-drop-kept`).
    pub fn name(self) -> &'static str {
        match self {
            Procedure::Redo => "redo",
            Procedure::Readonly => "readonly",
            Procedure::Recover => "recover",
            Procedure::Convert => "convert",
            Procedure::ConvertDropKept => "convert-drop-kept",
            Procedure::ConvertRollback => "convert-rollback",
            Procedure::Deadlock => "deadlock",
            Procedure::Playbook => "playbook",
            Procedure::Drill => "drill",
            Procedure::DrillSetup => "drill-setup",
            Procedure::DrillDamage => "drill-damage",
            Procedure::DrillFigures => "drill-figures",
            Procedure::Experiment => "experiment",
        }
    }

    /// The procedure of that name, if innops has one.
    pub fn named(name: &str) -> Option<Procedure> {
        Procedure::ALL.into_iter().find(|p| p.name() == name)
    }

    /// One of the drill's own members: only `innops drill` plans them, on its own sandbox.
    pub fn is_drill_member(self) -> bool {
        matches!(
            self,
            Procedure::DrillSetup | Procedure::DrillDamage | Procedure::DrillFigures
        )
    }

    /// A plan made of other procedures' plans (a playbook, the drill).
    pub fn combines_members(self) -> bool {
        matches!(self, Procedure::Playbook | Procedure::Drill)
    }

    /// Why no benchmark workload may run beside this procedure's plan, when that is the procedure's nature
    /// rather than a setting: the recovery works on a damaged server a load could crash.
    pub fn why_no_workload(self) -> Option<&'static str> {
        match self {
            Procedure::Recover => Some("a workload could crash a damaged server"),
            _ => None,
        }
    }
}

impl std::fmt::Display for Procedure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_procedure_keeps_its_on_disk_spelling_both_ways() {
        for p in Procedure::ALL {
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
            assert_eq!(serde_json::from_str::<Procedure>(&json).unwrap(), p);
            assert_eq!(Procedure::named(p.name()), Some(p));
        }
        // The spellings run directories written before the type existed carry.
        let old = [
            "redo",
            "readonly",
            "recover",
            "convert",
            "convert-drop-kept",
            "convert-rollback",
            "deadlock",
            "playbook",
            "drill",
            "drill-setup",
            "drill-damage",
            "drill-figures",
            "experiment",
        ];
        for name in old {
            let p: Procedure = serde_json::from_str(&format!("\"{name}\"")).unwrap();
            assert_eq!(p.name(), name);
        }
        assert_eq!(old.len(), Procedure::ALL.len());
    }

    #[test]
    fn an_unknown_name_is_no_procedure() {
        assert_eq!(Procedure::named("inspect"), None);
        assert!(serde_json::from_str::<Procedure>("\"drop-everything\"").is_err());
    }

    #[test]
    fn properties_are_asked_of_the_procedure() {
        let drill_members: Vec<_> = Procedure::ALL
            .into_iter()
            .filter(|p| p.is_drill_member())
            .collect();
        assert_eq!(
            drill_members,
            [
                Procedure::DrillSetup,
                Procedure::DrillDamage,
                Procedure::DrillFigures
            ]
        );
        assert!(Procedure::Playbook.combines_members() && Procedure::Drill.combines_members());
        assert!(!Procedure::Convert.combines_members());
        assert!(Procedure::Recover.why_no_workload().is_some());
        assert!(Procedure::Redo.why_no_workload().is_none());
    }
}
