//! The HTTP surface: the native `/v1` API (with its generated OpenAPI document), the
//! Mem0-compatible routes, MCP over streamable HTTP, health, readiness and metrics, behind
//! the layers every request passes: request ids, metrics, authentication, rate limiting and
//! body limits.

pub mod extract;
pub mod middleware;
pub mod native;

pub use middleware::RequestId;

use crate::auth::KeyStore;
use crate::error::{ApiError, ApiKind};
use crate::ratelimit::RateLimiter;
use crate::service::Service;
use axum::routing::get;
use axum::Router;
use std::sync::Arc;

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

/// Settings of the HTTP layers.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub max_body_bytes: usize,
    /// Origins allowed by CORS; empty turns CORS off (the default).
    pub cors_origins: Vec<String>,
}

/// The whole application router.
pub fn router(state: AppState, http: &HttpConfig) -> Router {
    let (native, openapi) = native::routes().split_for_parts();
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
    let open = Router::new()
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
    app.layer(axum::middleware::from_fn_with_state(
        state.clone(),
        middleware::observe,
    ))
    .with_state(state)
}
