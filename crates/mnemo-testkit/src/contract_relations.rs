//! The store contract for relations: edges written in their memory's transaction, read by
//! entity, between two entities and by bounded walks; the contradiction rule over functional
//! predicates with `as_of` reads of the past; deletion hiding and erasure removing edges; scope
//! isolation; export and import. Re-exported by `contract`.

use crate::contract_transfer::{export_lines, with_vectors};
use crate::*;
use chrono::TimeZone;
use mnemo_core::relation::{ObjectKind, RelationCandidate};
use mnemo_core::*;
use serde_json::json;

fn year(y: i32) -> Timestamp {
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

fn state(
    store: &dyn Store,
    s: &Scope,
    text: &str,
    at: Timestamp,
    r: &[RelationCandidate],
) -> MemoryId {
    store.write(vec![stating(s, text, at, r)]).expect("write")[0].results[0].id
}

fn memories(store: &dyn Store, s: &Scope) -> usize {
    let q = ListQuery {
        scope: s.clone(),
        kinds: None,
        filter: None,
        limit: 100,
        cursor: None,
        read: ReadOptions::default(),
    };
    store.list(&q).unwrap().results.len()
}

fn objects(edges: &[Relation], predicate: &str) -> Vec<String> {
    let mut out: Vec<String> = (edges.iter())
        .filter(|e| e.predicate == predicate)
        .map(|e| e.object.name.clone())
        .collect();
    out.sort();
    out
}

pub fn relations_are_written_with_their_memory(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("rel-ana");
    let b = stating(
        &s,
        "My sister Ana moved to Porto",
        year(2023),
        &[triple("Ana", "sibling_of", "Caroline")],
    );
    let (memory, message) = (b.memories[0].id, b.messages[0].id);
    store.write(vec![b]).unwrap();
    let edges = store
        .relations_of(&s, "Ana", EdgeView::Current, 10)
        .unwrap();
    assert_eq!(edges.len(), 1, "{edges:?}");
    let e = &edges[0];
    assert_eq!(
        (
            e.subject.name.as_str(),
            e.predicate.as_str(),
            e.object.name.as_str()
        ),
        ("Ana", "sibling_of", "Caroline")
    );
    assert_eq!(e.fact, "Ana sibling of Caroline.");
    assert_eq!(e.valid_from, year(2023), "valid time is the message's time");
    assert_eq!(e.sources.len(), 1);
    assert_eq!(
        (e.sources[0].memory_id, e.sources[0].message_id),
        (memory, Some(message))
    );
    // The edge's ends are entities the memory is linked to.
    let names: Vec<String> = store
        .entities_of(&s, memory)
        .unwrap()
        .into_iter()
        .map(|x| x.name)
        .collect();
    assert!(
        names.contains(&"Ana".into()) && names.contains(&"Caroline".into()),
        "{names:?}"
    );
    // The other end finds it too, and between() joins the two.
    assert_eq!(
        store
            .relations_of(&s, "caroline", EdgeView::Current, 10)
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        store
            .between(&s, "Caroline", "Ana", EdgeView::Current)
            .unwrap()
            .len(),
        1
    );

    // A bad relation fails the whole add: its memory and message are not written either.
    let before = memories(store.as_ref(), &s);
    for bad in [
        triple("Ana", "sibling_of", "ana"),
        triple("Ana", &"p".repeat(65), "Bo"),
        triple(&"A".repeat(10_000), "likes", "Bo"),
        triple("Ana", "likes", ""),
    ] {
        let e = store
            .write(vec![stating(&s, "bad", year(2024), &[bad])])
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }
    let mut stray = stating(&s, "stray", year(2024), &[triple("Ana", "likes", "Bo")]);
    stray.relations[0].memory = MemoryId::new();
    assert_eq!(
        store.write(vec![stray]).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(memories(store.as_ref(), &s), before);
    assert_eq!(
        store
            .relations_of(&s, "Ana", EdgeView::All, 10)
            .unwrap()
            .len(),
        1
    );
}

pub fn a_functional_predicate_closes_the_old_edge_and_as_of_reads_the_past(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("rel-move");
    state(
        store.as_ref(),
        &s,
        "Ana lives in Oslo",
        year(2020),
        &[triple("Ana", "lives_in", "Oslo")],
    );
    let porto = stating(
        &s,
        "Ana lives in Porto now",
        year(2023),
        &[triple("Ana", "lives_in", "Porto")],
    );
    let porto_message = porto.messages[0].id;
    store.write(vec![porto]).unwrap();
    let now = store
        .relations_of(&s, "Ana", EdgeView::Current, 10)
        .unwrap();
    assert_eq!(objects(&now, "lives_in"), ["Porto"]);
    let then = store
        .relations_of(&s, "Ana", EdgeView::AsOf(year(2021)), 10)
        .unwrap();
    assert_eq!(objects(&then, "lives_in"), ["Oslo"]);
    assert!(store
        .relations_of(&s, "Ana", EdgeView::AsOf(year(2019)), 10)
        .unwrap()
        .is_empty());
    let all = store.relations_of(&s, "Ana", EdgeView::All, 10).unwrap();
    let oslo = all
        .iter()
        .find(|e| e.object.name == "Oslo")
        .expect("history keeps Oslo");
    assert_eq!(oslo.valid_until, Some(year(2023)));
    assert!(oslo.expired_at.is_some());
    assert_eq!(oslo.closed_by, Some(now[0].id));
    let history = store.relation_history(&s, oslo.id).unwrap();
    match history.last() {
        Some(RelationEvent::Closed {
            by,
            message_id,
            valid_until,
            ..
        }) => {
            assert_eq!(
                (*by, *message_id, *valid_until),
                (now[0].id, Some(porto_message), year(2023))
            );
        }
        other => panic!("{other:?}"),
    }
    // Saying it again strengthens the edge; non-functional predicates accumulate.
    state(
        store.as_ref(),
        &s,
        "Still in Porto",
        year(2024),
        &[triple("Ana", "lives_in", "Porto")],
    );
    state(
        store.as_ref(),
        &s,
        "Ana likes Bo",
        year(2024),
        &[triple("Ana", "likes", "Bo")],
    );
    state(
        store.as_ref(),
        &s,
        "Ana likes Cy",
        year(2024),
        &[triple("Ana", "likes", "Cy")],
    );
    let now = store
        .relations_of(&s, "Ana", EdgeView::Current, 10)
        .unwrap();
    assert_eq!(objects(&now, "lives_in"), ["Porto"]);
    assert_eq!(objects(&now, "likes"), ["Bo", "Cy"]);
    let porto = now.iter().find(|e| e.object.name == "Porto").unwrap();
    assert_eq!(porto.strength(), 2);
}

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

pub fn walks_are_bounded_and_check_their_depth(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("rel-ring");
    let depth = |d: u8| Walk {
        scope: &s,
        entity: "n0",
        depth: d,
        view: EdgeView::Current,
        limit: 25,
    };
    state(
        store.as_ref(),
        &s,
        "n0 knows n1",
        year(2022),
        &[triple("n0", "knows", "n1")],
    );
    for d in [0, 4, 200] {
        assert_eq!(
            store.neighbourhood(&depth(d)).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }
    // Everything reachable fits: not truncated, however deep the walk.
    let all = store
        .neighbourhood(&Walk {
            limit: 1,
            ..depth(3)
        })
        .unwrap();
    assert_eq!((all.relations.len(), all.truncated), (1, false));
    let long = "x".repeat(10_000);
    let e = store
        .relations_of(&s, &long, EdgeView::Current, 10)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    // A ring of 10,000 edges in 20 adds: every walk stops at its limit.
    const N: usize = 10_000;
    let per = 500;
    for chunk in 0..N / per {
        let rels: Vec<_> = (chunk * per..(chunk + 1) * per)
            .map(|i| triple(&format!("n{i}"), "knows", &format!("n{}", (i + 1) % N)))
            .collect();
        state(
            store.as_ref(),
            &s,
            &format!("ring part {chunk}"),
            year(2023),
            &rels,
        );
    }
    let n = store.neighbourhood(&depth(3)).unwrap();
    assert!(
        n.relations.len() <= 25 && !n.relations.is_empty(),
        "{}",
        n.relations.len()
    );
    // The first hop's two edges fill the limit; the second hop had more: still truncated.
    let cut = store
        .neighbourhood(&Walk {
            limit: 2,
            ..depth(2)
        })
        .unwrap();
    assert_eq!((cut.relations.len(), cut.truncated), (2, true));
    let ids: std::collections::HashSet<_> = n.relations.iter().map(|e| e.id).collect();
    assert_eq!(ids.len(), n.relations.len(), "each edge once");
    let wide = Walk {
        limit: 100_000,
        ..depth(3)
    };
    let n = store.neighbourhood(&wide).unwrap();
    assert!(n.relations.len() <= MAX_RELATIONS);
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
