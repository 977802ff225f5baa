//! Replication facts as a preflight reads them: whether this server is a replica (replication connections
//! configured) and which replicas read its binary log now. The place the topology issue grows (role, lag,
//! `read_only`, binlog); today readonly's "replication role" check judges them.

use crate::plan::Ctx;
use crate::server::facts::Flavor;

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
