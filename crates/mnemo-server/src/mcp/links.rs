//! The link tools: list, add and remove the links between memories (`get_links`, `add_link`,
//! `remove_link`). They call the same service functions as `/v1/memories/{id}/links`, so the
//! scope rules are the REST routes' own: the key's binding picks the scope, both ends of a new
//! link must lie in it, and an id the scope cannot see is answered like one that does not exist.

use super::args::Parameters;
use super::{mcp_error, ok_json, IdArgs, MemoryTools, ScopeArgs};
use crate::api::{LinkBody, LinkIn, UnlinkParams};
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AddLinkArgs {
    /// The memory the link starts from (a UUID).
    pub memory_id: String,
    /// The memory it points to (a UUID of the same scope).
    pub to: String,
    /// How strongly they are related, in [0, 1] (default 1).
    pub strength: Option<f32>,
    /// `related` (default), `continues` or `derived_from`.
    pub kind: Option<String>,
    /// Why they are linked (kept with the link).
    pub reason: Option<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RemoveLinkArgs {
    /// The memory the link starts from (a UUID).
    pub memory_id: String,
    /// The memory it points to (a UUID).
    pub to: String,
    /// The link's kind (default `related`).
    pub kind: Option<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[tool_router(router = link_router, vis = "pub(super)")]
impl MemoryTools {
    #[tool(
        description = "The links of a memory, both directions: the other memory, kind, strength, author (model, rule or caller) and reason."
    )]
    async fn get_links(
        &self,
        Parameters(a): Parameters<IdArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let links = self
            .service
            .links(&p, &a.memory_id, &a.scope.parts())
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "results": links }))
    }

    #[tool(
        description = "Link a memory to another memory of the same scope (author: caller). Returns the memory's links afterwards."
    )]
    async fn add_link(
        &self,
        Parameters(a): Parameters<AddLinkArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let body = LinkBody {
            user_id: a.scope.user_id,
            agent_id: a.scope.agent_id,
            run_id: a.scope.run_id,
            links: vec![LinkIn {
                to: a.to,
                strength: a.strength,
                kind: a.kind,
                reason: a.reason,
            }],
        };
        let links = self
            .service
            .add_links(&p, &a.memory_id, body)
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "results": links }))
    }

    #[tool(
        description = "Remove the link from one memory to another (of the given kind, default related)."
    )]
    async fn remove_link(
        &self,
        Parameters(a): Parameters<RemoveLinkArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let q = UnlinkParams {
            user_id: a.scope.user_id,
            agent_id: a.scope.agent_id,
            run_id: a.scope.run_id,
            kind: a.kind,
        };
        self.service
            .remove_link(&p, &a.memory_id, &a.to, q)
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "removed": { "from": a.memory_id, "to": a.to } }))
    }
}
