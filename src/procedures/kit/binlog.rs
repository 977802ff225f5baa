//! Where a run's writes go, chosen explicitly (`--binlog replicate|local`): through the binary log to every
//! replica (run on the primary), or onto this server alone (`sql_log_bin=0` in every session innops opens, its
//! bookkeeping included: for converting replicas one at a time before a failover). The default follows the
//! server's place in its topology, and the plan says which and why; the choices that would break replication
//! or surprise the DBA are refused with the command that does what they meant.

use serde::{Deserialize, Serialize};

use crate::server::topology::{Role, Topology};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Replicate,
    Local,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "replicate" => Ok(Mode::Replicate),
            "local" => Ok(Mode::Local),
            other => Err(format!("--binlog '{other}' is not one of replicate, local")),
        }
    }
}

/// What the DBA asked of a run's writes (`--binlog`, `--yes`), recorded in its plan so a resumed run decides
/// the same way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asked {
    #[serde(default)]
    pub binlog: Option<Mode>,
    #[serde(default)]
    pub yes: bool,
}

impl Asked {
    /// [`decide`] for what was asked, a refusal as innops's refused error (exit 1).
    pub fn decide(&self, topo: &Topology, what: &str) -> anyhow::Result<Decision> {
        decide(self.binlog, topo, self.yes, what).map_err(crate::error::refused)
    }
}

/// The session statement that keeps a local run's writes out of the binary log.
pub const LOCAL_SESSION: &str = "SET /* innops:binlog-local */ SESSION sql_log_bin = 0";

/// What a run asked and may do: the mode, the plan's note about it, and the statements every session of the
/// run starts with; or the refusal, in one sentence with the command that does what was meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub mode: Mode,
    pub note: String,
    pub session: Vec<String>,
}

/// Decide the mode of a run that writes `what` (e.g. "the conversion"), on a server with topology `topo`.
/// `yes`: the DBA confirmed a local run on a primary with replicas.
pub fn decide(
    asked: Option<Mode>,
    topo: &Topology,
    yes: bool,
    what: &str,
) -> Result<Decision, String> {
    let logged = topo.binlog.is_some();
    let local = |note: String| Decision {
        mode: Mode::Local,
        note,
        session: if logged {
            vec![LOCAL_SESSION.to_string()]
        } else {
            Vec::new()
        },
    };
    let replicate = |note: String| Decision {
        mode: Mode::Replicate,
        note,
        session: Vec::new(),
    };
    match topo.role() {
        Role::Replica => {
            let of = topo
                .sources
                .iter()
                .map(|s| format!("{}:{}", s.host, s.port))
                .collect::<Vec<_>>()
                .join(", ");
            match asked {
                Some(Mode::Local) => Ok(local(format!(
                    "binlog: local (--binlog local) — this server replicates from {of}: {what} stays on it (sql_log_bin=0{}, so no errant GTID), and its primary and the other replicas keep their tables until each is converted the same way",
                    if logged { "" } else { "; its binary log is off anyway" }
                ))),
                _ => Err(format!(
                    "this server replicates from {of}, so {what} here would be a change its primary never made (with the binary log on, an errant GTID): run it on the primary with --binlog replicate so every replica gets it, or pass --binlog local to change this replica alone (replicas first, then the primary after a failover)"
                )),
            }
        }
        Role::Primary => {
            let n = topo.replica_count();
            match asked {
                Some(Mode::Local) if yes => Ok(local(format!(
                    "binlog: local (--binlog local --yes) — {what} stays on this primary (sql_log_bin=0): its {n} replica(s) keep their tables as they are"
                ))),
                Some(Mode::Local) => Err(format!(
                    "--binlog local on a primary with {n} replica(s) changes this server alone and leaves them as they are: add --yes if that is what you mean (the replicas were converted first), or leave out --binlog local so {what} reaches them"
                )),
                _ => Ok(replicate(format!(
                    "binlog: replicate{} — {what} reaches this primary's {n} replica(s) through the binary log: copied in primary-key chunks, each its own transaction, paused while any replica lags more than --max-lag, and verified on each replica before and after the swap",
                    if asked.is_some() { " (--binlog replicate)" } else { " (the default on a primary)" }
                ))),
            }
        }
        Role::Logging => Ok(match asked {
            Some(Mode::Local) => local(format!(
                "binlog: local (--binlog local) — {what} is kept out of this server's binary log (sql_log_bin=0)"
            )),
            _ => replicate(format!(
                "binlog: replicate — {what} is written to this server's binary log (no replica reads it now)"
            )),
        }),
        Role::Standalone => Ok(match asked {
            Some(Mode::Local) => local(format!(
                "binlog: local — this server writes no binary log, so {what} stays on it either way"
            )),
            _ => replicate(format!(
                "binlog: replicate — this server writes no binary log, so {what} stays on it either way"
            )),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::topology::{Replica, Source};

    fn replica() -> Topology {
        Topology {
            binlog: Some("ROW".into()),
            sources: vec![Source {
                name: String::new(),
                host: "127.0.0.1".into(),
                port: 3306,
                io: "Yes".into(),
                sql_running: true,
                lag_s: Some(0),
                using_gtid: "Slave_Pos".into(),
                last_error: None,
            }],
            ..Topology::default()
        }
    }

    fn primary() -> Topology {
        Topology {
            binlog: Some("ROW".into()),
            replicas_connected: 2,
            replicas: vec![Replica {
                server_id: 2,
                host: "h".into(),
                port: 1,
            }],
            ..Topology::default()
        }
    }

    #[test]
    fn a_replica_needs_local_asked_and_then_stays_out_of_its_binlog() {
        let e = decide(None, &replica(), false, "the conversion").unwrap_err();
        assert!(
            e.contains("127.0.0.1:3306") && e.contains("--binlog local"),
            "{e}"
        );
        assert!(decide(Some(Mode::Replicate), &replica(), true, "x").is_err());
        let d = decide(Some(Mode::Local), &replica(), false, "x").unwrap();
        assert_eq!(d.mode, Mode::Local);
        assert_eq!(d.session, vec![LOCAL_SESSION.to_string()]);
        let mut no_log = replica();
        no_log.binlog = None;
        assert!(decide(Some(Mode::Local), &no_log, false, "x")
            .unwrap()
            .session
            .is_empty());
    }

    #[test]
    fn a_primary_replicates_by_default_and_goes_local_only_with_yes() {
        let d = decide(None, &primary(), false, "x").unwrap();
        assert_eq!(d.mode, Mode::Replicate);
        assert!(
            d.note.contains("2 replica(s)") && d.session.is_empty(),
            "{}",
            d.note
        );
        let e = decide(Some(Mode::Local), &primary(), false, "x").unwrap_err();
        assert!(e.contains("--yes"), "{e}");
        assert_eq!(
            decide(Some(Mode::Local), &primary(), true, "x")
                .unwrap()
                .mode,
            Mode::Local
        );
    }

    #[test]
    fn without_replicas_either_mode_is_taken_as_asked() {
        let mut t = primary();
        t.replicas.clear();
        t.replicas_connected = 0;
        assert_eq!(decide(None, &t, false, "x").unwrap().mode, Mode::Replicate);
        assert_eq!(
            decide(Some(Mode::Local), &t, false, "x")
                .unwrap()
                .session
                .len(),
            1
        );
        t.binlog = None;
        assert!(decide(Some(Mode::Local), &t, false, "x")
            .unwrap()
            .session
            .is_empty());
        assert!(Mode::parse("both").is_err());
    }
}
