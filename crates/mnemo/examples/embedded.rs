//! The embedded library in one file: open a store in a fresh data directory, add a few memories
//! for a user, search them, build a context pack, change one memory and read its history, then
//! erase it.
//!
//! It needs the embedder's model files (`mnemo models install`), found like everywhere else in
//! `$MNEMO_MODELS_DIR` (default `~/.local/share/mnemo/models`):
//!
//! `MNEMO_MODELS_DIR=./models cargo run -p mnemo --example embedded [DATA_DIR]`
//!
//! Without `DATA_DIR` the store lives in a temporary directory removed at the end.

use mnemo::core::pack::ContextOptions;
use mnemo::core::{Scope, SearchRequest, WritePlan};
use mnemo::{ContextRequest, Memory, MemoryConfig, Result, UpdateRequest};
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    // The embedder loads on first use; say what is missing before anything starts.
    let models = mnemo::default_models_dir();
    let paths = mnemo_models::ModelPaths::in_dir(&models);
    if let Err(e) = paths.check(mnemo_models::EmbedderBackend::Onnx) {
        eprintln!(
            "embedded: the embedder's model files are not in {} ({e}).\n\
             Install them with `mnemo models install`, or point MNEMO_MODELS_DIR at a folder \
             that has them.",
            models.display()
        );
        return ExitCode::from(2);
    }
    let temp;
    let data_dir = match std::env::args_os().nth(1) {
        Some(dir) => std::path::PathBuf::from(dir),
        None => {
            temp = match tempfile::tempdir() {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("embedded: no temporary directory: {e}");
                    return ExitCode::FAILURE;
                }
            };
            temp.path().to_path_buf()
        }
    };
    match run(MemoryConfig::new(&data_dir)).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("embedded: {} error: {e}", e.kind().as_str());
            ExitCode::FAILURE
        }
    }
}

async fn run(config: MemoryConfig) -> Result<()> {
    println!("store: {}", config.store_path().display());
    let memory = Memory::open(config).await?;
    let me = Scope::user("alice")?;

    // Raw adds (no chat model is configured): each text is one memory.
    let mut ids = Vec::new();
    for text in [
        "I adopted a greyhound named Biscuit",
        "My sister Jo lives in Lisbon",
        "I am allergic to peanuts",
    ] {
        let added = memory
            .add(mnemo::AddRequest::text(me.clone(), text))
            .await?;
        for r in &added.results {
            println!("{} {} {:?}", r.event, r.id, r.memory);
            ids.push(r.id);
        }
    }

    // Hybrid search (dense + BM25 + entities) inside the user's scope.
    let found = memory
        .search(SearchRequest::new(me.clone(), "what is my dog called?", 2))
        .await?;
    for hit in &found.results {
        println!("search {:.3} {:?}", hit.score, hit.memory.text);
    }

    // A context pack: prompt-ready text that never exceeds the token budget.
    let pack = memory
        .context(ContextRequest {
            scope: me.clone(),
            query: "plan a dinner with my sister".into(),
            budget_tokens: 200,
            options: ContextOptions::default(),
        })
        .await?;
    println!(
        "context pack: {} of {} tokens\n{}",
        pack.used_tokens, pack.budget_tokens, pack.rendered
    );

    // Change a memory, then read its history: the old text stays on record.
    let dog = ids[0];
    let ctx = WritePlan {
        actor: Some("example".into()),
        reason: Some("the dog was renamed".into()),
        ..WritePlan::default()
    };
    let update = UpdateRequest {
        text: Some("I adopted a greyhound named Pancake".into()),
        ..UpdateRequest::default()
    };
    memory.update(me.clone(), dog, update, ctx).await?;
    for e in memory.history(me.clone(), dog).await? {
        println!(
            "history {} {:?} -> {:?}",
            e.event, e.old_memory, e.new_memory
        );
    }

    // Erase: the text leaves every copy the store keeps; the id and an ERASE event remain.
    let report = memory
        .erase(me.clone(), ids[2], false, WritePlan::default())
        .await?;
    println!(
        "erased {}: {} history events scrubbed, {} messages erased",
        report.id, report.history_scrubbed, report.messages_erased
    );
    let left = memory
        .search(SearchRequest::new(me, "peanut allergy", 3))
        .await?;
    println!(
        "after erase, search for peanuts: {:?}",
        left.results
            .iter()
            .map(|h| h.memory.text.as_str())
            .collect::<Vec<_>>()
    );
    Ok(())
}
