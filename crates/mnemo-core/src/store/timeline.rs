//! Event time in the store: the [`Timeline`] capability (a scope's memories in the order their
//! events happened, and the memories whose event time falls in a range, for temporal search)
//! with its request types and the one statement of the range rule ([`EventRange::admits`]).
//!
//! Event time is written with the memory (`NewMemory::event_time`, in the add's transaction)
//! and kept in three columns of the memory's row on every backend: `event_start` and
//! `event_end` (epoch milliseconds, indexed for range reads) and the whole [`EventTime`] as
//! JSON. An erase clears all three: the phrase is words of the memory's text.

use super::*;
use crate::time::{EventTime, TemporalQuery, TemporalRelation};

/// A range of event time, `[from, to)`, either end open. A memory is in it when its event time
/// overlaps it ([`EventRange::admits`]); a memory without an event time never is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRange {
    pub from: Option<Timestamp>,
    pub to: Option<Timestamp>,
}

impl EventRange {
    /// A range given as input; `field` names it in the error when `from` is not before `to`.
    pub fn new(field: &str, from: Option<Timestamp>, to: Option<Timestamp>) -> Result<Self> {
        for t in [from, to].into_iter().flatten() {
            crate::limits::check_timestamp(field, t)?;
        }
        if let (Some(f), Some(t)) = (from, to) {
            if f >= t {
                return Err(crate::Error::invalid(
                    field,
                    format!("the range is empty or inverted: {f} is not before {t}"),
                ));
            }
        }
        Ok(Self { from, to })
    }

    /// The events a query's temporal expression asks for: those overlapping its interval
    /// ("in May"), starting before it ("before 2020") or ending after its start ("since 2019").
    pub fn of_query(q: &TemporalQuery) -> Self {
        match q.relation {
            TemporalRelation::During => Self {
                from: Some(q.start),
                to: Some(q.end),
            },
            TemporalRelation::Before => Self {
                from: None,
                to: Some(q.end),
            },
            TemporalRelation::After => Self {
                from: Some(q.start),
                to: None,
            },
        }
    }

    /// The rule every backend's SQL implements: `event.start < to` and `from < event.end`.
    pub fn admits(&self, e: Option<&EventTime>) -> bool {
        e.is_some_and(|e| {
            self.to.is_none_or(|t| e.start < t) && self.from.is_none_or(|f| f < e.end)
        })
    }
}

/// An event time given as input (a caller's, an import record's): both ends in the years every
/// timestamp takes, `start` before `end`, the phrase within the text limits.
pub fn check_event_time(field: &str, e: &EventTime) -> Result<()> {
    crate::limits::check_timestamp(field, e.start)?;
    crate::limits::check_timestamp(field, e.end)?;
    if e.start >= e.end {
        return Err(crate::Error::invalid(
            field,
            format!("start {} is not before end {}", e.start, e.end),
        ));
    }
    crate::limits::check_no_nul(field, &e.phrase)?;
    crate::limits::check_chars(field, &e.phrase, MAX_PHRASE_CHARS)
}

/// The longest phrase an event time keeps.
pub const MAX_PHRASE_CHARS: usize = 200;

/// One page of a scope's timeline.
#[derive(Debug, Clone)]
pub struct TimelineQuery {
    pub scope: Scope,
    pub range: EventRange,
    pub kinds: Option<Vec<MemoryKind>>,
    pub read: ReadOptions,
    /// At most this many entries ([`MAX_TIMELINE_LIMIT`]).
    pub limit: usize,
    /// Opaque cursor from a previous page of the same scope.
    pub cursor: Option<String>,
}

/// The most entries one timeline page holds.
pub const MAX_TIMELINE_LIMIT: usize = 1000;

impl TimelineQuery {
    /// What every backend checks first: a limit of 1 to [`MAX_TIMELINE_LIMIT`].
    pub fn validate(&self) -> Result<()> {
        if self.limit == 0 || self.limit > MAX_TIMELINE_LIMIT {
            return Err(crate::Error::invalid(
                "limit",
                format!("must be between 1 and {MAX_TIMELINE_LIMIT}"),
            ));
        }
        EventRange::new("from", self.range.from, self.range.to)?;
        Ok(())
    }

    /// The memories a timeline walks, as a candidate query (scope, kinds, visibility).
    pub fn candidates(&self) -> CandidateQuery<'_> {
        CandidateQuery {
            scope: &self.scope,
            kinds: self.kinds.as_deref(),
            filter: None,
            read: self.read,
            limit: self.limit,
        }
    }

    /// A page from `rows` (`(seq, memory)` in timeline order, up to `limit + 1` of them).
    pub fn page(&self, rows: Vec<(i64, Memory)>, cursor: impl FnOnce(i64) -> String) -> Page {
        Page::from_rows(rows, self.limit, cursor)
    }
}

/// Event time: a scope's timeline and range candidates for temporal search.
pub trait Timeline: Send + Sync {
    /// The scope's visible memories that carry an event time in `query.range`, ordered by event
    /// start, then by write order; `next_cursor` continues after the last one. Required: the
    /// order needs the backend's index on event start.
    fn timeline(&self, query: &TimelineQuery) -> Result<Page>;
    /// Memories of `query` (scope, kinds, filter, visibility) whose event time is in `range`,
    /// each scoring 1: every key of `pooled` (keys the other signals found) that is, plus at
    /// most `query.limit` others — nearest the range's closed end first (the latest events of
    /// an open-started range, the earliest otherwise). Temporal search pools them beside the
    /// dense and lexical candidates.
    fn event_candidates(
        &self,
        query: &CandidateQuery<'_>,
        range: &EventRange,
        pooled: &[i64],
    ) -> Result<Vec<Candidate>>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{EventTimeSource, Granularity};
    use chrono::TimeZone;

    fn day(d: u32) -> Timestamp {
        chrono::Utc.with_ymd_and_hms(2023, 5, d, 0, 0, 0).unwrap()
    }

    fn event(from: u32, to: u32) -> EventTime {
        EventTime {
            start: day(from),
            end: day(to),
            granularity: Granularity::Day,
            phrase: "then".into(),
            source: EventTimeSource::Text,
        }
    }

    #[test]
    fn a_range_admits_overlapping_events_only() {
        let r = EventRange::new("event_time", Some(day(5)), Some(day(10))).unwrap();
        assert!(r.admits(Some(&event(9, 12))));
        assert!(r.admits(Some(&event(1, 6))));
        assert!(
            !r.admits(Some(&event(10, 11))),
            "half-open: `to` is outside"
        );
        assert!(
            !r.admits(Some(&event(1, 5))),
            "an event ending at `from` is outside"
        );
        assert!(!r.admits(None));
        assert!(EventRange::default().admits(Some(&event(1, 2))));
    }

    #[test]
    fn an_inverted_range_names_its_field() {
        let e = EventRange::new("event_time", Some(day(10)), Some(day(5))).unwrap_err();
        assert!(e.to_string().contains("event_time"), "{e}");
        assert!(EventRange::new("from", Some(day(5)), Some(day(5))).is_err());
    }

    #[test]
    fn query_relations_open_the_right_side() {
        let q = |relation| TemporalQuery {
            phrase: "May".into(),
            start: day(1),
            end: day(31),
            granularity: Granularity::Month,
            relation,
        };
        let before = EventRange::of_query(&q(TemporalRelation::Before));
        assert_eq!((before.from, before.to), (None, Some(day(31))));
        let after = EventRange::of_query(&q(TemporalRelation::After));
        assert_eq!((after.from, after.to), (Some(day(1)), None));
        let during = EventRange::of_query(&q(TemporalRelation::During));
        assert_eq!((during.from, during.to), (Some(day(1)), Some(day(31))));
    }
}
