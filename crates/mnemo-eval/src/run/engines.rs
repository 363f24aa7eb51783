//! The engines of a run: mnemo's store, and as asked the plain store (baselines), the notes
//! store and the `compare_store` engine, each a SQLite file under the work directory or a fresh
//! PostgreSQL schema.

use super::{EvalMode, EvalOptions};
use anyhow::{bail, Context, Result};
use mnemo::{Memory, WindowIndexing};

pub(super) struct Engines {
    pub mnemo: Memory,
    pub plain: Option<Memory>,
    pub notes: Option<Memory>,
    /// mnemo again, on the `compare_store` database.
    pub compare: Option<Memory>,
    /// The PostgreSQL schemas the engines live in; declared last, so they are dropped (with
    /// everything in them) after the engines.
    _schemas: Vec<mnemo::ScratchSchema>,
}

/// One engine's store: a SQLite file under the work directory, or a fresh schema of the
/// PostgreSQL database `pg` (kept in `schemas`, so it lives as long as the run).
async fn open_engine(
    opts: &EvalOptions,
    name: &str,
    indexing: WindowIndexing,
    pg: Option<&str>,
    schemas: &mut Vec<mnemo::ScratchSchema>,
) -> Result<Memory> {
    let (embedder, rank) = (opts.embedder.clone(), opts.rank);
    let config = match pg {
        Some(url) => {
            let schema = mnemo::ScratchSchema::create(url, &format!("mnemo_eval_{name}"))
                .with_context(|| format!("creating a schema for the {name} store"))?;
            let config = mnemo::StoreConfig::Postgres {
                url: schema.url(),
                pool_size: 4,
            };
            schemas.push(schema);
            config
        }
        None => {
            let dir = opts.work_dir.join(name);
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            mnemo::StoreConfig::embedded(&dir)
        }
    };
    // Opening and binding the embedder block (the PostgreSQL driver must not block a worker).
    let memory = tokio::task::spawn_blocking(move || -> Result<Memory> {
        let store = mnemo::open_store(&config)?;
        Ok(Memory::from_parts_with(store, embedder, rank, indexing)?)
    })
    .await??;
    Ok(memory)
}

pub(super) async fn open_engines(opts: &EvalOptions) -> Result<Engines> {
    if opts.work_dir.exists()
        && std::fs::read_dir(&opts.work_dir)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true)
    {
        bail!(
            "work directory {} is not empty; eval needs fresh stores",
            opts.work_dir.display()
        );
    }
    let (pg, mut schemas) = (opts.store_url.as_deref(), Vec::new());
    let with_chat = |mnemo: Memory| -> Result<Memory> {
        Ok(match (opts.mode, &opts.infer_model) {
            (EvalMode::Infer, Some(model)) => {
                mnemo.with_chat(model.clone(), mnemo::InferConfig::default())
            }
            (EvalMode::Infer, None) => bail!(
                "--mode infer needs a chat model to extract memories (--llm-base-url and --llm-model)"
            ),
            (EvalMode::Raw, _) => mnemo,
        })
    };
    let mnemo = with_chat(open_engine(opts, "mnemo", opts.indexing, pg, &mut schemas).await?)?;
    // In infer mode the graph is the model's: with `--graph` the chat model also extracts
    // each add's relations (raw mode reads them with the rules, as always).
    let mnemo = mnemo.clone().with_relation_config(mnemo::RelationConfig {
        graph_search: opts.graph,
        model: opts.graph && opts.mode == EvalMode::Infer,
        ..mnemo.relation_config()
    });
    let plain = if opts.baselines {
        Some(open_engine(opts, "plain", WindowIndexing::plain(), pg, &mut schemas).await?)
    } else {
        None
    };
    let notes = match opts.notes {
        Some(_) => Some(
            open_engine(opts, "notes", opts.indexing, pg, &mut schemas)
                .await?
                .with_note_config(opts.note_config),
        ),
        None => None,
    };
    let compare = match opts.compare_store.as_deref() {
        Some(url) => Some(with_chat(
            open_engine(opts, "compare", opts.indexing, Some(url), &mut schemas).await?,
        )?),
        None => None,
    };
    Ok(Engines {
        mnemo,
        plain,
        notes,
        compare,
        _schemas: schemas,
    })
}
