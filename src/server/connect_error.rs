//! One sentence for each way a connection fails (a refused login, a missing socket, a TLS handshake, a
//! timeout), with the fix: what `Target::connect` says instead of the driver's error.

/// One sentence for a connection failure.
pub fn describe_connect_error(label: &str, e: &mysql::Error) -> String {
    use mysql::{DriverError, Error};
    match e {
        Error::MySqlError(me) if me.code == 1045 || me.code == 1698 => format!(
            "the server at {label} refused the credentials ({}): check --user and --password (or MYSQL_PWD, or the [client] group of ~/.my.cnf)",
            me.message
        ),
        Error::MySqlError(me) if me.code == 1049 => {
            format!("the server at {label} has no such database ({}): check the database name", me.message)
        }
        Error::MySqlError(me) => {
            format!("the server at {label} refused the connection with error {} ({}): fix that and retry", me.code, me.message)
        }
        Error::DriverError(DriverError::TlsNotSupported) => format!(
            "the server at {label} does not offer TLS, and the connection options ask for it (--ssl-mode, --ssl-ca or ssl-verify-server-cert, as the mariadb client's ERROR 2026): give the server ssl_cert and ssl_key, or connect with --ssl-mode=PREFERRED"
        ),
        Error::TlsError(t) => tls_sentence(label, &t.to_string()),
        // rustls reports a refused certificate through the stream, as an I/O error.
        Error::IoError(io) if is_rustls(io) => tls_sentence(label, &io.to_string()),
        Error::CodecError(c) => match std::error::Error::source(c)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
        {
            Some(io) if is_rustls(io) => tls_sentence(label, &io.to_string()),
            _ => format!(
                "cannot connect to {label} ({}): check the connection options",
                crate::error::mysql_detail(e)
            ),
        },
        Error::IoError(io) => io_sentence(label, io.kind(), &io.to_string()),
        Error::DriverError(DriverError::CouldNotConnect(Some((_, desc, kind)))) => io_sentence(label, *kind, desc),
        Error::DriverError(DriverError::ConnectTimeout) => {
            format!("connecting to {label} timed out: check the host, the port and any firewall in between")
        }
        other => format!(
            "cannot connect to {label} ({}): check the connection options",
            crate::error::mysql_detail(other)
        ),
    }
}

/// An I/O error that is rustls refusing the handshake (an unknown issuer, a wrong name, no common protocol).
pub(super) fn is_rustls(io: &std::io::Error) -> bool {
    io.get_ref()
        .is_some_and(|inner| inner.is::<rustls::Error>())
}

fn tls_sentence(label: &str, detail: &str) -> String {
    format!(
        "the TLS handshake with {label} failed ({detail}): check --ssl-ca, --ssl-cert and --ssl-key against the server's certificate, and --ssl-mode"
    )
}

fn io_sentence(label: &str, kind: std::io::ErrorKind, detail: &str) -> String {
    use std::io::ErrorKind::*;
    match kind {
        NotFound => format!(
            "cannot connect to {label}: the socket does not exist; is the server running, and is --socket right?"
        ),
        ConnectionRefused => {
            format!("cannot connect to {label}: connection refused; is the server running, and are --host/--port/--socket right?")
        }
        PermissionDenied => {
            format!("cannot connect to {label}: permission denied on the socket; run as a user that may open it")
        }
        _ => format!("cannot connect to {label} ({detail}): check that the server is running and the connection options"),
    }
}
