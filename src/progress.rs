//! The one place progress is shown: indicatif bars on stderr when stderr is a terminal, otherwise a plain
//! status line every few seconds at most, so logs of unattended runs still show progress. Also the one place
//! the run's own lines go ([`say`]) and, under `--verbose`, the statements it sends ([`statement`]): both are
//! printed above any bar, so a bar never overwrites them. `--quiet` silences all of it.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use crate::units::{format_count, format_rate};

/// How much the run says on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Errors and the final verdict only.
    Quiet = 0,
    /// Step lines and progress.
    Normal = 1,
    /// Also every statement as it is sent.
    Verbose = 2,
}

static LEVEL: AtomicU8 = AtomicU8::new(Level::Normal as u8);

/// Set once by the command layer from `--quiet` / `--verbose`.
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::SeqCst);
}

pub fn level() -> Level {
    match LEVEL.load(Ordering::SeqCst) {
        0 => Level::Quiet,
        2 => Level::Verbose,
        _ => Level::Normal,
    }
}

/// Seconds between the plain status lines printed when stderr is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(10);

fn multi() -> &'static MultiProgress {
    static MULTI: OnceLock<MultiProgress> = OnceLock::new();
    MULTI.get_or_init(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
}

fn tty() -> bool {
    std::io::stderr().is_terminal()
}

/// Whether text for a stream shows colour: a terminal, `NO_COLOR` unset or empty (no-color.org), and a `TERM`
/// other than `dumb`.
pub fn colour_wanted(terminal: bool, no_color: Option<&str>, term: Option<&str>) -> bool {
    terminal && no_color.is_none_or(str::is_empty) && term != Some("dumb")
}

/// Whether stdout (`true`) or stderr shows colour now.
pub fn colour_on(stdout: bool) -> bool {
    let terminal = if stdout {
        std::io::stdout().is_terminal()
    } else {
        std::io::stderr().is_terminal()
    };
    colour_wanted(
        terminal,
        std::env::var("NO_COLOR").ok().as_deref(),
        std::env::var("TERM").ok().as_deref(),
    )
}

/// A report's text with its marks coloured when `colour`: a failed check's ✗ bold red, a warning's ⚠ yellow, a
/// pass's ✓ green; unchanged otherwise.
pub fn paint(text: &str, colour: bool) -> String {
    if !colour {
        return text.to_string();
    }
    text.replace("✗", "\x1b[1;31m✗\x1b[0m")
        .replace("⚠", "\x1b[1;33m⚠\x1b[0m")
        .replace("✓", "\x1b[32m✓\x1b[0m")
}

/// One line of what the run is doing, on stderr (stdout carries the report); nothing under `--quiet`.
pub fn say(line: &str) {
    if level() > Level::Quiet {
        print_line(line);
    }
}

/// A statement as it is sent, under `--verbose`.
pub fn statement(sql: &str) {
    if level() == Level::Verbose {
        print_line(&format!("  sql> {}", sql.trim()));
    }
}

/// Print `line` to stderr above the bars on the screen (a bar drawn when a line is written otherwise stays on
/// screen, dead, above the line).
pub fn print_line(line: &str) {
    if tty() {
        multi().suspend(|| eprintln!("{line}"));
    } else {
        eprintln!("{line}");
    }
}

/// What a bar counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Rows (or other units) out of an expected total, with a rate.
    Count(&'static str),
    /// Percent done as the server reports it.
    Percent,
    /// Seconds of a fixed duration.
    Seconds,
    /// Seconds left of a fixed duration.
    Countdown,
}

/// Progress of one long piece of work.
pub struct Progress {
    bar: ProgressBar,
    shown: bool,
    kind: Kind,
    label: String,
    last_line: Instant,
    /// Where this run's count began, and when (the rate of the plain line counts from there).
    from: (u64, Instant),
    /// The phase after the count ([`Progress::phase`]): what the work does now, since when.
    phase: Option<(String, Instant)>,
}

impl Progress {
    /// `total` rows.
    pub fn new(label: &str, total: u64) -> Progress {
        Progress::rows(label, total, "rows")
    }

    /// `total` of `unit` (rows), shown with their rate: `141,168 rows/s`.
    pub fn rows(label: &str, total: u64, unit: &'static str) -> Progress {
        Progress::make(label, total, Kind::Count(unit))
    }

    /// Percent done, 0..=100, as the server reports it.
    pub fn percent(label: &str) -> Progress {
        Progress::make(label, 100, Kind::Percent)
    }

    /// Elapsed seconds of work that lasts `secs` (a benchmark).
    pub fn seconds(label: &str, secs: u64) -> Progress {
        Progress::make(label, secs.max(1), Kind::Seconds)
    }

    /// Seconds left of a wait of `secs` (a sampling interval).
    pub fn countdown(label: &str, secs: u64) -> Progress {
        Progress::make(label, secs.max(1), Kind::Countdown)
    }

    fn make(label: &str, total: u64, kind: Kind) -> Progress {
        let shown = level() > Level::Quiet;
        let bar = if shown && tty() {
            let template = match kind {
                Kind::Count(_) => "{msg} [{bar:30}] {count} {rate} ETA {eta}",
                Kind::Percent => "{msg} [{bar:30}] {pos}% elapsed {elapsed}",
                Kind::Seconds => "{msg} [{bar:30}] {pos}/{len} s",
                Kind::Countdown => "{msg} [{bar:30}] {left} s left",
            };
            let unit = match kind {
                Kind::Count(u) => u,
                _ => "",
            };
            let style = ProgressStyle::with_template(template)
                .expect("static template")
                .progress_chars("=> ")
                .with_key(
                    "count",
                    move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(
                            w,
                            "{}/{} {unit}",
                            format_count(s.pos()),
                            format_count(s.len().unwrap_or(0))
                        );
                    },
                )
                .with_key(
                    "rate",
                    move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{}", format_rate(s.per_sec(), unit));
                    },
                )
                .with_key("left", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{}", s.len().unwrap_or(0).saturating_sub(s.pos()));
                });
            let b = multi().add(ProgressBar::new(total));
            b.set_style(style);
            b.set_message(label.to_string());
            b
        } else {
            ProgressBar::hidden()
        };
        bar.set_length(total);
        Progress {
            bar,
            shown,
            kind,
            label: label.to_string(),
            last_line: Instant::now(),
            from: (0, Instant::now()),
            phase: None,
        }
    }

    /// The count is done but the work goes on (a statement that wrote its last row still builds indexes and
    /// commits): the bar drops its rate and ETA, which would only fall, and shows `what` and the seconds it
    /// has taken so far, ticking on its own.
    pub fn phase(&mut self, what: &str) {
        if self.phase.as_ref().is_some_and(|(w, _)| w == what) {
            return;
        }
        let started = Instant::now();
        self.phase = Some((what.to_string(), started));
        if self.shown && tty() {
            let unit = match self.kind {
                Kind::Count(u) => u,
                _ => "",
            };
            let style = ProgressStyle::with_template("{msg} [{bar:30}] {count} · {phase}")
                .expect("static template")
                .progress_chars("=> ")
                .with_key(
                    "count",
                    move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{} {unit}", format_count(s.pos()));
                    },
                )
                .with_key("phase", {
                    let what = what.to_string();
                    move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{what}: {} s so far", started.elapsed().as_secs());
                    }
                });
            self.bar.set_style(style);
            self.bar.enable_steady_tick(Duration::from_millis(500));
        }
    }

    /// Start a resumed count at `pos` (the work an earlier run did): the rate and the ETA count only what
    /// this run does from here, not the rows copied before the interruption.
    pub fn resume_at(&mut self, pos: u64) {
        self.set(pos);
        self.bar.reset_eta();
        self.from = (pos, Instant::now());
    }

    /// What this run counted itself: the position less where it resumed.
    fn counted(&self) -> u64 {
        self.bar.position().saturating_sub(self.from.0)
    }

    /// Move to `pos` (a count, a percent, or seconds). A count beyond the expected total (an estimate)
    /// raises the total.
    pub fn set(&mut self, pos: u64) {
        let len = self.bar.length().unwrap_or(0);
        if pos > len && matches!(self.kind, Kind::Count(_)) {
            self.bar.set_length(pos);
        }
        self.bar.set_position(pos);
        if self.shown && !tty() && self.last_line.elapsed() >= PLAIN_EVERY {
            self.last_line = Instant::now();
            eprintln!("{}: {}", self.label, self.plain());
        }
    }

    /// The plain status line's figures.
    fn plain(&self) -> String {
        let pos = self.bar.position();
        let len = self.bar.length().unwrap_or(0);
        if let Some((what, since)) = &self.phase {
            return format!(
                "{}, {what}: {} s so far",
                format_count(pos),
                since.elapsed().as_secs()
            );
        }
        match self.kind {
            Kind::Count(unit) => {
                let secs = self.from.1.elapsed().as_secs_f64();
                let done = self.counted();
                format!(
                    "{}/{} {unit}, {}",
                    format_count(pos),
                    format_count(len),
                    format_rate(if secs > 0.0 { done as f64 / secs } else { 0.0 }, unit)
                )
            }
            Kind::Percent => format!("{pos}%"),
            Kind::Seconds => format!("{pos}/{len} s"),
            Kind::Countdown => format!("{} s left", len.saturating_sub(pos)),
        }
    }

    /// Run `f` with the bar hidden, so lines it prints are not overwritten.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        multi().suspend(f)
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
        multi().remove(&self.bar);
    }
}

/// Run `body` (which lasts about `secs`) while a bar shows its elapsed seconds, or the seconds left when
/// `countdown`.
pub fn timed<R>(label: &str, secs: u64, countdown: bool, body: impl FnOnce() -> R) -> R {
    let mut bar = if countdown {
        Progress::countdown(label, secs)
    } else {
        Progress::seconds(label, secs)
    };
    let t0 = Instant::now();
    let r = alongside(body, || bar.set(t0.elapsed().as_secs().min(secs)));
    bar.finish();
    r
}

/// Run `body` while `each` runs beside it every 100 ms; `each` stops the moment `body` ends (the channel's
/// sender dropped), so it adds nothing to the body's time.
fn alongside<R>(body: impl FnOnce() -> R, mut each: impl FnMut() + Send) -> R {
    let (done, ended) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        s.spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                ended.recv_timeout(Duration::from_millis(100))
            {
                each();
            }
        });
        let r = body();
        drop(done);
        r
    })
}

/// Run `body` while a bar follows `count()` (rows written so far, say) towards `total` (an estimate: a count
/// beyond it raises it), with the rate and the ETA.
pub fn counted<R>(
    label: &str,
    total: u64,
    count: impl Fn() -> u64 + Sync,
    body: impl FnOnce() -> R,
) -> R {
    let mut bar = Progress::new(label, total);
    let r = alongside(body, || bar.set(count()));
    bar.finish();
    r
}

/// A wait with a bound that says what it waits for and for how long so far: a spinner on a terminal, a plain
/// line every few seconds otherwise. [`Waiting::tick`] from the wait loop.
pub struct Waiting {
    bar: ProgressBar,
    shown: bool,
    label: String,
    started: Instant,
    last_line: Instant,
}

/// Run `body`, one statement whose progress the server does not report (`CHECKSUM TABLE`), while a spinner
/// shows how long it has run; without a terminal, a plain line every few seconds.
pub fn elapsed<R>(label: &str, body: impl FnOnce() -> R) -> R {
    let mut w = Waiting::make(label, None);
    let r = alongside(body, || w.tick());
    w.finish();
    r
}

impl Waiting {
    pub fn new(label: &str, bound: Duration) -> Waiting {
        Waiting::make(label, Some(bound))
    }

    fn make(label: &str, bound: Option<Duration>) -> Waiting {
        let shown = level() > Level::Quiet;
        let bar = if shown && tty() {
            let b = multi().add(ProgressBar::new_spinner());
            // The bound is written into the template itself: a prefix set on a bar that a MultiProgress
            // draws was seen empty ("(at most )").
            let template = match bound {
                Some(b) => format!(
                    "{{spinner}} {{msg}}: {{elapsed}} (at most {} s)",
                    b.as_secs()
                ),
                None => "{spinner} {msg}: {elapsed}".to_string(),
            };
            b.set_style(ProgressStyle::with_template(&template).expect("a template of our own"));
            b.set_message(label.to_string());
            b.enable_steady_tick(Duration::from_millis(200));
            b
        } else {
            ProgressBar::hidden()
        };
        Waiting {
            bar,
            shown,
            label: label.to_string(),
            started: Instant::now(),
            last_line: Instant::now(),
        }
    }

    pub fn tick(&mut self) {
        if self.shown && !tty() && self.last_line.elapsed() >= PLAIN_EVERY {
            self.last_line = Instant::now();
            eprintln!(
                "{}: {} s so far",
                self.label,
                self.started.elapsed().as_secs()
            );
        }
    }

    pub fn finish(self) {
        self.bar.finish_and_clear();
        multi().remove(&self.bar);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_done_with_work_left_says_what_and_for_how_long_instead_of_a_rate() {
        let mut p = Progress::new("copy d.t", 3_000_000);
        p.set(3_000_000);
        assert!(
            p.plain().starts_with("3,000,000/3,000,000 rows, "),
            "{}",
            p.plain()
        );
        p.phase("every row written; building indexes and committing");
        assert_eq!(
            p.plain(),
            "3,000,000, every row written; building indexes and committing: 0 s so far"
        );
        // Asked again (the watcher asks at every poll): the same phase, its clock not restarted.
        let since = p.phase.as_ref().unwrap().1;
        p.phase("every row written; building indexes and committing");
        assert_eq!(p.phase.as_ref().unwrap().1, since);
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color_or_a_dumb_term() {
        assert!(colour_wanted(true, None, Some("xterm")));
        assert!(
            colour_wanted(true, Some(""), None),
            "an empty NO_COLOR does not count"
        );
        assert!(!colour_wanted(false, None, Some("xterm")));
        assert!(!colour_wanted(true, Some("1"), Some("xterm")));
        assert!(!colour_wanted(true, None, Some("dumb")));
    }

    #[test]
    fn a_resumed_count_rates_only_what_this_run_did() {
        let mut p = Progress::new("copy d.t", 1_000);
        p.resume_at(900);
        p.set(950);
        assert_eq!(p.counted(), 50, "not the 900 rows an earlier run copied");
        let mut fresh = Progress::new("copy d.t", 1_000);
        fresh.set(950);
        assert_eq!(fresh.counted(), 950);
    }

    #[test]
    fn marks_are_painted_only_when_asked() {
        let text = "pre  ✓ a\npre  ⚠ b\npre  ✗ c\n";
        assert_eq!(paint(text, false), text);
        let p = paint(text, true);
        assert!(p.contains("\x1b[1;31m✗\x1b[0m c"), "{p:?}");
        assert!(p.contains("\x1b[1;33m⚠\x1b[0m b"), "{p:?}");
        assert!(p.contains("\x1b[32m✓\x1b[0m a"), "{p:?}");
    }
}
