//! How the mariadb client interprets the connection keys of an option file, beyond reading the file
//! (that is [`super::optionfile`]): my_getopt's unique prefixes (`ssl-verify-server` is
//! `ssl-verify-server-cert`), its booleans (`skip-ssl`, `ssl-verify-server-cert = OFF`), and the TLS
//! restrictions `tls-version` and `ssl-cipher` as rustls cipher suites. Measured against MariaDB 10.11's
//! `mariadb` client: tests/optionfiles.rs runs both on the same files against servers with and without TLS.

use super::connect::{ConnSpec, OPTION_FILE_KEYS};
use super::optionfile;
use crate::error::bad_input;

/// The long options of MariaDB 10.11's `mariadb` client (normalised), against which my_getopt expands a unique
/// prefix written in an option file (`ssl-verify-server` is `ssl-verify-server-cert`, `us` is `user`).
const MARIADB_CLIENT_OPTIONS: &[&str] = &[
    "abort_source_on_error",
    "auto_rehash",
    "auto_vertical_output",
    "batch",
    "binary_as_hex",
    "binary_mode",
    "character_sets_dir",
    "column_names",
    "column_type_info",
    "comments",
    "compress",
    "connect_expired_password",
    "connect_timeout",
    "database",
    "debug",
    "debug_check",
    "debug_info",
    "default_auth",
    "default_character_set",
    "delimiter",
    "enable_cleartext_plugin",
    "execute",
    "force",
    "help",
    "host",
    "html",
    "i_am_a_dummy",
    "ignore_spaces",
    "init_command",
    "line_numbers",
    "local_infile",
    "max_allowed_packet",
    "max_join_size",
    "named_commands",
    "net_buffer_length",
    "no_auto_rehash",
    "no_beep",
    "one_database",
    "pager",
    "password",
    "plugin_dir",
    "port",
    "print_query_on_error",
    "progress_reports",
    "prompt",
    "protocol",
    "quick",
    "quick_max_column_width",
    "raw",
    "reconnect",
    "safe_updates",
    "sandbox",
    "secure_auth",
    "select_limit",
    "server_arg",
    "show_warnings",
    "sigint_ignore",
    "silent",
    "skip_column_names",
    "skip_line_numbers",
    "socket",
    "ssl",
    "ssl_ca",
    "ssl_capath",
    "ssl_cert",
    "ssl_cipher",
    "ssl_crl",
    "ssl_crlpath",
    "ssl_key",
    "ssl_verify_server_cert",
    "table",
    "tee",
    "tls_version",
    "unbuffered",
    "user",
    "verbose",
    "version",
    "vertical",
    "wait",
    "xml",
];

/// `key` (normalised) as my_getopt takes it: itself when it names an option, else the one option it is a unique
/// prefix of (after `skip_`, `disable_`, `enable_`); an ambiguous or unknown prefix stays as written.
pub(crate) fn full_option_name(key: &str) -> String {
    if key.is_empty() || MARIADB_CLIENT_OPTIONS.contains(&key) {
        return key.to_string();
    }
    let (prefix, rest) = ["skip_", "disable_", "enable_"]
        .iter()
        .find_map(|p| key.strip_prefix(p).map(|r| (*p, r)))
        .unwrap_or(("", key));
    if rest.is_empty() || MARIADB_CLIENT_OPTIONS.contains(&rest) {
        return key.to_string();
    }
    let hits: Vec<&&str> = MARIADB_CLIENT_OPTIONS
        .iter()
        .filter(|o| o.starts_with(rest))
        .collect();
    match hits.as_slice() {
        [one] => format!("{prefix}{one}"),
        _ => key.to_string(),
    }
}

/// `set` with the keys of the client groups expanded to full option names, as the mariadb client reads them.
/// A prefix that could be several of the options innops reads is refused, as the mariadb client refuses it
/// ("ambiguous option").
pub(crate) fn with_full_names(
    set: &optionfile::OptionSet,
    client: &[String],
) -> anyhow::Result<optionfile::OptionSet> {
    let mut out = set.clone();
    for e in out
        .entries
        .iter_mut()
        .filter(|e| client.iter().any(|g| g.eq_ignore_ascii_case(&e.group)))
    {
        let full = full_option_name(&e.key);
        let rest = ["skip_", "disable_", "enable_"]
            .iter()
            .find_map(|p| full.strip_prefix(p))
            .unwrap_or(&full);
        let known = |k: &str| MARIADB_CLIENT_OPTIONS.contains(&k) || OPTION_FILE_KEYS.contains(&k);
        if !known(&full) && !rest.is_empty() && !known(rest) {
            let candidates: Vec<&str> = MARIADB_CLIENT_OPTIONS
                .iter()
                .copied()
                .filter(|o| o.starts_with(rest))
                .collect();
            if candidates.len() > 1 && candidates.iter().any(|c| OPTION_FILE_KEYS.contains(c)) {
                return Err(bad_input(format!(
                    "'{}' in {}:{} could be any of {} (the mariadb client refuses it as ambiguous): write the full name",
                    e.raw_key,
                    e.file.display(),
                    e.line,
                    candidates.join(", ")
                )));
            }
        }
        e.key = full;
    }
    Ok(out)
}

/// A boolean client option as my_getopt reads it from option files, last line wins: `name`, `name=1|0|on|
/// off|true|false`, `enable-name`, `skip-name`, `disable-name` (and their `loose-` forms).
pub(crate) fn bool_option<G: AsRef<str>>(
    set: &optionfile::OptionSet,
    groups: &[G],
    name: &str,
) -> anyhow::Result<Option<bool>> {
    let mut out = None;
    for e in set.entries.iter().filter(|e| {
        groups
            .iter()
            .any(|g| g.as_ref().eq_ignore_ascii_case(&e.group))
    }) {
        let negated = if e.key == name || e.key.strip_prefix("enable_") == Some(name) {
            false
        } else if e.key.strip_prefix("skip_") == Some(name)
            || e.key.strip_prefix("disable_") == Some(name)
        {
            true
        } else {
            continue;
        };
        let value = match e.value.as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("1") | Some("on") | Some("true") => true,
            Some("0") | Some("off") | Some("false") => false,
            Some(_) => {
                return Err(bad_input(format!(
                    "{} '{}' in {}:{} is not a boolean: write 1 or 0 (ON or OFF)",
                    e.raw_key,
                    e.value.as_deref().unwrap_or(""),
                    e.file.display(),
                    e.line
                )))
            }
        };
        out = Some(value != negated);
    }
    Ok(out)
}

/// The rustls cipher suites `--tls-version` and `--ssl-cipher` allow (empty: no restriction), or a refusal
/// when they allow nothing innops can speak (rustls has TLS 1.2 and 1.3 only, and the ECDHE/AEAD ciphers).
pub(crate) fn tls_cipher_suites(
    spec: &ConnSpec,
) -> anyhow::Result<Vec<rustls::SupportedCipherSuite>> {
    use rustls::crypto::ring::ALL_CIPHER_SUITES;
    let restricted = spec.tls_version.is_some() || spec.ssl_cipher.is_some();
    if !restricted {
        return Ok(Vec::new());
    }
    let is13 =
        |s: &rustls::SupportedCipherSuite| matches!(s, rustls::SupportedCipherSuite::Tls13(_));
    let (mut v12, mut v13) = (true, true);
    if let Some(list) = &spec.tls_version {
        let (mut a12, mut a13) = (false, false);
        for v in list.split([',', ' ', ':']).filter(|v| !v.is_empty()) {
            match v.to_ascii_lowercase().as_str() {
                "tlsv1.2" => a12 = true,
                "tlsv1.3" => a13 = true,
                "tlsv1.0" | "tlsv1" | "tlsv1.1" => {}
                _ => {
                    return Err(bad_input(format!(
                        "tls-version '{list}' names '{v}', which is not a TLS version: write e.g. TLSv1.2,TLSv1.3"
                    )))
                }
            }
        }
        if !a12 && !a13 {
            return Err(bad_input(format!(
                "tls-version '{list}' allows only versions innops cannot speak (it has TLSv1.2 and TLSv1.3): add TLSv1.2 or TLSv1.3"
            )));
        }
        (v12, v13) = (a12, a13);
    }
    let mut suites: Vec<rustls::SupportedCipherSuite> = ALL_CIPHER_SUITES
        .iter()
        .copied()
        .filter(|s| if is13(s) { v13 } else { v12 })
        .collect();
    if let Some(list) = &spec.ssl_cipher {
        let named: Vec<String> = list
            .split([':', ',', ' '])
            .filter(|c| !c.is_empty())
            .map(rustls_cipher_name)
            .collect();
        let has = |s: &rustls::SupportedCipherSuite| {
            s.suite()
                .as_str()
                .is_some_and(|n| named.iter().any(|x| x == n))
        };
        let names13 = ALL_CIPHER_SUITES.iter().any(|s| is13(s) && has(s));
        // As OpenSSL: the TLS 1.3 suites are restricted only when the list names one of them.
        suites.retain(|s| has(s) || (is13(s) && !names13));
        if suites.is_empty() || !ALL_CIPHER_SUITES.iter().any(has) {
            let offered: Vec<&str> = ALL_CIPHER_SUITES
                .iter()
                .filter_map(|s| s.suite().as_str())
                .collect();
            return Err(bad_input(format!(
                "ssl-cipher '{list}' names no cipher innops can use{}: name one of {} (OpenSSL's names work too)",
                if spec.tls_version.is_some() { " with that tls-version" } else { "" },
                offered.join(", ")
            )));
        }
    }
    Ok(suites)
}

/// OpenSSL's name of a cipher (`ECDHE-RSA-AES128-GCM-SHA256`, `TLS_AES_128_GCM_SHA256`) → rustls's.
fn rustls_cipher_name(name: &str) -> String {
    let n = name.trim().to_ascii_uppercase();
    let mapped = match n.as_str() {
        "TLS_AES_128_GCM_SHA256" => "TLS13_AES_128_GCM_SHA256",
        "TLS_AES_256_GCM_SHA384" => "TLS13_AES_256_GCM_SHA384",
        "TLS_CHACHA20_POLY1305_SHA256" => "TLS13_CHACHA20_POLY1305_SHA256",
        "ECDHE-ECDSA-AES128-GCM-SHA256" => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384" => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305" => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        "ECDHE-RSA-AES128-GCM-SHA256" => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "ECDHE-RSA-AES256-GCM-SHA384" => "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "ECDHE-RSA-CHACHA20-POLY1305" => "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        other => other,
    };
    mapped.to_string()
}
