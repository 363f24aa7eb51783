//! The read path on PostgreSQL: get, list (with cursors), locate, history, fetch by candidate
//! key, duplicates by hash and owners. Links and entities are in `graph.rs`, messages in
//! `messages.rs` and `sessions.rs`, the checks and counts in `admin.rs`.
//!
//! Every memory query builds its WHERE clause in `predicate`, so the scope and the visibility
//! rule are written once. A scope covers the records whose parts match the ones it names (a
//! user's scope sees that user's agent and run records), as in the embedded store.

pub(crate) mod cursor;

pub(crate) use mnemo_core::CursorCodec as Cursors;

use crate::codec::{keyed_memory_from_row, MEMORY_COLUMNS};
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use postgres::GenericClient;
use std::collections::HashMap;

/// Memories matching `p` (on `memories` aliased `m`), `tail` (ORDER BY, LIMIT) appended, as
/// `(seq, memory)` with their sources.
pub(crate) fn query_memories(
    c: &mut impl GenericClient,
    p: &Pred,
    tail: &str,
) -> Result<Vec<(i64, Memory)>> {
    let sql = format!(
        "SELECT {MEMORY_COLUMNS} FROM memories m WHERE {} {tail}",
        p.where_sql()
    );
    let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
    let memories = rows
        .iter()
        .map(keyed_memory_from_row)
        .collect::<Result<Vec<_>>>()?;
    with_sources(c, memories)
}

/// Fills each memory's `sources` (its messages in the order they were appended).
pub(crate) fn with_sources(
    c: &mut impl GenericClient,
    mut rows: Vec<(i64, Memory)>,
) -> Result<Vec<(i64, Memory)>> {
    if rows.is_empty() {
        return Ok(rows);
    }
    // (scope_key, memory_id) pairs: the primary key of memory_sources.
    let mut keys = Vec::with_capacity(rows.len());
    let mut ids = Vec::with_capacity(rows.len());
    for (_, m) in &rows {
        keys.push(m.scope()?.key());
        ids.push(m.id.0);
    }
    let found = c
        .query(
            "SELECT s.memory_id, s.message_id FROM memory_sources s \
             LEFT JOIN messages g ON g.scope_key = s.scope_key AND g.id = s.message_id \
             WHERE (s.scope_key, s.memory_id) IN (SELECT * FROM unnest($1::text[], $2::uuid[])) \
             ORDER BY s.memory_id, g.seq NULLS FIRST, s.message_id",
            &[&keys, &ids],
        )
        .map_err(pg_err)?;
    let mut sources: HashMap<uuid::Uuid, Vec<MessageId>> = HashMap::new();
    for r in &found {
        let m: uuid::Uuid = crate::codec::col(r, "memory_id")?;
        let g: uuid::Uuid = crate::codec::col(r, "message_id")?;
        sources.entry(m).or_default().push(MessageId(g));
    }
    for (_, m) in &mut rows {
        m.sources = sources.remove(&m.id.0).unwrap_or_default();
    }
    Ok(rows)
}

/// The exact owner key of a memory of (or under) `scope`, in any state and expiry; `None` when
/// the scope has no such memory.
pub(crate) fn owned_key(
    c: &mut impl GenericClient,
    scope: &Scope,
    id: MemoryId,
) -> Result<Option<String>> {
    let mut p = Pred::default();
    let a = p.arg(id.0);
    p.and(&format!("m.id = {a}"));
    predicate::scope(&mut p, "m", scope);
    let sql = format!(
        "SELECT m.scope_key FROM memories m WHERE {} LIMIT 1",
        p.where_sql()
    );
    let row = c.query_opt(&sql, &p.params()).map_err(pg_err)?;
    Ok(row.map(|r| r.get(0)))
}

impl PgStore {
    /// The list cursor key, read (or made) on first use.
    pub(crate) fn cursors(&self) -> Result<&Cursors> {
        if let Some(c) = self.cursors.get() {
            return Ok(c);
        }
        let loaded = self.with(cursor::load)?;
        Ok(self.cursors.get_or_init(|| loaded))
    }
}
