//! `prepare` and `cleanup` of the sbtest tables, as oltp_common.lua does them: `CREATE TABLE sbtestN`, rows
//! loaded with multi-row INSERTs (auto-increment ids 1..N, `k` from the default distribution, `c` and `pad`
//! from the digit templates), then the secondary index `k_N`; tables are spread over the threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::sql::Queryable;
use mysql::Conn;
use serde::Serialize;

use super::distribution::SbRng;
use super::run::{worker_opts, RunSpec};
use super::workloads::{self as wl, tag_sql};
use crate::error::refused;
use crate::progress::Progress;
use crate::server::connect::Target;
use crate::sql::quote_ident;

/// Rows per INSERT statement (about 190 KB of SQL, well under the default max_allowed_packet).
const ROWS_PER_INSERT: u32 = 1000;

/// What `prepare` or `cleanup` did.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub db: String,
    pub tables: Vec<String>,
    pub rows: u64,
    pub seconds: f64,
}

/// The sbtest tables among 1..=tables that do not exist in `db`.
pub fn missing_tables(
    conn: &mut Conn,
    db: &str,
    tables: u32,
    tag: &str,
) -> anyhow::Result<Vec<u32>> {
    let present: Vec<String> = conn.exec(
        tag_sql("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE 'sbtest%'", tag),
        (db,),
    )?;
    Ok((1..=tables)
        .filter(|t| !present.contains(&format!("sbtest{t}")))
        .collect())
}

/// bulk_insert's run inserts ids 1, 2, … into each of its tables afresh (as bulk_insert.lua does), so a table
/// that holds rows (a run before, no cleanup since) or has other columns (an oltp_* table of the same name) stops
/// it at its first INSERT with a duplicate key or a column count error, which no `--ignore-errors` cures.
/// Refused before the run, with the commands that fix it; `prepare_line` is the prepare to run.
pub fn check_bulk_tables(
    conn: &mut Conn,
    spec: &RunSpec,
    label: &str,
    prepare_line: &str,
) -> anyhow::Result<()> {
    let cleanup = format!(
        "innops bench bulk_insert cleanup --db {} --threads {}",
        spec.db, spec.tables
    );
    for t in 1..=spec.tables {
        let name = format!("sbtest{t}");
        let columns: Vec<String> = conn.exec(
            tag_sql("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", &spec.tag),
            (&spec.db, &name),
        )?;
        if columns != ["id", "k"] {
            return Err(refused(format!(
                "table {}.{name} on {label} has the columns ({}), not bulk_insert's (id, k): it was prepared for another test; give bulk_insert a --db of its own, or drop these tables (`innops bench cleanup --db {} --tables {}`) and run `{prepare_line}`",
                spec.db,
                columns.join(", "),
                spec.db,
                spec.tables
            )));
        }
        let any: Option<u8> = conn.query_first(tag_sql(
            &format!(
                "SELECT 1 FROM {}.{} LIMIT 1",
                quote_ident(&spec.db),
                quote_ident(&name)
            ),
            &spec.tag,
        ))?;
        if any.is_some() {
            return Err(refused(format!(
                "table {}.{name} on {label} holds rows already, and bulk_insert inserts ids from 1 on every run (as sysbench's does): run `{cleanup}` and `{prepare_line}` first",
                spec.db
            )));
        }
    }
    Ok(())
}

/// True when every table exists with exactly `table_size` rows (what a plan's benchmark expects).
pub fn is_prepared(
    conn: &mut Conn,
    db: &str,
    tables: u32,
    table_size: u32,
    tag: &str,
) -> anyhow::Result<bool> {
    if !missing_tables(conn, db, tables, tag)?.is_empty() {
        return Ok(false);
    }
    for t in 1..=tables {
        let n: Option<u64> = conn.query_first(tag_sql(
            &format!("SELECT COUNT(*) FROM {}.sbtest{t}", quote_ident(db)),
            tag,
        ))?;
        if n != Some(u64::from(table_size)) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One multi-row INSERT of generated rows, drawing values in create_table()'s order (c, pad, then k). With
/// `--auto_inc=off` the ids are given, counting from `first_id`, as create_table() numbers them.
pub fn insert_sql(
    table: u32,
    first_id: u32,
    rows: u32,
    spec: &RunSpec,
    rng: &mut SbRng,
    tag: &str,
) -> String {
    let mut sql = String::with_capacity(rows as usize * 200 + 64);
    let auto_inc = spec.oltp.auto_inc;
    let columns = if auto_inc {
        "k, c, pad"
    } else {
        "id, k, c, pad"
    };
    sql.push_str(&tag_sql(
        &format!("INSERT INTO sbtest{table}({columns}) VALUES"),
        tag,
    ));
    let (mut c, mut pad) = (String::new(), String::new());
    let dist = spec.dist();
    for i in 0..rows {
        rng.fill_template(wl::C_TEMPLATE, &mut c);
        rng.fill_template(wl::PAD_TEMPLATE, &mut pad);
        let k = rng.default(&dist, 1, spec.table_size);
        if i > 0 {
            sql.push(',');
        }
        if auto_inc {
            sql.push_str(&format!("({k}, '{c}', '{pad}')"));
        } else {
            sql.push_str(&format!("({}, {k}, '{c}', '{pad}')", first_id + i));
        }
    }
    sql
}

fn load_table(
    conn: &mut Conn,
    t: u32,
    spec: &RunSpec,
    replace: bool,
    done: &AtomicU64,
) -> anyhow::Result<()> {
    let tag = &spec.tag;
    if replace {
        conn.query_drop(tag_sql(&format!("DROP TABLE IF EXISTS sbtest{t}"), tag))?;
    }
    if spec.workload == wl::Workload::BulkInsert {
        // bulk_insert.lua's prepare(): an empty (id, k) table per thread; the run fills it.
        conn.query_drop(wl::bulk_table_sql(t, tag))?;
        return Ok(());
    }
    conn.query_drop(wl::create_table_sql(t, &spec.oltp, tag))?;
    let mut rng = SbRng::new(spec.seed, 1_000_000 + u64::from(t));
    let mut left = spec.table_size;
    while left > 0 {
        let n = left.min(ROWS_PER_INSERT);
        let first_id = spec.table_size - left + 1;
        conn.query_drop(insert_sql(t, first_id, n, spec, &mut rng, tag))?;
        left -= n;
        done.fetch_add(u64::from(n), Ordering::Relaxed);
    }
    if spec.oltp.create_secondary {
        conn.query_drop(wl::create_index_sql(t, tag))?;
    }
    Ok(())
}

/// Create the database if missing and build every table. Existing tables are refused unless `replace`.
pub fn prepare(
    target: &Target,
    spec: &RunSpec,
    replace: bool,
    quiet: bool,
) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let mut conn = target.connect()?;
    conn.query_drop(format!(
        "CREATE DATABASE {} IF NOT EXISTS {}",
        spec.tag,
        quote_ident(&spec.db)
    ))?;
    let missing = missing_tables(&mut conn, &spec.db, spec.tables, &spec.tag)?;
    if !replace && missing.len() < spec.tables as usize {
        let first = (1..=spec.tables)
            .find(|t| !missing.contains(t))
            .unwrap_or(1);
        return Err(refused(format!(
            "table {}.sbtest{first} already exists on {}: run `innops bench cleanup` with the same --db and --tables first",
            spec.db, target.label
        )));
    }
    drop(conn);
    let opts = worker_opts(target, &spec.db, spec.tables);
    let threads = spec.threads.clamp(1, spec.tables.max(1));
    let done = AtomicU64::new(0);
    let total = if spec.workload == wl::Workload::BulkInsert {
        0
    } else {
        u64::from(spec.tables) * u64::from(spec.table_size)
    };
    let results: Vec<anyhow::Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (opts, done) = (opts.clone(), &done);
                s.spawn(move || -> anyhow::Result<()> {
                    let mut conn = Conn::new(opts)?;
                    // oltp_common.lua's cmd_prepare(): thread i takes tables i+1, i+1+threads, ...
                    for t in (i + 1..=spec.tables).step_by(threads as usize) {
                        // Through the bars' own printer: a line written past them leaves a dead bar above it.
                        if !quiet && spec.workload == wl::Workload::BulkInsert {
                            crate::progress::print_line(&format!(
                                "Creating table '{}.sbtest{t}'...",
                                spec.db
                            ));
                        } else if !quiet {
                            crate::progress::print_line(&format!(
                                "Creating table '{}.sbtest{t}' with {} rows...",
                                spec.db, spec.table_size
                            ));
                        }
                        load_table(&mut conn, t, spec, replace, done)?;
                    }
                    Ok(())
                })
            })
            .collect();
        let mut bar = (!quiet).then(|| Progress::new("inserting rows", total));
        while !handles.iter().all(|h| h.is_finished()) {
            if let Some(b) = bar.as_mut() {
                b.set(done.load(Ordering::Relaxed));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if let Some(b) = bar {
            b.finish();
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a prepare thread panicked")))
            })
            .collect()
    });
    for r in results {
        r?;
    }
    Ok(Summary {
        db: spec.db.clone(),
        tables: (1..=spec.tables).map(|t| format!("sbtest{t}")).collect(),
        rows: total,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Drop the sbtest tables (oltp_common.lua's cleanup()); the database stays.
pub fn cleanup(target: &Target, spec: &RunSpec) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let mut conn = target.connect()?;
    let missing = missing_tables(&mut conn, &spec.db, spec.tables, &spec.tag)?;
    let mut dropped = Vec::new();
    for t in 1..=spec.tables {
        conn.query_drop(tag_sql(
            &format!("DROP TABLE IF EXISTS {}.sbtest{t}", quote_ident(&spec.db)),
            &spec.tag,
        ))?;
        if !missing.contains(&t) {
            dropped.push(format!("sbtest{t}"));
        }
    }
    Ok(Summary {
        db: spec.db.clone(),
        tables: dropped,
        rows: 0,
        seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Workload;

    fn spec() -> RunSpec {
        RunSpec {
            time: Duration::from_secs(1),
            ..RunSpec::new(Workload::ReadWrite, "sbtest", "/* t */", 1)
        }
    }

    #[test]
    fn insert_rows_have_sysbench_s_shape() {
        let mut rng = SbRng::new(1, 1);
        let sql = insert_sql(1, 1, 3, &spec(), &mut rng, "/* t */");
        assert!(
            sql.starts_with("INSERT /* t */ INTO sbtest1(k, c, pad) VALUES("),
            "{sql}"
        );
        let rows: Vec<&str> = sql.split("VALUES").nth(1).unwrap().split("),(").collect();
        assert_eq!(rows.len(), 3);
        for r in rows {
            let parts: Vec<&str> = r
                .trim_matches(|c| c == '(' || c == ')')
                .split(", ")
                .collect();
            let k: u32 = parts[0].parse().unwrap();
            assert!((1..=10_000).contains(&k));
            assert_eq!(parts[1].trim_matches('\'').len(), 119);
            assert_eq!(parts[2].trim_matches('\'').len(), 59);
        }
    }
}
