//! Contract checks: batching, dimension, edge-case inputs, identities, loading errors.

use crate::fixture::sentence_refs;
use crate::{config, cosine, embedder};
use mnemo_core::ErrorKind;
use mnemo_models::{load_embedder, model_family, EmbedderBackend, EmbedderConfig, MODEL_FAMILY};

const BACKENDS: [EmbedderBackend; 2] = [EmbedderBackend::Onnx, EmbedderBackend::Candle];

/// How far a text's vector may move with the texts it shares a pass with: not at all for candle
/// (f32 throughout). The ONNX graph quantises activations per pass (`onnx_graph.rs`): measured
/// cosine 0.949 for "ok" (three tokens) batched with the fixture, 0.979–0.994 for the others.
fn batch_tolerance(backend: EmbedderBackend) -> f32 {
    match backend {
        EmbedderBackend::Onnx => 0.94,
        _ => 0.99999,
    }
}

#[test]
fn batched_matches_one_at_a_time() {
    for backend in BACKENDS {
        let e = embedder(backend);
        let texts = sentence_refs();
        let batched = e.embed(&texts).unwrap();
        let mut worst = 1f32;
        for (text, b) in texts.iter().zip(&batched) {
            let single = e.embed(&[text]).unwrap().remove(0);
            worst = worst.min(cosine(&single, b));
        }
        eprintln!("{backend}: min cosine(batched, single) = {worst}");
        assert!(
            worst >= batch_tolerance(backend),
            "{backend}: batched output moved from single to cosine {worst}"
        );
        // The same call twice gives the same vectors.
        assert_eq!(e.embed(&texts).unwrap(), batched, "{backend}");
    }
}

#[test]
fn dimension_comes_from_the_model_and_vectors_are_unit() {
    for backend in BACKENDS {
        let e = embedder(backend);
        assert_eq!(e.dimension(), 384, "{backend}");
        for v in e.embed(&["", "a", "hello world"]).unwrap() {
            assert_eq!(v.len(), 384);
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "{backend}: norm {norm}");
            assert!(v.iter().all(|x| x.is_finite()));
        }
    }
}

#[test]
fn empty_batch_gives_empty_output() {
    for backend in BACKENDS {
        assert!(
            embedder(backend).embed(&[]).unwrap().is_empty(),
            "{backend}"
        );
    }
}

#[test]
fn more_texts_than_one_batch() {
    // 70 different texts: more than one pass, and each vector must land on its own text.
    let words = [
        "river",
        "invoice",
        "violin",
        "glacier",
        "tax",
        "puppy",
        "satellite",
    ];
    let texts: Vec<String> = (0..70)
        .map(|i| {
            format!(
                "note {i} about the {} and the {}",
                words[i % 7],
                words[(i / 7) % 7]
            )
        })
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    for backend in BACKENDS {
        let e = embedder(backend);
        let out = e.embed(&refs).unwrap();
        assert_eq!(out.len(), 70, "{backend}");
        for i in [0, 31, 32, 69] {
            let alone = e.embed(&[refs[i]]).unwrap().remove(0);
            let own = cosine(&alone, &out[i]);
            assert!(
                own >= batch_tolerance(backend),
                "{backend}: text {i} moved to {own}"
            );
            let nearest = (0..70)
                .max_by(|&a, &b| cosine(&alone, &out[a]).total_cmp(&cosine(&alone, &out[b])))
                .unwrap();
            assert_eq!(nearest, i, "{backend}: text {i}'s vector is not its own");
        }
    }
}

#[test]
fn model_ids_differ_and_share_the_family() {
    let onnx = embedder(EmbedderBackend::Onnx);
    let candle = embedder(EmbedderBackend::Candle);
    assert_eq!(onnx.model_id(), "all-MiniLM-L6-v2/onnx-int8-dq");
    assert_eq!(candle.model_id(), "all-MiniLM-L6-v2/candle-f32");
    assert_eq!(model_family(onnx.model_id()), MODEL_FAMILY);
    assert_eq!(model_family(candle.model_id()), MODEL_FAMILY);
}

#[test]
fn onnx_loads_twice_in_one_process() {
    let first = embedder(EmbedderBackend::Onnx);
    let second =
        load_embedder(&config(EmbedderBackend::Onnx)).expect("second load reuses the runtime");
    let a = first.embed(&["same text"]).unwrap();
    let b = second.embed(&["same text"]).unwrap();
    assert_eq!(a, b);
}

#[test]
fn missing_models_are_unavailable_with_install_hint() {
    let dir = tempfile::tempdir().unwrap();
    for backend in BACKENDS {
        let cfg = EmbedderConfig::new(backend, dir.path().join("nothing-here"));
        let err = load_embedder(&cfg)
            .err()
            .expect("loading from an empty dir must fail");
        assert_eq!(err.kind(), ErrorKind::Unavailable, "{backend}: {err}");
        assert!(
            err.to_string().contains("mnemo models install"),
            "{backend}: {err}"
        );
    }
}
