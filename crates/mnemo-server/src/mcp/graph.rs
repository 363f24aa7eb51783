//! The graph tools: `get_relations` (an entity's relations, or its neighbourhood to `depth`
//! hops, now or `as_of`), `get_relations_between` (edges joining two entities) and
//! `get_relation_history`. They call the same service functions as `/v1/graph/…`, so the key's
//! binding picks the scope and another scope's entity or edge is answered as missing.

use super::args::Parameters;
use super::{mcp_error, ok_json, MemoryTools, ScopeArgs};
use crate::service::relations::parse_as_of;
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RelationsArgs {
    /// The entity's name (near matches count).
    pub entity: String,
    /// Hops to walk, 1 to 3 (default 1).
    pub depth: Option<u8>,
    /// The graph as it was at this time (RFC 3339).
    pub as_of: Option<String>,
    /// The most edges returned (default 50).
    pub limit: Option<usize>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct BetweenArgs {
    pub a: String,
    pub b: String,
    pub as_of: Option<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RelationIdArgs {
    /// The relation's id (a UUID).
    pub relation_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[tool_router(router = graph_router, vis = "pub(super)")]
impl MemoryTools {
    #[tool(
        description = "An entity's relations in the entity graph: its neighbourhood to `depth` hops (1-3), each edge with subject, predicate, object, the sentence that states it and its valid time; `as_of` reads the graph as it was then."
    )]
    async fn get_relations(
        &self,
        Parameters(a): Parameters<RelationsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let n = self
            .service
            .neighbourhood(
                &p,
                &a.scope.parts(),
                a.entity,
                (a.depth, a.limit),
                parse_as_of(a.as_of).map_err(mcp_error)?,
            )
            .await
            .map_err(mcp_error)?;
        ok_json(json!(n))
    }

    #[tool(description = "The relations joining an entity named `a` to one named `b`.")]
    async fn get_relations_between(
        &self,
        Parameters(a): Parameters<BetweenArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let r = self
            .service
            .relations_between(
                &p,
                &a.scope.parts(),
                (a.a, a.b),
                parse_as_of(a.as_of).map_err(mcp_error)?,
            )
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "results": r }))
    }

    #[tool(
        description = "A relation and its history: each statement (when, which memory and message, who) and, if a contradicting statement closed it, when and by which."
    )]
    async fn get_relation_history(
        &self,
        Parameters(a): Parameters<RelationIdArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let (relation, events) = self
            .service
            .relation_history(&p, &a.scope.parts(), &a.relation_id)
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "relation": relation, "events": events }))
    }
}
