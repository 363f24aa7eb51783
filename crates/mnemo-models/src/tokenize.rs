//! Tokenisation into padded, truncated batches shaped for a BERT forward pass.
//!
//! The model's `tokenizer.json` ships with fixed padding to 128 and truncation at 128; both are
//! replaced here: truncation at [`MAX_SEQ_LEN`](crate::MAX_SEQ_LEN) (what sentence-transformers
//! uses for this model) and padding to the longest text of each batch, done by hand so the padded
//! layout is explicit.

use crate::model_err;
use std::path::Path;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// A tokenised batch: `rows × seq_len` row-major matrices of ids, attention mask and token types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TokenBatch {
    pub rows: usize,
    pub seq_len: usize,
    pub input_ids: Vec<i64>,
    pub attention_mask: Vec<i64>,
    pub token_type_ids: Vec<i64>,
}

/// A loaded tokenizer configured for embedding.
pub(crate) struct TextTokenizer {
    inner: Tokenizer,
    pad_id: u32,
}

impl TextTokenizer {
    /// Loads `tokenizer.json`, truncating at `max_len` tokens (special tokens included).
    pub(crate) fn from_file(path: &Path, max_len: usize) -> mnemo_core::Result<Self> {
        let mut inner = Tokenizer::from_file(path)
            .map_err(|e| model_err(&format!("cannot load tokenizer {}", path.display()), e))?;
        let pad_id = inner
            .get_padding()
            .map(|p| p.pad_id)
            .or_else(|| inner.token_to_id("[PAD]"))
            .unwrap_or(0);
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                direction: TruncationDirection::Right,
                max_length: max_len,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
            }))
            .map_err(|e| model_err("cannot configure tokenizer truncation", e))?;
        Ok(Self { inner, pad_id })
    }

    /// Tokenises `texts` (with `[CLS]`/`[SEP]`) and right-pads every row to the longest one.
    pub(crate) fn encode(&self, texts: &[&str]) -> mnemo_core::Result<TokenBatch> {
        let encodings = self
            .inner
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| model_err("tokenisation failed", e))?;
        let rows = encodings.len();
        let seq_len = encodings
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(0);
        let mut batch = TokenBatch {
            rows,
            seq_len,
            input_ids: vec![i64::from(self.pad_id); rows * seq_len],
            attention_mask: vec![0; rows * seq_len],
            token_type_ids: vec![0; rows * seq_len],
        };
        for (r, enc) in encodings.iter().enumerate() {
            let base = r * seq_len;
            let fields = enc
                .get_ids()
                .iter()
                .zip(enc.get_attention_mask())
                .zip(enc.get_type_ids());
            // In bounds: `t` < this row's length <= `seq_len`, the longest row.
            for (t, ((id, mask), ty)) in fields.enumerate() {
                batch.input_ids[base + t] = i64::from(*id);
                batch.attention_mask[base + t] = i64::from(*mask);
                batch.token_type_ids[base + t] = i64::from(*ty);
            }
        }
        Ok(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny WordPiece tokenizer with BERT-style post-processing, written to a temp file.
    fn tiny_tokenizer(max_len: usize) -> TextTokenizer {
        let json = r###"{
          "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
          "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                         "strip_accents": null, "lowercase": true},
          "pre_tokenizer": {"type": "BertPreTokenizer"},
          "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
          "decoder": null,
          "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                    "max_input_chars_per_word": 100,
                    "vocab": {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "hello": 4, "world": 5}}
        }"###;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        std::fs::write(&path, json).unwrap();
        TextTokenizer::from_file(&path, max_len).unwrap()
    }

    #[test]
    fn pads_to_longest_and_masks_padding() {
        let tok = tiny_tokenizer(16);
        let b = tok.encode(&["hello world", "hello", ""]).unwrap();
        assert_eq!((b.rows, b.seq_len), (3, 4));
        assert_eq!(b.input_ids, vec![2, 4, 5, 3, 2, 4, 3, 0, 2, 3, 0, 0]);
        assert_eq!(b.attention_mask, vec![1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 0, 0]);
        assert!(b.token_type_ids.iter().all(|&t| t == 0));
    }

    #[test]
    fn truncates_including_special_tokens() {
        let tok = tiny_tokenizer(3);
        let b = tok.encode(&["hello world hello world"]).unwrap();
        assert_eq!(b.seq_len, 3);
        assert_eq!(b.input_ids, vec![2, 4, 3]);
    }

    #[test]
    fn empty_batch_is_empty() {
        let tok = tiny_tokenizer(8);
        let b = tok.encode(&[]).unwrap();
        assert_eq!((b.rows, b.seq_len), (0, 0));
    }
}
