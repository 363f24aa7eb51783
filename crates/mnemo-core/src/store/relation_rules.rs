//! The rules of relations every backend needs, stated once: how a batch writes its edges
//! ([`write_relations`] over a backend's [`RelationWriter`], inside the batch's transaction),
//! the contradiction rule ([`plan_edge`]: a functional predicate holds one object at a time, so
//! a new object closes the old edge's valid time, as a superseding memory closes the old
//! memory's), the checks on what a batch may carry ([`check_new_relations`]) and the bounded
//! neighbourhood walk ([`walk_neighbourhood`]).

use super::*;
use crate::entity::EntityMention;
use crate::relation::{ObjectKind, RelationCandidate, MAX_PREDICATE_LEN};

/// The longest entity name or literal an edge takes, in characters.
pub const MAX_RELATION_NAME: usize = 200;
/// The longest fact sentence an edge keeps, in characters.
pub const MAX_FACT_CHARS: usize = 2000;

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

/// An existing edge of the same subject and predicate, as [`plan_edge`] weighs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RivalEdge {
    pub id: RelationId,
    /// The object's identity: its entity id, or `literal:` and its normal form.
    pub object_key: String,
    pub valid_from: Timestamp,
    pub valid_until: Option<Timestamp>,
}

/// What writing one statement does.
#[derive(Debug, Clone, PartialEq)]
pub enum EdgePlan {
    /// The same relation already holds at its time: the statement becomes one more source.
    Support(RelationId),
    /// A new edge valid until `valid_until` (a later rival's start), closing `close` (rivals
    /// that held at its start) at its `valid_from`.
    Insert {
        valid_until: Option<Timestamp>,
        close: Vec<RelationId>,
    },
}

/// The contradiction rule. A statement of `object_key` from `from` on joins a rival of the same
/// object that holds at `from` (or still holds). Otherwise it is a new edge; when the predicate
/// is `functional`, every rival of another object that holds at `from` is closed there, and a
/// rival that begins later (a statement about an earlier time arriving late) ends the new edge
/// where it begins. Non-functional predicates accumulate.
pub fn plan_edge(
    functional: bool,
    object_key: &str,
    from: Timestamp,
    rivals: &[RivalEdge],
) -> EdgePlan {
    let holds_at = |r: &RivalEdge| r.valid_from <= from && r.valid_until.is_none_or(|u| from < u);
    if let Some(same) = rivals
        .iter()
        .find(|r| r.object_key == object_key && (holds_at(r) || r.valid_until.is_none()))
    {
        return EdgePlan::Support(same.id);
    }
    let mut valid_until: Option<Timestamp> = None;
    let mut close = Vec::new();
    if functional {
        for r in rivals.iter().filter(|r| r.object_key != object_key) {
            if holds_at(r) {
                close.push(r.id);
                valid_until = earliest(valid_until, r.valid_until);
            } else if r.valid_from > from {
                valid_until = earliest(valid_until, Some(r.valid_from));
            }
        }
    }
    EdgePlan::Insert { valid_until, close }
}

fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The key [`RivalEdge::object_key`] holds for an object.
pub fn object_key(kind: ObjectKind, entity: Option<EntityId>, value: &str) -> String {
    match (kind, entity) {
        (ObjectKind::Entity, Some(id)) => id.to_string(),
        _ => format!("literal:{}", crate::entity::normalize_entity(value)),
    }
}

/// When a memory's relations begin to hold: when its event happened where the text says (event
/// time), else its own valid time, else when it was said.
pub fn relation_valid_from(m: &NewMemory) -> Timestamp {
    m.event_time
        .as_ref()
        .map(|e| e.start)
        .or(m.valid_from)
        .unwrap_or(m.created_at)
}

/// A name an edge or a read takes: non-empty after trimming, at most [`MAX_RELATION_NAME`]
/// characters (counted without reading past the bound: linear in the limit, not the input).
pub fn check_relation_name(field: &str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(crate::Error::invalid(field, "must not be empty"));
    }
    if name.chars().nth(MAX_RELATION_NAME).is_some() {
        return Err(crate::Error::invalid(
            field,
            format!("is longer than {MAX_RELATION_NAME} characters"),
        ));
    }
    Ok(())
}

/// Checks one candidate: names present and bounded, a well-formed predicate of at most
/// [`MAX_PREDICATE_LEN`] characters, no edge from an entity to itself.
pub fn check_candidate(c: &RelationCandidate) -> Result<()> {
    check_relation_name("relations.subject", &c.subject)?;
    check_relation_name("relations.object", &c.object)?;
    let p = &c.predicate;
    if p.is_empty() || p.len() > MAX_PREDICATE_LEN {
        return Err(crate::Error::invalid(
            "relations.predicate",
            format!("must be 1 to {MAX_PREDICATE_LEN} characters"),
        ));
    }
    if !p
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(crate::Error::invalid(
            "relations.predicate",
            format!("{p:?} is not lower-case snake case"),
        ));
    }
    if c.object_kind == ObjectKind::Entity
        && crate::entity::normalize_entity(&c.subject) == crate::entity::normalize_entity(&c.object)
    {
        return Err(crate::Error::invalid(
            "relations.object",
            format!("{:?} relates to itself", c.subject),
        ));
    }
    Ok(())
}

/// What a batch checks before writing anything: every relation names a memory of the batch
/// and is a well-formed candidate.
pub fn check_new_relations(batch: &WriteBatch) -> Result<()> {
    for r in &batch.relations {
        if !batch.memories.iter().any(|m| m.id == r.memory) {
            return Err(crate::Error::invalid(
                "relations.memory",
                format!("memory {} is not one of this add's memories", r.memory),
            ));
        }
        check_candidate(&r.candidate)?;
    }
    Ok(())
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

/// The walk of [`Relations::neighbourhood`], for every backend.
pub fn walk_neighbourhood<R: Relations + ?Sized>(
    store: &R,
    walk: &Walk<'_>,
) -> Result<Neighbourhood> {
    if walk.depth == 0 || walk.depth > MAX_WALK_DEPTH {
        return Err(crate::Error::invalid(
            "depth",
            format!("must be between 1 and {MAX_WALK_DEPTH}"),
        ));
    }
    let limit = walk.limit.clamp(1, MAX_RELATIONS);
    let found = named_entities(store, walk.scope, "entity", walk.entity)?;
    let start: Vec<EntityId> = found.iter().map(|e| e.id).collect();
    let mut seen: std::collections::HashSet<EntityId> = start.iter().copied().collect();
    let mut used: std::collections::HashSet<RelationId> = std::collections::HashSet::new();
    let mut out = Neighbourhood {
        center: (found.into_iter())
            .map(|e| RelationNode {
                id: Some(e.id),
                name: e.name,
                entity_type: e.entity_type,
            })
            .collect(),
        ..Neighbourhood::default()
    };
    let mut frontier = start;
    let now = chrono::Utc::now();
    for _ in 0..walk.depth {
        // A full walk still reads the next hop (bounded: limit + 1 edges), so that `truncated`
        // says whether the limit, not the graph, ended it.
        if frontier.is_empty() || out.truncated {
            break;
        }
        let edges = store.edges(&EdgeQuery {
            scope: walk.scope,
            entities: &frontier,
            predicate: None,
            view: walk.view,
            now,
            limit: limit + 1,
        })?;
        let mut next = Vec::new();
        for e in edges {
            if !used.insert(e.id) {
                continue;
            }
            if out.relations.len() >= limit {
                out.truncated = true;
                break;
            }
            for n in [&e.subject, &e.object] {
                if let Some(id) = n.id {
                    if seen.insert(id) {
                        next.push(id);
                        out.nodes.push(n.clone());
                    }
                }
            }
            out.relations.push(e);
        }
        frontier = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(year: i32) -> Timestamp {
        chrono::Utc.with_ymd_and_hms(year, 1, 1, 0, 0, 0).unwrap()
    }

    fn rival(object: &str, from: i32, until: Option<i32>) -> RivalEdge {
        RivalEdge {
            id: RelationId::new(),
            object_key: object.into(),
            valid_from: at(from),
            valid_until: until.map(at),
        }
    }

    #[test]
    fn a_functional_predicate_closes_the_object_that_held_and_keeps_history() {
        let oslo = rival("oslo", 2020, None);
        let plan = plan_edge(true, "porto", at(2023), std::slice::from_ref(&oslo));
        assert_eq!(
            plan,
            EdgePlan::Insert {
                valid_until: None,
                close: vec![oslo.id]
            }
        );
        // A statement about an earlier time, arriving late, ends where the known one begins.
        let plan = plan_edge(true, "lima", at(2018), std::slice::from_ref(&oslo));
        assert_eq!(
            plan,
            EdgePlan::Insert {
                valid_until: Some(at(2020)),
                close: vec![]
            }
        );
        // A closed rival that held at the new start is cut there, and the new edge ends where
        // the rival's successor began.
        let old = rival("oslo", 2015, Some(2020));
        let plan = plan_edge(true, "rome", at(2017), std::slice::from_ref(&old));
        assert_eq!(
            plan,
            EdgePlan::Insert {
                valid_until: Some(at(2020)),
                close: vec![old.id]
            }
        );
    }

    #[test]
    fn a_repeated_statement_supports_the_edge_and_other_predicates_accumulate() {
        let oslo = rival("oslo", 2020, None);
        assert_eq!(
            plan_edge(true, "oslo", at(2024), std::slice::from_ref(&oslo)),
            EdgePlan::Support(oslo.id)
        );
        // Moving back after the edge was closed is a new edge, not the old one revived.
        let closed = rival("oslo", 2020, Some(2021));
        assert!(matches!(
            plan_edge(true, "oslo", at(2024), std::slice::from_ref(&closed)),
            EdgePlan::Insert { .. }
        ));
        assert_eq!(
            plan_edge(false, "jazz", at(2024), &[rival("rock", 2020, None)]),
            EdgePlan::Insert {
                valid_until: None,
                close: vec![]
            }
        );
    }

    #[test]
    fn bad_candidates_are_refused_naming_the_field() {
        let good = RelationCandidate {
            subject: "Ana".into(),
            subject_type: "person".into(),
            predicate: "lives_in".into(),
            object: "Porto".into(),
            object_kind: ObjectKind::Entity,
            object_type: "place".into(),
            sentence: "Ana lives in Porto.".into(),
        };
        check_candidate(&good).unwrap();
        let field = |c: RelationCandidate| match check_candidate(&c).unwrap_err() {
            crate::Error::InvalidInput { field, .. } => field,
            e => panic!("{e}"),
        };
        let long = "p".repeat(MAX_PREDICATE_LEN + 1);
        assert_eq!(
            field(RelationCandidate {
                predicate: long,
                ..good.clone()
            }),
            "relations.predicate"
        );
        assert_eq!(
            field(RelationCandidate {
                predicate: "Lives In".into(),
                ..good.clone()
            }),
            "relations.predicate"
        );
        assert_eq!(
            field(RelationCandidate {
                subject: " ".into(),
                ..good.clone()
            }),
            "relations.subject"
        );
        assert_eq!(
            field(RelationCandidate {
                object: "x".repeat(10_000),
                ..good.clone()
            }),
            "relations.object"
        );
        assert_eq!(
            field(RelationCandidate {
                object: "ana".into(),
                ..good.clone()
            }),
            "relations.object"
        );
        // A literal may repeat the subject's words.
        check_candidate(&RelationCandidate {
            object: "Ana".into(),
            object_kind: ObjectKind::Literal,
            ..good
        })
        .unwrap();
    }

    #[test]
    fn an_as_of_view_reads_the_edge_valid_then_from_a_memory_not_yet_retired() {
        let now = at(2026);
        let v = |active: bool, until: Option<i32>| Validity {
            active,
            created_at: at(2023),
            expires_at: None,
            valid_from: None,
            valid_until: until.map(at),
        };
        let then = EdgeView::AsOf(at(2021));
        assert!(then.holds(at(2020), Some(at(2022))));
        assert!(!then.holds(at(2022), None));
        // The memory was written in 2023 about 2020: it still supports the 2021 view.
        assert!(then.supports(MemoryState::Active, &v(true, None), now));
        assert!(!then.supports(MemoryState::Superseded, &v(false, Some(2020)), now));
        assert!(!EdgeView::Current.supports(MemoryState::Deleted, &v(false, Some(2024)), now));
        assert!(!EdgeView::All.supports(MemoryState::Deleted, &v(false, Some(2024)), now));
        assert!(EdgeView::All.supports(MemoryState::Superseded, &v(false, Some(2024)), now));
        assert!(
            EdgeView::Current.holds(at(2020), None)
                && !EdgeView::Current.holds(at(2020), Some(at(2021)))
        );
    }
}
