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

use crate::api::{
    AddBody, BatchDeleteBody, BatchUpdateBody, BatchUpdateItem, ListParams, MessageIn, SearchBody,
    UpdateBody,
};
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use crate::rest::extract::{ApiJson, ApiQuery};
use crate::rest::AppState;
use crate::rest::RequestId;
use axum::extract::{Path, State};
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

/// Splits Mem0 `filters` into the scope ids it names and the remaining filter expression.
/// Ids may sit at the top level or inside a top-level `AND`; an id under `OR` or `NOT` cannot
/// define a scope and is refused.
fn split_filters(filters: Option<Value>, parts: &mut ScopeParts) -> ApiResult<Option<Value>> {
    let Some(f) = filters else { return Ok(None) };
    let Value::Object(obj) = f else {
        return Err(ApiError::invalid("filters must be a JSON object"));
    };
    let mut rest = Map::new();
    let take = |k: &str, v: &Value, parts: &mut ScopeParts| -> ApiResult<bool> {
        let slot = match k {
            "user_id" => &mut parts.user_id,
            "agent_id" => &mut parts.agent_id,
            "run_id" => &mut parts.run_id,
            "app_id" => {
                return Err(ApiError::invalid(
                    "app_id scopes are not supported; use user_id, agent_id or run_id",
                ))
            }
            _ => return Ok(false),
        };
        let Some(s) = v.as_str() else {
            return Err(ApiError::invalid(format!("filters.{k} must be a string")));
        };
        if s == "*" {
            return Err(ApiError::invalid(format!(
                "filters.{k} = \"*\" (any) is not supported; name the {k}"
            )));
        }
        if slot.as_deref().is_some_and(|old| old != s) {
            return Err(ApiError::invalid(format!(
                "{k} is given twice with different values"
            )));
        }
        *slot = Some(s.to_string());
        Ok(true)
    };
    for (k, v) in obj {
        if k.eq_ignore_ascii_case("and") {
            let Value::Array(items) = v else {
                return Err(ApiError::invalid("filters.AND must be a list"));
            };
            let mut kept = Vec::new();
            for item in items {
                let mut item_rest = Map::new();
                if let Value::Object(io) = &item {
                    for (ik, iv) in io {
                        if !take(ik, iv, parts)? {
                            item_rest.insert(ik.clone(), iv.clone());
                        }
                    }
                    if !item_rest.is_empty() {
                        kept.push(Value::Object(item_rest));
                    }
                } else {
                    kept.push(item);
                }
            }
            if !kept.is_empty() {
                rest.insert(k, Value::Array(kept));
            }
        } else if take(&k, &v, parts)? {
            continue;
        } else {
            if contains_scope_key(&v) {
                return Err(ApiError::invalid(
                    "user_id, agent_id and run_id may only appear at the top of filters or in its top-level AND",
                ));
            }
            rest.insert(k, v);
        }
    }
    Ok((!rest.is_empty()).then_some(Value::Object(rest)))
}

fn contains_scope_key(v: &Value) -> bool {
    match v {
        Value::Object(o) => o.iter().any(|(k, v)| {
            matches!(k.as_str(), "user_id" | "agent_id" | "run_id") || contains_scope_key(v)
        }),
        Value::Array(a) => a.iter().any(contains_scope_key),
        _ => false,
    }
}

/// Mem0's `messages`: a list of messages, one message object or a plain string.
fn messages_of(v: Value) -> ApiResult<Vec<MessageIn>> {
    match v {
        Value::String(s) => Ok(vec![MessageIn {
            role: "user".into(),
            content: s,
            name: None,
        }]),
        Value::Object(_) => {
            Ok(vec![serde_json::from_value(v).map_err(|e| {
                ApiError::invalid(format!("messages: {e}"))
            })?])
        }
        Value::Array(_) => {
            serde_json::from_value(v).map_err(|e| ApiError::invalid(format!("messages: {e}")))
        }
        _ => Err(ApiError::invalid(
            "messages must be a list of {role, content}, a message or a string",
        )),
    }
}

fn date_of(field: &str, v: &Value) -> ApiResult<Option<DateTime<Utc>>> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => {
            if let Ok(t) = DateTime::parse_from_rfc3339(s) {
                return Ok(Some(t.with_timezone(&Utc)));
            }
            let d = NaiveDate::parse_from_str(s, "%Y-%m-%d").map_err(|_| {
                ApiError::invalid(format!(
                    "{field}: {s:?} is not a date (YYYY-MM-DD) or RFC 3339 time"
                ))
            })?;
            Ok(d.and_hms_opt(0, 0, 0).map(|t| t.and_utc()))
        }
        _ => Err(ApiError::invalid(format!("{field} must be a date string"))),
    }
}

/// An add as Mem0's SDK (2.x, 1.x, 0.1.x) and OSS server send it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Mem0Add {
    messages: Value,
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    filters: Option<Value>,
    metadata: Option<Value>,
    infer: Option<bool>,
    /// Unix seconds (platform) — back-dates the memory.
    timestamp: Option<i64>,
    /// `YYYY-MM-DD`.
    expiration_date: Option<Value>,
    custom_instructions: Option<String>,
    /// The OSS server's name for custom instructions.
    prompt: Option<String>,
    /// `procedural_memory` (OSS) or `procedural`.
    memory_type: Option<String>,
    // Accepted and ignored: platform options mnemo has no counterpart for, and the ids older
    // SDKs attach to every request.
    #[allow(dead_code)]
    app_id: Option<Value>,
    #[allow(dead_code)]
    custom_categories: Option<Value>,
    #[allow(dead_code)]
    agent_custom_instructions: Option<Value>,
    #[allow(dead_code)]
    structured_data_schema: Option<Value>,
    #[allow(dead_code)]
    includes: Option<Value>,
    #[allow(dead_code)]
    excludes: Option<Value>,
    #[allow(dead_code)]
    immutable: Option<Value>,
    #[allow(dead_code)]
    enable_graph: Option<Value>,
    #[allow(dead_code)]
    version: Option<Value>,
    #[allow(dead_code)]
    output_format: Option<Value>,
    #[allow(dead_code)]
    async_mode: Option<Value>,
    #[allow(dead_code)]
    org_id: Option<Value>,
    #[allow(dead_code)]
    project_id: Option<Value>,
}

async fn add(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(b): ApiJson<Mem0Add>,
) -> ApiResult<Response> {
    if b.app_id.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(ApiError::invalid(
            "app_id scopes are not supported; use user_id, agent_id or run_id",
        ));
    }
    let mut parts = ScopeParts::new(b.user_id, b.agent_id, b.run_id);
    if split_filters(b.filters, &mut parts)?.is_some() {
        return Err(ApiError::invalid(
            "an add's filters may only name user_id, agent_id, run_id",
        ));
    }
    let memory_type = match b.memory_type.as_deref() {
        None => None,
        Some("procedural_memory") | Some("procedural") => Some("procedural".to_string()),
        Some(other) => Some(other.to_string()),
    };
    let timestamp = b
        .timestamp
        .map(|t| {
            DateTime::from_timestamp(t, 0)
                .ok_or_else(|| ApiError::invalid("timestamp is out of range"))
        })
        .transpose()?;
    let body = AddBody {
        messages: Some(messages_of(b.messages)?),
        text: None,
        user_id: parts.user_id,
        agent_id: parts.agent_id,
        run_id: parts.run_id,
        metadata: b.metadata,
        infer: b.infer,
        expires_at: b
            .expiration_date
            .as_ref()
            .map(|v| date_of("expiration_date", v))
            .transpose()?
            .flatten(),
        timestamp,
        idempotency_key: None,
        memory_type,
        instructions: b.custom_instructions.or(b.prompt),
        session_id: None,
    };
    Ok(Json(s.service.add(&p, body, &rid.0).await?).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Mem0Search {
    query: String,
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    filters: Option<Value>,
    top_k: Option<usize>,
    limit: Option<usize>,
    threshold: Option<f32>,
    show_expired: Option<bool>,
    /// mnemo's search is always hybrid (keywords included).
    #[allow(dead_code)]
    keyword_search: Option<bool>,
    #[allow(dead_code)]
    rerank: Option<Value>,
    #[allow(dead_code)]
    fields: Option<Value>,
    #[allow(dead_code)]
    categories: Option<Value>,
    #[allow(dead_code)]
    reference_date: Option<Value>,
    #[allow(dead_code)]
    latest_only: Option<Value>,
    #[allow(dead_code)]
    metadata: Option<Value>,
    #[allow(dead_code)]
    explain: Option<Value>,
    #[allow(dead_code)]
    version: Option<Value>,
    #[allow(dead_code)]
    output_format: Option<Value>,
    #[allow(dead_code)]
    org_id: Option<Value>,
    #[allow(dead_code)]
    project_id: Option<Value>,
}

async fn search(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiJson(b): ApiJson<Mem0Search>,
) -> ApiResult<Response> {
    let mut parts = ScopeParts::new(b.user_id, b.agent_id, b.run_id);
    let filters = split_filters(b.filters, &mut parts)?;
    let body = SearchBody {
        query: b.query,
        user_id: parts.user_id,
        agent_id: parts.agent_id,
        run_id: parts.run_id,
        top_k: b.top_k.or(b.limit),
        threshold: b.threshold,
        kinds: None,
        filters,
        mode: None,
        include_expired: b.show_expired.unwrap_or(false),
        include_inactive: false,
    };
    let out = s.service.search(&p, body).await?;
    Ok(Json(json!({ "results": out.results })).into_response())
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Mem0List {
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    filters: Option<Value>,
    show_expired: Option<bool>,
    page: Option<usize>,
    page_size: Option<usize>,
    #[allow(dead_code)]
    start_date: Option<Value>,
    #[allow(dead_code)]
    end_date: Option<Value>,
    #[allow(dead_code)]
    categories: Option<Value>,
    #[allow(dead_code)]
    latest_only: Option<Value>,
    #[allow(dead_code)]
    keys: Option<Value>,
    #[allow(dead_code)]
    fields: Option<Value>,
    #[allow(dead_code)]
    version: Option<Value>,
    #[allow(dead_code)]
    output_format: Option<Value>,
    #[allow(dead_code)]
    org_id: Option<Value>,
    #[allow(dead_code)]
    project_id: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PageQuery {
    page: Option<usize>,
    page_size: Option<usize>,
    #[allow(dead_code)]
    org_id: Option<Value>,
    #[allow(dead_code)]
    project_id: Option<Value>,
}

/// `POST /v2|v3/memories/`: a page of a scope's memories, `page` counted from 1.
async fn list(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<PageQuery>,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    // The body is optional here (older SDKs send only query parameters).
    let b: Mem0List = if body.iter().all(u8::is_ascii_whitespace) {
        Mem0List::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid(format!("the body does not fit this route: {e}")))?
    };
    let mut parts = ScopeParts::new(b.user_id, b.agent_id, b.run_id);
    let filters = split_filters(b.filters, &mut parts)?;
    let page = q.page.or(b.page).unwrap_or(1).max(1);
    let size = q.page_size.or(b.page_size).unwrap_or(100);
    let (results, has_more, count) = page_of(
        &s,
        &p,
        &parts,
        filters,
        b.show_expired.unwrap_or(false),
        page,
        size,
    )
    .await?;
    Ok(Json(json!({
        "count": count,
        "next": has_more.then(|| format!("?page={}&page_size={size}", page + 1)),
        "previous": (page > 1).then(|| format!("?page={}&page_size={size}", page - 1)),
        "results": results,
    }))
    .into_response())
}

/// Walks cursor pages to the requested page, and one beyond to learn whether more follow.
/// `count` is every match: without a filter it comes from the per-scope counts (one grouped
/// query); with one, the remaining pages are walked.
async fn page_of(
    s: &AppState,
    p: &Principal,
    parts: &ScopeParts,
    filters: Option<Value>,
    include_expired: bool,
    page: usize,
    size: usize,
) -> ApiResult<(Vec<mnemo::MemoryRecord>, bool, u64)> {
    if size == 0 || size > 1000 {
        return Err(ApiError::invalid("page_size must be between 1 and 1000"));
    }
    let scope = p.require_scope(parts)?;
    let counted_by_scope = filters.is_none() && !include_expired;
    let filters = filters.map(|f| f.to_string());
    let mut cursor = None;
    let mut seen = 0u64;
    let mut index = 0usize;
    let mut out = Vec::new();
    let mut has_more = false;
    let mut reached_end = false;
    loop {
        let got = s
            .service
            .list(
                p,
                ListParams {
                    user_id: parts.user_id.clone(),
                    agent_id: parts.agent_id.clone(),
                    run_id: parts.run_id.clone(),
                    limit: Some(size),
                    cursor: cursor.take(),
                    kinds: None,
                    filters: filters.clone(),
                    include_expired,
                },
            )
            .await?;
        index += 1;
        seen += got.results.len() as u64;
        if index == page {
            out = got.results;
        } else if index > page {
            has_more |= !got.results.is_empty();
            if counted_by_scope {
                break;
            }
        }
        match got.next_cursor {
            Some(c) => cursor = Some(c),
            None => {
                reached_end = true;
                break;
            }
        }
    }
    let count = if reached_end {
        seen
    } else {
        s.service
            .owners(p)
            .await?
            .into_iter()
            .filter(|(owner, _)| scope.covers(owner))
            .map(|(_, n)| n)
            .sum()
    };
    Ok((out, has_more, count))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Mem0ListQuery {
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    /// The OSS server's page size.
    top_k: Option<usize>,
    limit: Option<usize>,
    show_expired: Option<bool>,
    #[allow(dead_code)]
    org_id: Option<Value>,
    #[allow(dead_code)]
    project_id: Option<Value>,
}

/// `GET /v1/memories/` (0.1.x SDKs) and `GET /memories` (OSS): `{"results": [...]}`.
async fn list_query(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<Mem0ListQuery>,
) -> ApiResult<Response> {
    let page = s
        .service
        .list(
            &p,
            ListParams {
                user_id: q.user_id,
                agent_id: q.agent_id,
                run_id: q.run_id,
                limit: Some(q.top_k.or(q.limit).unwrap_or(100)),
                cursor: None,
                kinds: None,
                filters: None,
                include_expired: q.show_expired.unwrap_or(false),
            },
        )
        .await?;
    Ok(Json(json!({ "results": page.results })).into_response())
}

/// Query parameters of the by-id routes (older SDKs add org and project ids).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ByIdQuery {
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    #[allow(dead_code)]
    delete_linked: Option<Value>,
    #[allow(dead_code)]
    org_id: Option<Value>,
    #[allow(dead_code)]
    project_id: Option<Value>,
}

impl ByIdQuery {
    fn parts(&self) -> ScopeParts {
        ScopeParts::new(
            self.user_id.clone(),
            self.agent_id.clone(),
            self.run_id.clone(),
        )
    }
}

async fn get_one(
    State(s): State<AppState>,
    Extension(p): Caller,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<ByIdQuery>,
) -> ApiResult<Response> {
    Ok(Json(s.service.get(&p, &id, &q.parts(), false).await?).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Mem0Update {
    text: Option<String>,
    metadata: Option<Value>,
    expiration_date: Option<Value>,
    /// Unix seconds; mnemo keeps creation times, so it is accepted and ignored.
    #[allow(dead_code)]
    timestamp: Option<Value>,
    #[allow(dead_code)]
    org_id: Option<Value>,
    #[allow(dead_code)]
    project_id: Option<Value>,
}

fn update_body(b: Mem0Update) -> ApiResult<UpdateBody> {
    Ok(UpdateBody {
        text: b.text,
        metadata: b.metadata,
        expires_at: b
            .expiration_date
            .as_ref()
            .map(|v| date_of("expiration_date", v))
            .transpose()?,
    })
}

async fn update(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<ByIdQuery>,
    ApiJson(b): ApiJson<Mem0Update>,
) -> ApiResult<Response> {
    let m = s
        .service
        .update(&p, &id, &q.parts(), update_body(b)?, &rid.0)
        .await?;
    Ok(Json(m).into_response())
}

async fn oss_update(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<ByIdQuery>,
    ApiJson(b): ApiJson<Mem0Update>,
) -> ApiResult<Response> {
    s.service
        .update(&p, &id, &q.parts(), update_body(b)?, &rid.0)
        .await?;
    Ok(Json(json!({ "message": "Memory updated successfully!" })).into_response())
}

async fn delete_one(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<ByIdQuery>,
) -> ApiResult<Response> {
    s.service.delete(&p, &id, &q.parts(), &rid.0).await?;
    Ok(Json(json!({ "message": "Memory deleted successfully!" })).into_response())
}

async fn oss_delete_one(
    state: State<AppState>,
    p: Caller,
    rid: Rid,
    id: Path<String>,
    q: ApiQuery<ByIdQuery>,
) -> ApiResult<Response> {
    delete_one(state, p, rid, id, q).await
}

/// History as a plain list, as Mem0 returns it.
async fn history(
    State(s): State<AppState>,
    Extension(p): Caller,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<ByIdQuery>,
) -> ApiResult<Response> {
    Ok(Json(s.service.history(&p, &id, &q.parts()).await?).into_response())
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteAllQuery {
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    /// JSON, or the Python dict repr that `delete_all(filters=…)` sends.
    filters: Option<String>,
    #[allow(dead_code)]
    app_id: Option<Value>,
    #[allow(dead_code)]
    org_id: Option<Value>,
    #[allow(dead_code)]
    project_id: Option<Value>,
}

/// Reads `{'user_id': 'alice'}` (a flat Python dict of strings) or JSON.
fn loose_dict(raw: &str) -> ApiResult<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(raw) {
        return Ok(v);
    }
    let inner = raw
        .trim()
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .ok_or_else(|| ApiError::invalid("filters is not a JSON object"))?;
    let mut map = Map::new();
    for pair in inner.split(',').filter(|p| !p.trim().is_empty()) {
        let (k, v) = pair
            .split_once(':')
            .ok_or_else(|| ApiError::invalid("filters is not a JSON object"))?;
        let unquote = |s: &str| s.trim().trim_matches('\'').trim_matches('"').to_string();
        map.insert(unquote(k), Value::String(unquote(v)));
    }
    Ok(Value::Object(map))
}

async fn delete_all(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiQuery(q): ApiQuery<DeleteAllQuery>,
) -> ApiResult<Response> {
    let mut parts = ScopeParts::new(q.user_id, q.agent_id, q.run_id);
    if let Some(raw) = q.filters.as_deref() {
        if split_filters(Some(loose_dict(raw)?), &mut parts)?.is_some() {
            return Err(ApiError::invalid(
                "delete_all's filters may only name user_id, agent_id, run_id",
            ));
        }
    }
    if parts.is_empty() {
        return Err(ApiError::invalid(
            "At least one identifier (user_id, agent_id, run_id) is required.",
        ));
    }
    let n = s.service.delete_all(&p, &parts, &rid.0).await?;
    Ok(Json(json!({ "message": "Memories deleted successfully!", "deleted": n })).into_response())
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Mem0Batch {
    memories: Vec<BatchItem>,
    #[allow(dead_code)]
    org_id: Option<Value>,
    #[allow(dead_code)]
    project_id: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchItem {
    memory_id: String,
    text: Option<String>,
    metadata: Option<Value>,
}

async fn batch_update(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(b): ApiJson<Mem0Batch>,
) -> ApiResult<Response> {
    let items = b
        .memories
        .into_iter()
        .map(|i| BatchUpdateItem {
            memory_id: i.memory_id,
            text: i.text,
            metadata: i.metadata,
        })
        .collect::<Vec<_>>();
    let n = items.len();
    let body = BatchUpdateBody {
        user_id: None,
        agent_id: None,
        run_id: None,
        items,
    };
    s.service.update_batch(&p, body, &rid.0).await?;
    Ok(Json(json!({ "message": format!("Successfully updated {n} memories") })).into_response())
}

async fn batch_delete(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(b): ApiJson<Mem0Batch>,
) -> ApiResult<Response> {
    let body = BatchDeleteBody {
        user_id: None,
        agent_id: None,
        run_id: None,
        memory_ids: b.memories.into_iter().map(|i| i.memory_id).collect(),
    };
    let n = s.service.delete_batch(&p, body, &rid.0).await?;
    Ok(Json(json!({ "message": format!("Successfully deleted {n} memories") })).into_response())
}

/// Users, agents and runs the caller may see, with their memory counts.
async fn entity_list(s: &AppState, p: &Principal) -> ApiResult<Vec<Value>> {
    let owners = s.service.owners(p).await?;
    let mut totals: BTreeMap<(&'static str, String), u64> = BTreeMap::new();
    for (scope, n) in owners {
        let parts = [
            ("user", scope.user_id.map(|v| v.as_str().to_string())),
            ("agent", scope.agent_id.map(|v| v.as_str().to_string())),
            ("run", scope.run_id.map(|v| v.as_str().to_string())),
        ];
        for (kind, name) in parts {
            if let Some(name) = name {
                *totals.entry((kind, name)).or_default() += n;
            }
        }
    }
    Ok(totals
        .into_iter()
        .map(|((kind, name), n)| json!({ "id": name, "name": name, "type": kind, "total_memories": n }))
        .collect())
}

async fn entities(State(s): State<AppState>, Extension(p): Caller) -> ApiResult<Response> {
    let list = entity_list(&s, &p).await?;
    Ok(Json(json!({ "count": list.len(), "results": list })).into_response())
}

async fn oss_entities(State(s): State<AppState>, Extension(p): Caller) -> ApiResult<Response> {
    Ok(Json(entity_list(&s, &p).await?).into_response())
}

/// Deletes every memory of one user, agent or run.
async fn delete_entity(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    Path((kind, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    let parts = match kind.as_str() {
        "user" => ScopeParts::new(Some(name), None, None),
        "agent" => ScopeParts::new(None, Some(name), None),
        "run" => ScopeParts::new(None, None, Some(name)),
        other => {
            return Err(ApiError::invalid(format!(
                "entity type {other:?} is not one of user, agent, run"
            )))
        }
    };
    let n = s.service.delete_all(&p, &parts, &rid.0).await?;
    Ok(Json(json!({ "message": "Entity deleted successfully!", "deleted": n })).into_response())
}

async fn oss_reset(State(s): State<AppState>, Extension(p): Caller) -> ApiResult<Response> {
    s.service.reset(&p, "reset").await?;
    Ok(Json(json!({ "message": "All memories reset" })).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_give_up_their_scope_ids() {
        let mut parts = ScopeParts::default();
        let rest = split_filters(
            Some(json!({"AND": [{"user_id": "alice"}, {"agent_id": "bot"}, {"topic": "food"}]})),
            &mut parts,
        )
        .unwrap();
        assert_eq!(parts.user_id.as_deref(), Some("alice"));
        assert_eq!(parts.agent_id.as_deref(), Some("bot"));
        assert_eq!(rest, Some(json!({"AND": [{"topic": "food"}]})));
        let mut parts = ScopeParts::default();
        assert!(split_filters(
            Some(json!({"OR": [{"user_id": "a"}, {"user_id": "b"}]})),
            &mut parts
        )
        .is_err());
        let mut parts = ScopeParts::new(Some("a".into()), None, None);
        assert!(split_filters(Some(json!({"user_id": "b"})), &mut parts).is_err());
    }

    #[test]
    fn python_dict_filters_parse() {
        assert_eq!(
            loose_dict("{'user_id': 'alice'}").unwrap(),
            json!({"user_id": "alice"})
        );
        assert_eq!(
            loose_dict("{\"run_id\": \"r\"}").unwrap(),
            json!({"run_id": "r"})
        );
        assert!(loose_dict("user_id=alice").is_err());
    }

    #[test]
    fn expiration_dates_read_as_midnight_utc() {
        let t = date_of("expiration_date", &json!("2030-01-02"))
            .unwrap()
            .unwrap();
        assert_eq!(t.to_rfc3339(), "2030-01-02T00:00:00+00:00");
        assert!(date_of("expiration_date", &json!("soon")).is_err());
        assert_eq!(date_of("expiration_date", &Value::Null).unwrap(), None);
    }
}
