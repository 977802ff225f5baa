//! Fleets (issue 14): the report fields an orchestrator such as Ansible reads to say whether a run changed
//! anything.

use crate::common::{read_json, run_innops, Sandboxed};

fn sql(sb: &Sandboxed, statements: &[&str]) {
    use mysql::prelude::Queryable;
    let mut c = sb.conn();
    for s in statements {
        c.query_drop(*s).unwrap();
    }
}

/// The report fields the module reads: `changed` and each step's `acts`, in a dry run, a run, a rerun, a
/// refused dry run, and a run finished by resume.
#[test]
fn the_report_says_whether_any_step_acted_or_would_act() {
    let sb = Sandboxed::new("flj");
    let acts = |report: &serde_json::Value| -> Vec<String> {
        report["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["acts"] == true)
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    let redo = |size: &str, extra: &[&str]| {
        let mut a = vec!["redo", "--size", size, "--no-bench", "--format", "json"];
        a.extend_from_slice(extra);
        sb.innops(&a)
    };
    let dry = redo("64M", &[]);
    assert_eq!(dry.code, 0, "{dry:?}");
    let j = dry.json();
    assert_eq!(
        (j["changed"].as_bool(), acts(&j)),
        (Some(true), vec!["resize".to_string(), "persist".into()])
    );

    let run1 = sb.root.join("run1");
    let done = redo("64M", &["--execute", "--run-dir", run1.to_str().unwrap()]);
    assert_eq!(done.code, 0, "{done:?}");
    let j = done.json();
    assert_eq!(
        (j["changed"].as_bool(), acts(&j)),
        (Some(true), vec!["resize".to_string(), "persist".into()])
    );
    assert_eq!(read_json(&run1.join("report.json"))["changed"], true);

    let rerun = redo("64M", &["--execute"]);
    assert_eq!(rerun.code, 0, "{rerun:?}");
    let j = rerun.json();
    assert_eq!(
        (j["changed"].as_bool(), acts(&j)),
        (Some(false), Vec::<String>::new()),
        "{j}"
    );
    let statuses: Vec<&str> = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["done", "skipped", "skipped", "done"]);
    let dry = redo("64M", &[]);
    assert_eq!(dry.json()["changed"], false, "{dry:?}");

    // A refused dry run: execution would stop at the refused step, so it and the steps after it would not
    // act; the steps before it would.
    sql(
        &sb,
        &[
            "CREATE DATABASE d",
            "CREATE TABLE d.good (id INT PRIMARY KEY) ENGINE=MyISAM",
            "CREATE TABLE d.bad (g INT, id INT AUTO_INCREMENT, PRIMARY KEY (g, id)) ENGINE=MyISAM",
        ],
    );
    let convert = |tables: &str| {
        let out = sb.innops(&[
            "convert",
            "--tables",
            tables,
            "--no-bench",
            "--format",
            "json",
        ]);
        assert_eq!(out.code, 1, "{out:?}");
        let j = out.json();
        assert_eq!(j["status"], "refused", "{j}");
        (j["changed"].as_bool().unwrap(), acts(&j))
    };
    assert_eq!(convert("d.bad"), (false, vec![]));
    let (changed, acting) = convert("d.good,d.bad");
    assert!(changed);
    assert_eq!(
        acting,
        [
            "copy:d.good",
            "verify:d.good",
            "swap:d.good",
            "analyze:d.good"
        ]
    );

    // Killed right after the resize acted; the resume finishes the persist step: both acted in this run.
    let run2 = sb.root.join("run2");
    let killed = sb.innops_env(
        &[
            "redo",
            "--size",
            "80M",
            "--no-bench",
            "--execute",
            "--run-dir",
            run2.to_str().unwrap(),
        ],
        &[("INNOPS_FAULT", "after-action:resize")],
    );
    assert_eq!(killed.code, 137, "{killed:?}");
    let resumed = run_innops(
        &[
            "resume".into(),
            run2.display().to_string(),
            "--format".into(),
            "json".into(),
            "--sandbox-root".into(),
            sb.root.display().to_string(),
        ],
        &[],
    );
    assert_eq!(resumed.code, 0, "{resumed:?}");
    let j = resumed.json();
    assert_eq!(
        (j["changed"].as_bool(), acts(&j)),
        (Some(true), vec!["resize".to_string(), "persist".into()]),
        "{j}"
    );
}
