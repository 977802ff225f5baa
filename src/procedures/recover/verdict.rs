//! The verdict a script can read (issue 21): whether a dump falls short (exit 4, one sentence naming the
//! tables), and which line of the private server's error log says why no level started.

use std::path::Path;

use crate::dump::{self, Manifest, TableStatus};
use crate::plan::Ctx;

/// The dump step's shortfall: the tables of the manifest that are not complete (exit 4), judged from
/// `manifest.json` as it is on disk when the run ends (a resumed run's too).
pub(super) fn losses(out: &Path) -> impl Fn(&mut Ctx) -> anyhow::Result<Option<String>> + 'static {
    let out = out.to_path_buf();
    move |_| Ok(losses_sentence(&Manifest::read(&out)?, &out))
}

/// `recovered with losses or doubts: db.t (2 lost ranges), db.u (recovered with doubts) — see OUT/manifest.json`,
/// or `None` when every table is complete.
pub fn losses_sentence(m: &Manifest, out: &Path) -> Option<String> {
    let ranges = |n: usize| format!("{n} lost range{}", if n == 1 { "" } else { "s" });
    let short: Vec<String> = m
        .tables
        .iter()
        .filter_map(|t| {
            let why = match t.status {
                TableStatus::Complete => return None,
                TableStatus::Partial => ranges(t.lost.len()),
                TableStatus::Doubtful if t.lost.is_empty() => "recovered with doubts".into(),
                TableStatus::Doubtful => {
                    format!("recovered with doubts, {}", ranges(t.lost.len()))
                }
                TableStatus::NoPrimaryKey => "no primary key: read by a plain scan".into(),
                TableStatus::Unrecoverable if m.files_only.is_some() => {
                    "not recoverable from its files".into()
                }
                TableStatus::Unrecoverable => "not recoverable through SQL".into(),
            };
            Some(format!("{}.{} ({why})", t.db, t.table))
        })
        .collect();
    (!short.is_empty()).then(|| {
        format!(
            "recovered with losses or doubts: {} — see {}",
            short.join(", "),
            out.join(dump::manifest::MANIFEST).display()
        )
    })
}

/// What every failed start logs at its end, whatever went wrong: consequences, not the cause.
const CONSEQUENCES: &[&str] = &[
    "Aborting",
    "Unknown/unsupported storage engine",
    "registration as a STORAGE ENGINE failed",
    "Plugin initialization aborted",
];

/// The line of a start's error log that says why it failed: the first `[ERROR]` that is not a consequence
/// ([`CONSEQUENCES`]), without its timestamp; else innops's own note (`innops: the data dictionary does not
/// list …`); else the first `[ERROR]` at all.
pub fn log_cause(lines: &[String]) -> Option<String> {
    let errors: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.split_once("[ERROR] ").map(|(_, text)| text.trim()))
        .collect();
    errors
        .iter()
        .find(|e| !CONSEQUENCES.iter().any(|c| e.contains(c)))
        .map(|e| e.to_string())
        .or_else(|| lines.iter().find(|l| l.starts_with("innops: ")).cloned())
        .or_else(|| errors.first().map(|e| e.to_string()))
}

/// The refusal's cause when no level started: the highest level's error log that names one.
pub fn attempts_cause(attempts: &[super::private::Attempt]) -> String {
    attempts
        .iter()
        .rev()
        .find_map(|a| {
            log_cause(&a.error_log).map(|c| format!("its error log at level {}: {c}", a.level))
        })
        .unwrap_or_else(|| "its error log names no error".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dump::manifest::LostRange;

    fn entry(table: &str, status: TableStatus, lost: usize) -> dump::TableEntry {
        dump::TableEntry {
            db: "db".into(),
            table: table.into(),
            status,
            file: None,
            sha256: None,
            rows: 10,
            content_hash: None,
            columns: vec!["id".into()],
            primary_key: vec!["id".into()],
            key_index: None,
            lost: (0..lost)
                .map(|i| LostRange {
                    after: Some(vec![serde_json::json!(i)]),
                    from: None,
                    before: None,
                    ..Default::default()
                })
                .collect(),
            doubts: Vec::new(),
            unchecked: Vec::new(),
            reconnects: 0,
            note: None,
            pages: None,
            page_pass: None,
            indexes: Vec::new(),
        }
    }

    #[test]
    fn the_dump_steps_summary_counts_the_tables_not_complete() {
        let m = Manifest {
            format: 1,
            level: 1,
            files_only: None,
            created: String::new(),
            tables: vec![
                entry("a", TableStatus::Complete, 0),
                entry("b", TableStatus::Complete, 0),
                entry("c", TableStatus::Complete, 0),
                entry("t", TableStatus::Partial, 2),
                entry("u", TableStatus::Doubtful, 0),
            ],
            files: Default::default(),
        };
        let s = super::super::describe::summary(&m);
        assert_eq!(s["not_complete"], 2, "{s}");
        assert_eq!(s["tables"].as_array().unwrap().len(), 5);
        assert_eq!(s["tables"][3]["status"], "partial", "{s}");
    }

    #[test]
    fn only_a_dump_with_every_table_complete_is_not_a_shortfall() {
        let m = |tables| Manifest {
            format: 1,
            level: 1,
            files_only: None,
            created: String::new(),
            tables,
            files: Default::default(),
        };
        let out = Path::new("/srv/out");
        assert_eq!(
            losses_sentence(&m(vec![entry("a", TableStatus::Complete, 0)]), out),
            None
        );
        assert_eq!(losses_sentence(&m(vec![]), out), None);
        let all = m(vec![
            entry("a", TableStatus::Complete, 0),
            entry("t", TableStatus::Partial, 2),
            entry("u", TableStatus::Doubtful, 0),
            entry("v", TableStatus::Doubtful, 1),
            entry("w", TableStatus::NoPrimaryKey, 0),
            entry("x", TableStatus::Unrecoverable, 0),
        ]);
        assert_eq!(
            losses_sentence(&all, out).unwrap(),
            "recovered with losses or doubts: db.t (2 lost ranges), db.u (recovered with doubts), \
             db.v (recovered with doubts, 1 lost range), db.w (no primary key: read by a plain scan), \
             db.x (not recoverable through SQL) — see /srv/out/manifest.json"
        );
    }

    fn log(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn the_cause_of_a_failed_start_is_the_first_error_that_is_not_a_consequence() {
        // MariaDB 10.11 on a copy whose redo log is damaged (measured).
        let redo = log(
            "2026-12-02  4:05:22 0 [Note] InnoDB: !!! innodb_force_recovery is set to 1 !!!
2026-12-02  4:05:22 0 [Note] InnoDB: File system buffers for log disabled (block size=4096 bytes)
2026-12-02  4:05:22 0 [ERROR] InnoDB: Missing FILE_CHECKPOINT(44878) at 44878
2026-12-02  4:05:22 0 [ERROR] InnoDB: Log scan aborted at LSN 44878
2026-12-02  4:05:22 0 [ERROR] InnoDB: Plugin initialization aborted with error Generic error
2026-12-02  4:05:22 0 [Note] InnoDB: Starting shutdown...
2026-12-02  4:05:22 0 [ERROR] Plugin 'InnoDB' registration as a STORAGE ENGINE failed.
2026-12-02  4:05:22 0 [Note] Plugin 'FEEDBACK' is disabled.
2026-12-02  4:05:22 0 [ERROR] Unknown/unsupported storage engine: InnoDB
2026-12-02  4:05:22 0 [ERROR] Aborting",
        );
        assert_eq!(
            log_cause(&redo).as_deref(),
            Some("InnoDB: Missing FILE_CHECKPOINT(44878) at 44878")
        );
        // The lines shared/FACTS.md §3 quotes for a read-only start after an unclean stop.
        let read_only = log(
            "2026-12-02  4:00:00 0 [ERROR] InnoDB: innodb_read_only prevents crash recovery
2026-12-02  4:00:00 0 [ERROR] Plugin 'InnoDB' init function returned error.
2026-12-02  4:00:00 0 [ERROR] Plugin 'InnoDB' registration as a STORAGE ENGINE failed.
2026-12-02  4:00:00 0 [ERROR] Unknown/unsupported storage engine: InnoDB
2026-12-02  4:00:00 0 [ERROR] Aborting",
        );
        assert_eq!(
            log_cause(&read_only).as_deref(),
            Some("InnoDB: innodb_read_only prevents crash recovery")
        );
        let init = log("x 0 [ERROR] Plugin 'InnoDB' init function returned error.
x 0 [ERROR] Unknown/unsupported storage engine: InnoDB
x 0 [ERROR] Aborting");
        assert_eq!(
            log_cause(&init).as_deref(),
            Some("Plugin 'InnoDB' init function returned error.")
        );
        // Started, but the tables were not listed: innops's own note.
        let mut listed = log("x 0 [Note] mariadbd: ready for connections.");
        listed.push("innops: the data dictionary does not list `db`.`t`".into());
        assert_eq!(
            log_cause(&listed).as_deref(),
            Some("innops: the data dictionary does not list `db`.`t`")
        );
        // Only consequences: the first of them, rather than nothing.
        assert_eq!(
            log_cause(&log(
                "x [ERROR] Unknown/unsupported storage engine: InnoDB\nx [ERROR] Aborting"
            ))
            .as_deref(),
            Some("Unknown/unsupported storage engine: InnoDB")
        );
        assert_eq!(log_cause(&log("x [Note] nothing wrong")), None);
        let attempt = |level, error_log| super::super::private::Attempt {
            level,
            started: false,
            error_log,
        };
        assert_eq!(
            attempts_cause(&[
                attempt(1, redo.clone()),
                attempt(2, redo),
                attempt(3, vec![])
            ]),
            "its error log at level 2: InnoDB: Missing FILE_CHECKPOINT(44878) at 44878"
        );
        assert_eq!(attempts_cause(&[]), "its error log names no error");
    }
}
