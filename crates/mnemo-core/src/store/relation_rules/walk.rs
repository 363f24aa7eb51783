//! The bounded neighbourhood walk of [`Relations::neighbourhood`], for every backend: hop by
//! hop from the named entities, at most [`MAX_WALK_DEPTH`] hops and the walk's limit of edges.

use super::*;

/// The walk of [`Relations::neighbourhood`], for every backend.
pub fn walk_neighbourhood<R: Relations + ?Sized>(
    store: &R,
    walk: &Walk<'_>,
) -> Result<Neighbourhood> {
    if walk.depth == 0 || walk.depth > MAX_WALK_DEPTH {
        return Err(crate::Error::invalid(
            "depth",
            format!("must be between 1 and {MAX_WALK_DEPTH}"),
        ));
    }
    let limit = walk.limit.clamp(1, MAX_RELATIONS);
    let found = named_entities(store, walk.scope, "entity", walk.entity)?;
    let start: Vec<EntityId> = found.iter().map(|e| e.id).collect();
    let mut seen: std::collections::HashSet<EntityId> = start.iter().copied().collect();
    let mut used: std::collections::HashSet<RelationId> = std::collections::HashSet::new();
    let mut out = Neighbourhood {
        center: (found.into_iter())
            .map(|e| RelationNode {
                id: Some(e.id),
                name: e.name,
                entity_type: e.entity_type,
            })
            .collect(),
        ..Neighbourhood::default()
    };
    let mut frontier = start;
    let now = chrono::Utc::now();
    for _ in 0..walk.depth {
        // A full walk still reads the next hop (bounded: limit + 1 edges), so that `truncated`
        // says whether the limit, not the graph, ended it.
        if frontier.is_empty() || out.truncated {
            break;
        }
        let edges = store.edges(&EdgeQuery {
            scope: walk.scope,
            entities: &frontier,
            predicate: None,
            view: walk.view,
            now,
            limit: limit + 1,
        })?;
        let mut next = Vec::new();
        for e in edges {
            if !used.insert(e.id) {
                continue;
            }
            if out.relations.len() >= limit {
                out.truncated = true;
                break;
            }
            for n in [&e.subject, &e.object] {
                if let Some(id) = n.id {
                    if seen.insert(id) {
                        next.push(id);
                        out.nodes.push(n.clone());
                    }
                }
            }
            out.relations.push(e);
        }
        frontier = next;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(year: i32) -> Timestamp {
        chrono::Utc.with_ymd_and_hms(year, 1, 1, 0, 0, 0).unwrap()
    }

    #[test]
    fn an_as_of_view_reads_the_edge_valid_then_from_a_memory_not_yet_retired() {
        let now = at(2026);
        let v = |active: bool, until: Option<i32>| Validity {
            active,
            created_at: at(2023),
            expires_at: None,
            valid_from: None,
            valid_until: until.map(at),
        };
        let then = EdgeView::AsOf(at(2021));
        assert!(then.holds(at(2020), Some(at(2022))));
        assert!(!then.holds(at(2022), None));
        // The memory was written in 2023 about 2020: it still supports the 2021 view.
        assert!(then.supports(MemoryState::Active, &v(true, None), now));
        assert!(!then.supports(MemoryState::Superseded, &v(false, Some(2020)), now));
        assert!(!EdgeView::Current.supports(MemoryState::Deleted, &v(false, Some(2024)), now));
        assert!(!EdgeView::All.supports(MemoryState::Deleted, &v(false, Some(2024)), now));
        assert!(EdgeView::All.supports(MemoryState::Superseded, &v(false, Some(2024)), now));
        assert!(
            EdgeView::Current.holds(at(2020), None)
                && !EdgeView::Current.holds(at(2020), Some(at(2021)))
        );
    }
}
