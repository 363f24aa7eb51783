//! Rows as mnemo types. Times are epoch milliseconds (`BIGINT`), ids are `UUID`, metadata and
//! note fields are `JSONB`, enums are their `as_str` text. Columns are read by name, so a query
//! may select them in any order as long as it selects the ones a decoder reads (the `*_COLUMNS`
//! lists are the usual select lists).
//!
//! Metadata keeps its JSON types exactly: JSONB stores numbers as `numeric`, which keeps `2.0`
//! a decimal (read back as a float), `18446744073709551615` exact and `"0012"` a string. Key
//! order is JSONB's (by length, then bytes); JSON objects compare without regard to order.

use chrono::{DateTime, TimeZone, Utc};
use mnemo_core::time::EventTime;
use mnemo_core::{
    Entity, EntityId, Error, HistoryEvent, Link, Memory, MemoryId, Message, MessageId, Metadata,
    NoteFields, Result, Scope, Timestamp,
};
use postgres::types::FromSql;
use postgres::Row;
use serde_json::Value;

/// The select list `memory_from_row` reads (`memories` aliased `m`), `seq` first.
pub(crate) const MEMORY_COLUMNS: &str =
    "m.seq, m.id, m.text, m.kind, m.state, m.user_id, m.agent_id, m.run_id, m.metadata, m.hash, \
     m.created_at, m.updated_at, m.expires_at, m.valid_from, m.valid_until, m.actor, m.role, \
     m.access_count, m.last_accessed_at, m.note, m.event_time";

/// The select list `message_from_row` reads (`messages` aliased `g`).
pub(crate) const MESSAGE_COLUMNS: &str =
    "g.seq, g.id, g.user_id, g.agent_id, g.run_id, g.session_id, g.role, g.name, g.content, \
     g.created_at";

/// The select list `history_from_row` reads (`history` aliased `h`).
pub(crate) const HISTORY_COLUMNS: &str =
    "h.id, h.memory_id, h.event, h.old_text, h.new_text, h.old_metadata, h.new_metadata, \
     h.actor, h.role, h.reason, h.request_id, h.created_at, h.old_note, h.new_note";

/// The select list `link_from_row` reads (`links` aliased `l`).
pub(crate) const LINK_COLUMNS: &str =
    "l.from_id, l.to_id, l.kind, l.strength, l.author, l.created_at, l.reason";

/// The select list `entity_from_row` reads (`entities` aliased `e`).
pub(crate) const ENTITY_COLUMNS: &str = "e.id, e.name, e.normalized, e.entity_type, e.created_at";

/// A column of `row`, or a storage error naming it (a decode failure means the row is not what
/// mnemo wrote: never a connection problem, so not `pg_err`).
pub(crate) fn col<'a, T: FromSql<'a>>(row: &'a Row, name: &str) -> Result<T> {
    row.try_get(name)
        .map_err(|e| Error::storage(format!("column {name}: {e}")))
}

/// Epoch milliseconds as a timestamp (out-of-range values clamp to the earliest instant).
pub(crate) fn from_ms(ms: i64) -> Timestamp {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

pub(crate) fn ms(t: Timestamp) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn opt_ms(t: Option<Timestamp>) -> Option<i64> {
    t.map(ms)
}

fn time(row: &Row, name: &str) -> Result<Timestamp> {
    col::<i64>(row, name).map(from_ms)
}

fn opt_time(row: &Row, name: &str) -> Result<Option<Timestamp>> {
    Ok(col::<Option<i64>>(row, name)?.map(from_ms))
}

/// An enum stored as its text.
fn parsed<T: std::str::FromStr<Err = Error>>(row: &Row, name: &str) -> Result<T> {
    col::<String>(row, name)?.parse()
}

fn opt_parsed<T: std::str::FromStr<Err = Error>>(row: &Row, name: &str) -> Result<Option<T>> {
    col::<Option<String>>(row, name)?
        .map(|s| s.parse())
        .transpose()
}

/// A JSONB value that must be an object (metadata).
pub(crate) fn metadata_from_value(v: Value) -> Result<Metadata> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(Error::storage(format!(
            "metadata is a JSON {}, not an object",
            json_type(&other)
        ))),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Metadata as the JSONB parameter a write binds.
pub(crate) fn metadata_value(m: &Metadata) -> Value {
    Value::Object(m.clone())
}

fn opt_metadata(row: &Row, name: &str) -> Result<Option<Metadata>> {
    col::<Option<Value>>(row, name)?
        .map(metadata_from_value)
        .transpose()
}

/// A note's fields from their JSONB column (`None` for memories that are not notes).
pub(crate) fn note_from_value(v: Option<Value>) -> Result<Option<NoteFields>> {
    v.map(|v| serde_json::from_value(v).map_err(|e| Error::storage(format!("note fields: {e}"))))
        .transpose()
}

/// A memory's event time from its JSONB column (`None` when it has none).
pub(crate) fn event_time_from_value(v: Option<Value>) -> Result<Option<EventTime>> {
    v.map(|v| serde_json::from_value(v).map_err(|e| Error::storage(format!("event time: {e}"))))
        .transpose()
}

/// An event time as the JSONB parameter a write binds.
pub(crate) fn event_time_value(e: &EventTime) -> Value {
    serde_json::to_value(e).unwrap_or(Value::Null)
}

/// A note's fields as the JSONB parameter a write binds.
pub(crate) fn note_value(n: &NoteFields) -> Value {
    serde_json::to_value(n).unwrap_or(Value::Null)
}

/// The owner a row's `user_id`, `agent_id` and `run_id` columns name.
pub(crate) fn scope_from_row(row: &Row) -> Result<Scope> {
    let u: Option<String> = col(row, "user_id")?;
    let a: Option<String> = col(row, "agent_id")?;
    let r: Option<String> = col(row, "run_id")?;
    Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref())
}

/// A memory from a row selected with [`MEMORY_COLUMNS`] (its `sources` are left empty: they
/// live in `memory_sources`, see `read::with_sources`).
pub(crate) fn memory_from_row(row: &Row) -> Result<Memory> {
    Ok(Memory {
        id: MemoryId(col(row, "id")?),
        text: col(row, "text")?,
        kind: parsed(row, "kind")?,
        state: parsed(row, "state")?,
        user_id: col(row, "user_id")?,
        agent_id: col(row, "agent_id")?,
        run_id: col(row, "run_id")?,
        metadata: metadata_from_value(col(row, "metadata")?)?,
        hash: col(row, "hash")?,
        created_at: time(row, "created_at")?,
        updated_at: time(row, "updated_at")?,
        expires_at: opt_time(row, "expires_at")?,
        valid_from: opt_time(row, "valid_from")?,
        valid_until: opt_time(row, "valid_until")?,
        actor: col(row, "actor")?,
        role: opt_parsed(row, "role")?,
        sources: Vec::new(),
        access_count: col::<i64>(row, "access_count")?.max(0) as u64,
        last_accessed_at: opt_time(row, "last_accessed_at")?,
        note: note_from_value(col(row, "note")?)?,
        event_time: event_time_from_value(col(row, "event_time")?)?,
    })
}

/// `(seq, memory)`: the candidate key and the memory of a [`MEMORY_COLUMNS`] row.
pub(crate) fn keyed_memory_from_row(row: &Row) -> Result<(i64, Memory)> {
    Ok((col(row, "seq")?, memory_from_row(row)?))
}

/// A message from a row selected with [`MESSAGE_COLUMNS`].
pub(crate) fn message_from_row(row: &Row) -> Result<Message> {
    Ok(Message {
        id: MessageId(col(row, "id")?),
        user_id: col(row, "user_id")?,
        agent_id: col(row, "agent_id")?,
        run_id: col(row, "run_id")?,
        session_id: col(row, "session_id")?,
        role: parsed(row, "role")?,
        name: col(row, "name")?,
        content: col(row, "content")?,
        created_at: time(row, "created_at")?,
    })
}

/// A history event from a row selected with [`HISTORY_COLUMNS`].
pub(crate) fn history_from_row(row: &Row) -> Result<HistoryEvent> {
    Ok(HistoryEvent {
        id: col(row, "id")?,
        memory_id: MemoryId(col(row, "memory_id")?),
        event: parsed(row, "event")?,
        old_memory: col(row, "old_text")?,
        new_memory: col(row, "new_text")?,
        old_metadata: opt_metadata(row, "old_metadata")?,
        new_metadata: opt_metadata(row, "new_metadata")?,
        actor: col(row, "actor")?,
        role: opt_parsed(row, "role")?,
        reason: col(row, "reason")?,
        request_id: col(row, "request_id")?,
        created_at: time(row, "created_at")?,
        old_note: note_from_value(col(row, "old_note")?)?,
        new_note: note_from_value(col(row, "new_note")?)?,
    })
}

/// A link from a row selected with [`LINK_COLUMNS`].
pub(crate) fn link_from_row(row: &Row) -> Result<Link> {
    Ok(Link {
        from: MemoryId(col(row, "from_id")?),
        to: MemoryId(col(row, "to_id")?),
        kind: parsed(row, "kind")?,
        strength: col(row, "strength")?,
        author: parsed(row, "author")?,
        created_at: time(row, "created_at")?,
        reason: col(row, "reason")?,
    })
}

/// An entity from a row selected with [`ENTITY_COLUMNS`].
pub(crate) fn entity_from_row(row: &Row) -> Result<Entity> {
    Ok(Entity {
        id: EntityId(col(row, "id")?),
        name: col(row, "name")?,
        normalized: col(row, "normalized")?,
        entity_type: col(row, "entity_type")?,
        created_at: time(row, "created_at")?,
    })
}
