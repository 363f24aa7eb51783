//! The job tool (`get_job`): the status of an add queued with `async_mode`. It calls the same
//! service function as `GET /v1/jobs/{id}`, so a job of a scope the caller may not see is
//! answered like one that does not exist.

use super::args::Parameters;
use super::{mcp_error, ok_json, MemoryTools};
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct JobArgs {
    /// The job id an async add answered with.
    pub job_id: String,
}

#[tool_router(router = job_router, vis = "pub(super)")]
impl MemoryTools {
    #[tool(
        description = "The status of an add queued with async_mode: pending, running, done (with the memories written) or failed (with the error)."
    )]
    async fn get_job(
        &self,
        Parameters(a): Parameters<JobArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let job = self.service.job(&p, &a.job_id).await.map_err(mcp_error)?;
        ok_json(mnemo::job_view(&job))
    }
}
