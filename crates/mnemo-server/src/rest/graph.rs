//! The graph routes (all in OpenAPI, tag `graph`): `GET /v1/graph/relations` (an entity's
//! edges, now or `as_of`), `GET /v1/graph/between` (edges joining two entities),
//! `GET /v1/graph/neighbourhood` (depth 1 to 3, with a limit; a deeper walk is a 400) and
//! `GET /v1/graph/relations/{id}/history`. Each goes through the service, which applies the
//! key's scope: another scope's entity or edge is a 404.

use super::extract::{ApiPath, ApiQuery};
use super::AppState;
use crate::api::ErrorDoc;
use crate::auth::{Principal, ScopeParts};
use crate::error::ApiResult;
use crate::service::relations::parse_as_of as as_of;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(entity_relations))
        .routes(routes!(between))
        .routes(routes!(neighbourhood))
        .routes(routes!(relation_history))
}

type Caller = Extension<Principal>;

/// `GET /v1/graph/relations` and `GET /v1/graph/neighbourhood`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct EntityParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// The entity's name (near matches count).
    pub entity: String,
    /// The graph as it was at this time (RFC 3339); default now.
    pub as_of: Option<String>,
    /// Hops, 1 to 3 (neighbourhood only; default 1).
    pub depth: Option<u8>,
    /// The most edges returned (default 50, at most 1000).
    pub limit: Option<usize>,
}

/// `GET /v1/graph/between`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct BetweenParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub a: String,
    pub b: String,
    /// The graph as it was at this time (RFC 3339); default now.
    pub as_of: Option<String>,
}

/// `GET /v1/graph/relations/{id}/history`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ScopeParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
}

/// An entity's relations: `{results: [relation]}`, each with its subject, predicate, object,
/// fact sentence, valid time and sources.
#[utoipa::path(get, path = "/v1/graph/relations", tag = "graph", params(EntityParams),
    responses((status = 200, description = "`{results: [relation]}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn entity_relations(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<EntityParams>,
) -> ApiResult<Response> {
    let parts = ScopeParts::new(q.user_id, q.agent_id, q.run_id);
    let r = (s.service)
        .entity_relations(&p, &parts, q.entity, as_of(q.as_of)?, q.limit)
        .await?;
    Ok(Json(json!({ "results": r })).into_response())
}

/// The edges joining an entity named `a` to one named `b`, either direction.
#[utoipa::path(get, path = "/v1/graph/between", tag = "graph", params(BetweenParams),
    responses((status = 200, description = "`{results: [relation]}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn between(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<BetweenParams>,
) -> ApiResult<Response> {
    let parts = ScopeParts::new(q.user_id, q.agent_id, q.run_id);
    let r = (s.service)
        .relations_between(&p, &parts, (q.a, q.b), as_of(q.as_of)?)
        .await?;
    Ok(Json(json!({ "results": r })).into_response())
}

/// An entity's neighbourhood: `{center, nodes, relations, truncated}`.
#[utoipa::path(get, path = "/v1/graph/neighbourhood", tag = "graph", params(EntityParams),
    responses((status = 200, description = "`{center, nodes, relations, truncated}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn neighbourhood(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<EntityParams>,
) -> ApiResult<Response> {
    let parts = ScopeParts::new(q.user_id, q.agent_id, q.run_id);
    let n = (s.service)
        .neighbourhood(&p, &parts, q.entity, (q.depth, q.limit), as_of(q.as_of)?)
        .await?;
    Ok(Json(n).into_response())
}

/// An edge and its history: `{relation, events}` (each statement, then its closing).
#[utoipa::path(get, path = "/v1/graph/relations/{id}/history", tag = "graph",
    params(("id" = String, Path), ScopeParams),
    responses((status = 200, description = "`{relation, events}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn relation_history(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeParams>,
) -> ApiResult<Response> {
    let parts = ScopeParts::new(q.user_id, q.agent_id, q.run_id);
    let (relation, events) = s.service.relation_history(&p, &parts, &id).await?;
    Ok(Json(json!({ "relation": relation, "events": events })).into_response())
}
