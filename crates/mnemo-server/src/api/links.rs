//! The link routes' bodies: links added from a memory to others of its scope, and the query of
//! a link's removal.

use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

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
