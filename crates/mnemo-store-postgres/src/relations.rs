//! Relations on PostgreSQL: edges between entities (`relations`) and the statements supporting
//! them (`relation_sources`), keyed by owner like every table. Writes run in the add's
//! transaction through core's [`write_relations`]; reads narrow by scope and valid time in SQL,
//! then keep the edges core's [`EdgeView`] sees.

use crate::codec::{col, entity_from_row, from_ms, ms, opt_ms, ENTITY_COLUMNS};
use crate::pg_err;
use crate::predicate::{self, Pred};
use crate::write::Writer;
use crate::PgStore;
use mnemo_core::entity::{normalize_entity, EntityMention};
use mnemo_core::relation::ObjectKind;
use mnemo_core::*;
use postgres::{GenericClient, Row, Transaction};
use std::collections::HashMap;
use uuid::Uuid;

mod each;

const EDGE_COLS: &str = "r.id, r.user_id, r.agent_id, r.run_id, r.subject_id, s.name AS s_name, \
     s.entity_type AS s_type, r.predicate, r.object_id, COALESCE(o.name, r.object_value, '') AS o_name, \
     COALESCE(o.entity_type, '') AS o_type, r.object_kind, r.fact, r.valid_from, r.valid_until, \
     r.created_at, r.expired_at, r.closed_by";
const EDGE_FROM: &str = "relations r \
     JOIN entities s ON s.scope_key = r.scope_key AND s.id = r.subject_id \
     LEFT JOIN entities o ON o.scope_key = r.scope_key AND o.id = r.object_id";

fn kind_str(k: ObjectKind) -> &'static str {
    match k {
        ObjectKind::Entity => "entity",
        ObjectKind::Literal => "literal",
    }
}

fn kind_of(raw: &str) -> ObjectKind {
    match raw {
        "entity" => ObjectKind::Entity,
        _ => ObjectKind::Literal,
    }
}

fn edge_from_row(r: &Row) -> Result<Relation> {
    Ok(Relation {
        id: RelationId(col(r, "id")?),
        user_id: col(r, "user_id")?,
        agent_id: col(r, "agent_id")?,
        run_id: col(r, "run_id")?,
        subject: RelationNode {
            id: Some(EntityId(col(r, "subject_id")?)),
            name: col(r, "s_name")?,
            entity_type: col(r, "s_type")?,
        },
        predicate: col(r, "predicate")?,
        object: RelationNode {
            id: col::<Option<Uuid>>(r, "object_id")?.map(EntityId),
            name: col(r, "o_name")?,
            entity_type: col(r, "o_type")?,
        },
        object_kind: kind_of(&col::<String>(r, "object_kind")?),
        fact: col(r, "fact")?,
        valid_from: from_ms(col(r, "valid_from")?),
        valid_until: col::<Option<i64>>(r, "valid_until")?.map(from_ms),
        created_at: from_ms(col(r, "created_at")?),
        expired_at: col::<Option<i64>>(r, "expired_at")?.map(from_ms),
        closed_by: col::<Option<Uuid>>(r, "closed_by")?.map(RelationId),
        sources: Vec::new(),
    })
}

fn source_from_row(r: &Row) -> Result<RelationSource> {
    Ok(RelationSource {
        memory_id: MemoryId(col(r, "memory_id")?),
        message_id: col::<Option<Uuid>>(r, "message_id")?.map(MessageId),
        actor: col(r, "actor")?,
        added_at: from_ms(col(r, "added_at")?),
    })
}

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
    let support = supports(c, &edges)?;
    Ok(supported(edges, &support, view, now))
}

/// Each supporting statement of an edge, with its memory's state and validity.
type Support = HashMap<Uuid, Vec<(RelationSource, MemoryState, Validity)>>;

/// The statements supporting `edges`, in one statement.
fn supports(c: &mut impl GenericClient, edges: &[Relation]) -> Result<Support> {
    let mut out = Support::new();
    if edges.is_empty() {
        return Ok(out);
    }
    let ids: Vec<Uuid> = edges.iter().map(|e| e.id.0).collect();
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
fn supported(
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
fn time_bounds(p: &mut Pred, view: EdgeView) {
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

/// The relations tables (appended to `schema::MIGRATIONS`), keyed by owner like every table;
/// re-runnable, as the migrations after v4 are (upgrade tests replay them over a current schema).
pub(crate) const MIGRATION: &str = r#"
    CREATE TABLE IF NOT EXISTS relations (
        scope_key TEXT NOT NULL,
        id UUID NOT NULL,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        subject_id UUID NOT NULL,
        predicate TEXT NOT NULL,
        object_id UUID,
        object_value TEXT,
        object_kind TEXT NOT NULL,
        fact TEXT NOT NULL,
        valid_from BIGINT NOT NULL,
        valid_until BIGINT,
        created_at BIGINT NOT NULL,
        expired_at BIGINT,
        closed_by UUID,
        PRIMARY KEY (scope_key, id)
    );
    CREATE INDEX IF NOT EXISTS relations_by_id ON relations (id);
    CREATE INDEX IF NOT EXISTS relations_by_subject ON relations (subject_id, predicate);
    CREATE INDEX IF NOT EXISTS relations_by_object ON relations (object_id) WHERE object_id IS NOT NULL;
    CREATE TABLE IF NOT EXISTS relation_sources (
        scope_key TEXT NOT NULL,
        relation_id UUID NOT NULL,
        memory_id UUID NOT NULL,
        message_id UUID,
        actor TEXT,
        added_at BIGINT NOT NULL,
        PRIMARY KEY (scope_key, relation_id, memory_id)
    );
    CREATE INDEX IF NOT EXISTS relation_sources_by_relation ON relation_sources (relation_id);
    CREATE INDEX IF NOT EXISTS relation_sources_by_memory ON relation_sources (scope_key, memory_id);
"#;
