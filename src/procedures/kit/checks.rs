//! The checks several preflights make the same way. Each is a named function returning a [`Check`]; the decision
//! inside is a plain function over facts (`…_verdict`), unit-tested below without a server. Where procedures
//! word a refusal differently (what the restart is for, what to do instead), the wording is a parameter and the
//! decision is shared.
//!
//! Replication facts are read by [`super::replication`]; readonly's "replication role" is the only check that
//! judges them today, and the shared one goes here once the topology issue says what every preflight requires.

use std::path::{Path, PathBuf};

use crate::plan::{Check, Verdict};
use crate::server::errorlog::LogSummary;
use crate::server::facts::ServerFacts;
use crate::sql::Queryable;
use crate::units::format_size;

/// The versions innops supports, as every preflight states them.
pub const SUPPORTED: &str = "MySQL 5.7+ or MariaDB 10.5+";

/// The verdict on [`ServerFacts::supported`]'s answer.
pub fn version_verdict(supported: &Result<(), String>) -> Verdict {
    match supported {
        Ok(()) => Verdict::pass("supported", SUPPORTED),
        Err(why) => Verdict::fail("unsupported", SUPPORTED, why.clone()),
    }
}

/// `server version supported`: the version read when the plan was made (a version does not change without a
/// restart, which a later step's checks would see).
pub fn version_supported(facts: &ServerFacts) -> Check {
    let supported = facts.supported();
    Check::new("server version supported", move |_| {
        Ok(version_verdict(&supported))
    })
}

/// How a preflight words the need for a control backend.
#[derive(Debug, Clone, Copy)]
pub struct ControlNeed {
    /// The check's name (in plan.json: keep it).
    pub name: &'static str,
    /// False when this plan never stops the server (redo's online path).
    pub needed: bool,
    pub expected: &'static str,
    /// What to do when it is missing: name the flags.
    pub fix: &'static str,
}

/// The verdict on the control backend: `backend` describes it when there is one.
pub fn control_verdict(backend: Option<String>, need: &ControlNeed) -> Verdict {
    match backend {
        Some(b) => Verdict::pass(b, need.expected),
        None if !need.needed => Verdict::pass("not needed", need.expected),
        None => Verdict::fail("none", need.expected, need.fix),
    }
}

/// Whether innops can stop and start the server (a sandbox, a systemd unit, or start/stop commands).
pub fn control_present(need: ControlNeed) -> Check {
    Check::new(need.name, move |ctx| {
        Ok(control_verdict(
            ctx.control.map(|c| c.spec.describe()),
            &need,
        ))
    })
}

/// The verdict on where innops's drop-in goes (`Err`: why it cannot be placed).
pub fn dropin_verdict(dropin: &Result<PathBuf, String>) -> Verdict {
    let expected = "a drop-in file innops may write";
    match dropin {
        Ok(path) => Verdict::pass(path.display().to_string(), expected),
        Err(why) => Verdict::fail("unknown", expected, why.clone()),
    }
}

/// `drop-in can be written`: innops knows where its drop-in goes, so a setting it makes survives a restart.
pub fn dropin_writable(dropin: &Result<PathBuf, String>) -> Check {
    let dropin = dropin.clone();
    Check::new("drop-in can be written", move |_| {
        Ok(dropin_verdict(&dropin))
    })
}

/// Free bytes on the filesystem holding `path`.
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is a valid NUL-terminated path and st a properly sized out-parameter.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

/// How a preflight words its need for free space.
#[derive(Debug, Clone)]
pub struct SpaceNeed {
    /// The check's name (in plan.json: keep it).
    pub name: &'static str,
    /// The directory that must have room, when it is on this machine.
    pub dir: Option<PathBuf>,
    /// What it is, for "not checked: … is not on this machine".
    pub place: &'static str,
    pub bytes: u64,
    /// What needs the room ("the new log"), and what to do when it is short.
    pub for_what: &'static str,
    pub fix: &'static str,
    /// More than `bytes` free (the new redo log beside the old one), or at least `bytes`.
    pub strictly_more: bool,
}

/// The verdict on `free` bytes (None: not readable) in `need.dir`.
pub fn space_verdict(free: Option<u64>, need: &SpaceNeed) -> Verdict {
    let at_least = format!("≥ {} free", format_size(need.bytes));
    let Some(dir) = &need.dir else {
        return Verdict::pass(
            format!("not checked: {} is not on this machine", need.place),
            at_least,
        );
    };
    let expected = if need.strictly_more {
        format!("> {} free", format_size(need.bytes))
    } else {
        at_least
    };
    match free {
        Some(free) => Verdict::check(
            if need.strictly_more {
                free > need.bytes
            } else {
                free >= need.bytes
            },
            format!("{} free in {}", format_size(free), dir.display()),
            expected,
            format!(
                "the filesystem of {} has {} free and {} needs {}: {}",
                dir.display(),
                format_size(free),
                need.for_what,
                format_size(need.bytes),
                need.fix
            ),
        ),
        None => Verdict::pass(
            format!("not checked: {} is not readable here", dir.display()),
            expected,
        ),
    }
}

/// Free space where the procedure writes, read when the check runs.
pub fn free_space(need: SpaceNeed) -> Check {
    Check::new(need.name, move |_| {
        let free = need.dir.as_deref().and_then(free_bytes);
        Ok(space_verdict(free, &need))
    })
}

/// The verdict on `@@innodb_force_recovery`: `then` is what the procedure cannot do in forced recovery's stead
/// ("restart it without innodb_force_recovery first").
pub fn forced_recovery_verdict(level: u64, then: &str) -> Verdict {
    Verdict::check(
        level == 0,
        format!("innodb_force_recovery={level}"),
        "0",
        format!("the server runs in forced recovery: finish the recovery and {then}"),
    )
}

/// A numeric global variable now, on the step's connection (0 when the server does not say). `name` is one of
/// innops's own constants, never user input.
pub fn global_u64(ctx: &mut crate::plan::Ctx, name: &'static str) -> anyhow::Result<u64> {
    let tag = ctx.tag();
    let v: Option<u64> = ctx
        .conn()?
        .query_first(format!("SELECT {tag} @@GLOBAL.{name}"))?;
    Ok(v.unwrap_or(0))
}

/// `@@GLOBAL.innodb_force_recovery` now (0 when the server does not say).
pub fn force_recovery_level(ctx: &mut crate::plan::Ctx) -> anyhow::Result<u64> {
    global_u64(ctx, "innodb_force_recovery")
}

/// `not in forced recovery`: a server in forced recovery is being rescued, not maintained.
pub fn not_in_forced_recovery() -> Check {
    Check::new("not in forced recovery", |ctx| {
        Ok(forced_recovery_verdict(
            force_recovery_level(ctx)?,
            "restart it without innodb_force_recovery first",
        ))
    })
}

/// `CURRENT_USER()` (`user@host`) as information_schema's privilege views spell the grantee: `'user'@'host'`.
pub fn grantee_of(current_user: &str) -> String {
    match current_user.rsplit_once('@') {
        Some((u, h)) => format!("'{u}'@'{h}'"),
        None => format!("'{current_user}'"),
    }
}

/// The global privileges that let an account write while `read_only` is ON: MariaDB's READ_ONLY ADMIN (which
/// SUPER no longer includes from 10.11), MySQL's CONNECTION_ADMIN or SUPER.
pub fn read_only_bypass(mariadb: bool) -> &'static [&'static str] {
    if mariadb {
        &["READ_ONLY ADMIN"]
    } else {
        &["CONNECTION_ADMIN", "SUPER"]
    }
}

/// The verdict on writing to a server whose `read_only` is `ro`, as `account` holding the global privileges
/// `have`: a read_only server refuses the writes of an account without [`read_only_bypass`] with ERROR 1290,
/// after the plan started, so the preflight refuses first and names the two ways on.
pub fn read_only_verdict(ro: bool, account: &str, have: &[String], mariadb: bool) -> Verdict {
    let bypass = read_only_bypass(mariadb);
    let held = bypass.iter().find(|p| have.iter().any(|h| h == *p));
    match (ro, held) {
        (false, _) => Verdict::pass("read_only OFF", "writable"),
        (true, Some(p)) => Verdict::pass(format!("read_only ON, {account} has {p}"), "writable"),
        (true, None) => Verdict::fail(
            format!("read_only ON, {account} has no {}", bypass.join(" or ")),
            "writable",
            format!(
                "the server is read_only (a replica, or a primary fenced off) and {account} may not write through it: run this on the primary, or GRANT {} ON *.* TO {account} if writing here is meant",
                bypass[0]
            ),
        ),
    }
}

/// `writable under read_only`: read when the check runs; an account acting through a role is not judged (its
/// privileges are the role's) and says so.
pub fn writable_under_read_only(mariadb: bool) -> Check {
    Check::new("writable under read_only", move |ctx| {
        let tag = ctx.tag();
        read_only_writable(ctx.conn()?, &tag, mariadb)
    })
}

/// The verdict of [`writable_under_read_only`] over any session (a replica's, say).
pub fn read_only_writable(
    conn: &mut mysql::Conn,
    tag: &str,
    mariadb: bool,
) -> anyhow::Result<Verdict> {
    let (ro, user, role): (u8, String, Option<String>) = conn
        .query_first(format!(
            "SELECT {tag} @@GLOBAL.read_only, CURRENT_USER(), CURRENT_ROLE()"
        ))?
        .unwrap_or_default();
    if ro == 0 {
        return Ok(read_only_verdict(false, &user, &[], mariadb));
    }
    if let Some(role) = role {
        return Ok(Verdict::pass(
            format!("read_only ON; not checked: {user} has the role {role} active"),
            "writable",
        ));
    }
    let account = grantee_of(&user);
    let have: Vec<String> = conn.exec(
        format!(
            "SELECT {tag} PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = ?"
        ),
        (&account,),
    )?;
    Ok(read_only_verdict(true, &account, &have, mariadb))
}

/// The failing verdict when the error-log lines since an action hold `[ERROR]` lines; None when they hold none.
/// `fix` says what the errors mean for this action.
pub fn log_errors_verdict(s: &LogSummary, fix: &str) -> Option<Verdict> {
    (!s.errors.is_empty()).then(|| Verdict::fail(s.errors.join(" | "), "no [ERROR] lines", fix))
}

/// The error log could not be judged here: say so, never pass it as read.
pub fn log_not_readable(expected: &str) -> Verdict {
    Verdict::pass("not checked: the error log is not readable here", expected)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_current_user_is_spelled_as_the_privilege_views_name_the_grantee() {
        assert_eq!(grantee_of("app@localhost"), "'app'@'localhost'");
        assert_eq!(grantee_of("a@b@127.0.0.1"), "'a@b'@'127.0.0.1'");
        assert_eq!(grantee_of("PUBLIC"), "'PUBLIC'");
    }

    #[test]
    fn writes_under_read_only_need_the_flavors_bypass_privilege() {
        assert!(read_only_verdict(false, "'u'@'%'", &[], true).passed);
        let refused = read_only_verdict(true, "'u'@'%'", &["SUPER".into()], true);
        assert!(
            !refused.passed,
            "MariaDB 10.11's SUPER does not bypass read_only"
        );
        assert_eq!(
            refused.observed,
            "read_only ON, 'u'@'%' has no READ_ONLY ADMIN"
        );
        assert!(refused
            .fix
            .unwrap()
            .ends_with("GRANT READ_ONLY ADMIN ON *.* TO 'u'@'%' if writing here is meant"));
        assert!(read_only_verdict(true, "'u'@'%'", &["READ_ONLY ADMIN".into()], true).passed);
        assert!(read_only_verdict(true, "'u'@'%'", &["SUPER".into()], false).passed);
        let mysql = read_only_verdict(true, "'u'@'%'", &["SELECT".into()], false);
        assert_eq!(
            mysql.observed,
            "read_only ON, 'u'@'%' has no CONNECTION_ADMIN or SUPER"
        );
    }

    #[test]
    fn an_unsupported_version_is_refused_with_the_reason() {
        assert!(version_verdict(&Ok(())).passed);
        let v = version_verdict(&Err("MySQL 5.6 is too old: upgrade".into()));
        assert!(!v.passed);
        assert_eq!(v.fix.as_deref(), Some("MySQL 5.6 is too old: upgrade"));
    }

    #[test]
    fn a_missing_control_fails_only_where_the_plan_restarts() {
        let mut need = ControlNeed {
            name: "server control",
            needed: true,
            expected: "a way to start the server again",
            fix: "pass --sandbox NAME",
        };
        let v = control_verdict(None, &need);
        assert!(
            !v.passed && v.observed == "none" && v.fix.as_deref() == Some("pass --sandbox NAME")
        );
        assert!(control_verdict(Some("sandbox s".into()), &need).passed);
        need.needed = false;
        let v = control_verdict(None, &need);
        assert!(v.passed && v.observed == "not needed", "{v:?}");
    }

    #[test]
    fn an_unknown_drop_in_is_refused_with_the_reason() {
        assert!(dropin_verdict(&Ok(PathBuf::from("/etc/mysql/conf.d/99-innops.cnf"))).passed);
        let v = dropin_verdict(&Err("no option file: pass --config-file".into()));
        assert!(!v.passed && v.fix.as_deref().unwrap().contains("--config-file"));
    }

    fn space(strictly_more: bool) -> SpaceNeed {
        SpaceNeed {
            name: "free space",
            dir: Some(PathBuf::from("/var/lib/mysql")),
            place: "the data directory",
            bytes: 64 << 20,
            for_what: "the restart",
            fix: "free space first",
            strictly_more,
        }
    }

    #[test]
    fn free_space_is_judged_only_where_it_can_be_read() {
        let need = space(false);
        assert!(
            space_verdict(Some(64 << 20), &need).passed,
            "exactly enough"
        );
        let short = space_verdict(Some(1 << 20), &need);
        assert!(!short.passed);
        assert_eq!(
            short.fix.as_deref(),
            Some("the filesystem of /var/lib/mysql has 1M free and the restart needs 64M: free space first")
        );
        // The new redo log beside the old one: exactly its size is not enough.
        assert!(!space_verdict(Some(64 << 20), &space(true)).passed);
        assert!(space_verdict(Some(65 << 20), &space(true)).passed);
        // Not readable, or not on this machine: passed, and it says it did not look.
        let unread = space_verdict(None, &need);
        assert!(unread.passed && unread.observed.starts_with("not checked"));
        let remote = space_verdict(None, &SpaceNeed { dir: None, ..need });
        assert!(remote.passed && remote.observed.contains("not on this machine"));
    }

    #[test]
    fn forced_recovery_refuses_at_any_level_above_zero() {
        assert!(forced_recovery_verdict(0, "x").passed);
        for level in 1..=6 {
            let v = forced_recovery_verdict(level, "restart it first");
            assert!(!v.passed, "{level}");
            assert!(v
                .fix
                .unwrap()
                .ends_with("finish the recovery and restart it first"));
        }
    }

    #[test]
    fn error_lines_since_the_action_fail_the_check() {
        let clean = LogSummary::default();
        assert!(log_errors_verdict(&clean, "x").is_none());
        let s = LogSummary {
            errors: vec!["[ERROR] a".into(), "[ERROR] b".into()],
            ..LogSummary::default()
        };
        let v = log_errors_verdict(&s, "read them").unwrap();
        assert!(!v.passed && v.observed == "[ERROR] a | [ERROR] b");
    }
}
