//! The verdict table as rows and as the text summary.

use super::{label_of, Experiment, TableSize};

/// `data+index / allocated` in KB, the allocated size only where it was measured.
fn size_cell(t: &TableSize) -> String {
    let kb = |b: u64| format!("{:.0}", b as f64 / 1024.0);
    format!(
        "{} / {}",
        kb(t.data_length + t.index_length),
        t.allocated_bytes.map_or("-".into(), kb)
    )
}

fn opt(x: Option<f64>, prec: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.prec$}"))
}

impl Experiment {
    /// The verdict table's rows, with its header first: arm, settings, tps, p95, p99, change (CI), verdict, bytes
    /// and CPU per transaction.
    pub fn table(&self) -> Vec<Vec<String>> {
        let mut rows = vec![[
            "arm",
            "settings",
            "tps",
            "p95 ms",
            "p99 ms",
            "tps change (95% CI)",
            "verdict",
            "data B/trx",
            "redo B/trx",
            "disk B/trx",
            "CPU ms/trx",
        ]
        .map(String::from)
        .to_vec()];
        let sizes = self.arms.iter().any(|f| f.table_size.is_some());
        if sizes {
            rows[0].push("table KB (data+index / allocated)".into());
        }
        for f in &self.arms {
            let change = match (f.tps_change_pct, &f.tps_noise) {
                (Some(c), Some(r)) => {
                    format!("{c:+.1}% ({:+.1}…{:+.1})", r.ci_low_pct, r.ci_high_pct)
                }
                (Some(c), None) => format!("{c:+.1}%"),
                (None, _) => "-".into(),
            };
            let settings = f
                .settings
                .iter()
                .map(|s| format!("{}={}", s.name, s.value))
                .collect::<Vec<_>>()
                .join(", ");
            let measured = f.seconds > 0;
            rows.push(vec![
                f.label.clone(),
                settings,
                if measured {
                    format!("{:.1}", f.tps)
                } else {
                    "-".into()
                },
                if measured {
                    format!("{:.2}", f.p95_ms)
                } else {
                    "-".into()
                },
                if measured && f.p99_ms > 0.0 {
                    format!("{:.2}", f.p99_ms)
                } else {
                    "-".into()
                },
                change,
                f.verdict.clone(),
                opt(f.data_bytes_per_trx, 0),
                opt(f.log_bytes_per_trx, 0),
                opt(f.disk_bytes_per_trx, 0),
                opt(f.cpu_ms_per_trx, 3),
            ]);
            if sizes {
                let row = rows.last_mut().expect("just pushed");
                row.push(f.table_size.as_ref().map_or("-".into(), size_cell));
            }
        }
        rows
    }

    /// The text summary: the verdict table, the A/A line, the CPU note and the winner.
    pub fn render_text(&self) -> String {
        if !self.by_threads.is_empty() {
            let counts: Vec<String> = self
                .by_threads
                .iter()
                .map(|g| g.shape.threads.to_string())
                .collect();
            let mut out = format!(
                "experiment by client threads ({}): each count has its own A, A′ and verdicts; a variant is compared only with A at the same count\n",
                counts.join(", ")
            );
            for g in &self.by_threads {
                out.push_str(&g.render_text());
            }
            return out;
        }
        let s = &self.shape;
        let mut out = format!(
            "experiment: {} with {} thread(s){}, {} of {} round(s) of {} s per arm (after {} s of warm-up), arms interleaved in an order rotated each round\n",
            s.workload,
            s.threads,
            if s.rate > 0 { format!(" at {} transactions a second", s.rate) } else { String::new() },
            self.rounds_measured,
            s.rounds,
            s.time_s,
            s.warmup_s
        );
        let rows = self.table();
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        for r in &rows {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c}{}", " ".repeat(w - c.chars().count())))
                .collect();
            out.push_str(&format!("  {}\n", cells.join("  ").trim_end()));
        }
        out.push_str(&format!("  {}\n", self.aa_line));
        if let Some(line) = &self.cores {
            out.push_str(&format!("  {line}\n"));
        }
        if let Some(note) = self.arms.iter().find_map(|f| f.cpu_note.as_ref()) {
            out.push_str(&format!("  CPU and disk bytes per transaction: {note}\n"));
        }
        let mut from: Vec<&str> = Vec::new();
        for f in self.arms.iter().filter_map(|f| f.table_size.as_ref()) {
            if !from.contains(&f.files_from.as_str()) {
                from.push(&f.files_from);
            }
        }
        if !from.is_empty() {
            out.push_str(&format!(
                "  table size: each arm's copy once built (the same rows), data+index from information_schema.TABLES after ANALYZE TABLE; allocated {}\n",
                from.join("; ")
            ));
        }
        for line in &self.load_pauses {
            out.push_str(&format!("  load guard: {line}\n"));
        }
        match &self.winner {
            Some(w) => {
                let f = self.arms.iter().find(|f| &f.key == w);
                out.push_str(&format!(
                    "  best beyond noise: {} ({})\n",
                    label_of(w),
                    f.map(|f| f
                        .settings
                        .iter()
                        .map(|s| format!("{}={}", s.name, s.value))
                        .collect::<Vec<_>>()
                        .join(", "))
                        .unwrap_or_default()
                ));
            }
            None => out.push_str(
                "  best beyond noise: none (no variant is faster than A beyond the noise)\n",
            ),
        }
        out
    }
}
