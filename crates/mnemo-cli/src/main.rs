//! `mnemo`: the command-line tool. Global flags come before the subcommand; `--json` makes
//! stdout machine-readable (errors too: `{"error":{"kind":…,"message":…}}` with a non-zero exit).

mod args;
mod commands;
mod config;
mod io;

// See the workspace manifest: the write path's many small allocations (BENCHMARKS.md, the
// fourth cut).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = match config::parse() {
        Ok(cli) => cli,
        Err(err) => {
            let json = std::env::args().any(|a| a == "--json");
            std::process::exit(io::report_error(&err, json));
        }
    };
    let json = cli.json;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = runtime.block_on(commands::run(cli));
    if let Err(err) = result {
        std::process::exit(io::report_error(&err, json));
    }
    drop(runtime);
    let status = io::output_status();
    if status != 0 {
        std::process::exit(status);
    }
}
