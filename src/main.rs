use clap::Parser;

fn main() {
    // Like every Unix tool: a closed pipe (`innops runs | head`) ends the process quietly, instead of Rust's
    // ignored SIGPIPE turning the next print into a panic. A run cut short this way resumes like any crash.
    // SAFETY: signal(2) with SIG_DFL, before any other thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let args = innops::commands::mysql_style_args(std::env::args_os().collect());
    let cli = innops::cli::Cli::try_parse_from(&args)
        .unwrap_or_else(|e| innops::commands::usage_error(e, &args));
    let json = innops::commands::format_of(&cli) == innops::cli::Format::Json;
    match innops::commands::run(cli) {
        Ok(()) => {}
        Err(e) => {
            // A closed pipe (innops ... | head) is not an error.
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>()
                    .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) {
                return;
            }
            let code = innops::error::exit_code_of(&e);
            innops::commands::print_error(&innops::error::display_of(&e), code, json);
            std::process::exit(code);
        }
    }
}
