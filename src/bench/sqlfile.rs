//! A workload given as SQL (`innops experiment --workload-sql FILE`): the file's statements, run in order as
//! one transaction per event (BEGIN, the statements, COMMIT) by every client thread, each statement prepared
//! once per connection, so an event is measured as a sysbench transaction is (tps, latency, statements by
//! class).
//!
//! The file is read here, apart from any server: split into statements at the `;` outside quotes and
//! comments, comments dropped, whitespace folded, and each statement checked against what a measured
//! transaction on innops's own tables may do:
//! - only `SELECT` (or `WITH …`, a parenthesised `SELECT`), `INSERT`, `UPDATE`, `DELETE` and `REPLACE`: DDL commits
//!   the transaction on its own and changes the table every arm is measured on; `BEGIN`/`COMMIT`/`SET
//!   autocommit` would break the one-transaction-per-event frame innops puts around the statements;
//! - a writing statement names no schema (`db.t`): the connection's schema is the arm's own (`innops_bench`, or
//!   the experiment's copy), so a bare table name can change nothing else;
//! - a reading statement has no `INTO` (`SELECT … INTO OUTFILE` writes a file on the server, `INTO @v` is not a
//!   read);
//! - executable comments (`/*! … */`, `/*M! … */`) are refused: the server runs what they hold, which the
//!   checks above would not have seen.
//!
//! Two forms are the workload's own: `:id` is a row id drawn from the run's distribution (sysbench's
//! `get_id()`, `--rand-type special` by default) for each statement — every `:id` of one statement takes the same
//! id — and `{name}` names a generated column of a column variant (see `procedures::experiment`), resolved per
//! arm to the column where the arm's table has it and to its expression where not.

use serde::{Deserialize, Serialize};

/// The most statements one event runs.
pub const MAX_STATEMENTS: usize = 64;

/// A piece of a statement's text: SQL as written (whitespace folded, comments dropped), or a `{name}` column
/// reference to resolve per arm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Piece {
    Text(String),
    Column(String),
}

/// One statement as the file gives it; `:id` already replaced by `?`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStatement {
    pub pieces: Vec<Piece>,
    /// How many `?` (each `:id`) the statement binds.
    pub params: u32,
    /// INSERT, UPDATE, DELETE, REPLACE.
    pub writes: bool,
}

/// One statement ready to prepare.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SqlStatement {
    pub sql: String,
    pub params: u32,
    pub writes: bool,
}

impl FileStatement {
    /// The `{name}` references of the statement.
    pub fn columns(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Column(c) => Some(c.as_str()),
            Piece::Text(_) => None,
        })
    }

    /// The statement with each `{name}` replaced by what `column` gives for it.
    pub fn resolve(&self, column: &dyn Fn(&str) -> String) -> SqlStatement {
        let sql = self
            .pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.clone(),
                Piece::Column(c) => column(c),
            })
            .collect::<String>();
        SqlStatement {
            sql,
            params: self.params,
            writes: self.writes,
        }
    }
}

/// A token of a statement, as far as the checks need one.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// An unquoted word: keyword, name, or number.
    Word(String),
    /// A quoted string or name, with its quotes.
    Quoted(char, String),
    Punct(char),
    Param,
    Column(String),
}

/// Split `text` into statements and check each; the error is one sentence without the file's name.
pub fn parse(text: &str) -> Result<Vec<FileStatement>, String> {
    let mut out = Vec::new();
    for (n, toks) in split(text)?.into_iter().enumerate() {
        if toks.is_empty() {
            continue;
        }
        out.push(check(n + 1, &toks)?);
    }
    if out.is_empty() {
        return Err("it holds no statement: write one or more SQL statements ending in ;".into());
    }
    if out.len() > MAX_STATEMENTS {
        return Err(format!(
            "it holds {} statements, more than the {MAX_STATEMENTS} one transaction runs: split it into smaller workloads",
            out.len()
        ));
    }
    Ok(out)
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// A statement's tokens, each with whether space (or a comment) came before it.
type Tokens = Vec<(bool, Tok)>;

/// The statements' tokens, comments dropped, split at each `;` outside quotes and comments.
fn split(text: &str) -> Result<Vec<Tokens>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut stmts: Vec<Tokens> = vec![Vec::new()];
    let mut i = 0;
    let mut space = false;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let cur = stmts.last_mut().expect("a statement");
        let before = cur.len();
        match c {
            _ if c.is_whitespace() => i += 1,
            ';' => {
                stmts.push(Vec::new());
                i += 1;
            }
            '#' => i = line_end(&chars, i),
            '-' if next == Some('-') && chars.get(i + 2).is_none_or(|c| c.is_whitespace()) => {
                i = line_end(&chars, i)
            }
            '/' if next == Some('*') => {
                let body: String = chars[i + 2..].iter().take(2).collect();
                if body.starts_with('!') || body.starts_with("M!") {
                    return Err("it has an executable comment (/*! … */): the server runs what it holds, so write that SQL as a statement of its own, or drop it".into());
                }
                let end = (i + 2..chars.len().saturating_sub(1))
                    .find(|&j| chars[j] == '*' && chars[j + 1] == '/')
                    .ok_or("it has a comment /* that is never closed: close it with */")?;
                i = end + 2;
            }
            '\'' | '"' | '`' => {
                let end = quote_end(&chars, i)
                    .ok_or_else(|| format!("it has a {c} that is never closed: close the quote"))?;
                cur.push((space, Tok::Quoted(c, chars[i..=end].iter().collect())));
                i = end + 1;
            }
            ':' if next == Some('=') => {
                cur.push((space, Tok::Punct(':')));
                cur.push((false, Tok::Punct('=')));
                i += 2;
            }
            ':' if next.is_some_and(is_word_char) => {
                let end = word_end(&chars, i + 1);
                let name: String = chars[i + 1..end].iter().collect();
                if name != "id" {
                    return Err(format!(
                        "it has the placeholder :{name}, and the only one is :id (a row id drawn for each statement): write other values into the SQL"
                    ));
                }
                cur.push((space, Tok::Param));
                i = end;
            }
            '?' => return Err("it has a ? placeholder: write :id where a drawn row id goes, and other values into the SQL".into()),
            '{' => {
                let end = word_end(&chars, i + 1);
                let name: String = chars[i + 1..end].iter().collect();
                if name.is_empty() || chars.get(end) != Some(&'}') {
                    return Err("it has a { that is not a {column} reference: braces name a column variant's generated column, as {c_crc}".into());
                }
                cur.push((space, Tok::Column(name.to_ascii_lowercase())));
                i = end + 1;
            }
            _ if is_word_char(c) => {
                let mut end = word_end(&chars, i);
                // A decimal number is one word.
                if chars[i].is_ascii_digit()
                    && chars.get(end) == Some(&'.')
                    && chars.get(end + 1).is_some_and(char::is_ascii_digit)
                {
                    end = word_end(&chars, end + 1);
                }
                cur.push((space, Tok::Word(chars[i..end].iter().collect())));
                i = end;
            }
            _ => {
                cur.push((space, Tok::Punct(c)));
                i += 1;
            }
        }
        // Whitespace and comments separate the tokens around them; a token resets it.
        let after = stmts.last().map_or(0, Vec::len);
        space = c != ';' && after == before;
    }
    Ok(stmts)
}

fn line_end(chars: &[char], from: usize) -> usize {
    (from..chars.len())
        .find(|&j| chars[j] == '\n')
        .unwrap_or(chars.len())
}

fn word_end(chars: &[char], from: usize) -> usize {
    (from..chars.len())
        .find(|&j| !is_word_char(chars[j]))
        .unwrap_or(chars.len())
}

/// The index of the quote that closes the one at `open` (doubled quotes and, outside backquotes, backslash
/// escapes stay inside).
fn quote_end(chars: &[char], open: usize) -> Option<usize> {
    let q = chars[open];
    let mut j = open + 1;
    while j < chars.len() {
        match chars[j] {
            '\\' if q != '`' => j += 2,
            c if c == q && chars.get(j + 1) == Some(&q) => j += 2,
            c if c == q => return Some(j),
            _ => j += 1,
        }
    }
    None
}

const DDL: [&str; 9] = [
    "CREATE", "ALTER", "DROP", "TRUNCATE", "RENAME", "OPTIMIZE", "ANALYZE", "REPAIR", "FLUSH",
];
const TRANSACTION: [&str; 10] = [
    "BEGIN",
    "START",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "RELEASE",
    "XA",
    "SET",
    "LOCK",
    "UNLOCK",
];

/// Check statement `n` and turn its tokens into pieces.
fn check(n: usize, spaced: &[(bool, Tok)]) -> Result<FileStatement, String> {
    let toks: Vec<Tok> = spaced.iter().map(|(_, t)| t.clone()).collect();
    let first = match &toks[0] {
        Tok::Word(w) => w.to_ascii_uppercase(),
        Tok::Punct('(') => "(".into(),
        other => {
            return Err(format!(
                "statement {n} does not start with a keyword ({}): start it with SELECT, INSERT, UPDATE, DELETE or REPLACE",
                text_of(other)
            ))
        }
    };
    let writes = match first.as_str() {
        "SELECT" | "WITH" | "(" => false,
        "INSERT" | "UPDATE" | "DELETE" | "REPLACE" => true,
        w if DDL.contains(&w) => return Err(format!(
            "statement {n} is {w}, DDL: it commits the transaction on its own and changes the table every arm is measured on, so an SQL workload runs SELECT, INSERT, UPDATE, DELETE and REPLACE only"
        )),
        w if TRANSACTION.contains(&w) => return Err(format!(
            "statement {n} is {w}: innops runs each event as one transaction of its own (BEGIN, the file's statements, COMMIT), so leave transaction control and session settings out"
        )),
        w => return Err(format!(
            "statement {n} is {w}, which an SQL workload does not run: use SELECT, INSERT, UPDATE, DELETE or REPLACE"
        )),
    };
    let word = |t: Option<&Tok>| matches!(t, Some(Tok::Word(_) | Tok::Quoted('`', _)));
    for (i, t) in toks.iter().enumerate() {
        if writes
            && *t == Tok::Punct('.')
            && i > 0
            && word(toks.get(i - 1))
            && word(toks.get(i + 1))
        {
            return Err(format!(
                "statement {n} writes and names {}.{}: a writing statement may change the tables of the arm's own schema only (innops_bench, or the experiment's copy), so write bare table and column names",
                text_of(&toks[i - 1]),
                text_of(&toks[i + 1])
            ));
        }
        if !writes && matches!(t, Tok::Word(w) if w.eq_ignore_ascii_case("INTO")) {
            return Err(format!(
                "statement {n} reads INTO something: SELECT … INTO writes a file or variables, not a measured read, so leave INTO out"
            ));
        }
    }
    let mut pieces: Vec<Piece> = Vec::new();
    let mut text = String::new();
    let mut params = 0;
    for (i, (space, t)) in spaced.iter().enumerate() {
        if *space && i > 0 {
            text.push(' ');
        }
        match t {
            Tok::Column(c) => {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
                pieces.push(Piece::Column(c.clone()));
            }
            Tok::Param => {
                params += 1;
                text.push('?');
            }
            other => text.push_str(&text_of(other)),
        }
    }
    pieces.push(Piece::Text(text));
    pieces.retain(|p| *p != Piece::Text(String::new()));
    Ok(FileStatement {
        pieces,
        params,
        writes,
    })
}

fn text_of(t: &Tok) -> String {
    match t {
        Tok::Word(w) => w.clone(),
        Tok::Quoted(_, q) => q.clone(),
        Tok::Punct(c) => c.to_string(),
        Tok::Param => "?".into(),
        Tok::Column(c) => format!("{{{c}}}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(s: &FileStatement) -> String {
        s.resolve(&|c| format!("`{c}`")).sql
    }

    #[test]
    fn a_file_splits_into_statements_without_its_comments() {
        let f = parse(
            "-- lookups\nSELECT c FROM sbtest1 WHERE id = :id; # one\n/* two */ UPDATE sbtest1 SET k = k + 1 WHERE id = :id AND c <> 'a;b' ;\n\nSELECT COUNT(*) FROM sbtest1 WHERE {c_crc} BETWEEN :id AND :id + 10",
        )
        .unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(sql(&f[0]), "SELECT c FROM sbtest1 WHERE id = ?");
        assert_eq!((f[0].params, f[0].writes), (1, false));
        assert_eq!(
            sql(&f[1]),
            "UPDATE sbtest1 SET k = k + 1 WHERE id = ? AND c <> 'a;b'"
        );
        assert!(f[1].writes);
        assert_eq!(
            sql(&f[2]),
            "SELECT COUNT(*) FROM sbtest1 WHERE `c_crc` BETWEEN ? AND ? + 10"
        );
        assert_eq!(f[2].params, 2);
        assert_eq!(f[2].columns().collect::<Vec<_>>(), ["c_crc"]);
        // A statement's column resolves per arm: to the expression where the table has no such column.
        assert_eq!(
            f[2].resolve(&|_| "(CRC32(`c`))".into()).sql,
            "SELECT COUNT(*) FROM sbtest1 WHERE (CRC32(`c`)) BETWEEN ? AND ? + 10"
        );
        let q = parse("select 'it''s', \"a\\\"b\", `x y` from t where a := 1.5").unwrap();
        assert_eq!(
            sql(&q[0]),
            "select 'it''s', \"a\\\"b\", `x y` from t where a := 1.5"
        );
    }

    #[test]
    fn an_sql_workload_is_one_transaction_of_its_statements() {
        use crate::bench::workloads::{nominal_mix, GroupKind, OltpOptions, Workload};
        let f =
            parse("SELECT c FROM sbtest1 WHERE id = :id; UPDATE sbtest1 SET k = 1 WHERE id = :id")
                .unwrap();
        let statements: Vec<SqlStatement> = f.iter().map(|s| s.resolve(&|c| c.into())).collect();
        let w = Workload::Sql {
            name: "w.sql".into(),
            statements: statements.clone(),
        };
        assert_eq!(w.name(), "sql:w.sql");
        assert!(!w.is_read_only());
        let script = w.script(&OltpOptions::default(), 0);
        let kinds: Vec<GroupKind> = script.iter().map(|g| g.kind).collect();
        assert_eq!(
            kinds,
            [
                GroupKind::Begin,
                GroupKind::Sql {
                    index: 0,
                    writes: false
                },
                GroupKind::Sql {
                    index: 1,
                    writes: true
                },
                GroupKind::Commit
            ]
        );
        // One read, one write and BEGIN/COMMIT, as sysbench would count them.
        assert_eq!(nominal_mix(&script), (1, 1, 2));
        let reads = Workload::Sql {
            name: "r.sql".into(),
            statements: statements[..1].to_vec(),
        };
        assert!(reads.is_read_only());
    }

    #[test]
    fn what_a_workload_may_not_do_is_refused_in_one_sentence_saying_why() {
        for (text, says) in [
            ("", "it holds no statement"),
            ("-- nothing\n;;", "it holds no statement"),
            (
                "CREATE TABLE t (a int)",
                "statement 1 is CREATE, DDL: it commits the transaction",
            ),
            ("SELECT 1; drop table sbtest1", "statement 2 is DROP, DDL"),
            ("TRUNCATE sbtest1", "is TRUNCATE, DDL"),
            (
                "BEGIN; SELECT 1; COMMIT",
                "statement 1 is BEGIN: innops runs each event as one transaction",
            ),
            ("SET autocommit=0", "is SET: innops runs each event"),
            ("CALL p()", "is CALL, which an SQL workload does not run"),
            (
                "DELETE FROM shop.orders WHERE id = :id",
                "names shop.orders: a writing statement",
            ),
            ("UPDATE `shop`.`t` SET a = 1", "names `shop`.`t`"),
            (
                "SELECT c INTO OUTFILE '/tmp/x' FROM sbtest1",
                "reads INTO something",
            ),
            ("SELECT :k", "the placeholder :k"),
            (
                "SELECT c FROM sbtest1 WHERE id = ?",
                "it has a ? placeholder",
            ),
            ("/*!50000 DROP TABLE t */ SELECT 1", "executable comment"),
            ("SELECT 'x", "never closed"),
            ("SELECT 1 /* x", "never closed"),
            ("SELECT {a b}", "not a {column} reference"),
            ("'x'", "does not start with a keyword"),
        ] {
            let e = parse(text).expect_err(text);
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'), "one sentence: {e}");
        }
        // Reading another schema is a read; qualified names in reads stay.
        let f = parse("SELECT t.c FROM sbtest1 t JOIN other.x ON x.id = t.id WHERE t.id = :id")
            .unwrap();
        assert_eq!(
            sql(&f[0]),
            "SELECT t.c FROM sbtest1 t JOIN other.x ON x.id = t.id WHERE t.id = ?"
        );
        // Decimal numbers are not qualified names.
        assert!(parse("UPDATE sbtest1 SET k = k * 1.5 WHERE id = :id").is_ok());
        let many = "SELECT 1;".repeat(MAX_STATEMENTS + 1);
        assert!(parse(&many).unwrap_err().contains("more than the"));
    }
}
