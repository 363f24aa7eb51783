//! Turning the store's pages, message log, segments and search hits into pack candidates.
//!
//! The unit a pack chooses from a conversation is one logged message, shown as a
//! `speaker: text` line: an exchange costs what its useful turns cost, not the whole page. A
//! message a stored page holds is reported as (part of) that page — consecutive lines of one
//! page are one item — and a message no page holds (logged before the hierarchy existed, or by
//! adds that make no pages) as a `turn`. Each session touched is read once (its messages and
//! pages), so neighbours are found by position in the session's log.
//!
//! This file holds the gatherer and the short-term window; the children add the other
//! candidates: `hits` (search hits as exchanges or memory lines), `segments` (segment
//! summaries) and `log` (a session's log read into units).

mod hits;
mod log;
mod segments;

use self::log::candidate;
use super::ContextTuning;
use mnemo_core::pack::{Block, Candidate, ContextPack, Reason, Section};
use mnemo_core::{
    Error, Memory, MessageId, PageQuery, PageTier, Result, Scope, Segment, SegmentId, Store,
};
use std::collections::{HashMap, HashSet};

/// What a pack showed, for usage bookkeeping.
pub(crate) struct Shown {
    pub scope: Scope,
    pub memories: Vec<Memory>,
    pub segments: Vec<SegmentId>,
}

/// One exchange of a session's log.
struct Unit {
    /// The message's id: what makes a unit unique.
    key: String,
    /// `page` or `turn`, and the page's or the message's id.
    kind: &'static str,
    id: String,
    /// `speaker: ` and the message's content.
    speaker: String,
    content: String,
    message_ids: Vec<MessageId>,
    at: mnemo_core::Timestamp,
    segment: Option<SegmentId>,
    /// For a page's first message: the unit (last message) of the page it continues.
    continues: Option<usize>,
}

struct SessionLog {
    units: Vec<Unit>,
    by_message: HashMap<MessageId, usize>,
    block: Block,
}

pub(crate) struct Gatherer<'a> {
    /// The query's terms, for excerpts.
    terms: Vec<String>,
    store: &'a dyn Store,
    scope: &'a Scope,
    tuning: &'a ContextTuning,
    logs: HashMap<String, SessionLog>,
    /// Exchange candidates by id; the best value wins.
    exchanges: HashMap<String, Candidate>,
    /// Ids already in the short-term window (not repeated as excerpts).
    window: HashSet<String>,
    memories: Vec<Candidate>,
    /// Hits represented by each exchange or memory item id.
    hits_of: HashMap<String, Vec<Memory>>,
    segments: Option<Vec<Segment>>,
    summaries: HashMap<SegmentId, Candidate>,
    segment_of: HashMap<String, SegmentId>,
    /// Whether each segment asked about has a visible page (see `segment_visible`).
    segment_seen: HashMap<SegmentId, bool>,
}

impl<'a> Gatherer<'a> {
    pub(super) fn new(
        store: &'a dyn Store,
        scope: &'a Scope,
        tuning: &'a ContextTuning,
        query: &str,
    ) -> Self {
        Self {
            terms: mnemo_core::text::query_terms(query),
            store,
            scope,
            tuning,
            logs: HashMap::new(),
            exchanges: HashMap::new(),
            window: HashSet::new(),
            memories: Vec::new(),
            hits_of: HashMap::new(),
            segments: None,
            summaries: HashMap::new(),
            segment_of: HashMap::new(),
            segment_seen: HashMap::new(),
        }
    }

    /// The current session's short-term window: its short-term pages, else its last `capacity`
    /// logged turns. `invalid_input` naming `session_id` when the scope has no such session.
    pub(super) fn window(&mut self, session: &str, capacity: usize) -> Result<Vec<Candidate>> {
        if self
            .store
            .messages(self.scope, Some(session), 1)?
            .is_empty()
        {
            return Err(Error::invalid(
                "session_id",
                format!("the scope has no session {session:?}"),
            ));
        }
        self.load(session)?;
        let log = &self.logs[session];
        let short: HashSet<String> = self
            .store
            .pages(&PageQuery {
                scope: Some(self.scope.clone()),
                session: Some(Some(session.to_string())),
                tier: Some(PageTier::Short),
                ..PageQuery::default()
            })?
            .into_iter()
            .map(|p| p.id.to_string())
            .collect();
        let chosen: Vec<usize> = if short.is_empty() {
            (log.units.len().saturating_sub(capacity)..log.units.len()).collect()
        } else {
            (0..log.units.len())
                .filter(|&i| short.contains(&log.units[i].id))
                .collect()
        };
        let n = chosen.len();
        let mut out = Vec::new();
        for (k, i) in chosen.into_iter().enumerate() {
            let u = &log.units[i];
            self.window.insert(u.key.clone());
            // Above any match, the newest highest: the conversation in progress comes first.
            let value = 2.0 - 0.01 * (n - 1 - k) as f32;
            let text = format!("{}{}", u.speaker, u.content);
            let mut c = candidate(
                u,
                text,
                Section::ShortTerm,
                None,
                value,
                Reason::Recent,
                None,
            );
            c.order = i as i64;
            out.push(c);
        }
        Ok(out)
    }

    /// Every candidate gathered besides the window.
    pub(super) fn candidates(&self) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = self.exchanges.values().cloned().collect();
        out.extend(self.summaries.values().cloned());
        out.extend(self.memories.iter().cloned());
        // Deterministic input order (the maps iterate in any order).
        out.sort_by(|a, b| {
            (&a.item.id, a.order, &a.item.message_ids).cmp(&(
                &b.item.id,
                b.order,
                &b.item.message_ids,
            ))
        });
        out
    }

    /// What `pack` showed: the hits behind its items, and the segments of its pages and
    /// summaries.
    pub(super) fn shown(&self, pack: &ContextPack) -> Shown {
        let mut memories = Vec::new();
        let mut segments: Vec<SegmentId> = Vec::new();
        for item in pack.sections.iter().flat_map(|s| &s.items) {
            if let Some(hits) = self.hits_of.get(&item.id) {
                memories.extend(hits.iter().cloned());
            }
            let seg = match item.kind.as_str() {
                "segment" => self
                    .summaries
                    .iter()
                    .find(|(_, c)| c.item.id == item.id)
                    .map(|(s, _)| *s),
                _ => self.segment_of.get(&item.id).copied(),
            };
            if let Some(s) = seg.filter(|s| !segments.contains(s)) {
                segments.push(s);
            }
        }
        Shown {
            scope: self.scope.clone(),
            memories,
            segments,
        }
    }
}
