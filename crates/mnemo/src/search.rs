//! Search: the query embedded, then dense and lexical candidates fused (`mnemo_core::search`).

use crate::{run_blocking, Memory};
use mnemo_core::*;
use serde::Serialize;
use std::time::Instant;

#[derive(Debug, Clone, Serialize)]
pub struct SearchResponse {
    pub results: Vec<Hit>,
    /// Milliseconds spent embedding the query (0 when a vector was given).
    pub embed_ms: f64,
    /// Milliseconds spent in retrieval and fusion.
    pub search_ms: f64,
    /// The model calls this search made (the query embedding).
    pub usage: Vec<ModelCall>,
    /// The query's temporal expression as understood: its words and the interval they name,
    /// resolved against the request's `reference_date` (absent when the query names no time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temporal: Option<mnemo_core::time::TemporalQuery>,
    /// The relations graph search used (edges with their sentence and valid time), best first;
    /// absent without graph search.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub relations: Vec<Relation>,
}

impl Memory {
    /// Resolves the query's temporal expression against its `reference_date` (now when
    /// absent), unless the caller set `temporal` or temporal search is off (`temporal_weight`
    /// 0); see [`mnemo_core::SearchRequest::temporal`].
    pub fn resolve_temporal(&self, req: &mut SearchRequest) {
        if req.temporal.is_none() && self.inner.rank.temporal_weight > 0.0 {
            let reference = req.reference_date.unwrap_or_else(chrono::Utc::now);
            req.temporal = mnemo_core::search::resolve_query(&req.query, reference);
        }
    }

    /// Hybrid search: embeds the query, then fuses dense and lexical candidates.
    pub async fn search(&self, mut req: SearchRequest) -> Result<SearchResponse> {
        req.validate()?;
        self.resolve_temporal(&mut req);
        req.graph.get_or_insert(self.inner.relations.graph_search);
        let temporal = req.temporal.clone();
        if req.mode == SearchMode::Lexical {
            return self.search_with_vector(req, Vec::new()).await;
        }
        let embedder = self.embedder().await?;
        let model = embedder.model_id().to_string();
        let (rank, store, scope) = (self.inner.rank, self.store().clone(), req.scope.clone());
        // One hop to the blocking pool: the query is embedded there, beside the lexical side
        // of the search (`hybrid_search_embedding`).
        let (results, embed_ms, total_ms) = run_blocking(move || {
            let t = Instant::now();
            let mut embed_ms = 0.0;
            let embed = || -> Result<Vec<f32>> {
                let e = Instant::now();
                // Exactly one vector, as `Memory::embed` demands: a custom embedder answering
                // with another count is a model error, not a query paired with a stray vector.
                let mut vectors = embedder.embed(&[req.query.as_str()])?;
                let vector = match (vectors.pop(), vectors.is_empty()) {
                    (Some(v), true) => v,
                    (v, _) => {
                        return Err(Error::Model {
                            reason: format!(
                                "the embedder returned {} vectors for the query",
                                vectors.len() + usize::from(v.is_some())
                            ),
                        })
                    }
                };
                embed_ms = e.elapsed().as_secs_f64() * 1e3;
                Ok(vector)
            };
            let results = hybrid_search_outcome(store.as_ref(), &req, embed, &rank)?;
            Ok((results, embed_ms, t.elapsed().as_secs_f64() * 1e3))
        })
        .await?;
        self.record_search(&scope, results.hits.iter().map(|h| &h.memory));
        Ok(SearchResponse {
            results: results.hits,
            relations: results.relations,
            embed_ms,
            // The retrieval that did not overlap the embedding.
            search_ms: (total_ms - embed_ms).max(0.0),
            usage: vec![ModelCall {
                purpose: "embed".into(),
                model,
                prompt_tokens: 0,
                completion_tokens: 0,
                ms: embed_ms,
                failed: false,
            }],
            temporal,
        })
    }

    /// Hybrid search with a query vector the caller already has.
    pub async fn search_with_vector(
        &self,
        mut req: SearchRequest,
        vector: Vec<f32>,
    ) -> Result<SearchResponse> {
        self.resolve_temporal(&mut req);
        req.graph.get_or_insert(self.inner.relations.graph_search);
        let temporal = req.temporal.clone();
        let rank = self.inner.rank;
        let store = self.store().clone();
        let scope = req.scope.clone();
        let resp = run_blocking(move || {
            let t = Instant::now();
            let out = hybrid_search_outcome(store.as_ref(), &req, || Ok(vector), &rank)?;
            Ok(SearchResponse {
                results: out.hits,
                relations: out.relations,
                embed_ms: 0.0,
                search_ms: t.elapsed().as_secs_f64() * 1e3,
                usage: Vec::new(),
                temporal,
            })
        })
        .await?;
        self.record_search(&scope, resp.results.iter().map(|h| &h.memory));
        Ok(resp)
    }

    /// The blocking form of `search_with_vector`, for callers that measure without a runtime hop.
    pub fn search_with_vector_blocking(
        &self,
        req: &SearchRequest,
        vector: &[f32],
    ) -> Result<Vec<Hit>> {
        crate::cancel::check_cancelled("the search")?;
        hybrid_search(self.store().as_ref(), req, vector, &self.inner.rank)
    }
}
