//! Core memory blocks on the native API (tag `blocks`): list and create under `/v1/blocks`,
//! one block under `/v1/blocks/{label}` (read, delete, edit, history), and the explicit seed
//! of a `human` block (`POST /v1/blocks/seed`). Every route calls `service::blocks`.

use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::AppState;
use crate::api::ErrorDoc;
use crate::auth::{Principal, ScopeParts};
use crate::error::ApiResult;
use crate::service::blocks::{CreateBlock, EditBlock};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use mnemo_core::{AgentId, BlockChange};
use serde::Deserialize;
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_blocks, create_block))
        .routes(routes!(seed_block))
        .routes(routes!(get_block, delete_block))
        .routes(routes!(edit_block))
        .routes(routes!(block_history))
}

type Caller = Extension<Principal>;

/// The scope of a block request, with paging where it lists.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct BlockParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// `next_cursor` of the previous page (lists).
    pub cursor: Option<String>,
    /// Blocks (1 to 1000, default 100) or history events (default 100) to return.
    pub limit: Option<usize>,
    /// Why (kept in the history; deletes).
    pub reason: Option<String>,
}

impl BlockParams {
    fn parts(&self) -> ScopeParts {
        ScopeParts::new(
            self.user_id.clone(),
            self.agent_id.clone(),
            self.run_id.clone(),
        )
    }
}

/// `POST /v1/blocks`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct CreateBlockBody {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// 1 to 64 of a-z, 0-9 and _ (e.g. `human`, `persona`); unique per owner.
    pub label: String,
    #[serde(default)]
    pub value: String,
    /// What the agent should keep in it (shown in packs).
    pub description: Option<String>,
    /// Characters the value may hold (default 2000, at most the server's maximum).
    pub limit: Option<u32>,
    /// Agents may read but not edit it.
    #[serde(default)]
    pub read_only: bool,
    /// Agents of the user to attach it to (a user's block only).
    #[serde(default)]
    pub agents: Vec<String>,
    pub reason: Option<String>,
}

/// `POST /v1/blocks/{label}/edit`: one of `append` (`text`), `replace` (`old`, `new`),
/// `rewrite` (`value`), `attach` / `detach` (`agent`).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EditBlockBody {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// `append`, `replace`, `rewrite`, `attach` or `detach`.
    pub op: String,
    pub text: Option<String>,
    pub old: Option<String>,
    pub new: Option<String>,
    pub value: Option<String>,
    /// The agent to attach or detach.
    pub agent: Option<String>,
    /// The version the editor read: a `conflict` (409) when another edit came first.
    pub expected_version: Option<u64>,
    pub reason: Option<String>,
}

/// `POST /v1/blocks/seed`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SeedBody {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
}

fn need(field: &str, v: Option<String>) -> ApiResult<String> {
    v.ok_or_else(|| mnemo_core::Error::invalid(field, "is required for this op").into())
}

/// The change a wire body asks for; `invalid_input` naming the missing field or `op`.
fn change_of(b: &EditBlockBody) -> ApiResult<BlockChange> {
    let b = b.clone();
    Ok(match b.op.as_str() {
        "append" => BlockChange::Append {
            text: need("text", b.text)?,
        },
        "replace" => BlockChange::Replace {
            old: need("old", b.old)?,
            new: b.new.unwrap_or_default(),
        },
        "rewrite" => BlockChange::Rewrite {
            value: need("value", b.value)?,
        },
        "attach" => BlockChange::Attach {
            agent_id: AgentId::new(&need("agent", b.agent)?)?,
        },
        "detach" => BlockChange::Detach {
            agent_id: AgentId::new(&need("agent", b.agent)?)?,
        },
        other => {
            return Err(mnemo_core::Error::invalid(
                "op",
                format!("{other:?} is not one of append, replace, rewrite, attach, detach"),
            )
            .into())
        }
    })
}

/// The blocks the scope sees, by label, a page at a time.
#[utoipa::path(get, path = "/v1/blocks", tag = "blocks", params(BlockParams),
    responses((status = 200, description = "`{\"results\": [block], \"next_cursor\"}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn list_blocks(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<BlockParams>,
) -> ApiResult<Response> {
    let page = s
        .service
        .blocks(&p, &q.parts(), q.cursor.clone(), q.limit)
        .await?;
    Ok(Json(json!({ "results": page.blocks, "next_cursor": page.next_cursor })).into_response())
}

/// Creates a block (owner: the scope named, a user, an agent or both).
#[utoipa::path(post, path = "/v1/blocks", tag = "blocks", request_body = CreateBlockBody,
    responses((status = 200, description = "the block", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn create_block(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiJson(b): ApiJson<CreateBlockBody>,
) -> ApiResult<Response> {
    let req = CreateBlock {
        parts: ScopeParts::new(b.user_id, b.agent_id, b.run_id),
        label: b.label,
        value: b.value,
        description: b.description,
        limit: b.limit,
        read_only: b.read_only,
        agents: b.agents,
        reason: b.reason,
    };
    Ok(Json(s.service.create_block(&p, req).await?).into_response())
}

/// Writes the user's `human` block from the profile a chat model built, else from the user's
/// most recent facts. Only ever on request.
#[utoipa::path(post, path = "/v1/blocks/seed", tag = "blocks", request_body = SeedBody,
    responses((status = 200, description = "`{\"block\", \"source\": \"profile\"|\"facts\"}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn seed_block(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiJson(b): ApiJson<SeedBody>,
) -> ApiResult<Response> {
    let parts = ScopeParts::new(b.user_id, b.agent_id, None);
    let (block, source) = s.service.seed_block(&p, &parts).await?;
    Ok(Json(json!({ "block": block, "source": source })).into_response())
}

/// The block with this label that the scope sees (another tenant's answers as missing).
#[utoipa::path(get, path = "/v1/blocks/{label}", tag = "blocks", params(("label" = String, Path), BlockParams),
    responses((status = 200, description = "the block", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn get_block(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(label): ApiPath<String>,
    ApiQuery(q): ApiQuery<BlockParams>,
) -> ApiResult<Response> {
    Ok(Json(s.service.block(&p, &label, &q.parts()).await?).into_response())
}

/// Deletes the block (its history stays); returns it as it was.
#[utoipa::path(delete, path = "/v1/blocks/{label}", tag = "blocks", params(("label" = String, Path), BlockParams),
    responses((status = 200, description = "the deleted block", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn delete_block(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(label): ApiPath<String>,
    ApiQuery(q): ApiQuery<BlockParams>,
) -> ApiResult<Response> {
    let block = s
        .service
        .delete_block(&p, &label, &q.parts(), q.reason.clone())
        .await?;
    Ok(Json(block).into_response())
}

/// One edit: append, replace (the old text must occur exactly once), rewrite, attach, detach.
/// Over the limit, read-only for an agent's key, or `expected_version` behind: refused, nothing
/// written.
#[utoipa::path(post, path = "/v1/blocks/{label}/edit", tag = "blocks", params(("label" = String, Path)), request_body = EditBlockBody,
    responses((status = 200, description = "the block after the edit", body = Object), (status = 409, description = "another edit came first", body = ErrorDoc), (status = "4XX", body = ErrorDoc)))]
async fn edit_block(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(label): ApiPath<String>,
    ApiJson(b): ApiJson<EditBlockBody>,
) -> ApiResult<Response> {
    let req = EditBlock {
        change: change_of(&b)?,
        parts: ScopeParts::new(b.user_id, b.agent_id, b.run_id),
        label,
        expected_version: b.expected_version,
        reason: b.reason,
    };
    Ok(Json(s.service.edit_block(&p, req).await?).into_response())
}

/// The block's history, oldest first: version, op, actor, reason, before and after.
#[utoipa::path(get, path = "/v1/blocks/{label}/history", tag = "blocks", params(("label" = String, Path), BlockParams),
    responses((status = 200, description = "`{\"results\": [event]}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn block_history(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(label): ApiPath<String>,
    ApiQuery(q): ApiQuery<BlockParams>,
) -> ApiResult<Response> {
    let events = s
        .service
        .block_history(&p, &label, &q.parts(), q.limit)
        .await?;
    Ok(Json(json!({ "results": events })).into_response())
}
