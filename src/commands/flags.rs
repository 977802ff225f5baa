//! Which command takes which shared flag, and the sentence for a flag given to a command that does not.
//!
//! Each command flattens only the flag groups it uses (`crate::cli`: connection, server control, run, the
//! benchmark before and after), so clap itself refuses `innops convert --service …`. Its message ("unexpected
//! argument '--service' found", a usage block and a tip) does not say that the flag is real, only not here;
//! [`unused_flag_sentence`] says it in one sentence, naming the commands that take the flag. The table is read
//! from the command definitions, so it cannot drift from them; docs/reference.md prints it ([`usage_table`]
//! renders it, and a test holds the two together).

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::CommandFactory;

use crate::cli::Cli;

/// Every command a user types, as its words (`convert`, `deadlock run`), with its clap definition; the
/// commands that only group others (`deadlock`, `sandbox`) and clap's `help` are left out.
fn leaf_commands() -> Vec<(String, clap::Command)> {
    fn walk(prefix: &str, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let words = format!("{prefix}{}", sub.get_name()).trim().to_string();
            if sub.has_subcommands() {
                walk(&format!("{words} "), sub, out);
            } else {
                out.push((words, sub.clone()));
            }
        }
    }
    let mut cli = Cli::command();
    // Built, so that each subcommand carries the global flags it inherits.
    cli.build();
    let mut out = Vec::new();
    walk("", &cli, &mut out);
    out
}

/// Whether `cmd` takes the flag spelled `flag` (`--service`, `-S`).
fn takes(cmd: &clap::Command, flag: &str) -> bool {
    cmd.get_arguments().any(|a| {
        if let Some(long) = flag.strip_prefix("--") {
            a.get_long() == Some(long) || a.get_all_aliases().is_some_and(|al| al.contains(&long))
        } else {
            let mut chars = flag.chars();
            chars.next() == Some('-') && a.get_short() == chars.next() && chars.next().is_none()
        }
    })
}

/// The commands (their words) that take `flag`, in the order `innops --help` lists them.
pub fn commands_taking(flag: &str) -> Vec<String> {
    leaf_commands()
        .into_iter()
        .filter(|(_, c)| takes(c, flag))
        .map(|(words, _)| words)
        .collect()
}

/// The command the raw arguments name: its words, following subcommand names from the top (`deadlock run`).
fn command_words(argv: &[OsString]) -> Vec<String> {
    let mut cmd = Cli::command();
    let mut words = Vec::new();
    for a in argv.iter().skip(1) {
        let a = a.to_string_lossy();
        if a == "--" {
            break;
        }
        let Some(sub) = cmd.find_subcommand(a.as_ref()).cloned() else {
            continue;
        };
        words.push(sub.get_name().to_string());
        cmd = sub;
    }
    words
}

/// "a, b and c".
fn listed(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// For a flag clap refused as unknown that another command takes: one sentence naming the flag, the commands
/// that take it and the fix. None for any other error, and for a flag no command takes (a typo: clap's own
/// message suggests the nearest flag).
pub fn unused_flag_sentence(e: &clap::Error, argv: &[OsString]) -> Option<String> {
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(given)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = given.split('=').next().unwrap_or(given);
    if !flag.starts_with('-') {
        return None;
    }
    let users = commands_taking(flag);
    if users.is_empty() {
        return None;
    }
    let here = command_words(argv).join(" ");
    let here = if here.is_empty() { "innops" } else { &here };
    Some(format!(
        "{here} does not use {flag}: only {} take{} it; drop {flag} from this command line",
        listed(&users),
        if users.len() == 1 { "s" } else { "" }
    ))
}

/// For a value clap refused because the flag takes only some values: one sentence naming the flag, the value
/// and the values it takes (clap's own message is a block with a usage line).
pub fn invalid_value_sentence(e: &clap::Error) -> Option<String> {
    if e.kind() != ErrorKind::InvalidValue {
        return None;
    }
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value))) = (
        e.get(ContextKind::InvalidArg),
        e.get(ContextKind::InvalidValue),
    ) else {
        return None;
    };
    let Some(ContextValue::Strings(valid)) = e.get(ContextKind::ValidValue) else {
        return None;
    };
    // clap names the flag with its value placeholder: `--strategy <STRATEGY>`.
    let flag = arg.split([' ', '=']).next().unwrap_or(arg);
    Some(format!(
        "{flag} '{value}' is not one of {}: give one of them",
        listed(valid).replacen(" and ", " or ", 1)
    ))
}

/// The flags several commands share, each row the flags taken by the same commands: the table in
/// docs/reference.md.
#[cfg(test)]
pub fn usage_table() -> String {
    const SHARED: &[&str] = &[
        "--socket",
        "--host",
        "--user",
        "--password",
        "--defaults-file",
        "--defaults-extra-file",
        "--no-defaults",
        "--protocol",
        "--ssl-mode",
        "--ssl-ca",
        "--sandbox",
        "--sandbox-root",
        "--service",
        "--start-cmd",
        "--stop-cmd",
        "--config-file",
        "--execute",
        "--dry-run",
        "--yes",
        "--run-dir",
        "--no-bench",
        "--bench-time",
        "--bench-during",
        "--format",
    ];
    let mut rows: Vec<(Vec<String>, Vec<&str>)> = Vec::new();
    for flag in SHARED {
        let users = commands_taking(flag);
        match rows.iter_mut().find(|(u, _)| *u == users) {
            Some((_, flags)) => flags.push(flag),
            None => rows.push((users, vec![flag])),
        }
    }
    let mut out = String::from("| flags | commands that take them |\n|---|---|\n");
    for (users, flags) in rows {
        let code = |v: Vec<String>| v.join(", ");
        out.push_str(&format!(
            "| {} | {} |\n",
            code(flags.iter().map(|f| format!("`{f}`")).collect()),
            code(users.iter().map(|c| format!("`{c}`")).collect())
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn refusal(args: &[&str]) -> Option<String> {
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        let e = Cli::try_parse_from(&argv).expect_err("clap refuses the command line");
        unused_flag_sentence(&e, &argv)
    }

    #[test]
    fn a_server_control_flag_on_convert_names_the_commands_that_restart() {
        let s = refusal(&[
            "innops",
            "convert",
            "--tables",
            "d.t",
            "--service",
            "systemd:mariadb",
        ])
        .unwrap();
        assert_eq!(
            s,
            "convert does not use --service: only redo, readonly, recover, experiment, run and resume take it; drop --service from this command line"
        );
        let s = refusal(&[
            "innops",
            "convert",
            "--tables=d.t",
            "--config-file=/etc/my.cnf",
        ])
        .unwrap();
        assert!(
            s.starts_with("convert does not use --config-file: only redo,"),
            "{s}"
        );
    }

    #[test]
    fn benchmark_flags_on_recover_and_connection_flags_on_drill_are_refused_by_name() {
        let s = refusal(&[
            "innops",
            "recover",
            "--out",
            "o",
            "--copy-to",
            "c",
            "--no-bench",
        ])
        .unwrap();
        assert_eq!(
            s,
            "recover does not use --no-bench: only redo, readonly, convert, run and resume take it; drop --no-bench from this command line"
        );
        let s = refusal(&["innops", "drill", "--socket", "/tmp/s"]).unwrap();
        assert!(
            s.starts_with("drill does not use --socket: only inspect, redo,"),
            "{s}"
        );
        let s = refusal(&["innops", "drill", "-S", "/tmp/s"]).unwrap();
        assert!(s.starts_with("drill does not use -S: only inspect,"), "{s}");
        let s = refusal(&["innops", "deadlock", "parse", "f", "--execute"]).unwrap();
        assert!(
            s.starts_with("deadlock parse does not use --execute: only redo,"),
            "{s}"
        );
        assert!(s.contains("deadlock run"), "{s}");
    }

    #[test]
    fn a_value_outside_a_flag_s_list_is_one_sentence_with_the_list() {
        let argv = ["innops", "convert", "--tables", "d.t", "--strategy", "fast"];
        let e = Cli::try_parse_from(argv).unwrap_err();
        assert_eq!(
            invalid_value_sentence(&e).unwrap(),
            "--strategy 'fast' is not one of auto, bulk, deferred, chunked, online or alter: give one of them"
        );
        let e = Cli::try_parse_from(["innops", "inspect", "--protocol=PIPE"]).unwrap_err();
        assert!(invalid_value_sentence(&e)
            .unwrap()
            .starts_with("--protocol 'PIPE' is not one of TCP or SOCKET"));
    }

    #[test]
    fn every_strategy_clap_offers_is_one_convert_knows() {
        let cmd = Cli::command();
        let convert = cmd.find_subcommand("convert").unwrap();
        let strategy = convert
            .get_arguments()
            .find(|a| a.get_id() == "strategy")
            .unwrap();
        let values = strategy.get_possible_values();
        assert_eq!(values.len(), 6);
        for v in values {
            crate::procedures::convert::Strategy::parse(v.get_name()).unwrap();
        }
    }

    #[test]
    fn a_flag_no_command_takes_is_left_to_clap() {
        assert_eq!(
            refusal(&["innops", "convert", "--tables", "d.t", "--servise", "x"]),
            None
        );
        assert_eq!(
            refusal(&["innops", "redo", "--size"]),
            None,
            "a missing value is another error"
        );
    }

    #[test]
    fn every_command_that_restarts_takes_the_control_flags_and_no_other_does() {
        assert_eq!(
            commands_taking("--start-cmd"),
            ["redo", "readonly", "recover", "experiment", "run", "resume"]
        );
        assert_eq!(
            commands_taking("--config-file"),
            commands_taking("--service")
        );
        assert_eq!(
            commands_taking("--bench-during"),
            ["redo", "readonly", "convert", "run"],
            "recover's plans have no benchmark"
        );
    }

    #[test]
    fn docs_reference_prints_the_table_of_the_command_definitions() {
        let doc = include_str!("../../docs/reference.md");
        let table = usage_table();
        assert!(
            doc.contains(&table),
            "docs/reference.md should hold this table:\n{table}"
        );
    }
}
