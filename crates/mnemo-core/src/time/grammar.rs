//! The phrase grammar: at one token of a sentence, the longest temporal expression starting
//! there, resolved against the anchor day. Every rule looks at most a dozen tokens ahead, so a
//! walk over a sentence is linear in its length.
//!
//! Three modes share the rules: `Text` (what people write: a bare month or year needs a
//! preposition before it, a month name a capital letter), `Query` (search queries are often
//! lower case) and `Answer` (a gold answer or a model's field is the whole phrase: a bare year
//! or month is a date, month names may be misspelt).

use super::calendar::{
    add_days, day_near, month_near, shift_month, weekday_after, weekday_before, weekday_of_week,
    weekend_before, weekend_coming, weekend_past, Season, Span,
};
use super::lexicon::{
    count_word, is_full_month, listed, month_of, ordinal_word, unit_of, weekday_of, Kind, Tok,
    Unit, AFTER_YEAR, DAY_PARTS, MONTH_PREPS, YEAR_PREPS,
};
use super::{DateOrder, Granularity};
use chrono::{Datelike, NaiveDate, Weekday};

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
enum Spec {
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
    fn word(&self, i: usize) -> Option<&str> {
        self.toks
            .get(i)
            .filter(|t| t.kind == Kind::Word)
            .map(|t| t.lower.as_str())
    }

    fn is(&self, i: usize, words: &str) -> bool {
        self.word(i).is_some_and(|w| listed(words, w))
    }

    fn punct(&self, i: usize, p: &str) -> bool {
        self.toks
            .get(i)
            .is_some_and(|t| t.kind == Kind::Punct && t.text == p)
    }

    fn prev_is(&self, i: usize, words: &str) -> bool {
        i.checked_sub(1).is_some_and(|p| self.is(p, words))
    }

    /// The clause ends after token `i - 1` (end of sentence, punctuation or a conjunction).
    fn clause_end(&self, i: usize) -> bool {
        match self.toks.get(i) {
            None => true,
            Some(t) if t.kind == Kind::Punct => true,
            Some(_) => self.is(i, "and but so or when because i we"),
        }
    }

    fn found(&self, first: usize, end: usize, span: Option<Span>) -> Option<Found> {
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
    fn day_number(&self, i: usize, words: bool) -> Option<u32> {
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

    fn year_number(&self, i: usize) -> Option<i32> {
        let t = self.toks.get(i).filter(|t| t.kind == Kind::Num)?;
        let y: i32 = t.text.parse().ok().filter(|_| t.text.len() == 4)?;
        (1000..=2999).contains(&y).then_some(y)
    }

    fn month_word(&self, i: usize) -> Option<u32> {
        let t = self.toks.get(i).filter(|t| t.kind == Kind::Word)?;
        month_of(&t.lower, self.mode == Mode::Answer)
    }

    /// A year after a month or day: `May 2023`, `May, 2023`, `May of 2023`, `April.2023`.
    fn year_after(&self, i: usize) -> Option<(usize, i32)> {
        let sep = usize::from(self.punct(i, ",") || self.is(i, "of") || self.punct(i, "."));
        self.year_number(i + sep).map(|y| (sep + 1, y))
    }

    /// A date as written at `i`: its token count and spec. `bare` allows a month or year alone.
    fn spec(&self, i: usize, bare: bool) -> Option<(usize, Spec)> {
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

    fn resolve(&self, spec: Spec) -> Option<Span> {
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
    fn day_at(&self, i: usize) -> Option<(usize, NaiveDate)> {
        match self.spec(i, false)? {
            (n, spec @ Spec::Day(..)) => Some((n, self.resolve(spec)?.start)),
            _ => None,
        }
    }

    // ---- phrases around a stated date ("the week before 9 June 2023") ----------------------

    fn relative_to_date(&self, first: usize, i: usize) -> Option<Found> {
        let (count, head) = match self.count(i) {
            Some((n, c)) if unit_of(self.word(i + n)?).is_some() => (c, i + n),
            _ => (1, i),
        };
        let rel = self.word(head + 1)?;
        if !matches!(rel, "before" | "after" | "of") {
            return None;
        }
        let (n, d) = self.day_at(head + 2)?;
        let end = head + 2 + n;
        let head_word = self.word(head)?;
        let c = i64::from(count);
        let span = if let Some((wd, _)) = weekday_of(head_word) {
            let day = match rel {
                "before" => weekday_before(d, wd),
                "after" => weekday_after(d, wd),
                _ => weekday_of_week(d, wd),
            };
            Span::day(day?)
        } else {
            match (unit_of(head_word)?, rel) {
                (Unit::Day, "before") => Span::day(add_days(d, -c)?),
                (Unit::Day, "after") => Span::day(add_days(d, c)?),
                (Unit::Week, "of") => Span::week_of(d),
                (Unit::Week, "before") if count == 1 => {
                    Span::days(add_days(d, -7)?, 7, Granularity::Week)
                }
                (Unit::Week, "before") => Span::week_of(add_days(d, -7 * c)?),
                (Unit::Week, "after") => Span::days(add_days(d, 7 * c - 6)?, 7, Granularity::Week),
                (Unit::Weekend, "of") => Span::weekend_of(d),
                (Unit::Weekend, "before") => shift_span(weekend_before(d)?, -7 * (c - 1)),
                (Unit::Weekend, "after") => shift_span(
                    Span::days(weekday_after(d, Weekday::Sat)?, 2, Granularity::Week)?,
                    7 * (c - 1),
                ),
                (Unit::Month, "before") => month_span(shift_month(d, -(count as i32))?),
                (Unit::Month, "after") => month_span(shift_month(d, count as i32)?),
                (Unit::Year, "before") => Span::year(d.year() - count as i32),
                (Unit::Year, "after") => Span::year(d.year() + count as i32),
                _ => None,
            }
        };
        self.found(first, end, span)
    }

    /// `the first weekend of August 2023`, `the last week of May`.
    fn nth_of_month(&self, first: usize, i: usize) -> Option<Found> {
        let nth = match self.word(i)? {
            "last" => 0,
            w => ordinal_word(w).filter(|n| *n <= 5)?,
        };
        let unit = unit_of(self.word(i + 1)?)?;
        if !self.is(i + 2, "of") {
            return None;
        }
        let (n, spec) = self.spec(i + 3, true)?;
        let month = match spec {
            Spec::Month(..) => self.resolve(spec)?,
            _ => return None,
        };
        let saturday = |k: i64| {
            let first_sat = weekday_after(add_days(month.start, -1)?, Weekday::Sat)?;
            add_days(first_sat, 7 * k)
        };
        let span = match (unit, nth) {
            (Unit::Weekend, 0) => {
                let last_sat = weekday_before(month.end, Weekday::Sat)?;
                Span::days(last_sat, 2, Granularity::Week)
            }
            (Unit::Weekend, n) => Span::days(saturday(i64::from(n) - 1)?, 2, Granularity::Week),
            (Unit::Week, 0) => Span::days(add_days(month.end, -7)?, 7, Granularity::Week),
            (Unit::Week, n) => Span::days(
                add_days(month.start, 7 * (i64::from(n) - 1))?,
                7,
                Granularity::Week,
            ),
            _ => return None,
        };
        self.found(first, i + 3 + n, span.filter(|s| s.start < month.end))
    }

    // ---- phrases about the anchor ("yesterday", "last week", "two weeks ago") -------------

    fn deictic(&self, first: usize, i: usize) -> Option<Found> {
        let a = self.anchor;
        let day = |n: i64| Span::day(add_days(a, n)?);
        let w = self.word(i)?;
        match w {
            "yesterday" => return self.found(first, i + 1, day(-1)),
            "today" | "tonight" => return self.found(first, i + 1, day(0)),
            "tomorrow" => return self.found(first, i + 1, day(1)),
            "day" if self.is(i + 1, "before") && self.is(i + 2, "yesterday") => {
                return self.found(first, i + 3, day(-2))
            }
            "day" if self.is(i + 1, "after") && self.is(i + 2, "tomorrow") => {
                return self.found(first, i + 3, day(2))
            }
            // "the week before" said on its own means the week before this one.
            "week" | "weekend" if first < i && self.is(i + 1, "before") => {
                let last = usize::from(self.is(i + 2, "last"));
                if last == 0 && !self.clause_end(i + 2) {
                    return None;
                }
                let back = 7 * (1 + last as i64);
                let span = if w == "week" {
                    Span::week_of(add_days(a, -back)?)
                } else {
                    Span::weekend_of(add_days(a, -back)?)
                };
                return self.found(first, i + 2 + last, span);
            }
            "weekend" if first < i => {
                let over = self.prev_is(first, "over during on at");
                return self.found(first, i + 1, self.weekend_by_tense().filter(|_| over));
            }
            _ => {}
        }
        let (modifier, next) = match w {
            "this" if self.is(i + 1, "past") => ("past", i + 2),
            "this" if self.is(i + 1, "coming") => ("next", i + 2),
            "last" | "past" | "previous" if first < i => ("window", i + 1),
            "last" | "previous" => ("last", i + 1),
            "this" | "next" | "past" => (w, i + 1),
            "coming" => ("next", i + 1),
            "earlier" | "later" if self.is(i + 1, "today") => {
                return self.found(first, i + 2, day(0))
            }
            _ => return None,
        };
        let target = self.word(next)?;
        if modifier == "this" && listed(DAY_PARTS, target) && target != "night" {
            return self.found(first, next + 1, day(0));
        }
        if modifier == "last" && target == "night" {
            return self.found(first, next + 1, day(-1));
        }
        let span = if let Some((wd, _)) = weekday_of(target) {
            let d = match modifier {
                "last" | "past" | "window" => weekday_before(a, wd),
                "next" => weekday_after(a, wd),
                _ => weekday_of_week(a, wd),
            };
            let parts = usize::from(self.is(next + 1, DAY_PARTS));
            return self.found(first, next + 1 + parts, Span::day(d?));
        } else if let Some(season) = Season::parse(target) {
            match modifier {
                "last" | "past" | "window" => season.last(a),
                "next" => season.next(a),
                _ => season.current_or_next(a),
            }
        } else if let Some(m) = self.month_word(next).filter(|_| {
            // `this may be` is the verb: in prose a month after a modifier is capitalised.
            self.mode != Mode::Text || (is_full_month(target) && self.toks[next].capitalised())
        }) {
            let this = Span::month(a.year(), m)?;
            match modifier {
                "last" | "past" | "window" if this.start < shift_month(a, 0)? => Some(this),
                "last" | "past" | "window" => Span::month(a.year() - 1, m),
                "next" if this.start > a => Some(this),
                "next" => Span::month(a.year() + 1, m),
                _ => Some(this),
            }
        } else {
            let unit = unit_of(target)?;
            if matches!(target, "days" | "weeks" | "months" | "years") {
                return None;
            }
            let step = match modifier {
                "last" => -1,
                "next" => 1,
                "window" => return self.found(first, next + 1, window(a, unit)),
                "past" if unit != Unit::Weekend => {
                    return self.found(first, next + 1, window(a, unit))
                }
                _ => 0,
            };
            match unit {
                Unit::Day => None,
                Unit::Week => Span::week_of(add_days(a, 7 * step)?),
                Unit::Weekend if modifier == "past" => weekend_past(a),
                Unit::Weekend => Span::weekend_of(add_days(a, 7 * step)?),
                Unit::Month => month_span(shift_month(a, step as i32)?),
                Unit::Year => Span::year(a.year() + step as i32),
                _ => None,
            }
        };
        self.found(first, next + 1, span)
    }

    fn weekend_by_tense(&self) -> Option<Span> {
        if self.future {
            weekend_coming(self.anchor)
        } else {
            weekend_past(self.anchor)
        }
    }

    /// A count before a unit: digits, `two`, `a`, `a couple of`, `a few`, `several`. Vague
    /// counts resolve to a range: `(tokens, count)` uses the range's near end, see `vague`.
    fn count(&self, i: usize) -> Option<(usize, u32)> {
        let t = self.toks.get(i)?;
        if t.kind == Kind::Num {
            let n: u32 = t.text.parse().ok().filter(|n| (1..=100).contains(n))?;
            return Some((1, n));
        }
        count_word(&t.lower)
            .filter(|n| *n > 0)
            .map(|n| (1, n))
            .filter(|_| !(self.is(i, "a an") && self.vague(i + 1).is_some()))
    }

    /// `a few`, `a couple of`, `several`, `few`: the range of counts they stand for.
    fn vague(&self, i: usize) -> Option<(usize, u32, u32)> {
        let a = usize::from(self.is(i, "a"));
        let (n, lo, hi) = match self.word(i + a)? {
            "couple" => (1 + usize::from(self.is(i + a + 1, "of")), 2, 3),
            "few" => (1, 2, 5),
            "several" if a == 0 => (1, 3, 7),
            _ => return None,
        };
        Some((a + n, lo, hi))
    }

    /// `two weeks ago`, `3 days ago`, `a few days ago`, `in two weeks`, `seven years now`.
    fn offset(&self, i: usize) -> Option<Found> {
        let (n, lo, hi) = match (self.vague(i), self.count(i)) {
            (Some(v), _) => v,
            (None, Some((n, c))) => (n, c, c),
            _ => return None,
        };
        let unit = unit_of(self.word(i + n)?)?;
        let after = i + n + 1;
        let a = self.anchor;
        if self.is(after, "ago back earlier")
            || (self.is(after, "before") && self.clause_end(after + 1))
        {
            let far = unit_back(a, unit, hi)?;
            let near = unit_back(a, unit, lo)?;
            return self.found(
                i,
                after + 1,
                Span::new(far.start, near.end, far.granularity),
            );
        }
        if self.is(after, "now") && unit == Unit::Year && lo == hi {
            let start = Span::year(a.year() - lo as i32)?.start;
            let span = Span::new(start, add_days(a, 1)?, Granularity::Year);
            return Some(Found {
                first: i,
                end: after + 1,
                span: span?,
                since: true,
            });
        }
        let from_now = self.is(after, "from") && self.is(after + 1, "now");
        let future_in = self.prev_is(i, "in") && self.future;
        if (from_now || future_in) && lo == hi {
            let end = if from_now { after + 2 } else { after };
            return self.found(i, end, unit_forward(a, unit, lo));
        }
        None
    }

    // ---- weekdays and seasons -------------------------------------------------------------

    /// `on Friday`, `Friday night`, `Friday.`: the most recent one, or the next one when the
    /// sentence speaks of the future. Plurals (`on Fridays`) are habits, not dates.
    fn weekday(&self, i: usize) -> Option<Found> {
        let t = self.toks.get(i).filter(|t| t.kind == Kind::Word)?;
        let (wd, full) = weekday_of(&t.lower)?;
        let prep = self.prev_is(i, "on since until till by from");
        let part = self.is(i + 1, DAY_PARTS);
        let ends = self.toks.get(i + 1).is_none_or(|n| n.kind == Kind::Punct);
        let written = full || t.capitalised() || self.mode != Mode::Text;
        let bare = full && (t.capitalised() || self.mode != Mode::Text) && (part || ends);
        if !(prep && written || bare) {
            return None;
        }
        let d = if self.future {
            weekday_after(self.anchor, wd)
        } else {
            weekday_before(self.anchor, wd)
        };
        self.found(i, i + 1 + usize::from(part), Span::day(d?))
    }

    /// `in the summer`, `summer 2022`, `the summer of 2022`, `over the winter`.
    fn season(&self, first: usize, i: usize) -> Option<Found> {
        let season = Season::parse(self.word(i)?)?;
        if let Some((n, y)) = self.year_after(i + 1) {
            return self.found(first, i + 1 + n, Span::season(season, y));
        }
        let prep = self.prev_is(first, "in during over through throughout since until by")
            || self.mode == Mode::Answer;
        if !prep {
            return None;
        }
        let span = if self.future {
            season.current_or_next(self.anchor)
        } else {
            season.current_or_last(self.anchor)
        };
        self.found(first, i + 1, span)
    }
}

fn shift_span(s: Span, days: i64) -> Option<Span> {
    Span::new(
        add_days(s.start, days)?,
        add_days(s.end, days)?,
        s.granularity,
    )
}

fn month_span(first_of_month: NaiveDate) -> Option<Span> {
    Span::month(first_of_month.year(), first_of_month.month())
}

/// The unit `n` units before `a` (`2 weeks ago` is the Monday-start week holding the day 14
/// days back).
fn unit_back(a: NaiveDate, unit: Unit, n: u32) -> Option<Span> {
    let n64 = i64::from(n);
    match unit {
        Unit::Day => Span::day(add_days(a, -n64)?),
        Unit::Week => Span::week_of(add_days(a, -7 * n64)?),
        Unit::Fortnight => Span::week_of(add_days(a, -14 * n64)?),
        Unit::Weekend => shift_span(weekend_past(a)?, -7 * (n64 - 1)),
        Unit::Month => month_span(shift_month(a, -(n as i32))?),
        Unit::Year => Span::year(a.year() - n as i32),
        Unit::Decade => Span::year(a.year() - 10 * n as i32),
    }
}

fn unit_forward(a: NaiveDate, unit: Unit, n: u32) -> Option<Span> {
    let n64 = i64::from(n);
    match unit {
        Unit::Day => Span::day(add_days(a, n64)?),
        Unit::Week => Span::week_of(add_days(a, 7 * n64)?),
        Unit::Fortnight => Span::week_of(add_days(a, 14 * n64)?),
        Unit::Weekend => shift_span(weekend_coming(a)?, 7 * (n64 - 1)),
        Unit::Month => month_span(shift_month(a, n as i32)?),
        Unit::Year => Span::year(a.year() + n as i32),
        Unit::Decade => Span::year(a.year() + 10 * n as i32),
    }
}

/// "the past week", "in the last month": the unit's length up to and including the anchor day.
fn window(a: NaiveDate, unit: Unit) -> Option<Span> {
    let end = add_days(a, 1)?;
    let (start, granularity) = match unit {
        Unit::Day => (a, Granularity::Day),
        Unit::Week | Unit::Weekend => (add_days(a, -6)?, Granularity::Week),
        Unit::Fortnight => (add_days(a, -13)?, Granularity::Week),
        Unit::Month => (
            add_days(shift_month(a, -1)?, i64::from(a.day0()))?,
            Granularity::Month,
        ),
        Unit::Year => (
            NaiveDate::from_ymd_opt(a.year() - 1, a.month(), 1)?,
            Granularity::Year,
        ),
        Unit::Decade => return None,
    };
    Span::new(start, end, granularity)
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
