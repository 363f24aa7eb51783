//! Async adds as durable jobs (`Memory::enqueue_add`) and the workers that run them
//! (`Memory::run_next_job`, `Memory::start_workers`).
//!
//! An async add is checked exactly as a blocking one would be (scope, metadata, messages,
//! model availability) before anything is stored, so bad input is refused at once and never
//! queued to fail later. The request then becomes one job row, and its messages are appended
//! to the conversation log in the same transaction (`NewJob::messages`): when `enqueue_add`
//! returns, the log, sessions and context packs show the turns, whatever becomes of the job.
//!
//! Running a job is an ordinary `add` whose idempotency key is derived from the job (the
//! caller's own key when given, else `job:<id>`). That key fixes the messages' ids, so the
//! job's add names the turns logged at enqueue and the store does not log them again (as for a
//! keyed add retried after a failure); everything else it writes is what a blocking add writes.
//! A worker renews its lease every third of it while the job runs, so a slow job is never
//! taken over while its worker lives. A worker killed after the add committed but before the
//! job was marked done leaves a running job whose lease runs out; the next worker runs it again and the store *replays* the
//! stored outcome instead of writing twice. Hence no job is lost and none is applied twice
//! across a crash.
//!
//! Erasure: turns erased while their job waits stay erased. The job fails (`invalid_input`
//! naming `messages`, not retried) before any model call, and the store refuses the add's
//! write for an erase that lands while it runs, so no memory or page brings the text back.
//!
//! Failures: an error whose kind is retryable (`ErrorKind::is_retryable`) puts the job back
//! with a jittered exponential backoff until `max_attempts`; any other error, or the last
//! attempt, fails the job with its error kept on the record. Deferred maintenance (segment
//! summaries, profile analysis, note evolution) still runs inside the add that triggers it,
//! so in a job it runs in the worker: no maintenance kind of its own uses the queue yet.
//!
//! This file holds the configuration, the queue's reads and the job view; queueing is in
//! `enqueue`, running a job in `run`, the worker tasks in `workers`.

mod enqueue;
mod run;
mod workers;

pub use workers::{JobWorkers, OnJobRun};

use crate::Memory;
use mnemo_core::{Error, JobQuery, JobRecord, JobStore, QueueStats, Result, Scope};
use std::sync::Arc;
use std::time::Duration;

/// The kind of an async add's job.
pub const ADD_JOB: &str = "add";

/// How jobs are run. `workers = 0` (the library's default) runs none in this process: jobs
/// wait for a server or a `Memory` that starts workers.
#[derive(Debug, Clone, PartialEq)]
pub struct JobConfig {
    /// Worker tasks `Memory::open` starts in this process.
    pub workers: usize,
    /// Attempts before a retryable failure becomes final.
    pub max_attempts: u32,
    /// The first retry waits about this long; each further one twice as long, up to
    /// `backoff_max`, each scaled by a random factor in [0.5, 1].
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// How long a claimed job is leased to its worker. The worker renews the lease every third
    /// of it while the job runs; a job whose worker stopped renewing (it died) is taken over by
    /// another worker once the lease has run out.
    pub lease: Duration,
    /// Async adds are refused (rate limited, retry later) while this many jobs are open.
    pub max_queue_depth: Option<u64>,
    /// How often an idle worker looks for jobs written by other processes (jobs enqueued
    /// through this `Memory` wake it at once).
    pub poll: Duration,
}

impl Default for JobConfig {
    fn default() -> Self {
        Self {
            workers: 0,
            max_attempts: 5,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(60),
            lease: Duration::from_secs(300),
            max_queue_depth: None,
            poll: Duration::from_millis(500),
        }
    }
}

impl JobConfig {
    pub fn validate(&self) -> Result<()> {
        if self.max_attempts == 0 {
            return Err(Error::invalid("jobs.max_attempts", "must be at least 1"));
        }
        if self.lease < Duration::from_secs(1) {
            return Err(Error::invalid(
                "jobs.lease_secs",
                "must be at least 1 second",
            ));
        }
        if self.backoff_base > self.backoff_max {
            return Err(Error::invalid(
                "jobs.backoff_base_ms",
                "must not exceed jobs.backoff_max_ms",
            ));
        }
        if self.poll.is_zero() {
            return Err(Error::invalid("jobs.poll_ms", "must be positive"));
        }
        Ok(())
    }

    /// The wait before attempt `attempts + 1` after `attempts` failed ones, with `unit` in
    /// [0, 1] choosing where in the jitter band it falls.
    pub fn backoff(&self, attempts: u32, unit: f64) -> Duration {
        let doubled = self
            .backoff_base
            .saturating_mul(1u32 << attempts.saturating_sub(1).min(20));
        doubled
            .min(self.backoff_max)
            .mul_f64(0.5 + 0.5 * unit.clamp(0.0, 1.0))
    }
}

impl Memory {
    pub fn job_config(&self) -> &JobConfig {
        &self.inner.jobs
    }

    pub fn with_job_config(self, jobs: JobConfig) -> Self {
        Self {
            inner: Arc::new(crate::Inner {
                jobs,
                ..(*self.inner).clone()
            }),
        }
    }

    fn job_store(&self) -> Result<&dyn JobStore> {
        self.store().jobs().ok_or_else(|| Error::Unavailable {
            component: "job queue".into(),
            reason: "this store keeps no jobs".into(),
        })
    }

    /// Whether `scope`'s tenant ([`mnemo_core::jobs::queue_tenant`]: its user, else its agent,
    /// else its run) holds its whole share of the queue — `max_queue_depth` open jobs — so an
    /// async add of `scope` would be refused (`Some(its open jobs)`); `None` when it admits one
    /// (or there is no limit). Each tenant's share is its own: one tenant's backlog never
    /// refuses another's adds.
    pub async fn queue_full(&self, scope: &Scope) -> Result<Option<u64>> {
        let Some(max) = self.inner.jobs.max_queue_depth else {
            return Ok(None);
        };
        let tenant = mnemo_core::jobs::queue_tenant(scope);
        let this = self.clone();
        let open = crate::run_blocking(move || this.job_store()?.open_jobs(&tenant)).await?;
        Ok((open >= max).then_some(open))
    }

    /// The job with this id; `None` when there is none. Callers bound to a scope check that
    /// it covers the job's scope (the server does).
    pub async fn job(&self, id: &str) -> Result<Option<JobRecord>> {
        let (this, id) = (self.clone(), id.to_string());
        crate::run_blocking(move || this.job_store()?.job(&id)).await
    }

    pub async fn jobs(&self, query: JobQuery) -> Result<Vec<JobRecord>> {
        let this = self.clone();
        crate::run_blocking(move || this.job_store()?.list_jobs(&query)).await
    }

    /// Puts a failed job back in the queue.
    pub async fn retry_job(&self, id: &str) -> Result<JobRecord> {
        let (this, id) = (self.clone(), id.to_string());
        let job = crate::run_blocking(move || this.job_store()?.retry_job(&id, chrono::Utc::now()))
            .await?;
        self.inner.job_ready.notify_waiters();
        Ok(job)
    }

    pub async fn queue_stats(&self) -> Result<QueueStats> {
        let this = self.clone();
        crate::run_blocking(move || this.job_store()?.queue_stats()).await
    }
}

/// What a request to a job looks like on every surface: id, status, attempts, error and, once
/// done, the add's outcome.
pub fn job_view(job: &JobRecord) -> serde_json::Value {
    serde_json::json!({
        "id": job.id,
        "kind": job.kind,
        "status": job.status.as_str(),
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "user_id": job.scope.user_id().map(|v| v.as_str()),
        "agent_id": job.scope.agent_id().map(|v| v.as_str()),
        "run_id": job.scope.run_id().map(|v| v.as_str()),
        "error": job.last_error,
        "error_kind": job.error_kind,
        "result": job.result,
        "run_after": job.run_after,
        "created_at": job.created_at,
        "updated_at": job.updated_at,
    })
}
