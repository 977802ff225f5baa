//! One arm's run in one round, as a step: the arm's values set with `SET GLOBAL` and read back, the warm-up run
//! and thrown away, the measured run, the server's counters and CPU around it, the figures stored as
//! `experiment/round-R-KEY.json` in the run directory, and every variable set back to its baseline. The stored
//! file and the baseline read back are the step's proof (its post-checks), so `resume` keeps every arm-run
//! measured before an interruption and runs again only the one in flight.
//!
//! Why back to the baseline after every arm, not only at the end: the server then leaves its baseline only for
//! the span of one arm's run, so a run stopped between steps (Ctrl-C, a refused lock, innops killed) leaves it
//! as it was; only a kill inside an arm's run leaves that arm's values, until `innops resume` sets them back.
//! Restart variables are the exception: the restart step before the arm set them, they stay for the arms of the
//! same configuration, and the arm's pre-check proves them in force (or finds the configuration failed, and
//! the arm left out).
//!
//! Server CPU comes from `/proc/<pid>/stat` (user + system ticks) of the process named in `@@pid_file`, when
//! innops reaches the server on this machine and can read both; otherwise the figure is "not measured" with
//! the reason.

use crate::bench::experiment::{self as figures, Arm, ArmRun, Setting};
use crate::error::Failure;
use crate::plan::{Check, Ctx, Procedure, Risk, Step, Verdict};
use crate::sql::Queryable;

use super::{sampler, values, ExperimentParams};

/// The file an arm-run's figures are stored in, under the run directory.
pub fn file_name(p: &ExperimentParams, round: u32, key: &str) -> String {
    format!("experiment/{}.json", run_id(p, round, key))
}

/// The arm-run's step id: `round-2-B`, in a group of several thread counts `t16-round-2-B`.
pub fn run_id(p: &ExperimentParams, round: u32, key: &str) -> String {
    format!("{}round-{round}-{key}", p.prefix())
}

/// The arm-run step; `cfg` is the arm's configuration of restart values (its index and values) when the
/// experiment has restart variables: the restart before it set them, and the step checks they are in force.
pub fn step(
    p: &ExperimentParams,
    arm: &Arm,
    round: u32,
    cfg: Option<(usize, Vec<Setting>)>,
) -> Step {
    let mut step = Step::new(
        run_id(p, round, &arm.key),
        match p.group {
            Some(t) => format!(
                "{t} client threads, round {round}: arm {} ({})",
                arm.label(),
                arm.describe()
            ),
            None => format!("Round {round}: arm {} ({})", arm.label(), arm.describe()),
        },
        Risk::Online,
    );
    if let Some((config, vals)) = cfg.as_ref().filter(|(_, v)| !v.is_empty()) {
        step = step.preview(format!(
            "runs with {} ({})",
            vals.iter()
                .map(|s| format!("{}={}", s.name, s.value))
                .collect::<Vec<_>>()
                .join(", "),
            if *config == 0 {
                "the server's own values"
            } else {
                "set by the restart before it"
            }
        ));
    }
    for s in &p.online_part(&arm.settings) {
        let lit = if arm.is_baseline() {
            values::baseline_literal(&s.value)
        } else {
            values::literal(&s.value).unwrap_or_default()
        };
        step = step.preview(values::set_sql(&s.name, &lit));
    }
    step = step.preview(format!(
        "{} with {} thread(s){}: {} s warm-up (discarded), then {} s measured",
        p.workload,
        p.threads,
        if p.rate > 0 {
            format!(" at {} transactions a second", p.rate)
        } else {
            String::new()
        },
        p.warmup_s,
        p.time_s
    ));
    for b in &p.online_baseline() {
        step = step.preview(values::set_sql(
            &b.name,
            &values::baseline_literal(&b.value),
        ));
    }
    if let Some(n) = super::tables::copy_of(p, arm) {
        step = step
            .preview(format!(
                "on the copy {}.sbtest1",
                crate::sql::quote_ident(&super::tables::schema(n))
            ))
            .pre(super::tables::arm_check(p, n));
    }
    if p.sql.is_some() {
        step = step.pre(super::workload_sql::prepares_check(p, arm));
    }
    if let Some((config, vals)) = cfg {
        step = step.pre(Check::after_prior(
            "the arm's restart values are in force",
            move |ctx| configuration_in_force(ctx, config, &vals),
        ));
    }
    for s in &p.online_baseline() {
        let s = s.clone();
        step = step.post(Check::new(
            format!("{} is back at its baseline {}", s.name, s.value),
            move |ctx| values::reads_back(ctx, &s, "its value before the experiment"),
        ));
    }
    let file = file_name(p, round, &arm.key);
    step = step.post(Check::new("the figures are stored", move |ctx| {
        let stored = ctx
            .run_dir
            .as_ref()
            .and_then(|d| std::fs::read_to_string(d.join(&file)).ok())
            .and_then(|t| serde_json::from_str::<ArmRun>(&t).ok());
        Ok(Verdict::check(
            stored.is_some(),
            if stored.is_some() {
                "stored"
            } else {
                "missing"
            },
            file.clone(),
            "the arm's figures were not stored: run the step again (innops resume does)",
        ))
    }));
    let (p_act, arm_act, p_rec) = (p.clone(), arm.clone(), p.clone());
    step.act(move |ctx| run_arm(ctx, &p_act, &arm_act, round))
        .recover(move |ctx| {
            values::set_baseline(ctx, &p_rec.online_baseline())?;
            Ok("every variable set with SET GLOBAL is back at its baseline (read back)".into())
        })
}

/// Set the arm's values, warm up, measure (the server watched: its counters sampled, the load guard on every
/// reading), store. A run the guard stops is thrown away, the baseline set back, and the arm runs again once
/// the load has dropped; above `--critical-load` the step stops the experiment.
fn run_arm(
    ctx: &mut Ctx,
    p: &ExperimentParams,
    arm: &Arm,
    round: u32,
) -> anyhow::Result<serde_json::Value> {
    let tag = format!(
        "/* innops:{}:{} */",
        Procedure::Experiment.name(),
        crate::plan::tag_safe(&ctx.step)
    );
    // A table variant's arm runs on its copy, proven by the pre-check; `ready` would rebuild a table whose row
    // count a workload changed, with the original definition, so it is asked only of innops_bench's table.
    let copy = super::tables::copy_of(p, arm).map(super::tables::schema);
    let workload = p.arm_workload(arm)?;
    let spec = |secs: u64| -> anyhow::Result<crate::bench::RunSpec> {
        let base = p.bench(secs).run_spec(Procedure::Experiment.name())?;
        Ok(crate::bench::RunSpec {
            workload: workload.clone(),
            rate: p.rate,
            tag: tag.clone(),
            db: copy.clone().unwrap_or(base.db.clone()),
            ignore_errors: if super::tables::non_transactional(p) {
                crate::bench::run::IgnoreErrors::Codes(vec![1213, 1020, 1205, 1062])
            } else {
                base.ignore_errors.clone()
            },
            ..base
        })
    };
    if copy.is_none() {
        crate::bench::ready(ctx.target, &spec(p.time_s)?)?;
    }
    let guard = p.guard();
    let mut paused = Vec::new();
    let mut interrupted = 0;
    let (measured, started, pid, cpu, io, watched) = loop {
        super::load::wait(ctx, p, &guard, &mut paused)?;
        let online = p.online_part(&arm.settings);
        if arm.is_baseline() {
            values::set_baseline(ctx, &online)?;
        } else {
            values::set_all(ctx, &online)?;
        }
        crate::procedures::kit::restart::sigint_fault(ctx, &ctx.step.clone());
        let (target, abort) = (ctx.target, ctx.abort);
        let label = format!("[{}] arm {}", ctx.step, arm.label());
        let watch_tag = format!(
            "/* innops:experiment:{}-watch */",
            crate::plan::tag_safe(&ctx.step)
        );
        let mut tripped = None;
        if p.warmup_s > 0 {
            let (_, w) =
                crate::progress::timed(&format!("{label} warm-up"), p.warmup_s, false, || {
                    sampler::watch(target, abort, &guard, &watch_tag, false, None, |stop| {
                        crate::bench::run::run(target, &spec(p.warmup_s)?, stop, &mut |_| {})
                    })
                })?;
            tripped = w.tripped;
            stop_if_aborted(ctx, p)?;
        }
        if tripped.is_none() {
            let pid = server_pid(ctx);
            let cpu_before = pid.as_ref().ok().and_then(|&pid| cpu_seconds(pid));
            let io_before = pid.as_ref().ok().and_then(|&pid| write_bytes(pid));
            let started = chrono::Utc::now();
            let (measured, w) = crate::progress::timed(&label, p.time_s, false, || {
                sampler::watch(
                    target,
                    abort,
                    &guard,
                    &watch_tag,
                    true,
                    Some("arm-measuring"),
                    |stop| crate::bench::run::run(target, &spec(p.time_s)?, stop, &mut |_| {}),
                )
            })?;
            let cpu_after = pid.as_ref().ok().and_then(|&pid| cpu_seconds(pid));
            let io_after = pid.as_ref().ok().and_then(|&pid| write_bytes(pid));
            stop_if_aborted(ctx, p)?;
            if w.tripped.is_none() {
                break (
                    measured,
                    started,
                    pid,
                    cpu_before.zip(cpu_after),
                    io_before.zip(io_after),
                    w,
                );
            }
            tripped = w.tripped;
        }
        interrupted += 1;
        super::load::tripped(ctx, p, arm, tripped, interrupted)?;
    };
    crate::testhooks::exit_at("arm-measured:", &ctx.step);
    let m = Measured {
        result: measured,
        started,
        pid,
        cpu,
        io,
        watched,
        paused,
    };
    record(ctx, p, arm, round, m)
}

/// One measured run the guard let through, with what was read around it.
struct Measured {
    result: crate::bench::BenchResult,
    started: chrono::DateTime<chrono::Utc>,
    pid: Result<u32, String>,
    cpu: Option<(f64, f64)>,
    io: Option<(u64, u64)>,
    watched: sampler::Watched,
    paused: Vec<(String, f64)>,
}

/// Store a measured run's figures in the run directory and set the baseline back.
fn record(
    ctx: &mut Ctx,
    p: &ExperimentParams,
    arm: &Arm,
    round: u32,
    m: Measured,
) -> anyhow::Result<serde_json::Value> {
    let measured = &m.result;
    let (cpu_s, cpu_note) = match (&m.pid, m.cpu) {
        (Ok(_), Some((b, a))) => (Some(a - b), None),
        (Err(why), _) => (None, Some(format!("not measured: {why}"))),
        _ => (
            None,
            Some("not measured: the server's /proc/<pid>/stat could not be read".into()),
        ),
    };
    let counter = |name: &str| measured.counters.get(name).copied().unwrap_or(0);
    let run = ArmRun {
        arm: arm.key.clone(),
        round,
        tps: measured.intervals.iter().map(|i| i.tps).collect(),
        p95_ms: measured.intervals.iter().map(|i| i.p95_ms).collect(),
        p99_ms: measured.intervals.iter().map(|i| i.p99_ms).collect(),
        transactions: measured.transactions,
        seconds: measured.time_s,
        data_written: counter("Innodb_data_written"),
        log_written: counter("Innodb_os_log_written"),
        cpu_s,
        cpu_note,
        proc_written: m.io.map(|(b, a)| a.saturating_sub(b)),
        started: Some(m.started),
        samples: m.watched.samples,
        unavailable: m.watched.unavailable,
        paused: m.paused,
    };
    if let Some(dir) = &ctx.run_dir {
        crate::files::create_private_dir(&dir.join("experiment"))?;
        crate::files::write_json_atomic(&dir.join(file_name(p, round, &arm.key)), &run)?;
    }
    values::set_baseline(ctx, &p.online_baseline())?;
    crate::progress::say(&format!(
        "      arm {}: {:.1} tps, p95 {:.2} ms, p99 {:.2} ms",
        arm.label(),
        measured.tps,
        measured.latency_ms.p95,
        measured.latency_ms.p99
    ));
    Ok(serde_json::json!({
        "ran_with": arm.settings,
        "threads": p.threads,
        "tps": measured.tps,
        "p95_ms": measured.latency_ms.p95,
        "p99_ms": measured.latency_ms.p99,
        "paused_for_load": run.paused,
    }))
}

/// After Ctrl-C: the variables go back to their baseline at once, and the step is to be resumed.
pub(super) fn stop_if_aborted(ctx: &mut Ctx, p: &ExperimentParams) -> anyhow::Result<()> {
    if !ctx.aborted() {
        return Ok(());
    }
    values::set_baseline(ctx, &p.online_baseline())?;
    Err(Failure::Interrupted(format!(
        "interrupted during {}: every variable set with SET GLOBAL is back at its baseline; the rounds measured so far are kept",
        ctx.step
    ))
    .into())
}

/// The pre-check of an arm-run when the experiment restarts: skipped when the arm's configuration failed to
/// start earlier in this run; else each restart variable reads back the arm's value.
fn configuration_in_force(
    ctx: &mut Ctx,
    config: usize,
    vals: &[Setting],
) -> anyhow::Result<Verdict> {
    let expected = "the arm's restart values";
    if let Some(f) = super::restarts::failed(ctx.run_dir.as_deref(), config) {
        return Ok(Verdict::done(format!("left out: {}", f.why), expected));
    }
    for s in vals {
        let v = values::reads_back(ctx, s, "the arm's value, set by the restart before it")?;
        if !v.passed {
            return Ok(Verdict::fail(
                v.observed,
                expected,
                "the server does not run with the arm's restart values: resume the run, so the restart before this step runs again",
            ));
        }
    }
    Ok(Verdict::pass(
        if vals.is_empty() {
            "the server's own (no restart variable changes)".to_string()
        } else {
            vals.iter()
                .map(|s| format!("{}={}", s.name, s.value))
                .collect::<Vec<_>>()
                .join(", ")
        },
        expected,
    ))
}

/// The server's pid, when it runs on this machine and its pid file can be read; else why not.
fn server_pid(ctx: &mut Ctx) -> Result<u32, String> {
    if !ctx.target.local {
        return Err("server not local".into());
    }
    let tag = ctx.tag();
    let file: Option<Option<String>> = ctx
        .conn()
        .and_then(|c| Ok(c.query_first(format!("SELECT {tag} @@GLOBAL.pid_file"))?))
        .map_err(|e| crate::error::display_of(&e))?;
    let file = file.flatten().ok_or("the server names no pid file")?;
    let pid: u32 = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| format!("its pid file {file} cannot be read here"))?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if !matches!(comm.trim(), "mariadbd" | "mysqld") {
        return Err(format!(
            "pid {pid} of {file} is not a mariadbd or mysqld here"
        ));
    }
    Ok(pid)
}

/// User + system CPU seconds of process `pid`, from `/proc/<pid>/stat`.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let ticks = cpu_ticks(&stat)?;
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks as f64 / hz as f64)
}

/// Bytes process `pid` caused to be written to storage so far (`write_bytes` of `/proc/<pid>/io`): every
/// engine's writes, where `Innodb_data_written` counts InnoDB's only.
fn write_bytes(pid: u32) -> Option<u64> {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    io_write_bytes(&io)
}

fn io_write_bytes(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// utime + stime (fields 14 and 15) of a `/proc/<pid>/stat` line; the command name in parentheses may hold
/// spaces, so the fields are counted after its closing parenthesis.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// The verdicts from every arm-run stored in the run directory.
/// The verdicts: with several client-thread counts, one experiment per count in `by_threads` (the top-level
/// fields repeat the first count's).
pub fn summary(ctx: &Ctx, p: &ExperimentParams) -> anyhow::Result<figures::Experiment> {
    let groups = p.groups();
    if groups.len() < 2 {
        return summary_of(ctx, p);
    }
    let all = groups
        .iter()
        .map(|g| summary_of(ctx, g))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut top = all[0].clone();
    top.by_threads = all;
    Ok(top)
}

fn summary_of(ctx: &Ctx, p: &ExperimentParams) -> anyhow::Result<figures::Experiment> {
    let dir = ctx.run_dir.as_ref().ok_or_else(|| {
        anyhow::anyhow!("the experiment's figures live in a run directory, and this run has none")
    })?;
    let arms = p.arms();
    let mut runs = Vec::new();
    for round in 1..=p.rounds {
        for arm in &arms {
            let path = dir.join(file_name(p, round, &arm.key));
            if let Ok(text) = std::fs::read_to_string(&path) {
                runs.push(serde_json::from_str::<ArmRun>(&text)?);
            }
        }
    }
    let mut e = figures::summarize(p.shape(), &arms, &runs);
    e.cores = p.cores.as_ref().map(super::cores::Cores::line);
    for arm in &arms {
        let Some(n) = super::tables::copy_of(p, arm) else {
            continue;
        };
        if let Some(f) = super::tables::failed(Some(dir), n) {
            e.mark_failed(&arm.key, &format!("{}; left out", f.why));
        }
        if let Some(f) = e.arms.iter_mut().find(|f| f.key == arm.key) {
            f.table_size = super::tables::size(Some(dir), n);
        }
    }
    let layout = p.layout();
    for (arm, &config) in layout.arms.iter().zip(&layout.config_of) {
        if let Some(f) = super::restarts::failed(Some(dir), config).filter(|_| config != 0) {
            e.mark_failed(&arm.key, &format!("{}; reverted, left out", f.why));
        }
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_counted_after_the_command_name() {
        let stat =
            "4242 (maria db) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 30 0 100 0 0";
        assert_eq!(cpu_ticks(stat), Some(325));
        assert_eq!(cpu_ticks("garbage"), None);
    }

    #[test]
    fn write_bytes_is_read_from_proc_io() {
        let io = "rchar: 10\nwchar: 20\nsyscr: 1\nsyscw: 2\nread_bytes: 4096\nwrite_bytes: 81920\ncancelled_write_bytes: 0\n";
        assert_eq!(io_write_bytes(io), Some(81920));
        assert_eq!(io_write_bytes("rchar: 1\n"), None);
    }

    #[test]
    fn each_arm_run_has_a_file_of_its_own() {
        let p: ExperimentParams = serde_json::from_value(serde_json::json!({
            "sets": [], "baseline": [], "workload": "oltp_read_write", "threads": 4, "time_s": 1,
            "rounds": 1, "warmup_s": 0, "keep_best": false,
        }))
        .unwrap();
        assert_eq!(file_name(&p, 2, "A2"), "experiment/round-2-A2.json");
    }
}
