//! Input that once panicked the library, now typed errors with nothing written: an embedder
//! answering with the wrong number of vectors (raw add, search, import, inferred add), a
//! code-built filter with `in` on a scalar, import records with an invalid scope. And the
//! provenance of inferred facts: a fact the model cites no message for stays unattributed.

use mnemo::core::filter::Op;
use mnemo::core::*;
use mnemo::{AddInput, AddRequest, InferConfig, Memory};
use mnemo_testkit::engines;
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The hash embedder, except that its answer has `extra` more (or fewer) vectors than texts once
/// `armed` calls have passed.
struct Miscounting {
    extra: isize,
    armed: AtomicUsize,
}

impl Embedder for Miscounting {
    fn model_id(&self) -> &str {
        HashEmbedder::MODEL_ID
    }
    fn dimension(&self) -> usize {
        HashEmbedder::DIM
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut v = HashEmbedder.embed(texts)?;
        if self.armed.fetch_sub(1, Ordering::SeqCst) == 0 {
            self.armed.store(0, Ordering::SeqCst);
            if self.extra < 0 {
                v.truncate(v.len().saturating_sub(self.extra.unsigned_abs()));
            } else {
                let first = v.first().cloned().unwrap_or_default();
                v.extend((0..self.extra).map(|_| first.clone()));
            }
        }
        Ok(v)
    }
}

fn engine(extra: isize, armed: usize) -> (Memory, engines::TestStore) {
    let dir = engines::fresh_store();
    let store = dir.store();
    let embedder = Arc::new(Miscounting {
        extra,
        armed: AtomicUsize::new(armed),
    });
    let m = Memory::from_parts(store, embedder, RankParams::default()).unwrap();
    (m, dir)
}

fn user() -> Scope {
    Scope::user("u").unwrap()
}

fn conversation(turns: &[&str]) -> AddRequest {
    let mut req = AddRequest::text(user(), "");
    req.input = AddInput::Messages(
        turns
            .iter()
            .map(|t| InputMessage {
                role: Role::User,
                content: t.to_string(),
                name: None,
            })
            .collect(),
    );
    req
}

#[tokio::test]
async fn a_raw_add_with_the_wrong_vector_count_is_a_model_error_and_writes_nothing() {
    for extra in [-1, 1] {
        let (m, _dir) = engine(extra, 0);
        let err = m
            .add(conversation(&["I like tea", "and biscuits"]))
            .await
            .unwrap_err();
        assert!(matches!(err, Error::Model { .. }), "{extra}: {err}");
        let counts = engines::off_runtime(|| m.store().integrity()).unwrap();
        assert_eq!((counts.memories, counts.messages), (0, 0), "{extra}");
    }
}

#[tokio::test]
async fn search_and_import_with_the_wrong_vector_count_are_model_errors() {
    let (m, _dir) = engine(-1, 1);
    m.add(AddRequest::text(user(), "I like tea")).await.unwrap();
    let err = m
        .search(SearchRequest::new(user(), "tea", 5))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Model { .. }), "{err}");

    // One vector too many for the query is as wrong as none.
    let (m, _dir) = engine(1, 1);
    m.add(AddRequest::text(user(), "I like tea")).await.unwrap();
    let err = m
        .search(SearchRequest::new(user(), "tea", 5))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Model { .. }), "{err}");
    assert!(err.to_string().contains("2 vectors"), "{err}");

    let (m, _dir) = engine(1, 1);
    m.add(AddRequest::text(user(), "I like tea")).await.unwrap();
    let records = m.export().await.unwrap();
    let (m2, _dir2) = engine(1, 0);
    let err = m2.import_records(records).await.unwrap_err();
    assert!(matches!(err, Error::Model { .. }), "{err}");
    assert_eq!(
        engines::off_runtime(|| m2.store().integrity())
            .unwrap()
            .memories,
        0
    );
}

#[tokio::test]
async fn an_inferred_add_with_the_wrong_vector_count_is_a_model_error() {
    let (m, _dir) = engine(-1, 1);
    let chat = Arc::new(ScriptedChat::new("scripted", |_| {
        Ok(json!({"facts": [{"text": "Ann likes tea", "sources": [1]}]}).to_string())
    }));
    // The first embedding (similar memories) is right; the facts' embedding is short.
    let cfg = InferConfig {
        similar_memories: 1,
        ..InferConfig::default()
    };
    let m = m.with_chat(chat, cfg);
    let mut req = AddRequest::text(user(), "Ann likes tea");
    req.infer = Some(true);
    let err = m.add(req).await.map(|_| ()).unwrap_err();
    assert!(matches!(err, Error::Model { .. }), "{err}");
    assert_eq!(
        engines::off_runtime(|| m.store().integrity())
            .unwrap()
            .memories,
        0
    );
}

#[tokio::test]
async fn a_code_built_filter_with_in_on_a_scalar_is_invalid_input() {
    let (m, _dir) = engine(0, usize::MAX);
    m.add(AddRequest::text(user(), "I like tea")).await.unwrap();
    for op in [Op::In, Op::Nin] {
        let mut req = SearchRequest::new(user(), "tea", 5);
        req.filter = Some(Filter::Meta {
            key: "topic".into(),
            op,
            value: json!("drinks"),
        });
        let err = m.search(req).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    }
}

#[tokio::test]
async fn import_records_with_an_invalid_scope_are_refused_not_a_panic() {
    let (m, _dir) = engine(0, usize::MAX);
    m.add(AddRequest::text(user(), "I like tea")).await.unwrap();
    let mut records = m.export().await.unwrap();
    for r in &mut records {
        if let ExportRecord::Memory(mem) = r {
            mem.id = MemoryId::new();
            mem.user_id = None;
        }
    }
    let err = m.import_records(records).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert_eq!(
        engines::off_runtime(|| m.store().integrity())
            .unwrap()
            .memories,
        1
    );
    // Read from an import line, such a record is refused before it exists at all.
    let mut line = serde_json::to_value(&m.export().await.unwrap()[0]).unwrap();
    line["user_id"] = json!(null);
    line["agent_id"] = json!(" ");
    assert!(serde_json::from_value::<ExportRecord>(line).is_err());
}

#[tokio::test]
async fn a_fact_without_cited_sources_is_unattributed() {
    let (m, _dir) = engine(0, usize::MAX);
    let chat = Arc::new(ScriptedChat::new("scripted", |_| {
        Ok(json!({"facts": [
            {"text": "Ann likes green tea", "sources": [2]},
            {"text": "Ann lives in Porto"},
            {"text": "Ann has a cat named Biscuit", "sources": [7, "x"]},
        ]})
        .to_string())
    }));
    let m = m.with_chat(chat, InferConfig::default());
    let mut req = conversation(&["Hi!", "I like green tea", "I live in Porto with Biscuit"]);
    req.infer = Some(true);
    let out = m.add(req).await.unwrap();
    assert_eq!(out.results.len(), 3, "{out:?}");
    let log = engines::off_runtime(|| m.store().messages(&user(), None, 10)).unwrap();
    let sources = |text: &str| {
        let id = out.results.iter().find(|r| r.memory == text).unwrap().id;
        engines::off_runtime(|| m.store().get(&user(), id, &ReadOptions::default()))
            .unwrap()
            .sources
    };
    assert_eq!(sources("Ann likes green tea"), vec![log[1].id]);
    assert_eq!(sources("Ann lives in Porto"), Vec::<MessageId>::new());
    assert_eq!(
        sources("Ann has a cat named Biscuit"),
        Vec::<MessageId>::new(),
        "a citation of no message of the add is none"
    );
}
