//! Stamps `innops --version` with the git commit (src/buildinfo.rs says how it is chosen) and tells cargo to
//! build again when HEAD moves, and only then: a build from a tarball, without git, still works and says
//! "commit unknown".

use std::path::Path;
use std::process::Command;

#[path = "src/buildinfo.rs"]
mod buildinfo;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let toplevel = git(&["rev-parse", "--show-toplevel"]);
    let over = std::env::var("INNOPS_COMMIT").ok();
    let commit = buildinfo::commit_for(
        over.as_deref(),
        toplevel.as_deref(),
        &manifest_dir,
        git(&["rev-parse", "--short", "HEAD"]).as_deref(),
    );
    let version = buildinfo::version_line(&std::env::var("CARGO_PKG_VERSION").unwrap(), &commit);
    println!("cargo:rustc-env=INNOPS_VERSION={version}");

    // Without these lines cargo would run this script again after any change in the package; with them,
    // only when HEAD or the branch it points to moves. In a linked work tree HEAD lives under
    // .git/worktrees/NAME and the branch under the common .git, so git names the files. A file that does not
    // exist is left out (cargo would rerun every build); packed-refs holds a branch whose file was packed.
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/buildinfo.rs");
    println!("cargo:rerun-if-env-changed=INNOPS_COMMIT");
    let from_git =
        over.as_deref().is_none_or(|c| c.trim().is_empty()) && commit != buildinfo::UNKNOWN;
    if !from_git {
        return;
    }
    let mut watch = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    watch.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(git(&["rev-parse", "--git-path", &branch]));
    }
    for path in watch.into_iter().flatten() {
        if Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}
