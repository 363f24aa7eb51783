//! Request parameters of the conversation-log routes of the native API: sessions and their
//! messages, segments and pages, the profile, and the by-id routes' `detail` and `reason`.
//! Re-exported by [`crate::api`]. Responses are the library's serialised views
//! (`mnemo::SessionList`, `mnemo::SessionMessages`, `mnemo::SessionView`,
//! `mnemo::SegmentView`, `mnemo::PageView`, `mnemo::ProfileView`).

use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// Query of `GET /v1/sessions` and `GET /v1/sessions/{id}/messages`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LogPageParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Page size: default 100, 1 to 1000.
    pub limit: Option<usize>,
}

/// The scope of a log read (`GET /v1/sessions/{id}`, segments, pages, profile).
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct LogScopeParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
}

/// Query of `DELETE /v1/sessions/{id}` and `DELETE /v1/memories/{id}`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeleteParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Refused: a delete reaches expired memories anyway.
    #[serde(default)]
    pub include_expired: bool,
    /// Why (kept in the DELETE history events), at most 500 characters.
    pub reason: Option<String>,
}

/// Query of `GET /v1/memories/{id}`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GetParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    #[serde(default)]
    pub include_expired: bool,
    /// The audit view: the memory in any state with `sources` (its source messages with their
    /// text, as the log's visibility rule shows them), `links` and `entities`.
    #[serde(default)]
    pub detail: bool,
}

/// `POST /v1/profile/refresh`: whose pages to analyse (needs a chat model).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileRefreshBody {
    pub user_id: Option<String>,
    /// The agent whose assistant knowledge this is.
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// Extra instructions for the analysis.
    pub instructions: Option<String>,
}
