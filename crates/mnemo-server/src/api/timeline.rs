//! `GET /v1/timeline`: its query and its pages of memories in event-time order, each with the
//! text of the turn it was said in.

use super::MemoryDoc;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

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
