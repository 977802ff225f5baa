//! `innops man`: one page, innops(1), written from the clap definition so it lists the commands and flags this
//! binary has.
//!
//! Why not clap_mangen's pages: it renders one page per subcommand (innops-convert(1) …) that nobody installs
//! beside innops.1, and repeats the connection group's twenty flags under every command. Here each command's
//! own flags sit under COMMANDS, the shared groups once in their own sections (each command saying which of
//! them it takes), and EXIT STATUS (from [`crate::error`]'s constants), ENVIRONMENT and EXAMPLES follow.
//! Non-ASCII text is written as groff's `\[uXXXX]`, so the page needs no input encoding.

use std::collections::BTreeSet;

use clap::{Arg, ArgAction, CommandFactory};

use crate::cli::Cli;
use crate::error::{
    EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK, EXIT_POST_CHECK, EXIT_REFUSED,
};

/// The flag groups several commands share (their help headings in `crate::cli`), with the section they get.
const SHARED: &[(&str, &str)] = &[
    ("Connection", "CONNECTION OPTIONS"),
    ("Server control", "SERVER CONTROL OPTIONS"),
    ("Run", "RUN OPTIONS"),
    ("Output", "OUTPUT OPTIONS"),
];

/// Every exit code, with what it means (docs/reference.md, "Exit codes", says more).
const EXIT_STATUS: &[(i32, &str)] = &[
    (EXIT_OK, "Done; or a dry run whose pre-checks all pass."),
    (EXIT_REFUSED, "Refused by a check or guard: the failing step changed nothing (also: not confirmed at the prompt, an internal error)."),
    (EXIT_BAD_INPUT, "Bad input (a flag, a size, a missing file, a flag the command does not use) or the server cannot be reached."),
    (EXIT_POST_CHECK, "A post-check failed after an action, or an action failed in a way that may have changed the server: a human must look; the report says what state the server is in."),
    (EXIT_INCOMPLETE, "Every step done, but the result falls short of its aim: innops recover when a table of the dump is not complete."),
    (EXIT_INTERRUPTED, "Interrupted by Ctrl-C, SIGTERM or SIGHUP at a safe point; innops resume RUN_DIR continues."),
];

/// Every environment variable innops reads (the test hooks of `crate::testhooks` left out), or sets for a
/// command it runs; a unit test holds this list to the code.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    ("MYSQL_PWD", "The password, as for the mysql client (the same as --password=, which wins)."),
    ("MYSQL_GROUP_SUFFIX", "Also read each option group with this suffix, unless --defaults-group-suffix is given."),
    ("MARIADB_HOME", "Its my.cnf is read after /etc/my.cnf and /etc/mysql/my.cnf (set but empty, it hides MYSQL_HOME)."),
    ("MYSQL_HOME", "As MARIADB_HOME, when MARIADB_HOME is not set."),
    ("HOME", "~/.my.cnf is read last of the option files; sandboxes default to ~/.local/share/innops/sandboxes and the run key to ~/.local/state/innops."),
    ("INNOPS_SANDBOX_DIR", "Where sandboxes live (the same as --sandbox-root, which wins)."),
    ("INNOPS_STATE_DIR", "The private directory of the key innops signs its run plans with (default $XDG_STATE_HOME/innops, else ~/.local/state/innops)."),
    ("XDG_STATE_HOME", "See INNOPS_STATE_DIR."),
    ("PATH", "Where innops finds mariadbd or mysqld for sandboxes and private servers, and mariadb-dump."),
    ("USER", "Who ran a run, as the journal records it (else LOGNAME, else the uid)."),
    ("LOGNAME", "See USER."),
    ("NO_COLOR", "Set and not empty: no colour in the report printed to a terminal."),
    ("TERM", "dumb: no colour."),
    ("INNOPS_EXTRA_OPTS", "Set by innops, not read: the extra server options, space-separated, for the --start-cmd command."),
];

const EXAMPLES: &[(&str, &str)] = &[
    ("What a server has, and its hazards:", "innops inspect --socket /run/mysqld/mysqld.sock"),
    ("Would every MyISAM table convert? (a dry run: every read-only check, nothing changed)", "innops convert --all-myisam --socket /run/mysqld/mysqld.sock"),
    ("Convert two tables, keeping the old MyISAM tables:", "innops convert --tables shop.orders,shop.notes --execute"),
    ("Measure the redo writes, then resize, restarting through systemd where the version needs it:", "innops redo --advise --interval 60\ninnops redo --size 2G --service systemd:mariadb --config-file /etc/mysql/my.cnf --execute"),
    ("Continue a run that was interrupted:", "innops resume innops-runs/20261130T060455.016Z-redo"),
    ("A throwaway server to try it all on:", "innops sandbox up try1\ninnops convert --sandbox try1 --all-myisam"),
    ("Is innodb_flush_log_at_trx_commit=2 faster here, beyond the noise? (everything set back at the end)", "innops experiment --sandbox try1 --set innodb_flush_log_at_trx_commit=1,2 --workload oltp_write_only --execute"),
    ("A sysbench command line, with sysbench replaced:", "innops bench oltp_read_write --tables=2 --table-size=10000 prepare --sandbox try1"),
];

/// Pages of other programs, all of them installed by their own packages (none of innops's: this is its one).
const SEE_ALSO: &[&str] = &[
    "mariadbd(8)",
    "mariadb(1)",
    "my_print_defaults(1)",
    "mariadb-dump(1)",
    "systemctl(1)",
    "sysbench(1)",
    "pt-online-schema-change(1)",
];

/// Text as roff reads it: backslashes and dashes escaped, non-ASCII as `\[uXXXX]`, no line starting a request.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            c if c.is_ascii() => out.push(c),
            c => out.push_str(&format!("\\[u{:04X}]", c as u32)),
        }
    }
    out.lines()
        .map(|l| {
            if l.starts_with('.') || l.starts_with('\'') {
                format!("\\&{l}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn bold(s: &str) -> String {
    format!("\\fB{}\\fR", esc(s))
}

fn italic(s: &str) -> String {
    format!("\\fI{}\\fR", esc(s))
}

/// Whether the flag takes a value (`--size SIZE`), as opposed to a switch (`--execute`).
fn takes_value(a: &Arg) -> bool {
    !matches!(
        a.get_action(),
        ArgAction::SetTrue
            | ArgAction::SetFalse
            | ArgAction::Count
            | ArgAction::Help
            | ArgAction::Version
    )
}

/// One flag or positional argument as a tagged paragraph: its spellings, its value, its help and defaults.
fn item(a: &Arg) -> String {
    let value = a
        .get_value_names()
        .map(|v| {
            v.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|| a.get_id().as_str().to_uppercase());
    let mut tag = Vec::new();
    if let Some(s) = a.get_short() {
        tag.push(bold(&format!("-{s}")));
    }
    if let Some(l) = a.get_long() {
        tag.push(bold(&format!("--{l}")));
    }
    let mut tag = tag.join(", ");
    if a.is_positional() {
        tag = italic(&value);
    } else if takes_value(a) {
        tag.push_str(&format!(" {}", italic(&value)));
    }
    let help = a
        .get_long_help()
        .or(a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let mut notes = Vec::new();
    if takes_value(a) {
        let values: Vec<String> = a
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_string())
            .collect();
        if !values.is_empty() {
            notes.push(format!("one of: {}", values.join(", ")));
        }
        let defaults: Vec<String> = a
            .get_default_values()
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() {
            notes.push(format!("default: {}", defaults.join(",")));
        }
    }
    if let Some(env) = a.get_env() {
        notes.push(format!("environment: {}", env.to_string_lossy()));
    }
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" [{}]", notes.join("; "))
    };
    format!(".TP\n{tag}\n{}{}\n", esc(help.trim()), esc(&notes))
}

/// The arguments a command shows: not hidden, and not the global flags every command inherits from the top.
fn own_args<'a>(cmd: &'a clap::Command, top: &BTreeSet<String>) -> Vec<&'a Arg> {
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set() && !top.contains(a.get_id().as_str()))
        .collect()
}

/// The heading a flag is listed under in `--help`, if any.
fn heading(a: &Arg) -> Option<&str> {
    a.get_help_heading()
}

/// The shared group a flag belongs to: its help heading's, or for the two shared flags `--help` shows without
/// a heading, the connection group (`--sandbox-root`, beside `--sandbox`) and the output group (`--format`).
fn shared_heading(a: &Arg) -> Option<(&'static str, &'static str)> {
    let h = match (heading(a), a.get_long()) {
        (Some(h), _) => h,
        (None, Some("sandbox-root")) => "Connection",
        (None, Some("format")) => "Output",
        (None, _) => return None,
    };
    SHARED.iter().copied().find(|(name, _)| *name == h)
}

/// Every command a user types, with its words (`deadlock run`), as `innops --help` orders them.
fn leaves(cmd: &clap::Command, prefix: &str, out: &mut Vec<(String, clap::Command)>) {
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let words = format!("{prefix}{}", sub.get_name());
        if sub.has_subcommands() {
            leaves(sub, &format!("{words} "), out);
        } else {
            out.push((words, sub.clone()));
        }
    }
}

/// One command under COMMANDS: its usage, what it does, its own flags, and which shared flags it takes.
fn command_entry(
    words: &str,
    cmd: &clap::Command,
    top: &BTreeSet<String>,
    shared: &[(&str, Vec<String>)],
) -> String {
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage: ").to_string();
    let usage = if usage.starts_with("innops ") {
        usage
    } else {
        format!("innops {words}")
    };
    let about = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|a| a.to_string())
        .unwrap_or_default();
    let mut out = format!(".SS \"{}\"\n{}\n.PP\n", esc(&usage), esc(about.trim()));
    let args = own_args(cmd, top);
    let mut last_heading = None;
    for a in args.iter().filter(|a| shared_heading(a).is_none()) {
        if heading(a) != last_heading {
            last_heading = heading(a);
            if let Some(h) = last_heading {
                out.push_str(&format!(".PP\n{}\n", bold(&format!("{h}:"))));
            }
        }
        out.push_str(&item(a));
    }
    let mut takes = Vec::new();
    for (section, all) in shared {
        let (name, title) = SHARED.iter().find(|(_, t)| t == section).unwrap();
        let taken: Vec<String> = args
            .iter()
            .filter(|a| shared_heading(a).is_some_and(|(n, _)| n == *name))
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        if taken.is_empty() {
            continue;
        }
        let which = if taken.len() == all.len() {
            "all the".to_string()
        } else {
            taken.iter().map(|t| bold(t)).collect::<Vec<_>>().join(", ") + " of the"
        };
        takes.push(format!("{which} {}", esc(title)));
    }
    if !takes.is_empty() {
        out.push_str(&format!(".PP\nTakes {}.\n", takes.join("; ")));
    }
    out
}

/// The page: header and global flags, every command, the shared groups, then the closing sections.
pub fn man_page() -> Vec<u8> {
    let mut cli = Cli::command();
    // Built, so that each subcommand carries what it inherits (no -h help flag: -h is the host).
    cli.build();
    let version = cli.get_version().unwrap_or_default().to_string();
    let top: BTreeSet<String> = cli
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect();
    let mut cmds = Vec::new();
    leaves(&cli, "", &mut cmds);
    // Each shared group's flags, first spelling seen (their help is the same wherever they appear).
    let mut shared: Vec<(&str, Vec<String>)> =
        SHARED.iter().map(|(_, t)| (*t, Vec::new())).collect();
    let mut shared_items: Vec<String> = vec![String::new(); SHARED.len()];
    for (_, cmd) in &cmds {
        for a in own_args(cmd, &top) {
            let Some((_, title)) = shared_heading(a) else {
                continue;
            };
            let i = shared.iter().position(|(t, _)| *t == title).unwrap();
            let long = a.get_long().map(|l| format!("--{l}")).unwrap_or_default();
            if !shared[i].1.contains(&long) {
                shared[i].1.push(long);
                shared_items[i].push_str(&item(a));
            }
        }
    }
    let mut page = header(&cli, &version, &top);
    page.push_str(".SH COMMANDS\n");
    for (words, cmd) in &cmds {
        page.push_str(&command_entry(words, cmd, &top, &shared));
    }
    for ((title, _), items) in shared.iter().zip(&shared_items) {
        page.push_str(&format!(".SH \"{title}\"\n{items}"));
    }
    page.push_str(&closing_sections());
    page.into_bytes()
}

fn header(cli: &clap::Command, version: &str, top: &BTreeSet<String>) -> String {
    let about = cli.get_about().map(|a| a.to_string()).unwrap_or_default();
    let mut out = format!(
        ".TH INNOPS 1 \"\" \"innops {}\" \"User Commands\"\n.SH NAME\ninnops \\- {}\n",
        esc(version),
        esc(&about)
    );
    out.push_str(&format!(
        ".SH SYNOPSIS\n{} [{}] {} [{}]\n",
        bold("innops"),
        italic("GLOBAL OPTIONS"),
        italic("COMMAND"),
        italic("OPTIONS")
    ));
    out.push_str(&format!(
        ".SH DESCRIPTION\n{}\n.PP\n{}\n.SH OPTIONS\n",
        esc("innops turns MySQL and MariaDB DBA procedures into guarded step plans. Without --execute a command shows its plan and runs every read-only pre-check against the server (a dry run); with it, each step runs its pre-checks, its action and its post-checks, and everything the run learns is written to a run directory as it happens, so innops resume can continue an interrupted run."),
        esc("Each command takes only the flags it uses: a flag of another command is refused (exit 2) in one sentence naming the commands that take it.")
    ));
    for a in cli
        .get_arguments()
        .filter(|a| top.contains(a.get_id().as_str()) && !a.is_hide_set())
    {
        out.push_str(&item(a));
    }
    out
}

fn closing_sections() -> String {
    let mut out = String::from(".SH \"EXIT STATUS\"\n");
    for (code, what) in EXIT_STATUS {
        out.push_str(&format!(
            ".TP\n{}\n{}\n",
            bold(&code.to_string()),
            esc(what)
        ));
    }
    out.push_str(&format!(".PP\n{}\n.SH ENVIRONMENT\n", esc("Errors print as one line on stderr, innops: followed by what was found and what to do; with --format json also {\"error\": SENTENCE, \"exit\": CODE} on stdout.")));
    for (var, what) in ENVIRONMENT {
        out.push_str(&format!(".TP\n{}\n{}\n", bold(var), esc(what)));
    }
    out.push_str(".SH EXAMPLES\n");
    for (what, cmds) in EXAMPLES {
        out.push_str(&format!(
            ".PP\n{}\n.PP\n.RS 4\n.nf\n{}\n.fi\n.RE\n",
            esc(what),
            esc(cmds)
        ));
    }
    out.push_str(&format!(
        ".SH \"SEE ALSO\"\n{}\n.PP\n{}\n",
        SEE_ALSO
            .iter()
            .map(|p| {
                let (name, section) = p.split_once('(').unwrap();
                format!("{}({}", bold(name), section)
            })
            .collect::<Vec<_>>()
            .join(", "),
        esc("The procedures, their checks and their sources: docs/ in the innops repository (reference.md, convert.md, redo.md, readonly.md, recover.md, deadlock.md, experiment.md, sandbox.md, fleet.md).")
    ));
    out
}

#[cfg(test)]
mod tests;
