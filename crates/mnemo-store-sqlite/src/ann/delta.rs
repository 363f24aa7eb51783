//! What the vector index reads from the database: the pre-filter's facts about a key
//! ([`InfoRow`]) and the logged changes a catch-up applies ([`Delta`]).

use crate::codec::{blob_to_vector, sql_err};
use mnemo_core::{MemoryKind, MemoryState, Result};
use rusqlite::{params, Connection};
use std::collections::HashMap;

/// Every indexed memory with what the pre-filter needs of it (a full rebuild reads this).
pub(super) const INFO_SQL: &str =
    "SELECT m.seq, m.user_id, m.agent_id, m.run_id, m.kind, m.state, m.expires_at, \
     COALESCE(m.index_text, m.text) FROM memories m JOIN vectors v ON v.seq = m.seq";

/// What the pre-filter needs of one memory.
pub(crate) struct InfoRow {
    pub(super) user: Option<String>,
    pub(super) agent: Option<String>,
    pub(super) run: Option<String>,
    pub(super) kind: MemoryKind,
    pub(super) active: bool,
    pub(super) expires_at: Option<i64>,
    pub(super) text: String,
}

/// The logged changes after a generation, one per key with the key's latest state (the
/// vector and what the pre-filter needs, or `None` when it is gone), read without touching the
/// index.
pub(crate) struct Delta {
    /// The newest generation read.
    pub(super) generation: i64,
    pub(super) changes: Vec<(u64, Option<Indexed>)>,
}

/// A key's vector and what the pre-filter needs of it.
pub(super) type Indexed = (Vec<f32>, InfoRow);

impl Delta {
    pub(crate) fn read(conn: &Connection, after: i64) -> Result<Self> {
        let mut stmt = conn
            .prepare_cached(
                "SELECT c.generation, c.seq, c.op, v.data, m.user_id, m.agent_id, m.run_id, m.kind, m.state, m.expires_at, \
                 COALESCE(m.index_text, m.text) \
                 FROM vector_changes c LEFT JOIN vectors v ON v.seq = c.seq LEFT JOIN memories m ON m.seq = c.seq \
                 WHERE c.generation > ?1 ORDER BY c.generation",
            )
            .map_err(sql_err)?;
        let mut rows = stmt.query(params![after]).map_err(sql_err)?;
        let mut generation = after;
        let mut at: HashMap<u64, usize> = HashMap::new();
        let mut changes = Vec::new();
        while let Some(row) = rows.next().map_err(sql_err)? {
            generation = generation.max(row.get(0).map_err(sql_err)?);
            let seq: i64 = row.get(1).map_err(sql_err)?;
            let blob: Option<Vec<u8>> = row.get(3).map_err(sql_err)?;
            let kind: Option<String> = row.get(7).map_err(sql_err)?;
            // Every row of a key reads its latest state: a later change may already have
            // removed it. So one entry per key.
            let change = match (blob, kind) {
                (Some(blob), Some(_)) => {
                    Some((blob_to_vector(&blob), info_at(row, 4).map_err(sql_err)?))
                }
                _ => None,
            };
            let key = seq as u64;
            match at.get(&key) {
                Some(&i) => changes[i] = (key, change),
                None => {
                    at.insert(key, changes.len());
                    changes.push((key, change));
                }
            }
        }
        Ok(Self {
            generation,
            changes,
        })
    }

    /// Keys changed.
    pub(crate) fn len(&self) -> usize {
        self.changes.len()
    }
}

pub(super) fn info_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(u64, InfoRow)> {
    Ok((row.get::<_, i64>(0)? as u64, info_at(row, 1)?))
}

/// The pre-filter's facts from the seven columns starting at `first`: user, agent and run ids,
/// kind, state, expiry and index text, in the order both queries above select them.
fn info_at(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<InfoRow> {
    let kind: String = row.get(first + 3)?;
    let state: String = row.get(first + 4)?;
    Ok(InfoRow {
        user: row.get(first)?,
        agent: row.get(first + 1)?,
        run: row.get(first + 2)?,
        kind: kind.parse().unwrap_or(MemoryKind::Raw),
        active: state == MemoryState::Active.as_str(),
        expires_at: row.get(first + 5)?,
        text: row.get(first + 6)?,
    })
}
