//! Graph search: the entities a query names, their relations walked one or two hops, and the
//! memories stating the reached edges brought into the hybrid ranking as candidates.
//!
//! ```text
//! edge(e)   = hop(e) × strength(e) × recency(e) × relevance(e)
//! graph(m)  = max over reached edges e that m states: edge(e)        (in [0, 1])
//! score(m) += graph_weight × graph(m)
//! ```
//!
//! `hop` is 1 for an edge of a named entity and [`SECOND_HOP`] for an edge of an entity one
//! hop away; `strength` grows with the number of statements of the edge (`1 - 0.5 / (s + 1)`:
//! one statement counts 0.75); `recency` places the edge's `valid_from` between the oldest
//! (0.75) and the newest (1) reached edge; `relevance` is 0.5 plus half the share of the
//! query's other words the edge's path shares (its sentence and, for a second hop, the
//! sentence of the first-hop edge that reached it), so "where does Caroline's sister live"
//! prefers Caroline's *sister* edge and then the *lives in* edge of the sister. Each hop reads
//! at most [`FAN_OUT`] edges, most recent first: bounded work whatever the graph holds.
//!
//! A stating memory already in the pool gains the signal. One that is not is found by its
//! edge's sentence (a lexical lookup of the sentence's words, kept only when it is the very
//! memory the edge names), then scored on its exact cosine like every other pooled memory; the
//! request's scope, kinds, filter and visibility apply to it as to any candidate.

use super::{Scores, SearchRequest};
use crate::error::Result;
use crate::memory::MemoryId;
use crate::store::{CandidateQuery, EdgeQuery, EdgeView, Relation, Store};
use std::collections::{HashMap, HashSet};

/// The most edges each hop reads.
pub const FAN_OUT: usize = 24;
/// What an edge one hop away from a named entity counts, relative to one of the entity.
pub const SECOND_HOP: f32 = 0.7;
/// The most entities a query name is matched to.
const PER_NAME: usize = 4;
/// The most query names walked from.
const MAX_NAMES: usize = 8;

/// An edge the walk reached, with its score and hop count.
#[derive(Debug, Clone)]
pub(super) struct Reached {
    pub edge: Relation,
    pub score: f32,
    pub hops: u8,
}

/// What the graph side found: the edges reached, and for each stating memory the edge that
/// scored it best (an index into `edges`).
#[derive(Debug, Default)]
pub(super) struct GraphSide {
    pub edges: Vec<Reached>,
    pub by_memory: HashMap<MemoryId, usize>,
}

/// Walks the relations of the entities `req.query` names (see the module docs).
pub(super) fn walk(store: &dyn Store, req: &SearchRequest) -> Result<GraphSide> {
    let mut names: Vec<String> = crate::entity::extract_entities(&req.query)
        .into_iter()
        .map(|e| e.normalized)
        .collect();
    names.dedup();
    names.truncate(MAX_NAMES);
    let mut seeds: Vec<crate::memory::EntityId> = Vec::new();
    for name in &names {
        for e in store.find_entities(&req.scope, name, PER_NAME)? {
            if !seeds.contains(&e.id) {
                seeds.push(e.id);
            }
        }
    }
    if seeds.is_empty() {
        return Ok(GraphSide::default());
    }
    let view = req.read.as_of.map_or(EdgeView::Current, EdgeView::AsOf);
    let read = |entities: &[crate::memory::EntityId]| {
        store.edges(&EdgeQuery {
            scope: &req.scope,
            entities,
            predicate: None,
            view,
            now: req.read.now,
            limit: FAN_OUT,
        })
    };
    let first = read(&seeds)?;
    let mut seen: HashSet<crate::memory::RelationId> = first.iter().map(|e| e.id).collect();
    let next: Vec<crate::memory::EntityId> = first
        .iter()
        .flat_map(|e| [e.subject.id, e.object.id])
        .flatten()
        .filter(|id| !seeds.contains(id))
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let second = if next.is_empty() {
        Vec::new()
    } else {
        read(&next)?
    };
    // A second-hop edge's path: the first-hop edge that reached its entity.
    let parent = |e: &Relation| {
        first.iter().position(|p| {
            let ends = [p.subject.id, p.object.id];
            [e.subject.id, e.object.id]
                .into_iter()
                .flatten()
                .any(|id| ends.contains(&Some(id)) && !seeds.contains(&id))
        })
    };
    let second: Vec<(Relation, Option<usize>)> = second
        .into_iter()
        .filter(|e| seen.insert(e.id))
        .map(|e| {
            let p = parent(&e);
            (e, p)
        })
        .collect();
    let facts: Vec<String> = first.iter().map(|e| e.fact.clone()).collect();
    let mut edges: Vec<(Relation, u8, Option<&str>)> =
        first.into_iter().map(|e| (e, 1, None)).collect();
    edges.extend(
        second
            .into_iter()
            .map(|(e, p)| (e, 2, p.map(|i| facts[i].as_str()))),
    );
    Ok(score(&req.query, &names, edges))
}

/// Scores the reached edges (see the module docs) and indexes them by stating memory.
fn score(query: &str, names: &[String], edges: Vec<(Relation, u8, Option<&str>)>) -> GraphSide {
    let named: HashSet<String> = names.iter().flat_map(|n| crate::text::words(n)).collect();
    let terms: Vec<String> = crate::text::query_terms(query)
        .into_iter()
        .filter(|t| !named.contains(t))
        .collect();
    let oldest = edges.iter().map(|(e, _, _)| e.valid_from).min();
    let newest = edges.iter().map(|(e, _, _)| e.valid_from).max();
    let span = match (oldest, newest) {
        (Some(a), Some(b)) => (b - a).num_seconds().max(0) as f32,
        _ => 0.0,
    };
    let mut side = GraphSide::default();
    for (edge, hops, path) in edges {
        let hop = if hops == 1 { 1.0 } else { SECOND_HOP };
        let s = edge.strength() as f32;
        let strength = 1.0 - 0.5 / (s + 1.0);
        let recency = match oldest {
            Some(a) if span > 0.0 => {
                0.75 + 0.25 * (edge.valid_from - a).num_seconds() as f32 / span
            }
            _ => 1.0,
        };
        let relevance = 0.5 + 0.5 * shared(&terms, &edge, path.unwrap_or(""));
        let score = (hop * strength * recency * relevance).clamp(0.0, 1.0);
        let index = side.edges.len();
        for source in &edge.sources {
            let best = side.by_memory.entry(source.memory_id).or_insert(index);
            if side.edges.get(*best).is_some_and(|b| b.score < score) {
                *best = index;
            }
        }
        side.edges.push(Reached { edge, score, hops });
    }
    side
}

/// The share of `terms` found among the words of the edge's sentence and predicate; a word
/// counts when one is a prefix of the other ("live" and "lives"), at three letters or more.
fn shared(terms: &[String], edge: &Relation, path: &str) -> f32 {
    if terms.is_empty() {
        return 0.0;
    }
    let text = format!("{} {} {path}", edge.fact, edge.predicate.replace('_', " "));
    let words: Vec<String> = crate::text::words(&text).collect();
    let matches = |t: &String| {
        words.iter().any(|w| {
            let (a, b) = if w.len() <= t.len() { (w, t) } else { (t, w) };
            a.len() >= 3 && b.starts_with(a.as_str())
        })
    };
    terms.iter().filter(|t| matches(t)).count() as f32 / terms.len() as f32
}

/// Gives the pooled memories that state a reached edge their graph signal, and pools the
/// stating memories the pool lacks (found by their edge's sentence). Returns the keys pooled
/// anew (they need their cosine) and each graph-scored key's memory id.
pub(super) fn pool(
    store: &dyn Store,
    cq: &CandidateQuery<'_>,
    side: &GraphSide,
    pooled: &mut HashMap<i64, Scores>,
) -> Result<(Vec<i64>, HashMap<i64, MemoryId>)> {
    let mut ids: HashMap<i64, MemoryId> = HashMap::new();
    if side.by_memory.is_empty() {
        return Ok((Vec::new(), ids));
    }
    let mut keys: Vec<i64> = pooled.keys().copied().collect();
    keys.sort_unstable();
    let mut found: HashSet<MemoryId> = HashSet::new();
    for (key, memory) in store.fetch(cq, &keys)? {
        if side.by_memory.contains_key(&memory.id) {
            found.insert(memory.id);
            ids.insert(key, memory.id);
        }
    }
    // The stating memories the pool lacks, looked up once per edge sentence.
    let mut asked: HashSet<&str> = HashSet::new();
    let mut fresh: Vec<i64> = Vec::new();
    for reached in &side.edges {
        let missing = (reached.edge.sources.iter()).any(|s| !found.contains(&s.memory_id));
        if !missing || !asked.insert(reached.edge.fact.as_str()) {
            continue;
        }
        let terms = crate::text::query_terms(&reached.edge.fact);
        if terms.is_empty() {
            continue;
        }
        let lookup = CandidateQuery { limit: 4, ..*cq };
        let candidates: Vec<i64> = store
            .lexical_candidates(&lookup, &terms)?
            .into_iter()
            .map(|c| c.key)
            .filter(|k| !pooled.contains_key(k) && !ids.contains_key(k))
            .collect();
        for (key, memory) in store.fetch(cq, &candidates)? {
            if side.by_memory.contains_key(&memory.id) && found.insert(memory.id) {
                ids.insert(key, memory.id);
                fresh.push(key);
            }
        }
    }
    for (key, id) in &ids {
        let edge = &side.edges[side.by_memory[id]];
        pooled.entry(*key).or_default().graph = edge.score;
    }
    Ok((fresh, ids))
}
