//! `mnemo blocks …`: core memory blocks.

use super::ScopeArgs;
use clap::{Args, Subcommand};

/// The block a command addresses.
#[derive(Debug, Args, Clone)]
pub(crate) struct BlockRef {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// The block's label (a-z, 0-9, _; e.g. human, persona).
    #[arg(long)]
    pub label: String,
}

/// What every edit may carry.
#[derive(Debug, Args, Clone)]
pub(crate) struct EditOpts {
    /// Refuse the edit (conflict) unless the block is still at this version.
    #[arg(long)]
    pub expected_version: Option<u64>,
    /// Why (kept in the block's history).
    #[arg(long)]
    pub reason: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum BlocksAction {
    /// Create a block owned by the scope (a user, an agent, or both).
    Create {
        #[command(flatten)]
        block: BlockRef,
        #[arg(long, default_value = "")]
        value: String,
        /// What the agent should keep in it.
        #[arg(long)]
        description: Option<String>,
        /// Characters the value may hold (default 2000).
        #[arg(long)]
        limit: Option<u32>,
        /// Agents may read it but not edit it.
        #[arg(long)]
        read_only: bool,
        /// Attach it to this agent of the user (repeatable).
        #[arg(long = "attach")]
        agents: Vec<String>,
    },
    /// Show one block.
    Get {
        #[command(flatten)]
        block: BlockRef,
    },
    /// The blocks the scope sees, by label, a page at a time.
    List {
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long, default_value_t = 100)]
        limit: usize,
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Add TEXT at the end of the block, on a line of its own.
    Append {
        #[command(flatten)]
        block: BlockRef,
        #[command(flatten)]
        opts: EditOpts,
        text: String,
    },
    /// Replace --old (which must occur exactly once) with --new.
    Replace {
        #[command(flatten)]
        block: BlockRef,
        #[command(flatten)]
        opts: EditOpts,
        #[arg(long)]
        old: String,
        #[arg(long, default_value = "")]
        new: String,
    },
    /// Give the block a whole new value.
    Rewrite {
        #[command(flatten)]
        block: BlockRef,
        #[command(flatten)]
        opts: EditOpts,
        #[arg(long)]
        value: String,
    },
    /// Attach a user's block to one more of the user's agents (shared between them).
    Attach {
        #[command(flatten)]
        block: BlockRef,
        #[arg(long)]
        agent: String,
    },
    /// Detach a user's block from an agent.
    Detach {
        #[command(flatten)]
        block: BlockRef,
        #[arg(long)]
        agent: String,
    },
    /// Delete a block (its history stays).
    Delete {
        #[command(flatten)]
        block: BlockRef,
        #[arg(long)]
        reason: Option<String>,
    },
    /// A block's history: version, op, actor, reason, before and after.
    History {
        #[command(flatten)]
        block: BlockRef,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Write the user's `human` block from what is known: the profile a chat model built, else
    /// the user's most recent facts. Never runs on its own.
    Seed {
        #[command(flatten)]
        scope: ScopeArgs,
        /// Seed from the profile (or, without one, the user's facts); the only source so far.
        #[arg(long, required = true)]
        from_profile: bool,
    },
}
