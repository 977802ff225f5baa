//! Replication facts as a preflight reads them: whether this server is a replica (replication connections
//! configured) and which replicas read its binary log now. The place the topology issue grows (role, lag,
//! `read_only`, binlog); today readonly's "replication role" check judges them. A plan that restarts a
//! replica proves its replication running before ([`runs_check`]) and again after each restart
//! ([`resumed_step`]).

use crate::plan::Ctx;
use crate::server::facts::Flavor;
use crate::sql::Queryable;

/// What the server says of its replication now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replication {
    /// Replication connections configured on this server (it is a replica when any is).
    pub source_connections: usize,
    /// Sessions that stream this server's binary log to a replica: connection id and host.
    pub replicas: Vec<(u64, String)>,
}

impl Replication {
    /// Read now through [`crate::server::topology::Topology::read`] (what every plan's topology line says).
    pub fn read(ctx: &mut Ctx, flavor: Flavor) -> anyhow::Result<Replication> {
        let t = crate::server::topology::Topology::read(ctx.conn()?, flavor == Flavor::MariaDB)?;
        Ok(Replication {
            source_connections: t.sources.len(),
            replicas: t.dump_sessions,
        })
    }

    /// The replicas as a person reads them: `host (connection 12), …`.
    pub fn replica_list(&self) -> String {
        self.replicas
            .iter()
            .map(|(id, h)| format!("{h} (connection {id})"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Every replication connection of this replica runs (its SQL thread, and its IO thread running or
/// connecting): a restart would start replication again, so a plan that restarts a replica whose replication a
/// DBA stopped would change more than it says.
pub fn runs_check(mariadb: bool) -> crate::plan::Check {
    crate::plan::Check::new("this replica's replication runs", move |ctx| {
        let now = crate::server::topology::Topology::sources_now(ctx.conn()?, mariadb)?;
        let ok = !now.is_empty()
            && now
                .iter()
                .all(|s| s.sql_running && !s.io.eq_ignore_ascii_case("No"));
        Ok(crate::plan::Verdict::check(
            ok,
            describe(&now),
            "every connection's SQL thread running, its IO thread running or connecting",
            format!("replication on this replica is stopped, and a restart would start it again: start it ({}) before the experiment, or run it on a server that is not a replica", start_sql(mariadb)),
        ))
    })
}

fn start_sql(mariadb: bool) -> &'static str {
    if mariadb {
        "START ALL SLAVES"
    } else {
        "START REPLICA"
    }
}

fn describe(sources: &[crate::server::topology::Source]) -> String {
    if sources.is_empty() {
        return "no replication connection".into();
    }
    sources
        .iter()
        .map(|s| {
            let name = if s.name.is_empty() {
                "default"
            } else {
                s.name.as_str()
            };
            let err = s
                .last_error
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            format!(
                "{name} from {}:{}: IO {}, SQL {}{err}",
                s.host,
                s.port,
                s.io,
                if s.sql_running { "Yes" } else { "No" }
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn all_running(sources: &[crate::server::topology::Source]) -> bool {
    !sources.is_empty()
        && sources
            .iter()
            .all(|s| s.sql_running && s.io.eq_ignore_ascii_case("Yes"))
}

/// After a restart of this replica (step `id`, right after the step that starts it): every replication
/// connection's IO and SQL threads running again, and how long after the server accepted connections. A
/// server started with `skip_slave_start` does not start them itself (every thread stopped at the first look):
/// this step does, since the plan's preflight proved them running before ([`runs_check`]). The wait is bounded as a primary's wait for its
/// replicas is ([`super::replicas::RECONNECT_WAIT`]).
pub fn resumed_step(id: &str, mariadb: bool) -> crate::plan::Step {
    use crate::plan::{Check, Risk, Step, Verdict};
    Step::new(
        id,
        "Wait for this replica's replication to run again",
        Risk::Online,
    )
    .preview(format!(
        "SHOW ALL SLAVES STATUS every 50 ms until every connection's IO and SQL threads run; {} when every thread is stopped after the start (skip_slave_start)",
        start_sql(mariadb)
    ))
    .act(move |ctx| {
        let t0 = std::time::Instant::now();
        let tag = ctx.tag();
        let mut started = false;
        // The server starts its replication threads before it accepts connections, unless told not to
        // (skip_slave_start, an option MariaDB 10.11 does not show as a variable): every thread stopped at the
        // first look, where the preflight saw them run, is that.
        let now = crate::server::topology::Topology::sources_now(ctx.conn()?, mariadb)?;
        if !now.is_empty() && now.iter().all(|s| !s.sql_running && s.io.eq_ignore_ascii_case("No")) {
            ctx.conn()?
                .query_drop(start_sql(mariadb).replacen(' ', &format!(" {tag} "), 1))?;
            started = true;
        }
        let wait = super::replicas::reconnect_wait();
        let mut after = None;
        while t0.elapsed() < wait {
            let now = crate::server::topology::Topology::sources_now(ctx.conn()?, mariadb)?;
            if all_running(&now) {
                after = Some(t0.elapsed().as_secs_f64());
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        ctx.outcome.push(match after {
            Some(s) => format!("this replica's replication ran again {s:.2} s after its restart"),
            None => format!(
                "this replica's replication did not run again within {} s of its restart",
                wait.as_secs()
            ),
        });
        Ok(serde_json::json!({ "running_after_s": after, "started_by_innops": started }))
    })
    .post(Check::new("replication runs again", move |ctx| {
        let now = crate::server::topology::Topology::sources_now(ctx.conn()?, mariadb)?;
        Ok(Verdict::check(
            all_running(&now),
            describe(&now),
            "every connection's IO and SQL threads running",
            "this replica's replication did not run again after its restart: read SHOW SLAVE STATUS (Last_IO_Error, Last_SQL_Error), fix what it names, then resume",
        ))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_read_as_hosts_and_connections() {
        let r = Replication {
            source_connections: 0,
            replicas: vec![(12, "10.0.0.2:5123".into()), (14, "db3:6000".into())],
        };
        assert_eq!(
            r.replica_list(),
            "10.0.0.2:5123 (connection 12), db3:6000 (connection 14)"
        );
        assert_eq!(Replication::default().replica_list(), "");
    }
}
