//! `-p` without a value: ask for the password on the terminal, without echo, as the mysql client does.
//!
//! Echo is turned off before the prompt is written, so whatever is typed once the prompt shows is never echoed
//! (asking first and turning echo off after would echo a fast typist's first characters).

use std::io::{BufRead, Write};
use std::os::fd::AsRawFd;

use crate::error::bad_input;

/// The password typed on the terminal; bad input when there is no terminal to ask on.
pub fn ask() -> anyhow::Result<String> {
    let no_terminal = || {
        bad_input(
            "-p without a value asks for the password on a terminal, and there is none: give it with --password=SECRET, MYSQL_PWD or the option file",
        )
    };
    // SAFETY: isatty(3) on a descriptor number only reads its state.
    if unsafe { libc::isatty(0) } != 1 {
        return Err(no_terminal());
    }
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|_| no_terminal())?;
    let fd = tty.as_raw_fd();
    // SAFETY: tcgetattr/tcsetattr on the terminal we opened, with a termios it filled in.
    let mut saved: libc::termios = unsafe { std::mem::zeroed() };
    if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
        return Err(no_terminal());
    }
    let mut quiet = saved;
    quiet.c_lflag &= !libc::ECHO;
    quiet.c_lflag |= libc::ECHONL;
    if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &quiet) } != 0 {
        return Err(no_terminal());
    }
    let restore = Restore { fd, saved };
    let mut out = &tty;
    let mut line = String::new();
    let read = out
        .write_all(b"Enter password: ")
        .and_then(|_| out.flush())
        .and_then(|_| std::io::BufReader::new(&tty).read_line(&mut line));
    drop(restore);
    read.map_err(|e| bad_input(format!("reading the password from the terminal failed ({e}): give it with --password=SECRET or MYSQL_PWD")))?;
    Ok(line.trim_end_matches(['\n', '\r']).to_string())
}

/// Puts the terminal's echo back however the read ends.
struct Restore {
    fd: i32,
    saved: libc::termios,
}

impl Drop for Restore {
    fn drop(&mut self) {
        // SAFETY: restores the settings read from the same terminal.
        unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved) };
    }
}
