//! Edge writes: [`Writer`]'s `RelationWriter` half (run in the add's transaction through core's
//! [`write_relations`]), an edge's and a statement's rows, and the removals of an erase or a hard
//! delete (a memory's support, a whole scope's edges).

use super::{kind_of, kind_str};
use crate::codec::{col, from_ms, ms, opt_ms};
use crate::pg_err;
use crate::predicate::{self, Pred};
use crate::write::Writer;
use mnemo_core::entity::EntityMention;
use mnemo_core::relation::ObjectKind;
use mnemo_core::*;
use postgres::Transaction;
use uuid::Uuid;

impl RelationWriter for Writer<'_, '_> {
    fn resolve_entity(
        &mut self,
        scope: &Scope,
        mention: &EntityMention,
        at: i64,
    ) -> Result<EntityId> {
        crate::entities::resolve_entity(self.tx, scope, mention, at).map(EntityId)
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
                "SELECT id, subject_id, object_kind, object_id, object_value, valid_from, \
                 valid_until FROM relations WHERE scope_key = $1 AND subject_id = $2 \
                 AND predicate = $3 ORDER BY valid_from"
            }
            true => {
                "SELECT id, subject_id, object_kind, object_id, object_value, valid_from, \
                 valid_until FROM relations WHERE scope_key = $1 AND predicate = $3 \
                 AND (subject_id = $2 OR object_id = $2) ORDER BY valid_from"
            }
        };
        let rows = self
            .tx
            .query(sql, &[&scope.key(), &subject.0, &predicate])
            .map_err(pg_err)?;
        rows.iter()
            .map(|r| {
                let object = col::<Option<Uuid>>(r, "object_id")?.map(EntityId);
                let value: Option<String> = col(r, "object_value")?;
                // Met from its object end, an edge is keyed by its subject: its other end.
                let start = EntityId(col(r, "subject_id")?);
                let (kind, object) = match start == subject {
                    true => (kind_of(&col::<String>(r, "object_kind")?), object),
                    false => (ObjectKind::Entity, Some(start)),
                };
                Ok(RivalEdge {
                    id: RelationId(col(r, "id")?),
                    object_key: object_key(kind, object, value.as_deref().unwrap_or("")),
                    valid_from: from_ms(col(r, "valid_from")?),
                    valid_until: col::<Option<i64>>(r, "valid_until")?.map(from_ms),
                })
            })
            .collect()
    }

    fn insert_relation(&mut self, scope: &Scope, e: &Relation) -> Result<()> {
        insert_edge(self.tx, &scope.key(), e)
    }

    fn support_relation(&mut self, id: RelationId, s: &RelationSource) -> Result<()> {
        let key: String = self
            .tx
            .query_one("SELECT scope_key FROM relations WHERE id = $1", &[&id.0])
            .map_err(pg_err)?
            .get(0);
        insert_source(self.tx, &key, id, s)
    }

    fn close_relation(
        &mut self,
        id: RelationId,
        until: Timestamp,
        at: Timestamp,
        by: RelationId,
    ) -> Result<()> {
        self.tx
            .execute(
                "UPDATE relations SET valid_until = $1, expired_at = $2, closed_by = $3 WHERE id = $4",
                &[&ms(until), &ms(at), &by.0, &id.0],
            )
            .map_err(pg_err)?;
        Ok(())
    }
}

/// Inserts an edge owned by `key` and its sources.
pub(crate) fn insert_edge(tx: &mut Transaction<'_>, key: &str, e: &Relation) -> Result<()> {
    let literal = (e.object_kind == ObjectKind::Literal).then(|| e.object.name.clone());
    let subject = e
        .subject
        .id
        .ok_or_else(|| Error::invalid("subject", "an edge's subject is an entity"))?;
    tx.execute(
        "INSERT INTO relations (scope_key, id, user_id, agent_id, run_id, subject_id, predicate, object_id, \
         object_value, object_kind, fact, valid_from, valid_until, created_at, expired_at, closed_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        &[
            &key,
            &e.id.0,
            &e.user_id,
            &e.agent_id,
            &e.run_id,
            &subject.0,
            &e.predicate,
            &e.object.id.map(|i| i.0),
            &literal,
            &kind_str(e.object_kind),
            &e.fact,
            &ms(e.valid_from),
            &opt_ms(e.valid_until),
            &ms(e.created_at),
            &opt_ms(e.expired_at),
            &e.closed_by.map(|i| i.0),
        ],
    )
    .map_err(pg_err)?;
    for s in &e.sources {
        insert_source(tx, key, e.id, s)?;
    }
    Ok(())
}

fn insert_source(
    tx: &mut Transaction<'_>,
    key: &str,
    id: RelationId,
    s: &RelationSource,
) -> Result<()> {
    tx.execute(
        "INSERT INTO relation_sources (scope_key, relation_id, memory_id, message_id, actor, added_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
        &[&key, &id.0, &s.memory_id.0, &s.message_id.map(|m| m.0), &s.actor, &ms(s.added_at)],
    )
    .map_err(pg_err)?;
    Ok(())
}

/// A memory stops supporting its edges (an erase or a hard delete): its statements go, and an
/// edge it alone supported goes with its sentence and literal. The edges removed.
pub(crate) fn drop_support(tx: &mut Transaction<'_>, key: &str, memory: MemoryId) -> Result<u64> {
    let rows = tx
        .query(
            "DELETE FROM relation_sources WHERE scope_key = $1 AND memory_id = $2 RETURNING relation_id",
            &[&key, &memory.0],
        )
        .map_err(pg_err)?;
    let ids: Vec<Uuid> = rows.iter().map(|r| r.get(0)).collect();
    tx.execute(
        "DELETE FROM relations r WHERE r.scope_key = $1 AND r.id = ANY($2) AND NOT EXISTS \
         (SELECT 1 FROM relation_sources rs WHERE rs.scope_key = $1 AND rs.relation_id = r.id)",
        &[&key, &ids],
    )
    .map_err(pg_err)
}

/// Removes every edge of the scopes `scope` covers (an erase of the scope).
pub(crate) fn drop_scope(tx: &mut Transaction<'_>, scope: &Scope) -> Result<u64> {
    let mut p = Pred::default();
    predicate::scope(&mut p, "r", scope);
    tx.execute(
        &format!(
            "DELETE FROM relation_sources x USING relations r WHERE x.scope_key = r.scope_key \
             AND x.relation_id = r.id AND {}",
            p.where_sql()
        ),
        &p.params(),
    )
    .map_err(pg_err)?;
    tx.execute(
        &format!("DELETE FROM relations r WHERE {}", p.where_sql()),
        &p.params(),
    )
    .map_err(pg_err)
}
