//! Mem0's write routes: add, update and delete by id, delete-all, batches, entity deletion,
//! reset.

use super::*;

/// An add as Mem0's SDK (2.x, 1.x, 0.1.x) and OSS server send it.
#[derive(Debug, Deserialize)]
pub(super) struct Mem0Add {
    messages: Value,
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    filters: Option<Value>,
    metadata: Option<Value>,
    infer: Option<bool>,
    /// Unix seconds (platform) — back-dates the memory.
    timestamp: Option<i64>,
    /// `YYYY-MM-DD`.
    expiration_date: Option<Value>,
    custom_instructions: Option<String>,
    /// The OSS server's name for custom instructions.
    prompt: Option<String>,
    /// `procedural_memory` (OSS) or `procedural`.
    memory_type: Option<String>,
    app_id: Option<Value>,
    /// Topics the extraction should keep to / leave out (inferred adds only).
    includes: Option<String>,
    excludes: Option<String>,
    /// Mem0: the memory may never be updated. Not supported: refused when `true`.
    immutable: Option<bool>,
    /// Queue the add and answer at once, as Mem0's platform does (an event to poll).
    async_mode: Option<bool>,
    /// Mem0's graph memory: the answer also carries the `relations` the add wrote.
    enable_graph: Option<bool>,
    /// Every other field; see [`IGNORED_ADD`].
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// Options Mem0's clients send to this route that mnemo accepts without acting on.
pub(super) const IGNORED_ADD: &[&str] = &[
    "custom_categories",
    "agent_custom_instructions",
    "structured_data_schema",
    "version",
    "output_format",
    "org_id",
    "project_id",
];

pub(super) async fn add(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(b): ApiJson<Mem0Add>,
) -> ApiResult<Response> {
    refuse_unknown(&b.rest, IGNORED_ADD)?;
    if b.app_id.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(ApiError::invalid(
            "app_id scopes are not supported; use user_id, agent_id or run_id",
        ));
    }
    if b.immutable == Some(true) {
        return Err(ApiError::invalid(
            "immutable=true is not supported: every mnemo memory can be updated (each change is \
             kept in its history)",
        ));
    }
    let mut parts = ScopeParts::new(b.user_id, b.agent_id, b.run_id);
    if split_filters(b.filters, &mut parts)?.is_some() {
        return Err(ApiError::invalid(
            "an add's filters may only name user_id, agent_id, run_id",
        ));
    }
    let scoping = [("includes", &b.includes), ("excludes", &b.excludes)];
    let scoping: Vec<(&str, &str)> = scoping
        .iter()
        .filter_map(|(k, v)| {
            v.as_deref()
                .filter(|v| !v.trim().is_empty())
                .map(|v| (*k, v))
        })
        .collect();
    let infers = b.infer.unwrap_or(s.service.memory().chat().is_some());
    if !scoping.is_empty() && !infers {
        return Err(ApiError::invalid(format!(
            "{} only apply to inferred adds (a chat model extracting facts); this add is raw",
            scoping
                .iter()
                .map(|(k, _)| *k)
                .collect::<Vec<_>>()
                .join(" and ")
        )));
    }
    let mut instructions = b.custom_instructions.or(b.prompt);
    for (k, v) in scoping {
        let rule = match k {
            "includes" => format!("Only keep facts about: {v}."),
            _ => format!("Never keep facts about: {v}."),
        };
        instructions = Some(match instructions {
            Some(i) => format!("{i}\n{rule}"),
            None => rule,
        });
    }
    let memory_type = match b.memory_type.as_deref() {
        None => None,
        Some("procedural_memory") | Some("procedural") => Some("procedural".to_string()),
        Some(other) => Some(other.to_string()),
    };
    // Unix seconds from 1970 to the end of year 9999 (RFC 3339's range); negative ones named
    // years like -1199.
    const LAST_SECOND: i64 = 253_402_300_799;
    let timestamp = b
        .timestamp
        .map(|t| {
            (0..=LAST_SECOND)
                .contains(&t)
                .then(|| DateTime::from_timestamp(t, 0))
                .flatten()
                .ok_or_else(|| {
                    ApiError::invalid(format!(
                        "timestamp must be Unix seconds between 0 and {LAST_SECOND}"
                    ))
                })
        })
        .transpose()?;
    let session_id = parts.run_id.clone();
    let graph_scope = parts.clone();
    let body = AddBody {
        messages: Some(messages_of(b.messages)?),
        text: None,
        user_id: parts.user_id,
        agent_id: parts.agent_id,
        run_id: parts.run_id,
        metadata: b.metadata,
        infer: b.infer,
        expires_at: b
            .expiration_date
            .as_ref()
            .map(|v| date_of("expiration_date", v))
            .transpose()?
            .flatten(),
        timestamp,
        idempotency_key: None,
        memory_type,
        instructions,
        // Mem0's run is a conversation: its turns form mnemo's session of the same name, so a
        // Mem0 client's conversation has a log, a session erase and a pack's "this session".
        session_id,
        ..AddBody::default()
    };
    if b.async_mode == Some(true) {
        let job = s.service.add_async(&p, body, &rid.0).await?;
        return Ok(Json(crate::service::jobs::mem0_queued(&job)).into_response());
    }
    let out = s.service.add(&p, body, &rid.0).await?;
    let mut answer = serde_json::to_value(&out).map_err(mnemo_core::Error::internal)?;
    // The native answer's edge ids are not Mem0's `relations`: only graph adds carry that key.
    answer.as_object_mut().map(|o| o.remove("relations"));
    if b.enable_graph == Some(true) {
        answer["relations"] = add_relations(&s, &p, &graph_scope, &out).await?;
    }
    Ok(Json(answer).into_response())
}

#[derive(Debug, Deserialize)]
pub(super) struct Mem0Update {
    text: Option<String>,
    metadata: Option<Value>,
    expiration_date: Option<Value>,
    /// Every other field; see [`IGNORED_UPDATE`].
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// Options Mem0's clients send to this route that mnemo accepts without acting on.
pub(super) const IGNORED_UPDATE: &[&str] = &[
    // Unix seconds; mnemo keeps creation times.
    "timestamp",
    "org_id",
    "project_id",
];

pub(super) fn update_body(b: Mem0Update) -> ApiResult<UpdateBody> {
    refuse_unknown(&b.rest, IGNORED_UPDATE)?;
    Ok(UpdateBody {
        text: b.text,
        metadata: b.metadata,
        expires_at: b
            .expiration_date
            .as_ref()
            .map(|v| date_of("expiration_date", v))
            .transpose()?,
        reason: None,
    })
}

pub(super) async fn update(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ByIdQuery>,
    ApiJson(b): ApiJson<Mem0Update>,
) -> ApiResult<Response> {
    let m = s
        .service
        .update(&p, &id, &q.parts(), update_body(b)?, &rid.0)
        .await?;
    Ok(Json(m).into_response())
}

pub(super) async fn oss_update(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ByIdQuery>,
    ApiJson(b): ApiJson<Mem0Update>,
) -> ApiResult<Response> {
    s.service
        .update(&p, &id, &q.parts(), update_body(b)?, &rid.0)
        .await?;
    Ok(Json(json!({ "message": "Memory updated successfully!" })).into_response())
}

/// The query of `DELETE /v1/memories/{id}/` (and the OSS `/memories/{id}`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DeleteOneQuery {
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    /// `true`: erase instead of delete — the text leaves the store's files (see
    /// `POST /v1/memories/{id}/erase`). Mem0 itself has no such option.
    erase: Option<bool>,
    /// With `erase`: also erase the content of the memory's source messages.
    erase_sources: Option<bool>,
    /// Mem0's platform option to delete linked memories too; refused when `true` (mnemo does
    /// not delete along links), accepted as `false`.
    delete_linked: Option<bool>,
    #[expect(
        dead_code,
        reason = "accepted from Mem0 clients so their requests parse; mnemo has no orgs or projects"
    )]
    org_id: Option<Value>,
    #[expect(
        dead_code,
        reason = "accepted from Mem0 clients so their requests parse; mnemo has no orgs or projects"
    )]
    project_id: Option<Value>,
}

pub(super) async fn delete_one(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<DeleteOneQuery>,
) -> ApiResult<Response> {
    if q.delete_linked == Some(true) {
        return Err(ApiError::invalid(
            "delete_linked=true is not supported: mnemo deletes one memory at a time (links are \
             kept for audit); delete the linked memories by id",
        ));
    }
    let parts = ScopeParts::new(q.user_id, q.agent_id, q.run_id);
    if q.erase == Some(true) {
        let body = crate::api::EraseBody {
            sources: q.erase_sources.unwrap_or(false),
            ..Default::default()
        };
        let report = s.service.erase(&p, &id, &parts, body, &rid.0).await?;
        return Ok(
            Json(json!({ "message": "Memory erased successfully!", "erased": report }))
                .into_response(),
        );
    }
    if q.erase_sources.is_some() {
        return Err(ApiError::invalid("erase_sources needs erase=true"));
    }
    s.service.delete(&p, &id, &parts, None, &rid.0).await?;
    Ok(Json(json!({ "message": "Memory deleted successfully!" })).into_response())
}

pub(super) async fn oss_delete_one(
    state: State<AppState>,
    p: Caller,
    rid: Rid,
    id: ApiPath<String>,
    q: ApiQuery<DeleteOneQuery>,
) -> ApiResult<Response> {
    delete_one(state, p, rid, id, q).await
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DeleteAllQuery {
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    /// JSON, or the Python dict repr that `delete_all(filters=…)` sends.
    filters: Option<String>,
    /// Refused when given: mnemo has no app scopes (a delete-all must not silently widen).
    app_id: Option<Value>,
    #[expect(
        dead_code,
        reason = "accepted from Mem0 clients so their requests parse; mnemo has no orgs or projects"
    )]
    org_id: Option<Value>,
    #[expect(
        dead_code,
        reason = "accepted from Mem0 clients so their requests parse; mnemo has no orgs or projects"
    )]
    project_id: Option<Value>,
}

pub(super) async fn delete_all(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiQuery(q): ApiQuery<DeleteAllQuery>,
) -> ApiResult<Response> {
    if q.app_id.as_ref().is_some_and(|v| !v.is_null()) {
        return Err(ApiError::invalid(
            "app_id scopes are not supported; use user_id, agent_id or run_id",
        ));
    }
    let mut parts = ScopeParts::new(q.user_id, q.agent_id, q.run_id);
    if let Some(raw) = q.filters.as_deref() {
        if split_filters(Some(loose_dict(raw)?), &mut parts)?.is_some() {
            return Err(ApiError::invalid(
                "delete_all's filters may only name user_id, agent_id, run_id",
            ));
        }
    }
    if parts.is_empty() {
        return Err(ApiError::invalid(
            "At least one identifier (user_id, agent_id, run_id) is required.",
        ));
    }
    let n = s.service.delete_all(&p, &parts, &rid.0).await?;
    Ok(Json(json!({ "message": "Memories deleted successfully!", "deleted": n })).into_response())
}

#[derive(Debug, Deserialize)]
pub(super) struct Mem0Batch {
    memories: Vec<BatchItem>,
    /// Every other field; see [`IGNORED_BATCH`].
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// Options Mem0's clients send to this route that mnemo accepts without acting on.
pub(super) const IGNORED_BATCH: &[&str] = &["org_id", "project_id"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BatchItem {
    memory_id: String,
    text: Option<String>,
    metadata: Option<Value>,
}

pub(super) async fn batch_update(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(b): ApiJson<Mem0Batch>,
) -> ApiResult<Response> {
    refuse_unknown(&b.rest, IGNORED_BATCH)?;
    let items = b
        .memories
        .into_iter()
        .map(|i| BatchUpdateItem {
            memory_id: i.memory_id,
            text: i.text,
            metadata: i.metadata,
        })
        .collect::<Vec<_>>();
    let n = items.len();
    let body = BatchUpdateBody {
        user_id: None,
        agent_id: None,
        run_id: None,
        items,
    };
    s.service.update_batch(&p, body, &rid.0).await?;
    Ok(Json(json!({ "message": format!("Successfully updated {n} memories") })).into_response())
}

pub(super) async fn batch_delete(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiJson(b): ApiJson<Mem0Batch>,
) -> ApiResult<Response> {
    refuse_unknown(&b.rest, IGNORED_BATCH)?;
    let body = BatchDeleteBody {
        user_id: None,
        agent_id: None,
        run_id: None,
        memory_ids: b.memories.into_iter().map(|i| i.memory_id).collect(),
    };
    let n = s.service.delete_batch(&p, body, &rid.0).await?;
    Ok(Json(json!({ "message": format!("Successfully deleted {n} memories") })).into_response())
}

/// Deletes every memory of one user, agent or run.
pub(super) async fn delete_entity(
    State(s): State<AppState>,
    Extension(p): Caller,
    Extension(rid): Rid,
    ApiPath((kind, name)): ApiPath<(String, String)>,
) -> ApiResult<Response> {
    let parts = match kind.as_str() {
        "user" => ScopeParts::new(Some(name), None, None),
        "agent" => ScopeParts::new(None, Some(name), None),
        "run" => ScopeParts::new(None, None, Some(name)),
        other => {
            return Err(ApiError::invalid(format!(
                "entity type {other:?} is not one of user, agent, run"
            )))
        }
    };
    let n = s.service.delete_all(&p, &parts, &rid.0).await?;
    Ok(Json(json!({ "message": "Entity deleted successfully!", "deleted": n })).into_response())
}

pub(super) async fn oss_reset(
    State(s): State<AppState>,
    Extension(p): Caller,
) -> ApiResult<Response> {
    s.service.reset(&p, "reset").await?;
    Ok(Json(json!({ "message": "All memories reset" })).into_response())
}
