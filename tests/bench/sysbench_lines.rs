//! sysbench's command lines on a real server: bulk_insert's refusals naming the commands that fix them.

use super::{ok, scalar};
use crate::common::Sandboxed;

#[test]
fn a_bulk_insert_run_that_cannot_work_names_cleanup_and_prepare_not_ignore_errors() {
    let sb = Sandboxed::new("benchbulkfix");
    let run = |extra: &[&str]| {
        sb.innops(
            &[
                &["bench", "bulk_insert", "run", "--time=0", "--events=20"][..],
                extra,
            ]
            .concat(),
        )
    };
    // No tables: bulk_insert's own prepare, not the oltp tables `innops bench prepare` would make.
    let out = run(&["--threads=2"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.error_line()
            .contains("run `innops bench bulk_insert prepare --db sbtest --threads 2` first"),
        "{out:?}"
    );
    ok(&sb.innops(&["bench", "bulk_insert", "prepare", "--threads=2"]));
    ok(&run(&["--threads=2"]));
    // Run again: ids 1.. are there already, which a duplicate key would stop at the first INSERT.
    let out = run(&["--threads=2"]);
    assert_eq!(out.code, 1, "{out:?}");
    let line = out.error_line();
    assert!(
        line.contains("sbtest.sbtest1") && line.contains("holds rows already"),
        "{out:?}"
    );
    assert!(line.contains("`innops bench bulk_insert cleanup --db sbtest --threads 2` and `innops bench bulk_insert prepare --db sbtest --threads 2`"), "{out:?}");
    assert!(!out.stderr.contains("--ignore-errors"), "{out:?}");
    assert_eq!(
        scalar(&sb, "SELECT COUNT(*) FROM sbtest.sbtest1")
            + scalar(&sb, "SELECT COUNT(*) FROM sbtest.sbtest2"),
        20,
        "the refused run wrote nothing"
    );
    ok(&sb.innops(&["bench", "bulk_insert", "cleanup", "--threads=2"]));
    // An oltp table of the same name.
    ok(&sb.innops(&["bench", "oltp_read_write", "prepare", "--table-size=10"]));
    let out = run(&["--threads=1"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.error_line()
            .contains("has the columns (id, k, c, pad), not bulk_insert's (id, k)"),
        "{out:?}"
    );
    assert!(!out.stderr.contains("--ignore-errors"), "{out:?}");
}
