//! mnemo: the library facade. `Memory` joins a store (chosen by `StoreConfig`: the embedded
//! SQLite file by default, or PostgreSQL; see `store`) and an
//! embedder (`mnemo-models`, loaded lazily on first use) behind an async API: `add`, `search`,
//! `get`, `list`, `update`, `delete`, `delete_all`, `history`, `reset`, `export`, `import`.
//!
//! `Settings` is the engine's part of `mnemo.toml` and the one way from those keys to a
//! `MemoryConfig` (the CLI and the Python package both go through it).
//!
//! Store and model work is blocking; each call runs it on tokio's blocking pool. With a chat
//! model (`MemoryConfig::llm` or `with_chat`), adds infer by default: extraction and
//! reconciliation, or procedural summaries (`mnemo_core::pipeline`).

mod add;
mod blocks;
pub mod cancel;
mod config;
mod context;
mod erase;
pub mod jobs;
mod links;
mod profile;
mod records;
mod relations;
mod scope_lock;
mod search;
mod segments;
mod sessions;
pub mod settings;
mod store;
#[cfg(feature = "testing")]
pub mod testing;
mod timeline;
mod transfer;
mod usage;

pub use add::{AddInput, AddRequest};
pub use blocks::SeedSource;
pub use config::{default_data_dir, default_models_dir, ChatConfig, MemoryConfig, WindowIndexing};
pub use context::{ContextRequest, ContextTuning};
pub use jobs::{job_view, JobConfig, JobWorkers, OnJobRun};
pub use mnemo_core as core;
pub use mnemo_core::pipeline::InferConfig;
pub use mnemo_core::{Error, ErrorKind, NoteConfig, NoteInput, Result};
/// A throwaway schema in a PostgreSQL database, for runs that measure on a fresh store
/// (`mnemo eval`, `mnemo bench`) and for tests.
pub use mnemo_store_postgres::ScratchSchema;
pub use profile::{ProfileOptions, ProfileOutcome};
pub use records::{GetRequest, ListRequest, MemoryDetail, MemoryRecord, UpdateRequest};
pub use relations::RelationConfig;
pub use search::SearchResponse;
pub use segments::{ProfileView, SegmentView};
pub use sessions::{LogMessage, PageView, SessionList, SessionMessages, SessionView};
pub use settings::Settings;
pub use store::{
    import_legacy_keys, key_store, open_store, reembed_store, Reembedded, StoreConfig,
    DEFAULT_STORE_POOL_SIZE,
};
pub use timeline::{TimelineEntry, TimelinePage, TimelineRequest};

use mnemo_core::{Binding, CachedEmbedder, ChatModel, Embedder, RankParams, Store};
use std::sync::{Arc, OnceLock};

#[derive(Clone)]
struct Inner {
    store: Arc<dyn Store>,
    /// How to load the embedder on first use (with its cache size); `None` when it was given.
    lazy: Option<(mnemo_models::EmbedderConfig, usize)>,
    embedder: OnceLock<Arc<dyn Embedder>>,
    rank: RankParams,
    indexing: WindowIndexing,
    chat: Option<Arc<dyn ChatModel>>,
    infer: InferConfig,
    notes: mnemo_core::NoteConfig,
    tiers: mnemo_core::TierConfig,
    usage: Arc<usage::Usage>,
    /// Whether reads are counted (see `usage`).
    usage_tracking: bool,
    jobs: JobConfig,
    /// The bounds on core memory blocks (see `blocks`).
    block_limits: mnemo_core::BlockLimits,
    /// Wakes this process's idle workers when a job is enqueued or retried through it.
    job_ready: Arc<tokio::sync::Notify>,
    relations: RelationConfig,
}

/// The memory engine. Cheap to clone; all clones share one store and one embedder.
#[derive(Clone)]
pub struct Memory {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory").finish_non_exhaustive()
    }
}

impl Memory {
    /// Opens the configured store (`config.store`, by default the embedded file under
    /// `config.data_dir`); the embedder loads on first use.
    pub async fn open(config: MemoryConfig) -> Result<Self> {
        config.validate()?;
        let location = config.store_config();
        let store = run_blocking(move || open_store(&location)).await?;
        let m = Self::from_parts_inner(
            store,
            Some((config.embedder.clone(), config.embedding_cache)),
            config.rank,
            config.indexing,
        )
        .with_note_config(config.notes)
        .with_tier_config(config.tiers.clone())
        .with_usage_tracking(config.usage_tracking)
        .with_job_config(config.jobs.clone())
        .with_relation_config(config.relations);
        Ok(match &config.llm {
            Some(llm) => {
                let llm = llm.clone();
                let chat = run_blocking(move || llm.build()).await?;
                m.with_chat(chat, config.infer.clone())
            }
            None => m,
        })
    }

    /// Builds an engine over any store and embedder (tests, custom backends), with the default
    /// context indexing.
    pub fn from_parts(
        store: Arc<dyn Store>,
        embedder: Arc<dyn Embedder>,
        rank: RankParams,
    ) -> Result<Self> {
        Self::from_parts_with(store, embedder, rank, WindowIndexing::default())
    }

    pub fn from_parts_with(
        store: Arc<dyn Store>,
        embedder: Arc<dyn Embedder>,
        rank: RankParams,
        indexing: WindowIndexing,
    ) -> Result<Self> {
        // Built inside an async runtime (an application's `main`), the blocking bind runs on a
        // thread of its own: a store whose driver blocks on a runtime of its own (PostgreSQL)
        // must not do that on a thread that drives async tasks.
        let binding = Binding::new(embedder.model_id(), embedder.dimension())?;
        let bind = || store.bind_embedder(&binding);
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|s| {
                s.spawn(bind)
                    .join()
                    .map_err(|_| Error::internal("binding the embedder panicked"))
            })??;
        } else {
            bind()?;
        }
        let m = Self::from_parts_inner(store, None, rank, indexing);
        let _ = m.inner.embedder.set(embedder);
        Ok(m)
    }

    fn from_parts_inner(
        store: Arc<dyn Store>,
        lazy: Option<(mnemo_models::EmbedderConfig, usize)>,
        rank: RankParams,
        indexing: WindowIndexing,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                lazy,
                embedder: OnceLock::new(),
                rank,
                indexing,
                chat: None,
                infer: InferConfig::default(),
                notes: mnemo_core::NoteConfig::default(),
                tiers: mnemo_core::TierConfig::default(),
                usage: Arc::default(),
                usage_tracking: true,
                jobs: JobConfig::default(),
                block_limits: mnemo_core::BlockLimits::default(),
                job_ready: Arc::default(),
                relations: RelationConfig::default(),
            }),
        }
    }

    /// The same engine with other note settings (neighbours, link rules).
    pub fn with_note_config(self, notes: mnemo_core::NoteConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                notes,
                ..(*self.inner).clone()
            }),
        }
    }

    /// The same engine with other hierarchy settings (window and segment capacities,
    /// thresholds, heat). Not validated here: `MemoryConfig::validate` checks them at open.
    pub fn with_tier_config(self, tiers: mnemo_core::TierConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                tiers,
                ..(*self.inner).clone()
            }),
        }
    }

    /// The same engine with read counting on or off (on by default; off only to measure what
    /// counting costs, as `mnemo bench` does).
    pub fn with_usage_tracking(self, on: bool) -> Self {
        Self {
            inner: Arc::new(Inner {
                usage_tracking: on,
                ..(*self.inner).clone()
            }),
        }
    }

    /// The hierarchy settings in force.
    pub fn tier_config(&self) -> &mnemo_core::TierConfig {
        &self.inner.tiers
    }

    /// The same engine with a chat model: adds infer by default from now on.
    pub fn with_chat(self, chat: Arc<dyn ChatModel>, infer: InferConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                chat: Some(chat),
                infer,
                ..(*self.inner).clone()
            }),
        }
    }

    /// The chat model, when one is configured.
    pub fn chat(&self) -> Option<&Arc<dyn ChatModel>> {
        self.inner.chat.as_ref()
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.inner.store
    }

    /// The embedder, loading it (and binding the store to it) on first call.
    pub async fn embedder(&self) -> Result<Arc<dyn Embedder>> {
        if let Some(e) = self.inner.embedder.get() {
            return Ok(e.clone());
        }
        let this = self.clone();
        run_blocking(move || {
            let (cfg, cache) = this.inner.lazy.as_ref().ok_or_else(|| {
                Error::internal("an engine built from parts always holds its embedder")
            })?;
            let e: Arc<dyn Embedder> = Arc::new(CachedEmbedder::new(
                mnemo_models::load_embedder(cfg)?,
                *cache,
            ));
            this.inner
                .store
                .bind_embedder(&Binding::new(e.model_id(), e.dimension())?)?;
            Ok(this.inner.embedder.get_or_init(|| e).clone())
        })
        .await
    }

    /// Embeds texts on the blocking pool: exactly one vector per text, in order, or an error
    /// (a custom embedder answering with another count is a model error, never a panic or a
    /// text paired with the wrong vector).
    pub async fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        let e = self.embedder().await?;
        run_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            // In chunks, so an abandoned request stops between them.
            let mut vectors = Vec::with_capacity(refs.len());
            for chunk in refs.chunks(EMBED_CHUNK) {
                cancel::check_cancelled("embedding")?;
                vectors.extend(e.embed(chunk)?);
            }
            if vectors.len() != refs.len() {
                return Err(Error::Model {
                    reason: format!(
                        "the embedder returned {} vectors for {} texts",
                        vectors.len(),
                        refs.len()
                    ),
                });
            }
            Ok(vectors)
        })
        .await
    }

    pub(crate) async fn with_store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = self.inner.store.clone();
        run_blocking(move || f(store.as_ref())).await
    }
}

/// Texts embedded per call of the embedder: the steps between cancellation checks. A call is
/// also the embedder's unit of parallel work (its passes are shared among its sessions), and a
/// call costs a fixed set-up besides its texts: measured on two cores, 64 short texts embed 20 %
/// faster as one call than as two of 32. 128 short texts take about 0.15 s on two cores, 128 turns
/// of 256 tokens about two seconds: the longest an abandoned add goes on.
const EMBED_CHUNK: usize = 128;

pub(crate) async fn run_blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    // The work takes the request's ticket along: what it holds lives as long as the work.
    let ticket = cancel::current_task_ticket();
    tokio::task::spawn_blocking(move || {
        let _current = cancel::enter(ticket);
        f()
    })
    .await
    .map_err(|e| Error::internal(format!("blocking task failed: {e}")))?
}
