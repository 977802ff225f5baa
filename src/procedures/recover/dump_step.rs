//! The dump step of the copy path: sessions to the private server on the copy (restarted at the same level when
//! a garbage record crashes it), the dump through [`crate::dump`], and the check that every file is as its
//! manifest says.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use crate::dump::{self, Connector, DumpOptions, Manifest};
use crate::error::{post_check, refused};
use crate::plan::{Check, Ctx, Risk, Step, Verdict};

use super::describe::{summary, table_lines};
use super::private::Private;
use super::{escalation, safety, tables_to_dump, trx, verdict, Pages, RecoverParams};

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
        crate::testhooks::hold(&format!("dump-connect-{n}"));
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
fn ensure_private(ctx: &mut Ctx, private: &Private) -> anyhow::Result<u8> {
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

pub(super) fn dump_step(p: &RecoverParams, binary: &Path, carried: &[String]) -> Step {
    let p1 = p.clone();
    let p2 = p.clone();
    let private = p.private(binary, carried);
    let pr2 = private.clone();
    Step::new("dump", format!("Dump every table to {}, ascending, descending and by key ranges past the damage", p.out.display()), Risk::Read)
        .preview(format!(
            "per table: SELECT … FORCE INDEX (its key) ORDER BY key (streaming), then DESC from the end, then key ranges; the error log, key order and dates watched;{} each secondary index read against the rows; {} thread(s); files in {}",
            if p.pages == Pages::Auto {
                " then (--pages auto) the rows inside the lost ranges, or of a table SQL cannot open, read from the copy's .ibd leaf pages (every table, from its .frm and .ibd, when no level started);"
            } else {
                ""
            },
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
    if let Some(why) = escalation(ctx).and_then(|e| e.files_only) {
        return dump_files(ctx, p1, private, &why);
    }
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
    if p1.pages == Pages::Never {
        opts.pages_off = Some("--pages never".into());
    } else {
        // The rows of a transaction InnoDB did not prove rolled back may be on the pages as it left them.
        let open: Vec<u64> = before
            .iter()
            .filter(|t| t.state != trx::TrxState::RolledBack)
            .filter_map(|t| t.id)
            .collect();
        opts.pages = Some(dump::PageOptions {
            datadir: private.datadir.clone(),
            lowest_active: open.iter().min().copied(),
            uncommitted: open,
        });
    }
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

/// No level started (`why`): every table (those of `--tables`) read from the copy's `.frm` and `.ibd` files,
/// with no server. Every row is in doubt as possibly uncommitted (no server listed the transactions active at
/// the crash), which the manifest gives each table.
fn dump_files(
    ctx: &mut Ctx,
    p1: &RecoverParams,
    private: &Private,
    why: &str,
) -> anyhow::Result<serde_json::Value> {
    let listed = dump::list_from_files(&private.datadir)
        .map_err(|e| anyhow::anyhow!("listing the tables of {}: {e}", private.datadir.display()))?;
    let (tables, missing) = super::named_in(listed, p1)?;
    if !missing.is_empty() {
        return Err(refused(format!(
            "the copy's files hold no .frm for {}: check the names in --tables",
            missing.join(", ")
        )));
    }
    let mut opts = DumpOptions::new(&p1.out, 0);
    opts.threads = 1;
    opts.tag = ctx.tag();
    opts.table_doubts = vec![(None, files_doubt())];
    opts.pages = Some(dump::PageOptions {
        datadir: private.datadir.clone(),
        uncommitted: Vec::new(),
        lowest_active: None,
    });
    let m = dump::dump_from_files(&tables, &opts, ctx.abort, why)?;
    // Said here, not by the escalation, so that a resumed run's summary says it too.
    ctx.outcome.push(format!(
        "{why}: every table is read from its .frm and .ibd files, with no server"
    ));
    for line in table_lines(&m) {
        crate::progress::say(&format!("      {line}"));
        ctx.outcome.push(line);
    }
    Ok(summary(&m))
}

/// The doubt every table read with no server carries: InnoDB neither applied its redo log nor listed the
/// transactions active at the crash, so any row may hold a change that never committed (or miss one that did).
fn files_doubt() -> dump::Doubt {
    dump::Doubt {
        kind: dump::DoubtKind::Uncommitted,
        why: "no server started on the copy, so InnoDB never listed the transactions active at the crash nor applied its redo log: any row read from the data file may hold a change that never committed, or lack one that did".into(),
        range: None,
        keys: Vec::new(),
    }
}

/// Every file of the dump in `out` has the sha256 its manifest records.
pub(super) fn manifest_check(out: &Path) -> Check {
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
