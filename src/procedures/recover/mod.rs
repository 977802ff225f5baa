//! `innops recover` (issue 10): forced-recovery dumps that get every row not on a damaged page.
//!
//! The evidence first: innops stops the server, copies its data directory, starts it again at once (the
//! original is never started with `innodb_force_recovery`), and works on the copy through a private server
//! (its own socket in a 0700 directory, no TCP, no grant checks) started at the lowest forced-recovery level
//! at which the data dictionary lists the tables. The dump engine ([`crate::dump`]) then reads every table
//! ascending, descending and by key ranges until each lost range is bounded exactly; a server that crashes on
//! a garbage record is restarted at the same level and the dump goes on. The private server is stopped at the
//! end; the copy is removed only with `--drop-copy`.

pub mod copy;
mod describe;
mod dump_step;
mod in_place;
mod load_steps;
mod pages_mode;
mod preflight;
pub mod private;
mod safety;
pub mod trx;
pub mod verdict;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::dump::{self, TableName};
use crate::error::{bad_input, refused};
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::server::control::StopMode;
use crate::server::facts::ServerFacts;
use crate::sql::Queryable;
use crate::units::format_size;

use crate::procedures::kit::restart::{self, server_answers};
pub use describe::table_lines;
use dump_step::{dump_step, manifest_check};
use in_place::{
    dump_in_place_step, escalate_in_place_step, final_in_place_step, restore_in_place_step,
};
pub use pages_mode::Pages;
pub use preflight::offline_facts;
use preflight::{preflight, preflight_in_place};
use private::{Attempt, Private};

/// Levels above this can damage data files for good (the manual's warning); they need `--allow-level`.
pub const SAFE_MAX_LEVEL: u8 = 3;

/// What the user asked for, enough to build the plan again.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct RecoverParams {
    /// Where the SQL files, lost.jsonl and manifest.json go.
    pub out: PathBuf,
    /// Where the copy of the data directory and the private server live.
    pub copy_to: PathBuf,
    /// `db.table` names; empty: every table.
    pub tables: Vec<String>,
    /// The highest level tried.
    pub max_level: u8,
    pub drop_copy: bool,
    pub verify_load: bool,
    pub threads: usize,
    /// The server binary for the private server (default: the one on PATH).
    pub mariadbd: Option<PathBuf>,
    /// The data directory of a server that is down already (`--datadir`): innops copies it without stopping
    /// or starting anything.
    #[serde(default)]
    pub datadir: Option<PathBuf>,
    /// Whether the server ran when the plan was made: only then does innops stop it and start it again.
    #[serde(default = "yes")]
    pub original_running: bool,
    /// DANGER: forced recovery on the server itself, through innops's drop-in, instead of a copy.
    #[serde(default)]
    pub in_place: bool,
    /// `--with-logs`: the copy takes the binary and relay logs and the replication info files too.
    #[serde(default)]
    pub with_logs: bool,
    /// `--pages`: whether the rows inside the lost ranges (or of a table SQL cannot open) are read from the
    /// copy's data files after the SQL reads. A plan written before the choice had a name (`true`/`false`), or
    /// before the flag existed (absent: no page pass then), reads as it ran.
    #[serde(default = "pages_never")]
    pub pages: Pages,
}

fn yes() -> bool {
    true
}

fn pages_never() -> Pages {
    Pages::Never
}

impl RecoverParams {
    /// What a copy of `dir` leaves out at its top (nothing with `--with-logs`).
    pub fn leave(&self, dir: &Path) -> copy::Leave {
        if self.with_logs {
            copy::Leave::new()
        } else {
            copy::log_files(dir)
        }
    }

    /// Checked settings: the levels, the directories, the table names.
    pub fn check(&self, allow_level: Option<u8>) -> anyhow::Result<()> {
        if self.max_level == 0 || self.max_level > 6 {
            return Err(bad_input(format!(
                "--max-level {} is not a forced-recovery level: give 1 to 3 (4 to 6 also need --allow-level)",
                self.max_level
            )));
        }
        if let Some(a) = allow_level.filter(|a| !(SAFE_MAX_LEVEL + 1..=6).contains(a)) {
            return Err(bad_input(format!(
                "--allow-level {a} is not a level that needs allowing: give 4, 5 or 6 (levels 1 to 3 need no --allow-level)"
            )));
        }
        if self.threads == 0 {
            return Err(bad_input(
                "--threads 0 reads nothing: give 1 or more reading sessions per table",
            ));
        }
        if self.max_level > SAFE_MAX_LEVEL && allow_level.is_none_or(|a| a < self.max_level) {
            return Err(bad_input(format!(
                "--max-level {} can damage the copy's data files for good (innodb_force_recovery 4 and above): add --allow-level {} to accept it",
                self.max_level, self.max_level
            )));
        }
        if !self.in_place
            && (self.out.starts_with(&self.copy_to) || self.copy_to.starts_with(&self.out))
        {
            return Err(bad_input(
                "--out and --copy-to must not contain each other: give two separate directories",
            ));
        }
        for t in &self.tables {
            table_name(t)?;
        }
        Ok(())
    }

    fn data(&self) -> PathBuf {
        self.copy_to.join("data")
    }

    fn private(&self, binary: &Path, carried: &[String]) -> Private {
        Private {
            dir: self.copy_to.join("server"),
            datadir: self.data(),
            binary: binary.to_path_buf(),
            carried: carried.to_vec(),
        }
    }
}

/// `db.table` → its parts (a name with a dot in it is written with backquotes: `` `my.db`.t ``).
fn table_name(s: &str) -> anyhow::Result<TableName> {
    let (db, t) = crate::procedures::convert::parse_table_arg(s).ok_or_else(|| {
        bad_input(format!(
            "--tables {s}: name each table as db.table (backquote a name with a dot in it)"
        ))
    })?;
    Ok(TableName::new(&db, &t))
}

/// The record a finished copy leaves beside it (its presence proves the copy finished).
const COPY_RECORD: &str = "copy.json";
/// Which run made a directory: a resumed run may clear what it left half-done, never anything else.
const RUN_MARK: &str = ".innops-run";

/// The level the private server runs at, recorded by the escalation step.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Escalation {
    level: u8,
    attempts: Vec<Attempt>,
    /// The start at level 3 before the escalation: transactions active at the crash and their tables, before
    /// any rollback.
    #[serde(default)]
    look: Option<trx::Look>,
    /// Transactions active at the crash and what became of them, as of the chosen start.
    #[serde(default)]
    recovered: Vec<trx::RecoveredTrx>,
    /// --in-place: where the server's error log stood before the chosen start (the log is the server's own, so
    /// only what that start and the dump's restarts wrote is judged).
    #[serde(default)]
    log_from: Option<u64>,
    /// No level started with the tables listed and `--pages auto` reads them from their files instead: why no
    /// level did (the refusal's sentence). `level` is then 0 and no private server runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    files_only: Option<String>,
}

/// Build the plan. The server must be reachable (its facts name the data directory and the options the private
/// server needs) and controllable (innops stops it for the copy and starts it again).
pub fn plan(p: &RecoverParams, facts: &ServerFacts, env: &PlanEnv) -> anyhow::Result<Plan> {
    let datadir = p
        .datadir
        .clone()
        .unwrap_or_else(|| PathBuf::from(facts.var("datadir").unwrap_or_default()));
    let binary = match &p.mariadbd {
        Some(b) => crate::server::sandbox::server_binary_at(b)?.0,
        None => crate::server::sandbox::find_server_binary()?.0,
    };
    let vars: Vec<(String, String)> = facts
        .variables
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let carried = private::carried_from(&vars);
    let mut notes = vec![
        if p.original_running {
            format!(
                "innops stops the server, copies {} to {}, starts the server again (never with innodb_force_recovery), and dumps from a private server on the copy",
                datadir.display(),
                p.data().display()
            )
        } else {
            format!(
                "the server is down: innops copies {} to {} and dumps from a private server on the copy; it starts nothing else",
                datadir.display(),
                p.data().display()
            )
        },
        format!(
            "levels tried on the copy: 1 to {} (the lowest at which the tables are listed)",
            p.max_level
        ),
    ];
    if !p.in_place {
        notes.push(copy_contents_note(
            p,
            &datadir,
            env.target.local || p.datadir.is_some(),
            &facts.topology,
        ));
    }
    if p.max_level >= 3 && !p.in_place {
        notes.push("before the escalation the copy starts once at level 3, where InnoDB rolls nothing back: the transactions active at the crash and the tables each holds a lock on are listed, and the report says what became of each (a rollback that gives up marks those tables' rows as possibly uncommitted)".into());
    }
    if p.max_level > SAFE_MAX_LEVEL {
        notes.push(format!(
            "DANGER: levels 4 and above (up to {}) can damage the copy's data files for good; the original is not touched",
            p.max_level
        ));
    }
    if p.in_place {
        notes[0] = "--in-place (DANGER): innops restarts the server itself with innodb_force_recovery through its drop-in, dumps from it, then removes the setting and starts it normally; no copy is made".to_string();
    }
    let mut header = env.header(
        crate::plan::Procedure::Recover,
        facts,
        serde_json::to_value(p)?,
        notes,
    );
    if p.in_place {
        let dropin = env.dropin.clone();
        let steps = vec![
            preflight_in_place(p, env, &datadir),
            escalate_in_place_step(p, &dropin),
            dump_in_place_step(p),
            restore_in_place_step(&dropin),
            final_in_place_step(),
        ];
        return Ok(Plan {
            header,
            steps,
            bench: None,
            locks: vec!["recover".into(), crate::plan::lock::SERVER.into()],
            session: Vec::new(),
        });
    }
    if !p.original_running {
        header.target = format!("the data directory {} (server down)", datadir.display());
    }
    let mut steps = vec![preflight(p, facts, env, &datadir, &binary)];
    if p.original_running {
        steps.push(stop_step());
    }
    steps.push(copy_step(p, &datadir));
    if p.original_running {
        steps.push(start_original_step());
        steps.extend(crate::procedures::kit::replicas::after_restart(
            "replicas-reconnect",
            env,
            facts,
            &mut header.notes,
        ));
    }
    steps.extend([
        escalate_step(p, &binary, &carried),
        dump_step(p, &binary, &carried),
        stop_private_step(p, &binary, &carried),
    ]);
    if p.verify_load {
        steps.push(load_steps::verify_load_step(p));
    }
    if p.drop_copy {
        steps.push(load_steps::drop_copy_step(p));
    }
    steps.push(final_step(p, &binary, &carried));
    Ok(Plan {
        header,
        steps,
        bench: None,
        locks: vec!["recover".into(), crate::plan::lock::SERVER.into()],
        session: Vec::new(),
    })
}

fn stop_step() -> Step {
    Step::new(
        "stop",
        "Shut the server down for a consistent copy",
        Risk::Restart,
    )
    .preview("SHUTDOWN (through the control backend)")
    .pre(Check::new("server running", |ctx| {
        Ok(if server_answers(ctx) {
            Verdict::pass("running", "running")
        } else {
            Verdict::done("down already", "running")
        })
    }))
    .act(|ctx| {
        let rec = restart::stop(ctx, StopMode::Clean)?;
        Ok(serde_json::to_value(rec)?)
    })
    .post(Check::new("server down", |ctx| {
        let up = server_answers(ctx);
        Ok(Verdict::check(
            !up,
            if up { "running" } else { "down" },
            "down",
            "the server still answers after its shutdown: stop it yourself, then resume",
        ))
    }))
}

/// What the copy takes of the data directory and what it leaves out (the logs, unless `--with-logs`), and that
/// the private server never replicates.
fn copy_contents_note(
    p: &RecoverParams,
    datadir: &Path,
    readable: bool,
    topo: &crate::server::topology::Topology,
) -> String {
    let replica = match topo.role() {
        crate::server::topology::Role::Replica => "; this server is a replica, and",
        _ => ";",
    };
    let never = format!("{replica} the private server starts with --skip-slave-start and no networking, so it never replicates or is replicated from");
    if !readable {
        return format!("the copy leaves out the binary and relay logs and the replication info files (--with-logs takes them){never}");
    }
    let logs = copy::log_files(datadir);
    let bytes: u64 = logs
        .iter()
        .filter_map(|n| std::fs::metadata(datadir.join(n)).ok())
        .map(|m| m.len())
        .sum();
    if p.with_logs {
        format!("--with-logs: the copy takes the {} binary/relay log and replication info file(s) ({}) too{never}", logs.len(), format_size(bytes))
    } else if logs.is_empty() {
        format!("the data directory holds no binary or relay logs to leave out{never}")
    } else {
        format!(
            "the copy leaves out {} binary/relay log and replication info file(s) ({}): the dump never reads them (--with-logs takes them){never}",
            logs.len(),
            format_size(bytes)
        )
    }
}

/// Files and bytes of a directory tree, as [`copy::measure`] counts them.
type Measure = Option<(u64, u64)>;

/// Whether the copy is finished and still the original's: its record, the copy as it is now and the original
/// data directory agree in files and bytes. Also the copy's and the original's measures, for the verdict.
fn copy_matches(p: &RecoverParams, datadir: &Path) -> (bool, Measure, Measure) {
    let rec: Option<copy::CopyRecord> = std::fs::read_to_string(p.copy_to.join(COPY_RECORD))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let now = copy::measure(&p.data(), &p.leave(&p.data())).ok();
    let source = copy::measure(datadir, &p.leave(datadir)).ok();
    let ok = matches!((&rec, now, source), (Some(r), Some(n), Some(s)) if (r.files, r.bytes) == n && n == s);
    (ok, now, source)
}

fn copy_step(p: &RecoverParams, datadir: &Path) -> Step {
    let (p1, p2, p3, p4) = (p.clone(), p.clone(), p.clone(), p.clone());
    let running = p.original_running;
    let datadir = datadir.to_path_buf();
    let (d1, d2) = (datadir.clone(), datadir.clone());
    Step::new("copy", format!("Copy the data directory to {}", p.data().display()), Risk::Read)
        .preview(format!("copy {} → {} (0700; the original is only read)", datadir.display(), p.data().display()))
        .pre(Check::after_prior("the server is down for the copy", move |ctx| {
            // A copy of a running server's files is not consistent. The stop step did its work, but a failed
            // copy starts the server again (its recovery), and a resume does not stop it twice.
            if !running || !server_answers(ctx) {
                return Ok(Verdict::pass("down", "down"));
            }
            Ok(Verdict::fail(
                "the server runs",
                "down",
                "the server runs again (a failed copy started it, or someone did), and resuming would copy a running server's files: run innops recover again as a new run",
            ))
        }))
        .pre(Check::after_prior("copy not made yet", move |ctx| {
            // A finished copy counts only while it still matches the original: one the original moved on from
            // (started and stopped meanwhile) is this run's to make again.
            if p1.copy_to.join(COPY_RECORD).is_file() && copy_matches(&p1, &d1).0 {
                return Ok(Verdict::done("a finished copy", "no copy yet"));
            }
            if !p1.copy_to.exists() {
                return Ok(Verdict::pass("no copy yet", "no copy yet"));
            }
            // Half a copy: this run's own (killed mid-copy) is made again; anything else is not innops's.
            let ours = own_run(&p1.copy_to, ctx);
            Ok(Verdict::check(
                ours,
                "an unfinished copy",
                "no copy, or this run's unfinished one",
                format!("{} exists and is not this run's: name a new --copy-to", p1.copy_to.display()),
            ))
        }))
        .act(move |ctx| {
            if p2.copy_to.exists() && own_run(&p2.copy_to, ctx) {
                // The record goes first: a kill while the copy is made again leaves no claim of a finished one.
                std::fs::remove_file(p2.copy_to.join(COPY_RECORD)).ok();
                std::fs::remove_dir_all(p2.data()).ok();
            }
            make_private_dir(&p2.copy_to)?;
            mark_run(&p2.copy_to, ctx)?;
            let leave = p2.leave(&datadir);
            let (_, total) = copy::measure(&datadir, &leave)?;
            let mut bar = crate::progress::Progress::rows(&format!("copy {}", datadir.display()), total >> 20, "MiB");
            let rec = copy::copy_datadir(&datadir, &p2.data(), &leave, &mut |b| bar.set(b >> 20))?;
            bar.finish();
            let text = serde_json::to_string_pretty(&rec)?;
            std::fs::write(p2.copy_to.join(COPY_RECORD), text)?;
            if !p2.drop_copy {
                ctx.outcome.push(format!(
                    "the copy is left at {} ({}, a copy of production data): remove it with `rm -r {}` when you are done with it (--drop-copy removes it at the end of a run)",
                    p2.copy_to.display(),
                    format_size(rec.bytes),
                    p2.copy_to.display()
                ));
            }
            Ok(serde_json::to_value(rec)?)
        })
        // A failed copy (a full disk, say) must not leave the original down: its unfinished copy goes (it may
        // be what filled the disk the server needs) and the server starts again, as it was.
        .recover(move |ctx| safety::copy_failed(ctx, &p4))
        .post(Check::new("copy complete", move |_| {
            let (ok, now, source) = copy_matches(&p3, &d2);
            Ok(Verdict::check(
                ok,
                now.map(|(f, b)| format!("{f} files, {}", format_size(b))).unwrap_or_else(|| "no copy".into()),
                source.map(|(f, b)| format!("{f} files, {}, as the original", format_size(b))).unwrap_or_default(),
                "the copy differs from the data directory in files or bytes: resume to make it again",
            ))
        }))
}

fn start_original_step() -> Step {
    Step::new(
        "start-original",
        "Start the server again, as it was",
        Risk::Restart,
    )
    .preview("start the server (no innodb_force_recovery: the recovery works on the copy)")
    .pre(Check::after_prior("server down", |ctx| {
        Ok(if server_answers(ctx) {
            Verdict::done("running", "down")
        } else {
            Verdict::pass("down", "down")
        })
    }))
    .act(|ctx| {
        let (_, lines) = restart::start(ctx)?;
        let d = restart::record_downtime(ctx, "stop", "as it was (the recovery works on the copy)");
        Ok(serde_json::json!({ "log": lines, "downtime_s": d.map(|d| d.seconds) }))
    })
    .post(level_zero_check(
        "the original server runs without forced recovery",
    ))
}

/// The original server answers and its innodb_force_recovery is 0.
fn level_zero_check(name: &str) -> Check {
    Check::new(name, |ctx| {
        let level = answering_level(ctx);
        Ok(Verdict::check(
            level == Some(0),
            level
                .map(|l| format!("running, innodb_force_recovery={l}"))
                .unwrap_or_else(|| "not answering".into()),
            "running, innodb_force_recovery=0",
            "the original server is not running normally: read its error log and start it yourself",
        ))
    })
}

/// Whether `dir` was made by this run (its mark names this run's directory).
fn own_run(dir: &Path, ctx: &Ctx) -> bool {
    let mine = ctx.run_dir.as_ref().map(|d| d.display().to_string());
    let theirs = std::fs::read_to_string(dir.join(RUN_MARK)).ok();
    mine.is_some() && theirs.as_deref().map(str::trim) == mine.as_deref()
}

fn mark_run(dir: &Path, ctx: &Ctx) -> anyhow::Result<()> {
    let mine = ctx
        .run_dir
        .as_ref()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    std::fs::write(dir.join(RUN_MARK), mine)?;
    Ok(())
}

fn make_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    Ok(())
}

/// The tables to dump, as the private server lists them (all user tables when none were named).
fn tables_to_dump(
    conn: &mut mysql::Conn,
    tag: &str,
    p: &RecoverParams,
) -> anyhow::Result<(Vec<TableName>, Vec<String>)> {
    named_in(dump::list_tables(conn, tag, &[])?, p)
}

/// Of the tables `listed` (by the server, or by the copy's files), those `--tables` names (all when it names
/// none), and the names it gives that are not listed.
fn named_in(
    listed: Vec<TableName>,
    p: &RecoverParams,
) -> anyhow::Result<(Vec<TableName>, Vec<String>)> {
    if p.tables.is_empty() {
        return Ok((listed, Vec::new()));
    }
    let mut want = Vec::new();
    let mut missing = Vec::new();
    for t in &p.tables {
        let n = table_name(t)?;
        if listed.contains(&n) {
            want.push(n);
        } else {
            missing.push(n.qualified());
        }
    }
    Ok((want, missing))
}

/// What recover's steps leave for later steps of the same process ([`Ctx::state`]).
#[derive(Default)]
struct Memo {
    /// The escalation step's result.
    escalation: Option<Escalation>,
    /// `--verify-load`'s verdict: whether every check passed, and the first failure.
    verified: Option<(bool, Option<String>)>,
}

/// The escalation of this process, or (on resume) the one the journal recorded.
fn escalation(ctx: &mut Ctx) -> Option<Escalation> {
    if let Some(e) = &ctx.state::<Memo>().escalation {
        return Some(e.clone());
    }
    ctx.recorded_result("escalate")
        .and_then(|v| serde_json::from_value(v).ok())
}

fn escalate_step(p: &RecoverParams, binary: &Path, carried: &[String]) -> Step {
    let (p1, p2) = (p.clone(), p.clone());
    let private = p.private(binary, carried);
    let pr2 = private.clone();
    let pr3 = private.clone();
    let pr4 = private.clone();
    Step::new("escalate", "Start a private server on the copy at the lowest forced-recovery level that lists the tables", Risk::Read)
        .preview(format!(
            "{} {} (levels 1..{}; socket only, in a 0700 directory){}",
            private.binary.display(),
            private.args(1).join(" "),
            p.max_level,
            if p.pages == Pages::Auto {
                "; if no level starts, every table is read from its .frm and .ibd with no server (--pages auto)"
            } else {
                ""
            }
        ))
        .pre(Check::after_prior("no private server yet", move |ctx| {
            Ok(match (pr2.running_pid(), escalation(ctx)) {
                (Some(pid), Some(e)) if e.files_only.is_none() => Verdict::done(format!("running at level {} (pid {pid})", e.level), "not running"),
                (None, Some(e)) if e.files_only.is_some() => Verdict::done("no level started: the tables are read from their files", "not running"),
                // Left by this run, killed in the middle of the escalation: on this run's own copy, so it is
                // this run's to stop before the levels are tried again.
                (Some(pid), _) if own_run(&p2.copy_to, ctx) => Verdict::pass(
                    format!("this run's private server (pid {pid}) from before the interruption, at an unknown level: innops stops it first"),
                    "not running, or this run's",
                ),
                (Some(pid), _) => Verdict::fail(
                    format!("a server runs on the copy (pid {pid}) at an unknown level"),
                    "not running",
                    format!("a private server already runs on {}: stop it (kill {pid}), then resume", pr2.datadir.display()),
                ),
                (None, _) => Verdict::pass("not running", "not running"),
            })
        }))
        .act(move |ctx| {
            let tag = ctx.tag();
            if private.running_pid().is_some() && own_run(&p1.copy_to, ctx) {
                crate::progress::say("      stopping this run's private server left from before the interruption");
                private.stop()?;
            }
            let mut attempts = Vec::new();
            // Below level 3 InnoDB rolls back at once, and a rollback that gives up leaves no trace of the tables:
            // ask first, at a level that rolls nothing back.
            let look = if p1.max_level >= 3 {
                crate::progress::say("      level 3 first (no rollback): which transactions were active at the crash, and their tables");
                Some(trx::look(&private, &tag)?)
            } else {
                None
            };
            let seen = look.as_ref().map(|l| l.seen.clone()).unwrap_or_default();
            let mut any_started = false;
            for level in 1..=p1.max_level {
                if ctx.aborted() {
                    return Err(crate::error::Failure::Interrupted("interrupted between two levels: the private server is stopped; resume to go on".into()).into());
                }
                crate::progress::say(&format!("      level {level}: starting the private server"));
                let mut a = private.start(level, Duration::from_secs(600))?;
                if a.started {
                    any_started = true;
                    crate::testhooks::hold(&format!("escalate-started-{level}"));
                    let listed = private.target().connect().and_then(|mut c| tables_to_dump(&mut c, &tag, &p1));
                    match listed {
                        Ok((_, missing)) if missing.is_empty() => {
                            attempts.push(a);
                            let recovered = trx::now(&private, &tag, level, &seen);
                            for r in &recovered {
                                let line = trx::describe(r);
                                crate::progress::say(&format!("      {line}"));
                                ctx.outcome.push(line);
                            }
                            let e = Escalation { level, attempts, look, recovered, log_from: None, files_only: None };
                            let v = serde_json::to_value(&e)?;
                            ctx.state::<Memo>().escalation = Some(e);
                            return Ok(v);
                        }
                        Ok((_, missing)) => a.error_log.push(format!("innops: the data dictionary does not list {}", missing.join(", "))),
                        Err(e) => a.error_log.push(format!("innops: listing the tables failed: {}", crate::error::display_of(&e))),
                    }
                    private.stop()?;
                    a.started = false;
                }
                attempts.push(a);
            }
            no_level(ctx, &p1, (attempts, look), any_started)
        })
        .post(Check::new("private server answers at the recorded level", move |ctx| {
            let e = escalation(ctx);
            if let Some(why) = e.as_ref().and_then(|e| e.files_only.clone()) {
                let pid = pr3.running_pid();
                return Ok(Verdict::check(
                    pid.is_none(),
                    pid.map(|p| format!("a private server runs (pid {p})")).unwrap_or_else(|| format!("none: {why}")),
                    "no private server: the tables are read from their files",
                    "a private server runs on the copy while its files are to be read: stop it (kill its pid), then resume",
                ));
            }
            let level: Option<u64> = private_level(&pr3, &ctx.tag());
            Ok(Verdict::check(
                e.as_ref().map(|e| u64::from(e.level)) == level && level.is_some(),
                level.map(|l| format!("innodb_force_recovery={l}")).unwrap_or_else(|| "not answering".into()),
                e.map(|e| format!("innodb_force_recovery={}", e.level)).unwrap_or_else(|| "a recorded level".into()),
                "the private server is not running at the level the escalation chose: resume to start it again",
            ))
        }))
        .recover(move |_| Ok(safety::private_stopped(&pr4)))
}

/// No level started with the tables listed: refused with the cause from the error log — unless `--pages auto`
/// and no level started at all, when the escalation records that the tables are read from their files.
fn no_level(
    ctx: &mut Ctx,
    p: &RecoverParams,
    (attempts, look): (Vec<Attempt>, Option<trx::Look>),
    any_started: bool,
) -> anyhow::Result<serde_json::Value> {
    let last = verdict::attempts_cause(&attempts);
    let more = if p.max_level < 6 {
        format!(
            "; a higher level may get further (--max-level {} with --allow-level {}, DANGER for the copy)",
            p.max_level + 1,
            p.max_level + 1
        )
    } else {
        String::new()
    };
    let why = format!(
        "the copy did not start with its tables listed at any level up to {} ({last})",
        p.max_level
    );
    if any_started {
        // A server that starts reads what it lists through SQL, cross-checked: a table its dictionary does not
        // list is the DBA's to name again, not a reason to read every table without a server.
        return Err(refused(format!("{why}{more}")));
    }
    if p.pages == Pages::Never {
        return Err(refused(format!(
            "{why}{more}; --pages auto would read the tables from their files"
        )));
    }
    // --pages auto: the rows the files hold, from the tables' .frm and .ibd, with no server.
    crate::progress::say(&format!(
        "      {why}: the tables are read from their files alone (--pages auto)"
    ));
    let e = Escalation {
        level: 0,
        attempts,
        look,
        recovered: Vec::new(),
        log_from: None,
        files_only: Some(why),
    };
    let v = serde_json::to_value(&e)?;
    ctx.state::<Memo>().escalation = Some(e);
    Ok(v)
}

/// The innodb_force_recovery a connection's server runs at (None: the query failed), the statement tagged.
fn force_level(c: &mut mysql::Conn, tag: &str) -> Option<u64> {
    c.query_first(format!("SELECT {tag} @@innodb_force_recovery"))
        .ok()
        .flatten()
}

/// The level the step's server runs at, when it answers.
fn answering_level(ctx: &mut Ctx) -> Option<u64> {
    let tag = ctx.tag();
    ctx.conn().ok().and_then(|c| force_level(c, &tag))
}

/// The level the private server on the copy runs at, when it answers.
fn private_level(p: &Private, tag: &str) -> Option<u64> {
    p.target()
        .connect()
        .ok()
        .and_then(|mut c| force_level(&mut c, tag))
}

fn stop_private_step(p: &RecoverParams, binary: &Path, carried: &[String]) -> Step {
    let private = p.private(binary, carried);
    let pr2 = private.clone();
    Step::new("stop-private", "Stop the private server", Risk::Read)
        .preview("SIGTERM to the private server, wait for it to exit")
        .act(move |_| {
            private.stop()?;
            Ok(serde_json::json!({ "stopped": private.datadir }))
        })
        .post(Check::new("private server stopped", move |_| {
            let pid = pr2.running_pid();
            Ok(Verdict::check(
                pid.is_none(),
                pid.map(|p| format!("running (pid {p})"))
                    .unwrap_or_else(|| "stopped".into()),
                "stopped",
                "the private server did not stop: kill it by its pid, then resume",
            ))
        }))
}

fn final_step(p: &RecoverParams, binary: &Path, carried: &[String]) -> Step {
    let private = p.private(binary, carried);
    let mut step = Step::new(
        "final",
        "Prove no server runs with forced recovery",
        Risk::Read,
    );
    if p.original_running {
        step = step.post(level_zero_check(
            "the original server runs without forced recovery",
        ));
    }
    step.post(Check::new("no private server left running", move |_| {
        let pid = private.running_pid();
        Ok(Verdict::check(
            pid.is_none(),
            pid.map(|p| format!("running (pid {p})"))
                .unwrap_or_else(|| "none".into()),
            "none",
            "the private server on the copy still runs: stop it (kill its pid)",
        ))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_above_three_need_their_own_danger_flag_and_out_and_copy_stay_apart() {
        let p = RecoverParams {
            out: "/x/out".into(),
            copy_to: "/x/copy".into(),
            tables: vec![],
            max_level: 3,
            drop_copy: false,
            verify_load: false,
            threads: 2,
            mariadbd: None,
            datadir: None,
            original_running: true,
            in_place: false,
            with_logs: false,
            pages: Pages::Never,
        };
        assert!(p.check(None).is_ok());
        let high = RecoverParams {
            max_level: 4,
            ..p.clone()
        };
        assert_eq!(
            crate::error::exit_code_of(&high.check(None).unwrap_err()),
            2
        );
        assert_eq!(
            crate::error::exit_code_of(&high.check(Some(3)).unwrap_err()),
            2
        );
        assert!(high.check(Some(4)).is_ok());
        for wrong in [0, 3, 7, 9] {
            let e = p.check(Some(wrong)).unwrap_err();
            assert_eq!(crate::error::exit_code_of(&e), 2, "--allow-level {wrong}");
            assert!(
                crate::error::display_of(&e).contains("give 4, 5 or 6"),
                "{e:#}"
            );
        }
        let none = RecoverParams {
            threads: 0,
            ..p.clone()
        };
        assert_eq!(
            crate::error::exit_code_of(&none.check(None).unwrap_err()),
            2
        );
        let zero = RecoverParams {
            max_level: 0,
            ..p.clone()
        };
        assert!(zero.check(None).is_err());
        let nested = RecoverParams {
            out: "/x/copy/out".into(),
            ..p.clone()
        };
        assert!(nested.check(None).is_err());
        let bad = RecoverParams {
            tables: vec!["nodot".into()],
            ..p
        };
        assert!(bad.check(None).is_err());
    }
}
