//! The speaker hop of graph search: a memory a person the query names *said* is one hop from
//! that person.
//!
//! A message's speaker is the first person of its text: "I signed up for a pottery class" is
//! about its speaker, though it never names her. In the graph that is an episode's edge to its
//! speaker (Zep's episodes mention their speaker the same way); mnemo keeps it as the memory's
//! `actor`, so the hop needs no stored edge. It states no predicate, so how relevant the memory
//! is stays the pool's to judge: the hop only lifts pooled memories, by [`SPOKEN`].
//!
//! A name the hop resolves to a speaker is matched through the graph, not as a word, as a
//! temporal phrase is matched by event time rather than by its digits: the lexical side is run
//! again without the speakers' names. Otherwise every line the *other* person addressed to
//! her ("Wow, Melanie!") would keep the credit of her name, and "What activities does Melanie
//! partake in" would rank those lines with what she said. The names that are not speakers
//! (a friend, a city, a book) stay words of the query.
//!
//! ```text
//! speakers  = the query's names that are the actor of a pooled memory (normal forms)
//! lexical   = BM25 over the query's words without the speakers' names
//! graph(m) := max(graph(m), SPOKEN)   for a pooled memory m a speaker said
//! ```
//!
//! Bounded work: one read of the pooled memories, and when the query names a speaker one more
//! lexical lookup of at most the pool's size and one read of what it adds.

use super::Scores;
use crate::error::Result;
use crate::memory::MemoryId;
use crate::store::{CandidateQuery, Store};
use std::collections::{HashMap, HashSet};

/// The graph signal of a pooled memory a person the query names said: half of what a
/// first-hop edge of one statement that answers the whole question scores (0.75, see the
/// `graph` module). A speaker edge says who, not what: it is worth a hop, not an answer.
///
/// 0.3, 0.4 and 0.5 were measured on the dev file first: the trade-off between multi-hop and
/// adversarial questions is smooth, and this value lies where neither overall recall nor the
/// multi-hop target is lost there (BENCHMARKS.md, "Graph search: the speaker hop").
pub const SPOKEN: f32 = 0.5 * 0.75;

/// The query's names that speak pooled memories, and the pooled memories they said.
#[derive(Debug, Default)]
pub(super) struct Speakers {
    /// Normal forms ([`crate::entity::normalize_entity`]) of the names found as speakers.
    names: HashSet<String>,
    /// The pooled keys whose memory one of `names` said.
    said: Vec<i64>,
    /// Every key read on the way, with its memory's id (the walk's pooling reads no key twice).
    fetched: HashMap<i64, MemoryId>,
}

impl Speakers {
    /// Finds which of `named` (normal forms of the query's names) said a pooled memory.
    pub(super) fn find(
        store: &dyn Store,
        cq: &CandidateQuery<'_>,
        named: &[String],
        pooled: &HashMap<i64, Scores>,
    ) -> Result<Self> {
        let mut out = Speakers::default();
        if named.is_empty() || pooled.is_empty() {
            return Ok(out);
        }
        let mut keys: Vec<i64> = pooled.keys().copied().collect();
        keys.sort_unstable();
        out.take(store, cq, named, &keys)?;
        Ok(out)
    }

    /// Records the keys among `keys` that one of `named` said.
    fn take(
        &mut self,
        store: &dyn Store,
        cq: &CandidateQuery<'_>,
        named: &[String],
        keys: &[i64],
    ) -> Result<()> {
        for (key, memory) in store.fetch(cq, keys)? {
            self.fetched.insert(key, memory.id);
            let Some(actor) = memory.actor.as_deref() else {
                continue;
            };
            let actor = crate::entity::normalize_entity(actor);
            if named.contains(&actor) {
                self.said.push(key);
                self.names.insert(actor);
            }
        }
        Ok(())
    }

    /// The keys read so far and their memories' ids.
    pub(super) fn fetched(&self) -> &HashMap<i64, MemoryId> {
        &self.fetched
    }

    pub(super) fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Runs the lexical side again without the speakers' names (see the module docs): every
    /// pooled memory's BM25 is replaced, and the memories it finds that the pool lacks are
    /// pooled. Returns those (they need their cosine); the ones a speaker said are lifted too.
    pub(super) fn rematch_lexical(
        &mut self,
        store: &dyn Store,
        cq: &CandidateQuery<'_>,
        terms: &[String],
        named: &[String],
        pooled: &mut HashMap<i64, Scores>,
    ) -> Result<Vec<i64>> {
        let spoken: HashSet<String> = self
            .names
            .iter()
            .flat_map(|n| crate::text::words(n).collect::<Vec<_>>())
            .collect();
        let kept: Vec<String> = terms
            .iter()
            .filter(|t| !spoken.contains(*t))
            .cloned()
            .collect();
        if kept.len() == terms.len() {
            return Ok(Vec::new());
        }
        let lexical = if kept.is_empty() {
            Vec::new()
        } else {
            store.lexical_candidates(cq, &kept)?
        };
        for s in pooled.values_mut() {
            s.bm25 = 0.0;
            s.bm25_norm = 0.0;
        }
        let max = lexical.iter().map(|c| c.score).fold(0.0f32, f32::max);
        let mut fresh = Vec::new();
        for c in &lexical {
            let s = pooled.entry(c.key).or_insert_with(|| {
                fresh.push(c.key);
                Scores::default()
            });
            s.bm25 = c.score;
            s.bm25_norm = if max > 0.0 { c.score / max } else { 0.0 };
        }
        self.take(store, cq, named, &fresh)?;
        Ok(fresh)
    }

    /// Gives each pooled memory a speaker said the hop's signal (a better stated edge keeps
    /// its own).
    pub(super) fn lift(&self, pooled: &mut HashMap<i64, Scores>) {
        for key in &self.said {
            if let Some(s) = pooled.get_mut(key) {
                s.graph = s.graph.max(SPOKEN);
            }
        }
    }
}
