//! Typed configuration of a `Memory`, with the defaults the CLI and server start from.

use mnemo_core::{Error, RankParams, Result};
use mnemo_models::{EmbedderBackend, EmbedderConfig};
use std::path::PathBuf;

/// The user's data directory for mnemo (`$XDG_DATA_HOME/mnemo` or `~/.local/share/mnemo`).
pub fn default_data_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        return PathBuf::from(x).join("mnemo");
    }
    match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        Some(home) => PathBuf::from(home)
            .join(".local")
            .join("share")
            .join("mnemo"),
        None => PathBuf::from(".mnemo"),
    }
}

/// Where models are installed: `$MNEMO_MODELS_DIR`, else `<default data dir>/models`.
pub fn default_models_dir() -> PathBuf {
    std::env::var_os("MNEMO_MODELS_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| default_data_dir().join("models"))
}

#[derive(Debug, Clone)]
pub struct MemoryConfig {
    /// Holds the store file `mnemo.db` (and its derived index files) unless `store` names
    /// another store.
    pub data_dir: PathBuf,
    /// Where the store lives; `None` is the embedded file in `data_dir`.
    pub store: Option<crate::StoreConfig>,
    pub embedder: EmbedderConfig,
    /// Entries in the content-hash embedding cache.
    pub embedding_cache: usize,
    pub rank: RankParams,
    pub indexing: WindowIndexing,
    /// The chat model for inferred adds; `None` runs in raw mode.
    pub llm: Option<ChatConfig>,
    pub infer: mnemo_core::pipeline::InferConfig,
    /// Note adds: neighbours considered and the link rules (see `mnemo_core::note`).
    pub notes: mnemo_core::NoteConfig,
    /// The hierarchy: short-term window, mid-term segments, heat (see `mnemo_core::tier`).
    pub tiers: mnemo_core::TierConfig,
    /// Count reads (`access_count`, `last_accessed_at`, segment visits), written in the
    /// background; off only to measure what counting costs.
    pub usage_tracking: bool,
    /// Async adds and their workers (see `jobs`).
    pub jobs: crate::JobConfig,
    /// Relation extraction and graph search (see `relations`).
    pub relations: crate::RelationConfig,
}

/// Which chat model infers memories.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatConfig {
    /// An OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp's server, OpenRouter).
    OpenAi(mnemo_models::OpenAiConfig),
    /// A GGUF file run in-process through llama.cpp (needs the `llama` cargo feature).
    Gguf { path: PathBuf, threads: Option<u32> },
}

impl ChatConfig {
    /// Builds the model (a GGUF file is loaded now).
    pub fn build(&self) -> Result<std::sync::Arc<dyn mnemo_core::ChatModel>> {
        match self {
            ChatConfig::OpenAi(cfg) => Ok(std::sync::Arc::new(mnemo_models::OpenAiChat::new(
                cfg.clone(),
            )?)),
            #[cfg(feature = "llama")]
            ChatConfig::Gguf { path, threads } => {
                let mut cfg = mnemo_models::LlamaConfig::new(path.clone());
                if let Some(t) = threads {
                    cfg.threads = *t;
                }
                Ok(std::sync::Arc::new(mnemo_models::LlamaChat::new(cfg)?))
            }
            #[cfg(not(feature = "llama"))]
            ChatConfig::Gguf { path, .. } => Err(Error::invalid(
                "llm",
                format!(
                    "{} is a GGUF model, and this mnemo was built without the `llama` feature; rebuild with `--features llama` or serve the model behind an OpenAI-compatible endpoint",
                    path.display()
                ),
            )),
        }
    }
}

/// What a raw memory is indexed with besides its own text (defined with the raw pipeline).
pub use mnemo_core::pipeline::raw::WindowIndexing;

impl MemoryConfig {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            store: None,
            embedder: EmbedderConfig::new(EmbedderBackend::Onnx, default_models_dir()),
            embedding_cache: 10_000,
            rank: RankParams::default(),
            indexing: WindowIndexing::default(),
            llm: None,
            infer: mnemo_core::pipeline::InferConfig::default(),
            notes: mnemo_core::NoteConfig::default(),
            tiers: mnemo_core::TierConfig::default(),
            usage_tracking: true,
            jobs: crate::JobConfig::default(),
            relations: crate::RelationConfig::default(),
        }
    }

    /// The embedded store's file in `data_dir` (the default store).
    pub fn store_path(&self) -> PathBuf {
        self.data_dir.join("mnemo.db")
    }

    /// The store to open: `store`, or the embedded file in `data_dir`.
    pub fn store_config(&self) -> crate::StoreConfig {
        self.store
            .clone()
            .unwrap_or_else(|| crate::StoreConfig::embedded(&self.data_dir))
    }

    pub fn validate(&self) -> Result<()> {
        if self.data_dir.as_os_str().is_empty() {
            return Err(Error::invalid("data_dir", "must not be empty"));
        }
        let r = &self.rank;
        if !(r.dense_weight >= 0.0
            && r.lexical_weight >= 0.0
            && r.entity_weight >= 0.0
            && r.entity_weight.is_finite()
            && r.link_weight >= 0.0
            && r.link_weight.is_finite()
            && r.temporal_weight >= 0.0
            && r.temporal_weight.is_finite()
            && r.dense_weight + r.lexical_weight > 0.0)
        {
            return Err(Error::invalid(
                "rank",
                "weights must be non-negative, and dense and lexical not both zero",
            ));
        }
        let n = &self.notes;
        for (field, v) in [
            ("notes.link_similarity", n.link_similarity),
            ("notes.link_entity", n.link_entity),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::invalid(field, "must be a number in [0, 1]"));
            }
        }
        self.tiers.validate()?;
        self.jobs.validate()?;
        Ok(())
    }
}
