//! Dates as a pack shows them: an answering model reads "on Tue 2 May 2023 — 'last week' said on
//! 8 May 2023" rather than doing date arithmetic on "last week". The words are part of the
//! item's line, so the budget counts them.

use crate::memory::Timestamp;
use crate::time::{EventTime, Granularity};
use chrono::Datelike;

/// A day as packs write it: `Tue 2 May 2023`.
pub fn day(t: Timestamp) -> String {
    t.format("%a %-d %B %Y").to_string()
}

fn season(t: Timestamp) -> String {
    let name = match t.month() {
        3..=5 => "spring",
        6..=8 => "summer",
        9..=11 => "autumn",
        _ => "winter",
    };
    format!("{name} {}", t.year())
}

/// When an event happened, in words at its granularity: `on Tue 2 May 2023`, `in the week of
/// Mon 1 May 2023`, `in May 2023`, `in summer 2022`, `in 2021`; an interval that is not one
/// calendar unit (a range, "since 2019") reads `between … and …`.
pub fn when(e: &EventTime) -> String {
    // The last instant inside the half-open interval names its last day.
    let last = e.end - chrono::Duration::milliseconds(1);
    match e.granularity {
        Granularity::Instant => format!("on {} at {}", day(e.start), e.start.format("%H:%M")),
        Granularity::Day if last.date_naive() == e.start.date_naive() => {
            format!("on {}", day(e.start))
        }
        Granularity::Week if (e.end - e.start).num_days() == 7 => {
            format!("in the week of {}", day(e.start))
        }
        Granularity::Month if (last.year(), last.month()) == (e.start.year(), e.start.month()) => {
            format!("in {}", e.start.format("%B %Y"))
        }
        Granularity::Season if (e.end - e.start).num_days() <= 93 => {
            format!("in {}", season(e.start))
        }
        Granularity::Year if last.year() == e.start.year() => format!("in {}", e.start.year()),
        _ => format!("between {} and {}", day(e.start), day(last)),
    }
}

/// The note a pack item carries for its event time: when it happened and, when it was read
/// from words relative to the day they were said, those words and that day.
pub fn event_note(e: &EventTime, said: Timestamp) -> String {
    let phrase = e.phrase.trim();
    if phrase.is_empty() {
        when(e)
    } else {
        format!(
            "{} — '{phrase}' said on {}",
            when(e),
            said.format("%-d %B %Y")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::EventTimeSource;
    use chrono::TimeZone;

    fn at(y: i32, m: u32, d: u32) -> Timestamp {
        chrono::Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap()
    }

    fn event(start: Timestamp, end: Timestamp, g: Granularity, phrase: &str) -> EventTime {
        EventTime {
            start,
            end,
            granularity: g,
            phrase: phrase.into(),
            source: EventTimeSource::Text,
        }
    }

    #[test]
    fn each_granularity_reads_as_one_calendar_unit() {
        let cases = [
            (
                event(at(2023, 5, 2), at(2023, 5, 3), Granularity::Day, ""),
                "on Tue 2 May 2023",
            ),
            (
                event(at(2023, 5, 1), at(2023, 5, 8), Granularity::Week, ""),
                "in the week of Mon 1 May 2023",
            ),
            (
                event(at(2023, 5, 1), at(2023, 6, 1), Granularity::Month, ""),
                "in May 2023",
            ),
            (
                event(at(2022, 6, 1), at(2022, 9, 1), Granularity::Season, ""),
                "in summer 2022",
            ),
            (
                event(at(2021, 1, 1), at(2022, 1, 1), Granularity::Year, ""),
                "in 2021",
            ),
            (
                event(at(2019, 1, 1), at(2023, 5, 8), Granularity::Year, ""),
                "between Tue 1 January 2019 and Sun 7 May 2023",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(when(&e), want, "{e:?}");
        }
    }

    #[test]
    fn a_relative_phrase_keeps_its_words_and_the_day_they_were_said() {
        let e = event(
            at(2023, 5, 2),
            at(2023, 5, 3),
            Granularity::Day,
            "last Tuesday",
        );
        assert_eq!(
            event_note(&e, at(2023, 5, 8)),
            "on Tue 2 May 2023 — 'last Tuesday' said on 8 May 2023"
        );
        let given = event(at(2023, 5, 2), at(2023, 5, 3), Granularity::Day, " ");
        assert_eq!(event_note(&given, at(2023, 5, 8)), "on Tue 2 May 2023");
    }
}
