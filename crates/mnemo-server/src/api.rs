//! The native API's request bodies and response documents. Requests reject unknown fields;
//! responses are the library's own serialised types, described here for the OpenAPI document
//! (a test checks these descriptions against real serialised records).
//!
//! One file per capability, named as in `service/`, `rest/` and `mcp/`: `memories` (add, list,
//! update, delete, history, batches), `search`, `context`, `links`, `erase`, `timeline`; the
//! log's parameters are in `api_log`. Every type is re-exported here, so `crate::api::X` names
//! each. This file keeps what every route shares: the error body, plain messages, and reset.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

mod context;
mod erase;
mod links;
mod memories;
mod search;
mod timeline;

pub use crate::api_log::*;
pub use context::*;
pub use erase::*;
pub use links::*;
pub use memories::*;
pub use search::*;
pub use timeline::*;

/// `POST /v1/reset`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetBody {
    /// Must be exactly `"reset"`.
    pub confirm: String,
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
