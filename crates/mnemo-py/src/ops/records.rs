//! Mem0's `Memory` methods over the facade: add, search, get, get_all, update, delete,
//! delete_all, history, reset.

use super::scope_for_id;
use crate::convert::{id_of, to_value, Parts};
use crate::errors::Failure;
use mnemo::{AddRequest, GetRequest, ListRequest, Memory, UpdateRequest};
use mnemo_core::{DeleteMode, ErrorKind, ReadOptions, SearchMode, SearchRequest, WritePlan};
use serde_json::{json, Value};

/// An add; with `async_mode`, checked, queued and answered at once as Mem0's platform does
/// (`{"results": [{"message", "status": "PENDING", "event_id"}]}`, plus `job_id`).
pub(crate) async fn add(
    mem: Memory,
    parts: Parts,
    mut req: AddRequest,
    async_mode: bool,
) -> Result<Value, Failure> {
    req.scope = parts.scope()?;
    if async_mode {
        let job = mem.enqueue_add(req).await?;
        return Ok(json!({
            "results": [{
                "message": "Memory processing has been queued for background execution",
                "status": "PENDING",
                "event_id": job.id,
            }],
            "job_id": job.id,
        }));
    }
    to_value(&mem.add(req).await?)
}

/// A job as a dict (`status`: pending, running, done or failed); an unknown id is NotFound.
pub(crate) async fn job(mem: Memory, id: String) -> Result<Value, Failure> {
    match mem.job(&id).await? {
        Some(job) => Ok(mnemo::job_view(&job)),
        None => Err(mnemo_core::Error::not_found("job", id).into()),
    }
}

/// A search as Mem0's `search` and mnemo's own options ask for it.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    pub query: String,
    pub limit: usize,
    pub filters: Option<Value>,
    pub threshold: Option<f32>,
    pub kinds: Option<Vec<String>>,
    pub mode: Option<String>,
    pub read: ReadOptions,
    pub expand_links: usize,
    /// What the query's relative time is resolved against (default now).
    pub reference_date: Option<mnemo_core::Timestamp>,
    /// Graph search for this call; `None`: the engine's setting.
    pub graph: Option<bool>,
}

pub(crate) async fn search(mem: Memory, parts: Parts, s: Search) -> Result<Value, Failure> {
    let scope = parts.scope()?;
    let filter = match &s.filters {
        Some(f) => mnemo_core::Filter::from_json(f)?,
        None => None,
    };
    let kinds = s
        .kinds
        .map(|ks| ks.iter().map(|k| k.parse()).collect::<Result<Vec<_>, _>>())
        .transpose()?;
    let mode = match s.mode.as_deref() {
        None | Some("hybrid") => SearchMode::Hybrid,
        Some("dense") => SearchMode::Dense,
        Some("lexical") => SearchMode::Lexical,
        Some(other) => {
            return Err(Failure::invalid(
                "mode",
                format!("{other:?} is not one of hybrid, dense, lexical"),
            ))
        }
    };
    let req = SearchRequest {
        scope,
        query: s.query,
        top_k: s.limit,
        threshold: s.threshold,
        kinds,
        filter,
        read: s.read,
        mode,
        expand_links: s.expand_links,
        expand_limit: None,
        reference_date: s.reference_date,
        temporal: None,
        graph: s.graph,
    };
    let out = mem.search(req).await?;
    let mut answer = json!({ "results": to_value(&out.results)? });
    if let Some(t) = &out.temporal {
        answer["temporal"] = to_value(t)?;
    }
    if !out.relations.is_empty() {
        answer["relations"] = to_value(&out.relations)?;
    }
    Ok(answer)
}

/// One memory; `None` (Mem0's answer) when there is none the caller may see.
pub(crate) async fn get(
    mem: Memory,
    parts: Parts,
    id: String,
    detail: bool,
    include_expired: bool,
) -> Result<Value, Failure> {
    match get_found(mem, parts, id, detail, include_expired).await {
        Err(e) if e.kind == ErrorKind::NotFound.as_str() => Ok(Value::Null),
        other => other,
    }
}

async fn get_found(
    mem: Memory,
    parts: Parts,
    id: String,
    detail: bool,
    include_expired: bool,
) -> Result<Value, Failure> {
    let id = id_of("memory_id", &id)?;
    let scope = scope_for_id(&mem, &parts, id).await?;
    if detail {
        return to_value(&mem.inspect(scope, id).await?);
    }
    let m = mem
        .get(GetRequest {
            scope,
            id,
            include_expired,
        })
        .await?;
    to_value(&m)
}

pub(crate) async fn get_all(mem: Memory, parts: Parts, req: ListRequest) -> Result<Value, Failure> {
    let req = ListRequest {
        scope: parts.scope()?,
        ..req
    };
    let page = mem.list(req).await?;
    let mut out = json!({ "results": to_value(&page.results)? });
    if let Some(c) = page.next_cursor {
        out["next_cursor"] = Value::String(c);
    }
    Ok(out)
}

pub(crate) async fn update(
    mem: Memory,
    parts: Parts,
    id: String,
    req: UpdateRequest,
    ctx: WritePlan,
) -> Result<Value, Failure> {
    let id = id_of("memory_id", &id)?;
    let scope = scope_for_id(&mem, &parts, id).await?;
    let m = mem.update(scope, id, req, ctx).await?;
    Ok(json!({
        "message": "Memory updated successfully!",
        "id": m.id.to_string(),
        "memory": m.text,
    }))
}

pub(crate) async fn delete(
    mem: Memory,
    parts: Parts,
    id: String,
    ctx: WritePlan,
) -> Result<Value, Failure> {
    let id = id_of("memory_id", &id)?;
    let scope = scope_for_id(&mem, &parts, id).await?;
    mem.delete(scope, id, DeleteMode::Soft, ctx).await?;
    Ok(json!({ "message": "Memory deleted successfully!" }))
}

pub(crate) async fn delete_all(
    mem: Memory,
    parts: Parts,
    ctx: WritePlan,
) -> Result<Value, Failure> {
    let scope = parts.scope()?;
    let n = mem.delete_all(scope, DeleteMode::Soft, ctx).await?;
    Ok(json!({ "message": "Memories deleted successfully!", "deleted": n }))
}

/// A memory's history, each row with Mem0's names besides mnemo's own: `actor_id` (who wrote
/// it), `is_deleted` (a DELETE or ERASE event) and `updated_at` (when the row was written; a
/// history row never changes, so it is `created_at`).
pub(crate) async fn history(mem: Memory, parts: Parts, id: String) -> Result<Value, Failure> {
    let id = id_of("memory_id", &id)?;
    let scope = scope_for_id(&mem, &parts, id).await?;
    let mut rows = to_value(&mem.history(scope, id).await?)?;
    for row in rows.as_array_mut().into_iter().flatten() {
        let Some(obj) = row.as_object_mut() else {
            continue;
        };
        let actor = obj.get("actor").cloned().unwrap_or(Value::Null);
        let deleted = matches!(
            obj.get("event").and_then(Value::as_str),
            Some("DELETE" | "ERASE")
        );
        let at = obj.get("created_at").cloned().unwrap_or(Value::Null);
        obj.insert("actor_id".into(), actor);
        obj.insert("is_deleted".into(), Value::Bool(deleted));
        obj.insert("updated_at".into(), at);
    }
    Ok(rows)
}

/// A page of the scope's sessions: `{"results": [...]}` plus `next_cursor` when more follow.
pub(crate) async fn sessions(
    mem: Memory,
    parts: Parts,
    cursor: Option<String>,
    limit: usize,
) -> Result<Value, Failure> {
    let page = mem.sessions(parts.scope()?, cursor, limit).await?;
    let mut out = json!({ "results": to_value(&page.sessions)? });
    if let Some(c) = page.next_cursor {
        out["next_cursor"] = Value::String(c);
    }
    Ok(out)
}

pub(crate) async fn reset(mem: Memory) -> Result<Value, Failure> {
    mem.reset("reset").await?;
    Ok(Value::Null)
}
