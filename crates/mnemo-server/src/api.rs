//! The native API's request bodies and response documents. Requests reject unknown fields;
//! responses are the library's own serialised types, described here for the OpenAPI document
//! (a test checks these descriptions against real serialised records).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

pub use crate::api_log::*;

/// One conversation message.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageIn {
    /// `user`, `assistant`, `system` (skipped) or `tool`.
    pub role: String,
    /// A string, or a list of OpenAI-style parts: `{"type": "text", "text": …}` (joined in
    /// order) and `{"type": "image_url", "image_url": {"url": …}}` (described by the chat model
    /// when `llm.vision` is on, else refused naming its index).
    #[schema(value_type = Value)]
    pub content: Value,
    #[serde(default)]
    pub name: Option<String>,
}

/// `POST /v1/memories`: a text or a conversation to remember.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddBody {
    /// A conversation; give this or `text`.
    pub messages: Option<Vec<MessageIn>>,
    /// A plain text, stored as one user message; give this or `messages`.
    pub text: Option<String>,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// A JSON object; identity keys inside it are dropped with a warning.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Extract facts with the configured chat model (its default) or store raw.
    pub infer: Option<bool>,
    pub expires_at: Option<DateTime<Utc>>,
    /// When the messages were said (RFC 3339; default now): their memories' event times are
    /// read against it ("yesterday"), and it back-dates them. From 1900 to a day ahead.
    pub timestamp: Option<DateTime<Utc>>,
    /// A retry with the same key returns the first result and writes nothing.
    pub idempotency_key: Option<String>,
    /// `procedural` summarises an agent's steps (needs `agent_id` and a chat model); `note`
    /// stores each message as a note with keywords, tags, context and links.
    pub memory_type: Option<String>,
    pub instructions: Option<String>,
    pub session_id: Option<String>,
    /// A note's keywords (a list of strings), kept as given; only with `memory_type: note`.
    #[schema(value_type = Option<Vec<String>>)]
    pub keywords: Option<Value>,
    /// A note's tags (a list of strings), kept as given; only with `memory_type: note`.
    #[schema(value_type = Option<Vec<String>>)]
    pub tags: Option<Value>,
    /// A note's context line, kept as given; only with `memory_type: note`.
    pub context: Option<String>,
    /// Check the add now, answer with a queued job at once and write it in the background
    /// (see `GET /v1/jobs/{id}`).
    pub async_mode: Option<bool>,
}

/// `POST /v1/memories/search`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    pub query: String,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Default 10.
    pub top_k: Option<usize>,
    pub threshold: Option<f32>,
    /// Memory kinds, e.g. `["fact", "raw"]`.
    pub kinds: Option<Vec<String>>,
    /// A filter expression over metadata and times (`eq ne in nin gt gte lt lte contains`,
    /// `and or not`).
    #[schema(value_type = Option<Object>)]
    pub filters: Option<Value>,
    /// `hybrid` (default), `dense` or `lexical`.
    pub mode: Option<String>,
    #[serde(default)]
    pub include_expired: bool,
    /// Also search superseded and deleted memories (what used to be true).
    #[serde(default)]
    pub include_inactive: bool,
    /// What was valid at this instant (RFC 3339): superseded facts included, later ones not.
    pub as_of: Option<DateTime<Utc>>,
    /// Link expansion: up to this many linked neighbours per hit, after the direct hits, each
    /// with `via` (default 0: none).
    #[serde(default)]
    pub expand_links: usize,
    /// The most linked results added (default: no cap beyond `expand_links` per hit).
    pub expand_limit: Option<usize>,
    /// The instant (RFC 3339) the query's temporal expression ("last week", "in May 2023") is
    /// resolved against; default now. Memories whose event time falls in it rank higher.
    pub reference_date: Option<DateTime<Utc>>,
    /// Graph search for this request: `true` walks the relations of the entities the query
    /// names (one or two hops) and ranks the memories that state them, and the answer carries
    /// `relations`; `false` turns it off; absent: the server's setting.
    pub graph: Option<bool>,
}

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

/// `POST /v1/memories/{id}/links`: links from the memory to others of its scope.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkBody {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub links: Vec<LinkIn>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkIn {
    /// The memory linked to (a UUID of the same scope).
    pub to: String,
    /// In [0, 1]; default 1.
    pub strength: Option<f32>,
    /// `related` (default), `continues`, `derived_from`.
    pub kind: Option<String>,
    pub reason: Option<String>,
}

/// Query parameters of `DELETE /v1/memories/{id}/links/{to}`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UnlinkParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Default `related`.
    pub kind: Option<String>,
}

/// Query parameters of `GET /v1/memories`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Page size, default 100, at most 1000.
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Comma-separated memory kinds.
    pub kinds: Option<String>,
    /// A filter expression as JSON text.
    pub filters: Option<String>,
    #[serde(default)]
    pub include_expired: bool,
    /// Also list superseded and deleted memories (each says its `state`).
    #[serde(default)]
    pub include_inactive: bool,
    /// What was valid at this instant (RFC 3339): superseded facts included, later ones not.
    pub as_of: Option<DateTime<Utc>>,
}

/// Scope parts in a query string (by-id routes, delete-all).
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ScopeParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    #[serde(default)]
    pub include_expired: bool,
}

/// `PUT /v1/memories/{id}`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateBody {
    pub text: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// A new expiry; `null` clears it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<DateTime<Utc>>)]
    pub expires_at: Option<Option<DateTime<Utc>>>,
    /// Why (kept in the UPDATE history event), at most 500 characters.
    #[serde(default)]
    pub reason: Option<String>,
}

fn double_option<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<DateTime<Utc>>>, D::Error> {
    Option::<DateTime<Utc>>::deserialize(d).map(Some)
}

/// `POST /v1/memories/batch`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchAddBody {
    pub items: Vec<AddBody>,
}

/// One change of `PUT /v1/memories/batch`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchUpdateItem {
    pub memory_id: String,
    pub text: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

/// `PUT /v1/memories/batch`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchUpdateBody {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub items: Vec<BatchUpdateItem>,
}

/// `DELETE /v1/memories/batch`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchDeleteBody {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    pub memory_ids: Vec<String>,
}

/// `POST /v1/reset`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetBody {
    /// Must be exactly `"reset"`.
    pub confirm: String,
}

/// A stored memory as every route returns it.
#[derive(Debug, Serialize, ToSchema)]
pub struct MemoryDoc {
    #[schema(value_type = String, format = Uuid)]
    pub id: String,
    /// The memory's text.
    pub memory: String,
    /// `raw`, `fact`, `procedural`, `note`, `profile` or `summary`.
    pub kind: String,
    /// `active`, `superseded` or `deleted`.
    pub state: String,
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    #[schema(value_type = Object)]
    pub metadata: Value,
    pub hash: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub valid_from: Option<DateTime<Utc>>,
    pub valid_until: Option<DateTime<Utc>>,
    pub actor: Option<String>,
    pub role: Option<String>,
    /// Ids of the messages this memory came from.
    #[schema(value_type = Vec<String>)]
    pub sources: Vec<String>,
    pub access_count: u64,
    pub last_accessed_at: Option<DateTime<Utc>>,
    /// A note's fields (`kind: note`), else null.
    #[schema(value_type = Option<NoteDoc>)]
    pub note: Option<Value>,
    /// When what it says happened (read from its text against the time it was said), else
    /// null. Distinct from `created_at` (when it was learnt) and `valid_from`/`valid_until`.
    #[schema(value_type = Option<EventTimeDoc>)]
    pub event_time: Option<Value>,
}

/// An event time: `[start, end)` at a granularity, the words it was read from and its source.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventTimeDoc {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// `instant`, `day`, `week`, `month`, `season` or `year`.
    pub granularity: String,
    /// The words it was read from ("last week"); empty when a caller gave it.
    pub phrase: String,
    /// `text` (the rule tagger), `model` (the chat model, agreeing with the text) or `caller`.
    pub source: String,
}

/// A query's temporal expression as a search understood it.
#[derive(Debug, Serialize, ToSchema)]
pub struct TemporalDoc {
    /// The words of the query it was read from.
    pub phrase: String,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub granularity: String,
    /// `during`, `before` or `after`: how matching events relate to `[start, end)`.
    pub relation: String,
}

/// A note's fields.
#[derive(Debug, Serialize, ToSchema)]
pub struct NoteDoc {
    pub keywords: Vec<String>,
    pub tags: Vec<String>,
    pub context: String,
}

/// A search hit: the memory, its final score and the score of each signal.
#[derive(Debug, Serialize, ToSchema)]
pub struct HitDoc {
    #[serde(flatten)]
    pub memory: MemoryDoc,
    pub score: f32,
    /// `dense`, `lexical`, `entity`, `temporal` (each may be absent).
    #[schema(value_type = Object)]
    pub scores: Value,
    /// Only for a result of link expansion: `{memory_id, kind, strength}` of the hit and the
    /// link it was reached through.
    #[schema(value_type = Option<Object>)]
    pub via: Option<Value>,
}

/// One result of an add.
#[derive(Debug, Serialize, ToSchema)]
pub struct AddResultDoc {
    #[schema(value_type = String, format = Uuid)]
    pub id: String,
    pub memory: String,
    /// `ADD`, `UPDATE` or `DELETE`.
    pub event: String,
    pub previous_memory: Option<String>,
    pub previous_id: Option<String>,
    pub reason: Option<String>,
}

/// What an add returns.
#[derive(Debug, Serialize, ToSchema)]
pub struct AddOutcomeDoc {
    pub results: Vec<AddResultDoc>,
    /// True when returned from an earlier call with the same idempotency key.
    pub replayed: bool,
    pub warnings: Vec<String>,
    /// The model calls the add made.
    #[schema(value_type = Vec<Object>)]
    pub usage: Vec<Value>,
    /// The entity-graph edges the add touched: `{id, event}` with event `added`, `supported`
    /// (one more statement of an edge that held) or `closed` (contradicted; its valid time
    /// ends). Absent when none.
    #[schema(value_type = Option<Vec<Object>>)]
    pub relations: Option<Vec<Value>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SearchDoc {
    pub results: Vec<HitDoc>,
    pub embed_ms: f64,
    pub search_ms: f64,
    #[schema(value_type = Vec<Object>)]
    pub usage: Vec<Value>,
    /// The query's temporal expression resolved against `reference_date`; absent when the
    /// query names no time.
    pub temporal: Option<TemporalDoc>,
    /// With graph search: the edges it used (subject, predicate, object, the sentence that
    /// states it, valid time, sources), best first; absent otherwise.
    #[schema(value_type = Option<Vec<Object>>)]
    pub relations: Option<Vec<Value>>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PageDoc {
    pub results: Vec<MemoryDoc>,
    pub next_cursor: Option<String>,
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

/// One history event.
#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryDoc {
    pub id: i64,
    #[schema(value_type = String, format = Uuid)]
    pub memory_id: String,
    /// `ADD`, `UPDATE`, `DELETE`, `SUPERSEDE`, `EXPIRE`, `EVOLVE` or `MERGE`.
    pub event: String,
    pub old_memory: Option<String>,
    pub new_memory: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub old_metadata: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub new_metadata: Option<Value>,
    pub actor: Option<String>,
    pub role: Option<String>,
    pub reason: Option<String>,
    pub request_id: Option<String>,
    pub created_at: DateTime<Utc>,
    /// For `EVOLVE`: the note's fields before and after; else null.
    #[schema(value_type = Option<NoteDoc>)]
    pub old_note: Option<Value>,
    #[schema(value_type = Option<NoteDoc>)]
    pub new_note: Option<Value>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryListDoc {
    pub results: Vec<HistoryDoc>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeletedDoc {
    /// How many memories were deleted.
    pub deleted: u64,
}

/// What an erase removed: counts, never content.
#[derive(Debug, Serialize, ToSchema)]
pub struct EraseReportDoc {
    pub id: String,
    pub history_scrubbed: u64,
    pub messages_erased: u64,
    /// Source messages left as they were (a fact erased without `sources`).
    pub messages_kept: u64,
    pub neighbours_reindexed: u64,
    pub entities_removed: u64,
    pub replays_scrubbed: u64,
    pub pages_scrubbed: u64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MessageDoc {
    pub message: String,
}

/// The error body of every route.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDoc {
    pub error: ErrorDetailDoc,
    /// The message again, where Mem0's clients look for it.
    pub detail: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetailDoc {
    /// `invalid_input`, `not_found`, `unauthenticated`, `forbidden`, `rate_limited`, …
    pub kind: String,
    pub message: String,
    pub retryable: bool,
}

/// `POST /v1/sessions/{id}/erase` and `POST /v1/scopes/erase`: whose log, and why.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EraseLogBody {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Required `true` to erase a whole scope (`/v1/scopes/erase`); ignored for a session.
    #[serde(default)]
    pub confirm: bool,
    /// Why (kept in every tombstone event; never an erased text).
    pub reason: Option<String>,
}

/// What an erase of a session or a scope removed: counts, never content.
#[derive(Debug, Serialize, ToSchema)]
pub struct EraseLogReportDoc {
    pub memories_erased: u64,
    pub messages_erased: u64,
    pub pages_scrubbed: u64,
    pub segments_scrubbed: u64,
}

/// `POST /v1/memories/{id}/erase`: what to erase besides the memory itself, and why.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EraseBody {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Also erase the content of the messages the memory came from.
    #[serde(default)]
    pub sources: bool,
    /// Why (kept in the tombstone history event; never the erased text).
    pub reason: Option<String>,
}

/// Query parameters of `GET /v1/timeline`: a scope's events in event-time order.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct TimelineParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Events that end after this instant (RFC 3339); default: no bound.
    pub from: Option<DateTime<Utc>>,
    /// Events that start before this instant (RFC 3339); default: no bound.
    pub to: Option<DateTime<Utc>>,
    /// Comma-separated memory kinds.
    pub kinds: Option<String>,
    /// Page size: default 100, 1 to 1000.
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// One timeline entry: the memory (with its `event_time`) and the text of the turn it was
/// said in.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimelineEntryDoc {
    #[serde(flatten)]
    pub memory: MemoryDoc,
    /// Its first source message's text, as the log shows it (null when hidden or absent).
    pub source_text: Option<String>,
}

/// A page of a timeline.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimelineDoc {
    pub results: Vec<TimelineEntryDoc>,
    pub next_cursor: Option<String>,
}
