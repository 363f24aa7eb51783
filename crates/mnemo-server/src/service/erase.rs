//! Erasure for good: a memory, a session, or everything a scope covers.

use super::authz::check_reason;
use super::convert::parse_id;
use super::{ctx, Service};
use crate::api::{EraseBody, EraseLogBody};
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};

impl Service {
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
}
