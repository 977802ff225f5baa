//! `innops completions SHELL` and `innops man` (its page is written by `man.rs`): generated from the clap
//! definition, so they always list the commands and flags this binary has.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;

/// The completion script for `shell`, as text.
pub fn completion_script(shell: clap_complete::Shell) -> Vec<u8> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "innops", &mut out);
    out
}

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
}
