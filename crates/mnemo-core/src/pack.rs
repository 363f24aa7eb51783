//! Context packs: one prompt-ready answer to "what should the agent know now", under a token
//! budget. A pack is ordered sections (profile, the current session's short-term window,
//! retrieved segments with their continuity neighbours, memories and knowledge); every item says
//! why it was chosen and what it costs in tokens, and the pack never exceeds its budget.
//!
//! The types here are the public shape (library, CLI `--json`, REST `POST /v1/context`, MCP
//! `get_context`); assembly lives beside them.

mod assemble;
pub mod dates;
mod excerpt;
#[cfg(test)]
mod tests;

pub use assemble::{
    assemble, assemble_after, section_header, Block, Candidate, PackParams, Prefix,
};
pub use excerpt::{clipped_excerpt, excerpt};

use crate::memory::{MessageId, Timestamp};
use serde::{Deserialize, Serialize};

/// The largest budget a pack may be asked for (tokens).
pub const MAX_BUDGET_TOKENS: u32 = 200_000;

/// The tokenizer packs are counted with when the caller names none.
pub const DEFAULT_TOKENIZER: &str = "cl100k_base";

/// Counts tokens the way a model's tokenizer does. Budgets are promises about what a prompt
/// costs, so implementations must count exactly (a real BPE, not an estimate); the
/// implementations live outside core (`mnemo_models::token_counter`), which keeps tokenizer
/// tables out of this crate.
pub trait TokenCounter: Send + Sync {
    /// The tokenizer's name, e.g. `cl100k_base`.
    fn name(&self) -> &str;
    /// Tokens of `text`, special-token look-alikes counted as ordinary text.
    fn count(&self, text: &str) -> u32;
}

/// What the caller may tune besides scope, query and budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextOptions {
    /// The current session: its short-term window is included.
    pub session_id: Option<String>,
    /// Leave the profile out.
    pub no_profile: bool,
    /// Leave the scope's core memory blocks out (they are shown first otherwise).
    pub no_blocks: bool,
    /// Memories retrieved for the pack (default: `budget_tokens / 10`, between 20 and 200).
    pub memory_candidates: Option<usize>,
    /// The tokenizer to count with (`cl100k_base` when absent; see
    /// `mnemo_models::TOKENIZERS`).
    pub tokenizer: Option<String>,
}

/// The sections, in the order a pack shows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Section {
    /// The scope's core memory blocks (`crate::blocks`): always first, never dropped.
    Blocks,
    Profile,
    ShortTerm,
    Segments,
    Memories,
    /// Current relations of the entities the query names, one line per edge.
    Relations,
}

/// Why an item is in the pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// In the current session's short-term window.
    Recent,
    /// Retrieved for the query (with its score).
    Matched,
    /// The continuity neighbour of a matched page or the summary of a matched page's segment
    /// (with `from`).
    Linked,
    /// A hot segment.
    Hot,
    /// The user profile.
    Profile,
    /// A core memory block, pinned at the head of every pack of its scope.
    Pinned,
    /// A current relation of an entity the query names (its `from` is the entity's name).
    Related,
}

/// One item of a pack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackItem {
    /// `profile`, `page` (a stored page), `turn` (a logged message shown verbatim where no page
    /// holds it), `segment` (a segment's summary) or `memory`.
    pub kind: String,
    /// The id of the page, segment or memory.
    pub id: String,
    pub text: String,
    /// Tokens of `text` as rendered in the pack.
    pub tokens: u32,
    pub reason: Reason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
    /// For `linked`: the id of the item it was reached from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The messages it rests on (provenance).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub message_ids: Vec<MessageId>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<Timestamp>,
    /// For a memory: when what it says happened, rendered in its line as absolute dates
    /// ([`dates::event_note`], against `at`, the day it was said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_time: Option<crate::time::EventTime>,
}

/// One ordered part of a pack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackSection {
    pub section: Section,
    pub items: Vec<PackItem>,
}

/// A context pack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextPack {
    pub budget_tokens: u32,
    /// Tokens of `rendered` (≤ `budget_tokens`).
    pub used_tokens: u32,
    /// The tokenizer tokens were counted with (e.g. `cl100k_base`).
    pub tokenizer: String,
    pub sections: Vec<PackSection>,
    /// Candidate items that did not fit the budget.
    pub omitted: u32,
    /// The prompt-ready text.
    pub rendered: String,
}
