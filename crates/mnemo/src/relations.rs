//! Relations between a scope's entities: the facade's reads of the graph (an entity's edges now
//! or as of an instant, the edges between two entities, a bounded neighbourhood, an edge's
//! history) and the settings that decide how adds extract relations and whether search walks
//! them. The rules live in `mnemo_core::store::relation_rules`; the stores hold the edges.

use crate::Memory;
use mnemo_core::*;

/// How relations are extracted and used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelationConfig {
    /// Raw adds read relations from each message with the rule extractor (`extract_relations`).
    pub rules: bool,
    /// Inferred adds (those with a chat model) ask the model for the relations of their new
    /// facts: one more call per add (`pipeline::relations::ask_model`). Off by default, since
    /// it adds a call's tokens and latency to every inferred add; with it off, inferred adds
    /// write no relations (the rules read conversation turns, not the model's fact sentences).
    pub model: bool,
    /// Search walks the edges of the entities the query names and brings in the memories that
    /// state them (see `search.rs`).
    pub graph_search: bool,
}

impl Default for RelationConfig {
    fn default() -> Self {
        Self {
            rules: true,
            model: false,
            graph_search: false,
        }
    }
}

/// The edge view for an optional `as_of` instant: the graph as it was then, else now.
pub(crate) fn view(as_of: Option<Timestamp>) -> EdgeView {
    as_of.map_or(EdgeView::Current, EdgeView::AsOf)
}

impl Memory {
    /// The same engine with other relation settings.
    pub fn with_relation_config(self, relations: RelationConfig) -> Self {
        Self {
            inner: std::sync::Arc::new(crate::Inner {
                relations,
                ..(*self.inner).clone()
            }),
        }
    }

    /// The relation settings in force.
    pub fn relation_config(&self) -> RelationConfig {
        self.inner.relations
    }

    /// The edges of the entities named `entity` (near-matched in the entity index), as of
    /// `as_of` or now; not found when no entity has that name in the scope.
    pub async fn relations(
        &self,
        scope: Scope,
        entity: String,
        as_of: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<Relation>> {
        self.with_store(move |s| s.relations_of(&scope, &entity, view(as_of), limit))
            .await
    }

    /// [`Memory::relations`] for each (scope, entity) of `reads` in one store read, answered
    /// in their order; a name no entity has in its scope answers none.
    pub async fn relations_of_each(
        &self,
        reads: Vec<(Scope, String)>,
        as_of: Option<Timestamp>,
        limit: usize,
    ) -> Result<Vec<Vec<Relation>>> {
        self.with_store(move |s| {
            let reads: Vec<EdgesOf<'_>> = (reads.iter())
                .map(|(scope, entity)| EdgesOf {
                    scope,
                    entity,
                    view: view(as_of),
                    limit,
                })
                .collect();
            s.relations_of_each(&reads)
        })
        .await
    }

    /// The edges joining an entity named `a` to one named `b`, either direction.
    pub async fn relations_between(
        &self,
        scope: Scope,
        a: String,
        b: String,
        as_of: Option<Timestamp>,
    ) -> Result<Vec<Relation>> {
        self.with_store(move |s| s.between(&scope, &a, &b, view(as_of)))
            .await
    }

    /// The neighbourhood of the entities named `entity` to `depth` hops (1 to
    /// [`MAX_WALK_DEPTH`]), at most `limit` edges.
    pub async fn neighbourhood(
        &self,
        scope: Scope,
        entity: String,
        depth: u8,
        as_of: Option<Timestamp>,
        limit: usize,
    ) -> Result<Neighbourhood> {
        self.with_store(move |s| {
            s.neighbourhood(&Walk {
                scope: &scope,
                entity: &entity,
                depth,
                view: view(as_of),
                limit,
            })
        })
        .await
    }

    /// One edge of the scopes `scope` covers, closed or not; not found when it is another
    /// scope's or every memory that states it is deleted.
    pub async fn relation(&self, scope: Scope, id: RelationId) -> Result<Relation> {
        self.with_store(move |s| s.relation(&scope, id)).await
    }

    /// One edge and its history (statements, then its closing).
    pub async fn relation_history(
        &self,
        scope: Scope,
        id: RelationId,
    ) -> Result<(Relation, Vec<RelationEvent>)> {
        self.with_store(move |s| Ok((s.relation(&scope, id)?, s.relation_history(&scope, id)?)))
            .await
    }
}
