//! The `Embedder` trait and a content-hash cache that wraps any embedder.

use crate::error::Result;
use crate::memory::content_hash;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// Turns texts into unit-length vectors.
///
/// Implementations are blocking (CPU or network bound); async callers run them on a blocking
/// thread. `embed` returns exactly one vector per input, in order, each of `dimension()` floats,
/// L2-normalised. A provider failure is an error, never an empty or zero vector.
pub trait Embedder: Send + Sync {
    /// A stable identity of model and backend (stored beside the vectors to catch mismatches).
    fn model_id(&self) -> &str;
    /// The output dimension, read from the model.
    fn dimension(&self) -> usize;
    /// Embeds a batch. Required: it is the only operation.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
}

/// Cached vectors by content hash, with insertion order for FIFO eviction.
type Cache = (HashMap<String, Arc<Vec<f32>>>, VecDeque<String>);

/// Caches vectors by content hash (FIFO eviction at `capacity`), so repeated texts — retries,
/// duplicate turns, repeated queries — are embedded once.
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    capacity: usize,
    cache: Mutex<Cache>,
}

impl CachedEmbedder {
    pub fn new(inner: Arc<dyn Embedder>, capacity: usize) -> Self {
        Self {
            inner,
            capacity,
            cache: Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }

    pub fn cached_len(&self) -> usize {
        self.cache.lock().map(|c| c.0.len()).unwrap_or(0)
    }
}

impl Embedder for CachedEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let hashes: Vec<String> = texts.iter().map(|t| content_hash(t)).collect();
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        let mut missing: Vec<usize> = Vec::new();
        {
            let guard = self
                .cache
                .lock()
                .map_err(|_| crate::Error::internal("embedding cache poisoned"))?;
            for (i, h) in hashes.iter().enumerate() {
                match guard.0.get(h) {
                    Some(v) => out[i] = Some(v.as_ref().clone()),
                    None => missing.push(i),
                }
            }
        }
        if !missing.is_empty() {
            // Embed each distinct missing text once.
            let mut unique: Vec<usize> = Vec::new();
            let mut seen: HashMap<&str, usize> = HashMap::new();
            for &i in &missing {
                seen.entry(hashes[i].as_str()).or_insert_with(|| {
                    unique.push(i);
                    unique.len() - 1
                });
            }
            let batch: Vec<&str> = unique.iter().map(|&i| texts[i]).collect();
            let vectors = self.inner.embed(&batch)?;
            if vectors.len() != batch.len() {
                return Err(crate::Error::Model {
                    reason: format!(
                        "embedder returned {} vectors for {} texts",
                        vectors.len(),
                        batch.len()
                    ),
                });
            }
            let mut guard = self
                .cache
                .lock()
                .map_err(|_| crate::Error::internal("embedding cache poisoned"))?;
            for &i in &missing {
                let v = &vectors[seen[hashes[i].as_str()]];
                out[i] = Some(v.clone());
            }
            if self.capacity > 0 {
                for (slot, v) in unique.iter().zip(vectors) {
                    let h = hashes[*slot].clone();
                    if guard.0.insert(h.clone(), Arc::new(v)).is_none() {
                        guard.1.push_back(h);
                    }
                    while guard.1.len() > self.capacity {
                        if let Some(old) = guard.1.pop_front() {
                            guard.0.remove(&old);
                        }
                    }
                }
            }
        }
        // Every slot is filled: a cached vector, or one of exactly `batch.len()` new ones.
        out.into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| crate::Error::internal("an embedding slot was left empty"))
    }
}

/// Scales a vector to unit length in place (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// The inner product of `a` and `b` over their common length. Sixteen running sums, added up
/// at the end, instead of one: a single sum must add in order (floating point is not
/// associative), which keeps the compiler from using vector instructions; independent sums
/// let it, and an exact scan of a scope scores thousands of vectors per query this way.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    let mut acc = [0f32; LANES];
    for (x, y) in ca.zip(cb) {
        for j in 0..LANES {
            acc[j] += x[j] * y[j];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Counting(AtomicUsize);
    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        fn dimension(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            self.0.fetch_add(texts.len(), Ordering::SeqCst);
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0]).collect())
        }
    }

    #[test]
    fn cache_embeds_each_text_once() {
        let inner = Arc::new(Counting(AtomicUsize::new(0)));
        let cached = CachedEmbedder::new(inner.clone(), 10);
        let first = cached.embed(&["a", "bb", "a"]).unwrap();
        assert_eq!(first, vec![vec![1.0, 1.0], vec![2.0, 1.0], vec![1.0, 1.0]]);
        assert_eq!(inner.0.load(Ordering::SeqCst), 2);
        cached.embed(&["bb", "ccc"]).unwrap();
        assert_eq!(inner.0.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn dot_matches_a_double_precision_sum_at_every_length() {
        for n in [0usize, 1, 7, 15, 16, 17, 31, 32, 33, 384, 385] {
            let a: Vec<f32> = (0..n).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect();
            let b: Vec<f32> = (0..n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 3.0).collect();
            let exact: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
            let got = dot(&a, &b) as f64;
            assert!(
                (got - exact).abs() <= 1e-4 * (1.0 + exact.abs()),
                "n={n}: {got} vs {exact}"
            );
        }
        // Over the common length, as the single sum did.
        assert_eq!(dot(&[1.0, 2.0, 3.0], &[4.0, 5.0]), 14.0);
        assert_eq!(dot(&[2.0; 20], &[0.5; 33]), 20.0);
    }

    #[test]
    fn cache_evicts_beyond_capacity() {
        let inner = Arc::new(Counting(AtomicUsize::new(0)));
        let cached = CachedEmbedder::new(inner, 2);
        cached.embed(&["a", "b", "c"]).unwrap();
        assert_eq!(cached.cached_len(), 2);
    }
}
