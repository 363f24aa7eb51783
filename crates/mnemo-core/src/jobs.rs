//! Durable background jobs kept in the store: async adds (and whatever else is deferred) wait
//! here until a worker runs them, so a crash or restart loses none.
//!
//! A job is a row with a scope, a kind, a JSON payload and a status. Workers take jobs with
//! [`JobStore::claim`], which hands out a *lease*: the job becomes `running`, its attempt count
//! grows by one and `locked_until` is set. A worker that dies holding a job simply lets its
//! lease run out; the next claim after that takes the job again. A claim never hands one job to
//! two live workers: on an embedded store the write lock serialises claims, on PostgreSQL the
//! candidate row is locked with `FOR UPDATE SKIP LOCKED`.
//!
//! A job may therefore run more than once (its worker died after the job's effect committed but
//! before [`JobStore::finish`]). Job runners make their effect idempotent, keyed by the job's
//! id, so a second run replays the first one's outcome instead of applying it again. The store
//! only promises that a job is never lost and never *finished* twice: `finish` is refused to a
//! worker whose lease was taken over.
//!
//! A job may carry the messages its work will log ([`NewJob::messages`]): they are logged in
//! the enqueue's own transaction, so the conversation log shows what the caller was told was
//! accepted from the moment the job exists, whatever becomes of the job.
//!
//! Backends expose their job table through [`crate::SideTables::jobs`].

use crate::memory::{Message, Timestamp};
use crate::{Error, Result, Scope};
use serde::{Deserialize, Serialize};

/// Where a job stands. `Pending` waits for its `run_after`; `Running` is leased to a worker;
/// `Done` and `Failed` are final (a failed job runs again only through
/// [`JobStore::retry_job`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    Pending,
    Running,
    Done,
    Failed,
}

impl JobStatus {
    pub const ALL: [JobStatus; 4] = [
        JobStatus::Pending,
        JobStatus::Running,
        JobStatus::Done,
        JobStatus::Failed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pending => "pending",
            JobStatus::Running => "running",
            JobStatus::Done => "done",
            JobStatus::Failed => "failed",
        }
    }
}

impl std::str::FromStr for JobStatus {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        JobStatus::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                Error::invalid("status", "must be one of pending, running, done, failed")
            })
    }
}

/// A job to store. `id` is chosen by the caller (a UUID, or derived from an idempotency key so a
/// repeated request names the same job).
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    pub id: String,
    pub scope: Scope,
    /// What runs it (e.g. `add`); the runner of that kind reads `payload`.
    pub kind: String,
    pub payload: serde_json::Value,
    /// Attempts before a retryable failure becomes final; at least 1.
    pub max_attempts: u32,
    pub created_at: Timestamp,
    /// Messages of the job's scope logged with it (an async add's turns, with the ids, session
    /// and times its run will write them with); not part of the stored job.
    pub messages: Vec<Message>,
}

/// A stored job. Persisted as one row; `payload` and `result` are JSON, so adding fields to a
/// runner's payload stays compatible as long as the runner gives them defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: String,
    pub scope: Scope,
    pub kind: String,
    pub payload: serde_json::Value,
    pub status: JobStatus,
    /// Claims so far (a claim counts even when its worker died before finishing).
    pub attempts: u32,
    pub max_attempts: u32,
    /// A pending job is not claimed before this time (retry backoff).
    pub run_after: Timestamp,
    /// The lease of a running job; after it a claim may take the job again.
    pub locked_until: Option<Timestamp>,
    pub locked_by: Option<String>,
    /// The last failure, as `kind: message` (kept after a later success for the record).
    pub last_error: Option<String>,
    /// The error kind of the last failure (`ErrorKind::as_str`).
    pub error_kind: Option<String>,
    /// What the job produced once done.
    pub result: Option<serde_json::Value>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// How a worker ends its claim of a job.
#[derive(Debug, Clone, PartialEq)]
pub enum JobOutcome {
    Done {
        result: serde_json::Value,
    },
    /// A retryable failure: the job waits until `run_after` and is claimed again.
    Retry {
        error: String,
        kind: String,
        run_after: Timestamp,
    },
    /// A final failure: the job stays `failed` with its error.
    Failed {
        error: String,
        kind: String,
    },
}

/// A worker's lease of a job, asked for at `now` ([`JobStore::claim`], [`JobStore::renew_lease`]):
/// `worker` holds the job for `length`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease<'a> {
    pub worker: &'a str,
    pub now: Timestamp,
    pub length: chrono::Duration,
}

impl Lease<'_> {
    /// When the lease is asked for, in milliseconds since the epoch (as stores keep times).
    pub fn now_ms(&self) -> i64 {
        self.now.timestamp_millis()
    }

    /// When the lease ends (`now + length`), in milliseconds since the epoch.
    pub fn until(&self) -> i64 {
        (self.now + self.length).timestamp_millis()
    }
}

/// What ending a claim writes into the job's row ([`JobOutcome::end`]); `None` leaves a
/// column as it is. The lease always ends (`locked_until` cleared), and `updated_at` is the
/// time of the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnd<'a> {
    pub status: JobStatus,
    /// A done job's result, as JSON text.
    pub result: Option<String>,
    pub last_error: Option<&'a str>,
    pub error_kind: Option<&'a str>,
    /// A retried job's next run, in milliseconds since the epoch.
    pub run_after: Option<i64>,
    /// Whether the job forgets its worker (`locked_by` cleared): a retried job is anyone's to
    /// claim; a done or failed one keeps the name of the worker that ended it.
    pub releases_worker: bool,
}

impl JobOutcome {
    /// The columns this outcome writes: a done job its result; a retried one its error and
    /// next run, as pending and released from its worker; a failed one its error.
    pub fn end(&self) -> JobEnd<'_> {
        let none = JobEnd {
            status: JobStatus::Done,
            result: None,
            last_error: None,
            error_kind: None,
            run_after: None,
            releases_worker: false,
        };
        match self {
            JobOutcome::Done { result } => JobEnd {
                result: Some(result.to_string()),
                ..none
            },
            JobOutcome::Retry {
                error,
                kind,
                run_after,
            } => JobEnd {
                status: JobStatus::Pending,
                last_error: Some(error),
                error_kind: Some(kind),
                run_after: Some(run_after.timestamp_millis()),
                releases_worker: true,
                ..none
            },
            JobOutcome::Failed { error, kind } => JobEnd {
                status: JobStatus::Failed,
                last_error: Some(error),
                error_kind: Some(kind),
                ..none
            },
        }
    }
}

/// Which jobs [`JobStore::list_jobs`] returns: of scopes `scope` covers (all with `None`), of
/// one status when given, newest first, at most `limit`, only those created before the job
/// `before` when given (the cursor: the last id of the previous page).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobQuery {
    pub scope: Option<Scope>,
    pub status: Option<JobStatus>,
    pub before: Option<String>,
    pub limit: usize,
}

/// The queue at a glance, for metrics and admission control.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueStats {
    pub pending: u64,
    pub running: u64,
    pub done: u64,
    pub failed: u64,
    /// Creation time of the oldest job not yet final (pending or running).
    pub oldest_open_at: Option<Timestamp>,
}

impl QueueStats {
    /// Jobs not yet final: what admission control counts.
    pub fn depth(&self) -> u64 {
        self.pending + self.running
    }
}

impl NewJob {
    /// What every backend checks before storing a job.
    pub fn validate(&self) -> Result<()> {
        if self.id.trim().is_empty() || self.id.len() > 128 {
            return Err(Error::invalid("id", "a job id must be 1 to 128 characters"));
        }
        if self.kind.trim().is_empty() || self.kind.len() > 64 {
            return Err(Error::invalid(
                "kind",
                "a job kind must be 1 to 64 characters",
            ));
        }
        if self.max_attempts == 0 {
            return Err(Error::invalid("max_attempts", "must be at least 1"));
        }
        for m in &self.messages {
            if m.scope()? != self.scope {
                return Err(Error::invalid(
                    "messages",
                    "every message of a job must carry the job's scope",
                ));
            }
        }
        crate::limits::check_json_no_nul("payload", &self.payload)
    }
}

/// The job table of a store. Each method is one transaction; none is cached, so several
/// processes on one store share one queue.
pub trait JobStore: Send + Sync {
    /// Stores a pending job, runnable at once, and appends `job.messages` to the message log
    /// in the same transaction: both land or neither does. A message already logged (same id)
    /// is left as it is, as [`crate::RecordWrites::write`] leaves it, and one an erase emptied
    /// refuses the enqueue ([`crate::erased_message`]). A job with this id already stored is a
    /// `conflict` and changes nothing (no message is logged).
    fn enqueue(&self, job: &NewJob) -> Result<JobRecord>;
    /// Leases the runnable job created first (pending with `run_after <= now`, or running with
    /// a lease that ended before `now`) to `lease.worker` until [`Lease::until`]; its attempts grow by
    /// one. A running job whose lease ended with no attempt left becomes `failed` instead of
    /// being claimed. `None` when nothing is runnable. Concurrent claims never return the same
    /// job while its lease holds.
    fn claim(&self, lease: &Lease<'_>) -> Result<Option<JobRecord>>;
    /// Ends `worker`'s claim of job `id` with `outcome` (the columns [`JobOutcome::end`]
    /// says). `Ok(false)` (and nothing written) when the job is no longer running under this
    /// worker's lease (another worker took it over); `not_found` when there is no such job.
    fn finish(&self, id: &str, worker: &str, outcome: &JobOutcome, now: Timestamp) -> Result<bool>;
    /// The job with this id; `None` when there is none.
    fn job(&self, id: &str) -> Result<Option<JobRecord>>;
    /// Jobs as `query` picks them, newest first.
    fn list_jobs(&self, query: &JobQuery) -> Result<Vec<JobRecord>>;
    /// Extends `lease.worker`'s lease of the running job `id` to [`Lease::until`]: a worker
    /// still at work renews before its lease runs out, so no claim takes over a job that is
    /// only slow. `Ok(false)`, and nothing written, when the job is not running under this
    /// worker (it finished, or another claim took it after the lease ran out); `not_found` when
    /// there is no such job.
    fn renew_lease(&self, id: &str, lease: &Lease<'_>) -> Result<bool>;
    /// Puts a failed job back in the queue (pending, runnable at `now`, attempts back to 0).
    /// `not_found` when there is no such job, `conflict` when [`check_retryable`] refuses it
    /// (not failed, or emptied by an erase).
    fn retry_job(&self, id: &str, now: Timestamp) -> Result<JobRecord>;
    /// Counts per status and the oldest open job.
    fn queue_stats(&self) -> Result<QueueStats>;
    /// Jobs not yet final (pending or running) of the scopes `tenant` covers (every agent and
    /// run of a user scope): what a tenant's share of the queue counts ([`queue_tenant`]).
    fn open_jobs(&self, tenant: &Scope) -> Result<u64>;
}

/// The tenant a job's scope counts against in queue admission: its user; a scope with no user,
/// its agent; else its run. Each tenant has a share of the queue of its own, so one tenant's
/// backlog never refuses another tenant's async adds.
pub fn queue_tenant(scope: &Scope) -> Scope {
    let tenant = match (scope.user_id(), scope.agent_id()) {
        (Some(u), _) => Scope::of(Some(u.clone()), None, None),
        (None, Some(a)) => Scope::of(None, Some(a.clone()), None),
        (None, None) => Scope::of(None, None, scope.run_id().cloned()),
    };
    tenant.unwrap_or_else(|_| scope.clone())
}

/// The error an erase leaves on a job that was still to run when text it carried was erased.
pub const ERASED_JOB_ERROR: &str =
    "text this job carried was erased before it ran; the job was emptied and will not run";

/// Whether a job of this `status`, whose last error is `last_error`, may be put back in the
/// queue by hand: only a failed one, and not one an erase emptied (its request is gone, so a run
/// could only fail again). The `conflict` every store answers otherwise.
pub fn check_retryable(id: &str, status: JobStatus, last_error: Option<&str>) -> Result<()> {
    if status != JobStatus::Failed {
        return Err(Error::Conflict {
            reason: format!(
                "job {id} is {}, only a failed job is retried",
                status.as_str()
            ),
        });
    }
    if last_error == Some(ERASED_JOB_ERROR) {
        return Err(Error::Conflict {
            reason: format!(
                "job {id} was emptied by an erase: nothing of its request is left to run"
            ),
        });
    }
    Ok(())
}

/// A job's stored JSON column (`payload` or `result`) decoded; text that does not parse is a
/// storage error naming the column.
pub fn stored_json(column: &str, raw: &str) -> Result<serde_json::Value> {
    serde_json::from_str(raw).map_err(|e| Error::storage(format!("jobs.{column}: {e}")))
}

/// Whether a stored job (its `payload` and its `result`, when it has one) carries any of `texts`:
/// the rule every store applies when an erase empties the scope's jobs ([`mentions_any`]).
pub fn carries_any(payload: &str, result: Option<&str>, texts: &[String]) -> Result<bool> {
    if mentions_any(&stored_json("payload", payload)?, texts) {
        return Ok(true);
    }
    match result {
        Some(r) => Ok(mentions_any(&stored_json("result", r)?, texts)),
        None => Ok(false),
    }
}

/// Whether any string inside `value` contains one of `texts` (blank ones count for nothing):
/// how an erase finds the jobs whose stored request or result carries erased text. A job
/// keeps its own copy of an add's text (its payload until it runs, the memories it wrote in its
/// result), so an erase empties every job of the scope this finds (see `Erasure`), and one not
/// finished yet fails with [`ERASED_JOB_ERROR`]. Linear in the size of `value` times the texts.
pub fn mentions_any(value: &serde_json::Value, texts: &[String]) -> bool {
    use serde_json::Value;
    let texts: Vec<&str> = texts
        .iter()
        .map(String::as_str)
        .filter(|t| !t.trim().is_empty())
        .collect();
    if texts.is_empty() {
        return false;
    }
    // An explicit stack: a deeply nested payload cannot exhaust the call stack.
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                if texts.iter().any(|t| s.contains(t)) {
                    return true;
                }
            }
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.values()),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_ends_its_length_after_it_is_asked_for() {
        let now = chrono::Utc::now();
        let lease = Lease {
            worker: "w1",
            now,
            length: chrono::Duration::seconds(30),
        };
        assert_eq!(lease.now_ms(), now.timestamp_millis());
        assert_eq!(lease.until() - lease.now_ms(), 30_000);
    }

    #[test]
    fn each_outcome_writes_its_own_columns_and_only_a_retry_releases_the_worker() {
        let done = JobOutcome::Done {
            result: serde_json::json!({"ok": 1}),
        };
        let end = done.end();
        assert_eq!(end.status, JobStatus::Done);
        assert_eq!(end.result.as_deref(), Some(r#"{"ok":1}"#));
        assert_eq!((end.last_error, end.run_after), (None, None));
        assert!(!end.releases_worker);
        let at = chrono::Utc::now();
        let retry = JobOutcome::Retry {
            error: "unavailable: busy".into(),
            kind: "unavailable".into(),
            run_after: at,
        };
        let end = retry.end();
        assert_eq!(end.status, JobStatus::Pending);
        assert_eq!(end.result, None);
        assert_eq!(end.last_error, Some("unavailable: busy"));
        assert_eq!(end.error_kind, Some("unavailable"));
        assert_eq!(end.run_after, Some(at.timestamp_millis()));
        assert!(end.releases_worker);
        let failed = JobOutcome::Failed {
            error: "internal: x".into(),
            kind: "internal".into(),
        };
        let end = failed.end();
        assert_eq!(end.status, JobStatus::Failed);
        assert_eq!((end.result, end.run_after), (None, None));
        assert_eq!(end.error_kind, Some("internal"));
        assert!(!end.releases_worker);
    }
}

#[cfg(test)]
mod erase_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_job_mentions_a_text_anywhere_in_its_strings_and_blank_texts_never_match() {
        let payload = json!({"input": {"Messages": [{"role": "user", "content": "my PIN is 4417, ok"}]},
                             "metadata": {"k": ["x", {"deep": "Wombat"}]}});
        assert!(mentions_any(&payload, &["PIN is 4417".into()]));
        assert!(mentions_any(&payload, &["nothing".into(), "Wombat".into()]));
        assert!(!mentions_any(&payload, &["absent".into()]));
        assert!(!mentions_any(&payload, &["  ".into(), String::new()]));
        assert!(!mentions_any(&json!(null), &["x".into()]));
        // Keys are not text a caller wrote into a job's strings.
        assert!(!mentions_any(&json!({"Wombat": 1}), &["Wombat".into()]));
        // Nesting is walked with a stack of its own, not by recursion.
        let mut deep = json!("the secret");
        for _ in 0..500 {
            deep = json!([deep]);
        }
        assert!(mentions_any(&deep, &["secret".into()]));
    }
}
