//! The edits of a block, as one pure step every backend runs inside its write transaction
//! (after reading the current row under the transaction's lock): the version check, the
//! read-only rule, the operation itself and the limit check. Nothing here truncates: an edit
//! that does not fit is refused with the sizes in the error.

use super::{BlockEvent, BlockOp, MemoryBlock};
use crate::error::{Error, Result};
use crate::memory::Timestamp;
use crate::scope::AgentId;
use serde::{Deserialize, Serialize};

/// Who makes an edit. Agents (an agent's key, an agent's tool call) may not edit read-only
/// blocks nor change attachments; the owner (the user's key, the library) may.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BlockActor {
    /// The owner's key (its id), or the library (no id).
    Owner { id: Option<String> },
    /// An agent: its key id or agent id.
    Agent { id: String },
}

impl BlockActor {
    /// The owner, unnamed (the library).
    pub fn owner() -> Self {
        BlockActor::Owner { id: None }
    }

    /// What the history records as the actor.
    pub fn name(&self) -> Option<String> {
        match self {
            BlockActor::Owner { id } => id.clone(),
            BlockActor::Agent { id } => Some(id.clone()),
        }
    }

    pub fn is_agent(&self) -> bool {
        matches!(self, BlockActor::Agent { .. })
    }
}

/// One change to a block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum BlockChange {
    /// `text` at the end, on a line of its own when the block holds text.
    Append {
        text: String,
    },
    /// `old`, which must occur exactly once, becomes `new`.
    Replace {
        old: String,
        new: String,
    },
    /// A whole new value.
    Rewrite {
        value: String,
    },
    /// The block (a user's) is attached to one more of the user's agents.
    Attach {
        agent_id: AgentId,
    },
    Detach {
        agent_id: AgentId,
    },
}

impl BlockChange {
    pub fn op(&self) -> BlockOp {
        match self {
            BlockChange::Append { .. } => BlockOp::Append,
            BlockChange::Replace { .. } => BlockOp::Replace,
            BlockChange::Rewrite { .. } => BlockOp::Rewrite,
            BlockChange::Attach { .. } => BlockOp::Attach,
            BlockChange::Detach { .. } => BlockOp::Detach,
        }
    }

    /// The block after this change by `actor`, and the history event recording it; checks, in
    /// order: `expected_version` (a `conflict` naming both versions), the read-only rule, the
    /// change's own input, and the block's limit. Linear in the value's length.
    pub fn apply(
        &self,
        block: &MemoryBlock,
        actor: &BlockActor,
        expected_version: Option<u64>,
        reason: Option<&str>,
        now: Timestamp,
    ) -> Result<(MemoryBlock, BlockEvent)> {
        if let Some(v) = expected_version {
            if v != block.version {
                return Err(Error::Conflict {
                    reason: format!(
                        "block {} is at version {}, the edit expected version {v}; another \
                         edit came first — read the block again and redo the edit",
                        block.label, block.version
                    ),
                });
            }
        }
        if actor.is_agent() && block.read_only {
            return Err(Error::invalid(
                "read_only",
                format!(
                    "block {} is read-only: agents may read it, only the owner's key edits it",
                    block.label
                ),
            ));
        }
        let mut next = block.clone();
        match self {
            BlockChange::Append { text } => next.value = appended(&block.value, text)?,
            BlockChange::Replace { old, new } => {
                next.value = replaced(&block.value, old, new, &block.label.to_string())?
            }
            BlockChange::Rewrite { value } => next.value = value.clone(),
            BlockChange::Attach { agent_id } | BlockChange::Detach { agent_id } => {
                attachment(&mut next, agent_id, actor, self.op())?
            }
        }
        crate::limits::check_no_nul("value", &next.value)?;
        check_fits(block, &next.value)?;
        next.version = block.version + 1;
        next.updated_at = now;
        let changed_value = next.value != block.value;
        let event = BlockEvent {
            block_id: block.id,
            label: block.label.clone(),
            version: next.version,
            op: self.op(),
            actor: actor.name(),
            reason: reason.map(str::to_string),
            before: changed_value.then(|| block.value.clone()),
            after: changed_value.then(|| next.value.clone()),
            at: now,
        };
        Ok((next, event))
    }
}

/// `value` with `text` at its end, on a line of its own.
fn appended(value: &str, text: &str) -> Result<String> {
    if text.trim().is_empty() {
        return Err(Error::invalid("text", "must not be empty"));
    }
    let mut out = value.to_string();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(text);
    Ok(out)
}

/// `value` with its one occurrence of `old` replaced by `new`.
fn replaced(value: &str, old: &str, new: &str, label: &str) -> Result<String> {
    if old.is_empty() {
        return Err(Error::invalid("old", "must not be empty"));
    }
    match value.matches(old).count() {
        1 => Ok(value.replacen(old, new, 1)),
        0 => Err(Error::invalid(
            "old",
            format!(
                "occurs 0 times in block {label}; it must occur exactly once (copy it exactly)"
            ),
        )),
        n => Err(Error::invalid(
            "old",
            format!(
                "occurs {n} times in block {label}; it must occur exactly once (include more of \
                 the text around it)"
            ),
        )),
    }
}

fn attachment(
    next: &mut MemoryBlock,
    agent: &AgentId,
    actor: &BlockActor,
    op: BlockOp,
) -> Result<()> {
    if actor.is_agent() {
        return Err(Error::invalid(
            "agent_id",
            "only the owner's key attaches or detaches blocks",
        ));
    }
    if next.owner.agent_id().is_some() || next.owner.user_id().is_none() {
        return Err(Error::invalid(
            "agent_id",
            format!(
                "block {} belongs to an agent; only a user's own block is attached to agents",
                next.label
            ),
        ));
    }
    let present = next.agents.contains(agent);
    match (op, present) {
        (BlockOp::Attach, false) => {
            next.agents.push(agent.clone());
            next.agents.sort();
        }
        (BlockOp::Detach, true) => next.agents.retain(|a| a != agent),
        (BlockOp::Attach, true) => {
            return Err(Error::invalid(
                "agent_id",
                format!("block {} is already attached to agent {agent}", next.label),
            ))
        }
        _ => {
            return Err(Error::invalid(
                "agent_id",
                format!("block {} is not attached to agent {agent}", next.label),
            ))
        }
    }
    Ok(())
}

/// Refuses a value longer than the block's limit, with the sizes in the error.
pub(crate) fn check_fits(block: &MemoryBlock, value: &str) -> Result<()> {
    let chars = value.chars().count();
    if chars > block.limit as usize {
        return Err(Error::invalid(
            "value",
            format!(
                "would make block {} {chars} characters, over its limit of {} (it holds {} now); \
                 nothing was changed — shorten the text or rewrite the block more briefly",
                block.label,
                block.limit,
                block.used()
            ),
        ));
    }
    Ok(())
}
