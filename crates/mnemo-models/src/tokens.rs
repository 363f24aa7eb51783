//! Exact token counting for context-pack budgets: OpenAI's BPE tokenizers, with their rank
//! tables compiled into the binary (`tiktoken-rs`), so counting needs no file and no network.
//!
//! Each table is parsed once per process, on first use (a few hundred milliseconds for
//! `cl100k_base`), and shared by every counter of that name.

use mnemo_core::pack::TokenCounter;
use mnemo_core::{Error, Result};
use std::sync::Arc;
use tiktoken_rs::CoreBPE;

/// The tokenizers [`token_counter`] knows, by name.
pub const TOKENIZERS: [&str; 4] = ["cl100k_base", "o200k_base", "p50k_base", "r50k_base"];

/// A BPE tokenizer counting tokens as OpenAI's models do.
pub struct BpeCounter {
    name: &'static str,
    bpe: &'static CoreBPE,
}

impl std::fmt::Debug for BpeCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpeCounter")
            .field("name", &self.name)
            .finish()
    }
}

impl TokenCounter for BpeCounter {
    fn name(&self) -> &str {
        self.name
    }

    fn count(&self, text: &str) -> u32 {
        // `encode_ordinary` treats `<|endoftext|>` and friends as text: a memory that quotes
        // one is counted as the characters it is, and never panics.
        u32::try_from(self.bpe.encode_ordinary(text).len()).unwrap_or(u32::MAX)
    }
}

/// The counter for a tokenizer name (see [`TOKENIZERS`]); `invalid_input` naming `tokenizer`
/// for any other name.
pub fn token_counter(name: &str) -> Result<Arc<dyn TokenCounter>> {
    let (name, bpe): (&'static str, &'static CoreBPE) = match name {
        "cl100k_base" => ("cl100k_base", tiktoken_rs::cl100k_base_singleton()),
        "o200k_base" => ("o200k_base", tiktoken_rs::o200k_base_singleton()),
        "p50k_base" => ("p50k_base", tiktoken_rs::p50k_base_singleton()),
        "r50k_base" => ("r50k_base", tiktoken_rs::r50k_base_singleton()),
        other => {
            return Err(Error::invalid(
                "tokenizer",
                format!(
                    "unknown tokenizer {other:?}; known: {}",
                    TOKENIZERS.join(", ")
                ),
            ))
        }
    };
    Ok(Arc::new(BpeCounter { name, bpe }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_the_published_encodings() {
        let cl = token_counter("cl100k_base").unwrap();
        assert_eq!(cl.name(), "cl100k_base");
        // tiktoken: "hello world" is [15339, 1917] in cl100k_base.
        assert_eq!(cl.count("hello world"), 2);
        assert_eq!(cl.count(""), 0);
        assert_eq!(cl.count("<|endoftext|>"), 7, "special tokens count as text");
        let o = token_counter("o200k_base").unwrap();
        assert_eq!(o.count("hello world"), 2);
        assert!(cl.count("antidisestablishmentarianism") > 1);
    }

    #[test]
    fn unknown_tokenizer_is_invalid_input_naming_the_field() {
        let Err(e) = token_counter("gpt2-ish") else {
            panic!("an unknown tokenizer was accepted");
        };
        assert_eq!(e.kind(), mnemo_core::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("tokenizer"), "{e}");
    }
}
