//! The write order of an add's batch, stated once: [`write_batch`] runs every step of a
//! [`WriteBatch`] in its order (see [`WriteStep::BATCH`]) and makes every decision a step
//! needs — what is replayed, what a retirement records, when a changed memory is a conflict,
//! what a note's evolution re-indexes, what the outcome says. A backend supplies the storage
//! through [`BatchWriter`] (with [`TierWriter`] for the hierarchy, [`RelationWriter`] for
//! the entity graph and [`IdempotencyWriter`] for keyed retries), inside the one transaction
//! it runs the batch in.

use super::*;
use crate::entity::EntityMention;
use crate::memory::NoteFields;

/// One history event as a write records it; fields left `None` are stored empty.
#[derive(Debug, Clone, Copy)]
pub struct HistoryEntry<'a> {
    pub memory: MemoryId,
    /// The exact scope that owns the memory (its history rows carry it).
    pub owner: &'a Scope,
    pub event: HistoryKind,
    pub old_text: Option<&'a str>,
    pub new_text: Option<&'a str>,
    pub old_metadata: Option<&'a Metadata>,
    pub new_metadata: Option<&'a Metadata>,
    pub old_note: Option<&'a NoteFields>,
    pub new_note: Option<&'a NoteFields>,
    /// Who asked, why, and the request's id.
    pub ctx: &'a WritePlan,
    /// When, in milliseconds since the epoch.
    pub at: i64,
}

impl<'a> HistoryEntry<'a> {
    /// An event with no old or new fields.
    pub fn new(
        memory: MemoryId,
        owner: &'a Scope,
        event: HistoryKind,
        ctx: &'a WritePlan,
        at: i64,
    ) -> Self {
        Self {
            memory,
            owner,
            event,
            old_text: None,
            new_text: None,
            old_metadata: None,
            new_metadata: None,
            old_note: None,
            new_note: None,
            ctx,
            at,
        }
    }
}

/// What a backend does at each step of a batch, inside the batch's transaction. Every method
/// reads or writes rows and decides nothing: [`write_batch`] calls them in the write order and
/// turns their answers into outcomes and errors.
pub trait BatchWriter: TierWriter + RelationWriter + IdempotencyWriter {
    /// A stored memory's handle in this backend (a row number, or nothing), from
    /// [`BatchWriter::locate`] and [`BatchWriter::insert_memory`] to the writes that follow.
    type Key;
    /// The dimension of the store's vectors; a conflict when no embedding model is bound.
    fn dimension(&mut self) -> Result<usize>;
    /// Locks the existing memories the batch changes (`ids`: retired and evolved) before any
    /// is checked, in an order every writer keeps. Defaults to nothing: a backend whose
    /// transactions already run one at a time needs no row locks.
    fn lock_existing(&mut self, ids: &[MemoryId]) -> Result<()> {
        let _ = ids;
        Ok(())
    }
    /// Appends a message to the log (a message already there is kept).
    fn insert_message(&mut self, message: &Message) -> Result<()>;
    /// The memory `id` that `scope` may change — owned by a scope it covers, active and
    /// unexpired — locked until the transaction ends; not found otherwise.
    fn locate(&mut self, scope: &Scope, id: MemoryId) -> Result<(Self::Key, Memory)>;
    /// Retires a located memory: `change.state`, `updated_at = at`, `valid_until` unless set;
    /// a deleted memory leaves the indexes, a superseded one stays in them.
    fn retire(
        &mut self,
        key: &Self::Key,
        old: &Memory,
        change: &Supersession,
        at: i64,
    ) -> Result<()>;
    /// Inserts a new active memory with its vector, lexical entry and sources.
    fn insert_memory(&mut self, memory: &NewMemory) -> Result<Self::Key>;
    /// Links a new memory to its scope's entity for `mention`, creating the entity when none
    /// matches.
    fn link_entity(
        &mut self,
        memory: &NewMemory,
        key: &Self::Key,
        mention: &EntityMention,
        at: i64,
    ) -> Result<()>;
    /// The exact scope owning memory `id` (any state) and whether it is an erased tombstone;
    /// `None` when there is no such memory. The memory cannot be hard-deleted before the
    /// transaction ends.
    fn owner(&mut self, id: MemoryId) -> Result<Option<(Scope, bool)>>;
    /// Writes a link owned by `owner`, replacing one with the same ends and kind.
    fn write_link(&mut self, owner: &Scope, link: &Link) -> Result<()>;
    /// A located memory's lexical index text, if it has one apart from its text.
    fn index_text(&mut self, key: &Self::Key, memory: &Memory) -> Result<Option<String>>;
    /// Evolves a located note: its fields become `note`, its index text `index_text` (lexical
    /// entry too), its vector `vector`, `updated_at = at`.
    fn evolve(
        &mut self,
        key: &Self::Key,
        memory: &Memory,
        note: &NoteFields,
        index_text: &str,
        vector: &[f32],
        at: i64,
    ) -> Result<()>;
}

impl WriteBatch {
    /// Whether the batch writes vectors, so that the store's dimension must be known.
    pub fn needs_vectors(&self) -> bool {
        !self.memories.is_empty()
            || !self.evolutions.is_empty()
            || !self.tiers.pages.is_empty()
            || !self.tiers.segments.is_empty()
    }
}

impl NewMemory {
    /// The context of the memory's `ADD` event: the batch's reason unless the memory states
    /// its own; who asked, else the memory's speaker, and the speaker's role.
    pub fn add_context(&self, batch: &WritePlan) -> WritePlan {
        WritePlan {
            reason: self.reason.clone().or_else(|| batch.reason.clone()),
            actor: batch.actor.clone().or_else(|| self.actor.clone()),
            role: batch.role.or(self.role),
            ..batch.clone()
        }
    }
}

impl Supersession {
    /// The history event that records this retirement; a change must retire the memory.
    pub fn event(&self) -> Result<HistoryKind> {
        match self.state {
            MemoryState::Superseded => Ok(HistoryKind::Supersede),
            MemoryState::Deleted => Ok(HistoryKind::Delete),
            MemoryState::Active => Err(crate::Error::invalid(
                "changes",
                "a change must retire the memory",
            )),
        }
    }
}

/// The time a change to `old` is recorded at, in milliseconds: now, never before its last
/// change.
pub fn change_time(old: &Memory) -> i64 {
    chrono::Utc::now()
        .timestamp_millis()
        .max(old.updated_at.timestamp_millis())
}

/// A memory another reader saw active (a retirement's, an evolution's) that `locate` no longer
/// finds has changed since: a conflict naming it.
fn still_active(e: crate::Error, what: &str, id: MemoryId) -> crate::Error {
    match e {
        crate::Error::NotFound { .. } => crate::Error::Conflict {
            reason: format!(
                "{what} {id} is no longer active in this scope; it changed since it was read"
            ),
        },
        e => e,
    }
}

/// Writes one batch through `tx` in the write order (see the module docs) and returns its
/// outcome; a batch whose idempotency key was used before writes nothing and returns the
/// stored outcome. Any error leaves the batch half-written: the caller's transaction must roll
/// back.
pub fn write_batch<W: BatchWriter + ?Sized>(tx: &mut W, batch: &WriteBatch) -> Result<AddOutcome> {
    write_steps(tx, batch, true).map(|(o, _)| o)
}

/// [`write_batch`] without the hierarchy's steps, for a store that writes them last in the same
/// transaction ([`write_late_tiers`], see [`RecordWrites::write_planned`]); the outcome and whether
/// the batch was written (`false`: replayed from its idempotency key, so its tiers must not be).
pub fn write_batch_records<W: BatchWriter + ?Sized>(
    tx: &mut W,
    batch: &WriteBatch,
) -> Result<(AddOutcome, bool)> {
    write_steps(tx, batch, false)
}

/// The hierarchy changes of a written batch of `scope`, after [`write_batch_records`] wrote the
/// rest of it (and of the transaction's other batches): checked as [`WriteBatch::validate`]
/// checks them, then written by [`write_tiers`].
pub fn write_late_tiers<W: BatchWriter + ?Sized>(
    tx: &mut W,
    scope: &Scope,
    tiers: &crate::tier::TierWrite,
) -> Result<()> {
    let dim = match tiers.pages.is_empty() && tiers.segments.is_empty() {
        true => None,
        false => Some(tx.dimension()?),
    };
    tiers.validate(scope, dim)?;
    write_tiers(tx, scope, tiers)
}

fn write_steps<W: BatchWriter + ?Sized>(
    tx: &mut W,
    batch: &WriteBatch,
    with_tiers: bool,
) -> Result<(AddOutcome, bool)> {
    if let Some(idem) = &batch.idempotency {
        if let Some(o) = tx.stored_outcome(&batch.scope, idem)? {
            return Ok((o, false));
        }
    }
    let dim = match batch.needs_vectors() {
        true => Some(tx.dimension()?),
        false => None,
    };
    batch.validate(dim)?;
    check_new_relations(batch)?;
    let existing: Vec<MemoryId> = (batch.changes.iter().map(|c| c.old))
        .chain(batch.evolutions.iter().map(|e| e.id))
        .collect();
    tx.lock_existing(&existing)?;
    for m in &batch.messages {
        tx.step(WriteStep::Message)?;
        tx.insert_message(m)?;
    }
    // Retire first: a memory that replaces another must not be judged a duplicate of it.
    let mut retired: Vec<(Memory, &Supersession)> = Vec::with_capacity(batch.changes.len());
    for c in &batch.changes {
        tx.step(WriteStep::Change)?;
        retired.push((retire(tx, batch, c)?, c));
    }
    let mut results = Vec::with_capacity(batch.memories.len() + batch.changes.len());
    for m in &batch.memories {
        add_memory(tx, batch, m)?;
        results.push(AddResult::added(m, &retired));
    }
    let relations = write_relations(tx, batch)?;
    let now = chrono::Utc::now();
    let now_ms = now.timestamp_millis();
    // The instant at millisecond precision, as the stores keep it.
    let link_at = chrono::DateTime::from_timestamp_millis(now_ms).unwrap_or(now);
    for (old, c) in &retired {
        match c.link(link_at) {
            Some(link) => {
                tx.step(WriteStep::Link)?;
                tx.write_link(&batch.scope, &link)?;
            }
            None => results.push(AddResult::deleted(old, c)),
        }
    }
    let pending: std::collections::HashMap<MemoryId, Scope> = batch
        .memories
        .iter()
        .map(|m| (m.id, m.scope.clone()))
        .collect();
    for l in &batch.links {
        let owner = check_link(&batch.scope, l, &pending, |id| tx.owner(id))?;
        tx.step(WriteStep::Link)?;
        tx.write_link(&owner, l)?;
    }
    for e in &batch.evolutions {
        tx.step(WriteStep::Evolve)?;
        evolve(tx, batch, e)?;
    }
    if with_tiers {
        write_tiers(tx, &batch.scope, &batch.tiers)?;
    }
    let outcome = AddOutcome {
        results,
        replayed: false,
        warnings: Vec::new(),
        usage: Vec::new(),
        relations,
    };
    if let Some(idem) = &batch.idempotency {
        tx.step(WriteStep::Idempotency)?;
        tx.store_outcome(&IdempotencyRecord {
            scope_key: batch.scope.key(),
            key: idem.key.clone(),
            request_hash: idem.request_hash.clone(),
            outcome: serde_json::to_value(&outcome).map_err(crate::Error::internal)?,
            created_at: link_at,
        })?;
    }
    Ok((outcome, true))
}

/// Retires one active memory of the batch's scope (superseded or soft-deleted), keeping its
/// text, with the event that records it.
fn retire<W: BatchWriter + ?Sized>(
    tx: &mut W,
    batch: &WriteBatch,
    c: &Supersession,
) -> Result<Memory> {
    let (key, old) = tx
        .locate(&batch.scope, c.old)
        .map_err(|e| still_active(e, "memory", c.old))?;
    let event = c.event()?;
    let now = change_time(&old);
    tx.retire(&key, &old, c, now)?;
    tx.step(WriteStep::History)?;
    let successor =
        c.by.and_then(|by| batch.memories.iter().find(|m| m.id == by))
            .map(|m| m.text.as_str());
    let ctx = WritePlan {
        reason: c.reason.clone().or_else(|| batch.context.reason.clone()),
        ..batch.context.clone()
    };
    let owner = old.scope()?;
    tx.history(&HistoryEntry {
        old_text: Some(&old.text),
        old_metadata: Some(&old.metadata),
        new_text: successor,
        ..HistoryEntry::new(c.old, &owner, event, &ctx, now)
    })?;
    Ok(old)
}

/// Inserts one new memory of the batch with its `ADD` event and entity links.
fn add_memory<W: BatchWriter + ?Sized>(
    tx: &mut W,
    batch: &WriteBatch,
    m: &NewMemory,
) -> Result<()> {
    tx.step(WriteStep::Memory)?;
    let key = tx.insert_memory(m)?;
    tx.step(WriteStep::History)?;
    let at = m.created_at.timestamp_millis();
    let ctx = m.add_context(&batch.context);
    tx.history(&HistoryEntry {
        new_text: Some(&m.text),
        new_metadata: Some(&m.metadata),
        ..HistoryEntry::new(m.id, &m.scope, HistoryKind::Add, &ctx, at)
    })?;
    for e in m.entities.iter().chain(&relation_mentions(batch, m.id)) {
        tx.step(WriteStep::Entity)?;
        tx.link_entity(m, &key, e, at)?;
    }
    Ok(())
}

/// Re-describes an active note of exactly the batch's scope: new fields, index text and
/// vector, and an `EVOLVE` event with the old and new fields. Its text is untouched.
fn evolve<W: BatchWriter + ?Sized>(tx: &mut W, batch: &WriteBatch, e: &Evolution) -> Result<()> {
    let note = e.note.validated()?;
    let (key, old) = tx
        .locate(&batch.scope, e.id)
        .map_err(|err| still_active(err, "note", e.id))?;
    if old.kind != MemoryKind::Note || old.scope()? != batch.scope {
        return Err(crate::Error::invalid(
            "evolutions",
            format!("memory {} is not a note of this scope", e.id),
        ));
    }
    let now = change_time(&old);
    let old_entry = tx.index_text(&key, &old)?;
    let old_enriched = crate::note::enriched_text(&old.text, &old.note.clone().unwrap_or_default());
    let entry = crate::note::reindexed(old_entry.as_deref(), &old_enriched, &e.index_text);
    tx.evolve(&key, &old, &note, &entry, &e.vector, now)?;
    let ctx = WritePlan {
        reason: e.reason.clone().or_else(|| batch.context.reason.clone()),
        ..batch.context.clone()
    };
    tx.history(&HistoryEntry {
        old_text: Some(&old.text),
        new_text: Some(&old.text),
        old_note: old.note.as_ref(),
        new_note: Some(&note),
        ..HistoryEntry::new(e.id, &batch.scope, HistoryKind::Evolve, &ctx, now)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{PageId, SegmentId};
    use crate::store::fixtures::memory;
    use crate::tier::{NewPage, PageMove, Segment};

    /// A writer that records what it is asked, holds memories in a list and fails at a step.
    #[derive(Default)]
    struct Fake {
        calls: Vec<String>,
        stored: Vec<Memory>,
        fail_at: Option<WriteStep>,
        replay: Option<AddOutcome>,
    }

    impl TierWriter for Fake {
        fn step(&self, step: WriteStep) -> Result<()> {
            match self.fail_at == Some(step) {
                true => Err(step.injected_failure()),
                false => Ok(()),
            }
        }
        fn history(&mut self, e: &HistoryEntry<'_>) -> Result<()> {
            self.calls.push(format!("history {}", e.event.as_str()));
            Ok(())
        }
        fn insert_page(&mut self, _: &Scope, _: &NewPage) -> Result<()> {
            self.calls.push("page".into());
            Ok(())
        }
        fn insert_segment(&mut self, _: &Scope, _: &Segment) -> Result<bool> {
            Ok(false)
        }
        fn rewrite_segment(&mut self, _: &Scope, _: &Segment, _: u64) -> Result<bool> {
            Ok(true)
        }
        fn segment_is_active(&mut self, _: &Scope, _: SegmentId) -> Result<bool> {
            Ok(true)
        }
        fn page_exists(&mut self, _: &Scope, _: PageId) -> Result<bool> {
            Ok(true)
        }
        fn move_page(&mut self, _: &Scope, _: &PageMove) -> Result<bool> {
            Ok(false)
        }
        fn active_segment(&mut self, _: &Scope, _: SegmentId) -> Result<Option<(u64, String)>> {
            Ok(Some((3, "summary".into())))
        }
        fn evict_segment(&mut self, _: &Scope, _: SegmentId, _: i64) -> Result<()> {
            self.calls.push("evict".into());
            Ok(())
        }
        fn mark_analysed(&mut self, _: &Scope, _: PageId) -> Result<bool> {
            Ok(false)
        }
    }

    impl RelationWriter for Fake {
        fn resolve_entity(&mut self, _: &Scope, _: &EntityMention, _: i64) -> Result<EntityId> {
            Ok(EntityId::new())
        }
        fn rival_edges(&mut self, _: &Scope, _: EntityId, _: &str) -> Result<Vec<RivalEdge>> {
            Ok(Vec::new())
        }
        fn insert_relation(&mut self, _: &Scope, e: &Relation) -> Result<()> {
            self.calls.push(format!("relation {}", e.predicate));
            Ok(())
        }
        fn support_relation(&mut self, _: RelationId, _: &RelationSource) -> Result<()> {
            Ok(())
        }
        fn close_relation(
            &mut self,
            _: RelationId,
            _: Timestamp,
            _: Timestamp,
            _: RelationId,
        ) -> Result<()> {
            Ok(())
        }
    }

    impl IdempotencyWriter for Fake {
        fn stored_outcome(&mut self, _: &Scope, _: &Idempotency) -> Result<Option<AddOutcome>> {
            Ok(self.replay.clone())
        }
        fn store_outcome(&mut self, _: &IdempotencyRecord) -> Result<()> {
            self.calls.push("idempotency".into());
            Ok(())
        }
    }

    impl BatchWriter for Fake {
        type Key = ();
        fn dimension(&mut self) -> Result<usize> {
            Ok(1)
        }
        fn insert_message(&mut self, _: &Message) -> Result<()> {
            self.calls.push("message".into());
            Ok(())
        }
        fn locate(&mut self, _: &Scope, id: MemoryId) -> Result<((), Memory)> {
            let m = self.stored.iter().find(|m| m.id == id);
            m.cloned()
                .map(|m| ((), m))
                .ok_or_else(|| crate::Error::not_found("memory", id))
        }
        fn retire(&mut self, _: &(), _: &Memory, c: &Supersession, _: i64) -> Result<()> {
            self.calls.push(format!("retire {}", c.state.as_str()));
            Ok(())
        }
        fn insert_memory(&mut self, _: &NewMemory) -> Result<()> {
            self.calls.push("memory".into());
            Ok(())
        }
        fn link_entity(&mut self, _: &NewMemory, _: &(), _: &EntityMention, _: i64) -> Result<()> {
            self.calls.push("entity".into());
            Ok(())
        }
        fn owner(&mut self, id: MemoryId) -> Result<Option<(Scope, bool)>> {
            Ok(self
                .locate(&Scope::user("ann")?, id)
                .ok()
                .map(|(_, m)| (m.scope().unwrap(), false)))
        }
        fn write_link(&mut self, _: &Scope, l: &Link) -> Result<()> {
            self.calls.push(format!("link {}", l.kind.as_str()));
            Ok(())
        }
        fn index_text(&mut self, _: &(), _: &Memory) -> Result<Option<String>> {
            Ok(None)
        }
        fn evolve(
            &mut self,
            _: &(),
            _: &Memory,
            _: &NoteFields,
            _: &str,
            _: &[f32],
            _: i64,
        ) -> Result<()> {
            self.calls.push("evolve".into());
            Ok(())
        }
    }

    fn batch(fake: &mut Fake) -> WriteBatch {
        let s = Scope::user("ann").unwrap();
        let old = memory(MemoryKind::Fact, "Ann lives in Oslo");
        fake.stored.push(old.clone());
        let m = Message::new(
            &s,
            Role::User,
            None,
            "I moved to Bergen".into(),
            chrono::Utc::now(),
        );
        let mut new = NewMemory::raw(&m, &s, Metadata::new(), None, vec![1.0]);
        new.entities = vec![EntityMention::new("Bergen", "place")];
        let mut b = WriteBatch::new(s, vec![m], vec![new.clone()]);
        b.changes = vec![Supersession {
            old: old.id,
            by: Some(new.id),
            state: MemoryState::Superseded,
            valid_until: chrono::Utc::now(),
            reason: None,
        }];
        b.idempotency = Some(Idempotency {
            key: "k".into(),
            request_hash: "h".into(),
        });
        b
    }

    #[test]
    fn a_batch_is_written_in_the_write_order() {
        let mut fake = Fake::default();
        let b = batch(&mut fake);
        let out = write_batch(&mut fake, &b).unwrap();
        assert_eq!(
            fake.calls,
            [
                "message",
                "retire superseded",
                "history SUPERSEDE",
                "memory",
                "history ADD",
                "entity",
                "link supersedes",
                "idempotency"
            ]
        );
        assert_eq!(out.results.len(), 1);
        assert_eq!(out.results[0].event, HistoryKind::Update);
        assert_eq!(
            out.results[0].previous_memory.as_deref(),
            Some("Ann lives in Oslo")
        );
    }

    #[test]
    fn a_replayed_batch_writes_nothing_and_a_stale_retirement_is_a_conflict() {
        let mut fake = Fake::default();
        let b = batch(&mut fake);
        fake.replay = Some(AddOutcome {
            results: Vec::new(),
            replayed: true,
            warnings: Vec::new(),
            usage: Vec::new(),
            relations: Vec::new(),
        });
        assert!(write_batch(&mut fake, &b).unwrap().replayed);
        assert!(fake.calls.is_empty());
        let mut fake = Fake::default();
        let b = batch(&mut fake);
        fake.stored.clear();
        let e = write_batch(&mut fake, &b).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Conflict);
        assert!(
            e.to_string().contains("is no longer active in this scope"),
            "{e}"
        );
    }

    #[test]
    fn every_step_can_fail_the_batch() {
        for &step in WriteStep::INFERRED_ADD {
            let mut fake = Fake {
                fail_at: Some(step),
                ..Fake::default()
            };
            let b = batch(&mut fake);
            let e = write_batch(&mut fake, &b).unwrap_err();
            assert!(e.to_string().contains(step.as_str()), "{step}: {e}");
        }
    }

    #[test]
    fn a_tier_write_names_what_went_stale() {
        let s = Scope::user("ann").unwrap();
        let mut w = crate::tier::TierWrite::default();
        w.evictions.push(crate::tier::Eviction {
            segment: SegmentId::new(),
            expected_version: 2,
            reason: "cold".into(),
        });
        let e = write_tiers(&mut Fake::default(), &s, &w).unwrap_err();
        assert!(
            e.to_string()
                .contains("(version 3, expected 2); plan again"),
            "{e}"
        );
        w.evictions[0].expected_version = 3;
        let mut fake = Fake::default();
        write_tiers(&mut fake, &s, &w).unwrap();
        assert_eq!(fake.calls, ["evict", "history EVICT"]);
        w.analysed.push(PageId::new());
        let e = write_tiers(&mut Fake::default(), &s, &w).unwrap_err();
        assert!(
            e.to_string()
                .contains("already analysed by another analysis"),
            "{e}"
        );
    }

    #[test]
    fn the_add_event_names_who_asked_else_the_speaker() {
        let s = Scope::user("ann").unwrap();
        let m = Message::new(
            &s,
            Role::User,
            Some("Ann".into()),
            "hi".into(),
            chrono::Utc::now(),
        );
        let mut n = NewMemory::raw(&m, &s, Metadata::new(), None, vec![1.0]);
        n.reason = Some("said so".into());
        let ctx = n.add_context(&WritePlan::default());
        assert_eq!(ctx.actor.as_deref(), Some("Ann"));
        assert_eq!(ctx.reason.as_deref(), Some("said so"));
        let asked = WritePlan {
            actor: Some("admin".into()),
            ..WritePlan::default()
        };
        assert_eq!(n.add_context(&asked).actor.as_deref(), Some("admin"));
        let same = Idempotency {
            key: "k".into(),
            request_hash: "h".into(),
        };
        let e = same.replay("other", || unreachable!()).unwrap_err();
        assert!(
            e.to_string()
                .contains("already used for a different request"),
            "{e}"
        );
    }
}
