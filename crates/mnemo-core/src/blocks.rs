//! Core memory blocks: small, pinned, size-limited texts an agent sees at the top of every
//! context pack and edits itself (a `human` block about the user, a `persona` block about the
//! agent, any label the caller picks).
//!
//! This module holds the rules every surface and backend shares, with no I/O:
//! - the vocabulary: [`MemoryBlock`], [`BlockLabel`] (`[a-z0-9_]{1,64}`), [`BlockEvent`] and its
//!   [`BlockOp`], the limits ([`DEFAULT_BLOCK_LIMIT`], [`BlockLimits`]);
//! - who sees a block ([`MemoryBlock::seen_by`], the one statement of the rule each backend's
//!   SQL implements) and which blocks a pack shows ([`MemoryBlock::pinned_for`]);
//! - the edits (`edit.rs`: [`BlockChange::apply`], with its typed errors);
//! - the rendering at the head of a pack (`render.rs`: [`render_blocks`], [`pack_with_blocks`]).
//!
//! A block's owner is a user, an agent, or a user × agent pair (never a run). A user's block may
//! be attached to several of the user's agents; it is still one row, so an edit by one agent is
//! seen by all of them.

pub(crate) mod edit;
mod render;

pub use edit::{BlockActor, BlockChange};
pub use render::{blocks_text, pack_with_blocks, render_blocks, BLOCKS_HEADER};

use crate::error::{Error, Result};
use crate::memory::Timestamp;
use crate::scope::{AgentId, Scope};
use serde::{Deserialize, Serialize};

/// A block's character limit when its creator names none.
pub const DEFAULT_BLOCK_LIMIT: u32 = 2_000;
/// The largest limit a server admits for one block when its configuration names none.
pub const DEFAULT_MAX_BLOCK_LIMIT: u32 = 20_000;
/// The most blocks one owner may hold when the configuration names no other number.
pub const DEFAULT_MAX_BLOCKS_PER_SCOPE: u32 = 10_000;
/// The longest description of a block, in characters.
pub const MAX_BLOCK_DESCRIPTION: usize = 1_000;
/// The longest label, in characters.
pub const MAX_LABEL_LEN: usize = 64;

/// The bounds a deployment puts on blocks (server or library configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockLimits {
    /// The largest per-block character limit a creator may ask for.
    pub max_limit: u32,
    /// The most blocks one owner (an exact user / agent / user × agent) may hold.
    pub max_per_scope: u32,
}

impl Default for BlockLimits {
    fn default() -> Self {
        Self {
            max_limit: DEFAULT_MAX_BLOCK_LIMIT,
            max_per_scope: DEFAULT_MAX_BLOCKS_PER_SCOPE,
        }
    }
}

/// A validated block label: 1 to 64 of `a-z`, `0-9` and `_`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct BlockLabel(String);

impl BlockLabel {
    pub fn new(raw: &str) -> Result<Self> {
        let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
        if raw.is_empty() || raw.len() > MAX_LABEL_LEN || !raw.chars().all(ok) {
            return Err(Error::invalid(
                "label",
                format!(
                    "{raw:?} is not a block label: 1 to {MAX_LABEL_LEN} of a-z, 0-9 and _ \
                     (e.g. human, persona, task_notes)"
                ),
            ));
        }
        Ok(Self(raw.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for BlockLabel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::new(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl std::fmt::Display for BlockLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A core memory block as stored. Persisted (export records, wire bodies): fields are only ever
/// added, with serde defaults, so older exports import.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryBlock {
    pub id: uuid::Uuid,
    /// The owner: a user, an agent or both; never a run.
    pub owner: Scope,
    pub label: BlockLabel,
    pub value: String,
    /// What the agent should keep in it (shown in the pack beside the label).
    #[serde(default)]
    pub description: String,
    /// The most characters `value` may hold.
    pub limit: u32,
    /// Agents may read but not edit it; the owner's keys may.
    #[serde(default)]
    pub read_only: bool,
    /// The agents of the owning user the block is attached to (besides an owner agent).
    #[serde(default)]
    pub agents: Vec<AgentId>,
    /// 1 at creation, one more per edit.
    pub version: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl MemoryBlock {
    /// Characters of the value (what the limit counts).
    pub fn used(&self) -> u32 {
        u32::try_from(self.value.chars().count()).unwrap_or(u32::MAX)
    }

    /// The visibility rule of blocks: a read through `scope` sees the block when each part the
    /// scope names matches the owner's — except that an agent also sees a block of the scope's
    /// user (one with no owner agent) attached to it. Runs do not own blocks: a scope's run part
    /// is not constrained. Every backend's SQL implements this rule (see their `blocks.rs`).
    pub fn seen_by(&self, scope: &Scope) -> bool {
        let user_ok = scope
            .user_id()
            .is_none_or(|u| self.owner.user_id() == Some(u));
        let agent_ok = scope.agent_id().is_none_or(|a| {
            self.owner.agent_id() == Some(a)
                || (self.owner.agent_id().is_none() && self.agents.contains(a))
        });
        user_ok && agent_ok
    }

    /// Whether a pack of `scope` shows the block: a seen block that belongs to the scope's
    /// agent (owned by it or attached to it) — or, for a scope without an agent, a block of the
    /// user alone. A user's other agents' blocks are listed to the user but not pinned.
    pub fn pinned_for(&self, scope: &Scope) -> bool {
        self.seen_by(scope) && (scope.agent_id().is_some() || self.owner.agent_id().is_none())
    }
}

/// The owner scope of a new block: a user, an agent, or both; a run part is refused.
pub fn block_owner(scope: &Scope) -> Result<Scope> {
    if scope.run_id().is_some() {
        return Err(Error::invalid(
            "run_id",
            "blocks belong to a user, an agent or a user × agent pair, not to a run",
        ));
    }
    Ok(scope.clone())
}

/// What an edit did (closed set; stored as its `as_str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockOp {
    Create,
    Append,
    Replace,
    Rewrite,
    Attach,
    Detach,
    Delete,
}

impl BlockOp {
    pub const ALL: &'static [BlockOp] = &[
        BlockOp::Create,
        BlockOp::Append,
        BlockOp::Replace,
        BlockOp::Rewrite,
        BlockOp::Attach,
        BlockOp::Detach,
        BlockOp::Delete,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BlockOp::Create => "create",
            BlockOp::Append => "append",
            BlockOp::Replace => "replace",
            BlockOp::Rewrite => "rewrite",
            BlockOp::Attach => "attach",
            BlockOp::Detach => "detach",
            BlockOp::Delete => "delete",
        }
    }

    /// The op stored as `s` (a backend's row).
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| Error::internal(format!("unknown block op {s:?} in the store")))
    }
}

/// One history event of a block: who changed it, why, and the value before and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockEvent {
    pub block_id: uuid::Uuid,
    pub label: BlockLabel,
    /// The block's version after the event.
    pub version: u64,
    pub op: BlockOp,
    /// A key id, an agent id, or what the caller named.
    #[serde(default)]
    pub actor: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub before: Option<String>,
    #[serde(default)]
    pub after: Option<String>,
    pub at: Timestamp,
}

#[cfg(test)]
mod tests;
