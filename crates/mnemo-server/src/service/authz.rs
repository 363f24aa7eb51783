//! Which scope a request acts in, and whether it may write there: the scope of a by-id
//! operation, the visibility of a batch's ids, and the write rule for keys bound to no user.

use super::Service;
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use mnemo::GetRequest;
use mnemo_core::{MemoryId, Scope};

impl Service {
    /// The write rule for keys bound to no user. Reading across users through an agent's scope
    /// is how agent-centric deployments work, but a key bound only to an agent (or a run) that
    /// adds to or changes a user's memories plants text in that user's own searches. Such
    /// writes need a key bound to that user, an admin key, or
    /// `allow_agent_writes_for_users`. Deletes are not writes of content and stay allowed.
    pub(super) fn check_write(&self, p: &Principal, owner: &Scope) -> ApiResult<()> {
        match owner.user_id() {
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
    pub(super) async fn check_write_id(
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

    /// The scope for a by-id operation: the request's (or the key's) scope, or — for an admin
    /// naming none — the memory's owner.
    pub(super) async fn scope_for_id(
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
    pub(super) async fn visible_scopes(
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
}

/// A tombstone's reason: the caller's words, bounded.
pub(crate) fn check_reason(reason: Option<&str>) -> ApiResult<()> {
    if reason.is_some_and(|r| r.chars().count() > 500) {
        return Err(ApiError::invalid("reason must be at most 500 characters"));
    }
    Ok(())
}
