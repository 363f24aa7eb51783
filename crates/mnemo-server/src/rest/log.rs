//! The conversation log on the native API: sessions and their messages, a session's window and
//! delete, segments with their pages, and the profile. Declared into [`super::native`]'s OpenAPI
//! document under the `sessions` and `profile` tags.

use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::middleware::RequestId;
use super::AppState;
use crate::api::*;
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::json;

type Caller = Extension<Principal>;
type Rid = Extension<RequestId>;

fn parts(q: &LogScopeParams) -> ScopeParts {
    ScopeParts::new(q.user_id.clone(), q.agent_id.clone(), q.run_id.clone())
}

/// The sessions of a scope, ordered by id, a page at a time: each with its first and last
/// message time and its message and page counts.
#[utoipa::path(get, path = "/v1/sessions", tag = "sessions", params(LogPageParams),
    responses((status = 200, description = "`{\"sessions\": [{session_id, first_at, last_at, messages, pages}], \"next_cursor\"}`", body = Object), (status = "4XX", body = ErrorDoc)))]
pub(super) async fn list_sessions(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<LogPageParams>,
) -> ApiResult<Response> {
    Ok(Json(s.service.sessions(&p, q).await?).into_response())
}

/// A session's messages in log order, a page at a time: only those the log's visibility rule
/// shows (a turn whose memory is deleted, expired or erased is left out). An unknown session,
/// or one of another scope, is `invalid_input` naming `session_id`.
#[utoipa::path(get, path = "/v1/sessions/{id}/messages", tag = "sessions", params(("id" = String, Path), LogPageParams),
    responses((status = 200, description = "`{\"messages\": [{id, role, name, text, created_at}], \"next_cursor\"}`", body = Object), (status = "4XX", body = ErrorDoc)))]
pub(super) async fn session_messages(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<LogPageParams>,
) -> ApiResult<Response> {
    Ok(Json(s.service.session_messages(&p, &id, q).await?).into_response())
}

/// One session: its summary (times, message and page counts) and its short-term window
/// (`window`: pages with their visible messages).
#[utoipa::path(get, path = "/v1/sessions/{id}", tag = "sessions", params(("id" = String, Path), LogScopeParams),
    responses((status = 200, body = Object), (status = "4XX", body = ErrorDoc)))]
pub(super) async fn get_session(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<LogScopeParams>,
) -> ApiResult<Response> {
    Ok(Json(s.service.session(&p, &id, &parts(&q)).await?).into_response())
}

/// Delete a session's memories (soft, with history, as a memory delete): every active memory
/// with a source message in it. Its turns are then hidden by the log's visibility rule; erase
/// it (`POST /v1/sessions/{id}/erase`) to remove the text.
#[utoipa::path(delete, path = "/v1/sessions/{id}", tag = "sessions", params(("id" = String, Path), DeleteParams),
    responses((status = 200, body = DeletedDoc), (status = "4XX", body = ErrorDoc)))]
pub(super) async fn delete_session(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<DeleteParams>,
) -> ApiResult<Response> {
    if q.include_expired {
        return Err(ApiError::invalid(
            "include_expired does not apply to a delete of a session",
        ));
    }
    let scope = ScopeParts::new(q.user_id, q.agent_id, q.run_id);
    let n = s
        .service
        .delete_session(&p, &id, &scope, q.reason, &rid.0)
        .await?;
    Ok(Json(json!({ "deleted": n })).into_response())
}

/// The scope's mid-term segments (active and evicted): summary, keywords, heat and what it is
/// made of, state, page count and the segments it continues.
#[utoipa::path(get, path = "/v1/segments", tag = "sessions", params(LogScopeParams),
    responses((status = 200, description = "`{\"segments\": [...]}`", body = Object), (status = "4XX", body = ErrorDoc)))]
pub(super) async fn list_segments(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<LogScopeParams>,
) -> ApiResult<Response> {
    let segments = s.service.segments(&p, &parts(&q)).await?;
    Ok(Json(json!({ "segments": segments })).into_response())
}

/// A segment's pages, oldest first, each with its exchange's visible messages. A segment the
/// scope does not hold is `not_found`.
#[utoipa::path(get, path = "/v1/segments/{id}/pages", tag = "sessions", params(("id" = String, Path), LogScopeParams),
    responses((status = 200, description = "`{\"pages\": [...]}`", body = Object), (status = "4XX", body = ErrorDoc)))]
pub(super) async fn segment_pages(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<LogScopeParams>,
) -> ApiResult<Response> {
    let pages = s.service.segment_pages(&p, &id, &parts(&q)).await?;
    Ok(Json(json!({ "pages": pages })).into_response())
}

/// The user's profile (`dimensions`, each with its evidence message ids) and the user and
/// assistant knowledge of the scope.
#[utoipa::path(get, path = "/v1/profile", tag = "profile", params(LogScopeParams),
    responses((status = 200, body = Object), (status = "4XX", body = ErrorDoc)))]
pub(super) async fn get_profile(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<LogScopeParams>,
) -> ApiResult<Response> {
    Ok(Json(s.service.profile(&p, &parts(&q)).await?).into_response())
}

/// Analyse the user's unanalysed pages into the profile and knowledge. Needs a chat model
/// (`invalid_input` naming it otherwise, and nothing is written).
#[utoipa::path(post, path = "/v1/profile/refresh", tag = "profile", request_body = ProfileRefreshBody,
    responses((status = 200, body = Object), (status = "4XX", body = ErrorDoc)))]
pub(super) async fn refresh_profile(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(body): ApiJson<ProfileRefreshBody>,
) -> ApiResult<Response> {
    Ok(Json(s.service.refresh_profile(&p, body, &rid.0).await?).into_response())
}
