//! Domain values as row parameters, and the inserts the write path shares with import and the
//! job queue: one message, one memory (with its provenance rows), one history event, one link.
//!
//! Times are epoch milliseconds (`BIGINT`), ids are `UUID`, metadata and note fields `JSONB`,
//! vectors pgvector `vector`. A memory has an embedding exactly when it is not deleted (a
//! deleted memory leaves the dense index, and its generated `lexical` column is NULL too).

use crate::codec::{event_time_value, metadata_value, ms, note_value};
use crate::pg_err;
use mnemo_core::*;
use postgres::error::SqlState;
use postgres::Transaction;

/// The exact scope's columns: `user_id`, `agent_id`, `run_id`.
pub(crate) fn scope_parts(s: &Scope) -> [Option<&str>; 3] {
    [
        s.user_id().map(|v| v.as_str()),
        s.agent_id().map(|v| v.as_str()),
        s.run_id().map(|v| v.as_str()),
    ]
}

/// Inserts a message unless its scope logged its id already; whether it was inserted.
pub(crate) fn insert_message(tx: &mut Transaction<'_>, m: &Message) -> Result<bool> {
    let scope = m.scope()?;
    let n = tx.execute(
        "INSERT INTO messages (scope_key, id, user_id, agent_id, run_id, session_id, role, name, \
         content, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
         ON CONFLICT DO NOTHING",
        &[
            &scope.key(),
            &m.id.0,
            &m.user_id,
            &m.agent_id,
            &m.run_id,
            &m.session_id,
            &m.role.as_str(),
            &m.name,
            &m.content,
            &ms(m.created_at),
        ],
    )
    .map_err(pg_err)?;
    Ok(n == 1)
}

/// Appends a message of an add or a job to the log: kept as it is when logged already, refused
/// when an erase emptied it since (see `Store::write`).
pub(crate) fn log_message(tx: &mut Transaction<'_>, m: &Message) -> Result<()> {
    if insert_message(tx, m)? {
        return Ok(());
    }
    let row = tx
        .query_one(
            "SELECT content = '' FROM messages WHERE scope_key = $1 AND id = $2",
            &[&m.scope()?.key(), &m.id.0],
        )
        .map_err(pg_err)?;
    if row.try_get::<_, bool>(0).map_err(pg_err)? {
        return Err(mnemo_core::erased_message(m.id));
    }
    Ok(())
}

/// Inserts a memory and its provenance rows; returns its candidate key (`seq`). An id the
/// scope already holds is a conflict.
pub(crate) fn insert_memory(tx: &mut Transaction<'_>, m: &MemoryRow<'_>) -> Result<i64> {
    let embedding = match m.state {
        MemoryState::Deleted => None,
        _ => Some(pgvector::Vector::from(
            m.vector
                .ok_or_else(|| Error::invalid("vector", "an indexed memory needs a vector"))?
                .to_vec(),
        )),
    };
    let key = m.scope.key();
    let [u, a, r] = scope_parts(m.scope);
    let row = tx
        .query_one(
            "INSERT INTO memories (scope_key, id, user_id, agent_id, run_id, kind, state, text, \
             index_text, metadata, hash, created_at, updated_at, expires_at, valid_from, \
             valid_until, actor, role, note, embedding, event_start, event_end, event_time, \
             access_count, last_accessed_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, $20, $21, $22, $23, $24, $25) RETURNING seq",
            &[
                &key,
                &m.id.0,
                &u,
                &a,
                &r,
                &m.kind.as_str(),
                &m.state.as_str(),
                &m.text,
                &m.index_text,
                &metadata_value(m.metadata),
                &content_hash(m.text),
                &m.created_at,
                &m.updated_at,
                &m.expires_at,
                &m.valid_from,
                &m.valid_until,
                &m.actor,
                &m.role.map(Role::as_str),
                &m.note.map(note_value),
                &embedding,
                &m.event_time.map(|e| e.start.timestamp_millis()),
                &m.event_time.map(|e| e.end.timestamp_millis()),
                &m.event_time.map(event_time_value),
                &(m.access_count as i64),
                &m.last_accessed_at,
            ],
        )
        .map_err(|e| match e.code() {
            Some(c) if *c == SqlState::UNIQUE_VIOLATION => Error::Conflict {
                reason: format!("memory {} already exists", m.id),
            },
            _ => pg_err(e),
        })?;
    if !m.sources.is_empty() {
        let sources: Vec<uuid::Uuid> = m.sources.iter().map(|s| s.0).collect();
        tx.execute(
            "INSERT INTO memory_sources (scope_key, memory_id, message_id) \
             SELECT $1, $2, unnest($3::uuid[]) ON CONFLICT DO NOTHING",
            &[&key, &m.id.0, &sources],
        )
        .map_err(pg_err)?;
    }
    Ok(row.get(0))
}

/// Appends a history event (see [`HistoryEntry`]).
pub(crate) fn insert_history(tx: &mut Transaction<'_>, e: &HistoryEntry<'_>) -> Result<()> {
    let [u, a, r] = scope_parts(e.owner);
    tx.execute(
        "INSERT INTO history (scope_key, memory_id, user_id, agent_id, run_id, event, old_text, \
         new_text, old_metadata, new_metadata, old_note, new_note, actor, role, reason, \
         request_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
         $14, $15, $16, $17)",
        &[
            &e.owner.key(),
            &e.memory.0,
            &u,
            &a,
            &r,
            &e.event.as_str(),
            &e.old_text,
            &e.new_text,
            &e.old_metadata.map(metadata_value),
            &e.new_metadata.map(metadata_value),
            &e.old_note.map(note_value),
            &e.new_note.map(note_value),
            &e.ctx.actor,
            &e.ctx.role.map(Role::as_str),
            &e.ctx.reason,
            &e.ctx.request_id,
            &e.at,
        ],
    )
    .map_err(pg_err)?;
    Ok(())
}

/// Writes link `l` of the exact scope `owner_key`. On an existing `(from, to, kind)` the new link
/// replaces the old when `replace` (an add), else the old one stays (an import). Returns the
/// rows written.
pub(crate) fn write_link(
    tx: &mut Transaction<'_>,
    owner_key: &str,
    l: &Link,
    replace: bool,
) -> Result<u64> {
    let on_conflict = if replace {
        "DO UPDATE SET strength = EXCLUDED.strength, author = EXCLUDED.author, \
         reason = EXCLUDED.reason, created_at = EXCLUDED.created_at"
    } else {
        "DO NOTHING"
    };
    tx.execute(
        &format!(
            "INSERT INTO links (scope_key, from_id, to_id, kind, strength, author, reason, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
             ON CONFLICT (scope_key, from_id, to_id, kind) {on_conflict}"
        ),
        &[
            &owner_key,
            &l.from.0,
            &l.to.0,
            &l.kind.as_str(),
            &l.strength,
            &l.author.as_str(),
            &l.reason,
            &ms(l.created_at),
        ],
    )
    .map_err(pg_err)
}
