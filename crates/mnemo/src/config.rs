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
    /// Holds the store file `mnemo.db` (and its derived index files).
    pub data_dir: PathBuf,
    pub embedder: EmbedderConfig,
    /// Entries in the content-hash embedding cache.
    pub embedding_cache: usize,
    pub rank: RankParams,
}

impl MemoryConfig {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            embedder: EmbedderConfig::new(EmbedderBackend::Onnx, default_models_dir()),
            embedding_cache: 10_000,
            rank: RankParams::default(),
        }
    }

    pub fn store_path(&self) -> PathBuf {
        self.data_dir.join("mnemo.db")
    }

    pub fn validate(&self) -> Result<()> {
        if self.data_dir.as_os_str().is_empty() {
            return Err(Error::invalid("data_dir", "must not be empty"));
        }
        let r = &self.rank;
        if !(r.dense_weight >= 0.0
            && r.lexical_weight >= 0.0
            && r.dense_weight + r.lexical_weight > 0.0)
        {
            return Err(Error::invalid(
                "rank",
                "weights must be non-negative and not both zero",
            ));
        }
        Ok(())
    }
}
