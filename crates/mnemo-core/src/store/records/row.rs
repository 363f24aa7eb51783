//! [`MemoryRow`]: one memory's columns as a backend's insert writes them, made the same way
//! for an add and for an import on every backend.

use super::*;

/// One memory as a backend inserts it: an add's new memory ([`MemoryRow::added`]) or an
/// imported record ([`MemoryRow::imported`]), times in milliseconds.
pub struct MemoryRow<'a> {
    pub id: MemoryId,
    pub scope: &'a Scope,
    pub kind: MemoryKind,
    pub state: MemoryState,
    pub text: &'a str,
    pub index_text: Option<&'a str>,
    pub metadata: &'a Metadata,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: Option<i64>,
    pub valid_from: Option<i64>,
    pub valid_until: Option<i64>,
    pub actor: Option<&'a str>,
    pub role: Option<Role>,
    /// Required unless the memory is deleted (then ignored: deleted memories hold none).
    pub vector: Option<&'a [f32]>,
    pub sources: &'a [MessageId],
    pub note: Option<&'a NoteFields>,
    pub event_time: Option<&'a crate::time::EventTime>,
    /// The read counter and the last read (0 and none for an add; an import keeps its record's).
    pub access_count: u64,
    pub last_accessed_at: Option<i64>,
}

fn ms(t: Timestamp) -> i64 {
    t.timestamp_millis()
}

impl<'a> MemoryRow<'a> {
    /// An add's new memory: active, created and updated at its creation, never read.
    pub fn added(m: &'a NewMemory) -> Self {
        let at = ms(m.created_at);
        Self {
            id: m.id,
            scope: &m.scope,
            kind: m.kind,
            state: MemoryState::Active,
            text: &m.text,
            index_text: m.index_text.as_deref(),
            metadata: &m.metadata,
            created_at: at,
            updated_at: at,
            expires_at: m.expires_at.map(ms),
            valid_from: m.valid_from.map(ms),
            valid_until: None,
            actor: m.actor.as_deref(),
            role: m.role,
            vector: Some(&m.vector),
            sources: &m.sources,
            note: m.note.as_ref(),
            event_time: m.event_time.as_ref(),
            access_count: 0,
            last_accessed_at: None,
        }
    }

    /// An exported memory as [`ImportedMemory::check`] passed it: its own state, times and
    /// read counter, the checked owner, note fields and index text.
    pub fn imported(new: &'a ImportedMemory<'_>) -> Self {
        let m = new.memory;
        Self {
            id: m.id,
            scope: &new.scope,
            kind: m.kind,
            state: m.state,
            text: &m.text,
            index_text: new.index_text.as_deref(),
            metadata: &m.metadata,
            created_at: ms(m.created_at),
            updated_at: ms(m.updated_at),
            expires_at: m.expires_at.map(ms),
            valid_from: m.valid_from.map(ms),
            valid_until: m.valid_until.map(ms),
            actor: m.actor.as_deref(),
            role: m.role,
            vector: new.vector,
            sources: &m.sources,
            note: new.note.as_ref(),
            event_time: m.event_time.as_ref(),
            access_count: m.access_count,
            last_accessed_at: m.last_accessed_at.map(ms),
        }
    }
}
