//! The OpenAI-compatible chat provider: one client for OpenAI, Ollama, vLLM, llama.cpp's server
//! and OpenRouter, which all speak `POST {base_url}/chat/completions`.
//!
//! Failures are typed: a missing key or a 4xx other than 429 is not retried; 429, 5xx, timeouts
//! and connection errors are retried with jittered exponential backoff (honouring `Retry-After`
//! in seconds), and the last failure is returned as an error — never as an empty completion.

use mnemo_core::{ChatModel, ChatRequest, ChatResponse, Error, Result, TokenUsage};
use serde_json::{json, Value};
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiConfig {
    /// E.g. `http://127.0.0.1:11434/v1`; `/chat/completions` is appended.
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
    key: Option<String>,
    agent: ureq::Agent,
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

/// One failed attempt: whether another may succeed, and what went wrong.
struct Attempt {
    retry: bool,
    retry_after: Option<Duration>,
    error: Error,
}

impl OpenAiChat {
    /// Reads the key from the configured environment variable now, so a missing key fails at
    /// start-up rather than on the first call.
    pub fn new(cfg: OpenAiConfig) -> Result<Self> {
        if cfg.model.trim().is_empty() {
            return Err(Error::invalid("model", "must not be empty"));
        }
        if !(cfg.base_url.starts_with("http://") || cfg.base_url.starts_with("https://")) {
            return Err(Error::invalid(
                "base_url",
                format!("{:?} must start with http:// or https://", cfg.base_url),
            ));
        }
        let key = match &cfg.api_key_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                Error::invalid(
                    "api_key_env",
                    format!("the environment variable {var} is not set"),
                )
            })?),
            None => None,
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(cfg.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(Self {
            id: format!("openai-compatible:{}", cfg.model),
            cfg,
            key,
            agent,
        })
    }

    fn url(&self) -> String {
        format!(
            "{}/chat/completions",
            self.cfg.base_url.trim_end_matches('/')
        )
    }

    fn body(&self, req: &ChatRequest) -> Value {
        let mut body = json!({ "model": self.cfg.model, "messages": req.messages });
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

    fn attempt(&self, body: &Value) -> std::result::Result<ChatResponse, Attempt> {
        let mut call = self.agent.post(&self.url());
        if let Some(k) = &self.key {
            call = call.header("Authorization", &format!("Bearer {k}"));
        }
        let mut resp = call.send_json(body).map_err(|e| {
            let timeout = matches!(e, ureq::Error::Timeout(_));
            Attempt {
                // Transport failures (refused, reset, timed out) may pass.
                retry: true,
                retry_after: None,
                error: Error::Unavailable {
                    component: "chat model".into(),
                    reason: if timeout {
                        format!("no answer within {:?}", self.cfg.timeout)
                    } else {
                        e.to_string()
                    },
                },
            }
        })?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let text = resp.body_mut().read_to_string().unwrap_or_default();
        if status != 200 {
            let detail: String = text.chars().take(300).collect();
            return Err(Attempt {
                retry: status == 429 || status >= 500,
                retry_after,
                error: if status == 429 {
                    Error::Unavailable {
                        component: "chat model".into(),
                        reason: format!("rate limited (429): {detail}"),
                    }
                } else if status >= 500 {
                    Error::Unavailable {
                        component: "chat model".into(),
                        reason: format!("status {status}: {detail}"),
                    }
                } else {
                    Error::Model {
                        reason: format!("the endpoint refused the request ({status}): {detail}"),
                    }
                },
            });
        }
        parse_completion(&text).map_err(|error| Attempt {
            retry: false,
            retry_after: None,
            error,
        })
    }

    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d.min(Duration::from_secs(60));
        }
        let exp = self.cfg.backoff.saturating_mul(1u32 << attempt.min(6));
        // Full jitter: anywhere between half and all of the exponential step.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let frac = 0.5 + (nanos % 1000) as f64 / 2000.0;
        exp.mul_f64(frac)
    }
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
        let body = self.body(req);
        let mut attempt = 0;
        loop {
            match self.attempt(&body) {
                Ok(r) => return Ok(r),
                Err(a) if a.retry && attempt < self.cfg.max_retries => {
                    let wait = self.delay(attempt, a.retry_after);
                    tracing::warn!(attempt, ?wait, error = %a.error, "chat call failed; retrying");
                    std::thread::sleep(wait);
                    attempt += 1;
                }
                Err(a) => return Err(a.error),
            }
        }
    }
}
