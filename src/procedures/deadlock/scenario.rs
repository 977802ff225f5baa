//! Deadlock scenarios as data: a TOML file naming the sessions, the setup statements, and the ordered
//! statements with what each is expected to do. Errors name the file, the line and the field.
//!
//! ```toml
//! description = "..."
//! sessions = ["t1", "t2"]
//! setup = ["CREATE TABLE t (i INT) ENGINE=InnoDB", "INSERT INTO t (i) VALUES (1)"]
//! lock_wait_timeout = { t1 = 4 }         # seconds, per session (default: --lock-wait-timeout)
//!
//! [[step]]
//! session = "t2"
//! sql = "DELETE FROM t WHERE i = 1"
//! expect = "block"                       # ok (default), block, deadlock, timeout
//! then = "deadlock"                      # how a blocked statement ends: ok, deadlock, timeout
//! without_detection = { then = "timeout" }   # with innodb_deadlock_detect=OFF, where it differs
//! ```
//! `{shared_lock}` in a statement becomes the server's shared-lock clause (`FOR SHARE` on MySQL 8.0+, `LOCK IN
//! SHARE MODE` elsewhere).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// What a statement does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expect {
    /// Returns without error.
    Ok,
    /// Waits for a lock (and ends as `then` says).
    Block,
    /// ERROR 1213: chosen as the deadlock victim.
    Deadlock,
    /// ERROR 1205: lock wait timeout.
    Timeout,
}

impl Expect {
    pub fn name(self) -> &'static str {
        match self {
            Expect::Ok => "ok",
            Expect::Block => "block",
            Expect::Deadlock => "deadlock",
            Expect::Timeout => "timeout",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    description: String,
    sessions: Spanned<Vec<Spanned<String>>>,
    #[serde(default)]
    setup: Vec<String>,
    #[serde(default)]
    lock_wait_timeout: Option<Spanned<BTreeMap<String, u64>>>,
    #[serde(default)]
    step: Vec<RawStep>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    session: Spanned<String>,
    sql: Spanned<String>,
    #[serde(default)]
    expect: Option<Spanned<Expect>>,
    #[serde(default)]
    then: Option<Spanned<Expect>>,
    #[serde(default)]
    without_detection: Option<Spanned<RawExpectation>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpectation {
    expect: Option<Expect>,
    then: Option<Expect>,
}

/// What a step is expected to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Expectation {
    pub expect: Expect,
    /// How a blocked statement ends.
    pub then: Option<Expect>,
}

impl Expectation {
    pub fn describe(&self) -> String {
        match self.then {
            Some(t) => format!("block, then {}", t.name()),
            None => self.expect.name().to_string(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub session: String,
    pub sql: String,
    pub expected: Expectation,
    /// With innodb_deadlock_detect=OFF.
    pub without_detection: Expectation,
}

#[derive(Debug, Clone, Serialize)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub sessions: Vec<String>,
    pub setup: Vec<String>,
    /// Seconds of innodb_lock_wait_timeout per session, where the file sets one.
    pub lock_wait_timeout: BTreeMap<String, u64>,
    pub steps: Vec<Step>,
}

/// The scenarios innops carries, by name.
pub const BUILT_IN: &[(&str, &str)] = &[
    (
        "share-then-delete",
        include_str!("../../../playbooks/deadlocks/share-then-delete.toml"),
    ),
    (
        "opposite-order",
        include_str!("../../../playbooks/deadlocks/opposite-order.toml"),
    ),
    (
        "gap-insert",
        include_str!("../../../playbooks/deadlocks/gap-insert.toml"),
    ),
];

/// A built-in scenario by name, or a file.
pub fn load(name_or_file: &str) -> Result<Scenario, String> {
    if let Some((name, text)) = BUILT_IN.iter().find(|(n, _)| *n == name_or_file) {
        return parse(name, &format!("playbooks/deadlocks/{name}.toml"), text);
    }
    let path = Path::new(name_or_file);
    if !path.exists() {
        let names: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "{name_or_file} is neither a built-in scenario nor a file: give one of {} or the path of a scenario file",
            names.join(", ")
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read {}: {}",
            path.display(),
            crate::error::describe_io(&e)
        )
    })?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scenario".into());
    parse(&name, &path.display().to_string(), &text)
}

/// 1-based line of a byte offset.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// Parse and validate; an error reads `FILE:LINE: field F: what is wrong, and what to do`.
pub fn parse(name: &str, file: &str, text: &str) -> Result<Scenario, String> {
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        let src = text.lines().nth(line - 1).unwrap_or("");
        let field = src
            .split_once('=')
            .map(|(k, _)| k.trim().trim_start_matches('{').trim().to_string())
            .filter(|k| !k.is_empty() && !k.starts_with('['));
        let msg = e.message().trim().replace('\n', " ");
        match field {
            Some(f) => format!("{file}:{line}: field {f}: {msg}: fix the scenario file"),
            None => format!("{file}:{line}: {msg}: fix the scenario file"),
        }
    })?;
    let at = |span: std::ops::Range<usize>, field: &str, what: String| {
        format!(
            "{file}:{}: field {field}: {what}",
            line_of(text, span.start)
        )
    };
    if raw.sessions.get_ref().is_empty() {
        return Err(at(
            raw.sessions.span(),
            "sessions",
            "no session is named: list at least one, e.g. sessions = [\"t1\", \"t2\"]".into(),
        ));
    }
    let mut sessions: Vec<String> = Vec::new();
    for s in raw.sessions.get_ref() {
        let n = s.get_ref();
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(at(
                s.span(),
                "sessions",
                format!("session name {n:?} must be letters, digits, '_' or '-': rename it"),
            ));
        }
        if sessions.contains(n) {
            return Err(at(
                s.span(),
                "sessions",
                format!("session {n} is named twice: name each session once"),
            ));
        }
        sessions.push(n.clone());
    }
    let timeouts = raw
        .lock_wait_timeout
        .as_ref()
        .map(|t| (t.get_ref().clone(), t.span()))
        .unwrap_or_default();
    for (s, secs) in &timeouts.0 {
        if !sessions.contains(s) || *secs == 0 || *secs > 3600 {
            return Err(at(
                timeouts.1.clone(),
                "lock_wait_timeout",
                format!("{s} = {secs} must name a session of `sessions` and give 1 to 3600 seconds: fix it"),
            ));
        }
    }
    if raw.step.is_empty() {
        return Err(format!(
            "{file}:1: field step: the scenario has no statements: add [[step]] tables with session and sql"
        ));
    }
    let mut steps = Vec::new();
    for (i, s) in raw.step.iter().enumerate() {
        let n = i + 1;
        let session = s.session.get_ref();
        if !sessions.contains(session) {
            return Err(at(
                s.session.span(),
                &format!("step[{n}].session"),
                format!(
                    "{session} is not one of the sessions ({}): name one of them or add it to `sessions`",
                    sessions.join(", ")
                ),
            ));
        }
        if s.sql.get_ref().trim().is_empty() {
            return Err(at(
                s.sql.span(),
                &format!("step[{n}].sql"),
                "the statement is empty: give the SQL this session sends".into(),
            ));
        }
        let expected = expectation(
            s.expect.as_ref().map(|e| *e.get_ref()),
            s.then.as_ref().map(|e| *e.get_ref()),
        )
        .map_err(|what| {
            let span = s
                .then
                .as_ref()
                .map(|t| t.span())
                .or(s.expect.as_ref().map(|e| e.span()))
                .unwrap_or(s.session.span());
            at(span, &format!("step[{n}].then"), what)
        })?;
        let without_detection = match &s.without_detection {
            None => expected,
            Some(w) => {
                let r = w.get_ref();
                let e = r.expect.unwrap_or(expected.expect);
                let t = match (r.then, e) {
                    (Some(t), _) => Some(t),
                    (None, Expect::Block) => expected.then,
                    (None, _) => None,
                };
                expectation(Some(e), t)
                    .map_err(|what| at(w.span(), &format!("step[{n}].without_detection"), what))?
            }
        };
        steps.push(Step {
            session: session.clone(),
            sql: s.sql.get_ref().clone(),
            expected,
            without_detection,
        });
    }
    Ok(Scenario {
        name: name.to_string(),
        description: raw.description,
        sessions,
        setup: raw.setup,
        lock_wait_timeout: timeouts.0,
        steps,
    })
}

fn expectation(expect: Option<Expect>, then: Option<Expect>) -> Result<Expectation, String> {
    let expect = expect.unwrap_or(Expect::Ok);
    match (expect, then) {
        (Expect::Block, None) => Err(
            "a statement expected to block needs `then`: how its wait ends (ok, deadlock or timeout)".into(),
        ),
        (Expect::Block, Some(Expect::Block)) => {
            Err("`then` says how a wait ends: ok, deadlock or timeout, not block".into())
        }
        (Expect::Block, Some(t)) => Ok(Expectation {
            expect,
            then: Some(t),
        }),
        (_, Some(_)) => Err(format!(
            "`then` applies to a statement expected to block, and this one is expected to {}: set expect = \"block\" or drop `then`",
            expect.name()
        )),
        (_, None) => Ok(Expectation { expect, then: None }),
    }
}

impl Scenario {
    /// The statement of a step as sent to this server.
    pub fn sql_for(sql: &str, shared_lock: &str) -> String {
        sql.replace("{shared_lock}", shared_lock)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_scenario_is_valid() {
        for (name, _) in BUILT_IN {
            let s = load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(s.steps.len() >= 4, "{name}");
            assert!(
                s.steps
                    .iter()
                    .any(|s| s.expected.then == Some(Expect::Deadlock)
                        || s.expected.expect == Expect::Deadlock),
                "{name} expects a deadlock"
            );
        }
    }

    const GOOD: &str = r#"sessions = ["a", "b"]
setup = ["CREATE TABLE t (i INT)"]

[[step]]
session = "a"
sql = "START TRANSACTION"

[[step]]
session = "b"
sql = "DELETE FROM t"
expect = "block"
then = "deadlock"
without_detection = { then = "timeout" }
"#;

    #[test]
    fn a_good_file_gives_its_steps_and_the_expectations_without_detection() {
        let s = parse("x", "x.toml", GOOD).unwrap();
        assert_eq!(s.steps.len(), 2);
        assert_eq!(s.steps[0].expected.expect, Expect::Ok);
        assert_eq!(s.steps[1].expected.then, Some(Expect::Deadlock));
        assert_eq!(s.steps[1].without_detection.expect, Expect::Block);
        assert_eq!(s.steps[1].without_detection.then, Some(Expect::Timeout));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let bad = GOOD.replace("then = \"deadlock\"", "then = \"dedlock\"");
        let e = parse("x", "dir/x.toml", &bad).unwrap_err();
        assert!(e.starts_with("dir/x.toml:12: field then:"), "{e}");
        assert!(e.contains("dedlock"), "{e}");

        let bad = GOOD.replace("session = \"b\"", "session = \"c\"");
        let e = parse("x", "x.toml", &bad).unwrap_err();
        assert!(
            e.starts_with("x.toml:9: field step[2].session: c is not one of the sessions (a, b)"),
            "{e}"
        );

        let bad = GOOD.replace("then = \"deadlock\"\n", "");
        let e = parse("x", "x.toml", &bad).unwrap_err();
        assert!(e.starts_with("x.toml:11: field step[2].then:"), "{e}");

        let bad = GOOD.replace(
            "sql = \"START TRANSACTION\"",
            "sql = \"START TRANSACTION\"\nsq = 1",
        );
        let e = parse("x", "x.toml", &bad).unwrap_err();
        assert!(e.starts_with("x.toml:7: field sq:"), "{e}");
        assert!(e.contains("unknown field"), "{e}");

        let bad = GOOD.replace("sessions = [\"a\", \"b\"]", "sessions = [\"a\", \"a\"]");
        let e = parse("x", "x.toml", &bad).unwrap_err();
        assert!(
            e.starts_with("x.toml:1: field sessions: session a is named twice"),
            "{e}"
        );
    }
}
