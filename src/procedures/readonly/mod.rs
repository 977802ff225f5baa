//! `innops readonly` (issue 11): prepare a server for read-only InnoDB, and `--undo` it.
//!
//! The path follows shared/FACTS.md §3: change buffering off where it matters, an online pre-flush (dirty pages
//! and purge history drained while the server still serves, so the downtime is short), a slow shutdown
//! (`innodb_fast_shutdown=0`, recorded with the history length just before `SHUTDOWN`, since no log line marks
//! it), proof of a clean shutdown (the `Shutdown complete` line since innops's own `SHUTDOWN`, the pid file
//! gone), `innodb_read_only=1` in innops's drop-in, a start, and checks of the live state: the variable, a
//! write probe refused with the read-only error, the `Started in read only mode` line. A start that fails (a
//! crash-recovery refusal after an unclean stop) puts the previous drop-in back and starts the server normally.

//!
//! The forward direction's own steps are in [`forward`], the undo's own checks in [`undo`], and the steps both
//! share (stop, drop-in, start, verify) in [`steps`].

mod forward;
mod replica;
mod steps;
mod undo;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::bad_input;
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::kit::checks::{self, ControlNeed, SpaceNeed};
use crate::procedures::kit::dropin::effective_config;
use crate::procedures::kit::restart;
use crate::procedures::PlanEnv;
use crate::server::facts::ServerFacts;
use crate::server::optionfile;
use crate::sql::Queryable;
use crate::units::format_size;

pub use forward::{change_buffering_note, estimate, min_redo};
use forward::{change_buffering_step, min_redo_step, preflush_step, probe_table_step};
use steps::{dropin_step, start_step, stop_step, verify_step};

/// The schema and table of the write probe innops creates before the shutdown.
pub const PROBE_SCHEMA: &str = "innops";
pub const PROBE_TABLE: &str = "readonly_probe";
/// MariaDB/MySQL `ER_OPEN_AS_READONLY`: `Table '…' is read only`.
pub const ER_OPEN_AS_READONLY: u16 = 1036;
/// A transaction open this long (seconds) refuses the plan: its rollback at shutdown would lengthen the downtime
/// and end someone's work.
pub const LONG_TRX_S: u64 = 60;
/// Free space the restart needs at least (buffer-pool dump, temporary tablespace).
const MIN_FREE: u64 = 64 << 20;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ReadonlyParams {
    /// Return the server to read-write (and to the redo size it had).
    pub undo: bool,
    /// Shrink the redo log to the smallest size the version accepts online before the shutdown.
    pub min_redo: bool,
    /// Also `read_only=1`, so MyISAM/Aria writes, GRANT and CREATE USER are refused too.
    pub sql_read_only: bool,
    /// Flush dirty pages and drain purge online before the shutdown.
    pub preflush: bool,
    /// Bound of each pre-flush wait, seconds.
    pub preflush_timeout_s: u64,
}

/// What the forward run records beside the drop-in, so `--undo` can give back what it changed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct State {
    /// The redo size option innops changed, its value in the drop-in before (None: unset), and the size the
    /// server ran with before.
    pub redo_key: Option<String>,
    pub redo_dropin_before: Option<String>,
    pub redo_running_before: Option<u64>,
    pub sql_read_only: bool,
    /// On a replica: where the forward run stopped replication, for `--undo` to start it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<replica::Frozen>,
    /// `read_only` before the first forward run (a replica is often read_only by its own configuration):
    /// `--undo` expects it back, not off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_before: Option<bool>,
}

/// The state file beside the drop-in (not a `.cnf`: `!includedir` never reads it).
pub fn state_path(dropin: &Path) -> PathBuf {
    dropin.with_file_name("innops-readonly.json")
}

fn read_state(dropin: &Path) -> Option<State> {
    serde_json::from_str(&std::fs::read_to_string(state_path(dropin)).ok()?).ok()
}

/// What the state file holds after a forward run that recorded `new`, when an earlier run recorded `old`: the
/// earlier record wins for what both changed (it has the values from before innops), and the new one adds what
/// only it changed.
fn merge_state(old: Option<State>, new: State) -> State {
    let Some(old) = old else { return new };
    let redo = if old.redo_key.is_some() {
        (
            old.redo_key,
            old.redo_dropin_before,
            old.redo_running_before,
        )
    } else {
        (
            new.redo_key,
            new.redo_dropin_before,
            new.redo_running_before,
        )
    };
    State {
        redo_key: redo.0,
        redo_dropin_before: redo.1,
        redo_running_before: redo.2,
        sql_read_only: old.sql_read_only || new.sql_read_only,
        // The first stop is where replication really stopped; a later run found it stopped already.
        replication: old.replication.or(new.replication),
        read_only_before: old.read_only_before.or(new.read_only_before),
    }
}

/// Everything the steps share.
#[derive(Debug, Clone)]
struct Ro {
    p: ReadonlyParams,
    dropin: Result<PathBuf, String>,
    option_file: Option<PathBuf>,
    pid_file: Option<PathBuf>,
    datadir: Option<PathBuf>,
    min_redo: Option<(u64, &'static str)>,
    redo_before: Option<u64>,
    /// The server's version string: which version groups of the option files it reads.
    version: String,
    flags: String,
    /// On a replica: the startup option that keeps replication stopped while read-only.
    replica: Option<&'static str>,
    mariadb: bool,
    /// `read_only` as the server runs now (a forward run records it for `--undo`).
    read_only_now: bool,
    /// `--undo`: the `read_only` the server must come back with (what it had before the first forward run).
    read_only_after_undo: bool,
}

impl Ro {
    fn rerun(&self) -> String {
        let mut parts = vec!["innops readonly".to_string()];
        if self.p.undo {
            parts.push("--undo".into());
        }
        if self.p.min_redo {
            parts.push("--min-redo".into());
        }
        if self.p.sql_read_only {
            parts.push("--sql-read-only".into());
        }
        if !self.flags.is_empty() {
            parts.push(self.flags.clone());
        }
        parts.push("--execute".into());
        parts.join(" ")
    }

    /// The settings the drop-in gets.
    fn settings(&self, state: Option<&State>) -> Vec<(String, Option<String>)> {
        if self.p.undo {
            let mut s = vec![
                ("innodb_read_only".to_string(), None),
                ("read_only".to_string(), None),
            ];
            if let Some(st) = state {
                if let Some(k) = &st.redo_key {
                    s.push((k.clone(), st.redo_dropin_before.clone()));
                }
                // Only an option innops ever records: a hand-edited record is not followed.
                if let Some(k) = st.replication.as_ref().and_then(|f| {
                    ["skip_slave_start", "skip_replica_start"]
                        .into_iter()
                        .find(|k| *k == f.skip_key)
                }) {
                    s.push((k.to_string(), None));
                }
            }
            s
        } else {
            let mut s = vec![("innodb_read_only".to_string(), Some("1".to_string()))];
            if self.p.sql_read_only {
                s.push(("read_only".into(), Some("1".into())));
            }
            if let Some((size, key)) = self.min_redo {
                s.push((key.to_string(), Some(size.to_string())));
            }
            if let Some(k) = self.replica {
                s.push((k.to_string(), Some("1".to_string())));
            }
            s
        }
    }

    fn change(&self, state: Option<&State>) -> anyhow::Result<optionfile::ConfigChange> {
        let path = self.dropin.clone().map_err(crate::error::refused)?;
        let settings = self.settings(state);
        let refs: Vec<(&str, Option<&str>)> = settings
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        optionfile::plan_change(&path, "mysqld", &refs)
    }

    /// The innodb_read_only the option files give at the next start: None when innops does not know them.
    fn next_start_ro(&self) -> anyhow::Result<Option<bool>> {
        let Some(file) = &self.option_file else {
            return Ok(None);
        };
        let v = effective_config(file, "innodb_read_only", &self.version)?;
        Ok(Some(v.as_deref().is_some_and(is_on)))
    }
}

fn is_on(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "on" | "true")
}

/// `@@innodb_read_only` from a connection of its own; None when the server does not answer.
fn live_ro(ctx: &Ctx) -> anyhow::Result<Option<bool>> {
    match ctx.target.connect() {
        Ok(mut c) => {
            let v: Option<u64> =
                c.query_first(format!("SELECT {} @@GLOBAL.innodb_read_only", ctx.tag()))?;
            Ok(Some(v.unwrap_or(0) != 0))
        }
        Err(_) => Ok(None),
    }
}

/// `read_only` is 1 (`--sql-read-only`) or 0 (back to read-write); `fix` says where the step found it wrong.
fn read_only_is(on: bool, fix: &'static str) -> Check {
    let want = u64::from(on);
    Check::new(format!("read_only is {want}"), move |ctx| {
        let v = checks::global_u64(ctx, "read_only")?;
        Ok(Verdict::check(
            v == want,
            format!("read_only={v}"),
            want.to_string(),
            fix,
        ))
    })
}

fn status_u64(ctx: &mut Ctx, name: &str) -> anyhow::Result<Option<u64>> {
    let tag = ctx.tag();
    let row: Option<(String, String)> = ctx
        .conn()?
        .query_first(format!("SHOW {tag} GLOBAL STATUS LIKE '{name}'"))?;
    Ok(row.and_then(|(_, v)| v.parse().ok()))
}

fn resume_hint(ctx: &Ctx) -> String {
    restart::resume_or(ctx, "innops")
}

/// Build the plan.
pub fn plan(p: &ReadonlyParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    if p.undo && p.min_redo {
        return Err(bad_input(
            "--undo gives back the redo size the server had before --min-redo by itself: drop --min-redo",
        ));
    }
    let min = if p.min_redo {
        Some(min_redo(facts).map_err(bad_input)?)
    } else {
        None
    };
    let datadir = facts.var("datadir").map(PathBuf::from);
    let pid_file = match (facts.var("pid_file"), &datadir) {
        (Some(f), Some(d)) if env.target.local => {
            let f = Path::new(f);
            Some(if f.is_absolute() {
                f.to_path_buf()
            } else {
                d.join(f)
            })
        }
        _ => None,
    };
    let ro = Ro {
        p: p.clone(),
        dropin: env.dropin.clone(),
        option_file: env.option_file.clone(),
        pid_file,
        datadir: datadir.filter(|_| env.target.local),
        min_redo: min,
        redo_before: facts.redo_size_bytes(),
        version: facts.version_string.clone(),
        flags: env.flags(),
        replica: (facts.topology.role() == crate::server::topology::Role::Replica).then(|| {
            replica::skip_key(
                facts.flavor == crate::server::facts::Flavor::MariaDB,
                (
                    facts.version.major,
                    facts.version.minor,
                    facts.version.patch,
                ),
            )
        }),
        mariadb: facts.flavor == crate::server::facts::Flavor::MariaDB,
        read_only_now: facts.topology.read_only,
        read_only_after_undo: env
            .dropin
            .as_ref()
            .ok()
            .and_then(|d| read_state(d))
            .and_then(|st| st.read_only_before)
            .unwrap_or(false),
    };
    let mut notes = Vec::new();
    let mut steps = Vec::new();
    if p.undo {
        undo_steps(&ro, facts, env, &mut notes, &mut steps);
    } else {
        forward_steps(&ro, facts, env, min, &mut notes, &mut steps);
    }
    let header = env.header(
        crate::plan::Procedure::Readonly,
        facts,
        serde_json::to_value(p)?,
        notes,
    );
    // A read-only workload runs on either side of the switch; --undo starts from a read-only server, whose
    // benchmark tables may be missing, so it does not benchmark.
    let bench = env
        .bench_time
        .filter(|_| !p.undo)
        .map(|t| crate::bench::PlanBench::read_only(Duration::from_secs(t)));
    Ok(Plan {
        header,
        steps,
        bench,
        locks: vec!["readonly".into(), crate::plan::lock::SERVER.into()],
        // On a replica innops's own writes (the probe table, the probe's UPDATE after --undo) stay out of its
        // binary log: logged, they would be transactions its source never made (errant GTIDs).
        session: if ro.replica.is_some() && facts.topology.binlog.is_some() {
            vec![crate::procedures::kit::binlog::LOCAL_SESSION.to_string()]
        } else {
            Vec::new()
        },
    })
}

/// The way back to read-write: a clean stop, the drop-in without the settings, a start, replication started
/// again where the forward run stopped it, the checks.
fn undo_steps(
    ro: &Ro,
    facts: &ServerFacts,
    env: &PlanEnv,
    notes: &mut Vec<String>,
    steps: &mut Vec<Step>,
) {
    let ro = ro.clone();
    notes.push("innops shuts the server down cleanly, removes innodb_read_only (and read_only, and the redo size --min-redo set) from its drop-in, and starts it read-write".to_string());
    steps.push(preflight(&ro, facts));
    steps.push(stop_step(&ro));
    steps.push(dropin_step(&ro));
    steps.push(start_step(&ro));
    steps.extend(crate::procedures::kit::replicas::after_restart(
        "replicas-reconnect",
        env,
        facts,
        notes,
    ));
    // Replication stopped by the forward run starts again from where it stopped.
    let frozen = ro
        .dropin
        .as_ref()
        .ok()
        .and_then(|d| read_state(d))
        .and_then(|st| st.replication);
    if let Some(f) = frozen.as_ref().filter(|f| f.was_running) {
        notes.push(format!(
            "replication was stopped by innops readonly at {} ({}): it starts again from there once the server is read-write",
            f.position,
            f.connections.join("; ")
        ));
    }
    // On a replica the step is always planned: a resumed undo (the state file removed by its drop-in step) reads
    // the record the drop-in step journaled.
    if ro.replica.is_some() || frozen.is_some() {
        steps.push(replica::start_replication_step(ro.mariadb, frozen.as_ref()));
    }
    steps.push(verify_step(&ro));
}

/// The way to read-only: the online pre-steps, replication stopped on a replica, the slow stop, the drop-in, a
/// read-only start, the checks.
fn forward_steps(
    ro: &Ro,
    facts: &ServerFacts,
    env: &PlanEnv,
    min: Option<(u64, &'static str)>,
    notes: &mut Vec<String>,
    steps: &mut Vec<Step>,
) {
    let (ro, p) = (ro.clone(), ro.p.clone());
    notes.push(format!(
        "innops turns change buffering off where it matters ({}), {}shuts the server down slowly (innodb_fast_shutdown=0), proves the shutdown clean, writes innodb_read_only=1 into its drop-in and starts it",
        change_buffering_note(facts),
        if p.preflush { "flushes dirty pages and drains purge online, " } else { "" }
    ));
    notes.push(if p.sql_read_only {
        "--sql-read-only: read_only=1 too, so MyISAM/Aria writes, GRANT and CREATE USER are refused as well (except for accounts with READ_ONLY ADMIN or SUPER)".to_string()
    } else {
        "innodb_read_only does not stop MyISAM/Aria writes, GRANT or CREATE USER (FACTS §3): --sql-read-only also sets read_only=1".to_string()
    });
    if let Some((size, key)) = min {
        notes.push(format!(
            "--min-redo: the redo log shrinks online to {} ({key}) before the shutdown; --undo gives back {}",
            format_size(size),
            ro.redo_before.map(format_size).unwrap_or_else(|| "the size it had".into())
        ));
    }
    steps.push(preflight(&ro, facts));
    steps.push(change_buffering_step(facts));
    steps.push(probe_table_step());
    if p.preflush {
        steps.push(preflush_step(&ro));
    }
    if min.is_some() {
        steps.push(min_redo_step(&ro));
    }
    if let Some(skip) = ro.replica {
        notes.push(format!(
            "this server is a replica: a read-only InnoDB cannot apply its source's changes, so innops stops replication at a recorded position (its configuration is kept), starts the server with {skip} = 1 so it stays stopped, and `innops readonly --undo` starts it again from there"
        ));
        steps.push(replica::stop_replication_step(ro.mariadb, skip));
    }
    steps.push(stop_step(&ro));
    steps.push(dropin_step(&ro));
    steps.push(start_step(&ro));
    steps.extend(crate::procedures::kit::replicas::after_restart(
        "replicas-reconnect",
        env,
        facts,
        notes,
    ));
    let verify = verify_step(&ro);
    steps.push(match ro.replica {
        Some(_) => verify.post(replica::still_stopped(ro.mariadb)),
        None => verify,
    });
}

/// The preflight: the kit's shared checks, then (going read-only) the forward direction's measurements.
fn preflight(ro: &Ro, facts: &ServerFacts) -> Step {
    let undo = ro.p.undo;
    let need_free = if undo {
        MIN_FREE.max(ro.redo_before.unwrap_or(0))
    } else {
        MIN_FREE
    };
    let step = Step::new(
        "preflight",
        if undo {
            "Check the server can return to read-write"
        } else {
            "Check the server can be made read-only"
        },
        Risk::Read,
    )
    .pre(checks::version_supported(facts))
    .pre(checks::not_in_forced_recovery())
    .pre(checks::control_present(ControlNeed {
        name: "server control",
        needed: true,
        expected: "a way to start the server again",
        fix: "innops must stop and start the server and was not told how: pass --sandbox NAME, --service systemd:UNIT or --start-cmd/--stop-cmd",
    }))
    .pre(checks::dropin_writable(&ro.dropin))
    .pre(checks::free_space(SpaceNeed {
        name: "free space in the data directory",
        dir: ro.datadir.clone(),
        place: "the data directory",
        bytes: need_free,
        for_what: "the restart",
        fix: "free space first",
        strictly_more: false,
    }));
    if undo {
        step
    } else {
        forward::preflight_checks(step, ro.p.sql_read_only, facts.flavor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ro(p: ReadonlyParams) -> Ro {
        Ro {
            p,
            dropin: Ok(PathBuf::from("/x/99-innops.cnf")),
            option_file: None,
            pid_file: None,
            datadir: None,
            min_redo: Some((16 << 20, "innodb_log_file_size")),
            redo_before: Some(96 << 20),
            version: "10.11.6-MariaDB".into(),
            flags: "--sandbox s".into(),
            replica: None,
            mariadb: true,
            read_only_now: false,
            read_only_after_undo: false,
        }
    }

    fn params(undo: bool) -> ReadonlyParams {
        ReadonlyParams {
            undo,
            min_redo: !undo,
            sql_read_only: true,
            preflush: true,
            preflush_timeout_s: 60,
        }
    }

    #[test]
    fn the_drop_in_settings_go_there_and_back() {
        let fwd = ro(params(false)).settings(None);
        assert_eq!(
            fwd,
            vec![
                ("innodb_read_only".into(), Some("1".into())),
                ("read_only".into(), Some("1".into())),
                (
                    "innodb_log_file_size".into(),
                    Some((16u64 << 20).to_string())
                ),
            ]
        );
        let st = State {
            redo_key: Some("innodb_log_file_size".into()),
            redo_dropin_before: Some("128M".into()),
            redo_running_before: Some(128 << 20),
            sql_read_only: true,
            replication: None,
            read_only_before: None,
        };
        let back = ro(params(true)).settings(Some(&st));
        assert_eq!(
            back,
            vec![
                ("innodb_read_only".into(), None),
                ("read_only".into(), None),
                ("innodb_log_file_size".into(), Some("128M".into())),
            ]
        );
        // Without a record, undo removes only what read-only mode set.
        assert_eq!(ro(params(true)).settings(None).len(), 2);
        assert_eq!(
            ro(params(false)).rerun(),
            "innops readonly --min-redo --sql-read-only --sandbox s --execute"
        );
    }

    #[test]
    fn a_replica_starts_read_only_with_replication_held_and_undo_lets_it_go() {
        let mut r = ro(params(false));
        r.replica = Some("skip_slave_start");
        assert!(r
            .settings(None)
            .contains(&("skip_slave_start".into(), Some("1".into()))));
        let mut back = ro(params(true));
        back.replica = Some("skip_slave_start");
        let st = State {
            replication: Some(replica::Frozen {
                skip_key: "skip_slave_start".into(),
                position: "0-1-9".into(),
                connections: vec![],
                was_running: true,
            }),
            ..State::default()
        };
        assert!(back
            .settings(Some(&st))
            .contains(&("skip_slave_start".into(), None)));
        // A record naming anything else is not followed.
        let forged = State {
            replication: Some(replica::Frozen {
                skip_key: "innodb_read_only".into(),
                ..replica::Frozen::default()
            }),
            ..State::default()
        };
        assert_eq!(back.settings(Some(&forged)).len(), 2);
    }

    #[test]
    fn the_state_file_is_never_read_as_an_option_file() {
        let p = state_path(Path::new("/etc/mysql/conf.d/99-innops.cnf"));
        assert_eq!(p, PathBuf::from("/etc/mysql/conf.d/innops-readonly.json"));
        assert!(!p.to_string_lossy().ends_with(".cnf"));
    }

    #[test]
    fn a_second_forward_run_keeps_the_first_record_and_adds_the_redo_size() {
        let first = State {
            redo_key: None,
            redo_dropin_before: None,
            redo_running_before: None,
            sql_read_only: true,
            replication: None,
            read_only_before: None,
        };
        let second = State {
            redo_key: Some("innodb_log_file_size".into()),
            redo_dropin_before: None,
            redo_running_before: Some(96 << 20),
            sql_read_only: false,
            replication: None,
            read_only_before: None,
        };
        let merged = merge_state(Some(first.clone()), second.clone());
        assert_eq!(merged.redo_key.as_deref(), Some("innodb_log_file_size"));
        assert_eq!(merged.redo_running_before, Some(96 << 20));
        assert!(merged.sql_read_only);
        // The first run's redo record (the size from before innops) wins over a later one.
        let third = State {
            redo_running_before: Some(16 << 20),
            ..second.clone()
        };
        assert_eq!(
            merge_state(Some(second.clone()), third.clone()).redo_running_before,
            Some(96 << 20)
        );
        assert_eq!(merge_state(None, third.clone()), third);
    }
}
