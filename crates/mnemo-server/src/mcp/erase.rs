//! The erase tools: one memory, one session or a whole scope, for good (`erase_memory`,
//! `erase_session`, `erase_scope`); unlike `delete_memory`, nothing of the text stays for audit.

use super::args::Parameters;
use super::{mcp_error, ok_json, MemoryTools, ScopeArgs};
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};
use serde::Deserialize;

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

#[tool_router(router = erase_router, vis = "pub(super)")]
impl MemoryTools {
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
}
