//! The tables of a copy no server starts on, at any forced-recovery level, read from their files alone (issue
//! 30): each table's definition from its `.frm`, its rows from its `.ibd`'s leaf pages over the whole key space
//! (the page pass, with the definition the `.frm` gives). What a server would have added is missing, and the
//! manifest says so: InnoDB's crash recovery never ran on the files (the redo log is not applied), no list of
//! the transactions active at the crash says which rows may be uncommitted (the caller gives that doubt), and no
//! secondary index can be read against the rows.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use mysql::Conn;

use super::pages::Def;
use super::table::{new_entry, read_alone, Alone};
use crate::dump::manifest::{PagePass, TableEntry, TableStatus};
use crate::dump::page_def::create_from_frm;
use crate::dump::{Column, Connector, DumpOptions, KeySource, Kind, TableInfo, TableName};
use crate::pages::frm::{self, Frm};

/// Schemas of the server's own tables, never dumped (as [`crate::dump::list_tables`] leaves them out).
const SYSTEM: [&str; 4] = ["mysql", "information_schema", "performance_schema", "sys"];

/// The base tables of the data directory `datadir` as its files name them, sorted: every `DB/T.frm` outside
/// the system schemas that is not a view's (a view's `.frm` is text beginning `TYPE=VIEW`). Directories and
/// files whose names begin with `#` are the server's own (`#innodb_temp`, `#sql-…` left by an interrupted
/// ALTER) and are left out. A name the server encoded in its file name (`@002d` …) is listed as the file has it.
pub fn list_from_files(datadir: &Path) -> std::io::Result<Vec<TableName>> {
    let mut out = Vec::new();
    for db in std::fs::read_dir(datadir)? {
        let db = db?;
        let db_name = db.file_name().to_string_lossy().into_owned();
        if !db.file_type()?.is_dir()
            || db_name.starts_with('#')
            || SYSTEM.contains(&db_name.as_str())
        {
            continue;
        }
        for f in std::fs::read_dir(db.path())? {
            let path = f?.path();
            let (Some(stem), Some("frm")) = (
                path.file_stem().map(|s| s.to_string_lossy().into_owned()),
                path.extension().and_then(|e| e.to_str()),
            ) else {
                continue;
            };
            let view = std::fs::read(&path).is_ok_and(|b| b.starts_with(b"TYPE=VIEW"));
            if !stem.starts_with('#') && !view {
                out.push(TableName::new(&db_name, &stem));
            }
        }
    }
    out.sort_by(|a, b| (&a.db, &a.table).cmp(&(&b.db, &b.table)));
    Ok(out)
}

/// The connector of a dump with no server: nothing connects (the page pass reads the files, nothing else runs).
struct NoServer;

impl Connector for NoServer {
    fn connect(&self) -> anyhow::Result<Conn> {
        anyhow::bail!("no server runs on the copy: its tables are read from their files")
    }

    fn reconnect(&self, why: &str) -> anyhow::Result<Conn> {
        anyhow::bail!("no server runs on the copy ({why})")
    }
}

/// Dump one table from its files alone: its `.frm` and its `.ibd` in `opts.pages`'s data directory.
pub(crate) fn dump_table_from_files(
    name: &TableName,
    opts: &DumpOptions,
    abort: &AtomicBool,
) -> anyhow::Result<(TableEntry, Vec<String>)> {
    let po = opts.pages.as_ref().ok_or_else(|| {
        anyhow::anyhow!("reading {name} from its files needs the copy's data directory")
    })?;
    let frm_path = po
        .datadir
        .join(&name.db)
        .join(format!("{}.frm", name.table));
    let read = std::fs::read(&frm_path)
        .map_err(|e| format!("{} cannot be read: {e}", frm_path.display()))
        .and_then(|b| frm::parse(&b))
        .and_then(|f| info_of(name, &f).map(|info| (f, info)));
    let (frm, info) = match read {
        Ok(r) => r,
        Err(why) => return Ok((unread(name, opts, &why), Vec::new())),
    };
    let create = match create_from_frm(name, &frm) {
        Ok(c) => c,
        Err(e) => {
            let why = crate::error::display_of(&e);
            return Ok((unread(name, opts, &why), Vec::new()));
        }
    };
    let header = format!(
        "-- No server started on the copy: every row of {name} below was read from its data file, without\n\
         -- InnoDB's crash recovery, and this CREATE TABLE is rebuilt from its .frm: columns and the clustered key\n\
         -- only (no default, secondary index, comment, AUTO_INCREMENT or foreign key): add them from your schema.\n\
         {create}"
    );
    let alone = Alone {
        def: Def::Frm(&frm),
        header,
        why: "no server started on the copy: every row was sought in the table's data file".into(),
        unchecked: format!(
            "no server started on the copy: {name}'s rows come from its data file alone, without InnoDB's crash recovery (changes only the redo log held are missing); no secondary index could be read against them, and its CREATE TABLE is rebuilt from its .frm (columns and the clustered key only)"
        ),
        unread: format!(
            "no server started on the copy, and {name}'s data file could not be read either: nothing of it is in the dump; restore it from a backup"
        ),
    };
    let entry = new_entry(name, &info, opts);
    read_alone(&NoServer, &info, entry, opts, abort, alone)
}

/// The table as the dump reads it, from its `.frm`: the stored columns that are not generated (the server
/// computes those on load), and the clustered key when it has one SQL can name. `Err` when the clustered key
/// cannot be read (a column prefix).
fn info_of(name: &TableName, frm: &Frm) -> Result<TableInfo, String> {
    let columns: Vec<Column> = frm
        .columns
        .iter()
        .filter(|c| c.generated.is_none() && !c.spec.extra.contains("VIRTUAL"))
        .map(|c| {
            let s = &c.spec;
            Column {
                name: s.name.clone(),
                data_type: s.data_type.to_ascii_lowercase(),
                kind: Kind::of(&s.data_type),
                unsigned: s.column_type.contains("unsigned"),
                charset: s.charset.clone(),
                collation: s.collation.clone(),
                nullable: s.nullable,
            }
        })
        .collect();
    let key = frm.clustered()?;
    let pk: Option<Vec<usize>> = key.and_then(|k| {
        k.parts
            .iter()
            .map(|&(c, _)| {
                let n = &frm.columns[c].spec.name;
                columns.iter().position(|x| &x.name == n)
            })
            .collect()
    });
    let mut info = TableInfo {
        name: name.clone(),
        columns,
        pk: Vec::new(),
        key_index: None,
        key_source: KeySource::None,
        secondary: Vec::new(),
    };
    if let (Some(k), Some(pk)) = (key, pk) {
        info.key_source = if k.name == "PRIMARY" {
            KeySource::Primary
        } else {
            KeySource::UniqueClustered
        };
        info.key_index = Some(k.name.clone());
        info.pk = pk;
    }
    Ok(info)
}

/// The entry of a table whose definition could not be read (`why`): nothing of it is in the dump.
fn unread(name: &TableName, opts: &DumpOptions, why: &str) -> TableEntry {
    let info = TableInfo {
        name: name.clone(),
        columns: Vec::new(),
        pk: Vec::new(),
        key_index: None,
        key_source: KeySource::None,
        secondary: Vec::new(),
    };
    let mut entry = new_entry(name, &info, opts);
    // No row of it is in the dump: none is in doubt.
    entry.doubts.clear();
    entry.status = TableStatus::Unrecoverable;
    entry.note = Some(format!(
        "no server started on the copy, and {name}'s definition was not read from its .frm: {why}; nothing of it is in the dump: restore it from a backup"
    ));
    entry.page_pass = Some(PagePass {
        ran: false,
        why: "no definition to read its pages by".into(),
    });
    entry
}
