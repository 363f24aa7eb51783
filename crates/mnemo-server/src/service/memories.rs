//! The operations on memories: add (one or a batch), get, list (by cursor or numbered page),
//! update (one or a batch), delete (one, a batch or a scope's) and history.

use super::authz::check_reason;
use super::convert::parse_id;
use super::{ctx, Service, MAX_BATCH};
use crate::api::{AddBody, BatchDeleteBody, BatchUpdateBody, ListParams, UpdateBody};
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use mnemo::{GetRequest, ListRequest, UpdateRequest};
use mnemo_core::{AddOutcome, DeleteMode, HistoryEvent, MemoryId, Page, Scope};

impl Service {
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
}
