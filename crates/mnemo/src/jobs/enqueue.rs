//! Queueing an async add: the payload a job carries (every field of the request that shapes
//! what is written), the job id a caller's idempotency key fixes, and `Memory::enqueue_add`,
//! which checks the add as a blocking one would and logs its turns with the job.

use super::ADD_JOB;
use crate::add::prepare;
use crate::{AddInput, AddRequest, Memory};
use mnemo_core::{Error, JobRecord, MemoryKind, NewJob, NoteInput, Result, Scope, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// An add as a job carries it: every field of [`AddRequest`] that shapes what is written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct AddPayload {
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
    pub(super) fn request(self, scope: Scope) -> AddRequest {
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

impl Memory {
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
}
