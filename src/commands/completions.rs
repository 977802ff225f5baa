//! `innops completions SHELL` and `innops man` (its page is written by `man.rs`): generated from the clap
//! definition, so they always list the commands and flags this binary has.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;

/// The completion script for `shell`, as text: clap's, with the values only known when the user presses Tab
/// (the sandboxes under the sandbox root) and `bench`'s workloads added for bash, zsh and fish.
pub fn completion_script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "innops", &mut out);
    let text = String::from_utf8(out).expect("clap writes UTF-8");
    let workloads = crate::bench::workloads::SYSBENCH_NAMES.join(" ");
    let text = match shell {
        clap_complete::Shell::Bash => with_bash_values(&text),
        clap_complete::Shell::Zsh => with_zsh_values(&text),
        clap_complete::Shell::Fish => format!("{text}{FISH_VALUES}"),
        _ => text,
    };
    text.replace("@WORKLOADS@", &workloads).into_bytes()
}

/// Where sandboxes are, in the shell's own terms: `--sandbox-root` on the line being completed, else
/// `$INNOPS_SANDBOX_DIR`, else the default root (`crate::server::sandbox::default_root`); a sandbox is a
/// directory there holding `sandbox.json`.
const BASH_VALUES: &str = r#"
# innops: values known only when Tab is pressed (sandboxes) and bench's workloads; the rest is clap's _innops.
_innops_sandboxes() {
    local root="" i f
    for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
        case "${COMP_WORDS[i]}" in
            --sandbox-root) root="${COMP_WORDS[i+1]}" ;;
            --sandbox-root=*) root="${COMP_WORDS[i]#--sandbox-root=}" ;;
        esac
    done
    root="${root:-${INNOPS_SANDBOX_DIR:-$HOME/.local/share/innops/sandboxes}}"
    for f in "$root"/*/sandbox.json; do
        [[ -f "$f" ]] || continue
        f="${f%/sandbox.json}"
        printf '%s\n' "${f##*/}"
    done
}

_innops_values() {
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" words="" i action=""
    case "$prev" in
        --sandbox|--replica-of) words="$(_innops_sandboxes)" ;;
        --workload) words="@WORKLOADS@" ;;
    esac
    if [[ -z "$words" && "$cur" != -* && "$prev" != -* ]]; then
        case "${COMP_WORDS[1]}" in
            bench) words="@WORKLOADS@ prepare run cleanup help" ;;
            sandbox)
                # The action, then its one positional: the sandbox it acts on.
                for ((i = 2; i < COMP_CWORD; i++)); do
                    case "${COMP_WORDS[i]}" in
                        --sandbox-root|--format) ((i++)) ;;
                        -*) ;;
                        *) if [[ -z "$action" ]]; then action="${COMP_WORDS[i]}"; else action="done"; fi ;;
                    esac
                done
                case "$action" in
                    stop|start|down) words="$(_innops_sandboxes)" ;;
                esac
                ;;
        esac
    fi
    if [[ -n "$words" ]]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
        return 0
    fi
    _innops "$@"
}
"#;

fn with_bash_values(clap: &str) -> String {
    let registered = "complete -F _innops ";
    assert!(
        clap.contains(registered),
        "clap's bash script registers _innops"
    );
    let at = clap
        .rfind("\nif [[ \"${BASH_VERSINFO[0]}\"")
        .unwrap_or(clap.len());
    format!(
        "{}{BASH_VALUES}{}",
        &clap[..at],
        clap[at..].replace(registered, "complete -F _innops_values ")
    )
}

const ZSH_VALUES: &str = r#"
# innops: the sandboxes under the sandbox root, known only when Tab is pressed.
_innops_sandboxes() {
    local root=${INNOPS_SANDBOX_DIR:-$HOME/.local/share/innops/sandboxes} i
    for (( i = 1; i < ${#words}; i++ )); do
        case ${words[i]} in
            --sandbox-root) root=${words[i+1]} ;;
            --sandbox-root=*) root=${words[i]#--sandbox-root=} ;;
        esac
    done
    local -a names
    names=( ${root}/*/sandbox.json(N:h:t) )
    compadd -a names
}
"#;

fn with_zsh_values(clap: &str) -> String {
    let head = "autoload -U is-at-least\n";
    let text = clap.replacen(head, &format!("{head}{ZSH_VALUES}"), 1);
    let text = text
        .replace(":SANDBOX:_default'", ":SANDBOX:_innops_sandboxes'")
        .replace(":PRIMARY:_default'", ":PRIMARY:_innops_sandboxes'")
        .replace("':sandbox:_default'", "':sandbox:_innops_sandboxes'")
        .replace(":WORKLOAD:_default'", ":WORKLOAD:(@WORKLOADS@)'");
    // bench's first word: a workload or a command, in either order.
    text.lines()
        .map(|l| match l.strip_suffix(":_default' \\") {
            Some(spec) if l.starts_with("':first -- ") => {
                format!("{spec}:(@WORKLOADS@ prepare run cleanup help)' \\")
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

const FISH_VALUES: &str = r#"
# innops: the sandboxes under the sandbox root, known only when Tab is pressed, and bench's workloads.
function __innops_sandboxes
    set -l root $INNOPS_SANDBOX_DIR
    set -l tokens (commandline -opc)
    for i in (seq (count $tokens))
        switch $tokens[$i]
            case --sandbox-root
                set -l next (math $i + 1)
                test $next -le (count $tokens); and set root $tokens[$next]
            case '--sandbox-root=*'
                set root (string replace -- '--sandbox-root=' '' $tokens[$i])
        end
    end
    test -n "$root"; or set root $HOME/.local/share/innops/sandboxes
    for f in $root/*/sandbox.json
        basename (dirname $f)
    end
end
complete -c innops -l sandbox -x -a "(__innops_sandboxes)"
complete -c innops -n "__fish_seen_subcommand_from up" -l replica-of -x -a "(__innops_sandboxes)"
complete -c innops -n "__fish_seen_subcommand_from sandbox; and __fish_seen_subcommand_from stop start down" -f -a "(__innops_sandboxes)"
complete -c innops -n "__fish_seen_subcommand_from bench" -l workload -x -a "@WORKLOADS@"
complete -c innops -n "__fish_seen_subcommand_from bench; and not __fish_seen_subcommand_from @WORKLOADS@" -f -a "@WORKLOADS@"
complete -c innops -n "__fish_seen_subcommand_from bench" -f -a "prepare run cleanup help"
"#;

pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    std::io::stdout()
        .lock()
        .write_all(&completion_script(shell))?;
    Ok(())
}

pub fn man() -> anyhow::Result<()> {
    std::io::stdout()
        .lock()
        .write_all(&super::man::man_page())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap_complete::Shell;

    #[test]
    fn completions_name_every_subcommand_in_each_shell() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let text = String::from_utf8(completion_script(shell)).unwrap();
            for sub in [
                "inspect", "redo", "convert", "resume", "sandbox", "drill", "bench", "runs",
            ] {
                assert!(text.contains(sub), "{shell:?} completion lacks {sub}");
            }
            // bash and zsh spell flags --execute; fish writes `-l execute`.
            assert!(text.contains("execute"), "{shell:?} completion lacks flags");
            assert!(
                text.contains("table-size"),
                "{shell:?} completion lacks bench's flags"
            );
        }
    }

    #[test]
    fn bash_accepts_the_bash_completion() {
        let Ok(out) = std::process::Command::new("bash")
            .args(["-n", "-c"])
            .arg(String::from_utf8(completion_script(Shell::Bash)).unwrap())
            .output()
        else {
            panic!("bash is needed to check the bash completion");
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A sandbox root with sandboxes `alpha` and `beta` as `sandbox up` leaves them (their sandbox.json), and
    /// `stray`, a directory that is no sandbox.
    fn two_sandboxes() -> tempfile::TempDir {
        use crate::server::sandbox::{Sandbox, ServerKind};
        let root = tempfile::tempdir().unwrap();
        for name in ["alpha", "beta"] {
            let dir = root.path().join(name);
            std::fs::create_dir_all(&dir).unwrap();
            let sb = Sandbox {
                name: name.into(),
                dir: dir.clone(),
                datadir: dir.join("data"),
                socket: dir.join("mysqld.sock"),
                port: 3307,
                pid_file: dir.join("mysqld.pid"),
                error_log: dir.join("error.log"),
                option_file: dir.join("my.cnf"),
                conf_dir: dir.join("conf.d"),
                binary: "/usr/sbin/mariadbd".into(),
                kind: ServerKind::MariaDB,
                client_file: None,
                fixed_port: false,
            };
            std::fs::write(
                dir.join("sandbox.json"),
                serde_json::to_string(&sb).unwrap(),
            )
            .unwrap();
        }
        std::fs::create_dir_all(root.path().join("stray")).unwrap();
        let listed: Vec<String> = Sandbox::list(root.path())
            .unwrap()
            .into_iter()
            .map(|s| s.sandbox.name)
            .collect();
        assert_eq!(
            listed,
            ["alpha", "beta"],
            "innops itself sees two sandboxes"
        );
        root
    }

    /// The candidates bash's completion offers for each command line (the word under the cursor last), with
    /// `INNOPS_SANDBOX_DIR` set to `root` (None: unset) and HOME in a directory of its own.
    fn bash_candidates(root: Option<&std::path::Path>, lines: &[&[&str]]) -> Vec<Vec<String>> {
        let mut script = String::from_utf8(completion_script(Shell::Bash)).unwrap();
        script.push_str(
            r#"
drive() {
    COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
    _innops_values innops "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf '%s\n' "${COMPREPLY[*]}"
}
"#,
        );
        for words in lines {
            let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
            script.push_str(&format!("drive innops {}\n", quoted.join(" ")));
        }
        let home = tempfile::tempdir().unwrap();
        let mut cmd = std::process::Command::new("bash");
        cmd.arg("-c").arg(&script).env("HOME", home.path());
        match root {
            Some(r) => cmd.env("INNOPS_SANDBOX_DIR", r),
            None => cmd.env_remove("INNOPS_SANDBOX_DIR"),
        };
        let out = cmd.output().expect("bash runs the completion");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let got: Vec<Vec<String>> = text
            .lines()
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect();
        assert_eq!(got.len(), lines.len(), "{text}");
        got
    }

    #[test]
    fn bash_completes_the_names_of_the_sandboxes_in_the_sandbox_root() {
        let root = two_sandboxes();
        let r = root.path().display().to_string();
        let got = bash_candidates(
            Some(root.path()),
            &[
                &["sandbox", "stop", ""],
                &["sandbox", "down", "b"],
                &["convert", "--sandbox", ""],
                &["sandbox", "up", "gamma", "--replica-of", "al"],
                &["sandbox", "--format", "json", "start", ""],
            ],
        );
        assert_eq!(got[0], ["alpha", "beta"]);
        assert_eq!(got[1], ["beta"]);
        assert_eq!(got[2], ["alpha", "beta"]);
        assert_eq!(got[3], ["alpha"]);
        assert_eq!(got[4], ["alpha", "beta"]);
        // --sandbox-root on the line wins over the environment, as it does for innops.
        let got = bash_candidates(
            None,
            &[
                &["sandbox", "--sandbox-root", &r, "stop", ""],
                &["redo", &format!("--sandbox-root={r}"), "--sandbox", ""],
                &["sandbox", "stop", ""],
            ],
        );
        assert_eq!(got[0], ["alpha", "beta"]);
        assert_eq!(got[1], ["alpha", "beta"]);
        assert!(
            !got[2].iter().any(|c| c == "alpha" || c == "beta"),
            "the default root (in an empty HOME) has none: {:?}",
            got[2]
        );
    }

    #[test]
    fn bash_completes_workloads_strategies_and_every_value_list() {
        let got = bash_candidates(
            None,
            &[
                &["bench", ""],
                &["bench", "oltp_p"],
                &["bench", "oltp_read_write", "c"],
                &["bench", "--workload", "select"],
                &["convert", "--strategy", ""],
                &["convert", "--verify", "h"],
                &["bench", "run", "--rand-type", ""],
                &["inspect", "--ssl-mode", "V"],
                &["runs", "--format", ""],
            ],
        );
        let workloads = crate::bench::workloads::SYSBENCH_NAMES;
        assert_eq!(got[0].len(), workloads.len() + 4, "{:?}", got[0]);
        assert!(workloads.iter().all(|w| got[0].contains(&w.to_string())));
        assert!(got[0].contains(&"prepare".to_string()));
        assert_eq!(got[1], ["oltp_point_select"]);
        assert_eq!(got[2], ["cleanup"]);
        assert_eq!(got[3], ["select_random_points", "select_random_ranges"]);
        assert_eq!(
            got[4],
            ["auto", "bulk", "deferred", "chunked", "online", "alter"]
        );
        assert_eq!(got[5], ["hash"]);
        assert_eq!(
            got[6],
            ["special", "uniform", "gaussian", "pareto", "zipfian"]
        );
        assert_eq!(got[7], ["VERIFY_CA", "VERIFY_IDENTITY"]);
        assert_eq!(got[8], ["text", "json"]);
    }

    /// The shell's path, or None with the reason the test skips said on stderr.
    fn shell(name: &str) -> Option<()> {
        let found = std::process::Command::new(name)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            eprintln!("skipped: {name} is not installed (apt-get install {name}), so its completion is not checked");
        }
        found.then_some(())
    }

    #[test]
    fn zsh_and_fish_read_their_scripts_and_fish_completes_sandboxes() {
        for (name, sh) in [("zsh", Shell::Zsh), ("fish", Shell::Fish)] {
            if shell(name).is_none() {
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join(format!("innops.{name}"));
            std::fs::write(&file, completion_script(sh)).unwrap();
            let out = std::process::Command::new(name)
                .arg("-n")
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                out.status.success() && out.stderr.is_empty(),
                "{name} -n: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if name != "fish" {
                continue;
            }
            let root = two_sandboxes();
            let out = std::process::Command::new("fish")
                .arg("--no-config")
                .arg("-c")
                .arg(format!(
                    "source {}; complete -C 'innops sandbox stop '; echo SPLIT; complete -C 'innops bench oltp_read_w'",
                    file.display()
                ))
                .env("INNOPS_SANDBOX_DIR", root.path())
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let (stop, bench) = text
                .split_once("SPLIT\n")
                .unwrap_or_else(|| panic!("{text}"));
            let first = |s: &str| -> Vec<String> {
                s.lines()
                    .map(|l| l.split('\t').next().unwrap().to_string())
                    .collect()
            };
            assert_eq!(first(stop), ["alpha", "beta"], "{text}");
            assert_eq!(first(bench), ["oltp_read_write"], "{text}");
        }
    }
}
