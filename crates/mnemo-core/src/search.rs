//! Hybrid retrieval: dense and lexical candidates from a store, fused into one ranked list.
//!
//! Fusion is linear over normalised signals:
//! `score = w_dense · cos⁺ + w_lexical · bm25/bm25_max + w_entity · entity_idf`,
//! where every candidate gets every signal (lexical- or entity-only hits are scored against the
//! query vector exactly). Candidates from every side enter the pool, so an exact name match that
//! the embedding misses, a paraphrase that shares no word and a memory linked to an entity the
//! query names are all found. Query entities come from the rule-based extractor
//! (`entity::extract_entities`) and match the scope's entities exactly or nearly.

use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::memory::{Memory, MemoryKind, Timestamp};
use crate::scope::Scope;
use crate::store::{Candidate, CandidateQuery, EntityQuery, ReadOptions, ScoreQuery, Store};
use serde::Serialize;
use std::collections::HashMap;

mod expand;
mod graph;
mod speakers;
pub use expand::linked_score;
pub use graph::{
    FAN_OUT as GRAPH_FAN_OUT, READ_PER_HOP as GRAPH_READ_PER_HOP, SECOND_HOP as GRAPH_SECOND_HOP,
};
pub use speakers::SPOKEN as GRAPH_SPOKEN;

/// The largest `top_k` a search accepts.
pub const MAX_TOP_K: usize = 1000;

#[derive(Debug, Clone)]
pub struct SearchRequest {
    pub scope: Scope,
    pub query: String,
    pub top_k: usize,
    /// Hits whose final score is below this are dropped.
    pub threshold: Option<f32>,
    pub kinds: Option<Vec<MemoryKind>>,
    pub filter: Option<Filter>,
    pub read: ReadOptions,
    pub mode: SearchMode,
    /// Link expansion: after the direct hits, up to this many `related` neighbours of each hit
    /// (0: none), scored by [`linked_score`] (see the `expand` module docs).
    pub expand_links: usize,
    /// The most linked results added, in addition to the `top_k` direct hits; `None`: no cap
    /// beyond `expand_links` per hit.
    pub expand_limit: Option<usize>,
    /// The instant the query's temporal expression ("last week") is resolved against; `None`:
    /// now. Used by the facade, which fills `temporal`.
    pub reference_date: Option<crate::memory::Timestamp>,
    /// The query's resolved temporal expression: memories whose event time is in its range
    /// ([`crate::EventRange::of_query`]) join the pool and gain `temporal_weight`. `None`: the
    /// ranking is exactly the one without event time.
    pub temporal: Option<crate::time::TemporalQuery>,
    /// Graph search: walk the relations of the entities the query names and pool the memories
    /// stating the reached edges (see the `graph` module docs). `None`: the engine's setting
    /// (the facade fills it); core reads `None` as off, so the ranking is the one without it.
    pub graph: Option<bool>,
}

/// The most linked neighbours a search may ask for per hit.
pub const MAX_EXPAND_LINKS: usize = 50;

/// Which signals a search uses. Hybrid is the product; the single-signal modes exist for
/// keyword-only lookups and as the baselines `mnemo eval` compares against.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    #[default]
    Hybrid,
    /// Nearest vectors only; the score is the cosine similarity.
    Dense,
    /// BM25 only; the score is BM25 normalised by the best candidate. Needs no query vector.
    Lexical,
}

impl SearchMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Hybrid => "hybrid",
            SearchMode::Dense => "dense",
            SearchMode::Lexical => "lexical",
        }
    }
}

impl SearchRequest {
    /// A hybrid search over active, unexpired memories of every kind, without filters.
    pub fn new(scope: Scope, query: impl Into<String>, top_k: usize) -> Self {
        Self {
            scope,
            query: query.into(),
            top_k,
            threshold: None,
            kinds: None,
            filter: None,
            read: ReadOptions::default(),
            mode: SearchMode::Hybrid,
            expand_links: 0,
            expand_limit: None,
            reference_date: None,
            temporal: None,
            graph: None,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if !crate::text::has_visible_content(&self.query) {
            return Err(Error::invalid("query", "must not be empty"));
        }
        crate::limits::check_chars("query", &self.query, crate::limits::MAX_QUERY_CHARS)?;
        crate::limits::check_no_nul("query", &self.query)?;
        if let Some(t) = self.read.as_of {
            crate::limits::check_timestamp("as_of", t)?;
        }
        if let Some(t) = self.reference_date {
            crate::limits::check_timestamp("reference_date", t)?;
        }
        if self.top_k == 0 || self.top_k > MAX_TOP_K {
            return Err(Error::invalid(
                "top_k",
                format!("must be between 1 and {MAX_TOP_K}"),
            ));
        }
        if let Some(t) = self.threshold {
            if !t.is_finite() {
                return Err(Error::invalid("threshold", "must be a finite number"));
            }
        }
        if self.expand_links > MAX_EXPAND_LINKS {
            return Err(Error::invalid(
                "expand_links",
                format!("must be between 0 and {MAX_EXPAND_LINKS}"),
            ));
        }
        if self.expand_limit.is_some_and(|l| l > MAX_TOP_K) {
            return Err(Error::invalid(
                "expand_limit",
                format!("must be between 0 and {MAX_TOP_K}"),
            ));
        }
        // A filter built in code (not parsed) gets the parser's checks here, before any store.
        if let Some(f) = &self.filter {
            f.validate()?;
        }
        Ok(())
    }
}

/// The temporal expression of a search query ("last week", "in May 2023", "before 2020")
/// resolved against `reference` by the rule tagger, or `None` when the query names no time it
/// can resolve (then the search ranks as it would without event time).
pub fn resolve_query(query: &str, reference: Timestamp) -> Option<crate::time::TemporalQuery> {
    crate::time::resolve_query(query, reference, &crate::time::TaggerOptions::default())
}

/// Per-signal scores of a hit, so callers can see why it ranked where it did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Scores {
    /// Cosine similarity to the query vector.
    pub dense: f32,
    /// Raw BM25 (0 when no query term matched).
    pub bm25: f32,
    /// BM25 divided by the best BM25 among this query's candidates.
    pub bm25_norm: f32,
    /// How informative the query entities the memory is linked to are, in [0, 1] (rare names
    /// count more; see `Store::entity_candidates`); 0 when the query names none it matches.
    pub entity: f32,
    /// 1 when the memory's event time is in the query's temporal range, else 0 (and left out
    /// of the JSON form, as for every search without a temporal expression).
    #[serde(skip_serializing_if = "is_zero")]
    pub temporal: f32,
    /// How strongly a relation reached by graph search supports the memory, in [0, 1]; 0 (and
    /// left out of the JSON form) without graph search.
    #[serde(skip_serializing_if = "is_zero")]
    pub graph: f32,
}

fn is_zero(x: &f32) -> bool {
    *x == 0.0
}

#[derive(Debug, Clone, Serialize)]
pub struct Hit {
    #[serde(flatten)]
    pub memory: Memory,
    pub score: f32,
    pub scores: Scores,
    /// For a result of link expansion: the direct hit and the link it was reached through;
    /// for a memory graph search scored: the relation it states.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<Via>,
}

/// How a result was reached beyond the query's own signals. Untagged: a link's fields or
/// `{"relation": …}` as they are.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Via {
    /// Link expansion: from the direct hit `memory_id` along a link of `kind` with `strength`.
    Link(LinkVia),
    /// Graph search: the memory states this relation, reached in `hops` from an entity the
    /// query names.
    Relation(RelationVia),
}

impl Via {
    /// The link, for a result of link expansion.
    pub fn link(&self) -> Option<&LinkVia> {
        match self {
            Via::Link(l) => Some(l),
            Via::Relation(_) => None,
        }
    }

    /// The relation, for a memory graph search scored.
    pub fn relation(&self) -> Option<&RelationVia> {
        match self {
            Via::Relation(r) => Some(r),
            Via::Link(_) => None,
        }
    }
}

/// See [`Via::Link`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkVia {
    pub memory_id: crate::memory::MemoryId,
    pub kind: crate::memory::LinkKind,
    pub strength: f32,
}

/// See [`Via::Relation`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RelationVia {
    pub relation: crate::memory::RelationId,
    pub predicate: String,
    pub hops: u8,
}

/// A search's hits and the relations graph search used for them (each edge once, best first;
/// empty without graph search).
#[derive(Debug, Clone, Default)]
pub struct SearchOutcome {
    pub hits: Vec<Hit>,
    pub relations: Vec<crate::store::Relation>,
}

/// Fusion weights and candidate pool sizes. Documented defaults; tuned by `mnemo eval`.
#[derive(Debug, Clone, Copy)]
pub struct RankParams {
    pub dense_weight: f32,
    pub lexical_weight: f32,
    /// Weight of the entity signal (in [0, 1]: the idf of the matched query entities over
    /// `ln(1 + N)`); a memory linked to a rare entity the query names gains up to this.
    pub entity_weight: f32,
    /// Candidates taken from each side: `max(min_candidates, top_k * candidate_factor)`.
    pub candidate_factor: usize,
    pub min_candidates: usize,
    /// Link expansion: how much the direct hits' activation lifts a linked memory's own score:
    /// `own × (1 + link_weight × Σ parent score × link strength)` (see [`linked_score`]).
    pub link_weight: f32,
    /// Weight of the temporal signal: what a memory whose event time falls in the query's
    /// temporal range gains (hybrid mode, queries with a temporal expression only). 0 turns
    /// temporal search off.
    pub temporal_weight: f32,
    /// Weight of the graph signal ([`Scores::graph`]): what a memory stating the best-scored
    /// reached relation gains, for searches with graph search on.
    pub graph_weight: f32,
}

impl Default for RankParams {
    fn default() -> Self {
        Self {
            dense_weight: 0.6,
            lexical_weight: 0.4,
            entity_weight: 0.1,
            candidate_factor: 3,
            min_candidates: 30,
            link_weight: 0.25,
            temporal_weight: 0.2,
            graph_weight: 0.3,
        }
    }
}

/// Runs a hybrid search for an already-embedded query.
pub fn hybrid_search(
    store: &dyn Store,
    req: &SearchRequest,
    vector: &[f32],
    params: &RankParams,
) -> Result<Vec<Hit>> {
    hybrid_search_embedding(store, req, || Ok(vector.to_vec()), params)
}

/// [`hybrid_search`] for a query whose vector `embed` computes: the embedding runs beside the
/// work that does not need it (lexical candidates, the query's entities), so a search costs
/// about the longer of the two rather than their sum (query-overlap, issue 16).
pub fn hybrid_search_embedding(
    store: &dyn Store,
    req: &SearchRequest,
    embed: impl FnOnce() -> Result<Vec<f32>> + Send,
    params: &RankParams,
) -> Result<Vec<Hit>> {
    hybrid_search_outcome(store, req, embed, params).map(|o| o.hits)
}

/// [`hybrid_search_embedding`] with the relations graph search used.
pub fn hybrid_search_outcome(
    store: &dyn Store,
    req: &SearchRequest,
    embed: impl FnOnce() -> Result<Vec<f32>> + Send,
    params: &RankParams,
) -> Result<SearchOutcome> {
    req.validate()?;
    let graph_on =
        req.graph == Some(true) && req.mode == SearchMode::Hybrid && params.graph_weight > 0.0;
    let pool = (req.top_k * params.candidate_factor).max(params.min_candidates);
    let cq = CandidateQuery {
        scope: &req.scope,
        kinds: req.kinds.as_deref(),
        filter: req.filter.as_ref(),
        read: req.read,
        limit: pool,
    };
    // A query's temporal expression is matched by event time, not by its words: "in May 2023"
    // would otherwise rank every memory that writes "2023" above the ones that happened then.
    let terms = match &req.temporal {
        Some(t) if req.mode == SearchMode::Hybrid && params.temporal_weight > 0.0 => {
            crate::text::query_terms(&without_phrase(&req.query, &t.phrase))
        }
        _ => crate::text::query_terms(&req.query),
    };
    // The two sides run at once: the query's embedding and dense side on the calling thread,
    // its lexical side and entity extraction on one of rayon's threads (threads that stay up:
    // a thread started per search cost more than the overlap won; see BENCHMARKS.md). The
    // calling thread is not one of rayon's, so `rayon::join` would hand both sides to the pool
    // and park the caller: an extra wake-up per search (query-overlap, issue 16).
    let lexical_side = || -> Result<(Vec<Candidate>, Vec<String>)> {
        let lexical = if terms.is_empty() || req.mode == SearchMode::Dense {
            Vec::new()
        } else {
            store.lexical_candidates(&cq, &terms)?
        };
        // The query's names, read once for the entity side, the graph walk and the speaker hop.
        let names = if req.mode == SearchMode::Hybrid && (params.entity_weight > 0.0 || graph_on) {
            let mut names: Vec<String> = crate::entity::extract_entities(&req.query)
                .into_iter()
                .map(|e| e.normalized)
                .collect();
            names.dedup();
            names
        } else {
            Vec::new()
        };
        Ok((lexical, names))
    };
    let mut lexical: Option<Result<(Vec<Candidate>, Vec<String>)>> = None;
    let dense_side = || {
        let vector = embed()?;
        if req.mode == SearchMode::Lexical {
            Ok((vector, Vec::new()))
        } else {
            let dense = store.dense_candidates(&cq, &vector)?;
            Ok::<_, Error>((vector, dense))
        }
    };
    // Core's own pool, not rayon's global one: it is rebuilt after a fork (see `parallel`).
    let dense = match crate::parallel::pool() {
        Some(pool) => pool.in_place_scope(|s| {
            s.spawn(|_| lexical = Some(lexical_side()));
            dense_side()
        }),
        None => {
            lexical = Some(lexical_side());
            dense_side()
        }
    };
    let lexical =
        lexical.ok_or_else(|| Error::internal("the lexical side of a search did not run"))?;
    let ((vector, dense), (lexical, query_names)) = (dense?, lexical?);
    let vector = vector.as_slice();
    let mut pooled: HashMap<i64, Scores> = HashMap::with_capacity(dense.len() + lexical.len());
    for c in &dense {
        pooled.entry(c.key).or_default().dense = c.score;
    }
    let max_bm25 = lexical.iter().map(|c| c.score).fold(0.0f32, f32::max);
    let mut lexical_only = Vec::new();
    for c in &lexical {
        let entry = pooled.entry(c.key).or_insert_with(|| {
            lexical_only.push(c.key);
            Scores::default()
        });
        entry.bm25 = c.score;
        entry.bm25_norm = if max_bm25 > 0.0 {
            c.score / max_bm25
        } else {
            0.0
        };
    }
    // Lexical-only keys get their exact cosine first: the score without the entity signal
    // decides which keys the entity side has to look at.
    fill_dense(store, &cq, &mut pooled, &lexical_only, vector, req.mode)?;
    // Graph search's speaker hop: a name the query gives that said pooled memories is matched
    // through them, not as a word (see `speakers`).
    let speakers = if graph_on {
        let mut speakers = speakers::Speakers::find(store, &cq, &query_names, &pooled)?;
        if !speakers.is_empty() {
            let fresh = speakers.rematch_lexical(store, &cq, &terms, &query_names, &mut pooled)?;
            fill_dense(store, &cq, &mut pooled, &fresh, vector, req.mode)?;
        }
        speakers
    } else {
        speakers::Speakers::default()
    };
    let by_entity = if query_names.is_empty() || params.entity_weight <= 0.0 {
        Vec::new()
    } else {
        let keys = entity_keys(&pooled, params, req.top_k);
        store.entity_candidates(&EntityQuery {
            query: cq,
            names: &query_names,
            pooled: &keys,
        })?
    };
    let mut entity_only = Vec::new();
    for c in &by_entity {
        let entry = pooled.entry(c.key).or_insert_with(|| {
            entity_only.push(c.key);
            Scores::default()
        });
        entry.entity = c.score;
    }
    fill_dense(store, &cq, &mut pooled, &entity_only, vector, req.mode)?;
    temporal_side(store, req, &cq, params, &mut pooled, vector)?;
    let walked = if graph_on {
        graph::walk(store, req, &query_names)?
    } else {
        graph::GraphSide::default()
    };
    let (graph_only, graph_ids) =
        graph::pool(store, &cq, &walked, speakers.fetched(), &mut pooled)?;
    speakers.lift(&mut pooled);
    fill_dense(store, &cq, &mut pooled, &graph_only, vector, req.mode)?;
    let mut ranked: Vec<(i64, f32, Scores)> = pooled
        .into_iter()
        .map(|(k, s)| {
            let score = match req.mode {
                SearchMode::Hybrid => {
                    params.dense_weight * s.dense.max(0.0)
                        + params.lexical_weight * s.bm25_norm
                        + params.entity_weight * s.entity
                        + params.temporal_weight * s.temporal
                        + params.graph_weight * s.graph
                }
                SearchMode::Dense => s.dense,
                SearchMode::Lexical => s.bm25_norm,
            };
            (k, score, s)
        })
        .collect();
    // Expansion scores linked memories the pool already holds as the ranking did.
    let own: expand::Pooled = if req.expand_links > 0 {
        ranked
            .iter()
            .map(|(k, score, s)| (*k, (*score, *s)))
            .collect()
    } else {
        HashMap::new()
    };
    ranked.retain(|(_, score, _)| req.threshold.is_none_or(|t| *score >= t));
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(req.top_k);
    let keys: Vec<i64> = ranked.iter().map(|r| r.0).collect();
    let mut loaded: HashMap<i64, Memory> = store.fetch(&cq, &keys)?.into_iter().collect();
    let mut used: Vec<usize> = Vec::new();
    let mut hits: Vec<Hit> = ranked
        .into_iter()
        .filter_map(|(k, score, scores)| {
            let via = graph_ids.get(&k).map(|id| {
                let i = walked.by_memory[id];
                if !used.contains(&i) {
                    used.push(i);
                }
                let r = &walked.edges[i];
                Via::Relation(RelationVia {
                    relation: r.edge.id,
                    predicate: r.edge.predicate.clone(),
                    hops: r.hops,
                })
            });
            loaded.remove(&k).map(|memory| Hit {
                memory,
                score,
                scores,
                via,
            })
        })
        .collect();
    expand::expand_links(store, req, vector, params, &own, &mut hits)?;
    used.sort_by(|a, b| walked.edges[*b].score.total_cmp(&walked.edges[*a].score));
    let relations = used
        .into_iter()
        .map(|i| walked.edges[i].edge.clone())
        .collect();
    Ok(SearchOutcome { hits, relations })
}

/// The pooled keys the entity side scores: the entity signal adds at most `entity_weight`, so
/// a key scoring more than that below the `top_k`-th cannot reach the top with it; only the keys
/// above that line are looked at.
fn entity_keys(pooled: &HashMap<i64, Scores>, params: &RankParams, top_k: usize) -> Vec<i64> {
    let base =
        |s: &Scores| params.dense_weight * s.dense.max(0.0) + params.lexical_weight * s.bm25_norm;
    let mut bases: Vec<f32> = pooled.values().map(base).collect();
    let line = if top_k > 0 && bases.len() > top_k {
        let (_, kth, _) = bases.select_nth_unstable_by(top_k - 1, |a, b| b.total_cmp(a));
        *kth - params.entity_weight
    } else {
        f32::NEG_INFINITY
    };
    pooled
        .iter()
        .filter(|(_, s)| base(s) >= line)
        .map(|(k, _)| *k)
        .collect()
}

/// `query` without the first occurrence of `phrase` (ASCII case folded, so byte offsets agree);
/// the query itself when the phrase is empty or not in it.
fn without_phrase(query: &str, phrase: &str) -> String {
    let phrase = phrase.trim();
    if phrase.is_empty() {
        return query.to_string();
    }
    match query
        .to_ascii_lowercase()
        .find(&phrase.to_ascii_lowercase())
    {
        Some(at) => format!("{} {}", &query[..at], &query[at + phrase.len()..]),
        None => query.to_string(),
    }
}

/// The temporal signal: memories whose event time is in the range of the query's temporal
/// expression (those already pooled, and up to a pool's worth more) score 1; new ones get their
/// exact cosine. Nothing happens without a temporal expression, so such a search ranks as it
/// would without event time.
fn temporal_side(
    store: &dyn Store,
    req: &SearchRequest,
    cq: &CandidateQuery<'_>,
    params: &RankParams,
    pooled: &mut HashMap<i64, Scores>,
    vector: &[f32],
) -> Result<()> {
    let Some(t) = &req.temporal else {
        return Ok(());
    };
    if req.mode != SearchMode::Hybrid || params.temporal_weight <= 0.0 {
        return Ok(());
    }
    let range = crate::store::EventRange::of_query(t);
    let mut keys: Vec<i64> = pooled.keys().copied().collect();
    keys.sort_unstable();
    let mut temporal_only = Vec::new();
    for c in store.event_candidates(cq, &range, &keys)? {
        let entry = pooled.entry(c.key).or_insert_with(|| {
            temporal_only.push(c.key);
            Scores::default()
        });
        entry.temporal = c.score;
    }
    fill_dense(store, cq, pooled, &temporal_only, vector, req.mode)
}

/// Gives `keys` (pooled without a dense score) their exact cosine, in hybrid mode.
fn fill_dense(
    store: &dyn Store,
    cq: &CandidateQuery<'_>,
    pooled: &mut HashMap<i64, Scores>,
    keys: &[i64],
    vector: &[f32],
    mode: SearchMode,
) -> Result<()> {
    if keys.is_empty() || mode != SearchMode::Hybrid {
        return Ok(());
    }
    let scoring = ScoreQuery {
        query: *cq,
        keys,
        vector,
    };
    for c in store.vector_scores(&scoring)? {
        if let Some(s) = pooled.get_mut(&c.key) {
            s.dense = c.score;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::without_phrase;

    #[test]
    fn the_temporal_phrase_leaves_the_lexical_query() {
        assert_eq!(
            without_phrase("What did Ann do in May 2023?", "in May 2023").trim(),
            "What did Ann do  ?"
        );
        assert_eq!(
            without_phrase("hiking LAST WEEK", "last week").trim(),
            "hiking"
        );
        assert_eq!(without_phrase("Zoë in 2021 é", "in 2021"), "Zoë   é");
        assert_eq!(without_phrase("no time here", "last week"), "no time here");
        assert_eq!(without_phrase("no time here", " "), "no time here");
    }
}
