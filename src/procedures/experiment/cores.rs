//! Values relative to the server machine's cores: `--set innodb_thread_concurrency=0,2xcores,4xcores` (and the
//! same in a study file's `set`). `Nxcores` is N times the cores, `cores` once; N a whole number from 1 to
//! 1024, case-insensitive. They are resolved once, when the plan is made, against the CPUs the **server**
//! process may run on (`Cpus_allowed_list` of `/proc/<pid>/status`, the pid from `@@pid_file`), so the
//! resolved numbers go into `plan.json` and `resume` runs the same values. A server innops cannot see on this
//! machine is refused: innops has no way to count a remote machine's cores.

use serde::{Deserialize, Serialize};

use super::values::VarValues;
use crate::error::bad_input;

/// The cores counted and every relative value resolved, for the plan's notes and the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cores {
    pub count: u32,
    /// Where the count comes from (the server's pid and its `/proc` file).
    pub from: String,
    /// `innodb_thread_concurrency: 2xcores = 4, 4xcores = 8`, one string per variable with relative values.
    pub resolved: Vec<String>,
}

impl Cores {
    /// One line for the plan's notes, the text summary and report.html.
    pub fn line(&self) -> String {
        format!(
            "cores: {} ({}): {}",
            self.count,
            self.from,
            self.resolved.join("; ")
        )
    }
}

/// The multiple of the cores `v` stands for (`2xcores` → 2, `cores` → 1), or None when it is not relative.
pub fn multiple(v: &str) -> Option<u32> {
    let v = v.to_ascii_lowercase();
    if v == "cores" {
        return Some(1);
    }
    let n = v.strip_suffix("xcores")?;
    if n.is_empty() || !n.chars().all(|c| c.is_ascii_digit()) || n.len() > 4 {
        return None;
    }
    n.parse().ok().filter(|n| (1..=1024).contains(n))
}

/// A value that looks meant as relative but is not in the one syntax (`2*cores`, `0xcores`, `2cores`): refused
/// in one sentence, where [`super::values::literal`] would otherwise send it as a word.
pub fn check_syntax(arg: &str, v: &str) -> anyhow::Result<()> {
    if v.to_ascii_lowercase().contains("core") && multiple(v).is_none() {
        return Err(bad_input(format!(
            "--set {arg}: '{v}' is not a multiple of the cores: write Nxcores with N a whole number from 1 to 1024 (2xcores), or cores"
        )));
    }
    Ok(())
}

/// Whether any value is relative to the cores.
pub fn any_relative(sets: &[VarValues]) -> bool {
    sets.iter()
        .flat_map(|s| &s.values)
        .any(|v| multiple(v).is_some())
}

/// Every relative value replaced by its number for `count` cores (counted `from`). Refused when two values of
/// one variable become the same number (`4,2xcores` on 2 cores).
pub fn resolve(sets: &mut [VarValues], count: u32, from: &str) -> anyhow::Result<Cores> {
    let mut resolved = Vec::new();
    for s in sets.iter_mut() {
        let mut shown = Vec::new();
        let mut out: Vec<String> = Vec::new();
        for v in &s.values {
            let value = match multiple(v) {
                Some(n) => {
                    let r = (u64::from(n) * u64::from(count)).to_string();
                    shown.push(format!("{v} = {r}"));
                    r
                }
                None => v.clone(),
            };
            if out.iter().any(|o| super::values::same_value(o, &value)) {
                return Err(bad_input(format!(
                    "{} = {} gives {value} twice on this server's {count} core(s) ({}): give values that differ here",
                    s.name,
                    s.values.join(","),
                    shown.join(", ")
                )));
            }
            out.push(value);
        }
        if !shown.is_empty() {
            resolved.push(format!("{}: {}", s.name, shown.join(", ")));
        }
        s.values = out;
    }
    Ok(Cores {
        count,
        from: from.to_string(),
        resolved,
    })
}

/// The refusal for a server innops cannot count the cores of.
pub fn not_countable(why: &str) -> anyhow::Error {
    bad_input(format!(
        "values relative to the cores (2xcores) need the server machine's core count, and {why}: give plain numbers instead"
    ))
}

/// How many CPUs the server process may run on, and where that was read: `Cpus_allowed_list` of its
/// `/proc/<pid>/status`. `local` is whether innops reaches the server on this machine (socket or loopback).
pub fn server_cores(conn: &mut mysql::Conn, local: bool) -> anyhow::Result<(u32, String)> {
    use crate::sql::Queryable;
    if !local {
        return Err(not_countable(
            "the server is not on this machine (innops cannot read another machine's /proc)",
        ));
    }
    let row: Option<(Option<String>, Option<String>)> = conn
        .query_first("SELECT /* innops:experiment:cores */ @@GLOBAL.pid_file, @@GLOBAL.datadir")?;
    let (file, datadir) = row.unwrap_or_default();
    let file = file.ok_or_else(|| not_countable("the server names no pid file"))?;
    let path = match std::path::Path::new(&file) {
        p if p.is_absolute() => p.to_path_buf(),
        p => std::path::Path::new(&datadir.unwrap_or_default()).join(p),
    };
    let pid: u32 = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| {
            not_countable(&format!(
                "its pid file {} cannot be read here",
                path.display()
            ))
        })?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if !matches!(comm.trim(), "mariadbd" | "mysqld") {
        return Err(not_countable(&format!(
            "pid {pid} of its pid file {} is not a mariadbd or mysqld on this machine",
            path.display()
        )));
    }
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| {
        not_countable(&format!(
            "/proc/{pid}/status of the server cannot be read ({e})"
        ))
    })?;
    let count = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|l| count_list(l.trim()))
        .ok_or_else(|| not_countable(&format!("/proc/{pid}/status has no Cpus_allowed_list")))?;
    Ok((
        count,
        format!(
            "the CPUs {} pid {pid} may run on, Cpus_allowed_list of /proc/{pid}/status",
            comm.trim()
        ),
    ))
}

/// The CPUs in a list such as `0-3,8,10-11`.
pub fn count_list(list: &str) -> Option<u32> {
    let mut n = 0u32;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                b.checked_sub(a)? + 1
            }
            None => {
                part.trim().parse::<u32>().ok()?;
                1
            }
        };
    }
    (n > 0).then_some(n)
}

/// Refuse a value left relative (a plan built without resolving it would send `'2xcores'` to the server).
pub fn check_resolved(sets: &[VarValues]) -> anyhow::Result<()> {
    match sets.iter().find_map(|s| {
        s.values
            .iter()
            .find(|v| multiple(v).is_some())
            .map(|v| (s, v))
    }) {
        None => Ok(()),
        Some((s, v)) => Err(not_countable(&format!(
            "{}={v} was not resolved against them",
            s.name
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multiples_of_the_cores_parse_in_one_syntax() {
        assert_eq!(multiple("2xcores"), Some(2));
        assert_eq!(multiple("16XCores"), Some(16));
        assert_eq!(multiple("cores"), Some(1));
        for v in [
            "0xcores",
            "2cores",
            "x cores",
            "xcores",
            "2.5xcores",
            "99999xcores",
            "4",
            "ON",
        ] {
            assert_eq!(multiple(v), None, "{v}");
        }
        assert!(check_syntax("a=2cores", "2cores").is_err());
        assert!(check_syntax("a=2xcores", "2xcores").is_ok());
        assert!(check_syntax("a=4", "4").is_ok());
        let m = crate::error::display_of(&check_syntax("a=0xcores", "0xcores").unwrap_err());
        assert!(m.contains("write Nxcores") && m.lines().count() == 1, "{m}");
    }

    #[test]
    fn relative_values_resolve_against_the_count_and_say_so() {
        let mut sets = vec![
            VarValues {
                name: "innodb_thread_concurrency".into(),
                values: vec!["0".into(), "2xcores".into(), "4xcores".into()],
            },
            VarValues {
                name: "innodb_io_capacity".into(),
                values: vec!["200".into()],
            },
        ];
        assert!(any_relative(&sets));
        assert!(check_resolved(&sets).is_err());
        let c = resolve(&mut sets, 2, "test").unwrap();
        assert_eq!(sets[0].values, ["0", "4", "8"]);
        assert_eq!(sets[1].values, ["200"]);
        assert_eq!(
            c.line(),
            "cores: 2 (test): innodb_thread_concurrency: 2xcores = 4, 4xcores = 8"
        );
        assert!(!any_relative(&sets));
        assert!(check_resolved(&sets).is_ok());
    }

    #[test]
    fn values_that_coincide_on_this_machine_are_refused() {
        let mut sets = vec![VarValues {
            name: "a".into(),
            values: vec!["4".into(), "2xcores".into()],
        }];
        let m = crate::error::display_of(&resolve(&mut sets, 2, "t").unwrap_err());
        assert!(
            m.contains("gives 4 twice on this server's 2 core(s)"),
            "{m}"
        );
    }

    #[test]
    fn a_remote_server_is_refused_in_one_sentence_asking_for_numbers() {
        let m = crate::error::display_of(&not_countable("the server is not on this machine"));
        assert!(
            m.contains("give plain numbers instead") && m.lines().count() == 1,
            "{m}"
        );
    }

    #[test]
    fn cpu_lists_are_counted() {
        assert_eq!(count_list("0-3"), Some(4));
        assert_eq!(count_list("0"), Some(1));
        assert_eq!(count_list("0-1,4,6-7"), Some(5));
        assert_eq!(count_list(""), None);
        assert_eq!(count_list("3-1"), None);
    }
}
