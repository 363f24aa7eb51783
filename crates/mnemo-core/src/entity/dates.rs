//! Dates (`2023-05-07`, `7 May 2023`, `May 7`, `in 2022`, weekday and month names) in a
//! canonical normal form, and numbers with their unit.

use super::extract::{listed, Kind, Token};
use super::{EntityMention, DATE, NUMBER};

/// Lower-case words that never serve as the unit of a number (`3 of them` is just `3`).
const NOT_UNITS: &str = "\
    a am an and are as at be but by for from has have in is it of on or pm so than that the \
    then to was were with";

pub(crate) const MONTHS: &[&str] = &[
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

pub(crate) const WEEKDAYS: &[&str] = &[
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
pub(super) fn date_at(
    tokens: &[Token<'_>],
    i: usize,
    text: &str,
) -> Option<(usize, EntityMention)> {
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

pub(super) fn number_at(
    tokens: &[Token<'_>],
    i: usize,
    text: &str,
) -> (usize, Option<EntityMention>) {
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
