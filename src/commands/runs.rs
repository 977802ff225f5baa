//! `innops runs`: the run directories under `--runs-dir`, each with how it ended.

use crate::cli::{Format, RunsArgs};

pub fn run(a: &RunsArgs) -> anyhow::Result<()> {
    let _ = (a, Format::Text);
    Ok(())
}
