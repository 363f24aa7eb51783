//! The tagger's tokens and word tables. Month and weekday names are the entity extractor's
//! (`entity::dates`); the rest (counts, ordinals, units, abbreviations) are temporal only.

use crate::entity::{MONTHS, WEEKDAYS};
use chrono::Weekday;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Word,
    /// Digits, possibly with inner `-`, `/`, `.`, `:` or `,` between digits, and an ordinal
    /// suffix (`8th`).
    Num,
    Punct,
}

#[derive(Debug)]
pub(super) struct Tok<'a> {
    pub(super) text: &'a str,
    pub(super) lower: String,
    pub(super) kind: Kind,
    pub(super) start: usize,
    pub(super) end: usize,
}

impl Tok<'_> {
    pub(super) fn capitalised(&self) -> bool {
        self.text.chars().next().is_some_and(char::is_uppercase)
    }
}

/// Abbreviations whose full stop does not end a sentence.
const ABBREVIATIONS: &str = "jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed \
    thu thur thurs fri sat sun mr mrs ms dr st vs etc approx";

pub(super) fn listed(list: &str, word: &str) -> bool {
    list.split_whitespace().any(|w| w == word)
}

/// Tokens of `text` and the token ranges of its sentences (split at `.`, `!`, `?`, `;` and line
/// breaks). One pass over the characters.
pub(super) fn tokenize(text: &str) -> (Vec<Tok<'_>>, Vec<(usize, usize)>) {
    let bytes = text.as_bytes();
    let mut toks: Vec<Tok<'_>> = Vec::new();
    let mut sentences = Vec::new();
    let mut sentence_start = 0;
    let mut i = 0;
    let mut close = |toks: &Vec<Tok<'_>>, start: &mut usize| {
        if toks.len() > *start {
            sentences.push((*start, toks.len()));
        }
        *start = toks.len();
    };
    while i < text.len() {
        let c = text[i..].chars().next().unwrap_or(' ');
        let width = c.len_utf8();
        if c.is_whitespace() {
            if c == '\n' {
                close(&toks, &mut sentence_start);
            }
            i += width;
            continue;
        }
        let start = i;
        let kind = if c.is_ascii_digit() {
            i = number_end(bytes, i);
            Kind::Num
        } else if c.is_alphabetic() {
            i += width;
            while let Some(n) = text[i..].chars().next() {
                let inner_quote = matches!(n, '\'' | '’')
                    && text[i + n.len_utf8()..]
                        .chars()
                        .next()
                        .is_some_and(char::is_alphabetic);
                if !(n.is_alphabetic() || inner_quote) {
                    break;
                }
                i += n.len_utf8();
            }
            Kind::Word
        } else {
            i += width;
            Kind::Punct
        };
        let piece = &text[start..i];
        toks.push(Tok {
            text: piece,
            lower: piece.to_lowercase(),
            kind,
            start,
            end: i,
        });
        if kind == Kind::Punct && matches!(piece, "." | "!" | "?" | ";") {
            let abbreviated = piece == "."
                && toks.len() >= 2
                && toks[toks.len() - 2].kind == Kind::Word
                && (listed(ABBREVIATIONS, &toks[toks.len() - 2].lower)
                    || toks[toks.len() - 2].text.chars().count() == 1);
            if !abbreviated {
                close(&toks, &mut sentence_start);
            }
        }
    }
    close(&toks, &mut sentence_start);
    (toks, sentences)
}

/// End of a number starting at `i`: digits with inner separators, then an ordinal suffix when
/// nothing alphanumeric follows it (`8th`, but `3pm` is `3` and `pm`).
fn number_end(bytes: &[u8], mut i: usize) -> usize {
    let digit = |k: usize| bytes.get(k).is_some_and(u8::is_ascii_digit);
    while digit(i)
        || (matches!(bytes.get(i), Some(b'-' | b'/' | b'.' | b':' | b',')) && digit(i + 1))
    {
        i += 1;
    }
    let lower = |k: usize| bytes.get(k).map(u8::to_ascii_lowercase);
    let suffix = matches!(
        (lower(i), lower(i + 1)),
        (Some(b's'), Some(b't'))
            | (Some(b'n'), Some(b'd'))
            | (Some(b'r'), Some(b'd'))
            | (Some(b't'), Some(b'h'))
    );
    if suffix && !bytes.get(i + 2).is_some_and(u8::is_ascii_alphanumeric) {
        i += 2;
    }
    i
}

/// A month name: full, three-letter or `sept`; `fuzzy` also takes misspellings that keep the
/// first three letters (`Janury`), for gold answers only.
pub(super) fn month_of(word: &str, fuzzy: bool) -> Option<u32> {
    let w = word.trim_end_matches('.');
    MONTHS
        .iter()
        .position(|m| {
            *m == w
                || (w.len() == 3 && m.starts_with(w))
                || (w == "sept" && *m == "september")
                || (fuzzy && w.len() >= 4 && w.is_char_boundary(3) && m.starts_with(&w[..3]))
        })
        .map(|p| p as u32 + 1)
}

pub(super) fn is_full_month(word: &str) -> bool {
    MONTHS.contains(&word)
}

const WEEKDAY_ABBREVIATIONS: &[&[&str]] = &[
    &["mon"],
    &["tue", "tues"],
    &["wed", "weds"],
    &["thu", "thur", "thurs"],
    &["fri"],
    &["sat"],
    &["sun"],
];

/// A weekday name, and whether it was written in full (abbreviations such as `sat`/`sun` are
/// common words and need a modifier before them).
pub(super) fn weekday_of(word: &str) -> Option<(Weekday, bool)> {
    let w = word.trim_end_matches('.');
    let full = WEEKDAYS.iter().position(|d| *d == w);
    let abbreviated = WEEKDAY_ABBREVIATIONS.iter().position(|a| a.contains(&w));
    let (index, is_full) = match (full, abbreviated) {
        (Some(p), _) => (p, true),
        (None, Some(p)) => (p, false),
        (None, None) => return None,
    };
    let day = [
        Weekday::Mon,
        Weekday::Tue,
        Weekday::Wed,
        Weekday::Thu,
        Weekday::Fri,
        Weekday::Sat,
        Weekday::Sun,
    ][index];
    Some((day, is_full))
}

const COUNTS: &[&str] = &[
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// A count word (`a`, `one` … `twenty`, `thirty`, `fifty`).
pub(super) fn count_word(word: &str) -> Option<u32> {
    match word {
        "a" | "an" => Some(1),
        "thirty" => Some(30),
        "forty" => Some(40),
        "fifty" => Some(50),
        _ => COUNTS.iter().position(|c| *c == word).map(|p| p as u32),
    }
}

const ORDINALS: &[&str] = &[
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
    "twentieth",
];

/// An ordinal word up to `twentieth` (`first` is 1).
pub(super) fn ordinal_word(word: &str) -> Option<u32> {
    ORDINALS
        .iter()
        .position(|o| *o == word)
        .map(|p| p as u32 + 1)
}

/// A unit of a relative offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    Day,
    Week,
    Weekend,
    Fortnight,
    Month,
    Year,
    Decade,
}

pub(super) fn unit_of(word: &str) -> Option<Unit> {
    Some(match word {
        "day" | "days" => Unit::Day,
        "week" | "weeks" => Unit::Week,
        "weekend" | "weekends" => Unit::Weekend,
        "fortnight" | "fortnights" => Unit::Fortnight,
        "month" | "months" => Unit::Month,
        "year" | "years" => Unit::Year,
        "decade" | "decades" => Unit::Decade,
        _ => return None,
    })
}

/// Parts of the day that keep their day ("this morning", "Friday night").
pub(super) const DAY_PARTS: &str = "morning afternoon evening night";

/// Words before a bare month or season that make it a date (`in May`, `since March`); `May`
/// or `March` with none of them is the verb.
pub(super) const MONTH_PREPS: &str = "in since during until till by before after of from \
    early mid late around about through throughout last next this past coming previous";

/// Words before a bare year that make it one (`in 2021`, but not `2023 dollars`).
pub(super) const YEAR_PREPS: &str = "in since during until till by before after of from \
    around about circa through throughout year back";

/// Words that may follow a year (`in 2021 we moved`); any other lower-case word after it makes
/// the number a quantity (`in 2000 people`).
pub(super) const AFTER_YEAR: &str = "and or but when while where i we he she they it you my \
    our his her their the a an to with for at on in was were is had have has as so because \
    after before until since that which who then there too also already alone";

/// Words that say a sentence speaks of the future.
pub(super) const FUTURE_WORDS: &str = "will 'll shall gonna planning plan plans planned \
    upcoming tomorrow next soon coming hope hoping";
