//! `/mcp` over HTTP as an attacker holding a key of their own meets it: sessions belong to the key
//! that opened them, and malformed JSON-RPC gets JSON-RPC errors.

use crate::TestServer;
use serde_json::{json, Value};

pub(crate) struct McpReply {
    pub status: u16,
    session: Option<String>,
    pub text: String,
}

impl McpReply {
    /// The JSON-RPC message of a reply, sent as plain JSON or as one SSE `data:` event.
    pub(crate) fn message(&self) -> Value {
        if let Ok(v) = serde_json::from_str(&self.text) {
            return v;
        }
        self.text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
            .unwrap_or(Value::Null)
    }

    /// A tool's successful result: the JSON its text content holds.
    pub(crate) fn tool_json(&self) -> Value {
        let m = self.message();
        let text = m["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("not a tool result: {}", self.text));
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// A tool's error: its JSON-RPC code, its kind and its message.
    pub(crate) fn tool_error(&self) -> (i64, String, String) {
        let m = self.message();
        let e = &m["error"];
        assert!(e.is_object(), "not an error: {}", self.text);
        (
            e["code"].as_i64().unwrap(),
            e["data"]["kind"].as_str().unwrap_or("").to_string(),
            e["message"].as_str().unwrap_or("").to_string(),
        )
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into()
}

pub(crate) fn mcp(
    s: &TestServer,
    method: &str,
    key: &str,
    session: Option<&str>,
    extra: &[(&str, &str)],
    body: Option<&str>,
) -> McpReply {
    let mut req = ureq::http::Request::builder()
        .method(method)
        .uri(format!("{}/mcp", s.url))
        .header("Authorization", format!("Bearer {key}"))
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json");
    if let Some(id) = session {
        req = req
            .header("Mcp-Session-Id", id)
            .header("Mcp-Protocol-Version", "2025-06-18");
    }
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    let req = req
        .body(body.unwrap_or_default().as_bytes().to_vec())
        .unwrap();
    let mut resp = agent().run(req).expect("the server answers");
    McpReply {
        status: resp.status().as_u16(),
        session: resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        text: resp.body_mut().read_to_string().unwrap_or_default(),
    }
}

/// Opens a session with `key` and finishes the handshake; returns the session id.
pub(crate) fn open_session(s: &TestServer, key: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}});
    let r = mcp(s, "POST", key, None, &[], Some(&init.to_string()));
    assert_eq!(r.status, 200, "{}", r.text);
    let id = r.session.expect("initialize opens a session");
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = mcp(s, "POST", key, Some(&id), &[], Some(&done.to_string()));
    assert_eq!(r.status, 202, "{}", r.text);
    id
}

pub(crate) fn call_tool(
    s: &TestServer,
    key: &str,
    session: &str,
    name: &str,
    args: Value,
) -> McpReply {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": name, "arguments": args}});
    mcp(s, "POST", key, Some(session), &[], Some(&body.to_string()))
}

/// The probe's attack: alice opens a session S; bob, with his own key, sends `GET /mcp` with
/// `Mcp-Session-Id: S` and `Last-Event-ID: 0/0` to replay alice's tool results, posts into S, and
/// ends S with `DELETE /mcp`. Before the fix the GET streamed alice's events and the DELETE
/// answered 202 and closed her session. Now each gets exactly an unknown session's answer.
#[test]
fn mcp_session_hijack_by_another_key_is_refused_like_an_unknown_session() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let bob = s.user_key("bob");
    let session = open_session(&s, &alice);
    let added = call_tool(
        &s,
        &alice,
        &session,
        "add_memory",
        json!({"text": "alice's locker code is 3141"}),
    );
    assert_eq!(added.status, 200, "{}", added.text);
    assert!(added.text.contains("3141"), "{}", added.text);

    let unknown = mcp(
        &s,
        "GET",
        &alice,
        Some("00000000-0000-0000-0000-000000000000"),
        &[("Last-Event-ID", "0/0")],
        None,
    );
    assert_eq!(unknown.status, 404);
    let attacks = [
        mcp(
            &s,
            "GET",
            &bob,
            Some(&session),
            &[("Last-Event-ID", "0/0")],
            None,
        ),
        mcp(&s, "GET", &bob, Some(&session), &[], None),
        call_tool(&s, &bob, &session, "list_memories", json!({})),
        mcp(&s, "DELETE", &bob, Some(&session), &[], None),
    ];
    for a in &attacks {
        assert_eq!(
            (a.status, a.text.as_str()),
            (unknown.status, unknown.text.as_str())
        );
        assert!(!a.text.contains("3141"));
    }
    // Alice's session survived bob's DELETE and still serves her.
    let listed = call_tool(&s, &alice, &session, "list_memories", json!({}));
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert!(listed.text.contains("3141"), "{}", listed.text);
    // Her own DELETE ends it; afterwards it is unknown to her too.
    assert_eq!(
        mcp(&s, "DELETE", &alice, Some(&session), &[], None).status,
        202
    );
    let after = call_tool(&s, &alice, &session, "list_memories", json!({}));
    assert_eq!(after.status, 404);
}

/// The probe sent a body that is not JSON (answered HTTP 415) and `tools/call` with a string for
/// `arguments` (answered −32601, method not found). JSON-RPC says −32700 and −32602.
#[test]
fn malformed_json_rpc_gets_json_rpc_error_codes() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let session = open_session(&s, &alice);
    let r = mcp(&s, "POST", &alice, Some(&session), &[], Some("{not json"));
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.message()["error"]["code"], -32700, "{}", r.text);

    let r = mcp(&s, "POST", &alice, Some(&session), &[], Some("[1, 2]"));
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.message()["error"]["code"], -32600, "{}", r.text);

    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "search_memories", "arguments": "{\"query\": \"x\"}"}});
    let r = mcp(
        &s,
        "POST",
        &alice,
        Some(&session),
        &[],
        Some(&body.to_string()),
    );
    let m = r.message();
    assert_eq!(m["error"]["code"], -32602, "{}", r.text);
    assert_eq!(m["id"], 9, "{}", r.text);
    // A well-formed call still works on the same session.
    let ok = call_tool(
        &s,
        &alice,
        &session,
        "search_memories",
        json!({"query": "x"}),
    );
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert!(ok.message()["result"].is_object(), "{}", ok.text);
}

/// The probe found that arguments of the wrong type came back as a successful tool result
/// flagged `isError`, with no JSON-RPC code and no error kind. They are invalid input like any
/// other: -32602, `data.kind = "invalid_input"`, the offending value named, nothing written.
#[test]
fn tool_arguments_of_the_wrong_shape_are_invalid_input_with_a_code() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let session = open_session(&s, &alice);
    for (tool, args, named) in [
        ("search_memories", json!({"query": 5}), "integer `5`"),
        (
            "add_memory",
            json!({"text": "I like tea", "infer": "yes"}),
            "\"yes\"",
        ),
        (
            "add_memory",
            json!({"text": "I like tea", "colour": "red"}),
            "colour",
        ),
        ("get_memory", json!({"memory_id": ["x"]}), "sequence"),
    ] {
        let (code, kind, message) =
            call_tool(&s, &alice, &session, tool, args.clone()).tool_error();
        assert_eq!(
            (code, kind.as_str()),
            (-32602, "invalid_input"),
            "{tool} {args}"
        );
        assert!(message.contains(named), "{tool} {args}: {message}");
        assert!(message.contains(tool), "{tool} {args}: {message}");
    }
    let listed = call_tool(&s, &alice, &session, "list_memories", json!({}));
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert!(
        !listed.text.contains("tea"),
        "nothing was written: {}",
        listed.text
    );
    // The same add with arguments that fit is written and listed.
    let ok = call_tool(
        &s,
        &alice,
        &session,
        "add_memory",
        json!({"text": "I like tea", "infer": false}),
    );
    assert!(ok.message()["result"].is_object(), "{}", ok.text);
    let listed = call_tool(&s, &alice, &session, "list_memories", json!({}));
    assert!(listed.text.contains("I like tea"), "{}", listed.text);
}

/// The probe opened 3,000 sessions from one key (166 MiB, never returned). Now a key holds at
/// most `MAX_SESSIONS_PER_KEY` live sessions: one more `initialize` is refused with 429 while
/// another key still opens its own, and ending one makes room again.
#[test]
fn one_key_holds_a_bounded_number_of_mcp_sessions() {
    let s = TestServer::start();
    let alice = s.user_key("alice");
    let bob = s.user_key("bob");
    let cap = mnemo_server::mcp::MAX_SESSIONS_PER_KEY;
    let sessions: Vec<String> = (0..cap).map(|_| open_session(&s, &alice)).collect();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"}}});
    let r = mcp(&s, "POST", &alice, None, &[], Some(&init.to_string()));
    assert_eq!(r.status, 429, "{}", r.text);
    assert!(r.session.is_none());
    open_session(&s, &bob);
    let r = mcp(&s, "DELETE", &alice, Some(&sessions[0]), &[], None);
    assert!(r.status < 300, "{} {}", r.status, r.text);
    open_session(&s, &alice);
}
