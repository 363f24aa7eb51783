//! Edge reads: `impl Relations` (entities by name, the edges of entities, one edge by id) over
//! [`read_edges`], which keeps the edges core's [`EdgeView`] sees (a supporting memory the
//! memories' visibility rule admits), and the SQL side of a view's valid time.

use super::{edge_from_row, EDGE_COLS, EDGE_FROM};
use crate::codec::*;
use crate::graph::{matching_entities, EntityLookup};
use crate::predicate::{self, marks, Pred};
use crate::SqliteStore;
use mnemo_core::entity::normalize_entity;
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params_from_iter, Connection};
use std::collections::HashMap;

/// The edges `p` selects (over [`EDGE_FROM`]), with their sources and whether each source's
/// memory supports the edge in `view`; edges no source supports are dropped.
fn read_edges(
    conn: &Connection,
    p: &Pred,
    tail: &str,
    view: EdgeView,
    now: Timestamp,
) -> Result<Vec<Relation>> {
    let sql = format!(
        "SELECT {EDGE_COLS} FROM {EDGE_FROM} WHERE {} {tail}",
        p.where_sql()
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(sql_err)?;
    let rows = stmt
        .query_map(params_from_iter(p.params.iter()), edge_from_row)
        .map_err(sql_err)?;
    let mut edges = Vec::new();
    for r in rows {
        let e = r.map_err(sql_err)?;
        if view.holds(e.valid_from, e.valid_until) {
            edges.push(e);
        }
    }
    if edges.is_empty() {
        return Ok(edges);
    }
    let ids: Vec<Sql> = edges.iter().map(|e| Sql::Text(e.id.to_string())).collect();
    let sql = format!(
        "SELECT rs.relation_id, rs.memory_id, rs.message_id, rs.actor, rs.added_at, m.state, \
         m.created_at, m.expires_at, m.valid_from, m.valid_until FROM relation_sources rs \
         JOIN memories m ON m.id = rs.memory_id WHERE rs.relation_id IN ({}) ORDER BY rs.added_at, rs.memory_id",
        marks(ids.len())
    );
    let mut stmt = conn.prepare(&sql).map_err(sql_err)?;
    let mut sources: HashMap<String, (Vec<RelationSource>, bool)> = HashMap::new();
    let rows = stmt
        .query_map(params_from_iter(ids.iter()), |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, String>(5)?,
                (r.get::<_, i64>(6)?, r.get::<_, Option<i64>>(7)?),
                (r.get::<_, Option<i64>>(8)?, r.get::<_, Option<i64>>(9)?),
            ))
        })
        .map_err(sql_err)?;
    for row in rows {
        let (rel, mem, msg, actor, added, state, (created, expires), (vf, vu)) =
            row.map_err(sql_err)?;
        let state: MemoryState = state.parse()?;
        let v = Validity {
            active: state == MemoryState::Active,
            created_at: from_ms(created),
            expires_at: expires.map(from_ms),
            valid_from: vf.map(from_ms),
            valid_until: vu.map(from_ms),
        };
        let entry = sources.entry(rel).or_default();
        entry.1 |= view.supports(state, &v, now);
        entry.0.push(RelationSource {
            memory_id: MemoryId::parse(&mem)?,
            message_id: msg.as_deref().map(MessageId::parse).transpose()?,
            actor,
            added_at: from_ms(added),
        });
    }
    Ok(edges
        .into_iter()
        .filter_map(|mut e| {
            let (s, seen) = sources.remove(&e.id.to_string())?;
            e.sources = s;
            seen.then_some(e)
        })
        .collect())
}

impl Relations for SqliteStore {
    fn find_entities(&self, scope: &Scope, name: &str, limit: usize) -> Result<Vec<Entity>> {
        let normalized = normalize_entity(name);
        self.read(|conn| {
            let found = matching_entities(conn, &EntityLookup::covered(scope), &normalized, false)?;
            let mut out = Vec::new();
            for n in found.into_iter().take(limit) {
                let row = conn
                    .query_row_cached(
                        "SELECT name, entity_type, created_at FROM entities WHERE id = ?1",
                        [&n.id],
                        |r| {
                            Ok((
                                r.get::<_, String>(0)?,
                                r.get::<_, String>(1)?,
                                r.get::<_, i64>(2)?,
                            ))
                        },
                    )
                    .map_err(sql_err)?;
                out.push(Entity {
                    id: EntityId::parse(&n.id)?,
                    name: row.0,
                    normalized: n.normalized,
                    entity_type: row.1,
                    created_at: from_ms(row.2),
                });
            }
            Ok(out)
        })
    }

    fn edges(&self, q: &EdgeQuery<'_>) -> Result<Vec<Relation>> {
        if q.entities.is_empty() || q.limit == 0 {
            return Ok(Vec::new());
        }
        let ids: Vec<Sql> = q
            .entities
            .iter()
            .map(|e| Sql::Text(e.to_string()))
            .collect();
        let mut p = Pred::default();
        predicate::scope_unindexed(&mut p, "r", q.scope);
        let n = marks(ids.len());
        p.push(
            &format!("r.id IN (SELECT x.id FROM relations x WHERE x.subject_id IN ({n}) UNION SELECT x.id FROM relations x WHERE x.object_id IN ({n}))"),
            ids.iter().chain(ids.iter()).cloned(),
        );
        if let Some(pred) = q.predicate {
            p.push("r.predicate = ?", [Sql::Text(pred.into())]);
        }
        time_bounds(&mut p, q.view);
        // Read past the limit so edges hidden by their memories' state do not starve it.
        let tail = format!(
            "ORDER BY r.valid_from DESC, r.id LIMIT {}",
            q.limit.saturating_mul(2) + 16
        );
        let mut out = self.read(|conn| read_edges(conn, &p, &tail, q.view, q.now))?;
        out.truncate(q.limit);
        Ok(out)
    }

    fn relation(&self, scope: &Scope, id: RelationId) -> Result<Relation> {
        let mut p = Pred::default();
        p.push("r.id = ?", [Sql::Text(id.to_string())]);
        predicate::scope_unindexed(&mut p, "r", scope);
        self.read(|conn| read_edges(conn, &p, "", EdgeView::All, chrono::Utc::now()))?
            .pop()
            .ok_or_else(|| Error::not_found("relation", id))
    }
}

/// The SQL side of [`EdgeView::holds`] (checked again on every edge read).
fn time_bounds(p: &mut Pred, view: EdgeView) {
    match view {
        EdgeView::Current => p.and("r.valid_until IS NULL"),
        EdgeView::AsOf(t) => {
            let t = predicate::ms(t);
            p.push("r.valid_from <= ?", [Sql::Integer(t)]);
            p.push(
                "(r.valid_until IS NULL OR r.valid_until > ?)",
                [Sql::Integer(t)],
            );
        }
        EdgeView::All => {}
    }
}
