//! Query text processing shared by every backend's lexical side.

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

/// Lower-cased word tokens of a query, stopwords removed, first occurrence order, deduplicated.
/// When every word is a stopword the stopwords are kept, so a query never becomes empty.
pub fn query_terms(query: &str) -> Vec<String> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let mut out: Vec<String> = Vec::new();
    for w in words.iter().filter(|w| !STOPWORDS.contains(&w.as_str())) {
        if !out.contains(w) {
            out.push(w.clone());
        }
    }
    if out.is_empty() {
        for w in words {
            if !out.contains(&w) {
                out.push(w);
            }
        }
    }
    out
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
}
