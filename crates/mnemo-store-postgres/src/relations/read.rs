//! Edge reads: `impl Relations` (entities by name, the edges of entities, those of many names
//! at once through `each`, one edge by id) over [`read_edges`], which keeps the edges core's
//! [`EdgeView`] sees; the statements supporting edges; the SQL side of a view's valid time.

use super::{each, edge_from_row, source_from_row, EDGE_COLS, EDGE_FROM};
use crate::codec::{col, entity_from_row, from_ms, ms, ENTITY_COLUMNS};
use crate::pg_err;
use crate::predicate::{self, Pred};
use crate::PgStore;
use mnemo_core::entity::normalize_entity;
use mnemo_core::*;
use postgres::GenericClient;
use std::collections::HashMap;
use uuid::Uuid;

/// The edges `p` selects, with their sources; an edge no source's memory supports in `view`
/// ([`EdgeView::supports`]) is dropped.
fn read_edges(
    c: &mut impl GenericClient,
    p: &Pred,
    tail: &str,
    view: EdgeView,
    now: Timestamp,
) -> Result<Vec<Relation>> {
    let sql = format!(
        "SELECT {EDGE_COLS} FROM {EDGE_FROM} WHERE {} {tail}",
        p.where_sql()
    );
    let rows = c.query(&sql, &p.params()).map_err(pg_err)?;
    let mut edges = Vec::new();
    for r in &rows {
        let e = edge_from_row(r)?;
        if view.holds(e.valid_from, e.valid_until) {
            edges.push(e);
        }
    }
    let support = supports(c, edges.iter().map(|e| e.id.0).collect())?;
    Ok(supported(edges, &support, view, now))
}

/// Each supporting statement of an edge, with its memory's state and validity.
pub(super) type Support = HashMap<Uuid, Vec<(RelationSource, MemoryState, Validity)>>;

/// The statements supporting the edges `ids`, in one statement.
pub(super) fn supports(c: &mut impl GenericClient, ids: Vec<Uuid>) -> Result<Support> {
    let mut out = Support::new();
    if ids.is_empty() {
        return Ok(out);
    }
    let rows = c
        .query(
            "SELECT rs.relation_id, rs.memory_id, rs.message_id, rs.actor, rs.added_at, m.state, \
             m.created_at AS m_created, m.expires_at, m.valid_from AS m_from, m.valid_until AS m_until \
             FROM relation_sources rs JOIN memories m ON m.scope_key = rs.scope_key AND m.id = rs.memory_id \
             WHERE rs.relation_id = ANY($1) ORDER BY rs.added_at, rs.memory_id",
            &[&ids],
        )
        .map_err(pg_err)?;
    for r in &rows {
        let state: MemoryState = col::<String>(r, "state")?.parse()?;
        let v = Validity {
            active: state == MemoryState::Active,
            created_at: from_ms(col(r, "m_created")?),
            expires_at: col::<Option<i64>>(r, "expires_at")?.map(from_ms),
            valid_from: col::<Option<i64>>(r, "m_from")?.map(from_ms),
            valid_until: col::<Option<i64>>(r, "m_until")?.map(from_ms),
        };
        let entry = out.entry(col(r, "relation_id")?).or_default();
        entry.push((source_from_row(r)?, state, v));
    }
    Ok(out)
}

/// `edges` with their sources, keeping those a source's memory supports in `view`.
pub(super) fn supported(
    edges: Vec<Relation>,
    support: &Support,
    view: EdgeView,
    now: Timestamp,
) -> Vec<Relation> {
    edges
        .into_iter()
        .filter_map(|mut e| {
            let found = support.get(&e.id.0)?;
            let seen = (found.iter()).any(|(_, state, v)| view.supports(*state, v, now));
            e.sources = found.iter().map(|(s, _, _)| s.clone()).collect();
            seen.then_some(e)
        })
        .collect()
}

/// The SQL side of [`EdgeView::holds`] (checked again on every edge read).
pub(super) fn time_bounds(p: &mut Pred, view: EdgeView) {
    match view {
        EdgeView::Current => p.and("r.valid_until IS NULL"),
        EdgeView::AsOf(t) => {
            let a = p.arg(ms(t));
            p.and(&format!(
                "r.valid_from <= {a} AND (r.valid_until IS NULL OR r.valid_until > {a})"
            ));
        }
        EdgeView::All => {}
    }
}

impl Relations for PgStore {
    fn find_entities(&self, scope: &Scope, name: &str, limit: usize) -> Result<Vec<Entity>> {
        let normalized = normalize_entity(name);
        let mut p = Pred::default();
        predicate::scope(&mut p, "e", scope);
        self.with(|c| {
            let params = p.params();
            let found = crate::entities::matching_entities(
                c,
                (p.where_sql(), &params),
                &normalized,
                false,
            )?;
            let ids: Vec<Uuid> = found.iter().take(limit).map(|n| n.id).collect();
            let rows = c
                .query(
                    &format!("SELECT {ENTITY_COLUMNS} FROM entities e WHERE e.id = ANY($1)"),
                    &[&ids],
                )
                .map_err(pg_err)?;
            let mut out: Vec<Entity> = rows.iter().map(entity_from_row).collect::<Result<_>>()?;
            // In the lookup's order: exact matches first.
            out.sort_by_key(|e| ids.iter().position(|i| *i == e.id.0));
            Ok(out)
        })
    }

    fn edges(&self, q: &EdgeQuery<'_>) -> Result<Vec<Relation>> {
        if q.entities.is_empty() || q.limit == 0 {
            return Ok(Vec::new());
        }
        let ids: Vec<Uuid> = q.entities.iter().map(|e| e.0).collect();
        let mut p = Pred::default();
        predicate::scope(&mut p, "r", q.scope);
        let a = p.arg(ids);
        p.and(&format!(
            "(r.subject_id = ANY({a}) OR r.object_id = ANY({a}))"
        ));
        if let Some(pred) = q.predicate {
            let a = p.arg(pred.to_string());
            p.and(&format!("r.predicate = {a}"));
        }
        time_bounds(&mut p, q.view);
        // Read past the limit so edges hidden by their memories' state do not starve it.
        let tail = format!(
            "ORDER BY r.valid_from DESC, r.id LIMIT {}",
            q.limit.saturating_mul(2) + 16
        );
        let mut out = self.with(|c| read_edges(c, &p, &tail, q.view, q.now))?;
        out.truncate(q.limit);
        Ok(out)
    }

    fn relations_of_each(&self, reads: &[EdgesOf<'_>]) -> Result<Vec<Vec<Relation>>> {
        each::relations_of_each(self, reads)
    }

    fn relation(&self, scope: &Scope, id: RelationId) -> Result<Relation> {
        let mut p = Pred::default();
        let a = p.arg(id.0);
        p.and(&format!("r.id = {a}"));
        predicate::scope(&mut p, "r", scope);
        self.with(|c| read_edges(c, &p, "", EdgeView::All, chrono::Utc::now()))?
            .pop()
            .ok_or_else(|| Error::not_found("relation", id))
    }
}
