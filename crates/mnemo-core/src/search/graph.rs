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
//! (0.75) and the newest (1) kept edge; `relevance` is the share of the query's other words
//! that the edge's path shares (its sentence and predicate and, for a second hop, the sentence
//! of the first-hop edge that reached it) or that ask for its predicate ("kids" asks for
//! `child_of`, "hobbies" for `likes`), so "where does Caroline's sister live" prefers
//! Caroline's *sister* edge and then the *lives in* edge of the sister. Each hop reads at most
//! [`READ_PER_HOP`] edges (most recent first) and keeps the [`FAN_OUT`] most relevant, none
//! that shares nothing with the question; the second hop walks on only from the kept edges.
//! Bounded work whatever the graph holds.
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

/// The most edges each hop keeps (the best by relevance).
pub const FAN_OUT: usize = 24;
/// The most edges each hop reads before ranking them: a named entity may have hundreds of
/// edges (a speaker's every liking), and the ones a question asks about are rarely the most
/// recent, so the hop reads a wider bounded slice and keeps the [`FAN_OUT`] most relevant.
pub const READ_PER_HOP: usize = 8 * FAN_OUT;
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

/// An edge read by a hop, with its hop count and its relevance to the question.
struct Candidate {
    edge: Relation,
    hops: u8,
    relevance: f32,
}

/// Walks the relations of the entities `req.query` names, `query_names` (their normal forms;
/// see the module docs).
pub(super) fn walk(
    store: &dyn Store,
    req: &SearchRequest,
    query_names: &[String],
) -> Result<GraphSide> {
    let names = &query_names[..query_names.len().min(MAX_NAMES)];
    let mut seeds: Vec<crate::memory::EntityId> = Vec::new();
    for name in names {
        for e in store.find_entities(&req.scope, name, PER_NAME)? {
            if !seeds.contains(&e.id) {
                seeds.push(e.id);
            }
        }
    }
    if seeds.is_empty() {
        return Ok(GraphSide::default());
    }
    let terms = other_terms(&req.query, names);
    let view = req.read.as_of.map_or(EdgeView::Current, EdgeView::AsOf);
    let read = |entities: &[crate::memory::EntityId]| {
        store.edges(&EdgeQuery {
            scope: &req.scope,
            entities,
            predicate: None,
            view,
            now: req.read.now,
            limit: READ_PER_HOP,
        })
    };
    let first = keep_best(
        read(&seeds)?
            .into_iter()
            .map(|edge| {
                let relevance = relevance(&terms, &edge, "");
                Candidate {
                    edge,
                    hops: 1,
                    relevance,
                }
            })
            .collect(),
    );
    let mut seen: HashSet<crate::memory::RelationId> = first.iter().map(|c| c.edge.id).collect();
    // The second hop starts only from the edges the first kept: those the question is about.
    let next: Vec<crate::memory::EntityId> = first
        .iter()
        .flat_map(|c| [c.edge.subject.id, c.edge.object.id])
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
            let ends = [p.edge.subject.id, p.edge.object.id];
            [e.subject.id, e.object.id]
                .into_iter()
                .flatten()
                .any(|id| ends.contains(&Some(id)) && !seeds.contains(&id))
        })
    };
    let second = keep_best(
        second
            .into_iter()
            .filter(|e| seen.insert(e.id))
            .map(|edge| {
                let path = parent(&edge).map_or("", |i| first[i].edge.fact.as_str());
                let relevance = relevance(&terms, &edge, path);
                Candidate {
                    edge,
                    hops: 2,
                    relevance,
                }
            })
            .collect(),
    );
    Ok(score(first.into_iter().chain(second).collect()))
}

/// The query's words other than the names it walks from.
fn other_terms(query: &str, names: &[String]) -> Vec<String> {
    let named: HashSet<String> = names.iter().flat_map(|n| crate::text::words(n)).collect();
    crate::text::query_terms(query)
        .into_iter()
        .filter(|t| !named.contains(t))
        .collect()
}

/// The [`FAN_OUT`] most relevant of a hop's edges (the read order, most recent first, breaks
/// ties); an edge that shares nothing with the question is not kept, so a much-related entity
/// (a speaker with hundreds of edges) lends no weight to what the question does not ask.
fn keep_best(mut read: Vec<Candidate>) -> Vec<Candidate> {
    read.retain(|c| c.relevance > 0.0);
    read.sort_by(|a, b| b.relevance.total_cmp(&a.relevance));
    read.truncate(FAN_OUT);
    read
}

/// Scores the kept edges (see the module docs) and indexes them by stating memory.
fn score(edges: Vec<Candidate>) -> GraphSide {
    let oldest = edges.iter().map(|c| c.edge.valid_from).min();
    let newest = edges.iter().map(|c| c.edge.valid_from).max();
    let span = match (oldest, newest) {
        (Some(a), Some(b)) => (b - a).num_seconds().max(0) as f32,
        _ => 0.0,
    };
    let mut side = GraphSide::default();
    for Candidate {
        edge,
        hops,
        relevance,
    } in edges
    {
        let hop = if hops == 1 { 1.0 } else { SECOND_HOP };
        let s = edge.strength() as f32;
        let strength = 1.0 - 0.5 / (s + 1.0);
        let recency = match oldest {
            Some(a) if span > 0.0 => {
                0.75 + 0.25 * (edge.valid_from - a).num_seconds() as f32 / span
            }
            _ => 1.0,
        };
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

/// How much of the question an edge answers: the share of `terms` found among the words of
/// the edge's path (its sentence and predicate, and `path`, the sentence of the edge that
/// reached it) or asking for its predicate ([`asks_for`]: "kids" asks for `child_of`). A word
/// counts when one is a prefix of the other ("live" and "lives"), at three letters or more.
/// A question of names alone asks about every edge of them: 1.
fn relevance(terms: &[String], edge: &Relation, path: &str) -> f32 {
    if terms.is_empty() {
        return 1.0;
    }
    let text = format!("{} {} {path}", edge.fact, edge.predicate.replace('_', " "));
    let words: Vec<String> = crate::text::words(&text).collect();
    let matches = |t: &String| {
        asks_for(t, &edge.predicate)
            || words.iter().any(|w| {
                let (a, b) = if w.len() <= t.len() { (w, t) } else { (t, w) };
                a.len() >= 3 && b.starts_with(a.as_str())
            })
    };
    terms.iter().filter(|t| matches(t)).count() as f32 / terms.len() as f32
}

/// Whether a question word asks for relations of `predicate`: the words people use to ask
/// about each canonical relation ("Where does she live?", "What are his hobbies?", "Does she
/// have pets?"). A closed list, general English, not drawn from any test conversation.
fn asks_for(word: &str, predicate: &str) -> bool {
    let cues: &[&str] = match predicate {
        "lives_in" | "moved_to" => &[
            "live", "lives", "living", "home", "move", "moved", "moving", "city", "town",
            "country", "hometown", "reside",
        ],
        "works_at" => &[
            "work",
            "works",
            "working",
            "job",
            "jobs",
            "career",
            "employer",
            "company",
            "profession",
            "occupation",
        ],
        "studies_at" => &[
            "study",
            "studies",
            "studying",
            "school",
            "college",
            "university",
            "degree",
            "education",
            "student",
        ],
        "likes" => &[
            "like",
            "likes",
            "love",
            "loves",
            "enjoy",
            "enjoys",
            "favorite",
            "favourite",
            "hobby",
            "hobbies",
            "interest",
            "interests",
            "passion",
            "fan",
            "activities",
        ],
        "dislikes" => &["dislike", "dislikes", "hate", "hates", "avoid"],
        "has_pet" | "is_a" => &[
            "pet", "pets", "dog", "dogs", "cat", "cats", "animal", "animals", "puppy", "kitten",
        ],
        "partner_of" => &[
            "partner",
            "husband",
            "wife",
            "spouse",
            "married",
            "marriage",
            "relationship",
            "boyfriend",
            "girlfriend",
            "fiance",
            "fiancee",
            "dating",
        ],
        "sibling_of" => &[
            "sibling", "siblings", "sister", "sisters", "brother", "brothers",
        ],
        "parent_of" | "child_of" => &[
            "kid",
            "kids",
            "child",
            "children",
            "son",
            "sons",
            "daughter",
            "daughters",
            "mother",
            "father",
            "mom",
            "dad",
            "parent",
            "parents",
        ],
        "family_of" => &["family", "relative", "relatives", "cousin", "cousins"],
        "friend_of" => &["friend", "friends", "friendship"],
        "member_of" => &["member", "club", "group", "team", "joined", "join"],
        "owns" => &["own", "owns", "bought", "buy"],
        "age" => &["age", "old", "birthday"],
        _ => return false,
    };
    cues.contains(&word)
}

/// Gives the pooled memories that state a reached edge their graph signal, and pools the
/// stating memories the pool lacks (found by their edge's sentence). Returns the keys pooled
/// anew (they need their cosine) and each graph-scored key's memory id.
pub(super) fn pool(
    store: &dyn Store,
    cq: &CandidateQuery<'_>,
    side: &GraphSide,
    known: &HashMap<i64, MemoryId>,
    pooled: &mut HashMap<i64, Scores>,
) -> Result<(Vec<i64>, HashMap<i64, MemoryId>)> {
    let mut ids: HashMap<i64, MemoryId> = HashMap::new();
    if side.by_memory.is_empty() {
        return Ok((Vec::new(), ids));
    }
    // The pooled keys whose memory id the search has not read yet (the speaker hop reads
    // most of the pool before).
    let mut keys: Vec<i64> = (pooled.keys().copied())
        .filter(|k| !known.contains_key(k))
        .collect();
    keys.sort_unstable();
    let read = store.fetch(cq, &keys)?;
    let pooled_ids = (read.iter().map(|(k, m)| (*k, m.id))).chain(
        pooled
            .keys()
            .filter_map(|k| known.get(k).map(|id| (*k, *id))),
    );
    let mut found: HashSet<MemoryId> = HashSet::new();
    for (key, id) in pooled_ids {
        if side.by_memory.contains_key(&id) {
            found.insert(id);
            ids.insert(key, id);
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
