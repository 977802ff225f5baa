//! The preflights of `innops recover`, each a list of named checks: the copy path's (the data directory, the
//! copy and output directories, the space, the binary for the private server, the control backend), and
//! `--in-place`'s. Also what innops learns of a server that is down (`--datadir`), from its files.

use std::path::Path;
use std::time::Duration;

use crate::dump;
use crate::error::bad_input;
use crate::plan::{Check, Risk, Step, Verdict};
use crate::procedures::kit::checks::{self, ControlNeed};
use crate::procedures::PlanEnv;
use crate::server::facts::ServerFacts;
use crate::units::format_size;

use super::{copy, private, safety, table_name, RecoverParams};

/// The copy path's preflight.
pub(super) fn preflight(
    p: &RecoverParams,
    facts: &ServerFacts,
    env: &PlanEnv,
    datadir: &Path,
    binary: &Path,
) -> Step {
    // A data directory named by --datadir is on this machine by definition.
    let local = env.target.local || !p.original_running;
    Step::new(
        "preflight",
        "Check the copy can be made and recovered from",
        Risk::Read,
    )
    .pre(datadir_local(datadir, local))
    .pre(no_server_on_datadir(datadir, p.original_running))
    .pre(redo_and_undo_inside(datadir, facts))
    .pre(tables_exist(p))
    .pre(outside_datadir(p, datadir))
    .pre(copy_dir_new(p))
    .pre(out_is_new(&p.out))
    .pre(safety::socket_fits(&p.copy_to))
    .pre(copy_space(p, datadir))
    .pre(server_binary(binary, facts))
    .pre(control_unless_down(p.original_running))
}

/// The data directory is on this machine (innops copies it itself).
fn datadir_local(datadir: &Path, local: bool) -> Check {
    let d2 = datadir.to_path_buf();
    Check::new("data directory on this machine", move |_| {
        Ok(Verdict::check(
            local && d2.is_dir(),
            format!("{}{}", d2.display(), if local { "" } else { " on another machine" }),
            "a local directory innops can read",
            format!("innops copies the data directory itself: run it on the server's machine, where {} is", d2.display()),
        ))
    })
}

/// No process holds the data directory's `ibdata1` lock, when innops is not the one to stop the server.
fn no_server_on_datadir(datadir: &Path, running: bool) -> Check {
    let d4 = datadir.to_path_buf();
    Check::new("no server runs on the data directory", move |_| {
        if running {
            return Ok(Verdict::pass(
                "the server runs; innops stops it before the copy",
                "stopped before the copy",
            ));
        }
        // A server just killed lingers as a zombie while the kernel tears it down, its lock still held
        // for a moment: wait for that (bounded), never for a live process.
        let ibdata = d4.join("ibdata1");
        let mut holder = ibdata_lock_holder(&ibdata);
        let until = std::time::Instant::now() + Duration::from_secs(30);
        while let Some(pid) = holder {
            if crate::server::process::process_alive(pid as u32)
                || std::time::Instant::now() > until
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
            holder = ibdata_lock_holder(&ibdata);
        }
        Ok(Verdict::check(
            holder.is_none(),
            holder.map(|pid| format!("pid {pid} holds ibdata1's lock")).unwrap_or_else(|| "no process holds ibdata1".into()),
            "no server on it",
            "a server is running on this data directory, so a copy of its files would not be consistent: drop --datadir and let innops stop and start it (--service or --start-cmd/--stop-cmd)",
        ))
    })
}

/// The redo log and undo tablespaces are inside the data directory, so the copy holds them.
fn redo_and_undo_inside(datadir: &Path, facts: &ServerFacts) -> Check {
    let d3 = datadir.to_path_buf();
    let log_dir = facts
        .var("innodb_log_group_home_dir")
        .unwrap_or("./")
        .to_string();
    let undo_dir = facts
        .var("innodb_undo_directory")
        .unwrap_or("./")
        .to_string();
    Check::new("redo and undo files inside the data directory", move |_| {
        let inside = |d: &str| {
            let path = Path::new(d);
            d.is_empty()
                || d == "./"
                || d == "."
                || path.is_relative()
                || private::inside(path, &d3)
        };
        let ok = inside(&log_dir) && inside(&undo_dir);
        Ok(Verdict::check(
            ok,
            format!("innodb_log_group_home_dir={log_dir}, innodb_undo_directory={undo_dir}"),
            "both inside the data directory",
            "the redo log or undo tablespaces live outside the data directory, and innops copies only the data directory: recover from a copy you make yourself",
        ))
    })
}

/// Every table `--tables` names exists on the running server.
fn tables_exist(p: &RecoverParams) -> Check {
    let p5 = p.clone();
    let running = p.original_running;
    Check::new("the tables named exist", move |ctx| {
        if p5.tables.is_empty() || !running {
            return Ok(Verdict::pass(
                "every table (or the server is down: the copy's dictionary is checked later)",
                "the tables to dump",
            ));
        }
        let tag = ctx.tag();
        let listed = dump::list_tables(ctx.conn()?, &tag, &[])?;
        let mut missing = Vec::new();
        for t in &p5.tables {
            let n = table_name(t)?;
            if !listed.contains(&n) {
                missing.push(n.qualified());
            }
        }
        Ok(Verdict::check(
            missing.is_empty(),
            if missing.is_empty() {
                format!("{} table(s) found", p5.tables.len())
            } else {
                format!("no table {}", missing.join(", "))
            },
            "every table named in --tables",
            format!(
                "the server has no table {}: check the names in --tables (db.table)",
                missing.join(", ")
            ),
        ))
    })
}

/// Neither `--out` nor `--copy-to` overlaps the data directory.
fn outside_datadir(p: &RecoverParams, datadir: &Path) -> Check {
    let p4 = p.clone();
    let d5 = datadir.to_path_buf();
    Check::new("copy and output outside the data directory", move |_| {
        // The server would take a directory of dump files in its datadir for a database, and a copy inside
        // the original would copy itself.
        let inside: Vec<String> = [("--out", &p4.out), ("--copy-to", &p4.copy_to)]
            .into_iter()
            .filter(|(_, d)| d.starts_with(&d5) || d5.starts_with(d))
            .map(|(f, d)| format!("{f} {}", d.display()))
            .collect();
        Ok(Verdict::check(
            inside.is_empty(),
            if inside.is_empty() { "both outside".to_string() } else { format!("{} overlaps the data directory", inside.join(" and ")) },
            format!("outside {}", d5.display()),
            "innops never writes into the server's data directory: give --out and --copy-to elsewhere",
        ))
    })
}

/// `--copy-to` does not exist yet: innops never writes into a directory it did not make.
fn copy_dir_new(p: &RecoverParams) -> Check {
    let p = p.clone();
    Check::new("copy directory is new", move |_| {
        let exists = p.copy_to.exists();
        Ok(Verdict::check(
            !exists,
            if exists { format!("{} exists", p.copy_to.display()) } else { format!("{} free", p.copy_to.display()) },
            "a directory that does not exist yet",
            format!("{} exists already: name a new --copy-to (innops never writes into a directory it did not make)", p.copy_to.display()),
        ))
    })
}

/// Room for the copy where `--copy-to` goes, plus a tenth for the private server's logs.
fn copy_space(p: &RecoverParams, datadir: &Path) -> Check {
    let p3 = p.clone();
    let datadir = datadir.to_path_buf();
    Check::new("free space for the copy", move |_| {
        let (files, bytes) = copy::measure(&datadir, &p3.leave(&datadir))?;
        let at = copy::existing_ancestor(&p3.copy_to);
        let free = checks::free_bytes(&at).unwrap_or(0);
        // The copy plus a tenth: the private server writes logs and temporary files beside it.
        let need = bytes + bytes / 10;
        Ok(Verdict::check(
            free >= need,
            format!("{} free at {}", format_size(free), at.display()),
            format!("{} ({files} files, plus a tenth)", format_size(need)),
            format!("there is not enough space at {} for a copy of the data directory: free space or give another --copy-to", at.display()),
        ))
    })
}

/// The binary that runs the copy is the server's own major.minor version.
fn server_binary(binary: &Path, facts: &ServerFacts) -> Check {
    let binary = binary.to_path_buf();
    let server_version = facts.version_string.clone();
    Check::new("server binary for the private server", move |_| {
        let out = std::process::Command::new(&binary)
            .arg("--version")
            .output();
        let answer = out
            .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
            .unwrap_or_default();
        // The same major.minor as the running server: another version could upgrade or refuse the copy.
        let want = server_version
            .split('.')
            .take(2)
            .collect::<Vec<_>>()
            .join(".");
        let ok = !want.is_empty() && answer.contains(&format!(" {want}."));
        Ok(Verdict::check(
            ok,
            format!("{}: {}", binary.display(), answer.trim()),
            format!("version {want}, as the server"),
            format!("{} is not the server's version {want}: give the server's own binary with --mariadbd", binary.display()),
        ))
    })
}

/// The stop and start this plan makes need a control backend; a server that is down needs none.
fn control_unless_down(running: bool) -> Check {
    let need = ControlNeed {
        name: "innops can stop and start the server",
        needed: true,
        expected: "a control backend",
        fix: "innops must stop the server for a consistent copy and start it again: pass --sandbox NAME, --service systemd:UNIT, or --start-cmd/--stop-cmd",
    };
    Check::new(need.name, move |ctx| {
        if !running {
            return Ok(Verdict::pass(
                "down: innops stops and starts nothing",
                "a control backend, or a server down",
            ));
        }
        Ok(checks::control_verdict(
            ctx.control.map(|c| c.spec.describe()),
            &need,
        ))
    })
}

/// `--in-place`'s preflight: the output directory, the drop-in, the control backend.
pub(super) fn preflight_in_place(p: &RecoverParams, env: &PlanEnv, datadir: &Path) -> Step {
    let p2 = p.clone();
    let p3 = p.clone();
    let datadir = datadir.to_path_buf();
    let dropin = env.dropin.clone();
    Step::new("preflight", "Check innops can restart the server in forced recovery and back", Risk::Read)
        .pre(Check::new("output outside the data directory", move |_| {
            let inside = p3.out.starts_with(&datadir) || datadir.starts_with(&p3.out);
            Ok(Verdict::check(
                !inside,
                format!("--out {}", p3.out.display()),
                format!("outside {}", datadir.display()),
                "innops never writes into the server's data directory: give --out elsewhere",
            ))
        }))
        .pre(out_is_new(&p2.out))
        .pre(Check::new("innops's drop-in can be written", move |_| {
            Ok(match &dropin {
                Ok(path) => Verdict::pass(path.display().to_string(), "a drop-in file"),
                Err(why) => Verdict::fail(why.clone(), "a drop-in file", format!("{why}: pass --config-file with the server's option file")),
            })
        }))
        .pre(checks::control_present(ControlNeed {
            name: "innops can stop and start the server",
            needed: true,
            expected: "a control backend",
            fix: "--in-place restarts the server at each level: pass --sandbox NAME, --service systemd:UNIT, or --start-cmd/--stop-cmd",
        }))
}

/// `--out` is new or empty: a dump never mixes its files with others.
pub(super) fn out_is_new(out: &Path) -> Check {
    let out = out.to_path_buf();
    Check::new("output directory is new or empty", move |_| {
        // A file (or anything else that is not a directory) would fail the dump only after the stop and copy.
        if out.exists() && !out.is_dir() {
            return Ok(Verdict::fail(
                format!("{} is a file, not a directory", out.display()),
                "new or empty",
                format!(
                    "--out {} names a file: name a new or empty directory for --out",
                    out.display()
                ),
            ));
        }
        let empty = std::fs::read_dir(&out)
            .map(|mut d| d.next().is_none())
            .unwrap_or(true);
        Ok(Verdict::check(
            empty,
            if empty {
                format!("{} free", out.display())
            } else {
                format!("{} holds files", out.display())
            },
            "new or empty",
            format!(
                "{} holds files already: name a new or empty --out",
                out.display()
            ),
        ))
    })
}

/// The pid of a process holding InnoDB's lock on `ibdata1` (a running server locks it with fcntl), if any.
fn ibdata_lock_holder(path: &Path) -> Option<i32> {
    use std::os::unix::io::AsRawFd;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .ok()?;
    // SAFETY: a zeroed flock is a valid argument; F_GETLK only fills it in.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: a valid descriptor and a pointer to a properly sized flock.
    let rc = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut fl) };
    (rc == 0 && fl.l_type != libc::F_UNLCK as libc::c_short).then_some(fl.l_pid)
}

/// The facts of a server that is down, from its data directory, its option file and the binary that will run the
/// copy: the version (the datadir's `mysql_upgrade_info`, else the binary's), and the options that change how
/// InnoDB reads the files (from the option file's server groups; the redo log size from `ib_logfile0` itself).
pub fn offline_facts(
    datadir: &Path,
    binary: &Path,
    option_file: Option<&Path>,
) -> anyhow::Result<ServerFacts> {
    if !datadir.join("ibdata1").is_file() && !datadir.join("mysql").is_dir() {
        return Err(bad_input(format!(
            "--datadir {} holds no InnoDB data directory (no ibdata1, no mysql/): give the server's datadir",
            datadir.display()
        )));
    }
    let from_binary = || -> Option<String> {
        let out = std::process::Command::new(binary)
            .arg("--version")
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        text.split_whitespace()
            .skip_while(|w| *w != "Ver")
            .nth(1)
            .map(str::to_string)
    };
    let version = std::fs::read_to_string(datadir.join("mysql_upgrade_info"))
        .ok()
        .map(|t| {
            t.trim_matches(|c: char| c.is_whitespace() || c == '\0')
                .to_string()
        })
        .filter(|v| crate::server::facts::Version::parse(v).is_some())
        .or_else(from_binary)
        .ok_or_else(|| {
            bad_input(format!(
                "cannot tell which server version wrote {}: give the server binary with --mariadbd",
                datadir.display()
            ))
        })?;
    let mut vars = std::collections::BTreeMap::new();
    vars.insert("datadir".to_string(), datadir.display().to_string());
    if let Some(f) = option_file {
        let set = crate::server::optionfile::read(f)?;
        // Every group the server of that version reads: [mariadb-10.11], [client-server], [galera], the suffix.
        let groups = crate::server::optionfile::server_groups(
            Some(&version),
            crate::server::optionfile::group_suffix_from_env().as_deref(),
        );
        for key in private::CARRIED
            .iter()
            .chain(&["innodb_log_group_home_dir", "innodb_undo_directory"])
        {
            if let Some(v) = set.get(&groups, key) {
                vars.insert(key.to_string(), v.to_string());
            }
        }
    }
    if !vars.contains_key("innodb_log_file_size") {
        if let Ok(m) = std::fs::metadata(datadir.join("ib_logfile0")) {
            vars.insert("innodb_log_file_size".into(), m.len().to_string());
        }
    }
    Ok(ServerFacts::from_parts(&version, vars, Default::default()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option file is read as the server of that version reads it: `[mariadb-10.11]` and `[galera]` count,
    /// and a later group overrides an earlier one (the file's `innodb_log_file_size=1G` of `[mariadb-10.11]`,
    /// not `[mysqld]`'s 96M).
    #[test]
    fn offline_facts_read_the_version_groups_of_the_datadirs_server() {
        let dir = tempfile::tempdir().unwrap();
        let datadir = dir.path().join("data");
        std::fs::create_dir_all(datadir.join("mysql")).unwrap();
        std::fs::write(datadir.join("mysql_upgrade_info"), "10.11.6-MariaDB\0").unwrap();
        let cnf = dir.path().join("my.cnf");
        std::fs::write(
            &cnf,
            "[mysqld]\ninnodb_log_file_size=96M\ninnodb_page_size=16k\n\
             [mariadb-10.11]\ninnodb_log_file_size=1G\n\
             [mariadb-10.6]\ninnodb_page_size=4k\n\
             [galera]\nlower_case_table_names=1\n",
        )
        .unwrap();
        let f = offline_facts(&datadir, Path::new("/nonexistent/mariadbd"), Some(&cnf)).unwrap();
        assert_eq!(f.var("innodb_log_file_size"), Some("1G"));
        assert_eq!(
            f.var("innodb_page_size"),
            Some("16k"),
            "another version's group is not read"
        );
        assert_eq!(f.var("lower_case_table_names"), Some("1"));
    }
}
