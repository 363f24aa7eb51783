//! Agreement with sentence-transformers: per-sentence cosine and nearest-neighbour overlap.

use crate::fixture::{reference, sentence_refs};
use crate::{cosine, embedder};
use mnemo_models::EmbedderBackend;

/// Minimum cosine to the reference for every fixture sentence.
const CANDLE_MIN_COSINE: f32 = 0.99999;
/// The int8 graph (u8 weights around zero point 128, u8 activations) measured min 0.97373 ("ok")
/// / mean 0.99163 over the fixture (sentence-transformers 6.2.0) on an AMD EPYC with AVX2 only
/// (no AVX-512, no VNNI). ONNX Runtime's u8·u8 kernels sum exactly on every x86-64 CPU, so that
/// is the worst case on AVX2, AVX-512 and VNNI machines alike, up to float rounding (the s8
/// weights it replaced gave 0.9737 with VNNI but 0.9695 without, where u8·s8 pairs saturate).
/// The bar sits a little below the minimum. (The f32-compute export measured min 0.9963.)
const ONNX_MIN_COSINE: f32 = 0.97;

fn embed_one_at_a_time(backend: EmbedderBackend) -> Vec<Vec<f32>> {
    let e = embedder(backend);
    sentence_refs()
        .iter()
        .map(|s| e.embed(&[s]).unwrap().remove(0))
        .collect()
}

fn check_cosines(backend: EmbedderBackend, threshold: f32) {
    let r = reference();
    let got = embed_one_at_a_time(backend);
    let cosines: Vec<f32> = got
        .iter()
        .zip(&r.vectors)
        .map(|(a, b)| cosine(a, b))
        .collect();
    let min = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    let mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
    eprintln!(
        "{backend}: cosine vs sentence-transformers {}: min {min:.7} mean {mean:.7}",
        r.sentence_transformers_version
    );
    for (i, c) in cosines.iter().enumerate() {
        assert!(
            *c >= threshold,
            "{backend}: sentence {i} {:?} has cosine {c} < {threshold}",
            r.sentences[i]
        );
    }
}

/// Indices of the `k` nearest other vectors of each vector, by cosine.
fn top_k(vectors: &[Vec<f32>], k: usize) -> Vec<Vec<usize>> {
    (0..vectors.len())
        .map(|i| {
            let mut others: Vec<(usize, f32)> = (0..vectors.len())
                .filter(|&j| j != i)
                .map(|j| (j, cosine(&vectors[i], &vectors[j])))
                .collect();
            others.sort_by(|a, b| b.1.total_cmp(&a.1));
            others.into_iter().take(k).map(|(j, _)| j).collect()
        })
        .collect()
}

fn check_neighbours(backend: EmbedderBackend, min_overlap: f64) {
    let want = top_k(&reference().vectors, 5);
    let got = top_k(&embed_one_at_a_time(backend), 5);
    let shared: usize = want
        .iter()
        .zip(&got)
        .map(|(w, g)| g.iter().filter(|j| w.contains(j)).count())
        .sum();
    let overlap = shared as f64 / (5 * want.len()) as f64;
    eprintln!("{backend}: top-5 neighbour overlap with the reference {overlap:.4}");
    assert!(
        overlap >= min_overlap,
        "{backend}: top-5 overlap {overlap} < {min_overlap}"
    );
}

#[test]
fn candle_matches_reference_vectors() {
    check_cosines(EmbedderBackend::Candle, CANDLE_MIN_COSINE);
}

#[test]
fn onnx_matches_reference_vectors() {
    check_cosines(EmbedderBackend::Onnx, ONNX_MIN_COSINE);
}

#[test]
fn candle_keeps_reference_neighbours() {
    check_neighbours(EmbedderBackend::Candle, 1.0);
}

#[test]
fn onnx_keeps_reference_neighbours() {
    // Measured 0.908 (11 of 120 neighbour slots swapped among near-ties; 0.983 with f32
    // activations). LoCoMo recall@10 did not move (BENCHMARKS.md).
    check_neighbours(EmbedderBackend::Onnx, 0.875);
}
