//! Integration tests of the embedders against sentence-transformers reference vectors, and of the
//! OpenAI-compatible providers against a stub endpoint on 127.0.0.1.
//!
//! The models must be installed (run `cargo run -p mnemo-models --example install`); they are
//! looked up in `MNEMO_MODELS_DIR`, default `<workspace>/models`. Without them the model tests
//! fail with a message saying so — they never pass vacuously.

mod behaviour;
mod fixture;
#[cfg(feature = "llama")]
mod llama;
mod openai;
mod openai_embed;
mod quality;

use mnemo_core::Embedder;
use mnemo_models::{load_embedder, EmbedderBackend, EmbedderConfig};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Where the tests read models from.
pub fn models_dir() -> PathBuf {
    std::env::var_os("MNEMO_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models"))
}

/// The test configuration for `backend`: two threads, batches of 32.
pub fn config(backend: EmbedderBackend) -> EmbedderConfig {
    let mut cfg = EmbedderConfig::new(backend, models_dir());
    cfg.threads = Some(2);
    cfg.batch_size = 32;
    cfg
}

/// One shared embedder per backend for the whole test binary (loading is the slow part).
pub fn embedder(backend: EmbedderBackend) -> Arc<dyn Embedder> {
    static ONNX: OnceLock<Arc<dyn Embedder>> = OnceLock::new();
    static CANDLE: OnceLock<Arc<dyn Embedder>> = OnceLock::new();
    let cell = match backend {
        EmbedderBackend::Onnx => &ONNX,
        EmbedderBackend::Candle => &CANDLE,
        EmbedderBackend::OpenAi => unreachable!("the model tests run the local backends"),
    };
    cell.get_or_init(|| {
        let cfg = config(backend);
        if let Err(e) = cfg.paths.check(backend) {
            panic!(
                "model files for the {backend} backend are not installed under {} ({e}). Install them with \
                 `cargo run -p mnemo-models --example install` or set MNEMO_MODELS_DIR.",
                models_dir().display()
            );
        }
        load_embedder(&cfg).unwrap_or_else(|e| panic!("loading the {backend} embedder failed: {e}"))
    })
    .clone()
}

pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}
