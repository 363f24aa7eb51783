//! Content never reaches the log on an error path, even at debug level: a chat provider's error
//! body, a model's unusable answer and a refused import line may all quote what a user said.
//! Each test logs every thread of the server's runtime into a buffer, drives one error path,
//! checks that the log saw that path, and that it holds no trace of the secret.

use crate::inproc::{App, LogBuffer};
use axum::http::Method;
use mnemo::{InferConfig, Memory};
use mnemo_core::{ChatModel, RankParams};
use mnemo_testkit::stub_http::StubEndpoint;
use mnemo_testkit::{HashEmbedder, ScriptedChat};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const SECRET: &str = "SECRET-7f3a-patient-has-diabetes";

/// The app with `chat` as its model, logging into `log`.
fn app_with_chat(log: &LogBuffer, chat: Arc<dyn ChatModel>) -> App {
    App::build(Some(log.clone()), |dir| {
        let store = mnemo_store_sqlite::SqliteStore::open(dir.join("mnemo.db")).unwrap();
        Memory::from_parts(
            Arc::new(store),
            Arc::new(HashEmbedder),
            RankParams::default(),
        )
        .unwrap()
        .with_chat(chat, InferConfig::default())
    })
}

/// An OpenAI-compatible chat client of `stub`, retrying once without delay.
fn client_of(stub: &StubEndpoint) -> Arc<dyn ChatModel> {
    let mut cfg = mnemo_models::OpenAiConfig::new(stub.base_url.clone(), "stub-model");
    cfg.max_retries = 1;
    cfg.backoff = Duration::from_millis(1);
    Arc::new(mnemo_models::OpenAiChat::new(cfg).unwrap())
}

fn infer_add(app: &App) -> u16 {
    let body = json!({"text": "I moved to Lisbon", "user_id": "u", "infer": true});
    app.json(Method::POST, "/v1/memories", &body).status
}

fn assert_clean(log: &LogBuffer, seen: &str) {
    let text = log.text();
    assert!(text.contains(seen), "the log missed the error path: {text}");
    assert!(!text.contains(SECRET), "the log holds the secret: {text}");
}

#[test]
fn a_provider_error_body_is_not_logged_while_retrying() {
    let stub = StubEndpoint::start(|_| (500, json!({"error": SECRET}).to_string()));
    let log = LogBuffer::default();
    let app = app_with_chat(&log, client_of(&stub));
    assert_eq!(infer_add(&app), 503);
    assert_eq!(stub.requests().len(), 2, "one retry");
    assert_clean(&log, "model call failed; retrying");
    assert_clean(&log, "inferred add failed");
}

#[test]
fn a_provider_refusal_is_not_logged_as_an_internal_error() {
    let stub = StubEndpoint::start(|_| (400, json!({"error": SECRET}).to_string()));
    let log = LogBuffer::default();
    let app = app_with_chat(&log, client_of(&stub));
    assert_eq!(infer_add(&app), 500);
    assert_clean(&log, "model provider error");
}

#[test]
fn an_unusable_model_answer_is_not_logged() {
    let chat = ScriptedChat::new("scripted", |_| {
        Ok(format!("Sure! {SECRET} is what I remember. {{ oops"))
    });
    let log = LogBuffer::default();
    let app = app_with_chat(&log, Arc::new(chat));
    assert_eq!(infer_add(&app), 502);
    assert_clean(&log, "inferred add failed");
}

#[test]
fn a_refused_import_line_is_not_logged() {
    let log = LogBuffer::default();
    let app = App::build(Some(log.clone()), |dir| {
        let store = mnemo_store_sqlite::SqliteStore::open(dir.join("mnemo.db")).unwrap();
        Memory::from_parts(
            Arc::new(store),
            Arc::new(HashEmbedder),
            RankParams::default(),
        )
        .unwrap()
    });
    let record = |user: serde_json::Value, kind: &str| {
        json!({"type": "memory", "id": "01a2308d-d164-7305-b45e-a01819e97608", "memory": SECRET,
               "kind": kind, "state": "active", "user_id": user, "agent_id": null,
               "run_id": null, "metadata": {"note": SECRET}, "hash": "",
               "created_at": "2020-01-01T00:00:00Z", "updated_at": "2020-01-01T00:00:00Z",
               "expires_at": null, "valid_from": null, "valid_until": null, "actor": null,
               "role": "user", "sources": [], "access_count": 0, "last_accessed_at": null})
    };
    // No scope; a scope that is the secret with a space in it; a kind that is the secret.
    for line in [
        record(json!(null), "fact"),
        record(json!(format!("{SECRET} x")), "fact"),
        record(json!("u"), SECRET),
    ] {
        let a = app.send(
            Method::POST,
            "/v1/import",
            "application/x-ndjson",
            format!("{line}\n").into_bytes(),
        );
        assert_eq!(a.status, 400, "{}", String::from_utf8_lossy(&a.body));
        let message = a.json().unwrap()["error"]["message"].to_string();
        assert!(message.contains("line 1"), "{message}");
    }
    assert_clean(&log, "status=400");
}
