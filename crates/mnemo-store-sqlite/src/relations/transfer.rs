//! Edges in export and import: every edge with its statements whatever their memories' state,
//! and an imported edge checked against the scope of its entities and memories.

use super::write::insert_edge;
use super::{edge_from_row, EDGE_COLS, EDGE_FROM};
use crate::codec::*;
use mnemo_core::*;
use rusqlite::{Connection, OptionalExtension, Transaction};
use std::collections::HashMap;

/// Every edge, with its sources, for an export (any view, any support).
pub(crate) fn export_edges(conn: &Connection) -> Result<Vec<Relation>> {
    // An export keeps edges whatever their memories' state: sources are read without the rule.
    let mut stmt = conn
        .prepare("SELECT relation_id, memory_id, message_id, actor, added_at FROM relation_sources ORDER BY added_at, memory_id")
        .map_err(sql_err)?;
    let mut by_edge: HashMap<String, Vec<RelationSource>> = HashMap::new();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })
        .map_err(sql_err)?;
    for row in rows {
        let (rel, mem, msg, actor, added) = row.map_err(sql_err)?;
        by_edge.entry(rel).or_default().push(RelationSource {
            memory_id: MemoryId::parse(&mem)?,
            message_id: msg.as_deref().map(MessageId::parse).transpose()?,
            actor,
            added_at: from_ms(added),
        });
    }
    let sql = format!("SELECT {EDGE_COLS} FROM {EDGE_FROM} ORDER BY r.id");
    let mut stmt = conn.prepare(&sql).map_err(sql_err)?;
    let rows = stmt.query_map([], edge_from_row).map_err(sql_err)?;
    let mut out = Vec::new();
    for r in rows {
        let mut e = r.map_err(sql_err)?;
        e.sources = by_edge.remove(&e.id.to_string()).unwrap_or_default();
        out.push(e);
    }
    Ok(out)
}

/// Imports an edge: its owner must match the scope its entities and memories belong to; an
/// edge already there is kept.
pub(crate) fn import_edge(tx: &Transaction<'_>, e: &Relation) -> Result<u64> {
    let scope = e.scope()?;
    let exists: bool = tx
        .query_row_cached(
            "SELECT 1 FROM relations WHERE id = ?1",
            [e.id.to_string()],
            |_| Ok(()),
        )
        .optional()
        .map_err(sql_err)?
        .is_some();
    if exists {
        return Ok(0);
    }
    let mut ends = vec![e.subject.id];
    ends.push(e.object.id);
    for id in ends.into_iter().flatten() {
        let owner: Option<(Option<String>, Option<String>, Option<String>)> = tx
            .query_row_cached(
                "SELECT user_id, agent_id, run_id FROM entities WHERE id = ?1",
                [id.to_string()],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(sql_err)?;
        match owner {
            Some((u, a, r))
                if Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref()).ok()
                    == Some(scope.clone()) => {}
            _ => {
                return Err(Error::invalid(
                    "relation",
                    format!("relation {}: no entity {id} in its scope", e.id),
                ))
            }
        }
    }
    for s in &e.sources {
        if !crate::graph::owned(tx, &scope, s.memory_id)? {
            return Err(Error::invalid(
                "relation",
                format!("relation {}: no memory {} in its scope", e.id, s.memory_id),
            ));
        }
    }
    insert_edge(tx, &scope, e).map(|()| 1)
}
