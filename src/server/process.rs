//! Processes innops starts or watches by pid: whether one is alive, waiting for one to end, and the environment a
//! server must not inherit. Pure OS plumbing (procfs, signals), shared by the sandbox, server control, the
//! recovery's private servers and the drill's page damage; nothing here knows a server's protocol.

use std::process::Command;
use std::time::{Duration, Instant};

/// Variables no server innops starts may inherit: `MYSQL_PWD` is the DBA's client password, and a server keeps
/// its environment in /proc/PID/environ for its whole life (readable by root and by the server's user).
pub const NOT_FOR_SERVERS: &[&str] = &["MYSQL_PWD"];

/// `cmd` without [`NOT_FOR_SERVERS`] in the environment it passes on (a server, or a command that starts one).
pub fn without_client_secrets(cmd: &mut Command) -> &mut Command {
    for v in NOT_FOR_SERVERS {
        cmd.env_remove(v);
    }
    cmd
}

/// Whether a process exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the parenthesised command name.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z') | Some('X') | None)
        }
        Err(_) => false,
    }
}

/// The signals innops sends to a server it started or controls: TERM asks for a clean shutdown, KILL is a
/// crash (tests, the drill, and a last resort).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Term,
    Kill,
}

/// Send `signal` to `pid` (a pid innops read from a server's own pid file or started itself).
pub fn send(pid: u32, signal: Signal) {
    // kill(2) with pid 0 signals the whole process group, innops included: never that.
    if pid == 0 {
        return;
    }
    let sig = match signal {
        Signal::Term => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    };
    // SAFETY: plain kill(2), no memory is shared; callers pass the pid of a server of their own.
    unsafe { libc::kill(pid as i32, sig) };
}

/// Send `signal` to `pid` and wait until it is gone; false when it outlives `timeout`.
pub fn signal_and_wait(pid: u32, signal: Signal, timeout: Duration) -> bool {
    send(pid, signal);
    wait_exit(pid, timeout)
}

/// Wait until `pid` is gone; false on timeout.
pub fn wait_exit(pid: u32, timeout: Duration) -> bool {
    let start = Instant::now();
    while process_alive(pid) {
        if start.elapsed() > timeout {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_a_reaped_child_is_not() {
        assert!(process_alive(std::process::id()));
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_alive(pid));
        assert!(wait_exit(pid, Duration::from_secs(1)));
    }

    #[test]
    fn a_terminated_process_is_waited_for() {
        let mut child = Command::new("sleep").arg("600").spawn().unwrap();
        let pid = child.id();
        // Reap it from another thread, as a server's parent would; the wait sees it gone.
        let reaper = std::thread::spawn(move || child.wait().unwrap());
        assert!(signal_and_wait(pid, Signal::Term, Duration::from_secs(60)));
        assert!(!reaper.join().unwrap().success());
    }

    #[test]
    fn client_secrets_are_not_passed_on() {
        let mut c = Command::new("env");
        c.env("MYSQL_PWD", "secret");
        without_client_secrets(&mut c);
        let out = c.output().unwrap();
        assert!(!String::from_utf8_lossy(&out.stdout).contains("MYSQL_PWD"));
    }
}
