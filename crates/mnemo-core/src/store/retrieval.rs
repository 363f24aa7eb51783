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
    /// Exact cosine similarity of the memories `scoring.keys` to `scoring.vector` (for fusing
    /// lexical-only hits). The keys come from candidates of `scoring.query`; a store that reads
    /// them with a database query keeps the query's scope in it (no request reads across
    /// owners; a key of another owner then scores nothing).
    fn vector_scores(&self, scoring: &ScoreQuery<'_>) -> Result<Vec<Candidate>>;
    /// Loads candidates, re-checking scope and visibility; unknown or hidden keys are skipped.
    fn fetch(&self, query: &CandidateQuery<'_>, keys: &[i64]) -> Result<Vec<(i64, Memory)>>;
    /// Memories linked to an entity of the scope that equals or nearly matches one of
    /// `entities.names` (normalised), best first. A candidate's score in [0, 1] is how informative the names it
    /// matched are: the sum over matched names of `idf = ln(1 + (N − df + 0.5)/(df + 0.5))`
    /// (N memories the scope indexes, df the memories linked to the entity) divided by
    /// `ln(1 + N)`, capped at 1; a name on most memories adds little, a rare one nearly 1.
    ///
    /// At most `entities.query.limit` candidates, none without a read when the query can find
    /// none ([`EntityQuery::finds_nothing`]). `entities.pooled` are keys the other signals
    /// already found: a rare entity's memories are all considered, while an entity linked to
    /// more memories than a backend cares to walk may be scored on the pooled keys only, so the
    /// cost follows the pool, not how common the name is.
    fn entity_candidates(&self, entities: &EntityQuery<'_>) -> Result<Vec<Candidate>>;
}

/// What [`Retrieval::vector_scores`] scores: the memories `keys` (from candidates of `query`)
/// against `vector`.
#[derive(Debug, Clone, Copy)]
pub struct ScoreQuery<'a> {
    pub query: CandidateQuery<'a>,
    pub keys: &'a [i64],
    pub vector: &'a [f32],
}

/// What [`Retrieval::entity_candidates`] looks for: memories of `query` linked to entities
/// named like `names`, with `pooled` the keys the other signals found.
#[derive(Debug, Clone, Copy)]
pub struct EntityQuery<'a> {
    pub query: CandidateQuery<'a>,
    pub names: &'a [String],
    pub pooled: &'a [i64],
}

impl EntityQuery<'_> {
    /// Whether the query can find no candidate at all: no name, or a limit of 0.
    pub fn finds_nothing(&self) -> bool {
        self.names.is_empty() || self.query.limit == 0
    }
}

/// Entities linked to at most this many memories (or four times the candidate limit, if
/// larger) have all their memories walked as entity candidates.
pub const ENTITY_WALK_MIN: usize = 64;

/// The entity signal of one search (see [`Retrieval::entity_candidates`]): the scope's entities
/// that matched the query's names, keyed by the backend's entity id, and how a memory scores
/// from the ones it is linked to.
#[derive(Debug, Clone)]
pub struct EntityMatches<E> {
    /// entity → (memories it is linked to, indexes of the query names it matched)
    matched: std::collections::HashMap<E, (u64, Vec<usize>)>,
    names: usize,
}

impl<E: Eq + std::hash::Hash + Clone> EntityMatches<E> {
    /// No match yet, for a query of `names` names.
    pub fn new(names: usize) -> Self {
        Self {
            matched: std::collections::HashMap::new(),
            names,
        }
    }

    /// Entity `entity`, linked to `mentions` memories, matched query name `name` (an index).
    pub fn add(&mut self, name: usize, entity: E, mentions: u64) {
        let which = &mut self
            .matched
            .entry(entity)
            .or_insert((mentions, Vec::new()))
            .1;
        if !which.contains(&name) {
            which.push(name);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.matched.is_empty()
    }

    /// Whether `entity` matched a name.
    pub fn contains(&self, entity: &E) -> bool {
        self.matched.contains_key(entity)
    }

    /// The matched entities split into rare ones, whose memories are all walked (linked to at
    /// most four times `limit` memories, and at least [`ENTITY_WALK_MIN`]), and common ones,
    /// which only score the keys the other signals pooled: the cost follows the pool, not how
    /// often a name occurs.
    pub fn split(&self, limit: usize) -> (Vec<E>, Vec<E>) {
        let walk_max = limit.saturating_mul(4).max(ENTITY_WALK_MIN) as u64;
        let (mut rare, mut common) = (Vec::new(), Vec::new());
        for (id, (mentions, _)) in &self.matched {
            match *mentions <= walk_max {
                true => rare.push(id.clone()),
                false => common.push(id.clone()),
            }
        }
        (rare, common)
    }

    /// The candidates, unranked: each memory of `per_memory` (its key → the matched entities
    /// it is linked to) scored by [`crate::entity::entity_score`] over the names its entities
    /// matched, with N the scope's indexed memories (`total`), raised to the largest link count
    /// so that no idf goes negative.
    pub fn scores(
        &self,
        per_memory: std::collections::HashMap<i64, Vec<E>>,
        total: u64,
    ) -> Vec<Candidate> {
        let most = self.matched.values().map(|(m, _)| *m).max().unwrap_or(0);
        let total = total.max(most);
        per_memory
            .into_iter()
            .map(|(key, entities)| {
                let mut mentions = vec![Vec::new(); self.names];
                for e in entities {
                    if let Some((m, which)) = self.matched.get(&e) {
                        for &i in which {
                            mentions[i].push(*m);
                        }
                    }
                }
                Candidate {
                    key,
                    score: crate::entity::entity_score(&mentions, total),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn rare_entities_are_walked_and_rarer_names_score_higher() {
        let mut m = EntityMatches::new(2);
        m.add(0, "caroline", 3);
        m.add(0, "caroline", 3);
        m.add(1, "speaker", 5000);
        assert!(m.contains(&"speaker") && !m.is_empty());
        let (rare, common) = m.split(10);
        assert_eq!((rare, common), (vec!["caroline"], vec!["speaker"]));
        let scored = m.scores(
            HashMap::from([(1, vec!["caroline"]), (2, vec!["speaker"])]),
            10_000,
        );
        let score = |k: i64| scored.iter().find(|c| c.key == k).unwrap().score;
        assert!(score(1) > score(2), "{scored:?}");
        // N below a link count is raised to it: no negative idf.
        let low = m.scores(HashMap::from([(2, vec!["speaker"])]), 10);
        assert!(low[0].score >= 0.0);
    }

    #[test]
    fn an_entity_query_without_names_or_room_finds_nothing() {
        let s = Scope::user("ann").unwrap();
        let query = CandidateQuery {
            scope: &s,
            kinds: None,
            filter: None,
            read: ReadOptions::default(),
            limit: 5,
        };
        let names = ["lisbon".to_string()];
        let q = EntityQuery {
            query,
            names: &names,
            pooled: &[],
        };
        assert!(!q.finds_nothing());
        assert!(EntityQuery { names: &[], ..q }.finds_nothing());
        let none = CandidateQuery { limit: 0, ..query };
        assert!(EntityQuery { query: none, ..q }.finds_nothing());
    }
}
