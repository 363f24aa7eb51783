//! The store contract for symmetric predicates (`sibling_of`, `partner_of`, `friend_of`, …):
//! (A, p, B) and (B, p, A) are one edge — a statement of the reverse supports it, every read
//! and walk shows it once — and the contradiction rule of a symmetric functional predicate
//! (`partner_of`) holds one partner at a time for either end. Re-exported by `contract`.

use crate::contract_relation_fixtures::{stating, triple, year};
use crate::*;
use mnemo_core::*;

fn say(store: &dyn Store, s: &Scope, text: &str, y: i32, subject: &str, p: &str, object: &str) {
    let b = stating(s, text, year(y), &[triple(subject, p, object)]);
    store.write(vec![b]).expect("write");
}

/// The other ends of `name`'s current `predicate` edges, sorted.
fn others(store: &dyn Store, s: &Scope, name: &str, predicate: &str) -> Vec<String> {
    let edges = store.relations_of(s, name, EdgeView::Current, 20).unwrap();
    let mut out: Vec<String> = (edges.iter())
        .filter(|e| e.predicate == predicate)
        .map(|e| match e.subject.name == name {
            true => e.object.name.clone(),
            false => e.subject.name.clone(),
        })
        .collect();
    out.sort();
    out
}

pub fn a_symmetric_edge_is_one_edge_both_ways(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("rel-sym");
    say(
        store.as_ref(),
        &s,
        "Ana is Caroline's sister",
        2021,
        "Ana",
        "sibling_of",
        "Caroline",
    );
    say(
        store.as_ref(),
        &s,
        "Caroline is Ana's sister",
        2022,
        "Caroline",
        "sibling_of",
        "Ana",
    );
    let edges = store
        .between(&s, "Ana", "Caroline", EdgeView::Current)
        .unwrap();
    assert_eq!(edges.len(), 1, "one edge both ways: {edges:?}");
    assert_eq!(edges[0].strength(), 2, "the reverse statement supports it");
    assert_eq!(
        others(store.as_ref(), &s, "Caroline", "sibling_of"),
        ["Ana"]
    );
    let walk = store
        .neighbourhood(&Walk {
            scope: &s,
            entity: "Caroline",
            depth: 2,
            view: EdgeView::Current,
            limit: 10,
        })
        .unwrap();
    assert_eq!(walk.relations.len(), 1, "{walk:?}");
    // A directed predicate keeps its direction: the reverse is another edge.
    say(
        store.as_ref(),
        &s,
        "Ana likes Bo",
        2022,
        "Ana",
        "likes",
        "Bo",
    );
    say(
        store.as_ref(),
        &s,
        "Bo likes Ana",
        2022,
        "Bo",
        "likes",
        "Ana",
    );
    assert_eq!(
        store
            .between(&s, "Ana", "Bo", EdgeView::Current)
            .unwrap()
            .len(),
        2
    );
}

pub fn a_symmetric_functional_edge_closes_for_either_end(h: &dyn Harness) {
    let store = h.fresh();
    let s = scope("rel-partner");
    say(
        store.as_ref(),
        &s,
        "Ana married Tom",
        2018,
        "Ana",
        "partner_of",
        "Tom",
    );
    // Tom's new partner, stated from her side: Ana — Tom no longer holds.
    say(
        store.as_ref(),
        &s,
        "Zoe is Tom's wife",
        2022,
        "Zoe",
        "partner_of",
        "Tom",
    );
    assert_eq!(others(store.as_ref(), &s, "Tom", "partner_of"), ["Zoe"]);
    assert!(others(store.as_ref(), &s, "Ana", "partner_of").is_empty());
    let then = store
        .relations_of(&s, "Ana", EdgeView::AsOf(year(2020)), 10)
        .unwrap();
    assert_eq!(
        then.len(),
        1,
        "as of 2020 Ana and Tom were partners: {then:?}"
    );
    // Stated the other way round later, the current edge is supported, not duplicated.
    say(
        store.as_ref(),
        &s,
        "Tom and Zoe",
        2023,
        "Tom",
        "partner_of",
        "Zoe",
    );
    let now = store.between(&s, "Tom", "Zoe", EdgeView::Current).unwrap();
    assert_eq!(now.len(), 1, "{now:?}");
    assert_eq!(now[0].strength(), 2);
}
