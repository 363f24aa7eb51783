//! Graph search through the facade over the real SQLite store: a question about a relation of
//! a relation ("where does Caroline's sister live?") reaches the memory stating the second edge
//! through the first, marks it `via` the relation and lists the edges used; with graph search
//! off (engine setting or per request) the ranking is exactly the one without it.

use mnemo::core::*;
use mnemo::{AddRequest, Memory, RelationConfig};
use mnemo_core::search::GRAPH_SPOKEN;
use mnemo_testkit::engines;
use mnemo_testkit::HashEmbedder;
use std::sync::Arc;

fn ann() -> Scope {
    Scope::user("ann").unwrap()
}

const QUESTION: &str = "where does Caroline's sister live?";

async fn seeded() -> (Memory, MemoryId, engines::TestStore) {
    let dir = engines::fresh_store();
    let m = Memory::from_parts(dir.store(), Arc::new(HashEmbedder), RankParams::default()).unwrap();
    let mut porto = None;
    for text in [
        "Caroline's sister Ana called today.",
        "Ana lives in Porto.",
        "Caroline wants to live somewhere quiet one day.",
        "Where does the night bus stop?",
        "Caroline painted a sunrise last week.",
        "My sister loves old maps.",
    ] {
        let id = m.add(AddRequest::text(ann(), text)).await.unwrap().results[0].id;
        if text.contains("Porto") {
            porto = Some(id);
        }
    }
    (m, porto.unwrap(), dir)
}

fn ranking(resp: &mnemo::SearchResponse) -> Vec<(MemoryId, f32)> {
    resp.results
        .iter()
        .map(|h| (h.memory.id, h.score))
        .collect()
}

#[tokio::test]
async fn graph_search_reaches_the_sisters_city_through_the_relation() {
    let (plain, porto, _dir) = seeded().await;
    let graph = plain.clone().with_relation_config(RelationConfig {
        graph_search: true,
        ..plain.relation_config()
    });
    let on = graph
        .search(SearchRequest::new(ann(), QUESTION, 3))
        .await
        .unwrap();
    let hit = (on.results.iter())
        .find(|h| h.memory.id == porto)
        .expect("the Porto memory is found with graph search on");
    let via = hit
        .via
        .as_ref()
        .and_then(Via::relation)
        .expect("marked via a relation");
    assert_eq!((via.predicate.as_str(), via.hops), ("lives_in", 2));
    assert!(hit.scores.graph > 0.0, "{:?}", hit.scores);
    // The answer lists the edges used, with their sentence and valid time: the lives-in edge
    // and the sister edge that reached Ana (its memory ranks too).
    let lives = (on.relations.iter())
        .find(|r| r.id == via.relation)
        .expect("the edge used is listed");
    assert_eq!(lives.object.name.to_lowercase(), "porto");
    assert!(lives.fact.contains("Porto"), "{}", lives.fact);
    assert!(lives.valid_until.is_none());
    let json = serde_json::to_value(&on).unwrap();
    assert_eq!(
        json["relations"].as_array().unwrap().len(),
        on.relations.len()
    );
    assert!(
        on.relations.iter().any(|r| r.predicate == "sibling_of"),
        "the sister edge's memory ranks too: {:?}",
        on.relations
    );

    // Off, the Porto memory ranks lower (or not at all), and the ranking is the old one.
    let off = plain
        .search(SearchRequest::new(ann(), QUESTION, 3))
        .await
        .unwrap();
    assert!(off.relations.is_empty());
    assert!(off
        .results
        .iter()
        .all(|h| h.via.is_none() && h.scores.graph == 0.0));
    let rank_of = |r: &mnemo::SearchResponse| r.results.iter().position(|h| h.memory.id == porto);
    assert!(
        rank_of(&off).is_none_or(|off_rank| rank_of(&on).unwrap() < off_rank),
        "graph search lifts the Porto memory: on {:?}, off {:?}",
        ranking(&on),
        ranking(&off)
    );
    // Per request: graph off on a graph-on engine is exactly the plain ranking.
    let asked_off = graph
        .search(SearchRequest {
            graph: Some(false),
            ..SearchRequest::new(ann(), QUESTION, 3)
        })
        .await
        .unwrap();
    assert_eq!(ranking(&asked_off), ranking(&off));
    // Per request: graph on, on a plain engine, is the graph-on ranking.
    let asked_on = plain
        .search(SearchRequest {
            graph: Some(true),
            ..SearchRequest::new(ann(), QUESTION, 3)
        })
        .await
        .unwrap();
    assert_eq!(ranking(&asked_on), ranking(&on));
}

#[tokio::test]
async fn a_query_naming_no_related_entity_ranks_as_without_graph_search() {
    let (plain, _porto, _dir) = seeded().await;
    let graph = plain.clone().with_relation_config(RelationConfig {
        graph_search: true,
        ..plain.relation_config()
    });
    for q in [
        "where does the night bus stop",
        "old maps",
        "Who painted a sunrise?",
    ] {
        let on = graph.search(SearchRequest::new(ann(), q, 5)).await.unwrap();
        let off = plain.search(SearchRequest::new(ann(), q, 5)).await.unwrap();
        assert_eq!(ranking(&on).len(), ranking(&off).len(), "{q}");
        if on.relations.is_empty() {
            assert_eq!(ranking(&on), ranking(&off), "{q}");
        }
    }
}

#[tokio::test]
async fn a_much_related_entity_lends_weight_only_to_the_edges_the_question_asks_about() {
    let dir = engines::fresh_store();
    let m = Memory::from_parts(dir.store(), Arc::new(HashEmbedder), RankParams::default()).unwrap();
    // The pet is stated first, then many newer likings crowd the speaker's edges: more than a
    // hop keeps, so only a walk that reads past the most recent edges reaches the pet.
    let said = |text: String| AddRequest {
        input: mnemo::AddInput::Messages(vec![InputMessage {
            role: Role::User,
            content: text,
            name: Some("Caroline".into()),
        }]),
        ..AddRequest::text(ann(), "")
    };
    let first = m
        .add(said("We adopted a dog named Biscuit.".into()))
        .await
        .unwrap();
    let pet = first.results[0].id;
    let hobbies = [
        "hiking",
        "chess",
        "pottery",
        "salsa",
        "sailing",
        "knitting",
        "baking",
        "surfing",
        "jazz",
        "opera",
        "poetry",
        "archery",
        "rowing",
        "fencing",
        "origami",
        "karate",
        "sudoku",
        "gardening",
        "birding",
        "cycling",
        "climbing",
        "tennis",
        "rugby",
        "golf",
        "darts",
        "bowling",
        "skiing",
        "skating",
    ];
    for h in hobbies {
        m.add(said(format!("I love {h}."))).await.unwrap();
    }
    let graph = m.clone().with_relation_config(RelationConfig {
        graph_search: true,
        ..m.relation_config()
    });
    let on = graph
        .search(SearchRequest::new(
            ann(),
            "Does Caroline have any pets?",
            10,
        ))
        .await
        .unwrap();
    let hit = on.results.iter().find(|h| h.memory.id == pet);
    let hit = hit.expect("the pet memory is found");
    // The stated edge that answers outweighs the speaker hop (Caroline said every line).
    assert!(hit.scores.graph > GRAPH_SPOKEN, "{:?}", hit.scores);
    // The likings share nothing with the question: their edges lend nothing, and they gain
    // only the speaker hop.
    assert!(
        on.results
            .iter()
            .filter(|h| h.memory.id != pet)
            .all(|h| h.scores.graph <= GRAPH_SPOKEN),
        "{:?}",
        on.results
            .iter()
            .map(|h| (&h.memory.text, h.scores.graph))
            .collect::<Vec<_>>()
    );
    assert!(
        on.relations.iter().all(|r| r.predicate != "likes"),
        "{:?}",
        on.relations
    );
}
