//! The timeline on the native API: `GET /v1/timeline`, a scope's events in event-time order with
//! the turns they were said in. Declared into [`super::native`]'s OpenAPI document.

use super::extract::ApiQuery;
use super::AppState;
use crate::api::*;
use crate::auth::Principal;
use crate::error::ApiResult;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

/// A scope's memories that carry an event time, ordered by when their events happened (not
/// when they were learnt), a page at a time; `from`/`to` keep the events overlapping that
/// range. A `from` not before `to` is `invalid_input` naming `from`.
#[utoipa::path(get, path = "/v1/timeline", tag = "memories", params(TimelineParams),
    responses((status = 200, body = TimelineDoc), (status = "4XX", body = ErrorDoc)))]
pub(super) async fn timeline(
    State(s): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(q): ApiQuery<TimelineParams>,
) -> ApiResult<Response> {
    Ok(Json(s.service.timeline(&p, q).await?).into_response())
}
