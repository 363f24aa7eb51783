//! Content parts on every surface of the server: a message's `content` may be a list of
//! OpenAI-style parts on the native add, the Mem0 routes and MCP. Text parts are joined; an
//! image part is described by a chat model that reads images, else refused naming its index;
//! an unknown part type is refused the same way. Nothing is dropped silently.

use crate::mcp::{call_tool, open_session};
use crate::TestServer;
use mnemo_testkit::ScriptedChat;
use serde_json::{json, Value};
use std::sync::Arc;

/// What LangChain's `HumanMessage(content=[...])` and the OpenAI SDK send by default.
fn openai_style(texts: &[&str]) -> Value {
    let parts: Vec<Value> = texts
        .iter()
        .map(|t| json!({"type": "text", "text": t}))
        .collect();
    json!([
        {"role": "system", "content": [{"type": "text", "text": "You are helpful."}]},
        {"role": "user", "content": parts}
    ])
}

fn image_turn() -> Value {
    json!([{"role": "user", "content": [
        {"type": "text", "text": "my new flat"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/SECRETBYTES", "detail": "auto"}}
    ]}])
}

fn memories_of(s: &TestServer, key: &str) -> Vec<String> {
    let r = s.call("GET", "/v1/memories?user_id=ana", Some(key), None);
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["memory"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn text_parts_are_joined_on_the_native_mem0_and_mcp_adds() {
    let s = TestServer::start();
    let ana = s.user_key("ana");
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&ana),
        Some(json!({"messages": openai_style(&["I moved to Oslo", "in May"]), "user_id": "ana", "infer": false})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["results"][0]["memory"], "I moved to Oslo\nin May");

    let r = s.call(
        "POST",
        "/v1/memories/",
        Some(&ana),
        Some(json!({"messages": openai_style(&["My sister is Eva"]), "user_id": "ana", "infer": false})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // A single message object with parts, as Mem0 also takes.
    let r = s.call(
        "POST",
        "/v1/memories/",
        Some(&ana),
        Some(json!({"messages": {"role": "user", "content": [{"type": "text", "text": "I play chess"}]}, "user_id": "ana", "infer": false})),
    );
    assert_eq!(r.status, 200, "{}", r.body);

    let session = open_session(&s, &ana);
    let r = call_tool(
        &s,
        &ana,
        &session,
        "add_memory",
        json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "I keep bees"}, {"type": "text", "text": "on the roof"}]}], "user_id": "ana", "infer": false}),
    );
    assert_eq!(
        r.tool_json()["results"][0]["memory"],
        "I keep bees\non the roof"
    );

    let mut all = memories_of(&s, &ana);
    all.sort();
    assert_eq!(
        all,
        [
            "I keep bees\non the roof",
            "I moved to Oslo\nin May",
            "I play chess",
            "My sister is Eva"
        ]
    );
}

#[test]
fn image_and_unknown_parts_are_refused_by_index_on_every_route_without_vision() {
    let s = TestServer::start();
    let ana = s.user_key("ana");
    let audio = json!([{"role": "user", "content": [
        {"type": "text", "text": "listen"},
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    ]}]);
    for (path, body) in [
        (
            "/v1/memories",
            json!({"messages": image_turn(), "user_id": "ana", "infer": false}),
        ),
        (
            "/v1/memories/",
            json!({"messages": image_turn(), "user_id": "ana", "infer": false}),
        ),
        (
            "/v1/memories",
            json!({"messages": image_turn(), "user_id": "ana", "infer": false, "async_mode": true}),
        ),
        (
            "/memories",
            json!({"messages": audio, "user_id": "ana", "infer": false}),
        ),
        (
            "/v1/memories",
            json!({"messages": audio, "user_id": "ana", "infer": false}),
        ),
    ] {
        let r = s.call("POST", path, Some(&ana), Some(body.clone()));
        assert_eq!(r.status, 400, "{path} {body}: {}", r.body);
        assert_eq!(r.kind(), "invalid_input");
        let msg = r.body["error"]["message"].as_str().unwrap();
        assert!(msg.contains("messages[0].content[1]"), "{path}: {msg}");
    }
    let session = open_session(&s, &ana);
    let (code, kind, message) = call_tool(
        &s,
        &ana,
        &session,
        "add_memory",
        json!({"messages": image_turn(), "user_id": "ana", "infer": false}),
    )
    .tool_error();
    assert_eq!((code, kind.as_str()), (-32602, "invalid_input"));
    assert!(message.contains("messages[0].content[1]"), "{message}");
    assert!(memories_of(&s, &ana).is_empty(), "nothing was written");
}

#[test]
fn with_vision_an_image_becomes_its_description_and_a_reference() {
    let chat = Arc::new(ScriptedChat::new("scripted:vision", |_| {
        Ok("A bright room with two windows.".into())
    }));
    let s = TestServer::start_with_chat(
        chat.clone(),
        mnemo::InferConfig {
            vision: true,
            ..mnemo::InferConfig::default()
        },
        |_| {},
    );
    let ana = s.user_key("ana");
    let r = s.call(
        "POST",
        "/v1/memories",
        Some(&ana),
        Some(json!({"messages": image_turn(), "user_id": "ana", "infer": false})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let m = &r.body["results"][0];
    assert_eq!(
        m["memory"],
        "my new flat\n[image: A bright room with two windows.]"
    );
    assert_eq!(chat.requests().len(), 1);
    let id = m["id"].as_str().unwrap();
    let got = s.call(
        "GET",
        &format!("/v1/memories/{id}?user_id=ana"),
        Some(&ana),
        None,
    );
    assert_eq!(
        got.body["metadata"]["images"][0]["media_type"],
        "image/jpeg"
    );
    let export = s.raw("GET", "/v1/export", Some(&s.admin), None, None);
    assert_eq!(export.status, 200);
    assert!(
        !export.body.to_string().contains("SECRETBYTES"),
        "the image's bytes are stored"
    );
}
