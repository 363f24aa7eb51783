//! The `Store` trait: what every backend (embedded SQLite, PostgreSQL) provides.
//!
//! Invariants every implementation keeps (the contract suite in `mnemo-testkit` checks them):
//! - every method that writes does so in exactly one transaction over every table it touches;
//! - every read applies the scope and, unless `ReadOptions` says otherwise, the one
//!   expiry/state predicate — `get` by id included;
//! - derived indexes (vectors, lexical) never disagree with the records once a call returns.
//!
//! Methods are blocking; the async facade runs them on blocking threads.

use crate::error::Result;
use crate::filter::Filter;
use crate::memory::*;
use crate::scope::Scope;
use serde::{Deserialize, Serialize};

/// Which records a read sees. [`ReadOptions::admits`] is the one statement of the rule; the
/// stores' SQL predicates and index pre-filters implement it, and a test holds each to it.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Also return memories whose `expires_at` has passed.
    pub include_expired: bool,
    /// Also return superseded and (soft-)deleted memories.
    pub include_inactive: bool,
    /// The instant expiry is judged against.
    pub now: Timestamp,
    /// An as-of read: what was valid at this instant (`valid_from ≤ T < valid_until`, with
    /// `valid_from` defaulting to the creation time), whatever its state now — a superseded fact
    /// answers "where did she live in 2023". `include_inactive` does not apply; expiry (a
    /// retention limit, judged at `now`) still does.
    pub as_of: Option<Timestamp>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            include_expired: false,
            include_inactive: false,
            now: chrono::Utc::now(),
            as_of: None,
        }
    }
}

/// The fields of a memory the visibility rule reads.
#[derive(Debug, Clone, Copy)]
pub struct Validity {
    pub active: bool,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub valid_from: Option<Timestamp>,
    pub valid_until: Option<Timestamp>,
}

impl ReadOptions {
    /// The visibility rule: whether a memory with `v` is seen by this read.
    pub fn admits(&self, v: &Validity) -> bool {
        let unexpired = self.include_expired || v.expires_at.is_none_or(|t| t > self.now);
        let current = match self.as_of {
            Some(t) => {
                v.valid_from.unwrap_or(v.created_at) <= t && v.valid_until.is_none_or(|u| t < u)
            }
            None => self.include_inactive || v.active,
        };
        unexpired && current
    }

    /// Reads that see only active, unexpired memories at `now` (the default read).
    pub fn is_default_view(&self) -> bool {
        !self.include_expired && !self.include_inactive && self.as_of.is_none()
    }
}

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

/// A linked memory found by [`Store::linked`]: the memory, the link it was reached through and
/// the end of that link it was reached from.
#[derive(Debug, Clone)]
pub struct LinkedMemory {
    pub from: MemoryId,
    pub link: Link,
    /// The store-local key of `memory` (as in [`Candidate::key`]), so a search can score the
    /// linked memory against its query ([`Store::vector_scores`]).
    pub key: i64,
    pub memory: Memory,
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

/// What an erase removed (see [`Store::erase`]). Counts, never content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EraseReport {
    pub id: MemoryId,
    /// History events of the memory whose texts, metadata and reasons were removed, plus events
    /// of other memories of the scope that quoted one of its texts.
    pub history_scrubbed: u64,
    /// Source messages whose content was removed: a raw memory's message always (the raw
    /// memory *is* the message), a derived memory's sources only when asked.
    pub messages_erased: u64,
    /// Source messages left as they were (the evidence of an erased fact erased without
    /// `sources`); 0 for a raw memory.
    #[serde(default)]
    pub messages_kept: u64,
    /// Other memories of the scope whose index text quoted it and was re-indexed without it.
    pub neighbours_reindexed: u64,
    /// Entities that named only this memory, removed.
    pub entities_removed: u64,
    /// Stored idempotency results that quoted it, scrubbed.
    pub replays_scrubbed: u64,
    /// Pages and segment summaries of the owner that quoted it, scrubbed.
    #[serde(default)]
    pub pages_scrubbed: u64,
}

/// The part of the conversation log an erase covers (see [`Store::erase_log`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EraseTarget<'a> {
    /// One session of the scope.
    Session(&'a str),
    /// Everything the scope covers ("forget this user").
    Scope,
}

/// What an erase of a session or a scope removed (see [`Store::erase_log`]). Counts, never
/// content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EraseLogReport {
    /// Memories erased, each as [`Store::erase`] erases one and with its `ERASE` event: for a
    /// session, every memory with a source message in it (raw turns and what was derived from
    /// them — facts, notes, summaries a model wrote); for a scope, every memory of the scope.
    /// Memories erased before are left as they are.
    pub memories_erased: u64,
    /// Messages whose content and speaker name were removed (ids, order and times kept).
    pub messages_erased: u64,
    /// Pages whose text and keywords were removed.
    pub pages_scrubbed: u64,
    /// Segment summaries (model or rule paraphrases of the pages) removed, with their keywords:
    /// a segment holding a page of the session, or every segment of the scope.
    pub segments_scrubbed: u64,
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

/// Which records may be candidates for a search.
#[derive(Debug, Clone, Copy)]
pub struct CandidateQuery<'a> {
    pub scope: &'a Scope,
    pub kinds: Option<&'a [MemoryKind]>,
    pub filter: Option<&'a Filter>,
    pub read: ReadOptions,
    pub limit: usize,
}

/// A store-local handle of a memory with one signal's score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub key: i64,
    pub score: f32,
}

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

/// A record of an export stream; `import` reads the same records back.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExportRecord {
    Memory(Box<Memory>),
    Message(Box<Message>),
    /// Exported after every memory; imported after the memories of its import.
    Link(Box<Link>),
    /// The lexical index text of the memory just before it, where it differs from its text
    /// (a conversation turn's context window, a note's enriched text). Imports also embed it.
    IndexText {
        memory_id: MemoryId,
        index_text: String,
    },
    /// One history event with its owner (history outlives hard-deleted memories). When an
    /// import carries a memory's events, they replace the `ADD` event an import would write.
    History(Box<HistoryRecord>),
    /// An entity of an exact scope and the memories linked to it.
    Entity(Box<EntityRecord>),
    /// A mid-term segment (its vector is recomputed from its pages on import).
    Segment(Box<crate::tier::Segment>),
    /// A page of the hierarchy (its vector is recomputed from its text on import).
    Page(Box<crate::tier::StoredPage>),
    /// A stored idempotency result, so a retry after a move still replays.
    Idempotency(Box<IdempotencyRecord>),
}

/// Checks records before an import (or a migration) writes any: no key or string of any record
/// holds U+0000 (the input rule of [`crate::limits::check_no_nul`], which PostgreSQL needs and
/// which records from a SQLite store written before the rule may break). The error names up to
/// ten offending records by kind, id and field.
pub fn check_records(records: &[ExportRecord]) -> crate::Result<()> {
    const NAMED: usize = 10;
    let mut bad: Vec<String> = Vec::new();
    let mut count = 0usize;
    for (i, r) in records.iter().enumerate() {
        let v = serde_json::to_value(r).map_err(|e| crate::Error::internal(e.to_string()))?;
        if let Err(e) =
            crate::limits::check_json_no_nul("record", &v).and_then(|()| check_record_times(r))
        {
            count += 1;
            if bad.len() < NAMED {
                let kind = v["type"].as_str().unwrap_or("record");
                let id = ["id", "memory_id", "message_id", "key"]
                    .iter()
                    .find_map(|k| v[*k].as_str())
                    .map_or_else(|| format!("#{i}"), str::to_string);
                let field = match &e {
                    crate::Error::InvalidInput { field, .. } => field.clone(),
                    _ => String::new(),
                };
                bad.push(format!("{kind} {id} ({field})"));
            }
        }
    }
    if count == 0 {
        return Ok(());
    }
    Err(crate::Error::invalid(
        "records",
        format!(
            "{count} record(s) hold a NUL character (U+0000) or a time outside the years \
             0001-9999, which no add takes: {}{}; nothing was written (edit or erase them in \
             the source first)",
            bad.join(", "),
            if count > bad.len() { ", …" } else { "" }
        ),
    ))
}

/// The times of a memory or message record fall in the years every add takes.
fn check_record_times(r: &ExportRecord) -> crate::Result<()> {
    use crate::limits::check_timestamp;
    match r {
        ExportRecord::Memory(m) => {
            check_timestamp("created_at", m.created_at)?;
            check_timestamp("updated_at", m.updated_at)?;
            for (field, t) in [
                ("expires_at", m.expires_at),
                ("valid_from", m.valid_from),
                ("valid_until", m.valid_until),
            ] {
                if let Some(t) = t {
                    check_timestamp(field, t)?;
                }
            }
        }
        ExportRecord::Message(m) => {
            check_timestamp("created_at", m.created_at)?;
        }
        _ => {}
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRecord {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub event: HistoryEvent,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityRecord {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub entity: Entity,
    pub memories: Vec<MemoryId>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    pub scope_key: String,
    pub key: String,
    pub request_hash: String,
    pub outcome: serde_json::Value,
    pub created_at: Timestamp,
}

/// A writer's turn from [`Store::plan_turn`]; dropping it ends the turn.
pub type PlanTurn = Box<dyn Send>;

/// Embeds a batch of texts for [`Store::rebind_embedder`].
pub type EmbedBatch<'a> = dyn FnMut(&[&str]) -> Result<Vec<Vec<f32>>> + 'a;

pub trait Store: Send + Sync {
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
    /// Writes batches in one transaction (all or nothing), one outcome per batch. A batch whose
    /// idempotency key was already used writes nothing and returns the stored outcome
    /// (`replayed = true`). A message already logged (same id: logged with an async add's job,
    /// or by a failed try of a keyed add) is not logged again; one an erase emptied since
    /// refuses the whole write ([`erased_message`]), so nothing an erase removed is written
    /// back from a queued or retried add's copy of it.
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
    /// Erases a memory of the scope in any state, in one transaction: its text, metadata, vector,
    /// lexical entry and entity links; the texts, metadata and reasons of its history events
    /// (and of other events of the scope that quote one of its texts); the lines quoting it in
    /// other memories' index texts (re-indexed without them); the copies in stored idempotency
    /// results; and the content of the messages it came from — always for a raw memory (its
    /// message is the memory), with `sources` for any other kind. What remains is
    /// its id, scope, kind, times and state (`deleted`), and an `ERASE` history event carrying
    /// `ctx` (actor, reason, request id). When it returns no read of the store can see the
    /// erased text, and an embedded store's own files no longer hold it (a database server may
    /// keep dead row versions until its vacuum reuses them; see ARCHITECTURE.md). A memory
    /// already erased is `invalid_input` naming `id`, and nothing is written. Required: only
    /// the backend knows where its copies live.
    fn erase(
        &self,
        scope: &Scope,
        id: MemoryId,
        sources: bool,
        ctx: &WriteContext,
    ) -> Result<EraseReport>;
    /// Erases a session of the scope or the whole scope in one transaction: every memory it
    /// covers as [`Store::erase`] does (with `sources`), then the content of every message of
    /// it, the text of its pages and the summaries of the segments those pages joined. Ids,
    /// counts, times and `ERASE` events remain. A session the scope has no message in is
    /// `invalid_input` naming `session_id`, and nothing is written. Required: only the backend
    /// knows where its copies live.
    fn erase_log(
        &self,
        scope: &Scope,
        target: EraseTarget<'_>,
        ctx: &WriteContext,
    ) -> Result<EraseLogReport>;
    /// Deletes every active memory in the scope; returns how many.
    fn delete_all(&self, scope: &Scope, mode: DeleteMode, ctx: &WriteContext) -> Result<u64>;
    fn history(&self, scope: &Scope, id: MemoryId, read: &ReadOptions)
        -> Result<Vec<HistoryEvent>>;
    /// Removes everything. The caller must have obtained explicit confirmation.
    fn reset(&self) -> Result<()>;
    /// Nearest memories to `vector` by cosine similarity, best first.
    fn dense_candidates(
        &self,
        query: &CandidateQuery<'_>,
        vector: &[f32],
    ) -> Result<Vec<Candidate>>;
    /// Best lexical matches of any of `terms`, best first, by the backend's own relevance
    /// ranking (BM25, or as close to it as the backend's text search allows); scores are
    /// positive, larger is better.
    fn lexical_candidates(
        &self,
        query: &CandidateQuery<'_>,
        terms: &[String],
    ) -> Result<Vec<Candidate>>;
    /// Exact cosine similarity of the given memories to `vector` (for fusing lexical-only hits).
    /// `keys` come from candidates of `query`; a store that reads them with a database query
    /// keeps `query.scope` in it (no request reads across owners; a key of another owner then
    /// scores nothing).
    fn vector_scores(
        &self,
        query: &CandidateQuery<'_>,
        keys: &[i64],
        vector: &[f32],
    ) -> Result<Vec<Candidate>>;
    /// Loads candidates, re-checking scope and visibility; unknown or hidden keys are skipped.
    fn fetch(&self, query: &CandidateQuery<'_>, keys: &[i64]) -> Result<Vec<(i64, Memory)>>;
    /// Active memories of exactly this scope whose content hash is one of `hashes` (whole-scope
    /// duplicate suppression), as `(hash, id)`.
    fn find_by_hash(&self, scope: &Scope, hashes: &[String]) -> Result<Vec<(String, MemoryId)>>;
    /// Memories linked to an entity of the scope that equals or nearly matches one of `names`
    /// (normalised), best first. A candidate's score in [0, 1] is how informative the names it
    /// matched are: the sum over matched names of `idf = ln(1 + (N − df + 0.5)/(df + 0.5))`
    /// (N memories the scope indexes, df the memories linked to the entity) divided by
    /// `ln(1 + N)`, capped at 1; a name on most memories adds little, a rare one nearly 1.
    ///
    /// At most `query.limit` candidates. `pooled` are keys the other signals already found: a
    /// rare entity's memories are all considered, while an entity linked to more memories than
    /// a backend cares to walk may be scored on the pooled keys only, so the cost follows the
    /// pool, not how common the name is.
    fn entity_candidates(
        &self,
        query: &CandidateQuery<'_>,
        names: &[String],
        pooled: &[i64],
    ) -> Result<Vec<Candidate>>;
    /// The scope that owns a memory (any state). For admin callers that address a memory by id
    /// alone (the server's admin keys); it has no default because only the backend knows where
    /// the owner is kept. `not_found` when there is no such memory.
    fn owner_of(&self, id: MemoryId) -> Result<Scope>;
    /// Every exact scope that owns visible (active, unexpired) memories, with their count, in
    /// scope order. For listings of users, agents and runs (the server's `entities` routes);
    /// no default because counting is the backend's own query.
    fn owners(&self) -> Result<Vec<(Scope, u64)>>;
    /// Messages of the scope with the given ids (a memory's sources), in log order; ids that are
    /// unknown or belong to another scope are skipped.
    fn messages_by_id(&self, scope: &Scope, ids: &[MessageId]) -> Result<Vec<Message>>;
    /// The raw memories (in any state, expired ones included) whose message is one of `ids`,
    /// of (or under) the scope, with their sources. A raw memory *is* its message, so the
    /// message log is shown exactly when its raw memory is: readers of the log hold these to
    /// [`ReadOptions::admits`] (see `mnemo::log`). Required: only the backend has the index.
    fn raw_of_messages(&self, scope: &Scope, ids: &[MessageId]) -> Result<Vec<Memory>>;
    /// Links from or to a memory of the scope, any state.
    fn links(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Link>>;
    /// Adds (or replaces: same ends and kind) links in one transaction, all or none. Each must
    /// pass [`Link::validate`] and join two memories that exist (any state) in one exact scope
    /// that `scope` covers; otherwise invalid input naming the field, and nothing is written.
    /// Required: only the backend can check both ends inside the transaction.
    fn add_links(&self, scope: &Scope, links: &[Link]) -> Result<()>;
    /// Removes the link `from → to` of `kind`; `Ok(false)` when there was none. `from` must be
    /// a memory of the scope (else not found). Required for the same reason as `add_links`.
    fn remove_link(
        &self,
        scope: &Scope,
        from: MemoryId,
        to: MemoryId,
        kind: LinkKind,
    ) -> Result<bool>;
    /// The memories linked (`kinds`, either direction) to any of `ids`, as seen by `query`:
    /// its scope, kinds, filter and visibility apply to the linked memories exactly as to
    /// candidates. Strongest link first per `from`; `query.limit` caps the answer. Required:
    /// the filter is the backend's own translation.
    fn linked(
        &self,
        query: &CandidateQuery<'_>,
        ids: &[MemoryId],
        kinds: &[LinkKind],
    ) -> Result<Vec<LinkedMemory>>;
    /// Records that memories of the scope were read at `at`: `access_count` + 1 and
    /// `last_accessed_at` = `at` for each id (an id listed twice counts twice), in one
    /// transaction; unknown ids and ids of other scopes are skipped. Returns how many rows
    /// changed. Neither `updated_at` nor history changes: reading is not editing. Required:
    /// a default could only rewrite whole records.
    fn touch(&self, scope: &Scope, ids: &[MemoryId], at: Timestamp) -> Result<u64>;
    /// Entities linked to a memory of the scope.
    fn entities_of(&self, scope: &Scope, id: MemoryId) -> Result<Vec<Entity>>;
    /// The last `limit` messages of a scope — of one session when `session` is given — in the
    /// order they were appended (oldest first).
    fn messages(&self, scope: &Scope, session: Option<&str>, limit: usize) -> Result<Vec<Message>>;
    /// The sessions of the log of (or under) the scope that hold a message, as `query` picks
    /// them (ordered by session id). Messages logged without a session are not listed.
    /// Required: a grouping query of the backend's own tables.
    fn sessions(
        &self,
        scope: &Scope,
        query: &crate::SessionQuery<'_>,
    ) -> Result<Vec<crate::SessionInfo>>;
    /// The messages of a session of (or under) the scope in log order (oldest first), only
    /// those after message `after`, at most `limit`; as stored (readers apply
    /// [`visible_messages`]). A session the scope has no message in is `invalid_input` naming
    /// `session_id`; an `after` that is not a message of it, `invalid_input` naming `cursor`.
    /// Required: a positioned read of the backend's log.
    fn session_messages(
        &self,
        scope: &Scope,
        session: &str,
        after: Option<MessageId>,
        limit: usize,
    ) -> Result<Vec<Message>>;
    /// The active memories of (or under) the scope with a source message in the session (raw
    /// turns and what was derived from them), oldest first. A session the scope has no message
    /// in is `invalid_input` naming `session_id`. Required: the backend's provenance index.
    fn session_memories(&self, scope: &Scope, session: &str) -> Result<Vec<MemoryId>>;
    /// Every memory (any state) and message, for `export`.
    fn export(&self, sink: &mut dyn FnMut(ExportRecord) -> Result<()>) -> Result<()>;
    /// Writes exported records back; records whose id exists are skipped. Returns how many were
    /// written. Memories need their vectors.
    fn import(&self, records: Vec<(ExportRecord, Option<Vec<f32>>)>) -> Result<u64>;
    fn integrity(&self) -> Result<IntegrityReport>;
    fn stats(&self) -> Result<StoreStats>;
    /// Pages matching `query` (see [`crate::tier::PageQuery`]), oldest first. Required: pages are
    /// the backend's own table.
    fn pages(&self, query: &crate::tier::PageQuery) -> Result<Vec<crate::tier::StoredPage>>;
    /// Segments owned by a scope `scope` covers (exactly `scope` when `exact`), active ones only
    /// unless `evicted`, oldest first. Required for the same reason as `pages`.
    fn segments(
        &self,
        scope: &Scope,
        exact: bool,
        evicted: bool,
    ) -> Result<Vec<crate::tier::Segment>>;
    /// Counts retrievals: each `(segment, n)` gains `n` visits and `last_visit_at = at` (never
    /// moved back), and its version increases; unknown, evicted or other scopes' segments are
    /// skipped. One transaction; returns how many segments changed. Callers batch visits off
    /// the read path (see `mnemo`'s usage bookkeeping). Required: an update of the backend's
    /// rows.
    fn record_visits(
        &self,
        scope: &Scope,
        visits: &[(crate::memory::SegmentId, u32)],
        at: Timestamp,
    ) -> Result<u64>;
    /// Waits for the turn to plan and write the hierarchy of these exact scopes (their `key()`s)
    /// across every process that shares this store, and holds it until the returned guard is
    /// dropped. Writers of one scope plan from a snapshot and the store refuses a plan that went
    /// stale, so without turns writers in several processes (servers on one database) refuse
    /// each other's plans and may lose every retry. `None`: the store has no such turns (one
    /// process writes it, or it serialises writers itself); the caller's own in-process turns
    /// are then all there is.
    fn plan_turn(&self, scope_keys: &[String]) -> Result<Option<PlanTurn>> {
        let _ = scope_keys;
        Ok(None)
    }
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

/// [`Store::locate`] from `list` alone: walks the listing a page at a time, stopping a page
/// exactly at `skip` to keep its cursor. The trait's default, and the reference the contract
/// tests hold a backend's own answer to.
pub fn locate_by_walking<S: Store + ?Sized>(
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

/// The message log's visibility rule, the one [`ReadOptions::admits`] states for memories: a
/// message whose raw memory `read` does not admit (deleted, expired, superseded, erased — the
/// raw memory *is* the message) is left out, and so is a message whose content an erase
/// removed (no empty line is shown for it); an as-of read also leaves out what was said after
/// its instant. A message with no raw memory — the evidence of
/// facts, notes or procedures an inferred add derived — is kept whatever became of those
/// memories: deleting a fact retracts the conclusion, not what was said (erase the fact with
/// `sources` to remove that too). Every reader of the log (context packs, extraction and
/// enrichment context, profile analysis) filters through this. Order is kept.
pub fn visible_messages<S: Store + ?Sized>(
    store: &S,
    scope: &Scope,
    messages: Vec<Message>,
    read: &ReadOptions,
) -> Result<Vec<Message>> {
    let ids: Vec<MessageId> = messages
        .iter()
        .filter(|m| !m.content.trim().is_empty())
        .map(|m| m.id)
        .collect();
    let hidden = hidden_messages(store, scope, &ids, read)?;
    // An as-of read sees the conversation as it stood then: nothing said after the instant.
    let said = |m: &Message| read.as_of.is_none_or(|t| m.created_at <= t);
    Ok(messages
        .into_iter()
        .filter(|m| !m.content.trim().is_empty() && !hidden.contains(&m.id) && said(m))
        .collect())
}

/// The refusal of a write that would log message `id` again after an erase emptied it (an
/// async add queued before the erase, a keyed add retried after it): the add is not applied,
/// since its memories would carry the erased text back. Not retryable.
pub fn erased_message(id: MessageId) -> crate::Error {
    crate::Error::invalid(
        "messages",
        format!(
            "message {id} was erased after it was logged; the add that logged it is not applied"
        ),
    )
}

/// The last `limit` turns of the scope's log (of `session` when given) other than `own`, oldest
/// first, as stored: the earlier turns an add reads for its context. An add's own turns may be
/// in the log already (logged with its job when it was queued, or by a failed try of a keyed
/// add); they are the add's new messages, never its context.
pub fn earlier_turns<S: Store + ?Sized>(
    store: &S,
    scope: &Scope,
    session: Option<&str>,
    own: &[Message],
    limit: usize,
) -> Result<Vec<Message>> {
    let own: std::collections::HashSet<MessageId> = own.iter().map(|m| m.id).collect();
    let mut log = store.messages(scope, session, limit.saturating_add(own.len()))?;
    log.retain(|m| !own.contains(&m.id));
    let extra = log.len().saturating_sub(limit);
    log.drain(..extra);
    Ok(log)
}

/// The messages among `ids` that the log's visibility rule hides (see [`visible_messages`]):
/// those with a raw memory and none that `read` admits.
pub fn hidden_messages<S: Store + ?Sized>(
    store: &S,
    scope: &Scope,
    ids: &[MessageId],
    read: &ReadOptions,
) -> Result<std::collections::HashSet<MessageId>> {
    let wanted: std::collections::HashSet<&MessageId> = ids.iter().collect();
    let mut admitted: std::collections::HashMap<MessageId, bool> = Default::default();
    for m in store.raw_of_messages(scope, ids)? {
        let ok = read.admits(&m.validity());
        for s in &m.sources {
            *admitted.entry(*s).or_insert(false) |= ok;
        }
    }
    Ok(admitted
        .into_iter()
        .filter(|(id, ok)| !ok && wanted.contains(id))
        .map(|(id, _)| id)
        .collect())
}
