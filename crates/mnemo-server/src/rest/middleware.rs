//! The layers of every request: `observe` (request id, tracing span, metrics by matched route
//! and status) and `authenticate` (API key → [`Principal`], then the per-key rate limit).

use super::AppState;
use crate::auth::Principal;
use crate::error::{ApiError, ApiKind};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::time::Instant;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tracing::Instrument;

/// The id of one request, in its extensions and its `x-request-id` response header.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

pub async fn observe(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let t = Instant::now();
    let id = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= 64 && v.chars().all(|c| c.is_ascii_graphic()))
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
    let method = req.method().clone();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let body_len = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    req.extensions_mut().insert(RequestId(id.clone()));
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        %method,
        %route,
        body_len,
        key = tracing::field::Empty
    );
    let mut resp = next.run(req).instrument(span.clone()).await;
    let status = resp.status().as_u16();
    let secs = t.elapsed().as_secs_f64();
    state
        .service
        .metrics()
        .observe_request(method.as_str(), &route, status, secs);
    let kind = resp.extensions().get::<ApiKind>().map(|k| k.as_str());
    span.in_scope(|| tracing::info!(status, ms = secs * 1e3, error_kind = kind, "served"));
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    resp
}

/// The API key of a request: `Authorization: Bearer KEY`, `Authorization: Token KEY` (Mem0's
/// clients) or `X-API-Key: KEY`.
fn key_of(headers: &HeaderMap) -> Option<String> {
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let v = v.trim();
        for scheme in ["Bearer ", "Token ", "bearer ", "token "] {
            if let Some(k) = v.strip_prefix(scheme) {
                return Some(k.trim().to_string());
            }
        }
    }
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
}

pub async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    // Preflight requests carry no credentials; the CORS layer answers them when enabled.
    if req.method() == Method::OPTIONS {
        return next.run(req).await;
    }
    let principal = match &state.keys {
        None => Principal::anonymous_admin(),
        Some(keys) => {
            let Some(secret) = key_of(req.headers()) else {
                return ApiError::new(
                    ApiKind::Unauthenticated,
                    "an API key is required: send `Authorization: Bearer KEY` (create one with `mnemo keys create`)",
                )
                .into_response();
            };
            let keys = keys.clone();
            match tokio::task::spawn_blocking(move || keys.authenticate(&secret)).await {
                Ok(Ok(p)) => p,
                Ok(Err(e)) => return e.into_response(),
                Err(_) => {
                    return ApiError::from(mnemo_core::Error::internal("key lookup panicked"))
                        .into_response()
                }
            }
        }
    };
    if let Err(wait) = state.limiter.check(&principal.key_id) {
        let mut e = ApiError::new(
            ApiKind::Core(mnemo_core::ErrorKind::RateLimited),
            "this API key is over its request rate; retry later",
        );
        e.retry_after = Some(wait.as_secs().max(1));
        return e.into_response();
    }
    tracing::Span::current().record("key", principal.key_id.as_str());
    req.extensions_mut().insert(principal);
    next.run(req).await
}

pub async fn ready(State(state): State<AppState>) -> Response {
    // One primary-key lookup proves the store answers; `stats` would count every table on
    // each probe. "Not found" is the expected answer.
    let store = state.service.memory().store().clone();
    let probe = mnemo_core::MemoryId(uuid::Uuid::nil());
    match tokio::task::spawn_blocking(move || store.owner_of(probe)).await {
        Ok(Ok(_)) => (axum::http::StatusCode::OK, "ready").into_response(),
        Ok(Err(e)) if e.kind() == mnemo_core::ErrorKind::NotFound => {
            (axum::http::StatusCode::OK, "ready").into_response()
        }
        Ok(Err(e)) => ApiError::new(
            ApiKind::Core(mnemo_core::ErrorKind::Unavailable),
            format!("the store is not ready: {}", e.kind().as_str()),
        )
        .into_response(),
        Err(_) => {
            ApiError::from(mnemo_core::Error::internal("readiness probe panicked")).into_response()
        }
    }
}

pub async fn metrics(State(state): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.service.metrics().render(),
    )
        .into_response()
}

pub fn cors(origins: &[String]) -> CorsLayer {
    let list: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(list))
        .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
        .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
}
