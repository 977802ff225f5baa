//! Change capture for the online path: three AFTER triggers on the MyISAM source that apply every row change
//! to the InnoDB shadow (REPLACE and DELETE by primary key, as pt-online-schema-change does) and first write
//! the changed keys to a MyISAM change log. The log is MyISAM on purpose: a statement that fails half-way (a
//! trigger's shadow write refused, a multi-row UPDATE stopped by a duplicate) leaves its MyISAM row changes in
//! place and has its InnoDB writes undone, shadow rows included; the log's rows stay with the source's, so
//! every key whose shadow row may differ is on record and compared again before the swap.
//!
//! Every name is innops's own by its record in `innops.own_tables` (kinds [`TRIGGER`] and [`CHANGES`]), never
//! by its name alone.

use crate::sql::{qualified, quote_ident};

use super::super::copy::{bounded, column_list};
use super::super::schema::TableInfo;

/// The record kinds of the capture's objects.
pub const TRIGGER: &str = "trigger";
pub const CHANGES: &str = "changes";

/// The change log's table name.
pub fn log_name(table: &str) -> String {
    bounded(&format!("_{table}_innops_chg"), table, "_innops_chg")
}

/// The three capture triggers' names: insert, update, delete.
pub fn trigger_names(table: &str) -> [String; 3] {
    ["ins", "upd", "del"].map(|e| {
        bounded(
            &format!("_{table}_innops_{e}"),
            table,
            &format!("_innops_{e}"),
        )
    })
}

/// The log's sequence column: a name none of the key's columns has.
pub fn seq_column(info: &TableInfo) -> String {
    let pk = info.pk_columns();
    let mut name = "innops_change_seq".to_string();
    while pk.iter().any(|c| c.eq_ignore_ascii_case(&name)) {
        name.push('_');
    }
    name
}

/// The statement that makes the empty change log: a sequence, then the key's columns with their types (taken by
/// the server from the source, so a key value goes in unchanged).
pub fn log_create_sql(tag: &str, info: &TableInfo) -> String {
    let pk: Vec<String> = info.pk_columns().iter().map(|c| quote_ident(c)).collect();
    format!(
        "CREATE {tag} TABLE {} ({} BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY) ENGINE=MyISAM \
         COMMENT='innops: keys changed while the table is converted online' SELECT {} FROM {} WHERE FALSE",
        qualified(&info.schema, &log_name(&info.name)),
        quote_ident(&seq_column(info)),
        pk.join(", "),
        info.qualified()
    )
}

/// `prefix.col, …` for the key's columns.
fn key_values(info: &TableInfo, prefix: &str) -> String {
    info.pk_columns()
        .iter()
        .map(|c| format!("{prefix}.{}", quote_ident(c)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `col = prefix.col AND …` for the key's columns.
fn key_match(info: &TableInfo, prefix: &str) -> String {
    info.pk_columns()
        .iter()
        .map(|c| format!("{q} = {prefix}.{q}", q = quote_ident(c)))
        .collect::<Vec<_>>()
        .join(" AND ")
}

/// The user lock innops holds while it builds the shadow's indexes ([`hold`]): while it is held the triggers log
/// the changed keys only and leave the shadow alone, so no writer waits for the build's last phase (measured: a
/// write that touched the shadow as the 10M-row build ended waited 1.0–1.1 s in its commit), and the keys changed
/// meanwhile are compared and copied again by the verification after the build. A run that dies frees it with
/// its session. A short name made from the table's (a user lock's name is at most 64 characters).
pub fn hold_name(info: &TableInfo) -> String {
    use sha2::Digest;
    let h = sha2::Sha256::digest(format!("{}\0{}", info.schema, info.name).as_bytes());
    let hex: String = h.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("innops:hold:{hex}")
}

/// A session holding [`hold_name`]'s lock; the triggers write the shadow again once it is dropped.
pub struct Hold {
    conn: Option<mysql::Conn>,
    name: String,
}

/// Take the hold on a session of its own (waiting at most 5 s: another run's session may still be closing);
/// `None` when it could not be had, and then the triggers go on writing the shadow.
pub fn hold(
    target: &crate::server::Target,
    tag: &str,
    info: &TableInfo,
) -> anyhow::Result<Option<Hold>> {
    use crate::sql::Queryable;
    let name = hold_name(info);
    let mut c = target.connect()?;
    let got: Option<Option<i64>> =
        c.exec_first(format!("SELECT {tag} GET_LOCK(?, 5)"), (&name,))?;
    Ok((got.flatten() == Some(1)).then_some(Hold {
        conn: Some(c),
        name,
    }))
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(mut c) = self.conn.take() {
            use crate::sql::Queryable;
            let _ = c.exec_drop("DO RELEASE_LOCK(?)", (&self.name,));
        }
    }
}

/// The three `CREATE TRIGGER` statements, by name. Each writes the changed key(s) to the log first, then
/// applies the change to the shadow unless innops holds the table's [`hold_name`] lock.
pub fn trigger_sql(tag: &str, info: &TableInfo, shadow: &str) -> Vec<(String, String)> {
    let src = info.qualified();
    let shadow = qualified(&info.schema, shadow);
    let log = qualified(&info.schema, &log_name(&info.name));
    let keys = info
        .pk_columns()
        .iter()
        .map(|c| quote_ident(c))
        .collect::<Vec<_>>()
        .join(", ");
    let cols = column_list(info);
    let new_row = info
        .stored_columns()
        .iter()
        .map(|c| format!("NEW.{}", quote_ident(&c.name)))
        .collect::<Vec<_>>()
        .join(", ");
    let log_of = |prefix: &str| {
        format!(
            "INSERT INTO {log} ({keys}) VALUES ({})",
            key_values(info, prefix)
        )
    };
    let replace = format!("REPLACE INTO {shadow} ({cols}) VALUES ({new_row})");
    let free = format!(
        "IS_FREE_LOCK({})",
        crate::sql::quote_string(&hold_name(info))
    );
    let key_same = info
        .pk_columns()
        .iter()
        .map(|c| format!("OLD.{q} <=> NEW.{q}", q = quote_ident(c)))
        .collect::<Vec<_>>()
        .join(" AND ");
    let [ins, upd, del] = trigger_names(&info.name);
    let trig = |name: &str, event: &str, body: String| {
        (
            name.to_string(),
            format!(
                "CREATE {tag} TRIGGER {} AFTER {event} ON {src} FOR EACH ROW BEGIN {body}; END",
                qualified(&info.schema, name)
            ),
        )
    };
    vec![
        trig(
            &ins,
            "INSERT",
            format!("{}; IF {free} THEN {replace}; END IF", log_of("NEW")),
        ),
        trig(
            &upd,
            "UPDATE",
            format!(
                "{}; IF NOT ({key_same}) THEN {}; END IF; IF {free} THEN IF NOT ({key_same}) THEN DELETE FROM {shadow} WHERE {}; END IF; {replace}; END IF",
                log_of("OLD"),
                log_of("NEW"),
                key_match(info, "OLD")
            ),
        ),
        trig(
            &del,
            "DELETE",
            format!(
                "{}; IF {free} THEN DELETE FROM {shadow} WHERE {}; END IF",
                log_of("OLD"),
                key_match(info, "OLD")
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> TableInfo {
        let mut t = TableInfo::synthetic("d", "t", &[("id", "int"), ("b", "varchar")]);
        t.set_primary(&["id"]);
        t
    }

    #[test]
    fn the_triggers_log_the_key_first_then_apply_the_change() {
        let t = table();
        let sql = trigger_sql("/* t */", &t, "_t_innops_new");
        assert_eq!(sql.len(), 3);
        let (name, ins) = &sql[0];
        assert_eq!(name, "_t_innops_ins");
        let hold = hold_name(&t);
        assert!(
            hold.len() <= 64 && hold.starts_with("innops:hold:"),
            "{hold}"
        );
        assert!(ins.starts_with(&format!("CREATE /* t */ TRIGGER `d`.`_t_innops_ins` AFTER INSERT ON `d`.`t` FOR EACH ROW BEGIN INSERT INTO `d`.`_t_innops_chg` (`id`) VALUES (NEW.`id`); IF IS_FREE_LOCK('{hold}') THEN REPLACE INTO `d`.`_t_innops_new` (`id`, `b`) VALUES (NEW.`id`, NEW.`b`); END IF; END")), "{ins}");
        let upd = &sql[1].1;
        let log_old = upd.find("VALUES (OLD.`id`)").unwrap();
        let moved = upd.find("IF NOT (OLD.`id` <=> NEW.`id`)").unwrap();
        let replace = upd.find("REPLACE INTO").unwrap();
        assert!(log_old < moved && moved < replace, "{upd}");
        assert!(upd.contains("DELETE FROM `d`.`_t_innops_new` WHERE `id` = OLD.`id`"));
        let del = &sql[2].1;
        assert!(
            del.contains("AFTER DELETE")
                && del.contains("DELETE FROM `d`.`_t_innops_new` WHERE `id` = OLD.`id`"),
            "{del}"
        );
    }

    #[test]
    fn the_log_sequence_never_takes_a_key_column_name() {
        let mut t = TableInfo::synthetic("d", "t", &[("innops_change_seq", "int")]);
        t.set_primary(&["innops_change_seq"]);
        assert_eq!(seq_column(&t), "innops_change_seq_");
        assert!(log_create_sql("", &t).contains("`innops_change_seq_` BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY) ENGINE=MyISAM"));
    }

    #[test]
    fn names_stay_within_64_characters() {
        let long = "x".repeat(64);
        assert!(log_name(&long).chars().count() <= 64);
        for n in trigger_names(&long) {
            assert!(n.chars().count() <= 64, "{n}");
        }
    }
}
