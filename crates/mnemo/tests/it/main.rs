//! The facade's raw pipeline over the real SQLite store with the scripted embedder.

use mnemo::core::*;
use mnemo_testkit::engines;

mod blocks;
mod content;
mod context;
mod embedding_work;
mod erasure;
mod event_time;
mod graph_search;
mod graph_speakers;
mod infer;
mod jobs;
mod limits;
mod notes;
mod notes_expand;
mod profile;
mod relations_model;
mod robustness;
mod tier_retry;
mod tiers;
mod visibility;
use mnemo::{AddInput, AddRequest, Memory};
use mnemo_testkit::HashEmbedder;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

struct Counting(AtomicUsize);

impl Embedder for Counting {
    fn model_id(&self) -> &str {
        HashEmbedder::MODEL_ID
    }
    fn dimension(&self) -> usize {
        HashEmbedder::DIM
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.0.fetch_add(texts.len(), Ordering::SeqCst);
        HashEmbedder.embed(texts)
    }
}

fn engine() -> (Memory, Arc<Counting>, engines::TestStore) {
    let dir = engines::fresh_store();
    let store = dir.store();
    let counting = Arc::new(Counting(AtomicUsize::new(0)));
    let m = Memory::from_parts(store, counting.clone(), RankParams::default()).unwrap();
    (m, counting, dir)
}

#[tokio::test]
async fn a_retry_with_the_same_key_returns_the_first_result_without_model_work() {
    let (m, counting, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    let mut req = AddRequest::text(scope.clone(), "I moved to Lisbon");
    req.idempotency_key = Some("k1".into());
    let first = m.add(req.clone()).await.unwrap();
    let calls = counting.0.load(Ordering::SeqCst);
    let second = m.add(req.clone()).await.unwrap();
    assert!(second.replayed);
    assert_eq!(second.results, first.results);
    assert_eq!(
        counting.0.load(Ordering::SeqCst),
        calls,
        "the retry embedded nothing"
    );
    req.input = AddInput::Text("something else".into());
    assert_eq!(m.add(req).await.unwrap_err().kind(), ErrorKind::Conflict);
}

#[tokio::test]
async fn conversations_keep_provenance_skip_system_turns_and_warn_on_identity_keys() {
    let (m, _, _dir) = engine();
    let scope = Scope::from_parts(Some("u"), Some("assistant-1"), None).unwrap();
    let mut req = AddRequest::text(scope.clone(), "");
    req.input = AddInput::Messages(vec![
        InputMessage {
            role: Role::System,
            content: "You are helpful".into(),
            name: None,
        },
        InputMessage {
            role: Role::User,
            content: "I love hiking in the Alps".into(),
            name: Some("Ann".into()),
        },
        InputMessage {
            role: Role::Assistant,
            content: "Great, any favourite trail?".into(),
            name: None,
        },
    ]);
    req.metadata = Some(json!({"src": "chat", "user_id": "mallory"}));
    let out = m.add(req).await.unwrap();
    assert_eq!(out.results.len(), 2, "the system message is skipped");
    assert_eq!(out.warnings.len(), 1);
    assert!(out.warnings[0].contains("user_id"));
    let first = engines::off_runtime(|| {
        engines::off_runtime(|| {
            engines::off_runtime(|| {
                m.store()
                    .get(&scope, out.results[0].id, &ReadOptions::default())
            })
        })
    })
    .unwrap();
    assert_eq!(first.actor.as_deref(), Some("Ann"));
    assert_eq!(first.role, Some(Role::User));
    assert_eq!(
        serde_json::Value::Object(first.metadata.clone()),
        json!({"src": "chat"})
    );
    let log = engines::off_runtime(|| m.store().messages(&scope, None, 10)).unwrap();
    assert_eq!(log.len(), 2);
    assert_eq!(first.sources, vec![log[0].id]);
    assert!(log[0].created_at < log[1].created_at, "turn order is kept");
}

#[tokio::test]
async fn infer_without_a_model_is_refused_and_writes_nothing() {
    let (m, counting, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    let mut req = AddRequest::text(scope.clone(), "hello");
    req.infer = Some(true);
    let err = m.add(req).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(counting.0.load(Ordering::SeqCst), 0);
    assert_eq!(
        engines::off_runtime(|| m.store().integrity())
            .unwrap()
            .messages,
        0
    );
}

#[tokio::test]
async fn update_re_embeds_and_search_reports_every_signal() {
    let (m, _, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    let id = m
        .add(AddRequest::text(
            scope.clone(),
            "my favourite colour is blue",
        ))
        .await
        .unwrap()
        .results[0]
        .id;
    m.add(AddRequest::text(scope.clone(), "I work as a nurse"))
        .await
        .unwrap();
    let upd = mnemo::UpdateRequest {
        text: Some("my favourite colour is green".into()),
        ..Default::default()
    };
    m.update(scope.clone(), id, upd, WritePlan::default())
        .await
        .unwrap();
    let req = SearchRequest::new(scope.clone(), "favourite colour green", 5);
    let resp = m.search(req).await.unwrap();
    assert_eq!(resp.results[0].memory.id, id);
    assert!(resp.results[0].scores.dense > 0.5);
    assert!(resp.results[0].scores.bm25 > 0.0);
    assert!((resp.results[0].scores.bm25_norm - 1.0).abs() < 1e-6);
    assert_eq!(
        m.reset("yes").await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert!(
        engines::off_runtime(|| m.store().get(&scope, id, &ReadOptions::default())).is_ok(),
        "a refused reset deleted nothing"
    );
}

fn turn(name: &str, content: &str) -> InputMessage {
    InputMessage {
        role: Role::User,
        content: content.into(),
        name: Some(name.into()),
    }
}

fn conversation(scope: &Scope, session: &str, turns: Vec<InputMessage>) -> AddRequest {
    let mut req = AddRequest::text(scope.clone(), "");
    req.input = AddInput::Messages(turns);
    req.session_id = Some(session.into());
    req
}

async fn lexical_ids(m: &Memory, scope: &Scope, query: &str) -> Vec<String> {
    let mut req = SearchRequest::new(scope.clone(), query, 10);
    req.mode = SearchMode::Lexical;
    m.search(req)
        .await
        .unwrap()
        .results
        .into_iter()
        .map(|h| h.memory.text)
        .collect()
}

#[tokio::test]
async fn context_indexing_finds_a_turn_by_its_neighbours_without_changing_it() {
    let dir = engines::fresh_store();
    let store = dir.store();
    let mut indexing = mnemo::WindowIndexing::plain();
    indexing.before = 1;
    indexing.speaker = true;
    let m = Memory::from_parts_with(
        store,
        Arc::new(HashEmbedder),
        RankParams::default(),
        indexing,
    )
    .unwrap();
    let scope = Scope::user("u").unwrap();
    let out = m
        .add(conversation(
            &scope,
            "s1",
            vec![
                turn("Ana", "Which marathon are you training for?"),
                turn("Ben", "Berlin, in September!"),
            ],
        ))
        .await
        .unwrap();
    // The answer turn is found through the question before it, and by its speaker's name...
    assert_eq!(
        lexical_ids(&m, &scope, "marathon").await,
        vec![
            "Which marathon are you training for?",
            "Berlin, in September!"
        ]
    );
    assert_eq!(
        lexical_ids(&m, &scope, "ben").await,
        vec!["Berlin, in September!"]
    );
    // ...but its text and provenance are its own.
    let got = m
        .get(mnemo::GetRequest {
            scope: scope.clone(),
            id: out.results[1].id,
            include_expired: false,
        })
        .await
        .unwrap();
    assert_eq!(got.text, "Berlin, in September!");
    assert_eq!(got.sources.len(), 1);

    // A later call in the same session takes its context from the stored log; another
    // session's messages are not context.
    m.add(conversation(&scope, "s2", vec![turn("Ana", "Any pets?")]))
        .await
        .unwrap();
    m.add(conversation(
        &scope,
        "s1",
        vec![turn("Ben", "Yes, the hilly one.")],
    ))
    .await
    .unwrap();
    let hits = lexical_ids(&m, &scope, "september").await;
    assert!(
        hits.contains(&"Yes, the hilly one.".to_string()),
        "{hits:?}"
    );
    assert!(!lexical_ids(&m, &scope, "pets")
        .await
        .contains(&"Yes, the hilly one.".to_string()));
}

#[tokio::test]
async fn plain_text_adds_are_indexed_alone() {
    let (m, _, _dir) = engine();
    let scope = Scope::user("u").unwrap();
    m.add(AddRequest::text(
        scope.clone(),
        "The plumber comes on Tuesday",
    ))
    .await
    .unwrap();
    m.add(AddRequest::text(scope.clone(), "Buy oat milk"))
        .await
        .unwrap();
    assert_eq!(
        lexical_ids(&m, &scope, "plumber").await,
        vec!["The plumber comes on Tuesday"],
        "an unrelated earlier add is not context"
    );
}
