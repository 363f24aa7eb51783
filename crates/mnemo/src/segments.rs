//! The hierarchy and the profile as the surfaces show them: a scope's mid-term segments with
//! their heat and its inputs ([`Memory::segments_view`]), a segment's pages
//! ([`Memory::segment_pages`]) and the user's profile with its knowledge
//! ([`Memory::profile_view`]). Messages shown pass the log's visibility rule; a segment none of
//! whose messages is visible keeps its counts but shows no summary or keywords, as context
//! packs leave it out.

use crate::sessions::{page_views, PageView};
use crate::{Memory, MemoryRecord};
use mnemo_core::tier::{heat, PageQuery};
use mnemo_core::*;
use serde::Serialize;
use std::collections::HashMap;

/// What a segment's heat is made of (see [`mnemo_core::tier::heat`]).
#[derive(Debug, Clone, Serialize)]
pub struct HeatInputs {
    pub visits: u64,
    pub length_tokens: u64,
    pub last_visit_at: Timestamp,
    /// `exp(−age / tau)`: 1 at the last visit, decaying.
    pub recency: f64,
}

/// One segment of a scope.
#[derive(Debug, Clone, Serialize)]
pub struct SegmentView {
    pub id: SegmentId,
    /// The session of its first page.
    pub session_id: Option<String>,
    /// `None` when no message of its pages is visible any more.
    pub summary: Option<String>,
    pub keywords: Vec<String>,
    pub heat: f64,
    pub heat_inputs: HeatInputs,
    /// `active` or `evicted`.
    pub state: &'static str,
    pub pages: u32,
    /// The segments holding pages that this segment's pages continue.
    pub continues: Vec<SegmentId>,
    pub created_at: Timestamp,
    /// When what its pages talk about happened (the span of their messages' event times);
    /// `None` when they state none, or when no message of its pages is visible.
    pub event_time: Option<mnemo_core::time::EventTime>,
}

/// The user's profile (dimensions with their evidence) and knowledge.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileView {
    /// The profile memory; `None` when the user has none yet.
    pub profile: Option<MemoryRecord>,
    pub dimensions: Vec<mnemo_core::profile::Dimension>,
    /// Knowledge statements about the user.
    pub user_knowledge: Vec<MemoryRecord>,
    /// Knowledge of the assistant (`"knowledge": "assistant"` in their metadata).
    pub assistant_knowledge: Vec<MemoryRecord>,
    /// Set when the scope holds more knowledge than one answer lists: list the rest with
    /// `kinds=knowledge` from this cursor.
    pub knowledge_next_cursor: Option<String>,
}

/// Knowledge statements one profile answer lists.
const KNOWLEDGE_PER_ANSWER: usize = 500;

impl Memory {
    /// The scope's segments (active and evicted), oldest first.
    pub async fn segments_view(&self, scope: Scope) -> Result<Vec<SegmentView>> {
        let weights = self.tier_config().heat;
        self.with_store(move |s| {
            let segments = s.segments(&scope, false, true)?;
            let pages = s.pages(&PageQuery {
                scope: Some(scope.clone()),
                ..PageQuery::default()
            })?;
            let segment_of: HashMap<PageId, SegmentId> = pages
                .iter()
                .filter_map(|p| p.segment.map(|g| (p.id, g)))
                .collect();
            let ids: Vec<MessageId> = pages.iter().flat_map(|p| p.message_ids.clone()).collect();
            let shown: std::collections::HashSet<MessageId> = visible_messages(
                s,
                &scope,
                s.messages_by_id(&scope, &ids)?,
                &ReadOptions::default(),
            )?
            .into_iter()
            .map(|m| m.id)
            .collect();
            let mut by_segment: HashMap<SegmentId, Vec<&tier::StoredPage>> = HashMap::new();
            for p in &pages {
                if let Some(g) = p.segment {
                    by_segment.entry(g).or_default().push(p);
                }
            }
            let now = chrono::Utc::now();
            Ok(segments
                .into_iter()
                .map(|g| {
                    let mine = by_segment.remove(&g.id).unwrap_or_default();
                    let visible = mine
                        .iter()
                        .any(|p| p.message_ids.iter().any(|m| shown.contains(m)));
                    let mut continues: Vec<SegmentId> = Vec::new();
                    for p in &mine {
                        if let Some(other) = p.continues.and_then(|c| segment_of.get(&c)) {
                            if *other != g.id && !continues.contains(other) {
                                continues.push(*other);
                            }
                        }
                    }
                    let age_h = (now - g.last_visit_at).num_milliseconds().max(0) as f64 / 3.6e6;
                    SegmentView {
                        id: g.id,
                        session_id: mine.first().and_then(|p| p.session_id.clone()),
                        summary: visible.then(|| g.summary.clone()),
                        keywords: if visible {
                            g.keywords.clone()
                        } else {
                            Vec::new()
                        },
                        heat: heat(&g, &weights, now),
                        heat_inputs: HeatInputs {
                            visits: g.visits,
                            length_tokens: g.length_tokens,
                            last_visit_at: g.last_visit_at,
                            recency: (-age_h / weights.tau_hours).exp(),
                        },
                        state: if g.evicted_at.is_some() {
                            "evicted"
                        } else {
                            "active"
                        },
                        pages: g.page_count,
                        continues,
                        created_at: g.created_at,
                        event_time: g.event_time.clone().filter(|_| visible),
                    }
                })
                .collect())
        })
        .await
    }

    /// The pages of a segment of the scope, oldest first, each with its visible messages. A
    /// segment the scope does not hold is `not_found`, as an unknown one.
    pub async fn segment_pages(&self, scope: Scope, id: SegmentId) -> Result<Vec<PageView>> {
        self.with_store(move |s| {
            if !s.segments(&scope, false, true)?.iter().any(|g| g.id == id) {
                return Err(Error::not_found("segment", id));
            }
            let pages = s.pages(&PageQuery {
                scope: Some(scope.clone()),
                segment: Some(id),
                ..PageQuery::default()
            })?;
            page_views(s, &scope, pages)
        })
        .await
    }

    /// The user's profile with its dimensions and the knowledge of the scope (the user's, and
    /// with an agent id that agent's assistant knowledge too).
    pub async fn profile_view(&self, scope: Scope) -> Result<ProfileView> {
        let profile = self.profile(scope.clone()).await?;
        let dimensions = profile
            .as_ref()
            .and_then(mnemo_core::profile::Profile::from_memory)
            .map(|p| p.dimensions)
            .unwrap_or_default();
        let page = self
            .list(crate::ListRequest {
                scope,
                kinds: Some(vec![MemoryKind::Knowledge]),
                filters: None,
                limit: KNOWLEDGE_PER_ANSWER,
                cursor: None,
                include_expired: false,
                as_of: None,
            })
            .await?;
        let (assistant_knowledge, user_knowledge): (Vec<MemoryRecord>, Vec<MemoryRecord>) =
            page.results.into_iter().partition(|m| {
                m.metadata
                    .get(mnemo_core::pipeline::KNOWLEDGE_KEY)
                    .and_then(|v| v.as_str())
                    == Some("assistant")
            });
        Ok(ProfileView {
            profile,
            dimensions,
            user_knowledge,
            assistant_knowledge,
            knowledge_next_cursor: page.next_cursor,
        })
    }
}
