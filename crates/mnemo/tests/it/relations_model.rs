//! Relations of inferred adds from the chat model (`RelationConfig::model`), over the real store
//! with a scripted model: one call per add over the new facts; a good answer's edges are written
//! with the facts they come from, in the same transaction; bad triples are dropped one by one;
//! an answer that is no relation list at all, or a failed call, fails the add and writes nothing.

use mnemo::core::pipeline::step_of;
use mnemo::core::*;
use mnemo::{AddRequest, InferConfig, Memory, RelationConfig};
use mnemo_testkit::engines;
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use serde_json::json;
use std::sync::Arc;

const FACTS: [&str; 2] = ["Caroline's sister is Ana", "Ana lives in Porto"];

type Answer = Arc<dyn Fn() -> Result<String> + Send + Sync>;

struct Env {
    m: Memory,
    chat: Arc<ScriptedChat>,
    dir: engines::TestStore,
}

/// An engine whose model states `FACTS` and answers the relation call with `relations`.
fn env(relations: Answer, model_relations: bool) -> Env {
    let dir = engines::fresh_store();
    let chat = Arc::new(ScriptedChat::new(
        "scripted:rel",
        move |req| match step_of(req) {
            Some("extract") => {
                let facts: Vec<_> = FACTS
                    .iter()
                    .map(|f| json!({"text": f, "speaker": "Caroline", "sources": [1]}))
                    .collect();
                Ok(json!({ "facts": facts }).to_string())
            }
            Some("relations") => relations(),
            other => panic!("unexpected call {other:?}"),
        },
    ));
    let cfg = InferConfig {
        log_messages_on_failure: false,
        ..InferConfig::default()
    };
    let m = Memory::from_parts(dir.store(), Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_chat(chat.clone(), cfg);
    let m = m.clone().with_relation_config(RelationConfig {
        model: model_relations,
        ..m.relation_config()
    });
    Env { m, chat, dir }
}

fn answer(body: serde_json::Value) -> Answer {
    let body = body.to_string();
    Arc::new(move || Ok(body.clone()))
}

fn caroline() -> Scope {
    Scope::user("caroline").unwrap()
}

fn said() -> AddRequest {
    let mut r = AddRequest::text(caroline(), "My sister Ana lives in Porto now.");
    r.infer = None;
    r
}

/// Every current edge of the entity `name`, as `(subject, predicate, object)`, sorted.
async fn edges(m: &Memory, name: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<_> = match m.relations(caroline(), name.into(), None, 100).await {
        Ok(rels) => rels
            .into_iter()
            .map(|r| (r.subject.name, r.predicate, r.object.name))
            .collect(),
        Err(e) if e.kind() == ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("{e}"),
    };
    out.sort();
    out
}

fn triple(s: &str, p: &str, o: &str) -> (String, String, String) {
    (s.into(), p.into(), o.into())
}

fn relation_calls(chat: &ScriptedChat) -> usize {
    chat.requests()
        .iter()
        .filter(|r| step_of(r) == Some("relations"))
        .count()
}

#[tokio::test]
async fn a_good_answer_writes_its_edges_with_the_facts_that_state_them() {
    let e = env(
        answer(json!({
            "entities": [{"name": "Ana", "type": "person"}, {"name": "Porto", "type": "city"}],
            "relations": [
                {"subject": "Ana", "predicate": "sister of", "object": "Caroline"},
                {"subject": "Ana", "predicate": "lives_in", "object": "Porto"}
            ]
        })),
        true,
    );
    let out = e.m.add(said()).await.unwrap();
    assert_eq!(out.results.len(), 2, "{out:?}");
    assert_eq!(relation_calls(&e.chat), 1, "one relation call per add");
    assert!(
        out.usage.iter().any(|c| c.purpose == "relations"),
        "{out:?}"
    );
    // The model sees the new facts, numbered.
    let req = e
        .chat
        .requests()
        .into_iter()
        .find(|r| step_of(r) == Some("relations"))
        .unwrap();
    assert!(req.messages[1]
        .content
        .contains("1. Caroline's sister is Ana"));
    assert!(req.messages[1].content.contains("2. Ana lives in Porto"));

    assert_eq!(
        edges(&e.m, "Ana").await,
        vec![
            triple("Ana", "lives_in", "Porto"),
            triple("Ana", "sibling_of", "Caroline"),
        ]
    );
    let rels = e.m.relations(caroline(), "Porto".into(), None, 10).await;
    let porto = &rels.unwrap()[0];
    // The edge quotes, and is sourced by, the fact that states it; "city" is a place.
    assert_eq!(porto.fact, "Ana lives in Porto");
    assert_eq!(porto.object.entity_type, "place");
    let stating = out
        .results
        .iter()
        .find(|r| r.memory == "Ana lives in Porto");
    assert_eq!(porto.sources[0].memory_id, stating.unwrap().id);
    let sister = &e.m.relations(caroline(), "Caroline".into(), None, 10).await;
    assert_eq!(sister.as_ref().unwrap()[0].fact, "Caroline's sister is Ana");
}

#[tokio::test]
async fn bad_triples_are_dropped_one_by_one_and_the_good_ones_kept() {
    let e = env(
        answer(json!({
            "entities": [{"name": "Ana", "type": "wizard"}],
            "relations": [
                {"subject": "Ana", "predicate": "lives_in"},
                {"subject": "Ana", "object": "Porto"},
                {"subject": "Ana", "predicate": "sibling_of", "object": "ana"},
                ["Porto", "near"],
                {"subject": "Ana", "predicate": "lives_in", "object": {"name": "Porto", "type": "spaceport"}},
                {"subject": "Ana", "predicate": "likes", "object": "Lisbon"}
            ]
        })),
        true,
    );
    let out = e.m.add(said()).await.unwrap();
    assert_eq!(
        out.results.len(),
        2,
        "the facts are stored whatever the triples were"
    );
    // Partial triples and the self-loop are gone; unknown types fail nothing (the parser makes
    // them `thing`, and the entity index keeps the type it has); a relation no single new fact
    // states ("Ana likes Lisbon": Lisbon is in none) is dropped with a warning.
    let rels =
        e.m.relations(caroline(), "Ana".into(), None, 10)
            .await
            .unwrap();
    assert_eq!(rels.len(), 1, "{rels:?}");
    assert_eq!(
        (rels[0].predicate.as_str(), rels[0].object.name.as_str()),
        ("lives_in", "Porto")
    );
    for t in [&rels[0].subject.entity_type, &rels[0].object.entity_type] {
        assert!(["person", "place", "thing"].contains(&t.as_str()), "{t}");
    }
    assert!(
        out.warnings.iter().any(|w| w.contains("Lisbon")),
        "{:?}",
        out.warnings
    );
}

#[tokio::test]
async fn an_answer_with_no_relation_list_fails_the_add_and_writes_nothing() {
    for garbage in [
        "Sure! Ana is Caroline's sister.",
        r#"{"facts": ["Ana lives in Porto"]}"#,
        r#"{"relations": "Ana lives_in Porto"}"#,
        "42",
    ] {
        let body = garbage.to_string();
        let e = env(Arc::new(move || Ok(body.clone())), true);
        let before = e.dir.row_counts();
        let err = e.m.add(said()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::ModelOutput, "{garbage}: {err}");
        assert!(err.to_string().contains("relations"), "{err}");
        assert_eq!(e.dir.row_counts(), before, "{garbage}: nothing written");
    }
}

#[tokio::test]
async fn a_failed_relation_call_is_an_error_not_an_empty_success() {
    let e = env(
        Arc::new(|| {
            Err(Error::Model {
                reason: "connection reset".into(),
            })
        }),
        true,
    );
    let before = e.dir.row_counts();
    let err = e.m.add(said()).await.unwrap_err();
    assert!(err.to_string().contains("connection reset"), "{err}");
    assert_eq!(e.dir.row_counts(), before, "nothing written");
    assert!(edges(&e.m, "Ana").await.is_empty());
}

#[tokio::test]
async fn a_valid_empty_answer_writes_the_facts_and_no_edges() {
    let e = env(answer(json!({"entities": [], "relations": []})), true);
    let out = e.m.add(said()).await.unwrap();
    assert_eq!(out.results.len(), 2);
    // No fallback to the rules: the model's "none" stands.
    assert!(edges(&e.m, "Ana").await.is_empty());
}

#[tokio::test]
async fn the_edges_are_written_in_the_facts_transaction() {
    let e = env(
        answer(json!({"relations": [["Ana", "lives_in", "Porto"]]})),
        true,
    );
    let before = e.dir.row_counts();
    e.dir.fail_at(Some(WriteStep::Relation));
    let err = e.m.add(said()).await.unwrap_err();
    assert!(err.to_string().contains("relation"), "{err}");
    e.dir.fail_at(None);
    assert_eq!(e.dir.row_counts(), before, "no fact without its edges");
    e.m.add(said()).await.unwrap();
    assert_eq!(
        edges(&e.m, "Ana").await,
        vec![triple("Ana", "lives_in", "Porto")]
    );
}

#[tokio::test]
async fn with_the_setting_off_no_relation_call_is_made() {
    let e = env(Arc::new(|| panic!("no relation call expected")), false);
    e.m.add(said()).await.unwrap();
    assert_eq!(relation_calls(&e.chat), 0);
    assert!(edges(&e.m, "Ana").await.is_empty());
}
