//! Records: the [`Records`] capability (adds in batches, reads, listings, updates, deletes and
//! history) with its request and response types.

use super::*;

/// Idempotency for a write: a retry with the same key and request returns the stored outcome.
#[derive(Debug, Clone)]
pub struct Idempotency {
    pub key: String,
    /// Hash of the request; the same key with a different request is a conflict.
    pub request_hash: String,
}

/// Everything one `add` writes, committed together or not at all.
#[derive(Debug, Clone)]
pub struct WriteBatch {
    pub scope: Scope,
    pub messages: Vec<Message>,
    pub memories: Vec<NewMemory>,
    /// Existing memories this add retires (an inferred UPDATE or DELETE).
    pub changes: Vec<Supersession>,
    /// Extra edges between memories (the `supersedes` edges of `changes` are implied). Each end
    /// is a memory of this batch or an existing memory of exactly the batch's scope.
    pub links: Vec<Link>,
    /// Existing notes of the batch's scope whose fields change (note evolution).
    pub evolutions: Vec<Evolution>,
    /// The hierarchy's changes (pages, migrations, segments, evictions), all of the batch's scope
    /// exactly; see [`crate::tier`].
    pub tiers: crate::tier::TierWrite,
    pub idempotency: Option<Idempotency>,
    pub context: WriteContext,
}

/// A change to an existing note's context and tags, decided while adding another note. The
/// store writes the new fields, replaces the note's lexical entry with `index_text` (the new
/// enriched text; a conversation window that followed the old one is kept, see
/// [`crate::note::reindexed`]) and its vector with `vector` (made from the new enriched text) and records an `EVOLVE` event with the old
/// and new fields and `reason`, in the batch's transaction. The note's text never changes; a
/// note that is no longer active (or not a note) fails the batch.
#[derive(Debug, Clone)]
pub struct Evolution {
    pub id: MemoryId,
    pub note: NoteFields,
    pub index_text: String,
    pub vector: Vec<f32>,
    pub reason: Option<String>,
}

/// A vector's shape: `dim` finite numbers.
pub fn check_vector(field: &str, v: &[f32], dim: usize) -> Result<()> {
    if v.len() != dim {
        return Err(crate::Error::invalid(
            field,
            format!("has {} dimensions, the store holds {dim}", v.len()),
        ));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(crate::Error::invalid(field, "contains a non-finite value"));
    }
    Ok(())
}

impl WriteBatch {
    /// What every backend checks before writing a batch, without reading the store: the scope
    /// is valid; every memory, page and segment carries the batch's scope; vectors have the
    /// store's dimension `dim` (when the store has one) and finite values; a superseding memory
    /// is written by the same batch; links and new pages are well-formed. The error names the
    /// field. Checks that need the store (both ends of a link exist, a retired memory is still
    /// active, snapshot versions) are the backend's, inside its transaction.
    pub fn validate(&self, dim: Option<usize>) -> Result<()> {
        use crate::Error;
        self.scope.validate()?;
        for m in &self.memories {
            if m.scope != self.scope {
                return Err(Error::invalid(
                    "scope",
                    "every memory of a batch must carry the batch's scope",
                ));
            }
            if let Some(d) = dim {
                check_vector("vector", &m.vector, d)?;
            }
        }
        for c in &self.changes {
            if let Some(by) = c.by {
                if !self.memories.iter().any(|m| m.id == by) {
                    return Err(Error::invalid(
                        "changes",
                        "a superseding memory must be written in the same batch",
                    ));
                }
            }
        }
        for l in &self.links {
            l.validate()?;
        }
        if let Some(d) = dim {
            for e in &self.evolutions {
                check_vector("evolutions.vector", &e.vector, d)?;
            }
        }
        for p in &self.tiers.pages {
            if p.scope != self.scope {
                return Err(Error::invalid(
                    "pages",
                    "every page of a batch must carry the batch's scope",
                ));
            }
            if p.message_ids.is_empty() {
                return Err(Error::invalid("pages", "a page needs at least one message"));
            }
            if let Some(d) = dim {
                check_vector("pages.vector", &p.vector, d)?;
            }
        }
        for w in &self.tiers.segments {
            if w.segment.scope != self.scope {
                return Err(Error::invalid(
                    "segments",
                    "every segment of a batch must carry the batch's scope",
                ));
            }
            if let Some(d) = dim {
                check_vector("segments.vector", &w.segment.vector, d)?;
            }
        }
        Ok(())
    }

    /// A batch that appends messages and adds memories, with no changes to existing ones.
    pub fn new(scope: Scope, messages: Vec<Message>, memories: Vec<NewMemory>) -> Self {
        Self {
            scope,
            messages,
            memories,
            changes: Vec::new(),
            links: Vec::new(),
            evolutions: Vec::new(),
            tiers: crate::tier::TierWrite::default(),
            idempotency: None,
            context: WriteContext::default(),
        }
    }
}

/// Retires an active memory of the batch's scope: it keeps its text, gets `valid_until` and the
/// new state, and history records the reason. With `by`, a `supersedes` link ties the new memory
/// to it. The old memory must still be active when the batch commits, else the batch fails with a
/// conflict (someone changed it since the pipeline read it).
#[derive(Debug, Clone, PartialEq)]
pub struct Supersession {
    pub old: MemoryId,
    /// The memory of the same batch that replaces it; `None` for a deletion.
    pub by: Option<MemoryId>,
    /// `Superseded` or `Deleted`.
    pub state: MemoryState,
    /// When the old fact stopped holding (the message time of the add).
    pub valid_until: Timestamp,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddResult {
    pub id: MemoryId,
    pub memory: String,
    /// `ADD`, `UPDATE` (a new memory that supersedes `previous_id`) or `DELETE` (an existing memory
    /// retired; `id` and `memory` are the old one's).
    pub event: HistoryKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_memory: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_id: Option<MemoryId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Supersession {
    /// The `supersedes` edge from the replacing memory to the retired one, made by the model at
    /// `at`; `None` for a deletion (nothing replaces it). Every backend writes this same edge.
    pub fn link(&self, at: Timestamp) -> Option<Link> {
        self.by.map(|by| Link {
            from: by,
            to: self.old,
            kind: LinkKind::Supersedes,
            strength: 1.0,
            author: Author::Model,
            created_at: at,
            reason: self.reason.clone(),
        })
    }
}

impl AddResult {
    /// The outcome of writing `m`: an `UPDATE` of the memory it replaces when one of `retired`
    /// (each retired memory with the change that retired it) names it as successor, else an
    /// `ADD`. One statement so every backend reports a batch the same way.
    pub fn added(m: &NewMemory, retired: &[(Memory, &Supersession)]) -> Self {
        match retired.iter().find(|(_, c)| c.by == Some(m.id)) {
            Some((old, c)) => Self {
                id: m.id,
                memory: m.text.clone(),
                event: HistoryKind::Update,
                previous_memory: Some(old.text.clone()),
                previous_id: Some(old.id),
                reason: c.reason.clone(),
            },
            None => Self {
                id: m.id,
                memory: m.text.clone(),
                event: HistoryKind::Add,
                previous_memory: None,
                previous_id: None,
                reason: m.reason.clone(),
            },
        }
    }

    /// The outcome of retiring `old` with nothing to replace it: a `DELETE` naming the old memory.
    pub fn deleted(old: &Memory, c: &Supersession) -> Self {
        Self {
            id: old.id,
            memory: old.text.clone(),
            event: HistoryKind::Delete,
            previous_memory: None,
            previous_id: None,
            reason: c.reason.clone(),
        }
    }
}

/// One call to a model made while serving a request: what for, how many tokens, how long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCall {
    /// `extract`, `reconcile`, `procedural`, `embed`.
    pub purpose: String,
    pub model: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub ms: f64,
    /// True when the call failed (its error is the request's error).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddOutcome {
    pub results: Vec<AddResult>,
    /// True when this outcome was returned from an earlier call with the same idempotency key.
    #[serde(default)]
    pub replayed: bool,
    /// Non-fatal notes, e.g. identity keys dropped from metadata.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Every model call this add made (embedding, extraction, reconciliation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub usage: Vec<ModelCall>,
}

/// A change to one memory. `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct MemoryPatch {
    pub text: Option<String>,
    pub index_text: Option<String>,
    /// Required when `text` changes: the new text's vector.
    pub vector: Option<Vec<f32>>,
    /// Replaces the metadata (identity keys already stripped).
    pub metadata: Option<Metadata>,
    pub expires_at: Option<Option<Timestamp>>,
}

impl MemoryPatch {
    /// What every backend checks before applying a patch, without reading the store: a new
    /// text is not blank.
    pub fn validate(&self) -> Result<()> {
        if self.text.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(crate::Error::invalid("text", "must not be empty"));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteMode {
    /// Mark deleted, keep the text for audit, drop from indexes.
    Soft,
    /// Remove the record and its index entries; history rows remain.
    Hard,
}

#[derive(Debug, Clone)]
pub struct ListQuery {
    pub scope: Scope,
    pub kinds: Option<Vec<MemoryKind>>,
    pub filter: Option<Filter>,
    pub limit: usize,
    /// Opaque cursor from a previous page.
    pub cursor: Option<String>,
    pub read: ReadOptions,
}

#[derive(Debug, Clone, Serialize)]
pub struct Page {
    pub results: Vec<Memory>,
    pub next_cursor: Option<String>,
}

/// Where a page of a listing starts, for callers that address pages by number (Mem0's
/// `page`/`page_size`) rather than by cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListPosition {
    /// Every record the listing matches (its cursor and limit ignored).
    pub total: u64,
    /// The cursor that makes `list` start after the first `skip` matches; `None` when `skip` is
    /// 0 (start at the beginning) or not less than `total` (there is no such page).
    pub cursor: Option<String>,
}

/// [`Store::locate`] from `list` alone: walks the listing a page at a time, stopping a page
/// exactly at `skip` to keep its cursor. The trait's default, and the reference the contract
/// tests hold a backend's own answer to.
pub fn locate_by_walking<S: Records + ?Sized>(
    store: &S,
    query: &ListQuery,
    skip: u64,
) -> Result<ListPosition> {
    const STEP: u64 = 1000;
    let mut q = query.clone();
    q.cursor = None;
    let mut total = 0u64;
    let mut cursor = None;
    loop {
        let left = skip.saturating_sub(total);
        // STEP fits any usize.
        q.limit = if left > 0 { left.min(STEP) } else { STEP } as usize;
        let page = store.list(&q)?;
        total += page.results.len() as u64;
        if skip > 0 && total == skip {
            cursor.clone_from(&page.next_cursor);
        }
        match page.next_cursor {
            Some(c) => q.cursor = Some(c),
            None => break,
        }
    }
    Ok(ListPosition { total, cursor })
}

/// The records themselves: adds, reads, listings, updates and deletes, history.
pub trait Records: Send + Sync {
    /// Writes batches in one transaction (all or nothing), one outcome per batch. A batch whose
    /// idempotency key was already used writes nothing and returns the stored outcome
    /// (`replayed = true`). A message already logged (same id: logged with an async add's job,
    /// or by a failed try of a keyed add) is not logged again; one an erase emptied since
    /// refuses the whole write ([`erased_message`](crate::store::erased_message)), so nothing
    /// an erase removed is written back from a queued or retried add's copy of it.
    fn write(&self, batches: Vec<WriteBatch>) -> Result<Vec<AddOutcome>>;
    /// The stored outcome of an idempotency key, if any (lets callers skip model work).
    fn replay(&self, scope: &Scope, idem: &Idempotency) -> Result<Option<AddOutcome>>;
    fn get(&self, scope: &Scope, id: MemoryId, read: &ReadOptions) -> Result<Memory>;
    fn list(&self, query: &ListQuery) -> Result<Page>;
    /// How many records `query` matches and the cursor after the first `skip` of them, in
    /// `list` order; `query.cursor` and `query.limit` are ignored. The default walks the listing
    /// a page at a time (correct, and linear in the matches); a backend answers it with a count
    /// and one positioned read instead.
    fn locate(&self, query: &ListQuery, skip: u64) -> Result<ListPosition> {
        locate_by_walking(self, query, skip)
    }
    /// One update: `update_many` with one item, which already is one transaction.
    fn update(
        &self,
        scope: &Scope,
        id: MemoryId,
        patch: MemoryPatch,
        ctx: &WriteContext,
    ) -> Result<Memory> {
        self.update_many(vec![(scope.clone(), id, patch)], ctx)?
            .pop()
            .ok_or_else(|| crate::Error::internal("one update, one memory"))
    }
    fn delete(
        &self,
        scope: &Scope,
        id: MemoryId,
        mode: DeleteMode,
        ctx: &WriteContext,
    ) -> Result<()>;
    /// Several updates in one transaction, in order: all are applied or, on the first failure
    /// (unknown or inactive id, a scope that does not own it, a bad patch), none. Required: a
    /// default built on `update` could not undo the updates before a failure.
    fn update_many(
        &self,
        items: Vec<(Scope, MemoryId, MemoryPatch)>,
        ctx: &WriteContext,
    ) -> Result<Vec<Memory>>;
    /// Several deletes in one transaction, all or none; returns how many. Required for the same
    /// reason as `update_many`.
    fn delete_many(
        &self,
        items: &[(Scope, MemoryId)],
        mode: DeleteMode,
        ctx: &WriteContext,
    ) -> Result<u64>;
    /// Deletes every active memory in the scope; returns how many.
    fn delete_all(&self, scope: &Scope, mode: DeleteMode, ctx: &WriteContext) -> Result<u64>;
    fn history(&self, scope: &Scope, id: MemoryId, read: &ReadOptions)
        -> Result<Vec<HistoryEvent>>;
    /// Active memories of exactly this scope whose content hash is one of `hashes` (whole-scope
    /// duplicate suppression), as `(hash, id)`.
    fn find_by_hash(&self, scope: &Scope, hashes: &[String]) -> Result<Vec<(String, MemoryId)>>;
    /// The scope that owns a memory (any state). For admin callers that address a memory by id
    /// alone (the server's admin keys); it has no default because only the backend knows where
    /// the owner is kept. `not_found` when there is no such memory.
    fn owner_of(&self, id: MemoryId) -> Result<Scope>;
    /// Every exact scope that owns visible (active, unexpired) memories, with their count, in
    /// scope order. For listings of users, agents and runs (the server's `entities` routes);
    /// no default because counting is the backend's own query.
    fn owners(&self) -> Result<Vec<(Scope, u64)>>;
    /// Records that memories of the scope were read at `at`: `access_count` + 1 and
    /// `last_accessed_at` = `at` for each id (an id listed twice counts twice), in one
    /// transaction; unknown ids and ids of other scopes are skipped. Returns how many rows
    /// changed. Neither `updated_at` nor history changes: reading is not editing. Required:
    /// a default could only rewrite whole records.
    fn touch(&self, scope: &Scope, ids: &[MemoryId], at: Timestamp) -> Result<u64>;
}
