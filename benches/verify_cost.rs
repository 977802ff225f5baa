//! What verification costs: `CHECKSUM TABLE … EXTENDED` against innops's own row hash, on a sysbench-shaped
//! table, MyISAM and InnoDB (a benchmark, not a test: it prints figures, it judges nothing).
//!
//! Against a running server (an innops sandbox is easiest: `innops sandbox up vc --buffer-pool 1G`):
//!   VC_SOCKET=/path/to/mysqld.sock cargo bench --bench verify_cost
//! Settings (environment): VC_SOCKET (required), VC_ROWS (1000000), VC_ROUNDS (3; medians over them).
//! It creates database `vc` with `m` (MyISAM: id INT UNSIGNED AUTO_INCREMENT PK, k INT UNSIGNED, c CHAR(120),
//! pad CHAR(60), KEY k_1(k)) filled from the sequence engine, and `i`, its InnoDB copy; both are reused when they
//! already hold VC_ROWS rows. Each round times, rotating the order, CHECKSUM TABLE, the sha256 and xxh3 row hashes on each, and
//! the xxh3 row hash read in two halves of the primary key at once (InnoDB; what verification does to the new table).

use std::time::Instant;

use innops::procedures::convert::schema::TableInfo;
use innops::procedures::convert::verify::{fingerprint, fingerprint_clustered, Method};
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() -> anyhow::Result<()> {
    let Ok(socket) = std::env::var("VC_SOCKET") else {
        eprintln!("verify_cost: set VC_SOCKET to a server's socket (see the comment at the top)");
        return Ok(());
    };
    let rows: u64 = std::env::var("VC_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let rounds: usize = std::env::var("VC_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let mut c = Conn::new(
        OptsBuilder::new()
            .socket(Some(socket.clone()))
            .user(Some("root")),
    )?;
    c.query_drop("CREATE DATABASE IF NOT EXISTS vc")?;
    c.query_drop("USE vc")?;
    let have: Option<u64> = c.query_first("SELECT COUNT(*) FROM vc.i").unwrap_or(None);
    if have != Some(rows) {
        c.query_drop("DROP TABLE IF EXISTS vc.m, vc.i")?;
        c.query_drop(
            "CREATE TABLE vc.m (id INT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, k INT UNSIGNED NOT NULL DEFAULT 0, \
             c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1 (k)) ENGINE=MyISAM",
        )?;
        c.query_drop(format!(
            "INSERT INTO vc.m (k, c, pad) SELECT FLOOR(RAND(seq) * {rows}), \
             CONCAT_WS('-', LPAD(seq, 11, '0'), LPAD(seq * 7, 11, '0'), LPAD(seq * 13, 11, '0'), LPAD(seq * 17, 11, '0'), \
             LPAD(seq * 19, 11, '0'), LPAD(seq * 23, 11, '0'), LPAD(seq * 29, 11, '0'), LPAD(seq * 31, 11, '0'), \
             LPAD(seq * 37, 11, '0'), LPAD(seq * 41, 11, '0')), \
             CONCAT_WS('-', LPAD(seq * 3, 11, '0'), LPAD(seq * 5, 11, '0'), LPAD(seq * 11, 11, '0'), LPAD(seq * 43, 11, '0'), \
             LPAD(seq * 47, 11, '0')) FROM seq_1_to_{rows}"
        ))?;
        c.query_drop("CREATE TABLE vc.i LIKE vc.m")?;
        c.query_drop("ALTER TABLE vc.i ENGINE=InnoDB")?;
        c.query_drop("INSERT INTO vc.i SELECT * FROM vc.m")?;
    }
    let pool: String = c
        .query_first("SELECT @@innodb_buffer_pool_size")?
        .unwrap_or_default();
    let info = TableInfo::load(&mut c, "", "vc", "m")?.expect("vc.m exists");
    let target = innops::server::connect::ConnSpec {
        socket: Some(socket.clone().into()),
        user: Some("root".into()),
        ..Default::default()
    }
    .resolve()?;
    let mut times: std::collections::BTreeMap<(&str, &str), Vec<f64>> = Default::default();
    // (label, method, read in two halves of the primary key): the split read is what verification does
    // to the new InnoDB table.
    let variants: [(&str, Method, bool); 4] = [
        ("CHECKSUM TABLE", Method::ChecksumTable, false),
        ("sha256 row hash", Method::RowHash, false),
        ("xxh3 row hash", Method::RowXxh3, false),
        ("xxh3, 2 halves", Method::RowXxh3, true),
    ];
    let mut prints: std::collections::BTreeMap<(&str, &str), String> = Default::default();
    for round in 0..rounds {
        for k in 0..variants.len() * 2 {
            let j = (k + round) % (variants.len() * 2);
            let table = ["m", "i"][j / variants.len()];
            let (label, method, split) = variants[j % variants.len()];
            if split && table == "m" {
                continue;
            }
            let t0 = Instant::now();
            let fp = if split {
                fingerprint_clustered(&target, &mut c, "/* verify_cost */", &info, table, method)?
            } else {
                fingerprint(&mut c, "/* verify_cost */", &info, table, method)?
            };
            times
                .entry((table, label))
                .or_default()
                .push(t0.elapsed().as_secs_f64());
            prints.insert((table, label), fp.checksum);
        }
    }
    println!("{rows} rows, innodb_buffer_pool_size {pool}, medians of {rounds} (seconds, row count included; ratio to CHECKSUM TABLE):");
    for table in ["m", "i"] {
        let ck = median(times[&(table, "CHECKSUM TABLE")].clone());
        let mut line = format!(
            "  {:<6}  CHECKSUM TABLE {ck:.3}",
            if table == "m" { "MyISAM" } else { "InnoDB" }
        );
        for (label, _, _) in &variants[1..] {
            if let Some(t) = times.get(&(table, *label)) {
                let t = median(t.clone());
                line.push_str(&format!("  {label} {t:.3} ({:.2})", t / ck));
            }
        }
        println!("{line}");
    }
    println!(
        "  row hashes equal on both engines: sha256 {}, xxh3 {}; xxh3 in two halves equals one stream: {}",
        prints[&("m", "sha256 row hash")] == prints[&("i", "sha256 row hash")],
        prints[&("m", "xxh3 row hash")] == prints[&("i", "xxh3 row hash")],
        prints[&("i", "xxh3, 2 halves")] == prints[&("i", "xxh3 row hash")],
    );
    Ok(())
}
