//! One run per object: a run holds a server-side named lock (`GET_LOCK`) for every object it changes, in a
//! session of its own, for its whole length. The server frees the lock when that session ends, so a run killed
//! with `kill -9` never leaves a stale lock behind, and a second run of the same object is refused at once with
//! the connection that holds it.
//!
//! A restart step takes the server (and so the lock session) down: [`Locks::ensure`] takes the locks again as
//! soon as the server answers, before the next step runs. While the server is down nobody else can run either.

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

/// Who holds a named lock, in words.
pub fn holder(conn: &mut Conn, name: &str) -> anyhow::Result<Option<String>> {
    let id: Option<Option<u64>> =
        conn.exec_first("SELECT /* innops:lock */ IS_USED_LOCK(?)", (name,))?;
    let Some(Some(id)) = id else { return Ok(None) };
    let row: Option<(Option<String>, Option<String>, Option<u64>)> = conn.exec_first(
        "SELECT /* innops:lock */ USER, HOST, TIME FROM information_schema.PROCESSLIST WHERE ID = ?",
        (id,),
    )?;
    Ok(Some(match row {
        Some((user, host, time)) => format!(
            "connection {id} ({}@{}, connected {} s)",
            user.unwrap_or_default(),
            host.unwrap_or_default(),
            time.unwrap_or(0)
        ),
        None => format!("connection {id}"),
    }))
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
    objects: Vec<String>,
    session: Option<Conn>,
}

impl Locks {
    pub fn new(objects: Vec<String>) -> Locks {
        Locks {
            objects,
            session: None,
        }
    }

    /// Hold every lock, taking them again when the session was lost (a restart). A server that does not answer
    /// is not an error here: nobody else can run against it either, and the step that starts it comes next.
    pub fn ensure(&mut self, target: &Target) -> anyhow::Result<()> {
        if self.objects.is_empty() {
            return Ok(());
        }
        if let Some(s) = self.session.as_mut() {
            if s.ping().is_ok() {
                return Ok(());
            }
            self.session = None;
        }
        let Ok(mut conn) = target.connect() else {
            return Ok(());
        };
        for object in &self.objects {
            let name = lock_name(object);
            let got: Option<Option<i64>> =
                conn.exec_first("SELECT /* innops:lock */ GET_LOCK(?, 0)", (&name,))?;
            if got != Some(Some(1)) {
                let who = holder(&mut conn, &name)?.unwrap_or_else(|| "another session".into());
                return Err(refused(format!(
                    "another innops run is working on {object} ({who} holds the lock {name}): wait for it to finish, or resume that run instead of starting a second one"
                )));
            }
        }
        self.session = Some(conn);
        Ok(())
    }

    /// Whether another session holds one of the locks now (for a dry run): the first object and its holder.
    pub fn taken(&self, target: &Target) -> anyhow::Result<Option<(String, String)>> {
        let mut conn = target.connect()?;
        for object in &self.objects {
            if let Some(who) = holder(&mut conn, &lock_name(object))? {
                return Ok(Some((object.clone(), who)));
            }
        }
        Ok(None)
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
}
