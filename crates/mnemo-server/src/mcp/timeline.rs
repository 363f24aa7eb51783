//! The timeline tool (`timeline`): a scope's events in event-time order with their source
//! turns — the same service function as `GET /v1/timeline`.

use super::args::Parameters;
use super::{instant, mcp_error, ok_json, MemoryTools, ScopeArgs};
use crate::api::TimelineParams;
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct TimelineArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// Only events that end after this time (RFC 3339).
    pub from: Option<String>,
    /// Only events that start before this time (RFC 3339).
    pub to: Option<String>,
    /// The next_cursor of the previous page.
    pub cursor: Option<String>,
    /// Page size (default 100, 1 to 1000).
    pub limit: Option<usize>,
}

#[tool_router(router = timeline_router, vis = "pub(super)")]
impl MemoryTools {
    #[tool(
        description = "A scope's memories in the order their events happened (not when they were learnt), each with its event time and the turn it was said in; from/to keep events overlapping that range. A page at a time (pass next_cursor back as cursor)."
    )]
    async fn timeline(
        &self,
        Parameters(a): Parameters<TimelineArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let q = TimelineParams {
            user_id: a.scope.user_id,
            agent_id: a.scope.agent_id,
            run_id: a.scope.run_id,
            from: instant("from", a.from.as_deref())?,
            to: instant("to", a.to.as_deref())?,
            kinds: None,
            limit: a.limit,
            cursor: a.cursor,
        };
        ok_json(self.service.timeline(&p, q).await.map_err(mcp_error)?)
    }
}
