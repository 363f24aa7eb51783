//! Record writes: the [`RecordWrites`] capability (an add's batches and their replay, updates,
//! deletes, access counts) and the plan of a planned write; what one add writes is in `add.rs`,
//! what updates and deletes carry in `change.rs`.

use super::*;

mod add;
mod change;
pub use add::*;
pub use change::*;

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

/// The hierarchy changes of a [`RecordWrites::write_planned`], made when the store asks for
/// them.
pub type TierPlan<'a> = Box<dyn FnOnce() -> Result<Vec<crate::tier::TierWrite>> + 'a>;

/// [`RecordWrites::write_planned`]'s batches come without hierarchy changes: their plan brings
/// them.
pub fn check_unplanned(batches: &[WriteBatch]) -> Result<()> {
    if batches.iter().any(|b| !b.tiers.is_empty()) {
        return Err(crate::Error::invalid(
            "tiers",
            "a planned write takes its hierarchy changes from its plan, not from its batches",
        ));
    }
    Ok(())
}

/// [`RecordWrites::write_planned`] the default way: the plan first, then one
/// [`RecordWrites::write`].
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
