//! `mnemo profile refresh|show` through the binary: the typed error without a chat model, and
//! a refresh against an OpenAI-compatible stub on 127.0.0.1 after a conversation was added.

use crate::{mnemo, run_err, run_ok};
use mnemo_testkit::stub_http::{completion, StubEndpoint};
use serde_json::{json, Value};

#[test]
fn refresh_without_a_chat_model_is_invalid_input_naming_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (out, err) = run_err(mnemo(&data).args(["profile", "refresh", "--user-id", "u1"]));
    assert_eq!(out.status.code(), Some(2), "invalid input exits with 2");
    assert_eq!(err["error"]["kind"], "invalid_input");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("llm")
            && message.contains("chat model")
            && message.contains("--llm-model"),
        "{message}"
    );
    let shown = run_ok(mnemo(&data).args(["profile", "show", "--user-id", "u1"]));
    assert_eq!(shown, json!({"profile": null}));
    // Everything else still works without a model.
    run_ok(mnemo(&data).args(["add", "--user-id", "u1", "I keep bees"]));
}

/// A chat endpoint that answers profile analyses only, citing the message about bees.
fn profile_model() -> StubEndpoint {
    StubEndpoint::start(|body: &Value| {
        let user = body["messages"][1]["content"].as_str().unwrap_or("");
        let n = user
            .lines()
            .find(|l| l.starts_with('[') && l.contains("bees"))
            .and_then(|l| l[1..].split(']').next()?.parse::<u64>().ok());
        let answer = json!({
            "profile": {"dimensions": [{"name": "hobbies", "value": "beekeeping", "messages": [n]}], "reason": "mentioned bees"},
            "user_knowledge": [],
            "assistant_knowledge": [{"text": "The assistant explained how to winter a hive", "messages": [n.map(|n| n + 1)]}]
        });
        (200, completion(&answer.to_string(), 40))
    })
}

#[test]
fn refresh_analyses_added_conversations_and_show_prints_the_profile() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let ep = profile_model();
    let conversation = json!([
        {"role": "user", "content": "I keep bees in my garden", "name": "Ann"},
        {"role": "assistant", "content": "Lovely. Keep the hive dry and ventilated in winter."}
    ])
    .to_string();
    run_ok(mnemo(&data).args([
        "add",
        "--user-id",
        "u1",
        "--agent-id",
        "bot",
        "--session-id",
        "s1",
        "--messages",
        &conversation,
    ]));
    let out = run_ok(mnemo(&data).args([
        "--llm-base-url",
        &ep.base_url,
        "--llm-model",
        "stub-chat",
        "profile",
        "refresh",
        "--user-id",
        "u1",
        "--agent-id",
        "bot",
    ]));
    assert_eq!(out["pages_analysed"], 1, "{out}");
    let events: Vec<(&str, &str)> = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["event"].as_str().unwrap(), r["memory"].as_str().unwrap()))
        .collect();
    assert!(
        events.contains(&("ADD", "hobbies: beekeeping")),
        "{events:?}"
    );
    assert!(
        events.contains(&("ADD", "The assistant explained how to winter a hive")),
        "{events:?}"
    );
    assert_eq!(out["profile"]["memory"], "hobbies: beekeeping");
    let shown = run_ok(mnemo(&data).args(["profile", "show", "--user-id", "u1"]));
    assert_eq!(shown["profile"]["memory"], "hobbies: beekeeping");
    assert_eq!(shown["profile"]["kind"], "profile");
    // Nothing left to analyse: a second refresh calls no model and writes nothing.
    let again = run_ok(mnemo(&data).args([
        "--llm-base-url",
        &ep.base_url,
        "--llm-model",
        "stub-chat",
        "profile",
        "refresh",
        "--user-id",
        "u1",
    ]));
    assert_eq!(again["pages_analysed"], 0);
    assert_eq!(ep.requests().len(), 1, "one model call in all");
    assert_eq!(again["results"], json!([]));
}
