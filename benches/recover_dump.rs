//! The dump engine of `innops recover` run on its own (there is no subcommand yet): benches/recover.sh times it
//! beside mariadb-dump and mydumper.
//!
//!   cargo bench --bench recover_dump -- SOCKET OUT_DIR THREADS DB.TABLE...
//! Prints `rows SECONDS` per table and the manifest's status to stderr; exits 1 if a table is not complete.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use innops::dump::{self, DumpOptions, TableName, TableStatus, TargetConnector};
use innops::server::connect::ConnSpec;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [socket, out, threads, tables @ ..] = args.as_slice() else {
        anyhow::bail!("usage: recover_dump SOCKET OUT_DIR THREADS DB.TABLE...");
    };
    let spec = ConnSpec {
        socket: Some(PathBuf::from(socket)),
        user: Some("root".into()),
        ..Default::default()
    };
    let target = spec.resolve_plain();
    let connector = TargetConnector {
        target: &target,
        wait: Duration::from_secs(30),
        error_log: None,
    };
    let names: Vec<TableName> = tables
        .iter()
        .map(|t| {
            let (db, table) = t.split_once('.').expect("DB.TABLE");
            TableName::new(db, table)
        })
        .collect();
    let mut opts = DumpOptions::new(std::path::Path::new(out), 0);
    opts.threads = threads.parse()?;
    let start = Instant::now();
    let m = dump::dump(&connector, &names, &opts, &AtomicBool::new(false))?;
    let secs = start.elapsed().as_secs_f64();
    let rows: u64 = m.tables.iter().map(|t| t.rows).sum();
    println!("{rows} {secs:.3}");
    if m.tables.iter().any(|t| t.status != TableStatus::Complete) {
        eprintln!("{}", serde_json::to_string_pretty(&m)?);
        std::process::exit(1);
    }
    Ok(())
}
