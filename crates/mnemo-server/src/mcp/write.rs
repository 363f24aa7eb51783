//! The tools that write memories: `add_memory`, `update_memory`, `delete_memory` and
//! `delete_all_memories`, over the same service functions as the REST routes.

use super::args::Parameters;
use super::{instant, mcp_error, ok_json, MemoryTools, ScopeArgs};
use crate::api::{AddBody, MessageIn, UpdateBody};
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};
use serde::Deserialize;
use serde_json::{json, Value};

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

#[tool_router(router = write_router, vis = "pub(super)")]
impl MemoryTools {
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
}
