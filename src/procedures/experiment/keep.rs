//! `--keep best`: the winner beyond the noise set again and kept for the next start, proven by reading back.

use super::{arm_run, restarts, values, ExperimentParams};
use crate::bench::experiment::{self as figures, Arm};
use crate::plan::{Check, Risk, Step, Verdict};
use crate::procedures::PlanEnv;
use crate::server::facts::ServerFacts;

/// `--keep best`: the winner set again, only when it won beyond the noise: its restart variables through
/// innops's drop-in (the diff shown) and a restart, the others with `SET GLOBAL` and written into the drop-in
/// (the diff shown), so the next start keeps them; proven by reading each back and, for the next start, by
/// reading the drop-in and the option files (when known) as the server reads them.
pub(super) fn keep_step(p: &ExperimentParams, env: &PlanEnv, facts: &ServerFacts) -> Step {
    let (pre_p, act_p, post_p) = (p.clone(), p.clone(), p.clone());
    let act_d = env.dropin.clone();
    let post_d = (env.dropin.clone().ok(), env.option_file.clone());
    let version = facts.version_string.clone();
    let risk = if p.restart_vars.is_empty() {
        Risk::Online
    } else {
        Risk::Restart
    };
    let mut step = Step::new(
        "keep-best",
        "Keep the fastest variant, if it is faster than A beyond the noise",
        risk,
    );
    if !p.restart_vars.is_empty() {
        step = step.preview(format!(
            "with a winner beyond the noise whose {} differ from the server's: write them into innops's drop-in (the diff shown), clean shutdown, start, read them back",
            p.restart_vars.join(", ")
        ));
    }
    step.preview(
        "SET GLOBAL each variable to the winner's value and write it into innops's drop-in, the diff shown, so the next start keeps it (only with a winner beyond the noise)",
    )
    .pre(Check::after_prior(
        "a winner beyond the noise",
        move |ctx| {
            let e = arm_run::summary(ctx, &pre_p)?;
            Ok(match winner(&pre_p, &e) {
                Some(arm) => Verdict::pass(
                    format!("{} ({}) wins", arm.label(), arm.describe()),
                    "a winner beyond the noise",
                ),
                None => Verdict::done(
                    "no variant is faster than A beyond the noise: nothing is kept",
                    "a winner beyond the noise",
                ),
            })
        },
    ))
    .act(move |ctx| keep_winner(ctx, &act_p, &act_d))
    .post(Check::after_prior("the winner reads back", move |ctx| {
        winner_reads_back(ctx, &post_p, &post_d, &version)
    }))
}

/// Keep the winner: restart variables through the drop-in and a restart, dynamic ones with SET GLOBAL and in
/// the drop-in for the next start; the diff into the outcome.
fn keep_winner(
    ctx: &mut crate::plan::Ctx,
    p: &ExperimentParams,
    dropin: &Result<std::path::PathBuf, String>,
) -> anyhow::Result<serde_json::Value> {
    let e = arm_run::summary(ctx, p)?;
    let arm = winner(p, &e).ok_or_else(|| anyhow::anyhow!("no winner to keep"))?;
    let layout = p.layout();
    let config = layout
        .arms
        .iter()
        .position(|a| a.key == arm.key)
        .map_or(0, |i| layout.config_of[i]);
    let mut how = String::new();
    if config != 0 {
        let path = dropin.clone().map_err(crate::error::refused)?;
        let t = restarts::Target {
            id: "keep-best".into(),
            config,
            values: layout.configs[config].clone(),
        };
        restarts::keep(ctx, p, &path, &t)?;
        how = format!(
            "{} in {} (the diff above){}",
            t.values
                .iter()
                .map(|s| format!("{}={}", s.name, s.value))
                .collect::<Vec<_>>()
                .join(", "),
            path.display(),
            if p.online_part(&arm.settings).is_empty() {
                String::new()
            } else {
                "; ".into()
            }
        );
    }
    let online = p.online_part(&arm.settings);
    values::set_all(ctx, &online)?;
    let mut diff = String::new();
    if !online.is_empty() {
        let path = dropin.clone().map_err(crate::error::refused)?;
        diff = restarts::persist(ctx, &path, &online)?;
        how.push_str(&format!(
            "{} with SET GLOBAL now and in {} for the next start ({})",
            online
                .iter()
                .map(|s| format!("{}={}", s.name, s.value))
                .collect::<Vec<_>>()
                .join(", "),
            path.display(),
            if diff.is_empty() {
                "it held them already"
            } else {
                "the diff below"
            }
        ));
    }
    ctx.outcome
        .push(format!("kept: {} ({}) {how}", arm.label(), arm.describe()));
    if !diff.is_empty() {
        ctx.outcome
            .push(format!("  {}", diff.trim_end().replace('\n', "\n  ")));
    }
    Ok(serde_json::json!({"kept": arm.settings, "dropin_diff": diff}))
}

/// The kept winner's values read back from the server, and from the drop-in and option file as the next start
/// reads them.
fn winner_reads_back(
    ctx: &mut crate::plan::Ctx,
    p: &ExperimentParams,
    files: &(Option<std::path::PathBuf>, Option<std::path::PathBuf>),
    version: &str,
) -> anyhow::Result<Verdict> {
    let e = arm_run::summary(ctx, p)?;
    let Some(arm) = winner(p, &e) else {
        return Ok(Verdict::pass("nothing kept", "nothing kept"));
    };
    for s in &arm.settings {
        let v = values::reads_back(ctx, s, "the winner's value")?;
        if !v.passed {
            return Ok(v);
        }
    }
    // The next start: the drop-in, and the option files as the server reads them when innops knows them
    // (a file read after the drop-in could set a kept value otherwise).
    let (dropin, option_file) = files;
    for s in p.online_part(&arm.settings) {
        for file in [dropin.as_ref(), option_file.as_ref()]
            .into_iter()
            .flatten()
        {
            let got = crate::procedures::kit::dropin::effective_config(file, &s.name, version)?;
            if !got
                .as_deref()
                .is_some_and(|g| values::same_value(&s.value, g))
            {
                return Ok(Verdict::fail(
                    format!("{} gives {} = {}", file.display(), s.name, got.unwrap_or_else(|| "nothing".into())),
                    format!("{} = {}", s.name, s.value),
                    format!("the next start would not keep {} = {}: set it in the option file that wins over {}", s.name, s.value, file.display()),
                ));
            }
        }
    }
    Ok(Verdict::pass(
        arm.describe(),
        "the winner's values, now and at the next start",
    ))
}

/// The winning arm, if the experiment has one beyond the noise.
fn winner(p: &ExperimentParams, e: &figures::Experiment) -> Option<Arm> {
    let key = e.winner.as_ref()?;
    p.arms().into_iter().find(|a| &a.key == key)
}
