//! The timeline for REST, MCP and the inspector: a scope's events in event-time order with
//! their source turns. The scope comes from the request and the key's binding as for every
//! memory route, so a key bound to one user cannot read another's timeline.

use super::convert::parse_kinds;
use super::Service;
use crate::api::TimelineParams;
use crate::auth::{Principal, ScopeParts};
use crate::error::ApiResult;
use mnemo::{TimelinePage, TimelineRequest};

/// Entries of a timeline page when the request names no limit.
const DEFAULT_PAGE: usize = 100;

impl Service {
    pub async fn timeline(&self, p: &Principal, q: TimelineParams) -> ApiResult<TimelinePage> {
        let scope = p.require_scope(&ScopeParts::new(q.user_id, q.agent_id, q.run_id))?;
        let kinds = q
            .kinds
            .as_deref()
            .map(|k| parse_kinds(&k.split(',').map(str::to_string).collect::<Vec<_>>()))
            .transpose()?;
        let req = TimelineRequest {
            scope,
            from: q.from,
            to: q.to,
            kinds,
            limit: q.limit.unwrap_or(DEFAULT_PAGE),
            cursor: q.cursor,
        };
        self.run("timeline", p, async {
            Ok(self.memory.timeline(req).await?)
        })
        .await
    }
}
