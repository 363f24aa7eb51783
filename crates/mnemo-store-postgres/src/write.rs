//! The write path on PostgreSQL: an add's batches (messages, memories with their provenance,
//! history, entities, retirements, links, note evolutions, the hierarchy's changes and the
//! idempotency row) in one transaction; updates, deletes, touches and links in `change` and
//! `links`. Every public write is one database transaction.
//!
//! Concurrency. Transactions run at READ COMMITTED, and the checks a write makes are kept true
//! until it commits by locks:
//! - an add first takes a transaction-scoped advisory lock per exact scope it writes
//!   ([`lock_scopes`]). Adds of one scope therefore run one after another, as on the embedded
//!   store: an idempotency key is looked up and stored under the lock (a concurrent retry waits
//!   and then replays), and an entity is never created twice. Adds of different scopes run in
//!   parallel.
//! - every row a write checks before changing it (a memory to retire, update, delete or
//!   evolve) is read `FOR UPDATE` with the visibility rule in the same statement; PostgreSQL
//!   re-checks the rule on the newest row version after waiting, so a memory retired by a
//!   concurrent writer is not found (a conflict for a retirement) rather than retired twice.
//! - a link's ends are read `FOR KEY SHARE`, so neither can be hard-deleted before the link
//!   commits.
//! - counters (`access_count`, `mentions`) change by `SET x = x + n`, which PostgreSQL applies
//!   to the newest row version.
//!
//! Locks are taken in one order — scope locks sorted by hash, then memory rows by id
//! ([`lock_memories`] before a write that changes several) — so writers do not deadlock on
//! them. A deadlock PostgreSQL still detects elsewhere rolls the whole transaction back, and
//! [`PgStore::write_tx`] runs it again (at most [`DEADLOCK_RETRIES`] times).

pub(crate) mod change;
pub(crate) mod existing;
pub(crate) mod links;

use crate::codec::{memory_from_row, ms, MEMORY_COLUMNS};
use crate::encode::{insert_history, insert_memory, insert_message, Change, MemoryRow};
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use postgres::{GenericClient, Transaction};
use std::collections::HashMap;

/// The class of the scope write locks: two-key advisory locks, a key space apart from the
/// one-key locks of migration and binding ("mnmo").
const SCOPE_LOCK_CLASS: i32 = 0x6d6e_6d6f;

/// Takes the write lock of each exact scope (by its key) until the transaction ends, in one
/// global order. Keys are hashed to 32 bits: two scopes sharing a hash only wait on each other.
pub(crate) fn lock_scopes(
    tx: &mut Transaction<'_>,
    keys: impl IntoIterator<Item = impl AsRef<str>>,
) -> Result<()> {
    let mut hashes: Vec<i32> = keys.into_iter().map(|k| fnv1a(k.as_ref())).collect();
    hashes.sort_unstable();
    hashes.dedup();
    for h in hashes {
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, $2)",
            &[&SCOPE_LOCK_CLASS, &h],
        )
        .map_err(pg_err)?;
    }
    Ok(())
}

/// Locks the rows of memories `ids` in id order before a write checks and changes several of
/// them, so two such writers never wait on each other in a cycle. Rows of any scope are locked
/// (a lock reveals nothing); the scope and visibility checks come after, row by row.
pub(crate) fn lock_memories(
    tx: &mut Transaction<'_>,
    ids: impl IntoIterator<Item = MemoryId>,
) -> Result<()> {
    let mut ids: Vec<uuid::Uuid> = ids.into_iter().map(|i| i.0).collect();
    ids.sort_unstable();
    ids.dedup();
    // One row is locked by the check that reads it.
    if ids.len() > 1 {
        tx.execute(
            "SELECT 1 FROM memories WHERE id = ANY($1) ORDER BY id FOR UPDATE",
            &[&ids],
        )
        .map_err(pg_err)?;
    }
    Ok(())
}

/// How many more times a write runs after PostgreSQL rolled it back to break a deadlock that
/// the lock order above does not rule out (e.g. entity counters shared by a hard delete and an
/// add of the same scope).
const DEADLOCK_RETRIES: u32 = 3;

/// Whether `e` is PostgreSQL breaking a deadlock: SQLSTATE 40P01, which `pg_err` ends its
/// message with.
fn is_deadlock(e: &Error) -> bool {
    matches!(e, Error::Storage { reason } if reason.ends_with("(40P01)"))
}

/// FNV-1a: a hash every server computes alike (the standard library's is seeded per process).
pub(crate) fn fnv1a(s: &str) -> i32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    h as i32
}

/// The memory `id` that `scope` may change — owned by a scope it covers, active and unexpired
/// (the default read) — locked until the transaction ends; not found otherwise.
pub(crate) fn locate(tx: &mut Transaction<'_>, scope: &Scope, id: MemoryId) -> Result<Memory> {
    let mut p = Pred::default();
    let a = p.arg(id.0);
    p.and(&format!("m.id = {a}"));
    predicate::scope(&mut p, "m", scope);
    predicate::visibility(&mut p, "m", &ReadOptions::default());
    let sql = format!(
        "SELECT {MEMORY_COLUMNS} FROM memories m WHERE {} FOR UPDATE",
        p.where_sql()
    );
    let row = tx
        .query_opt(&sql, &p.params())
        .map_err(pg_err)?
        .ok_or_else(|| Error::not_found("memory", id))?;
    memory_from_row(&row)
}

/// The time a change to `m` is recorded at: now, never before its last change.
pub(crate) fn change_time(m: &Memory) -> i64 {
    chrono::Utc::now().timestamp_millis().max(ms(m.updated_at))
}

/// The outcome stored under an idempotency key of `scope`: `None` when the key is new, the
/// outcome (`replayed`) for the same request, a conflict for a different one.
pub(crate) fn stored_outcome_in(
    c: &mut impl GenericClient,
    scope: &Scope,
    idem: &Idempotency,
) -> Result<Option<AddOutcome>> {
    let row = c
        .query_opt(
            "SELECT request_hash, outcome FROM idempotency WHERE scope_key = $1 AND key = $2",
            &[&scope.key(), &idem.key],
        )
        .map_err(pg_err)?;
    let Some(row) = row else { return Ok(None) };
    let hash: String = row.get(0);
    if hash != idem.request_hash {
        return Err(Error::Conflict {
            reason: format!(
                "idempotency key {:?} was already used for a different request",
                idem.key
            ),
        });
    }
    let mut outcome: AddOutcome =
        serde_json::from_value(row.get::<_, serde_json::Value>(1)).map_err(Error::storage)?;
    outcome.replayed = true;
    Ok(Some(outcome))
}

impl PgStore {
    /// Runs `f` in one transaction (see `PgStore::tx`), again when it was a deadlock's victim.
    pub(crate) fn write_tx<T>(
        &self,
        mut f: impl FnMut(&mut Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut left = DEADLOCK_RETRIES;
        loop {
            match self.tx(&mut f) {
                Err(e) if left > 0 && is_deadlock(&e) => left -= 1,
                out => return out,
            }
        }
    }

    pub(crate) fn write_one(
        &self,
        tx: &mut Transaction<'_>,
        batch: &WriteBatch,
    ) -> Result<AddOutcome> {
        if let Some(idem) = &batch.idempotency {
            if let Some(o) = stored_outcome_in(tx, &batch.scope, idem)? {
                return Ok(o);
            }
        }
        let needs_vectors = !batch.memories.is_empty()
            || !batch.evolutions.is_empty()
            || !batch.tiers.pages.is_empty()
            || !batch.tiers.segments.is_empty();
        let dim = if needs_vectors {
            Some(crate::search::dimension_of(tx)?)
        } else {
            None
        };
        batch.validate(dim)?;
        let existing = batch.changes.iter().map(|c| c.old);
        lock_memories(tx, existing.chain(batch.evolutions.iter().map(|e| e.id)))?;
        for m in &batch.messages {
            self.step(WriteStep::Message)?;
            insert_message(tx, m)?;
        }
        // Retire first: a memory that replaces another must not be judged a duplicate of it.
        let mut retired: Vec<(Memory, &Supersession)> = Vec::with_capacity(batch.changes.len());
        for c in &batch.changes {
            self.step(WriteStep::Change)?;
            let successor =
                c.by.and_then(|by| batch.memories.iter().find(|m| m.id == by))
                    .map(|m| m.text.as_str());
            retired.push((self.retire(tx, batch, c, successor)?, c));
        }
        let mut results = Vec::with_capacity(batch.memories.len() + batch.changes.len());
        for m in &batch.memories {
            self.add_memory(tx, batch, m)?;
            results.push(AddResult::added(m, &retired));
        }
        let now = chrono::Utc::now().timestamp_millis();
        for (old, c) in &retired {
            match c.link(crate::codec::from_ms(now)) {
                Some(link) => {
                    self.step(WriteStep::Link)?;
                    crate::encode::write_link(tx, &batch.scope.key(), &link, true)?;
                }
                None => results.push(AddResult::deleted(old, c)),
            }
        }
        let pending: HashMap<MemoryId, Scope> = batch
            .memories
            .iter()
            .map(|m| (m.id, m.scope.clone()))
            .collect();
        for l in &batch.links {
            let owner = links::check_link(tx, &batch.scope, l, &pending)?;
            self.step(WriteStep::Link)?;
            crate::encode::write_link(tx, &owner.key(), l, true)?;
        }
        for e in &batch.evolutions {
            self.step(WriteStep::Evolve)?;
            Self::evolve(tx, batch, e)?;
        }
        self.write_tiers(tx, &batch.scope, &batch.tiers)?;
        let outcome = AddOutcome {
            results,
            replayed: false,
            warnings: Vec::new(),
            usage: Vec::new(),
        };
        if let Some(idem) = &batch.idempotency {
            self.step(WriteStep::Idempotency)?;
            let stored = serde_json::to_value(&outcome).map_err(Error::internal)?;
            tx.execute(
                "INSERT INTO idempotency (scope_key, key, request_hash, outcome, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
                &[
                    &batch.scope.key(),
                    &idem.key,
                    &idem.request_hash,
                    &stored,
                    &now,
                ],
            )
            .map_err(pg_err)?;
        }
        Ok(outcome)
    }

    /// Inserts one new memory of the batch with its `ADD` event and entity links.
    fn add_memory(
        &self,
        tx: &mut Transaction<'_>,
        batch: &WriteBatch,
        m: &NewMemory,
    ) -> Result<()> {
        self.step(WriteStep::Memory)?;
        let at = ms(m.created_at);
        insert_memory(
            tx,
            &MemoryRow {
                id: m.id,
                scope: &m.scope,
                kind: m.kind,
                state: MemoryState::Active,
                text: &m.text,
                index_text: m.index_text.as_deref(),
                metadata: &m.metadata,
                created_at: at,
                updated_at: at,
                expires_at: m.expires_at.map(ms),
                valid_from: m.valid_from.map(ms),
                valid_until: None,
                actor: m.actor.as_deref(),
                role: m.role,
                vector: Some(&m.vector),
                sources: &m.sources,
                note: m.note.as_ref(),
            },
        )?;
        self.step(WriteStep::History)?;
        // The ADD event names who asked, else the memory's speaker, and the speaker's role.
        let ctx = WriteContext {
            reason: m.reason.clone().or_else(|| batch.context.reason.clone()),
            actor: batch.context.actor.clone().or_else(|| m.actor.clone()),
            role: batch.context.role.or(m.role),
            ..batch.context.clone()
        };
        let change = Change {
            new_text: Some(&m.text),
            new_metadata: Some(&m.metadata),
            ..Change::default()
        };
        insert_history(tx, (m.id, &m.scope), HistoryKind::Add, &change, &ctx, at)?;
        for e in &m.entities {
            self.step(WriteStep::Entity)?;
            crate::entities::link_entity(tx, &m.scope, m.id, e, at)?;
        }
        Ok(())
    }
}
