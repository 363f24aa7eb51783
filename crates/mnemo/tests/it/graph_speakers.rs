//! Graph search's speaker hop through the facade (SQLite, and PostgreSQL in the suite's second
//! pass): a question naming a speaker prefers what that speaker said over the other speaker's
//! lines that only address her by name; a name that is not a speaker stays a word of the
//! query; the hop never reaches another scope.

use mnemo::core::*;
use mnemo::{AddInput, AddRequest, Memory, RelationConfig};
use mnemo_core::search::GRAPH_SPOKEN;
use mnemo_testkit::engines;
use mnemo_testkit::HashEmbedder;
use std::sync::Arc;

fn scope(user: &str) -> Scope {
    Scope::user(user).unwrap()
}

/// One add of `(speaker, text)` turns, each a raw memory whose actor is its speaker.
fn turns(scope: Scope, turns: &[(&str, &str)]) -> AddRequest {
    let mut req = AddRequest::text(scope, "");
    req.input = AddInput::Messages(
        turns
            .iter()
            .map(|(speaker, text)| InputMessage {
                role: Role::User,
                content: text.to_string(),
                name: Some(speaker.to_string()),
            })
            .collect(),
    );
    req.infer = Some(false);
    req
}

const CHAT: &[(&str, &str)] = &[
    ("Caroline", "Wow, Melanie, your weekend sounds great!"),
    ("Melanie", "I signed up for a pottery class yesterday."),
    ("Caroline", "Melanie, did you see the match last night?"),
    ("Melanie", "We went camping at the beach with the kids."),
    ("Caroline", "Thanks Melanie, that means a lot to me."),
    ("Caroline", "I visited Porto in May and loved the tiles."),
];

async fn seeded(user: &str) -> (Memory, Memory, engines::TestStore) {
    let dir = engines::fresh_store();
    let plain =
        Memory::from_parts(dir.store(), Arc::new(HashEmbedder), RankParams::default()).unwrap();
    plain.add(turns(scope(user), CHAT)).await.unwrap();
    let graph = plain.clone().with_relation_config(RelationConfig {
        graph_search: true,
        ..plain.relation_config()
    });
    (plain, graph, dir)
}

fn speaker(hit: &Hit) -> &str {
    hit.memory.actor.as_deref().unwrap_or("")
}

#[tokio::test]
async fn a_named_speaker_ranks_what_she_said_above_lines_addressed_to_her() {
    let (plain, graph, _dir) = seeded("ann").await;
    let question = "What activities does Melanie do?";
    let off = plain
        .search(SearchRequest::new(scope("ann"), question, 6))
        .await
        .unwrap();
    // Without the hop her name is a word: the lines that address her share it and rank high.
    let off_top: Vec<&str> = off.results.iter().take(2).map(speaker).collect();
    assert!(off_top.contains(&"Caroline"), "{off_top:?}");

    let on = graph
        .search(SearchRequest::new(scope("ann"), question, 6))
        .await
        .unwrap();
    let top: Vec<&str> = on.results.iter().take(2).map(speaker).collect();
    assert_eq!(top, ["Melanie", "Melanie"], "{:?}", on.results);
    for hit in &on.results {
        if speaker(hit) == "Melanie" {
            assert_eq!(hit.scores.graph, GRAPH_SPOKEN, "{hit:?}");
        } else {
            assert_eq!(hit.scores.graph, 0.0, "{hit:?}");
            // Her name no longer counts as a word: a line that shares nothing else with the
            // question has no lexical score.
            if hit.memory.text.starts_with("Melanie, did you") {
                assert_eq!(hit.scores.bm25, 0.0, "{hit:?}");
            }
        }
    }
    // The hop states no relation: nothing is marked via one and no edge is listed for it.
    assert!(on.results.iter().all(|h| h.via.is_none()), "{on:?}");
}

#[tokio::test]
async fn a_name_that_is_no_speaker_stays_a_word() {
    let (_plain, graph, _dir) = seeded("ann").await;
    let on = graph
        .search(SearchRequest::new(scope("ann"), "What about Porto?", 3))
        .await
        .unwrap();
    let first = &on.results[0];
    assert!(first.memory.text.contains("Porto"), "{on:?}");
    assert!(first.scores.bm25 > 0.0, "{first:?}");
    assert!(on.results.iter().all(|h| h.scores.graph == 0.0), "{on:?}");
}

#[tokio::test]
async fn the_speaker_hop_stays_in_the_scope_searched() {
    let (_plain, graph, _dir) = seeded("ann").await;
    // Another user's Melanie, in the same store.
    graph
        .add(turns(
            scope("bob"),
            &[("Melanie", "I do pottery and camping activities every week.")],
        ))
        .await
        .unwrap();
    let on = graph
        .search(SearchRequest::new(
            scope("ann"),
            "What activities does Melanie do?",
            10,
        ))
        .await
        .unwrap();
    assert!(!on.results.is_empty());
    assert!(
        on.results
            .iter()
            .all(|h| h.memory.user_id.as_deref() == Some("ann")),
        "{on:?}"
    );
}
