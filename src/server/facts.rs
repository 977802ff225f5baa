//! [`ServerFacts`]: one snapshot of what a server is (flavor, version, variables, status), and the capability
//! questions of DESIGN.md's version matrix as pure functions over it.
//!
//! Collecting the snapshot is the only I/O here; every decision is a function of the snapshot, so each row of
//! the matrix is unit-tested without a server.

use std::collections::BTreeMap;

use crate::sql::Queryable;
use mysql::Conn;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    MariaDB,
    MySQL,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Self {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// Parse `10.11.19-MariaDB-0+deb12u1`, `8.0.36`, `5.7.44-log`.
    pub fn parse(s: &str) -> Option<Version> {
        let head: String = s
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        let mut it = head
            .split('.')
            .filter(|p| !p.is_empty())
            .map(|p| p.parse::<u32>());
        let major = it.next()?.ok()?;
        let minor = it.next()?.ok()?;
        let patch = it.next().and_then(Result::ok).unwrap_or(0);
        Some(Version {
            major,
            minor,
            patch,
        })
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// A snapshot of one server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerFacts {
    pub flavor: Flavor,
    pub version: Version,
    pub version_string: String,
    /// `SHOW GLOBAL VARIABLES`, names lower-case.
    pub variables: BTreeMap<String, String>,
    /// `SHOW GLOBAL STATUS`, names as the server prints them.
    pub status: BTreeMap<String, String>,
    /// Where the server stands in replication (plans made before this was read have the default).
    #[serde(default)]
    pub topology: super::topology::Topology,
}

/// How the redo log can be resized on this server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedoResize {
    /// MariaDB 10.9+: `SET GLOBAL innodb_log_file_size`.
    OnlineLogFileSize,
    /// MySQL 8.0.30+: `innodb_redo_log_capacity`.
    OnlineRedoLogCapacity,
    /// Clean shutdown, change the config, start.
    RestartOnly,
}

/// Which variable(s) define the redo log's total size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedoSizeVariable {
    /// `innodb_log_file_size × innodb_log_files_in_group`.
    LogFileSizeTimesFiles,
    InnodbRedoLogCapacity,
    InnodbLogFileSize,
}

impl RedoSizeVariable {
    /// The option innops writes to the config for a total size.
    pub fn config_key(self) -> &'static str {
        match self {
            RedoSizeVariable::InnodbRedoLogCapacity => "innodb_redo_log_capacity",
            _ => "innodb_log_file_size",
        }
    }
}

/// What to do about the change buffer before a read-only restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeBuffering {
    /// The variable exists and matters: set it to `none`.
    Disable,
    /// MariaDB 10.9/10.10/10.11: the variable exists but the server ignores it.
    Ignored,
    /// MariaDB 11.0+: the change buffer is gone.
    Gone,
}

impl ServerFacts {
    /// Read version, variables and status over one connection.
    pub fn collect(conn: &mut Conn) -> anyhow::Result<ServerFacts> {
        let version_string: String = conn
            .query_first("SELECT /* innops:inspect:facts */ VERSION()")?
            .unwrap_or_default();
        let variables = show_map(
            conn,
            "SHOW /* innops:inspect:facts */ GLOBAL VARIABLES",
            true,
        )?;
        let status = show_map(conn, "SHOW /* innops:inspect:facts */ GLOBAL STATUS", false)?;
        let mut facts = ServerFacts::from_parts(&version_string, variables, status);
        let mariadb = facts.flavor == Flavor::MariaDB;
        facts.topology.read_links(conn, mariadb);
        Ok(facts)
    }

    /// Build from parts (tests, and `collect`).
    pub fn from_parts(
        version_string: &str,
        variables: BTreeMap<String, String>,
        status: BTreeMap<String, String>,
    ) -> ServerFacts {
        let comment = variables
            .get("version_comment")
            .map(String::as_str)
            .unwrap_or("");
        let flavor = if version_string.to_ascii_lowercase().contains("mariadb")
            || comment.to_ascii_lowercase().contains("mariadb")
        {
            Flavor::MariaDB
        } else {
            Flavor::MySQL
        };
        let version = Version::parse(version_string).unwrap_or(Version::new(0, 0, 0));
        let topology = super::topology::Topology::from_variables(
            |k| variables.get(k).cloned(),
            |k| status.get(k).cloned(),
        );
        ServerFacts {
            flavor,
            version,
            version_string: version_string.to_string(),
            variables,
            status,
            topology,
        }
    }

    /// What tells this server from another one: `@@server_uuid` where the server has it (MySQL), else its
    /// host name and data directory. The port is left out: a sandbox may get another one at a restart.
    pub fn identity(&self) -> String {
        match self.var("server_uuid").filter(|u| !u.is_empty()) {
            Some(uuid) => format!("server_uuid {uuid}"),
            None => format!(
                "host {} datadir {}",
                self.var("hostname").unwrap_or("?"),
                self.var("datadir").unwrap_or("?")
            ),
        }
    }

    /// A synthetic snapshot for unit tests.
    pub fn synthetic(flavor: Flavor, version: Version) -> ServerFacts {
        let vs = match flavor {
            Flavor::MariaDB => format!("{version}-MariaDB"),
            Flavor::MySQL => version.to_string(),
        };
        ServerFacts::from_parts(&vs, BTreeMap::new(), BTreeMap::new())
    }

    pub fn var(&self, name: &str) -> Option<&str> {
        self.variables
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    pub fn var_u64(&self, name: &str) -> Option<u64> {
        self.var(name).and_then(|v| v.parse().ok())
    }

    pub fn var_on(&self, name: &str) -> bool {
        matches!(
            self.var(name).map(str::to_ascii_uppercase).as_deref(),
            Some("ON" | "1" | "YES" | "TRUE")
        )
    }

    pub fn status_u64(&self, name: &str) -> Option<u64> {
        self.status.get(name).and_then(|v| v.parse().ok())
    }

    fn is_mariadb(&self) -> bool {
        self.flavor == Flavor::MariaDB
    }

    fn at_least(&self, major: u32, minor: u32, patch: u32) -> bool {
        self.version >= Version::new(major, minor, patch)
    }

    /// Short description: `MariaDB 10.11.19`.
    pub fn describe(&self) -> String {
        let f = if self.is_mariadb() {
            "MariaDB"
        } else {
            "MySQL"
        };
        format!("{f} {}", self.version)
    }

    pub fn redo_resize(&self) -> RedoResize {
        match self.flavor {
            Flavor::MariaDB if self.at_least(10, 9, 0) => RedoResize::OnlineLogFileSize,
            Flavor::MySQL if self.at_least(8, 0, 30) => RedoResize::OnlineRedoLogCapacity,
            _ => RedoResize::RestartOnly,
        }
    }

    pub fn redo_size_variable(&self) -> RedoSizeVariable {
        match self.flavor {
            Flavor::MariaDB if self.at_least(10, 5, 0) => RedoSizeVariable::InnodbLogFileSize,
            Flavor::MySQL if self.at_least(8, 0, 30) => RedoSizeVariable::InnodbRedoLogCapacity,
            _ => RedoSizeVariable::LogFileSizeTimesFiles,
        }
    }

    /// The redo log's current total size in bytes, from whichever variables define it here.
    pub fn redo_size_bytes(&self) -> Option<u64> {
        match self.redo_size_variable() {
            RedoSizeVariable::InnodbRedoLogCapacity => self.var_u64("innodb_redo_log_capacity"),
            RedoSizeVariable::InnodbLogFileSize => self.var_u64("innodb_log_file_size"),
            RedoSizeVariable::LogFileSizeTimesFiles => {
                let files = self.var_u64("innodb_log_files_in_group").unwrap_or(2);
                self.var_u64("innodb_log_file_size").map(|s| s * files)
            }
        }
    }

    /// Smallest and largest total redo size the server accepts, and the granularity sizes are rounded to.
    pub fn redo_size_limits(&self) -> (u64, u64, u64) {
        const MIB: u64 = 1 << 20;
        const GIB: u64 = 1 << 30;
        match self.redo_size_variable() {
            RedoSizeVariable::InnodbRedoLogCapacity => (8 * MIB, 128 * GIB, MIB),
            RedoSizeVariable::InnodbLogFileSize => (4 * MIB, 512 * GIB, 4096),
            RedoSizeVariable::LogFileSizeTimesFiles => {
                let files = self.var_u64("innodb_log_files_in_group").unwrap_or(2);
                (4 * MIB * files, 512 * GIB, MIB * files)
            }
        }
    }

    pub fn change_buffering(&self) -> ChangeBuffering {
        match self.flavor {
            Flavor::MariaDB if self.at_least(11, 0, 0) => ChangeBuffering::Gone,
            Flavor::MariaDB if self.at_least(10, 9, 0) => ChangeBuffering::Ignored,
            _ => ChangeBuffering::Disable,
        }
    }

    /// The shared-lock clause of a locking read.
    pub fn shared_lock_clause(&self) -> &'static str {
        match self.flavor {
            Flavor::MySQL if self.at_least(8, 0, 0) => "FOR SHARE",
            _ => "LOCK IN SHARE MODE",
        }
    }

    /// Where lock waits are listed.
    pub fn lock_waits_view(&self) -> &'static str {
        match self.flavor {
            Flavor::MySQL if self.at_least(8, 0, 0) => "performance_schema.data_lock_waits",
            _ => "information_schema.INNODB_LOCK_WAITS",
        }
    }

    /// The heading of the lock holder in a deadlock report.
    pub fn deadlock_holder_heading(&self) -> &'static str {
        match self.flavor {
            Flavor::MariaDB => "CONFLICTING WITH",
            Flavor::MySQL => "HOLDS THE LOCK(S)",
        }
    }

    /// Whether the `SHUTDOWN` statement exists.
    pub fn has_shutdown_statement(&self) -> bool {
        match self.flavor {
            Flavor::MariaDB => self.at_least(10, 0, 4),
            Flavor::MySQL => self.at_least(5, 7, 9),
        }
    }

    /// Versions innops knows the behaviour of; others are refused.
    pub fn supported(&self) -> Result<(), String> {
        let ok = match self.flavor {
            Flavor::MariaDB => self.at_least(10, 5, 0),
            Flavor::MySQL => self.at_least(5, 7, 0),
        };
        if ok {
            Ok(())
        } else {
            Err(format!(
                "{} is older than innops supports (MySQL 5.7+, MariaDB 10.5+): upgrade the server or run the procedure by hand",
                self.describe()
            ))
        }
    }
}

fn show_map(conn: &mut Conn, sql: &str, lower: bool) -> anyhow::Result<BTreeMap<String, String>> {
    let rows: Vec<(String, Option<String>)> = conn.query(sql)?;
    Ok(rows
        .into_iter()
        .map(|(k, v)| {
            (
                if lower { k.to_ascii_lowercase() } else { k },
                v.unwrap_or_default(),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mysql(a: u32, b: u32, c: u32) -> ServerFacts {
        ServerFacts::synthetic(Flavor::MySQL, Version::new(a, b, c))
    }
    fn maria(a: u32, b: u32, c: u32) -> ServerFacts {
        ServerFacts::synthetic(Flavor::MariaDB, Version::new(a, b, c))
    }

    #[test]
    fn versions_parse_from_real_version_strings() {
        assert_eq!(
            Version::parse("10.11.19-MariaDB-0+deb12u1"),
            Some(Version::new(10, 11, 19))
        );
        assert_eq!(Version::parse("8.0.36"), Some(Version::new(8, 0, 36)));
        assert_eq!(Version::parse("5.7.44-log"), Some(Version::new(5, 7, 44)));
        assert_eq!(Version::parse("garbage"), None);
        let f = ServerFacts::from_parts(
            "10.11.19-MariaDB-0+deb12u1",
            BTreeMap::new(),
            BTreeMap::new(),
        );
        assert_eq!(f.flavor, Flavor::MariaDB);
        assert_eq!(f.describe(), "MariaDB 10.11.19");
    }

    #[test]
    fn matrix_online_redo_resize() {
        assert_eq!(mysql(5, 7, 44).redo_resize(), RedoResize::RestartOnly);
        assert_eq!(mysql(8, 0, 29).redo_resize(), RedoResize::RestartOnly);
        assert_eq!(
            mysql(8, 0, 30).redo_resize(),
            RedoResize::OnlineRedoLogCapacity
        );
        assert_eq!(
            mysql(8, 4, 0).redo_resize(),
            RedoResize::OnlineRedoLogCapacity
        );
        assert_eq!(maria(10, 5, 0).redo_resize(), RedoResize::RestartOnly);
        assert_eq!(maria(10, 8, 8).redo_resize(), RedoResize::RestartOnly);
        assert_eq!(maria(10, 9, 0).redo_resize(), RedoResize::OnlineLogFileSize);
        assert_eq!(
            maria(10, 11, 19).redo_resize(),
            RedoResize::OnlineLogFileSize
        );
        assert_eq!(maria(11, 4, 2).redo_resize(), RedoResize::OnlineLogFileSize);
    }

    #[test]
    fn matrix_redo_size_variable() {
        assert_eq!(
            mysql(5, 7, 44).redo_size_variable(),
            RedoSizeVariable::LogFileSizeTimesFiles
        );
        assert_eq!(
            mysql(8, 0, 30).redo_size_variable(),
            RedoSizeVariable::InnodbRedoLogCapacity
        );
        assert_eq!(
            mysql(8, 4, 0).redo_size_variable(),
            RedoSizeVariable::InnodbRedoLogCapacity
        );
        assert_eq!(
            maria(10, 6, 0).redo_size_variable(),
            RedoSizeVariable::InnodbLogFileSize
        );
        assert_eq!(
            maria(11, 4, 0).redo_size_variable(),
            RedoSizeVariable::InnodbLogFileSize
        );
        let mut old = mysql(5, 7, 44);
        old.variables
            .insert("innodb_log_file_size".into(), "50331648".into());
        old.variables
            .insert("innodb_log_files_in_group".into(), "2".into());
        assert_eq!(old.redo_size_bytes(), Some(100663296));
    }

    #[test]
    fn matrix_change_buffering() {
        assert_eq!(mysql(5, 7, 44).change_buffering(), ChangeBuffering::Disable);
        assert_eq!(mysql(8, 0, 36).change_buffering(), ChangeBuffering::Disable);
        assert_eq!(mysql(8, 4, 0).change_buffering(), ChangeBuffering::Disable);
        assert_eq!(maria(10, 6, 0).change_buffering(), ChangeBuffering::Disable);
        assert_eq!(
            maria(10, 11, 0).change_buffering(),
            ChangeBuffering::Ignored
        );
        assert_eq!(maria(11, 0, 0).change_buffering(), ChangeBuffering::Gone);
    }

    #[test]
    fn matrix_shared_lock_syntax_and_lock_waits_view() {
        assert_eq!(mysql(5, 7, 44).shared_lock_clause(), "LOCK IN SHARE MODE");
        assert_eq!(mysql(8, 0, 36).shared_lock_clause(), "FOR SHARE");
        assert_eq!(maria(10, 6, 0).shared_lock_clause(), "LOCK IN SHARE MODE");
        assert_eq!(maria(11, 4, 0).shared_lock_clause(), "LOCK IN SHARE MODE");
        assert_eq!(
            mysql(5, 7, 44).lock_waits_view(),
            "information_schema.INNODB_LOCK_WAITS"
        );
        assert_eq!(
            mysql(8, 4, 0).lock_waits_view(),
            "performance_schema.data_lock_waits"
        );
        assert_eq!(
            maria(10, 6, 0).lock_waits_view(),
            "information_schema.INNODB_LOCK_WAITS"
        );
        assert_eq!(
            maria(11, 4, 0).lock_waits_view(),
            "information_schema.INNODB_LOCK_WAITS"
        );
    }

    #[test]
    fn matrix_deadlock_holder_heading_and_shutdown() {
        assert_eq!(
            mysql(5, 7, 44).deadlock_holder_heading(),
            "HOLDS THE LOCK(S)"
        );
        assert_eq!(
            mysql(8, 0, 36).deadlock_holder_heading(),
            "HOLDS THE LOCK(S)"
        );
        assert_eq!(
            maria(10, 6, 0).deadlock_holder_heading(),
            "CONFLICTING WITH"
        );
        assert_eq!(
            maria(11, 4, 0).deadlock_holder_heading(),
            "CONFLICTING WITH"
        );
        assert!(!mysql(5, 7, 8).has_shutdown_statement());
        assert!(mysql(5, 7, 9).has_shutdown_statement());
        assert!(mysql(8, 0, 0).has_shutdown_statement());
        assert!(maria(10, 5, 0).has_shutdown_statement());
        assert!(maria(11, 4, 0).has_shutdown_statement());
    }

    #[test]
    fn old_servers_are_refused_with_a_sentence() {
        assert!(maria(10, 4, 30)
            .supported()
            .unwrap_err()
            .contains("MariaDB 10.4.30"));
        assert!(mysql(5, 6, 51).supported().is_err());
        assert!(maria(10, 11, 0).supported().is_ok());
    }
}
