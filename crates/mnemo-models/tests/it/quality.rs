//! Agreement with sentence-transformers: per-sentence cosine and nearest-neighbour overlap.

use crate::fixture::{reference, sentence_refs};
use crate::{config, cosine, embedder};
use mnemo_models::{load_embedder, EmbedderBackend, IntKernels, WeightCoding};

/// Minimum cosine to the reference for every fixture sentence.
const CANDLE_MIN_COSINE: f32 = 0.99999;
/// The int8 graph measured min 0.97373 ("ok") / mean 0.99163 over the fixture
/// (sentence-transformers 6.2.0) on an AMD EPYC with AVX2 only (no AVX-512, no VNNI; u8 weights
/// around zero point 128) and min 0.9737 on VNNI CPUs (s8 weights). Its weight coding is chosen
/// so that the integer sums are exact on the CPU at hand (`WeightCoding`), so that is the worst
/// case on AVX2, AVX-512 and VNNI machines alike, up to float rounding; the s8 weights on a CPU
/// without VNNI, where u8·s8 pairs saturate, gave 0.9695 ("ok").
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

/// The vectors this CPU makes are the ones every CPU makes: the coding chosen here (s8 weights
/// where the CPU has VNNI) agrees with the u8 coding, exact on every CPU, up to float rounding.
#[test]
fn onnx_weight_coding_does_not_change_the_vectors() {
    let chosen = WeightCoding::for_this_cpu();
    eprintln!("this CPU: {:?} → {chosen:?}", IntKernels::detect());
    let mut cfg = config(EmbedderBackend::Onnx);
    cfg.threads = Some(1);
    cfg.onnx_weights = Some(WeightCoding::Offset);
    let offset = load_embedder(&cfg).unwrap();
    cfg.onnx_weights = None;
    let here = load_embedder(&cfg).unwrap();
    let texts = sentence_refs();
    let (a, b) = (offset.embed(&texts).unwrap(), here.embed(&texts).unwrap());
    let min = a
        .iter()
        .zip(&b)
        .map(|(x, y)| cosine(x, y))
        .fold(f32::INFINITY, f32::min);
    eprintln!("{chosen:?} against the u8 coding: min cosine {min:.7}");
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let c = cosine(x, y);
        assert!(
            c >= 0.9999,
            "{chosen:?}: sentence {i} {:?} has cosine {c} to the u8 coding",
            texts[i]
        );
    }
    // Without VNNI the u8·s8 kernels saturate, and the u8 coding is the one in use.
    let k = IntKernels::detect();
    if !(k.avx512_vnni || k.avx_vnni) {
        assert_eq!(chosen, WeightCoding::Offset);
    }
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
