//! `innops experiment`'s dimensions beyond one variable's values, end to end on sandboxes: values relative to
//! the server's cores (`2xcores`) resolved when the plan is made, kept in plan.json and shown in the plan and
//! the report.

use mysql::prelude::Queryable;

use crate::common::{read_json, step, Sandboxed};

fn global(sb: &Sandboxed, name: &str) -> String {
    sb.conn()
        .query_first::<String, _>(format!("SELECT CAST(@@GLOBAL.{name} AS CHAR)"))
        .unwrap()
        .unwrap()
}

/// The CPUs this process may run on: the sandbox's mariadbd, started by it, inherits the same list.
fn cores() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string();
    list.split(',')
        .map(|p| match p.split_once('-') {
            Some((a, b)) => b.parse::<u64>().unwrap() - a.parse::<u64>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

const SHORT: &[&str] = &[
    "--workload",
    "oltp_point_select",
    "--threads",
    "1",
    "--time",
    "1",
    "--rounds",
    "1",
    "--warmup",
    "0",
];

#[test]
fn values_relative_to_the_cores_resolve_against_the_server_s_cores() {
    let sb = Sandboxed::new("expcores");
    let n = cores();
    let before = global(&sb, "innodb_io_capacity");
    let file = sb.root.join("cores.toml");
    std::fs::write(
        &file,
        "title = \"cores\"\nset = [\"innodb_io_capacity=100xcores,300xCores\"]\n",
    )
    .unwrap();
    let run_dir = sb.root.join("run");
    let mut args = vec!["experiment", file.to_str().unwrap()];
    args.extend(SHORT);
    args.extend(["--execute", "--run-dir", run_dir.to_str().unwrap()]);
    let out = sb.innops(&args);
    assert_eq!(out.code, 0, "{out:?}");
    let (b, c) = ((100 * n).to_string(), (300 * n).to_string());
    let line = format!("cores: {n} (the CPUs mariadbd pid");
    assert!(out.stdout.contains(&line), "{}", out.stdout);
    assert!(
        out.stdout.contains(&format!(
            "innodb_io_capacity: 100xcores = {b}, 300xCores = {c}"
        )),
        "{}",
        out.stdout
    );
    // plan.json keeps the resolved numbers (resume runs these) and the count.
    let plan = read_json(&run_dir.join("plan.json"));
    assert_eq!(
        plan["params"]["sets"][0]["values"],
        serde_json::json!([b, c])
    );
    assert_eq!(plan["params"]["cores"]["count"], n);
    let report = read_json(&run_dir.join("report.json"));
    for (key, value) in [("B", &b), ("C", &c)] {
        let ran = &step(&report, &format!("round-1-{key}"))["result"]["ran_with"];
        assert_eq!(&ran[0]["value"], value, "{key}: {ran}");
    }
    let shown = report["experiment"]["cores"].as_str().unwrap();
    assert!(shown.contains(&format!("100xcores = {b}")), "{shown}");
    let html = std::fs::read_to_string(run_dir.join("report.html")).unwrap();
    assert!(html.contains(&format!("100xcores = {b}")));
    assert_eq!(global(&sb, "innodb_io_capacity"), before);

    // The same on the command line; a value that means the same number as another here is refused, and so
    // is a relative value not in the one syntax.
    let set = format!("innodb_io_capacity={b},100xcores");
    let out = sb.innops(&["experiment", "--set", &set]);
    assert_eq!(out.code, 2, "{out:?}");
    let msg = out.error_line();
    assert!(
        msg.contains(&format!("gives {b} twice on this server's {n} core(s)")),
        "{msg}"
    );
    let out = sb.innops(&["experiment", "--set", "innodb_io_capacity=2cores"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.error_line().contains("write Nxcores"), "{out:?}");
    let out = sb.innops(&["experiment", "--set", "innodb_io_capacity=300,2xcores"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        out.stdout.contains(&format!("2xcores = {}", 2 * n)),
        "{}",
        out.stdout
    );
}
