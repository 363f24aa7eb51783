//! The OpenAI-compatible embedder: `POST {base_url}/embeddings` with `{"model", "input": [...]}`,
//! answered by `{"data": [{"index", "embedding": [...]}], "usage": {...}}` — the protocol of
//! OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio and OpenRouter.
//!
//! The dimension is never assumed: construction embeds a short probe text and takes its length
//! (a configured dimension is only an assertion checked against the probe). Inputs go out in
//! requests of at most [`MAX_EMBED_BATCH`] texts; answers are put back in input order by their
//! `index`. Every failure — transport, status, malformed body, wrong count, a vector of the wrong
//! length or with non-finite values — is an error, never a short or zero result.
//!
//! Model ids are `openai:{model}/{host}`: the family (the part before the first `/`, which the
//! store compares) names the model, so a store written by one remote model refuses another, and
//! both refuse the local MiniLM family; the host after the `/` only tells endpoints apart.

use crate::http::{host_of, JsonClient};
use crate::OpenAiConfig;
use mnemo_core::embed::l2_normalize;
use mnemo_core::{Embedder, Error, Result};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};

/// The most texts sent in one request (providers cap it; OpenAI at 2048, others far lower).
pub const MAX_EMBED_BATCH: usize = 128;

/// The text embedded at construction to learn the dimension.
const PROBE_TEXT: &str = "mnemo dimension probe";

/// Everything [`OpenAiEmbedder::new`] needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenAiEmbedderConfig {
    /// Endpoint, model, key variable, timeout and retries (shared with the chat provider).
    pub endpoint: OpenAiConfig,
    /// The dimension the caller expects; `None` accepts whatever the probe returns.
    pub dimension: Option<usize>,
    /// L2-normalise returned vectors. On by default: mnemo ranks by cosine on unit vectors, and
    /// not every server normalises. Turn off only for a server known to return unit vectors.
    pub normalize: bool,
    /// Texts per request, 1..=[`MAX_EMBED_BATCH`] (out-of-range values are clamped).
    pub batch_size: usize,
}

impl OpenAiEmbedderConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            endpoint: OpenAiConfig::new(base_url, model),
            dimension: None,
            normalize: true,
            batch_size: MAX_EMBED_BATCH,
        }
    }
}

pub struct OpenAiEmbedder {
    cfg: OpenAiEmbedderConfig,
    id: String,
    dim: usize,
    client: JsonClient,
    prompt_tokens: AtomicU64,
}

impl std::fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the key.
        f.debug_struct("OpenAiEmbedder")
            .field("model_id", &self.id)
            .field("dimension", &self.dim)
            .finish_non_exhaustive()
    }
}

/// `openai:{model}/{host}`, with `/` and `%` in the model name escaped so that the family (the
/// part before the first `/`) is the whole model name: OpenRouter's `openai/text-embedding-3-small`
/// must not share a family with `openai/text-embedding-3-large`.
pub fn openai_model_id(model: &str, base_url: &str) -> String {
    let escaped = model.trim().replace('%', "%25").replace('/', "%2F");
    format!("openai:{escaped}/{}", host_of(base_url))
}

impl OpenAiEmbedder {
    /// Checks the configuration, reads the key, and embeds a probe text to learn the dimension.
    /// An unreachable endpoint, a refused key or a dimension other than the configured one fails
    /// here, before any store is bound.
    pub fn new(cfg: OpenAiEmbedderConfig) -> Result<Self> {
        if cfg.dimension == Some(0) {
            return Err(Error::invalid("dimension", "must be positive"));
        }
        let client = JsonClient::new(&cfg.endpoint, "embedding model")?;
        let mut this = Self {
            id: openai_model_id(&cfg.endpoint.model, &cfg.endpoint.base_url),
            cfg,
            dim: 0,
            client,
            prompt_tokens: AtomicU64::new(0),
        };
        let probe = this.request(&[PROBE_TEXT])?;
        // `request` checks one non-empty vector per input; should that ever change, an empty
        // answer is an error here, not a panic.
        let dim = probe.first().map(Vec::len).ok_or_else(|| Error::Model {
            reason: "the endpoint returned no vector for the probe text".into(),
        })?;
        if let Some(expected) = this.cfg.dimension {
            if expected != dim {
                return Err(Error::invalid(
                    "dimension",
                    format!(
                        "configured as {expected}, but {} returns {dim}-dimensional vectors",
                        this.id
                    ),
                ));
            }
        }
        this.dim = dim;
        Ok(this)
    }

    /// Prompt tokens the endpoint reported over this embedder's life (0 when it reports none).
    pub fn prompt_tokens(&self) -> u64 {
        self.prompt_tokens.load(Ordering::Relaxed)
    }

    /// One request for `texts`, checked and reordered by `index`.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let body = json!({ "model": self.cfg.endpoint.model, "input": texts });
        let (vectors, tokens) = self.client.post("embeddings", &body, |text| {
            parse_embeddings(text, texts.len(), self.dim)
        })?;
        self.prompt_tokens.fetch_add(tokens, Ordering::Relaxed);
        vectors
            .into_iter()
            .enumerate()
            .map(|(i, mut v)| {
                // A zero vector has no direction: cosine against it means nothing.
                if v.iter().all(|x| *x == 0.0) {
                    return Err(Error::Model {
                        reason: format!("the endpoint returned a zero vector for input {i}"),
                    });
                }
                if self.cfg.normalize {
                    l2_normalize(&mut v);
                }
                Ok(v)
            })
            .collect()
    }
}

/// Reads an embeddings answer for `expected` inputs: one vector per input, placed by its `index`,
/// each of `dim` finite values (`dim == 0`: any length, but all alike). Returns the vectors in
/// input order and the prompt tokens reported.
pub fn parse_embeddings(text: &str, expected: usize, dim: usize) -> Result<(Vec<Vec<f32>>, u64)> {
    let bad = |reason: String| Error::Model {
        reason: format!("malformed embeddings answer: {reason}"),
    };
    let v: Value =
        serde_json::from_str(text).map_err(|e| bad(format!("the body is not JSON ({e})")))?;
    let data = v
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no `data` list".into()))?;
    if data.len() != expected {
        return Err(bad(format!(
            "{} embeddings for {expected} inputs",
            data.len()
        )));
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    let mut width = dim;
    for (pos, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| bad(format!("data[{pos}] has no integer `index`")))?;
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| slots.get_mut(i))
            .ok_or_else(|| bad(format!("index {index} is outside 0..{expected}")))?;
        if slot.is_some() {
            return Err(bad(format!("index {index} appears twice")));
        }
        let values = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| bad(format!("data[{pos}].embedding is not a list of numbers")))?;
        let vector = values
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32).filter(|f| f.is_finite()))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| {
                bad(format!(
                    "data[{pos}].embedding holds a non-number or non-finite value"
                ))
            })?;
        if vector.is_empty() {
            return Err(bad(format!("data[{pos}].embedding is empty")));
        }
        if width == 0 {
            width = vector.len();
        } else if vector.len() != width {
            return Err(bad(format!(
                "data[{pos}].embedding has {} values, expected {width}",
                vector.len()
            )));
        }
        *slot = Some(vector);
    }
    let tokens = v
        .pointer("/usage/prompt_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    // Every slot is filled: `expected` distinct in-range indexes were seen.
    Ok((slots.into_iter().flatten().collect(), tokens))
}

impl Embedder for OpenAiEmbedder {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn dimension(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let batch = self.cfg.batch_size.clamp(1, MAX_EMBED_BATCH);
        crate::config::embed_in_chunks(texts, batch, |chunk| self.request(chunk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model_family;

    #[test]
    fn families_separate_models_and_backends() {
        let small = openai_model_id("text-embedding-3-small", "https://api.openai.com/v1");
        assert_eq!(small, "openai:text-embedding-3-small/api.openai.com");
        let large = openai_model_id("text-embedding-3-large", "https://api.openai.com/v1");
        assert_ne!(model_family(&small), model_family(&large));
        assert_ne!(model_family(&small), crate::MODEL_FAMILY);
        // Same model through another host: same family, like two local backends of one model.
        let proxied = openai_model_id("text-embedding-3-small", "http://127.0.0.1:8080/v1");
        assert_eq!(model_family(&small), model_family(&proxied));
        // A slash inside the model name stays inside the family.
        let a = openai_model_id(
            "openai/text-embedding-3-small",
            "https://openrouter.ai/api/v1",
        );
        let b = openai_model_id(
            "openai/text-embedding-3-large",
            "https://openrouter.ai/api/v1",
        );
        assert_ne!(model_family(&a), model_family(&b));
        assert_eq!(model_family(&a), "openai:openai%2Ftext-embedding-3-small");
    }

    #[test]
    fn answers_are_reordered_by_index_and_checked() {
        let body = r#"{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}],"usage":{"prompt_tokens":7}}"#;
        let (v, tokens) = parse_embeddings(body, 2, 2).unwrap();
        assert_eq!(v, vec![vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert_eq!(tokens, 7);
        for (body, why) in [
            ("not json", "not JSON"),
            (
                r#"{"data":[{"index":0,"embedding":[1,0]}]}"#,
                "1 embeddings for 2",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[1,0]}]}"#,
                "twice",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1,0]},{"index":5,"embedding":[1,0]}]}"#,
                "outside",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[1]}]}"#,
                "expected 2",
            ),
            (
                r#"{"data":[{"index":0,"embedding":[1,0]},{"index":1,"embedding":[1e39,0]}]}"#,
                "non-finite",
            ),
            (
                r#"{"data":[{"index":0,"embedding":"AAAA"},{"index":1,"embedding":[1,0]}]}"#,
                "not a list",
            ),
        ] {
            let err = parse_embeddings(body, 2, 2).unwrap_err();
            assert!(err.to_string().contains(why), "{body}: {err}");
        }
    }
}
