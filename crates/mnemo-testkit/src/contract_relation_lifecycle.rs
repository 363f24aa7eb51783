//! The store contract for relations, lifecycle: deletion hiding an edge and erasure removing
//! it, scope isolation, export and import. Re-exported by `contract`.

use crate::contract_relation_fixtures::*;
use crate::contract_transfer::{export_lines, with_vectors};
use crate::*;
use mnemo_core::*;

pub fn deleted_memories_hide_their_edges_and_erasure_removes_them(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("rel-gone");
    let ctx = WritePlan::default();
    let once = state(
        store.as_ref(),
        &s,
        "Ana likes Bo",
        year(2022),
        &[triple("Ana", "likes", "Bo")],
    );
    let twice_a = state(
        store.as_ref(),
        &s,
        "Ana works at Acme",
        year(2022),
        &[triple("Ana", "works_at", "Acme")],
    );
    state(
        store.as_ref(),
        &s,
        "Ana is at Acme",
        year(2022),
        &[triple("Ana", "works_at", "Acme")],
    );
    let hidden = state(
        store.as_ref(),
        &s,
        "Ana knows Cy",
        year(2022),
        &[triple("Ana", "friend_of", "Cy")],
    );
    store.delete(&s, hidden, DeleteMode::Soft, &ctx).unwrap();
    let cy = store.relations_of(&s, "Ana", EdgeView::All, 10).unwrap();
    assert!(
        objects(&cy, "friend_of").is_empty(),
        "a deleted memory's edge is hidden: {cy:?}"
    );
    assert!(store
        .between(&s, "Ana", "Cy", EdgeView::Current)
        .unwrap()
        .is_empty());
    // As memories' as-of reads do, the graph as it was before the deletion still shows it.
    let then = store
        .relations_of(&s, "Ana", EdgeView::AsOf(year(2023)), 10)
        .unwrap();
    assert_eq!(objects(&then, "friend_of"), ["Cy"]);
    let walk = Walk {
        scope: &s,
        entity: "Cy",
        depth: 2,
        view: EdgeView::Current,
        limit: 10,
    };
    assert!(store.neighbourhood(&walk).unwrap().relations.is_empty());

    store
        .erase(&EraseMemory::new(&s, once, false), &ctx)
        .unwrap();
    store
        .erase(&EraseMemory::new(&s, twice_a, false), &ctx)
        .unwrap();
    let left = store.relations_of(&s, "Ana", EdgeView::All, 10).unwrap();
    assert!(
        objects(&left, "likes").is_empty(),
        "an edge its erased memory alone stated goes"
    );
    let acme = left
        .iter()
        .find(|e| e.predicate == "works_at")
        .expect("an edge with other support stays");
    assert_eq!(
        (acme.strength(), acme.fact.as_str()),
        (1, "Ana works at Acme.")
    );
    assert!(export_lines(store.as_ref())
        .iter()
        .all(|l| !l.contains("likes")));

    store
        .erase_log(&EraseLog::new(&s, EraseTarget::Scope).unwrap(), &ctx)
        .unwrap();
    assert!(export_lines(store.as_ref())
        .iter()
        .all(|l| !l.contains("\"relation\"")));
}

pub fn relations_are_isolated_by_scope(h: &dyn Harness) {
    let store = h.fresh();
    let (s, other) = (scope("rel-lena"), scope("rel-mallory"));
    state(
        store.as_ref(),
        &s,
        "Ana likes Bo",
        year(2022),
        &[triple("Ana", "likes", "Bo")],
    );
    state(
        store.as_ref(),
        &other,
        "Bo likes Eve",
        year(2022),
        &[triple("Bo", "likes", "Eve")],
    );
    let mine = store
        .relations_of(&s, "Ana", EdgeView::Current, 10)
        .unwrap();
    assert_eq!(
        store.relation(&other, mine[0].id).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        store
            .relation_history(&other, mine[0].id)
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        store
            .relations_of(&other, "Ana", EdgeView::Current, 10)
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    // Bo exists in both scopes; the walk from Ana reaches only this scope's Bo and no Eve.
    let walk = Walk {
        scope: &s,
        entity: "Ana",
        depth: 3,
        view: EdgeView::Current,
        limit: 50,
    };
    let n = store.neighbourhood(&walk).unwrap();
    assert_eq!(n.relations.len(), 1);
    assert!(n.nodes.iter().all(|x| x.name != "Eve"), "{n:?}");
}

pub fn relations_round_trip_through_export(h: &dyn Harness) {
    let src = h.fresh();
    let s = scope("rel-export");
    state(
        src.as_ref(),
        &s,
        "Ana lives in Oslo",
        year(2020),
        &[triple("Ana", "lives_in", "Oslo")],
    );
    state(
        src.as_ref(),
        &s,
        "Ana moved to Porto",
        year(2023),
        &[triple("Ana", "lives_in", "Porto")],
    );
    state(
        src.as_ref(),
        &s,
        "Still in Porto",
        year(2024),
        &[triple("Ana", "lives_in", "Porto")],
    );
    let lines = export_lines(src.as_ref());
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("\"type\":\"relation\""))
            .count(),
        2
    );
    let dst = h.fresh();
    dst.import(with_vectors(&lines)).unwrap();
    assert_eq!(export_lines(dst.as_ref()), lines);
    let then = dst
        .relations_of(&s, "Ana", EdgeView::AsOf(year(2021)), 10)
        .unwrap();
    assert_eq!(objects(&then, "lives_in"), ["Oslo"]);
    // An edge whose memories are not in its scope is refused.
    let mut foreign: Vec<ExportRecord> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    foreign.retain(|r| matches!(r, ExportRecord::Relation(_)));
    if let Some(ExportRecord::Relation(e)) = foreign.first_mut() {
        e.id = RelationId::new();
        e.sources[0].memory_id = MemoryId::new();
    }
    let e = dst
        .import(vec![(foreign.swap_remove(0), None)])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
}
