//! The pack's relations section: the current edges of the entities the query names, one
//! compact line each (`Ana — lives_in → Porto (since 2023-05-08)`), chosen under the budget
//! like every other item.

use mnemo_core::pack::{Candidate, PackItem, Reason, Section};
use mnemo_core::{EdgeView, Hit, Relation, Result, Scope, Store};
use std::collections::HashSet;

/// The most edges read per named entity.
const PER_ENTITY: usize = 8;
/// The most query names looked up.
const MAX_NAMES: usize = 8;
/// A relation's value relative to the best memory hit's: below the best match (the memories
/// carry the text the edge was read from), above the weak ones.
const RELATIVE_VALUE: f32 = 0.5;

/// The relation candidates for `query` (none when it names no entity with edges).
pub(super) fn candidates(
    store: &dyn Store,
    scope: &Scope,
    query: &str,
    hits: &[Hit],
) -> Result<Vec<Candidate>> {
    let mut names: Vec<(String, String)> = mnemo_core::extract_entities(query)
        .into_iter()
        .map(|e| (e.normalized, e.name))
        .collect();
    names.dedup_by(|a, b| a.0 == b.0);
    names.truncate(MAX_NAMES);
    let best = hits.iter().map(|h| h.score).fold(0.0f32, f32::max);
    let value = if best > 0.0 {
        best * RELATIVE_VALUE
    } else {
        RELATIVE_VALUE
    };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (normalized, shown) in names {
        let edges = match store.relations_of(scope, &normalized, EdgeView::Current, PER_ENTITY) {
            Ok(edges) => edges,
            // A name no entity of the scope has: nothing to show for it.
            Err(e) if e.kind() == mnemo_core::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for (rank, edge) in edges.into_iter().enumerate() {
            if !seen.insert(edge.id) {
                continue;
            }
            out.push(candidate(&edge, &shown, value, rank));
        }
    }
    Ok(out)
}

/// One edge as a pack line.
fn candidate(edge: &Relation, entity: &str, value: f32, rank: usize) -> Candidate {
    let text = format!(
        "{} — {} → {} (since {})",
        edge.subject.name,
        edge.predicate,
        edge.object.name,
        edge.valid_from.format("%Y-%m-%d")
    );
    Candidate {
        section: Section::Relations,
        item: PackItem {
            kind: "relation".into(),
            id: edge.id.to_string(),
            text,
            tokens: 0,
            reason: Reason::Related,
            score: None,
            from: Some(entity.to_string()),
            message_ids: edge.sources.iter().filter_map(|s| s.message_id).collect(),
            at: Some(edge.valid_from),
            event_time: None,
        },
        // Each edge of an entity a little below the one before (most recent first).
        value: value / (1.0 + 0.1 * rank as f32),
        block: None,
        order: rank as i64,
        verbatim: false,
        full: None,
    }
}
