//! The native API under `/v1`: the whole library API, documented by the OpenAPI document that
//! `utoipa` generates from these handlers' annotations (served at `/openapi.json`).

use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::log::*;
use super::middleware::RequestId;
use super::timeline::*;
use super::AppState;
use crate::api::*;
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use mnemo_core::ExportRecord;
use serde_json::json;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "mnemo",
        description = "Scoped, searchable, auditable memory for LLM agents. Every route needs an \
            API key (`Authorization: Bearer KEY`) bound to the scopes it may touch, unless the \
            server runs with `--no-auth` on loopback.",
    ),
    components(schemas(ErrorDoc, ErrorDetailDoc)),
    tags((name = "memories", description = "The memory API"), (name = "admin", description = "Store-wide operations (admin keys)"), (name = "sessions", description = "The conversation log: sessions, messages, segments and pages"), (name = "profile", description = "The user profile and knowledge"), (name = "blocks", description = "Core memory blocks: pinned, size-limited, versioned texts an agent edits"))
)]
struct ApiDoc;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(add, list, delete_all))
        .routes(routes!(search))
        .routes(routes!(context))
        .routes(routes!(batch_add, batch_update, batch_delete))
        .routes(routes!(get_one, update, delete_one))
        .routes(routes!(history))
        .routes(routes!(links, add_links))
        .routes(routes!(remove_link))
        .routes(routes!(erase))
        .routes(routes!(erase_session))
        .routes(routes!(erase_scope))
        .routes(routes!(list_sessions))
        .routes(routes!(get_session, delete_session))
        .routes(routes!(session_messages))
        .routes(routes!(list_segments))
        .routes(routes!(segment_pages))
        .routes(routes!(get_profile))
        .routes(routes!(refresh_profile))
        .routes(routes!(reset))
        .routes(routes!(export))
        .routes(routes!(import))
        .routes(routes!(timeline))
}

type Caller = Extension<Principal>;
type Rid = Extension<RequestId>;

fn scope_of(q: &ScopeParams) -> ScopeParts {
    ScopeParts::new(q.user_id.clone(), q.agent_id.clone(), q.run_id.clone())
}

/// The scope of a route that reads no expiry option: `include_expired` there would change
/// nothing, so it is refused rather than silently ignored.
fn scope_only(q: &ScopeParams, route: &str) -> ApiResult<ScopeParts> {
    if q.include_expired {
        return Err(ApiError::invalid(format!(
            "include_expired does not apply to {route}"
        )));
    }
    Ok(scope_of(q))
}

/// Remember a text or a conversation.
#[utoipa::path(post, path = "/v1/memories", tag = "memories", request_body = AddBody,
    responses((status = 200, body = AddOutcomeDoc), (status = "4XX", body = ErrorDoc)))]
async fn add(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(body): ApiJson<AddBody>,
) -> ApiResult<Response> {
    if body.async_mode == Some(true) {
        let job = s.service.add_async(&p, body, &rid.0).await?;
        let answer = crate::service::jobs::queued(&job);
        return Ok((StatusCode::ACCEPTED, Json(answer)).into_response());
    }
    let out = s.service.add(&p, body, &rid.0).await?;
    Ok(Json(out).into_response())
}

/// List a scope's memories, oldest first, with cursor pagination.
#[utoipa::path(get, path = "/v1/memories", tag = "memories", params(ListParams),
    responses((status = 200, body = PageDoc), (status = "4XX", body = ErrorDoc)))]
async fn list(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<ListParams>,
) -> ApiResult<Response> {
    Ok(Json(s.service.list(&p, q).await?).into_response())
}

/// Delete every memory of a scope (soft: kept for audit, gone from reads).
#[utoipa::path(delete, path = "/v1/memories", tag = "memories", params(ScopeParams),
    responses((status = 200, body = DeletedDoc), (status = "4XX", body = ErrorDoc)))]
async fn delete_all(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiQuery(q): ApiQuery<ScopeParams>,
) -> ApiResult<Response> {
    let n = s
        .service
        .delete_all(
            &p,
            &scope_only(&q, "a delete of a scope (expired memories are deleted too)")?,
            &rid.0,
        )
        .await?;
    Ok(Json(json!({ "deleted": n })).into_response())
}

/// Hybrid search (dense + BM25 + entities) within a scope.
#[utoipa::path(post, path = "/v1/memories/search", tag = "memories", request_body = SearchBody,
    responses((status = 200, body = SearchDoc), (status = "4XX", body = ErrorDoc)))]
async fn search(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiJson(body): ApiJson<SearchBody>,
) -> ApiResult<Response> {
    Ok(Json(s.service.search(&p, body).await?).into_response())
}

/// A context pack: what the agent should know now, as ordered sections (profile, the
/// session's recent exchanges, matched segments, memories) and one prompt-ready text that never
/// exceeds `budget_tokens`. Each item says why it was chosen and what it costs.
#[utoipa::path(post, path = "/v1/context", tag = "memories", request_body = ContextBody,
    responses((status = 200, body = ContextPackDoc), (status = "4XX", body = ErrorDoc)))]
async fn context(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiJson(body): ApiJson<ContextBody>,
) -> ApiResult<Response> {
    Ok(Json(s.service.context(&p, body).await?).into_response())
}

/// Several adds at once (up to 1000); every scope is checked before anything is written.
#[utoipa::path(post, path = "/v1/memories/batch", tag = "memories", request_body = BatchAddBody,
    responses((status = 200, description = "One add outcome per item", body = Vec<AddOutcomeDoc>), (status = "4XX", body = ErrorDoc)))]
async fn batch_add(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(body): ApiJson<BatchAddBody>,
) -> ApiResult<Response> {
    let out = s.service.add_batch(&p, body.items, &rid.0).await?;
    Ok(Json(json!({ "results": out })).into_response())
}

/// Several updates at once.
#[utoipa::path(put, path = "/v1/memories/batch", tag = "memories", request_body = BatchUpdateBody,
    responses((status = 200, body = PageDoc), (status = "4XX", body = ErrorDoc)))]
async fn batch_update(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(body): ApiJson<BatchUpdateBody>,
) -> ApiResult<Response> {
    let out = s.service.update_batch(&p, body, &rid.0).await?;
    Ok(Json(json!({ "results": out, "next_cursor": null })).into_response())
}

/// Several deletes at once.
#[utoipa::path(delete, path = "/v1/memories/batch", tag = "memories", request_body = BatchDeleteBody,
    responses((status = 200, body = DeletedDoc), (status = "4XX", body = ErrorDoc)))]
async fn batch_delete(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(body): ApiJson<BatchDeleteBody>,
) -> ApiResult<Response> {
    let n = s.service.delete_batch(&p, body, &rid.0).await?;
    Ok(Json(json!({ "deleted": n })).into_response())
}

/// One memory by id (expired ones only with `include_expired`). With `detail=true`, the audit
/// view: the memory in any state with `sources` (its source messages with their text, as the
/// log's visibility rule shows them), `links` and `entities`.
#[utoipa::path(get, path = "/v1/memories/{id}", tag = "memories", params(("id" = String, Path), GetParams),
    responses((status = 200, body = MemoryDoc), (status = "4XX", body = ErrorDoc)))]
async fn get_one(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(g): ApiQuery<GetParams>,
) -> ApiResult<Response> {
    let q = ScopeParams {
        user_id: g.user_id,
        agent_id: g.agent_id,
        run_id: g.run_id,
        include_expired: g.include_expired,
    };
    if g.detail {
        if q.include_expired {
            return Err(ApiError::invalid(
                "include_expired does not apply to detail=true (it shows any state)",
            ));
        }
        return Ok(Json(s.service.detail(&p, &id, &scope_of(&q)).await?).into_response());
    }
    Ok(Json(
        s.service
            .get(&p, &id, &scope_of(&q), q.include_expired)
            .await?,
    )
    .into_response())
}

/// Change a memory's text (re-embedded), metadata or expiry; recorded in its history.
#[utoipa::path(put, path = "/v1/memories/{id}", tag = "memories", params(("id" = String, Path), ScopeParams), request_body = UpdateBody,
    responses((status = 200, body = MemoryDoc), (status = "4XX", body = ErrorDoc)))]
async fn update(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeParams>,
    ApiJson(body): ApiJson<UpdateBody>,
) -> ApiResult<Response> {
    Ok(Json(
        s.service
            .update(&p, &id, &scope_only(&q, "updates")?, body, &rid.0)
            .await?,
    )
    .into_response())
}

/// Delete one memory (soft: kept for audit and history); `reason` is kept in its history.
#[utoipa::path(delete, path = "/v1/memories/{id}", tag = "memories", params(("id" = String, Path), DeleteParams),
    responses((status = 200, body = MessageDoc), (status = "4XX", body = ErrorDoc)))]
async fn delete_one(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiPath(id): ApiPath<String>,
    ApiQuery(d): ApiQuery<DeleteParams>,
) -> ApiResult<Response> {
    let q = ScopeParams {
        user_id: d.user_id,
        agent_id: d.agent_id,
        run_id: d.run_id,
        include_expired: d.include_expired,
    };
    s.service
        .delete(&p, &id, &scope_only(&q, "deletes")?, d.reason, &rid.0)
        .await?;
    Ok(Json(json!({ "message": "memory deleted" })).into_response())
}

/// Erase one memory: its text, metadata, vector, index entries and the texts of its history
/// events are removed from the store's files (with `sources`, its source messages' content too);
/// its id, scope, times and an `ERASE` event (who, when, why) remain.
#[utoipa::path(post, path = "/v1/memories/{id}/erase", tag = "memories", params(("id" = String, Path)), request_body = EraseBody,
    responses((status = 200, body = EraseReportDoc), (status = "4XX", body = ErrorDoc)))]
async fn erase(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<EraseBody>,
) -> ApiResult<Response> {
    let parts = ScopeParts::new(
        body.user_id.clone(),
        body.agent_id.clone(),
        body.run_id.clone(),
    );
    Ok(Json(s.service.erase(&p, &id, &parts, body, &rid.0).await?).into_response())
}

/// Erase a session of the scope in one transaction: every memory with a source message in it
/// (raw turns and what was derived from them), the content of its messages, its pages' texts and
/// the summaries of the segments they joined. Ids, times and `ERASE` events remain. An unknown
/// session (or one of another scope) is `invalid_input` naming `session_id`.
#[utoipa::path(post, path = "/v1/sessions/{id}/erase", tag = "sessions", params(("id" = String, Path)), request_body = EraseLogBody,
    responses((status = 200, body = EraseLogReportDoc), (status = "4XX", body = ErrorDoc)))]
async fn erase_session(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<EraseLogBody>,
) -> ApiResult<Response> {
    Ok(Json(s.service.erase_session(&p, &id, body, &rid.0).await?).into_response())
}

/// Erase everything the scope covers ("forget this user"): every memory, message, page and
/// segment summary, in one transaction; ids, counts and `ERASE` events remain. Needs
/// `"confirm": true` (`invalid_input` naming `confirm` otherwise, and nothing is written).
#[utoipa::path(post, path = "/v1/scopes/erase", tag = "sessions", request_body = EraseLogBody,
    responses((status = 200, body = EraseLogReportDoc), (status = "4XX", body = ErrorDoc)))]
async fn erase_scope(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(body): ApiJson<EraseLogBody>,
) -> ApiResult<Response> {
    Ok(Json(s.service.erase_scope(&p, body, &rid.0).await?).into_response())
}

/// A memory's history, through the memories it superseded, oldest first.
#[utoipa::path(get, path = "/v1/memories/{id}/history", tag = "memories", params(("id" = String, Path), ScopeParams),
    responses((status = 200, body = HistoryListDoc), (status = "4XX", body = ErrorDoc)))]
async fn history(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeParams>,
) -> ApiResult<Response> {
    let events = s
        .service
        .history(&p, &id, &scope_only(&q, "history")?)
        .await?;
    Ok(Json(json!({ "results": events })).into_response())
}

/// A memory's links (both directions): kind, strength, author, reason.
#[utoipa::path(get, path = "/v1/memories/{id}/links", tag = "memories", params(("id" = String, Path), ScopeParams),
    responses((status = 200, body = Object), (status = "4XX", body = ErrorDoc)))]
async fn links(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ScopeParams>,
) -> ApiResult<Response> {
    let links = s.service.links(&p, &id, &scope_only(&q, "links")?).await?;
    Ok(Json(json!({ "results": links })).into_response())
}

/// Link a memory to others of its scope (author `caller`); all links or none are written.
#[utoipa::path(post, path = "/v1/memories/{id}/links", tag = "memories", params(("id" = String, Path)),
    request_body = LinkBody, responses((status = 200, body = Object), (status = "4XX", body = ErrorDoc)))]
async fn add_links(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<LinkBody>,
) -> ApiResult<Response> {
    let links = s.service.add_links(&p, &id, body).await?;
    Ok(Json(json!({ "results": links })).into_response())
}

/// Remove the link from a memory to `to` (of `kind`, default `related`).
#[utoipa::path(delete, path = "/v1/memories/{id}/links/{to}", tag = "memories",
    params(("id" = String, Path), ("to" = String, Path), UnlinkParams),
    responses((status = 200, body = MessageDoc), (status = "4XX", body = ErrorDoc)))]
async fn remove_link(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath((id, to)): ApiPath<(String, String)>,
    ApiQuery(q): ApiQuery<UnlinkParams>,
) -> ApiResult<Response> {
    s.service.remove_link(&p, &id, &to, q).await?;
    Ok(Json(json!({ "message": "link removed" })).into_response())
}

/// Delete everything in the store (admin key; `{"confirm": "reset"}`).
#[utoipa::path(post, path = "/v1/reset", tag = "admin", request_body = ResetBody,
    responses((status = 200, body = MessageDoc), (status = "4XX", body = ErrorDoc)))]
async fn reset(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiJson(body): ApiJson<ResetBody>,
) -> ApiResult<Response> {
    s.service.reset(&p, &body.confirm).await?;
    Ok(Json(json!({ "message": "store reset" })).into_response())
}

/// Every memory and message as JSON lines (admin key); `POST /v1/import` reads them back.
#[utoipa::path(get, path = "/v1/export", tag = "admin",
    responses((status = 200, description = "JSON lines, one record each", content_type = "application/x-ndjson"), (status = "4XX", body = ErrorDoc)))]
async fn export(State(s): State<AppState>, Extension(p): Caller) -> ApiResult<Response> {
    let records = s.service.export(&p).await?;
    let mut out = String::new();
    for r in &records {
        out.push_str(
            &serde_json::to_string(r)
                .map_err(|e| ApiError::from(mnemo_core::Error::internal(e.to_string())))?,
        );
        out.push('\n');
    }
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], out).into_response())
}

/// Import JSON lines written by `/v1/export` or `mnemo export`, in one transaction (admin key).
#[utoipa::path(post, path = "/v1/import", tag = "admin",
    request_body(content = String, content_type = "application/x-ndjson"),
    responses((status = 200, body = Object), (status = "4XX", body = ErrorDoc)))]
async fn import(
    State(s): State<AppState>,
    Extension(p): Caller,
    body: Bytes,
) -> ApiResult<Response> {
    // Checked before the body is even parsed.
    p.require_admin("import")?;
    let text =
        std::str::from_utf8(&body).map_err(|_| ApiError::invalid("the body is not UTF-8"))?;
    let mut records = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let r: ExportRecord = serde_json::from_str(line)
            .map_err(|e| ApiError::invalid(format!("line {}: {e}", n + 1)))?;
        records.push(r);
    }
    let n = s.service.import(&p, records).await?;
    Ok((StatusCode::OK, Json(json!({ "imported": n }))).into_response())
}
