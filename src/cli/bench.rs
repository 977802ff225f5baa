//! `innops bench`'s flags: sysbench's command line (its words in either order, its general, random-number,
//! `--mysql-*` and oltp_*.lua options, with dashes or underscores) beside innops's own names. Apart from the
//! rest of the CLI because sysbench's vocabulary is long and only this command speaks it.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{ConnArgs, FormatArg};

/// Help headings of sysbench's general options.
const GENERAL: &str = "sysbench's general options";
const OLD: &str = "sysbench's old names";
const RANDOM: &str = "sysbench select_random_* script options";

/// What `innops bench` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchAction {
    /// Create the sbtest tables and load them.
    Prepare,
    /// Run the workload and report sysbench's figures.
    Run,
    /// Drop the sbtest tables.
    Cleanup,
    /// Read the sbtest tables through every index, so the buffer pool holds them (oltp_common.lua's prewarm).
    Prewarm,
}

/// `--rand-type`: how row ids are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BenchRandType {
    /// sysbench 1.0's default: most ids fall in the central 1% of the table (--rand-spec-*).
    Special,
    Uniform,
    /// The mean of --rand-spec-iter uniform draws: a bell over the table.
    Gaussian,
    /// --rand-pareto-h of the table gets 1 - h of the draws (80/20 by default).
    Pareto,
    /// Id n with probability proportional to n^-(--rand-zipfian-exp).
    Zipfian,
}

/// sysbench's on/off flags: `--histogram`, `--histogram=on`, `--histogram=off`.
fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err(format!("'{s}' is not on or off")),
    }
}

/// Accepts sysbench's command lines: the words in either order (`oltp_read_write prepare` or `run`), the
/// flags with dashes or underscores, and sysbench's `--mysql-*` connection flags beside innops's own.
#[derive(Debug, Args)]
// A flag given twice takes its last value, as sysbench takes it (its tests pass `--threads=1` twice).
#[command(
    args_override_self = true,
    after_help = "Examples:\n  innops bench oltp_read_write --mysql-socket=/tmp/s.sock --mysql-db=sbtest --tables=2 --table-size=1000 prepare\n  innops bench oltp_read_write run --time=60 --threads=8 --rand-type=zipfian --percentile=99 --histogram\n  innops bench oltp_read_write cleanup"
)]
pub struct BenchArgs {
    /// The sysbench test name (oltp_read_write, oltp_read_only, oltp_write_only, oltp_point_select, oltp_insert,
    /// oltp_update_index, oltp_update_non_index, oltp_delete, select_random_points, select_random_ranges,
    /// bulk_insert, a path to one of their .lua scripts, or table:DB.TABLE) and/or the command: prepare, run,
    /// cleanup, prewarm or help, in either order.
    #[arg(value_name = "TESTNAME|COMMAND")]
    pub first: String,
    /// The other word: the command after the test name, as sysbench writes it.
    #[arg(value_name = "COMMAND")]
    pub second: Option<String>,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub fmt: FormatArg,
    /// The test, when not given as a word [default: oltp_read_write].
    #[arg(long, help_heading = "Workload and tables (prepare, run, cleanup)")]
    pub workload: Option<String>,
    /// Number of sbtest tables.
    #[arg(
        long,
        default_value_t = 1,
        help_heading = "Workload and tables (prepare, run, cleanup)"
    )]
    pub tables: u32,
    /// Rows per sbtest table.
    #[arg(
        long,
        alias = "table_size",
        default_value_t = 10_000,
        help_heading = "Workload and tables (prepare, run, cleanup)"
    )]
    pub table_size: u32,
    /// Schema of the sbtest tables (created by prepare if missing).
    #[arg(
        long,
        visible_alias = "mysql-db",
        alias = "mysql_db",
        default_value = "sbtest",
        help_heading = "Workload and tables (prepare, run, cleanup)"
    )]
    pub db: String,
    /// Where prepare's, cleanup's and a writing workload's writes go: replicate (through the binary log; the
    /// default on a server that is not a replica) or local (sql_log_bin=0; needed on a replica).
    #[arg(long, value_parser = ["replicate", "local"], help_heading = "Workload and tables (prepare, run, cleanup)")]
    pub binlog: Option<String>,
    /// Client threads, one connection each (prepare loads tables with up to this many; bulk_insert has one
    /// table per thread).
    #[arg(
        long,
        default_value_t = 1,
        help_heading = "Workload and tables (prepare, run, cleanup)"
    )]
    pub threads: u32,
    /// sysbench's old name for --threads.
    #[arg(long, alias = "num_threads", value_name = "N", help_heading = OLD)]
    pub num_threads: Option<u32>,
    /// sysbench's old name for --events (given and above 0, it wins, as in sysbench).
    #[arg(long, alias = "max_requests", value_name = "N", help_heading = OLD)]
    pub max_requests: Option<u64>,
    /// sysbench's old name for --time (given and above 0, it wins, as in sysbench).
    #[arg(long, alias = "max_time", value_name = "N", help_heading = OLD)]
    pub max_time: Option<u64>,
    /// sysbench's old name for --rate (given and above 0, it wins, as in sysbench).
    #[arg(long, alias = "tx_rate", value_name = "N", help_heading = OLD)]
    pub tx_rate: Option<u32>,
    /// sysbench's log level, 0 to 5: 0-2 print no run report (errors and prepare's lines only), 3 is the
    /// default, 5 also prints the statements innops's client sends (as -v).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=5), help_heading = GENERAL)]
    pub verbosity: Option<u8>,
    /// sysbench's debug output (on/off): on prints the statements innops's client sends (as -v).
    #[arg(long, value_parser = on_off, num_args = 0..=1, require_equals = true, default_missing_value = "on", value_name = "on|off", help_heading = GENERAL)]
    pub debug: Option<bool>,
    /// sysbench's grace after --time before it forces the end (off, N seconds, N% of --time; alone: 5%).
    /// Accepted with a note: innops ends at --time once each thread's transaction in flight is done.
    #[arg(long, alias = "forced_shutdown", num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "off|N|N%", help_heading = GENERAL)]
    pub forced_shutdown: Option<String>,
    /// Seconds to measure (0: no limit, give --events).
    #[arg(long, default_value_t = 10, help_heading = "Measuring (run)")]
    pub time: u64,
    /// Stop after this many transactions in all (0: no limit).
    #[arg(long, default_value_t = 0, help_heading = "Measuring (run)")]
    pub events: u64,
    /// Seconds to run before measuring (not counted).
    #[arg(
        long,
        visible_alias = "warmup-time",
        alias = "warmup_time",
        default_value_t = 0,
        help_heading = "Measuring (run)"
    )]
    pub warmup: u64,
    /// Transactions per second to start in all, spaced as random arrivals (0: as fast as the threads go).
    #[arg(long, default_value_t = 0, help_heading = "Measuring (run)")]
    pub rate: u32,
    /// Latency percentile to report, 1 to 100 (0 leaves it out).
    #[arg(long, default_value_t = 95, value_parser = clap::value_parser!(u8).range(0..=100), help_heading = "Measuring (run)")]
    pub percentile: u8,
    /// Print the latency histogram at the end (on/off).
    #[arg(long, value_parser = on_off, num_args = 0..=1, require_equals = true, default_value = "off", default_missing_value = "on", help_heading = "Measuring (run)")]
    pub histogram: bool,
    /// Print intermediate figures every N seconds (0: only the final report).
    #[arg(
        long,
        alias = "report_interval",
        default_value_t = 0,
        help_heading = "Measuring (run)"
    )]
    pub report_interval: u64,
    /// Server error codes that restart a transaction instead of ending the run: a list, all, or none.
    #[arg(
        long,
        visible_alias = "mysql-ignore-errors",
        alias = "mysql_ignore_errors",
        default_value = "1213,1020,1205",
        help_heading = "Measuring (run)"
    )]
    pub ignore_errors: String,
    /// Distribution of row ids.
    #[arg(long, alias = "rand_type", value_enum, default_value_t = BenchRandType::Special, help_heading = "Random numbers")]
    pub rand_type: BenchRandType,
    /// Seed of the random numbers; 0 takes one from the clock (the seed used is reported).
    #[arg(
        long,
        visible_alias = "rand-seed",
        alias = "rand_seed",
        default_value_t = 0,
        help_heading = "Random numbers"
    )]
    pub seed: u64,
    /// special: uniform draws averaged for its Gaussian part (also gaussian's iterations).
    #[arg(
        long,
        alias = "rand_spec_iter",
        default_value_t = 12,
        help_heading = "Random numbers"
    )]
    pub rand_spec_iter: u32,
    /// special: percent of the ids that are hot.
    #[arg(
        long,
        alias = "rand_spec_pct",
        default_value_t = 1.0,
        help_heading = "Random numbers"
    )]
    pub rand_spec_pct: f64,
    /// special: percent of the draws that go to the hot ids.
    #[arg(
        long,
        alias = "rand_spec_res",
        default_value_t = 75.0,
        help_heading = "Random numbers"
    )]
    pub rand_spec_res: f64,
    /// pareto: shape h, between 0 and 1.
    #[arg(
        long,
        alias = "rand_pareto_h",
        default_value_t = 0.2,
        help_heading = "Random numbers"
    )]
    pub rand_pareto_h: f64,
    /// zipfian: exponent (theta), 0 or more.
    #[arg(
        long,
        alias = "rand_zipfian_exp",
        default_value_t = 0.8,
        help_heading = "Random numbers"
    )]
    pub rand_zipfian_exp: f64,
    /// Ids in each range SELECT [default: 100].
    #[arg(
        long,
        alias = "range_size",
        value_name = "N",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub range_size: Option<u32>,
    /// Point SELECTs per transaction [default: 10; oltp_point_select always sends 1].
    #[arg(
        long,
        alias = "point_selects",
        value_name = "N",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub point_selects: Option<u32>,
    /// Simple range SELECTs per transaction [default: 1].
    #[arg(
        long,
        alias = "simple_ranges",
        value_name = "N",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub simple_ranges: Option<u32>,
    /// SELECT SUM() ranges per transaction [default: 1].
    #[arg(
        long,
        alias = "sum_ranges",
        value_name = "N",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub sum_ranges: Option<u32>,
    /// SELECT ... ORDER BY ranges per transaction [default: 1].
    #[arg(
        long,
        alias = "order_ranges",
        value_name = "N",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub order_ranges: Option<u32>,
    /// SELECT DISTINCT ranges per transaction [default: 1].
    #[arg(
        long,
        alias = "distinct_ranges",
        value_name = "N",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub distinct_ranges: Option<u32>,
    /// UPDATEs of the indexed column k per transaction (also per oltp_update_index event) [default: 1].
    #[arg(
        long,
        alias = "index_updates",
        value_name = "N",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub index_updates: Option<u32>,
    /// UPDATEs of c per transaction (also per oltp_update_non_index event) [default: 1].
    #[arg(
        long,
        alias = "non_index_updates",
        value_name = "N",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub non_index_updates: Option<u32>,
    /// DELETE + INSERT pairs per transaction [default: 1].
    #[arg(
        long,
        alias = "delete_inserts",
        value_name = "N",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub delete_inserts: Option<u32>,
    /// All four range SELECT groups on or off [default: on].
    #[arg(long, alias = "range_selects", value_parser = on_off, num_args = 0..=1, require_equals = true, default_missing_value = "on", value_name = "on|off", help_heading = "sysbench OLTP script options (oltp_*.lua)")]
    pub range_selects: Option<bool>,
    /// No BEGIN/COMMIT: every statement in autocommit [default: off].
    #[arg(long, alias = "skip_trx", value_parser = on_off, num_args = 0..=1, require_equals = true, default_missing_value = "on", value_name = "on|off", help_heading = "sysbench OLTP script options (oltp_*.lua)")]
    pub skip_trx: Option<bool>,
    /// prepare: id is AUTO_INCREMENT; off loads ids 1..N itself and oltp_insert sends unique ids [default: on].
    #[arg(long, alias = "auto_inc", value_parser = on_off, num_args = 0..=1, require_equals = true, default_missing_value = "on", value_name = "on|off", help_heading = "sysbench OLTP script options (oltp_*.lua)")]
    pub auto_inc: Option<bool>,
    /// prepare: a plain KEY xid (id) in place of the PRIMARY KEY [default: off].
    #[arg(long, alias = "secondary", value_parser = on_off, num_args = 0..=1, require_equals = true, default_missing_value = "on", value_name = "on|off", help_heading = "sysbench OLTP script options (oltp_*.lua)")]
    pub secondary: Option<bool>,
    /// prepare: add the index k_N on k [default: on].
    #[arg(long, alias = "create_secondary", value_parser = on_off, num_args = 0..=1, require_equals = true, default_missing_value = "on", value_name = "on|off", help_heading = "sysbench OLTP script options (oltp_*.lua)")]
    pub create_secondary: Option<bool>,
    /// prepare: the tables' storage engine [default: innodb].
    #[arg(
        long,
        visible_alias = "mysql-storage-engine",
        alias = "mysql_storage_engine",
        value_name = "ENGINE",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub storage_engine: Option<String>,
    /// prepare: text added at the end of CREATE TABLE (sysbench 1.1), e.g. "ROW_FORMAT=COMPRESSED".
    #[arg(
        long,
        alias = "create_table_options",
        value_name = "OPTIONS",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub create_table_options: Option<String>,
    /// Open a new connection after every N transactions of a thread (sysbench 1.1) [default: 0, never].
    #[arg(
        long,
        value_name = "N",
        help_heading = "sysbench OLTP script options (oltp_*.lua)"
    )]
    pub reconnect: Option<u64>,
    /// select_random_points: values in its `k IN (…)` list, 1 or more [default: 10].
    #[arg(long, alias = "random_points", value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = RANDOM)]
    pub random_points: Option<u32>,
    /// select_random_ranges: BETWEEN ranges OR-ed in its SELECT, 1 or more [default: 10].
    #[arg(long, alias = "number_of_ranges", value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = RANDOM)]
    pub number_of_ranges: Option<u32>,
    /// select_random_ranges: each range is `k BETWEEN v AND v + N` [default: 5].
    #[arg(long, value_name = "N", help_heading = RANDOM)]
    pub delta: Option<u32>,
    /// sysbench's name for --host.
    #[arg(
        long,
        alias = "mysql_host",
        help_heading = "sysbench's connection flags"
    )]
    pub mysql_host: Option<String>,
    /// sysbench's name for --port.
    #[arg(
        long,
        alias = "mysql_port",
        help_heading = "sysbench's connection flags"
    )]
    pub mysql_port: Option<u16>,
    /// sysbench's name for --socket.
    #[arg(
        long,
        alias = "mysql_socket",
        help_heading = "sysbench's connection flags"
    )]
    pub mysql_socket: Option<PathBuf>,
    /// sysbench's name for --user.
    #[arg(
        long,
        alias = "mysql_user",
        help_heading = "sysbench's connection flags"
    )]
    pub mysql_user: Option<String>,
    /// sysbench's name for --password.
    #[arg(
        long,
        alias = "mysql_password",
        help_heading = "sysbench's connection flags"
    )]
    pub mysql_password: Option<String>,
    /// TLS as sysbench takes it: on (TLS required, as sysbench 1.0), off, or sysbench 1.1's modes
    /// DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY; sets --ssl-mode.
    #[arg(long, alias = "mysql_ssl", num_args = 0..=1, require_equals = true, default_missing_value = "on", value_name = "on|off|MODE", help_heading = "sysbench's connection flags")]
    pub mysql_ssl: Option<String>,
    /// sysbench's name for --ssl-ca.
    #[arg(
        long,
        alias = "mysql_ssl_ca",
        help_heading = "sysbench's connection flags"
    )]
    pub mysql_ssl_ca: Option<PathBuf>,
    /// sysbench's name for --ssl-cert.
    #[arg(
        long,
        alias = "mysql_ssl_cert",
        help_heading = "sysbench's connection flags"
    )]
    pub mysql_ssl_cert: Option<PathBuf>,
    /// sysbench's name for --ssl-key.
    #[arg(
        long,
        alias = "mysql_ssl_key",
        help_heading = "sysbench's connection flags"
    )]
    pub mysql_ssl_key: Option<PathBuf>,
    /// sysbench's name for --ssl-cipher.
    #[arg(
        long,
        alias = "mysql_ssl_cipher",
        help_heading = "sysbench's connection flags"
    )]
    pub mysql_ssl_cipher: Option<String>,
    /// Protocol compression (on/off): accepted with a note when on; innops bench's connections stay
    /// uncompressed (it times statements on the connection's own socket).
    #[arg(long, alias = "mysql_compression", value_parser = on_off, num_args = 0..=1, require_equals = true, default_missing_value = "on", value_name = "on|off", help_heading = "sysbench's connection flags")]
    pub mysql_compression: Option<bool>,
    /// Only mysql (MySQL and MariaDB) is spoken.
    #[arg(
        long,
        alias = "db_driver",
        help_heading = "sysbench's connection flags"
    )]
    pub db_driver: Option<String>,
}
