//! The conversation log on REST: sessions with their sizes, a session's messages with cursors
//! and the log's visibility rule, a session's window and delete, a memory's audit view,
//! segments and pages, the profile, attribution and reasons in history, and the typed errors
//! for unknown sessions, bad cursors and limits.

use crate::TestServer;
use serde_json::{json, Value};

/// Adds `turns` (user, assistant alternating) to `session` of `user` with `key`, raw.
fn talk(s: &TestServer, key: &str, user: &str, session: &str, turns: &[&str]) -> Value {
    let messages: Vec<Value> = turns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            json!({"role": role, "content": t})
        })
        .collect();
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(key),
        Some(json!({"messages": messages, "user_id": user, "session_id": session, "infer": false})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    r.body
}

fn id_of(added: &Value, text: &str) -> String {
    added["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["memory"] == text)
        .unwrap_or_else(|| panic!("{text} not in {added}"))["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn texts(messages: &Value) -> Vec<String> {
    messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn sessions_and_messages_page_with_cursors_and_follow_the_log_rule() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let added = talk(
        &s,
        &alice,
        "alice",
        "s1",
        &[
            "I walk the dog at seven",
            "Nice routine",
            "my bank PIN is 4417",
        ],
    );
    talk(&s, &alice, "alice", "s2", &["tea with oat milk"]);

    let r = s.call("GET", "/v1/sessions", Some(&alice), None);
    assert_eq!(r.status, 200, "{:?}", r.body);
    let sessions = r.body["sessions"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 2, "{:?}", r.body);
    assert_eq!(sessions[0]["session_id"], "s1");
    assert_eq!(sessions[0]["messages"], 3);
    assert!(sessions[0]["pages"].as_u64().unwrap() >= 1);
    assert!(sessions[0]["first_at"].as_str().unwrap().contains('T'));
    assert!(r.body["next_cursor"].is_null());
    let r = s.call("GET", "/v1/sessions?limit=1", Some(&alice), None);
    let cursor = r.body["next_cursor"].as_str().unwrap().to_string();
    let r = s.call(
        "GET",
        &format!("/v1/sessions?limit=1&cursor={cursor}"),
        Some(&alice),
        None,
    );
    assert_eq!(r.body["sessions"][0]["session_id"], "s2", "{:?}", r.body);

    // Messages a page at a time, in order.
    let r = s.call(
        "GET",
        "/v1/sessions/s1/messages?limit=2",
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        texts(&r.body["messages"]),
        ["I walk the dog at seven", "Nice routine"]
    );
    let first = &r.body["messages"][0];
    assert_eq!(first["role"], "user");
    assert!(first["id"].is_string() && first["created_at"].is_string());
    assert!(first.as_object().unwrap().contains_key("name"));
    let cursor = r.body["next_cursor"].as_str().unwrap().to_string();
    let r = s.call(
        "GET",
        &format!("/v1/sessions/s1/messages?limit=2&cursor={cursor}"),
        Some(&alice),
        None,
    );
    assert_eq!(texts(&r.body["messages"]), ["my bank PIN is 4417"]);
    assert!(r.body["next_cursor"].is_null(), "{:?}", r.body);

    // A deleted turn leaves the log (the rule packs use), with the reason in its history.
    let pin = id_of(&added, "my bank PIN is 4417");
    let r = s.call(
        "DELETE",
        &format!("/v1/memories/{pin}?reason=asked%20to%20forget"),
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = s.call("GET", "/v1/sessions/s1/messages", Some(&alice), None);
    assert_eq!(
        texts(&r.body["messages"]),
        ["I walk the dog at seven", "Nice routine"]
    );
    let r = s.call("GET", "/v1/sessions/s1", Some(&alice), None);
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["session_id"], "s1");
    assert!(
        !r.body["window"].as_array().unwrap().is_empty(),
        "{:?}",
        r.body
    );
    assert!(!r.body.to_string().contains("4417"), "{:?}", r.body);
    let snapshot = s.snapshot();
    assert!(
        snapshot
            .lines()
            .any(|l| l.contains("\"DELETE\"") && l.contains("asked to forget")),
        "the delete's reason is in history"
    );

    // The audit view: sources with their text, links, entities.
    let walk = id_of(&added, "I walk the dog at seven");
    let r = s.call(
        "GET",
        &format!("/v1/memories/{walk}?detail=true"),
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["sources"][0]["text"], "I walk the dog at seven");
    assert!(r.body["links"].is_array() && r.body["entities"].is_array());

    // Update with a reason; the ADD names the key that asked.
    let r = s.call(
        "PUT",
        &format!("/v1/memories/{walk}"),
        Some(&alice),
        Some(json!({"text": "I walk the dog at eight", "reason": "moved the walk"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = s.call(
        "GET",
        &format!("/v1/memories/{walk}/history"),
        Some(&alice),
        None,
    );
    let events = r.body["results"].as_array().unwrap();
    assert_eq!(events[0]["event"], "ADD");
    let actor = events[0]["actor"].as_str().unwrap();
    let alice_id = s
        .keys
        .list()
        .unwrap()
        .into_iter()
        .find(|k| k.user_id.as_deref() == Some("alice"))
        .unwrap()
        .id;
    assert_eq!(actor, format!("api-key:{alice_id}"));
    assert_eq!(events[0]["role"], "user");
    let update = events.iter().find(|e| e["event"] == "UPDATE").unwrap();
    assert_eq!(update["reason"], "moved the walk");

    // Deleting a session deletes its memories; its turns leave the log.
    let r = s.call("DELETE", "/v1/sessions/s2?reason=done", Some(&alice), None);
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["deleted"], 1);
    let r = s.call("GET", "/v1/sessions/s2/messages", Some(&alice), None);
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert!(r.body["messages"].as_array().unwrap().is_empty());
}

#[test]
fn bad_session_input_is_a_typed_error_naming_the_field_and_writes_nothing() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let added = talk(&s, &alice, "alice", "s1", &["my locker is 5521"]);
    let before = s.snapshot();
    for (method, path, field) in [
        ("GET", "/v1/sessions/nope/messages", "session_id"),
        ("GET", "/v1/sessions/nope", "session_id"),
        ("DELETE", "/v1/sessions/nope", "session_id"),
        ("GET", "/v1/sessions/s1/messages?cursor=bogus", "cursor"),
        ("GET", "/v1/sessions?cursor=bogus", "cursor"),
        ("GET", "/v1/sessions/s1/messages?limit=0", "limit"),
        ("GET", "/v1/sessions?limit=5000", "limit"),
        ("GET", "/v1/segments/not-a-uuid/pages", "segment"),
    ] {
        let r = s.call(method, path, Some(&alice), None);
        assert_eq!(r.status, 400, "{method} {path}: {:?}", r.body);
        assert_eq!(r.kind(), "invalid_input", "{method} {path}");
        assert!(
            r.body.to_string().contains(field),
            "{method} {path}: {:?}",
            r.body
        );
    }
    let r = s.call(
        "POST",
        "/v1/sessions/nope/erase",
        Some(&alice),
        Some(json!({})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("session_id"));
    let r = s.call("POST", "/v1/scopes/erase", Some(&alice), Some(json!({})));
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("confirm"));
    assert_eq!(s.snapshot(), before, "a refused request changed the store");
    // An erased memory erased again: invalid input naming `id`, nothing more written.
    let id = id_of(&added, "my locker is 5521");
    let r = s.call(
        "POST",
        &format!("/v1/memories/{id}/erase"),
        Some(&alice),
        Some(json!({})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let after_erase = s.snapshot();
    let r = s.call(
        "POST",
        &format!("/v1/memories/{id}/erase"),
        Some(&alice),
        Some(json!({})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("id"), "{:?}", r.body);
    assert_eq!(s.snapshot(), after_erase);
    // Profile refresh without a chat model names the model.
    let r = s.call(
        "POST",
        "/v1/profile/refresh",
        Some(&alice),
        Some(json!({"user_id": "alice"})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("chat model"), "{:?}", r.body);
}

#[test]
fn segments_show_heat_inputs_and_pages_and_searches_warm_them() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    // More exchanges than the short-term window holds: the oldest move into segments.
    let turns: Vec<String> = (0..14)
        .map(|i| format!("garden note {i}: the tomatoes need water"))
        .collect();
    let refs: Vec<&str> = turns.iter().map(String::as_str).collect();
    for chunk in refs.chunks(2) {
        talk(&s, &alice, "alice", "g", &[chunk[0]]);
        talk(&s, &alice, "alice", "g", &[chunk[1]]);
    }
    let r = s.call("GET", "/v1/segments", Some(&alice), None);
    assert_eq!(r.status, 200, "{:?}", r.body);
    let segments = r.body["segments"].as_array().unwrap().clone();
    assert!(!segments.is_empty(), "{:?}", r.body);
    let seg = &segments[0];
    assert_eq!(seg["state"], "active");
    assert!(seg["pages"].as_u64().unwrap() >= 1);
    assert!(seg["heat"].as_f64().is_some());
    let visits = seg["heat_inputs"]["visits"].as_u64().unwrap();
    assert!(seg["heat_inputs"]["recency"].as_f64().is_some());
    assert_eq!(seg["session_id"], "g");
    let id = seg["id"].as_str().unwrap().to_string();
    let r = s.call(
        "GET",
        &format!("/v1/segments/{id}/pages"),
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let pages = r.body["pages"].as_array().unwrap();
    assert!(!pages.is_empty());
    let first_text = pages[0]["messages"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();

    // A search returning a memory of the segment's pages counts one visit, written after the
    // answer; shutdown drains what is pending.
    let r = s.call(
        "POST",
        "/v1/memories/search",
        Some(&alice),
        Some(json!({"query": first_text, "top_k": 3})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let mut s = s;
    let server = s.shutdown_handle();
    let memory = server.state.service.memory().clone();
    s.runtime().block_on(server.shutdown()).unwrap();
    let scope = mnemo_core::Scope::user("alice").unwrap();
    let after = memory
        .store()
        .segments(&scope, false, true)
        .unwrap()
        .into_iter()
        .find(|g| g.id.to_string() == id)
        .unwrap();
    assert_eq!(after.visits, visits + 1, "one search, one visit");
}

#[test]
fn mcp_log_tools_read_the_log_and_update_and_delete_keep_their_reason() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let added = talk(&s, &alice, "alice", "s1", &["my cat is Tofu", "cute"]);
    let cat = id_of(&added, "my cat is Tofu");
    let session = crate::mcp::open_session(&s, &alice);
    let call = |tool: &str, args: Value| {
        crate::mcp::call_tool(&s, &alice, &session, tool, args).tool_json()
    };
    let listed = call("list_sessions", json!({}));
    assert_eq!(listed["sessions"][0]["session_id"], "s1", "{listed}");
    let read = call(
        "get_session_messages",
        json!({"session_id": "s1", "limit": 1}),
    );
    assert_eq!(texts(&read["messages"]), ["my cat is Tofu"], "{read}");
    assert!(read["next_cursor"].is_string(), "{read}");
    let one = call("get_session", json!({"session_id": "s1"}));
    assert!(one["window"].is_array(), "{one}");
    let detail = call("get_memory", json!({"memory_id": cat, "detail": true}));
    assert_eq!(detail["sources"][0]["text"], "my cat is Tofu", "{detail}");
    call(
        "update_memory",
        json!({"memory_id": cat, "text": "my cat is called Tofu", "reason": "clearer"}),
    );
    let h = call("memory_history", json!({"memory_id": cat}));
    let update = h["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "UPDATE")
        .cloned()
        .unwrap();
    assert_eq!(update["reason"], "clearer", "{h}");
    call(
        "delete_memory",
        json!({"memory_id": cat, "reason": "moved away"}),
    );
    assert!(s
        .snapshot()
        .lines()
        .any(|l| l.contains("\"DELETE\"") && l.contains("moved away")));
    let after = call("get_session_messages", json!({"session_id": "s1"}));
    assert_eq!(texts(&after["messages"]), ["cute"], "{after}");
    let gone = call("delete_session", json!({"session_id": "s1"}));
    assert_eq!(gone["deleted"], 1, "{gone}");
    let segments = call("list_segments", json!({}));
    assert!(segments["segments"].is_array(), "{segments}");
    let profile = call("get_profile", json!({}));
    assert!(profile["profile"].is_null(), "{profile}");
}

/// A segment's event time (the span of what its pages' messages state, each read against the
/// add's `timestamp`) is part of `GET /v1/segments`.
#[test]
fn segments_show_the_event_time_their_messages_state() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    // More exchanges than the short-term window holds: the oldest move into segments.
    for day in 1..=14 {
        let r = s.call(
            "POST",
            "/v1/memories",
            Some(&alice),
            Some(json!({
                "messages": [{"role": "user", "content": format!("garden note {day}: I watered the tomatoes yesterday")}],
                "user_id": "alice", "session_id": "g", "infer": false,
                "timestamp": format!("2023-05-{:02}T12:00:00Z", day + 1),
            })),
        );
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let r = s.call("GET", "/v1/segments", Some(&alice), None);
    assert_eq!(r.status, 200, "{:?}", r.body);
    let segments = r.body["segments"].as_array().unwrap().clone();
    assert!(!segments.is_empty(), "{:?}", r.body);
    let starts: Vec<&str> = segments
        .iter()
        .map(|g| g["event_time"]["start"].as_str().expect("an event time"))
        .collect();
    // The first note, said on 2 May, watered them on 1 May.
    assert!(
        starts.iter().any(|t| t.starts_with("2023-05-01")),
        "{starts:?}"
    );
    for g in &segments {
        assert_eq!(g["event_time"]["source"], "text", "{g}");
        assert_eq!(g["event_time"]["granularity"], "day", "{g}");
    }
}
