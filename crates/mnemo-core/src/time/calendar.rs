//! Calendar arithmetic for the tagger: day-aligned half-open spans (weeks start on Monday,
//! seasons are the northern hemisphere's meteorological ones) and the rules that pick which
//! Friday, May or summer a phrase means. Every step is checked: a date out of chrono's range
//! gives `None`, never a panic.

use super::Granularity;
use crate::memory::Timestamp;
use chrono::{Datelike, NaiveDate, NaiveTime, TimeDelta, TimeZone, Utc, Weekday};

/// `[start, end)` in whole days, at a granularity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) start: NaiveDate,
    pub(super) end: NaiveDate,
    pub(super) granularity: Granularity,
}

pub(super) fn ts(d: NaiveDate) -> Timestamp {
    Utc.from_utc_datetime(&d.and_time(NaiveTime::MIN))
}

pub(super) fn add_days(d: NaiveDate, n: i64) -> Option<NaiveDate> {
    d.checked_add_signed(TimeDelta::try_days(n)?)
}

impl Span {
    pub(super) fn new(start: NaiveDate, end: NaiveDate, granularity: Granularity) -> Option<Span> {
        (start < end).then_some(Span {
            start,
            end,
            granularity,
        })
    }

    pub(super) fn day(d: NaiveDate) -> Option<Span> {
        Span::new(d, add_days(d, 1)?, Granularity::Day)
    }

    /// `n` days from `start`, at `granularity`.
    pub(super) fn days(start: NaiveDate, n: i64, granularity: Granularity) -> Option<Span> {
        Span::new(start, add_days(start, n)?, granularity)
    }

    /// The Monday-to-Sunday week holding `d`.
    pub(super) fn week_of(d: NaiveDate) -> Option<Span> {
        let monday = add_days(d, -i64::from(d.weekday().num_days_from_monday()))?;
        Span::days(monday, 7, Granularity::Week)
    }

    /// Saturday and Sunday of the week holding `d` (a weekend is stated at week precision).
    pub(super) fn weekend_of(d: NaiveDate) -> Option<Span> {
        let monday = Span::week_of(d)?.start;
        Span::days(add_days(monday, 5)?, 2, Granularity::Week)
    }

    pub(super) fn month(year: i32, month: u32) -> Option<Span> {
        let start = NaiveDate::from_ymd_opt(year, month, 1)?;
        Span::new(start, shift_month(start, 1)?, Granularity::Month)
    }

    pub(super) fn year(year: i32) -> Option<Span> {
        let start = NaiveDate::from_ymd_opt(year, 1, 1)?;
        Span::new(
            start,
            NaiveDate::from_ymd_opt(year + 1, 1, 1)?,
            Granularity::Year,
        )
    }

    /// The season of `year` (winter is the one that begins in that year's December).
    pub(super) fn season(season: Season, year: i32) -> Option<Span> {
        let start = NaiveDate::from_ymd_opt(year, season.first_month(), 1)?;
        Span::new(start, shift_month(start, 3)?, Granularity::Season)
    }

    pub(super) fn start_ts(&self) -> Timestamp {
        ts(self.start)
    }

    pub(super) fn end_ts(&self) -> Timestamp {
        ts(self.end)
    }

    pub(super) fn len_days(&self) -> i64 {
        (self.end - self.start).num_days()
    }
}

/// The first of the month `delta` months after `d`'s month.
pub(super) fn shift_month(d: NaiveDate, delta: i32) -> Option<NaiveDate> {
    let index = d.year().checked_mul(12)? + d.month0() as i32 + delta;
    NaiveDate::from_ymd_opt(index.div_euclid(12), index.rem_euclid(12) as u32 + 1, 1)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Season {
    Spring,
    Summer,
    Autumn,
    Winter,
}

impl Season {
    pub(super) fn parse(word: &str) -> Option<Season> {
        Some(match word {
            "spring" => Season::Spring,
            "summer" => Season::Summer,
            "autumn" | "fall" => Season::Autumn,
            "winter" => Season::Winter,
            _ => return None,
        })
    }

    fn first_month(self) -> u32 {
        match self {
            Season::Spring => 3,
            Season::Summer => 6,
            Season::Autumn => 9,
            Season::Winter => 12,
        }
    }

    /// This season's occurrences around `d`: the ones starting in `d`'s year and either side.
    fn around(self, d: NaiveDate) -> impl Iterator<Item = Span> {
        (-2..=1).filter_map(move |k| Span::season(self, d.year() + k))
    }

    /// The latest occurrence that has ended by `d` ("last summer").
    pub(super) fn last(self, d: NaiveDate) -> Option<Span> {
        self.around(d).filter(|s| s.end <= d).last()
    }

    /// The latest occurrence that has begun by `d` ("in the summer", said of the past).
    pub(super) fn current_or_last(self, d: NaiveDate) -> Option<Span> {
        self.around(d).filter(|s| s.start <= d).last()
    }

    /// The occurrence holding `d`, else the next one ("this summer", "in the summer" planned).
    pub(super) fn current_or_next(self, d: NaiveDate) -> Option<Span> {
        self.around(d).find(|s| d < s.end)
    }

    /// The first occurrence beginning after `d` ("next summer").
    pub(super) fn next(self, d: NaiveDate) -> Option<Span> {
        self.around(d).find(|s| d < s.start)
    }
}

/// The most recent `wd` strictly before `d`.
pub(super) fn weekday_before(d: NaiveDate, wd: Weekday) -> Option<NaiveDate> {
    let back = (d.weekday().num_days_from_monday() + 7 - wd.num_days_from_monday()) % 7;
    add_days(d, -i64::from(if back == 0 { 7 } else { back }))
}

/// The first `wd` strictly after `d`.
pub(super) fn weekday_after(d: NaiveDate, wd: Weekday) -> Option<NaiveDate> {
    let ahead = (wd.num_days_from_monday() + 7 - d.weekday().num_days_from_monday()) % 7;
    add_days(d, i64::from(if ahead == 0 { 7 } else { ahead }))
}

/// `wd` in the Monday-start week holding `d`.
pub(super) fn weekday_of_week(d: NaiveDate, wd: Weekday) -> Option<NaiveDate> {
    add_days(
        Span::week_of(d)?.start,
        i64::from(wd.num_days_from_monday()),
    )
}

/// The latest weekend that is over before `d` ("the weekend before 17 July").
pub(super) fn weekend_before(d: NaiveDate) -> Option<Span> {
    let sunday = weekday_before(d, Weekday::Sun)?;
    Span::days(add_days(sunday, -1)?, 2, Granularity::Week)
}

/// The latest weekend that has begun by the day before `d` ("over the weekend", said on a
/// Monday or on the Sunday itself).
pub(super) fn weekend_past(d: NaiveDate) -> Option<Span> {
    let saturday = weekday_before(d, Weekday::Sat)?;
    Span::days(saturday, 2, Granularity::Week)
}

/// The first weekend not yet over on `d` ("this weekend", planned).
pub(super) fn weekend_coming(d: NaiveDate) -> Option<Span> {
    Span::weekend_of(d)
}

/// Month `month` of the year that makes it the latest not after `d`'s month (or, for the
/// future, the first not before it).
pub(super) fn month_near(d: NaiveDate, month: u32, future: bool) -> Option<Span> {
    let year = match (future, month.cmp(&d.month())) {
        (false, std::cmp::Ordering::Greater) => d.year() - 1,
        (true, std::cmp::Ordering::Less) => d.year() + 1,
        _ => d.year(),
    };
    Span::month(year, month)
}

/// Day `day` of `month` in the year that makes it the latest not after `d` (or, for the future,
/// the first not before it).
pub(super) fn day_near(d: NaiveDate, month: u32, day: u32, future: bool) -> Option<Span> {
    let this = NaiveDate::from_ymd_opt(d.year(), month, day);
    let other = NaiveDate::from_ymd_opt(d.year() + if future { 1 } else { -1 }, month, day);
    let pick = match this {
        Some(t) if (future && t >= d) || (!future && t <= d) => Some(t),
        _ => other,
    };
    Span::day(pick?)
}
