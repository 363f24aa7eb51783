//! The chat-model seam: every pipeline that needs a language model (answering in `mnemo eval`,
//! extraction and reconciliation later) talks to a `ChatModel`, never to a provider directly.
//!
//! Implementations: the OpenAI-compatible HTTP provider in `mnemo-models` (OpenAI, Ollama, vLLM,
//! llama.cpp's server, OpenRouter) and the scripted model in `mnemo-testkit`.

use crate::error::Result;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
    /// Images the model is shown with the text (`http(s)` or `data:` URLs); only for a model
    /// configured as reading images (`llm.vision`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<String>,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::System,
            content: content.into(),
            images: Vec::new(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::User,
            content: content.into(),
            images: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
    /// Ask for a JSON object when the endpoint supports it.
    pub json: bool,
}

/// Tokens a call consumed, as the provider reported them (0 when it reported nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub content: String,
    pub usage: TokenUsage,
}

/// A chat completion model.
///
/// `complete` blocks (callers in async code run it on a blocking thread). It returns the model's
/// text, possibly empty; every failure — transport, status, a body that is not a completion — is
/// an `Err`, so an outage can never pass for an empty answer. Retries, if any, happen inside.
pub trait ChatModel: Send + Sync {
    /// A stable name for reports and logs (`provider:model`).
    fn model_id(&self) -> &str;
    fn complete(&self, req: &ChatRequest) -> Result<ChatResponse>;
}
