//! sysbench's general and driver options, taken by their sysbench names: the old names folded into the new
//! ones as sysbench folds them (a value above 0 wins, with a line saying so), `--mysql-ssl*` put in the places of
//! innops's TLS flags, and the options innops means differently (`--forced-shutdown`, `--mysql-compression=on`,
//! `--verbosity=4`, `--debug`) each answered by a one-line note: nothing sysbench takes is dropped unsaid.

use std::path::{Path, PathBuf};

use crate::bench::action::Action;
use crate::cli::{BenchArgs, ConnArgs, SslModeArg};
use crate::error::bad_input;

/// sysbench's general options, resolved.
#[derive(Debug, PartialEq)]
pub(super) struct General {
    pub threads: u32,
    pub events: u64,
    pub time: u64,
    pub rate: u32,
    /// The run's text report is printed (sysbench prints it at `--verbosity` 3 and above).
    pub report: bool,
    /// The statements innops's client sends are printed, as `-v` prints them (`--verbosity=5`, `--debug`).
    pub statements: bool,
    /// One line each, for stderr.
    pub notes: Vec<String>,
}

/// `--forced-shutdown`'s value as sysbench 1.0 reads it: seconds after `--time` (`N`), a percent of `--time`
/// (`N%`), `off`, or nothing (5% of `--time`). `None` is off.
pub(super) fn forced_shutdown(v: &str, time: u64) -> anyhow::Result<Option<u64>> {
    if v.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    if v.is_empty() {
        return Ok(Some(time / 20));
    }
    let (digits, percent) = match v.strip_suffix('%') {
        Some(d) => (d, true),
        None => (v, false),
    };
    let n: u64 = digits.parse().map_err(|_| {
        bad_input(format!(
            "--forced-shutdown={v} is not off, N or N%: give the seconds after --time (--forced-shutdown=5), a percent of --time (=10%), or off"
        ))
    })?;
    Ok(Some(if percent { n * time / 100 } else { n }))
}

/// The general options from the flags, with the notes they call for in this `action`.
pub(super) fn general(a: &BenchArgs, action: Option<Action>) -> anyhow::Result<General> {
    let mut notes = Vec::new();
    let mut old = |name: &str, new: &str, v: Option<u64>| -> Option<u64> {
        let v = v.filter(|v| *v > 0)?;
        notes.push(format!("note: {name} is sysbench's old name for {new}"));
        Some(v)
    };
    let threads = old("--num-threads", "--threads", a.num_threads.map(u64::from))
        .map_or(a.threads, |v| v as u32);
    let events = old("--max-requests", "--events", a.max_requests).unwrap_or(a.events);
    let time = old("--max-time", "--time", a.max_time).unwrap_or(a.time);
    let rate = old("--tx-rate", "--rate", a.tx_rate.map(u64::from)).map_or(a.rate, |v| v as u32);
    // sysbench: --debug sets the verbosity to 5.
    let debug = a.debug.unwrap_or(false);
    let verbosity = if debug { 5 } else { a.verbosity.unwrap_or(3) };
    if verbosity == 4 {
        notes.push(
            "note: --verbosity=4 prints what 3 prints: innops bench has no info-level lines (5 adds the statements its client sends)".into(),
        );
    }
    if verbosity == 5 {
        notes.push(format!(
            "note: {} prints the statements innops's client sends (as -v), not sysbench's driver trace; a run's own statements go over the socket unprinted, so the server's general log is where they show",
            if debug { "--debug" } else { "--verbosity=5" }
        ));
    }
    if let Some(v) = &a.forced_shutdown {
        let grace = forced_shutdown(v, time)?;
        if let (Some(s), Some(Action::Run)) = (grace, action) {
            notes.push(format!(
                "note: --forced-shutdown: innops does not cut a transaction short {s} s after --time; at --time each thread finishes the transaction in flight and the run ends (Ctrl-C twice quits at once)"
            ));
        }
    }
    Ok(General {
        threads,
        events,
        time,
        rate,
        report: verbosity >= 3,
        statements: verbosity == 5,
        notes,
    })
}

/// sysbench 1.0's `--mysql-ssl=on` reads these from the current directory.
const SYSBENCH_1_0_PEMS: [&str; 3] = ["client-key.pem", "client-cert.pem", "cacert.pem"];

/// `--mysql-ssl` as an `--ssl-mode`: sysbench 1.0's on/off (on requires TLS), or sysbench 1.1's modes.
fn ssl_mode(v: &str) -> anyhow::Result<SslModeArg> {
    Ok(match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" | "required" => SslModeArg::Required,
        "off" | "false" | "no" | "0" | "disabled" => SslModeArg::Disabled,
        "preferred" => SslModeArg::Preferred,
        "verify_ca" => SslModeArg::VerifyCa,
        "verify_identity" => SslModeArg::VerifyIdentity,
        _ => {
            return Err(bad_input(format!(
                "--mysql-ssl={v} is not on, off or an SSL mode: give on, off, DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY"
            )))
        }
    })
}

/// Put sysbench's TLS and compression flags into the connection flags `c`; `dir` is where sysbench 1.0 looks
/// for its certificate files. Returns the notes they call for.
pub(super) fn tls(a: &BenchArgs, c: &mut ConnArgs, dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut notes = Vec::new();
    for (field, v) in [
        (&mut c.ssl_ca, &a.mysql_ssl_ca),
        (&mut c.ssl_cert, &a.mysql_ssl_cert),
        (&mut c.ssl_key, &a.mysql_ssl_key),
    ] {
        if v.is_some() {
            field.clone_from(v);
        }
    }
    if a.mysql_ssl_cipher.is_some() {
        c.ssl_cipher.clone_from(&a.mysql_ssl_cipher);
    }
    if let Some(v) = &a.mysql_ssl {
        let mode = ssl_mode(v)?;
        c.ssl_mode = Some(mode);
        let sysbench_1_0_on = !v.eq_ignore_ascii_case("required") && mode == SslModeArg::Required;
        if sysbench_1_0_on && c.ssl_ca.is_none() && c.ssl_cert.is_none() && c.ssl_key.is_none() {
            let found: Vec<PathBuf> = SYSBENCH_1_0_PEMS
                .iter()
                .map(|f| dir.join(f))
                .filter(|p| p.is_file())
                .collect();
            let has = |name: &str| found.iter().find(|p| p.ends_with(name)).cloned();
            if let (Some(key), Some(cert)) = (has("client-key.pem"), has("client-cert.pem")) {
                (c.ssl_key, c.ssl_cert) = (Some(key), Some(cert));
            }
            c.ssl_ca = has("cacert.pem");
            let used: Vec<&str> = [&c.ssl_key, &c.ssl_cert, &c.ssl_ca]
                .iter()
                .filter_map(|p| p.as_ref()?.file_name()?.to_str())
                .collect();
            if !used.is_empty() {
                notes.push(format!(
                    "note: --mysql-ssl=on uses {} from the current directory, as sysbench 1.0 does",
                    used.join(", ")
                ));
            }
        }
    }
    if a.mysql_compression == Some(true) {
        notes.push(
            "note: --mysql-compression=on: innops bench's connections stay uncompressed (it times each statement on the connection's own socket), so the figures are an uncompressed connection's".into(),
        );
    }
    Ok(notes)
}
