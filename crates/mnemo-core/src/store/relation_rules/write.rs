//! How a batch writes its relations, inside its transaction: the backend's side
//! ([`RelationWriter`]) and the order and decisions ([`write_relations`]), with what the
//! outcome reports of each edge ([`RelationWrite`]).

use super::*;
use crate::entity::EntityMention;

/// A relation a batch writes: one of `memory`'s (a memory of the same batch) statements.
#[derive(Debug, Clone)]
pub struct NewRelation {
    pub memory: MemoryId,
    pub candidate: RelationCandidate,
}

/// What an add did to one edge, as its outcome reports it (ids only: a stored outcome keeps no
/// text an erasure would have to find).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelationWrite {
    pub id: RelationId,
    pub event: RelationWriteKind,
}

impl RelationWrite {
    fn supported(id: RelationId) -> Self {
        Self {
            id,
            event: RelationWriteKind::Supported,
        }
    }
}

/// How an add touched an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationWriteKind {
    /// A new edge.
    Added,
    /// One more statement of an edge that already held.
    Supported,
    /// An edge the add's statement contradicted: its valid time now ends.
    Closed,
}

/// The entity mentions of a memory's relations' ends, so the add links the memory to them
/// (an edge's ends are always entities of a memory that supports it).
pub fn relation_mentions(batch: &WriteBatch, memory: MemoryId) -> Vec<EntityMention> {
    let mut out: Vec<EntityMention> = Vec::new();
    for r in batch.relations.iter().filter(|r| r.memory == memory) {
        let c = &r.candidate;
        out.push(EntityMention::new(&c.subject, &c.subject_type));
        if c.object_kind == ObjectKind::Entity {
            out.push(EntityMention::new(&c.object, &c.object_type));
        }
    }
    out
}

/// What a backend does to write a batch's relations, inside the batch's transaction.
pub trait RelationWriter {
    /// The entity of exactly `scope` for `mention` (the one the add just linked its memory to).
    fn resolve_entity(
        &mut self,
        scope: &Scope,
        mention: &EntityMention,
        at: i64,
    ) -> Result<EntityId>;
    /// The edges of exactly `scope` with this subject and predicate, any valid time. For a
    /// symmetric predicate ([`crate::relation::is_symmetric`]) the edges where `subject` is
    /// either end, each keyed by its other end: (A, p, B) and (B, p, A) are one edge.
    fn rival_edges(
        &mut self,
        scope: &Scope,
        subject: EntityId,
        predicate: &str,
    ) -> Result<Vec<RivalEdge>>;
    /// Inserts a new edge of exactly `scope` with its sources.
    fn insert_relation(&mut self, scope: &Scope, edge: &Relation) -> Result<()>;
    /// Adds a source to an edge (a statement already recorded is kept).
    fn support_relation(&mut self, id: RelationId, source: &RelationSource) -> Result<()>;
    /// Closes an edge: `valid_until`, `expired_at = at`, `closed_by = by`.
    fn close_relation(
        &mut self,
        id: RelationId,
        valid_until: Timestamp,
        at: Timestamp,
        by: RelationId,
    ) -> Result<()>;
}

/// Writes a batch's relations through `tx` (after its memories and their entity links).
pub fn write_relations<W: BatchWriter + ?Sized>(
    tx: &mut W,
    batch: &WriteBatch,
) -> Result<Vec<RelationWrite>> {
    let mut written = Vec::new();
    let now = chrono::Utc::now();
    let now = chrono::DateTime::from_timestamp_millis(now.timestamp_millis()).unwrap_or(now);
    for r in &batch.relations {
        let Some(m) = batch.memories.iter().find(|m| m.id == r.memory) else {
            continue;
        };
        tx.step(WriteStep::Relation)?;
        let c = &r.candidate;
        let at = m.created_at.timestamp_millis();
        let subject = tx.resolve_entity(
            &m.scope,
            &EntityMention::new(&c.subject, &c.subject_type),
            at,
        )?;
        let object = match c.object_kind {
            ObjectKind::Entity => Some(tx.resolve_entity(
                &m.scope,
                &EntityMention::new(&c.object, &c.object_type),
                at,
            )?),
            ObjectKind::Literal => None,
        };
        if object == Some(subject) {
            // Two names the entity index merges ("Carolin", "Caroline"): no edge to itself.
            continue;
        }
        let source = RelationSource {
            memory_id: m.id,
            message_id: m.sources.first().copied(),
            actor: batch.context.actor.clone().or_else(|| m.actor.clone()),
            added_at: now,
        };
        let from = relation_valid_from(m);
        let key = object_key(c.object_kind, object, &c.object);
        let rivals = tx.rival_edges(&m.scope, subject, &c.predicate)?;
        let functional = crate::relation::is_functional(&c.predicate);
        let mut plan = plan_edge(functional, &key, from, &rivals);
        // A symmetric functional predicate (`partner_of`) holds one other end for *each* end:
        // the object's rivals are closed too.
        if let (Some(object), EdgePlan::Insert { valid_until, close }) = (object, &mut plan) {
            if functional && crate::relation::is_symmetric(&c.predicate) {
                let back = object_key(ObjectKind::Entity, Some(subject), &c.subject);
                let theirs = tx.rival_edges(&m.scope, object, &c.predicate)?;
                if let EdgePlan::Insert {
                    valid_until: until,
                    close: more,
                } = plan_edge(true, &back, from, &theirs)
                {
                    *valid_until = earliest(*valid_until, until);
                    for id in more {
                        if !close.contains(&id) {
                            close.push(id);
                        }
                    }
                }
            }
        }
        match plan {
            EdgePlan::Support(id) => {
                tx.support_relation(id, &source)?;
                written.push(RelationWrite::supported(id));
            }
            EdgePlan::Insert { valid_until, close } => {
                let id = RelationId::new();
                for old in close {
                    tx.close_relation(old, from, now, id)?;
                    written.push(RelationWrite {
                        id: old,
                        event: RelationWriteKind::Closed,
                    });
                }
                written.push(RelationWrite {
                    id,
                    event: RelationWriteKind::Added,
                });
                let node = |id, name: &str, t: &str| RelationNode {
                    id,
                    name: name.to_string(),
                    entity_type: t.to_string(),
                };
                let edge = Relation {
                    id,
                    user_id: m.scope.user_id().map(|v| v.as_str().to_string()),
                    agent_id: m.scope.agent_id().map(|v| v.as_str().to_string()),
                    run_id: m.scope.run_id().map(|v| v.as_str().to_string()),
                    subject: node(Some(subject), &c.subject, &c.subject_type),
                    predicate: c.predicate.clone(),
                    object: node(object, &c.object, &c.object_type),
                    object_kind: c.object_kind,
                    fact: c.sentence.chars().take(MAX_FACT_CHARS).collect(),
                    valid_from: from,
                    valid_until,
                    created_at: now,
                    expired_at: valid_until.map(|_| now),
                    closed_by: None,
                    sources: vec![source],
                };
                tx.insert_relation(&m.scope, &edge)?;
            }
        }
    }
    Ok(written)
}
