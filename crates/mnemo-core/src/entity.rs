//! Entity mentions: a rule-based extractor, the normal form names are compared in, and the rule
//! that decides when two normal forms are the same entity.
//!
//! [`extract_entities`] is the fallback used when no model extracts entities (or the model's
//! answer is unusable). It reads plain English text and needs no dictionary of names:
//!
//! - `title`: text between double or curly quotes, 2–80 characters (`"Becoming Nicole"`).
//!   Words inside a title are not extracted again.
//! - `date`: `2023-05-07`, `7 May 2023`, `May 7, 2023`, `May 7`, `May 2023`, a year after
//!   `in`/`since`/`during`/…, and month or weekday names on their own. A date's `normalized` is
//!   canonical rather than textual (`2023-05-07`, `2023-05`, `2022`, `may 7`, `friday`), so the
//!   same day written two ways is one entity.
//! - `number`: a number with an optional currency sign, percent sign and one following
//!   lower-case unit or noun (`$40`, `3 kids`, `12.5 km`).
//! - Runs of capitalised words form one name (`New York`, `Melanie Smith`, `University of
//!   Michigan`); a possessive `'s` ends the run and is dropped. A run right after `in`, `at`,
//!   `from`, `near`, `visited`, … (or `to` after a verb of motion: `went to Paris`) is a `place`;
//!   otherwise a single word or a plain two-to-three-word name is a `person`, and anything else
//!   (place or organisation words such as `Lake`, `University`, a connector like `of`, digits,
//!   acronyms) is a `name`.
//! - Capitalised function words (`I`, `The`, `Hey`, `Thanks`, contractions such as `Don't`) are
//!   never names. A sentence's first word is accepted as a name (`Caroline went…`) unless it looks
//!   like an ordinary word: a gerund or adverb (`Painting`, `Honestly`), or a word the text also
//!   uses in lower case.
//!
//! Results are deterministic, deduplicated by `normalized`, in order of first appearance. A
//! mention longer than [`MAX_MENTION_CHARS`] is no name and is dropped; a text yields at most
//! [`MAX_MENTIONS`] (each costs a store lookup). Extraction is linear in the text.
//!
//! [`normalize_entity`] and [`entities_match`] are the merge rules stores apply to mentions from
//! any extractor, model or rules.

use std::collections::HashSet;

use unicode_normalization::{char::is_combining_mark, UnicodeNormalization};

pub const PERSON: &str = "person";
pub const PLACE: &str = "place";
pub const DATE: &str = "date";
pub const NUMBER: &str = "number";
pub const TITLE: &str = "title";
/// A capitalised name that the rules cannot classify further.
pub const NAME: &str = "name";

/// The longest mention the rules extract, in characters (quoted titles stop at 80).
pub const MAX_MENTION_CHARS: usize = 100;
/// The most mentions the rules extract from one text, the first ones in the text.
pub const MAX_MENTIONS: usize = 256;

/// One entity named in a text: as written, normalised for matching, and its type (one of the
/// constants of this module when it comes from [`extract_entities`]; models may use others).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct EntityMention {
    pub name: String,
    pub normalized: String,
    pub entity_type: String,
}

impl EntityMention {
    /// A mention whose normal form is [`normalize_entity`] of its name.
    pub fn new(name: impl Into<String>, entity_type: impl Into<String>) -> Self {
        let name = name.into();
        EntityMention {
            normalized: normalize_entity(&name),
            name,
            entity_type: entity_type.into(),
        }
    }
}

/// Whether `word` is one of the space-separated words of `list`.
fn listed(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

/// Capitalised words that are never names on their own, compared in lower case.
const STOPWORDS: &str = "\
    a about absolutely actually after ah all also always amazing an and any anyone anything \
    anyway are as at aw awesome aww be because before but by bye can congrats congratulations \
    cool could dear definitely did do does dr each even every everyone everything exactly \
    first for from get give glad go good great had haha has have he hello her here hey hi his \
    hmm hope how i if in is it its just keep last later let lol look love make maybe me might \
    mr mrs ms must my never next nice no nobody nope not nothing now of often oh ok okay omg \
    on once or our please prof really remember see she should since so some someone something \
    sometimes soon sorry still sure take tell thank thanks that the their them then there \
    these they this those to today tomorrow tonight totally try uh um us was we well were what \
    when where which who why will wish with would wow yeah yep yes yesterday you your";

/// Lower-case words that never serve as the unit of a number (`3 of them` is just `3`).
const NOT_UNITS: &str = "\
    a am an and are as at be but by for from has have in is it of on or pm so than that the \
    then to was were with";

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

const WEEKDAYS: &[&str] = &[
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Words before a year that make it a date (`in 2022`, `since 2019`).
const YEAR_PREPS: &str = "after around before by during from in of since till until";

/// Words before a capitalised run that make it a place.
const PLACE_PREPS: &str = "\
    across around at from in inside into near outside through toward towards visit visited \
    visiting";

/// Words before `to` that make the run after it a place (`went to Paris`, not `talked to Mel`).
const MOTION: &str = "\
    back came come coming drive driving drove flew fly flying go goes going gone headed \
    heading move moved moving relocated return returned travel traveled traveling travelled \
    travelling trip way went";

/// Lower-case words allowed between capitalised words of one name.
const CONNECTORS: &str = "da de del der du la le of van von";

/// Words that make a multi-word name a place or organisation rather than a person.
const NON_PERSON: &str = "\
    academy airport association avenue bank bay beach bridge cafe castle center centre church \
    city club college company corp county east festival foundation gallery group hall hospital \
    hotel inc institute island islands kingdom lake las library los market mount mountains \
    museum national new north palace park republic restaurant river road saint san school \
    society south st stadium states station street team theater theatre tower united \
    university valley west";

const CURRENCY: &[char] = &['$', '€', '£', '¥', '₹'];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    Number,
    Punct,
}

#[derive(Debug)]
struct Token<'a> {
    text: &'a str,
    start: usize,
    end: usize,
    kind: Kind,
    /// First word of a sentence (or of a line).
    sentence_start: bool,
    newline_before: bool,
}

impl Token<'_> {
    fn lower(&self) -> String {
        self.text.to_lowercase()
    }
    fn is_punct(&self, c: &str) -> bool {
        self.kind == Kind::Punct && self.text == c
    }
    fn capitalised(&self) -> bool {
        self.kind == Kind::Word && self.text.chars().next().is_some_and(char::is_uppercase)
    }
}

fn tokenize(text: &str) -> Vec<Token<'_>> {
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

/// Extracts the entities a text mentions, by the rules described in the module docs.
pub fn extract_entities(text: &str) -> Vec<EntityMention> {
    extract(text, &mut 0)
}

/// [`extract_entities`], counting in `work` the steps whose number could outgrow the text.
fn extract(text: &str, work: &mut usize) -> Vec<EntityMention> {
    let title_spans = titles(text);
    let mut found: Vec<(usize, EntityMention)> = title_spans
        .iter()
        .map(|(start, _, t)| (*start, EntityMention::new(t.clone(), TITLE)))
        .collect();
    let tokens = outside_titles(tokenize(text), &title_spans, work);
    let base_of = |t: &Token<'_>| split_word(t.text).0.to_lowercase();
    let mid_sentence_caps: HashSet<String> = tokens
        .iter()
        .filter(|t| t.capitalised() && !t.sentence_start)
        .map(base_of)
        .collect();
    // Words the text uses in lower case and never capitalises mid-sentence.
    let common: HashSet<String> = tokens
        .iter()
        .filter(|t| t.kind == Kind::Word && !t.capitalised())
        .map(base_of)
        .filter(|w| !mid_sentence_caps.contains(w))
        .collect();
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

fn month_of(word: &str) -> Option<u32> {
    let w = word.to_lowercase();
    let w = w.trim_end_matches('.');
    MONTHS
        .iter()
        .position(|m| {
            *m == w || (w.len() >= 3 && m.starts_with(w) && (w.len() == 3 || w == "sept"))
        })
        .map(|p| p as u32 + 1)
}

fn is_full_month(word: &str) -> bool {
    MONTHS.contains(&word.to_lowercase().as_str())
}

fn day_of(t: &Token<'_>) -> Option<u32> {
    if t.kind != Kind::Number {
        return None;
    }
    let digits = t.text.trim_end_matches(['s', 't', 'n', 'd', 'r', 'h']);
    let suffix = &t.text[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn year_of(t: &Token<'_>) -> Option<u32> {
    let y: u32 = t.text.parse().ok().filter(|_| t.text.len() == 4)?;
    (1000..=2999).contains(&y).then_some(y)
}

/// A date starting at token `i`: how many tokens it uses and the mention.
fn date_at(tokens: &[Token<'_>], i: usize, text: &str) -> Option<(usize, EntityMention)> {
    let t = &tokens[i];
    let at = |k: usize| tokens.get(k).filter(|t| k == i || !t.newline_before);
    let mention = |used: usize, normalized: String| {
        let name = text[t.start..tokens[i + used - 1].end].to_string();
        let entity_type = DATE.to_string();
        (
            used,
            EntityMention {
                name,
                normalized,
                entity_type,
            },
        )
    };
    if t.kind == Kind::Number {
        if let Some(iso) = iso_date(t.text) {
            return Some(mention(1, iso));
        }
        if let Some(day) = day_of(t) {
            // `7 May 2023`, `7 May, 2023`, `7th of May`
            let of = usize::from(at(i + 1).is_some_and(|n| n.lower() == "of"));
            let month = at(i + 1 + of)
                .filter(|m| m.kind == Kind::Word)
                .and_then(|m| month_of(m.text))?;
            let comma = usize::from(at(i + 2 + of).is_some_and(|n| n.is_punct(",")));
            return Some(match at(i + 2 + of + comma).and_then(year_of) {
                Some(y) => mention(3 + of + comma, format!("{y:04}-{month:02}-{day:02}")),
                None => mention(2 + of, format!("{} {day}", MONTHS[month as usize - 1])),
            });
        }
        let prev = i.checked_sub(1).map(|p| tokens[p].lower());
        if year_of(t).is_some() && prev.is_some_and(|p| listed(YEAR_PREPS, &p)) {
            return Some(mention(1, t.text.to_string()));
        }
        return None;
    }
    if t.kind != Kind::Word || !t.capitalised() {
        return None;
    }
    let lower = t.lower();
    if let Some(day) = WEEKDAYS
        .iter()
        .find(|d| lower == **d || lower == format!("{d}s"))
    {
        return Some(mention(1, day.to_string()));
    }
    let month = month_of(t.text)?;
    // An abbreviation may carry its own full stop: `Sept. 3`.
    let dot = usize::from(at(i + 1).is_some_and(|n| n.is_punct(".")) && !is_full_month(t.text));
    if let Some(day) = at(i + 1 + dot).and_then(day_of) {
        let comma = usize::from(at(i + 2 + dot).is_some_and(|n| n.is_punct(",")));
        return Some(match at(i + 2 + dot + comma).and_then(year_of) {
            Some(y) => mention(3 + dot + comma, format!("{y:04}-{month:02}-{day:02}")),
            None => mention(2 + dot, format!("{} {day}", MONTHS[month as usize - 1])),
        });
    }
    if let Some(y) = at(i + 1 + dot).and_then(year_of) {
        return Some(mention(2 + dot, format!("{y:04}-{month:02}")));
    }
    // A bare month name; `May` opening a sentence is more likely the verb.
    (is_full_month(t.text) && !(lower == "may" && t.sentence_start))
        .then(|| mention(1, lower.clone()))
}

fn iso_date(s: &str) -> Option<String> {
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return None;
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (m, d): (u32, u32) = (m.parse().ok()?, d.parse().ok()?);
    ((1..=12).contains(&m) && (1..=31).contains(&d) && y.parse::<u32>().is_ok())
        .then(|| s.to_string())
}

fn number_at(tokens: &[Token<'_>], i: usize, text: &str) -> (usize, Option<EntityMention>) {
    let t = &tokens[i];
    let unit = tokens.get(i + 1).filter(|u| {
        u.kind == Kind::Word
            && !u.newline_before
            && u.text.chars().count() <= 15
            && u.text.chars().all(|c| c.is_lowercase() || c == '-')
            && !listed(NOT_UNITS, u.text)
    });
    let end = unit.map_or(t.end, |u| u.end);
    let used = 1 + usize::from(unit.is_some());
    (used, Some(EntityMention::new(&text[t.start..end], NUMBER)))
}

/// Splits a trailing contraction or possessive off a word: the base, whether it was a
/// possessive, and whether the word was a negation (`Don't`), which is never a name.
fn split_word(word: &str) -> (&str, bool, bool) {
    let lower = word.to_lowercase().replace('’', "'");
    if lower.ends_with("n't") {
        return (word, false, true);
    }
    for suffix in ["'s", "'m", "'re", "'ve", "'ll", "'d"] {
        if lower.ends_with(suffix) {
            // The apostrophe may be one or three bytes; cut at its char boundary.
            let cut = word
                .char_indices()
                .rev()
                .nth(suffix.len() - 1)
                .map_or(0, |c| c.0);
            return (&word[..cut], suffix == "'s", false);
        }
    }
    (word, false, false)
}

/// Whether a capitalised token may be part of a name at all.
fn nameable<'a>(t: &Token<'a>) -> Option<(&'a str, bool)> {
    let (base, possessive, negation) = split_word(t.text);
    let lower = base.to_lowercase();
    let calendar = MONTHS.contains(&lower.as_str())
        || WEEKDAYS
            .iter()
            .any(|d| lower == *d || lower == format!("{d}s"));
    (!negation && !base.is_empty() && !calendar && !listed(STOPWORDS, &lower))
        .then_some((base, possessive))
}

/// A run of capitalised words starting at token `i`.
fn name_at(
    tokens: &[Token<'_>],
    i: usize,
    text: &str,
    common: &HashSet<String>,
) -> (usize, Option<EntityMention>) {
    let Some((base, mut ended)) = nameable(&tokens[i]) else {
        return (1, None);
    };
    let mut words = vec![base.to_string()];
    let mut j = i + 1;
    while !ended {
        let joinable = |k: usize| {
            tokens
                .get(k)
                .filter(|t| t.capitalised() && !t.newline_before)
                .filter(|_| date_at(tokens, k, text).is_none())
                .and_then(nameable)
        };
        if let Some((base, possessive)) = joinable(j) {
            words.push(base.to_string());
            (ended, j) = (possessive, j + 1);
        } else if let (Some(c), Some((base, possessive))) = (tokens.get(j), joinable(j + 1)) {
            if c.kind != Kind::Word || c.newline_before || !listed(CONNECTORS, c.text) {
                break;
            }
            words.extend([c.text.to_string(), base.to_string()]);
            (ended, j) = (possessive, j + 2);
        } else {
            break;
        }
    }
    let mut prev = i.checked_sub(1).map(|p| &tokens[p]);
    let mut prev2 = i.checked_sub(2).map(|p| &tokens[p]);
    let first = words[0].to_lowercase();
    let ordinary = looks_ordinary(&first);
    if tokens[i].sentence_start && (ordinary || common.contains(&first)) {
        words.remove(0);
        while words.first().is_some_and(|w| listed(CONNECTORS, w)) {
            words.remove(0);
        }
        (prev2, prev) = (prev, Some(&tokens[i]));
    }
    if words.is_empty() {
        return (j - i, None);
    }
    let prev = prev.filter(|p| p.kind == Kind::Word).map(Token::lower);
    let prev2 = prev2.filter(|p| p.kind == Kind::Word).map(Token::lower);
    let entity_type = classify(&words, prev.as_deref(), prev2.as_deref());
    (
        j - i,
        Some(EntityMention::new(words.join(" "), entity_type)),
    )
}

/// Whether a sentence's first word reads like a gerund or an adverb (`Painting`, `Honestly`)
/// rather than a name; the endings are chosen to spare names such as `Emily` or `Sally`.
fn looks_ordinary(lower: &str) -> bool {
    const ADVERB_ENDINGS: [&str; 10] = [
        "ably", "ally", "ibly", "kily", "ntly", "ssly", "stly", "tely", "ully", "usly",
    ];
    let len = lower.chars().count();
    (len > 4 && lower.ends_with("ing"))
        || (len > 6 && ADVERB_ENDINGS.iter().any(|e| lower.ends_with(e)))
}

fn classify(words: &[String], prev: Option<&str>, prev2: Option<&str>) -> &'static str {
    let after_place_word = match prev {
        Some("to") => prev2.is_some_and(|p| listed(MOTION, p)),
        Some(p) => listed(PLACE_PREPS, p),
        None => false,
    };
    if after_place_word {
        return PLACE;
    }
    // Title case, letters only, not an acronym: `Smith`, `O'Brien`, `Jean-Luc`, `McDonald`.
    let plain = |w: &String| {
        w.chars().next().is_some_and(char::is_uppercase)
            && w.chars().any(char::is_lowercase)
            && w.chars()
                .all(|c| c.is_alphabetic() || matches!(c, '-' | '\'' | '’'))
    };
    let personal = words.iter().all(plain)
        && words.len() <= 3
        && !words.iter().any(|w| listed(NON_PERSON, &w.to_lowercase()));
    if personal {
        PERSON
    } else {
        NAME
    }
}

/// The form entity names are compared in: compatibility-decomposed with diacritics removed,
/// lower case, apostrophes and full stops dropped (`O'Brien` → `obrien`, `U.S.` → `us`), other
/// punctuation turned into spaces, whitespace collapsed, and a leading `the ` removed.
///
/// Hyphens between letters or digits stay (`jean-luc`), as do a decimal point (`12.5`), currency
/// signs and `%`; a comma between digits is a thousands separator and is dropped (`1,200`).
pub fn normalize_entity(name: &str) -> String {
    let chars: Vec<char> = name
        .to_lowercase()
        .nfkd()
        .filter(|c| !is_combining_mark(*c))
        .collect();
    let mut out = String::with_capacity(chars.len());
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(i + 1).copied();
        let between =
            |f: fn(&char) -> bool| prev.as_ref().is_some_and(f) && next.as_ref().is_some_and(f);
        match c {
            c if c.is_alphanumeric() || c == '%' || CURRENCY.contains(&c) => out.push(c),
            '-' if between(|c| c.is_alphanumeric()) => out.push('-'),
            '.' if between(char::is_ascii_digit) => out.push('.'),
            ',' if between(char::is_ascii_digit) => {}
            '\'' | '’' | '‘' | '.' => {}
            _ => out.push(' '),
        }
    }
    let collapsed = out.split_whitespace().collect::<Vec<_>>().join(" ");
    match collapsed.strip_prefix("the ") {
        Some(rest) => rest.to_string(),
        None => collapsed,
    }
}

/// The names `entities_match` accepts without an edit: `normalized` itself and its plural or
/// singular by a trailing `s`. A store can look these up by equality.
pub fn exact_match_variants(normalized: &str) -> Vec<String> {
    let mut out = vec![normalized.to_string()];
    if normalized.is_empty() || normalized.chars().any(|c| c.is_ascii_digit()) {
        return out;
    }
    if normalized.chars().count() >= 3 {
        out.push(format!("{normalized}s"));
    }
    if let Some(single) = normalized.strip_suffix('s') {
        if single.chars().count() >= 3 {
            out.push(single.to_string());
        }
    }
    out
}

/// The character lengths a name within `entities_match`'s edit distance of `normalized` can
/// have, or `None` when only the exact variants can match (digits, or too short to allow an
/// edit). A store scans this window for near matches and checks each with `entities_match`.
pub fn near_match_lengths(normalized: &str) -> Option<(usize, usize)> {
    let n = normalized.chars().count();
    if n < 5 || normalized.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    // The edit limit follows the shorter name: up to 2 when both have 10+ characters, 1 from 5.
    Some((n.saturating_sub(2).max(5), n + 2))
}

/// Whether two normalised names are the same entity: equal, or differing by a trailing plural
/// `s`, or within a small edit distance (1 when both have at least 5 characters, 2 when both
/// have at least 10). Names containing a digit match only when equal, so `2022` never merges
/// with `2023` nor `3 kids` with `4 kids`.
pub fn entities_match(a_normalized: &str, b_normalized: &str) -> bool {
    let (a, b) = (a_normalized, b_normalized);
    if a == b {
        return true;
    }
    if a.is_empty() || b.is_empty() || a.chars().chain(b.chars()).any(|c| c.is_ascii_digit()) {
        return false;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.chars().count() >= 3 && long.strip_suffix('s') == Some(short) {
        return true;
    }
    let (la, lb) = (a.chars().count(), b.chars().count());
    let limit = match la.min(lb) {
        n if n >= 10 => 2,
        n if n >= 5 => 1,
        _ => return false,
    };
    levenshtein_within(a, b, limit, &mut 0).is_some()
}

/// The edit distance of `a` and `b` when it is at most `limit`, else `None`. Only the cells
/// within `limit` of the diagonal are computed (and the walk stops once every one of a row
/// exceeds `limit`), so the cost is (2·limit + 1) cells a character rather than the product of
/// the lengths: names reach a store from any text. `cells` counts the cells computed.
fn levenshtein_within(a: &str, b: &str, limit: usize, cells: &mut usize) -> Option<usize> {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > limit {
        return None;
    }
    // Any distance over `limit` is stored as `over`: cells outside the band read as that.
    let over = limit + 1;
    let mut prev: Vec<usize> = (0..=b.len()).map(|j| j.min(over)).collect();
    let mut cur = vec![over; b.len() + 1];
    for i in 1..=a.len() {
        let (lo, hi) = (i.saturating_sub(limit).max(1), (i + limit).min(b.len()));
        cur[lo - 1] = if lo == 1 { i.min(over) } else { over };
        for j in lo..=hi {
            *cells += 1;
            let substitute = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            cur[j] = substitute.min(prev[j] + 1).min(cur[j - 1] + 1).min(over);
        }
        // The next row reads one cell past this band; it must not be a stale one.
        if hi < b.len() {
            cur[hi + 1] = over;
        }
        if lo <= hi && cur[lo..=hi].iter().all(|d| *d > limit) {
            return None;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    Some(prev[b.len()]).filter(|d| *d <= limit)
}

/// How much a memory matching some query names is worth as an entity candidate, in [0, 1]:
/// per query name, the most informative matching entity of the memory counts
/// `idf = ln(1 + (N − df + 0.5)/(df + 0.5))` (`df` the entity's linked memories, `N` the memories
/// the scope indexes); the sum over names is divided by `ln(1 + N)` and capped at 1. The one
/// definition every backend scores entity candidates with, from counts it reads.
///
/// `mentions[i]` is, for query name `i`, the link counts of the memory's entities that matched
/// it (empty when none did). `total` is `N`; callers pass at least the largest link count among
/// the query's matched entities, so no idf goes negative.
pub fn entity_score(mentions: &[Vec<u64>], total: u64) -> f32 {
    let total = total as f64;
    let idf = |d: f64| (1.0 + (total - d + 0.5) / (d + 0.5)).ln();
    let scale = (1.0 + total).ln().max(f64::MIN_POSITIVE);
    let sum: f64 = mentions
        .iter()
        .map(|ms| ms.iter().map(|&m| idf(m as f64)).fold(0.0, f64::max))
        .sum();
    (sum / scale).min(1.0) as f32
}

#[cfg(test)]
mod tests {
    #[test]
    fn entity_score_favours_rare_names_and_caps_at_one() {
        let rare = super::entity_score(&[vec![1]], 1000);
        let common = super::entity_score(&[vec![900]], 1000);
        assert!(rare > 0.9 && common < 0.1, "{rare} {common}");
        assert_eq!(super::entity_score(&[vec![], vec![]], 1000), 0.0);
        assert!(super::entity_score(&[vec![1], vec![1]], 1000) <= 1.0);
        // The best entity per name counts, not the sum of a name's entities.
        assert_eq!(super::entity_score(&[vec![1, 900]], 1000), rare);
    }

    use super::*;
    use proptest::prelude::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        extract_entities(text)
            .into_iter()
            .map(|m| (m.name, m.entity_type))
            .collect()
    }

    fn has(text: &str, name: &str, entity_type: &str) {
        let got = pairs(text);
        assert!(
            got.contains(&(name.to_string(), entity_type.to_string())),
            "{name:?} as {entity_type} not in {got:?}"
        );
    }

    fn normalized_of(text: &str, name: &str) -> String {
        extract_entities(text)
            .into_iter()
            .find(|m| m.name == name)
            .unwrap_or_else(|| panic!("{name:?} not extracted from {text:?}"))
            .normalized
    }

    #[test]
    fn people_including_at_sentence_start_and_multi_word() {
        has(
            "Caroline went hiking with Melanie Smith.",
            "Caroline",
            PERSON,
        );
        has(
            "Caroline went hiking with Melanie Smith.",
            "Melanie Smith",
            PERSON,
        );
        has("yesterday I met Jean-Luc at lunch", "Jean-Luc", PERSON);
        has("Emily and Sally came over.", "Emily", PERSON);
        has("Kimberly said hi to NASA.", "NASA", NAME);
    }

    #[test]
    fn places_follow_place_words() {
        has("We moved from Sweden last year.", "Sweden", PLACE);
        has(
            "She visited Paris and then went to New York.",
            "Paris",
            PLACE,
        );
        has(
            "She visited Paris and then went to New York.",
            "New York",
            PLACE,
        );
        has("I talked to Melanie.", "Melanie", PERSON);
        has(
            "The University of Michigan is big.",
            "University of Michigan",
            NAME,
        );
        has("He loves New York.", "New York", NAME);
    }

    #[test]
    fn dates_in_every_format() {
        let text = "On 2023-05-07 we met; again on 7 May 2023, then May 7, 2023 and in May 2023. \
                    I started in 2022 and on the 3rd of June. See you Friday or in August.";
        let got = extract_entities(text);
        let dates: Vec<(&str, &str)> = got
            .iter()
            .filter(|m| m.entity_type == DATE)
            .map(|m| (m.name.as_str(), m.normalized.as_str()))
            .collect();
        // `7 May 2023` and `May 7, 2023` are the same day as `2023-05-07`, so deduplicated.
        assert_eq!(
            dates,
            vec![
                ("2023-05-07", "2023-05-07"),
                ("May 2023", "2023-05"),
                ("2022", "2022"),
                ("3rd of June", "june 3"),
                ("Friday", "friday"),
                ("August", "august"),
            ]
        );
        assert_eq!(
            normalized_of("Meet me May 7, 2023.", "May 7, 2023"),
            "2023-05-07"
        );
        assert_eq!(
            normalized_of("Since 7 May 2023.", "7 May 2023"),
            "2023-05-07"
        );
        assert_eq!(
            normalized_of("on 19 January, 2023", "19 January, 2023"),
            "2023-01-19"
        );
        assert_eq!(
            normalized_of("Due Sept. 3 at noon", "Sept. 3"),
            "september 3"
        );
        // A month or weekday is never a person, and a year without a preposition is a number.
        assert!(pairs("I was born 1990.").contains(&("1990".into(), NUMBER.into())));
        assert!(pairs("May I ask?").is_empty());
    }

    #[test]
    fn numbers_with_units_and_currency() {
        let text = "I paid $40 for 3 kids to ride 12.5 km, about 20% of 2 of them.";
        let numbers: Vec<String> = extract_entities(text)
            .into_iter()
            .filter(|m| m.entity_type == NUMBER)
            .map(|m| m.name)
            .collect();
        assert_eq!(numbers, ["$40", "3 kids", "12.5 km", "20%", "2"]);
        assert_eq!(normalized_of("It cost $1,200.", "$1,200"), "$1200");
    }

    #[test]
    fn quoted_titles_and_their_words_are_not_names() {
        let got = pairs("I read \"Becoming Nicole\" and “The Hobbit”, by Tolkien.");
        assert_eq!(
            got,
            vec![
                ("Becoming Nicole".into(), TITLE.into()),
                ("The Hobbit".into(), TITLE.into()),
                ("Tolkien".into(), PERSON.into()),
            ]
        );
        assert_eq!(
            normalized_of("loved \"The Hobbit\"", "The Hobbit"),
            "hobbit"
        );
    }

    #[test]
    fn possessives_are_removed_and_end_a_name() {
        has("I saw Caroline's new painting.", "Caroline", PERSON);
        has("I saw Melanie’s new car.", "Melanie", PERSON);
        assert!(!pairs("Caroline's Mom called")
            .iter()
            .any(|(n, _)| n.contains('\'')));
    }

    #[test]
    fn stopwords_contractions_and_ordinary_sentence_starts_are_skipped() {
        let text = "Hey! I think The plan is fine. Thanks, it's great. Don't worry. \
                    Painting is fun and I love painting. Honestly it works.";
        assert!(pairs(text).is_empty(), "{:?}", pairs(text));
        has("Hi Caroline, how are you?", "Caroline", PERSON);
    }

    #[test]
    fn deduplicated_by_normal_form_in_order_of_first_appearance() {
        let got =
            pairs("Melanie met José. Later José and melanie... Then Melanie left for Jose's home.");
        assert_eq!(
            got,
            vec![
                ("Melanie".into(), PERSON.into()),
                ("José".into(), PERSON.into())
            ]
        );
    }

    #[test]
    fn normalisation() {
        assert_eq!(normalize_entity("José"), "jose");
        assert_eq!(normalize_entity("  Crème   Brûlée "), "creme brulee");
        assert_eq!(normalize_entity("The Beatles"), "beatles");
        assert_eq!(normalize_entity("O'Brien"), "obrien");
        assert_eq!(normalize_entity("Jean-Luc Picard!"), "jean-luc picard");
        assert_eq!(normalize_entity("St. Louis, MO"), "st louis mo");
        assert_eq!(normalize_entity("12.5 km"), "12.5 km");
        assert_eq!(normalize_entity("the"), "the");
    }

    #[test]
    fn near_matches() {
        assert!(entities_match("caroline", "caroline"));
        assert!(entities_match("caroline", "carolyne"));
        assert!(entities_match("dog", "dogs"));
        assert!(entities_match("melanie smith", "melany smith"));
        assert!(entities_match(
            "university of michigan",
            "universty of michigen"
        ));
        assert!(!entities_match("ann", "anna"));
        assert!(!entities_match("jon", "jan"));
        assert!(!entities_match("caroline", "carolina smith"));
        assert!(!entities_match("melanie", "melissa"));
        assert!(!entities_match("2022", "2023"));
        assert!(!entities_match("3 kids", "3 kid"));
        assert!(!entities_match("2023-05-07", "2023-05-08"));
        assert!(!entities_match("", "a"));
    }

    #[test]
    fn every_match_is_an_exact_variant_or_inside_the_length_window() {
        let names = [
            "caroline",
            "carolyne",
            "carolin",
            "carolines",
            "dog",
            "dogs",
            "do",
            "ann",
            "anna",
            "annas",
            "melanie smith",
            "melany smith",
            "melanie smit",
            "university of michigan",
            "universty of michigen",
            "univrsty of michigen",
            "2022",
            "2023",
            "bus",
            "bu",
            "jose",
            "josef",
            "josefa",
            "abcdefghij",
            "abcdefghi",
            "abcdefgh",
            "abcdefghijkl",
        ];
        for a in names {
            let variants = exact_match_variants(a);
            let window = near_match_lengths(a);
            for b in names {
                if !entities_match(a, b) {
                    continue;
                }
                let len = b.chars().count();
                let reachable = variants.iter().any(|v| v == b)
                    || window.is_some_and(|(lo, hi)| (lo..=hi).contains(&len));
                assert!(reachable, "{a} matches {b} but a store would not find it");
                // Only names that start alike are scanned.
                if !variants.iter().any(|v| v == b) {
                    assert_eq!(a.chars().next(), b.chars().next(), "{a} / {b}");
                }
            }
        }
        assert_eq!(exact_match_variants("2023"), ["2023"]);
        assert_eq!(near_match_lengths("2023-05-07"), None);
        assert_eq!(near_match_lengths("maya"), None);
        assert_eq!(exact_match_variants("maya"), ["maya", "mayas"]);
    }

    #[test]
    fn mention_serialises_with_its_field_names() {
        let m = EntityMention::new("José", PERSON);
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"name": "José", "normalized": "jose", "entity_type": "person"})
        );
    }

    /// One character of each Unicode general category but Cs (no `char` is a surrogate).
    const CATEGORY_SAMPLES: [char; 29] = [
        'A', 'y', 'ǅ', 'ʰ', '中', '\u{301}', '\u{903}', '\u{20DD}', '٣', 'Ⅻ', '½', '_', '-', '(',
        ')', '«', '»', '!', '+', '$', '^', '©', ' ', '\u{2028}', '\u{2029}', '\u{0}', '\u{200B}',
        '\u{E000}', '\u{378}',
    ];

    #[test]
    fn the_samples_cover_every_general_category() {
        use unicode_general_category::get_general_category as category;
        let seen: HashSet<_> = CATEGORY_SAMPLES.iter().map(|c| category(*c)).collect();
        assert_eq!(seen.len(), CATEGORY_SAMPLES.len());
    }

    /// Long runs of one unit (a letter of either case, a character of any category, punctuation,
    /// a quoted title, a capitalised word, a date), several runs one after another.
    fn pathological() -> impl Strategy<Value = String> {
        let unit = prop_oneof![
            (b'a'..=b'z').prop_map(|b| char::from(b).to_string()),
            (b'A'..=b'Z').prop_map(|b| format!("{} ", char::from(b))),
            proptest::sample::select(CATEGORY_SAMPLES.to_vec()).prop_map(String::from),
            proptest::sample::select(vec![
                ".", "\"", "“", "”", "'", "’", "-", ",", "$", "%", "*", "(", ":", "\n", "İ",
            ])
            .prop_map(String::from),
            proptest::sample::select(vec![
                "\"ab\" ",
                "“Ab” ",
                "Ab ",
                "Ab of ",
                "Ab's ",
                "ay",
                "yay ",
                "7 May 2023, ",
                "May 7 ",
                "in 2022 ",
                "$1,2",
                "1-",
                "12.5 km ",
                "I. ",
                "Y",
            ])
            .prop_map(String::from),
            "[a-zA-Z0-9 .,\"'-]{1,12}",
        ];
        proptest::collection::vec((unit, 1usize..40_000), 1..4).prop_map(|runs| {
            runs.into_iter()
                .map(|(u, n)| u.repeat((n / u.chars().count()).max(1)))
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Work is counted, not timed: the title filter once compared every token with every
        /// title (`"ab" ` × 20,000 cost 8·10⁸ steps for 10⁵ characters).
        #[test]
        fn extraction_work_is_linear_in_the_text(text in pathological()) {
            let mut work = 0;
            let found = extract(&text, &mut work);
            let chars = text.chars().count();
            prop_assert!(work <= 2 * chars, "{work} steps for {chars} characters");
            prop_assert!(found.len() <= MAX_MENTIONS);
            prop_assert!(found.iter().all(|m| m.name.chars().count() <= MAX_MENTION_CHARS));
        }

        #[test]
        fn banded_distance_agrees_with_the_full_table(
            a in "[abc]{0,12}",
            b in "[abc]{0,12}",
            limit in 0usize..4,
        ) {
            let full = full_levenshtein(&a, &b);
            let got = levenshtein_within(&a, &b, limit, &mut 0);
            prop_assert_eq!(got, Some(full).filter(|d| *d <= limit), "{} / {}", a, b);
        }
    }

    fn full_levenshtein(a: &str, b: &str) -> usize {
        let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
        let mut row: Vec<usize> = (0..=b.len()).collect();
        for i in 1..=a.len() {
            let mut next = vec![i; b.len() + 1];
            for j in 1..=b.len() {
                next[j] = (row[j - 1] + usize::from(a[i - 1] != b[j - 1]))
                    .min(row[j] + 1)
                    .min(next[j - 1] + 1);
            }
            row = next;
        }
        row[b.len()]
    }

    #[test]
    fn thousands_of_quoted_titles_cost_linear_work() {
        let text = "\"ab\" ".repeat(20_000);
        let mut work = 0;
        let found = extract(&text, &mut work);
        assert!(
            work <= 2 * text.len(),
            "{work} steps for {} characters",
            text.len()
        );
        assert_eq!(found.len(), 1, "one title, deduplicated");
    }

    #[test]
    fn runaway_names_and_numbers_are_not_mentions() {
        let long_name = format!("Y{}", "y".repeat(100_000));
        assert!(extract_entities(&format!("I met {long_name} and Caroline.")).len() == 1);
        assert!(extract_entities(&"1".repeat(100_000)).is_empty());
        let many: String = (0..1000).map(|i| format!("I met Zed{i} today. ")).collect();
        assert_eq!(extract_entities(&many).len(), MAX_MENTIONS);
    }

    /// Two memories naming `Yyyy…` 100,000 characters long, one letter apart, made the store's
    /// near-match check fill a 10¹⁰-cell table.
    #[test]
    fn near_match_cost_follows_the_band_not_the_lengths() {
        let n = 100_000;
        let a = "y".repeat(n);
        let b = format!("{}z", "y".repeat(n - 1));
        let mut cells = 0;
        assert_eq!(levenshtein_within(&a, &b, 2, &mut cells), Some(1));
        assert!(cells <= 5 * n, "{cells} cells for {n} characters");
        assert!(entities_match(&a, &b));
        let mut cells = 0;
        let c = format!("zz{}", "y".repeat(n - 2));
        assert_eq!(levenshtein_within(&a, &c, 1, &mut cells), None);
        // A row with every cell over the limit ends the walk.
        assert!(cells <= 3 * 3, "{cells}");
    }
}
