//! A captured deadlock turned back into a scenario file (the format of `playbooks/deadlocks/`).
//!
//! A report shows only each transaction's statement at the time of the deadlock, not the earlier statements
//! that took the locks it held. innops rebuilds those: a granted lock that another transaction waits for is
//! taken with a locking read of the same rows, `SELECT * FROM tbl WHERE <the waiter's WHERE> FOR UPDATE` (or
//! `{shared_lock}` for an S lock). A waiting INSERT (its insert-intention lock waits for a gap lock, as in
//! `gap-insert`) has no WHERE: the gap is taken again with a locking read of the key it inserts, which lies in
//! that gap and does not exist yet, so the read takes the gap lock alone. The report shows the key only as the
//! INSERT's values and the bytes of the record the gap is before; the value taken is the INSERT's largest integer
//! below that record's key, through `_rowid` (the primary key when it is one integer column, in MariaDB and
//! MySQL). A lock on another index, or a waiter that is neither, gives a TODO comment instead. Which statement
//! closed the cycle: on MariaDB the report's transaction (1) (the requester the detector started from); on
//! MySQL the last one printed. The tables are not in the report: setup is left empty under a TODO comment
//! naming them.

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

/// The first row of values of an INSERT (`INSERT [IGNORE] [INTO] t [(cols)] VALUES (…), …`), as written.
fn insert_values(sql: &str) -> Option<Vec<String>> {
    let upper = sql.to_ascii_uppercase();
    if !upper.trim_start().starts_with("INSERT") {
        return None;
    }
    let at = upper
        .find(" VALUES")
        .or_else(|| upper.find(")VALUES"))
        .or_else(|| upper.find(" VALUE"))?;
    let rest = &sql[at..];
    let open = rest.find('(')?;
    let mut vals = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut quote: Option<char> = None;
    let mut chars = rest[open + 1..].chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                cur.push(c);
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        cur.push(n);
                    }
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' | '`' => {
                    quote = Some(c);
                    cur.push(c);
                }
                '(' => {
                    depth += 1;
                    cur.push(c);
                }
                ')' if depth == 0 => {
                    vals.push(cur.trim().to_string());
                    return Some(vals);
                }
                ')' => {
                    depth -= 1;
                    cur.push(c);
                }
                ',' if depth == 0 => vals.push(std::mem::take(&mut cur).trim().to_string()),
                c => cur.push(c),
            },
        }
    }
    None
}

/// The first key field of the record a lock is on: `Some(None)` for the supremum (no record after the gap),
/// `Some(Some(k))` for a 1 to 8 byte integer field read as a signed integer (InnoDB stores it with the sign
/// bit flipped), None when it is neither.
fn record_key(l: &Lock) -> Option<Option<i64>> {
    let rec = l.records.first()?;
    if rec.contains("supremum") {
        return Some(None);
    }
    let field = rec
        .lines()
        .find(|x| x.trim_start().starts_with("0: len "))?;
    let hex = field.split("hex ").nth(1)?.split(';').next()?.trim();
    if hex.is_empty() || hex.len() > 16 || hex.len() % 2 != 0 {
        return None;
    }
    let raw = u64::from_str_radix(hex, 16).ok()?;
    let bits = hex.len() as u32 * 4;
    let sign = 1u64 << (bits - 1);
    let flipped = raw ^ sign;
    // Two's complement of `bits` bits, widened.
    let v = if flipped & sign != 0 {
        (flipped as i128 - (1i128 << bits)) as i64
    } else {
        flipped as i64
    };
    Some(Some(v))
}

/// The key an INSERT waiting behind gap lock `l` inserts: its largest integer value below the record the gap
/// is before (any, before the supremum).
fn inserted_key(values: &[String], l: &Lock) -> Option<i64> {
    let bound = record_key(l)?;
    values
        .iter()
        .filter_map(|v| v.parse::<i64>().ok())
        .filter(|v| bound.is_none_or(|b| *v < b))
        .max()
}

/// A lock that covers the gap before its record (a gap lock, or a next-key lock: not `rec but not gap`).
fn covers_gap(l: &Lock) -> bool {
    l.lock_type == "RECORD"
        && !l
            .flags
            .as_deref()
            .is_some_and(|f| f.contains("rec but not gap") || f.contains("insert intention"))
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

fn todo_held(out: &mut String, holder: &str, what: &str, waiter: &str, insert: bool) {
    let why = if insert {
        "the INSERT waits on a lock that is not a gap of the primary key, or gives no integer key in that gap"
    } else {
        "the waiting statement has no WHERE to lock the same rows with"
    };
    out.push_str(&format!(
        "\n# TODO: {holder} held {what}, which {waiter} waited for; innops cannot tell which statement took it\n\
         # ({why}): add a step of {holder} here.\n"
    ));
}

/// The scenario file for a captured deadlock. `mariadb_layout`: the report was MariaDB's (`CONFLICTING WITH`).
pub fn scenario_toml(d: &Deadlock, source: &str, mariadb_layout: bool) -> String {
    let mut out = header(d, source);
    let taken = taken(d);
    transactions(&mut out, d, &taken);
    held_again(&mut out, &taken);
    deadlock_statements(&mut out, d, mariadb_layout);
    out
}

/// The file's opening comments, description, sessions and the setup to fill in.
fn header(d: &Deadlock, source: &str) -> String {
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
    out
}

/// A START TRANSACTION a session, with what it held and waited for as comments.
fn transactions(out: &mut String, d: &Deadlock, taken: &[Taken]) {
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
        step(out, &c, &session(t), "START TRANSACTION", &[]);
    }
}

/// The locks held before the deadlock, taken again by locking reads (or a TODO where innops cannot tell how).
fn held_again(out: &mut String, taken: &[Taken]) {
    for k in taken {
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
                out,
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
            (None, Some(cl)) => {
                let values = wanted.as_deref().and_then(insert_values);
                let key = values
                    .as_ref()
                    .filter(|_| covers_gap(k.lock) && k.lock.index.as_deref() == Some("PRIMARY"))
                    .and_then(|v| inserted_key(v, k.lock));
                match key {
                    Some(key) => step(
                        out,
                        &[
                            format!("{holder} held {what}, which {}'s INSERT waited for.", session(k.waiter)),
                            format!(
                                "Taken again with a locking read of the key {} inserts ({key}, its largest integer value below the"
                                , session(k.waiter)
                            ),
                            "record the gap is before), which locks the gap alone; _rowid is the primary key when it is one".to_string(),
                            "integer column: if the primary key is another column or several, lock the same gap by hand.".to_string(),
                        ],
                        &holder,
                        &format!(
                            "SELECT * FROM {} WHERE _rowid = {key} {cl}",
                            crate::sql::quote_ident(table)
                        ),
                        &[],
                    ),
                    None => todo_held(out, &holder, &what, &session(k.waiter), values.is_some()),
                }
            }
            _ => todo_held(out, &holder, &what, &session(k.waiter), false),
        }
    }
}

/// The statements of the deadlock: the ones that waited first, then the one that closed the cycle; then COMMITs.
fn deadlock_statements(out: &mut String, d: &Deadlock, mariadb_layout: bool) {
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
            out,
            &[format!("{}: {note}", session(t))],
            &session(t),
            &q,
            &extra,
        );
    }
    for t in &d.transactions {
        step(out, &[], &session(t), "COMMIT", &[]);
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_latest;
    use super::super::scenario;
    use super::*;

    const MARIADB_STATUS: &str = include_str!("testdata/mariadb-status.txt");
    const MYSQL80_STATUS: &str = include_str!("testdata/mysql80-status.txt");
    /// gap-insert's deadlock as MariaDB 10.11 reported it.
    const MARIADB_GAP_STATUS: &str = include_str!("testdata/mariadb-gap-status.txt");

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
    fn an_inserts_values_are_split_at_top_level_commas_only() {
        assert_eq!(
            insert_values("INSERT INTO t VALUES (16, 2)").unwrap(),
            ["16", "2"]
        );
        assert_eq!(
            insert_values(
                "insert ignore into `t` (a, b, c) values ('x,(y', CONCAT('a', 'b'), -3), (4, 5, 6)"
            )
            .unwrap(),
            ["'x,(y'", "CONCAT('a', 'b')", "-3"]
        );
        assert_eq!(insert_values("DELETE FROM t WHERE i = 1"), None);
    }

    #[test]
    fn a_record_key_is_read_with_its_sign_bit_flipped() {
        let lock = |rec: &str| Lock {
            lock_type: "RECORD".into(),
            records: vec![rec.into()],
            ..Lock::default()
        };
        let twenty = lock("Record lock, heap no 3 PHYSICAL RECORD: n_fields 4; compact format; info bits 0\n 0: len 4; hex 80000014; asc     ;;");
        assert_eq!(record_key(&twenty), Some(Some(20)));
        let minus_one = lock("Record lock, heap no 2\n 0: len 8; hex 7fffffffffffffff; asc ;;");
        assert_eq!(record_key(&minus_one), Some(Some(-1)));
        let sup = lock("Record lock, heap no 1 PHYSICAL RECORD: n_fields 1; compact format; info bits 0\n 0: len 8; hex 73757072656d756d; asc supremum;;");
        assert_eq!(record_key(&sup), Some(None));
        // The inserted key: the largest integer value below the record the gap is before.
        let vals: Vec<String> = ["1", "16", "'x'", "25"].map(String::from).to_vec();
        assert_eq!(inserted_key(&vals, &twenty), Some(16));
        assert_eq!(inserted_key(&vals, &sup), Some(25));
    }

    #[test]
    fn a_gap_insert_report_replays_its_gap_locks_with_locking_reads_of_the_inserted_keys() {
        let d = parse_latest(MARIADB_GAP_STATUS).unwrap();
        let text = scenario_toml(&d, "status.txt", true);
        let sc = scenario::parse("r", "r.toml", &text).expect(&text);
        assert!(
            !text.contains("# TODO: t"),
            "no held lock is left to the DBA: {text}"
        );
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
                    "t2",
                    "SELECT * FROM `t` WHERE _rowid = 16 FOR UPDATE",
                    "ok".into()
                ),
                (
                    "t1",
                    "SELECT * FROM `t` WHERE _rowid = 15 FOR UPDATE",
                    "ok".into()
                ),
                (
                    "t2",
                    "INSERT INTO t VALUES (15, 1)",
                    "block, then ok".into()
                ),
                ("t1", "INSERT INTO t VALUES (16, 2)", "deadlock".into()),
                ("t1", "COMMIT", "ok".into()),
                ("t2", "COMMIT", "ok".into()),
            ]
        );
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
