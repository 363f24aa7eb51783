//! Relations on SQLite: edges between entities (`relations`) and the statements supporting them
//! (`relation_sources`). Writes run in the add's transaction through core's
//! [`write_relations`]; reads narrow by scope and valid time in SQL, then keep the edges core's
//! [`EdgeView`] sees (a supporting memory the memories' visibility rule admits).

use crate::codec::*;
use crate::graph::{matching_entities, EntityLookup};
use crate::predicate::{self, marks, Pred};
use crate::write::Writer;
use crate::SqliteStore;
use mnemo_core::entity::{normalize_entity, EntityMention};
use mnemo_core::relation::ObjectKind;
use mnemo_core::*;
use rusqlite::types::Value as Sql;
use rusqlite::{params, params_from_iter, Connection, OptionalExtension, Transaction};
use std::collections::HashMap;

/// The columns an edge is read with; `r` is `relations`, `s` and `o` its ends' entities.
const EDGE_COLS: &str =
    "r.id, r.user_id, r.agent_id, r.run_id, r.subject_id, s.name, s.entity_type, \
     r.predicate, r.object_id, COALESCE(o.name, r.object_value, ''), COALESCE(o.entity_type, ''), \
     r.object_kind, r.fact, r.valid_from, r.valid_until, r.created_at, r.expired_at, r.closed_by";
const EDGE_FROM: &str = "relations r JOIN entities s ON s.id = r.subject_id \
     LEFT JOIN entities o ON o.id = r.object_id";

fn kind_str(k: ObjectKind) -> &'static str {
    match k {
        ObjectKind::Entity => "entity",
        ObjectKind::Literal => "literal",
    }
}

/// A UUID column as an id type (a malformed one is a conversion failure of the row).
fn uuid_col<T>(raw: &str, wrap: fn(uuid::Uuid) -> T) -> rusqlite::Result<T> {
    uuid::Uuid::parse_str(raw).map(wrap).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn edge_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Relation> {
    let object_id: Option<String> = r.get(8)?;
    let closed_by: Option<String> = r.get(17)?;
    let kind: String = r.get(11)?;
    let (id, subject): (String, String) = (r.get(0)?, r.get(4)?);
    let (subject_name, subject_type, object_name, object_type): (String, String, String, String) =
        (r.get(5)?, r.get(6)?, r.get(9)?, r.get(10)?);
    let (user_id, agent_id, run_id, predicate, fact) =
        (r.get(1)?, r.get(2)?, r.get(3)?, r.get(7)?, r.get(12)?);
    let (from, until, created, expired): (i64, Option<i64>, i64, Option<i64>) =
        (r.get(13)?, r.get(14)?, r.get(15)?, r.get(16)?);
    Ok(Relation {
        id: uuid_col(&id, RelationId)?,
        user_id,
        agent_id,
        run_id,
        subject: RelationNode {
            id: Some(uuid_col(&subject, EntityId)?),
            name: subject_name,
            entity_type: subject_type,
        },
        predicate,
        object: RelationNode {
            id: object_id
                .as_deref()
                .map(|o| uuid_col(o, EntityId))
                .transpose()?,
            name: object_name,
            entity_type: object_type,
        },
        object_kind: match kind.as_str() {
            "entity" => ObjectKind::Entity,
            _ => ObjectKind::Literal,
        },
        fact,
        valid_from: from_ms(from),
        valid_until: until.map(from_ms),
        created_at: from_ms(created),
        expired_at: expired.map(from_ms),
        closed_by: closed_by
            .as_deref()
            .map(|c| uuid_col(c, RelationId))
            .transpose()?,
        sources: Vec::new(),
    })
}

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

/// The relations tables (appended to `schema::MIGRATIONS`). An edge belongs to the exact scope
/// of its entities; `object_id` is NULL and `object_value` holds the value for a literal.
pub(crate) const MIGRATION: &str = r#"
    CREATE TABLE relations (
        id TEXT PRIMARY KEY,
        user_id TEXT, agent_id TEXT, run_id TEXT,
        subject_id TEXT NOT NULL,
        predicate TEXT NOT NULL,
        object_id TEXT,
        object_value TEXT,
        object_kind TEXT NOT NULL,
        fact TEXT NOT NULL,
        valid_from INTEGER NOT NULL,
        valid_until INTEGER,
        created_at INTEGER NOT NULL,
        expired_at INTEGER,
        closed_by TEXT
    ) STRICT;
    CREATE INDEX relations_by_subject ON relations (subject_id, predicate);
    CREATE INDEX relations_by_object ON relations (object_id) WHERE object_id IS NOT NULL;
    CREATE TABLE relation_sources (
        relation_id TEXT NOT NULL,
        memory_id TEXT NOT NULL,
        message_id TEXT,
        actor TEXT,
        added_at INTEGER NOT NULL,
        PRIMARY KEY (relation_id, memory_id)
    ) STRICT, WITHOUT ROWID;
    CREATE INDEX relation_sources_by_memory ON relation_sources (memory_id);
"#;
