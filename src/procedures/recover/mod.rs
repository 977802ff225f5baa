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
pub mod private;
mod safety;
pub mod trx;
pub mod verdict;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::dump::{self, Connector, DumpOptions, Manifest, TableName, TableStatus};
use crate::error::{bad_input, post_check, refused};
use crate::plan::{Check, Ctx, Plan, Risk, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::server::control::StopMode;
use crate::server::facts::ServerFacts;
use crate::sql::Queryable;
use crate::units::format_size;

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
}

fn yes() -> bool {
    true
}

impl RecoverParams {
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
    let mut header = env.header("recover", facts, serde_json::to_value(p)?, notes);
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
    }
    steps.extend([
        escalate_step(p, &binary, &carried),
        dump_step(p, &binary, &carried),
        stop_private_step(p, &binary, &carried),
    ]);
    if p.verify_load {
        steps.push(verify_load_step(p));
    }
    if p.drop_copy {
        steps.push(drop_copy_step(p));
    }
    steps.push(final_step(p, &binary, &carried));
    Ok(Plan {
        header,
        steps,
        bench: None,
        locks: vec!["recover".into(), crate::plan::lock::SERVER.into()],
    })
}

fn preflight(
    p: &RecoverParams,
    facts: &ServerFacts,
    env: &PlanEnv,
    datadir: &Path,
    binary: &Path,
) -> Step {
    let p = p.clone();
    let (p2, p3) = (p.clone(), p.clone());
    let datadir = datadir.to_path_buf();
    let (d2, d3, d4, d5) = (
        datadir.clone(),
        datadir.clone(),
        datadir.clone(),
        datadir.clone(),
    );
    let p4 = p.clone();
    let p5 = p.clone();
    // A data directory named by --datadir is on this machine by definition.
    let local = env.target.local || !p.original_running;
    let running = p.original_running;
    let binary = binary.to_path_buf();
    let server_version = facts.version_string.clone();
    let log_dir = facts
        .var("innodb_log_group_home_dir")
        .unwrap_or("./")
        .to_string();
    let undo_dir = facts
        .var("innodb_undo_directory")
        .unwrap_or("./")
        .to_string();
    Step::new("preflight", "Check the copy can be made and recovered from", Risk::Read)
        .pre(Check::new("data directory on this machine", move |_| {
            Ok(Verdict::check(
                local && d2.is_dir(),
                format!("{}{}", d2.display(), if local { "" } else { " on another machine" }),
                "a local directory innops can read",
                format!("innops copies the data directory itself: run it on the server's machine, where {} is", d2.display()),
            ))
        }))
        .pre(Check::new("no server runs on the data directory", move |_| {
            if running {
                return Ok(Verdict::pass("the server runs; innops stops it before the copy", "stopped before the copy"));
            }
            // A server just killed lingers as a zombie while the kernel tears it down, its lock still held
            // for a moment: wait for that (bounded), never for a live process.
            let ibdata = d4.join("ibdata1");
            let mut holder = ibdata_lock_holder(&ibdata);
            let until = std::time::Instant::now() + Duration::from_secs(30);
            while let Some(pid) = holder {
                if crate::server::process::process_alive(pid as u32) || std::time::Instant::now() > until {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
                holder = ibdata_lock_holder(&ibdata);
            }
            Ok(Verdict::check(
                holder.is_none(),
                holder.map(|pid| format!("pid {pid} holds ibdata1's lock")).unwrap_or_else(|| "no process holds ibdata1".into()),
                "no server on it",
                "a server is running on this data directory, so a copy of its files would not be consistent: drop --datadir and let innops stop and start it (--service or --start-cmd/--stop-cmd)",
            ))
        }))
        .pre(Check::new("redo and undo files inside the data directory", move |_| {
            let inside = |d: &str| {
                let path = Path::new(d);
                d.is_empty() || d == "./" || d == "." || path.is_relative() || private::inside(path, &d3)
            };
            let ok = inside(&log_dir) && inside(&undo_dir);
            Ok(Verdict::check(
                ok,
                format!("innodb_log_group_home_dir={log_dir}, innodb_undo_directory={undo_dir}"),
                "both inside the data directory",
                "the redo log or undo tablespaces live outside the data directory, and innops copies only the data directory: recover from a copy you make yourself",
            ))
        }))
        .pre(Check::new("the tables named exist", move |ctx| {
            if p5.tables.is_empty() || !running {
                return Ok(Verdict::pass("every table (or the server is down: the copy's dictionary is checked later)", "the tables to dump"));
            }
            let tag = ctx.tag();
            let listed = dump::list_tables(ctx.conn()?, &tag, &[])?;
            let mut missing = Vec::new();
            for t in &p5.tables {
                let n = table_name(t)?;
                if !listed.contains(&n) {
                    missing.push(n.qualified());
                }
            }
            Ok(Verdict::check(
                missing.is_empty(),
                if missing.is_empty() { format!("{} table(s) found", p5.tables.len()) } else { format!("no table {}", missing.join(", ")) },
                "every table named in --tables",
                format!("the server has no table {}: check the names in --tables (db.table)", missing.join(", ")),
            ))
        }))
        .pre(Check::new("copy and output outside the data directory", move |_| {
            // The server would take a directory of dump files in its datadir for a database, and a copy inside
            // the original would copy itself.
            let inside: Vec<String> = [("--out", &p4.out), ("--copy-to", &p4.copy_to)]
                .into_iter()
                .filter(|(_, d)| d.starts_with(&d5) || d5.starts_with(d))
                .map(|(f, d)| format!("{f} {}", d.display()))
                .collect();
            Ok(Verdict::check(
                inside.is_empty(),
                if inside.is_empty() { "both outside".to_string() } else { format!("{} overlaps the data directory", inside.join(" and ")) },
                format!("outside {}", d5.display()),
                "innops never writes into the server's data directory: give --out and --copy-to elsewhere",
            ))
        }))
        .pre(Check::new("copy directory is new", move |_| {
            let exists = p.copy_to.exists();
            Ok(Verdict::check(
                !exists,
                if exists { format!("{} exists", p.copy_to.display()) } else { format!("{} free", p.copy_to.display()) },
                "a directory that does not exist yet",
                format!("{} exists already: name a new --copy-to (innops never writes into a directory it did not make)", p.copy_to.display()),
            ))
        }))
        .pre(out_is_new(&p2.out))
        .pre(safety::socket_fits(&p2.copy_to))
        .pre(Check::new("free space for the copy", move |_| {
            let (files, bytes) = copy::measure(&datadir)?;
            let at = copy::existing_ancestor(&p3.copy_to);
            let free = crate::procedures::redo::free_bytes(&at).unwrap_or(0);
            // The copy plus a tenth: the private server writes logs and temporary files beside it.
            let need = bytes + bytes / 10;
            Ok(Verdict::check(
                free >= need,
                format!("{} free at {}", format_size(free), at.display()),
                format!("{} ({files} files, plus a tenth)", format_size(need)),
                format!("there is not enough space at {} for a copy of the data directory: free space or give another --copy-to", at.display()),
            ))
        }))
        .pre(Check::new("server binary for the private server", move |_| {
            let out = std::process::Command::new(&binary).arg("--version").output();
            let answer = out.map(|o| String::from_utf8_lossy(&o.stdout).to_string()).unwrap_or_default();
            // The same major.minor as the running server: another version could upgrade or refuse the copy.
            let want = server_version.split('.').take(2).collect::<Vec<_>>().join(".");
            let ok = !want.is_empty() && answer.contains(&format!(" {want}."));
            Ok(Verdict::check(
                ok,
                format!("{}: {}", binary.display(), answer.trim()),
                format!("version {want}, as the server"),
                format!("{} is not the server's version {want}: give the server's own binary with --mariadbd", binary.display()),
            ))
        }))
        .pre(Check::new("innops can stop and start the server", move |ctx| {
            Ok(match ctx.control {
                _ if !running => Verdict::pass("down: innops stops and starts nothing", "a control backend, or a server down"),
                Some(c) => Verdict::pass(c.spec.describe(), "a control backend"),
                None => Verdict::fail(
                    "none",
                    "a control backend",
                    "innops must stop the server for a consistent copy and start it again: pass --sandbox NAME, --service systemd:UNIT, or --start-cmd/--stop-cmd",
                ),
            })
        }))
}

fn server_answers(ctx: &mut Ctx) -> bool {
    ctx.drop_conn();
    ctx.target.connect().is_ok()
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
        let control = ctx.control()?;
        let tag = ctx.tag();
        ctx.drop_conn();
        let rec = control.stop(
            ctx.target,
            StopMode::Clean,
            &tag.replace("/* ", "").replace(" */", ""),
        )?;
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

/// Files and bytes of a directory tree, as [`copy::measure`] counts them.
type Measure = Option<(u64, u64)>;

/// Whether the copy is finished and still the original's: its record, the copy as it is now and the original
/// data directory agree in files and bytes. Also the copy's and the original's measures, for the verdict.
fn copy_matches(p: &RecoverParams, datadir: &Path) -> (bool, Measure, Measure) {
    let rec: Option<copy::CopyRecord> = std::fs::read_to_string(p.copy_to.join(COPY_RECORD))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let now = copy::measure(&p.data()).ok();
    let source = copy::measure(datadir).ok();
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
            let (_, total) = copy::measure(&datadir)?;
            let mut bar = crate::progress::Progress::rows(&format!("copy {}", datadir.display()), total >> 20, "MiB");
            let rec = copy::copy_datadir(&datadir, &p2.data(), &mut |b| bar.set(b >> 20))?;
            bar.finish();
            let text = serde_json::to_string_pretty(&rec)?;
            std::fs::write(p2.copy_to.join(COPY_RECORD), text)?;
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
        let control = ctx.control()?;
        ctx.drop_conn();
        let lines = control.start(ctx.target, &[])?;
        Ok(serde_json::json!({ "log": lines }))
    })
    .post(level_zero_check(
        "the original server runs without forced recovery",
    ))
}

/// The original server answers and its innodb_force_recovery is 0.
fn level_zero_check(name: &str) -> Check {
    Check::new(name, |ctx| {
        let level: Option<u64> = ctx.conn().ok().and_then(|c| {
            c.query_first("SELECT @@innodb_force_recovery")
                .ok()
                .flatten()
        });
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
    let listed = dump::list_tables(conn, tag, &[])?;
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

fn escalation(ctx: &Ctx) -> Option<Escalation> {
    ctx.memo
        .get("escalation")
        .cloned()
        .or_else(|| ctx.recorded_result("escalate"))
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
            "{} {} (levels 1..{}; socket only, in a 0700 directory)",
            private.binary.display(),
            private.args(1).join(" "),
            p.max_level
        ))
        .pre(Check::after_prior("no private server yet", move |ctx| {
            Ok(match (pr2.running_pid(), escalation(ctx)) {
                (Some(pid), Some(e)) => Verdict::done(format!("running at level {} (pid {pid})", e.level), "not running"),
                // Left by this run, killed in the middle of the escalation: on this run's own copy, so it is
                // this run's to stop before the levels are tried again.
                (Some(pid), None) if own_run(&p2.copy_to, ctx) => Verdict::pass(
                    format!("this run's private server (pid {pid}) from before the interruption, at an unknown level: innops stops it first"),
                    "not running, or this run's",
                ),
                (Some(pid), None) => Verdict::fail(
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
            for level in 1..=p1.max_level {
                if ctx.aborted() {
                    return Err(crate::error::Failure::Interrupted("interrupted between two levels: the private server is stopped; resume to go on".into()).into());
                }
                crate::progress::say(&format!("      level {level}: starting the private server"));
                let mut a = private.start(level, Duration::from_secs(600))?;
                if a.started {
                    crate::plan::test_hold(&format!("escalate-started-{level}"));
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
                            let e = Escalation { level, attempts, look, recovered, log_from: None };
                            let v = serde_json::to_value(&e)?;
                            ctx.memo.insert("escalation".into(), v.clone());
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
            let last = verdict::attempts_cause(&attempts);
            let more = if p1.max_level < 6 {
                format!("; a higher level may get further (--max-level {} with --allow-level {}, DANGER for the copy)", p1.max_level + 1, p1.max_level + 1)
            } else {
                String::new()
            };
            Err(refused(format!(
                "the copy did not start with its tables listed at any level up to {} ({last}){more}",
                p1.max_level
            )))
        })
        .post(Check::new("private server answers at the recorded level", move |ctx| {
            let e = escalation(ctx);
            let level: Option<u64> = private_level(&pr3);
            Ok(Verdict::check(
                e.as_ref().map(|e| u64::from(e.level)) == level && level.is_some(),
                level.map(|l| format!("innodb_force_recovery={l}")).unwrap_or_else(|| "not answering".into()),
                e.map(|e| format!("innodb_force_recovery={}", e.level)).unwrap_or_else(|| "a recorded level".into()),
                "the private server is not running at the level the escalation chose: resume to start it again",
            ))
        }))
        .recover(move |_| Ok(safety::private_stopped(&pr4)))
}

/// The level the private server on the copy runs at, when it answers.
fn private_level(p: &Private) -> Option<u64> {
    p.target().connect().ok().and_then(|mut c| {
        c.query_first("SELECT @@innodb_force_recovery")
            .ok()
            .flatten()
    })
}

/// Sessions to the private server; a crash (a garbage record) restarts it at the same level, once per crash.
struct PrivateConnector {
    private: Private,
    level: u8,
    restarting: Mutex<()>,
    /// Sessions opened so far (the test hold point `dump-connect-N` stops a run in the middle of a dump).
    opened: std::sync::atomic::AtomicU32,
}

impl Connector for PrivateConnector {
    fn error_log(&self) -> Option<PathBuf> {
        Some(self.private.error_log())
    }

    fn connect(&self) -> anyhow::Result<mysql::Conn> {
        let n = self
            .opened
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        crate::plan::test_hold(&format!("dump-connect-{n}"));
        self.private.target().connect()
    }

    fn reconnect(&self, why: &str) -> anyhow::Result<mysql::Conn> {
        let _one = self.restarting.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(c) = self.private.target().connect() {
            return Ok(c);
        }
        // Down: it crashed (or is still restarting by itself). Wait for the old process to go, then start it.
        if let Some(pid) = self.private.running_pid() {
            crate::server::process::wait_exit(pid, Duration::from_secs(120));
        }
        let why = crate::error::went_away_detail(why);
        crate::progress::say(&format!(
            "      the private server crashed or went away ({why}): innops is restarting it at level {}, and the dump goes on from the last key read",
            self.level
        ));
        let a = self.private.start(self.level, Duration::from_secs(600))?;
        if !a.started {
            anyhow::bail!(
                "the private server did not start again at level {} after it went away ({why}){}: read {}",
                self.level,
                verdict::log_cause(&a.error_log)
                    .map(|c| format!(", its error log says: {c}"))
                    .unwrap_or_default(),
                self.private.error_log().display()
            );
        }
        self.private.target().connect()
    }
}

/// Start the private server at the recorded level if it is not running (a resumed run).
fn ensure_private(ctx: &Ctx, private: &Private) -> anyhow::Result<u8> {
    let e = escalation(ctx).ok_or_else(|| {
        post_check("the escalation's level is not recorded in this run: run the recovery again")
    })?;
    if private.running_pid().is_none() {
        let a = private.start(e.level, Duration::from_secs(600))?;
        if !a.started {
            return Err(post_check(format!(
                "the private server did not start again at level {}: read {}",
                e.level,
                private.error_log().display()
            )));
        }
    }
    Ok(e.level)
}

fn dump_step(p: &RecoverParams, binary: &Path, carried: &[String]) -> Step {
    let p1 = p.clone();
    let p2 = p.clone();
    let private = p.private(binary, carried);
    let pr2 = private.clone();
    Step::new("dump", format!("Dump every table to {}, ascending, descending and by key ranges past the damage", p.out.display()), Risk::Read)
        .preview(format!(
            "per table: SELECT … FORCE INDEX (its key) ORDER BY key (streaming), then DESC from the end, then key ranges; the error log, key order and dates watched; each secondary index read against the rows; {} thread(s); files in {}",
            p.threads,
            p.out.display()
        ))
        .act(move |ctx| {
            safety::stop_private_on_interrupt(&private, dump_private(ctx, &p1, &private))
        })
        .post(manifest_check(&p2.out))
        // A dump that fails (or whose files do not match their manifest) leaves no server on production data
        // running; a resume starts it again.
        .recover(move |_| Ok(safety::private_stopped(&pr2)))
        .shortfall(verdict::losses(&p.out))
}

fn dump_private(
    ctx: &mut Ctx,
    p1: &RecoverParams,
    private: &Private,
) -> anyhow::Result<serde_json::Value> {
    let level = ensure_private(ctx, private)?;
    let tag = ctx.tag();
    let mut conn = private.target().connect()?;
    let (tables, missing) = tables_to_dump(&mut conn, &tag, p1)?;
    if !missing.is_empty() {
        return Err(refused(format!(
            "the copy does not list {}: check the names in --tables",
            missing.join(", ")
        )));
    }
    drop(conn);
    let mut opts = DumpOptions::new(&p1.out, level);
    opts.threads = p1.threads.max(1);
    opts.tag = tag.clone();
    // Transactions active at the crash whose changes the server may serve as committed: their tables' rows
    // are in doubt before any is read.
    let known = escalation(ctx).map(|e| e.recovered).unwrap_or_default();
    let before = trx::now(private, &tag, level, &known);
    opts.table_doubts = trx::doubts(&before);
    let connector = PrivateConnector {
        private: private.clone(),
        level,
        restarting: Mutex::new(()),
        opened: Default::default(),
    };
    let mut m = dump::dump(&connector, &tables, &opts, ctx.abort)?;
    // The dump's restarts are starts too (a rollback can begin, crash or give up during them): the whole log
    // again, and what it adds goes into the manifest.
    let after = trx::assess(&trx::log_lines(private), &before);
    let late: Vec<_> = trx::doubts(&after)
        .into_iter()
        .filter(|d| !opts.table_doubts.contains(d))
        .collect();
    if trx::amend(&p1.out, &mut m, &late)? {
        for r in after.iter().filter(|r| r.doubtful()) {
            let line = format!("during the dump: {}", trx::describe(r));
            crate::progress::say(&format!("      {line}"));
            ctx.outcome.push(line);
        }
    }
    for line in table_lines(&m) {
        crate::progress::say(&format!("      {line}"));
        ctx.outcome.push(line);
    }
    let mut v = summary(&m);
    v["recovered"] = serde_json::to_value(&after)?;
    Ok(v)
}

/// One line per table for a person: what came back and which keys did not.
pub fn table_lines(m: &Manifest) -> Vec<String> {
    m.tables
        .iter()
        .map(|t| {
            let name = format!("{}.{}", t.db, t.table);
            let rows = crate::units::format_count(t.rows);
            match t.status {
                TableStatus::Complete => format!("{name}: complete, {rows} rows"),
                TableStatus::Partial => {
                    let ranges: Vec<String> = t.lost.iter().map(describe_lost).collect();
                    format!(
                        "{name}: {rows} rows recovered; lost: {} ({})",
                        ranges.join(", "),
                        primary_key_of(t)
                    )
                }
                TableStatus::Doubtful => {
                    let doubts: Vec<String> = t
                        .doubts
                        .iter()
                        .map(|d| format!("{} ({})", d.why, doubted_rows(d)))
                        .collect();
                    let lost = if t.lost.is_empty() {
                        String::new()
                    } else {
                        let ranges: Vec<String> = t.lost.iter().map(describe_lost).collect();
                        format!("; lost: {} ({})", ranges.join(", "), primary_key_of(t))
                    };
                    format!(
                        "{name}: {rows} rows recovered with doubts: {}{lost}",
                        doubts.join("; ")
                    )
                }
                TableStatus::NoPrimaryKey => format!(
                    "{name}: no primary key, {rows} rows by a plain scan{}",
                    t.note
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                ),
                TableStatus::Unrecoverable => format!(
                    "{name}: not recoverable through SQL{}",
                    t.note
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                ),
            }
        })
        .collect()
}

fn primary_key_of(t: &dump::manifest::TableEntry) -> String {
    match t.key_index.as_deref() {
        None | Some("PRIMARY") => format!("primary key ({})", t.primary_key.join(", ")),
        Some(i) => format!("index {i} ({})", t.primary_key.join(", ")),
    }
}

/// A key for a person: `(1, 'b')`.
fn key_text(v: &[serde_json::Value]) -> String {
    let parts: Vec<String> = v
        .iter()
        .map(|x| match x {
            serde_json::Value::String(s) => format!("'{s}'"),
            other => other.to_string(),
        })
        .collect();
    format!("({})", parts.join(", "))
}

/// Which rows a doubt covers, for a person: `rows (11), (26)`, `keys from (5) to (90)`, or every row.
fn doubted_rows(d: &dump::Doubt) -> String {
    let key = |v: &Vec<serde_json::Value>| key_text(v);
    if !d.keys.is_empty() {
        let shown: Vec<String> = d.keys.iter().take(5).map(key).collect();
        let more = d.keys.len().saturating_sub(5);
        let more = if more > 0 {
            format!(" and {more} more in manifest.json")
        } else {
            String::new()
        };
        return format!("rows {}{more}", shown.join(", "));
    }
    match &d.range {
        None => "every row of the table".into(),
        Some(r) => {
            let low = r
                .from
                .as_ref()
                .map(|k| format!("from {}", key(k)))
                .or_else(|| r.after.as_ref().map(|k| format!("after {}", key(k))));
            let high =
                r.to.as_ref()
                    .map(|k| format!("to {}", key(k)))
                    .or_else(|| r.before.as_ref().map(|k| format!("before {}", key(k))));
            match (low, high) {
                (None, None) => "every row of the table".into(),
                (l, h) => format!(
                    "keys {}",
                    [l, h].into_iter().flatten().collect::<Vec<_>>().join(" ")
                ),
            }
        }
    }
}

/// `keys after (6970) and before (7044)`, with either end open.
fn describe_lost(r: &dump::manifest::LostRange) -> String {
    let key = |v: &Vec<serde_json::Value>| key_text(v);
    let low = match (&r.after, &r.from) {
        (Some(a), _) => Some(format!("after {}", key(a))),
        (None, Some(f)) => Some(format!("from {}", key(f))),
        _ => None,
    };
    if let (Some(f), Some(t)) = (&r.from, &r.to) {
        if f == t {
            let n = r
                .rows
                .map(|n| format!("{} row(s) of ", crate::units::format_count(n)))
                .unwrap_or_default();
            return format!("{n}the rows with key {}", key(f));
        }
    }
    let high = match (&r.before, &r.to) {
        (Some(b), _) => Some(format!("before {}", key(b))),
        (None, Some(t)) => Some(format!("up to {}", key(t))),
        _ => None,
    };
    match (low, high) {
        (Some(l), Some(h)) => format!("keys {l} and {h}"),
        (Some(l), None) => format!("keys {l} to the end"),
        (None, Some(h)) => format!("keys from the start {h}"),
        (None, None) => "every key".into(),
    }
}

/// What the dump step reports: per table its status, rows and lost ranges.
fn summary(m: &Manifest) -> serde_json::Value {
    let tables: Vec<serde_json::Value> = m
        .tables
        .iter()
        .map(|t| {
            serde_json::json!({
                "table": format!("{}.{}", t.db, t.table),
                "status": t.status,
                "rows": t.rows,
                "lost": t.lost,
                "note": t.note,
            })
        })
        .collect();
    let partial = m
        .tables
        .iter()
        .filter(|t| t.status != TableStatus::Complete)
        .count();
    serde_json::json!({ "level": m.level, "tables": tables, "not_complete": partial, "summary": table_lines(m) })
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

fn verify_load_step(p: &RecoverParams) -> Step {
    let (p1, p2) = (p.clone(), p.clone());
    Step::new("verify-load", "Load the dump into a fresh sandbox and check it against the manifest and the damaged server's indexes", Risk::Read)
        .preview(format!("a sandbox in {}; mariadb < each file; row counts and content hashes; every loaded row against the secondary indexes the dump read, each lost range against their count", p.copy_to.join("verify").display()))
        .act(move |ctx| {
            // The load's files live in the copy's directory (it has room for them, and is 0700).
            let files = p1.copy_to.join("verify");
            safety::clear_leftover_load(&files)?;
            let root = safety::LoadRoot::new(&files)?;
            let mut sb = crate::server::sandbox::Sandbox::create(root.path(), "load", &Default::default())?;
            let r = (|| {
                sb.start(&[], Duration::from_secs(600))?;
                dump::verify_load(&p1.out, &sb.conn_spec().resolve_plain(), &ctx.tag())
            })();
            let _ = sb.destroy();
            drop(root);
            let v = r?;
            ctx.memo.insert("verified".into(), serde_json::json!(v.ok()));
            ctx.memo.insert("verify_failure".into(), serde_json::json!(v.failures().into_iter().next()));
            Ok(serde_json::to_value(&v)?)
        })
        .post(Check::new("the dump loads with the rows and content of the manifest, and its rows agree with the damaged server's indexes", move |ctx| {
            // This run's act, or (on resume) the result the journal recorded.
            let (ok, first) = match ctx.memo.get("verified").and_then(|v| v.as_bool()) {
                Some(ok) => (Some(ok), ctx.memo.get("verify_failure").and_then(|f| f.as_str()).map(str::to_string)),
                None => {
                    let v = ctx.recorded_result("verify-load").and_then(|r| serde_json::from_value::<dump::manifest::Verified>(r).ok());
                    (v.as_ref().map(|v| v.ok()), v.and_then(|v| v.failures().into_iter().next()))
                }
            };
            Ok(Verdict::check(
                ok == Some(true),
                match (ok, first) {
                    (Some(true), _) => "loaded as recorded".to_string(),
                    (Some(false), Some(f)) => format!("differs ({f})"),
                    (Some(false), None) => "differs".to_string(),
                    (None, _) => "not checked".to_string(),
                },
                "loaded as recorded",
                format!("the files in {} do not load as the manifest says, or their rows are not what the damaged server's indexes held: read the verify-load result in the run's journal", p2.out.display()),
            ))
        }))
}

fn drop_copy_step(p: &RecoverParams) -> Step {
    let (p1, p2, p3) = (p.clone(), p.clone(), p.clone());
    Step::new("drop-copy", format!("Remove the copy {} (--drop-copy)", p.copy_to.display()), Risk::Destructive)
        .preview(format!("rm -r {}", p.copy_to.display()))
        .pre(Check::after_prior("the dump finished and the copy is this run's", move |ctx| {
            if !p1.copy_to.exists() {
                return Ok(Verdict::done("removed already", "present"));
            }
            let dumped = p1.out.join("manifest.json").is_file();
            let ours = own_run(&p1.copy_to, ctx);
            Ok(Verdict::check(
                dumped && ours,
                format!("{}, {}", if dumped { "dump finished" } else { "no manifest" }, if ours { "this run's copy" } else { "not this run's copy" }),
                "dump finished, this run's copy",
                "innops removes only its own copy and only after the dump finished: check the directories",
            ))
        }))
        .act(move |_| {
            std::fs::remove_dir_all(&p2.copy_to)?;
            Ok(serde_json::json!({ "removed": p2.copy_to }))
        })
        .post(Check::new("copy removed", move |_| {
            let gone = !p3.copy_to.exists();
            Ok(Verdict::check(gone, if gone { "removed" } else { "still there" }, "removed", "the copy could not be removed: remove it yourself"))
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

/// The settings innops's drop-in carries while the server runs in forced recovery (`None` removes them).
fn recovery_settings(level: Option<u8>) -> Vec<(&'static str, Option<String>)> {
    vec![
        ("innodb_force_recovery", level.map(|l| l.to_string())),
        // The startup load would read the bad page first.
        (
            "innodb_buffer_pool_load_at_startup",
            level.map(|_| "OFF".to_string()),
        ),
    ]
}

fn change_dropin(
    ctx: &Ctx,
    dropin: &Result<PathBuf, String>,
    level: Option<u8>,
) -> anyhow::Result<crate::server::optionfile::ConfigChange> {
    let path = dropin.clone().map_err(refused)?;
    let settings = recovery_settings(level);
    let refs: Vec<(&str, Option<&str>)> =
        settings.iter().map(|(k, v)| (*k, v.as_deref())).collect();
    let change = crate::server::optionfile::plan_change(&path, "mysqld", &refs)?;
    let backup = ctx
        .run_dir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join("backup");
    change.apply(&backup)?;
    Ok(change)
}

/// Stop the server (if it runs) and start it with what the option files now say; whether it came up.
fn restart(ctx: &mut Ctx) -> anyhow::Result<bool> {
    let control = ctx.control()?;
    let tag = ctx.tag();
    ctx.drop_conn();
    if ctx.target.connect().is_ok() {
        control.stop(
            ctx.target,
            StopMode::Clean,
            &tag.replace("/* ", "").replace(" */", ""),
        )?;
    }
    Ok(control.start(ctx.target, &[]).is_ok() && ctx.target.connect().is_ok())
}

fn preflight_in_place(p: &RecoverParams, env: &PlanEnv, datadir: &Path) -> Step {
    let p2 = p.clone();
    let p3 = p.clone();
    let datadir = datadir.to_path_buf();
    let dropin = env.dropin.clone();
    Step::new("preflight", "Check innops can restart the server in forced recovery and back", Risk::Read)
        .pre(Check::new("output outside the data directory", move |_| {
            let inside = p3.out.starts_with(&datadir) || datadir.starts_with(&p3.out);
            Ok(Verdict::check(
                !inside,
                format!("--out {}", p3.out.display()),
                format!("outside {}", datadir.display()),
                "innops never writes into the server's data directory: give --out elsewhere",
            ))
        }))
        .pre(out_is_new(&p2.out))
        .pre(Check::new("innops's drop-in can be written", move |_| {
            Ok(match &dropin {
                Ok(path) => Verdict::pass(path.display().to_string(), "a drop-in file"),
                Err(why) => Verdict::fail(why.clone(), "a drop-in file", format!("{why}: pass --config-file with the server's option file")),
            })
        }))
        .pre(Check::new("innops can stop and start the server", |ctx| {
            Ok(match ctx.control {
                Some(c) => Verdict::pass(c.spec.describe(), "a control backend"),
                None => Verdict::fail(
                    "none",
                    "a control backend",
                    "--in-place restarts the server at each level: pass --sandbox NAME, --service systemd:UNIT, or --start-cmd/--stop-cmd",
                ),
            })
        }))
}

fn escalate_in_place_step(p: &RecoverParams, dropin: &Result<PathBuf, String>) -> Step {
    let p1 = p.clone();
    let (d1, d2) = (dropin.clone(), dropin.clone());
    Step::new(
        "escalate",
        "Restart the server itself at the lowest forced-recovery level that lists the tables (--in-place, DANGER)",
        Risk::Destructive,
    )
    .preview(format!(
        "for each level 1..{}: set innodb_force_recovery = N and innodb_buffer_pool_load_at_startup = OFF in {}; restart",
        p.max_level,
        dropin.as_ref().map(|d| d.display().to_string()).unwrap_or_else(|e| e.clone())
    ))
    .pre(Check::new("not in forced recovery yet", |ctx| {
        let level: Option<u64> = ctx.conn().ok().and_then(|c| c.query_first("SELECT @@innodb_force_recovery").ok().flatten());
        Ok(match (level, escalation(ctx)) {
            (Some(l), Some(e)) if l == u64::from(e.level) => Verdict::done(format!("running at level {l}"), "level 0"),
            (Some(0), _) => Verdict::pass("running at level 0", "level 0"),
            (Some(l), _) => Verdict::fail(
                format!("running at level {l}, not set by this run"),
                "level 0",
                "the server already runs with innodb_force_recovery set by someone else: remove it from the option files and restart, or dump it yourself",
            ),
            (None, _) => Verdict::pass("down", "level 0, or down"),
        })
    }))
    .act(move |ctx| {
        let tag = ctx.tag();
        let mut attempts = Vec::new();
        for level in 1..=p1.max_level {
            crate::progress::say(&format!("      level {level}: restarting the server"));
            change_dropin(ctx, &d1, Some(level))?;
            let log_from = ctx.control.map(|c| c.log_offset()).unwrap_or(0);
            let up = restart(ctx)?;
            let mut a = Attempt {
                level,
                started: up,
                error_log: ctx.control.map(|c| c.log_since(log_from)).unwrap_or_default(),
            };
            if up {
                let listed = ctx.target.connect().and_then(|mut c| tables_to_dump(&mut c, &tag, &p1));
                if let Ok((_, missing)) = &listed {
                    if missing.is_empty() {
                        attempts.push(a);
                        let e = Escalation { level, attempts, look: None, recovered: Vec::new(), log_from: Some(log_from) };
                        let v = serde_json::to_value(&e)?;
                        ctx.memo.insert("escalation".into(), v.clone());
                        return Ok(v);
                    }
                    a.error_log.push(format!("innops: the data dictionary does not list {}", missing.join(", ")));
                }
            }
            attempts.push(a);
        }
        // No level worked: the server goes back to normal.
        change_dropin(ctx, &d1, None)?;
        let up = restart(ctx)?;
        Err(refused(format!(
            "the server did not start with its tables listed at any level up to {}; innops removed innodb_force_recovery again and the server {}",
            p1.max_level,
            if up { "runs normally" } else { "is DOWN: read its error log" }
        )))
    })
    .post(Check::new("server runs at the recorded level", |ctx| {
        let e = escalation(ctx);
        let level: Option<u64> = ctx.conn().ok().and_then(|c| c.query_first("SELECT @@innodb_force_recovery").ok().flatten());
        Ok(Verdict::check(
            level.is_some() && e.as_ref().map(|e| u64::from(e.level)) == level,
            level.map(|l| format!("innodb_force_recovery={l}")).unwrap_or_else(|| "not answering".into()),
            e.map(|e| format!("innodb_force_recovery={}", e.level)).unwrap_or_else(|| "a recorded level".into()),
            "the server does not run at the level the escalation chose: resume to go on",
        ))
    }))
    .recover(move |ctx| {
        change_dropin(ctx, &d2, None)?;
        let up = restart(ctx)?;
        Ok(if up {
            "innops removed innodb_force_recovery from its drop-in and the server runs normally again".into()
        } else {
            "innops removed innodb_force_recovery from its drop-in, but the server did not start: read its error log".into()
        })
    })
}

/// Sessions to the server itself; when it crashes (a garbage record) and does not come back within a minute,
/// innops starts it again (its drop-in still holds the level).
struct InPlaceConnector<'a> {
    target: &'a crate::server::Target,
    control: &'a crate::server::control::Control,
    restarting: Mutex<()>,
}

impl Connector for InPlaceConnector<'_> {
    fn error_log(&self) -> Option<PathBuf> {
        self.control.error_log.clone()
    }

    fn connect(&self) -> anyhow::Result<mysql::Conn> {
        self.target.connect()
    }

    fn reconnect(&self, why: &str) -> anyhow::Result<mysql::Conn> {
        let _one = self.restarting.lock().unwrap_or_else(|e| e.into_inner());
        let waited = dump::TargetConnector {
            target: self.target,
            wait: Duration::from_secs(60),
            error_log: self.control.error_log.clone(),
        }
        .reconnect(why);
        if waited.is_ok() {
            return waited;
        }
        crate::progress::say(&format!(
            "      the server went away ({}): innops is starting it again, and the dump goes on from the last key read",
            crate::error::went_away_detail(why)
        ));
        self.control.start(self.target, &[])?;
        self.target.connect()
    }
}

fn dump_in_place_step(p: &RecoverParams) -> Step {
    let (p1, p2) = (p.clone(), p.clone());
    Step::new("dump", format!("Dump every table to {}, ascending, descending and by key ranges past the damage", p.out.display()), Risk::Read)
        .preview(format!("per table: SELECT … FORCE INDEX (its key) ORDER BY key (streaming), then DESC from the end, then key ranges; the error log, key order and dates watched; each secondary index read against the rows; {} thread(s)", p.threads))
        .act(move |ctx| {
            let e = escalation(ctx).ok_or_else(|| post_check("the escalation's level is not recorded in this run: run the recovery again"))?;
            let tag = ctx.tag();
            let (tables, missing) = tables_to_dump(ctx.conn()?, &tag, &p1)?;
            if !missing.is_empty() {
                return Err(refused(format!("the server does not list {}: check the names in --tables", missing.join(", "))));
            }
            let mut opts = DumpOptions::new(&p1.out, e.level);
            opts.threads = p1.threads.max(1);
            opts.tag = tag.clone();
            let control = ctx.control()?;
            // Transactions active at the crash, from the server's log since the chosen start (no look at level 3:
            // the server itself is not started more often than the escalation needs).
            let log = || e.log_from.map(|o| control.log_since(o)).unwrap_or_default();
            if e.level < 3 && !trx::wait_rollback(log, || ctx.target.connect().is_ok(), trx::ROLLBACK_WAIT) {
                trx::say_still_rolling_back();
            }
            let seen = if e.level >= 3 { trx::read_active(ctx.target, &tag).unwrap_or_default() } else { Vec::new() };
            let before = trx::assess(&log(), &seen);
            opts.table_doubts = trx::doubts(&before);
            let connector = InPlaceConnector { target: ctx.target, control, restarting: Mutex::new(()) };
            let mut m = dump::dump(&connector, &tables, &opts, ctx.abort)?;
            let after = trx::assess(&log(), &before);
            let late: Vec<_> = trx::doubts(&after).into_iter().filter(|d| !opts.table_doubts.contains(d)).collect();
            trx::amend(&p1.out, &mut m, &late)?;
            for line in after.iter().map(trx::describe).chain(table_lines(&m)) {
                crate::progress::say(&format!("      {line}"));
                ctx.outcome.push(line);
            }
            let mut v = summary(&m);
            v["recovered"] = serde_json::to_value(&after)?;
            Ok(v)
        })
        .post(manifest_check(&p2.out))
        .shortfall(verdict::losses(&p.out))
}

fn restore_in_place_step(dropin: &Result<PathBuf, String>) -> Step {
    let d1 = dropin.clone();
    Step::new("restore", "Remove innodb_force_recovery from innops's drop-in and start the server normally", Risk::Restart)
        .preview("remove innodb_force_recovery and innodb_buffer_pool_load_at_startup from the drop-in; restart")
        .act(move |ctx| {
            let change = change_dropin(ctx, &d1, None)?;
            let up = restart(ctx)?;
            if !up {
                return Err(post_check("the server did not start without innodb_force_recovery: read its error log (the dump is complete in --out)"));
            }
            Ok(serde_json::json!({ "diff": change.diff() }))
        })
        .post(level_zero_check("the server runs without forced recovery"))
}

fn final_in_place_step() -> Step {
    Step::new(
        "final",
        "Prove the server runs without forced recovery",
        Risk::Read,
    )
    .post(level_zero_check("the server runs without forced recovery"))
}

/// Every file of the dump in `out` has the sha256 its manifest records.
fn manifest_check(out: &Path) -> Check {
    let out = out.to_path_buf();
    Check::new("every file as the manifest says", move |_| {
        let Ok(m) = Manifest::read(&out) else {
            return Ok(Verdict::fail(
                "no manifest.json",
                "a manifest",
                "the dump did not finish: resume to dump again",
            ));
        };
        let bad: Vec<String> = m
            .files
            .iter()
            .filter(|(f, h)| {
                dump::manifest::sha256_file(&out.join(f)).ok().as_deref() != Some(h.as_str())
            })
            .map(|(f, _)| f.clone())
            .collect();
        Ok(Verdict::check(
            bad.is_empty(),
            if bad.is_empty() {
                format!("{} files, sha256 as recorded", m.files.len())
            } else {
                format!("changed: {}", bad.join(", "))
            },
            "every file's sha256 as in manifest.json",
            "a dump file differs from its manifest: resume to dump again",
        ))
    })
}

/// `--out` is new or empty: a dump never mixes its files with others.
fn out_is_new(out: &Path) -> Check {
    let out = out.to_path_buf();
    Check::new("output directory is new or empty", move |_| {
        // A file (or anything else that is not a directory) would fail the dump only after the stop and copy.
        if out.exists() && !out.is_dir() {
            return Ok(Verdict::fail(
                format!("{} is a file, not a directory", out.display()),
                "new or empty",
                format!(
                    "--out {} names a file: name a new or empty directory for --out",
                    out.display()
                ),
            ));
        }
        let empty = std::fs::read_dir(&out)
            .map(|mut d| d.next().is_none())
            .unwrap_or(true);
        Ok(Verdict::check(
            empty,
            if empty {
                format!("{} free", out.display())
            } else {
                format!("{} holds files", out.display())
            },
            "new or empty",
            format!(
                "{} holds files already: name a new or empty --out",
                out.display()
            ),
        ))
    })
}

/// The pid of a process holding InnoDB's lock on `ibdata1` (a running server locks it with fcntl), if any.
fn ibdata_lock_holder(path: &Path) -> Option<i32> {
    use std::os::unix::io::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .ok()?;
    // SAFETY: a zeroed flock is a valid argument; F_GETLK only fills it in.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: a valid descriptor and a pointer to a properly sized flock.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut fl) };
    (rc == 0 && fl.l_type != libc::F_UNLCK as libc::c_short).then_some(fl.l_pid)
}

/// The facts of a server that is down, from its data directory, its option file and the binary that will run the
/// copy: the version (the datadir's `mysql_upgrade_info`, else the binary's), and the options that change how
/// InnoDB reads the files (from the option file's server groups; the redo log size from `ib_logfile0` itself).
pub fn offline_facts(
    datadir: &Path,
    binary: &Path,
    option_file: Option<&Path>,
) -> anyhow::Result<ServerFacts> {
    if !datadir.join("ibdata1").is_file() && !datadir.join("mysql").is_dir() {
        return Err(bad_input(format!(
            "--datadir {} holds no InnoDB data directory (no ibdata1, no mysql/): give the server's datadir",
            datadir.display()
        )));
    }
    let from_binary = || -> Option<String> {
        let out = std::process::Command::new(binary)
            .arg("--version")
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.split_whitespace()
            .skip_while(|w| *w != "Ver")
            .nth(1)
            .map(str::to_string)
    };
    let version = std::fs::read_to_string(datadir.join("mysql_upgrade_info"))
        .ok()
        .map(|t| {
            t.trim_matches(|c: char| c.is_whitespace() || c == '\0')
                .to_string()
        })
        .filter(|v| crate::server::facts::Version::parse(v).is_some())
        .or_else(from_binary)
        .ok_or_else(|| {
            bad_input(format!(
                "cannot tell which server version wrote {}: give the server binary with --mariadbd",
                datadir.display()
            ))
        })?;
    let mut vars = std::collections::BTreeMap::new();
    vars.insert("datadir".to_string(), datadir.display().to_string());
    if let Some(f) = option_file {
        let set = crate::server::optionfile::read(f)?;
        // Every group the server of that version reads: [mariadb-10.11], [client-server], [galera], the suffix.
        let groups = crate::server::optionfile::server_groups(
            Some(&version),
            crate::server::optionfile::group_suffix_from_env().as_deref(),
        );
        for key in private::CARRIED
            .iter()
            .chain(&["innodb_log_group_home_dir", "innodb_undo_directory"])
        {
            if let Some(v) = set.get(&groups, key) {
                vars.insert(key.to_string(), v.to_string());
            }
        }
    }
    if !vars.contains_key("innodb_log_file_size") {
        if let Ok(m) = std::fs::metadata(datadir.join("ib_logfile0")) {
            vars.insert("innodb_log_file_size".into(), m.len().to_string());
        }
    }
    Ok(ServerFacts::from_parts(&version, vars, Default::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option file is read as the server of that version reads it: `[mariadb-10.11]` and `[galera]` count,
    /// and a later group overrides an earlier one (the file's `innodb_log_file_size=1G` of `[mariadb-10.11]`,
    /// not `[mysqld]`'s 96M).
    #[test]
    fn offline_facts_read_the_version_groups_of_the_datadirs_server() {
        let dir = tempfile::tempdir().unwrap();
        let datadir = dir.path().join("data");
        std::fs::create_dir_all(datadir.join("mysql")).unwrap();
        std::fs::write(datadir.join("mysql_upgrade_info"), "10.11.6-MariaDB\0").unwrap();
        let cnf = dir.path().join("my.cnf");
        std::fs::write(
            &cnf,
            "[mysqld]\ninnodb_log_file_size=96M\ninnodb_page_size=16k\n\
             [mariadb-10.11]\ninnodb_log_file_size=1G\n\
             [mariadb-10.6]\ninnodb_page_size=4k\n\
             [galera]\nlower_case_table_names=1\n",
        )
        .unwrap();
        let f = offline_facts(&datadir, Path::new("/nonexistent/mariadbd"), Some(&cnf)).unwrap();
        assert_eq!(f.var("innodb_log_file_size"), Some("1G"));
        assert_eq!(
            f.var("innodb_page_size"),
            Some("16k"),
            "another version's group is not read"
        );
        assert_eq!(f.var("lower_case_table_names"), Some("1"));
    }
    use dump::manifest::LostRange;

    #[test]
    fn lost_ranges_read_as_keys_between_the_nearest_readable_rows() {
        let r = |after: Option<i64>, from: Option<i64>, before: Option<i64>| LostRange {
            after: after.map(|a| vec![serde_json::json!(a)]),
            from: from.map(|a| vec![serde_json::json!(a)]),
            before: before.map(|a| vec![serde_json::json!(a)]),
            ..Default::default()
        };
        assert_eq!(
            describe_lost(&r(Some(6970), None, Some(7044))),
            "keys after (6970) and before (7044)"
        );
        assert_eq!(
            describe_lost(&r(None, Some(500), None)),
            "keys from (500) to the end"
        );
        assert_eq!(
            describe_lost(&r(None, None, Some(73))),
            "keys from the start before (73)"
        );
        let composite = LostRange {
            after: Some(vec![serde_json::json!(1), serde_json::json!("b")]),
            from: None,
            before: None,
            ..Default::default()
        };
        assert_eq!(describe_lost(&composite), "keys after (1, 'b') to the end");
        let group = LostRange {
            from: Some(vec![serde_json::json!(7)]),
            to: Some(vec![serde_json::json!(7)]),
            rows: Some(2),
            ..Default::default()
        };
        assert_eq!(describe_lost(&group), "2 row(s) of the rows with key (7)");
        let doubt = |keys: Vec<i64>, range: Option<dump::KeyRange>| dump::Doubt {
            kind: dump::DoubtKind::Crash,
            why: "w".into(),
            range,
            keys: keys
                .into_iter()
                .map(|k| vec![serde_json::json!(k)])
                .collect(),
        };
        assert_eq!(doubted_rows(&doubt(vec![11, 26], None)), "rows (11), (26)");
        assert_eq!(
            doubted_rows(&doubt((1..=7).collect(), None)),
            "rows (1), (2), (3), (4), (5) and 2 more in manifest.json"
        );
        let range = dump::KeyRange {
            from: Some(vec![serde_json::json!(5)]),
            to: Some(vec![serde_json::json!(90)]),
            ..Default::default()
        };
        assert_eq!(
            doubted_rows(&doubt(vec![], Some(range))),
            "keys from (5) to (90)"
        );
        assert_eq!(doubted_rows(&doubt(vec![], None)), "every row of the table");
    }

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
