//! Batch routes commit all items or none.

use crate::TestServer;
use serde_json::json;

/// Before: a batch update applied its items one transaction at a time, so an item refused
/// midway (here an empty text) left the items before it changed. Now nothing changes.
#[test]
fn a_batch_update_with_a_bad_item_changes_nothing() {
    let s = TestServer::start();
    let k = s.user_key("tess");
    let a = s.seed("tess", "Tess drinks tea");
    let b = s.seed("tess", "Tess lives in Oslo");
    let before = s.snapshot();
    let r = s.call(
        "PUT",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"items": [
            {"memory_id": a, "text": "Tess drinks coffee"},
            {"memory_id": b, "text": "   "}
        ]})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert_eq!(s.snapshot(), before, "the first item was not applied");
    // A repeated id is refused rather than silently letting the last one win.
    let r = s.call(
        "PUT",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"items": [
            {"memory_id": a, "text": "one"}, {"memory_id": a, "text": "two"}
        ]})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    let r = s.call(
        "PUT",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"items": [
            {"memory_id": a, "text": "Tess drinks coffee"},
            {"memory_id": b, "text": "Tess lives in Bergen"}
        ]})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = s.call(
        "DELETE",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"memory_ids": [a, b, a]})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = s.call("GET", "/v1/memories?user_id=tess", Some(&k), None);
    assert!(
        r.body["results"].as_array().unwrap().is_empty(),
        "{:?}",
        r.body
    );
}

/// `as_of` on the native search and list routes and on the MCP tools: what was valid then.
#[test]
fn as_of_reads_on_rest_and_mcp() {
    let s = TestServer::start();
    let k = s.user_key("ravi");
    for (text, ts) in [
        ("ravi plays chess", "2023-01-10T00:00:00Z"),
        ("ravi plays go", "2024-01-10T00:00:00Z"),
    ] {
        let r = s.call(
            "POST",
            "/v1/memories",
            Some(&k),
            Some(json!({"text": text, "timestamp": ts})),
        );
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let texts = |v: &serde_json::Value| -> Vec<String> {
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                h.get("memory")
                    .and_then(|m| m.get("memory").or(Some(m)))
                    .and_then(|m| m.as_str())
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    let r = s.call(
        "POST",
        "/v1/memories/search",
        Some(&k),
        Some(json!({"query": "what does ravi play", "as_of": "2023-06-01T00:00:00Z"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(texts(&r.body), ["ravi plays chess"], "{:?}", r.body);
    let r = s.call(
        "GET",
        "/v1/memories?as_of=2023-06-01T00:00:00Z",
        Some(&k),
        None,
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.body["results"].as_array().unwrap().len(),
        1,
        "{:?}",
        r.body
    );
    let session = crate::mcp::open_session(&s, &k);
    let r = crate::mcp::call_tool(
        &s,
        &k,
        &session,
        "search_memories",
        json!({"query": "what does ravi play", "as_of": "2023-06-01T00:00:00Z"}),
    );
    assert!(
        r.text.contains("ravi plays chess") && !r.text.contains("ravi plays go"),
        "{}",
        r.text
    );
    let r = crate::mcp::call_tool(
        &s,
        &k,
        &session,
        "list_memories",
        json!({"as_of": "nonsense"}),
    );
    assert!(r.text.contains("as_of"), "{}", r.text);
}

/// A batch of adds is bounded by the per-add message cap as a whole: two adds of 600 messages
/// each were 1,200 messages of work in one request.
#[test]
fn a_batch_of_adds_holds_at_most_one_adds_worth_of_messages() {
    let s = TestServer::start();
    let k = s.user_key("una");
    let msgs: Vec<serde_json::Value> = (0..600)
        .map(|i| json!({"role": "user", "content": format!("line {i}")}))
        .collect();
    let before = s.snapshot();
    let r = s.call(
        "POST",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"items": [{"messages": msgs}, {"messages": msgs}]})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("1000"), "{:?}", r.body);
    assert_eq!(s.snapshot(), before);
}

#[test]
fn the_messages_per_add_cap_is_a_server_setting() {
    let s = TestServer::start_with(std::sync::Arc::new(mnemo_testkit::HashEmbedder), |c| {
        c.max_messages_per_add = 3
    });
    let k = s.user_key("vera");
    let msgs = |n: usize| -> Vec<serde_json::Value> {
        (0..n)
            .map(|i| json!({"role": "user", "content": format!("turn {i}")}))
            .collect()
    };
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&k),
        Some(json!({"messages": msgs(4)})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("max_messages_per_add"));
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&k),
        Some(json!({"messages": msgs(3)})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
}
