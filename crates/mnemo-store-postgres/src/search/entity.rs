//! Entity candidates: the memories linked to entities of the searched scope whose names match
//! the query's (`entities::matching_entities`: equal or nearly equal normalised names), scored
//! by `mnemo_core::entity::entity_score` from the link counts read here, as the embedded store
//! does.
//!
//! A rare entity's memories are all walked (through `entity_memories`, with the candidate
//! predicate on each memory); a common one (linked to more memories than four times the limit,
//! and at least `ENTITY_WALK_MIN`) only scores the keys the other signals pooled, so the cost
//! follows the pool, not how often the name occurs.

use super::{candidate_pred_into, ranked};
use crate::pool::Conn;
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::entity::{entities_match, exact_match_variants, near_match_lengths};
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
        self.with_conn(|c| {
            // entity id → (memories it is linked to, which query names it matched)
            let matched = matching(c, q.scope, names)?;
            if matched.is_empty() {
                return Ok(Vec::new());
            }
            let walk_max = q.limit.saturating_mul(4).max(ENTITY_WALK_MIN) as u64;
            let (rare, common): (Vec<Uuid>, Vec<Uuid>) = matched
                .keys()
                .copied()
                .partition(|id| matched[id].0 <= walk_max);
            // One statement: the scope's indexed memories (every one not deleted) from the
            // per-owner counts the lexical triggers keep (counting the rows read the whole scope
            // on every search); the memories of rare entities, with the candidate predicate on
            // each; the pooled keys linked to common ones (they passed the scope and filters on
            // their own side already; the scope stays in the query all the same). A part with
            // nothing to look for is left out: each mention of `memories` costs planning time.
            let mut p = Pred::default();
            predicate::scope(&mut p, "s", q.scope);
            let mut sql = format!(
                "SELECT NULL::bigint, NULL::uuid, COALESCE(sum(s.docs), 0)::bigint \
                 FROM lexical_scopes s WHERE {}",
                p.take_sql()
            );
            if !rare.is_empty() {
                candidate_pred_into(&mut p, q)?;
                let walk = p.take_sql();
                let rare = p.arg(rare);
                sql.push_str(&format!(
                    " UNION ALL SELECT m.seq, em.entity_id, NULL FROM entity_memories em \
                     JOIN memories m ON m.scope_key = em.scope_key AND m.id = em.memory_id \
                     WHERE {walk} AND em.entity_id = ANY({rare}::uuid[])"
                ));
            }
            if !common.is_empty() && !pooled.is_empty() {
                predicate::scope(&mut p, "m", q.scope);
                let scope = p.take_sql();
                let (common, pooled) = (p.arg(common), p.arg(pooled.to_vec()));
                sql.push_str(&format!(
                    " UNION ALL SELECT m.seq, em.entity_id, NULL FROM memories m \
                     JOIN entity_memories em ON em.scope_key = m.scope_key AND em.memory_id = m.id \
                     WHERE {scope} AND m.seq = ANY({pooled}::bigint[]) \
                     AND em.entity_id = ANY({common}::uuid[])"
                ));
            }
            let mut per_memory: HashMap<i64, Vec<Uuid>> = HashMap::new();
            let mut total = 0i64;
            for r in c.query(&sql, &p.params()).map_err(pg_err)? {
                match r.get::<_, Option<i64>>(0) {
                    Some(key) => {
                        let entities = per_memory.entry(key).or_default();
                        let id: Uuid = r.get(1);
                        if !entities.contains(&id) {
                            entities.push(id);
                        }
                    }
                    None => total = r.get(2),
                }
            }
            // N, at least the largest link count, so no idf goes negative.
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

/// The entities of the exact scopes `scope` covers that match each query name (as
/// `entities::matching_entities` matches one: exact variants by equality, near matches from the
/// name's first-character range and length window, kept when `entities_match`), read for all
/// names in one statement: entity id → (memories linked to it, indexes of the names it matched).
fn matching(
    c: &mut Conn,
    scope: &Scope,
    names: &[String],
) -> Result<HashMap<Uuid, (u64, Vec<usize>)>> {
    let (mut exact_i, mut exact_v) = (Vec::new(), Vec::new());
    let (mut near_i, mut lo, mut hi, mut shortest, mut longest) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, name) in names.iter().enumerate() {
        let Some(first) = name.chars().next() else {
            continue;
        };
        for v in exact_match_variants(name) {
            exact_i.push(i as i32);
            exact_v.push(v);
        }
        if let Some((s, l)) = near_match_lengths(name) {
            near_i.push(i as i32);
            lo.push(first.to_string());
            hi.push(
                char::from_u32(first as u32 + 1)
                    .unwrap_or(char::MAX)
                    .to_string(),
            );
            shortest.push(s as i32);
            longest.push(l as i32);
        }
    }
    let mut p = Pred::default();
    predicate::scope(&mut p, "e", scope);
    let scope_sql = p.take_sql();
    let (ei, ev) = (p.arg(exact_i), p.arg(exact_v));
    let (ni, lo, hi) = (p.arg(near_i), p.arg(lo), p.arg(hi));
    let (shortest, longest) = (p.arg(shortest), p.arg(longest));
    let sql = format!(
        "SELECT x.i, e.id, e.normalized, e.mentions, TRUE \
         FROM unnest({ei}::int4[], {ev}::text[]) AS x(i, name) \
         JOIN entities e ON e.normalized = x.name WHERE {scope_sql} \
         UNION ALL \
         SELECT w.i, e.id, e.normalized, e.mentions, FALSE \
         FROM unnest({ni}::int4[], {lo}::text[], {hi}::text[], {shortest}::int4[], {longest}::int4[]) \
              AS w(i, lo, hi, shortest, longest) \
         JOIN entities e ON e.normalized >= w.lo AND e.normalized < w.hi \
              AND char_length(e.normalized) BETWEEN w.shortest AND w.longest \
         WHERE {scope_sql}"
    );
    let mut matched: HashMap<Uuid, (u64, Vec<usize>)> = HashMap::new();
    for r in c.query(&sql, &p.params()).map_err(pg_err)? {
        let (i, id, normalized, mentions, exact): (i32, Uuid, String, i64, bool) =
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
        let i = i as usize;
        if !exact && !entities_match(&normalized, &names[i]) {
            continue;
        }
        let which = &mut matched
            .entry(id)
            .or_insert((mentions.max(0) as u64, Vec::new()))
            .1;
        if !which.contains(&i) {
            which.push(i);
        }
    }
    Ok(matched)
}
