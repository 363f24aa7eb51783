//! Mem0's graph memory on the Mem0 routes (`enable_graph`): the edges of mnemo's entity graph in
//! the shapes Mem0's clients print.
//!
//! - search: `relations: [{source, source_type, relationship, target, target_type,
//!   destination}]` — the platform names the far end `target`, the OSS server `destination`;
//!   both are sent so either SDK finds its key;
//! - add: `relations: {added_entities: [[{source, relationship, target}]], deleted_entities:
//!   [...]}`, as the OSS `Memory.add` answers (one inner list per edge): the edges the add
//!   wrote or stated again, and those its statements contradicted (their valid time closed);
//! - entities: each user, agent or run carries `relations`, the current edges of the graph node
//!   named like it (Mem0's graph names the user's own node after the user id).
//!
//! Every read goes through the graph service, so another scope's edge is a missing one.

use super::*;
use mnemo_core::{AddOutcome, Relation, RelationWriteKind};

/// The most edges one entity or one named query entity brings.
const EDGES_PER_ENTITY: usize = 20;

/// One edge as Mem0's search and entity answers show it.
fn edge_json(e: &Relation) -> Value {
    json!({
        "source": e.subject.name,
        "source_type": e.subject.entity_type,
        "relationship": e.predicate,
        "target": e.object.name,
        "target_type": e.object.entity_type,
        "destination": e.object.name,
    })
}

/// The relations of entity `name` in `parts`' scope; a name no entity has gives none.
async fn named(
    s: &AppState,
    p: &Principal,
    parts: &ScopeParts,
    name: String,
) -> ApiResult<Vec<Relation>> {
    match (s.service)
        .entity_relations(p, parts, name, None, Some(EDGES_PER_ENTITY))
        .await
    {
        Ok(edges) => Ok(edges),
        Err(e) if e.status() == axum::http::StatusCode::NOT_FOUND => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The current edges of the entities `query` names (rule mentions, at most 8).
pub(super) async fn query_relations(
    s: &AppState,
    p: &Principal,
    parts: &ScopeParts,
    query: &str,
) -> ApiResult<Vec<Value>> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let names = mnemo_core::extract_entities(query).into_iter();
    // A mention no entity could have (too long for a node's name) has no edges to look up.
    let names = names.filter(|m| mnemo_core::check_relation_name("entity", &m.name).is_ok());
    for m in names.take(8) {
        for e in named(s, p, parts, m.name).await? {
            if seen.insert(e.id) {
                out.push(edge_json(&e));
            }
        }
    }
    Ok(out)
}

/// The edges an add touched, in the OSS add answer's shape.
pub(super) async fn add_relations(
    s: &AppState,
    p: &Principal,
    parts: &ScopeParts,
    out: &AddOutcome,
) -> ApiResult<Value> {
    let ids: Vec<_> = out.relations.iter().map(|w| w.id).collect();
    let edges = match ids.is_empty() {
        true => Vec::new(),
        false => s.service.relations_by_id(p, parts, &ids).await?,
    };
    let (mut added, mut deleted) = (Vec::new(), Vec::new());
    let mut seen = std::collections::HashSet::new();
    for w in &out.relations {
        let Some(e) = edges.iter().find(|e| e.id == w.id) else {
            continue;
        };
        if !seen.insert((w.id, w.event == RelationWriteKind::Closed)) {
            continue;
        }
        let row = json!([{
            "source": e.subject.name,
            "relationship": e.predicate,
            "target": e.object.name,
        }]);
        match w.event {
            RelationWriteKind::Added | RelationWriteKind::Supported => added.push(row),
            RelationWriteKind::Closed => deleted.push(row),
        }
    }
    Ok(json!({ "added_entities": added, "deleted_entities": deleted }))
}

/// Each listed user, agent or run with `relations`: the edges of the node named like it, read
/// in its own scope — all of them in one read of the graph.
pub(super) async fn with_relations(
    s: &AppState,
    p: &Principal,
    mut list: Vec<Value>,
) -> ApiResult<Vec<Value>> {
    let mut reads = Vec::new();
    let mut at = Vec::new();
    for (i, item) in list.iter().enumerate() {
        let (Some(kind), Some(name)) = (item["type"].as_str(), item["name"].as_str()) else {
            continue;
        };
        let name = name.to_string();
        let parts = match kind {
            "user" => ScopeParts::new(Some(name.clone()), None, None),
            "agent" => ScopeParts::new(None, Some(name.clone()), None),
            _ => ScopeParts::new(None, None, Some(name.clone())),
        };
        reads.push((parts, name));
        at.push(i);
    }
    if reads.is_empty() {
        return Ok(list);
    }
    let found = (s.service)
        .relations_of_each(p, reads, Some(EDGES_PER_ENTITY))
        .await?;
    for (i, edges) in at.into_iter().zip(found) {
        list[i]["relations"] = Value::Array(edges.iter().map(edge_json).collect());
    }
    Ok(list)
}
