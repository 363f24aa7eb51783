//! Running jobs: claiming one, running it while its lease is renewed, and recording how it
//! ended (done, put back with a jittered backoff, or failed); an add whose turns were erased
//! while it waited is refused before any model call.

use super::enqueue::AddPayload;
use super::ADD_JOB;
use crate::add::prepare;
use crate::{AddRequest, Memory};
use mnemo_core::{Error, JobOutcome, JobRecord, Lease, MessageId, Result};
use std::time::Duration;

/// A number in [0, 1] from the random bits of a fresh UUIDv7 (jitter needs no better).
fn jitter_unit() -> f64 {
    let bits = (uuid::Uuid::now_v7().as_u128() & 0xFFFF_FFFF) as u32;
    f64::from(bits) / f64::from(u32::MAX)
}

fn to_chrono(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

impl Memory {
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
}
