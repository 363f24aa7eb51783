//! The erase routes' bodies and reports: one memory (`/v1/memories/{id}/erase`), a session or a
//! whole scope; reports carry counts, never content.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

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
