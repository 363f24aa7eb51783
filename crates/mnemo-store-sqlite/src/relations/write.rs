//! Edge writes: [`Writer`]'s `RelationWriter` half (run in the add's transaction through core's
//! [`write_relations`]), an edge's and a statement's rows, and the removals of an erase or a hard
//! delete (a memory's support, a whole scope's edges).

use super::kind_str;
use crate::codec::*;
use crate::predicate::{self, Pred};
use crate::write::Writer;
use mnemo_core::entity::EntityMention;
use mnemo_core::relation::ObjectKind;
use mnemo_core::*;
use rusqlite::{params, params_from_iter, Transaction};

impl RelationWriter for Writer<'_, '_> {
    fn resolve_entity(
        &mut self,
        scope: &Scope,
        mention: &EntityMention,
        at: i64,
    ) -> Result<EntityId> {
        let id =
            crate::graph::resolve_entity(self.tx, &mut self.memo.entities, scope, mention, at)?;
        EntityId::parse(&id)
    }

    fn rival_edges(
        &mut self,
        scope: &Scope,
        subject: EntityId,
        predicate: &str,
    ) -> Result<Vec<RivalEdge>> {
        // A symmetric edge is one edge both ways: its rivals include those met from the object
        // end (each index serves one side of the OR).
        let sql = match mnemo_core::relation::is_symmetric(predicate) {
            false => {
                "SELECT id, object_kind, object_id, object_value, valid_from, valid_until, \
                 subject_id FROM relations WHERE subject_id = ?1 AND predicate = ?2 \
                 ORDER BY valid_from"
            }
            true => {
                "SELECT id, object_kind, object_id, object_value, valid_from, valid_until, \
                 subject_id FROM relations WHERE (subject_id = ?1 AND predicate = ?2) \
                 OR (object_id = ?1 AND predicate = ?2) ORDER BY valid_from"
            }
        };
        let mut stmt = self.tx.prepare_cached(sql).map_err(sql_err)?;
        let _ = scope; // An entity belongs to one exact scope, so its edges do too.
        let rows = stmt
            .query_map(params![subject.to_string(), predicate], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, Option<i64>>(5)?,
                    r.get::<_, String>(6)?,
                ))
            })
            .map_err(sql_err)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, kind, object, value, from, until, start) = row.map_err(sql_err)?;
            let kind = if kind == "entity" {
                ObjectKind::Entity
            } else {
                ObjectKind::Literal
            };
            let object = object.as_deref().map(EntityId::parse).transpose()?;
            // Met from its object end, an edge is keyed by its subject: its other end.
            let start = EntityId::parse(&start)?;
            let (kind, object) = match start == subject {
                true => (kind, object),
                false => (ObjectKind::Entity, Some(start)),
            };
            out.push(RivalEdge {
                id: RelationId::parse(&id)?,
                object_key: object_key(kind, object, value.as_deref().unwrap_or("")),
                valid_from: from_ms(from),
                valid_until: until.map(from_ms),
            });
        }
        Ok(out)
    }

    fn insert_relation(&mut self, scope: &Scope, e: &Relation) -> Result<()> {
        insert_edge(self.tx, scope, e)
    }

    fn support_relation(&mut self, id: RelationId, s: &RelationSource) -> Result<()> {
        insert_source(self.tx, id, s)
    }

    fn close_relation(
        &mut self,
        id: RelationId,
        until: Timestamp,
        at: Timestamp,
        by: RelationId,
    ) -> Result<()> {
        self.tx
            .execute_cached(
                "UPDATE relations SET valid_until = ?1, expired_at = ?2, closed_by = ?3 WHERE id = ?4",
                params![predicate::ms(until), predicate::ms(at), by.to_string(), id.to_string()],
            )
            .map_err(sql_err)?;
        Ok(())
    }
}

/// Inserts an edge of exactly `scope` and its sources.
pub(crate) fn insert_edge(tx: &Transaction<'_>, scope: &Scope, e: &Relation) -> Result<()> {
    let literal = (e.object_kind == ObjectKind::Literal).then_some(e.object.name.as_str());
    let subject = e
        .subject
        .id
        .ok_or_else(|| Error::invalid("subject", "an edge's subject is an entity"))?;
    tx.execute_cached(
        "INSERT INTO relations (id, user_id, agent_id, run_id, subject_id, predicate, object_id, object_value, \
         object_kind, fact, valid_from, valid_until, created_at, expired_at, closed_by) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            e.id.to_string(),
            scope.user_id().map(|v| v.as_str()),
            scope.agent_id().map(|v| v.as_str()),
            scope.run_id().map(|v| v.as_str()),
            subject.to_string(),
            e.predicate,
            e.object.id.map(|i| i.to_string()),
            literal,
            kind_str(e.object_kind),
            e.fact,
            predicate::ms(e.valid_from),
            opt_ms(e.valid_until),
            predicate::ms(e.created_at),
            opt_ms(e.expired_at),
            e.closed_by.map(|i| i.to_string()),
        ],
    )
    .map_err(sql_err)?;
    for s in &e.sources {
        insert_source(tx, e.id, s)?;
    }
    Ok(())
}

fn insert_source(tx: &Transaction<'_>, id: RelationId, s: &RelationSource) -> Result<()> {
    tx.execute_cached(
        "INSERT OR IGNORE INTO relation_sources (relation_id, memory_id, message_id, actor, added_at) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            id.to_string(),
            s.memory_id.to_string(),
            s.message_id.map(|m| m.to_string()),
            s.actor,
            predicate::ms(s.added_at)
        ],
    )
    .map_err(sql_err)?;
    Ok(())
}

/// A memory stops supporting its edges (an erase or a hard delete): its statements go, and an
/// edge it alone supported goes with its sentence and literal. The edges removed.
pub(crate) fn drop_support(tx: &Transaction<'_>, memory: &str) -> Result<u64> {
    let edges: Vec<String> = {
        let mut st = tx
            .prepare_cached("SELECT relation_id FROM relation_sources WHERE memory_id = ?1")
            .map_err(sql_err)?;
        let rows = st.query_map([memory], |r| r.get(0)).map_err(sql_err)?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql_err)?
    };
    tx.execute_cached(
        "DELETE FROM relation_sources WHERE memory_id = ?1",
        [memory],
    )
    .map_err(sql_err)?;
    let mut removed = 0;
    for id in edges {
        removed += tx
            .execute_cached(
                "DELETE FROM relations WHERE id = ?1 AND NOT EXISTS \
                 (SELECT 1 FROM relation_sources rs WHERE rs.relation_id = ?1)",
                [&id],
            )
            .map_err(sql_err)? as u64;
    }
    Ok(removed)
}

/// Removes every edge of the scopes `scope` covers (an erase of the scope).
pub(crate) fn drop_scope(tx: &Transaction<'_>, scope: &Scope) -> Result<u64> {
    let mut p = Pred::default();
    predicate::scope(&mut p, "r", scope);
    let w = p.where_sql();
    tx.execute(
        &format!("DELETE FROM relation_sources WHERE relation_id IN (SELECT r.id FROM relations r WHERE {w})"),
        params_from_iter(p.params.iter()),
    )
    .map_err(sql_err)?;
    Ok(tx
        .execute(
            &format!("DELETE FROM relations WHERE id IN (SELECT r.id FROM relations r WHERE {w})"),
            params_from_iter(p.params.iter()),
        )
        .map_err(sql_err)? as u64)
}
