//! The entity graph: an entity's relations (now or as of an instant), the edges between two
//! entities, a bounded neighbourhood and an edge's history. Every read names a scope (the
//! key's, or one an admin names); another scope's entity or edge answers as a missing one.

use super::Service;
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use mnemo_core::{Neighbourhood, Relation, RelationEvent, RelationId, Scope, Timestamp};

/// An `as_of` parameter: an RFC 3339 time, or none (now).
pub fn parse_as_of(raw: Option<String>) -> ApiResult<Option<Timestamp>> {
    raw.map(|t| {
        chrono::DateTime::parse_from_rfc3339(t.trim())
            .map(|d| d.with_timezone(&chrono::Utc))
            .map_err(|_| ApiError::invalid(format!("as_of: {t:?} is not an RFC 3339 time")))
    })
    .transpose()
}

/// The most edges one graph read returns unless it asks for fewer.
pub const DEFAULT_GRAPH_LIMIT: usize = 50;

impl Service {
    /// The scope a graph read acts in: a graph read always names one.
    fn graph_scope(p: &Principal, parts: &ScopeParts) -> ApiResult<Scope> {
        p.resolve(parts)?.ok_or_else(|| {
            ApiError::invalid("a graph read needs a scope: user_id, agent_id or run_id")
        })
    }

    fn checked_as_of(as_of: Option<Timestamp>) -> ApiResult<Option<Timestamp>> {
        if let Some(t) = as_of {
            mnemo_core::limits::check_timestamp("as_of", t)?;
        }
        Ok(as_of)
    }

    /// The relations of the entities named `entity`.
    pub async fn entity_relations(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        entity: String,
        as_of: Option<Timestamp>,
        limit: Option<usize>,
    ) -> ApiResult<Vec<Relation>> {
        let scope = Self::graph_scope(p, parts)?;
        let as_of = Self::checked_as_of(as_of)?;
        let limit = limit.unwrap_or(DEFAULT_GRAPH_LIMIT);
        self.run("entity_relations", p, async {
            Ok(self.memory.relations(scope, entity, as_of, limit).await?)
        })
        .await
    }

    /// The relations of each (scope, entity) of `reads`, in their order, in one store read;
    /// a name no entity has answers none. Every scope is resolved for the caller first, so one
    /// the key may not read refuses the whole request.
    pub async fn relations_of_each(
        &self,
        p: &Principal,
        reads: Vec<(ScopeParts, String)>,
        limit: Option<usize>,
    ) -> ApiResult<Vec<Vec<Relation>>> {
        let reads = (reads.into_iter())
            .map(|(parts, entity)| Ok((Self::graph_scope(p, &parts)?, entity)))
            .collect::<ApiResult<Vec<_>>>()?;
        let limit = limit.unwrap_or(DEFAULT_GRAPH_LIMIT);
        self.run("relations_of_each", p, async {
            Ok(self.memory.relations_of_each(reads, None, limit).await?)
        })
        .await
    }

    /// The edges joining an entity named `a` to one named `b`.
    pub async fn relations_between(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        (a, b): (String, String),
        as_of: Option<Timestamp>,
    ) -> ApiResult<Vec<Relation>> {
        let scope = Self::graph_scope(p, parts)?;
        let as_of = Self::checked_as_of(as_of)?;
        self.run("relations_between", p, async {
            Ok(self.memory.relations_between(scope, a, b, as_of).await?)
        })
        .await
    }

    /// The neighbourhood of the entities named `entity`, `depth` hops (1 to 3).
    pub async fn neighbourhood(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        entity: String,
        (depth, limit): (Option<u8>, Option<usize>),
        as_of: Option<Timestamp>,
    ) -> ApiResult<Neighbourhood> {
        let scope = Self::graph_scope(p, parts)?;
        let as_of = Self::checked_as_of(as_of)?;
        let (depth, limit) = (depth.unwrap_or(1), limit.unwrap_or(DEFAULT_GRAPH_LIMIT));
        self.run("neighbourhood", p, async {
            Ok(self
                .memory
                .neighbourhood(scope, entity, depth, as_of, limit)
                .await?)
        })
        .await
    }

    /// The edges `ids` names that the scope sees, in order; an edge it does not see (another
    /// scope's, or hidden since) is left out, as a missing one.
    pub async fn relations_by_id(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        ids: &[RelationId],
    ) -> ApiResult<Vec<Relation>> {
        let scope = Self::graph_scope(p, parts)?;
        self.run("relations_by_id", p, async {
            let mut out = Vec::with_capacity(ids.len());
            for &id in ids {
                match self.memory.relation(scope.clone(), id).await {
                    Ok(r) => out.push(r),
                    Err(mnemo_core::Error::NotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(out)
        })
        .await
    }

    /// An edge and its history.
    pub async fn relation_history(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        id: &str,
    ) -> ApiResult<(Relation, Vec<RelationEvent>)> {
        let scope = Self::graph_scope(p, parts)?;
        let id = RelationId::parse(id)?;
        self.run("relation_history", p, async {
            Ok(self.memory.relation_history(scope, id).await?)
        })
        .await
    }
}
