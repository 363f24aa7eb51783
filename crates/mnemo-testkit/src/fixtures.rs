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
        changes: Vec::new(),
        links: Vec::new(),
        evolutions: Vec::new(),
        tiers: Default::default(),
        idempotency: None,
        context: WritePlan::default(),
        relations: Vec::new(),
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
        read,
        ..SearchRequest::new(scope.clone(), query, 10)
    };
    hybrid_search(
        store,
        &req,
        &HashEmbedder::vector(query),
        &RankParams::default(),
    )
    .expect("search succeeds")
}

/// A LoCoMo-shaped conversation written for tests (two sessions, seven turns, an image
/// caption, a multi-evidence question and a question without evidence).
pub fn locomo_tiny() -> serde_json::Value {
    serde_json::json!([{
        "sample_id": "tiny-1",
        "conversation": {
            "speaker_a": "Ines", "speaker_b": "Tomas",
            "session_1_date_time": "10:00 am on 3 March, 2024",
            "session_1": [
                {"speaker": "Ines", "dia_id": "D1:1", "text": "Morning! How was the weekend?"},
                {"speaker": "Tomas", "dia_id": "D1:2", "text": "Great, I finally adopted a greyhound named Biscuit."},
                {"speaker": "Ines", "dia_id": "D1:3", "text": "Lovely. I am moving to Lisbon for a new job in April."},
                {"speaker": "Tomas", "dia_id": "D1:4", "text": "Congratulations on the job!"}
            ],
            "session_2_date_time": "6:30 pm on 20 April, 2024",
            "session_2": [
                {"speaker": "Tomas", "dia_id": "D2:1", "text": "Biscuit learned to fetch the frisbee today.",
                 "blip_caption": "a photo of a dog on a beach"},
                {"speaker": "Ines", "dia_id": "D2:2", "text": "The flat in Lisbon has a balcony with a river view."},
                {"speaker": "Tomas", "dia_id": "D2:3", "text": "Send me pictures of the river!"}
            ]
        },
        "qa": [
            {"question": "What is the name of Tomas's greyhound?", "answer": "Biscuit", "evidence": ["D1:2"], "category": 4},
            {"question": "Which city is Ines moving to and what view does her flat have?", "answer": "Lisbon, river view",
             "evidence": ["D1:3", "D2:2"], "category": 1},
            {"question": "What colour is the balcony?", "adversarial_answer": "blue", "evidence": [], "category": 5}
        ]
    }])
}

/// The tables whose rows the erase of a whole scope keeps, filed under their owner's scope
/// (`Erasure::erase_log`): the records' ids, times and `ERASE` events, and stored add results
/// without the erased text (a retry under the same key still gets its answer).
pub const SCOPE_ERASE_KEPT_TABLES: [&str; 5] = [
    "memories",
    "messages",
    "memory_sources",
    "history",
    "idempotency",
];

/// The user ids of [`scope_erase_fixture`]: the one to erase, and another that keeps its rows.
/// Both are distinctive, so a scan of every table for them finds no other text.
pub const SCOPE_ERASE_ERASED: &str = "vera7Qx";
pub const SCOPE_ERASE_KEPT: &str = "bo5Lk";

/// Writes, under one user, a memory with an entity, a session message and an idempotency key,
/// and a block under that user's agent (an owner with a block and nothing else), plus another
/// user's memory: what a backend's test of a whole-scope erase scans its tables for. Returns
/// the scope to erase ([`SCOPE_ERASE_ERASED`]'s).
pub fn scope_erase_fixture(store: &dyn Store) -> Scope {
    let erased = Scope::user(SCOPE_ERASE_ERASED).expect("test scope is valid");
    let erased_bot = Scope::from_parts(Some(SCOPE_ERASE_ERASED), Some("bot"), None)
        .expect("test scope is valid");
    let kept = Scope::user(SCOPE_ERASE_KEPT).expect("test scope is valid");
    let mut b = batch(
        &erased,
        "Vera met Caroline in Oslo",
        serde_json::json!({"n": 1}),
    );
    b.memories[0].entities = vec![mnemo_core::entity::EntityMention::new("Caroline", "person")];
    b.messages[0].session_id = Some("s1".into());
    b.idempotency = Some(Idempotency {
        key: "k1".into(),
        request_hash: "h1".into(),
    });
    store.write(vec![b]).expect("write");
    put(store, &kept, "Bo likes tea", serde_json::json!({}));
    store
        .create_block(
            &NewBlock::new(
                erased_bot,
                BlockLabel::new("human").expect("label"),
                "likes Oslo",
            ),
            &BlockLimits::default(),
        )
        .expect("block");
    erased
}
