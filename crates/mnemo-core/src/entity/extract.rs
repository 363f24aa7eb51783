//! The extractor's tokens (words, numbers, punctuation; sentence and line starts), the quoted
//! titles, and the walk that tries a date, a number or a name at each token.

use super::dates::{date_at, number_at};
use super::names::{name_at, split_word};
use super::{EntityMention, CURRENCY, MAX_MENTIONS, MAX_MENTION_CHARS, TITLE};
use std::collections::HashSet;

/// Whether `word` is one of the space-separated words of `list`.
pub(crate) fn listed(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Word,
    Number,
    Punct,
}

#[derive(Debug)]
pub(crate) struct Token<'a> {
    pub text: &'a str,
    pub start: usize,
    pub end: usize,
    pub kind: Kind,
    /// First word of a sentence (or of a line).
    pub sentence_start: bool,
    pub newline_before: bool,
}

impl Token<'_> {
    pub(crate) fn lower(&self) -> String {
        self.text.to_lowercase()
    }
    pub(crate) fn is_punct(&self, c: &str) -> bool {
        self.kind == Kind::Punct && self.text == c
    }
    pub(crate) fn capitalised(&self) -> bool {
        self.kind == Kind::Word && self.text.chars().next().is_some_and(char::is_uppercase)
    }
}

pub(crate) fn tokenize(text: &str) -> Vec<Token<'_>> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let byte = |k: usize| chars.get(k).map_or(text.len(), |c| c.0);
    let next_is = |k: usize, f: fn(&char) -> bool| chars.get(k + 1).is_some_and(|c| f(&c.1));
    let mut out: Vec<Token<'_>> = Vec::new();
    let (mut i, mut newline, mut boundary) = (0, false, true);
    while i < chars.len() {
        let c = chars[i].1;
        if c.is_whitespace() {
            newline |= c == '\n';
            i += 1;
            continue;
        }
        let start = i;
        let kind = if c.is_alphabetic() {
            i += 1;
            while let Some(&(_, c)) = chars.get(i) {
                let inner = (matches!(c, '\'' | '’') && next_is(i, |n| n.is_alphabetic()))
                    || (c == '-' && next_is(i, |n| n.is_alphanumeric()));
                if !(c.is_alphanumeric() || inner) {
                    break;
                }
                i += 1;
            }
            Kind::Word
        } else if c.is_ascii_digit() || (CURRENCY.contains(&c) && next_is(i, char::is_ascii_digit))
        {
            i += 1;
            while let Some(&(_, c)) = chars.get(i) {
                let inner = matches!(c, '.' | ',' | '-' | ':') && next_is(i, char::is_ascii_digit);
                if c == '%' {
                    i += 1;
                    break;
                }
                if !(c.is_alphanumeric() || inner) {
                    break;
                }
                i += 1;
            }
            Kind::Number
        } else {
            i += 1;
            Kind::Punct
        };
        let token_text = &text[byte(start)..byte(i)];
        out.push(Token {
            text: token_text,
            start: byte(start),
            end: byte(i),
            kind,
            sentence_start: boundary || newline,
            newline_before: newline,
        });
        boundary = match kind {
            Kind::Punct if matches!(token_text, "." | "!" | "?" | ":") => true,
            // Opening quotes and brackets keep a sentence start for the word after them.
            Kind::Punct if matches!(token_text, "\"" | "“" | "‘" | "'" | "(" | "*" | "-" | "—") => {
                boundary || newline
            }
            _ => false,
        };
        newline = false;
    }
    out
}

/// Byte ranges of quoted titles, from the opening quote to just past the closing one.
fn titles(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, char)> = None;
    for (i, c) in text.char_indices() {
        match (open, c) {
            (None, '"' | '“') => open = Some((i, c)),
            (Some((o, q)), '"' | '”') if q == '"' && c == '"' || q == '“' && c == '”' => {
                let inner = text[o + q.len_utf8()..i]
                    .trim()
                    .trim_end_matches([',', '.']);
                let len = inner.chars().count();
                if (2..=80).contains(&len) && !inner.contains('\n') {
                    out.push((o, i + c.len_utf8(), inner.to_string()));
                }
                open = None;
            }
            _ => {}
        }
    }
    out
}

/// Words of a title are dropped; its opening quote stays as a barrier between neighbours. One
/// walk over both lists (each in text order, titles disjoint); `work` counts its steps.
fn outside_titles<'a>(
    tokens: Vec<Token<'a>>,
    spans: &[(usize, usize, String)],
    work: &mut usize,
) -> Vec<Token<'a>> {
    let mut spans = spans.iter().peekable();
    tokens
        .into_iter()
        .filter(|t| {
            *work += 1;
            // A title ending before this token ends before every later one too.
            while spans.next_if(|(_, e, _)| *e <= t.start).is_some() {
                *work += 1;
            }
            spans.peek().is_none_or(|(s, _, _)| t.start <= *s)
        })
        .collect()
}

/// Words the text uses in lower case and never capitalises mid-sentence: a sentence's first
/// word that is one of them is no name.
pub(crate) fn common_words(tokens: &[Token<'_>]) -> HashSet<String> {
    let base_of = |t: &Token<'_>| split_word(t.text).0.to_lowercase();
    let mid_sentence_caps: HashSet<String> = tokens
        .iter()
        .filter(|t| t.capitalised() && !t.sentence_start)
        .map(base_of)
        .collect();
    tokens
        .iter()
        .filter(|t| t.kind == Kind::Word && !t.capitalised())
        .map(base_of)
        .filter(|w| !mid_sentence_caps.contains(w))
        .collect()
}

/// Extracts the entities a text mentions, by the rules described in the module docs.
pub fn extract_entities(text: &str) -> Vec<EntityMention> {
    extract(text, &mut 0)
}

/// [`extract_entities`], counting in `work` the steps whose number could outgrow the text.
pub(super) fn extract(text: &str, work: &mut usize) -> Vec<EntityMention> {
    let title_spans = titles(text);
    let mut found: Vec<(usize, EntityMention)> = title_spans
        .iter()
        .map(|(start, _, t)| (*start, EntityMention::new(t.clone(), TITLE)))
        .collect();
    let tokens = outside_titles(tokenize(text), &title_spans, work);
    let common = common_words(&tokens);
    let mut i = 0;
    while i < tokens.len() {
        let t = &tokens[i];
        let (used, mention) = if let Some((used, m)) = date_at(&tokens, i, text) {
            (used, Some(m))
        } else if t.kind == Kind::Number {
            number_at(&tokens, i, text)
        } else if t.capitalised() {
            name_at(&tokens, i, text, &common)
        } else {
            (1, None)
        };
        if let Some(m) = mention {
            found.push((t.start, m));
        }
        i += used.max(1);
    }
    found.sort_by_key(|(start, _)| *start);
    let mut seen = HashSet::new();
    found
        .into_iter()
        .map(|(_, m)| m)
        .filter(|m| m.name.chars().nth(MAX_MENTION_CHARS).is_none())
        .filter(|m| !m.normalized.is_empty() && seen.insert(m.normalized.clone()))
        .take(MAX_MENTIONS)
        .collect()
}
