//! Search hits as pack candidates: a raw memory's exchange with its neighbours in the session's
//! log (and the summary of the segment it sits in), any other memory as a memory line.

use super::log::candidate;
use super::Gatherer;
use mnemo_core::pack::{clipped_excerpt, excerpt, Candidate, PackItem, Reason, Section};
use mnemo_core::{Hit, MemoryKind, Message, MessageId, Result};
use std::collections::HashMap;

impl Gatherer<'_> {
    /// Candidates from search hits: raw memories as their exchanges with neighbours, the rest
    /// as memory lines.
    pub(in crate::context) fn add_hits(&mut self, hits: &[Hit]) -> Result<()> {
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
}
