//! Erasure on every surface: the native route, Mem0's `DELETE …?erase=true`, and the MCP tool.
//! (That the bytes leave the database file is the store's own test.)

use crate::TestServer;
use serde_json::{json, Value};

fn history(s: &TestServer, key: &str, id: &str) -> Value {
    let r = s.call(
        "GET",
        &format!("/v1/memories/{id}/history"),
        Some(key),
        None,
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body
}

fn found(s: &TestServer, key: &str, query: &str) -> bool {
    let r = s.call(
        "POST",
        "/v1/memories/search",
        Some(key),
        Some(json!({"query": query})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body.to_string().contains(query)
}

#[test]
fn erase_removes_the_text_on_rest_and_mem0_and_keeps_a_tombstone() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let bob = s.user_key("bob");
    let id = s.seed("alice", "my therapist is Dr Quillfeather");
    // Bob cannot erase alice's memory: the answer any unknown id gets.
    let r = s.call(
        "POST",
        &format!("/v1/memories/{id}/erase"),
        Some(&bob),
        Some(json!({})),
    );
    assert_eq!(r.status, 404, "{:?}", r.body);
    assert!(found(&s, &alice, "Quillfeather"));

    let r = s.call(
        "POST",
        &format!("/v1/memories/{id}/erase"),
        Some(&alice),
        Some(json!({"sources": true, "reason": "user request"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["id"], id.as_str());
    assert_eq!(r.body["messages_erased"], 1);
    assert!(!found(&s, &alice, "Quillfeather"));
    let h = history(&s, &alice, &id);
    assert!(!h.to_string().contains("Quillfeather"), "{h}");
    let last = h["results"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["event"], "ERASE", "{h}");
    assert_eq!(last["reason"], "user request", "{h}");
    assert!(
        !s.snapshot().contains("Quillfeather"),
        "export keeps no copy"
    );

    // Mem0: DELETE with erase=true; delete_linked=true is refused, not ignored.
    let id2 = s.seed("alice", "my locker is number 5521");
    let r = s.call(
        "DELETE",
        &format!("/v1/memories/{id2}/?delete_linked=true"),
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("delete_linked"));
    let r = s.call(
        "DELETE",
        &format!("/v1/memories/{id2}/?erase=true&erase_sources=true"),
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert!(!s.snapshot().contains("5521"));
    assert!(history(&s, &alice, &id2).to_string().contains("ERASE"));
}

#[test]
fn erase_memory_is_an_mcp_tool() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let id = s.seed("alice", "the safe combination is 8-13-77");
    let session = crate::mcp::open_session(&s, &alice);
    let r = crate::mcp::call_tool(
        &s,
        &alice,
        &session,
        "erase_memory",
        json!({"memory_id": id, "reason": "asked to forget", "sources": true}),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("history_scrubbed"), "{}", r.text);
    assert!(!s.snapshot().contains("8-13-77"));
}

fn seed_turn(s: &TestServer, key: &str, user: &str, session: &str, text: &str) {
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(key),
        Some(
            json!({"user_id": user, "session_id": session, "infer": false,
                    "messages": [{"role": "user", "content": text}]}),
        ),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
}

/// `POST /v1/sessions/{id}/erase` and `POST /v1/scopes/erase`: the texts leave the store,
/// another user's key cannot reach them (its scope has no such session), a scope erase without
/// `confirm` is refused naming it, and nothing is written by a refusal.
#[test]
fn sessions_and_scopes_are_erased_on_rest_within_the_keys_scope() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let bob = s.user_key("bob");
    seed_turn(&s, &alice, "alice", "s1", "my bank PIN is Qz4417xv");
    seed_turn(&s, &alice, "alice", "s2", "my locker code is Vw5521yy");
    seed_turn(&s, &bob, "bob", "s9", "bob's own secret Jq8810kk");

    let r = s.call("POST", "/v1/sessions/s1/erase", Some(&bob), Some(json!({})));
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("session_id"), "{:?}", r.body);
    let r = s.call(
        "POST",
        "/v1/sessions/nope/erase",
        Some(&alice),
        Some(json!({})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(s.snapshot().contains("Qz4417xv"), "refusals write nothing");

    let r = s.call(
        "POST",
        "/v1/sessions/s1/erase",
        Some(&alice),
        Some(json!({"reason": "user request"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["memories_erased"], 1, "{:?}", r.body);
    assert_eq!(r.body["messages_erased"], 1, "{:?}", r.body);
    assert!(!s.snapshot().contains("Qz4417xv"));
    assert!(!found(&s, &alice, "Qz4417xv"));
    assert!(found(&s, &alice, "Vw5521yy"), "another session stays");

    let r = s.call("POST", "/v1/scopes/erase", Some(&alice), Some(json!({})));
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("confirm"), "{:?}", r.body);
    assert!(s.snapshot().contains("Vw5521yy"));
    let r = s.call(
        "POST",
        "/v1/scopes/erase",
        Some(&alice),
        Some(json!({"confirm": true})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["memories_erased"], 1, "{:?}", r.body);
    let snap = s.snapshot();
    assert!(!snap.contains("Vw5521yy"));
    assert!(snap.contains("Jq8810kk"), "bob's scope is untouched");
    // Bob's key cannot name alice's scope.
    let r = s.call(
        "POST",
        "/v1/scopes/erase",
        Some(&bob),
        Some(json!({"user_id": "alice", "confirm": true})),
    );
    assert!(r.status == 403 || r.status == 404, "{:?}", r.body);
}

#[test]
fn sessions_and_scopes_are_erased_by_mcp_tools() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    seed_turn(&s, &alice, "alice", "s1", "the safe combination is 8-13-77");
    seed_turn(&s, &alice, "alice", "s2", "the gate code is 4-4-91");
    let session = crate::mcp::open_session(&s, &alice);
    let r = crate::mcp::call_tool(
        &s,
        &alice,
        &session,
        "erase_session",
        json!({"session_id": "s1"}),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.text.contains("memories_erased"), "{}", r.text);
    assert!(!s.snapshot().contains("8-13-77"));
    let r = crate::mcp::call_tool(&s, &alice, &session, "erase_scope", json!({}));
    assert!(r.text.contains("confirm"), "{}", r.text);
    assert!(s.snapshot().contains("4-4-91"));
    let r = crate::mcp::call_tool(
        &s,
        &alice,
        &session,
        "erase_scope",
        json!({"confirm": true}),
    );
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(!s.snapshot().contains("4-4-91"));
}
