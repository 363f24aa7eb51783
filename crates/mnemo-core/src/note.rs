//! Notes (the A-MEM lineage): a memory whose text is kept as given and which carries keywords,
//! tags and a context line. What the indexes see is the *enriched* text ([`enriched_text`]):
//! the text, then the context, keywords and tags, so a note is found by what it is about as
//! well as by its words. The record and every answer keep the original text.
//!
//! Without a chat model the missing fields are made by rules, documented here and nowhere else:
//!
//! - **keywords** ([`rule_keywords`]): the names, places, dates and titles the rule-based entity
//!   extractor finds in the text (at most 4), then its content words (no stopwords, 4+ letters,
//!   not all digits) ranked by how rare they are among the scope's nearest notes
//!   (`ln((1 + k) / (1 + df))`, `df` the neighbours that use the word; longer words first on a
//!   tie), up to [`MAX_RULE_KEYWORDS`] in all;
//! - **context** ([`rule_context`]): who said it, the session and the date, where known;
//! - **tags**: none. Tags are a judgement; rules do not invent them.
//!
//! Links made by rules ([`NoteConfig`]): a new note is linked (`related`, author `rule`) to each
//! of its `neighbours` nearest notes whose cosine similarity is at least `link_similarity`, and
//! to any note of the scope it shares a rare name with (the store's entity informativeness, in
//! [0, 1], at least `link_entity`); and to earlier notes *of the same speaker* (the note's
//! `actor`) that share a rare word with it ([`speaker_topic_links`]): statements one person
//! made about one subject at different times, which is what questions that gather several
//! turns ask for. The strength of a link is the largest of its signals.

use crate::error::{Error, Result};
use crate::memory::NoteFields;
use std::collections::{HashMap, HashSet};

/// The most keywords or tags a note may carry.
pub const MAX_LIST_ENTRIES: usize = 32;
/// The longest keyword or tag, in characters.
pub const MAX_ENTRY_CHARS: usize = 100;
/// The longest context line (and link or evolution reason), in characters.
pub const MAX_CONTEXT_CHARS: usize = 2_000;
/// How many keywords the rules write at most.
pub const MAX_RULE_KEYWORDS: usize = 8;

/// Settings of note adds. Defaults are the documented ones.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoteConfig {
    /// Nearest notes of the scope that are link (and, with a model, evolution) candidates.
    pub neighbours: usize,
    /// Rule links: cosine similarity of the enriched texts at or above which notes are linked.
    pub link_similarity: f32,
    /// Rule links: informativeness of a shared name (see `Store::entity_candidates`) at or above
    /// which notes are linked.
    pub link_entity: f32,
    /// Rule links: the most links one new note gets (the strongest are kept).
    pub max_rule_links: usize,
    /// Rule links by speaker and subject ([`speaker_topic_links`]): a word counts as rare when
    /// at most this many of the new note's lexical candidates use it (0: the rule is off).
    pub speaker_link_df: usize,
    /// Rule links by speaker and subject: the lexical candidates a new note fetches (its
    /// cost: each is loaded and its words compared).
    pub speaker_link_pool: usize,
}

impl Default for NoteConfig {
    fn default() -> Self {
        Self {
            neighbours: 5,
            link_similarity: 0.9,
            link_entity: 0.8,
            max_rule_links: 5,
            speaker_link_df: 3,
            speaker_link_pool: 40,
        }
    }
}

/// A caller's note fields as given: `None` means "not given" (the model or the rules fill it),
/// an empty list means "none".
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NoteInput {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keywords: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
}

impl NoteInput {
    /// Checks the given fields and returns them trimmed (see [`clean_list`]).
    pub fn validated(&self) -> Result<NoteInput> {
        Ok(NoteInput {
            keywords: self
                .keywords
                .as_deref()
                .map(|k| clean_list("keywords", k))
                .transpose()?,
            tags: self
                .tags
                .as_deref()
                .map(|t| clean_list("tags", t))
                .transpose()?,
            context: self
                .context
                .as_deref()
                .map(|c| clean_context("context", c))
                .transpose()?,
        })
    }

    pub fn is_complete(&self) -> bool {
        self.keywords.is_some() && self.tags.is_some() && self.context.is_some()
    }
}

/// A keyword or tag list as stored: entries trimmed, duplicates (ignoring case) dropped, order
/// kept. An empty entry, one with a line break or control character, one longer than
/// [`MAX_ENTRY_CHARS`], or more than [`MAX_LIST_ENTRIES`] entries is invalid input naming
/// `field`.
pub fn clean_list(field: &str, items: &[String]) -> Result<Vec<String>> {
    if items.len() > MAX_LIST_ENTRIES {
        return Err(Error::invalid(
            field,
            format!(
                "{} entries; at most {MAX_LIST_ENTRIES} are allowed",
                items.len()
            ),
        ));
    }
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(items.len());
    for (i, raw) in items.iter().enumerate() {
        let t = raw.trim();
        if t.is_empty() {
            return Err(Error::invalid(
                field,
                format!("entry {i} is empty; entries are non-empty strings"),
            ));
        }
        if t.chars().any(char::is_control) {
            return Err(Error::invalid(
                field,
                format!("entry {i} contains a line break or control character"),
            ));
        }
        if t.chars().count() > MAX_ENTRY_CHARS {
            return Err(Error::invalid(
                field,
                format!("entry {i} is longer than {MAX_ENTRY_CHARS} characters"),
            ));
        }
        if seen.insert(t.to_lowercase()) {
            out.push(t.to_string());
        }
    }
    Ok(out)
}

/// A context line as stored: trimmed, one line, at most [`MAX_CONTEXT_CHARS`].
pub fn clean_context(field: &str, raw: &str) -> Result<String> {
    let t = raw.trim();
    if t.chars().any(|c| c.is_control()) {
        return Err(Error::invalid(
            field,
            "must be one line without control characters",
        ));
    }
    crate::limits::check_chars(field, t, MAX_CONTEXT_CHARS)?;
    Ok(t.to_string())
}

impl NoteFields {
    /// The same checks as [`NoteInput::validated`], for fields built in code or read from a
    /// model or an import.
    pub fn validated(&self) -> Result<NoteFields> {
        Ok(NoteFields {
            keywords: clean_list("keywords", &self.keywords)?,
            tags: clean_list("tags", &self.tags)?,
            context: clean_context("context", &self.context)?,
        })
    }
}

/// The text a note is embedded and lexically indexed from: its text, then one line each for
/// the context, keywords and tags that are not empty.
pub fn enriched_text(text: &str, note: &NoteFields) -> String {
    let mut out = text.to_string();
    if !note.context.is_empty() {
        out.push_str("\ncontext: ");
        out.push_str(&note.context);
    }
    if !note.keywords.is_empty() {
        out.push_str("\nkeywords: ");
        out.push_str(&note.keywords.join(", "));
    }
    if !note.tags.is_empty() {
        out.push_str("\ntags: ");
        out.push_str(&note.tags.join(", "));
    }
    out
}

/// A note's lexical entry after its fields change: `new_enriched`, then whatever followed the
/// old enriched text in the old entry (a conversation window), so evolution changes what the
/// note says about itself and nothing else. An entry that does not start with `old_enriched`
/// (written otherwise) is replaced by `new_enriched` alone.
pub fn reindexed(old_entry: Option<&str>, old_enriched: &str, new_enriched: &str) -> String {
    let rest = old_entry
        .and_then(|e| e.strip_prefix(old_enriched))
        .filter(|r| r.is_empty() || r.starts_with('\n'))
        .unwrap_or("");
    format!("{new_enriched}{rest}")
}

/// The rule context: who said it, in which session, on which day — the parts that are known.
pub fn rule_context(
    speaker: Option<&str>,
    session: Option<&str>,
    at: Option<crate::memory::Timestamp>,
) -> String {
    let mut parts = Vec::new();
    if let Some(s) = speaker.map(str::trim).filter(|s| !s.is_empty()) {
        parts.push(format!("said by {s}"));
    }
    if let Some(s) = session.map(str::trim).filter(|s| !s.is_empty()) {
        parts.push(format!("session {s}"));
    }
    if let Some(t) = at {
        parts.push(t.format("%Y-%m-%d").to_string());
    }
    parts.join("; ")
}

/// The rule keywords of `text` against the texts of its nearest notes (see the module doc).
pub fn rule_keywords(text: &str, neighbours: &[&str]) -> Vec<String> {
    let words: Vec<HashSet<String>> = neighbours.iter().map(|t| word_set(t)).collect();
    rule_keywords_against(text, &words.iter().collect::<Vec<_>>())
}

/// The distinct words of `text`, as [`rule_keywords_against`] takes its neighbours: a caller
/// that judges many texts against the same neighbours splits each neighbour once.
pub fn word_set(text: &str) -> HashSet<String> {
    crate::text::words(text).collect()
}

/// [`rule_keywords`] with the neighbours' texts already split ([`word_set`]).
pub fn rule_keywords_against(text: &str, neighbour_words: &[&HashSet<String>]) -> Vec<String> {
    const MAX_ENTITY_KEYWORDS: usize = 4;
    let mut out: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for e in crate::entity::extract_entities(text) {
        if out.len() == MAX_ENTITY_KEYWORDS {
            break;
        }
        if e.entity_type == crate::entity::NUMBER {
            continue;
        }
        if seen.insert(e.name.to_lowercase()) {
            for w in crate::text::words(&e.name) {
                seen.insert(w);
            }
            out.push(e.name);
        }
    }
    let k = neighbour_words.len() as f32;
    let mut scored: HashMap<String, (f32, usize)> = HashMap::new();
    for (pos, w) in crate::text::words(text).enumerate() {
        if w.chars().count() < 4
            || crate::text::is_stopword(&w)
            || w.chars().all(|c| c.is_ascii_digit())
            || seen.contains(&w)
            || scored.contains_key(&w)
        {
            continue;
        }
        let df = neighbour_words.iter().filter(|n| n.contains(&w)).count() as f32;
        scored.insert(w, (((1.0 + k) / (1.0 + df)).ln(), pos));
    }
    let mut words: Vec<(String, (f32, usize))> = scored.into_iter().collect();
    words.sort_by(|a, b| {
        b.1 .0
            .total_cmp(&a.1 .0)
            .then(b.0.chars().count().cmp(&a.0.chars().count()))
            .then(a.1 .1.cmp(&b.1 .1))
    });
    out.extend(
        words
            .into_iter()
            .map(|(w, _)| w)
            .take(MAX_RULE_KEYWORDS.saturating_sub(out.len())),
    );
    out
}

/// The content words of a text for the speaker-and-subject rule: no stopwords, 4+ letters,
/// not all digits, plural and verb endings folded (`-s`, `-es`, `-ed`, `-ing` off when 4
/// letters remain), so "camping" and "camped" are one word.
pub fn topic_words(text: &str) -> HashSet<String> {
    crate::text::words(text)
        .filter(|w| {
            w.chars().count() >= 4
                && !crate::text::is_stopword(w)
                && !w.chars().all(|c| c.is_ascii_digit())
        })
        .map(|w| {
            for suffix in ["ing", "ed", "es", "s"] {
                if let Some(stem) = w.strip_suffix(suffix) {
                    if stem.chars().count() >= 4 {
                        return stem.to_string();
                    }
                }
            }
            w
        })
        .collect()
}

/// Speaker-and-subject links of a new note: among `candidates` (earlier notes the lexical
/// index found for the new note's words, as `(same speaker, topic words)`), a word of `new`
/// is rare when at most `max_df` candidates use it, and each same-speaker candidate that
/// shares rare words is linked with strength `min(1, Σ 1 / df(w))` over them: one word only
/// the two share links at full strength, words several notes use weigh less. Returns
/// `(candidate index, strength, shared rare words)`, strongest first.
pub fn speaker_topic_links<W: std::borrow::Borrow<HashSet<String>>>(
    new: &HashSet<String>,
    candidates: &[(bool, W)],
    max_df: usize,
) -> Vec<(usize, f32, Vec<String>)> {
    if max_df == 0 {
        return Vec::new();
    }
    let mut df: HashMap<&str, usize> = HashMap::new();
    for (_, words) in candidates {
        for w in words.borrow().intersection(new) {
            *df.entry(w.as_str()).or_default() += 1;
        }
    }
    let mut out: Vec<(usize, f32, Vec<String>)> = candidates
        .iter()
        .enumerate()
        .filter(|(_, (same, _))| *same)
        .filter_map(|(i, (_, words))| {
            let mut shared: Vec<(&str, usize)> = words
                .borrow()
                .intersection(new)
                .map(|w| (w.as_str(), df.get(w.as_str()).copied().unwrap_or(1)))
                .filter(|(_, n)| *n <= max_df)
                .collect();
            if shared.is_empty() {
                return None;
            }
            shared.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(b.0)));
            let strength: f32 = shared.iter().map(|(_, n)| 1.0 / *n as f32).sum();
            Some((
                i,
                strength.min(1.0),
                shared.iter().map(|(w, _)| w.to_string()).collect(),
            ))
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_words_fold_endings_and_drop_short_and_common_words() {
        let w = topic_words("We went camping; they camped by the lakes in 2023!");
        let mut v: Vec<&str> = w.iter().map(String::as_str).collect();
        v.sort();
        assert_eq!(v, vec!["camp", "lake", "went"]);
    }

    #[test]
    fn speaker_links_need_the_same_speaker_and_a_rare_shared_word() {
        let set = |ws: &[&str]| ws.iter().map(|w| w.to_string()).collect::<HashSet<_>>();
        let new = set(&["pottery", "kiln", "bowl"]);
        let candidates = vec![
            (true, set(&["pottery", "class"])), // same speaker, "pottery" in 2 candidates
            (false, set(&["pottery", "kiln"])), // other speaker: never linked
            (true, set(&["kiln", "bowl", "tea"])), // same speaker, two rarer words
            (true, set(&["weather"])),          // shares nothing
        ];
        let got = speaker_topic_links(&new, &candidates, 5);
        let idx: Vec<usize> = got.iter().map(|g| g.0).collect();
        assert_eq!(
            idx,
            vec![2, 0],
            "strongest first, other speakers and no-share left out"
        );
        // kiln (df 2) + bowl (df 1): 1/2 + 1 capped at 1; pottery (df 2): 1/2.
        assert_eq!(got[0].1, 1.0);
        assert_eq!(got[0].2, vec!["bowl", "kiln"]);
        assert!((got[1].1 - 0.5).abs() < 1e-6);
        // A word more candidates use than the cap is not rare; 0 turns the rule off.
        assert_eq!(speaker_topic_links(&new, &candidates, 1).len(), 1);
        assert!(speaker_topic_links(&new, &candidates, 0).is_empty());
    }

    #[test]
    fn lists_are_trimmed_deduplicated_and_bounded() {
        let ok = clean_list("tags", &[" Travel ".into(), "travel".into(), "food".into()]).unwrap();
        assert_eq!(ok, vec!["Travel", "food"]);
        for bad in [
            vec!["".to_string()],
            vec!["a\nb".to_string()],
            vec!["x".repeat(101)],
        ] {
            let e = clean_list("tags", &bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
            assert!(e.to_string().contains("tags"), "{e}");
        }
        let many: Vec<String> = (0..33).map(|i| format!("k{i}")).collect();
        assert!(clean_list("keywords", &many)
            .unwrap_err()
            .to_string()
            .contains("keywords"));
    }

    #[test]
    fn the_enriched_text_starts_with_the_text_and_skips_empty_fields() {
        let n = NoteFields {
            keywords: vec!["Lisbon".into(), "move".into()],
            tags: vec![],
            context: "said by Ana".into(),
        };
        assert_eq!(
            enriched_text("I moved", &n),
            "I moved\ncontext: said by Ana\nkeywords: Lisbon, move"
        );
        assert_eq!(enriched_text("plain", &NoteFields::default()), "plain");
    }

    #[test]
    fn rule_keywords_put_names_first_and_prefer_words_the_neighbours_lack() {
        let kw = rule_keywords(
            "Maria adopted a greyhound from the shelter in Porto last weekend",
            &["the shelter needs volunteers", "another shelter story"],
        );
        assert_eq!(&kw[..2], &["Maria", "Porto"]);
        let pos = |w: &str| kw.iter().position(|k| k == w).unwrap();
        assert!(pos("greyhound") < pos("shelter"), "{kw:?}");
        assert!(!kw.iter().any(|k| k == "from" || k == "the"), "{kw:?}");
        assert!(kw.len() <= MAX_RULE_KEYWORDS);
    }

    #[test]
    fn reindexing_keeps_the_window_and_replaces_the_fields() {
        let old = "hi\ntags: a";
        assert_eq!(
            reindexed(Some("hi\ntags: a\nAna: before"), old, "hi\ntags: b"),
            "hi\ntags: b\nAna: before"
        );
        assert_eq!(
            reindexed(Some("hi\ntags: a"), old, "hi\ntags: b"),
            "hi\ntags: b"
        );
        assert_eq!(
            reindexed(Some("something else"), old, "hi\ntags: b"),
            "hi\ntags: b"
        );
        assert_eq!(
            reindexed(Some("hi\ntags: ab"), old, "hi\ntags: b"),
            "hi\ntags: b"
        );
        assert_eq!(reindexed(None, old, "new"), "new");
    }

    #[test]
    fn the_rule_context_names_only_what_is_known() {
        let at = chrono::DateTime::parse_from_rfc3339("2023-05-08T13:56:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert_eq!(
            rule_context(Some("Caroline"), Some("3"), Some(at)),
            "said by Caroline; session 3; 2023-05-08"
        );
        assert_eq!(rule_context(None, None, None), "");
    }
}
