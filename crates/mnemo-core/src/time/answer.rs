//! Reading a date that is the whole of a string: LoCoMo's gold answers ("7 May 2023", "The
//! week before 9 June 2023", "last year") and a chat model's `event_time` field ("2023-05",
//! "2023-05-01/2023-05-07"), and the rule that decides whether the model's answer is kept.

use super::calendar::{add_days, Span};
use super::grammar::{Cx, Mode};
use super::lexicon::{listed, tokenize, Kind};
use super::tag::expressions;
use super::{DateOrder, EventTime, EventTimeSource, Granularity};
use crate::memory::Timestamp;
use chrono::{DateTime, NaiveDate, NaiveTime, TimeDelta, Utc};

/// Words an answer may wrap its date in ("In 2013", "Around August 2022").
const FILLERS: &str = "the in on at around about approximately roughly circa sometime during \
    early late mid";

/// The span of `text` when all of it is one date phrase, read against `anchor`.
fn whole_phrase(text: &str, anchor: NaiveDate) -> Option<Span> {
    let cleaned = text.replace(['`', '"', '“', '”'], " ");
    let (toks, _) = tokenize(&cleaned);
    let cx = Cx {
        toks: &toks,
        anchor,
        future: false,
        mode: Mode::Answer,
        order: DateOrder::default(),
    };
    let found = expressions(&cx);
    let [f] = found.as_slice() else {
        return None;
    };
    let rest_is_filler = toks.iter().enumerate().all(|(k, t)| {
        (f.first..f.end).contains(&k) || t.kind == Kind::Punct || listed(FILLERS, &t.lower)
    });
    rest_is_filler.then_some(f.span)
}

/// A gold answer as an interval: `Some((start, end, granularity))` when the answer is a date or
/// period. Relative answers ("last year", "10 years ago", "the week before") need `anchor`; with
/// none, only answers that mean the same whatever the anchor parse (checked by reading them
/// against two far-apart anchors).
pub fn parse_answer(
    answer: &str,
    anchor: Option<Timestamp>,
) -> Option<(Timestamp, Timestamp, Granularity)> {
    let span = match anchor {
        Some(a) => whole_phrase(answer, a.date_naive())?,
        None => {
            let one = whole_phrase(answer, NaiveDate::from_ymd_opt(1950, 3, 15)?)?;
            let other = whole_phrase(answer, NaiveDate::from_ymd_opt(2150, 9, 20)?)?;
            (one == other).then_some(one)?
        }
    };
    Some((span.start_ts(), span.end_ts(), span.granularity))
}

/// Granularity of an explicit interval of `days` days.
fn granularity_of_days(days: i64) -> Granularity {
    match days {
        ..=1 => Granularity::Day,
        2..=7 => Granularity::Week,
        8..=31 => Granularity::Month,
        32..=92 => Granularity::Season,
        _ => Granularity::Year,
    }
}

fn iso_day(s: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(s.trim(), "%Y-%m-%d").ok()
}

/// A chat model's answer for when a fact happened: an ISO date (`2023-05-08`), month
/// (`2023-05`), year, timestamp, an inclusive interval (`2023-05-01/2023-05-07`, `… to …`) or a
/// phrase the gold-answer reader understands. `None` for an empty or unusable answer
/// (`null`, `unknown`).
pub fn parse_model_event_time(raw: &str, anchor: Timestamp) -> Option<EventTime> {
    let text = raw.trim().trim_matches(|c| c == '"' || c == '\'').trim();
    if text.is_empty() || text.chars().count() > 100 {
        return None;
    }
    let event = |start: Timestamp, end: Timestamp, granularity| EventTime {
        start,
        end,
        granularity,
        phrase: text.to_string(),
        source: EventTimeSource::Model,
    };
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        let t = t.with_timezone(&Utc);
        if t.time() == NaiveTime::MIN {
            let span = Span::day(t.date_naive())?;
            return Some(event(span.start_ts(), span.end_ts(), Granularity::Day));
        }
        return Some(event(t, t + TimeDelta::minutes(1), Granularity::Instant));
    }
    let range = text
        .split_once('/')
        .or_else(|| text.split_once(" to "))
        .or_else(|| text.split_once(" – "));
    if let Some((a, b)) = range.and_then(|(a, b)| Some((iso_day(a)?, iso_day(b)?))) {
        let span = Span::new(a, add_days(b, 1)?, Granularity::Day)?;
        let granularity = granularity_of_days(span.len_days());
        return Some(event(span.start_ts(), span.end_ts(), granularity));
    }
    let (start, end, granularity) = parse_answer(text, Some(anchor))?;
    Some(event(start, end, granularity))
}

/// The event time a fact keeps: the model's when it parsed, is stated at the same granularity
/// as the tagger's reading of the text and overlaps it; otherwise the tagger's (which may be
/// none: a model's date with no support in the text is not kept).
pub fn reconcile_model(model: Option<EventTime>, text: Option<EventTime>) -> Option<EventTime> {
    match (model, text) {
        (Some(m), Some(t)) if m.granularity == t.granularity && m.overlaps(t.start, t.end) => {
            Some(m)
        }
        (_, text) => text,
    }
}
