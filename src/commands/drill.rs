//! `innops drill`: the flags become the drill's settings, and the drill is given the way to resolve its sandbox
//! into a plan environment, the same way `--sandbox NAME` resolves for any other command.

use super::env::{env_from, sandbox_root};
use crate::cli::{ConnArgs, DrillArgs, Format};
use crate::drill::{self, Settings};

pub fn run(a: &DrillArgs) -> anyhow::Result<()> {
    let settings = Settings {
        root: sandbox_root(&a.root),
        out: a.out.clone(),
        keep: a.keep,
        json: a.fmt.format == Format::Json,
    };
    let resolve = |name: &str| {
        let mut args = ConnArgs {
            sandbox: Some(name.to_string()),
            ..Default::default()
        };
        args.root.sandbox_root = Some(settings.root.clone());
        let env = env_from(&args, &Default::default(), a.fmt.format, Some(a.bench_time))?;
        Ok((env.plan_env, env.control))
    };
    drill::run(&settings, &resolve)
}
