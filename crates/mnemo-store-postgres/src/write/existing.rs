//! What an add changes in memories that already exist: the ones it retires (superseded or
//! deleted by a newer fact) and the notes whose fields it evolves. Both must still be active
//! when the add runs; one that changed since the pipeline read it fails the add as a conflict.

use super::{change_time, locate};
use crate::codec::ms;
use crate::encode::{insert_history, Change};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use postgres::Transaction;

/// Like [`locate`], for a memory another reader saw active: gone or retired since is a conflict.
fn locate_still_active(
    tx: &mut Transaction<'_>,
    scope: &Scope,
    id: MemoryId,
    what: &str,
) -> Result<Memory> {
    locate(tx, scope, id).map_err(|e| match e {
        Error::NotFound { .. } => Error::Conflict {
            reason: format!(
                "{what} {id} is no longer active in this scope; it changed since it was read"
            ),
        },
        e => e,
    })
}

impl PgStore {
    /// Retires one active memory of the batch's scope (superseded or soft-deleted), keeping its
    /// text; a superseded memory stays in the indexes (hidden by the state rule, found by reads
    /// that ask for inactive memories), a deleted one leaves them.
    pub(super) fn retire(
        &self,
        tx: &mut Transaction<'_>,
        batch: &WriteBatch,
        c: &Supersession,
        successor: Option<&str>,
    ) -> Result<Memory> {
        let old = locate_still_active(tx, &batch.scope, c.old, "memory")?;
        let owner = old.scope()?;
        let event = match c.state {
            MemoryState::Superseded => HistoryKind::Supersede,
            MemoryState::Deleted => HistoryKind::Delete,
            MemoryState::Active => {
                return Err(Error::invalid("changes", "a change must retire the memory"))
            }
        };
        let now = change_time(&old);
        tx.execute(
            "UPDATE memories SET state = $1, updated_at = $2, \
             valid_until = COALESCE(valid_until, $3), \
             embedding = CASE WHEN $1 = 'deleted' THEN NULL ELSE embedding END \
             WHERE scope_key = $4 AND id = $5",
            &[
                &c.state.as_str(),
                &now,
                &ms(c.valid_until),
                &owner.key(),
                &c.old.0,
            ],
        )
        .map_err(pg_err)?;
        self.step(WriteStep::History)?;
        let ctx = WriteContext {
            reason: c.reason.clone().or_else(|| batch.context.reason.clone()),
            ..batch.context.clone()
        };
        let change = Change {
            old_text: Some(&old.text),
            old_metadata: Some(&old.metadata),
            new_text: successor,
            ..Change::default()
        };
        insert_history(tx, (c.old, &owner), event, &change, &ctx, now)?;
        Ok(old)
    }

    /// Re-describes an active note of exactly the batch's scope: new fields, index text and
    /// vector, and an `EVOLVE` event with the old and new fields. Its text is untouched.
    pub(super) fn evolve(
        tx: &mut Transaction<'_>,
        batch: &WriteBatch,
        e: &Evolution,
    ) -> Result<()> {
        let note = e.note.validated()?;
        let old = locate_still_active(tx, &batch.scope, e.id, "note")?;
        if old.kind != MemoryKind::Note || old.scope()? != batch.scope {
            return Err(Error::invalid(
                "evolutions",
                format!("memory {} is not a note of this scope", e.id),
            ));
        }
        let now = change_time(&old);
        let old_entry: Option<String> = tx
            .query_one(
                "SELECT index_text FROM memories WHERE scope_key = $1 AND id = $2",
                &[&batch.scope.key(), &e.id.0],
            )
            .map_err(pg_err)?
            .get(0);
        let old_enriched =
            mnemo_core::note::enriched_text(&old.text, &old.note.clone().unwrap_or_default());
        let entry = mnemo_core::note::reindexed(old_entry.as_deref(), &old_enriched, &e.index_text);
        tx.execute(
            "UPDATE memories SET note = $1, index_text = $2, updated_at = $3, embedding = $4 \
             WHERE scope_key = $5 AND id = $6",
            &[
                &crate::codec::note_value(&note),
                &entry,
                &now,
                &pgvector::Vector::from(e.vector.clone()),
                &batch.scope.key(),
                &e.id.0,
            ],
        )
        .map_err(pg_err)?;
        let ctx = WriteContext {
            reason: e.reason.clone().or_else(|| batch.context.reason.clone()),
            ..batch.context.clone()
        };
        let change = Change {
            old_text: Some(&old.text),
            new_text: Some(&old.text),
            old_note: old.note.as_ref(),
            new_note: Some(&note),
            ..Change::default()
        };
        insert_history(
            tx,
            (e.id, &batch.scope),
            HistoryKind::Evolve,
            &change,
            &ctx,
            now,
        )
    }
}
