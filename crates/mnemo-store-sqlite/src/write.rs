//! The write half of the store. Each public method is one IMMEDIATE transaction; the vector
//! index catches up from the change log right after the commit, under the writer lock.

use crate::codec::*;
use crate::predicate::{self, Pred};
use crate::{read_dimension, SqliteStore};
use mnemo_core::*;
use rusqlite::{
    params, params_from_iter, Connection, OptionalExtension, Transaction, TransactionBehavior,
};

pub(crate) fn scope_cols(s: &Scope) -> (Option<&str>, Option<&str>, Option<&str>) {
    (
        s.user_id.as_ref().map(|v| v.as_str()),
        s.agent_id.as_ref().map(|v| v.as_str()),
        s.run_id.as_ref().map(|v| v.as_str()),
    )
}

pub(crate) fn log_change(tx: &Transaction<'_>, seq: i64, op: &str) -> Result<()> {
    tx.execute_cached(
        "INSERT INTO vector_changes (seq, op) VALUES (?1, ?2)",
        params![seq, op],
    )
    .map_err(sql_err)?;
    Ok(())
}

#[expect(
    clippy::too_many_arguments,
    reason = "each input is a separate part of the step; a context struct is the planned fix"
)]
pub(crate) fn history(
    tx: &Transaction<'_>,
    id: MemoryId,
    scope: (Option<&str>, Option<&str>, Option<&str>),
    event: HistoryKind,
    old: (Option<&str>, Option<&Metadata>),
    new: (Option<&str>, Option<&Metadata>),
    ctx: &WriteContext,
    at: i64,
) -> Result<()> {
    tx.execute_cached(
        "INSERT INTO history (memory_id, user_id, agent_id, run_id, event, old_text, new_text, old_metadata, new_metadata, actor, role, reason, request_id, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            id.to_string(), scope.0, scope.1, scope.2, event.as_str(), old.0, new.0,
            old.1.map(metadata_text), new.1.map(metadata_text),
            ctx.actor, ctx.role.map(|r| r.as_str()), ctx.reason, ctx.request_id, at
        ],
    )
    .map_err(sql_err)?;
    Ok(())
}

/// The text a memory is embedded from (see [`mnemo_core::text::collapse_repeated_lines`]).
pub(crate) fn embed_text_of(index_text: &str) -> String {
    mnemo_core::text::collapse_repeated_lines(index_text)
}

/// A memory's vector against the store's dimension (the one check, in `mnemo_core`).
pub(crate) fn check_vector(v: &[f32], dim: usize) -> Result<()> {
    mnemo_core::check_vector("vector", v, dim)
}

pub(crate) fn insert_message(tx: &Transaction<'_>, m: &Message) -> Result<()> {
    tx.execute_cached(
        "INSERT OR IGNORE INTO messages (id, user_id, agent_id, run_id, session_id, role, name, content, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            m.id.to_string(), m.user_id, m.agent_id, m.run_id, m.session_id, m.role.as_str(), m.name,
            m.content, m.created_at.timestamp_millis()
        ],
    )
    .map_err(sql_err)?;
    Ok(())
}

/// Inserts one memory with its lexical row, vector, sources and change-log entry.
#[expect(
    clippy::too_many_arguments,
    reason = "each input is a separate part of the step; a context struct is the planned fix"
)]
pub(crate) fn insert_memory(
    tx: &Transaction<'_>,
    id: MemoryId,
    scope: &Scope,
    kind: MemoryKind,
    state: MemoryState,
    text: &str,
    index_text: Option<&str>,
    metadata: &Metadata,
    times: (i64, i64, Option<i64>, Option<i64>, Option<i64>),
    actor: Option<&str>,
    role: Option<Role>,
    vector: Option<&[f32]>,
    sources: &[MessageId],
    note: Option<&NoteFields>,
) -> Result<i64> {
    let (u, a, r) = scope_cols(scope);
    tx.execute_cached(
        "INSERT INTO memories (id, user_id, agent_id, run_id, kind, state, text, index_text, metadata, hash, created_at, updated_at, expires_at, valid_from, valid_until, actor, role, note) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
        params![
            id.to_string(), u, a, r, kind.as_str(), state.as_str(), text, index_text, metadata_text(metadata),
            content_hash(text), times.0, times.1, times.2, times.3, times.4, actor, role.map(|r| r.as_str()),
            note.map(note_text)
        ],
    )
    .map_err(|e| match e {
        rusqlite::Error::SqliteFailure(f, _) if f.code == rusqlite::ErrorCode::ConstraintViolation => {
            Error::Conflict { reason: format!("memory {id} already exists") }
        }
        e => sql_err(e),
    })?;
    let seq = tx.last_insert_rowid();
    if state != MemoryState::Deleted {
        let vector =
            vector.ok_or_else(|| Error::invalid("vector", "an indexed memory needs a vector"))?;
        tx.execute_cached(
            "INSERT INTO memories_fts (rowid, body) VALUES (?1, ?2)",
            params![seq, index_text.unwrap_or(text)],
        )
        .map_err(sql_err)?;
        tx.execute_cached(
            "INSERT INTO vectors (seq, data) VALUES (?1, ?2)",
            params![seq, vector_to_blob(vector)],
        )
        .map_err(sql_err)?;
        log_change(tx, seq, "put")?;
    }
    for src in sources {
        tx.execute_cached(
            "INSERT OR IGNORE INTO memory_sources (memory_id, message_id) VALUES (?1, ?2)",
            params![id.to_string(), src.to_string()],
        )
        .map_err(sql_err)?;
    }
    Ok(seq)
}

/// Removes a memory from the lexical and vector indexes (the row itself stays).
pub(crate) fn unindex(tx: &Transaction<'_>, seq: i64) -> Result<()> {
    tx.execute_cached("DELETE FROM memories_fts WHERE rowid = ?1", [seq])
        .map_err(sql_err)?;
    if tx
        .execute_cached("DELETE FROM vectors WHERE seq = ?1", [seq])
        .map_err(sql_err)?
        > 0
    {
        log_change(tx, seq, "del")?;
    }
    Ok(())
}

impl SqliteStore {
    /// Runs `f` in one IMMEDIATE transaction on the writer, then catches the vector index up.
    pub(crate) fn write_tx<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.writer.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        let out = f(&tx)?;
        tx.commit().map_err(sql_err)?;
        self.sync_ann(&conn)?;
        Ok(out)
    }

    pub(crate) fn dimension_of(conn: &Connection) -> Result<usize> {
        read_dimension(conn)?.ok_or_else(|| Error::Conflict {
            reason: "the store has no embedding model bound yet; bind one before writing".into(),
        })
    }

    pub(crate) fn stored_outcome(
        tx: &Connection,
        scope: &Scope,
        idem: &Idempotency,
    ) -> Result<Option<AddOutcome>> {
        let row: Option<(String, String)> = tx
            .query_row_cached(
                "SELECT request_hash, outcome FROM idempotency WHERE scope_key = ?1 AND key = ?2",
                params![scope.key(), idem.key],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(sql_err)?;
        match row {
            None => Ok(None),
            Some((hash, _)) if hash != idem.request_hash => Err(Error::Conflict {
                reason: format!(
                    "idempotency key {:?} was already used for a different request",
                    idem.key
                ),
            }),
            Some((_, outcome)) => {
                let mut o: AddOutcome = serde_json::from_str(&outcome).map_err(Error::storage)?;
                o.replayed = true;
                Ok(Some(o))
            }
        }
    }

    /// Fails the current transaction when a test asked for a failure at `step`.
    pub(crate) fn step(&self, step: WriteStep) -> Result<()> {
        if *self.fail_at.lock() == Some(step) {
            return Err(step.injected_failure());
        }
        Ok(())
    }

    pub(crate) fn write_one(&self, tx: &Transaction<'_>, batch: &WriteBatch) -> Result<AddOutcome> {
        if let Some(idem) = &batch.idempotency {
            if let Some(o) = Self::stored_outcome(tx, &batch.scope, idem)? {
                return Ok(o);
            }
        }
        let needs_vectors = !batch.memories.is_empty()
            || !batch.evolutions.is_empty()
            || !batch.tiers.pages.is_empty()
            || !batch.tiers.segments.is_empty();
        let dim = if needs_vectors {
            Self::dimension_of(tx)?
        } else {
            0
        };
        batch.validate(needs_vectors.then_some(dim))?;
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
            retired.push((
                self.retire(tx, &batch.scope, c, successor, &batch.context)?,
                c,
            ));
        }
        let mut results = Vec::with_capacity(batch.memories.len() + batch.changes.len());
        for m in &batch.memories {
            self.step(WriteStep::Memory)?;
            let at = m.created_at.timestamp_millis();
            let seq = insert_memory(
                tx,
                m.id,
                &m.scope,
                m.kind,
                MemoryState::Active,
                &m.text,
                m.index_text.as_deref(),
                &m.metadata,
                (at, at, opt_ms(m.expires_at), opt_ms(m.valid_from), None),
                m.actor.as_deref(),
                m.role,
                Some(&m.vector),
                &m.sources,
                m.note.as_ref(),
            )?;
            self.step(WriteStep::History)?;
            // The ADD event names who asked, else the memory's speaker, and the speaker's role.
            let ctx = WriteContext {
                reason: m.reason.clone().or_else(|| batch.context.reason.clone()),
                actor: batch.context.actor.clone().or_else(|| m.actor.clone()),
                role: batch.context.role.or(m.role),
                ..batch.context.clone()
            };
            history(
                tx,
                m.id,
                scope_cols(&m.scope),
                HistoryKind::Add,
                (None, None),
                (Some(&m.text), Some(&m.metadata)),
                &ctx,
                at,
            )?;
            for e in &m.entities {
                self.step(WriteStep::Entity)?;
                crate::graph::link_entity(tx, &m.scope, (m.id, seq), e, at)?;
            }
            results.push(AddResult::added(m, &retired));
        }
        let now = chrono::Utc::now().timestamp_millis();
        for (old, c) in &retired {
            match c.link(from_ms(now)) {
                Some(link) => {
                    self.step(WriteStep::Link)?;
                    crate::graph::insert_link(tx, &link)?;
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
            crate::links::check_link(tx, &batch.scope, l, &pending)?;
            self.step(WriteStep::Link)?;
            crate::graph::insert_link(tx, l)?;
        }
        for e in &batch.evolutions {
            self.step(WriteStep::Evolve)?;
            Self::evolve(tx, &batch.scope, e, dim, &batch.context)?;
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
            tx.execute_cached(
                "INSERT INTO idempotency (scope_key, key, request_hash, outcome, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![batch.scope.key(), idem.key, idem.request_hash, serde_json::to_string(&outcome).map_err(Error::internal)?, now],
            )
            .map_err(sql_err)?;
        }
        Ok(outcome)
    }

    /// Retires one active memory of the scope (superseded or soft-deleted), keeping its text.
    fn retire(
        &self,
        tx: &Transaction<'_>,
        scope: &Scope,
        c: &Supersession,
        successor: Option<&str>,
        ctx: &WriteContext,
    ) -> Result<Memory> {
        let (seq, old) = Self::locate_in(tx, scope, c.old).map_err(|e| match e {
            Error::NotFound { .. } => Error::Conflict {
                reason: format!(
                    "memory {} is no longer active in this scope; it changed since it was read",
                    c.old
                ),
            },
            e => e,
        })?;
        let (state, event) = match c.state {
            MemoryState::Superseded => (MemoryState::Superseded, HistoryKind::Supersede),
            MemoryState::Deleted => (MemoryState::Deleted, HistoryKind::Delete),
            MemoryState::Active => {
                return Err(Error::invalid("changes", "a change must retire the memory"))
            }
        };
        let now = chrono::Utc::now()
            .timestamp_millis()
            .max(old.updated_at.timestamp_millis());
        // A superseded fact stays indexed (hidden by the state predicate) so searches that ask
        // for inactive memories can still find what used to be true; a deleted one leaves.
        if state == MemoryState::Deleted {
            unindex(tx, seq)?;
        } else {
            log_change(tx, seq, "put")?;
        }
        tx.execute_cached(
            "UPDATE memories SET state = ?1, updated_at = ?2, valid_until = COALESCE(valid_until, ?3) WHERE seq = ?4",
            params![state.as_str(), now, c.valid_until.timestamp_millis(), seq],
        )
        .map_err(sql_err)?;
        self.step(WriteStep::History)?;
        let ctx = WriteContext {
            reason: c.reason.clone().or_else(|| ctx.reason.clone()),
            ..ctx.clone()
        };
        history(
            tx,
            c.old,
            scope_cols(&old.scope()?),
            event,
            (Some(&old.text), Some(&old.metadata)),
            (successor, None),
            &ctx,
            now,
        )?;
        Ok(old)
    }

    /// Re-describes an active note of exactly `scope`: new fields, lexical entry and vector, and
    /// an `EVOLVE` event with the old and new fields. Its text is untouched.
    fn evolve(
        tx: &Transaction<'_>,
        scope: &Scope,
        e: &Evolution,
        dim: usize,
        ctx: &WriteContext,
    ) -> Result<()> {
        check_vector(&e.vector, dim)?;
        let note = e.note.validated()?;
        let (seq, old) = Self::locate_in(tx, scope, e.id).map_err(|err| match err {
            Error::NotFound { .. } => Error::Conflict {
                reason: format!(
                    "note {} is no longer active in this scope; it changed since it was read",
                    e.id
                ),
            },
            err => err,
        })?;
        if old.kind != MemoryKind::Note || old.scope()? != *scope {
            return Err(Error::invalid(
                "evolutions",
                format!("memory {} is not a note of this scope", e.id),
            ));
        }
        let now = chrono::Utc::now()
            .timestamp_millis()
            .max(old.updated_at.timestamp_millis());
        let old_entry: Option<String> = tx
            .query_row_cached(
                "SELECT index_text FROM memories WHERE seq = ?1",
                [seq],
                |r| r.get(0),
            )
            .map_err(sql_err)?;
        let old_enriched =
            mnemo_core::note::enriched_text(&old.text, &old.note.clone().unwrap_or_default());
        let entry = mnemo_core::note::reindexed(old_entry.as_deref(), &old_enriched, &e.index_text);
        tx.execute_cached(
            "UPDATE memories SET note = ?1, index_text = ?2, updated_at = ?3 WHERE seq = ?4",
            params![note_text(&note), entry, now, seq],
        )
        .map_err(sql_err)?;
        tx.execute_cached("DELETE FROM memories_fts WHERE rowid = ?1", [seq])
            .map_err(sql_err)?;
        tx.execute_cached(
            "INSERT INTO memories_fts (rowid, body) VALUES (?1, ?2)",
            params![seq, entry],
        )
        .map_err(sql_err)?;
        tx.execute_cached(
            "UPDATE vectors SET data = ?1 WHERE seq = ?2",
            params![vector_to_blob(&e.vector), seq],
        )
        .map_err(sql_err)?;
        log_change(tx, seq, "put")?;
        let (u, a, r) = scope_cols(scope);
        let ctx = WriteContext {
            reason: e.reason.clone().or_else(|| ctx.reason.clone()),
            ..ctx.clone()
        };
        tx.execute_cached(
            "INSERT INTO history (memory_id, user_id, agent_id, run_id, event, old_text, new_text, old_metadata, new_metadata, actor, role, reason, request_id, created_at, old_note, new_note) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, NULL, NULL, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                e.id.to_string(), u, a, r, HistoryKind::Evolve.as_str(), old.text,
                ctx.actor, ctx.role.map(|r| r.as_str()), ctx.reason, ctx.request_id, now,
                old.note.as_ref().map(note_text), note_text(&note)
            ],
        )
        .map_err(sql_err)?;
        Ok(())
    }

    /// Finds the row of a memory the scope may change (active, not expired).
    pub(crate) fn locate_in(
        tx: &Transaction<'_>,
        scope: &Scope,
        id: MemoryId,
    ) -> Result<(i64, Memory)> {
        let mut p = Pred::default();
        p.push("m.id = ?", [rusqlite::types::Value::Text(id.to_string())]);
        predicate::scope(&mut p, "m", scope);
        predicate::visibility(&mut p, "m", &ReadOptions::default());
        let sql = format!(
            "SELECT {MEMORY_COLS} FROM memories m WHERE {}",
            p.where_sql()
        );
        tx.query_row_cached(&sql, params_from_iter(p.params.iter()), memory_from_row)
            .optional()
            .map_err(sql_err)?
            .ok_or_else(|| Error::not_found("memory", id))
    }

    pub(crate) fn update_in(
        tx: &Transaction<'_>,
        scope: &Scope,
        id: MemoryId,
        patch: &MemoryPatch,
        ctx: &WriteContext,
    ) -> Result<Memory> {
        {
            let (seq, old) = Self::locate_in(tx, scope, id)?;
            let now = chrono::Utc::now()
                .timestamp_millis()
                .max(old.updated_at.timestamp_millis());
            let text = patch.text.clone().unwrap_or_else(|| old.text.clone());
            let metadata = patch
                .metadata
                .clone()
                .unwrap_or_else(|| old.metadata.clone());
            let expires = match patch.expires_at {
                Some(e) => opt_ms(e),
                None => opt_ms(old.expires_at),
            };
            let text_changed = text != old.text || patch.index_text.is_some();
            tx.execute_cached(
                "UPDATE memories SET text = ?1, metadata = ?2, hash = ?3, updated_at = ?4, expires_at = ?5, \
                 index_text = COALESCE(?6, CASE WHEN ?7 THEN NULL ELSE index_text END) WHERE seq = ?8",
                params![text, metadata_text(&metadata), content_hash(&text), now, expires, patch.index_text, text_changed, seq],
            )
            .map_err(sql_err)?;
            if text_changed {
                let dim = Self::dimension_of(tx)?;
                let v = patch.vector.as_deref().ok_or_else(|| {
                    Error::invalid("vector", "a changed text needs its new vector")
                })?;
                check_vector(v, dim)?;
                tx.execute_cached("DELETE FROM memories_fts WHERE rowid = ?1", [seq])
                    .map_err(sql_err)?;
                tx.execute_cached(
                    "INSERT INTO memories_fts (rowid, body) VALUES (?1, ?2)",
                    params![seq, patch.index_text.as_deref().unwrap_or(&text)],
                )
                .map_err(sql_err)?;
                tx.execute_cached(
                    "UPDATE vectors SET data = ?1 WHERE seq = ?2",
                    params![vector_to_blob(v), seq],
                )
                .map_err(sql_err)?;
            }
            // State or expiry seen by the index pre-filter may have changed too.
            log_change(tx, seq, "put")?;
            let owner = old.scope()?;
            history(
                tx,
                id,
                scope_cols(&owner),
                HistoryKind::Update,
                (Some(&old.text), Some(&old.metadata)),
                (Some(&text), Some(&metadata)),
                ctx,
                now,
            )?;
            let mut p = Pred::default();
            p.push("m.seq = ?", [rusqlite::types::Value::Integer(seq)]);
            let sql = format!(
                "SELECT {MEMORY_COLS} FROM memories m WHERE {}",
                p.where_sql()
            );
            let (_, mut m) = tx
                .query_row_cached(&sql, params_from_iter(p.params.iter()), memory_from_row)
                .map_err(sql_err)?;
            m.sources = crate::read::sources_of(tx, &[id])?
                .remove(&id)
                .unwrap_or_default();
            Ok(m)
        }
    }

    pub(crate) fn delete_one(
        tx: &Transaction<'_>,
        seq: i64,
        m: &Memory,
        mode: DeleteMode,
        ctx: &WriteContext,
        now: i64,
    ) -> Result<()> {
        unindex(tx, seq)?;
        match mode {
            DeleteMode::Soft => {
                tx.execute_cached("UPDATE memories SET state = 'deleted', updated_at = ?1, valid_until = COALESCE(valid_until, ?1) WHERE seq = ?2", params![now, seq])
                    .map_err(sql_err)?;
            }
            DeleteMode::Hard => {
                tx.execute_cached(
                    "DELETE FROM memory_sources WHERE memory_id = ?1",
                    [m.id.to_string()],
                )
                .map_err(sql_err)?;
                tx.execute_cached(
                    "UPDATE entities SET mentions = mentions - 1 WHERE id IN \
                     (SELECT entity_id FROM entity_memories WHERE memory_id = ?1)",
                    [m.id.to_string()],
                )
                .map_err(sql_err)?;
                tx.execute_cached(
                    "DELETE FROM entity_memories WHERE memory_id = ?1",
                    [m.id.to_string()],
                )
                .map_err(sql_err)?;
                tx.execute_cached(
                    "DELETE FROM links WHERE from_id = ?1 OR to_id = ?1",
                    [m.id.to_string()],
                )
                .map_err(sql_err)?;
                tx.execute_cached("DELETE FROM memories WHERE seq = ?1", [seq])
                    .map_err(sql_err)?;
            }
        }
        history(
            tx,
            m.id,
            scope_cols(&m.scope()?),
            HistoryKind::Delete,
            (Some(&m.text), Some(&m.metadata)),
            (None, None),
            ctx,
            now,
        )
    }
}
