//! `/mcp` over streamable HTTP: rmcp's service behind two guards of our own.
//!
//! - **Sessions belong to the key that opened them.** rmcp knows sessions only by their id, so
//!   anyone holding an id could resume its event stream (and read another caller's tool results)
//!   or end it. [`SessionOwners`] records the key id of the request that created each session; a
//!   request naming a session with any other key gets exactly the answer an unknown session gets.
//! - **Bounded sessions.** A key holds at most [`MAX_SESSIONS_PER_KEY`] live sessions (one
//!   more `initialize` is refused with 429 until one ends), and a session that sees no request
//!   for [`SESSION_IDLE`] is ended (rmcp's default was five minutes), so one key cannot make the
//!   server hold thousands of idle sessions.
//! - **JSON-RPC errors for JSON-RPC mistakes.** rmcp answers an unparsable body with HTTP 415 and
//!   a `tools/call` whose `arguments` is not an object with "method not found"; clients expect
//!   −32700 (parse error), −32600 (invalid request) and −32602 (invalid params).

use crate::auth::Principal;
use crate::rest::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;

const SESSION_HEADER: &str = "mcp-session-id";

/// The key id that created each live session. Sessions that rmcp ended by itself (idle
/// timeout) are pruned when the table has doubled since the last pruning.
pub struct SessionOwners {
    manager: Arc<LocalSessionManager>,
    owners: parking_lot::Mutex<HashMap<String, String>>,
    prune_at: parking_lot::Mutex<usize>,
}

const MIN_PRUNE_AT: usize = 1024;

/// Live MCP sessions one key may hold at once.
pub const MAX_SESSIONS_PER_KEY: usize = 32;

/// A session with no request for this long is ended.
pub const SESSION_IDLE: std::time::Duration = std::time::Duration::from_secs(60);

impl SessionOwners {
    fn new(manager: Arc<LocalSessionManager>) -> Self {
        Self {
            manager,
            owners: parking_lot::Mutex::new(HashMap::new()),
            prune_at: parking_lot::Mutex::new(MIN_PRUNE_AT),
        }
    }

    /// True when `session` was created with `key_id`. A session this table does not know is
    /// nobody's: it is refused like a foreign one, so the two cannot be told apart.
    pub fn owned_by(&self, session: &str, key_id: &str) -> bool {
        self.owners
            .lock()
            .get(session)
            .is_some_and(|owner| owner == key_id)
    }

    async fn record(&self, session: String, key_id: String) {
        let len = {
            let mut owners = self.owners.lock();
            owners.insert(session, key_id);
            owners.len()
        };
        if len >= *self.prune_at.lock() {
            self.prune().await;
        }
    }

    /// How many live sessions `key_id` holds; sessions rmcp already ended are forgotten.
    async fn live_sessions_of(&self, key_id: &str) -> usize {
        let ids: Vec<String> = self
            .owners
            .lock()
            .iter()
            .filter(|(_, k)| k.as_str() == key_id)
            .map(|(id, _)| id.clone())
            .collect();
        if ids.len() < MAX_SESSIONS_PER_KEY {
            return ids.len();
        }
        let mut live = 0;
        for id in ids {
            if matches!(
                self.manager.has_session(&Arc::from(id.as_str())).await,
                Ok(true)
            ) {
                live += 1;
            } else {
                self.forget(&id);
            }
        }
        live
    }

    fn forget(&self, session: &str) {
        self.owners.lock().remove(session);
    }

    async fn prune(&self) {
        let ids: Vec<String> = self.owners.lock().keys().cloned().collect();
        let mut gone = Vec::new();
        for id in ids {
            let live = self.manager.has_session(&Arc::from(id.as_str())).await;
            if !matches!(live, Ok(true)) {
                gone.push(id);
            }
        }
        let mut owners = self.owners.lock();
        for id in gone {
            owners.remove(&id);
        }
        *self.prune_at.lock() = (owners.len() * 2).max(MIN_PRUNE_AT);
    }

    pub fn len(&self) -> usize {
        self.owners.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// rmcp's own answer to a session id it does not know, byte for byte.
fn unknown_session() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

fn jsonrpc_error(id: Value, code: i64, message: &str) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    let status = if code == -32602 {
        // A well-formed request with bad params is answered like any tool error: HTTP 200.
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}

/// The JSON-RPC error a POST body earns before rmcp sees it, if any.
fn check_message(bytes: &[u8]) -> Option<Response> {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return Some(jsonrpc_error(
            Value::Null,
            -32700,
            "parse error: the body is not JSON",
        ));
    };
    let Some(obj) = value.as_object() else {
        return Some(jsonrpc_error(
            Value::Null,
            -32600,
            "invalid request: send one JSON-RPC message object (batches are not supported)",
        ));
    };
    let id = obj.get("id").cloned().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(jsonrpc_error(
            id,
            -32600,
            "invalid request: `jsonrpc` must be \"2.0\"",
        ));
    }
    let method = obj.get("method").and_then(Value::as_str);
    if method == Some("tools/call") {
        let params = obj.get("params");
        let bad = match params.and_then(Value::as_object) {
            None => Some("`params` must be an object with `name` and `arguments`"),
            Some(p) if !p.get("name").is_some_and(Value::is_string) => {
                Some("`params.name` must be a tool name (a string)")
            }
            Some(p)
                if p.get("arguments")
                    .is_some_and(|a| !a.is_object() && !a.is_null()) =>
            {
                Some("`params.arguments` must be a JSON object")
            }
            Some(_) => None,
        };
        if let Some(why) = bad {
            return Some(jsonrpc_error(id, -32602, &format!("invalid params: {why}")));
        }
    }
    None
}

/// The guard in front of rmcp: session ownership for every method, message checks for POST.
async fn guard(State(owners): State<Arc<SessionOwners>>, req: Request, next: Next) -> Response {
    // The auth layer runs first and always leaves a principal (anonymous without keys).
    let Some(key_id) = req
        .extensions()
        .get::<Principal>()
        .map(|p| p.key_id.clone())
    else {
        return unknown_session();
    };
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(s) = &session {
        if !owners.owned_by(s, &key_id) {
            return unknown_session();
        }
    } else if req.method() == Method::POST
        && owners.live_sessions_of(&key_id).await >= MAX_SESSIONS_PER_KEY
    {
        return crate::error::ApiError::new(
            crate::error::ApiKind::Core(mnemo_core::ErrorKind::RateLimited),
            format!(
                "this key holds {MAX_SESSIONS_PER_KEY} MCP sessions, the most one key may; end one (DELETE /mcp) or let it idle out ({} s)",
                SESSION_IDLE.as_secs()
            ),
        )
        .into_response();
    }
    let method = req.method().clone();
    let req = if method == Method::POST {
        let (parts, body) = req.into_parts();
        let bytes: Bytes = match axum::body::to_bytes(body, MAX_MESSAGE_BYTES).await {
            Ok(b) => b,
            Err(_) => {
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("Payload Too Large: request body exceeds {MAX_MESSAGE_BYTES} bytes"),
                )
                    .into_response()
            }
        };
        if let Some(refusal) = check_message(&bytes) {
            return refusal;
        }
        Request::from_parts(parts, Body::from(bytes))
    } else {
        req
    };
    let resp = next.run(req).await;
    match &session {
        None => {
            if let Some(created) = resp
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
            {
                owners.record(created.to_string(), key_id).await;
            }
        }
        Some(s) if resp.status() == StatusCode::NOT_FOUND => owners.forget(s),
        Some(s) if method == Method::DELETE && resp.status().is_success() => owners.forget(s),
        Some(_) => {}
    }
    resp
}

/// The largest JSON-RPC message `/mcp` reads (rmcp's own default).
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// `/mcp`: streamable HTTP, behind the same auth layer as the REST routes.
pub fn routes(state: AppState) -> Router<AppState> {
    let service = state.service.clone();
    // rmcp's Host check (loopback names only) guards key-less local servers against DNS
    // rebinding; with API keys every request proves itself, and clients may use any host name.
    let config = if state.keys.is_some() {
        StreamableHttpServerConfig::default().disable_allowed_hosts()
    } else {
        StreamableHttpServerConfig::default()
    }
    .with_max_request_body_bytes(MAX_MESSAGE_BYTES);
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(SESSION_IDLE);
    let manager = Arc::new(manager);
    let owners = Arc::new(SessionOwners::new(manager.clone()));
    let mcp = StreamableHttpService::new(
        move || Ok(super::MemoryTools::new(service.clone(), None)),
        manager,
        config,
    );
    Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn_with_state(owners, guard))
}
