//! The `--set VAR=v1,v2` flags, the literals sent for their values, and reading a variable back. A name is
//! `[a-z0-9_]+` and quoted; a value is sent as a validated literal: a number as it is, a size (`128M`) as its
//! bytes, a word of letters, digits and `_` (`ON`, `O_DIRECT`) as a quoted string; anything else is refused. The
//! baseline, the server's own value, is sent as a number when it is one, else as a quoted string.

use serde::{Deserialize, Serialize};

use crate::bench::experiment::Setting;
use crate::error::bad_input;
use crate::plan::{Ctx, Verdict};
use crate::sql::{quote_ident, quote_string, Queryable};

/// One `--set`: a variable and the values its variants take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VarValues {
    pub name: String,
    pub values: Vec<String>,
}

/// Parse one `--set VAR=v1,v2,…`, refusing in one sentence what cannot be sent safely.
pub fn parse_set(arg: &str) -> anyhow::Result<VarValues> {
    let Some((name, values)) = arg.split_once('=') else {
        return Err(bad_input(format!(
            "--set {arg} has no '=': give the variable and its values, as --set innodb_io_capacity=200,2000"
        )));
    };
    let name = name.trim().to_ascii_lowercase();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        return Err(bad_input(format!(
            "--set {arg}: '{name}' is not a variable name (letters, digits and _ only): give a name from SHOW GLOBAL VARIABLES"
        )));
    }
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(bad_input(format!(
            "--set {arg} has an empty value: give one or more values separated by commas, as --set {name}=200,2000"
        )));
    }
    for (i, v) in values.iter().enumerate() {
        super::cores::check_syntax(arg, v)?;
        if literal(v).is_none() {
            return Err(bad_input(format!(
                "--set {arg}: '{v}' is not a number, a size (128M) or a word of letters, digits and _: give one of those"
            )));
        }
        if values[..i].contains(v) {
            return Err(bad_input(format!(
                "--set {arg} gives '{v}' twice: give each value once"
            )));
        }
    }
    Ok(VarValues { name, values })
}

/// `--zip`: the n-th variant takes the n-th value of every variable (the lists as long as each other, which
/// [`check_zip`] proves first).
pub fn zip(sets: &[(String, Vec<String>)]) -> Vec<Vec<Setting>> {
    let n = sets.first().map_or(1, |(_, v)| v.len());
    (0..n)
        .map(|i| {
            sets.iter()
                .filter_map(|(name, values)| {
                    values.get(i).map(|v| Setting {
                        name: name.clone(),
                        value: v.clone(),
                    })
                })
                .collect()
        })
        .collect()
}

/// Each of `variants` once with each value of the pseudo-setting `name` (the table variants cross with the
/// variables' combinations, zipped or not).
pub fn with_each(variants: &[Vec<Setting>], name: &str, values: &[String]) -> Vec<Vec<Setting>> {
    variants
        .iter()
        .flat_map(|v| {
            values.iter().map(move |value| {
                let mut v = v.clone();
                v.push(Setting {
                    name: name.into(),
                    value: value.clone(),
                });
                v
            })
        })
        .collect()
}

/// `--zip` pairs the values by position, so every `--set` must give as many.
pub fn check_zip(sets: &[VarValues]) -> anyhow::Result<()> {
    let Some(first) = sets.first() else {
        return Err(bad_input(
            "--zip pairs the values of several --set flags by position, and none is given: give two or more --set VAR=v1,v2 of as many values, or leave --zip out",
        ));
    };
    match sets.iter().find(|s| s.values.len() != first.values.len()) {
        None => Ok(()),
        Some(s) => Err(bad_input(format!(
            "--zip pairs the values of every --set by position, and {} has {} value(s) where {} has {}: give each --set the same number of values, or leave --zip out to cross them",
            first.name,
            first.values.len(),
            s.name,
            s.values.len()
        ))),
    }
}

fn is_number(v: &str) -> bool {
    let d = v.strip_prefix('-').unwrap_or(v);
    let (whole, frac) = d.split_once('.').unwrap_or((d, "0"));
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    digits(whole) && digits(frac)
}

/// The SQL literal for a value given on the command line, or None when it is none of the safe forms.
pub fn literal(v: &str) -> Option<String> {
    if is_number(v) {
        return Some(v.to_string());
    }
    let size_like = v.len() > 1
        && v[..v.len() - 1].chars().all(|c| c.is_ascii_digit())
        && v.ends_with(['K', 'M', 'G', 'T', 'k', 'm', 'g', 't']);
    if size_like {
        return crate::units::parse_size(v).ok().map(|b| b.to_string());
    }
    let word = !v.is_empty() && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    word.then(|| quote_string(v))
}

/// The literal that sets the server's own value back: a number as it is, anything else quoted.
pub fn baseline_literal(v: &str) -> String {
    if is_number(v) {
        v.to_string()
    } else {
        quote_string(v)
    }
}

/// `SET GLOBAL `name` = literal` (without the tag).
pub fn set_sql(name: &str, literal: &str) -> String {
    format!("SET GLOBAL {} = {literal}", quote_ident(name))
}

/// Whether the server reports `observed` for the value `expected` (given or read before): numbers equal as
/// numbers (a size as its bytes), ON/OFF as 1/0, words regardless of case.
pub fn same_value(expected: &str, observed: &str) -> bool {
    let as_number = |v: &str| -> Option<f64> {
        if is_number(v) {
            v.parse().ok()
        } else {
            literal(v).and_then(|l| l.parse().ok())
        }
    };
    if let (Some(a), Some(b)) = (as_number(expected), as_number(observed)) {
        return (a - b).abs() <= 1e-9 * a.abs().max(1.0);
    }
    let norm = |v: &str| match v.to_ascii_lowercase().as_str() {
        "1" | "on" | "true" | "yes" => "on".to_string(),
        "0" | "off" | "false" | "no" => "off".to_string(),
        other => other.to_string(),
    };
    norm(expected) == norm(observed)
}

/// How an experiment can give a variable a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HowSet {
    /// `SET GLOBAL`, while the server runs.
    Online,
    /// Read-only while the server runs: innops's drop-in and a restart.
    Restart,
    /// Not at all (session-only, or not listed), and why.
    Never(String),
}

/// How the server lets `name` change (`information_schema.SYSTEM_VARIABLES`: read-only variables take a
/// restart, session-only ones have no global value). Refused on a server without that table (MySQL): it
/// cannot tell.
pub fn how_set(conn: &mut mysql::Conn, name: &str, tag: &str) -> anyhow::Result<HowSet> {
    let row: Option<(String, String)> = conn
        .exec_first(
            format!(
                "SELECT {tag} READ_ONLY, VARIABLE_SCOPE FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_NAME = ?"
            ),
            (name.to_ascii_uppercase(),),
        )
        .map_err(|e| {
            crate::error::refused(format!(
                "innops cannot tell whether {name} is dynamic without MariaDB's information_schema.SYSTEM_VARIABLES ({}): experiment runs on MariaDB only for now",
                e
            ))
        })?;
    Ok(match row {
        None => HowSet::Never("is not listed in information_schema.SYSTEM_VARIABLES".into()),
        Some((_, scope)) if scope.eq_ignore_ascii_case("SESSION ONLY") => {
            HowSet::Never("is a session-only variable (no global value to set)".into())
        }
        Some((ro, _)) if ro.eq_ignore_ascii_case("YES") => HowSet::Restart,
        _ => HowSet::Online,
    })
}

/// The variable's global value now.
pub fn global_value(ctx: &mut Ctx, name: &str) -> anyhow::Result<String> {
    let tag = ctx.tag();
    let v: Option<Option<String>> = ctx.conn()?.query_first(format!(
        "SELECT {tag} CAST(@@GLOBAL.{} AS CHAR)",
        quote_ident(name)
    ))?;
    Ok(v.flatten().unwrap_or_default())
}

/// A verdict: `s.name` reads back `s.value` now (`what` names that value for the DBA).
pub fn reads_back(ctx: &mut Ctx, s: &Setting, what: &str) -> anyhow::Result<Verdict> {
    let now = global_value(ctx, &s.name)?;
    Ok(Verdict::check(
        same_value(&s.value, &now),
        format!("{} = {now}", s.name),
        format!("{} ({what})", s.value),
        format!(
            "{} is not {} now: set it by hand with SET GLOBAL {} = {} and check what else changes it",
            s.name,
            s.value,
            s.name,
            s.value
        ),
    ))
}

/// Set each variable to its given value, each proven by reading it back: an error naming the first the server
/// took otherwise (it clamps some values to their range).
pub fn set_all(ctx: &mut Ctx, settings: &[Setting]) -> anyhow::Result<()> {
    for s in settings {
        let lit = literal(&s.value).ok_or_else(|| {
            bad_input(format!("'{}' of {} is not a safe literal", s.value, s.name))
        })?;
        set_one(ctx, s, &lit)?;
    }
    Ok(())
}

/// Set every variable back to its baseline (the server's own values), each proven by reading it back.
pub fn set_baseline(ctx: &mut Ctx, baseline: &[Setting]) -> anyhow::Result<()> {
    for s in baseline {
        set_one(ctx, s, &baseline_literal(&s.value))?;
    }
    Ok(())
}

fn set_one(ctx: &mut Ctx, s: &Setting, lit: &str) -> anyhow::Result<()> {
    let tag = ctx.tag();
    ctx.conn()?
        .query_drop(format!("{tag} {}", set_sql(&s.name, lit)))?;
    let now = global_value(ctx, &s.name)?;
    if !same_value(&s.value, &now) {
        return Err(crate::error::refused(format!(
            "the server took {} = {} as {now}: give a value it keeps (inside the variable's range)",
            s.name, s.value
        )));
    }
    Ok(())
}

/// The fix for a variable this server lacks because MariaDB removed it, if it is one of those (a ready study
/// names it: playbooks/experiments/thread-concurrency.toml).
pub fn removed(name: &str) -> Option<&'static str> {
    const THROTTLING: &[&str] = &[
        "innodb_thread_concurrency",
        "innodb_commit_concurrency",
        "innodb_concurrency_tickets",
        "innodb_thread_sleep_delay",
        "innodb_replication_delay",
    ];
    THROTTLING.contains(&name).then_some(
        "MariaDB removed InnoDB's thread throttling in 10.6, so experiment with it on MariaDB 10.5 or earlier",
    )
}

/// A variable that changes nothing unless the server writes a binary log.
pub fn needs_binlog(name: &str) -> bool {
    name == "sync_binlog" || name.starts_with("binlog_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_flag_is_a_name_and_its_values() {
        let v = parse_set("innodb_io_capacity=200, 2000").unwrap();
        assert_eq!(v.name, "innodb_io_capacity");
        assert_eq!(v.values, ["200", "2000"]);
        assert_eq!(parse_set("Sync_Binlog=0,1").unwrap().name, "sync_binlog");
    }

    #[test]
    fn a_bad_set_flag_is_refused_in_one_sentence_naming_the_fix() {
        let msg = |a: &str| crate::error::display_of(&parse_set(a).unwrap_err());
        assert!(msg("innodb_io_capacity").contains("has no '='"));
        assert!(msg("innodb_io_capacity=").contains("an empty value"));
        assert!(msg("innodb_io_capacity=200,,300").contains("an empty value"));
        assert!(msg("x`y=1").contains("is not a variable name"));
        assert!(msg("a=1;DROP").contains("is not a number, a size"));
        assert!(msg("a='x'").contains("is not a number, a size"));
        assert!(msg("a=1,1").contains("twice"));
        for a in ["a", "a=", "x`y=1", "a=1;DROP"] {
            assert_eq!(msg(a).lines().count(), 1);
        }
    }

    #[test]
    fn values_become_safe_literals() {
        assert_eq!(literal("200").as_deref(), Some("200"));
        assert_eq!(literal("-1").as_deref(), Some("-1"));
        assert_eq!(literal("0.5").as_deref(), Some("0.5"));
        assert_eq!(literal("128M").as_deref(), Some("134217728"));
        assert_eq!(literal("O_DIRECT").as_deref(), Some("'O_DIRECT'"));
        assert_eq!(literal("1e5").as_deref(), Some("'1e5'"));
        assert_eq!(literal("a b"), None);
        assert_eq!(literal("x'"), None);
        assert_eq!(baseline_literal("200"), "200");
        assert_eq!(baseline_literal("it's"), "'it''s'");
        assert_eq!(baseline_literal(""), "''");
        assert_eq!(
            set_sql("innodb_io_capacity", "200"),
            "SET GLOBAL `innodb_io_capacity` = 200"
        );
    }

    #[test]
    fn a_value_reads_back_as_the_server_spells_it() {
        assert!(same_value("200", "200"));
        assert!(same_value("128M", "134217728"));
        assert!(same_value("1", "ON"));
        assert!(same_value("off", "OFF"));
        assert!(same_value("o_direct", "O_DIRECT"));
        assert!(same_value("0.50", "0.500000"));
        assert!(!same_value("50", "100"));
        assert!(!same_value("ON", "OFF"));
    }

    fn set(name: &str, values: &[&str]) -> (String, Vec<String>) {
        (name.into(), values.iter().map(|v| v.to_string()).collect())
    }

    fn described(variants: &[Vec<Setting>]) -> Vec<String> {
        variants
            .iter()
            .map(|v| {
                v.iter()
                    .map(|s| format!("{}={}", s.name, s.value))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn zipped_values_pair_by_position_and_tables_cross_with_them() {
        let sets = [set("a", &["1", "2", "3"]), set("b", &["x", "y", "z"])];
        let z = zip(&sets);
        assert_eq!(described(&z), ["a=1 b=x", "a=2 b=y", "a=3 b=z"]);
        let t = with_each(&z, "table", &["T1".into(), "T2".into()]);
        assert_eq!(
            described(&t),
            [
                "a=1 b=x table=T1",
                "a=1 b=x table=T2",
                "a=2 b=y table=T1",
                "a=2 b=y table=T2",
                "a=3 b=z table=T1",
                "a=3 b=z table=T2"
            ]
        );
        // No variable: one empty combination, as crossing gives, so table variants alone still make arms.
        assert_eq!(with_each(&zip(&[]), "table", &["T1".into()]).len(), 1);
    }

    #[test]
    fn zipping_lists_of_unequal_length_is_refused_in_one_sentence() {
        let v = |a: &str| parse_set(a).unwrap();
        assert!(check_zip(&[v("a=1,2,3"), v("b=x,y,z")]).is_ok());
        let msg = crate::error::display_of(&check_zip(&[v("a=1,2,3"), v("b=x,y")]).unwrap_err());
        assert!(msg.contains("a has 3 value(s) where b has 2"), "{msg}");
        assert!(
            msg.contains("give each --set the same number of values"),
            "{msg}"
        );
        assert_eq!(msg.lines().count(), 1);
        assert!(check_zip(&[]).is_err());
    }

    #[test]
    fn removed_throttling_and_binlog_variables_are_known() {
        assert!(removed("innodb_thread_concurrency")
            .unwrap()
            .contains("10.6"));
        assert!(removed("innodb_io_capacity").is_none());
        assert!(needs_binlog("sync_binlog") && needs_binlog("binlog_commit_wait_count"));
        assert!(!needs_binlog("innodb_flush_log_at_trx_commit"));
    }
}
