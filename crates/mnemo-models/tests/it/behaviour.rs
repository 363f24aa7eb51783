//! Contract checks: batching, dimension, edge-case inputs, identities, loading errors.

use crate::fixture::sentence_refs;
use crate::{config, embedder};
use mnemo_core::ErrorKind;
use mnemo_models::{load_embedder, model_family, EmbedderBackend, EmbedderConfig, MODEL_FAMILY};

const BACKENDS: [EmbedderBackend; 2] = [EmbedderBackend::Onnx, EmbedderBackend::Candle];

#[test]
fn batched_equals_one_at_a_time() {
    for backend in BACKENDS {
        let e = embedder(backend);
        let texts = sentence_refs();
        let batched = e.embed(&texts).unwrap();
        let mut worst = 0f32;
        for (text, b) in texts.iter().zip(&batched) {
            let single = e.embed(&[text]).unwrap().remove(0);
            let diff = single
                .iter()
                .zip(b)
                .map(|(x, y)| (x - y).abs())
                .fold(0f32, f32::max);
            worst = worst.max(diff);
        }
        eprintln!("{backend}: max |batched - single| = {worst:e}");
        assert!(
            worst <= 1e-5,
            "{backend}: batched output differs from single by {worst}"
        );
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
    for backend in BACKENDS {
        let texts: Vec<String> = (0..70).map(|i| format!("note number {i}")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let out = embedder(backend).embed(&refs).unwrap();
        assert_eq!(out.len(), 70, "{backend}");
        let last = embedder(backend).embed(&[refs[69]]).unwrap().remove(0);
        let diff = last
            .iter()
            .zip(&out[69])
            .map(|(a, b)| (a - b).abs())
            .fold(0f32, f32::max);
        assert!(
            diff <= 1e-5,
            "{backend}: order or content changed across batches ({diff})"
        );
    }
}

#[test]
fn model_ids_differ_and_share_the_family() {
    let onnx = embedder(EmbedderBackend::Onnx);
    let candle = embedder(EmbedderBackend::Candle);
    assert_eq!(onnx.model_id(), "all-MiniLM-L6-v2/onnx-int8");
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
