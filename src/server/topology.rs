//! Where a server stands in replication: whether it writes a binary log (and in which format), whether replicas
//! read it, whether it is itself a replica (of whom, with which threads running and how far behind), and
//! whether it is read-only. Every plan shows these facts in one line, because the same write is a different act
//! on a standalone server (it stays there), on a primary (it reaches every replica, as one transaction or many),
//! and on a replica (a local change the primary never made: an errant GTID). Read once with the server's other
//! facts; the sentences are pure functions of what was read, so they are unit-tested without a server.

use mysql::{Conn, Row};
use serde::{Deserialize, Serialize};

use crate::sql::Queryable;

/// A replica this server knows of (`SHOW SLAVE HOSTS`: replicas register when they connect).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replica {
    pub server_id: u64,
    /// `report_host` of the replica; empty when it reports none.
    pub host: String,
    pub port: u16,
}

/// One replication connection of this server (a line of `SHOW ALL SLAVES STATUS`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The connection's name (MariaDB multi-source; empty for the default connection).
    pub name: String,
    pub host: String,
    pub port: u16,
    /// `Slave_IO_Running`: Yes, No or Connecting.
    pub io: String,
    pub sql_running: bool,
    /// `Seconds_Behind_Master`; None when the server cannot tell (a thread stopped).
    pub lag_s: Option<u64>,
    /// `Using_Gtid`: No, Slave_Pos or Current_Pos.
    pub using_gtid: String,
    /// The last IO or SQL error, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The replication facts of one server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    pub server_id: u64,
    /// `binlog_format` when the binary log is on (`log_bin`), else None.
    pub binlog: Option<String>,
    /// Whether a replica's applied changes go to its own binary log (`log_slave_updates`).
    pub log_replica_updates: bool,
    pub gtid_strict_mode: bool,
    pub read_only: bool,
    /// Replicas connected now (`Slaves_connected`, MariaDB; the processlist's binlog dump threads elsewhere).
    pub replicas_connected: u64,
    /// The replicas that registered.
    pub replicas: Vec<Replica>,
    /// The sessions streaming this server's binary log to a replica now: connection id and client host.
    #[serde(default)]
    pub dump_sessions: Vec<(u64, String)>,
    /// This server's own replication connections (it is a replica when there is one).
    pub sources: Vec<Source>,
    /// What could not be read, and why (a missing privilege, say): the facts above are then incomplete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

/// What a server is in its topology, as a plan names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// No binary log and no source: nothing leaves or arrives.
    Standalone,
    /// A binary log and no replica connected: writes are logged for replicas that may connect later.
    Logging,
    /// Replicas read its binary log.
    Primary,
    /// It replicates from a source (and may have replicas of its own).
    Replica,
}

fn on(v: Option<&str>) -> bool {
    matches!(
        v.map(|s| s.to_ascii_uppercase()).as_deref(),
        Some("ON") | Some("1") | Some("YES") | Some("TRUE")
    )
}

impl Topology {
    /// The facts the global variables and status tell (`SHOW GLOBAL VARIABLES` names lower-case).
    pub fn from_variables(
        var: impl Fn(&str) -> Option<String>,
        status: impl Fn(&str) -> Option<String>,
    ) -> Topology {
        Topology {
            server_id: var("server_id").and_then(|v| v.parse().ok()).unwrap_or(0),
            binlog: on(var("log_bin").as_deref())
                .then(|| var("binlog_format").unwrap_or_else(|| "?".into())),
            log_replica_updates: on(var("log_slave_updates").as_deref())
                || on(var("log_replica_updates").as_deref()),
            gtid_strict_mode: on(var("gtid_strict_mode").as_deref()),
            read_only: on(var("read_only").as_deref()),
            replicas_connected: status("Slaves_connected")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0),
            replicas: Vec::new(),
            dump_sessions: Vec::new(),
            sources: Vec::new(),
            unknown: Vec::new(),
        }
    }

    /// Everything, read now over `conn` (a step's check, where the plan's facts may be old).
    pub fn read(conn: &mut Conn, mariadb: bool) -> anyhow::Result<Topology> {
        let vars: Vec<(String, String)> = conn.query(
            "SHOW /* innops:inspect:topology */ GLOBAL VARIABLES WHERE Variable_name IN \
             ('server_id', 'log_bin', 'binlog_format', 'log_slave_updates', 'log_replica_updates', 'gtid_strict_mode', 'read_only')",
        )?;
        let status: Vec<(String, String)> =
            conn.query("SHOW /* innops:inspect:topology */ GLOBAL STATUS LIKE 'Slaves_connected'")?;
        let find = |list: &[(String, String)], k: &str| {
            list.iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.clone())
        };
        let mut t = Topology::from_variables(|k| find(&vars, k), |k| find(&status, k));
        t.read_links(conn, mariadb);
        Ok(t)
    }

    /// Read what only statements tell: the registered replicas and this server's own replication connections.
    /// A statement the account may not run leaves a line in `unknown` instead of failing the plan.
    pub fn read_links(&mut self, conn: &mut Conn, mariadb: bool) {
        // MySQL 8.0.22 renamed the statements (and 8.4 dropped the old names); MariaDB keeps these.
        let hosts = if mariadb {
            "SHOW /* innops:inspect:topology */ SLAVE HOSTS"
        } else {
            "SHOW /* innops:inspect:topology */ REPLICAS"
        };
        match conn.query::<Row, _>(hosts) {
            Ok(rows) => {
                self.replicas = rows
                    .iter()
                    .map(|r| Replica {
                        server_id: col(r, "Server_id")
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(0),
                        host: col(r, "Host").unwrap_or_default(),
                        port: col(r, "Port").and_then(|v| v.parse().ok()).unwrap_or(0),
                    })
                    .collect();
            }
            Err(e) => self.unknown.push(format!(
                "replicas (SHOW SLAVE HOSTS: {})",
                crate::error::display_of(&e.into())
            )),
        }
        let status = if mariadb {
            "SHOW /* innops:inspect:topology */ ALL SLAVES STATUS"
        } else {
            "SHOW /* innops:inspect:topology */ REPLICA STATUS"
        };
        match conn.query::<Row, _>(status) {
            Ok(rows) => self.sources = rows.iter().map(source_of).collect(),
            Err(e) => self.unknown.push(format!(
                "this server's own replication (SHOW SLAVE STATUS: {})",
                crate::error::display_of(&e.into())
            )),
        }
        // The binlog dump threads are the connected replicas (MySQL has no Slaves_connected).
        match conn.query::<(u64, String), _>(
            "SELECT /* innops:inspect:topology */ ID, HOST FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'",
        ) {
            Ok(sessions) => {
                self.replicas_connected = self.replicas_connected.max(sessions.len() as u64);
                self.dump_sessions = sessions;
            }
            Err(e) => self.unknown.push(format!(
                "replicas' sessions (information_schema.PROCESSLIST: {})",
                crate::error::display_of(&e.into())
            )),
        }
    }

    /// This server's replication connections, read now (a replica's lag between two chunks).
    pub fn sources_now(conn: &mut Conn, mariadb: bool) -> anyhow::Result<Vec<Source>> {
        let status = if mariadb {
            "SHOW /* innops:replicas */ ALL SLAVES STATUS"
        } else {
            "SHOW /* innops:replicas */ REPLICA STATUS"
        };
        Ok(conn
            .query::<Row, _>(status)?
            .iter()
            .map(source_of)
            .collect())
    }

    pub fn role(&self) -> Role {
        if !self.sources.is_empty() {
            Role::Replica
        } else if self.replicas_connected > 0 || !self.replicas.is_empty() {
            Role::Primary
        } else if self.binlog.is_some() {
            Role::Logging
        } else {
            Role::Standalone
        }
    }

    /// How many replicas read this server: those connected now, or those registered when more.
    pub fn replica_count(&self) -> u64 {
        self.replicas_connected.max(self.replicas.len() as u64)
    }

    /// One line for the plan: the role, the facts behind it, and what innops's writes will do here.
    pub fn describe(&self) -> String {
        let binlog = match &self.binlog {
            Some(f) => format!("binlog {f}"),
            None => "no binary log".to_string(),
        };
        let gtid = if self.gtid_strict_mode {
            ", gtid_strict_mode ON"
        } else {
            ""
        };
        let ro = if self.read_only { ", read_only ON" } else { "" };
        let mut s = match self.role() {
            Role::Standalone => format!(
                "standalone ({binlog}, not a replica{ro}): innops's writes stay on this server"
            ),
            Role::Logging => format!(
                "{binlog}{gtid}{ro}, no replica connected: innops's writes are logged and reach any replica that reads this log later"
            ),
            Role::Primary => {
                let n = self.replica_count();
                let ids = if self.replicas.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (server_id {})",
                        self.replicas
                            .iter()
                            .map(|r| r.server_id.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                format!(
                    "primary with {n} replica{}{ids}, {binlog}{gtid}{ro}: innops's writes replicate to {}",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "it" } else { "them" }
                )
            }
            Role::Replica => {
                let src = self
                    .sources
                    .iter()
                    .map(describe_source)
                    .collect::<Vec<_>>()
                    .join("; ");
                let fate = if self.binlog.is_some() && self.log_replica_updates {
                    "innops's writes here are this replica's own changes, which its source never made (errant transactions in its binary log)"
                } else {
                    "innops's writes here are this replica's own changes, which its source never made"
                };
                let below = match self.replica_count() {
                    0 => String::new(),
                    n => format!(", with {n} replica(s) of its own"),
                };
                format!("replica of {src}{below}, {binlog}{gtid}{ro}: {fate}")
            }
        };
        if !self.unknown.is_empty() {
            s.push_str(&format!(" (not read: {})", self.unknown.join("; ")));
        }
        s
    }
}

fn describe_source(s: &Source) -> String {
    let name = if s.name.is_empty() {
        String::new()
    } else {
        format!("'{}' ", s.name)
    };
    let lag = match s.lag_s {
        Some(l) => format!("{l} s behind"),
        None => "lag unknown".to_string(),
    };
    let err = s
        .last_error
        .as_deref()
        .map(|e| format!(", last error: {e}"))
        .unwrap_or_default();
    format!(
        "{name}{}:{} (IO {}, SQL {}, {lag}{err})",
        s.host,
        s.port,
        s.io,
        if s.sql_running { "Yes" } else { "No" }
    )
}

/// A column of a `SHOW` row as text, when present and not NULL; `name` is MariaDB's spelling, and MySQL's
/// (Source for Master, Replica for Slave, since 8.0.22) is tried too.
pub(crate) fn column(r: &Row, name: &str) -> Option<String> {
    col(r, name)
}

fn col(r: &Row, name: &str) -> Option<String> {
    let mysql = name.replace("Master", "Source").replace("Slave", "Replica");
    let i = r.columns_ref().iter().position(|c| {
        let n = c.name_str();
        n.eq_ignore_ascii_case(name) || n.eq_ignore_ascii_case(&mysql)
    })?;
    match r.as_ref(i)? {
        mysql::Value::NULL => None,
        mysql::Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        mysql::Value::Int(n) => Some(n.to_string()),
        mysql::Value::UInt(n) => Some(n.to_string()),
        v => Some(format!("{v:?}")),
    }
}

/// One line of `SHOW ALL SLAVES STATUS` / `SHOW REPLICA STATUS` as a [`Source`].
pub(crate) fn source_of(r: &Row) -> Source {
    let last_error = ["Last_IO_Error", "Last_SQL_Error"]
        .iter()
        .filter_map(|c| col(r, c))
        .find(|e| !e.is_empty());
    Source {
        name: col(r, "Connection_name").unwrap_or_default(),
        host: col(r, "Master_Host").unwrap_or_default(),
        port: col(r, "Master_Port")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        io: col(r, "Slave_IO_Running").unwrap_or_else(|| "?".into()),
        sql_running: col(r, "Slave_SQL_Running").as_deref() == Some("Yes"),
        lag_s: col(r, "Seconds_Behind_Master").and_then(|v| v.parse().ok()),
        using_gtid: col(r, "Using_Gtid").unwrap_or_else(|| "No".into()),
        last_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(vars: &[(&str, &str)], connected: u64) -> Topology {
        let v: std::collections::BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let c = connected.to_string();
        Topology::from_variables(
            |k| v.get(k).cloned(),
            |k| (k == "Slaves_connected").then(|| c.clone()),
        )
    }

    fn source(lag: Option<u64>) -> Source {
        Source {
            name: String::new(),
            host: "127.0.0.1".into(),
            port: 3306,
            io: "Yes".into(),
            sql_running: true,
            lag_s: lag,
            using_gtid: "Slave_Pos".into(),
            last_error: None,
        }
    }

    #[test]
    fn a_server_without_binlog_or_source_is_standalone() {
        let t = topo(&[("log_bin", "OFF"), ("read_only", "OFF")], 0);
        assert_eq!(t.role(), Role::Standalone);
        assert_eq!(
            t.describe(),
            "standalone (no binary log, not a replica): innops's writes stay on this server"
        );
    }

    #[test]
    fn a_binlog_without_replicas_is_named_and_its_writes_are_logged() {
        let t = topo(&[("log_bin", "ON"), ("binlog_format", "ROW")], 0);
        assert_eq!(t.role(), Role::Logging);
        assert!(t.describe().starts_with("binlog ROW, no replica connected"));
    }

    #[test]
    fn connected_replicas_make_a_primary_and_are_counted() {
        let mut t = topo(
            &[
                ("log_bin", "ON"),
                ("binlog_format", "ROW"),
                ("gtid_strict_mode", "ON"),
                ("server_id", "7"),
            ],
            2,
        );
        t.replicas = vec![
            Replica {
                server_id: 8,
                host: "127.0.0.1".into(),
                port: 1,
            },
            Replica {
                server_id: 9,
                host: String::new(),
                port: 2,
            },
        ];
        assert_eq!(t.role(), Role::Primary);
        assert_eq!(t.server_id, 7);
        assert_eq!(
            t.describe(),
            "primary with 2 replicas (server_id 8, 9), binlog ROW, gtid_strict_mode ON: innops's writes replicate to them"
        );
        // A registered replica counts even when the status variable lags behind.
        t.replicas_connected = 0;
        assert_eq!(t.replica_count(), 2);
    }

    #[test]
    fn a_replica_names_its_source_threads_lag_and_the_fate_of_local_writes() {
        let mut t = topo(
            &[
                ("log_bin", "ON"),
                ("binlog_format", "ROW"),
                ("log_slave_updates", "ON"),
                ("read_only", "ON"),
            ],
            0,
        );
        t.sources = vec![source(Some(3))];
        assert_eq!(t.role(), Role::Replica);
        let d = t.describe();
        assert!(
            d.starts_with("replica of 127.0.0.1:3306 (IO Yes, SQL Yes, 3 s behind), binlog ROW, read_only ON:"),
            "{d}"
        );
        assert!(d.contains("errant transactions"), "{d}");
        t.sources[0].sql_running = false;
        t.sources[0].lag_s = None;
        t.sources[0].last_error = Some("Error 1062".into());
        assert!(t
            .describe()
            .contains("(IO Yes, SQL No, lag unknown, last error: Error 1062)"));
    }

    #[test]
    fn what_could_not_be_read_is_said() {
        let mut t = topo(&[("log_bin", "ON"), ("binlog_format", "MIXED")], 0);
        t.unknown
            .push("replicas (SHOW SLAVE HOSTS: access denied)".into());
        assert!(t
            .describe()
            .ends_with("(not read: replicas (SHOW SLAVE HOSTS: access denied))"));
    }
}
