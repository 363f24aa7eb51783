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
        json!([{"id": "alice", "name": "alice", "type": "user", "total_memories": 1, "relations": []}])
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

/// How many `list` operations the service has run, from `/metrics`.
fn list_ops(s: &TestServer) -> u64 {
    let r = s.call("GET", "/metrics", None, None);
    let text = r.body.as_str().unwrap_or_default().to_string();
    text.lines()
        .filter(|l| l.contains("operation_duration_seconds_count") && l.contains("op=\"list\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// The probe's `POST /v3/memories/?page=100000000&page_size=1` walked every page of the caller's
/// memories (0.85 s for 8.5k; one `list` operation per page), and any filter made page 1 walk
/// them all to count. Now a page of any depth is one count and one positioned read: one `list`
/// operation, whatever the page number or filter.
#[test]
fn a_deep_mem0_page_is_one_positioned_read_not_a_walk() {
    let s = TestServer::start();
    let k = Some(s.admin.as_str());
    for i in 0..30 {
        let r = s.call(
            "POST",
            "/v1/memories",
            k,
            Some(json!({"text": format!("item {i}"), "user_id": "paula",
                "metadata": {"odd": i % 2 == 1}})),
        );
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let before = list_ops(&s);
    let r = s.call(
        "POST",
        "/v3/memories/?page=100000000&page_size=1",
        k,
        Some(json!({"filters": {"AND": [{"user_id": "paula"}, {"odd": true}]}})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["count"], 15, "{:?}", r.body);
    assert!(r.body["results"].as_array().unwrap().is_empty());
    assert!(r.body["next"].is_null());
    assert_eq!(list_ops(&s) - before, 1, "one list operation");
    // A middle page under a filter holds exactly the right records.
    let before = list_ops(&s);
    let r = s.call(
        "POST",
        "/v3/memories/?page=3&page_size=4",
        k,
        Some(json!({"filters": {"AND": [{"user_id": "paula"}, {"odd": true}]}})),
    );
    let got: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory"].as_str().unwrap())
        .collect();
    assert_eq!(got, ["item 17", "item 19", "item 21", "item 23"]);
    assert_eq!(r.body["count"], 15);
    assert!(!r.body["next"].is_null() && !r.body["previous"].is_null());
    assert_eq!(list_ops(&s) - before, 1, "one list operation");
}

/// Options Mem0 clients send that change results: each is honoured or refused with a 400 that
/// names it. Before, all of these were accepted and dropped.
#[test]
fn mem0_options_that_change_results_are_honoured_or_refused() {
    let s = TestServer::start();
    let k = s.user_key("olga");
    let k = Some(k.as_str());
    for (text, ts, tag) in [
        ("olga visited Lima", 1_704_844_800, "trip"), // 2024-01-10
        ("olga visited Rome", 1_707_523_200, "trip"), // 2024-02-10
        ("olga bought skis", 1_710_028_800, "shop"),  // 2024-03-10
    ] {
        let r = s.call(
            "POST",
            "/v1/memories/",
            k,
            Some(
                json!({"messages": [{"role": "user", "content": text}], "user_id": "olga",
                "infer": false, "timestamp": ts, "metadata": {"tag": tag}}),
            ),
        );
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    // Older SDKs' `metadata` on search is a filter.
    let r = s.call(
        "POST",
        "/v1/memories/search/",
        k,
        Some(json!({"query": "olga", "user_id": "olga", "metadata": {"tag": "shop"}})),
    );
    let hits: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory"].as_str().unwrap())
        .collect();
    assert_eq!(hits, ["olga bought skis"], "{:?}", r.body);
    // start_date / end_date bound creation time; a bare end date includes its day.
    let r = s.call(
        "POST",
        "/v3/memories/",
        k,
        Some(
            json!({"filters": {"user_id": "olga"}, "start_date": "2024-02-01",
            "end_date": "2024-03-10"}),
        ),
    );
    let listed: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed,
        ["olga visited Rome", "olga bought skis"],
        "{:?}",
        r.body
    );
    assert_eq!(r.body["count"], 2);
    // Refused, each naming its option.
    let refusals = [
        (
            "POST",
            "/v1/memories/",
            Some(json!({"messages": "x", "user_id": "olga", "immutable": true})),
            "immutable",
        ),
        (
            "POST",
            "/v1/memories/",
            Some(json!({"messages": "x", "user_id": "olga", "infer": false,
                "includes": "sports"})),
            "includes",
        ),
        (
            "POST",
            "/v1/memories/",
            Some(json!({"messages": "x", "user_id": "olga", "timestamp": -99_999_999_999i64})),
            "timestamp",
        ),
        (
            "POST",
            "/v1/memories/search/",
            Some(json!({"query": "x", "user_id": "olga", "categories": ["travel"]})),
            "categories",
        ),
        (
            "DELETE",
            "/v1/memories/?user_id=olga&app_id=app1",
            None,
            "app_id",
        ),
        (
            "DELETE",
            "/v1/memories?user_id=olga&include_expired=true",
            None,
            "include_expired",
        ),
    ];
    let before = s.snapshot();
    for (method, path, body, option) in refusals {
        let r = s.call(method, path, k, body);
        assert_eq!(r.status, 400, "{path} {option}: {:?}", r.body);
        assert!(
            r.body.to_string().contains(option),
            "{option}: {:?}",
            r.body
        );
    }
    assert_eq!(s.snapshot(), before, "a refused option changes nothing");
}

/// On the Mem0 routes a `run_id` is also the session: the run's turns are in the session log,
/// a context pack of that session shows them, and a session erase removes them with their
/// memories (Mem0 SDK users get sessions without knowing mnemo's name for them).
#[test]
fn a_mem0_run_is_a_session_with_a_log_a_pack_and_an_erase() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    for text in ["I booked a flight to Tromso Qv7731", "I fly on Friday"] {
        let r = s.call(
            "POST",
            "/v1/memories/",
            Some(&alice),
            Some(json!({"messages": [{"role": "user", "content": text}],
                        "user_id": "alice", "run_id": "trip", "infer": false})),
        );
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let r = s.call(
        "GET",
        "/v1/sessions?user_id=alice&run_id=trip",
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["sessions"][0]["session_id"], "trip", "{}", r.body);
    assert_eq!(r.body["sessions"][0]["messages"], 2, "{}", r.body);
    let r = s.call(
        "GET",
        "/v1/sessions/trip/messages?user_id=alice&run_id=trip",
        Some(&alice),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["messages"].as_array().unwrap().len(),
        2,
        "{}",
        r.body
    );

    let r = s.call(
        "POST",
        "/v1/context",
        Some(&alice),
        Some(
            json!({"query": "when do I fly?", "budget_tokens": 500, "user_id": "alice",
                    "run_id": "trip", "session_id": "trip"}),
        ),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let short = r.body["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|sec| sec["section"] == "short_term")
        .unwrap_or_else(|| panic!("a short_term section: {}", r.body));
    assert!(short.to_string().contains("Friday"), "{short}");

    let r = s.call(
        "POST",
        "/v1/sessions/trip/erase",
        Some(&alice),
        Some(json!({"user_id": "alice", "run_id": "trip"})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["messages_erased"], 2, "{}", r.body);
    assert_eq!(r.body["memories_erased"], 2, "{}", r.body);
    assert!(!s.snapshot().contains("Qv7731"), "the run's text is gone");
}
