//! The timeline: a scope's memories in the order their events happened (event time, not the
//! order they were learnt), each with the turn it was read from, so "what happened in May?" is
//! answered by reading, not by searching. Every surface (REST `GET /v1/timeline`, MCP
//! `timeline`, CLI `mnemo timeline`, Python `timeline()`, the inspector) calls [`Memory::timeline`].

use crate::Memory;
use mnemo_core::*;
use serde::Serialize;
use std::collections::HashMap;

/// One page of a timeline, as the caller asks for it.
#[derive(Debug, Clone)]
pub struct TimelineRequest {
    pub scope: Scope,
    /// Events overlapping `[from, to)`; either end open.
    pub from: Option<Timestamp>,
    pub to: Option<Timestamp>,
    pub kinds: Option<Vec<MemoryKind>>,
    /// At most this many entries (1 to 1000).
    pub limit: usize,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl TimelineRequest {
    /// The whole timeline of `scope`, 100 entries a page.
    pub fn new(scope: Scope) -> Self {
        Self {
            scope,
            from: None,
            to: None,
            kinds: None,
            limit: 100,
            cursor: None,
        }
    }
}

/// One event: the memory (with its `event_time`) and the turn it was said in.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineEntry {
    #[serde(flatten)]
    pub memory: mnemo_core::Memory,
    /// The text of its first source message, as the log shows it (absent when it has none, or
    /// the log hides it: deleted or erased).
    pub source_text: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimelinePage {
    pub results: Vec<TimelineEntry>,
    pub next_cursor: Option<String>,
}

impl Memory {
    /// A page of the scope's timeline (see the module docs). A range whose `from` is not
    /// before its `to` is invalid input naming `from`.
    pub async fn timeline(&self, req: TimelineRequest) -> Result<TimelinePage> {
        let q = TimelineQuery {
            range: EventRange::new("from", req.from, req.to)?,
            scope: req.scope,
            kinds: req.kinds,
            read: ReadOptions::default(),
            limit: req.limit,
            cursor: req.cursor,
        };
        let scope = q.scope.clone();
        let page = self
            .with_store(move |s| {
                let page = s.timeline(&q)?;
                let firsts: Vec<MessageId> = page
                    .results
                    .iter()
                    .filter_map(|m| m.sources.first().copied())
                    .collect();
                let said =
                    visible_messages(s, &q.scope, s.messages_by_id(&q.scope, &firsts)?, &q.read)?;
                let text: HashMap<MessageId, String> =
                    said.into_iter().map(|m| (m.id, m.content)).collect();
                let results = page
                    .results
                    .into_iter()
                    .map(|m| TimelineEntry {
                        source_text: m.sources.first().and_then(|id| text.get(id).cloned()),
                        memory: m,
                    })
                    .collect();
                Ok(TimelinePage {
                    results,
                    next_cursor: page.next_cursor,
                })
            })
            .await?;
        self.record_reads(&scope, page.results.iter().map(|e| &e.memory));
        Ok(page)
    }
}
