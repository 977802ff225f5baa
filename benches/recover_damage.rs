//! The damaging half of benches/recover.sh: leaf pages of a sandbox's table are damaged (through
//! `innops::procedures::drill::damage`, which touches only a stopped sandbox's own table file) and the exact outcome a
//! perfect recovery has is printed, for the script to set `innops recover`, mariadb-dump and an
//! ascending-plus-descending dump against.
//!
//!   cargo bench --bench recover_damage -- SANDBOX_ROOT SANDBOX DB TABLE
//! Reads the table's integer primary key in order, shuts the sandbox down slowly, damages four leaf pages of
//! the clustered index (one in the middle, an adjacent pair at three quarters, one next to the last), starts
//! it again without the buffer-pool load, and prints one JSON object: rows_before, on_damaged, limit, lost
//! (pairs [after, before], exclusive), pages.

use std::path::Path;
use std::time::Duration;

use innops::procedures::drill::damage::{self, Stopped};
use innops::server::sandbox::Sandbox;
use mysql::prelude::Queryable;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let [root, name, db, table] = args.as_slice() else {
        anyhow::bail!("usage: recover_damage SANDBOX_ROOT SANDBOX DB TABLE");
    };
    let mut sb = Sandbox::open(Path::new(root), name)?;
    let keys: Vec<u64> = sb.conn_spec().resolve_plain().connect()?.query(format!(
        "SELECT /* innops:bench:damage */ {} FROM {} FORCE INDEX (PRIMARY) ORDER BY 1",
        innops::sql::quote_ident("id"),
        innops::sql::qualified(db, table)
    ))?;
    let (pages, expected) = {
        let stopped = Stopped::slow(&sb, "/* innops:bench:damage */")?;
        let file = stopped.table(db, table)?;
        let leaves = file.leaves(3)?;
        let bad = damage::spread(leaves.len()).expect("at least 20 leaf pages");
        let expected = damage::expected(&keys, &leaves, &bad).map_err(anyhow::Error::msg)?;
        let pages: Vec<u32> = bad.iter().map(|&i| leaves[i].page).collect();
        for &p in &pages {
            file.damage(p)?;
        }
        (pages, expected)
    };
    sb.start(
        &["--innodb-buffer-pool-load-at-startup=OFF".into()],
        Duration::from_secs(600),
    )?;
    let mut v = serde_json::to_value(&expected)?;
    v["pages"] = serde_json::json!(pages);
    println!("{v}");
    Ok(())
}
