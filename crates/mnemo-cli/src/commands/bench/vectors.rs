//! The bulk vectors: embedded in timed batches, or reloaded from `--vector-cache` when the
//! texts and model match.

use super::Bench;
use std::time::Instant;

/// Identifies the texts and model a cached set of vectors belongs to.
fn cache_key(model: &str, texts: &[String]) -> String {
    format!(
        "{model}:{}:{}",
        texts.len(),
        mnemo_core::content_hash(&texts.join("\0"))
    )
}

fn load_cache(path: &std::path::Path, key: &str, dim: usize) -> Option<Vec<Vec<f32>>> {
    let bytes = std::fs::read(path).ok()?;
    let nl = bytes.iter().position(|b| *b == b'\n')?;
    if &bytes[..nl] != key.as_bytes() {
        return None;
    }
    let body = &bytes[nl + 1..];
    if body.len() % (4 * dim) != 0 {
        return None;
    }
    let floats: Vec<f32> = body
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Some(floats.chunks(dim).map(<[f32]>::to_vec).collect())
}

fn save_cache(path: &std::path::Path, key: &str, vectors: &[Vec<f32>]) -> std::io::Result<()> {
    let mut out =
        Vec::with_capacity(key.len() + 1 + vectors.len() * vectors.first().map_or(0, Vec::len) * 4);
    out.extend_from_slice(key.as_bytes());
    out.push(b'\n');
    for v in vectors {
        for x in v {
            out.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(path, out)
}

/// Embeds `texts` in batches of `batch`; returns the vectors and the rate per second.
pub(super) fn embed_timed(
    embedder: &dyn mnemo_core::Embedder,
    texts: &[String],
    batch: usize,
) -> anyhow::Result<(Vec<Vec<f32>>, f64)> {
    let mut out = Vec::with_capacity(texts.len());
    let t = Instant::now();
    for chunk in texts.chunks(batch) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        out.extend(embedder.embed(&refs)?);
    }
    Ok((out, texts.len() as f64 / t.elapsed().as_secs_f64()))
}

/// Step 1: the embedder alone over every text, in the bench's batches, or the vectors
/// `--vector-cache` kept from a run on the same texts and model (then no rate: `None`).
pub(super) fn bulk(
    bench: &Bench<'_>,
    texts: &[String],
    cache: Option<&std::path::Path>,
) -> anyhow::Result<(Vec<Vec<f32>>, Option<f64>)> {
    let (embedder, batch) = (bench.embedder, bench.batch);
    // The embedder makes its inference sessions on first use; one untimed batch here keeps that
    // one-off cost out of every rate below (it belongs to the first-answer figure instead).
    let warm: Vec<&str> = texts.iter().take(batch).map(String::as_str).collect();
    embedder.embed(&warm)?;
    let key = cache_key(embedder.model_id(), texts);
    let cached = cache
        .and_then(|p| load_cache(p, &key, embedder.dimension()))
        .filter(|v| v.len() == texts.len());
    Ok(match cached {
        Some(v) => {
            (bench.progress)("bulk embeddings loaded from the vector cache");
            (v, None)
        }
        None => {
            (bench.progress)("embedding every memory (embed-only baseline)");
            let (vectors, rate) = embed_timed(embedder, texts, batch)?;
            if let Some(p) = cache {
                save_cache(p, &key, &vectors)?;
            }
            (vectors, Some(rate))
        }
    })
}
