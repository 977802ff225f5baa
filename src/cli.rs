//! The command line, declared with clap and nothing else: [`crate::commands`] turns these into validated
//! settings.
//!
//! Why (nearly) one file: it is declarations only (no logic), and each subcommand's flags are its help text,
//! read top to bottom as `innops --help` shows them; the flag groups several commands share (connection,
//! server control, run) are declared once here and flattened where used. `innops bench` alone has a file of its
//! own (`cli/bench.rs`): it speaks sysbench's long vocabulary, which no other command shares.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand, ValueEnum};

mod bench;
pub use bench::{BenchAction, BenchArgs, BenchRandType};

#[derive(Debug, Parser)]
#[command(
    name = "innops",
    // The package version and the git commit (build.rs, src/buildinfo.rs).
    version = env!("INNOPS_VERSION"),
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
    /// Make InnoDB read-only: change buffering off, pre-flush, slow shutdown, start with innodb_read_only, prove
    /// it; --undo returns to read-write.
    Readonly(ReadonlyArgs),
    /// Forced-recovery dump of a damaged server: copy, escalate innodb_force_recovery on the copy, dump every
    /// row SQL can still read, report the lost key ranges and the rows it cannot vouch for; exit 4 unless every
    /// table is complete.
    Recover(RecoverArgs),
    /// Convert MyISAM tables to InnoDB by the fastest verified path, keeping the old table.
    Convert(ConvertArgs),
    /// Reproduce a deadlock from a scenario, deterministically, and parse InnoDB's deadlock reports.
    Deadlock(DeadlockArgs),
    /// A/B experiment on dynamic server variables: the baseline twice (A/A) and every variant, interleaved in
    /// rounds, each judged against the noise; everything set back at the end unless --keep best.
    Experiment(Box<ExperimentArgs>),
    /// Run a playbook (TOML): several procedures as one plan, one run directory, one resume.
    Run(RunPlaybookArgs),
    /// Continue an interrupted run from its run directory.
    Resume(ResumeArgs),
    /// Throwaway local servers from the mariadbd/mysqld binary on PATH.
    Sandbox(SandboxArgs),
    /// Run the staging drill playbook on a fresh sandbox as one plan and write one report.
    Drill(DrillArgs),
    /// sysbench-compatible benchmarks: prepare, run and clean up a workload.
    Bench(Box<BenchArgs>),
    /// Past runs and how each ended, from their run directories.
    Runs(RunsArgs),
    /// Print a shell completion script: `innops completions bash > /etc/bash_completion.d/innops`.
    Completions(CompletionsArgs),
    /// Print the man page (roff): `innops man > /usr/local/share/man/man1/innops.1`.
    Man,
}

#[derive(Debug, Args)]
pub struct DeadlockArgs {
    #[command(subcommand)]
    pub action: DeadlockAction,
}

#[derive(Debug, Subcommand)]
pub enum DeadlockAction {
    /// Run a scenario (built-in name or TOML file) in a schema of its own; without --execute, show it and the
    /// settings in force.
    Run(Box<DeadlockRunArgs>),
    /// Parse a saved SHOW ENGINE INNODB STATUS, or an error log written with innodb_print_all_deadlocks.
    Parse(DeadlockParseArgs),
    /// Poll the server and append every new deadlock, parsed, to a JSON-lines file (pt-deadlock-logger without
    /// a table on the server); --count or --duration ends it.
    Watch(Box<DeadlockWatchArgs>),
    /// Turn a captured deadlock (saved SHOW ENGINE INNODB STATUS or error log) into a scenario file.
    Replay(DeadlockReplayArgs),
}

#[derive(Debug, Args)]
pub struct DeadlockWatchArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// The JSON-lines file each new deadlock is appended to.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Seconds between polls (SHOW ENGINE INNODB STATUS and Innodb_deadlocks), 0.1 to 3600.
    #[arg(long, default_value_t = 1.0, value_name = "SECONDS")]
    pub interval: f64,
    /// Stop after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<u64>,
    /// Stop after this many new deadlocks were written.
    #[arg(long)]
    pub count: Option<u64>,
}

#[derive(Debug, Args)]
pub struct DeadlockReplayArgs {
    /// A saved SHOW ENGINE INNODB STATUS or an error log written with innodb_print_all_deadlocks (- for stdin).
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,
    /// Which deadlock of the file (1 is the first); default the latest.
    #[arg(long, value_name = "N")]
    pub index: Option<usize>,
    /// Write the scenario to this file instead of stdout (refused if it exists, unless --force).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Overwrite the --out file if it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Args)]
pub struct DeadlockRunArgs {
    /// share-then-delete, opposite-order, gap-insert, or the path of a scenario file.
    pub scenario: String,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// Create the schema and run the scenario. Without it innops shows the scenario and the settings in force.
    #[arg(long)]
    pub execute: bool,
    /// Run the scenario this many times and report whether the outcome was the same every time.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// The schema the scenario runs in; it must not exist, and is dropped afterwards unless --keep (never a
    /// system schema).
    #[arg(long, default_value = "innops_deadlock")]
    pub schema: String,
    /// Keep the schema after the run (not with --detect).
    #[arg(long)]
    pub keep: bool,
    /// Set innodb_deadlock_detect (global) for the run and restore it afterwards. A run that sets it runs as a
    /// plan with a run directory: `innops resume RUN_DIR` puts the setting back after an interrupted run.
    #[arg(long, value_enum, ignore_case = true)]
    pub detect: Option<OnOff>,
    /// With --detect: where the run's plan, journal and report go (default ./innops-runs/<time>-deadlock).
    #[arg(long, requires = "detect", value_name = "DIR")]
    pub run_dir: Option<PathBuf>,
    /// innodb_lock_wait_timeout (seconds) of each session the scenario gives none.
    #[arg(long, default_value_t = 2, value_name = "SECONDS")]
    pub lock_wait_timeout: u64,
    /// Where the scenario's writes go: replicate (through the binary log; the default on a server that is not
    /// a replica) or local (sql_log_bin=0: this server alone; needed on a replica).
    #[arg(long, value_parser = ["replicate", "local"])]
    pub binlog: Option<String>,
}

#[derive(Debug, Args)]
pub struct DeadlockParseArgs {
    /// The file to read, or - for stdin.
    pub file: PathBuf,
    #[command(flatten)]
    pub fmt: FormatArg,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Where the run directories are.
    #[arg(long, default_value = "innops-runs")]
    pub runs_dir: PathBuf,
    #[command(flatten)]
    pub fmt: FormatArg,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
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
    /// Read only this option file's [client] and [innops] groups (instead of /etc/my.cnf,
    /// /etc/mysql/my.cnf and ~/.my.cnf).
    #[arg(help_heading = CONNECTION, long)]
    pub defaults_file: Option<PathBuf>,
    /// Also read this option file, after the global ones and before ~/.my.cnf.
    #[arg(help_heading = CONNECTION, long, conflicts_with = "defaults_file")]
    pub defaults_extra_file: Option<PathBuf>,
    /// Read no option file.
    #[arg(help_heading = CONNECTION, long, conflicts_with_all = ["defaults_file", "defaults_extra_file"])]
    pub no_defaults: bool,
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
    /// TLS when the server offers it (the default).
    #[arg(help_heading = CONNECTION, long, overrides_with = "skip_ssl")]
    pub ssl: bool,
    /// Plain TCP, unless a CA or --ssl-verify-server-cert asks for more.
    #[arg(help_heading = CONNECTION, long, overrides_with = "ssl")]
    pub skip_ssl: bool,
    /// CA directory: refused unless --ssl-ca is also given (innops cannot read a CA directory).
    #[arg(help_heading = CONNECTION, long)]
    pub ssl_capath: Option<PathBuf>,
    /// Allowed ciphers, OpenSSL's names separated by ':' (innops has the ECDHE/AEAD ciphers of TLS 1.2 and 1.3).
    #[arg(help_heading = CONNECTION, long)]
    pub ssl_cipher: Option<String>,
    /// Certificate revocation list: refused when the certificate is checked (innops cannot check one).
    #[arg(help_heading = CONNECTION, long)]
    pub ssl_crl: Option<PathBuf>,
    /// Certificate revocation list directory: as --ssl-crl.
    #[arg(help_heading = CONNECTION, long)]
    pub ssl_crlpath: Option<PathBuf>,
    /// TLS or no connection, the certificate checked against --ssl-ca and the host name (as the mariadb client).
    #[arg(help_heading = CONNECTION, long)]
    pub ssl_verify_server_cert: bool,
    /// Allowed TLS versions, e.g. TLSv1.2,TLSv1.3.
    #[arg(help_heading = CONNECTION, long)]
    pub tls_version: Option<String>,
    /// Also read each option group with this suffix ([client_SUFFIX]…); default: $MYSQL_GROUP_SUFFIX.
    #[arg(help_heading = CONNECTION, long)]
    pub defaults_group_suffix: Option<String>,
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
    /// Show the plan and run its read-only checks: what innops does without --execute (accepted as
    /// pt-online-schema-change spells it).
    #[arg(help_heading = RUN, long, conflicts_with = "execute")]
    pub dry_run: bool,
    /// Allow steps that restart the server or overwrite data without a prompt (required without a terminal).
    #[arg(help_heading = RUN, long, short = 'y')]
    pub yes: bool,
    /// Where the run's plan, journal and report go (default ./innops-runs/<time>-<procedure>).
    #[arg(help_heading = RUN, long)]
    pub run_dir: Option<PathBuf>,
}

/// The benchmark before and after a plan, on the commands whose plans take one (recover's never does).
#[derive(Debug, Args, Clone, Default)]
pub struct PlanBenchArgs {
    /// Skip the benchmarks before and after.
    #[arg(help_heading = RUN, long)]
    pub no_bench: bool,
    /// Seconds each benchmark runs.
    #[arg(help_heading = RUN, long, default_value_t = 10)]
    pub bench_time: u64,
    /// Run the plan's benchmark workload through the whole plan: report.html charts its throughput and p95
    /// latency each second with the steps marked, and the figures before and after are taken from it.
    #[arg(help_heading = RUN, long, conflicts_with = "no_bench")]
    pub bench_during: bool,
    /// Threads of the workload with --bench-during (and so of the figures before and after) [default: 2].
    #[arg(help_heading = RUN, long, value_name = "N", requires = "bench_during")]
    pub bench_during_threads: Option<u32>,
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
    pub bench: PlanBenchArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// New total redo size (bytes, or with K/M/G suffix: 256M, 2G).
    #[arg(long, conflicts_with = "advise")]
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

/// What `innops experiment --keep` keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KeepArg {
    /// The fastest variant, only when it is faster than the baseline beyond the noise (restart variables through
    /// innops's drop-in, the others with SET GLOBAL).
    Best,
}

#[derive(Debug, Args)]
pub struct ExperimentArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub control: ControlArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// A study file (TOML: the flags below under their own names, plus a title and a description; see
    /// playbooks/experiments/). A flag given on the command line overrides the file's field of that name.
    #[arg(value_name = "STUDY.toml")]
    pub study: Option<PathBuf>,
    /// A server variable and the values its variants take: VAR=v1,v2,… (numbers, sizes such as 128M, or words
    /// such as ON); several --set flags cross into every combination. A variable read-only while the server runs
    /// is set through innops's drop-in and a restart (--sandbox, --service or --start-cmd say how).
    #[arg(
        long = "set",
        value_name = "VAR=V1,V2",
        required_unless_present_any = ["table_option", "column_variant", "study"]
    )]
    pub set: Vec<String>,
    /// Zip the --set flags instead of crossing them: the n-th values of every --set make the n-th variant
    /// (--set a=1,2,3 --set b=x,y,z: three variants, (1,x) (2,y) (3,z)); every --set gives as many values.
    #[arg(long)]
    pub zip: bool,
    /// Table variants, each run on a copy of the benchmark table in innops's own schema (your tables are never
    /// altered): options of one variant separated by spaces, variants by commas, e.g. --table-option
    /// 'ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8','PAGE_COMPRESSED=1','ENGINE=Aria'. Options: ENGINE
    /// (InnoDB|RocksDB|Aria|MyISAM), ROW_FORMAT, KEY_BLOCK_SIZE, PAGE_COMPRESSED, PAGE_COMPRESSION_LEVEL,
    /// TRANSACTIONAL. Crosses with --set.
    #[arg(
        long = "table-option",
        value_name = "'OPT=V …',…",
        value_delimiter = ','
    )]
    pub table_option: Vec<String>,
    /// Load the RocksDB engine for an ENGINE=RocksDB variant when the server has the plugin but has not loaded
    /// it: `plugin_load_add = ha_rocksdb` in innops's drop-in and a restart, and at the end the drop-in put back
    /// and another restart (two downtimes).
    #[arg(long)]
    pub install_engine: bool,
    /// The workload each arm runs (innops bench's sysbench workloads) [default: oltp_read_write].
    #[arg(long, conflicts_with = "workload_sql")]
    pub workload: Option<String>,
    /// A workload given as SQL: the file's statements (SELECT, INSERT, UPDATE, DELETE, REPLACE; no DDL), run as
    /// one transaction per event by every client thread on the arm's table; :id is a row id drawn for each
    /// statement, {name} a --column-variant's column (its expression where the arm's table lacks it).
    #[arg(long, value_name = "FILE")]
    pub workload_sql: Option<PathBuf>,
    /// Column variants, each a generated column added to a copy of the benchmark table:
    /// 'NAME TYPE AS (EXPRESSION) VIRTUAL|STORED [INDEXED]', e.g. --column-variant
    /// 'c_crc INT UNSIGNED AS (CRC32(c)) VIRTUAL INDEXED'. One per flag; they are table variants (with
    /// --table-option's, they cross with --set).
    #[arg(
        long = "column-variant",
        value_name = "'NAME TYPE AS (EXPR) VIRTUAL|STORED [INDEXED]'"
    )]
    pub column_variant: Vec<String>,
    /// Client threads of the workload [default: 4]; several (`4,16,64`) make one group of arms per count, each
    /// with its own baseline, A/A pair and verdicts.
    #[arg(long, value_delimiter = ',', value_name = "N[,N…]")]
    pub threads: Vec<u32>,
    /// Seconds each arm is measured in each round [default: 10].
    #[arg(long, value_name = "SECONDS")]
    pub time: Option<u64>,
    /// Rounds: each runs every arm once, in an order rotated each round [default: 3].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Seconds of workload before each measured run, thrown away [default: 2].
    #[arg(long, value_name = "SECONDS")]
    pub warmup: Option<u64>,
    /// Transactions a second to start in all threads, as sysbench's --rate (0: as fast as they go) [default: 0].
    #[arg(long)]
    pub rate: Option<u32>,
    /// Keep the winner when it is faster than the baseline beyond the noise: set again and written into
    /// innops's drop-in (the diff shown; restart variables with a restart); without it, every variable is set
    /// back as it was.
    #[arg(long, value_enum)]
    pub keep: Option<KeepArg>,
    /// Wait before an arm's run while this status variable is above the value, and throw away and run again an
    /// arm's run during which it rose above it (the workload's own threads not counted) [default:
    /// Threads_running=25, or the --critical-load value when that is lower].
    #[arg(long, value_name = "VAR=N")]
    pub max_load: Option<String>,
    /// Stop the experiment, every variable back at its baseline, when this status variable is above the value
    /// [default: Threads_running=50].
    #[arg(long, value_name = "VAR=N")]
    pub critical_load: Option<String>,
}

#[derive(Debug, Args)]
pub struct ReadonlyArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub control: ControlArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub bench: PlanBenchArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// Return the server to read-write (and to the redo size it had before --min-redo).
    #[arg(long)]
    pub undo: bool,
    /// Shrink the redo log online to the smallest size the version accepts before the shutdown.
    #[arg(long, conflicts_with = "undo")]
    pub min_redo: bool,
    /// Also set read_only=1, so MyISAM/Aria writes, GRANT and CREATE USER are refused too (except for accounts
    /// with READ_ONLY ADMIN or SUPER).
    #[arg(long, conflicts_with = "undo")]
    pub sql_read_only: bool,
    /// Skip the online pre-flush of dirty pages and purge history (the slow shutdown does it all, while down).
    #[arg(long, conflicts_with = "undo")]
    pub no_preflush: bool,
    /// Seconds each pre-flush wait (dirty pages, then purge history) may take before the plan goes on.
    #[arg(long, default_value_t = 300, value_name = "SECONDS")]
    pub preflush_timeout: u64,
}

#[derive(Debug, Args)]
pub struct RecoverArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub control: ControlArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// Where the SQL files (one per table), lost.jsonl and manifest.json go (new or empty). Required.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where the copy of the data directory and its private server go (a new directory; needs the data
    /// directory's size free). Required unless --in-place.
    #[arg(long)]
    pub copy_to: Option<PathBuf>,
    /// Tables to dump, db.table, comma-separated (default: every table).
    #[arg(long, value_delimiter = ',')]
    pub tables: Vec<String>,
    /// The highest innodb_force_recovery level tried on the copy, from 1 up.
    #[arg(long, default_value_t = 3)]
    pub max_level: u8,
    /// DANGER: allow levels 4 to 6 up to N on the copy (they can damage its data files for good).
    #[arg(long, value_name = "N")]
    pub allow_level: Option<u8>,
    /// Remove the copy when the dump has finished.
    #[arg(long)]
    pub drop_copy: bool,
    /// End by loading the dump into a fresh sandbox and checking it against the manifest.
    #[arg(long)]
    pub verify_load: bool,
    /// Reading sessions per table: a table of 100,000 rows or more (the server's estimate) with an integer-led
    /// primary key is read in that many key ranges at once; any other table by one session.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
    /// The server binary for the private server [default: the one on PATH, as the server's version].
    #[arg(long, value_name = "PATH")]
    pub mariadbd: Option<PathBuf>,
    /// The data directory of a server that is down already (it crashed on the bad page): innops copies it
    /// and stops or starts nothing. Its option file (--config-file) gives the page and log settings.
    #[arg(long, value_name = "PATH", conflicts_with = "in_place")]
    pub datadir: Option<PathBuf>,
    /// DANGER: forced recovery on the server itself (restarted at each level through innops's drop-in, then
    /// back to normal) instead of on a copy; --copy-to is not used.
    #[arg(long, conflicts_with = "copy_to")]
    pub in_place: bool,
    /// The copy takes the binary and relay logs and the replication info files too (left out by default: the
    /// dump never reads them, and a replica's relay logs can be gigabytes).
    #[arg(long, conflicts_with = "in_place")]
    pub with_logs: bool,
    /// When to read rows from the copy's data file itself (the clustered index's leaf pages) after the SQL
    /// reads: auto (the default; --pages alone too) for each table the SQL reads left lost ranges in or could
    /// not open, and for every table when the copy starts at no level (each read from its .frm and .ibd, with
    /// no server), when there is a copy (not with --in-place); never: the SQL result alone. Rows the parser
    /// proves go into the same files, marked in the manifest; the lost ranges shrink by what was read.
    #[arg(long, value_name = "WHEN", num_args = 0..=1, default_missing_value = "auto", value_parser = ["auto", "never"])]
    pub pages: Option<String>,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub bench: PlanBenchArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// Tables to convert: db.table or db.*, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub tables: Vec<String>,
    /// Every MyISAM table outside the system schemas.
    #[arg(long, conflicts_with = "rollback")]
    pub all_myisam: bool,
    /// auto (decided from the server's capability, its replicas, and each table's size and writes), bulk,
    /// deferred, chunked, online (writes go on: triggers keep the copy up to date) or alter.
    #[arg(long, default_value = "auto", value_parser = ["auto", "bulk", "deferred", "chunked", "online", "alter"])]
    pub strategy: String,
    /// auto takes the online path for a table larger than this (data and indexes: bytes, or a number with K,
    /// M or G), or one written in the last minute.
    #[arg(long, default_value = "1G", value_name = "SIZE")]
    pub online_above: String,
    /// The online path: how long one try at a lock waits (the cut-over's guard, a chunk's lock, a trigger's
    /// creation, the index build's last phase), so writers are never held longer; tried up to 30 times.
    #[arg(long, default_value_t = 1, value_name = "SECONDS")]
    pub cutover_lock_wait: u64,
    /// Where the conversion's writes go: replicate (through the binary log to every replica; the default on a
    /// server that is not a replica) or local (sql_log_bin=0: this server alone, e.g. each replica before a
    /// failover; on a primary with replicas only with --yes).
    #[arg(long, value_parser = ["replicate", "local"])]
    pub binlog: Option<String>,
    /// Pause the copy while a replica is more than this many seconds behind (a run on a primary).
    #[arg(long, default_value_t = 1, value_name = "SECONDS")]
    pub max_lag: u64,
    /// Stop the copy when a replica is more than this many seconds behind.
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub critical_lag: u64,
    /// A replica to watch and verify (repeatable): HOST:PORT, reached with the primary's account, or a
    /// pt-toolkit DSN `h=HOST,P=PORT,u=USER,F=OPTION-FILE` (or `S=SOCKET`) for an account of its own [default:
    /// the replicas registered on the primary, from SHOW SLAVE HOSTS].
    #[arg(long = "replica", value_name = "HOST:PORT|DSN")]
    pub replicas: Vec<String>,
    /// DANGER: drop the kept MyISAM table once the InnoDB table is verified identical to it.
    #[arg(long)]
    pub drop_old_table: bool,
    /// Swap back to the kept MyISAM table (db.table), if the InnoDB table has not changed since.
    #[arg(long, conflicts_with_all = ["tables", "drop_old_table"])]
    pub rollback: Option<String>,
    /// How the copy is proven before the swap: auto (CHECKSUM TABLE, computed in the server, where the table's
    /// column types checksum alike on MyISAM and InnoDB, else innops's row hash; the row hash decides wherever
    /// CHECKSUM TABLE differs), checksum (CHECKSUM TABLE first for every table, the row hash deciding where it
    /// differs) or hash (innops's 128-bit row hash of every row, for every table).
    #[arg(long, default_value = "auto", value_parser = ["auto", "checksum", "hash"])]
    pub verify: String,
    /// Target duration of one copy chunk: milliseconds (500, 500ms) or seconds as pt-online-schema-change
    /// writes them (0.5, 0.5s); deferred, chunked and online paths.
    #[arg(long, default_value = "500")]
    pub chunk_time: String,
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
pub struct RunPlaybookArgs {
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub control: ControlArgs,
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub bench: PlanBenchArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// The playbook: a TOML file (see playbooks/README.md).
    pub playbook: PathBuf,
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
    /// Create and start a sandbox (on --port when given, else on a free port). If it cannot start, nothing of
    /// it is left behind.
    Up {
        name: String,
        /// innodb_buffer_pool_size: bytes, or a number with K, M or G (256M) [default: 128M].
        #[arg(long)]
        buffer_pool: Option<String>,
        /// The server binary to run (mariadbd or mysqld) [default: the first on PATH or in /usr/sbin].
        #[arg(long, value_name = "PATH")]
        mariadbd: Option<PathBuf>,
        /// TCP port the sandbox listens on (refused if in use) [default: a free port].
        #[arg(long)]
        port: Option<u16>,
        /// Write a binary log (ROW format, GTID strict mode), so replicas can follow this sandbox.
        #[arg(long)]
        binlog: bool,
        /// Make this sandbox a GTID replica of the running sandbox PRIMARY (made with --binlog): read_only, its own
        /// binary log, and every row of PRIMARY replayed before `up` returns.
        #[arg(long, value_name = "PRIMARY")]
        replica_of: Option<String>,
    },
    /// Clean shutdown.
    Stop {
        #[arg(id = "sandbox", value_name = "NAME")]
        name: String,
    },
    /// Start a stopped sandbox.
    Start {
        #[arg(id = "sandbox", value_name = "NAME")]
        name: String,
    },
    /// Stop and delete (data directory included).
    Down {
        #[arg(id = "sandbox", value_name = "NAME")]
        name: String,
    },
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
    /// The drill's run directory: its journal, report.json, report.html, the recovery's dump (default
    /// ./innops-runs/<time>-drill). `innops resume DIR` continues a drill that stopped.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seconds each benchmark runs.
    #[arg(long, default_value_t = 5)]
    pub bench_time: u64,
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
    fn redo_takes_a_size_or_advise_not_both() {
        // Neither is refused by the command, in one sentence naming both (tests/cli.rs).
        assert!(Cli::try_parse_from(["innops", "redo"]).is_ok());
        assert!(Cli::try_parse_from(["innops", "redo", "--size", "256M"]).is_ok());
        assert!(Cli::try_parse_from(["innops", "redo", "--advise"]).is_ok());
        assert!(Cli::try_parse_from(["innops", "redo", "--advise", "--size", "1G"]).is_err());
    }
}
