//! Study files for `innops experiment STUDY.toml`: the experiment's flags under their own names (as a playbook's
//! `[[step]]` spells a procedure's flags), plus a title and a description. This module reads a file and checks
//! every field at its own line, so an error names the file, line, column and field
//! (`study.toml:4:9: field `threads`: …; fix the study and run it again`); [`super::experiment`] lays the
//! command line's flags over the file's fields (a flag given wins) and builds the plan from the result.
//!
//! A variable's values are written as the flag writes them (`set = ["innodb_flush_log_at_trx_commit=1,2,0"]`):
//! one syntax for both, checked by the same parser, and the crossing order is the file's order.

use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::plan::guard::Threshold;
use crate::playbook::error_in;
use crate::procedures::experiment::{parse_set, table_opts, VarValues};

/// A study file as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Study {
    /// One line: what the study reproduces (shown in the plan's notes and kept in plan.json).
    pub title: Option<String>,
    /// What the study asks, what to expect, how long it runs.
    pub description: Option<String>,
    /// As `--set`, one variable and its values per string; several cross.
    #[serde(default)]
    pub set: Vec<Spanned<String>>,
    /// As `--zip`: the `set` lists pair by position instead of crossing.
    pub zip: Option<Spanned<bool>>,
    /// As `--table-option`, one table variant per string.
    #[serde(default)]
    pub table_option: Vec<Spanned<String>>,
    /// As `--column-variant`, one generated column per string.
    #[serde(default)]
    pub column_variant: Vec<Spanned<String>>,
    pub workload: Option<Spanned<String>>,
    /// As `--workload-sql`: a file of SQL statements, relative to the study's directory.
    pub workload_sql: Option<Spanned<String>>,
    /// One client-thread count, or several (`[4, 16, 64]`): one group of arms per count.
    pub threads: Option<Spanned<Threads>>,
    pub time: Option<Spanned<u64>>,
    pub rounds: Option<Spanned<u32>>,
    pub warmup: Option<Spanned<u64>>,
    pub rate: Option<Spanned<u32>>,
    /// As `--keep`: "best".
    pub keep: Option<Spanned<String>>,
    /// As `--max-load` and `--critical-load`: `VAR=N`.
    pub max_load: Option<Spanned<String>>,
    pub critical_load: Option<Spanned<String>>,
}

/// `threads = 16` or `threads = [4, 16, 64]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Threads {
    One(u32),
    Many(Vec<u32>),
}

impl Threads {
    fn counts(&self) -> Vec<u32> {
        match self {
            Threads::One(n) => vec![*n],
            Threads::Many(v) => v.clone(),
        }
    }
}

/// A study file read and checked: every value parsed as its flag's would be.
#[derive(Debug, Default)]
pub struct Checked {
    pub title: Option<String>,
    pub description: Option<String>,
    pub sets: Vec<VarValues>,
    pub zip: bool,
    /// The table variants in their canonical text.
    pub tables: Vec<String>,
    pub workload: Option<String>,
    pub sql: Option<crate::procedures::experiment::workload_sql::SqlWorkload>,
    /// The client-thread counts (empty: the flag's default).
    pub threads: Vec<u32>,
    pub time: Option<u64>,
    pub rounds: Option<u32>,
    pub warmup: Option<u64>,
    pub rate: Option<u32>,
    pub keep_best: bool,
    pub max_load: Option<Threshold>,
    pub critical_load: Option<Threshold>,
}

/// Read `file` and check it; a file that cannot be read is refused naming it.
pub fn read(file: &Path) -> anyhow::Result<Checked> {
    let text = std::fs::read_to_string(file).map_err(|e| {
        crate::error::bad_input(format!(
            "cannot read the study {}: {e}: give the path of a study file, such as playbooks/experiments/acid.toml",
            file.display()
        ))
    })?;
    parse(file, &text)
}

/// Check a study's text: unknown fields, wrong types and values the flag would refuse are errors naming the
/// file, line, column and field.
pub fn parse(file: &Path, text: &str) -> anyhow::Result<Checked> {
    let at = |span: Range<usize>, field: Option<&str>, e: &dyn std::fmt::Display| {
        error_in(file, text, span, field, &e.to_string(), "the study")
    };
    let study: Study = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        at(span, None, &e.message())
    })?;
    let flag_err = |e: anyhow::Error| crate::error::display_of(&e);
    let mut sets: Vec<VarValues> = Vec::new();
    for s in &study.set {
        let v = parse_set(s.get_ref()).map_err(|e| at(s.span(), Some("set"), &flag_err(e)))?;
        if sets.iter().any(|o| o.name == v.name) {
            let msg = format!(
                "{} is named twice: give all its values in one string \"{}=v1,v2\"",
                v.name, v.name
            );
            return Err(at(s.span(), Some("set"), &msg));
        }
        sets.push(v);
    }
    let zip = study.zip.as_ref().is_some_and(|z| *z.get_ref());
    if let Some(z) = study.zip.as_ref().filter(|z| *z.get_ref()) {
        crate::procedures::experiment::check_zip(&sets)
            .map_err(|e| at(z.span(), Some("zip"), &flag_err(e)))?;
    }
    let tables = tables_of(&study, &at)?;
    if let (Some(_), Some(w)) = (&study.workload, &study.workload_sql) {
        let msg = "a study gives workload or workload-sql, not both: keep one";
        return Err(at(w.span(), Some("workload-sql"), &msg));
    }
    let sql = match &study.workload_sql {
        None => None,
        Some(w) => {
            let path = file.parent().unwrap_or(Path::new(".")).join(w.get_ref());
            Some(
                super::experiment::read_sql(&path)
                    .map_err(|e| at(w.span(), Some("workload-sql"), &flag_err(e)))?,
            )
        }
    };
    if let Some(w) = &study.workload {
        crate::bench::Workload::parse(w.get_ref())
            .map_err(|e| at(w.span(), Some("workload"), &flag_err(e)))?;
    }
    for (field, v) in [
        (
            "threads",
            study.threads.as_ref().and_then(|t| {
                let min = t.get_ref().counts().into_iter().min()?;
                Some((t.span(), u64::from(min)))
            }),
        ),
        (
            "time",
            study.time.as_ref().map(|t| (t.span(), *t.get_ref())),
        ),
        (
            "rounds",
            study
                .rounds
                .as_ref()
                .map(|t| (t.span(), u64::from(*t.get_ref()))),
        ),
    ] {
        if let Some((span, 0)) = v {
            return Err(at(
                span,
                Some(field),
                &"must be at least 1: give a positive number",
            ));
        }
    }
    let keep_best = match &study.keep {
        None => false,
        Some(k) if k.get_ref() == "best" => true,
        Some(k) => {
            let msg = format!(
                "\"{}\" is not a choice: keep = \"best\" keeps a winner beyond the noise; leave it out to set everything back",
                k.get_ref()
            );
            return Err(at(k.span(), Some("keep"), &msg));
        }
    };
    let threshold = |field: &str,
                     v: &Option<Spanned<String>>|
     -> anyhow::Result<Option<Threshold>> {
        v.as_ref()
            .map(|t| {
                Threshold::parse(t.get_ref()).map_err(|e| at(t.span(), Some(field), &flag_err(e)))
            })
            .transpose()
    };
    let max_load = threshold("max-load", &study.max_load)?;
    let critical_load = threshold("critical-load", &study.critical_load)?;
    Ok(Checked {
        max_load,
        critical_load,
        title: study.title,
        description: study.description,
        sets,
        zip,
        tables,
        workload: study.workload.map(Spanned::into_inner),
        sql,
        threads: threads_of(&study.threads, &at)?,
        time: study.time.map(Spanned::into_inner),
        rounds: study.rounds.map(Spanned::into_inner),
        warmup: study.warmup.map(Spanned::into_inner),
        rate: study.rate.map(Spanned::into_inner),
        keep_best,
    })
}

/// The study's table and column variants, each checked and given once, in their canonical text.
fn tables_of(study: &Study, at: &ErrorAt) -> anyhow::Result<Vec<String>> {
    let flag_err = |e: anyhow::Error| crate::error::display_of(&e);
    let mut tables: Vec<String> = Vec::new();
    for t in &study.table_option {
        let v = table_opts::TableVariant::parse(t.get_ref())
            .map_err(|e| at(t.span(), Some("table-option"), &flag_err(e)))?
            .canonical();
        if tables.contains(&v) {
            let msg = format!("{v} is given twice: give each table variant once");
            return Err(at(t.span(), Some("table-option"), &msg));
        }
        tables.push(v);
    }
    for c in &study.column_variant {
        let v = table_opts::TableVariant::parse(&column_text(c.get_ref()))
            .map_err(|e| at(c.span(), Some("column-variant"), &flag_err(e)))?
            .canonical();
        if tables.contains(&v) {
            let msg = format!("{v} is given twice: give each column variant once");
            return Err(at(c.span(), Some("column-variant"), &msg));
        }
        tables.push(v);
    }
    Ok(tables)
}

/// How [`parse`] makes an error at a span of the file, naming a field.
type ErrorAt<'a> = dyn Fn(Range<usize>, Option<&str>, &dyn std::fmt::Display) -> anyhow::Error + 'a;

/// The thread counts of `threads`, each once (a list of none is refused).
fn threads_of(t: &Option<Spanned<Threads>>, at: &ErrorAt<'_>) -> anyhow::Result<Vec<u32>> {
    let Some(t) = t else { return Ok(Vec::new()) };
    let counts = t.get_ref().counts();
    if counts.is_empty() {
        return Err(at(
            t.span(),
            Some("threads"),
            &"is an empty list: give one count (16) or several ([4, 16, 64])",
        ));
    }
    if let Some(n) = counts
        .iter()
        .enumerate()
        .find_map(|(i, n)| counts[..i].contains(n).then_some(n))
    {
        let msg = format!("gives {n} twice: give each client-thread count once");
        return Err(at(t.span(), Some("threads"), &msg));
    }
    Ok(counts)
}

/// A column variant's text as a table variant: `COLUMN` before it unless it has it.
pub fn column_text(text: &str) -> String {
    if text
        .trim_start()
        .get(..7)
        .is_some_and(|w| w.eq_ignore_ascii_case("COLUMN "))
    {
        text.to_string()
    } else {
        format!("COLUMN {text}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> String {
        crate::error::display_of(&parse(Path::new("s.toml"), text).expect_err("must be refused"))
    }

    #[test]
    fn an_unknown_field_names_the_file_line_and_field() {
        let m = message("title = \"t\"\nthreds = 4\n");
        assert!(m.starts_with("s.toml:2:1:"), "{m}");
        assert!(m.contains("threds") && m.contains("fix the study"), "{m}");
    }

    #[test]
    fn a_wrong_type_names_its_field() {
        let m = message("set = [\"innodb_io_capacity=200\"]\nthreads = \"many\"\n");
        assert!(m.starts_with("s.toml:2:"), "{m}");
        assert!(m.contains("field `threads`"), "{m}");
    }

    #[test]
    fn a_bad_value_is_refused_at_its_line_as_the_flag_would_be() {
        let m = message(
            "set = [\n  \"innodb_io_capacity=200\",\n  \"innodb_io_capacity=1;DROP\",\n]\n",
        );
        assert!(m.starts_with("s.toml:3:3: field `set`:"), "{m}");
        assert!(m.contains("is not a number, a size"), "{m}");
        let m = message("table-option = [\"ENGINE=Memory\"]\n");
        assert!(m.starts_with("s.toml:1:17: field `table-option`:"), "{m}");
        let m = message("set = [\"a=1\"]\nworkload = \"oltp_nonsense\"\n");
        assert!(m.starts_with("s.toml:2:12: field `workload`:"), "{m}");
        let m = message("set = [\"a=1\"]\n\nrounds = 0\n");
        assert!(
            m.starts_with("s.toml:3:10: field `rounds`: must be at least 1"),
            "{m}"
        );
        let m = message("set = [\"a=1\"]\nkeep = \"all\"\n");
        assert!(m.starts_with("s.toml:2:8: field `keep`:"), "{m}");
        let m = message("set = [\"a=1\"]\nmax-load = \"Threads_running\"\n");
        assert!(
            m.starts_with("s.toml:2:12: field `max-load`: load threshold"),
            "{m}"
        );
        let m = message("set = [\"a=1,2,3\", \"b=x,y\"]\nzip = true\n");
        assert!(
            m.starts_with("s.toml:2:7: field `zip`: --zip pairs the values"),
            "{m}"
        );
        let m = message("column-variant = [\"c2 INT AS (SLEEP(1)) VIRTUAL\"]\n");
        assert!(
            m.starts_with("s.toml:1:19: field `column-variant`:") && m.contains("SLEEP()"),
            "{m}"
        );
        let m = message("set = [\"a=1\"]\nworkload-sql = \"no-such-file.sql\"\n");
        assert!(
            m.starts_with("s.toml:2:16: field `workload-sql`: cannot read the SQL workload"),
            "{m}"
        );
        let m =
            message("set = [\"a=1\"]\nworkload = \"oltp_read_only\"\nworkload-sql = \"x.sql\"\n");
        assert!(m.contains("workload or workload-sql, not both"), "{m}");
        let m = message("set = [\"a=1\", \"a=2\"]\n");
        assert!(m.contains("field `set`: a is named twice"), "{m}");
    }

    #[test]
    fn a_study_gives_every_flag_s_value() {
        let c = parse(
            Path::new("s.toml"),
            "title = \"ACID\"\nset = [\"innodb_flush_log_at_trx_commit=1,2\", \"sync_binlog=1,0\"]\ntable-option = [\"engine=aria\"]\nworkload = \"oltp_write_only\"\nthreads = 8\ntime = 5\nrounds = 4\nwarmup = 1\nrate = 100\nkeep = \"best\"\nmax-load = \"Threads_running=10\"\ncritical-load = \"Threads_connected=90\"\n",
        )
        .unwrap();
        assert_eq!(c.title.as_deref(), Some("ACID"));
        assert_eq!(c.sets.len(), 2);
        assert_eq!(c.sets[1].name, "sync_binlog");
        assert_eq!(c.tables, vec!["ENGINE=Aria".to_string()]);
        assert_eq!(
            (
                c.threads.clone(),
                c.time,
                c.rounds,
                c.warmup,
                c.rate,
                c.keep_best
            ),
            (vec![8], Some(5), Some(4), Some(1), Some(100), true)
        );
        assert_eq!(c.max_load.unwrap().value, 10);
        assert_eq!(c.critical_load.unwrap().variable, "Threads_connected");
    }

    #[test]
    fn threads_is_one_count_or_a_list_of_counts() {
        let c = parse(
            Path::new("s.toml"),
            "set = [\"a=1\"]\nthreads = [4, 16, 64]\n",
        )
        .unwrap();
        assert_eq!(c.threads, [4, 16, 64]);
        let m = message("set = [\"a=1\"]\nthreads = [4, 4]\n");
        assert!(
            m.starts_with("s.toml:2:11: field `threads`: gives 4 twice"),
            "{m}"
        );
        let m = message("set = [\"a=1\"]\nthreads = [4, 0]\n");
        assert!(m.contains("field `threads`: must be at least 1"), "{m}");
        let m = message("set = [\"a=1\"]\nthreads = []\n");
        assert!(m.contains("field `threads`: is an empty list"), "{m}");
        let m = message("set = [\"a=1\"]\nthreads = \"many\"\n");
        assert!(m.starts_with("s.toml:2:") && m.contains("threads"), "{m}");
    }

    /// Every ready study in playbooks/experiments/ parses.
    #[test]
    fn every_ready_study_parses() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("playbooks/experiments");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "toml") {
                let c = read(&path).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
                assert!(c.title.is_some(), "{}: no title", path.display());
                assert!(
                    !c.sets.is_empty() || !c.tables.is_empty(),
                    "{}",
                    path.display()
                );
                n += 1;
            }
        }
        assert!(n >= 4, "{n} studies");
    }
}
