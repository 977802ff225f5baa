//! `innops readonly` on a replica: a read-only InnoDB cannot apply its source's changes, so the replica is frozen
//! properly instead of refused. Before the shutdown innops stops replication (`STOP ALL SLAVES`; MySQL `STOP
//! REPLICA`) and records where it stopped (`gtid_slave_pos`, and each connection's source file and position);
//! the drop-in gets `skip_slave_start` so the read-only server never starts applying; the replication
//! configuration is kept whole. `--undo` takes `skip_slave_start` out again and starts replication from the
//! recorded position, only if it was running when the forward run stopped it.

use serde::{Deserialize, Serialize};

use crate::plan::{Check, Ctx, Risk, Step, Verdict};
use crate::procedures::kit::restart::journaled;
use crate::server::topology::{Source, Topology};
use crate::sql::Queryable;

/// Where replication was stopped, as `--undo` finds it in the state file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct Frozen {
    /// The option that keeps replication stopped at startup (`skip_slave_start`, or MySQL 8.0.26+'s
    /// `skip_replica_start`).
    pub skip_key: String,
    /// `@@gtid_slave_pos` (MariaDB) or `@@gtid_executed` (MySQL) when it stopped.
    pub position: String,
    /// Each connection `name host:port file:pos` when it stopped.
    pub connections: Vec<String>,
    /// Whether both threads of every connection ran before: `--undo` starts replication only then.
    pub was_running: bool,
}

/// The startup option that keeps replication stopped on this server.
pub fn skip_key(mariadb: bool, version: (u32, u32, u32)) -> &'static str {
    if !mariadb && version >= (8, 0, 26) {
        "skip_replica_start"
    } else {
        "skip_slave_start"
    }
}

fn stop_sql(mariadb: bool) -> &'static str {
    if mariadb {
        "STOP ALL SLAVES"
    } else {
        "STOP REPLICA"
    }
}

fn start_sql(mariadb: bool) -> &'static str {
    if mariadb {
        "START ALL SLAVES"
    } else {
        "START REPLICA"
    }
}

fn position(ctx: &mut Ctx, mariadb: bool) -> anyhow::Result<String> {
    let tag = ctx.tag();
    let var = if mariadb {
        "gtid_slave_pos"
    } else {
        "gtid_executed"
    };
    Ok(ctx
        .conn()?
        .query_first::<Option<String>, _>(format!("SELECT {tag} @@GLOBAL.{var}"))?
        .flatten()
        .unwrap_or_default())
}

fn sources(ctx: &mut Ctx, mariadb: bool) -> anyhow::Result<Vec<Source>> {
    Topology::sources_now(ctx.conn()?, mariadb)
}

fn running(s: &Source) -> bool {
    s.io.eq_ignore_ascii_case("Yes") && s.sql_running
}

fn stopped(s: &Source) -> bool {
    // Only "No" is stopped: "Connecting" and "Preparing" are on their way to running.
    s.io.eq_ignore_ascii_case("No") && !s.sql_running
}

/// Forward: stop replication and record where.
pub(super) fn stop_replication_step(mariadb: bool, skip: &'static str) -> Step {
    Step::new(
        "stop-replication",
        "Stop replication at a recorded position (the configuration is kept)",
        Risk::Online,
    )
    .preview(format!(
        "{}; SELECT @@{}{}; SHOW {} STATUS   -- recorded for --undo, which starts it again; {skip} = 1 keeps it stopped at the read-only start",
        stop_sql(mariadb),
        if mariadb { "gtid_slave_pos" } else { "gtid_executed" },
        if mariadb { "; SET GLOBAL gtid_slave_pos = (that position: one row per domain in mysql.gtid_slave_pos, none left to prune at the read-only start)" } else { "" },
        if mariadb { "ALL SLAVES" } else { "REPLICA" }
    ))
    .act(move |ctx| {
        let before = sources(ctx, mariadb)?;
        let was_running = !before.is_empty() && before.iter().all(running);
        let tag = ctx.tag();
        ctx.conn()?
            .query_drop(stop_sql(mariadb).replacen(' ', &format!(" {tag} "), 1))?;
        let after = sources(ctx, mariadb)?;
        let at = position(ctx, mariadb)?;
        let mut pruned = false;
        if mariadb {
            // MariaDB prunes superseded rows of mysql.gtid_slave_pos when it starts; a read-only InnoDB cannot,
            // and logs "[ERROR] Error deleting old GTID row". Setting the position to itself (replication is
            // stopped) leaves one row per domain, the same position, and nothing to prune.
            // Refused (1947) when this replica's own binary log holds newer GTIDs of its own (errant
            // transactions): then the rows stay, and the start's log check shows the line.
            pruned = ctx
                .conn()?
                .exec_drop(format!("SET {tag} GLOBAL gtid_slave_pos = ?"), (&at,))
                .is_ok();
        }
        let frozen = Frozen {
            skip_key: skip.to_string(),
            position: at,
            connections: after.iter().map(describe).collect(),
            // A resumed run finds replication stopped by its own first try: the journal keeps what it saw then.
            was_running: was_running
                || journaled(ctx, "stop-replication")
                    .and_then(|r| r.get("frozen")?.get("was_running")?.as_bool())
                    .unwrap_or(false),
        };
        Ok(serde_json::json!({ "frozen": frozen, "gtid_slave_pos_pruned": pruned }))
    })
    .post(Check::new("replication stopped", move |ctx| {
        let now = sources(ctx, mariadb)?;
        let ok = now.iter().all(stopped);
        Ok(Verdict::check(
            ok,
            now.iter().map(describe).collect::<Vec<_>>().join("; "),
            "IO and SQL threads stopped",
            "replication did not stop: read SHOW SLAVE STATUS, stop it by hand, then resume",
        ))
    }))
}

fn describe(s: &Source) -> String {
    format!(
        "{}{}:{} (IO {}, SQL {})",
        if s.name.is_empty() {
            String::new()
        } else {
            format!("'{}' ", s.name)
        },
        s.host,
        s.port,
        s.io,
        if s.sql_running { "Yes" } else { "No" }
    )
}

/// What the forward run's stop recorded, for the state file.
pub(super) fn frozen(ctx: &Ctx) -> Option<Frozen> {
    serde_json::from_value(journaled(ctx, "stop-replication")?.get("frozen")?.clone()).ok()
}

/// Forward, after the read-only start: replication is still stopped, at the recorded position.
pub(super) fn still_stopped(mariadb: bool) -> Check {
    Check::new(
        "replication stays stopped at the recorded position",
        move |ctx| {
            let Some(f) = frozen(ctx) else {
                return Ok(Verdict::fail("no record of where replication stopped", "the recorded position", "the run has no record of its stop-replication step: read SHOW SLAVE STATUS before anything else"));
            };
            let now = sources(ctx, mariadb)?;
            let pos = position(ctx, mariadb)?;
            let shown = |p: &str| {
                if p.is_empty() {
                    "(none applied yet)".to_string()
                } else {
                    p.to_string()
                }
            };
            Ok(Verdict::check(
            now.iter().all(stopped) && pos == f.position,
            format!("{}; position {}", now.iter().map(describe).collect::<Vec<_>>().join("; "), shown(&pos)),
            format!("stopped at {}", shown(&f.position)),
            format!("replication moved or started on the read-only server ({} = 1 was to keep it stopped): read SHOW SLAVE STATUS", f.skip_key),
        ))
        },
    )
}

/// What the forward run recorded of replication, as `--undo`'s drop-in step journaled it (read from the state file
/// beside the drop-in before that step removed it): a resumed undo finds it there, not in the file.
fn frozen_by_forward(ctx: &Ctx) -> Option<Frozen> {
    serde_json::from_value(
        journaled(ctx, "dropin")?
            .get("state")?
            .get("replication")?
            .clone(),
    )
    .ok()
}

/// `--undo` on a replica: start replication again where the forward run stopped it, if it was running then. The
/// record is read when the step runs (the drop-in step journaled it), so a resumed run starts it too.
pub(super) fn start_replication_step(mariadb: bool, planned: Option<&Frozen>) -> Step {
    Step::new(
        "start-replication",
        "Start replication again where innops readonly stopped it",
        Risk::Online,
    )
    .preview(format!(
        "{}   -- only if innops readonly stopped it (recorded beside the drop-in{})",
        start_sql(mariadb),
        planned
            .map(|f| format!(": at {} ({})", f.position, f.connections.join("; ")))
            .unwrap_or_default()
    ))
    .pre(Check::after_prior("stopped by innops readonly", |ctx| {
        Ok(match frozen_by_forward(ctx) {
            Some(f) if f.was_running => Verdict::pass(format!("stopped at {}", if f.position.is_empty() { "(none applied yet)" } else { f.position.as_str() }), "stopped by innops readonly"),
            Some(_) => Verdict::done("stopped before innops readonly ran: left stopped", "stopped by innops readonly"),
            None => Verdict::done("not stopped by innops readonly", "stopped by innops readonly"),
        })
    }))
    .act(move |ctx| {
        let tag = ctx.tag();
        ctx.conn()?
            .query_drop(start_sql(mariadb).replacen(' ', &format!(" {tag} "), 1))?;
        Ok(serde_json::json!({ "started_from": frozen_by_forward(ctx).map(|f| f.position) }))
    })
    .post(Check::new("replication running", move |ctx| {
        // The IO thread may still be connecting; the SQL thread starts at once.
        let now = sources(ctx, mariadb)?;
        let ok = !now.is_empty() && now.iter().all(|s| s.sql_running && !s.io.eq_ignore_ascii_case("No"));
        Ok(Verdict::check(
            ok,
            now.iter().map(describe).collect::<Vec<_>>().join("; "),
            "SQL thread running, IO thread running or connecting",
            "replication did not start again: read SHOW SLAVE STATUS (its last error says why), then START SLAVE by hand",
        ))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_startup_option_follows_the_server() {
        assert_eq!(skip_key(true, (10, 11, 6)), "skip_slave_start");
        assert_eq!(skip_key(false, (8, 0, 25)), "skip_slave_start");
        assert_eq!(skip_key(false, (8, 4, 0)), "skip_replica_start");
    }

    #[test]
    fn a_frozen_record_reads_back_from_an_older_state_file() {
        let f: Frozen = serde_json::from_str(r#"{"skip_key":"skip_slave_start","position":"0-1-5","connections":[],"was_running":true}"#).unwrap();
        assert!(f.was_running);
        assert_eq!(f.position, "0-1-5");
    }
}
