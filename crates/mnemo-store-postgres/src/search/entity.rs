//! Entity candidates: the memories linked to entities of the searched scope whose names match
//! the query's (`entities::matching_entities`: equal or nearly equal normalised names), scored
//! by `mnemo_core::entity::entity_score` from the link counts read here, as the embedded store
//! does.
//!
//! A rare entity's memories are all walked (through `entity_memories`, with the candidate
//! predicate on each memory); a common one (linked to more memories than four times the limit,
//! and at least core's `ENTITY_WALK_MIN`; `EntityMatches::split`) only scores the keys the other signals pooled, so the cost
//! follows the pool, not how often the name occurs.

use crate::pg_err;
use crate::pool::Conn;
use crate::predicate::{self, Pred};
use mnemo_core::entity::{entities_match, exact_match_variants, near_match_window};
use mnemo_core::*;
use uuid::Uuid;

/// The entities of the exact scopes `scope` covers that match each query name (as
/// `entities::matching_entities` matches one: exact variants by equality, near matches from the
/// name's first-character range and length window, kept when `entities_match`), read for all
/// names in one statement: entity id → (memories linked to it, indexes of the names it matched).
pub(crate) fn matching(
    c: &mut Conn,
    scope: &Scope,
    names: &[String],
) -> Result<EntityMatches<Uuid>> {
    let (mut exact_i, mut exact_v) = (Vec::new(), Vec::new());
    let (mut near_i, mut lo, mut hi, mut shortest, mut longest) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            continue;
        }
        for v in exact_match_variants(name) {
            exact_i.push(i as i32);
            exact_v.push(v);
        }
        if let Some(w) = near_match_window(name) {
            near_i.push(i as i32);
            lo.push(w.from);
            hi.push(w.before);
            shortest.push(w.shortest as i32);
            longest.push(w.longest as i32);
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
    let mut matched = EntityMatches::new(names.len());
    for r in c.query(&sql, &p.params()).map_err(pg_err)? {
        let (i, id, normalized, mentions, exact): (i32, Uuid, String, i64, bool) =
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4));
        let i = i as usize;
        if !exact && !entities_match(&normalized, &names[i]) {
            continue;
        }
        matched.add(i, id, mentions.max(0) as u64);
    }
    Ok(matched)
}
