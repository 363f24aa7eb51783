//! Event time: when the thing a text talks about happened, as opposed to when mnemo learnt it
//! (transaction time, `created_at`) or when a fact held (valid time, `valid_from`/`valid_until`).
//!
//! An [`EventTime`] is a half-open interval `[start, end)` with the [`Granularity`] it was stated
//! at, the phrase it was read from and how it was obtained ([`EventTimeSource`]). The rule tagger
//! (`time/tag.rs`) reads phrases such as "last May" or "two weeks ago" against an *anchor* — the
//! time the message was said — and never invents a date: a phrase it cannot resolve gives none.

mod answer;
mod calendar;
mod grammar;
mod lexicon;
mod query;
mod relative;
mod tag;
#[cfg(test)]
mod tests;

pub use answer::{parse_answer, parse_model_event_time, reconcile_model};
pub use query::{earliest, latest, resolve_query};
pub use tag::{event_time_of, tag};

use crate::memory::Timestamp;
use serde::{Deserialize, Serialize};

/// How precisely an event time was stated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// A moment ("at 3 pm on 8 May 2023"); `end` is `start` plus one minute.
    Instant,
    Day,
    Week,
    Month,
    Season,
    Year,
}

impl Granularity {
    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::Instant => "instant",
            Granularity::Day => "day",
            Granularity::Week => "week",
            Granularity::Month => "month",
            Granularity::Season => "season",
            Granularity::Year => "year",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "instant" => Granularity::Instant,
            "day" => Granularity::Day,
            "week" => Granularity::Week,
            "month" => Granularity::Month,
            "season" => Granularity::Season,
            "year" => Granularity::Year,
            _ => return None,
        })
    }
}

/// Where an event time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventTimeSource {
    /// Read from the text by the rule tagger.
    Text,
    /// Stated by the chat model during extraction (kept only when it agrees with the text).
    Model,
    /// Given by the caller.
    Caller,
}

impl EventTimeSource {
    pub fn as_str(self) -> &'static str {
        match self {
            EventTimeSource::Text => "text",
            EventTimeSource::Model => "model",
            EventTimeSource::Caller => "caller",
        }
    }

    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "text" => EventTimeSource::Text,
            "model" => EventTimeSource::Model,
            "caller" => EventTimeSource::Caller,
            _ => return None,
        })
    }
}

/// When something happened: `[start, end)` at a granularity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventTime {
    pub start: Timestamp,
    pub end: Timestamp,
    pub granularity: Granularity,
    /// The words it was read from ("last May"); empty when the caller gave it.
    #[serde(default)]
    pub phrase: String,
    pub source: EventTimeSource,
}

impl EventTime {
    /// Whether `[start, end)` and `[from, to)` share an instant.
    pub fn overlaps(&self, from: Timestamp, to: Timestamp) -> bool {
        self.start < to && from < self.end
    }

    /// The smallest interval holding both (a segment's event time spans its pages'): from the
    /// earlier start to the later end, at the coarser granularity. The phrase stays only when
    /// both are the same interval read from the same words; a span of several phrases, said on
    /// different days, has none (a pack then shows the dates alone).
    pub fn span(&self, other: &EventTime) -> EventTime {
        let same = self.start == other.start && self.end == other.end;
        EventTime {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
            granularity: self.granularity.max(other.granularity),
            phrase: if same && self.phrase == other.phrase {
                self.phrase.clone()
            } else {
                String::new()
            },
            source: if self.source == other.source {
                self.source
            } else {
                EventTimeSource::Text
            },
        }
    }
}

/// How numeric dates such as `05/08/2023` are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DateOrder {
    /// `05/08/2023` is 8 May 2023.
    #[default]
    MonthFirst,
    /// `05/08/2023` is 5 August 2023.
    DayFirst,
}

/// Settings of the rule tagger.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct TaggerOptions {
    pub date_order: DateOrder,
}

/// How a query's temporal expression relates to the events it asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TemporalRelation {
    /// "in May 2023", "last week": events overlapping the interval.
    During,
    /// "before 2020": events that start before the interval's `end`, which is the phrase's
    /// own start.
    Before,
    /// "after May", "since 2019": events that end after the interval's `start`.
    After,
}

/// What a query's temporal expression was understood as, reported in search answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemporalQuery {
    /// The words of the query it was read from.
    pub phrase: String,
    pub start: Timestamp,
    pub end: Timestamp,
    pub granularity: Granularity,
    pub relation: TemporalRelation,
}
