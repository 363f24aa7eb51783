//! Mem0's read routes: search, lists (paged and by query), get and history by id, entities.

use super::*;

#[derive(Debug, Deserialize)]
pub(super) struct Mem0Search {
    query: String,
    /// Mem0's graph memory: the answer also carries `relations`, the edges of the entities the
    /// query names (see `graph.rs` for the shape).
    enable_graph: Option<bool>,
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    filters: Option<Value>,
    top_k: Option<usize>,
    limit: Option<usize>,
    threshold: Option<f32>,
    show_expired: Option<bool>,
    /// Older SDKs' search filter: metadata key/value pairs, each must match.
    metadata: Option<Value>,
    categories: Option<Value>,
    /// What the query's relative time ("last week") is resolved against: `YYYY-MM-DD` or
    /// RFC 3339; default now.
    reference_date: Option<Value>,
    /// Every other field; see [`IGNORED_SEARCH`].
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// Options Mem0's clients send to this route that mnemo accepts without acting on.
pub(super) const IGNORED_SEARCH: &[&str] = &[
    // mnemo's search is always hybrid (keywords included).
    "keyword_search",
    "rerank",
    "fields",
    "latest_only",
    "explain",
    "version",
    "output_format",
    "org_id",
    "project_id",
];

pub(super) async fn search(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiJson(b): ApiJson<Mem0Search>,
) -> ApiResult<Response> {
    refuse_unknown(&b.rest, IGNORED_SEARCH)?;
    refuse_categories(&b.categories)?;
    let mut parts = ScopeParts::new(b.user_id, b.agent_id, b.run_id);
    let filters = split_filters(b.filters, &mut parts)?;
    let metadata = match b.metadata {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if m.is_empty() => None,
        // Identity keys inside it are scope, as in `filters`.
        Some(m @ Value::Object(_)) => split_filters(Some(m), &mut parts)?,
        Some(_) => return Err(ApiError::invalid("metadata must be a JSON object")),
    };
    let filters = and_filters(filters, metadata.into_iter().collect());
    let reference_date = match &b.reference_date {
        Some(v) => date_of("reference_date", v)?,
        None => None,
    };
    let graph_scope = parts.clone();
    let graph_query = b.enable_graph.unwrap_or(false).then(|| b.query.clone());
    let body = SearchBody {
        query: b.query,
        user_id: parts.user_id,
        agent_id: parts.agent_id,
        run_id: parts.run_id,
        top_k: b.top_k.or(b.limit),
        threshold: b.threshold,
        kinds: None,
        filters,
        mode: None,
        include_expired: b.show_expired.unwrap_or(false),
        include_inactive: false,
        as_of: None,
        reference_date,
        ..SearchBody::default()
    };
    let out = s.service.search(&p, body).await?;
    let mut body = json!({ "results": out.results });
    if let Some(t) = out.temporal {
        body["temporal"] = json!(t);
    }
    let Some(query) = graph_query else {
        return Ok(Json(body).into_response());
    };
    body["relations"] = json!(query_relations(&s, &p, &graph_scope, &query).await?);
    Ok(Json(body).into_response())
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Mem0List {
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    filters: Option<Value>,
    show_expired: Option<bool>,
    page: Option<usize>,
    page_size: Option<usize>,
    /// Creation-time bounds: `YYYY-MM-DD` (an end date includes its day) or RFC 3339.
    start_date: Option<Value>,
    end_date: Option<Value>,
    categories: Option<Value>,
    /// Every other field; see [`IGNORED_LIST`].
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// Options Mem0's clients send to this route that mnemo accepts without acting on.
pub(super) const IGNORED_LIST: &[&str] = &[
    "latest_only",
    "keys",
    "fields",
    "version",
    "output_format",
    "org_id",
    "project_id",
];

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PageQuery {
    page: Option<usize>,
    page_size: Option<usize>,
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

/// `POST /v2|v3/memories/`: a page of a scope's memories, `page` counted from 1.
pub(super) async fn list(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<PageQuery>,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    // The body is optional here (older SDKs send only query parameters).
    let b: Mem0List = if body.iter().all(u8::is_ascii_whitespace) {
        Mem0List::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid(format!("the body does not fit this route: {e}")))?
    };
    refuse_unknown(&b.rest, IGNORED_LIST)?;
    refuse_categories(&b.categories)?;
    let mut parts = ScopeParts::new(b.user_id, b.agent_id, b.run_id);
    let filters = split_filters(b.filters, &mut parts)?;
    let filters = and_filters(filters, date_range(&b.start_date, &b.end_date)?);
    let page = q.page.or(b.page).unwrap_or(1).max(1);
    let size = q.page_size.or(b.page_size).unwrap_or(100);
    let (results, has_more, count) = page_of(
        &s,
        &p,
        &parts,
        filters,
        b.show_expired.unwrap_or(false),
        page,
        size,
    )
    .await?;
    Ok(Json(json!({
        "count": count,
        "next": has_more.then(|| format!("?page={}&page_size={size}", page + 1)),
        "previous": (page > 1).then(|| format!("?page={}&page_size={size}", page - 1)),
        "results": results,
    }))
    .into_response())
}

/// The requested page (from 1) and whether more follow, with the count of every match: one
/// count and one positioned read in the store, however deep the page or wide the filter.
pub(super) async fn page_of(
    s: &AppState,
    p: &Principal,
    parts: &ScopeParts,
    filters: Option<Value>,
    include_expired: bool,
    page: usize,
    size: usize,
) -> ApiResult<(Vec<mnemo::MemoryRecord>, bool, u64)> {
    if size == 0 || size > 1000 {
        return Err(ApiError::invalid("page_size must be between 1 and 1000"));
    }
    let page = page.max(1) as u64;
    let (got, count) = s
        .service
        .list_numbered(
            p,
            ListParams {
                user_id: parts.user_id.clone(),
                agent_id: parts.agent_id.clone(),
                run_id: parts.run_id.clone(),
                limit: Some(size),
                cursor: None,
                kinds: None,
                filters: filters.map(|f| f.to_string()),
                include_expired,
                include_inactive: false,
                as_of: None,
            },
            page,
        )
        .await?;
    let has_more = page.saturating_mul(size as u64) < count;
    Ok((got.results, has_more, count))
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Mem0ListQuery {
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
    /// The OSS server's page size.
    top_k: Option<usize>,
    limit: Option<usize>,
    show_expired: Option<bool>,
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

/// `GET /v1/memories/` (0.1.x SDKs) and `GET /memories` (OSS): `{"results": [...]}`.
pub(super) async fn list_query(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiQuery(q): ApiQuery<Mem0ListQuery>,
) -> ApiResult<Response> {
    let page = s
        .service
        .list(
            &p,
            ListParams {
                user_id: q.user_id,
                agent_id: q.agent_id,
                run_id: q.run_id,
                limit: Some(q.top_k.or(q.limit).unwrap_or(100)),
                cursor: None,
                kinds: None,
                filters: None,
                include_expired: q.show_expired.unwrap_or(false),
                include_inactive: false,
                as_of: None,
            },
        )
        .await?;
    Ok(Json(json!({ "results": page.results })).into_response())
}

/// Query parameters of the by-id routes (older SDKs add org and project ids).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ByIdQuery {
    user_id: Option<String>,
    agent_id: Option<String>,
    run_id: Option<String>,
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

impl ByIdQuery {
    pub(super) fn parts(&self) -> ScopeParts {
        ScopeParts::new(
            self.user_id.clone(),
            self.agent_id.clone(),
            self.run_id.clone(),
        )
    }
}

pub(super) async fn get_one(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ByIdQuery>,
) -> ApiResult<Response> {
    Ok(Json(s.service.get(&p, &id, &q.parts(), false).await?).into_response())
}

/// History as a plain list, as Mem0 returns it.
pub(super) async fn history(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<ByIdQuery>,
) -> ApiResult<Response> {
    Ok(Json(s.service.history(&p, &id, &q.parts()).await?).into_response())
}

/// The event an async add's answer names (`event_id`), as Mem0's platform reports it: the job
/// with Mem0's status names (`PENDING` until a worker takes it and while it waits for a retry,
/// `RUNNING`, `SUCCEEDED`, `FAILED`), the memory events of a finished add in `results` (the
/// shape a blocking add answers with), and the error of a failed one. An event of a scope the
/// key may not see is answered as an unknown one.
pub(super) async fn event(
    State(s): State<AppState>,
    Extension(p): Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Response> {
    let job = s.service.job(&p, &id).await?;
    Ok(Json(crate::service::jobs::mem0_event(&job)).into_response())
}

/// Users, agents and runs the caller may see, with their memory counts.
pub(super) async fn entity_list(s: &AppState, p: &Principal) -> ApiResult<Vec<Value>> {
    let owners = s.service.owners(p).await?;
    let mut totals: BTreeMap<(&'static str, String), u64> = BTreeMap::new();
    for (scope, n) in owners {
        let parts = [
            ("user", scope.user_id().map(|v| v.as_str().to_string())),
            ("agent", scope.agent_id().map(|v| v.as_str().to_string())),
            ("run", scope.run_id().map(|v| v.as_str().to_string())),
        ];
        for (kind, name) in parts {
            if let Some(name) = name {
                *totals.entry((kind, name)).or_default() += n;
            }
        }
    }
    Ok(totals
        .into_iter()
        .map(|((kind, name), n)| json!({ "id": name, "name": name, "type": kind, "total_memories": n }))
        .collect())
}

pub(super) async fn entities(
    State(s): State<AppState>,
    Extension(p): Caller,
) -> ApiResult<Response> {
    let list = with_relations(&s, &p, entity_list(&s, &p).await?).await?;
    Ok(Json(json!({ "count": list.len(), "results": list })).into_response())
}

pub(super) async fn oss_entities(
    State(s): State<AppState>,
    Extension(p): Caller,
) -> ApiResult<Response> {
    Ok(Json(with_relations(&s, &p, entity_list(&s, &p).await?).await?).into_response())
}
