//! Link expansion: a second hop of retrieval guided by `related` links (spreading activation).
//!
//! The direct hits activate the memories they are linked to; a linked memory's score combines
//! that activation with its own relevance to the query:
//!
//! ```text
//! own(n)        = the hybrid score n would have had as a candidate of this query
//! activation(n) = Σ over direct hits p linked to n:  score(p) × strength(p, n)
//! score(n)      = own(n) × (1 + link_weight × activation(n))
//! ```
//!
//! `own` is the same fusion as the direct ranking (`RankParams` weights): a memory the query's
//! candidate pool already scored keeps that score; any other is scored on its exact cosine
//! alone (it was in neither the dense nor the lexical pool, so its lexical score is taken as
//! zero, as for every dense-only candidate). A neighbour the query does not match gets little
//! from any link, so links lift the near misses that the direct hits vouch for, not whatever
//! happens to be linked. A memory linked to several hits sums their activation.
//!
//! **Focus.** When the query names actors of the memories involved (every word of an actor's
//! name is a word of the query: "What has Melanie painted?" names `Melanie`), activation
//! flows only along links whose both ends are memories of the named actors. In a conversation
//! between two people, a question about one of them gains nothing from the other's links, and
//! the other's notes are not brought in by them. A query that names no actor follows every
//! link.

use super::{Hit, LinkVia, RankParams, Scores, SearchMode, SearchRequest, Via};
use crate::error::Result;
use crate::memory::{LinkKind, MemoryId};
use crate::store::{CandidateQuery, LinkedMemory, LinkedQuery, ScoreQuery, Store};
use std::collections::{HashMap, HashSet};

/// What the direct ranking knows about a candidate: its fused score and per-signal scores.
pub(super) type Pooled = HashMap<i64, (f32, Scores)>;

/// A linked memory's score from its own relevance and its activation (see the module docs).
pub fn linked_score(own: f32, activation: f32, link_weight: f32) -> f32 {
    own.max(0.0) * (1.0 + link_weight * activation.max(0.0))
}

/// One linked memory on its way to the results.
struct Reached {
    memory: crate::memory::Memory,
    key: i64,
    /// Every (parent index in `hits`, link) it was reached through.
    parents: Vec<(usize, crate::memory::Link)>,
}

/// Appends linked results to the direct `hits` of `req` (see the module docs for the score
/// and the focus).
/// Each linked result is attributed (`via`) to the hit that contributed most to its
/// activation; each hit is credited with at most `req.expand_links` of them (a result whose
/// best hit is full goes to its next best), best score first, and the linked results, best
/// first, are cut to `req.expand_limit` (default: `expand_links` per hit). They follow every
/// direct hit, so expansion never displaces one; the request's threshold applies to their
/// score. Linked memories pass the request's scope, kinds, filter and visibility, as
/// candidates do (the store applies them in [`Graph::linked`]). `pooled` holds the direct
/// ranking's candidates by store key.
pub(super) fn expand_links(
    store: &dyn Store,
    req: &SearchRequest,
    vector: &[f32],
    params: &RankParams,
    pooled: &Pooled,
    hits: &mut Vec<Hit>,
) -> Result<()> {
    if req.expand_links == 0 || hits.is_empty() {
        return Ok(());
    }
    let limit = req
        .expand_limit
        .unwrap_or(hits.len().saturating_mul(req.expand_links));
    if limit == 0 {
        return Ok(());
    }
    let ids: Vec<MemoryId> = hits.iter().map(|h| h.memory.id).collect();
    let cq = CandidateQuery {
        scope: &req.scope,
        kinds: req.kinds.as_deref(),
        filter: req.filter.as_ref(),
        read: req.read,
        // Every link of every hit: which ones count is decided by the query, not the strength.
        limit: hits.len().saturating_mul(req.expand_links + 32),
    };
    let linked = store.linked(&LinkedQuery {
        query: cq,
        ids: &ids,
        kinds: &[LinkKind::Related],
    })?;
    let rank_of: HashMap<MemoryId, usize> =
        ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let focus = Focus::of(&req.query, hits, &linked);
    let mut reached: HashMap<MemoryId, Reached> = HashMap::new();
    for LinkedMemory {
        from,
        link,
        key,
        memory,
    } in linked
    {
        let Some(&parent) = rank_of.get(&from) else {
            continue;
        };
        if !focus.carries(&hits[parent].memory.actor, &memory.actor) {
            continue;
        }
        if rank_of.contains_key(&memory.id) {
            continue;
        }
        reached
            .entry(memory.id)
            .or_insert_with(|| Reached {
                memory,
                key,
                parents: Vec::new(),
            })
            .parents
            .push((parent, link));
    }
    if reached.is_empty() {
        return Ok(());
    }
    let unscored: Vec<i64> = reached
        .values()
        .map(|r| r.key)
        .filter(|k| !pooled.contains_key(k))
        .collect();
    let mut cosines: HashMap<i64, f32> = HashMap::new();
    if !unscored.is_empty() && req.mode != SearchMode::Lexical {
        let scoring = ScoreQuery {
            query: cq,
            keys: &unscored,
            vector,
        };
        for c in store.vector_scores(&scoring)? {
            cosines.insert(c.key, c.score);
        }
    }
    let mut scored: Vec<(f32, Scores, Reached)> = reached
        .into_values()
        .map(|mut r| {
            let (own, scores) = match pooled.get(&r.key) {
                Some(p) => *p,
                None => {
                    let dense = cosines.get(&r.key).copied().unwrap_or(0.0);
                    let own = match req.mode {
                        SearchMode::Hybrid => params.dense_weight * dense.max(0.0),
                        SearchMode::Dense => dense,
                        SearchMode::Lexical => 0.0,
                    };
                    let scores = Scores {
                        dense,
                        ..Scores::default()
                    };
                    (own, scores)
                }
            };
            let contribution = |p: &(usize, crate::memory::Link)| hits[p.0].score * p.1.strength;
            let activation: f32 = r.parents.iter().map(contribution).sum();
            // Strongest contribution first; ties to the higher-ranked hit.
            r.parents.sort_by(|a, b| {
                contribution(b)
                    .total_cmp(&contribution(a))
                    .then(a.0.cmp(&b.0))
            });
            (linked_score(own, activation, params.link_weight), scores, r)
        })
        .filter(|(score, _, _)| req.threshold.is_none_or(|t| *score >= t))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.2.memory.id.cmp(&b.2.memory.id)));
    let mut credited = vec![0usize; hits.len()];
    let mut taken: HashSet<MemoryId> = HashSet::new();
    let mut extra: Vec<Hit> = Vec::new();
    for (score, scores, r) in scored {
        if extra.len() == limit {
            break;
        }
        let Some((parent, link)) = r
            .parents
            .iter()
            .find(|(p, _)| credited[*p] < req.expand_links)
        else {
            continue;
        };
        if !taken.insert(r.memory.id) {
            continue;
        }
        credited[*parent] += 1;
        extra.push(Hit {
            score,
            scores,
            via: Some(Via::Link(LinkVia {
                memory_id: hits[*parent].memory.id,
                kind: link.kind,
                strength: link.strength,
            })),
            memory: r.memory,
        });
    }
    hits.extend(extra);
    Ok(())
}

/// The actors a query names, among those of the hits and their linked memories (see the
/// module docs); empty when it names none.
struct Focus(HashSet<String>);

impl Focus {
    fn of(query: &str, hits: &[Hit], linked: &[LinkedMemory]) -> Self {
        let words: HashSet<String> = crate::text::words(query).collect();
        let named = |actor: &str| {
            let mut parts = crate::text::words(actor).peekable();
            parts.peek().is_some() && parts.all(|w| words.contains(&w))
        };
        // Each distinct actor once: a scope has few, and hundreds of results share them.
        let actors: HashSet<&String> = hits
            .iter()
            .map(|h| &h.memory.actor)
            .chain(linked.iter().map(|l| &l.memory.actor))
            .flatten()
            .collect();
        Focus(actors.into_iter().filter(|a| named(a)).cloned().collect())
    }

    /// Whether activation flows along a link between memories of these actors.
    fn carries(&self, a: &Option<String>, b: &Option<String>) -> bool {
        let named = |x: &Option<String>| x.as_ref().is_some_and(|x| self.0.contains(x));
        self.0.is_empty() || (named(a) && named(b))
    }
}
