//! Record writes: the [`RecordWrites`] capability (an add's batches and their replay, updates,
//! deletes, access counts) with its request types; what one add writes is in `add.rs`.

use super::*;

mod add;
pub use add::*;

/// Writing the records: an add's batches (and the replay of a keyed one), updates, deletes and
/// access counts. Each method is one transaction; the reads are [`Records`].
pub trait RecordWrites: Send + Sync {
    /// Writes batches in one transaction (all or nothing), one outcome per batch. A batch whose
    /// idempotency key was already used writes nothing and returns the stored outcome
    /// (`replayed = true`). A message already logged (same id: logged with an async add's job,
    /// or by a failed try of a keyed add) is not logged again; one an erase emptied since
    /// refuses the whole write ([`erased_message`](crate::store::erased_message)), so nothing
    /// an erase removed is written back from a queued or retried add's copy of it.
    fn write(&self, batches: Vec<WriteBatch>) -> Result<Vec<AddOutcome>>;
    /// [`RecordWrites::write`] of batches whose hierarchy changes come from `plan` (one
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
    /// The stored outcome of an idempotency key, if any (lets callers skip model work). It
    /// reads what [`RecordWrites::write`] stored under the key, so it sits with the write it
    /// lets a retry skip.
    fn replay(&self, scope: &Scope, idem: &Idempotency) -> Result<Option<AddOutcome>>;
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
    /// Records that memories of the scope were read at `at`: `access_count` + 1 and
    /// `last_accessed_at` = `at` for each id (an id listed twice counts twice), in one
    /// transaction; unknown ids and ids of other scopes are skipped. Returns how many rows
    /// changed. Neither `updated_at` nor history changes: reading is not editing. Required:
    /// a default could only rewrite whole records.
    fn touch(&self, scope: &Scope, ids: &[MemoryId], at: Timestamp) -> Result<u64>;
}

/// The hierarchy changes of a [`RecordWrites::write_planned`], made when the store asks for them.
pub type TierPlan<'a> = Box<dyn FnOnce() -> Result<Vec<crate::tier::TierWrite>> + 'a>;

/// [`RecordWrites::write_planned`]'s batches come without hierarchy changes: their plan brings them.
pub fn check_unplanned(batches: &[WriteBatch]) -> Result<()> {
    if batches.iter().any(|b| !b.tiers.is_empty()) {
        return Err(crate::Error::invalid(
            "tiers",
            "a planned write takes its hierarchy changes from its plan, not from its batches",
        ));
    }
    Ok(())
}

/// [`RecordWrites::write_planned`] the default way: the plan first, then one [`RecordWrites::write`].
pub fn plan_then_write<S: RecordWrites + ?Sized>(
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

/// What [`RecordWrites::delete_all`] deletes in `scope`, as the records of a candidate query: every
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

/// The updates of one [`RecordWrites::update_many`], in order, each patch checked when they are
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

/// The deletes of one [`RecordWrites::delete_many`]: the memory of each scope and id, all deleted
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::memory;

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
