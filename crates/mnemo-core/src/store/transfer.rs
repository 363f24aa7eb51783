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
            crate::limits::check_json_no_nul("record", &v).and_then(|()| check_record_times(r))
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
            "{count} record(s) hold a NUL character (U+0000) or a time outside the years \
             0001-9999, which no add takes: {}{}; nothing was written (edit or erase them in \
             the source first)",
            bad.join(", "),
            if count > bad.len() { ", …" } else { "" }
        ),
    ))
}

/// The times of a memory or message record fall in the years every add takes.
fn check_record_times(r: &ExportRecord) -> crate::Result<()> {
    use crate::limits::check_timestamp;
    match r {
        ExportRecord::Memory(m) => {
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
        }
        ExportRecord::Message(m) => {
            check_timestamp("created_at", m.created_at)?;
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
