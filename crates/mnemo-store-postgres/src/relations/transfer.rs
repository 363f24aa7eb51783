//! Edges in export and import: every edge with its statements whatever their memories' state,
//! and an imported edge checked against the scope of its entities and memories.

use super::write::insert_edge;
use super::{edge_from_row, source_from_row, EDGE_COLS, EDGE_FROM};
use crate::codec::col;
use crate::pg_err;
use mnemo_core::*;
use postgres::Transaction;
use std::collections::HashMap;
use uuid::Uuid;

/// Every edge with its sources, for an export (any view, any support).
pub(crate) fn export_edges(tx: &mut Transaction<'_>) -> Result<Vec<Relation>> {
    let rows = tx
        .query(
            "SELECT relation_id, memory_id, message_id, actor, added_at FROM relation_sources \
             ORDER BY added_at, memory_id",
            &[],
        )
        .map_err(pg_err)?;
    let mut by_edge: HashMap<Uuid, Vec<RelationSource>> = HashMap::new();
    for r in &rows {
        by_edge
            .entry(col(r, "relation_id")?)
            .or_default()
            .push(source_from_row(r)?);
    }
    let rows = tx
        .query(
            &format!("SELECT {EDGE_COLS} FROM {EDGE_FROM} ORDER BY r.id"),
            &[],
        )
        .map_err(pg_err)?;
    rows.iter()
        .map(|r| {
            let mut e = edge_from_row(r)?;
            e.sources = by_edge.remove(&e.id.0).unwrap_or_default();
            Ok(e)
        })
        .collect()
}

/// Imports an edge: its ends must be entities, and its sources memories, of its own scope; an
/// edge already there is kept.
pub(crate) fn import_edge(tx: &mut Transaction<'_>, e: &Relation) -> Result<u64> {
    let key = e.scope()?.key();
    let exists = tx
        .query_opt(
            "SELECT 1 FROM relations WHERE scope_key = $1 AND id = $2",
            &[&key, &e.id.0],
        )
        .map_err(pg_err)?
        .is_some();
    if exists {
        return Ok(0);
    }
    for id in [e.subject.id, e.object.id].into_iter().flatten() {
        let found = tx
            .query_opt(
                "SELECT 1 FROM entities WHERE scope_key = $1 AND id = $2",
                &[&key, &id.0],
            )
            .map_err(pg_err)?;
        if found.is_none() {
            return Err(Error::invalid(
                "relation",
                format!("relation {}: no entity {id} in its scope", e.id),
            ));
        }
    }
    for s in &e.sources {
        let found = tx
            .query_opt(
                "SELECT 1 FROM memories WHERE scope_key = $1 AND id = $2",
                &[&key, &s.memory_id.0],
            )
            .map_err(pg_err)?;
        if found.is_none() {
            return Err(Error::invalid(
                "relation",
                format!("relation {}: no memory {} in its scope", e.id, s.memory_id),
            ));
        }
    }
    insert_edge(tx, &key, e).map(|()| 1)
}
