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

use crate::add::prepare;
use crate::{AddInput, AddRequest, Memory};
use mnemo_core::{
    Error, JobOutcome, JobQuery, JobRecord, JobStore, Lease, MemoryKind, MessageId, NewJob,
    NoteInput, QueueStats, Result, Scope, Timestamp,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
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

/// An add as a job carries it: every field of [`AddRequest`] that shapes what is written.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct AddPayload {
    input: AddInput,
    #[serde(default)]
    metadata: Option<serde_json::Value>,
    #[serde(default)]
    expires_at: Option<Timestamp>,
    #[serde(default)]
    timestamp: Option<Timestamp>,
    idempotency_key: String,
    #[serde(default)]
    infer: Option<bool>,
    #[serde(default)]
    memory_type: Option<MemoryKind>,
    #[serde(default)]
    note: NoteInput,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    request_id: Option<String>,
    #[serde(default)]
    actor: Option<String>,
}

impl AddPayload {
    fn request(self, scope: Scope) -> AddRequest {
        AddRequest {
            scope,
            input: self.input,
            metadata: self.metadata,
            expires_at: self.expires_at,
            timestamp: self.timestamp,
            idempotency_key: Some(self.idempotency_key),
            infer: self.infer,
            memory_type: self.memory_type,
            note: self.note,
            instructions: self.instructions,
            session_id: self.session_id,
            request_id: self.request_id,
            actor: self.actor,
        }
    }
}

/// The job id of an add with the caller's idempotency key: the same for every retry of the
/// request, so a repeated async add names the job it already queued.
fn keyed_job_id(scope: &Scope, key: &str) -> String {
    let digest = Sha256::digest(format!("job\u{0}{}\u{0}{key}", scope.key()).as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .to_string()
}

/// A number in [0, 1] from the random bits of a fresh UUIDv7 (jitter needs no better).
fn jitter_unit() -> f64 {
    let bits = (uuid::Uuid::now_v7().as_u128() & 0xFFFF_FFFF) as u32;
    f64::from(bits) / f64::from(u32::MAX)
}

fn to_chrono(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
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

    /// Checks `req` as `add` would, then stores it as a pending job and returns the job. With
    /// an idempotency key, a repeated request returns the job it queued first. Refused as
    /// rate limited (retryable) while the queue is full.
    pub async fn enqueue_add(&self, mut req: AddRequest) -> Result<JobRecord> {
        // Images are described now, so the queued job carries text, never an image's bytes.
        self.resolve_parts(&mut req).await?;
        let now = chrono::Utc::now();
        prepare(&req, now)?;
        self.infers(&req)?;
        if let Some(depth) = self.queue_full(&req.scope).await? {
            return Err(Error::RateLimited {
                what: "the job queue".into(),
                reason: format!("{depth} jobs of this tenant are waiting; retry later"),
            });
        }
        let id = match &req.idempotency_key {
            Some(key) => keyed_job_id(&req.scope, key),
            None => uuid::Uuid::now_v7().to_string(),
        };
        // The messages are dated when they were sent, not when a worker gets to them.
        req.timestamp.get_or_insert(now);
        let payload = AddPayload {
            idempotency_key: req
                .idempotency_key
                .clone()
                .unwrap_or_else(|| format!("job:{id}")),
            input: req.input,
            metadata: req.metadata,
            expires_at: req.expires_at,
            timestamp: req.timestamp,
            infer: req.infer,
            memory_type: req.memory_type,
            note: req.note,
            instructions: req.instructions,
            session_id: req.session_id,
            request_id: req.request_id,
            actor: req.actor,
        };
        // The turns as the job's add will log them (same ids, times and session), logged now.
        let (messages, _, _) = prepare(&payload.clone().request(req.scope.clone()), now)?;
        let job = NewJob {
            id: id.clone(),
            scope: req.scope,
            kind: ADD_JOB.into(),
            payload: serde_json::to_value(payload)
                .map_err(|e| Error::internal(format!("an add payload serialises: {e}")))?,
            max_attempts: self.inner.jobs.max_attempts,
            created_at: now,
            messages,
        };
        let this = self.clone();
        let keyed = req.idempotency_key.is_some();
        let stored = crate::run_blocking(move || {
            let q = this.job_store()?;
            match q.enqueue(&job) {
                Err(e) if keyed && e.kind() == mnemo_core::ErrorKind::Conflict => q
                    .job(&job.id)?
                    .ok_or_else(|| Error::internal("a conflicting job reads back")),
                other => other,
            }
        })
        .await?;
        self.inner.job_ready.notify_waiters();
        Ok(stored)
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

    /// Claims one runnable job for `worker`, runs it and records how it ended; returns the job
    /// as it stands after (`None` when nothing was runnable).
    pub async fn run_next_job(&self, worker: &str) -> Result<Option<JobRecord>> {
        let this = self.clone();
        let (name, lease) = (worker.to_string(), to_chrono(self.inner.jobs.lease));
        let claimed = crate::run_blocking(move || {
            this.job_store()?.claim(&Lease {
                worker: &name,
                now: chrono::Utc::now(),
                length: lease,
            })
        })
        .await?;
        let Some(job) = claimed else {
            return Ok(None);
        };
        let outcome = match self.run_renewing(&job, worker).await {
            Ok(result) => JobOutcome::Done { result },
            Err(e) => {
                let kind = e.kind();
                tracing::warn!(job = %job.id, attempt = job.attempts, error_kind = kind.as_str(), "job failed");
                let error = format!("{}: {e}", kind.as_str());
                if kind.is_retryable() && job.attempts < job.max_attempts {
                    let wait = self.inner.jobs.backoff(job.attempts, jitter_unit());
                    JobOutcome::Retry {
                        error,
                        kind: kind.as_str().into(),
                        run_after: chrono::Utc::now() + to_chrono(wait),
                    }
                } else {
                    JobOutcome::Failed {
                        error,
                        kind: kind.as_str().into(),
                    }
                }
            }
        };
        let this = self.clone();
        let (name, id) = (worker.to_string(), job.id.clone());
        crate::run_blocking(move || {
            let q = this.job_store()?;
            if !q.finish(&id, &name, &outcome, chrono::Utc::now())? {
                tracing::warn!(job = %id, "job taken over by another worker before it finished");
            }
            q.job(&id)
        })
        .await
    }

    /// Runs `job`, renewing `worker`'s lease every third of the lease while it runs, so a job
    /// that runs longer than one lease (a slow model) is not taken over and run again by another
    /// worker. A renewal that fails, or finds the job taken over, is logged; the run goes on and
    /// its finish is then refused by the store.
    async fn run_renewing(&self, job: &JobRecord, worker: &str) -> Result<serde_json::Value> {
        let lease = self.inner.jobs.lease;
        let run = self.run_job(job);
        tokio::pin!(run);
        loop {
            tokio::select! {
                out = &mut run => return out,
                () = tokio::time::sleep(lease / 3) => {
                    let (this, id, name) = (self.clone(), job.id.clone(), worker.to_string());
                    let renewed = crate::run_blocking(move || {
                        let lease = Lease {
                            worker: &name,
                            now: chrono::Utc::now(),
                            length: to_chrono(lease),
                        };
                        this.job_store()?.renew_lease(&id, &lease)
                    })
                    .await;
                    match renewed {
                        Ok(true) => {}
                        Ok(false) => tracing::warn!(job = %job.id, "job taken over while it ran"),
                        Err(e) => tracing::warn!(
                            job = %job.id,
                            error_kind = e.kind().as_str(),
                            "job lease not renewed"
                        ),
                    }
                }
            }
        }
    }

    async fn run_job(&self, job: &JobRecord) -> Result<serde_json::Value> {
        match job.kind.as_str() {
            ADD_JOB => {
                let payload: AddPayload = serde_json::from_value(job.payload.clone())
                    .map_err(|e| Error::invalid("payload", e.to_string()))?;
                let req = payload.request(job.scope.clone());
                self.check_not_erased(&req).await?;
                let outcome = self.add(req).await?;
                serde_json::to_value(outcome)
                    .map_err(|e| Error::internal(format!("an add outcome serialises: {e}")))
            }
            other => Err(Error::invalid(
                "kind",
                format!("no runner for jobs of kind {other:?}"),
            )),
        }
    }

    /// Refuses to run an add whose turns, logged when it was queued, were erased since: no
    /// model sees their text again. (The store refuses the add's write too, for an erase that
    /// lands while the add runs: see `Store::write`.) A job queued before turns were logged
    /// with it finds none and runs.
    async fn check_not_erased(&self, req: &AddRequest) -> Result<()> {
        let (messages, _, _) = prepare(req, chrono::Utc::now())?;
        let scope = req.scope.clone();
        let ids: Vec<MessageId> = messages.iter().map(|m| m.id).collect();
        let logged = self
            .with_store(move |s| s.messages_by_id(&scope, &ids))
            .await?;
        match logged.iter().find(|m| m.content.is_empty()) {
            Some(m) => Err(mnemo_core::erased_message(m.id)),
            None => Ok(()),
        }
    }

    /// Starts `n` worker tasks on the current tokio runtime; they run until the returned handle
    /// is stopped or dropped. A job a stopped worker was running is taken over after its lease.
    pub fn start_workers(&self, n: usize) -> JobWorkers {
        self.start_workers_with(n, Arc::new(|_: &JobRecord| {}))
    }

    /// [`Memory::start_workers`], calling `on_run` with each job a worker ran, as it stands
    /// after the run (for metrics).
    pub fn start_workers_with(&self, n: usize, on_run: OnJobRun) -> JobWorkers {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let tasks = (0..n)
            .map(|i| {
                let (this, on_run, stopped) = (self.clone(), on_run.clone(), stopped.clone());
                let name = format!("{}-{i}", uuid::Uuid::now_v7());
                tokio::spawn(async move { this.work(&name, on_run, stopped).await })
            })
            .collect();
        JobWorkers { tasks, stop }
    }

    async fn work(
        &self,
        name: &str,
        on_run: OnJobRun,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        loop {
            // Checked between jobs only: a job a worker has claimed runs to its end.
            if *stop.borrow() {
                return;
            }
            // Created before the claim, so a job enqueued meanwhile still wakes this worker.
            let ready = self.inner.job_ready.notified();
            match self.run_next_job(name).await {
                Ok(Some(job)) => {
                    on_run(&job);
                    continue;
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(error_kind = e.kind().as_str(), "job worker could not claim")
                }
            }
            // The timer only bounds how late a job of another process is seen.
            tokio::select! {
                _ = tokio::time::timeout(self.inner.jobs.poll, ready) => {}
                _ = stop.changed() => {}
            }
        }
    }
}

/// Called with each job a worker ran.
pub type OnJobRun = Arc<dyn Fn(&JobRecord) + Send + Sync>;

/// Worker tasks started by [`Memory::start_workers`]. [`JobWorkers::stop`] lets each finish
/// the job it is running (so none is left `running` under a lease nobody renews); dropping
/// this aborts them at once, and a job one was running is taken over after its lease.
#[derive(Debug)]
pub struct JobWorkers {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl JobWorkers {
    /// Stops the workers after the job each is running, and waits for that. Jobs still
    /// pending stay queued for the next worker (of this process or another).
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        for task in std::mem::take(&mut self.tasks) {
            let _ = task.await;
        }
    }

    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }
}

impl Drop for JobWorkers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
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
