//! The job routes: `GET /v1/jobs` (a scope's jobs, newest first), `GET /v1/jobs/{id}` and
//! `POST /v1/jobs/{id}/retry`. Jobs come from async adds (`POST /v1/memories` with
//! `async_mode: true`); each route goes through the service, which applies the key's scope.

use super::extract::{ApiPath, ApiQuery};
use super::AppState;
use crate::api::ErrorDoc;
use crate::auth::{Principal, ScopeParts};
use crate::error::ApiResult;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(super) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_jobs))
        .routes(routes!(get_job))
        .routes(routes!(retry_job))
}

type Caller = Extension<Principal>;

/// `GET /v1/jobs`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct JobListParams {
    pub user_id: Option<String>,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// `pending`, `running`, `done` or `failed`.
    pub status: Option<String>,
    /// The last job id of the previous page.
    pub cursor: Option<String>,
    pub limit: Option<usize>,
}

/// The jobs of a scope (all scopes for an admin key naming none), newest first.
#[utoipa::path(get, path = "/v1/jobs", tag = "jobs", params(JobListParams),
    responses((status = 200, description = "`{results: [job], next_cursor}`", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn list_jobs(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<JobListParams>,
) -> ApiResult<Response> {
    let parts = ScopeParts::new(q.user_id, q.agent_id, q.run_id);
    let limit = q.limit;
    let jobs = s
        .service
        .jobs(&p, &parts, q.status.as_deref(), q.cursor, limit)
        .await?;
    let full = jobs.len() == limit.unwrap_or(50);
    let next = full.then(|| jobs.last().map(|j| j.id.clone())).flatten();
    let results: Vec<_> = jobs.iter().map(mnemo::job_view).collect();
    Ok(Json(json!({ "results": results, "next_cursor": next })).into_response())
}

/// A job: its status (`pending`, `running`, `done`, `failed`), attempts, last error and, once
/// done, the add's outcome. A job of a scope the key may not see is not found.
#[utoipa::path(get, path = "/v1/jobs/{id}", tag = "jobs", params(("id" = String, Path)),
    responses((status = 200, description = "the job", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn get_job(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Response> {
    let job = s.service.job(&p, &id).await?;
    Ok(Json(mnemo::job_view(&job)).into_response())
}

/// Puts a failed job back in the queue (its attempts start again).
#[utoipa::path(post, path = "/v1/jobs/{id}/retry", tag = "jobs", params(("id" = String, Path)),
    responses((status = 200, description = "the job, pending again", body = Object), (status = "4XX", body = ErrorDoc)))]
async fn retry_job(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Response> {
    let job = s.service.retry_job(&p, &id).await?;
    Ok(Json(mnemo::job_view(&job)).into_response())
}
