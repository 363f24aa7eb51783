//! The OpenAI-compatible chat provider against a real HTTP endpoint on 127.0.0.1.

use mnemo_core::{ChatMessage, ChatModel, ChatRequest, ErrorKind};
use mnemo_models::{OpenAiChat, OpenAiConfig};
use mnemo_testkit::stub_http::{completion, StubEndpoint};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::system("be brief"), ChatMessage::user("hi")],
        max_tokens: Some(8),
        temperature: Some(0.0),
        json: true,
    }
}

fn config(base_url: &str) -> OpenAiConfig {
    let mut cfg = OpenAiConfig::new(base_url, "stub-model");
    cfg.backoff = Duration::from_millis(5);
    cfg.timeout = Duration::from_secs(5);
    cfg
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the client reads its key from the variable its config names; each test sets a variable of its own"
)]
fn completes_sends_the_key_and_captures_usage() {
    let stub = StubEndpoint::start(|_| (200, completion("hello there", 17)));
    std::env::set_var("MNEMO_TEST_CHAT_KEY", "sk-test-123");
    let mut cfg = config(&stub.base_url);
    cfg.api_key_env = Some("MNEMO_TEST_CHAT_KEY".into());
    let chat = OpenAiChat::new(cfg).unwrap();
    let resp = chat.complete(&request()).unwrap();
    assert_eq!(resp.content, "hello there");
    assert_eq!(resp.usage.prompt_tokens, 17);
    let seen = stub.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, "Bearer sk-test-123");
    let body = &seen[0].1;
    assert_eq!(body["model"], "stub-model");
    assert_eq!(body["messages"][1]["content"], "hi");
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["response_format"]["type"], "json_object");
    assert_eq!(body["max_tokens"], 8);
    assert!(
        !format!("{chat:?}").contains("sk-test"),
        "Debug never prints the key"
    );
}

#[test]
fn retries_server_errors_and_rate_limits_then_succeeds() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let stub = StubEndpoint::start(move |_| match c.fetch_add(1, Ordering::SeqCst) {
        0 => (500, "{\"error\":\"boom\"}".into()),
        1 => (429, "{\"error\":\"slow down\"}".into()),
        _ => (200, completion("ok", 3)),
    });
    let chat = OpenAiChat::new(config(&stub.base_url)).unwrap();
    assert_eq!(chat.complete(&request()).unwrap().content, "ok");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[test]
fn failures_are_errors_never_empty_answers() {
    // Retries exhausted: the last failure comes back, typed as retryable.
    let stub = StubEndpoint::start(|_| (503, "{\"error\":\"down\"}".into()));
    let mut cfg = config(&stub.base_url);
    cfg.max_retries = 1;
    let err = OpenAiChat::new(cfg)
        .unwrap()
        .complete(&request())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert_eq!(stub.requests().len(), 2, "one try and one retry");

    // A client error is not retried.
    let stub = StubEndpoint::start(|_| (400, "{\"error\":\"bad model\"}".into()));
    let err = OpenAiChat::new(config(&stub.base_url))
        .unwrap()
        .complete(&request())
        .unwrap_err();
    assert!(err.to_string().contains("400"), "{err}");
    assert_eq!(stub.requests().len(), 1);

    // A 200 whose body is not a completion.
    let stub = StubEndpoint::start(|_| (200, "{\"choices\": []}".into()));
    let err = OpenAiChat::new(config(&stub.base_url))
        .unwrap()
        .complete(&request())
        .unwrap_err();
    assert!(err.to_string().contains("choices[0]"), "{err}");

    // Nobody listening.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cfg = config(&format!("http://127.0.0.1:{port}/v1"));
    cfg.max_retries = 0;
    let err = OpenAiChat::new(cfg)
        .unwrap()
        .complete(&request())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
}

#[test]
fn configuration_is_checked_up_front() {
    let mut cfg = config("http://127.0.0.1:9/v1");
    cfg.api_key_env = Some("MNEMO_TEST_UNSET_KEY_VAR".into());
    let err = OpenAiChat::new(cfg).unwrap_err();
    assert!(
        err.to_string().contains("MNEMO_TEST_UNSET_KEY_VAR"),
        "{err}"
    );
    assert!(
        OpenAiChat::new(config("127.0.0.1:9")).is_err(),
        "scheme required"
    );
    assert!(OpenAiChat::new(OpenAiConfig::new("http://x", " ")).is_err());
}

/// A proxy in front of the endpoint failing with an HTML page and status 200 is transient, like
/// a 502: retried, and when it persists an unavailable (retryable) error, not an internal one.
#[test]
fn a_2xx_answer_that_is_not_json_is_retried_and_ends_unavailable() {
    const PAGE: &str = "<html><body><h1>Bad gateway</h1></body></html>";
    let stub = StubEndpoint::start(|_| (200, PAGE.into()));
    let mut cfg = config(&stub.base_url);
    cfg.max_retries = 2;
    let err = OpenAiChat::new(cfg)
        .unwrap()
        .complete(&request())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.kind().is_retryable());
    assert!(err.to_string().contains("not JSON"), "{err}");
    assert_eq!(stub.requests().len(), 3, "one try and two retries");

    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let stub = StubEndpoint::start(move |_| match c.fetch_add(1, Ordering::SeqCst) {
        0 => (200, PAGE.into()),
        _ => (200, completion("recovered", 2)),
    });
    let chat = OpenAiChat::new(config(&stub.base_url)).unwrap();
    assert_eq!(chat.complete(&request()).unwrap().content, "recovered");
}

/// A message carrying images goes out as OpenAI content parts: its text, then one `image_url`
/// part per image; a message without images keeps plain content.
#[test]
fn images_are_sent_as_content_parts() {
    let stub = StubEndpoint::start(|_| (200, completion("a cat", 2)));
    let chat = OpenAiChat::new(config(&stub.base_url)).unwrap();
    let req = ChatRequest {
        messages: vec![
            ChatMessage::system("describe"),
            ChatMessage {
                images: vec!["https://example.org/cat.png".into()],
                ..ChatMessage::user("what is this?")
            },
        ],
        ..ChatRequest::default()
    };
    chat.complete(&req).unwrap();
    let body = &stub.requests()[0].1;
    assert_eq!(body["messages"][0]["content"], "describe");
    let parts = &body["messages"][1]["content"];
    assert_eq!(parts[0]["type"], "text");
    assert_eq!(parts[0]["text"], "what is this?");
    assert_eq!(parts[1]["type"], "image_url");
    assert_eq!(parts[1]["image_url"]["url"], "https://example.org/cat.png");
}
