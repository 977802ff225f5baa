//! `innops drill`: the flags become the drill's settings; the drill is given the way to resolve its sandbox into
//! a plan environment (the same way `--sandbox NAME` resolves for any other command) and the way `innops run`
//! plans a playbook's members; its run's report is printed as any run's is.

use super::env::{attach_error_log, env_from, sandbox_root};
use crate::cli::{ConnArgs, DrillArgs};
use crate::drill::{self, Settings};
use crate::server::facts::ServerFacts;

pub fn run(a: &DrillArgs) -> anyhow::Result<()> {
    let settings = Settings {
        root: sandbox_root(&a.root),
        out: a.out.clone(),
        keep: a.keep,
    };
    let resolve = |name: &str| {
        let mut args = ConnArgs {
            sandbox: Some(name.to_string()),
            ..Default::default()
        };
        args.root.sandbox_root = Some(settings.root.clone());
        let mut env = env_from(&args, &Default::default(), a.fmt.format, Some(a.bench_time))?;
        let facts = ServerFacts::collect(&mut env.plan_env.target.connect()?)?;
        attach_error_log(&mut env, &facts);
        Ok((env.plan_env, env.control))
    };
    let plan_members = |checked: &crate::playbook::Checked,
                        file: &std::path::Path,
                        text: &str,
                        facts: &ServerFacts,
                        pe: &crate::procedures::PlanEnv| {
        super::run::member_plans(checked, file, text, facts, pe)
    };
    let abort = super::abort_flag();
    let outcome = drill::run(&settings, &resolve, &plan_members, &abort)?;
    super::print_report(&outcome.report, a.fmt.format);
    eprintln!("innops drill: {}", outcome.sandbox);
    outcome.result
}
