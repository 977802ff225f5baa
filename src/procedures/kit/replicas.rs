//! The replicas a run on a primary watches: found from the primary (`SHOW SLAVE HOSTS`, where replicas register
//! with their `report_host`/`report_port`) or named with `--replica HOST:PORT`, as pt-online-schema-change's
//! `--recursion-method` does; reached with the primary's own account and TLS settings. A copy pauses while any
//! of them lags more than `--max-lag` and stops beyond `--critical-lag`; a swap waits until each has applied
//! what the primary wrote, and then reads the table there too. The decisions are plain functions over what was
//! read, unit-tested without a server.

use std::time::{Duration, Instant};

use mysql::{Conn, OptsBuilder};
use serde::{Deserialize, Serialize};

use crate::plan::guard::LoadDecision;
use crate::server::connect::Target;
use crate::server::topology::{Source, Topology};
use crate::sql::Queryable;

/// How a run on a primary treats its replicas (recorded in the plan, so a resumed run watches the same ones).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watch {
    /// Pause while a replica is more than this many seconds behind.
    pub max_lag_s: u64,
    /// Stop when a replica is more than this many seconds behind.
    pub critical_lag_s: u64,
    /// Replicas named with `--replica HOST:PORT`; empty: the ones the primary knows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named: Vec<String>,
}

impl Default for Watch {
    fn default() -> Watch {
        Watch {
            max_lag_s: 1,
            critical_lag_s: 60,
            named: Vec::new(),
        }
    }
}

/// One replica innops reaches.
#[derive(Debug, Clone)]
pub struct Link {
    /// `host:port`, as messages name it.
    pub label: String,
    pub target: Target,
}

impl Link {
    /// A session on the replica; failing, the refusal that names it, the account and the fix.
    pub fn connect(&self) -> anyhow::Result<Conn> {
        self.target.connect().map_err(|e| {
            crate::error::refused(format!(
                "innops cannot reach replica {} ({}): check that it runs and that {} may connect there, or name the replicas with --replica HOST:PORT",
                self.label,
                crate::error::display_of(&e),
                self.target.label
            ))
        })
    }
}

/// `HOST:PORT` (`[v6]:PORT` too), as `--replica` takes it.
pub fn parse_host_port(s: &str) -> Result<(String, u16), String> {
    let bad = || format!("--replica '{s}' is not HOST:PORT: write it as 10.0.0.2:3306");
    let (host, port) = s.rsplit_once(':').ok_or_else(bad)?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty() || port == 0 {
        return Err(bad());
    }
    Ok((host.to_string(), port))
}

/// The primary's target, moved to `host:port` over TCP: the same account, password and TLS settings.
pub fn target_at(primary: &Target, host: &str, port: u16) -> Target {
    let opts = OptsBuilder::from_opts(primary.opts.clone())
        .socket(None::<String>)
        .prefer_socket(false)
        .ip_or_hostname(Some(host.to_string()))
        .tcp_port(port);
    let user = primary.opts.get_user().unwrap_or("root").to_string();
    Target {
        opts: opts.into(),
        label: format!("{user}@{host}:{port}"),
        local: host == "localhost" || host == "::1" || host.starts_with("127."),
        ssl_mode: primary.ssl_mode,
    }
}

/// A replica as `--replica` names it: `HOST:PORT`, or a pt-toolkit DSN (`h=HOST,P=PORT`, `S=SOCKET`, `u=USER`,
/// `F=OPTION-FILE` for an account of its own). A password (`p=`) is refused: it would be written into the run's
/// plan.json; an option file keeps it out of both the plan and the process list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dsn {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub socket: Option<String>,
    pub user: Option<String>,
    pub file: Option<String>,
}

pub fn parse_dsn(s: &str) -> Result<Dsn, String> {
    if !s.contains('=') {
        let (host, port) = parse_host_port(s)?;
        return Ok(Dsn {
            host: Some(host),
            port: Some(port),
            ..Dsn::default()
        });
    }
    let mut d = Dsn::default();
    for part in s.split(',') {
        let (k, v) = part.split_once('=').ok_or_else(|| {
            format!("--replica '{s}': '{part}' is not KEY=VALUE: write h=HOST,P=PORT")
        })?;
        if v.is_empty() {
            return Err(format!("--replica '{s}': {k}= has no value"));
        }
        match k {
            "h" => d.host = Some(v.to_string()),
            "P" => d.port = Some(v.parse().ok().filter(|p| *p > 0).ok_or_else(|| format!("--replica '{s}': P={v} is not a port"))?),
            "S" => d.socket = Some(v.to_string()),
            "u" => d.user = Some(v.to_string()),
            "F" => d.file = Some(v.to_string()),
            "p" => return Err(format!("--replica '{s}': a password in the DSN would be written into the run's plan.json: put the replica account's user and password in an option file's [client] group and name it with F=FILE")),
            other => return Err(format!("--replica '{s}': {other}= is not one of h, P, S, u, F")),
        }
    }
    if d.host.is_none() && d.socket.is_none() {
        return Err(format!(
            "--replica '{s}' names no server: give h=HOST (with P=PORT) or S=SOCKET"
        ));
    }
    Ok(d)
}

impl Dsn {
    /// How messages name it.
    pub fn label(&self) -> String {
        match (&self.socket, &self.host) {
            (Some(sock), _) => format!("socket {sock}"),
            (None, Some(h)) => format!("{h}:{}", self.port.unwrap_or(3306)),
            (None, None) => "?".into(),
        }
    }

    /// The target: the primary's account and TLS settings moved there, or, with `F=`, the account that option
    /// file gives (read as `--defaults-file`).
    pub fn target(&self, primary: &Target) -> Result<Target, String> {
        if let Some(f) = &self.file {
            let spec = crate::server::connect::ConnSpec {
                defaults_file: Some(f.into()),
                host: self.host.clone(),
                port: self.port,
                socket: self.socket.as_ref().map(Into::into),
                user: self.user.clone(),
                ..Default::default()
            };
            return spec.resolve().map_err(|e| crate::error::display_of(&e));
        }
        let mut t = match (&self.socket, &self.host) {
            (Some(sock), _) => {
                let opts = OptsBuilder::from_opts(primary.opts.clone())
                    .socket(Some(sock.clone()))
                    .prefer_socket(true);
                Target {
                    opts: opts.into(),
                    label: String::new(),
                    local: true,
                    ssl_mode: None,
                }
            }
            (None, Some(h)) => target_at(primary, h, self.port.unwrap_or(3306)),
            (None, None) => return Err("no server named".into()),
        };
        if let Some(u) = &self.user {
            t.opts = OptsBuilder::from_opts(t.opts).user(Some(u.clone())).into();
        }
        t.label = format!("{}@{}", t.opts.get_user().unwrap_or("root"), self.label());
        Ok(t)
    }
}

/// The replicas to watch: the named ones, else those registered on the primary. A replica that reads the
/// binary log but cannot be reached by its registration is an error naming the flag that fixes it.
pub fn links(primary: &Target, topo: &Topology, named: &[String]) -> Result<Vec<Link>, String> {
    if !named.is_empty() {
        return named
            .iter()
            .map(|n| {
                let d = parse_dsn(n)?;
                Ok(Link {
                    label: d.label(),
                    target: d.target(primary)?,
                })
            })
            .collect();
    }
    let mut out = Vec::new();
    for r in &topo.replicas {
        if r.host.is_empty() || r.port == 0 {
            return Err(format!(
                "the replica with server_id {} registered without report_host, so innops cannot reach it to watch its lag: name every replica with --replica HOST:PORT",
                r.server_id
            ));
        }
        out.push(Link {
            label: format!("{}:{}", r.host, r.port),
            target: target_at(primary, &r.host, r.port),
        });
    }
    if (out.len() as u64) < topo.replicas_connected {
        let why = match topo.unknown.iter().find(|u| u.starts_with("replicas ")) {
            Some(u) => format!("innops could not list them ({u})"),
            None => format!("{} registered (report_host)", out.len()),
        };
        return Err(format!(
            "{} replica(s) read this server's binary log but {why}, so innops cannot reach them all to watch their lag: name every replica with --replica HOST:PORT",
            topo.replicas_connected,
        ));
    }
    Ok(out)
}

/// Replicas that are sandboxes under `root` (a topology `innops sandbox up --replica-of` made): reached over
/// their own socket as root, as `--sandbox NAME` reaches each, since each sandbox has its own TCP password.
pub fn through_sandboxes(links: Vec<Link>, root: &std::path::Path) -> Vec<Link> {
    let boxes = crate::server::sandbox::Sandbox::list(root).unwrap_or_default();
    links
        .into_iter()
        .map(|l| {
            let found = boxes
                .iter()
                .find(|b| l.target.local && l.target.opts.get_tcp_port() == b.sandbox.port);
            match found {
                Some(b) => Link {
                    label: l.label,
                    target: b.sandbox.conn_spec().resolve_plain(),
                },
                None => l,
            }
        })
        .collect()
}

/// The replicas a plan on this server reaches, as [`links`] finds them, through their sandboxes when the server
/// is one (`--sandbox`): empty on a server without replicas.
pub fn of_plan(
    env: &crate::procedures::PlanEnv,
    topo: &Topology,
    named: &[String],
) -> Result<Vec<Link>, String> {
    if topo.role() != crate::server::topology::Role::Primary && named.is_empty() {
        return Ok(Vec::new());
    }
    let found = links(&env.target, topo, named)?;
    // Replicas named with --replica are reached as named (an account of their own, say).
    Ok(match &env.control {
        Some(crate::server::control::ControlSpec::Sandbox { root, .. }) if named.is_empty() => {
            through_sandboxes(found, root)
        }
        _ => found,
    })
}

/// After a restart of their primary: each replica's IO thread connected again, and how long after the server
/// accepted connections (the replicas' own outage is the server's downtime plus this: a replica retries every
/// `MASTER_CONNECT_RETRY` seconds, 60 by default). Placed right after the step that starts the server, as step
/// `id` (a plan that restarts several times has one per restart).
pub fn reconnect_step(id: &str, links: &[Link], mariadb: bool) -> crate::plan::Step {
    use crate::plan::{Check, Risk, Step, Verdict};
    let (id, rid) = (id.to_string(), id.to_string());
    let links = links.to_vec();
    let n = links.len();
    let labels = links
        .iter()
        .map(|l| l.label.clone())
        .collect::<Vec<_>>()
        .join(", ");
    Step::new(
        id,
        "Wait for the replicas to reconnect, and measure their outage",
        Risk::Read,
    )
    .preview(format!("on each replica ({labels}): SHOW SLAVE STATUS every 50 ms until its IO thread runs again; the time after the server came back, and its MASTER_CONNECT_RETRY"))
    .act(move |ctx| {
        let t0 = Instant::now();
        let mut each = Vec::new();
        let mut lines = Vec::new();
        for l in &links {
            let (secs, retry) = reconnected(l, mariadb, t0)?;
            let retry_note = match retry {
                Some(r) if r > 5 => format!(" (MASTER_CONNECT_RETRY={r}: `CHANGE MASTER TO MASTER_CONNECT_RETRY=1` on it shortens this)"),
                Some(r) => format!(" (MASTER_CONNECT_RETRY={r})"),
                None => String::new(),
            };
            match secs {
                Some(s) => lines.push(format!("replica {} reconnected {s:.2} s after the server was back{retry_note}", l.label)),
                None => lines.push(format!("replica {} had not reconnected {} s after the server was back{retry_note}", l.label, reconnect_wait().as_secs())),
            }
            each.push(serde_json::json!({ "replica": l.label, "reconnected_after_s": secs, "connect_retry_s": retry }));
        }
        ctx.outcome.extend(lines);
        Ok(serde_json::json!({ "replicas": each }))
    })
    .post(Check::new("each replica reconnected", move |ctx| {
        let r = ctx.recorded_result(&rid).unwrap_or_default();
        let each = r["replicas"].as_array().cloned().unwrap_or_default();
        let late: Vec<String> = each
            .iter()
            .filter(|x| x["reconnected_after_s"].is_null())
            .map(|x| x["replica"].as_str().unwrap_or("?").to_string())
            .collect();
        let ok = late.is_empty() && each.len() == n;
        Ok(Verdict::check(
            ok,
            if ok { format!("{} replica(s) reconnected", each.len()) } else { format!("not reconnected: {}", late.join(", ")) },
            "every replica's IO thread running again",
            "a replica did not reconnect to this server after its restart: read its SHOW SLAVE STATUS (Last_IO_Error)",
        ))
    }))
}

/// The reconnect step for a plan that restarts this server, when it has replicas; when they cannot be reached,
/// the note that says their outage is not measured, and why. The step's id is `id`.
pub fn after_restart(
    id: &str,
    env: &crate::procedures::PlanEnv,
    facts: &crate::server::facts::ServerFacts,
    notes: &mut Vec<String>,
) -> Option<crate::plan::Step> {
    match of_plan(env, &facts.topology, &[]) {
        Ok(l) if !l.is_empty() => Some(reconnect_step(
            id,
            &l,
            facts.flavor == crate::server::facts::Flavor::MariaDB,
        )),
        Ok(_) => None,
        Err(why) => {
            notes.push(format!(
                "the replicas' outage after the restart is not measured: {why}"
            ));
            None
        }
    }
}

/// The longest innops waits for a replica to reconnect after its primary's restart.
pub const RECONNECT_WAIT: Duration = Duration::from_secs(180);

pub(crate) fn reconnect_wait() -> Duration {
    crate::testhooks::reconnect_wait().unwrap_or(RECONNECT_WAIT)
}

/// Seconds after `t0` until `l`'s IO threads all run (None: not within [`RECONNECT_WAIT`]), and its connect retry.
fn reconnected(l: &Link, mariadb: bool, t0: Instant) -> anyhow::Result<(Option<f64>, Option<u64>)> {
    let mut conn: Option<Conn> = None;
    let mut retry = None;
    while t0.elapsed() < reconnect_wait() {
        if conn.is_none() {
            conn = l.target.connect().ok();
        }
        if let Some(c) = conn.as_mut() {
            match c.query::<mysql::Row, _>(if mariadb {
                "SHOW /* innops:replicas */ ALL SLAVES STATUS"
            } else {
                "SHOW /* innops:replicas */ REPLICA STATUS"
            }) {
                Ok(rows) => {
                    retry = rows.first().and_then(|r| {
                        crate::server::topology::column(r, "Connect_Retry")?
                            .parse()
                            .ok()
                    });
                    let sources: Vec<Source> = rows
                        .iter()
                        .map(crate::server::topology::source_of)
                        .collect();
                    if !sources.is_empty()
                        && sources.iter().all(|s| s.io.eq_ignore_ascii_case("Yes"))
                    {
                        return Ok((Some(t0.elapsed().as_secs_f64()), retry));
                    }
                }
                Err(_) => conn = None,
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok((None, retry))
}

/// Where a replica's replication stands, as the lag guard reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lag {
    /// Both threads running, this many seconds behind.
    Behind(u64),
    /// Not applying: why, in words.
    Stopped(String),
}

/// The lag of a replica from its replication connections: the largest, or why it is not applying.
pub fn lag_of(sources: &[Source]) -> Lag {
    if sources.is_empty() {
        return Lag::Stopped("it has no replication connection".into());
    }
    let mut worst = 0;
    for s in sources {
        if !s.io.eq_ignore_ascii_case("Yes") || !s.sql_running {
            return Lag::Stopped(format!(
                "replication is not running (IO {}, SQL {}{})",
                s.io,
                if s.sql_running { "Yes" } else { "No" },
                s.last_error
                    .as_deref()
                    .map(|e| format!(", last error: {e}"))
                    .unwrap_or_default()
            ));
        }
        match s.lag_s {
            Some(l) => worst = worst.max(l),
            None => {
                return Lag::Stopped("its lag is unknown (Seconds_Behind_Master is NULL)".into())
            }
        }
    }
    Lag::Behind(worst)
}

/// Go, pause or stop, given each replica's lag: stopped replication pauses (the copy waits for it, as
/// pt-online-schema-change does); beyond `critical` stops the copy.
pub fn decide(lags: &[(String, Lag)], w: &Watch) -> LoadDecision {
    for (label, lag) in lags {
        if let Lag::Behind(s) = lag {
            if *s > w.critical_lag_s {
                return LoadDecision::Abort(format!(
                    "replica {label} is {s} s behind, over --critical-lag {}: innops stopped the copy; retry when the replicas have caught up, or raise --critical-lag",
                    w.critical_lag_s
                ));
            }
        }
    }
    for (label, lag) in lags {
        match lag {
            Lag::Behind(s) if *s > w.max_lag_s => {
                return LoadDecision::Pause(format!(
                    "replica {label} is {s} s behind, over --max-lag {}",
                    w.max_lag_s
                ))
            }
            Lag::Stopped(why) => return LoadDecision::Pause(format!("replica {label}: {why}")),
            _ => {}
        }
    }
    LoadDecision::Go
}

/// Open sessions to the replicas, once per copy.
pub struct Sessions {
    pub mariadb: bool,
    pub conns: Vec<(Link, Conn)>,
}

impl Sessions {
    pub fn open(links: &[Link], mariadb: bool) -> anyhow::Result<Sessions> {
        let mut conns = Vec::new();
        for l in links {
            conns.push((l.clone(), l.connect()?));
        }
        Ok(Sessions { mariadb, conns })
    }

    /// Every replica's lag now.
    pub fn lags(&mut self) -> anyhow::Result<Vec<(String, Lag)>> {
        let mariadb = self.mariadb;
        self.conns
            .iter_mut()
            .map(|(l, c)| Ok((l.label.clone(), lag_of(&Topology::sources_now(c, mariadb)?))))
            .collect()
    }
}

/// The primary's position now: what a replica must have applied to hold everything it wrote so far.
pub fn position(primary: &mut Conn, mariadb: bool) -> anyhow::Result<String> {
    let sql = if mariadb {
        "SELECT /* innops:replicas */ @@GLOBAL.gtid_binlog_pos"
    } else {
        "SELECT /* innops:replicas */ @@GLOBAL.gtid_executed"
    };
    Ok(primary
        .query_first::<Option<String>, _>(sql)?
        .flatten()
        .unwrap_or_default())
}

/// The longest innops waits for one replica to apply a position.
pub const APPLY_WAIT: Duration = Duration::from_secs(3600);

/// Wait until the replica has applied `pos`, a second at a time (saying so every 10 s on stderr); an error
/// naming the replica when its replication stops or the wait passes [`APPLY_WAIT`].
pub fn wait_applied(
    link: &Link,
    replica: &mut Conn,
    mariadb: bool,
    pos: &str,
    abort: &std::sync::atomic::AtomicBool,
) -> anyhow::Result<f64> {
    let t0 = Instant::now();
    let mut said = Instant::now();
    let sql = if mariadb {
        "SELECT /* innops:replicas */ MASTER_GTID_WAIT(?, 1)"
    } else {
        "SELECT /* innops:replicas */ WAIT_FOR_EXECUTED_GTID_SET(?, 1)"
    };
    loop {
        let r: Option<i64> = replica.exec_first(sql, (pos,))?;
        if r == Some(0) {
            return Ok(t0.elapsed().as_secs_f64());
        }
        if let Lag::Stopped(why) = lag_of(&Topology::sources_now(replica, mariadb)?) {
            return Err(crate::error::refused(format!(
                "replica {} does not apply what the primary wrote: {why}; fix its replication, then resume",
                link.label
            )));
        }
        if abort.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(crate::error::Failure::Interrupted(format!(
                "interrupted while waiting for replica {} to apply the primary's writes",
                link.label
            ))
            .into());
        }
        if t0.elapsed() > APPLY_WAIT {
            return Err(crate::error::refused(format!(
                "replica {} has not applied the primary's writes after {} minutes: let it catch up, then resume",
                link.label,
                APPLY_WAIT.as_secs() / 60
            )));
        }
        if said.elapsed() >= Duration::from_secs(10) {
            crate::progress::print_line(&format!(
                "innops: waiting for replica {} to apply {pos} ({} s so far)",
                link.label,
                t0.elapsed().as_secs()
            ));
            said = Instant::now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::topology::Replica;

    fn source(io: &str, sql: bool, lag: Option<u64>) -> Source {
        Source {
            name: String::new(),
            host: "db1".into(),
            port: 3306,
            io: io.into(),
            sql_running: sql,
            lag_s: lag,
            using_gtid: "Slave_Pos".into(),
            last_error: None,
        }
    }

    #[test]
    fn host_port_takes_names_and_v6_and_refuses_the_rest() {
        assert_eq!(
            parse_host_port("10.0.0.2:3307"),
            Ok(("10.0.0.2".into(), 3307))
        );
        assert_eq!(parse_host_port("[::1]:3306"), Ok(("::1".into(), 3306)));
        assert!(parse_host_port("db2").is_err());
        assert!(parse_host_port("db2:x").is_err());
        assert!(parse_host_port(":3306").is_err());
        assert!(parse_host_port("db2:0").is_err());
    }

    #[test]
    fn a_replica_is_named_as_host_port_or_a_pt_dsn_never_with_a_password() {
        assert_eq!(parse_dsn("db2:3307").unwrap().label(), "db2:3307");
        let d = parse_dsn("h=db2,P=3307,u=watch,F=/etc/innops/replica.cnf").unwrap();
        assert_eq!(
            (
                d.host.as_deref(),
                d.port,
                d.user.as_deref(),
                d.file.as_deref()
            ),
            (
                Some("db2"),
                Some(3307),
                Some("watch"),
                Some("/etc/innops/replica.cnf")
            )
        );
        assert_eq!(
            parse_dsn("S=/run/r1.sock").unwrap().label(),
            "socket /run/r1.sock"
        );
        assert!(parse_dsn("h=db2,p=secret")
            .unwrap_err()
            .contains("plan.json"));
        assert!(parse_dsn("h=db2,D=shop")
            .unwrap_err()
            .contains("D= is not one of"));
        assert!(parse_dsn("P=3307").unwrap_err().contains("names no server"));
        assert!(parse_dsn("h=db2,P=x").unwrap_err().contains("not a port"));
        let primary =
            crate::server::connect::to_target(&crate::server::connect::ConnSpec::default());
        let t = parse_dsn("h=db2,P=3307,u=watch")
            .unwrap()
            .target(&primary)
            .unwrap();
        assert_eq!(
            (t.opts.get_user(), t.opts.get_tcp_port()),
            (Some("watch"), 3307)
        );
        assert_eq!(t.label, "watch@db2:3307");
    }

    #[test]
    fn lag_is_the_worst_connection_and_a_stopped_thread_says_so() {
        assert_eq!(
            lag_of(&[source("Yes", true, Some(3)), source("Yes", true, Some(7))]),
            Lag::Behind(7)
        );
        assert!(
            matches!(lag_of(&[source("Connecting", true, None)]), Lag::Stopped(w) if w.contains("IO Connecting"))
        );
        assert!(
            matches!(lag_of(&[source("Yes", false, None)]), Lag::Stopped(w) if w.contains("SQL No"))
        );
        assert!(matches!(lag_of(&[]), Lag::Stopped(_)));
        assert!(
            matches!(lag_of(&[source("Yes", true, None)]), Lag::Stopped(w) if w.contains("NULL"))
        );
    }

    #[test]
    fn lag_over_max_pauses_over_critical_stops_and_stopped_replication_pauses() {
        let w = Watch::default();
        let go = vec![("a:1".to_string(), Lag::Behind(1))];
        assert_eq!(decide(&go, &w), LoadDecision::Go);
        let slow = vec![
            ("a:1".to_string(), Lag::Behind(0)),
            ("b:2".to_string(), Lag::Behind(2)),
        ];
        assert!(
            matches!(decide(&slow, &w), LoadDecision::Pause(m) if m.contains("b:2 is 2 s behind, over --max-lag 1"))
        );
        let far = vec![
            ("a:1".to_string(), Lag::Stopped("x".into())),
            ("b:2".to_string(), Lag::Behind(61)),
        ];
        assert!(
            matches!(decide(&far, &w), LoadDecision::Abort(m) if m.contains("--critical-lag 60"))
        );
        let stopped = vec![(
            "a:1".to_string(),
            Lag::Stopped("replication is not running".into()),
        )];
        assert!(
            matches!(decide(&stopped, &w), LoadDecision::Pause(m) if m.starts_with("replica a:1: replication"))
        );
    }

    #[test]
    fn replicas_come_from_their_registration_or_the_flag() {
        let primary =
            crate::server::connect::to_target(&crate::server::connect::ConnSpec::default());
        let mut topo = Topology {
            replicas: vec![Replica {
                server_id: 2,
                host: "127.0.0.1".into(),
                port: 3307,
            }],
            replicas_connected: 1,
            ..Topology::default()
        };
        let l = links(&primary, &topo, &[]).unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].label, "127.0.0.1:3307");
        assert_eq!(l[0].target.opts.get_tcp_port(), 3307);
        topo.replicas_connected = 2;
        assert!(links(&primary, &topo, &[])
            .unwrap_err()
            .contains("but 1 registered (report_host)"));
        topo.unknown
            .push("replicas (SHOW SLAVE HOSTS: Access denied)".into());
        assert!(links(&primary, &topo, &[])
            .unwrap_err()
            .contains("could not list them (replicas (SHOW SLAVE HOSTS: Access denied))"));
        assert_eq!(
            links(&primary, &topo, &["db9:3310".into()]).unwrap()[0].label,
            "db9:3310"
        );
        topo.replicas[0].host.clear();
        assert!(links(&primary, &topo, &[])
            .unwrap_err()
            .contains("server_id 2"));
    }
}
