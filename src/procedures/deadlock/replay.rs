//! A captured deadlock turned back into a scenario file (the format of `playbooks/deadlocks/`).
//!
//! A report shows only each transaction's statement at the time of the deadlock, not the earlier statements
//! that took the locks it held. innops rebuilds those: a granted lock that another transaction waits for is
//! taken with a locking read of the same rows, `SELECT * FROM tbl WHERE <the waiter's WHERE> FOR UPDATE` (or
//! `{shared_lock}` for an S lock). A waiter whose statement has no WHERE (an INSERT) gives no such read: the
//! file says so in a TODO comment. Which statement closed the cycle: on MariaDB the report's transaction (1)
//! (the requester the detector started from); on MySQL the last one printed. The tables are not in the report:
//! setup is left empty under a TODO comment naming them.

use super::parse::{Deadlock, Lock, Txn};

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The statement without the leading `/* … */` comments a tool may have put before it.
fn statement(q: &str) -> String {
    let mut s = q.trim();
    while let Some(rest) = s.strip_prefix("/*") {
        match rest.find("*/") {
            Some(end) => s = rest[end + 2..].trim_start(),
            None => break,
        }
    }
    s.trim().trim_end_matches(';').trim().to_string()
}

/// The WHERE clause of a statement (up to ORDER BY / LIMIT / a locking clause), if it has one.
fn where_clause(sql: &str) -> Option<String> {
    let upper = sql.to_ascii_uppercase();
    let at = upper.find(" WHERE ").or_else(|| upper.find("\nWHERE "))?;
    let rest = &sql[at + 7..];
    let rest_up = &upper[at + 7..];
    let end = [
        " ORDER BY ",
        " LIMIT ",
        " FOR UPDATE",
        " FOR SHARE",
        " LOCK IN SHARE MODE",
    ]
    .iter()
    .filter_map(|k| rest_up.find(k))
    .min()
    .unwrap_or(rest.len());
    let w = rest[..end].trim();
    (!w.is_empty()).then(|| w.to_string())
}

fn describe_lock(l: &Lock) -> String {
    let mut parts = vec![format!(
        "{} {}",
        l.lock_type,
        l.mode.as_deref().unwrap_or("?")
    )];
    parts.extend(l.flags.clone());
    parts.extend(l.index.as_deref().map(|i| format!("on index {i}")));
    parts.push(format!(
        "of {}.{}",
        l.db.as_deref().unwrap_or("?"),
        l.table.as_deref().unwrap_or("?")
    ));
    if !l.records.is_empty() {
        parts.push(format!("({} record(s))", l.records.len()));
    }
    parts.join(" ")
}

fn same_object(a: &Lock, b: &Lock) -> bool {
    a.db == b.db && a.table == b.table && a.index == b.index
}

/// A granted lock of `owner` that `waiter` waits for.
struct Taken<'a> {
    owner: &'a Txn,
    lock: &'a Lock,
    waiter: &'a Txn,
}

/// The granted locks each transaction held that another one waited for. MariaDB lists them under the
/// waiter (`CONFLICTING WITH`, each with its owner's id); MySQL under the owner (`HOLDS THE LOCK(S)`), and the
/// waiter is the other transaction waiting for a lock on the same index.
fn taken(d: &Deadlock) -> Vec<Taken<'_>> {
    let by_id = |id: &Option<String>| d.transactions.iter().find(|t| t.trx_id == *id);
    let mut out: Vec<Taken> = Vec::new();
    for lister in &d.transactions {
        for l in lister.held.iter().filter(|l| !l.waiting) {
            let owner = by_id(&l.trx_id).unwrap_or(lister);
            let waiter = if owner.number != lister.number {
                Some(lister)
            } else {
                d.transactions.iter().find(|t| {
                    t.number != owner.number && t.waiting_for.iter().any(|w| same_object(w, l))
                })
            };
            let Some(waiter) = waiter else { continue };
            let dup = out.iter().any(|o| {
                o.owner.number == owner.number
                    && o.waiter.number == waiter.number
                    && o.lock.mode == l.mode
                    && same_object(o.lock, l)
            });
            if !dup {
                out.push(Taken {
                    owner,
                    lock: l,
                    waiter,
                });
            }
        }
    }
    out
}

fn session(t: &Txn) -> String {
    format!("t{}", t.number)
}

fn step(out: &mut String, comments: &[String], session: &str, sql: &str, extra: &[String]) {
    out.push('\n');
    for c in comments {
        out.push_str(&format!("# {c}\n"));
    }
    out.push_str(&format!(
        "[[step]]\nsession = {}\nsql = {}\n",
        toml_str(session),
        toml_str(sql)
    ));
    for e in extra {
        out.push_str(e);
        out.push('\n');
    }
}

/// The scenario file for a captured deadlock. `mariadb_layout`: the report was MariaDB's (`CONFLICTING WITH`).
pub fn scenario_toml(d: &Deadlock, source: &str, mariadb_layout: bool) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "# Replayed by innops from the deadlock report in {source}{}.\n",
        d.ts.as_deref()
            .map(|t| format!(" (detected {t})"))
            .unwrap_or_default()
    ));
    out.push_str(
        "# The report shows each transaction's statement at the time of the deadlock. The locks each held were\n\
         # taken by earlier statements it does not show: innops takes them with a locking read of the rows the\n\
         # waiting statement wants. Check the file against what the application does before relying on it.\n",
    );
    if d.truncated {
        out.push_str("# NOTE: the report was cut short; transactions or locks may be missing.\n");
    }
    let sessions: Vec<String> = d.transactions.iter().map(session).collect();
    out.push_str(&format!(
        "description = {}\n",
        toml_str(&format!(
            "replayed deadlock{}",
            d.ts.as_deref()
                .map(|t| format!(" of {t}"))
                .unwrap_or_default()
        ))
    ));
    out.push_str(&format!(
        "sessions = [{}]\n",
        sessions
            .iter()
            .map(|s| toml_str(s))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let mut tables: Vec<String> = Vec::new();
    for t in &d.transactions {
        for l in t.waiting_for.iter().chain(&t.held) {
            if let Some(tb) = &l.table {
                let name = match &l.db {
                    Some(db) => format!("`{db}`.`{tb}`"),
                    None => format!("`{tb}`"),
                };
                if !tables.contains(&name) {
                    tables.push(name);
                }
            }
        }
    }
    out.push_str(&format!(
        "# TODO: create the tables here, with the rows the statements below lock: {} (the scenario runs in a\n\
         # schema of its own, so without the database name). The report does not show their definitions: take\n\
         # them from SHOW CREATE TABLE on the server, and insert the rows the statements below touch.\n",
        if tables.is_empty() {
            "the report names none".to_string()
        } else {
            tables.join(", ")
        }
    ));
    out.push_str("setup = []\n");

    // Comments: what each transaction held and waited for.
    let taken = taken(d);
    for t in &d.transactions {
        let mut c = vec![format!(
            "{} is transaction ({}) of the report: trx {}, thread {}, {}@{}{}",
            session(t),
            t.number,
            t.trx_id.as_deref().unwrap_or("?"),
            t.thread_id.map_or("?".into(), |n| n.to_string()),
            t.user.as_deref().unwrap_or("?"),
            t.host.as_deref().unwrap_or("?"),
            if d.victim == Some(t.number) {
                "; InnoDB rolled it back"
            } else {
                ""
            }
        )];
        for k in taken.iter().filter(|k| k.owner.number == t.number) {
            c.push(format!("  held {}", describe_lock(k.lock)));
        }
        for w in &t.waiting_for {
            c.push(format!("  waited for {}", describe_lock(w)));
        }
        step(&mut out, &c, &session(t), "START TRANSACTION", &[]);
    }
    // The locks held before the deadlock, taken again.
    for k in &taken {
        let holder = session(k.owner);
        let table = k.lock.table.as_deref().unwrap_or("?");
        let what = describe_lock(k.lock);
        let wanted = k.waiter.query.as_deref().map(statement);
        let clause = match k.lock.mode.as_deref() {
            Some("S") => Some("{shared_lock}"),
            Some("X") => Some("FOR UPDATE"),
            _ => None,
        };
        match (wanted.as_deref().and_then(where_clause), clause) {
            (Some(w), Some(cl)) if k.lock.lock_type == "RECORD" => step(
                &mut out,
                &[format!(
                    "{holder} held {what}, which {} waited for",
                    session(k.waiter)
                )],
                &holder,
                &format!(
                    "SELECT * FROM {} WHERE {w} {cl}",
                    crate::sql::quote_ident(table)
                ),
                &[],
            ),
            _ => {
                out.push_str(&format!(
                    "\n# TODO: {holder} held {what}, which {} waited for; innops cannot tell which statement took it\n\
                     # (the waiting statement has no WHERE to lock the same rows with): add a step of {holder} here.\n",
                    session(k.waiter)
                ));
            }
        }
    }
    // The statements of the deadlock: the ones that waited first, then the one that closed the cycle.
    let closer = if mariadb_layout {
        d.transactions.first()
    } else {
        d.transactions.last()
    };
    let closer_no = closer.map(|t| t.number);
    let ordered: Vec<&Txn> = d
        .transactions
        .iter()
        .filter(|t| Some(t.number) != closer_no)
        .chain(closer)
        .collect();
    for t in &ordered {
        let victim = d.victim == Some(t.number);
        let end = if victim { "deadlock" } else { "ok" };
        let Some(q) = t.query.as_deref().map(statement) else {
            out.push_str(&format!(
                "\n# TODO: the report shows no statement for {}: add the one it ran.\n",
                session(t)
            ));
            continue;
        };
        let extra = if Some(t.number) == closer_no {
            vec![format!("expect = \"{end}\"")]
        } else {
            vec![
                "expect = \"block\"".to_string(),
                format!("then = \"{end}\""),
            ]
        };
        let note = if Some(t.number) == closer_no {
            "the statement that closed the cycle"
        } else {
            "waits for a lock of another transaction"
        };
        step(
            &mut out,
            &[format!("{}: {note}", session(t))],
            &session(t),
            &q,
            &extra,
        );
    }
    for t in &d.transactions {
        step(&mut out, &[], &session(t), "COMMIT", &[]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_latest;
    use super::super::scenario;
    use super::*;

    const MARIADB_STATUS: &str = include_str!("testdata/mariadb-status.txt");
    const MYSQL80_STATUS: &str = include_str!("testdata/mysql80-status.txt");

    #[test]
    fn statements_lose_leading_comments_and_where_stops_at_a_locking_clause() {
        assert_eq!(
            statement("/* innops:x */ /* y */ DELETE FROM t WHERE i = 1;"),
            "DELETE FROM t WHERE i = 1"
        );
        assert_eq!(
            where_clause("select * from t where a = 1 and b > 2 for update").as_deref(),
            Some("a = 1 and b > 2")
        );
        assert_eq!(where_clause("INSERT INTO t VALUES (1)"), None);
    }

    #[test]
    fn a_mariadb_report_replays_as_the_manuals_example() {
        let d = parse_latest(MARIADB_STATUS).unwrap();
        let text = scenario_toml(&d, "status.txt", true);
        let sc = scenario::parse("r", "r.toml", &text).expect(&text);
        assert!(sc.setup.is_empty());
        assert!(text.contains("# TODO: create the tables here"), "{text}");
        let steps: Vec<(&str, &str, String)> = sc
            .steps
            .iter()
            .map(|s| (s.session.as_str(), s.sql.as_str(), s.expected.describe()))
            .collect();
        assert_eq!(
            steps,
            vec![
                ("t1", "START TRANSACTION", "ok".into()),
                ("t2", "START TRANSACTION", "ok".into()),
                (
                    "t1",
                    "SELECT * FROM `t` WHERE i=1 {shared_lock}",
                    "ok".into()
                ),
                (
                    "t2",
                    "delete from t where i=1",
                    "block, then deadlock".into()
                ),
                ("t1", "delete from t where i=1", "ok".into()),
                ("t1", "COMMIT", "ok".into()),
                ("t2", "COMMIT", "ok".into()),
            ]
        );
        assert!(text.contains("#   held RECORD S on index GEN_CLUST_INDEX of test.t"));
    }

    #[test]
    fn a_mysql_report_takes_the_held_locks_from_the_owner_and_closes_with_the_last() {
        let d = parse_latest(MYSQL80_STATUS).unwrap();
        let text = scenario_toml(&d, "s", false);
        let sc = scenario::parse("r", "r.toml", &text).expect(&text);
        let last = sc.steps.iter().rev().nth(d.transactions.len()).unwrap();
        assert_eq!(last.session, "t2", "{text}");
        assert!(text.contains("t1 held RECORD S"), "{text}");
    }
}
