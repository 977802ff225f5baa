//! The command line, declared with clap and nothing else: [`crate::commands`] turns these into validated
//! settings.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "innops",
    version,
    about = "Guarded step plans for MySQL/MariaDB DBA procedures: dry run by default, --execute to act",
    // -h is the host, as in the mysql client; help is --help only.
    disable_help_flag = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Print help.
    #[arg(long, global = true, action = ArgAction::Help)]
    help: Option<bool>,
    /// Print errors and the final verdict only (no step lines, no progress).
    #[arg(long, short = 'q', global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also print every statement innops sends, as it sends it.
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Server facts, the version matrix's answers, MyISAM tables and hazards.
    Inspect(InspectArgs),
    /// Resize the InnoDB redo log (online where the version allows), or advise a size.
    Redo(RedoArgs),
    /// Convert MyISAM tables to InnoDB by the fastest verified path, keeping the old table.
    Convert(ConvertArgs),
    /// Continue an interrupted run from its run directory.
    Resume(ResumeArgs),
    /// Throwaway local servers from the mariadbd/mysqld binary on PATH.
    Sandbox(SandboxArgs),
    /// Run every procedure end to end on a fresh sandbox and write a report.
    Drill(DrillArgs),
    /// sysbench-compatible benchmarks: prepare, run and clean up a workload.
    Bench(BenchArgs),
}

/// Help headings of the flag groups.
const CONNECTION: &str = "Connection";
const SERVER_CONTROL: &str = "Server control";
const RUN: &str = "Run";

/// `--format`, on every command that prints a result.
#[derive(Debug, Args, Clone, Default)]
pub struct FormatArg {
    /// Output format; with json, stdout holds only JSON, errors included ({"error": ..., "exit": N}).
    #[arg(long, global = true, value_enum, default_value_t = Format::Text)]
    pub format: Format,
}

/// `--sandbox-root`, on every command that finds sandboxes.
#[derive(Debug, Args, Clone, Default)]
pub struct SandboxRootArg {
    /// Where sandboxes live.
    #[arg(long, global = true, env = "INNOPS_SANDBOX_DIR")]
    pub sandbox_root: Option<PathBuf>,
}

/// `--protocol`, as the mysql client takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtocolArg {
    #[value(name = "TCP")]
    Tcp,
    #[value(name = "SOCKET")]
    Socket,
}

/// `--ssl-mode`, as the mysql client takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SslModeArg {
    #[value(name = "DISABLED")]
    Disabled,
    #[value(name = "PREFERRED")]
    Preferred,
    #[value(name = "REQUIRED")]
    Required,
    #[value(name = "VERIFY_CA")]
    VerifyCa,
    #[value(name = "VERIFY_IDENTITY")]
    VerifyIdentity,
}

/// How to reach the server, as the mysql client does.
#[derive(Debug, Args, Clone, Default)]
pub struct ConnArgs {
    /// Unix socket file.
    #[arg(help_heading = CONNECTION, long, short = 'S')]
    pub socket: Option<PathBuf>,
    /// Server host (TCP).
    #[arg(help_heading = CONNECTION, long, short = 'h')]
    pub host: Option<String>,
    /// Server port (TCP).
    #[arg(help_heading = CONNECTION, long, short = 'P')]
    pub port: Option<u16>,
    /// User name (default: from the option file, else root).
    #[arg(help_heading = CONNECTION, long, short = 'u')]
    pub user: Option<String>,
    /// Password: -pSECRET or --password=SECRET; -p alone asks for it without echo. Prefer MYSQL_PWD or the
    /// option file, so it stays out of the process list.
    #[arg(
        help_heading = CONNECTION,
        long,
        short = 'p',
        num_args = 0..=1,
        require_equals = true,
        env = "MYSQL_PWD",
        hide_env_values = true
    )]
    pub password: Option<Option<String>>,
    /// Option file whose [client] and [innops] groups hold connection options (instead of ~/.my.cnf).
    #[arg(help_heading = CONNECTION, long)]
    pub defaults_file: Option<PathBuf>,
    /// TCP or SOCKET (default: the socket for localhost without a port, else TCP).
    #[arg(help_heading = CONNECTION, long, value_enum, ignore_case = true)]
    pub protocol: Option<ProtocolArg>,
    /// TLS over TCP: DISABLED, PREFERRED (the default), REQUIRED, VERIFY_CA (the default with --ssl-ca),
    /// VERIFY_IDENTITY.
    #[arg(help_heading = CONNECTION, long, value_enum, ignore_case = true)]
    pub ssl_mode: Option<SslModeArg>,
    /// CA certificate (PEM) that signed the server's certificate.
    #[arg(help_heading = CONNECTION, long)]
    pub ssl_ca: Option<PathBuf>,
    /// Client certificate (PEM), with --ssl-key.
    #[arg(help_heading = CONNECTION, long)]
    pub ssl_cert: Option<PathBuf>,
    /// Client private key (PEM), with --ssl-cert.
    #[arg(help_heading = CONNECTION, long)]
    pub ssl_key: Option<PathBuf>,
    /// Work on the innops sandbox of this name (connection, control and option file).
    #[arg(help_heading = CONNECTION, long)]
    pub sandbox: Option<String>,
    #[command(flatten)]
    pub root: SandboxRootArg,
}

/// How innops may stop and start the server, and where its settings survive a restart.
#[derive(Debug, Args, Clone, Default)]
pub struct ControlArgs {
    /// How to stop and start the server: systemd:UNIT.
    #[arg(help_heading = SERVER_CONTROL, long)]
    pub service: Option<String>,
    /// Shell command that starts the server (extra options are in $INNOPS_EXTRA_OPTS).
    #[arg(help_heading = SERVER_CONTROL, long)]
    pub start_cmd: Option<String>,
    /// Shell command that stops the server (default: the SHUTDOWN statement).
    #[arg(help_heading = SERVER_CONTROL, long)]
    pub stop_cmd: Option<String>,
    /// The server's option file; innops writes its drop-in into the last directory it includes.
    #[arg(help_heading = SERVER_CONTROL, long)]
    pub config_file: Option<PathBuf>,
}

/// How to run a plan.
#[derive(Debug, Args, Clone, Default)]
pub struct RunArgs {
    /// Act. Without it innops shows the plan and runs its read-only checks.
    #[arg(help_heading = RUN, long)]
    pub execute: bool,
    /// Allow steps that restart the server or overwrite data without a prompt (required without a terminal).
    #[arg(help_heading = RUN, long, short = 'y')]
    pub yes: bool,
    /// Where the run's plan, journal and report go (default ./innops-runs/<time>-<procedure>).
    #[arg(help_heading = RUN, long)]
    pub run_dir: Option<PathBuf>,
    /// Skip the benchmarks before and after.
    #[arg(help_heading = RUN, long)]
    pub no_bench: bool,
    /// Seconds each benchmark runs.
    #[arg(help_heading = RUN, long, default_value_t = 10)]
    pub bench_time: u64,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// Seconds to sample the redo write rate (0 skips the sample).
    #[arg(long, default_value_t = 1)]
    pub sample: u64,
}

#[derive(Debug, Args)]
pub struct RedoArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub control: ControlArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// New total redo size (bytes, or with K/M/G suffix: 256M, 2G).
    #[arg(long, conflicts_with = "advise", required_unless_present = "advise")]
    pub size: Option<String>,
    /// Measure the redo write rate and recommend a size; changes nothing.
    #[arg(long)]
    pub advise: bool,
    /// Seconds to measure for --advise.
    #[arg(long, default_value_t = 60)]
    pub interval: u64,
    /// Resize by clean shutdown, config edit and restart even where an online resize exists.
    #[arg(long)]
    pub offline: bool,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub control: ControlArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// Tables to convert: db.table or db.*, comma-separated.
    #[arg(long, value_delimiter = ',', required_unless_present_any = ["all_myisam", "rollback", "drop_kept"])]
    pub tables: Vec<String>,
    /// Every MyISAM table outside the system schemas.
    #[arg(long, conflicts_with = "rollback")]
    pub all_myisam: bool,
    /// auto (decided from the server's capability), bulk, deferred or alter.
    #[arg(long, default_value = "auto")]
    pub strategy: String,
    /// DANGER: drop the kept MyISAM table once the InnoDB table is verified identical to it.
    #[arg(long)]
    pub drop_old_table: bool,
    /// Swap back to the kept MyISAM table (db.table), if the InnoDB table has not changed since.
    #[arg(long, conflicts_with_all = ["tables", "drop_old_table"])]
    pub rollback: Option<String>,
    /// Target duration of one copy chunk, in milliseconds (deferred path).
    #[arg(long, default_value_t = 500)]
    pub chunk_time: u64,
    /// Pause the copy while this status variable is above the value [default: Threads_running=25, or the
    /// --critical-load value when that is lower].
    #[arg(long)]
    pub max_load: Option<String>,
    /// Abort the copy when this status variable is above the value.
    #[arg(long, default_value = "Threads_running=50")]
    pub critical_load: String,
    /// Drop innops's own leftover copy (db._t_innops_new) of an interrupted conversion and copy again.
    #[arg(long, conflicts_with = "rollback")]
    pub restart: bool,
    /// DANGER: drop the MyISAM table innops kept when it converted db.table, once verified unchanged since the
    /// swap (after this there is no rollback).
    #[arg(long, value_name = "DB.TABLE", conflicts_with_all = ["tables", "all_myisam", "rollback", "drop_old_table", "restart"])]
    pub drop_kept: Option<String>,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub control: ControlArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// The run directory printed by the interrupted run.
    pub run_dir: PathBuf,
    /// Allow restart/destructive steps without a prompt.
    #[arg(long, short = 'y', help_heading = RUN)]
    pub yes: bool,
    /// Skip the benchmark that would close the run.
    #[arg(long, help_heading = RUN)]
    pub no_bench: bool,
}

#[derive(Debug, Args)]
pub struct SandboxArgs {
    #[command(subcommand)]
    pub action: SandboxAction,
    #[command(flatten)]
    pub root: SandboxRootArg,
    #[command(flatten)]
    pub fmt: FormatArg,
}

#[derive(Debug, Subcommand)]
pub enum SandboxAction {
    /// Create and start a sandbox.
    Up {
        name: String,
        /// innodb_buffer_pool_size for it.
        #[arg(long)]
        buffer_pool: Option<String>,
    },
    /// Clean shutdown.
    Stop { name: String },
    /// Start a stopped sandbox.
    Start { name: String },
    /// Stop and delete (data directory included).
    Down { name: String },
    /// List sandboxes.
    List,
}

#[derive(Debug, Args)]
pub struct DrillArgs {
    #[command(flatten)]
    pub root: SandboxRootArg,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// Keep the drill's sandbox afterwards.
    #[arg(long)]
    pub keep: bool,
    /// Where the drill's runs and report go (default ./innops-runs/<time>-drill).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seconds each benchmark runs.
    #[arg(long, default_value_t = 5)]
    pub bench_time: u64,
}

/// What `innops bench` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchAction {
    /// Create the sbtest tables and load them.
    Prepare,
    /// Run the workload and report sysbench's figures.
    Run,
    /// Drop the sbtest tables.
    Cleanup,
}

/// `--rand-type`: how row ids are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchRandType {
    /// sysbench 1.0's default: most ids fall in the central 1% of the table.
    Special,
    Uniform,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// prepare, run or cleanup (as sysbench's commands).
    #[arg(value_enum)]
    pub action: BenchAction,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// oltp_point_select, oltp_read_only, oltp_read_write, oltp_insert, or table:DB.TABLE (reads a real table).
    #[arg(long, default_value = "oltp_read_write")]
    pub workload: String,
    /// Client threads, one connection each.
    #[arg(long, default_value_t = 1)]
    pub threads: u32,
    /// Seconds to measure.
    #[arg(long, default_value_t = 10)]
    pub time: u64,
    /// Seconds to run before measuring (not counted).
    #[arg(long, default_value_t = 0)]
    pub warmup: u64,
    /// Number of sbtest tables.
    #[arg(long, default_value_t = 1)]
    pub tables: u32,
    /// Rows per sbtest table.
    #[arg(long, default_value_t = 10_000)]
    pub table_size: u32,
    /// Distribution of row ids.
    #[arg(long, value_enum, default_value_t = BenchRandType::Special)]
    pub rand_type: BenchRandType,
    /// Seed of the random numbers; 0 takes one from the clock (the seed used is reported).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print intermediate figures every N seconds (0: only the final report).
    #[arg(long, default_value_t = 0)]
    pub report_interval: u64,
    /// Schema of the sbtest tables (created by prepare if missing).
    #[arg(long, default_value = "sbtest")]
    pub db: String,
    /// Server error codes that restart a transaction instead of ending the run: a list, all, or none.
    #[arg(long, default_value = "1213,1020,1205")]
    pub ignore_errors: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn redo_needs_a_size_or_advise() {
        assert!(Cli::try_parse_from(["innops", "redo"]).is_err());
        assert!(Cli::try_parse_from(["innops", "redo", "--size", "256M"]).is_ok());
        assert!(Cli::try_parse_from(["innops", "redo", "--advise"]).is_ok());
        assert!(Cli::try_parse_from(["innops", "redo", "--advise", "--size", "1G"]).is_err());
    }
}
