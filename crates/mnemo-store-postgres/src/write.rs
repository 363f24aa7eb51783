//! The write path on PostgreSQL: the rows of an add's batches ([`Writer`]; the order and the
//! checks are core's `write_batch`, the hierarchy's rows in `tiers/write.rs`) in one
//! transaction; updates, deletes and touches in `change`, the owner lookup of link checks in
//! `links`. Every public write is one database transaction.
//!
//! Concurrency. Transactions run at READ COMMITTED, and the checks a write makes are kept true
//! until it commits by locks:
//! - an add first locks a row per exact scope it writes ([`lock_scopes`], `scope_locks`). Adds of one scope therefore run one after another, as on the embedded
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
//! Locks are taken in one order — scope locks sorted by key, then memory rows by id
//! ([`lock_memories`] before a write that changes several) — so writers do not deadlock on
//! them. A deadlock PostgreSQL still detects elsewhere rolls the whole transaction back, and
//! [`PgStore::write_tx`] runs it again (at most [`DEADLOCK_RETRIES`] times).

pub(crate) mod change;

use crate::codec::{memory_from_row, ms, MEMORY_COLUMNS};
use crate::encode::{insert_memory, log_message};
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use postgres::Transaction;

/// Takes the write lock of each exact scope until the transaction ends, in one global order
/// (by key): the scope's row of `scope_locks`, locked `FOR UPDATE`. A row lock lives where the
/// row does — on Citus, the shard the scope's own rows share (`scope_locks` is distributed by
/// `scope_key` with `memories`), so the write stays a one-shard transaction and the lock holds
/// whichever node runs it, which a per-node advisory lock would not.
pub(crate) fn lock_scopes(
    tx: &mut Transaction<'_>,
    keys: impl IntoIterator<Item = impl AsRef<str>>,
) -> Result<()> {
    let mut keys: Vec<String> = keys.into_iter().map(|k| k.as_ref().to_string()).collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        // The erase of a whole scope deletes its rows ([`drop_scope_locks`]). A writer that
        // waited here for a row that erase deleted finds no row once the erase commits: it
        // makes the row again and locks that one, and never goes on unlocked. Each further
        // round needs another erase of the scope to commit in between.
        loop {
            // The row exists once; a concurrent first insert of it waits here for the other's
            // commit, and the lock below then waits for nothing more.
            tx.execute(
                "INSERT INTO scope_locks (scope_key) VALUES ($1) ON CONFLICT (scope_key) DO NOTHING",
                &[&key],
            )
            .map_err(pg_err)?;
            let locked = tx
                .query_opt(
                    "SELECT 1 FROM scope_locks WHERE scope_key = $1 FOR UPDATE",
                    &[&key],
                )
                .map_err(pg_err)?;
            if locked.is_some() {
                break;
            }
        }
    }
    Ok(())
}

/// Deletes the lock rows of every exact scope `scope` covers, at the end of the erase of the
/// whole scope (`erase::erase_log_in`, which locked them first): a row's key names its user,
/// agent and run, and an erased scope leaves no id behind in a table it has nothing else in.
/// Its key is not hashed instead, as `scope_gates`' are: the lock row must share the shard of
/// the scope's own rows on Citus (distributed by `scope_key` with `memories`), which a hash of
/// the key would not. A later write of the scope makes the row again ([`lock_scopes`]).
pub(crate) fn drop_scope_locks(tx: &mut Transaction<'_>, scope: &Scope) -> Result<()> {
    let mut p = Pred::default();
    predicate::covered_key(&mut p, "k", scope);
    tx.execute(
        &format!("DELETE FROM scope_locks k WHERE {}", p.where_sql()),
        &p.params(),
    )
    .map_err(pg_err)?;
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

    /// Writes one batch in `tx`: the order is core's ([`write_batch`]), the rows [`Writer`]'s.
    pub(crate) fn write_one(
        &self,
        tx: &mut Transaction<'_>,
        batch: &WriteBatch,
    ) -> Result<AddOutcome> {
        write_batch(&mut Writer { store: self, tx }, batch)
    }
}

/// One batch's rows on PostgreSQL: the storage [`write_batch`] writes through (its hierarchy
/// half is in `tiers/write.rs`), inside the batch's transaction and under its scope locks.
pub(crate) struct Writer<'a, 't> {
    pub(crate) store: &'a PgStore,
    pub(crate) tx: &'a mut Transaction<'t>,
}

impl BatchWriter for Writer<'_, '_> {
    /// Rows are found by owner and id: nothing more to carry.
    type Key = ();

    fn dimension(&mut self) -> Result<usize> {
        crate::search::dimension_of(self.tx)
    }

    fn lock_existing(&mut self, ids: &[MemoryId]) -> Result<()> {
        lock_memories(self.tx, ids.iter().copied())
    }

    fn insert_message(&mut self, message: &Message) -> Result<()> {
        log_message(self.tx, message)
    }

    fn locate(&mut self, scope: &Scope, id: MemoryId) -> Result<((), Memory)> {
        locate(self.tx, scope, id).map(|m| ((), m))
    }

    /// A superseded memory stays in the indexes (hidden by the state rule, found by reads that
    /// ask for inactive memories), a deleted one leaves them.
    fn retire(&mut self, _: &(), old: &Memory, c: &Supersession, at: i64) -> Result<()> {
        self.tx
            .execute(
                "UPDATE memories SET state = $1, updated_at = $2, \
                 valid_until = COALESCE(valid_until, $3), \
                 embedding = CASE WHEN $1 = 'deleted' THEN NULL ELSE embedding END \
                 WHERE scope_key = $4 AND id = $5",
                &[
                    &c.state.as_str(),
                    &at,
                    &ms(c.valid_until),
                    &old.scope()?.key(),
                    &c.old.0,
                ],
            )
            .map_err(pg_err)?;
        Ok(())
    }

    fn insert_memory(&mut self, m: &NewMemory) -> Result<()> {
        insert_memory(self.tx, &MemoryRow::added(m)).map(drop)
    }

    fn link_entity(
        &mut self,
        m: &NewMemory,
        _: &(),
        mention: &mnemo_core::entity::EntityMention,
        at: i64,
    ) -> Result<()> {
        crate::entities::link_entity(self.tx, &m.scope, m.id, mention, at)
    }

    fn owner(&mut self, id: MemoryId) -> Result<Option<(Scope, bool)>> {
        crate::links::owner_in(self.tx, id)
    }

    fn write_link(&mut self, owner: &Scope, link: &Link) -> Result<()> {
        crate::encode::write_link(self.tx, &owner.key(), link, true).map(drop)
    }

    fn index_text(&mut self, _: &(), m: &Memory) -> Result<Option<String>> {
        Ok(self
            .tx
            .query_one(
                "SELECT index_text FROM memories WHERE scope_key = $1 AND id = $2",
                &[&m.scope()?.key(), &m.id.0],
            )
            .map_err(pg_err)?
            .get(0))
    }

    fn evolve(
        &mut self,
        _: &(),
        m: &Memory,
        note: &NoteFields,
        index_text: &str,
        vector: &[f32],
        at: i64,
    ) -> Result<()> {
        self.tx
            .execute(
                "UPDATE memories SET note = $1, index_text = $2, updated_at = $3, embedding = $4 \
                 WHERE scope_key = $5 AND id = $6",
                &[
                    &crate::codec::note_value(note),
                    &index_text,
                    &at,
                    &pgvector::Vector::from(vector.to_vec()),
                    &m.scope()?.key(),
                    &m.id.0,
                ],
            )
            .map_err(pg_err)?;
        Ok(())
    }
}
