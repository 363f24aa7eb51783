//! Changes to existing memories: updates and deletes (one, several all-or-nothing, a whole
//! scope), the reset of the whole store, and the read counters.

use super::locate;
use crate::codec::{memory_from_row, ms, MEMORY_COLUMNS};
use crate::encode::insert_history;
use crate::pg_err;
use mnemo_core::*;
use postgres::Transaction;

/// Applies one patch to a memory the scope may change, with its `UPDATE` event; returns the
/// memory as it is now.
pub(crate) fn update_in(
    tx: &mut Transaction<'_>,
    scope: &Scope,
    id: MemoryId,
    patch: &MemoryPatch,
    ctx: &WritePlan,
) -> Result<Memory> {
    let old = locate(tx, scope, id)?;
    let key = old.scope()?.key();
    let now = change_time(&old);
    let new = patch.applied_to(&old);
    // A changed text needs its new vector; an unchanged one keeps the old.
    let vector = new
        .vector(|| crate::search::dimension_of(tx))?
        .map(|v| pgvector::Vector::from(v.to_vec()));
    let sql = format!(
        "UPDATE memories m SET text = $1, metadata = $2, hash = $3, updated_at = $4, \
         expires_at = $5, index_text = CASE WHEN $6::text IS NOT NULL THEN $6 \
         WHEN $7 THEN NULL ELSE index_text END, embedding = COALESCE($8, embedding) \
         WHERE m.scope_key = $9 AND m.id = $10 RETURNING {MEMORY_COLUMNS}"
    );
    let row = tx
        .query_one(
            &sql,
            &[
                &new.text,
                &crate::codec::metadata_value(&new.metadata),
                &content_hash(&new.text),
                &now,
                &new.expires_at.map(ms),
                &new.index_text,
                &new.text_changed,
                &vector,
                &key,
                &id.0,
            ],
        )
        .map_err(pg_err)?;
    let memory = memory_from_row(&row)?;
    insert_history(
        tx,
        &HistoryEntry {
            old_text: Some(&old.text),
            new_text: Some(&new.text),
            old_metadata: Some(&old.metadata),
            new_metadata: Some(&new.metadata),
            ..HistoryEntry::new(id, &memory.scope()?, HistoryKind::Update, ctx, now)
        },
    )?;
    let (_, memory) = crate::read::with_sources(tx, vec![(0, memory)])?
        .pop()
        .ok_or_else(|| Error::internal("one memory in, one out"))?;
    Ok(memory)
}

/// Deletes one located memory: soft keeps the record (state `deleted`, out of the indexes),
/// hard removes it with its provenance, entity links and links; history stays either way.
pub(crate) fn delete_one(
    tx: &mut Transaction<'_>,
    m: &Memory,
    mode: DeleteMode,
    ctx: &WritePlan,
    now: i64,
) -> Result<()> {
    let owner = m.scope()?;
    let key = owner.key();
    match mode {
        DeleteMode::Soft => {
            tx.execute(
                "UPDATE memories SET state = 'deleted', updated_at = $1, embedding = NULL, \
                 valid_until = COALESCE(valid_until, $1) WHERE scope_key = $2 AND id = $3",
                &[&now, &key, &m.id.0],
            )
            .map_err(pg_err)?;
        }
        DeleteMode::Hard => {
            tx.execute(
                "DELETE FROM memory_sources WHERE scope_key = $1 AND memory_id = $2",
                &[&key, &m.id.0],
            )
            .map_err(pg_err)?;
            crate::relations::drop_support(tx, &key, m.id)?;
            crate::entities::unlink_memory(tx, &key, m.id)?;
            tx.execute(
                "DELETE FROM links WHERE scope_key = $1 AND (from_id = $2 OR to_id = $2)",
                &[&key, &m.id.0],
            )
            .map_err(pg_err)?;
            tx.execute(
                "DELETE FROM memories WHERE scope_key = $1 AND id = $2",
                &[&key, &m.id.0],
            )
            .map_err(pg_err)?;
        }
    }
    insert_history(
        tx,
        &HistoryEntry {
            old_text: Some(&m.text),
            old_metadata: Some(&m.metadata),
            ..HistoryEntry::new(m.id, &owner, HistoryKind::Delete, ctx, now)
        },
    )
}
