//! Entity candidates: the memories linked to entities of the searched scope whose names match
//! the query's (`entities::matching_entities`: equal or nearly equal normalised names), scored
//! by `mnemo_core::entity::entity_score` from the link counts read here, as the embedded store
//! does.
//!
//! A rare entity's memories are all walked (through `entity_memories`, with the candidate
//! predicate on each memory); a common one (linked to more memories than four times the limit,
//! and at least `ENTITY_WALK_MIN`) only scores the keys the other signals pooled, so the cost
//! follows the pool, not how often the name occurs.

use super::{candidate_pred, ranked};
use crate::entities::matching_entities;
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::*;
use std::collections::HashMap;
use uuid::Uuid;

/// Entities linked to at most this many memories (or four times the candidate limit, if
/// larger) have all their memories enumerated as candidates.
const ENTITY_WALK_MIN: usize = 64;

impl PgStore {
    pub(crate) fn by_entities(
        &self,
        q: &CandidateQuery<'_>,
        names: &[String],
        pooled: &[i64],
    ) -> Result<Vec<Candidate>> {
        q.scope.validate()?;
        if names.is_empty() || q.limit == 0 {
            return Ok(Vec::new());
        }
        self.with(|c| {
            // The entities of every exact scope the query's scope covers.
            let mut lookup = Pred::default();
            predicate::scope(&mut lookup, "e", q.scope);
            let lookup_params = lookup.params();
            // entity id → (memories it is linked to, which query names it matched)
            let mut matched: HashMap<Uuid, (u64, Vec<usize>)> = HashMap::new();
            for (i, name) in names.iter().enumerate() {
                let found =
                    matching_entities(c, (lookup.where_sql(), &lookup_params), name, false)?;
                for n in found {
                    matched
                        .entry(n.id)
                        .or_insert((n.mentions, Vec::new()))
                        .1
                        .push(i);
                }
            }
            if matched.is_empty() {
                return Ok(Vec::new());
            }
            let walk_max = q.limit.saturating_mul(4).max(ENTITY_WALK_MIN) as u64;
            let (rare, common): (Vec<Uuid>, Vec<Uuid>) = matched
                .keys()
                .copied()
                .partition(|id| matched[id].0 <= walk_max);
            let mut per_memory: HashMap<i64, Vec<Uuid>> = HashMap::new();
            if !rare.is_empty() {
                let mut p = candidate_pred(q)?;
                let ids = p.arg(rare);
                p.and(&format!("em.entity_id = ANY({ids})"));
                let sql = format!(
                    "SELECT m.seq, em.entity_id FROM entity_memories em JOIN memories m \
                     ON m.scope_key = em.scope_key AND m.id = em.memory_id WHERE {}",
                    p.where_sql()
                );
                for r in c.query(&sql, &p.params()).map_err(pg_err)? {
                    per_memory.entry(r.get(0)).or_default().push(r.get(1));
                }
            }
            if !common.is_empty() && !pooled.is_empty() {
                // The pooled keys passed the scope and filters on their own side already.
                let rows = c
                    .query(
                        "SELECT m.seq, em.entity_id FROM memories m JOIN entity_memories em \
                         ON em.scope_key = m.scope_key AND em.memory_id = m.id \
                         WHERE m.seq = ANY($1) AND em.entity_id = ANY($2)",
                        &[&pooled, &common],
                    )
                    .map_err(pg_err)?;
                for r in rows {
                    let entities = per_memory.entry(r.get(0)).or_default();
                    let id: Uuid = r.get(1);
                    if !entities.contains(&id) {
                        entities.push(id);
                    }
                }
            }
            // N: the memories the scope indexes (any state but deleted), at least the largest
            // link count, so no idf goes negative.
            // The scope's indexed memories (every one not deleted: those have an embedding and a
            // `lexical` vector), from the per-owner counts the lexical triggers keep; counting
            // the rows here read the whole scope on every search.
            let mut scope = Pred::default();
            predicate::scope(&mut scope, "s", q.scope);
            let total: i64 = c
                .query_one(
                    &format!(
                        "SELECT COALESCE(sum(s.docs), 0)::bigint FROM lexical_scopes s WHERE {}",
                        scope.where_sql()
                    ),
                    &scope.params(),
                )
                .map_err(pg_err)?
                .get(0);
            let total = (total.max(0) as u64).max(matched.values().map(|m| m.0).max().unwrap_or(0));
            let scored = per_memory
                .into_iter()
                .map(|(key, entities)| {
                    let mut mentions = vec![Vec::new(); names.len()];
                    for e in entities {
                        let (m, which) = &matched[&e];
                        for &i in which {
                            mentions[i].push(*m);
                        }
                    }
                    Candidate {
                        key,
                        score: mnemo_core::entity::entity_score(&mentions, total),
                    }
                })
                .collect();
            let mut out = ranked(scored);
            out.truncate(q.limit);
            Ok(out)
        })
    }
}
