//! Building SQL safely: every identifier innops puts into a statement goes through [`quote_ident`]; values go
//! through prepared-statement parameters, never string building.

use mysql::prelude::{FromRow, Queryable as Mq};
use mysql::{Binary, Conn, Params, QueryResult};

use crate::progress::statement;

/// Quote an identifier with backticks, doubling any backtick inside.
pub fn quote_ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// A string literal: single quotes, with quotes doubled and backslashes escaped (the server's default
/// `sql_mode`, without NO_BACKSLASH_ESCAPES).
pub fn quote_string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// `db`.`table`.
pub fn qualified(db: &str, table: &str) -> String {
    format!("{}.{}", quote_ident(db), quote_ident(table))
}

/// The statement methods innops uses, with the names and signatures of [`mysql::prelude::Queryable`]'s, for
/// [`mysql::Conn`]: each statement is shown as it is sent under `--verbose`
/// ([`crate::progress::statement`]), then sent. Modules that talk to a server import this trait instead
/// of the crate's, so every statement passes through here without a change at the call. Statements are always
/// text here (no prepared-statement handles), so the text is what is shown.
pub trait Queryable {
    fn query_drop<Q: AsRef<str>>(&mut self, query: Q) -> mysql::Result<()>;
    fn query_first<T: FromRow, Q: AsRef<str>>(&mut self, query: Q) -> mysql::Result<Option<T>>;
    fn query<T: FromRow, Q: AsRef<str>>(&mut self, query: Q) -> mysql::Result<Vec<T>>;
    fn exec_drop<S: AsRef<str>, P: Into<Params>>(
        &mut self,
        stmt: S,
        params: P,
    ) -> mysql::Result<()>;
    fn exec_first<T: FromRow, S: AsRef<str>, P: Into<Params>>(
        &mut self,
        stmt: S,
        params: P,
    ) -> mysql::Result<Option<T>>;
    fn exec<T: FromRow, S: AsRef<str>, P: Into<Params>>(
        &mut self,
        stmt: S,
        params: P,
    ) -> mysql::Result<Vec<T>>;
    fn exec_iter<S: AsRef<str>, P: Into<Params>>(
        &mut self,
        stmt: S,
        params: P,
    ) -> mysql::Result<QueryResult<'_, '_, '_, Binary>>;
}

impl Queryable for Conn {
    fn query_drop<Q: AsRef<str>>(&mut self, query: Q) -> mysql::Result<()> {
        statement(query.as_ref());
        Mq::query_drop(self, query)
    }
    fn query_first<T: FromRow, Q: AsRef<str>>(&mut self, query: Q) -> mysql::Result<Option<T>> {
        statement(query.as_ref());
        Mq::query_first(self, query)
    }
    fn query<T: FromRow, Q: AsRef<str>>(&mut self, query: Q) -> mysql::Result<Vec<T>> {
        statement(query.as_ref());
        Mq::query(self, query)
    }
    fn exec_drop<S: AsRef<str>, P: Into<Params>>(
        &mut self,
        stmt: S,
        params: P,
    ) -> mysql::Result<()> {
        statement(stmt.as_ref());
        Mq::exec_drop(self, stmt.as_ref(), params)
    }
    fn exec_first<T: FromRow, S: AsRef<str>, P: Into<Params>>(
        &mut self,
        stmt: S,
        params: P,
    ) -> mysql::Result<Option<T>> {
        statement(stmt.as_ref());
        Mq::exec_first(self, stmt.as_ref(), params)
    }
    fn exec<T: FromRow, S: AsRef<str>, P: Into<Params>>(
        &mut self,
        stmt: S,
        params: P,
    ) -> mysql::Result<Vec<T>> {
        statement(stmt.as_ref());
        Mq::exec(self, stmt.as_ref(), params)
    }
    fn exec_iter<S: AsRef<str>, P: Into<Params>>(
        &mut self,
        stmt: S,
        params: P,
    ) -> mysql::Result<QueryResult<'_, '_, '_, Binary>> {
        statement(stmt.as_ref());
        Mq::exec_iter(self, stmt.as_ref(), params)
    }
}

/// A step id (which may hold a table name) made safe inside a `/* … */` comment.
pub fn tag_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._:-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backticks_inside_identifiers_are_doubled() {
        assert_eq!(quote_ident("plain"), "`plain`");
        assert_eq!(quote_ident("we`ird"), "`we``ird`");
        assert_eq!(qualified("d b", "t'x"), "`d b`.`t'x`");
    }
}
