//! `innops inspect`: server facts, the version matrix's answers, the InnoDB settings the procedures depend on,
//! MyISAM tables with their sizes, and hazards worth a DBA's attention. Read-only.

use std::time::Duration;

use crate::sql::Queryable;
use serde::Serialize;

use crate::procedures::redo;
use crate::server::facts::ServerFacts;
use crate::server::Target;
use crate::units::format_size;

/// Settings shown by `inspect`.
pub const SETTINGS: [&str; 14] = [
    "innodb_buffer_pool_size",
    "innodb_log_file_size",
    "innodb_log_files_in_group",
    "innodb_redo_log_capacity",
    "innodb_log_buffer_size",
    "innodb_flush_log_at_trx_commit",
    "innodb_fast_shutdown",
    "innodb_change_buffering",
    "innodb_read_only",
    "innodb_force_recovery",
    "innodb_file_per_table",
    "innodb_alter_copy_bulk",
    "innodb_deadlock_detect",
    "innodb_strict_mode",
];

#[derive(Debug, Serialize)]
pub struct MyIsamTable {
    pub schema: String,
    pub table: String,
    pub rows: u64,
    pub data_bytes: u64,
    pub index_bytes: u64,
}

/// Name/value pairs as one JSON object, in their order.
fn as_object<S: serde::Serializer>(
    v: &[(String, Option<String>)],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(v.len()))?;
    for (k, x) in v {
        m.serialize_entry(k, x)?;
    }
    m.end()
}

#[derive(Debug, Serialize)]
pub struct Inspection {
    pub target: String,
    pub flavor: crate::server::facts::Flavor,
    pub version: String,
    pub version_string: String,
    /// In JSON an object, name → value (null where the server has no such variable), in the order shown.
    #[serde(serialize_with = "as_object")]
    pub settings: Vec<(String, Option<String>)>,
    pub matrix: serde_json::Value,
    pub myisam_tables: Vec<MyIsamTable>,
    /// MyISAM tables innops kept after converting a table (recorded in innops.own_tables): not hazards, but
    /// space to reclaim with `innops convert --drop-kept` once the conversion has soaked.
    pub kept_by_innops: Vec<MyIsamTable>,
    pub redo_bytes_per_sec: Option<f64>,
    pub hazards: Vec<String>,
    /// Where the server stands in replication, and the sentence every plan shows for it.
    pub topology: crate::server::topology::Topology,
    pub topology_line: String,
}

/// Hazards visible in one snapshot (plus the measured redo rate). Pure.
pub fn hazards(f: &ServerFacts, redo_rate: Option<f64>, myisam: usize) -> Vec<String> {
    let mut h = Vec::new();
    if let Some(n) = f.var_u64("innodb_force_recovery").filter(|n| *n > 0) {
        h.push(format!("innodb_force_recovery={n} is set: the server runs in forced recovery; remove it from the config and restart once the data is safe"));
    }
    if f.var_on("innodb_read_only") {
        h.push("innodb_read_only is ON: every InnoDB write is refused".into());
    }
    if let (Some(rate), Some(size)) = (redo_rate, f.redo_size_bytes()) {
        if let Some(min) = redo::minutes_held(size, rate).filter(|m| *m < 15.0) {
            h.push(format!(
                "the redo log ({}) holds only {min:.1} minutes of the measured writes ({}/s): `innops redo --advise` recommends a size",
                format_size(size),
                format_size(rate as u64)
            ));
        }
    }
    if let (Some(age), Some(max)) = (
        f.status_u64("Innodb_checkpoint_age"),
        f.status_u64("Innodb_checkpoint_max_age"),
    ) {
        if max > 0 && age * 4 > max * 3 {
            h.push(format!("checkpoint age {} is over 75% of its maximum {}: the redo log is too small for the write load", format_size(age), format_size(max)));
        }
    }
    if myisam > 0 {
        h.push(format!(
            "{myisam} MyISAM table(s) outside the system schemas: they are not crash-safe"
        ));
    }
    if f.var("innodb_fast_shutdown") == Some("2") {
        h.push(
            "innodb_fast_shutdown=2: the next shutdown is a crash as far as InnoDB is concerned"
                .into(),
        );
    }
    h
}

pub fn inspect(target: &Target, sample: Duration) -> anyhow::Result<Inspection> {
    let mut conn = target.connect()?;
    let f0 = ServerFacts::collect(&mut conn)?;
    let mut facts = f0.clone();
    let mut rate = None;
    if !sample.is_zero() {
        std::thread::sleep(sample);
        facts = ServerFacts::collect(&mut conn)?;
        if let (Some((name, a)), Some(b)) = (
            redo::redo_counter(&f0),
            redo::redo_counter(&facts).map(|c| c.1),
        ) {
            let _ = name;
            rate = Some(b.saturating_sub(a) as f64 / sample.as_secs_f64());
        }
    }
    type Row = (String, String, Option<u64>, Option<u64>, Option<u64>);
    let rows: Vec<Row> = conn.query(
        "SELECT /* innops:inspect:myisam */ TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS, DATA_LENGTH, INDEX_LENGTH \
         FROM information_schema.TABLES WHERE ENGINE = 'MyISAM' AND TABLE_TYPE = 'BASE TABLE' \
         AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys') \
         ORDER BY DATA_LENGTH + INDEX_LENGTH DESC, TABLE_SCHEMA, TABLE_NAME",
    )?;
    let kept: Vec<(String, String)> = crate::procedures::convert::own::all(
        &mut conn,
        "/* innops:inspect:own */",
        crate::procedures::convert::own::KEPT,
    )?
    .into_iter()
    .map(|r| (r.schema, r.name))
    .collect();
    let (kept_by_innops, myisam): (Vec<MyIsamTable>, Vec<MyIsamTable>) = rows
        .into_iter()
        .map(|(schema, table, r, d, i)| MyIsamTable {
            schema,
            table,
            rows: r.unwrap_or(0),
            data_bytes: d.unwrap_or(0),
            index_bytes: i.unwrap_or(0),
        })
        .partition(|t| kept.contains(&(t.schema.clone(), t.table.clone())));
    let matrix = serde_json::json!({
        "online_redo_resize": facts.redo_resize(),
        "redo_size_variable": facts.redo_size_variable(),
        "redo_size_bytes": facts.redo_size_bytes(),
        "change_buffering": facts.change_buffering(),
        "shared_lock_clause": facts.shared_lock_clause(),
        "lock_waits_view": facts.lock_waits_view(),
        "deadlock_holder_heading": facts.deadlock_holder_heading(),
        "shutdown_statement": facts.has_shutdown_statement(),
    });
    Ok(Inspection {
        target: target.label.clone(),
        flavor: facts.flavor,
        version: facts.version.to_string(),
        version_string: facts.version_string.clone(),
        settings: SETTINGS
            .iter()
            .map(|s| (s.to_string(), facts.var(s).map(str::to_string)))
            .collect(),
        matrix,
        hazards: hazards(&facts, rate, myisam.len()),
        myisam_tables: myisam,
        kept_by_innops,
        redo_bytes_per_sec: rate,
        topology_line: facts.topology.describe(),
        topology: facts.topology,
    })
}

fn list_tables(s: &mut String, tables: &[MyIsamTable]) {
    for t in tables {
        s.push_str(&format!(
            "  {}.{}  rows≈{}  data {}  index {}\n",
            t.schema,
            t.table,
            t.rows,
            format_size(t.data_bytes),
            format_size(t.index_bytes)
        ));
    }
}

pub fn render(i: &Inspection) -> String {
    let mut s = format!(
        "{} — {} ({})\n\nsettings:\n",
        i.target, i.version_string, i.version
    );
    for (k, v) in &i.settings {
        if let Some(v) = v {
            s.push_str(&format!("  {k:<32} {v}\n"));
        }
    }
    s.push_str(&format!("\ntopology: {}\n", i.topology_line));
    s.push_str("\ncapabilities:\n");
    if let Some(m) = i.matrix.as_object() {
        for (k, v) in m {
            s.push_str(&format!(
                "  {k:<32} {}\n",
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            ));
        }
    }
    if let Some(r) = i.redo_bytes_per_sec {
        s.push_str(&format!(
            "  {:<32} {}/s\n",
            "redo write rate (sampled)",
            format_size(r as u64)
        ));
    }
    s.push_str(&format!("\nMyISAM tables: {}\n", i.myisam_tables.len()));
    list_tables(&mut s, &i.myisam_tables);
    if !i.kept_by_innops.is_empty() {
        s.push_str(&format!(
            "\nkept by innops after a conversion: {} (innops convert --drop-kept DB.TABLE drops one once verified unchanged)\n",
            i.kept_by_innops.len()
        ));
        list_tables(&mut s, &i.kept_by_innops);
    }
    s.push_str(&format!(
        "\nhazards: {}\n",
        if i.hazards.is_empty() { "none" } else { "" }
    ));
    for h in &i.hazards {
        s.push_str(&format!("  ! {h}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::facts::{Flavor, Version};

    #[test]
    fn hazards_name_forced_recovery_read_only_and_a_small_redo_log() {
        let mut f = ServerFacts::synthetic(Flavor::MariaDB, Version::new(10, 11, 19));
        assert!(hazards(&f, None, 0).is_empty());
        f.variables
            .insert("innodb_force_recovery".into(), "3".into());
        f.variables.insert("innodb_read_only".into(), "ON".into());
        f.variables
            .insert("innodb_log_file_size".into(), (96u64 << 20).to_string());
        // 1 MiB/s fills 96M in 1.6 minutes.
        let h = hazards(&f, Some((1u64 << 20) as f64), 2);
        assert_eq!(h.len(), 4, "{h:?}");
        assert!(h[0].contains("innodb_force_recovery=3"));
        assert!(h[2].contains("1.6 minutes"));
        assert!(h[3].contains("2 MyISAM"));
    }
}
