//! Fixtures of the relations' store contract (`contract_relations`,
//! `contract_relation_lifecycle`, `contract_relations_symmetric`): relation candidates, batches
//! that state them, and reads of a scope's memories and of an edge list's objects. Re-exported
//! by `contract`.

use crate::*;
use chrono::TimeZone;
use mnemo_core::relation::{ObjectKind, RelationCandidate};
use mnemo_core::*;
use serde_json::json;

/// March 1st of year `y`, noon UTC: the time a statement of the cases was said.
pub(crate) fn year(y: i32) -> Timestamp {
    chrono::Utc.with_ymd_and_hms(y, 3, 1, 12, 0, 0).unwrap()
}

/// A relation candidate between two people or a person and a place.
pub fn triple(subject: &str, predicate: &str, object: &str) -> RelationCandidate {
    let place = matches!(predicate, "lives_in" | "moved_to" | "works_at");
    RelationCandidate {
        subject: subject.into(),
        subject_type: "person".into(),
        predicate: predicate.into(),
        object: object.into(),
        object_kind: ObjectKind::Entity,
        object_type: if place { "place" } else { "person" }.into(),
        sentence: format!("{subject} {} {object}.", predicate.replace('_', " ")),
    }
}

/// A one-memory batch said at `at` that states `relations`.
pub fn stating(
    scope: &Scope,
    text: &str,
    at: Timestamp,
    relations: &[RelationCandidate],
) -> WriteBatch {
    let mut b = batch_at(scope, text, json!({}), at, None);
    let memory = b.memories[0].id;
    b.relations = (relations.iter())
        .map(|c| NewRelation {
            memory,
            candidate: c.clone(),
        })
        .collect();
    b
}

pub(crate) fn state(
    store: &dyn Store,
    s: &Scope,
    text: &str,
    at: Timestamp,
    r: &[RelationCandidate],
) -> MemoryId {
    store.write(vec![stating(s, text, at, r)]).expect("write")[0].results[0].id
}

pub(crate) fn memories(store: &dyn Store, s: &Scope) -> usize {
    let q = ListQuery::new(s.clone(), 100);
    store.list(&q).unwrap().results.len()
}

pub(crate) fn objects(edges: &[Relation], predicate: &str) -> Vec<String> {
    let mut out: Vec<String> = (edges.iter())
        .filter(|e| e.predicate == predicate)
        .map(|e| e.object.name.clone())
        .collect();
    out.sort();
    out
}
