//! `make dist`'s output: the portable binary and the .deb and .rpm that install it (issue 28).
//!
//! The tests that read target/dist/ are `#[ignore]`d: the zig build that makes it is slower than the whole rest of
//! the suite's build, so `make test` leaves it out and `make dist-test` builds it and runs them
//! (`--run-ignored only`). The deb test installs the package on this machine with dpkg and removes it again, as
//! root: it refuses to start where innops is already installed, rather than replace someone's copy.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::Sandboxed;
use crate::fleet::{ansible_command, run as run_ansible, Run};

/// The files `make dist` installs, whichever the package.
const INSTALLED: &[&str] = &[
    "/usr/bin/innops",
    "/usr/share/man/man1/innops.1.gz",
    "/usr/share/bash-completion/completions/innops",
    "/usr/share/zsh/vendor-completions/_innops",
    "/usr/share/fish/vendor_completions.d/innops.fish",
    "/usr/share/innops/playbooks/staging-drill.toml",
    "/usr/share/innops/playbooks/ansible/collections/ansible_collections/innops/dba/plugins/modules/innops.py",
    "/usr/share/doc/innops/README.md",
    "/usr/share/doc/innops/docs/fleet.md",
];

/// The highest `GLIBC_x.y[.z]` symbol version in `objdump -T` output, as numbers; None if it names none.
pub fn max_glibc(objdump: &str) -> Option<Vec<u32>> {
    objdump
        .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
        .filter_map(|w| w.strip_prefix("GLIBC_"))
        .filter_map(|v| v.split('.').map(|n| n.parse().ok()).collect())
        .max()
}

/// The regular files and symlinks of a `dpkg -c` listing, as absolute paths (directories left out).
pub fn deb_files(listing: &str) -> BTreeSet<String> {
    listing
        .lines()
        .filter(|l| !l.starts_with('d'))
        .filter_map(|l| l.split_whitespace().nth(5))
        .map(|p| p.trim_start_matches('.').to_string())
        .collect()
}

fn dist_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/dist")
}

/// The one file in target/dist/ whose name ends with `ext`.
fn package(ext: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dist_dir())
        .unwrap_or_else(|e| panic!("cannot read target/dist ({e}): run make dist-test"))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "target/dist should hold one {ext}: run make dist"
    );
    found.into_iter().next().unwrap()
}

fn portable() -> PathBuf {
    let bin = dist_dir().join("innops");
    assert!(bin.is_file(), "no {}: run make dist-test", bin.display());
    bin
}

/// Run a program; the test fails unless it exits 0. Its stdout.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} ({e}): make dist-test installs it"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn max_glibc_reads_the_highest_symbol_version() {
    let objdump = "\
0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.2.5) memcpy
0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.17) clock_gettime
0000000000000000  w   DF *UND*  0000000000000000 (GLIBC_2.3.2) pthread_cond_wait
0000000000000000      DF *UND*  0000000000000000  GLIBC_2.14  memcpy
0000000000000000  w   D  *UND*  0000000000000000  Base        __gmon_start__
";
    assert_eq!(max_glibc(objdump), Some(vec![2, 17]));
    // 2.34 is higher than 2.4 and 2.17: numbers, not text, are compared.
    assert_eq!(
        max_glibc("(GLIBC_2.4) a\n(GLIBC_2.34) b\n(GLIBC_2.17) c"),
        Some(vec![2, 34])
    );
    assert_eq!(max_glibc("(GLIBC_PRIVATE) x\n(GCC_3.0) y"), None);
}

#[test]
fn deb_files_lists_files_not_directories() {
    let listing = "\
drwxr-xr-x 0/0               0 2026-12-03 09:00 ./usr/bin/
-rwxr-xr-x 0/0         9000000 2026-12-03 09:00 ./usr/bin/innops
-rw-r--r-- 0/0            1200 2026-12-03 09:00 ./usr/share/doc/innops/README.md
";
    let files: Vec<String> = deb_files(listing).into_iter().collect();
    assert_eq!(
        files,
        ["/usr/bin/innops", "/usr/share/doc/innops/README.md"]
    );
}

#[test]
#[ignore = "needs make dist's output: run make dist-test"]
fn portable_binary_needs_at_most_glibc_2_17_and_only_libc() {
    let bin = portable();
    let symbols = run("objdump", &["-T", bin.to_str().unwrap()]);
    let max = max_glibc(&symbols).expect("the binary has GLIBC symbol versions");
    assert!(
        max <= vec![2, 17],
        "the portable binary needs GLIBC_{max:?}, above 2.17"
    );
    // Only glibc's own libraries (and libgcc_s, which every glibc system has): no OpenSSL, no libstdc++.
    let headers = run("objdump", &["-p", bin.to_str().unwrap()]);
    let allowed = [
        "libc.so.6",
        "libm.so.6",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "libutil.so.1",
        "ld-linux-x86-64.so.2",
        "libgcc_s.so.1",
    ];
    let needed: Vec<&str> = headers
        .lines()
        .filter_map(|l| l.trim().strip_prefix("NEEDED"))
        .map(str::trim)
        .collect();
    assert!(needed.contains(&"libc.so.6"), "{needed:?}");
    assert!(
        needed.iter().all(|n| allowed.contains(n)),
        "the portable binary needs {needed:?}"
    );
}

#[test]
#[ignore = "needs make dist's output: run make dist-test"]
fn portable_binary_says_its_commit_and_plans_on_a_sandbox() {
    let bin = portable();
    let head = run("git", &["rev-parse", "--short", "HEAD"]);
    let version = run(bin.to_str().unwrap(), &["--version"]);
    assert_eq!(
        version.trim(),
        format!(
            "innops {} (commit {})",
            env!("CARGO_PKG_VERSION"),
            head.trim()
        )
    );
    let sb = Sandboxed::new("dist");
    let root = sb.root.display().to_string();
    let out = Command::new(&bin)
        .args(["redo", "--size", "128M", "--format", "json"])
        .args(["--sandbox", &sb.sandbox.name, "--sandbox-root", &root])
        .env_remove("INNOPS_SANDBOX_DIR")
        .output()
        .expect("run the portable binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("a JSON report");
    assert_eq!(report["status"], "dry_run", "{report}");
    let pre = report["steps"][0]["pre"].as_array().unwrap();
    assert!(
        !pre.is_empty() && pre.iter().all(|v| v["passed"] == true),
        "{report}"
    );
}

#[test]
#[ignore = "needs make dist's output: run make dist-test"]
fn rpm_installs_the_same_files_as_the_deb() {
    let deb = package(".deb");
    let rpm = package(".rpm");
    let deb_list = deb_files(&run("dpkg", &["-c", deb.to_str().unwrap()]));
    let rpm_list: BTreeSet<String> = run("rpm", &["-qpl", rpm.to_str().unwrap()])
        .lines()
        .map(str::to_string)
        .collect();
    // Debian policy's copyright file, which cargo-deb writes; an rpm carries its licence in its header.
    let mut deb_only = deb_list.clone();
    deb_only.remove("/usr/share/doc/innops/copyright");
    assert_eq!(deb_only, rpm_list);
    for f in INSTALLED {
        assert!(deb_list.contains(*f), "the .deb lacks {f}: {deb_list:?}");
    }
    let recommends = run("dpkg-deb", &["-f", deb.to_str().unwrap(), "Recommends"]);
    assert!(recommends.contains("mariadb-client"), "{recommends}");
    let rpm_recommends = run("rpm", &["-qp", "--recommends", rpm.to_str().unwrap()]);
    assert_eq!(rpm_recommends.trim(), "mariadb");
    // CentOS 7's rpm 4.11 installs neither a zstd payload nor rich dependencies.
    let requires = run("rpm", &["-qp", "--requires", rpm.to_str().unwrap()]);
    assert!(
        !requires.contains("PayloadIsZstd") && !requires.contains("RichDependencies"),
        "{requires}"
    );
    assert!(
        requires.contains("libc.so.6(GLIBC_2.17)(64bit)"),
        "{requires}"
    );
    let depends = run("dpkg-deb", &["-f", deb.to_str().unwrap(), "Depends"]);
    assert_eq!(depends.trim(), "libc6 (>= 2.17)");
}

/// The .deb by hand, then install.yml with the package and with the portable binary, each removed again. One
/// test, because the three install the same package on this machine and must not overlap.
#[test]
#[ignore = "needs make dist's output: run make dist-test"]
fn deb_installs_man_page_and_bash_completion_and_removes_cleanly() {
    let deb = package(".deb");
    let installed = Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", "innops"])
        .output()
        .expect("dpkg-query");
    assert!(
        !String::from_utf8_lossy(&installed.stdout).contains(" installed"),
        "innops is already installed from a package here: remove it (dpkg -r innops) before make dist-test"
    );
    for bin in ["/usr/bin/innops", "/usr/local/bin/innops"] {
        assert!(
            !Path::new(bin).exists(),
            "{bin} exists outside a package: move it away before make dist-test"
        );
    }
    let files = deb_files(&run("dpkg", &["-c", deb.to_str().unwrap()]));
    run("dpkg", &["-i", deb.to_str().unwrap()]);
    let checks = std::panic::catch_unwind(check_installed);
    remove_package(&files);
    if let Err(e) = checks {
        std::panic::resume_unwind(e);
    }

    // install.yml, as docs/fleet.md runs it, on this machine as the one host.
    let tmp = tempfile::tempdir().unwrap();
    let sb = Sandboxed::new("distplay");
    let play = install_play(tmp.path(), &[]);
    let checks = std::panic::catch_unwind(|| {
        assert_eq!(play.code, 0, "{play:?}");
        assert!(play.stdout.contains("innops 0.1.0 (commit "), "{play:?}");
        let copy = Path::new("/var/tmp").join(deb.file_name().unwrap());
        assert!(!copy.exists(), "install.yml left {}", copy.display());
        module_finds_the_packaged_binary(tmp.path(), &sb)
    });
    remove_package(&files);
    if let Err(e) = checks {
        std::panic::resume_unwind(e);
    }

    let play = install_play(tmp.path(), &["-e", "innops_install=binary"]);
    let copied = std::fs::read("/usr/local/bin/innops");
    let _ = std::fs::remove_file("/usr/local/bin/innops");
    assert_eq!(play.code, 0, "{play:?}");
    assert!(
        copied.ok() == std::fs::read(portable()).ok(),
        "install.yml -e innops_install=binary did not copy target/dist/innops to /usr/local/bin: {play:?}"
    );
}

/// `dpkg -r innops`; the test fails if a file of the package is left.
fn remove_package(files: &BTreeSet<String>) {
    run("dpkg", &["-r", "innops"]);
    let left: Vec<&String> = files.iter().filter(|f| Path::new(f).exists()).collect();
    assert!(left.is_empty(), "dpkg -r left {left:?}");
    for dir in ["/usr/share/innops", "/usr/share/doc/innops"] {
        assert!(!Path::new(dir).exists(), "dpkg -r left {dir}");
    }
}

/// Ansible's environment for a play on this machine: a fixed PATH, so that the innops found is the one installed.
fn ansible(program: &str, tmp: &Path) -> Command {
    let mut c = ansible_command(program, tmp);
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ansible-venv/bin");
    c.env(
        "PATH",
        format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", venv.display()),
    );
    c
}

fn inventory(tmp: &Path) -> PathBuf {
    let inv = tmp.join("inventory.ini");
    std::fs::write(
        &inv,
        "localhost ansible_connection=local ansible_python_interpreter={{ ansible_playbook_python }}\n",
    )
    .unwrap();
    inv
}

/// `ansible-playbook install.yml` on localhost (as root already, so without become), run directories in `tmp`.
fn install_play(tmp: &Path, extra: &[&str]) -> Run {
    let mut c = ansible("ansible-playbook", tmp);
    c.arg("-i").arg(inventory(tmp)).arg("install.yml");
    c.args(["-e", "innops_hosts=localhost", "-e", "ansible_become=false"]);
    c.arg("-e")
        .arg(format!("innops_chdir={}", tmp.join("runs").display()));
    c.args(extra);
    run_ansible(c)
}

/// The module without `binary`, as the plays run it: it finds the package's /usr/bin/innops.
fn module_finds_the_packaged_binary(tmp: &Path, sb: &Sandboxed) {
    let args = serde_json::json!({
        "procedure": "inspect",
        "sample": 0,
        "sandbox": sb.sandbox.name,
        "sandbox_root": sb.root.display().to_string(),
    });
    let mut c = ansible("ansible", tmp);
    c.arg("-i").arg(inventory(tmp)).arg("localhost");
    c.args(["-m", "innops.dba.innops", "-a"])
        .arg(args.to_string());
    let out = run_ansible(c);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("\"/usr/bin/innops\""), "{out:?}");
}

/// What the installed package must give a DBA: the binary on PATH, `man innops`, Tab completion in bash.
fn check_installed() {
    let version = run("innops", &["--version"]);
    assert!(version.starts_with("innops "), "{version}");
    assert_eq!(
        run("man", &["-w", "innops"]).trim(),
        "/usr/share/man/man1/innops.1.gz"
    );
    // bash-completion loads /usr/share/bash-completion/completions/innops on the first Tab after `innops`:
    // load it the same way, then complete `innops re`.
    let script = "source /usr/share/bash-completion/bash_completion || exit 9
__load_completion innops || exit 8
complete -p innops
COMP_WORDS=(innops re); COMP_CWORD=1; COMP_LINE='innops re'; COMP_POINT=9
_innops_values innops re innops
echo \"words: ${COMPREPLY[*]}\"";
    let out = run("bash", &["--norc", "-i", "-c", script]);
    assert!(
        out.contains("-F _innops_values innops"),
        "bash-completion did not load the innops completion: {out}"
    );
    let words = out.lines().find(|l| l.starts_with("words: ")).unwrap_or("");
    assert!(
        words.split_whitespace().any(|w| w == "redo"),
        "innops re<Tab> did not offer redo: {out}"
    );
}
