//! The staging-drill compose files in `docker/`: there is no Docker engine here, so each file is parsed and its
//! structure checked against what the drills and docker/README.md rely on: one server per file from the
//! official image of the version in its name, a loopback-only port, a healthcheck, a named volume for the
//! datadir, and a bind-mounted conf.d that innops's own option-file code picks for its drop-in.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_norway::Value;

/// Every server a drill file exists for: (flavor, version).
const SERVERS: [(&str, &str); 6] = [
    ("mysql", "5.7"),
    ("mysql", "8.0"),
    ("mysql", "8.4"),
    ("mariadb", "10.6"),
    ("mariadb", "10.11"),
    ("mariadb", "11.4"),
];

/// Where the official images read extra option files from (`!includedir` in their main option file).
const IMAGE_CONF_DIR: &str = "/etc/mysql/conf.d";
const IMAGE_DATADIR: &str = "/var/lib/mysql";

fn docker_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docker")
}

/// Every `docker/*.yml`, sorted.
fn compose_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(docker_dir())
        .expect("docker/ exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yml"))
        .collect();
    files.sort();
    files
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .expect("file name")
        .to_string_lossy()
        .into_owned()
}

/// `mariadb-10.11` → ("mariadb", "10.11").
fn flavor_and_version(stem: &str) -> (String, String) {
    let (flavor, version) = stem
        .split_once('-')
        .unwrap_or_else(|| panic!("{stem}.yml is not named FLAVOR-VERSION.yml"));
    (flavor.to_string(), version.to_string())
}

fn parse(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_norway::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", path.display()))
}

fn str_at<'a>(v: &'a Value, key: &str, ctx: &str) -> &'a str {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{ctx}: `{key}` is missing or not a string"))
}

fn seq_at<'a>(v: &'a Value, key: &str, ctx: &str) -> &'a Vec<Value> {
    v.get(key)
        .and_then(Value::as_sequence)
        .unwrap_or_else(|| panic!("{ctx}: `{key}` is missing or not a list"))
}

/// The single service of a drill file, with its name.
fn the_service(doc: &Value, ctx: &str) -> (String, Value) {
    let services = doc
        .get("services")
        .and_then(Value::as_mapping)
        .unwrap_or_else(|| panic!("{ctx}: no `services`"));
    assert_eq!(
        services.len(),
        1,
        "{ctx}: a drill file holds exactly one server, found {}",
        services.len()
    );
    let (name, svc) = services.iter().next().expect("one service");
    (
        name.as_str().expect("service name is a string").to_string(),
        svc.clone(),
    )
}

/// Short-syntax volume `SOURCE:TARGET[:MODE]` → (source, target).
fn volume_parts(entry: &Value, ctx: &str) -> (String, String) {
    let s = entry
        .as_str()
        .unwrap_or_else(|| panic!("{ctx}: volumes use the short SOURCE:TARGET syntax"));
    let mut parts = s.split(':');
    let source = parts.next().unwrap_or_default().to_string();
    let target = parts
        .next()
        .unwrap_or_else(|| panic!("{ctx}: volume `{s}` has no target"))
        .to_string();
    (source, target)
}

#[test]
fn there_is_one_drill_file_per_supported_server_and_nothing_else() {
    let found: BTreeSet<String> = compose_files().iter().map(|p| stem(p)).collect();
    let expected: BTreeSet<String> = SERVERS.iter().map(|(f, v)| format!("{f}-{v}")).collect();
    assert_eq!(
        found, expected,
        "docker/*.yml must be exactly one file per server of the version matrix"
    );
}

#[test]
fn each_file_runs_the_official_image_of_the_version_in_its_name() {
    for path in compose_files() {
        let ctx = path.display().to_string();
        let (flavor, version) = flavor_and_version(&stem(&path));
        let doc = parse(&path);
        let (_, svc) = the_service(&doc, &ctx);
        assert_eq!(
            str_at(&svc, "image", &ctx),
            format!("{flavor}:{version}"),
            "{ctx}"
        );
    }
}

#[test]
fn the_root_password_comes_from_the_environment_not_the_file() {
    for path in compose_files() {
        let ctx = path.display().to_string();
        let (flavor, _) = flavor_and_version(&stem(&path));
        let (_, svc) = the_service(&parse(&path), &ctx);
        let var = if flavor == "mysql" {
            "MYSQL_ROOT_PASSWORD"
        } else {
            "MARIADB_ROOT_PASSWORD"
        };
        let env = svc
            .get("environment")
            .unwrap_or_else(|| panic!("{ctx}: no `environment`"));
        let value = str_at(env, var, &ctx);
        assert!(
            value.starts_with("${INNOPS_ROOT_PASSWORD"),
            "{ctx}: {var} must be taken from $INNOPS_ROOT_PASSWORD, not written in the file (found `{value}`)"
        );
    }
}

#[test]
fn ports_are_published_on_loopback_only_and_never_collide() {
    let mut host_ports = BTreeSet::new();
    for path in compose_files() {
        let ctx = path.display().to_string();
        let (_, svc) = the_service(&parse(&path), &ctx);
        let ports = seq_at(&svc, "ports", &ctx);
        assert!(
            !ports.is_empty(),
            "{ctx}: no published port, innops could not reach the server"
        );
        for p in ports {
            let s = p.as_str().unwrap_or_else(|| {
                panic!("{ctx}: ports use the short \"IP:HOST:CONTAINER\" syntax")
            });
            let parts: Vec<&str> = s.split(':').collect();
            assert_eq!(
                parts.len(),
                3,
                "{ctx}: port `{s}` must name the host address: 127.0.0.1:HOST:3306"
            );
            assert_eq!(
                parts[0], "127.0.0.1",
                "{ctx}: port `{s}` would be reachable from the network"
            );
            assert_eq!(
                parts[2], "3306",
                "{ctx}: port `{s}` must publish the server's 3306"
            );
            let host: u16 = parts[1]
                .parse()
                .unwrap_or_else(|_| panic!("{ctx}: host port in `{s}` is not a number"));
            assert!(
                host_ports.insert(host),
                "{ctx}: host port {host} is used by another drill file"
            );
            let text = std::fs::read_to_string(&path).expect("readable");
            assert!(
                text.contains(&format!("--port {host}")),
                "{ctx}: the header comment must give innops's --port {host}"
            );
        }
    }
}

#[test]
fn every_server_has_a_healthcheck() {
    for path in compose_files() {
        let ctx = path.display().to_string();
        let (flavor, _) = flavor_and_version(&stem(&path));
        let (_, svc) = the_service(&parse(&path), &ctx);
        let hc = svc
            .get("healthcheck")
            .unwrap_or_else(|| panic!("{ctx}: no healthcheck"));
        let test = seq_at(hc, "test", &ctx);
        let words: Vec<&str> = test.iter().filter_map(Value::as_str).collect();
        assert!(
            matches!(words.first(), Some(&"CMD") | Some(&"CMD-SHELL")),
            "{ctx}: healthcheck test must start with CMD or CMD-SHELL"
        );
        let joined = words.join(" ");
        let probe = if flavor == "mysql" {
            "mysqladmin ping"
        } else {
            "healthcheck.sh"
        };
        assert!(
            joined.contains(probe),
            "{ctx}: healthcheck `{joined}` does not use {probe}"
        );
        for key in ["interval", "timeout", "retries"] {
            assert!(hc.get(key).is_some(), "{ctx}: healthcheck has no `{key}`");
        }
    }
}

#[test]
fn the_datadir_lives_in_a_declared_named_volume() {
    for path in compose_files() {
        let ctx = path.display().to_string();
        let doc = parse(&path);
        let (_, svc) = the_service(&doc, &ctx);
        let declared = doc
            .get("volumes")
            .and_then(Value::as_mapping)
            .unwrap_or_else(|| panic!("{ctx}: no top-level `volumes`"));
        let datadir: Vec<String> = seq_at(&svc, "volumes", &ctx)
            .iter()
            .map(|v| volume_parts(v, &ctx))
            .filter(|(_, target)| target == IMAGE_DATADIR)
            .map(|(source, _)| source)
            .collect();
        assert_eq!(
            datadir.len(),
            1,
            "{ctx}: exactly one volume must hold {IMAGE_DATADIR}"
        );
        let name = &datadir[0];
        assert!(
            !name.starts_with('.') && !name.starts_with('/'),
            "{ctx}: the datadir must be a named volume, not the bind mount `{name}`"
        );
        assert!(
            declared.contains_key(Value::String(name.clone())),
            "{ctx}: volume `{name}` is not declared under top-level `volumes`"
        );
    }
}

#[test]
fn conf_d_is_bind_mounted_and_is_where_innops_puts_its_drop_in() {
    for path in compose_files() {
        let ctx = path.display().to_string();
        let stem = stem(&path);
        let (_, svc) = the_service(&parse(&path), &ctx);
        let conf: Vec<String> = seq_at(&svc, "volumes", &ctx)
            .iter()
            .map(|v| volume_parts(v, &ctx))
            .filter(|(_, target)| target == IMAGE_CONF_DIR)
            .map(|(source, _)| source)
            .collect();
        assert_eq!(
            conf,
            vec![format!("./{stem}/conf.d")],
            "{ctx}: {IMAGE_CONF_DIR} must be the bind mount ./{stem}/conf.d"
        );
        let host_conf = docker_dir().join(&stem).join("conf.d");
        assert!(
            host_conf.is_dir(),
            "{}: missing; Docker would create it owned by root",
            host_conf.display()
        );
        // The host-side option file the README passes as --config-file must lead innops to that directory.
        let option_file = docker_dir().join(&stem).join("my.cnf");
        let dropin = innops::server::optionfile::choose_dropin(&option_file).unwrap_or_else(|e| {
            panic!(
                "{}: innops cannot place its drop-in: {e:#}",
                option_file.display()
            )
        });
        assert_eq!(
            dropin,
            host_conf.join(innops::server::optionfile::DROPIN_FILE_NAME),
            "{ctx}"
        );
    }
}

#[test]
fn a_shutdown_is_given_time_to_be_clean_and_does_not_restart_the_server() {
    for path in compose_files() {
        let ctx = path.display().to_string();
        let (_, svc) = the_service(&parse(&path), &ctx);
        let grace = str_at(&svc, "stop_grace_period", &ctx);
        assert!(
            grace.ends_with('m') || grace.ends_with('h'),
            "{ctx}: stop_grace_period `{grace}` must be minutes, not Docker's 10 s"
        );
        // innops's SHUTDOWN must leave the server down until innops starts it again.
        let restart = svc.get("restart").and_then(Value::as_str).unwrap_or("no");
        assert_eq!(
            restart, "no",
            "{ctx}: a restart policy would bring the server back behind innops's back"
        );
    }
}
