//! Fleets (issue 14): the Ansible collection in playbooks/ansible, run by a real ansible-playbook (ansible-core,
//! installed by `make test` into target/ansible-venv) against three sandboxes on this machine, each a host of
//! an inventory with the local connection; and the report fields the module's `changed` is read from.
//!
//! The plays are the example plays as shipped, with the hosts' sandbox, run directory and binary given by
//! inventory variables, as a real inventory gives a socket and a service.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use mysql::prelude::Queryable;

use crate::common::{engine_of, MIB};
use crate::common::{events, read_json, run_innops, Sandboxed};

const VENV: &str = "target/ansible-venv";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn ansible_dir() -> PathBuf {
    repo().join("playbooks/ansible")
}

fn collection_dir() -> PathBuf {
    ansible_dir().join("collections/ansible_collections/innops/dba")
}

/// A program of the test's ansible-core; the test fails (it does not skip) when it is not installed.
fn venv_bin(name: &str) -> PathBuf {
    let p = repo().join(VENV).join("bin").join(name);
    assert!(
        p.exists(),
        "{} is missing: run `make test` (or `make deps`), which installs ansible-core into {VENV}",
        p.display()
    );
    p
}

/// What an Ansible command printed.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    /// The PLAY RECAP: host → counter → value.
    pub(crate) fn recap(&self) -> HashMap<String, HashMap<String, u32>> {
        let mut out = HashMap::new();
        let Some(at) = self.stdout.find("PLAY RECAP") else {
            panic!("no PLAY RECAP: {self:?}")
        };
        for line in self.stdout[at..].lines().skip(1) {
            let Some((host, counters)) = line.split_once(" : ") else {
                continue;
            };
            let counters = counters
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.parse().unwrap()))
                .collect();
            out.insert(host.trim().to_string(), counters);
        }
        out
    }

    fn count(&self, host: &str, what: &str) -> u32 {
        let recap = self.recap();
        let Some(h) = recap.get(host) else {
            panic!("{host} is not in the recap: {}", self.stdout)
        };
        h[what]
    }

    /// The hosts of each batch, in the order Ansible ran them: with `serial`, every batch starts with its own
    /// `PLAY [...]` line, and each host's task results follow it.
    fn waves(&self) -> Vec<Vec<String>> {
        let mut waves: Vec<Vec<String>> = Vec::new();
        for line in self.stdout.lines() {
            if line.starts_with("PLAY [") {
                waves.push(Vec::new());
                continue;
            }
            let Some(wave) = waves.last_mut() else {
                continue;
            };
            for mark in ["changed: [", "ok: [", "fatal: [", "skipping: ["] {
                if let Some(rest) = line.strip_prefix(mark) {
                    let host = rest.split(']').next().unwrap().to_string();
                    if !wave.contains(&host) {
                        wave.push(host);
                    }
                }
            }
        }
        waves.retain(|w| !w.is_empty());
        waves
    }

    /// The result of a failed task on `host`, from the line `fatal: [HOST]: FAILED! => {…}` (one line by
    /// default), with the line's length.
    fn fatal(&self, host: &str) -> (usize, serde_json::Value) {
        let head = format!("fatal: [{host}]: FAILED! => ");
        let line = self
            .stdout
            .lines()
            .find(|l| l.starts_with(&head))
            .unwrap_or_else(|| panic!("no failure of {host}: {}", self.stdout));
        let value = serde_json::from_str(&line[head.len()..])
            .unwrap_or_else(|e| panic!("the failure is not one line of JSON ({e}): {line}"));
        (line.len(), value)
    }

    /// The JSON result an ad-hoc `ansible HOST -m …` printed after `HOST | STATUS =>`.
    fn adhoc_result(&self, host: &str) -> (String, serde_json::Value) {
        let head = format!("{host} | ");
        let at = self
            .stdout
            .find(&head)
            .unwrap_or_else(|| panic!("no result for {host}: {self:?}"));
        let rest = &self.stdout[at + head.len()..];
        let (status, json) = rest.split_once(" => ").unwrap();
        let value = serde_json::from_str(json.trim())
            .unwrap_or_else(|e| panic!("the result is not JSON ({e}): {json}"));
        (status.to_string(), value)
    }
}

/// Ansible's environment for a test: no colour, its temporary files in the test's directory, and the
/// collection's ansible.cfg (collections path).
pub(crate) fn ansible_command(program: &str, tmp: &Path) -> Command {
    let mut c = Command::new(venv_bin(program));
    c.current_dir(ansible_dir())
        .env("ANSIBLE_CONFIG", ansible_dir().join("ansible.cfg"))
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_FORCE_COLOR", "0")
        .env("ANSIBLE_LOCAL_TEMP", tmp.join("ansible-local"))
        .env("ANSIBLE_REMOTE_TEMP", tmp.join("ansible-remote"))
        .env("ANSIBLE_HOME", tmp.join("ansible-home"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("INNOPS_SANDBOX_DIR")
        .env_remove("MYSQL_PWD");
    c
}

pub(crate) fn run(mut c: Command) -> Run {
    let out = c.output().expect("run ansible");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Three sandboxes as hosts h1, h2, h3 of group `mysql`; h2 and h3 also form `replicas`.
struct Fleet {
    hosts: Vec<Sandboxed>,
    dir: tempfile::TempDir,
    inventory: PathBuf,
}

impl Fleet {
    fn new(tag: &str) -> Fleet {
        Fleet::with(tag, &[&[], &[], &[]])
    }

    /// A fleet whose host N starts with the extra `[mysqld]` lines `extra[N]`.
    fn with(tag: &str, extra: &[&[&str]]) -> Fleet {
        // Fails here, before any server starts, when ansible-core is not installed.
        venv_bin("ansible-playbook");
        let hosts: Vec<Sandboxed> = extra
            .iter()
            .enumerate()
            .map(|(i, lines)| {
                Sandboxed::with(
                    &format!("{tag}{}", i + 1),
                    innops::server::sandbox::SandboxOptions {
                        buffer_pool: Some("64M".into()),
                        extra: lines.iter().map(|l| l.to_string()).collect(),
                        ..Default::default()
                    },
                )
            })
            .collect();
        let dir = tempfile::Builder::new().prefix("fleet-").tempdir().unwrap();
        let mut inv = String::from("[mysql]\n");
        for (i, sb) in hosts.iter().enumerate() {
            let runs = sb.root.join("runs");
            std::fs::create_dir_all(&runs).unwrap();
            inv.push_str(&format!(
                "h{} innops_sandbox={} innops_sandbox_root={} innops_chdir={}\n",
                i + 1,
                sb.sandbox.name,
                sb.root.display(),
                runs.display()
            ));
        }
        inv.push_str("\n[replicas]\nh2\nh3\n\n[all:vars]\nansible_connection=local\n");
        inv.push_str(&format!(
            "ansible_python_interpreter={}\ninnops_binary={}\ninnops_no_bench=true\n",
            venv_bin("python").display(),
            env!("CARGO_BIN_EXE_innops")
        ));
        let inventory = dir.path().join("inventory.ini");
        std::fs::write(&inventory, inv).unwrap();
        Fleet {
            hosts,
            dir,
            inventory,
        }
    }

    fn host(&self, name: &str) -> &Sandboxed {
        let i: usize = name.trim_start_matches('h').parse().unwrap();
        &self.hosts[i - 1]
    }

    fn play(&self, playbook: &str, extra: &[&str]) -> Run {
        let mut c = ansible_command("ansible-playbook", self.dir.path());
        c.arg("-i").arg(&self.inventory).arg(playbook).args(extra);
        run(c)
    }

    /// `ansible HOST -m innops.dba.innops -a ARGS`, the host's sandbox and binary added to ARGS.
    fn adhoc(&self, host: &str, args: serde_json::Value, extra: &[&str]) -> Run {
        let sb = self.host(host);
        let mut args = args;
        let obj = args.as_object_mut().unwrap();
        obj.insert("binary".into(), env!("CARGO_BIN_EXE_innops").into());
        obj.entry("chdir")
            .or_insert_with(|| sb.root.join("runs").display().to_string().into());
        if !obj.contains_key("host") {
            obj.insert("sandbox".into(), sb.sandbox.name.clone().into());
            obj.insert("sandbox_root".into(), sb.root.display().to_string().into());
        }
        let mut c = ansible_command("ansible", self.dir.path());
        c.arg("-i")
            .arg(&self.inventory)
            .arg(host)
            .args(["-m", "innops.dba.innops", "-a"])
            .arg(args.to_string())
            .args(extra);
        run(c)
    }

    /// The run directories innops wrote on `host`, oldest first.
    fn run_dirs(&self, host: &str) -> Vec<PathBuf> {
        let runs = self.host(host).root.join("runs/innops-runs");
        let mut dirs: Vec<PathBuf> = match std::fs::read_dir(&runs) {
            Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        };
        dirs.sort();
        dirs
    }
}

fn sql(sb: &Sandboxed, statements: &[&str]) {
    let mut c = sb.conn();
    for s in statements {
        c.query_drop(*s).unwrap();
    }
}

fn global(sb: &Sandboxed, name: &str) -> u64 {
    sb.conn()
        .query_first(format!("SELECT @@GLOBAL.{name}"))
        .unwrap()
        .unwrap()
}

fn legacy_tables(sb: &Sandboxed) {
    sql(
        sb,
        &[
            "CREATE DATABASE shop",
            "CREATE TABLE shop.orders (id INT PRIMARY KEY, customer VARCHAR(20), KEY (customer)) ENGINE=MyISAM",
            "INSERT INTO shop.orders VALUES (1, 'ann'), (2, 'bob'), (3, 'cy')",
            "CREATE TABLE shop.notes (id INT PRIMARY KEY, body TEXT) ENGINE=MyISAM",
            "INSERT INTO shop.notes VALUES (1, 'first'), (2, 'second')",
        ],
    );
}

/// When a run directory's journal says the run started and ended.
fn run_span(dir: &Path) -> (chrono::DateTime<chrono::Utc>, chrono::DateTime<chrono::Utc>) {
    let ev = events(dir);
    let ts = |kind: &str| -> chrono::DateTime<chrono::Utc> {
        let e = ev
            .iter()
            .find(|e| e["event"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {}", dir.display()));
        e["ts"].as_str().unwrap().parse().unwrap()
    };
    (ts("run_started"), ts("run_done"))
}

const HOSTS: [&str; 3] = ["h1", "h2", "h3"];

#[test]
fn the_convert_play_changes_nothing_in_check_mode_then_converts_in_waves_then_reports_no_change() {
    let fleet = Fleet::new("flc");
    for sb in &fleet.hosts {
        legacy_tables(sb);
    }

    let check = fleet.play("convert-myisam.yml", &["--check"]);
    assert_eq!(check.code, 0, "{check:?}");
    for h in HOSTS {
        assert_eq!(
            check.count(h, "changed"),
            1,
            "{h} would change: {}",
            check.stdout
        );
        assert_eq!(check.count(h, "failed"), 0, "{}", check.stdout);
        for t in ["orders", "notes"] {
            assert_eq!(
                engine_of(fleet.host(h), "shop", t).as_deref(),
                Some("MyISAM"),
                "{h}"
            );
        }
        assert!(
            fleet.run_dirs(h).is_empty(),
            "a dry run writes no run directory on {h}"
        );
    }
    assert!(
        check.stdout.contains("step(s) would act: copy:shop.notes"),
        "{}",
        check.stdout
    );

    let real = fleet.play("convert-myisam.yml", &[]);
    assert_eq!(real.code, 0, "{real:?}");
    assert_eq!(
        real.waves(),
        vec![vec!["h1"], vec!["h2"], vec!["h3"]],
        "{}",
        real.stdout
    );
    let mut spans = Vec::new();
    for h in HOSTS {
        assert_eq!(real.count(h, "changed"), 1, "{}", real.stdout);
        let sb = fleet.host(h);
        for t in ["orders", "notes"] {
            assert_eq!(engine_of(sb, "shop", t).as_deref(), Some("InnoDB"), "{h}");
            let kept = format!("_{t}_myisam_old");
            assert_eq!(
                engine_of(sb, "shop", &kept).as_deref(),
                Some("MyISAM"),
                "{h} keeps the old table"
            );
        }
        let rows: u64 = sb
            .conn()
            .query_first("SELECT COUNT(*) FROM shop.orders")
            .unwrap()
            .unwrap();
        assert_eq!(rows, 3);
        let dirs = fleet.run_dirs(h);
        assert_eq!(dirs.len(), 1, "{h}: {dirs:?}");
        let report = read_json(&dirs[0].join("report.json"));
        assert_eq!(
            (report["status"].as_str(), report["changed"].as_bool()),
            (Some("done"), Some(true))
        );
        spans.push(run_span(&dirs[0]));
    }
    // The canary's run ended before the second wave's began, and that one before the third's.
    assert!(
        spans[0].1 <= spans[1].0 && spans[1].1 <= spans[2].0,
        "{spans:?}"
    );

    let again = fleet.play("convert-myisam.yml", &[]);
    assert_eq!(again.code, 0, "{again:?}");
    for h in HOSTS {
        assert_eq!(
            again.count(h, "changed"),
            0,
            "a rerun changes nothing on {h}: {}",
            again.stdout
        );
        assert_eq!(again.count(h, "ok"), 2, "{}", again.stdout);
    }
    assert!(
        again.stdout.contains("nothing to change"),
        "{}",
        again.stdout
    );
}

#[test]
fn a_canary_that_cannot_convert_stops_the_waves_and_the_other_hosts_are_untouched() {
    let fleet = Fleet::new("flf");
    for sb in &fleet.hosts {
        legacy_tables(sb);
    }
    // MyISAM numbers this AUTO_INCREMENT per group of `g`; InnoDB cannot, so innops refuses the table.
    sql(
        fleet.host("h1"),
        &[
            "CREATE TABLE shop.bad (g INT, id INT AUTO_INCREMENT, PRIMARY KEY (g, id)) ENGINE=MyISAM",
            "INSERT INTO shop.bad (g) VALUES (1), (1), (2)",
        ],
    );
    let refusal = "AUTO_INCREMENT column `id` is not the first column of any index";

    // Check mode finds it before anything changes, and stops there too.
    for mode in [&["--check"][..], &[]] {
        let out = fleet.play("convert-myisam.yml", mode);
        assert_eq!(
            out.code, 2,
            "ansible-playbook exits 2 when a host failed: {out:?}"
        );
        assert!(out.stdout.contains("fatal: [h1]"), "{}", out.stdout);
        assert!(
            out.stdout.contains(refusal),
            "innops's sentence is the failure: {}",
            out.stdout
        );
        assert!(
            out.stdout.contains("\"failure\": \"refused\""),
            "{}",
            out.stdout
        );
        assert!(out.stdout.contains("\"rc\": 1"), "{}", out.stdout);
        // One short line for the host, its msg innops's sentence on one line; the report is left to -v.
        let (len, r) = out.fatal("h1");
        let msg = r["msg"].as_str().unwrap();
        assert!(msg.contains(refusal) && !msg.contains('\n'), "{r}");
        assert!(
            r.get("report").is_none() && r.get("stderr").is_none(),
            "{r}"
        );
        assert!(len < 2000, "{len} bytes: {r}");
        assert_eq!(out.count("h1", "failed"), 1, "{}", out.stdout);
        let recap = out.recap();
        assert!(
            !recap.contains_key("h2") && !recap.contains_key("h3"),
            "no wave after the canary ran: {}",
            out.stdout
        );
        assert_eq!(out.waves(), vec![vec!["h1"]], "{mode:?}: {}", out.stdout);
    }
    assert_eq!(
        engine_of(fleet.host("h1"), "shop", "bad").as_deref(),
        Some("MyISAM")
    );
    for h in ["h2", "h3"] {
        for t in ["orders", "notes"] {
            assert_eq!(
                engine_of(fleet.host(h), "shop", t).as_deref(),
                Some("MyISAM"),
                "{h} untouched"
            );
        }
        assert!(fleet.run_dirs(h).is_empty(), "innops never ran on {h}");
    }
    let dirs = fleet.run_dirs("h1");
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    assert_eq!(read_json(&dirs[0].join("report.json"))["status"], "refused");
}

#[test]
fn the_redo_play_sizes_each_host_by_its_own_advice_in_waves_and_a_rerun_changes_nothing() {
    // h1 and h2 hold less than innops's smallest advice (96M, an idle server's); h3 holds more.
    let fleet = Fleet::with(
        "flr",
        &[
            &["innodb_log_file_size = 32M"],
            &["innodb_log_file_size = 32M"],
            &["innodb_log_file_size = 128M"],
        ],
    );
    let sizes = |f: &Fleet| -> Vec<u64> {
        HOSTS
            .iter()
            .map(|h| global(f.host(h), "innodb_log_file_size"))
            .collect()
    };
    assert_eq!(sizes(&fleet), vec![32 * MIB, 32 * MIB, 128 * MIB]);
    let args = ["-e", "innops_redo_interval=1"];

    let check = fleet.play("redo-resize.yml", &[&args[..], &["--check"]].concat());
    assert_eq!(check.code, 0, "{check:?}");
    assert_eq!(
        sizes(&fleet),
        vec![32 * MIB, 32 * MIB, 128 * MIB],
        "check mode resizes nothing"
    );
    for (h, changed, skipped) in [("h1", 1, 0), ("h2", 1, 0), ("h3", 0, 1)] {
        assert_eq!(check.count(h, "changed"), changed, "{h}: {}", check.stdout);
        assert_eq!(check.count(h, "skipped"), skipped, "{h}: {}", check.stdout);
    }

    let real = fleet.play("redo-resize.yml", &args);
    assert_eq!(real.code, 0, "{real:?}");
    assert_eq!(
        real.waves(),
        vec![vec!["h1"], vec!["h2"], vec!["h3"]],
        "{}",
        real.stdout
    );
    // Each resized host took the size its own advice named (the advice's command carries its sandbox).
    for h in ["h1", "h2"] {
        let own = format!(
            "redo advice: innops redo --size 96M --sandbox {}",
            fleet.host(h).sandbox.name
        );
        assert!(real.stdout.contains(&own), "{h}: {}", real.stdout);
        assert_eq!(real.count(h, "changed"), 1, "{}", real.stdout);
    }
    assert!(
        real.stdout.contains("the current size is enough"),
        "{}",
        real.stdout
    );
    assert_eq!(real.count("h3", "skipped"), 1, "{}", real.stdout);
    assert_eq!(sizes(&fleet), vec![96 * MIB, 96 * MIB, 128 * MIB]);
    assert!(fleet.run_dirs("h3").is_empty(), "h3 was never resized");

    let again = fleet.play("redo-resize.yml", &args);
    assert_eq!(again.code, 0, "{again:?}");
    for h in HOSTS {
        assert_eq!(again.count(h, "changed"), 0, "{h}: {}", again.stdout);
        assert_eq!(again.count(h, "skipped"), 1, "{h}: {}", again.stdout);
    }
}

#[test]
fn the_freeze_play_makes_only_the_replicas_read_only_one_at_a_time_and_thaws_them() {
    let fleet = Fleet::new("flz");
    for sb in &fleet.hosts {
        sql(
            sb,
            &[
                "CREATE DATABASE shop",
                "CREATE TABLE shop.t (id INT PRIMARY KEY) ENGINE=InnoDB",
                "INSERT INTO shop.t VALUES (1)",
            ],
        );
    }
    let frozen = |f: &Fleet| -> Vec<(u64, u64)> {
        HOSTS
            .iter()
            .map(|h| {
                let sb = f.host(h);
                (global(sb, "innodb_read_only"), global(sb, "read_only"))
            })
            .collect()
    };

    let check = fleet.play("freeze-replicas.yml", &["--check"]);
    assert_eq!(check.code, 0, "{check:?}");
    assert_eq!(
        frozen(&fleet),
        vec![(0, 0); 3],
        "check mode freezes nothing"
    );
    assert!(
        !check.recap().contains_key("h1"),
        "h1 is not a replica: {}",
        check.stdout
    );
    for h in ["h2", "h3"] {
        assert_eq!(check.count(h, "changed"), 1, "{}", check.stdout);
    }

    let real = fleet.play("freeze-replicas.yml", &[]);
    assert_eq!(real.code, 0, "{real:?}");
    assert_eq!(
        real.waves(),
        vec![vec!["h2"], vec!["h3"]],
        "{}",
        real.stdout
    );
    assert_eq!(frozen(&fleet), vec![(0, 0), (1, 1), (1, 1)]);
    let write = fleet
        .host("h3")
        .conn()
        .query_drop("INSERT INTO shop.t VALUES (2)");
    assert!(write.is_err(), "a frozen replica refuses writes");

    let again = fleet.play("freeze-replicas.yml", &[]);
    assert_eq!(again.code, 0, "{again:?}");
    for h in ["h2", "h3"] {
        assert_eq!(again.count(h, "changed"), 0, "{h}: {}", again.stdout);
    }

    let thaw = fleet.play("freeze-replicas.yml", &["-e", "innops_undo=true"]);
    assert_eq!(thaw.code, 0, "{thaw:?}");
    for h in ["h2", "h3"] {
        assert_eq!(thaw.count(h, "changed"), 1, "{h}: {}", thaw.stdout);
    }
    assert_eq!(frozen(&fleet), vec![(0, 0); 3]);
}

#[test]
fn the_module_fails_with_innops_sentence_and_exit_code_and_keeps_the_password_out_of_sight() {
    let fleet = Fleet::with("flm", &[&[]]);
    let sb = fleet.host("h1");

    // Exit 2: bad input.
    let out = fleet.adhoc(
        "h1",
        serde_json::json!({"procedure": "redo", "size": "3X"}),
        &[],
    );
    let (status, r) = out.adhoc_result("h1");
    assert!(status.starts_with("FAILED!"), "{out:?}");
    assert_eq!(
        (r["rc"].as_i64(), r["failure"].as_str()),
        (Some(2), Some("bad_input")),
        "{r}"
    );
    assert!(
        r["msg"].as_str().unwrap().starts_with("'3X' is not a size"),
        "{r}"
    );
    assert_eq!(r["changed"], false);
    assert!(
        r.get("stderr").is_none(),
        "innops's sentence says it all: {r}"
    );

    // Exit 3: the online resize acts, then the persist step's post-check finds an option file read after
    // innops's drop-in that would undo the size at the next start.
    std::fs::write(
        sb.sandbox.conf_dir.join("zz-other.cnf"),
        "[mysqld]\ninnodb_log_file_size = 100663296\n",
    )
    .unwrap();
    let out = fleet.adhoc(
        "h1",
        serde_json::json!({"procedure": "redo", "size": "80M", "no_bench": true}),
        // -v: a failed task keeps the report and stderr.
        &["-v"],
    );
    let (status, r) = out.adhoc_result("h1");
    assert!(status.starts_with("FAILED!"), "{out:?}");
    assert_eq!(
        (r["rc"].as_i64(), r["failure"].as_str()),
        (Some(3), Some("post_check_failed")),
        "{r}"
    );
    assert_eq!(
        r["changed"], true,
        "the resize and the drop-in acted before the post-check failed: {r}"
    );
    assert_eq!(r["acted"], serde_json::json!(["resize", "persist"]), "{r}");
    assert!(
        r["msg"]
            .as_str()
            .unwrap()
            .starts_with("step persist post-check failed"),
        "{r}"
    );
    assert_eq!(r["report"]["status"], "failed", "{r}");
    assert!(r["stderr"].as_str().unwrap().contains("innops: "), "{r}");
    let run_dir = PathBuf::from(r["run_dir"].as_str().unwrap());
    assert!(run_dir.is_absolute(), "{r}");
    assert_eq!(read_json(&run_dir.join("report.json"))["status"], "failed");
    std::fs::remove_file(sb.sandbox.conf_dir.join("zz-other.cnf")).unwrap();

    // Over TCP with a password: it reaches innops (the server answers), and no output shows it.
    let client = std::fs::read_to_string(sb.sandbox.dir.join("client.cnf")).unwrap();
    let field = |k: &str| -> String {
        client
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k} = ")))
            .unwrap_or_else(|| panic!("no {k} in client.cnf"))
            .to_string()
    };
    let (password, port) = (field("password"), field("port"));
    let args = |pw: &str| {
        serde_json::json!({"procedure": "inspect", "host": "127.0.0.1", "port": port.parse::<u16>().unwrap(),
                           "user": "root", "password": pw, "sample": 0})
    };
    let out = fleet.adhoc("h1", args(&password), &["-vvv"]);
    let (status, r) = out.adhoc_result("h1");
    assert!(status.starts_with("SUCCESS"), "{out:?}");
    assert_eq!(r["changed"], false);
    assert_eq!(r["inspection"]["flavor"], "mariadb", "{r}");
    assert!(
        !out.stdout.contains(&password) && !out.stderr.contains(&password),
        "{out:?}"
    );
    let out = fleet.adhoc("h1", args("not-the-password"), &[]);
    let (status, r) = out.adhoc_result("h1");
    assert!(status.starts_with("FAILED!"), "{out:?}");
    assert_eq!(r["rc"].as_i64(), Some(2), "a refused login is exit 2: {r}");
    assert!(!out.stdout.contains("not-the-password"), "{out:?}");
}

#[test]
fn ansible_doc_renders_the_module_and_its_unit_tests_pass() {
    let tmp = tempfile::tempdir().unwrap();
    // By the collection's name (the collections path comes from ansible.cfg), and by the modules directory.
    for args in [
        vec!["innops.dba.innops".to_string()],
        vec![
            "-M".to_string(),
            collection_dir()
                .join("plugins/modules")
                .display()
                .to_string(),
            "innops".to_string(),
        ],
    ] {
        let mut c = ansible_command("ansible-doc", tmp.path());
        c.args(&args);
        let out = run(c);
        assert_eq!(out.code, 0, "{out:?}");
        for part in [
            "OPTIONS",
            "procedure",
            "password",
            "check_mode",
            "EXAMPLES",
            "RETURN VALUES",
            "acted",
        ] {
            assert!(out.stdout.contains(part), "{part} in {}", out.stdout);
        }
        assert!(
            !out.stderr.contains("WARNING") && !out.stderr.contains("ERROR"),
            "{out:?}"
        );
    }
    let mut c = ansible_command("python", tmp.path());
    c.args(["-m", "unittest", "discover", "-v", "-s"])
        .arg(collection_dir().join("tests/unit"));
    let out = run(c);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("\nOK"), "{}", out.stderr);
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

    let rerun_dir = sb.root.join("rerun");
    let rerun = redo(
        "64M",
        &["--execute", "--run-dir", rerun_dir.to_str().unwrap()],
    );
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

/// The example plays over a real topology: a sandbox primary `p` and its replicas `r1`, `r2` (GTID, ROW,
/// read_only). convert-topology.yml converts the replicas alone then the primary (`innops_binlog=local`), or the
/// primary alone with the replicas following through replication; freeze-replicas.yml freezes the replicas at a
/// recorded position and thaws them. Replication runs throughout, no replica gets a transaction of its own, and
/// every server ends with the same tables.
/// The inventory docs/fleet.md gives for trying the plays on sandboxes: its ```ini block under "Trying the plays
/// on this machine", which ends in `[all:vars]`.
fn docs_inventory() -> String {
    let doc = std::fs::read_to_string(repo().join("docs/fleet.md")).unwrap();
    let section = doc
        .split("## Trying the plays on this machine")
        .nth(1)
        .expect("docs/fleet.md has the section");
    let block = section
        .split("```ini\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the section has an ini block");
    assert!(
        block.trim_end().ends_with("innops_no_bench=true"),
        "{block}"
    );
    block.to_string()
}

#[test]
fn the_topology_plays_convert_a_primary_and_its_replicas_in_either_order_and_freeze_them() {
    use crate::common::topology::{conn, Topology};
    venv_bin("ansible-playbook");
    // The sandboxes and the inventory of docs/fleet.md ("Trying the plays on this machine"), as a reader makes
    // them: only the binary and where the runs go are added, and the sandboxes' root is the environment's.
    let t = Topology::named("db1", &["db2", "db3"]);
    let runs = t.root.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let mut inv = docs_inventory();
    inv.push_str(&format!(
        "innops_binary={}\ninnops_chdir={}\n",
        env!("CARGO_BIN_EXE_innops"),
        runs.display()
    ));
    let dir = tempfile::Builder::new().prefix("fleet-").tempdir().unwrap();
    let inventory = dir.path().join("inventory.ini");
    std::fs::write(&inventory, inv).unwrap();
    let play = |playbook: &str, extra: &[&str]| {
        let mut c = ansible_command("ansible-playbook", dir.path());
        c.arg("-i")
            .arg(&inventory)
            .arg(playbook)
            .args(extra)
            .env("INNOPS_SANDBOX_DIR", &t.root);
        run(c)
    };
    let servers = || {
        std::iter::once(&t.primary)
            .chain(t.replicas.iter())
            .collect::<Vec<_>>()
    };
    let engines = |table: &str| -> Vec<Option<String>> {
        servers()
            .into_iter()
            .map(|s| {
                conn(s)
                    .exec_first(
                        "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = ?",
                        (table,),
                    )
                    .unwrap()
            })
            .collect()
    };
    let healthy = || {
        t.sync();
        for r in &t.replicas {
            let mut c = conn(r);
            let row: mysql::Row = c.query_first("SHOW SLAVE STATUS").unwrap().unwrap();
            let sql_running: String = row.get("Slave_SQL_Running").unwrap();
            assert_eq!(sql_running, "Yes", "replica {} applies", r.name);
            let (binlog, slave): (String, String) = c
                .query_first("SELECT @@GLOBAL.gtid_binlog_pos, @@GLOBAL.gtid_slave_pos")
                .unwrap()
                .unwrap();
            assert_eq!(
                binlog, slave,
                "replica {} has no transaction of its own",
                r.name
            );
        }
    };
    let mut p = conn(&t.primary);
    p.query_drop(
        "CREATE DATABASE shop; CREATE TABLE shop.a (id INT PRIMARY KEY, k INT, KEY (k)) ENGINE=MyISAM; \
         INSERT INTO shop.a SELECT seq, seq % 7 FROM shop.seq_1_to_2000",
    )
    .unwrap();
    t.sync();

    // Replicas first, each alone, then the primary.
    let local = play("convert-topology.yml", &["-e", "innops_binlog=local"]);
    assert_eq!(local.code, 0, "{local:?}");
    assert_eq!(
        local.waves(),
        vec![vec!["db2"], vec!["db3"], vec!["db1"]],
        "{}",
        local.stdout
    );
    assert_eq!(engines("a"), vec![Some("InnoDB".to_string()); 3]);
    healthy();

    // The primary alone: the replicas follow through replication, verified by innops on each.
    p.query_drop(
        "CREATE TABLE shop.b (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=MyISAM; \
         INSERT INTO shop.b SELECT seq, CONCAT('v', seq) FROM shop.seq_1_to_2000",
    )
    .unwrap();
    t.sync();
    let replicate = play("convert-topology.yml", &[]);
    assert_eq!(replicate.code, 0, "{replicate:?}");
    assert!(
        replicate.count("db2", "changed") == 0 && replicate.count("db3", "changed") == 0,
        "the replicas are converted by replication, not by the play: {}",
        replicate.stdout
    );
    assert_eq!(replicate.count("db1", "changed"), 1, "{}", replicate.stdout);
    healthy();
    assert_eq!(engines("b"), vec![Some("InnoDB".to_string()); 3]);
    let sums: Vec<(String, Option<u64>)> = servers()
        .into_iter()
        .map(|s| {
            conn(s)
                .query_first("CHECKSUM TABLE shop.b")
                .unwrap()
                .unwrap()
        })
        .collect();
    assert!(sums.iter().all(|s| s == &sums[0]), "{sums:?}");

    // Freeze the replicas for reporting, then thaw them: they catch up with what the primary wrote meanwhile.
    let freeze = play("freeze-replicas.yml", &[]);
    assert_eq!(freeze.code, 0, "{freeze:?}");
    p.query_drop("INSERT INTO shop.b VALUES (5000, 'while frozen')")
        .unwrap();
    for r in &t.replicas {
        let ro: Option<u8> = conn(r)
            .query_first("SELECT @@GLOBAL.innodb_read_only")
            .unwrap();
        assert_eq!(ro, Some(1), "{}", r.name);
    }
    let thaw = play("freeze-replicas.yml", &["-e", "innops_undo=true"]);
    assert_eq!(thaw.code, 0, "{thaw:?}");
    healthy();
    for r in &t.replicas {
        let n: Option<u64> = conn(r).query_first("SELECT COUNT(*) FROM shop.b").unwrap();
        assert_eq!(n, Some(2001), "{} caught up", r.name);
        let ro: Option<u8> = conn(r).query_first("SELECT @@GLOBAL.read_only").unwrap();
        assert_eq!(
            ro,
            Some(1),
            "{} is read_only again, as before the freeze",
            r.name
        );
    }
}
