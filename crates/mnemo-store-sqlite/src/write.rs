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
        s.user_id().map(|v| v.as_str()),
        s.agent_id().map(|v| v.as_str()),
        s.run_id().map(|v| v.as_str()),
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

/// Appends a history event (see [`HistoryEntry`]).
pub(crate) fn history(tx: &Transaction<'_>, e: &HistoryEntry<'_>) -> Result<()> {
    let (u, a, r) = scope_cols(e.owner);
    tx.execute_cached(
        "INSERT INTO history (memory_id, user_id, agent_id, run_id, event, old_text, new_text, old_metadata, new_metadata, actor, role, reason, request_id, created_at, old_note, new_note) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        params![
            e.memory.to_string(), u, a, r, e.event.as_str(), e.old_text, e.new_text,
            e.old_metadata.map(metadata_text), e.new_metadata.map(metadata_text),
            e.ctx.actor, e.ctx.role.map(|r| r.as_str()), e.ctx.reason, e.ctx.request_id, e.at,
            e.old_note.map(note_text), e.new_note.map(note_text)
        ],
    )
    .map_err(sql_err)?;
    Ok(())
}

/// The text a memory is embedded from (see [`mnemo_core::text::collapse_repeated_lines`]).
pub(crate) fn embed_text_of(index_text: &str) -> String {
    mnemo_core::text::collapse_repeated_lines(index_text)
}

/// Inserts a message unless its id is logged already; whether it was inserted.
pub(crate) fn insert_message(tx: &Transaction<'_>, m: &Message) -> Result<bool> {
    let n = tx
        .execute_cached(
            "INSERT OR IGNORE INTO messages (id, user_id, agent_id, run_id, session_id, role, name, content, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                m.id.to_string(), m.user_id, m.agent_id, m.run_id, m.session_id, m.role.as_str(), m.name,
                m.content, m.created_at.timestamp_millis()
            ],
        )
        .map_err(sql_err)?;
    Ok(n == 1)
}

/// Appends a message of an add or a job to the log: kept as it is when logged already, refused
/// when an erase emptied it since (see `RecordWrites::write`).
pub(crate) fn log_message(tx: &Transaction<'_>, m: &Message) -> Result<()> {
    if insert_message(tx, m)? {
        return Ok(());
    }
    let erased: bool = tx
        .query_row(
            "SELECT content = '' FROM messages WHERE id = ?1",
            [m.id.to_string()],
            |r| r.get(0),
        )
        .map_err(sql_err)?;
    if erased {
        return Err(mnemo_core::erased_message(m.id));
    }
    Ok(())
}

/// Inserts one memory (with its event time and read counter) and its lexical row, vector,
/// sources and change-log entry.
pub(crate) fn insert_memory(tx: &Transaction<'_>, m: &MemoryRow<'_>) -> Result<i64> {
    let (id, state, text, index_text) = (m.id, m.state, m.text, m.index_text);
    let (u, a, r) = scope_cols(m.scope);
    let event = crate::timeline::event_cols(m.event_time);
    tx.execute_cached(
        "INSERT INTO memories (id, user_id, agent_id, run_id, kind, state, text, index_text, metadata, hash, created_at, updated_at, expires_at, valid_from, valid_until, actor, role, note, event_start, event_end, event_time, access_count, last_accessed_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
        params![
            id.to_string(), u, a, r, m.kind.as_str(), state.as_str(), text, index_text, metadata_text(m.metadata),
            content_hash(text), m.created_at, m.updated_at, m.expires_at, m.valid_from, m.valid_until, m.actor,
            m.role.map(|r| r.as_str()), m.note.map(note_text), event.0, event.1, event.2,
            m.access_count as i64, m.last_accessed_at
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
        let vector = m
            .vector
            .ok_or_else(|| Error::invalid("vector", "an indexed memory needs a vector"))?;
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
    for src in m.sources {
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
    /// Runs `f` in one IMMEDIATE transaction on the writer, then catches the vector index up
    /// (after releasing the writer).
    pub(crate) fn write_tx<T>(&self, f: impl FnOnce(&Transaction<'_>) -> Result<T>) -> Result<T> {
        self.write_tx_owned(|tx| {
            let out = f(&tx)?;
            tx.commit().map_err(sql_err)?;
            Ok(out)
        })
    }

    /// [`Self::write_tx`] where `f` gets the transaction itself and commits it (a planned
    /// write's graph helper runs beside the commit and is stopped after it, still under the
    /// writer lock).
    pub(crate) fn write_tx_owned<T>(
        &self,
        f: impl FnOnce(Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut conn = self.writer.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        let out = f(tx)?;
        // The index catches up off the writer, so the next write need not wait for it.
        drop(conn);
        self.read(|c| self.sync_ann(c))?;
        Ok(out)
    }

    pub(crate) fn dimension_of(conn: &Connection) -> Result<usize> {
        read_dimension(conn)?.ok_or_else(|| Error::Conflict {
            reason: "the store has no embedding model bound yet; bind one before writing".into(),
        })
    }

    /// Fails the current transaction when a test asked for a failure at `step`.
    pub(crate) fn step(&self, step: WriteStep) -> Result<()> {
        if *self.fail_at.lock() == Some(step) {
            return Err(step.injected_failure());
        }
        Ok(())
    }

    /// Writes one batch in `tx`: the order is core's ([`write_batch`]), the rows [`Writer`]'s;
    /// `memo` carries what the transaction's earlier batches learnt (see [`TxMemo`]), and the
    /// caller finishes it before the commit.
    pub(crate) fn write_one(
        &self,
        tx: &Transaction<'_>,
        memo: &mut TxMemo,
        batch: &WriteBatch,
    ) -> Result<AddOutcome> {
        write_batch(&mut self.writer(tx, memo), batch)
    }

    /// The rows' side of core's write order for one batch of `tx`.
    fn writer<'a, 'c>(&'a self, tx: &'a Transaction<'c>, memo: &'a mut TxMemo) -> Writer<'a, 'c> {
        Writer {
            store: self,
            tx,
            memo,
        }
    }

    /// [`SqliteStore::write_one`] without the hierarchy's steps ([`write_batch_records`]):
    /// the outcome and whether the batch was written (not replayed).
    pub(crate) fn write_one_records(
        &self,
        tx: &Transaction<'_>,
        memo: &mut TxMemo,
        batch: &WriteBatch,
    ) -> Result<(AddOutcome, bool)> {
        write_batch_records(&mut self.writer(tx, memo), batch)
    }

    /// The hierarchy changes of a batch of `scope` written by
    /// [`SqliteStore::write_one_records`] ([`write_late_tiers`]).
    pub(crate) fn write_one_tiers(
        &self,
        tx: &Transaction<'_>,
        memo: &mut TxMemo,
        scope: &Scope,
        tiers: &mnemo_core::tier::TierWrite,
    ) -> Result<()> {
        write_late_tiers(&mut self.writer(tx, memo), scope, tiers)
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
        ctx: &WritePlan,
    ) -> Result<Memory> {
        let (seq, old) = Self::locate_in(tx, scope, id)?;
        let now = change_time(&old);
        let new = patch.applied_to(&old);
        let vector = new.vector(|| Self::dimension_of(tx))?;
        tx.execute_cached(
            "UPDATE memories SET text = ?1, metadata = ?2, hash = ?3, updated_at = ?4, expires_at = ?5, \
             index_text = COALESCE(?6, CASE WHEN ?7 THEN NULL ELSE index_text END) WHERE seq = ?8",
            params![new.text, metadata_text(&new.metadata), content_hash(&new.text), now, opt_ms(new.expires_at), new.index_text, new.text_changed, seq],
        )
        .map_err(sql_err)?;
        if let Some(v) = vector {
            tx.execute_cached("DELETE FROM memories_fts WHERE rowid = ?1", [seq])
                .map_err(sql_err)?;
            tx.execute_cached(
                "INSERT INTO memories_fts (rowid, body) VALUES (?1, ?2)",
                params![seq, new.index_text.unwrap_or(&new.text)],
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
        history(
            tx,
            &HistoryEntry {
                old_text: Some(&old.text),
                old_metadata: Some(&old.metadata),
                new_text: Some(&new.text),
                new_metadata: Some(&new.metadata),
                ..HistoryEntry::new(id, &old.scope()?, HistoryKind::Update, ctx, now)
            },
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

    pub(crate) fn delete_one(
        tx: &Transaction<'_>,
        seq: i64,
        m: &Memory,
        mode: DeleteMode,
        ctx: &WritePlan,
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
                crate::relations::drop_support(tx, &m.id.to_string())?;
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
            &HistoryEntry {
                old_text: Some(&m.text),
                old_metadata: Some(&m.metadata),
                ..HistoryEntry::new(m.id, &m.scope()?, HistoryKind::Delete, ctx, now)
            },
        )
    }
}

/// One batch's rows on SQLite: the storage [`write_batch`] writes through (its hierarchy half
/// is in `tiers/write.rs`), inside the batch's IMMEDIATE transaction.
pub(crate) struct Writer<'a, 't> {
    pub(crate) store: &'a SqliteStore,
    pub(crate) tx: &'a Transaction<'t>,
    pub(crate) memo: &'a mut TxMemo,
}

/// What a write transaction keeps across its batches: the store's vector dimension once read,
/// the entities its mentions resolved to and the mentions they gained
/// ([`crate::graph::EntityMemo`]), and, when asked for, the new memories' row numbers and
/// vectors (for graph inserts ahead of the commit, `ann::ahead`). [`TxMemo::finish`] writes
/// what was deferred; it runs just before the commit.
#[derive(Default)]
pub(crate) struct TxMemo {
    dimension: Option<usize>,
    pub(crate) entities: crate::graph::EntityMemo,
    fresh: Option<Vec<(u64, Vec<f32>)>>,
}

impl TxMemo {
    /// A memo that keeps the row number and vector of every memory the batches insert.
    pub(crate) fn keeping_vectors() -> Self {
        Self {
            fresh: Some(Vec::new()),
            ..Self::default()
        }
    }

    /// The new memories' row numbers and vectors kept so far (see [`Self::keeping_vectors`]).
    pub(crate) fn take_vectors(&mut self) -> Vec<(u64, Vec<f32>)> {
        self.fresh.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Writes what the batches deferred (entities' mention counts).
    pub(crate) fn finish(self, tx: &Transaction<'_>) -> Result<()> {
        self.entities.finish(tx)
    }
}

impl BatchWriter for Writer<'_, '_> {
    /// The memory's row number (`seq`).
    type Key = i64;

    fn dimension(&mut self) -> Result<usize> {
        if let Some(d) = self.memo.dimension {
            return Ok(d);
        }
        let d = SqliteStore::dimension_of(self.tx)?;
        self.memo.dimension = Some(d);
        Ok(d)
    }

    fn insert_message(&mut self, message: &Message) -> Result<()> {
        log_message(self.tx, message)
    }

    fn locate(&mut self, scope: &Scope, id: MemoryId) -> Result<(i64, Memory)> {
        SqliteStore::locate_in(self.tx, scope, id)
    }

    fn retire(&mut self, seq: &i64, _: &Memory, c: &Supersession, at: i64) -> Result<()> {
        // A superseded fact stays indexed (hidden by the state predicate) so searches that ask
        // for inactive memories can still find what used to be true; a deleted one leaves.
        if c.state == MemoryState::Deleted {
            unindex(self.tx, *seq)?;
        } else {
            log_change(self.tx, *seq, "put")?;
        }
        self.tx.execute_cached(
            "UPDATE memories SET state = ?1, updated_at = ?2, valid_until = COALESCE(valid_until, ?3) WHERE seq = ?4",
            params![c.state.as_str(), at, c.valid_until.timestamp_millis(), seq],
        )
        .map_err(sql_err)?;
        Ok(())
    }

    fn insert_memory(&mut self, m: &NewMemory) -> Result<i64> {
        let seq = insert_memory(self.tx, &MemoryRow::added(m))?;
        if let Some(fresh) = self.memo.fresh.as_mut() {
            fresh.push((seq as u64, m.vector.clone()));
        }
        Ok(seq)
    }

    fn link_entity(
        &mut self,
        m: &NewMemory,
        seq: &i64,
        mention: &mnemo_core::entity::EntityMention,
        at: i64,
    ) -> Result<()> {
        crate::graph::link_entity(
            self.tx,
            &mut self.memo.entities,
            &m.scope,
            (m.id, *seq),
            mention,
            at,
        )
    }

    fn owner(&mut self, id: MemoryId) -> Result<Option<(Scope, bool)>> {
        crate::links::owner_in(self.tx, id)
    }

    fn write_link(&mut self, _: &Scope, link: &Link) -> Result<()> {
        crate::graph::insert_link(self.tx, link)
    }

    fn index_text(&mut self, seq: &i64, _: &Memory) -> Result<Option<String>> {
        self.tx
            .query_row_cached(
                "SELECT index_text FROM memories WHERE seq = ?1",
                [seq],
                |r| r.get(0),
            )
            .map_err(sql_err)
    }

    fn evolve(
        &mut self,
        seq: &i64,
        _: &Memory,
        note: &NoteFields,
        entry: &str,
        vector: &[f32],
        at: i64,
    ) -> Result<()> {
        let tx = self.tx;
        tx.execute_cached(
            "UPDATE memories SET note = ?1, index_text = ?2, updated_at = ?3 WHERE seq = ?4",
            params![note_text(note), entry, at, seq],
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
            params![vector_to_blob(vector), seq],
        )
        .map_err(sql_err)?;
        log_change(tx, *seq, "put")
    }
}
