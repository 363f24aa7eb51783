//! A memory's links: list both directions, add (author `caller`, all or none), remove one.

use super::convert::{parse_id, parse_link_kind};
use super::Service;
use crate::api::{LinkBody, UnlinkParams};
use crate::auth::{Principal, ScopeParts};
use crate::error::{ApiError, ApiResult};
use mnemo_core::{Author, Link, MemoryId};

impl Service {
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
}
