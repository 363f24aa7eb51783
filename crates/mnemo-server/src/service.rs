//! The one service layer behind REST (native and Mem0-compatible) and MCP. Every operation
//! takes the caller's [`Principal`], resolves and checks the scope before any work is done,
//! waits for a worker slot (the queue delay is measured), runs the library call and records
//! its duration and model calls. Logs carry ids, counts and lengths; memory text only when
//! content logging is switched on.

use crate::api::*;
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use crate::metrics::Metrics;
use mnemo::{AddInput, AddRequest, GetRequest, ListRequest, Memory, UpdateRequest};
use mnemo_core::{
    AddOutcome, Author, DeleteMode, ExportRecord, Filter, HistoryEvent, InputMessage, Link,
    LinkKind, MemoryId, MemoryKind, Page, ReadOptions, Scope, SearchMode, SearchRequest,
    WriteContext,
};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Semaphore;

mod context;
pub mod inspect;
pub mod jobs;
mod log;
pub use context::budget_tokens;

/// Settings of the service layer.
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// Operations running at once; later ones queue (and the wait is measured).
    pub max_in_flight: usize,
    /// Write memory text and queries into the logs (off by default).
    pub log_content: bool,
    /// Let keys bound to no user write into a user's memories (see `Service::check_write`).
    pub allow_agent_writes_for_users: bool,
    /// Messages one add (or one batch of adds, in all) may carry.
    pub max_messages_per_add: usize,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self {
            max_in_flight: 64,
            log_content: false,
            allow_agent_writes_for_users: false,
            max_messages_per_add: mnemo_core::limits::MAX_MESSAGES_PER_ADD,
        }
    }
}

/// The operations every surface calls.
pub struct Service {
    memory: Memory,
    metrics: Arc<Metrics>,
    gate: Arc<Semaphore>,
    log_content: bool,
    allow_agent_writes_for_users: bool,
    max_messages: usize,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

pub fn parse_id(raw: &str) -> ApiResult<MemoryId> {
    Ok(MemoryId::parse(raw)?)
}

fn parse_kinds(raw: &[String]) -> ApiResult<Vec<MemoryKind>> {
    raw.iter()
        .map(|k| k.trim().parse::<MemoryKind>().map_err(ApiError::from))
        .collect()
}

fn parse_messages(raw: Vec<MessageIn>) -> ApiResult<Vec<InputMessage>> {
    raw.into_iter()
        .map(|m| {
            Ok(InputMessage {
                role: m.role.parse()?,
                content: m.content,
                name: m.name,
            })
        })
        .collect()
}

const MAX_BATCH: usize = 1000;

/// Cancels an operation's ticket when its future is dropped before the end (the client hung
/// up), counting it in `mnemo_requests_abandoned`.
struct AbandonGuard<'a> {
    ticket: mnemo::cancel::WorkTicket,
    metrics: &'a Metrics,
    done: bool,
}

impl Drop for AbandonGuard<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.ticket.cancel();
            self.metrics.abandoned.inc();
        }
    }
}

impl Service {
    pub fn new(memory: Memory, metrics: Arc<Metrics>, config: &ServiceConfig) -> Self {
        Self {
            memory,
            metrics,
            gate: Arc::new(Semaphore::new(config.max_in_flight.max(1))),
            log_content: config.log_content,
            allow_agent_writes_for_users: config.allow_agent_writes_for_users,
            max_messages: config.max_messages_per_add,
        }
    }

    /// The server's cap on messages per add (the library's own bound is the ceiling).
    fn check_messages(&self, n: usize, what: &str) -> ApiResult<()> {
        if n > self.max_messages {
            return Err(ApiError::invalid(format!(
                "{what} holds {n} messages; this server takes at most {} (max_messages_per_add)",
                self.max_messages
            )));
        }
        Ok(())
    }

    /// The write rule for keys bound to no user. Reading across users through an agent's scope
    /// is how agent-centric deployments work, but a key bound only to an agent (or a run) that
    /// adds to or changes a user's memories plants text in that user's own searches. Such
    /// writes need a key bound to that user, an admin key, or
    /// `allow_agent_writes_for_users`. Deletes are not writes of content and stay allowed.
    fn check_write(&self, p: &Principal, owner: &Scope) -> ApiResult<()> {
        match &owner.user_id {
            Some(user) if !p.admin && p.user_id.is_none() && !self.allow_agent_writes_for_users => {
                Err(ApiError::forbidden(format!(
                    "this API key is not bound to a user and may not add to or change the \
                     memories of user {:?}; use a key bound to that user (or start the server \
                     with --allow-agent-writes-for-users)",
                    user.as_str()
                )))
            }
            _ => Ok(()),
        }
    }

    /// [`check_write`](Self::check_write) for a memory named by id: its owner decides, not the
    /// scope the request names (an agent's scope also reaches memories it shares with a user).
    /// Visibility comes first: an id the request's scope cannot see is answered exactly as an
    /// unknown id (`not_found`, the owner never named), so no key learns that it exists.
    async fn check_write_id(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        id: MemoryId,
    ) -> ApiResult<()> {
        if p.admin || p.user_id.is_some() || self.allow_agent_writes_for_users {
            return Ok(());
        }
        let owner = match self.memory.owner_of(id).await {
            Ok(owner) => owner,
            // Unknown ids fail later with the answer every unknown id gets.
            Err(e) if e.kind() == mnemo_core::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        match p.resolve(parts)? {
            Some(scope) if !scope.covers(&owner) => {
                Err(mnemo::Error::not_found("memory", id).into())
            }
            _ => self.check_write(p, &owner),
        }
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    async fn run<T>(
        &self,
        op: &'static str,
        p: &Principal,
        f: impl Future<Output = ApiResult<T>>,
    ) -> ApiResult<T> {
        let queued = Instant::now();
        let slot = self
            .gate
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ApiError::from(mnemo_core::Error::internal("worker gate closed")))?;
        self.metrics
            .queue_seconds
            .observe(queued.elapsed().as_secs_f64());
        let t = Instant::now();
        // The slot travels with the work (every blocking task holds the ticket), so a client
        // that hangs up frees it only when that work has stopped; the guard cancels the
        // ticket when this future is dropped before it ends, and the work stops at its next
        // check.
        let ticket = mnemo::cancel::WorkTicket::new(slot);
        let guard = AbandonGuard {
            ticket: ticket.clone(),
            metrics: &self.metrics,
            done: false,
        };
        let out = mnemo::cancel::with_ticket(ticket, f).await;
        let mut guard = guard;
        guard.done = true;
        let secs = t.elapsed().as_secs_f64();
        self.metrics.observe_op(op, out.is_ok(), secs);
        match &out {
            Ok(_) => tracing::debug!(op, key = %p.key_id, ms = secs * 1e3, "ok"),
            Err(e) => {
                tracing::info!(op, key = %p.key_id, kind = e.kind.as_str(), ms = secs * 1e3, "failed")
            }
        }
        out
    }

    /// The scope for a by-id operation: the request's (or the key's) scope, or — for an admin
    /// naming none — the memory's owner.
    async fn scope_for_id(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        id: MemoryId,
    ) -> ApiResult<Scope> {
        match p.resolve(parts)? {
            Some(s) => Ok(s),
            None => Ok(self.memory.owner_of(id).await?),
        }
    }

    /// The scope of every id of a batch, each checked to be visible through it, before any
    /// model work: an unknown or foreign id fails the whole batch with nothing changed. The
    /// batch is then written in one transaction (all or none).
    async fn visible_scopes(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        ids: &[MemoryId],
    ) -> ApiResult<Vec<Scope>> {
        let mut scopes = Vec::with_capacity(ids.len());
        for id in ids {
            let scope = self.scope_for_id(p, parts, *id).await?;
            self.memory
                .get(GetRequest {
                    scope: scope.clone(),
                    id: *id,
                    include_expired: true,
                })
                .await?;
            scopes.push(scope);
        }
        Ok(scopes)
    }

    fn add_request(&self, p: &Principal, body: AddBody, request_id: &str) -> ApiResult<AddRequest> {
        let scope = p.require_scope(&ScopeParts::new(body.user_id, body.agent_id, body.run_id))?;
        self.check_write(p, &scope)?;
        if let Some(m) = &body.messages {
            self.check_messages(m.len(), "an add")?;
        }
        let input = match (body.messages, body.text) {
            (Some(m), None) => AddInput::Messages(parse_messages(m)?),
            (None, Some(t)) => AddInput::Text(t),
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid("give `messages` or `text`, not both"))
            }
            (None, None) => {
                return Err(ApiError::invalid(
                    "give `messages` (a conversation) or `text`",
                ))
            }
        };
        let memory_type = body
            .memory_type
            .as_deref()
            .map(|k| k.parse::<MemoryKind>())
            .transpose()?;
        if self.log_content {
            tracing::info!(request_id, input = ?input, "add content");
        }
        let note = mnemo::NoteInput {
            keywords: body
                .keywords
                .map(|v| string_list("keywords", v))
                .transpose()?,
            tags: body.tags.map(|v| string_list("tags", v)).transpose()?,
            context: body.context,
        };
        Ok(AddRequest {
            scope,
            input,
            metadata: body.metadata,
            expires_at: body.expires_at,
            timestamp: body.timestamp,
            idempotency_key: body.idempotency_key,
            infer: body.infer,
            memory_type,
            instructions: body.instructions,
            session_id: body.session_id,
            request_id: Some(request_id.to_string()),
            actor: Some(format!("api-key:{}", p.key_id)),
            note,
        })
    }

    pub async fn add(
        &self,
        p: &Principal,
        body: AddBody,
        request_id: &str,
    ) -> ApiResult<AddOutcome> {
        let req = self.add_request(p, body, request_id)?;
        self.run("add", p, async {
            let out = self.memory.add(req).await?;
            self.metrics.observe_model(&out.usage);
            tracing::info!(request_id, key = %p.key_id, results = out.results.len(), replayed = out.replayed, "add");
            Ok(out)
        })
        .await
    }

    /// Several adds; every item's scope is checked before any is written.
    pub async fn add_batch(
        &self,
        p: &Principal,
        items: Vec<AddBody>,
        request_id: &str,
    ) -> ApiResult<Vec<AddOutcome>> {
        if items.is_empty() || items.len() > MAX_BATCH {
            return Err(ApiError::invalid(format!(
                "a batch holds 1 to {MAX_BATCH} items"
            )));
        }
        // Each add holds at most MAX_MESSAGES_PER_ADD messages; a batch as a whole holds no more
        // than one add may, so one request's work stays bounded by the same figure.
        let total: usize = items
            .iter()
            .map(|b| b.messages.as_ref().map_or(1, Vec::len))
            .sum();
        self.check_messages(total, "a batch of adds (texts count as one message)")?;
        let reqs = items
            .into_iter()
            .map(|b| self.add_request(p, b, request_id))
            .collect::<ApiResult<Vec<_>>>()?;
        self.run("add_batch", p, async {
            let out = self.memory.add_many(reqs).await?;
            for o in &out {
                self.metrics.observe_model(&o.usage);
            }
            Ok(out)
        })
        .await
    }

    pub async fn search(
        &self,
        p: &Principal,
        body: SearchBody,
    ) -> ApiResult<mnemo::SearchResponse> {
        let scope = p.require_scope(&ScopeParts::new(body.user_id, body.agent_id, body.run_id))?;
        let kinds = body.kinds.as_deref().map(parse_kinds).transpose()?;
        let filter = match &body.filters {
            Some(f) => Filter::from_json(f)?,
            None => None,
        };
        let mode = match body.mode.as_deref() {
            None | Some("hybrid") => SearchMode::Hybrid,
            Some("dense") => SearchMode::Dense,
            Some("lexical") => SearchMode::Lexical,
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "mode {other:?} is not one of hybrid, dense, lexical"
                )))
            }
        };
        if self.log_content {
            tracing::info!(query = %body.query, "search content");
        }
        let req = SearchRequest {
            scope,
            query: body.query,
            top_k: body.top_k.unwrap_or(10),
            threshold: body.threshold,
            kinds,
            filter,
            read: ReadOptions {
                include_expired: body.include_expired,
                include_inactive: body.include_inactive,
                as_of: body.as_of,
                ..ReadOptions::default()
            },
            mode,
            expand_links: body.expand_links,
            expand_limit: body.expand_limit,
        };
        self.run("search", p, async {
            let out = self.memory.search(req).await?;
            self.metrics.observe_model(&out.usage);
            Ok(out)
        })
        .await
    }

    pub async fn get(
        &self,
        p: &Principal,
        id: &str,
        parts: &ScopeParts,
        include_expired: bool,
    ) -> ApiResult<mnemo::MemoryRecord> {
        let id = parse_id(id)?;
        self.run("get", p, async {
            let scope = self.scope_for_id(p, parts, id).await?;
            Ok(self
                .memory
                .get(GetRequest {
                    scope,
                    id,
                    include_expired,
                })
                .await?)
        })
        .await
    }

    fn list_request(p: &Principal, params: ListParams) -> ApiResult<ListRequest> {
        let scope = p.require_scope(&ScopeParts::new(
            params.user_id,
            params.agent_id,
            params.run_id,
        ))?;
        let kinds = params
            .kinds
            .as_deref()
            .map(|k| parse_kinds(&k.split(',').map(str::to_string).collect::<Vec<_>>()))
            .transpose()?;
        let filters = params
            .filters
            .as_deref()
            .map(|f| {
                serde_json::from_str::<serde_json::Value>(f)
                    .map_err(|e| ApiError::invalid(format!("filters is not JSON: {e}")))
            })
            .transpose()?;
        Ok(ListRequest {
            scope,
            kinds,
            filters,
            limit: params.limit.unwrap_or(100),
            cursor: params.cursor,
            include_expired: params.include_expired,
            as_of: params.as_of,
        })
    }

    pub async fn list(&self, p: &Principal, params: ListParams) -> ApiResult<Page> {
        let inactive = params.include_inactive;
        let req = Self::list_request(p, params)?;
        if inactive {
            return self.list_any_state(p, req).await;
        }
        self.run("list", p, async { Ok(self.memory.list(req).await?) })
            .await
    }

    /// A numbered page (`page` from 1, `params.limit` per page) with the listing's total: one
    /// count and one positioned read, however deep the page.
    pub async fn list_numbered(
        &self,
        p: &Principal,
        params: ListParams,
        page: u64,
    ) -> ApiResult<(Page, u64)> {
        let size = params.limit.unwrap_or(100) as u64;
        let skip = page.saturating_sub(1).saturating_mul(size);
        let req = Self::list_request(p, params)?;
        self.run("list", p, async {
            let pos = self.memory.locate(req.clone(), skip).await?;
            if skip >= pos.total {
                let empty = Page {
                    results: Vec::new(),
                    next_cursor: None,
                };
                return Ok((empty, pos.total));
            }
            let page = self
                .memory
                .list(ListRequest {
                    cursor: pos.cursor,
                    ..req
                })
                .await?;
            Ok((page, pos.total))
        })
        .await
    }

    pub async fn update(
        &self,
        p: &Principal,
        id: &str,
        parts: &ScopeParts,
        body: UpdateBody,
        request_id: &str,
    ) -> ApiResult<mnemo::MemoryRecord> {
        let id = parse_id(id)?;
        check_reason(body.reason.as_deref())?;
        let req = UpdateRequest {
            text: body.text,
            metadata: body.metadata,
            expires_at: body.expires_at,
        };
        self.run("update", p, async {
            self.check_write_id(p, parts, id).await?;
            let scope = self.scope_for_id(p, parts, id).await?;
            let mut ctx = ctx(p, request_id);
            ctx.reason = body.reason;
            Ok(self.memory.update(scope, id, req, ctx).await?)
        })
        .await
    }

    /// Several updates in one transaction; ids are parsed and the scope checked first. A
    /// repeated id is refused (its second update would silently win).
    pub async fn update_batch(
        &self,
        p: &Principal,
        body: BatchUpdateBody,
        request_id: &str,
    ) -> ApiResult<Vec<mnemo::MemoryRecord>> {
        if body.items.is_empty() || body.items.len() > MAX_BATCH {
            return Err(ApiError::invalid(format!(
                "a batch holds 1 to {MAX_BATCH} items"
            )));
        }
        let parts = ScopeParts::new(body.user_id, body.agent_id, body.run_id);
        p.resolve(&parts)?;
        let items = body
            .items
            .into_iter()
            .map(|i| Ok((parse_id(&i.memory_id)?, i)))
            .collect::<ApiResult<Vec<_>>>()?;
        let mut seen = std::collections::HashSet::new();
        if let Some((dup, _)) = items.iter().find(|(id, _)| !seen.insert(*id)) {
            return Err(ApiError::invalid(format!(
                "memory {dup} appears twice in one batch update"
            )));
        }
        self.run("update_batch", p, async {
            let ids: Vec<MemoryId> = items.iter().map(|(id, _)| *id).collect();
            let scopes = self.visible_scopes(p, &parts, &ids).await?;
            for id in &ids {
                self.check_write_id(p, &parts, *id).await?;
            }
            let batch = items
                .into_iter()
                .zip(scopes)
                .map(|((id, item), scope)| {
                    let req = UpdateRequest {
                        text: item.text,
                        metadata: item.metadata,
                        expires_at: None,
                    };
                    (scope, id, req)
                })
                .collect();
            Ok(self.memory.update_many(batch, ctx(p, request_id)).await?)
        })
        .await
    }

    pub async fn delete(
        &self,
        p: &Principal,
        id: &str,
        parts: &ScopeParts,
        reason: Option<String>,
        request_id: &str,
    ) -> ApiResult<()> {
        let id = parse_id(id)?;
        check_reason(reason.as_deref())?;
        self.run("delete", p, async {
            let scope = self.scope_for_id(p, parts, id).await?;
            let mut ctx = ctx(p, request_id);
            ctx.reason = reason;
            Ok(self.memory.delete(scope, id, DeleteMode::Soft, ctx).await?)
        })
        .await
    }

    /// Erases a memory's content everywhere the store keeps it (see [`mnemo::Memory::erase`]).
    /// `reason` goes into the tombstone event; it is the caller's and must not quote the text.
    pub async fn erase(
        &self,
        p: &Principal,
        id: &str,
        parts: &ScopeParts,
        body: EraseBody,
        request_id: &str,
    ) -> ApiResult<mnemo_core::EraseReport> {
        let id = parse_id(id)?;
        if body
            .reason
            .as_deref()
            .is_some_and(|r| r.chars().count() > 500)
        {
            return Err(ApiError::invalid("reason must be at most 500 characters"));
        }
        self.run("erase", p, async {
            // Erasing the source messages destroys the owner's own words: a write of the owner
            // (erasing the memory alone, like a delete, stays open to every key that sees it).
            if body.sources {
                self.check_write_id(p, parts, id).await?;
            }
            let scope = self.scope_for_id(p, parts, id).await?;
            let mut ctx = ctx(p, request_id);
            ctx.reason = body.reason;
            let report = self.memory.erase(scope, id, body.sources, ctx).await?;
            tracing::info!(request_id, key = %p.key_id, memory_id = %id, "erased");
            Ok(report)
        })
        .await
    }

    /// Erases a session of the caller's scope (see [`mnemo::Memory::erase_session`]).
    pub async fn erase_session(
        &self,
        p: &Principal,
        session: &str,
        body: EraseLogBody,
        request_id: &str,
    ) -> ApiResult<mnemo_core::EraseLogReport> {
        let parts = ScopeParts::new(body.user_id, body.agent_id, body.run_id);
        let scope = p.require_scope(&parts)?;
        check_reason(body.reason.as_deref())?;
        self.run("erase_session", p, async {
            let mut ctx = ctx(p, request_id);
            ctx.reason = body.reason;
            let r = self
                .memory
                .erase_session(scope, session.to_string(), ctx)
                .await?;
            tracing::info!(request_id, key = %p.key_id, "session erased");
            Ok(r)
        })
        .await
    }

    /// Erases everything the caller's scope covers (see [`mnemo::Memory::erase_scope`]).
    pub async fn erase_scope(
        &self,
        p: &Principal,
        body: EraseLogBody,
        request_id: &str,
    ) -> ApiResult<mnemo_core::EraseLogReport> {
        let parts = ScopeParts::new(body.user_id, body.agent_id, body.run_id);
        let scope = p.require_scope(&parts)?;
        check_reason(body.reason.as_deref())?;
        self.run("erase_scope", p, async {
            let mut ctx = ctx(p, request_id);
            ctx.reason = body.reason;
            let r = self.memory.erase_scope(scope, body.confirm, ctx).await?;
            tracing::info!(request_id, key = %p.key_id, "scope erased");
            Ok(r)
        })
        .await
    }

    pub async fn delete_batch(
        &self,
        p: &Principal,
        body: BatchDeleteBody,
        request_id: &str,
    ) -> ApiResult<u64> {
        if body.memory_ids.is_empty() || body.memory_ids.len() > MAX_BATCH {
            return Err(ApiError::invalid(format!(
                "a batch holds 1 to {MAX_BATCH} ids"
            )));
        }
        let parts = ScopeParts::new(body.user_id, body.agent_id, body.run_id);
        p.resolve(&parts)?;
        let mut ids = body
            .memory_ids
            .iter()
            .map(|i| parse_id(i))
            .collect::<ApiResult<Vec<_>>>()?;
        // Deleting an id twice in one batch means deleting it once.
        let mut seen = std::collections::HashSet::new();
        ids.retain(|id| seen.insert(*id));
        self.run("delete_batch", p, async {
            let scopes = self.visible_scopes(p, &parts, &ids).await?;
            let batch: Vec<(Scope, MemoryId)> =
                scopes.into_iter().zip(ids.iter().copied()).collect();
            Ok(self
                .memory
                .delete_many(batch, DeleteMode::Soft, ctx(p, request_id))
                .await?)
        })
        .await
    }

    pub async fn delete_all(
        &self,
        p: &Principal,
        parts: &ScopeParts,
        request_id: &str,
    ) -> ApiResult<u64> {
        let scope = p.require_scope(parts)?;
        self.run("delete_all", p, async {
            Ok(self
                .memory
                .delete_all(scope, DeleteMode::Soft, ctx(p, request_id))
                .await?)
        })
        .await
    }

    pub async fn history(
        &self,
        p: &Principal,
        id: &str,
        parts: &ScopeParts,
    ) -> ApiResult<Vec<HistoryEvent>> {
        let id = parse_id(id)?;
        self.run("history", p, async {
            let scope = self.scope_for_id(p, parts, id).await?;
            Ok(self.memory.history(scope, id).await?)
        })
        .await
    }

    /// A memory's links, both directions.
    pub async fn links(&self, p: &Principal, id: &str, parts: &ScopeParts) -> ApiResult<Vec<Link>> {
        let id = parse_id(id)?;
        self.run("links", p, async {
            let scope = self.scope_for_id(p, parts, id).await?;
            Ok(self.memory.links(scope, id).await?)
        })
        .await
    }

    /// Adds links from a memory (author `caller`); all or none.
    pub async fn add_links(&self, p: &Principal, id: &str, body: LinkBody) -> ApiResult<Vec<Link>> {
        let from = parse_id(id)?;
        let parts = ScopeParts::new(body.user_id, body.agent_id, body.run_id);
        if body.links.is_empty() {
            return Err(ApiError::invalid("links must not be empty"));
        }
        let now = chrono::Utc::now();
        let links = body
            .links
            .into_iter()
            .map(|l| {
                Ok(Link {
                    from,
                    to: MemoryId::parse(&l.to).map_err(|_| {
                        mnemo::Error::invalid("to", format!("{:?} is not a UUID", l.to))
                    })?,
                    kind: parse_link_kind(l.kind.as_deref())?,
                    strength: l.strength.unwrap_or(1.0),
                    author: Author::Caller,
                    created_at: now,
                    reason: l.reason,
                })
            })
            .collect::<ApiResult<Vec<Link>>>()?;
        self.check_write_id(p, &parts, from).await?;
        self.run("add_links", p, async {
            let scope = self.scope_for_id(p, &parts, from).await?;
            // The memory linked from is the one the request is about: unknown or out of scope,
            // it is not found, as for every other by-id operation; the store then checks `to`.
            if !scope.covers(&self.memory.owner_of(from).await?) {
                return Err(mnemo::Error::not_found("memory", from).into());
            }
            self.memory.add_links(scope.clone(), links).await?;
            Ok(self.memory.links(scope, from).await?)
        })
        .await
    }

    /// Removes one link; not found when there was none.
    pub async fn remove_link(
        &self,
        p: &Principal,
        id: &str,
        to: &str,
        q: UnlinkParams,
    ) -> ApiResult<()> {
        let from = parse_id(id)?;
        let to = parse_id(to)?;
        let kind = parse_link_kind(q.kind.as_deref())?;
        let parts = ScopeParts::new(q.user_id, q.agent_id, q.run_id);
        self.check_write_id(p, &parts, from).await?;
        self.run("remove_link", p, async {
            let scope = self.scope_for_id(p, &parts, from).await?;
            // As for adding: the memory linked from, unknown or out of scope, is not found.
            let owner = match self.memory.owner_of(from).await {
                Err(e) if e.kind() == mnemo_core::ErrorKind::NotFound => None,
                other => Some(other?),
            };
            if !owner.is_some_and(|o| scope.covers(&o)) {
                return Err(mnemo::Error::not_found("memory", from).into());
            }
            if self.memory.remove_link(scope, from, to, kind).await? {
                Ok(())
            } else {
                Err(mnemo::Error::not_found("link", to).into())
            }
        })
        .await
    }

    /// The scopes owning visible memories that this key may see, with their counts.
    pub async fn owners(&self, p: &Principal) -> ApiResult<Vec<(Scope, u64)>> {
        self.run("owners", p, async {
            let all = self.memory.owners().await?;
            Ok(all.into_iter().filter(|(s, _)| p.may_see(s)).collect())
        })
        .await
    }

    pub async fn reset(&self, p: &Principal, confirm: &str) -> ApiResult<()> {
        p.require_admin("reset")?;
        self.run("reset", p, async { Ok(self.memory.reset(confirm).await?) })
            .await
    }

    pub async fn export(&self, p: &Principal) -> ApiResult<Vec<ExportRecord>> {
        p.require_admin("export")?;
        self.run("export", p, async { Ok(self.memory.export().await?) })
            .await
    }

    pub async fn import(&self, p: &Principal, records: Vec<ExportRecord>) -> ApiResult<u64> {
        p.require_admin("import")?;
        self.run("import", p, async {
            Ok(self.memory.import_records(records).await?)
        })
        .await
    }
}

pub(crate) fn ctx(p: &Principal, request_id: &str) -> WriteContext {
    WriteContext {
        actor: Some(format!("api-key:{}", p.key_id)),
        role: None,
        reason: None,
        request_id: Some(request_id.to_string()),
    }
}

/// A keyword or tag list from a request: a JSON list of strings, else invalid input naming it.
fn string_list(field: &str, v: serde_json::Value) -> ApiResult<Vec<String>> {
    match v {
        serde_json::Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                serde_json::Value::String(s) => Ok(s),
                _ => Err(mnemo::Error::invalid(field, "must be a list of strings").into()),
            })
            .collect(),
        _ => Err(mnemo::Error::invalid(field, "must be a list of strings").into()),
    }
}

/// A link kind a caller may create (`supersedes` is written by updates only).
fn parse_link_kind(raw: Option<&str>) -> ApiResult<LinkKind> {
    match raw.map(|k| k.parse::<LinkKind>()).transpose()? {
        None => Ok(LinkKind::Related),
        Some(LinkKind::Supersedes) => Err(mnemo::Error::invalid(
            "kind",
            "supersedes links are written by updates, not by callers",
        )
        .into()),
        Some(k) => Ok(k),
    }
}

/// A tombstone's reason: the caller's words, bounded.
pub(crate) fn check_reason(reason: Option<&str>) -> ApiResult<()> {
    if reason.is_some_and(|r| r.chars().count() > 500) {
        return Err(ApiError::invalid("reason must be at most 500 characters"));
    }
    Ok(())
}
