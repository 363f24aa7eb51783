//! Exact token counting for context-pack budgets: OpenAI's BPE tokenizers, with their rank
//! tables compiled into the binary (`tiktoken-rs`), so counting needs no file and no network.
//!
//! Each table is parsed once per process, on first use (a few hundred milliseconds for
//! `cl100k_base`), and shared by every counter of that name.
//!
//! Counting is linear in the text. The encoder's byte-pair merge is quadratic in the length of
//! one pre-tokenized piece, and a run without spaces (`yyyy…`, a long URL, CJK prose, a run of
//! spaces) is one piece: a 64 Ki-character run cost seconds. So the text is first cut into
//! [`runs`]: at every space that follows a non-space character — where every one of these
//! tokenizers' pre-tokenizers ends a piece anyway, so prose counts exactly as a whole-text
//! encoding does — and, within a run longer than [`MAX_RUN_BYTES`], at character boundaries
//! every [`MAX_RUN_BYTES`] bytes. Only such long runs may count differently from a whole-text
//! encoding. A cut keeps tokens from merging across it (more tokens), but it can also shift
//! where the pre-tokenizer's pieces fall after it (`,A{"` repeated: `{",` `A` as a whole, `,A`
//! `{"` after a cut), which can save a token; so each length cut adds [`CUT_SLACK`] and the
//! count stays an approximation from above (pack budgets must not be overrun), by at most a
//! few tokens per cut.

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
        let mut total: usize = 0;
        for (batch, cut) in batches(text) {
            total = total.saturating_add(self.bpe.encode_ordinary(batch).len());
            if cut {
                total = total.saturating_add(CUT_SLACK);
            }
        }
        u32::try_from(total).unwrap_or(u32::MAX)
    }
}

/// The longest run (see the module docs) encoded as one piece, in bytes: the merge's work per
/// run is at most this times the run's length.
pub(crate) const MAX_RUN_BYTES: usize = 256;

/// Tokens added per length cut, so that a cut that shifts the pieces after it never makes the
/// count smaller than a whole-text encoding's (see the module docs).
const CUT_SLACK: usize = 1;

/// How many bytes of whole runs are handed to the encoder at once (fewer calls for prose).
const BATCH_BYTES: usize = 8 * 1024;

/// The text cut into runs (see the module docs), in order; together they are the text. Each is
/// at most [`MAX_RUN_BYTES`] long (a character is never longer).
#[cfg(test)]
pub(crate) fn runs(text: &str) -> impl Iterator<Item = &str> {
    cuts(text).map(|(run, _)| run)
}

/// [`runs`], each with whether a piece of the pre-tokenizer ends with it (a space follows, or
/// the text ends) rather than a cut made for length.
fn cuts(text: &str) -> impl Iterator<Item = (&str, bool)> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = rest.len();
        let mut prev_space = true;
        let mut natural = true;
        for (i, c) in rest.char_indices() {
            if i > 0 && c == ' ' && !prev_space {
                end = i;
                break;
            }
            if i + c.len_utf8() > MAX_RUN_BYTES {
                end = if i == 0 { c.len_utf8() } else { i };
                natural = false;
                break;
            }
            prev_space = c.is_whitespace();
        }
        let (run, tail) = rest.split_at(end);
        rest = tail;
        Some((run, natural))
    })
}

/// Consecutive runs joined into slices of at most [`BATCH_BYTES`] (or one run): what the
/// encoder is given, each with whether it ends at a length cut. Runs are joined only across an
/// end of a piece, so every piece the encoder sees lies within one run.
fn batches(text: &str) -> impl Iterator<Item = (&str, bool)> {
    let mut cuts = cuts(text).peekable();
    let base = text.as_ptr() as usize;
    std::iter::from_fn(move || {
        let (first, mut natural) = cuts.next()?;
        let start = first.as_ptr() as usize - base;
        let mut end = start + first.len();
        while let Some(&(next, next_natural)) = cuts.peek() {
            if !natural || end + next.len() - start > BATCH_BYTES {
                break;
            }
            end += next.len();
            natural = next_natural;
            cuts.next();
        }
        // A length cut ends this slice only when text follows it.
        let cut = !natural && end < text.len();
        Some((&text[start..end], cut))
    })
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
    use proptest::prelude::*;

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

    /// cl100k's pre-tokenizer: the encoder's merge is quadratic in each piece it yields.
    const CL100K_PIECES: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

    /// What encoding `text` the way [`BpeCounter::count`] does may cost: each piece the merge
    /// sees costs its length squared.
    fn merge_work(text: &str) -> usize {
        let re = fancy_regex::Regex::new(CL100K_PIECES).unwrap();
        batches(text)
            .flat_map(|(b, _)| {
                re.find_iter(b)
                    .map(|m| m.unwrap().as_str().len().pow(2))
                    .collect::<Vec<_>>()
            })
            .sum()
    }

    /// Long runs of one unit (a letter, a CJK character, digits, spaces, punctuation, a short
    /// mixed word), several one after another.
    fn pathological() -> impl Strategy<Value = String> {
        let unit = prop_oneof![
            proptest::sample::select(vec![
                "y", "Y", "é", "语", "7", " ", "\n", "!", "-", "\u{0}", "a1", "ab ", "  x", "'s",
                "\t "
            ])
            .prop_map(String::from),
            "[a-zA-Z0-9 .,'\n-]{1,12}",
            "\\PC{1,6}",
        ];
        proptest::collection::vec((unit, 1usize..40_000), 1..4).prop_map(|runs| {
            runs.into_iter()
                .map(|(u, n)| u.repeat((n / u.chars().count()).max(1)))
                .collect()
        })
    }

    /// Prose: words (none longer than a run) with spaces, punctuation, digits and newlines.
    fn prose() -> impl Strategy<Value = String> {
        let word = prop_oneof![
            "[a-zA-Z]{1,14}",
            "[0-9]{1,9}",
            "[.,;:!?'\"()-]{1,3}",
            proptest::sample::select(vec![
                "naïve",
                "Straße",
                "日本語",
                "it's",
                "we'll",
                "<|endoftext|>",
                "\n",
                "\n\n",
                "  ",
                "\t"
            ])
            .prop_map(String::from),
        ];
        let sep = proptest::sample::select(vec![" ", " ", " ", "", "\n", "  ", " \n"]);
        proptest::collection::vec((word, sep), 0..400)
            .prop_map(|ws| ws.into_iter().map(|(w, s)| format!("{w}{s}")).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The probe's 64 Ki-character `yyyy…` took 2.3 s to count (×4 per doubling): one
        /// piece, 4·10⁹ units of merge work. Work is counted, not timed.
        #[test]
        fn counting_work_is_linear_in_the_text(text in pathological()) {
            let work = merge_work(&text);
            prop_assert!(
                work <= MAX_RUN_BYTES * text.len(),
                "{} units of merge work for {} bytes", work, text.len()
            );
            prop_assert_eq!(runs(&text).collect::<String>(), text.clone());
            prop_assert!(runs(&text).all(|r| r.len() <= MAX_RUN_BYTES));
            // With the slack per cut, never fewer than a whole-text encoding.
            let cl = tiktoken_rs::cl100k_base_singleton();
            if text.len() <= 4096 {
                let whole = cl.encode_ordinary(&text).len() as u32;
                prop_assert!(token_counter("cl100k_base").unwrap().count(&text) >= whole);
            }
        }

        /// Prose counts exactly as a whole-text encoding, for every tokenizer.
        #[test]
        fn prose_counts_exactly(text in prose()) {
            for name in TOKENIZERS {
                let counter = token_counter(name).unwrap();
                let bpe = match name {
                    "cl100k_base" => tiktoken_rs::cl100k_base_singleton(),
                    "o200k_base" => tiktoken_rs::o200k_base_singleton(),
                    "p50k_base" => tiktoken_rs::p50k_base_singleton(),
                    _ => tiktoken_rs::r50k_base_singleton(),
                };
                prop_assert_eq!(counter.count(&text) as usize, bpe.encode_ordinary(&text).len(), "{}", name);
            }
        }
    }

    #[test]
    fn a_long_run_is_counted_in_pieces_close_to_the_whole() {
        let cl = token_counter("cl100k_base").unwrap();
        let run = "y".repeat(64 * 1024);
        assert!(merge_work(&run) <= MAX_RUN_BYTES * run.len());
        let whole = tiktoken_rs::cl100k_base_singleton()
            .encode_ordinary(&"y".repeat(4096))
            .len();
        let cut = cl.count(&"y".repeat(4096)) as usize;
        // 16 runs of 256 bytes: at most a few extra tokens per cut, the slack included.
        assert!(cut >= whole && cut <= whole + 3 * 15, "{cut} vs {whole}");
        let prose = "The quick brown fox jumps over the lazy dog. ".repeat(2000);
        assert_eq!(
            cl.count(&prose) as usize,
            tiktoken_rs::cl100k_base_singleton()
                .encode_ordinary(&prose)
                .len()
        );
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
