//! The job queue (`jobs`, schema v5): [`JobStore`] on PostgreSQL, shared by every server on
//! the database.
//!
//! A claim is one statement: it picks the first runnable row with `FOR UPDATE SKIP LOCKED`
//! (a row another claim is leasing right now is passed over, not waited for) and leases it, so
//! two servers claiming at once get two different jobs. `finish` only touches a row still
//! leased to the finishing worker. An enqueue logs the job's messages in its transaction, under
//! the scope's write lock, with the write path's own `log_message`.

use crate::{pg_err, PgStore};
use chrono::{DateTime, TimeZone, Utc};
use mnemo_core::{
    Error, JobOutcome, JobQuery, JobRecord, JobStatus, JobStore, Lease, NewJob, QueueStats, Result,
    Scope, Timestamp,
};

const COLS: &str = "id, user_id, agent_id, run_id, kind, payload, status, attempts, \
                    max_attempts, run_after, locked_until, locked_by, last_error, error_kind, \
                    result, created_at, updated_at";

fn from_ms(ms: i64) -> Timestamp {
    Utc.timestamp_millis_opt(ms)
        .single()
        .unwrap_or(DateTime::<Utc>::MIN_UTC)
}

use mnemo_core::jobs::stored_json as json;

fn job_from_row(r: &postgres::Row) -> Result<JobRecord> {
    let u: Option<String> = r.try_get(1).map_err(pg_err)?;
    let a: Option<String> = r.try_get(2).map_err(pg_err)?;
    let run: Option<String> = r.try_get(3).map_err(pg_err)?;
    let payload: String = r.try_get(5).map_err(pg_err)?;
    let status: String = r.try_get(6).map_err(pg_err)?;
    let result: Option<String> = r.try_get(14).map_err(pg_err)?;
    Ok(JobRecord {
        id: r.try_get(0).map_err(pg_err)?,
        scope: Scope::from_parts(u.as_deref(), a.as_deref(), run.as_deref())?,
        kind: r.try_get(4).map_err(pg_err)?,
        payload: json("payload", &payload)?,
        status: status.parse()?,
        attempts: u32::try_from(r.try_get::<_, i32>(7).map_err(pg_err)?).unwrap_or(0),
        max_attempts: u32::try_from(r.try_get::<_, i32>(8).map_err(pg_err)?).unwrap_or(0),
        run_after: from_ms(r.try_get(9).map_err(pg_err)?),
        locked_until: r
            .try_get::<_, Option<i64>>(10)
            .map_err(pg_err)?
            .map(from_ms),
        locked_by: r.try_get(11).map_err(pg_err)?,
        last_error: r.try_get(12).map_err(pg_err)?,
        error_kind: r.try_get(13).map_err(pg_err)?,
        result: result.as_deref().map(|v| json("result", v)).transpose()?,
        created_at: from_ms(r.try_get(15).map_err(pg_err)?),
        updated_at: from_ms(r.try_get(16).map_err(pg_err)?),
    })
}

fn one(rows: Vec<postgres::Row>) -> Result<Option<JobRecord>> {
    rows.first().map(job_from_row).transpose()
}

/// `not_found` unless job `id` exists.
fn require_job(tx: &mut postgres::Transaction<'_>, id: &str) -> Result<()> {
    match tx
        .query_opt("SELECT 1 FROM jobs WHERE id = $1", &[&id])
        .map_err(pg_err)?
    {
        Some(_) => Ok(()),
        None => Err(Error::not_found("job", id)),
    }
}

impl JobStore for PgStore {
    fn enqueue(&self, job: &NewJob) -> Result<JobRecord> {
        job.validate()?;
        let at = job.created_at.timestamp_millis();
        let max = i32::try_from(job.max_attempts).unwrap_or(i32::MAX);
        let payload = job.payload.to_string();
        self.write_tx(|tx| {
            if !job.messages.is_empty() {
                // The log's writers of this scope (adds, erases) wait for the enqueue, as for
                // an add.
                crate::write::lock_scopes(tx, [job.scope.key()])?;
            }
            let rows = tx
                .query(
                    &format!(
                        "INSERT INTO jobs (id, user_id, agent_id, run_id, kind, payload, status, \
                         attempts, max_attempts, run_after, created_at, updated_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, 'pending', 0, $7, $8, $8, $8) \
                         ON CONFLICT (id) DO NOTHING RETURNING {COLS}"
                    ),
                    &[
                        &job.id,
                        &job.scope.user_id().map(|v| v.as_str()),
                        &job.scope.agent_id().map(|v| v.as_str()),
                        &job.scope.run_id().map(|v| v.as_str()),
                        &job.kind,
                        &payload,
                        &max,
                        &at,
                    ],
                )
                .map_err(pg_err)?;
            let stored = one(rows)?.ok_or_else(|| Error::Conflict {
                reason: format!("a job with id {} exists", job.id),
            })?;
            for m in &job.messages {
                crate::encode::log_message(tx, m)?;
            }
            Ok(stored)
        })
    }

    fn claim(&self, lease: &Lease<'_>) -> Result<Option<JobRecord>> {
        let (now_ms, until) = (lease.now_ms(), lease.until());
        let rows = self.tx(|tx| {
            tx.execute(
                "UPDATE jobs SET status = 'failed', locked_until = NULL, locked_by = NULL, \
                 last_error = 'internal: the worker running the job stopped (lease expired) on its last attempt', \
                 error_kind = 'internal', updated_at = $1 \
                 WHERE status = 'running' AND locked_until < $1 AND attempts >= max_attempts",
                &[&now_ms],
            )
            .map_err(pg_err)?;
            tx.query(
                &format!(
                    "UPDATE jobs SET status = 'running', attempts = attempts + 1, \
                     locked_until = $2, locked_by = $3, updated_at = $1 \
                     WHERE seq = (SELECT seq FROM jobs \
                                  WHERE (status = 'pending' AND run_after <= $1) \
                                     OR (status = 'running' AND locked_until < $1) \
                                  ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) \
                     RETURNING {COLS}"
                ),
                &[&now_ms, &until, &lease.worker],
            )
            .map_err(pg_err)
        })?;
        one(rows)
    }

    fn finish(&self, id: &str, worker: &str, outcome: &JobOutcome, now: Timestamp) -> Result<bool> {
        let now_ms = now.timestamp_millis();
        let end = outcome.end();
        let n = self.tx(|tx| {
            require_job(tx, id)?;
            tx.execute(
                "UPDATE jobs SET status = $3, result = COALESCE($4, result), \
                 last_error = COALESCE($5, last_error), error_kind = COALESCE($6, error_kind), \
                 run_after = COALESCE($7, run_after), locked_until = NULL, \
                 locked_by = CASE WHEN $8 THEN NULL ELSE locked_by END, updated_at = $9 \
                 WHERE id = $1 AND status = 'running' AND locked_by = $2",
                &[
                    &id,
                    &worker,
                    &end.status.as_str(),
                    &end.result,
                    &end.last_error,
                    &end.error_kind,
                    &end.run_after,
                    &end.releases_worker,
                    &now_ms,
                ],
            )
            .map_err(pg_err)
        })?;
        Ok(n == 1)
    }

    fn renew_lease(&self, id: &str, lease: &Lease<'_>) -> Result<bool> {
        let n = self.tx(|tx| {
            require_job(tx, id)?;
            tx.execute(
                "UPDATE jobs SET locked_until = $3 \
                 WHERE id = $1 AND status = 'running' AND locked_by = $2",
                &[&id, &lease.worker, &lease.until()],
            )
            .map_err(pg_err)
        })?;
        Ok(n == 1)
    }

    fn job(&self, id: &str) -> Result<Option<JobRecord>> {
        let rows = self.with(|c| {
            c.query(&format!("SELECT {COLS} FROM jobs WHERE id = $1"), &[&id])
                .map_err(pg_err)
        })?;
        one(rows)
    }

    fn list_jobs(&self, query: &JobQuery) -> Result<Vec<JobRecord>> {
        let scope = query.scope.as_ref();
        let u = scope.and_then(|s| s.user_id().map(|v| v.as_str()));
        let a = scope.and_then(|s| s.agent_id().map(|v| v.as_str()));
        let r = scope.and_then(|s| s.run_id().map(|v| v.as_str()));
        let status = query.status.map(JobStatus::as_str);
        let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
        let rows = self.with(|c| {
            c.query(
                &format!(
                    "SELECT {COLS} FROM jobs \
                     WHERE ($1::text IS NULL OR user_id = $1) \
                       AND ($2::text IS NULL OR agent_id = $2) \
                       AND ($3::text IS NULL OR run_id = $3) \
                       AND ($4::text IS NULL OR status = $4) \
                       AND ($5::text IS NULL OR seq < (SELECT seq FROM jobs WHERE id = $5)) \
                     ORDER BY seq DESC LIMIT $6"
                ),
                &[&u, &a, &r, &status, &query.before, &limit],
            )
            .map_err(pg_err)
        })?;
        rows.iter().map(job_from_row).collect()
    }

    fn retry_job(&self, id: &str, now: Timestamp) -> Result<JobRecord> {
        let now_ms = now.timestamp_millis();
        let rows = self.tx(|tx| {
            let row = tx
                .query_opt(
                    "SELECT status, last_error FROM jobs WHERE id = $1 FOR UPDATE",
                    &[&id],
                )
                .map_err(pg_err)?
                .ok_or_else(|| Error::not_found("job", id))?;
            let (status, last_error): (String, Option<String>) = (
                row.try_get(0).map_err(pg_err)?,
                row.try_get(1).map_err(pg_err)?,
            );
            mnemo_core::jobs::check_retryable(id, status.parse()?, last_error.as_deref())?;
            tx.query(
                &format!(
                    "UPDATE jobs SET status = 'pending', attempts = 0, run_after = $2, \
                     locked_until = NULL, locked_by = NULL, updated_at = $2 WHERE id = $1 \
                     RETURNING {COLS}"
                ),
                &[&id, &now_ms],
            )
            .map_err(pg_err)
        })?;
        one(rows)?.ok_or_else(|| Error::internal("a retried job reads back"))
    }

    fn open_jobs(&self, tenant: &Scope) -> Result<u64> {
        let u = tenant.user_id().map(|v| v.as_str());
        let a = tenant.agent_id().map(|v| v.as_str());
        let r = tenant.run_id().map(|v| v.as_str());
        let n: i64 = self.with(|c| {
            c.query_one(
                "SELECT COUNT(*) FROM jobs WHERE status IN ('pending', 'running') \
                   AND ($1::text IS NULL OR user_id = $1) \
                   AND ($2::text IS NULL OR agent_id = $2) \
                   AND ($3::text IS NULL OR run_id = $3)",
                &[&u, &a, &r],
            )
            .map_err(pg_err)?
            .try_get(0)
            .map_err(pg_err)
        })?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    fn queue_stats(&self) -> Result<QueueStats> {
        self.with(|c| {
            let mut stats = QueueStats::default();
            for row in c
                .query("SELECT status, COUNT(*) FROM jobs GROUP BY status", &[])
                .map_err(pg_err)?
            {
                let status: String = row.try_get(0).map_err(pg_err)?;
                let n = u64::try_from(row.try_get::<_, i64>(1).map_err(pg_err)?).unwrap_or(0);
                match status.parse::<JobStatus>()? {
                    JobStatus::Pending => stats.pending = n,
                    JobStatus::Running => stats.running = n,
                    JobStatus::Done => stats.done = n,
                    JobStatus::Failed => stats.failed = n,
                }
            }
            let oldest: Option<i64> = c
                .query_one(
                    "SELECT MIN(created_at) FROM jobs WHERE status IN ('pending', 'running')",
                    &[],
                )
                .map_err(pg_err)?
                .try_get(0)
                .map_err(pg_err)?;
            stats.oldest_open_at = oldest.map(from_ms);
            Ok(stats)
        })
    }
}

/// Empties, inside an erase's transaction `tx`, every job of `scope` (or a narrower scope)
/// whose stored request or result carries one of `texts` ([`mnemo_core::jobs::mentions_any`]):
/// payload `{}`, no result; a job not finished yet fails with
/// [`mnemo_core::jobs::ERASED_JOB_ERROR`]. Returns how many it emptied. The rows are locked
/// (`FOR UPDATE`), so a worker finishing one meanwhile waits for the erase.
pub(crate) fn scrub_erased(
    tx: &mut postgres::Transaction<'_>,
    scope: &mnemo_core::Scope,
    texts: &[String],
    now: mnemo_core::Timestamp,
) -> Result<u64> {
    if texts.iter().all(|t| t.trim().is_empty()) {
        return Ok(0);
    }
    let parts = [
        ("user_id", scope.user_id().map(|v| v.as_str().to_string())),
        ("agent_id", scope.agent_id().map(|v| v.as_str().to_string())),
        ("run_id", scope.run_id().map(|v| v.as_str().to_string())),
    ];
    let mut sql = String::from("SELECT id, payload, result FROM jobs WHERE TRUE");
    let mut args: Vec<String> = Vec::new();
    for (col, value) in parts {
        if let Some(v) = value {
            args.push(v);
            sql.push_str(&format!(" AND {col} = ${}", args.len()));
        }
    }
    sql.push_str(" FOR UPDATE");
    let params: Vec<&(dyn postgres::types::ToSql + Sync)> = args
        .iter()
        .map(|a| a as &(dyn postgres::types::ToSql + Sync))
        .collect();
    let rows = tx.query(&sql, &params).map_err(pg_err)?;
    let mut n = 0;
    for row in rows {
        let (id, payload, result): (String, String, Option<String>) = (
            row.try_get(0).map_err(pg_err)?,
            row.try_get(1).map_err(pg_err)?,
            row.try_get(2).map_err(pg_err)?,
        );
        if !mnemo_core::jobs::carries_any(&payload, result.as_deref(), texts)? {
            continue;
        }
        n += tx
            .execute(
                "UPDATE jobs SET payload = '{}', result = NULL, \
                 last_error = CASE WHEN status IN ('pending', 'running') THEN $2 ELSE last_error END, \
                 error_kind = CASE WHEN status IN ('pending', 'running') THEN 'invalid_input' ELSE error_kind END, \
                 status = CASE WHEN status IN ('pending', 'running') THEN 'failed' ELSE status END, \
                 locked_until = NULL, updated_at = $3 WHERE id = $1",
                &[&id, &mnemo_core::jobs::ERASED_JOB_ERROR, &now.timestamp_millis()],
            )
            .map_err(pg_err)?;
    }
    Ok(n)
}
