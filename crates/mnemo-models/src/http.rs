//! The HTTP half shared by the OpenAI-compatible providers ([`OpenAiChat`](crate::OpenAiChat)
//! and [`OpenAiEmbedder`](crate::OpenAiEmbedder)): configuration checks, the API key read from
//! the environment, one `ureq` agent with a global timeout, and `POST` with retries.
//!
//! Retry policy: transport failures (refused, reset, timed out), 429 and 5xx are retried with
//! jittered exponential backoff, honouring `Retry-After` in seconds (capped at a minute). Any
//! other non-2xx answer fails at once: 401/403 as a rejected API key (invalid input: the
//! configuration must change), the rest as a model error quoting the status. What the caller's
//! parser rejects is never retried — a malformed answer is not transient.

use crate::OpenAiConfig;
use mnemo_core::{Error, Result};
use serde_json::Value;
use std::time::Duration;

/// The longest model call timeout accepted: a day.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(86_400);

/// A checked endpoint: base URL, key and agent, ready to post JSON.
pub(crate) struct JsonClient {
    base_url: String,
    key: Option<String>,
    key_env: Option<String>,
    agent: ureq::Agent,
    timeout: Duration,
    max_retries: u32,
    backoff: Duration,
    /// Names the dependency in errors ("chat model", "embedding model").
    component: &'static str,
}

/// One failed attempt: whether another may succeed, and what went wrong.
struct Attempt {
    retry: bool,
    retry_after: Option<Duration>,
    error: Error,
}

impl JsonClient {
    /// Checks the model name and URL scheme and reads the key now, so a bad configuration fails
    /// at start-up rather than on the first call.
    pub(crate) fn new(cfg: &OpenAiConfig, component: &'static str) -> Result<Self> {
        if cfg.model.trim().is_empty() {
            return Err(Error::invalid("model", "must not be empty"));
        }
        if !(cfg.base_url.starts_with("http://") || cfg.base_url.starts_with("https://")) {
            return Err(Error::invalid(
                "base_url",
                format!("{:?} must start with http:// or https://", cfg.base_url),
            ));
        }
        // ureq adds the timeout to the current instant, which overflows (a panic on the first
        // call) for values near `u64::MAX` seconds.
        if cfg.timeout.is_zero() || cfg.timeout > MAX_TIMEOUT {
            return Err(Error::invalid(
                "timeout",
                format!("must be between 1 ms and {} seconds", MAX_TIMEOUT.as_secs()),
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
            base_url: cfg.base_url.trim_end_matches('/').to_string(),
            key,
            key_env: cfg.api_key_env.clone(),
            agent,
            timeout: cfg.timeout,
            max_retries: cfg.max_retries,
            backoff: cfg.backoff,
            component,
        })
    }

    /// Posts `body` to `{base_url}/{path}` until a 2xx answer arrives or retries run out, then
    /// hands the answer's text to `parse`. The last failure is returned, never an empty answer.
    pub(crate) fn post<T>(
        &self,
        path: &str,
        body: &Value,
        parse: impl Fn(&str) -> Result<T>,
    ) -> Result<T> {
        let url = format!("{}/{}", self.base_url, path.trim_start_matches('/'));
        let mut attempt = 0;
        loop {
            match self
                .attempt(&url, body)
                .and_then(|text| self.json_answer(text))
            {
                Ok(text) => return parse(&text),
                Err(a) if a.retry && attempt < self.max_retries => {
                    let wait = self.delay(attempt, a.retry_after);
                    tracing::warn!(
                        component = self.component,
                        attempt,
                        ?wait,
                        // The error quotes the provider's answer, which may echo content.
                        error_kind = a.error.kind().as_str(),
                        "model call failed; retrying"
                    );
                    std::thread::sleep(wait);
                    attempt += 1;
                }
                Err(a) => return Err(a.error),
            }
        }
    }

    /// A 2xx answer that is not JSON at all is what a proxy or gateway in front of the endpoint
    /// sends when it fails (an HTML error page with status 200): as transient as a 502, so
    /// retried and finally reported as unavailable, never as a defect of mnemo. JSON that is
    /// not a completion stays the parser's (non-retryable) error.
    fn json_answer(&self, text: String) -> std::result::Result<String, Attempt> {
        if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() {
            return Ok(text);
        }
        let head: String = text.trim_start().chars().take(80).collect();
        Err(Attempt {
            retry: true,
            retry_after: None,
            error: Error::Unavailable {
                component: self.component.into(),
                reason: format!(
                    "the endpoint answered 2xx with a body that is not JSON ({} bytes, starting {head:?}); a proxy in front of it may be failing",
                    text.len()
                ),
            },
        })
    }

    fn attempt(&self, url: &str, body: &Value) -> std::result::Result<String, Attempt> {
        let mut call = self.agent.post(url);
        if let Some(k) = &self.key {
            call = call.header("Authorization", &format!("Bearer {k}"));
        }
        let mut resp = call.send_json(body).map_err(|e| Attempt {
            retry: true,
            retry_after: None,
            error: Error::Unavailable {
                component: self.component.into(),
                reason: if matches!(e, ureq::Error::Timeout(_)) {
                    format!("no answer within {:?}", self.timeout)
                } else {
                    e.to_string()
                },
            },
        })?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let read = resp.body_mut().read_to_string();
        if (200..300).contains(&status) {
            // A 2xx whose body cannot be read is a broken transfer, as retryable as a reset.
            return read.map_err(|e| Attempt {
                retry: true,
                retry_after: None,
                error: Error::Unavailable {
                    component: self.component.into(),
                    reason: format!("reading the answer failed: {e}"),
                },
            });
        }
        let detail: String = read.unwrap_or_default().chars().take(300).collect();
        Err(Attempt {
            retry: status == 429 || status >= 500,
            retry_after,
            error: self.status_error(status, &detail),
        })
    }

    fn status_error(&self, status: u16, detail: &str) -> Error {
        let component = self.component.to_string();
        match status {
            429 => Error::Unavailable {
                component,
                reason: format!("rate limited (429): {detail}"),
            },
            s if s >= 500 => Error::Unavailable {
                component,
                reason: format!("status {s}: {detail}"),
            },
            401 | 403 => Error::invalid(
                "api key",
                format!(
                    "the {component} endpoint refused the credentials ({status}){}: {detail}",
                    match &self.key_env {
                        Some(var) => format!("; check the key in ${var}"),
                        None => "; no key was sent (set an API key environment variable)".into(),
                    }
                ),
            ),
            s => Error::Model {
                reason: format!("the endpoint refused the request ({s}): {detail}"),
            },
        }
    }

    fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d.min(Duration::from_secs(60));
        }
        let exp = self.backoff.saturating_mul(1u32 << attempt.min(6));
        // Jitter: anywhere between half and all of the exponential step, so clients that failed
        // together do not retry together.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let frac = 0.5 + (nanos % 1000) as f64 / 2000.0;
        exp.mul_f64(frac)
    }
}

/// The host (and port) of a base URL, for model ids: `http://127.0.0.1:8080/v1` → `127.0.0.1:8080`.
pub(crate) fn host_of(base_url: &str) -> &str {
    let rest = base_url
        .split_once("://")
        .map_or(base_url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    // Credentials in the URL never reach an id that is stored and printed.
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_is_the_authority_without_credentials() {
        assert_eq!(host_of("https://api.openai.com/v1"), "api.openai.com");
        assert_eq!(host_of("http://127.0.0.1:8080/v1/"), "127.0.0.1:8080");
        assert_eq!(host_of("http://u:p@example.org"), "example.org");
    }

    #[test]
    fn timeouts_are_bounded() {
        let mut cfg = OpenAiConfig::new("http://127.0.0.1:9/v1", "m");
        for (secs, ok) in [
            (1, true),
            (86_400, true),
            (0, false),
            (86_401, false),
            (u64::MAX, false),
        ] {
            cfg.timeout = Duration::from_secs(secs);
            assert_eq!(JsonClient::new(&cfg, "test").is_ok(), ok, "{secs}");
        }
    }

    #[test]
    fn backoff_grows_and_retry_after_wins() {
        let mut cfg = OpenAiConfig::new("http://127.0.0.1:9/v1", "m");
        cfg.backoff = Duration::from_millis(100);
        let c = JsonClient::new(&cfg, "test").unwrap();
        let first = c.delay(0, None);
        assert!(first >= Duration::from_millis(50) && first <= Duration::from_millis(100));
        let third = c.delay(2, None);
        assert!(third >= Duration::from_millis(200) && third <= Duration::from_millis(400));
        assert_eq!(
            c.delay(0, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(
            c.delay(0, Some(Duration::from_secs(600))),
            Duration::from_secs(60)
        );
    }
}
