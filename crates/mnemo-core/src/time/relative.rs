//! The relative rules of the grammar: phrases around a stated date ("the week before 9 June
//! 2023"), ordinal weeks of a month, phrases about the anchor ("yesterday", "last week", "two
//! weeks ago", "over the weekend"), weekdays and seasons.

use super::calendar::{
    add_days, shift_month, weekday_after, weekday_before, weekday_of_week, weekend_before,
    weekend_coming, weekend_past, Season, Span,
};
use super::grammar::{Cx, Found, Mode, Spec};
use super::lexicon::{
    count_word, is_full_month, listed, ordinal_word, unit_of, weekday_of, Kind, Unit, DAY_PARTS,
};
use super::Granularity;
use chrono::{Datelike, NaiveDate, Weekday};

impl Cx<'_, '_> {
    // ---- phrases around a stated date ("the week before 9 June 2023") ----------------------

    pub(super) fn relative_to_date(&self, first: usize, i: usize) -> Option<Found> {
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
    pub(super) fn nth_of_month(&self, first: usize, i: usize) -> Option<Found> {
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

    pub(super) fn deictic(&self, first: usize, i: usize) -> Option<Found> {
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
    pub(super) fn offset(&self, i: usize) -> Option<Found> {
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
        // "seven years now", "for ten years", "the past 3 years": a period running up to
        // the anchor (years only: "for two weeks" is as often a planned trip as a past one).
        let running = self.is(after, "now") || (self.prev_is(i, "for past last") && !self.future);
        if running && matches!(unit, Unit::Year | Unit::Decade) && lo == hi {
            let years = if unit == Unit::Decade { 10 * lo } else { lo };
            let end = after + usize::from(self.is(after, "now"));
            let start = Span::year(a.year() - years as i32)?.start;
            let span = Span::new(start, add_days(a, 1)?, Granularity::Year);
            return Some(Found {
                first: i,
                end,
                span: span?,
                since: true,
            });
        }
        let from_now = self.is(after, "from") && self.is(after + 1, "now");
        let later = self.is(after, "later") && self.future;
        let future_in = self.prev_is(i, "in") && self.future;
        if (from_now || later || future_in) && lo == hi {
            let end = after + 2 * usize::from(from_now) + usize::from(later);
            return self.found(i, end, unit_forward(a, unit, lo));
        }
        None
    }

    // ---- weekdays and seasons -------------------------------------------------------------

    /// `on Friday`, `Friday night`, `Friday.`: the most recent one, or the next one when the
    /// sentence speaks of the future. Plurals (`on Fridays`) are habits, not dates.
    pub(super) fn weekday(&self, i: usize) -> Option<Found> {
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
    pub(super) fn season(&self, first: usize, i: usize) -> Option<Found> {
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
