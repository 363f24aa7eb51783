//! The parts of export and import beyond memories, messages and links: index texts, history,
//! entity links, the hierarchy (segments and pages) and idempotency results, so that an export
//! imported into an empty store exports again byte for byte (see the contract case
//! `export_is_lossless_through_import`).

use crate::codec::*;
use crate::codec::{from_ms, history_from_row, metadata_text, note_text, sql_err, vector_to_blob};
use crate::read::*;
use crate::write::log_change;
use crate::write::*;
use crate::SqliteStore;
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use std::collections::HashSet;

type Sink<'a> = &'a mut dyn FnMut(ExportRecord) -> Result<()>;

fn uuid_of(raw: &str) -> Result<uuid::Uuid> {
    uuid::Uuid::parse_str(raw).map_err(|e| Error::storage(format!("bad id {raw:?}: {e}")))
}

/// Everything after the memories and links, in a fixed order.
pub(crate) fn export_rest(conn: &Connection, sink: Sink<'_>) -> Result<()> {
    {
        let mut st = conn
            .prepare(
                "SELECT id, index_text FROM memories WHERE index_text IS NOT NULL ORDER BY seq",
            )
            .map_err(sql_err)?;
        let mut rows = st.query([]).map_err(sql_err)?;
        while let Some(r) = rows.next().map_err(sql_err)? {
            let id: String = r.get(0).map_err(sql_err)?;
            sink(ExportRecord::IndexText {
                memory_id: MemoryId(uuid_of(&id)?),
                index_text: r.get(1).map_err(sql_err)?,
            })?;
        }
    }
    {
        // The event's columns first, so the one history row reader reads them; the owner after.
        let sql = format!(
            "SELECT {}, user_id, agent_id, run_id FROM history ORDER BY id",
            crate::codec::HISTORY_COLS
        );
        let owner = crate::codec::HISTORY_COLS.split(',').count();
        let mut st = conn.prepare(&sql).map_err(sql_err)?;
        let mut rows = st.query([]).map_err(sql_err)?;
        while let Some(r) = rows.next().map_err(sql_err)? {
            sink(ExportRecord::History(Box::new(HistoryRecord {
                event: history_from_row(r).map_err(sql_err)?,
                user_id: r.get(owner).map_err(sql_err)?,
                agent_id: r.get(owner + 1).map_err(sql_err)?,
                run_id: r.get(owner + 2).map_err(sql_err)?,
            })))?;
        }
    }
    {
        let mut st = conn
            .prepare(
                "SELECT e.id, e.user_id, e.agent_id, e.run_id, e.name, e.normalized, e.entity_type, \
                 e.created_at, (SELECT json_group_array(memory_id) FROM \
                   (SELECT memory_id FROM entity_memories em WHERE em.entity_id = e.id ORDER BY memory_id)) \
                 FROM entities e ORDER BY e.id",
            )
            .map_err(sql_err)?;
        let mut rows = st.query([]).map_err(sql_err)?;
        while let Some(r) = rows.next().map_err(sql_err)? {
            let id: String = r.get(0).map_err(sql_err)?;
            let memories: Vec<MemoryId> =
                serde_json::from_str(&r.get::<_, String>(8).map_err(sql_err)?)
                    .map_err(Error::storage)?;
            sink(ExportRecord::Entity(Box::new(EntityRecord {
                user_id: r.get(1).map_err(sql_err)?,
                agent_id: r.get(2).map_err(sql_err)?,
                run_id: r.get(3).map_err(sql_err)?,
                entity: Entity {
                    id: EntityId(uuid_of(&id)?),
                    name: r.get(4).map_err(sql_err)?,
                    normalized: r.get(5).map_err(sql_err)?,
                    entity_type: r.get(6).map_err(sql_err)?,
                    created_at: from_ms(r.get(7).map_err(sql_err)?),
                },
                memories,
            })))?;
        }
    }
    for e in crate::relations::export_edges(conn)? {
        sink(ExportRecord::Relation(Box::new(e)))?;
    }
    for seg in crate::tiers::all_segments(conn)? {
        sink(ExportRecord::Segment(Box::new(seg)))?;
    }
    for p in crate::tiers::all_pages(conn)? {
        sink(ExportRecord::Page(Box::new(p)))?;
    }
    {
        let mut st = conn
            .prepare("SELECT scope_key, key, request_hash, outcome, created_at FROM idempotency ORDER BY scope_key, key")
            .map_err(sql_err)?;
        let mut rows = st.query([]).map_err(sql_err)?;
        while let Some(r) = rows.next().map_err(sql_err)? {
            let outcome: String = r.get(3).map_err(sql_err)?;
            sink(ExportRecord::Idempotency(Box::new(IdempotencyRecord {
                scope_key: r.get(0).map_err(sql_err)?,
                key: r.get(1).map_err(sql_err)?,
                request_hash: r.get(2).map_err(sql_err)?,
                outcome: serde_json::from_str(&outcome).map_err(Error::storage)?,
                created_at: from_ms(r.get(4).map_err(sql_err)?),
            })))?;
        }
    }
    crate::blocks::export(conn, sink)
}

/// What an import has done so far: core's [`ImportState`], and the segments it wrote, whose
/// vectors are recomputed at the end.
#[derive(Default)]
pub(crate) struct Imported {
    pub rules: ImportState,
    pub segments: HashSet<SegmentId>,
}

impl SqliteStore {
    /// Imports one record of the kinds `export_rest` writes; returns rows written.
    pub(crate) fn import_rest(
        tx: &Transaction<'_>,
        rec: &ExportRecord,
        vector: Option<&[f32]>,
        state: &mut Imported,
    ) -> Result<u64> {
        match rec {
            ExportRecord::IndexText {
                memory_id,
                index_text,
            } => import_index_text(tx, memory_id, index_text, state),
            ExportRecord::History(h) => import_history(tx, h),
            ExportRecord::Entity(r) => import_entity(tx, r),
            ExportRecord::Relation(e) => crate::relations::import_edge(tx, e),
            ExportRecord::Segment(s) => {
                let dim = Self::dimension_of(tx)?;
                let n = crate::tiers::import_segment(tx, s, dim)?;
                if n > 0 {
                    state.segments.insert(s.id);
                }
                Ok(n)
            }
            ExportRecord::Page(p) => {
                let v = imported_page_vector(vector, Self::dimension_of(tx)?)?;
                crate::tiers::import_page(tx, p, &vector_to_blob(v))
            }
            ExportRecord::Idempotency(r) => {
                let outcome = serde_json::to_string(&r.outcome).map_err(Error::storage)?;
                Ok(tx
                    .execute(
                        "INSERT OR IGNORE INTO idempotency (scope_key, key, request_hash, outcome, created_at) \
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![r.scope_key, r.key, r.request_hash, outcome, r.created_at.timestamp_millis()],
                    )
                    .map_err(sql_err)? as u64)
            }
            ExportRecord::Block(r) => crate::blocks::import(tx, r),
            ExportRecord::Memory(_) | ExportRecord::Message(_) | ExportRecord::Link(_) => Err(
                Error::internal("memories, messages and links are imported by import_records"),
            ),
        }
    }

    /// The end of an import: segments written by it get the normalised mean of their pages'
    /// vectors.
    pub(crate) fn finish_import(tx: &Transaction<'_>, state: &Imported) -> Result<()> {
        for id in &state.segments {
            crate::tiers::set_vector_from_pages(tx, &id.to_string())?;
        }
        Ok(())
    }
}

/// An imported memory's index text (its context window), put in the lexical index when the
/// memory is indexed there; nothing for a memory this import did not write.
fn import_index_text(
    tx: &Transaction<'_>,
    memory_id: &MemoryId,
    index_text: &str,
    state: &Imported,
) -> Result<u64> {
    if !state.rules.imported.contains(memory_id) {
        return Ok(0);
    }
    let seq: i64 = tx
        .query_row(
            "SELECT seq FROM memories WHERE id = ?1",
            [memory_id.to_string()],
            |r| r.get(0),
        )
        .map_err(sql_err)?;
    tx.execute(
        "UPDATE memories SET index_text = ?1 WHERE seq = ?2",
        params![index_text, seq],
    )
    .map_err(sql_err)?;
    if tx
        .execute("DELETE FROM memories_fts WHERE rowid = ?1", [seq])
        .map_err(sql_err)?
        > 0
    {
        tx.execute(
            "INSERT INTO memories_fts (rowid, body) VALUES (?1, ?2)",
            params![seq, index_text],
        )
        .map_err(sql_err)?;
        log_change(tx, seq, "put")?;
    }
    Ok(1)
}

/// A history event, unless the same event is already there; its id is kept when free.
fn import_history(tx: &Transaction<'_>, h: &HistoryRecord) -> Result<u64> {
    Scope::from_parts(
        h.user_id.as_deref(),
        h.agent_id.as_deref(),
        h.run_id.as_deref(),
    )?;
    let e = &h.event;
    let exists: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM history WHERE memory_id = ?1 AND event = ?2 \
                 AND created_at = ?3 AND new_text IS ?4 AND old_text IS ?5)",
            params![
                e.memory_id.to_string(),
                e.event.as_str(),
                e.created_at.timestamp_millis(),
                e.new_memory,
                e.old_memory
            ],
            |r| r.get(0),
        )
        .map_err(sql_err)?;
    if exists {
        return Ok(0);
    }
    let id_free: bool = tx
        .query_row(
            "SELECT NOT EXISTS (SELECT 1 FROM history WHERE id = ?1)",
            [e.id],
            |r| r.get(0),
        )
        .map_err(sql_err)?;
    tx.execute(
            "INSERT INTO history (id, memory_id, user_id, agent_id, run_id, event, old_text, new_text, \
             old_metadata, new_metadata, actor, role, reason, request_id, created_at, old_note, new_note) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
            params![
                id_free.then_some(e.id), e.memory_id.to_string(), h.user_id, h.agent_id, h.run_id,
                e.event.as_str(), e.old_memory, e.new_memory,
                e.old_metadata.as_ref().map(metadata_text), e.new_metadata.as_ref().map(metadata_text),
                e.actor, e.role.map(|r| r.as_str()), e.reason, e.request_id,
                e.created_at.timestamp_millis(), e.old_note.as_ref().map(note_text),
                e.new_note.as_ref().map(note_text)
            ],
        )
        .map_err(sql_err)?;
    Ok(1)
}

/// An entity and its links to the memories of its scope that exist.
fn import_entity(tx: &Transaction<'_>, r: &EntityRecord) -> Result<u64> {
    Scope::from_parts(
        r.user_id.as_deref(),
        r.agent_id.as_deref(),
        r.run_id.as_deref(),
    )?;
    let e = &r.entity;
    let mut n = tx
            .execute(
                "INSERT OR IGNORE INTO entities (id, user_id, agent_id, run_id, name, normalized, entity_type, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    e.id.to_string(), r.user_id, r.agent_id, r.run_id, e.name, e.normalized,
                    e.entity_type, e.created_at.timestamp_millis()
                ],
            )
            .map_err(sql_err)? as u64;
    for m in &r.memories {
        let seq: Option<i64> = tx
                .query_row(
                    "SELECT seq FROM memories WHERE id = ?1 AND user_id IS ?2 AND agent_id IS ?3 AND run_id IS ?4",
                    params![m.to_string(), r.user_id, r.agent_id, r.run_id],
                    |row| row.get(0),
                )
                .optional()
                .map_err(sql_err)?;
        if let Some(seq) = seq {
            n += tx
                    .execute(
                        "INSERT OR IGNORE INTO entity_memories (entity_id, memory_id, memory_seq) VALUES (?1, ?2, ?3)",
                        params![e.id.to_string(), m.to_string(), seq],
                    )
                    .map_err(sql_err)? as u64;
        }
    }
    tx.execute(
            "UPDATE entities SET mentions = (SELECT COUNT(*) FROM entity_memories em WHERE em.entity_id = entities.id) \
             WHERE id = ?1",
            [e.id.to_string()],
        )
        .map_err(sql_err)?;
    Ok(n)
}

impl Transfer for SqliteStore {
    fn export(&self, sink: &mut dyn FnMut(ExportRecord) -> Result<()>) -> Result<()> {
        self.read(|conn| {
            let tx = conn.unchecked_transaction().map_err(sql_err)?;
            {
                let mut stmt = tx
                    .prepare(&format!(
                        "SELECT g.seq, {MESSAGE_COLS} FROM messages g ORDER BY g.seq"
                    ))
                    .map_err(sql_err)?;
                let mut rows = stmt.query([]).map_err(sql_err)?;
                while let Some(r) = rows.next().map_err(sql_err)? {
                    sink(ExportRecord::Message(Box::new(
                        message_from_row_offset(r).map_err(sql_err)?,
                    )))?;
                }
            }
            let mut after = 0i64;
            loop {
                let batch = with_sources(
                    &tx,
                    query_memories(
                        &tx,
                        "m.seq > ?",
                        "ORDER BY m.seq LIMIT 500",
                        &[Sql::Integer(after)],
                    )?,
                )?;
                let Some((last, _)) = batch.last() else { break };
                after = *last;
                for (_, m) in batch {
                    sink(ExportRecord::Memory(Box::new(m)))?;
                }
            }
            Self::export_links(&tx, sink)?;
            crate::transfer::export_rest(&tx, sink)?;
            tx.finish().map_err(sql_err)
        })
    }

    fn import(&self, records: Vec<(ExportRecord, Option<Vec<f32>>)>) -> Result<u64> {
        self.write_tx(|tx| {
            let mut written = 0u64;
            let mut state = Imported {
                rules: ImportState::scan(&records),
                ..Imported::default()
            };
            for (rec, vector) in &records {
                match rec {
                    ExportRecord::Message(m) => {
                        // Records built in code skip deserialisation's scope check.
                        check_imported_message(m)?;
                        written += u64::from(insert_message(tx, m)?);
                    }
                    ExportRecord::Link(l) => {
                        written += Self::import_link(tx, l)?;
                    }
                    ExportRecord::Memory(m) => {
                        let exists: bool = tx
                            .query_row_cached(
                                "SELECT EXISTS (SELECT 1 FROM memories WHERE id = ?1)",
                                [m.id.to_string()],
                                |r| r.get(0),
                            )
                            .map_err(sql_err)?;
                        if exists {
                            continue;
                        }
                        let new =
                            ImportedMemory::check(m, vector.as_deref(), || Self::dimension_of(tx))?;
                        new.check_sources(&state.rules, |id| stored_message_owners(tx, id))?;
                        insert_memory(tx, &MemoryRow::imported(&new))?;
                        if let Some(ctx) = new.written(&mut state.rules) {
                            history(tx, &new.add_event(&ctx))?;
                        }
                        written += 1;
                    }
                    other => {
                        written += Self::import_rest(tx, other, vector.as_deref(), &mut state)?;
                    }
                }
            }
            Self::finish_import(tx, &state)?;
            Ok(written)
        })
    }
}

/// The owners (scope keys) of the stored message `id`, for an import's sources check.
fn stored_message_owners(tx: &Transaction<'_>, id: MessageId) -> Result<Vec<String>> {
    let parts: Option<(Option<String>, Option<String>, Option<String>)> = tx
        .query_row(
            "SELECT user_id, agent_id, run_id FROM messages WHERE id = ?1",
            [id.to_string()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(sql_err)?;
    match parts {
        None => Ok(Vec::new()),
        Some((u, a, r)) => Ok(vec![Scope::from_parts(
            u.as_deref(),
            a.as_deref(),
            r.as_deref(),
        )?
        .key()]),
    }
}
