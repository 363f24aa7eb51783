//! Core memory blocks over REST: the routes and their OpenAPI entries, the typed refusals
//! (label, limit, replace counts, conflicts), tenancy (another user's label answers as a
//! missing one, a refused probe changes nothing) and agent keys (they see only the blocks of
//! their agent and those attached to it, and read-only blocks refuse them).

use crate::TestServer;
use mnemo_server::ScopeParts;
use serde_json::{json, Value};

fn ok(s: &TestServer, method: &str, path: &str, key: &str, body: Option<Value>) -> Value {
    let r = s.call(method, path, Some(key), body);
    assert_eq!(r.status, 200, "{method} {path}: {:?}", r.body);
    r.body
}

#[test]
fn blocks_over_rest_with_tenancy_and_agent_keys() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let bob = s.user_key("bob");
    let bot = s
        .keys
        .create(
            None,
            false,
            &ScopeParts::new(Some("alice".into()), Some("bot".into()), None),
        )
        .unwrap()
        .key;
    ok(
        &s,
        "POST",
        "/v1/blocks",
        &alice,
        Some(json!({"user_id": "alice", "label": "human",
        "value": "Alice likes tea.", "description": "About Alice", "agents": ["bot"]})),
    );
    ok(
        &s,
        "POST",
        "/v1/blocks",
        &alice,
        Some(json!({"user_id": "alice", "label": "policy",
        "value": "Be kind.", "read_only": true, "agents": ["bot"]})),
    );
    ok(
        &s,
        "POST",
        "/v1/blocks",
        &alice,
        Some(json!({"user_id": "alice", "label": "private", "value": "diary"})),
    );

    // Edits: append by the agent, a replace that must occur once, a stale version, the limit.
    let b = ok(
        &s,
        "POST",
        "/v1/blocks/human/edit",
        &bot,
        Some(json!({"op": "append", "text": "Tea: green.", "reason": "chat"})),
    );
    assert_eq!(
        (b["version"].as_u64(), b["value"].as_str()),
        (Some(2), Some("Alice likes tea.\nTea: green."))
    );
    let r = s.call(
        "POST",
        "/v1/blocks/human/edit",
        Some(&alice),
        Some(json!({"user_id": "alice", "op": "replace", "old": "e", "new": "x"})),
    );
    assert_eq!((r.status, r.kind()), (400, "invalid_input"), "{:?}", r.body);
    assert!(
        r.body.to_string().contains("occurs 6 times"),
        "{:?}",
        r.body
    );
    let r = s.call(
        "POST",
        "/v1/blocks/human/edit",
        Some(&alice),
        Some(json!({"user_id": "alice", "op": "replace", "old": "coffee", "new": "x"})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(
        r.body.to_string().contains("occurs 0 times"),
        "{:?}",
        r.body
    );
    let r = s.call(
        "POST",
        "/v1/blocks/human/edit",
        Some(&alice),
        Some(json!({"user_id": "alice", "op": "rewrite", "value": "x", "expected_version": 1})),
    );
    assert_eq!((r.status, r.kind()), (409, "conflict"), "{:?}", r.body);
    let r = s.call(
        "POST",
        "/v1/blocks/human/edit",
        Some(&alice),
        Some(json!({"user_id": "alice", "op": "append", "text": "y".repeat(2000)})),
    );
    assert_eq!(r.status, 400);
    assert!(r.body.to_string().contains("limit of 2000"), "{:?}", r.body);
    let r = s.call(
        "POST",
        "/v1/blocks",
        Some(&alice),
        Some(json!({"user_id": "alice", "label": "Bad Label"})),
    );
    assert_eq!(r.status, 400);
    assert!(r.body.to_string().contains("label"), "{:?}", r.body);
    let r = s.call(
        "POST",
        "/v1/blocks",
        Some(&alice),
        Some(json!({"user_id": "alice", "label": "big", "limit": 1_000_000})),
    );
    assert_eq!(r.status, 400);
    assert!(r.body.to_string().contains("limit"), "{:?}", r.body);

    // The agent's key sees only what is attached to it, and the read-only block refuses it.
    let listed = ok(&s, "GET", "/v1/blocks", &bot, None);
    let labels: Vec<&str> = listed["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["human", "policy"]);
    assert_eq!(
        s.call("GET", "/v1/blocks/private", Some(&bot), None).status,
        404
    );
    let r = s.call(
        "POST",
        "/v1/blocks/policy/edit",
        Some(&bot),
        Some(json!({"op": "append", "text": "Be rude."})),
    );
    assert_eq!(r.status, 400);
    assert!(r.body.to_string().contains("read-only"), "{:?}", r.body);
    ok(
        &s,
        "POST",
        "/v1/blocks/policy/edit",
        &alice,
        Some(json!({"user_id": "alice", "op": "append", "text": "Be brief."})),
    );

    // Bob: alice's scope is forbidden; alice's labels in his own scope are missing.
    let before = ok(&s, "GET", "/v1/blocks?user_id=alice", &alice, None);
    assert_eq!(
        s.call("GET", "/v1/blocks?user_id=alice", Some(&bob), None)
            .status,
        403
    );
    assert_eq!(
        s.call("GET", "/v1/blocks/human?user_id=alice", Some(&bob), None)
            .status,
        403
    );
    for (method, path, body) in [
        ("GET", "/v1/blocks/human", None),
        ("GET", "/v1/blocks/human/history", None),
        ("DELETE", "/v1/blocks/human", None),
        (
            "POST",
            "/v1/blocks/human/edit",
            Some(json!({"op": "rewrite", "value": "bob"})),
        ),
    ] {
        let r = s.call(method, path, Some(&bob), body);
        assert_eq!(
            (r.status, r.kind()),
            (404, "not_found"),
            "{method} {path}: {:?}",
            r.body
        );
    }
    assert_eq!(
        ok(&s, "GET", "/v1/blocks?user_id=alice", &alice, None),
        before
    );

    // History, the pack and the OpenAPI document.
    let h = ok(
        &s,
        "GET",
        "/v1/blocks/human/history?user_id=alice",
        &alice,
        None,
    );
    let events = h["results"].as_array().unwrap();
    assert_eq!(
        events
            .iter()
            .map(|e| e["op"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["create", "append"]
    );
    assert_eq!(events[1]["reason"], "chat");
    let pack = ok(
        &s,
        "POST",
        "/v1/context",
        &bot,
        Some(json!({"query": "tea", "budget_tokens": 300})),
    );
    let rendered = pack["rendered"].as_str().unwrap();
    assert!(
        rendered.starts_with("## Core memory")
            && rendered.contains("Tea: green.")
            && !rendered.contains("diary"),
        "{rendered}"
    );
    let bare = ok(
        &s,
        "POST",
        "/v1/context",
        &bot,
        Some(json!({"query": "tea", "budget_tokens": 300, "no_blocks": true})),
    );
    assert!(!bare["rendered"].as_str().unwrap().contains("Core memory"));
    let doc = s.call("GET", "/openapi.json", None, None).body;
    for p in [
        "/v1/blocks",
        "/v1/blocks/{label}",
        "/v1/blocks/{label}/edit",
        "/v1/blocks/{label}/history",
        "/v1/blocks/seed",
    ] {
        assert!(
            doc["paths"].get(p).is_some(),
            "{p} missing from the OpenAPI document"
        );
    }
    let seeded = s.call(
        "POST",
        "/v1/blocks/seed",
        Some(&alice),
        Some(json!({"user_id": "alice"})),
    );
    assert_eq!(
        seeded.status, 400,
        "no profile and no facts yet: {:?}",
        seeded.body
    );
    let deleted = ok(
        &s,
        "DELETE",
        "/v1/blocks/private?user_id=alice",
        &alice,
        None,
    );
    assert_eq!(deleted["value"], "diary");
}
