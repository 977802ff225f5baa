//! Deadlock scenarios as data: a TOML file naming the sessions, the setup statements, and the ordered
//! statements with what each is expected to do. Errors name the file, the line and the field.
//!
//! ```toml
//! description = "..."
//! sessions = ["t1", "t2"]
//! setup = ["CREATE TABLE t (i INT) ENGINE=InnoDB", "INSERT INTO t (i) VALUES (1)"]
//! lock_wait_timeout = { t1 = 4 }         # seconds, per session (default: --lock-wait-timeout)
//! deadlocks = 1                          # deadlock victims each run has (with detection on); needed only
//!                                        # where an expectation allows `deadlock` among other ends
//!
//! [[step]]
//! session = "t2"
//! sql = "DELETE FROM t WHERE i = 1"
//! expect = "block"                       # ok (default), block, deadlock, timeout, { error = N }
//! then = "deadlock"                      # how a blocked statement ends: ok, deadlock, timeout, { error = N }
//! without_detection = { then = "timeout" }   # with innodb_deadlock_detect=OFF, where it differs
//!
//! [[step]]
//! session = "t1"
//! sql = "SELECT i FROM t ORDER BY i FOR UPDATE SKIP LOCKED"
//! rows = [[1], [3]]                      # the rows it returns, in order (each value compared as text)
//! row_count = 2                          # or only how many
//! ```
//! - `block` is confirmed from the server before the next statement is sent: the session's transaction in
//!   `LOCK WAIT` (information_schema.INNODB_TRX) for a row or table lock, or the session's processlist state
//!   `Waiting for … lock` (a metadata lock, a table lock, `FLUSH TABLES WITH READ LOCK`) or `User lock`
//!   (GET_LOCK). Every session's `innodb_lock_wait_timeout` and `lock_wait_timeout` (metadata locks) are the
//!   scenario's value, so every wait ends in ERROR 1205 at the latest.
//! - `deadlock` is ERROR 1213, `timeout` ERROR 1205, `{ error = N }` any other error code, e.g. 1467, MariaDB's
//!   answer to the victim of a deadlock on an AUTO-INC table lock.
//! - A list is "one of": `then = ["ok", "deadlock"]` for a waiter whose fate InnoDB decides (two waiters woken
//!   by one release, one of which is chosen as the victim). Such a scenario says how many victims each run
//!   has with `deadlocks = N`, so that the verdict is the same every run even where the victim is not.
//! - `rows` and `row_count` apply to a statement that ends `ok`; every result set it returns is read to its
//!   end (an error that comes after the first rows, as a scanning locking read's ERROR 1213 does, is its end).
//!
//! `{shared_lock}` in a statement becomes the server's shared-lock clause (`FOR SHARE` on MySQL 8.0+, `LOCK IN
//! SHARE MODE` elsewhere).

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use toml::Spanned;

/// How a statement ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum End {
    /// Returns without error.
    Ok,
    /// ERROR 1213: chosen as the deadlock victim.
    Deadlock,
    /// ERROR 1205: lock wait timeout.
    Timeout,
    /// Any other error code.
    Error(u16),
}

impl End {
    pub fn name(self) -> String {
        match self {
            End::Ok => "ok".into(),
            End::Deadlock => "deadlock".into(),
            End::Timeout => "timeout".into(),
            End::Error(n) => format!("error {n}"),
        }
    }

    /// How a statement that returned `code` (None: no error) ended.
    pub fn of(code: Option<u16>) -> End {
        match code {
            None => End::Ok,
            Some(1213) => End::Deadlock,
            Some(1205) => End::Timeout,
            Some(n) => End::Error(n),
        }
    }
}

impl Serialize for End {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// What the file says in `expect` or `then`: `block`, an end, or a list of ends (one of them).
#[derive(Debug, Clone, PartialEq, Eq)]
enum RawExpect {
    Block,
    Ends(Vec<End>),
}

const EXPECT_VALUES: &str = "ok, block, deadlock, timeout, { error = N } or a list of these ends";

struct RawExpectVisitor;

impl<'de> Visitor<'de> for RawExpectVisitor {
    type Value = RawExpect;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "{EXPECT_VALUES}")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<RawExpect, E> {
        Ok(match v {
            "ok" => RawExpect::Ends(vec![End::Ok]),
            "block" => RawExpect::Block,
            "deadlock" => RawExpect::Ends(vec![End::Deadlock]),
            "timeout" => RawExpect::Ends(vec![End::Timeout]),
            other => {
                return Err(E::custom(format!(
                    "unknown expectation `{other}`: give {EXPECT_VALUES}"
                )))
            }
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawExpect, A::Error> {
        let mut code: Option<u16> = None;
        while let Some(k) = map.next_key::<String>()? {
            if k != "error" {
                return Err(de::Error::custom(format!(
                    "unknown key `{k}`: an error expectation is {{ error = N }}"
                )));
            }
            code = Some(map.next_value()?);
        }
        match code {
            Some(c) if c > 0 => Ok(RawExpect::Ends(vec![End::of(Some(c))])),
            _ => Err(de::Error::custom(
                "an error expectation is { error = N } with N the error code, e.g. { error = 1467 }",
            )),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawExpect, A::Error> {
        let mut ends = Vec::new();
        while let Some(e) = seq.next_element::<RawExpect>()? {
            match e {
                RawExpect::Block => {
                    return Err(de::Error::custom(
                        "a list gives the ends a statement may have (ok, deadlock, timeout, { error = N }), not block",
                    ))
                }
                RawExpect::Ends(v) => {
                    for x in v {
                        if !ends.contains(&x) {
                            ends.push(x);
                        }
                    }
                }
            }
        }
        if ends.is_empty() {
            return Err(de::Error::custom(
                "an empty list allows no end: give at least one",
            ));
        }
        Ok(RawExpect::Ends(ends))
    }
}

impl<'de> Deserialize<'de> for RawExpect {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawExpect, D::Error> {
        d.deserialize_any(RawExpectVisitor)
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
    deadlocks: Option<Spanned<u64>>,
    #[serde(default)]
    step: Vec<RawStep>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    session: Spanned<String>,
    sql: Spanned<String>,
    #[serde(default)]
    expect: Option<Spanned<RawExpect>>,
    #[serde(default)]
    then: Option<Spanned<RawExpect>>,
    #[serde(default)]
    rows: Option<Spanned<Vec<Vec<toml::Value>>>>,
    #[serde(default)]
    row_count: Option<Spanned<u64>>,
    #[serde(default)]
    without_detection: Option<Spanned<RawExpectation>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpectation {
    expect: Option<RawExpect>,
    then: Option<RawExpect>,
}

/// What a step is expected to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expectation {
    /// Waits for a lock first (confirmed from the server before the next statement is sent).
    pub block: bool,
    /// How it ends: one of these.
    pub ends: Vec<End>,
}

impl Expectation {
    pub fn describe(&self) -> String {
        let ends = self
            .ends
            .iter()
            .map(|e| e.name())
            .collect::<Vec<_>>()
            .join(" or ");
        if self.block {
            format!("block, then {ends}")
        } else {
            ends
        }
    }

    /// Ends as a deadlock victim, whatever happens.
    pub fn surely_deadlocks(&self) -> bool {
        self.ends == [End::Deadlock]
    }

    /// More than one end is allowed.
    pub fn one_of(&self) -> bool {
        self.ends.len() > 1
    }

    pub fn allows(&self, end: End) -> bool {
        self.ends.contains(&end)
    }
}

/// What a statement must return, where the file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowsCheck {
    /// The rows, each value as text, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows: Option<Vec<Vec<String>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_count: Option<u64>,
}

impl RowsCheck {
    pub fn is_empty(&self) -> bool {
        self.rows.is_none() && self.row_count.is_none()
    }

    /// Whether `got` (NULL as None) is what the file says.
    pub fn matches(&self, got: &[Vec<Option<String>>]) -> bool {
        let count_ok = self.row_count.is_none_or(|n| n == got.len() as u64);
        let rows_ok = self.rows.as_ref().is_none_or(|want| {
            want.len() == got.len()
                && want.iter().zip(got).all(|(w, g)| {
                    w.len() == g.len()
                        && w.iter()
                            .zip(g)
                            .all(|(a, b)| b.as_deref() == Some(a.as_str()))
                })
        });
        count_ok && rows_ok
    }

    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = &self.rows {
            parts.push(format!(
                "rows {}",
                rows_text(r.iter().map(|r| r.iter().map(|v| Some(v.as_str()))))
            ));
        }
        if let Some(n) = self.row_count {
            parts.push(format!("{n} row(s)"));
        }
        parts.join(", ")
    }
}

/// Rows as `[[1], [3]]` (NULL as NULL).
pub fn rows_text<'a, R, V>(rows: R) -> String
where
    R: IntoIterator<Item = V>,
    V: IntoIterator<Item = Option<&'a str>>,
{
    let rows: Vec<String> = rows
        .into_iter()
        .map(|r| {
            let vals: Vec<String> = r
                .into_iter()
                .map(|v| match v {
                    Some(s) if s.parse::<f64>().is_ok() => s.to_string(),
                    Some(s) => format!("{s:?}"),
                    None => "NULL".into(),
                })
                .collect();
            format!("[{}]", vals.join(", "))
        })
        .collect();
    format!("[{}]", rows.join(", "))
}

#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub session: String,
    pub sql: String,
    pub expected: Expectation,
    /// With innodb_deadlock_detect=OFF.
    pub without_detection: Expectation,
    #[serde(skip_serializing_if = "RowsCheck::is_empty")]
    pub returns: RowsCheck,
}

#[derive(Debug, Clone, Serialize)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub sessions: Vec<String>,
    pub setup: Vec<String>,
    /// Seconds of innodb_lock_wait_timeout per session, where the file sets one.
    pub lock_wait_timeout: BTreeMap<String, u64>,
    /// Deadlock victims of each run with detection on, where the file says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadlocks: Option<u64>,
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

/// Where an error is: the file's name and text, to turn a span into `FILE:LINE: field F: …`.
struct Here<'a> {
    file: &'a str,
    text: &'a str,
}

impl Here<'_> {
    fn at(&self, span: std::ops::Range<usize>, field: &str, what: String) -> String {
        format!(
            "{}:{}: field {field}: {what}",
            self.file,
            line_of(self.text, span.start)
        )
    }

    /// TOML's own error, with the field it stopped at when the line names one.
    fn toml_error(&self, e: toml::de::Error) -> String {
        let line = e.span().map(|s| line_of(self.text, s.start)).unwrap_or(1);
        let src = self.text.lines().nth(line - 1).unwrap_or("");
        let field = src
            .split_once('=')
            .map(|(k, _)| k.trim().trim_start_matches('{').trim().to_string())
            .filter(|k| !k.is_empty() && !k.starts_with('['));
        let msg = e.message().trim().replace('\n', " ");
        let file = self.file;
        match field {
            Some(f) => format!("{file}:{line}: field {f}: {msg}: fix the scenario file"),
            None => format!("{file}:{line}: {msg}: fix the scenario file"),
        }
    }
}

/// Parse and validate; an error reads `FILE:LINE: field F: what is wrong, and what to do`.
pub fn parse(name: &str, file: &str, text: &str) -> Result<Scenario, String> {
    let here = Here { file, text };
    let raw: RawFile = toml::from_str(text).map_err(|e| here.toml_error(e))?;
    let sessions = session_names(&here, &raw.sessions)?;
    let timeouts = raw
        .lock_wait_timeout
        .as_ref()
        .map(|t| (t.get_ref().clone(), t.span()))
        .unwrap_or_default();
    for (s, secs) in &timeouts.0 {
        if !sessions.contains(s) || *secs == 0 || *secs > 3600 {
            return Err(here.at(
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
    let steps = raw
        .step
        .iter()
        .enumerate()
        .map(|(i, s)| parse_step(&here, &sessions, i + 1, s))
        .collect::<Result<Vec<_>, _>>()?;
    check_victims(&here, &steps, raw.deadlocks.as_ref())?;
    Ok(Scenario {
        name: name.to_string(),
        description: raw.description,
        sessions,
        setup: raw.setup,
        lock_wait_timeout: timeouts.0,
        deadlocks: raw.deadlocks.map(|d| *d.get_ref()),
        steps,
    })
}

/// The session names: at least one, each a plain word, none twice.
fn session_names(
    here: &Here,
    names: &Spanned<Vec<Spanned<String>>>,
) -> Result<Vec<String>, String> {
    if names.get_ref().is_empty() {
        return Err(here.at(
            names.span(),
            "sessions",
            "no session is named: list at least one, e.g. sessions = [\"t1\", \"t2\"]".into(),
        ));
    }
    let mut sessions: Vec<String> = Vec::new();
    for s in names.get_ref() {
        let n = s.get_ref();
        if n.is_empty()
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(here.at(
                s.span(),
                "sessions",
                format!("session name {n:?} must be letters, digits, '_' or '-': rename it"),
            ));
        }
        if sessions.contains(n) {
            return Err(here.at(
                s.span(),
                "sessions",
                format!("session {n} is named twice: name each session once"),
            ));
        }
        sessions.push(n.clone());
    }
    Ok(sessions)
}

/// Step `n` (from 1) of the file, checked against the sessions.
fn parse_step(here: &Here, sessions: &[String], n: usize, s: &RawStep) -> Result<Step, String> {
    let session = s.session.get_ref();
    if !sessions.contains(session) {
        return Err(here.at(
            s.session.span(),
            &format!("step[{n}].session"),
            format!(
                "{session} is not one of the sessions ({}): name one of them or add it to `sessions`",
                sessions.join(", ")
            ),
        ));
    }
    if s.sql.get_ref().trim().is_empty() {
        return Err(here.at(
            s.sql.span(),
            &format!("step[{n}].sql"),
            "the statement is empty: give the SQL this session sends".into(),
        ));
    }
    let (expected, without_detection) = step_expectations(here, n, s)?;
    let returns = rows_check(here, n, s)?;
    let returns_ok = expected.allows(End::Ok) && without_detection.allows(End::Ok);
    if !returns.is_empty() && !returns_ok {
        let span = s
            .rows
            .as_ref()
            .map(|r| r.span())
            .or(s.row_count.as_ref().map(|c| c.span()))
            .expect("given");
        return Err(here.at(
            span,
            &format!("step[{n}].rows"),
            format!(
                "rows are checked on a statement that returns, and this one is expected to end {}: drop `rows`/`row_count` or expect ok",
                expected.describe()
            ),
        ));
    }
    Ok(Step {
        session: session.clone(),
        sql: s.sql.get_ref().clone(),
        expected,
        without_detection,
        returns,
    })
}

/// How step `n` ends with deadlock detection on, and without it (the same unless `without_detection` says).
fn step_expectations(
    here: &Here,
    n: usize,
    s: &RawStep,
) -> Result<(Expectation, Expectation), String> {
    let raw_expect = s.expect.as_ref().map(|e| e.get_ref().clone());
    let raw_then = s.then.as_ref().map(|e| e.get_ref().clone());
    let expected = expectation(raw_expect.clone(), raw_then.clone()).map_err(|what| {
        let span = s
            .then
            .as_ref()
            .map(|t| t.span())
            .or(s.expect.as_ref().map(|e| e.span()))
            .unwrap_or(s.session.span());
        here.at(span, &format!("step[{n}].then"), what)
    })?;
    let without_detection = match &s.without_detection {
        None => expected.clone(),
        Some(w) => {
            let r = w.get_ref();
            let e = r.expect.clone().or(raw_expect);
            let t = match (&r.then, &e) {
                (Some(t), _) => Some(t.clone()),
                (None, Some(RawExpect::Block)) => raw_then,
                (None, _) => None,
            };
            expectation(e, t)
                .map_err(|what| here.at(w.span(), &format!("step[{n}].without_detection"), what))?
        }
    };
    Ok((expected, without_detection))
}

/// The rows (or row count) step `n` must return; the two agree when both are given.
fn rows_check(here: &Here, n: usize, s: &RawStep) -> Result<RowsCheck, String> {
    let rows = match &s.rows {
        None => None,
        Some(r) => Some(
            r.get_ref()
                .iter()
                .map(|row| row.iter().map(value_text).collect::<Option<Vec<_>>>())
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    here.at(
                        r.span(),
                        &format!("step[{n}].rows"),
                        "each value must be a number, a string or a boolean: write the rows as e.g. [[1, \"a\"], [3, \"c\"]]".into(),
                    )
                })?,
        ),
    };
    let returns = RowsCheck {
        rows,
        row_count: s.row_count.as_ref().map(|c| *c.get_ref()),
    };
    if let (Some(r), Some(c)) = (&returns.rows, returns.row_count) {
        if r.len() as u64 != c {
            return Err(here.at(
                s.row_count.as_ref().expect("given").span(),
                &format!("step[{n}].row_count"),
                format!(
                    "row_count = {c} but `rows` lists {}: give one of them, or make them agree",
                    r.len()
                ),
            ));
        }
    }
    Ok(returns)
}

/// `deadlocks` (victims per run) is given where a step may or may not be a victim, no step is a victim without
/// detection, and the count is one the steps allow.
fn check_victims(
    here: &Here,
    steps: &[Step],
    deadlocks: Option<&Spanned<u64>>,
) -> Result<(), String> {
    let file = here.file;
    let may_deadlock = |w: &Expectation| w.one_of() && w.allows(End::Deadlock);
    if deadlocks.is_none() {
        if let Some(i) = steps.iter().position(|s| may_deadlock(&s.expected)) {
            return Err(format!(
                "{file}:1: field deadlocks: step {} may or may not end as a deadlock victim: say how many victims each run has, e.g. deadlocks = 1",
                i + 1
            ));
        }
    }
    if let Some(i) = steps
        .iter()
        .position(|s| may_deadlock(&s.without_detection))
    {
        return Err(format!(
            "{file}:1: field step[{}].without_detection: without deadlock detection no statement ends as a victim: expect timeout (or ok) there",
            i + 1
        ));
    }
    if let Some(d) = deadlocks {
        let sure = steps
            .iter()
            .filter(|s| s.expected.surely_deadlocks())
            .count() as u64;
        // A victim may be told with another error than 1213 (MariaDB's 1467 for an AUTO-INC lock's victim).
        let most = steps
            .iter()
            .filter(|s| {
                s.expected
                    .ends
                    .iter()
                    .any(|e| matches!(e, End::Deadlock | End::Error(_)))
            })
            .count() as u64;
        if *d.get_ref() < sure || *d.get_ref() > most {
            return Err(here.at(
                d.span(),
                "deadlocks",
                format!(
                    "{} victims per run cannot happen: the steps allow {sure} to {most}: fix `deadlocks` or the steps' expectations",
                    d.get_ref()
                ),
            ));
        }
    }
    Ok(())
}

/// A value of `rows` as the text the server sends for it.
fn value_text(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(if *b { "1" } else { "0" }.into()),
        _ => None,
    }
}

fn expectation(expect: Option<RawExpect>, then: Option<RawExpect>) -> Result<Expectation, String> {
    match (expect.unwrap_or(RawExpect::Ends(vec![End::Ok])), then) {
        (RawExpect::Block, None) => Err(
            "a statement expected to block needs `then`: how its wait ends (ok, deadlock, timeout, { error = N }, or a list of them)".into(),
        ),
        (RawExpect::Block, Some(RawExpect::Block)) => {
            Err("`then` says how a wait ends: ok, deadlock, timeout or { error = N }, not block".into())
        }
        (RawExpect::Block, Some(RawExpect::Ends(ends))) => Ok(Expectation { block: true, ends }),
        (RawExpect::Ends(ends), Some(_)) => Err(format!(
            "`then` applies to a statement expected to block, and this one is expected to end {}: set expect = \"block\" or drop `then`",
            Expectation { block: false, ends }.describe()
        )),
        (RawExpect::Ends(ends), None) => Ok(Expectation { block: false, ends }),
    }
}

impl Scenario {
    /// Deadlock victims each run has, with detection on or off: `deadlocks` where the file says (with
    /// detection on), else the statements that surely end as victims.
    pub fn victims_per_run(&self, detect: bool) -> u64 {
        match (detect, self.deadlocks) {
            (true, Some(n)) => n,
            _ => self
                .steps
                .iter()
                .filter(|s| {
                    if detect {
                        s.expected.surely_deadlocks()
                    } else {
                        s.without_detection.surely_deadlocks()
                    }
                })
                .count() as u64,
        }
    }

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
            assert!(s.victims_per_run(true) >= 1, "{name} expects a deadlock");
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
        assert_eq!(
            s.steps[0].expected,
            Expectation {
                block: false,
                ends: vec![End::Ok]
            }
        );
        assert!(s.steps[1].expected.block);
        assert_eq!(s.steps[1].expected.ends, vec![End::Deadlock]);
        assert!(s.steps[1].without_detection.block);
        assert_eq!(s.steps[1].without_detection.ends, vec![End::Timeout]);
        assert_eq!(s.victims_per_run(true), 1);
        assert_eq!(s.victims_per_run(false), 0);
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

    #[test]
    fn error_codes_one_of_lists_and_rows_are_read() {
        let text = r#"sessions = ["a", "b", "c"]
deadlocks = 1

[[step]]
session = "a"
sql = "INSERT INTO t VALUES (NULL)"
expect = { error = 1467 }

[[step]]
session = "b"
sql = "INSERT INTO t VALUES (1)"
expect = "block"
then = ["ok", "deadlock"]
without_detection = { then = "timeout" }

[[step]]
session = "c"
sql = "SELECT i FROM t FOR UPDATE SKIP LOCKED"
rows = [[1, "x"], [3, "y"]]
row_count = 2

[[step]]
session = "c"
sql = "SELECT 1"
expect = "timeout"
"#;
        let s = parse("x", "x.toml", text).unwrap();
        assert_eq!(s.steps[0].expected.ends, vec![End::Error(1467)]);
        assert_eq!(s.steps[0].expected.describe(), "error 1467");
        assert_eq!(s.steps[1].expected.ends, vec![End::Ok, End::Deadlock]);
        assert_eq!(s.steps[1].expected.describe(), "block, then ok or deadlock");
        assert_eq!(s.steps[1].without_detection.ends, vec![End::Timeout]);
        assert_eq!(
            s.steps[2].returns.rows,
            Some(vec![
                vec!["1".to_string(), "x".into()],
                vec!["3".into(), "y".into()]
            ])
        );
        assert!(s.steps[2].returns.matches(&[
            vec![Some("1".into()), Some("x".into())],
            vec![Some("3".into()), Some("y".into())]
        ]));
        assert!(!s.steps[2]
            .returns
            .matches(&[vec![Some("1".into()), Some("x".into())]]));
        assert!(!s.steps[2].returns.matches(&[
            vec![Some("1".into()), None],
            vec![Some("3".into()), Some("y".into())]
        ]));
        assert_eq!(s.steps[3].expected.ends, vec![End::Timeout]);
        assert_eq!(s.victims_per_run(true), 1);

        // A victim left open needs the count of victims.
        let e = parse("x", "x.toml", &text.replace("deadlocks = 1\n", "")).unwrap_err();
        assert!(
            e.starts_with("x.toml:1: field deadlocks: step 2 may or may not"),
            "{e}"
        );
        // A count the steps cannot give.
        let e = parse(
            "x",
            "x.toml",
            &text.replace("deadlocks = 1", "deadlocks = 3"),
        )
        .unwrap_err();
        assert!(
            e.starts_with("x.toml:2: field deadlocks: 3 victims per run cannot happen"),
            "{e}"
        );
        // Rows of a statement that does not return.
        let e = parse(
            "x",
            "x.toml",
            &text.replace("row_count = 2", "row_count = 2\nexpect = \"deadlock\""),
        )
        .unwrap_err();
        assert!(
            e.contains("field step[3].rows: rows are checked on a statement that returns"),
            "{e}"
        );
        // rows and row_count that disagree.
        let e = parse(
            "x",
            "x.toml",
            &text.replace("row_count = 2", "row_count = 3"),
        )
        .unwrap_err();
        assert!(
            e.contains("field step[3].row_count: row_count = 3 but `rows` lists 2"),
            "{e}"
        );
        // An error expectation without a code, and block inside a list.
        let e = parse(
            "x",
            "x.toml",
            &text.replace("{ error = 1467 }", "{ code = 1467 }"),
        )
        .unwrap_err();
        assert!(e.starts_with("x.toml:"), "{e}");
        assert!(e.contains("unknown key `code`"), "{e}");
        let e = parse(
            "x",
            "x.toml",
            &text.replace("[\"ok\", \"deadlock\"]", "[\"ok\", \"block\"]"),
        )
        .unwrap_err();
        assert!(e.contains("not block"), "{e}");
    }
}
