use clap::Parser;

fn main() {
    let cli = innops::cli::Cli::parse();
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
            eprintln!("innops: {}", innops::error::display_of(&e));
            std::process::exit(innops::error::exit_code_of(&e));
        }
    }
}
