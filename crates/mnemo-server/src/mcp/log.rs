//! The conversation-log tools: sessions and their messages, a session's window and delete,
//! the profile, and segments with their pages — the same service functions as the REST routes
//! under `/v1/sessions`, `/v1/segments` and `/v1/profile`.

use super::args::Parameters;
use super::{mcp_error, ok_json, MemoryTools, ScopeArgs};
use crate::api::{LogPageParams, ProfileRefreshBody};
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListSessionsArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The next_cursor of the previous page.
    pub cursor: Option<String>,
    /// Page size (default 100, 1 to 1000).
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SessionMessagesArgs {
    /// The session's id.
    pub session_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The next_cursor of the previous page.
    pub cursor: Option<String>,
    /// Page size (default 100, 1 to 1000).
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SessionArgs {
    /// The session's id.
    pub session_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DeleteSessionArgs {
    /// The session's id.
    pub session_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Why (kept in the memories' history).
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RefreshProfileArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Extra instructions for the analysis.
    pub instructions: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SegmentPagesArgs {
    /// The segment's id (a UUID).
    pub segment_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

fn page_params(scope: ScopeArgs, cursor: Option<String>, limit: Option<usize>) -> LogPageParams {
    LogPageParams {
        user_id: scope.user_id,
        agent_id: scope.agent_id,
        run_id: scope.run_id,
        cursor,
        limit,
    }
}

#[tool_router(router = log_router, vis = "pub(super)")]
impl MemoryTools {
    #[tool(
        description = "List a scope's conversation sessions (id, first and last message time, message and page counts), a page at a time (pass next_cursor back as cursor)."
    )]
    async fn list_sessions(
        &self,
        Parameters(a): Parameters<ListSessionsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let q = page_params(a.scope, a.cursor, a.limit);
        ok_json(self.service.sessions(&p, q).await.map_err(mcp_error)?)
    }

    #[tool(
        description = "Read a session's messages in order, a page at a time (pass next_cursor back as cursor). Turns whose memory was deleted, expired or erased are left out."
    )]
    async fn get_session_messages(
        &self,
        Parameters(a): Parameters<SessionMessagesArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let q = page_params(a.scope, a.cursor, a.limit);
        ok_json(
            self.service
                .session_messages(&p, &a.session_id, q)
                .await
                .map_err(mcp_error)?,
        )
    }

    #[tool(
        description = "One session: its times, message and page counts, and its short-term window (recent exchanges)."
    )]
    async fn get_session(
        &self,
        Parameters(a): Parameters<SessionArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        ok_json(
            self.service
                .session(&p, &a.session_id, &a.scope.parts())
                .await
                .map_err(mcp_error)?,
        )
    }

    #[tool(
        description = "Delete every memory of a session (kept for audit; its turns leave searches, lists and context). Use erase_session to remove the text for good."
    )]
    async fn delete_session(
        &self,
        Parameters(a): Parameters<DeleteSessionArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let rid = uuid::Uuid::now_v7().to_string();
        let n = self
            .service
            .delete_session(&p, &a.session_id, &a.scope.parts(), a.reason, &rid)
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "deleted": n }))
    }

    #[tool(
        description = "The user's profile (dimensions with the message ids they rest on) and the user and assistant knowledge of the scope."
    )]
    async fn get_profile(
        &self,
        Parameters(a): Parameters<ScopeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        ok_json(
            self.service
                .profile(&p, &a.parts())
                .await
                .map_err(mcp_error)?,
        )
    }

    #[tool(
        description = "Analyse the user's new conversation pages into the profile and knowledge (needs the server's chat model)."
    )]
    async fn refresh_profile(
        &self,
        Parameters(a): Parameters<RefreshProfileArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let rid = uuid::Uuid::now_v7().to_string();
        let body = ProfileRefreshBody {
            user_id: a.scope.user_id,
            agent_id: a.scope.agent_id,
            run_id: a.scope.run_id,
            instructions: a.instructions,
        };
        ok_json(
            self.service
                .refresh_profile(&p, body, &rid)
                .await
                .map_err(mcp_error)?,
        )
    }

    #[tool(
        description = "List a scope's topic segments (mid-term memory): summary, keywords, heat and its inputs, state (active or evicted), page count."
    )]
    async fn list_segments(
        &self,
        Parameters(a): Parameters<ScopeArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let segments = self
            .service
            .segments(&p, &a.parts())
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "segments": segments }))
    }

    #[tool(description = "A topic segment's pages (exchanges) with their messages, oldest first.")]
    async fn get_segment_pages(
        &self,
        Parameters(a): Parameters<SegmentPagesArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let pages = self
            .service
            .segment_pages(&p, &a.segment_id, &a.scope.parts())
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "pages": pages }))
    }
}
