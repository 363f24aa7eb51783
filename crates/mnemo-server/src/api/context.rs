//! `POST /v1/context`: its body and the context pack it answers (sections of items, each with
//! why it was chosen and its tokens, and the rendering).

use super::EventTimeDoc;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// `POST /v1/context`: a prompt-ready context pack for a query, under a token budget.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextBody {
    /// What the agent is about to answer; it picks the matched segments and memories.
    pub query: String,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// The most tokens the rendered pack may take: 1 to 200000.
    pub budget_tokens: i64,
    /// The current session: its short-term window (recent exchanges) is included.
    pub session_id: Option<String>,
    /// Leave the user profile out.
    #[serde(default)]
    pub no_profile: bool,
    /// Leave the scope's core memory blocks out (a pack starts with them otherwise).
    #[serde(default)]
    pub no_blocks: bool,
    /// Candidate memories retrieved for the memories section (default 50).
    pub memory_candidates: Option<usize>,
    /// The tokenizer tokens are counted with: `cl100k_base` (default), `o200k_base`,
    /// `p50k_base` or `r50k_base`.
    pub tokenizer: Option<String>,
}

/// A context pack: ordered sections of items, each with why it was chosen and its tokens, and
/// the prompt-ready rendering, which never exceeds the budget.
#[derive(Debug, Serialize, ToSchema)]
pub struct ContextPackDoc {
    pub budget_tokens: u32,
    /// Tokens of `rendered` (at most `budget_tokens`).
    pub used_tokens: u32,
    /// The tokenizer tokens were counted with, e.g. `cl100k_base`.
    pub tokenizer: String,
    pub sections: Vec<PackSectionDoc>,
    /// Candidate items that did not fit the budget.
    pub omitted: u32,
    /// The prompt-ready text.
    pub rendered: String,
}

/// One ordered part of a pack.
#[derive(Debug, Serialize, ToSchema)]
pub struct PackSectionDoc {
    /// `profile`, `short_term`, `segments` or `memories`, in that order.
    pub section: String,
    pub items: Vec<PackItemDoc>,
}

/// One item of a pack.
#[derive(Debug, Serialize, ToSchema)]
pub struct PackItemDoc {
    /// `profile`, `page`, `segment` or `memory`.
    pub kind: String,
    /// The id of the page, segment or memory.
    pub id: String,
    pub text: String,
    /// Tokens of `text` as rendered in the pack.
    pub tokens: u32,
    /// Why it is in the pack: `recent`, `matched`, `linked`, `hot` or `profile`.
    pub reason: String,
    /// For `matched`: the retrieval score.
    pub score: Option<f32>,
    /// For `linked`: the id of the item it was reached from.
    pub from: Option<String>,
    /// For a memory with an event time: when it happened (its line says it in words).
    #[schema(value_type = Option<EventTimeDoc>)]
    pub event_time: Option<Value>,
    /// The messages it rests on (absent when none).
    #[schema(value_type = Option<Vec<String>>)]
    pub message_ids: Option<Vec<String>>,
    pub at: Option<DateTime<Utc>>,
}
