//! Text analysis shared by every backend's lexical side, and what counts as visible text.
//!
//! [`words`] is the one word splitter: lower-cased alphanumeric runs, each cut to
//! [`MAX_TOKEN_CHARS`]. Documents and queries go through it alike, so a cut word still matches
//! itself; the cut keeps per-word analyses (stemmers, some of them quadratic in the word's
//! length) linear in the text.

use std::collections::HashSet;
use unicode_general_category::{get_general_category, GeneralCategory};

/// The longest word a lexical index sees, in characters; longer words are cut to this length.
/// No English word comes near it; SQLite's FTS5 `porter` leaves words over 64 bytes unstemmed.
pub const MAX_TOKEN_CHARS: usize = 64;

/// The most words a lexical index keeps of one memory's index text; later words are not
/// indexed. A memory text at [`crate::limits::MAX_TEXT_CHARS`] has about 11,000 words.
pub const MAX_INDEXED_TOKENS: usize = 16_384;

/// Common English function words: they match almost every memory and only slow BM25 down.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "again", "all", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "for",
    "from", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i",
    "if", "in", "into", "is", "it", "its", "just", "me", "my", "of", "on", "or", "our", "ours",
    "she", "so", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
    "those", "to", "too", "up", "us", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
];

/// Whether a lower-cased word is one of the common function words lexical queries drop.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

/// Lower-cased word tokens of a query, stopwords removed, first occurrence order, deduplicated.
/// When every word is a stopword the stopwords are kept, so a query never becomes empty.
pub fn query_terms(query: &str) -> Vec<String> {
    let words: Vec<String> = words(query).collect();
    // A set, not `Vec::contains`: a long query of distinct words would be quadratic.
    let mut seen: HashSet<&str> = HashSet::new();
    let mut out: Vec<String> = Vec::new();
    for w in words.iter().filter(|w| !STOPWORDS.contains(&w.as_str())) {
        if seen.insert(w) {
            out.push(w.clone());
        }
    }
    if out.is_empty() {
        for w in &words {
            if seen.insert(w) {
                out.push(w.clone());
            }
        }
    }
    out
}

/// The words of a text: maximal runs of alphanumeric characters, lower-cased, each cut to
/// [`MAX_TOKEN_CHARS`] characters.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        // Cut before lower-casing (so a long word costs no more than its head) and after it
        // (lower-casing may lengthen a word: `İ` becomes two characters).
        .map(|w| cut(&cut(w).to_lowercase()).to_string())
}

fn cut(word: &str) -> &str {
    match word.char_indices().nth(MAX_TOKEN_CHARS) {
        Some((at, _)) => &word[..at],
        None => word,
    }
}

/// A format character (general category Cf): zero-width joiners and spaces, bidi controls, the
/// byte order mark, invisible operators and tags.
pub fn is_format(c: char) -> bool {
    get_general_category(c) == GeneralCategory::Format
}

/// Whether a text shows anything: a character that is neither whitespace, a control (Cc) nor a
/// format character (Cf). `"\u{200B}\u{FEFF}"` and `"\0"` show nothing, like `"  "`.
pub fn has_visible_content(text: &str) -> bool {
    text.chars()
        .any(|c| !(c.is_whitespace() || c.is_control() || is_format(c)))
}

/// `text` with consecutive repeated lines collapsed to one: the text a memory was embedded from,
/// recovered from its lexical index text (which repeats the memory's own line as a boost).
pub fn collapse_repeated_lines(text: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for line in text.split('\n') {
        if out.last() != Some(&line) {
            out.push(line);
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_drop_stopwords_and_punctuation() {
        assert_eq!(
            query_terms("What did Caroline paint, and where?"),
            vec!["caroline", "paint"]
        );
        assert_eq!(query_terms("who is he"), vec!["who", "is", "he"]);
        assert!(query_terms("  ?! ").is_empty());
        assert_eq!(query_terms("Zürich zürich"), vec!["zürich"]);
    }

    #[test]
    fn words_are_cut_to_the_token_limit_alike_for_any_case() {
        let long = "Y".repeat(100_000);
        let got: Vec<String> = words(&format!("{long} ok {}", long.to_lowercase())).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0], "y".repeat(MAX_TOKEN_CHARS));
        assert_eq!(got[0], got[2]);
        assert_eq!(got[1], "ok");
        // Cutting is idempotent, so a query term analysed again by a store stays the same.
        assert_eq!(words(&got[0]).collect::<Vec<_>>(), vec![got[0].clone()]);
        let dotted = "İ".repeat(MAX_TOKEN_CHARS);
        assert!(words(&dotted).all(|w| w.chars().count() <= MAX_TOKEN_CHARS));
    }

    #[test]
    fn invisible_text_has_no_visible_content() {
        for blank in [
            "",
            "  \n\t",
            "\u{0}\u{0}",
            "\u{200B}\u{200D}\u{FEFF}",
            "\u{202E}\u{2066}",
        ] {
            assert!(!has_visible_content(blank), "{blank:?}");
        }
        for shown in ["a", "\u{200B}x", " 1 ", "é", "😀"] {
            assert!(has_visible_content(shown), "{shown:?}");
        }
    }
}
