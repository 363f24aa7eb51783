//! Changes to existing memories: updates and deletes (one, several all-or-nothing, a whole
//! scope), the reset of the whole store, and the read counters.

use super::{change_time, locate, lock_memories};
use crate::codec::{memory_from_row, ms, MEMORY_COLUMNS};
use crate::encode::{insert_history, Change};
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use postgres::Transaction;
use std::collections::BTreeMap;

impl PgStore {
    /// Updates in one transaction, in order, all or none.
    pub(crate) fn update_memories(
        &self,
        items: Vec<(Scope, MemoryId, MemoryPatch)>,
        ctx: &WriteContext,
    ) -> Result<Vec<Memory>> {
        for (scope, _, patch) in &items {
            scope.validate()?;
            patch.validate()?;
        }
        self.write_tx(|tx| {
            lock_memories(tx, items.iter().map(|(_, id, _)| *id))?;
            items
                .iter()
                .map(|(scope, id, patch)| update_in(tx, scope, *id, patch, ctx))
                .collect()
        })
    }

    pub(crate) fn delete_memory(
        &self,
        scope: &Scope,
        id: MemoryId,
        mode: DeleteMode,
        ctx: &WriteContext,
    ) -> Result<()> {
        self.delete_memories(&[(scope.clone(), id)], mode, ctx)
            .map(drop)
    }

    /// Deletes in one transaction, all or none.
    pub(crate) fn delete_memories(
        &self,
        items: &[(Scope, MemoryId)],
        mode: DeleteMode,
        ctx: &WriteContext,
    ) -> Result<u64> {
        for (scope, _) in items {
            scope.validate()?;
        }
        self.write_tx(|tx| {
            lock_memories(tx, items.iter().map(|(_, id)| *id))?;
            let now = chrono::Utc::now().timestamp_millis();
            for (scope, id) in items {
                let memory = locate(tx, scope, *id)?;
                delete_one(tx, &memory, mode, ctx, now)?;
            }
            Ok(items.len() as u64)
        })
    }

    /// Deletes every active memory of the scope (expired ones too), in one transaction.
    pub(crate) fn delete_scope(
        &self,
        scope: &Scope,
        mode: DeleteMode,
        ctx: &WriteContext,
    ) -> Result<u64> {
        scope.validate()?;
        self.write_tx(|tx| {
            let mut p = Pred::default();
            predicate::scope(&mut p, "m", scope);
            let read = ReadOptions {
                include_expired: true,
                ..ReadOptions::default()
            };
            predicate::visibility(&mut p, "m", &read);
            let sql = format!(
                "SELECT {MEMORY_COLUMNS} FROM memories m WHERE {} ORDER BY m.id FOR UPDATE",
                p.where_sql()
            );
            let rows = tx.query(&sql, &p.params()).map_err(pg_err)?;
            let now = chrono::Utc::now().timestamp_millis();
            for row in &rows {
                delete_one(tx, &memory_from_row(row)?, mode, ctx, now)?;
            }
            Ok(rows.len() as u64)
        })
    }

    /// Empties every table of memories, messages, the graph and the hierarchy, and unbinds the
    /// embedding model (API keys stay: they are the server's, not the memories').
    pub(crate) fn reset_all(&self) -> Result<()> {
        self.write_tx(|tx| {
            tx.batch_execute(
                "TRUNCATE memories, messages, memory_sources, history, links, entities, \
                 entity_memories, idempotency, pages, segments, lexical_scopes, lexical_terms, \
                 lexical_postings, jobs; \
                 DELETE FROM mnemo_meta WHERE key IN ('model_id', 'dimension');",
            )
            .map_err(pg_err)
        })
    }

    /// Counts reads: `access_count + n` for an id listed `n` times, `last_accessed_at` never
    /// moved back. Rows are changed in id order so two touches never wait on each other in a
    /// cycle.
    pub(crate) fn touch_memories(
        &self,
        scope: &Scope,
        ids: &[MemoryId],
        at: Timestamp,
    ) -> Result<u64> {
        scope.validate()?;
        if ids.is_empty() {
            return Ok(0);
        }
        let mut counts: BTreeMap<MemoryId, i64> = BTreeMap::new();
        for id in ids {
            *counts.entry(*id).or_default() += 1;
        }
        let at = ms(at);
        self.write_tx(|tx| {
            let mut changed = 0u64;
            for (id, n) in &counts {
                let mut p = Pred::default();
                let (n_arg, at_arg, id_arg) = (p.arg(*n), p.arg(at), p.arg(id.0));
                p.and(&format!("m.id = {id_arg}"));
                predicate::scope(&mut p, "m", scope);
                let sql = format!(
                    "UPDATE memories AS m SET access_count = access_count + {n_arg}, \
                     last_accessed_at = GREATEST(COALESCE(last_accessed_at, {at_arg}), {at_arg}) \
                     WHERE {}",
                    p.where_sql()
                );
                let rows = tx.execute(&sql, &p.params()).map_err(pg_err)?;
                changed += rows * (*n as u64);
            }
            Ok(changed)
        })
    }
}

/// Applies one patch to a memory the scope may change, with its `UPDATE` event; returns the
/// memory as it is now.
fn update_in(
    tx: &mut Transaction<'_>,
    scope: &Scope,
    id: MemoryId,
    patch: &MemoryPatch,
    ctx: &WriteContext,
) -> Result<Memory> {
    let old = locate(tx, scope, id)?;
    let key = old.scope()?.key();
    let now = change_time(&old);
    let text = patch.text.clone().unwrap_or_else(|| old.text.clone());
    let metadata = patch
        .metadata
        .clone()
        .unwrap_or_else(|| old.metadata.clone());
    let expires = match patch.expires_at {
        Some(e) => e.map(ms),
        None => old.expires_at.map(ms),
    };
    let text_changed = text != old.text || patch.index_text.is_some();
    // A changed text needs its new vector; an unchanged one keeps the old.
    let vector = if text_changed {
        let dim = crate::search::dimension_of(tx)?;
        let v = patch
            .vector
            .as_deref()
            .ok_or_else(|| Error::invalid("vector", "a changed text needs its new vector"))?;
        check_vector("vector", v, dim)?;
        Some(pgvector::Vector::from(v.to_vec()))
    } else {
        None
    };
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
                &text,
                &crate::codec::metadata_value(&metadata),
                &content_hash(&text),
                &now,
                &expires,
                &patch.index_text,
                &text_changed,
                &vector,
                &key,
                &id.0,
            ],
        )
        .map_err(pg_err)?;
    let memory = memory_from_row(&row)?;
    let owner = memory.scope()?;
    let change = Change {
        old_text: Some(&old.text),
        new_text: Some(&text),
        old_metadata: Some(&old.metadata),
        new_metadata: Some(&metadata),
        ..Change::default()
    };
    insert_history(tx, (id, &owner), HistoryKind::Update, &change, ctx, now)?;
    let (_, memory) = crate::read::with_sources(tx, vec![(0, memory)])?
        .pop()
        .ok_or_else(|| Error::internal("one memory in, one out"))?;
    Ok(memory)
}

/// Deletes one located memory: soft keeps the record (state `deleted`, out of the indexes),
/// hard removes it with its provenance, entity links and links; history stays either way.
fn delete_one(
    tx: &mut Transaction<'_>,
    m: &Memory,
    mode: DeleteMode,
    ctx: &WriteContext,
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
    let change = Change {
        old_text: Some(&m.text),
        old_metadata: Some(&m.metadata),
        ..Change::default()
    };
    insert_history(tx, (m.id, &owner), HistoryKind::Delete, &change, ctx, now)
}
