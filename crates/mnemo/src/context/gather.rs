//! Turning the store's pages, message log, segments and search hits into pack candidates.
//!
//! The unit a pack chooses from a conversation is one logged message, shown as a
//! `speaker: text` line: an exchange costs what its useful turns cost, not the whole page. A
//! message a stored page holds is reported as (part of) that page — consecutive lines of one
//! page are one item — and a message no page holds (logged before the hierarchy existed, or by
//! adds that make no pages) as a `turn`. Each session touched is read once (its messages and
//! pages), so neighbours are found by position in the session's log.

use super::{ContextTuning, SESSION_READ_LIMIT};
use mnemo_core::pack::{
    clipped_excerpt, excerpt, Block, Candidate, ContextPack, PackItem, Reason, Section,
};
use mnemo_core::tier::{cosine, heat};
use mnemo_core::{
    Error, HeatWeights, Hit, Memory, MemoryKind, Message, MessageId, PageQuery, PageTier,
    ReadOptions, Result, Scope, Segment, SegmentId, Store, StoredPage,
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

    /// Candidates from search hits: raw memories as their exchanges with neighbours, the rest
    /// as memory lines.
    pub(super) fn add_hits(&mut self, hits: &[Hit]) -> Result<()> {
        let sources: Vec<MessageId> = hits
            .iter()
            .filter(|h| h.memory.kind == MemoryKind::Raw)
            .flat_map(|h| h.memory.sources.iter().copied())
            .collect();
        let messages: HashMap<MessageId, Message> = self
            .store
            .messages_by_id(self.scope, &sources)?
            .into_iter()
            .map(|m| (m.id, m))
            .collect();
        for (rank, h) in hits.iter().enumerate() {
            let session = match h.memory.kind {
                MemoryKind::Raw => h
                    .memory
                    .sources
                    .first()
                    .and_then(|m| messages.get(m))
                    .and_then(|m| m.session_id.clone()),
                _ => None,
            };
            let placed = match session {
                Some(s) => self.place(&s, h)?,
                None => false,
            };
            if !placed {
                self.memory_line(h, rank);
            }
        }
        Ok(())
    }

    /// Puts a raw hit's exchange and its neighbours in; `false` when its message is not in
    /// its session's log (then it is shown as a memory line).
    fn place(&mut self, session: &str, h: &Hit) -> Result<bool> {
        self.load(session)?;
        let log = &self.logs[session];
        let Some(&at) = h.memory.sources.first().and_then(|m| log.by_message.get(m)) else {
            return Ok(false);
        };
        let score = h.score.max(0.0);
        let origin = log.units[at].id.clone();
        let origin_key = log.units[at].key.clone();
        self.hits_of
            .entry(origin.clone())
            .or_default()
            .push(h.memory.clone());
        let mut reached = vec![(at, score, Reason::Matched, None)];
        let t = self.tuning;
        for d in 1..=t.neighbours {
            let v = score * t.neighbour_decay.powi(d as i32);
            for i in [at.checked_sub(d), Some(at + d)].into_iter().flatten() {
                if i < log.units.len() {
                    reached.push((i, v, Reason::Linked, Some(origin.clone())));
                }
            }
        }
        let v = score * t.neighbour_decay;
        if let Some(p) = log.units[at].continues {
            reached.push((p, v, Reason::Linked, Some(origin.clone())));
        }
        for (i, u) in log.units.iter().enumerate() {
            if u.continues == Some(at) && u.key != origin_key {
                reached.push((i, v, Reason::Linked, Some(origin.clone())));
            }
        }
        let mut summaries = Vec::new();
        for (i, value, reason, from) in reached {
            let u = &log.units[i];
            if self.window.contains(&u.key) {
                continue;
            }
            let score = (reason == Reason::Matched).then_some(score);
            let text = match t.excerpt_words {
                Some(n) if t.clip => {
                    format!(
                        "{}{}",
                        u.speaker,
                        clipped_excerpt(&u.content, &self.terms, n)
                    )
                }
                Some(n) => format!("{}{}", u.speaker, excerpt(&u.content, &self.terms, n)),
                None => format!("{}{}", u.speaker, u.content),
            };
            let whole = format!("{}{}", u.speaker, u.content);
            let mut c = candidate(u, text, Section::Segments, score, value, reason, from);
            if c.item.text != whole {
                c.full = Some(whole);
            }
            c.block = Some(log.block.clone());
            c.order = i as i64;
            if let Some(s) = u.segment {
                self.segment_of.insert(u.id.clone(), s);
                summaries.push((s, u.id.clone(), value * t.summary_weight));
            }
            match self.exchanges.get(&u.key) {
                Some(old) if old.value >= c.value => {}
                _ => {
                    self.exchanges.insert(u.key.clone(), c);
                }
            }
        }
        for (s, from, value) in summaries {
            self.summary(s, &from, value)?;
        }
        Ok(true)
    }

    fn memory_line(&mut self, h: &Hit, rank: usize) {
        let m = &h.memory;
        let id = m.id.to_string();
        self.hits_of.entry(id.clone()).or_default().push(m.clone());
        self.memories.push(Candidate {
            section: Section::Memories,
            item: PackItem {
                kind: "memory".into(),
                id,
                text: m.text.trim().to_string(),
                tokens: 0,
                reason: Reason::Matched,
                score: Some(h.score),
                from: None,
                message_ids: m.sources.clone(),
                at: Some(m.created_at),
                event_time: m.event_time.clone(),
            },
            value: h.score.max(0.0),
            block: None,
            order: rank as i64,
            verbatim: m.kind == MemoryKind::Raw,
            full: None,
        });
    }

    /// The summary of segment `s`, reached from page `from` with `value`.
    fn summary(&mut self, s: SegmentId, from: &str, value: f32) -> Result<()> {
        if value <= 0.0 || self.summaries.get(&s).is_some_and(|c| c.value >= value) {
            return Ok(());
        }
        let Some(seg) = self.segments()?.iter().find(|x| x.id == s).cloned() else {
            return Ok(());
        };
        if !self.segment_visible(s)? {
            return Ok(());
        }
        if let Some(mut c) = summary_candidate(&seg, value, Reason::Linked) {
            c.item.from = Some(from.to_string());
            self.summaries.insert(s, c);
        }
        Ok(())
    }

    /// Segments matched by the query vector (cosine ≥ 0.4), or without a query the three
    /// hottest.
    pub(super) fn add_segments(&mut self, vector: Option<&[f32]>) -> Result<()> {
        let w = self.tuning.summary_weight;
        if w <= 0.0 {
            return Ok(());
        }
        let now = chrono::Utc::now();
        let mut found: Vec<(Segment, f32, Reason)> = match vector {
            Some(v) => self
                .segments()?
                .iter()
                .map(|s| (s.clone(), cosine(v, &s.vector), Reason::Matched))
                .filter(|(_, c, _)| *c >= 0.4)
                .collect(),
            None => {
                let mut all: Vec<(Segment, f64)> = self
                    .segments()?
                    .iter()
                    .map(|s| (s.clone(), heat(s, &HeatWeights::default(), now)))
                    .collect();
                all.sort_by(|a, b| b.1.total_cmp(&a.1));
                all.into_iter()
                    .take(3)
                    .map(|(s, _)| (s, 0.5, Reason::Hot))
                    .collect()
            }
        };
        for (seg, score, reason) in found.drain(..) {
            if !self.segment_visible(seg.id)? {
                continue;
            }
            let value = score * w;
            if self
                .summaries
                .get(&seg.id)
                .is_some_and(|c| c.value >= value)
            {
                continue;
            }
            if let Some(mut c) = summary_candidate(&seg, value, reason) {
                c.item.score = (reason == Reason::Matched).then_some(score);
                self.summaries.insert(seg.id, c);
            }
        }
        Ok(())
    }

    /// Whether a segment's summary may be shown: while one of its pages still has a message
    /// the log's visibility rule shows (a summary of turns that are all deleted, expired or
    /// erased speaks for nothing the reader may see).
    fn segment_visible(&mut self, s: SegmentId) -> Result<bool> {
        if let Some(&v) = self.segment_seen.get(&s) {
            return Ok(v);
        }
        let ids: Vec<MessageId> = self
            .store
            .pages(&PageQuery {
                scope: Some(self.scope.clone()),
                segment: Some(s),
                ..PageQuery::default()
            })?
            .into_iter()
            .flat_map(|p| p.message_ids)
            .collect();
        let messages = self.store.messages_by_id(self.scope, &ids)?;
        let v = !mnemo_core::visible_messages(
            self.store,
            self.scope,
            messages,
            &ReadOptions::default(),
        )?
        .is_empty();
        self.segment_seen.insert(s, v);
        Ok(v)
    }

    fn segments(&mut self) -> Result<&Vec<Segment>> {
        if self.segments.is_none() {
            self.segments = Some(self.store.segments(self.scope, false, false)?);
        }
        Ok(self.segments.get_or_insert_with(Vec::new))
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

    /// Reads a session's messages and pages into its log of exchanges (once per session).
    fn load(&mut self, session: &str) -> Result<()> {
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

fn candidate(
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

fn summary_candidate(seg: &Segment, value: f32, reason: Reason) -> Option<Candidate> {
    let text = seg.summary.trim();
    (!text.is_empty()).then(|| Candidate {
        section: Section::Segments,
        item: PackItem {
            kind: "segment".into(),
            id: seg.id.to_string(),
            text: text.to_string(),
            tokens: 0,
            reason,
            score: None,
            from: None,
            message_ids: Vec::new(),
            at: Some(seg.updated_at),
            event_time: seg.event_time.clone(),
        },
        value,
        block: None,
        order: seg.created_at.timestamp_millis(),
        verbatim: false,
        full: None,
    })
}
