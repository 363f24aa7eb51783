//! The store contract for reading the edges of many owners' entities at once
//! ([`Relations::relations_of_each`], Mem0's entity list): each read answers what
//! `relations_of` answers in its own scope, in the reads' order; a name no entity has answers
//! none; an invalid name reads nothing. Re-exported by `contract`.

use crate::contract_relation_fixtures::*;
use crate::*;
use mnemo_core::*;

fn ids(edges: &[Relation]) -> Vec<RelationId> {
    edges.iter().map(|e| e.id).collect()
}

pub fn relations_of_each_reads_each_name_in_its_own_scope(h: &dyn Harness) {
    let store = h.fresh();
    let ana = scope("each-ana");
    let bot = Scope::from_parts(None, Some("each-bot"), None).expect("scope");
    let ana_bot = Scope::from_parts(Some("each-ana"), Some("each-bot"), None).expect("scope");
    state(
        store.as_ref(),
        &ana,
        "My sister Ana lived in Oslo",
        year(2021),
        &[
            triple("Ana", "sibling_of", "Caroline"),
            triple("Ana", "lives_in", "Oslo"),
        ],
    );
    state(
        store.as_ref(),
        &ana,
        "Ana moved to Porto",
        year(2024),
        &[triple("Ana", "lives_in", "Porto")],
    );
    // The same name in another owner (the bot's own scope, and the pair ana × bot).
    state(
        store.as_ref(),
        &bot,
        "Ana is the bot's tester",
        year(2022),
        &[triple("Ana", "works_at", "Lab")],
    );
    state(
        store.as_ref(),
        &ana_bot,
        "Ana told the bot about Bo",
        year(2023),
        &[triple("Ana", "friend_of", "Bo")],
    );
    let read = |scope, entity, view, limit| EdgesOf {
        scope,
        entity,
        view,
        limit,
    };
    let reads = [
        read(&ana, "Ana", EdgeView::Current, 10),
        read(&bot, "ana", EdgeView::Current, 10),
        read(&ana, "Nobody", EdgeView::Current, 10),
        read(&bot, "Caroline", EdgeView::Current, 10),
        read(&ana, "Ana", EdgeView::AsOf(year(2022)), 10),
        read(&ana, "Ana", EdgeView::All, 1),
        read(&ana_bot, "Ana", EdgeView::Current, 10),
    ];
    let got = store.relations_of_each(&reads).expect("read");
    assert_eq!(got.len(), reads.len());
    for (r, edges) in reads.iter().zip(&got) {
        let one = match store.relations_of(r.scope, r.entity, r.view, r.limit) {
            Err(Error::NotFound { .. }) => Vec::new(),
            found => found.expect("one read"),
        };
        assert_eq!(
            ids(edges),
            ids(&one),
            "{:?} {} {:?}",
            r.scope,
            r.entity,
            r.view
        );
        let sources: Vec<usize> = edges.iter().map(|e| e.sources.len()).collect();
        assert_eq!(
            sources,
            one.iter().map(|e| e.sources.len()).collect::<Vec<_>>()
        );
    }
    // What that is: ana's current edges (a user scope covers ana × bot too), the bot's own,
    // none for a name no entity has in the scope, the past, the newest edge alone.
    assert_eq!(
        objects(&got[0], "lives_in"),
        ["Porto"],
        "{:?}",
        ids(&got[0])
    );
    assert_eq!(got[0].len(), 3);
    assert_eq!(objects(&got[1], "works_at"), ["Lab"]);
    assert_eq!(got[1].len(), 2);
    assert!(got[2].is_empty() && got[3].is_empty());
    assert_eq!(objects(&got[4], "lives_in"), ["Oslo"]);
    assert_eq!(got[5].len(), 1);
    assert_eq!(objects(&got[5], "lives_in"), ["Porto"]);
    assert_eq!(objects(&got[6], "friend_of"), ["Bo"]);
    assert_eq!(got[6].len(), 1);

    // More reads than one statement of a backend may carry (PostgreSQL cuts them into chunks of
    // 100, which 7 does not divide): each still answers what it answers alone, in its place.
    let many: Vec<EdgesOf<'_>> = reads
        .iter()
        .copied()
        .cycle()
        .take(48 * reads.len())
        .collect();
    let got_many = store.relations_of_each(&many).expect("many reads");
    assert_eq!(got_many.len(), many.len());
    for (k, edges) in got_many.iter().enumerate() {
        assert_eq!(ids(edges), ids(&got[k % reads.len()]), "read {k}");
    }

    // An invalid name refuses the whole read; no read answers nothing.
    let e = store
        .relations_of_each(&[
            read(&ana, "Ana", EdgeView::Current, 10),
            read(&ana, " ", EdgeView::Current, 10),
        ])
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.to_string().contains("entity"), "{e}");
    assert!(store.relations_of_each(&[]).expect("none").is_empty());
}
