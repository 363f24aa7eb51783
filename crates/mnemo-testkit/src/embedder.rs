//! A scripted embedder for pipeline tests: hashed bag of words, deterministic and instant.
//! Texts that share words are similar; it is never a product default.

use mnemo_core::{embed::l2_normalize, Embedder, Result};

#[derive(Debug, Default, Clone)]
pub struct HashEmbedder;

impl HashEmbedder {
    pub const DIM: usize = 64;
    pub const MODEL_ID: &'static str = "hash-bow/v1";

    pub fn vector(text: &str) -> Vec<f32> {
        Self::vector_in(text, Self::DIM)
    }

    /// The same hashed bag of words in `dim` buckets (`dim` ≥ 1), for stubs of other models.
    pub fn vector_in(text: &str, dim: usize) -> Vec<f32> {
        let dim = dim.max(1);
        let mut v = vec![0f32; dim];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let w = word.to_lowercase();
            // FNV-1a: stable across runs and platforms.
            let mut h: u64 = 0xcbf29ce484222325;
            for b in w.bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x100000001b3);
            }
            v[(h % dim as u64) as usize] += 1.0;
        }
        if v.iter().all(|x| *x == 0.0) {
            v[0] = 1.0;
        }
        l2_normalize(&mut v);
        v
    }
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        Self::MODEL_ID
    }
    fn dimension(&self) -> usize {
        Self::DIM
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| Self::vector(t)).collect())
    }
}

/// [`HashEmbedder`] after a pause on every call, counting its calls: work that runs longer than
/// the test's limits (leases, rate-limit prices) without a real model.
#[derive(Debug, Default)]
pub struct SlowEmbedder {
    pub pause: std::time::Duration,
    pub calls: std::sync::atomic::AtomicUsize,
}

impl SlowEmbedder {
    pub fn new(pause: std::time::Duration) -> Self {
        Self {
            pause,
            calls: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Calls so far.
    pub fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Embedder for SlowEmbedder {
    fn model_id(&self) -> &str {
        HashEmbedder::MODEL_ID
    }
    fn dimension(&self) -> usize {
        HashEmbedder::DIM
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::thread::sleep(self.pause);
        HashEmbedder.embed(texts)
    }
}
