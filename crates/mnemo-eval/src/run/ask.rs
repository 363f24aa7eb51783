//! Steps 2 and 3, per question: search mnemo and score its retrieval against the evidence
//! turns (with, as asked, context packs, the `compare_store` engine, the BM25-alone and
//! dense-alone baselines, and the notes store with and without link expansion); then QA, the
//! answer model on the top memories, judged.

use super::engines::Engines;
use super::expand::Expansion;
use super::ingest::TurnMaps;
use super::{covered, unscored, EvalOptions, Tally};
use crate::locomo::Question;
use crate::metrics::score_question;
use crate::qa::answer_and_score;
use anyhow::{Context, Result};
use mnemo_core::pack::TokenCounter;
use mnemo_core::{Hit, Scope, SearchMode, SearchRequest};
use std::time::Instant;

/// What asking one conversation's questions needs.
pub(super) struct Asker<'a> {
    pub opts: &'a EvalOptions,
    pub engines: &'a Engines,
    pub scope: &'a Scope,
    pub turns: &'a TurnMaps,
    /// Counts the tokens of what a search returns (cl100k).
    pub bpe: &'a tiktoken_rs::CoreBPE,
    /// Counts pack budgets.
    pub counter: &'a dyn TokenCounter,
    /// What a question's relative time is read against: the conversation's last session.
    pub reference: Option<mnemo_core::Timestamp>,
}

impl Asker<'_> {
    /// Asks question `q` of every engine and scores the answers into `tally`.
    pub(super) async fn question(&self, q: &Question, tally: &mut Tally) -> Result<()> {
        let opts = self.opts;
        tally.counts.questions += 1;
        *tally
            .counts
            .per_category
            .entry(q.category.to_string())
            .or_default() += 1;
        let depth = opts.top_k.max(super::SCORED_DEPTH);
        let mut req = SearchRequest::new(self.scope.clone(), q.question.clone(), depth);
        req.reference_date = self.reference;
        let t = Instant::now();
        let resp = self.engines.mnemo.search(req.clone()).await?;
        tally.search_ms.push(t.elapsed().as_secs_f64() * 1e3);
        let off = self.temporal_off(&req, &resp).await?;
        let hits = resp.results;
        let top: &[Hit] = &hits[..hits.len().min(opts.top_k)];
        tally.returned += top.len();
        for h in top {
            tally.tokens += self.bpe.encode_ordinary(&h.memory.text).len();
            tally.covered_turns += h
                .memory
                .sources
                .iter()
                .filter(|m| self.turns.mnemo.contains_key(m))
                .count();
        }
        tally.returned_total += 1;

        match score_question(&q.evidence, &covered(&hits, &self.turns.mnemo)) {
            Some(s) => {
                tally.counts.questions_with_evidence += 1;
                tally.mnemo.push(q.category, &s);
                let s_off = score_question(&q.evidence, &covered(&off, &self.turns.mnemo))
                    .ok_or_else(unscored)?;
                tally.temporal_off.push(q.category, &s_off);
                self.others(q, &req, tally).await?;
            }
            None => tally.counts.questions_without_evidence += 1,
        }
        self.answer(q, top, tally).await
    }

    /// The same search with temporal search off: the same hits when the question names no
    /// time (the ranking is then identical by construction), else a search without the
    /// resolved range.
    async fn temporal_off(
        &self,
        req: &SearchRequest,
        on: &mnemo::SearchResponse,
    ) -> Result<Vec<Hit>> {
        if on.temporal.is_none() {
            return Ok(on.results.clone());
        }
        let engine = self.engines.mnemo.clone();
        let vector = engine
            .embed(vec![req.query.clone()])
            .await?
            .pop()
            .ok_or_else(unscored)?;
        let off = SearchRequest {
            temporal: None,
            reference_date: None,
            ..req.clone()
        };
        // The blocking form does not resolve the query's time: `temporal` stays off.
        let hits =
            tokio::task::spawn_blocking(move || engine.search_with_vector_blocking(&off, &vector))
                .await??;
        Ok(hits)
    }

    /// A question with evidence asked of everything else the run compares mnemo with.
    async fn others(&self, q: &Question, req: &SearchRequest, tally: &mut Tally) -> Result<()> {
        let (opts, engines) = (self.opts, self.engines);
        if !opts.pack_budgets.is_empty() {
            tally
                .pack
                .ask(
                    &engines.mnemo,
                    self.scope,
                    &q.question,
                    &q.evidence,
                    &self.turns.mnemo,
                    self.counter,
                    opts.pack_tuning,
                )
                .await?;
        }
        if let Some(compare) = &engines.compare {
            let t = Instant::now();
            let hits = compare.search(req.clone()).await?.results;
            tally
                .compare_search_ms
                .push(t.elapsed().as_secs_f64() * 1e3);
            let s = score_question(&q.evidence, &covered(&hits, &self.turns.compare))
                .ok_or_else(unscored)?;
            tally.compare.push(q.category, &s);
        }
        if let Some(plain) = &engines.plain {
            for (mode, baseline) in [
                (SearchMode::Lexical, &mut tally.bm25),
                (SearchMode::Dense, &mut tally.dense),
            ] {
                let req = SearchRequest {
                    mode,
                    ..req.clone()
                };
                let hits = plain.search(req).await?.results;
                let s = score_question(&q.evidence, &covered(&hits, &self.turns.plain))
                    .ok_or_else(unscored)?;
                baseline.push(q.category, &s);
            }
        }
        if let (Some(notes), Some(expand)) = (&engines.notes, opts.notes) {
            let hits = notes.search(req.clone()).await?.results;
            let s = score_question(&q.evidence, &covered(&hits, &self.turns.notes))
                .ok_or_else(unscored)?;
            tally.notes.push(q.category, &s);
            let vector = notes.embed(vec![q.question.clone()]).await?;
            let vector = vector.first().ok_or_else(unscored)?;
            let expansion = Expansion {
                engine: notes,
                expand,
                rank: &opts.rank,
                top_k: opts.top_k,
                turn_of: &self.turns.notes,
            };
            let (s, direct, linked) = expansion.scores(req, vector, &q.evidence)?;
            tally.linked_in_top += linked;
            tally.expanded_questions += 1;
            tally.expanded.push(q.category, &s);
            tally.per_request.push(q.category, &direct);
        }
        Ok(())
    }

    /// QA: the answer model on mnemo's `top` memories, judged (when answer models are set).
    async fn answer(&self, q: &Question, top: &[Hit], tally: &mut Tally) -> Result<()> {
        if let Some(models) = &self.opts.qa {
            let (models, q2, top) = (models.clone(), q.clone(), top.to_vec());
            let outcome = tokio::task::spawn_blocking(move || {
                answer_and_score(&models, q2.category, &q2.question, &q2.answer, &top)
            })
            .await?
            .with_context(|| format!("answering {:?}", q.question))?;
            tally.qa.push(outcome);
        }
        Ok(())
    }
}
