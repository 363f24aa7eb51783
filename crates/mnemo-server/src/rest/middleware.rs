//! The layers of every request, outermost first: `observe` (request id, tracing span, metrics by
//! matched route and status), `check_host` (key-less servers only: the `Host` must name this
//! machine), `read_body` (a declared length over the limit is refused before a byte is read; the
//! body must arrive whole within a deadline) and `authenticate` (API key → [`Principal`], then
//! the per-key rate limit, which charges a request by its body's size).

use super::AppState;
use crate::auth::Principal;
use crate::error::{ApiError, ApiKind};
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::time::{Duration, Instant};
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
    // Every answer is what its Content-Type says (JSON, text, the inspector's pages): a browser
    // must never sniff a JSON body holding memory text into HTML or script.
    resp.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// The API key of a request: `Authorization: Bearer KEY`, `Authorization: Token KEY` (Mem0's
/// clients) or `X-API-Key: KEY`. Two different keys in one request are refused (400): which
/// one the caller meant is not ours to guess, and using either would act as a tenant the
/// caller may not have meant.
fn key_of(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let mut from_auth = None;
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let v = v.trim();
        for scheme in ["Bearer ", "Token ", "bearer ", "token "] {
            if let Some(k) = v.strip_prefix(scheme) {
                from_auth = Some(k.trim().to_string());
                break;
            }
        }
    }
    let from_header = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string());
    match (from_auth, from_header) {
        (Some(a), Some(b)) if a != b => Err(ApiError::invalid(
            "the request carries two different API keys (Authorization and X-API-Key); send one",
        )),
        (a, b) => Ok(a.or(b)),
    }
}

pub async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    // Preflight requests carry no credentials; the CORS layer answers them when enabled.
    if req.method() == Method::OPTIONS {
        return next.run(req).await;
    }
    let principal = match &state.keys {
        None => Principal::anonymous_admin(),
        Some(keys) => {
            let presented = match key_of(req.headers()) {
                Ok(k) => k,
                Err(e) => return e.into_response(),
            };
            let Some(secret) = presented else {
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
    // The body is whole by now (`read_body`), so its length is exact.
    let body_bytes = req.body().size_hint().exact().unwrap_or(0);
    if let Err(wait) = state.limiter.check_request(&principal.key_id, body_bytes) {
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

/// The names a key-less server answers to: loopback and the address it is bound to.
#[derive(Debug, Clone)]
pub struct HostGuard {
    pub local_addr: Option<SocketAddr>,
}

impl HostGuard {
    /// Whether a `Host` value (a name and an optional port) names this machine. Any port: a
    /// rebinding page reaches us under its own name, whatever port it puts after it.
    fn allows(&self, authority: &str) -> bool {
        let Some(name) = host_name(authority) else {
            return false;
        };
        let name = name.to_ascii_lowercase();
        matches!(name.as_str(), "localhost" | "127.0.0.1" | "[::1]")
            || self.local_addr.is_some_and(|a| name == ip_name(a.ip()))
    }
}

/// The name part of a `Host` value; `None` when it is empty or a port is not all digits (which
/// also refuses an unbracketed IPv6 address).
fn host_name(authority: &str) -> Option<&str> {
    let end = if authority.starts_with('[') {
        authority.find(']')? + 1
    } else {
        authority.find(':').unwrap_or(authority.len())
    };
    let (name, rest) = authority.split_at(end);
    let port_ok = match rest.strip_prefix(':') {
        None => rest.is_empty(),
        Some(p) => !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()),
    };
    (!name.is_empty() && port_ok).then_some(name)
}

fn ip_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// Refuses a request to a key-less server unless its `Host` (and an absolute-form target's
/// authority) names this machine. A request without `Host` (HTTP/1.0) is refused too: it
/// cannot show where it was meant to go.
pub async fn check_host(State(guard): State<HostGuard>, req: Request, next: Next) -> Response {
    let host = req.headers().get(header::HOST).map(|v| v.to_str().ok());
    let allowed = match host {
        Some(Some(h)) => {
            guard.allows(h)
                && req
                    .uri()
                    .authority()
                    .is_none_or(|a| guard.allows(a.as_str()))
        }
        // No Host, or one that is not even text.
        _ => false,
    };
    if allowed {
        return next.run(req).await;
    }
    tracing::warn!("refused a request whose Host names another machine (DNS rebinding?)");
    let also = guard
        .local_addr
        .map(|a| format!(" or {}", ip_name(a.ip())))
        .unwrap_or_default();
    ApiError::new(
        ApiKind::HostNotAllowed,
        format!(
            "this server runs without API keys and answers only requests whose Host header \
             names localhost, 127.0.0.1, [::1]{also}; the request's Host is missing or names \
             another machine"
        ),
    )
    .into_response()
}

/// The body limit and deadline every request body is read under.
#[derive(Debug, Clone)]
pub struct BodyGuard {
    pub max_body_bytes: usize,
    pub timeout: Duration,
}

impl BodyGuard {
    /// `/mcp` reads JSON-RPC messages up to its own limit; every other route `max_body_bytes`.
    fn limit(&self, req: &Request) -> usize {
        let path = req
            .extensions()
            .get::<MatchedPath>()
            .map_or(req.uri().path(), MatchedPath::as_str);
        if path == "/mcp" || path.starts_with("/mcp/") {
            self.max_body_bytes.max(crate::mcp::MAX_MESSAGE_BYTES)
        } else {
            self.max_body_bytes
        }
    }
}

/// Reads the whole body before anything else looks at the request (authentication included),
/// so that no client holds a connection by sending less than it announced: a declared length
/// over the limit is answered 413 at once, a body that does not arrive whole within the
/// deadline 408, and both close the connection (the rest of the body is never read).
pub async fn read_body(State(guard): State<BodyGuard>, req: Request, next: Next) -> Response {
    let limit = guard.limit(&req);
    let too_large = || {
        ApiError::new(
            ApiKind::PayloadTooLarge,
            format!("the body exceeds the server's size limit of {limit} bytes"),
        )
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return closing(too_large());
    }
    if req.body().is_end_stream() {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(guard.timeout, collect(body, limit)).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Ok(Err(BodyFault::TooLarge)) => closing(too_large()),
        Ok(Err(BodyFault::Broken)) => closing(ApiError::invalid(
            "the body could not be read: it ended before its announced length or was malformed",
        )),
        Err(_) => closing(ApiError::new(
            ApiKind::RequestTimeout,
            format!(
                "the body did not arrive within {} ms; the connection is closed",
                guard.timeout.as_millis()
            ),
        )),
    }
}

enum BodyFault {
    TooLarge,
    Broken,
}

async fn collect(mut body: Body, limit: usize) -> Result<Bytes, BodyFault> {
    let mut buf = Vec::new();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        // Trailers are dropped: no route reads them.
        let Ok(data) = frame.map_err(|_| BodyFault::Broken)?.into_data() else {
            continue;
        };
        if buf.len() + data.len() > limit {
            return Err(BodyFault::TooLarge);
        }
        buf.extend_from_slice(&data);
    }
    Ok(Bytes::from(buf))
}

/// An error answer after which hyper closes the connection instead of reading on.
fn closing(e: ApiError) -> Response {
    let mut resp = e.into_response();
    resp.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

/// How long `/readyz` waits for the store.
pub const READY_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

pub async fn ready(State(state): State<AppState>) -> Response {
    // One primary-key lookup proves the store answers; `stats` would count every table on
    // each probe. "Not found" is the expected answer.
    let store = state.service.memory().store().clone();
    let probe = mnemo_core::MemoryId(uuid::Uuid::nil());
    // Its own deadline: a store that does not answer (a frozen database) is not ready, and the
    // probe says so in time instead of hanging with it.
    let probe = tokio::task::spawn_blocking(move || store.owner_of(probe));
    let Ok(answer) = tokio::time::timeout(READY_DEADLINE, probe).await else {
        return ApiError::new(
            ApiKind::Core(mnemo_core::ErrorKind::Unavailable),
            format!("the store did not answer within {READY_DEADLINE:?}"),
        )
        .into_response();
    };
    match answer {
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
    state.service.refresh_job_metrics().await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_guard_allows_loopback_names_and_the_bound_address_only() {
        let g = HostGuard {
            local_addr: Some("127.0.0.2:8750".parse().unwrap()),
        };
        for ok in [
            "localhost",
            "LOCALHOST:8750",
            "127.0.0.1",
            "127.0.0.1:1",
            "[::1]",
            "[::1]:8750",
            "127.0.0.2",
            "127.0.0.2:8750",
        ] {
            assert!(g.allows(ok), "{ok}");
        }
        for bad in [
            "",
            ":8750",
            "::1",
            "127.0.0.3",
            "rebind.evil.example",
            "localhost.evil.example",
            "localhost:",
            "localhost:80x",
            "evil.example:80@localhost",
            "[::1]x",
            "[::1",
        ] {
            assert!(!g.allows(bad), "{bad}");
        }
        let v6 = HostGuard {
            local_addr: Some("[::1]:9000".parse().unwrap()),
        };
        assert!(v6.allows("[::1]:9000"));
        assert!(!v6.allows("127.0.0.2"));
    }
}
