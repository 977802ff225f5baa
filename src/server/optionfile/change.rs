//! Changing option files safely: [`plan_change`] computes the new text of one file (a pure text edit that
//! keeps comments and unrelated lines), [`ConfigChange::diff`] shows it with secrets redacted,
//! [`ConfigChange::apply`] saves a backup and writes the new text with an atomic rename, and
//! [`ConfigChange::restore`] puts the old text back. innops writes only its own drop-in file, found by
//! [`choose_dropin`].

use std::path::{Path, PathBuf};

use super::*;

enum Line<'a> {
    Blank,
    Group(String),
    BadGroup,
    /// `!include`, `!includedir` or any other `!` line.
    Directive,
    /// Key as written (not normalised) and the raw value text (comment removed, not yet unquoted).
    Option {
        key: &'a str,
        value: Option<String>,
    },
}

fn parse_line(raw: &str) -> Line<'_> {
    let s = raw.trim();
    if s.is_empty() || s.starts_with('#') || s.starts_with(';') {
        return Line::Blank;
    }
    if s.starts_with('!') {
        return Line::Directive;
    }
    if let Some(rest) = s.strip_prefix('[') {
        // The server removes whitespace before `]` only (`[client ]` is `[client]`, `[ client]` is not) and
        // ignores case.
        return match rest.find(']') {
            Some(end) => Line::Group(rest[..end].trim_end().to_lowercase()),
            None => Line::BadGroup,
        };
    }
    let content = &s[..comment_start(s).unwrap_or(s.len())];
    match content.split_once('=') {
        Some((k, v)) => Line::Option {
            key: k.trim(),
            value: Some(v.trim().to_string()),
        },
        None => Line::Option {
            key: content.trim(),
            value: None,
        },
    }
}

/// Byte index of the `#` that starts an inline comment, outside quotes (a backslash escapes a quote inside
/// quotes). MariaDB 10.11 ends the value at any such `#`, with or without whitespace before it
/// (`k=a#b` reads as `a`); quote a value that contains `#`.
fn comment_start(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escape = false;
    for (i, c) in s.char_indices() {
        if (c == '\'' || c == '"') && !escape {
            match quote {
                None => quote = Some(c),
                Some(q) if q == c => quote = None,
                Some(_) => {}
            }
        }
        if quote.is_none() && c == '#' {
            return Some(i);
        }
        escape = quote.is_some() && c == '\\' && !escape;
    }
    None
}

/// Writes `value` so that [`read`] gives it back unchanged.
fn format_value(value: &str) -> String {
    let escaped = value
        .replace('\\', "\\\\")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
        .replace('\t', "\\t");
    let needs_quotes = value.is_empty()
        || value.trim() != value
        || value.contains(['#', '"', '\''])
        || value.starts_with([';']);
    if needs_quotes {
        format!("\"{}\"", escaped.replace('"', "\\\""))
    } else {
        escaped
    }
}

/// A planned change of one option file. Serialised (into the journal, the report) with secret values
/// redacted: see [`redact`]. The real text stays in memory and in the backup file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ConfigChange {
    pub path: PathBuf,
    #[serde(serialize_with = "serialize_redacted_opt")]
    pub before: Option<String>,
    #[serde(serialize_with = "serialize_redacted")]
    pub after: String,
}

fn serialize_redacted<S: serde::Serializer>(text: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redact(text))
}

fn serialize_redacted_opt<S: serde::Serializer>(
    text: &Option<String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match text {
        Some(t) => s.serialize_some(&redact(t)),
        None => s.serialize_none(),
    }
}

/// The words that make a name, a value or a comment secret-looking.
const SECRET_WORDS: &[&str] = &["pass", "pwd", "secret", "token", "credential"];

/// Whether an option's value is a secret: its normalised name mentions a password, secret, token or credential
/// (`password`, `ssl_passphrase`, `loose-vault-token`, `aws_secret_access_key` …).
pub fn is_secret_key(key: &str) -> bool {
    let (key, _) = normalize_key(key);
    SECRET_WORDS.iter().any(|w| key.contains(w))
}

/// Whether free text (a comment, a value) mentions a secret: a secret word, or `IDENTIFIED BY`.
fn mentions_secret(text: &str) -> bool {
    let l = text.to_ascii_lowercase();
    SECRET_WORDS.iter().any(|w| l.contains(w)) || l.contains("identified by")
}

/// What a redacted value reads as.
pub const REDACTED: &str = "<redacted>";

/// Option-file text made safe to copy into plan.json, journal.jsonl and reports: the values of secret-looking
/// options ([`is_secret_key`]) and any value or comment that mentions a secret (`# old password: x`,
/// `init-command = SET PASSWORD …`, text after a group's `]`) read `<redacted>`. Everything else, the layout
/// and the other comments, is kept; a diff of redacted texts still shows which lines change.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for raw in text.split_inclusive('\n') {
        let (line, nl) = match raw.strip_suffix('\n') {
            Some(l) => (l, "\n"),
            None => (raw, ""),
        };
        out.push_str(&redact_line(line));
        out.push_str(nl);
    }
    out
}

fn redact_line(line: &str) -> String {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    if body.starts_with('#') || body.starts_with(';') {
        return if mentions_secret(body) {
            format!("{indent}{} {REDACTED}", &body[..1])
        } else {
            line.to_string()
        };
    }
    match parse_line(line) {
        Line::Group(_) => {
            // The server ignores what follows `]`; it may still hold a secret.
            let end = line.find(']').expect("a group header has ']'");
            if mentions_secret(&line[end + 1..]) {
                format!("{} {REDACTED}", &line[..=end])
            } else {
                line.to_string()
            }
        }
        Line::Option { key, value } => {
            let (head, comment) = match comment_start(line) {
                Some(c) => line.split_at(c),
                None => (line, ""),
            };
            let mut redacted = match (value, head.find('=')) {
                (Some(v), Some(eq)) if is_secret_key(key) || mentions_secret(&v) => {
                    let after_eq = &head[eq + 1..];
                    let gap = &after_eq[..after_eq.len() - after_eq.trim_start().len()];
                    let tail = &head[head.trim_end().len()..];
                    format!("{}{gap}{REDACTED}{tail}", &head[..=eq])
                }
                _ => head.to_string(),
            };
            if mentions_secret(comment) {
                redacted.push_str("# ");
                redacted.push_str(REDACTED);
            } else {
                redacted.push_str(comment);
            }
            redacted
        }
        // A bad header line is refused before anything is written; directives name paths.
        Line::BadGroup | Line::Directive | Line::Blank => line.to_string(),
    }
}

/// Sets or removes keys in one group of an option file's text, keeping comments and every unrelated line.
///
/// `(key, Some(v))` replaces the line that sets `key` in `[group]` (matched by normalised name, so
/// `loose-key` and `Key` match too; the last such line is rewritten in place, keeping its indentation and
/// trailing comment, and earlier duplicates in the group are dropped) or appends `key = v` at the end of the
/// group; a missing group is created at the end of the text. `(key, None)` removes the key's lines from the
/// group. The result ends with a newline (an empty result stays empty).
pub fn set_options(text: &str, group: &str, settings: &[(&str, Option<&str>)]) -> String {
    let wanted = group.trim().to_lowercase();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for &(key, value) in settings {
        let (norm, _) = normalize_key(key);
        let sections = group_sections(&lines, &wanted);
        let matching: Vec<usize> = sections
            .iter()
            .flat_map(|&(start, end)| start + 1..end)
            .filter(|&i| line_key(&lines[i]).as_deref() == Some(norm.as_str()))
            .collect();
        match value {
            Some(v) => {
                if let Some((&last, earlier)) = matching.split_last() {
                    lines[last] = rewrite_line(&lines[last], key, v);
                    for &i in earlier.iter().rev() {
                        lines.remove(i);
                    }
                } else if let Some(&(start, end)) = sections.last() {
                    let mut at = end;
                    while at > start + 1 && lines[at - 1].trim().is_empty() {
                        at -= 1;
                    }
                    lines.insert(at, format!("{} = {}", key.trim(), format_value(v)));
                } else {
                    if lines.last().is_some_and(|l| !l.trim().is_empty()) {
                        lines.push(String::new());
                    }
                    lines.push(format!("[{}]", group.trim()));
                    lines.push(format!("{} = {}", key.trim(), format_value(v)));
                }
            }
            None => {
                for &i in matching.iter().rev() {
                    lines.remove(i);
                }
            }
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out
}

/// `(header line, end exclusive)` of every section of `group` in the text.
fn group_sections(lines: &[String], group: &str) -> Vec<(usize, usize)> {
    let mut sections = Vec::new();
    let mut open: Option<usize> = None;
    for (i, l) in lines.iter().enumerate() {
        if let Some(name) = header_name(l) {
            if let Some(start) = open.take() {
                sections.push((start, i));
            }
            if name == group {
                open = Some(i);
            }
        }
    }
    if let Some(start) = open {
        sections.push((start, lines.len()));
    }
    sections
}

/// The group a header line opens; an unterminated `[` line also ends the current section.
fn header_name(l: &str) -> Option<String> {
    match parse_line(l) {
        Line::Group(name) => Some(name),
        Line::BadGroup => Some(String::new()),
        _ => None,
    }
}

fn line_key(l: &str) -> Option<String> {
    match parse_line(l) {
        Line::Option { key, .. } => Some(normalize_key(key).0),
        _ => None,
    }
}

/// `key = value`, keeping the old line's indentation and its trailing `# comment`.
fn rewrite_line(old: &str, key: &str, value: &str) -> String {
    let indent = &old[..old.len() - old.trim_start().len()];
    let mut line = format!("{indent}{} = {}", key.trim(), format_value(value));
    if let Some(pos) = comment_start(old) {
        let before_comment = &old[..pos];
        let gap = &before_comment[before_comment.trim_end().len()..];
        line.push_str(if gap.is_empty() { " " } else { gap });
        line.push_str(&old[pos..]);
    }
    line
}

/// Plans setting/removing `settings` in `[group]` of the file at `path` (absent → created).
pub fn plan_change(
    path: &Path,
    group: &str,
    settings: &[(&str, Option<&str>)],
) -> anyhow::Result<ConfigChange> {
    let before = read_optional(path)?;
    let after = set_options(before.as_deref().unwrap_or(""), group, settings);
    Ok(ConfigChange {
        path: path.to_path_buf(),
        before,
        after,
    })
}

fn read_optional(path: &Path) -> anyhow::Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read option file {}", path.display())),
    }
}

impl ConfigChange {
    /// A unified diff from the current text to the planned one (empty when nothing changes). An absent file
    /// diffs from `/dev/null`.
    pub fn diff(&self) -> String {
        let path = self.path.display().to_string();
        let old_label = if self.before.is_some() {
            path.as_str()
        } else {
            "/dev/null"
        };
        // Shown to people and copied into the plan: secrets are redacted on both sides.
        let before = redact(self.before.as_deref().unwrap_or(""));
        let after = redact(&self.after);
        let diff = similar::TextDiff::from_lines(before.as_str(), after.as_str())
            .unified_diff()
            .header(old_label, &path)
            .to_string();
        if diff.is_empty() && !self.is_noop() {
            // Only a secret's value changes: say so without showing it.
            return format!("--- {old_label}\n+++ {path}\n(only a redacted value changes)\n");
        }
        diff
    }
    pub fn is_noop(&self) -> bool {
        self.before.as_deref() == Some(self.after.as_str())
    }

    /// Saves the previous content into `backup_dir` (`<file name>`, or `<file name>.absent` when there was no
    /// file), then writes `after` atomically. Refuses when the file no longer holds what the plan was made
    /// from; applying twice is harmless.
    pub fn apply(&self, backup_dir: &Path) -> anyhow::Result<()> {
        let current = read_optional(&self.path)?;
        if current != self.before && current.as_deref() != Some(self.after.as_str()) {
            bail!(
                "{} changed since the change was planned; plan again so the backup and diff match what is there",
                self.path.display()
            );
        }
        let name = self
            .path
            .file_name()
            .with_context(|| format!("{} has no file name", self.path.display()))?;
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(backup_dir)
                .with_context(|| format!("creating backup directory {}", backup_dir.display()))?;
        }
        match &self.before {
            Some(text) => {
                let backup = backup_dir.join(name);
                write_backup(&backup, text, &self.path)?;
            }
            None => {
                let mut marker_name = name.to_os_string();
                marker_name.push(".absent");
                let marker = backup_dir.join(marker_name);
                std::fs::write(
                    &marker,
                    format!(
                        "{} did not exist before innops changed it\n",
                        self.path.display()
                    ),
                )
                .with_context(|| format!("cannot write backup marker {}", marker.display()))?;
            }
        }
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create directory {}", parent.display()))?;
        }
        write_atomically(&self.path, &self.after)
    }

    /// Puts the previous content back (atomically), or removes the file when there was none.
    pub fn restore(&self) -> anyhow::Result<()> {
        match &self.before {
            Some(text) => write_atomically(&self.path, text),
            None => match std::fs::remove_file(&self.path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e).with_context(|| format!("cannot remove {}", self.path.display())),
            },
        }
    }
}

/// Writes the backup of `original` with the original's mode and owner (owner only where we may: as root), so
/// a backup of a 0600 file holding a password is no more readable than the file was. Created 0600 first, so
/// no one else can open it in between.
fn write_backup(backup: &Path, text: &str, original: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let _ = std::fs::remove_file(backup); // a resumed run writes it again
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(backup)
        .with_context(|| format!("writing backup {}", backup.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("writing backup {}", backup.display()))?;
    if let Ok(meta) = std::fs::metadata(original) {
        // Owner first: chown clears set-id bits, and the mode below is the original's anyway.
        let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
        file.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))
            .with_context(|| format!("setting the mode of backup {}", backup.display()))?;
    }
    file.sync_all()
        .with_context(|| format!("writing backup {}", backup.display()))
}

/// Writes a temporary file next to `path` and renames it over `path`, so a reader (or a crash) sees either the
/// old or the new content, never a mix. An existing file's permissions and owner are kept.
fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{} has no file name", path.display()))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".innops-tmp-{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let result = (|| -> anyhow::Result<()> {
        let mut file = std::fs::File::create(&tmp)
            .with_context(|| format!("cannot create {}", tmp.display()))?;
        file.write_all(text.as_bytes())
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        if let Ok(meta) = std::fs::metadata(path) {
            use std::os::unix::fs::MetadataExt;
            file.set_permissions(meta.permissions())
                .with_context(|| format!("cannot set permissions of {}", tmp.display()))?;
            // Keeping the owner needs privileges; without them the file belongs to us, which the
            // permissions copied above still make readable where the original was.
            let _ = std::os::unix::fs::fchown(&file, Some(meta.uid()), Some(meta.gid()));
        }
        file.sync_all()
            .with_context(|| format!("cannot sync {}", tmp.display()))?;
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot rename {} to {}", tmp.display(), path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Where innops keeps its own settings: `99-innops.cnf` in the last `!includedir` directory that
/// `config_file` reaches, so the server reads it after the distribution's files.
pub fn choose_dropin(config_file: &Path) -> anyhow::Result<PathBuf> {
    let set = read(config_file)?;
    match set.include_dirs.last() {
        Some(dir) => Ok(dir.join(DROPIN_FILE_NAME)),
        None => bail!(
            "{f} includes no drop-in directory: add `!includedir DIR` to {f}, or pass (--config-file) the option \
             file that includes a drop-in directory",
            f = config_file.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::write;
    use super::*;
    use std::fs;

    #[test]
    fn choose_dropin_needs_an_includedir() {
        let dir = tempfile::tempdir().unwrap();
        let my = dir.path().join("my.cnf");
        write(&my, "[mysqld]\nport = 3306\n");
        let err = choose_dropin(&my).unwrap_err().to_string();
        assert!(
            err.contains("includes no drop-in directory") && err.contains("!includedir DIR"),
            "{err}"
        );
        assert!(err.contains(&my.display().to_string()), "{err}");

        // Debian's layout: the last directory reached wins, even through an !include.
        write(
            &my,
            "[client-server]\n!includedir conf.d/\n!include mariadb.cnf\n",
        );
        write(
            &dir.path().join("mariadb.cnf"),
            "!includedir mariadb.conf.d/\n",
        );
        write(&dir.path().join("conf.d/mysql.cnf"), "[mysql]\n");
        write(
            &dir.path().join("mariadb.conf.d/50-server.cnf"),
            "[mysqld]\nport = 3306\n",
        );
        let dropin = choose_dropin(&my).unwrap();
        assert_eq!(
            dropin,
            dir.path().join("mariadb.conf.d/").join("99-innops.cnf")
        );
    }

    const SERVER_CNF: &str = "\
# The MariaDB server
[server]

[mysqld]
# Basic settings
user = mysql
innodb_log_file_size = 96M   # default
loose-innodb_change_buffering = all

[mariadb]
innodb_log_file_size = 1G
";

    #[test]
    fn set_options_replaces_keeps_comments_and_other_groups() {
        let out = set_options(
            SERVER_CNF,
            "mysqld",
            &[("innodb_log_file_size", Some("2G"))],
        );
        assert_eq!(
            out,
            SERVER_CNF.replace(
                "innodb_log_file_size = 96M   # default",
                "innodb_log_file_size = 2G   # default"
            )
        );
        // The loose- spelling is the same key.
        let out = set_options(
            SERVER_CNF,
            "MYSQLD",
            &[("innodb-change-buffering", Some("none"))],
        );
        assert!(out.contains("\ninnodb-change-buffering = none\n"), "{out}");
        assert!(!out.contains("loose-innodb_change_buffering"), "{out}");
        assert!(out.contains("# The MariaDB server\n") && out.contains("# Basic settings\n"));
        assert!(out.contains("[mariadb]\ninnodb_log_file_size = 1G\n"));
    }

    #[test]
    fn set_options_adds_at_end_of_group_and_creates_groups() {
        let out = set_options(SERVER_CNF, "mysqld", &[("innodb_fast_shutdown", Some("0"))]);
        assert!(
            out.contains(
                "loose-innodb_change_buffering = all\ninnodb_fast_shutdown = 0\n\n[mariadb]"
            ),
            "{out}"
        );
        let out = set_options(
            SERVER_CNF,
            "mariadb-10.11",
            &[("innodb_read_only", Some("1"))],
        );
        assert_eq!(
            out,
            format!("{SERVER_CNF}\n[mariadb-10.11]\ninnodb_read_only = 1\n")
        );
        let out = set_options("", "mysqld", &[("a", Some("1")), ("b", Some("x # y"))]);
        assert_eq!(out, "[mysqld]\na = 1\nb = \"x # y\"\n");
        let no_newline = set_options("[mysqld]\na = 1", "mysqld", &[("b", Some("2"))]);
        assert_eq!(no_newline, "[mysqld]\na = 1\nb = 2\n");
    }

    #[test]
    fn set_options_removes_and_dedupes() {
        let out = set_options(
            SERVER_CNF,
            "mysqld",
            &[("innodb_log_file_size", None), ("nothing_here", None)],
        );
        assert_eq!(
            out,
            SERVER_CNF.replace("innodb_log_file_size = 96M   # default\n", "")
        );
        let text = "[mysqld]\nx = 1\n[client]\nx = 9\n[mysqld]\n  X = 2 # two\n";
        let out = set_options(text, "mysqld", &[("x", Some("3"))]);
        assert_eq!(out, "[mysqld]\n[client]\nx = 9\n[mysqld]\n  x = 3 # two\n");
        assert_eq!(
            set_options(text, "mysqld", &[("x", None)]),
            "[mysqld]\n[client]\nx = 9\n[mysqld]\n"
        );
    }

    #[test]
    fn set_options_values_read_back_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.cnf");
        let values = [
            "plain",
            "with space",
            " padded ",
            "a#b",
            "'q'",
            "back\\slash",
            "",
            "say \"hi\"",
        ];
        let settings: Vec<(String, Option<&str>)> = values
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("k{i}"), Some(*v)))
            .collect();
        let settings: Vec<(&str, Option<&str>)> =
            settings.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        write(&path, &set_options("", "mysqld", &settings));
        let set = read(&path).unwrap();
        for (i, v) in values.iter().enumerate() {
            assert_eq!(
                set.get(&["mysqld"], &format!("k{i}")),
                Some(*v),
                "value {v:?}"
            );
        }
    }

    #[test]
    fn apply_and_restore_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("conf.d/99-innops.cnf");
        write(&path, SERVER_CNF);
        let change = plan_change(&path, "mysqld", &[("innodb_log_file_size", Some("2G"))]).unwrap();
        assert_eq!(change.before.as_deref(), Some(SERVER_CNF));
        assert!(!change.is_noop());
        let diff = change.diff();
        assert!(diff.contains(&format!("--- {}", path.display())), "{diff}");
        assert!(diff.contains(&format!("+++ {}", path.display())), "{diff}");
        assert!(
            diff.contains("-innodb_log_file_size = 96M   # default\n"),
            "{diff}"
        );
        assert!(
            diff.contains("+innodb_log_file_size = 2G   # default\n"),
            "{diff}"
        );

        let backups = dir.path().join("run/backup");
        change.apply(&backups).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), change.after);
        assert_eq!(
            fs::read_to_string(backups.join("99-innops.cnf")).unwrap(),
            SERVER_CNF
        );
        assert_eq!(
            fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temp file left behind"
        );
        change.apply(&backups).unwrap(); // again, as a resumed run would
        assert_eq!(fs::read_to_string(&path).unwrap(), change.after);

        change.restore().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), SERVER_CNF);

        let same = plan_change(&path, "mysqld", &[("innodb_log_file_size", Some("96M"))]).unwrap();
        assert!(same.is_noop(), "{:?}", same.after);
        assert_eq!(same.diff(), "");
    }

    #[test]
    fn apply_refuses_a_file_changed_since_the_plan() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my.cnf");
        write(&path, "[mysqld]\n");
        let change = plan_change(&path, "mysqld", &[("a", Some("1"))]).unwrap();
        write(&path, "[mysqld]\nb = 2\n");
        let err = change
            .apply(&dir.path().join("bk"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("changed since"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "[mysqld]\nb = 2\n");
    }

    #[test]
    fn apply_and_restore_absent_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.d/99-innops.cnf");
        let change =
            plan_change(&path, "mariadb", &[("innodb_log_file_size", Some("2G"))]).unwrap();
        assert_eq!(change.before, None);
        assert_eq!(change.after, "[mariadb]\ninnodb_log_file_size = 2G\n");
        let diff = change.diff();
        assert!(diff.starts_with("--- /dev/null\n"), "{diff}");
        assert!(
            diff.contains("+[mariadb]\n+innodb_log_file_size = 2G\n"),
            "{diff}"
        );

        let backups = dir.path().join("backup");
        change.apply(&backups).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), change.after);
        assert!(backups.join("99-innops.cnf.absent").exists());
        assert!(!backups.join("99-innops.cnf").exists());
        change.restore().unwrap();
        assert!(!path.exists());
        change.restore().unwrap(); // already gone: still fine
    }

    #[test]
    fn the_backup_keeps_the_original_s_mode() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("99-innops.cnf");
        write(&path, "[client]\npassword = hunter2\n[mysqld]\n");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        let change = plan_change(&path, "mysqld", &[("a", Some("1"))]).unwrap();
        let backups = dir.path().join("run/backup");
        change.apply(&backups).unwrap();
        let backup = fs::metadata(backups.join("99-innops.cnf")).unwrap();
        let original = fs::metadata(&path).unwrap();
        assert_eq!(backup.permissions().mode() & 0o777, 0o600);
        assert_eq!(
            (backup.uid(), backup.gid()),
            (original.uid(), original.gid())
        );
        assert_eq!(
            fs::metadata(&backups).unwrap().permissions().mode() & 0o777,
            0o700
        );
        // Applying again (a resumed run) rewrites it the same way.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        plan_change(&path, "mysqld", &[("a", Some("2"))])
            .unwrap()
            .apply(&backups)
            .unwrap();
        let backup = fs::metadata(backups.join("99-innops.cnf")).unwrap();
        assert_eq!(backup.permissions().mode() & 0o777, 0o640);
    }

    #[test]
    fn secrets_are_redacted_in_diffs_and_serialised_changes() {
        let text = "[client]\nuser = dba\npassword = \"hunter2\"   # the DBA's\nloose-ssl-passphrase=s3cr3t\n[mysqld]\ninnodb_log_file_size = 96M\n";
        assert_eq!(
            redact(text),
            "[client]\nuser = dba\npassword = <redacted>   # the DBA's\nloose-ssl-passphrase=<redacted>\n[mysqld]\ninnodb_log_file_size = 96M\n"
        );
        assert!(is_secret_key("MYSQL-PWD") && is_secret_key("aws_secret_access_key"));
        assert!(!is_secret_key("innodb_log_file_size") && !is_secret_key("user"));

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("99-innops.cnf");
        write(&path, text);
        let change = plan_change(&path, "mysqld", &[("innodb_log_file_size", Some("2G"))]).unwrap();
        let diff = change.diff();
        assert!(diff.contains("+innodb_log_file_size = 2G"), "{diff}");
        let json = serde_json::to_string(&change).unwrap();
        for shown in [&diff, &json] {
            assert!(
                !shown.contains("hunter2") && !shown.contains("s3cr3t"),
                "{shown}"
            );
        }
        assert!(json.contains("<redacted>"), "{json}");
        // The change itself, and so the file written, keeps the real values.
        assert!(change.after.contains("hunter2"));

        let secret_only = plan_change(&path, "client", &[("password", Some("new"))]).unwrap();
        let diff = secret_only.diff();
        assert!(diff.contains("only a redacted value changes"), "{diff}");
        assert!(
            !diff.contains("= new") && !diff.contains("hunter2"),
            "{diff}"
        );
    }

    #[test]
    fn secrets_in_comments_values_and_header_junk_are_redacted() {
        let text = "\
# root's password is hunter2
[client]  # token: t0k3n
user = dba   # pwd was s3cr3t until May
  ; old secret: 0ld
init-command = \"SET PASSWORD = PASSWORD('pw1')\"
[mysqld]
# a plain comment stays
innodb_log_file_size = 96M # so does this one
";
        let r = redact(text);
        for secret in ["hunter2", "t0k3n", "s3cr3t", "0ld", "pw1"] {
            assert!(!r.contains(secret), "{secret} in {r}");
        }
        assert_eq!(
            r,
            "\
# <redacted>
[client] <redacted>
user = dba   # <redacted>
  ; <redacted>
init-command = <redacted>
[mysqld]
# a plain comment stays
innodb_log_file_size = 96M # so does this one
"
        );
        // Serialised changes and diffs use the same redaction.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("99-innops.cnf");
        write(&path, text);
        let change = plan_change(&path, "mysqld", &[("innodb_log_file_size", Some("2G"))]).unwrap();
        let json = serde_json::to_string(&change).unwrap();
        let diff = change.diff();
        for shown in [&json, &diff] {
            assert!(
                !shown.contains("hunter2") && !shown.contains("s3cr3t"),
                "{shown}"
            );
        }
    }

    #[test]
    fn apply_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my.cnf");
        write(&path, "[mysqld]\n");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        let change = plan_change(&path, "mysqld", &[("a", Some("1"))]).unwrap();
        change.apply(&dir.path().join("bk")).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o640
        );
    }
}
