//! Table variants as steps: each variant's copy of the benchmark table built in innops's own schema
//! (`innops_exp_t0` with the original definition for A and A′, `innops_exp_tN` for the N-th `--table-option`),
//! from the same rows of `innops_bench.sbtest1`, its definition proven from the server's dictionary
//! ([`super::table_opts::disproof`]) and its size measured; the arms run their workload on their copy; the
//! `drop-tables` step drops every copy and proves them gone. The DBA's tables are never touched.
//!
//! A variant the server refuses (an error under `innodb_strict_mode=ON`, which the build sets for its own
//! session) or bends (a definition that does not read back as asked) is not a figure: its copy is dropped, the
//! failure is stored (`experiment/failed-table-N.json`), and its arms are left out and reported as failed.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::table_opts::{self, TableDef, TableVariant};
use super::ExperimentParams;
use crate::bench::experiment::{Arm, TableSize};
use crate::plan::{Check, Ctx, Risk, Step, Verdict};
use crate::sql::{quote_ident, quote_string, Queryable};

/// The pseudo-setting an arm's table variant is named by in its settings.
pub const TABLE: &str = "table";
/// Its value for the baseline arms: the benchmark table's own definition.
pub const ORIGINAL: &str = "original";
const TABLE_NAME: &str = "sbtest1";

/// The schema of copy `n` (0: the original definition).
pub fn schema(n: usize) -> String {
    format!("innops_exp_t{n}")
}

/// The comment innops gives the schemas it makes: only a schema carrying it is ever dropped.
const MARK: &str = "innops experiment copy";

/// Who holds schema `n`'s name on the server: None when no schema has it, else whether innops made it.
fn owner(conn: &mut mysql::Conn, tag: &str, n: usize) -> anyhow::Result<Option<bool>> {
    let comment: Option<Option<String>> = conn.query_first(format!(
        "SELECT {tag} SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = {}",
        quote_string(&schema(n))
    ))?;
    Ok(comment.map(|c| c.as_deref() == Some(MARK)))
}

/// Drop copy `n` if innops made it; a schema of that name innops did not make is refused, never dropped.
fn drop_own(conn: &mut mysql::Conn, tag: &str, n: usize) -> anyhow::Result<()> {
    match owner(conn, tag, n)? {
        None => Ok(()),
        Some(true) => Ok(conn.query_drop(format!(
            "DROP DATABASE {tag} IF EXISTS {}",
            quote_ident(&schema(n))
        ))?),
        Some(false) => Err(foreign(n)),
    }
}

/// The refusal when a schema innops would use for a copy is someone else's.
fn foreign(n: usize) -> anyhow::Error {
    crate::error::refused(format!(
        "schema {} exists and innops did not make it (its comment is not '{MARK}'): rename it, innops keeps that name for its table copies",
        quote_ident(&schema(n))
    ))
}

/// The pre-check that every copy's name is free or innops's own, so no copy is built and none dropped otherwise.
pub fn names_free_check(copies: usize) -> Check {
    Check::new(
        "the copies' schema names are free or innops's own",
        move |ctx| {
            let tag = ctx.tag();
            let mut theirs = Vec::new();
            for n in 0..copies {
                if owner(ctx.conn()?, &tag, n)? == Some(false) {
                    theirs.push(schema(n));
                }
            }
            Ok(Verdict::check(
            theirs.is_empty(),
            if theirs.is_empty() {
                "free or innops's own".to_string()
            } else {
                format!("not innops's: {}", theirs.join(", "))
            },
            "free or innops's own",
            "a schema innops uses for its table copies exists and innops did not make it: rename it, then run the experiment again",
        ))
        },
    )
}

/// Which copy `arm` runs on; None when the experiment has no table variants.
pub fn copy_of(p: &ExperimentParams, arm: &Arm) -> Option<usize> {
    let s = arm.settings.iter().find(|s| s.name == TABLE)?;
    Some(
        p.tables
            .iter()
            .position(|t| *t == s.value)
            .map_or(0, |i| i + 1),
    )
}

/// Whether a variant puts the workload on an engine without transactions (Aria, MyISAM): there two threads'
/// DELETE and INSERT of one id can collide (error 1062), which sysbench users ignore with
/// `--mysql-ignore-errors=1062`; every arm of such an experiment then ignores it too, so all run alike.
pub fn non_transactional(p: &ExperimentParams) -> bool {
    p.tables.iter().any(|t| {
        TableVariant::parse(t)
            .ok()
            .and_then(|v| v.engine)
            .is_some_and(|e| e == "Aria" || e == "MyISAM")
    })
}

pub(super) fn variant(p: &ExperimentParams, n: usize) -> anyhow::Result<TableVariant> {
    match n {
        0 => Ok(TableVariant::default()),
        n => TableVariant::parse(&p.tables[n - 1]),
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FailedTable {
    pub variant: String,
    pub why: String,
}

fn failed_file(n: usize) -> String {
    format!("experiment/failed-table-{n}.json")
}

/// Store variant `n` as left out, with why (as a build the server refuses does).
pub(super) fn store_failed(
    ctx: &Ctx,
    p: &ExperimentParams,
    n: usize,
    why: &str,
) -> anyhow::Result<()> {
    let f = FailedTable {
        variant: variant(p, n)?.canonical(),
        why: why.to_string(),
    };
    if let Some(dir) = &ctx.run_dir {
        crate::files::create_private_dir(&dir.join("experiment"))?;
        crate::files::write_json_atomic(&dir.join(failed_file(n)), &f)?;
    }
    Ok(())
}

fn size_file(n: usize) -> String {
    format!("experiment/table-{n}.json")
}

/// The failure stored for copy `n` in this run, if any.
pub fn failed(run_dir: Option<&Path>, n: usize) -> Option<FailedTable> {
    let text = std::fs::read_to_string(run_dir?.join(failed_file(n))).ok()?;
    serde_json::from_str(&text).ok()
}

/// Copy `n`'s size, as measured once built.
pub fn size(run_dir: Option<&Path>, n: usize) -> Option<TableSize> {
    let text = std::fs::read_to_string(run_dir?.join(size_file(n))).ok()?;
    serde_json::from_str(&text).ok()
}

/// What the server's dictionary says `schema`.sbtest1 is; None when it does not exist.
pub fn read_def(
    conn: &mut mysql::Conn,
    schema: &str,
    tag: &str,
) -> anyhow::Result<Option<TableDef>> {
    let row: Option<(String, Option<String>, Option<String>)> = conn.query_first(format!(
        "SELECT {tag} ENGINE, ROW_FORMAT, CREATE_OPTIONS FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
        quote_string(schema),
        quote_string(TABLE_NAME)
    ))?;
    let Some((engine, row_format, create_options)) = row else {
        return Ok(None);
    };
    let innodb: Option<(u64, u64)> = if engine.eq_ignore_ascii_case("InnoDB") {
        conn.query_first(format!(
            "SELECT {tag} FLAG, ZIP_PAGE_SIZE FROM information_schema.INNODB_SYS_TABLES WHERE NAME = {}",
            quote_string(&format!("{schema}/{TABLE_NAME}"))
        ))?
    } else {
        None
    };
    Ok(Some(TableDef {
        engine,
        row_format: row_format.unwrap_or_default(),
        create_options: create_options.unwrap_or_default(),
        innodb_flag: innodb.map(|i| i.0),
        zip_page_size: innodb.map(|i| i.1),
        generated: generated_columns(conn, schema, tag)?,
    }))
}

/// The generated columns of `schema`.sbtest1, each with whether an index starts with it.
fn generated_columns(
    conn: &mut mysql::Conn,
    schema: &str,
    tag: &str,
) -> anyhow::Result<Vec<super::columns::ColumnDef>> {
    let rows: Vec<(String, String, String, Option<String>, i64)> = conn.query(format!(
        "SELECT {tag} c.COLUMN_NAME, c.COLUMN_TYPE, c.EXTRA, c.GENERATION_EXPRESSION, \
         (SELECT COUNT(*) FROM information_schema.STATISTICS s WHERE s.TABLE_SCHEMA = c.TABLE_SCHEMA \
         AND s.TABLE_NAME = c.TABLE_NAME AND s.COLUMN_NAME = c.COLUMN_NAME AND s.SEQ_IN_INDEX = 1) \
         FROM information_schema.COLUMNS c WHERE c.TABLE_SCHEMA = {} AND c.TABLE_NAME = {} \
         AND c.IS_GENERATED = 'ALWAYS' ORDER BY c.ORDINAL_POSITION",
        quote_string(schema),
        quote_string(TABLE_NAME)
    ))?;
    Ok(rows
        .into_iter()
        .map(
            |(name, column_type, extra, expression, indexes)| super::columns::ColumnDef {
                name,
                column_type,
                extra,
                expression: expression.unwrap_or_default(),
                indexed: indexes > 0,
            },
        )
        .collect())
}

/// The copy's `INSERT … SELECT` of innops_bench's rows: every column by name where the variant adds a
/// generated column (the server computes it; a value given for it is an error), else `SELECT *`.
fn copy_rows_sql(v: &TableVariant, db: &str, source: &str) -> String {
    let t = quote_ident(TABLE_NAME);
    if v.column.is_none() {
        return format!("INSERT INTO {db}.{t} SELECT * FROM {source}.{t}");
    }
    let cols = ["id", "k", "c", "pad"]
        .iter()
        .map(|c| quote_ident(c))
        .collect::<Vec<_>>()
        .join(", ");
    format!("INSERT INTO {db}.{t} ({cols}) SELECT {cols} FROM {source}.{t}")
}

/// Whether `engine` can make tables here: None when it can, else the one-sentence refusal.
pub fn engine_missing(ctx: &mut Ctx, engine: &str) -> anyhow::Result<Option<String>> {
    let tag = ctx.tag();
    let engines: Vec<(String, String)> = ctx.conn()?.query(format!(
        "SELECT {tag} ENGINE, SUPPORT FROM information_schema.ENGINES"
    ))?;
    if engines
        .iter()
        .any(|(e, s)| e.eq_ignore_ascii_case(engine) && matches!(s.as_str(), "YES" | "DEFAULT"))
    {
        return Ok(None);
    }
    if engine != "RocksDB" {
        return Ok(Some(format!(
            "the server has no {engine} engine enabled: enable it in the server's configuration, or leave ENGINE={engine} out"
        )));
    }
    let dir: Option<String> = ctx
        .conn()?
        .query_first(format!("SELECT {tag} @@plugin_dir"))?;
    let so = dir.map(|d| Path::new(&d).join("ha_rocksdb.so"));
    Ok(Some(match so {
        Some(so) if ctx.target.local && !so.exists() => format!(
            "RocksDB is not installed here ({} is absent): install it with `apt-get install mariadb-plugin-rocksdb`, then run the experiment again",
            so.display()
        ),
        Some(so) if ctx.target.local => format!(
            "RocksDB is installed here ({}) but not loaded: pass --install-engine to let innops load it for the experiment through its drop-in and a restart (and unload it the same way at the end)",
            so.display()
        ),
        _ => "RocksDB is not loaded on this server: pass --install-engine to let innops load it for the experiment through its drop-in and a restart, once the server has the plugin (Debian: `apt-get install mariadb-plugin-rocksdb`)".into(),
    }))
}

/// The step that builds copy `n` with its definition, proves it and measures its size.
pub fn build_step(p: &ExperimentParams, n: usize) -> Step {
    let v = variant(p, n).unwrap_or_default();
    let (db, src) = (quote_ident(&schema(n)), quote_ident(crate::bench::PLAN_DB));
    let t = quote_ident(TABLE_NAME);
    let what = if n == 0 {
        "the original definition (arms A and A′)".to_string()
    } else {
        v.canonical()
    };
    let mut step = Step::new(
        format!("table-{n}"),
        format!("Build the copy {} with {what}", schema(n)),
        Risk::Online,
    )
    .preview(format!(
        "SET SESSION innodb_strict_mode = ON; CREATE DATABASE {db}"
    ))
    .preview(format!("CREATE TABLE {db}.{t} LIKE {src}.{t}"));
    if n > 0 {
        step = step.preview(format!("ALTER TABLE {db}.{t} {}", v.clauses().join(" ")));
    }
    step = step
        .preview(format!("{}; ANALYZE TABLE {db}.{t}", copy_rows_sql(&v, &db, &src)))
        .preview(if v.column.is_some() {
            "read the definition back from information_schema.TABLES, COLUMNS (the generated column: its kind, type and expression) and STATISTICS (its index); measure its size"
        } else {
            "read the definition back from information_schema.TABLES and INNODB_SYS_TABLES; measure its size"
        });
    if v.engine.as_deref() == Some(super::engine::ROCKSDB) && p.install_engine {
        // engine-load loaded it before this step, or stored why it could not: then this variant is left out.
        step = step.pre(Check::after_prior(
            "RocksDB loaded by engine-load",
            move |ctx| {
                let expected = "RocksDB enabled";
                if let Some(f) = failed(ctx.run_dir.as_deref(), n) {
                    return Ok(Verdict::done(format!("left out: {}", f.why), expected));
                }
                Ok(match engine_missing(ctx, "RocksDB")? {
                    None => Verdict::pass("RocksDB enabled", expected),
                    Some(why) => Verdict::fail("no RocksDB", expected, why),
                })
            },
        ));
    } else if let Some(engine) = v.engine.clone() {
        step = step.pre(Check::new(format!("the server has {engine}"), move |ctx| {
            Ok(match engine_missing(ctx, &engine)? {
                None => Verdict::pass(format!("{engine} enabled"), format!("{engine} enabled")),
                Some(why) => {
                    Verdict::fail(format!("no {engine}"), format!("{engine} enabled"), why)
                }
            })
        }));
    }
    let vp = v.clone();
    step.act(move |ctx| build(ctx, n, &vp)).post(Check::new(
        "the copy holds the variant, or the variant is left out",
        move |ctx| copy_verdict(ctx, n, &v, true),
    ))
}

/// Build copy `n`: a leftover of an interrupted build is dropped first (the schema is innops's own).
fn build(ctx: &mut Ctx, n: usize, v: &TableVariant) -> anyhow::Result<serde_json::Value> {
    let tag = ctx.tag();
    let (name, src) = (schema(n), crate::bench::PLAN_DB);
    let (db, t) = (quote_ident(&name), quote_ident(TABLE_NAME));
    let source = quote_ident(src);
    let conn = ctx.conn()?;
    let strict: Option<i64> =
        conn.query_first(format!("SELECT {tag} @@SESSION.innodb_strict_mode"))?;
    conn.query_drop(format!("SET {tag} SESSION innodb_strict_mode = ON"))?;
    // A leftover of this experiment's interrupted build is dropped; a schema of that name innops did not make
    // stops the build before anything is created.
    drop_own(conn, &tag, n)?;
    let mut attempt = || -> mysql::Result<()> {
        conn.query_drop(format!(
            "CREATE DATABASE {tag} {db} COMMENT {}",
            quote_string(MARK)
        ))?;
        conn.query_drop(format!("CREATE TABLE {tag} {db}.{t} LIKE {source}.{t}"))?;
        if n > 0 {
            conn.query_drop(format!(
                "ALTER TABLE {tag} {db}.{t} {}",
                v.clauses().join(" ")
            ))?;
        }
        conn.query_drop(crate::bench::workloads::tag_sql(
            &copy_rows_sql(v, &db, &source),
            &tag,
        ))?;
        conn.query_drop(format!("ANALYZE TABLE {tag} {db}.{t}"))
    };
    let built = attempt();
    conn.query_drop(format!(
        "SET {tag} SESSION innodb_strict_mode = {}",
        strict.unwrap_or(1)
    ))?;
    let why = match built {
        Err(e) if n > 0 => Some(format!(
            "the server refused {}: {}",
            v.canonical(),
            crate::error::describe_mysql(&e)
        )),
        Err(e) => return Err(e.into()),
        Ok(()) => match read_def(ctx.conn()?, &name, &tag)? {
            None => Some("the copy is missing after it was built".into()),
            Some(d) => table_opts::disproof(v, &d)
                .map(|d| format!("the server did not take {}: {d}", v.canonical())),
        },
    };
    if let Some(why) = why {
        drop_own(ctx.conn()?, &tag, n)?;
        let f = FailedTable {
            variant: v.canonical(),
            why: why.clone(),
        };
        if let Some(dir) = &ctx.run_dir {
            crate::files::create_private_dir(&dir.join("experiment"))?;
            crate::files::write_json_atomic(&dir.join(failed_file(n)), &f)?;
        }
        crate::progress::say(&format!("      left out: {why}"));
        return Ok(serde_json::json!({"left_out": why}));
    }
    let size = measure(ctx, &name)?;
    if let Some(dir) = &ctx.run_dir {
        crate::files::create_private_dir(&dir.join("experiment"))?;
        crate::files::write_json_atomic(&dir.join(size_file(n)), &size)?;
    }
    Ok(serde_json::json!({"built": name, "size": size}))
}

/// The copy's verdict: it holds the variant (or, with `left_out_ok`, the variant is stored as left out).
fn copy_verdict(
    ctx: &mut Ctx,
    n: usize,
    v: &TableVariant,
    left_out_ok: bool,
) -> anyhow::Result<Verdict> {
    let expected = if n == 0 {
        "the original definition".to_string()
    } else {
        v.canonical()
    };
    if let Some(f) = failed(ctx.run_dir.as_deref(), n) {
        return Ok(if left_out_ok {
            Verdict::pass(format!("left out: {}", f.why), expected)
        } else {
            Verdict::done(format!("left out: {}", f.why), expected)
        });
    }
    let tag = ctx.tag();
    Ok(match read_def(ctx.conn()?, &schema(n), &tag)? {
        None => Verdict::fail(
            format!("{}.{TABLE_NAME} is missing", schema(n)),
            expected,
            "the arm's copy is gone: resume the run, so its table step builds it again",
        ),
        Some(d) => match table_opts::disproof(v, &d) {
            None => Verdict::pass(d.describe(), expected),
            Some(why) => Verdict::fail(
                format!("{}: {why}", d.describe()),
                expected,
                "the copy is not the variant: resume the run, so its table step builds it again",
            ),
        },
    })
}

/// The arm-run's pre-check: its copy is in place with its variant, or the variant was left out (skipped).
pub fn arm_check(p: &ExperimentParams, n: usize) -> Check {
    let v = variant(p, n).unwrap_or_default();
    Check::after_prior(
        format!("the copy {} holds the arm's table", schema(n)),
        move |ctx| copy_verdict(ctx, n, &v, false),
    )
}

/// The copy's size once its pages are on disk (`FLUSH TABLES … FOR EXPORT` writes them; the copy is innops's
/// own, so the moment's lock blocks nobody): `information_schema.TABLES`, and the allocated size from the
/// files on a local server (page compression punches holes: the allocated blocks are what the disk holds),
/// else from InnoDB's tablespace view.
fn measure(ctx: &mut Ctx, name: &str) -> anyhow::Result<TableSize> {
    measure_inner(ctx, name, true)
}

fn measure_after_flush(ctx: &mut Ctx, name: &str) -> anyhow::Result<TableSize> {
    measure_inner(ctx, name, false)
}

fn measure_inner(ctx: &mut Ctx, name: &str, flush: bool) -> anyhow::Result<TableSize> {
    let tag = ctx.tag();
    let local = ctx.target.local;
    let conn = ctx.conn()?;
    let qualified = format!("{}.{}", quote_ident(name), quote_ident(TABLE_NAME));
    let (engine, data_length, index_length): (String, u64, u64) = conn
        .query_first(format!(
            "SELECT {tag} ENGINE, DATA_LENGTH, INDEX_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
            quote_string(name),
            quote_string(TABLE_NAME)
        ))?
        .unwrap_or_default();
    if flush && engine.eq_ignore_ascii_case("RocksDB") {
        // Fresh rows sit in RocksDB's memtable, which information_schema counts as nothing: flush them to SST
        // files (a server-wide flush, no setting changes) and count again.
        conn.query_drop(format!(
            "SET {tag} GLOBAL rocksdb_force_flush_memtable_now = 1"
        ))?;
        conn.query_drop(format!("ANALYZE {tag} TABLE {qualified}"))?;
        return measure_after_flush(ctx, name);
    }
    // FOR EXPORT makes InnoDB write the table's pages; RocksDB has no such option (error 1031), and a plain
    // FLUSH TABLES closes Aria's and MyISAM's files with their buffers written.
    if !flush {
    } else if engine.eq_ignore_ascii_case("InnoDB") {
        conn.query_drop(format!("FLUSH {tag} TABLES {qualified} FOR EXPORT"))?;
        conn.query_drop(format!("UNLOCK {tag} TABLES"))?;
    } else {
        conn.query_drop(format!("FLUSH {tag} TABLES {qualified}"))?;
    }
    let size = |file_bytes, allocated_bytes, files_from: String| TableSize {
        data_length,
        index_length,
        file_bytes,
        allocated_bytes,
        files_from,
    };
    if local {
        let datadir: Option<String> = conn.query_first(format!("SELECT {tag} @@datadir"))?;
        let dir = Path::new(&datadir.unwrap_or_default()).join(name);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                return Ok(size(
                    None,
                    None,
                    format!("not measured: {} cannot be read here ({e})", dir.display()),
                ))
            }
        };
        let (mut len, mut blocks, mut files) = (0u64, 0u64, 0);
        for e in entries.flatten() {
            let f = e.file_name().to_string_lossy().to_string();
            if f.starts_with(&format!("{TABLE_NAME}.")) && !f.ends_with(".frm") {
                if let Ok(m) = e.metadata() {
                    files += 1;
                    len += m.len();
                    blocks += std::os::unix::fs::MetadataExt::blocks(&m) * 512;
                }
            }
        }
        if files == 0 {
            return Ok(size(
                None,
                None,
                "not measured where the copy has no files of its own (RocksDB keeps every table in the datadir's #rocksdb; InnoDB with innodb_file_per_table=OFF, in its system tablespace)".into(),
            ));
        }
        return Ok(size(
            Some(len),
            Some(blocks),
            "from the files' allocated blocks (stat) in the local datadir, after FLUSH TABLES … FOR EXPORT wrote the copy's pages".into(),
        ));
    }
    let ts: Option<(u64, u64)> = conn.query_first(format!(
        "SELECT {tag} FILE_SIZE, ALLOCATED_SIZE FROM information_schema.INNODB_SYS_TABLESPACES WHERE NAME = {}",
        quote_string(&format!("{name}/{TABLE_NAME}"))
    ))?;
    Ok(match ts {
        // The server refreshes ALLOCATED_SIZE lazily: 0 means not known yet, not an empty file.
        Some((file, allocated)) => size(
            Some(file),
            (allocated > 0).then_some(allocated),
            "from information_schema.INNODB_SYS_TABLESPACES (the server is not local)".into(),
        ),
        None => size(
            None,
            None,
            "not measured for engines other than InnoDB: the server is not local".into(),
        ),
    })
}

/// The step that drops every copy and proves each gone.
pub fn drop_step(p: &ExperimentParams) -> Step {
    let copies = p.tables.len() + 1;
    let mut step = Step::new(
        "drop-tables",
        "Drop the table copies (innops's own schemas)",
        Risk::Online,
    );
    for n in 0..copies {
        step = step.preview(format!(
            "DROP DATABASE IF EXISTS {}",
            quote_ident(&schema(n))
        ));
    }
    step.act(move |ctx| {
        let tag = ctx.tag();
        for n in 0..copies {
            drop_own(ctx.conn()?, &tag, n)?;
        }
        Ok(serde_json::json!({"dropped": (0..copies).map(schema).collect::<Vec<_>>()}))
    })
    .post(Check::new("every copy is gone", move |ctx| {
        let tag = ctx.tag();
        let names: Vec<String> = (0..copies).map(|n| quote_string(&schema(n))).collect();
        let left: Vec<String> = ctx.conn()?.query(format!(
            "SELECT {tag} SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME IN ({})",
            names.join(", ")
        ))?;
        Ok(Verdict::check(
            left.is_empty(),
            if left.is_empty() {
                "none left".to_string()
            } else {
                format!("left: {}", left.join(", "))
            },
            "none left",
            "a copy could not be dropped: drop it with DROP DATABASE, it is innops's own",
        ))
    }))
}
