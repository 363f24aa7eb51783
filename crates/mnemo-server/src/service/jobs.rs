//! Async adds and jobs for REST, the Mem0 routes and MCP. An async add is checked as a blocking
//! one (the key's scope, the body, the model it needs) before it is queued; once its tenant (the
//! scope's user, else agent, else run) holds the configured queue depth of open jobs it is
//! refused with 429 and `Retry-After` — other tenants' adds are not. A job is read, listed and retried
//! through the scope rules of memories: a job of a scope the key may not see is answered as an
//! unknown one.

use super::Service;
use crate::api::AddBody;
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiKind, ApiResult};
use mnemo_core::{ErrorKind, JobQuery, JobRecord, JobStatus};

/// Jobs a listing returns when the request names no limit, and the most it may name.
const DEFAULT_JOBS: usize = 50;
const MAX_JOBS: usize = 1000;

/// Seconds a refused async add is told to wait.
const QUEUE_FULL_RETRY_AFTER: u64 = 5;

impl Service {
    /// Checks and queues an add; the answer is the queued job.
    pub async fn add_async(
        &self,
        p: &Principal,
        body: AddBody,
        request_id: &str,
    ) -> ApiResult<JobRecord> {
        let req = self.add_request(p, body, request_id)?;
        self.run("add_async", p, async {
            if let Some(depth) = self.memory.queue_full(&req.scope).await? {
                self.metrics.jobs_refused.inc();
                let mut e = ApiError::new(
                    ApiKind::Core(ErrorKind::RateLimited),
                    format!(
                        "{depth} background jobs of this tenant are waiting (each tenant's share is max_queue_depth); retry later"
                    ),
                );
                e.retry_after = Some(QUEUE_FULL_RETRY_AFTER);
                return Err(e);
            }
            let job = self.memory.enqueue_add(req).await?;
            tracing::info!(request_id, key = %p.key_id, job = %job.id, "add queued");
            Ok(job)
        })
        .await
    }

    /// A job the key may see; `not_found` otherwise.
    pub async fn job(&self, p: &Principal, id: &str) -> ApiResult<JobRecord> {
        match self.memory.job(id).await? {
            Some(job) if p.may_see(&job.scope) => Ok(job),
            _ => Err(mnemo_core::Error::not_found("job", id).into()),
        }
    }

    /// Jobs of the scope asked for (resolved against the key), newest first.
    pub async fn jobs(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        status: Option<&str>,
        before: Option<String>,
        limit: Option<usize>,
    ) -> ApiResult<Vec<JobRecord>> {
        let scope = p.resolve(parts)?;
        if scope.is_none() {
            p.require_admin("listing the jobs of every scope")?;
        }
        let status = status.map(str::parse::<JobStatus>).transpose()?;
        let limit = limit.unwrap_or(DEFAULT_JOBS);
        if limit == 0 || limit > MAX_JOBS {
            return Err(ApiError::invalid(format!("limit must be 1 to {MAX_JOBS}")));
        }
        Ok(self
            .memory
            .jobs(JobQuery {
                scope,
                status,
                before,
                limit,
            })
            .await?)
    }

    /// Puts a failed job the key may see back in the queue.
    pub async fn retry_job(&self, p: &Principal, id: &str) -> ApiResult<JobRecord> {
        let job = self.job(p, id).await?;
        self.check_write(p, &job.scope)?;
        Ok(self.memory.retry_job(id).await?)
    }

    /// Brings the queue gauges up to date (before `/metrics` is rendered).
    pub async fn refresh_job_metrics(&self) {
        match self.memory.queue_stats().await {
            Ok(stats) => self.metrics.observe_queue(&stats, chrono::Utc::now()),
            Err(e) => tracing::warn!(error_kind = e.kind().as_str(), "queue stats unavailable"),
        }
    }

    /// Starts `n` job workers that count each job's outcome.
    pub fn start_job_workers(&self, n: usize) -> mnemo::JobWorkers {
        let metrics = self.metrics.clone();
        self.memory.start_workers_with(
            n,
            std::sync::Arc::new(move |job: &JobRecord| metrics.observe_job(job)),
        )
    }
}

/// Mem0's platform answer to an async add: the job queued, as an event to poll.
pub fn mem0_queued(job: &JobRecord) -> serde_json::Value {
    serde_json::json!({
        "results": [{
            "message": "Memory processing has been queued for background execution",
            "status": "PENDING",
            "event_id": job.id,
        }]
    })
}

/// A job as Mem0's platform reports an async add's event (`GET /v1/event/{id}/`).
pub fn mem0_event(job: &JobRecord) -> serde_json::Value {
    let status = match job.status {
        JobStatus::Pending => "PENDING",
        JobStatus::Running => "RUNNING",
        JobStatus::Done => "SUCCEEDED",
        JobStatus::Failed => "FAILED",
    };
    let results = job
        .result
        .as_ref()
        .and_then(|r| r.get("results"))
        .cloned()
        .unwrap_or_else(|| serde_json::json!([]));
    serde_json::json!({
        "id": job.id,
        "event_type": job.kind.to_uppercase(),
        "status": status,
        "results": results,
        "error": (job.status == JobStatus::Failed).then_some(job.last_error.as_deref()).flatten(),
        "attempts": job.attempts,
        "created_at": job.created_at,
        "updated_at": job.updated_at,
    })
}

/// The native answer to an async add.
pub fn queued(job: &JobRecord) -> serde_json::Value {
    serde_json::json!({
        "job_id": job.id,
        "status": job.status.as_str(),
        "event_id": job.id,
        "message": "queued for background processing",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(status: JobStatus, result: Option<serde_json::Value>, error: Option<&str>) -> JobRecord {
        let at = chrono::DateTime::from_timestamp_millis(1_800_000_000_000).expect("a time");
        JobRecord {
            id: "j1".into(),
            scope: mnemo_core::Scope::user("ana").expect("a scope"),
            kind: "add".into(),
            payload: serde_json::json!({}),
            status,
            attempts: 1,
            max_attempts: 3,
            run_after: at,
            locked_until: None,
            locked_by: None,
            last_error: error.map(str::to_string),
            error_kind: error.map(|_| "unavailable".to_string()),
            result,
            created_at: at,
            updated_at: at,
        }
    }

    #[test]
    fn a_job_is_reported_with_mem0s_event_statuses() {
        let pending = mem0_event(&job(JobStatus::Pending, None, Some("unavailable: later")));
        // A job waiting for a retry is still pending, and its last error is not yet the event's.
        assert_eq!(pending["status"], "PENDING");
        assert!(pending["error"].is_null());
        assert_eq!(pending["results"], serde_json::json!([]));
        assert_eq!(
            mem0_event(&job(JobStatus::Running, None, None))["status"],
            "RUNNING"
        );
        let done = mem0_event(&job(
            JobStatus::Done,
            Some(serde_json::json!({"results": [{"id": "m1", "memory": "x", "event": "ADD"}]})),
            None,
        ));
        assert_eq!(done["status"], "SUCCEEDED");
        assert_eq!(done["results"][0]["id"], "m1");
        let failed = mem0_event(&job(JobStatus::Failed, None, Some("invalid_input: no")));
        assert_eq!(failed["status"], "FAILED");
        assert_eq!(failed["error"], "invalid_input: no");
        assert_eq!(failed["event_type"], "ADD");
    }
}
