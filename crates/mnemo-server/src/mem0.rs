//! Mem0-compatible routes, so existing Mem0 integrations work unchanged against mnemo:
//!
//! - the platform API that Mem0's official Python SDK (`mem0ai`, `MemoryClient(api_key, host)`)
//!   calls — `/v1/ping/`, add/search/list under `/v3/memories/` (and the `/v1`, `/v2` forms older
//!   SDKs use), get/update/delete/history by id, batch update/delete, entities; exact paths with
//!   their trailing slashes, since the SDK follows no redirects;
//! - the OSS server's routes (`/memories`, `/search`, `/reset`, `/entities`).
//!
//! Both go through the same service layer and key checks as the native API. Scope comes from
//! top-level ids, from `filters` (flat or inside a top-level `AND`) or from the key. Fields the
//! SDK documents but mnemo does not implement are accepted and ignored (listed per body);
//! anything else is an unknown field and refused.

mod graph;
mod read;
mod scope;
mod write;

use graph::*;
use read::*;
use scope::*;
use write::*;

use crate::api::{
    AddBody, BatchDeleteBody, BatchUpdateBody, BatchUpdateItem, ListParams, MessageIn, SearchBody,
    UpdateBody,
};
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use crate::rest::extract::{ApiJson, ApiPath, ApiQuery};
use crate::rest::AppState;
use crate::rest::RequestId;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Extension, Json, Router};
use chrono::{DateTime, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

pub fn routes() -> Router<AppState> {
    Router::new()
        // Platform API (mem0ai MemoryClient).
        .route("/v1/ping/", get(ping))
        .route("/v3/memories/add/", post(add))
        .route(
            "/v1/memories/",
            post(add).get(list_query).delete(delete_all),
        )
        .route("/v1/memories/search/", post(search))
        .route("/v2/memories/search/", post(search))
        .route("/v3/memories/search/", post(search))
        .route("/v2/memories/", post(list))
        .route("/v3/memories/", post(list))
        .route(
            "/v1/memories/{id}/",
            get(get_one).put(update).delete(delete_one),
        )
        .route("/v1/memories/{id}/history/", get(history))
        .route("/v1/batch/", put(batch_update).delete(batch_delete))
        .route("/v1/entities/", get(entities))
        .route("/v1/event/{event_id}/", get(event))
        .route(
            "/v2/entities/{kind}/{name}/",
            axum::routing::delete(delete_entity),
        )
        // OSS server.
        .route("/memories", post(add).get(list_query).delete(delete_all))
        .route(
            "/memories/{id}",
            get(get_one).put(oss_update).delete(oss_delete_one),
        )
        .route("/memories/{id}/history", get(history))
        .route("/search", post(search))
        .route("/reset", post(oss_reset))
        .route("/entities", get(oss_entities))
        .route(
            "/entities/{kind}/{name}",
            axum::routing::delete(delete_entity),
        )
}

type Caller = Extension<Principal>;
type Rid = Extension<RequestId>;

/// `GET /v1/ping/`: the SDK validates its key here and needs `org_id` and `project_id`.
async fn ping(Extension(p): Caller) -> Json<Value> {
    Json(json!({
        "status": "ok",
        "message": "API key is valid",
        "org_id": "mnemo",
        "project_id": "default",
        "user_email": null,
        "key_id": p.key_id,
        "admin": p.admin,
        "user_id": p.user_id,
        "agent_id": p.agent_id,
        "run_id": p.run_id,
    }))
}
