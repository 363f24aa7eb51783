//! Record builders for tests.

use crate::HashEmbedder;
use mnemo_core::*;
use serde_json::Value;

pub fn scope(user: &str) -> Scope {
    Scope::user(user).expect("test scope is valid")
}

/// A one-memory batch (with its source message) for `scope`.
pub fn batch(scope: &Scope, text: &str, metadata: Value) -> WriteBatch {
    batch_at(scope, text, metadata, chrono::Utc::now(), None)
}

pub fn batch_at(
    scope: &Scope,
    text: &str,
    metadata: Value,
    at: Timestamp,
    expires_at: Option<Timestamp>,
) -> WriteBatch {
    let msg = Message::new(scope, Role::User, None, text.to_string(), at);
    let metadata = match metadata {
        Value::Object(m) => m,
        Value::Null => Metadata::new(),
        other => panic!("fixture metadata must be an object, got {other}"),
    };
    WriteBatch {
        scope: scope.clone(),
        memories: vec![NewMemory::raw(
            &msg,
            scope,
            metadata,
            expires_at,
            HashEmbedder::vector(text),
        )],
        messages: vec![msg],
        idempotency: None,
        context: WriteContext::default(),
    }
}

/// Writes one memory and returns its id.
pub fn put(store: &dyn Store, scope: &Scope, text: &str, metadata: Value) -> MemoryId {
    let out = store
        .write(vec![batch(scope, text, metadata)])
        .expect("write succeeds");
    out[0].results[0].id
}

pub fn candidates<'a>(scope: &'a Scope, read: ReadOptions) -> CandidateQuery<'a> {
    CandidateQuery {
        scope,
        kinds: None,
        filter: None,
        read,
        limit: 50,
    }
}

/// Runs the shared hybrid search with the scripted embedder.
pub fn search(store: &dyn Store, scope: &Scope, query: &str, read: ReadOptions) -> Vec<Hit> {
    let req = SearchRequest {
        scope: scope.clone(),
        query: query.into(),
        top_k: 10,
        threshold: None,
        kinds: None,
        filter: None,
        read,
    };
    hybrid_search(
        store,
        &req,
        &HashEmbedder::vector(query),
        &RankParams::default(),
    )
    .expect("search succeeds")
}
