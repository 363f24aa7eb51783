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
