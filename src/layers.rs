//! The import graph between top-level modules, checked: every `crate::…` path in src/ (in `use` lines, grouped
//! `use crate::{a, b::{c, d}}`, and inline paths such as `crate::plan::tag_safe(…)`), outside comments and
//! string literals, is an arrow from the module whose file holds it to the module it names. Arrows point down
//! [`LAYERS`] only (a module imports modules of later layers, never its own layer's or an earlier one), so there
//! is no cycle; the same list is written in docs/architecture.md and the test holds the two together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, top (the face) to bottom (leaves).
const LAYERS: &[&[&str]] = &[
    &["commands"],
    &["cli"],
    &["drill"],
    &["registry"],
    &["playbook"],
    &["procedures"],
    &["plan"],
    &["bench", "dump"],
    &["pages"],
    &["server"],
    &["sql"],
    &["progress"],
    &["units", "files", "testhooks", "buildinfo"],
    &["error"],
];

/// Code with comments and the contents of string and char literals blanked out (newlines kept), so only
/// paths the compiler reads remain.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    let blank = |out: &mut String, s: &[u8]| {
        for &c in s {
            out.push(if c == b'\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest.starts_with(b"/*") {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0usize, 0usize);
            while j < rest.len() {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, &rest[..j]);
            i += j;
        } else if let Some(hashes) = raw_string_start(rest) {
            // r"…", r#"…"#, br#"…"#: ends at a quote followed by as many hashes.
            let open = rest.iter().position(|&c| c == b'"').unwrap() + 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let end = rest[open..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map(|p| open + p + close.len())
                .unwrap_or(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'"' {
            let mut j = 1;
            while j < rest.len() && rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(rest.len());
            blank(&mut out, &rest[..end]);
            i += end;
        } else if rest[0] == b'\'' {
            // A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            let len = if rest.get(1) == Some(&b'\\') {
                rest[2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
            } else {
                let ch = std::str::from_utf8(&rest[1..rest.len().min(5)])
                    .ok()
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(4)]).ok())
                    .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(3)]).ok())
                    .and_then(|s| s.chars().next());
                ch.map(|c| 1 + c.len_utf8())
                    .filter(|&n| rest.get(n) == Some(&b'\''))
                    .map(|n| n + 1)
            };
            match len {
                Some(n) => {
                    blank(&mut out, &rest[..n]);
                    i += n;
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            let ch = src[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// How many hashes a raw string starting here has (`r"` 0, `r#"` 1, `br##"` 2), if one starts here.
fn raw_string_start(s: &[u8]) -> Option<usize> {
    let s = s.strip_prefix(b"b").unwrap_or(s);
    let s = s.strip_prefix(b"r")?;
    let hashes = s.iter().take_while(|&&c| c == b'#').count();
    (s.get(hashes) == Some(&b'"')).then_some(hashes)
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The top-level modules every `crate::` path in `code` names.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut from = 0;
    while let Some(p) = code[from..].find("crate::") {
        let at = from + p;
        from = at + "crate::".len();
        // `$crate::` in a macro, or `foo_crate::`, is not this crate's path.
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| is_ident(c) || c == '$')
        {
            continue;
        }
        let rest = code[from..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // The group's top-level items: `crate::{a, b::{c, d}, e as f}` names a, b and e.
            let mut depth = 0usize;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        names.extend(first_ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            names.extend(first_ident(&item));
        } else {
            names.extend(first_ident(rest));
        }
    }
    names
}

fn first_ident(s: &str) -> Option<String> {
    let id: String = s
        .trim_start()
        .chars()
        .take_while(|&c| is_ident(c))
        .collect();
    (!id.is_empty() && id != "self").then_some(id)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Arrows between top-level modules, each with the files that draw it.
fn graph(src: &Path) -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap().to_string_lossy().to_string();
        let top = rel
            .split('/')
            .next()
            .unwrap()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" || top == "layers" {
            continue;
        }
        for to in crate_paths(&code_only(&std::fs::read_to_string(&f).unwrap())) {
            if to != top {
                edges
                    .entry((top.clone(), to))
                    .or_default()
                    .insert(rel.clone());
            }
        }
    }
    edges
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

#[test]
fn every_module_is_in_one_layer() {
    let lib = code_only(include_str!("lib.rs"));
    let mods: BTreeSet<&str> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            l.strip_prefix("mod ")?.strip_suffix(';')
        })
        .filter(|m| *m != "layers")
        .collect();
    let listed: Vec<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    let listed_set: BTreeSet<&str> = listed.iter().copied().collect();
    assert_eq!(listed.len(), listed_set.len(), "a module listed twice");
    assert_eq!(mods, listed_set, "src/lib.rs's modules against LAYERS");
}

type Edges = BTreeMap<(String, String), BTreeSet<String>>;

/// Every arrow that does not point down [`LAYERS`], said with the files that draw it.
fn upward_arrows(edges: &Edges) -> Vec<String> {
    let mut wrong = Vec::new();
    for ((from, to), files) in edges {
        match (layer_of(from), layer_of(to)) {
            (Some(a), Some(b)) if a < b => {}
            (Some(_), Some(_)) => {
                wrong.push(format!("{from} -> {to} goes up or sideways ({files:?})"))
            }
            _ => wrong.push(format!("{from} -> {to}: not in LAYERS ({files:?})")),
        }
    }
    wrong
}

/// A cycle of arrows, if there is one (depth-first, the path on a stack: a module met again on it closes one).
fn find_cycle(edges: &Edges) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from).or_default().push(to);
    }
    fn visit<'a>(
        m: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|&p| p == m) {
            let mut cycle: Vec<String> = path[i..].iter().map(|s| s.to_string()).collect();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if !done.insert(m) {
            return None;
        }
        path.push(m);
        for &n in next.get(m).map(Vec::as_slice).unwrap_or_default() {
            if let Some(c) = visit(n, next, path, done) {
                return Some(c);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    next.keys()
        .find_map(|&m| visit(m, &next, &mut Vec::new(), &mut done))
}

#[test]
fn arrows_point_down_the_layers_only() {
    let edges = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        edges.contains_key(&("plan".to_string(), "bench".to_string())),
        "the parser finds the plan's use of bench"
    );
    let wrong = upward_arrows(&edges);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_graph_has_no_cycle() {
    let edges = graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    if let Some(c) = find_cycle(&edges) {
        panic!("import cycle: {}", c.join(" -> "));
    }
}

#[test]
fn docs_architecture_lists_the_same_layers() {
    let doc = include_str!("../docs/architecture.md");
    let block = doc
        .split("```layers\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("docs/architecture.md has a ```layers block");
    let written: Vec<Vec<&str>> = block
        .lines()
        .map(|l| l.split_whitespace().collect())
        .filter(|l: &Vec<&str>| !l.is_empty())
        .collect();
    let ours: Vec<Vec<&str>> = LAYERS.iter().map(|l| l.to_vec()).collect();
    assert_eq!(written, ours);
}

#[test]
fn paths_are_read_from_code_not_from_comments_or_strings() {
    let code = code_only(
        r##"
use crate::{
    plan::{Plan, Step},
    server as srv,
    self,
};
// use crate::commands;
/* use crate::drill; /* nested */ use crate::cli; */
let s = "crate::registry::rebuild";
let r = r#"crate::playbook"#;
let c = '"'; let l: &'static str = x; crate::sql::quote_ident(c);
macro_rules! m { () => { $crate::units::x } }
"##,
    );
    let got: Vec<String> = crate_paths(&code).into_iter().collect();
    assert_eq!(got, ["plan", "server", "sql"]);
}

#[test]
fn an_upward_arrow_and_a_cycle_are_found() {
    let edges = |pairs: &[(&str, &str)]| -> Edges {
        pairs
            .iter()
            .map(|(a, b)| {
                (
                    (a.to_string(), b.to_string()),
                    BTreeSet::from(["x.rs".to_string()]),
                )
            })
            .collect()
    };
    assert!(upward_arrows(&edges(&[("plan", "bench"), ("commands", "cli")])).is_empty());
    assert_eq!(
        upward_arrows(&edges(&[
            ("bench", "plan"),
            ("bench", "dump"),
            ("plan", "nowhere")
        ])),
        [
            "bench -> dump goes up or sideways ({\"x.rs\"})",
            "bench -> plan goes up or sideways ({\"x.rs\"})",
            "plan -> nowhere: not in LAYERS ({\"x.rs\"})",
        ]
    );
    assert_eq!(
        find_cycle(&edges(&[("plan", "bench"), ("bench", "server")])),
        None
    );
    assert_eq!(
        find_cycle(&edges(&[
            ("plan", "bench"),
            ("bench", "server"),
            ("server", "plan")
        ])),
        Some(vec![
            "bench".into(),
            "server".into(),
            "plan".into(),
            "bench".into()
        ])
    );
}
