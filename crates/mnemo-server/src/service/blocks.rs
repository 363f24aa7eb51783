//! Core memory blocks for REST (`/v1/blocks…`), MCP (`core_memory_*`) and the inspector: the
//! scope comes from the request and the key's binding as for every other operation, so a key
//! bound to one user never reaches another's blocks (they answer as missing), and an agent's
//! key sees only the blocks of its agent and those attached to it. Who edits decides the
//! read-only rule: a key bound to an agent edits as that agent, any other key as the owner.

use super::Service;
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use mnemo::SeedSource;
use mnemo_core::blocks::BlockActor;
use mnemo_core::*;

/// Events a history request returns when it names no limit.
pub const DEFAULT_HISTORY: usize = 100;

/// A block to create, from a wire body.
#[derive(Debug, Clone, Default)]
pub struct CreateBlock {
    pub parts: ScopeParts,
    pub label: String,
    pub value: String,
    pub description: Option<String>,
    pub limit: Option<u32>,
    pub read_only: bool,
    pub agents: Vec<String>,
    pub reason: Option<String>,
}

/// An edit of a block, from a wire body.
#[derive(Debug, Clone)]
pub struct EditBlock {
    pub parts: ScopeParts,
    pub label: String,
    pub change: BlockChange,
    pub expected_version: Option<u64>,
    pub reason: Option<String>,
}

/// The actor a key edits as (see the module docs).
pub fn block_actor(p: &Principal) -> BlockActor {
    match (&p.agent_id, p.admin) {
        (Some(_), false) => BlockActor::Agent {
            id: p.key_id.clone(),
        },
        _ => BlockActor::Owner {
            id: Some(p.key_id.clone()),
        },
    }
}

pub fn parse_label(raw: &str) -> ApiResult<BlockLabel> {
    Ok(BlockLabel::new(raw.trim())?)
}

impl Service {
    pub async fn create_block(&self, p: &Principal, req: CreateBlock) -> ApiResult<MemoryBlock> {
        let scope = p.require_scope(&req.parts)?;
        self.check_write(p, &scope)?;
        if block_actor(p).is_agent() {
            return Err(ApiError::forbidden(
                "an agent's key reads and edits blocks; the owner's key creates them",
            ));
        }
        let agents = req
            .agents
            .iter()
            .map(|a| AgentId::new(a))
            .collect::<mnemo_core::Result<Vec<_>>>()?;
        let new = NewBlock {
            owner: Some(scope),
            label: Some(parse_label(&req.label)?),
            value: req.value,
            description: req.description.unwrap_or_default(),
            limit: req.limit,
            read_only: req.read_only,
            agents,
            actor: Some(p.key_id.clone()),
            reason: req.reason,
        };
        self.run("create_block", p, async {
            Ok(self.memory.create_block(new).await?)
        })
        .await
    }

    pub async fn block(
        &self,
        p: &Principal,
        label: &str,
        parts: &ScopeParts,
    ) -> ApiResult<MemoryBlock> {
        let scope = p.require_scope(parts)?;
        let label = parse_label(label)?;
        self.run("block", p, async {
            Ok(self.memory.block(scope, label).await?)
        })
        .await
    }

    pub async fn blocks(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        cursor: Option<String>,
        limit: Option<usize>,
    ) -> ApiResult<BlockPage> {
        let query = BlockQuery {
            scope: p.require_scope(parts)?,
            limit: limit.unwrap_or(100),
            cursor,
        };
        self.run("blocks", p, async { Ok(self.memory.blocks(query).await?) })
            .await
    }

    pub async fn edit_block(&self, p: &Principal, req: EditBlock) -> ApiResult<MemoryBlock> {
        let edit = BlockEdit {
            scope: p.require_scope(&req.parts)?,
            label: parse_label(&req.label)?,
            change: req.change,
            expected_version: req.expected_version,
            actor: block_actor(p),
            reason: req.reason,
        };
        super::authz::check_reason(edit.reason.as_deref())?;
        self.run("edit_block", p, async {
            Ok(self.memory.edit_block(edit).await?)
        })
        .await
    }

    pub async fn delete_block(
        &self,
        p: &Principal,
        label: &str,
        parts: &ScopeParts,
        reason: Option<String>,
    ) -> ApiResult<MemoryBlock> {
        let scope = p.require_scope(parts)?;
        let label = parse_label(label)?;
        super::authz::check_reason(reason.as_deref())?;
        let actor = block_actor(p);
        self.run("delete_block", p, async {
            Ok(self
                .memory
                .delete_block(scope, label, actor, reason)
                .await?)
        })
        .await
    }

    pub async fn block_history(
        &self,
        p: &Principal,
        label: &str,
        parts: &ScopeParts,
        limit: Option<usize>,
    ) -> ApiResult<Vec<BlockEvent>> {
        let scope = p.require_scope(parts)?;
        let label = parse_label(label)?;
        let limit = limit.unwrap_or(DEFAULT_HISTORY).clamp(1, 10_000);
        self.run("block_history", p, async {
            Ok(self.memory.block_history(scope, label, limit).await?)
        })
        .await
    }

    /// Writes the `human` block of the request's user from the profile or the user's facts.
    pub async fn seed_block(
        &self,
        p: &Principal,
        parts: &ScopeParts,
    ) -> ApiResult<(MemoryBlock, SeedSource)> {
        let scope = p.require_scope(parts)?;
        self.check_write(p, &scope)?;
        let actor = block_actor(p);
        self.run("seed_block", p, async {
            Ok(self.memory.seed_human_block(scope, actor).await?)
        })
        .await
    }
}
