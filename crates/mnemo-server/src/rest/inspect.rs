//! The routes the web inspector needs beyond the memory API: `GET /v1/scopes` (what the key can
//! see, with counts), `GET /v1/stats` (admin) and the admin key table (`/v1/keys`). Each is in
//! the OpenAPI document; each calls the service layer, which checks the key first.

use super::extract::{ApiJson, ApiPath};
use super::AppState;
use crate::api::{ErrorDoc, MessageDoc};
use crate::auth::{Principal, ScopeParts};
use crate::error::ApiResult;
use crate::service::inspect::KeyAdmin;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(scopes))
        .routes(routes!(stats))
        .routes(routes!(list_keys, create_key))
        .routes(routes!(revoke_key))
}

type Caller = Extension<Principal>;

/// The exact scopes this key can see that hold active memories, each with its active count and
/// its memories (any state) by kind and by state. An admin key sees every scope; a bound key
/// only the scopes its binding covers.
#[utoipa::path(get, path = "/v1/scopes", tag = "inspector",
    responses((status = 200, description = "`{scopes: [{user_id, agent_id, run_id, active, kinds: {kind: n}, states: {state: n}}], truncated}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn scopes(State(s): State<AppState>, Extension(p): Caller) -> ApiResult<Response> {
    Ok(Json(s.service.scopes(&p).await?).into_response())
}

/// The store's statistics: schema version, memories, messages, file size, embedding model and
/// dimension, scopes (admin key).
#[utoipa::path(get, path = "/v1/stats", tag = "admin",
    responses((status = 200, body = Object), (status = "4XX", body = ErrorDoc)))]
async fn stats(State(s): State<AppState>, Extension(p): Caller) -> ApiResult<Response> {
    Ok(Json(s.service.stats(&p).await?).into_response())
}

/// `POST /v1/keys`: a new key, admin or bound to scope parts.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyBody {
    pub name: Option<String>,
    #[serde(default)]
    pub admin: bool,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
}

/// Every API key of the store, revoked ones included (never a secret; admin key).
#[utoipa::path(get, path = "/v1/keys", tag = "admin",
    responses((status = 200, description = "`{keys: [{id, name, admin, user_id, agent_id, run_id, created_at, revoked_at}]}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn list_keys(State(s): State<AppState>, Extension(p): Caller) -> ApiResult<Response> {
    let keys = KeyAdmin {
        keys: s.keys.as_deref(),
    }
    .list(&p)
    .await?;
    Ok(Json(json!({ "keys": keys })).into_response())
}

/// Create a key (admin key): `admin: true`, or bound to at least one of `user_id`, `agent_id`,
/// `run_id`. The secret is in this answer only.
#[utoipa::path(post, path = "/v1/keys", tag = "admin", request_body = KeyBody,
    responses((status = 200, description = "`{key, id, name, admin, user_id, agent_id, run_id, created_at, revoked_at}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn create_key(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiJson(body): ApiJson<KeyBody>,
) -> ApiResult<Response> {
    let bind = ScopeParts::new(body.user_id, body.agent_id, body.run_id);
    let key = KeyAdmin {
        keys: s.keys.as_deref(),
    }
    .create(&p, body.name, body.admin, bind)
    .await?;
    Ok(Json(key).into_response())
}

/// Revoke a key by id (admin key); it is refused from the next request on.
#[utoipa::path(delete, path = "/v1/keys/{id}", tag = "admin", params(("id" = String, Path)),
    responses((status = 200, body = MessageDoc), (status = "4XX", body = ErrorDoc)))]
async fn revoke_key(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Response> {
    KeyAdmin {
        keys: s.keys.as_deref(),
    }
    .revoke(&p, &id)
    .await?;
    Ok(Json(json!({ "message": "key revoked" })).into_response())
}
