//! The store contract for relations, writes and reads: edges written in their memory's
//! transaction, read by entity and between two entities; the contradiction rule over functional
//! predicates with `as_of` reads of the past; bounded walks. Fixtures in
//! `contract_relation_fixtures`, the rest of an edge's life in `contract_relation_lifecycle`.
//! Re-exported by `contract`.

use crate::contract_relation_fixtures::*;
use crate::*;
use mnemo_core::*;

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
