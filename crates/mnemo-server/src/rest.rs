//! The HTTP surface: the native `/v1` API (with its generated OpenAPI document), the
//! Mem0-compatible routes, MCP over streamable HTTP, health, readiness and metrics, behind
//! the layers every request passes: request ids, metrics, the `Host` check of key-less servers,
//! body limits and the body read timeout (both before authentication), authentication and rate
//! limiting. The header read timeout is the connection's, set where connections are served
//! ([`crate::server`]).

mod blocks;
pub mod extract;
mod graph;
pub mod inspect;
mod jobs;
mod log;
pub mod middleware;
pub mod native;
mod timeline;

pub use middleware::RequestId;

use crate::auth::KeyStore;
use crate::config::ServerConfig;
use crate::error::{ApiError, ApiKind};
use crate::ratelimit::RateLimiter;
use crate::service::Service;
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub service: Arc<Service>,
    /// `None` when the server runs with `--no-auth`.
    pub keys: Option<Arc<KeyStore>>,
    pub limiter: Arc<RateLimiter>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState").finish_non_exhaustive()
    }
}

/// How long a client may take to send a request's headers; then the connection is closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client may take to send a request's body; then 408 and the connection is closed.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Settings of the HTTP layers and connections.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub max_body_bytes: usize,
    /// Origins allowed by CORS; empty turns CORS off (the default).
    pub cors_origins: Vec<String>,
    /// Default [`HEADER_READ_TIMEOUT`]; it also bounds how long a kept-alive connection idles.
    pub header_read_timeout: Duration,
    /// Default [`BODY_READ_TIMEOUT`]: the whole body, not the gap between its chunks, so a
    /// client trickling bytes cannot hold a connection either.
    pub body_read_timeout: Duration,
    /// The address the server listens on: besides the loopback names, the one `Host` a
    /// key-less server accepts. [`crate::server::start_with`] fills it in once bound.
    pub local_addr: Option<SocketAddr>,
}

impl HttpConfig {
    /// The settings `config` gives.
    pub fn new(config: &ServerConfig) -> Self {
        Self {
            max_body_bytes: config.max_body_bytes,
            cors_origins: config.cors_origins.clone(),
            header_read_timeout: Duration::from_secs(config.header_read_timeout_secs),
            body_read_timeout: Duration::from_secs(config.body_read_timeout_secs),
            local_addr: None,
        }
    }
}

/// The whole application router.
pub fn router(state: AppState, http: &HttpConfig) -> Router {
    let (native, openapi) = native::routes()
        .merge(inspect::routes())
        .merge(jobs::routes())
        .merge(graph::routes())
        .merge(blocks::routes())
        .split_for_parts();
    // The document never changes while the server runs: serialise it once.
    let openapi = axum::body::Bytes::from(
        serde_json::to_vec(&openapi).expect("the OpenAPI document serialises"),
    );
    let protected = native
        .merge(crate::mem0::routes())
        .merge(crate::mcp::http_routes(state.clone()))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::authenticate,
        ));
    let open = crate::ui::routes()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(middleware::ready))
        .route("/metrics", get(middleware::metrics))
        .route(
            "/openapi.json",
            get(move || {
                let doc = openapi.clone();
                async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        doc,
                    )
                }
            }),
        );
    let mut app = protected
        .merge(open)
        .fallback(|| async {
            ApiError::new(ApiKind::RouteNotFound, "no such route; see /openapi.json")
        })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                ApiKind::MethodNotAllowed,
                "this route does not take that method",
            )
        })
        .layer(axum::extract::DefaultBodyLimit::max(http.max_body_bytes));
    if !http.cors_origins.is_empty() {
        app = app.layer(middleware::cors(&http.cors_origins));
    }
    // Outside CORS and authentication, so that neither a preflight nor a missing key gets an
    // answer before the body has a deadline; inside `observe`, so refusals are counted.
    app = app.layer(axum::middleware::from_fn_with_state(
        middleware::BodyGuard {
            max_body_bytes: http.max_body_bytes,
            timeout: http.body_read_timeout,
        },
        middleware::read_body,
    ));
    if state.keys.is_none() {
        // Without keys nothing else tells a local client from a web page that rebound its own
        // name to 127.0.0.1; with keys every request proves itself and any name may reach us.
        app = app.layer(axum::middleware::from_fn_with_state(
            middleware::HostGuard {
                local_addr: http.local_addr,
            },
            middleware::check_host,
        ));
    }
    app.layer(axum::middleware::from_fn_with_state(
        state.clone(),
        middleware::observe,
    ))
    .with_state(state)
}
