//! A session's log as units: each visible message one `speaker: text` unit, placed in the page
//! that holds it, with the link from a page's first unit to the page it continues; read once
//! per session. Also the candidate a unit makes.

use super::{Gatherer, SessionLog, Unit};
use crate::context::SESSION_READ_LIMIT;
use mnemo_core::pack::{Block, Candidate, PackItem, Reason, Section};
use mnemo_core::{Message, MessageId, PageQuery, PageTier, ReadOptions, Result, StoredPage};
use std::collections::HashMap;

impl Gatherer<'_> {
    /// Reads a session's messages and pages into its log of exchanges (once per session).
    pub(super) fn load(&mut self, session: &str) -> Result<()> {
        if self.logs.contains_key(session) {
            return Ok(());
        }
        // The log's visibility rule: a turn whose raw memory is deleted, expired or erased is
        // not a unit (so never a neighbour, never in the window, never the session's header).
        let messages = mnemo_core::visible_messages(
            self.store,
            self.scope,
            self.store
                .messages(self.scope, Some(session), SESSION_READ_LIMIT)?,
            &ReadOptions::default(),
        )?;
        let pages = self.store.pages(&PageQuery {
            scope: Some(self.scope.clone()),
            session: Some(Some(session.to_string())),
            ..PageQuery::default()
        })?;
        let log = session_log(session, &messages, &pages);
        self.logs.insert(session.to_string(), log);
        Ok(())
    }
}

fn session_log(session: &str, messages: &[Message], pages: &[StoredPage]) -> SessionLog {
    let page_of: HashMap<MessageId, usize> = pages
        .iter()
        .enumerate()
        .flat_map(|(i, p)| p.message_ids.iter().map(move |m| (*m, i)))
        .collect();
    let mut units: Vec<Unit> = Vec::new();
    let mut by_message = HashMap::new();
    // Each page's first and last unit, for `continues`.
    let mut span: HashMap<usize, (usize, usize)> = HashMap::new();
    for m in messages {
        let name = m.name.as_deref().unwrap_or(m.role.as_str());
        let page = page_of.get(&m.id).map(|&p| (p, &pages[p]));
        let at = units.len();
        units.push(Unit {
            key: m.id.to_string(),
            kind: if page.is_some() { "page" } else { "turn" },
            id: page.map_or_else(|| m.id.to_string(), |(_, p)| p.id.to_string()),
            speaker: format!("{name}: "),
            content: m.content.trim().to_string(),
            message_ids: vec![m.id],
            at: page.map_or(m.created_at, |(_, p)| p.at),
            segment: page
                .filter(|(_, p)| p.tier == PageTier::Mid)
                .and_then(|(_, p)| p.segment),
            continues: None,
        });
        if let Some((p, _)) = page {
            span.entry(p).and_modify(|s| s.1 = at).or_insert((at, at));
        }
        by_message.insert(m.id, at);
    }
    let page_index: HashMap<String, usize> = pages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.id.to_string(), i))
        .collect();
    for (i, p) in pages.iter().enumerate() {
        let earlier = p.continues.and_then(|c| page_index.get(&c.to_string()));
        if let (Some(&(first, _)), Some(e)) = (span.get(&i), earlier) {
            units[first].continues = span.get(e).map(|s| s.1);
        }
    }
    let first = messages.first().map(|m| m.created_at);
    let block = Block {
        key: session.to_string(),
        header: match first {
            // The weekday too: "the Friday before" is then read off the header.
            Some(t) => format!("[{}]", mnemo_core::pack::dates::day(t)),
            None => format!("[{session}]"),
        },
        order: first.map_or(0, |t| t.timestamp_millis()),
    };
    SessionLog {
        units,
        by_message,
        block,
    }
}

pub(super) fn candidate(
    u: &Unit,
    text: String,
    section: Section,
    score: Option<f32>,
    value: f32,
    reason: Reason,
    from: Option<String>,
) -> Candidate {
    Candidate {
        section,
        item: PackItem {
            kind: u.kind.into(),
            id: u.id.clone(),
            text,
            tokens: 0,
            reason,
            score,
            from,
            message_ids: u.message_ids.clone(),
            at: Some(u.at),
            event_time: None,
        },
        value,
        block: None,
        order: 0,
        verbatim: false,
        full: None,
    }
}
