//! The conversation log by session, as every surface shows it: a scope's sessions
//! ([`Memory::sessions`]), a session's messages a page at a time ([`Memory::session_messages`]),
//! one session with its short-term window ([`Memory::session`]) and the delete of a session's
//! memories ([`Memory::delete_session`]). Every message shown passes the log's visibility rule
//! ([`mnemo_core::visible_messages`]), the one context packs use.

use crate::Memory;
use mnemo_core::session::*;
use mnemo_core::tier::{PageQuery, StoredPage};
use mnemo_core::*;
use serde::Serialize;

/// Sessions a listing returns at most per page.
pub(crate) const MAX_SESSIONS_PER_PAGE: usize = 1000;
/// Messages a read returns at most per page.
pub(crate) const MAX_MESSAGES_PER_PAGE: usize = 1000;
/// Raw messages one page read walks at most while skipping hidden ones; past it the page ends
/// early (with a cursor), so a session of hidden turns costs each read a bounded amount.
const MAX_SCANNED: usize = 4 * MAX_MESSAGES_PER_PAGE;

/// A page of a scope's sessions.
#[derive(Debug, Clone, Serialize)]
pub struct SessionList {
    pub sessions: Vec<SessionInfo>,
    pub next_cursor: Option<String>,
}

/// One message of the log as the surfaces show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogMessage {
    pub id: MessageId,
    pub role: Role,
    pub name: Option<String>,
    pub text: String,
    pub created_at: Timestamp,
}

impl From<Message> for LogMessage {
    fn from(m: Message) -> Self {
        Self {
            id: m.id,
            role: m.role,
            name: m.name,
            text: m.content,
            created_at: m.created_at,
        }
    }
}

/// A page of a session's messages.
#[derive(Debug, Clone, Serialize)]
pub struct SessionMessages {
    pub messages: Vec<LogMessage>,
    pub next_cursor: Option<String>,
}

/// A page of the hierarchy (an exchange) with its visible messages; the stored page text is not
/// shown, since it may quote turns the visibility rule hides.
#[derive(Debug, Clone, Serialize)]
pub struct PageView {
    pub id: PageId,
    pub session_id: Option<String>,
    pub tier: PageTier,
    pub segment_id: Option<SegmentId>,
    pub continues: Option<PageId>,
    pub at: Timestamp,
    pub tokens: u32,
    pub keywords: Vec<String>,
    pub messages: Vec<LogMessage>,
}

/// One session with its short-term window.
#[derive(Debug, Clone, Serialize)]
pub struct SessionView {
    #[serde(flatten)]
    pub session: SessionInfo,
    /// The pages of its short-term window, oldest first.
    pub window: Vec<PageView>,
}

fn check_limit(limit: usize, max: usize) -> Result<()> {
    if limit == 0 || limit > max {
        return Err(Error::invalid(
            "limit",
            format!("must be 1 to {max}, got {limit}"),
        ));
    }
    Ok(())
}

/// Pages with the messages of each that the log's visibility rule shows; pages with none are
/// left out.
pub(crate) fn page_views(
    store: &dyn Store,
    scope: &Scope,
    pages: Vec<StoredPage>,
) -> Result<Vec<PageView>> {
    let ids: Vec<MessageId> = pages.iter().flat_map(|p| p.message_ids.clone()).collect();
    let messages = store.messages_by_id(scope, &ids)?;
    let shown = visible_messages(store, scope, messages, &ReadOptions::default())?;
    let by_id: std::collections::HashMap<MessageId, &Message> =
        shown.iter().map(|m| (m.id, m)).collect();
    Ok(pages
        .into_iter()
        .filter_map(|p| {
            let messages: Vec<LogMessage> = p
                .message_ids
                .iter()
                .filter_map(|id| by_id.get(id).map(|m| LogMessage::from((*m).clone())))
                .collect();
            (!messages.is_empty()).then_some(PageView {
                id: p.id,
                session_id: p.session_id,
                tier: p.tier,
                segment_id: p.segment,
                continues: p.continues,
                at: p.at,
                tokens: p.tokens,
                keywords: p.keywords,
                messages,
            })
        })
        .collect())
}

impl Memory {
    /// The scope's sessions ordered by id, `limit` (1 to `MAX_SESSIONS_PER_PAGE`) per page;
    /// `cursor` is a page's `next_cursor`.
    pub async fn sessions(
        &self,
        scope: Scope,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<SessionList> {
        check_limit(limit, MAX_SESSIONS_PER_PAGE)?;
        let after = cursor.as_deref().map(parse_session_cursor).transpose()?;
        self.with_store(move |s| {
            let mut sessions = s.sessions(
                &scope,
                &SessionQuery {
                    after: after.as_deref(),
                    only: None,
                    limit: limit + 1,
                },
            )?;
            let next_cursor = (sessions.len() > limit).then(|| {
                sessions.truncate(limit);
                session_cursor(&sessions[limit - 1].session_id)
            });
            Ok(SessionList {
                sessions,
                next_cursor,
            })
        })
        .await
    }

    /// The scope's last `limit` (1 to `MAX_MESSAGES_PER_PAGE`) messages that the log's
    /// visibility rule shows — of one session when `session` is given — oldest first. Hidden
    /// turns do not use up the limit: the read reaches further back, up to `MAX_SCANNED` raw
    /// messages, so a log of hidden turns costs a bounded amount.
    pub async fn recent_messages(
        &self,
        scope: Scope,
        session: Option<String>,
        limit: usize,
    ) -> Result<Vec<Message>> {
        if let Some(s) = &session {
            check_session_id(s)?;
        }
        check_limit(limit, MAX_MESSAGES_PER_PAGE)?;
        self.with_store(move |s| {
            let read = ReadOptions::default();
            let mut reach = limit;
            loop {
                let raw = s.messages(&scope, session.as_deref(), reach)?;
                let exhausted = raw.len() < reach;
                let mut shown = visible_messages(s, &scope, raw, &read)?;
                if shown.len() >= limit || exhausted || reach >= MAX_SCANNED {
                    let skip = shown.len().saturating_sub(limit);
                    shown.drain(..skip);
                    return Ok(shown);
                }
                reach = (reach * 2).min(MAX_SCANNED);
            }
        })
        .await
    }

    /// A session's messages in log order, those the log's visibility rule shows, `limit`
    /// (1 to `MAX_MESSAGES_PER_PAGE`) at most per page; `cursor` is a page's `next_cursor`.
    /// An unknown session, or one of another scope, is `invalid_input` naming `session_id`.
    pub async fn session_messages(
        &self,
        scope: Scope,
        session: String,
        cursor: Option<String>,
        limit: usize,
    ) -> Result<SessionMessages> {
        check_session_id(&session)?;
        check_limit(limit, MAX_MESSAGES_PER_PAGE)?;
        let mut after = cursor.as_deref().map(parse_message_cursor).transpose()?;
        self.with_store(move |s| {
            let read = ReadOptions::default();
            let mut shown: Vec<Message> = Vec::new();
            let mut scanned = 0usize;
            let next_cursor = loop {
                let mut batch = s.session_messages(&SessionLogQuery {
                    scope: &scope,
                    session: &session,
                    after,
                    limit: limit + 1,
                })?;
                let more = batch.len() > limit;
                batch.truncate(limit);
                let Some(last) = batch.last().map(|m| m.id) else {
                    break None;
                };
                scanned += batch.len();
                let visible: std::collections::HashSet<MessageId> =
                    visible_messages(s, &scope, batch.clone(), &read)?
                        .iter()
                        .map(|m| m.id)
                        .collect();
                for m in batch {
                    if shown.len() == limit {
                        break;
                    }
                    after = Some(m.id);
                    if visible.contains(&m.id) {
                        shown.push(m);
                    }
                }
                let rest = more || after != Some(last);
                if !rest {
                    break None;
                }
                if shown.len() == limit || scanned >= MAX_SCANNED {
                    break after.map(message_cursor);
                }
            };
            Ok(SessionMessages {
                messages: shown.into_iter().map(LogMessage::from).collect(),
                next_cursor,
            })
        })
        .await
    }

    /// One session: its times and sizes, and its short-term window (visible messages only).
    /// An unknown session, or one of another scope, is `invalid_input` naming `session_id`.
    pub async fn session(&self, scope: Scope, session: String) -> Result<SessionView> {
        check_session_id(&session)?;
        self.with_store(move |s| {
            let info = s
                .sessions(
                    &scope,
                    &SessionQuery {
                        after: None,
                        only: Some(&session),
                        limit: 1,
                    },
                )?
                .pop()
                .ok_or_else(|| {
                    Error::invalid(
                        "session_id",
                        format!("the scope has no session {session:?}"),
                    )
                })?;
            let pages = s.pages(&PageQuery {
                scope: Some(scope.clone()),
                session: Some(Some(session.clone())),
                tier: Some(PageTier::Short),
                ..PageQuery::default()
            })?;
            Ok(SessionView {
                session: info,
                window: page_views(s, &scope, pages)?,
            })
        })
        .await
    }

    /// Deletes (soft, with history, as [`Memory::delete`]) every active memory with a source
    /// message in the session, in one transaction; the session's turns are then hidden by the
    /// log's visibility rule wherever their raw memory was deleted. Returns how many memories.
    /// An unknown session, or one of another scope, is `invalid_input` naming `session_id`.
    pub async fn delete_session(
        &self,
        scope: Scope,
        session: String,
        ctx: WritePlan,
    ) -> Result<u64> {
        check_session_id(&session)?;
        if let Some(r) = &ctx.reason {
            mnemo_core::limits::check_no_nul("reason", r)?;
        }
        self.with_store(move |s| {
            let ids = s.session_memories(&scope, &session)?;
            if ids.is_empty() {
                return Ok(0);
            }
            let items: Vec<(Scope, MemoryId)> =
                ids.into_iter().map(|id| (scope.clone(), id)).collect();
            s.delete_many(
                &Deletes {
                    items,
                    mode: DeleteMode::Soft,
                },
                &ctx,
            )
        })
        .await
    }
}
