//! The benchmark's hot path on the connection's own socket: COM_STMT_EXECUTE and COM_QUERY written and their
//! replies read directly, counting rows without decoding them, on a connection the `mysql` crate opened,
//! authenticated and prepared the statements on.
//!
//! Why not through the crate: its blocking `recv` on a Unix socket is woken every time the server consumes
//! the request it just sent (the socket's write-space wake-up shares the wait queue), so each statement costs
//! the client about 1.5 sleeps instead of one, and the server often finds the next request not yet there.
//! libmariadb, which sysbench uses, reads without waiting and then waits in `poll(POLLIN)`, which ignores
//! those wake-ups; this module does the same, so innops loads the server the way sysbench does. Decoding
//! every row into `Value`s, which sysbench does not do either, is skipped as well.
//!
//! The connection has no TLS and no compression (innops builds the crate without them), and the crate's
//! framing is idle between our exchanges: each one is a whole request and its whole reply.

use std::io;
use std::os::unix::io::RawFd;

use mysql::Value;

/// What a statement returned, classified the way sysbench counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result set with this many rows.
    Rows(u64),
    /// No result set; rows affected.
    Affected(u64),
}

#[derive(Debug)]
pub enum WireError {
    /// An ERR packet: the exchange is complete and the connection still usable.
    Server { code: u16, message: String },
    /// The socket failed or closed.
    Io(io::Error),
    /// A reply innops does not understand; the connection is out of step.
    Protocol(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Server { code, message } => write!(f, "ERROR {code}: {message}"),
            WireError::Io(e) => write!(
                f,
                "the connection to the server was lost ({})",
                crate::error::io_detail(e)
            ),
            WireError::Protocol(m) => write!(f, "unexpected reply from the server: {m}"),
        }
    }
}

impl std::error::Error for WireError {}

/// Byte transport under the protocol: the socket, or a buffer in tests.
pub trait Transport {
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    fn send_all(&mut self, data: &[u8]) -> io::Result<()>;
}

/// A socket the `mysql` crate owns; never closed here.
pub struct Socket {
    fd: RawFd,
    /// How long to wait for the socket, in milliseconds (-1: for ever).
    timeout_ms: libc::c_int,
}

impl Socket {
    pub fn new(fd: RawFd) -> Socket {
        Socket { fd, timeout_ms: -1 }
    }

    /// Wait at most `d` for each reply (and for room to send): then the exchange fails with `TimedOut`.
    pub fn with_timeout(self, d: std::time::Duration) -> Socket {
        Socket {
            timeout_ms: libc::c_int::try_from(d.as_millis()).unwrap_or(libc::c_int::MAX),
            ..self
        }
    }

    fn wait(&self, events: libc::c_short) -> io::Result<()> {
        let mut p = libc::pollfd {
            fd: self.fd,
            events,
            revents: 0,
        };
        loop {
            // SAFETY: one valid pollfd for the duration of the call.
            let r = unsafe { libc::poll(&mut p, 1, self.timeout_ms) };
            if r == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no reply from the server within {} s",
                        self.timeout_ms / 1000
                    ),
                ));
            }
            if r > 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}

impl Transport for Socket {
    /// Read what is there; wait in poll(POLLIN) only when nothing is (as libmariadb does).
    fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            // SAFETY: buf is valid for buf.len() bytes; the fd stays open while the crate's Conn lives.
            let n = unsafe {
                libc::recv(
                    self.fd,
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n > 0 {
                return Ok(n as usize);
            }
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                ));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => self.wait(libc::POLLIN)?,
                io::ErrorKind::Interrupted => {}
                _ => return Err(e),
            }
        }
    }

    fn send_all(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            // SAFETY: data is valid for data.len() bytes.
            let n = unsafe {
                libc::send(
                    self.fd,
                    data.as_ptr().cast(),
                    data.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if n >= 0 {
                data = &data[n as usize..];
                continue;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => self.wait(libc::POLLOUT)?,
                io::ErrorKind::Interrupted => {}
                _ => return Err(e),
            }
        }
        Ok(())
    }
}

const COM_QUERY: u8 = 0x03;
const COM_STMT_EXECUTE: u8 = 0x17;
const MAX_PAYLOAD: usize = 0xFF_FFFF;
const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;

// Column types for parameters (include/mysql_com.h).
const TYPE_FLOAT: u8 = 0x04;
const TYPE_DOUBLE: u8 = 0x05;
const TYPE_NULL: u8 = 0x06;
const TYPE_LONGLONG: u8 = 0x08;
const TYPE_TIME: u8 = 0x0B;
const TYPE_DATETIME: u8 = 0x0C;
const TYPE_VAR_STRING: u8 = 0xFD;
const UNSIGNED: u8 = 0x80;

fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xFFFF => {
            out.push(0xFC);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xFF_FFFF => {
            out.push(0xFD);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xFE);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// A length-encoded integer at the start of `p`: its value and the bytes it took.
fn lenenc(p: &[u8]) -> Option<(u64, usize)> {
    let le = |b: &[u8]| b.iter().rev().fold(0u64, |a, x| (a << 8) | u64::from(*x));
    match *p.first()? {
        x @ 0..=250 => Some((u64::from(x), 1)),
        0xFC => Some((le(p.get(1..3)?), 3)),
        0xFD => Some((le(p.get(1..4)?), 4)),
        0xFE => Some((le(p.get(1..9)?), 9)),
        _ => None,
    }
}

/// Type byte and flag of a parameter.
fn param_type(v: &Value) -> [u8; 2] {
    match v {
        Value::NULL => [TYPE_NULL, 0],
        Value::Bytes(_) => [TYPE_VAR_STRING, 0],
        Value::Int(_) => [TYPE_LONGLONG, 0],
        Value::UInt(_) => [TYPE_LONGLONG, UNSIGNED],
        Value::Float(_) => [TYPE_FLOAT, 0],
        Value::Double(_) => [TYPE_DOUBLE, 0],
        Value::Date(..) => [TYPE_DATETIME, 0],
        Value::Time(..) => [TYPE_TIME, 0],
    }
}

/// A parameter's value in the binary protocol.
fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::NULL => {}
        Value::Bytes(b) => {
            put_lenenc(out, b.len() as u64);
            out.extend_from_slice(b);
        }
        Value::Int(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::UInt(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Float(x) => out.extend_from_slice(&x.to_le_bytes()),
        Value::Double(x) => out.extend_from_slice(&x.to_le_bytes()),
        &Value::Date(y, mo, d, h, mi, s, us) => {
            let len = if (h, mi, s, us) != (0, 0, 0, 0) {
                if us != 0 {
                    11
                } else {
                    7
                }
            } else if (y, mo, d) != (0, 0, 0) {
                4
            } else {
                0
            };
            out.push(len);
            if len >= 4 {
                out.extend_from_slice(&y.to_le_bytes());
                out.extend_from_slice(&[mo, d]);
            }
            if len >= 7 {
                out.extend_from_slice(&[h, mi, s]);
            }
            if len == 11 {
                out.extend_from_slice(&us.to_le_bytes());
            }
        }
        &Value::Time(neg, days, h, mi, s, us) => {
            let len = if us != 0 {
                12
            } else if (days, h, mi, s) != (0, 0, 0, 0) || neg {
                8
            } else {
                0
            };
            out.push(len);
            if len >= 8 {
                out.push(u8::from(neg));
                out.extend_from_slice(&days.to_le_bytes());
                out.extend_from_slice(&[h, mi, s]);
            }
            if len == 12 {
                out.extend_from_slice(&us.to_le_bytes());
            }
        }
    }
}

/// The COM_STMT_EXECUTE payload: no cursor, one iteration, NULL bitmap, then the parameter types (only when
/// `send_types`, as libmariadb sends them on the first execution after binding) and values.
pub fn execute_payload(out: &mut Vec<u8>, stmt_id: u32, params: &[Value], send_types: bool) {
    out.push(COM_STMT_EXECUTE);
    out.extend_from_slice(&stmt_id.to_le_bytes());
    out.push(0);
    out.extend_from_slice(&1u32.to_le_bytes());
    if params.is_empty() {
        return;
    }
    let bitmap_at = out.len();
    out.resize(bitmap_at + params.len().div_ceil(8), 0);
    for (i, v) in params.iter().enumerate() {
        if matches!(v, Value::NULL) {
            out[bitmap_at + i / 8] |= 1 << (i % 8);
        }
    }
    out.push(u8::from(send_types));
    if send_types {
        for v in params {
            out.extend_from_slice(&param_type(v));
        }
    }
    for v in params {
        put_value(out, v);
    }
}

/// The protocol over a transport: one request, one whole reply.
pub struct Wire<T: Transport> {
    t: T,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    big: Vec<u8>,
    out: Vec<u8>,
    /// Parameter types last sent per statement id: resent only when they change.
    types: Vec<(u32, Vec<u8>)>,
}

impl<T: Transport> Wire<T> {
    pub fn new(t: T) -> Wire<T> {
        Wire {
            t,
            buf: vec![0; 64 * 1024],
            pos: 0,
            len: 0,
            big: Vec::new(),
            out: Vec::new(),
            types: Vec::new(),
        }
    }

    /// Execute a prepared statement.
    pub fn execute(&mut self, stmt_id: u32, params: &[Value]) -> Result<Outcome, WireError> {
        let types: Vec<u8> = params.iter().flat_map(param_type).collect();
        let send_types = match self.types.iter_mut().find(|(id, _)| *id == stmt_id) {
            Some((_, last)) if *last == types => false,
            Some((_, last)) => {
                *last = types;
                true
            }
            None => {
                self.types.push((stmt_id, types));
                true
            }
        };
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        execute_payload(&mut out, stmt_id, params, send_types);
        let r = self.send(&out).and_then(|_| self.read_result());
        self.out = out;
        r
    }

    /// Run a plain-text statement.
    pub fn query(&mut self, sql: &str) -> Result<Outcome, WireError> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        out.push(COM_QUERY);
        out.extend_from_slice(sql.as_bytes());
        let r = self.send(&out).and_then(|_| self.read_result());
        self.out = out;
        r
    }

    /// Frame `payload` into packets (sequence numbers from 0) and send them in one write.
    fn send(&mut self, payload: &[u8]) -> Result<(), WireError> {
        let mut framed = Vec::with_capacity(payload.len() + 8);
        let mut seq = 0u8;
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_PAYLOAD);
            framed.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
            framed.push(seq);
            framed.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            seq = seq.wrapping_add(1);
            if n < MAX_PAYLOAD {
                break;
            }
        }
        self.t.send_all(&framed).map_err(WireError::Io)
    }

    /// Make `n` bytes available at `pos`.
    fn fill(&mut self, n: usize) -> Result<(), WireError> {
        while self.len - self.pos < n {
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.len, 0);
                self.len -= self.pos;
                self.pos = 0;
            }
            if self.buf.len() < n {
                self.buf.resize(n.next_power_of_two(), 0);
            }
            let got = self
                .t
                .recv(&mut self.buf[self.len..])
                .map_err(WireError::Io)?;
            self.len += got;
        }
        Ok(())
    }

    /// The next packet's payload (joined when the server split it at 16 MiB).
    fn packet(&mut self) -> Result<&[u8], WireError> {
        self.big.clear();
        let mut joined = false;
        loop {
            self.fill(4)?;
            let h = &self.buf[self.pos..self.pos + 4];
            let n = usize::from(h[0]) | usize::from(h[1]) << 8 | usize::from(h[2]) << 16;
            self.pos += 4;
            self.fill(n)?;
            let (start, end) = (self.pos, self.pos + n);
            self.pos = end;
            if n < MAX_PAYLOAD && !joined {
                return Ok(&self.buf[start..end]);
            }
            let chunk = self.buf[start..end].to_vec();
            self.big.extend_from_slice(&chunk);
            joined = true;
            if n < MAX_PAYLOAD {
                return Ok(&self.big);
            }
        }
    }

    fn server_error(p: &[u8]) -> WireError {
        let code = p
            .get(1..3)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .unwrap_or(0);
        let msg = match p.get(3) {
            Some(b'#') => p.get(9..).unwrap_or_default(),
            _ => p.get(3..).unwrap_or_default(),
        };
        WireError::Server {
            code,
            message: String::from_utf8_lossy(msg).into_owned(),
        }
    }

    /// One statement's whole reply (every result, when the server says more follow).
    fn read_result(&mut self) -> Result<Outcome, WireError> {
        let mut first = None;
        loop {
            let (outcome, status) = self.read_one()?;
            first.get_or_insert(outcome);
            if status & SERVER_MORE_RESULTS_EXISTS == 0 {
                return Ok(first.expect("set above"));
            }
        }
    }

    fn read_one(&mut self) -> Result<(Outcome, u16), WireError> {
        let p = self.packet()?;
        match p.first().copied() {
            Some(0x00) => {
                let bad = || WireError::Protocol("short OK packet".into());
                let (affected, a) = lenenc(&p[1..]).ok_or_else(bad)?;
                let (_, b) = lenenc(&p[1 + a..]).ok_or_else(bad)?;
                let s = p.get(1 + a + b..3 + a + b).ok_or_else(bad)?;
                Ok((
                    Outcome::Affected(affected),
                    u16::from_le_bytes([s[0], s[1]]),
                ))
            }
            Some(0xFF) => Err(Self::server_error(p)),
            Some(0xFB) => Err(WireError::Protocol(
                "the server asked for a LOCAL INFILE".into(),
            )),
            None => Err(WireError::Protocol("empty packet".into())),
            Some(_) => {
                let (columns, used) =
                    lenenc(p).ok_or_else(|| WireError::Protocol("bad column count".into()))?;
                // MariaDB's MARIADB_CLIENT_CACHE_METADATA adds one byte: 0 = the client has the metadata.
                let metadata = p.get(used).is_none_or(|b| *b != 0);
                if metadata {
                    for _ in 0..columns {
                        self.packet()?;
                    }
                }
                self.packet()?; // EOF after the column definitions
                let mut rows = 0;
                loop {
                    let p = self.packet()?;
                    match p.first().copied() {
                        Some(0xFE) if p.len() < 9 => {
                            let status = p
                                .get(3..5)
                                .map(|s| u16::from_le_bytes([s[0], s[1]]))
                                .unwrap_or(0);
                            return Ok((Outcome::Rows(rows), status));
                        }
                        Some(0xFF) => return Err(Self::server_error(p)),
                        _ => rows += 1,
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replies queued in advance, requests recorded.
    struct Canned {
        input: Vec<u8>,
        at: usize,
        sent: Vec<u8>,
        chunk: usize,
    }

    impl Transport for Canned {
        fn recv(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.input.len() - self.at).min(self.chunk);
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "no more input",
                ));
            }
            buf[..n].copy_from_slice(&self.input[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
        fn send_all(&mut self, data: &[u8]) -> io::Result<()> {
            self.sent.extend_from_slice(data);
            Ok(())
        }
    }

    fn packets(ps: &[&[u8]]) -> Vec<u8> {
        let mut v = Vec::new();
        for (i, p) in ps.iter().enumerate() {
            v.extend_from_slice(&(p.len() as u32).to_le_bytes()[..3]);
            v.push(i as u8 + 1);
            v.extend_from_slice(p);
        }
        v
    }

    fn wire(ps: &[&[u8]], chunk: usize) -> Wire<Canned> {
        Wire::new(Canned {
            input: packets(ps),
            at: 0,
            sent: Vec::new(),
            chunk,
        })
    }

    const EOF: &[u8] = &[0xFE, 0, 0, 0x02, 0];

    #[test]
    fn a_result_set_counts_rows_with_or_without_metadata() {
        // MySQL style: column count, one column definition, EOF, two rows, EOF.
        let mut w = wire(
            &[
                &[1],
                b"\x03defcolumn-def",
                EOF,
                &[0, 0, 3, b'a', b'b', b'c'],
                &[0, 0, 1, b'x'],
                EOF,
            ],
            7,
        );
        assert_eq!(w.execute(1, &[Value::Int(5)]).unwrap(), Outcome::Rows(2));
        // MariaDB with cached metadata: count, flag 0, EOF, rows, EOF; read in one-byte pieces.
        let mut w = wire(&[&[1, 0], EOF, &[0, 0, 1, b'x'], EOF], 1);
        assert_eq!(w.execute(1, &[]).unwrap(), Outcome::Rows(1));
        // An empty range is still a result set: sysbench counts it as a read.
        let mut w = wire(&[&[1, 1], b"def", EOF, EOF], 64);
        assert_eq!(w.execute(1, &[]).unwrap(), Outcome::Rows(0));
    }

    #[test]
    fn ok_and_err_replies() {
        let mut w = wire(&[&[0, 1, 0, 2, 0, 0, 0]], 64);
        assert_eq!(w.execute(2, &[]).unwrap(), Outcome::Affected(1));
        let mut w = wire(&[b"\xff\xbd\x04#40001Deadlock found"], 64);
        match w.query("UPDATE t SET x=1").unwrap_err() {
            WireError::Server { code, message } => {
                assert_eq!(code, 1213);
                assert_eq!(message, "Deadlock found");
            }
            e => panic!("{e}"),
        }
        let mut w = wire(&[&[0, 0, 0, 2, 0, 0, 0]], 64);
        assert_eq!(w.query("BEGIN").unwrap(), Outcome::Affected(0));
        assert_eq!(&w.t.sent[4..], b"\x03BEGIN");
        assert_eq!(&w.t.sent[..4], &[6, 0, 0, 0]);
    }

    #[test]
    fn an_error_in_the_middle_of_the_rows_ends_the_reply() {
        let mut w = wire(
            &[
                &[1, 0],
                EOF,
                &[0, 0, 1, b'x'],
                b"\xff\x12\x04#HY000Index corrupt",
            ],
            64,
        );
        assert!(matches!(
            w.execute(1, &[]),
            Err(WireError::Server { code: 1042, .. })
        ));
    }

    #[test]
    fn a_lost_connection_is_an_io_error() {
        let mut w = wire(&[&[1, 0]], 64);
        assert!(matches!(w.execute(1, &[]), Err(WireError::Io(_))));
    }

    #[test]
    fn execute_requests_carry_types_only_when_they_change() {
        let mut w = wire(
            &[
                &[0, 0, 0, 2, 0, 0, 0],
                &[0, 0, 0, 2, 0, 0, 0],
                &[0, 0, 0, 2, 0, 0, 0],
            ],
            64,
        );
        let params = [Value::UInt(7), Value::from("ab"), Value::NULL];
        w.execute(9, &params).unwrap();
        let first = w.t.sent.clone();
        // header, 0x17, id 9, flags 0, iterations 1, bitmap 0b100, bound 1, types, values.
        assert_eq!(
            &first[4..],
            &[
                0x17,
                9,
                0,
                0,
                0,
                0,
                1,
                0,
                0,
                0,
                0b100,
                1,
                TYPE_LONGLONG,
                UNSIGNED,
                TYPE_VAR_STRING,
                0,
                TYPE_NULL,
                0,
                7,
                0,
                0,
                0,
                0,
                0,
                0,
                0,
                2,
                b'a',
                b'b'
            ]
        );
        w.t.sent.clear();
        w.execute(9, &params).unwrap();
        assert_eq!(
            &w.t.sent[4..16],
            &[0x17, 9, 0, 0, 0, 0, 1, 0, 0, 0, 0b100, 0],
            "types not resent"
        );
        assert_eq!(w.t.sent.len(), first.len() - 6);
        w.t.sent.clear();
        w.execute(9, &[Value::UInt(7), Value::NULL, Value::NULL])
            .unwrap();
        assert_eq!(w.t.sent[15], 1, "changed types are sent again");
    }

    #[test]
    fn dates_times_and_lengths_encode_as_the_binary_protocol_says() {
        let mut out = Vec::new();
        put_value(&mut out, &Value::Date(2024, 1, 2, 0, 0, 0, 0));
        assert_eq!(out, [4, 0xE8, 0x07, 1, 2]);
        out.clear();
        put_value(&mut out, &Value::Date(2024, 1, 2, 3, 4, 5, 6));
        assert_eq!(out, [11, 0xE8, 0x07, 1, 2, 3, 4, 5, 6, 0, 0, 0]);
        out.clear();
        put_value(&mut out, &Value::Time(true, 1, 2, 3, 4, 0));
        assert_eq!(out, [8, 1, 1, 0, 0, 0, 2, 3, 4]);
        out.clear();
        put_lenenc(&mut out, 300);
        assert_eq!(out, [0xFC, 0x2C, 0x01]);
        assert_eq!(lenenc(&out), Some((300, 3)));
        assert_eq!(lenenc(&[0xFD, 1, 0, 1]), Some((65537, 4)));
    }
}
