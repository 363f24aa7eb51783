//! Event time over HTTP: `timestamp` anchors adds on the native, Mem0 and MCP surfaces (bad
//! ones are 400s naming the field, nothing written), `reference_date` resolves a search's time
//! on each (Mem0's no longer ignored), and `GET /v1/timeline` / MCP `timeline` keep to the
//! key's scope.

use crate::mcp::{call_tool, open_session};
use crate::TestServer;
use serde_json::json;

fn add(s: &TestServer, key: &str, text: &str, ts: &str) -> u16 {
    s.call(
        "POST",
        "/v1/memories",
        Some(key),
        Some(json!({"text": text, "timestamp": ts, "infer": false})),
    )
    .status
}

#[test]
fn timestamps_anchor_adds_and_bad_ones_write_nothing() {
    let s = TestServer::start();
    let k = s.user_key("tara");
    assert_eq!(
        add(
            &s,
            &k,
            "Tara moved to Lisbon last May",
            "2023-06-02T10:00:00Z"
        ),
        200
    );
    let got = s
        .call("GET", "/v1/memories?user_id=tara", Some(&k), None)
        .body;
    let e = &got["results"][0]["event_time"];
    assert_eq!(e["start"], "2023-05-01T00:00:00Z", "{got}");
    assert_eq!(e["granularity"], "month");
    let before = s.snapshot();
    for (body, field) in [
        (
            json!({"text": "x", "timestamp": "1850-01-01T00:00:00Z"}),
            "timestamp",
        ),
        (
            json!({"text": "x", "timestamp": "2999-01-01T00:00:00Z"}),
            "timestamp",
        ),
        (json!({"text": "x", "timestamp": "yesterday"}), "timestamp"),
    ] {
        let r = s.call("POST", "/v1/memories", Some(&k), Some(body.clone()));
        assert_eq!(r.status, 400, "{body}: {:?}", r.body);
        assert!(r.body.to_string().contains(field), "{body}: {:?}", r.body);
    }
    // Mem0's `timestamp` (Unix seconds) is the message time too.
    let r = s.call(
        "POST",
        "/v1/memories/",
        Some(&k),
        Some(
            json!({"messages": "We adopted a dog yesterday", "user_id": "tara",
                    "infer": false, "timestamp": -2_208_988_800i64 - 86_400}),
        ),
    );
    assert_eq!(r.status, 400, "1899 is refused: {:?}", r.body);
    assert_eq!(s.snapshot(), before, "nothing was written");
    let session = open_session(&s, &k);
    let r = call_tool(
        &s,
        &k,
        &session,
        "add_memory",
        json!({"text": "Tara ran a marathon yesterday", "infer": false,
               "timestamp": "2023-04-17T08:00:00Z"}),
    );
    let id = r.tool_json()["results"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let got = s
        .call("GET", &format!("/v1/memories/{id}"), Some(&k), None)
        .body;
    assert_eq!(got["event_time"]["start"], "2023-04-16T00:00:00Z", "{got}");
    s.stop();
}

#[test]
fn reference_date_resolves_the_querys_time_on_every_surface() {
    let s = TestServer::start();
    let k = s.user_key("ugo");
    assert_eq!(
        add(&s, &k, "Ugo went sailing last week", "2023-05-08T10:00:00Z"),
        200
    );
    assert_eq!(
        add(&s, &k, "Ugo likes sailing boats", "2023-07-01T10:00:00Z"),
        200
    );
    let q = "where did Ugo go in May 2023?";
    let r = s.call(
        "POST",
        "/v1/memories/search",
        Some(&k),
        Some(json!({"query": q, "user_id": "ugo", "reference_date": "2023-07-02T00:00:00Z"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.body["temporal"]["start"], "2023-05-01T00:00:00Z",
        "{:?}",
        r.body
    );
    assert_eq!(r.body["results"][0]["memory"], "Ugo went sailing last week");
    // Mem0's route: a date-only reference_date, "last month" read against it.
    let r = s.call(
        "POST",
        "/v2/memories/search/",
        Some(&k),
        Some(
            json!({"query": "sailing last month", "filters": {"user_id": "ugo"},
                    "reference_date": "2023-06-15"}),
        ),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.body["temporal"]["start"], "2023-05-01T00:00:00Z",
        "{:?}",
        r.body
    );
    let r = s.call(
        "POST",
        "/v2/memories/search/",
        Some(&k),
        Some(json!({"query": "x", "filters": {"user_id": "ugo"}, "reference_date": "soon"})),
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(
        r.body.to_string().contains("reference_date"),
        "{:?}",
        r.body
    );
    let session = open_session(&s, &k);
    let out = call_tool(
        &s,
        &k,
        &session,
        "search_memories",
        json!({"query": q, "user_id": "ugo", "reference_date": "2023-07-02T00:00:00Z"}),
    )
    .tool_json();
    assert_eq!(out["temporal"]["start"], "2023-05-01T00:00:00Z", "{out}");
    s.stop();
}

#[test]
fn the_timeline_is_ordered_by_event_time_and_kept_to_the_keys_scope() {
    let s = TestServer::start();
    let vic = s.user_key("vic");
    let wes = s.user_key("wes");
    assert_eq!(
        add(
            &s,
            &vic,
            "Vic started a new job yesterday",
            "2023-05-08T10:00:00Z"
        ),
        200
    );
    assert_eq!(
        add(&s, &vic, "Vic graduated in 2019", "2023-05-08T10:00:00Z"),
        200
    );
    assert_eq!(
        add(
            &s,
            &wes,
            "Wes sold his car last week",
            "2023-05-08T10:00:00Z"
        ),
        200
    );
    let r = s.call("GET", "/v1/timeline?user_id=vic", Some(&vic), None);
    assert_eq!(r.status, 200, "{:?}", r.body);
    let texts: Vec<&str> = r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["memory"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["Vic graduated in 2019", "Vic started a new job yesterday"]
    );
    assert_eq!(r.body["results"][0]["source_text"], "Vic graduated in 2019");
    let r = s.call(
        "GET",
        "/v1/timeline?user_id=vic&from=2023-01-01T00:00:00Z&to=2024-01-01T00:00:00Z",
        Some(&vic),
        None,
    );
    assert_eq!(
        r.body["results"].as_array().unwrap().len(),
        1,
        "{:?}",
        r.body
    );
    let r = s.call(
        "GET",
        "/v1/timeline?user_id=vic&from=2024-01-01T00:00:00Z&to=2023-01-01T00:00:00Z",
        Some(&vic),
        None,
    );
    assert_eq!(r.status, 400, "{:?}", r.body);
    assert!(r.body.to_string().contains("from"), "{:?}", r.body);
    // Another user's timeline is refused to vic's key, on REST and MCP.
    let r = s.call("GET", "/v1/timeline?user_id=wes", Some(&vic), None);
    assert_eq!(r.status, 403, "{:?}", r.body);
    let session = open_session(&s, &vic);
    let r = call_tool(&s, &vic, &session, "timeline", json!({"user_id": "wes"}));
    let (_, kind, _) = r.tool_error();
    assert_eq!(kind, "forbidden", "{:?}", r.message());
    let own = call_tool(&s, &vic, &session, "timeline", json!({"user_id": "vic"})).tool_json();
    assert_eq!(own["results"].as_array().unwrap().len(), 2, "{own}");
    s.stop();
}
