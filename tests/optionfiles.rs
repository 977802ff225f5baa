//! innops reads option files as MariaDB does: for every file of a corpus of tricky option files
//! (`tests/fixtures/optionfiles/`), innops's reading of a set of groups prints exactly what the real
//! `my_print_defaults` prints for the same groups — the server's groups (with the running version's
//! `[mysqld-X.Y]`/`[mariadb-X.Y]` groups, and with a group suffix) and the client groups — and a file the
//! server cannot read is one innops refuses.

use std::path::{Path, PathBuf};
use std::process::Command;

use innops::server::optionfile;

const SUFFIX: &str = "_prod";

/// The corpus copied into a temporary directory, `@DIR@` replaced by its path (includes name absolute
/// paths), and the files named `*ww.*` made world-writable (git keeps no such mode). Returns the top-level
/// files, sorted.
fn corpus() -> (tempfile::TempDir, Vec<PathBuf>) {
    use std::os::unix::fs::PermissionsExt;
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/optionfiles");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    fn copy(from: &Path, to: &Path, root: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &target, root);
                continue;
            }
            let bytes = std::fs::read(e.path()).unwrap();
            let text = replace(&bytes, b"@DIR@", root.to_str().unwrap().as_bytes());
            std::fs::write(&target, text).unwrap();
            let name = e.file_name().to_string_lossy().to_string();
            let mode = if name.contains("ww.") { 0o666 } else { 0o644 };
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    copy(&src, &root, &root);
    let mut top: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cnf"))
        .collect();
    top.sort();
    (dir, top)
}

fn replace(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < hay.len() {
        if hay[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(hay[i]);
            i += 1;
        }
    }
    out
}

/// What `my_print_defaults` prints for `file` and `args`, run in the file's directory; `None` when it fails.
fn my_print_defaults(file: &Path, args: &[&str], env_suffix: Option<&str>) -> Option<String> {
    let mut c = Command::new("my_print_defaults");
    c.arg(format!("--defaults-file={}", file.display()))
        .args(args)
        .current_dir(file.parent().unwrap())
        .env_remove("MYSQL_GROUP_SUFFIX");
    if let Some(s) = env_suffix {
        c.env("MYSQL_GROUP_SUFFIX", s);
    }
    let out = c
        .output()
        .expect("run my_print_defaults (MariaDB's client package)");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// innops's reading of `file` for `groups`, printed as `my_print_defaults` prints; `None` when it refuses.
fn innops_prints(file: &Path, groups: &[String]) -> Option<String> {
    let set = optionfile::read(file).ok()?;
    Some(
        set.printed(groups)
            .iter()
            .map(|l| format!("{l}\n"))
            .collect(),
    )
}

fn server_version() -> String {
    let out = Command::new("mariadbd").arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    text.split_whitespace()
        .skip_while(|w| *w != "Ver")
        .nth(1)
        .expect("mariadbd --version names a version")
        .to_string()
}

#[test]
fn every_corpus_file_reads_as_my_print_defaults_prints_it() {
    let (_dir, files) = corpus();
    assert!(files.len() >= 30, "the corpus has {} files", files.len());
    let version = server_version();
    let mut client: Vec<String> = optionfile::client_groups(None);
    client.push("mysql".into());
    let mut client_sfx = optionfile::with_suffix(&client, Some(SUFFIX));
    client_sfx.dedup();
    let client_args: Vec<&str> = client.iter().map(String::as_str).collect();
    let sfx_arg = format!("--defaults-group-suffix={SUFFIX}");
    let cases: Vec<(&str, Vec<&str>, Option<&str>, Vec<String>)> = vec![
        (
            "server",
            vec!["--mysqld"],
            None,
            optionfile::server_groups(Some(&version), None),
        ),
        (
            "server with --defaults-group-suffix",
            vec![sfx_arg.as_str(), "--mysqld"],
            None,
            optionfile::server_groups(Some(&version), Some(SUFFIX)),
        ),
        ("client", client_args.clone(), None, client.clone()),
        (
            "client with MYSQL_GROUP_SUFFIX",
            client_args.clone(),
            Some(SUFFIX),
            client_sfx,
        ),
    ];
    let mut mismatches = Vec::new();
    let mut matched = 0;
    for file in &files {
        let mut same = true;
        for (what, args, env, groups) in &cases {
            let theirs = my_print_defaults(file, args, *env);
            let ours = innops_prints(file, groups);
            if theirs != ours {
                same = false;
                mismatches.push(format!(
                    "{} ({what}):\n  my_print_defaults: {theirs:?}\n  innops:            {ours:?}",
                    file.file_name().unwrap().to_string_lossy()
                ));
            }
        }
        matched += usize::from(same);
    }
    eprintln!(
        "{matched} of {} corpus files read as my_print_defaults reads them",
        files.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
