//! Relations: the [`Relations`] capability (edges between a scope's entities, with valid time
//! and provenance) and the reads every backend shares, written once over its three primitives.
//!
//! An edge is `(subject entity, predicate, object entity or literal)` with the sentence that
//! states it, the memories and messages that support it, its valid time (`valid_from`,
//! `valid_until`) and its transaction time (`created_at`, `expired_at`: when a later edge
//! closed it). Edges are written by the add that wrote their memory, in its transaction (see
//! `relation_write.rs`); reads see an edge when [`EdgeView::holds`] and at least one of its
//! supporting memories [`EdgeView::supports`] it — the memories' visibility rule, so deleting
//! the only memory that states a relation hides the relation on every read path.

use super::*;
use crate::relation::ObjectKind;

/// The deepest walk a neighbourhood read takes.
pub const MAX_WALK_DEPTH: u8 = 3;
/// The most edges one read returns.
pub const MAX_RELATIONS: usize = 1000;

/// One end of an edge as read: the entity's id (none for a literal object), name and type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationNode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<EntityId>,
    pub name: String,
    /// The entity's type; empty for a literal.
    #[serde(default)]
    pub entity_type: String,
}

/// A statement supporting an edge: the memory (and the message it came from) that stated it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationSource {
    pub memory_id: MemoryId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<MessageId>,
    /// Who said it (the memory's speaker or the caller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    /// When mnemo learnt it (transaction time).
    pub added_at: Timestamp,
}

/// A stored edge. Persisted (exports carry it); new fields get serde defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relation {
    pub id: RelationId,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub subject: RelationNode,
    pub predicate: String,
    pub object: RelationNode,
    pub object_kind: ObjectKind,
    /// The sentence that states it.
    pub fact: String,
    /// When the relation began to hold (the event time of its text, else its message's time).
    pub valid_from: Timestamp,
    /// When it stopped holding (a contradicting edge's `valid_from`); `None` while it holds.
    pub valid_until: Option<Timestamp>,
    pub created_at: Timestamp,
    /// When mnemo learnt that it stopped holding.
    pub expired_at: Option<Timestamp>,
    /// The edge whose statement closed it.
    pub closed_by: Option<RelationId>,
    /// Every statement of it, oldest first; its strength is how many there are.
    pub sources: Vec<RelationSource>,
}

impl Relation {
    /// The relation's exact scope.
    pub fn scope(&self) -> Result<Scope> {
        Scope::from_parts(
            self.user_id.as_deref(),
            self.agent_id.as_deref(),
            self.run_id.as_deref(),
        )
    }

    /// How many statements support it.
    pub fn strength(&self) -> usize {
        self.sources.len()
    }
}

/// Which edges a read sees, by valid time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeView {
    /// Edges that hold now (not closed), stated by an active memory.
    Current,
    /// The graph as it was at this instant: edges valid then, stated by a memory not retired
    /// before it.
    AsOf(Timestamp),
    /// Every edge, closed or not (history reads), stated by a memory that is not deleted.
    All,
}

impl EdgeView {
    /// Whether an edge valid over `[from, until)` is seen. Stated once; the stores' SQL
    /// narrows by the same bounds and every edge read is checked here again.
    pub fn holds(&self, from: Timestamp, until: Option<Timestamp>) -> bool {
        match *self {
            EdgeView::Current => until.is_none(),
            EdgeView::AsOf(t) => from <= t && until.is_none_or(|u| t < u),
            EdgeView::All => true,
        }
    }

    /// Whether a memory in `state` with `v` supports an edge in this view: the memories'
    /// visibility rule ([`ReadOptions::admits`]) at `now`. An as-of view judges the memory
    /// as of the same instant but without its lower bound, which the edge's own `valid_from`
    /// replaces (an event time may precede the memory that tells of it).
    pub fn supports(&self, state: MemoryState, v: &Validity, now: Timestamp) -> bool {
        let read = ReadOptions {
            now,
            ..ReadOptions::default()
        };
        match *self {
            EdgeView::Current => read.admits(v),
            EdgeView::AsOf(t) => ReadOptions {
                as_of: Some(t),
                ..read
            }
            .admits(&Validity {
                valid_from: None,
                created_at: Timestamp::MIN_UTC,
                ..*v
            }),
            EdgeView::All => {
                state != MemoryState::Deleted
                    && (ReadOptions {
                        include_inactive: true,
                        ..read
                    })
                    .admits(v)
            }
        }
    }
}

/// What [`Relations::edges`] reads: the edges touching (as subject or object) any of
/// `entities`, of the scopes `scope` covers, seen by `view`, optionally of one predicate; the
/// most recent (`valid_from`) first, at most `limit`.
#[derive(Debug, Clone, Copy)]
pub struct EdgeQuery<'a> {
    pub scope: &'a Scope,
    pub entities: &'a [EntityId],
    pub predicate: Option<&'a str>,
    pub view: EdgeView,
    pub now: Timestamp,
    pub limit: usize,
}

/// One read of [`Relations::relations_of_each`]: the edges of the entities named `entity` in
/// `scope`, seen by `view`, at most `limit` — what [`Relations::relations_of`] reads.
#[derive(Debug, Clone, Copy)]
pub struct EdgesOf<'a> {
    pub scope: &'a Scope,
    pub entity: &'a str,
    pub view: EdgeView,
    pub limit: usize,
}

/// A neighbourhood read: the edges within `depth` hops of the entities named `entity`.
#[derive(Debug, Clone)]
pub struct Walk<'a> {
    pub scope: &'a Scope,
    pub entity: &'a str,
    pub depth: u8,
    pub view: EdgeView,
    /// The most edges returned (and read per hop).
    pub limit: usize,
}

/// What a walk found: the entities it started from, every entity reached and the edges used.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Neighbourhood {
    pub center: Vec<RelationNode>,
    pub nodes: Vec<RelationNode>,
    pub relations: Vec<Relation>,
    /// Whether the limit cut the walk short.
    pub truncated: bool,
}

/// One event of an edge's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum RelationEvent {
    /// A memory stated it (the first statement created it).
    Stated {
        at: Timestamp,
        memory_id: MemoryId,
        message_id: Option<MessageId>,
        actor: Option<String>,
    },
    /// A contradicting statement closed it: the edge it made, its statement's message and
    /// speaker, and the valid time it closed at.
    Closed {
        at: Timestamp,
        valid_until: Timestamp,
        by: RelationId,
        message_id: Option<MessageId>,
        actor: Option<String>,
    },
}

/// Edges between a scope's entities. Three required reads; the walks are written once here.
pub trait Relations: Send + Sync {
    /// Entities of the scopes `scope` covers whose normalised name equals or nearly matches
    /// `name`'s ([`crate::entity::entities_match`]), at most `limit`. Required: the lookup is
    /// the backend's entity index.
    fn find_entities(&self, scope: &Scope, name: &str, limit: usize) -> Result<Vec<Entity>>;
    /// The edges [`EdgeQuery`] names, each seen by its view ([`EdgeView::holds`] and
    /// [`EdgeView::supports`]). Required: the backend's query.
    fn edges(&self, query: &EdgeQuery<'_>) -> Result<Vec<Relation>>;
    /// One edge of the scopes `scope` covers seen by `EdgeView::All`; not found otherwise
    /// (another scope's edge included). Required: the backend's query.
    fn relation(&self, scope: &Scope, id: RelationId) -> Result<Relation>;

    /// The edges of the entities named `name` (depth one), most recent first.
    fn relations_of(
        &self,
        scope: &Scope,
        name: &str,
        view: EdgeView,
        limit: usize,
    ) -> Result<Vec<Relation>> {
        let walk = Walk {
            scope,
            entity: name,
            depth: 1,
            view,
            limit,
        };
        self.neighbourhood(&walk).map(|n| n.relations)
    }

    /// [`Relations::relations_of`] for each of `reads`, each in its own scope, answered in
    /// `reads`' order; a name no entity has answers none. Every name is checked first: an
    /// invalid one is `invalid_input` naming `entity`, and nothing is read. For listings that
    /// ask about many owners at once (Mem0's entity list: each user, agent and run): a backend
    /// whose every statement is a round trip answers them all in a few statements; the default
    /// reads them one by one, which costs an embedded store nothing more.
    fn relations_of_each(&self, reads: &[EdgesOf<'_>]) -> Result<Vec<Vec<Relation>>> {
        for r in reads {
            check_relation_name("entity", r.entity)?;
        }
        let one = |r: &EdgesOf<'_>| match self.relations_of(r.scope, r.entity, r.view, r.limit) {
            Err(crate::Error::NotFound { .. }) => Ok(Vec::new()),
            found => found,
        };
        reads.iter().map(one).collect()
    }

    /// The edges joining an entity named `a` to one named `b`, either direction.
    fn between(&self, scope: &Scope, a: &str, b: &str, view: EdgeView) -> Result<Vec<Relation>> {
        let from = entity_ids(self, scope, "from", a)?;
        let to = entity_ids(self, scope, "to", b)?;
        let edges = self.edges(&EdgeQuery {
            scope,
            entities: &from,
            predicate: None,
            view,
            now: chrono::Utc::now(),
            limit: MAX_RELATIONS,
        })?;
        let joins = |n: &RelationNode| n.id.is_some_and(|id| to.contains(&id));
        Ok(edges
            .into_iter()
            .filter(|e| joins(&e.subject) || joins(&e.object))
            .collect())
    }

    /// The neighbourhood of the entities named `walk.entity`: breadth first, one read per
    /// hop, each capped at the walk's limit, each entity expanded once — bounded work
    /// whatever cycles the graph holds. A depth outside `1..=MAX_WALK_DEPTH` is invalid
    /// input; a name no entity matches is not found.
    fn neighbourhood(&self, walk: &Walk<'_>) -> Result<Neighbourhood> {
        crate::store::walk_neighbourhood(self, walk)
    }

    /// An edge's history: each statement, then its closing, oldest first.
    fn relation_history(&self, scope: &Scope, id: RelationId) -> Result<Vec<RelationEvent>> {
        let edge = self.relation(scope, id)?;
        let mut events: Vec<RelationEvent> = (edge.sources.iter())
            .map(|s| RelationEvent::Stated {
                at: s.added_at,
                memory_id: s.memory_id,
                message_id: s.message_id,
                actor: s.actor.clone(),
            })
            .collect();
        if let (Some(by), Some(until)) = (edge.closed_by, edge.valid_until) {
            // The closing edge may be hidden now (its memory deleted); the closing still happened.
            let closer = self.relation(scope, by).ok();
            let first = closer.as_ref().and_then(|c| c.sources.first());
            events.push(RelationEvent::Closed {
                at: edge.expired_at.unwrap_or(until),
                valid_until: until,
                by,
                message_id: first.and_then(|s| s.message_id),
                actor: first.and_then(|s| s.actor.clone()),
            });
        }
        Ok(events)
    }
}

/// The entities named `name` in the scope (at most 16); not found when there are none.
pub(crate) fn named_entities<R: Relations + ?Sized>(
    store: &R,
    scope: &Scope,
    field: &str,
    name: &str,
) -> Result<Vec<Entity>> {
    check_relation_name(field, name)?;
    let found = store.find_entities(scope, name, 16)?;
    if found.is_empty() {
        return Err(crate::Error::not_found("entity", name));
    }
    Ok(found)
}

/// The ids of [`named_entities`].
fn entity_ids<R: Relations + ?Sized>(
    store: &R,
    scope: &Scope,
    field: &str,
    name: &str,
) -> Result<Vec<EntityId>> {
    Ok(named_entities(store, scope, field, name)?
        .into_iter()
        .map(|e| e.id)
        .collect())
}
