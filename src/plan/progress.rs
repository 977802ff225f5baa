//! The one place progress bars are made: an indicatif bar on stderr when stderr is a terminal, otherwise a plain
//! status line every few seconds, so logs of unattended runs still show progress.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress of one long piece of work.
pub struct Progress {
    bar: ProgressBar,
    tty: bool,
    label: String,
    last_line: Instant,
}

impl Progress {
    /// `total` units (rows, bytes, seconds); `unit` names them in the status line.
    pub fn new(label: &str, total: u64) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar = if tty {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{msg:24} [{bar:30}] {pos}/{len} {per_sec} ETA {eta}")
                    .expect("static template")
                    .progress_chars("=> "),
            );
            b.set_message(label.to_string());
            b
        } else {
            ProgressBar::hidden()
        };
        bar.set_length(total);
        Progress {
            bar,
            tty,
            label: label.to_string(),
            last_line: Instant::now(),
        }
    }

    pub fn set(&mut self, pos: u64) {
        self.bar.set_position(pos);
        if !self.tty && self.last_line.elapsed() >= Duration::from_secs(5) {
            self.last_line = Instant::now();
            let len = self.bar.length().unwrap_or(0);
            eprintln!("{}: {pos}/{len}", self.label);
        }
    }

    /// Run `f` with the bar hidden, so lines it prints are not overwritten.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
