//! The model-free relation extractor: the walk over sentences, and what the patterns share —
//! reading a name at a token, resolving a subject, and keeping a candidate.
//!
//! Precision first: a pattern fires only on a closed word list (see `lexicon`) next to a
//! capitalised name or a first-person subject, and every doubtful case (a pronoun, a past or
//! negated verb, a name run that does not end where expected) yields nothing. First person
//! ("I", "my", "we", "our") is the speaker when one is given and nothing otherwise: the graph
//! has no entity called "I".
//!
//! Cost: one ASCII lower-casing pass decides whether any trigger word occurs at all; only then
//! is the text tokenised (the entity extractor's tokens) and each sentence walked once. Every
//! pattern looks at most a few tokens around its trigger and a name is read from a window of
//! [`NAME_WINDOW`] tokens, so the work is linear in the text.

use super::lexicon::TRIGGERS;
use super::{patterns, ObjectKind, RelationCandidate, PERSON};
use crate::entity::{
    common_words, name_at, normalize_entity, split_word, tokenize, Token, MAX_MENTION_CHARS,
};
use std::cell::OnceCell;
use std::collections::HashSet;

/// The most candidates one sentence yields; the first ones in the sentence are kept.
pub const MAX_RELATIONS_PER_SENTENCE: usize = 8;
/// The most candidates one text yields.
pub const MAX_RELATIONS: usize = 256;
/// Tokens a name may span; a longer capitalised run is no name the rules trust.
const NAME_WINDOW: usize = 5;
/// A longer sentence is quoted as the tokens around the match rather than whole.
const MAX_SENTENCE_CHARS: usize = 400;

/// Reads `(subject, predicate, object)` candidates from English text without a model.
///
/// `speaker` is the name first person resolves to; without one, first-person statements are
/// dropped, and so are they when the speaker's name is itself a bare pronoun ("I", "user"). The
/// forms read: possessive kinship and friendship ("my sister Ana", "Ana, my
/// sister", "Ana is my sister", "Caroline's husband Tom", "my friends Tom and Ana"), pets ("we
/// adopted a dog named Biscuit", "my cat Luna"), "I work at / live in / moved to / study at /
/// am married to X" (and the same after a name), "I joined X", ages ("I'm 32 years old"), and
/// likes and dislikes ("I love hiking", "I hate Mondays"). See docs/relations-extraction.md.
///
/// Output: deduplicated, in text order, no self-loops, at most
/// [`MAX_RELATIONS_PER_SENTENCE`] per sentence and [`MAX_RELATIONS`] in all.
pub fn extract_relations(text: &str, speaker: Option<&str>) -> Vec<RelationCandidate> {
    let speaker = speaker.map(str::trim).filter(|s| {
        !s.is_empty() && s.chars().nth(MAX_MENTION_CHARS).is_none() && !super::is_pronoun(s)
    });
    if !may_state_relation(text) {
        return Vec::new();
    }
    let tokens = tokenize(text);
    // Built on the first name read: most turns that pass the trigger check read none.
    let common = OnceCell::new();
    let lower: Vec<String> = tokens
        .iter()
        .map(|t| t.text.to_lowercase().replace('’', "'"))
        .collect();
    let mut out = Out {
        seen: HashSet::new(),
        found: Vec::new(),
    };
    let mut start = 0;
    while start < tokens.len() && out.found.len() < MAX_RELATIONS {
        let end = (start + 1..tokens.len())
            .find(|&k| tokens[k].sentence_start)
            .unwrap_or(tokens.len());
        let cx = Sentence {
            tokens: &tokens,
            lower: &lower,
            text,
            common: &common,
            speaker,
            start,
            end,
        };
        let mut kept = Vec::new();
        patterns::walk(&cx, &mut kept);
        let mut in_sentence = 0;
        for found in kept {
            if in_sentence == MAX_RELATIONS_PER_SENTENCE || out.found.len() == MAX_RELATIONS {
                break;
            }
            in_sentence += usize::from(out.keep(found, &cx));
        }
        start = end;
    }
    out.found
}

/// Whether any trigger word occurs (ASCII case-insensitively); nothing else is done otherwise.
fn may_state_relation(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    TRIGGERS.iter().any(|t| lower.contains(t))
}

/// One sentence's tokens `start..end` and what the patterns need around them.
pub(super) struct Sentence<'t, 'a> {
    pub tokens: &'t [Token<'a>],
    /// Each token in lower case with `’` as `'`.
    pub lower: &'t [String],
    pub text: &'a str,
    pub common: &'t OnceCell<HashSet<String>>,
    pub speaker: Option<&'a str>,
    pub start: usize,
    pub end: usize,
}

/// A name read from the text: its words, its type by the entity rules, the token after it and
/// whether it ended in a possessive `'s`.
pub(super) struct Name {
    pub text: String,
    /// The token it starts at.
    pub start: usize,
    pub entity_type: &'static str,
    pub next: usize,
    pub possessive: bool,
}

/// One end of a relation before it is kept: a name and its type.
pub(super) type End = (String, &'static str);

/// A candidate before the checks every candidate gets, with the token span that states it.
pub(super) struct Found {
    pub subject: End,
    pub predicate: &'static str,
    pub object: End,
    pub object_kind: ObjectKind,
    pub span: (usize, usize),
}

impl<'a> Sentence<'_, 'a> {
    pub(super) fn word(&self, k: usize) -> &str {
        if k >= self.start && k < self.end {
            &self.lower[k]
        } else {
            ""
        }
    }

    /// The word at `k` without a trailing possessive or contraction, and whether it had `'s`.
    pub(super) fn base(&self, k: usize) -> (&str, bool) {
        let (base, possessive, _) = split_word(self.word(k));
        (base, possessive)
    }

    /// The name starting at token `k`, if one starts there and fits the window.
    pub(super) fn name(&self, k: usize) -> Option<Name> {
        let t = self
            .tokens
            .get(k)
            .filter(|_| k >= self.start && k < self.end)?;
        if !t.capitalised() {
            return None;
        }
        let lo = k.saturating_sub(2).max(self.start);
        let hi = (k + NAME_WINDOW).min(self.end);
        let common = self.common.get_or_init(|| common_words(self.tokens));
        let (used, mention) = name_at(&self.tokens[lo..hi], k - lo, self.text, common);
        let mention = mention?;
        let next = k + used;
        // The run went on past the window: too long to be a name the rules trust.
        if next == hi && hi < self.end && self.tokens[hi].capitalised() {
            return None;
        }
        let (_, possessive, _) = split_word(self.tokens[next - 1].text);
        // The entity rules may drop an ordinary-looking first word of a sentence.
        let whole = split_word(t.text).0;
        if !mention.name.starts_with(whole) || mention.normalized.is_empty() {
            return None;
        }
        let entity_type = match mention.entity_type.as_str() {
            crate::entity::PERSON => crate::entity::PERSON,
            crate::entity::PLACE => crate::entity::PLACE,
            _ => crate::entity::NAME,
        };
        Some(Name {
            text: mention.name,
            start: k,
            entity_type,
            next,
            possessive,
        })
    }

    /// The name whose last token is `last` (a run of at most [`NAME_WINDOW`] tokens).
    pub(super) fn name_ending_at(&self, last: usize) -> Option<Name> {
        let first = last.saturating_sub(NAME_WINDOW - 1).max(self.start);
        (first..=last)
            .filter_map(|k| self.name(k))
            .find(|n| n.next == last + 1)
    }

    /// First person at token `k` resolved to the speaker ("I", "I'm", "we", "my"…).
    pub(super) fn first_person(&self, k: usize) -> Option<End> {
        let w = self.word(k);
        let first = matches!(
            w,
            "i" | "i'm" | "i've" | "we" | "we're" | "we've" | "my" | "our" | "me" | "us"
        );
        first.then_some(())?;
        self.speaker.map(|s| (s.to_string(), PERSON))
    }

    /// The subject whose last token is `k`: first person or a person's name (not possessive),
    /// and whether it was first person.
    pub(super) fn subject_at(&self, k: usize) -> Option<(End, bool)> {
        if k < self.start || k >= self.end {
            return None;
        }
        if let Some(me) = self.first_person(k) {
            return Some((me, true));
        }
        let name = self.name_ending_at(k)?;
        (!name.possessive && name.entity_type == crate::entity::PERSON)
            .then_some(((name.text, PERSON), false))
    }

    /// The sentence text, or the tokens around `span` when the sentence is long.
    fn quote(&self, span: (usize, usize)) -> String {
        let whole = &self.text[self.tokens[self.start].start..self.tokens[self.end - 1].end];
        if whole.len() <= MAX_SENTENCE_CHARS {
            return whole.trim().to_string();
        }
        let from = span.0.saturating_sub(12).max(self.start);
        let to = (span.1 + 12).min(self.end - 1);
        self.text[self.tokens[from].start..self.tokens[to].end]
            .trim()
            .to_string()
    }
}

struct Out {
    seen: HashSet<(String, &'static str, String)>,
    found: Vec<RelationCandidate>,
}

impl Out {
    /// Keeps a candidate unless it is a self-loop, over-long or already kept.
    fn keep(&mut self, f: Found, cx: &Sentence<'_, '_>) -> bool {
        let (s, o) = (
            normalize_entity(&f.subject.0),
            normalize_entity(&f.object.0),
        );
        let too_long = |n: &str| n.chars().nth(MAX_MENTION_CHARS).is_some();
        if s.is_empty() || o.is_empty() || s == o || too_long(&f.subject.0) || too_long(&f.object.0)
        {
            return false;
        }
        if !self.seen.insert((s, f.predicate, o)) {
            return false;
        }
        self.found.push(RelationCandidate {
            subject: f.subject.0,
            subject_type: f.subject.1.to_string(),
            predicate: f.predicate.to_string(),
            object: f.object.0,
            object_kind: f.object_kind,
            object_type: match f.object_kind {
                ObjectKind::Entity => f.object.1.to_string(),
                ObjectKind::Literal => String::new(),
            },
            sentence: cx.quote(f.span),
        });
        true
    }
}
