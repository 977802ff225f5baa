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
            lost: (0..lost)
                .map(|i| LostRange {
                    after: Some(vec![serde_json::json!(i)]),
                    from: None,
                    before: None,
                })
                .collect(),
            doubts: Vec::new(),
            reconnects: 0,
            note: None,
        }
    }

    #[test]
    fn only_a_dump_with_every_table_complete_is_not_a_shortfall() {
        let m = |tables| Manifest {
            format: 1,
            level: 1,
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
}
