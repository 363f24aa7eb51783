//! Conversions between rows and domain types: times as epoch milliseconds, vectors as
//! little-endian f32 blobs, metadata as JSON text (types preserved by serde_json).

use chrono::{DateTime, TimeZone, Utc};
use mnemo_core::time::EventTime;
use mnemo_core::{Error, HistoryEvent, Memory, MemoryId, Metadata, NoteFields, Timestamp};
use rusqlite::Row;

/// Columns of `memories` in the order `memory_from_row` reads them, after `seq`.
pub(crate) const MEMORY_COLS: &str =
    "m.seq, m.id, m.text, m.kind, m.state, m.user_id, m.agent_id, m.run_id, \
     m.metadata, m.hash, m.created_at, m.updated_at, m.expires_at, m.valid_from, m.valid_until, \
     m.actor, m.role, m.access_count, m.last_accessed_at, m.note, m.event_time";

pub(crate) fn from_ms(ms: i64) -> Timestamp {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

pub(crate) fn opt_ms(t: Option<Timestamp>) -> Option<i64> {
    t.map(|t| t.timestamp_millis())
}

fn parse<T: std::str::FromStr<Err = Error>>(raw: String) -> rusqlite::Result<T> {
    raw.parse().map_err(|e: Error| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

pub(crate) fn metadata_from_text(raw: &str) -> rusqlite::Result<Metadata> {
    serde_json::from_str(raw).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn uuid(raw: String) -> rusqlite::Result<uuid::Uuid> {
    uuid::Uuid::parse_str(&raw).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

/// Reads `(seq, memory)` from a row selected with `MEMORY_COLS`; sources are filled separately.
pub(crate) fn memory_from_row(row: &Row<'_>) -> rusqlite::Result<(i64, Memory)> {
    let role: Option<String> = row.get(16)?;
    let memory = Memory {
        id: MemoryId(uuid(row.get(1)?)?),
        text: row.get(2)?,
        kind: parse(row.get(3)?)?,
        state: parse(row.get(4)?)?,
        user_id: row.get(5)?,
        agent_id: row.get(6)?,
        run_id: row.get(7)?,
        metadata: metadata_from_text(&row.get::<_, String>(8)?)?,
        hash: row.get(9)?,
        created_at: from_ms(row.get(10)?),
        updated_at: from_ms(row.get(11)?),
        expires_at: row.get::<_, Option<i64>>(12)?.map(from_ms),
        valid_from: row.get::<_, Option<i64>>(13)?.map(from_ms),
        valid_until: row.get::<_, Option<i64>>(14)?.map(from_ms),
        actor: row.get(15)?,
        role: role.map(parse).transpose()?,
        sources: Vec::new(),
        access_count: row.get::<_, i64>(17)?.max(0) as u64,
        last_accessed_at: row.get::<_, Option<i64>>(18)?.map(from_ms),
        note: note_from_text(row.get(19)?)?,
        event_time: event_time_from_text(row.get(20)?)?,
    };
    Ok((row.get(0)?, memory))
}

pub(crate) const MESSAGE_COLS: &str =
    "g.id, g.user_id, g.agent_id, g.run_id, g.session_id, g.role, g.name, g.content, g.created_at";

pub(crate) const HISTORY_COLS: &str =
    "id, memory_id, event, old_text, new_text, old_metadata, new_metadata, \
     actor, role, reason, request_id, created_at, old_note, new_note";

pub(crate) fn history_from_row(row: &Row<'_>) -> rusqlite::Result<HistoryEvent> {
    let md = |i: usize| -> rusqlite::Result<Option<Metadata>> {
        row.get::<_, Option<String>>(i)?
            .map(|s| metadata_from_text(&s))
            .transpose()
    };
    let role: Option<String> = row.get(8)?;
    Ok(HistoryEvent {
        id: row.get(0)?,
        memory_id: MemoryId(uuid(row.get(1)?)?),
        event: parse(row.get(2)?)?,
        old_memory: row.get(3)?,
        new_memory: row.get(4)?,
        old_metadata: md(5)?,
        new_metadata: md(6)?,
        actor: row.get(7)?,
        role: role.map(parse).transpose()?,
        reason: row.get(9)?,
        request_id: row.get(10)?,
        created_at: from_ms(row.get(11)?),
        old_note: note_from_text(row.get(12)?)?,
        new_note: note_from_text(row.get(13)?)?,
    })
}

/// A note's fields as stored (JSON text); `None` for memories that are not notes.
pub(crate) fn note_from_text(raw: Option<String>) -> rusqlite::Result<Option<NoteFields>> {
    raw.map(|s| {
        serde_json::from_str(&s).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
        })
    })
    .transpose()
}

/// A memory's event time as stored (JSON text in `event_time`); `None` when it has none.
pub(crate) fn event_time_from_text(raw: Option<String>) -> rusqlite::Result<Option<EventTime>> {
    raw.map(|s| {
        serde_json::from_str(&s).map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
        })
    })
    .transpose()
}

pub(crate) fn event_time_text(e: &EventTime) -> String {
    serde_json::to_string(e).expect("an event time always serialises")
}

pub(crate) fn note_text(n: &NoteFields) -> String {
    serde_json::to_string(n).expect("note fields always serialise")
}

pub(crate) fn vector_to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn blob_to_vector(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub(crate) fn metadata_text(m: &Metadata) -> String {
    serde_json::to_string(m).expect("a JSON map always serialises")
}

/// A database error as the caller should see it: a busy or locked database (another process
/// holds the write lock past the busy timeout) is `unavailable` and worth retrying; a file that
/// is not a database or fails SQLite's checks is `corrupt`; anything else is a storage failure.
pub(crate) fn sql_err(e: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode::{DatabaseBusy, DatabaseCorrupt, DatabaseLocked, NotADatabase};
    match e.sqlite_error_code() {
        Some(DatabaseBusy | DatabaseLocked) => Error::Unavailable {
            component: "store".into(),
            reason: format!("the database is busy ({e}); retry shortly"),
        },
        Some(DatabaseCorrupt | NotADatabase) => Error::Corrupt {
            what: "the SQLite store file".into(),
            reason: format!("{e}; restore a backup (mnemo doctor checks the file)"),
        },
        _ => Error::storage(e),
    }
}

/// `execute` and `query_row` through the connection's statement cache (capacity set in
/// `schema::configure`): the add path runs the same few dozen statements on every write, and
/// parsing them again each time was an eighth of its store work (profiled at 10,000 memories).
pub(crate) trait Cached {
    fn execute_cached<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;
    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>;
}

impl Cached for rusqlite::Connection {
    fn execute_cached<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn query_row_cached<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}
