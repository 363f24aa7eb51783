//! `mnemo jobs list|show|retry`: the background job queue of the store (async adds queued
//! through the server, the Python package or the library), read and retried directly.

use crate::args::JobsAction;
use crate::commands::scope_of;
use crate::io::{outln, print_json};
use mnemo::Memory;
use mnemo_core::{JobQuery, JobRecord, JobStatus};

fn line(j: &JobRecord) -> String {
    let error = j.last_error.as_deref().unwrap_or("");
    format!(
        "{}  {}  {}  attempt {}/{}  {}  {}",
        j.id,
        j.kind,
        j.status.as_str(),
        j.attempts,
        j.max_attempts,
        j.created_at.to_rfc3339(),
        error
    )
}

pub(super) async fn jobs(memory: &Memory, action: JobsAction, json: bool) -> anyhow::Result<()> {
    match action {
        JobsAction::List {
            scope,
            status,
            limit,
            cursor,
        } => {
            let given =
                scope.user_id.is_some() || scope.agent_id.is_some() || scope.run_id.is_some();
            let query = JobQuery {
                scope: given.then(|| scope_of(&scope)).transpose()?,
                status: status.as_deref().map(str::parse::<JobStatus>).transpose()?,
                before: cursor,
                limit: limit.clamp(1, 1000),
            };
            let out = memory.jobs(query).await?;
            if json {
                let results: Vec<_> = out.iter().map(mnemo::job_view).collect();
                return print_json(&serde_json::json!({ "results": results }));
            }
            for j in &out {
                outln!("{}", line(j));
            }
        }
        JobsAction::Show { id } => {
            let job = memory
                .job(&id)
                .await?
                .ok_or_else(|| mnemo_core::Error::not_found("job", &id))?;
            if json {
                return print_json(&mnemo::job_view(&job));
            }
            outln!("{}", line(&job));
            if let Some(r) = &job.result {
                outln!("{}", serde_json::to_string_pretty(r)?);
            }
        }
        JobsAction::Retry { id } => {
            let job = memory.retry_job(&id).await?;
            if json {
                return print_json(&mnemo::job_view(&job));
            }
            outln!("{}", line(&job));
        }
    }
    Ok(())
}
