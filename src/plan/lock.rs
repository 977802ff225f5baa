//! One run per object, and one server-wide run at a time: a run holds server-side named locks (`GET_LOCK`) in a
//! session of its own, for its whole length. The server frees them when that session ends, so a run killed with
//! `kill -9` never leaves a stale lock behind, and a second run of the same object is refused at once with the
//! connection that holds it.
//!
//! Every run holds a **slot** `innops:plan:<procedure>:<k>` (the first free `k`), so a running plan can be seen
//! (and named by its procedure) by anyone: `GET_LOCK` is exclusive and the server lists no user locks without a
//! plugin, so a refuser tests the known slot names instead. A plan that restarts the server or changes a global
//! setting also holds the **server lock** `innops:server` (its `locks` name [`SERVER`]), and is refused while any
//! other run holds a slot; every other plan is refused while the server lock is held, and checks it again before
//! each step. The orders make a race safe: a plan takes its slot *before* it looks at the server lock, and a
//! server-wide plan takes the server lock *before* it looks at the slots, so of two runs starting together at
//! least one sees the other.
//!
//! A restart step takes the server (and so the lock session) down: [`Locks::ensure`] takes the locks again, in
//! the same order and with the same checks, as soon as the server answers, before the next step runs. While the
//! server is down nobody else can run either.

use crate::sql::Queryable;
use mysql::Conn;

use crate::error::refused;
use crate::server::connect::Target;

/// The longest name `GET_LOCK` takes (MySQL 5.7+ refuses longer ones; MariaDB truncates them).
const MAX_NAME: usize = 64;

/// The lock name for one object, such as `convert:db.t` or `redo`: readable when it fits, else a digest.
pub fn lock_name(object: &str) -> String {
    let plain = format!("innops:{object}");
    if plain.chars().count() <= MAX_NAME {
        return plain;
    }
    use sha2::Digest;
    let h = sha2::Sha256::digest(object.as_bytes());
    let hex: String = h.iter().take(16).map(|b| format!("{b:02x}")).collect();
    let head: String = object.chars().take(MAX_NAME - 7 - 33).collect();
    format!("innops:{head}#{hex}")
}

/// The object a plan names in its `locks` when it restarts the server or changes a global setting: it then
/// holds the server lock `innops:server` ([`lock_name`] of it).
pub const SERVER: &str = "server";

/// The locks of a plan that changes `object`, with [`SERVER`] when it is server-wide.
pub fn server_if(server_wide: bool, object: String) -> Vec<String> {
    let mut objects = vec![object];
    if server_wide {
        objects.push(SERVER.to_string());
    }
    objects
}

/// Slots per procedure: how many runs of one procedure may run side by side on one server.
const SLOTS: usize = 16;

/// The procedures a slot can name; any other runs under `other`.
const LABELS: &[&str] = &[
    "convert",
    "convert-rollback",
    "convert-drop-kept",
    "redo",
    "readonly",
    "recover",
    "deadlock",
    "playbook",
    "drill",
    "other",
];

fn label_of(procedure: &str) -> &'static str {
    LABELS
        .iter()
        .find(|l| **l == procedure)
        .copied()
        .unwrap_or("other")
}

/// The name of slot `k` of `label`'s runs.
fn slot_name(label: &str, k: usize) -> String {
    format!("innops:plan:{label}:{k}")
}

/// Every slot held now: the procedure it names and the connection that holds it. One statement tests them all.
fn held_slots(conn: &mut Conn) -> anyhow::Result<Vec<(&'static str, u64)>> {
    let names: Vec<(&'static str, String)> = LABELS
        .iter()
        .flat_map(|l| (0..SLOTS).map(move |k| (*l, slot_name(l, k))))
        .collect();
    let sql = format!(
        "SELECT /* innops:lock */ {}",
        vec!["IS_USED_LOCK(?)"; names.len()].join(", ")
    );
    let params = mysql::Params::Positional(
        names
            .iter()
            .map(|(_, n)| mysql::Value::from(n.as_str()))
            .collect(),
    );
    let row: Option<mysql::Row> = conn.exec_first(sql, params)?;
    let Some(row) = row else {
        return Ok(Vec::new());
    };
    Ok(names
        .iter()
        .enumerate()
        .filter_map(|(i, (label, _))| {
            let id: Option<Option<u64>> = row.get(i);
            id.flatten().map(|id| (*label, id))
        })
        .collect())
}

/// A connection in words, with the innops run it belongs to when it holds a slot.
fn describe(conn: &mut Conn, id: u64) -> anyhow::Result<String> {
    let row: Option<(Option<String>, Option<String>, Option<u64>)> = conn.exec_first(
        "SELECT /* innops:lock */ USER, HOST, TIME FROM information_schema.PROCESSLIST WHERE ID = ?",
        (id,),
    )?;
    let who = match row {
        Some((user, host, time)) => format!(
            "connection {id} ({}@{}, connected {} s)",
            user.unwrap_or_default(),
            host.unwrap_or_default(),
            time.unwrap_or(0)
        ),
        None => format!("connection {id}"),
    };
    let run = held_slots(conn)?
        .into_iter()
        .find(|(_, holder)| *holder == id)
        .map(|(label, _)| format!(", an innops {label} run"))
        .unwrap_or_default();
    Ok(format!("{who}{run}"))
}

/// Who holds a named lock, in words: the connection, and the innops run it belongs to.
pub fn holder(conn: &mut Conn, name: &str) -> anyhow::Result<Option<String>> {
    let id: Option<Option<u64>> =
        conn.exec_first("SELECT /* innops:lock */ IS_USED_LOCK(?)", (name,))?;
    let Some(Some(id)) = id else { return Ok(None) };
    Ok(Some(describe(conn, id)?))
}

/// Why a plan cannot run beside the runs that hold locks now, seen from `conn` (whose own locks do not
/// count), or None. A server-wide plan runs alone; any other plan runs unless a server-wide one holds the
/// server lock.
fn conflict(conn: &mut Conn, server_wide: bool, procedure: &str) -> anyhow::Result<Option<String>> {
    let own: Option<u64> = conn.query_first("SELECT /* innops:lock */ CONNECTION_ID()")?;
    if server_wide {
        let other = held_slots(conn)?
            .into_iter()
            .find(|(_, id)| Some(*id) != own);
        return Ok(match other {
            Some((_, id)) => Some(format!(
                "another innops run is working on this server ({}), and this {procedure} plan restarts the server or changes a global setting under it: wait for that run to finish, then run the command again",
                describe(conn, id)?
            )),
            None => None,
        });
    }
    let server: Option<Option<u64>> = conn.exec_first(
        "SELECT /* innops:lock */ IS_USED_LOCK(?)",
        (lock_name(SERVER),),
    )?;
    Ok(match server.flatten() {
        Some(id) if Some(id) != own => Some(format!(
            "another innops run holds the server-wide lock {} ({}): it restarts the server or changes a global setting, so this {procedure} plan waits until it is done",
            lock_name(SERVER),
            describe(conn, id)?
        )),
        _ => None,
    })
}

/// Whether `err` is a lock wait that ran out (ERROR 1205).
pub fn is_lock_wait_timeout(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        matches!(c.downcast_ref::<mysql::Error>(), Some(mysql::Error::MySqlError(me)) if me.code == 1205)
    })
}

/// The sessions that may hold a table lock another session waited for: every other client session that is
/// not itself waiting for a lock, longest first. The server does not say which one holds a metadata lock
/// without the metadata_lock_info plugin, so this names the candidates.
pub fn lock_holder_candidates(conn: &mut Conn) -> anyhow::Result<String> {
    type Session = (
        u64,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<u64>,
        Option<String>,
    );
    let rows: Vec<Session> = conn.query(
            "SELECT /* innops:lock */ ID, USER, HOST, COMMAND, TIME, LEFT(INFO, 80) FROM information_schema.PROCESSLIST \
             WHERE ID <> CONNECTION_ID() AND COMMAND NOT IN ('Daemon', 'Binlog Dump') AND IFNULL(STATE, '') NOT LIKE '%lock%' \
             AND IFNULL(INFO, '') NOT LIKE '%/* innops:%' ORDER BY TIME DESC LIMIT 5",
        )?;
    if rows.is_empty() {
        return Ok("no other session is connected now".into());
    }
    Ok(rows
        .into_iter()
        .map(|(id, user, host, command, time, info)| {
            format!(
                "connection {id} ({}@{}, {} for {} s{})",
                user.unwrap_or_default(),
                host.unwrap_or_default(),
                command.unwrap_or_default(),
                time.unwrap_or(0),
                info.map(|q| format!(": {q}")).unwrap_or_default()
            )
        })
        .collect::<Vec<_>>()
        .join(", "))
}

/// The locks a run holds.
pub struct Locks {
    procedure: crate::plan::Procedure,
    objects: Vec<String>,
    session: Option<Conn>,
}

impl Locks {
    /// The locks of a `procedure` plan that changes `objects` (with [`SERVER`] when it is server-wide).
    pub fn new(procedure: crate::plan::Procedure, objects: Vec<String>) -> Locks {
        Locks {
            procedure,
            objects,
            session: None,
        }
    }

    /// Whether the plan restarts the server or changes a global setting.
    pub fn server_wide(&self) -> bool {
        self.objects.iter().any(|o| o == SERVER)
    }

    /// Hold every lock, taking them again when the session was lost (a restart): the slot first, then the
    /// objects' locks (the server lock among them), then the look at the other runs. A server that does not
    /// answer is not an error here: nobody else can run against it either, and the step that starts it comes
    /// next.
    pub fn ensure(&mut self, target: &Target) -> anyhow::Result<()> {
        if let Some(s) = self.session.as_mut() {
            if s.ping().is_ok() {
                return Ok(());
            }
            self.session = None;
        }
        let Ok(mut conn) = target.connect() else {
            return Ok(());
        };
        let label = label_of(self.procedure.name());
        let mut slot = None;
        for k in 0..SLOTS {
            let name = slot_name(label, k);
            let got: Option<Option<i64>> =
                conn.exec_first("SELECT /* innops:lock */ GET_LOCK(?, 0)", (&name,))?;
            if got == Some(Some(1)) {
                slot = Some(name);
                break;
            }
        }
        if slot.is_none() {
            return Err(refused(format!(
                "{SLOTS} innops {label} runs are working on this server already: wait for one to finish"
            )));
        }
        for object in &self.objects {
            let name = lock_name(object);
            let got: Option<Option<i64>> =
                conn.exec_first("SELECT /* innops:lock */ GET_LOCK(?, 0)", (&name,))?;
            if got != Some(Some(1)) {
                let who = holder(&mut conn, &name)?.unwrap_or_else(|| "another session".into());
                return Err(refused(if object == SERVER {
                    format!(
                        "another innops run holds the server-wide lock {name} ({who}): it restarts the server or changes a global setting, so this {} plan waits until it is done",
                        self.procedure
                    )
                } else {
                    format!(
                        "another innops run is working on {object} ({who} holds the lock {name}): wait for it to finish, or resume that run instead of starting a second one"
                    )
                }));
            }
        }
        if let Some(why) = conflict(&mut conn, self.server_wide(), self.procedure.name())? {
            return Err(refused(why));
        }
        self.session = Some(conn);
        Ok(())
    }

    /// Before each step of a plan that is not server-wide: why it must stop now (a server-wide run holds the
    /// server lock: the plan's session was lost and another run started meanwhile), or None. Without a lock
    /// session (the server is down) there is nothing to look at.
    pub fn server_taken(&mut self) -> anyhow::Result<Option<String>> {
        if self.server_wide() {
            return Ok(None);
        }
        let Some(conn) = self.session.as_mut() else {
            return Ok(None);
        };
        conflict(conn, false, self.procedure.name())
    }

    /// Whether a run now holds what this plan needs (for a dry run, which takes no lock): why, or None.
    pub fn taken(&self, target: &Target) -> anyhow::Result<Option<String>> {
        let mut conn = target.connect()?;
        for object in &self.objects {
            if object == SERVER {
                continue;
            }
            if let Some(who) = holder(&mut conn, &lock_name(object))? {
                return Ok(Some(format!(
                    "another innops run is working on {object} ({who} holds its lock): wait for it to finish"
                )));
            }
        }
        conflict(&mut conn, self.server_wide(), self.procedure.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_error_1205_is_a_lock_wait_timeout() {
        let server = |code: u16| -> anyhow::Error {
            mysql::Error::MySqlError(mysql::MySqlError {
                state: "HY000".into(),
                message: "x".into(),
                code,
            })
            .into()
        };
        assert!(is_lock_wait_timeout(&server(1205)));
        assert!(is_lock_wait_timeout(
            &server(1205).context("reading the table")
        ));
        assert!(!is_lock_wait_timeout(&server(1213)));
        assert!(!is_lock_wait_timeout(&anyhow::anyhow!("lock wait timeout")));
    }

    #[test]
    fn lock_names_fit_the_server_limit_and_stay_distinct() {
        assert_eq!(
            lock_name("convert:shop.orders"),
            "innops:convert:shop.orders"
        );
        let a = lock_name(&format!("convert:{}.{}", "d".repeat(64), "t".repeat(64)));
        let b = lock_name(&format!("convert:{}.{}u", "d".repeat(64), "t".repeat(63)));
        assert!(a.chars().count() <= MAX_NAME, "{a}");
        assert_ne!(a, b);
        assert!(a.starts_with("innops:convert:ddd"));
    }
    #[test]
    fn slots_name_their_procedure_fit_the_server_limit_and_are_distinct() {
        let all: Vec<String> = LABELS
            .iter()
            .flat_map(|l| (0..SLOTS).map(move |k| slot_name(l, k)))
            .collect();
        assert!(all.iter().all(|n| n.chars().count() <= MAX_NAME));
        let distinct: std::collections::BTreeSet<&String> = all.iter().collect();
        assert_eq!(distinct.len(), all.len());
        assert_eq!(label_of("readonly"), "readonly");
        assert_eq!(label_of("drill-setup"), "other");
        assert_eq!(lock_name(SERVER), "innops:server");
        assert_eq!(server_if(false, "deadlock:s".into()), vec!["deadlock:s"]);
        assert_eq!(
            server_if(true, "deadlock:s".into()),
            vec!["deadlock:s", SERVER]
        );
        let server_wide = Locks::new(
            crate::plan::Procedure::Redo,
            vec!["redo-log".into(), SERVER.into()],
        );
        assert!(server_wide.server_wide());
        assert!(
            !Locks::new(crate::plan::Procedure::Convert, vec!["table:d.t".into()]).server_wide()
        );
    }
}
