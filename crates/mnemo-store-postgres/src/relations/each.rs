//! [`Relations::relations_of_each`] on PostgreSQL: the edges of many (scope, name) reads in three
//! statements per [`CHUNK`] reads — the entity matches of every read, then every read's edges
//! (a branch per read, with its own scope, view and limit), then the statements supporting
//! them — where reading them one by one costs four or five round trips each. Each read answers
//! what `relations_of` (a walk of depth one) answers: the same matches, order and limits.

use super::read::{supported, supports, time_bounds};
use super::*;
use crate::predicate::{self, Pred};
use crate::{pg_err, PgStore};
use mnemo_core::entity::{
    entities_match, exact_match_variants, near_match_window, normalize_entity,
};
use mnemo_core::store::MAX_RELATIONS;
use postgres::GenericClient;

/// The most reads one statement carries, which bounds its text and its parameters.
const CHUNK: usize = 100;

/// The most entities a name stands for (`named_entities`' lookup).
const NAMED: usize = 16;

pub(super) fn relations_of_each(
    store: &PgStore,
    reads: &[EdgesOf<'_>],
) -> Result<Vec<Vec<Relation>>> {
    for r in reads {
        check_relation_name("entity", r.entity)?;
    }
    let mut out = Vec::with_capacity(reads.len());
    for chunk in reads.chunks(CHUNK) {
        let named = store.with(|c| named(c, chunk))?;
        out.extend(store.with(|c| edges_of(c, chunk, &named))?);
    }
    Ok(out)
}

/// The ids of the entities each read's name stands for in its scope, as `find_entities`
/// orders them (exact variants, then near matches), at most [`NAMED`].
fn named(c: &mut impl GenericClient, reads: &[EdgesOf<'_>]) -> Result<Vec<Vec<Uuid>>> {
    let mut p = Pred::default();
    let mut branches = Vec::new();
    let names: Vec<String> = reads.iter().map(|r| normalize_entity(r.entity)).collect();
    for (i, (r, name)) in reads.iter().zip(&names).enumerate() {
        if name.is_empty() {
            continue;
        }
        predicate::scope(&mut p, "e", r.scope);
        let scope = p.take_sql();
        let variants = p.arg(exact_match_variants(name));
        let mut matches = format!("e.normalized = ANY({variants})");
        if let Some(w) = near_match_window(name) {
            let (lo, hi) = (p.arg(w.from), p.arg(w.before));
            let (s, l) = (p.arg(w.shortest as i32), p.arg(w.longest as i32));
            matches.push_str(&format!(
                " OR (e.normalized >= {lo} AND e.normalized < {hi} \
                 AND char_length(e.normalized) BETWEEN {s} AND {l})"
            ));
        }
        branches.push(format!(
            "SELECT {i}::int AS i, e.id, e.normalized FROM entities e \
             WHERE {scope} AND ({matches})"
        ));
    }
    let mut exact = vec![Vec::new(); reads.len()];
    let mut near = vec![Vec::new(); reads.len()];
    if branches.is_empty() {
        return Ok(exact);
    }
    let rows = (c.query(&branches.join(" UNION ALL "), &p.params())).map_err(pg_err)?;
    for r in &rows {
        let (i, id, found): (i32, Uuid, String) = (r.get(0), r.get(1), r.get(2));
        let i = i as usize;
        if exact_match_variants(&names[i]).contains(&found) {
            exact[i].push(id);
        } else if entities_match(&found, &names[i]) {
            near[i].push(id);
        }
    }
    Ok(exact
        .into_iter()
        .zip(near)
        .map(|(mut ids, near)| {
            for id in near {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
            ids.truncate(NAMED);
            ids
        })
        .collect())
}

/// Each read's edges touching its entities `named`, as a walk of depth one reads them: the
/// most recent first, what the view sees, at most the read's limit.
fn edges_of(
    c: &mut impl GenericClient,
    reads: &[EdgesOf<'_>],
    named: &[Vec<Uuid>],
) -> Result<Vec<Vec<Relation>>> {
    let limit = |r: &EdgesOf<'_>| r.limit.clamp(1, MAX_RELATIONS);
    let mut p = Pred::default();
    let mut branches = Vec::new();
    for (i, (r, ids)) in reads.iter().zip(named).enumerate() {
        if ids.is_empty() {
            continue;
        }
        predicate::scope(&mut p, "r", r.scope);
        let a = p.arg(ids.clone());
        p.and(&format!(
            "(r.subject_id = ANY({a}) OR r.object_id = ANY({a}))"
        ));
        time_bounds(&mut p, r.view);
        // As `edges` reads limit + 1 (the walk's look past its limit), and past that so that
        // edges hidden by their memories' state do not starve it.
        let read = (limit(r) + 1).saturating_mul(2) + 16;
        branches.push(format!(
            "(SELECT {i}::int AS i, {EDGE_COLS} FROM {EDGE_FROM} WHERE {} \
             ORDER BY r.valid_from DESC, r.id LIMIT {read})",
            p.take_sql()
        ));
    }
    let mut out = vec![Vec::new(); reads.len()];
    if branches.is_empty() {
        return Ok(out);
    }
    let rows = (c.query(&branches.join(" UNION ALL "), &p.params())).map_err(pg_err)?;
    for r in &rows {
        let i = r.get::<_, i32>("i") as usize;
        let e = edge_from_row(r)?;
        if reads[i].view.holds(e.valid_from, e.valid_until) {
            out[i].push(e);
        }
    }
    let support = supports(c, out.iter().flatten().map(|e| e.id.0).collect())?;
    let now = chrono::Utc::now();
    // In each branch's order (a union promises none of its own).
    for edges in &mut out {
        edges.sort_by(|a, b| (b.valid_from.cmp(&a.valid_from)).then(a.id.0.cmp(&b.id.0)));
    }
    Ok(out
        .into_iter()
        .zip(reads)
        .map(|(edges, r)| {
            let mut seen = std::collections::HashSet::new();
            let mut kept = supported(edges, &support, r.view, now);
            kept.retain(|e| seen.insert(e.id));
            kept.truncate(limit(r));
            kept
        })
        .collect())
}
