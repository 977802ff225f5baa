//! `innops inspect`: the server's facts, the version matrix's answers, MyISAM tables and hazards.

use std::time::Duration;

use super::env::env_from;
use crate::cli::{Format, InspectArgs};
use crate::procedures;

pub fn run(a: &InspectArgs) -> anyhow::Result<()> {
    let env = env_from(&a.conn, &Default::default(), a.fmt.format, None)?;
    let i = procedures::inspect::inspect(&env.plan_env.target, Duration::from_secs(a.sample))?;
    match env.format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&i)?),
        Format::Text => print!("{}", procedures::inspect::render(&i)),
    }
    Ok(())
}
