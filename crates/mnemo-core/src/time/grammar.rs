//! The phrase grammar: at one token of a sentence, the longest temporal expression starting
//! there, resolved against the anchor day. Every rule looks at most a dozen tokens ahead, so a
//! walk over a sentence is linear in its length.
//!
//! Three modes share the rules: `Text` (what people write: a bare month or year needs a
//! preposition before it, a month name a capital letter), `Query` (search queries are often
//! lower case) and `Answer` (a gold answer or a model's field is the whole phrase: a bare year
//! or month is a date, month names may be misspelt).

use super::calendar::{add_days, day_near, month_near, Span};
use super::lexicon::{
    is_full_month, listed, month_of, ordinal_word, Kind, Tok, AFTER_YEAR, MONTH_PREPS, YEAR_PREPS,
};
use super::DateOrder;
use chrono::NaiveDate;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Text,
    Query,
    Answer,
}

/// One expression: tokens `[first, end)` of the sentence and what they mean.
#[derive(Debug, Clone, Copy)]
pub(super) struct Found {
    pub(super) first: usize,
    pub(super) end: usize,
    pub(super) span: Span,
    /// "since 2019": the span runs from the phrase's start to the anchor day.
    pub(super) since: bool,
}

/// A date as written, before a year is chosen for it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Spec {
    Day(Option<i32>, u32, u32),
    Month(Option<i32>, u32),
    Year(i32),
}

pub(super) struct Cx<'t, 'a> {
    pub(super) toks: &'t [Tok<'a>],
    pub(super) anchor: NaiveDate,
    pub(super) future: bool,
    pub(super) mode: Mode,
    pub(super) order: DateOrder,
}

impl Cx<'_, '_> {
    pub(super) fn word(&self, i: usize) -> Option<&str> {
        self.toks
            .get(i)
            .filter(|t| t.kind == Kind::Word)
            .map(|t| t.lower.as_str())
    }

    pub(super) fn is(&self, i: usize, words: &str) -> bool {
        self.word(i).is_some_and(|w| listed(words, w))
    }

    pub(super) fn punct(&self, i: usize, p: &str) -> bool {
        self.toks
            .get(i)
            .is_some_and(|t| t.kind == Kind::Punct && t.text == p)
    }

    pub(super) fn prev_is(&self, i: usize, words: &str) -> bool {
        i.checked_sub(1).is_some_and(|p| self.is(p, words))
    }

    /// The clause ends after token `i - 1` (end of sentence, punctuation or a conjunction).
    pub(super) fn clause_end(&self, i: usize) -> bool {
        match self.toks.get(i) {
            None => true,
            Some(t) if t.kind == Kind::Punct => true,
            Some(_) => self.is(i, "and but so"),
        }
    }

    pub(super) fn found(&self, first: usize, end: usize, span: Option<Span>) -> Option<Found> {
        Some(Found {
            first,
            end,
            span: span?,
            since: false,
        })
    }

    /// The longest expression starting at token `i`.
    pub(super) fn at(&self, i: usize) -> Option<Found> {
        let t = self.toks.get(i)?;
        if t.kind == Kind::Punct {
            return None;
        }
        if self.is(i, "since") && self.mode != Mode::Query {
            // One level only: `since since …` must not recurse once per token.
            if self.is(i + 1, "since") {
                return None;
            }
            let inner = self.at(i + 1)?;
            let end = add_days(self.anchor, 1)?;
            if inner.since || inner.span.start >= end {
                return None;
            }
            let span = Span::new(inner.span.start, end, inner.span.granularity)?;
            return Some(Found {
                first: i,
                end: inner.end,
                span,
                since: true,
            });
        }
        let the = usize::from(self.is(i, "the"));
        self.relative_to_date(i, i + the)
            .or_else(|| self.nth_of_month(i, i + the))
            .or_else(|| self.deictic(i, i + the))
            .or_else(|| self.offset(i))
            .or_else(|| self.weekday(i))
            .or_else(|| self.season(i, i + the))
            .or_else(|| self.absolute(i))
    }

    // ---- absolute dates -------------------------------------------------------------------

    /// A day of the month: `8`, `8th`, or an ordinal word (`second`) when `words` allows.
    pub(super) fn day_number(&self, i: usize, words: bool) -> Option<u32> {
        let t = self.toks.get(i)?;
        let d = match t.kind {
            Kind::Num => {
                let digits = t.lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
                if digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                digits.parse().ok()?
            }
            Kind::Word if words => ordinal_word(&t.lower)?,
            _ => return None,
        };
        (1..=31).contains(&d).then_some(d)
    }

    pub(super) fn year_number(&self, i: usize) -> Option<i32> {
        let t = self.toks.get(i).filter(|t| t.kind == Kind::Num)?;
        let y: i32 = t.text.parse().ok().filter(|_| t.text.len() == 4)?;
        (1000..=2999).contains(&y).then_some(y)
    }

    pub(super) fn month_word(&self, i: usize) -> Option<u32> {
        let t = self.toks.get(i).filter(|t| t.kind == Kind::Word)?;
        month_of(&t.lower, self.mode == Mode::Answer)
    }

    /// A year after a month or day: `May 2023`, `May, 2023`, `May of 2023`, `April.2023`.
    pub(super) fn year_after(&self, i: usize) -> Option<(usize, i32)> {
        let sep = usize::from(self.punct(i, ",") || self.is(i, "of") || self.punct(i, "."));
        self.year_number(i + sep).map(|y| (sep + 1, y))
    }

    /// A date as written at `i`: its token count and spec. `bare` allows a month or year alone.
    pub(super) fn spec(&self, i: usize, bare: bool) -> Option<(usize, Spec)> {
        let t = self.toks.get(i)?;
        if t.kind == Kind::Num {
            if let Some(spec) = numeric_date(t.text, self.order) {
                return Some((1, spec));
            }
            if let Some(d) = self.day_number(i, false) {
                let of = usize::from(self.is(i + 1, "of"));
                let m = self.month_word(i + 1 + of)?;
                return Some(match self.year_after(i + 2 + of) {
                    Some((n, y)) => (2 + of + n, Spec::Day(Some(y), m, d)),
                    None => (2 + of, Spec::Day(None, m, d)),
                });
            }
            let y = self.year_number(i)?;
            return (bare && self.year_context(i)).then_some((1, Spec::Year(y)));
        }
        if let Some(d) = self.day_number(i, true).filter(|_| self.is(i + 1, "of")) {
            let m = self.month_word(i + 2)?;
            return Some(match self.year_after(i + 3) {
                Some((n, y)) => (3 + n, Spec::Day(Some(y), m, d)),
                None => (3, Spec::Day(None, m, d)),
            });
        }
        let m = self.month_word(i)?;
        let word = t.lower.as_str();
        if self.mode == Mode::Text && !t.capitalised() {
            return None;
        }
        let dot = usize::from(self.punct(i + 1, ".") && !is_full_month(word));
        if let Some(d) = self.day_number(i + 1 + dot, true) {
            if let Some((n, y)) = self.year_after(i + 2 + dot) {
                return Some((2 + dot + n, Spec::Day(Some(y), m, d)));
            }
            // `May 8 people` is the verb; a day is followed by punctuation or a small word.
            let verb_like = matches!(word, "may" | "march")
                && self.toks.get(i + 2 + dot).is_some_and(|n| {
                    n.kind != Kind::Punct
                        && !listed(AFTER_YEAR, &n.lower)
                        && !self.is(i + 2 + dot, "at")
                });
            if !verb_like {
                return Some((2 + dot, Spec::Day(None, m, d)));
            }
        }
        if let Some((n, y)) = self.year_after(i + 1) {
            return Some((1 + n, Spec::Month(Some(y), m)));
        }
        let allowed = bare
            && (self.mode == Mode::Answer || self.prev_is(i, MONTH_PREPS))
            && (is_full_month(word) || self.mode != Mode::Text || word == "sept");
        allowed.then_some((1, Spec::Month(None, m)))
    }

    /// Whether a number at `i` reads as a year: after `in`, `since`, … and not followed by a
    /// noun (`in 2000 people`), or as a whole answer.
    fn year_context(&self, i: usize) -> bool {
        if self.mode == Mode::Answer {
            return true;
        }
        let next_ok = match self.toks.get(i + 1) {
            None => true,
            Some(n) if n.kind == Kind::Punct => n.text != "%",
            Some(n) if n.kind == Kind::Word => listed(AFTER_YEAR, &n.lower),
            Some(_) => false,
        };
        next_ok && self.prev_is(i, YEAR_PREPS)
    }

    pub(super) fn resolve(&self, spec: Spec) -> Option<Span> {
        match spec {
            Spec::Day(Some(y), m, d) => Span::day(NaiveDate::from_ymd_opt(y, m, d)?),
            Spec::Day(None, m, d) => day_near(self.anchor, m, d, self.future),
            Spec::Month(Some(y), m) => Span::month(y, m),
            Spec::Month(None, m) => month_near(self.anchor, m, self.future),
            Spec::Year(y) => Span::year(y),
        }
    }

    /// `8 May 2023`, `May 8th`, `2023-05-08`, `05/08/2023`, `in May`, `in 2021`, with an
    /// optional `early`/`mid`/`late`/`the end of` before it (the whole month or year is kept).
    fn absolute(&self, i: usize) -> Option<Found> {
        let (n, spec) = self.spec(i, true)?;
        self.found(i, i + n, self.resolve(spec))
    }

    /// A full date (with or without a year) at `i`, as a day.
    pub(super) fn day_at(&self, i: usize) -> Option<(usize, NaiveDate)> {
        match self.spec(i, false)? {
            (n, spec @ Spec::Day(..)) => Some((n, self.resolve(spec)?.start)),
            _ => None,
        }
    }
}

/// `2023-05-08`, `2023-05`, `05/08/2023`, `5/8/23`.
fn numeric_date(text: &str, order: DateOrder) -> Option<Spec> {
    let num = |s: &str| {
        s.parse::<u32>()
            .ok()
            .filter(|_| s.bytes().all(|b| b.is_ascii_digit()))
    };
    let dashed: Vec<&str> = text.split('-').collect();
    match dashed.as_slice() {
        [y, m, d] if y.len() == 4 && m.len() == 2 && d.len() == 2 => {
            let (y, m, d) = (num(y)?, num(m)?, num(d)?);
            NaiveDate::from_ymd_opt(y as i32, m, d)?;
            return Some(Spec::Day(Some(y as i32), m, d));
        }
        [y, m] if y.len() == 4 && m.len() == 2 => {
            let (y, m) = (num(y)?, num(m)?);
            return (1..=12)
                .contains(&m)
                .then_some(Spec::Month(Some(y as i32), m));
        }
        _ => {}
    }
    let slashed: Vec<&str> = text.split('/').collect();
    let [a, b, y] = slashed.as_slice() else {
        return None;
    };
    if a.len() > 2 || b.len() > 2 || !(y.len() == 2 || y.len() == 4) {
        return None;
    }
    let (a, b, y) = (num(a)?, num(b)?, num(y)?);
    let y = match y {
        0..=69 if slashed[2].len() == 2 => 2000 + y,
        70..=99 if slashed[2].len() == 2 => 1900 + y,
        y => y,
    } as i32;
    let (m, d) = match order {
        DateOrder::MonthFirst => (a, b),
        DateOrder::DayFirst => (b, a),
    };
    NaiveDate::from_ymd_opt(y, m, d)?;
    Some(Spec::Day(Some(y), m, d))
}
