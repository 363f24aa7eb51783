//! The `get_context` tool: a prompt-ready context pack under a token budget, from the same
//! service function as `POST /v1/context`.

use super::args::Parameters;
use super::{mcp_error, ok_json, MemoryTools, ScopeArgs};
use crate::api::ContextBody;
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ContextArgs {
    /// What the agent is about to answer.
    pub query: String,
    /// The most tokens the pack may take (1 to 200000).
    pub budget_tokens: i64,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The current conversation session: its recent exchanges are included.
    pub session_id: Option<String>,
    /// Leave the user profile out.
    pub no_profile: Option<bool>,
    /// Leave the core memory blocks out (the pack starts with them otherwise).
    pub no_blocks: Option<bool>,
    /// The tokenizer to count with (default cl100k_base).
    pub tokenizer: Option<String>,
}

#[tool_router(router = context_router, vis = "pub(super)")]
impl MemoryTools {
    #[tool(
        description = "What the agent should know now, as one prompt-ready text that fits a token budget: the user profile, the current session's recent exchanges, matched topic segments and memories. Each item says why it was chosen and its token count; `rendered` is the text to put in the prompt."
    )]
    async fn get_context(
        &self,
        Parameters(a): Parameters<ContextArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let body = ContextBody {
            query: a.query,
            user_id: a.scope.user_id,
            agent_id: a.scope.agent_id,
            run_id: a.scope.run_id,
            budget_tokens: a.budget_tokens,
            session_id: a.session_id,
            no_profile: a.no_profile.unwrap_or(false),
            no_blocks: a.no_blocks.unwrap_or(false),
            memory_candidates: None,
            tokenizer: a.tokenizer,
        };
        ok_json(self.service.context(&p, body).await.map_err(mcp_error)?)
    }
}
