//! Scoring with link expansion (the notes store): linked results merged with direct hits by
//! score, against the same searches' direct hits alone as the matched control.

use super::{covered, unscored};
use crate::metrics::{score_question, QuestionScores};
use anyhow::Result;
use mnemo::Memory;
use mnemo_core::{Hit, MessageId, RankParams, SearchRequest, Via};
use std::collections::HashMap;

/// Hits of a link-expanded search in one ranking by score (direct hits and linked results, see
/// `mnemo_core::search::linked_score`), cut to `depth`, so linked results count among the
/// `depth` memories returned.
pub fn merged_by_score(mut hits: Vec<Hit>, depth: usize) -> Vec<Hit> {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score));
    hits.truncate(depth);
    hits
}

/// The searches of one notes engine with link expansion.
pub(super) struct Expansion<'a> {
    pub engine: &'a Memory,
    /// Linked results per hit.
    pub expand: usize,
    pub rank: &'a RankParams,
    /// The cut-off whose linked results are counted (the answer model's `top_k`).
    pub top_k: usize,
    /// The engine's stored message → turn id.
    pub turn_of: &'a HashMap<MessageId, String>,
}

impl Expansion<'_> {
    /// A question's scores with link expansion, at an equal number of returned memories: for each
    /// cut-off k, the search a caller asking for k memories makes (`top_k` = k, with expansion),
    /// its direct hits and linked results merged by score and cut at k; and, as the matched
    /// control, the same searches' direct hits alone (what a caller asking for k memories gets
    /// without expansion). Also how many linked results the `top_k` list holds.
    pub(super) fn scores(
        &self,
        req: &SearchRequest,
        vector: &[f32],
        evidence: &[String],
    ) -> Result<(QuestionScores, QuestionScores, usize)> {
        let mut out = QuestionScores::default();
        let mut direct_out = QuestionScores::default();
        let mut linked = 0;
        let mut ks: Vec<usize> = crate::metrics::KS.to_vec();
        if !ks.contains(&self.top_k) {
            ks.push(self.top_k);
        }
        for k in ks {
            let wide = SearchRequest {
                top_k: k,
                expand_links: self.expand,
                ..req.clone()
            };
            let hits = mnemo_core::search::hybrid_search(
                self.engine.store().as_ref(),
                &wide,
                vector,
                self.rank,
            )?;
            // The direct hits come first, in rank order (expansion appends the linked results):
            // without expansion the search returns these.
            let direct_n = hits
                .iter()
                .take_while(|h| h.via.as_ref().and_then(Via::link).is_none())
                .count();
            let direct = covered(&hits[..direct_n], self.turn_of);
            let hits = merged_by_score(hits, k);
            if k == self.top_k {
                linked = hits
                    .iter()
                    .filter(|h| h.via.as_ref().and_then(Via::link).is_some())
                    .count();
            }
            for (turns, out) in [
                (covered(&hits, self.turn_of), &mut out),
                (direct, &mut direct_out),
            ] {
                let s = score_question(evidence, &turns).ok_or_else(unscored)?;
                if let Some(i) = crate::metrics::KS.iter().position(|x| *x == k) {
                    out.recall[i] = s.recall[i];
                    out.hit[i] = s.hit[i];
                    if k == *crate::metrics::KS.last().unwrap_or(&k) {
                        out.reciprocal_rank = s.reciprocal_rank;
                    }
                }
            }
        }
        Ok((out, direct_out, linked))
    }
}
