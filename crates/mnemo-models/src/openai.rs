//! The OpenAI-compatible chat provider: one client for OpenAI, Ollama, vLLM, llama.cpp's server
//! and OpenRouter, which all speak `POST {base_url}/chat/completions`.
//!
//! Failures are typed: a missing key or a 4xx other than 429 is not retried; 429, 5xx, timeouts
//! and connection errors are retried with jittered exponential backoff (honouring `Retry-After`
//! in seconds), and the last failure is returned as an error — never as an empty completion.
//! The HTTP half (key, agent, retries) lives in `http.rs`, shared with the embedder.

use mnemo_core::{ChatModel, ChatRequest, ChatResponse, Error, Result, TokenUsage};
use serde_json::{json, Value};
use std::time::Duration;

use crate::http::JsonClient;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// E.g. `http://127.0.0.1:11434/v1`; the operation's path (`/chat/completions`,
    /// `/embeddings`) is appended.
    pub base_url: String,
    pub model: String,
    /// The environment variable holding the API key; `None` sends no key (local servers).
    pub api_key_env: Option<String>,
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Base of the exponential backoff.
    pub backoff: Duration,
}

impl OpenAiConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            api_key_env: None,
            timeout: Duration::from_secs(60),
            max_retries: 3,
            backoff: Duration::from_millis(500),
        }
    }
}

pub struct OpenAiChat {
    cfg: OpenAiConfig,
    id: String,
    client: JsonClient,
}

impl std::fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("OpenAiChat")
            .field("base_url", &self.cfg.base_url)
            .field("model", &self.cfg.model)
            .finish_non_exhaustive()
    }
}

impl OpenAiChat {
    /// Reads the key from the configured environment variable now, so a missing key fails at
    /// start-up rather than on the first call.
    pub fn new(cfg: OpenAiConfig) -> Result<Self> {
        let client = JsonClient::new(&cfg, "chat model")?;
        Ok(Self {
            id: format!("openai-compatible:{}", cfg.model),
            cfg,
            client,
        })
    }

    fn body(&self, req: &ChatRequest) -> Value {
        let messages: Vec<Value> = req.messages.iter().map(message_json).collect();
        let mut body = json!({ "model": self.cfg.model, "messages": messages });
        if let Some(t) = req.max_tokens {
            body["max_tokens"] = json!(t);
        }
        if let Some(t) = req.temperature {
            body["temperature"] = json!(t);
        }
        if req.json {
            body["response_format"] = json!({ "type": "json_object" });
        }
        body
    }
}

/// A message as the endpoint takes it: plain content, or a text part and one `image_url` part
/// per image when the message carries images.
fn message_json(m: &mnemo_core::ChatMessage) -> Value {
    if m.images.is_empty() {
        return json!({ "role": m.role, "content": m.content });
    }
    let mut parts = vec![json!({ "type": "text", "text": m.content })];
    parts.extend(
        m.images
            .iter()
            .map(|url| json!({ "type": "image_url", "image_url": { "url": url } })),
    );
    json!({ "role": m.role, "content": parts })
}

/// Reads the first choice's text and the usage of a completion body.
pub fn parse_completion(text: &str) -> Result<ChatResponse> {
    let v: Value = serde_json::from_str(text).map_err(|e| Error::Model {
        reason: format!("the endpoint's answer is not JSON: {e}"),
    })?;
    let content = v
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::Model {
            reason: "the endpoint's answer has no choices[0].message.content".into(),
        })?
        .to_string();
    let usage = TokenUsage {
        prompt_tokens: v
            .pointer("/usage/prompt_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        completion_tokens: v
            .pointer("/usage/completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    };
    Ok(ChatResponse { content, usage })
}

impl ChatModel for OpenAiChat {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn complete(&self, req: &ChatRequest) -> Result<ChatResponse> {
        if req.messages.is_empty() {
            return Err(Error::invalid("messages", "must not be empty"));
        }
        self.client
            .post("chat/completions", &self.body(req), parse_completion)
    }
}
