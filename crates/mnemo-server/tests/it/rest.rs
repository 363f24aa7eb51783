//! The native API end to end, the OpenAPI document, health, metrics, auth and limits.

use crate::TestServer;
use mnemo_server::ServerConfig;
use serde_json::json;
use std::time::Duration;

#[test]
fn the_whole_native_api_round_trips() {
    let s = TestServer::start();
    let k = s.user_key("alice");
    let k = Some(k.as_str());
    // add (text and messages), with metadata that must round-trip exactly
    let r = s.call("POST", "/v1/memories", k, Some(json!({
        "text": "Alice moved to Lisbon in May", "metadata": {"code": "0012", "n": 3, "tags": ["a"]},
        "idempotency_key": "req-1"
    })));
    assert_eq!(r.status, 200, "{:?}", r.body);
    let id = r.body["results"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(r.body["results"][0]["event"], "ADD");
    // the same idempotency key replays and writes nothing
    let again = s.call("POST", "/v1/memories", k, Some(json!({
        "text": "Alice moved to Lisbon in May", "metadata": {"code": "0012", "n": 3, "tags": ["a"]},
        "idempotency_key": "req-1"
    })));
    assert_eq!(again.body["replayed"], true);
    assert_eq!(again.body["results"][0]["id"], id.as_str());
    let r = s.call("POST", "/v1/memories", k, Some(json!({
        "messages": [{"role": "system", "content": "be nice"}, {"role": "user", "content": "I play the cello"}],
        "agent_id": "tutor"
    })));
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.body["results"].as_array().unwrap().len(),
        1,
        "system messages are skipped"
    );
    // search: the key fills in user alice
    let r = s.call(
        "POST",
        "/v1/memories/search",
        k,
        Some(json!({"query": "Lisbon", "top_k": 5})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let hits = r.body["results"].as_array().unwrap();
    assert_eq!(hits[0]["id"], id.as_str());
    assert!(hits[0]["scores"].is_object() && hits[0]["score"].is_number());
    // get
    let r = s.call("GET", &format!("/v1/memories/{id}"), k, None);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body["metadata"],
        json!({"code": "0012", "n": 3, "tags": ["a"]})
    );
    assert_eq!(r.body["user_id"], "alice");
    // list with cursors: page size 1 walks both memories exactly once
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let q = match &cursor {
            Some(c) => format!("/v1/memories?limit=1&cursor={c}"),
            None => "/v1/memories?limit=1".to_string(),
        };
        let r = s.call("GET", &q, k, None);
        assert_eq!(r.status, 200, "{:?}", r.body);
        for m in r.body["results"].as_array().unwrap() {
            seen.push(m["id"].as_str().unwrap().to_string());
        }
        match r.body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 2);
    // update, then history shows both events
    let r = s.call(
        "PUT",
        &format!("/v1/memories/{id}"),
        k,
        Some(json!({"text": "Alice moved to Porto"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["memory"], "Alice moved to Porto");
    let r = s.call("GET", &format!("/v1/memories/{id}/history"), k, None);
    let events: Vec<_> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(events, ["ADD", "UPDATE"]);
    // batch add, update, delete
    let r = s.call(
        "POST",
        "/v1/memories/batch",
        k,
        Some(json!({"items": [{"text": "one"}, {"text": "two"}]})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let ids: Vec<String> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["results"][0]["id"].as_str().unwrap().to_string())
        .collect();
    let r = s.call(
        "PUT",
        "/v1/memories/batch",
        k,
        Some(json!({"items": [{"memory_id": ids[0], "text": "uno"}]})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["results"][0]["memory"], "uno");
    let r = s.call(
        "DELETE",
        "/v1/memories/batch",
        k,
        Some(json!({"memory_ids": ids})),
    );
    assert_eq!(r.body["deleted"], 2, "{:?}", r.body);
    // delete one, then it is gone
    let r = s.call("DELETE", &format!("/v1/memories/{id}"), k, None);
    assert_eq!(r.status, 200);
    assert_eq!(
        s.call("GET", &format!("/v1/memories/{id}"), k, None).status,
        404
    );
    // delete-all for the scope leaves nothing listed
    let r = s.call("DELETE", "/v1/memories?user_id=alice", k, None);
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["deleted"], 1);
    let r = s.call("GET", "/v1/memories", k, None);
    assert_eq!(r.body["results"].as_array().unwrap().len(), 0);
    s.stop();
}

#[test]
fn store_wide_operations_need_an_admin_key() {
    let s = TestServer::start();
    let k = s.user_key("alice");
    s.seed("alice", "Alice likes tea");
    for (m, p, b) in [
        ("POST", "/v1/reset", Some(json!({"confirm": "reset"}))),
        ("GET", "/v1/export", None),
        ("POST", "/v1/import", Some(json!({}))),
    ] {
        let r = s.call(m, p, Some(&k), b);
        assert_eq!(r.status, 403, "{m} {p}: {:?}", r.body);
        assert_eq!(r.kind(), "forbidden");
    }
    // export → reset → import restores everything
    let before = s.snapshot();
    let admin = s.admin.clone();
    // What is imported is the export itself, read counters included (the snapshot leaves them
    // out because reads change them).
    let export = s.call("GET", "/v1/export", Some(&admin), None).body;
    let export = export.as_str().unwrap().to_string();
    let r = s.call(
        "POST",
        "/v1/reset",
        Some(&admin),
        Some(json!({"confirm": "yes"})),
    );
    assert_eq!(r.status, 400, "reset needs the exact confirmation");
    let r = s.call(
        "POST",
        "/v1/reset",
        Some(&admin),
        Some(json!({"confirm": "reset"})),
    );
    assert_eq!(r.status, 200);
    assert_eq!(s.snapshot(), "");
    let r = s.raw(
        "POST",
        "/v1/import",
        Some(&admin),
        Some("application/x-ndjson"),
        Some(export.into_bytes()),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(s.snapshot(), before);
    let r = s.call(
        "POST",
        "/v1/memories/search",
        Some(&k),
        Some(json!({"query": "tea"})),
    );
    assert_eq!(r.body["results"][0]["memory"], "Alice likes tea");
    s.stop();
}

#[test]
fn openapi_describes_every_route_and_the_documents_match_real_records() {
    let s = TestServer::start();
    let doc = s.call("GET", "/openapi.json", None, None);
    assert_eq!(doc.status, 200);
    let paths = doc.body["paths"].as_object().unwrap();
    for (p, methods) in [
        ("/v1/memories", &["get", "post", "delete"][..]),
        ("/v1/memories/search", &["post"]),
        ("/v1/memories/batch", &["post", "put", "delete"]),
        ("/v1/memories/{id}", &["get", "put", "delete"]),
        ("/v1/memories/{id}/history", &["get"]),
        ("/v1/sessions", &["get"]),
        ("/v1/sessions/{id}", &["get", "delete"]),
        ("/v1/sessions/{id}/messages", &["get"]),
        ("/v1/sessions/{id}/erase", &["post"]),
        ("/v1/segments", &["get"]),
        ("/v1/segments/{id}/pages", &["get"]),
        ("/v1/profile", &["get"]),
        ("/v1/profile/refresh", &["post"]),
        ("/v1/reset", &["post"]),
        ("/v1/export", &["get"]),
        ("/v1/import", &["post"]),
    ] {
        for m in methods {
            assert!(
                paths[p][m].is_object(),
                "{m} {p} missing from the OpenAPI document"
            );
        }
    }
    // The documented memory fields are exactly the fields a real record has.
    let id = s.seed("alice", "a record to compare");
    let admin = s.admin.clone();
    let rec = s
        .call("GET", &format!("/v1/memories/{id}"), Some(&admin), None)
        .body;
    let schemas = &doc.body["components"]["schemas"];
    let mut documented: Vec<_> = schemas["MemoryDoc"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let mut real: Vec<_> = rec.as_object().unwrap().keys().cloned().collect();
    documented.sort();
    real.sort();
    assert_eq!(documented, real);
    let hist = s
        .call(
            "GET",
            &format!("/v1/memories/{id}/history"),
            Some(&admin),
            None,
        )
        .body;
    let mut documented: Vec<_> = schemas["HistoryDoc"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let mut real: Vec<_> = hist["results"][0]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    documented.sort();
    real.sort();
    assert_eq!(documented, real);
    // The documented request fields are the ones the route accepts.
    let add_fields = schemas["AddBody"]["properties"].as_object().unwrap();
    assert!(add_fields.contains_key("idempotency_key") && add_fields.contains_key("messages"));
    s.stop();
}

#[test]
fn health_readiness_and_metrics() {
    let s = TestServer::start();
    assert_eq!(s.call("GET", "/healthz", None, None).status, 200);
    assert_eq!(s.call("GET", "/readyz", None, None).status, 200);
    let k = s.user_key("alice");
    s.call(
        "POST",
        "/v1/memories",
        Some(&k),
        Some(json!({"text": "hello"})),
    );
    s.call(
        "POST",
        "/v1/memories/search",
        Some(&k),
        Some(json!({"query": "hello"})),
    );
    s.call(
        "POST",
        "/v1/memories/search",
        None,
        Some(json!({"query": "hello"})),
    );
    let m = s.call("GET", "/metrics", None, None);
    let text = m.body.as_str().unwrap();
    for needle in [
        r#"mnemo_http_requests_total{method="POST",route="/v1/memories/search",status="200"} 1"#,
        r#"mnemo_http_requests_total{method="POST",route="/v1/memories/search",status="401"} 1"#,
        r#"mnemo_http_request_duration_seconds_count{method="POST",route="/v1/memories",status="200"} 1"#,
        r#"mnemo_operation_duration_seconds_count{op="search",outcome="ok"} 1"#,
        r#"mnemo_model_call_duration_seconds_count{purpose="embed",failed="false"}"#,
        "mnemo_queue_delay_seconds_count",
    ] {
        assert!(text.contains(needle), "metrics lack {needle}:\n{text}");
    }
    // Request ids come back; a caller's own id is kept.
    let r = s.call("GET", "/healthz", None, None);
    assert!(r.header("x-request-id").is_some());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let resp = agent
        .get(&format!("{}/healthz", s.url))
        .header("x-request-id", "trace-42")
        .call()
        .unwrap();
    assert_eq!(resp.headers().get("x-request-id").unwrap(), "trace-42");
    s.stop();
}

/// The rate limit charges a request by its body: one large add spends what many small requests
/// would, so a key cannot take more of the server by packing more into each request.
#[test]
fn a_large_body_spends_the_keys_rate_and_other_keys_keep_theirs() {
    let s = TestServer::start_with(std::sync::Arc::new(mnemo_testkit::HashEmbedder), |c| {
        c.rate_limit_per_minute = Some(60);
        c.rate_limit_burst = Some(20);
    });
    let (big, small) = (s.user_key("mallory"), s.user_key("alice"));
    // 64 KiB of text costs 65 tokens: let in (the key holds 20), and the key is then in debt
    // (bounded by the burst)…
    let text = "y".repeat(65_536);
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&big),
        Some(json!({"text": text})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let mut let_in = 0;
    loop {
        let r = s.call("GET", "/v1/memories", Some(&big), None);
        if r.status != 200 {
            assert_eq!((r.status, r.kind()), (429, "rate_limited"), "{}", r.body);
            assert!(r.header("retry-after").is_some());
            break;
        }
        let_in += 1;
        assert!(
            let_in < 20,
            "a 64 KiB body cost no more than a small request"
        );
    }
    // …so no small one follows it, but one per second the add and these calls took (the bucket
    // refills meanwhile); priced like a small request it would have left room for 19.
    assert!(let_in <= 12, "{let_in} small requests after the large one");
    // The same number of small requests from another key all pass.
    for _ in 0..10 {
        let r = s.call("GET", "/v1/memories", Some(&small), None);
        assert_eq!(r.status, 200, "{}", r.body);
    }
    s.stop();
}

/// Searches `n` times with `key`; how many were let in before the first 429.
fn searches_let_in(s: &TestServer, key: &str, n: usize) -> usize {
    for i in 0..n {
        let r = s.call(
            "POST",
            "/v1/memories/search",
            Some(key),
            Some(json!({"query": "hiking"})),
        );
        if r.status != 200 {
            assert_eq!((r.status, r.kind()), (429, "rate_limited"), "{}", r.body);
            assert!(r.header("retry-after").is_some());
            return i;
        }
    }
    n
}

/// A key pays for the time its requests' work runs, answered or abandoned: small requests that
/// each run long spend the key's rate as a large body would, and other keys keep theirs.
#[test]
fn a_key_pays_for_the_time_its_work_runs_even_when_it_hangs_up() {
    let tweak = |work_ms: u32| {
        move |c: &mut ServerConfig| {
            c.rate_limit_per_minute = Some(60);
            c.rate_limit_burst = Some(20);
            c.rate_limit_work_ms = Some(work_ms);
        }
    };
    let slow = || std::sync::Arc::new(mnemo_testkit::SlowEmbedder::new(Duration::from_millis(150)));
    // Unpriced, a 150 ms search costs a token like any request: all eight are let in.
    let s = TestServer::start_with(slow(), tweak(0));
    let key = s.user_key("mallory");
    assert_eq!(searches_let_in(&s, &key, 8), 8);
    s.stop();

    // Priced at a token per 10 ms past the first 50, each costs about 11: the burst of 20 covers
    // two of them.
    let s = TestServer::start_with(slow(), tweak(10));
    let (slow_key, quiet) = (s.user_key("mallory"), s.user_key("alice"));
    let let_in = searches_let_in(&s, &slow_key, 8);
    assert!((1..=2).contains(&let_in), "{let_in} slow searches let in");
    // Another key's cheap requests are untouched.
    for _ in 0..10 {
        let r = s.call("GET", "/v1/memories", Some(&quiet), None);
        assert_eq!(r.status, 200, "{}", r.body);
    }
    // A client that hangs up before its search is answered still pays for the work it started:
    // a fresh key, one search abandoned after 20 ms, and the work's charge lands when it ends.
    let hangs_up = s.user_key("trudy");
    let body = json!({"query": "hiking"}).to_string();
    let mut c = std::net::TcpStream::connect(s.url.trim_start_matches("http://")).unwrap();
    std::io::Write::write_all(
        &mut c,
        format!(
            "POST /v1/memories/search HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {hangs_up}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    drop(c);
    std::thread::sleep(Duration::from_millis(600));
    // Of its 20 tokens the abandoned search took one and its work about 10: lists, which work
    // little, find the rest spent after a handful (unpriced work would leave 19).
    let mut lists = 0;
    while s.call("GET", "/v1/memories", Some(&hangs_up), None).status == 200 {
        lists += 1;
        assert!(lists < 12, "the abandoned search's work was not charged");
    }
    s.stop();
}

#[test]
fn keys_are_required_revocable_and_rate_limited() {
    let s = TestServer::start_with(std::sync::Arc::new(mnemo_testkit::HashEmbedder), |c| {
        c.rate_limit_per_minute = Some(60);
        c.rate_limit_burst = Some(3);
    });
    let r = s.call("GET", "/v1/memories?user_id=alice", None, None);
    assert_eq!((r.status, r.kind()), (401, "unauthenticated"));
    let r = s.call(
        "GET",
        "/v1/memories?user_id=alice",
        Some("mnemo_not_a_key"),
        None,
    );
    assert_eq!((r.status, r.kind()), (401, "unauthenticated"));
    // Mem0 clients send `Token KEY`; other clients `X-API-Key`.
    let created = s
        .keys
        .create(
            None,
            false,
            &mnemo_server::ScopeParts::new(Some("alice".into()), None, None),
        )
        .unwrap();
    let r = s.raw("GET", "/v1/ping/", None, None, None);
    assert_eq!(r.status, 401);
    let url = format!("{}/v1/memories?user_id=alice", s.url);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let st = agent
        .get(&url)
        .header("X-API-Key", &created.key)
        .call()
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(st, 200);
    let st = agent
        .get(&url)
        .header("Authorization", &format!("Token {}", created.key))
        .call()
        .unwrap()
        .status()
        .as_u16();
    assert_eq!(st, 200);
    // The burst of 3 is spent (two calls above, one here); the next is refused with Retry-After.
    let r = s.call("GET", "/v1/memories", Some(&created.key), None);
    assert_eq!(r.status, 200);
    let r = s.call("GET", "/v1/memories", Some(&created.key), None);
    assert_eq!((r.status, r.kind()), (429, "rate_limited"));
    assert!(r.header("retry-after").is_some());
    // Another key has its own bucket.
    let other = s.user_key("bob");
    assert_eq!(
        s.call("GET", "/v1/memories", Some(&other), None).status,
        200
    );
    // Revoked keys stop working at once.
    s.keys.revoke(&created.info.id).unwrap();
    let r = s.call("GET", "/v1/memories", Some(&created.key), None);
    assert_eq!((r.status, r.kind()), (401, "unauthenticated"));
    s.stop();
}

#[test]
fn cors_is_off_unless_origins_are_configured() {
    let s = TestServer::start();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let resp = agent
        .get(&format!("{}/healthz", s.url))
        .header("Origin", "https://app.example.com")
        .call()
        .unwrap();
    assert!(resp.headers().get("access-control-allow-origin").is_none());
    s.stop();
    let s = TestServer::start_with(std::sync::Arc::new(mnemo_testkit::HashEmbedder), |c| {
        c.cors_origins = vec!["https://app.example.com".into()];
    });
    let resp = agent
        .get(&format!("{}/healthz", s.url))
        .header("Origin", "https://app.example.com")
        .call()
        .unwrap();
    assert_eq!(
        resp.headers().get("access-control-allow-origin").unwrap(),
        "https://app.example.com"
    );
    let resp = agent
        .get(&format!("{}/healthz", s.url))
        .header("Origin", "https://evil.example.com")
        .call()
        .unwrap();
    assert!(resp.headers().get("access-control-allow-origin").is_none());
    s.stop();
}

#[test]
fn no_auth_serves_loopback_without_keys() {
    let s = TestServer::start_with(std::sync::Arc::new(mnemo_testkit::HashEmbedder), |c| {
        c.no_auth = true
    });
    let r = s.call(
        "POST",
        "/v1/memories",
        None,
        Some(json!({"text": "open house", "user_id": "u"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    // Still fails closed on scope: no scope is an error, not "everything".
    let r = s.call("GET", "/v1/memories", None, None);
    assert_eq!((r.status, r.kind()), (400, "invalid_input"));
    s.stop();
}

#[test]
fn a_batch_with_one_unknown_id_changes_nothing() {
    let s = TestServer::start();
    let k = s.user_key("alice");
    let mine = s.seed("alice", "Alice grows figs");
    let theirs = s.seed("bob", "Bob grows plums");
    let before = s.snapshot();
    let r = s.call(
        "DELETE",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"memory_ids": [mine, theirs]})),
    );
    assert_eq!((r.status, r.kind()), (404, "not_found"), "{:?}", r.body);
    let r = s.call(
        "PUT",
        "/v1/memories/batch",
        Some(&k),
        Some(json!({"items": [
            {"memory_id": mine, "text": "Alice grows lemons"}, {"memory_id": theirs, "text": "x"}
        ]})),
    );
    assert_eq!((r.status, r.kind()), (404, "not_found"), "{:?}", r.body);
    assert_eq!(s.snapshot(), before);
    s.stop();
}

/// A `--no-auth` server has one user and, by default, does not throttle it: three
/// 65,000-character adds in a row (and more) all succeed, as they do through the CLI.
#[test]
fn a_single_user_server_does_not_throttle_its_user() {
    let s = TestServer::start_with(std::sync::Arc::new(mnemo_testkit::HashEmbedder), |c| {
        c.no_auth = true;
        // The defaults, as `mnemo serve --no-auth` starts with them.
        c.rate_limit_work_ms = None;
    });
    let text = "z".repeat(65_000);
    for i in 0..5 {
        let r = s.call(
            "POST",
            "/v1/memories",
            None,
            Some(json!({"text": format!("{i} {text}"), "user_id": "me"})),
        );
        assert_eq!(r.status, 200, "add {i}: {}", r.body);
    }
    s.stop();
}

/// A keyed server keeps the work-priced defaults: one key sending the same large adds runs
/// into 429 (five of them cost about 325 tokens against a burst of 100 and 20 a second).
#[test]
fn a_keyed_server_keeps_its_default_limits() {
    let s = TestServer::start_with(std::sync::Arc::new(mnemo_testkit::HashEmbedder), |c| {
        c.rate_limit_work_ms = None;
    });
    let key = s.user_key("me");
    let text = "z".repeat(65_000);
    let statuses: Vec<u16> = (0..5)
        .map(|i| {
            s.call(
                "POST",
                "/v1/memories",
                Some(&key),
                Some(json!({"text": format!("{i} {text}"), "user_id": "me"})),
            )
            .status
        })
        .collect();
    assert_eq!(statuses[0], 200, "{statuses:?}");
    assert!(statuses.contains(&429), "{statuses:?}");
}
