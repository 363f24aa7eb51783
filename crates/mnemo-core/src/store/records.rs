//! Records: the [`Records`] capability (adds in batches, reads, listings, updates, deletes and
//! history) with its request and response types.

use super::*;

mod list;
pub use list::*;

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
    /// The hierarchy's changes (pages, moves, segments, evictions), all of the batch's scope
    /// exactly; see [`crate::tier`].
    pub tiers: crate::tier::TierWrite,
    pub idempotency: Option<Idempotency>,
    pub context: WritePlan,
    /// Relations the batch's memories state, written as edges after them (see
    /// [`write_relations`]).
    pub relations: Vec<NewRelation>,
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
        self.tiers.validate(&self.scope, dim)
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
            context: WritePlan::default(),
            relations: Vec::new(),
        }
    }
}

impl crate::tier::TierWrite {
    /// The hierarchy part of [`WriteBatch::validate`] for a batch of `scope`: every page and
    /// segment carries that scope, every new page names a message, vectors have the store's
    /// dimension `dim` (when it has one) and finite values.
    pub fn validate(&self, scope: &Scope, dim: Option<usize>) -> Result<()> {
        use crate::Error;
        for p in &self.pages {
            if p.scope != *scope {
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
        for w in &self.segments {
            if w.segment.scope != *scope {
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
    /// The edges of the entity graph this add wrote, supported or closed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<RelationWrite>,
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

/// The hierarchy changes of a [`Records::write_planned`], made when the store asks for them.
pub type TierPlan<'a> = Box<dyn FnOnce() -> Result<Vec<crate::tier::TierWrite>> + 'a>;

/// [`Records::write_planned`]'s batches come without hierarchy changes: their plan brings them.
pub fn check_unplanned(batches: &[WriteBatch]) -> Result<()> {
    if batches.iter().any(|b| !b.tiers.is_empty()) {
        return Err(crate::Error::invalid(
            "tiers",
            "a planned write takes its hierarchy changes from its plan, not from its batches",
        ));
    }
    Ok(())
}

/// [`Records::write_planned`] the default way: the plan first, then one [`Records::write`].
pub fn plan_then_write<S: Records + ?Sized>(
    store: &S,
    mut batches: Vec<WriteBatch>,
    plan: TierPlan<'_>,
) -> Result<Vec<AddOutcome>> {
    check_unplanned(&batches)?;
    let tiers = planned_tiers(plan, batches.len())?;
    for (b, t) in batches.iter_mut().zip(tiers) {
        b.tiers = t;
    }
    store.write(batches)
}

/// Runs `plan` and checks it answers one tier write per batch (`batches` of them).
pub fn planned_tiers(plan: TierPlan<'_>, batches: usize) -> Result<Vec<crate::tier::TierWrite>> {
    let tiers = plan()?;
    if tiers.len() != batches {
        return Err(crate::Error::internal(format!(
            "the plan answered {} tier writes for {batches} batches",
            tiers.len()
        )));
    }
    Ok(tiers)
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
    /// [`Records::write`] of batches whose hierarchy changes come from `plan` (one
    /// [`TierWrite`](crate::tier::TierWrite) per batch, in order; the batches' own `tiers` must
    /// be empty). A store may call `plan` inside its transaction once the rest of the batches
    /// is written, so that the caller plans on another thread meanwhile; the default calls it
    /// first and then writes. Either way it is called once, an error from it fails the whole
    /// write, and a batch replayed from its idempotency key writes nothing of its plan.
    fn write_planned(
        &self,
        batches: Vec<WriteBatch>,
        plan: TierPlan<'_>,
    ) -> Result<Vec<AddOutcome>> {
        plan_then_write(self, batches, plan)
    }
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
        ctx: &WritePlan,
    ) -> Result<Memory> {
        let updates = Updates::new(vec![(scope.clone(), id, patch)])?;
        self.update_many(&updates, ctx)?
            .pop()
            .ok_or_else(|| crate::Error::internal("one update, one memory"))
    }
    /// One delete: `delete_many` with one item, which already is one transaction.
    fn delete(&self, scope: &Scope, id: MemoryId, mode: DeleteMode, ctx: &WritePlan) -> Result<()> {
        let deletes = Deletes {
            items: vec![(scope.clone(), id)],
            mode,
        };
        self.delete_many(&deletes, ctx).map(drop)
    }
    /// Several updates in one transaction, in order: all are applied or, on the first failure
    /// (unknown or inactive id, a scope that does not own it), none. The patches were checked
    /// when `updates` was made. Required: a default built on `update` could not undo the
    /// updates before a failure.
    fn update_many(&self, updates: &Updates, ctx: &WritePlan) -> Result<Vec<Memory>>;
    /// Several deletes in one transaction, all or none; returns how many. Required for the same
    /// reason as `update_many`.
    fn delete_many(&self, deletes: &Deletes, ctx: &WritePlan) -> Result<u64>;
    /// Deletes every active memory in the scope; returns how many.
    fn delete_all(&self, scope: &Scope, mode: DeleteMode, ctx: &WritePlan) -> Result<u64>;
    /// The history of one memory, as `query` says. A memory no event of which the scope may
    /// see is not found ([`HistoryQuery::found`]).
    fn history(&self, query: &HistoryQuery<'_>) -> Result<Vec<HistoryEvent>>;
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

/// What [`Records::delete_all`] deletes in `scope`, as the records of a candidate query: every
/// active memory of (or under) the scope, expired or not, of any kind (it has no filter, and no
/// limit).
pub fn delete_all_query(scope: &Scope) -> CandidateQuery<'_> {
    CandidateQuery {
        scope,
        kinds: None,
        filter: None,
        read: ReadOptions {
            include_expired: true,
            ..ReadOptions::default()
        },
        limit: usize::MAX,
    }
}

/// The updates of one [`Records::update_many`], in order, each patch checked when they are
/// made ([`MemoryPatch::validate`]): a backend never reads anything for a batch that cannot
/// apply.
#[derive(Debug, Clone)]
pub struct Updates {
    items: Vec<(Scope, MemoryId, MemoryPatch)>,
}

impl Updates {
    /// The updates `items` (the memory of each scope and id, and its patch), or the error of
    /// the first bad patch.
    pub fn new(items: Vec<(Scope, MemoryId, MemoryPatch)>) -> Result<Self> {
        for (_, _, patch) in &items {
            patch.validate()?;
        }
        Ok(Self { items })
    }

    pub fn items(&self) -> &[(Scope, MemoryId, MemoryPatch)] {
        &self.items
    }

    /// The ids the updates change, in order.
    pub fn ids(&self) -> impl Iterator<Item = MemoryId> + '_ {
        self.items.iter().map(|(_, id, _)| *id)
    }
}

/// The deletes of one [`Records::delete_many`]: the memory of each scope and id, all deleted
/// the same way.
#[derive(Debug, Clone)]
pub struct Deletes {
    pub items: Vec<(Scope, MemoryId)>,
    pub mode: DeleteMode,
}

impl Deletes {
    /// The ids the deletes remove, in order.
    pub fn ids(&self) -> impl Iterator<Item = MemoryId> + '_ {
        self.items.iter().map(|(_, id)| *id)
    }
}

/// Which history [`Records::history`] reads: the events of memory `id` that `scope` may see,
/// with `read` judging the memory while it still exists (see [`HistoryQuery::memory_read`]).
#[derive(Debug, Clone, Copy)]
pub struct HistoryQuery<'a> {
    pub scope: &'a Scope,
    pub id: MemoryId,
    pub read: ReadOptions,
}

impl<'a> HistoryQuery<'a> {
    /// The history of memory `id` as `scope` sees it with `read`.
    pub fn new(scope: &'a Scope, id: MemoryId, read: ReadOptions) -> Self {
        Self { scope, id, read }
    }

    /// How a memory that still exists must be visible for its history to be read: as `read`
    /// says for expiry and as-of instants, whatever its state (the history of a deleted or
    /// superseded memory stays readable). A hard-deleted memory's history is judged by the
    /// scope its events record.
    pub fn memory_read(&self) -> ReadOptions {
        ReadOptions {
            include_inactive: true,
            ..self.read
        }
    }

    /// The answer from the events a backend found: a memory with no event the scope may see is
    /// not found.
    pub fn found(&self, events: Vec<HistoryEvent>) -> Result<Vec<HistoryEvent>> {
        if events.is_empty() {
            return Err(crate::Error::not_found("memory", self.id));
        }
        Ok(events)
    }
}

/// A patch applied to the memory it changes: the values an update writes.
#[derive(Debug, Clone)]
pub struct Patched<'a> {
    pub text: String,
    pub metadata: Metadata,
    pub expires_at: Option<Timestamp>,
    /// Whether the lexical entry and vector change: a new text or a new index text.
    pub text_changed: bool,
    /// The new index text, when the patch sets one.
    pub index_text: Option<&'a str>,
    patch: &'a MemoryPatch,
}

impl MemoryPatch {
    /// The patch applied to `old`: a field the patch leaves `None` keeps `old`'s value.
    pub fn applied_to(&self, old: &Memory) -> Patched<'_> {
        let text = self.text.clone().unwrap_or_else(|| old.text.clone());
        let text_changed = text != old.text || self.index_text.is_some();
        Patched {
            metadata: self
                .metadata
                .clone()
                .unwrap_or_else(|| old.metadata.clone()),
            expires_at: self.expires_at.unwrap_or(old.expires_at),
            text,
            text_changed,
            index_text: self.index_text.as_deref(),
            patch: self,
        }
    }
}

impl Patched<'_> {
    /// The new vector when the text changed (checked against the store's dimension, asked of
    /// `dim` only then); `None` when the old one stays.
    pub fn vector(&self, dim: impl FnOnce() -> Result<usize>) -> Result<Option<&[f32]>> {
        if !self.text_changed {
            return Ok(None);
        }
        let dim = dim()?;
        let v = self.patch.vector.as_deref().ok_or_else(|| {
            crate::Error::invalid("vector", "a changed text needs its new vector")
        })?;
        check_vector("vector", v, dim)?;
        Ok(Some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::memory;

    fn listing(limit: usize) -> ListQuery {
        ListQuery {
            scope: Scope::user("ann").unwrap(),
            kinds: None,
            filter: None,
            limit,
            cursor: None,
            read: ReadOptions::default(),
        }
    }

    #[test]
    fn a_listing_takes_one_to_a_thousand_records() {
        assert!(listing(1).validate().is_ok());
        assert!(listing(MAX_LIST_LIMIT).validate().is_ok());
        for bad in [0, MAX_LIST_LIMIT + 1] {
            let e = listing(bad).validate().unwrap_err();
            assert_eq!(
                e.to_string(),
                listing(0).validate().unwrap_err().to_string()
            );
            assert!(e.to_string().contains("must be between 1 and 1000"), "{e}");
        }
    }

    #[test]
    fn a_page_keeps_its_limit_and_a_cursor_when_more_follow() {
        let rows = |n: i64| -> Vec<(i64, Memory)> {
            (1..=n)
                .map(|k| (k, memory(MemoryKind::Fact, "x")))
                .collect()
        };
        let page = listing(2).page(rows(3), |k| format!("after {k}"));
        assert_eq!(page.results.len(), 2);
        assert_eq!(page.next_cursor.as_deref(), Some("after 2"));
        let last = listing(2).page(rows(2), |k| format!("after {k}"));
        assert_eq!((last.results.len(), last.next_cursor), (2, None));
    }

    #[test]
    fn a_position_has_a_cursor_only_inside_the_listing() {
        assert_eq!(ListPosition::cursor_offset(0, 5), None);
        assert_eq!(ListPosition::cursor_offset(5, 5), None);
        assert_eq!(ListPosition::cursor_offset(1, 5), Some(0));
        assert_eq!(ListPosition::cursor_offset(4, 5), Some(3));
    }

    #[test]
    fn a_patch_keeps_what_it_leaves_out_and_a_new_text_needs_its_vector() {
        let old = memory(MemoryKind::Fact, "Ann lives in Oslo");
        let none = MemoryPatch::default();
        let keep = none.applied_to(&old);
        assert_eq!(
            (keep.text.as_str(), keep.text_changed),
            ("Ann lives in Oslo", false)
        );
        assert_eq!(keep.vector(|| unreachable!()).unwrap(), None);
        let patch = MemoryPatch {
            text: Some("Ann lives in Bergen".into()),
            ..MemoryPatch::default()
        };
        let changed = patch.applied_to(&old);
        assert!(changed.text_changed);
        let e = changed.vector(|| Ok(2)).unwrap_err();
        assert!(
            e.to_string()
                .contains("a changed text needs its new vector"),
            "{e}"
        );
        let patch = MemoryPatch {
            index_text: Some("context".into()),
            vector: Some(vec![0.5, 0.5]),
            ..MemoryPatch::default()
        };
        let reindexed = patch.applied_to(&old);
        assert!(reindexed.text_changed);
        assert_eq!(
            reindexed.vector(|| Ok(2)).unwrap(),
            Some(&[0.5f32, 0.5][..])
        );
        assert!(reindexed.vector(|| Ok(3)).is_err());
    }

    #[test]
    fn updates_and_scopes_are_checked_before_anything_is_read() {
        let s = Scope::user("ann").unwrap();
        let blank = MemoryPatch {
            text: Some(" ".into()),
            ..MemoryPatch::default()
        };
        assert!(Updates::new(vec![(s.clone(), MemoryId::new(), blank)]).is_err());
        assert!(Updates::new(vec![(s.clone(), MemoryId::new(), MemoryPatch::default())]).is_ok());
        let q = HistoryQuery::new(&s, MemoryId::new(), ReadOptions::default());
        let e = q.found(Vec::new()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::NotFound);
        assert!(q.memory_read().include_inactive && !q.memory_read().include_expired);
        let all = delete_all_query(&s);
        assert!(all.read.include_expired && !all.read.include_inactive && all.read.as_of.is_none());
        assert!(all.kinds.is_none() && all.filter.is_none());
    }
}
