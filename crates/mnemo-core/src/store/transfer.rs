//! Export and import: the [`Transfer`] capability, the exported record types and the check
//! every import runs first ([`check_records`]).

use super::*;

/// A record of an export stream; `import` reads the same records back.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ExportRecord {
    Memory(Box<Memory>),
    Message(Box<Message>),
    /// Exported after every memory; imported after the memories of its import.
    Link(Box<Link>),
    /// The lexical index text of the memory just before it, where it differs from its text
    /// (a conversation turn's context window, a note's enriched text). Imports also embed it.
    IndexText {
        memory_id: MemoryId,
        index_text: String,
    },
    /// One history event with its owner (history outlives hard-deleted memories). When an
    /// import carries a memory's events, they replace the `ADD` event an import would write.
    History(Box<HistoryRecord>),
    /// An entity of an exact scope and the memories linked to it.
    Entity(Box<EntityRecord>),
    /// A mid-term segment (its vector is recomputed from its pages on import).
    Segment(Box<crate::tier::Segment>),
    /// A page of the hierarchy (its vector is recomputed from its text on import).
    Page(Box<crate::tier::StoredPage>),
    /// A stored idempotency result, so a retry after a move still replays.
    Idempotency(Box<IdempotencyRecord>),
    /// An edge between entities with its sources; exported after the entities, imported after
    /// them (its ends and memories must be in its scope).
    Relation(Box<Relation>),
    /// A core memory block with its attachments and whole history.
    Block(Box<BlockRecord>),
}

/// Checks records before an import (or a migration) writes any: no key or string of any record
/// holds U+0000 (the input rule of [`crate::limits::check_no_nul`], which PostgreSQL needs and
/// which records from a SQLite store written before the rule may break). The error names up to
/// ten offending records by kind, id and field.
pub fn check_records(records: &[ExportRecord]) -> crate::Result<()> {
    const NAMED: usize = 10;
    let mut bad: Vec<String> = Vec::new();
    let mut count = 0usize;
    for (i, r) in records.iter().enumerate() {
        let v = serde_json::to_value(r).map_err(|e| crate::Error::internal(e.to_string()))?;
        if let Err(e) =
            crate::limits::check_json_no_nul("record", &v).and_then(|()| check_record_values(r))
        {
            count += 1;
            if bad.len() < NAMED {
                let kind = v["type"].as_str().unwrap_or("record");
                let id = ["id", "memory_id", "message_id", "key"]
                    .iter()
                    .find_map(|k| v[*k].as_str())
                    .map_or_else(|| format!("#{i}"), str::to_string);
                let field = match &e {
                    crate::Error::InvalidInput { field, .. } => field.clone(),
                    _ => String::new(),
                };
                bad.push(format!("{kind} {id} ({field})"));
            }
        }
    }
    if count == 0 {
        return Ok(());
    }
    Err(crate::Error::invalid(
        "records",
        format!(
            "{count} record(s) hold a NUL character (U+0000), a time outside the years \
             0001-9999 or a read count above {}, which no add takes: {}{}; nothing was written \
             (edit or erase them in the source first)",
            i64::MAX,
            bad.join(", "),
            if count > bad.len() { ", …" } else { "" }
        ),
    ))
}

/// The times of a memory, message or segment record fall in the years every add takes, and a
/// memory's read count fits the stores' signed 64-bit column.
fn check_record_values(r: &ExportRecord) -> crate::Result<()> {
    use crate::limits::check_timestamp;
    match r {
        ExportRecord::Memory(m) => {
            if i64::try_from(m.access_count).is_err() {
                return Err(crate::Error::invalid(
                    "access_count",
                    format!("above {}, the largest read count a store keeps", i64::MAX),
                ));
            }
            check_timestamp("created_at", m.created_at)?;
            check_timestamp("updated_at", m.updated_at)?;
            for (field, t) in [
                ("expires_at", m.expires_at),
                ("valid_from", m.valid_from),
                ("valid_until", m.valid_until),
            ] {
                if let Some(t) = t {
                    check_timestamp(field, t)?;
                }
            }
            if let Some(e) = &m.event_time {
                super::check_event_time("event_time", e)?;
            }
        }
        ExportRecord::Message(m) => {
            check_timestamp("created_at", m.created_at)?;
        }
        ExportRecord::Segment(s) => {
            if let Some(e) = &s.event_time {
                super::check_event_time("event_time", e)?;
            }
        }
        _ => {}
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRecord {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub event: HistoryEvent,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntityRecord {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub entity: Entity,
    pub memories: Vec<MemoryId>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    pub scope_key: String,
    pub key: String,
    pub request_hash: String,
    pub outcome: serde_json::Value,
    pub created_at: Timestamp,
}

/// Export and import of every record.
pub trait Transfer: Send + Sync {
    /// Every memory (any state) and message, for `export`.
    fn export(&self, sink: &mut dyn FnMut(ExportRecord) -> Result<()>) -> Result<()>;
    /// Writes exported records back; records whose id exists are skipped. Returns how many were
    /// written. Memories need their vectors.
    fn import(&self, records: Vec<(ExportRecord, Option<Vec<f32>>)>) -> Result<u64>;
}

/// What an import has done so far, for the records that refer back to it (the import rules
/// every backend keeps: a record whose id the store holds is skipped; an index text applies to
/// a memory of this import only; a memory whose history the import carries gets that history
/// instead of the synthetic `ADD` an import writes otherwise).
#[derive(Debug, Default)]
pub struct ImportState {
    /// Memories written by this import.
    pub imported: std::collections::HashSet<MemoryId>,
    /// Memories whose history the import carries.
    pub with_history: std::collections::HashSet<MemoryId>,
    /// The owner (scope key) of every message the import carries, for the sources check.
    pub messages: std::collections::HashMap<MessageId, String>,
}

impl ImportState {
    /// The state at the start of importing `records`.
    pub fn scan(records: &[(ExportRecord, Option<Vec<f32>>)]) -> Self {
        let with_history = records
            .iter()
            .filter_map(|(r, _)| match r {
                ExportRecord::History(h) => Some(h.event.memory_id),
                _ => None,
            })
            .collect();
        let messages = records
            .iter()
            .filter_map(|(r, _)| match r {
                ExportRecord::Message(m) => m.scope().ok().map(|s| (m.id, s.key())),
                _ => None,
            })
            .collect();
        Self {
            with_history,
            messages,
            ..Self::default()
        }
    }
}

/// Checks an imported message as an add checks its turns: its owner, and a content an add
/// takes (at most [`crate::limits::MAX_TEXT_CHARS`] characters, not blank) — or empty, what an
/// erase leaves of a turn.
pub fn check_imported_message(m: &Message) -> Result<Scope> {
    let scope = m.scope()?;
    if !m.content.is_empty() {
        crate::limits::check_text(&format!("message {}: content", m.id), &m.content)?;
    }
    Ok(scope)
}

/// An exported memory as an import writes it (after [`ImportedMemory::check`]).
#[derive(Debug, Clone)]
pub struct ImportedMemory<'a> {
    pub memory: &'a Memory,
    /// Its owner.
    pub scope: Scope,
    /// A note's fields, checked as an add checks them.
    pub note: Option<NoteFields>,
    /// A note's lexical index text: its enriched text (an exported index text follows as its
    /// own record).
    pub index_text: Option<String>,
    /// Its vector; `None` only for a deleted memory (which holds none).
    pub vector: Option<&'a [f32]>,
}

impl<'a> ImportedMemory<'a> {
    /// Checks an exported memory before it is written: a valid owner, a vector of the store's
    /// dimension (`dim`) unless it is deleted, note fields an add would take.
    pub fn check(
        memory: &'a Memory,
        vector: Option<&'a [f32]>,
        dim: impl FnOnce() -> Result<usize>,
    ) -> Result<Self> {
        let scope = memory.scope()?;
        // The text an add would take; empty only for what an erase leaves (a deleted memory).
        if !(memory.text.is_empty() && memory.state == MemoryState::Deleted) {
            crate::limits::check_text(&format!("memory {}: text", memory.id), &memory.text)?;
        }
        if memory.state != MemoryState::Deleted {
            let v = vector
                .ok_or_else(|| crate::Error::invalid("vector", "missing for an imported memory"))?;
            check_vector("vector", v, dim()?)?;
        }
        let note = memory
            .note
            .as_ref()
            .map(NoteFields::validated)
            .transpose()?;
        let index_text = note
            .as_ref()
            .map(|n| crate::note::enriched_text(&memory.text, n));
        Ok(Self {
            memory,
            scope,
            note,
            index_text,
            vector,
        })
    }

    /// Checks that every source of the memory is a message of its own scope: one this import
    /// carries, or one the store holds (`stored`: the scope keys of the stored messages with
    /// this id). A source naming another scope's message is refused — an erase of the memory
    /// with its sources would empty that message — and nothing else is: a source found nowhere
    /// names no message (an erase would find none).
    pub fn check_sources(
        &self,
        state: &ImportState,
        mut stored: impl FnMut(MessageId) -> Result<Vec<String>>,
    ) -> Result<()> {
        let own = self.scope.key();
        for (k, id) in self.memory.sources.iter().enumerate() {
            let owners = match state.messages.get(id) {
                Some(key) => vec![key.clone()],
                None => stored(*id)?,
            };
            if owners.iter().any(|o| *o != own) {
                return Err(crate::Error::invalid(
                    format!("memory {}: sources[{k}]", self.memory.id),
                    format!(
                        "message {id} belongs to another scope; a memory's sources must be messages of its own scope (nothing was imported)"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Records the memory as imported; returns the context of its `ADD` event, `None` when the
    /// import carries the memory's own history.
    pub fn written(&self, state: &mut ImportState) -> Option<WritePlan> {
        state.imported.insert(self.memory.id);
        (!state.with_history.contains(&self.memory.id)).then(|| WritePlan {
            reason: Some("import".into()),
            ..WritePlan::default()
        })
    }

    /// The `ADD` event an import writes for the memory (see [`ImportedMemory::written`]).
    pub fn add_event<'c>(&'c self, ctx: &'c WritePlan) -> HistoryEntry<'c> {
        let m = self.memory;
        HistoryEntry {
            new_text: Some(&m.text),
            new_metadata: Some(&m.metadata),
            ..HistoryEntry::new(
                m.id,
                &self.scope,
                HistoryKind::Add,
                ctx,
                m.created_at.timestamp_millis(),
            )
        }
    }
}

/// An imported page's vector: present and of the store's dimension.
pub fn imported_page_vector(vector: Option<&[f32]>, dim: usize) -> Result<&[f32]> {
    let v =
        vector.ok_or_else(|| crate::Error::invalid("vector", "missing for an imported page"))?;
    check_vector("vector", v, dim)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::fixtures::memory;

    #[test]
    fn a_read_count_past_the_stores_column_is_refused_by_name() {
        let mut m = memory(MemoryKind::Fact, "Ann lives in Oslo");
        m.access_count = u64::MAX;
        let r = ExportRecord::Memory(Box::new(m.clone()));
        let err = check_records(&[r]).unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("(access_count)"), "{err}");
        m.access_count = i64::MAX as u64;
        assert!(check_records(&[ExportRecord::Memory(Box::new(m))]).is_ok());
    }

    #[test]
    fn an_imported_memory_needs_its_vector_unless_deleted() {
        let m = memory(MemoryKind::Fact, "Ann lives in Oslo");
        let e = ImportedMemory::check(&m, None, || Ok(2)).unwrap_err();
        assert!(
            e.to_string().contains("missing for an imported memory"),
            "{e}"
        );
        assert!(ImportedMemory::check(&m, Some(&[1.0]), || Ok(2)).is_err());
        assert!(ImportedMemory::check(&m, Some(&[1.0, 0.0]), || Ok(2)).is_ok());
        let mut gone = m.clone();
        gone.state = MemoryState::Deleted;
        let ok = ImportedMemory::check(&gone, None, || unreachable!()).unwrap();
        assert_eq!((ok.vector, ok.index_text), (None, None));
    }

    #[test]
    fn a_note_is_indexed_by_its_enriched_text_and_carried_history_replaces_the_add() {
        let mut m = memory(MemoryKind::Note, "tomatoes");
        m.note = Some(NoteFields {
            keywords: vec!["garden".into()],
            tags: Vec::new(),
            context: "Ann's balcony".into(),
        });
        let ok = ImportedMemory::check(&m, Some(&[1.0]), || Ok(1)).unwrap();
        assert_eq!(
            ok.index_text.as_deref(),
            Some(crate::note::enriched_text("tomatoes", m.note.as_ref().unwrap()).as_str())
        );
        let mut state = ImportState::default();
        let ctx = ok.written(&mut state).expect("an ADD event");
        assert_eq!(ctx.reason.as_deref(), Some("import"));
        assert_eq!(ok.add_event(&ctx).event, HistoryKind::Add);
        assert!(state.imported.contains(&m.id));
        state.with_history.insert(m.id);
        assert!(ok.written(&mut state).is_none());
    }

    #[test]
    fn an_imported_page_needs_a_vector_of_the_store() {
        let e = imported_page_vector(None, 2).unwrap_err();
        assert!(
            e.to_string().contains("missing for an imported page"),
            "{e}"
        );
        assert!(imported_page_vector(Some(&[1.0]), 2).is_err());
        assert!(imported_page_vector(Some(&[f32::NAN, 0.0]), 2).is_err());
    }

    #[test]
    fn a_segment_record_with_an_inverted_event_time_is_refused_by_name() {
        let now = chrono::Utc::now();
        let e = crate::time::EventTime {
            start: now,
            end: now - chrono::Duration::days(1),
            granularity: crate::time::Granularity::Day,
            phrase: String::new(),
            source: crate::time::EventTimeSource::Text,
        };
        let segment = crate::tier::Segment {
            id: SegmentId::new(),
            scope: Scope::user("u").unwrap(),
            summary: "s".into(),
            summary_author: Author::Rule,
            keywords: Vec::new(),
            vector: Vec::new(),
            page_count: 1,
            length_tokens: 1,
            visits: 0,
            last_visit_at: now,
            created_at: now,
            updated_at: now,
            evicted_at: None,
            version: 1,
            event_time: Some(e),
        };
        let mut r = ExportRecord::Segment(Box::new(segment));
        let err = check_records(std::slice::from_ref(&r)).unwrap_err();
        assert!(err.to_string().contains("event_time"), "{err}");
        if let ExportRecord::Segment(s) = &mut r {
            s.event_time = None;
        }
        assert!(check_records(&[r]).is_ok());
    }
}
