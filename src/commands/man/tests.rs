use super::*;

fn page() -> String {
    String::from_utf8(man_page()).unwrap()
}

/// The page's lines from `.SH NAME` up to the next `.SH`.
fn section(page: &str, name: &str) -> String {
    let head = if name.contains(' ') {
        format!(".SH \"{name}\"\n")
    } else {
        format!(".SH {name}\n")
    };
    let at = page
        .find(&head)
        .unwrap_or_else(|| panic!("no section {name}"));
    let rest = &page[at + head.len()..];
    rest[..rest.find("\n.SH ").map(|i| i + 1).unwrap_or(rest.len())].to_string()
}

/// A program's stderr and status, for a page written to a file.
fn render(program: &str, args: &[&str], page: &str) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("innops.1");
    std::fs::write(&file, page).unwrap();
    let out = std::process::Command::new(program)
        .args(args)
        .arg(&file)
        .env("MANWIDTH", "80")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .output()
        .unwrap_or_else(|e| panic!("{program} is needed to check the man page: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn man_and_groff_render_the_page_without_a_warning() {
    let page = page();
    let (ok, _, err) = render("groff", &["-man", "-ww", "-z"], &page);
    assert!(ok && err.is_empty(), "groff -ww: {err}");
    let (ok, text, err) = render("man", &["--warnings", "-l"], &page);
    assert!(ok && err.is_empty(), "man --warnings: {err}");
    for title in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "COMMANDS",
        "CONNECTION OPTIONS",
        "SERVER CONTROL OPTIONS",
        "RUN OPTIONS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "EXAMPLES",
        "SEE ALSO",
    ] {
        assert!(
            text.lines().any(|l| l.trim_end() == title),
            "{title} in the rendered page:\n{text}"
        );
    }
    assert!(text.contains("innops convert --all-myisam"), "{text}");
}

#[test]
fn every_command_is_under_commands_with_its_own_flags_and_the_groups_it_takes() {
    let page = page();
    let commands = section(&page, "COMMANDS");
    for words in [
        "inspect",
        "convert",
        "deadlock run",
        "deadlock parse",
        "sandbox up",
        "bench",
        "runs",
        "completions",
        "man",
    ] {
        assert!(
            commands.contains(&format!(".SS \"innops {}", esc(words))),
            "{words} under COMMANDS"
        );
    }
    assert!(
        commands.contains("drop\\-old\\-table"),
        "convert's own flags"
    );
    let convert = &commands[commands.find(".SS \"innops convert").unwrap()..];
    let convert = &convert[..convert[4..].find(".SS ").unwrap() + 4];
    assert!(
        convert.contains(
            "Takes all the CONNECTION OPTIONS; all the RUN OPTIONS; all the OUTPUT OPTIONS."
        ),
        "{convert}"
    );
    assert!(
        !convert.contains("SERVER CONTROL"),
        "convert never restarts: {convert}"
    );
    assert!(
        !convert.contains("\\-\\-socket"),
        "the connection flags are listed once: {convert}"
    );
    assert!(section(&page, "CONNECTION OPTIONS").contains("\\fB\\-\\-socket\\fR"));
    assert!(section(&page, "SERVER CONTROL OPTIONS").contains("\\fB\\-\\-service\\fR"));
    let recover = &commands[commands.find(".SS \"innops recover").unwrap()..];
    assert!(
        recover.contains("\\fB\\-\\-execute\\fR, \\fB\\-\\-dry\\-run\\fR, \\fB\\-\\-yes\\fR, \\fB\\-\\-run\\-dir\\fR of the RUN OPTIONS"),
        "recover takes no benchmark flag"
    );
}

#[test]
fn exit_status_lists_exactly_the_codes_of_src_error_rs() {
    let source = include_str!("../../error.rs");
    let declared: BTreeSet<i32> = source
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub const EXIT_"))
        .filter_map(|l| l.split_once(": i32 = "))
        .map(|(_, v)| v.trim_end_matches(';').parse().unwrap())
        .collect();
    assert_eq!(declared.len(), 6, "{declared:?}");
    let listed: BTreeSet<i32> = section(&page(), "EXIT STATUS")
        .lines()
        .filter_map(|l| l.strip_prefix("\\fB")?.strip_suffix("\\fR")?.parse().ok())
        .collect();
    assert_eq!(listed, declared);
}

/// Every `var("NAME")`/`var_os("NAME")` in src/ outside the test hooks, and every clap `env = "NAME"`.
fn variables_read(dir: &std::path::Path, out: &mut BTreeSet<String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            variables_read(&p, out);
            continue;
        }
        // The hooks only tests set, and this file's own examples of what it looks for.
        if p.extension().is_none_or(|x| x != "rs")
            || p.ends_with("testhooks.rs")
            || p.ends_with("man/tests.rs")
        {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for open in ["env::var(\"", "env::var_os(\"", "env = \""] {
            for part in text.split(open).skip(1) {
                let name: String = part
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                    .collect();
                if part[name.len()..].starts_with('"') && !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
}

#[test]
fn environment_lists_every_variable_innops_reads() {
    let mut read = BTreeSet::new();
    variables_read(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut read,
    );
    for expected in [
        "MYSQL_PWD",
        "INNOPS_SANDBOX_DIR",
        "NO_COLOR",
        "INNOPS_STATE_DIR",
        "HOME",
    ] {
        assert!(
            read.contains(expected),
            "the scan finds {expected}: {read:?}"
        );
    }
    let listed: BTreeSet<String> = ENVIRONMENT.iter().map(|(v, _)| v.to_string()).collect();
    let missing: Vec<&String> = read.difference(&listed).collect();
    assert!(missing.is_empty(), "not in ENVIRONMENT: {missing:?}");
    let env = section(&page(), "ENVIRONMENT");
    for v in &listed {
        assert!(env.contains(&bold(v)), "{v} on the page");
    }
    assert!(
        !env.contains("INNOPS_FAULT"),
        "test hooks stay off the page"
    );
}

#[test]
fn see_also_names_no_page_innops_does_not_install() {
    let page = page();
    assert_eq!(page.matches(".TH ").count(), 1, "one page");
    assert!(!page.contains("innops\\-convert"), "no innops-convert(1)");
    let see = section(&page, "SEE ALSO");
    for p in ["mariadbd", "sysbench", "pt\\-online\\-schema\\-change"] {
        assert!(see.contains(&format!("\\fB{p}\\fR(")), "{p} in {see}");
    }
    assert!(!see.contains("innops\\-"), "{see}");
}
