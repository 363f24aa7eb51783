//! The tools that read memories: `search_memories`, `list_memories`, `get_memory` and
//! `memory_history`, over the same service functions as the REST routes.

use super::args::Parameters;
use super::{as_of, instant, mcp_error, ok_json, IdArgs, MemoryTools, ScopeArgs};
use crate::api::{ListParams, SearchBody};
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};
use serde::Deserialize;
use serde_json::{json, Value};

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
pub struct GetArgs {
    /// The memory's id (a UUID).
    pub memory_id: String,
    #[serde(flatten)]
    pub scope: ScopeArgs,
    /// The audit view: any state, with source messages, links and entities.
    pub detail: Option<bool>,
}

#[tool_router(router = read_router, vis = "pub(super)")]
impl MemoryTools {
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
