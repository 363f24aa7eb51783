//! `POST /v1/memories/search`: its body, its hits with each signal's score, and the query's
//! temporal expression as the search read it.

use super::MemoryDoc;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

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
