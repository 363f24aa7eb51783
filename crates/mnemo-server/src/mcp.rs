//! MCP: the memory tools over stdio (`mnemo mcp`) and streamable HTTP (`/mcp`), with the official
//! Rust SDK (`rmcp`). Tools call the same [`Service`] as REST; their errors carry the JSON-RPC code
//! of their kind (see [`crate::error`]) and the kind's name in `data`.
//!
//! Over HTTP the caller is the API key of each request (the auth layer runs before rmcp, so a
//! request without a valid key never reaches a tool). Over stdio the caller is fixed when the
//! process starts: the key given to `mnemo mcp`, or — with none — the local user, who can read the
//! store file anyway.
//!
//! The tools are grouped by capability, each file a `#[tool_router]` of its own joined in
//! [`MemoryTools::new`]: `write` and `read` (memories), `erase`, `links`, `context`, `log`,
//! `jobs`, `timeline`, `graph`, `blocks`. This file holds what they share: the server, the
//! caller of a request, the scope arguments and the error mapping.

use crate::auth::{Principal, ScopeParts};
use crate::error::ApiError;
use crate::service::Service;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorCode, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool_handler, ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

mod args;
mod blocks;
mod context;
mod erase;
mod graph;
mod jobs;
mod links;
mod log;
mod read;
mod streamable;
mod timeline;
mod write;
pub use erase::{EraseArgs, EraseScopeArgs, EraseSessionArgs};
pub use read::{GetArgs, ListArgs, SearchArgs};
pub use streamable::{
    routes as http_routes, SessionOwners, MAX_MESSAGE_BYTES, MAX_SESSIONS_PER_KEY, SESSION_IDLE,
};
pub use write::{AddArgs, DeleteArgs, McpMessage, UpdateArgs};

fn mcp_error(e: ApiError) -> McpError {
    let (_, code) = e.kind.codes();
    McpError::new(
        ErrorCode(code),
        e.message,
        Some(json!({ "kind": e.kind.as_str(), "retryable": e.kind.retryable() })),
    )
}

fn as_of(raw: Option<&str>) -> Result<Option<chrono::DateTime<chrono::Utc>>, McpError> {
    instant("as_of", raw)
}

/// An RFC 3339 argument; invalid params naming `field` otherwise.
fn instant(
    field: &str,
    raw: Option<&str>,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, McpError> {
    raw.map(|t| mnemo_core::filter::parse_rfc3339(field, t).map_err(|e| mcp_error(e.into())))
        .transpose()
}

fn ok_json(v: impl Serialize) -> Result<CallToolResult, McpError> {
    let text = serde_json::to_string(&v)
        .map_err(|e| McpError::internal_error(format!("serialising the result: {e}"), None))?;
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
}

/// The scope every tool takes; a bound API key fills in its own parts.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScopeArgs {
    /// The user the memories belong to.
    pub user_id: Option<String>,
    /// The agent the memories belong to.
    pub agent_id: Option<String>,
    /// The run (session) the memories belong to.
    pub run_id: Option<String>,
}

impl ScopeArgs {
    fn parts(&self) -> ScopeParts {
        ScopeParts::new(
            self.user_id.clone(),
            self.agent_id.clone(),
            self.run_id.clone(),
        )
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    /// The memory's id (a UUID).
    pub memory_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

/// The MCP server: the memory tools over one service.
#[derive(Clone)]
pub struct MemoryTools {
    service: Arc<Service>,
    /// The caller over stdio; `None` over HTTP, where each request carries its key.
    fixed: Option<Principal>,
    tool_router: ToolRouter<Self>,
}

impl std::fmt::Debug for MemoryTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTools").finish_non_exhaustive()
    }
}

impl MemoryTools {
    pub fn new(service: Arc<Service>, fixed: Option<Principal>) -> Self {
        Self {
            service,
            fixed,
            tool_router: Self::write_router()
                + Self::read_router()
                + Self::erase_router()
                + Self::link_router()
                + Self::context_router()
                + Self::log_router()
                + Self::job_router()
                + Self::timeline_router()
                + Self::graph_router()
                + Self::block_router(),
        }
    }

    /// The caller of this request: the HTTP request's key (set by the auth layer), or the fixed
    /// stdio caller. Neither is a refusal, never a default.
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Result<Principal, McpError> {
        if let Some(p) = ctx
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
        {
            return Ok(p.clone());
        }
        self.fixed.clone().ok_or_else(|| {
            mcp_error(ApiError::new(
                crate::error::ApiKind::Unauthenticated,
                "no API key on this request",
            ))
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mnemo", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "mnemo keeps scoped memories for agents. Name a user_id, agent_id or run_id on \
                 every call (an API key bound to a scope fills in its own).",
            )
    }
}

/// Serves the tools on stdin/stdout until the client closes them.
pub async fn serve_stdio(service: Arc<Service>, caller: Principal) -> mnemo_core::Result<()> {
    let running = MemoryTools::new(service, Some(caller))
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| mnemo_core::Error::Unavailable {
            component: "mcp".into(),
            reason: e.to_string(),
        })?;
    running
        .waiting()
        .await
        .map_err(|e| mnemo_core::Error::internal(format!("mcp stdio: {e}")))?;
    Ok(())
}
