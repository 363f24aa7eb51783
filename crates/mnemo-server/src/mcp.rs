//! MCP: the memory tools over stdio (`mnemo mcp`) and streamable HTTP (`/mcp`), with the official
//! Rust SDK (`rmcp`). Tools call the same [`Service`] as REST; their errors carry the JSON-RPC code
//! of their kind (see [`crate::error`]) and the kind's name in `data`.
//!
//! Over HTTP the caller is the API key of each request (the auth layer runs before rmcp, so a
//! request without a valid key never reaches a tool). Over stdio the caller is fixed when the
//! process starts: the key given to `mnemo mcp`, or — with none — the local user, who can read the
//! store file anyway.

use crate::api::{AddBody, ListParams, MessageIn, SearchBody, UpdateBody};
use crate::auth::{Principal, ScopeParts};
use crate::error::ApiError;
use crate::service::Service;
use args::Parameters;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorCode, Implementation, ServerCapabilities, ServerConfig,
};
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{
    tool, tool_handler, tool_router, ErrorData as McpError, RoleServer, ServerHandler, ServiceExt,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;

mod args;
mod blocks;
mod context;
mod graph;
mod jobs;
mod links;
mod log;
mod streamable;
mod timeline;
pub use streamable::{
    routes as http_routes, SessionOwners, MAX_MESSAGE_BYTES, MAX_SESSIONS_PER_KEY, SESSION_IDLE,
};

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

/// The body of a session or scope erase, for the scope a tool was given.
fn erase_log_body(
    scope: &ScopeArgs,
    confirm: bool,
    reason: Option<String>,
) -> crate::api::EraseLogBody {
    let parts = scope.parts();
    crate::api::EraseLogBody {
        user_id: parts.user_id.clone(),
        agent_id: parts.agent_id.clone(),
        run_id: parts.run_id.clone(),
        confirm,
        reason,
    }
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
pub struct AddArgs {
    /// A plain text to remember (one user message). Give this or `messages`.
    pub text: Option<String>,
    /// A conversation: a list of {role, content, name?}; system messages are skipped.
    pub messages: Option<Vec<McpMessage>>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// A JSON object of metadata.
    pub metadata: Option<serde_json::Map<String, Value>>,
    /// Extract facts with the server's chat model (its default when one is configured).
    pub infer: Option<bool>,
    /// A retry with the same key returns the first result and writes nothing.
    pub idempotency_key: Option<String>,
    /// `note` stores each message as a note (keywords, tags, context, links to related
    /// notes); `procedural` summarises an agent's steps. Default: facts or raw memories.
    pub memory_type: Option<String>,
    /// A note's keywords, kept as given (only with memory_type note).
    pub keywords: Option<Vec<String>>,
    /// A note's tags, kept as given (only with memory_type note).
    pub tags: Option<Vec<String>>,
    /// A note's context line, kept as given (only with memory_type note).
    pub context: Option<String>,
    /// Check the add, queue it and answer at once with a job id (see `get_job`).
    pub async_mode: Option<bool>,
    /// When the messages were said (RFC 3339, default now): "yesterday" in them is read
    /// against it. From 1900 to a day ahead.
    pub timestamp: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpMessage {
    /// user, assistant, system or tool.
    pub role: String,
    /// A string, or a list of parts: {"type": "text", "text": ...} (joined in order) and
    /// {"type": "image_url", "image_url": {"url": ...}} (needs a chat model reading images).
    pub content: Value,
    pub name: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// How many memories to return (default 10).
    pub top_k: Option<usize>,
    /// A filter over metadata and times, e.g. {"topic": "food"} or {"AND": [...]}.
    pub filters: Option<serde_json::Map<String, Value>>,
    /// Search what was valid at this time (RFC 3339), superseded facts included.
    pub as_of: Option<String>,
    /// Also return up to this many linked notes per hit, after the hits (each with `via`).
    pub expand_links: Option<usize>,
    /// What the query's relative time ("last week") is resolved against (RFC 3339; default
    /// now). Memories whose event time falls in it rank higher.
    pub reference_date: Option<String>,
    /// Graph search for this call: true walks the relations of the entities the query names
    /// and ranks the memories that state them (the answer then lists the `relations` used);
    /// false turns it off; absent: the server's setting.
    pub graph: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Page size (default 100, at most 1000).
    pub limit: Option<usize>,
    /// The next_cursor of the previous page.
    pub cursor: Option<String>,
    /// List what was valid at this time (RFC 3339), superseded facts included.
    pub as_of: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IdArgs {
    /// The memory's id (a UUID).
    pub memory_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// The memory's id (a UUID).
    pub memory_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The audit view: any state, with source messages, links and entities.
    pub detail: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateArgs {
    /// The memory's id (a UUID).
    pub memory_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The new text (re-embedded).
    pub text: Option<String>,
    /// New metadata (a JSON object).
    pub metadata: Option<serde_json::Map<String, Value>>,
    /// Why (kept in the memory's history).
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteArgs {
    /// The memory's id (a UUID).
    pub memory_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Why (kept in the memory's history).
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EraseArgs {
    /// The memory's id (a UUID).
    pub memory_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Also erase the content of the messages the memory came from.
    pub sources: Option<bool>,
    /// Why (kept in the tombstone event; never the erased text).
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EraseSessionArgs {
    /// The session's id.
    pub session_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Why (kept in the tombstone events; never an erased text).
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EraseScopeArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Must be true: everything of the scope is erased for good.
    pub confirm: Option<bool>,
    /// Why (kept in the tombstone events; never an erased text).
    pub reason: Option<String>,
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

#[tool_router]
impl MemoryTools {
    pub fn new(service: Arc<Service>, fixed: Option<Principal>) -> Self {
        Self {
            service,
            fixed,
            tool_router: Self::tool_router()
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

    #[tool(
        description = "Remember a text or a conversation for a user, agent or run. Returns the memories written, each with its id and event (ADD, UPDATE, DELETE)."
    )]
    async fn add_memory(
        &self,
        Parameters(a): Parameters<AddArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let body = AddBody {
            messages: a.messages.map(|ms| {
                ms.into_iter()
                    .map(|m| MessageIn {
                        role: m.role,
                        content: m.content,
                        name: m.name,
                    })
                    .collect()
            }),
            text: a.text,
            user_id: a.scope.user_id,
            agent_id: a.scope.agent_id,
            run_id: a.scope.run_id,
            metadata: a.metadata.map(Value::Object),
            infer: a.infer,
            idempotency_key: a.idempotency_key,
            memory_type: a.memory_type,
            keywords: a.keywords.map(|k| json!(k)),
            tags: a.tags.map(|t| json!(t)),
            context: a.context,
            timestamp: instant("timestamp", a.timestamp.as_deref())?,
            ..AddBody::default()
        };
        let rid = uuid::Uuid::now_v7().to_string();
        if a.async_mode == Some(true) {
            let job = self
                .service
                .add_async(&p, body, &rid)
                .await
                .map_err(mcp_error)?;
            return ok_json(crate::service::jobs::queued(&job));
        }
        ok_json(self.service.add(&p, body, &rid).await.map_err(mcp_error)?)
    }

    #[tool(
        description = "Search a scope's memories (hybrid: meaning, keywords and named entities). Returns the best matches with their scores. With `graph: true` it also walks the entity graph from the entities the query names (for questions that need two facts, like where someone's sister lives) and returns the `relations` it used."
    )]
    async fn search_memories(
        &self,
        Parameters(a): Parameters<SearchArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let body = SearchBody {
            query: a.query,
            user_id: a.scope.user_id,
            agent_id: a.scope.agent_id,
            run_id: a.scope.run_id,
            top_k: a.top_k,
            filters: a.filters.map(Value::Object),
            as_of: as_of(a.as_of.as_deref())?,
            expand_links: a.expand_links.unwrap_or(0),
            reference_date: instant("reference_date", a.reference_date.as_deref())?,
            graph: a.graph,
            ..SearchBody::default()
        };
        let out = self.service.search(&p, body).await.map_err(mcp_error)?;
        let mut answer = json!({ "results": out.results });
        if let Some(t) = out.temporal {
            answer["temporal"] = json!(t);
        }
        if !out.relations.is_empty() {
            answer["relations"] = json!(out.relations);
        }
        ok_json(answer)
    }

    #[tool(
        description = "List a scope's memories, oldest first, a page at a time (pass next_cursor back as cursor)."
    )]
    async fn list_memories(
        &self,
        Parameters(a): Parameters<ListArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let params = ListParams {
            user_id: a.scope.user_id,
            agent_id: a.scope.agent_id,
            run_id: a.scope.run_id,
            limit: a.limit,
            cursor: a.cursor,
            as_of: as_of(a.as_of.as_deref())?,
            ..ListParams::default()
        };
        ok_json(self.service.list(&p, params).await.map_err(mcp_error)?)
    }

    #[tool(
        description = "Get one memory by id. With detail=true: in any state, with its source messages (their text), links and entities."
    )]
    async fn get_memory(
        &self,
        Parameters(a): Parameters<GetArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        if a.detail.unwrap_or(false) {
            return ok_json(
                self.service
                    .detail(&p, &a.memory_id, &a.scope.parts())
                    .await
                    .map_err(mcp_error)?,
            );
        }
        ok_json(
            self.service
                .get(&p, &a.memory_id, &a.scope.parts(), false)
                .await
                .map_err(mcp_error)?,
        )
    }

    #[tool(
        description = "Change a memory's text and/or metadata; the change is kept in its history."
    )]
    async fn update_memory(
        &self,
        Parameters(a): Parameters<UpdateArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let body = UpdateBody {
            text: a.text,
            metadata: a.metadata.map(Value::Object),
            expires_at: None,
            reason: a.reason,
        };
        let rid = uuid::Uuid::now_v7().to_string();
        ok_json(
            self.service
                .update(&p, &a.memory_id, &a.scope.parts(), body, &rid)
                .await
                .map_err(mcp_error)?,
        )
    }

    #[tool(description = "Delete one memory by id (kept for audit; gone from searches and lists).")]
    async fn delete_memory(
        &self,
        Parameters(a): Parameters<DeleteArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let rid = uuid::Uuid::now_v7().to_string();
        self.service
            .delete(&p, &a.memory_id, &a.scope.parts(), a.reason, &rid)
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "deleted": a.memory_id }))
    }

    #[tool(
        description = "Erase one memory for good: its text, metadata and index entries and the texts of its history are removed from the store (optionally its source messages too); only its id, times and a tombstone event remain. Use delete_memory for an ordinary, auditable delete."
    )]
    async fn erase_memory(
        &self,
        Parameters(a): Parameters<EraseArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let rid = uuid::Uuid::now_v7().to_string();
        let body = crate::api::EraseBody {
            sources: a.sources.unwrap_or(false),
            reason: a.reason,
            ..Default::default()
        };
        ok_json(
            self.service
                .erase(&p, &a.memory_id, &a.scope.parts(), body, &rid)
                .await
                .map_err(mcp_error)?,
        )
    }

    #[tool(
        description = "Erase one session of a scope for good: its messages' content, its pages, and every memory that came from it; ids, times and tombstone events remain."
    )]
    async fn erase_session(
        &self,
        Parameters(a): Parameters<EraseSessionArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let rid = uuid::Uuid::now_v7().to_string();
        let body = erase_log_body(&a.scope, false, a.reason);
        ok_json(
            self.service
                .erase_session(&p, &a.session_id, body, &rid)
                .await
                .map_err(mcp_error)?,
        )
    }

    #[tool(
        description = "Erase everything of a scope for good (forget this user): every memory, message, page and summary; ids and tombstone events remain. Needs confirm=true."
    )]
    async fn erase_scope(
        &self,
        Parameters(a): Parameters<EraseScopeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let rid = uuid::Uuid::now_v7().to_string();
        let body = erase_log_body(&a.scope, a.confirm.unwrap_or(false), a.reason);
        ok_json(
            self.service
                .erase_scope(&p, body, &rid)
                .await
                .map_err(mcp_error)?,
        )
    }

    #[tool(description = "Delete every memory of a scope (a user, agent or run).")]
    async fn delete_all_memories(
        &self,
        Parameters(a): Parameters<ScopeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let rid = uuid::Uuid::now_v7().to_string();
        let n = self
            .service
            .delete_all(&p, &a.parts(), &rid)
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "deleted": n }))
    }

    #[tool(
        description = "The history of a memory: every change, with old and new text and the reason, oldest first."
    )]
    async fn memory_history(
        &self,
        Parameters(a): Parameters<IdArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let events = self
            .service
            .history(&p, &a.memory_id, &a.scope.parts())
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "results": events }))
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
