//! The OpenAI-compatible embedder against a real HTTP endpoint on 127.0.0.1.

use mnemo_core::{Embedder, ErrorKind};
use mnemo_models::{
    load_embedder, model_family, EmbedderConfig, OpenAiEmbedder, OpenAiEmbedderConfig,
    MAX_EMBED_BATCH, MODEL_FAMILY,
};
use mnemo_testkit::stub_http::{embeddings, StubEndpoint};
use mnemo_testkit::HashEmbedder;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn config(base_url: &str) -> OpenAiEmbedderConfig {
    let mut cfg = OpenAiEmbedderConfig::new(base_url, "stub-embed");
    cfg.endpoint.backoff = Duration::from_millis(5);
    cfg.endpoint.timeout = Duration::from_secs(5);
    cfg
}

/// Answers every request with `dim`-dimensional vectors whose first value is the input's length.
fn by_length(dim: usize) -> impl Fn(&Value) -> (u16, String) + Send + Sync + 'static {
    move |body| {
        let input = body["input"].as_array().cloned().unwrap_or_default();
        let vectors: Vec<Vec<f32>> = input
            .iter()
            .map(|t| {
                let mut v = vec![0.0; dim];
                v[0] = t.as_str().unwrap_or("").len() as f32;
                v
            })
            .collect();
        (200, embeddings(&vectors))
    }
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the client reads its key from the variable its config names; each test sets a variable of its own"
)]
fn probe_gives_the_dimension_and_the_id_names_the_model() {
    let stub = StubEndpoint::embeddings(12);
    std::env::set_var("MNEMO_TEST_EMBED_KEY", "sk-embed-1");
    let mut cfg = config(&stub.base_url);
    cfg.endpoint.api_key_env = Some("MNEMO_TEST_EMBED_KEY".into());
    let e = OpenAiEmbedder::new(cfg.clone()).unwrap();
    assert_eq!(e.dimension(), 12);
    let host = stub
        .base_url
        .trim_start_matches("http://")
        .trim_end_matches("/v1");
    assert_eq!(e.model_id(), format!("openai:stub-embed/{host}"));
    assert_ne!(model_family(e.model_id()), MODEL_FAMILY);
    let seen = stub.requests();
    assert_eq!(seen.len(), 1, "construction sends exactly the probe");
    assert_eq!(seen[0].0, "Bearer sk-embed-1");
    assert_eq!(seen[0].1["model"], "stub-embed");
    assert_eq!(seen[0].1["input"].as_array().unwrap().len(), 1);
    assert_eq!(stub.paths(), vec!["/v1/embeddings".to_string()]);
    assert!(
        !format!("{e:?}").contains("sk-embed"),
        "Debug never prints the key"
    );

    // A configured dimension is checked against the probe, never trusted instead of it.
    cfg.dimension = Some(12);
    assert_eq!(OpenAiEmbedder::new(cfg.clone()).unwrap().dimension(), 12);
    cfg.dimension = Some(384);
    let err = OpenAiEmbedder::new(cfg).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(
        err.to_string().contains("384") && err.to_string().contains("12"),
        "{err}"
    );

    // The configuration entry point builds the same embedder.
    let loaded = load_embedder(&EmbedderConfig::openai(config(&stub.base_url))).unwrap();
    assert_eq!(loaded.dimension(), 12);
}

#[test]
fn batching_splits_requests_and_reorders_by_index() {
    let stub = StubEndpoint::embeddings(16);
    let e = OpenAiEmbedder::new(config(&stub.base_url)).unwrap();
    let texts: Vec<String> = (0..300)
        .map(|i| format!("note {i} about topic {}", i % 7))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let out = e.embed(&refs).unwrap();
    assert_eq!(out.len(), 300);
    for (t, v) in texts.iter().zip(&out) {
        let want = HashEmbedder::vector_in(t, 16);
        let diff: f32 = v.iter().zip(&want).map(|(a, b)| (a - b).abs()).sum();
        assert!(diff < 1e-5, "vector of {t:?} is another text's");
    }
    let sizes: Vec<usize> = stub.requests()[1..]
        .iter()
        .map(|(_, body)| body["input"].as_array().unwrap().len())
        .collect();
    assert_eq!(
        sizes,
        vec![MAX_EMBED_BATCH, MAX_EMBED_BATCH, 300 - 2 * MAX_EMBED_BATCH]
    );

    // A smaller configured batch is honoured; an empty input asks for nothing.
    let mut cfg = config(&stub.base_url);
    cfg.batch_size = 7;
    let small = OpenAiEmbedder::new(cfg).unwrap();
    let before = stub.requests().len();
    assert_eq!(small.embed(&refs[..20]).unwrap(), out[..20].to_vec());
    assert!(small.embed(&[]).unwrap().is_empty());
    assert_eq!(
        stub.requests().len() - before,
        3,
        "20 texts in batches of 7"
    );
}

#[test]
fn vectors_are_normalised_unless_the_flag_says_not_to() {
    let stub = StubEndpoint::start(|body| {
        let n = body["input"].as_array().map_or(0, Vec::len);
        (200, embeddings(&vec![vec![3.0, 4.0]; n]))
    });
    let e = OpenAiEmbedder::new(config(&stub.base_url)).unwrap();
    assert_eq!(e.embed(&["x"]).unwrap(), vec![vec![0.6, 0.8]]);
    let mut cfg = config(&stub.base_url);
    cfg.normalize = false;
    let raw = OpenAiEmbedder::new(cfg).unwrap();
    assert_eq!(raw.embed(&["x"]).unwrap(), vec![vec![3.0, 4.0]]);
}

#[test]
fn server_errors_are_retried_then_succeed() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let ok = by_length(4);
    let stub = StubEndpoint::start(move |body| match c.fetch_add(1, Ordering::SeqCst) {
        0 => (500, "{\"error\":\"boom\"}".into()),
        1 => (503, "{\"error\":\"warming up\"}".into()),
        3 => (429, "{\"error\":\"slow down\"}".into()),
        _ => ok(body),
    });
    let e = OpenAiEmbedder::new(config(&stub.base_url)).unwrap();
    assert_eq!(e.dimension(), 4);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        3,
        "probe: two failures, one success"
    );
    let v = e.embed(&["abc"]).unwrap();
    assert_eq!(v, vec![vec![1.0, 0.0, 0.0, 0.0]]);
    assert_eq!(calls.load(Ordering::SeqCst), 5, "a 429, then the answer");

    // Retries exhausted: the last failure comes back, typed as retryable.
    let stub = StubEndpoint::start(|_| (502, "{\"error\":\"bad gateway\"}".into()));
    let mut cfg = config(&stub.base_url);
    cfg.endpoint.max_retries = 2;
    let err = OpenAiEmbedder::new(cfg).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable);
    assert!(err.to_string().contains("502"), "{err}");
    assert_eq!(stub.requests().len(), 3, "one try and two retries");
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the client reads its key from the variable its config names; each test sets a variable of its own"
)]
fn a_refused_key_is_a_typed_error_and_not_retried() {
    let stub = StubEndpoint::start(|_| (401, "{\"error\":\"invalid api key\"}".into()));
    std::env::set_var("MNEMO_TEST_EMBED_BAD_KEY", "sk-wrong");
    let mut cfg = config(&stub.base_url);
    cfg.endpoint.api_key_env = Some("MNEMO_TEST_EMBED_BAD_KEY".into());
    let err = OpenAiEmbedder::new(cfg).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let msg = err.to_string();
    assert!(
        msg.contains("401") && msg.contains("MNEMO_TEST_EMBED_BAD_KEY"),
        "{msg}"
    );
    assert!(
        !msg.contains("sk-wrong"),
        "the key itself is never echoed: {msg}"
    );
    assert_eq!(stub.requests().len(), 1);

    // A missing variable fails before any request.
    let mut cfg = config(&stub.base_url);
    cfg.endpoint.api_key_env = Some("MNEMO_TEST_EMBED_UNSET_VAR".into());
    let err = OpenAiEmbedder::new(cfg).unwrap_err();
    assert!(
        err.to_string().contains("MNEMO_TEST_EMBED_UNSET_VAR"),
        "{err}"
    );
    assert_eq!(stub.requests().len(), 1);
}

/// An endpoint that answers the probe properly and every later request with `later`.
fn probe_then(later: &'static str) -> StubEndpoint {
    let calls = AtomicUsize::new(0);
    let ok = by_length(3);
    StubEndpoint::start(move |body| {
        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
            ok(body)
        } else {
            (200, later.to_string())
        }
    })
}

/// A 2xx body that is not JSON at all is what a failing proxy sends (its HTML error page): a
/// retryable `unavailable` after the retries, not a defect.
#[test]
fn a_2xx_body_that_is_not_json_is_retried_and_unavailable() {
    let stub = probe_then("<html>gateway</html>");
    let e = OpenAiEmbedder::new(config(&stub.base_url)).unwrap();
    let err = e.embed(&["hello"]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(err.to_string().contains("not JSON"), "{err}");
    assert!(stub.requests().len() > 2, "the proxy's answer is retried");
}

#[test]
fn a_malformed_body_is_an_error() {
    for (body, why) in [
        (r#"{"object":"list"}"#, "no `data`"),
        (
            r#"{"data":[{"index":0,"embedding":"AAAAAA=="}]}"#,
            "not a list",
        ),
        (r#"{"data":[{"embedding":[1,2,3]}]}"#, "no integer `index`"),
        (r#"{"data":[{"index":0,"embedding":[1,2]}]}"#, "expected 3"),
        (
            r#"{"data":[{"index":0,"embedding":[1e39,0,0]}]}"#,
            "non-finite",
        ),
        (
            r#"{"data":[{"index":0,"embedding":[0,0,0]}]}"#,
            "zero vector",
        ),
    ] {
        let stub = probe_then(body);
        let e = OpenAiEmbedder::new(config(&stub.base_url)).unwrap();
        let err = e.embed(&["hello"]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Internal, "{body}");
        assert!(err.to_string().contains(why), "{body}: {err}");
        assert_eq!(
            stub.requests().len(),
            2,
            "a malformed answer is not retried"
        );
    }
}

#[test]
fn a_wrong_count_is_an_error() {
    let fewer =
        probe_then(r#"{"data":[{"index":0,"embedding":[1,0,0]},{"index":1,"embedding":[0,1,0]}]}"#);
    let e = OpenAiEmbedder::new(config(&fewer.base_url)).unwrap();
    let err = e.embed(&["a", "b", "c"]).unwrap_err();
    assert!(
        err.to_string().contains("2 embeddings for 3 inputs"),
        "{err}"
    );

    let duplicated =
        probe_then(r#"{"data":[{"index":0,"embedding":[1,0,0]},{"index":0,"embedding":[0,1,0]}]}"#);
    let e = OpenAiEmbedder::new(config(&duplicated.base_url)).unwrap();
    let err = e.embed(&["a", "b"]).unwrap_err();
    assert!(err.to_string().contains("twice"), "{err}");
}
