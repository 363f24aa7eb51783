//! `mnemo serve` settings as an operator meets them: flags > `MNEMO_*` environment >
//! `mnemo.toml` > defaults, refused settings, and logs that carry no memory text unless
//! content logging is switched on.

use crate::clients::{key_for, Server};
use crate::*;
use std::time::Duration;

/// POSTs an add whose body is `size` bytes long; returns the status. The body waits for the
/// server's `100 Continue`: a body over the limit is refused from its declared length, and a
/// client still uploading when the server answers and closes would see a broken pipe or a reset
/// instead of the 413.
fn add_of_size(url: &str, key: &str, size: usize) -> u16 {
    let text = "x".repeat(size.saturating_sub(40));
    let body = serde_json::json!({ "text": text, "user_id": "alice" }).to_string();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    agent
        .post(&format!("{url}/v1/memories"))
        .header("Authorization", &format!("Bearer {key}"))
        .header("Content-Type", "application/json")
        .header("Expect", "100-continue")
        .send(body.as_bytes())
        .expect("the server answers")
        .status()
        .as_u16()
}

#[test]
fn settings_come_from_flags_then_environment_then_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let key = key_for(&data, "alice");
    let toml = dir.path().join("mnemo.toml");
    std::fs::write(&toml, "[server]\nmax_body_bytes = 2048\n").unwrap();
    let cfg = toml.to_str().unwrap();
    // The file alone: 2 KiB bodies.
    let s = Server::start_with(&data, &["--config", cfg], &[], &[]);
    assert_eq!(add_of_size(&s.url, &key, 3000), 413);
    assert_eq!(add_of_size(&s.url, &key, 1000), 200);
    drop(s);
    // The environment beats the file.
    let s = Server::start_with(
        &data,
        &["--config", cfg],
        &[],
        &[("MNEMO_MAX_BODY_BYTES", "8192")],
    );
    assert_eq!(add_of_size(&s.url, &key, 3000), 200);
    drop(s);
    // A flag beats both.
    let s = Server::start_with(
        &data,
        &["--config", cfg],
        &["--max-body-bytes", "2048"],
        &[("MNEMO_MAX_BODY_BYTES", "8192")],
    );
    assert_eq!(add_of_size(&s.url, &key, 3000), 413);
    drop(s);
}

#[test]
fn bad_settings_stop_the_start_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let toml = dir.path().join("mnemo.toml");
    std::fs::write(&toml, "[server]\nmax_body_byte = 2048\n").unwrap();
    let (out, err) = run_err(mnemo(&data).args(["--config", toml.to_str().unwrap(), "serve"]));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(err["error"]["kind"], "invalid_input");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_body_byte"),
        "{err}"
    );
    // --no-auth is for loopback only.
    let (_, err) = run_err(mnemo(&data).args(["serve", "--no-auth", "--bind", "0.0.0.0:0"]));
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("loopback"),
        "{err}"
    );
}

/// Opens an MCP session over HTTP and calls `add_memory` with `text`; returns the session id.
fn mcp_add(agent: &ureq::Agent, url: &str, key: &str, text: &str) -> String {
    let post = |session: Option<&str>, body: serde_json::Value| {
        let mut req = agent
            .post(&format!("{url}/mcp"))
            .header("Authorization", &format!("Bearer {key}"))
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json");
        if let Some(s) = session {
            req = req
                .header("Mcp-Session-Id", s)
                .header("Mcp-Protocol-Version", "2025-06-18");
        }
        let mut resp = req
            .send(body.to_string().as_bytes())
            .expect("the server answers");
        let status = resp.status().as_u16();
        let id = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        assert!((200..300).contains(&status), "{status}: {text}");
        (id, text)
    };
    let (id, _) = post(
        None,
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "log-test", "version": "1"}}}),
    );
    let id = id.expect("initialize opens a session");
    post(
        Some(&id),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let (_, result) = post(
        Some(&id),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "add_memory", "arguments": {"text": text}}}),
    );
    assert!(result.contains("ADD"), "the tool added: {result}");
    id
}

#[test]
fn logs_carry_no_memory_text_unless_content_logging_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let key = key_for(&data, "alice");
    let secret = "the vault combination is 90210";
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    for content in [false, true] {
        let flags: &[&str] = if content { &["--log-content"] } else { &[] };
        let mut s = Server::start_with(&data, &[], flags, &[("MNEMO_LOG", "debug")]);
        for (path, body) in [
            ("/v1/memories", serde_json::json!({ "text": secret })),
            (
                "/v1/memories/search",
                serde_json::json!({ "query": secret }),
            ),
        ] {
            let st = agent
                .post(&format!("{}{path}", s.url))
                .header("Authorization", &format!("Bearer {key}"))
                .send_json(body)
                .unwrap()
                .status()
                .as_u16();
            assert_eq!(st, 200);
        }
        // The same text through MCP: rmcp's own debug events carry tool arguments and results.
        let session = mcp_add(
            &agent,
            &s.url,
            &key,
            &format!("told over MCP ({content}): {secret}"),
        );
        assert!(s
            .terminate(Duration::from_secs(20))
            .is_some_and(|st| st.success()));
        let log = s.log();
        assert!(
            log.contains("request_id="),
            "the log names requests:\n{log}"
        );
        assert_eq!(
            log.contains("90210"),
            content,
            "content logging {content}:\n{log}"
        );
        if !content {
            assert!(
                !log.contains(&session),
                "the MCP session id is not logged:\n{log}"
            );
        }
    }
}

#[test]
fn keys_are_listed_without_secrets_and_revoked_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let created =
        run_ok(mnemo(&data).args(["keys", "create", "--user-id", "alice", "--name", "app"]));
    let secret = created["key"].as_str().unwrap().to_string();
    let id = created["id"].as_str().unwrap().to_string();
    run_ok(mnemo(&data).args(["keys", "create", "--admin"]));
    let (_, err) = run_err(mnemo(&data).args(["keys", "create"]));
    assert_eq!(
        err["error"]["kind"], "invalid_input",
        "a key needs a scope or --admin"
    );
    let list = run_ok(mnemo(&data).args(["keys", "list"]));
    let text = list.to_string();
    assert!(!text.contains(&secret), "list shows a secret: {text}");
    let keys = list["results"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["user_id"], "alice");
    assert_eq!(keys[0]["name"], "app");
    assert_eq!(keys[1]["admin"], true);
    // A revoked key no longer opens the MCP tools either.
    run_ok(mnemo(&data).args(["keys", "revoke", &id]));
    let list = run_ok(mnemo(&data).args(["keys", "list"]));
    assert!(list["results"][0]["revoked_at"].is_string());
    let (out, err) = run_err(mnemo(&data).args(["mcp", "--api-key", &secret]));
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(err["error"]["kind"], "unauthenticated", "{err}");
    let (_, err) = run_err(mnemo(&data).args(["keys", "revoke", &id]));
    assert_eq!(err["error"]["kind"], "not_found");
}
