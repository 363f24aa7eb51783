//! The reference fixture written by `scripts/reference_vectors.py`.

use serde::Deserialize;
use std::sync::OnceLock;

#[derive(Debug, Deserialize)]
pub(crate) struct Reference {
    pub sentence_transformers_version: String,
    pub dimension: usize,
    pub sentences: Vec<String>,
    pub untruncated_token_counts: Vec<usize>,
    pub vectors: Vec<Vec<f32>>,
}

pub(crate) fn reference() -> &'static Reference {
    static REF: OnceLock<Reference> = OnceLock::new();
    REF.get_or_init(|| {
        let text = include_str!("../fixtures/reference.json");
        let r: Reference = serde_json::from_str(text).expect("reference.json parses");
        assert_eq!(r.sentences.len(), r.vectors.len());
        assert!(r.vectors.iter().all(|v| v.len() == r.dimension));
        r
    })
}

pub(crate) fn sentence_refs() -> Vec<&'static str> {
    reference().sentences.iter().map(String::as_str).collect()
}

#[test]
fn fixture_covers_truncation_and_empty_input() {
    let r = reference();
    assert!(!r.sentence_transformers_version.is_empty());
    assert!(
        r.untruncated_token_counts
            .iter()
            .any(|&n| n > mnemo_models::MAX_SEQ_LEN),
        "needs a text over 256 tokens"
    );
    assert!(
        r.sentences.iter().any(String::is_empty),
        "needs the empty string"
    );
}
