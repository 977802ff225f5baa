//! `innops bench TEST help`, in the form of `sysbench TEST help`: the test's own options, one a line, sorted,
//! each with its value form, what it does and its default in brackets, aligned as sysbench aligns them. The
//! flags every test shares are `innops bench --help`'s (sysbench's `--help`).

use crate::bench::workloads::{OltpOptions, Workload};

/// The option lines of oltp_common.lua's options as innops takes them (sysbench 1.0.20's, and 1.1's
/// `--create_table_options` and `--reconnect`): (name with its value form, what it does, default).
fn oltp_lines() -> Vec<(&'static str, &'static str, String)> {
    let d = OltpOptions::default();
    let on = |b: bool| if b { "on" } else { "off" }.to_string();
    vec![
        ("--auto_inc[=on|off]", "prepare: id is AUTO_INCREMENT; off loads ids 1..N itself and oltp_insert sends unique ids", on(d.auto_inc)),
        ("--create_secondary[=on|off]", "prepare: add the index k_N on k", on(d.create_secondary)),
        ("--create_table_options=STRING", "prepare: text added at the end of CREATE TABLE (sysbench 1.1)", d.create_table_options.clone()),
        ("--delete_inserts=N", "DELETE + INSERT pairs per transaction", d.delete_inserts.to_string()),
        ("--distinct_ranges=N", "SELECT DISTINCT ranges per transaction", d.distinct_ranges.to_string()),
        ("--index_updates=N", "UPDATEs of the indexed column k per transaction", d.index_updates.to_string()),
        ("--mysql_storage_engine=STRING", "prepare: the tables' storage engine", d.storage_engine.clone()),
        ("--non_index_updates=N", "UPDATEs of c per transaction", d.non_index_updates.to_string()),
        ("--order_ranges=N", "SELECT ... ORDER BY ranges per transaction", d.order_ranges.to_string()),
        ("--point_selects=N", "point SELECTs per transaction", d.point_selects.to_string()),
        ("--range_selects[=on|off]", "all four range SELECT groups on or off", on(d.range_selects)),
        ("--range_size=N", "ids in each range SELECT", d.range_size.to_string()),
        ("--reconnect=N", "a new connection after every N transactions of a thread, 0 never (sysbench 1.1)", d.reconnect.to_string()),
        ("--secondary[=on|off]", "prepare: a plain KEY xid (id) in place of the PRIMARY KEY", on(d.secondary)),
        ("--simple_ranges=N", "simple range SELECTs per transaction", d.simple_ranges.to_string()),
        ("--skip_trx[=on|off]", "no BEGIN/COMMIT: every statement in autocommit", on(d.skip_trx)),
        ("--sum_ranges=N", "SELECT SUM() ranges per transaction", d.sum_ranges.to_string()),
        ("--table_size=N", "rows per table", "10000".into()),
        ("--tables=N", "number of tables", "1".into()),
    ]
}

/// The text `innops bench TEST help` prints for `w`.
pub(super) fn text(w: &Workload) -> String {
    let d = OltpOptions::default();
    let lines = match w {
        Workload::BulkInsert => {
            return "bulk_insert has no options of its own (sysbench's bulk_insert has no help either): --threads sets its tables, one per thread, and `innops bench --help` lists the flags every test takes\n".into();
        }
        Workload::Table { db, table } => {
            return format!("{w} has no options of its own: it reads {db}.{table} by key, by key range and through each secondary index; `innops bench --help` lists the flags every test takes\n");
        }
        Workload::SelectRandomPoints => {
            let mut v = oltp_lines();
            v.push((
                "--random_points=N",
                "values in the k IN (...) list",
                d.random_points.to_string(),
            ));
            v
        }
        Workload::SelectRandomRanges => {
            let mut v = oltp_lines();
            v.push((
                "--delta=N",
                "each range is k BETWEEN v AND v + N",
                d.delta.to_string(),
            ));
            v.push((
                "--number_of_ranges=N",
                "BETWEEN ranges OR-ed in the SELECT",
                d.number_of_ranges.to_string(),
            ));
            v
        }
        _ => oltp_lines(),
    };
    let mut lines = lines;
    lines.sort_by_key(|(name, _, _)| name.trim_start_matches('-'));
    let width = lines.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
    let mut out = format!("{w} options:\n");
    for (name, what, default) in lines {
        out.push_str(&format!("  {name:<width$} {what} [{default}]\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_s_help_lists_its_options_sorted_and_aligned_as_sysbench_does() {
        let t = text(&Workload::ReadWrite);
        let mut lines = t.lines();
        assert_eq!(lines.next(), Some("oltp_read_write options:"));
        let opts: Vec<&str> = lines.collect();
        assert_eq!(opts.len(), 19);
        assert!(
            opts.contains(&"  --point_selects=N             point SELECTs per transaction [10]")
        );
        assert!(opts.contains(&"  --create_table_options=STRING prepare: text added at the end of CREATE TABLE (sysbench 1.1) []"));
        // Sorted by name, and every description starts in the same column.
        let names: Vec<&str> = opts
            .iter()
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        let col = |l: &str| {
            let rest = &l[2..];
            let gap = &rest[rest.find(' ').unwrap()..];
            l.len() - gap.trim_start().len()
        };
        assert!(opts.iter().all(|l| col(l) == col(opts[0])), "{t}");
        assert!(text(&Workload::SelectRandomRanges).starts_with("select_random_ranges options:\n"));
        assert!(text(&Workload::BulkInsert).contains("no options of its own"));
    }
}
