//! Option files (my.cnf): this module owns reading them the way the server does (groups, `!include`,
//! `!includedir`, the `loose-` prefix, quotes, escapes and `#` comments) and changing them safely. A change is
//! never an in-place edit: [`plan_change`] computes the new text of one file (a pure text edit that keeps
//! comments and unrelated lines), [`ConfigChange::diff`] shows it, [`ConfigChange::apply`] saves a backup and
//! writes the new text with an atomic rename, and [`ConfigChange::restore`] puts the old text back.
//! innops writes only its own drop-in file, found by [`choose_dropin`]. Reading is here; changing is in
//! [`change`].

mod change;

pub use change::*;

use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The name of innops's own drop-in file inside the server's `!includedir` directory.
pub const DROPIN_FILE_NAME: &str = "99-innops.cnf";

/// One `key[=value]` line, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionEntry {
    pub file: PathBuf,
    pub line: usize,
    /// Group name, lower-cased, without brackets (trailing whitespace inside the brackets removed, as the server
    /// does: `[client ]` is `client`, `[ client]` is not).
    pub group: String,
    /// Normalised name: lower-case, `-` → `_`, `loose_`/`loose-` prefix removed.
    pub key: String,
    /// Unquoted value with inline comments removed; `None` for a bare flag.
    pub value: Option<String>,
    pub loose: bool,
    /// The name exactly as written (what `my_print_defaults` prints after `--`).
    pub raw_key: String,
}

/// Everything read from one option file and the files it includes, in reading order.
#[derive(Debug, Clone, Default)]
pub struct OptionSet {
    pub entries: Vec<OptionEntry>,
    pub files: Vec<PathBuf>,
    pub include_dirs: Vec<PathBuf>,
    /// What the server would skip or stop at while reading, each one sentence: an `!include` that names no
    /// file, an included file with an error (read up to that line, as the server does), a world-writable file
    /// (ignored), a directive beyond the nesting limit.
    pub warnings: Vec<String>,
}

/// How deep `!include`/`!includedir` may nest; directives in a file this deep are skipped (MariaDB's limit).
const MAX_INCLUDE_DEPTH: usize = 10;
/// The server reads a file with `fgets` into a 4096-byte buffer: a longer line is read as several lines of at
/// most this many bytes.
const LINE_CHUNK: usize = 4094;

/// Whitespace as the server's option-file reader sees it (`my_isspace` of latin1): also `\v`, `\f` and the
/// byte 0xA0 (which is also the second byte of UTF-8 `à`, so a value ending in `à` loses that byte, as the
/// server's does).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0xa0)
}

fn trim_start(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|b| is_space(**b)).count();
    &s[n..]
}

fn trim_end(s: &[u8]) -> &[u8] {
    let n = s.iter().rev().take_while(|b| is_space(**b)).count();
    &s[..s.len() - n]
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Reads `path` and every file it includes, exactly as MariaDB's server and clients read option files (the
/// same entries `my_print_defaults` prints, in the same order; `tests/optionfiles.rs` compares them on a
/// corpus):
///
/// - a group header is `[name]`, matched without regard to case, with whitespace before `]` removed;
///   anything after `]` is ignored;
/// - `!include FILE` that names no readable file is skipped; `!includedir DIR` reads the files whose name ends
///   in `.cnf`, sorted by name; nesting stops at 10 levels (so an include cycle repeats until then, as in the
///   server);
/// - an error in an included file (an option before any group, a header without `]`, a missing
///   `!includedir`) stops reading that file and is a warning; the same error in `path` itself is an error;
/// - a world-writable file is ignored, with a warning;
/// - `#` ends the line outside quotes; one pair of matching quotes around a value is removed; `\n \t \r \b
///   \s \\ \" \'` are escapes; whitespace is latin1's, so a line ending in CRLF reads as without the CR.
///
/// One deliberate difference: a relative `!include`/`!includedir` path is taken relative to the including
/// file's directory (the server takes it relative to its working directory, which a tool cannot know).
pub fn read(path: &Path) -> anyhow::Result<OptionSet> {
    let mut set = OptionSet::default();
    if let Some(w) = world_writable(path) {
        set.warnings.push(w);
        return Ok(set);
    }
    let bytes = std::fs::read(path)
        .with_context(|| format!("cannot read option file {}", path.display()))?;
    read_bytes(path, &bytes, 0, &mut set)?;
    Ok(set)
}

/// `Some(warning)` when the server would skip `path` for being world-writable.
fn world_writable(path: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    (meta.is_file() && meta.permissions().mode() & 0o002 != 0).then(|| {
        format!(
            "{} is world-writable, so the server and its clients ignore it: chmod o-w it",
            path.display()
        )
    })
}

/// An included file: skipped when absent or unreadable (as the server does), its errors become warnings.
fn read_included(path: &Path, depth: usize, set: &mut OptionSet, from: &str) {
    if let Some(w) = world_writable(path) {
        set.warnings.push(w);
        return;
    }
    let bytes = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                set.warnings.push(format!(
                    "{from}: cannot read {} ({e}), skipped",
                    path.display()
                ));
                return;
            }
        },
        // A directory reads as an empty file.
        Ok(_) => return,
        Err(_) => {
            set.warnings.push(format!(
                "{from}: {} does not exist, skipped (as the server skips it)",
                path.display()
            ));
            return;
        }
    };
    if let Err(e) = read_bytes(path, &bytes, depth, set) {
        set.warnings.push(format!(
            "{from}: {}; the server stops reading that file there too",
            crate::error::display_of(&e)
        ));
    }
}

fn read_bytes(path: &Path, bytes: &[u8], depth: usize, set: &mut OptionSet) -> anyhow::Result<()> {
    set.files.push(path.to_path_buf());
    let base = path.parent().unwrap_or_else(|| Path::new(""));
    // Each file starts outside any group; the including file's group goes on after the include.
    let mut group: Option<String> = None;
    let mut line_no = 0;
    for full in bytes.split_inclusive(|b| *b == b'\n') {
        for chunk in full.chunks(LINE_CHUNK) {
            line_no += 1;
            // The server handles the line as a C string: a NUL ends it.
            let chunk = match chunk.iter().position(|b| *b == 0) {
                Some(n) => &chunk[..n],
                None => chunk,
            };
            let at = || format!("{} line {}", path.display(), line_no);
            let s = trim_start(chunk);
            match s.first() {
                None | Some(b'#') | Some(b';') => continue,
                Some(b'!') => {
                    if depth >= MAX_INCLUDE_DEPTH {
                        set.warnings.push(format!(
                            "{}: `{}` skipped, includes nest more than {MAX_INCLUDE_DEPTH} deep",
                            at(),
                            lossy(trim_end(s))
                        ));
                        continue;
                    }
                    let d = trim_start(&s[1..]);
                    if let Some(arg) = directive(d, b"includedir") {
                        let dir = base.join(directive_path(arg, "includedir", &at())?);
                        set.include_dirs.push(dir.clone());
                        let files = cnf_files_in(&dir).with_context(at)?;
                        for file in files {
                            read_included(&file, depth + 1, set, &at());
                        }
                    } else if let Some(arg) = directive(d, b"include") {
                        let file = base.join(directive_path(arg, "include", &at())?);
                        read_included(&file, depth + 1, set, &at());
                    }
                    // Any other `!` line is ignored.
                }
                Some(b'[') => {
                    let Some(end) = s.iter().position(|b| *b == b']') else {
                        bail!(
                            "{}: `{}` is not a group header (no `]`)",
                            at(),
                            lossy(trim_end(s))
                        );
                    };
                    group = Some(lossy(trim_end(&s[1..end])).to_ascii_lowercase());
                }
                Some(_) => {
                    let (raw_key, value) = option_line(s);
                    let Some(group) = &group else {
                        // The key only: the value may be a password.
                        bail!(
                            "{}: option `{}` comes before any [group]; the server refuses it too",
                            at(),
                            lossy(raw_key)
                        );
                    };
                    let raw_key = lossy(raw_key);
                    let (key, loose) = normalize_key(&raw_key);
                    set.entries.push(OptionEntry {
                        file: path.to_path_buf(),
                        line: line_no,
                        group: group.clone(),
                        key,
                        value: value.map(|v| lossy(&v)),
                        loose,
                        raw_key,
                    });
                }
            }
        }
    }
    Ok(())
}

/// `include /x` → the bytes after the keyword, when the keyword is followed by whitespace.
fn directive<'a>(d: &'a [u8], keyword: &[u8]) -> Option<&'a [u8]> {
    let after = d.strip_prefix(keyword)?;
    after.first().filter(|b| is_space(**b))?;
    Some(trim_start(after))
}

/// The path of a directive, cut as the server cuts it: the last byte of the line (its newline) goes, then
/// the whitespace before it; so on a last line without a newline the name loses its last character.
fn directive_path(arg: &[u8], keyword: &str, at: &str) -> anyhow::Result<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let mut end = arg.len().saturating_sub(1);
    while end > 0 && is_space(arg[end - 1]) {
        end -= 1;
    }
    if end == 0 {
        bail!("{at}: `!{keyword}` names no file");
    }
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(&arg[..end])))
}

/// The key as written and the value (unquoted, unescaped) of an option line that starts at its first
/// non-space byte.
fn option_line(s: &[u8]) -> (&[u8], Option<Vec<u8>>) {
    let s = &s[..comment_start_bytes(s).unwrap_or(s.len())];
    let Some(eq) = s.iter().position(|b| *b == b'=') else {
        return (trim_end(s), None);
    };
    let key = trim_end(&s[..eq]);
    let mut v = trim_end(trim_start(&s[eq + 1..]));
    if v.len() > 1 && matches!(v[0], b'"' | b'\'') && v[0] == v[v.len() - 1] {
        v = &v[1..v.len() - 1];
    }
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        if v[i] == b'\\' && i + 1 < v.len() {
            i += 1;
            match v[i] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'b' => out.push(0x08),
                b's' => out.push(b' '),
                b'"' => out.push(b'"'),
                b'\'' => out.push(b'\''),
                b'\\' => out.push(b'\\'),
                other => out.extend_from_slice(&[b'\\', other]),
            }
        } else {
            out.push(v[i]);
        }
        i += 1;
    }
    (key, Some(out))
}

/// Byte index of the `#` that starts a comment, outside quotes (a backslash escapes a quote only inside
/// quotes), counted from the start of the line as the server does.
fn comment_start_bytes(s: &[u8]) -> Option<usize> {
    let mut quote: Option<u8> = None;
    let mut escape = false;
    for (i, &c) in s.iter().enumerate() {
        if (c == b'\'' || c == b'"') && !escape {
            match quote {
                None => quote = Some(c),
                Some(q) if q == c => quote = None,
                Some(_) => {}
            }
        }
        if quote.is_none() && c == b'#' {
            return Some(i);
        }
        escape = quote.is_some() && c == b'\\' && !escape;
    }
    None
}

/// The files an `!includedir` reads: names ending in `.cnf` (case matters; `.cnf` alone counts), sorted by
/// name, as the server does on Unix. A name that is not a readable file (a directory, a dangling link) reads
/// as nothing.
fn cnf_files_in(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    use std::os::unix::ffi::OsStrExt;
    let listing = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read option directory {}", dir.display()))?;
    let mut names = Vec::new();
    for entry in listing {
        let entry =
            entry.with_context(|| format!("cannot read option directory {}", dir.display()))?;
        let name = entry.file_name();
        let b = name.as_bytes();
        let ext = b.iter().rposition(|c| *c == b'.').map(|i| &b[i..]);
        if ext == Some(b".cnf") {
            names.push(name);
        }
    }
    names.sort();
    Ok(names.into_iter().map(|n| dir.join(n)).collect())
}

impl OptionSet {
    /// The value the last line read that sets `key` (any spelling: `Key`, `key-name`, `loose-key`) in any of
    /// `groups` gives; a bare flag gives `Some("")`, an unset key `None`.
    pub fn get<G: AsRef<str>>(&self, groups: &[G], key: &str) -> Option<&str> {
        let (key, _) = normalize_key(key);
        self.entries
            .iter()
            .rev()
            .find(|e| e.key == key && in_groups(&e.group, groups))
            .map(|e| e.value.as_deref().unwrap_or(""))
    }

    /// Every key set in any of `groups`, with its effective value (last read wins; a bare flag is `""`).
    pub fn group_values<G: AsRef<str>>(&self, groups: &[G]) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for e in self.entries.iter().filter(|e| in_groups(&e.group, groups)) {
            out.insert(e.key.clone(), e.value.clone().unwrap_or_default());
        }
        out
    }

    /// The entries of `groups` as `my_print_defaults` prints them: `--key=value` (`--key` for a bare flag),
    /// the key as written, in reading order.
    pub fn printed<G: AsRef<str>>(&self, groups: &[G]) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| in_groups(&e.group, groups))
            .map(|e| match &e.value {
                Some(v) => format!("--{}={v}", e.raw_key),
                None => format!("--{}", e.raw_key),
            })
            .collect()
    }

    /// Appends another set read after this one (a later file's values win).
    pub fn extend(&mut self, other: OptionSet) {
        self.entries.extend(other.entries);
        self.files.extend(other.files);
        self.include_dirs.extend(other.include_dirs);
        self.warnings.extend(other.warnings);
    }
}

fn in_groups<G: AsRef<str>>(group: &str, groups: &[G]) -> bool {
    groups
        .iter()
        .any(|g| g.as_ref().eq_ignore_ascii_case(group))
}

/// The group suffix of `MYSQL_GROUP_SUFFIX` (what `--defaults-group-suffix` sets for the mysql tools), when set
/// and not empty.
pub fn group_suffix_from_env() -> Option<String> {
    std::env::var("MYSQL_GROUP_SUFFIX")
        .ok()
        .filter(|s| !s.is_empty())
}

/// `groups`, each followed by itself with `suffix` appended (`--defaults-group-suffix`).
pub fn with_suffix(groups: &[String], suffix: Option<&str>) -> Vec<String> {
    let mut out = groups.to_vec();
    if let Some(sfx) = suffix.filter(|s| !s.is_empty()) {
        out.extend(groups.iter().map(|g| format!("{g}{sfx}")));
    }
    out
}

/// The groups MariaDB's server reads (what `my_print_defaults --mysqld` prints): `mysqld`, `server`,
/// `mariadb`, `mariadbd`, the same three with `-X.Y` of the server's version when `version` is known
/// (`10.11.6-MariaDB-log` → `mysqld-10.11`, `mariadb-10.11`, `mariadbd-10.11`), `client-server` and `galera`;
/// each also with `suffix` appended when one is given.
pub fn server_groups(version: Option<&str>, suffix: Option<&str>) -> Vec<String> {
    let base = version.and_then(major_minor);
    let mut groups = vec!["mysqld".to_string(), "server".to_string()];
    for name in ["mysqld", "mariadb", "mariadbd"] {
        if name != "mysqld" {
            groups.push(name.to_string());
        }
        if let Some(b) = &base {
            groups.push(format!("{name}-{b}"));
        }
    }
    groups.push("client-server".into());
    groups.push("galera".into());
    with_suffix(&groups, suffix)
}

/// `10.11.6-MariaDB` → `10.11`.
fn major_minor(version: &str) -> Option<String> {
    let mut parts = version.trim().split(|c: char| !c.is_ascii_digit());
    let major = parts.next().filter(|p| !p.is_empty())?;
    let minor = parts.next().filter(|p| !p.is_empty())?;
    Some(format!("{major}.{minor}"))
}

/// The groups a MariaDB client program reads (libmariadb's `client`, `client-server`, `client-mariadb`),
/// each also with `suffix` appended.
pub fn client_groups(suffix: Option<&str>) -> Vec<String> {
    let groups: Vec<String> = ["client", "client-server", "client-mariadb"]
        .iter()
        .map(|g| g.to_string())
        .collect();
    with_suffix(&groups, suffix)
}

/// `Foo-Bar` → `foo_bar`; `loose-foo` / `loose_foo` → (`foo`, true).
fn normalize_key(key: &str) -> (String, bool) {
    let key = key.trim().to_lowercase().replace('-', "_");
    match key.strip_prefix("loose_") {
        Some(rest) if !rest.is_empty() => (rest.to_string(), true),
        _ => (key, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    pub(super) fn write(path: &Path, text: &str) {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(path, text).unwrap();
    }

    #[test]
    fn reads_groups_keys_loose_quotes_and_comments() {
        let dir = tempfile::tempdir().unwrap();
        let my = dir.path().join("my.cnf");
        write(
            &my,
            "# top comment\n\
             [MySQLD]\n\
             Innodb-Buffer-Pool-Size = 1G   # inline\n\
             loose-innodb_redo_log_capacity=2G\n\
             loose_Foo-Bar = 'q'\n\
             skip-name-resolve\n\
             ; semicolon comment\n\
             datadir = \"/var/lib/my sql\"  # quoted\n\
             hash = \"a # b\"\n\
             bare_hash = a#b\n\
             escapes = a\\sb\\\\c\\d\n\
             empty =\n\
             [client]\n\
             socket = /run/mysqld/mysqld.sock\n",
        );
        let set = read(&my).unwrap();
        assert_eq!(set.files, vec![my.clone()]);
        assert_eq!(set.get(&["mysqld"], "innodb_buffer_pool_size"), Some("1G"));
        assert_eq!(set.get(&["mysqld"], "INNODB-BUFFER-POOL-SIZE"), Some("1G"));
        let redo = set
            .entries
            .iter()
            .find(|e| e.key == "innodb_redo_log_capacity")
            .unwrap();
        assert!(redo.loose);
        assert_eq!(redo.value.as_deref(), Some("2G"));
        assert_eq!((redo.group.as_str(), redo.line), ("mysqld", 4));
        assert_eq!(set.get(&["mysqld"], "loose-foo-bar"), Some("q"));
        let flag = set
            .entries
            .iter()
            .find(|e| e.key == "skip_name_resolve")
            .unwrap();
        assert_eq!(flag.value, None);
        assert!(!flag.loose);
        assert_eq!(set.get(&["mysqld"], "skip_name_resolve"), Some(""));
        assert_eq!(set.get(&["mysqld"], "datadir"), Some("/var/lib/my sql"));
        assert_eq!(set.get(&["mysqld"], "hash"), Some("a # b"));
        // MariaDB 10.11's my_print_defaults prints `--bare_hash=a` for this line.
        assert_eq!(set.get(&["mysqld"], "bare_hash"), Some("a"));
        assert_eq!(set.get(&["mysqld"], "escapes"), Some("a b\\c\\d"));
        assert_eq!(set.get(&["mysqld"], "empty"), Some(""));
        assert_eq!(set.get(&["mysqld"], "socket"), None);
        assert_eq!(
            set.get(&["client", "mysqld"], "socket"),
            Some("/run/mysqld/mysqld.sock")
        );
        let client = set.group_values(&["CLIENT"]);
        assert_eq!(client.len(), 1);
        assert_eq!(client["socket"], "/run/mysqld/mysqld.sock");
        assert_eq!(set.group_values(&["mysqld"])["skip_name_resolve"], "");
    }

    #[test]
    fn includes_and_includedir_in_order_with_cnf_filter() {
        let dir = tempfile::tempdir().unwrap();
        let my = dir.path().join("my.cnf");
        // A relative !include, a relative !includedir, then an absolute one.
        let second = dir.path().join("second.d");
        write(
            &my,
            &format!(
                "[mysqld]\nmax_connections = 10\n!include extra/one.cnf\n!includedir conf.d\n!includedir {}\n",
                second.display()
            ),
        );
        write(
            &dir.path().join("extra/one.cnf"),
            "[mysqld]\nmax_connections = 20\n",
        );
        write(
            &dir.path().join("conf.d/50-b.cnf"),
            "[mysqld]\nmax_connections = 40\n",
        );
        write(
            &dir.path().join("conf.d/10-a.cnf"),
            "[mysqld]\nmax_connections = 30\nonly_a = 1\n",
        );
        write(
            &dir.path().join("conf.d/zz.txt"),
            "[mysqld]\nmax_connections = 99\n",
        );
        write(
            &dir.path().join("conf.d/old.cnf.bak"),
            "[mysqld]\nmax_connections = 98\n",
        );
        fs::create_dir_all(dir.path().join("conf.d/dir.cnf")).unwrap();
        write(&second.join("70-x.cnf"), "[client]\nuser = me\n");
        let set = read(&my).unwrap();
        assert_eq!(
            set.files,
            vec![
                my.clone(),
                dir.path().join("extra/one.cnf"),
                dir.path().join("conf.d/10-a.cnf"),
                dir.path().join("conf.d/50-b.cnf"),
                second.join("70-x.cnf"),
            ]
        );
        assert_eq!(
            set.include_dirs,
            vec![dir.path().join("conf.d"), second.clone()]
        );
        assert_eq!(set.get(&["mysqld"], "max_connections"), Some("40"));
        assert_eq!(set.get(&["mysqld"], "only_a"), Some("1"));
        let from = set.entries.iter().find(|e| e.key == "only_a").unwrap();
        assert_eq!(
            (from.file.clone(), from.line),
            (dir.path().join("conf.d/10-a.cnf"), 3)
        );
        assert_eq!(choose_dropin(&my).unwrap(), second.join("99-innops.cnf"));
    }

    #[test]
    fn a_missing_include_is_skipped_as_the_server_skips_it_and_errors_in_the_top_file_refuse() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.cnf");
        let err = format!("{:#}", read(&missing).unwrap_err());
        assert!(err.contains("nope.cnf"), "{err}");

        // A dangling !include: the client skips it, and so does innops, with a warning naming it.
        let my = dir.path().join("my.cnf");
        write(&my, "[client]\nuser = a\n!include gone.cnf\npassword = b\n");
        let set = read(&my).unwrap();
        assert_eq!(set.get(&["client"], "password"), Some("b"));
        assert!(
            set.warnings.len() == 1
                && set.warnings[0].contains("gone.cnf")
                && set.warnings[0].contains("my.cnf line 3"),
            "{:?}",
            set.warnings
        );

        write(&my, "[mysqld]\n!includedir gone.d\n");
        let err = format!("{:#}", read(&my).unwrap_err());
        assert!(
            err.contains("gone.d") && err.contains("my.cnf line 2"),
            "{err}"
        );

        write(&my, "x = 1\n[mysqld]\n");
        let err = format!("{:#}", read(&my).unwrap_err());
        assert!(err.contains("before any [group]"), "{err}");

        // The same errors in an included file end that file only (what was read before stays).
        write(
            &dir.path().join("bad.cnf"),
            "[mysqld]\nkept = 1\n[oops\nlost = 2\n",
        );
        write(&my, "[mysqld]\n!include bad.cnf\nafter = 3\n");
        let set = read(&my).unwrap();
        let keys: Vec<&str> = set.entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["kept", "after"]);
        assert!(
            set.warnings[0].contains("bad.cnf line 3"),
            "{:?}",
            set.warnings
        );
    }

    #[test]
    fn header_whitespace_case_and_world_writable_files_as_the_server_reads_them() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let my = dir.path().join("my.cnf");
        write(
            &my,
            "[client ]\nuser = a\n[ client]\nuser = b\n[CLIENT]\nhost = h\r\n[client]junk\nport = 1\n",
        );
        let set = read(&my).unwrap();
        assert_eq!(set.get(&["client"], "user"), Some("a"));
        assert_eq!(set.get(&["client"], "host"), Some("h"));
        assert_eq!(set.get(&["client"], "port"), Some("1"));
        fs::set_permissions(&my, fs::Permissions::from_mode(0o666)).unwrap();
        let set = read(&my).unwrap();
        assert!(set.entries.is_empty());
        assert!(
            set.warnings[0].contains("world-writable"),
            "{:?}",
            set.warnings
        );
    }

    #[test]
    fn server_and_client_groups_with_version_and_suffix() {
        assert_eq!(
            server_groups(Some("10.11.19-MariaDB-0+deb12u1"), None),
            [
                "mysqld",
                "server",
                "mysqld-10.11",
                "mariadb",
                "mariadb-10.11",
                "mariadbd",
                "mariadbd-10.11",
                "client-server",
                "galera"
            ]
        );
        assert_eq!(
            server_groups(None, Some("_a")),
            [
                "mysqld",
                "server",
                "mariadb",
                "mariadbd",
                "client-server",
                "galera",
                "mysqld_a",
                "server_a",
                "mariadb_a",
                "mariadbd_a",
                "client-server_a",
                "galera_a"
            ]
        );
        assert_eq!(
            client_groups(Some("x")),
            [
                "client",
                "client-server",
                "client-mariadb",
                "clientx",
                "client-serverx",
                "client-mariadbx"
            ]
        );
        // The file: [mariadb-10.11] after [mysqld] gives 1G, as the server reads it.
        let dir = tempfile::tempdir().unwrap();
        let my = dir.path().join("my.cnf");
        write(
            &my,
            "[mysqld]\ninnodb_log_file_size = 96M\n[mariadb-10.11]\ninnodb_log_file_size = 1G\n",
        );
        let set = read(&my).unwrap();
        let groups = server_groups(Some("10.11.6"), None);
        assert_eq!(set.get(&groups, "innodb_log_file_size"), Some("1G"));
        assert_eq!(
            set.get(&server_groups(Some("10.6.1"), None), "innodb_log_file_size"),
            Some("96M")
        );
    }

    #[test]
    fn include_cycles_repeat_to_the_servers_nesting_limit() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.cnf");
        let b = dir.path().join("b.cnf");
        write(&a, "[mysqld]\nx = a\n!include b.cnf\n");
        write(&b, "[mysqld]\nx = b\n!include a.cnf\n");
        let set = read(&a).unwrap();
        // a, b, a, … 11 files deep (levels 0 to 10); the directive at level 10 is skipped.
        assert_eq!(set.files.len(), 11);
        assert_eq!(set.get(&["mysqld"], "x"), Some("a"));
        assert!(set.warnings.iter().any(|w| w.contains("nest more than 10")));

        let d = dir.path().join("self.d");
        write(
            &d.join("loop.cnf"),
            &format!("[mysqld]\nz = 1\n!includedir {}\n", d.display()),
        );
        let set = read(&d.join("loop.cnf")).unwrap();
        assert_eq!(set.files.len(), 11);
    }
}
