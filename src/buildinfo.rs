//! What `innops --version` says about the build: the package version and the git commit it was built from, so
//! that a DBA holding a binary copied to a host (or installed from a package) can tell which source it is.
//!
//! This file is compiled twice: by `build.rs` (`#[path]`), which asks git and passes the line to the crate as
//! `INNOPS_VERSION`, and as a module of the library, where its unit tests run. It therefore uses `std` only.
//! Git is asked only when the crate's own directory is the top of the work tree: a tarball unpacked inside
//! some other repository (a distribution's packaging tree) would otherwise be stamped with that repository's
//! commit. Without git the commit is `unknown`, and `INNOPS_COMMIT` set by a packager wins over both.

/// What the commit is called when it cannot be known (a build from a tarball, or git missing).
pub const UNKNOWN: &str = "unknown";

/// The commit to name: `override_commit` (a packager's `INNOPS_COMMIT`) if set and not empty; else git's
/// short HEAD, if git's work tree is `manifest_dir` itself and the output looks like a commit id; else
/// [`UNKNOWN`].
pub fn commit_for(
    override_commit: Option<&str>,
    toplevel: Option<&str>,
    manifest_dir: &str,
    short_head: Option<&str>,
) -> String {
    if let Some(c) = override_commit.map(str::trim).filter(|c| !c.is_empty()) {
        return c.to_string();
    }
    let ours = toplevel.is_some_and(|t| same_dir(t.trim(), manifest_dir));
    match short_head.map(str::trim) {
        Some(h) if ours && is_commit_id(h) => h.to_string(),
        _ => UNKNOWN.to_string(),
    }
}

/// The line `innops --version` prints after the program name: `0.1.0 (commit 1b19568)`.
pub fn version_line(pkg_version: &str, commit: &str) -> String {
    format!("{pkg_version} (commit {commit})")
}

/// A (short or full) hexadecimal commit id, as `git rev-parse --short HEAD` prints one.
fn is_commit_id(s: &str) -> bool {
    (4..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn same_dir(a: &str, b: &str) -> bool {
    let canon = |p: &str| std::fs::canonicalize(p).unwrap_or_else(|_| p.into());
    canon(a.trim_end_matches('/')) == canon(b.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_short_head_of_our_own_tree_is_the_commit() {
        let dir = env!("CARGO_MANIFEST_DIR");
        assert_eq!(
            commit_for(None, Some(&format!("{dir}\n")), dir, Some("1b19568\n")),
            "1b19568"
        );
    }

    #[test]
    fn no_git_or_git_failing_is_unknown() {
        let dir = env!("CARGO_MANIFEST_DIR");
        assert_eq!(commit_for(None, None, dir, None), "unknown");
        // git ran but printed something that is no commit (an unborn branch prints "HEAD").
        assert_eq!(commit_for(None, Some(dir), dir, Some("HEAD")), "unknown");
        assert_eq!(commit_for(None, Some(dir), dir, Some("")), "unknown");
    }

    #[test]
    fn a_tarball_inside_another_repository_does_not_take_its_commit() {
        let dir = env!("CARGO_MANIFEST_DIR");
        let outer = std::path::Path::new(dir)
            .parent()
            .unwrap()
            .display()
            .to_string();
        assert_eq!(
            commit_for(None, Some(&outer), dir, Some("abcdef1")),
            "unknown"
        );
    }

    #[test]
    fn a_packagers_commit_wins_unless_empty() {
        let dir = env!("CARGO_MANIFEST_DIR");
        assert_eq!(commit_for(Some("deadbee"), None, dir, None), "deadbee");
        assert_eq!(
            commit_for(Some(" "), Some(dir), dir, Some("1b19568")),
            "1b19568"
        );
    }

    #[test]
    fn the_version_line_names_version_and_commit() {
        assert_eq!(version_line("0.1.0", "1b19568"), "0.1.0 (commit 1b19568)");
        assert_eq!(version_line("0.1.0", UNKNOWN), "0.1.0 (commit unknown)");
    }
}
