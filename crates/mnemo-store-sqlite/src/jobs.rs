//! The job queue (`jobs`, schema v8): [`JobStore`] on the embedded file.
//!
//! Every change runs on the writer connection in an immediate transaction, so claims from
//! threads of this process (the writer mutex) and from other processes on the same file (the
//! file's write lock) are serialised: a claim reads the first runnable row and leases it before
//! any other claim can read it. An enqueue logs the job's messages in its transaction with the
//! write path's own `log_message`. Lookups go through a pooled reader.

use crate::codec::{from_ms, sql_err};
use crate::SqliteStore;
use mnemo_core::{
    Error, JobOutcome, JobQuery, JobRecord, JobStatus, JobStore, Lease, NewJob, QueueStats, Result,
    Scope, Timestamp,
};
use rusqlite::{params, Connection, OptionalExtension, Row, TransactionBehavior};

const COLS: &str = "id, user_id, agent_id, run_id, kind, payload, status, attempts, \
                    max_attempts, run_after, locked_until, locked_by, last_error, error_kind, \
                    result, created_at, updated_at";

/// A row as stored, decoded into a record outside rusqlite's row callback (so a bad value is a
/// typed error, not a conversion panic).
struct RawJob {
    id: String,
    parts: [Option<String>; 3],
    kind: String,
    payload: String,
    status: String,
    attempts: i64,
    max_attempts: i64,
    run_after: i64,
    locked_until: Option<i64>,
    locked_by: Option<String>,
    last_error: Option<String>,
    error_kind: Option<String>,
    result: Option<String>,
    created_at: i64,
    updated_at: i64,
}

fn raw_from_row(r: &Row<'_>) -> rusqlite::Result<RawJob> {
    Ok(RawJob {
        id: r.get(0)?,
        parts: [r.get(1)?, r.get(2)?, r.get(3)?],
        kind: r.get(4)?,
        payload: r.get(5)?,
        status: r.get(6)?,
        attempts: r.get(7)?,
        max_attempts: r.get(8)?,
        run_after: r.get(9)?,
        locked_until: r.get(10)?,
        locked_by: r.get(11)?,
        last_error: r.get(12)?,
        error_kind: r.get(13)?,
        result: r.get(14)?,
        created_at: r.get(15)?,
        updated_at: r.get(16)?,
    })
}

use mnemo_core::jobs::stored_json as json;

impl RawJob {
    fn record(self) -> Result<JobRecord> {
        let [u, a, r] = &self.parts;
        Ok(JobRecord {
            scope: Scope::from_parts(u.as_deref(), a.as_deref(), r.as_deref())?,
            payload: json("payload", &self.payload)?,
            status: self.status.parse()?,
            result: self
                .result
                .as_deref()
                .map(|r| json("result", r))
                .transpose()?,
            id: self.id,
            kind: self.kind,
            attempts: u32::try_from(self.attempts).unwrap_or(u32::MAX),
            max_attempts: u32::try_from(self.max_attempts).unwrap_or(u32::MAX),
            run_after: from_ms(self.run_after),
            locked_until: self.locked_until.map(from_ms),
            locked_by: self.locked_by,
            last_error: self.last_error,
            error_kind: self.error_kind,
            created_at: from_ms(self.created_at),
            updated_at: from_ms(self.updated_at),
        })
    }
}

fn by_id(c: &Connection, id: &str) -> Result<Option<JobRecord>> {
    c.prepare_cached(&format!("SELECT {COLS} FROM jobs WHERE id = ?1"))
        .map_err(sql_err)?
        .query_row([id], raw_from_row)
        .optional()
        .map_err(sql_err)?
        .map(RawJob::record)
        .transpose()
}

impl SqliteStore {
    /// Runs `f` in an immediate transaction on the writer connection.
    fn job_tx<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.writer.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        let out = f(&tx)?;
        tx.commit().map_err(sql_err)?;
        Ok(out)
    }
}

impl JobStore for SqliteStore {
    fn enqueue(&self, job: &NewJob) -> Result<JobRecord> {
        job.validate()?;
        let at = job.created_at.timestamp_millis();
        self.job_tx(|tx| {
            let n = tx
                .execute(
                    "INSERT INTO jobs (id, user_id, agent_id, run_id, kind, payload, status, \
                     attempts, max_attempts, run_after, created_at, updated_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', 0, ?7, ?8, ?8, ?8) \
                     ON CONFLICT (id) DO NOTHING",
                    params![
                        job.id,
                        job.scope.user_id().map(|v| v.as_str()),
                        job.scope.agent_id().map(|v| v.as_str()),
                        job.scope.run_id().map(|v| v.as_str()),
                        job.kind,
                        job.payload.to_string(),
                        job.max_attempts,
                        at,
                    ],
                )
                .map_err(sql_err)?;
            if n == 0 {
                return Err(Error::Conflict {
                    reason: format!("a job with id {} exists", job.id),
                });
            }
            for m in &job.messages {
                crate::write::log_message(tx, m)?;
            }
            by_id(tx, &job.id)?.ok_or_else(|| Error::internal("a stored job reads back"))
        })
    }

    fn claim(&self, lease: &Lease<'_>) -> Result<Option<JobRecord>> {
        let now_ms = lease.now_ms();
        // Idle workers poll: look on a reader first, so an empty queue never takes the writer
        // (the transaction below checks again; a job enqueued in between waits one poll).
        let claimable: bool = self.read(|c| {
            c.query_row(
                "SELECT EXISTS (SELECT 1 FROM jobs \
                 WHERE (status = 'pending' AND run_after <= ?1) \
                    OR (status = 'running' AND locked_until < ?1))",
                [now_ms],
                |r| r.get(0),
            )
            .map_err(sql_err)
        })?;
        if !claimable {
            return Ok(None);
        }
        self.job_tx(|tx| {
            // Leases that ran out with no attempt left end the job: its worker is gone.
            tx.execute(
                "UPDATE jobs SET status = 'failed', locked_until = NULL, locked_by = NULL, \
                 last_error = 'internal: the worker running the job stopped (lease expired) on its last attempt', \
                 error_kind = 'internal', updated_at = ?1 \
                 WHERE status = 'running' AND locked_until < ?1 AND attempts >= max_attempts",
                [now_ms],
            )
            .map_err(sql_err)?;
            let id: Option<String> = tx
                .query_row(
                    "SELECT id FROM jobs \
                     WHERE (status = 'pending' AND run_after <= ?1) \
                        OR (status = 'running' AND locked_until < ?1) \
                     ORDER BY seq LIMIT 1",
                    [now_ms],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sql_err)?;
            let Some(id) = id else {
                return Ok(None);
            };
            tx.execute(
                "UPDATE jobs SET status = 'running', attempts = attempts + 1, \
                 locked_until = ?2, locked_by = ?3, updated_at = ?4 WHERE id = ?1",
                params![id, lease.until(), lease.worker, now_ms],
            )
            .map_err(sql_err)?;
            by_id(tx, &id)
        })
    }

    fn finish(&self, id: &str, worker: &str, outcome: &JobOutcome, now: Timestamp) -> Result<bool> {
        let now_ms = now.timestamp_millis();
        self.job_tx(|tx| {
            if by_id(tx, id)?.is_none() {
                return Err(Error::not_found("job", id));
            }
            let end = outcome.end();
            let n = tx
                .execute(
                    "UPDATE jobs SET status = ?3, result = COALESCE(?4, result), \
                     last_error = COALESCE(?5, last_error), error_kind = COALESCE(?6, error_kind), \
                     run_after = COALESCE(?7, run_after), locked_until = NULL, \
                     locked_by = CASE WHEN ?8 THEN NULL ELSE locked_by END, updated_at = ?9 \
                     WHERE id = ?1 AND status = 'running' AND locked_by = ?2",
                    params![
                        id,
                        worker,
                        end.status.as_str(),
                        end.result,
                        end.last_error,
                        end.error_kind,
                        end.run_after,
                        end.releases_worker,
                        now_ms
                    ],
                )
                .map_err(sql_err)?;
            Ok(n == 1)
        })
    }

    fn job(&self, id: &str) -> Result<Option<JobRecord>> {
        self.read(|c| by_id(c, id))
    }

    fn renew_lease(&self, id: &str, lease: &Lease<'_>) -> Result<bool> {
        self.job_tx(|tx| {
            if by_id(tx, id)?.is_none() {
                return Err(Error::not_found("job", id));
            }
            let n = tx
                .execute(
                    "UPDATE jobs SET locked_until = ?3 \
                     WHERE id = ?1 AND status = 'running' AND locked_by = ?2",
                    params![id, lease.worker, lease.until()],
                )
                .map_err(sql_err)?;
            Ok(n == 1)
        })
    }

    fn list_jobs(&self, query: &JobQuery) -> Result<Vec<JobRecord>> {
        let scope = query.scope.as_ref();
        let part = |p: Option<&str>| p.map(str::to_string);
        let (u, a, r) = (
            part(scope.and_then(|s| s.user_id().map(|v| v.as_str()))),
            part(scope.and_then(|s| s.agent_id().map(|v| v.as_str()))),
            part(scope.and_then(|s| s.run_id().map(|v| v.as_str()))),
        );
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let raws = self.read(|c| {
            let mut stmt = c
                .prepare_cached(&format!(
                    "SELECT {COLS} FROM jobs \
                     WHERE (?1 IS NULL OR user_id = ?1) AND (?2 IS NULL OR agent_id = ?2) \
                       AND (?3 IS NULL OR run_id = ?3) AND (?4 IS NULL OR status = ?4) \
                       AND (?5 IS NULL OR seq < (SELECT seq FROM jobs WHERE id = ?5)) \
                     ORDER BY seq DESC LIMIT ?6"
                ))
                .map_err(sql_err)?;
            let rows = stmt
                .query_map(
                    params![
                        u,
                        a,
                        r,
                        query.status.map(JobStatus::as_str),
                        query.before,
                        limit
                    ],
                    raw_from_row,
                )
                .map_err(sql_err)?;
            rows.collect::<rusqlite::Result<Vec<_>>>().map_err(sql_err)
        })?;
        raws.into_iter().map(RawJob::record).collect()
    }

    fn retry_job(&self, id: &str, now: Timestamp) -> Result<JobRecord> {
        let now_ms = now.timestamp_millis();
        self.job_tx(|tx| {
            let job = by_id(tx, id)?.ok_or_else(|| Error::not_found("job", id))?;
            mnemo_core::jobs::check_retryable(id, job.status, job.last_error.as_deref())?;
            tx.execute(
                "UPDATE jobs SET status = 'pending', attempts = 0, run_after = ?2, \
                 locked_until = NULL, locked_by = NULL, updated_at = ?2 WHERE id = ?1",
                params![id, now_ms],
            )
            .map_err(sql_err)?;
            by_id(tx, id)?.ok_or_else(|| Error::internal("a retried job reads back"))
        })
    }

    fn open_jobs(&self, tenant: &Scope) -> Result<u64> {
        let part = |p: Option<&str>| p.map(str::to_string);
        let (u, a, r) = (
            part(tenant.user_id().map(|v| v.as_str())),
            part(tenant.agent_id().map(|v| v.as_str())),
            part(tenant.run_id().map(|v| v.as_str())),
        );
        let n: i64 = self.read(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM jobs WHERE status IN ('pending', 'running') \
                   AND (?1 IS NULL OR user_id = ?1) AND (?2 IS NULL OR agent_id = ?2) \
                   AND (?3 IS NULL OR run_id = ?3)",
                params![u, a, r],
                |row| row.get(0),
            )
            .map_err(sql_err)
        })?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn queue_stats(&self) -> Result<QueueStats> {
        self.read(|c| {
            let mut stats = QueueStats::default();
            let mut stmt = c
                .prepare_cached("SELECT status, COUNT(*) FROM jobs GROUP BY status")
                .map_err(sql_err)?;
            let rows = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                .map_err(sql_err)?;
            for row in rows {
                let (status, n) = row.map_err(sql_err)?;
                let n = u64::try_from(n).unwrap_or(0);
                match status.parse::<JobStatus>()? {
                    JobStatus::Pending => stats.pending = n,
                    JobStatus::Running => stats.running = n,
                    JobStatus::Done => stats.done = n,
                    JobStatus::Failed => stats.failed = n,
                }
            }
            stats.oldest_open_at = c
                .query_row(
                    "SELECT MIN(created_at) FROM jobs WHERE status IN ('pending', 'running')",
                    [],
                    |r| r.get::<_, Option<i64>>(0),
                )
                .map_err(sql_err)?
                .map(from_ms);
            Ok(stats)
        })
    }
}

/// Empties, inside an erase's transaction `tx`, every job of `scope` (or a narrower scope)
/// whose stored request or result carries one of `texts` ([`mnemo_core::jobs::mentions_any`]):
/// payload `{}`, no result; a job not finished yet fails with
/// [`mnemo_core::jobs::ERASED_JOB_ERROR`]. Returns how many it emptied.
pub(crate) fn scrub_erased(
    tx: &rusqlite::Transaction<'_>,
    scope: &mnemo_core::Scope,
    texts: &[String],
    now: Timestamp,
) -> Result<u64> {
    if texts.iter().all(|t| t.trim().is_empty()) {
        return Ok(0);
    }
    let parts = [
        ("user_id", scope.user_id().map(|v| v.as_str())),
        ("agent_id", scope.agent_id().map(|v| v.as_str())),
        ("run_id", scope.run_id().map(|v| v.as_str())),
    ];
    let mut sql = String::from("SELECT id, payload, result FROM jobs WHERE 1 = 1");
    let mut args: Vec<String> = Vec::new();
    for (col, value) in parts {
        if let Some(v) = value {
            args.push(v.to_string());
            sql.push_str(&format!(" AND {col} = ?{}", args.len()));
        }
    }
    let rows: Vec<(String, String, Option<String>)> = {
        let mut st = tx.prepare(&sql).map_err(sql_err)?;
        let it = st
            .query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(sql_err)?;
        it.collect::<rusqlite::Result<_>>().map_err(sql_err)?
    };
    let mut n = 0;
    for (id, payload, result) in rows {
        if !mnemo_core::jobs::carries_any(&payload, result.as_deref(), texts)? {
            continue;
        }
        n += tx
            .execute(
                "UPDATE jobs SET payload = '{}', result = NULL, \
                 last_error = CASE WHEN status IN ('pending', 'running') THEN ?2 ELSE last_error END, \
                 error_kind = CASE WHEN status IN ('pending', 'running') THEN 'invalid_input' ELSE error_kind END, \
                 status = CASE WHEN status IN ('pending', 'running') THEN 'failed' ELSE status END, \
                 locked_until = NULL, updated_at = ?3 WHERE id = ?1",
                params![id, mnemo_core::jobs::ERASED_JOB_ERROR, now.timestamp_millis()],
            )
            .map_err(sql_err)? as u64;
    }
    Ok(n)
}
