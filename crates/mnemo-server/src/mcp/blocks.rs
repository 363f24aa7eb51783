//! The core memory tools (`core_memory_list`, `core_memory_append`, `core_memory_replace`,
//! `core_memory_rewrite`, `core_memory_seed`): the blocks an agent keeps in view and edits
//! itself. They call the same service functions as `/v1/blocks…`; a key bound to an agent
//! edits as that agent (read-only blocks refuse it), any other key as the owner.

use super::args::Parameters;
use super::{mcp_error, ok_json, MemoryTools, ScopeArgs};
use crate::service::blocks::EditBlock;
use mnemo_core::BlockChange;
use rmcp::model::CallToolResult;
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData as McpError, RoleServer};
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListArgs {
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Blocks per page (1 to 1000, default 100).
    pub limit: Option<usize>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AppendArgs {
    /// The block's label, e.g. `human` or `persona`.
    pub label: String,
    /// The text to add at the end, on a line of its own.
    pub text: String,
    /// The version you read (from core_memory_list): the edit fails with a conflict if the
    /// block changed since.
    pub expected_version: Option<u64>,
    /// Why, in a few words (kept in the block's history).
    pub reason: Option<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReplaceArgs {
    pub label: String,
    /// Text copied exactly from the block; it must occur exactly once.
    pub old: String,
    /// What replaces it (empty to remove it).
    pub new: String,
    pub expected_version: Option<u64>,
    pub reason: Option<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RewriteArgs {
    pub label: String,
    /// The block's whole new text (within its character limit).
    pub value: String,
    pub expected_version: Option<u64>,
    pub reason: Option<String>,
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedArgs {
    #[serde(flatten)]
    pub scope: ScopeArgs,
}

impl MemoryTools {
    async fn edit(
        &self,
        ctx: &RequestContext<RoleServer>,
        scope: &ScopeArgs,
        label: String,
        change: BlockChange,
        expected_version: Option<u64>,
        reason: Option<String>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(ctx)?;
        let req = EditBlock {
            parts: scope.parts(),
            label,
            change,
            expected_version,
            reason,
        };
        let block = self.service.edit_block(&p, req).await.map_err(mcp_error)?;
        ok_json(block)
    }
}

#[tool_router(router = block_router, vis = "pub(super)")]
impl MemoryTools {
    #[tool(
        description = "List your core memory blocks: the small pinned texts (e.g. `human` about the user, `persona` about you) shown at the top of every context pack. Each has a label, description, value, version, character limit and read-only flag. Call it before editing a block to see its current text and version."
    )]
    async fn core_memory_list(
        &self,
        Parameters(a): Parameters<ListArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let page = self
            .service
            .blocks(&p, &a.scope.parts(), a.cursor, a.limit)
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "results": page.blocks, "next_cursor": page.next_cursor }))
    }

    #[tool(
        description = "Add a new line at the end of a core memory block. Use it when you learn something lasting that belongs in the block (\"the user prefers metric units\") and nothing there says otherwise. Fails without writing if the block would go over its character limit; then replace or rewrite to make room."
    )]
    async fn core_memory_append(
        &self,
        Parameters(a): Parameters<AppendArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let change = BlockChange::Append { text: a.text };
        self.edit(
            &ctx,
            &a.scope,
            a.label,
            change,
            a.expected_version,
            a.reason,
        )
        .await
    }

    #[tool(
        description = "Change one passage of a core memory block: `old` (copied exactly, occurring exactly once) becomes `new`. Use it when a fact in the block is outdated or wrong (\"lives in Oslo\" -> \"lives in Bergen\"), or with an empty `new` to remove it. If `old` occurs 0 or several times the error says how many; quote more of the text."
    )]
    async fn core_memory_replace(
        &self,
        Parameters(a): Parameters<ReplaceArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let change = BlockChange::Replace {
            old: a.old,
            new: a.new,
        };
        self.edit(
            &ctx,
            &a.scope,
            a.label,
            change,
            a.expected_version,
            a.reason,
        )
        .await
    }

    #[tool(
        description = "Replace the whole text of a core memory block. Use it only to reorganise or condense a block (for example when it is near its character limit); for one change prefer core_memory_replace, for a new fact core_memory_append. Pass expected_version from core_memory_list so you never overwrite an edit you have not seen."
    )]
    async fn core_memory_rewrite(
        &self,
        Parameters(a): Parameters<RewriteArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let change = BlockChange::Rewrite { value: a.value };
        self.edit(
            &ctx,
            &a.scope,
            a.label,
            change,
            a.expected_version,
            a.reason,
        )
        .await
    }

    #[tool(
        description = "Write the user's `human` core memory block from what is already known: the user profile if one was built, else the user's most recent facts. Use it once, when the block is missing or empty; it replaces the block's text."
    )]
    async fn core_memory_seed(
        &self,
        Parameters(a): Parameters<SeedArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let p = self.caller(&ctx)?;
        let (block, source) = self
            .service
            .seed_block(&p, &a.scope.parts())
            .await
            .map_err(mcp_error)?;
        ok_json(json!({ "block": block, "source": source }))
    }
}
