//! Cross-tenant probes of the conversation-log routes and tools: a key bound to bob never reads
//! alice's sessions, messages, windows, segments, pages, profile or a memory's audit view, and
//! cannot delete her session — by naming her scope (refused) or by naming her session or
//! segment inside his own scope (answered exactly as an unknown one) — on REST and MCP; a
//! refused probe changes nothing.

use crate::mcp::{call_tool, open_session};
use crate::TestServer;
use serde_json::{json, Value};

/// Alice's session `s1` with enough exchanges for segments; returns a memory id and a segment
/// id of hers.
fn alice_log(s: &TestServer) -> (String, String) {
    let alice = s.user_key("alice");
    let mut first = None;
    for i in 0..14 {
        let r = s.call(
            "POST",
            "/v1/memories",
            Some(&alice),
            Some(json!({"messages": [{"role": "user", "content": format!("alice secret {i} is 4711")}],
                "user_id": "alice", "session_id": "s1", "infer": false})),
        );
        assert_eq!(r.status, 200, "{:?}", r.body);
        first.get_or_insert(r.body["results"][0]["id"].as_str().unwrap().to_string());
    }
    let r = s.call("GET", "/v1/segments", Some(&alice), None);
    let seg = r.body["segments"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("alice has a segment: {:?}", r.body))
        .to_string();
    (first.unwrap(), seg)
}

fn shape(status: u16, kind: &str) -> (u16, String) {
    (status, kind.to_string())
}

#[test]
fn a_key_never_reaches_another_users_log_on_rest() {
    let s = TestServer::start();
    let (memory, segment) = alice_log(&s);
    let bob = s.user_key("bob");
    let before = s.snapshot();
    let random = "01a22cec-5566-75a4-ba16-0f2c04e0d7d4";
    // Naming alice's scope is refused before any work.
    for (method, path, body) in [
        ("GET", "/v1/sessions?user_id=alice".to_string(), None),
        ("GET", "/v1/sessions/s1/messages?user_id=alice".into(), None),
        ("GET", "/v1/sessions/s1?user_id=alice".into(), None),
        ("DELETE", "/v1/sessions/s1?user_id=alice".into(), None),
        ("GET", "/v1/segments?user_id=alice".into(), None),
        (
            "GET",
            format!("/v1/segments/{segment}/pages?user_id=alice"),
            None,
        ),
        ("GET", "/v1/profile?user_id=alice".into(), None),
        (
            "POST",
            "/v1/profile/refresh".into(),
            Some(json!({"user_id": "alice"})),
        ),
        (
            "GET",
            format!("/v1/memories/{memory}?detail=true&user_id=alice"),
            None,
        ),
    ] {
        let r = s.call(method, &path, Some(&bob), body);
        assert_eq!(r.status, 403, "{method} {path}: {:?}", r.body);
        assert!(!r.body.to_string().contains("4711"), "{method} {path}");
    }
    // Inside bob's own scope, alice's session, segment and memory look unknown.
    for (method, known, unknown) in [
        (
            "GET",
            "/v1/sessions/s1/messages".to_string(),
            "/v1/sessions/zz/messages".to_string(),
        ),
        ("GET", "/v1/sessions/s1".into(), "/v1/sessions/zz".into()),
        ("DELETE", "/v1/sessions/s1".into(), "/v1/sessions/zz".into()),
        (
            "GET",
            format!("/v1/segments/{segment}/pages"),
            format!("/v1/segments/{random}/pages"),
        ),
        (
            "GET",
            format!("/v1/memories/{memory}?detail=true"),
            format!("/v1/memories/{random}?detail=true"),
        ),
    ] {
        let a = s.call(method, &known, Some(&bob), None);
        let b = s.call(method, &unknown, Some(&bob), None);
        assert!(a.status >= 400, "{method} {known}: {:?}", a.body);
        assert_eq!(
            shape(a.status, a.kind()),
            shape(b.status, b.kind()),
            "{method} {known} answers unlike an unknown one"
        );
        assert!(!a.body.to_string().contains("4711"), "{method} {known}");
    }
    // What bob's own listings show: nothing of alice's.
    for path in ["/v1/sessions", "/v1/segments", "/v1/profile"] {
        let r = s.call("GET", path, Some(&bob), None);
        assert_eq!(r.status, 200, "{path}: {:?}", r.body);
        let text = r.body.to_string();
        assert!(
            !text.contains("4711") && !text.contains("s1"),
            "{path}: {text}"
        );
    }
    assert_eq!(s.snapshot(), before, "a refused probe changed the store");
    // Alice herself sees it all.
    let alice = s.user_key("alice");
    let r = s.call("GET", "/v1/sessions/s1/messages", Some(&alice), None);
    assert!(r.body.to_string().contains("4711"));
}

#[test]
fn a_key_never_reaches_another_users_log_through_mcp_tools() {
    let s = TestServer::start();
    let (_, segment) = alice_log(&s);
    let bob = s.user_key("bob");
    let session = open_session(&s, &bob);
    let before = s.snapshot();
    let random = "01a22cec-5566-75a4-ba16-0f2c04e0d7d4";
    for (tool, args) in [
        ("list_sessions", json!({"user_id": "alice"})),
        (
            "get_session_messages",
            json!({"session_id": "s1", "user_id": "alice"}),
        ),
        (
            "get_session",
            json!({"session_id": "s1", "user_id": "alice"}),
        ),
        (
            "delete_session",
            json!({"session_id": "s1", "user_id": "alice"}),
        ),
        ("get_profile", json!({"user_id": "alice"})),
        ("refresh_profile", json!({"user_id": "alice"})),
        ("list_segments", json!({"user_id": "alice"})),
        (
            "get_segment_pages",
            json!({"segment_id": segment, "user_id": "alice"}),
        ),
    ] {
        let r = call_tool(&s, &bob, &session, tool, args);
        let (_, kind, _) = r.tool_error();
        assert_eq!(kind, "forbidden", "{tool}: {}", r.text);
        assert!(!r.text.contains("4711"), "{tool}");
    }
    let unknown_like = |tool: &str, known: Value, unknown: Value| {
        let a = call_tool(&s, &bob, &session, tool, known).tool_error();
        let b = call_tool(&s, &bob, &session, tool, unknown).tool_error();
        assert_eq!((a.0, &a.1), (b.0, &b.1), "{tool}");
    };
    unknown_like(
        "get_session_messages",
        json!({"session_id": "s1"}),
        json!({"session_id": "zz"}),
    );
    unknown_like(
        "get_session",
        json!({"session_id": "s1"}),
        json!({"session_id": "zz"}),
    );
    unknown_like(
        "delete_session",
        json!({"session_id": "s1"}),
        json!({"session_id": "zz"}),
    );
    unknown_like(
        "get_segment_pages",
        json!({"segment_id": segment}),
        json!({"segment_id": random}),
    );
    for tool in ["list_sessions", "list_segments", "get_profile"] {
        let r = call_tool(&s, &bob, &session, tool, json!({}));
        let v = r.tool_json();
        assert!(!v.to_string().contains("4711"), "{tool}: {v}");
    }
    assert_eq!(s.snapshot(), before, "a refused probe changed the store");
}
