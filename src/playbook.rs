//! Playbooks: a TOML file naming the target, the procedures in order with their settings (under the names of
//! the command-line flags), benchmark settings and load guards, run as **one** plan: one dry run, one
//! confirmation, one run directory and journal, one `innops resume`.
//!
//! This module reads and checks the file ([`parse`]) and joins the members' plans into one ([`combine`]); the
//! command layer turns each member's settings into the procedure's parameters as the procedure's own command
//! does. Every member step id is prefixed with its member (`convert/copy:d.t`), and while a member step runs it
//! sees its own procedure name, step id and journal records, as in a run of that procedure alone.

use std::path::Path;

use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::error::bad_input;
use crate::plan::{Check, Ctx, Plan, Procedure, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::server::facts::ServerFacts;

/// The procedures a playbook can name.
pub const PROCEDURES: &[Procedure] = &[
    Procedure::Convert,
    Procedure::Redo,
    Procedure::Readonly,
    Procedure::Recover,
    Procedure::Deadlock,
];

/// A playbook file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Playbook {
    /// What the playbook is for (shown in the plan's notes).
    pub description: Option<String>,
    /// The server it works on; command-line connection flags override it.
    #[serde(default)]
    pub target: TargetSpec,
    #[serde(default)]
    pub bench: BenchSpec,
    /// Load guards for every member that copies (convert), unless the member sets its own.
    #[serde(default)]
    pub load: LoadSpec,
    /// The procedures, in order.
    #[serde(default)]
    pub step: Vec<Spanned<MemberSpec>>,
}

/// `[target]`: the connection and control flags of the same names.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TargetSpec {
    pub sandbox: Option<String>,
    pub sandbox_root: Option<String>,
    pub socket: Option<String>,
    pub host: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub defaults_file: Option<String>,
    pub service: Option<String>,
    pub start_cmd: Option<String>,
    pub stop_cmd: Option<String>,
    pub config_file: Option<String>,
}

/// `[bench]`: the benchmark before the first changing step and after the last.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BenchSpec {
    /// false skips both benchmarks (as --no-bench).
    pub enabled: Option<bool>,
    /// Seconds each benchmark runs (as --bench-time).
    pub time: Option<u64>,
    /// true runs the workload through the whole plan (as --bench-during).
    pub during: Option<Spanned<bool>>,
    /// Its threads (as --bench-during-threads).
    pub during_threads: Option<Spanned<u32>>,
}

impl BenchSpec {
    /// `--bench-during`'s threads as the playbook asks for them: None when it does not; `during-threads`
    /// without `during = true` is refused at its line.
    pub fn during_threads(&self, file: &Path, text: &str) -> anyhow::Result<Option<u32>> {
        let on = self.during.as_ref().is_some_and(|d| *d.get_ref());
        match (&self.during_threads, on) {
            (Some(t), false) => Err(error_at(
                file,
                text,
                t.span(),
                Some("during-threads"),
                "during-threads sets the threads of the workload through the plan: add during = true to [bench], or remove it",
            )),
            (t, true) => Ok(Some(
                t.as_ref()
                    .map(|t| *t.get_ref())
                    .unwrap_or(crate::bench::during::DEFAULT_THREADS),
            )),
            (None, false) => Ok(None),
        }
    }
}

/// `[load]`: pt-online-schema-change's load guard for copies.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LoadSpec {
    pub max_load: Option<String>,
    pub critical_load: Option<String>,
}

/// One `[[step]]`: `procedure` and that procedure's flags, by their command-line names.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MemberSpec {
    pub procedure: Option<Spanned<String>>,
    // convert (and recover: tables)
    pub tables: Option<Spanned<Vec<String>>>,
    pub all_myisam: Option<Spanned<bool>>,
    pub strategy: Option<Spanned<String>>,
    pub online_above: Option<Spanned<String>>,
    pub cutover_lock_wait: Option<Spanned<u64>>,
    pub drop_old_table: Option<Spanned<bool>>,
    pub chunk_time: Option<Spanned<u64>>,
    pub verify: Option<Spanned<String>>,
    pub max_load: Option<Spanned<String>>,
    pub critical_load: Option<Spanned<String>>,
    pub restart: Option<Spanned<bool>>,
    // redo
    pub size: Option<Spanned<String>>,
    pub advise: Option<Spanned<bool>>,
    pub interval: Option<Spanned<u64>>,
    pub offline: Option<Spanned<bool>>,
    // readonly
    pub undo: Option<Spanned<bool>>,
    pub min_redo: Option<Spanned<bool>>,
    pub sql_read_only: Option<Spanned<bool>>,
    pub no_preflush: Option<Spanned<bool>>,
    pub preflush_timeout: Option<Spanned<u64>>,
    // recover
    pub out: Option<Spanned<String>>,
    pub copy_to: Option<Spanned<String>>,
    pub max_level: Option<Spanned<u64>>,
    pub allow_level: Option<Spanned<u64>>,
    pub drop_copy: Option<Spanned<bool>>,
    pub verify_load: Option<Spanned<bool>>,
    pub threads: Option<Spanned<u64>>,
    pub mariadbd: Option<Spanned<String>>,
    pub in_place: Option<Spanned<bool>>,
    pub pages: Option<Spanned<String>>,
    // deadlock
    pub scenario: Option<Spanned<String>>,
    pub repeat: Option<Spanned<u64>>,
    pub detect: Option<Spanned<String>>,
    pub lock_wait_timeout: Option<Spanned<u64>>,
    pub schema: Option<Spanned<String>>,
}

/// A set value of a member: its flag name, where it is written, and its value as a flag value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub key: &'static str,
    pub span: std::ops::Range<usize>,
    pub value: FlagValue,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlagValue {
    Switch(bool),
    Text(String),
    List(Vec<String>),
    /// A positional argument of the command (deadlock's scenario).
    Positional(String),
}

impl Setting {
    /// The command-line arguments this setting stands for (nothing for a switch that is off).
    pub fn args(&self) -> Vec<String> {
        match &self.value {
            FlagValue::Switch(true) => vec![format!("--{}", self.key)],
            FlagValue::Switch(false) => vec![],
            FlagValue::Text(v) => vec![format!("--{}={v}", self.key)],
            FlagValue::List(v) => vec![format!("--{}={}", self.key, v.join(","))],
            FlagValue::Positional(v) => vec![v.clone()],
        }
    }
}

/// The flags each procedure takes in a playbook.
pub fn allowed(procedure: Procedure) -> &'static [&'static str] {
    match procedure {
        Procedure::Convert => &[
            "tables",
            "all-myisam",
            "strategy",
            "online-above",
            "cutover-lock-wait",
            "drop-old-table",
            "chunk-time",
            "verify",
            "max-load",
            "critical-load",
            "restart",
        ],
        Procedure::Redo => &["size", "advise", "interval", "offline"],
        Procedure::Readonly => &[
            "undo",
            "min-redo",
            "sql-read-only",
            "no-preflush",
            "preflush-timeout",
        ],
        Procedure::Recover => &[
            "out",
            "copy-to",
            "tables",
            "max-level",
            "allow-level",
            "drop-copy",
            "verify-load",
            "threads",
            "mariadbd",
            "in-place",
            "pages",
        ],
        Procedure::Deadlock => &[
            "scenario",
            "repeat",
            "detect",
            "lock-wait-timeout",
            "schema",
        ],
        _ => &[],
    }
}

impl MemberSpec {
    /// Every value set, in the order of the fields.
    pub fn settings(&self) -> Vec<Setting> {
        let mut out = Vec::new();
        fn b(out: &mut Vec<Setting>, key: &'static str, v: &Option<Spanned<bool>>) {
            if let Some(v) = v {
                out.push(Setting {
                    key,
                    span: v.span(),
                    value: FlagValue::Switch(*v.get_ref()),
                });
            }
        }
        fn s(out: &mut Vec<Setting>, key: &'static str, v: &Option<Spanned<String>>) {
            if let Some(v) = v {
                out.push(Setting {
                    key,
                    span: v.span(),
                    value: FlagValue::Text(v.get_ref().clone()),
                });
            }
        }
        fn n(out: &mut Vec<Setting>, key: &'static str, v: &Option<Spanned<u64>>) {
            if let Some(v) = v {
                out.push(Setting {
                    key,
                    span: v.span(),
                    value: FlagValue::Text(v.get_ref().to_string()),
                });
            }
        }
        if let Some(t) = &self.tables {
            out.push(Setting {
                key: "tables",
                span: t.span(),
                value: FlagValue::List(t.get_ref().clone()),
            });
        }
        b(&mut out, "all-myisam", &self.all_myisam);
        s(&mut out, "strategy", &self.strategy);
        s(&mut out, "online-above", &self.online_above);
        n(&mut out, "cutover-lock-wait", &self.cutover_lock_wait);
        b(&mut out, "drop-old-table", &self.drop_old_table);
        n(&mut out, "chunk-time", &self.chunk_time);
        s(&mut out, "verify", &self.verify);
        s(&mut out, "max-load", &self.max_load);
        s(&mut out, "critical-load", &self.critical_load);
        b(&mut out, "restart", &self.restart);
        s(&mut out, "size", &self.size);
        b(&mut out, "advise", &self.advise);
        n(&mut out, "interval", &self.interval);
        b(&mut out, "offline", &self.offline);
        b(&mut out, "undo", &self.undo);
        b(&mut out, "min-redo", &self.min_redo);
        b(&mut out, "sql-read-only", &self.sql_read_only);
        b(&mut out, "no-preflush", &self.no_preflush);
        n(&mut out, "preflush-timeout", &self.preflush_timeout);
        s(&mut out, "out", &self.out);
        s(&mut out, "copy-to", &self.copy_to);
        n(&mut out, "max-level", &self.max_level);
        n(&mut out, "allow-level", &self.allow_level);
        b(&mut out, "drop-copy", &self.drop_copy);
        b(&mut out, "verify-load", &self.verify_load);
        n(&mut out, "threads", &self.threads);
        s(&mut out, "mariadbd", &self.mariadbd);
        b(&mut out, "in-place", &self.in_place);
        s(&mut out, "pages", &self.pages);
        if let Some(v) = &self.scenario {
            out.push(Setting {
                key: "scenario",
                span: v.span(),
                value: FlagValue::Positional(v.get_ref().clone()),
            });
        }
        n(&mut out, "repeat", &self.repeat);
        s(&mut out, "detect", &self.detect);
        n(&mut out, "lock-wait-timeout", &self.lock_wait_timeout);
        s(&mut out, "schema", &self.schema);
        out
    }
}

/// A checked member: its procedure, its settings, and where its `[[step]]` is.
#[derive(Debug, Clone)]
pub struct Member {
    pub procedure: Procedure,
    pub settings: Vec<Setting>,
    pub span: std::ops::Range<usize>,
}

/// A playbook read and checked.
#[derive(Debug)]
pub struct Checked {
    pub playbook: Playbook,
    pub members: Vec<Member>,
}

/// Where a byte offset is in `text`: line and column, both from 1.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The key written on the line at `offset` (`key = value`), if any.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("");
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches('"');
    (!key.is_empty() && !key.starts_with('[') && !key.starts_with('#')).then(|| key.to_string())
}

/// `FILE:LINE:COL: field NAME: MESSAGE`, as bad input (exit 2).
pub fn error_at(
    file: &Path,
    text: &str,
    span: std::ops::Range<usize>,
    field: Option<&str>,
    message: &str,
) -> anyhow::Error {
    error_in(file, text, span, field, message, "the playbook")
}

/// [`error_at`] for a TOML file of another kind (`what`: "the study"), so every file innops reads names its
/// errors the same way.
pub fn error_in(
    file: &Path,
    text: &str,
    span: std::ops::Range<usize>,
    field: Option<&str>,
    message: &str,
    what: &str,
) -> anyhow::Error {
    let (line, col) = line_col(text, span.start);
    let field = field
        .map(str::to_string)
        .or_else(|| key_at(text, span.start));
    let field = field.map(|f| format!(" field `{f}`:")).unwrap_or_default();
    bad_input(format!(
        "{}:{line}:{col}:{field} {}; fix {what} and run it again",
        file.display(),
        message.trim_end_matches('.')
    ))
}

/// Read and check a playbook: unknown keys, wrong types, procedures it does not know and flags a procedure does
/// not take are errors naming the file, line, column and field.
pub fn parse(file: &Path, text: &str) -> anyhow::Result<Checked> {
    let playbook: Playbook = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        error_at(file, text, span, None, e.message())
    })?;
    if playbook.step.is_empty() {
        return Err(bad_input(format!(
            "{}: the playbook names no procedure: add a [[step]] with procedure = \"convert\", \"redo\", \"readonly\", \"recover\" or \"deadlock\"",
            file.display()
        )));
    }
    let mut members = Vec::new();
    for (i, s) in playbook.step.iter().enumerate() {
        let spec = s.get_ref();
        let Some(proc) = &spec.procedure else {
            return Err(error_at(
                file,
                text,
                s.span(),
                Some("procedure"),
                &format!(
                    "step {} names no procedure: write procedure = \"convert\", \"redo\", \"readonly\", \"recover\" or \"deadlock\"",
                    i + 1
                ),
            ));
        };
        let written = proc.get_ref().as_str();
        let Some(name) = Procedure::named(written).filter(|p| PROCEDURES.contains(p)) else {
            return Err(error_at(
                file,
                text,
                proc.span(),
                Some("procedure"),
                &format!(
                    "'{written}' is not a procedure a playbook can run: write one of {}",
                    PROCEDURES
                        .iter()
                        .map(|p| p.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        };
        let settings = spec.settings();
        for st in &settings {
            if !allowed(name).contains(&st.key) {
                return Err(error_at(
                    file,
                    text,
                    st.span.clone(),
                    Some(st.key),
                    &format!(
                        "{name} takes no `{}`: its settings are {}",
                        st.key,
                        allowed(name).join(", ")
                    ),
                ));
            }
        }
        members.push(Member {
            procedure: name,
            settings,
            span: s.span(),
        });
    }
    Ok(Checked { playbook, members })
}

/// What a playbook run records in its `plan.json` header: enough to build every member's plan again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlaybookParams {
    /// The playbook file, as given.
    pub file: String,
    /// Each member's procedure and the parameters its plan was built from.
    pub members: Vec<MemberParams>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MemberParams {
    pub procedure: Procedure,
    pub params: serde_json::Value,
}

/// The prefix of every step id of member `i` (from 0): its procedure, numbered when it comes again
/// (`convert/`, `redo/`, `convert.2/`).
pub fn member_prefix(members: &[MemberParams], i: usize) -> String {
    let name = &members[i].procedure;
    let n = members[..i].iter().filter(|m| &m.procedure == name).count();
    if n == 0 {
        format!("{name}/")
    } else {
        format!("{name}.{}/", n + 1)
    }
}

/// Run `f` as member `procedure`'s own step `step`: statement tags and journal look-ups are those
/// of the procedure run alone.
fn scoped<T>(
    ctx: &mut Ctx,
    procedure: Procedure,
    prefix: &str,
    step: &str,
    f: impl FnOnce(&mut Ctx) -> T,
) -> T {
    let saved_proc = std::mem::replace(&mut ctx.procedure, procedure);
    let saved_step = std::mem::replace(&mut ctx.step, step.to_string());
    let saved_prefix = std::mem::replace(&mut ctx.journal_prefix, prefix.to_string());
    let r = f(ctx);
    ctx.procedure = saved_proc;
    ctx.step = saved_step;
    ctx.journal_prefix = saved_prefix;
    r
}

fn wrap_check(c: Check, p: Procedure, prefix: &str, step: &str) -> Check {
    let (x, s) = (prefix.to_string(), step.to_string());
    let run = c.run;
    Check {
        name: c.name,
        needs_prior: c.needs_prior,
        run: Box::new(move |ctx| scoped(ctx, p, &x, &s, |ctx| run(ctx))),
    }
}

fn wrap_step(step: Step, p: Procedure, prefix: &str) -> Step {
    let local = step.id.clone();
    let x = prefix.to_string();
    Step {
        id: format!("{prefix}{local}"),
        title: format!("{p}: {}", step.title),
        // A playbook stops at its first refusal: a member's later members may count on every table converted.
        group: None,
        risk: step.risk,
        commands_preview: step.commands_preview,
        pre: step
            .pre
            .into_iter()
            .map(|c| wrap_check(c, p, &x, &local))
            .collect(),
        post: step
            .post
            .into_iter()
            .map(|c| wrap_check(c, p, &x, &local))
            .collect(),
        act: step.act.map(|act| {
            let (x, s) = (x.clone(), local.clone());
            Box::new(move |ctx: &mut Ctx| scoped(ctx, p, &x, &s, |ctx| act(ctx)))
                as crate::plan::ActFn
        }),
        bench: step.bench,
        recover: step.recover.map(|r| {
            let (x, s) = (x.clone(), local.clone());
            Box::new(move |ctx: &mut Ctx| scoped(ctx, p, &x, &s, |ctx| r(ctx)))
                as crate::plan::RecoverFn
        }),
        shortfall: step.shortfall.map(|f| {
            let (x, s) = (x.clone(), local.clone());
            Box::new(move |ctx: &mut Ctx| scoped(ctx, p, &x, &s, |ctx| f(ctx)))
                as crate::plan::ShortfallFn
        }),
    }
}

/// What one member leaves behind and needs, as [`order_problems`] judges it.
#[derive(Debug, Clone)]
pub struct MemberEffect {
    /// The member's step-id prefix without its slash (`convert.2`).
    pub name: String,
    pub procedure: Procedure,
    /// The tables it converts (`db.t`), from its plan's locks.
    pub tables: Vec<String>,
    /// Whether the server is read-only after it: Some(true) for readonly, Some(false) for readonly --undo.
    pub leaves_read_only: Option<bool>,
}

impl MemberEffect {
    fn of(name: &str, plan: &Plan) -> MemberEffect {
        let procedure = plan.header.procedure;
        MemberEffect {
            name: name.trim_end_matches('/').to_string(),
            tables: if procedure == Procedure::Convert {
                plan.locks
                    .iter()
                    .filter_map(|l| l.strip_prefix("table:"))
                    .map(str::to_string)
                    .collect()
            } else {
                Vec::new()
            },
            leaves_read_only: (procedure == Procedure::Readonly).then(|| {
                !plan
                    .header
                    .params
                    .get("undo")
                    .and_then(|u| u.as_bool())
                    .unwrap_or(false)
            }),
            procedure,
        }
    }

    /// The procedures that write to InnoDB (a read-only server refuses them midway, with a raw error).
    fn writes(&self) -> bool {
        matches!(
            self.procedure,
            Procedure::Convert | Procedure::Redo | Procedure::Deadlock
        )
    }
}

/// Where a member would not find the state it needs because of the members before it, one sentence each with
/// the fix. A dry run judges each member against the live server as it is now; this judges it against the
/// state the earlier members will leave (a table already InnoDB after a convert, a server read-only after
/// readonly), so a playbook that would stop midway is refused before anything acts.
pub fn order_problems(members: &[MemberEffect]) -> Vec<String> {
    let mut out = Vec::new();
    let mut read_only_by: Option<&str> = None;
    for (i, m) in members.iter().enumerate() {
        if let Some(by) = read_only_by.filter(|_| m.writes()) {
            out.push(format!(
                "step {} ({}) must write to InnoDB and {by} before it leaves the server read-only (innodb_read_only=1): put it before {by}, or add a readonly step with undo = true between them",
                m.name, m.procedure
            ));
        }
        for t in &m.tables {
            if let Some(earlier) = members[..i].iter().find(|e| e.tables.contains(t)) {
                out.push(format!(
                    "step {} converts {t}, which step {} before it converts already: it would find {t} InnoDB, with the MyISAM original kept as the only rollback copy; convert {t} in one step only",
                    m.name, earlier.name
                ));
            }
        }
        match m.leaves_read_only {
            Some(true) => read_only_by = Some(m.name.as_str()),
            Some(false) => read_only_by = None,
            None => {}
        }
    }
    out
}

/// The check the first step of a playbook carries: the members' order, judged by [`order_problems`].
fn order_check(problems: Vec<String>) -> Check {
    Check::new(
        "each step finds what it needs after the steps before it",
        move |_| {
            Ok(match problems.first() {
                None => Verdict::pass(
                    "no step undoes what a later one needs",
                    "each step finds the state it needs",
                ),
                Some(first) => Verdict::fail(
                    problems.join("; "),
                    "each step finds the state it needs",
                    first.clone(),
                ),
            })
        },
    )
}

/// Join the members' plans, in order, into one plan named `procedure` (`playbook`, or `drill` for the staging
/// drill with its own members): prefixed step ids, every member's notes and locks, and one benchmark (a
/// read-only workload when a member leaves the server read-only, else the first member's).
pub fn combine(
    procedure: Procedure,
    file: &str,
    description: Option<&str>,
    plans: Vec<Plan>,
    facts: &ServerFacts,
    env: &PlanEnv,
) -> anyhow::Result<Plan> {
    let members: Vec<MemberParams> = plans
        .iter()
        .map(|p| MemberParams {
            procedure: p.header.procedure,
            params: p.header.params.clone(),
        })
        .collect();
    let mut notes = Vec::new();
    if let Some(d) = description {
        notes.push(format!("playbook {file}: {d}"));
    }
    let mut steps = Vec::new();
    let mut locks: Vec<String> = Vec::new();
    // A member whose writes stay on this server (--binlog local) keeps the whole run's sessions out of the
    // binary log: the other members (restarts, a redo resize) write no rows of their own.
    let mut session: Vec<String> = Vec::new();
    let read_only_bench = plans
        .iter()
        .find(|p| p.header.procedure == Procedure::Readonly)
        .and_then(|p| p.bench.clone());
    let mut bench = None;
    let effects: Vec<MemberEffect> = plans
        .iter()
        .enumerate()
        .map(|(i, p)| MemberEffect::of(&member_prefix(&members, i), p))
        .collect();
    let problems = order_problems(&effects);
    for (i, plan) in plans.into_iter().enumerate() {
        let prefix = member_prefix(&members, i);
        let proc = plan.header.procedure;
        notes.extend(
            plan.header
                .notes
                .iter()
                .map(|n| format!("{}: {n}", prefix.trim_end_matches('/'))),
        );
        for l in plan.locks {
            if !locks.contains(&l) {
                locks.push(l);
            }
        }
        for st in plan.session {
            if !session.contains(&st) {
                session.push(st);
            }
        }
        if bench.is_none() {
            bench = plan.bench;
        }
        steps.extend(plan.steps.into_iter().map(|mut s| {
            // The drill damages pages on purpose: its recovery falls short by design, and the drill's own
            // figures step judges it against the limit instead.
            if procedure == Procedure::Drill {
                s.shortfall = None;
            }
            wrap_step(s, proc, &prefix)
        }));
    }
    // Judged with the first step, so a playbook that would stop midway is refused before anything acts.
    if let Some(first) = steps.first_mut() {
        first.pre.push(order_check(problems));
    }
    let params = PlaybookParams {
        file: file.to_string(),
        members,
    };
    Ok(Plan {
        header: env.header(procedure, facts, serde_json::to_value(params)?, notes),
        steps,
        bench: read_only_bench.or(bench),
        locks,
        session,
    })
}

/// How a member's plan is built again from its header: the registry's `rebuild`, handed down so the playbook
/// need not know every procedure.
pub type RebuildMember<'a> =
    &'a dyn Fn(&crate::plan::PlanHeader, &ServerFacts, &PlanEnv) -> anyhow::Result<Plan>;

/// Build a playbook's plan again from its `plan.json` header (for `resume`): every member from its recorded
/// parameters, on the facts the server shows now.
pub fn rebuild(
    header: &crate::plan::PlanHeader,
    facts: &ServerFacts,
    env: &PlanEnv,
    rebuild_member: RebuildMember,
) -> anyhow::Result<Plan> {
    let p: PlaybookParams = serde_json::from_value(header.params.clone())?;
    let description = header
        .notes
        .first()
        .and_then(|n| n.strip_prefix(&format!("playbook {}: ", p.file)))
        .map(str::to_string);
    let mut plans = Vec::new();
    for m in &p.members {
        // The drill's own members (damaging pages, say) belong to a drill's run on its sandbox only.
        if m.procedure.is_drill_member() && header.procedure != Procedure::Drill {
            return Err(crate::error::refused(format!(
                "the run's plan.json names the drill's own step {} in a {} run: only `innops drill` runs it; start a new run",
                m.procedure, header.procedure
            )));
        }
        let h = crate::plan::PlanHeader {
            procedure: m.procedure,
            params: m.params.clone(),
            ..header.clone()
        };
        plans.push(rebuild_member(&h, facts, env)?);
    }
    combine(
        header.procedure,
        &p.file,
        description.as_deref(),
        plans,
        facts,
        env,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(text: &str) -> anyhow::Result<Checked> {
        parse(Path::new("pb.toml"), text)
    }

    fn message(r: anyhow::Result<Checked>) -> String {
        crate::error::display_of(&r.expect_err("must be refused"))
    }

    #[test]
    fn a_typo_names_the_file_line_column_and_field() {
        let m = message(parse_str(
            "[[step]]\nprocedure = \"convert\"\ntabels = [\"d.t\"]\n",
        ));
        assert!(m.starts_with("pb.toml:3:1:"), "{m}");
        assert!(m.contains("tabels"), "{m}");
    }

    #[test]
    fn an_unknown_top_level_key_is_an_error_not_ignored() {
        let m = message(parse_str(
            "descriptoin = \"x\"\n[[step]]\nprocedure = \"redo\"\n",
        ));
        assert!(m.starts_with("pb.toml:1:1:"), "{m}");
        assert!(m.contains("descriptoin"), "{m}");
    }

    #[test]
    fn a_wrong_type_names_its_field() {
        let m = message(parse_str(
            "[[step]]\nprocedure = \"convert\"\nchunk-time = \"fast\"\n",
        ));
        assert!(m.starts_with("pb.toml:3:"), "{m}");
        assert!(m.contains("field `chunk-time`"), "{m}");
    }

    #[test]
    fn a_flag_of_another_procedure_names_its_line() {
        let m = message(parse_str(
            "[[step]]\nprocedure = \"redo\"\nsize = \"1G\"\n\n[[step]]\nprocedure = \"readonly\"\nsize = \"2G\"\n",
        ));
        assert!(m.starts_with("pb.toml:7:8:"), "{m}");
        assert!(
            m.contains("field `size`") && m.contains("readonly takes no"),
            "{m}"
        );
    }

    #[test]
    fn an_unknown_procedure_is_named() {
        let m = message(parse_str("[[step]]\nprocedure = \"vacuum\"\n"));
        assert!(m.starts_with("pb.toml:2:13:"), "{m}");
        assert!(m.contains("'vacuum'"), "{m}");
    }

    #[test]
    fn settings_become_the_flags_of_the_same_names() {
        let c = parse_str(
            "[[step]]\nprocedure = \"convert\"\ntables = [\"d.a\", \"d.b\"]\nall-myisam = false\nchunk-time = 250\ndrop-old-table = true\n",
        )
        .unwrap();
        let args: Vec<String> = c.members[0]
            .settings
            .iter()
            .flat_map(Setting::args)
            .collect();
        assert_eq!(
            args,
            ["--tables=d.a,d.b", "--drop-old-table", "--chunk-time=250"]
        );
    }

    #[test]
    fn a_procedure_that_comes_again_gets_its_own_prefix() {
        let m = |p: &str| MemberParams {
            procedure: Procedure::named(p).unwrap(),
            params: serde_json::Value::Null,
        };
        let ms = [m("convert"), m("redo"), m("convert")];
        assert_eq!(member_prefix(&ms, 0), "convert/");
        assert_eq!(member_prefix(&ms, 1), "redo/");
        assert_eq!(member_prefix(&ms, 2), "convert.2/");
    }

    #[test]
    fn bench_during_is_read_with_its_threads_and_threads_alone_are_refused_at_their_line() {
        let c = parse_str("[bench]\nduring = true\n\n[[step]]\nprocedure = \"redo\"\n").unwrap();
        assert_eq!(
            c.playbook
                .bench
                .during_threads(Path::new("pb.toml"), "")
                .unwrap(),
            Some(crate::bench::during::DEFAULT_THREADS)
        );
        let text = "[bench]\nduring = true\nduring-threads = 3\n\n[[step]]\nprocedure = \"redo\"\n";
        let c = parse_str(text).unwrap();
        assert_eq!(
            c.playbook
                .bench
                .during_threads(Path::new("pb.toml"), text)
                .unwrap(),
            Some(3)
        );
        let text = "[bench]\nduring-threads = 3\n\n[[step]]\nprocedure = \"redo\"\n";
        let c = parse_str(text).unwrap();
        let m = crate::error::display_of(
            &c.playbook
                .bench
                .during_threads(Path::new("pb.toml"), text)
                .unwrap_err(),
        );
        assert!(
            m.starts_with("pb.toml:2:18: field `during-threads`:"),
            "{m}"
        );
        assert!(parse_str("[bench]\nduring = \"yes\"\n[[step]]\nprocedure = \"redo\"\n").is_err());
    }

    #[test]
    fn line_and_column_count_from_one() {
        assert_eq!(line_col("ab\ncd", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
    }
    fn effect(name: &str, procedure: &str, tables: &[&str], ro: Option<bool>) -> MemberEffect {
        MemberEffect {
            name: name.into(),
            procedure: Procedure::named(procedure).unwrap(),
            tables: tables.iter().map(|t| t.to_string()).collect(),
            leaves_read_only: ro,
        }
    }

    #[test]
    fn a_member_is_judged_against_what_the_members_before_it_leave() {
        let cv = |name: &str, t: &[&str]| effect(name, "convert", t, None);
        let ro = effect("readonly", "readonly", &[], Some(true));
        let undo = effect("readonly.2", "readonly", &[], Some(false));
        let redo = effect("redo", "redo", &[], None);
        let recover = effect("recover", "recover", &[], None);
        // The same table twice: named, and never "drop" advice.
        let p = order_problems(&[cv("convert", &["d.a", "d.b"]), cv("convert.2", &["d.b"])]);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains(
            "step convert.2 converts d.b, which step convert before it converts already"
        ));
        assert!(order_problems(&[cv("convert", &["d.a"]), cv("convert.2", &["d.b"])]).is_empty());
        // Writing after readonly, until an undo.
        let p = order_problems(&[ro.clone(), cv("convert", &["d.a"]), redo.clone()]);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].starts_with("step convert (convert) must write")
                && p[0].contains("readonly before it")
        );
        assert!(p[1].starts_with("step redo (redo)"));
        assert!(order_problems(&[ro.clone(), undo.clone(), cv("convert", &["d.a"])]).is_empty());
        assert!(order_problems(&[cv("convert", &["d.a"]), ro.clone(), recover.clone()]).is_empty());
        // A readonly after an undo counts again.
        assert_eq!(order_problems(&[undo, ro, redo]).len(), 1);
    }
}
