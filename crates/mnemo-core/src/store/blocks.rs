//! Core memory blocks: the [`Blocks`] capability and its requests. The rules (labels, limits,
//! edits, who sees a block, rendering) are in [`crate::blocks`]; a backend stores rows and runs
//! those rules inside its transactions.

use super::*;
use crate::blocks::{
    block_owner, BlockActor, BlockChange, BlockEvent, BlockLabel, BlockLimits, BlockOp,
    MemoryBlock, DEFAULT_BLOCK_LIMIT, MAX_BLOCK_DESCRIPTION,
};
use crate::scope::AgentId;

/// The most blocks one page of a listing holds.
pub const MAX_BLOCK_PAGE: usize = 1_000;

/// A block to create.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NewBlock {
    pub owner: Option<Scope>,
    pub label: Option<BlockLabel>,
    pub value: String,
    pub description: String,
    /// Characters the value may hold; [`DEFAULT_BLOCK_LIMIT`] when `None`.
    pub limit: Option<u32>,
    pub read_only: bool,
    /// Agents of the owning user to attach it to (a user's block only).
    pub agents: Vec<AgentId>,
    pub actor: Option<String>,
    pub reason: Option<String>,
}

impl NewBlock {
    /// A block of `owner` labelled `label` holding `value`, with the defaults otherwise.
    pub fn new(owner: Scope, label: BlockLabel, value: impl Into<String>) -> Self {
        Self {
            owner: Some(owner),
            label: Some(label),
            value: value.into(),
            ..Self::default()
        }
    }

    /// The block as it is first stored (version 1) and its `create` event, after the checks
    /// every backend runs before writing: an owner without a run, a label, a limit within
    /// `limits`, a value within the limit, a short description, attachments only on a user's
    /// block. Each error names its field.
    pub fn build(&self, limits: &BlockLimits, now: Timestamp) -> Result<(MemoryBlock, BlockEvent)> {
        let owner = block_owner(
            self.owner
                .as_ref()
                .ok_or_else(|| crate::Error::invalid("scope", "a block needs an owner"))?,
        )?;
        let label = self
            .label
            .clone()
            .ok_or_else(|| crate::Error::invalid("label", "must be given"))?;
        let limit = self.limit.unwrap_or(DEFAULT_BLOCK_LIMIT);
        if limit == 0 || limit > limits.max_limit {
            return Err(crate::Error::invalid(
                "limit",
                format!(
                    "{limit} is outside 1 ..= {} characters (the server's maximum)",
                    limits.max_limit
                ),
            ));
        }
        if self.description.chars().count() > MAX_BLOCK_DESCRIPTION {
            return Err(crate::Error::invalid(
                "description",
                format!("must be at most {MAX_BLOCK_DESCRIPTION} characters"),
            ));
        }
        crate::limits::check_no_nul("value", &self.value)?;
        crate::limits::check_no_nul("description", &self.description)?;
        if !self.agents.is_empty() && (owner.agent_id().is_some() || owner.user_id().is_none()) {
            return Err(crate::Error::invalid(
                "agents",
                "only a user's own block (no owner agent) is attached to agents",
            ));
        }
        let mut agents = self.agents.clone();
        agents.sort();
        agents.dedup();
        let block = MemoryBlock {
            id: uuid::Uuid::now_v7(),
            owner,
            label: label.clone(),
            value: self.value.clone(),
            description: self.description.trim().to_string(),
            limit,
            read_only: self.read_only,
            agents,
            version: 1,
            created_at: now,
            updated_at: now,
        };
        crate::blocks::edit::check_fits(&block, &block.value)?;
        let event = BlockEvent {
            block_id: block.id,
            label,
            version: 1,
            op: BlockOp::Create,
            actor: self.actor.clone(),
            reason: self.reason.clone(),
            before: None,
            after: Some(block.value.clone()),
            at: now,
        };
        Ok((block, event))
    }
}

/// The `invalid_input` for an owner already at its maximum number of blocks.
pub fn too_many_blocks(limits: &BlockLimits) -> crate::Error {
    crate::Error::invalid(
        "label",
        format!(
            "the owner already holds the maximum of {} blocks; delete one first",
            limits.max_per_scope
        ),
    )
}

/// The `invalid_input` for a label the owner already uses.
pub fn label_taken(label: &BlockLabel) -> crate::Error {
    crate::Error::invalid(
        "label",
        format!("the owner already has a block labelled {label}"),
    )
}

/// The `not_found` for a label no block seen by the scope has.
pub fn no_block(label: &BlockLabel) -> crate::Error {
    crate::Error::not_found("block", label)
}

/// One edit: `change` to the block labelled `label` that `scope` sees.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockEdit {
    pub scope: Scope,
    pub label: BlockLabel,
    pub change: BlockChange,
    /// The version the editor read: a `conflict` when the block has moved on since.
    pub expected_version: Option<u64>,
    pub actor: BlockActor,
    pub reason: Option<String>,
}

/// A page of blocks seen by a scope, in label order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockPage {
    pub blocks: Vec<MemoryBlock>,
    /// Pass back for the next page; `None` on the last.
    pub next_cursor: Option<String>,
}

/// A listing of the blocks `scope` sees.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockQuery {
    pub scope: Scope,
    /// 1 ..= [`MAX_BLOCK_PAGE`].
    pub limit: usize,
    pub cursor: Option<String>,
}

impl BlockQuery {
    /// Checks the page size; the position after the cursor (label, id) when one is given.
    pub fn after(&self) -> Result<Option<(String, uuid::Uuid)>> {
        if self.limit == 0 || self.limit > MAX_BLOCK_PAGE {
            return Err(crate::Error::invalid(
                "limit",
                format!("must be between 1 and {MAX_BLOCK_PAGE}"),
            ));
        }
        let Some(c) = &self.cursor else {
            return Ok(None);
        };
        let bad = || crate::Error::invalid("cursor", "is not a cursor of a block listing");
        let (label, id) = c.split_once(':').ok_or_else(bad)?;
        let label = BlockLabel::new(label).map_err(|_| bad())?;
        let id = uuid::Uuid::parse_str(id).map_err(|_| bad())?;
        Ok(Some((label.to_string(), id)))
    }

    /// The cursor that continues after `last`.
    pub fn cursor_after(last: &MemoryBlock) -> String {
        format!("{}:{}", last.label, last.id)
    }
}

/// A block with its whole history, as exported and imported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockRecord {
    pub block: MemoryBlock,
    pub history: Vec<BlockEvent>,
}

/// Core memory blocks. Labels are resolved through the visibility rule
/// ([`MemoryBlock::seen_by`]); where a scope sees two blocks with one label (a user sees each of
/// their agents' blocks), the block owned by exactly the scope wins, then a user's block,
/// then the first created. Another tenant's block answers as missing.
pub trait Blocks: Send + Sync {
    /// Creates a block after [`NewBlock::build`]'s checks, in one transaction with its `create`
    /// event; `invalid_input` naming `label` when the owner has the label already or holds
    /// `limits.max_per_scope` blocks.
    fn create_block(&self, new: &NewBlock, limits: &BlockLimits) -> Result<MemoryBlock>;
    /// The block labelled `label` that `scope` sees, if any.
    fn block(&self, scope: &Scope, label: &BlockLabel) -> Result<Option<MemoryBlock>>;
    /// A page of the blocks `scope` sees, by label then id.
    fn list_blocks(&self, query: &BlockQuery) -> Result<BlockPage>;
    /// Applies an edit ([`BlockChange::apply`]) to the current row read inside the write
    /// transaction, under its lock, so concurrent edits serialise and an `expected_version`
    /// check can never pass for two editors; writes the new version and its event together.
    fn edit_block(&self, edit: &BlockEdit) -> Result<MemoryBlock>;
    /// Deletes the block (its history stays, with a `delete` event); an agent may not delete a
    /// read-only block. Returns the block as it was.
    fn delete_block(
        &self,
        scope: &Scope,
        label: &BlockLabel,
        actor: &BlockActor,
        reason: Option<&str>,
    ) -> Result<MemoryBlock>;
    /// The events of the block labelled `label` that `scope` sees, oldest first, at most
    /// `limit` (the newest ones).
    fn block_history(
        &self,
        scope: &Scope,
        label: &BlockLabel,
        limit: usize,
    ) -> Result<Vec<BlockEvent>>;
    /// The blocks a pack of `scope` starts with ([`MemoryBlock::pinned_for`]), by label then id.
    fn pinned_blocks(&self, scope: &Scope) -> Result<Vec<MemoryBlock>>;
}

/// The `delete` event of `block` by `actor`, after the read-only rule.
pub fn delete_event(
    block: &MemoryBlock,
    actor: &BlockActor,
    reason: Option<&str>,
    now: Timestamp,
) -> Result<BlockEvent> {
    if actor.is_agent() && block.read_only {
        return Err(crate::Error::invalid(
            "read_only",
            format!(
                "block {} is read-only: only the owner's key deletes it",
                block.label
            ),
        ));
    }
    Ok(BlockEvent {
        block_id: block.id,
        label: block.label.clone(),
        version: block.version + 1,
        op: BlockOp::Delete,
        actor: actor.name(),
        reason: reason.map(str::to_string),
        before: Some(block.value.clone()),
        after: None,
        at: now,
    })
}
