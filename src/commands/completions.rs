//! `innops completions SHELL` and `innops man`: generated from the clap definition, so they always list the
//! commands and flags this binary has.

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

/// The man page (roff) of innops and its subcommands, one after another.
pub fn man_page() -> anyhow::Result<Vec<u8>> {
    let mut cmd = Cli::command();
    // Built, so that each subcommand carries what it inherits (no -h help flag: -h is the host).
    cmd.build();
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut out)?;
    // The top page lists the subcommands; each one's flags follow as their own sections.
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        // clap names are &'static str without its "string" feature; the process prints and ends.
        let name: &'static str = Box::leak(format!("innops-{}", sub.get_name()).into_boxed_str());
        let sub = sub.clone().name(name).bin_name(name);
        let mut page = Vec::new();
        clap_mangen::Man::new(sub).render(&mut page)?;
        out.extend_from_slice(&page);
    }
    Ok(out)
}

pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    std::io::stdout()
        .lock()
        .write_all(&completion_script(shell))?;
    Ok(())
}

pub fn man() -> anyhow::Result<()> {
    std::io::stdout().lock().write_all(&man_page()?)?;
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

    #[test]
    fn the_man_page_is_roff_with_every_subcommand_and_its_flags() {
        let text = String::from_utf8(man_page().unwrap()).unwrap();
        assert!(
            text.starts_with(".ie") || text.contains(".TH innops"),
            "{}",
            &text[..200.min(text.len())]
        );
        for sub in [
            "innops-convert",
            "innops-bench",
            "innops-runs",
            "innops-sandbox",
        ] {
            assert!(text.contains(&format!(".TH {sub}")), "no page for {sub}");
        }
        assert!(
            text.contains("drop\\-old\\-table"),
            "convert's flags are on the page"
        );
    }
}
