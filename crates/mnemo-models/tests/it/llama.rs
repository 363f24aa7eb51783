//! The in-process GGUF chat model (`llama` feature) with the SmolLM2-135M-Instruct file that
//! `mnemo models install --llm` puts under the models dir. The model is tiny: these tests check
//! the plumbing (template, grammar, token accounting, errors), not the quality of its answers.

use crate::models_dir;
use mnemo_core::{ChatMessage, ChatModel, ChatRequest, ErrorKind};
use mnemo_models::{installed_llm_path, LlamaChat, LlamaConfig};
use std::sync::OnceLock;

/// One model for the whole test binary, two threads.
fn chat() -> &'static LlamaChat {
    static CHAT: OnceLock<LlamaChat> = OnceLock::new();
    CHAT.get_or_init(|| {
        let path = installed_llm_path(models_dir());
        assert!(
            path.is_file(),
            "the test chat model {} is not installed: run `mnemo models install --llm` \
             (or `cargo run -p mnemo-cli -- models install --llm`), or set MNEMO_MODELS_DIR",
            path.display()
        );
        let mut cfg = LlamaConfig::new(path);
        cfg.threads = 2;
        cfg.context_size = 2048;
        LlamaChat::new(cfg).unwrap_or_else(|e| panic!("loading the GGUF chat model failed: {e}"))
    })
}

/// A short extraction that even this tiny model closes in a few tokens, greedily: longer or
/// vaguer prompts make it ramble until the budget runs out (an error in JSON mode, by design).
fn extraction(json: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::system(
                "Extract the user's name and city. Answer with one JSON object and nothing else, \
                 like {\"name\": \"Ann\", \"city\": \"Paris\"}.",
            ),
            ChatMessage::user(
                "Hi, I'm Maya. I moved to Lisbon last month and I'm allergic to peanuts.",
            ),
        ],
        max_tokens: Some(128),
        temperature: None,
        json,
    }
}

#[test]
fn json_mode_returns_a_parseable_object_and_counts_tokens() {
    let resp = chat().complete(&extraction(true)).unwrap();
    let value: serde_json::Value = serde_json::from_str(&resp.content)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", resp.content));
    assert!(value.is_object(), "not an object: {value}");
    assert!(resp.usage.prompt_tokens > 20, "{:?}", resp.usage);
    assert!(resp.usage.completion_tokens > 0, "{:?}", resp.usage);
    assert!(resp.usage.completion_tokens <= 128, "{:?}", resp.usage);
}

#[test]
fn json_cut_off_by_max_tokens_is_a_model_output_error() {
    let mut req = extraction(true);
    req.max_tokens = Some(3);
    let err = chat().complete(&req).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ModelOutput, "{err}");
    assert!(err.to_string().contains("max_tokens=3"), "{err}");
}

#[test]
fn greedy_decoding_is_deterministic_and_respects_max_tokens() {
    let mut req = extraction(false);
    req.max_tokens = Some(12);
    let a = chat().complete(&req).unwrap();
    let b = chat().complete(&req).unwrap();
    assert_eq!(a.content, b.content);
    assert!(!a.content.is_empty());
    assert!(a.usage.completion_tokens <= 12, "{:?}", a.usage);
    assert_eq!(a.usage, b.usage);
}

#[test]
fn sampling_with_temperature_produces_text() {
    let mut req = extraction(false);
    req.max_tokens = Some(16);
    req.temperature = Some(0.8);
    let resp = chat().complete(&req).unwrap();
    assert!(resp.usage.completion_tokens > 0, "{:?}", resp.usage);
}

#[test]
fn chat_template_of_the_gguf_marks_the_roles() {
    let prompt = chat()
        .render_prompt(&[
            ChatMessage::system("Be brief."),
            ChatMessage::user("Hello?"),
        ])
        .unwrap();
    // SmolLM2 uses ChatML: every turn opens with <|im_start|>ROLE and closes with <|im_end|>, and
    // the prompt ends by opening the assistant's turn.
    assert!(
        prompt.contains("<|im_start|>system\nBe brief.<|im_end|>"),
        "{prompt}"
    );
    assert!(
        prompt.contains("<|im_start|>user\nHello?<|im_end|>"),
        "{prompt}"
    );
    assert!(
        prompt.trim_end().ends_with("<|im_start|>assistant"),
        "{prompt}"
    );
}

#[test]
fn model_id_names_the_file() {
    assert_eq!(
        chat().model_id(),
        "llama.cpp:SmolLM2-135M-Instruct.Q4_1.gguf"
    );
}

#[test]
fn a_prompt_longer_than_the_context_is_invalid_input() {
    let req = ChatRequest {
        messages: vec![ChatMessage::user("memory ".repeat(3000))],
        max_tokens: Some(16),
        ..ChatRequest::default()
    };
    let err = chat().complete(&req).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("context size 2048"), "{err}");
}

#[test]
fn a_missing_file_is_unavailable_and_names_the_path() {
    let err = LlamaChat::new(LlamaConfig::new("/nonexistent/dir/model.gguf")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    let msg = err.to_string();
    assert!(msg.contains("/nonexistent/dir/model.gguf"), "{msg}");
    assert!(msg.contains("mnemo models install --llm"), "{msg}");
}

#[test]
fn a_corrupt_file_is_invalid_input() {
    let dir = tempfile::tempdir().unwrap();
    // Right magic, garbage after it: llama.cpp itself has to reject it.
    let path = dir.path().join("broken.gguf");
    std::fs::write(&path, b"GGUF\x03\x00\x00\x00garbage").unwrap();
    let err = LlamaChat::new(LlamaConfig::new(&path)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
    assert!(err.to_string().contains("broken.gguf"), "{err}");
}
