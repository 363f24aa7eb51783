//! Retrieval: the [`Retrieval`] capability (the candidate signals a hybrid search fuses) with
//! its query and candidate types.

use super::*;

/// Which records may be candidates for a search.
#[derive(Debug, Clone, Copy)]
pub struct CandidateQuery<'a> {
    pub scope: &'a Scope,
    pub kinds: Option<&'a [MemoryKind]>,
    pub filter: Option<&'a Filter>,
    pub read: ReadOptions,
    pub limit: usize,
}

/// A store-local handle of a memory with one signal's score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    pub key: i64,
    pub score: f32,
}

/// Search candidates: dense, lexical and entity signals, exact scores, and loading hits.
pub trait Retrieval: Send + Sync {
    /// Nearest memories to `vector` by cosine similarity, best first.
    fn dense_candidates(
        &self,
        query: &CandidateQuery<'_>,
        vector: &[f32],
    ) -> Result<Vec<Candidate>>;
    /// Best lexical matches of any of `terms`, best first, by the backend's own relevance
    /// ranking (BM25, or as close to it as the backend's text search allows); scores are
    /// positive, larger is better.
    fn lexical_candidates(
        &self,
        query: &CandidateQuery<'_>,
        terms: &[String],
    ) -> Result<Vec<Candidate>>;
    /// Exact cosine similarity of the given memories to `vector` (for fusing lexical-only hits).
    /// `keys` come from candidates of `query`; a store that reads them with a database query
    /// keeps `query.scope` in it (no request reads across owners; a key of another owner then
    /// scores nothing).
    fn vector_scores(
        &self,
        query: &CandidateQuery<'_>,
        keys: &[i64],
        vector: &[f32],
    ) -> Result<Vec<Candidate>>;
    /// Loads candidates, re-checking scope and visibility; unknown or hidden keys are skipped.
    fn fetch(&self, query: &CandidateQuery<'_>, keys: &[i64]) -> Result<Vec<(i64, Memory)>>;
    /// Memories linked to an entity of the scope that equals or nearly matches one of `names`
    /// (normalised), best first. A candidate's score in [0, 1] is how informative the names it
    /// matched are: the sum over matched names of `idf = ln(1 + (N − df + 0.5)/(df + 0.5))`
    /// (N memories the scope indexes, df the memories linked to the entity) divided by
    /// `ln(1 + N)`, capped at 1; a name on most memories adds little, a rare one nearly 1.
    ///
    /// At most `query.limit` candidates. `pooled` are keys the other signals already found: a
    /// rare entity's memories are all considered, while an entity linked to more memories than
    /// a backend cares to walk may be scored on the pooled keys only, so the cost follows the
    /// pool, not how common the name is.
    fn entity_candidates(
        &self,
        query: &CandidateQuery<'_>,
        names: &[String],
        pooled: &[i64],
    ) -> Result<Vec<Candidate>>;
}
