//! The conversation log for REST and MCP: a scope's sessions, a session's messages, window and
//! delete, a memory's audit view, the profile, and segments with their pages. The scope comes
//! from the request and the key's binding as for every memory route, so a key bound to one user
//! cannot name another, and a session or segment outside the key's scope is answered exactly as
//! an unknown one (the store only looks inside the resolved scope).

use super::{check_reason, ctx, parse_id, Service};
use crate::api::{LogPageParams, ProfileRefreshBody};
use crate::auth::{Principal, ScopeParts};
use crate::error::ApiResult;
use mnemo::{PageView, ProfileOutcome, ProfileView, SegmentView, SessionList, SessionMessages};
use mnemo_core::SegmentId;

/// Page size of log listings when the request names none.
const DEFAULT_PAGE: usize = 100;

fn parts_of(q: &LogPageParams) -> ScopeParts {
    ScopeParts::new(q.user_id.clone(), q.agent_id.clone(), q.run_id.clone())
}

impl Service {
    /// The sessions of the caller's scope, a page at a time.
    pub async fn sessions(&self, p: &Principal, q: LogPageParams) -> ApiResult<SessionList> {
        let scope = p.require_scope(&parts_of(&q))?;
        self.run("sessions", p, async {
            Ok(self
                .memory
                .sessions(scope, q.cursor, q.limit.unwrap_or(DEFAULT_PAGE))
                .await?)
        })
        .await
    }

    /// A session's messages (as the log's visibility rule shows them), a page at a time.
    pub async fn session_messages(
        &self,
        p: &Principal,
        session: &str,
        q: LogPageParams,
    ) -> ApiResult<SessionMessages> {
        let scope = p.require_scope(&parts_of(&q))?;
        self.run("session_messages", p, async {
            Ok(self
                .memory
                .session_messages(
                    scope,
                    session.to_string(),
                    q.cursor,
                    q.limit.unwrap_or(DEFAULT_PAGE),
                )
                .await?)
        })
        .await
    }

    /// One session's summary and short-term window.
    pub async fn session(
        &self,
        p: &Principal,
        session: &str,
        parts: &ScopeParts,
    ) -> ApiResult<mnemo::SessionView> {
        let scope = p.require_scope(parts)?;
        self.run("session", p, async {
            Ok(self.memory.session(scope, session.to_string()).await?)
        })
        .await
    }

    /// Deletes (soft, with history) every memory of a session; returns how many.
    pub async fn delete_session(
        &self,
        p: &Principal,
        session: &str,
        parts: &ScopeParts,
        reason: Option<String>,
        request_id: &str,
    ) -> ApiResult<u64> {
        let scope = p.require_scope(parts)?;
        check_reason(reason.as_deref())?;
        self.run("delete_session", p, async {
            let mut ctx = ctx(p, request_id);
            ctx.reason = reason;
            let n = self
                .memory
                .delete_session(scope, session.to_string(), ctx)
                .await?;
            tracing::info!(request_id, key = %p.key_id, deleted = n, "session deleted");
            Ok(n)
        })
        .await
    }

    /// A memory's audit view: the record (any state) with `sources` (its source messages with
    /// their text, blanked ones left out), `links` and `entities`.
    pub async fn detail(
        &self,
        p: &Principal,
        id: &str,
        parts: &ScopeParts,
    ) -> ApiResult<serde_json::Value> {
        let id = parse_id(id)?;
        self.run("get", p, async {
            let scope = self.scope_for_id(p, parts, id).await?;
            let d = self.memory.inspect(scope, id).await?;
            let sources: Vec<mnemo::LogMessage> = d
                .source_messages
                .into_iter()
                .map(mnemo::LogMessage::from)
                .collect();
            let mut v = serde_json::to_value(&d.memory)
                .map_err(|e| mnemo_core::Error::internal(e.to_string()))?;
            v["sources"] = serde_json::json!(sources);
            v["links"] = serde_json::json!(d.links);
            v["entities"] = serde_json::json!(d.entities);
            Ok(v)
        })
        .await
    }

    /// The user's profile (dimensions with evidence) and knowledge.
    pub async fn profile(&self, p: &Principal, parts: &ScopeParts) -> ApiResult<ProfileView> {
        let scope = p.require_scope(parts)?;
        self.run("profile", p, async {
            Ok(self.memory.profile_view(scope).await?)
        })
        .await
    }

    /// Analyses the user's unanalysed pages into the profile and knowledge (needs a chat
    /// model: without one, invalid input naming it).
    pub async fn refresh_profile(
        &self,
        p: &Principal,
        body: ProfileRefreshBody,
        request_id: &str,
    ) -> ApiResult<ProfileOutcome> {
        let scope = p.require_scope(&ScopeParts::new(body.user_id, body.agent_id, body.run_id))?;
        self.check_write(p, &scope)?;
        self.run("refresh_profile", p, async {
            let options = mnemo::ProfileOptions {
                instructions: body.instructions,
                request_id: Some(request_id.to_string()),
            };
            let out = self.memory.refresh_profile(scope, options).await?;
            self.metrics.observe_model(&out.usage);
            Ok(out)
        })
        .await
    }

    /// The scope's segments with heat and state.
    pub async fn segments(&self, p: &Principal, parts: &ScopeParts) -> ApiResult<Vec<SegmentView>> {
        let scope = p.require_scope(parts)?;
        self.run("segments", p, async {
            Ok(self.memory.segments_view(scope).await?)
        })
        .await
    }

    /// A segment's pages with their visible messages.
    pub async fn segment_pages(
        &self,
        p: &Principal,
        id: &str,
        parts: &ScopeParts,
    ) -> ApiResult<Vec<PageView>> {
        let scope = p.require_scope(parts)?;
        let id = SegmentId::parse(id)?;
        self.run("segment_pages", p, async {
            Ok(self.memory.segment_pages(scope, id).await?)
        })
        .await
    }
}
