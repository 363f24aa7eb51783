//! The store the browser suite inspects, written through the public API of a real server:
//! alice's memories (one of them markup, one a fact superseded by its successor, two linked
//! notes, a conversation), bob's, and 1,000 memories of a third user for the list timing.

use crate::TestServer;
use mnemo::Memory;
use mnemo_core::{RankParams, TierConfig};
use mnemo_server::{KeyStore, ScopeParts, ServerConfig};
use mnemo_testkit::HashEmbedder;
use serde_json::{json, Value};
use std::sync::Arc;

/// What the suite needs to find again.
pub(crate) struct Seeded {
    pub bob_key: String,
    pub secret_id: String,
    pub xss_id: String,
    pub old_fact: String,
    pub new_fact: String,
    pub note_a: String,
    pub note_b: String,
}

/// Text only alice's scope holds; no view may show it to bob.
pub(super) const ALICE_SECRET: &str = "Alice's door code is 4711";
pub(super) const XSS_TEXT: &str = "<img src=x onerror=alert(1)>";
pub(super) const XSS_META: &str = "<b>bold</b><script>window.__xss = 1; alert(2)</script>";

fn add(s: &TestServer, body: Value) -> String {
    let r = s.call("POST", "/v1/memories", Some(&s.admin), Some(body));
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body["results"][0]["id"].as_str().unwrap().to_string()
}

const OLD: &str = "01a22cec-5566-75a4-ba16-0f2c04e0d7d1";
const NEW: &str = "01a22cec-5566-75a4-ba16-0f2c04e0d7d2";

/// A fact and the fact that superseded it, as an export carries them (the model's update
/// pipeline writes the same records; importing them needs no chat model).
fn import_supersession(s: &TestServer) {
    let memory = |id: &str, text: &str, state: &str, created: &str, until: Value| {
        json!({"type": "memory", "id": id, "memory": text, "kind": "fact", "state": state,
               "user_id": "alice", "agent_id": null, "run_id": null, "metadata": {"topic": "home"},
               "hash": "", "created_at": created, "updated_at": "2025-06-01T00:00:00Z",
               "expires_at": null, "valid_from": null, "valid_until": until, "actor": "model",
               "role": "user", "sources": [], "access_count": 0, "last_accessed_at": null})
    };
    let lines = [
        memory(
            OLD,
            "Alice lives in Berlin",
            "superseded",
            "2025-01-01T00:00:00Z",
            json!("2025-06-01T00:00:00Z"),
        ),
        memory(
            NEW,
            "Alice lives in Lisbon",
            "active",
            "2025-06-01T00:00:00Z",
            Value::Null,
        ),
        json!({"type": "link", "from": NEW, "to": OLD, "kind": "supersedes", "strength": 1.0,
               "author": "model", "created_at": "2025-06-01T00:00:00Z", "reason": "she moved"}),
    ];
    let body: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    let r = s.raw(
        "POST",
        "/v1/import",
        Some(&s.admin),
        Some("application/x-ndjson"),
        Some(body.into_bytes()),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
}

/// A real server (SQLite store in a temp dir, the hash embedder, keys) whose sessions keep one
/// page in their short-term window, so a short conversation already fills mid-term segments.
pub(super) fn start() -> TestServer {
    start_with_chat(None)
}

/// A chat model that answers only the profile analysis: the traveller's preference, resting on
/// the message that states it, and one statement of user and of assistant knowledge. Any other
/// step is an error (the suite never asks for one).
pub(super) fn profile_chat() -> Arc<dyn mnemo_core::ChatModel> {
    Arc::new(mnemo_testkit::ScriptedChat::new(
        "scripted:profile",
        |req| {
            if mnemo_core::pipeline::step_of(req) != Some("profile") {
                return Err(mnemo_core::Error::internal(
                    "the suite's chat answers profile calls only",
                ));
            }
            let prompt = &req.messages[1].content;
            let n: u64 = prompt
                .lines()
                .find(|l| l.starts_with('[') && l.contains("quiet hotel"))
                .and_then(|l| l[1..].split(']').next()?.parse().ok())
                .expect("the prompt numbers the message about the hotel");
            Ok(json!({
            "profile": {"dimensions": [{"name": "travel", "value": "prefers quiet hotels", "messages": [n]}],
                        "reason": "stated in the trip chat"},
            "user_knowledge": [{"text": "Ann is planning a trip to Porto", "messages": [n]}],
            "assistant_knowledge": ["Suggested a quiet guesthouse by the river"]
        })
        .to_string())
        },
    ))
}

/// [`start`] with a chat model.
pub(super) fn start_with_chat(chat: Option<Arc<dyn mnemo_core::ChatModel>>) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn mnemo_core::Store> =
        Arc::new(mnemo_store_sqlite::SqliteStore::open(dir.path().join("mnemo.db")).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let memory = Memory::from_parts(store.clone(), Arc::new(HashEmbedder), RankParams::default())
        .unwrap()
        .with_tier_config(TierConfig {
            short_term_capacity: 1,
            ..TierConfig::default()
        });
    let memory = match chat {
        Some(chat) => memory.with_chat(chat, mnemo::InferConfig::default()),
        None => memory,
    };
    let cfg = ServerConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().join("keys.db"));
    let server = rt
        .block_on(mnemo_server::start(memory, &cfg, std::future::pending()))
        .unwrap();
    let keys = KeyStore::new(store).unwrap();
    let admin = keys
        .create(Some("admin"), true, &ScopeParts::default())
        .unwrap()
        .key;
    TestServer {
        url: format!("http://{}", server.addr),
        admin,
        keys,
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into(),
        server: Some(server),
        rt,
        _dir: dir,
        _schema: None,
    }
}

pub(super) fn seed(s: &TestServer) -> Seeded {
    let secret_id = add(
        s,
        json!({"text": ALICE_SECRET, "user_id": "alice", "infer": false}),
    );
    let xss_id = add(
        s,
        json!({"text": XSS_TEXT, "user_id": "alice", "infer": false,
               "metadata": {"html": XSS_META, "zip": "0012", "n": 12, "ok": true}}),
    );
    import_supersession(s);
    let note = |text: &str, kw: &str| {
        add(
            s,
            json!({"text": text, "user_id": "alice", "memory_type": "note", "infer": false,
                   "keywords": [kw], "tags": ["trip"], "context": "planning the Lisbon trip"}),
        )
    };
    let note_a = note("Lisbon trip: flights booked for May", "flights");
    let note_b = note("Lisbon trip: hotel near Alfama", "hotel");
    let r = s.call(
        "POST",
        &format!("/v1/memories/{note_a}/links"),
        Some(&s.admin),
        Some(json!({"user_id": "alice", "links": [{"to": note_b, "reason": "same trip", "strength": 0.8}]})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    // Three exchanges of one session: with a short-term window of one page, the first two move
    // on into mid-term segments.
    for (user, assistant) in [
        (
            "Which museums are open on Monday in Lisbon?",
            "The tile museum opens on Mondays",
        ),
        (
            "Any good seafood places near Alfama?",
            "Try the grilled sardines near the cathedral",
        ),
        (
            "Alice wants a quiet hotel in Lisbon for the trip",
            "Noted: a quiet hotel in Lisbon for the May trip",
        ),
    ] {
        add(
            s,
            json!({"user_id": "alice", "infer": false, "session_id": "trip-chat", "messages": [
                {"role": "user", "content": user}, {"role": "assistant", "content": assistant}]}),
        );
    }
    add(
        s,
        json!({"text": "Bob likes chess openings", "user_id": "bob", "infer": false}),
    );
    let items: Vec<Value> = (0..1000)
        .map(|i| json!({"text": format!("bulk memory number {i}"), "user_id": "bulk", "infer": false}))
        .collect();
    let r = s.call(
        "POST",
        "/v1/memories/batch",
        Some(&s.admin),
        Some(json!({ "items": items })),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    Seeded {
        bob_key: s.user_key("bob"),
        secret_id,
        xss_id,
        old_fact: OLD.into(),
        new_fact: NEW.into(),
        note_a,
        note_b,
    }
}
