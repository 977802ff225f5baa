//! What verification costs: `CHECKSUM TABLE … EXTENDED` against innops's own row hash, on a sysbench-shaped
//! table, MyISAM and InnoDB (a benchmark, not a test: it prints figures, it judges nothing).
//!
//! Against a running server (an innops sandbox is easiest: `innops sandbox up vc --buffer-pool 1G`):
//!   VC_SOCKET=/path/to/mysqld.sock cargo bench --bench verify_cost
//! Settings (environment): VC_SOCKET (required), VC_ROWS (1000000), VC_ROUNDS (3; medians over them).
//! It creates database `vc` with `m` (MyISAM: id INT UNSIGNED AUTO_INCREMENT PK, k INT UNSIGNED, c CHAR(120),
//! pad CHAR(60), KEY k_1(k)) filled from the sequence engine, and `i`, its InnoDB copy; both are reused when they
//! already hold VC_ROWS rows. Each round times, alternating the order, CHECKSUM TABLE and the row hash on each.

use std::time::Instant;

use innops::procedures::convert::schema::TableInfo;
use innops::procedures::convert::verify::{fingerprint, Method};
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
    let mut c = Conn::new(OptsBuilder::new().socket(Some(socket)).user(Some("root")))?;
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
    let mut times: std::collections::BTreeMap<(&str, String), Vec<f64>> = Default::default();
    let methods = [Method::ChecksumTable, Method::RowHash];
    let mut prints: std::collections::BTreeMap<(&str, String), String> = Default::default();
    for round in 0..rounds {
        for k in 0..4 {
            let (table, method) = {
                let j = (k + round) % 4;
                (["m", "i"][j / 2], methods[j % 2])
            };
            let t0 = Instant::now();
            let fp = fingerprint(&mut c, "/* verify_cost */", &info, table, method)?;
            times
                .entry((table, method.to_string()))
                .or_default()
                .push(t0.elapsed().as_secs_f64());
            prints.insert((table, method.to_string()), fp.checksum);
        }
    }
    println!("{rows} rows, innodb_buffer_pool_size {pool}, medians of {rounds} (seconds, row count included):");
    for table in ["m", "i"] {
        let ck = median(times[&(table, Method::ChecksumTable.to_string())].clone());
        let rh = median(times[&(table, Method::RowHash.to_string())].clone());
        println!(
            "  {:<6}  CHECKSUM TABLE {ck:.3}  row hash {rh:.3}  ratio {:.2}",
            if table == "m" { "MyISAM" } else { "InnoDB" },
            rh / ck
        );
    }
    println!(
        "  row hash equal on both engines: {}",
        prints[&("m", Method::RowHash.to_string())] == prints[&("i", Method::RowHash.to_string())]
    );
    Ok(())
}
