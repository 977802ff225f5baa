//! Building SQL safely: every identifier innops puts into a statement goes through [`quote_ident`]; values go
//! through prepared-statement parameters, never string building.

/// Quote an identifier with backticks, doubling any backtick inside.
pub fn quote_ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `db`.`table`.
pub fn qualified(db: &str, table: &str) -> String {
    format!("{}.{}", quote_ident(db), quote_ident(table))
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
