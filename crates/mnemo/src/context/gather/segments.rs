//! Segment summaries as pack candidates: reached from a placed exchange, matched by the query
//! vector, or the hottest without one; shown only while one of their turns is visible.

use super::Gatherer;
use mnemo_core::pack::{Candidate, PackItem, Reason, Section};
use mnemo_core::tier::{cosine, heat};
use mnemo_core::{HeatWeights, MessageId, PageQuery, ReadOptions, Result, Segment, SegmentId};

impl Gatherer<'_> {
    /// The summary of segment `s`, reached from page `from` with `value`.
    pub(super) fn summary(&mut self, s: SegmentId, from: &str, value: f32) -> Result<()> {
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
    pub(in crate::context) fn add_segments(&mut self, vector: Option<&[f32]>) -> Result<()> {
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
