//! The memory correctness suite: with the scripted model every check passes; a model that
//! extracts nothing, or an endpoint answering nonsense, scores below 1 with the failures named.

use mnemo_core::pipeline::InferConfig;
use mnemo_core::{ChatModel, ChatRequest, ChatResponse, Embedder, TokenUsage};
use mnemo_eval::correctness::{load, run_correctness};
use mnemo_models::{OpenAiChat, OpenAiConfig};
use mnemo_testkit::stub_http::{completion, StubEndpoint};
use mnemo_testkit::HashEmbedder;
use std::sync::Arc;

fn embedder() -> Arc<dyn Embedder> {
    Arc::new(HashEmbedder)
}

#[tokio::test]
async fn every_builtin_scenario_passes_with_the_scripted_model() {
    let scenarios = load(None).unwrap();
    assert!(scenarios.len() >= 7);
    let report = run_correctness(&scenarios, embedder(), None, InferConfig::default())
        .await
        .unwrap();
    for s in &report.scenarios {
        let failed: Vec<_> = s.checks.iter().filter(|c| !c.passed).collect();
        assert!(
            failed.is_empty() && s.error.is_none(),
            "{}: {failed:?} {:?}",
            s.name,
            s.error
        );
        assert!(s.total >= 2, "{} checks something", s.name);
        assert!(
            s.model_calls >= s.total.min(2),
            "{} called the model",
            s.name
        );
    }
    assert_eq!(report.score, 1.0);
    assert_eq!(report.model, "scripted");
}

struct ForgetsEverything;

impl ChatModel for ForgetsEverything {
    fn model_id(&self) -> &str {
        "test:empty"
    }
    fn complete(&self, _: &ChatRequest) -> mnemo_core::Result<ChatResponse> {
        Ok(ChatResponse {
            content: r#"{"facts": []}"#.into(),
            usage: TokenUsage::default(),
        })
    }
}

#[tokio::test]
async fn a_model_that_extracts_nothing_fails_the_checks_it_should() {
    let scenarios = load(None).unwrap();
    let report = run_correctness(
        &scenarios,
        embedder(),
        Some(Arc::new(ForgetsEverything)),
        InferConfig::default(),
    )
    .await
    .unwrap();
    assert_eq!(report.model, "test:empty");
    assert!(report.score < 0.5, "score {}", report.score);
    let moves = report
        .scenarios
        .iter()
        .find(|s| s.name == "moves-city")
        .unwrap();
    assert!(moves
        .checks
        .iter()
        .any(|c| !c.passed && c.check.contains("Lisbon")));
}

#[tokio::test]
async fn a_real_endpoint_is_scored_and_its_failures_reported_not_hidden() {
    // An OpenAI-compatible endpoint that answers every call with prose: each add fails with a
    // model-output error, which the report names, and the score reflects it.
    let stub = StubEndpoint::start(|_| (200, completion("I would rather not.", 12)));
    let mut cfg = OpenAiConfig::new(stub.base_url.clone(), "stub-model");
    cfg.max_retries = 0;
    let model: Arc<dyn ChatModel> = Arc::new(OpenAiChat::new(cfg).unwrap());
    let scenarios = load(None).unwrap();
    let report = run_correctness(
        &scenarios[..1],
        embedder(),
        Some(model),
        InferConfig::default(),
    )
    .await
    .unwrap();
    let s = &report.scenarios[0];
    assert!(
        s.error.as_deref().unwrap_or("").contains("unusable output"),
        "{:?}",
        s.error
    );
    assert!(report.score < 1.0);
    assert!(!stub.requests().is_empty());
}
