//! Bad input: malformed JSON, wrong types, unknown fields, oversized bodies, wrong media types,
//! bad ids and unknown routes all get a 4xx that says what was wrong, and change nothing.

use crate::TestServer;
use serde_json::json;

/// Method, path, content type, body, expected status, error kind, a word the message must say.
type Case<'a> = (
    &'a str,
    String,
    Option<&'a str>,
    Vec<u8>,
    u16,
    &'a str,
    &'a str,
);

#[test]
fn bad_bodies_are_refused_with_a_clear_message_and_change_nothing() {
    let s = TestServer::start_with(std::sync::Arc::new(mnemo_testkit::HashEmbedder), |c| {
        c.max_body_bytes = 4096;
    });
    let k = s.user_key("alice");
    let id = s.seed("alice", "Alice keeps bees");
    let before = s.snapshot();
    let cases: Vec<Case> = vec![
        (
            "POST",
            "/v1/memories".into(),
            Some("application/json"),
            b"{\"text\": \"unclosed".to_vec(),
            400,
            "invalid_input",
            "not valid JSON",
        ),
        (
            "POST",
            "/v1/memories".into(),
            Some("application/json"),
            br#"{"text": 42}"#.to_vec(),
            400,
            "invalid_input",
            "text",
        ),
        (
            "POST",
            "/v1/memories".into(),
            Some("application/json"),
            br#"{"text": "x", "colour": "red"}"#.to_vec(),
            400,
            "invalid_input",
            "unknown field `colour`",
        ),
        (
            "POST",
            "/v1/memories".into(),
            Some("application/json"),
            br#"{"text": "x", "metadata": [1]}"#.to_vec(),
            400,
            "invalid_input",
            "metadata",
        ),
        (
            "POST",
            "/v1/memories".into(),
            Some("application/json"),
            br#"{"text": "x", "agent_id": "a b"}"#.to_vec(),
            400,
            "invalid_input",
            "agent_id",
        ),
        (
            "POST",
            "/v1/memories".into(),
            Some("application/json"),
            br#"{}"#.to_vec(),
            400,
            "invalid_input",
            "messages",
        ),
        (
            "POST",
            "/v1/memories".into(),
            Some("text/plain"),
            br#"{"text": "x"}"#.to_vec(),
            415,
            "unsupported_media_type",
            "application/json",
        ),
        (
            "POST",
            "/v1/memories/search".into(),
            Some("application/json"),
            br#"{"query": "x", "top_k": "ten"}"#.to_vec(),
            400,
            "invalid_input",
            "top_k",
        ),
        (
            "POST",
            "/v1/memories/search".into(),
            Some("application/json"),
            br#"{"query": "x", "filters": {"n": {"around": 3}}}"#.to_vec(),
            400,
            "invalid_input",
            "around",
        ),
        (
            "PUT",
            format!("/v1/memories/{id}"),
            Some("application/json"),
            br#"{"text": ""}"#.to_vec(),
            400,
            "invalid_input",
            "text",
        ),
        (
            "PUT",
            format!("/v1/memories/{id}"),
            Some("application/json"),
            br#"{"txt": "new"}"#.to_vec(),
            400,
            "invalid_input",
            "unknown field `txt`",
        ),
        (
            "GET",
            "/v1/memories/not-a-uuid".into(),
            None,
            Vec::new(),
            400,
            "invalid_input",
            "UUID",
        ),
        (
            "GET",
            "/v1/memories?limit=abc".into(),
            None,
            Vec::new(),
            400,
            "invalid_input",
            "limit",
        ),
        (
            "GET",
            "/v1/memories?limit=5000".into(),
            None,
            Vec::new(),
            400,
            "invalid_input",
            "limit",
        ),
        (
            "GET",
            "/v1/memories?sort=asc".into(),
            None,
            Vec::new(),
            400,
            "invalid_input",
            "sort",
        ),
        (
            "PATCH",
            "/v1/memories".into(),
            None,
            Vec::new(),
            405,
            "method_not_allowed",
            "method",
        ),
        (
            "GET",
            "/v1/nothing-here".into(),
            None,
            Vec::new(),
            404,
            "route_not_found",
            "openapi",
        ),
        // Mem0-compatible routes are as strict about what they do not know.
        (
            "POST",
            "/v3/memories/add/".into(),
            Some("application/json"),
            br#"{"messages": "hi", "colour": 1}"#.to_vec(),
            400,
            "invalid_input",
            "unknown field `colour`",
        ),
        (
            "POST",
            "/v3/memories/search/".into(),
            Some("application/json"),
            br#"{"query": 5}"#.to_vec(),
            400,
            "invalid_input",
            "query",
        ),
    ];
    for (method, path, ct, body, status, kind, says) in cases {
        let body = (!body.is_empty()).then_some(body);
        let r = s.raw(method, &path, Some(&k), ct, body);
        assert_eq!(r.status, status, "{method} {path}: {:?}", r.body);
        assert_eq!(r.kind(), kind, "{method} {path}: {:?}", r.body);
        let msg = r.body["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains(says),
            "{method} {path}: message {msg:?} should mention {says:?}"
        );
        assert_eq!(r.body["detail"], msg, "Mem0 clients read `detail`");
    }
    // Oversized bodies, one just over the limit and one far larger than any socket buffer: the
    // declared length alone gets the 413, and the client that waits for `100 Continue` never
    // sends a byte of the body, so nothing races the answer.
    for size in [10_000, 8 << 20] {
        let body = format!(r#"{{"text": "{}"}}"#, "x".repeat(size));
        let (status, v) = post_expecting_continue(&s, &k, body.as_bytes());
        assert_eq!(status, 413, "{size} bytes: {v}");
        assert_eq!(v["error"]["kind"], "payload_too_large", "{v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains("size limit"), "{msg}");
        assert_eq!(v["detail"], msg, "Mem0 clients read `detail`");
    }
    assert_eq!(s.snapshot(), before, "a refused request changed the store");
    s.stop();
}

/// POSTs an add with `Expect: 100-continue`: the client sends the body only once the server
/// asks for it. A server that refuses a body from its declared length answers and closes at
/// once; a client still uploading then sees a broken pipe or a reset instead of the answer
/// (when the server closes with unread data, its kernel resets the connection).
fn post_expecting_continue(s: &TestServer, key: &str, body: &[u8]) -> (u16, serde_json::Value) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let mut resp = agent
        .post(&format!("{}/v1/memories", s.url))
        .header("Authorization", &format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .header("Expect", "100-continue")
        .send(body)
        .expect("the server answers");
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap();
    (status, serde_json::from_str(&text).unwrap())
}

#[test]
fn internal_errors_do_not_leak_details() {
    let s = TestServer::start();
    let k = s.user_key("alice");
    // A memory id that is well-formed but unknown is a plain not_found, with no SQL or paths.
    let r = s.call(
        "GET",
        "/v1/memories/01a22cec-5566-75a4-ba16-0f2c04e0d7d4",
        Some(&k),
        None,
    );
    assert_eq!((r.status, r.kind()), (404, "not_found"));
    let text = r.body.to_string();
    for leak in ["SELECT", "sqlite", "/tmp", ".rs:"] {
        assert!(!text.contains(leak), "{text}");
    }
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&k),
        Some(json!({"text": "ok"})),
    );
    assert_eq!(r.status, 200);
    s.stop();
}

/// U+0000 is refused with `invalid_input` naming the field on every store and surface; the
/// probe's eleven 500s on PostgreSQL (SQLite stored the NUL). Nothing is written.
fn nul_is_refused_naming_the_field(s: TestServer) {
    let key = s.user_key("alice");
    let id = s.seed("alice", "alice likes tea");
    let nul = "a\u{0}b";
    let before = s.snapshot();
    let msg = |extra: serde_json::Value| {
        let mut body =
            json!({"messages": [{"role": "user", "content": "hello there"}], "infer": false});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let probes: Vec<(&str, String, serde_json::Value, &str)> = vec![
        ("POST", "/v1/memories".into(), json!({"text": nul}), "text"),
        (
            "POST",
            "/v1/memories".into(),
            msg(json!({"messages": [{"role": "user", "content": nul}]})),
            "messages[0].content",
        ),
        (
            "POST",
            "/v1/memories".into(),
            msg(json!({"messages": [{"role": "user", "content": "hi", "name": nul}]})),
            "messages[0].name",
        ),
        (
            "POST",
            "/v1/memories".into(),
            msg(json!({"metadata": {nul: 1}})),
            "metadata",
        ),
        (
            "POST",
            "/v1/memories".into(),
            msg(json!({"metadata": {"k": [nul]}})),
            "metadata.k[0]",
        ),
        (
            "POST",
            "/v1/memories".into(),
            msg(json!({"session_id": nul})),
            "session_id",
        ),
        (
            "POST",
            "/v1/memories".into(),
            msg(json!({"idempotency_key": nul})),
            "idempotency_key",
        ),
        (
            "POST",
            "/v1/memories/search".into(),
            json!({"query": nul}),
            "query",
        ),
        (
            "POST",
            "/v1/memories/search".into(),
            json!({"query": "tea", "filters": {"k": nul}}),
            "filters",
        ),
        (
            "PUT",
            format!("/v1/memories/{id}"),
            json!({"text": nul}),
            "text",
        ),
        (
            "PUT",
            format!("/v1/memories/{id}"),
            json!({"metadata": {"k": nul}}),
            "metadata.k",
        ),
        (
            "POST",
            format!("/v1/memories/{id}/erase"),
            json!({"reason": nul}),
            "reason",
        ),
        (
            "POST",
            "/v3/memories/add/".into(),
            msg(json!({"messages": [{"role": "user", "content": nul}]})),
            "messages[0].content",
        ),
    ];
    for (method, path, body, field) in probes {
        let r = s.call(method, &path, Some(&key), Some(body.clone()));
        assert_eq!(r.status, 400, "{method} {path} {body}: {:?}", r.body);
        let text = r.body.to_string();
        assert!(text.contains("invalid_input"), "{method} {path}: {text}");
        assert!(
            text.contains(field) && text.contains("NUL"),
            "{method} {path}: the error names {field}: {text}"
        );
    }
    assert_eq!(s.snapshot(), before, "a refused input writes nothing");
}

#[test]
fn nul_is_refused_naming_the_field_on_sqlite() {
    nul_is_refused_naming_the_field(TestServer::start());
}

#[test]
fn nul_is_refused_naming_the_field_on_postgres() {
    nul_is_refused_naming_the_field(TestServer::start_postgres());
}

/// `as_of` is held to the years 0001–9999 on REST as on MCP: the probe's years 0, −1 and
/// +10000 were accepted by search and list.
#[test]
fn as_of_outside_the_documented_years_is_refused_on_rest() {
    let s = TestServer::start();
    let key = s.user_key("alice");
    s.seed("alice", "alice likes tea");
    for t in [
        "0000-01-01T00:00:00Z",
        "-0001-01-01T00:00:00Z",
        "+10000-01-01T00:00:00Z",
    ] {
        let r = s.call(
            "POST",
            "/v1/memories/search",
            Some(&key),
            Some(json!({"query": "tea", "as_of": t})),
        );
        assert_eq!(r.status, 400, "search as_of {t}: {:?}", r.body);
        assert!(r.body.to_string().contains("as_of"), "{:?}", r.body);
        let q = t.replace('+', "%2B");
        let r = s.call("GET", &format!("/v1/memories?as_of={q}"), Some(&key), None);
        assert_eq!(r.status, 400, "list as_of {t}: {:?}", r.body);
        assert!(r.body.to_string().contains("as_of"), "{:?}", r.body);
    }
    let r = s.call(
        "POST",
        "/v1/memories/search",
        Some(&key),
        Some(json!({"query": "tea", "as_of": "0001-01-01T00:00:00Z"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
}

/// Admin import takes what the add paths take: a message dated in year 0, or a record holding
/// a NUL, is refused naming the record, and nothing of the import is written.
#[test]
fn import_refuses_records_no_add_would_take() {
    let s = TestServer::start();
    let admin = s.admin.clone();
    s.seed("alice", "alice likes tea");
    let export = s.call("GET", "/v1/export", Some(&admin), None).body;
    let lines: Vec<serde_json::Value> = export
        .as_str()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let message = lines
        .iter()
        .find(|v| v["type"] == "message")
        .expect("the seed logged a message")
        .clone();
    let before = s.snapshot();
    for (what, edit) in [
        ("year 0", json!({"created_at": "0000-06-01T00:00:00Z"})),
        ("NUL", json!({"content": "a\u{0}b"})),
    ] {
        let mut m = message.clone();
        let id = uuid::Uuid::new_v4().to_string();
        m["id"] = json!(id);
        for (k, v) in edit.as_object().unwrap() {
            m[k] = v.clone();
        }
        let r = s.raw(
            "POST",
            "/v1/import",
            Some(&admin),
            Some("application/x-ndjson"),
            Some(format!("{m}\n").into_bytes()),
        );
        assert_eq!(r.status, 400, "{what}: {:?}", r.body);
        assert!(
            r.body.to_string().contains(&id),
            "{what}: names the record: {:?}",
            r.body
        );
        assert_eq!(s.snapshot(), before, "{what}: nothing written");
    }
}
