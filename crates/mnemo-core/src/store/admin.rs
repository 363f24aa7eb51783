//! Whole-store administration: the [`Admin`] capability (embedder binding, integrity,
//! counts, reset, API keys) and its reports.

use super::*;

/// Counts that must agree for a consistent store.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IntegrityReport {
    pub memories: u64,
    pub indexed_memories: u64,
    pub lexical_rows: u64,
    pub vectors: u64,
    pub memories_without_add_history: u64,
    pub ann_entries: u64,
    /// Documents in the derived in-memory lexical index.
    pub lexical_index_entries: u64,
    pub messages: u64,
    /// Entities whose kept link count differs from their links (0 when consistent).
    pub entities_with_wrong_mentions: u64,
    /// Pages of the hierarchy, in any tier.
    pub pages: u64,
    /// Mid-term pages whose segment is missing or evicted (0 when consistent).
    pub mid_pages_without_segment: u64,
}

impl IntegrityReport {
    /// True when every indexed memory has exactly one lexical row and one vector, the derived
    /// indexes hold every vector / document, every memory has an ADD event and every entity's
    /// link count is right.
    pub fn is_consistent(&self) -> bool {
        self.indexed_memories == self.lexical_rows
            && self.indexed_memories == self.vectors
            && self.ann_entries == self.vectors
            && self.lexical_index_entries == self.vectors
            && self.memories_without_add_history == 0
            && self.entities_with_wrong_mentions == 0
            && self.mid_pages_without_segment == 0
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StoreStats {
    pub schema_version: u32,
    pub memories: u64,
    pub messages: u64,
    pub file_bytes: u64,
    pub embedding_model: Option<String>,
    pub dimension: Option<usize>,
}

/// Embeds a batch of texts for [`Store::rebind_embedder`].
pub type EmbedBatch<'a> = dyn FnMut(&[&str]) -> Result<Vec<Vec<f32>>> + 'a;

/// Whole-store work: the embedding model binding, checks, counts, reset and API keys.
pub trait Admin: Send + Sync {
    /// Binds the store to an embedding model; fails when it already holds vectors of another
    /// model or dimension. Required: only the backend knows what it holds.
    fn bind_embedder(&self, model_id: &str, dimension: usize) -> Result<()>;
    /// Moves the store to another embedding model in one transaction: every indexed memory is
    /// embedded again through `embed` (called with batches of at most `batch` texts: the text
    /// the memory was embedded from, its context included where the store kept it), the old
    /// vectors are replaced and the store is bound to `model_id`/`dimension`. Records, history,
    /// links and entities are untouched. Nothing else may write meanwhile.
    fn rebind_embedder(
        &self,
        model_id: &str,
        dimension: usize,
        batch: usize,
        embed: &mut EmbedBatch<'_>,
    ) -> Result<u64>;
    fn integrity(&self) -> Result<IntegrityReport>;
    fn stats(&self) -> Result<StoreStats>;
    /// Removes everything. The caller must have obtained explicit confirmation.
    fn reset(&self) -> Result<()>;
    /// The store's API key table, when it keeps one (see [`crate::keys`]). Defaults to none so
    /// a store built for one process (tests, tools) need not carry keys; servers refuse to
    /// authenticate against a store without them.
    fn api_keys(&self) -> Option<&dyn crate::keys::ApiKeyStore> {
        None
    }
    /// The store's job queue, when it keeps one (see [`crate::jobs`]). Defaults to none; async
    /// adds and background workers are refused on a store without it.
    fn jobs(&self) -> Option<&dyn crate::jobs::JobStore> {
        None
    }
}
