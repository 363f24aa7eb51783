//! The memory routes' bodies and documents: add (one and batched), list, update, delete and
//! history, and the stored memory every route returns (`MemoryDoc` with its event time and
//! note fields).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

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

/// A note's fields.
#[derive(Debug, Serialize, ToSchema)]
pub struct NoteDoc {
    pub keywords: Vec<String>,
    pub tags: Vec<String>,
    pub context: String,
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
pub struct PageDoc {
    pub results: Vec<MemoryDoc>,
    pub next_cursor: Option<String>,
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
