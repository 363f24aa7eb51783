//! The Mem0-compatible routes over plain HTTP: the OSS server's flow, and the forms older SDKs
//! send (top-level ids, `/v1` lists by query, `/v2` searches, pages). The current SDK itself is
//! driven in `mnemo-cli`'s client tests.

use crate::TestServer;
use serde_json::json;

#[test]
fn the_oss_server_routes_work_end_to_end() {
    let s = TestServer::start();
    let k = s.user_key("alice");
    let k = Some(k.as_str());
    let r = s.call(
        "POST",
        "/memories",
        k,
        Some(json!({
            "messages": [{"role": "user", "content": "I keep bees on the roof"}],
            "user_id": "alice", "metadata": {"src": "chat"}, "infer": false,
            "expiration_date": "2099-01-01"
        })),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let id = r.body["results"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(r.body["results"][0]["event"], "ADD");
    let r = s.call("GET", "/memories?user_id=alice", k, None);
    assert_eq!(r.body["results"][0]["id"], id.as_str());
    assert_eq!(r.body["results"][0]["expires_at"], "2099-01-01T00:00:00Z");
    let r = s.call("GET", &format!("/memories/{id}"), k, None);
    assert_eq!(r.body["metadata"], json!({"src": "chat"}));
    let r = s.call(
        "PUT",
        &format!("/memories/{id}"),
        k,
        Some(json!({"text": "I keep bees in the garden"})),
    );
    assert_eq!(
        r.body["message"], "Memory updated successfully!",
        "{:?}",
        r.body
    );
    let r = s.call("GET", &format!("/memories/{id}/history"), k, None);
    let events: Vec<_> = r
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].clone())
        .collect();
    assert_eq!(events, vec![json!("ADD"), json!("UPDATE")]);
    let r = s.call(
        "POST",
        "/search",
        k,
        Some(json!({"query": "bees garden", "user_id": "alice", "top_k": 3})),
    );
    assert_eq!(r.body["results"][0]["memory"], "I keep bees in the garden");
    let r = s.call("GET", "/entities", k, None);
    assert_eq!(
        r.body,
        json!([{"id": "alice", "name": "alice", "type": "user", "total_memories": 1}])
    );
    let r = s.call("DELETE", &format!("/memories/{id}"), k, None);
    assert_eq!(r.status, 200);
    assert_eq!(
        s.call("GET", &format!("/memories/{id}"), k, None).status,
        404
    );
    s.call(
        "POST",
        "/memories",
        k,
        Some(json!({"messages": [{"role": "user", "content": "x"}], "user_id": "alice"})),
    );
    let r = s.call("DELETE", "/memories?user_id=alice", k, None);
    assert_eq!(r.body["deleted"], 1, "{:?}", r.body);
    // Reset is an admin operation here too.
    assert_eq!(s.call("POST", "/reset", k, None).status, 403);
    assert_eq!(
        s.call("POST", "/reset", Some(&s.admin.clone()), None)
            .status,
        200
    );
    s.stop();
}

#[test]
fn older_sdk_forms_and_pages() {
    let s = TestServer::start();
    let k = s.user_key("alice");
    let k = Some(k.as_str());
    // 1.x and 0.1.x add through /v1/memories/ with legacy fields and org/project ids.
    for i in 0..5 {
        let r = s.call("POST", "/v1/memories/", k, Some(json!({
            "messages": format!("fact number {i}"), "user_id": "alice",
            "output_format": "v1.1", "version": "v2", "org_id": "o", "project_id": "p", "infer": false
        })));
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let r = s.call(
        "GET",
        "/v1/memories/?user_id=alice&org_id=o&project_id=p",
        k,
        None,
    );
    assert_eq!(r.body["results"].as_array().unwrap().len(), 5);
    let r = s.call(
        "POST",
        "/v2/memories/search/",
        k,
        Some(json!({"query": "fact number 3", "filters": {"AND": [{"user_id": "alice"}]}})),
    );
    assert_eq!(
        r.body["results"][0]["memory"], "fact number 3",
        "{:?}",
        r.body
    );
    // Pages of two, counted from one; every memory exactly once.
    let mut seen = Vec::new();
    for page in 1..=3 {
        let r = s.call(
            "POST",
            &format!("/v3/memories/?page={page}&page_size=2"),
            k,
            Some(json!({"filters": {"user_id": "alice"}})),
        );
        assert_eq!(r.body["count"], 5, "{:?}", r.body);
        assert_eq!(
            r.body["next"].is_null(),
            page == 3,
            "page {page}: {:?}",
            r.body
        );
        for m in r.body["results"].as_array().unwrap() {
            seen.push(m["memory"].as_str().unwrap().to_string());
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5);
    // The first page of one stops early; its count comes from the scope's total.
    let r = s.call(
        "POST",
        "/v3/memories/?page=1&page_size=1",
        k,
        Some(json!({"filters": {"user_id": "alice"}})),
    );
    assert_eq!(
        (r.body["count"].clone(), r.body["next"].is_null()),
        (json!(5), false),
        "{:?}",
        r.body
    );
    // Metadata filters beside the scope ids.
    s.call(
        "POST",
        "/v3/memories/add/",
        k,
        Some(json!({"messages": "tagged", "user_id": "alice", "metadata": {"tag": "x"}})),
    );
    let r = s.call(
        "POST",
        "/v3/memories/",
        k,
        Some(json!({"filters": {"AND": [{"user_id": "alice"}, {"tag": "x"}]}})),
    );
    assert_eq!(r.body["count"], 1, "{:?}", r.body);
    // app_id scopes and "*" wildcards are refused, not silently widened.
    let r = s.call(
        "POST",
        "/v3/memories/search/",
        k,
        Some(json!({"query": "x", "filters": {"user_id": "*"}})),
    );
    assert_eq!(r.status, 400);
    let r = s.call(
        "POST",
        "/v3/memories/add/",
        k,
        Some(json!({"messages": "x", "app_id": "shop"})),
    );
    assert_eq!(r.status, 400);
    s.stop();
}
