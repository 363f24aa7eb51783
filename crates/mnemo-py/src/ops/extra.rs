//! mnemo's own methods over the facade: context packs, erasure (a memory, a session, a scope),
//! links, the profile, the conversation log, export and import.

use super::scope_for_id;
use crate::convert::{id_of, to_value, Parts};
use crate::errors::Failure;
use mnemo::{ContextRequest, Memory, ProfileOptions};
use mnemo_core::pack::ContextOptions;
use mnemo_core::{Author, ExportRecord, Link, LinkKind, WriteContext};
use serde_json::{json, Value};

pub(crate) async fn context(
    mem: Memory,
    parts: Parts,
    query: String,
    budget_tokens: u32,
    options: ContextOptions,
) -> Result<Value, Failure> {
    let req = ContextRequest {
        scope: parts.scope()?,
        query,
        budget_tokens,
        options,
    };
    to_value(&mem.context(req).await?)
}

/// What `erase` was asked to erase.
#[derive(Debug, Clone)]
pub(crate) enum EraseTarget {
    Memory { id: String, sources: bool },
    Session(String),
    Scope { confirm: bool },
}

pub(crate) async fn erase(
    mem: Memory,
    parts: Parts,
    target: EraseTarget,
    ctx: WriteContext,
) -> Result<Value, Failure> {
    match target {
        EraseTarget::Memory { id, sources } => {
            let id = id_of("memory_id", &id)?;
            let scope = scope_for_id(&mem, &parts, id).await?;
            to_value(&mem.erase(scope, id, sources, ctx).await?)
        }
        EraseTarget::Session(session) => {
            to_value(&mem.erase_session(parts.scope()?, session, ctx).await?)
        }
        EraseTarget::Scope { confirm } => {
            to_value(&mem.erase_scope(parts.scope()?, confirm, ctx).await?)
        }
    }
}

pub(crate) async fn links(mem: Memory, parts: Parts, id: String) -> Result<Value, Failure> {
    let id = id_of("memory_id", &id)?;
    let scope = scope_for_id(&mem, &parts, id).await?;
    Ok(json!({ "results": to_value(&mem.links(scope, id).await?)? }))
}

/// One link a caller adds or removes.
#[derive(Debug, Clone)]
pub(crate) struct LinkSpec {
    pub from: String,
    pub to: String,
    pub kind: String,
    pub strength: f32,
    pub reason: Option<String>,
}

pub(crate) async fn add_link(mem: Memory, parts: Parts, spec: LinkSpec) -> Result<Value, Failure> {
    let from = id_of("from_id", &spec.from)?;
    let to = id_of("to_id", &spec.to)?;
    let kind: LinkKind = spec.kind.parse()?;
    let scope = scope_for_id(&mem, &parts, from).await?;
    let link = Link {
        from,
        to,
        kind,
        strength: spec.strength,
        author: Author::Caller,
        created_at: chrono::Utc::now(),
        reason: spec.reason,
    };
    mem.add_links(scope, vec![link.clone()]).await?;
    to_value(&link)
}

pub(crate) async fn remove_link(
    mem: Memory,
    parts: Parts,
    spec: LinkSpec,
) -> Result<Value, Failure> {
    let from = id_of("from_id", &spec.from)?;
    let to = id_of("to_id", &spec.to)?;
    let kind: LinkKind = spec.kind.parse()?;
    let scope = scope_for_id(&mem, &parts, from).await?;
    Ok(Value::Bool(mem.remove_link(scope, from, to, kind).await?))
}

pub(crate) async fn profile(mem: Memory, parts: Parts) -> Result<Value, Failure> {
    to_value(&mem.profile(parts.scope()?).await?)
}

pub(crate) async fn refresh_profile(
    mem: Memory,
    parts: Parts,
    instructions: Option<String>,
) -> Result<Value, Failure> {
    let options = ProfileOptions {
        instructions,
        request_id: None,
    };
    to_value(&mem.refresh_profile(parts.scope()?, options).await?)
}

/// The last `limit` messages of the scope's log (of one session when given), oldest first:
/// those the facade's log visibility rule shows (no deleted, expired or erased turn).
pub(crate) async fn messages(
    mem: Memory,
    parts: Parts,
    session_id: Option<String>,
    limit: usize,
) -> Result<Value, Failure> {
    let found = mem
        .recent_messages(parts.scope()?, session_id, limit)
        .await?;
    Ok(json!({ "results": to_value(&found)? }))
}

pub(crate) async fn export(mem: Memory) -> Result<Value, Failure> {
    to_value(&mem.export().await?)
}

pub(crate) async fn import(mem: Memory, records: Value) -> Result<Value, Failure> {
    let Value::Array(items) = records else {
        return Err(Failure::invalid(
            "records",
            "must be a list of export records",
        ));
    };
    let mut parsed = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let r: ExportRecord = serde_json::from_value(item)
            .map_err(|e| Failure::invalid(&format!("records[{i}]"), e.to_string()))?;
        parsed.push(r);
    }
    Ok(json!({ "imported": mem.import_records(parsed).await? }))
}
