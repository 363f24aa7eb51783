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

/// Embeds a batch of texts for [`Admin::rebind_embedder`].
pub type EmbedBatch<'a> = dyn FnMut(&[&str]) -> Result<Vec<Vec<f32>>> + 'a;

/// Whole-store work: the embedding model binding, checks, counts, reset, and (through
/// [`SideTables`]) API keys and jobs.
pub trait Admin: SideTables + Send + Sync {
    /// Binds the store to an embedding model; fails when it already holds vectors of another
    /// model or dimension ([`Binding::check`]). Required: only the backend knows what it holds.
    fn bind_embedder(&self, binding: &Binding) -> Result<()>;
    /// Moves the store to another embedding model in one transaction: every indexed memory is
    /// embedded again through `embed` (called with batches of at most `rebind.batch` texts: the
    /// text the memory was embedded from, its context included where the store kept it), the
    /// old vectors are replaced and the store is bound to `rebind.to`. Records, history, links
    /// and entities are untouched. Nothing else may write meanwhile.
    fn rebind_embedder(&self, rebind: &Rebind, embed: &mut EmbedBatch<'_>) -> Result<u64>;
    fn integrity(&self) -> Result<IntegrityReport>;
    fn stats(&self) -> Result<StoreStats>;
    /// Removes everything. The caller must have obtained explicit confirmation.
    fn reset(&self) -> Result<()>;
}

/// The tables a store may keep beside its records: API keys ([`crate::keys`]) and jobs
/// ([`crate::jobs`]). Every store that implements both has both, by the one implementation
/// here; a store without them (a wrapper built for one process, a test's) says so by
/// implementing this itself, and then servers refuse to authenticate against it and async adds
/// and background workers are refused on it.
pub trait SideTables {
    /// The store's API key table, when it keeps one.
    fn api_keys(&self) -> Option<&dyn crate::keys::ApiKeyStore>;
    /// The store's job queue, when it keeps one.
    fn jobs(&self) -> Option<&dyn crate::jobs::JobStore>;
}

impl<T: crate::keys::ApiKeyStore + crate::jobs::JobStore> SideTables for T {
    fn api_keys(&self) -> Option<&dyn crate::keys::ApiKeyStore> {
        Some(self)
    }

    fn jobs(&self) -> Option<&dyn crate::jobs::JobStore> {
        Some(self)
    }
}

/// An embedding model a store binds to: the model's id and its vectors' dimension, positive
/// (checked when made).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    model_id: String,
    dimension: usize,
}

impl Binding {
    /// The binding to `model_id` with `dimension`-dimensional vectors; invalid input naming
    /// `dimension` when it is 0.
    pub fn new(model_id: impl Into<String>, dimension: usize) -> Result<Self> {
        if dimension == 0 {
            return Err(crate::Error::invalid("dimension", "must be positive"));
        }
        Ok(Self {
            model_id: model_id.into(),
            dimension,
        })
    }

    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Whether a store bound to `current` (model, dimension) may embed with this binding (see
    /// [`check_binding`]).
    pub fn check(&self, current: Option<(&str, usize)>, backup: &str) -> Result<bool> {
        check_binding(current, &self.model_id, self.dimension, backup)
    }
}

/// A move to another embedding model ([`Admin::rebind_embedder`]): the new binding, and how many
/// texts go to the embedder at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebind {
    pub to: Binding,
    pub batch: usize,
}

/// A model's family: the part before the first `/` ("hash-embedder/v1" → "hash-embedder"). A
/// new revision of one model keeps the vectors of the old.
pub fn model_family(model: &str) -> &str {
    model.split('/').next().unwrap_or(model)
}

/// Whether a store bound to `current` (model, dimension) may embed with `model_id` and
/// `dimension`: `true` when bound to the same family and dimension, `false` when unbound (the
/// caller binds it), a conflict naming both and the way out otherwise. `backup` says what a
/// re-embed keeps, where the backend keeps something (appended to the advice).
pub fn check_binding(
    current: Option<(&str, usize)>,
    model_id: &str,
    dimension: usize,
    backup: &str,
) -> Result<bool> {
    match current {
        Some((m, d)) if model_family(m) != model_family(model_id) || d != dimension => {
            Err(crate::Error::Conflict {
                reason: format!(
                    "this store holds {d}-dimensional vectors from {m}, but the embedder is \
                     {model_id} ({dimension} dimensions); to re-embed every memory, run `mnemo \
                     reembed` with the new embedder configured{backup}, or configure the embedder \
                     this store was written with"
                ),
            })
        }
        Some(_) => Ok(true),
        None => Ok(false),
    }
}

/// Embeds `texts` for a rebind and checks the answer: one vector per text (else a model error),
/// each of `dimension` finite numbers.
pub fn embed_checked(
    embed: &mut EmbedBatch<'_>,
    texts: &[&str],
    dimension: usize,
) -> Result<Vec<Vec<f32>>> {
    let vectors = embed(texts)?;
    if vectors.len() != texts.len() {
        return Err(crate::Error::Model {
            reason: format!(
                "the embedder returned {} vectors for {} texts",
                vectors.len(),
                texts.len()
            ),
        });
    }
    for v in &vectors {
        check_vector("vector", v, dimension)?;
    }
    Ok(vectors)
}

/// Re-embeds `items` for a rebind: their texts (`text` of each) go to `embed` in batches of at
/// most `batch` (checked by [`embed_checked`]), and `store` writes each item's new vector.
pub fn reembed<T>(
    items: &[T],
    (dimension, batch): (usize, usize),
    embed: &mut EmbedBatch<'_>,
    text: impl Fn(&T) -> String,
    mut store: impl FnMut(&T, Vec<f32>) -> Result<()>,
) -> Result<()> {
    for chunk in items.chunks(batch.max(1)) {
        let texts: Vec<String> = chunk.iter().map(&text).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for (item, v) in chunk.iter().zip(embed_checked(embed, &refs, dimension)?) {
            store(item, v)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binding_takes_a_revision_of_its_model_and_refuses_another() {
        let e = Binding::new("m/v1", 0).unwrap_err();
        assert!(e.to_string().contains("must be positive"), "{e}");
        let b = Binding::new("m/v1", 4).unwrap();
        assert_eq!((b.model_id(), b.dimension()), ("m/v1", 4));
        assert!(b.check(Some(("m/v2", 4)), "").unwrap());
        assert!(b.check(Some(("m/v1", 8)), "").is_err());
        assert!(!check_binding(None, "m/v1", 4, "").unwrap());
        assert!(check_binding(Some(("m/v1", 4)), "m/v2", 4, "").unwrap());
        let e = check_binding(Some(("m/v1", 4)), "other", 4, " (kept)").unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Conflict);
        let text = e.to_string();
        assert!(text.contains("4-dimensional vectors from m/v1"), "{text}");
        assert!(
            text.contains("the new embedder configured (kept), or configure"),
            "{text}"
        );
        assert!(check_binding(Some(("m", 4)), "m", 8, "").is_err());
    }

    #[test]
    fn a_rebind_embeds_in_batches_and_refuses_a_short_answer() {
        let mut calls = Vec::new();
        let mut embed = |texts: &[&str]| -> Result<Vec<Vec<f32>>> {
            calls.push(texts.len());
            Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
        };
        let mut stored = Vec::new();
        reembed(
            &[1, 2, 3],
            (2, 2),
            &mut embed,
            |i| i.to_string(),
            |i, v| {
                stored.push((*i, v));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(calls, [2, 1]);
        assert_eq!(stored.len(), 3);
        let mut short = |_: &[&str]| -> Result<Vec<Vec<f32>>> { Ok(vec![]) };
        let e = embed_checked(&mut short, &["a"], 2).unwrap_err();
        assert!(
            e.to_string().contains("returned 0 vectors for 1 texts"),
            "{e}"
        );
        let mut wide = |_: &[&str]| -> Result<Vec<Vec<f32>>> { Ok(vec![vec![1.0; 3]]) };
        assert!(embed_checked(&mut wide, &["a"], 2).is_err());
    }
}
